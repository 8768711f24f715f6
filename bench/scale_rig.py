#!/usr/bin/env python3
"""Scale rig (issue 30 item 3): the real headroom binary on an emulated 64-core machine, beside ninja 1.13.2 and
the simulator's predictions of the same runs. Needs root (a cgroup memory box).

The machine: HEADROOM_TEST_CPUS=<cores> tells headroom it has that many CPUs (a test-only override, see
include/headroom/util/test_cpus.h); the jobs are low-duty fake compilers (tests/helpers/memhog: they touch their
memory over a ramp, hold it, and otherwise sleep), so this 2-core machine can run 64 of them at once. The memory is
a real cgroup box of <machine GiB> / --mem-scale; walls are the measured ones divided by --time-scale.

The workload: flash-attn 2.8.3's 72 sm80 kernels as the simulator's flash-attn-like workload has them
(SimulatorScaleTest; docs/benchmarks.md, "Scale effect"): the five measured kernels of docs/priors.md in turn (tree
peak and wall of fwd hdim64/128/256 and bwd hdim64/128), each ramping over 70 % of its wall and holding its peak for
the rest, then a link needing them all (2 GiB, 30 s, assumed as in the simulator). With --mem-scale 24 the generic
prior of an unknown tool (256 MiB) stands for the 6 GiB CUTLASS prior a real kernel gets, so a cold build guesses
about as wrong here as on the real machine.

Runs, one after another in this order, each in a fresh box:
  headroom cold (empty store), headroom warm (the same store and log, outputs removed), both at -j<cores>;
  ninja 1.13.2 at -j<cores>, at flash-attn's MAX_JOBS formula (max(1, min(cores/2, GiB / (5 x NVCC_THREADS=4))) on
  the emulated machine's memory) and at each --fixed-j candidate ("best fixed -j": the fastest one with no OOM kill).
Beside each: `headroom -t plan` (the simulator on the binary's own history: before the cold build for the cold
run, after it for the warm one; -t plan simulates headroom, not ninja) and the docs' SimulatorScaleTest figure of
the same run (64 cores / 256 GiB, guarded: a root build runs under the build guard), divided by --time-scale.

  sudo python3 bench/scale_rig.py --headroom build/headroom [--cores 64] [--mem-scale 24] [--time-scale 40]
       [--fixed-j auto|40,43] [--out /dev/shm/scale-rig] [--json results.json]"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
import memory_box  # noqa: E402
from compare import ninja_default  # noqa: E402
from plan_accuracy import RssPoller, kernel_peak  # noqa: E402

MiB = 1 << 20
GiB = 1 << 30
# docs/priors.md: tree peak (GiB) and wall (s, measured on one afternoon, session 9) of the measured kernels.
KERNELS = [("fwd_hdim64", 3.80, 283), ("fwd_hdim128", 4.33, 305), ("fwd_hdim256", 4.51, 506),
           ("bwd_hdim64", 6.20, 571), ("bwd_hdim128", 6.29, 854)]
LINK = ("flash_attn_2_cuda.so", 2.0, 30)
RAMP_SHARE = 0.7
# docs/benchmarks.md, "Scale effect" (Session 10 final table), flash-attn-like, 64 cores / 256 GiB: simulated walls
# relative to the best fixed -j (-j43: 1390 s). Guarded columns: this rig runs as root, so headroom runs guarded.
SIM_BEST_J, SIM_BEST_S = 43, 1390.0
SIM_RATIO = {"headroom cold": 1.00, "headroom warm": 0.64, "ninja -j<cores>": 0.84, "ninja formula": 2.48}
SIM_NOTE = {"ninja -j<cores>": "26 OOM kills"}


def scaled_jobs(a):
    jobs = []
    for i in range(a.kernels):
        name, gib, wall = KERNELS[i % len(KERNELS)]
        jobs.append((f"k{i:03d}_{name}.o", gib, wall))
    return jobs


def manifest(a, memhog):
    lines = ["# scale rig: flash-attn-shaped fake compiles (bench/scale_rig.py)", "rule kernel",
             f"  command = {memhog} --mb $mb --ramp-ms $ramp --hold-ms $hold --peak-file $out",
             "  description = KERNEL $out", "rule link",
             f"  command = {memhog} --mb $mb --ramp-ms $ramp --hold-ms $hold --peak-file $out",
             "  description = LINK $out"]

    def variables(gib, wall):
        mb = max(1, round(gib * 1024 / a.mem_scale))
        ms = wall * 1000.0 / a.time_scale
        return [f"  mb = {mb}", f"  ramp = {round(ms * RAMP_SHARE)}", f"  hold = {round(ms * (1 - RAMP_SHARE))}"]

    jobs = scaled_jobs(a)
    for out, gib, wall in jobs:
        lines.append(f"build {out}: kernel")
        lines += variables(gib, wall)
    lines.append(f"build {LINK[0]}: link " + " ".join(out for out, _, _ in jobs))
    lines += variables(LINK[1], LINK[2])
    lines.append(f"default {LINK[0]}")
    return "\n".join(lines) + "\n", [out for out, _, _ in jobs] + [LINK[0]]


def formula_jobs(cores, machine_gib):
    # flash-attn setup.py: max_num_jobs_memory = free GiB / (5 * NVCC_THREADS) with NVCC_THREADS=4; cores / 2.
    return max(1, min(cores // 2, int(machine_gib / (5 * 4))))


def environment(a, store):
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env["HEADROOM_TEST_CPUS"] = str(a.cores)
    env["HEADROOM_STORE"] = str(store)
    env["HEADROOM_LEDGER_DIR"] = str(Path(a.out) / "ledger")  # no other build on the machine shares its budget
    return env


def build_in_box(argv, cwd, env, box_bytes, timeout):
    box = memory_box.MemoryBox(box_bytes)
    try:
        with RssPoller(box) as poller:
            t0 = time.monotonic()
            r = box.run(argv, cwd, env=env, timeout=timeout)
            wall = time.monotonic() - t0
        return {"wall_s": wall, "rc": r.returncode, "kernel_peak": kernel_peak(box), "rss_peak": poller.peak,
                "oom_kills": box.oom_kills(), "load": os.getloadavg()[0], "tail": (r.stdout + r.stderr)[-600:]}
    finally:
        box.remove()


def plan(a, j, box_bytes, cwd, env):
    r = subprocess.run([a.headroom, "-t", "plan", f"-j{j}", f"--mem-budget={box_bytes // MiB}M", "--json"], cwd=cwd,
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        return {"error": r.stderr[-600:]}
    p = json.loads(r.stdout)
    req = p["requested"]
    return {"wall_s": req["wall_ms"] / 1000.0, "peak": req["peak_bytes"], "oom_kills": req["oom_kills"],
            "completed": req["completed"], "figures": p["figures"]}


def fresh_dir(a, name, text):
    d = Path(a.out) / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    (d / "build.ninja").write_text(text)
    return d


def run_all(a):
    memhog = os.path.abspath(a.memhog or os.path.join(os.path.dirname(a.headroom), "tests", "memhog"))
    text, outputs = manifest(a, memhog)
    box_bytes = int(a.machine_gib * GiB / a.mem_scale)
    heaviest = max(round(g * 1024 / a.mem_scale) for _, g, _ in KERNELS) * MiB
    safe_j = box_bytes // heaviest
    fixed = sorted({safe_j, SIM_BEST_J}) if a.fixed_j == "auto" else [int(x) for x in a.fixed_j.split(",")]
    formula = formula_jobs(a.cores, a.machine_gib)
    rows = []
    timeout = a.timeout

    store = Path(a.out) / "store"
    shutil.rmtree(store, ignore_errors=True)
    d = fresh_dir(a, "headroom", text)
    env = environment(a, store)
    cold_plan = plan(a, a.cores, box_bytes, d, env)
    cold = build_in_box([a.headroom, f"-j{a.cores}"], d, env, box_bytes, timeout)
    rows.append({"run": "headroom cold", "j": a.cores, "measured": cold, "plan": cold_plan})
    print(line(rows[-1]), flush=True)
    warm_plan = plan(a, a.cores, box_bytes, d, env)
    for out in outputs:
        (d / out).unlink(missing_ok=True)
    warm = build_in_box([a.headroom, f"-j{a.cores}"], d, env, box_bytes, timeout)
    rows.append({"run": "headroom warm", "j": a.cores, "measured": warm, "plan": warm_plan})
    print(line(rows[-1]), flush=True)

    for name, j in [("ninja -j<cores>", a.cores), ("ninja formula", formula)] + [("ninja fixed", j) for j in fixed]:
        d = fresh_dir(a, f"ninja-j{j}", text)
        m = build_in_box([a.ninja, f"-j{j}"], d, env, box_bytes, timeout)
        rows.append({"run": name, "j": j, "measured": m, "plan": None})
        print(line(rows[-1]), flush=True)

    clean = [r for r in rows if r["run"] == "ninja fixed" and r["measured"]["rc"] == 0 and not r["measured"]["oom_kills"]]
    best = min(clean, key=lambda r: r["measured"]["wall_s"]) if clean else None
    if best:
        best["run"] = "ninja best fixed -j"
    return {"rows": rows, "best_fixed": best and best["j"], "box_bytes": box_bytes, "safe_j": safe_j,
            "formula_j": formula, "args": vars(a)}


def line(row):
    m, p = row["measured"], row["plan"]
    text = (f"{row['run']:<18} -j{row['j']:<3} wall {m['wall_s']:6.1f}s rc={m['rc']} oom={m['oom_kills']} "
            f"peak {(m['kernel_peak'] or 0) / MiB:6.0f} MiB load {m['load']:.1f}")
    if p and "error" not in p:
        text += f" | plan {p['wall_s']:6.1f}s peak {p['peak'] / MiB:6.0f} MiB"
    elif p:
        text += " | plan failed: " + p["error"].strip().splitlines()[-1]
    return text


def markdown(result, a):
    rows = result["rows"]
    best = next((r for r in rows if r["run"] == "ninja best fixed -j"), None)
    base = best["measured"]["wall_s"] if best else None
    sim_base = SIM_BEST_S / a.time_scale
    out = [f"| run | -j | measured wall | × best fixed | measured peak | OOM kills | simulated: `-t plan` wall (err) | "
           f"`-t plan` peak (err) | simulated: SimulatorScaleTest wall (× best) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        m, p = r["measured"], r["plan"]
        ratio = f"{m['wall_s'] / base:.2f}×" if base else "—"
        status = "" if m["rc"] == 0 else " (failed)"
        if p and "error" not in p:
            pw = f"{p['wall_s']:.1f} s ({(p['wall_s'] - m['wall_s']) / m['wall_s']:+.0%})"
            pk = (f"{p['peak'] / MiB:.0f} MiB ({(p['peak'] - (m['kernel_peak'] or 1)) / (m['kernel_peak'] or 1):+.0%})"
                  if m["kernel_peak"] else f"{p['peak'] / MiB:.0f} MiB")
        else:
            pw = pk = "—"
        key = r["run"] if r["run"] in SIM_RATIO else None
        if r["run"] == "ninja best fixed -j":
            sim = f"{sim_base:.1f} s (-j{SIM_BEST_J}, 1.00×)"
        elif key:
            sim = f"{sim_base * SIM_RATIO[key]:.1f} s ({SIM_RATIO[key]:.2f}×{', ' + SIM_NOTE[key] if key in SIM_NOTE else ''})"
        else:
            sim = "—"
        out.append(f"| {r['run']} | {r['j']} | {m['wall_s']:.1f} s{status} | {ratio} | {(m['kernel_peak'] or 0) / MiB:.0f} MiB | "
                   f"{m['oom_kills']} | {pw} | {pk} | {sim} |")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--headroom", required=True)
    p.add_argument("--ninja", default=None, help="default: the pip package ninja (1.13.2), else ninja on PATH")
    p.add_argument("--memhog", default=None, help="default: tests/memhog beside --headroom")
    p.add_argument("--cores", type=int, default=64)
    p.add_argument("--machine-gib", type=float, default=256)
    p.add_argument("--mem-scale", type=float, default=24, help="box = machine / this (default 24: 10.7 GiB)")
    p.add_argument("--time-scale", type=float, default=40, help="job walls = measured / this")
    p.add_argument("--kernels", type=int, default=72)
    p.add_argument("--fixed-j", default="auto", help="ninja -j candidates for 'best fixed -j' (auto: the -j at which "
                   "any mix of kernels fits the box, and the simulator's best, -j43)")
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--out", default="/dev/shm/scale-rig")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    reason = memory_box.unavailable_reason()
    if reason:
        sys.exit("scale_rig.py: " + reason)
    a.headroom = os.path.abspath(a.headroom)
    if a.ninja is None:
        a.ninja = ninja_default()
    os.makedirs(a.out, exist_ok=True)
    t0 = time.monotonic()
    result = run_all(a)
    result["total_s"] = time.monotonic() - t0
    print()
    print(f"emulated {a.cores} cores / {a.machine_gib:g} GiB: box {result['box_bytes'] / GiB:.2f} GiB (memory / "
          f"{a.mem_scale:g}), walls / {a.time_scale:g}; formula -j{result['formula_j']}; any mix fits at -j"
          f"{result['safe_j']}; best fixed -j: {result['best_fixed']}; rig took {result['total_s']:.0f} s")
    print(markdown(result, a))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    sys.exit(main())
