#!/usr/bin/env bash
# Owns the cgroup VM lanes: runs, inside the VM of scripts/v2-vm.sh (a real kernel, as root, cgroup v2 or with
# --cgroup v1 the v1 hierarchies), the tests that need a real cgroup box of that version (the unit tests on real
# cgroups, the e2e memory and build guard suites), with CI=1. scripts/test.sh runs the lane of the version its host
# lacks: v2 on a v1 host, v1 on a v2 host.
#
# Usage: scripts/test-v2.sh [--cgroup v1|v2] [--build DIR] [--timeout SECONDS] [--full] [--unit-only | --e2e-only]
#                           [-- PYTEST_ARGS...]
#   --cgroup      the lane's cgroup version (default v2)
#   --build DIR   the build tree to test (default build/; its headroom, tests/headroom_tests and tests/memhog)
#   --timeout     the whole VM's limit (default 900 s)
#   --full        also the tests left out of the lane below (about 5 more minutes under TCG)
#   PYTEST_ARGS   given to the e2e run (e.g. -k enomem)
# Results (a log and a JUnit XML file per step, summary.txt) go to DIR/v2-lane/ (DIR/v1-lane/). Exits non-zero when a
# step failed, the VM did not boot (125) or ran out of time (124). scripts/test.sh runs it as its stage "cgroup ... lane
# (VM)". In a lane, HEADROOM_CGROUP_LANE names its version and HEADROOM_CGROUP_OTHER_LANE the other one, which the host
# covers: a test for the other version skips there (tests/e2e/memory_box.py require_cgroup_version).
set -uo pipefail
cd "$(dirname "$0")/.."

# The unit tests that use real cgroups and have a v2 path. Left out, v1 only by design (with CI=1 they fail on v2):
# RealGuardTest.* (tasks paused at a v1 limit with memory.oom_control), JobCgroupsPreparedTest.* and PreparedLaunchTest.*
# (prepared launches exist on v1 only), ProcessRunnerTest.JobJoinsTheGivenCgroupBeforeExec and .ConsoleJobCanJoinCgroupToo
# (they make a v1 memory cgroup).
unit_filter='RealCgroupTest.*:JobMeterRealTest.*:ProcessRunnerTest.JobIsBornInAGivenV2Cgroup:SharedGuard*:CgroupTree*:V2Leaf*:SharedLayout*:NoCgroupAccess*'
# Left out even with --full, their v1 assumptions being in the unit tests (reported, not fixed here):
# SystemCounterGivesWeakEvidenceWithoutAJobCgroup runs memhog in the per-build cgroup itself, an inner node with +memory
# in its subtree_control, which v2 refuses (EBUSY: no internal processes; memhog exits 126 and nothing is OOM-killed);
# RecycledCgroupMeasuresTheNextJobAlone needs memory.peak to be resettable (Linux >= 6.12; the VM's Debian 12 kernel is
# 6.1, where headroom rightly stops recycling and spare_count() stays 0).
unit_filter+=':-RealCgroupTest.SystemCounterGivesWeakEvidenceWithoutAJobCgroup:RealCgroupTest.RecycledCgroupMeasuresTheNextJobAlone'
# The v1 lane (on a v2 host): the real-cgroup tests of both versions and the v1-only ones named above, listed in
# scripts/cgroup-v1-only-unit-tests.txt (scripts/test.sh leaves the same list out of a v2 host's own run).
unit_filter_v1="RealCgroupTest.*:JobMeterRealTest.*:$(grep -v -e '^#' -e '^$' "$(dirname "$0")/cgroup-v1-only-unit-tests.txt" |
  paste -sd ':')"
# Left out of the v1 lane (so run on v1 hosts only, in their plain stage): its premise, a 130 MiB job reaching the
# limit while another holds 130 MiB for 3 s, does not hold under TCG, where the second job's ramp outlasts the first's
# hold (no stall within 20 s: 2 of 2 lane runs on 2026-12-06, 23 of the other 23 tests passing).
unit_filter_v1+=':-RealGuardTest.TasksWaitAtTheLimitAndKillingTheYoungestLetsTheOldestFinish'
e2e_suites=(test_memory_box.py test_guard_enomem.py test_guard_early_start.py test_guard_rise_bets.py
            test_guard_shared.py test_shared_builds.py)
