"""The per-user history store ($XDG_CACHE_HOME/headroom) with the real binary: a project built in a second,
fresh temporary directory starts from the first one's figures; two builds at once sharing one store lose no
record; a corrupt, unwritable or newer store gives one warning and a successful build; the build dir holds only
ninja's names, before and after `-t clean`; an old .headroom_history is migrated; `-t history export/import`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import sys
from pathlib import Path

import pytest

import harness

HOG = [sys.executable, "-c", "import sys,time; b=bytearray(int(sys.argv[1])<<20); time.sleep(0.2)"]


def project(directory: Path, jobs: int = 3, prefix: str = "obj") -> Path:
    """A build whose jobs hold 40-80 MiB each, with absolute paths in its commands (as pip builds have)."""
    directory.mkdir(parents=True, exist_ok=True)
    hog = " ".join(HOG[:2]) + " '%s'" % HOG[2]
    lines = ["rule hog", "  command = %s $mb %s/$in && touch $out" % (hog, directory), ""]
    for i in range(jobs):
        (directory / ("%s%d.c" % (prefix, i))).write_text("int x%d;\n" % i)
        lines += ["build %s%d.o: hog %s%d.c" % (prefix, i, prefix, i), "  mb = %d" % (40 + 20 * (i % 3))]
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")
    return directory


def env_for(store: Path | None, tmpdir: Path, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env.update(TERM="dumb", LC_ALL="C", TMPDIR=str(tmpdir))
    if store is None:
        env.pop("HEADROOM_STORE", None)
    else:
        env["HEADROOM_STORE"] = str(store)
    env.update(extra)
    return env


def run(args: list, cwd: Path, env: dict, binary: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([os.path.abspath(binary or harness.headroom_binary())] + args, cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def sources(trace: Path) -> dict:
    events = json.loads(trace.read_text())
    events = events["traceEvents"] if isinstance(events, dict) else events
    return {e["name"]: e["args"]["source"] for e in events if e.get("ph") == "X" and "source" in e.get("args", {})}


def store_edges(store: Path) -> list[str]:
    return [line for line in (store / "history").read_text().splitlines() if line.startswith("E\t")]


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "warning" in line]


def test_second_build_in_a_fresh_temp_dir_starts_warm(tmp_path):
    store = tmp_path / "store"
    first = project(tmp_path / "pip-install-k3j4h5" / "pkg")
    second = project(tmp_path / "pip-install-q8w7e6" / "pkg")
    env = env_for(store, tmp_path)
    r = run(["--trace=" + str(tmp_path / "first.json")], first, env)
    assert r.returncode == 0, r.stderr
    assert set(sources(tmp_path / "first.json").values()) == {"prior"}
    assert len(store_edges(store)) == 3

    r = run(["--trace=" + str(tmp_path / "second.json")], second, env)
    assert r.returncode == 0, r.stderr
    assert warnings(r.stderr) == [], r.stderr
    # Every estimate of the fresh build dir came from the first build's measurements of the same edges.
    assert sources(tmp_path / "second.json") == {"obj0.o": "edge history", "obj1.o": "edge history",
                                                 "obj2.o": "edge history"}
    # Nothing but ninja's names in the build dir.
    extra = {p.name for p in second.iterdir()} - {"build.ninja", "obj0.c", "obj1.c", "obj2.c",
                                                  "obj0.o", "obj1.o", "obj2.o"}
    assert extra == {".ninja_log", ".ninja_headroom"}, extra
    # The store keeps one entry per edge: the temp dir's random part is not part of its identity.
    assert len(store_edges(store)) == 3
    assert all("pip-install" not in line for line in store_edges(store))
    # -t memstats shows the store after the build dir's own figures, with both builds' runs.
    r = run(["-t", "memstats", "--json"], second, env)
    assert r.returncode == 0, r.stderr
    shown = json.loads(r.stdout)["user_store"]
    assert (shown["dir"], shown["edges"]) == (str(store), 3)
    assert {e["output"]: e["runs"] for e in shown["heaviest_edges"]} == {"obj0.o": 2, "obj1.o": 2, "obj2.o": 2}


def test_no_store_flag_and_env_turn_it_off(tmp_path):
    store = tmp_path / "store"
    work = project(tmp_path / "a")
    assert run(["--no-store"], work, env_for(store, tmp_path)).returncode == 0
    assert not store.exists()
    run(["-t", "clean"], work, env_for(store, tmp_path))
    assert run([], work, env_for(Path("off"), tmp_path)).returncode == 0
    assert not store.exists()
    run(["-t", "clean"], work, env_for(store, tmp_path))
    # The default: $XDG_CACHE_HOME/headroom.
    assert run([], work, env_for(None, tmp_path, XDG_CACHE_HOME=str(tmp_path / "xdg"))).returncode == 0
    assert len(store_edges(tmp_path / "xdg" / "headroom")) == 3
    r = run(["-h"], work, env_for(store, tmp_path))
    help_text = r.stdout + r.stderr
    assert "--store=DIR" in help_text and "--no-store" in help_text


def test_two_concurrent_builds_sharing_one_store_lose_no_record(tmp_path):
    store = tmp_path / "store"
    env = env_for(store, tmp_path)
    builds = [project(tmp_path / ("b%d" % n), jobs=6, prefix="p%d_" % n) for n in range(2)]
    procs = [subprocess.Popen([os.path.abspath(harness.headroom_binary()), "-j3"], cwd=b, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for b in builds]
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        assert warnings(err) == [], err
    outputs = sorted(line.split("\t")[3] for line in store_edges(store))
    assert outputs == sorted("p%d_%d.o" % (n, i) for n in range(2) for i in range(6))


@pytest.mark.parametrize("damage", ["corrupt", "truncated", "newer", "unwritable"])
def test_damaged_or_unusable_store_warns_once_and_builds(tmp_path, damage):
    store = tmp_path / "store"
    env = env_for(store, tmp_path)
    assert run([], project(tmp_path / "seed"), env).returncode == 0
    history = store / "history"
    text = history.read_text()
    if damage == "corrupt":
        history.write_text(text + "E\tzz\tnot a record\n")
    elif damage == "truncated":
        history.write_text(text[:-7])
    elif damage == "newer":
        history.write_text("# headroom user store v99\nsomething from the future\n")
    else:
        # The lock cannot be taken (a directory in its place): the store is read, not written. Permission bits
        # would do for a normal user, but not for root.
        (store / "history.lock").unlink()
        (store / "history.lock").mkdir()
    before = history.read_text()
    r = run([], project(tmp_path / "work"), env)
    assert r.returncode == 0, r.stderr
    found = warnings(r.stderr)
    assert len(found) == 1, r.stderr
    assert "headroom store" in found[0] or str(history) in found[0], found
    if damage in ("newer", "unwritable"):
        assert history.read_text() == before  # left untouched
    else:
        # Rewritten from what could be read plus this build's records; the next build is quiet.
        r = run(["-t", "clean"], tmp_path / "work", env)
        r = run([], tmp_path / "work", env)
        assert (r.returncode, warnings(r.stderr)) == (0, []), r.stderr


def test_read_only_store_is_used_but_not_written(tmp_path):
    """A store the user may read but not write (a shared cache, a read-only mount): its figures are used, with one
    warning, and it is left as it was. Permission bits do not stop root, so as root (CI) the builds run as nobody
    (setpriv), in a directory nobody can reach."""
    runner = []
    if os.geteuid() == 0:
        if subprocess.run(["sh", "-c", "command -v setpriv"], capture_output=True).returncode != 0:
            if harness.in_ci():
                pytest.fail("running as root without setpriv: cannot make the store read-only")
            pytest.skip("running as root without setpriv: cannot make the store read-only")
        runner = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        tmp_path = Path(tempfile.mkdtemp(prefix="headroom-ro-store-", dir="/tmp"))
        os.chmod(tmp_path, 0o777)
    try:
        store = tmp_path / "store"
        env = env_for(store, tmp_path)
        seed, work = project(tmp_path / "seed"), project(tmp_path / "work")
        if runner:
            for directory in (seed, work):
                # nobody cannot reach this interpreter when it lives under /root (pyenv): use the system's.
                manifest = directory / "build.ninja"
                manifest.write_text(manifest.read_text().replace(sys.executable, shutil.which("python3", path="/usr/bin:/bin") or sys.executable))
                subprocess.run(["chown", "-R", "65534:65534", str(directory)], check=True)

        def build(args, cwd):
            return subprocess.run(runner + [os.path.abspath(harness.headroom_binary())] + args, cwd=cwd, env=env,
                                  capture_output=True, text=True, timeout=300)

        if runner:
            store.mkdir()
            os.chown(store, 65534, 65534)
        assert build([], seed).returncode == 0
        before = (store / "history").read_text()
        store.chmod(0o555)
        r = build(["--trace=" + str(work / "t.json")], work)
        assert r.returncode == 0, r.stderr
        # Only the store's own warning is looked at here (a build as nobody prints no other, but that is not this test's).
        about_store = [w for w in warnings(r.stderr) if "store" in w]
        assert len(about_store) == 1 and "read-only" in about_store[0], r.stderr
        assert set(sources(work / "t.json").values()) == {"edge history"}
        assert (store / "history").read_text() == before
    finally:
        if (tmp_path / "store").exists():
            (tmp_path / "store").chmod(0o755)
        if runner:
            shutil.rmtree(tmp_path, ignore_errors=True)


def test_clean_leaves_only_what_ninja_leaves(tmp_path):
    """RunCMake-style: after a build and `-t clean` the build dir lists only ninja's files (its logs)."""
    listings = {}
    for role, binary in (("ref", harness.reference_binary()), ("sut", harness.headroom_binary())):
        work = project(tmp_path / role)
        env = env_for(tmp_path / (role + "-store"), tmp_path)
        assert run([], work, env, binary).returncode == 0
        assert run(["-t", "clean"], work, env, binary).returncode == 0
        assert run(["-t", "cleandead"], work, env, binary).returncode == 0
        listings[role] = sorted(p.name for p in work.iterdir())
    extra = set(listings["sut"]) - set(listings["ref"])
    assert set(listings["ref"]) <= set(listings["sut"]), listings
    assert extra <= {".ninja_headroom"}, listings
    assert all(name.startswith(".ninja_") for name in extra)


