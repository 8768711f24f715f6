"""Fault injection against the real binary: signals at random points of a 30-job build, damaged logs, a full disk,
unreadable manifests, daemonising jobs and jobs that ignore SIGTERM. Every scenario ends with an orphan check."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import time
import uuid

import pytest

from common import RULES, manifest
from harness import Workspace, in_ci, parse_build_log, scenario

# ---------------------------------------------------------------------------------------------------------------------
# Helpers


def poll(condition, timeout: float = 20.0, what: str = "condition"):
    """Poll `condition` (no fixed sleeps as synchronisation) until it returns a truthy value."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for " + what)
        time.sleep(0.005)


def processes_with(marker: str) -> list:
    """(pid, cmdline) of live, non-zombie processes whose command line contains `marker`."""
    found = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode("utf-8", "replace")
            with open("/proc/%s/stat" % entry) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append((int(entry), cmdline))
    return found


def assert_no_orphans(marker: str, timeout: float = 10.0):
    """Stragglers killed with SIGKILL die asynchronously, so give them a moment; then fail (and kill them)."""
    deadline = time.monotonic() + timeout
    while True:
        left = processes_with(marker)
        if not left:
            return
        if time.monotonic() > deadline:
            for pid, _ in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            raise AssertionError("orphaned processes survived the build: %r" % left)
        time.sleep(0.01)


def release_fifo(path, timeout: float = 20.0):
    """Write to a FIFO once its reader has opened it (ENXIO until then)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != 6 or time.monotonic() > deadline:  # ENXIO: no reader yet
                raise
            time.sleep(0.002)
            continue
        try:
            os.write(fd, b"go\n")
        finally:
            os.close(fd)
        return


@pytest.fixture
def marker():
    value = "hrfault" + uuid.uuid4().hex[:12]
    yield value
    assert_no_orphans(value)


@pytest.fixture(params=["sut", "ref"])
def tool_ws(request, tmp_path, e2e_config):
    """A workspace whose "sut" role is headroom (param sut) or the reference (param ref, validates the scenario)."""
    if request.param == "ref":
        binary = e2e_config.ref
    else:
        binary = e2e_config.ref if e2e_config.self_mode else e2e_config.sut
    if not binary or not os.access(binary, os.X_OK):
        pytest.fail("binary for role %s not found: %r" % (request.param, binary))
    ws = Workspace(tmp_path / "w", "sut", e2e_config, binary)
    ws.is_reference = request.param == "ref"
    yield ws
    ws.cleanup()


@pytest.fixture
def headroom_ws(tmp_path, e2e_config):
    binary = e2e_config.ref if e2e_config.self_mode else e2e_config.sut
    if not os.access(binary, os.X_OK):
        pytest.fail("headroom binary %r does not exist (set HEADROOM_BIN)" % binary)
    if e2e_config.self_mode:
        pytest.skip("headroom-specific scenario (self mode runs the reference)")
    ws = Workspace(tmp_path / "w", "sut", e2e_config, binary)
    yield ws
    ws.cleanup()


# ---------------------------------------------------------------------------------------------------------------------
# SIGINT / SIGTERM at a random point of a 30-job build, then a rerun


# The job is a POSIX shell script, not Python: CPython catches SIGINT from start-up until a script can reset it, and a
# SIGINT that lands while the handler is being switched back to SIG_DFL is dropped ("Signal 2 ignored due to race
# condition"): the job then blocks on its gate for ever and a ninja that forwards the interrupt waits for it for ever
# (seen as a 20 s timeout of the reference ninja in CI; reproduced by sending SIGINT to `python3 -c` scripts at random
# points of their start-up: 1 in 400 survived, and 11 in 1,600 when the script blocked the signals around the switch).
# dash keeps SIG_DFL throughout, so every job in the build's process groups dies.
JOB = """\
#!/bin/sh
# job.sh OUT NAME MARKER IN...: once gated, waits for the test to release it; then writes its inputs and OUT to OUT.
out=$1 name=$2
shift 3
if [ ! -e open_gates ]; then
  # Readiness comes from the process that receives the interrupt, then it blocks opening its own FIFO.
  : > "started/$name"
  read -r _ < "gates/$name"
