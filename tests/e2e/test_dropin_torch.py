"""Drop-in under PyTorch: torch.utils.cpp_extension builds examples/torch-extension with headroom as the
`ninja` on PATH and MAX_JOBS=auto (torch then runs plain `ninja -v`), and the op is imported and called.
The CUDA extension is built too, with the nvcc of tests/e2e/common.py (PyPI's, pinned by scripts/install-test-deps.sh
to the CUDA major of the pinned torch); where the majors differ the test skips, and fails under CI.

torch (from PyPI, ~5 GB with its CUDA libraries) lives in a venv, HEADROOM_TORCH_VENV or
~/.cache/headroom-e2e/torch-venv, that scripts/install-test-deps.sh makes (run here when `import torch` fails)."""

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
EXAMPLE = REPO / "examples" / "torch-extension"


def require(condition: bool, message: str):
    if condition:
        return
    if harness.in_ci():
        pytest.fail(message)
    pytest.skip(message)


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def torch_works(python: Path) -> bool:
    if not python.exists():
        return False
    r = subprocess.run([python, "-c", "import torch, setuptools, torch.utils.cpp_extension"], capture_output=True,
                       timeout=300)
    return r.returncode == 0


@pytest.fixture(scope="module")
def torch_python() -> Path:
    venv = Path(os.environ.get("HEADROOM_TORCH_VENV") or common.test_deps_dir() / "torch-venv")
    python = venv_python(venv)
    if not torch_works(python):
        require(common.install_test_deps(), "scripts/install-test-deps.sh failed to install the pinned torch")
        require(torch_works(python), "torch installed by scripts/install-test-deps.sh does not import from " + str(venv))
    return python


@pytest.fixture(scope="module")
def ninja_shim(tmp_path_factory) -> Path:
    headroom = os.path.abspath(harness.headroom_binary())
    if not os.access(headroom, os.X_OK):
        pytest.fail("headroom binary not found at %s (set HEADROOM_BIN)" % headroom)
    shim = tmp_path_factory.mktemp("shim")
    (shim / "ninja").symlink_to(headroom)
    return shim