def test_legacy_history_is_migrated_once(tmp_path):
    work = project(tmp_path / "w")
    env = env_for(tmp_path / "store", tmp_path)
    assert run(["--no-store"], work, env).returncode == 0
    (work / ".ninja_headroom").rename(work / ".headroom_history")
    assert run(["-t", "clean"], work, env).returncode == 0
    r = run(["--no-store", "--trace=" + str(tmp_path / "t.json")], work, env)
    assert r.returncode == 0, r.stderr
    assert not (work / ".headroom_history").exists()
    assert (work / ".ninja_headroom").is_file()
    assert set(sources(tmp_path / "t.json").values()) == {"edge history"}


def test_history_export_then_import_on_a_fresh_machine(tmp_path):
    """The CI pattern: restore a cached file, import it, build, export it for the next run."""
    first_store, second_store = tmp_path / "runner1", tmp_path / "runner2"
    work = project(tmp_path / "ci1" / "src")
    assert run([], work, env_for(first_store, tmp_path)).returncode == 0
    exported = tmp_path / "cache" / "headroom-history.txt"
    exported.parent.mkdir()
    r = run(["-t", "history", "export", str(exported)], work, env_for(first_store, tmp_path))
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    # Export works without a store too: the build dir's own history alone.
    only_dir = tmp_path / "only-dir.txt"
    r = run(["--no-store", "-t", "history", "export", str(only_dir)], work, env_for(first_store, tmp_path))
    assert r.returncode == 0, r.stderr
    assert len([ln for ln in only_dir.read_text().splitlines() if ln.startswith("E\t")]) == 3

    fresh = project(tmp_path / "ci2" / "src")
    env = env_for(second_store, tmp_path)
    r = run(["-t", "history", "import", str(exported)], fresh, env)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    assert run(["-t", "history", "path"], fresh, env).stdout.strip() == str(second_store)
    r = run(["--trace=" + str(tmp_path / "t.json")], fresh, env)
    assert r.returncode == 0, r.stderr
    assert set(sources(tmp_path / "t.json").values()) == {"edge history"}

    r = run(["-t", "history", "import", str(tmp_path / "missing.txt")], fresh, env)
    assert r.returncode == 1 and "missing.txt" in r.stderr, r.stderr
    r = run(["-t", "history"], fresh, env)
    assert r.returncode == 1 and "usage: ninja -t history" in r.stdout


