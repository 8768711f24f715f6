# bench/memory_bench.py: the memory benchmark: heterogeneous memhog graphs run inside a real cgroup-v1 memory box,
# ninja at its best safe fixed -j (found by halving) versus headroom -j16 cold and warm. Needs root.
"""Usage: python3 bench/memory_bench.py --headroom build-bench/headroom [--memhog build-bench/tests/memhog]

The box is a child of this process's own v1 memory cgroup with memory.limit_in_bytes = --budget-mb.
Each tool runs as `sh -c 'echo $$ > BOX/cgroup.procs && exec "$@"'`, in a fresh copy of the tree.
OOM kills = memory.oom_control oom_kill of the box plus of every cgroup below it (headroom makes one
per job; v1 does not propagate the counter upwards, so descendants are polled while the tool runs).
Lower bound = max(total CPU / cores, memory-time area / budget, sum(job time) / slots, longest job),
with total CPU the least any clean run used (tool + jobs, from wait4).
"""
import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time

MEMCG_ROOT = "/sys/fs/cgroup/memory"


def own_memcg():
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, ctrl, path = line.rstrip("\n").split(":", 2)
            if "memory" in ctrl.split(","):
                return os.path.join(MEMCG_ROOT, path.lstrip("/"))
    sys.exit("no v1 memory controller in /proc/self/cgroup")


def read_oom_kill(cg):
    try:
        with open(os.path.join(cg, "memory.oom_control")) as f:
            for line in f:
                k, v = line.split()
                if k == "oom_kill":
                    return int(v)
    except OSError:
        pass
    return 0


def rm_cgroup_tree(cg):
    for root, dirs, _ in os.walk(cg, topdown=False):
        for d in dirs:
            try:
                os.rmdir(os.path.join(root, d))
            except OSError:
                pass
    try:
        os.rmdir(cg)
    except OSError:
        pass


def workload(seed, memhog, scale):
    """A heterogeneous job list: a few heavy link-like jobs, medium compiles, many light ones."""
    rng = random.Random(seed)
    jobs = []
    for i in range(4):
        jobs.append(("heavy", int(520 * scale), 1000, 800, 2))
    for i in range(12):
        jobs.append(("medium", int(rng.randint(120, 200) * scale), 400, 400, 1))
    for i in range(32):
        jobs.append(("light", int(rng.randint(8, 32) * scale), 50, rng.randint(50, 200), 1))
    rng.shuffle(jobs)
    # Put the heavy ones early so a fixed -j hits them together, as a real build's link step would.
    jobs.sort(key=lambda j: j[0] != "heavy" and rng.random() < 0.7)
    lines = ["# memhog workload (bench/memory_bench.py)", "rule hog",
             f"  command = {memhog} --mb $mb --ramp-ms $ramp --hold-ms $hold --procs $procs > $out",
             "  description = HOG $out"]
    for i, (kind, mb, ramp, hold, procs) in enumerate(jobs):
        lines.append(f"build {kind}_{i:03d}.out: hog")
        lines += [f"  mb = {mb}", f"  ramp = {ramp}", f"  hold = {hold}", f"  procs = {procs}"]
    return jobs, "\n".join(lines) + "\n"


def lower_bound(jobs, slots, budget_mb, cpu_s, cores):
    """max(CPU time / cores, memory-time area / budget, job time / slots, longest job)."""
    durations = [(ramp + hold) / 1000.0 for _, _, ramp, hold, _ in jobs]
    area = sum(mb * (ramp / 2 + hold) / 1000.0 for _, mb, ramp, hold, _ in jobs)  # MB*s, linear ramp
    parts = {"cpu": cpu_s / cores, "memory_area": area / budget_mb, "slots": sum(durations) / slots,
             "longest": max(durations)}
    return max(parts.values()), parts


