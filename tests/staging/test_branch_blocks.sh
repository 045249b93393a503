#!/bin/sh
# test_branch_blocks.sh — under staged blocks (a jit whose body has data-dependent control
# flow), an if's branch or a loop's body written without braces is a staged block of its own,
# as the same statement in braces is (docs/staging.md "Control flow"): alsCG's gradient step,
# `if (is_U) G = (W * (U %*% t(V) - X)) %*% V else G = t(W * ...) %*% U`, ran eagerly before,
# so its masked product was never staged. explain(jf) lists the one-line blocks as graphs,
# replayed; the values equal eager code's (the masked product adds in another order: 1e-12).
# Plain mode only (under --staged the script's top level stages jf's call as a whole), so not
# a golden case; tests/lang/staging.test checks the effects' order in every mode.
. "$(dirname "$0")/lib.sh"
cat > "$tmp/t.mls" <<'M'
X = rand(rows = 100, cols = 80, seed = 3) * (rand(rows = 100, cols = 80, seed = 4) < 0.15)
W = X != 0
U = rand(rows = 100, cols = 4, min = -1, max = 1, seed = 5)
V = rand(rows = 80, cols = 4, min = -1, max = 1, seed = 6)
f = function(X, W, U, V, n) {
  it = 0
  s = 0
  while (it < n) {
    it = it + 1
    u = it %% 2 == 1
    if (u) G = (W * (U %*% t(V) - X)) %*% V
    else G = t(W * (U %*% t(V) - X)) %*% U
    s = s + sum(G)
  }
  x = U
  while (sum(abs(x)) < 1000) x = x * 2
  list(s = s, x = x)
}
jf = jit(f)
for (k in 1:4) {
  a = f(X, W, U, V, 4 + k)
  b = jf(X, W, U, V, 4 + k)
  print(abs(a$s - b$s) <= 1e-12 * abs(a$s) & all(a$x == b$x))
}
e = explain(jf)
M
(cd "$tmp" && "$mls" t.mls > out.txt 2>&1)
check "runs" '[ $? -eq 0 ]'
check "eager's values at every call" '[ "$(grep -c "^TRUE$" "$tmp/out.txt")" -eq 4 ]'
check "the if's two branches without braces: staged blocks, replayed" \
  '[ "$(grep -cE "^  t.mls:(11-11|12-12): a graph of [0-9]+ nodes?, replayed$" "$tmp/out.txt")" -eq 2 ]'
check "the while loop's body without braces: a staged block, replayed" \
  'grep -qE "^  t.mls:16-16: a graph of [0-9]+ nodes?, replayed$" "$tmp/out.txt"'
if [ $fail -ne 0 ]; then cat "$tmp/out.txt"; fi
exit $fail
