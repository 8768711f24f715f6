# The `headroom` Python package: locates the headroom binary shipped in this wheel and runs it
# under the names `headroom` and `ninja` (the console entry points declared in pyproject.toml).
"""headroom, a memory-aware drop-in replacement for ninja, packaged for pip.

BIN_DIR holds the real executable. The `ninja` and `headroom` commands that pip installs replace
the Python process with it (exec), so signals, exit codes and the terminal reach headroom exactly
as they would reach ninja, and no Python process lingers for the length of the build.
"""

from __future__ import annotations

import os
import sys

__all__ = ["BIN_DIR", "binary", "headroom", "ninja"]

# scikit-build-core installs CMake's prefix into headroom/data (see pyproject.toml), so the
# binary sits next to this file and the package stays relocatable.
BIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "bin")


def binary() -> str:
    """Absolute path of the headroom executable inside this package."""
    return os.path.join(BIN_DIR, "headroom")


def _exec(name: str) -> None:
    path = binary()
    if not os.access(path, os.X_OK):
        sys.stderr.write("%s: the headroom binary is missing from the package (%s); reinstall headroom\n"
                         % (name, path))
        raise SystemExit(1)
    # Anything Python buffered would otherwise be lost by exec.
    sys.stdout.flush()
    sys.stderr.flush()
    # headroom's behaviour does not depend on argv[0]; passing the invoked name keeps `ps` honest.
    os.execv(path, [name] + sys.argv[1:])


def headroom() -> None:
    """Entry point of the `headroom` command."""
    _exec("headroom")


def ninja() -> None:
    """Entry point of the `ninja` command: what CMake, PyTorch and pip builds find on PATH."""
    _exec("ninja")
