#!/usr/bin/env python3
# bench/guard_shapes.py: owns the "shapes" table of issue 29 (docs/build-guard.md "The shapes, measured"): one real
# small headroom build per cgroup shape a user builds in, each in a fresh memory box (a child of this process's own
# memory cgroup, v1 or v2), and what came of it: guard on or off and its reason line, kernel OOM kills in the box and
# below (tests/e2e/memory_box.py's count: counters plus the kernel log), each build's exit status, where the per-job
# peaks came from (the history file's peak method), and the headroom* cgroups left in the box afterwards.
# Needs root (it makes cgroups, and runs shapes 4-5 as nobody). Measures only: it never changes the product.
"""Usage: python3 bench/guard_shapes.py [--headroom build/headroom] [--memhog build/tests/memhog] [--out DIR]
                                  [--shapes 1,2,3,4,5,6,7] [--timeout SECONDS] [--job-mb 250] [--box-mb 768]

Shapes (each a cold graph: 4 memhog jobs of --job-mb MiB, 2 processes each, ramp 200 ms, hold 500 ms, hinted at
headroom_mem = 20M, built at -j4 with -d explain, so the guard is what keeps the box alive):
  1 alone        the build is the only process in the box
  2 shared       a `sleep` started in the box first (a container's root cgroup with a shell in it); once the
                 build and then the sleep ended, a next build runs in the box (what it leaves is reported too)
  3 scope        the box is named hr-shape-session-1.scope, no delegate xattr (a terminal's session scope)
  4 nobody       the build runs as nobody, the box owned by root (no cgroup access)
  5 delegated    the build runs as nobody in a box chowned to nobody (v2: the dir, cgroup.procs,
                 cgroup.subtree_control, cgroup.threads, as systemd delegates; v1: the dir and all its files)
  6 two          two such builds at once in one box (the second starts once the first made its group; its shell
                 joins the box, or, when v2 refuses that (EBUSY: the box hands memory down), the box's headroom.leaf,
                 as a shell moved there would; which one is reported)
  7 nested       an outer headroom -j1 whose one job (hinted 100M) runs the inner headroom on such a graph
Each build runs under --timeout (default 180 s): a build still running then is killed and reported as a HANG.
Writes DIR/shapes.json and DIR/shape<N>-<build>.log (each build's stdout and stderr); prints one line per shape.
In the cgroup v2 VM: scripts/v2-vm.sh --rwdir DIR -- python3 bench/guard_shapes.py --out DIR
"""
import argparse
import json
import os
import platform
import pwd
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests" / "e2e"))
import memory_box  # noqa: E402
from memory_box import MemoryBox  # noqa: E402

MiB = 1024 * 1024
METHODS = {"c": "cgroup", "t": "sampled", "r": "rusage", "u": "unknown"}
GUARD_LINE = re.compile(r"^(?:.*?)((?:no )?build guard: .*)$", re.M)
V1_FREEZER = Path("/sys/fs/cgroup/freezer")


def hog_graph(directory: Path, memhog: str, jobs: int, mb: int) -> None:
    """`jobs` cold memhog jobs under distinct names (no class or family shared), each estimated at 20 MiB."""
    lines = ["rule hog", "  command = $tool --mb %d --ramp-ms 200 --hold-ms 500 --procs 2 && touch $out" % mb,
             "  description = HOG $out"]
    for i in range(jobs):
        tool = directory / ("hog_%s" % "abcdefgh"[i])
        tool.symlink_to(memhog)
        lines += ["build out%02d: hog" % i, "  tool = %s" % tool, "  headroom_mem = 20M"]
    (directory / "build.ninja").write_text("\n".join(lines) + "\n")


def peak_methods(directory: Path) -> dict:
    """Peak method of every record in the build dir's history (E lines: field 5), counted."""
    counts: dict[str, int] = {}
    for name in (".ninja_headroom", ".headroom_history"):
        path = directory / name
        if not path.exists():
            continue
        for line in path.read_text(errors="replace").splitlines():
            fields = line.split("\t")
            if fields[0] == "E" and len(fields) > 5:
                method = METHODS.get(fields[5], fields[5])
                counts[method] = counts.get(method, 0) + 1
        break
    return counts


