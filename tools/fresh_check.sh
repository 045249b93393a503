#!/bin/sh
# fresh_check.sh — the README's set-up tried as a newcomer would: builds a clean Debian 12
# root with debootstrap, installs what the build machines ship (build-essential, python3,
# git, Debian's reference libblas-dev/liblapack-dev, libreadline-dev, zlib1g-dev), clones
# this checkout's HEAD into it, runs the README's test command there and prints its closing
# line. Root only; slow (minutes), so it is not part of `make test`.
#   tools/fresh_check.sh [DIR]     DIR: where the root goes (default /tmp/mls-fresh)
set -eu
[ "$(id -u)" = 0 ] || { echo "fresh_check: run as root (debootstrap and chroot need it)" >&2; exit 2; }
ROOT=${1:-/tmp/mls-fresh}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
REPO=$(cd "$(dirname "$0")/.." && pwd)
TESTCMD=$(sed -n 's/^make test *#.*/make test/p' "$REPO/README.md" | head -1)
[ -n "$TESTCMD" ] || { echo "fresh_check: no 'make test' line in README.md" >&2; exit 2; }
command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }

cleanup() {
  for m in dev/pts dev proc; do umount "$ROOT/$m" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM
cleanup
rm -rf "$ROOT"
echo "fresh_check: debootstrap bookworm into $ROOT"
debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR" >"$ROOT.log" 2>&1 ||
  { tail -20 "$ROOT.log"; exit 1; }
cp /etc/resolv.conf "$ROOT/etc/resolv.conf"
mount -t proc proc "$ROOT/proc"
mount --bind /dev "$ROOT/dev"
mount --bind /dev/pts "$ROOT/dev/pts"
in_root() { chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb PATH=/usr/sbin:/usr/bin:/sbin:/bin "$@"; }
echo "fresh_check: installing what the build machines ship"
in_root sh -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
  apt-get install -y -qq build-essential python3 git libblas-dev liblapack-dev libreadline-dev zlib1g-dev >/dev/null' \
  >>"$ROOT.log" 2>&1 || { tail -20 "$ROOT.log"; exit 1; }
git clone -q "$REPO" "$ROOT/root/mls"
echo "fresh_check: running '$TESTCMD' in the clean root (log: $ROOT/root/test.log)"
set +e
in_root sh -c "cd /root/mls && $TESTCMD" >"$ROOT/root/test.log" 2>&1
rc=$?
set -e
tail -1 "$ROOT/root/test.log"
echo "fresh_check: '$TESTCMD' exited with $rc"
exit $rc
