#!/usr/bin/env bash
# Builds the libFuzzer targets with clang in build-fuzz/ and runs each for a fixed time on its seed corpus.
# Usage: fuzz/run.sh [seconds per target, default 20] [target ...]   (targets: names of fuzz/*.cc)
set -uo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
build="$repo/build-fuzz"
seconds="${1:-20}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for src in "$repo"/fuzz/*.cc; do targets+=("$(basename "$src" .cc)"); done
fi

CXX="${CXX_FUZZ:-clang++}"
cmake -S "$repo" -B "$build" -DCMAKE_CXX_COMPILER="$CXX" -DCMAKE_BUILD_TYPE=Release \
  -DHEADROOM_BUILD_FUZZ=ON -DHEADROOM_BUILD_TESTS=OFF >/dev/null || exit 1
cmake --build "$build" --target headroom_fuzz -j"${HEADROOM_FUZZ_JOBS:-2}" || exit 1

status=0
for target in "${targets[@]}"; do
  bin="$build/fuzz/fuzz_$target"
  seeds="$repo/tests/fuzz-corpus/$target"
  work="$build/corpus/$target"        # new inputs go here, never into the repo
  artifacts="$build/artifacts/$target"
  mkdir -p "$work" "$artifacts" "$seeds"
  echo "== $target"
  # Known crashers first: each must now run clean.
  if [ -d "$seeds/regressions" ] && [ -n "$(ls -A "$seeds/regressions")" ]; then
    if ! "$bin" "$seeds/regressions"/* >"$build/$target.regressions.log" 2>&1; then
      echo "   REGRESSION: an input in $seeds/regressions crashes again (see $build/$target.regressions.log)"
      status=1
    fi
  fi
  # libFuzzer reads the seed directory recursively (regressions included) and writes to the first directory.
  "$bin" "$work" "$seeds" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" >"$build/$target.log" 2>&1
  rc=$?
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$build/$target.log" | grep -o '[0-9]*$')
  cov=$(grep -o 'cov: [0-9]*' "$build/$target.log" | tail -1)
  if [ $rc -ne 0 ]; then
    echo "   CRASH (rc=$rc, ${execs:-?} execs): $(ls "$artifacts" | head -3 | tr '\n' ' ') log: $build/$target.log"
    grep -m3 -E 'ERROR: |runtime error:|SUMMARY:' "$build/$target.log" | sed 's/^/   /'
    status=1
  else
    echo "   ok: ${execs:-?} execs, $cov, corpus $(ls "$work" | wc -l) files"
  fi
done
exit $status
