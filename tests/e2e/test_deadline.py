"""--deadline with the real binary: a build of sleeping jobs stops at the deadline with exit status 75, one line
saying how much is done, and valid .ninja_log/.ninja_deps; the next run (headroom, or ninja 1.13.2 on a copy of
the directory) runs only the rest; a job still running at the deadline is stopped and its output removed; bad
durations get ninja-style errors, from the command line and HEADROOM_FLAGS."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

import harness

JOBS = 12
STOP_LINE = re.compile(r"^ninja: build stopped: deadline (reached \(\S+ past it\)|in \S+: no remaining job fits before it), "
                       r"(\d+)/(\d+) jobs done; run again to resume\.$", re.M)


def env_for(tmp_path: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env.update(TERM="dumb", LC_ALL="C", HEADROOM_STORE=str(tmp_path / "store"), HEADROOM_LEDGER_DIR="")
    env.update(extra)
    return env


def run(binary: str, args: list, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([binary] + args, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def headroom() -> str:
    binary = os.path.abspath(harness.headroom_binary())
    if not os.access(binary, os.X_OK):
        pytest.fail("headroom binary %r does not exist (set HEADROOM_BIN)" % binary)
    return binary


def ninja_ref() -> str:
    ref = harness.reference_binary()
    if not ref or not os.access(ref, os.X_OK):
        if harness.in_ci():
            pytest.fail("ninja 1.13.2 is required in CI (pip install ninja==1.13.2)")
        pytest.skip("ninja 1.13.2 not available")
    return ref


def project(directory: Path, jobs: int = JOBS, seconds: float = 0.4) -> Path:
    """`jobs` compiles of `seconds` each (deps = gcc, so .ninja_deps is written) and a link over them all."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "common.h").write_text("")
    lines = ["rule cc",
             "  command = echo $out >> cmds.log && sleep %s && echo \"$out: $in common.h\" > $out.d && cp $in $out" % seconds,
             "  depfile = $out.d", "  deps = gcc",
             "rule link", "  command = echo $out >> cmds.log && cat $in > $out"]
    for i in range(jobs):
        (directory / ("s%02d.c" % i)).write_text("int f%d;\n" % i)
        lines.append("build s%02d.o: cc s%02d.c" % (i, i))
    lines.append("build app: link " + " ".join("s%02d.o" % i for i in range(jobs)))
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")
    return directory


def commands(directory: Path) -> list:
    log = directory / "cmds.log"
    return log.read_text().split() if log.exists() else []


def assert_logs_valid(directory: Path, outputs_done: set):
    build_log = harness.parse_build_log((directory / ".ninja_log").read_bytes())
    assert build_log["bad"] == [], build_log
    assert {path for path, _, _ in build_log["entries"]} == outputs_done
    expected_deps = {o for o in outputs_done if o.endswith(".o")}
    if not (directory / ".ninja_deps").exists():  # created with the first deps record, as ninja does
        assert not expected_deps
        return
    deps_log = harness.parse_deps_log((directory / ".ninja_deps").read_bytes())
    assert deps_log["bad"] == [], deps_log
    assert {record[1] for record in deps_log["records"] if record[0] == "deps"} == expected_deps


def test_stops_before_the_deadline_when_nothing_else_fits_and_the_next_run_does_the_rest(tmp_path):
    directory = project(tmp_path / "w")
    env = env_for(tmp_path)
    start = time.monotonic()
    r = run(headroom(), ["-j2", "--deadline=1s"], directory, env)
    elapsed = time.monotonic() - start
    assert r.returncode == 75, r
    match = STOP_LINE.search(r.stdout)
    assert match, r.stdout
    done, total = int(match.group(2)), int(match.group(3))
    assert total == JOBS + 1
    assert 1 <= done < JOBS, r.stdout
    assert elapsed < 1.0 + 1.0 + 5.0  # the deadline, its 1 s grace, and slack for a loaded machine
    first = commands(directory)
    finished = {f"s{i:02d}.o" for i in range(JOBS) if (directory / f"s{i:02d}.o").exists()}
    assert len(finished) == done
    assert_logs_valid(directory, finished)

    # ninja 1.13.2 on a copy, and headroom itself, each run exactly what the stopped build did not finish.
    copy = tmp_path / "copy"
    shutil.copytree(directory, copy)
    (copy / "cmds.log").unlink()
    r_ninja = run(ninja_ref(), ["-j2"], copy, env)
    assert r_ninja.returncode == 0, r_ninja
    r_resume = run(headroom(), ["-j2"], directory, env)
    assert r_resume.returncode == 0, r_resume
    rest = sorted((set(f"s{i:02d}.o" for i in range(JOBS)) - finished) | {"app"})
    assert sorted(commands(copy)) == rest
    assert sorted(commands(directory)[len(first):]) == rest
    assert not set(first) & set(rest)  # nothing done twice
    assert run(headroom(), ["-j2"], directory, env).stdout.strip().endswith("no work to do.")


