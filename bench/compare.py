# bench/compare.py: one-command headroom-vs-ninja comparison (manifest load, no-op, trivial-job throughput,
# peak RSS) on the same generated trees, fresh directories per tool, interleaved runs; prints ratios.
"""Usage: python3 bench/compare.py --headroom build-bench/headroom --out /dev/shm/hb

Each figure is headroom / ninja from runs in the same invocation, interleaved (the order of the tools
alternates every repetition). CPU = user+sys of the tool process and its jobs
(getrusage of the reaped children), peak RSS from GNU time, wall = monotonic clock.
Medians and minimums over --reps repetitions are printed; a JSON summary goes to OUT/results.json.
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def ninja_default():
    try:
        import ninja  # the pip package that ships ninja 1.13.2
        return os.path.join(ninja.BIN_DIR, "ninja")
    except ImportError:
        return shutil.which("ninja")


HEADROOM_ENV = {}


def distcc_host_list(env):
    """The distcc host list a headroom run would read (DISTCC_HOSTS, then $DISTCC_DIR or ~/.distcc, then
    /etc/distcc), or None. A list naming a host makes headroom wrap its memory controller in the scale-out
    layer (docs/scale-out.md), which changes its footprint: say so next to the figures."""
    if "DISTCC_HOSTS" in env:
        return ("DISTCC_HOSTS", env["DISTCC_HOSTS"])
    home = env.get("DISTCC_DIR") or (os.path.join(env["HOME"], ".distcc") if env.get("HOME") else "")
    for path in ([os.path.join(home, "hosts")] if home else []) + ["/etc/distcc/hosts"]:
        try:
            with open(path) as f:
                words = [w for line in f for w in line.split("#", 1)[0].split()]
            return (path, " ".join(words))
        except OSError:
            continue
    return None


def run(argv, cwd, env=None):
    """Runs argv under /usr/bin/time; returns dict(wall, cpu, rss_kb, rc, out).

    Peak RSS comes from /usr/bin/time (GNU time reports its own child's wait4 rusage): a process forked
    straight from Python would inherit Python's RSS high-water mark into ru_maxrss.
    """
    tf = os.path.join(cwd, ".bench_time")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    if HEADROOM_ENV and os.path.basename(argv[0]) != "ninja":
        env = dict(env or os.environ, **HEADROOM_ENV)
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", tf] + argv, cwd=cwd,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    wall = time.monotonic() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(tf) as f:
        rss_kb = int(f.read().split()[-1])
    os.unlink(tf)
    # CPU from the kernel's rusage of the reaped tree (microseconds, not time(1)'s 10 ms ticks); it
    # includes time(1) itself, about 0.7 ms, the same for both tools.
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": wall, "cpu": cpu, "rss_kb": rss_kb, "rc": p.returncode,
            "out": p.stdout.decode(errors="replace")[-2000:]}


def check(r, what):
    if r["rc"] != 0:
        sys.exit(f"{what} failed (rc {r['rc']}):\n{r['out']}")
    return r


def fresh_chromium(base, gen_build_dir, name):
    """A fresh out/Default copy (manifests only) that shares the generated sources through a symlink."""
    root = os.path.join(base, name)
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    os.symlink(os.path.join(os.path.dirname(os.path.dirname(gen_build_dir)), "src"), os.path.join(root, "src"))
    dst = os.path.join(root, "out", "Default")
    shutil.copytree(gen_build_dir, dst)
    return dst


def fresh_fake(base, gen_dir, name):
    """A fresh copy of the --kind fake manifests (the build dir is the tree's root) sharing src/ by a symlink."""
    root = os.path.join(base, name)
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(gen_dir, root, ignore=lambda d, names: ["src"] if d == gen_dir else [])
    os.symlink(os.path.join(gen_dir, "src"), os.path.join(root, "src"))
    return root


def fresh_trivial(base, gen_dir, name):
    root = os.path.join(base, name)
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(gen_dir, root)
    return root


def seed_history(build_dir):
    """Writes BUILD_DIR/.headroom_history (format: docs/scheduling.md) with one completed cgroup-measured
    record per output in BUILD_DIR/.ninja_log, in 64 classes, as a memory-controlled build would leave it."""
    with open(os.path.join(build_dir, ".ninja_log")) as f:
        outputs = [line.split("\t")[3] for line in f.read().splitlines()[1:] if line.count("\t") >= 4]
    classes = 64
    lines = ["# headroom history v2"]
    lines += [f"C\t{c}\tCXX_bench{c} stub_cc -O2 -c .cc" for c in range(classes)]
    for i, out in enumerate(outputs):
        lines.append(f"E\t{i % classes}\t{(0x9e3779b97f4a7c15 * (i + 1)) % 2**64:016x}\t{(40 + i % 500) << 20}\t"
                     f"{50 + i % 3000}\tc\tc\t-\t{out}")
    with open(os.path.join(build_dir, ".headroom_history"), "w") as f:
        f.write("\n".join(lines) + "\n")


def summarize(samples, key):
    vals = [s[key] for s in samples]
    return {"median": statistics.median(vals), "min": min(vals), "n": len(vals)}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--headroom", required=True)
    ap.add_argument("--ninja", default=ninja_default())
    ap.add_argument("--stub-cc", default=None, help="default: stub_cc next to --headroom's bench/ dir")
    ap.add_argument("--out", default="/dev/shm/hb")
    ap.add_argument("--manifest", choices=["chromium", "fake"], default="chromium",
                    help="load/no-op tree: gen_manifest.py --kind chromium (GN-style, --targets 500: 21.5k edges) or "
                         "--kind fake (write_fake_manifests.py's shape, --targets 1500: ~88k edges)")
    ap.add_argument("--targets", type=int, default=None, help="default: 500 (chromium), 1500 (fake)")
    ap.add_argument("--mean-sources", type=float, default=40)
    ap.add_argument("--trivial-jobs", type=int, default=10000)
    ap.add_argument("--trivial-j", type=int, default=64)
    ap.add_argument("--build-j", type=int, default=16)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--trivial-reps", type=int, default=3)
    ap.add_argument("--full-reps", type=int, default=1,
                    help="no-op setup: full builds per tool, interleaved, each on a fresh tree (the last is kept "
                         "for the no-op); their CPU and RSS are the full_build metric")
    ap.add_argument("--setup-no-memory", action="store_true",
                    help="run headroom's full build before the no-op with --no-memory (faster on small machines)")
    ap.add_argument("--seed-history", action="store_true",
                    help="before the no-op, give headroom a .headroom_history with one record per .ninja_log output "
                         "(what a build with memory control on leaves; with --setup-no-memory there is none)")
    ap.add_argument("--skip", default="", help="comma list of: load,noop,trivial")
    ap.add_argument("--reuse-noop-trees", action="store_true",
                    help="no-op: reuse OUT/noop-ninja and OUT/noop-headroom built by an earlier run (no full builds)")
    ap.add_argument("--headroom-env", default="", help="NAME=VALUE[,NAME=VALUE] for every headroom run, "
                    "e.g. HEADROOM_STORE=off")
    a = ap.parse_args()
    headroom = os.path.abspath(a.headroom)
    HEADROOM_ENV.update(kv.split("=", 1) for kv in filter(None, a.headroom_env.split(",")))
    stub = a.stub_cc or os.path.join(os.path.dirname(headroom), "bench", "stub_cc")
    stub = os.path.abspath(stub)
    skip = set(filter(None, a.skip.split(",")))
    os.makedirs(a.out, exist_ok=True)
    if a.targets is None:
        a.targets = 1500 if a.manifest == "fake" else 500
    gen = os.path.join(a.out, "gen" if a.manifest == "chromium" else "fake-gen")
    gen_build = os.path.join(gen, "out", "Default") if a.manifest == "chromium" else gen
    stamp = os.path.join(a.out, f"{a.manifest}-params-{a.targets}-{a.mean_sources}-{stub.replace('/', '_')}")
    if not os.path.exists(stamp):
        shutil.rmtree(gen, ignore_errors=True)
        subprocess.check_call([sys.executable, os.path.join(HERE, "gen_manifest.py"), "--out", gen, "--kind",
                               a.manifest, "--targets", str(a.targets), "--mean-sources", str(a.mean_sources),
                               "--cc", stub])
        open(stamp, "w").close()

    def fresh_tree(name):
        return fresh_chromium(a.out, gen_build, name) if a.manifest == "chromium" else fresh_fake(a.out, gen, name)
    tools = {"ninja": [a.ninja], "headroom": [headroom]}
    results = {"ninja_version": subprocess.run([a.ninja, "--version"], capture_output=True, text=True).stdout.strip(),
               "cores": os.cpu_count(), "loadavg_start": os.getloadavg(),
               "distcc_hosts": distcc_host_list({**os.environ, **HEADROOM_ENV})}
    samples = {}

    def add(metric, tool, r):
        samples.setdefault(metric, {}).setdefault(tool, []).append(r)

    order = list(tools)
    if "load" not in skip:
        # Manifest load + full dry-run plan on a fresh directory (no logs), and `-t targets all`.
        for rep in range(a.reps):
            for tool in (order if rep % 2 == 0 else order[::-1]):
                d = fresh_tree(f"load-{tool}")
                add("load_dryrun", tool, check(run(tools[tool] + ["-n", "--quiet"], d), f"{tool} -n"))
                add("load_targets", tool, check(run(tools[tool] + ["-t", "targets", "all"], d), f"{tool} -t targets"))
    if "noop" not in skip:
        dirs = {}
        for rep in range(1 if a.reuse_noop_trees else a.full_reps):
            for tool in (order if rep % 2 == 0 else order[::-1]):
                if a.reuse_noop_trees:
                    dirs[tool] = os.path.join(a.out, f"noop-{tool}")
                    if not os.path.exists(os.path.join(dirs[tool], ".ninja_log")):
                        sys.exit(f"--reuse-noop-trees: {dirs[tool]} holds no build")
                    continue
                d = fresh_tree(f"noop-{tool}")
                extra = ["--no-memory"] if (tool == "headroom" and a.setup_no_memory) else []
                r = check(run(tools[tool] + extra + [f"-j{a.build_j}", "--quiet"], d), f"{tool} full build")
                add("full_build", tool, r)
                dirs[tool] = d
        if a.seed_history and not a.reuse_noop_trees:
            seed_history(dirs["headroom"])
        # headroom twice: by default (memory control: reads .headroom_history, probes memory) and --no-memory.
        noop_variants = {"ninja": (tools["ninja"], dirs["ninja"]), "headroom": (tools["headroom"], dirs["headroom"]),
                         "headroom_no_memory": (tools["headroom"] + ["--no-memory"], dirs["headroom"])}
        norder = list(noop_variants)
        for rep in range(a.reps):
            for v in (norder if rep % 2 == 0 else norder[::-1]):
                argv, d = noop_variants[v]
                r = check(run(argv + [f"-j{a.build_j}"], d), f"{v} no-op")
                if "no work to do" not in r["out"]:
                    sys.exit(f"{v} no-op build did work:\n{r['out']}")
                add("noop", v, r)
    if "trivial" not in skip:
        tgen = os.path.join(a.out, "trivial-gen")
        shutil.rmtree(tgen, ignore_errors=True)
        subprocess.check_call([sys.executable, os.path.join(HERE, "gen_manifest.py"), "--out", tgen, "--kind",
                               "trivial", "--jobs", str(a.trivial_jobs), "--cc", stub], stdout=subprocess.DEVNULL)
        variants = {"ninja": [a.ninja], "headroom": [headroom], "headroom_no_memory": [headroom, "--no-memory"]}
        vorder = list(variants)
        for rep in range(a.trivial_reps):
            for v in (vorder if rep % 2 == 0 else vorder[::-1]):
                d = fresh_trivial(a.out, tgen, f"trivial-{v}")
                add("trivial", v, check(run(variants[v] + [f"-j{a.trivial_j}", "--quiet"], d), f"{v} trivial"))
                shutil.rmtree(d, ignore_errors=True)

    results["loadavg_end"] = os.getloadavg()
    results["metrics"] = {}
    for metric, by_tool in samples.items():
        results["metrics"][metric] = {t: {k: summarize(s, k) for k in ("wall", "cpu", "rss_kb")}
                                      for t, s in by_tool.items()}
    with open(os.path.join(a.out, "results.json"), "w") as f:
        json.dump(results, f, indent=1)

    print(f"ninja {results['ninja_version']}, {results['cores']} cores, loadavg {results['loadavg_start']}")
    if results["distcc_hosts"]:
        where, hosts = results["distcc_hosts"]
        print(f"distcc host list for headroom ({where}): {hosts!r} (a host there installs the remote pool)")
    print(f"{'metric':<14}{'variant':<20}{'wall med':>10}{'wall min':>10}{'cpu med':>10}{'cpu min':>10}"
          f"{'rss MiB':>9}  ratios vs ninja (wall med / cpu med / cpu min / rss)")
    for metric, by_tool in results["metrics"].items():
        base = by_tool.get("ninja")
        for t, m in by_tool.items():
            line = (f"{metric:<14}{t:<20}{m['wall']['median']:>10.3f}{m['wall']['min']:>10.3f}"
                    f"{m['cpu']['median']:>10.3f}{m['cpu']['min']:>10.3f}{m['rss_kb']['median'] / 1024:>9.1f}")
            if base and t != "ninja":
                def ratio(k, s):
                    return m[k][s] / base[k][s] if base[k][s] else float("nan")
                line += (f"  {ratio('wall', 'median'):.2f}x / {ratio('cpu', 'median'):.2f}x / "
                         f"{ratio('cpu', 'min'):.2f}x / {ratio('rss_kb', 'median'):.2f}x")
            print(line)
    print(f"loadavg at end {results['loadavg_end']}")


if __name__ == "__main__":
    main()