def headroom_groups(box: MemoryBox) -> list[str]:
    """Every headroom* cgroup in the box or below it, relative to the box."""
    found = []
    for dirpath, dirnames, _ in os.walk(box.path):
        for d in dirnames:
            if d.startswith("headroom"):
                found.append(str((Path(dirpath) / d).relative_to(box.path)))
    return sorted(found)


def freezer_groups(pids: list[int]) -> list[str]:
    """v1: the builds' own freezer groups (headroom-<pid> under the freezer root) still there."""
    if not V1_FREEZER.is_dir():
        return []
    return sorted(str(p) for pid in pids for p in V1_FREEZER.rglob("headroom-%d" % pid))


def joiner(box: MemoryBox, argv: list[str], fallback_leaf: bool = False) -> list[str]:
    """argv run inside the box; with fallback_leaf, in the box's headroom.leaf when the box refuses a process."""
    if not fallback_leaf:
        return box.argv(argv)
    script = ('if echo $$ > "$0/cgroup.procs" 2>/dev/null; then echo "guard_shapes: joined the box" >&2; '
              'else echo $$ > "$0/headroom.leaf/cgroup.procs" && '
              'echo "guard_shapes: the box refused the shell; joined $0/headroom.leaf" >&2 || exit 126; fi; exec "$@"')
    return ["sh", "-c", script, str(box.path)] + argv


def as_nobody(argv: list[str]) -> list[str]:
    return ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"] + argv


