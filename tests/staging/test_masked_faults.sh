#!/bin/sh
# test_masked_faults.sh — a staged CG step over a mostly-zero dense W (the masked products:
# sparse results and scratch of a few MB a call, from malloc) stops faulting its memory in
# after the first calls in the mls binary, whose interpreter runs on a thread of its own (a
# glibc arena of its own): main sets malloc's policy (mem_tune_malloc, docs/robustness.md
# "Memory"). The minor page faults of 40 calls minus those of 10, per call, counted by
# getrusage of the child (python3); with MLS_MALLOC_TUNE=0 (glibc's sliding thresholds) the
# same count is shown to be large, so the check can fail.
. "$(dirname "$0")/lib.sh"
cat > "$tmp/t.mls" <<'M'
n = ifdef($n, 10)
W = rand(rows = 2000, cols = 1000, seed = 3) < 0.15
V = rand(rows = 1000, cols = 10, seed = 5)
S = rand(rows = 1000, cols = 10, seed = 7)
U = rand(rows = 2000, cols = 10, seed = 6)
cw = t(colSums(W))
g = jit(function(W, S, U, V, cw, n) {
  HS = t(W * (U %*% t(S))) %*% U + 0.001 * S * cw
  V = V + n / sum(S * HS) * S
  list(HS, V)
})
for (k in 1:(3 + n)) b = g(W, S, U, V, cw, 3)
print(nrow(b[[1]]))
M
per_call() {
  /usr/bin/python3 - "$mls" "$tmp/t.mls" <<'P'
import resource, subprocess, sys
def faults(n):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt
    out = subprocess.run([sys.argv[1], sys.argv[2], "-nvargs", "n=%d" % n], capture_output=True, text=True)
    assert out.stdout.strip() == "1000", out.stdout + out.stderr
    return resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt - before
print(int(max(0, faults(40) - faults(10)) / 30))
P
}
with=$(per_call)
without=$(MLS_MALLOC_TUNE=0 per_call)
echo "     minor faults a call: $with (glibc's thresholds: $without)"
check "a masked CG step faults under 100 pages a call after its first calls" '[ "$with" -lt 100 ]'
check "... where glibc's own thresholds fault more than 300 a call" '[ "$without" -gt 300 ]'
exit $fail
