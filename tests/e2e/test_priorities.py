"""The builder's order with history (issue #12), with the real binary and real memory-hungry jobs (memhog):
jobs that each need more than half of the usable memory can only run one at a time, so on a warm build they
start first and lighter jobs fill around them."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import harness
from test_memory_box import memhog_path

HEAVY = ["heavy_a", "heavy_b", "heavy_c"]
MEDIUM = ["medium_%d" % i for i in range(4)]


def make_project(root: Path) -> None:
    hog = memhog_path()
    lines = [
        "rule hog",
        "  command = %s --mb $mb --ramp-ms 100 --hold-ms $hold && touch $out" % hog,
        "  description = HOG $out",
        "",
    ]
    # Mediums first in the manifest and longer than the heavy jobs: ninja's order and an order by duration
    # alone would both start them first.
    for name in MEDIUM:
        lines += ["build %s.out: hog" % name, "  mb = 60", "  hold = 1400"]
    for name in HEAVY:
        lines += ["build %s.out: hog" % name, "  mb = 420", "  hold = 1100"]
    (root / "build.ninja").write_text("\n".join(lines) + "\n")


def build(root: Path, jobs: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env.update(TERM="dumb", LC_ALL="C", HEADROOM_STORE="off")
    # 800 MiB budget, 100 MiB reserve: 700 MiB usable, so a 420 MiB job cannot run beside another one.
    return subprocess.run([os.path.abspath(harness.headroom_binary()), jobs, "--mem-budget=800M", "--mem-reserve=100M"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=300)


def start_order(root: Path) -> list[str]:
    """Outputs of the last build in the order they started (.ninja_log start times)."""
    runs = {}
    for line in (root / ".ninja_log").read_text().splitlines()[1:]:
        start, _end, _mtime, output, _hash = line.split("\t")
        runs[output] = int(start)  # later lines (the last build) win
    return [o[:-len(".out")] for o, _ in sorted(runs.items(), key=lambda item: item[1])]


def test_warm_build_starts_the_jobs_too_big_to_share_memory_first(tmp_path):
    make_project(tmp_path)
    cold = build(tmp_path, "-j8")
    assert cold.returncode == 0, cold.stdout + cold.stderr

    for name in HEAVY + MEDIUM:
        (tmp_path / (name + ".out")).unlink()
    # -j1: one job at a time, so the start order is exactly the builder's priority order.
    warm = build(tmp_path, "-j1")
    assert warm.returncode == 0, warm.stdout + warm.stderr
    order = start_order(tmp_path)
    # Warm: the heavy jobs are one chain (3 x ~1.2 s in series) and outrank every medium job, though each
    # medium job is longer than any heavy one.
    assert sorted(order[:len(HEAVY)]) == HEAVY and sorted(order[len(HEAVY):]) == MEDIUM, order
