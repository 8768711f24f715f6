#!/usr/bin/env python3
"""Planner accuracy (issue #13 item 5): how close `headroom -t plan` comes to real builds. Needs root (cgroup boxes).

For each workload and (-j, budget) shape, in a fresh directory with its own empty per-user store:
  1. cold build: headroom -jJ in a cgroup memory box of the budget (history is learned);
  2. forecast:   headroom -t plan -jJ --mem-budget=B --json (from the cold build's history: a true prediction);
  3. warm build: outputs removed, headroom -jJ in a new box of the budget: the MEASURED run;
  4. replay:     headroom -t plan -jJ --mem-budget=B --json again (history now includes the warm run).
Then, with no new builds, each shape's history plans every other shape of its workload ("cross-shape"): the
what-if the tool exists for, compared with the other shape's measured warm build.
Measured wall: the warm build's, start to exit. Measured peak: the box's memory.max_usage_in_bytes (v1; v2
memory.peak), the kernel's own high-water mark: the planner sums per-job peaks that headroom measured the same way
(each job cgroup's max usage, page cache it charged included), so this is the like-for-like figure; the box's
resident memory (v1 memory.stat total_rss / v2 anon, polled every 20 ms, no page cache) is shown beside it.
Targets (issue #13): wall within 15 %, peak within 10 %, judged on the replay (build warm, then plan it); the
forecast (plan from the cold build's history, before the warm build ran) is the harder, honest prediction.

Workloads: `memhog` = bench/memory_bench.py's heterogeneous graphs (seeds given by --seeds, box 1536 MiB sizes);
`nvcc` = real nvcc 13 compiles of small register-tiled CUDA kernels (one -gencode, 3-11 s each here), two C++ TUs
and a link.

  sudo python3 bench/plan_accuracy.py --headroom build-b/headroom [--workload memhog|nvcc|all] [--seeds 1,2]
       [--out /dev/shm/hb-plan] [--json results.json]"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
import memory_bench  # noqa: E402
import memory_box  # noqa: E402

MiB = 1 << 20
MEMHOG_SHAPES = [(2, 1536), (4, 2048), (8, 1536)]  # (-j, budget MiB)
NVCC_SHAPES = [(1, 2048), (2, 2048), (4, 640)]
NVCC_TILES = [8, 12, 16, 20, 24, 12]

CU_SOURCE = """// plan_accuracy.py: a register-tiled matmul; ptxas time grows with the tile
template <int TILE, typename T>
__global__ void Tiled(const T* a, const T* b, T* c, int n) {
  T acc[TILE][TILE] = {};
  int row = (blockIdx.y * blockDim.y + threadIdx.y) * TILE;
  int col = (blockIdx.x * blockDim.x + threadIdx.x) * TILE;
  for (int k = 0; k < n; ++k) {
#pragma unroll
    for (int i = 0; i < TILE; ++i)
#pragma unroll
      for (int j = 0; j < TILE; ++j) acc[i][j] += a[(row + i) * n + k] * b[k * n + col + j];
  }
#pragma unroll
  for (int i = 0; i < TILE; ++i)
#pragma unroll
    for (int j = 0; j < TILE; ++j) c[(row + i) * n + col + j] = acc[i][j];
}
template __global__ void Tiled<VARIANT_TILE, float>(const float*, const float*, float*, int);
template __global__ void Tiled<VARIANT_TILE, double>(const double*, const double*, double*, int);
template __global__ void Tiled<VARIANT_TILE + 2, float>(const float*, const float*, float*, int);
"""
CXX_SOURCE = """#include <map>
#include <string>
#include <vector>
namespace cxx%(i)d {
template <int N> int Sum() { std::vector<int> v(N); for (int i = 0; i < N; ++i) v[i] = i; return N + Sum<N - 1>(); }
template <> int Sum<0>() { return 0; }
}  // namespace cxx%(i)d
int Cxx%(i)d() { std::map<std::string, int> m; m["x"] = cxx%(i)d::Sum<300>(); return m["x"]; }
"""


def nvcc_project(directory):
    nvcc = "/usr/local/cuda/bin/nvcc"
    lines = ["rule nvcc", "  command = %s -O3 -DVARIANT_TILE=$tile -gencode arch=compute_80,code=sm_80 "
             "-Xcompiler -fPIC -c $in -o $out" % nvcc, "  description = NVCC $out",
             "rule cxx", "  command = g++ -O2 -fPIC -c $in -o $out", "  description = CXX $out",
             "rule link", "  command = g++ -shared $in -o $out", "  description = LINK $out"]
    (directory / "k.cu").write_text(CU_SOURCE)
    objs = []
    for i, tile in enumerate(NVCC_TILES):
        lines += ["build k%d.o: nvcc k.cu" % i, "  tile = %d" % tile]
        objs.append("k%d.o" % i)
    for i in range(2):
        (directory / ("c%d.cc" % i)).write_text(CXX_SOURCE % {"i": i})
        lines.append("build c%d.o: cxx c%d.cc" % (i, i))
        objs.append("c%d.o" % i)
    lines.append("build libplan.so: link " + " ".join(objs))
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")
    return [o for o in objs] + ["libplan.so"]


def memhog_project(directory, seed, memhog):
    jobs = memory_bench.workload(seed, 1536)
    (directory / "build.ninja").write_text(memory_bench.manifest(jobs, memhog))
    return [j.name for j in jobs]


class RssPoller:
    """The box's resident memory (no page cache) at its highest, polled every 20 ms."""

    def __init__(self, box):
        self.box, self.peak, self.stop = box, 0, threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def read(self):
        try:
            text = (self.box.path / "memory.stat").read_text()
        except OSError:
            return 0
        fields = dict(line.split() for line in text.splitlines() if len(line.split()) == 2)
        if self.box.version == "v1":
            return int(fields.get("total_rss", 0))  # v1 counts huge pages in rss already
        return int(fields.get("anon", 0))

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, self.read())
            self.stop.wait(0.02)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.peak = max(self.peak, self.read())


