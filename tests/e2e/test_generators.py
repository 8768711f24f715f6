"""Real generator flows end to end with headroom as the ninja: CMake (-G Ninja -DCMAKE_MAKE_PROGRAM=...) and Meson
(NINJA=...), brief ninja-compat.md section 6.

Each flow runs twice, step by step, in two sibling directories: once with the reference ninja 1.13.2 and once with
headroom, both reached through a `ninja` wrapper script that appends its cwd and argv to a log and then execs the
binary. After every step the two sides must agree on what the generators' users observe: exit codes, the set of build
steps that ran (`[i/n] description` lines), ninja's own `ninja: ...` lines, the files in the build tree, and the
invocations the generators made of "ninja" (paths normalised) -- including the nested ones (`-t restat`,
`-t recompact`, `-t cleandead`, `-t compdb`, `-t clean`, `-t targets`, `-n build.ninja`) that CMake and Meson run from
inside a build. CMake's and Meson's own chatter is not compared.

CMake: configure, build, no-op (`ninja: no work to do.`), a USES_TERMINAL custom command (console pool) with
BYPRODUCTS (restat: an unchanged byproduct rebuilds nothing downstream), the `help` target (`-t targets`), the `clean`
target (`-t clean`, then a full rebuild), a CMakeLists.txt edit that regenerates inside the build, and a
CONFIGURE_DEPENDS glob picking up a new source.

Meson (PyPI `meson`, pinned, in the venv scripts/install-test-deps.sh makes under ~/.cache/headroom-e2e, run here when
it is missing; set HEADROOM_E2E_MESON to a meson executable to use another): setup, compile_commands.json from `-t compdb`, compile,
`meson test` (its `ninja -n build.ninja` must print `ninja: no work to do.`, so meson does not rebuild), no-op, a
meson.build edit that regenerates via REGENERATE_BUILD in the console pool (nested `-t restat`/`-t cleandead`: the
removed target's output is deleted), `meson compile --clean` (`ninja clean` -> `-t clean`) and a rebuild.

Prerequisites (cmake, c++, the reference ninja, meson from PyPI) skip the test when missing, and fail it when CI is set.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

import common
import harness

TRY_COMPILE_RE = re.compile(r"TryCompile-[A-Za-z0-9]+")  # CMake's randomly named scratch projects
TRY_TARGET_RE = re.compile(r"cmTC_[0-9a-f]+")
STEP_RE = re.compile(r"^\[(\d+)/(\d+)\] (.*)$")
# Files that are not part of what the generator + ninja produce (headroom's memory history lives beside the logs).
IGNORED_FILES = set(harness.HEADROOM_FILES) | {"ninja.log", ".ninja_log", ".ninja_deps"}


def require(condition: bool, message: str):
    """A missing prerequisite fails in CI and skips elsewhere."""
    if condition:
        return
    if harness.in_ci():
        pytest.fail(message)
    pytest.skip(message)


def clean_env(**extra) -> dict:
    drop = ("NINJA_STATUS", "MAKEFLAGS", "MFLAGS", "MAX_JOBS", "HEADROOM_FLAGS", "NINJA", "CMAKE_GENERATOR",
            "CMAKE_MAKE_PROGRAM", "CMAKE_BUILD_PARALLEL_LEVEL", "CMAKE_EXPORT_COMPILE_COMMANDS", "MESONINTROSPECT")
    e = {k: v for k, v in os.environ.items() if k not in drop and not k.startswith("MESON")}
    e.update(TERM="dumb", LC_ALL="C")
    e.update(extra)
    return e


def bump(path: Path):
    """Make `path` (under <side root>/src) newer than every file of its side, by the filesystem's clock."""
    side_root = next(parent.parent for parent in path.parents if parent.name == "src")
    harness.bump_mtime(path, side_root)


