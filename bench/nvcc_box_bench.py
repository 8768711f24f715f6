#!/usr/bin/env python3
"""The real-nvcc benchmark of issue #12: heavy CUDA TUs (bench/nvcc/heavy_kernels.cu, one -DHEAVY_VARIANT each, two
-gencode targets, --threads 2), a few C++ TUs and a link, built in a real cgroup memory box by headroom -jJ cold
(fresh dir) and warm (same dir, outputs removed), and by ninja 1.13.2 at fixed -j in the same kind of box; ninja
-j<cores> with no box is the reference for what the cores allow. OOM kills are counted in the box and every cgroup
below it (tests/e2e/memory_box.py). Cold estimates of the nvcc jobs are compared with their measured peaks (from
headroom's --trace). Needs root and nvcc.

  bench/nvcc_box_bench.py --headroom build/headroom [--tus 10] [--box-gib 6] [-j 8] [--ninja-j 1,2] --out DIR"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
import memory_box  # noqa: E402

CXX_SOURCE = """// a C++ TU of the benchmark: some templates to give the compiler work
#include <map>
#include <string>
#include <vector>
#include <algorithm>
namespace cxx%(i)d {
template <int N> int Sum() { std::vector<int> v(N); for (int i = 0; i < N; ++i) v[i] = i; return N + Sum<N - 1>(); }
template <> int Sum<0>() { return 0; }
}  // namespace cxx%(i)d
int Cxx%(i)d() { std::map<std::string, int> m; m["x"] = cxx%(i)d::Sum<200>(); return m["x"]; }
"""


def manifest(tus, cxx):
    src = HERE / "nvcc" / "heavy_kernels.cu"
    lines = ["# bench/nvcc_box_bench.py", "rule nvcc",
             "  command = nvcc -O3 -std=c++17 -DHEAVY_VARIANT=$variant -gencode arch=compute_80,code=sm_80 "
             "-gencode arch=compute_90,code=sm_90 --threads 2 -Xcompiler -fPIC -c %s -o $out" % src,
             "  description = NVCC $out", "rule cxx", "  command = g++ -O2 -fPIC -c $in -o $out",
             "  description = CXX $out", "rule link", "  command = g++ -shared $in -o $out -L/usr/local/cuda/lib64 -lcudart",
             "  description = LINK $out"]
    objs = []
    for i in range(tus):
        lines += ["build k%d.o: nvcc" % i, "  variant = %d" % i]
        objs.append("k%d.o" % i)
    for i in range(cxx):
        lines.append("build c%d.o: cxx c%d.cc" % (i, i))
        objs.append("c%d.o" % i)
    lines.append("build libbench.so: link " + " ".join(objs))
    return "\n".join(lines) + "\n"


def fresh(out, name, text, cxx):
    d = Path(out) / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    (d / "build.ninja").write_text(text)
    for i in range(cxx):
        (d / ("c%d.cc" % i)).write_text(CXX_SOURCE % {"i": i})
    return d


def run(box, argv, cwd, env=None):
    t0 = time.monotonic()
    r = box.run(argv, cwd, env=env, timeout=7200) if box else subprocess.run(argv, cwd=cwd, env=env,
                                                                             capture_output=True, text=True)
    wall = time.monotonic() - t0
    return {"wall_s": round(wall, 1), "rc": r.returncode, "oom_kills": box.oom_kills() if box else None,
            "tail": (r.stdout + r.stderr)[-1500:]}


def nvcc_estimates(trace_path):
    """(estimate, peak) bytes of each nvcc job in a headroom trace."""
    pairs = []
    events = json.loads(Path(trace_path).read_text())
    for e in events.get("traceEvents", events) if isinstance(events, dict) else events:
        args = e.get("args", {}) if isinstance(e, dict) else {}
        name = e.get("name", "") if isinstance(e, dict) else ""
        if e.get("ph") == "X" and e.get("cat") == "nvcc" and args.get("estimate bytes"):
            pairs.append((args["estimate bytes"], args.get("peak bytes", 0)))
    return pairs


def summarize(runs):
    """Median wall of each kind of run over the rounds, and the ratios issue #12 asks for."""
    walls = {}
    for name, r in runs.items():
        kind = name.rsplit(" r", 1)[0]
        if r["rc"] == 0 and not r["oom_kills"]:
            walls.setdefault(kind, []).append(r["wall_s"])
    medians = {kind: statistics.median(w) for kind, w in walls.items()}
    for kind, m in medians.items():
        print("median %-28s %7.1f s over %d clean round(s)" % (kind, m, len(walls[kind])))
    cold = next((m for k, m in medians.items() if k.startswith("headroom") and k.endswith("cold")), None)
    warm = next((m for k, m in medians.items() if k.startswith("headroom") and k.endswith("warm")), None)
    boxed = [m for k, m in medians.items() if k.endswith("(box)")]
    free = next((m for k, m in medians.items() if k.endswith("(no box)")), None)
    if cold and boxed:
        print("cold / best safe ninja -j in the box: %.2f" % (cold / min(boxed)))
    if warm and free:
        print("warm / ninja -j<cores> with no box:   %.2f" % (warm / free))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--headroom", required=True)
    p.add_argument("--ninja")
    p.add_argument("--out", default="/dev/shm/hb-nvcc")
    p.add_argument("--tus", type=int, default=10)
    p.add_argument("--cxx", type=int, default=3)
    p.add_argument("--box-gib", type=float, default=6)
    p.add_argument("-j", type=int, default=8)
    p.add_argument("--ninja-j", default="1,2")
    p.add_argument("--rounds", type=int, default=1, help="repeat every run this many times, interleaved; medians")
    a = p.parse_args()
    reason = memory_box.unavailable_reason()
    if reason:
        sys.exit("nvcc_box_bench.py: " + reason)
    if a.ninja is None:
        import ninja
        a.ninja = os.path.join(ninja.BIN_DIR, "ninja")
    headroom = os.path.abspath(a.headroom)
    text = manifest(a.tus, a.cxx)
    limit = int(a.box_gib * (1 << 30))
    results = {"tus": a.tus, "cxx": a.cxx, "box_gib": a.box_gib, "j": a.j, "cores": os.cpu_count(), "runs": {}}

    def record(name, r):
        results["runs"][name] = r
        print("%-28s %7.1f s rc=%s oom_kills=%s" % (name, r["wall_s"], r["rc"], r["oom_kills"]), flush=True)

    for rnd in range(1, a.rounds + 1):
        # Each round is every run once, in the same order, so all kinds see the same moments of a shared machine.
        tag = "" if a.rounds == 1 else " r%d" % rnd
        d = fresh(a.out, "headroom", text, a.cxx)
        # A per-user store of its own, empty at first: "cold" must not start from what an earlier run measured.
        store = Path(a.out) / "store"
        shutil.rmtree(store, ignore_errors=True)
        env = dict(os.environ, HEADROOM_STORE=str(store))
        for phase in ("cold", "warm"):
            if phase == "warm":
                for f in d.iterdir():
                    if f.suffix in (".o", ".so"):
                        f.unlink()
            box = memory_box.MemoryBox(limit)
            try:
                r = run(box, [headroom, "-j%d" % a.j, "--trace=trace-%s.json" % phase], d, env)
            finally:
                box.remove()
            pairs = nvcc_estimates(d / ("trace-%s.json" % phase))
            ratios = sorted(est / peak for est, peak in pairs if peak)
            r["nvcc_estimate_over_peak"] = {"median": round(statistics.median(ratios), 2) if ratios else None,
                                            "max": round(max(ratios), 2) if ratios else None, "n": len(ratios)}
            record("headroom -j%d %s%s" % (a.j, phase, tag), r)
            print("   nvcc estimate/peak: %s" % r["nvcc_estimate_over_peak"], flush=True)
        for j in [int(x) for x in a.ninja_j.split(",") if x]:
            box = memory_box.MemoryBox(limit)
            try:
                record("ninja -j%d (box)%s" % (j, tag),
                       run(box, [a.ninja, "-j%d" % j, "-k0"], fresh(a.out, "ninja-j%d" % j, text, a.cxx)))
            finally:
                box.remove()
        cores = os.cpu_count()
        record("ninja -j%d (no box)%s" % (cores, tag),
               run(None, [a.ninja, "-j%d" % cores], fresh(a.out, "ninja-free", text, a.cxx)))
    if a.rounds > 1:
        summarize(results["runs"])
    (Path(a.out) / "results.json").write_text(json.dumps(results, indent=1))
    for name, r in results["runs"].items():
        if r["rc"] != 0:
            print("--- %s failed ---\n%s" % (name, r["tail"][-800:]))


if __name__ == "__main__":
    sys.exit(main())
