"""Several headroom builds sharing one memory (issue 29, docs/build-ledger.md): a build publishes what its running jobs
still owe in the machine-wide ledger, and another build in the same cgroup box plans only on what is left. Real
builds in a real cgroup box (root; CI runs as root; the v2 lane runs them on cgroup v2), ordered by fifos."""

import os
import select
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from memory_box import box_factory  # noqa: E402,F401 (a fixture)

MiB = 1024 * 1024
DEADLINE_S = 60.0


def read_until(fd: int, needle: bytes, what: str) -> bytes:
    """Reads a pipe until `needle` shows (or the writer is gone); a deadline, not a sleep, bounds a hung build."""
    seen = b""
    while needle not in seen:
        ready, _, _ = select.select([fd], [], [], DEADLINE_S)
        assert ready, "no %s within %ds; read so far: %r" % (what, DEADLINE_S, seen)
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        seen += chunk
    return seen


class Holder:
    """Build A: one job estimated at 1 GiB (headroom_mem) that holds almost nothing until the test releases it, so
    that for as long as it runs build A owes about 1 GiB."""

    def __init__(self, tmp_path: Path, box, env: dict):
        self.dir = tmp_path / "a"
        self.dir.mkdir()
        started, self.release = tmp_path / "started.fifo", tmp_path / "release.fifo"
        os.mkfifo(started)
        os.mkfifo(self.release)
        (self.dir / "build.ninja").write_text(
            "rule hold\n  command = echo up > %s && read x < %s && touch $out\n"
            "build a.out: hold\n  headroom_mem = 1G\n" % (started, self.release))
        # A reader exists before the job writes, so its echo never blocks and its line is never lost.
        self.started = os.open(started, os.O_RDONLY | os.O_NONBLOCK)
        self.proc = box.popen([harness.headroom_binary(), "-j1"], cwd=self.dir, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        os.set_blocking(self.started, True)
        read_until(self.started, b"up", "start of build A's job")

    def finish(self) -> subprocess.CompletedProcess:
        with open(self.release, "w") as f:
            f.write("go\n")
        out, _ = self.proc.communicate(timeout=DEADLINE_S)
        os.close(self.started)
        return subprocess.CompletedProcess(self.proc.args, self.proc.returncode, out.decode(errors="replace"), "")


def small_build(tmp_path: Path, estimate: str = "800M") -> Path:
    """Build B: one job estimated at 800 MiB, which fits the 1.5 GiB box alone but not beside build A's 1 GiB."""
    d = tmp_path / "b"
    d.mkdir()
    (d / "build.ninja").write_text("rule t\n  command = touch $out\nbuild b.out: t\n  headroom_mem = %s\n" % estimate)
    return d


def b_waits_beside_a(tmp_path: Path, box, flags: list[str], estimate: str) -> tuple[str, str]:
    """Build A holds its ~1 GiB job; build B (`-j1 -d explain` plus `flags`, one job estimated at `estimate`) starts
    beside it and must wait for memory; then A finishes and both succeed. Returns what B printed before A finished,
    and all it printed."""
    env = dict(os.environ, HEADROOM_LEDGER_DIR=str(tmp_path / "ledger"))
    holder = Holder(tmp_path, box, env)
    b = box.popen([harness.headroom_binary(), "-j1", *flags, "-d", "explain"], cwd=small_build(tmp_path, estimate),
                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen = read_until(b.stdout.fileno(), b"waiting for memory", "wait of build B")
    assert b"waiting for memory" in seen and b.poll() is None, seen
    a = holder.finish()
    rest, _ = b.communicate(timeout=DEADLINE_S)
    b_out = (seen + rest).decode(errors="replace")
    assert a.returncode == 0, a.stdout
    assert b.returncode == 0, b_out
    return seen.decode(errors="replace"), b_out


def test_a_build_waits_for_what_another_build_still_owes(tmp_path, box_factory):
    box = box_factory(1536 * MiB)
    # Nothing of B's runs, but A runs a job that owes ~1 GiB: B waits for it rather than start over budget.
    _, b_out = b_waits_beside_a(tmp_path, box, [], "800M")
    assert "waiting for 1 other headroom build(s) to free memory" in b_out, b_out
    assert "1 other headroom build reserves" in b_out, b_out
    assert "shared the memory with up to 1 other headroom build" in b_out, b_out
    assert "over budget" not in b_out, b_out
    assert (tmp_path / "b" / "b.out").exists()
    assert box.oom_kills() == 0


def test_without_the_ledger_the_second_build_does_not_see_the_first(tmp_path, box_factory):
    """The same two builds with the ledger turned off (HEADROOM_LEDGER_DIR set and empty): B sees only what is in
    use, which is almost nothing, so its 800 MiB job starts and ends while A's job still runs."""
    box = box_factory(1536 * MiB)
    env = dict(os.environ, HEADROOM_LEDGER_DIR="")
    holder = Holder(tmp_path, box, env)
    b = box.run([harness.headroom_binary(), "-j1", "-d", "explain"], cwd=small_build(tmp_path), env=env,
                timeout=DEADLINE_S)
    assert holder.proc.poll() is None  # A still holds its job
    a = holder.finish()
    assert b.returncode == 0, b.stdout + b.stderr
    assert "waiting for memory" not in b.stdout + b.stderr
    assert a.returncode == 0, a.stdout


def test_a_job_over_its_builds_budget_waits_for_another_build_too(tmp_path, box_factory):
    """B's job (1200 MiB) is over B's own budget (--mem-budget=1G) but fits the 1.5 GiB box: alone it runs (over
    budget), so beside A's running job it waits for A instead of starting where a guard would have to kill it."""
    box = box_factory(1536 * MiB)
    seen, b_out = b_waits_beside_a(tmp_path, box, ["--mem-budget=1G"], "1200M")
    assert "over budget" not in seen, seen
    assert "waiting for 1 other headroom build(s) to free memory" in b_out, b_out
    assert "over budget" in b_out, b_out  # then, alone, it ran
    assert (tmp_path / "b" / "b.out").exists()
    assert box.oom_kills() == 0
