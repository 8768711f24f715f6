"""Differential tests of the `-t` tools: every tool and option, run with reference ninja 1.13.2 and with headroom.

Builds that only prepare data (logs, depfiles) run with the reference (`prepare`), so a tool scenario compares the tool
alone; the nested-invocation scenarios run everything with the binary under test.
"""

import os
import re

import pytest

import harness
from harness import scenario

# A realistic project: compile edges with depfiles (deps = gcc), a link with an rspfile, a generator rule, implicit,
# order-only and validation inputs, a dyndep file written by the build, a subninja with its own rule, phony aliases.
PROJECT = """\
ninja_required_version = 1.10
cflags = -O2
rule cc
  command = printf '%s: %s %s\\n' $out $in hdr.h > $out.d && cat $in > $out
  depfile = $out.d
  deps = gcc
  description = CC $out $$ ${cflags}
rule link
  command = xargs cat < $out.rsp > $out
  rspfile = $out.rsp
  rspfile_content = $in_newline
  description = LINK $out
rule gen
  command = touch $out
  generator = 1
rule stamp
  command = touch $out
rule dd
  command = printf 'ninja_dyndep_version = 1\\nbuild dyn.out | dyn.imp: dyndep\\n' > $out
build gen.h: gen gen.in
build a.o: cc a.c | gen.h || order.stamp
build b.o: cc b.c
build order.stamp: stamp
build app: link a.o b.o |@ check.stamp
build check.stamp: stamp a.o
build dyn.dd: dd
build dyn.out: stamp || dyn.dd
  dyndep = dyn.dd
build all: phony app dyn.out
subninja sub.ninja
default all
"""

SUBNINJA = """\
rule subcc
  command = cat $in > $out
build sub/x.o: subcc sub/x.c
build sub.stamp: phony sub/x.o
"""

SOURCES = {"a.c": "a\n", "b.c": "b\n", "hdr.h": "h\n", "gen.in": "g\n", "sub/x.c": "x\n"}


def write_project(ws, manifest=PROJECT):
    for path, text in SOURCES.items():
        ws.write(path, text)
    ws.write("sub.ninja", SUBNINJA)
    ws.write("build.ninja", manifest)


def prepare(ws, *args):
    """Build with the reference ninja (not recorded): the logs and outputs the tools then read."""
    result = ws.run("-j1", *args, tool="ref", record=False)
    assert result.rc == 0, result


def built_project(ws):
    write_project(ws)
    prepare(ws, "all", "sub.stamp")


def run_each(ws, *commands, **kwargs):
    for command in commands:
        ws.run(*command.split(), **kwargs)


POINTER_RE = re.compile(r"0x[0-9a-f]+")


def record_graph(ws, *args):
    """graph identifies nodes by address: rename addresses by first appearance before comparing."""
    result = ws.run("-t", "graph", *args, record=False)
    names = {}
    stdout = POINTER_RE.sub(lambda m: names.setdefault(m.group(0), "n%d" % len(names)), result.stdout)
    ws.record("graph", {"args": args, "rc": result.rc, "stdout": stdout, "stderr": result.stderr})


# ---------------------------------------------------------------------------------------------------------------------
# Tool selection, usage texts and option errors


@scenario
def test_list_and_unknown_tool_hints(ws):
    write_project(ws)
    run_each(ws, "-t list", "-t list extra", "-t lst", "-t cleen", "-t urtl", "-t lis", "-t LIST", "-t compdb-target",
             "-t recompac", "-t msvc", "-t wincodepage")


@scenario
def test_empty_tool_name_is_unknown(ws):
    write_project(ws)
    ws.run("-t", "")
    ws.snapshot()  # nothing built


@scenario
def test_usage_texts_and_invalid_options(ws):
    write_project(ws)
    for tool in ("clean", "commands", "compdb", "compdb-targets", "inputs", "multi-inputs", "restat", "rules"):
        ws.run("-t", tool, "-h")
        ws.run("-t", tool, "-z")
    run_each(ws, "-t inputs --bogus", "-t inputs --help", "-t multi-inputs --help", "-t multi-inputs -d",
             "-t multi-inputs --delimiter", "-t commands a.o -s -x")
    ws.snapshot()  # nothing was touched


@scenario
def test_tools_print_no_entering_directory(ws):
    write_project(ws)
    ws.write("outside/keep", "")
    run_each(ws, "-C .. -t targets", "-C .. -t rules", "-C .. -t compdb stamp", cwd="outside")


