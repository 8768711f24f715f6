#!/usr/bin/env bash
# Owns the cgroup VM: installs what is missing (qemu, a Debian kernel, busybox, virtme-ng), boots that kernel over
# this machine's own userspace with vng (cgroup v2 only, memory controller on; or, with --cgroup v1, the v1 memory,
# freezer, pids and cpu hierarchies as systemd's legacy mode mounts them), and runs one command inside it.
#
# Usage: scripts/v2-vm.sh [--cgroup v1|v2] [--memory SIZE] [--cpus N] [--timeout SECONDS] [--rwdir DIR]... [--verbose]
#                         [--] COMMAND [ARG...]
#        scripts/v2-vm.sh [--cgroup v1|v2] --install-only
#
# The command runs as root in the current directory (the same path inside), in the guest's root cgroup (on v2 its
# subtree_control gets +memory +pids, as systemd sets it on a v2 host), with this shell's PATH (the python3 found here
# first), HOME, CI, TMPDIR, PYTHON*, HEADROOM_* and NINJA_* variables. Inside, the host's filesystem is read-only
# except each --rwdir (shared with the host) and /tmp, /etc, /var... (overlays in guest memory, lost at the end).
# Its stdout and stderr are this script's. Exit status: the command's; 124 when the timeout (default 1200 s) ended
# the VM; 125 when installing failed or the VM did not boot or did not report the command's status.
# Environment: V2VM_KERNEL=/boot/vmlinuz-... picks the kernel (default: the newest Debian one in /boot).
# /dev/kvm exists on these machines but a nested KVM guest hangs after the EDD probe: the VM runs under TCG
# (--disable-kvm), roughly 10x slower than native for CPU-bound work.
set -uo pipefail

cgroup=v2
memory=3G
cpus=2
timeout_s=1200
verbose=0
install_only=0
rwdirs=()

usage() {
  sed -n 's/^# Usage: /usage: /p; s/^#        scripts/       scripts/p' "$0" >&2
  exit 125
}
die() { echo "v2-vm: $*" >&2; exit 125; }

while [ $# -gt 0 ]; do
  case "$1" in
    --cgroup) cgroup="${2:?}"; shift 2 ;;
    --memory) memory="${2:?}"; shift 2 ;;
    --cpus) cpus="${2:?}"; shift 2 ;;
    --timeout) timeout_s="${2:?}"; shift 2 ;;
    --rwdir) rwdirs+=("$(realpath -m "${2:?}")"); shift 2 ;;
    --verbose) verbose=1; shift ;;
    --install-only) install_only=1; shift ;;
    -h|--help) usage ;;
    --) shift; break ;;
    -*) echo "v2-vm: unknown option $1" >&2; usage ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || [ $install_only = 1 ] || usage
case "$cgroup" in v1|v2) ;; *) echo "v2-vm: --cgroup takes v1 or v2, not $cgroup" >&2; usage ;; esac

# --- Install what is missing (idempotent, like scripts/install-deps.sh). -------------------------------------------
# No recommends: qemu-system-x86's (a GUI, ffmpeg...) are ~140 packages vng does not need. INITRD=No: the Debian
# kernel's own initramfs is never used (vng builds one of its own with busybox and the kernel's modules), and making it
# costs about a minute per generation on a fresh machine.
debian_packages=(qemu-system-x86 linux-image-amd64 busybox-static file)  # file: vng runs `file -L` on the kernel
missing=()
for package in "${debian_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "v2-vm: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  { $sudo_cmd apt-get update -qq &&
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive INITRD=No apt-get install -y -qq --no-install-recommends \
      "${missing[@]}" >/dev/null; } || die "installing ${missing[*]} failed"
fi
vng_version=1.42
if ! command -v vng >/dev/null || [ "$(vng --version 2>/dev/null)" != "virtme-ng $vng_version" ]; then
  echo "v2-vm: installing virtme-ng==$vng_version" >&2
  python3 -m pip install -q --disable-pip-version-check "virtme-ng==$vng_version" 2>/dev/null ||
    python3 -m pip install -q --disable-pip-version-check --break-system-packages "virtme-ng==$vng_version" ||
    die "installing virtme-ng==$vng_version failed"
  hash -r
  command -v vng >/dev/null || die "vng is not on PATH after installing virtme-ng"
fi

