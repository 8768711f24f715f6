"""headroom's own jobserver (--jobserver, docs/jobserver.md): jobs get a private channel in MAKEFLAGS, nested
GNU make and ninja 1.13.2 take their extra slots from headroom's -j, real nvcc 13 `--threads 4 --jobserver` gets
fewer slots under a tight memory budget, and the fifos are gone however the build ends. ninja has no server, so
these run headroom alone."""

import os
import shutil
import signal
import sys
import threading
import time

import pytest

import common
import harness
from test_jobserver import JOB

NVCC = common.nvcc_path() or "nvcc (not found: see tests/e2e/common.py nvcc_path)"


@pytest.fixture
def ws(headroom):
    """headroom alone (conftest.py): ninja 1.13.2 serves no jobserver, so self mode has nothing to check."""
    return headroom


@pytest.fixture
def tmpdir_env(tmp_path):
    """A private TMPDIR, so the test sees exactly the jobserver directories its builds make."""
    d = tmp_path / "tmp"
    d.mkdir()
    return str(d)


def jobserver_dirs(tmpdir: str) -> list:
    return sorted(n for n in os.listdir(tmpdir) if n.startswith("headroom-jobserver-"))


def require(path_or_name: str, what: str) -> str:
    found = shutil.which(path_or_name)
    if not found:
        if os.environ.get("CI"):
            pytest.fail("%s (%s) is required in CI" % (what, path_or_name))
        pytest.skip("%s not available" % what)
    return found


def pip_ninja() -> str:
    path = harness.reference_binary()
    if not os.access(path, os.X_OK):
        if os.environ.get("CI"):
            pytest.fail("PyPI ninja 1.13.2 is required in CI")
        pytest.skip("PyPI ninja not installed")
    return path


ENV_RULE = "rule env\n  command = printf '%s' \"$$MAKEFLAGS\" > $out\n"


def test_off_by_default_jobs_see_the_environment_unchanged(ws, tmpdir_env):
    """Without --jobserver nothing changes: MAKEFLAGS is passed through as it came (or stays unset), no fifo;
    HEADROOM_FLAGS=--jobserver turns it on."""
    ws.write("build.ninja", ENV_RULE + "build out: env\n")
    r = ws.run("-j2", env={"TMPDIR": tmpdir_env})
    assert r.rc == 0, r
    assert ws.read("out") == ""
    ws.remove("out")
    r = ws.run("-j2", env={"TMPDIR": tmpdir_env, "MAKEFLAGS": "s -- CC=gcc"})
    assert ws.read("out") == "s -- CC=gcc"
    assert jobserver_dirs(tmpdir_env) == []
    # HEADROOM_FLAGS switches it on like the command line does (for tools that run `ninja` with fixed arguments).
    ws.remove("out")
    r = ws.run("-j2", env={"TMPDIR": tmpdir_env, "HEADROOM_FLAGS": "--jobserver"})
    assert ws.read("out").startswith(" -j2 --jobserver-auth=fifo:%s/headroom-jobserver-" % tmpdir_env), ws.read("out")
    assert jobserver_dirs(tmpdir_env) == []


@pytest.mark.parametrize("style", ["fifo", "pipe"])
def test_each_job_gets_its_own_channel_and_nothing_is_left(ws, tmpdir_env, style):
    """Each job's MAKEFLAGS names its own channel with headroom's -j; inherited pool words are replaced."""
    ws.write("build.ninja", ENV_RULE + "build a: env\nbuild b: env\n")
    flag = "--jobserver" if style == "fifo" else "--jobserver=pipe"
    r = ws.run("-j3", flag, env={"TMPDIR": tmpdir_env, "MAKEFLAGS": "s -j9 --jobserver-auth=fifo:/elsewhere"})
    assert r.rc == 0, r
    a, b = ws.read("a"), ws.read("b")
    assert a != b
    for value in (a, b):
        assert value.startswith("s -j3 --jobserver-auth="), value
        auth = value.split("--jobserver-auth=")[1]
        if style == "fifo":
            assert auth.startswith("fifo:%s/headroom-jobserver-" % tmpdir_env), auth
        else:
            read_fd, write_fd = auth.split(",")
            assert read_fd == write_fd and int(read_fd) > 2
    assert jobserver_dirs(tmpdir_env) == []


