"""The options of headroom's own `-t` tools (plan, history, memstats; parsed with CLI11) with the real binary:
each tool's -h/--help lists its options, the spellings users type all work (`-j2`, `-j 2`, `--mem-budget=1G`,
`--mem-budget 1G`, options after targets, an unambiguous abbreviation), and a bad option or operand fails with
`ninja: error: ...` and exit 1 (the help following on stdout)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import harness

GiB = 1024 ** 3

MANIFEST = "rule touch\n  command = touch $out\nbuild a: touch\nbuild b: touch a\n"


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "build.ninja").write_text(MANIFEST)
    return tmp_path


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env.update(TERM="dumb", LC_ALL="C", HEADROOM_STORE=str(cwd / "store"))
    return subprocess.run([os.path.abspath(harness.headroom_binary()), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("tool, usage, options", [
    ("plan", "usage: ninja -t plan [options] [targets...]",
     ["-h, --help", "-j N", "--mem-budget=SIZE", "--cores=N", "--load=N", "--peak-at=SHARE", "--deadline=D", "--dirty",
      "--json", "--trace"]),
    ("memstats", "usage: ninja -t memstats [options]", ["-h, --help", "--json"]),
    ("history", "usage: ninja -t history export FILE | import FILE | path", ["-h, --help"]),
])
@pytest.mark.parametrize("flag", ["-h", "--help"])
def test_each_tool_has_a_help_listing_its_options(project, tool, usage, options, flag):
    r = run(project, "-t", tool, flag)
    assert (r.returncode, r.stderr) == (0, ""), r
    lines = r.stdout.splitlines()
    assert lines[0] == usage, r.stdout
    listed = [line.split("  ")[1] if line.startswith("  ") else None for line in lines]
    for option in options:
        assert option in listed, (option, r.stdout)
    # Every option line says what it does.
    for line in lines[lines.index("options:") + 1:]:
        if line.startswith("  ") and not line.startswith("   "):
            assert len(line.split()) > 1, line


def test_history_help_lists_its_commands_and_each_command_has_its_own(project):
    r = run(project, "-t", "history", "--help")
    commands = r.stdout.split("commands:\n")[1].split("\n\n")[0].splitlines()
    assert [line.split()[0] for line in commands if line.startswith("  ") and not line.startswith("   ")] == \
        ["export", "import", "path"], r.stdout
    assert "  export FILE" in r.stdout and "  import FILE" in r.stdout
    r = run(project, "-t", "history", "export", "-h")
    assert (r.returncode, r.stderr) == (0, ""), r
    assert r.stdout.splitlines()[0] == "usage: ninja -t history export FILE", r.stdout
    assert "builddir" in r.stdout


def plan(project: Path, *args: str) -> dict:
    r = run(project, "-t", "plan", "--json", *args)
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)


@pytest.mark.parametrize("args", [
    ["-j2", "--mem-budget=1G", "--cores=2"],
    ["-j", "2", "--mem-budget", "1G", "--cores", "2"],
    ["b", "-j2", "--mem-budget=1G", "--cores=2"],          # options after a target, as getopt permuted them
    ["-j", "7", "-j2", "--mem-bud=1G", "--cor=2"],        # the last -j counts; unambiguous abbreviations
    ["--mem-budget=1G", "--cores=2", "-j2", "--", "b"],   # "--" ends the options
])
def test_plan_takes_every_spelling_of_its_options(project, args):
    asked = plan(project, *args)["requested"]
    assert (asked["jobs"], asked["budget_bytes"], asked["cores"]) == (2, GiB, 2)


def test_plan_flags_without_values_and_targets(project):
    out = plan(project, "--dirty", "a")
    assert out["scope"] == "dirty" and out["jobs"] == 1


@pytest.mark.parametrize("args, message", [
    (["-j", "0"], "ninja: error: invalid -j parameter '0'\n"),
    (["-jx"], "ninja: error: invalid -j parameter 'x'\n"),
    (["--cores=none"], "ninja: error: invalid --cores 'none': expected a number of CPUs\n"),
    (["--peak-at=1.5"], "ninja: error: invalid --peak-at '1.5': expected a share of the run, above 0 and at most 1\n"),
    (["--mem-budget=0G"], "ninja: error: invalid --mem-budget '0G': expected a size like 12G or a percentage like 80%\n"),
])
def test_plan_refuses_a_bad_value_in_its_own_words(project, args, message):
    r = run(project, "-t", "plan", *args)
    assert (r.returncode, r.stderr, r.stdout) == (1, message, ""), r


@pytest.mark.parametrize("tool, args, error", [
    ("plan", ["--no-such-flag"], "ninja: error: plan: the following argument was not expected: --no-such-flag"),
    ("plan", ["-j"], "ninja: error: plan: "),
    ("plan", ["--mem-budget"], "ninja: error: plan: "),
    ("memstats", ["--jsn"], "ninja: error: memstats: the following argument was not expected: --jsn"),
    ("memstats", ["extra"], "ninja: error: memstats: the following argument was not expected: extra"),
    ("history", [], "ninja: error: history: a subcommand is required"),
    ("history", ["export"], "ninja: error: history export: FILE is required"),
    ("history", ["path", "extra"], "ninja: error: history path: the following argument was not expected: extra"),
    ("history", ["sideways"], "ninja: error: history: "),
])
def test_a_bad_option_or_operand_is_an_error_with_the_help_after_it(project, tool, args, error):
    r = run(project, "-t", tool, *args)
    assert r.returncode == 1, r
    assert r.stderr.startswith(error) and r.stderr.count("\n") == 1, r.stderr
    assert r.stdout.startswith("usage: ninja -t " + tool), r.stdout