def test_history_export_reads_the_build_dirs_history_under_builddir(tmp_path):
    """A manifest with `builddir` keeps .ninja_headroom there (as memstats and plan read it): export takes it
    from there, not from the directory ninja runs in; a stray file in that directory is not exported."""
    work = project(tmp_path / "w")
    manifest = work / "build.ninja"
    manifest.write_text("builddir = out\n" + manifest.read_text())
    env = env_for(None, tmp_path)
    assert run(["--no-store"], work, env).returncode == 0
    assert (work / "out" / ".ninja_headroom").is_file() and not (work / ".ninja_headroom").exists()
    (work / ".ninja_headroom").write_text("# headroom history v2\nC\t0\tK\nE\t0\t1\t5\t5\tc\tc\t-\tstray.o\n")
    exported = tmp_path / "exported.txt"
    r = run(["--no-store", "-t", "history", "export", str(exported)], work, env)
    assert (r.returncode, r.stderr) == (0, ""), r.stderr
    outputs = sorted(ln.split("\t")[-1] for ln in exported.read_text().splitlines() if ln.startswith("E\t"))
    assert outputs == ["obj0.o", "obj1.o", "obj2.o"], exported.read_text()
    # A manifest that does not load is reported as a build reports it.
    manifest.write_text("builddir = out\nbuild x: nosuchrule\n")
    r = run(["--no-store", "-t", "history", "export", str(exported)], work, env)
    assert r.returncode == 1 and r.stderr.startswith("ninja: error: build.ninja:2: unknown build rule"), r.stderr
