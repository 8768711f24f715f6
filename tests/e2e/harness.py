"""Differential end-to-end harness: run one scenario with reference ninja and with headroom, compare.

A *scenario* is a function ``fn(ws)`` that drives a :class:`Workspace`: it writes files, runs the binary under test
(``ws.run(...)``, role "sut"), optionally the reference (``tool="ref"``) or ninja 1.11.1 (``tool="v111"``), and records
observations (every run records itself; ``ws.snapshot()``, ``ws.logs()``, ``ws.record()`` add more).  The harness runs the
scenario twice, in two fresh directories: once with the reference ninja in the "sut" role and once with headroom, then
compares the two lists of normalised observations.  Assertions inside a scenario are absolute facts about ninja 1.13.2; a
scenario that fails with the reference in both roles is a broken scenario (reported as such).
"""

from __future__ import annotations

import difflib
import errno
import functools
import os
import re
import shutil
import signal
import struct
import subprocess
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import common  # noqa: E402 (the e2e directory is on sys.path: conftest.py)

REPO_ROOT = Path(__file__).resolve().parents[2]
HEADROOM_VERSION = "1.13.2"
# Files the harness reports through dedicated observations rather than the file snapshot.
LOG_FILES = (".ninja_log", ".ninja_deps")
# headroom's own memory history lives beside the logs, named like them; it is not part of what ninja produces.
HEADROOM_FILES = (".ninja_headroom",)
CMDS_LOG = "cmds.log"
TIMESTAMP_RE = re.compile(r"(?<![0-9])[0-9]{16,20}(?![0-9])")


# ---------------------------------------------------------------------------------------------------------------------
# Binaries and configuration


def truthy(value: str | None) -> bool:
    return value is not None and value.strip() not in ("", "0", "false", "no", "off")


def reference_binary() -> str:
    env = os.environ.get("NINJA_REF")
    if env:
        return env
    try:
        import ninja  # pip package ninja==1.13.2 (Kitware build)

        return os.path.join(ninja.BIN_DIR, "ninja")
    except ImportError:  # pragma: no cover - depends on the machine
        return ""


def headroom_binary() -> str:
    return os.environ.get("HEADROOM_BIN") or str(REPO_ROOT / "build" / "headroom")


def v111_binary() -> str:
    """ninja 1.11.1 (Kitware's PyPI build, pinned by scripts/install-test-deps.sh) for the v5-log interop scenarios."""
    return os.environ.get("NINJA_V111") or str(common.test_deps_dir() / "ninja-1.11-venv" / "bin" / "ninja")


def in_ci() -> bool:
    return truthy(os.environ.get("CI"))


@functools.lru_cache(maxsize=None)
def version_of(binary: str) -> str:
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=30)
    return out.stdout.strip()


@dataclass
class Config:
    ref: str
    sut: str
    self_mode: bool

    @property
    def sut_is_ref(self) -> bool:
        return self.self_mode


# ---------------------------------------------------------------------------------------------------------------------
# Log parsing


def parse_build_log(data: bytes):
    """Normalised view of .ninja_log: header + (path, hash, mtime==0) per entry, in file order.

    Start/end times and real mtimes differ between two runs and are dropped; start<=end and integer fields are checked.
    """
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    out = {"header": lines[0] if lines else "", "entries": [], "bad": []}
    body = lines[1:]
    if body and body[-1] == "":
        body.pop()
    else:
        out["bad"].append("no trailing newline")
    for line in body:
        fields = line.split("\t")
        if len(fields) != 5:
            out["bad"].append(line)
            continue
        start, end, mtime, path, h = fields
        try:
            ok = int(start) <= int(end) and int(mtime) >= 0
        except ValueError:
            ok = False
        if not ok:
            out["bad"].append(line)
            continue
        out["entries"].append((path, h, mtime == "0"))
    return out