# ---------------------------------------------------------------------------------------------------------------------
# targets, rules, commands


@scenario
def test_targets_modes(ws):
    write_project(ws)
    run_each(ws, "-t targets", "-t targets depth", "-t targets depth 0", "-t targets depth 2", "-t targets depth x",
             "-t targets depth 1 extra", "-t targets rule", "-t targets rule cc", "-t targets rule link",
             "-t targets rule subcc", "-t targets rule nope", "-t targets rule cc extra", "-t targets all",
             "-t targets all extra", "-t targets bogus", "-t targets rul", "-t targets -h")


@scenario
def test_targets_multi_output_edges_and_sources(ws):
    ws.write("build.ninja", "rule r\n  command = touch $out\n"
             "build z.out y.out | w.imp: r q.src p.src q.src | n.imp || m.oo |@ v.val\n"
             "build b.out: r z.out q.src\nbuild v.val: r\nbuild a.out: r k.src\n")
    run_each(ws, "-t targets", "-t targets rule", "-t targets rule r", "-t targets all", "-t targets depth 0")


@scenario
def test_targets_empty_and_cyclic_manifests(ws):
    ws.write("empty.ninja", "")
    ws.write("cycle.ninja", "rule r\n  command = x\nbuild a: r b\nbuild b: r a\n")
    run_each(ws, "-f empty.ninja -t targets", "-f empty.ninja -t targets all", "-f cycle.ninja -t targets",
             "-f cycle.ninja -t targets depth 0", "-f cycle.ninja -t targets all")


@scenario
def test_rules_with_descriptions(ws):
    write_project(ws)
    ws.write("r.ninja", "rule zed\n  command = z\n  description = Zed $out ${in} $$ done$: x$ y\n"
             "rule alpha\n  command = a\nrule empty\n  command = e\n  description =\n"
             "rule multi\n  command = m\n  description = first $\n      second\nsubninja sub.ninja\n")
    run_each(ws, "-t rules", "-t rules -d", "-t rules extra -d", "-f r.ninja -t rules -d", "-f r.ninja -t rules")


@scenario
def test_commands(ws):
    write_project(ws)
    run_each(ws, "-t commands", "-t commands -s", "-t commands app dyn.out", "-t commands -s app a.o",
             "-t commands all -s", "-t commands a.c", "-t commands a.c^", "-t commands gen.in^",
             "-t commands ./sub/../a.o", "-t commands sub.stamp", "-t commands nope", "-t commands clean",
             "-t commands help", "-t commands a.o -- -s")
    ws.run("-t", "commands", "")


# ---------------------------------------------------------------------------------------------------------------------
# inputs, multi-inputs


ODD_NAMES = """\
rule r
  command = touch $out
build out$ 1: r in$ sp "q" it's $$x a&b ok-_+./path a@b a=b a$:b a,b a%b a~b
build out2: r out$ 1 |@ val
build val: r
"""


@scenario
def test_inputs(ws):
    write_project(ws)
    run_each(ws, "-t inputs", "-t inputs app", "-t inputs -d app", "-t inputs --dependency-order app",
             "-t inputs -d a.o app", "-t inputs -d app a.o", "-t inputs -0 a.o b.o", "-t inputs --print0 a.o",
             "-t inputs --p a.o", "-t inputs all sub.stamp", "-t inputs dyn.out check.stamp a.c",
             "-t inputs a.c", "-t inputs nope", "-t inputs b.o -- -d")


@scenario
def test_inputs_shell_escaping(ws):
    ws.write("build.ninja", ODD_NAMES)
    run_each(ws, "-t inputs out2", "-t inputs -E out2", "-t inputs --no-shell-escape -0 out2", "-t inputs -d out2",
             "-t inputs -dE out2", "-t commands out2")


PHONY_ALIASES = """\
rule r
  command = touch $out
build p: phony a.c
build q: phony
build x: r p q b.c | p2 || q2
build p2: phony r.o
build r.o: r r.c
build q2: phony
build y: r x
"""


@scenario
def test_inputs_skip_phony_aliases(ws):
    ws.write("build.ninja", PHONY_ALIASES)
    run_each(ws, "-t inputs y", "-t inputs -d y", "-t multi-inputs y", "-t inputs x p", "-t inputs p")


