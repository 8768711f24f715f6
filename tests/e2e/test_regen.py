"""Area 4: manifest regeneration (the -f manifest is itself a target; rebuilt, reloaded, then the build restarts)."""

from common import RULES
from harness import scenario

REGEN = (
    "rule regen\n"
    "  command = echo $out >> cmds.log && cp $in $out\n"
    "  generator = 1\n"
    "  description = Regenerating $out\n"
    "build build.ninja: regen build.ninja.in\n"
)


def write_regen(ws, body, version="1"):
    text = REGEN + RULES + "v = %s\n" % version + body
    ws.write("build.ninja.in", text)
    ws.write("build.ninja", text)


@scenario
def test_manifest_rebuilt_and_reloaded(ws):
    ws.write("src", "s\n")
    write_regen(ws, "rule show\n  command = echo $out >> cmds.log && echo $v > $out\nbuild out: show src\n")
    r = ws.run("-j1")
    assert r.cmds == ["out"]
    ws.run("-j1")
    # new manifest content: a changed variable and a new default target
    ws.write("build.ninja.in", REGEN + RULES + "v = 2\n"
             "rule show\n  command = echo $out >> cmds.log && echo $v > $out\nbuild out: show src\nbuild extra: cat src\n")
    ws.touch("build.ninja.in")
    r = ws.run("-j1")
    assert r.stdout.startswith("[1/1] Regenerating build.ninja\n")
    assert r.cmds == ["build.ninja", "out", "extra"]
    assert ws.read("out") == "2\n"
    ws.run("-j1")
    ws.snapshot()
    ws.logs()


@scenario
def test_manifest_regen_with_explicit_target_and_dry_run(ws):
    write_regen(ws, "build a: touch\nbuild b: touch\n")
    ws.run("-j1", "a")
    ws.touch("build.ninja.in")
    r = ws.run("-j1", "-n", "b")
    assert r.cmds == []
    r = ws.run("-j1", "b")
    assert r.cmds == ["build.ninja", "b"]
    ws.logs()


@scenario
def test_manifest_regen_restat_unchanged_no_reload(ws):
    """With restat, a regenerator that leaves build.ninja untouched does not count as a regeneration."""
    body = "build a: touch\n"
    text = ("rule regen\n"
            "  command = echo $out >> cmds.log && (cmp -s $in $out || cp $in $out)\n"
            "  generator = 1\n"
            "  restat = 1\n"
            "build build.ninja: regen build.ninja.in\n" + RULES + body)
    ws.write("build.ninja.in", text)
    ws.write("build.ninja", text)
    ws.run("-j1")
    ws.touch("build.ninja.in")
    r = ws.run("-j1")
    assert r.cmds == ["build.ninja"]
    ws.run("-j1")
    ws.logs()


@scenario
def test_manifest_regen_failure(ws):
    text = ("rule regen\n"
            "  command = echo $out >> cmds.log && echo regen broke && exit 4\n"
            "  generator = 1\n"
            "build build.ninja: regen build.ninja.in\n" + RULES + "build a: touch\n")
    ws.write("build.ninja.in", text)
    ws.write("build.ninja", text)
    ws.touch("build.ninja.in")
    ws.run("-j1")
    ws.run("-j1", "-k", "0")


@scenario
def test_manifest_regen_with_f_flag_and_depfile(ws):
    """GN style: phony manifest edge on a generator stamp with a depfile listing the .gn inputs."""
    ws.write("a.gn", "x\n")
    text = ("rule gn\n"
            "  command = echo $out >> cmds.log && cp other.in other.ninja && echo 'stamp: a.gn' > stamp.d && touch $out\n"
            "  generator = 1\n"
            "  depfile = stamp.d\n"
            "  pool = console\n"
            "  description = Regenerating ninja files\n"
            "build stamp: gn\n"
            "build other.ninja: phony stamp\n"
            "  generator = 1\n" + RULES + "build t: touch\n")
    ws.write("other.in", text + "build t2: touch\n")
    ws.write("other.ninja", text)
    r = ws.run("-j1", "-f", "other.ninja")
    ws.run("-j1", "-f", "other.ninja")
    ws.touch("a.gn")
    r = ws.run("-j1", "-f", "other.ninja", "t2")
    ws.run("-j1", "-f", "other.ninja")
    ws.logs()


@scenario
def test_manifest_always_dirty_gives_up(ws):
    """A manifest that stays dirty after rebuilding is retried at most 100 times, then fatal."""
    text = ("rule regen\n"
            "  command = echo $out >> cmds.log && touch build.ninja\n"
            "  generator = 1\n"
            "build build.ninja: regen always\n"
            "build always: phony\n" + RULES + "build a: touch\n")
    ws.write("build.ninja", text)
    r = ws.run("-j1", "a")
    assert len(r.cmds) == 100
