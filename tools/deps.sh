#!/bin/sh
# deps.sh — checks the build and test dependencies by Debian package name (dpkg-query), never
# by a header that another package may provide (Debian's reference libblas-dev ships a
# cblas.h too). With --install, installs the missing ones with apt-get when run as root,
# else names them and fails. DEPS_PKGS replaces the list and DEPS_UID the user id (the test,
# tests/install/test_deps.sh, runs it against stand-ins of dpkg-query and apt-get).
set -u
# build: compiler, generators, libraries; test: python3 (REPL harness), man-db (install
# test), the Fashion-MNIST files (examples), clang and its libFuzzer/sanitizer runtimes
# (tests/fuzz: clang is Debian 12's clang-14, whose runtimes are libclang-rt-14-dev); plots
# (cairo), the Jupyter kernel (ZeroMQ, jansson; jupyter_client and nbconvert drive its test;
# jupyter-client and jupyter-console give `jupyter kernelspec list` and `jupyter console`),
# MPI (OpenMPI: optional to build, installed so the tests run), coverage (lcov), libxsmm's
# kernels for small products (optional to build, as MPI)
PKGS="gcc make re2c lemon libopenblas-dev liblapacke-dev libreadline-dev zlib1g-dev graphviz \
libcmocka-dev python3 man-db dataset-fashion-mnist clang libclang-rt-14-dev pkg-config \
libcairo2-dev libzmq3-dev libjansson-dev python3-jupyter-client jupyter-client jupyter-console \
jupyter-nbconvert libopenmpi-dev openmpi-bin lcov libssl-dev libsuitesparse-dev libxsmm-dev"
PKGS=${DEPS_PKGS:-$PKGS}
# installed: unpacked and configured; a package whose triggers (man-db's index, ...) are still
# to run ("triggers-pending", "triggers-awaited") works already
installed() {
  case "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" in
  "install ok installed" | "install ok triggers-pending" | "install ok triggers-awaited") return 0 ;;
  *) return 1 ;;
  esac
}
# apt_get ARGS...: apt-get, waiting while another process holds the apt or dpkg lock (an
# unattended upgrade, a second make run) instead of failing: up to DEPS_LOCK_WAIT seconds
# (default 600), with a message, then its own error
apt_get() {
  waited=0 said=""
  while :; do
    out=$(apt-get -o DPkg::Lock::Timeout=10 "$@" 2>&1) && return 0
    case "$out" in
    *"Could not get lock"* | *"Unable to lock"* | *"is held by process"* | *"Unable to acquire the dpkg frontend lock"*)
      if [ "$waited" -ge "${DEPS_LOCK_WAIT:-600}" ]; then printf '%s\n' "$out" >&2; return 1; fi
      [ -n "$said" ] || { echo "deps: waiting for the apt lock, which another process holds (up to ${DEPS_LOCK_WAIT:-600} s)" >&2; said=1; }
      sleep "${DEPS_LOCK_POLL:-5}"
      waited=$((waited + ${DEPS_LOCK_POLL:-5})) ;;
    *) printf '%s\n' "$out" >&2; return 1 ;;
    esac
  done
}
missing=""
for p in $PKGS; do installed "$p" || missing="$missing $p"; done
missing=${missing# }
[ -z "$missing" ] && exit 0
if [ "${1:-}" = "--install" ] && [ "${DEPS_UID:-$(id -u)}" = 0 ]; then
  echo "deps: installing $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -qq && apt_get install -y -qq $missing || { echo "deps: apt-get failed" >&2; exit 1; }
  for p in $missing; do installed "$p" || { echo "deps: $p did not install" >&2; exit 1; }; done
  exit 0
fi
echo "mls: missing packages: $missing" >&2
echo "     install them with: sudo apt-get install $missing   (or run 'make test' as root)" >&2
exit 1