@scenario
def test_multi_inputs(ws):
    write_project(ws)
    run_each(ws, "-t multi-inputs", "-t multi-inputs app a.o", "-t multi-inputs -d ;; -0 dyn.out b.o",
             "-t multi-inputs --delimiter= b.o a.c", "-t multi-inputs --delimiter=:: b.o", "-t multi-inputs b.o -d:",
             "-t multi-inputs ./b.o b.o", "-t multi-inputs nope")
    ws.write("odd.ninja", ODD_NAMES)
    ws.run("-f", "odd.ninja", "-t", "multi-inputs", "out2")


# ---------------------------------------------------------------------------------------------------------------------
# graph, query


@scenario
def test_graph(ws):
    built_project(ws)
    record_graph(ws)
    record_graph(ws, "b.o")
    record_graph(ws, "all", "sub.stamp", "check.stamp")
    ws.run("-t", "graph", "nope")
    ws.write("g.ninja", "rule r\n  command = touch $out\n"
             "build out$ 1 o2: r in$ sp \"q\" a\\b | imp || oo |@ val\nbuild x: r || oo\nbuild y: r | imp\n"
             "build z: phony x\nbuild w: r\n")
    result = ws.run("-f", "g.ninja", "-t", "graph", "out 1", "x", "y", "z", "w", record=False)
    names = {}
    ws.record("graph-odd", POINTER_RE.sub(lambda m: names.setdefault(m.group(0), "n%d" % len(names)), result.stdout))


@scenario
def test_graph_dyndep_warnings(ws):
    built_project(ws)
    ws.remove("dyn.dd")
    record_graph(ws, "dyn.out")
    ws.write("dyn.dd", "garbage\n")
    record_graph(ws, "dyn.out")


@scenario
def test_query(ws):
    built_project(ws)
    run_each(ws, "-t query a.o app check.stamp dyn.out a.c hdr.h", "-t query", "-t query nope", "-t query a.c^",
             "-t query a.o nope", "-t query dyn.imp")
    ws.write("g.ninja", "rule r\n  command = touch $out\n"
             "build out$ 1 o2: r in$ sp \"q\" a\\b | imp || oo |@ val\nbuild x: r || oo\n")
    ws.run("-f", "g.ninja", "-t", "query", "in sp", "oo", "val", "o2")


DYNDEP_INPUTS = """\
rule touch
  command = touch $out
build out: touch in || dd
  dyndep = dd
build dd: phony
build user: touch dimp
build dimp: touch
"""


@scenario
def test_query_loads_dyndep(ws):
    ws.write("build.ninja", DYNDEP_INPUTS)
    ws.write("in", "")
    ws.write("dd", "ninja_dyndep_version = 1\nbuild out | oimp: dyndep | dimp\n")
    run_each(ws, "-t query out", "-t query dimp", "-t query oimp", "-t inputs out", "-t targets all")
    ws.remove("dd")
    ws.run("-t", "query", "out")
    ws.write("dd", "junk\n")
    ws.run("-t", "query", "out")


# ---------------------------------------------------------------------------------------------------------------------
# deps, missingdeps


@scenario
def test_deps(ws):
    built_project(ws)
    run_each(ws, "-t deps", "-t deps a.o app a.c", "-t deps nope", "-t deps b.o")
    ws.touch("b.o")  # newer than recorded: STALE
    ws.run("-t", "deps", "b.o")
    ws.remove("b.o")  # missing: STALE
    ws.run("-t", "deps", "b.o", "a.o")
    # An output whose edge no longer records deps drops out of the unfiltered listing.
    ws.write("build.ninja", PROJECT.replace("build b.o: cc b.c", "build b.o: stamp b.c"))
    run_each(ws, "-t deps", "-t deps b.o")


MISSING_DEPS = """\
rule cc
  command = printf '%s: %s %s\\n' $out "$in" "$hdrs" > $out.d && cat $in > $out
  depfile = $out.d
  deps = gcc
rule plaincc
  command = printf '%s: %s %s\\n' $out "$in" "$hdrs" > $out.d && cat $in > $out
  depfile = $out.d
rule gen
  command = touch $out
build gen.h: gen
build gen2.h: gen
build a.o: cc a.c | gen.h
  hdrs = gen.h
build b.o: cc b.c
  hdrs = gen.h gen2.h
build c.o: cc c.c
  hdrs = gen2.h
build d.o: plaincc d.c
  hdrs = gen.h
build e.o: cc e.c
  hdrs = gen.h build.ninja
build all: phony a.o b.o c.o d.o e.o
"""


