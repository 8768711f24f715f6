"""Drop-in under CMake: a real third-party project (Debian's /usr/src/googletest) and the examples
(examples/cmake-project, examples/cuda-project) built with -DCMAKE_MAKE_PROGRAM=<headroom>.

googletest is built side by side with the reference ninja 1.13.2; after touching one header both must
rebuild exactly the same targets, and headroom must then report `ninja: no work to do.`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import common
import harness

REPO = Path(__file__).resolve().parents[2]
GOOGLETEST_SRC = Path("/usr/src/googletest")
JOBS = "-j2"


def require(condition: bool, message: str):
    """A missing prerequisite fails in CI (where scripts/install-deps.sh provides it) and skips elsewhere."""
    if condition:
        return
    if harness.in_ci():
        pytest.fail(message)
    pytest.skip(message)


def env() -> dict:
    e = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "MAX_JOBS", "HEADROOM_FLAGS")}
    e.update(TERM="dumb", LC_ALL="C")
    nvcc = common.nvcc_path()
    return common.with_nvcc(e, nvcc) if nvcc else e  # the examples' build.ninja runs plain `nvcc`


def sh(args: list, cwd=None, timeout=900) -> subprocess.CompletedProcess:
    r = subprocess.run([str(a) for a in args], cwd=cwd, env=env(), capture_output=True, text=True, timeout=timeout)
    assert r.returncode == 0, "%s failed (%d):\n%s\n%s" % (" ".join(map(str, args)), r.returncode, r.stdout, r.stderr)
    return r


STEP = re.compile(r"^\[\d+/\d+\] (.*)$")


def steps(stdout: str) -> list:
    """The edge descriptions of a non-verbose build log ('[3/7] Building CXX object ...')."""
    return sorted(m.group(1) for m in map(STEP.match, stdout.splitlines()) if m)


def bump(path: Path, *trees: Path):
    """Make `path` newer than every file under `trees` (the build directories), by the filesystem's clock."""
    harness.bump_mtime(path, *trees)


@pytest.fixture(scope="module")
def binaries():
    sut = os.path.abspath(harness.headroom_binary())
    if not os.access(sut, os.X_OK):
        pytest.fail("headroom binary not found at %s (set HEADROOM_BIN)" % sut)
    ref = harness.reference_binary()
    require(bool(ref) and os.access(ref, os.X_OK), "reference ninja 1.13.2 (pip package `ninja`) is missing")
    require(shutil.which("cmake") is not None and shutil.which("c++") is not None, "cmake and c++ are required")
    return {"ref": ref, "sut": sut}


def test_googletest_incremental_matches_ninja(tmp_path, binaries):
    require((GOOGLETEST_SRC / "CMakeLists.txt").is_file(), "Debian package googletest (/usr/src/googletest) is missing")
    # A private copy: the test touches headers, and /usr/src belongs to the package manager.
    src = tmp_path / "googletest"
    shutil.copytree(GOOGLETEST_SRC, src)

    builds = {}
    for role, make_program in binaries.items():
        build = tmp_path / ("build-" + role)
        # No build type: no optimisation, so the two full builds stay cheap on a 2-core CI machine.
        sh(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=",
            "-DCMAKE_MAKE_PROGRAM=" + make_program])
        full = sh([make_program, JOBS], cwd=build)
        builds[role] = (build, steps(full.stdout))
    assert builds["sut"][1] == builds["ref"][1], "full builds differ"
    full_steps = builds["sut"][1]
    assert any("gtest-all.cc" in s for s in full_steps) and any("gmock-all.cc" in s for s in full_steps)
    for role, (build, _) in builds.items():
        for lib in ("libgtest.a", "libgtest_main.a", "libgmock.a", "libgmock_main.a"):
            assert (build / "lib" / lib).is_file(), (role, lib)

    # gmock.h is included by gmock's sources only: its dependents, and nothing of gtest, rebuild.
    bump(src / "googlemock" / "include" / "gmock" / "gmock.h", *(b for b, _ in builds.values()))
    rebuilt = {role: steps(sh([make_program, JOBS], cwd=builds[role][0]).stdout)
               for role, make_program in binaries.items()}
    assert rebuilt["sut"] == rebuilt["ref"], "after touching gmock.h: headroom %s, ninja %s" % (
        rebuilt["sut"], rebuilt["ref"])
    assert rebuilt["sut"], "touching gmock.h rebuilt nothing"
    assert any("gmock-all.cc" in s for s in rebuilt["sut"]), rebuilt["sut"]
    assert not any("gtest" in s and "gmock" not in s for s in rebuilt["sut"]), rebuilt["sut"]
    assert len(rebuilt["sut"]) < len(full_steps)

    sut_build = builds["sut"][0]
    r = sh([binaries["sut"]], cwd=sut_build)
    assert (r.stdout, r.stderr) == ("ninja: no work to do.\n", "")
    # And through CMake itself, which runs its make program the way users' scripts do.
    r = sh(["cmake", "--build", sut_build])
    assert r.stdout.strip().endswith("ninja: no work to do."), r.stdout


