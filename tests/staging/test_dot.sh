#!/bin/sh
# test_dot.sh — dot(f, ..., file=) writes Graphviz text that graphviz itself accepts: the file
# is rendered with `dot -Tsvg`, and the SVG must show the graph's ops and both clusters.
. "$(dirname "$0")/lib.sh"
cat > "$tmp/g.mls" <<M
loss = function(W, X) { sum(log(1 + exp(X %*% W))) }
dot(loss, [1; 2], [1, 2; 3, 4], file = "$tmp/loss.dot")
M
"$mls" "$tmp/g.mls" > "$tmp/out.txt" 2>&1
check "dot(..., file=) runs" '[ $? -eq 0 ] && [ -s "$tmp/loss.dot" ]'
check "the file is a digraph" 'head -1 "$tmp/loss.dot" | grep -q "^digraph"'
command -v dot >/dev/null || { echo "FAIL graphviz's dot is not installed (tools/deps.sh installs it)"; exit 1; }
dot -Tsvg "$tmp/loss.dot" -o "$tmp/loss.svg" 2> "$tmp/dot.err"
check "dot -Tsvg accepts it" '[ $? -eq 0 ] && [ ! -s "$tmp/dot.err" ] && grep -q "<svg" "$tmp/loss.svg"'
check "the SVG shows the matrix product" 'grep -q "%\*%" "$tmp/loss.svg"'
check "the SVG shows the fused softplus or its parts" 'grep -Eq "softplus|exp" "$tmp/loss.svg"'
check "forward and backward clusters" 'grep -q "forward and backward" "$tmp/loss.svg" && grep -q ">forward (" "$tmp/loss.svg"'
printf 'dot(3, file = "%s/no.dot")\n' "$tmp" > "$tmp/bad.mls"
"$mls" "$tmp/bad.mls" > "$tmp/bad.txt" 2>&1
check "a bad argument is a located error" '[ $? -ne 0 ] && grep -q "bad.mls:1:" "$tmp/bad.txt"'
exit $fail