# --- The kernel: the newest Debian kernel in /boot that has its modules (vng loads 9p and virtio from them); for the
# v1 lane one that still has the v1 memory controller (before Linux 6.11, or CONFIG_MEMCG_V1=y: Debian 13's 6.12 has
# it off), which on a newer release is Debian 12's kernel, installed beside the release's own from the Debian archive.
usable() {
  local version="${1#/boot/vmlinuz-}" config="/boot/config-${1#/boot/vmlinuz-}"
  [ -d "/lib/modules/$version/kernel" ] || return 1
  [ "$cgroup" = v2 ] && return 0
  grep -q '^CONFIG_MEMCG=y' "$config" 2>/dev/null || return 1
  grep -q '^CONFIG_MEMCG_V1=y' "$config" || ! grep -q 'CONFIG_MEMCG_V1' "$config"
}
pick_kernel() {
  local image
  for image in $(ls /boot/vmlinuz-* 2>/dev/null | sort -V -r); do
    usable "$image" && { echo "$image"; return; }
  done
}
install_v1_kernel() {
  local dir package sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  dir="$(mktemp -d)" && mkdir -p "$dir/lists/partial" "$dir/archives/partial" || return 1
  echo "deb http://deb.debian.org/debian bookworm main" > "$dir/sources.list"
  # A private package list (Debian 12's) that ignores what is installed (whose newer linux-image-amd64 would win), so
  # the machine's own sources and lists are left as they are.
  local apt_options=(-o "Dir::Etc::SourceList=$dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
                     -o "Dir::State::Lists=$dir/lists" -o Dir::State::status=/dev/null
                     -o "Dir::Cache::Archives=$dir/archives" -o APT::Sandbox::User=root)
  echo "v2-vm: installing Debian 12's kernel for the cgroup v1 lane (this release's kernel has no v1 memory controller)" >&2
  apt-get "${apt_options[@]}" update -qq &&
    package="$(apt-cache "${apt_options[@]}" depends linux-image-amd64 | sed -n 's/^ *Depends: \(linux-image-6\.1\.[^ ]*\)$/\1/p' | head -n 1)" &&
    [ -n "$package" ] && (cd "$dir" && apt-get "${apt_options[@]}" download -q "$package" >/dev/null) &&
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive INITRD=No dpkg -i "$dir/$package"_*.deb >/dev/null
  local rc=$?
  rm -rf "$dir"
  return $rc
}
kernel="${V2VM_KERNEL:-}"
if [ -z "$kernel" ]; then
  kernel="$(pick_kernel)"
  if [ -z "$kernel" ] && [ "$cgroup" = v1 ]; then
    install_v1_kernel || die "installing Debian 12's kernel failed"
    kernel="$(pick_kernel)"
  fi
fi
[ $install_only = 1 ] && exit 0
[ -n "$kernel" ] && [ -r "$kernel" ] ||
  die "no kernel with modules$([ "$cgroup" = v1 ] && echo ' and the v1 memory controller') in /boot (linux-image-amd64 installs one)"

# --- The command, wrapped: it reports that the guest came up and its exit status through a shared directory. -------
state="$(mktemp -d "${TMPDIR:-/tmp}/headroom-v2vm.XXXXXX")" || die "mktemp failed"
trap 'rm -rf "$state"' EXIT
python_dir="$(dirname "$(python3 -c 'import sys; print(sys.executable)')")"
{
  echo '#!/bin/bash'
  # The guest's clock starts from the host's (RTC): the boot's wall time is good to a second.
  echo "echo \"v2-vm: guest up after \$((\$(date +%s) - $(date +%s)))s: Linux \$(uname -r), \$(nproc) CPUs, \$(awk '/MemTotal/ {print int(\$2/1024)}' /proc/meminfo) MiB\" >&2"
  printf ': > %q/booted\n' "$state"
  # The guest starts with a minimal environment: give the command this shell's (the python3 found here first).
  printf 'export PATH=%q\n' "$python_dir:$PATH"
  for var in HOME CI TMPDIR LANG LC_ALL $(compgen -e | grep -E '^(HEADROOM_|NINJA_|PYTHON|PYTEST_|GTEST_)'); do
    [ -n "${!var+x}" ] && printf 'export %s=%q\n' "$var" "${!var}"
  done
  if [ "$cgroup" = v2 ]; then
    # systemd enables these for the root cgroup's children on a v2 host; the guest has no systemd.
    echo 'for c in memory pids cpu io; do echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; done'
  else
    # The v1 hierarchies, mounted as systemd's legacy mode does: a controller not enabled in the v2 tree may be bound
    # to a v1 hierarchy instead (the guest's init mounted cgroup2 and enabled nothing).
    echo 'mountpoint -q /sys/fs/cgroup && umount /sys/fs/cgroup'
    echo 'mount -t tmpfs -o mode=755 cgroup /sys/fs/cgroup || exit 125'
    echo 'for c in memory freezer pids cpu,cpuacct; do mkdir -p /sys/fs/cgroup/$c && mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c || { echo "v2-vm: cannot mount the v1 $c hierarchy" >&2; exit 125; }; done'
    echo 'ln -s cpu,cpuacct /sys/fs/cgroup/cpu; ln -s cpu,cpuacct /sys/fs/cgroup/cpuacct'
    # The command runs in a child group of each hierarchy, as a host's session does (systemd's slices): nothing on a
    # v1 host runs in the root memory cgroup, and paths below it are written as <own group>/<child>.
    echo 'for c in memory freezer pids cpu,cpuacct; do mkdir /sys/fs/cgroup/$c/lane && echo $$ > /sys/fs/cgroup/$c/lane/cgroup.procs || exit 125; done'
  fi
  printf 'cd %q || exit 125\n' "$PWD"
  # The guest mounts fresh, empty file systems over some directories (/var/tmp among them): a command started in one
  # would find nothing there.
  printf '[ -n "$(ls -A)" ] || { echo "v2-vm: %s is empty in the guest (a fresh mount there): run from another directory or pass it with --rwdir" >&2; exit 125; }\n' "$PWD"
  printf '%q ' "$@"; echo
  printf 'echo $? > %q/rc\n' "$state"
} > "$state/inner.sh"

