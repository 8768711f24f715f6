#!/usr/bin/env bash
# Runs the README's two commands (scripts/bootstrap.sh, then scripts/test.sh) in a fresh Debian root made with
# mmdebstrap, as CI runs them (CI=1, root, clean environment, a clean clone of one commit): the check that the test
# command assumes nothing of the host's image. Needs root, mmdebstrap and the Debian mirror; the root takes ~13 GB.
#
# Usage: scripts/debian-root-test.sh [--suite trixie|bookworm] [--reuse] [--cmd 'SHELL CMD'] COMMIT [ROOT] [LOG]
#   COMMIT  a commit of this repository (or of $REPO) to clone into ROOT/work/headroom
#   ROOT    the root (default: /var/tmp/headroom-debian-root), made fresh unless --reuse (an existing one is removed
#           first, after checking that nothing is mounted under it)
#   LOG     the whole log, outside the root (default: ROOT.log)
#   --suite the Debian release (default trixie, Debian 13)
#   --reuse keep the existing root and clone (rerun in place)
#   --cmd   run this instead of the two commands (in /work/headroom inside the root), e.g. --cmd 'scripts/test.sh'
#           or --cmd 'ctest --test-dir build -R NAME --output-on-failure'
# Mounts (the root bound onto itself; proc; sys and dev rbinds made rslave; a tmpfs /run) are undone on exit and
# checked against /proc/mounts.
set -uo pipefail

repo="${REPO:-$(cd "$(dirname "$0")/.." && pwd)}"
reuse=0; suite=trixie; cmd=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reuse) reuse=1; shift ;;
    --suite) suite="${2:?}"; shift 2 ;;
    --cmd) cmd="${2:?}"; shift 2 ;;
    -*) echo "unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
commit="${1:?usage: $0 [--suite NAME] [--reuse] [--cmd CMD] COMMIT [ROOT] [LOG]}"
root="$(realpath -m "${2:-/var/tmp/headroom-debian-root}")"
log="$(realpath -m "${3:-$root.log}")"
[ "$(id -u)" = 0 ] || { echo "needs root" >&2; exit 2; }
case "$root" in /|/home|/root|/tmp|/var|/var/tmp|/work|"$repo"*) echo "refusing root $root" >&2; exit 2 ;; esac

mounted_under() { awk -v r="$root" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/mounts; }

cleanup() {
  local pid
  # Processes still running inside the root (daemons a test left behind): end them by id.
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$pid" = $$ ] && continue
    [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ] && kill -TERM "$pid" 2>/dev/null
  done
  sleep 1
  for pid in $(ls /proc | grep -E '^[0-9]+$'); do
    [ "$(readlink "/proc/$pid/root" 2>/dev/null)" = "$root" ] && kill -KILL "$pid" 2>/dev/null
  done
  local m
  for m in run dev sys proc; do
    if mountpoint -q "$root/$m"; then umount -R "$root/$m" 2>/dev/null || umount -R -l "$root/$m"; fi
  done
  # Anything else still mounted below the root (deepest first).
  for m in $(mounted_under | sort -r); do umount "$m" 2>/dev/null || umount -l "$m"; done
  if [ -n "$(mounted_under)" ]; then echo "WARNING: still mounted under $root:"; mounted_under; else echo "unmounted: nothing under $root"; fi
}

{
echo "=== debian-root-test: commit $(git -C "$repo" rev-parse "$commit") root $root log $log ($(date -Is))"
if [ $reuse = 0 ]; then
  if [ -e "$root" ]; then
    [ -z "$(mounted_under)" ] || { echo "refusing to remove $root: mounts under it"; mounted_under; exit 2; }
    rm -rf --one-file-system "$root"
  fi
  t0=$SECONDS
  mmdebstrap --variant=minbase --include=ca-certificates,git,sudo,procps,python3 "$suite" "$root" \
    "deb http://deb.debian.org/debian $suite main" \
    "deb http://deb.debian.org/debian $suite-updates main" \
    "deb http://deb.debian.org/debian-security $suite-security main" || { echo "mmdebstrap failed"; exit 3; }
  echo "mmdebstrap: $((SECONDS - t0)) s"
  mkdir -p "$root/work"
  git clone -q --no-hardlinks "$repo" "$root/work/headroom" &&
    git -C "$root/work/headroom" checkout -q --detach "$commit" || { echo "clone failed"; exit 3; }
  git -C "$root/work/headroom" log --oneline -1
fi
# A host behind a TLS-intercepting proxy trusts its CA (/usr/local/share/ca-certificates); the root gets the same
# trust, and pip is told to use the system's bundle. Nothing happens on a host without extra CAs.
extra_cas=(/usr/local/share/ca-certificates/*.crt)
if [ -e "${extra_cas[0]}" ]; then
  cp "${extra_cas[@]}" "$root/usr/local/share/ca-certificates/" &&
    chroot "$root" /usr/sbin/update-ca-certificates >/dev/null &&
    printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > "$root/etc/pip.conf" ||
    { echo "installing the host's extra CAs into the root failed"; exit 3; }
  echo "root trusts the host's extra CAs: ${extra_cas[*]##*/}"
fi
} 2>&1 | if [ $reuse = 1 ]; then tee -a "$log"; else tee "$log"; fi
[ "${PIPESTATUS[0]}" = 0 ] || exit 3

trap 'cleanup 2>&1 | tee -a "$log"' EXIT
trap 'exit 130' INT TERM
# The root is made a mount point of its own first: pivot_root needs one, and inside / is then a mount as on a real
# machine (sccache-dist's build server makes / a slave mount for its sandbox).
mount --bind "$root" "$root" && mount --make-rslave "$root"
mount -t proc proc "$root/proc"
mount --rbind /sys "$root/sys" && mount --make-rslave "$root/sys"
mount --rbind /dev "$root/dev" && mount --make-rslave "$root/dev"
mount -t tmpfs -o mode=755,nosuid,nodev tmpfs "$root/run"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"

[ -n "$cmd" ] || cmd='{ time scripts/bootstrap.sh; }; rc=$?; echo "=== bootstrap.sh exit $rc"; [ $rc = 0 ] || exit $rc
{ time scripts/test.sh; }; rc=$?; echo "=== test.sh exit $rc"; exit $rc'
inner=(/usr/bin/env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb CI=1
       LANG=C.UTF-8 /bin/bash -c "cd /work/headroom && $cmd")
t0=$SECONDS
echo "=== running in $root (pivot_root, Debian $suite): $cmd ($(date -Is))" | tee -a "$log"
# Entered with pivot_root in private mount and pid namespaces, not chroot: a chrooted process may not create user
# namespaces (bubblewrap, which sccache-dist's build server sandboxes compiles with, needs them), and anything a test
# leaves running ends with the namespace. The namespace's own /proc shows its pids.
unshare --mount --propagation private --pid --fork -- /bin/bash -c '
  set -e; cd "$1"; shift
  mkdir -p .oldroot; pivot_root . .oldroot; cd /; umount -l /.oldroot; rmdir /.oldroot
  mount -t proc proc /proc
  exec "$@"' _ "$root" "${inner[@]}" </dev/null 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
echo "=== exit $rc, wall $((SECONDS - t0)) s ($(date -Is))" | tee -a "$log"
exit $rc
