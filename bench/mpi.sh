#!/usr/bin/env bash
# bench/mpi.sh — MPI data-parallel training (issue 14, docs/mpi.md): one epoch of Fashion-MNIST
# (global batches of 100) as one process and as 2 ranks under mpirun, best of BENCH_MPI_ROUNDS
# processes each, with the per-step compute and allreduce times; then the paper estimate for
# 64 machines (docs/mpi.md "Scaling to 64 machines") from the measured one-process compute time;
# then bench/mpi_netns.sh: the allreduce and step measured with ranks in network namespaces against
# the model (root only), and the model's 64-machine figure.
# `make bench` runs it after bench/run.sh (`make bench-mpi` alone). Usage: bench/mpi.sh [./mls]
#   BENCH_MPI_ROUNDS=3  BENCH_MPI_MLP_STEPS=200  BENCH_FASHION=/usr/share/datasets/fashion-mnist/
#   BENCH_NET_GBPS=10 (link bandwidth, Gbit/s)  BENCH_NET_LAT_US=20 (latency per message, us)
set -u
export LC_ALL=C
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MLS=${1:-./mls}
[[ $MLS != /* ]] && MLS=$(cd "$(dirname "$MLS")" && pwd)/$(basename "$MLS")
export MLS_PATH=${MLS_PATH:-$(dirname "$MLS")/stdlib}
ROUNDS=${BENCH_MPI_ROUNDS:-3}
MLP_STEPS=${BENCH_MPI_MLP_STEPS:-200}
DATA=${BENCH_FASHION:-/usr/share/datasets/fashion-mnist/}
GBPS=${BENCH_NET_GBPS:-10}
LAT=${BENCH_NET_LAT_US:-20}
# one BLAS thread per rank, and the same for the one-process run: the ranks do not fight over cores
export OPENBLAS_NUM_THREADS=1
MPIRUN=(mpirun --allow-run-as-root --oversubscribe)

echo "== (i) MPI data-parallel training on Fashion-MNIST: one epoch, global batch 100 (best of $ROUNDS processes)"
if ! command -v mpirun >/dev/null 2>&1; then echo "  skipped: mpirun not found (openmpi-bin)"; exit 0; fi
if [[ ! -r $DATA/train-images-idx3-ubyte.gz ]]; then echo "  skipped: Fashion-MNIST not found in $DATA (set BENCH_FASHION)"; exit 0; fi
n=$("${MPIRUN[@]}" -np 2 "$MLS" -e 'print(mpi_size())' 2>/dev/null | sort -u)
if [[ $n != 2 ]]; then echo "  skipped: $MLS was built without MPI (make MPI=1)"; exit 0; fi

# best ROUNDS line by epoch_s: run NP MODEL STEPS
best() {
  local np=$1 model=$2 steps=$3 r line bestline="" bt=""
  for (( r = 1; r <= ROUNDS; r++ )); do
    if (( np == 1 )); then line=$("$MLS" --threads 1 "$HERE/mpi_epoch.mls" -nvargs model="$model" steps="$steps" data="$DATA" 2>&1 | grep '^ranks')
    else line=$("${MPIRUN[@]}" -np "$np" "$MLS" --threads 1 "$HERE/mpi_epoch.mls" -nvargs model="$model" steps="$steps" data="$DATA" 2>&1 | grep '^ranks'); fi
    [[ -z $line ]] && { echo "  FAILED: $np ranks, $model" >&2; return 1; }
    local t; t=$(awk '{for (i = 1; i < NF; i++) if ($i == "epoch_s") print $(i + 1)}' <<<"$line")
    if [[ -z $bt ]] || awk -v a="$t" -v b="$bt" 'BEGIN { exit !(a < b) }'; then bt=$t; bestline=$line; fi
  done
  echo "$bestline"
}
field() { awk -v k="$2" '{for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}' <<<"$1"; }

printf '  %-8s %6s %6s %10s %12s %13s %9s %9s\n' model ranks steps "epoch s" "compute ms" "allreduce ms" doubles accuracy
status=0
declare -A C1 D1
for model in logreg mlp; do
  steps=600; [[ $model == mlp ]] && steps=$MLP_STEPS
  for np in 1 2; do
    line=$(best "$np" "$model" "$steps") || { status=1; continue; }
    printf '  %-8s %6s %6s %10s %12s %13s %9s %9s\n' "$model" "$np" "$(field "$line" steps)" "$(field "$line" epoch_s)" \
      "$(field "$line" compute_ms)" "$(field "$line" allreduce_ms)" "$(field "$line" doubles)" "$(field "$line" acc)"
    if (( np == 1 )); then C1[$model]=$(field "$line" compute_ms); D1[$model]=$(field "$line" doubles); fi
  done
done
echo "  (2 ranks on this shared 2-core machine: the point is correctness and overhead; allreduce ms"
echo "   includes waiting for the slower rank. The accuracies of 1 and 2 ranks agree: same weights.)"
echo
echo "  paper estimate for P = 64 machines, ${GBPS} Gbit/s links, ${LAT} us per message (docs/mpi.md):"
echo "    V = 8 d bytes per step; t_c = measured one-process compute per step of 100 rows"
echo "    MLS's allreduce (recursive halving + doubling, a fixed tree): t_rhd = 2 log2(P) a + 2 (P-1)/P V/b"
echo "    the rank-order scheme it replaced (gather to rank 1 + bcast):   t_ord = (P-1 + log2 P)(a + V/b)"
echo "    weak scaling (100 rows per machine, global batch 6400): speedup = P t_c / (t_c + t_comm)"
echo "    rows for 0.8 P: the rows per machine at which t_c (taken as linear in the rows) reaches 4 t_rhd"
printf '  %-8s %9s %9s %10s %10s %12s %12s %14s\n' model "V KB" "t_c ms" "t_ord ms" "t_rhd ms" "speedup ord" "speedup rhd" "rows for 0.8P"
for model in logreg mlp; do
  [[ -z ${C1[$model]:-} ]] && continue
  awk -v d="${D1[$model]}" -v tc="${C1[$model]}" -v g="$GBPS" -v lat="$LAT" -v m="$model" 'BEGIN {
    P = 64; V = 8 * d; b = g * 1e9 / 8 / 1e3; a = lat / 1e3          # b: bytes per ms; a: ms
    lg = log(P) / log(2)
    tord = (P - 1 + lg) * (a + V / b)
    trhd = 2 * lg * a + 2 * (P - 1) / P * V / b
    printf "  %-8s %9.1f %9.3f %10.2f %10.2f %12.1f %12.1f %14.0f\n", m, V / 1024, tc, tord, trhd, P * tc / (tc + tord), P * tc / (tc + trhd), 100 * 4 * trhd / tc }'
done
echo
"$HERE/mpi_netns.sh" "$MLS" || status=1
exit $status
