"""headroom inside a real memory-limited cgroup box, with memory-hungry jobs (tests/helpers/memhog):
a fixed -j gets jobs OOM-killed where headroom finishes; a job whose history lies is survived; a job larger
than the box fails with a clear message; a second build uses what the first learned; the build guard turns
what would be kernel OOM kills into headroom's own kill-and-requeue, and no task stays paused at its limit or
frozen after headroom is interrupted or killed. Kernel OOM kills are counted in the box and every cgroup below it
(MemoryBox.oom_kills)."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from memory_box import MemoryBox, box_factory, require_box, require_cgroup_version  # noqa: E402,F401 (box_factory is a fixture)

MiB = 1024 * 1024


def memhog_path() -> str:
    sut = harness.headroom_binary()
    path = os.path.join(os.path.dirname(os.path.abspath(sut)), "tests", "memhog")
    if not os.access(path, os.X_OK):
        pytest.fail("memhog helper not found at %s (build the 'memhog' target)" % path)
    return path


def hog_manifest(jobs: int, size: str, procs: int = 4, hold_ms: int = 800, ramp_ms: int = 300,
                 hint: str | None = None, tools: list[str] | None = None) -> str:
    """`size` is a literal number of MiB or a shell expression such as $$(cat size.txt). `hint` sets each
    edge's headroom_mem (an estimate that may lie, as a cold prior can). `tools` gives job i the program
    tools[i] (memhog under other names: unrelated commands, so nothing learned from one applies to another)."""
    lines = ["rule hog",
             "  command = $tool --mb %s --ramp-ms %d --hold-ms %d --procs %d && touch $out"
             % (size, ramp_ms, hold_ms, procs),
             "  description = HOG $out"]
    for i in range(jobs):
        lines.append("build out%02d: hog" % i)
        lines.append("  tool = %s" % (tools[i] if tools else memhog_path()))
        if hint:
            lines.append("  headroom_mem = %s" % hint)
    return "\n".join(lines) + "\n"


def memhog_aliases(directory: Path, count: int) -> list[str]:
    """`count` differently named links to memhog: to headroom, unrelated tools that share no class or family."""
    names = []
    for i in range(count):
        link = directory / ("hog_%s" % "abcdefghijklmnop"[i])
        link.symlink_to(memhog_path())
        names.append(str(link))
    return names


def history_outcomes(directory: Path) -> list[str]:
    """Outcome letters of every record in .ninja_headroom ('c' completed, 'o' OOM-killed, 's' safety-killed)."""
    names = (".ninja_headroom", ".headroom_history")  # the build dir's history, current name first
    path = next((directory / n for n in names if (directory / n).exists()), directory / names[0])
    outcomes = []
    for line in path.read_text().splitlines():
        # E <class> <command hash> <peak> <duration> <peak method> <outcome> <rise curve> <output>
        fields = line.split("\t")
        if fields[0] == "E":
            outcomes.append(fields[6])
    return outcomes


def test_fixed_parallelism_is_oom_killed_where_headroom_finishes(tmp_path, box_factory):
    """12 jobs of 400 MiB (4 processes each) in a 1.5 GiB box: demand at -j8 is ~2x the box."""
    manifest = hog_manifest(12, "400")
    ninja_dir = tmp_path / "ninja"
    ours_dir = tmp_path / "headroom"
    for d in (ninja_dir, ours_dir):
        d.mkdir()
        (d / "build.ninja").write_text(manifest)

    ninja_box = box_factory(1536 * MiB)
    ninja = ninja_box.run([harness.reference_binary(), "-j8"], cwd=ninja_dir)
    assert ninja.returncode != 0, ninja.stdout
    assert ninja_box.oom_kills() > 0

    our_box = box_factory(1536 * MiB)
    our_box.require_complete_kill_count()
    ours = our_box.run([harness.headroom_binary(), "-j8"], cwd=ours_dir)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert our_box.oom_kills() == 0
    assert all((ours_dir / ("out%02d" % i)).exists() for i in range(12))
    # No attempt was OOM-killed ('o'); headroom may have killed and requeued one itself ('s': the safety net or
    # the build guard chose it), which costs that job's progress but never a kernel kill.
    assert "o" not in history_outcomes(ours_dir)


def test_job_that_outgrows_its_history_is_survived(tmp_path, box_factory):
    """History says 100 MiB; the same commands then take 600 MiB each, 6 at once in a 1.5 GiB box."""
    (tmp_path / "build.ninja").write_text(hog_manifest(6, "$$(cat size.txt)", procs=2))
    (tmp_path / "size.txt").write_text("100\n")
    box = box_factory(1536 * MiB)
    first = box.run([harness.headroom_binary(), "-j6"], cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr

    for out in tmp_path.glob("out*"):
        out.unlink()
    (tmp_path / "size.txt").write_text("600\n")
    second = box.run([harness.headroom_binary(), "-j6"], cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert all((tmp_path / ("out%02d" % i)).exists() for i in range(6))


def test_job_larger_than_the_box_fails_with_a_clear_message(tmp_path, box_factory):
    (tmp_path / "build.ninja").write_text(hog_manifest(1, "900", procs=1, hold_ms=200))
    box = box_factory(512 * MiB)
    box.require_complete_kill_count()
    result = box.run([harness.headroom_binary(), "-j4"], cwd=tmp_path)
    assert result.returncode != 0
    assert "FAILED:" in result.stdout
    message = [line for line in result.stdout.splitlines() if line.startswith("headroom:")]
    assert message, result.stdout
    assert re.search(r"GiB|MiB", message[0]) and "budget" in message[0], message[0]
    # It was retried before giving up, and every attempt is in the history.
    assert len(history_outcomes(tmp_path)) >= 2
    # The build guard stopped it each time before the kernel had to.
    assert box.oom_kills() == 0, result.stdout


def test_second_build_uses_what_the_first_learned(tmp_path, box_factory):
    (tmp_path / "build.ninja").write_text(hog_manifest(8, "300", procs=3))
    box = box_factory(1280 * MiB)
    box.require_complete_kill_count()
    first = box.run([harness.headroom_binary(), "-j8"], cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    for out in tmp_path.glob("out*"):
        out.unlink()
    second = box.run([harness.headroom_binary(), "-j8", "-d", "explain"], cwd=tmp_path)
    assert second.returncode == 0, second.stdout + second.stderr
    assert box.oom_kills() == 0
    outcomes = history_outcomes(tmp_path)
    assert len(outcomes) >= 16 and set(outcomes) == {"c"}
    # Waiting decisions now quote measured figures from the first build.
    waits = [l for l in second.stderr.splitlines() if "waiting for memory" in l]
    assert waits, second.stderr


# --- The build guard -------------------------------------------------------------------------------------------------


def shared_group(box: MemoryBox) -> Path:
    """The group every build of a cgroup (the box here) makes its own group in, and the guard caps."""
    return box.path / "headroom.guard"


def guard_group(box: MemoryBox, headroom_pid: int) -> Path:
    """The per-build cgroup headroom makes inside the shared group, its jobs' groups below it."""
    return shared_group(box) / ("headroom-%d" % headroom_pid)


