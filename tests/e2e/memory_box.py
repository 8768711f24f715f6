"""A real cgroup "box" with a memory limit, for end-to-end memory tests: commands run inside it, and the
box's own OOM-kill counter says whether the kernel had to kill anything. Needs root (CI runs as root)."""

import os
import subprocess
import uuid
from pathlib import Path

import pytest


def _own_cgroup() -> tuple[str, Path]:
    """('v1'|'v2', directory of this process's memory cgroup)."""
    v2_path = None
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hierarchy, controllers, path = line.split(":", 2)
        if "memory" in controllers.split(","):
            return "v1", Path("/sys/fs/cgroup/memory") / path.lstrip("/")
        if hierarchy == "0":
            v2_path = path
    if v2_path is not None:
        root = Path("/sys/fs/cgroup")
        if (root / "cgroup.controllers").exists() and "memory" in (root / "cgroup.controllers").read_text().split():
            return "v2", root / v2_path.lstrip("/")
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


def require_box():
    reason = unavailable_reason()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(reason + " (required in CI)")
        pytest.skip(reason)


class MemoryBox:
    def __init__(self, limit_bytes: int):
        self.version, own = _own_cgroup()
        self.path = own / ("hr-e2e-" + uuid.uuid4().hex[:10])
        self.path.mkdir()
        if self.version == "v1":
            (self.path / "memory.limit_in_bytes").write_text(str(limit_bytes))
        else:
            (self.path / "memory.max").write_text(str(limit_bytes))
            swap = self.path / "memory.swap.max"
            if swap.exists():
                swap.write_text("0")

    def run(self, argv: list[str], cwd: Path, env: dict | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
        """Runs argv inside the box (the shell moves itself in, then execs)."""
        wrapper = ["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(self.path)] + argv
        return subprocess.run(wrapper, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)

    def oom_kills(self) -> int:
        if self.version == "v1":
            text = (self.path / "memory.oom_control").read_text()
        else:
            text = (self.path / "memory.events").read_text()
        for line in text.splitlines():
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def remove(self):
        # Everything that ran inside was waited for by the command itself; only empty child cgroups can be left.
        for child in sorted((p for p in self.path.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            try:
                child.rmdir()
            except OSError:
                pass
        try:
            self.path.rmdir()
        except OSError:
            pass
