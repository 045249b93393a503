# (b) dense matrix multiply, NumPy peer: C = A @ B (a new result array each time, as in MLS).
# Usage: python3 matmul.py N REPS.  Each product is printed as "time_ns <ns>".
import sys
import time

import numpy as np

n, reps = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(42)
A = rng.random((n, n))
B = rng.random((n, n))
C = None
for _ in range(reps):
    t0 = time.perf_counter_ns()
    C = A @ B
    t1 = time.perf_counter_ns()
    print("time_ns %d" % (t1 - t0))
print("check %.15g" % C.sum())