fi
{ cat "$@" && printf '%s\\n' "$out"; } > "$out.tmp" && mv "$out.tmp" "$out"
"""


def layered_graph():
    """30 edges: 20 leaves from sources, 8 middles over leaves, 2 tops over middles. Returns {out: [inputs]}."""
    graph = {}
    for i in range(20):
        graph["leaf/l%02d" % i] = ["src/s%02d" % i]
    for i in range(8):
        graph["mid/m%d" % i] = ["leaf/l%02d" % (2 * i), "leaf/l%02d" % (2 * i + 1), "leaf/l%02d" % ((2 * i + 5) % 20)]
    graph["top/t0"] = ["mid/m0", "mid/m1", "mid/m2", "mid/m3"]
    graph["top/t1"] = ["mid/m4", "mid/m5", "mid/m6", "mid/m7"]
    return graph


def expected_contents(graph, sources):
    memo = {}

    def content(path):
        if path in sources:
            return sources[path]
        if path not in memo:
            memo[path] = "".join(content(i) for i in graph[path]) + path + "\n"
        return memo[path]

    return {out: content(out) for out in graph}


def setup_gated_build(ws, marker):
    graph = layered_graph()
    sources = {"src/s%02d" % i: "source %d\n" % i for i in range(20)}
    for path, text in sources.items():
        ws.write(path, text)
    ws.write("job.sh", JOB, mode=0o755)
    ws.path("started").mkdir()
    for out in graph:
        ws.mkfifo("gates/" + out.replace("/", "_"))
    text = ("rule job\n"
            "  command = echo $out >> cmds.log && exec ./job.sh $out $name %s $in\n"
            "  description = JOB $out\n" % marker)
    for out, ins in graph.items():
        text += "build %s: job %s\n  name = %s\n" % (out, " ".join(ins), out.replace("/", "_"))
    ws.write("build.ninja", text)
    return graph, sources


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_interrupt_at_random_point_then_rerun(tool_ws, marker, sig, seed):
    ws = tool_ws
    graph, sources = setup_gated_build(ws, marker)
    k = random.Random(seed * 7919 + len(sig)).randint(1, len(graph) - 1)
    proc = ws.spawn("-j4")
    released, held = [], []
    # Release every job that starts until k have started; the k-th (and any started after it) stays blocked.
    while not held:
        assert proc.poll() is None, "build ended early: %r" % (proc.communicate(),)
        started = sorted(os.listdir(ws.path("started")), key=lambda n: os.stat(ws.path("started/" + n)).st_mtime_ns)
        fresh = [n for n in started if n not in released and n not in held]
        if not fresh:
            time.sleep(0.002)
            continue
        for name in fresh:
            if len(released) + 1 < k:
                release_fifo(ws.path("gates/" + name))
                released.append(name)
            else:
                held.append(name)
    released_outs = {n.replace("_", "/", 1) for n in released}

    def logged():
        log = ws.path(".ninja_log")
        entries = parse_build_log(log.read_bytes())["entries"] if log.exists() else []
        return {path for path, _, _ in entries}

    # Every released job has finished and been recorded: the interrupt now hits only blocked jobs.
    poll(lambda: logged() >= released_outs, what="released jobs to be logged (k=%d)" % k)
    proc.send_signal(getattr(signal, sig))
    r = ws.finish(proc, record=False)
    assert r.rc == 130, r
    assert "interrupted by user" in r.stdout + r.stderr, r
    assert logged() == released_outs
    for out in graph:  # interrupted jobs never wrote their outputs, finished ones did
        assert ws.exists(out) == (out in released_outs), out
    assert_no_orphans(marker)

    mtimes = {out: ws.mtime(out) for out in released_outs}
    ws.write("open_gates", "")
    ws.take_cmds()
    r = ws.run("-j4", record=False)
    assert r.rc == 0, r
    assert sorted(r.cmds) == sorted(set(graph) - released_outs), "k=%d" % k
    assert {out: ws.read(out) for out in graph} == expected_contents(graph, sources)
    assert {out: ws.mtime(out) for out in released_outs} == mtimes
    r = ws.run("-j4", record=False)
    assert (r.rc, r.cmds, r.stderr) == (0, [], ""), r
    assert "no work to do" in r.stdout


# ---------------------------------------------------------------------------------------------------------------------
# Damaged .ninja_log / .ninja_deps (differential: same warnings as ninja), then a clean run

DEPS_MANIFEST = ("rule dep\n"
                 "  command = echo $out >> cmds.log && printf '%s: %s h1.h h2.h\\n' $out $in > $out.d && cat $in > $out\n"
                 "  depfile = $out.d\n"
                 "  deps = gcc\n"
                 + RULES
                 + "".join("build o%d: dep i%d\n" % (i, i) for i in range(6))
                 + "build all: cat o0 o1 o2 o3 o4 o5\n")


def _damage_scenario(log_name, damage):
    def sc(ws):
        ws.write("build.ninja", DEPS_MANIFEST)
        for i in range(6):
            ws.write("i%d" % i, "in %d\n" % i)
        ws.write("h1.h", "")
        ws.write("h2.h", "")
        assert ws.run("-j1").rc == 0
        ws.write(log_name, damage(ws.path(log_name).read_bytes()))
        ws.touch("i2")
        r = ws.run("-j1")
        assert r.rc == 0, r
        # ninja 1.13.2 appends after a torn last line of .ninja_log, so the entry written right after it is merged
        # into that line and lost: the next run rebuilds that one edge once more. From then on all is clean.
        r = ws.run("-j1")
        assert (r.rc, r.stderr) == (0, ""), r
        r = ws.run("-j1")
        assert (r.rc, r.cmds, r.stderr) == (0, [], ""), r
        assert "no work to do" in r.stdout
        ws.snapshot()
    return sc


def _noise(seed: int, size: int) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.randrange(256) for _ in range(size))


DAMAGES = {
    "truncated_half": lambda data: data[: len(data) // 2],
    "truncated_to_header_part": lambda data: data[:7],
    "empty": lambda data: b"",
    "garbage": lambda data: _noise(5, len(data)),
    "garbage_after_header": lambda data: data[:16] + _noise(6, 200),
}


@pytest.mark.parametrize("log_name", [".ninja_log", ".ninja_deps"])
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_log_build_proceeds(differential, log_name, damage):
    if log_name == ".ninja_log" and damage == "truncated_half":
        # A torn last line: a documented difference, pinned in test_headroom_differences.py.
        pytest.skip("headroom deliberately starts a fresh line (docs/differences-from-ninja.md)")
    differential(_damage_scenario(log_name, DAMAGES[damage]))


@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_damaged_history_warns_and_recovers(headroom_ws, damage):
    ws = headroom_ws
    ws.write("build.ninja", DEPS_MANIFEST)
    for i in range(6):
        ws.write("i%d" % i, "in %d\n" % i)
    ws.write("h1.h", "")
    ws.write("h2.h", "")
    assert ws.run("-j2", record=False).rc == 0
    history = ws.path(".ninja_headroom")
    assert history.exists()
    history.write_bytes(DAMAGES[damage](history.read_bytes()))
    ws.touch("i2")
    r = ws.run("-j2", record=False)
    assert r.rc == 0, r
    assert sorted(r.cmds) == ["all", "o2"]
    if damage != "empty":
        assert ".ninja_headroom" in r.stderr, r  # the damage is reported, naming the file
    r = ws.run("-j2", record=False)
    assert (r.rc, r.cmds, r.stderr) == (0, [], ""), r
    ws.touch("i3")
    r = ws.run("-j2", record=False)  # the rewritten history is accepted without a warning
    assert (r.rc, sorted(r.cmds), r.stderr) == (0, ["all", "o3"], ""), r


# ---------------------------------------------------------------------------------------------------------------------
# A full disk while writing the logs


def _mount_tmpfs(path, size="64k") -> bool:
    if os.geteuid() != 0:
        return False
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", str(path)], capture_output=True)
    return p.returncode == 0


def _fill(directory):
    """Fill a filesystem to the last byte (the filler file can be removed to free the space)."""
    with open(os.path.join(directory, "filler"), "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass


def test_full_disk_while_writing_logs(tool_ws, marker):
    ws = tool_ws
    build = ws.path("small")
    build.mkdir(parents=True)
    if not _mount_tmpfs(build):
        if in_ci():
            pytest.fail("needs root and tmpfs mounts (mount -t tmpfs) for the full-disk scenario")
        pytest.skip("cannot mount a tmpfs here (not root or no CAP_SYS_ADMIN)")
    try:
        # Outputs are empty files (no data blocks), so only the logs need space once the disk is full.
        text = ("rule t\n  command = touch $out && : %s\n" % marker
                + "".join("build o%d: t\n" % i for i in range(20)))
        (build / "build.ninja").write_text(text)
        _fill(build)
        r = ws.run("-j2", cwd="small", record=False)
        assert r.rc != 0, r
        assert "No space left on device" in r.stdout + r.stderr, r
        os.unlink(build / "filler")
        # The logs written on the full disk are accepted as they are: no warning, and the rerun builds what the
        # full-disk run could not record.
        r = ws.run("-j2", cwd="small", record=False)
        assert (r.rc, r.stderr) == (0, ""), r
        r = ws.run("-j2", cwd="small", record=False)
        assert (r.rc, r.stderr) == (0, ""), r
        assert "no work to do" in r.stdout, r
        log = parse_build_log((build / ".ninja_log").read_bytes())
        assert not log["bad"], log
        assert {p for p, _, _ in log["entries"]} == {"o%d" % i for i in range(20)}, log
    finally:
        subprocess.run(["umount", "-l", str(build)], capture_output=True)


# ---------------------------------------------------------------------------------------------------------------------
# Unreadable manifests and permission errors (differential: same messages as ninja)


@scenario
def test_manifest_is_a_directory(ws):
    ws.path("build.ninja").mkdir()
    r = ws.run()
    assert r.rc == 1
    ws.run("-f", "build.ninja", "-t", "targets")


@scenario
def test_manifest_includes_a_directory(ws):
    ws.path("inc").mkdir()
    ws.write("build.ninja", manifest("include inc\nbuild o: touch\n"))
    assert ws.run().rc == 1
    ws.write("build.ninja", manifest("subninja inc\nbuild o: touch\n"))
    assert ws.run().rc == 1


@scenario
def test_output_directory_under_a_file(ws):
    ws.write("blocker", "")
    ws.write("build.ninja", manifest("build blocker/sub/o: touch\nbuild ok: touch\n"))
    r = ws.run("-j1", "-k", "0")
    assert r.rc == 1
    assert "Not a directory" in r.stderr  # ninja stops the whole build on a mkdir failure, even with -k 0


def test_log_path_is_a_directory(headroom_ws):
    """ninja runs the job and then stops on the log write; headroom refuses before running anything
    (docs/differences-from-ninja.md). Either way: exit 1 and a clear message."""
    ws = headroom_ws
    ws.path(".ninja_log").mkdir()
    ws.write("build.ninja", manifest("build o: touch\n"))
    r = ws.run("-j1")
    assert r.rc == 1
    assert "ninja: error: loading build log .ninja_log: Is a directory" in r.stderr


@scenario
def test_builddir_under_a_file(ws):
    ws.write("blocker", "")
    ws.write("build.ninja", manifest("builddir = blocker/b\nbuild o: touch\n"))
    ws.run("-j1")


# ---------------------------------------------------------------------------------------------------------------------
# Jobs that leave daemons behind

DAEMON = """\
import os, sys
marker, mode = sys.argv[1], sys.argv[2]
open("job.pgid", "w").write("%d\\n" % os.getpgrp())
if os.fork() == 0:
    if mode == "detached":
        os.setsid()
    if mode in ("detached", "closed"):
        for fd in (0, 1, 2):
            os.close(fd)
    os.execv(sys.executable, [sys.executable, "-c",
             "import os\\nopen('daemon.pid','w').write(str(os.getpid()))\\nopen('daemon_gate').read()", marker])