def test_example_cmake_project(tmp_path, binaries):
    headroom = binaries["sut"]
    src = tmp_path / "src"
    shutil.copytree(REPO / "examples" / "cmake-project", src)
    build = tmp_path / "build"
    sh(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DCMAKE_MAKE_PROGRAM=" + headroom])
    r = sh(["cmake", "--build", build, "--", JOBS])
    assert len(steps(r.stdout)) == 4, r.stdout
    assert sh([build / "greet_app", "cmake"]).stdout == "hello, cmake\n"

    bump(src / "include" / "greet" / "greet.h", build)
    r = sh([headroom], cwd=build)
    assert steps(r.stdout) == sorted([
        "Building CXX object CMakeFiles/greet.dir/src/greet.cc.o",
        "Building CXX object CMakeFiles/greet_app.dir/app/main.cc.o",
        "Linking CXX static library libgreet.a",
        "Linking CXX executable greet_app",
    ]), r.stdout
    assert sh([headroom], cwd=build).stdout == "ninja: no work to do.\n"


def cuda_ready() -> bool:
    return common.nvcc_path() is not None


def test_example_cuda_handwritten(tmp_path, binaries):
    require(cuda_ready(), "no nvcc (scripts/install-test-deps.sh installs one; HEADROOM_TEST_NVCC)")
    headroom = binaries["sut"]
    work = tmp_path / "cuda"
    shutil.copytree(REPO / "examples" / "cuda-project", work)
    r = sh([headroom, "-v", JOBS], cwd=work)
    nvcc_lines = [ln for ln in r.stdout.splitlines() if "nvcc" in ln and " -c " in ln]
    assert len(nvcc_lines) == 1, r.stdout
    for code in ("code=sm_80", "code=sm_90", "code=compute_90"):
        assert code in nvcc_lines[0]
    assert (work / "out" / "saxpy").is_file()
    run = sh([work / "out" / "saxpy"])
    assert run.stdout in ("saxpy: no CUDA device, nothing run\n", "saxpy: ok\n"), run.stdout

    # nvcc's depfile is honoured: the shared header rebuilds both objects and the link.
    bump(work / "src" / "saxpy.h", work / "out")
    r = sh([headroom, JOBS], cwd=work)
    assert steps(r.stdout) == ["CXX out/main.o", "LINK out/saxpy", "NVCC out/saxpy.o"], r.stdout
    assert sh([headroom], cwd=work).stdout == "ninja: no work to do.\n"


def test_example_cuda_cmake(tmp_path, binaries):
    require(cuda_ready(), "no nvcc (scripts/install-test-deps.sh installs one; HEADROOM_TEST_NVCC)")
    headroom = binaries["sut"]
    build = tmp_path / "build"
    sh(["cmake", "-S", REPO / "examples" / "cuda-project", "-B", build, "-G", "Ninja",
        "-DCMAKE_CUDA_COMPILER=" + common.nvcc_path(), "-DCMAKE_MAKE_PROGRAM=" + headroom])
    r = sh([headroom, "-v", JOBS], cwd=build)
    cu = [ln for ln in r.stdout.splitlines() if "saxpy.cu" in ln and "nvcc" in ln]
    assert cu and "sm_80" in cu[0] and "sm_90" in cu[0] and "compute_90" in cu[0], r.stdout
    assert sh([build / "saxpy"]).stdout in ("saxpy: no CUDA device, nothing run\n", "saxpy: ok\n")
    assert sh([headroom], cwd=build).stdout == "ninja: no work to do.\n"
