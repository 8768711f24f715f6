#!/usr/bin/env bash
# bench/per_job_overhead.sh: per-job overhead of build tools on N trivial jobs (gen_manifest.py --kind trivial, one
# stub_cc process per edge) at -jJ, default settings, tools interleaved in every repetition, a fresh copy of the tree
# per run. Two runs per tool and repetition: one under GNU time (wall, peak RSS of the tool: its jobs are tiny) and
# one under `perf stat --no-inherit` (task-clock of the tool's own process, its jobs excluded: the per-job cost
# itself, much steadier than the wall on a shared machine). Medians and ratios to the first tool are printed.
#
#   bench/per_job_overhead.sh [-n JOBS] [-j J] [-r REPS] [-o DIR] [-T] TOOL...
# -T: GNU time only, no perf run (own CPU then prints 0): for the cgroup v2 VM, whose perf stat never returns.
#   e.g. bench/per_job_overhead.sh -r 3 $(python3 -c 'import ninja; print(ninja.BIN_DIR)')/ninja build/headroom
set -euo pipefail
jobs=10000 j=64 reps=3 out=/dev/shm/per-job-overhead time_only=0
while getopts "n:j:r:o:T" opt; do
  case $opt in n) jobs=$OPTARG;; j) j=$OPTARG;; r) reps=$OPTARG;; o) out=$OPTARG;; T) time_only=1;; *) exit 2;; esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { echo "usage: $0 [-n JOBS] [-j J] [-r REPS] [-o DIR] [-T] TOOL..." >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$out"
stub="$out/stub_cc"
[ -x "$stub" ] || g++ -O2 -o "$stub" "$here/stub_cc.cc"
gen="$out/gen-$jobs"
[ -f "$gen/build.ninja" ] || python3 "$here/gen_manifest.py" --out "$gen" --kind trivial --jobs "$jobs" --cc "$stub" >/dev/null
results="$out/results.txt"
: >"$results"
for rep in $(seq "$reps"); do
  for tool in "$@"; do
    name="$(basename "$tool")"
    rm -rf "$out/run" && cp -r "$gen" "$out/run"
    (cd "$out/run" && /usr/bin/time -f "%e %M" -o "$out/time.txt" "$tool" -j"$j" --quiet >/dev/null 2>&1)
    own_cpu=0
    if [ "$time_only" = 0 ]; then
      rm -rf "$out/run" && cp -r "$gen" "$out/run"
      (cd "$out/run" && perf stat --no-inherit -x, -e task-clock -o "$out/perf.txt" "$tool" -j"$j" --quiet >/dev/null 2>&1)
      own_cpu=$(grep task-clock "$out/perf.txt" | cut -d, -f1)
    fi
    echo "$name $(cat "$out/time.txt") $own_cpu" | tee -a "$results"
  done
done
python3 - "$results" "$@" <<'EOF'
import statistics, sys, os
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
names = [os.path.basename(t) for t in sys.argv[2:]]
med = {n: [statistics.median(float(r[k]) for r in rows if r[0] == n) for k in (1, 2, 3)] for n in names}
base = med[names[0]]
print(f"{'tool':<16}{'wall s':>9}{'RSS MiB':>9}{'own CPU s':>11}   ratios to {names[0]}: wall / RSS / own CPU")
for n in names:
    w, m, c = med[n]
    cpu_ratio = f"{c / base[2]:.2f}" if base[2] else "-"
    print(f"{n:<16}{w:>9.2f}{m / 1024:>9.1f}{c / 1000:>11.2f}   {w / base[0]:.2f} / {m / base[1]:.2f} / {cpu_ratio}")
EOF
