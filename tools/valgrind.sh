#!/bin/sh
# valgrind.sh — runs the golden suite and the examples under valgrind (memcheck): any invalid
# access or definite leak makes the case fail (exit 99). Slow: a few minutes.
set -e
mls=${1:-./mls}
export MLS_TEST_WRAP="valgrind -q --suppressions=$(cd "$(dirname "$0")" && pwd)/valgrind.supp --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect --child-silent-after-fork=yes"
"$mls" --run-tests tests/lang/*.test
for f in examples/tour.mls; do $MLS_TEST_WRAP "$mls" "$f" >/dev/null; done
/usr/bin/python3 tests/kernel/test_kernel.py "$mls"   # the Jupyter kernel: exit status 99 fails it
echo "valgrind: clean"
