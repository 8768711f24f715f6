# bench/history_load.py: .headroom_history load time against ninja 1.13.2's .ninja_log load, same outputs, same run.
"""Usage: python3 bench/history_load.py --micro build-b/bench/micro_history [--entries 50000] [--reps 5]

Writes OUT/build.ninja with --entries outputs (Chromium-like paths), a .ninja_log v7 with one record per
output, and a .headroom_history with one record per output in 200 classes (what one build with memory
control leaves). Each repetition, interleaved: `ninja -n -d stats` (its ".ninja_log load" row: wall ms,
as ninja times it) and micro_history's BM_HistoryLoadFile on the history (wall and CPU ms per load).
Prints medians and minimums and the ratio history / .ninja_log; OUT/history_load.json keeps every figure.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import ninja_default  # noqa: E402


def output_name(i):
    return f"obj/module{i % 37}/target{i % 200}/src/file{i}.cc.o"


def write_tree(out, entries):
    os.makedirs(out, exist_ok=True)
    lines = ["rule cc", "  command = true $out"]
    lines += [f"build {output_name(i)}: cc" for i in range(entries)]
    with open(os.path.join(out, "build.ninja"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(out, ".ninja_log"), "w") as f:
        f.write("# ninja log v7\n")
        for i in range(entries):
            h = (0x9E3779B97F4A7C15 * (i + 1)) % 2**64
            f.write(f"{i}\t{i + 700}\t{1700000000000000000 + i}\t{output_name(i)}\t{h:x}\n")
    classes = 200
    lines = ["# headroom history v2"]
    lines += [f"C\t{c}\tCXX_COMPILER__target{c} /usr/bin/c++ -DFOO -O2 -g -std=c++20 -c .cc" for c in range(classes)]
    for i in range(entries):
        h = (0x9E3779B97F4A7C15 * (i + 1)) % 2**64
        lines.append(f"E\t{i % classes}\t{h:016x}\t{(300 << 20) + i * 4096}\t{1200 + i % 700}\tc\tc\t-\t{output_name(i)}")
    with open(os.path.join(out, ".headroom_history"), "w") as f:
        f.write("\n".join(lines) + "\n")


def ninja_log_load_ms(ninja, out):
    r = subprocess.run([ninja, "-n", "-d", "stats"], cwd=out, capture_output=True, text=True, check=True)
    for line in r.stdout.splitlines():
        if line.startswith(".ninja_log load"):
            return float(line.split()[-1])  # metric, count, avg (us), total (ms)
    sys.exit("ninja -d stats printed no .ninja_log load row:\n" + r.stdout[-2000:])


def history_load_ms(micro, out):
    env = dict(os.environ, HEADROOM_BENCH_HISTORY=os.path.join(out, ".headroom_history"))
    r = subprocess.run([micro, "--benchmark_filter=BM_HistoryLoadFile", "--benchmark_min_time=0.2",
                        "--benchmark_format=json"], env=env, capture_output=True, text=True, check=True)
    bench = json.loads(r.stdout)["benchmarks"][0]
    if bench.get("error_occurred"):
        sys.exit("BM_HistoryLoadFile: " + bench.get("error_message", ""))
    return bench["real_time"], bench["cpu_time"], int(bench["edges"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--micro", required=True, help="micro_history binary (HEADROOM_BUILD_BENCH=ON)")
    ap.add_argument("--ninja", default=ninja_default())
    ap.add_argument("--out", default="/dev/shm/hb_history")
    ap.add_argument("--entries", type=int, default=50000)
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    write_tree(a.out, a.entries)
    log_ms, hist_wall, hist_cpu = [], [], []
    for rep in range(a.reps):
        steps = ["ninja", "headroom"] if rep % 2 == 0 else ["headroom", "ninja"]
        for step in steps:
            if step == "ninja":
                log_ms.append(ninja_log_load_ms(a.ninja, a.out))
            else:
                wall, cpu, edges = history_load_ms(a.micro, a.out)
                if edges != a.entries:
                    sys.exit(f"history loaded {edges} edges, expected {a.entries}")
                hist_wall.append(wall)
                hist_cpu.append(cpu)
    result = {"entries": a.entries, "ninja_log_load_ms": log_ms, "history_load_wall_ms": hist_wall,
              "history_load_cpu_ms": hist_cpu, "loadavg": os.getloadavg()}
    with open(os.path.join(a.out, "history_load.json"), "w") as f:
        json.dump(result, f, indent=1)
    med, low = statistics.median, min
    print(f"{a.entries} entries, {a.reps} interleaved reps, loadavg {result['loadavg']}")
    print(f"ninja .ninja_log load (wall, ninja's own timer): median {med(log_ms):.1f} ms, min {low(log_ms):.1f} ms")
    print(f"headroom .headroom_history load: wall median {med(hist_wall):.1f} ms, min {low(hist_wall):.1f} ms; "
          f"CPU median {med(hist_cpu):.1f} ms, min {low(hist_cpu):.1f} ms")
    print(f"ratio history / .ninja_log (wall): median {med(hist_wall) / med(log_ms):.2f}x, "
          f"min {low(hist_wall) / low(log_ms):.2f}x")


if __name__ == "__main__":
    main()
