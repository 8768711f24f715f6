"""GNU make jobserver client (ninja 1.13): MAKEFLAGS detection, the FIFO pool bounding concurrency, tokens
handed back, -j/-n turning it off, and pipe-style auth (all GNU make 4.3 offers) warned about and ignored."""

import os
import shutil
import sys

import pytest

import harness
from common import manifest
from harness import scenario

# Each job counts itself in and out of a shared counter under flock and logs the count it saw. It then
# waits (bounded) until `k` jobs were running at once, so the scenario observes the real limit instead of
# depending on timing: a pool that is too small times out once (then every job is let through).
JOB = r"""
import fcntl, os, sys, time
name, k = sys.argv[1], int(sys.argv[2])
def count(delta, tag):
    with open("conc.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        cur = int(open("conc.count").read()) if os.path.exists("conc.count") else 0
        cur += delta
        with open("conc.count", "w") as f:
            f.write(str(cur))
        with open("conc.log", "a") as f:
            f.write("%s %s %d\n" % (tag, name, cur))
        if cur >= k:
            open("reached", "w").close()
            open("released", "w").close()
count(1, "start")
deadline = time.monotonic() + 15
while not os.path.exists("released"):
    if time.monotonic() > deadline:
        open("released", "w").close()
    time.sleep(0.005)
count(-1, "end")
open(name, "w").close()
"""


def job_manifest(n: int, k: int) -> str:
    rule = "rule job\n  command = %s job.py $out %d\n  description = JOB $out\n" % (sys.executable, k)
    return rule + "".join("build o%02d: job\n" % i for i in range(n))


def max_concurrency(ws) -> int:
    return max(int(line.split()[2]) for line in ws.read("conc.log").splitlines() if line.startswith("start"))


class Pool:
    """A FIFO jobserver as make 4.4 would run it: the FIFO stays open here (its bytes live only while
    someone holds it) with `tokens` bytes in it; MAKEFLAGS names it."""

    def __init__(self, ws, tokens: bytes, name: str = "pool"):
        path = ws.mkfifo(name)
        self.fd = os.open(path, os.O_RDWR | os.O_NONBLOCK)
        os.write(self.fd, tokens)
        self.makeflags = " -j%d --jobserver-auth=fifo:%s" % (len(tokens) + 1, path)

    def drain(self) -> bytes:
        out = b""
        while True:
            try:
                chunk = os.read(self.fd, 256)
            except BlockingIOError:
                return out
            if not chunk:
                return out
            out += chunk

    def close(self):
        os.close(self.fd)


def reset(ws):
    for f in ("conc.count", "conc.log", "reached", "released"):
        if ws.exists(f):
            ws.remove(f)


@scenario
def test_fifo_pool_bounds_concurrency_and_every_token_returns(ws):
    """12 jobs, a pool of 3 (the implicit slot + 2 tokens): 3 run at once and never more; the local -j default
    does not apply, the tokens (the same bytes) are back afterwards, and the detection line is on stdout."""
    ws.write("job.py", JOB)
    ws.write("build.ninja", job_manifest(12, 3))
    pool = Pool(ws, b"ab")
    try:
        r = ws.run(env={"MAKEFLAGS": pool.makeflags}, stdout="ignore")  # job order varies
        ws.record("first line", r.stdout.splitlines()[0])
        assert r.rc == 0, r
        assert r.stdout.startswith("ninja: Jobserver mode detected:  -j3 --jobserver-auth=fifo:$WS/pool\n"), r
        assert ws.exists("reached"), "three jobs never ran at once"
        assert max_concurrency(ws) == 3
        assert sorted(pool.drain()) == sorted(b"ab")
    finally:
        pool.close()


@scenario
def test_pool_larger_than_local_default_is_used(ws):
    """The local -j default (cores + 2 here) no longer caps: a pool wider than it is filled."""
    width = len(os.sched_getaffinity(0)) + 3
    ws.write("job.py", JOB)
    ws.write("build.ninja", job_manifest(width, width))
    pool = Pool(ws, b"t" * (width - 1))
    try:
        r = ws.run(env={"MAKEFLAGS": pool.makeflags}, stdout="ignore")
        assert r.rc == 0, r
        assert ws.exists("reached"), "the pool's width was never reached"
        assert max_concurrency(ws) == width
        ws.record("max", max_concurrency(ws))
        assert pool.drain() == b"t" * (width - 1)
    finally:
        pool.close()


