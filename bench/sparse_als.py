# bench/sparse.sh, part 3, SciPy peer: the ALS-CG iteration of stdlib/builtin/alsCG.mls
# (SystemDS's alsCG.dml; reg = "L2", check = FALSE) on a rows x cols ratings matrix of about
# NNZ ratings. Usage: python3 sparse_als.py ROWS COLS NNZ RANK ITERS
# X: a CSR matrix (scipy.sparse), NNZ distinct cells drawn uniformly (nnz itself binomial, as
# each cell of MLS's rand(sparsity = NNZ / (ROWS * COLS)) is a rating with that probability),
# values uniform on [1, 5]. Starts U (ROWS x RANK) and V (COLS x RANK, kept transposed as the
# builtin keeps it) uniform on [-0.5, 0.5].
# The timed part is what alsCG(X, rank, maxi = ITERS, check = FALSE) does: W = (X != 0), then
# per iteration the U half step and the V half step, each at most RANK conjugate gradient steps
# on its normal equations with the builtin's stopping test. W * (U V^T - X) and the Hessian
# products' W * (S V^T), W * (U S^T) are computed at W's stored cells only (the sampled
# product, SDDMM: for each stored (i, j) the dot of U[i] and V[j]: einsum over rows gathered by
# np.take, in chunks of CHUNK cells, 1.5x-4x faster here than U[rows] fancy indexing in chunks
# of 2^18), written into a CSR matrix with W's pattern and multiplied by the dense factor
# (E @ V, E.T @ U: CSR and CSC products, one thread each; E.T @ U was 10x faster than a CSR
# copy of E^T permuted from E's values). On data MLS wrote, this gives alsCG's U and V to 1e-13.
# Prints "gen_ns" (not timed), "nnz", "loss0" (the objective at the starts), "time_ns" (all
# ITERS iterations), "iter_ns" (per iteration), "loss1" (after them; not timed) and "vmhwm_kb"
# (peak RSS, from /proc/self/status at the end).
import sys
import time

import numpy as np
import scipy.sparse as sp

rows, cols, nnz = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
rank, iters = int(sys.argv[4]), int(sys.argv[5])
LAMBDA = 0.000001                 # alsCG's default lambda
CHUNK = 1 << 13                   # cells per SDDMM chunk: 2 gathers of CHUNK x rank doubles
                                  # (fastest of 2^12..2^20 here: the gathers stay in cache)

# ---------------------------------------------------------------- data (not timed)

t0 = time.perf_counter_ns()
rng = np.random.default_rng(11)
cells = rows * cols
want = int(rng.binomial(cells, min(1.0, nnz / cells)))
pos = np.unique(rng.integers(0, cells, size=want, dtype=np.int64))
while pos.size < want:            # a few collisions at 1e-4: draw the missing cells again
    pos = np.unique(np.concatenate([pos, rng.integers(0, cells, size=want - pos.size,
                                                      dtype=np.int64)]))
itype = np.int32 if pos.size < 2**31 and cols < 2**31 else np.int64
indices = (pos % cols).astype(itype)
indptr = np.searchsorted(pos, np.arange(rows + 1, dtype=np.int64) * cols).astype(itype)
del pos
X = sp.csr_matrix((rng.uniform(1.0, 5.0, size=indices.size), indices, indptr),
                  shape=(rows, cols))
del indices, indptr
X.has_sorted_indices = True
U0 = rng.uniform(-0.5, 0.5, size=(rows, rank))
V0 = rng.uniform(-0.5, 0.5, size=(cols, rank))
t1 = time.perf_counter_ns()
print("gen_ns %d" % (t1 - t0))
print("nnz %d" % X.nnz)


# ---------------------------------------------------------------- the algorithm

def coo_rows(A):
    """The row index of each stored entry of the CSR matrix A (its COO row array)."""
    return np.repeat(np.arange(A.shape[0], dtype=A.indices.dtype), np.diff(A.indptr))


def sddmm(A, B, ri, ci, out):
    """out[t] = A[ri[t]] . B[ci[t]] for every stored cell t, in chunks (the sampled product)."""
    for a in range(0, ri.size, CHUNK):
        b = min(ri.size, a + CHUNK)
        np.einsum('ij,ij->i', np.take(A, ri[a:b], axis=0), np.take(B, ci[a:b], axis=0),
                  out=out[a:b])
    return out


def als_cg(X, U, V, rank, maxi, lam):
    """alsCG(X, rank, reg = "L2", lambda = lam, maxi, check = FALSE) from the starts U, V
    (V: cols x rank). Returns U, V (V still cols x rank)."""
    W = (X != 0).astype(np.float64)           # W = X != 0: X's pattern (X has no stored 0)
    assert W.nnz == X.nnz and np.array_equal(W.indptr, X.indptr)
    ri, ci = coo_rows(W), W.indices           # W's stored cells
    xw, ww = X.data, W.data                   # X and W read at those cells
    rw = 1.0                                  # reg "L2": row and column weights 1
    cw = 1.0
    E = W.copy()                              # the masked products, W's pattern
    buf = np.empty(W.nnz)
    it = 0
    while it // 2 < maxi:
        it += 1
        is_u = it % 2 == 1
        # E = W * (U %*% t(V) - X), at W's cells
        sddmm(U, V, ri, ci, buf)
        np.subtract(buf, xw, out=E.data)
        E.data *= ww
        G = E @ V + lam * U * rw if is_u else E.T @ U + lam * V * cw
        R = -G
        S = R
        norm_G2 = np.sum(G ** 2)
        norm_R2 = norm_G2
        inner = 1
        while norm_R2 > 0.000000001 * norm_G2 and inner <= rank:
            if is_u:
                # HS = (W * (S %*% t(V))) %*% V + lambda * S * rw
                sddmm(S, V, ri, ci, E.data)
                E.data *= ww
                HS = E @ V + lam * S * rw
                alpha = norm_R2 / np.sum(S * HS)
                U = U + alpha * S
            else:
                # HS = t(W * (U %*% t(S))) %*% U + lambda * S * cw
                sddmm(U, S, ri, ci, E.data)
                E.data *= ww
                HS = E.T @ U + lam * S * cw
                alpha = norm_R2 / np.sum(S * HS)
                V = V + alpha * S
            R = R - alpha * HS
            old_norm_R2 = norm_R2
            norm_R2 = np.sum(R ** 2)
            S = R + (norm_R2 / old_norm_R2) * S
            inner += 1
    return U, V


def als_loss(X, U, V, lam):
    """alsCG_loss with reg "L2": 0.5 sum(W * (U V^T - X)^2) + 0.5 lam (sum(U^2) + sum(V^2))."""
    W = (X != 0).astype(np.float64)
    e = sddmm(U, V, coo_rows(W), W.indices, np.empty(W.nnz)) - X.data
    return 0.5 * np.sum(W.data * e ** 2) + 0.5 * lam * (np.sum(U ** 2) + np.sum(V ** 2))


print("loss0 %.15g" % als_loss(X, U0, V0, LAMBDA))
t0 = time.perf_counter_ns()
U, V = als_cg(X, U0, V0, rank, iters, LAMBDA)
t1 = time.perf_counter_ns()
print("time_ns %d" % (t1 - t0))
print("iter_ns %d" % ((t1 - t0) // max(1, iters)))
print("loss1 %.15g" % als_loss(X, U, V, LAMBDA))
with open("/proc/self/status") as f:
    for line in f:
        if line.startswith("VmHWM:"):
            print("vmhwm_kb %s" % line.split()[1])
