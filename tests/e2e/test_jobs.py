"""Area 3: running jobs (output, failures, exit codes, -k, -n, -l, -j, rspfiles, directories, interrupts)."""

import signal
import sys

import pytest

from common import RULES, manifest
from harness import scenario


@scenario
def test_job_output_printed_after_status_line(ws):
    ws.write("build.ninja",
             "rule talk\n"
             "  command = echo $out >> cmds.log && echo out-$out && echo err-$out 1>&2 && echo more-$out && touch $out\n"
             "  description = TALK $out\n"
             "rule quiet\n"
             "  command = echo $out >> cmds.log && printf 'no newline' && touch $out\n"
             "build a: talk\n"
             "build b: quiet a\n"
             "build c: talk b\n")
    r = ws.run("-j1")
    assert r.stdout.startswith("[1/3] TALK a\nout-a\nerr-a\nmore-a\n")
    assert r.stderr == ""
    ws.run("-j1")


@scenario
def test_verbose_and_empty_description_show_command(ws):
    ws.write("build.ninja",
             "rule d\n"
             "  command = echo $out >> cmds.log && touch $out\n"
             "  description = D $out\n"
             "rule nod\n"
             "  command = echo $out >> cmds.log && touch $out\n"
             "  description =\n"
             "build a: d\n"
             "build b: nod\n")
    ws.run("-j1", "a", "b")
    ws.remove("a")
    ws.remove("b")
    ws.run("-j1", "-v", "a", "b")
    ws.remove("a")
    ws.run("-j1", "--verbose", "a")


@scenario
def test_quiet_hides_status_but_not_output(ws):
    ws.write("build.ninja",
             "rule r\n"
             "  command = echo $out >> cmds.log && echo hello-$out && touch $out\n"
             "build a: r\nbuild b: r a\n")
    r = ws.run("-j1", "--quiet")
    assert r.stdout == "hello-a\nhello-b\n"
    r = ws.run("-j1", "--quiet")
    assert r.stdout == ""


@scenario
def test_failure_block_and_exit_code(ws):
    ws.write("build.ninja",
             "rule fail\n"
             "  command = echo $out >> cmds.log && echo some output && echo oops >&2 && exit $code\n"
             "  description = FAIL $out\n"
             + RULES +
             "build ok: touch\n"
             "build bad: fail ok\n"
             "  code = 3\n"
             "build after: cat bad\n")
    r = ws.run("-j1", "after")
    assert r.rc == 3
    assert "FAILED: [code=3] bad \n" in r.stdout
    assert r.stdout.endswith("ninja: build stopped: subcommand failed.\n")
    assert not ws.exists("after")
    ws.logs()
    r = ws.run("-j1", "after")  # the failed edge is retried, the successful one is not
    assert r.cmds == ["bad"]


@pytest.mark.parametrize("command", ["exit 1", "exit 2", "exit 124", "exit 255", "nosuchcommand_xyz",
                                     "kill -9 $$$$", "kill -TERM $$$$", "exit 130"])
def test_job_exit_status_propagation(differential, command):
    def sc(ws):
        ws.write("build.ninja",
                 "rule fail\n"
                 "  command = echo $out >> cmds.log && touch $out.partial && %s\n"
                 "build multi out2 | implicit: fail\n" % command)
        ws.run("-j1")
        ws.snapshot()
        ws.logs()
    differential(sc)


@scenario
def test_keep_going(ws):
    ws.write("build.ninja",
             "rule fail\n"
             "  command = echo $out >> cmds.log && exit 1\n"
             + RULES +
             "build f1: fail\n"
             "build f2: fail\n"
             "build f3: fail\n"
             "build ok1: touch\n"
             "build dep: cat f1 ok1\n"
             "build all: phony f1 f2 f3 ok1 dep\n")
    r = ws.run("-j1", "all")
    assert r.cmds == ["f1"] or len(r.cmds) == 1
    ws.run("-j1", "-k", "2", "all")
    r = ws.run("-j1", "-k", "0", "all")
    assert "ok1" in r.cmds or r.cmds.count("ok1") == 0
    ws.run("-j1", "-k", "-1", "all")
    ws.run("-j1", "-k", "100", "f2", "f3")
    ws.run("-j1", "-k", "1", "f2", "f3")
    ws.run("-j1", "-k0", "dep")


@scenario
def test_dry_run(ws):
    ws.write("src", "s\n")
    ws.write("build.ninja", manifest(
        "build a: cat src\n"
        "build b: cat a\n"
        "rule fail\n"
        "  command = exit 1\n"
        "build c: fail b\n"))
    r = ws.run("-j1", "-n", "b")
    assert r.cmds == [] and not ws.exists("a") and not ws.exists(".ninja_log")
    ws.run("-j1", "-n", "c")  # commands never run, so nothing fails
    ws.run("-j1", "-n", "-v", "c")
    ws.run("-j1", "b")
    ws.run("-j1", "-n", "b")
    ws.snapshot()


