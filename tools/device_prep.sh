#!/bin/sh
# device_prep.sh — readies this checkout for a run on a lent GPU machine (the `device` tool,
# docs/gpu.md "Tests"): builds mls and the CUDA plugin, then gathers into build/devlibs the
# shared libraries they load, but the C library's own and CUDA's (the GPU machine has those),
# and Fashion-MNIST for bench-gpu's softmax regression. The run then carries
#   mls  build/libmls_cuda.so  build/devlibs
# and calls tools/device_check.sh there, which links from build/devlibs only what that
# machine lacks. Prints the size carried (the tool takes 64 MiB in all).
set -eu
cd "$(dirname "$0")/.."
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] ||
  { echo "device_prep: no nvcc: the CUDA plugin cannot be built here" >&2; exit 2; }
make -s CUDA=1 mls
[ -f build/libmls_cuda.so ] || { echo "device_prep: make CUDA=1 made no build/libmls_cuda.so" >&2; exit 1; }
rm -rf build/devlibs
mkdir -p build/devlibs
# the glibc family, the compiler's runtime and CUDA's are the machine's own, and so are
# OpenBLAS, LAPACK(E), readline and zlib, the large ones, which the GPU machines have
# (device_check.sh reports any library still missing there)
skip='^(libc|libm|libmvec|libpthread|libdl|librt|libresolv|ld-linux.*|libgcc_s|libstdc\+\+|libcu.*|libnv.*|libopenblas|liblapacke?|libblas|libtmglib|libgfortran|libquadmath|libreadline|libtinfo|libz)\.so'
# mls loads CHOLMOD, UMFPACK, LAPACKE and OpenBLAS with dlopen on first use (src/backend/dynlibs.c),
# so ldd of mls does not list them: CHOLMOD and UMFPACK themselves and what they need are gathered too
dyn=$(for s in libcholmod.so.3 libumfpack.so.5 liblapacke.so.3 libopenblas.so.0; do ldconfig -p | awk -v s="$s" '$1 == s { print $NF; exit }'; done)
{ ldd mls build/libmls_cuda.so $dyn; for d in $dyn; do echo "$(basename "$d") => $d"; done; } |
  awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
  while read -r name path; do
    echo "$name" | grep -Eq "$skip" && continue
    cp -L "$path" "build/devlibs/$name"
  done
data=${BENCH_FASHION:-/usr/share/datasets/fashion-mnist}
if [ -e "$data/train-images-idx3-ubyte.gz" ]; then
  mkdir -p build/devlibs/fashion-mnist
  cp "$data"/*-ubyte.gz build/devlibs/fashion-mnist/
fi
echo "device_prep: $(ls build/devlibs | grep -c '\.so') libraries, carry: mls build/libmls_cuda.so build/devlibs ($(du -cshL mls build/libmls_cuda.so build/devlibs | tail -1 | cut -f1) in all)"