# The job itself exits at once, before the daemon.
print("job done")
"""


def _job_group_members(pgid: int) -> list:
    members = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry))
    return members


def _daemon_setup(ws, marker, mode):
    ws.mkfifo("daemon_gate")
    ws.write("daemon.py", "#!%s\n%s" % (sys.executable, DAEMON), mode=0o755)
    ws.write("build.ninja", "rule d\n  command = ./daemon.py %s %s && touch $out\nbuild o: d\n" % (marker, mode))


def test_daemon_that_closes_its_fds(tool_ws, marker):
    """The common case: the daemon detaches (setsid, closes stdio), the build ends at once, and nothing is left in
    the job's process group. The daemon itself is outside it and survives until released."""
    ws = tool_ws
    _daemon_setup(ws, marker, "detached")
    r = ws.run("-j1", record=False, timeout=30)
    assert r.rc == 0, r
    assert "job done" in r.stdout
    pgid = int(ws.read("job.pgid"))
    assert poll(lambda: not _job_group_members(pgid) and [True], what="job group to empty")
    ws.wait_for_file("daemon.pid")
    assert processes_with(marker), "the detached daemon should still be running"
    release_fifo(ws.path("daemon_gate"))


def test_daemon_keeping_stdout_open_delays_the_build(tool_ws, marker):
    """Like ninja, the job is finished only at EOF on its output pipe: a child that keeps stdout open holds the build
    until it exits. The job's own process has exited (its pid is a zombie or gone) while the build still waits."""
    ws = tool_ws
    _daemon_setup(ws, marker, "attached")
    proc = ws.spawn("-j1")
    ws.wait_for_file("daemon.pid")
    daemon = poll(lambda: ws.read("daemon.pid").strip(), what="daemon pid")
    pgid = int(ws.read("job.pgid"))
    # The job (shell and daemon.py parent) is gone; only the daemon is left in its process group.
    poll(lambda: _job_group_members(pgid) == [int(daemon)], what="the job to exit, leaving the daemon")
    log = ws.path(".ninja_log")
    assert proc.poll() is None, "build ended while the daemon still holds its stdout"
    assert not (log.exists() and b"\to\t" in log.read_bytes())
    release_fifo(ws.path("daemon_gate"))
    r = ws.finish(proc, record=False, timeout=30)
    assert r.rc == 0, r
    assert "job done" in r.stdout