class Build:
    def __init__(self, label: str, argv: list[str], cwd: Path, env: dict, log: Path):
        self.label, self.cwd, self.log = label, cwd, log
        self.start = time.monotonic()
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.out = self.err = ""
        self.rc = None
        self.hung = False
        self.wall = None

    def finish(self, box: MemoryBox, deadline: float) -> None:
        try:
            self.out, self.err = self.proc.communicate(timeout=max(1.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.hung = True
            for pid in box.tasks():  # the build, its watcher, its jobs (SIGKILL also wakes a task at a v1 limit)
                try:
                    os.kill(pid, 9)
                except OSError:
                    pass
            self.proc.kill()
            self.out, self.err = self.proc.communicate()
        self.rc = self.proc.returncode
        self.wall = round(time.monotonic() - self.start, 1)
        self.log.write_text("$ cd %s\n--- stdout ---\n%s\n--- stderr ---\n%s\n" % (self.cwd, self.out, self.err))

    def report(self, history_dirs: list[Path]) -> dict:
        text = self.out + "\n" + self.err
        methods: dict[str, int] = {}
        for d in history_dirs:
            for k, v in peak_methods(d).items():
                methods[k] = methods.get(k, 0) + v
        # What a user would see on stderr without -d explain: every stderr line but explain's, this script's, and the
        # guard's own "killed to save memory ... retrying" warnings (the guard at work, counted apart as guard_kills).
        noisy = [l for l in self.err.splitlines() if l.strip() and not l.startswith(("ninja explain:", "guard_shapes:"))
                 and "killed to save memory" not in l]
        return {
            "build": self.label,
            "rc": "HANG" if self.hung else self.rc,
            "wall_s": self.wall,
            "guard": list(dict.fromkeys(m.group(1).strip() for m in GUARD_LINE.finditer(text))),
            # This build's own -d explain line (stderr); "guard" also has a nested build's (its job's output).
            "guard_own": list(dict.fromkeys(m.group(1).strip() for m in GUARD_LINE.finditer(self.err))),
            "guard_kills": len(re.findall(r"killed '[^']*' to save", text)),
            "stalled": "stalled at the limit" in text,
            "joined": [l for l in self.err.splitlines() if l.startswith("guard_shapes:")],
            "stderr_other": noisy[:10],
            "peak_methods": methods,
            "tail": text.strip().splitlines()[-12:],
            "log": str(self.log),
        }


def run_shape(shape: int, args, work: Path, out: Path, headroom: str, memhog: str) -> dict:
    limit = (args.box_mb + (256 if shape == 6 else 0)) * MiB
    if shape == 3:
        box = MemoryBox(limit, "hr-shape-session-1.scope")
    else:
        box = MemoryBox(limit, "hr-shape-%d-%s" % (shape, uuid.uuid4().hex[:8]))
    sharer = None
    result = {"shape": shape, "box": str(box.path), "box_mib": limit // MiB, "cgroup": box.version}
    try:
        nobody = pwd.getpwnam("nobody")
        root = work / ("shape%d" % shape)
        root.mkdir()
        env = box.env()
        env.pop("HEADROOM_LEDGER_DIR", None)
        env["HOME"] = box.cache_home
        hr = [headroom, "-j4", "-d", "explain"]
        history_dirs = []
        builds: list[Build] = []
        deadline = time.monotonic() + args.timeout
        if shape in (1, 2, 3, 4, 5):
            d = root / "a"
            d.mkdir()
            hog_graph(d, memhog, 4, args.job_mb)
            history_dirs.append(d)
            argv = hr
            if shape in (4, 5):
                for p in (root, d, Path(box.cache_home)):
                    for q in [p] + list(p.rglob("*")):
                        os.lchown(q, nobody.pw_uid, nobody.pw_gid)
                if shape == 5:
                    names = (["cgroup.procs", "cgroup.subtree_control", "cgroup.threads"] if box.version == "v2"
                             else [f.name for f in box.path.iterdir() if f.is_file()])
                    for f in [box.path] + [box.path / n for n in names if (box.path / n).exists()]:
                        os.chown(f, nobody.pw_uid, nobody.pw_gid)
                argv = as_nobody(hr)
            if shape == 2:
                sharer = subprocess.Popen(box.argv(["sleep", "600"]))
                for _ in range(500):
                    if str(sharer.pid) in (box.path / "cgroup.procs").read_text().split():
                        break
                    time.sleep(0.01)
                result["sharer_pid"] = sharer.pid
            builds.append(Build("build", box.argv(argv), d, env, out / ("shape%d-build.log" % shape)))
        elif shape == 6:
            dirs = []
            for name in ("a", "b"):
                d = root / name
                d.mkdir()
                hog_graph(d, memhog, 4, args.job_mb)
                dirs.append(d)
            builds.append(Build("first", joiner(box, hr, True), dirs[0], env, out / "shape6-first.log"))
            group = box.path / "headroom.guard" / ("headroom-%d" % builds[0].proc.pid)
            for _ in range(2000):  # until the first build made its group (its guard is being armed), 20 s at most
                if group.exists() or builds[0].proc.poll() is not None:
                    break
                time.sleep(0.01)
            result["second_started_after_first_group"] = group.exists()
            builds.append(Build("second", joiner(box, hr, True), dirs[1], env, out / "shape6-second.log"))
            history_dirs = dirs
        elif shape == 7:
            inner = root / "inner"
            inner.mkdir()
            hog_graph(inner, memhog, 4, args.job_mb)
            (root / "build.ninja").write_text(
                "rule nested\n  command = %s -C inner -j4 -d explain 2>&1 && touch $out\n"
                "build out: nested\n  headroom_mem = 100M\n" % headroom)
            history_dirs = [root, inner]
            builds.append(Build("outer", box.argv([headroom, "-j1", "-d", "explain"]), root, env,
                                out / "shape7-outer.log"))
            # The outer build prints no guard line (memory never shapes its one job): read its cap off the box, polled
            # until it is set (the group is made before the cap is written) or the build ends, 30 s at most.
            shared = box.path / "headroom.guard"
            cap_file = shared / ("memory.limit_in_bytes" if box.version == "v1" else "memory.max")
            outer_group = shared / ("headroom-%d" % builds[0].proc.pid)
            cap, seen = "no shared group seen", False
            for _ in range(3000):
                seen = seen or outer_group.exists()
                try:
                    cap = cap_file.read_text().strip()
                except OSError:
                    pass
                if (cap.isdigit() and int(cap) < 1 << 50) or builds[0].proc.poll() is not None:
                    break
                time.sleep(0.01)
            result["outer_shared_group_cap_mib"] = int(cap) // MiB if cap.isdigit() and int(cap) < 1 << 50 else cap
            result["outer_group_seen"] = seen
        for b in builds:
            b.finish(box, deadline)
        pids = [b.proc.pid for b in builds]
        result["builds"] = [b.report(history_dirs if shape != 6 else [b.cwd]) for b in builds]
        result["groups_left"] = headroom_groups(box)
        time.sleep(2)  # a watcher that cleans up after the build: give it a moment, then look again
        result["groups_left_after_2s"] = headroom_groups(box)
        if sharer is not None:
            sharer.kill()
            sharer.wait()
            time.sleep(2)
            result["groups_left_after_sharer_ended"] = headroom_groups(box)
            # What removes a leaf the sharer was moved into, once it ended: the next build in the box (its shell
            # joins the box, or its leaf when the box still hands memory down).
            d = root / "next"
            d.mkdir()
            hog_graph(d, memhog, 4, args.job_mb)
            nxt = Build("next", joiner(box, hr, True), d, env, out / ("shape%d-next.log" % shape))
            nxt.finish(box, time.monotonic() + args.timeout)
            result["next_build"] = nxt.report([d])
            result["groups_left_after_next_build"] = headroom_groups(box)
        result["freezer_groups_left"] = freezer_groups(pids)
        result["tasks_left"] = [p for p in box.tasks() if p not in pids]
        result["oom_kills"] = box.oom_kills()
        result["oom_counting"] = "counters + kernel log" if box.kernel_log.fd is not None else (
            "counters only: " + str(box.kernel_log.reason))
        result["box_subtree_control"] = ((box.path / "cgroup.subtree_control").read_text().strip()
                                         if box.version == "v2" else None)
    finally:
        if sharer is not None and sharer.poll() is None:
            sharer.kill()
            sharer.wait()
        box.remove()
    return result


def summary_line(r: dict) -> str:
    parts = []
    for b in r["builds"]:
        guard = (b["guard"][0][:160] if b["guard"] else "(no guard line)")
        parts.append("%s rc=%s %ss kills-by-guard=%d peaks=%s guard=[%s]%s%s" % (
            b["build"], b["rc"], b["wall_s"], b["guard_kills"], b["peak_methods"] or "{}", guard,
            " stderr=%s" % b["stderr_other"] if b["stderr_other"] else "",
            " %s" % b["joined"] if b["joined"] else ""))
    return "shape %d (%s): oom_kills=%d left=%s left@2s=%s%s | %s" % (
        r["shape"], r["cgroup"], r["oom_kills"], r["groups_left"], r["groups_left_after_2s"],
        " left-after-sharer=%s next-build rc=%s left-after-next=%s" % (
            r["groups_left_after_sharer_ended"], r["next_build"]["rc"], r["groups_left_after_next_build"])
        if "groups_left_after_sharer_ended" in r else "", " || ".join(parts))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--headroom", default=str(REPO / "build" / "headroom"))
    parser.add_argument("--memhog", default=str(REPO / "build" / "tests" / "memhog"))
    parser.add_argument("--out", default="guard-shapes-out")
    parser.add_argument("--shapes", default="1,2,3,4,5,6,7")
    parser.add_argument("--timeout", type=float, default=180.0, help="per shape's builds, seconds")
    parser.add_argument("--job-mb", type=int, default=250)
    parser.add_argument("--box-mb", type=int, default=768, help="the box (shape 6: 256 MiB more)")
    parser.add_argument("--keep", action="store_true", help="keep the build directories (printed)")
    args = parser.parse_args()
    reason = memory_box.unavailable_reason()
    if reason:
        sys.exit("guard_shapes: " + reason)
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="hr-shapes-"))
    os.chmod(work, 0o755)
    # Private copies: the build tree may be rebuilt while this runs; nobody must be able to run them.
    headroom, memhog = str(work / "headroom"), str(work / "memhog")
    shutil.copy2(args.headroom, headroom)
    shutil.copy2(args.memhog, memhog)
    version = subprocess.run([headroom, "--version"], capture_output=True, text=True).stdout.strip()
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip()
    meta = {"kernel": platform.release(), "cpus": os.cpu_count(), "cgroup": memory_box._own_cgroup()[0],
            "own_cgroup": str(memory_box._own_cgroup()[1]), "headroom": args.headroom, "headroom_version": version,
            "repo_head": head, "binary_mtime": time.ctime(os.path.getmtime(args.headroom)),
            "date": time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()), "argv": sys.argv,
            "job_mb": args.job_mb, "box_mb": args.box_mb}
    print("guard_shapes: %s" % json.dumps(meta), flush=True)
    results = []
    try:
        for shape in [int(s) for s in args.shapes.split(",")]:
            r = run_shape(shape, args, work, out, headroom, memhog)
            results.append(r)
            print(summary_line(r), flush=True)
            (out / "shapes.json").write_text(json.dumps({"meta": meta, "shapes": results}, indent=2))
    finally:
        if args.keep:
            print("guard_shapes: kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
