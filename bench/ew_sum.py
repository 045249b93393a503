# (e) the same expression in NumPy (temporaries per operation, as eager MLS makes them),
# on the inputs of bench/ew_sum.mls: x[i] = (7919 i mod 10007) / 10007 and
# y[i] = (104729 i mod 10009) / 10009 for i = 0 .. 1e7 - 1, as a column.
import time
import numpy as np
n = 10_000_000
i = np.arange(n, dtype=np.float64).reshape(n, 1)
x = np.mod(i * 7919, 10007) / 10007
y = np.mod(i * 104729, 10009) / 10009
best = 1e30
for _ in range(5):
    t0 = time.perf_counter_ns()
    s = np.sum((x - y) ** 2 * 0.5 + np.exp(-x))
    best = min(best, time.perf_counter_ns() - t0)
print("time_ns", best)
print("result %.17g" % s)
