"""End to end with CMake: configure a small C++ project with -G Ninja -DCMAKE_MAKE_PROGRAM=<binary under test>,
build, touch headers and check exactly their dependents rebuild, no-op, regeneration after a CMakeLists.txt edit.

Runs differentially like the rest of the suite (the reference ninja's run is compared with headroom's)."""

import re
import shutil

import pytest

from harness import scenario

pytestmark = pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("c++") is None,
                                reason="cmake and a C++ compiler are required")

FILES = {
    "src/CMakeLists.txt": """\
cmake_minimum_required(VERSION 3.16)
project(demo CXX)
add_library(util STATIC util.cpp)
target_include_directories(util PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
add_executable(app main.cpp)
target_link_libraries(app PRIVATE util)
add_executable(other other.cpp)
""",
    "src/include/util.h": "#pragma once\nint util_value();\n",
    "src/config.h": "#pragma once\n#define GREETING \"hello\"\n",
    "src/util.cpp": "#include \"util.h\"\nint util_value() { return 42; }\n",
    "src/main.cpp": "#include <cstdio>\n#include \"util.h\"\n#include \"config.h\"\n"
                    "int main() { std::printf(\"%s %d\\n\", GREETING, util_value()); return 0; }\n",
    "src/other.cpp": "#include <cstdio>\nint main() { std::puts(\"other\"); return 0; }\n",
}

OBJ_RE = re.compile(r"-o (\S+)|\bar \w+ (\S+)")


def outputs_of(stdout: str) -> list:
    """The -o targets of the commands in a -v build log, in order."""
    outs = []
    for line in stdout.splitlines():
        if line.startswith("[") and "] " in line:
            m = OBJ_RE.search(line)
            outs.append((m.group(1) or m.group(2)) if m else line.split("] ", 1)[1])
    return outs


def ninja_lines(stdout: str) -> list:
    return [ln for ln in stdout.splitlines() if ln.startswith("[") or ln.startswith("ninja:")]


@scenario
def test_cmake_project(ws):
    for rel, text in FILES.items():
        ws.write(rel, text)
    ws.sh(["cmake", "-S", "src", "-B", "build", "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Debug",
           "-DCMAKE_MAKE_PROGRAM=" + ws.bins["sut"]])

    r = ws.run("-C", "build", "-v", "-j1", record=False)
    assert r.rc == 0, r
    first = outputs_of(r.stdout)
    ws.record("full build", (r.rc, sorted(first)))
    assert sorted(first) == sorted([
        "CMakeFiles/util.dir/util.cpp.o", "libutil.a", "CMakeFiles/app.dir/main.cpp.o", "app",
        "CMakeFiles/other.dir/other.cpp.o", "other"]), first
    assert ws.sh(["build/app"]).stdout == "hello 42\n"

    r = ws.run("-C", "build", "-j1")
    assert r.stdout == "ninja: Entering directory `build'\nninja: no work to do.\n"

    ws.touch("src/include/util.h")
    r = ws.run("-C", "build", "-v", "-j1", record=False)
    rebuilt = outputs_of(r.stdout)
    ws.record("after util.h", (r.rc, rebuilt))
    assert sorted(rebuilt) == sorted(["CMakeFiles/util.dir/util.cpp.o", "CMakeFiles/app.dir/main.cpp.o",
                                      "libutil.a", "app"]), rebuilt

    ws.touch("src/config.h")
    r = ws.run("-C", "build", "-v", "-j1", record=False)
    rebuilt = outputs_of(r.stdout)
    ws.record("after config.h", (r.rc, rebuilt))
    assert rebuilt == ["CMakeFiles/app.dir/main.cpp.o", "app"], rebuilt

    r = ws.run("-C", "build", "-j1")
    assert r.stdout.endswith("ninja: no work to do.\n")

    # cmake --build drives the make program itself
    p = ws.sh(["cmake", "--build", "build"])
    ws.record("cmake --build no-op", ninja_lines(p.stdout))
    assert "ninja: no work to do." in p.stdout

    # editing CMakeLists.txt re-runs cmake through the generator edge, reloads build.ninja, builds the new target
    ws.write("src/CMakeLists.txt", FILES["src/CMakeLists.txt"] + "add_executable(third other.cpp)\n")
    ws.touch("src/CMakeLists.txt")
    r = ws.run("-C", "build", "-j1", record=False)
    assert r.rc == 0, r
    ws.record("regen", [ln for ln in ninja_lines(r.stdout)])
    assert "Re-running CMake" in r.stdout and ws.exists("build/third")
    r = ws.run("-C", "build", "-j1")
    assert r.stdout.endswith("ninja: no work to do.\n")

    # deps are in .ninja_deps; the interop direction: the reference ninja agrees nothing is left to do
    r = ws.run("-C", "build", "-j1", tool="ref")
    assert r.stdout.endswith("ninja: no work to do.\n")
