# bench/sparse.sh, part 1, SciPy peer: C = X @ W, X a rows x cols CSR matrix at density d,
# W cols x k dense. Usage: python3 sparse_spmm.py ROWS COLS K D REPS
# X is built straight as CSR from random indices (scipy.sparse.random draws its cells without
# replacement through COO, slow at 10^8 nonzeros): each cell nonzero with probability d, values
# uniform on [0, 1).
# One warm-up product, then REPS timed ones ("time_ns <ns>"); the generation ("gen_ns") is
# not timed. Checks: sum(C) and sum(colSums(X) * rowSums(W)); peak RSS ("vmhwm_kb") from
# /proc/self/status at the end.
import sys
import time

import numpy as np
import scipy.sparse as sp

rows, cols, k = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
d, reps = float(sys.argv[4]), int(sys.argv[5])

t0 = time.perf_counter_ns()
rng = np.random.default_rng(7)
# each cell nonzero with probability d, independently (as MLS's rand(sparsity=) draws it): the
# cells in row-major order are the partial sums of geometric gaps, so sorted and distinct; drawn
# in blocks of rows (the gaps are memoryless) so that the temporaries stay small
block = max(1, (1 << 24) // cols)
parts, counts = [], []
for r0 in range(0, rows, block):
    r1 = min(rows, r0 + block)
    cells = (r1 - r0) * cols
    pos = np.empty(0, dtype=np.int64)
    while pos.size == 0 or pos[-1] < cells:
        m = int(d * cells * 1.01 + 10 * (d * cells) ** 0.5 + 100)
        more = np.cumsum(rng.geometric(d, size=m)) - 1 + (pos[-1] + 1 if pos.size else 0)
        pos = np.concatenate([pos, more])
    pos = pos[:np.searchsorted(pos, cells)]
    counts.append(np.diff(np.searchsorted(pos, np.arange(r1 - r0 + 1, dtype=np.int64) * cols)))
    parts.append((pos % cols).astype(np.int32))
del pos, more
indices = np.concatenate(parts)
del parts
itype = np.int32 if indices.size < 2**31 else np.int64
indptr = np.zeros(rows + 1, dtype=itype)
np.cumsum(np.concatenate(counts), out=indptr[1:])
X = sp.csr_matrix((rng.random(indices.size), indices, indptr), shape=(rows, cols))
del indices, indptr
W = rng.random((cols, k))
t1 = time.perf_counter_ns()
print("gen_ns %d" % (t1 - t0))
print("nnz %d" % X.nnz)

C = X @ W                          # warm-up
for _ in range(reps):
    t0 = time.perf_counter_ns()
    C = X @ W
    t1 = time.perf_counter_ns()
    print("time_ns %d" % (t1 - t0))
print("check %.15g" % C.sum())
print("ident %.15g" % float(np.asarray(X.sum(axis=0)).ravel() @ W.sum(axis=1)))
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            print("vmhwm_kb %s" % line.split()[1])
