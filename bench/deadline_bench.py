# bench/deadline_bench.py: --deadline on a 300-job build of fake compilers (issue 32): where the build stops
# against the deadline, what the resumed build runs, and the total work against one uninterrupted build; the same
# deadline as `timeout` around ninja 1.13.2 (work lost, state of its logs).
"""Usage: python3 bench/deadline_bench.py --headroom BUILD/headroom [--ninja NINJA] [--share 0.4] [-j 8]
                                     [--seed 1] [--json OUT.json]

The build: 10 libraries of 29 compiles each and one link per library (300 jobs). A compile sleeps 0.15-3 s (a
seeded log-normal spread, mean about 0.8 s) and writes a depfile (deps = gcc), a link 1.5-3 s; sleeping jobs keep
the figures steady on a shared machine. Each job appends its start and end (wall clock) to jobs.log, so the
work of a killed job (started, never ended) is counted up to the moment the run stopped.

1. headroom builds it uninterrupted in dir A: wall W, total work, and the history (kept in a private per-user
   store, as `-t history import` would bring it to a CI runner).
2. In a fresh dir B: `headroom --deadline=D` with D = share x W (whole seconds), then `headroom` again.
3. In a fresh dir C: `timeout D ninja`, then `ninja` again; both runs' logs are checked (.ninja_log lines,
   .ninja_deps records).
"""
import argparse
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "e2e"))
import harness  # noqa: E402  (.ninja_log / .ninja_deps parsers)

LIBS, COMPILES = 10, 29

JOB = """#!/bin/sh
# job.sh OUT SECONDS [INPUTS...]: a fake compiler or linker.
out=$1; secs=$2; shift 2
echo "start $out $(date +%s.%N)" >> jobs.log
sleep "$secs"
[ $# -gt 0 ] && cat "$@" > /dev/null
echo "$out: common.h" > "$out.d"
echo built > "$out"
echo "end $out $(date +%s.%N)" >> jobs.log
"""


