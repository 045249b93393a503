#!/bin/sh
# run.sh — the MPI tests (issue 14, docs/mpi.md): the collectives, grad through allreduce against
# finite differences, parfor (mode=REMOTE) against for (1, 2 and 3 ranks), determinism across
# runs, the allreduce's tree of additions (1 to 5 ranks), nn::dp_grad's buckets, GPU matrices
# (the simulated GPU: staged through pinned memory and as device buffers), data-parallel Fashion-MNIST training (2 ranks against one process, to 1e-12), a
# failing rank ending the job with its rank and location, and ranks calling different
# collectives, or not arriving within --mpi-timeout, ending it with a located error on each. Skipped, with the reason, when mpirun
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
bad() { fail=$((fail + 1)); echo "FAIL mpi: $1"; sed "s/^/  | /" "$T/err" | head -40; }

# each rank must print its line ending in $3, and the job succeed
for np in 1 2 3; do
  for t in collectives:"collectives ok" grad_fd:"match finite differences" parfor:"matches for"; do
    s=${t%%:*} want=${t#*:}
    # shellcheck disable=SC2086
    if timeout 120 $MPIRUN -np $np "$mls" $flags $D/$s.mls >"$T/out" 2>"$T/err" &&
       [ "$(grep -c "of $np: .*$want" "$T/out")" = "$np" ]; then ok; else bad "$s.mls with $np ranks"; cat "$T/out"; fi
  done
done

# 4, 5 and 6 ranks: the first counts whose tree of additions (docs/mpi.md) is not the rank order
# (4: a power of two, 5 and 6: one and two pairs folded first); every rank must print the same sums
for np in 4 5 6; do
  # shellcheck disable=SC2086
  if timeout 120 $MPIRUN -np $np "$mls" $flags $D/collectives.mls >"$T/out" 2>"$T/err" &&
     [ "$(grep -c "of $np: .*collectives ok" "$T/out")" = "$np" ] &&
     [ "$(sed -n 's/.*collectives ok; //p' "$T/out" | sort -u | wc -l)" = 1 ]; then ok
  else bad "collectives.mls with $np ranks"; cat "$T/out"; fi
done

# nn::dp_grad's buckets (buckets.mls): the bits of the unbucketed reduction for every bucket size,
# the same on every rank; with 2 and 4 ranks, MLS_MPI_LOG=1 must show buckets under way while the
# backward pass still ran (also with --staged: dp_grad itself is not traced there)
for np in 1 2 3 4; do
  # shellcheck disable=SC2086
  if MLS_MPI_LOG=1 timeout 120 $MPIRUN -np $np -x MLS_MPI_LOG "$mls" $flags $D/buckets.mls >"$T/out" 2>"$T/err" &&
     [ "$(grep -c "of $np: buckets ok" "$T/out")" = "$np" ] &&
     [ "$(sed -n 's/.*buckets ok; //p' "$T/out" | sort -u | wc -l)" = 1 ]; then
    if [ $np = 1 ] || grep -q "in 8 buckets, [1-9] under way during the backward pass" "$T/err"; then ok
    else bad "buckets.mls with $np ranks: no bucket under way during the backward pass"; fi
  else bad "buckets.mls with $np ranks"; cat "$T/out"; fi
done

# matrices on the GPU (docs/mpi.md "GPU buffers"), on the simulated GPU (MLS_SIM_GPU=1): allreduce
# and grad_allreduce of device matrices keep them on the device with the bits of the host's
# reduction, staged through pinned host memory (MLS_MPI_CUDA_AWARE=0) and handed to MPI as device
# buffers, the device adding (=1: the simulated GPU's memory is host memory, which any MPI reads);
# unset, MPIX_Query_cuda_support() decides (either log line)
staged="staged through pinned host memory" direct="reduced in device buffers (CUDA-aware MPI)"
for np in 1 2 3 4; do
  for aw in 0 1 auto; do
    { [ $aw = auto ] && [ $np != 2 ]; } && continue
    want=$staged; [ $aw = 1 ] && want=$direct; [ $aw = auto ] && want="\($staged\|$direct\)"
    envs="MLS_SIM_GPU=1 MLS_MPI_LOG=1" xs="-x MLS_SIM_GPU -x MLS_MPI_LOG"
    [ $aw = auto ] || { envs="$envs MLS_MPI_CUDA_AWARE=$aw"; xs="$xs -x MLS_MPI_CUDA_AWARE"; }
    # shellcheck disable=SC2086
    if env $envs timeout 120 $MPIRUN -np $np $xs "$mls" $flags --device gpu $D/device.mls >"$T/out" 2>"$T/err" &&
       [ "$(grep -c "of $np: device ok" "$T/out")" = "$np" ] &&
       [ "$(sed -n 's/.*device ok; //p' "$T/out" | sort -u | wc -l)" = 1 ]; then
      if [ $np = 1 ] || { grep -q "^allreduce at .*: 3003 numbers on the sim device, $want" "$T/err" &&
                          grep -q "in 6 buckets, [1-9] under way during the backward pass, on the device sim: $want" "$T/err"; }
      then ok
      else bad "device.mls with $np ranks, MLS_MPI_CUDA_AWARE=$aw: the log lacks '$want'"; fi
    else bad "device.mls with $np ranks, MLS_MPI_CUDA_AWARE=$aw"; cat "$T/out"; fi
  done
done

# determinism: the same bits on a second run (collectives prints its sums to 17 digits)
# shellcheck disable=SC2086
timeout 120 $MPIRUN -np 4 "$mls" $flags $D/collectives.mls 2>"$T/err" | sort >"$T/a"
# shellcheck disable=SC2086
timeout 120 $MPIRUN -np 4 "$mls" $flags $D/collectives.mls 2>"$T/err" | sort >"$T/b"
if [ -s "$T/a" ] && cmp -s "$T/a" "$T/b"; then ok; else bad "two runs with 4 ranks differ"; fi

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

# mismatched collectives (issue 25): every rank ends with its own located error naming what
# each rank called, and the job ends non-zero by itself (timeout 60 only guards against a hang)
F=$D/mismatch.mls
# mm NP CASE OPTIONS WANT1 WANTREST: rank 1's first error line must be WANT1, every other
# rank's WANTREST (each "LINE:COL: error: MESSAGE" after "rank R: $F:")
mm() {
  np=$1 c=$2 opts=$3 w1=$4 wr=$5
  # shellcheck disable=SC2086
  timeout 60 $MPIRUN -np "$np" "$mls" $flags $opts $F -nvargs case=$c >"$T/out" 2>"$T/err"
  st=$?
  good=1
  { [ $st -ne 0 ] && [ $st -ne 124 ]; } || good=0
  ! grep -q "not reached" "$T/out" || good=0
  for r in $(seq 1 "$np"); do
    w=$wr; [ "$r" = 1 ] && w=$w1
    grep -Fqx "rank $r: $F:$w" "$T/err" || { good=0; echo "  rank $r lacks: rank $r: $F:$w"; }
  done
  if [ $good = 1 ]; then ok; else bad "mismatch.mls case=$c with $np ranks: status $st"; fi
}
# "rank 1 X at L1, rank 2 Y at L2, ..., rank NP Y at L2": rank 1 calls one thing, the rest another
sides() { s="rank 1 $2 at $F:$3"; for r in $(seq 2 "$1"); do s="$s, rank $r $4 at $F:$5"; done; echo "$s"; }
for np in 2 3; do
  l=$(sides "$np" 'called allreduce(op="sum")' 11:19 'called barrier()' 11:37)
  mm "$np" 1 "" "11:19: error: allreduce: the ranks called different collectives: $l" \
    "11:37: error: barrier: the ranks called different collectives: $l"
  l=$(sides "$np" 'called allreduce(op="sum")' 13:19 'called bcast(root=1)' 13:41)
  mm "$np" 2 "" "13:19: error: allreduce: the ranks called different collectives: $l" \
    "13:41: error: bcast: the ranks called different collectives: $l"
  w="15:7: error: bcast: the ranks name different roots: rank 1 has root=1 at $F:15:7, rank 2 has root=2 at $F:15:7"
  mm "$np" 3 "" "$w" "$w"
  w="the ranks' reductions differ: rank 1 has op=\"sum\" at $F:17:19, rank 2 has op=\"max\" at $F:17:53"
  mm "$np" 4 "" "17:19: error: allreduce: $w" "17:53: error: allreduce: $w"
  l=$(sides "$np" 'called barrier()' 19:15 'reached the end of its script' 35:36)
  mm "$np" 5 "" "19:15: error: barrier: the ranks called different collectives: $l" \
    "35:36: error: the end of the script: the ranks called different collectives: $l"
  w="28:7: error: allreduce: the ranks' values differ in shape: rank 1 has a 2x1 matrix, rank 2 has a 2x2 matrix"
  mm "$np" 8 "" "$w" "$w"
  # grad_allreduce (nn::dp_grad's buckets): the same checks before any bucket moves
  w="31:22: error: grad_allreduce: the ranks' bucket sizes differ: rank 1 has bucket=1 at $F:31:22, rank 2 has bucket=2 at $F:31:22"
  mm "$np" 9 "" "$w" "$w"
  l=$(sides "$np" 'called grad_allreduce(bucket=65536)' 32:37 'called barrier()' 32:98)
  mm "$np" 10 "" "32:37: error: grad_allreduce: the ranks called different collectives: $l" \
    "32:98: error: barrier: the ranks called different collectives: $l"
  w="33:23: error: grad_allreduce: the ranks' parameters differ in shape: rank 1 has 4 numbers at $F:33:23, rank 2 has 6 at $F:33:23"
  mm "$np" 11 "" "$w" "$w"
done

# --mpi-timeout: rank 2 never reaches the barrier; the others name it and the job ends
# shellcheck disable=SC2086
timeout 60 $MPIRUN -np 3 "$mls" $flags --mpi-timeout 2 $F -nvargs case=6 >"$T/out" 2>"$T/err"
st=$?
w="$F:22:3: error: barrier: timed out after 2 s (--mpi-timeout) waiting for rank 2, which did not reach a collective"
if [ $st -ne 0 ] && [ $st -ne 124 ] && { grep -Fqx "rank 1: $w" "$T/err" || grep -Fqx "rank 3: $w" "$T/err"; }; then ok
else bad "mismatch.mls case=6 (--mpi-timeout 2, 3 ranks): status $st"; fi
# the same limit from $MLS_MPI_TIMEOUT
# shellcheck disable=SC2086
MLS_MPI_TIMEOUT=1 timeout 60 $MPIRUN -np 2 -x MLS_MPI_TIMEOUT "$mls" $flags $F -nvargs case=6 >"$T/out" 2>"$T/err"
st=$?
w="$F:22:3: error: barrier: timed out after 1 s (--mpi-timeout) waiting for rank 2, which did not reach a collective"
if [ $st -ne 0 ] && [ $st -ne 124 ] && grep -Fqx "rank 1: $w" "$T/err"; then ok
else bad "mismatch.mls case=6 (MLS_MPI_TIMEOUT=1, 2 ranks): status $st"; fi

# a rank that stalls inside grad_allreduce's step, after its header exchange: --mpi-timeout bounds
# the data phase too, and rank 1, whose partner it is, names it (rank 3 names rank 1, for which it waits)
S=$D/stall.mls
# shellcheck disable=SC2086
timeout 60 $MPIRUN -np 3 "$mls" $flags --mpi-timeout 2 $S -nvargs case=1 >"$T/out" 2>"$T/err"
st=$?
w="rank 1: $S:13:7: error: grad_allreduce: timed out after 2 s (--mpi-timeout) waiting for rank 2's part of the reduction"
if [ $st -ne 0 ] && [ $st -ne 124 ] && grep -Fqx "$w" "$T/err"; then ok
else bad "stall.mls case=1 (a rank stalls in grad_allreduce, --mpi-timeout 2): status $st"; fi

# a rank killed (SIGKILL) in the middle of a training step: the job ends (the 60 s timeout is the
# hang guard) and mpirun names the rank, in Open MPI's 0-based numbering ("process rank 1" is rank 2)
# shellcheck disable=SC2086
timeout 60 $MPIRUN -np 3 "$mls" $flags $S -nvargs case=2 >"$T/out" 2>"$T/err" &
job=$!
for _ in $(seq 1 600); do grep -q "rank 2 trains" "$T/out" 2>/dev/null && break; sleep 0.1; done
sleep 0.3
for mp in $(pgrep -P "$job"); do
  for p in $(pgrep -P "$mp"); do
    tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && kill -KILL "$p"
  done
done
wait "$job"
st=$?
if [ $st -ne 0 ] && [ $st -ne 124 ] && grep -q "process rank 1 .*exited on signal 9" "$T/err"; then ok
else bad "stall.mls case=2: rank 2 killed mid-step: status $st"; fi

# SIGTERM and SIGINT (Ctrl-C) sent to rank 1 while it waits in barrier() stop it there, with
# its location (the signal goes to the rank itself: the child of mpirun whose
# OMPI_COMM_WORLD_RANK is 0; a signal to mpirun can end it before it forwards the reports)
for sig in TERM INT; do
  # shellcheck disable=SC2086
  timeout 60 $MPIRUN -np 2 "$mls" $flags $F -nvargs case=7 >"$T/out" 2>"$T/err" &
  job=$!
  for _ in $(seq 1 600); do grep -q "rank 1 waits" "$T/out" 2>/dev/null && break; sleep 0.1; done
  sleep 0.5                              # (it printed that just before calling barrier())
  for mp in $(pgrep -P "$job"); do
    for p in $(pgrep -P "$mp"); do
      tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=0 && kill -"$sig" "$p"
    done
  done
  wait "$job"
  st=$?
  w="terminated (SIGTERM)"; [ $sig = INT ] && w="interrupted"
  if [ $st -ne 0 ] && [ $st -ne 124 ] && grep -Fqx "rank 1: $F:24:40: error: $w" "$T/err"; then ok
  else bad "mismatch.mls case=7: SIG$sig to rank 1 waiting in barrier(): status $st"; fi
done

echo "mpi-test: $pass passed, $fail failed"
[ $fail -eq 0 ]
