# (s5) the 13-op chain of bench/staging_chain13.mls in NumPy (a temporary per operation), on
# the inputs of bench/ew_sum.mls. Usage: python3 staging_chain13.py [REPS]
# Prints "first_ns", "time_ns <ns>" for each of REPS later evaluations and "result <s>".
import sys
import time

import numpy as np

reps = int(sys.argv[1]) if len(sys.argv) > 1 else 5
n = 10_000_000
i = np.arange(n, dtype=np.float64).reshape(n, 1)
x = np.mod(i * 7919, 10007) / 10007
y = np.mod(i * 104729, 10009) / 10009


def f(x, y):
    return np.sum(np.tanh(x * 1.5 - y) * 0.5 + (x + y) ** 2 * 0.25 - np.exp(-x) / (1 + y))


t0 = time.perf_counter_ns()
s = f(x, y)
print("first_ns", time.perf_counter_ns() - t0)
for _ in range(reps):
    t0 = time.perf_counter_ns()
    s = f(x, y)
    print("time_ns", time.perf_counter_ns() - t0)
print("result %.17g" % s)
