#!/bin/sh
# test_callee_blocks.sh — under jit, a function called from a body that runs as staged blocks
# runs its own body as staged blocks (docs/staging.md "Control flow"): explain(jf) lists them,
# each a graph replayed at later calls, and the caller's block that reaches the data-dependent
# loop runs eagerly. Plain mode only (under --staged the top-level script inlines jf into its
# own block, under --jit-all newton gets a jit of its own), so not a golden case.
. "$(dirname "$0")/lib.sh"
cat > "$tmp/t.mls" <<'M'
newton = function(a) {
  x = a
  it = 0
  while (max(abs(x * x - a)) > 1e-12) {
    if (it >= 50) stop("newton: no convergence")
    x = (x + a / x) / 2
    it = it + 1
  }
  y = x * 2
  y + 1
}
f = function(a) {
  r = newton(a)
  r * 3
}
jf = jit(f)
a = [2, 3, 5]
for (k in 1:5) print(all(jf(a * k) == f(a * k)) & max(abs(jf(a * k) - (6 * sqrt(a * k) + 3))) < 1e-10)
e = explain(jf)
M
(cd "$tmp" && "$mls" t.mls > out.txt 2>&1)
check "runs" '[ $? -eq 0 ]'
check "eager's bits and 6 sqrt(a) + 3 at every call" '[ "$(grep -c "^TRUE$" "$tmp/out.txt")" -eq 5 ]'
check "jf's body runs as staged blocks" 'grep -q "for (a 1x3 matrix): runs its body as staged blocks" "$tmp/out.txt"'
check "jf's block, which reaches newton's loop, runs eagerly" \
  'grep -q "^  t.mls:13-14: runs eagerly: t.mls:4:10: a condition depends on a staged value" "$tmp/out.txt"'
check "newton's three straight-line blocks are graphs, replayed" \
  '[ "$(grep -cE "^  t.mls:(2-3|6-7|9-10): a graph of [0-9]+ nodes?, replayed$" "$tmp/out.txt")" -eq 3 ]'
if [ $fail -ne 0 ]; then cat "$tmp/out.txt"; fi
exit $fail
