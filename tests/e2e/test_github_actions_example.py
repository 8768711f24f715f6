"""examples/github-actions: both workflows parse as YAML, and the deadline workflow's shell steps work with the real
binary as `ninja`: the shim passes the time left as --deadline through HEADROOM_FLAGS and keeps the exit status,
the build step turns exit status 75 into `stopped=true` (save the build dir, resume), and the history
export/import commands are accepted."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

import harness

EXAMPLES = harness.REPO_ROOT / "examples" / "github-actions"


def headroom() -> str:
    binary = os.path.abspath(harness.headroom_binary())
    if not os.access(binary, os.X_OK):
        pytest.fail("headroom binary %r does not exist (set HEADROOM_BIN)" % binary)
    return binary


def steps() -> dict:
    workflow = yaml.safe_load((EXAMPLES / "cuda-wheel-deadline.yml").read_text())
    return {step.get("name"): step for step in workflow["jobs"]["wheel"]["steps"]}


class Runner:
    """A stand-in for a GitHub runner: $GITHUB_ENV, $GITHUB_PATH and $GITHUB_OUTPUT files applied between steps,
    headroom installed as `ninja` on PATH."""

    def __init__(self, tmp_path: Path):
        self.root = tmp_path
        self.temp = tmp_path / "runner-temp"
        self.temp.mkdir()
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir()
        os.symlink(headroom(), bin_dir / "ninja")
        self.files = {name: tmp_path / name for name in ("env", "path", "output")}
        for f in self.files.values():
            f.write_text("")
        self.env = {k: v for k, v in os.environ.items() if k not in ("NINJA_STATUS", "MAKEFLAGS", "HEADROOM_FLAGS")}
        self.env.update(PATH="%s:%s" % (bin_dir, os.environ["PATH"]), RUNNER_TEMP=str(self.temp), TERM="dumb",
                        HEADROOM_STORE=str(tmp_path / "store"), HEADROOM_LEDGER_DIR="", BUILD_DIR="build",
                        GITHUB_ENV=str(self.files["env"]), GITHUB_PATH=str(self.files["path"]),
                        GITHUB_OUTPUT=str(self.files["output"]), DEADLINE_MINUTES="315")

    def run(self, script: str, cwd: Path) -> subprocess.CompletedProcess:
        r = subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=self.env, capture_output=True, text=True,
                           timeout=120)
        for line in self.files["env"].read_text().splitlines():
            key, value = line.split("=", 1)
            self.env[key] = value
        for line in self.files["path"].read_text().splitlines():
            if line not in self.env["PATH"].split(":"):
                self.env["PATH"] = line + ":" + self.env["PATH"]
        return r

    def outputs(self) -> dict:
        return dict(line.split("=", 1) for line in self.files["output"].read_text().splitlines())


def project(directory: Path, jobs: int) -> Path:
    directory.mkdir(parents=True)
    lines = ["rule cc", "  command = sleep 0.4 && touch $out"]
    lines += ["build o%d: cc" % i for i in range(jobs)]
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")
    return directory


def test_both_workflows_parse():
    for path in sorted(EXAMPLES.glob("*.yml")):
        workflow = yaml.safe_load(path.read_text())
        assert workflow["jobs"], path
        assert True in workflow or "on" in workflow, path  # YAML 1.1 reads the key `on` as true
    deadline = yaml.safe_load((EXAMPLES / "cuda-wheel-deadline.yml").read_text())
    wheel = deadline["jobs"]["wheel"]
    assert wheel["timeout-minutes"] < 360
    assert int(deadline["env"]["DEADLINE_MINUTES"]) * 60 < wheel["timeout-minutes"] * 60


def test_the_content_hash_option_the_workflow_uses_is_accepted():
    r = subprocess.run([headroom(), "-h"], capture_output=True, text=True)
    assert "--content-hash" in r.stderr, \
        "headroom -h does not list --content-hash, which cuda-wheel-deadline.yml passes to every build"


@pytest.mark.parametrize("deadline_left_s,expect_stop", [(1, True), (600, False)])
def test_the_shim_and_build_step_save_on_75_only(tmp_path, deadline_left_s, expect_stop):
    s = steps()
    runner = Runner(tmp_path)
    work = project(tmp_path / "work" / "build" / "temp.linux", jobs=8).parent.parent
    assert runner.run(s["Put the deadline shim on PATH"]["run"], work).returncode == 0
    runner.env["DEADLINE_AT"] = str(int(time.time()) + deadline_left_s)
    # The build step, with `ninja -v` in the toy build dir standing for torch's call through setup.py.
    build = s["Build the wheel"]["run"].replace("python3 setup.py bdist_wheel", "(cd build/temp.linux && ninja -j2 -v)")
    r = runner.run(build, work)
    assert r.returncode == 0, r
    status = (runner.temp / "ninja-status").read_text().strip()
    if expect_stop:
        assert status == "75"
        assert runner.outputs().get("stopped") == "true"
        assert "build stopped: deadline" in r.stdout
    else:
        assert status == "0"
        assert "stopped" not in runner.outputs()

    # History: export after the build (from the dir holding build.ninja), import on the next runner.
    r = runner.run(s["Export history"]["run"], work)
    assert r.returncode == 0, r
    assert (work / "headroom-history.txt").stat().st_size > 0
    r = runner.run(s["Import history"]["run"], work)
    assert r.returncode == 0, r
