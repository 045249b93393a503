#!/bin/bash
# Issue 25: readers that refuse truncated, padded and NUL-holding files (defect 6), and the
# memory that --max-memory bounds (defect 7). The crafted inputs are in tests/robustness/files
# (gen_files.py remakes them). Usage: tests/robustness/test_limits.sh ./mls
set -u
MLS=$(realpath "${1:-./mls}")
FILES=$(realpath "$(dirname "$0")/files")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 1
cp "$FILES"/*.gz "$FILES"/*.csv "$FILES"/*.ckpt .
fail=0
ok()  { echo "ok   $1"; }
bad() { echo "FAIL $1"; sed 's/^/     /' err; fail=1; }
check() { if eval "$2"; then ok "$1"; else bad "$1"; fi; }
# runs the program $1 as r.mls: status in $rc, output in out and err
run() { printf '%s\n' "$1" > r.mls; shift; "$MLS" "$@" r.mls > out 2> err; rc=$?; }

# ---- defect 6: readers ----
run 'X = read("cut.csv.gz", format="csv")'
check "a truncated gzip stream is a located error (it read half the rows, status 0)" \
  "[ $rc = 1 ] && grep -q \"r.mls:1:5: error: read: 'cut.csv.gz' is truncated: its gzip data ends early, after 1909 bytes (gzip -t: unexpected end of file)\" err"
run 'X = read("cut.npy.gz", format="npy")'
check "... also when the data is whole and only the gzip trailer is cut (npy stops reading at its data)" \
  "[ $rc = 1 ] && grep -q \"read: 'cut.npy.gz' is truncated: its gzip data ends early\" err"
run 'X = read("pad.csv.gz", format="csv")'
check "bytes after a gzip member that start no other member are a located error" \
  "[ $rc = 1 ] && grep -q \"r.mls:1:5: error: read: 'pad.csv.gz' is corrupt: 8 bytes after the end of its gzip data (at byte 3820), which do not start another gzip member\" err"
run 'X = read("two.csv.gz", format="csv"); print(nrow(X) + " " + sum(X))'
check "two gzip members are one file (gzip concatenates them)" "[ $rc = 0 ] && [ \"\$(cat out)\" = '1000 1501500' ]"
run 'X = read("zeros.csv.gz", format="csv"); print(nrow(X))'
check "zero bytes after the last member are padding, as gzip takes them" "[ $rc = 0 ] && [ \"\$(cat out)\" = 1000 ]"
run 'X = read("nul.csv")'
check "a NUL byte in a csv cell is an error with the file's line and column (the cell was cut there)" \
  "[ $rc = 1 ] && grep -q 'r.mls:1:5: error: read: nul.csv:2:4: a NUL byte (text files hold none: is it a binary file?)' err"
printf '1,2\n' > m.csv; printf '{"rows": 1,\0 "cols": 2}' > m.csv.mtd
run 'X = read("m.csv")'
check "... and one in a .mtd sidecar" "[ $rc = 1 ] && grep -q \"read: 'm.csv.mtd' is not a valid .mtd file (a NUL byte at byte 12)\" err"
run 'L = load("dup.ckpt")'
check "a checkpoint naming an entry twice is a located error" \
  "[ $rc = 1 ] && grep -q \"r.mls:1:5: error: load: 'dup.ckpt' is corrupt (entry 3 of 3: the name 'a' is given twice)\" err"
run 'L = load("dupnested.ckpt")'
check "... and one whose list names an item twice" \
  "[ $rc = 1 ] && grep -q \"load: 'dupnested.ckpt' is corrupt (entry 1 of 1: the name 'x' is in one list twice)\" err"
run 'L = load("badname.ckpt")'
check "a name that is not UTF-8 is a located error" \
  "[ $rc = 1 ] && grep -q \"load: 'badname.ckpt' is corrupt (entry 2 of 2: a name that is not UTF-8)\" err"
run 'L = load("nulname.ckpt")'
check "... a name with a NUL byte" "[ $rc = 1 ] && grep -q \"load: 'nulname.ckpt' is corrupt (entry 1 of 1: a name with a NUL byte)\" err"
run 'L = load("nulstr.ckpt")'
check "... a string with a NUL byte (MLS strings hold none: it would be cut)" \
  "[ $rc = 1 ] && grep -q \"load: 'nulstr.ckpt' is corrupt (entry 1 of 1: a string with a NUL byte)\" err"
printf 'l = list(a=1)\nl["a\377b"] = 2\nsave("u.ckpt", l=l)\n' > r.mls; "$MLS" r.mls > out 2> err; rc=$?
check "save() refuses the non-UTF-8 name load() would refuse" \
  "[ $rc = 1 ] && grep -q \"r.mls:3:1: error: save: 'l' holds a name that is not UTF-8 (load() would refuse it)\" err && [ ! -e u.ckpt ]"

exit $fail
