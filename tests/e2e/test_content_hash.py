"""--content-hash: a build dir restored onto a fresh checkout (every source with a new mtime, the same contents)
has nothing to rebuild, while every real change still rebuilds what ninja would; afterwards ninja 1.13.2 itself
finds nothing to do. A randomized run checks that no sequence of edits, touches, clones and restores of an old
build dir ever leaves an output different from a from-scratch build."""

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import harness

# A "compiler" that concatenates its source and the headers it names (#include NAME, one level) and writes a
# depfile listing them: outputs are a pure function of the inputs, so a from-scratch build is the oracle.
CC = """\
src=$1; out=$2; shift 2
echo "$out" >> cmds.log
hdrs=$(sed -n 's/^#include //p' "$src")
{ echo "flags: $*"; cat "$src"; for h in $hdrs; do cat "$h"; done; } > "$out.tmp" && mv "$out.tmp" "$out"
{ printf '%s: %s' "$out" "$src"; for h in $hdrs; do printf ' %s' "$h"; done; echo; } > "$out.d"
"""

MANIFEST = """\
cflags = -O2
rule cc
  command = ./cc.sh $in $out $cflags
  depfile = $out.d
  deps = gcc
rule gen
  command = echo $out >> cmds.log && sed 's/@V@/generated/' $in > $out
  generator = 1
rule link
  command = echo $out >> cmds.log && cat $in > $out
rule stamp
  command = echo $out >> cmds.log && cat $in > $out
  restat = 1
build gen.h: gen gen.h.in
build headers: phony gen.h api.h
build a.o: cc a.c | headers
build b.o: cc b.c || gen.h
build c.o: cc c.c || gen.h
build lib.a: link a.o b.o
build app: link lib.a c.o
build api.stamp: stamp api.h
build all: phony app api.stamp
default all
"""

SOURCES = {
    "a.c": "#include api.h\n#include gen.h\nint a;\n",
    "b.c": "#include gen.h\nint b;\n",
    "c.c": "#include util.h\nint c;\n",
    "api.h": "api v1\n",
    "util.h": "util v1\n",
    "gen.h.in": "header @V@\n",
}
OUTPUTS = ["gen.h", "a.o", "b.o", "c.o", "lib.a", "app", "api.stamp"]
BUILD_FILES = OUTPUTS + [".ninja_log", ".ninja_deps", ".headroom_hashes"]


def write_checkout(ws, sources=SOURCES, manifest=MANIFEST):
    """Writes the sources as a fresh clone would: every file new, newer than anything already there."""
    ws.write("build.ninja", manifest)
    ws.script("cc.sh", CC)
    for name, text in sources.items():
        ws.write(name, text)
    ws.touch("build.ninja", "cc.sh", *sources)


