# bench/cached_build_dir.py: a CI cache's build directory restored onto a fresh `git clone` (issue 32): how many
# jobs run again with headroom --content-hash, and with ninja 1.13.2 (and headroom) without it.
"""Usage: python3 bench/cached_build_dir.py --headroom BUILD/headroom [--ninja NINJA_1.13.2] [--source /usr/src/googletest]
                                         [--work /tmp/cached-build-dir] [-j N] [--json OUT.json]

1. The CMake project at --source (default: Debian's googletest sources, libgtest-dev; samples on) is committed to a
   git repository, `origin`.
2. `git clone origin checkout`, `cmake -G Ninja -DCMAKE_MAKE_PROGRAM=<headroom>`, `headroom --content-hash` builds it
   (the CI job's first run), and the build directory is saved as actions/cache saves it: `tar --posix -cf` (mtimes kept).
3. For each tool: `rm -rf checkout`, `git clone origin checkout` (every source gets a new mtime), `tar -xf` the saved
   build directory back into it, then build once and count the jobs that ran (one status line each, NINJA_STATUS).
   Afterwards ninja 1.13.2 `-n -d explain` is asked whether anything is left to do.
All figures are measured on the machine this runs on.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare import ninja_default  # noqa: E402

STATUS_MARK = "@@job "


def sh(argv, cwd=None, env=None, check=True):
    p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    if check and p.returncode != 0:
        sys.exit("command failed: %s\n%s%s" % (" ".join(argv), p.stdout, p.stderr))
    return p


def make_origin(source, origin):
    shutil.copytree(source, origin)
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@localhost",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@localhost")
    sh(["git", "init", "-q"], cwd=origin)
    sh(["git", "add", "-A"], cwd=origin)
    sh(["git", "commit", "-qm", "sources"], cwd=origin, env=env)


def fresh_clone(origin, checkout):
    if os.path.exists(checkout):
        shutil.rmtree(checkout)
    sh(["git", "clone", "-q", origin, checkout])


def build(tool_argv, build_dir, jobs):
    """Runs one build; returns (jobs run, wall seconds, exit code, output)."""
    env = dict(os.environ, NINJA_STATUS=STATUS_MARK)
    start = time.monotonic()
    p = subprocess.run(tool_argv + ["-C", build_dir, "-j%d" % jobs], capture_output=True, text=True, env=env)
    wall = time.monotonic() - start
    ran = sum(1 for line in p.stdout.splitlines() if line.startswith(STATUS_MARK))
    return ran, wall, p.returncode, p.stdout + p.stderr


def ninja_left_over(ninja, build_dir):
    """The commands ninja 1.13.2 would still run (0 = "no work to do")."""
    p = sh([ninja, "-C", build_dir, "-n", "-d", "explain"], env=dict(os.environ, NINJA_STATUS=STATUS_MARK), check=False)
    return sum(1 for line in p.stdout.splitlines() if line.startswith(STATUS_MARK))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--headroom", required=True)
    ap.add_argument("--ninja", default="")
    ap.add_argument("--source", default="/usr/src/googletest")
    ap.add_argument("--work", default="/tmp/cached-build-dir")
    ap.add_argument("-j", type=int, default=2)
    ap.add_argument("--json", default="")
    a = ap.parse_args()
    if not a.ninja:
        a.ninja = ninja_default()
    headroom = os.path.abspath(a.headroom)
    if os.path.exists(a.work):
        shutil.rmtree(a.work)
    os.makedirs(a.work)
    origin, checkout = os.path.join(a.work, "origin"), os.path.join(a.work, "checkout")
    build_dir, cache = os.path.join(checkout, "build"), os.path.join(a.work, "build-cache.tar")
    make_origin(a.source, origin)

    # The CI job's first run: configure, build with the option, save the build dir.
    fresh_clone(origin, checkout)
    sh(["cmake", "-S", checkout, "-B", build_dir, "-G", "Ninja", "-DCMAKE_MAKE_PROGRAM=" + headroom,
        "-DCMAKE_BUILD_TYPE=Release", "-Dgtest_build_samples=ON"])
    first_jobs, first_wall, rc, out = build([headroom, "--content-hash"], build_dir, a.j)
    if rc != 0:
        sys.exit("first build failed:\n" + out)
    sh(["tar", "--posix", "-cf", cache, "-C", checkout, "build"])

    results = {"project": a.source, "jobs_flag": a.j, "first_build": {"jobs": first_jobs, "wall_s": round(first_wall, 2)}}
    runs = [("headroom --content-hash", [headroom, "--content-hash"]),
            ("ninja 1.13.2", [a.ninja]),
            ("headroom", [headroom])]
    for name, argv in runs:
        fresh_clone(origin, checkout)
        sh(["tar", "-xf", cache, "-C", checkout])
        ran, wall, rc, out = build(argv, build_dir, a.j)
        if rc != 0:
            sys.exit("%s failed:\n%s" % (name, out))
        left = ninja_left_over(a.ninja, build_dir)
        results[name] = {"jobs": ran, "wall_s": round(wall, 2), "ninja_1.13.2_left_over": left}
        print("%-24s jobs %3d of %3d  wall %7.2f s  then ninja 1.13.2 -n: %d left" % (name, ran, first_jobs, wall, left),
              flush=True)
    print("first build: %d jobs, %.2f s" % (first_jobs, first_wall))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=2)


if __name__ == "__main__":
    main()
