#!/usr/bin/env bash
# Responsiveness to signals (issue 25): for each case, runs `mls -e CODE` (one BLAS thread), sends
# SIGINT (or SIGTERM) once the long statement is running, and prints the time from the signal to
# the process's exit, its status and where the error says it stopped. Nothing fails on a slow
# stop (tests/robustness/test_interrupt.sh tests, with bounds relative to each case's own time);
# the exit status is 1 only when a case ended before its signal, with a status other than
# 130/143, or printed "done" (the statement after the interrupted one ran).
#
#     bench/interrupt.sh ./mls          (make bench runs it after bench/run.sh)
#     BENCH_INTERRUPT_ONLY=REGEX        only the cases whose name matches
set -u
export LC_ALL=C
MLS=${1:-./mls}
[[ -e $MLS && $MLS != /* ]] && MLS=$(cd "$(dirname "$MLS")" && pwd)/$(basename "$MLS")
ONLY=${BENCH_INTERRUPT_ONLY:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
STATUS=0

now_us() { echo $(( $(date +%s%N) / 1000 )); }

# case NAME SIG DELAY CODE: the signal DELAY seconds after the start (enough for the setup)
case_() {
  local name=$1 sig=$2 delay=$3 code=$4
  [[ -n $ONLY && ! $name =~ $ONLY ]] && return
  OPENBLAS_NUM_THREADS=1 "$MLS" -e "$code" > "$T/out" 2> "$T/err" &
  local pid=$!
  sleep "$delay"
  if ! kill -0 $pid 2>/dev/null; then
    wait $pid
    printf '  %-44s %-7s ended before the signal: make it longer\n' "$name" "SIG$sig"
    STATUS=1
    return
  fi
  local t0=$(now_us)
  kill -"$sig" $pid
  wait $pid
  local rc=$? t1=$(now_us)
  local where=$(head -1 "$T/err" | sed -n 's/^-e:\(1:[0-9]*\): error: .*/\1/p')
  local note=""
  if grep -qx done "$T/out"; then note=" (\"done\" printed!)"; STATUS=1; fi
  if [[ $rc != 130 && $rc != 143 ]]; then note="$note (status $rc!)"; STATUS=1; fi
  printf '  %-44s %-7s %8.1f ms   status %3d at %-6s%s\n' "$name" "SIG$sig" "$(awk -v d=$((t1 - t0)) 'BEGIN { print d / 1000 }')" \
    "$rc" "${where:-?}" "$note"
}

echo "== signal to exit (one BLAS thread; the time includes freeing the process's memory)"
echo
case_ "rand(pdf=normal) of 10^8"              INT  1.0 'x = rand(rows=1e8, cols=1, seed=1, pdf="normal"); print("done")'
case_ "rep of 10^8"                           TERM 0.4 'x = rep(1:10, 1e7); print("done")'
case_ "matrix(0) of 10^8, filled by column"   INT  1.0 'x = seq(1, 1e8); y = matrix(x, rows=1e4, cols=1e4, byrow=FALSE); print("done")'
case_ "sample(10^8)"                          INT  1.0 'x = sample(1e8); print("done")'
case_ "order of 10^7 rows"                    INT  1.0 'x = order(rand(rows=1e7, cols=1, seed=1)); print("done")'
case_ "median of 2*10^7"                      INT  1.0 'x = rand(rows=2e7, cols=1, seed=1); m = median(x); print("done")'
case_ "quantile of 2*10^7"                    TERM 1.0 'x = rand(rows=2e7, cols=1, seed=1); q = quantile(x, [0.1; 0.9]); print("done")'
case_ "cumsum of 10^8 (and more scans)"       INT  1.0 'x = rand(rows=1e8, cols=1, seed=1); y = cumsum(x); y = cummax(y); y = cumsum(y); print("done")'
case_ "exp of 10^8 (parallel kernel)"         INT  1.0 'x = rand(rows=1e8, cols=1, seed=1); y = exp(x); y = exp(y); print("done")'
case_ "t(X) + 0 of 10^4 x 10^4 (strided copy)" INT 1.0 'x = rand(rows=1e4, cols=1e4, seed=1); y = t(x) + 0; y = t(y) + 0; print("done")'
case_ "x[i] gather of 10^8"                   INT  1.2 'x = rand(rows=1e8, cols=1, seed=1); y = x[seq(1e8, 1, -1)]; print("done")'
case_ "qt of 10^7 (quantile by bisection)"    INT  0.5 'x = rand(rows=1e7, cols=1, seed=1); y = qt(x, 5); print("done")'
case_ "t(A) %*% A, A 250000x600"              INT  1.5 'A = rand(rows=250000, cols=600, seed=1); S = t(A) %*% A; print("done")'
case_ "A %*% A, 4000x4000"                    INT  1.0 'A = rand(rows=4000, cols=4000, seed=1); B = A %*% A; print("done")'
case_ "eigen of 2500x2500 (LAPACK worker)"    INT  1.0 'A = rand(rows=2500, cols=2500, seed=1); S = A + t(A); E = eigen(S); print("done")'
case_ "jit of a 20000-iteration loop"         TERM 2.0 'f = function(x) { s = x; for (i in 1:20000) { s = s * 0.5 + x }; s }; jf = jit(f); y = jf(rand(rows=3, cols=3, seed=1)); print("done")'
case_ "toString of 5*10^6"                    INT  0.5 's = toString(1:5e6); print("done")'
case_ "write csv of 5*10^7 numbers"           INT  1.5 "x = rand(rows=1e7, cols=5, seed=1); write(x, \"$T/x.csv\", format=\"csv\"); print(\"done\")"
case_ "save of 2*10^8 numbers"                TERM 2.0 "x = rand(rows=1e8, cols=2, seed=1); save(\"$T/c.ckpt\", a=x); print(\"done\")"
case_ "plot of 10^6 points (png)"             INT  1.0 "x = rand(rows=1e6, cols=1, seed=1); plot(x, x, file=\"$T/p.png\"); plot(x, x, file=\"$T/q.png\"); print(\"done\")"
exit $STATUS