# ---------------------------------------------------------------------------------------------------------------------
# A job that ignores SIGTERM/SIGINT when the build is interrupted

STUBBORN = """\
import os, signal, sys
def note(signum, frame):
    open("got.%d" % signum, "a").write("x")
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, note)
open("started.flag", "w").write("started\\n")
while True:
    signal.pause()
"""


def _stubborn_setup(ws, marker):
    ws.write("stubborn.py", "#!%s\n%s" % (sys.executable, STUBBORN), mode=0o755)
    ws.write("build.ninja", "rule s\n  command = exec ./stubborn.py %s\nbuild o: s\n" % marker)


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_job_ignoring_interrupt_second_sigint_escalates(headroom_ws, marker, sig):
    """ninja 1.13.2 would wait for such a job forever; headroom forwards the interrupt, and a second SIGINT kills."""
    ws = headroom_ws
    _stubborn_setup(ws, marker)
    proc = ws.spawn("-j1")
    ws.wait_for_file("started.flag")
    proc.send_signal(getattr(signal, sig))
    # The job saw the forwarded interrupt (and ignored it); headroom is still waiting for it.
    poll(lambda: [n for n in os.listdir(ws.root) if n.startswith("got.")], what="the job to see the interrupt")
    assert proc.poll() is None
    proc.send_signal(signal.SIGINT)
    r = ws.finish(proc, record=False, timeout=20)
    assert r.rc == 130, r
    assert_no_orphans(marker)
    assert not ws.exists("o")


def test_daemon_in_job_group_with_closed_fds(tool_ws, marker):
    """A daemon that closes its fds but stays in the job's process group (no setsid): the build ends when the job
    exits; like ninja, the build does not kill what the finished job left in its group (it is the job's business),
    so the daemon is still alive, in that group, after the build."""
    ws = tool_ws
    _daemon_setup(ws, marker, "closed")
    r = ws.run("-j1", record=False, timeout=30)
    assert r.rc == 0, r
    pgid = int(ws.read("job.pgid"))
    ws.wait_for_file("daemon.pid")
    daemon = int(poll(lambda: ws.read("daemon.pid").strip(), what="daemon pid"))
    assert _job_group_members(pgid) == [daemon]
    release_fifo(ws.path("daemon_gate"))
