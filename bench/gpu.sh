#!/usr/bin/env bash
# bench/gpu.sh — `make bench-gpu`: MLS on the GPU against PyTorch on the same GPU in one run,
# float64 both, printing each figure and the ratio MLS/PyTorch (time) or PyTorch/MLS... see
# each line. Needs a CUDA device and a python3 with torch (PYTHON=...). Goals (issue 10):
# dgemm >= 90% of torch's TFLOP/s; the eager chain no slower than torch eager; the jit chain
# within 2x of the memory-bandwidth floor; the jit MLP step and jit softmax regression at most
# a third of torch eager's time. A missed goal prints MISS; the exit status is 1 only when a
# program fails. Last, bench/gpu_sparse.sh: sparse x GPU products against torch.sparse.mm.
set -u
export LC_ALL=C
MLS=${1:-./mls}
PY=${PYTHON:-python3}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=${BENCH_FASHION:-/usr/share/datasets/fashion-mnist/}
status=0
val() { echo "$1" | awk -v k="$2" '$1 == k { print $2; exit }'; }
# min over the lines "key value" of a program's output
minv() { echo "$1" | awk -v k="$2" '$1 == k { if (m == "" || $2 < m) m = $2 } END { print m }'; }
goal() { # name ok? text
  if [ "$2" = 1 ]; then echo "  goal met: $3"; else echo "  MISS: $3"; fi
}
"$MLS" --device gpu -e 'print(1)' >/dev/null 2>&1 || { echo "bench-gpu: $("$MLS" --device gpu -e 'print(1)' 2>&1)"; exit 1; }
"$PY" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null || { echo "bench-gpu: no torch with CUDA for $PY"; exit 1; }
echo "device: $("$MLS" --device gpu --version | tail -1)"

m=$("$MLS" --device gpu "$HERE/gpu_ops.mls") || { echo "FAIL gpu_ops.mls"; echo "$m"; status=1; }
t=$("$PY" "$HERE/gpu_ops_torch.py") || { echo "FAIL gpu_ops_torch.py"; echo "$t"; status=1; }
md=$(val "$m" dgemm_tflops); td=$(val "$t" dgemm_tflops)
echo "dgemm 4096      MLS $md TFLOP/s   torch $td TFLOP/s   MLS/torch $(awk "BEGIN{printf \"%.2f\", $md/$td}")"
goal dgemm "$(awk "BEGIN{print ($md >= 0.9*$td)}")" "dgemm at least 90% of torch"
me=$(val "$m" ew_eager_us); te=$(val "$t" ew_eager_us); mj=$(val "$m" ew_jit_us); tj=$(val "$t" ew_jit_us)
floor=$(awk "BEGIN{print 2*8e7/3.35e12*1e6}")     # read X, write Y: 160 MB at ~3.35 TB/s (H100 SXM)
echo "ew chain 1e7    MLS eager $me us   torch eager $te us   ratio $(awk "BEGIN{printf \"%.2f\", $me/$te}")"
echo "                MLS jit   $mj us   torch.compile $tj us   floor ~$floor us (2 x 80 MB at 3.35 TB/s)"
goal ew "$(awk "BEGIN{print ($me <= $te)}")" "eager chain no slower than torch eager"
goal ewjit "$(awk "BEGIN{print ($mj <= 2*$floor)}")" "jit chain within 2x of the bandwidth floor"

for mode in eager jit; do
  o=$("$MLS" --device gpu "$HERE/mlp_grad.mls" -nvargs rounds=5 reps=20 mode=$mode 2>&1) || { echo "FAIL mlp_grad.mls $mode"; echo "$o"; status=1; }
  eval "mlp_$mode=$(minv "$o" vg_ns)"
done
o=$("$PY" "$HERE/mlp_grad_torch.py" 5 20 cuda) || { echo "FAIL mlp_grad_torch.py"; status=1; }
mlp_torch=$(minv "$o" vg_ns)
echo "MLP step b=128  MLS eager $(awk "BEGIN{print $mlp_eager/1e3}") us   MLS jit $(awk "BEGIN{print $mlp_jit/1e3}") us   torch eager $(awk "BEGIN{print $mlp_torch/1e3}") us"
goal mlp "$(awk "BEGIN{print ($mlp_jit*3 <= $mlp_torch)}")" "jit MLP step at most a third of torch eager"

if [ -e "$DATA/train-images-idx3-ubyte.gz" ]; then
  for mode in grad jit; do
    o=$("$MLS" --device gpu "$HERE/logreg.mls" -nvargs mode=$mode data="$DATA" 2>&1) || { echo "FAIL logreg.mls $mode"; echo "$o"; status=1; }
    eval "lr_$mode=$(val "$o" time_ns)"
    echo "  logreg $mode: $(echo "$o" | grep -E 'w10_ss|accuracy' | tr '\n' ' ')"
  done
  o=$("$PY" "$HERE/logreg_torch.py" 1000 "$DATA" cuda) || { echo "FAIL logreg_torch.py"; status=1; }
  lr_torch=$(val "$o" time_ns)
  echo "  logreg torch: $(echo "$o" | grep -E 'w10_ss|accuracy' | tr '\n' ' ')"
  echo "softmax regr.   MLS grad $(awk "BEGIN{print $lr_grad/1e9}") s   MLS jit $(awk "BEGIN{print $lr_jit/1e9}") s   torch eager $(awk "BEGIN{print $lr_torch/1e9}") s"
  goal logreg "$(awk "BEGIN{print ($lr_jit*3 <= $lr_torch)}")" "jit softmax regression at most a third of torch eager"
else
  echo "softmax regression: skipped (no Fashion-MNIST at $DATA)"
fi
# the product of a sparse matrix and a GPU matrix (cuSPARSE) against torch.sparse.mm
"$HERE/gpu_sparse.sh" "$MLS" || status=1
exit $status
