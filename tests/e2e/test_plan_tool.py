"""`-t plan`, the what-if planner, with the real binary: after a real build of memory-hungry jobs
(tests/helpers/memhog) it predicts the build from the measured figures (wall and peak near the build's own),
lists a job larger than the budget as one that cannot fit, falls back to priors before any build, plans only
what is out of date with --dirty, and rejects bad flags."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import harness

MiB = 1024 * 1024
SIZES_MB = [60, 120, 200, 90]


def memhog() -> str:
    path = os.path.join(os.path.dirname(os.path.abspath(harness.headroom_binary())), "tests", "memhog")
    if not os.access(path, os.X_OK):
        pytest.fail("memhog helper not found at %s (build the 'memhog' target)" % path)
    return path


def project(directory: Path) -> Path:
    """Four hogs of 60-200 MiB and a link needing them all."""
    lines = ["rule hog", "  command = %s --mb $mb --ramp-ms 150 --hold-ms 250 > $out" % memhog(),
             "  description = HOG $out"]
    for i, mb in enumerate(SIZES_MB):
        lines += ["build hog%d.out: hog" % i, "  mb = %d" % mb]
    lines += ["build link.out: hog " + " ".join("hog%d.out" % i for i in range(len(SIZES_MB))), "  mb = 30"]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")
    return directory


def env_for(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env.update(TERM="dumb", LC_ALL="C", HEADROOM_STORE=str(tmp_path / "store"))
    return env


def run(args: list, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([os.path.abspath(harness.headroom_binary())] + args, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def plan_json(args: list, cwd: Path, env: dict) -> dict:
    r = run(["-t", "plan", "--json"] + args, cwd, env)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


@pytest.fixture
def built(tmp_path):
    """The project after one real build at -j2 with a 1 GiB budget, and that build's wall time."""
    directory = project(tmp_path / "proj")
    env = env_for(tmp_path)
    start = time.monotonic()
    r = run(["-j2", "--mem-budget=1G"], directory, env)
    wall = time.monotonic() - start
    assert r.returncode == 0, r.stdout + r.stderr
    return directory, env, wall


def test_plan_after_a_build_predicts_it_from_the_measured_figures(built):
    directory, env, wall = built
    plan = plan_json(["-j2", "--mem-budget=1G"], directory, env)
    assert plan["scope"] == "clean"
    assert plan["jobs"] == 5
    assert plan["figures"]["measured"] == 5 and plan["figures"]["prior"] == 0
    assert plan["figures"]["durations_measured"] == 5 and plan["figures"]["durations_unknown"] == 0
    asked = plan["requested"]
    assert asked["completed"] and asked["jobs"] == 2 and asked["budget_bytes"] == 1024 * MiB
    assert asked["oom_kills"] == 0 and asked["failed"] == []
    # Each hog holds its size until it exits; the two largest can overlap at -j2.
    measured = {job["output"]: job for job in plan["per_job"]}
    largest = max(job["peak_bytes"] for job in plan["per_job"])
    assert largest >= 200 * MiB
    assert measured["hog2.out"]["peak_from"] == "measured"
    assert largest <= asked["peak_bytes"] <= asked["budget_bytes"]
    # The prediction is the same build replayed: near its wall (the machine is shared, so loosely).
    predicted = asked["wall_ms"] / 1000.0
    assert 0.5 * wall <= predicted <= 1.5 * wall, (predicted, wall)
    assert plan["cannot_fit"] == []
    swept = [run_["jobs"] for run_ in plan["this_machine"]["runs"]]
    assert 1 in swept and 2 in swept
    assert plan["recommendation"]["completed"] and plan["recommendation"]["jobs"] in swept
    assert [m["name"] for m in plan["other_machines"]][1] == "CI 4 cores / 16 GiB"
    assert all(m["best"]["completed"] for m in plan["other_machines"])


def test_a_budget_smaller_than_the_largest_job_lists_it_as_not_fitting(built):
    directory, env, _ = built
    plan = plan_json(["-j2", "--mem-budget=150M"], directory, env)
    assert [job["output"] for job in plan["cannot_fit"]] == ["hog2.out"]
    assert plan["cannot_fit"][0]["peak_bytes"] > 150 * MiB
    assert not plan["requested"]["completed"]
    assert plan["recommendation"] is None
    text = run(["-t", "plan", "-j2", "--mem-budget=150M"], directory, env)
    assert text.returncode == 0, text.stderr
    assert "cannot fit the 150 MiB budget at all (1):" in text.stdout
    assert "hog2.out" in text.stdout
    assert "recommendation: a larger --mem-budget" in text.stdout


def test_text_output_names_its_figures_sweep_and_recommendation(built):
    directory, env, _ = built
    r = run(["-t", "plan", "-j2", "--mem-budget=1G"], directory, env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "plan: 5 jobs (a clean build of the targets)"
    assert lines[1].startswith("figures: 5 measured, 0 estimated from similar jobs, 0 priors; durations: 5 measured")
    assert lines[2].startswith("predicted at -j2, budget 1.0 GiB, ")
    assert any(line.startswith("swept -j1,2,3,") for line in lines), r.stdout
    assert any("CI 4 cores / 16 GiB" in line for line in lines)
    assert lines[-1].startswith("recommendation: -j"), r.stdout


def test_before_any_build_the_plan_uses_priors(tmp_path):
    directory = project(tmp_path / "fresh")
    plan = plan_json(["-j2", "--mem-budget=2G"], directory, env_for(tmp_path))
    assert plan["jobs"] == 5
    assert plan["figures"]["measured"] == 0 and plan["figures"]["prior"] == 5
    assert plan["figures"]["durations_unknown"] == 5
    assert plan["requested"]["completed"]


def test_dirty_plans_only_what_is_out_of_date(built):
    directory, env, _ = built
    assert plan_json(["--dirty"], directory, env)["jobs"] == 0
    (directory / "hog1.out").unlink()
    plan = plan_json(["--dirty"], directory, env)
    assert plan["scope"] == "dirty"
    assert sorted(job["output"] for job in plan["per_job"]) == ["hog1.out", "link.out"]
    assert plan_json([], directory, env)["jobs"] == 5


def test_bad_flags_and_help(built):
    directory, env, _ = built
    r = run(["-t", "plan", "-j", "x"], directory, env)
    assert r.returncode == 1 and "invalid -j parameter 'x'" in r.stderr
    r = run(["-t", "plan", "--mem-budget=lots"], directory, env)
    assert r.returncode == 1 and "invalid --mem-budget 'lots'" in r.stderr
    r = run(["-t", "plan", "--load=-1"], directory, env)
    assert r.returncode == 1 and "invalid --load '-1'" in r.stderr
    r = run(["-t", "plan", "--peak-at=0"], directory, env)
    assert r.returncode == 1 and "invalid --peak-at '0'" in r.stderr
    r = run(["-t", "plan", "nosuchtarget"], directory, env)
    assert r.returncode == 1 and "unknown target 'nosuchtarget'" in r.stderr
    r = run(["-t", "plan", "-h"], directory, env)
    assert r.returncode == 0 and r.stdout.startswith("usage: ninja -t plan")