def write(path: Path, text: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    bump(path)


@pytest.fixture(scope="module")
def binaries():
    sut = os.path.abspath(harness.headroom_binary())
    if harness.truthy(os.environ.get("HEADROOM_E2E_SELF")):  # self mode: validate this file with the reference
        sut = harness.reference_binary()
    if not os.access(sut, os.X_OK):
        pytest.fail("headroom binary not found at %s (set HEADROOM_BIN)" % sut)
    ref = harness.reference_binary()
    require(bool(ref) and os.access(ref, os.X_OK), "reference ninja 1.13.2 (pip package `ninja`) is missing")
    require(shutil.which("c++") is not None, "a C++ compiler (c++) is required")
    return {"ref": ref, "sut": sut}


class Side:
    """One side of a flow: a root directory, a logging `ninja` wrapper around one binary, and the step results."""

    def __init__(self, root: Path, name: str, binary: str):
        self.name = name
        self.root = root
        root.mkdir(parents=True)
        self.binary = binary
        self.argv_log = root / "ninja-argv.log"
        self.argv_log.write_text("")
        self.wrapper = root / "bin" / "ninja"
        self.wrapper.parent.mkdir()
        # One write per invocation (O_APPEND), so nested invocations cannot interleave inside a line.
        self.wrapper.write_text(
            "#!/bin/sh\n"
            'line="$PWD"\n'
            'for a in "$@"; do line="$line\t$a"; done\n'
            "printf '%%s\\n' \"$line\" >> '%s'\n"
            "exec '%s' \"$@\"\n" % (self.argv_log, binary)
        )
        self.wrapper.chmod(self.wrapper.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
        self._log_pos = 0

    def norm(self, text: str) -> str:
        text = TRY_COMPILE_RE.sub("TryCompile-*", text.replace(str(self.root), "$WS"))
        return TRY_TARGET_RE.sub("cmTC_*", text)

    def invocations(self) -> list:
        """The wrapper's log lines since the previous call: [cwd, arg...] with $WS for the side's root."""
        data = self.argv_log.read_text()
        new, self._log_pos = data[self._log_pos:], len(data)
        return [self.norm(line).split("\t") for line in new.splitlines()]

    def run(self, args, cwd: Path, env: dict, timeout=300) -> subprocess.CompletedProcess:
        return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=timeout)


def observe(side: Side, r: subprocess.CompletedProcess, tree: Path) -> dict:
    """What a generator user observes of one step, normalised so that the two sides can be compared."""
    out = r.stdout + "\n" + r.stderr
    steps, totals = [], set()
    ninja_lines = []
    for line in out.splitlines():
        m = STEP_RE.match(line)
        if m:
            steps.append(side.norm(m.group(3)))
            totals.add(int(m.group(2)))
        elif line.startswith("ninja: "):
            ninja_lines.append(side.norm(line))
    files = sorted(
        str(p.relative_to(tree))
        for p in tree.rglob("*")
        if p.is_file() and p.name not in IGNORED_FILES and "CMakeFiles/CMakeTmp" not in str(p)
    ) if tree.is_dir() else []
    return {
        "rc": r.returncode,
        "steps": sorted(steps),
        "totals": sorted(totals),
        "ninja_lines": sorted(ninja_lines),
        "invocations": side.invocations(),
        "files": files,
    }


def describe(r: subprocess.CompletedProcess) -> str:
    return "rc=%d\n--- stdout\n%s\n--- stderr\n%s" % (r.returncode, r.stdout[-6000:], r.stderr[-4000:])


class Flow:
    """Runs each step on the reference side, then on headroom's, and compares the observations."""

    def __init__(self, tmp_path: Path, binaries: dict):
        self.ref = Side(tmp_path / "ref", "ref", binaries["ref"])
        self.sut = Side(tmp_path / "sut", "sut", binaries["sut"])

    def sides(self):
        return (self.ref, self.sut)

    def step(self, label: str, fn, tree: str, expect_rc: int | None = 0) -> tuple:
        """fn(side) -> CompletedProcess. Returns (ref observation, sut observation, ref result, sut result)."""
        results, obs = [], []
        for side in self.sides():
            r = fn(side)
            results.append(r)
            obs.append(observe(side, r, side.root / tree))
            if expect_rc is not None and side.name == "ref":
                assert r.returncode == expect_rc, "[%s] reference run failed (broken test?)\n%s" % (label, describe(r))
        ref_o, sut_o = obs
        for key in ref_o:
            assert sut_o[key] == ref_o[key], "[%s] %s differ:\n ref: %r\n sut: %r\n--- ref run\n%s\n--- sut run\n%s" % (
                label, key, ref_o[key], sut_o[key], describe(results[0]), describe(results[1]))
        return ref_o, sut_o, results[0], results[1]


def args_of(invocations: list) -> list:
    """The argv (without cwd) of each logged invocation."""
    return [inv[1:] for inv in invocations]


def has_tool(invocations: list, tool: str) -> bool:
    return any("-t" in a and a[a.index("-t") + 1:a.index("-t") + 2] == [tool] for a in args_of(invocations))


# ---------------------------------------------------------------------------------------------------------------------
# CMake

CMAKE_FILES = {
    "CMakeLists.txt": """\
cmake_minimum_required(VERSION 3.16)
project(genflow CXX)
# A generator step in the console pool whose byproduct is only rewritten when it changes (restat).
add_custom_command(
  OUTPUT ${CMAKE_BINARY_DIR}/gen.stamp
  BYPRODUCTS ${CMAKE_BINARY_DIR}/gen/gen.h
  COMMAND ${CMAKE_COMMAND} -E echo "console-step-output"
  COMMAND ${CMAKE_COMMAND} -E copy_if_different ${CMAKE_SOURCE_DIR}/gen.h.in ${CMAKE_BINARY_DIR}/gen/gen.h
  COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/gen.stamp
  DEPENDS ${CMAKE_SOURCE_DIR}/gen.h.in ${CMAKE_SOURCE_DIR}/knob.txt
  COMMENT "Generating gen.h"
  USES_TERMINAL)
add_custom_target(gen ALL DEPENDS ${CMAKE_BINARY_DIR}/gen.stamp)
add_library(util STATIC util.cpp)
add_executable(app main.cpp)
target_include_directories(app PRIVATE ${CMAKE_BINARY_DIR}/gen)
target_link_libraries(app PRIVATE util)
add_dependencies(app gen)
""",
    "gen.h.in": "#pragma once\n#define GEN_VALUE 7\n",
    "knob.txt": "1\n",
    "util.h": "#pragma once\nint util_value();\n",
    "util.cpp": '#include "util.h"\nint util_value() { return 35; }\n',
    "main.cpp": '#include <cstdio>\n#include "gen.h"\n#include "util.h"\n'
                'int main() { std::printf("%d\\n", GEN_VALUE + util_value()); return 0; }\n',
}

CMAKE_EXTRA = """\
# Added later: a new target and a CONFIGURE_DEPENDS glob.
add_executable(extra extra.cpp)
file(GLOB PLUGIN_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/plugins/*.cpp)
add_library(plugins STATIC ${PLUGIN_SOURCES})
"""


def test_cmake_flow(tmp_path, binaries):
    cmake = shutil.which("cmake")
    require(cmake is not None, "cmake is required")
    flow = Flow(tmp_path, binaries)
    for side in flow.sides():
        for name, text in CMAKE_FILES.items():
            write(side.root / "src" / name, text)
    env = clean_env()

    def cm(*args):
        return lambda side: side.run([cmake, *args], cwd=side.root, env=env)

    def build(*extra):
        return lambda side: side.run([cmake, "--build", "build", *extra], cwd=side.root, env=env)

    # Configure: CMake checks `--version` and, after generating, runs `-t recompact` and `-t restat <outputs>`.
    ref_o, sut_o, _, _ = flow.step("configure", lambda s: s.run(
        [cmake, "-S", "src", "-B", "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
         "-DCMAKE_MAKE_PROGRAM=%s" % s.wrapper], cwd=s.root, env=env), "build")
    inv = args_of(sut_o["invocations"])
    assert ["--version"] in inv, inv
    assert has_tool(sut_o["invocations"], "recompact") and has_tool(sut_o["invocations"], "restat"), inv
    manifest = (flow.sut.root / "build" / "build.ninja").read_text()
    assert "pool = console" in manifest and "restat = 1" in manifest

    # Full build, then a no-op.
    ref_o, sut_o, _, r = flow.step("build", build(), "build")
    assert "Generating gen.h" in sut_o["steps"] and any("app" in s for s in sut_o["steps"]), r.stdout
    assert "console-step-output" in r.stdout  # the console-pool command's own output reaches the user
    app = flow.sut.root / "build" / "app"
    assert subprocess.run([str(app)], capture_output=True, text=True).stdout == "42\n"
    ref_o, sut_o, _, r = flow.step("no-op", build(), "build")
    assert r.stdout.startswith("ninja: no work to do."), r.stdout
    assert sut_o["steps"] == []

    # Restat: the custom command reruns, its byproduct is unchanged, nothing downstream rebuilds.
    for side in flow.sides():
        write(side.root / "src" / "knob.txt", "2\n")
    ref_o, sut_o, _, r = flow.step("restat byproduct unchanged", build(), "build")
    assert sut_o["steps"] == ["Generating gen.h"], r.stdout
    ref_o, sut_o, _, r = flow.step("no-op after restat", build(), "build")
    assert r.stdout.startswith("ninja: no work to do."), r.stdout
    # A changed byproduct rebuilds its dependents.
    for side in flow.sides():
        write(side.root / "src" / "gen.h.in", "#pragma once\n#define GEN_VALUE 8\n")
    ref_o, sut_o, _, r = flow.step("byproduct changed", build(), "build")
    assert "Generating gen.h" in sut_o["steps"] and any("main.cpp" in s for s in sut_o["steps"]), r.stdout
    assert not any("util.cpp" in s for s in sut_o["steps"]), r.stdout
    assert subprocess.run([str(app)], capture_output=True, text=True).stdout == "43\n"

    # help target: `<ninja> -t targets`, nested.
    ref_o, sut_o, ref_r, r = flow.step("help", build("--target", "help"), "build")
    assert has_tool(sut_o["invocations"], "targets"), sut_o["invocations"]
    ref_targets = sorted(l for l in flow.ref.norm(ref_r.stdout).splitlines() if ": " in l and not l.startswith("["))
    sut_targets = sorted(l for l in flow.sut.norm(r.stdout).splitlines() if ": " in l and not l.startswith("["))
    assert sut_targets == ref_targets, (ref_targets, sut_targets)
    assert "all: phony" in sut_targets and "clean: CLEAN" in sut_targets, sut_targets

    # clean target: `<ninja> -t clean` nested; outputs gone; the next build rebuilds them all.
    ref_o, sut_o, _, r = flow.step("clean", build("--target", "clean"), "build")
    assert has_tool(sut_o["invocations"], "clean"), sut_o["invocations"]
    assert not app.exists() and not (flow.sut.root / "build" / "gen" / "gen.h").exists()
    ref_o, sut_o, _, r = flow.step("rebuild after clean", build(), "build")
    assert "Generating gen.h" in sut_o["steps"] and any("util.cpp" in s for s in sut_o["steps"]), r.stdout
    assert subprocess.run([str(app)], capture_output=True, text=True).stdout == "43\n"

    # Edit CMakeLists.txt: the build regenerates itself (headroom runs CMake, which runs headroom nested) and then
    # builds the new targets.
    for side in flow.sides():
        write(side.root / "src" / "extra.cpp", "int main() { return 0; }\n")
        write(side.root / "src" / "plugins" / "a.cpp", "int plugin_a() { return 1; }\n")
        write(side.root / "src" / "CMakeLists.txt", CMAKE_FILES["CMakeLists.txt"] + CMAKE_EXTRA)
    ref_o, sut_o, _, r = flow.step("regenerate", build(), "build")
    assert "Re-running CMake..." in r.stdout, r.stdout
    assert has_tool(sut_o["invocations"], "restat"), sut_o["invocations"]
    assert any("extra.cpp" in s for s in sut_o["steps"]) and any("plugins/a.cpp" in s for s in sut_o["steps"])
    assert (flow.sut.root / "build" / "extra").is_file()
    # With a CONFIGURE_DEPENDS glob every build re-checks the globs (restat keeps build.ninja clean).
    ref_o, sut_o, _, r = flow.step("no-op with glob", build(), "build")
    assert "Re-running CMake..." not in r.stdout and not any(".cpp" in s for s in sut_o["steps"]), r.stdout

    # A new file matching the glob: regeneration, then exactly the new object and the library are built.
    for side in flow.sides():
        write(side.root / "src" / "plugins" / "b.cpp", "int plugin_b() { return 2; }\n")
    ref_o, sut_o, _, r = flow.step("glob picks up new source", build(), "build")
    assert "Re-running CMake..." in r.stdout, r.stdout
    assert [s for s in sut_o["steps"] if ".cpp" in s] == [s for s in sut_o["steps"] if "plugins/b.cpp" in s] != []
    assert (flow.sut.root / "build" / "CMakeFiles" / "plugins.dir" / "plugins" / "b.cpp.o").is_file()
    ref_o, sut_o, _, r = flow.step("final no-op", build(), "build")
    assert not any(".cpp" in s for s in sut_o["steps"]), r.stdout
    assert all(line[0] == "$WS/build" or line[0] == "$WS" for line in sut_o["invocations"])

    # The build logs of both sides record the same outputs.
    paths = {}
    for side in flow.sides():
        log = harness.parse_build_log((side.root / "build" / ".ninja_log").read_bytes())
        assert log["header"] == "# ninja log v7" and not log["bad"], log
        paths[side.name] = sorted({side.norm(p) for p, _, _ in log["entries"]})
    assert paths["sut"] == paths["ref"]


# ---------------------------------------------------------------------------------------------------------------------
# Meson

MESON_BUILD = """\
project('genflow', 'cpp', default_options : ['buildtype=release'])
util = static_library('util', 'util.cpp')
app = executable('app', 'main.cpp', link_with : util)
test('app-runs', app)
"""
MESON_OLD = "old = executable('oldtool', 'old.cpp')\ntest('old-runs', old)\n"
MESON_NEW = "new = executable('newtool', 'new.cpp')\ntest('new-runs', new)\n"
MESON_FILES = {
    "util.h": "#pragma once\nint util_value();\n",
    "util.cpp": '#include "util.h"\nint util_value() { return 0; }\n',
    "main.cpp": '#include "util.h"\nint main() { return util_value(); }\n',
    "old.cpp": "int main() { return 0; }\n",
    "new.cpp": "int main() { return 0; }\n",
}


def meson_executable() -> str | None:
    """$HEADROOM_E2E_MESON, else the pinned meson of scripts/install-test-deps.sh (run here when it is missing)."""
    env_meson = os.environ.get("HEADROOM_E2E_MESON")
    if env_meson:
        return env_meson if os.access(env_meson, os.X_OK) else None
    meson = common.test_deps_dir() / "meson-venv" / "bin" / "meson"
    if not os.access(meson, os.X_OK):
        common.install_test_deps("--no-torch")
    return str(meson) if os.access(meson, os.X_OK) else None


def test_meson_flow(tmp_path, binaries):
    meson = meson_executable()
    require(meson is not None, "meson could not be installed by scripts/install-test-deps.sh (or HEADROOM_E2E_MESON is wrong)")
    flow = Flow(tmp_path, binaries)
    for side in flow.sides():
        for name, text in MESON_FILES.items():
            write(side.root / "src" / name, text)
        write(side.root / "src" / "meson.build", MESON_BUILD + MESON_OLD)

    def mes(*args):
        # CC and CXX named: meson puts sccache (scripts/install-deps.sh installs it) in front of compilers it picks
        # itself, and sccache compiles outside the jobs (test_compile_server.py); this flow checks ninja's parity.
        return lambda side: side.run([meson, *args], cwd=side.root,
                                     env=clean_env(NINJA=str(side.wrapper), CC="cc", CXX="c++"))

    # setup: meson detects "ninja" through $NINJA (`--version`) and writes compile_commands.json with `-t compdb`.
    ref_o, sut_o, _, r = flow.step("setup", mes("setup", "build", "src"), "build")
    inv = args_of(sut_o["invocations"])
    assert ["--version"] in inv and has_tool(sut_o["invocations"], "compdb"), inv
    for side in flow.sides():
        db = json.loads((side.root / "build" / "compile_commands.json").read_text())
        entries = sorted((Path(e["file"]).name, side.norm(e["directory"]), e["output"]) for e in db)
        assert [e[0] for e in entries] == ["main.cpp", "old.cpp", "util.cpp"], db
        assert all(e[1] == "$WS/build" for e in entries), db
        assert all(("command" in e or "arguments" in e) for e in db)
        if side is flow.ref:
            ref_entries = entries
    assert entries == ref_entries
    # compile_commands.json's content (normalised) is the same as the reference's.
    dbs = [side.norm((side.root / "build" / "compile_commands.json").read_text()) for side in flow.sides()]
    assert dbs[1] == dbs[0]

    ref_o, sut_o, _, r = flow.step("compile", mes("compile", "-C", "build"), "build")
    assert any("main.cpp" in s for s in sut_o["steps"]) and any("oldtool" in s for s in sut_o["steps"]), r.stdout
    assert (flow.sut.root / "build" / "oldtool").is_file()

    # meson test: `ninja -n build.ninja` must report no work, so meson does not run a rebuild of build.ninja.
    ref_o, sut_o, _, r = flow.step("test", mes("test", "-C", "build"), "build")
    inv = args_of(sut_o["invocations"])
    assert ["-n", "build.ninja"] in inv and ["build.ninja"] not in inv, inv
    assert re.search(r"^Ok:\s+2\s*$", r.stdout, re.M), r.stdout

    ref_o, sut_o, _, r = flow.step("no-op", mes("compile", "-C", "build"), "build")
    assert "ninja: no work to do." in r.stdout and sut_o["steps"] == [], r.stdout

    # Reconfigure: replace a target in meson.build. The build regenerates (console pool) and meson runs
    # `-t restat` and `-t cleandead` nested inside the running build: the dropped target's binary is deleted.
    for side in flow.sides():
        write(side.root / "src" / "meson.build", MESON_BUILD + MESON_NEW)
    ref_o, sut_o, _, r = flow.step("regenerate", mes("compile", "-C", "build"), "build")
    assert any(s.startswith("Regenerating build files") for s in sut_o["steps"]), r.stdout
    assert has_tool(sut_o["invocations"], "restat") and has_tool(sut_o["invocations"], "cleandead"), \
        sut_o["invocations"]
    assert (flow.sut.root / "build" / "newtool").is_file()
    assert not (flow.sut.root / "build" / "oldtool").exists()
    db = json.loads((flow.sut.root / "build" / "compile_commands.json").read_text())
    assert sorted(Path(e["file"]).name for e in db) == ["main.cpp", "new.cpp", "util.cpp"], db

    # meson test after only touching meson.build: `-n build.ninja` sees the regeneration is due and meson
    # regenerates through `ninja build.ninja`.
    for side in flow.sides():
        bump(side.root / "src" / "meson.build")
    ref_o, sut_o, _, r = flow.step("test after touch", mes("test", "-C", "build"), "build")
    inv = args_of(sut_o["invocations"])
    assert ["-n", "build.ninja"] in inv and ["build.ninja"] in inv, inv
    assert re.search(r"^Ok:\s+2\s*$", r.stdout, re.M), r.stdout
    ref_o, sut_o, _, r = flow.step("no-op after test", mes("compile", "-C", "build"), "build")
    assert "ninja: no work to do." in r.stdout, r.stdout

    # meson compile --clean: `ninja clean`, which runs `ninja -t clean` nested.
    ref_o, sut_o, _, r = flow.step("clean", mes("compile", "-C", "build", "--clean"), "build")
    inv = args_of(sut_o["invocations"])
    assert ["clean"] in [a[-1:] for a in inv] and has_tool(sut_o["invocations"], "clean"), inv
    assert not (flow.sut.root / "build" / "app").exists() and not (flow.sut.root / "build" / "newtool").exists()
    ref_o, sut_o, _, r = flow.step("rebuild after clean", mes("compile", "-C", "build"), "build")
    assert any("util.cpp" in s for s in sut_o["steps"]), r.stdout
    assert (flow.sut.root / "build" / "app").is_file()

    # Direct `ninja -C build clean` through the same wrapper.
    ref_o, sut_o, _, r = flow.step("ninja clean", lambda s: s.run([s.wrapper, "-C", "build", "clean"], s.root,
                                                                  clean_env()), "build")
    assert not (flow.sut.root / "build" / "app").exists()
    assert all(inv[0] in ("$WS", "$WS/build") for inv in sut_o["invocations"])
