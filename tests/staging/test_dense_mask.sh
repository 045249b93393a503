#!/bin/sh
# test_dense_mask.sh — staging's masked rewrite reads a mostly-zero dense W as sparse
# (docs/staging.md "Linear-algebra rewrites"): explain names it where every use of W * e is a
# product or a sum, not where W * e is a result (eager code's dense matrix would print as
# sparse), not under MLS_EXACT_REWRITES=1 (it changes the order of additions), and not for a
# W with more than 20% nonzeros (MK_DENSE_W_MAX). The values are checked in tests/lang/sparse.test.
. "$(dirname "$0")/lib.sh"
cat > "$tmp/t.mls" <<'M'
W = rand(rows = 100, cols = 80, seed = 3) < 0.08
W6 = rand(rows = 100, cols = 80, seed = 9) < 0.3
S = rand(rows = 100, cols = 5, min = -1, max = 1, seed = 4)
V = rand(rows = 80, cols = 5, min = -1, max = 1, seed = 5)
hs = function(W, S, V) (W * (S %*% t(V))) %*% V + 0.5 * S
hr = function(W, S, V) { P = W * (S %*% t(V) - 1); list(r = rowSums(P), c = colSums(P), s = sum(P)) }
he = function(W, S, V) W * (S %*% t(V))
print("hs")
e = explain(hs, W, S, V)
print("hr")
e = explain(hr, W, S, V)
print("he")
e = explain(he, W, S, V)
print("hs6")
e = explain(hs, W6, S, V)
M
(cd "$tmp" && "$mls" t.mls > out.txt 2>&1)
check "runs" '[ $? -eq 0 ]'
line="rewrite: W \* \(1 product and [01] ops?\) -> masked: at mostly-zero dense \(read as sparse\) W's stored cells only"
part() { sed -n "/^$1\$/,/^$2\$/p" "$tmp/out.txt"; }
check "a product of W * e: read as sparse" 'part hs hr | grep -Eq "$line"'
check "row, column and total sums of W * e: read as sparse" 'part hr he | grep -Eq "$line"'
check "W * e as the result: not rewritten" '! part he hs6 | grep -q "masked"'
check "W with 30% nonzeros (above MK_DENSE_W_MAX, 20%): not rewritten" '! sed -n "/^hs6\$/,\$p" "$tmp/out.txt" | grep -q "masked"'
(cd "$tmp" && MLS_EXACT_REWRITES=1 "$mls" t.mls > exact.txt 2>&1)
check "MLS_EXACT_REWRITES=1: not rewritten" '! grep -q "mostly-zero dense" "$tmp/exact.txt"'
if [ $fail -ne 0 ]; then cat "$tmp/out.txt"; fi
exit $fail
