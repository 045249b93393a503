#!/usr/bin/env bash
# bench_compare.sh BASE NEW [ROUNDS] — the MLS benchmarks of bench/ run with two mls binaries
# alternately in one run (BASE, NEW, BASE, NEW, ...), each timing the best of its rounds, then
# the ratios NEW/BASE: how a change (issue 26's redesign: "make bench shows no slowdown beyond
# noise") moved each. Only MLS runs; `make bench` compares MLS with its peers.
set -u
base=${1:?usage: bench_compare.sh BASE NEW [ROUNDS]}
new=${2:?usage: bench_compare.sh BASE NEW [ROUNDS]}
rounds=${3:-5}
fashion=${BENCH_FASHION:-/usr/share/datasets/fashion-mnist/}
# name | script and arguments | the printed key whose minimum is kept
cases=(
  "scalar loop 1e7|bench/scalar_loop.mls|time_ns"
  "4x4 add (op)|bench/small_add.mls|op_ns"
  "elementwise chain 1e7|bench/ew_sum.mls|time_ns"
  "elementwise chain jit|bench/ew_sum_jit.mls|time_ns"
  "t(X) %*% D|bench/tmatmul.mls -nvargs rounds=5 reps=200|time_ns"
  "matmul 1024|bench/matmul.mls -nvargs n=1024 reps=3|time_ns"
  "MLP fwd+bwd eager|bench/mlp_grad.mls -nvargs rounds=3 reps=10 mode=eager|vg_ns"
  "MLP fwd+bwd jit|bench/mlp_grad.mls -nvargs rounds=3 reps=10 mode=jit|vg_ns"
  "softmax regression 200 steps|bench/logreg.mls -nvargs steps=200 mode=grad data=$fashion|time_ns"
)
best() {  # best value of key $2 in the output file $1
  awk -v k="$2" '$1 == k && (m == "" || $2 < m) { m = $2 } END { print m }' "$1"
}
tmp=$(mktemp -d)
printf '%-30s %14s %14s %8s\n' benchmark "base (ms)" "new (ms)" new/base
for c in "${cases[@]}"; do
  IFS='|' read -r name cmd key <<<"$c"
  : >"$tmp/b"; : >"$tmp/n"
  for ((r = 0; r < rounds; r++)); do
    $base $cmd >>"$tmp/b" 2>/dev/null
    $new $cmd >>"$tmp/n" 2>/dev/null
  done
  b=$(best "$tmp/b" "$key"); n=$(best "$tmp/n" "$key")
  if [[ -z $b || -z $n ]]; then printf '%-30s %14s %14s %8s\n' "$name" "${b:-?}" "${n:-?}" "-"; continue; fi
  awk -v nm="$name" -v b="$b" -v n="$n" 'BEGIN { printf "%-30s %14.3f %14.3f %8.3f\n", nm, b / 1e6, n / 1e6, n / b }'
done
rm -rf "$tmp"
