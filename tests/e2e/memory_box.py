"""A real cgroup "box" with a memory limit, for end-to-end memory tests: commands run inside it, and the kernel's
own records say whether it had to OOM-kill anything in the box or in any cgroup below it. Needs root (CI runs as root).

Counting kills honestly: on cgroup v1 the kernel counts an OOM kill only in the victim's own cgroup
(memory.oom_control oom_kill), not in its parents, and headroom removes each job's cgroup when the job ends, taking
that counter with it. So `oom_kills()` is the larger of (a) the box's counter plus every cgroup still below it, and
(b) the kernel log's "oom-kill:" records since the box was made whose task_memcg is the box or below it (read from
/dev/kmsg; one record per kill, kept after the cgroup is gone). v2's memory.events already counts the subtree."""

import errno
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

V1_MEMORY_ROOT = Path("/sys/fs/cgroup/memory")
V2_ROOT = Path("/sys/fs/cgroup")
OOM_RECORD = re.compile(r"oom-kill:.*?task_memcg=([^,\s]+)")


def _own_cgroup() -> tuple[str, Path]:
    """('v1'|'v2', directory of this process's memory cgroup)."""
    v2_path = None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return "v1", V1_MEMORY_ROOT / path.lstrip("/")
        if hierarchy == "0":
            v2_path = path
    if v2_path is not None:
        if (V2_ROOT / "cgroup.controllers").exists() and "memory" in (V2_ROOT / "cgroup.controllers").read_text().split():
            return "v2", V2_ROOT / v2_path.lstrip("/")
    raise RuntimeError("no cgroup memory controller found")


def unavailable_reason() -> str | None:
    if os.geteuid() != 0:
        return "memory box tests need root to create cgroups"
    try:
        version, own = _own_cgroup()
    except RuntimeError as e:
        return str(e)
    if not os.access(own, os.W_OK):
        return "own memory cgroup %s is not writable" % own
    return None


def require_cgroup_version(found: str, wanted: str, what: str):
    """A test of cgroup `wanted` (v1|v2) only, on a box of version `found`. It skips where this test command runs a lane
    of `wanted` elsewhere (HEADROOM_CGROUP_OTHER_LANE, set by scripts/test.sh and scripts/test-v2.sh: the other lane
    runs it), fails under CI (in the lane of `wanted` too: HEADROOM_CGROUP_LANE) and skips otherwise."""
    if found == wanted:
        return
    reason = "%s: cgroup %s only, this box is %s" % (what, wanted, found)
    if os.environ.get("HEADROOM_CGROUP_OTHER_LANE") == wanted and os.environ.get("HEADROOM_CGROUP_LANE") != wanted:
        pytest.skip(reason + " (this test command's cgroup %s lane runs it: scripts/test-v2.sh)" % wanted)
    if os.environ.get("CI"):
        pytest.fail(reason + " (required in CI: run it in the cgroup %s lane, scripts/test-v2.sh --cgroup %s)"
                    % (wanted, wanted))
    pytest.skip(reason)


def require_box():
    reason = unavailable_reason()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason + " (required in CI)")
        pytest.skip(reason)


def read_oom_kill_counter(cgroup: Path, version: str) -> int:
    """The oom_kill figure of one cgroup (v1: its own kills only; v2: its whole subtree)."""
    name = "memory.oom_control" if version == "v1" else "memory.events"
    try:
        text = (cgroup / name).read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill":
            return int(value)
    return 0


def count_tree_oom_kills(top: Path, version: str) -> int:
    """Kills counted by `top`'s own counter and every cgroup still below it (v1 needs the sum; v2's top counts all)."""
    if version == "v2":
        return read_oom_kill_counter(top, version)
    total = read_oom_kill_counter(top, version)
    for dirpath, dirnames, _ in os.walk(top):
        for d in dirnames:
            total += read_oom_kill_counter(Path(dirpath) / d, version)
    return total


