"""Area 2: dirty checking (mtimes, missing outputs, command hashes, restat, generator, depfiles, dyndep, cycles)."""

from common import RULES, manifest
from harness import scenario

CHAIN = manifest(
    "build a.o: cc a.c\n"
    "build b.o: cc b.c\n"
    "build lib: cat a.o b.o\n"
    "build app: cat lib main.c\n"
    "build other: cat b.c\n"
)


def write_chain(ws):
    for f in ("a.c", "b.c", "main.c"):
        ws.write(f, f + "\n")
    ws.write("build.ninja", CHAIN)


@scenario
def test_newer_input_rebuilds_exactly_its_dependents(ws):
    write_chain(ws)
    r = ws.run("-j1")
    assert len(r.cmds) == 5
    r = ws.run("-j1")
    assert r.stdout == "ninja: no work to do.\n"
    ws.touch("a.c")
    r = ws.run("-j1")
    assert r.cmds == ["a.o", "lib", "app"]
    ws.touch("main.c")
    r = ws.run("-j1", "app")
    assert r.cmds == ["app"]
    ws.logs()


@scenario
def test_older_input_mtime_does_not_rebuild(ws):
    write_chain(ws)
    ws.run("-j1")
    ws.set_mtime("a.c", 1_000_000_000_000_000_000)  # 2001
    r = ws.run("-j1")
    assert r.cmds == []


@scenario
def test_equal_mtime_is_clean(ws):
    ws.write("in", "x\n")
    ws.write("build.ninja", manifest("build out: cat in\n"))
    ws.run("-j1")
    # since 1.12 the log records the filesystem time at command start, and an input newer than that is dirty
    t = int(ws.read(".ninja_log").splitlines()[1].split("\t")[2])
    assert t <= ws.mtime("out")
    ws.set_mtime("in", t)
    r = ws.run("-j1")
    assert r.cmds == []
    ws.set_mtime("in", t + 1)  # one nanosecond newer than the recorded start time
    r = ws.run("-j1")
    assert r.cmds == ["out"]


@scenario
def test_missing_output_rebuilds(ws):
    write_chain(ws)
    ws.run("-j1")
    ws.remove("b.o")
    r = ws.run("-j1")
    assert r.cmds == ["b.o", "lib", "app"]  # b.o content identical, but lib is rebuilt (no restat)
    ws.remove("app")
    r = ws.run("-j1")
    assert r.cmds == ["app"]


@scenario
def test_command_change_rebuilds_description_change_does_not(ws):
    write_chain(ws)
    ws.run("-j1")
    ws.write("build.ninja", CHAIN.replace("description = CAT $out", "description = CONCAT $out"))
    r = ws.run("-j1")
    assert r.cmds == []
    ws.write("build.ninja", CHAIN.replace("cat $in > $out\n  description", "cat $in  > $out\n  description"))
    r = ws.run("-j1")
    assert r.cmds == ["lib", "app", "other"]
    ws.logs()


@scenario
def test_missing_log_entry_rebuilds(ws):
    write_chain(ws)
    ws.run("-j1")
    ws.remove(".ninja_log")
    r = ws.run("-j1")
    assert len(r.cmds) == 5
    # a log without the entry for one output
    lines = ws.read(".ninja_log").splitlines(True)
    ws.write(".ninja_log", "".join(ln for ln in lines if not ln.rstrip("\n").split("\t")[3:4] == ["lib"]))
    r = ws.run("-j1")
    assert r.cmds == ["lib", "app"]


@scenario
def test_restat_cleans_dependents(ws):
    ws.write("src", "v1\n")
    ws.write("build.ninja",
             "rule copy_if_changed\n"
             "  command = echo $out >> cmds.log && (cmp -s $in $out || cp $in $out)\n"
             "  restat = 1\n"
             "  description = COPY $out\n"
             + RULES +
             "build mid: copy_if_changed src\n"
             "build top: cat mid\n"
             "build top2: cat top\n")
    ws.run("-j1")
    ws.touch("src")  # same content: mid unchanged, top/top2 cleaned; total shrinks in the status
    r = ws.run("-j1")
    assert r.cmds == ["mid"]
    r = ws.run("-j1")
    assert r.cmds == []
    ws.write("src", "v2\n")
    ws.touch("src")
    r = ws.run("-j1")
    assert r.cmds == ["mid", "top", "top2"]
    ws.logs()


@scenario
def test_restat_output_missing_before_and_after(ws):
    ws.write("src", "x\n")
    ws.write("build.ninja",
             "rule noop\n"
             "  command = echo $out >> cmds.log\n"
             "  restat = 1\n"
             + RULES +
             "build never: noop src\n"
             "build user: cat src || never\n"
             "build user2: cat never\n")
    ws.run("-j1", "user")
    ws.run("-j1", "user")
    ws.run("-j1", "user2")
    ws.run("-j1", "user2")
    ws.logs()


