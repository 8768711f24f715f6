"""Rise curves and rise bets (docs/scheduling.md, "Rise bets"): headroom records how each job's memory rose, keeps
it in .ninja_headroom with the run, and under the build guard counts a job that is still ramping at what it will
hold when a shorter job beside it ends. In a real cgroup box (root; CI runs as root), with memhog's linear ramps:
the recorded curve never says the job stayed low longer than it did, and a warm build runs a quick job beside a
ramping heavy one that its whole estimate would have kept it from, with 0 kernel OOM kills."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from memory_box import box_factory  # noqa: E402,F401 (a fixture)
from test_memory_box import history_outcomes, memhog_path  # noqa: E402

MiB = 1024 * 1024
LEVELS = (0.25, 0.50, 0.75, 0.90)  # RiseCurve::kLevels


def records(directory):
    """{output: [(peak, duration ms, rise field)]} from .ninja_headroom (format v2: docs/scheduling.md section 5)."""
    out = {}
    lines = (directory / ".ninja_headroom").read_text().splitlines()
    assert lines[0] == "# headroom history v2", lines[0]
    for line in lines[1:]:
        fields = line.split("\t")
        if fields[0] == "E":
            out.setdefault(fields[8], []).append((int(fields[3]), int(fields[4]), fields[7]))
    return out


def manifest(jobs):
    """jobs: (output, MiB, ramp ms, hold ms)."""
    lines = ["rule hog", "  command = %s --mb $mb --ramp-ms $ramp --hold-ms $hold --procs 1 && touch $out" % memhog_path(),
             "  description = HOG $out"]
    for out, mb, ramp, hold in jobs:
        lines += ["build %s: hog" % out, "  mb = %d" % mb, "  ramp = %d" % ramp, "  hold = %d" % hold]
    return "\n".join(lines) + "\n"


def test_a_ramping_jobs_rise_curve_is_recorded_and_never_later_than_its_ramp(tmp_path, box_factory):
    """One job climbing linearly to 600 MiB over 1.2 s, then holding for 0.4 s: its curve must say something, put
    every level before the hold, and be kept in the history, -t memstats and the store."""
    (tmp_path / "build.ninja").write_text(manifest([("ramp", 600, 1200, 400)]))
    box = box_factory(1536 * MiB)
    box.require_complete_kill_count()
    env = dict(os.environ, HEADROOM_STORE=str(tmp_path / "store"))
    result = box.run([harness.headroom_binary(), "-j1"], cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    [(peak, duration, rise)] = records(tmp_path)["ramp"]
    assert rise != "-", "a 1.2 s ramp sampled every 50 ms has a curve"
    shares = [int(x) / 255 for x in rise.split("/")]
    assert shares == sorted(shares) and shares[-1] > 0, rise
    # memhog climbs for at least 1.2 s (longer when the machine is loaded: it touches its pages on a schedule it
    # may fall behind), then holds for 0.4 s: every level is reached before the hold, and the curve, which keeps
    # the last sample below each level, cannot put one inside it.
    assert shares[-1] * duration <= duration - 400, (shares, duration, rise)
    # It says the job stayed below half its peak for a real part of the ramp (sampled every 50 ms, not 200).
    assert shares[1] * duration >= 300, rise
    # The unit tests (rise_curve_test.cc) check the curve against known samples exactly.
    assert peak >= 600 * MiB, peak
    # -t memstats shows it: the text says how far into the run it stayed under 90 %, the JSON the whole curve.
    stats = box.run([harness.headroom_binary(), "-t", "memstats", "--json"], cwd=tmp_path, env=env)
    assert stats.returncode == 0, stats.stderr
    [edge] = [e for e in json.loads(stats.stdout)["edges"] if e["output"] == "ramp"]
    assert edge["last_rise"] == rise, edge
    text = box.run([harness.headroom_binary(), "-t", "memstats"], cwd=tmp_path, env=env).stdout
    assert "<90% until" in text and "%d%%" % round(100 * shares[3]) in text, text
    # The store keeps the curve for the next build dir (written at the end of the build).
    store_text = (tmp_path / "store" / "history").read_text()
    assert store_text.startswith("# headroom user store v2\n") and "\t%s\n" % rise in store_text, store_text


def test_a_warm_build_runs_a_quick_job_beside_a_ramping_heavy_one(tmp_path, box_factory):
    """A 1000 MiB job ramping for 4 s and a 500 MiB job of 0.1 s in a 1.5 GiB box: their estimates do not fit
    together, so without a curve the quick job waits for the heavy one to end. Warm, the heavy one's curve says it
    holds well under half its peak while the quick job runs, so both start at once; the kernel kills nothing and
    nothing is frozen or killed by headroom. (The quick job is short beside the heavy one even when a loaded
    machine stretches both: the bet needs it to end, with its margin, while the heavy one is still low.)"""
    (tmp_path / "build.ninja").write_text(manifest([("heavy", 1000, 4000, 400), ("quick", 500, 30, 70)]))
    box = box_factory(1536 * MiB)
    box.require_complete_kill_count()
    env = dict(os.environ, HEADROOM_STORE=str(tmp_path / "store"))
    # The first build measures each alone (its curve and duration at its own pace).
    cold = box.run([harness.headroom_binary(), "-j1"], cwd=tmp_path, env=env)
    assert cold.returncode == 0, cold.stdout + cold.stderr
    assert records(tmp_path)["heavy"][0][2] != "-", records(tmp_path)
    for name in ("heavy", "quick"):
        (tmp_path / name).unlink()
    warm = box.run([harness.headroom_binary(), "-j2", "--trace=trace.json", "-d", "explain"], cwd=tmp_path, env=env)
    output = warm.stdout + warm.stderr
    assert warm.returncode == 0, output
    assert box.oom_kills() == 0, output
    trace = json.loads((tmp_path / "trace.json").read_text())
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    spans = {e["name"]: (e["ts"], e["ts"] + e["dur"]) for e in events if e.get("ph") == "X"}
    heavy, quick = spans["heavy"], spans["quick"]
    assert heavy[0] <= quick[0] < heavy[1], "the quick job ran beside the heavy one: %s\n%s" % (spans, output)
    assert "froze '" not in warm.stderr and "killed '" not in warm.stderr, output
    assert history_outcomes(tmp_path) == ["c"] * 4, output