def kernel_peak(box):
    name = "memory.max_usage_in_bytes" if box.version == "v1" else "memory.peak"
    try:
        return int((box.path / name).read_text())
    except (OSError, ValueError):
        return None


def build_in_box(headroom, j, budget_mib, cwd, env):
    box = memory_box.MemoryBox(budget_mib * MiB)
    try:
        with RssPoller(box) as poller:
            t0 = time.monotonic()
            r = box.run([headroom, "-j%d" % j], cwd, env=env, timeout=3600)
            wall = time.monotonic() - t0
        return {"wall_s": wall, "rc": r.returncode, "rss_peak": poller.peak, "kernel_peak": kernel_peak(box),
                "oom_kills": box.oom_kills(), "tail": (r.stdout + r.stderr)[-800:]}
    finally:
        box.remove()


def plan(headroom, j, budget_mib, cwd, env, load=None):
    """`load`: passed as --load (other runnable tasks); None: not passed."""
    extra = [] if load is None else ["--load=%.1f" % load]
    r = subprocess.run([headroom, "-t", "plan", "-j%d" % j, "--mem-budget=%dM" % budget_mib, "--json"] + extra,
                       cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return {"error": r.stderr[-800:]}
    p = json.loads(r.stdout)
    return {"wall_s": p["requested"]["wall_ms"] / 1000.0, "peak": p["requested"]["peak_bytes"],
            "completed": p["requested"]["completed"], "figures": p["figures"],
            "recommendation": p["recommendation"] and p["recommendation"]["jobs"]}


def error(predicted, measured):
    return (predicted - measured) / measured if measured else None


def one_shape(a, name, make_project, j, budget):
    d = Path(a.out) / name / ("j%d-%dM" % (j, budget))
    shutil.rmtree(d.parent / (d.name + "-store"), ignore_errors=True)
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    outputs = make_project(d)
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env["HEADROOM_STORE"] = str(d.parent / (d.name + "-store"))
    cold = build_in_box(a.headroom, j, budget, d, env)
    forecast = plan(a.headroom, j, budget, d, env)
    for out in outputs:
        (d / out).unlink(missing_ok=True)
    warm = build_in_box(a.headroom, j, budget, d, env)
    replay = plan(a.headroom, j, budget, d, env)
    row = {"workload": name, "j": j, "budget_mib": budget, "cold": cold, "warm": warm, "forecast": forecast,
           "replay": replay, "load": os.getloadavg()[0], "dir": str(d), "store": env["HEADROOM_STORE"]}
    for kind in ("forecast", "replay"):
        if "error" not in row[kind]:
            row[kind]["wall_error"] = error(row[kind]["wall_s"], warm["wall_s"])
            row[kind]["peak_error"] = error(row[kind]["peak"], warm["rss_peak"])
            row[kind]["peak_error_kernel"] = error(row[kind]["peak"], warm["kernel_peak"] or 0)
    print(summary_line(row), flush=True)
    return row


def pct(x):
    return "—" if x is None else "%+.0f%%" % (100 * x)


def summary_line(row):
    w, f, r = row["warm"], row["forecast"], row["replay"]
    if "error" in f or "error" in r:
        return "%s -j%d %dM: plan failed: %s" % (row["workload"], row["j"], row["budget_mib"], f.get("error") or r.get("error"))
    return ("%-10s -j%d %5d MiB | warm %6.1fs rc=%d kills=%d | RSS peak %5.0f MiB (kernel %5.0f) | forecast %6.1fs %+5.0f%% "
            "peak %5.0f MiB %+4.0f%% | replay %6.1fs %+5.0f%% peak %5.0f MiB %+4.0f%% | load %.1f" % (
                row["workload"], row["j"], row["budget_mib"], w["wall_s"], w["rc"], w["oom_kills"], w["rss_peak"] / MiB,
                (w["kernel_peak"] or 0) / MiB, f["wall_s"], 100 * f["wall_error"], f["peak"] / MiB, 100 * f["peak_error"],
                r["wall_s"], 100 * r["wall_error"], r["peak"] / MiB, 100 * r["peak_error"], row["load"]))


def cross_shape(a, rows, with_load=False):
    """What-if across shapes: each shape's warm history and log plan every other shape of the same workload, compared
    with that shape's measured warm build (no new builds)."""
    out = []
    for source in rows:
        for target in rows:
            if source is target or source["workload"] != target["workload"] or "error" in target["replay"]:
                continue
            env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
            env["HEADROOM_STORE"] = source["store"]
            # with_load: --load is the target run's load average less its own jobs (what a user planning then sees).
            load = max(0.0, target["load"] - target["j"]) if with_load else None
            p = plan(a.headroom, target["j"], target["budget_mib"], Path(source["dir"]), env, load)
            if "error" in p:
                continue
            w = target["warm"]
            out.append({"workload": source["workload"], "from": "-j%d %d MiB" % (source["j"], source["budget_mib"]),
                        "to": "-j%d %d MiB" % (target["j"], target["budget_mib"]), "measured_wall_s": w["wall_s"],
                        "predicted_wall_s": p["wall_s"], "wall_error": error(p["wall_s"], w["wall_s"]),
                        "measured_peak": w["kernel_peak"], "predicted_peak": p["peak"],
                        "peak_error": error(p["peak"], w["kernel_peak"] or 0)})
    return out


def cross_markdown(cross):
    lines = ["| workload | history from | planned shape | measured wall | predicted (err) | measured peak | predicted (err) |",
             "|---|---|---|---|---|---|---|"]
    for c in cross:
        lines.append("| %s | %s | %s | %.1f s | %.1f s (%s) | %.0f MiB | %.0f MiB (%s) |" % (
            c["workload"], c["from"], c["to"], c["measured_wall_s"], c["predicted_wall_s"], pct(c["wall_error"]),
            (c["measured_peak"] or 0) / MiB, c["predicted_peak"] / MiB, pct(c["peak_error"])))
    return "\n".join(lines)


def markdown(rows):
    """One row per shape; met/not met on the replay (the brief's "run the build warm, then plan it"), peak judged on
    the kernel's figure (see the module doc), the forecast and the RSS-based errors shown beside."""
    lines = ["| workload | -j | budget | warm wall | replay wall (err) | forecast wall (err) | warm peak: kernel / RSS | "
             "replay peak (err kernel / RSS) | forecast peak (err kernel) | wall ≤15 % | peak ≤10 % | load |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        w, f, r = row["warm"], row["forecast"], row["replay"]
        if "error" in f or "error" in r:
            lines.append("| %s | %d | %d MiB | plan failed | | | | | | | | |" % (row["workload"], row["j"], row["budget_mib"]))
            continue
        wall_ok = abs(r["wall_error"]) <= 0.15
        peak_ok = abs(r["peak_error_kernel"]) <= 0.10
        lines.append("| %s | %d | %d MiB | %.1f s%s | %.1f s (%s) | %.1f s (%s) | %.0f / %.0f MiB | %.0f MiB (%s / %s) | "
                     "%.0f MiB (%s) | %s | %s | %.0f |" % (
                         row["workload"], row["j"], row["budget_mib"], w["wall_s"], "" if w["rc"] == 0 else " (rc %d)" % w["rc"],
                         r["wall_s"], pct(r["wall_error"]), f["wall_s"], pct(f["wall_error"]),
                         (w["kernel_peak"] or 0) / MiB, w["rss_peak"] / MiB, r["peak"] / MiB,
                         pct(r["peak_error_kernel"]), pct(r["peak_error"]), f["peak"] / MiB, pct(f["peak_error_kernel"]),
                         "met" if wall_ok else "NOT met", "met" if peak_ok else "NOT met", row["load"]))
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--headroom", required=True)
    p.add_argument("--memhog", default=None, help="default: tests/memhog beside --headroom")
    p.add_argument("--workload", choices=["memhog", "nvcc", "all"], default="all")
    p.add_argument("--seeds", default="1,2")
    p.add_argument("--shapes", default=None, help="override, e.g. 2:1536,4:2048")
    p.add_argument("--out", default="/dev/shm/hb-plan")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    reason = memory_box.unavailable_reason()
    if reason:
        sys.exit("plan_accuracy.py: " + reason)
    a.headroom = os.path.abspath(a.headroom)
    memhog = os.path.abspath(a.memhog or os.path.join(os.path.dirname(a.headroom), "tests", "memhog"))
    override = [tuple(int(x) for x in s.split(":")) for s in a.shapes.split(",")] if a.shapes else None
    rows = []
    if a.workload in ("memhog", "all"):
        for seed in memory_bench.parse_seeds(a.seeds):
            for j, budget in override or MEMHOG_SHAPES:
                rows.append(one_shape(a, "memhog-s%d" % seed, lambda d, s=seed: memhog_project(d, s, memhog), j, budget))
    if a.workload in ("nvcc", "all"):
        for j, budget in override or NVCC_SHAPES:
            rows.append(one_shape(a, "nvcc", nvcc_project, j, budget))
    cross = cross_shape(a, rows)
    print()
    print(markdown(rows))
    print()
    print(cross_markdown(cross))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"rows": rows, "cross_shape": cross}, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
