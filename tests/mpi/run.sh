#!/bin/sh
# run.sh — the MPI tests (issue 14, docs/mpi.md): the collectives, grad through allreduce against
# finite differences, parfor (mode=REMOTE) against for (1, 2 and 3 ranks), determinism across
# runs, data-parallel Fashion-MNIST training (2 ranks against one process, to 1e-12), and a
# failing rank ending the job with its rank and location. Skipped, with the reason, when mpirun
# is missing or mls was built without MPI. Usage: tests/mpi/run.sh [./mls] (set MLS_FLAGS to
# add flags such as --staged to every run).
set -u
mls=${1:-./mls}
case $mls in /*) ;; *) mls=$(pwd)/$mls ;; esac
D=tests/mpi
T=$(mktemp -d /tmp/mls-mpi.XXXXXX)
trap 'rm -rf "$T"' EXIT
flags=${MLS_FLAGS:-}
export MLS_PATH="${MLS_PATH:-$(cd "$(dirname "$mls")" && pwd)/stdlib}"
export OMPI_MCA_btl_vader_single_copy_mechanism=none   # containers: no CMA between ranks
# --allow-run-as-root: CI runs as root; --oversubscribe: more ranks than cores
MPIRUN="mpirun --allow-run-as-root --oversubscribe"

if ! command -v mpirun >/dev/null 2>&1; then
  echo "mpi-test: skipped: mpirun not found (install openmpi-bin and libopenmpi-dev, then make MPI=1)"
  exit 0
fi
n=$(timeout 60 $MPIRUN -np 2 "$mls" -e 'print(mpi_size())' 2>/dev/null | sort -u)
if [ "$n" != "2" ]; then
  echo "mpi-test: skipped: $mls runs as one process under mpirun (mpi_size() gave '$n'): it was built without MPI (make MPI=1)"
  exit 0
fi

pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL mpi: $1"; sed 's/^/  | /' "$T/err" | head -20; }

# each rank must print its line ending in $3, and the job succeed
for np in 1 2 3; do
  for t in collectives:"collectives ok" grad_fd:"match finite differences" parfor:"matches for"; do
    s=${t%%:*} want=${t#*:}
    # shellcheck disable=SC2086
    if timeout 120 $MPIRUN -np $np "$mls" $flags $D/$s.mls >"$T/out" 2>"$T/err" &&
       [ "$(grep -c "of $np: .*$want" "$T/out")" = "$np" ]; then ok; else bad "$s.mls with $np ranks"; cat "$T/out"; fi
  done
done

# determinism: the same bits on a second run (collectives prints its sum to 17 digits)
# shellcheck disable=SC2086
timeout 120 $MPIRUN -np 3 "$mls" $flags $D/collectives.mls 2>"$T/err" | sort >"$T/a"
# shellcheck disable=SC2086
timeout 120 $MPIRUN -np 3 "$mls" $flags $D/collectives.mls 2>"$T/err" | sort >"$T/b"
if [ -s "$T/a" ] && cmp -s "$T/a" "$T/b"; then ok; else bad "two runs with 3 ranks differ"; fi

# data-parallel training: one process, then 2 ranks with the same global batches
# shellcheck disable=SC2086
if "$mls" $flags $D/fashion_dp.mls -nvargs out="$T/one" >"$T/out" 2>"$T/err" &&
   timeout 300 $MPIRUN -np 2 "$mls" $flags $D/fashion_dp.mls -nvargs out="$T/two" >>"$T/out" 2>>"$T/err" &&
   "$mls" -e "a = read(\"$T/one_1.npy\"); b = read(\"$T/two_1.npy\"); c = read(\"$T/two_2.npy\")
     if (sum(b != c) > 0) stop(\"the two ranks' weights differ\")
     d = max(abs(a - b)); print(\"largest difference from one process: \" + d)
     if (!(d <= 1e-12)) stop(\"2 ranks differ from one process by \" + d)" >>"$T/out" 2>>"$T/err"; then
  ok
else bad "fashion_dp.mls: 2 ranks against one process"; cat "$T/out"; fi

# a failing rank: its rank and location, a non-zero status, no hang (timeout gives 124)
err_case() {
  c=$1 want=$2
  # shellcheck disable=SC2086
  timeout 60 $MPIRUN -np 2 "$mls" $flags $D/error.mls -nvargs case=$c >"$T/out" 2>"$T/err"
  st=$?
  if [ $st -ne 0 ] && [ $st -ne 124 ] && grep -q "^$want" "$T/err" && ! grep -q "not reached" "$T/out"; then ok
  else bad "error.mls case=$c: status $st, want a non-zero status and '$want'"; fi
}
err_case 1 "rank 2: tests/mpi/error.mls:8:28: error: non-conformable arguments for '%\*%'"
err_case 2 "rank 1: tests/mpi/error.mls:12:46: error: allreduce: not allowed inside parfor (mode=REMOTE)"
err_case 3 "rank 2: tests/mpi/error.mls:14:7: error: allreduce: the ranks' values differ in shape: rank 1 has a 1x2 matrix, rank 2 has a 2x2 matrix"

echo "mpi-test: $pass passed, $fail failed"
[ $fail -eq 0 ]
