#!/bin/sh
# run_examples.sh — runs examples/*.mls and tests/scripts/*.mls. Header lines of a script:
#   # args: WORDS       arguments after the script name ($TMP is a fresh temporary directory)
#   # check: REGEX      stdout must match REGEX (grep -E); the exit status must be 0
#   # run-by: FILE      the script needs inputs: FILE runs it (and must exist) instead
# $MLS_FLAGS (e.g. --staged) go before each script. Prints "N passed, N failed".
mls=${1:-./mls}
pass=0; fail=0
for f in examples/*.mls tests/scripts/*.mls; do
  [ -e "$f" ] || continue
  driver=$(grep -E '^# run-by: ' "$f" | head -1 | sed 's/^# run-by: //; s/ .*//')
  if [ -n "$driver" ]; then
    [ -e "$driver" ] || { echo "FAIL $f: its driver $driver is missing"; fail=$((fail+1)); }
    continue
  fi
  tmp=$(mktemp -d)
  args=$(grep -E '^# args: ' "$f" | head -1 | sed 's/^# args: //' | sed "s|\$TMP|$tmp|g")
  out=$("$mls" $MLS_FLAGS --seed 42 "$f" $args 2>&1); st=$?
  rm -rf "$tmp"
  ok=1
  [ $st -eq 0 ] || ok=0
  checks=$(grep -E '^# check: ' "$f" | sed 's/^# check: //')
  [ -n "$checks" ] || { ok=0; echo "  $f: no '# check:' line"; }
  echo "$checks" | while IFS= read -r rx; do
    [ -z "$rx" ] && continue
    echo "$out" | grep -Eq -- "$rx" || { echo "  $f: output lacks /$rx/"; exit 1; }
  done || ok=0
  if [ $ok = 1 ]; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAIL $f (exit $st)"; echo "$out" | tail -5; fi
done
echo "$pass passed, $fail failed"
[ $fail = 0 ]
