#!/bin/bash
# Signals stop long work (issues 12 and 25): SIGINT or SIGTERM sent to `mls -e CODE` while one long
# builtin, kernel, product or jit compile runs must end the run with the located "interrupted" /
# "terminated (SIGTERM)" error at that statement and status 130 / 143, and nothing after it may
# run: every CODE ends in print("done"), which must not print.
#
# The bound is relative, so that it holds on a loaded machine: each CODE is first run to its end
# (it must print "done"; its time U is measured under the same load), then run again with the
# signal sent at FRAC*U. That run must end before half of the time it still had to run has
# passed, FRAC*U + (1 - FRAC)*U/2 from its start, or 1 s after the signal when that is later.
# Each CODE takes a few seconds to its end here (2 cores). How fast the stop is, is measured
# by bench/interrupt.sh (make bench), not tested.
# Usage: tests/robustness/test_interrupt.sh ./mls        (INTERRUPT_ONLY=REGEX runs some cases)
set -u
MLS=$(realpath "${1:-./mls}")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0
ONLY=${INTERRUPT_ONLY:-}

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }

# measure CODE: sets U (ms) to its uninterrupted time; 0 when it failed
measure() {
  local t0=$(now_ms)
  OPENBLAS_NUM_THREADS=1 timeout 120 "$MLS" -e "$1" > "$T/out" 2> "$T/err"
  local rc=$?
  U=$(( $(now_ms) - t0 ))
  if [ $rc != 0 ] || ! grep -qx "done" "$T/out"; then
    echo "FAIL uninterrupted run: status $rc; stderr:"; head -3 "$T/err"; U=0; fail=1
  fi
}

# case SIG NAME FRAC CODE COLUMNS: COLUMNS is an ERE for the error's column (the statement that
# must be the one interrupted); runs after `measure CODE` has set U
case_sig() {
  local sig=$1 name=$2 frac=$3 code=$4 col=$5
  [ "$U" = 0 ] && { echo "FAIL $name: no uninterrupted time"; fail=1; return; }
  local at=$(awk -v u=$U -v f=$frac 'BEGIN { printf "%d", u * f }')
  local bound=$(awk -v u=$U -v a=$at 'BEGIN { b = a + (u - a) / 2; if (b < a + 1000) b = a + 1000; printf "%d", b }')
  local want rc_want
  if [ $sig = INT ]; then want="interrupted"; rc_want=130; else want="terminated \\(SIGTERM\\)"; rc_want=143; fi
  local t0=$(now_ms)
  OPENBLAS_NUM_THREADS=1 "$MLS" -e "$code" > "$T/out" 2> "$T/err" &
  local pid=$!
  sleep $(awk -v a=$at 'BEGIN { printf "%.3f", a / 1000 }')
  if ! kill -0 $pid 2>/dev/null; then echo "FAIL $name: ended before the signal"; fail=1; wait $pid; return; fi
  local ts=$(now_ms)
  kill -$sig $pid
  wait $pid; local rc=$?
  local t1=$(now_ms)
  local took=$(( t1 - t0 )) after=$(( t1 - ts ))
  if [ $rc = $rc_want ] && grep -Eq "^-e:1:($col): error: $want" "$T/err" && ! grep -qx "done" "$T/out" && [ $took -le $bound ]; then
    echo "ok   $name (SIG$sig at $at ms of $U: ended $after ms after it, bound $bound ms from the start)"
  else
    echo "FAIL $name: SIG$sig at $at ms of $U: status $rc, ended at $took ms (bound $bound ms); stdout: $(head -c 100 "$T/out"); stderr:"
    head -3 "$T/err"; fail=1
  fi
}

# both SIGINT and SIGTERM (one uninterrupted run for the two)
both() { measure "$3"; case_sig INT "$1" "$2" "$3" "$4"; case_sig TERM "$1" "$2" "$3" "$4"; }
one() { measure "$4"; case_sig "$1" "$2" "$3" "$4" "$5"; }

has() { [ -z "$ONLY" ] || [[ $1 =~ $ONLY ]]; }

# fills, which polled nothing: "done" printed and the status was 0 (issue 25, defect 4)
has "rand" && both "rand(pdf=\"normal\") of 8*10^7 then print" 0.4 'x = rand(rows=8e7, cols=1, seed=1, pdf="normal"); print("done")' 5
has "rep" && both "rep of 10^8 then print" 0.3 'x = rep(1:10, 1e7); print("done")' 5
# sorts, cumulative ops, long products
has "median" && one INT "median of 10^7" 0.3 'x = rand(rows=1e7, cols=1, seed=1); m = median(x); print("done")' 41
has "quantile" && one TERM "quantile of 10^7" 0.3 'x = rand(rows=1e7, cols=1, seed=1); q = quantile(x, [0.1; 0.9]); print("done")' 41
has "cumsum" && both "cumsum, cumprod, cummax, cummin of 5*10^7" 0.5 \
  'x = rand(rows=5e7, cols=1, seed=1); y = cumsum(x); y = cumprod(y); y = cummax(y); y = cummin(y); y = cumsum(y); print("done")' \
  '41|56|72|87|102'