def save_build_dir(ws, dest: Path):
    """What a CI cache saves: the build outputs and logs with their mtimes."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in BUILD_FILES:
        if ws.exists(name):
            shutil.copy2(ws.path(name), dest / name)


def fresh_clone_with_build_dir(ws, saved: Path, sources=SOURCES, manifest=MANIFEST):
    """Empties the workspace, checks the sources out anew, then restores the cached build dir (old mtimes)."""
    for entry in ws.root.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for name in BUILD_FILES:
        if (saved / name).exists():
            shutil.copy2(saved / name, ws.path(name))
    write_checkout(ws, sources, manifest)


def ninja_finds_nothing_to_do(ws):
    r = ws.run("-n", "-d", "explain", tool="ref", record=False)
    assert r.rc == 0, r
    assert "ninja: no work to do." in r.stdout, r
    assert "explain" not in r.stderr, r


@pytest.fixture
def built(headroom, tmp_path):
    """A first full build with --content-hash, its build dir saved as a CI cache would."""
    ws = headroom
    write_checkout(ws)
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert r.rc == 0 and r.stderr == "", r
    assert sorted(r.cmds) == sorted(OUTPUTS), r
    saved = tmp_path / "cache"
    save_build_dir(ws, saved)
    return ws, saved


def test_fresh_clone_rebuilds_nothing_and_ninja_agrees(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved)
    r = ws.run("--content-hash", stdout="ignore")
    assert r.rc == 0 and r.stderr == "", r
    assert r.cmds == [], r
    ninja_finds_nothing_to_do(ws)
    # And headroom itself, without the option, agrees too.
    r = ws.run()
    assert r.rc == 0 and r.cmds == [] and r.stdout == "ninja: no work to do.\n", r


def test_without_the_option_a_fresh_clone_rebuilds_everything_as_ninja_does(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved)
    r = ws.run("-j1", stdout="ignore")
    # api.stamp is restat: rebuilt; gen.h, objects, lib and app all follow their new sources.
    assert sorted(r.cmds) == sorted(OUTPUTS), r
    fresh_clone_with_build_dir(ws, saved)
    r = ws.run("-j1", tool="ref", record=False, stdout="ignore")
    assert sorted(r.cmds) == sorted(OUTPUTS), r


def test_a_build_dir_restored_without_its_mtimes(built):
    """Outputs newer than their .ninja_deps records (copied without their mtimes): ninja distrusts the deps and
    rebuilds every compile; with the option, unchanged contents vouch for the records."""
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved)
    for name in OUTPUTS:
        shutil.copyfile(saved / name, ws.path(name))
    ws.touch(*OUTPUTS)
    r = ws.run("-n", "-j1", tool="ref", record=False)
    assert sorted(r.cmds) == [], r  # a dry run runs nothing; the status lines name what would run
    assert "c.o" in r.stdout, r
    r = ws.run("--content-hash", stdout="ignore")
    assert r.rc == 0 and r.stderr == "" and r.cmds == [], r
    ninja_finds_nothing_to_do(ws)


def test_headroom_flags_turn_it_on(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved)
    r = ws.run(env={"HEADROOM_FLAGS": "--content-hash"})
    assert r.rc == 0 and r.cmds == [] and r.stdout == "ninja: no work to do.\n", r


@pytest.mark.parametrize("name,text,marker", [
    ("c.c", "#include util.h\nint c2;\n", "int c2;"),  # a source
    ("util.h", "util v2\n", "util v2"),  # a header only the depfile names
], ids=["source", "depfile_header"])
def test_a_changed_input_rebuilds_what_depends_on_it(built, name, text, marker):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved, sources={**SOURCES, name: text})
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert r.rc == 0, r
    assert r.cmds == ["c.o", "app"], r
    assert marker in ws.read("app")
    ninja_finds_nothing_to_do(ws)


def test_a_changed_header_behind_a_phony_rebuilds(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved, sources={**SOURCES, "api.h": "api v2\n"})
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    # a.o reads api.h (depfile and the phony `headers`); the restat stamp runs and changes its output.
    assert sorted(r.cmds) == sorted(["a.o", "lib.a", "app", "api.stamp"]), r
    ninja_finds_nothing_to_do(ws)


def test_a_changed_generator_input_regenerates(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved, sources={**SOURCES, "gen.h.in": "header @V@ 2\n"})
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert r.cmds[0] == "gen.h" and sorted(r.cmds) == sorted(["gen.h", "a.o", "b.o", "lib.a", "app"]), r
    ninja_finds_nothing_to_do(ws)


def test_a_changed_command_rebuilds(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved, manifest=MANIFEST.replace("cflags = -O2", "cflags = -O3"))
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert sorted(r.cmds) == sorted(["a.o", "b.o", "c.o", "lib.a", "app"]), r
    assert "flags: -O3" in ws.read("app")
    ninja_finds_nothing_to_do(ws)


def test_a_missing_output_rebuilds(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved)
    ws.remove("b.o")
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert r.cmds == ["b.o", "lib.a", "app"], r
    ninja_finds_nothing_to_do(ws)


def test_an_output_changed_behind_the_builds_back_rebuilds(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved)
    ws.write("c.o", "tampered\n")
    ws.set_mtime("c.o", os.stat(saved / "c.o").st_mtime_ns)
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert "c.o" in r.cmds and "app" in r.cmds, r
    assert "tampered" not in ws.read("app")


def test_an_output_rewritten_after_its_deps_record_rebuilds(built):
    """An output newer than its .ninja_deps record but not than its log entry: ninja distrusts the deps and
    rebuilds; with the option the stale record may only be vouched for by unchanged contents."""
    ws, _ = built
    ws.write("c.o", "tampered\n")
    r = ws.run("-n", "-j1", tool="ref", record=False)
    assert "c.o" in r.stdout, r
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert "c.o" in r.cmds and "app" in r.cmds, r
    assert "tampered" not in ws.read("app")
    ninja_finds_nothing_to_do(ws)


def test_a_corrupt_hash_file_warns_and_starts_over(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved)
    text = ws.path(".headroom_hashes").read_bytes()
    ws.path(".headroom_hashes").write_bytes(text[: len(text) // 2])
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert r.rc == 0, r
    assert r.stderr.startswith("ninja: warning: .headroom_hashes: truncated; content hashes start over"), r
    assert sorted(r.cmds) == sorted(OUTPUTS), r
    # Rewritten whole: the next fresh clone is recognised again.
    save_build_dir(ws, saved)
    fresh_clone_with_build_dir(ws, saved)
    r = ws.run("--content-hash", stdout="ignore")
    assert r.rc == 0 and r.stderr == "" and r.cmds == [], r


def test_a_build_dir_made_without_the_option_is_adopted_when_clean(headroom, tmp_path):
    ws = headroom
    write_checkout(ws)
    r = ws.run("-j1", tool="ref", record=False, stdout="ignore")
    assert r.rc == 0, r
    r = ws.run("--content-hash")  # nothing to build; records what ninja holds clean
    assert r.cmds == [] and r.stdout == "ninja: no work to do.\n", r
    saved = tmp_path / "cache"
    save_build_dir(ws, saved)
    fresh_clone_with_build_dir(ws, saved)
    r = ws.run("--content-hash")
    assert r.cmds == [] and r.stdout == "ninja: no work to do.\n", r
    ninja_finds_nothing_to_do(ws)


def test_dry_run_changes_nothing(built):
    ws, saved = built
    fresh_clone_with_build_dir(ws, saved)
    before = {name: ws.mtime(name) for name in OUTPUTS}
    log_before = ws.path(".ninja_log").read_bytes()
    r = ws.run("--content-hash", "-n")
    assert r.rc == 0 and r.stdout == "ninja: no work to do.\n", r
    assert {name: ws.mtime(name) for name in OUTPUTS} == before
    assert ws.path(".ninja_log").read_bytes() == log_before


def test_help_documents_the_option(headroom):
    r = headroom.run("-h", record=False)
    assert "--content-hash" in r.stderr, r


# ---------------------------------------------------------------------------------------------------------------------
# Randomized: edits, touches, fresh clones, deleted outputs and restores of older cached build dirs, each followed by
# a --content-hash build whose every output must equal what a from-scratch ninja 1.13.2 build makes of the same sources.

def scratch_outputs(ws, tmp: Path, sources: dict, manifest: str) -> dict:
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    (tmp / "build.ninja").write_text(manifest)
    (tmp / "cc.sh").write_text("#!/bin/sh\n" + CC)
    os.chmod(tmp / "cc.sh", 0o755)
    for name, text in sources.items():
        (tmp / name).write_text(text)
    p = subprocess.run([ws.bins["ref"]], cwd=tmp, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p
    return {name: (tmp / name).read_text() for name in OUTPUTS}


@pytest.mark.parametrize("seed", range(10))
def test_random_edits_never_leave_a_stale_output(headroom, tmp_path, seed):
    rng = random.Random(seed)
    ws = headroom
    sources = dict(SOURCES)
    manifest = MANIFEST
    write_checkout(ws, sources, manifest)
    caches = []
    for step in range(12):
        op = rng.choice(["edit", "edit", "touch", "clone", "restore", "restore_new_mtimes", "delete", "command",
                         "revert"])
        if op == "edit":
            name = rng.choice(sorted(sources))
            if name.endswith(".c"):
                includes = [h for h in ("api.h", "util.h", "gen.h") if rng.random() < 0.5]
                sources[name] = "".join("#include %s\n" % h for h in includes) + "int %s%d;\n" % (name[0], step)
            else:
                sources[name] = sources[name].rstrip("\n") + " %d\n" % rng.randrange(3)
            ws.write(name, sources[name])
            ws.touch(name)
        elif op == "revert":
            name = rng.choice(sorted(sources))
            sources[name] = SOURCES[name]
            ws.write(name, sources[name])
            ws.touch(name)
        elif op == "touch":
            ws.touch(rng.choice(sorted(sources)))
        elif op == "clone":
            saved = tmp_path / ("clone%d" % step)
            save_build_dir(ws, saved)
            fresh_clone_with_build_dir(ws, saved, sources, manifest)
        elif op == "restore" and caches:
            fresh_clone_with_build_dir(ws, rng.choice(caches), sources, manifest)
        elif op == "restore_new_mtimes" and caches:
            cache = rng.choice(caches)
            restored = [name for name in BUILD_FILES if (cache / name).exists()]
            for name in restored:
                shutil.copyfile(cache / name, ws.path(name))
            ws.touch(*restored)
        elif op == "delete":
            name = rng.choice(OUTPUTS)
            if ws.exists(name):
                ws.remove(name)
        elif op == "command":
            manifest = MANIFEST.replace("-O2", rng.choice(["-O2", "-O1", "-Os"]))
            ws.write("build.ninja", manifest)
            ws.touch("build.ninja")
        r = ws.run("--content-hash", "-j2", stdout="ignore", record=False)
        assert r.rc == 0, (step, op, r)
        expected = scratch_outputs(ws, tmp_path / "scratch", sources, manifest)
        actual = {name: ws.read(name) for name in OUTPUTS}
        assert actual == expected, (seed, step, op)
        ninja_finds_nothing_to_do(ws)
        if rng.random() < 0.4:
            saved = tmp_path / ("cache%d" % step)
            save_build_dir(ws, saved)
            caches.append(saved)


# ---------------------------------------------------------------------------------------------------------------------
# dyndep: the inputs a dyndep file adds are hashed like any other.

DYNDEP_MANIFEST = """\
rule dd
  command = echo $out >> cmds.log && ./dd.sh $in $out
