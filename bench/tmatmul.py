# (h) t(X) %*% D, NumPy peer: G = X.T @ D (X.T is a view; matmul passes it to BLAS with the
# transpose flag). Same inputs and lines as tmatmul.mls. Usage: python3 tmatmul.py [ROUNDS [REPS]]
import sys
import time

import numpy as np

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 200
i = np.arange(100, dtype=np.float64)
X = np.mod(np.add.outer(i * 31, np.arange(784) * 17.0), 256) / 255
D = np.mod(np.add.outer(i * 7, np.arange(10) * 3.0), 10) / 10 - 0.3
G = None
for _ in range(rounds):
    t0 = time.perf_counter_ns()
    for _ in range(reps):
        G = X.T @ D
    t1 = time.perf_counter_ns()
    print("time_ns %.0f" % ((t1 - t0) / reps))
print("check %.15g" % G.sum())
