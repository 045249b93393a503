# (g) softmax regression on Fashion-MNIST, NumPy peer: the seed program from the lecture
# notes, with its hand-derived gradient, unchanged apart from the data loading (the idx
# files read with gzip; pixels scaled to [0, 1]) and next_batch (batches in order).
# Usage: python3 logreg.py [STEPS [DATA_DIR [REPS]]].  Prints the same lines as logreg.mls.
# REPS (default 1; bench/staging.sh's (s1) gives more) trains REPS times from W = 0, each
# loop timed on its own ("time_ns" each time); "w_ss" is sum(W^2) after all the steps.
import gzip
import sys
import time

import numpy as np

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
d = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist/"
reps = int(sys.argv[3]) if len(sys.argv) > 3 else 1


def idx(name, offset):
    with gzip.open(d + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


train_x = idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float64) / 255
train_y = np.eye(10)[idx("train-labels-idx1-ubyte.gz", 8)]
test_x = idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float64) / 255
test_y = idx("t10k-labels-idx1-ubyte.gz", 8)
n = train_x.shape[0]


def softmax(x):
    x = x - np.max(x, axis=1, keepdims=True)
    x = np.exp(x)
    x = x / np.sum(x, axis=1, keepdims=True)
    return x


learning_rate = 0.5 / 100
for rep in range(reps):
    W = np.zeros((784, 10))
    W10 = W
    t0 = time.perf_counter_ns()
    for i in range(steps):
        s = (i * 100) % n
        batch_xs, batch_ys = train_x[s:s + 100], train_y[s:s + 100]
        # forward
        y = softmax(np.dot(batch_xs, W))
        # backward
        y_grad = y - batch_ys
        W_grad = np.dot(batch_xs.T, y_grad)
        # update
        W = W - learning_rate * W_grad
        if i == 9:
            W10 = W
    t1 = time.perf_counter_ns()
    print("time_ns %d" % (t1 - t0))
C = np.arange(1, 7841).reshape(784, 10) / 7840
print("w_ss %.15g" % np.sum(W ** 2))
print("w10_ss %.15g" % np.sum(W10 ** 2))
print("w10_ws %.15g" % np.sum(np.abs(W10) * C))
print("accuracy %.15g" % np.mean(np.argmax(test_x @ W, axis=1) == test_y))
