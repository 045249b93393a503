# lib.sh — the set-up the scripts of tests/staging share, sourced by each (". lib.sh" with the
# script's arguments): $mls, the interpreter to test ($1, else ./mls; made absolute, since some
# programs run in $tmp), $tmp, a folder removed at exit, and check NAME CONDITION, which prints
# ok or FAIL and sets $fail to 1 on a failure (each script ends with exit $fail).
set -u
mls=${1:-./mls}
case $mls in /*) ;; *) mls=$PWD/$mls ;; esac
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
