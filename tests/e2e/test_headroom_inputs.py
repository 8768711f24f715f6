"""headroom's own inputs that ninja does not have (--mem-budget, --mem-reserve, HEADROOM_FLAGS, headroom_mem):
a value headroom cannot take as meant is refused or reported, never silently read as something else."""

import os

import pytest

import harness

SIMPLE = "rule t\n  command = echo $out >> cmds.log && touch $out\nbuild out: t\n"


@pytest.mark.parametrize("value", ["12", "0", "67108863", " 12 "])
def test_a_budget_in_bytes_below_the_floor_is_refused(headroom, value):
    ws = headroom
    ws.write("build.ninja", SIMPLE)
    r = ws.run("--mem-budget=" + value)
    assert r.rc == 1, r
    assert r.stdout == ""
    assert r.stderr == ("ninja: error: invalid --mem-budget '%s': a number without a unit is bytes, and %d bytes is "
                        "below the 64 MiB floor for a budget in bytes (write %sG for gigabytes)\n"
                        % (value.strip(), int(value), value.strip())), r
    assert not ws.exists("out")


@pytest.mark.parametrize("value", ["67108864", "1M", "12K", "50%"])
def test_a_budget_with_a_unit_or_above_the_floor_is_taken_as_written(headroom, value):
    ws = headroom
    ws.write("build.ninja", SIMPLE)
    r = ws.run("--mem-budget=" + value, stdout="ignore")
    assert r.rc == 0 and r.stderr == "", r
    assert r.cmds == ["out"]


def test_a_unitless_plan_budget_below_the_floor_is_refused(headroom):
    ws = headroom
    ws.write("build.ninja", SIMPLE)
    r = ws.run("-t", "plan", "--mem-budget=16")
    assert r.rc == 1, r
    assert r.stderr.startswith("ninja: error: invalid --mem-budget '16': a number without a unit is bytes"), r


def test_a_zero_reserve_is_refused(headroom):
    ws = headroom
    ws.write("build.ninja", SIMPLE)
    r = ws.run("--mem-reserve=0")
    assert r.rc == 1, r
    assert r.stderr == ("ninja: error: invalid --mem-reserve '0': the reserve must be above 0 (leave the option out "
                        "for the default)\n"), r
    r = ws.run("--mem-reserve=1", stdout="ignore")
    assert r.rc == 0 and r.stderr == "", r


def test_headroom_flags_are_split_like_a_shell_command_line(headroom):
    ws = headroom
    ws.write("build.ninja", SIMPLE)
    flags = """--trace='my trace.json' --report="my \\"report\\".html" --mem-reserve=1\\ M"""
    r = ws.run("-j1", env={"HEADROOM_FLAGS": flags}, stdout="ignore")
    assert r.rc == 0 and r.stderr == "", r
    assert ws.exists("my trace.json") and ws.exists('my "report".html')


@pytest.mark.parametrize("flags,what", [("--trace='a b", "unterminated single quote"),
                                        ('--trace="a b', "unterminated double quote"),
                                        ("--trace=a\\", "trailing backslash")])
def test_a_malformed_headroom_flags_is_an_error(headroom, flags, what):
    ws = headroom
    ws.write("build.ninja", SIMPLE)
    r = ws.run(env={"HEADROOM_FLAGS": flags})
    assert r.rc == 1, r
    assert r.stderr == "ninja: error: invalid HEADROOM_FLAGS: %s\n" % what, r
    assert r.cmds == []


def test_a_malformed_headroom_mem_hint_is_reported_once_per_value(headroom):
    ws = headroom
    ws.write("build.ninja",
             "headroom_mem = lots\nrule t\n  command = echo $out >> cmds.log && touch $out\n"
             "build a: t\nbuild b: t\nbuild c: t\n  headroom_mem = 4Q\nbuild d: t\n  headroom_mem = 16M\n")
    r = ws.run("-j1", stdout="ignore")
    assert r.rc == 0, r
    lines = r.stderr.splitlines()
    assert len(lines) == 2, r
    assert lines[0].startswith("ninja: warning: ignoring headroom_mem = lots (first on 'a'): invalid size 'lots'"), r
    assert lines[1].startswith("ninja: warning: ignoring headroom_mem = 4Q (first on 'c'): invalid size '4Q'"), r
    assert sorted(r.cmds) == ["a", "b", "c", "d"]
