# bench/sparse.sh, part 2: the Matrix Market coordinate file, and the SciPy peer that reads it.
#   python3 sparse_read.py write PATH ROWS COLS NNZ   writes a ROWS x COLS "general real" file of
#       NNZ distinct random cells (uniform values in [0, 1), 17 digits) in random order, and
#       prints "nnz" and "sum" of what it wrote (every reader must give the same);
#   python3 sparse_read.py read PATH   times scipy.io.mmread(PATH).tocsr() ("time_ns <ns>"), then
#       prints nnz, sum and the peak RSS ("vmhwm_kb", /proc/self/status).
import sys
import time

import numpy as np


def write(path, rows, cols, nnz):
    rng = np.random.default_rng(11)
    # NNZ distinct cells: draw a few more with replacement, drop the repeats, keep NNZ of them
    key = np.unique(rng.integers(0, rows * cols, size=nnz + nnz // 50 + 16, dtype=np.int64))
    key = key[rng.permutation(key.size)[:nnz]]     # random order, as a log of ratings
    nnz = key.size
    val = rng.random(nnz)
    with open(path, "w") as f:
        f.write("%%MatrixMarket matrix coordinate real general\n")
        f.write("%% %d random entries, bench/sparse_read.py\n" % nnz)
        f.write("%d %d %d\n" % (rows, cols, nnz))
        step = 1 << 20
        for s in range(0, nnz, step):
            k = key[s:s + step]
            block = np.empty((k.size, 3), dtype=object)
            block[:, 0] = (k // cols + 1).tolist()
            block[:, 1] = (k % cols + 1).tolist()
            block[:, 2] = val[s:s + step].tolist()
            f.write(("%d %d %.17g\n" * k.size) % tuple(block.ravel()))
    print("nnz %d" % nnz)
    print("sum %.15g" % val.sum())


def read(path):
    import scipy.io
    t0 = time.perf_counter_ns()
    X = scipy.io.mmread(path).tocsr()
    t1 = time.perf_counter_ns()
    print("time_ns %d" % (t1 - t0))
    print("nnz %d" % X.nnz)
    print("sum %.15g" % X.sum())
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                print("vmhwm_kb %s" % line.split()[1])


if sys.argv[1] == "write":
    write(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
else:
    read(sys.argv[2])
