"""headroom's observability outputs on a real build: the end-of-build summary, --trace (Chrome trace JSON)
and --report (one self-contained HTML page), including a headless-Chromium render of the report.

Not differential: ninja has no such outputs. The jobs are tests/helpers memhog processes with memory hints
(headroom_mem) and a budget that only fits two at a time, so headroom must make some of them wait.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

import harness

VOID_ELEMENTS = {"meta", "br", "hr", "img", "input", "link", "col", "wbr", "area", "base", "source"}


def headroom_bin() -> str:
    path = harness.headroom_binary()
    if not os.path.exists(path):
        pytest.fail("headroom binary %r does not exist (set HEADROOM_BIN)" % path)
    return path


def memhog_bin() -> str:
    path = Path(headroom_bin()).resolve().parent / "tests" / "memhog"
    if not path.exists():
        pytest.fail("memhog helper %s does not exist (build the tests)" % path)
    return str(path)


def skip_or_fail(why: str):
    """A check that cannot run here: a failure in CI, a skip elsewhere."""
    if harness.in_ci():
        pytest.fail(why + " (required when CI is set)")
    pytest.skip(why)


def write_manifest(root: Path, jobs: list[tuple[str, int, str]], extra: str = "") -> None:
    """jobs: (output, MiB to allocate, headroom_mem hint)."""
    lines = [
        "rule hog\n  command = %s --mb $mb --ramp-ms 150 --hold-ms 250 && touch $out\n  description = HOG $out\n"
        % memhog_bin()
    ]
    for output, mb, hint in jobs:
        lines.append("build %s: hog\n  mb = %d\n  headroom_mem = %s\n" % (output, mb, hint))
    lines.append(extra)
    (root / "build.ninja").write_text("".join(lines))


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "TERM": "dumb", "LC_ALL": "C"}
    return subprocess.run([headroom_bin(), *args], cwd=root, env=env, capture_output=True, text=True, timeout=300)


class TagChecker(HTMLParser):
    """Checks that every element is closed in order, and collects the tags and text seen."""

    def __init__(self):
        super().__init__()
        self.open: list[str] = []
        self.errors: list[str] = []
        self.tags: dict[str, int] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag not in VOID_ELEMENTS:
            self.open.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags[tag] = self.tags.get(tag, 0) + 1

    def handle_endtag(self, tag):
        if not self.open or self.open[-1] != tag:
            self.errors.append("unexpected </%s> (open: %s)" % (tag, self.open[-3:]))
            return
        self.open.pop()

    def handle_data(self, data):
        self.text.append(data)


def parse_html(text: str) -> TagChecker:
    checker = TagChecker()
    checker.feed(text)
    checker.close()
    assert checker.errors == []
    assert checker.open == []
    return checker


DEMO_JOBS = [("a.o", 120, "300M"), ("b.o", 160, "300M"), ("c.o", 80, "300M"), ("d.o", 60, "300M")]


@pytest.fixture
def waited_build(tmp_path):
    """A build whose budget (700M, reserve 16M) fits two of the four 300M-hinted jobs at once."""
    write_manifest(tmp_path, DEMO_JOBS)
    r = run(tmp_path, "-j4", "--mem-budget=700M", "--mem-reserve=16M", "--trace=trace.json", "--report=report.html")
    assert r.returncode == 0, r.stdout + r.stderr
    return tmp_path, r


def test_trace_has_every_job_once_counters_and_waits(waited_build):
    root, _ = waited_build
    trace = json.loads((root / "trace.json").read_text())
    events = trace["traceEvents"]
    jobs = [e for e in events if e["ph"] == "X"]
    assert sorted(e["name"] for e in jobs) == ["a.o", "b.o", "c.o", "d.o"]
    for e in jobs:
        assert e["args"]["outcome"] == "ok"
        assert e["args"]["estimate bytes"] == 300 * 1024 * 1024
        assert e["args"]["source"] == "headroom_mem hint"
        assert e["args"]["peak bytes"] > 0
        assert "memhog" in e["args"]["command"]
    counters = {e["name"] for e in events if e["ph"] == "C"}
    assert {"memory used", "memory budget", "memory reserved", "memory pressure"} <= counters
    budget = [e["args"]["MiB"] for e in events if e["ph"] == "C" and e["name"] == "memory budget"]
    assert budget and all(value == 700 for value in budget)
    waits = [e for e in events if e["ph"] == "i" and e["args"]["kind"] == "wait"]
    assert waits, "a 700M budget cannot hold four 300M jobs: some must have waited"
    # Never more than two jobs at once: lanes 1 and 2 only.
    assert {e["tid"] for e in jobs} <= {1, 2}
    assert trace["otherData"]["result"] == "succeeded"


def test_summary_tells_what_memory_did(waited_build):
    _, r = waited_build
    lines = [line for line in r.stdout.splitlines() if line.startswith("headroom: ")]
    assert any("waited for memory" in line for line in lines), r.stdout
    assert any("of the 700 MiB budget" in line for line in lines), r.stdout
    assert "headroom: heaviest jobs:" in lines
    # The summary comes after the build's own output.
    assert r.stdout.splitlines()[-len(lines):] == lines


def test_report_is_well_formed_with_charts_and_tables(waited_build):
    root, _ = waited_build
    html = (root / "report.html").read_text()
    checker = parse_html(html)
    assert checker.tags.get("svg", 0) == 4  # memory, lanes, decisions, estimates
    assert checker.tags.get("table", 0) >= 3
    text = " ".join(checker.text)
    for heading in ("Memory over time", "Jobs by lane", "Memory decisions", "Heaviest jobs", "Slowest jobs"):
        assert heading in text
    assert "budget 700 MiB" in text
    for output, _, _ in DEMO_JOBS:
        assert output in text
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")


def test_quiet_when_memory_never_mattered(tmp_path):
    write_manifest(tmp_path, [("a.o", 20, "40M"), ("b.o", 20, "40M")])
    r = run(tmp_path, "-j2", "--mem-budget=2G", "--mem-reserve=16M")
    assert r.returncode == 0, r.stderr
    assert "headroom:" not in r.stdout + r.stderr


def test_no_memory_still_traces_and_reports(tmp_path):
    write_manifest(tmp_path, [("a.o", 20, "40M"), ("b.o", 20, "40M")])
    r = run(tmp_path, "-j2", "--no-memory", "--trace=t.json", "--report=r.html")
    assert r.returncode == 0, r.stderr
    assert "headroom:" not in r.stdout
    trace = json.loads((tmp_path / "t.json").read_text())
    assert sorted(e["name"] for e in trace["traceEvents"] if e["ph"] == "X") == ["a.o", "b.o"]
    assert not [e for e in trace["traceEvents"] if e["ph"] == "C"]
    checker = parse_html((tmp_path / "r.html").read_text())
    assert "Memory was not measured in this build (--no-memory)." in " ".join(checker.text)


def test_files_are_written_when_the_build_fails(tmp_path):
    write_manifest(tmp_path, [("a.o", 20, "40M")], "rule fail\n  command = false\nbuild broken: fail a.o\n")
    r = run(tmp_path, "-j1", "--trace=t.json", "--report=r.html")
    assert r.returncode == 1
    trace = json.loads((tmp_path / "t.json").read_text())
    outcomes = {e["name"]: e["args"]["outcome"] for e in trace["traceEvents"] if e["ph"] == "X"}
    assert outcomes == {"a.o": "ok", "broken": "failed"}
    assert trace["otherData"]["result"] == "failed"
    assert "failed" in " ".join(parse_html((tmp_path / "r.html").read_text()).text)


def test_unwritable_outputs_are_errors_but_keep_the_exit_code(tmp_path):
    write_manifest(tmp_path, [("a.o", 20, "40M")])
    r = run(tmp_path, "-j1", "--trace=missing/t.json", "--report=missing/r.html")
    assert r.returncode == 0
    assert "ninja: error: writing trace 'missing/t.json': No such file or directory" in r.stderr
    assert "ninja: error: writing report 'missing/r.html': No such file or directory" in r.stderr


def chromium_binary() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def test_report_renders_in_headless_chromium(waited_build):
    root, _ = waited_build
    chromium = chromium_binary()
    if not chromium:
        skip_or_fail("chromium is not installed (scripts/install-deps.sh installs it)")
    screenshot = root / "report.png"
    r = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
         "--v=0", "--user-data-dir=%s" % (root / "chromium-profile"), "--screenshot=%s" % screenshot,
         "--window-size=1400,1800", (root / "report.html").as_uri()],
        capture_output=True, text=True, timeout=180)
    assert screenshot.exists(), r.stderr[-3000:]
    assert png_size(screenshot) == (1400, 1800)
    # A blank page compresses to a few KiB; the charts and tables make it far larger.
    assert screenshot.stat().st_size > 40_000
    console = [line for line in r.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not [line for line in console if "Uncaught" in line or "Error" in line], console