@scenario
def test_missingdeps(ws):
    for name in "abcde":
        ws.write(name + ".c", name + "\n")
    ws.write("build.ninja", MISSING_DEPS)
    prepare(ws)
    # Which generated input is reported first depends on edge addresses in ninja: compare lines sorted.
    ws.run("-t", "missingdeps", stdout="sorted")
    run_each(ws, "-t missingdeps a.o", "-t missingdeps e.o", "-t missingdeps d.o", "-t missingdeps nope")
    ws.run("-t", "missingdeps", "b.o", "all", stdout="sorted")


# ---------------------------------------------------------------------------------------------------------------------
# compdb, compdb-targets


COMPDB = """\
rule at
  command = tool @$out.rsp --flag
  rspfile = $out.rsp
  rspfile_content = $in_newline -DX="a b"
rule ff
  command = tool -f $out.rsp
  rspfile = $out.rsp
  rspfile_content = $in
rule opt
  command = tool --option-file=$out.rsp end
  rspfile = $out.rsp
  rspfile_content = $in_newline
rule plain
  command = tool $out.rsp
  rspfile = $out.rsp
  rspfile_content = $in
rule twof
  command = tool -f xx -f $out.rsp
  rspfile = $out.rsp
  rspfile_content = $in
rule norsp
  command = tool "q\\ b\ttab" $in
rule ctl
  command = printf '$ctl'
rule none
  command = nothing
build a: at x.c y.c
build b: ff x.c y.c
build c: opt x.c y.c
build d: plain x.c
build e: twof x.c
build f: norsp x"q.c
build h: none
build p: phony a
"""


@scenario
def test_compdb(ws):
    ws.write("build.ninja", COMPDB + "build g: ctl x.c\n  ctl = \x01\x1f\x7f\x08\x0c\t/\u00e9\\\\ \"\n")
    run_each(ws, "-t compdb", "-t compdb -x", "-t compdb at plain -x", "-t compdb -x twof at", "-t compdb plain plain",
             "-t compdb zzz", "-t compdb phony", "-t compdb e")
    ws.write("none.ninja", "rule r\n  command = x\nbuild o: r\n")
    ws.write("empty.ninja", "")
    run_each(ws, "-f none.ninja -t compdb", "-f empty.ninja -t compdb")


@scenario
def test_compdb_directory_is_escaped_cwd(ws):
    ws.write('we"ird dir/build.ninja', "rule r\n  command = x $in\nbuild i: r x\n")
    ws.run("-C", 'we"ird dir', "-t", "compdb")
    ws.run("-t", "compdb", cwd='we"ird dir')


@scenario
def test_compdb_project(ws):
    write_project(ws)
    run_each(ws, "-t compdb", "-t compdb -x", "-t compdb link stamp nope", "-t compdb -x link")


@scenario
def test_compdb_targets(ws):
    write_project(ws)
    run_each(ws, "-t compdb-targets", "-t compdb-targets nope", "-t compdb-targets app all", "-t compdb-targets b.o a.o",
             "-t compdb-targets b.o b.o", "-t compdb-targets -x app", "-t compdb-targets app -x",
             "-t compdb-targets order.stamp", "-t compdb-targets a.c", "-t compdb-targets ./sub/../a.c",
             "-t compdb-targets b.c^", "-t compdb-targets clean")
    ws.run("-t", "compdb-targets", "")


# ---------------------------------------------------------------------------------------------------------------------
# clean


@scenario
def test_clean_all(ws):
    built_project(ws)
    ws.write("a.o.d", "")  # depfiles and rspfiles go too
    ws.write("app.rsp", "")
    ws.write("dyn.imp", "")  # declared by the dyndep file only
    ws.run("-t", "clean")
    ws.snapshot()


@scenario
def test_clean_verbose_dry_run_and_generator(ws):
    built_project(ws)
    ws.write("app.rsp", "")
    ws.write("dyn.imp", "")
    run_each(ws, "-n -t clean", "-v -n -t clean", "--quiet -n -t clean", "-t clean -v")
    ws.snapshot("after dry runs")
    ws.run("-v", "-t", "clean")
    ws.snapshot("after clean")
    prepare(ws, "all", "sub.stamp")
    ws.run("-v", "-t", "clean", "-g")
    ws.snapshot("after clean -g")
    ws.run("-t", "clean")  # nothing left
    ws.run("-C", ".", "-t", "clean")


