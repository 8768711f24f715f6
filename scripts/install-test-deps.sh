#!/usr/bin/env bash
# Owns the pinned tools the e2e suites drive beyond scripts/install-deps.sh: nvcc (CUDA 13.2 from PyPI), torch (built
# for that CUDA major, so the CUDA-extension test runs), meson, and ninja 1.11.1 for the v5-log interop scenarios.
# Each lives in its own venv under HEADROOM_TEST_DEPS (default ~/.cache/headroom-e2e), reinstalled only when its pins
# change. Writes HEADROOM_TEST_DEPS/test-env.sh, the exports the tests read (scripts/test.sh sources it; source it
# yourself to run one suite by hand). Idempotent. Usage: install-test-deps.sh [--no-torch]
# Env: HEADROOM_TEST_NVCC=/path/to/nvcc uses that nvcc instead of the PyPI one (its CUDA major must be torch's).
set -euo pipefail

deps="${HEADROOM_TEST_DEPS:-$HOME/.cache/headroom-e2e}"
with_torch=1
[ "${1:-}" = --no-torch ] && with_torch=0

# torch 2.15.0 on PyPI requires cuda-toolkit==13.2.2, whose nvcc, cicc, crt headers, cudart and CCCL are these wheels
# (13.2.86). Change them together: test_dropin_torch.py builds the CUDA extension only when the majors match.
cuda_version=13.2.86
cuda_packages=("nvidia-cuda-nvcc==$cuda_version" "nvidia-nvvm==$cuda_version" "nvidia-cuda-crt==$cuda_version"
               "nvidia-cuda-runtime==$cuda_version" "nvidia-cuda-cccl==$cuda_version")
torch_packages=("torch==2.15.0" "setuptools==84.2.1" "wheel==0.48.0")
meson_packages=("meson==1.12.1")
v111_packages=("ninja==1.11.1.4")   # Kitware's build of ninja 1.11.1: writes .ninja_log v5

mkdir -p "$deps"
exec 9>"$deps/install.lock"
flock 9   # one installer at a time (two test runs sharing the cache)

# venv NAME PACKAGE...: a venv at $deps/NAME holding these pins; pip runs only when its stamp does not name them (a
# venv made by an older pin list is updated in place: torch is ~5 GB).
venv() {
  local dir="$deps/$1" python_version stamp
  shift
  python_version="$(python3 -c 'import sys; print(sys.version.split()[0])')"
  stamp="$(printf '%s\n' "$python_version" "$@")"
  [ "$(cat "$dir/.headroom-pins" 2>/dev/null)" = "$stamp" ] && [ -x "$dir/bin/python" ] && return 0
  echo "install-test-deps: installing $* into $dir"
  if [ "$("$dir/bin/python" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null)" != "$python_version" ]; then
    rm -rf "$dir"
    python3 -m venv "$dir"
  fi
  "$dir/bin/python" -m pip install -q --disable-pip-version-check "$@"
  printf '%s\n' "$stamp" > "$dir/.headroom-pins"
}

nvcc="${HEADROOM_TEST_NVCC:-}"
if [ -z "$nvcc" ]; then
  venv cuda-venv "${cuda_packages[@]}"
  cuda_home="$(echo "$deps"/cuda-venv/lib/python3*/site-packages/nvidia/cu13)"
  # The toolkit's layout but for two links: libcudart.so (what -lcudart, CMake's CUDA::cudart and torch's
  # cpp_extension link against; the wheel ships only the .so.13) and a stable path that does not name the Python.
  ln -sfn libcudart.so.13 "$cuda_home/lib/libcudart.so"
  ln -sfn "$cuda_home" "$deps/cuda"
  nvcc="$deps/cuda/bin/nvcc"
fi
# A working nvcc, not just files: compile, link and run a kernel's host side (no GPU needed; cudart says so).
probe="$(mktemp -d)"
trap 'rm -rf "$probe"' EXIT
printf '%s\n' '#include <cstdio>' '__global__ void k(int* x) { *x = 1; }' \
  'int main() { int n = 0; cudaGetDeviceCount(&n); std::printf("ok\n"); return 0; }' > "$probe/k.cu"
"$nvcc" -arch=sm_80 -o "$probe/k" "$probe/k.cu" && [ "$("$probe/k")" = ok ] ||
  { echo "install-test-deps: $nvcc cannot compile and link a .cu" >&2; exit 1; }

[ $with_torch = 1 ] && venv torch-venv "${torch_packages[@]}"
venv meson-venv "${meson_packages[@]}"
venv ninja-1.11-venv "${v111_packages[@]}"
"$deps/ninja-1.11-venv/bin/ninja" --version | grep -q '^1\.11\.1' ||
  { echo "install-test-deps: $deps/ninja-1.11-venv/bin/ninja is not ninja 1.11.1" >&2; exit 1; }

cat > "$deps/test-env.sh" <<EOF
# Written by scripts/install-test-deps.sh: the pinned tools of the e2e suites (source this to run one by hand).
export HEADROOM_TEST_NVCC=$(printf '%q' "$nvcc")
export HEADROOM_E2E_MESON=$(printf '%q' "$deps/meson-venv/bin/meson")
export NINJA_V111=$(printf '%q' "$deps/ninja-1.11-venv/bin/ninja")
EOF
[ $with_torch = 1 ] && echo "export HEADROOM_TORCH_VENV=$(printf '%q' "$deps/torch-venv")" >> "$deps/test-env.sh"
echo "install-test-deps: ready ($("$nvcc" --version | sed -n 's/.*release \([0-9.]*\).*/nvcc \1/p'), $deps/test-env.sh)"
