# bench/memory_bench.py: the memory benchmark of issue #12: heterogeneous memhog graphs in a real cgroup-v1 memory
# box, ninja 1.13.2 at its best fixed -j (1..8) against headroom -j8 cold and warm, over many seeds. Needs root.
"""Usage: python3 bench/memory_bench.py --headroom BUILD/headroom [--memhog BUILD/tests/memhog] [--seeds 1-10]

Each seed is one graph: many small jobs, some medium ones, a few near the box size, and a final link needing
every other job. The box is a child of this process's own v1 memory cgroup, memory.limit_in_bytes (and
memory.memsw.limit_in_bytes) = --budget-mb. Each tool runs as `sh -c 'echo $$ > BOX/cgroup.procs && exec "$@"'`.

ninja: every -j from -j (8) down to 1, each in a fresh copy, -k0 so a kill does not end the run early; the best
fixed -j is the fastest run with rc 0 and no OOM kill. A -j is skipped only when it provably cannot beat the best
so far: its wall is at least sum(job time) / j, and that already exceeds the best wall.
headroom -j8: cold (fresh directory, no history, an empty per-user store of its own: HEADROOM_STORE=OUT/seedN/store)
then warm (same directory and store, outputs deleted, history kept).

Kernel OOM kills are counted two ways and the larger count is used: the memory.oom_control oom_kill of the box
plus of every cgroup below it (v1 counts a kill only in the victim's own cgroup, so descendants are polled every
20 ms while the tool runs), and the kernel log's "oom-kill:" lines of the run whose oom_memcg or task_memcg is the
box or below it (a job cgroup removed between two polls cannot hide a kill from the log).
Lower bound = max(total CPU / cores, memory-time area / budget, sum(job time) / slots, longest chain, the heavy
jobs' holds in series plus the link), total CPU
being the least any clean run of that seed used (tool + jobs, from wait4). It is given twice: with the nominal
job times (ramp + hold) and with each job's shortest time in any run of the seed (from .ninja_log), which on a
shared, loaded machine is what the jobs really took.
HEADROOM_FLAGS (or --headroom-flags), e.g. "-d explain", is passed to headroom; its output is kept in OUT/seedN/.
"{phase}" in them becomes cold or warm, e.g. --headroom-flags="--trace=trace-{phase}.json".
"""
import argparse
import json
import os
import random
import shlex
import shutil
import statistics
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