@scenario
def test_clean_targets(ws):
    built_project(ws)
    ws.run("-v", "-t", "clean", "app")
    ws.snapshot()
    prepare(ws, "all", "sub.stamp")
    ws.run("-t", "clean", "sub.stamp", "nope", "dyn.out", "gen.in")
    ws.snapshot()
    run_each(ws, "-t clean nop", "-t clean -- -g", "-t clean a.c^")
    ws.run("-t", "clean", "")


MULTI_OUTPUT = """\
rule r
  command = touch $out
  depfile = $out.d
rule g
  command = touch $out
  generator = 1
  rspfile = $out.rsp
  rspfile_content = x
build m1 m2 | m3: r s1 | gout || oo
build gout: g
build oo: r
build top: phony m1
"""
MULTI_FILES = ("m1", "m2", "m3", "gout", "oo", "m1.d", "m2.d", "gout.rsp", "oo.d", "m1 m2.d", "top")


def touch_all(ws, names=MULTI_FILES):
    for name in names:
        ws.write(name, "")


@scenario
def test_clean_rules_and_multi_output_edges(ws):
    ws.write("build.ninja", MULTI_OUTPUT)
    touch_all(ws)
    ws.run("-v", "-t", "clean", "-r", "r", "g", "nope")
    ws.snapshot()
    touch_all(ws)
    run_each(ws, "-t clean -r", "-t clean -r -g", "-t clean -g -r g", "-t clean -rg r", "-t clean -r phony")
    ws.snapshot()
    touch_all(ws)
    ws.run("-v", "-t", "clean", "top")
    ws.snapshot()
    touch_all(ws)
    ws.run("-v", "-t", "clean", "-g")
    ws.snapshot()


@scenario
def test_clean_rules_match_subninja_rules_by_name(ws):
    ws.write("build.ninja", "rule r\n  command = touch $out\nbuild top.o: r\nsubninja s.ninja\n")
    ws.write("s.ninja", "rule r\n  command = touch $out\nrule only\n  command = touch $out\nbuild s.o: r\n"
             "build s2.o: only\n")
    touch_all(ws, ("top.o", "s.o", "s2.o"))
    ws.run("-v", "-t", "clean", "-r", "r", "only")
    ws.snapshot()
    run_each(ws, "-t rules", "-t targets rule r", "-t targets rule only")


@scenario
def test_clean_dyndep_added_inputs_and_outputs(ws):
    ws.write("build.ninja", DYNDEP_INPUTS)
    ws.write("dd", "ninja_dyndep_version = 1\nbuild out | oimp: dyndep | dimp\n")
    touch_all(ws, ("in", "out", "dimp", "oimp"))
    ws.run("-v", "-t", "clean", "out")
    ws.snapshot()
    touch_all(ws, ("out", "dimp", "oimp"))
    ws.run("-v", "-t", "clean", "-r", "touch")
    ws.snapshot()


@scenario
def test_clean_ignores_broken_dyndep_files(ws):
    built_project(ws)
    ws.write("dyn.dd", "junk\n")
    ws.run("-t", "clean")
    ws.snapshot()
    prepare(ws, "all")
    ws.remove("dyn.dd")
    ws.run("-t", "clean")
    ws.snapshot()


@scenario
def test_clean_directories(ws):
    ws.write("build.ninja", "rule r\n  command = touch $out\nbuild full: r\nbuild empty: r\nbuild file: r\n")
    ws.write("full/x", "")
    os.mkdir(ws.path("empty"))
    ws.write("file", "")
    ws.run("-t", "clean")
    ws.snapshot()


# ---------------------------------------------------------------------------------------------------------------------
# cleandead


CLEANDEAD_BEFORE = """\
rule touch
  command = touch $out
rule cpdd
  command = cp dd.src dd
build a: touch
build b: touch
build c: touch
build d: touch
build dd: cpdd dd.src
build e: touch || dd
  dyndep = dd
build src: touch
"""
CLEANDEAD_AFTER = """\
rule touch
  command = touch $out
rule cpdd
  command = cp dd.src dd
build a: touch src
build c: phony
build dd: cpdd dd.src
build e: touch || dd
  dyndep = dd
"""


