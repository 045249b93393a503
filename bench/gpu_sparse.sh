#!/usr/bin/env bash
# bench/gpu_sparse.sh — part of `make bench-gpu` (bench/gpu.sh runs it last; it also runs
# alone): the product of a sparse matrix and a GPU matrix, C = X %*% W with X 10^5 x 10^4 at
# densities 1e-3, 1e-2 and 0.1 and W 10^4 x 100, float64: MLS (X stored sparse on the host,
# W on the GPU: cuSPARSE's SpMM, X uploaded by the first product) against PyTorch's
# torch.sparse.mm with X in CSR and in COO on the same GPU, side by side in one run. Per
# density: the best of REPS products of each, the ratios MLS/torch (time: below 1 is MLS
# faster), and MLS's first product apart (it uploads X). Each program checks itself (sum(C)
# against the same sum taken another way; C on the GPU): a failed check prints FAIL and the
# exit status is 1.
# Without a GPU it prints why and exits 0 (skipped); without a PyTorch that has CUDA it runs
# MLS's part alone. BENCH_GPU_SPARSE_SCALE=s scales both sizes of X (0.01: 1000 x 100), so
# that MLS's part runs on the simulated GPU (MLS_SIM_GPU=1) as a check of this script;
# BENCH_GPU_SPARSE_REPS (default 10) the timed products.
set -u
export LC_ALL=C
MLS=${1:-./mls}
PY=${PYTHON:-python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SCALE=${BENCH_GPU_SPARSE_SCALE:-1}
REPS=${BENCH_GPU_SPARSE_REPS:-10}
ROWS=$(awk "BEGIN { printf \"%d\", 100000 * $SCALE }")
COLS=$(awk "BEGIN { printf \"%d\", 10000 * $SCALE }")
K=100
status=0
if ! why=$("$MLS" --device gpu -e 'x = 1' 2>&1); then
  echo "sparse x GPU product: skipped (${why#mls: })"
  exit 0
fi
torch=1
"$PY" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || { torch=0; echo "sparse x GPU product: no torch with CUDA for $PY: MLS alone"; }
val() { echo "$1" | awk -v k="$2" '$1 == k { print $2; exit }'; }
minv() { echo "$1" | awk -v k="$2" '$1 == k { if (m == "" || $2 < m) m = $2 } END { print m }'; }
ms() { awk "BEGIN { printf \"%.3f\", $1 / 1e6 }"; }
ratio() { awk "BEGIN { printf \"%.2f\", $1 / $2 }"; }
# a check: the two sums of a program agree to 1e-9 relative
agree() { awk "BEGIN { a = $1; b = $2; e = a - b; if (e < 0) e = -e; s = b < 0 ? -b : b; exit !(e <= 1e-9 * (s > 1 ? s : 1)) }"; }
echo "sparse x GPU product: X ${ROWS}x${COLS} (sparse, on the host) %*% W ${COLS}x${K} (GPU), best of $REPS, times in ms"
for d in 0.001 0.01 0.1; do
  m=$("$MLS" --device gpu "$HERE/gpu_spmm.mls" -nvargs rows="$ROWS" cols="$COLS" k="$K" d="$d" reps="$REPS" 2>&1) ||
    { echo "FAIL gpu_spmm.mls d=$d"; echo "$m" | tail -5; status=1; continue; }
  if ! agree "$(val "$m" check)" "$(val "$m" ident)" || [ "$(echo "$m" | awk '$1 == "device_C" { print $2 }')" != gpu ] ||
     [ "$(echo "$m" | awk '$1 == "device_X" { print $2 }')" != cpu ]; then
    echo "FAIL gpu_spmm.mls d=$d: $(echo "$m" | grep -E '^(check|ident|device)' | tr '\n' ' ')"
    status=1
  fi
  mt=$(minv "$m" time_ns)
  line="d=$d  nnz $(val "$m" nnz)  MLS $(ms "$mt") (first $(ms "$(val "$m" first_ns)"))"
  if [ $torch = 1 ]; then
    t=$("$PY" "$HERE/gpu_spmm_torch.py" "$ROWS" "$COLS" "$K" "$d" "$REPS" 2>&1) ||
      { echo "FAIL gpu_spmm_torch.py d=$d"; echo "$t" | tail -5; status=1; echo "  $line"; continue; }
    for f in csr coo; do
      agree "$(val "$t" ${f}_check)" "$(val "$t" ident)" || { echo "FAIL gpu_spmm_torch.py d=$d: $f sum"; status=1; }
    done
    tc=$(minv "$t" csr_ns); to=$(minv "$t" coo_ns)
    line="$line  torch CSR $(ms "$tc")  COO $(ms "$to")  MLS/CSR $(ratio "$mt" "$tc")  MLS/COO $(ratio "$mt" "$to")"
  fi
  echo "  $line"
done
exit $status
