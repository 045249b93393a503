#!/bin/sh
# run.sh — the nn layer suite (issue 11): tests/dml/nn/layers/NAME.dml are the project's own
# DML files with the API and math of SystemDS's scripts/nn/layers/NAME.dml (forward and a
# hand-written backward; no SystemDS code), tests/dml/nn/optim/NAME.dml likewise for the
# optimizers. Each tests/dml/nn/test_*.dml checks one file: for a layer, that grad of
# sum(forward(...) * dout) equals its backward to 1e-9 (and forward against an independent
# value); for an optimizer, its update against a hand derivation. A test prints its checks
# and stop()s on the first failure. Every test runs eagerly, then under --staged and
# --jit-all. Usage: tests/dml/nn/run.sh [./mls]
set -u
mls=${1:-./mls}
case $mls in /*) ;; *) mls=$(pwd)/$mls ;; esac
lib=${MLS_PATH:-$(cd "$(dirname "$mls")" && pwd)/stdlib}
export MLS_PATH="$lib"
cd "$(dirname "$0")" || exit 1
T=$(mktemp /tmp/mls-nn.XXXXXX)
trap 'rm -f "$T"' EXIT
pass=0
fail=0
for t in test_*.dml; do
  [ -f "$t" ] || continue
  for flags in "" --staged --jit-all; do
    name="${t%.dml}${flags:+ $flags}"
    # shellcheck disable=SC2086
    if $mls $flags "$t" >"$T" 2>&1; then
      pass=$((pass + 1)); echo "ok   $name"
    else
      fail=$((fail + 1)); echo "FAIL $name:"; sed 's/^/    /' "$T"
    fi
  done
done
echo "nn: $pass passed, $fail failed"
[ $fail = 0 ]
