#!/bin/sh
# tests/gpu/run.sh — the GPU suites (`make test-gpu`; LANGUAGE.md §13, docs/gpu.md):
#   1. tests/gpu/parity.mls: every op with a GPU kernel and gradients through them, GPU
#      against CPU to 1e-10 relative; tests/gpu/sparse.mls: products of sparse matrices with
#      GPU matrices (cuSPARSE) against the dense CPU product to 1e-12 relative;
#   2. tests/lang with --device gpu against the expected output (every case: the same text);
#   3. tests/lang staged on the GPU (--staged, --jit-all), each case against the eager CPU
#      run at 17 digits, numbers equal to 1e-12 relative (MLS_TEST_COMPARE); --jit-all with
#      MLS_REPLAY=2, so that every graph that can be captured as one launch (CUDA graphs)
#      is, from its third call, worth it or not;
#   4. the examples with --device gpu;
#   5. compute-sanitizer memcheck and racecheck on the parity test, when it is installed.
# With --if-available (make test), a machine without a CUDA device checks the errors that
# asking for one gives, then runs suites 1-4 on the simulated GPU (src/backend/sim.c,
# $MLS_SIM_GPU: host memory treated as a device's, the CPU's kernels), which checks the
# interpreter's side of the device paths; the CUDA kernels need a real GPU (make test-gpu).
# JOBS test files run at once (each case is a process that starts CUDA); SUITES and CS_TOOLS
# choose among the suites of 3 and the tools of 5 (default: all).
mls=${1:-./mls}
mode=${2:-}
JOBS=${JOBS:-8}
if [ "$mode" = --sim ]; then export MLS_SIM_GPU=1; JOBS=${SIM_JOBS:-2}; fi
if ! why=$("$mls" --device gpu -e 'x = 1' 2>&1); then
  if [ "$mode" = --if-available ]; then
    # without a device, asking for one is the clear error of LANGUAGE.md §13, everywhere
    "$mls" --device gpu -e 'x = 1' >/dev/null 2>&1; st=$?
    [ $st -eq 2 ] && [ "$why" = "mls: no CUDA device available" ] ||
      { echo "FAIL --device gpu without a device: status $st, '$why'"; exit 1; }
    e=$("$mls" -e 'x = 1; y = gpu([1, 2])' 2>&1); st=$?
    [ $st -eq 1 ] && echo "$e" | grep -q "^-e:1:12: error: gpu: no CUDA device available" ||
      { echo "FAIL gpu() without a device: status $st, '$e'"; exit 1; }
    e=$("$mls" -e 'device("gpu")' 2>&1); st=$?
    [ $st -eq 1 ] && echo "$e" | grep -q "^-e:1:1: error: device: no CUDA device available" ||
      { echo "FAIL device(\"gpu\") without a device: status $st, '$e'"; exit 1; }
    echo "No GPU: ${why#mls: } (its error messages checked); the suites run on the simulated GPU"
    exec "$0" "$mls" --sim
  fi
  echo "make test-gpu: ${why#mls: }" >&2
  exit 1
fi
fail=0
echo "== GPU: $("$mls" --device gpu --version | tail -1)"
echo "== parity (tests/gpu/parity.mls)"
"$mls" tests/gpu/parity.mls || fail=1
echo "== sparse products (tests/gpu/sparse.mls)"
"$mls" tests/gpu/sparse.mls || fail=1
echo "== out of GPU memory is a located error naming the size"
e=$("$mls" --device gpu --max-memory 1T -e 'x = 1
X = matrix(0, rows = 200000, cols = 200000)' 2>&1); st=$?
echo "$e" | head -1
[ $st -eq 1 ] && echo "$e" | grep -q "^-e:2:5: error: out of GPU memory allocating a 200000x200000 matrix (298.0 GiB)" || fail=1
logs=$(mktemp -d)
suite() {  # name, then the environment for --run-tests
  name=$1; shift
  ls tests/lang/*.test | xargs -P "$JOBS" -I{} sh -c 'env "$@" "'"$mls"'" --run-tests {} > "'"$logs"'/$(basename {}).'"$name"'" 2>&1' sh "$@"
  p=0; f=0
  for l in "$logs"/*."$name"; do
    r=$(tail -1 "$l")
    p=$((p + $(echo "$r" | sed -n 's/^\([0-9]*\) passed.*/\1/p')))
    nf=$(echo "$r" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    [ -z "$nf" ] && { nf=1; echo "   $(basename "$l"): $r"; }
    [ "$nf" -gt 0 ] && grep -E "^FAIL|^---|^\+|^-" "$l" | head -40
    f=$((f + nf))
  done
  echo "== tests/lang $name: $p passed, $f failed"
  [ "$f" -eq 0 ] || fail=1
}
for s in ${SUITES:-gpu gpu-staged gpu-jit-all}; do
  case $s in
  gpu) suite gpu MLS_TEST_FLAGS="--device gpu" ;;
  gpu-staged) suite gpu-staged MLS_TEST_COMPARE="--device gpu --staged" ;;
  gpu-jit-all) suite gpu-jit-all MLS_REPLAY=2 MLS_TEST_COMPARE="--device gpu --jit-all" ;;
  esac
done
rm -rf "$logs"
echo "== examples --device gpu"
ex=$(MLS_FLAGS="--device gpu" tools/run_examples.sh "$mls")
echo "$ex" | tail -3
echo "$ex" | tail -1 | grep -q " 0 failed$" || fail=1
cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ "$mode" = --sim ]; then
  echo "== compute-sanitizer: not for the simulated GPU"
elif [ -n "$cs" ]; then
  for tool in ${CS_TOOLS:-memcheck racecheck}; do
    echo "== compute-sanitizer --tool $tool on the parity test"
    "$cs" --tool "$tool" --error-exitcode 3 "$mls" tests/gpu/parity.mls > "${TMPDIR:-/tmp}/cs-$tool.log" 2>&1
    st=$?
    tail -2 "${TMPDIR:-/tmp}/cs-$tool.log"
    [ $st -eq 0 ] || { fail=1; grep -m 20 "=========" "${TMPDIR:-/tmp}/cs-$tool.log"; }
  done
else
  echo "== compute-sanitizer: not installed, not run"
fi
[ $fail -eq 0 ] && echo "make test-gpu: all GPU suites passed${MLS_SIM_GPU:+ (on the simulated GPU)}"
exit $fail
