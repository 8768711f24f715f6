#!/usr/bin/env bash
# Builds headroom with ASan+UBSan in build-asan/, runs the unit tests and the e2e suite against that binary,
# and summarises every sanitizer report (written to build-asan/sanitizer-logs/). Usage: sanitize.sh [pytest args]
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build-asan"
logs="$build/sanitizer-logs"
jobs="${HEADROOM_SANITIZE_JOBS:-2}"

cmake -S "$repo" -B "$build" -DHEADROOM_SANITIZE=ON -DCMAKE_BUILD_TYPE="${HEADROOM_SANITIZE_BUILD_TYPE:-RelWithDebInfo}" >/dev/null || exit 1
cmake --build "$build" -j"$jobs" || exit 1

rm -rf "$logs" && mkdir -p "$logs"
# Reports go to files (one per process, "<prefix>.<pid>") so they are caught even when a test only checks
# stdout/stderr of a child, and so headroom's own stderr stays comparable with ninja's. Children that
# headroom forks run instrumented code only until exec (the build commands themselves are not instrumented);
# a forked child that fails to exec leaves with _exit, which skips the leak check by design.
export ASAN_OPTIONS="detect_leaks=1:log_path=$logs/asan:exitcode=86:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=0:log_path=$logs/ubsan"
export LSAN_OPTIONS="log_path=$logs/lsan"

status=0
echo "== unit tests (ASan+UBSan)"
(cd "$build" && ./tests/headroom_tests --gtest_brief=1) || status=1

echo "== e2e suite (HEADROOM_BIN=$build/headroom)"
HEADROOM_BIN="$build/headroom" python3 -m pytest "$repo/tests/e2e" -q -p no:cacheprovider "$@" || status=1

reports=$(find "$logs" -type f | sort)
if [ -n "$reports" ]; then
  echo "== sanitizer reports ($(echo "$reports" | wc -l) files in $logs)"
  for f in $reports; do
    echo "--- $f"
    grep -E 'ERROR: (Address|Leak)Sanitizer|runtime error:|SUMMARY:' "$f" | head -5
  done
  status=1
else
  echo "== no sanitizer reports"
fi
exit $status
