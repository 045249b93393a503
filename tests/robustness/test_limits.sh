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

# ---- defect 7: what --max-memory bounds ----
# (a sanitizer build sets no process bound and holds freed memory in quarantine: these checks
# of the release build's memory would not hold, and the bound's test would grow unbounded)
printf 'x = 1\n' > r.mls
MLS_MEM_REPORT=1 "$MLS" --max-memory 100M r.mls > out 2> err
if grep -q 'process bound 0 KiB' err; then
  echo "skip the memory checks: this build sets no process bound (a sanitizer build)"
  exit $fail
fi
# The peak resident memory (VmHWM of /proc/self/status, printed by MLS_MEM_REPORT=1 at exit)
# must stay within the limit plus SLACK: code, libraries and OpenBLAS's packing buffers, which
# are not counted (docs/robustness.md "Memory": about 15 MiB idle, up to 32 MiB a BLAS thread).
# Two BLAS threads, so that the figure is the same on every machine.
SLACK=64
# runs r.mls under --max-memory $1 (MiB) with MLS_MEM_REPORT: the peak in $hwm (MiB)
mem_run() {
  local lim=$1; shift
  MLS_MEM_REPORT=1 "$MLS" --threads 2 --max-memory "${lim}M" "$@" r.mls > out 2> err; rc=$?
  hwm=$(sed -n 's/^mls: memory: VmHWM \([0-9]*\) KiB.*/\1/p' err); hwm=$(( ${hwm:-999999999} / 1024 ))
}
within() { [ "$hwm" -le $(( $1 + SLACK )) ]; }

printf 'A = rand(rows=1500, cols=1500, seed=1)\n[U, S, V] = svd(A)\nprint(max(abs(U %%*%% S %%*%% t(V) - A)) < 1e-9)\n' > r.mls
mem_run 100
check "svd of 1500x1500 under 100M: LAPACK's workspace is counted, a located error (it reached 357 MB at 200M)" \
  "[ $rc = 1 ] && grep -q 'r.mls:2:13: error: out of memory allocating .* of LAPACK workspace for svd: over the limit of 100.0 MiB' err && within 100"
mem_run 300
check "... under 300M it runs, its peak ($hwm MiB) within the limit" "[ $rc = 0 ] && [ \"\$(cat out)\" = TRUE ] && within 300"

printf 'x = seq(1, 1e7)\no = order(target=x, decreasing=TRUE, index.return=TRUE)\nprint(o[1])\n' > r.mls
mem_run 200
check "order of 1e7 under 200M: its sort buffer is counted, a located error (it reached 287 MB)" \
  "[ $rc = 1 ] && grep -q 'r.mls:2:5: error: out of memory allocating 114.4 MiB of workspace: over the limit of 200.0 MiB' err && within 200"
mem_run 300
check "... under 300M it runs, its peak ($hwm MiB) within the limit" "[ $rc = 0 ] && [ \"\$(cat out)\" = 1e+07 ] && within 300"

printf 'x = sprintf("%%2147483647s", "")\n' > r.mls
mem_run 10
check "sprintf of a 2^31-wide field under 10M: a located error at once (it took 4.2 GB)" \
  "[ $rc = 1 ] && grep -q 'the field width 2147483647 is over the limit of 8192' err && within 10"
printf 's = "x"\nfor (i in 1:40) s = paste(s, s, sep="")\n' > r.mls
mem_run 100
check "a string doubled under 100M: strings are counted, a located error, peak $hwm MiB" \
  "[ $rc = 1 ] && grep -q 'r.mls:2:21: error: out of memory allocating 64.0 MiB: over the limit of 100.0 MiB (--max-memory), 64.0 MiB in use' err && within 100"
printf 's = "x"\nfor (i in 1:26) s = paste(s, s, sep="")\nprint(nchar(s))\n' > r.mls
mem_run 100
check "... a 64 MiB string under 100M is made (the text buffer becomes the string), peak $hwm MiB" \
  "[ $rc = 0 ] && [ \"\$(cat out)\" = 67108864 ] && within 100"

printf 'write(matrix(1, rows=2000000, cols=1), "c.csv")\n' > r.mls; "$MLS" r.mls
printf 'X = read("c.csv")\nprint(sum(X))\n' > r.mls
mem_run 40
check "reading a 16 MiB csv under 40M: the numbers held before the shape is known are counted, peak $hwm MiB" \
  "[ $rc = 0 ] && [ \"\$(cat out)\" = 2e+06 ] && within 40"
mem_run 12
check "... under 12M a located error naming them" \
  "[ $rc = 1 ] && grep -q 'r.mls:1:5: error: out of memory allocating 2.5 MiB of workspace (the numbers read so far): over the limit of 12.0 MiB' err && within 12"

# the process bound: what is not counted (lists, environments, code) meets RLIMIT_DATA, set from
# the limit, as a located error rather than the machine's OOM killer
printf 'x = 1\n' > r.mls
MLS_MEM_REPORT=1 "$MLS" --threads 1 --max-memory 10M r.mls > out 2> err
bound=$(sed -n 's/.*process bound \([0-9]*\) KiB.*/\1/p' err)
printf 'base = list()\nfor (i in 1:1000) { base[[i]] = i }\nstore = list()\nfor (k in 1:10000000) { store[[k]] = append(base, k) }\n' > r.mls
# (in a shell whose address space is capped 2 GiB above the bound: should the kernel ignore
# RLIMIT_DATA, the run stops there instead of taking the machine's memory)
(ulimit -v $(( bound + 2 * 1024 * 1024 )); mem_run 10 --threads 1; echo "$rc" > rc)
rc=$(cat rc)
check "uncounted memory past the process bound is a located error" \
  "[ $rc = 1 ] && grep -q \"r.mls:4:38: error: out of memory (allocating .*; with --max-memory the process's memory is bounded at\" err"
printf 'A = rand(rows=1500, cols=1500, seed=1)\nB = A %%*%% A\nE = eigen(B %%*%% t(B))\nprint(sum(B) > 0)\n' > r.mls
mem_run 200
check "under the bound OpenBLAS's threads start and run (a product on 2 threads, eigen)" \
  "[ $rc = 0 ] && [ \"\$(cat out)\" = TRUE ] && grep -q 'process bound [1-9]' err && within 200"
printf 'x = 1\n' > r.mls
MLS_MEM_REPORT=1 "$MLS" r.mls > out 2> err
check "without --max-memory no bound is set" "grep -q 'limit 0 KiB, process bound 0 KiB' err"

exit $fail
