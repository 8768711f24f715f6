#!/usr/bin/env python3
"""Scale-out benchmark (docs/scale-out.md): wall time, peak memory and kernel OOM kills of headroom and ninja 1.13.2
building the same C++ project through `distcc g++` over a loopback distccd, in a memory box, with the farm up and
with the farm down (distcc falls back to local compiles; --localslots raised to -j, as on a many-core client).
Needs root (the box) and distcc; reuses the e2e suite's project generator, daemon and box (tests/e2e/).

  sudo bench/distcc_bench.py --headroom build/headroom [--tus 12] [-j 32] [--box-mib 1536] [--slots 4] [--runs 1]

Prints one line per build and a table; --json FILE appends the rows as JSON lines."""
import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "e2e"))
import harness  # noqa: E402
import test_distcc  # noqa: E402
from memory_box import MemoryBox, unavailable_reason  # noqa: E402

MiB = 1024 * 1024


def box_peak(box: MemoryBox) -> int:
    name = "memory.max_usage_in_bytes" if box.version == "v1" else "memory.peak"
    try:
        return int((box.path / name).read_text())
    except OSError:
        return 0


def run_one(tool: str, binary: str, farm_up: bool, args, work: Path) -> dict:
    """One build in a fresh project, box and daemon; the daemon is stopped first when the farm is down."""
    daemon = test_distcc.Distccd(jobs=args.slots)
    project = work / ("%s-%s" % (tool, "up" if farm_up else "down"))
    test_distcc.write_project(project)
    if not farm_up:
        daemon.stop()
    hosts = "--localslots=%d 127.0.0.1:%d/%d" % (args.jobs, daemon.port, args.slots)
    env = test_distcc.distcc_env(hosts, work / ("distcc-%s-%s" % (tool, farm_up)))
    box = MemoryBox(args.box_mib * MiB)
    try:
        start = time.monotonic()
        result = box.run([binary, "-j%d" % args.jobs], cwd=project, env=env, timeout=3600)
        wall = time.monotonic() - start
        row = {"tool": tool, "farm": "up" if farm_up else "down", "tus": args.tus, "jobs": args.jobs,
               "box_mib": args.box_mib, "ok": result.returncode == 0, "wall_s": round(wall, 1),
               "box_peak_mib": box_peak(box) // MiB, "oom_kills": box.oom_kills(),
               "remote_compiles": len(daemon.compiled())}
        summary = next((line for line in result.stdout.splitlines() if "remote:" in line), "")
        if summary:
            row["summary"] = summary.split("remote:", 1)[1].strip()
        if result.returncode != 0:
            row["error_tail"] = (result.stdout + result.stderr)[-300:]
        return row
    finally:
        box.remove()
        daemon.remove()
        shutil.rmtree(project, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--headroom", default=os.environ.get("HEADROOM_BIN", str(HERE.parent / "build" / "headroom")))
    parser.add_argument("--ninja", default=None, help="reference ninja [default: pip's ninja 1.13.2]")
    parser.add_argument("--tus", type=int, default=12, help="heavy translation units (~300 MiB each at -O0)")
    parser.add_argument("-j", "--jobs", type=int, default=32)
    parser.add_argument("--box-mib", type=int, default=1536)
    parser.add_argument("--slots", type=int, default=4, help="the daemon's and the host list's slots")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    reason = unavailable_reason()
    if reason or shutil.which("distccd") is None:
        print("distcc_bench: cannot run: %s" % (reason or "distccd not on PATH"), file=sys.stderr)
        return 2
    test_distcc.TU_COUNT = args.tus
    # Absolute paths: each build runs in its own project directory.
    tools = [("ninja", os.path.abspath(args.ninja or harness.reference_binary())),
             ("headroom", os.path.abspath(args.headroom))]
    rows = []
    work = Path(tempfile.mkdtemp(prefix="hr-distcc-bench-"))
    try:
        for _ in range(args.runs):
            for farm_up in (True, False):
                for tool, binary in tools:
                    row = run_one(tool, binary, farm_up, args, work)
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    if args.json:
                        with open(args.json, "a") as f:
                            f.write(json.dumps(row) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n%-9s %-5s %-4s %8s %10s %9s %7s" % ("tool", "farm", "ok", "wall s", "peak MiB", "OOM kills", "remote"))
    for row in rows:
        print("%-9s %-5s %-4s %8.1f %10d %9d %7d" % (row["tool"], row["farm"], "yes" if row["ok"] else "NO",
                                                   row["wall_s"], row["box_peak_mib"], row["oom_kills"],
                                                   row["remote_compiles"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
