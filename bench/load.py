# (l) data loading, NumPy peer of load.mls: read the Fashion-MNIST training images (idx,
# gzip), scale to [0, 1], shuffle the rows by the same permutation; the same output lines.
# Usage: python3 load.py [DATA_DIR]
import gzip
import sys
import time

import numpy as np

d = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/datasets/fashion-mnist/"
t0 = time.perf_counter_ns()
with gzip.open(d + "train-images-idx3-ubyte.gz") as f:
    X = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784).astype(np.float64)
t1 = time.perf_counter_ns()
X = X / 255
t2 = time.perf_counter_ns()
n = X.shape[0]
perm = (np.arange(n) * 7919) % n
t3 = time.perf_counter_ns()
X = X[perm, :]
t4 = time.perf_counter_ns()
print("read_ns", t1 - t0)
print("scale_ns", t2 - t1)
print("shuffle_ns", t4 - t3)
print("time_ns", t4 - t0)
print("check", repr(float(np.dot(X[0, :], np.arange(1, 785)) + X[:, 0].sum())))
