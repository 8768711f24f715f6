"""headroom over a real distcc farm on 127.0.0.1 (docs/scale-out.md): the test starts its own distccd daemons on free
loopback ports and stops them. C++ translation units of ~300 MiB each are compiled through `distcc g++` inside a
1.5 GiB memory box (tests/e2e/memory_box.py; the daemons run outside it, as a farm's machines would):

* farm up: every compile runs on the daemon (its log records each), several at once, and nothing is OOM-killed
  though 12 such compiles could never share the box locally;
* farm down: distcc falls back to local compiles. distcc caps its own local fallbacks (--localslots, 2 by default),
  which hides the storm on a small machine, so the host list raises that cap to 12 as a many-core client would have:
  ninja 1.13.2 at -j12 is OOM-killed in the box where headroom finishes with 0 kernel OOM kills.

Skips with a loud reason where distcc or the box is unavailable; fails instead when CI=1."""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402
from memory_box import MemoryBox, box_factory, require_box  # noqa: E402,F401 (box_factory is a fixture)

MiB = 1024 * 1024
TU_COUNT = 12
TU_ELEMENTS = 1_200_000  # one initialiser of this many distinct longs: g++ -O0 peaks near 300 MiB, ~4 s
BOX_BYTES = 1536 * MiB


def require_distcc():
    missing = [tool for tool in ("distcc", "distccd", "g++") if shutil.which(tool) is None]
    if missing:
        reason = "distcc e2e needs %s on PATH (scripts/install-deps.sh installs distcc)" % ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(reason + " (required in CI)")
        pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Distccd:
    """One distccd on 127.0.0.1, accepting loopback clients only; its log names every compile it ran."""

    def __init__(self, jobs: int = 4):
        self.port = free_port()
        # distccd drops root for its own user, so its log directory must be writable by anyone.
        self.dir = Path(tempfile.mkdtemp(prefix="hr-distccd-"))
        self.dir.chmod(0o777)
        self.log = self.dir / "log"
        self.pid_file = self.dir / "pid"
        subprocess.run(["distccd", "--daemon", "--allow", "127.0.0.1", "--listen", "127.0.0.1",
                        "--port", str(self.port), "--jobs", str(jobs), "--log-level", "info",
                        "--log-file", str(self.log), "--pid-file", str(self.pid_file)], check=True)
        deadline = time.monotonic() + 10
        while not (self.pid_file.exists() and port_open(self.port)):
            if time.monotonic() > deadline:
                self.stop()
                pytest.fail("distccd did not start listening on 127.0.0.1:%d: %s" % (self.port, self.log_text()))
            time.sleep(0.05)  # polling a daemon's readiness, not synchronising the code under test

    def log_text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def compiled(self) -> list[str]:
        """Sources the daemon compiled successfully (its COMPILE_OK job summaries)."""
        return [line.rsplit(" ", 1)[-1] for line in self.log_text().splitlines() if "COMPILE_OK" in line]

    def stop(self):
        if self.pid_file.exists():
            try:
                os.kill(int(self.pid_file.read_text()), 15)  # the listener ends its preforked children
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 10
        while port_open(self.port) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not port_open(self.port), "distccd on port %d did not stop" % self.port

    def remove(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def farm():
    require_distcc()
    daemons = []

    def start(jobs: int = 4) -> Distccd:
        daemon = Distccd(jobs)
        daemons.append(daemon)
        return daemon

    yield start
    for daemon in daemons:
        daemon.remove()


def write_heavy_sources(directory: Path, count: int):
    """`count` heavy C++ sources tuNN.cc (~300 MiB each to compile at -O0) and a trivial main.cc."""
    directory.mkdir(parents=True, exist_ok=True)
    for i in range(count):
        with open(directory / ("tu%02d.cc" % i), "w") as f:
            f.write("extern const long table%d[] = {\n" % i)
            for start in range(0, TU_ELEMENTS, 20):
                f.write(",".join(str((start + j) * 7919 + i) for j in range(20)) + ",\n")
            f.write("};\n")
    (directory / "main.cc").write_text("int main() { return 0; }\n")


def write_project(directory: Path):
    """TU_COUNT heavy C++ sources compiled through distcc, and one (local) link of them all."""
    write_heavy_sources(directory, TU_COUNT)
    lines = ["rule cxx", "  command = distcc g++ -O0 -c $in -o $out", "  description = CXX $out",
             "rule link", "  command = g++ $in -o $out", "  description = LINK $out"]
    objects = []
    for name in ["main"] + ["tu%02d" % i for i in range(TU_COUNT)]:
        lines.append("build %s.o: cxx %s.cc" % (name, name))
        objects.append(name + ".o")
    lines.append("build app: link " + " ".join(objects))
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")


def distcc_env(hosts: str, state_dir: Path) -> dict:
    state_dir.mkdir(parents=True, exist_ok=True)  # distcc does not make DISTCC_DIR itself
    env = dict(os.environ)
    env["DISTCC_HOSTS"] = hosts
    env["DISTCC_DIR"] = str(state_dir)  # distcc's locks and host backoff state: the test's own
    env.pop("CCACHE_PREFIX", None)
    return env


def max_concurrent_compiles(trace_path: Path) -> int:
    """The most .o jobs running at once in headroom's --trace."""
    events = [e for e in json.loads(trace_path.read_text())["traceEvents"]
              if e.get("ph") == "X" and e["name"].endswith(".o")]
    edges = sorted([(e["ts"], 1) for e in events] + [(e["ts"] + e["dur"], -1) for e in events])
    running = best = 0
    for _, step in edges:
        running += step
        best = max(best, running)
    return best


def test_farm_up_every_compile_runs_remote_and_several_at_once(tmp_path, farm, box_factory):
    daemon = farm(jobs=4)
    project = tmp_path / "project"
    write_project(project)
    box = box_factory(BOX_BYTES)
    box.require_complete_kill_count()
    env = distcc_env("127.0.0.1:%d/4" % daemon.port, tmp_path / "distcc")
    env["DISTCC_FALLBACK"] = "0"  # a compile the farm does not take fails instead of quietly running here
    result = box.run([harness.headroom_binary(), "-j12", "--trace=trace.json"], cwd=project, env=env, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    assert box.oom_kills() == 0
    compiled = daemon.compiled()
    assert sorted(compiled) == sorted(["main.cc"] + ["tu%02d.cc" % i for i in range(TU_COUNT)]), daemon.log_text()
    # 12 x ~300 MiB could not run at once in a 1.5 GiB box; remote, headroom runs several at once (the daemon's 4
    # slots and distcc's client-side host limit are the bound).
    assert max_concurrent_compiles(project / "trace.json") >= 3
    # The remote pool is the host list's 4 slots; the summary says where jobs ran.
    assert max_concurrent_compiles(project / "trace.json") <= 4
    print("farm up: " + next(line for line in result.stdout.splitlines() if "remote:" in line))
    assert "remote: 13 jobs ran on the farm (at most 4 at once), 0 fell back to a local compile, 1 local" \
        in result.stdout, result.stdout
    # The trace says where each job ran.
    ran = {e["name"]: e["args"].get("ran") for e in json.loads((project / "trace.json").read_text())["traceEvents"]
           if e.get("ph") == "X"}
    assert ran == dict({"app": "local", "main.o": "remote (distcc)"},
                       **{"tu%02d.o" % i: "remote (distcc)" for i in range(TU_COUNT)}), ran


def test_farm_down_fallbacks_are_memory_admitted_where_ninja_is_oom_killed(tmp_path, farm, box_factory):
    daemon = farm(jobs=4)
    port = daemon.port
    daemon.stop()  # the farm is down: every distcc job falls back to a local compile
    hosts = "--localslots=%d 127.0.0.1:%d/4" % (TU_COUNT, port)  # a many-core client's fallback cap

    ninja_dir = tmp_path / "ninja"
    write_project(ninja_dir)
    ninja_box = box_factory(BOX_BYTES)
    ninja = ninja_box.run([harness.reference_binary(), "-j12"], cwd=ninja_dir,
                          env=distcc_env(hosts, tmp_path / "distcc-ninja"), timeout=600)
    ninja_kills = ninja_box.oom_kills()
    assert ninja_kills > 0, "ninja -j12 was expected to be OOM-killed in the box:\n" + ninja.stdout
    assert ninja.returncode != 0

    ours_dir = tmp_path / "headroom"
    write_project(ours_dir)
    our_box = box_factory(BOX_BYTES)
    our_box.require_complete_kill_count()
    ours = our_box.run([harness.headroom_binary(), "-j12", "--trace=trace.json"], cwd=ours_dir,
                       env=distcc_env(hosts, tmp_path / "distcc-ours"), timeout=600)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert our_box.oom_kills() == 0, "headroom had kernel OOM kills where ninja had %d" % ninja_kills
    assert (ours_dir / "app").exists()
    # headroom saw the launcher compile here: a warning, and the summary counts the fallbacks.
    assert "job ran on this machine instead of the farm (its launcher fell back)" in ours.stderr, ours.stderr
    # Nothing ran on the farm: each job fell back (seen by its memory or distcc's own warning) or, once the farm
    # was suspect, was counted local from the start.
    fell_back = re.search(r"remote: 0 jobs ran on the farm .*?, (\d+) fell back to a local compile, (\d+) local",
                          ours.stdout)
    assert fell_back and int(fell_back.group(1)) >= 1, ours.stdout
    # The trace marks each job seen falling back.
    markers = [e for e in json.loads((ours_dir / "trace.json").read_text())["traceEvents"]
               if e.get("ph") == "i" and e["args"].get("kind") == "remote-fallback"]
    assert len(markers) == int(fell_back.group(1)), markers
    print("farm down, -j12 in a 1.5 GiB box: ninja 1.13.2 %d OOM kills, headroom 0; %s"
          % (ninja_kills, fell_back.group(0)))


def build_stopping_the_farm_after_first_compile(box: MemoryBox, argv: list[str], project: Path, daemon: Distccd,
                                                env: dict) -> tuple[subprocess.CompletedProcess, int]:
    """Runs argv in the box and stops the daemon once it has compiled its first source (the farm goes away
    mid-build). Returns the result and how many sources the daemon had compiled by then."""
    process = box.popen(argv, cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not daemon.compiled() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)  # polling the daemon's log for its first completion, not synchronising the code under test
    remote_before_stop = len(daemon.compiled())
    daemon.stop()
    try:
        stdout, stderr = process.communicate(timeout=600)
    finally:
        if process.poll() is None:
            process.kill()
    return subprocess.CompletedProcess(argv, process.returncode, stdout, stderr), remote_before_stop


def test_farm_stopped_mid_build_fallbacks_are_memory_admitted_where_ninja_is_oom_killed(tmp_path, farm, box_factory):
    """-j32 over a 4-slot farm whose daemon is stopped after its first compile: distcc falls back to local compiles
    (--localslots=32, a many-core client), which ninja starts all at once and headroom admits by memory."""
    ninja_daemon = farm(jobs=4)
    ninja_dir = tmp_path / "ninja"
    write_project(ninja_dir)
    ninja_box = box_factory(BOX_BYTES)
    ninja, ninja_remote = build_stopping_the_farm_after_first_compile(
        ninja_box, [harness.reference_binary(), "-j32"], ninja_dir, ninja_daemon,
        distcc_env("--localslots=32 127.0.0.1:%d/4" % ninja_daemon.port, tmp_path / "distcc-ninja"))
    ninja_kills = ninja_box.oom_kills()
    assert ninja_remote >= 1
    assert ninja_kills > 0, "ninja -j32 was expected to be OOM-killed in the box:\n" + ninja.stdout
    assert ninja.returncode != 0

    our_daemon = farm(jobs=4)
    ours_dir = tmp_path / "headroom"
    write_project(ours_dir)
    our_box = box_factory(BOX_BYTES)
    our_box.require_complete_kill_count()
    ours, our_remote = build_stopping_the_farm_after_first_compile(
        our_box, [harness.headroom_binary(), "-j32", "--trace=trace.json"], ours_dir, our_daemon,
        distcc_env("--localslots=32 127.0.0.1:%d/4" % our_daemon.port, tmp_path / "distcc-ours"))
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert our_box.oom_kills() == 0, "headroom had kernel OOM kills where ninja had %d" % ninja_kills
    assert (ours_dir / "app").exists()
    assert our_remote >= 1
    assert "job ran on this machine instead of the farm (its launcher fell back)" in ours.stderr, ours.stderr
    summary = re.search(r"remote: (\d+) jobs? ran on the farm .*?, (\d+) fell back to a local compile, (\d+) local",
                        ours.stdout)
    assert summary and int(summary.group(1)) >= 1 and int(summary.group(2)) >= 1, ours.stdout
    print("farm stopped mid-build, -j32 in a 1.5 GiB box: ninja 1.13.2 %d OOM kills, headroom 0; %s"
          % (ninja_kills, summary.group(0)))


def write_light_project(directory: Path, count: int):
    """`count` tiny C++ sources through distcc, linked locally: fast, for what does not need memory pressure."""
    directory.mkdir(parents=True, exist_ok=True)
    lines = ["rule cxx", "  command = distcc g++ -O0 -c $in -o $out", "rule link", "  command = g++ $in -o $out"]
    for i in range(count):
        (directory / ("s%d.cc" % i)).write_text("int f%d() { return %d; }\n" % (i, i))
        lines.append("build s%d.o: cxx s%d.cc" % (i, i))
    (directory / "main.cc").write_text("int main() { return 0; }\n")
    lines.append("build main.o: cxx main.cc")
    lines.append("build app: link main.o " + " ".join("s%d.o" % i for i in range(count)))
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")


def test_farm_failure_exits_are_retried_locally_unless_strict_remote(tmp_path, farm):
    """With DISTCC_FALLBACK=0 distcc does not compile locally when the farm is gone: it exits with its code for a
    network failure (distcc(1) EXIT CODES). headroom retries such a job once on this machine (DISTCC_HOSTS=localhost)
    and says so; ninja 1.13.2 fails the build, and so does headroom --strict-remote."""
    daemon = farm(jobs=2)
    port = daemon.port
    daemon.stop()
    env = distcc_env("127.0.0.1:%d/2" % port, tmp_path / "distcc")  # fewer farm slots than compiles
    env["DISTCC_FALLBACK"] = "0"

    ninja_dir = tmp_path / "ninja"
    write_light_project(ninja_dir, 6)
    ninja = subprocess.run([harness.reference_binary(), "-j8"], cwd=ninja_dir, env=env, capture_output=True,
                           text=True, timeout=120)
    assert ninja.returncode != 0, ninja.stdout

    ours_dir = tmp_path / "headroom"
    write_light_project(ours_dir, 6)
    ours = subprocess.run([harness.headroom_binary(), "-j8", "--trace=trace.json"], cwd=ours_dir, env=env,
                          capture_output=True, text=True, timeout=120)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    assert (ours_dir / "app").exists()
    assert "instead of the farm" in ours.stderr, ours.stderr
    details = [e["args"]["detail"] for e in json.loads((ours_dir / "trace.json").read_text())["traceEvents"]
               if e.get("ph") == "i" and e["args"].get("kind") == "remote-fallback"]
    assert details and all("(a farm failure); retried here" in d for d in details), details
    # Once the farm is suspect, the other compiles start as local jobs; each that still tried the farm was retried.
    assert re.search(r"remote: 0 jobs ran on the farm .*?, [1-9]\d* fell back to a local compile", ours.stdout), \
        ours.stdout

    strict_dir = tmp_path / "strict"
    write_light_project(strict_dir, 6)
    strict = subprocess.run([harness.headroom_binary(), "-j8", "--strict-remote"], cwd=strict_dir, env=env,
                            capture_output=True, text=True, timeout=120)
    assert strict.returncode != 0, strict.stdout
    assert "FAILED: " in strict.stdout, strict.stdout


CMAKE_TU_COUNT = 8  # 8 x ~300 MiB could not be compiled at once in the 1.5 GiB box


def require_cmake():
    if shutil.which("cmake") is None:
        reason = "the CMake distcc e2e needs cmake on PATH"
        if os.environ.get("CI"):
            pytest.fail(reason + " (required in CI)")
        pytest.skip(reason)


def write_cmake_project(directory: Path, count: int):
    """A CMake project: one executable from `count` heavy TUs and main.cc (CMake's own rules, depfiles and link)."""
    write_heavy_sources(directory, count)
    sources = " ".join(["main.cc"] + ["tu%02d.cc" % i for i in range(count)])
    (directory / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.25)\nproject(heavy CXX)\nadd_executable(app %s)\n" % sources)


def summary_line(stdout: str) -> re.Match | None:
    return re.search(r"remote: (\d+) jobs? ran on the farm \(at most (\d+) at once\), (\d+) fell back to a local "
                     r"compile, (\d+) local", stdout)


def test_cmake_project_over_two_daemons_at_j32_remote_slots_bound_compiles_link_local(tmp_path, farm, box_factory):
    """The issue's scenario: a CMake project (Ninja generator, CMAKE_MAKE_PROGRAM=headroom,
    CMAKE_CXX_COMPILER_LAUNCHER=distcc) built with `cmake --build . -- -j32` in a 1.5 GiB box over two distccd
    daemons of 2 slots each: the pool of 4 bounds the compiles, both daemons take some, the link runs here."""
    require_cmake()
    first, second = farm(jobs=2), farm(jobs=2)
    env = distcc_env("127.0.0.1:%d/2 127.0.0.1:%d/2" % (first.port, second.port), tmp_path / "distcc")
    env["DISTCC_FALLBACK"] = "0"  # a compile the farm does not take fails instead of quietly running here
    source, build = tmp_path / "source", tmp_path / "build"
    write_cmake_project(source, CMAKE_TU_COUNT)
    configure = subprocess.run(
        ["cmake", "-S", str(source), "-B", str(build), "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Debug",
         "-DCMAKE_MAKE_PROGRAM=" + harness.headroom_binary(), "-DCMAKE_CXX_COMPILER_LAUNCHER=distcc"],
        env=env, capture_output=True, text=True, timeout=120)
    assert configure.returncode == 0, configure.stdout + configure.stderr

    box = box_factory(BOX_BYTES)
    box.require_complete_kill_count()
    started = time.monotonic()
    result = box.run(["cmake", "--build", ".", "--", "-j32", "--trace=trace.json"], cwd=build, env=env, timeout=600)
    build_seconds = time.monotonic() - started
    assert result.returncode == 0, result.stdout + result.stderr
    assert box.oom_kills() == 0  # the box and every cgroup below it (headroom's job cgroups)
    assert (build / "app").exists()

    # Every TU (and main.cc) was compiled by one of the two daemons, and both took some.
    sources = sorted(["main.cc"] + ["tu%02d.cc" % i for i in range(CMAKE_TU_COUNT)])
    first_compiled = [Path(p).name for p in first.compiled()]
    second_compiled = [Path(p).name for p in second.compiled()]
    assert sorted(first_compiled + second_compiled) == sources, first.log_text() + second.log_text()
    assert first_compiled and second_compiled, (first_compiled, second_compiled)

    # The remote pool (2 + 2 slots) bounds the compiles at once, though -j32 would allow 9.
    trace = build / "trace.json"
    most_at_once = max_concurrent_compiles(trace)
    assert 3 <= most_at_once <= 4, most_at_once
    summary = summary_line(result.stdout)
    assert summary, result.stdout
    remote, summary_most, fell_back, local = (int(summary.group(i)) for i in range(1, 5))
    assert (remote, fell_back, local) == (CMAKE_TU_COUNT + 1, 0, 1), summary.group(0)
    assert summary_most <= 4, summary.group(0)

    # Every compile ran on the farm; the link ran here, memory-admitted like any local job: charged an estimate
    # before it started and measured in its own job cgroup inside the box.
    jobs = {e["name"]: e["args"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"}
    ran = {name: args.get("ran") for name, args in jobs.items()}
    assert [name for name in jobs if not name.endswith(".o")] == ["app"], ran
    assert all(mode == "remote (distcc)" for name, mode in ran.items() if name.endswith(".o")), ran
    link = jobs["app"]
    assert link["ran"] == "local" and link["estimate bytes"] > 0 and link["peak method"] == "cgroup", link
    print("cmake -j32 over 2 daemons x 2 slots, 1.5 GiB box: %s; daemons compiled %d + %d; %d compiles at most at "
          "once in the trace; link local, estimate %s, peak %s; 0 OOM kills; build %.1f s"
          % (summary.group(0), len(first_compiled), len(second_compiled), most_at_once, link["estimate"],
             link["peak"], build_seconds))
