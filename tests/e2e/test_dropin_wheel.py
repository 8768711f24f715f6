"""Drop-in via pip: the scikit-build-core wheel (pyproject.toml) is built with headroom itself as the
`ninja` on PATH (so headroom's own source tree is configured and built with headroom as CMake's make
program), then installed into a fresh venv whose `ninja`, `headroom` and `python -m headroom` must work.

One compile of headroom serves both checks: it is the slowest step of the e2e suites on 2 cores."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

import harness

REPO = Path(__file__).resolve().parents[2]
PIP_QUIET = ["--disable-pip-version-check", "-q"]
MANIFEST = """\
rule cat
  command = cat $in > $out
  description = CAT $out
rule fail
  command = false
build mid: cat in
build out: cat mid
build broken: fail in
default out
"""


def require(condition: bool, message: str):
    if condition:
        return
    if harness.in_ci():
        pytest.fail(message)
    pytest.skip(message)


def clean_env(path_prefix: list) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NINJA_STATUS", "MAKEFLAGS", "MAX_JOBS", "HEADROOM_FLAGS", "VIRTUAL_ENV", "PYTHONPATH",
                        "CMAKE_GENERATOR", "CMAKE_MAKE_PROGRAM")}
    env["PATH"] = os.pathsep.join([str(p) for p in path_prefix] + [env.get("PATH", "")])
    env.update(TERM="dumb", LC_ALL="C")
    return env


def run(args, env, cwd=None, timeout=120, check=True) -> subprocess.CompletedProcess:
    r = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check:
        assert r.returncode == 0, "%s failed (%d):\n%s\n%s" % (" ".join(map(str, args)), r.returncode,
                                                               r.stdout[-4000:], r.stderr[-4000:])
    return r


STEP = re.compile(r"^\[\d+/\d+\] (.*)$")


def steps(stdout: str) -> list:
    return sorted(m.group(1) for m in map(STEP.match, stdout.splitlines()) if m)


def source_ignores(directory: str, names: list) -> set:
    """Build trees and VCS data at the top level only: src/build/ is source code."""
    ignored = {n for n in names if n in ("__pycache__", ".pytest_cache") or n.endswith(".pyc")}
    if Path(directory) == REPO:
        ignored |= {n for n in names if n in (".git", ".cache", "build") or n.startswith("build-")}
    return ignored


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Builds the wheel once per session from a copy of the sources, with headroom as the `ninja` on PATH."""
    headroom = os.path.abspath(harness.headroom_binary())
    if not os.access(headroom, os.X_OK):
        pytest.fail("headroom binary not found at %s (set HEADROOM_BIN)" % headroom)
    require(shutil.which("cmake") is not None and shutil.which("c++") is not None, "cmake and c++ are required")
    root = tmp_path_factory.mktemp("wheel")
    shim = root / "shim"
    shim.mkdir()
    (shim / "ninja").symlink_to(headroom)

    # The build runs pip from a throwaway venv: pip fetches scikit-build-core (PyPI) into its isolated
    # build environment, exactly as `pip install headroom-src/` would for a user.
    builder = root / "builder-venv"
    r = subprocess.run([sys.executable, "-m", "venv", builder], capture_output=True, text=True, timeout=300)
    require(r.returncode == 0, "cannot create a venv: " + r.stderr)
    env = clean_env([shim, builder / "bin"])
    # A copy of the sources: the test touches a header, and developers' build trees must not notice.
    source = root / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=source_ignores)
    build_dir = root / "cmake-build"
    dist = root / "dist"
    start = time.monotonic()
    r = run([builder / "bin" / "python", "-m", "pip", "wheel", *PIP_QUIET, "--no-deps", "-w", dist,
             "--config-settings=build-dir=" + str(build_dir), source], env, timeout=1500, check=False)
    if r.returncode != 0 and ("No matching distribution" in r.stderr or "Could not fetch" in r.stderr
                              or "NewConnectionError" in r.stderr):
        require(False, "PyPI is unreachable, cannot fetch scikit-build-core:\n" + r.stderr[-2000:])
    assert r.returncode == 0, "wheel build failed:\n%s\n%s" % (r.stdout[-6000:], r.stderr[-6000:])
    print("wheel built in %.0f s" % (time.monotonic() - start))
    wheels = list(dist.glob("headroom-*.whl"))
    assert len(wheels) == 1, wheels
    return {"wheel": wheels[0], "source": source, "build_dir": build_dir, "shim": shim, "headroom": headroom}


