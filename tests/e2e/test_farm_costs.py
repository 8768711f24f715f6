"""What a configured compile farm costs a build that does not use it, and how many local jobs run beside one
(docs/scale-out.md): sccache's scheduler is asked its size only when a job would go to the farm, and local jobs
are held to the CPUs this build may use (its affinity and cgroup quota) + 2, not the machine's."""

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

import harness

STATUS = '{"SchedulerStatus":["http://127.0.0.1:1/",{"num_servers":1,"num_cpus":4,"in_progress":0}]}'


@pytest.fixture
def binary(e2e_config):
    if e2e_config.self_mode:
        pytest.skip("headroom-only behaviour: nothing to check in self mode")
    if not os.access(e2e_config.sut, os.X_OK):
        pytest.fail("headroom binary %r does not exist (set HEADROOM_BIN)" % e2e_config.sut)
    return os.path.abspath(e2e_config.sut)


def fake_sccache(tmp_path: Path) -> dict:
    """An sccache on PATH that logs each --dist-status it answers and otherwise makes the -o file; a config that
    names a dist scheduler."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "sccache"
    script.write_text("#!/bin/sh\n"
                      "if [ \"$1\" = --dist-status ]; then echo asked >> \"$SCCACHE_ASKED\"; echo '%s'; exit 0; fi\n"
                      "while [ $# -gt 0 ]; do [ \"$1\" = -o ] && touch \"$2\"; shift; done\n" % STATUS)
    script.chmod(0o755)
    conf = tmp_path / "sccache.conf"
    conf.write_text('[dist]\nscheduler_url = "http://127.0.0.1:1"\n')
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    # An empty distcc host list, so neither ~/.distcc/hosts nor /etc/distcc/hosts sizes the farm: sccache must.
    env.update(PATH="%s:%s" % (bin_dir, env.get("PATH", "/usr/bin:/bin")), SCCACHE_CONF=str(conf),
               SCCACHE_ASKED=str(tmp_path / "asked.log"), HOME=str(tmp_path), DISTCC_HOSTS="",
               HEADROOM_STORE="off", TERM="dumb")
    return env


def test_sccache_is_asked_its_farm_size_only_when_a_job_would_go_there(tmp_path, binary):
    env = fake_sccache(tmp_path)
    work = tmp_path / "w"
    work.mkdir()
    (work / "build.ninja").write_text("rule t\n  command = touch $out\nbuild a: t\nbuild b: t\n")
    r = subprocess.run([binary], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert not (tmp_path / "asked.log").exists(), "a build of local jobs alone ran sccache --dist-status"

    (work / "a.c").write_text("int a;\n")
    (work / "build.ninja").write_text("rule cc\n  command = sccache gcc -c $in -o $out\nbuild a.o: cc a.c\n"
                                      "rule t\n  command = touch $out\nbuild b2: t\n")
    r = subprocess.run([binary], cwd=work, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "asked.log").read_text() == "asked\n"
    assert (work / "a.o").exists()


def max_concurrent(trace: Path, prefix: str) -> int:
    events = [e for e in json.loads(trace.read_text())["traceEvents"]
              if e.get("ph") == "X" and e["name"].startswith(prefix)]
    steps = sorted([(e["ts"], 1) for e in events] + [(e["ts"] + e["dur"], -1) for e in events])
    running = best = 0
    for _, step in steps:
        running += step
        best = max(best, running)
    return best


def test_local_jobs_beside_a_farm_are_held_to_this_builds_cpus_plus_two(tmp_path, binary):
    """Pinned to one CPU, the build holds local jobs to 1 + 2 = 3 however many CPUs the machine has. Each local
    job waits until four of them have started (or 3 s pass): a fourth would show as four at once."""
    if shutil.which("taskset") is None:
        pytest.skip("taskset (util-linux) is needed to pin the build to one CPU")
    work = tmp_path / "w"
    work.mkdir()
    job = work / "job.sh"
    job.write_text("#!/bin/sh\n"
                   "touch started.$1\n"
                   "i=0\n"
                   "while [ $(ls started.* | wc -l) -lt 4 ] && [ $i -lt 300 ]; do i=$((i+1)); sleep 0.01; done\n"
                   "touch $1\n")
    job.chmod(0o755)
    (work / "build.ninja").write_text(
        "rule t\n  command = touch $out\nrule local\n  command = ./job.sh $out\n"
        "build farm.o: t\n  headroom_exec = remote\n"
        + "".join("build local%d: local\n" % i for i in range(6)))
    env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS", "MAX_JOBS")}
    env.update(HEADROOM_STORE="off", TERM="dumb")
    r = subprocess.run(["taskset", "-c", "0", binary, "-j12", "--remote-jobs=8", "--trace=trace.json"], cwd=work,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert max_concurrent(work / "trace.json", "local") == 3
