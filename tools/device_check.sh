#!/bin/sh
# device_check.sh — the GPU checks of issue 10 in one command on a lent GPU machine, after
# tools/device_prep.sh here (docs/gpu.md "Tests"):
#   tools/device_check.sh [tests|bench|all] [SECONDS]
# tests: make test-gpu's suites (parity, tests/lang on the GPU eager, staged and captured, the
# examples, compute-sanitizer memcheck and racecheck); bench: make bench-gpu. Each stage gets
# at most SECONDS (default 270). Logs go to $OUT (or build/device) as test-gpu.log and
# bench-gpu.log, with the machine's description in device.txt; the closing lines are printed.
set -u
cd "$(dirname "$0")/.."
what=${1:-all}
limit=${2:-270}
out=${OUT:-build/device}
mkdir -p "$out"
# the libraries this machine lacks, from build/devlibs (libraries they need in turn too)
use=build/devlibs/use
rm -rf "$use"
mkdir -p "$use"
# (CHOLMOD and UMFPACK are loaded with dlopen on first use, src/backend/dynlibs.c: the carried
# ones when this machine has none, and what they need)
dyn=
for lib in libcholmod.so.3 libumfpack.so.5; do
  if ! ldconfig -p | grep -q "$(echo "$lib" | sed 's/\./\\./g') " && [ -e "build/devlibs/$lib" ]; then
    ln -sf "$PWD/build/devlibs/$lib" "$use/$lib"
    dyn="$dyn build/devlibs/$lib"
  fi
done
for round in 1 2 3 4 5; do
  missing=$(LD_LIBRARY_PATH=$PWD/$use ldd ./mls build/libmls_cuda.so $dyn 2>/dev/null | awk '$3 == "not" { print $1 }' | sort -u)
  [ -z "$missing" ] && break
  for m in $missing; do
    [ -e "build/devlibs/$m" ] || { echo "device_check: $m is missing here and was not carried" | tee -a "$out/device.txt"; exit 1; }
    ln -sf "$PWD/build/devlibs/$m" "$use/$m"
  done
done
export LD_LIBRARY_PATH="$PWD/$use${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  echo "linked from build/devlibs: $(ls "$use" | tr '\n' ' ')"
  nvidia-smi -L 2>&1
  ./mls --device gpu --version 2>&1 | tail -1
  nproc
} > "$out/device.txt"
cat "$out/device.txt"
jobs=$(nproc)
[ "$jobs" -gt 16 ] && jobs=16
st=0
if [ "$what" = tests ] || [ "$what" = all ]; then
  JOBS=$jobs timeout "$limit" tests/gpu/run.sh ./mls > "$out/test-gpu.log" 2>&1
  r=$?
  grep -E "^==|FAIL|passed|failed|ERROR SUMMARY" "$out/test-gpu.log" | tail -30
  [ $r -eq 124 ] && echo "device_check: test-gpu ran past $limit s"
  echo "test-gpu: status $r"
  [ $r -eq 0 ] || st=1
fi
if [ "$what" = bench ] || [ "$what" = all ]; then
  [ -d build/devlibs/fashion-mnist ] && export BENCH_FASHION="$PWD/build/devlibs/fashion-mnist"
  timeout "$limit" bench/gpu.sh ./mls > "$out/bench-gpu.log" 2>&1
  r=$?
  cat "$out/bench-gpu.log" | tail -30
  [ $r -eq 124 ] && echo "device_check: bench-gpu ran past $limit s"
  echo "bench-gpu: status $r"
  [ $r -eq 0 ] || st=1
fi
exit $st
