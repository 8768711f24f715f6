"""The memory-decision log (--mem-log=FILE) with the real binary: a build of memory-hungry jobs (tests/helpers/memhog)
under a budget that fits one of them at a time writes each admission with its expected peak, each wait and why,
each job's end with its measured peak, the budget readings and the build's totals, in build-time order; without
the option nothing is written; HEADROOM_FLAGS turns it on for builds run by other tools; a path that cannot be
written stops the build before anything runs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import harness
from test_memory_box import memhog_path

JOBS = ["hog0.out", "hog1.out", "hog2.out"]
LINE = re.compile(r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}\] \[(debug|info|warning)\] (.*)$")


def project(directory: Path) -> Path:
    """Three jobs touching 30 MiB each, each declared to need 100 MiB: a 150 MiB budget fits one at a time."""
    lines = ["rule hog", "  command = %s --mb 30 --ramp-ms 100 --hold-ms 200 > $out" % memhog_path()]
    for out in JOBS:
        lines += ["build %s: hog" % out, "  headroom_mem = 100M"]
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")
    return directory


def run(cwd: Path, *args: str, flags: str | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env.update(TERM="dumb", LC_ALL="C", HEADROOM_STORE="off")
    if flags is not None:
        env["HEADROOM_FLAGS"] = flags
    return subprocess.run([os.path.abspath(harness.headroom_binary()), *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def messages(log: Path) -> list:
    """(level, message) per line; every line must carry the timestamp and level prefix."""
    out = []
    for line in log.read_text().splitlines():
        match = LINE.match(line)
        assert match, line
        out.append((match.group(1), match.group(2)))
    return out


def build_time(message: str) -> float:
    return float(re.match(r"^\+(\d+\.\d{3})s ", message).group(1))


def test_a_build_that_waits_for_memory_logs_each_decision(tmp_path):
    work = project(tmp_path / "w")
    log = tmp_path / "decisions.log"
    r = run(work, "-j3", "--mem-budget=150M", "--mem-log=" + str(log))
    assert r.returncode == 0, r.stdout + r.stderr
    lines = messages(log)
    text = [message for _, message in lines]
    assert text[0].startswith("headroom ") and "memory-decision log: building the default targets in %s, -j3, " \
        "memory awareness on" % work in text[0], text[0]

    admits = [m for m in text if re.match(r"^\+\S+ admit ", m)]
    assert sorted(m.split()[2].rstrip(":") for m in admits) == JOBS, admits
    assert all("expected ~100 MiB (headroom_mem hint)" in m for m in admits), admits
    # One fits at a time: the two others waited, saying why, and were admitted after waiting.
    waits = [(level, m) for level, m in lines if re.match(r"^\+\S+ wait ", m)]
    assert len(waits) == 2 and all(level == "info" and len(m.split(": ", 1)[1]) > 0 for level, m in waits), waits
    assert len([m for m in admits if "after waiting" in m]) == 2, admits
    ends = [m for m in text if re.match(r"^\+\S+ end ", m)]
    assert sorted(m.split()[2].rstrip(":") for m in ends) == JOBS, ends
    assert all(re.search(r": ok, peak \d+(\.\d+)? MiB \(\w+\), ran \d+\.\ds$", m) for m in ends), ends
    readings = [m for m in text if re.match(r"^\+\S+ reading: budget 150 MiB, jobs use ", m)]
    assert readings, text
    # Readings come at most once a second of build time.
    times = [build_time(m) for m in readings]
    assert all(b - a >= 1.0 for a, b in zip(times, times[1:])), times
    # Events are logged as they happen: build time never goes back, and each job ends after it was admitted.
    stamped = [build_time(m) for m in text if m.startswith("+")]
    assert stamped == sorted(stamped)
    for job in JOBS:
        assert text.index(next(m for m in admits if " %s:" % job in m)) < \
            text.index(next(m for m in ends if " %s:" % job in m))
    # Then the totals, as the summary counts them.
    end = next(i for i, m in enumerate(text) if m.startswith("build succeeded"))
    assert re.match(r"^build succeeded \(exit 0\) after \d+\.\ds: budget 150 MiB, reserve ", text[end]), text[end]
    assert text[end + 1].startswith("2 job(s) waited for memory ("), text[end + 1]
    assert all(not m.startswith("+") for m in text[end:]), text[end:]


def test_without_the_option_nothing_is_written(tmp_path):
    work = project(tmp_path / "w")
    before = set(os.listdir(tmp_path))
    r = run(work, "-j3", "--mem-budget=150M")
    assert r.returncode == 0, r.stdout + r.stderr
    assert set(os.listdir(tmp_path)) == before
    others = [p.name for p in work.iterdir() if p.name not in JOBS + ["build.ninja"]]
    assert all(name.startswith(".ninja_") for name in others), others


def test_headroom_flags_turn_it_on_and_a_path_that_cannot_be_written_stops_the_build(tmp_path):
    work = project(tmp_path / "w")
    log = tmp_path / "from-env.log"
    r = run(work, "-j3", "--mem-budget=150M", flags="--mem-log=" + str(log))
    assert r.returncode == 0, r.stdout + r.stderr
    assert any(" admit hog0.out: " in m for _, m in messages(log))

    r = run(work, "-t", "clean")
    assert r.returncode == 0, r.stderr
    r = run(work, "--mem-log=" + str(work / "build.ninja" / "x.log"))  # under a file: no directory can be made
    assert r.returncode == 1 and r.stderr.startswith("ninja: error: --mem-log: "), r.stderr
    assert "build.ninja/x.log" in r.stderr and r.stdout == "", r
    assert not (work / "hog0.out").exists()
