#!/bin/sh
# deps.sh — checks the build dependencies (Debian packages); with --install, installs the
# missing ones with apt-get when run as root, else names them and fails.
set -u
missing=""
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing="$missing $2"; }
need_hdr() { [ -e "$1" ] || missing="$missing $2"; }
need_cmd cc gcc
need_cmd make make
need_cmd re2c re2c
need_cmd lemon lemon
need_hdr /usr/share/lemon/lempar.c lemon
need_hdr /usr/include/x86_64-linux-gnu/cblas.h libopenblas-dev
[ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ] || [ -e /usr/include/aarch64-linux-gnu/cblas.h ] || missing="$missing libopenblas-dev"
need_hdr /usr/include/lapacke.h liblapacke-dev
need_hdr /usr/include/readline/readline.h libreadline-dev
need_hdr /usr/include/cmocka.h libcmocka-dev
need_hdr /usr/include/zlib.h zlib1g-dev
need_cmd python3 python3
need_hdr /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz dataset-fashion-mnist
# the cblas.h check above is arch-specific; drop a duplicate when another arch path exists
if [ -e /usr/include/cblas.h ] || [ -e /usr/include/aarch64-linux-gnu/cblas.h ]; then
  missing=$(echo "$missing" | sed 's/ libopenblas-dev//')
  [ -e /usr/include/x86_64-linux-gnu/cblas.h ] || [ -e /usr/include/cblas.h ] || [ -e /usr/include/aarch64-linux-gnu/cblas.h ] || missing="$missing libopenblas-dev"
fi
missing=$(echo "$missing" | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/^ *//; s/ *$//')
[ -z "$missing" ] && exit 0
if [ "${1:-}" = "--install" ] && [ "$(id -u)" = 0 ]; then
  echo "deps: installing $missing"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq $missing >/dev/null || { echo "deps: apt-get failed" >&2; exit 1; }
  exit 0
fi
echo "mls: missing build dependencies: $missing" >&2
echo "     install them with: sudo apt-get install $missing   (or run 'make test' as root)" >&2
exit 1