@scenario
def test_generator_ignores_command_change_and_missing_log(ws):
    ws.write("src", "x\n")
    m = ("rule gen\n"
         "  command = echo $out >> cmds.log && cat $in > $out # v1\n"
         "  generator = 1\n"
         + RULES +
         "build g: gen src\n"
         "build u: cat g\n")
    ws.write("build.ninja", m)
    ws.run("-j1")
    ws.write("build.ninja", m.replace("# v1", "# v2"))
    r = ws.run("-j1")
    assert r.cmds == []
    ws.remove(".ninja_log")
    r = ws.run("-j1")
    assert r.cmds == ["u"]
    ws.touch("src")
    r = ws.run("-j1")
    assert r.cmds == ["g", "u"]
    ws.logs()


DEPS_RULE = (
    "rule cc\n"
    "  command = echo $out >> cmds.log && cat $in > $out && printf '%s: %s %s\\n' $out $in \"$hdrs\" > $out.d\n"
    "  deps = gcc\n"
    "  depfile = $out.d\n"
    "  description = CC $out\n"
)


@scenario
def test_deps_gcc_records_and_deletes_depfile(ws):
    ws.write("a.c", "a\n")
    ws.write("b.c", "b\n")
    ws.write("a.h", "ah\n")
    ws.write("common.h", "ch\n")
    ws.write("build.ninja", DEPS_RULE + RULES.split("rule cc")[0] +
             "build a.o: cc a.c\n"
             "  hdrs = a.h common.h\n"
             "build b.o: cc b.c\n"
             "  hdrs = common.h\n"
             "build app: cat a.o b.o\n")
    r = ws.run("-j1")
    assert r.cmds == ["a.o", "b.o", "app"]
    assert not ws.exists("a.o.d")
    ws.logs()
    ws.run("-j1")
    ws.touch("a.h")
    r = ws.run("-j1")
    assert r.cmds == ["a.o", "app"]
    ws.touch("common.h")
    r = ws.run("-j1")
    assert r.cmds == ["a.o", "b.o", "app"]
    ws.remove("a.h")  # a vanished header is a rebuild, not an error
    r = ws.run("-j1")
    assert r.rc == 1 or r.cmds[:1] == ["a.o"]
    ws.snapshot()
    ws.logs()


@scenario
def test_deps_gcc_missing_depfile_and_deps_stale(ws):
    ws.write("a.c", "a\n")
    ws.write("build.ninja",
             "rule cc\n"
             "  command = echo $out >> cmds.log && cat $in > $out && ( test -e nodep || echo \"$out: $in\" > $out.d )\n"
             "  deps = gcc\n"
             "  depfile = $out.d\n"
             "build a.o: cc a.c\n")
    ws.write("nodep", "")
    r = ws.run("-j1")  # depfile never written: no deps recorded, not an error
    assert r.rc == 0
    r = ws.run("-j1")  # an empty deps record was written: clean
    assert r.cmds == []
    ws.touch("a.c")
    ws.remove("nodep")
    ws.run("-j1")
    r = ws.run("-j1")
    assert r.cmds == []
    ws.touch("a.o")  # output newer than its deps record -> stale deps -> rebuild
    r = ws.run("-j1")
    ws.run("-j1")
    ws.logs()


@scenario
def test_plain_depfile_without_deps(ws):
    ws.write("in", "i\n")
    ws.write("dep.h", "h\n")
    ws.write("build.ninja",
             "rule d\n"
             "  command = echo $out >> cmds.log && cat $in > $out && printf 'out: in dep.h \\\\\\n  dep$$2.h\\n' > out.d\n"
             "  depfile = out.d\n"
             "build out: d in\n")
    ws.write("dep$2.h", "h2\n")
    ws.run("-j1")
    assert ws.exists("out.d")
    ws.run("-j1")
    ws.touch("dep$2.h")
    r = ws.run("-j1")
    assert r.cmds == ["out"]
    ws.remove("out.d")  # missing depfile -> dirty
    r = ws.run("-j1")
    assert r.cmds == ["out"]
    ws.snapshot()
    ws.logs()


@scenario
def test_depfile_syntax(ws):
    """Escaped spaces, multiple rules, -MP phony rules, continuation, CRLF, $$ in a depfile."""
    for f in ("in", "sp ace.h", "x#y.h", "d$.h", "p.h", "t\\b.h"):
        ws.write(f, "x\n")
    ws.write("out.d.tmpl",
             "out: in sp\\ ace.h \\\r\n"
             "  x\\#y.h d$$.h\n"
             "out: p.h t\\b.h\n"
             "p.h:\n"
             "sp\\ ace.h:\n")
    ws.write("build.ninja",
             "rule d\n"
             "  command = echo $out >> cmds.log && cat $in > $out && cp out.d.tmpl out.d\n"
             "  depfile = out.d\n"
             "  deps = gcc\n"
             "build out: d in\n")
    ws.run("-j1")
    ws.logs()
    for f in ("sp ace.h", "x#y.h", "d$.h", "p.h", "t\\b.h"):
        ws.touch(f)
        r = ws.run("-j1")
        assert r.cmds == ["out"], f