def cleandead_project(ws):
    ws.write("dd.src", "ninja_dyndep_version = 1\nbuild e | eimp: dyndep\n")
    ws.write("build.ninja", CLEANDEAD_BEFORE)
    prepare(ws)
    ws.write("build.ninja", CLEANDEAD_AFTER)


@scenario
def test_cleandead(ws):
    cleandead_project(ws)
    ws.run("-n", "-t", "cleandead", stdout="sorted")  # log order in ninja is hash order
    ws.snapshot("after dry run")
    ws.run("-v", "-t", "cleandead", stdout="sorted")
    ws.snapshot("after cleandead")
    ws.logs()
    ws.run("-t", "cleandead", "-h")


@scenario
def test_cleandead_without_dyndep_file(ws):
    cleandead_project(ws)
    ws.remove("dd")
    ws.run("-t", "cleandead")
    ws.snapshot()


@scenario
def test_cleandead_without_log(ws):
    ws.write("build.ninja", CLEANDEAD_AFTER)
    ws.run("-t", "cleandead")
    ws.snapshot()


# ---------------------------------------------------------------------------------------------------------------------
# restat, recompact


def record_log_mtimes(ws, label="log mtimes", only=None):
    """Each .ninja_log entry (or those in `only`): whether its mtime is the file's current one (0 when missing).

    A build records the command's start time, which may or may not equal the output's mtime: observe only entries a
    restat has just rewritten, or entries whose answer does not depend on timing."""
    bl = ws.path(".ninja_log")
    if not bl.exists():
        ws.record(label, None)
        return
    lines = bl.read_text().splitlines()
    out = [lines[0]]
    for line in lines[1:]:
        start, end, mtime, path, h = line.split("\t")
        if only is not None and path not in only:
            continue
        actual = ws.mtime(path) if ws.exists(path) else 0
        out.append((path, h, "current" if int(mtime) == actual else "recorded 0" if mtime == "0" else "stale"))
    ws.record(label, out)


@scenario
def test_restat(ws):
    built_project(ws)
    ws.touch("a.o", "b.o")
    ws.remove("order.stamp")
    ws.run("-t", "restat", "b.o", "nothere")  # only the named outputs
    record_log_mtimes(ws, "after named restat", only=("b.o", "a.o", "order.stamp"))
    ws.run("-n", "-t", "restat")  # a dry run still rewrites the log
    record_log_mtimes(ws, "after dry restat")
    ws.touch("b.o")
    ws.run("-t", "restat")
    record_log_mtimes(ws, "after restat")
    assert not ws.exists(".ninja_log.restat")
    ws.snapshot()


@scenario
def test_restat_does_not_read_the_manifest(ws):
    ws.write("build.ninja", "this is not a manifest\n")
    ws.write("out", "")
    ws.write(".ninja_log", "# ninja log v7\n0\t1\t5\tout\t0123456789abcdef\n")
    run_each(ws, "-t restat", "-f missing.ninja -t restat")
    record_log_mtimes(ws)
    ws.write("sub/.ninja_log", "# ninja log v7\n0\t1\t5\tout\t0123456789abcdef\n")
    ws.write("sub/out", "")
    ws.run("-C", "sub", "-t", "restat")
    ws.record("sub log", ws.read("sub/.ninja_log").split("\t")[2] == str(ws.mtime("sub/out")))


@scenario
def test_restat_missing_empty_and_unreadable_logs(ws):
    ws.run("-t", "restat")
    assert not ws.exists(".ninja_log")
    ws.write(".ninja_log", "")
    ws.run("-t", "restat")
    ws.record("empty log becomes", ws.read(".ninja_log"))
    for header in ("# ninja log v4\n", "garbage\n", "# ninja log v99\n"):
        ws.write(".ninja_log", header + "1\t2\t3\ta\td91ff1f2760e13e4\n")
        ws.run("-t", "restat")  # silently discarded
        ws.record(header, ws.exists(".ninja_log"))


@scenario
def test_recompact(ws):
    built_project(ws)
    ws.run("-t", "recompact")
    ws.logs()
    # Outputs the manifest dropped and whose files are gone leave both logs on recompaction.
    ws.write("build.ninja", PROJECT.replace("build b.o: cc b.c\n", "").replace("link a.o b.o", "link a.o"))
    ws.remove("b.o")
    ws.run("-t", "recompact")
    ws.logs()


