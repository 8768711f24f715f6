"""The build guard in the cgroup shapes users build in (issue 29, docs/build-guard.md): several builds in one cgroup
share one capped group (so their sum never passes the enclosing limit: 0 kernel OOM kills), a headroom nested in
another's job gets a guard of its own, no exit path leaves a cgroup behind (a SIGKILLed build's groups are swept by
the next build), and, on cgroup v2 only (the VM lane: scripts/v2-vm.sh), a build sharing its cgroup with a shell
moves both into a leaf so that the guard can be armed."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from memory_box import MemoryBox, box_factory, require_box, require_cgroup_version  # noqa: E402,F401 (box_factory is a fixture)
from test_memory_box import hog_manifest, memhog_aliases, shared_group, wait_until  # noqa: E402

MiB = 1024 * 1024


def leftover_groups(box: MemoryBox) -> list[str]:
    """headroom's cgroups still in the box (the box's own children; a test's extra groups are named otherwise)."""
    return sorted(p.name for p in box.path.iterdir() if p.is_dir() and p.name.startswith("headroom"))


def test_two_concurrent_builds_in_one_box_share_one_guard(tmp_path, box_factory):
    """Two cold builds at once in one 1.25 GiB box, each with 4 jobs of 300 MiB estimated at 20 MiB (-j4): together
    they ask for twice the box. Each capping a group of its own at the box's limit let their sum pass it and the
    kernel kill at the box (issue 29: 11 kills in a 3 GiB box). One shared cap makes them wait at it instead, and
    one build at a time kills and requeues: 0 kernel OOM kills, both builds pass."""
    box = box_factory(1280 * MiB)
    box.require_complete_kill_count()
    dirs = []
    for name in ("a", "b"):
        d = tmp_path / name
        d.mkdir()
        tools = memhog_aliases(d, 4)
        (d / "build.ninja").write_text(hog_manifest(4, "300", procs=2, hold_ms=800, ramp_ms=100, hint="20M",
                                                    tools=tools))
        dirs.append(d)
    procs = [box.popen([harness.headroom_binary(), "-j4", "-d", "explain"], cwd=d, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True) for d in dirs]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, out + err
    # A build that memory never shaped explains nothing about it (as ninja's would); the other says what guards it.
    assert any("build guard: cgroup %s" % box.version in err for _, err in outputs)
    for d in dirs:
        assert all((d / ("out%02d" % i)).exists() for i in range(4))
    assert box.oom_kills() == 0, "\n".join(o + e for o, e in outputs)
    # The shape was exercised: the builds reached the shared cap (each says so in its summary when it stalled).
    assert any("stalled at the limit" in out for out, _ in outputs), "\n".join(o for o, _ in outputs)
    assert leftover_groups(box) == [], leftover_groups(box)


def simple_build(directory: Path, command: str = "touch $out", jobs: int = 2, mem: str = "600M"):
    """`jobs` edges said to need `mem` each: under a 1 GiB budget the second waits for the first (a memory decision,
    so the guard is armed)."""
    lines = ["rule t", "  command = %s" % command]
    for i in range(jobs):
        lines += ["build out%d: t" % i, "  headroom_mem = %s" % mem]
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("ending", ["success", "failure"])
def test_a_finished_build_leaves_no_cgroup_behind(tmp_path, box_factory, ending):
    box = box_factory(1024 * MiB)
    simple_build(tmp_path, "touch $out" if ending == "success" else "false")
    result = box.run([harness.headroom_binary(), "-j2", "--mem-budget=1G", "-d", "explain"], cwd=tmp_path)
    assert (result.returncode == 0) == (ending == "success"), result.stdout + result.stderr
    assert "build guard: cgroup" in result.stderr, result.stderr
    assert leftover_groups(box) == []


def is_headroom(pid: int) -> bool:
    """headroom or its watcher (a fork of it, same command line)."""
    try:
        return os.path.basename(harness.headroom_binary()).encode() in Path("/proc/%d/cmdline" % pid).read_bytes()
    except OSError:
        return False


