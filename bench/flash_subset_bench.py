#!/usr/bin/env python3
"""Issue #12's flash-attn check: a subset of flash-attn 2.8.3.post2's kernels (from its PyPI sdist) built the way its
users build it -- `pip wheel --no-build-isolation` through torch.utils.cpp_extension with `MAX_JOBS=auto` and headroom
first on PATH as `ninja` -- inside a real cgroup memory box smaller than -j x the kernels' peak. Reports the build's
result, wall time, OOM kills counted in the box and every cgroup below it (tests/e2e/memory_box.py), each job's
measured peak and duration from headroom's trace, and what flash-attn's own setup.py MAX_JOBS formula would have chosen
on this machine (min(cores // 2, available GiB / 9)). With --ninja, the same build then runs again with that ninja
(1.13.2) at the formula's MAX_JOBS, in a new box of the same size: the wall a user gets without headroom.

The sdist's setup.py is used as shipped except for three edits, all printed: its CUDAExtension source list becomes the
subset, and -std=c++17 becomes -std=c++20 (torch 2.10+ headers need C++20; cpp_extension passes nothing else).
FLASH_ATTN_CUDA_ARCHS=80 keeps one -gencode (sm_80) so a kernel is one device pipeline, as docs/priors.md measured.
Needs root (the box), nvcc, and a Python with torch (the e2e suite's ~/.cache/headroom-e2e/torch-venv has one).

  bench/flash_subset_bench.py --sdist DIR --python VENV/bin/python --headroom build/headroom --box-gib 6 --out DIR \\
      [--ninja $(python3 -c 'import ninja; print(ninja.BIN_DIR)')/ninja]"""
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
    p.add_argument("--ninja", help="also build with this ninja (1.13.2) at the MAX_JOBS flash-attn's formula picks")
    p.add_argument("--out", required=True)
    args = p.parse_args()

    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    formula_jobs = flash_attn_formula_jobs()
    headroom = Path(args.headroom).resolve()
    result = {"box_gib": args.box_gib, "subset": args.subset, "flash_attn_formula_max_jobs": formula_jobs}
    result["headroom"] = build_once(args, out / "headroom", headroom, "auto", args.headroom_flags)
    if args.ninja:
        # What a user gets without headroom: ninja at the MAX_JOBS flash-attn's formula picks, in the same box.
        result["ninja"] = build_once(args, out / "ninja", Path(args.ninja).resolve(), str(formula_jobs), None)
    (out / "result.json").write_text(json.dumps(result, indent=1))
    for tool in ("headroom", "ninja"):
        if tool not in result:
            continue
        r = result[tool]
        print("%s: rc %d, wall %.1f s, kernel OOM kills %d, MAX_JOBS=%s" % (tool, r["rc"], r["wall_s"],
                                                                          r["kernel_oom_kills"], r["max_jobs"]))
        for line in r.get("headroom_summary", []):
            print("   " + line)
        for j in r.get("jobs", []):
            a = j["args"]
            print("   %-50s %7.1f s  estimate %s (%s), peak %s, waited for memory %.0f s" % (
                j["name"][-50:], j["dur_s"], a.get("estimate"), a.get("source"), a.get("peak"),
                a.get("waited for memory ms", 0) / 1000))
    if "ninja" in result:
        print("headroom / ninja at MAX_JOBS=%d: %.2f" % (formula_jobs,
                                                       result["headroom"]["wall_s"] / result["ninja"]["wall_s"]))
    ok = all(r["rc"] == 0 and r["kernel_oom_kills"] == 0 for k, r in result.items() if k in ("headroom", "ninja"))
    return 0 if ok else 1


def build_once(args, out: Path, ninja: Path, max_jobs: str, headroom_flags):
    """One `pip wheel` of the subset in a fresh copy of the sdist, in a new box, with `ninja` on PATH being `ninja`.
    headroom_flags None: the tool is not headroom (no trace, no HEADROOM_FLAGS)."""
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    src = out / "flash_attn-subset"
    shutil.copytree(args.sdist, src, symlinks=True)
    patch_setup(src / "setup.py", args.subset)
    shim = out / "shim"
    shim.mkdir()
    (shim / "ninja").symlink_to(ninja)

    trace = out / "trace.json"
    env = dict(os.environ)
    env.update({
        "PATH": "%s:%s:%s" % (shim, Path(args.python).parent, env.get("PATH", "")),
        "CCACHE_DISABLE": "1",  # torch's cpp_extension puts ccache in front of the compilers when it finds one
        "MAX_JOBS": max_jobs,
        "FLASH_ATTN_CUDA_ARCHS": "80",
        "FLASH_ATTENTION_FORCE_BUILD": "TRUE",
        "CUDA_HOME": env.get("CUDA_HOME", "/usr/local/cuda"),
    })
    env.pop("HEADROOM_FLAGS", None)
    if headroom_flags is not None:
        env["HEADROOM_FLAGS"] = ("--trace=%s %s" % (trace, headroom_flags)).strip()
        # A fresh per-user store: the first build on this machine, as pip's temp dir makes it for the build dir.
        env["HEADROOM_STORE"] = str(out / "store")
    found = shutil.which("ninja", path=env["PATH"])
    if not found or Path(found).resolve() != ninja:
        sys.exit("flash_subset_bench: `ninja` on the build's PATH is %s, not %s" % (found, ninja))
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
    # pip -v indents what the build printed (on stderr, as pip runs it); headroom's summary lines start with "headroom:".
    summary_lines = [l.strip() for l in (r.stdout + r.stderr).splitlines() if l.strip().startswith("headroom:")]
    print("%s: rc %d, wall %.1f s, kernel OOM kills %d" % (ninja.name, r.returncode, wall, kills), flush=True)
    return {"rc": r.returncode, "wall_s": round(wall, 1), "kernel_oom_kills": kills, "max_jobs": max_jobs,
            "tool": str(ninja), "serial_wall_s_from_durations": round(sum(j["dur_s"] for j in jobs), 1),
            "jobs": jobs, "headroom_summary": summary_lines[-20:]}


if __name__ == "__main__":
    sys.exit(main())