def test_inherited_cargo_makeflags_names_the_jobs_own_channel(ws, tmpdir_env):
    """cargo (and rustc, cc-rs) read CARGO_MAKEFLAGS before MAKEFLAGS: headroom run under an outer cargo passes
    its jobs the outer pool there. Under --jobserver each job's CARGO_MAKEFLAGS names the job's own channel, as its
    MAKEFLAGS does; where none was inherited none is set."""
    ws.write("build.ninja", "rule both\n  command = printf '%s|%s' \"$$MAKEFLAGS\" \"$${CARGO_MAKEFLAGS-unset}\" > $out\n"
             "build a: both\n")
    r = ws.run("-j2", "--jobserver", env={"TMPDIR": tmpdir_env,
                                         "CARGO_MAKEFLAGS": "-j --jobserver-fds=8,9 --jobserver-auth=fifo:/outer"})
    assert r.rc == 0, r
    makeflags, cargo = ws.read("a").split("|")
    assert makeflags.startswith(" -j2 --jobserver-auth=fifo:%s/headroom-jobserver-" % tmpdir_env), makeflags
    assert cargo == makeflags
    ws.remove("a")
    r = ws.run("-j2", "--jobserver", env={"TMPDIR": tmpdir_env})
    assert ws.read("a").split("|")[1] == "unset"
    assert jobserver_dirs(tmpdir_env) == []


def leaf_setup(ws, k: int):
    """sub/: a Makefile and a build.ninja whose leaf jobs count how many leaves run at once (job.py)."""
    ws.write("job.py", JOB)
    ws.write("sub/Makefile", "all: m1 m2 m3 m4 m5 m6\nm%%:\n\t@%s ../job.py $@ %d\n" % (sys.executable, k))
    ws.write("sub/build.ninja", "rule j\n  command = %s ../job.py $out %d\n" % (sys.executable, k)
             + "".join("build n%d: j\n" % i for i in range(1, 6)))


def test_nested_make_and_ninja_share_headroom_j3(ws, tmpdir_env):
    """Two recipes, GNU make (no -j: it joins the pool) and ninja 1.13.2 (no -j), under headroom -j3
    --jobserver=pipe: their leaf jobs together never exceed 3 at once, and 3 are reached (slots were handed out).
    Without the server the same build runs more than 3 leaves at once (ninja's own -j default)."""
    make = require("make", "GNU make")
    ninja = pip_ninja()
    leaf_setup(ws, 3)
    ws.write("build.ninja", "rule mk\n  command = %s -C sub -s all > mk.out 2>&1 && touch $out\n"
             "rule nj\n  command = %s -C sub > nj.out 2>&1 && touch $out\n"
             "build A: mk\nbuild B: nj\n" % (make, ninja))
    r = ws.run("-j3", "--jobserver=pipe", env={"TMPDIR": tmpdir_env}, stdout="ignore", timeout=120)
    assert r.rc == 0, (r, ws.read("mk.out"), ws.read("nj.out"))
    assert ws.exists("sub/reached"), "three leaves never ran at once: no slot was handed out"
    peak = max(int(line.split()[2]) for line in ws.read("sub/conc.log").splitlines() if line.startswith("start"))
    assert peak == 3, ws.read("sub/conc.log")
    assert "Jobserver mode detected" in ws.read("nj.out")
    assert jobserver_dirs(tmpdir_env) == []


def test_client_and_server_at_once_stay_within_makes_pool(ws, tmpdir_env):
    """GNU make -j3 runs headroom --jobserver=pipe, whose jobs are a nested make and a leaf: the slots headroom
    hands its jobs come out of make's pool too, so the leaves never exceed 3 at once (and reach 3)."""
    make = require("make", "GNU make")
    leaf_setup(ws, 3)
    ws.write("build.ninja", "rule mk\n  command = %s -C sub -s all > mk.out 2>&1 && touch $out\n"
             "rule leaf\n  command = cd sub && %s ../job.py $out 3 && touch ../$out\n"
             "build A: mk\nbuild L: leaf\n" % (make, sys.executable))
    ws.write("Makefile", "all:\n\t+%s --jobserver=pipe\n" % ws.bins["sut"])
    p = ws.sh([make, "-j3", "-s"], env={"TMPDIR": tmpdir_env}, check=False)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert ws.exists("sub/reached"), "three leaves never ran at once"
    peak = max(int(line.split()[2]) for line in ws.read("sub/conc.log").splitlines() if line.startswith("start"))
    assert peak == 3, ws.read("sub/conc.log")
    assert jobserver_dirs(tmpdir_env) == []


# A leaf that holds memory while it counts itself: it allocates and touches its share first, then counts in,
# waits (bounded) until `k` leaves ran at once, and counts out.
HUNGRY_LEAF = r"""
import sys
mb = int(sys.argv[3])
held = b"\x01" * (mb << 20)
""" + JOB


