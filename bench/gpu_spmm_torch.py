# bench/gpu_sparse.sh's PyTorch part: C = torch.sparse.mm(X, W) on the GPU, float64, with X a
# rows x cols sparse matrix at density d (each cell nonzero with probability d, values uniform
# on [0, 1): the law of MLS's rand(sparsity=d)) in CSR and in COO, W cols x k dense.
# Usage: python3 gpu_spmm_torch.py ROWS COLS K D REPS
# X is drawn on the GPU (blocks of rows, a uniform per cell) and is not timed ("gen_ns"). For each
# format: one warm-up product, then REPS timed ones ("csr_ns <ns>", "coo_ns <ns>"), each
# followed by torch.cuda.synchronize(); checks: sum(C) per format and sum(colSums(X) * rowSums(W)).
import sys
import time

import torch

rows, cols, k = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
d, reps = float(sys.argv[4]), int(sys.argv[5])
dev = "cuda"
torch.manual_seed(7)

t0 = time.perf_counter_ns()
ri, ci = [], []
block = max(1, (1 << 26) // cols)
for r0 in range(0, rows, block):
    r1 = min(rows, r0 + block)
    nz = (torch.rand(r1 - r0, cols, device=dev, dtype=torch.float32) < d).nonzero()   # row-major order
    ri.append(nz[:, 0] + r0)
    ci.append(nz[:, 1])
    del nz
ri, ci = torch.cat(ri), torch.cat(ci)
vals = torch.rand(ri.numel(), device=dev, dtype=torch.float64)
Xcoo = torch.sparse_coo_tensor(torch.stack([ri, ci]), vals, (rows, cols)).coalesce()
del ri, ci, vals
Xcsr = Xcoo.to_sparse_csr()
W = torch.rand(cols, k, device=dev, dtype=torch.float64)
torch.cuda.synchronize()
t1 = time.perf_counter_ns()
print("gen_ns %d" % (t1 - t0))
print("nnz %d" % Xcoo._nnz())

for name, X in (("csr", Xcsr), ("coo", Xcoo)):
    C = torch.sparse.mm(X, W)                # warm-up
    torch.cuda.synchronize()
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        C = torch.sparse.mm(X, W)
        torch.cuda.synchronize()
        t1 = time.perf_counter_ns()
        print("%s_ns %d" % (name, t1 - t0))
    print("%s_check %.15g" % (name, C.sum().item()))
print("ident %.15g" % (torch.sparse.sum(Xcoo, dim=0).to_dense() @ W.sum(dim=1)).item())