@scenario
def test_depfile_errors(ws):
    ws.write("in", "x\n")
    ws.write("build.ninja",
             "rule d\n"
             "  command = echo $out >> cmds.log && cat $in > $out && printf \"$content\" > out.d\n"
             "  depfile = out.d\n"
             "  deps = gcc\n"
             "build out: d in\n"
             "  content = no colon here\n"
             "build out2: d in\n"
             "  content = other: in\n"
             "build out3: d in\n"
             "  content = \n")
    ws.run("-j1", "out")
    ws.run("-j1", "out2")
    ws.run("-j1", "out3")
    ws.run("-j1", "out3")
    ws.logs()


@scenario
def test_plain_depfile_errors_at_load(ws):
    ws.write("in", "x\n")
    ws.write("out", "x\n")
    ws.write("build.ninja",
             "rule d\n"
             "  command = echo $out >> cmds.log && cat $in > $out\n"
             "  depfile = out.d\n"
             "build out: d in\n")
    ws.write("out.d", "garbage without colon\n")
    ws.run("-j1")
    ws.write("out.d", "wrong: in\n")
    ws.run("-j1")
    ws.write("out.d", "")
    ws.run("-j1")


@scenario
def test_phony_mtime_propagation(ws):
    ws.write("h1", "1\n")
    ws.write("h2", "2\n")
    ws.write("build.ninja", manifest(
        "build hdrs: phony h1 h2\n"
        "build out: cat h1 | hdrs\n"
        "build always: phony\n"
        "build stamp: touch | always\n"
        "build alias: phony out\n"))
    ws.run("-j1", "alias", "stamp")
    r = ws.run("-j1", "alias", "stamp")
    assert r.cmds == ["stamp"]
    ws.touch("h2")
    r = ws.run("-j1", "alias")
    assert r.cmds == ["out"]
    ws.write("always", "")  # now exists: phony with no inputs is clean
    ws.run("-j1", "stamp")
    ws.run("-j1", "stamp")


@scenario
def test_order_only_builds_first_but_never_dirties(ws):
    ws.write("src", "s\n")
    ws.write("build.ninja", manifest(
        "build gen.h: cat src\n"
        "build out: cat src || gen.h\n"))
    r = ws.run("-j1", "out")
    assert r.cmds == ["gen.h", "out"]
    ws.remove("gen.h")
    r = ws.run("-j1", "out")
    assert r.cmds == ["gen.h"]
    ws.touch("gen.h")
    r = ws.run("-j1", "out")
    assert r.cmds == []


@scenario
def test_cycles(ws):
    ws.write("build.ninja", manifest("build all: phony a\nbuild a: cat b\nbuild b: cat c\nbuild c: cat a\n"))
    r = ws.run("-j1", "all")
    assert r.stderr == "ninja: error: dependency cycle: a -> b -> c -> a\n"
    ws.write("build.ninja", manifest("build a: cat a.d\nbuild all: phony a\n"))
    ws.write("a.d", "")
    ws.run("-j1", "all")
    ws.write("build.ninja", "rule d\n  command = touch $out\n  depfile = $out.d\nbuild a: d src\nbuild src: d\n")
    ws.write("a.d", "a: a\n")
    ws.run("-j1", "a")


@scenario
def test_missing_input_with_no_rule(ws):
    ws.write("build.ninja", manifest("build out: cat nothere.c\nbuild top: cat out\n"))
    r = ws.run("-j1", "top")
    assert r.stderr == "ninja: error: 'nothere.c', needed by 'out', missing and no known rule to make it\n"
    ws.run("-j1", "-n", "top")
    ws.run("-j1", "-k", "0", "top")


@scenario
def test_explain(ws):
    write_chain(ws)
    ws.run("-j1", "-d", "explain")
    ws.touch("b.c")
    ws.run("-j1", "-d", "explain")
    ws.run("-j1", "-d", "explain")


@scenario
def test_dirty_input_of_clean_output_with_dry_run(ws):
    write_chain(ws)
    ws.run("-j1")
    ws.touch("b.c")
    r = ws.run("-j1", "-n")
    assert r.cmds == []
    r = ws.run("-j1", "-n", "-v")
    r = ws.run("-j1")
    assert r.cmds == ["b.o", "lib", "app", "other"]
