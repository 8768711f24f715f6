#!/usr/bin/env python3
"""Measures real nvcc compiles for headroom's priors (issue #12 item 5) with bench/nvcc_profile.py: the heavy sources of
bench/nvcc/ over -gencode counts and --threads, and optionally flash-attn kernels from its PyPI sdist compiled with the
flags its setup.py passes (needs torch's headers: --torch-python). Appends JSON lines to --out.

  bench/nvcc_workload.py --out /tmp/nvcc.jsonl [--set own|flash|all] [--flash-src DIR --torch-python PY]
                         [--flash-kernels flash_bwd_hdim64_fp16_sm80.cu,...]"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ARCHS = ["80", "90", "86", "89"]
# (variant, targets, threads): the heaviest variant over the shapes that matter, two lighter ones at the common one.
OWN_MATRIX = [(9, 1, 1), (9, 2, 1), (9, 2, 2), (9, 4, 2), (9, 4, 4), (0, 2, 2), (4, 2, 2)]
FLASH_KERNELS = ["flash_fwd_hdim64_fp16_sm80.cu", "flash_fwd_hdim128_fp16_sm80.cu", "flash_fwd_hdim256_fp16_sm80.cu",
                 "flash_bwd_hdim64_fp16_sm80.cu", "flash_bwd_hdim128_fp16_sm80.cu", "flash_bwd_hdim256_fp16_sm80.cu"]


def gencode(targets):
    flags = []
    for arch in ARCHS[:targets]:
        flags += ["-gencode", "arch=compute_%s,code=sm_%s" % (arch, arch)]
    return flags


def run(label, cmd, out, cwd):
    r = subprocess.run([sys.executable, str(HERE / "nvcc_profile.py"), "--label", label, "--"] + cmd,
                       capture_output=True, text=True, cwd=cwd)
    line = r.stdout.strip() or json.dumps({"label": label, "error": r.stderr[-2000:]})
    with open(out, "a") as f:
        f.write(line + "\n")
    print(line, flush=True)


def own(out, work):
    src = HERE / "nvcc" / "heavy_kernels.cu"
    for variant, targets, threads in OWN_MATRIX:
        label = "own v%d targets=%d threads=%d" % (variant, targets, threads)
        cmd = ["nvcc", "-O3", "-std=c++17", "-DHEAVY_VARIANT=%d" % variant] + gencode(targets) + [
            "--threads", str(threads), "-c", str(src), "-o", "heavy_v%d_%d_%d.o" % (variant, targets, threads)]
        run(label, cmd, out, work)


def torch_flags(python):
    code = ("import torch.utils.cpp_extension as c, sysconfig;"
            "print('\\n'.join(c.include_paths(device_type='cuda') + [sysconfig.get_paths()['include']]))")
    r = subprocess.run([python, "-c", code], capture_output=True, text=True, check=True)
    return ["-I" + p for p in r.stdout.split()]


def flash(out, work, src_root, python, threads, kernels=FLASH_KERNELS):
    csrc = Path(src_root) / "csrc"
    includes = ["-I" + str(csrc / "flash_attn"), "-I" + str(csrc / "flash_attn" / "src"),
                "-I" + str(csrc / "cutlass" / "include")] + torch_flags(python)
    # The flags flash-attn 2.8.3's setup.py passes to nvcc (plus torch's own defines), for sm_80 only.
    # -std=c++20, not setup.py's c++17: torch 2.10+ headers need C++20 (what cpp_extension passes without a -std).
    flags = ["-O3", "-std=c++20", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
             "-U__CUDA_NO_HALF2_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "--expt-relaxed-constexpr",
             "--expt-extended-lambda", "--use_fast_math", "-D__CUDA_NO_HALF_OPERATORS__",
             "-D__CUDA_NO_HALF_CONVERSIONS__", "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
             "--compiler-options", "-fPIC", "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=flash_attn_2_cuda",
             "-D_GLIBCXX_USE_CXX11_ABI=1", "-gencode", "arch=compute_80,code=sm_80", "--threads", str(threads)]
    for kernel in kernels:
        label = "flash %s threads=%d" % (kernel, threads)
        cmd = ["nvcc"] + includes + flags + ["-c", str(csrc / "flash_attn" / "src" / kernel), "-o", kernel + ".o"]
        run(label, cmd, out, work)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--set", choices=["own", "flash", "all"], default="own")
    p.add_argument("--flash-src")
    p.add_argument("--torch-python")
    p.add_argument("--flash-threads", type=int, default=4)
    p.add_argument("--flash-kernels", default=",".join(FLASH_KERNELS),
                   help="comma-separated kernel files under csrc/flash_attn/src, in the order to compile them")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as work:
        if args.set in ("own", "all"):
            own(args.out, work)
        if args.set in ("flash", "all"):
            if not (args.flash_src and args.torch_python):
                p.error("--set flash needs --flash-src and --torch-python")
            flash(args.out, work, args.flash_src, args.torch_python, args.flash_threads,
                  [k for k in args.flash_kernels.split(",") if k])


if __name__ == "__main__":
    sys.exit(main())
