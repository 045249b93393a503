# (f) a 784-256-10 MLP (relu, softmax cross-entropy, batch 128), PyTorch peer (float64,
# CPU): forward pass under no_grad against loss + torch.autograd.grad of the four
# parameters. Same inputs and lines as mlp_grad.mls. Usage: python3 mlp_grad_torch.py [ROUNDS [REPS]]
import sys
import time

import numpy as np
import torch

rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 10
reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
dev = sys.argv[3] if len(sys.argv) > 3 else "cpu"          # "cuda": bench/gpu.sh


def sync():
    if dev != "cpu":
        torch.cuda.synchronize()

n = 128
i = np.arange(n, dtype=np.float64)
X = torch.tensor(np.mod(np.add.outer(i * 31, np.arange(784) * 17.0), 256) / 255)
y = torch.tensor(np.arange(n) % 10)
W1 = torch.tensor(np.sin(np.arange(1, 784 * 256 + 1)).reshape(784, 256) * 0.05, requires_grad=True)
b1 = torch.full((1, 256), 0.01, dtype=torch.float64, requires_grad=True)
W2 = torch.tensor(np.cos(np.arange(1, 256 * 10 + 1)).reshape(256, 10) * 0.1, requires_grad=True)
b2 = torch.zeros((1, 10), dtype=torch.float64, requires_grad=True)
X, y = X.to(dev), y.to(dev)
W1, b1, W2, b2 = (t.detach().to(dev).requires_grad_() for t in (W1, b1, W2, b2))
params = [W1, b1, W2, b2]


def loss_fn():
    Z = torch.relu(X @ W1 + b1) @ W2 + b2
    return torch.nn.functional.cross_entropy(Z, y)


for r in range(rounds):
    sync()
    t0 = time.perf_counter_ns()
    with torch.no_grad():
        for k in range(reps):
            l = loss_fn()
    sync()
    t1 = time.perf_counter_ns()
    for k in range(reps):
        l2 = loss_fn()
        g = torch.autograd.grad(l2, params)
    sync()
    t2 = time.perf_counter_ns()
    print("fwd_ns %d" % ((t1 - t0) / reps))
    print("vg_ns %d" % ((t2 - t1) / reps))
print("loss %.15g" % l2.item())
print("gsum %.15g" % sum(float((x ** 2).sum()) for x in g))
