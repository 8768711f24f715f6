"""Where headroom deliberately differs from ninja 1.13.2 (each difference is listed in
docs/differences-from-ninja.md). These run headroom alone and assert its own behaviour; the reference is
used only to state what ninja does differently, so the difference stays visible."""

import os
import re
import subprocess
from pathlib import Path

import pytest

import harness
from common import RULES
from test_logs import DEPS

# The same project test_logs.py uses: two compiles with depfiles, a link, a generated file.
def write_project(ws):
    for f, c in (("a.c", "a\n"), ("b.c", "b\n"), ("a.h", "h\n"), ("common.h", "c\n")):
        ws.write(f, c)
    ws.write("build.ninja", DEPS + RULES.split("rule cc")[0] +
             "build a.o: cc a.c\n  hdrs = a.h common.h\n"
             "build b.o: cc b.c\n  hdrs = common.h\n"
             "build app: cat a.o b.o\n"
             "build gen.txt: touch\n")


def test_v5_log_from_ninja_1_11_is_kept_without_rebuild(headroom):
    """ninja 1.13.2 discards a 1.11 log ("too old; starting over") and rebuilds everything; headroom keeps
    reading and writing v5 so both tools share the build dir with no spurious rebuild."""
    ws = headroom
    ws.require_v111()
    write_project(ws)
    ws.run("-j1", tool="v111")
    r = ws.run("-j1")
    assert r.stdout == "ninja: no work to do.\n" and r.stderr == ""
    ws.touch("common.h")
    r = ws.run("-j1")
    assert sorted(r.cmds) == ["a.o", "app", "b.o"]
    assert ws.read(".ninja_log").startswith("# ninja log v5\n")
    # ...and ninja 1.11 agrees that nothing is left to do after headroom built.
    r = ws.run("-j1", tool="v111")
    assert r.stdout == "ninja: no work to do.\n"
    ws.touch("a.h")
    r = ws.run("-j1", tool="v111")
    assert sorted(r.cmds) == ["a.o", "app"]
    r = ws.run("-j1")
    assert r.stdout == "ninja: no work to do.\n"


@pytest.mark.parametrize("version", [5, 6])
def test_old_log_versions_keep_their_version(headroom, version):
    """A v5/v6 header is read as such (not "too old"): entries whose hashes do not match (here, v7 rapidhash
    lines under a v5 header) rebuild once, the file keeps its version, and the next run is a no-op."""
    ws = headroom
    write_project(ws)
    ws.run("-j1")
    real = ws.read(".ninja_log")
    ws.write(".ninja_log", "# ninja log v%d\n" % version + "".join(real.splitlines(True)[1:]))
    r = ws.run("-j1")
    assert r.stderr == ""
    assert sorted(r.cmds) == ["a.o", "app", "b.o", "gen.txt"]
    assert ws.read(".ninja_log").startswith("# ninja log v%d\n" % version)
    r = ws.run("-j1")
    assert r.stdout == "ninja: no work to do.\n"


def test_truncated_last_log_line_does_not_rebuild_forever(headroom):
    """ninja appends the next entry onto a truncated last line, so that output rebuilds on every run from
    then on; headroom starts the next entry on a new line, so it rebuilds once."""
    ws = headroom
    write_project(ws)
    ws.run("-j1")
    real = ws.read(".ninja_log")
    ws.write(".ninja_log", real[: len(real) - 10])
    r = ws.run("-j1")
    assert r.cmds == ["gen.txt"]
    r = ws.run("-j1")
    assert r.stdout == "ninja: no work to do.\n"


def test_a_command_too_long_to_exec_is_named_and_stops_the_build(headroom):
    """ninja says "fatal: posix_spawn: Argument list too long" and exits at once; headroom names the same reason and
    stops the build (with memory control the job's launch is headroom's own, so the wording is exec's)."""
    ws = headroom
    ws.write("build.ninja", "rule big\n  command = echo " + "x" * (200 * 1024) + " > $out\nbuild a: big\n")
    for args in (["-j1"], ["-j1", "--no-memory"]):
        r = ws.run(*args, stdout="ignore", stderr="ignore")
        assert r.rc == 1
        assert "Argument list too long\n" in r.stderr, r.stderr[:300]
        assert "ninja: build stopped: command 'echo xxx" in r.stdout + r.stderr
        assert not os.path.exists(ws.path("a"))


@pytest.mark.parametrize("args", [["-h"], ["--help"], ["-Z"], ["--bogus-option"], ["-j"], ["-C"]])
def test_usage_is_ninjas_plus_headroom_section(headroom, e2e_config, args):
    """The usage text is ninja's, followed by headroom's own options."""
    ws = headroom
    ours = ws.run(*args)
    theirs = ws.run(*args, tool="ref")
    assert ours.rc == theirs.rc == 1
    assert ours.stdout == theirs.stdout == ""
    reference = theirs.stderr.replace(harness.version_of(e2e_config.ref), "1.13.2")
    assert ours.stderr.startswith(reference)
    extra = ours.stderr[len(reference):]
    assert extra.startswith("\nheadroom (memory-aware scheduling):\n")
    for option in ("--mem-budget", "--mem-reserve", "--no-memory"):
        assert option in extra