def oom_control(group: Path) -> dict:
    try:
        text = (group / "memory.oom_control").read_text()
    except OSError:
        return {}
    return {k: int(v) for k, v in (line.split() for line in text.splitlines())}


def wait_until(condition, what: str, timeout: float = 30.0, every: float = 0.01):
    """Polls a condition of the kernel's state (not a sleep standing in for one); fails after `timeout`."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail("timed out waiting until " + what)
        time.sleep(every)


def paused_or_frozen(pid: int) -> str | None:
    """Why the task cannot run on its own: waiting at a memory cgroup's limit, or frozen; None otherwise."""
    try:
        wchan = Path("/proc/%d/wchan" % pid).read_text()
        status = Path("/proc/%d/status" % pid).read_text()
    except OSError:
        return None  # gone
    if "mem_cgroup_oom" in wchan:
        return "waiting at a memory limit (%s)" % wchan
    if "freezer" in wchan or "refrigerator" in wchan or "do_freezer_trap" in wchan:
        return "frozen (%s)" % wchan
    state = re.search(r"^State:\s+(\S)", status, re.M)
    if state and state.group(1) in ("T", "t"):
        return "stopped"
    return None


def require_guard_kernel(box: MemoryBox):
    require_cgroup_version(box.version, "v1", "the interrupt tests pause tasks through v1's memory.oom_control")