@scenario
def test_recompact_without_logs(ws):
    write_project(ws)
    ws.run("-t", "recompact")
    ws.snapshot()


@scenario
def test_recompact_discards_too_old_log(ws):
    write_project(ws)
    ws.write(".ninja_log", "# ninja log v4\n1\t2\t3\ta\tcmd\n")
    ws.run("-t", "recompact")
    ws.record("log kept", ws.exists(".ninja_log"))


@scenario
def test_recompact_creates_builddir(ws):
    ws.write("build.ninja", "builddir = out/logs\nrule r\n  command = touch $out\nbuild x: r\n")
    ws.run("-t", "recompact")
    ws.snapshot()
    ws.run("-n", "-t", "recompact")


# ---------------------------------------------------------------------------------------------------------------------
# Nested invocations: tools run by a build step of a running build (CMake/Meson regeneration, `clean` targets).


NESTED = """\
rule r
  command = touch $out
rule nested
  command = "$NINJA_UNDER_TEST" -t restat && "$NINJA_UNDER_TEST" -t cleandead && "$NINJA_UNDER_TEST" -t recompact && "$NINJA_UNDER_TEST" -t clean stale.o > nested.txt && touch $out
build first.o: r
build stale.o: r
build nested.stamp: nested first.o
build last.o: r nested.stamp
"""


@scenario
def test_nested_tools_during_a_build(ws):
    ws.write("build.ninja", NESTED)
    env = {"NINJA_UNDER_TEST": ws.bins["sut"]}
    ws.run("-j1", "first.o", "stale.o", env=env)
    ws.run("-j1", env=env)
    ws.snapshot()
    ws.logs()


# ---------------------------------------------------------------------------------------------------------------------
# headroom-only behaviour (not differential): browse is refused clearly, urtle prints something.


def _headroom_or_skip(e2e_config):
    if e2e_config.self_mode:
        pytest.skip("headroom-specific behaviour")
    if not os.access(e2e_config.sut, os.X_OK):
        pytest.fail("headroom binary %r does not exist" % e2e_config.sut)
    return e2e_config.sut


def test_browse_is_refused_clearly(tmp_path, e2e_config):
    import subprocess

    binary = _headroom_or_skip(e2e_config)
    (tmp_path / "build.ninja").write_text("rule r\n  command = touch $out\nbuild x: r\n")
    p = subprocess.run(["ninja", "-t", "browse"], executable=binary, cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 1
    assert p.stdout == ""
    assert p.stderr.startswith("ninja: error: ") and "not supported in headroom" in p.stderr


def test_the_readme_names_every_ninja_tool_headroom_refuses(tmp_path, e2e_config):
    """The README's promise about ninja's tools: each tool of ninja 1.13.2's `-t list` that headroom refuses is
    named there as the exception."""
    import re
    import subprocess
    from pathlib import Path

    binary = _headroom_or_skip(e2e_config)
    (tmp_path / "build.ninja").write_text("rule r\n  command = touch $out\nbuild x: r\n")
    listed = subprocess.run([e2e_config.ref, "-t", "list"], cwd=tmp_path, capture_output=True, text=True).stdout
    tools = [line.split()[0] for line in listed.splitlines()[1:] if line.strip()]
    assert "browse" in tools and "query" in tools
    refused = []
    for tool in tools:
        p = subprocess.run(["ninja", "-t", tool, "--help"], executable=binary, cwd=tmp_path, capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=30)
        if "not supported in headroom" in p.stderr:
            refused.append(tool)
    assert refused == ["browse"]
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    paragraph = next(p for p in readme.split("\n\n") if "answers to the name `ninja`" in p)
    assert not re.search(r"every flag and `-t` tool", paragraph), paragraph
    for tool in refused:
        assert "`-t %s`" % tool in paragraph, paragraph


def test_urtle_and_hidden_memstats(tmp_path, e2e_config):
    import subprocess

    binary = _headroom_or_skip(e2e_config)
    p = subprocess.run(["ninja", "-t", "urtle"], executable=binary, cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() and p.stderr == ""
    listed = subprocess.run(["ninja", "-t", "list"], executable=binary, cwd=tmp_path, capture_output=True, text=True)
    assert "memstats" not in listed.stdout and "urtle" not in listed.stdout
