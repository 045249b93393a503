# (g) softmax regression on Fashion-MNIST, PyTorch autograd peer (float64, CPU): the seed
# program with the gradient by loss.backward(), batches in order, as bench/logreg.py.
# Usage: python3 logreg_torch.py [STEPS [DATA_DIR]].  Prints the same lines as logreg.mls.
import gzip
import sys
import time

import numpy as np
import torch

steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
d = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist/"
dev = sys.argv[3] if len(sys.argv) > 3 else "cpu"          # "cuda": bench/gpu.sh


def sync():
    if dev != "cpu":
        torch.cuda.synchronize()


def idx(name, offset):
    with gzip.open(d + name) as f:
        return np.frombuffer(f.read(), np.uint8, offset=offset)


train_x = torch.tensor(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float64) / 255)
train_y = torch.tensor(np.eye(10)[idx("train-labels-idx1-ubyte.gz", 8)])
test_x = torch.tensor(idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 784).astype(np.float64) / 255)
test_y = torch.tensor(idx("t10k-labels-idx1-ubyte.gz", 8).astype(np.int64))
train_x, train_y, test_x, test_y = (t.to(dev) for t in (train_x, train_y, test_x, test_y))
n = train_x.shape[0]
learning_rate = 0.5 / 100
W = torch.zeros((784, 10), dtype=torch.float64, requires_grad=True, device=dev)
W10 = None
sync()
t0 = time.perf_counter_ns()
for i in range(steps):
    s = (i * 100) % n
    batch_xs, batch_ys = train_x[s:s + 100], train_y[s:s + 100]
    loss = -(batch_ys * torch.log_softmax(batch_xs @ W, dim=1)).sum()
    loss.backward()
    with torch.no_grad():
        W -= learning_rate * W.grad
        W.grad = None
    if i == 9:
        W10 = W.detach().clone()
sync()
t1 = time.perf_counter_ns()
print("time_ns %d" % (t1 - t0))
C = torch.arange(1, 7841, dtype=torch.float64, device=dev).reshape(784, 10) / 7840
print("w10_ss %.15g" % float((W10 ** 2).sum()))
print("w10_ws %.15g" % float((W10.abs() * C).sum()))
print("accuracy %.15g" % float(((test_x @ W.detach()).argmax(1) == test_y).double().mean()))
