#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, and runs every test through ctest
# (unit tests, memory tests in a real cgroup box, end-to-end and differential tests against ninja).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)" "$@"
