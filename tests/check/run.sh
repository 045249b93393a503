#!/bin/sh
# run.sh — mls --check (docs/check.md) must never report an error in a program that runs
# without one. Checked, each with its own files and arguments: every case of tests/lang and
# tests/dml/*.test (tests/check/check_cases.py, which also counts the failing cases whose error
# the check finds, and fails on a report of another error), the examples and tests/scripts,
# and every DML script the DML and nn suites run (a wrapper checks each before it runs; a
# report for a run that then succeeds fails). Then the golden cases of tests/lang/check.test.
# Usage: tests/check/run.sh [./mls]
set -u
mls=${1:-./mls}
case $mls in /*) ;; *) mls=$(pwd)/$mls ;; esac
lib=${MLS_PATH:-$(cd "$(dirname "$mls")" && pwd)/stdlib}
export MLS_PATH="$lib"
T=$(mktemp -d /tmp/mls-check.XXXXXX)
trap 'rm -rf "$T"' EXIT
fail=0

echo "== golden cases (tests/lang, tests/dml)"
/usr/bin/python3 tests/check/check_cases.py "$mls" tests/lang/*.test tests/dml/*.test || fail=1

echo "== examples and tests/scripts"
n=0
for f in examples/*.mls tests/scripts/*.mls; do
  grep -qE '^# run-by: ' "$f" && continue
  mkdir -p "$T/ex"
  args=$(grep -E '^# args: ' "$f" | head -1 | sed 's/^# args: //' | sed "s|\$TMP|$T/ex|g")
  # shellcheck disable=SC2086
  out=$("$mls" --check "$f" $args 2>&1); st=$?
  n=$((n + 1))
  if [ $st != 0 ] || [ -n "$out" ]; then fail=1; echo "FALSE REPORT $f (exit $st):"; echo "$out"; fi
done
echo "$n scripts checked"

echo "== the DML and nn suites, each script checked before it runs"
cat >"$T/mls" <<WRAP
#!/bin/sh
script=
for a; do
  case \$a in --run-tests|-e) exec "$mls" "\$@" ;; *.dml|*.mls) script=\$a ;; esac
done
[ -n "\$script" ] || exec "$mls" "\$@"
out=\$("$mls" --check "\$@" 2>&1); cst=\$?
"$mls" "\$@"; st=\$?
echo x >>"$T/count"
if [ \$st = 0 ] && { [ \$cst != 0 ] || [ -n "\$out" ]; }; then
  printf 'FALSE REPORT %s (runs without error, check exit %s):\n%s\n' "\$*" "\$cst" "\$out" >>"$T/false"
fi
exit \$st
WRAP
chmod +x "$T/mls"
tests/dml/run.sh "$T/mls" >"$T/dml.out" 2>&1 || { fail=1; echo "the DML suite failed through the wrapper:"; tail -20 "$T/dml.out"; }
tests/dml/nn/run.sh "$T/mls" >"$T/nn.out" 2>&1 || { fail=1; echo "the nn suite failed through the wrapper:"; tail -20 "$T/nn.out"; }
if [ -s "$T/false" ]; then fail=1; cat "$T/false"; fi
echo "$(wc -l <"$T/count") DML runs checked first"

echo "== no effect: nothing printed, written or plotted; -e and standard input"
mkdir -p "$T/fx"
cat >"$T/fx/t.mls" <<'MLS'
X = rand(rows = 3, cols = 3)
print("ran")
cat("ran\n")
write(X, "out.csv")
save("ck.bin", X)
plot([1, 2, 3])
dev.off()
Y = X + 1
MLS
(cd "$T/fx" && "$mls" --check t.mls >out 2>&1); st=$?
if [ $st != 0 ] || [ -s "$T/fx/out" ] || [ -e "$T/fx/out.csv" ] || [ -e "$T/fx/out.csv.mtd" ] || [ -e "$T/fx/ck.bin" ] ||
   ls "$T/fx" | grep -q '^mlsplot'; then
  fail=1; echo "FAIL --check ran an effect (exit $st):"; ls "$T/fx"; cat "$T/fx/out"
else echo "ok   --check runs no effect"; fi
got=$("$mls" --check -e 'x = [1, 2] %*% [3, 4]' 2>&1); st=$?
want="-e:1:5: error: non-conformable arguments for '%*%': 1x2 and 1x2"
if [ $st = 1 ] && [ "$(echo "$got" | head -1)" = "$want" ]; then echo "ok   --check -e"; else fail=1; echo "FAIL --check -e: $st $got"; fi
got=$(printf 'x = [1, 2]\ny = x[3]\n' | "$mls" --check - 2>&1); st=$?
want="<stdin>:2:5: error: index 3 out of bounds for 1x2 matrix (columns)"
if [ $st = 1 ] && [ "$(echo "$got" | head -1)" = "$want" ]; then echo "ok   --check -"; else fail=1; echo "FAIL --check -: $st $got"; fi
got=$("$mls" --check </dev/null 2>&1); st=$?      # (standard input that is not a terminal is the program)
if [ $st = 0 ] && [ -z "$got" ]; then echo "ok   --check of an empty program"; else fail=1; echo "FAIL --check of nothing: $st $got"; fi

echo "== tests/lang/check.test"
"$mls" --run-tests tests/lang/check.test || fail=1

[ $fail = 0 ] && echo "check: no false report" || echo "check: FAILED"
[ $fail = 0 ]
