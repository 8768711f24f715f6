"""Drop-in names: headroom behaves the same whatever it is called (a `ninja` link, PATH lookup, any
argv[0]), and `cmake --install` lays out bin/headroom plus a shim directory holding only `ninja`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import harness

MANIFEST = """\
rule cat
  command = cat $in > $out
  description = CAT $out
rule fail
  command = echo failing >&2 && false
build mid: cat in
build out: cat mid
build broken: fail in
default out
"""


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NINJA_STATUS", "MAKEFLAGS", "MAX_JOBS", "HEADROOM_FLAGS", "CLICOLOR_FORCE")}
    env.update(TERM="dumb", LC_ALL="C")
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def headroom() -> str:
    path = harness.headroom_binary()
    if not os.access(path, os.X_OK):
        pytest.fail("headroom binary not found at %s (set HEADROOM_BIN)" % path)
    return os.path.abspath(path)


# Each invocation is run in a fresh copy of the same workspace, so the three callers see equal state.
INVOCATIONS = [
    ["--version"],
    ["-h"],
    ["--bogus-flag"],
    ["-t", "list"],
    ["-d", "list"],
    ["-j1"],
    ["-j1", "-v", "broken"],
    ["-n", "-j1", "out"],
    ["-t", "targets", "all"],
    ["-C", "sub", "-j1"],
]


def run_in_copy(tmp: Path, tag: str, argv0: str, executable: str, args: list, env: dict):
    ws = tmp / tag
    (ws / "sub").mkdir(parents=True)
    for d in (ws, ws / "sub"):
        (d / "build.ninja").write_text(MANIFEST)
        (d / "in").write_text("data\n")
    r = subprocess.run([argv0] + args, executable=executable, cwd=ws, env=env, capture_output=True,
                       text=True, timeout=60)
    return (r.returncode, r.stdout.replace(str(ws), "$WS"), r.stderr.replace(str(ws), "$WS"))


def test_same_behaviour_under_any_name(tmp_path, headroom):
    links = tmp_path / "links"
    links.mkdir()
    (links / "ninja").symlink_to(headroom)
    (links / "some-other-name").symlink_to(headroom)
    env_path = clean_env(PATH=str(links) + os.pathsep + os.environ.get("PATH", ""))
    assert shutil.which("ninja", path=env_path["PATH"]) == str(links / "ninja")

    for i, args in enumerate(INVOCATIONS):
        direct = run_in_copy(tmp_path, "direct%d" % i, headroom, headroom, args, clean_env())
        callers = {
            "`ninja` symlink": run_in_copy(tmp_path, "link%d" % i, str(links / "ninja"), str(links / "ninja"),
                                           args, clean_env()),
            "`ninja` from PATH": run_in_copy(tmp_path, "path%d" % i, "ninja", shutil.which("ninja", path=env_path["PATH"]),
                                             args, env_path),
            "other link name": run_in_copy(tmp_path, "other%d" % i, str(links / "some-other-name"),
                                           str(links / "some-other-name"), args, clean_env()),
            "odd argv[0]": run_in_copy(tmp_path, "argv%d" % i, "/no/such/make-tool", headroom, args, clean_env()),
        }
        for how, result in callers.items():
            assert result == direct, "ninja %s: %s differs from calling headroom directly" % (" ".join(args), how)

    # Sanity on what was compared: the facts PyTorch and CMake rely on.
    assert run_in_copy(tmp_path, "v", "ninja", str(links / "ninja"), ["--version"], clean_env())[:2] == (0, "1.13.2\n")
    rc, out, _ = run_in_copy(tmp_path, "b", "ninja", str(links / "ninja"), ["-j1"], clean_env())
    assert (rc, out) == (0, "[1/2] CAT mid\n[2/2] CAT out\n")


def test_cmake_install_layout(tmp_path, headroom):
    build_dir = Path(headroom).parent
    if not (build_dir / "cmake_install.cmake").is_file() or shutil.which("cmake") is None:
        message = "%s is not a CMake build directory with cmake on PATH; cannot test `cmake --install`" % build_dir
        if harness.in_ci():
            pytest.fail(message)
        pytest.skip(message)
    cache = (build_dir / "CMakeCache.txt").read_text()
    if "HEADROOM_INSTALL_NINJA_SHIM" not in cache:
        pytest.fail("%s was configured before the install rules existed: re-run cmake" % build_dir)

    prefix = tmp_path / "prefix"
    r = subprocess.run(["cmake", "--install", str(build_dir), "--prefix", str(prefix)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr

    installed = prefix / "bin" / "headroom"
    assert installed.is_file() and os.access(installed, os.X_OK)
    shim_dir = prefix / "libexec" / "headroom" / "ninja-shim"
    # Only `ninja`: prepending the directory to PATH must not shadow any other command.
    assert sorted(os.listdir(shim_dir)) == ["ninja"]
    shim = shim_dir / "ninja"
    assert shim.is_symlink() and not os.path.isabs(os.readlink(shim)), "the shim must be a relative link"
    assert shim.resolve() == installed.resolve()

    # A relocated tree (DESTDIR staging, a copied prefix) still works: the link is relative.
    moved = tmp_path / "moved"
    shutil.copytree(prefix, moved, symlinks=True)
    shutil.rmtree(prefix)
    moved_shim_dir = moved / "libexec" / "headroom" / "ninja-shim"
    env = clean_env(PATH=str(moved_shim_dir) + os.pathsep + os.environ.get("PATH", ""))
    assert shutil.which("ninja", path=env["PATH"]) == str(moved_shim_dir / "ninja")
    r = subprocess.run(["ninja", "--version"], env=env, capture_output=True, text=True, timeout=30)
    assert (r.returncode, r.stdout, r.stderr) == (0, "1.13.2\n", "")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "build.ninja").write_text(MANIFEST)
    (ws / "in").write_text("data\n")
    r = subprocess.run(["ninja", "-j1"], cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, "[1/2] CAT mid\n[2/2] CAT out\n"), r.stderr
    assert (ws / "out").read_text() == "data\n"
    r = subprocess.run(["ninja"], cwd=ws, env=env, capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stdout) == (0, "ninja: no work to do.\n")
