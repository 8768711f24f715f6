#!/usr/bin/env bash
# Builds the libFuzzer targets (the shared sanitized build, scripts/build-sanitized.sh) and runs each for a fixed time
# on its seed corpus under ASan+UBSan, after replaying its known crashers. Exits non-zero on any crash or regression.
# Usage: fuzz/run.sh [seconds per target, default 20] [target ...]   (targets: names of fuzz/*.cc)
# Env: HEADROOM_SAN_BUILD_DIR (default build-san), HEADROOM_FUZZ_JOBS (targets run at once, default nproc),
#      HEADROOM_FUZZ_NO_BUILD=1 (the caller has just built everything).
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${HEADROOM_SAN_BUILD_DIR:-$repo/build-san}"
out="$build/fuzz-runs"               # logs, new corpus entries and crash artifacts; never the repo
seconds="${1:-20}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in "$repo"/fuzz/*.cc; do targets+=("$(basename "$src" .cc)"); done
fi

if [ "${HEADROOM_FUZZ_NO_BUILD:-0}" != 1 ]; then
  HEADROOM_SAN_BUILD_DIR="$build" "$repo/scripts/build-sanitized.sh" headroom_fuzz || exit 1
fi

# The library keeps UBSan recoverable (the suites want every report of a run); a fuzzer must stop at the first
# one so libFuzzer saves the input.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"

# Replays the target's regressions/ inputs (each must run clean now), then fuzzes for $seconds. Writes one result
# line to $out/<target>.result: "ok ..." or "FAIL ...".
fuzz_one() {
  local target="$1" bin="$build/fuzz/fuzz_$1" seeds="$repo/tests/fuzz-corpus/$1"
  local work="$out/corpus/$1" artifacts="$out/artifacts/$1" log="$out/$1.log" result="$out/$1.result"
  rm -rf "$artifacts" && mkdir -p "$work" "$artifacts"
  if [ ! -x "$bin" ] || [ ! -d "$seeds" ]; then
    echo "FAIL: no $bin or no seed corpus $seeds" >"$result"
    return
  fi
  if [ -d "$seeds/regressions" ] && [ -n "$(ls -A "$seeds/regressions")" ]; then
    if ! "$bin" "$seeds/regressions"/* >"$out/$1.regressions.log" 2>&1; then
      echo "FAIL: an input in tests/fuzz-corpus/$1/regressions crashes again (see $out/$1.regressions.log)" >"$result"
      return
    fi
  fi
  # libFuzzer reads the seed directory recursively (regressions included) and writes new inputs to the first one.
  "$bin" "$work" "$seeds" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" >"$log" 2>&1
  local rc=$?
  local execs cov
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1)
  if [ $rc -ne 0 ]; then
    {
      if [ -n "$(ls -A "$artifacts")" ]; then
        echo "FAIL: crash (rc=$rc), input: $(ls -d "$artifacts"/* | head -3 | tr '\n' ' ') log: $log"
        grep -m3 -E 'ERROR: |runtime error:|SUMMARY:' "$log" | sed 's/^/      /'
      else
        # An exit from inside the target (not a signal) leaves libFuzzer no chance to save the input.
        echo "FAIL: the target exited (rc=$rc) without a crash report, so no input was saved; log: $log"
        tail -n 2 "$log" | sed 's/^/      /'
      fi
    } >"$result"
  else
    echo "ok: ${execs:-?} execs in ${seconds}s, $cov, corpus $(ls "$work" | wc -l) new files" >"$result"
  fi
}

mkdir -p "$out"
jobs="${HEADROOM_FUZZ_JOBS:-$(nproc)}"
echo "== fuzzing ${#targets[@]} targets, ${seconds}s each, $jobs at a time (ASan+UBSan)"
for target in "${targets[@]}"; do
  rm -f "$out/$target.result"
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n; done
  fuzz_one "$target" &
done
wait

status=0
for target in "${targets[@]}"; do
  result="$(cat "$out/$target.result" 2>/dev/null || echo "FAIL: no result")"
  printf '   %-16s %s\n' "$target" "$result"
  case "$result" in ok:*) ;; *) status=1 ;; esac
done
exit $status
