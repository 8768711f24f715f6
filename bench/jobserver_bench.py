#!/usr/bin/env python3
"""The jobserver benchmark of issue #14: a flash-attn-like nvcc workload (bench/nvcc/heavy_kernels.cu, one
-DHEAVY_VARIANT per TU, several -gencode targets, `--threads 4 --jobserver` as flash-attn's setup.py passes
--threads 4) built cold by headroom in a real cgroup memory box, without and with `--jobserver` (docs/jobserver.md).
Without it nvcc finds no jobserver and runs its device pipelines unthrottled; with it each extra pipeline is a slot
headroom grants by -j and memory. Reports wall, the box's peak memory and kernel OOM kills, side by side. Each run
starts cold (fresh build dir and an empty per-user store). Needs root and nvcc.

  bench/jobserver_bench.py --headroom build/headroom [--tus 3] [--box-gib 4] [-j 4] [--arch 80,90] --out DIR"""
import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
import memory_box  # noqa: E402


def manifest(tus, archs, nvcc):
    src = HERE / "nvcc" / "heavy_kernels.cu"
    gencode = " ".join("-gencode arch=compute_%s,code=sm_%s" % (a, a) for a in archs)
    lines = ["# bench/jobserver_bench.py", "rule nvcc",
             "  command = %s -O3 -std=c++17 -DHEAVY_VARIANT=$variant %s --threads 4 --jobserver -c %s -o $out"
             % (nvcc, gencode, src),
             "  description = NVCC $out"]
    for i in range(tus):
        lines += ["build k%d.o: nvcc" % i, "  variant = %d" % i]
    return "\n".join(lines) + "\n"


def box_peak(box) -> int:
    name = "memory.max_usage_in_bytes" if box.version == "v1" else "memory.peak"
    try:
        return int((box.path / name).read_text())
    except (OSError, ValueError):
        return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--headroom", required=True)
    p.add_argument("--nvcc", default="/usr/local/cuda/bin/nvcc")
    p.add_argument("--out", default="/dev/shm/hb-jobserver")
    p.add_argument("--tus", type=int, default=3)
    p.add_argument("--arch", default="80,90")
    p.add_argument("--box-gib", type=float, default=4)
    p.add_argument("-j", type=int, default=4)
    a = p.parse_args()
    reason = memory_box.unavailable_reason()
    if reason:
        sys.exit("jobserver_bench.py: " + reason)
    headroom = str(Path(a.headroom).resolve())
    text = manifest(a.tus, a.arch.split(","), a.nvcc)
    limit = int(a.box_gib * (1 << 30))
    results = {"tus": a.tus, "arch": a.arch, "box_gib": a.box_gib, "j": a.j, "runs": {}}
    for name, extra in (("without --jobserver", []), ("with --jobserver", ["--jobserver"])):
        d = Path(a.out) / name.replace(" ", "_").replace("-", "")
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        (d / "build.ninja").write_text(text)
        store = d.parent / (d.name + ".store")
        shutil.rmtree(store, ignore_errors=True)
        box = memory_box.MemoryBox(limit)
        try:
            env = box.env()
            env["HEADROOM_STORE"] = str(store)
            t0 = time.monotonic()
            r = subprocess.run(box.argv([headroom, "-j%d" % a.j, *extra, "-d", "explain"]), cwd=d, env=env,
                               capture_output=True, text=True, timeout=7200)
            wall = time.monotonic() - t0
            run = {"wall_s": round(wall, 1), "rc": r.returncode, "peak_gib": round(box_peak(box) / (1 << 30), 2),
                   "oom_kills": box.oom_kills(),
                   "slot_offers": (r.stdout + r.stderr).count("offered extra slot"),
                   "tail": (r.stdout + r.stderr)[-1200:]}
        finally:
            box.remove()
        results["runs"][name] = run
        print("%-22s %7.1f s  peak %5.2f GiB  rc=%s  oom_kills=%s  slot offers=%d" % (
            name, run["wall_s"], run["peak_gib"], run["rc"], run["oom_kills"], run["slot_offers"]), flush=True)
    (Path(a.out) / "results.json").write_text(json.dumps(results, indent=1))
    for name, r in results["runs"].items():
        if r["rc"] != 0:
            print("--- %s failed ---\n%s" % (name, r["tail"]))


if __name__ == "__main__":
    sys.exit(main())
