#!/usr/bin/env bash
# The whole test suite (the README's test command; .ci/run execs it): installs what is missing (scripts/install-deps.sh,
# then the pinned tools of scripts/install-test-deps.sh while the plain build compiles), builds, runs every test through
# ctest (unit, memory tests in a real cgroup box, end-to-end and differential tests against ninja), the lane of the
# cgroup version this host lacks in a VM (scripts/test-v2.sh: v2 on a v1 host, v1 on a v2 host), then the sanitizer
# and fuzz stage (scripts/sanitize.sh: ASan+UBSan unit + e2e, libFuzzer targets).
# Assumes only a Debian/Ubuntu machine with apt-get (root or sudo); the real-cgroup tests need root (CI runs as root).
# Usage: test.sh [ctest args]  (given to both ctest runs). HEADROOM_SKIP_SANITIZERS=1 skips the last stage and
# HEADROOM_SKIP_V2_LANE=1 the VM stage (local use only: CI runs both). Exits non-zero if any stage failed; every stage
# runs regardless, so one CI run shows them all.
set -uo pipefail
cd "$(dirname "$0")/.."

failed=()
summary=()
stage_start=$SECONDS
banner() { printf '\n==================== %s ====================\n' "$1"; stage_start=$SECONDS; }
# Records how the stage that began at the last banner ended.
finish() {
  local name="$1" rc="$2" verdict="ok"
  [ "$rc" -ne 0 ] && { verdict="FAILED (exit $rc)"; failed+=("$name"); }
  summary+=("$(printf '%-34s %5ds  %s' "$name" $((SECONDS - stage_start)) "$verdict")")
}

banner "dependencies (scripts/install-deps.sh)"
scripts/install-deps.sh || exit 1   # nothing below can run without them
finish "dependencies" 0

# The pinned tools only the tests drive (nvcc, torch, meson, ninja 1.11; mostly downloads, torch ~5 GB) install while
# the plain build keeps the CPUs busy. Their venvs are kept between runs (HEADROOM_TEST_DEPS).
export HEADROOM_TEST_DEPS="${HEADROOM_TEST_DEPS:-$HOME/.cache/headroom-e2e}"
mkdir -p "$HEADROOM_TEST_DEPS"
test_deps_log="$HEADROOM_TEST_DEPS/install-test-deps.log"
scripts/install-test-deps.sh > "$test_deps_log" 2>&1 &
test_deps_pid=$!

banner "plain build (build/, RelWithDebInfo)"
{ cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build build -j"$(nproc)"; }
rc=$?
finish "plain build" $rc
if [ $rc -ne 0 ]; then wait $test_deps_pid; exit $rc; fi   # no binary to test

# The sanitizer stage's clang build (scripts/build-sanitized.sh, minutes of compiling) starts now in the background at
# the idle scheduling class: it gets only the CPU time the plain tests and the VM lane leave (they keep about three
# quarters of the two CPUs busy), so their timings are as before, and the sanitizer stage waits for it.
san_prebuild_pid=""
san_prebuild_log="$(mktemp)"
if [ "${HEADROOM_SKIP_SANITIZERS:-0}" != 1 ]; then
  idle=()
  chrt --idle 0 true 2>/dev/null && idle=(chrt --idle 0)
  "${idle[@]}" nice -n 19 scripts/build-sanitized.sh > "$san_prebuild_log" 2>&1 &
  san_prebuild_pid=$!
  san_prebuild_start=$SECONDS
fi

banner "test dependencies (scripts/install-test-deps.sh, run during the build)"
wait $test_deps_pid
rc=$?
cat "$test_deps_log"
finish "test dependencies" $rc
# Without them the suites that drive these tools fail (CI=1) or skip, and say why; the rest still runs.
[ $rc -eq 0 ] && . "$HEADROOM_TEST_DEPS/test-env.sh"

# This host's memory cgroup version decides the VM lane: the other one. The plain run leaves the tests of that version
# to the lane (HEADROOM_CGROUP_OTHER_LANE for the e2e suites; by name for the unit tests, which are v1-only ones: a v2
# host runs every v2 test itself).
if [ -f /sys/fs/cgroup/cgroup.controllers ] && grep -qw memory /sys/fs/cgroup/cgroup.controllers; then
  host_cgroup=v2
elif [ -f /sys/fs/cgroup/memory/memory.limit_in_bytes ]; then
  host_cgroup=v1