has "t\\(A\\)" && both "t(A) %*% A, A 150000x600 (one result panel, cut along k)" 0.5 \
  'A = rand(rows=150000, cols=600, seed=1); S = t(A) %*% A; print("done")' 46
# (the if with an effect keeps the loop unrolled, not a loop node: the compile is what is timed)
has "jit" && both "a jit compile of a 100000-iteration loop" 0.4 \
  'f = function(x) { s = x; for (i in 1:100000) { s = s * 0.5 + x; if (i < 0) print(i) }; s }; jf = jit(f); y = jf(rand(rows=3, cols=3, seed=1)); print("done")' '[0-9]+'
# issue 12's cases
has "order" && one INT "order of 10^7 rows" 0.3 'x = order(rand(rows=1e7, cols=1, seed=1)); print("done")' 5
has "toString" && one INT "toString of 5*10^6 numbers" 0.3 's = toString(1:5e6); print("done")' 5
has "sample" && one TERM "sample of 3*10^7 from 10^15 (no repeats)" 0.3 'x = sample(1e15, 3e7, seed=1); print("done")' 5
has "paste" && one INT "paste of 5*10^6 numbers" 0.3 's = paste("a", 1:5e6); print("done")' 5
has "sprintf" && one INT "sprintf %s of 5*10^6 numbers" 0.3 's = sprintf("%s", 1:5e6); print("done")' 5
# a loop node whose body the lean runner runs (src/staging/lean.c): the interrupt is raised between
# iterations, located at the loop or at the op that saw it
has "lean" && both "a lean loop node of 2*10^7 iterations of 4x4 ops" 0.4 \
  'f = function(x, a) { s = x; for (i in 1:20000000) { x = tanh(x %*% a + 0.1); s = s + x }; s }; y = jit(f)(rand(rows=4, cols=4, seed=1), rand(rows=4, cols=4, seed=2) / 4); print("done")' '[0-9]+'
has "ranges" && one INT "a loop of ranges" 0.3 'for (i in 1:2500) { x = 1:2e6 }; print("done")' '1|25'
has "seq" && one TERM "a loop of seq" 0.3 'for (i in 1:2500) { x = seq(1, 2e6) }; print("done")' '1|25'
has "4000x4000" && one INT "a 4000x4000 matrix product" 0.5 'A = rand(rows=4000, cols=4000, seed=1); B = A %*% A; print("done")' 45
# LAPACK runs on a worker thread past 1e9 flops: the builtin ends at once, the worker alone
has "eigen" && one INT "eigen of 2500x2500" 0.4 'A = rand(rows=2500, cols=2500, seed=1); S = A + t(A); E = eigen(S); print("done")' 59
has "svd" && one TERM "svd of 2000x2000" 0.4 'A = rand(rows=2000, cols=2000, seed=1); D = svd(A); print("done")' 45
has "solve" && one INT "solve with 3000 right-hand sides" 0.4 'A = rand(rows=3000, cols=3000, seed=1); x = solve(A, A); print("done")' 45
# sparse factorizations (issue 28): CHOLMOD and UMFPACK cannot be stopped either, so each runs on
# such a worker: 3-D 7-point Laplacians (k^3 rows, a factor with much fill), symmetric positive
# definite (CHOLMOD) and with a convection term (UMFPACK's LU: solve and det). COL: the call's column.
lap() {   # lap K: the code that makes A (SPD) and N (not symmetric), n = K^3, ending in "; "
  echo "k = $1; n = k^3; i = seq(1, n); x = (i - 1) %% k; y = floor((i - 1) / k) %% k; a = i[x < k - 1]; b = i[y < k - 1]; c = i[i <= n - k * k]; p = c(i, a, a + 1, b, b + k, c, c + k * k); q = c(i, a + 1, a, b + k, b, c + k * k, c); o = rep(-1, 2 * length(b) + 2 * length(c)); A = table(p, q, c(rep(6.5, n), rep(-1, 2 * length(a)), o), n, n); N = table(p, q, c(rep(6.5, n), rep(-1.3, length(a)), rep(-0.7, length(a)), o), n, n); "
}
L=$(lap 44)
has "CHOLMOD" && one INT "sparse solve (CHOLMOD) of a 3-D Laplacian, 85184 rows" 0.5 "${L}s = solve(A, matrix(1, n, 1)); print(\"done\")" $(( ${#L} + 5 ))
L=$(lap 36)
has "UMFPACK" && one TERM "sparse solve (UMFPACK) of a 3-D convection-diffusion matrix, 46656 rows" 0.5 "${L}s = solve(N, matrix(1, n, 1)); print(\"done\")" $(( ${#L} + 5 ))
has "sparse det" && one INT "sparse det (UMFPACK) of the same" 0.5 "${L}d = det(N); print(\"done\")" $(( ${#L} + 5 ))
exit $fail
