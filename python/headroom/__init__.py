# The `headroom` Python package: finds the headroom binary that this wheel installed into the environment's
# bin/ (next to its copy named `ninja`) and runs it; the commands themselves never go through Python.
"""headroom, a memory-aware drop-in replacement for ninja 1.13.2, packaged for pip.

The wheel installs two real executables into the environment's scripts directory (``bin/``): ``headroom`` and
``ninja`` (a copy of the same binary; headroom behaves the same under either name). This package only locates
them: ``headroom.binary()`` for tools that want the path, and ``python -m headroom`` for environments whose
``PATH`` lacks that ``bin/``.
"""

from __future__ import annotations

import os
import sys
import sysconfig

__all__ = ["binary", "main"]

_DIST = "headroom"


def _installed_copies() -> list:
    """Paths pip recorded for this distribution's bin/headroom, whatever the install scheme (venv, --user,
    --prefix, --target): RECORD lists it relative to site-packages."""
    try:
        from importlib import metadata
    except ImportError:  # Python < 3.8 has no importlib.metadata; requires-python excludes it
        return []
    try:
        files = metadata.distribution(_DIST).files or []
    except metadata.PackageNotFoundError:
        return []
    return [os.path.normpath(str(f.locate())) for f in files
            if f.name == "headroom" and f.parent.name in ("bin", "Scripts")]


def binary() -> str:
    """Absolute path of the headroom executable this package installed."""
    candidates = _installed_copies() + [os.path.join(sysconfig.get_path("scripts"), "headroom")]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    raise FileNotFoundError("the headroom binary is missing (looked for %s); reinstall headroom"
                            % ", ".join(candidates))


def main(argv0: str = "headroom") -> None:
    """Replaces this Python process with headroom (exec): signals, exit codes and the terminal reach headroom
    exactly as they would reach ninja, and no Python process lingers for the length of the build."""
    try:
        path = binary()
    except FileNotFoundError as error:
        sys.stderr.write("%s: %s\n" % (argv0, error))
        raise SystemExit(1)
    # Anything Python buffered would otherwise be lost by exec.
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [argv0] + sys.argv[1:])


def __getattr__(name: str):
    # headroom.__version__ reads the installed metadata only when asked (it is not needed to run anything).
    if name == "__version__":
        from importlib import metadata
        return metadata.version(_DIST)
    raise AttributeError(name)