else
  host_cgroup=none   # no memory controller here: the real-cgroup tests fail loudly (CI=1) in the plain run
fi
lane_cgroup=v2
[ $host_cgroup = v2 ] && lane_cgroup=v1
# The v1-only unit tests (scripts/cgroup-v1-only-unit-tests.txt, which scripts/test-v2.sh reads too) as one ctest regex.
v1_only_unit_tests="$(grep -v -e '^#' -e '^$' scripts/cgroup-v1-only-unit-tests.txt |
  sed -e 's/\./\\./g' -e 's/\*/.*/g' -e 's/^/^/' -e 's/$/$/' | paste -sd '|')"
export HEADROOM_CTEST_EXCLUDE=""   # scripts/sanitize.sh leaves these out too
if [ "${HEADROOM_SKIP_V2_LANE:-0}" != 1 ]; then
  export HEADROOM_CGROUP_OTHER_LANE=$lane_cgroup
  [ $lane_cgroup = v1 ] && HEADROOM_CTEST_EXCLUDE="$v1_only_unit_tests"
fi
plain_exclude=()
[ -n "$HEADROOM_CTEST_EXCLUDE" ] && plain_exclude=(-E "$HEADROOM_CTEST_EXCLUDE")

# The last lines of each failed test's output from a ctest run (its LastTest.log), repeated at the end of the log:
# CI keeps only the log's tail, and the sanitizer stage prints long after the plain tests' failures.
failure_tails=()
keep_failure_tails() {
  local dir="$1" name
  local failed_list="$dir/Testing/Temporary/LastTestsFailed.log" log="$dir/Testing/Temporary/LastTest.log"
  [ -f "$failed_list" ] && [ -f "$log" ] || return 0
  while IFS=: read -r _ name; do
    failure_tails+=("$(printf -- '--- %s (%s), last 60 lines of its output:\n' "$name" "$dir"; \
      awk -v t="Testing: $name" '$0 ~ t"$" {on=1; next} on && /^<end of output>$/ {exit} on' "$log" | tail -n 60)")
  done < <(head -n 3 "$failed_list")
}

banner "docs links (scripts/check_doc_links.py)"
python3 scripts/check_doc_links.py
finish "docs links" $?

banner "plain tests (ctest; host cgroup $host_cgroup)"
ctest --test-dir build --output-on-failure -j"$(nproc)" "${plain_exclude[@]}" "$@"
rc=$?
finish "plain tests" $rc
[ $rc -ne 0 ] && keep_failure_tails build

# The memory guard's path for the cgroup version this host lacks, on a real kernel in a VM (scripts/v2-vm.sh installs
# qemu and a kernel, then scripts/test-v2.sh runs the real-cgroup unit tests and the memory e2e suites in it).
# A VM that cannot boot fails the stage.
if [ "${HEADROOM_SKIP_V2_LANE:-0}" = 1 ]; then
  banner "cgroup $lane_cgroup lane (VM): SKIPPED (HEADROOM_SKIP_V2_LANE=1)"
else
  banner "cgroup $lane_cgroup lane (VM) (scripts/test-v2.sh --cgroup $lane_cgroup)"
  scripts/test-v2.sh --cgroup $lane_cgroup --build build
  finish "cgroup $lane_cgroup lane (VM)" $?
fi

if [ "${HEADROOM_SKIP_SANITIZERS:-0}" = 1 ]; then
  banner "sanitizers + fuzzing: SKIPPED (HEADROOM_SKIP_SANITIZERS=1)"
else
  banner "sanitizers + fuzzing (scripts/sanitize.sh: ASan+UBSan, libFuzzer)"
  if [ -n "$san_prebuild_pid" ]; then
    wait $san_prebuild_pid
    echo "== the sanitized build ran in the background from the end of the plain build (exit $?, done after" \
      "$((SECONDS - san_prebuild_start))s); its last lines:"
    tail -n 3 "$san_prebuild_log"
  fi
  scripts/sanitize.sh "$@"
  rc=$?
  finish "sanitizers + fuzzing" $rc
  [ $rc -ne 0 ] && keep_failure_tails build-san
fi

rm -f "$san_prebuild_log"
banner "summary"
[ ${#failure_tails[@]} -gt 0 ] && printf '%s\n' "${failure_tails[@]}"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "all stages passed"