def test_help_and_options_doc_state_the_same_reserve_default(headroom):
    """-h builds its --mem-reserve default from the constants the policy applies (unit-tested in
    admission_test.cc); the option table of docs/options.md must state the same formula."""
    usage = headroom.run("-h").stderr
    # Two lines: the default, then the one under the build guard.
    stated = re.search(r"--mem-reserve=SIZE .*\n\s*\[default: (.*);\n\s*under the build guard (.*)\]\n", usage)
    assert stated, usage
    options = (Path(__file__).resolve().parents[2] / "docs" / "options.md").read_text()
    row = next(line for line in options.splitlines() if line.startswith("| `--mem-reserve=SIZE`"))
    assert f"default `{stated.group(1)}`, under the build guard `{stated.group(2)}`" in row, row


def test_corrupt_deps_record_is_cut_off_once(headroom):
    """ninja keeps a record with a bad checksum after "recovering", so it warns and rebuilds on every run;
    headroom cuts the file before the bad record: one warning, one rebuild, then a clean log."""
    ws = headroom
    write_project(ws)
    ws.run("-j1")
    data = bytearray(ws.path(".ninja_deps").read_bytes())
    data[16 + 4 + 4] ^= 0xFF  # the checksum of the first path record
    ws.path(".ninja_deps").write_bytes(bytes(data))
    r = ws.run("-j1")
    assert r.stderr == "ninja: warning: premature end of file; recovering\n"
    assert sorted(r.cmds) == ["a.o", "app", "b.o"]
    r = ws.run("-j1")
    assert r.stdout == "ninja: no work to do.\n" and r.stderr == ""


def build_compiles_on_one_cpu(ws, waiting, compiles):
    """Builds `compiles` ({output: headroom_mem}) and a quick job that is no compiler, at -j4 pinned to one CPU.
    Each compile logs when it starts and ends; those named in `waiting` end only once the quick job has run.
    Returns the run and {output: {"start": ns, "end": ns}}."""
    ws.script("bin/g++", 'echo "start $4 $(date +%s%N)" >> spans.log\n'
                         'case " ' + " ".join(waiting) + ' " in\n'
                         '  *" $4 "*) while [ ! -e quick.done ]; do sleep 0.05; done;;\nesac\n'
                         'echo "end $4 $(date +%s%N)" >> spans.log\ntouch "$4"\n')
    ws.write("build.ninja",
             "rule cc\n  command = ./bin/g++ -c $in -o $out\n"
             "rule quick\n  command = touch quick.done $out\n"
             + "".join("build %s: cc %s.cc\n  headroom_mem = %s\n" % (out, out[:-2], mem) for out, mem in compiles.items())
             + "build q: quick\n")
    for out in compiles:
        ws.write(out[:-2] + ".cc", "")
    cpu = min(os.sched_getaffinity(0))
    r = subprocess.run([ws.bins["sut"], "-j4", "-d", "explain"], cwd=ws.root, env=ws.env(), capture_output=True,
                       text=True, timeout=60, preexec_fn=lambda: os.sched_setaffinity(0, {cpu}))
    assert r.returncode == 0, r.stdout + r.stderr
    spans = {}
    for line in ws.read("spans.log").splitlines():
        what, out, ns = line.split()
        spans.setdefault(out, {})[what] = int(ns)
    assert sorted(spans) == sorted(compiles)
    return r, spans


def test_long_compiles_start_one_per_cpu_while_short_jobs_fill_j(headroom):
    """ninja at -j4 on one CPU starts three compiles at once. headroom starts a long compute-bound job (a compiler,
    nvcc or linker predicted to run 10 s or more, or, before any run of it, estimated heavy) only while fewer of
    them run than the CPUs it may use: on 2 CPUs a third nvcc compile only slowed the other two, and whichever came
    last then ran alone at the end (docs/scheduling.md, "Long compiles and the CPUs"). Other jobs still fill -j."""
    r, spans = build_compiles_on_one_cpu(headroom, ["a.o", "b.o", "c.o"], {"a.o": "2G", "b.o": "2G", "c.o": "2G"})
    # The first compile holds until the quick job ran beside it; the others start only once it ended. (Its run then
    # tells the class that these compiles are short, and short ones are not held back.)
    first = min(spans.values(), key=lambda s: s["start"])
    assert all(first["end"] <= s["start"] for s in spans.values() if s is not first), spans
    assert "ninja explain: waiting for a CPU: " in r.stderr, r.stderr
    assert "1 long compile(s) already keep the 1 CPU(s) busy" in r.stderr, r.stderr
    assert "waited for memory" not in r.stdout + r.stderr


def test_short_compiles_take_only_cpus_no_compile_keeps_busy_beside_a_long_one(headroom):
    """ninja at -j4 on one CPU starts a long compile and two short ones at once. headroom starts a short compile
    beside a long one only on a CPU that no compile keeps busy: beside it the short ones only slowed the long one,
    which the build's end waits for (docs/scheduling.md, "Short compiles fill idle CPUs"). A job that is not a
    compiler still runs beside it."""
    r, spans = build_compiles_on_one_cpu(headroom, ["long.o"], {"long.o": "2G", "s1.o": "64M", "s2.o": "64M"})
    # The long compile ends only once the quick job (no compiler: not held) ran beside it; the short ones wait.
    assert spans["long.o"]["end"] <= spans["s1.o"]["start"], spans
    assert spans["long.o"]["end"] <= spans["s2.o"]["start"], spans
    assert "1 compile(s) keep the 1 CPU(s) busy beside 1 long one(s); a short one fills a CPU when one frees" \
        in r.stderr, r.stderr
