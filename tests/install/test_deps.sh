#!/bin/sh
# test_deps.sh — tools/deps.sh against stand-ins of dpkg-query and apt-get (no package is
# installed): a package whose triggers are pending counts as installed; --install waits while
# another process holds the apt lock, then installs; it gives up after DEPS_LOCK_WAIT seconds
# with apt-get's own message; any other apt-get error fails at once; a non-root user is told
# what to install. Usage: tests/install/test_deps.sh
set -u
T=$(mktemp -d /tmp/mls-deps.XXXXXX)
trap 'rm -rf "$T"' EXIT
deps=$(cd "$(dirname "$0")/../.." && pwd)/tools/deps.sh
mkdir "$T/bin"
# dpkg-query -W -f='${Status}' PKG: the status line from $T/status ("PKG STATUS..."), else none
cat > "$T/bin/dpkg-query" <<'STUB'
#!/bin/sh
for p; do :; done
line=$(grep "^$p " "$STATUS_FILE" | tail -n 1); [ -n "$line" ] || exit 1
printf '%s' "${line#* }"
STUB
# apt-get: fails as a held lock while $T/locked holds a count above 0 (each call takes one off),
# with $T/error's text when that exists; an install marks its packages installed
cat > "$T/bin/apt-get" <<'STUB'
#!/bin/sh
echo "apt-get $*" >> "$APT_LOG"
if [ -f "$ERROR_FILE" ]; then cat "$ERROR_FILE" >&2; exit 100; fi
n=$(cat "$LOCK_FILE" 2>/dev/null || echo 0)
if [ "$n" -gt 0 ]; then
  echo $((n - 1)) > "$LOCK_FILE"
  echo "E: Could not get lock /var/lib/dpkg/lock-frontend. It is held by process 4242 (apt-get)" >&2
  exit 100
fi
case " $* " in *" install "*) for p; do case $p in -*|install) ;; *) echo "$p install ok installed" >> "$STATUS_FILE" ;; esac; done ;; esac
exit 0
STUB
chmod +x "$T/bin/dpkg-query" "$T/bin/apt-get"
export PATH="$T/bin:$PATH" STATUS_FILE="$T/status" APT_LOG="$T/apt.log" LOCK_FILE="$T/locked" ERROR_FILE="$T/error"
export DEPS_LOCK_POLL=0
pass=0 fail=0
check() {   # NAME CONDITION-RESULT
  if [ "$2" = 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL test_deps: $1"; sed 's/^/  /' "$T/out" "$T/err" 2>/dev/null; fi
}
reset() { printf 'pkga install ok installed\npkgb install ok triggers-pending\npkgd install ok triggers-awaited\npkgc deinstall ok config-files\n' > "$T/status"; rm -f "$T/apt.log" "$T/locked" "$T/error"; }

reset
DEPS_PKGS="pkga pkgb pkgd" DEPS_UID=0 sh "$deps" --install > "$T/out" 2> "$T/err"
check "installed and triggers-pending/awaited packages need nothing" $(( $? != 0 || $(test -f "$T/apt.log"; echo $?) == 0 ))

reset
echo 3 > "$T/locked"
DEPS_PKGS="pkga pkgc" DEPS_UID=0 sh "$deps" --install > "$T/out" 2> "$T/err"
rc=$?
check "a held lock is waited for, then the package installs" $(( rc != 0 ))
check "the wait is said once" $(( $(grep -c "waiting for the apt lock" "$T/err") != 1 ))
check "apt-get waits on dpkg's lock itself too" $(( $(grep -c "DPkg::Lock::Timeout" "$T/apt.log") < 2 ))
check "pkgc installed" $(( $(grep -c "^pkgc install ok installed" "$T/status") != 1 ))

reset
echo 1000 > "$T/locked"
DEPS_LOCK_WAIT=3 DEPS_LOCK_POLL=1 DEPS_PKGS="pkgc" DEPS_UID=0 sh "$deps" --install > "$T/out" 2> "$T/err"
rc=$?
check "a lock held too long fails" $(( rc != 1 ))
check "... with apt-get's message and deps' own" $(( $(grep -c "Could not get lock" "$T/err") != 1 || $(grep -c "deps: apt-get failed" "$T/err") != 1 ))

reset
echo "E: Unable to locate package pkgc" > "$T/error"
DEPS_PKGS="pkgc" DEPS_UID=0 sh "$deps" --install > "$T/out" 2> "$T/err"
rc=$?
check "another apt-get error fails at once" $(( rc != 1 || $(grep -c "waiting" "$T/err") != 0 || $(wc -l < "$T/apt.log") != 1 ))
check "... showing apt-get's message" $(( $(grep -c "Unable to locate package pkgc" "$T/err") != 1 ))

reset
DEPS_PKGS="pkga pkgc" DEPS_UID=1000 sh "$deps" --install > "$T/out" 2> "$T/err"
rc=$?
check "a user that is not root is told what to install" $(( rc != 1 || $(grep -c "missing packages: pkgc" "$T/err") != 1 || $(test -f "$T/apt.log"; echo $?) == 0 ))

echo "test_deps: $pass passed, $fail failed"
[ "$fail" = 0 ]
