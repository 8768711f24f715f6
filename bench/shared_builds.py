# bench/shared_builds.py: several headroom builds on one machine (issue 29): 1-4 concurrent cold builds of
# memory-hungry memhog graphs in one real cgroup-v1 memory box against the same builds one after another, and a
# nested superbuild (an outer headroom whose jobs are inner headroom builds) against the same graphs built flat.
"""Usage: python3 bench/shared_builds.py --headroom BUILD/headroom [--memhog BUILD/tests/memhog] [--box-mb 3072]
                                     [--counts 1,2,3,4] [--seeds 1-4] [--no-nested] [--json OUT.json]

Each build is one graph of bench/memory_bench.py's workload (a few heavy jobs at 55-80 % of the box, medium and
small ones, a final link), built cold: a fresh directory and an empty per-user store of its own. All builds of a
round share one box (memory.limit_in_bytes = --box-mb); each tool is started as
`sh -c 'echo $$ > BOX/cgroup.procs && exec headroom -j8'`, all at once for "concurrent", in turn for "one after
another". Kernel OOM kills are counted as memory_bench.py counts them (the box's counters and every cgroup's below
it, polled every 20 ms, and the kernel log's oom-kill records naming the box or below).

Nested: an outer `headroom -j4` whose jobs are `headroom -j8 -C graphK` (inner builds), against one flat graph
holding every job of those graphs (`headroom -j8`). Needs root and cgroup v1 (this machine; the v2 lane runs the
e2e tests).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memory_bench as mb  # noqa: E402  (workload, manifest, kill counting)


class Box:
    """A v1 memory cgroup under this process's own, polled for OOM kills while tools run in it."""

    def __init__(self, name, box_mb):
        self.path = os.path.join(mb.own_memcg(), name)
        self._empty_leftover()
        mb.rm_cgroup_tree(self.path)
        os.mkdir(self.path)
        for knob in ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes"):
            try:
                with open(os.path.join(self.path, knob), "w") as f:
                    f.write(str(box_mb << 20))
            except OSError:
                pass
        self.seen = {}
        self.stop = threading.Event()
        self.log0 = mb.kernel_log_oom_kills()
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()

    def _empty_leftover(self):
        """A box an interrupted run left behind may still hold its builds: end them so the box can go."""
        for _ in range(100):
            pids = []
            for root, _, files in os.walk(self.path):
                if "cgroup.procs" in files:
                    with open(os.path.join(root, "cgroup.procs")) as f:
                        pids += [int(p) for p in f.read().split()]
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            time.sleep(0.05)

    def _poll_once(self):
        for root, dirs, _ in os.walk(self.path):
            for d in dirs:
                p = os.path.join(root, d)
                self.seen[p] = max(self.seen.get(p, 0), mb.read_oom_kill(p))

    def _poll(self):
        while not self.stop.is_set():
            self._poll_once()
            self.stop.wait(0.02)

    def start(self, argv, cwd, env, log_path):
        log = open(log_path, "w")
        return subprocess.Popen(["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec "$@"', "sh"] + argv,
                                cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)

    def close(self):
        """Kernel OOM kills in the box since it was made; removes it."""
        self.stop.set()
        self.thread.join()
        self._poll_once()
        polled = mb.read_oom_kill(self.path) + sum(self.seen.values())
        logged = mb.kills_in_box(self.log0, mb.kernel_log_oom_kills(), "/" + os.path.relpath(self.path, mb.MEMCG_ROOT))
        mb.rm_cgroup_tree(self.path)
        return max(polled, len(logged or []))


def fresh_graph(root, name, jobs, memhog):
    d = os.path.join(root, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(d, "build.ninja"), "w") as f:
        f.write(mb.manifest(jobs, memhog))
    return d


def cold_env(store):
    shutil.rmtree(store, ignore_errors=True)
    return dict(os.environ, HEADROOM_STORE=store)


def run_builds(a, seeds, concurrent, out, warm=False):
    """The builds of `seeds` in one box, together or in turn: cold (fresh directories and stores), or warm (the same
    directories and stores again, outputs deleted, history kept). Returns walls, exit codes and kills."""
    box = Box(f"hb-shared-{'c' if concurrent else 's'}{len(seeds)}", a.box_mb)
    results, t0 = [], time.monotonic()
    procs = []
    for seed in seeds:
        if warm:
            d = os.path.join(out, f"seed{seed}")
            for name in os.listdir(d):
                if name.endswith(".out"):
                    os.unlink(os.path.join(d, name))
            env = dict(os.environ, HEADROOM_STORE=os.path.join(out, f"store{seed}"))
        else:
            d = fresh_graph(out, f"seed{seed}", mb.workload(seed, a.box_mb), a.memhog)
            env = cold_env(os.path.join(out, f"store{seed}"))
        start = time.monotonic()
        p = box.start([a.headroom, "-j8"], d, env, os.path.join(d, "headroom.log"))
        if concurrent:
            procs.append((seed, p, start))
        else:
            p.wait()
            results.append({"seed": seed, "rc": p.returncode, "wall": time.monotonic() - start})
    for seed, p, start in procs:
        p.wait()
        results.append({"seed": seed, "rc": p.returncode, "wall": time.monotonic() - start})
    total = time.monotonic() - t0
    return {"builds": results, "total_wall": total, "kernel_oom_kills": box.close(),
            "failed": [r["seed"] for r in results if r["rc"] != 0]}


def nested_round(a, seeds, out):
    """An outer -j4 build whose jobs are the seeds' graphs built by inner headroom -j8, against one flat graph."""
    inner_dirs = []
    for seed in seeds:
        inner_dirs.append(fresh_graph(out, f"inner{seed}", mb.workload(seed, a.box_mb), a.memhog))
    outer = os.path.join(out, "outer")
    shutil.rmtree(outer, ignore_errors=True)
    os.makedirs(outer)
    lines = ["rule inner", f"  command = {a.headroom} -j8 -C $dir > $out.log 2>&1 && touch $out",
             "  description = INNER $dir"]
    for seed, d in zip(seeds, inner_dirs):
        lines += [f"build inner{seed}.stamp: inner", f"  dir = {d}"]
    with open(os.path.join(outer, "build.ninja"), "w") as f:
        f.write("\n".join(lines) + "\n")
    box = Box("hb-shared-nested", a.box_mb)
    t0 = time.monotonic()
    p = box.start([a.headroom, "-j4"], outer, cold_env(os.path.join(out, "store-nested")), os.path.join(outer, "headroom.log"))
    p.wait()
    nested = {"rc": p.returncode, "wall": time.monotonic() - t0, "kernel_oom_kills": box.close()}

    flat_jobs = []
    for seed in seeds:
        jobs = mb.workload(seed, a.box_mb)
        base = len(flat_jobs)
        for job in jobs:
            flat_jobs.append(mb.Job(f"s{seed}_{job.name}", job.mb, job.ramp_ms, job.hold_ms, job.procs,
                                    deps=[base + d for d in job.deps]))
    flat_dir = fresh_graph(out, "flat", flat_jobs, a.memhog)
    box = Box("hb-shared-flat", a.box_mb)
    t0 = time.monotonic()
    p = box.start([a.headroom, "-j8"], flat_dir, cold_env(os.path.join(out, "store-flat")), os.path.join(flat_dir, "headroom.log"))
    p.wait()
    flat = {"rc": p.returncode, "wall": time.monotonic() - t0, "kernel_oom_kills": box.close()}
    return {"nested": nested, "flat": flat}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--headroom", required=True)
    ap.add_argument("--memhog", default=None)
    ap.add_argument("--box-mb", type=int, default=3072)
    ap.add_argument("--counts", default="1,2,3,4")
    ap.add_argument("--seeds", default="1-4", help="graphs used by the builds of a round (the first N of them)")
    ap.add_argument("--no-nested", action="store_true")
    ap.add_argument("--warm", action="store_true", help="after each cold run, the same builds again warm")
    ap.add_argument("--out", default="/tmp/hb-shared-builds")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    a.headroom = os.path.abspath(a.headroom)
    a.memhog = os.path.abspath(a.memhog or os.path.join(os.path.dirname(a.headroom), "tests", "memhog"))
    seeds = mb.parse_seeds(a.seeds)
    os.makedirs(a.out, exist_ok=True)
    report = {"box_mb": a.box_mb, "rounds": []}
    print(f"{'builds':>6} {'mode':<14} {'walls (s)':<28} {'total (s)':>9} {'kernel OOM kills':>16} {'failed':>7}")
    for count in [int(c) for c in a.counts.split(",")]:
        round_seeds = seeds[:count]
        row = {"count": count}
        for mode, concurrent in (("concurrent", True), ("one by one", False)):
            if count == 1 and not concurrent:
                continue
            phases = ("cold", "warm") if a.warm else ("cold",)
            for phase in phases:
                r = run_builds(a, round_seeds, concurrent, os.path.join(a.out, f"{count}-{mode.replace(' ', '')}"),
                               warm=phase == "warm")
                label = mode if phase == "cold" else mode + " warm"
                row[label] = r
                walls = " ".join(f"{b['wall']:.1f}" for b in r["builds"])
                print(f"{count:>6} {label:<14} {walls:<28} {r['total_wall']:>9.1f} {r['kernel_oom_kills']:>16} "
                      f"{len(r['failed']):>7}", flush=True)
        if count > 1:
            row["ratio"] = row["concurrent"]["total_wall"] / row["one by one"]["total_wall"]
            print(f"{'':>6} concurrent / one by one: {row['ratio']:.2f}", flush=True)
        report["rounds"].append(row)
    if not a.no_nested:
        n = nested_round(a, seeds[:2], os.path.join(a.out, "nested"))
        report["nested"] = n
        for name in ("nested", "flat"):
            r = n[name]
            print(f"{name:>6}: wall {r['wall']:.1f}s rc {r['rc']} kernel OOM kills {r['kernel_oom_kills']}", flush=True)
        print(f"nested / flat: {n['nested']['wall'] / n['flat']['wall']:.2f}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
