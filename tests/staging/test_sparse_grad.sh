#!/bin/sh
# test_sparse_grad.sh — jit(grad(loss)) of ALS's loss over a sparse 20000 x 20000 W runs in
# 150 MB: the masked nodes compute the products at W's cells only, and sum's adjoint reaches
# W * (...) as a broadcast number (ops/rules.h), not as a 3 GB matrix of ones. Run in the
# default mode only: a --staged script traces its top level with values, and grad's tape then
# sees the dense product (docs/sparse.md "grad").
set -u
mls=${1:-./mls}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
cat > "$tmp/g.mls" <<'M'
i = seq(1, 20000, 7)
X = table(i, rev(i), i / 7)
W = X != 0
U = matrix(seq(1, 100000) / 1e5, 20000, 5)
V = matrix(seq(100000, 1) / 1e5, 20000, 5)
loss = function(U, V) 0.5 * sum(W * (U %*% t(V) - X)^2)
G = jit(grad(loss, 1:2))(U, V)
E = W * (U %*% t(V) - X)
print(max(abs(G[[1]] - E %*% V)) / max(abs(G[[1]])) < 1e-12)
print(max(abs(G[[2]] - t(E) %*% U)) / max(abs(G[[2]])) < 1e-12)
print(nnz(E))
M
"$mls" --max-memory 150M "$tmp/g.mls" > "$tmp/out.txt" 2>&1
check "jit(grad) of ALS's loss over a sparse 20000 x 20000 W runs within 150 MB" '[ $? -eq 0 ]'
check "its gradients are E %*% V and t(E) %*% U" '[ "$(grep -c "^TRUE$" "$tmp/out.txt")" -eq 2 ]'
check "E is sparse: 2858 stored cells" 'grep -q "^2858$" "$tmp/out.txt"'
[ $fail -eq 0 ] || cat "$tmp/out.txt"
exit $fail
