#!/usr/bin/env bash
# The README's first command: installs what a fresh Debian/Ubuntu machine lacks, builds headroom,
# and runs the main job, a memory-aware build of examples/memory-demo.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target headroom memhog
examples/memory-demo/run.sh
