# (c) per-operation overhead, NumPy peer: 1e5 x C = A + B on 4x4 arrays, loops inside
# functions (fast locals).  Prints "base_ns" (empty loop) and "op_ns" (loop with the
# addition) for each of 5 rounds.
import time

import numpy as np


def empty(n):
    for _ in range(n):
        pass


def adds(A, B, n):
    C = None
    for _ in range(n):
        C = A + B
    return C


A = np.arange(1.0, 17.0).reshape(4, 4)
B = np.arange(1.0, 17.0).reshape(4, 4) / 16
n = 100000
for _ in range(5):
    t0 = time.perf_counter_ns()
    empty(n)
    t1 = time.perf_counter_ns()
    C = adds(A, B, n)
    t2 = time.perf_counter_ns()
    print("base_ns %d" % (t1 - t0))
    print("op_ns %d" % (t2 - t1))
print("check %.15g" % C.sum())