def kernel_log_oom_kills():
    """(timestamp, oom_memcg, task_memcg) of every "oom-kill:" line the kernel log still holds; None when unreadable."""
    try:
        text = subprocess.run(["dmesg"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    kills = []
    for line in text.splitlines():
        if "oom-kill:" not in line or not line.startswith("["):
            continue
        stamp = float(line[1:line.index("]")])
        fields = dict(f.split("=", 1) for f in line.split("oom-kill:", 1)[1].split(",") if "=" in f)
        kills.append((stamp, fields.get("oom_memcg", ""), fields.get("task_memcg", "")))
    return kills


def kills_in_box(before, after, box_rel):
    """Kernel-log kills that appeared during the run whose OOM domain or victim lies in the box or below it, as
    (OOM domain, victim's cgroup) relative to the box ("." = the box itself)."""
    if before is None or after is None:
        return None
    last = max((k[0] for k in before), default=-1.0)
    inside = lambda memcg: memcg == box_rel or memcg.startswith(box_rel + "/")  # noqa: E731
    relative = lambda memcg: os.path.relpath(memcg, box_rel) if inside(memcg) else memcg  # noqa: E731
    return [(relative(oom), relative(task)) for stamp, oom, task in after
            if stamp > last and (inside(oom) or inside(task))]


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


class Job:
    def __init__(self, name, mb, ramp_ms, hold_ms, procs, deps=()):
        self.name, self.mb, self.ramp_ms, self.hold_ms, self.procs = name, mb, ramp_ms, hold_ms, procs
        self.deps = list(deps)

    @property
    def seconds(self):
        return (self.ramp_ms + self.hold_ms) / 1000.0

    @property
    def mb_seconds(self):  # linear ramp, then a plateau; memhog frees everything at exit
        return self.mb * (self.ramp_ms / 2 + self.hold_ms) / 1000.0


def workload(seed, box_mb):
    """Many small jobs, some medium, a few near the box size (in random places), then a link needing them all."""
    rng = random.Random(seed)
    jobs = []
    for _ in range(rng.randint(2, 4)):  # 55-80 % of the box: two of them never fit together
        jobs.append(("heavy", int(box_mb * rng.uniform(0.55, 0.80)), rng.randint(400, 700), rng.randint(300, 700), 2))
    for _ in range(rng.randint(8, 14)):  # 8-22 % of the box
        jobs.append(("medium", int(box_mb * rng.uniform(0.08, 0.22)), rng.randint(100, 250), rng.randint(150, 400), 1))
    for _ in range(rng.randint(16, 28)):
        jobs.append(("small", rng.randint(8, 48), 50, rng.randint(50, 200), 1))
    rng.shuffle(jobs)
    out = [Job(f"{kind}_{i:03d}.out", mb, ramp, hold, procs) for i, (kind, mb, ramp, hold, procs) in enumerate(jobs)]
    out.append(Job("link.out", int(box_mb * 0.2), 300, 400, 1, deps=range(len(out))))
    return out


def reordered(jobs, order_seed):
    """The same jobs in another manifest order (the link stays last and needs them all): ninja runs a fixed -j in
    manifest order, so whether two heavy jobs meet at -jN depends on it. 0 keeps the generator's order."""
    if not order_seed:
        return jobs
    work = jobs[:-1]
    random.Random(order_seed).shuffle(work)
    link = jobs[-1]
    return work + [Job(link.name, link.mb, link.ramp_ms, link.hold_ms, link.procs, deps=range(len(work)))]


def manifest(jobs, memhog):
    lines = ["# memhog workload (bench/memory_bench.py)", "rule hog",
             f"  command = {memhog} --mb $mb --ramp-ms $ramp --hold-ms $hold --procs $procs > $out",
             "  description = HOG $out"]
    for job in jobs:
        deps = " ".join(jobs[d].name for d in job.deps)
        lines.append(f"build {job.name}: hog" + (f" {deps}" if deps else ""))
        lines += [f"  mb = {job.mb}", f"  ramp = {job.ramp_ms}", f"  hold = {job.hold_ms}", f"  procs = {job.procs}"]
    return "\n".join(lines) + "\n"


def longest_chain(jobs):
    finish = []
    for job in jobs:  # deps always point backwards
        finish.append(job.seconds + max((finish[d] for d in job.deps), default=0.0))
    return max(finish)


def heavy_serial(jobs, budget_mb):
    """Jobs above half the box cannot both be at their peak at once, so their holds are disjoint; the first one
    ramps before its hold, and the final link (which needs every job) runs after the last."""
    heavy = [j for j in jobs if j.mb > budget_mb / 2 and not j.deps]
    if not heavy:
        return 0.0
    sinks = [j for j in jobs if len(j.deps) == len(jobs) - 1]
    return (min(j.ramp_ms for j in heavy) + sum(j.hold_ms for j in heavy)) / 1000.0 + sum(j.seconds for j in sinks)


def heavy_packing(jobs, budget_mb):
    """heavy_serial, plus the memory-time of everything else that cannot sit beside the heavy holds. Holds of jobs
    above half the box are disjoint; during heavy i's hold other work has at most budget - mb_i. Every other job's
    area (and the heavy ramps' triangles) is absorbed there first; what is left needs the whole box for
    left / budget seconds more. The final link (which needs every job) comes after. Slots and CPU are ignored, so
    this is still a bound a clairvoyant scheduler cannot beat."""
    heavy = [j for j in jobs if j.mb > budget_mb / 2 and not j.deps]
    if not heavy:
        return 0.0
    sinks = [j for j in jobs if len(j.deps) == len(jobs) - 1]
    others = [j for j in jobs if j not in heavy and j not in sinks]
    area = sum(j.mb_seconds for j in others) + sum(j.mb * j.ramp_ms / 2000.0 for j in heavy)
    beside = sum((budget_mb - j.mb) * j.hold_ms / 1000.0 for j in heavy)
    holds = sum(j.hold_ms for j in heavy) / 1000.0
    return holds + max(0.0, area - beside) / budget_mb + sum(j.seconds for j in sinks)


def lower_bound(jobs, slots, budget_mb, cpu_s, cores):
    parts = {"cpu": cpu_s / cores, "memory_area": sum(j.mb_seconds for j in jobs) / budget_mb,
             "slots": sum(j.seconds for j in jobs) / slots, "chain": longest_chain(jobs),
             "heavy_serial": heavy_serial(jobs, budget_mb), "heavy_packing": heavy_packing(jobs, budget_mb)}
    return max(parts.values()), parts


def stretched(jobs, runs):
    """The jobs with each one's shortest logged time over `runs` (its memory shape scaled to fit)."""
    out = []
    for job in jobs:
        seen = [r["job_seconds"][job.name] for r in runs if job.name in r.get("job_seconds", {})]
        factor = max(min(seen), job.seconds) / job.seconds if seen else 1.0
        out.append(Job(job.name, job.mb, job.ramp_ms * factor, job.hold_ms * factor, job.procs, job.deps))
    return out


def run_in_box(parent_cg, name, budget_mb, argv, cwd, log_path=None, env=None):
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

    def poll_descendants():
        for root, dirs, _ in os.walk(box):
            for d in dirs:
                p = os.path.join(root, d)
                seen[p] = max(seen.get(p, 0), read_oom_kill(p))

    def poll():
        while not stop.is_set():
            poll_descendants()
            stop.wait(0.02)

    th = threading.Thread(target=poll, daemon=True)
    log0 = kernel_log_oom_kills()
    th.start()
    t0 = time.monotonic()
    p = subprocess.Popen(["sh", "-c", f'echo $$ > {box}/cgroup.procs && exec "$@"', "sh"] + argv, cwd=cwd,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    raw = p.stdout.read()
    _, status, ru = os.wait4(p.pid, 0)  # rusage of the tool and every job it reaped
    wall = time.monotonic() - t0
    rc = os.waitstatus_to_exitcode(status)
    p.stdout.close()
    stop.set()
    th.join()
    poll_descendants()
    kills = read_oom_kill(box) + sum(seen.values())
    log_kills = kills_in_box(log0, kernel_log_oom_kills(), "/" + os.path.relpath(box, MEMCG_ROOT))
    out = raw.decode(errors="replace")
    if log_path:
        with open(log_path, "w") as f:
            f.write(out)
    rm_cgroup_tree(box)
    return {"wall": wall, "cpu": ru.ru_utime + ru.ru_stime, "rc": rc,
            "oom_kills": max(kills, len(log_kills or [])), "polled_oom_kills": kills,
            "kernel_log_oom_kills": None if log_kills is None else len(log_kills), "kernel_log_kills": log_kills, "cgroups_polled": len(seen),
            "job_seconds": ninja_log_durations(cwd), "tail": out[-1500:]}


def ninja_log_durations(build_dir):
    """output -> seconds of its last logged run (the log is .ninja_log for both tools)."""
    durations = {}
    try:
        with open(os.path.join(build_dir, ".ninja_log")) as f:
            for line in f:
                if line.startswith("#"):
                    continue
                start, end, _, output = line.split("\t")[:4]
                durations[output] = (int(end) - int(start)) / 1000.0
    except OSError:
        pass
    return durations


def parse_seeds(text):
    seeds = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        seeds += list(range(int(lo), int(hi or lo) + 1))
    return seeds


def fmt_run(r):
    return (f"{r['wall']:.2f}s cpu {r['cpu']:.2f}s rc={r['rc']} oom_kills={r['oom_kills']} "
            f"(kernel log: {r['kernel_log_oom_kills']})")


def add_lower_bounds(res, jobs, slots, budget_mb):
    runs = [r for r in res["ninja_runs"] if "wall" in r] + list(res["headroom"].values())
    for rounds in res.get("rounds", {}).values():
        runs += rounds
    cpu = min((r["cpu"] for r in runs if r.get("rc") == 0), default=0.0)
    res["lower_bound"], res["lower_bound_parts"] = lower_bound(jobs, slots, budget_mb, cpu, os.cpu_count())
    res["lower_bound_measured"], res["lower_bound_measured_parts"] = lower_bound(
        stretched(jobs, runs), slots, budget_mb, cpu, os.cpu_count())


def bench_seed(a, seed, parent, headroom, memhog, headroom_flags, earlier):
    jobs = reordered(workload(seed, a.budget_mb), a.order)
    text = manifest(jobs, memhog)
    seed_dir = os.path.join(a.out, f"seed{seed}")
    os.makedirs(seed_dir, exist_ok=True)

    def fresh(name):
        d = os.path.join(seed_dir, name)
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
        with open(os.path.join(d, "build.ninja"), "w") as f:
            f.write(text)
        return d

    kinds = {k: sum(1 for j in jobs if j.name.startswith(k)) for k in ("small", "medium", "heavy", "link")}
    res = {"seed": seed, "jobs": len(jobs), "kinds": kinds, "job_seconds": sum(j.seconds for j in jobs),
           "ninja_runs": [], "headroom": {}}
    print(f"== seed {seed}: {len(jobs)} jobs {kinds}, heavy MiB "
          f"{sorted(j.mb for j in jobs if j.name.startswith('heavy'))}", flush=True)
    best = None
    if earlier is not None:  # --ninja-results: ninja's sweep of an earlier invocation stands in
        runs = earlier[seed]["ninja_runs"]
        res["ninja_runs"] = runs
        best = next((r for r in runs if r.get("j") == earlier[seed]["best_j"] and "wall" in r), None)
        print(f"  ninja: taken from --ninja-results: best -j{best['j'] if best else '-'}", flush=True)
    for j in range(a.j, 0, -1):
        if earlier is not None:
            break
        floor = res["job_seconds"] / j
        if best and floor >= best["wall"]:
            res["ninja_runs"].append({"j": j, "skipped": f"sum(job time)/{j} = {floor:.2f}s >= best {best['wall']:.2f}s"})
            continue
        r = run_in_box(parent, f"hb-bench-ninja-j{j}", a.budget_mb, [a.ninja, f"-j{j}", "-k0"], fresh(f"ninja-j{j}"))
        r["j"] = j
        res["ninja_runs"].append(r)
        print(f"  ninja -j{j}: {fmt_run(r)}", flush=True)
        if r["oom_kills"] == 0 and r["rc"] == 0 and (best is None or r["wall"] < best["wall"]):
            best = r
    res["best_j"] = best["j"] if best else None
    res["best_wall"] = best["wall"] if best else None
    def headroom_pair(tag):
        """Cold then warm in one fresh directory. Cold means no history at all: neither the build dir's nor the
        per-user store's (#13), which would otherwise carry what earlier seeds and runs learned."""
        d = fresh("headroom")
        store = os.path.join(seed_dir, "store")
        shutil.rmtree(store, ignore_errors=True)
        env = dict(os.environ, HEADROOM_STORE=store)
        pair = {}
        for phase in ("cold", "warm"):
            if phase == "warm":
                for name in os.listdir(d):
                    if name.endswith(".out"):
                        os.unlink(os.path.join(d, name))
            r = run_in_box(parent, f"hb-bench-headroom-{phase}", a.budget_mb, [headroom, f"-j{a.j}"] + [f.replace("{phase}", phase) for f in headroom_flags],
                           d, log_path=os.path.join(seed_dir, f"headroom-{phase}{tag}.log"), env=env)
            pair[phase] = r
            print(f"  headroom -j{a.j} {phase}{tag}: {fmt_run(r)}", flush=True)
            for domain, victim in r["kernel_log_kills"] or []:
                print(f"    kernel OOM kill: OOM domain {domain}, victim in {victim}", flush=True)
        return pair

    res["headroom"] = headroom_pair("")
    # --rematch N: N more rounds of ninja at the best fixed -j, then headroom cold and warm, interleaved, so both
    # tools see the same moments of a shared machine's load; the table then reports the medians of all rounds, and
    # any round in which the "best" -j was killed counts against it (it was not safe after all).
    if a.rematch and best:
        # A sweep from --ninja-results ran at another time: only this invocation's rounds count then.
        rounds = {"ninja": [] if earlier is not None else [best], "cold": [res["headroom"]["cold"]],
                  "warm": [res["headroom"]["warm"]]}
        for k in range(1, a.rematch + 1):
            r = run_in_box(parent, f"hb-bench-ninja-j{best['j']}", a.budget_mb, [a.ninja, f"-j{best['j']}", "-k0"],
                           fresh(f"ninja-j{best['j']}"))
            r["j"] = best["j"]
            print(f"  ninja -j{best['j']} round {k}: {fmt_run(r)}", flush=True)
            rounds["ninja"].append(r)
            pair = headroom_pair(f"-round{k}")
            rounds["cold"].append(pair["cold"])
            rounds["warm"].append(pair["warm"])
        res["rounds"] = rounds
        # A killed round built less, so its wall is not comparable: the median is over clean rounds only (the
        # sweep's wall when none was clean), and the table says how many rounds the "best" -j was killed in.
        clean = [r["wall"] for r in rounds["ninja"] if not (r["oom_kills"] or r["rc"])]
        res["best_wall"] = statistics.median(clean) if clean else best["wall"]
        res["best_unsafe_rounds"] = sum(1 for r in rounds["ninja"] if r["oom_kills"] or r["rc"])
        for phase in ("cold", "warm"):
            runs = rounds[phase]
            res["headroom"][phase] = dict(runs[0], wall=statistics.median(r["wall"] for r in runs),
                                          oom_kills=sum(r["oom_kills"] for r in runs),
                                          rc=max((r["rc"] for r in runs), key=abs))
    add_lower_bounds(res, jobs, a.j, a.budget_mb)
    for key, name in (("lower_bound", "nominal job times"), ("lower_bound_measured", "measured job times")):
        print("  lower bound, %s: %.2fs (%s)" % (name, res[key],
                                                ", ".join(f"{k} {v:.2f}" for k, v in res[key + "_parts"].items())))
    for phase, r in res["headroom"].items():
        if r["rc"] != 0:
            print(f"  --- failing headroom {phase} run, tail ---\n" + r["tail"][-600:])
    return res


def print_clairvoyant_reach(results, a, missed):
    """For each seed missing the warm target: could any schedule we know of reach it? memory_ideal.py's
    clairvoyant list schedule (exact curves and times, CPUs ignored) is the best we know; where best fixed -j /
    clairvoyant < 1.5, even it misses (the lower bound itself would prove it only below 1.5 too)."""
    import memory_ideal  # imports this module: only here, so neither needs the other at load time
    for res in results:
        if res["seed"] not in missed or not res["best_wall"]:
            continue
        _, ideal = memory_ideal.clairvoyant(res["seed"], a.budget_mb)
        reach = res["best_wall"] / ideal
        print(f"  seed {res['seed']}: best fixed -j / clairvoyant schedule ({ideal:.2f}s) = {reach:.2f}x: "
              + ("even it misses 1.5x" if reach < 1.5 else f"1.5x needs warm <= {res['best_wall'] / 1.5:.2f}s "
                 f"({res['best_wall'] / 1.5 / ideal:.2f}x the clairvoyant schedule)"))


def summarize(results, a):
    rows = []
    print(f"\nSummary: box {a.budget_mb} MiB, headroom -j{a.j}, ninja best fixed -j in 1..{a.j}, {os.cpu_count()} cores")
    head = ("seed", "jobs", "best -j", "best s", "cold s", "warm s", "LB s", "LBm s", "cold/best", "best/warm",
            "warm/LB", "warm/LBm", "kills c/w")
    print("| " + " | ".join(head) + " |\n|" + "---|" * len(head))
    for res in results:
        c, w = res["headroom"]["cold"], res["headroom"]["warm"]
        best = res["best_wall"]
        row = {"seed": res["seed"], "cold": c["wall"], "warm": w["wall"], "lb": res["lower_bound"], "best": best,
               "cold_best": c["wall"] / best if best else None, "best_warm": best / w["wall"] if best else None,
               "lbm": res["lower_bound_measured"], "warm_lb": w["wall"] / res["lower_bound"],
               "warm_lbm": w["wall"] / res["lower_bound_measured"], "kills": c["oom_kills"] + w["oom_kills"],
               "rc_ok": c["rc"] == 0 and w["rc"] == 0}
        rows.append(row)
        ratio = lambda v: f"{v:.2f}" if v is not None else "-"  # noqa: E731
        unsafe = f" ({res['best_unsafe_rounds']} killed)" if res.get("best_unsafe_rounds") else ""
        print(f"| {res['seed']} | {res['jobs']} | {res['best_j'] or '-'}{unsafe} | {ratio(best)} | {c['wall']:.2f}"
              f"{'' if c['rc'] == 0 else ' (rc %d)' % c['rc']} | {w['wall']:.2f}{'' if w['rc'] == 0 else ' (rc %d)' % w['rc']}"
              f" | {res['lower_bound']:.2f} | {row['lbm']:.2f} | {ratio(row['cold_best'])} | {ratio(row['best_warm'])}"
              f" | {row['warm_lb']:.2f} | {row['warm_lbm']:.2f} | {c['oom_kills']}/{w['oom_kills']} |")
    med = lambda key: statistics.median([r[key] for r in rows if r[key] is not None])  # noqa: E731
    print(f"| median | | | {med('best'):.2f} | {med('cold'):.2f} | {med('warm'):.2f} | {med('lb'):.2f} | "
          f"{med('lbm'):.2f} | {med('cold_best'):.2f} | {med('best_warm'):.2f} | {med('warm_lb'):.2f} | "
          f"{med('warm_lbm'):.2f} | |")
    targets = [
        ("0 kernel OOM kills in every cold and warm build", [r["seed"] for r in rows if r["kills"] or not r["rc_ok"]]),
        ("cold wall <= best fixed -j wall", [r["seed"] for r in rows if r["cold_best"] is None or r["cold_best"] > 1.0]),
        ("warm >= 1.5x faster than best fixed -j", [r["seed"] for r in rows if r["best_warm"] is None or r["best_warm"] < 1.5]),
    ]
    for name, missed in targets:
        print(f"target: {name}: " + ("met on every seed" if not missed else f"MISSED on seeds {missed}"))
    print_clairvoyant_reach(results, a, targets[2][1])
    for key, name in (("warm_lb", "nominal"), ("warm_lbm", "measured job times")):
        print(f"target: median warm <= 1.4x lower bound ({name}): {med(key):.2f}x "
              + ("met" if med(key) <= 1.4 else "MISSED"))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--headroom", required=True)
    ap.add_argument("--ninja", default=None)
    ap.add_argument("--memhog", default=None, help="default: tests/memhog beside --headroom")
    ap.add_argument("--out", default="/dev/shm/hb-mem")
    ap.add_argument("--budget-mb", type=int, default=1536)
    ap.add_argument("--seeds", default="1-10", help="e.g. 1-10 or 3,7")
    ap.add_argument("-j", type=int, default=8)
    ap.add_argument("--order", type=int, default=0, help="shuffle each graph's manifest order with this seed "
                    "(0: the generator's order); the jobs, and so the lower bound, stay the same")
    ap.add_argument("--headroom-flags", default=os.environ.get("HEADROOM_FLAGS", ""))
    ap.add_argument("--rematch", type=int, default=0, help="rounds of ninja at its best -j and headroom, interleaved")
    ap.add_argument("--ninja-results", help="results.json of an earlier invocation: reuse its ninja sweep (quick "
                    "headroom-only experiments; the ratios then span two invocations)")
    ap.add_argument("--summarize", metavar="RESULTS_JSON", help="only print the summary of an earlier invocation, "
                    "its lower bounds recomputed with this script")
    a = ap.parse_args()
    if a.summarize:
        with open(a.summarize) as f:
            saved = json.load(f)
        a.budget_mb, a.j = saved["budget_mb"], saved["j"]
        for res in saved["seeds"]:
            if "rounds" in res:
                clean = [r["wall"] for r in res["rounds"]["ninja"] if not (r["oom_kills"] or r["rc"])]
                sweep = [r["wall"] for r in res["ninja_runs"] if r.get("j") == res["best_j"] and "wall" in r]
                res["best_wall"] = statistics.median(clean) if clean else min(sweep)
                res["best_unsafe_rounds"] = sum(1 for r in res["rounds"]["ninja"] if r["oom_kills"] or r["rc"])
            add_lower_bounds(res, workload(res["seed"], a.budget_mb), a.j, a.budget_mb)
        summarize(saved["seeds"], a)
        return
    if os.geteuid() != 0:
        sys.exit("memory_bench.py needs root (it creates a memory cgroup)")
    if a.ninja is None:
        import ninja
        a.ninja = os.path.join(ninja.BIN_DIR, "ninja")
    headroom = os.path.abspath(a.headroom)
    memhog = os.path.abspath(a.memhog or os.path.join(os.path.dirname(headroom), "tests", "memhog"))
    parent = own_memcg()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.monotonic()
    earlier = None
    if a.ninja_results:
        with open(a.ninja_results) as f:
            saved = json.load(f)
        if saved.get("order", 0) != a.order:
            sys.exit(f"--ninja-results ran the graphs in order {saved.get('order', 0)}, not --order {a.order}")
        earlier = {r["seed"]: r for r in saved["seeds"]}
    results = [bench_seed(a, s, parent, headroom, memhog, shlex.split(a.headroom_flags), earlier)
               for s in parse_seeds(a.seeds)]
    rows = summarize(results, a)
    print(f"total bench time {time.monotonic() - t0:.0f}s")
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump({"budget_mb": a.budget_mb, "j": a.j, "cores": os.cpu_count(), "order": a.order, "seeds": results,
                   "rows": rows},
                  f, indent=1)


if __name__ == "__main__":
    main()
