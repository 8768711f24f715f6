#!/usr/bin/env bash
# Configures and builds the one sanitized configuration (clang, ASan+UBSan, libFuzzer coverage hooks) that both
# scripts/sanitize.sh (unit + e2e suites) and fuzz/run.sh (fuzz targets) use. Usage: build-sanitized.sh [target ...]
# Env: HEADROOM_SAN_BUILD_DIR (default <repo>/build-san), HEADROOM_SAN_JOBS (default nproc), CXX_SAN (default clang++).
set -euo pipefail

repo="$(cd "$(dirname "$0")/.." && pwd)"
build="${HEADROOM_SAN_BUILD_DIR:-$repo/build-san}"
jobs="${HEADROOM_SAN_JOBS:-$(nproc)}"

# -O1 and line tables only: sanitizers need no more for exact stacks, and it compiles much faster than -O2 -g
# on the 2-core CI machine. HEADROOM_BUILD_FUZZ implies HEADROOM_SANITIZE (top-level CMakeLists.txt).
cmake -S "$repo" -B "$build" -DCMAKE_CXX_COMPILER="${CXX_SAN:-clang++}" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" -DHEADROOM_BUILD_FUZZ=ON >/dev/null

targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$build" -j"$jobs" "${targets[@]}"
