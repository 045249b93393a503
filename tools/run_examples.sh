#!/bin/sh
# run_examples.sh — runs every examples/*.mls whose first lines name a check:
#   # check: REGEX      stdout must match REGEX (grep -E), exit status must be 0
# Prints "N passed, N failed".
mls=${1:-./mls}
pass=0; fail=0
for f in examples/*.mls; do
  [ -e "$f" ] || continue
  out=$("$mls" "$f" 2>&1); st=$?
  ok=1
  [ $st -eq 0 ] || ok=0
  for rx in $(grep -E '^# check: ' "$f" | sed 's/^# check: //' | tr ' ' '\001'); do
    rx=$(echo "$rx" | tr '\001' ' ')
    echo "$out" | grep -Eq "$rx" || { ok=0; echo "  $f: output lacks /$rx/"; }
  done
  if [ $ok = 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $f (exit $st)"; echo "$out" | tail -5; fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
