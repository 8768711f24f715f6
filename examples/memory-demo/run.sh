#!/usr/bin/env bash
# The memory demo: 16 memory-hungry jobs (each spread over 4 processes, like nvcc over cicc/ptxas) built
# at -j16 with a 2 GiB limit. Plain ninja starts them all and the kernel OOM-kills them; headroom admits
# what fits, learns each job's peak, and finishes. As root the limit is a real cgroup box; otherwise
# headroom gets --mem-budget=2G and ninja is only shown what it would have started.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
build="${HEADROOM_BUILD_DIR:-$repo/build}"
headroom="$build/headroom"
memhog="$build/tests/memhog"
ninja_ref="$(python3 -c 'import ninja, os; print(os.path.join(ninja.BIN_DIR, "ninja"))' 2>/dev/null || command -v ninja)"
limit_mib=2048
work="$(mktemp -d /tmp/headroom-demo.XXXXXX)"

write_manifest() {
  local dir="$1"
  mkdir -p "$dir"
  {
    echo "rule compile"
    echo "  command = $memhog --mb \$mb --ramp-ms 400 --hold-ms 1200 --procs 4 && touch \$out"
    echo "  description = COMPILE \$out (\$mb MiB)"
    echo "rule link"
    echo "  command = $memhog --mb 300 --ramp-ms 200 --hold-ms 300 && touch \$out"
    echo "  description = LINK \$out"
    local objects=""
    for i in $(seq -w 1 16); do
      echo "build kernel_$i.o: compile"
      echo "  mb = $(( 200 + (10#$i % 4) * 100 ))"
      objects="$objects kernel_$i.o"
    done
    echo "build libkernels.so: link$objects"
  } > "$dir/build.ninja"
}

make_box() {
  local own
  own="$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)"
  [ -n "$own" ] || return 1
  local box="/sys/fs/cgroup/memory$own/headroom-demo-$$-$1"
  mkdir "$box" 2>/dev/null || return 1
  echo $((limit_mib * 1024 * 1024)) > "$box/memory.limit_in_bytes" || return 1
  echo "$box"
}

run_in_box() {
  local box="$1"; shift
  sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$box" "$@"
}

# Kernel OOM kills in a box and every cgroup below it. cgroup v1 counts a kill only in the victim's own
# cgroup, and headroom removes each job's cgroup when the job ends, so the box's own counter alone says 0
# even when a job was killed: the kernel log's "oom-kill:" records naming the box (one per kill, kept after
# the cgroup is gone) are counted too, and the larger figure is printed.
oom_kills() {
  python3 - "$1" <<'PY'
import errno, os, re, sys
box = sys.argv[1]
counted = 0
for dirpath, _, files in os.walk(box):
    if "memory.oom_control" in files:
        for line in open(os.path.join(dirpath, "memory.oom_control")):
            if line.startswith("oom_kill "):
                counted += int(line.split()[1])
logged, note = 0, ""
try:
    fd = os.open("/dev/kmsg", os.O_RDONLY | os.O_NONBLOCK)
    name = os.path.basename(box)
    while True:
        try:
            record = os.read(fd, 8192).decode("utf-8", "replace")
        except OSError as e:
            if e.errno == errno.EPIPE:
                continue
            break
        m = re.search(r"oom-kill:.*?task_memcg=([^,\s]+)", record)
        if m and name in m.group(1).split("/"):
            logged += 1
except OSError:
    note = " (kernel log unreadable: kills in removed job cgroups may be missing)"
print(f"{max(counted, logged)}{note}")
PY
}

echo "== headroom demo: 16 compiles of 200-500 MiB each (x4 processes) + a link, -j16, ${limit_mib} MiB allowed =="
write_manifest "$work/ninja"
write_manifest "$work/headroom"

if [ "$(id -u)" -eq 0 ] && box_ninja="$(make_box ninja)" && box_ours="$(make_box headroom)"; then
  trap 'rmdir "$box_ninja" "$box_ours" 2>/dev/null || true; rm -rf "$work"' EXIT
  echo
  echo "-- plain ninja -j16 in a ${limit_mib} MiB cgroup box --"
  start=$(date +%s.%N)
  if (cd "$work/ninja" && run_in_box "$box_ninja" "$ninja_ref" -j16 > ninja.out 2>&1); then
    echo "ninja finished"
  else
    echo "ninja FAILED: $(grep -c 'FAILED:' "$work/ninja/ninja.out") job(s) failed, kernel OOM kills (box and every cgroup below it): $(oom_kills "$box_ninja")"
  fi
  echo
  echo "-- headroom -j16 in the same kind of box --"
  (cd "$work/headroom" && run_in_box "$box_ours" "$headroom" -j16 --report="$work/report.html")
  echo "headroom finished; kernel OOM kills (box and every cgroup below it): $(oom_kills "$box_ours")"
else
  trap 'rm -rf "$work"' EXIT
  echo "(not root: no cgroup box; headroom gets --mem-budget=${limit_mib}M and ninja is not run)"
  echo "plain ninja -j16 would start 16 x 200-500 MiB x 4 processes at once: about 5.6 GiB"
  (cd "$work/headroom" && "$headroom" -j16 --mem-budget="${limit_mib}M" --report="$work/report.html")
fi
echo
echo "Run it again and headroom starts from what it measured: see $work/headroom/.ninja_headroom (and the per-user store, headroom -t history path)"
(cd "$work/headroom" && "$headroom" -t memstats 2>/dev/null | head -20) || true
if [ -f "$work/report.html" ]; then
  cp "$work/report.html" "$repo/build/memory-demo-report.html" && echo "HTML report: $repo/build/memory-demo-report.html"
fi