vng_args=(-r "$kernel" --disable-kvm --memory "$memory" --cpus "$cpus" --rwdir "$state")
for dir in "${rwdirs[@]}"; do
  mkdir -p "$dir" && vng_args+=(--rwdir "$dir")
done
[ $verbose = 1 ] && vng_args+=(--verbose)

# run_vm [VNG_ARG...]: boots the VM once, the command in it; sets vng_rc and elapsed.
run_vm() {
  echo "v2-vm: booting $kernel (TCG, cgroup $cgroup, $cpus CPUs, $memory, timeout ${timeout_s}s): $*" >&2
  start=$SECONDS
  # qemu reopens /proc/self/fd/1 and /proc/self/fd/2 for the guest's output: a file (a CI log) would be written from
  # offset 0, over what is already there. Through pipes the output follows on. timeout signals its whole process
  # group: vng and the qemu it runs.
  exec 4> >(cat)
  out_pid=$!
  exec 5> >(cat >&2)
  err_pid=$!
  # timeout leads a process group of its own, out of reach of a terminal's ^C: an interrupt or a TERM of this script
  # is passed on to it (it signals the group), and the script waits for the VM to end.
  timeout -k 30 "$timeout_s" vng "${vng_args[@]}" "$@" --exec "/bin/bash $state/inner.sh" </dev/null >&4 2>&5 &
  vm_pid=$!
  interrupted=0
  trap 'interrupted=1; kill -TERM $vm_pid 2>/dev/null' INT TERM HUP
  wait $vm_pid
  vng_rc=$?
  while kill -0 $vm_pid 2>/dev/null; do wait $vm_pid; vng_rc=$?; done
  exec 4>&- 5>&-
  wait $out_pid $err_pid
  [ $interrupted = 1 ] && { echo "v2-vm: interrupted: the VM was stopped" >&2; exit 130; }
  elapsed=$((SECONDS - start))
}
run_vm
# Under TCG on a loaded host the guest kernel has died early in boot (qemu gone after 76 and 96 s, twice on one day,
# with the console hidden): once more, with the console shown, before the stage fails.
if [ ! -e "$state/booted" ] && [ $vng_rc -ne 124 ] && [ $vng_rc -ne 137 ] && [ $verbose = 0 ]; then
  echo "v2-vm: the VM did not boot (vng exited $vng_rc after ${elapsed}s): once more, its console shown" >&2
  run_vm --verbose
fi

if [ $vng_rc -eq 124 ] || [ $vng_rc -eq 137 ]; then
  echo "v2-vm: TIMEOUT: the VM was stopped after ${elapsed}s (limit ${timeout_s}s)$([ -e "$state/booted" ] || echo '; it never booted')" >&2
  exit 124
fi
if [ ! -e "$state/booted" ]; then
  die "FAILED: the VM did not boot (vng exited $vng_rc after ${elapsed}s; kernel $kernel). Rerun with --verbose to see its console."
fi
if [ ! -s "$state/rc" ]; then
  die "FAILED: the VM booted but the command did not report its exit status (vng exited $vng_rc after ${elapsed}s: a guest crash or panic?). Rerun with --verbose."
fi
rc="$(cat "$state/rc")"
echo "v2-vm: the command exited $rc; the VM ran ${elapsed}s" >&2
exit "$rc"
