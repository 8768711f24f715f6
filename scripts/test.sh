#!/usr/bin/env bash
# The whole test suite (the README's test command; .ci/run execs it): installs what is missing, builds, runs every
# test through ctest (unit, memory tests in a real cgroup box, end-to-end and differential tests against ninja), the
# cgroup v2 lane in a VM (scripts/test-v2.sh), then the sanitizer and fuzz stage (scripts/sanitize.sh: ASan+UBSan
# unit + e2e, libFuzzer targets).
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

banner "plain build (build/, RelWithDebInfo)"
{ cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && cmake --build build -j"$(nproc)"; }
rc=$?
finish "plain build" $rc
[ $rc -ne 0 ] && exit $rc   # no binary to test

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

banner "plain tests (ctest)"
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
rc=$?
finish "plain tests" $rc
[ $rc -ne 0 ] && keep_failure_tails build

# The memory guard's cgroup v2 path on a real v2 kernel: this machine's cgroups are v1, so a VM (scripts/v2-vm.sh
# installs qemu and a kernel, then scripts/test-v2.sh runs the real-cgroup unit tests and the memory e2e suites in it).
# A VM that cannot boot fails the stage.
if [ "${HEADROOM_SKIP_V2_LANE:-0}" = 1 ]; then
  banner "cgroup v2 lane (VM): SKIPPED (HEADROOM_SKIP_V2_LANE=1)"
else
  banner "cgroup v2 lane (VM) (scripts/test-v2.sh)"
  scripts/test-v2.sh --build build
  finish "cgroup v2 lane (VM)" $?
fi

if [ "${HEADROOM_SKIP_SANITIZERS:-0}" = 1 ]; then
  banner "sanitizers + fuzzing: SKIPPED (HEADROOM_SKIP_SANITIZERS=1)"
else
  banner "sanitizers + fuzzing (scripts/sanitize.sh: ASan+UBSan, libFuzzer)"
  scripts/sanitize.sh "$@"
  rc=$?
  finish "sanitizers + fuzzing" $rc
  [ $rc -ne 0 ] && keep_failure_tails build-san
fi

banner "summary"
[ ${#failure_tails[@]} -gt 0 ] && printf '%s\n' "${failure_tails[@]}"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED: ${failed[*]}" >&2
  exit 1
fi
echo "all stages passed"
