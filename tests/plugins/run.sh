#!/bin/sh
# run.sh — mls without its optional libraries (issue 31, docs/architecture.md "Plugins"): with
# MLS_PLUGIN_DIR naming an empty directory, the plugins (libmls_plot.so, libmls_kernel.so,
# libmls_mpi.so, libmls_xsmm.so) are hidden, as on a machine without cairo, ZeroMQ or OpenMPI. plot() and the
# Jupyter kernel must then fail with their located error, a plugin that is there but cannot be
# loaded must say why, mpi_size() must be 1 under mpirun's environment, and every golden suite
# but the plots' must still pass; with the plugins visible the same plot() writes its PNG. The
# binary itself must link none of the plugins' libraries. Usage: tests/plugins/run.sh [./mls]
set -u
mls=${1:-./mls}
case $mls in /*) ;; *) mls=$(pwd)/$mls ;; esac
bdir=$(cd "$(dirname "$mls")" && pwd)
[ -e "$bdir/libmls_plot.so" ] || bdir=$bdir/build       # ./mls: the plugins are in build/
T=$(mktemp -d /tmp/mls-plugins.XXXXXX)
trap 'rm -rf "$T"' EXIT
export MLS_PATH="${MLS_PATH:-$(cd "$(dirname "$0")/../.." && pwd)/stdlib}"
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL plugins: $1"; sed 's/^/  | /' "$T/err" | head -20; }
mkdir "$T/none"

# the binary links no library of a plugin
if ldd "$mls" >"$T/err" 2>&1 && ! grep -E 'libcairo|libzmq|libcrypto|libssl|libmpi|libhwloc|libX11' "$T/err" >/dev/null; then ok
else bad "ldd $mls lists a plugin's library"; fi

# plot() without the plugin: the located error, nothing written
cd "$T" || exit 1
MLS_PLUGIN_DIR=$T/none "$mls" -e 'x = 1
plot([1, 2, 3])' >"$T/out" 2>"$T/err"
st=$?
if [ $st -eq 1 ] && [ "$(head -1 "$T/err")" = "-e:2:1: error: plot: plots need cairo: libmls_plot.so could not be loaded (not found in $T/none)" ] &&
   [ ! -e mlsplot001.png ]; then ok; else bad "plot() without libmls_plot.so: status $st"; fi

# hist(plot=FALSE) draws nothing, so it needs no cairo
MLS_PLUGIN_DIR=$T/none "$mls" -e 'h = hist([1, 2, 2, 3, 3, 3], breaks=[0, 1, 2, 3], plot=FALSE); print(t(h$counts))' >"$T/out" 2>"$T/err"
if [ $? -eq 0 ] && [ "$(cat "$T/out")" = "1 2 3" ]; then ok; else bad "hist(plot=FALSE) without libmls_plot.so: $(cat "$T/out")"; fi

# a plugin that is there but does not load says what dlopen said
mkdir "$T/broken" && echo "not a library" >"$T/broken/libmls_plot.so"
MLS_PLUGIN_DIR=$T/broken "$mls" -e 'plot([1, 2])' >"$T/out" 2>"$T/err"
st=$?
if [ $st -eq 1 ] && head -1 "$T/err" | grep -q "^-e:1:1: error: plot: plots need cairo: libmls_plot.so could not be loaded ($T/broken/libmls_plot.so: .*)$"; then ok
else bad "plot() with a broken libmls_plot.so: status $st"; fi

# the Jupyter kernel without its plugin: status 2 and the reason
echo '{}' >"$T/conn.json"
MLS_PLUGIN_DIR=$T/none "$mls" --jupyter-kernel "$T/conn.json" >"$T/out" 2>"$T/err"
st=$?
if [ $st -eq 2 ] && [ "$(cat "$T/err")" = "mls: the Jupyter kernel needs ZeroMQ, jansson and OpenSSL: libmls_kernel.so could not be loaded (not found in $T/none)" ]; then ok
else bad "--jupyter-kernel without libmls_kernel.so: status $st"; fi

# under mpirun's environment without the MPI plugin: a warning, then one process
OMPI_COMM_WORLD_SIZE=2 MLS_PLUGIN_DIR=$T/none "$mls" -e 'print(mpi_size()); print(allreduce(3))' >"$T/out" 2>"$T/err"
st=$?
if [ $st -eq 0 ] && [ "$(tr '\n' ' ' <"$T/out")" = "1 3 " ] &&
   [ "$(cat "$T/err")" = "mls: warning: started by mpirun, but MPI needs OpenMPI: libmls_mpi.so could not be loaded (not found in $T/none); this rank runs as one process" ]; then ok
else bad "mpi_size() under OMPI_COMM_WORLD_SIZE without libmls_mpi.so: status $st, $(cat "$T/out")"; fi

# everything else works: the golden suites but the plots', the plugins hidden
cd "$OLDPWD" || exit 1
tests=$(ls tests/lang/*.test | grep -v '/plot')
# shellcheck disable=SC2086
if MLS_PLUGIN_DIR=$T/none "$mls" --run-tests $tests >"$T/err" 2>&1; then ok
else bad "the golden suites with the plugins hidden: $(tail -1 "$T/err")"; fi

# and with the plugins visible, the same plot() writes its figure
if [ -e "$bdir/libmls_plot.so" ]; then
  cd "$T" || exit 1
  MLS_PLUGIN_DIR=$bdir "$mls" -e 'plot([1, 2, 3])' >"$T/out" 2>"$T/err"
  if [ $? -eq 0 ] && [ "$(cat "$T/out")" = "plot: mlsplot001.png" ] && head -c 8 mlsplot001.png | od -c | grep -q 'P   N   G'; then ok
  else bad "plot() with $bdir/libmls_plot.so"; fi
  cd "$OLDPWD" || exit 1
else
  echo "plugins-test: $bdir/libmls_plot.so was not built (no cairo): the check with the plugin visible is left out"
fi

# libxsmm (libmls_xsmm.so, docs/architecture.md "Small products"): hidden, the products are
# OpenBLAS's and --version names no libxsmm; visible, --version names it, a product its rule takes
# gives the same bits on one thread and on four (the panels are cut by the shapes alone), and
# MLS_XSMM=0 turns it off, its values within 1e-13 of libxsmm's
xprog='X = rand(rows=300, cols=784, seed=1, min=-1, max=1); W = rand(rows=784, cols=256, seed=2, min=-1, max=1)
G = rand(rows=128, cols=256, seed=3, min=-1, max=1); V = rand(rows=784, cols=10, seed=4, min=-1, max=1)
xb = X[101:228, ]
P = list(xb %*% W, t(xb) %*% G, X[1:100, ] %*% V, t(X[1:100, ]) %*% (X[1:100, ] %*% V))
for (i in 1:4) print(sum(P[i] * P[i]))'
MLS_PLUGIN_DIR=$T/none "$mls" --version >"$T/out" 2>"$T/err"
if [ $? -eq 0 ] && grep -q '^cpu backend: OpenBLAS' "$T/out" && ! grep -q libxsmm "$T/out"; then ok
else bad "--version with the plugins hidden: $(cat "$T/out")"; fi
# main lets OpenBLAS's idle threads sleep at once (docs/architecture.md), unless the user chose
env -u OPENBLAS_THREAD_TIMEOUT "$mls" --version >"$T/out" 2>"$T/err"
if grep -q '(idle threads spin 2^4 cycles)' "$T/out"; then ok
else bad "--version names OPENBLAS_THREAD_TIMEOUT=4 by default: $(cat "$T/out")"; fi
OPENBLAS_THREAD_TIMEOUT=20 "$mls" --version >"$T/out" 2>"$T/err"
if grep -q '(idle threads spin 2^20 cycles)' "$T/out"; then ok
else bad "--version keeps the user's OPENBLAS_THREAD_TIMEOUT=20: $(cat "$T/out")"; fi
if [ -e "$bdir/libmls_xsmm.so" ]; then
  MLS_PLUGIN_DIR=$bdir "$mls" --version >"$T/out" 2>"$T/err"
  if grep -q '; small products: libxsmm 1\.[0-9]* (.* kernels)$' "$T/out"; then ok
  else bad "--version with libmls_xsmm.so: $(cat "$T/out")"; fi
  MLS_PLUGIN_DIR=$bdir "$mls" --threads 1 --digits 17 -e "$xprog" >"$T/x1" 2>"$T/err" &&
  MLS_PLUGIN_DIR=$bdir "$mls" --threads 4 --digits 17 -e "$xprog" >"$T/x4" 2>>"$T/err" &&
  MLS_XSMM=0 MLS_PLUGIN_DIR=$bdir "$mls" --digits 17 -e "$xprog" >"$T/x0" 2>>"$T/err"
  st=$?
  MLS_XSMM=0 MLS_PLUGIN_DIR=$bdir "$mls" --version >"$T/out" 2>>"$T/err"
  if [ $st -eq 0 ] && [ "$(wc -l <"$T/x1")" -eq 4 ] && cmp -s "$T/x1" "$T/x4" && ! grep -q libxsmm "$T/out" &&
     paste "$T/x1" "$T/x0" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-13 * $2) bad = 1 } END { exit bad }'; then ok
  else bad "libxsmm products: threads 1 $(tr '\n' ' ' <"$T/x1"), threads 4 $(tr '\n' ' ' <"$T/x4"), OpenBLAS $(tr '\n' ' ' <"$T/x0")"; fi
else
  echo "plugins-test: $bdir/libmls_xsmm.so was not built (no libxsmm-dev): the checks with it visible are left out"
fi
# a libmls_xsmm.so that is there but does not load: the products are OpenBLAS's, and --version
# says why
echo "not a library" >"$T/broken/libmls_xsmm.so"
MLS_PLUGIN_DIR=$T/broken "$mls" -e 'print(sum([1, 2; 3, 4] %*% [1, 0; 0, 1]))' >"$T/out" 2>"$T/err"
st=$?
MLS_PLUGIN_DIR=$T/broken "$mls" --version >"$T/ver" 2>>"$T/err"
if [ $st -eq 0 ] && [ "$(cat "$T/out")" = "10" ] &&
   grep -q "; small products: OpenBLAS (libxsmm kernels: libmls_xsmm.so could not be loaded ($T/broken/libmls_xsmm.so: .*))$" "$T/ver"; then ok
else bad "a broken libmls_xsmm.so: status $st, $(cat "$T/out"), $(cat "$T/ver")"; fi

echo "plugins-test: $pass passed, $fail failed"
[ $fail -eq 0 ]
