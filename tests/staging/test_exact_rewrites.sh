#!/bin/sh
# test_exact_rewrites.sh — MLS_EXACT_REWRITES=1 (the generated-program tests' mode) leaves out
# the linear-algebra rewrites, which change the order of additions (docs/staging.md): explain
# shows none of them, and the staged results are the eager ones to the last bit.
. "$(dirname "$0")/lib.sh"
cat > "$tmp/la.mls" <<'M'
X = matrix(sin(seq(1, 12)), rows = 4, cols = 3)
Y = matrix(cos(seq(1, 15)), rows = 3, cols = 5)
Z = matrix(seq(1, 10), rows = 5, cols = 2) / 3
W = matrix(cos(seq(1, 12)), rows = 4, cols = 3)
f = function(X, Y, Z, W) {
  list(X %*% Y %*% Z %*% [1; 2], sum(X * W), rowSums(X %*% Y), colSums(X %*% Y), trace(X %*% t(W)),
       diag(X %*% t(W)), t(X) %*% X, X %*% t(X), t(X) %*% (X %*% [1; 2; 3]))
}
e = explain(f, X, Y, Z, W)
r = jit(f)(X, Y, Z, W)
r = jit(f)(X, Y, Z, W)
s = f(X, Y, Z, W)
for (i in 1:length(r)) print(max(abs(r[[i]] - s[[i]])) == 0)
M
MLS_EXACT_REWRITES=1 "$mls" "$tmp/la.mls" > "$tmp/exact.txt" 2>&1
check "runs" '[ $? -eq 0 ]'
check "explain shows no linear-algebra rewrite" \
  '! grep -Eq "product chain|dot\(|rowsumsprod|colsumsprod|diagprod|crossprod|xtwxv|mmchain" "$tmp/exact.txt"'
check "every staged result is the eager one to the last bit" '[ "$(grep -c "^TRUE$" "$tmp/exact.txt")" -eq 9 ]'
"$mls" "$tmp/la.mls" > "$tmp/fast.txt" 2>&1
check "without it the rewrites fire" \
  '(for w in "product chain" "dot(X, Y)" "rowSums(X %\*% Y)" "colSums(X %\*% Y)" "trace(X %\*% Y)" "diag(X %\*% Y)" crossprod tcrossprod xtwxv; do grep -q "rewrite: .*$w" "$tmp/fast.txt" || exit 1; done)'
exit $fail
