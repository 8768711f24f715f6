#!/usr/bin/env bash
# bench/device_flash.sh: issue 30 item 4 on a real many-core machine (16 cores / 128 GiB, CUDA, no network): a
# flash-attn 2.8.3 subset built through pip as its users build it, three ways, one after another, then a table:
#   headroom    headroom first on PATH as `ninja`, MAX_JOBS=auto (headroom picks -j by memory)
#   formula     ninja 1.13.2, MAX_JOBS unset: flash-attn's setup.py computes its own MAX_JOBS formula
#   fixed       ninja 1.13.2, MAX_JOBS=$BEST_J (default: every compile of the subset at once, the best fixed -j
#               when memory does not bind; pass BEST_J to sweep by hand)
# Everything it needs comes with it or is already on the machine (nothing is downloaded):
#   SDIST   flash_attn-2.8.3.post2 sdist, a .tar.gz or an unpacked directory   (required)
#   PYTHON  a Python with a CUDA build of torch and pip                         (default: python3)
#   HEADROOM the headroom binary (a stripped Release build is ~5 MB)           (default: build/headroom)
#   NINJA   ninja 1.13.2 (pip's ninja package: python -c 'import ninja; print(ninja.BIN_DIR)')
#   KERNELS how many sm80 kernels of the subset (fwd and bwd, fp16 and bf16 in turn; default 8) + flash_api.cpp
#   BOX_GIB optional, whole GiB: every build in a cgroup v1 memory box of this size (root; the formula still sees the
#           machine's MemAvailable, as in a container)
#   OUT     work directory (default /tmp/device-flash)
# FLASH_ATTN_CUDA_ARCHS=80 keeps one -gencode per kernel (one nvcc pipeline, as docs/priors.md measured), and
# -std=c++17 becomes -std=c++20 (torch 2.10+ headers need it); both as bench/flash_subset_bench.py does.
# Budget: with KERNELS=8 on 16 cores each build is one wave of kernels (2-4 min each with --threads 4): ~10 min.
# UNTESTED: written without a GPU machine; the first run on one is its test.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
SDIST="${SDIST:?SDIST: the flash_attn-2.8.3.post2 sdist (.tar.gz or directory)}"
PYTHON="${PYTHON:-python3}"
HEADROOM="$(realpath "${HEADROOM:-$here/../build/headroom}")"
NINJA="${NINJA:-$("$PYTHON" -c 'import ninja, os; print(os.path.join(ninja.BIN_DIR, "ninja"))' 2>/dev/null || true)}"
KERNELS="${KERNELS:-8}"
OUT="${OUT:-/tmp/device-flash}"
CUDA_HOME="${CUDA_HOME:-/usr/local/cuda}"

die() { echo "device_flash.sh: $*" >&2; exit 2; }
[ -e "$SDIST" ] || die "no sdist at $SDIST"
[ -x "$HEADROOM" ] || die "no headroom binary at $HEADROOM"
[ -n "$NINJA" ] && [ -x "$NINJA" ] || die "no ninja 1.13.2 (set NINJA)"
case "$("$NINJA" --version)" in 1.13.2*) ;; *) die "$NINJA is not ninja 1.13.2";; esac  # pip's says 1.13.2.git.kitware...
[ -x "$CUDA_HOME/bin/nvcc" ] || die "no nvcc at $CUDA_HOME/bin/nvcc"
"$PYTHON" -c 'import torch, torch.utils.cpp_extension, psutil; assert torch.version.cuda' 2>/dev/null \
  || die "$PYTHON has no CUDA build of torch (or psutil, which flash-attn's setup.py imports)"
nproc_here=$(nproc)
mem_gib=$(awk '/MemAvailable/ {printf "%d", $2 / 1048576}' /proc/meminfo)

rm -rf "$OUT" && mkdir -p "$OUT"
src0="$OUT/sdist"
if [ -d "$SDIST" ]; then cp -a "$SDIST" "$src0"; else mkdir "$src0" && tar -xzf "$SDIST" -C "$src0" --strip-components=1; fi
[ -f "$src0/setup.py" ] || die "$SDIST holds no setup.py"

# The subset: flash_api.cpp and KERNELS sm80 kernels, forward and backward, fp16 and bf16, by head dimension.
subset=$(cd "$src0" && "$PYTHON" - "$KERNELS" <<'EOF'
import glob, sys
n = int(sys.argv[1])
kinds = [f"csrc/flash_attn/src/flash_{d}_hdim{h}_{t}_sm80.cu" for h in (64, 128, 96, 256, 32, 160, 192)
         for d in ("fwd", "bwd") for t in ("fp16", "bf16")]
picked = [k for k in kinds if glob.glob(k)][:n]
print(" ".join(["csrc/flash_attn/flash_api.cpp"] + picked))
EOF
)
jobs_in_subset=$(wc -w <<<"$subset")
echo "subset ($jobs_in_subset compiles): $subset"
BEST_J="${BEST_J:-$jobs_in_subset}"

