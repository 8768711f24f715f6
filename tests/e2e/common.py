"""Shared manifest snippets for the e2e scenarios, and where the suites find the CUDA compiler they drive.

Every rule that runs a command appends its output name to cmds.log, so a run's record lists the commands that ran.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

RULES = """\
rule cat
  command = echo $out >> cmds.log && cat $in > $out
  description = CAT $out
rule touch
  command = echo $out >> cmds.log && touch $out
rule cc
  command = echo $out >> cmds.log && cat $in > $out
"""


def manifest(*parts: str) -> str:
    return RULES + "".join(parts)


def test_deps_dir() -> Path:
    """Where scripts/install-test-deps.sh keeps the pinned tools (nvcc, torch, meson, ninja 1.11) in their venvs."""
    return Path(os.environ.get("HEADROOM_TEST_DEPS") or Path.home() / ".cache" / "headroom-e2e")


def install_test_deps(*args: str) -> bool:
    """Runs scripts/install-test-deps.sh (the pinned versions; idempotent, one run at a time) for a suite started by
    hand without scripts/test.sh. True when it succeeded; otherwise its output's tail is printed (pytest shows it
    with the failure)."""
    script = Path(__file__).resolve().parents[2] / "scripts" / "install-test-deps.sh"
    r = subprocess.run([str(script), *args], capture_output=True, text=True, timeout=3600)
    if r.returncode != 0:
        print("%s failed (exit %d):\n%s%s" % (script, r.returncode, r.stdout[-3000:], r.stderr[-3000:]))
    return r.returncode == 0


def nvcc_path() -> str | None:
    """The nvcc every CUDA test uses, or None: $HEADROOM_TEST_NVCC (scripts/test.sh exports the PyPI nvcc that
    scripts/install-test-deps.sh installs, the CUDA major of the pinned torch), else that nvcc where the script puts it
    by default, else `nvcc` on PATH, else /usr/local/cuda/bin/nvcc. A set HEADROOM_TEST_NVCC that does not run is
    None, not a fallback: the tests then fail under CI instead of testing another compiler."""
    chosen = os.environ.get("HEADROOM_TEST_NVCC")
    candidates = [chosen] if chosen else [str(test_deps_dir() / "cuda" / "bin" / "nvcc"), shutil.which("nvcc"),
                                          "/usr/local/cuda/bin/nvcc"]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    return None


def cuda_home(nvcc: str) -> str:
    """The toolkit root of an nvcc (its bin/ directory's parent: include/ and lib/ sit beside bin/)."""
    return str(Path(nvcc).resolve().parent.parent)


def with_nvcc(env: dict, nvcc: str) -> dict:
    """env with this nvcc first on PATH (build files and CMake that say plain `nvcc` find it) and CUDA_HOME,
    CUDACXX naming its toolkit (torch's cpp_extension and CMake's CUDA language read them)."""
    bin_dir = os.path.dirname(nvcc)
    return dict(env, PATH=os.pathsep.join([bin_dir, env.get("PATH", os.defpath)]), CUDA_HOME=cuda_home(nvcc),
                CUDACXX=nvcc)