def run_in_box(parent_cg, name, budget_mb, argv, cwd):
    box = os.path.join(parent_cg, name)
    rm_cgroup_tree(box)
    os.mkdir(box)
    with open(os.path.join(box, "memory.limit_in_bytes"), "w") as f:
        f.write(str(budget_mb * 1024 * 1024))
    try:
        with open(os.path.join(box, "memory.memsw.limit_in_bytes"), "w") as f:
            f.write(str(budget_mb * 1024 * 1024))
    except OSError:
        pass
    seen = {}
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            for root, dirs, _ in os.walk(box):
                for d in dirs:
                    p = os.path.join(root, d)
                    seen[p] = max(seen.get(p, 0), read_oom_kill(p))
            stop.wait(0.02)

    th = threading.Thread(target=poll, daemon=True)
    th.start()
    t0 = time.monotonic()
    p = subprocess.Popen(["sh", "-c", f'echo $$ > {box}/cgroup.procs && exec "$@"', "sh"] + argv, cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    raw = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)  # rusage of the tool and every job it reaped
    wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    p.stdout.close()
    stop.set()
    th.join()
    for root, dirs, _ in os.walk(box):
        for d in dirs:
            q = os.path.join(root, d)
            seen[q] = max(seen.get(q, 0), read_oom_kill(q))
    kills = read_oom_kill(box) + sum(seen.values())
    out = raw.decode(errors="replace")
    rm_cgroup_tree(box)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rc": p.returncode, "oom_kills": kills,
            "safety_kills": out.count("killed to save memory"), "tail": out[-1500:]}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--headroom", required=True)
    ap.add_argument("--ninja", default=None)
    ap.add_argument("--memhog", default=None, help="default: tests/memhog beside --headroom")
    ap.add_argument("--out", default="/dev/shm/hb-mem")
    ap.add_argument("--budget-mb", type=int, default=1536)
    ap.add_argument("--scale", type=float, default=1.0, help="multiplies every job's MB")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-j", type=int, default=16)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("memory_bench.py needs root (it creates a memory cgroup)")
    if a.ninja is None:
        import ninja
        a.ninja = os.path.join(ninja.BIN_DIR, "ninja")
    headroom = os.path.abspath(a.headroom)
    memhog = os.path.abspath(a.memhog or os.path.join(os.path.dirname(headroom), "tests", "memhog"))
    jobs, manifest = workload(a.seed, memhog, a.scale)
    parent = own_memcg()
    os.makedirs(a.out, exist_ok=True)

    def fresh(name):
        d = os.path.join(a.out, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "build.ninja"), "w") as f:
            f.write(manifest)
        return d

    results = {"budget_mb": a.budget_mb, "jobs": len(jobs), "cores": os.cpu_count(),
               "ninja_runs": [], "headroom": {}}
    # ninja: halve -j from 16 until a run has no OOM kill. -k 0 so a kill does not stop the run early.
    j = a.j
    best = None
    while j >= 1:
        r = run_in_box(parent, f"hb-bench-ninja-j{j}", a.budget_mb, [a.ninja, f"-j{j}", "-k0"], fresh(f"ninja-j{j}"))
        r["j"] = j
        results["ninja_runs"].append(r)
        print(f"ninja -j{j}: {r['wall']:.2f}s cpu {r['cpu']:.2f}s rc={r['rc']} oom_kills={r['oom_kills']}", flush=True)
        if r["oom_kills"] == 0 and r["rc"] == 0:
            best = r
            break
        j //= 2
    # headroom -j16: cold (fresh dir, no .headroom_history) then warm (same dir, outputs removed).
    d = fresh("headroom")
    for phase in ("cold", "warm"):
        if phase == "warm":
            for name in os.listdir(d):
                if name.endswith(".out"):
                    os.unlink(os.path.join(d, name))
        r = run_in_box(parent, f"hb-bench-headroom-{phase}", a.budget_mb, [headroom, f"-j{a.j}"], d)
        results["headroom"][phase] = r
        print(f"headroom -j{a.j} {phase}: {r['wall']:.2f}s cpu {r['cpu']:.2f}s rc={r['rc']} oom_kills={r['oom_kills']} "
              f"safety_kills={r['safety_kills']}", flush=True)
    # CPU term: the least total CPU (tool + jobs) any clean run needed, spread over every core.
    clean = [r for r in results["ninja_runs"] + list(results["headroom"].values()) if r["rc"] == 0]
    cpu = min((r["cpu"] for r in clean), default=0.0)
    lb, parts = lower_bound(jobs, a.j, a.budget_mb, cpu, os.cpu_count())
    results["lower_bound_s"], results["lower_bound_parts"] = lb, parts
    print("lower bound parts: " + ", ".join(f"{k} {v:.2f}s" for k, v in parts.items()))
    print(f"lower bound {lb:.2f}s ({len(jobs)} jobs, budget {a.budget_mb} MiB, -j{a.j})")
    if best:
        for phase, r in results["headroom"].items():
            print(f"headroom {phase} / ninja best safe -j{best['j']}: {r['wall'] / best['wall']:.2f}x wall;"
                  f" headroom / lower bound {r['wall'] / lb:.2f}x; ninja / lower bound {best['wall'] / lb:.2f}x")
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    for r in results["ninja_runs"] + list(results["headroom"].values()):
        if r["rc"] != 0:
            print("--- failing run tail ---\n" + r["tail"][-600:])


if __name__ == "__main__":
    main()
