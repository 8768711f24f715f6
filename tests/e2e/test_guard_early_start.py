"""Early starts under the build guard (docs/scheduling.md, "Early starts"): on a warm build, a job too big to share
memory starts as the one before it is ending, its memory growing while that one finishes; headroom pauses it if it
gets to what the other leaves before that one ends, and resumes it once the memory is free. In a real cgroup box
(root; CI runs as root): the build finishes, the kernel kills nothing, and nothing is left paused."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from memory_box import box_factory  # noqa: E402,F401 (a fixture)
from test_memory_box import hog_manifest, history_outcomes  # noqa: E402

MiB = 1024 * 1024


def test_a_warm_build_starts_the_next_exclusive_job_before_the_last_one_ends(tmp_path, box_factory):
    """Two 500 MiB jobs of about a second under an 800 MiB budget: never both at their peak. The first build learns
    their peaks and durations; the second starts the second job early (within 0.3 x its duration of the first one's
    predicted end), says so, and still has 0 kernel OOM kills in the box and every cgroup below it."""
    (tmp_path / "build.ninja").write_text(hog_manifest(2, "500", procs=1, hold_ms=700, ramp_ms=300))
    box = box_factory(1024 * MiB)
    box.require_complete_kill_count()
    argv = [harness.headroom_binary(), "-j2", "--mem-budget=800M", "-d", "explain"]
    env = dict(os.environ, HEADROOM_STORE=str(tmp_path / "store"))
    # The first build runs them one at a time, so each is measured once, completed, at its own pace.
    cold = box.run([argv[0], "-j1"] + argv[2:], cwd=tmp_path, env=env)
    assert cold.returncode == 0, cold.stdout + cold.stderr
    assert "started early" not in cold.stderr, "a cold build knows no durations: " + cold.stderr
    for out in tmp_path.glob("out*"):
        out.unlink()
    warm = box.run(argv, cwd=tmp_path, env=env)
    output = warm.stdout + warm.stderr
    assert warm.returncode == 0, output
    assert all((tmp_path / ("out%02d" % i)).exists() for i in range(2))
    assert box.oom_kills() == 0, output
    assert "build guard: cgroup %s" % box.version in warm.stderr, output
    started = re.search(r"started early: (out0[01]): .*the memory it needs is predicted free in (\d+\.\d)s", warm.stderr)
    assert started, output
    # Within the lead: 0.3 x the job's duration as the first build measured it (about a second on a quiet machine,
    # longer on a loaded one), to the 0.1 s the message is rounded to.
    durations = [int(line.split("\t")[4]) for line in (tmp_path / ".ninja_headroom").read_text().splitlines()
                 if line.startswith("E\t") and line.endswith("\t" + started.group(1))]
    assert float(started.group(2)) <= 0.3 * durations[0] / 1000 + 0.05, (durations, output)
    summary = re.search(r"1 job started before the memory it needed was free \((\d) paused until it was\)", warm.stdout)
    assert summary, output
    # Every pause was undone while the build ran (the job finished, so nothing stays frozen): resumed for good, or
    # let climb into memory freed beside it and, if parked again, undone again; the summary counts jobs paused.
    pauses = warm.stderr.count("ninja explain: paused '")
    assert pauses == warm.stderr.count("ninja explain: resumed '") + warm.stderr.count("' climb: "), output
    assert int(summary.group(1)) == (1 if pauses else 0), output
    assert "FAILED" not in warm.stdout and "killed to save" not in output, output
    assert history_outcomes(tmp_path) == ["c"] * 4, output  # both completed at the first try, both times