@pytest.fixture(scope="module")
def venv(built, tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("user") / "venv"
    env = clean_env([])
    run([sys.executable, "-m", "venv", venv], env, timeout=300)
    # The wheel has no dependencies: installing it needs no index at all.
    run([venv / "bin" / "python", "-m", "pip", "install", *PIP_QUIET, "--no-index", built["wheel"]], env, timeout=300)
    return venv


def test_wheel_contents(built):
    name = built["wheel"].name
    # The binary does not use Python's ABI: one wheel per platform, not per Python version.
    assert re.fullmatch(r"headroom-[0-9.]+-py3-none-linux_\w+\.whl", name), name
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = wheel.namelist()
        entry_points = next(wheel.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "headroom/data/bin/headroom" in names
    assert {"headroom/__init__.py", "headroom/__main__.py"} <= set(names)
    # The product only: no test programs, no libexec shim (the `ninja` entry point replaces it).
    assert not [n for n in names if "test" in n.lower() or "libexec" in n or "memhog" in n], names
    assert re.search(r"^ninja = headroom:ninja$", entry_points, re.M), entry_points
    assert re.search(r"^headroom = headroom:headroom$", entry_points, re.M), entry_points


def test_self_build_used_headroom(built):
    """headroom's own tree, configured by CMake with headroom as CMAKE_MAKE_PROGRAM, then incremental."""
    build_dir, headroom = built["build_dir"], built["headroom"]
    cache = (build_dir / "CMakeCache.txt").read_text()
    assert re.search(r"^CMAKE_MAKE_PROGRAM:\w+=%s$" % re.escape(str(built["shim"] / "ninja")), cache, re.M), \
        [ln for ln in cache.splitlines() if "MAKE_PROGRAM" in ln]
    assert re.search(r"^CMAKE_GENERATOR:INTERNAL=Ninja$", cache, re.M)
    assert (build_dir / ".ninja_headroom").is_file(), "the build did not run through headroom"
    env = clean_env([built["shim"]])
    # The tree globs its sources (CONFIGURE_DEPENDS), so even a no-op re-checks them first.
    r = run([headroom], env, cwd=build_dir)
    assert r.stdout.endswith("ninja: no work to do.\n") and r.stderr == "", r.stdout + r.stderr

    # Touch one header: headroom rebuilds its dependents; touch it again: ninja 1.13.2, reading the logs
    # headroom wrote, must rebuild exactly the same (a dry run cannot tell: the glob check makes ninja -n
    # stop at regeneration).
    ref = harness.reference_binary()
    require(bool(ref) and os.access(ref, os.X_OK), "reference ninja 1.13.2 (pip package `ninja`) is missing")
    header = built["source"] / "include" / "headroom" / "cli" / "cli.h"
    rebuilt = {}
    for role, binary in (("headroom", headroom), ("ninja", ref)):
        harness.bump_mtime(header, build_dir)
        rebuilt[role] = steps(run([binary, "-j2", "headroom"], env, cwd=build_dir, timeout=900).stdout)
    assert rebuilt["headroom"] == rebuilt["ninja"], "headroom rebuilt %s, ninja %s" % (
        rebuilt["headroom"], rebuilt["ninja"])
    rebuilt = rebuilt["headroom"]
    assert any("cli.cc" in s for s in rebuilt) and any("main.cc" in s for s in rebuilt), rebuilt
    assert len(rebuilt) < 20, rebuilt  # the dependents only, not the whole tree


def test_venv_commands(venv):
    env = clean_env([venv / "bin"])
    for cmd in (["ninja", "--version"], ["headroom", "--version"],
                [venv / "bin" / "python", "-m", "headroom", "--version"]):
        r = run(cmd, env)
        assert (r.stdout, r.stderr) == ("1.13.2\n", ""), cmd
    assert shutil.which("ninja", path=env["PATH"]) == str(venv / "bin" / "ninja")
    r = run([venv / "bin" / "python", "-c", "import headroom, os; print(os.path.isfile(headroom.binary()))"], env)
    assert r.stdout == "True\n"


def test_build_through_venv_ninja(venv, tmp_path):
    env = clean_env([venv / "bin"])
    (tmp_path / "build.ninja").write_text(MANIFEST)
    (tmp_path / "in").write_text("data\n")
    r = run(["ninja", "-v", "-j", "2"], env, cwd=tmp_path)  # torch's exact form
    assert r.stdout == "[1/2] cat in > mid\n[2/2] cat mid > out\n"
    assert (tmp_path / "out").read_text() == "data\n"
    assert (tmp_path / ".ninja_headroom").is_file()
    r = run(["ninja"], dict(env, MAX_JOBS="auto"), cwd=tmp_path)
    assert r.stdout == "ninja: no work to do.\n"
    # Exit codes pass straight through the entry point (it execs the binary).
    r = run(["ninja", "broken"], env, cwd=tmp_path, check=False)
    assert r.returncode == 1 and "FAILED: [code=1] broken" in r.stdout, r.stdout
    r = run(["headroom", "-t", "no-such-tool"], env, cwd=tmp_path, check=False)
    assert r.returncode == 1 and "unknown tool 'no-such-tool'" in r.stderr, r.stderr