def parse_deps_log(data: bytes):
    """Normalised view of .ninja_deps v4: header, path records and deps records (output mtimes dropped)."""
    out = {"header": data[:16], "records": [], "bad": []}
    if not data.startswith(b"# ninjadeps\n") or len(data) < 16:
        out["bad"].append("bad header")
        return out
    off = 16
    ids: list[str] = []
    while off + 4 <= len(data):
        (size,) = struct.unpack_from("<I", data, off)
        off += 4
        is_deps = bool(size & 0x80000000)
        size &= 0x7FFFFFFF
        rec = data[off : off + size]
        off += size
        if len(rec) < size:
            out["bad"].append("truncated record")
            break
        if is_deps:
            (oid,) = struct.unpack_from("<i", rec, 0)
            ins = struct.unpack_from("<%di" % ((size - 12) // 4), rec, 12)
            name = lambda i: ids[i] if 0 <= i < len(ids) else "<bad id %d>" % i  # noqa: E731
            out["records"].append(("deps", name(oid), tuple(name(i) for i in ins)))
        else:
            (check,) = struct.unpack_from("<I", rec, size - 4)
            path = rec[: size - 4].rstrip(b"\0").decode("utf-8", "surrogateescape")
            if (~check) & 0xFFFFFFFF != len(ids):
                out["bad"].append("bad checksum for %s" % path)
            ids.append(path)
            out["records"].append(("path", path))
    if off != len(data):
        out["bad"].append("trailing bytes")
    return out


# ---------------------------------------------------------------------------------------------------------------------
# Workspace


@dataclass
class Result:
    args: tuple
    rc: int
    stdout: str
    stderr: str
    cmds: list = field(default_factory=list)

    def __repr__(self):
        return "Result(args=%r, rc=%r,\n stdout=%r,\n stderr=%r,\n cmds=%r)" % (
            self.args,
            self.rc,
            self.stdout,
            self.stderr,
            self.cmds,
        )


def mask_numbers(text: str) -> str:
    """Output whose figures differ by nature (-d stats timings and counts), with every number and the padding
    after it made one 'N': what remains is the layout, the names and their order."""
    return re.sub(r"\d+(?:\.\d+)?[ ]*", "N", text)


def fs_now(clock: Path) -> int:
    """Current filesystem timestamp (the kernel's coarse clock) as seen on a freshly written file."""
    clock.write_bytes(b"x")
    return os.stat(clock).st_mtime_ns


def newest_mtime(*trees: Path) -> int:
    newest = 0
    for tree in trees:
        for dirpath, dirnames, filenames in os.walk(tree):
            for name in filenames:
                try:
                    newest = max(newest, os.lstat(os.path.join(dirpath, name)).st_mtime_ns)
                except FileNotFoundError:
                    pass
    return newest


def wait_past_fs_clock(ns: int, clock: Path) -> int:
    """Polls the filesystem clock (no fixed sleep) until it is past `ns`; returns that time."""
    deadline = time.monotonic() + 5
    while True:
        now = fs_now(clock)
        if now > ns:
            return now
        if time.monotonic() > deadline:
            raise RuntimeError("filesystem clock does not advance")
        time.sleep(0.0005)


def bump_mtime(path: Path, *trees: Path):
    """Gives `path` an mtime newer than every file under `trees`, taken from the filesystem's own clock, as an
    editor saving the file would. Not time.time_ns(): that fine clock runs ahead of file timestamps, so a job
    started right after records a start time older than the input, and ninja 1.13.2 (like headroom) rebuilds it
    once more on the next run."""
    clock = Path(path).parent / ".bump-clock"
    now = wait_past_fs_clock(newest_mtime(*trees), clock)
    clock.unlink()
    os.utime(path, ns=(now, now))


class Workspace:
    """One scenario directory plus the binaries for each role."""

    def __init__(self, root: Path, role: str, config: Config, sut_binary: str):
        self.root = root
        self.role = role  # "ref" or "sut": which of the two executions this is
        self.config = config
        self.bins = {"ref": config.ref, "sut": sut_binary, "v111": v111_binary()}
        self.records: list = []
        self.root.mkdir(parents=True)
        self._clock = root.parent / ".clock"
        self._fifos: list[Path] = []
        self._procs: list[subprocess.Popen] = []

    # -- identity ------------------------------------------------------------------------------------------------------
    @property
    def sut_is_ref(self) -> bool:
        return self.bins["sut"] == self.config.ref

    def require_v111(self):
        why = None
        if not os.access(self.bins["v111"], os.X_OK):
            why = "ninja 1.11.1 not available at %s (scripts/install-test-deps.sh installs it)" % self.bins["v111"]
        elif not version_of(self.bins["v111"]).startswith("1.11"):
            why = "%s is not ninja 1.11 (NINJA_V111)" % self.bins["v111"]
        if why and in_ci():
            pytest.fail(why + ": required in CI for the v5-log interop scenarios")
        if why:
            pytest.skip(why)

    # -- files ---------------------------------------------------------------------------------------------------------
    def path(self, rel: str) -> Path:
        return self.root / rel

    def write(self, rel: str, content: str | bytes = "", mode: int | None = None, mtime_ns: int | None = None):
        p = self.path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            content = content.encode()
        p.write_bytes(content)
        if mode is not None:
            os.chmod(p, mode)
        if mtime_ns is not None:
            os.utime(p, ns=(mtime_ns, mtime_ns))
        return p

    def script(self, rel: str, body: str):
        """Write an executable /bin/sh script."""
        return self.write(rel, "#!/bin/sh\n" + body, mode=0o755)

    def read(self, rel: str) -> str:
        return self.path(rel).read_text()

    def exists(self, rel: str) -> bool:
        return os.path.lexists(self.path(rel))

    def remove(self, rel: str):
        os.unlink(self.path(rel))

    def mtime(self, rel: str) -> int:
        return os.stat(self.path(rel)).st_mtime_ns

    def set_mtime(self, rel: str, ns: int):
        os.utime(self.path(rel), ns=(ns, ns))

    def mkfifo(self, rel: str):
        p = self.path(rel)
        p.parent.mkdir(parents=True, exist_ok=True)
        os.mkfifo(p)
        self._fifos.append(p)
        return p

    def _newest_mtime(self) -> int:
        return newest_mtime(self.root)

    def _wait_past(self, ns: int) -> int:
        return wait_past_fs_clock(ns, self._clock)

    def touch(self, *rels: str):
        """Give files an mtime strictly newer than every file in the workspace, and strictly older than any file
        written afterwards (so the next build's outputs are newer).  No fixed sleeps: polls the filesystem clock."""
        t = self._wait_past(self._newest_mtime())
        for rel in rels:
            p = self.path(rel)
            if not p.exists():
                p.parent.mkdir(parents=True, exist_ok=True)
                p.write_bytes(b"")
            os.utime(p, ns=(t, t))
        self._wait_past(t)

    def wait_for_file(self, rel: str, timeout: float = 20.0):
        deadline = time.monotonic() + timeout
        p = self.path(rel)
        while not p.exists():
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for %s" % rel)
            time.sleep(0.002)

    # -- observations --------------------------------------------------------------------------------------------------
    def normalise(self, text: str, binary: str | None = None) -> str:
        text = text.replace(str(self.root), "$WS")
        # nanosecond timestamps (e.g. in -d explain) differ between two runs
        text = TIMESTAMP_RE.sub("<mtime>", text)
        if binary == self.config.ref:
            v = version_of(binary)
            if v != HEADROOM_VERSION:
                text = text.replace(v, HEADROOM_VERSION)
        return text

    def record(self, key: str, value):
        self.records.append((key, value))

    def files(self, include_logs: bool = False) -> dict:
        """{relative path: bytes | '<dir>' | '<fifo>' | '-> target'} for everything in the workspace."""
        out = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            rel_dir = os.path.relpath(dirpath, self.root)
            for d in dirnames:
                rel = os.path.normpath(os.path.join(rel_dir, d))
                out[rel + "/"] = "<dir>"
            for name in filenames:
                rel = os.path.normpath(os.path.join(rel_dir, name))
                if name in HEADROOM_FILES:
                    continue
                if not include_logs and (name in LOG_FILES or rel == CMDS_LOG):
                    continue
                full = os.path.join(dirpath, name)
                st = os.lstat(full)
                if os.path.islink(full):
                    out[rel] = "-> " + os.readlink(full)
                elif not os.path.isfile(full):
                    out[rel] = "<special>"
                else:
                    with open(full, "rb") as f:
                        data = f.read()
                    try:
                        out[rel] = self.normalise(data.decode())
                    except UnicodeDecodeError:
                        out[rel] = data
        return dict(sorted(out.items()))

    def snapshot(self, label: str = "files"):
        self.record(label, self.files())

    def build_log(self, builddir: str = "."):
        p = self.path(os.path.join(builddir, ".ninja_log"))
        return parse_build_log(p.read_bytes()) if p.exists() else None

    def deps_log(self, builddir: str = "."):
        p = self.path(os.path.join(builddir, ".ninja_deps"))
        return parse_deps_log(p.read_bytes()) if p.exists() else None

    def logs(self, builddir: str = ".", sort: bool = False, strict: bool = True):
        """Record the normalised .ninja_log and .ninja_deps (sort=True for parallel builds).

        strict: assert the build log has no malformed lines (pass False in corruption scenarios)."""
        bl = self.build_log(builddir)
        dl = self.deps_log(builddir)
        if bl is not None:
            assert not strict or not bl["bad"], "malformed .ninja_log lines: %r" % bl["bad"]
            # numbers in malformed lines are run-specific times
            bl["bad"] = [re.sub(r"[0-9]+", "<n>", ln) for ln in bl["bad"]]
            if sort:
                bl = dict(bl, entries=sorted(bl["entries"]))
        if dl is not None and sort:
            # ids depend on write order; keep only the deps mapping
            dl = dict(dl, records=sorted(r for r in dl["records"] if r[0] == "deps"))
        self.record("logs", {"build_log": bl, "deps_log": dl})
        return bl, dl

    def take_cmds(self) -> list:
        p = self.path(CMDS_LOG)
        if not p.exists():
            return []
        lines = p.read_text().splitlines()
        p.unlink()
        return lines

    # -- running -------------------------------------------------------------------------------------------------------
    def env(self, extra: dict | None = None) -> dict:
        env = {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "TERM": "dumb",
            "LC_ALL": "C",
            "LANG": "C",
            "HOME": str(self.root),
            "TMPDIR": os.environ.get("TMPDIR", "/tmp"),
            # The per-user history store, kept beside the workspace: one per workspace, so scenarios never
            # warm each other, and outside it, so file snapshots show only what the build wrote.
            "HEADROOM_STORE": str(self.root) + ".store",
        }
        for k, v in (extra or {}).items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env

    @staticmethod
    def _ordered(args) -> bool:
        args = list(args)
        for i, a in enumerate(args):
            if a == "-j1" or (a == "-j" and i + 1 < len(args) and args[i + 1] == "1"):
                return True
        return False

    def _result(self, tool, args, rc, out, err, record, stdout, stderr, cmds_order):
        binary = self.bins[tool]
        cmds = self.take_cmds()
        res = Result(tuple(args), rc, self.normalise(out, binary), self.normalise(err, binary), cmds)
        if record:
            if cmds_order is None:
                cmds_order = self._ordered(args)
            norm_cmds = list(cmds) if cmds_order else sorted(cmds)
            so = {"exact": res.stdout, "sorted": sorted(res.stdout.splitlines()), "ignore": None,
                  "numbers_masked": mask_numbers(res.stdout)}[stdout]
            se = {"exact": res.stderr, "sorted": sorted(res.stderr.splitlines()), "ignore": None}[stderr]
            self.record(
                "run",
                {
                    "tool": tool,
                    "args": [self.normalise(a) for a in args],
                    "rc": rc,
                    "stdout": so,
                    "stderr": se,
                    "cmds": norm_cmds,
                },
            )
        return res

    def run(
        self,
        *args: str,
        tool: str = "sut",
        env: dict | None = None,
        cwd: str | None = None,
        timeout: float = 60,
        record: bool = True,
        stdout: str = "exact",
        stderr: str = "exact",
        cmds_order: bool | None = None,
    ) -> Result:
        """Run a binary to completion; record rc, stdout, stderr and the commands that appended to cmds.log.

        cmds are compared in order when the run uses -j1 (or cmds_order=True), else as a sorted list."""
        # argv[0] is "ninja", as for a drop-in installed under that name (getopt messages print argv[0])
        p = subprocess.run(
            ["ninja", *args],
            executable=self.bins[tool],
            cwd=self.path(cwd) if cwd else self.root,
            env=self.env(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
        )
        out = p.stdout.decode("utf-8", "surrogateescape")
        err = p.stderr.decode("utf-8", "surrogateescape")
        return self._result(tool, args, p.returncode, out, err, record, stdout, stderr, cmds_order)

    def sh(self, argv: list, cwd: str | None = None, env: dict | None = None, timeout: float = 300, check: bool = True):
        """Run an arbitrary helper program (not recorded); returns CompletedProcess with text output."""
        p = subprocess.run(argv, cwd=self.path(cwd) if cwd else self.root, env=self.env(env), stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise AssertionError("%r failed (%d):\n%s\n%s" % (argv, p.returncode, p.stdout, p.stderr))
        return p

    def spawn(self, *args: str, tool: str = "sut", env: dict | None = None) -> subprocess.Popen:
        proc = subprocess.Popen(
            ["ninja", *args],
            executable=self.bins[tool],
            cwd=self.root,
            env=self.env(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        proc.e2e_args = args
        proc.e2e_tool = tool
        self._procs.append(proc)
        return proc

    def finish(self, proc: subprocess.Popen, timeout: float = 20, record: bool = True, stdout="exact", stderr="exact"):
        out, err = proc.communicate(timeout=timeout)
        return self._result(
            proc.e2e_tool,
            proc.e2e_args,
            proc.returncode,
            out.decode("utf-8", "surrogateescape"),
            err.decode("utf-8", "surrogateescape"),
            record,
            stdout,
            stderr,
            None,
        )

    def cleanup(self):
        for proc in self._procs:
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=10)
        # Unblock anything still stuck opening one of our FIFOs (an O_RDWR open never blocks on Linux).
        for fifo in self._fifos:
            try:
                fd = os.open(fifo, os.O_RDWR | os.O_NONBLOCK)
                os.close(fd)
            except OSError:
                pass


# ---------------------------------------------------------------------------------------------------------------------
# Differential driver


def _fmt(value) -> str:
    if isinstance(value, dict):
        lines = []
        for k, v in value.items():
            if isinstance(v, str) and "\n" in v:
                lines.append("%s:" % k)
                lines.extend("    | " + ln for ln in v.split("\n"))
            else:
                lines.append("%s: %r" % (k, v))
        return "\n".join(lines)
    return repr(value)


def compare_records(ref: list, sut: list) -> str | None:
    """Return a human-readable description of the first difference, or None."""
    for i, (a, b) in enumerate(zip(ref, sut)):
        if a != b:
            fa, fb = _fmt(a[1]).splitlines(), _fmt(b[1]).splitlines()
            diff = "\n".join(difflib.unified_diff(fa, fb, "reference", "headroom", lineterm="", n=50))
            return "observation #%d (%s) differs:\n%s" % (i, a[0] if a[0] == b[0] else (a[0], b[0]), diff)
    if len(ref) != len(sut):
        extra = ref[len(sut) :] if len(ref) > len(sut) else sut[len(ref) :]
        who = "reference" if len(ref) > len(sut) else "headroom"
        return "%s made %d more observation(s): %s" % (who, len(extra), "\n".join(_fmt(x) for x in extra[:3]))
    return None


def run_scenario(fn, tmp_path: Path, config: Config):
    """Run fn with the reference and with the binary under test, each in a fresh directory; compare observations."""
    if not config.ref or not os.access(config.ref, os.X_OK):
        pytest.fail("reference ninja not found (set NINJA_REF or pip install ninja==1.13.2): %r" % config.ref)
    if not config.self_mode and not os.access(config.sut, os.X_OK):
        pytest.fail("headroom binary %r does not exist (set HEADROOM_BIN, or HEADROOM_E2E_SELF=1 to validate the "
                    "suite with the reference in both roles)" % config.sut)
    sut_binary = config.ref if config.self_mode else config.sut
    outcomes = {}
    for role, binary in (("ref", config.ref), ("sut", sut_binary)):
        ws = Workspace(tmp_path / role / "w", role, config, binary)
        error = None
        try:
            fn(ws)
        except (pytest.skip.Exception, pytest.fail.Exception):
            ws.cleanup()
            raise
        except BaseException:  # noqa: BLE001 - report everything, including timeouts
            error = traceback.format_exc()
        finally:
            ws.cleanup()
        outcomes[role] = (ws, error)
    ref_ws, ref_err = outcomes["ref"]
    sut_ws, sut_err = outcomes["sut"]
    dump = os.environ.get("HEADROOM_E2E_DUMP")
    if dump:  # debugging aid: human-readable observations of the reference run
        os.makedirs(dump, exist_ok=True)
        with open(os.path.join(dump, tmp_path.name + ".txt"), "w") as f:
            for key, value in ref_ws.records:
                f.write("=== %s\n%s\n" % (key, _fmt(value)))
    if ref_err:
        last = [r for r in ref_ws.records if r[0] == "run"][-1:]
        pytest.fail("scenario fails with the REFERENCE ninja (scenario bug or brief mismatch):\n" + ref_err
                    + "\nlast run:\n" + "\n".join(_fmt(r[1]) for r in last), pytrace=False)
    diff = compare_records(ref_ws.records, sut_ws.records)
    problems = []
    if diff:
        problems.append(diff)
    if sut_err:
        last = [r for r in sut_ws.records if r[0] == "run"][-1:]
        problems.append("scenario assertion failed for headroom:\n" + sut_err
                        + "\nlast run:\n" + "\n".join(_fmt(r[1]) for r in last))
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)
    return ref_ws, sut_ws


def scenario(fn):
    """Decorator: turn ``def test_x(ws): ...`` into a differential pytest test."""

    def test(differential):
        differential(fn)

    test.__name__ = fn.__name__
    test.__doc__ = fn.__doc__
    test.__module__ = fn.__module__
    return test


# ---------------------------------------------------------------------------------------------------------------------
# Log writers (for synthetic / corrupt log scenarios)


def deps_log_bytes(entries, version: int = 4) -> bytes:
    """Build a .ninja_deps: entries = [(output, mtime_ns, [inputs...]), ...] written in order (paths on first use)."""
    out = bytearray(b"# ninjadeps\n" + struct.pack("<i", version))
    ids: dict[str, int] = {}

    def path_id(p: str) -> int:
        if p not in ids:
            raw = p.encode()
            raw += b"\0" * ((4 - len(raw) % 4) % 4)
            out.extend(struct.pack("<I", len(raw) + 4) + raw + struct.pack("<I", (~len(ids)) & 0xFFFFFFFF))
            ids[p] = len(ids)
        return ids[p]

    for output, mtime, inputs in entries:
        oid = path_id(output)
        iids = [path_id(i) for i in inputs]
        size = 12 + 4 * len(iids)
        out.extend(struct.pack("<IiII", size | 0x80000000, oid, mtime & 0xFFFFFFFF, mtime >> 32))
        out.extend(struct.pack("<%di" % len(iids), *iids))
    return bytes(out)