def test_a_job_still_running_at_the_deadline_is_stopped_and_not_recorded(tmp_path):
    directory = tmp_path / "w"
    directory.mkdir()
    # "quick" teaches nothing about "long" (another rule); "long" writes its output at once, then runs on.
    (directory / "build.ninja").write_text(
        "rule quick\n  command = echo $out >> cmds.log && touch $out\n"
        "rule long\n  command = echo $out >> cmds.log && echo partial > $out && sleep 60 && touch $out\n"
        "build quick.out: quick\nbuild long.out: long\nbuild all: phony quick.out long.out\n")
    env = env_for(tmp_path)
    start = time.monotonic()
    r = run(headroom(), ["-j2", "--deadline=2s"], directory, env)
    elapsed = time.monotonic() - start
    assert r.returncode == 75, r
    assert STOP_LINE.search(r.stdout).group(1).startswith("reached"), r.stdout
    assert 2.0 <= elapsed < 2.0 + 1.0 + 5.0  # stopped when its 1 s grace ran out, not after 60 s
    assert not (directory / "long.out").exists()  # removed, as ninja removes an interrupted job's output
    assert_logs_valid(directory, {"quick.out"})
    memstats = run(headroom(), ["-t", "memstats"], directory, env)  # the history reads back without a warning
    assert memstats.returncode == 0 and "warning" not in memstats.stderr, memstats
    assert "long.out" not in memstats.stdout  # the stopped job taught the history nothing
    r_ninja = run(ninja_ref(), ["-n", "-v"], directory, env)  # what ninja 1.13.2 would run next
    assert "echo long.out" in r_ninja.stdout and "quick.out" not in r_ninja.stdout, r_ninja.stdout


def test_history_predictions_keep_a_job_that_cannot_finish_from_starting(tmp_path):
    directory = tmp_path / "w"
    directory.mkdir()
    (directory / "build.ninja").write_text(
        "rule slow\n  command = echo $out >> cmds.log && sleep 3 && touch $out\n"
        "build slow.out: slow\n")
    env = env_for(tmp_path)
    assert run(headroom(), [], directory, env).returncode == 0
    (directory / "slow.out").unlink()  # history (.ninja_headroom, .ninja_log) now says 3 s
    r = run(headroom(), ["--deadline=2s"], directory, env)
    assert r.returncode == 75, r
    assert STOP_LINE.search(r.stdout) and "0/1 jobs done" in r.stdout, r.stdout
    assert commands(directory) == ["slow.out"]  # only the first, unhurried build ran it


def test_headroom_flags_carry_the_deadline(tmp_path):
    directory = project(tmp_path / "w", jobs=6)
    r = run(headroom(), ["-j1"], directory, env_for(tmp_path, HEADROOM_FLAGS="--deadline=1s"))
    assert r.returncode == 75, r
    assert STOP_LINE.search(r.stdout), r.stdout


@pytest.mark.parametrize("value,why", [
    ("90", "'90' has no unit (h, m or s)"),
    ("5x", "unknown unit 'x' (expected h, m or s)"),
    ("30m5h", "units must be given largest first, each once"),
    ("0s", "the duration must be above 0"),
    ("", "empty duration"),
])
def test_bad_durations_get_ninja_style_errors(tmp_path, value, why):
    directory = project(tmp_path / "w", jobs=1)
    expected = "ninja: error: invalid --deadline '%s': %s; expected a duration like 5h30m, 90m or 45s\n" % (value, why)
    r = run(headroom(), ["--deadline=" + value], directory, env_for(tmp_path))
    assert (r.returncode, r.stderr) == (1, expected)
    r = run(headroom(), [], directory, env_for(tmp_path, HEADROOM_FLAGS="--deadline=" + value))
    assert (r.returncode, r.stderr) == (1, expected)
    assert not (directory / "cmds.log").exists()


def test_help_documents_the_option_and_its_exit_status(tmp_path):
    r = run(headroom(), ["-h"], tmp_path, env_for(tmp_path))
    assert "--deadline=DURATION" in r.stderr and "exit status 75" in r.stderr


def test_plan_says_whether_the_build_fits_the_deadline(tmp_path):
    directory = project(tmp_path / "w", jobs=10)
    env = env_for(tmp_path)
    assert run(headroom(), ["-j2"], directory, env).returncode == 0  # history: 10 x 0.4 s at -j2, over 2 s
    r = run(headroom(), ["-t", "plan", "-j2", "--deadline=1h"], directory, env)
    assert r.returncode == 0, r
    assert re.search(r"^deadline 1h00m: fits \(predicted wall \S+, \S+ to spare\)$", r.stdout, re.M), r.stdout
    r = run(headroom(), ["-t", "plan", "-j2", "--deadline=1s"], directory, env)
    assert r.returncode == 0, r
    match = re.search(r"^deadline 1s: does not fit \(predicted wall \S+\); a build with --deadline=1s gets about "
                      r"(\d+)% done \(~(\d+)/11 jobs\), the next run the rest$", r.stdout, re.M)
    assert match, r.stdout
    assert 0 < int(match.group(1)) < 100
    r = run(headroom(), ["-t", "plan", "--json", "-j2", "--deadline=1s"], directory, env)
    verdict = json.loads(r.stdout)["deadline"]
    assert verdict["deadline_ms"] == 1000 and verdict["fits"] is False and 0 < verdict["share_done"] < 1
    r = run(headroom(), ["-t", "plan", "--deadline=soon"], directory, env)
    assert r.returncode == 1
    assert r.stderr == ("ninja: error: invalid --deadline 'soon': 'soon' does not start with a number; "
                        "expected a duration like 5h30m, 90m or 45s\n")