def kill_if_alive(pid: int) -> None:
    """SIGKILL a task listed in a cgroup a moment ago; one already exiting (a killed watcher on its way out is still
    listed for a moment) is what the caller wanted anyway."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def stopped(pid: int) -> bool:
    stat = Path("/proc/%d/stat" % pid).read_text()
    return stat[stat.rindex(")") + 2] in "Tt"


def job_is_running(box: MemoryBox, headroom_pid: int) -> bool:
    group = shared_group(box) / ("headroom-%d" % headroom_pid)
    for job in group.glob("job-*"):
        for pid in (job / "cgroup.procs").read_text().split():
            try:
                if b"sleep" in Path("/proc/%s/cmdline" % pid).read_bytes():
                    return True
            except OSError:
                pass
    return False


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL],
                         ids=["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"])
def test_an_interrupted_or_killed_build_leaves_no_cgroup_behind(tmp_path, box_factory, sig):
    box = box_factory(1024 * MiB)
    simple_build(tmp_path, "sleep 30 && touch $out", jobs=1)
    proc = box.popen([harness.headroom_binary(), "-j1", "--mem-budget=1G"], cwd=tmp_path, stdout=subprocess.PIPE,
                     stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: job_is_running(box, proc.pid), "the job runs in its cgroup")
        proc.send_signal(sig)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode != 0
    if sig == signal.SIGKILL:
        # The orphaned sleep runs on (as under ninja): the watcher moves it out of headroom's groups and removes them;
        # then the test ends the orphan (on v2 the watcher then also undoes the leaf the orphan was moved into).
        build_group = shared_group(box) / ("headroom-%d" % proc.pid)
        wait_until(lambda: not build_group.exists(), "the watcher removed the build's group")
        for pid in box.tasks():
            if not is_headroom(pid):
                kill_if_alive(pid)
        wait_until(lambda: not box.tasks(), "the orphan and the watcher ended (%s)" % box.tasks())
    wait_until(lambda: leftover_groups(box) == [], "headroom's cgroups are gone (%s)" % leftover_groups(box))


def enter_dir(box: MemoryBox) -> Path:
    """Where a new process of the box's user starts: on v2, once a build moved the box's processes into a leaf (the
    box then hands memory down and may hold no process), the leaf, as for a shell that was moved there."""
    leaf = box.path / "headroom.leaf"
    return leaf if box.version == "v2" and leaf.exists() else box.path


def run_in(cgroup: Path, box: MemoryBox, argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["sh", "-c", 'echo $$ > "$0/cgroup.procs" && exec "$@"', str(cgroup)] + argv, cwd=cwd,
                          env=box.env(), capture_output=True, text=True, timeout=300)


def test_groups_of_a_build_killed_with_its_watcher_are_swept_by_the_next_build(tmp_path, box_factory):
    """Nothing cleans up after a build SIGKILLed together with its watcher (or killed before it armed a guard): its
    group stays. The next build in the same cgroup removes the groups of dead builds that hold no process."""
    box = box_factory(1024 * MiB)
    first = tmp_path / "first"
    first.mkdir()
    simple_build(first, "sleep 30 && touch $out", jobs=1)
    proc = box.popen([harness.headroom_binary(), "-j1", "--mem-budget=1G"], cwd=first, stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: job_is_running(box, proc.pid), "the job runs in its cgroup")
        # The box's own processes are headroom and its watcher (jobs run in groups below): both die, stopped first so
        # that the watcher cannot act on headroom's death in between.
        own = [p for p in box.tasks() if is_headroom(p)]
        for pid in own:
            os.kill(pid, signal.SIGSTOP)
        wait_until(lambda: all(stopped(pid) for pid in own), "headroom and its watcher are stopped")
        for pid in own:
            os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for pid in box.tasks():  # the orphaned job
        kill_if_alive(pid)
    stale = shared_group(box) / ("headroom-%d" % proc.pid)
    wait_until(lambda: not box.tasks(), "the orphaned job ended")
    # Normally nothing removed the killed build's group, and the next build must sweep it. Under heavy load (2 of 5
    # runs beside a TCG VM) it was already gone, by a path not yet found; what this test guards, no group left once
    # the next build ran, is still asserted then (the sweep itself: CgroupTreeTest.SweepRemovesOnlyEmptyGroupsOfDeadBuilds).
    if not stale.exists():
        print("note: the killed build's group was gone before the next build; its sweep was not exercised")
    second = tmp_path / "second"
    second.mkdir()
    simple_build(second)
    result = run_in(enter_dir(box), box, [harness.headroom_binary(), "-j2", "--mem-budget=1G"], cwd=second)
    assert result.returncode == 0, result.stdout + result.stderr
    assert leftover_groups(box) == [], leftover_groups(box)


def test_a_build_nested_in_another_builds_job_gets_a_guard_of_its_own(tmp_path, box_factory):
    """The inner headroom's own cgroup is the outer build's job cgroup: it makes its groups there and is guarded too
    (its -d explain line is the job's output, which the outer build prints)."""
    box = box_factory(1024 * MiB)
    inner = tmp_path / "inner"
    inner.mkdir()
    simple_build(inner)
    (tmp_path / "build.ninja").write_text(
        "rule nested\n  command = %s -C inner -j2 --mem-budget=1G -d explain 2>&1 && touch $out\n"
        "build out: nested\n  headroom_mem = 100M\n" % harness.headroom_binary())
    result = box.run([harness.headroom_binary(), "-j1", "--mem-budget=1G"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "build guard: cgroup %s" % box.version in result.stdout, result.stdout
    assert leftover_groups(box) == []


# --- cgroup v2 only: on a v1 host the v2 VM lane runs these (scripts/test-v2.sh; memory_box.require_cgroup_version).

def require_v2_box(box: MemoryBox):
    require_cgroup_version(box.version, "v2", "a v2 leaf and memory.high")


def test_v2_build_sharing_its_cgroup_with_a_shell_moves_both_into_a_leaf(tmp_path, box_factory):
    """A container's root cgroup or a root terminal's scope: a shell lives beside the build, so the cgroup cannot
    hand memory down (EBUSY) until its processes move into a leaf. The build moves itself and the shell there, is
    guarded, and afterwards the shell still lives in the leaf (a normal child now) and headroom's groups are gone."""
    box = box_factory(1024 * MiB)
    require_v2_box(box)
    shell = subprocess.Popen(box.argv(["sleep", "120"]))
    try:
        wait_until(lambda: str(shell.pid) in (box.path / "cgroup.procs").read_text().split(), "the shell is in the box")
        simple_build(tmp_path)
        result = box.run([harness.headroom_binary(), "-j2", "--mem-budget=1G", "-d", "explain"], cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "build guard: cgroup v2" in result.stderr, result.stderr
        leaf = box.path / "headroom.leaf"
        assert str(shell.pid) in (leaf / "cgroup.procs").read_text().split()
        assert leftover_groups(box) == ["headroom.leaf"], leftover_groups(box)
    finally:
        shell.kill()
        shell.wait()


def test_v2_build_alone_in_its_cgroup_leaves_it_as_it_found_it(tmp_path, box_factory):
    """Alone, the build moves only itself into the leaf; at its end it moves back and removes the leaf (issue 29 saw
    headroom.self left behind after a normal build)."""
    box = box_factory(1024 * MiB)
    require_v2_box(box)
    simple_build(tmp_path)
    result = box.run([harness.headroom_binary(), "-j2", "--mem-budget=1G", "-d", "explain"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "build guard: cgroup v2" in result.stderr, result.stderr
    assert leftover_groups(box) == [], leftover_groups(box)