class KernelOomLog:
    """OOM-kill records the kernel logs from now on (/dev/kmsg), attributed by the victim's memory cgroup."""

    def __init__(self):
        try:
            self.fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
            os.lseek(self.fd, 0, os.SEEK_END)  # only records from now on
            self.reason = None
        except OSError as e:
            self.fd = None
            self.reason = "cannot read the kernel log (/dev/kmsg): %s" % e
        self.victim_cgroups: list[str] = []

    def _drain(self):
        if self.fd is None:
            return
        while True:
            try:
                record = os.read(self.fd, 8192).decode("utf-8", "replace")
            except OSError as e:
                if e.errno == errno.EAGAIN:
                    return
                if e.errno == errno.EPIPE:  # records were overwritten before we read them; carry on
                    continue
                raise
            match = OOM_RECORD.search(record)
            if match:
                self.victim_cgroups.append(match.group(1))

    def kills_under(self, box_name: str) -> int:
        """Kills whose victim's cgroup path has `box_name` as a component (the box or any cgroup below it)."""
        self._drain()
        return sum(1 for path in self.victim_cgroups if box_name in path.split("/"))

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class MemoryBox:
    def __init__(self, limit_bytes: int, name: str | None = None):
        """`name`: the box's cgroup name (default a fresh "hr-e2e-..."), e.g. one shaped like a systemd unit."""
        self.version, own = _own_cgroup()
        self.name = name or "hr-e2e-" + uuid.uuid4().hex[:10]
        self.path = own / self.name
        self.kernel_log = KernelOomLog()
        # headroom's per-user store ($XDG_CACHE_HOME/headroom) is the box's own: what other tests (or the user's
        # builds) taught must not make a cold build warm, and a test must not teach later ones.
        self.cache_home = tempfile.mkdtemp(prefix="hr-e2e-cache-")
        self.path.mkdir()
        if self.version == "v1":
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
        else:
            (self.path / "memory.max").write_text(str(limit_bytes))
            swap = self.path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")

    def require_complete_kill_count(self):
        """Tests that assert 0 kills where cgroups come and go need the kernel log (CI has it as root)."""
        if self.version == "v1" and self.kernel_log.fd is None:
            if os.environ.get("CI"):
                pytest.fail(self.kernel_log.reason + " (required in CI to count kills in removed job cgroups)")
            pytest.skip(self.kernel_log.reason)

    def entry(self) -> Path:
        """Where a new process joins the box: the box itself, or on v2, once a build moved the box's processes into
        headroom.leaf (the box then hands memory down and may hold no process of its own), that leaf, as a shell
        the build moved there would start the next build."""
        leaf = self.path / "headroom.leaf"
        return leaf if self.version == "v2" and leaf.is_dir() else self.path

    def argv(self, argv: list[str]) -> list[str]:
        """argv wrapped to run inside the box (the shell moves itself in, then execs: the pid stays argv's)."""
        return ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.entry())] + argv

    def env(self, env: dict | None = None) -> dict:
        merged = dict(os.environ if env is None else env)
        merged["XDG_CACHE_HOME"] = self.cache_home
        return merged

    def run(self, argv: list[str], cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        """Runs argv inside the box."""
        return subprocess.run(self.argv(argv), cwd=cwd, env=self.env(env), capture_output=True, text=True,
                              timeout=timeout)

    def popen(self, argv: list[str], cwd: Path, env: dict | None = None, **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.argv(argv), cwd=cwd, env=self.env(env), **kwargs)

    def oom_kills(self) -> int:
        """Kernel OOM kills in the box and every cgroup below it since the box was made (see the module doc)."""
        counted = count_tree_oom_kills(self.path, self.version)
        return max(counted, self.kernel_log.kills_under(self.name))

    def tasks(self) -> list[int]:
        """Every task in the box or below it."""
        pids = []
        for dirpath, _, filenames in os.walk(self.path):
            if "cgroup.procs" in filenames:
                try:
                    pids += [int(p) for p in (Path(dirpath) / "cgroup.procs").read_text().split()]
                except OSError:
                    pass
        return pids

    def remove(self):
        self.kernel_log.close()
        shutil.rmtree(self.cache_home, ignore_errors=True)
        for pid in self.tasks():  # a test that failed half-way may leave jobs behind
            try:
                os.kill(pid, 9)
            except OSError:
                pass
        for child in sorted((p for p in self.path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            try:
                child.rmdir()
            except OSError:
                pass
        try:
            self.path.rmdir()
        except OSError:
            pass


# A pytest fixture (test modules import it by name): make(limit_bytes) gives a new box, each removed at the end.
@pytest.fixture
def box_factory():
    require_box()
    boxes = []

    def make(limit_bytes: int) -> MemoryBox:
        box = MemoryBox(limit_bytes)
        boxes.append(box)
        return box

    yield make
    for box in boxes:
        box.remove()
