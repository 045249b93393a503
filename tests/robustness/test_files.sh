#!/bin/bash
# Writes that must not damage what they should not, and signals in script mode (issue 12 item 7).
# Usage: tests/robustness/test_files.sh ./mls
set -u
MLS=$(realpath "${1:-./mls}")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
fail=0
ok()  { echo "ok   $1"; }
bad() { echo "FAIL $1"; fail=1; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }

# 1. the data and its .mtd sidecar commit together: a sidecar that cannot be written keeps the old data
echo old > d.csv
mkdir d.csv.mtd
echo 'write([1, 2], "d.csv")' > w.mls
"$MLS" w.mls > out 2> err; rc=$?
check "a sidecar that cannot be written is a located error" "[ $rc = 1 ] && grep -q \"w.mls:1:1: error: write: cannot write 'd.csv.mtd': it is a directory\" err"
check "... and the data file is left as it was" "[ \"\$(cat d.csv)\" = old ]"
check "... and no temporary file is left" "[ -z \"\$(ls | grep tmp)\" ]"

# 2. a read-only target is refused, not replaced
echo keep > ro.csv; chmod 444 ro.csv
echo 'write([1, 2], "ro.csv")' > w.mls
"$MLS" w.mls > out 2> err; rc=$?
check "a read-only target is refused" "[ $rc = 1 ] && grep -q \"cannot write 'ro.csv': it is read-only\" err && [ \"\$(cat ro.csv)\" = keep ]"

# 3. a FIFO is written into, not replaced by a regular file
mkfifo ff
cat ff > fifo_out &
reader=$!
echo 'write([5, 6], "ff", format="csv")' > w.mls
"$MLS" w.mls > out 2> err; rc=$?
wait $reader
check "a FIFO is written into" "[ $rc = 0 ] && [ \"\$(cat fifo_out)\" = 5,6 ] && [ -p ff ] && [ ! -e ff.mtd ]"

# 4. /dev/stdout: written in order with print, and the file behind it is not replaced
printf 'print("before")\nwrite([7, 8], "/dev/stdout", format="csv")\nprint("after")\n' > w.mls
"$MLS" w.mls > so 2> err; rc=$?
check "/dev/stdout is written in place, in order with print" "[ $rc = 0 ] && [ \"\$(cat so)\" = \"\$(printf 'before\n7,8\nafter')\" ]"

# 5. a character device
echo 'write([1, 2], "/dev/null", format="csv")' > w.mls
"$MLS" w.mls > out 2> err; rc=$?
check "/dev/null stays a character device" "[ $rc = 0 ] && [ -c /dev/null ] && [ ! -e /dev/null.mtd ]"

# 6. SIGINT in script mode: a located 'interrupted' error, status 130; SIGTERM: 143
printf 'i = 0\nwhile (TRUE) {\n  i = i + 1\n}\n' > loop.mls
"$MLS" loop.mls > out 2> err & pid=$!
sleep 0.5; kill -INT $pid; wait $pid; rc=$?
check "SIGINT: status 130 and a located error" "[ $rc = 130 ] && grep -q 'loop.mls:2:1: error: interrupted' err"
"$MLS" loop.mls > out 2> err & pid=$!
sleep 0.5; kill -TERM $pid; wait $pid; rc=$?
check "SIGTERM: status 143 and a located error" "[ $rc = 143 ] && grep -q 'loop.mls:2:1: error: terminated (SIGTERM)' err"

# 7. SIGINT during writes leaves no temporary file behind
printf 'X = rand(rows=1000, cols=1000, seed=1)\nfor (k in 1:1000) write(X, "big.csv")\n' > w.mls
"$MLS" w.mls > out 2> err & pid=$!
sleep 1.5; kill -INT $pid; wait $pid; rc=$?
check "SIGINT while writing: status 130, no temporary file" "[ $rc = 130 ] && grep -q 'error: interrupted' err && [ -z \"\$(ls | grep tmp)\" ]"
check "... and big.csv is whole (a complete earlier write, or none)" "[ ! -e big.csv ] || [ \$(wc -l < big.csv) = 1000 ]"

# 7b. a long builtin polls the flag: turning 3.3 million numbers into text (about 2 s) stops
printf 's = "" + (12345678:9012345)\nprint("not reached")\n' > cc.mls
"$MLS" cc.mls > out 2> err & pid=$!
sleep 0.7; kill -INT $pid; wait $pid; rc=$?
check "SIGINT while formatting a long text: status 130, located" "[ $rc = 130 ] && grep -q 'cc.mls:1:5: error: interrupted' err && [ ! -s out ]"

# 8. a NUL byte inside a closed string is named as such (it said "unterminated string")
printf 'x = "ab\0cd"\nprint(x)\n' > nul.mls
"$MLS" nul.mls > out 2> err; rc=$?
check "a NUL byte inside a string is a located error" "[ $rc = 2 ] && grep -q 'nul.mls:1:8: error: NUL byte inside a string' err"
printf 'x = "abcd\n' > unt.mls
"$MLS" unt.mls > out 2> err; rc=$?
check "an unterminated string is still called that" "[ $rc = 2 ] && grep -q 'unt.mls:1:5: error: unterminated string' err"

exit $fail
