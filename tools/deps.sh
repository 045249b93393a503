#!/bin/sh
# deps.sh — checks the build and test dependencies by Debian package name (dpkg-query), never
# by a header that another package may provide (Debian's reference libblas-dev ships a
# cblas.h too). With --install, installs the missing ones with apt-get when run as root,
# else names them and fails.
set -u
# build: compiler, generators, libraries; test: python3 (REPL harness), man-db (install
# test), the Fashion-MNIST files (examples), clang and its libFuzzer/sanitizer runtimes
# (tests/fuzz: clang is Debian 12's clang-14, whose runtimes are libclang-rt-14-dev); plots
# (cairo), the Jupyter kernel (ZeroMQ, jansson; jupyter_client and nbconvert drive its test;
# jupyter-client and jupyter-console give `jupyter kernelspec list` and `jupyter console`),
# MPI (OpenMPI: optional to build, installed so the tests run), coverage (lcov)
PKGS="gcc make re2c lemon libopenblas-dev liblapacke-dev libreadline-dev zlib1g-dev graphviz \
libcmocka-dev python3 man-db dataset-fashion-mnist clang libclang-rt-14-dev pkg-config \
libcairo2-dev libzmq3-dev libjansson-dev python3-jupyter-client jupyter-client jupyter-console \
jupyter-nbconvert libopenmpi-dev openmpi-bin lcov libssl-dev libsuitesparse-dev"
installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }
missing=""
for p in $PKGS; do installed "$p" || missing="$missing $p"; done
missing=${missing# }
[ -z "$missing" ] && exit 0
if [ "${1:-}" = "--install" ] && [ "$(id -u)" = 0 ]; then
  echo "deps: installing $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq $missing >/dev/null || { echo "deps: apt-get failed" >&2; exit 1; }
  for p in $missing; do installed "$p" || { echo "deps: $p did not install" >&2; exit 1; }; done
  exit 0
fi
echo "mls: missing packages: $missing" >&2
echo "     install them with: sudo apt-get install $missing   (or run 'make test' as root)" >&2
exit 1
