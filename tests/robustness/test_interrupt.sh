#!/bin/bash
# Ctrl-C stops long builtins (issue 12): SIGINT sent to `mls -e` while one long builtin runs must end
# it within a second, with the located "interrupted" error and status 130. Each case would run for
# several seconds uninterrupted. Usage: tests/robustness/test_interrupt.sh ./mls
set -u
MLS=$(realpath "${1:-./mls}")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

# case NAME CODE COLUMNS: runs CODE, sends SIGINT after 0.5 s, wants "-e:1:COLUMN: error: interrupted" (COLUMNS: an ERE)
case_int() {
  local name=$1 code=$2 col=$3
  OPENBLAS_NUM_THREADS=1 "$MLS" -e "$code" > "$T/out" 2> "$T/err" &
  local pid=$!
  sleep 0.5
  if ! kill -0 $pid 2>/dev/null; then echo "FAIL $name: ended before the signal (make the case longer)"; fail=1; return; fi
  local t0=$(date +%s%N)
  kill -INT $pid
  wait $pid; local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  if [ $rc = 130 ] && grep -Eq "^-e:1:($col): error: interrupted" "$T/err" && [ $ms -le 1000 ]; then
    echo "ok   $name (ended $ms ms after SIGINT)"
  else
    echo "FAIL $name: status $rc after $ms ms; stderr:"; head -3 "$T/err"; fail=1
  fi
}

case_int "order of 10^7 rows" 'x = order(rand(rows=1e7, cols=1, seed=1))' 5
case_int "toString of 5*10^6 numbers" 's = toString(1:5e6)' 5
case_int "sample of 2*10^7 from 10^15 (no repeats)" 'x = sample(1e15, 2e7, seed=1)' 5
case_int "paste of 5*10^6 numbers" 's = paste("a", 1:5e6)' 5
case_int "sprintf %s of 5*10^6 numbers" 's = sprintf("%s", 1:5e6)' 5
case_int "a loop of ranges" 'for (i in 1:100000) { x = 1:2e6 }' '1|27'
case_int "a loop of seq" 'for (i in 1:100000) { x = seq(1, 2e6) }' '1|27'
case_int "a 4000x4000 matrix product" 'A = rand(rows=4000, cols=4000, seed=1); B = A %*% A' 45
# LAPACK runs on a worker thread past 1e9 flops: the builtin ends at once, the worker alone
case_int "eigen of 2500x2500" 'A = rand(rows=2500, cols=2500, seed=1); S = A + t(A); E = eigen(S)' 59
case_int "svd of 2000x2000" 'A = rand(rows=2000, cols=2000, seed=1); D = svd(A)' 45
case_int "solve with 3000 right-hand sides" 'A = rand(rows=3000, cols=3000, seed=1); x = solve(A, A)' 45
exit $fail
