# bench/gpu_ops_torch.py — PyTorch peer of bench/gpu_ops.mls on the same GPU, float64:
# dgemm n x n, and the same elementwise chain on 1e7 elements eager and torch.compile'd.
import sys
import time

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 10
dev = "cuda"
A = torch.rand((n, n), dtype=torch.float64, device=dev) * 2 - 1
B = torch.rand((n, n), dtype=torch.float64, device=dev) * 2 - 1
C = A @ B
torch.cuda.synchronize()
best = 1e300
for r in range(3):
    t0 = time.perf_counter_ns()
    for k in range(reps):
        C = A @ B
    torch.cuda.synchronize()
    best = min(best, (time.perf_counter_ns() - t0) / reps)
print("dgemm_tflops %.6g" % (2 * n ** 3 / best / 1e3))

X = torch.rand((10000, 1000), dtype=torch.float64, device=dev) * 2 - 1


def chain(X):
    return (X * 2 + 1) * torch.sigmoid(X) - torch.tanh(X) / 3


def timeit(f):
    Y = f(X)
    torch.cuda.synchronize()
    best = 1e300
    for r in range(5):
        t0 = time.perf_counter_ns()
        for k in range(20):
            Y = f(X)
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter_ns() - t0) / 20)
    return best / 1e3


print("ew_eager_us %.6g" % timeit(chain))
try:
    print("ew_jit_us %.6g" % timeit(torch.compile(chain)))
except Exception as e:  # no compiler toolchain for inductor: say so, keep going
    print("ew_jit_us nan  # torch.compile failed: %s" % str(e).splitlines()[0][:80])
