"""Job families with the real binary (issue #12): translation units that differ only in the values of their
defines are one family, so the first one measured sizes the others in the same build, and `-t memstats` lists
the family with its member classes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import harness

# A "compiler" that holds some memory for a moment: python3 tool.py -DVARIANT=n -c in -o out
TOOL = """import sys, time
args = sys.argv[1:]
mb = 30 + 10 * int([a for a in args if a.startswith("-DVARIANT=")][0].split("=")[1])
block = bytearray(mb << 20)
time.sleep(0.1)
open(args[args.index("-o") + 1], "w").write("built\\n")
"""


def make_project(root: Path, variants: int) -> None:
    (root / "tool.py").write_text(TOOL)
    lines = ["rule cc", "  command = %s tool.py -DVARIANT=$variant -c $in -o $out" % sys.executable, ""]
    for i in range(variants):
        (root / ("k%d.cu" % i)).write_text("// kernel %d\n" % i)
        lines += ["build k%d.o: cc k%d.cu" % (i, i), "  variant = %d" % i]
    (root / "build.ninja").write_text("\n".join(lines) + "\n")


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env.update(TERM="dumb", LC_ALL="C", HEADROOM_STORE="off")
    return subprocess.run([os.path.abspath(harness.headroom_binary()), *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def estimate_sources(trace: Path) -> dict:
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    return {e["name"]: e["args"]["source"] for e in events if e.get("ph") == "X" and "source" in e.get("args", {})}


def test_the_first_member_sizes_its_family_and_memstats_lists_it(tmp_path):
    make_project(tmp_path, 4)
    r = run(tmp_path, "-j1", "--trace=trace.json")
    assert r.returncode == 0, r.stdout + r.stderr
    sources = estimate_sources(tmp_path / "trace.json")
    # -j1: one after another. The first has only its command to go on; the rest have a different define value
    # (another class) but the same family, measured by the time they start.
    assert sorted(sources.values()) == ["family history"] * 3 + ["prior"], sources

    r = run(tmp_path, "-t", "memstats", "--json")
    assert r.returncode == 0, r.stderr
    stats = json.loads(r.stdout)
    assert len(stats["classes"]) == 4
    assert len(stats["families"]) == 1, stats["families"]
    family = stats["families"][0]
    assert (family["classes"], family["completed_jobs"]) == (4, 4)
    assert "-DVARIANT " in family["family"] + " " and "-DVARIANT=" not in family["family"], family
    assert family["max_peak_bytes"] >= 60 << 20  # the 60 MiB variant, as measured (whole tree or ru_maxrss)

    text = run(tmp_path, "-t", "memstats")
    assert "families (1, heaviest first" in text.stdout, text.stdout