rule catall
  command = echo $out >> cmds.log && cat $in $$(cat d.list) > $out
build d.dd: dd d.list
build d.out: catall d.c || d.dd
  dyndep = d.dd
"""
DD = """\
{ echo 'ninja_dyndep_version = 1'; printf 'build d.out: dyndep |'; for f in $(cat "$1"); do printf ' %s' "$f"; done; echo; } > "$2"
"""
DYNDEP_SOURCES = {"d.c": "main\n", "d.list": "extra1.txt\n", "extra1.txt": "one\n", "extra2.txt": "two\n"}
DYNDEP_OUTPUTS = ["d.dd", "d.out"]


def write_dyndep_checkout(ws, sources):
    ws.write("build.ninja", DYNDEP_MANIFEST)
    ws.script("dd.sh", DD)
    for name, text in sources.items():
        ws.write(name, text)
    ws.touch("build.ninja", "dd.sh", *sources)


def dyndep_clone(ws, saved, sources):
    for entry in ws.root.iterdir():
        entry.unlink()
    for name in DYNDEP_OUTPUTS + [".ninja_log", ".ninja_deps", ".headroom_hashes"]:
        if (saved / name).exists():
            shutil.copy2(saved / name, ws.path(name))
    write_dyndep_checkout(ws, sources)


@pytest.mark.parametrize("change,expected", [
    ({}, []),
    ({"extra1.txt": "one changed\n"}, ["d.out"]),
    ({"d.list": "extra2.txt\n"}, ["d.dd", "d.out"]),
])
def test_dyndep_discovered_inputs(headroom, tmp_path, change, expected):
    ws = headroom
    write_dyndep_checkout(ws, DYNDEP_SOURCES)
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert r.rc == 0 and r.cmds == ["d.dd", "d.out"], r
    saved = tmp_path / "cache"
    saved.mkdir()
    for name in DYNDEP_OUTPUTS + [".ninja_log", ".headroom_hashes"]:
        shutil.copy2(ws.path(name), saved / name)
    sources = {**DYNDEP_SOURCES, **change}
    dyndep_clone(ws, saved, sources)
    r = ws.run("--content-hash", "-j1", stdout="ignore")
    assert r.rc == 0 and r.cmds == expected, r
    listed = sources["d.list"].strip()
    assert ws.read("d.out") == sources["d.c"] + sources[listed]
    ninja_finds_nothing_to_do(ws)
