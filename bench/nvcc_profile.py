#!/usr/bin/env python3
"""Measures one compile's memory as headroom's priors need it: the whole process tree's peak (the kernel's figure from a
fresh cgroup v1/v2 memory group when run as root, else the sum of sampled RSS), and each tool's largest RSS (cicc,
ptxas, cc1plus, cudafe++, ...). Prints one JSON object per command.

  bench/nvcc_profile.py --label NAME [--interval-ms 20] -- nvcc ... -c x.cu -o x.o

bench/nvcc_workload.py runs it over the heavy sources and flash-attn kernels; docs/priors.md holds the table."""
import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

V1 = Path("/sys/fs/cgroup/memory")
V2 = Path("/sys/fs/cgroup")


def make_cgroup(name):
    """(dir, peak file, procs file) of a fresh memory cgroup, or None when this process cannot make one."""
    if (V1 / "memory.max_usage_in_bytes").exists():
        d = V1 / name
        peak = "memory.max_usage_in_bytes"
    elif (V2 / "cgroup.controllers").exists() and "memory" in (V2 / "cgroup.subtree_control").read_text():
        d = V2 / name
        peak = "memory.peak"
    else:
        return None
    try:
        d.mkdir()
    except OSError:
        return None
    return d, d / peak, d / "cgroup.procs"


def rss_by_pid(pids):
    out = {}
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            out[pid] = (fields["Name"].strip(), int(fields.get("VmRSS", "0 kB").split()[0]) * 1024)
        except (OSError, KeyError, ValueError):
            pass
    return out


def descendants(root):
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    seen, todo = [], [root]
    while todo:
        pid = todo.pop()
        seen.append(pid)
        todo.extend(children.get(pid, []))
    return seen


def profile(cmd, label, interval_s):
    group = make_cgroup("headroom-profile-%d" % os.getpid())
    procs_file = str(group[2]) if group else None

    def join_group():
        if procs_file:
            with open(procs_file, "w") as f:
                f.write(str(os.getpid()))

    start = time.monotonic()
    proc = subprocess.Popen(cmd, preexec_fn=join_group, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    tool_peaks, tree_sampled = {}, 0
    while proc.poll() is None:
        total = 0
        by_tool = {}
        for name, rss in rss_by_pid(descendants(proc.pid)).values():
            total += rss
            by_tool[name] = by_tool.get(name, 0) + rss
        for name, rss in by_tool.items():
            tool_peaks[name] = max(tool_peaks.get(name, 0), rss)
        tree_sampled = max(tree_sampled, total)
        time.sleep(interval_s)  # a sampling period, not synchronisation: the loop ends when the compile does
    err = proc.stderr.read().decode(errors="replace")
    wall = time.monotonic() - start
    result = {"label": label, "rc": proc.returncode, "wall_s": round(wall, 2),
              "tree_peak_sampled": tree_sampled, "tool_peaks": dict(sorted(tool_peaks.items()))}
    if group:
        result["tree_peak_cgroup"] = int(group[1].read_text())
        try:
            group[0].rmdir()
        except OSError:
            pass
    if proc.returncode != 0:
        result["stderr_tail"] = err[-2000:]
    return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", required=True)
    parser.add_argument("--interval-ms", type=float, default=20)
    parser.add_argument("cmd", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if not cmd:
        parser.error("no command")
    print(json.dumps(profile(cmd, args.label, args.interval_ms / 1000.0)), flush=True)


if __name__ == "__main__":
    sys.exit(main())