@scenario
def test_load_limit_flag(ws):
    ws.write("build.ninja", manifest("build a: touch\nbuild b: touch\n"))
    ws.run("-j1", "-l", "1000", "a")
    ws.run("-j1", "-l", "0", "b")
    ws.run("-j1", "-l", "-1.5")
    ws.run("-j1", "-l", "abc")
    ws.run("-j1", "-l", "2.5x")


@scenario
def test_parallel_jobs_run_concurrently(ws):
    """Two jobs wait for each other; -j2 and -j0 must run them together (a -j1 run would time out)."""
    ws.script("barrier.sh",
              'touch "$1.started"\n'
              'n=0\n'
              'while [ ! -e "$2.started" ]; do\n'
              '  n=$((n+1)); [ $n -gt 20000 ] && { echo timeout; exit 9; }\n'
              '  sleep 0.001\n'
              'done\n'
              'echo "$1" >> cmds.log\n'
              'touch "$1"\n')
    ws.write("build.ninja",
             "rule r\n"
             "  command = ./barrier.sh $out $peer\n"
             "  description = R\n"
             "build a: r\n  peer = b\n"
             "build b: r\n  peer = a\n")
    r = ws.run("-j2")
    assert r.rc == 0 and r.stdout == "[1/2] R\n[2/2] R\n"
    for f in ("a", "b", "a.started", "b.started"):
        ws.remove(f)
    r = ws.run("-j0")
    assert r.rc == 0
    ws.logs(sort=True)


@scenario
def test_rspfile_lifecycle(ws):
    ws.write("x.o", "x\n")
    ws.write("y.o", "y\n")
    m = ("rule link\n"
         "  command = echo $out >> cmds.log && cat $out.rsp > $out && cp $out.rsp $out.seen && $post\n"
         "  rspfile = $out.rsp\n"
         "  rspfile_content = $in $extra\n"
         "build app: link x.o y.o\n"
         "  post = true\n"
         "  extra = E1\n"
         "build bad: link x.o\n"
         "  post = false\n")
    ws.write("build.ninja", m)
    r = ws.run("-j1", "app")
    assert not ws.exists("app.rsp") and ws.read("app.seen") == "x.o y.o E1"
    ws.run("-j1", "bad")
    assert ws.exists("bad.rsp")  # kept on failure
    ws.run("-j1", "app")
    ws.write("build.ninja", m.replace("E1", "E2"))  # rspfile content is part of the command hash
    r = ws.run("-j1", "app")
    assert r.cmds == ["app"]
    ws.run("-j1", "-d", "keeprsp", "app")
    ws.remove("app")
    ws.run("-j1", "-d", "keeprsp", "app")
    assert ws.exists("app.rsp")
    ws.snapshot()
    ws.logs()


@scenario
def test_output_and_depfile_dirs_created(ws):
    ws.write("src.c", "s\n")
    ws.write("build.ninja",
             "rule cc\n"
             "  command = echo $out >> cmds.log && cat $in > $out && echo \"$out: $in\" > $depfile\n"
             "  depfile = deps/sub/$out.d\n"
             "rule plain\n"
             "  command = echo $out >> cmds.log && cat $in > $out && echo \"$out: $in\" > $depfile\n"
             "  depfile = pdeps/x/$out.d\n"
             "build obj/a/b/x.o | obj/imp/dir/y: cc src.c\n"
             "  deps = gcc\n"
             "build out/z: plain src.c\n")
    ws.run("-j1")
    ws.snapshot()
    ws.logs()


@scenario
def test_multiple_outputs_logged(ws):
    ws.write("build.ninja",
             "rule two\n"
             "  command = echo $out >> cmds.log && touch $out imp\n"
             "build o1 o2 | imp: two\n")
    ws.run("-j1")
    ws.run("-j1")
    ws.remove("imp")
    ws.run("-j1", "imp")
    ws.logs()


@scenario
def test_job_environment(ws):
    """stdin is /dev/null, env is inherited, stdout and stderr share one pipe, /bin/sh -c runs the command."""
    ws.write("build.ninja",
             "rule r\n"
             "  command = echo $out >> cmds.log && cat > $out && echo \"[$E2E_VAR]\" && test ! -t 0 && test ! -t 1 && touch $out\n"
             "build o: r\n")
    ws.run("-j1", env={"E2E_VAR": "inherited value"})
    ws.snapshot()