@scenario
def test_explicit_j_dry_run_and_quiet(ws):
    """-j on the command line ignores the pool (two jobs run though it is empty); -n and make's own `n` flag
    ignore it too; --quiet uses it without the detection line."""
    ws.write("job.py", JOB)
    ws.write("build.ninja", job_manifest(2, 2))
    pool = Pool(ws, b"")
    try:
        r = ws.run("-j2", env={"MAKEFLAGS": pool.makeflags}, stdout="ignore")
        assert "Jobserver" not in r.stdout and ws.exists("reached")
        reset(ws)
        ws.write("build.ninja", manifest("build out: touch\n"))
        ws.run("-n", env={"MAKEFLAGS": pool.makeflags})
        ws.run(env={"MAKEFLAGS": "n" + pool.makeflags})
        ws.run(env={"MAKEFLAGS": "kn" + pool.makeflags})
        r = ws.run("--quiet", env={"MAKEFLAGS": pool.makeflags})
        assert r.stdout == "" and r.rc == 0
        ws.run(env={"MAKEFLAGS": pool.makeflags})  # detected, then the build's own "no work to do"
        assert pool.drain() == b""
    finally:
        pool.close()


@scenario
def test_unusable_fifo_is_reported_and_the_build_goes_on(ws):
    ws.write("build.ninja", manifest("build out: touch\n"))
    ws.run(env={"MAKEFLAGS": " -j3 --jobserver-auth=fifo:missing-fifo"})
    ws.remove("out")
    ws.run(env={"MAKEFLAGS": " -j3 --jobserver-auth=fifo:"})
    r = ws.run("-t", "targets", env={"MAKEFLAGS": " -j3 --jobserver-auth=fifo:missing-fifo"})
    assert "Jobserver" not in r.stdout  # tools never look at MAKEFLAGS


# ---------------------------------------------------------------------------------------------------------------------
# Pipe-style auth. The reference is Kitware's fork, which does serve pipes, so these assert upstream 1.13.2's
# behaviour on headroom alone.


@pytest.fixture
def headroom(tmp_path, e2e_config):
    if e2e_config.self_mode:
        pytest.skip("upstream ninja 1.13.2 pipe behaviour: the Kitware reference differs")
    if not os.access(e2e_config.sut, os.X_OK):
        pytest.fail("headroom binary %r does not exist (set HEADROOM_BIN)" % e2e_config.sut)
    ws = harness.Workspace(tmp_path / "sut" / "w", "sut", e2e_config, e2e_config.sut)
    yield ws
    ws.cleanup()


def test_pipe_auth_is_ignored_with_a_warning(headroom):
    ws = headroom
    ws.write("build.ninja", manifest("build out: touch\n"))
    flags = " -j3 --jobserver-auth=3,4"
    r = ws.run(env={"MAKEFLAGS": flags})
    assert r.rc == 0 and ws.exists("out")
    assert r.stderr == "ninja: warning: Ignoring jobserver: Pipe-based protocol is not supported! [%s]\n" % flags
    assert "Jobserver mode detected" not in r.stdout
    r = ws.run("--quiet", env={"MAKEFLAGS": flags})
    assert r.stderr == "ninja: warning: Ignoring jobserver: Pipe-based protocol is not supported! [%s]\n" % flags


def test_under_gnu_make_pipe_jobserver(headroom):
    """GNU make before 4.4 only offers a pipe jobserver: headroom run from a `+` recipe of `make -j3` warns,
    ignores it, and still builds everything."""
    ws = headroom
    make = shutil.which("make")
    if not make:
        pytest.skip("GNU make is not installed")
    version = ws.sh([make, "--version"]).stdout.splitlines()[0]
    ws.write("job.py", JOB)
    ws.write("build.ninja", job_manifest(4, 1))
    ws.write("Makefile", "all:\n\t+%s\n" % ws.bins["sut"])
    p = ws.sh([make, "-j3", "-s"], check=False)
    assert p.returncode == 0, p
    assert all(ws.exists("o%02d" % i) for i in range(4))
    if "ninja: Jobserver mode detected:" in p.stdout:  # make 4.4+ serves a FIFO
        assert "--jobserver-auth=fifo:" in p.stdout, (version, p)
    else:
        assert not version.startswith("GNU Make 4.4"), (version, p)
        assert "ninja: warning: Ignoring jobserver: Pipe-based protocol is not supported! [" in p.stderr, p
        assert "--jobserver-auth=" in p.stderr, p