# Left out of the lane unless --full (TCG timings on a loaded 2-core host; with them the lane takes ~5 min more):
# - three admission tests that run the same on v1 in the plain stage, 60-100 s each under TCG (the v2 guard's cap is in
#   the tests that stay: the cold graph that needs the guard, the job larger than the box, enomem, early start); one of
#   them, test_second_build_uses_what_the_first_learned, fails on v2: the warm build is killed by the guard above
#   memory.high (a product issue, see docs/build-guard.md "How it is tested");
# - the warm rise bet, whose premise (a 500 MiB job short beside a 4 s ramp) does not hold under TCG, where touching
#   500 MiB takes ~9 s: the quick job waits, as it should.
e2e_lean_deselect=(
  test_memory_box.py::test_fixed_parallelism_is_oom_killed_where_headroom_finishes
  test_memory_box.py::test_job_that_outgrows_its_history_is_survived
  test_memory_box.py::test_second_build_uses_what_the_first_learned
  test_guard_rise_bets.py::test_a_warm_build_runs_a_quick_job_beside_a_ramping_heavy_one
)
# Timing-sensitive under TCG: their rules work from measured durations and curves, and the VM's pace follows the
# host's load (the early start passed in one run and missed its window in the next on a host loaded by other builds).
# When nothing else failed, a failure of these is retried once.
e2e_timing_sensitive=(
  test_guard_early_start.py::test_a_warm_build_starts_the_next_exclusive_job_before_the_last_one_ends
  test_guard_rise_bets.py::test_a_ramping_jobs_rise_curve_is_recorded_and_never_later_than_its_ramp
)

cgroup=v2
build=build
timeout_s=900
mode=all
full=0
inside=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cgroup) cgroup="${2:?}"; shift 2 ;;
    --build) build="${2:?}"; shift 2 ;;
    --timeout) timeout_s="${2:?}"; shift 2 ;;
    --full) full=1; shift ;;
    --unit-only) mode=unit; shift ;;
    --e2e-only) mode=e2e; shift ;;
    --inside) inside=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n "1,14{s/^# Usage: /usage: /p; s/^#   /  /p}" "$0" >&2; exit 2 ;;
    *) echo "test-v2: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$cgroup" in
  v1) other=v2; unit_filter="$unit_filter_v1" ;;
  v2) other=v1 ;;
  *) echo "test-v2: --cgroup takes v1 or v2, not $cgroup" >&2; exit 2 ;;
esac
build="$(realpath -m "$build")"
results="$build/$cgroup-lane"

if [ $inside = 0 ]; then
  needed=(headroom tests/memhog)
  [ $mode != e2e ] && needed+=(tests/headroom_tests)
  for file in "${needed[@]}"; do
    [ -x "$build/$file" ] || { echo "test-v2: $build/$file is missing: build first (cmake --build $build)" >&2; exit 2; }
  done
  rm -rf "$results" && mkdir -p "$results"
  args=(--cgroup "$cgroup" --build "$build")
  [ $mode = unit ] && args+=(--unit-only)
  [ $mode = e2e ] && args+=(--e2e-only)
  [ $full = 1 ] && args+=(--full)
  CI=1 scripts/v2-vm.sh --cgroup "$cgroup" --timeout "$timeout_s" --rwdir "$results" -- \
    scripts/test-v2.sh --inside "${args[@]}" -- "$@"
  rc=$?
  [ -f "$results/summary.txt" ] && { echo; echo "cgroup $cgroup lane (results in $results):"; cat "$results/summary.txt"; }
  exit $rc
fi

