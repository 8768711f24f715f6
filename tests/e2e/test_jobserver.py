"""GNU make jobserver client (PyPI ninja 1.13.2): MAKEFLAGS detection, the FIFO pool bounding concurrency, tokens
handed back, -j/-n turning it off, and the pipe-style auth that GNU make 4.3 offers, used as PyPI ninja uses it."""

import os
import re
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
# Pipe-style auth (GNU make 4.3 and older, the make of Debian 12 and Ubuntu 22.04, and make 4.4+ with
# --jobserver-style=pipe, as on Debian 13). The reference is PyPI's ninja 1.13.2 (Kitware's build), which uses the pipe;
# headroom matches it.


def gnu_make(ws) -> str:
    make = shutil.which("make")
    if not make:
        if os.environ.get("CI"):
            pytest.fail("GNU make is required in CI")
        pytest.skip("GNU make is not installed")
    return make


def pipe_make(ws, make: list, target: str, jobs: str = "-j3"):
    """Runs `make -jN -s target`; returns (rc, stdout, stderr) with the binary's path masked."""
    p = ws.sh([*make, jobs, "-s", target], check=False)
    binary = ws.bins["sut"]
    return p.returncode, p.stdout.replace(binary, "$BIN"), p.stderr.replace(binary, "$BIN")


def pipe_style_make(ws) -> list:
    """GNU make serving a pipe jobserver, as a command: make 4.3 and older have only that one; 4.4 and later (Debian 13)
    serve a FIFO unless told --jobserver-style=pipe."""
    make = gnu_make(ws)
    m = re.match(r"GNU Make (\d+)\.(\d+)", ws.sh([make, "--version"]).stdout)
    if not m:
        if os.environ.get("CI"):
            pytest.fail("%s is not GNU make" % make)
        pytest.skip("%s is not GNU make" % make)
    return [make] if (int(m.group(1)), int(m.group(2))) < (4, 4) else [make, "--jobserver-style=pipe"]


@scenario
def test_make_43_pipe_pool_bounds_concurrency(ws):
    """`make -j3` running the build from a `+` recipe: the pipe is used (announced, with the fifo advice), 8 jobs
    run 3 at a time and never more, and make's tokens are all back (make itself would hang otherwise)."""
    make = pipe_style_make(ws)
    ws.write("job.py", JOB)
    ws.write("build.ninja", job_manifest(8, 3))
    ws.write("Makefile", "all:\n\t+%s\n" % ws.bins["sut"])
    rc, out, err = pipe_make(ws, make, "all")
    assert rc == 0, (out, err)
    ws.record("first line", out.splitlines()[0])
    ws.record("stderr", err)
    assert ws.exists("reached"), "three jobs never ran at once"
    assert max_concurrency(ws) == 3
    ws.record("max", max_concurrency(ws))


@scenario
def test_make_43_explicit_j_caps_below_the_pool(ws):
    """With -j2 of its own under `make -j3`, the jobserver is not used and -j2 caps."""
    make = pipe_style_make(ws)
    ws.write("job.py", JOB)
    ws.write("build.ninja", job_manifest(6, 2))
    ws.write("Makefile", "all:\n\t+%s -j2\n" % ws.bins["sut"])
    rc, out, err = pipe_make(ws, make, "all")
    assert rc == 0, (out, err)
    assert "Jobserver" not in out + err
    assert max_concurrency(ws) == 2
    ws.record("max", max_concurrency(ws))


@scenario
def test_make_43_withheld_descriptors(ws):
    """A recipe without `+`: make closes the pipe in the child; the build reports it and runs on its own -j."""
    make = pipe_style_make(ws)
    ws.write("build.ninja", manifest("build out: touch\n"))
    ws.write("Makefile", "all:\n\t%s\n" % ws.bins["sut"])
    rc, out, err = pipe_make(ws, make, "all")
    assert rc == 0 and ws.exists("out"), (out, err)
    ws.record("make", (rc, out, err))


@scenario
def test_pipe_descriptors_that_are_not_pipes(ws):
    """Descriptors that are open but not a pipe (here /dev/null) are not read: reported, and the build goes on."""
    ws.write("build.ninja", manifest("build out: touch\n"))
    binary = ws.bins["sut"]
    p = ws.sh(["sh", "-c", 'exec 7<>/dev/null 8<>/dev/null; exec "$0"', binary], check=False,
              env={"MAKEFLAGS": " -j3 --jobserver-auth=7,8"})
    ws.record("run", (p.returncode, p.stdout, p.stderr))
    assert p.returncode == 0 and ws.exists("out")
    ws.remove("out")
    p = ws.sh(["sh", "-c", 'exec 7<>/dev/null 8<>/dev/null; exec "$0" --quiet', binary], check=False,
              env={"MAKEFLAGS": " -j3 --jobserver-fds=7,8"})
    ws.record("quiet", (p.returncode, p.stdout, p.stderr))


@scenario
def test_auth_values_read_like_scanf(ws):
    """`3,4,5` is the pair 3,4; `x,y` and a lone number are the (Windows) semaphore form; negative: no pool."""
    ws.write("build.ninja", manifest("build out: touch\n"))
    for auth in ("x,y", "3", "5,-1"):
        ws.run(env={"MAKEFLAGS": " -j3 --jobserver-auth=" + auth})
        if ws.exists("out"):
            ws.remove("out")
    binary = ws.bins["sut"]
    p = ws.sh(["sh", "-c", 'exec 7<>/dev/null; exec "$0"', binary], check=False,
              env={"MAKEFLAGS": " -j3 --jobserver-auth=7,7,9"})
    ws.record("three numbers", (p.returncode, p.stdout, p.stderr))
