"""The torch C++ extension in examples/ installed twice with pip, each time from a fresh temporary copy (as pip
builds a downloaded sdist): the second build's estimates come from the first one's measurements through the
per-user store, and neither build dir holds a file outside ninja's own names. Uses the cached torch venv of
test_dropin_torch.py (skipped there and here when torch cannot be installed; a failure under CI=1)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from test_dropin_torch import EXAMPLE, build_env, ninja_shim, torch_python  # noqa: F401 (fixtures)


def pip_install(python: Path, source: Path, target: Path, env: dict) -> str:
    # --target keeps the shared venv clean; --no-build-isolation lets setup.py import the venv's torch.
    r = subprocess.run([python, "-m", "pip", "install", "--disable-pip-version-check", "-v", "--no-deps",
                        "--no-build-isolation", "--target", target, source], env=env, capture_output=True, text=True,
                       timeout=1500)
    assert r.returncode == 0, (r.stdout + r.stderr)[-6000:]
    return r.stdout + r.stderr


def job_sources(trace: Path) -> dict:
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    return {Path(e["name"]).name: e["args"]["source"] for e in events
            if e.get("ph") == "X" and "source" in e.get("args", {})}


def ninja_build_dir(source: Path) -> Path:
    found = [p.parent for p in (source / "build").rglob("build.ninja")]
    assert len(found) == 1, found
    return found[0]


def test_second_pip_install_from_a_fresh_temp_dir_starts_warm(tmp_path, torch_python, ninja_shim):  # noqa: F811
    store = tmp_path / "store"
    traces = []
    for attempt, name in enumerate(["pip-req-build-k3j4h5", "pip-req-build-q8w7e6"]):
        source = tmp_path / name
        shutil.copytree(EXAMPLE, source)
        env = build_env(ninja_shim, torch_python)
        trace = tmp_path / ("trace%d.json" % attempt)
        env.update(HEADROOM_STORE=str(store), HEADROOM_FLAGS="--trace=" + str(trace), TMPDIR=str(tmp_path))
        pip_install(torch_python, source, tmp_path / ("site%d" % attempt), env)
        traces.append(job_sources(trace))

        build_dir = ninja_build_dir(source)
        hidden = sorted(p.name for p in build_dir.iterdir() if p.name.startswith("."))
        assert hidden == [".ninja_deps", ".ninja_headroom", ".ninja_log"], hidden
        r = subprocess.run(["ninja", "-t", "memstats", "--json"], cwd=build_dir, env=env, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        stats = json.loads(r.stdout)
        assert {Path(e["output"]).name for e in stats["edges"]} == {"scaled_add.o", "bindings.o"}
        assert {e["runs"] for e in stats["user_store"]["heaviest_edges"]} == {attempt + 1}
        print("install %d: estimate sources %s" % (attempt + 1, traces[-1]))

    assert traces[0] == {"scaled_add.o": "prior", "bindings.o": "prior"}, traces[0]
    assert traces[1] == {"scaled_add.o": "edge history", "bindings.o": "edge history"}, traces[1]