def test_nested_make_slots_respect_the_memory_budget_in_a_box(ws, tmpdir_env):
    """A recipe running GNU make whose leaves hold 400 MiB each, in a 1.5 GiB cgroup box, under headroom -j4
    --jobserver=pipe: the make job is estimated at 450 MiB (headroom_mem) and each slot is charged as much, so
    memory allows it one slot (2 leaves, ~0.8 GiB) where -j alone would allow 3 (4 leaves, 1.6 GiB: more than the
    box). No kernel OOM kill; the same build with --no-memory (slots by -j only) is OOM-killed."""
    from memory_box import MemoryBox, require_box  # noqa: PLC0415

    require_box()
    make = require("make", "GNU make")
    ws.write("job.py", HUNGRY_LEAF)
    ws.write("sub/Makefile", "all: m1 m2 m3 m4 m5 m6\nm%%:\n\t@%s ../job.py $@ 2 400\n" % sys.executable)
    ws.write("build.ninja", "rule mk\n  command = %s -C sub -s all > mk.out 2>&1 && touch $out\n"
             "build A: mk\n  headroom_mem = 450M\n" % make)
    env = dict(ws.env({"TMPDIR": tmpdir_env}), HEADROOM_STORE=str(ws.path("store")))
    box = MemoryBox(1536 << 20)
    try:
        r = box.run([ws.bins["sut"], "-j4", "--jobserver=pipe"], cwd=ws.root, env=env, timeout=180)
        assert r.returncode == 0, (r.stdout, r.stderr, ws.read("mk.out") if ws.exists("mk.out") else "")
        assert box.oom_kills() == 0
    finally:
        box.remove()
    peak = max(int(line.split()[2]) for line in ws.read("sub/conc.log").splitlines() if line.startswith("start"))
    assert peak == 2, ws.read("sub/conc.log")

    for f in ("A", "sub/conc.log", "sub/conc.count", "sub/reached", "sub/released"):
        if ws.exists(f):
            ws.remove(f)
    for i in range(1, 7):
        if ws.exists("sub/m%d" % i):
            ws.remove("sub/m%d" % i)
    ws.write("sub/Makefile", "all: m1 m2 m3 m4 m5 m6\nm%%:\n\t@%s ../job.py $@ 4 400\n" % sys.executable)
    box = MemoryBox(1536 << 20)
    try:
        r = box.run([ws.bins["sut"], "-j4", "--jobserver=pipe", "--no-memory"], cwd=ws.root, env=env, timeout=180)
        assert r.returncode != 0 or box.oom_kills() > 0, "4 leaves of 400 MiB fitted a 1.5 GiB box"
    finally:
        box.remove()


def test_fifo_style_nested_ninja_and_headroom_j_still_caps(ws, tmpdir_env):
    """ninja 1.13.2 nested under --jobserver (fifo): its leaves reach 2 with headroom -j2 and never more."""
    ninja = pip_ninja()
    leaf_setup(ws, 2)
    ws.write("build.ninja", "rule nj\n  command = %s -C sub > nj.out 2>&1 && touch $out\nbuild B: nj\n" % ninja)
    r = ws.run("-j2", "--jobserver", env={"TMPDIR": tmpdir_env}, timeout=120)
    assert r.rc == 0, (r, ws.read("nj.out"))
    assert "--jobserver-auth=fifo:" in ws.read("nj.out")
    peak = max(int(line.split()[2]) for line in ws.read("sub/conc.log").splitlines() if line.startswith("start"))
    assert peak == 2, ws.read("sub/conc.log")


def test_fifos_removed_after_failure_and_sigint_and_a_stale_dir_is_harmless(ws, tmpdir_env):
    ws.write("build.ninja", "rule fail\n  command = exit 3\nbuild bad: fail\n")
    r = ws.run("--jobserver", env={"TMPDIR": tmpdir_env})
    assert r.rc == 3
    assert jobserver_dirs(tmpdir_env) == []

    # A build killed with SIGKILL leaves its directory; the next build neither trips on it nor keeps it.
    ws.write("wait.py", "import os, sys, time\nopen('started', 'w').close()\n"
             "deadline = time.monotonic() + 30\n"
             "while not os.path.exists('never') and time.monotonic() < deadline:\n    time.sleep(0.01)\n")
    ws.write("build.ninja", "rule w\n  command = %s wait.py\nbuild x: w\n" % sys.executable)
    proc = ws.spawn("--jobserver", env={"TMPDIR": tmpdir_env})
    ws.wait_for_file("started")
    assert len(jobserver_dirs(tmpdir_env)) == 1
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=10)
    assert len(jobserver_dirs(tmpdir_env)) == 1
    ws.remove("started")
    # A directory is swept once no server holds its lock and it has been untouched for 10 minutes (its pid may
    # be another pid namespace's): this one is made to look that old.
    left = os.path.join(tmpdir_env, jobserver_dirs(tmpdir_env)[0])
    long_ago = time.time() - 11 * 60
    os.utime(left, (long_ago, long_ago))

    # SIGINT: the build stops and removes its own directory (and the stale one went when it started).
    proc = ws.spawn("--jobserver", env={"TMPDIR": tmpdir_env})
    ws.wait_for_file("started")
    assert len(jobserver_dirs(tmpdir_env)) == 1
    os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, (out, err)
    assert jobserver_dirs(tmpdir_env) == []