# --- Inside the VM. ---------------------------------------------------------------------------------------------------
if [ "$cgroup" = v2 ]; then
  [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers ||
    { echo "test-v2: no cgroup v2 memory controller here" >&2; exit 2; }
else
  [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ] || { echo "test-v2: no cgroup v1 memory hierarchy here" >&2; exit 2; }
fi
# A test for this lane's version fails when it finds the other one; a test for the other version skips (the host ran it).
export CI=1 HEADROOM_CGROUP_LANE="$cgroup" HEADROOM_CGROUP_OTHER_LANE="$other" HEADROOM_BIN="$build/headroom"
export PYTHONDONTWRITEBYTECODE=1
# The guest's HOME is on the read-only host filesystem: the per-user store goes to the guest's /tmp.
export XDG_CACHE_HOME="$(mktemp -d /tmp/headroom-lane-cache.XXXXXX)"
"$HEADROOM_BIN" --version >/dev/null || { echo "test-v2: $HEADROOM_BIN does not run here" >&2; exit 2; }
failed=0
summary=()
# step NAME XML COMMAND...: runs one step, its output to the console and NAME.log, its status in last_rc. The summary
# gets a line for the step and one per test file (or "unit") of its JUnit XML: counts and the time its tests took.
step() {
  local name="$1" xml="$2" start=$SECONDS rc
  shift 2
  printf '\n---- %s ----\n' "$name"
  "$@" 2>&1 | tee "$results/$name.log"
  rc=${PIPESTATUS[0]}
  last_rc=$rc
  summary+=("$(printf '%-34s %5ds  %s' "$name" $((SECONDS - start)) "$([ "$rc" -eq 0 ] && echo ok || echo "FAILED (exit $rc)")")")
  summary+=("$(python3 - "$xml" <<'PY'
import collections, sys, xml.etree.ElementTree as ET
try:
    cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
except Exception as e:
    print("  (no results: %s)" % e); sys.exit()
groups = collections.OrderedDict()
for case in cases:
    classname = case.get("classname", "")  # pytest: tests.e2e.test_x; gtest: the fixture
    key = classname.rsplit(".", 1)[-1] if classname.startswith("tests.") else "unit"
    if case.find("failure") is not None or case.find("error") is not None:
        outcome = "failed"
    elif case.find("skipped") is not None or case.get("result") == "skipped":
        outcome = "skipped"
    else:
        outcome = "passed"
    group = groups.setdefault(key, collections.Counter())
    group[outcome] += 1
    group["seconds"] += float(case.get("time", 0))
for key, g in groups.items():
    print("  %-32s %5.0fs  %d passed, %d failed, %d skipped" % (key, g["seconds"], g["passed"], g["failed"], g["skipped"]))
PY
)")
}

if [ $mode != e2e ]; then
  step unit "$results/unit.xml" timeout 600 "$build/tests/headroom_tests" --gtest_filter="$unit_filter" \
    --gtest_output="xml:$results/unit.xml"
  [ $last_rc -ne 0 ] && failed=1
fi
if [ $mode != unit ]; then
  # As tests/CMakeLists.txt runs each suite (from the source dir, HEADROOM_BIN set, one at a time), but in one pytest
  # run: starting pytest costs ~30 s under TCG.
  deselect=()
  [ $full = 0 ] && for id in "${e2e_lean_deselect[@]}"; do deselect+=(--deselect "tests/e2e/$id"); done
  step e2e "$results/e2e.xml" timeout 1200 python3 -m pytest "${e2e_suites[@]/#/tests/e2e/}" -q -p no:cacheprovider \
    -rA --durations=10 --junitxml="$results/e2e.xml" "${deselect[@]}" "$@"
  if [ $last_rc -ne 0 ]; then
    # When only timing-sensitive tests failed, they run once more (a second pytest run: ~30 s more).
    mapfile -t retry < <(python3 - "$results/e2e.xml" "${e2e_timing_sensitive[@]}" <<'PY'
import sys, xml.etree.ElementTree as ET
try:
    cases = list(ET.parse(sys.argv[1]).getroot().iter("testcase"))
except Exception:
    sys.exit()
failed = [case.get("classname", "").rsplit(".", 1)[-1] + ".py::" + case.get("name", "") for case in cases
          if case.find("failure") is not None or case.find("error") is not None]
if failed and all(test.split("[")[0] in sys.argv[2:] for test in failed):
    print("\n".join(failed))
PY
)
    if [ ${#retry[@]} -gt 0 ]; then
      step e2e-retry "$results/e2e-retry.xml" timeout 600 python3 -m pytest "${retry[@]/#/tests/e2e/}" -q \
        -p no:cacheprovider -rA --junitxml="$results/e2e-retry.xml"
      summary+=("  (the timing-sensitive tests that failed above ran again: they count as the retry ended)")
    fi
  fi
  [ $last_rc -ne 0 ] && failed=1
fi
rm -rf "$XDG_CACHE_HOME"
printf '%s\n' "${summary[@]}" | tee "$results/summary.txt"
exit $failed