def build_env(shim: Path, python: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS")}
    env["PATH"] = os.pathsep.join([str(shim), str(python.parent), env.get("PATH", "")])
    env["MAX_JOBS"] = "auto"  # torch passes no -j then; headroom reads MAX_JOBS itself
    # torch puts ccache or sccache (scripts/install-deps.sh installs sccache) in front of every compiler it finds on
    # PATH; sccache would compile in its server, where headroom cannot measure (test_compile_server.py covers that).
    # These suites check the compiles headroom runs and measures itself.
    env.update(TERM="dumb", LC_ALL="C", TORCH_NO_COMPILER_WRAPPER="1")
    return env


def torch_info(python: Path) -> dict:
    r = subprocess.run([python, "-c", "import torch; print(torch.__version__); print(torch.version.cuda or '')"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    version, cuda = (r.stdout.strip().splitlines() + [""])[:2]
    return {"version": version, "cuda": cuda}


def nvcc_version() -> str | None:
    nvcc = common.nvcc_path()
    if not nvcc:
        return None
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60).stdout
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def build_example(tmp_path: Path, python: Path, shim: Path, cuda: bool) -> tuple[Path, str]:
    work = tmp_path / "torch-extension"
    shutil.copytree(EXAMPLE, work)
    env = build_env(shim, python)
    # The contract torch checks before building (cpp_extension.is_ninja_available).
    assert shutil.which("ninja", path=env["PATH"]) == str(shim / "ninja")
    assert subprocess.run(["ninja", "--version"], env=env, capture_output=True, timeout=30).returncode == 0
    if cuda:
        env["HEADROOM_EXAMPLE_EXTENSIONS"] = "cuda"
        env = common.with_nvcc(env, common.nvcc_path())
        # torch's CUDA headers include cusparse.h and cublas headers, which PyPI's nvcc packages do not carry; pip's
        # torch brings them (nvidia/cu13/include in its venv), and a pip-only CUDA setup finds them there.
        venv = Path(python).absolute().parent.parent
        includes = sorted(venv.glob("lib/python3*/site-packages/nvidia/cu[0-9]*/include"))
        if includes:
            env["CPATH"] = os.pathsep.join([str(includes[-1])] + ([env["CPATH"]] if env.get("CPATH") else []))
    r = subprocess.run([python, "setup.py", "build_ext", "--inplace"], cwd=work, env=env, capture_output=True,
                       text=True, timeout=1500)
    log = r.stdout + r.stderr
    assert r.returncode == 0, log[-6000:]
    return work, log


def ninja_build_dir(work: Path) -> Path:
    dirs = [p.parent for p in (work / "build").rglob("build.ninja")]
    assert len(dirs) >= 1, "torch wrote no build.ninja under %s" % (work / "build")
    return dirs[0]


def test_cpp_extension(tmp_path, torch_python, ninja_shim):
    info = torch_info(torch_python)
    print("torch %s (CUDA %s)" % (info["version"], info["cuda"] or "none"))
    work, log = build_example(tmp_path, torch_python, ninja_shim, cuda=False)

    # torch ran `ninja -v` (no -j, MAX_JOBS=auto) in its build directory: verbose command lines, two jobs.
    compile_lines = [ln for ln in log.splitlines() if re.match(r"\[\d+/2\] .*c\+\+", ln)]
    assert len(compile_lines) == 2, log[-4000:]
    assert not any(re.match(r"\[\d+/2\] s?ccache ", ln) for ln in compile_lines), compile_lines  # build_env
    build_dir = ninja_build_dir(work)
    # Only headroom writes its memory history there: the `ninja` torch ran was headroom.
    assert (build_dir / ".ninja_headroom").is_file()
    assert (build_dir / ".ninja_log").is_file()

    r = subprocess.run([torch_python, "-c", (
        "import torch, headroom_example_ops as ops\n"
        "a = torch.arange(4, dtype=torch.float32); b = torch.ones(4)\n"
        "print(ops.scaled_add(a, b, 2.5).tolist())\n"
        "try:\n"
        "    ops.scaled_add(a, torch.ones(3))\n"
        "except RuntimeError as e:\n"
        "    print('error:', 'shapes differ' in str(e))\n")],
        cwd=work, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-2:] == ["[2.5, 3.5, 4.5, 5.5]", "error: True"], r.stdout

    # The tree torch generated is up to date for headroom too.
    env = build_env(ninja_shim, torch_python)
    r = subprocess.run(["ninja", "-v"], cwd=build_dir, env=env, capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout) == (0, "ninja: no work to do.\n"), r.stdout + r.stderr


def test_cuda_extension(tmp_path, torch_python, ninja_shim):
    info = torch_info(torch_python)
    nvcc = nvcc_version()
    torch_major = info["cuda"].split(".")[0] if info["cuda"] else None
    nvcc_major = nvcc.split(".")[0] if nvcc else None
    # torch refuses to build CUDA extensions across CUDA major versions: scripts/install-test-deps.sh pins both.
    require(bool(torch_major and nvcc_major and torch_major == nvcc_major),
            "CUDA extension not built: torch %s is built with CUDA %s, nvcc is %s (majors must match; HEADROOM_TEST_NVCC)"
            % (info["version"], info["cuda"] or "none", nvcc or "absent"))

    print("torch %s (CUDA %s), nvcc %s" % (info["version"], info["cuda"], nvcc))
    work, log = build_example(tmp_path, torch_python, ninja_shim, cuda=True)
    nvcc_lines = [ln for ln in log.splitlines() if re.match(r"\[\d+/\d+\] .*nvcc", ln)]
    assert len(nvcc_lines) == 1, log[-4000:]
    for code in ("arch=compute_80,code=sm_80", "arch=compute_90,code=sm_90"):
        assert code in nvcc_lines[0], nvcc_lines[0]
    assert (ninja_build_dir(work) / ".ninja_headroom").is_file()

    r = subprocess.run([torch_python, "-c", (
        "import torch, headroom_example_cuda as cu\n"
        "if torch.cuda.is_available():\n"
        "    x = torch.arange(4, dtype=torch.float32, device='cuda')\n"
        "    print('gpu', cu.scale(x, 2.0).cpu().tolist())\n"
        "else:\n"
        "    try:\n"
        "        cu.scale(torch.ones(2), 2.0)\n"
        "    except RuntimeError as e:\n"
        "        print('no gpu', 'expected a CUDA tensor' in str(e))\n")],
        cwd=work, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] in ("gpu [0.0, 2.0, 4.0, 6.0]", "no gpu True"), r.stdout
