"""Area 6: the command line (-C -f -j -k -l -n -v --quiet -d -w -t -h --version, permutation, messages)."""

import pytest

from common import RULES, manifest
from harness import HEADROOM_VERSION, scenario


def simple(ws, extra=""):
    ws.write("in", "x\n")
    ws.write("build.ninja", manifest("build a: cat in\nbuild b: cat a\n" + extra))


@scenario
def test_version(ws):
    r = ws.run("--version")
    assert r.rc == 0 and r.stderr == ""
    # the record compares headroom's raw output with the reference's version normalised to 1.13.2
    assert r.stdout == HEADROOM_VERSION + "\n"
    ws.run("--version", "-j1", "nonexistent-target")
    ws.run("-C", "nowhere", "--version")


@scenario
def test_change_directory(ws):
    ws.write("sub/in", "x\n")
    ws.write("sub/build.ninja", manifest("build a: cat in\n"))
    r = ws.run("-C", "sub", "-j1")
    assert r.stdout.startswith("ninja: Entering directory `sub'\n")
    ws.run("-Csub", "-j1")
    ws.run("-C", "sub", "--quiet", "-j1")
    ws.run("-C", "nothere", "-j1")
    ws.run("-C", "sub", "-C", "..", "-j1")
    ws.run("-C", "./sub/", "-t", "restat")
    ws.write("sub/deeper/build.ninja", RULES + "build z: touch\n")
    ws.run("-C", "sub", "-C", "deeper", "-j1")
    ws.snapshot()


@scenario
def test_file_flag(ws):
    ws.write("alt.ninja", RULES + "build alt: touch\n")
    ws.write("build.ninja", RULES + "build main: touch\n")
    ws.run("-f", "alt.ninja", "-j1")
    ws.run("-falt.ninja", "-j1")
    ws.run("-f", "missing.ninja", "-j1")
    ws.run("-j1")
    ws.run("-f", "alt.ninja", "-f", "build.ninja", "-j1")
    ws.logs()


@pytest.mark.parametrize("value", ["abc", "-1", "", "2x", " 2", "0x10", "99999999999999999999", "+3", "1e2"])
def test_bad_or_odd_j_values(differential, value):
    def sc(ws):
        simple(ws)
        ws.run("-j", value, "-n", stdout="ignore" if value in ("+3", "0x10", " 2") else "exact")
    differential(sc)


@scenario
def test_j_forms(ws):
    simple(ws)
    ws.run("-j1")
    ws.remove("a")
    ws.run("-j", "1")
    ws.remove("a")
    ws.run("-j0", cmds_order=True)  # a chain: order is forced even in parallel
    ws.remove("a")
    ws.run("-j", "4", cmds_order=True)
    ws.remove("a")
    ws.run(cmds_order=True)  # default parallelism


@scenario
def test_k_flag_values(ws):
    simple(ws, "rule fail\n  command = exit 1\nbuild f: fail\n")
    ws.run("-k", "x", "f")
    ws.run("-k", "", "f")
    ws.run("-k", "1x", "f")
    ws.run("-k1", "-j1", "f")
    ws.run("-k", "0", "-j1", "f", "b")


@scenario
def test_options_after_targets_are_permuted(ws):
    simple(ws)
    r = ws.run("b", "-j1", "-n")
    assert r.cmds == []
    r = ws.run("a", "-j", "1")
    assert r.cmds == ["a"]
    ws.run("b", "-v", "-j1")
    ws.run("--", "-j1")
    ws.run("-j1", "--", "b")


@scenario
def test_unknown_target_messages(ws):
    simple(ws)
    ws.run("-j1", "c")
    ws.run("-j1", "bb")
    ws.run("-j1", "in")  # a source file that exists is a valid (no-op) target
    ws.run("-j1", "in2")
    ws.run("-j1", "a^")
    ws.run("-j1", "in^")
    ws.run("-j1", "b^")


@scenario
def test_target_caret_syntax(ws):
    ws.write("x.c", "x\n")
    ws.write("build.ninja", manifest("build x.o: cc x.c\nbuild lib: cat x.o\n"))
    r = ws.run("-j1", "x.c^")
    assert r.cmds == ["x.o"]
    ws.run("-j1", "x.o^")


@scenario
def test_no_work_and_stopped_messages(ws):
    simple(ws, "rule fail\n  command = echo broken; exit 1\nbuild f: fail\n")
    ws.run("-j1", "b")
    r = ws.run("-j1", "b")
    assert r.stdout == "ninja: no work to do.\n"
    r = ws.run("-j1", "--quiet", "b")
    assert r.stdout == ""
    r = ws.run("-j1", "f")
    assert r.stdout.endswith("ninja: build stopped: subcommand failed.\n")
    ws.run("-j1", "--quiet", "f")
    ws.run("-j1", "-v", "f")


@scenario
def test_debug_and_warning_flags(ws):
    simple(ws)
    ws.run("-d", "list")
    ws.run("-d", "nope")
    # The table's layout, metric names and order match ninja's; the figures cannot.
    r = ws.run("-d", "stats", "-j1", stdout="numbers_masked")
    assert r.stdout.splitlines()[-1].startswith("path->node hash load "), r.stdout
    for metric in (".ninja parse", ".ninja_log load", "node stat", "ComputeCriticalPath", "StartEdge"):
        assert "\n" + metric in r.stdout, r.stdout
    ws.run("-d", "stats", "-j1", stdout="numbers_masked")  # no work to do: no plan, no edges
    ws.run("-d", "stats", "-t", "targets")  # tools print no table
    ws.run("-d", "keepdepfile", "-d", "keeprsp", "-j1")
    ws.run("-w", "list")
    ws.run("-w", "nope")
    ws.run("-w", "dupbuild=err", "-j1")
    ws.run("-w", "dupbuild=warn", "-j1")
    ws.run("-w", "depfilemulti=err", "-j1")
    ws.run("-w", "phonycycle=warn", "-j1")
    ws.run("-w", "phonycycle=bogus", "-j1")


@scenario
def test_tool_flag_basics(ws):
    simple(ws)
    ws.run("-t", "list")
    ws.run("-t", "nosuchtool")
    ws.run("-t", "restat", "-j1")
    ws.run("-t", "recompact")
    assert not ws.exists(".ninja_log")


@scenario
def test_dry_run_and_verbose_output(ws):
    simple(ws)
    r = ws.run("-n", "-j1")
    assert r.stdout == "[1/2] CAT a\n[2/2] CAT b\n"
    ws.run("-n", "-v", "-j1")
    ws.run("-n", "--quiet", "-j1")
    ws.run("-nv", "-j1")


@scenario
def test_builds_with_env_noise_ignored(ws):
    """MAKEFLAGS without a jobserver and unrelated variables must not change anything visible.

    (Pipe-style `--jobserver-auth=R,W` is deliberately not tested: the pip/Kitware reference build implements pipe
    mode, upstream 1.13.2 ignores it with a warning; headroom should follow upstream.)"""
    simple(ws)
    ws.run("-j1", env={"MAKEFLAGS": "-j4", "GNUMAKEFLAGS": "x", "NINJA_FOO": "1"})
    ws.remove("a")
    ws.run("-j1", "-n", env={"MAKEFLAGS": "-j4 --jobserver-auth=fifo:/nonexistent"})


@scenario
def test_missing_default_manifest_messages(ws):
    ws.run("-j1")
    ws.run("-j1", "-n")
    ws.write("sub/.keep", "")
    ws.run("-C", "sub")
