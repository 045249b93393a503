#!/bin/sh
# one device session: quick facts, parity, tests/lang on the GPU, the benchmarks
exec > "$OUT/log.txt" 2>&1
set -x
nvidia-smi -L
ldd ./mls | grep "not found"
ldd build/libmls_cuda.so | grep "not found"
./mls --device gpu --version
timeout 60 ./mls --device gpu -e 'X = [1,2;3,4]; print(X %*% X); print(sum(X)); print(exp(X) + 1); Y = gpu(X); print(device(Y)); print(t(Y) %*% Y)'
timeout 120 ./mls tests/gpu/parity.mls
JOBS=16 timeout 200 tests/gpu/run.sh ./mls
timeout 200 bench/gpu.sh ./mls