def test_cold_graph_that_needs_the_guard_finishes_without_kernel_oom_kills(tmp_path, box_factory):
    """6 unrelated jobs of 300 MiB whose estimates say 20 MiB, growing within one tick, -j6 in a 1.25 GiB box:
    admission lets them all start and they outgrow the box before the safety net's next look. The guard pauses them at the limit,
    headroom kills and requeues the youngest, and the kernel kills nothing (box and every job cgroup)."""
    tools = memhog_aliases(tmp_path, 6)
    (tmp_path / "build.ninja").write_text(hog_manifest(6, "300", procs=2, hold_ms=600, ramp_ms=100, hint="20M",
                                                       tools=tools))
    box = box_factory(1280 * MiB)
    box.require_complete_kill_count()
    result = box.run([harness.headroom_binary(), "-j6", "-d", "explain"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert all((tmp_path / ("out%02d" % i)).exists() for i in range(6))
    assert box.oom_kills() == 0, result.stdout + result.stderr
    assert "build guard: cgroup %s" % box.version in result.stderr
    # The guard was needed: the build stalled at its limit and headroom chose who paid.
    assert re.search(r"stalled at the limit \d+ times?, [1-9]\d* jobs? killed and requeued", result.stdout), \
        result.stdout
    assert "s" in history_outcomes(tmp_path)  # a safety-killed (requeued) attempt, never an 'o' (OOM-killed) one
    assert "o" not in history_outcomes(tmp_path)


def test_without_cgroup_access_the_summary_says_there_is_no_guard(tmp_path):
    """Not root (or no memory cgroup): today's behaviour, said once in -d explain (with the first memory decision,
    so a build memory never shaped explains exactly what ninja's would) and in the summary."""
    if os.geteuid() == 0:
        # Root can always write cgroups here; drop to nobody for this run when possible.
        runner = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        if subprocess.run(["sh", "-c", "command -v setpriv"], capture_output=True).returncode != 0:
            pytest.skip("setpriv not available to drop root")
        os.chmod(tmp_path, 0o777)
    else:
        runner = []
    # Two jobs said to need 600 MiB each under a 1 GiB budget: the second waits for the first (a memory decision).
    (tmp_path / "build.ninja").write_text("rule t\n  command = touch $out\n"
                                          "build a: t\n  headroom_mem = 600M\nbuild b: t\n  headroom_mem = 600M\n")
    result = subprocess.run(runner + [harness.headroom_binary(), "-j2", "--mem-budget=1G", "-d", "explain"],
                            cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr
    notes = [l for l in result.stderr.splitlines() if "no build guard:" in l]
    assert len(notes) == 1, result.stderr
    assert "OOM killer" in notes[0]
    assert "waiting for memory" in result.stderr
    summary = [l for l in result.stdout.splitlines() if l.startswith("headroom: no build guard:")]
    assert len(summary) == 1, result.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL], ids=["SIGINT", "SIGTERM", "SIGKILL"])
def test_no_task_stays_paused_after_headroom_is_interrupted_or_killed(tmp_path, box_factory, sig):
    """Two 250 MiB jobs (estimated 10 MiB) under a 300 MiB budget pause at the guard's limit. headroom is stopped
    so it cannot resolve that, then sent `sig`. Afterwards no task may wait at a limit or be frozen: on SIGINT and
    SIGTERM headroom lifts the guard before it aborts the jobs; on SIGKILL its watcher does."""
    (tmp_path / "build.ninja").write_text(hog_manifest(2, "250", procs=1, hold_ms=200, ramp_ms=200, hint="10M"))
    box = box_factory(1024 * MiB)
    require_guard_kernel(box)
    proc = box.popen([harness.headroom_binary(), "-j2", "--mem-budget=300M"], cwd=tmp_path,
                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        group = guard_group(box, proc.pid)
        capped = shared_group(box)

        def runs_memhog(cgroup: Path) -> bool:
            # Spare job cgroups hold a child of headroom's waiting for the next job (a prepared launch, cgroup v1).
            for pid in (cgroup / "cgroup.procs").read_text().split():
                try:
                    if b"memhog" in Path("/proc/%s/cmdline" % pid).read_bytes():
                        return True
                except OSError:
                    pass
            return False

        def jobs_running() -> bool:
            return len([d for d in group.glob("job-*") if runs_memhog(d)]) == 2

        wait_until(lambda: oom_control(capped).get("oom_kill_disable") == 1, "the guard is armed")
        wait_until(jobs_running, "both jobs run in the guarded group")
        proc.send_signal(signal.SIGSTOP)  # headroom can no longer resolve the stall
        wait_until(lambda: oom_control(capped).get("under_oom") == 1, "the jobs wait at the guard's limit")
        proc.send_signal(sig)
        if sig != signal.SIGKILL:
            proc.send_signal(signal.SIGCONT)
        output, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if sig == signal.SIGKILL:
        assert proc.returncode == -signal.SIGKILL
        # The watcher gives the group back to the kernel's rules (no limit of headroom's, OOM killer on: this build
        # was the last in it), moves the orphaned jobs out into the box and removes the groups.
        wait_until(lambda: not capped.exists() or oom_control(capped).get("oom_kill_disable") == 0,
                   "the watcher undid the guard")
    else:
        assert proc.returncode != 0
        assert "interrupted by user" in output, output
    # Whatever is left (the orphans of a SIGKILLed headroom) runs on and ends; nothing waits at a limit.
    stuck = {}

    def nothing_stuck() -> bool:
        stuck.clear()
        for pid in box.tasks():
            why = paused_or_frozen(pid)
            if why:
                stuck[pid] = why
        return not stuck and oom_control(capped).get("under_oom", 0) == 0

    wait_until(nothing_stuck, "no task waits at a limit or is frozen (%s)" % stuck)
    wait_until(lambda: not box.tasks(), "the jobs (and the watcher) ended")
    wait_until(lambda: not group.exists() and not capped.exists(), "headroom's cgroups are gone")