@scenario
def test_ansi_escapes_stripped_unless_forced(ws):
    ws.write("build.ninja",
             "rule color\n"
             "  command = echo $out >> cmds.log && printf '\\033[31mred\\033[0m plain\\n' && touch $out\n"
             "build o: color\n")
    r = ws.run("-j1")
    assert "\x1b" not in r.stdout
    ws.remove("o")
    r = ws.run("-j1", env={"CLICOLOR_FORCE": "1"})
    assert "\x1b[31m" in r.stdout
    ws.remove("o")
    ws.run("-j1", env={"CLICOLOR_FORCE": "0"})


@scenario
def test_ninja_status_env(ws):
    ws.write("build.ninja", manifest("build a: touch\nbuild b: touch a\nbuild c: touch b\n"))
    r = ws.run("-j1", env={"NINJA_STATUS": "<%s|%t|%r|%u|%f|%p|%%> "})
    assert r.stdout.splitlines()[0] == "<1|3|1|2|1| 33%|%> echo a >> cmds.log && touch a"
    ws.remove("a")
    ws.run("-j1", env={"NINJA_STATUS": ""})
    ws.remove("a")
    ws.run("-j1", env={"NINJA_STATUS": "%Q "})


@scenario
def test_failure_is_not_logged_and_outputs_kept(ws):
    ws.write("build.ninja",
             "rule maybe\n"
             "  command = echo $out >> cmds.log && echo new > $out && test -e pass\n"
             "build o: maybe\n")
    ws.run("-j1")
    assert ws.read("o") == "new\n"
    ws.write("pass", "")
    ws.run("-j1")
    ws.run("-j1")
    ws.logs()


BLOCKER = """\
import os, signal, sys
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, signal.SIG_DFL)
# Signal readiness only from the process that will receive the signal (a shell between the flag and an exec'd
# blocker has a window where a SIGINT to the process group is lost, and ninja then waits forever).
open("started.flag", "w").write("started\\n")
with open("fifo") as f:
    data = f.read()
if len(sys.argv) > 1:
    open(sys.argv[1], "a").write(data)
"""


def write_blocker(ws):
    ws.mkfifo("fifo")
    ws.write("block.py", "#!%s\n%s" % (sys.executable, BLOCKER), mode=0o755)


def _interrupt_manifest(extra=""):
    return ("rule block\n"
            "  command = echo $out >> cmds.log && : > $out && exec ./block.py $out\n"
            "  description = BLOCK $out\n"
            + extra + RULES +
            "build first: touch\n"
            "build blocked: block first\n"
            "build after: cat blocked\n")


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_interrupt_while_job_blocked(differential, sig):
    def sc(ws):
        write_blocker(ws)
        ws.write("build.ninja", _interrupt_manifest())
        proc = ws.spawn("-j1", "after")
        ws.wait_for_file("started.flag")
        proc.send_signal(getattr(signal, sig))
        r = ws.finish(proc)
        assert r.rc == 130, r
        assert not ws.exists("blocked")  # output modified by the interrupted job is deleted
        ws.remove("started.flag")
        ws.snapshot()
        ws.logs()
    differential(sc)


@scenario
def test_interrupt_keeps_untouched_output_and_deletes_depfile_outputs(ws):
    write_blocker(ws)
    ws.write("build.ninja",
             "rule wait\n"
             "  command = echo $out >> cmds.log && exec ./block.py\n"
             "rule waitdep\n"
             "  command = echo $out >> cmds.log && echo \"$out: \" > $out.d && exec ./block.py\n"
             "  depfile = $out.d\n"
             "build keep: wait in\n"
             "build gone: waitdep in\n")
    ws.write("in", "")
    ws.write("keep", "old\n")
    ws.write("gone", "old\n")
    ws.touch("in")
    proc = ws.spawn("-j1", "keep")
    ws.wait_for_file("started.flag")
    proc.send_signal(signal.SIGINT)
    ws.finish(proc)
    assert ws.exists("keep")
    ws.remove("started.flag")
    proc = ws.spawn("-j1", "gone")
    ws.wait_for_file("started.flag")
    proc.send_signal(signal.SIGINT)
    ws.finish(proc)
    ws.remove("started.flag")
    ws.snapshot()


@scenario
def test_build_after_interrupt_resumes(ws):
    write_blocker(ws)
    ws.write("build.ninja", _interrupt_manifest())
    proc = ws.spawn("-j1", "after")
    ws.wait_for_file("started.flag")
    proc.send_signal(signal.SIGINT)
    ws.finish(proc)
    ws.remove("started.flag")
    # next run: unblock the FIFO by feeding it from a background writer started by the job itself
    ws.write("build.ninja", _interrupt_manifest().replace("exec ./block.py $out", "echo fed >> $out"))
    r = ws.run("-j1", "after")
    assert r.cmds == ["blocked", "after"]
    ws.snapshot()
    ws.logs()
