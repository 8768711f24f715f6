#!/usr/bin/env python3
"""Issue #12's flash-attn check: a subset of flash-attn 2.8.3.post2's kernels (from its PyPI sdist) built the way its
users build it -- `pip wheel --no-build-isolation` through torch.utils.cpp_extension with `MAX_JOBS=auto` and headroom
first on PATH as `ninja` -- inside a real cgroup memory box smaller than -j x the kernels' peak. Reports the build's
result, wall time, OOM kills counted in the box and every cgroup below it (tests/e2e/memory_box.py), each job's
measured peak and duration from headroom's trace, and what flash-attn's own setup.py MAX_JOBS formula would have chosen
on this machine (min(cores // 2, available GiB / 9)) with the wall that choice implies from the measured durations.

The sdist's setup.py is used as shipped except for three edits, all printed: its CUDAExtension source list becomes the
subset, and -std=c++17 becomes -std=c++20 (torch 2.10+ headers need C++20; cpp_extension passes nothing else).
FLASH_ATTN_CUDA_ARCHS=80 keeps one -gencode (sm_80) so a kernel is one device pipeline, as docs/priors.md measured.
Needs root (the box), nvcc, and a Python with torch (the e2e suite's ~/.cache/headroom-e2e/torch-venv has one).

  bench/flash_subset_bench.py --sdist DIR --python VENV/bin/python --headroom build/headroom --box-gib 6 --out DIR"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
import memory_box  # noqa: E402

DEFAULT_SUBSET = ["csrc/flash_attn/flash_api.cpp",
                  "csrc/flash_attn/src/flash_fwd_hdim64_fp16_sm80.cu",
                  "csrc/flash_attn/src/flash_fwd_hdim64_bf16_sm80.cu"]
SOURCES_LIST = re.compile(r'name="flash_attn_2_cuda",\s*sources=\[[^\]]*\]', re.S)


def patch_setup(setup_py: Path, subset: list[str]) -> None:
    text = setup_py.read_text()
    listed = ",\n".join('                "%s"' % s for s in subset)
    text, n = SOURCES_LIST.subn('name="flash_attn_2_cuda",\n            sources=[\n%s,\n            ]' % listed, text,
                                count=1)
    if n != 1:
        sys.exit("flash_subset_bench: could not find the CUDA extension's source list in %s" % setup_py)
    text = text.replace('"-std=c++17"', '"-std=c++20"')
    setup_py.write_text(text)
    print("patched %s: sources = %s; -std=c++17 -> -std=c++20" % (setup_py, subset), flush=True)


def flash_attn_formula_jobs() -> int:
    """MAX_JOBS as flash-attn 2.8.3's setup.py picks it when MAX_JOBS is unset."""
    available_gib = 0.0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            available_gib = int(line.split()[1]) / (1024 ** 2)
    return max(1, min(max(1, (os.cpu_count() or 1) // 2), int(available_gib / 9)))


def jobs_from_trace(trace: Path) -> list[dict]:
    """One record per finished job: its output, duration and measured peak (headroom's Chrome trace)."""
    if not trace.exists():
        return []
    events = json.loads(trace.read_text())
    if isinstance(events, dict):
        events = events.get("traceEvents", [])
    jobs = []
    for e in events:
        if e.get("ph") == "X":  # one complete event per job; its category is the rule
            args = e.get("args", {})
            jobs.append({"name": e.get("name"), "dur_s": e.get("dur", 0) / 1e6, "args": args})
    return jobs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--sdist", required=True, help="unpacked flash_attn-2.8.3.post2 directory")
    p.add_argument("--python", required=True, help="a Python with torch (CUDA build)")
    p.add_argument("--headroom", required=True, help="the headroom binary; OUT/shim/ninja links to it")
    p.add_argument("--box-gib", type=float, default=6)
    p.add_argument("--subset", nargs="*", default=DEFAULT_SUBSET)
    p.add_argument("--headroom-flags", default="")
    p.add_argument("--out", required=True)
    args = p.parse_args()

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    src = out / "flash_attn-subset"
    if src.exists():
        shutil.rmtree(src)
    shutil.copytree(args.sdist, src, symlinks=True)
    patch_setup(src / "setup.py", args.subset)

    shim = out / "shim"
    shim.mkdir(exist_ok=True)
    headroom = Path(args.headroom).resolve()
    if (shim / "ninja").is_symlink() or (shim / "ninja").exists():
        (shim / "ninja").unlink()
    (shim / "ninja").symlink_to(headroom)

    trace = out / "trace.json"
    env = dict(os.environ)
    env.update({
        "PATH": "%s:%s:%s" % (shim, Path(args.python).parent, env.get("PATH", "")),
        "CCACHE_DISABLE": "1",  # torch's cpp_extension puts ccache in front of the compilers when it finds one
        "MAX_JOBS": "auto",
        "FLASH_ATTN_CUDA_ARCHS": "80",
        "FLASH_ATTENTION_FORCE_BUILD": "TRUE",
        "CUDA_HOME": env.get("CUDA_HOME", "/usr/local/cuda"),
        "HEADROOM_FLAGS": ("--trace=%s %s" % (trace, args.headroom_flags)).strip(),
    })
    found = shutil.which("ninja", path=env["PATH"])
    if not found or Path(found).resolve() != headroom:
        sys.exit("flash_subset_bench: `ninja` on the build's PATH is %s, not %s" % (found, headroom))
    formula_jobs = flash_attn_formula_jobs()
    box = memory_box.MemoryBox(int(args.box_gib * 1024 ** 3))
    box.require_complete_kill_count()
    try:
        start = time.monotonic()
        r = box.run([args.python, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-v",
                     "-w", str(out / "wheel"), str(src)], cwd=out, env=env, timeout=4 * 3600)
        wall = time.monotonic() - start
        kills = box.oom_kills()
    finally:
        box.remove()
    (out / "pip.log").write_text(r.stdout + "\n--- stderr ---\n" + r.stderr)
    jobs = jobs_from_trace(trace)
    # pip -v indents what the build printed; headroom's end-of-build summary lines start with "headroom:".
    summary_lines = [l.strip() for l in r.stdout.splitlines() if l.strip().startswith("headroom:")]
    result = {"rc": r.returncode, "wall_s": round(wall, 1), "kernel_oom_kills": kills, "box_gib": args.box_gib,
              "subset": args.subset, "flash_attn_formula_max_jobs": formula_jobs,
              "serial_wall_s_from_durations": round(sum(j["dur_s"] for j in jobs), 1), "jobs": jobs,
              "headroom_summary": summary_lines[-20:]}
    (out / "result.json").write_text(json.dumps(result, indent=1))
    print(json.dumps({k: v for k, v in result.items() if k != "jobs"}, indent=1))
    for j in jobs:
        print("%-60s %8.1f s  %s" % (j["name"][-60:], j["dur_s"], j["args"]))
    return 0 if r.returncode == 0 and kills == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
