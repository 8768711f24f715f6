#!/usr/bin/env python3
# bench/shared_builds_box.py: one or two headroom builds at once, cold and then warm, in a real memory box of either
# cgroup version (tests/e2e/memory_box.py's MemoryBox: v1 or v2, kills counted in every cgroup below the box and in
# the kernel log). bench/shared_builds.py is the v1-only, fuller version; this one is what the v2 VM lane can run:
#   scripts/v2-vm.sh --rwdir /tmp/sbb -- python3 bench/shared_builds_box.py --out /tmp/sbb
"""Usage: python3 bench/shared_builds_box.py [--headroom build/headroom] [--memhog build/tests/memhog]
                                        [--box-mb 3072] [--seeds 1,2] [--out DIR]

Each seed is one graph of bench/memory_bench.py's workload, in its own directory with its own per-user store.
Round "1": the first seed alone, cold then warm (outputs removed). Round "2": every seed at once, cold then warm.
Prints per build its exit status and wall, and per run the kernel OOM kills in the box and below."""
import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "e2e"))
import memory_bench as mb  # noqa: E402
from memory_box import MemoryBox  # noqa: E402


def graph(out: Path, seed: int, box_mb: int, memhog: str) -> Path:
    directory = out / f"seed{seed}"
    shutil.rmtree(directory, ignore_errors=True)
    directory.mkdir(parents=True)
    (directory / "build.ninja").write_text(mb.manifest(mb.workload(seed, box_mb), memhog))
    return directory


def remove_outputs(directory: Path):
    for out in directory.glob("*.out"):
        out.unlink()


def run_builds(box: MemoryBox, headroom: str, dirs: list[Path]) -> list[tuple[int, float]]:
    """Starts one build per directory at once from one shell that joined the box (so none of them finds the box
    closed to new processes by another build's rearrangement on v2); returns (exit status, wall) per build."""
    script = "".join(
        f'(s=$(date +%s.%N); cd "{d}" && HEADROOM_STORE="{d}/store" "{headroom}" -j8 > headroom.log 2>&1; '
        f'echo "$? $s $(date +%s.%N)" > result) & ' for d in dirs) + "wait"
    subprocess.run(box.argv(["bash", "-c", script]), env=box.env(), check=True, timeout=1800)
    results = []
    for d in dirs:
        rc, start, end = (d / "result").read_text().split()
        results.append((int(rc), float(end) - float(start)))
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--headroom", default=str(REPO / "build" / "headroom"))
    ap.add_argument("--memhog", default=str(REPO / "build" / "tests" / "memhog"))
    ap.add_argument("--box-mb", type=int, default=3072)
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--out", default="/tmp/shared-builds-box")
    a = ap.parse_args()
    a.headroom, a.memhog = os.path.abspath(a.headroom), os.path.abspath(a.memhog)  # the builds run in their dirs
    out = Path(a.out)
    seeds = [int(s) for s in a.seeds.split(",")]
    for count in (1, len(seeds)):
        dirs = [graph(out / f"round{count}", s, a.box_mb, a.memhog) for s in seeds[:count]]
        box = MemoryBox(a.box_mb << 20)
        try:
            box.require_complete_kill_count()
            for mode in ("cold", "warm"):
                if mode == "warm":
                    for d in dirs:
                        remove_outputs(d)
                results = run_builds(box, a.headroom, dirs)
                print(f"builds={count} {mode}: " + "  ".join(f"rc={rc} wall={wall:.1f}s" for rc, wall in results)
                      + f"  kernel OOM kills so far in the box and below: {box.oom_kills()}", flush=True)
        finally:
            box.remove()


if __name__ == "__main__":
    main()