def write_project(directory, seed):
    """Writes the project; returns each output's planned seconds (the same for every directory of one seed)."""
    rng = random.Random(seed)
    os.makedirs(directory)
    with open(os.path.join(directory, "job.sh"), "w") as f:
        f.write(JOB)
    os.chmod(os.path.join(directory, "job.sh"), 0o755)
    open(os.path.join(directory, "common.h"), "w").close()
    lines = ["rule cc", "  command = ./job.sh $out $secs", "  depfile = $out.d", "  deps = gcc",
             "rule link", "  command = ./job.sh $out $secs $in", "  depfile = $out.d", "  deps = gcc"]
    planned = {}
    libs = []
    for lib in range(LIBS):
        objects = []
        for i in range(COMPILES):
            secs = round(min(3.0, max(0.15, rng.lognormvariate(math.log(0.6), 0.7))), 2)  # as build.ninja has it
            obj = "obj/lib%d/f%02d.o" % (lib, i)
            planned[obj] = secs
            objects.append(obj)
            lines += ["build %s: cc" % obj, "  secs = %.2f" % secs]
        secs = round(rng.uniform(1.5, 3.0), 2)
        libs.append("lib%d.so" % lib)
        planned[libs[-1]] = secs
        lines += ["build lib%d.so: link %s" % (lib, " ".join(objects)), "  secs = %.2f" % secs]
    lines += ["build all: phony " + " ".join(libs), "default all"]
    with open(os.path.join(directory, "build.ninja"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return planned


def run(cmd, cwd, env):
    start = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    stopped_at = time.time()
    return proc, time.monotonic() - start, stopped_at


def work_of(directory, until, planned):
    """Seconds of job time in jobs.log: ended jobs in full, jobs started but never ended up to `until`.
    Returns (finished work, lost work, jobs ended, jobs lost, planned seconds of the ended jobs); the log is then
    emptied for the next run. Planned seconds leave out the per-job overhead (sh, date, sleep), which a loaded
    machine stretches."""
    path = os.path.join(directory, "jobs.log")
    starts, ends = {}, {}
    if os.path.exists(path):
        for line in open(path):
            kind, out, stamp = line.split()
            (starts if kind == "start" else ends)[out] = float(stamp)
        os.unlink(path)
    done = sum(ends[o] - starts[o] for o in ends)
    lost = sum(max(0.0, until - starts[o]) for o in starts if o not in ends)
    return done, lost, len(ends), len(starts) - len(ends), sum(planned[o] for o in ends)


def libraries_linked(directory):
    return sum(1 for lib in range(LIBS) if os.path.exists(os.path.join(directory, "lib%d.so" % lib)))


def logs_state(directory):
    build_log = harness.parse_build_log(open(os.path.join(directory, ".ninja_log"), "rb").read())
    deps_path = os.path.join(directory, ".ninja_deps")
    deps_log = harness.parse_deps_log(open(deps_path, "rb").read()) if os.path.exists(deps_path) else {"bad": ["missing"], "records": []}
    logged = {p for p, _, _ in build_log["entries"]}
    built = {p for p in logged if os.path.exists(os.path.join(directory, p))}
    return {"log_entries": len(logged), "log_bad_lines": len(build_log["bad"]),
            "deps_records": sum(1 for r in deps_log["records"] if r[0] == "deps"), "deps_bad": len(deps_log["bad"]),
            "logged_without_output": len(logged - built)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--headroom", required=True)
    parser.add_argument("--ninja", default=harness.reference_binary())
    parser.add_argument("--share", type=float, default=0.4)
    parser.add_argument("-j", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--json")
    args = parser.parse_args()
    headroom = os.path.abspath(args.headroom)
    root = tempfile.mkdtemp(prefix="deadline-bench-")
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env.update(TERM="dumb", LC_ALL="C", HEADROOM_STORE=os.path.join(root, "store"), HEADROOM_LEDGER_DIR="")
    jobs = "-j%d" % args.j
    out = {"jobs": LIBS * COMPILES + LIBS, "parallelism": args.j, "seed": args.seed}

    # 1. uninterrupted
    a = os.path.join(root, "a")
    planned = write_project(a, args.seed)
    out["planned_work_s"] = sum(planned.values())
    proc, wall, end = run([headroom, jobs], a, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    full_work, _, full_jobs, _, full_planned = work_of(a, end, planned)
    out["uninterrupted"] = {"wall_s": wall, "work_s": full_work, "jobs": full_jobs}
    deadline_s = max(1, round(args.share * wall))
    out["deadline_s"] = deadline_s
    out["deadline_share"] = deadline_s / wall

    # -t plan's view of the deadline, from the history of run 1
    b = os.path.join(root, "b")
    write_project(b, args.seed)
    # sleeping jobs use no CPU: --cores=-j keeps the planner from sharing out 2 CPUs among them
    plan = subprocess.run([headroom, "-t", "plan", jobs, "--cores=%d" % args.j, "--deadline=%ds" % deadline_s],
                          cwd=b, env=env,
                          capture_output=True, text=True)
    out["plan_deadline_line"] = next((l for l in plan.stdout.splitlines() if l.startswith("deadline")), plan.stdout + plan.stderr)

    # 2. headroom --deadline, then resume
    proc, wall1, end1 = run([headroom, jobs, "--deadline=%ds" % deadline_s], b, env)
    stop_line = next((l for l in proc.stdout.splitlines() if "build stopped" in l), "")
    done1, lost1, jobs1, killed1, planned1 = work_of(b, end1, planned)
    logs1, linked1 = logs_state(b), libraries_linked(b)
    proc2, wall2, end2 = run([headroom, jobs], b, env)
    assert proc2.returncode == 0, proc2.stdout + proc2.stderr
    done2, lost2, jobs2, _, planned2 = work_of(b, end2, planned)
    out["headroom"] = {"exit": proc.returncode, "stop_line": stop_line, "wall_s": wall1,
                       "stopped_past_deadline_s": wall1 - deadline_s, "jobs_done": jobs1, "jobs_killed": killed1,
                       "work_lost_s": lost1, "libraries_linked": linked1, "logs_after_stop": logs1,
                       "resume_wall_s": wall2, "resume_jobs": jobs2,
                       "total_work_ratio": (done1 + lost1 + done2 + lost2) / full_work,
                       "total_planned_work_ratio": (planned1 + lost1 + planned2 + lost2) / full_planned,
                       "total_wall_ratio": (wall1 + wall2) / wall}

    # 3. timeout around ninja 1.13.2, then ninja again
    c = os.path.join(root, "c")
    write_project(c, args.seed)
    proc, wall1, end1 = run(["timeout", str(deadline_s), args.ninja, jobs], c, env)
    done1, lost1, jobs1, killed1, planned1 = work_of(c, end1, planned)
    logs1, linked1 = logs_state(c), libraries_linked(c)
    proc2, wall2, end2 = run([args.ninja, jobs], c, env)
    done2, lost2, jobs2, _, planned2 = work_of(c, end2, planned)
    out["ninja_timeout"] = {"exit": proc.returncode, "wall_s": wall1, "stopped_past_deadline_s": wall1 - deadline_s,
                            "jobs_done": jobs1, "jobs_killed": killed1, "work_lost_s": lost1,
                            "libraries_linked": linked1, "logs_after_stop": logs1,
                            "resume_exit": proc2.returncode, "resume_wall_s": wall2, "resume_jobs": jobs2,
                            "total_work_ratio": (done1 + lost1 + done2 + lost2) / full_work,
                            "total_planned_work_ratio": (planned1 + lost1 + planned2 + lost2) / full_planned,
                            "total_wall_ratio": (wall1 + wall2) / wall}
    shutil.rmtree(root)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text + "\n")


if __name__ == "__main__":
    main()