# ---------------------------------------------------------------------------------------------------------------------
# Real nvcc 13 with --threads 4 --jobserver. The TU is tiny (CI has 2 cores and nvcc is slow); three -gencode
# targets give nvcc three device pipelines (cicc, then ptxas) it may run at once, one per slot.

KERNEL = "__global__ void add(float* a, const float* b, int n) {\n" \
         "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) a[i] += b[i];\n}\n"
GENCODES = " ".join("-gencode arch=compute_%d,code=sm_%d" % (a, a) for a in (75, 80, 90))


class HeavyCounter:
    """Samples the process tree under a pid and keeps the most cicc/ptxas processes seen at once (observation
    only: the build does not wait on it)."""

    def __init__(self, root_pid: int):
        self.root = root_pid
        self.most = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _count(self) -> int:
        parents, names = {}, {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            close = stat.rindex(")")
            pid = int(entry)
            names[pid] = stat[stat.index("(") + 1:close]
            parents[pid] = int(stat[close + 2:].split()[1])

        def under_root(pid):
            seen = 0
            while pid in parents and pid != self.root and seen < 64:
                pid, seen = parents[pid], seen + 1
            return pid == self.root

        return sum(1 for pid, name in names.items() if name in ("cicc", "ptxas") and under_root(pid))

    def _run(self):
        while not self._stop.is_set():
            self.most = max(self.most, self._count())
            self._stop.wait(0.005)

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.most


def nvcc_build(ws, tmpdir_env, name, *args, jobserver_flag=True, mem=None):
    """Builds k.o in its own directory with its own history store: every build starts from the prior, or from
    `mem` (headroom_mem) where given."""
    ws.write(name + "/k.cu", KERNEL)
    flags = "--threads 4" + (" --jobserver" if jobserver_flag else "")
    ws.write(name + "/build.ninja", "rule nvcc\n  command = %s -c $in -o $out %s %s\nbuild k.o: nvcc k.cu\n"
             % (NVCC, GENCODES, flags) + ("  headroom_mem = %s\n" % mem if mem else ""))
    proc = ws.spawn("-C", name, *args, env={"TMPDIR": tmpdir_env, "HEADROOM_STORE": str(ws.path(name + ".store"))})
    counter = HeavyCounter(proc.pid)
    out, err = proc.communicate(timeout=300)
    most = counter.stop()
    assert proc.returncode == 0, (out, err)
    return most, out.decode() + err.decode()  # -d explain lines are on stderr


def require_nvcc():
    if not os.access(NVCC, os.X_OK):
        if os.environ.get("CI"):
            pytest.fail("nvcc 13 is required in CI (scripts/install-test-deps.sh installs it; HEADROOM_TEST_NVCC)")
        pytest.skip("nvcc not available (scripts/install-test-deps.sh installs it)")


def test_nvcc_jobserver_slots_follow_j_and_memory(ws, tmpdir_env):
    """-j2: the nvcc job gets one extra slot and never runs more than 2 heavy processes; a budget too tight for a
    slot (its first slot is charged at the job's own guessed peak) gives it none, so its pipelines run one at a
    time; without --jobserver nvcc warns that it found no jobserver, as under ninja.
    The -j builds declare a small estimate (headroom_mem): at the prior (3 GiB a slot) their slots would follow
    what the machine has free, which other suites running beside this one change (with 15 GiB of 24 held
    elsewhere, "wide" got one slot: CI failed on it)."""
    require_nvcc()
    loose, out = nvcc_build(ws, tmpdir_env, "loose", "-j2", "--jobserver", "-d", "explain", mem="400M")
    assert 1 <= loose <= 2, loose
    assert "jobserver: k.o offered extra slot 1" in out, out
    assert "offered extra slot 2" not in out, out  # -j2: the job itself plus one

    tight, out = nvcc_build(ws, tmpdir_env, "tight", "-j4", "--jobserver", "--mem-budget=1500M", "-d", "explain")
    assert tight == 1, tight
    assert "offered extra slot" not in out, out

    wide, out = nvcc_build(ws, tmpdir_env, "wide", "-j4", "--jobserver", "-d", "explain", mem="400M")
    assert "offered extra slot 2" in out, out  # more slots than under the tight budget
    assert wide <= 3

    _, out = nvcc_build(ws, tmpdir_env, "off", "-j2", jobserver_flag=True)
    assert "no compatible jobserver found" in out
    assert jobserver_dirs(tmpdir_env) == []
