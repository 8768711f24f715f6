"""headroom inside a real memory-limited cgroup box, with memory-hungry jobs (tests/helpers/memhog):
a fixed -j gets jobs OOM-killed where headroom finishes; a job whose history lies is survived; a job larger
than the box fails with a clear message; a second build uses what the first learned."""

import os
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from memory_box import MemoryBox, require_box  # noqa: E402

MiB = 1024 * 1024


def memhog_path() -> str:
    sut = harness.headroom_binary()
    path = os.path.join(os.path.dirname(os.path.abspath(sut)), "tests", "memhog")
    if not os.access(path, os.X_OK):
        pytest.fail("memhog helper not found at %s (build the 'memhog' target)" % path)
    return path


def hog_manifest(jobs: int, size: str, procs: int = 4, hold_ms: int = 800) -> str:
    """`size` is a literal number of MiB or a shell expression such as $$(cat size.txt)."""
    lines = ["rule hog",
             "  command = %s --mb %s --ramp-ms 300 --hold-ms %d --procs %d && touch $out"
             % (memhog_path(), size, hold_ms, procs),
             "  description = HOG $out"]
    lines += ["build out%02d: hog" % i for i in range(jobs)]
    return "\n".join(lines) + "\n"


def history_outcomes(directory: Path) -> list[str]:
    """Outcome letters of every record in .headroom_history ('c' completed, 'o' OOM-killed, 's' safety-killed)."""
    path = directory / ".headroom_history"
    outcomes = []
    for line in path.read_text().splitlines():
        fields = line.split("\t")
        if fields[0] == "E":
            outcomes.append(fields[5])
    return outcomes


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
    ours = our_box.run([harness.headroom_binary(), "-j8"], cwd=ours_dir)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert our_box.oom_kills() == 0
    assert all((ours_dir / ("out%02d" % i)).exists() for i in range(12))
    assert set(history_outcomes(ours_dir)) == {"c"}


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
    result = box.run([harness.headroom_binary(), "-j4"], cwd=tmp_path)
    assert result.returncode != 0
    assert "FAILED:" in result.stdout
    message = [line for line in result.stdout.splitlines() if line.startswith("headroom:")]
    assert message, result.stdout
    assert re.search(r"GiB|MiB", message[0]) and "budget" in message[0], message[0]
    # It was retried before giving up, and every attempt is in the history.
    assert len(history_outcomes(tmp_path)) >= 2


def test_second_build_uses_what_the_first_learned(tmp_path, box_factory):
    (tmp_path / "build.ninja").write_text(hog_manifest(8, "300", procs=3))
    box = box_factory(1280 * MiB)
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
