#!/bin/sh
# test_sparse_grad.sh — jit(grad(loss)) of ALS's loss over a sparse 20000 x 20000 W runs in
# 150 MB, and so does eager grad of it (a custom tape node, further below): the masked nodes compute the products at W's cells only, and sum's adjoint reaches
# W * (...) as a broadcast number (ops/rules.h), not as a 3 GB matrix of ones. Run in the
# default mode only: a --staged script traces its top level with values, and grad's tape then
# sees the dense product (docs/sparse.md "grad").
. "$(dirname "$0")/lib.sh"
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
# eager grad of the same forms (no jit) over a 20000 x 20000 X with 10^5 stored cells: the masked
# op is one custom node on grad's tape (interp/masked.c), forward and backward at X's cells
cat > "$tmp/e.mls" <<'M'
r = rand(rows=100000, cols=1, min=1, max=20000.999, seed=1)
c = rand(rows=100000, cols=1, min=1, max=20000.999, seed=2)
X = table(floor(r), floor(c), rand(rows=100000, cols=1, min=0.5, max=1.5, seed=3), 20000, 20000)
print(nnz(X))
U = matrix(seq(1, 100000) / 1e5, 20000, 5)
V = matrix(seq(100000, 1) / 1e5, 20000, 5)
loss = function(U, V) 0.5 * sum((X != 0) * (X - U %*% t(V))^2)
G = grad(loss, 1:2)(U, V)
W = X != 0
E = W * (U %*% t(V) - X)
print(max(abs(G[[1]] - E %*% V)) / max(abs(G[[1]])) < 1e-12)
print(max(abs(G[[2]] - t(E) %*% U)) / max(abs(G[[2]])) < 1e-12)
H = grad(function(U) sum(W * log(U %*% t(V))))(U)
R = W * exp(-log(U %*% t(V)))
print(max(abs(H - R %*% V)) / max(abs(H)) < 1e-12)
M
"$mls" --max-memory 150M "$tmp/e.mls" > "$tmp/eout.txt" 2>&1
check "eager grad of (X != 0) * (X - U %*% t(V))^2 and W * log(U %*% t(V)) over a sparse 20000 x 20000 X runs within 150 MB" '[ $? -eq 0 ]'
check "its gradients are E %*% V, t(E) %*% U and (W / (U %*% t(V))) %*% V" '[ "$(grep -c "^TRUE$" "$tmp/eout.txt")" -eq 3 ]'
check "X has 99991 stored cells" 'grep -q "^99991$" "$tmp/eout.txt"'
[ $fail -eq 0 ] || cat "$tmp/eout.txt"
exit $fail