build() {  # build NAME NINJA_BINARY MAX_JOBS(or "") : one pip wheel in a fresh copy, prints "NAME wall rc"
  local name=$1 tool=$2 max_jobs=$3 dir="$OUT/$1"
  mkdir -p "$dir/shim" && cp -a "$src0" "$dir/src" && ln -s "$tool" "$dir/shim/ninja"
  "$PYTHON" - "$dir/src/setup.py" $subset <<'EOF'
import re, sys
path, subset = sys.argv[1], sys.argv[2:]
text = open(path).read()
listed = ",\n".join('                "%s"' % s for s in subset)
text, n = re.subn(r'name="flash_attn_2_cuda",\s*sources=\[[^\]]*\]',
                  'name="flash_attn_2_cuda",\n            sources=[\n%s,\n            ]' % listed, text, count=1, flags=re.S)
if n != 1:
    sys.exit("could not find the CUDA extension's source list in " + path)
open(path, "w").write(text.replace('"-std=c++17"', '"-std=c++20"'))
EOF
  local -a env_args=(PATH="$dir/shim:$(dirname "$PYTHON"):$PATH" CCACHE_DISABLE=1 FLASH_ATTN_CUDA_ARCHS=80
                     FLASH_ATTENTION_FORCE_BUILD=TRUE FLASH_ATTENTION_SKIP_CUDA_BUILD=FALSE CUDA_HOME="$CUDA_HOME"
                     HEADROOM_STORE="$dir/store" HEADROOM_FLAGS="--trace=$dir/trace.json")
  [ -n "$max_jobs" ] && env_args+=(MAX_JOBS="$max_jobs")
  local -a cmd=(env -u MAX_JOBS -u NINJAFLAGS "${env_args[@]}" "$PYTHON" -m pip wheel --no-build-isolation --no-deps
                -v -w "$dir/wheel" "$dir/src")
  if [ -n "${BOX_GIB:-}" ]; then
    local box="/sys/fs/cgroup/memory/device-flash-$name"
    mkdir "$box" && echo $((BOX_GIB << 30)) > "$box/memory.limit_in_bytes"
    cmd=(sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$box" "${cmd[@]}")
  fi
  local t0=$(date +%s.%N) rc=0
  "${cmd[@]}" >"$dir/pip.log" 2>&1 || rc=$?
  local wall=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
  local kills=0
  if [ -n "${BOX_GIB:-}" ]; then
    kills=$(awk '/oom_kill / {print $2}' "$box/memory.oom_control")
    rmdir "$box" 2>/dev/null || true
  fi
  # The -j the build ran at: headroom's own summary, or the ninja command line torch logged.
  local j=$(grep -o -- 'ninja.* -j *[0-9]*' "$dir/pip.log" | grep -o -- '-j *[0-9]*' | tail -1 | tr -d ' -j')
  printf '%s\t%.1f\t%s\t%s\t%s\n' "$name" "$wall" "$rc" "$kills" "${j:-${max_jobs:-?}}" | tee -a "$OUT/results.tsv"
}

echo "machine: $nproc_here CPUs, ${mem_gib} GiB available; ninja $("$NINJA" --version); headroom $("$HEADROOM" --headroom-version 2>/dev/null || echo ?)"
build headroom "$HEADROOM" auto
build formula "$NINJA" ""
build fixed "$NINJA" "$BEST_J"

echo
echo "| build | MAX_JOBS | wall | × best fixed | exit | OOM kills (box) |"
echo "|---|---|---|---|---|---|"
fixed_wall=$(awk -F'\t' '$1 == "fixed" {print $2}' "$OUT/results.tsv")
while IFS=$'\t' read -r name wall rc kills j; do
  label=$name
  case $name in headroom) label="headroom as ninja, MAX_JOBS=auto";; formula) label="ninja 1.13.2, flash-attn's formula";;
    fixed) label="ninja 1.13.2, fixed";; esac
  printf '| %s | %s | %s s | %.2f× | %s | %s |\n' "$label" "$j" "$wall" "$(awk -v a="$wall" -v b="$fixed_wall" 'BEGIN {print a / b}')" "$rc" "$kills"
done <"$OUT/results.tsv"
echo "logs: $OUT/*/pip.log; headroom's per-job trace: $OUT/headroom/trace.json"
