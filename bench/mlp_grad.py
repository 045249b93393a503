# (f) a 784-256-10 MLP (relu, softmax cross-entropy, batch 128), NumPy peer with the
# backward pass written by hand: the time of loss + gradient against the forward pass
# alone (a reference for the ratio; no goal). Same inputs and lines as mlp_grad.mls.
# Usage: python3 mlp_grad.py [ROUNDS [REPS]]
import sys
import time

import numpy as np

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
n = 128
i = np.arange(n, dtype=np.float64)
X = np.mod(np.add.outer(i * 31, np.arange(784) * 17.0), 256) / 255
Y = np.eye(10)[np.arange(n) % 10]
W1 = np.sin(np.arange(1, 784 * 256 + 1)).reshape(784, 256) * 0.05
b1 = np.full((1, 256), 0.01)
W2 = np.cos(np.arange(1, 256 * 10 + 1)).reshape(256, 10) * 0.1
b2 = np.zeros((1, 10))


def forward(X, Y):
    H = X @ W1 + b1
    A = np.maximum(H, 0)
    Z = A @ W2 + b2
    m = Z.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(Z - m).sum(axis=1, keepdims=True))
    return -np.sum(Y * (Z - lse)) / X.shape[0]


def value_and_grad(X, Y):
    H = X @ W1 + b1
    A = np.maximum(H, 0)
    Z = A @ W2 + b2
    m = Z.max(axis=1, keepdims=True)
    E = np.exp(Z - m)
    s = E.sum(axis=1, keepdims=True)
    loss = -np.sum(Y * (Z - m - np.log(s))) / X.shape[0]
    dZ = (E / s - Y) / X.shape[0]
    dW2 = A.T @ dZ
    db2 = dZ.sum(axis=0, keepdims=True)
    dH = (dZ @ W2.T) * (H > 0)
    dW1 = X.T @ dH
    db1 = dH.sum(axis=0, keepdims=True)
    return loss, (dW1, db1, dW2, db2)


for r in range(rounds):
    t0 = time.perf_counter_ns()
    for k in range(reps):
        l = forward(X, Y)
    t1 = time.perf_counter_ns()
    for k in range(reps):
        l2, g = value_and_grad(X, Y)
    t2 = time.perf_counter_ns()
    print("fwd_ns %d" % ((t1 - t0) / reps))
    print("vg_ns %d" % ((t2 - t1) / reps))
print("loss %.15g" % l2)
print("gsum %.15g" % sum(np.sum(x ** 2) for x in g))
