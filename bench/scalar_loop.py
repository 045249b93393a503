# (a) scalar loop, Python peer: a plain interpreted loop (no NumPy), at module top level
# like the MLS script.  Prints "result <s>" and "time_ns <ns>" for the loop alone.
import time

t0 = time.perf_counter_ns()
i = 0
s = 0.0
while i < 1e7:
    s = s + i * 0.5
    i = i + 1
t1 = time.perf_counter_ns()
print("result %.17g" % s)
print("time_ns %d" % (t1 - t0))
