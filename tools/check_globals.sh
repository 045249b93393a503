#!/bin/sh
# check_globals.sh — no mutable file-scope state (issue 26, STYLE.md §8.1, docs/robustness.md
# "Global state"): lists the writable data symbols of the build's objects and fails on any not
# in the allow-list.
#   tools/check_globals.sh [-v] [BUILD_DIR [ALLOW_FILE]]      (make globals-check)
# A writable data symbol is an object (or thread-local) symbol in .data, .bss, .tdata, .tbss
# or a .data.* / .bss.* section, or a common symbol; .data.rel.ro* is read-only once the
# program is relocated (a const table of pointers lives there) and does not count, nor does
# .rodata. Every object under BUILD_DIR/src is read: the interpreter's, and the CUDA plugin's
# (src/backend/cuda/*.o) when it was built.
# The allow-list has one entry a line, "OBJECT SYMBOL  # why", OBJECT relative to BUILD_DIR;
# both may be shell patterns (nvcc's generated launch stubs). A compiler renames a function's
# static variable NAME to NAME.N (gcc) or FUNCTION.NAME (clang): the entry NAME matches it. An
# entry without a reason after '#' is an error; entries that match nothing in an object that
# exists are counted in a note (-v names them), not a failure: a configuration (CUDA, MPI, a
# sanitizer, -O0) may have a symbol another lacks. The symbols of instrumentation (sanitizers,
# coverage) are not the program's and are skipped.
set -u
verbose=0
[ "${1:-}" = -v ] && { verbose=1; shift; }
build=${1:-build}
allow=${2:-tools/globals_allow.txt}
me=tools/check_globals.sh
[ -d "$build/src" ] || { echo "$me: no objects: $build/src does not exist (build first)" >&2; exit 2; }
[ -r "$allow" ] || { echo "$me: cannot read the allow-list $allow" >&2; exit 2; }
command -v nm >/dev/null || { echo "$me: nm (binutils) is needed" >&2; exit 2; }

tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT INT TERM

# the entries: "object symbol why" (bad lines go to bad)
awk -v allow="$allow" '
  { line = $0; sub(/^[ \t]+/, "", line) }
  line == "" || line ~ /^#/ { next }
  {
    why = ""; h = index(line, "#")
    if (h) { why = substr(line, h + 1); line = substr(line, 1, h - 1) }
    gsub(/^[ \t]+|[ \t]+$/, "", why); gsub(/^[ \t]+|[ \t]+$/, "", line)
    n = split(line, f, /[ \t]+/)
    if (n != 2 || why == "") { printf "%s:%d: want \"OBJECT SYMBOL  # why\": %s\n", allow, NR, $0 > "/dev/stderr"; bad = 1; next }
    print f[1], f[2], NR
  }
  END { exit bad }' "$allow" >"$tmp/allow" || exit 2

# the writable data symbols: "object symbol section size"
nobj=0
for o in $(find "$build/src" -name '*.o' | LC_ALL=C sort); do
  nobj=$((nobj + 1))
  rel=${o#"$build"/}
  echo "$rel" >>"$tmp/objs"
  nm --format=sysv "$o" 2>/dev/null | awk -F'|' -v o="$rel" '
    NF >= 7 {
      for (i = 1; i <= NF; i++) gsub(/^[ \t]+|[ \t]+$/, "", $i)
      if ($4 != "OBJECT" && $4 != "TLS") next
      if ($1 ~ /^__+(odr_asan|asan|ubsan|sancov|gcov|llvm|prof[cdn]_)/) next   # instrumentation (sanitizers, coverage)
      sec = $7
      if (sec == "*COM*" || (sec ~ /^\.(data|bss|tdata|tbss)(\.|$)/ && sec !~ /^\.data\.rel\.ro(\.|$)/))
        print o, $1, sec, ($5 == "" ? 0 : $5)
    }' >>"$tmp/syms"
done
[ -e "$tmp/syms" ] || : >"$tmp/syms"
[ "$nobj" -gt 0 ] || { echo "$me: no objects under $build/src (build first)" >&2; exit 2; }

# match: a symbol is allowed when an entry's object and symbol patterns match it (the symbol
# also as NAME for a renamed static NAME.N); then the entries that matched nothing although
# their object exists (a note)
awk -v allow="$allow" -v me="$me" -v count="$tmp/count" -v verbose="$verbose" '
  function glob2re(g,   r, i, c) {
    r = "^"
    for (i = 1; i <= length(g); i++) {
      c = substr(g, i, 1)
      if (c == "*") r = r ".*"
      else if (c == "?") r = r "."
      else if (index("\\^$.[]|()+{}", c)) r = r "\\" c
      else r = r c
    }
    return r "$"
  }
  function hex(h,   v, i) {
    v = 0
    for (i = 1; i <= length(h); i++) v = v * 16 + index("0123456789abcdef", tolower(substr(h, i, 1))) - 1
    return v
  }
  FILENAME == ARGV[2] { seen[$1] = 1; next }
  FILENAME == ARGV[1] { n++; ao[n] = glob2re($1); as[n] = glob2re($2); al[n] = $3; araw[n] = $1 " " $2; aobj[n] = $1; next }
  {
    nsym++
    base = $2; sub(/\.[0-9]+$/, "", base)                # gcc: NAME.N
    inner = $2; sub(/^[A-Za-z_][A-Za-z0-9_]*\./, "", inner) # clang: FUNCTION.NAME
    ok = 0
    for (i = 1; i <= n && !ok; i++)
      if ($1 ~ ao[i] && ($2 ~ as[i] || base ~ as[i] || inner ~ as[i])) { ok = 1; used[i] = 1 }
    if (!ok) {
      printf "%s: %s: writable symbol \047%s\047 (%s, %d bytes) is not in %s\n", me, $1, $2, $3, hex($4), allow > "/dev/stderr"
      fail = 1
    }
  }
  END {
    for (i = 1; i <= n; i++) {
      if (used[i]) continue
      for (o in seen) if (o ~ ao[i]) {
        unused++
        if (verbose) printf "%s: note: %s:%d (%s) matches no symbol\n", me, allow, al[i], araw[i]
        break
      }
    }
    if (unused && !verbose) printf "%s: note: entries matching no symbol of this build: %d (another configuration\047s, or stale: -v names them)\n", me, unused
    print nsym + 0 > count
    exit fail
  }' "$tmp/allow" "$tmp/objs" "$tmp/syms"
fail=$?
nsym=$(cat "$tmp/count" 2>/dev/null || echo 0)

if [ "$fail" -ne 0 ]; then
  echo "$me: mutable file-scope state found: move it into the Interp or a context passed to the code that" >&2
  echo "  uses it, or make a table const (docs/robustness.md \"Global state\"); only what a signal handler or a" >&2
  echo "  genuinely process-wide resource needs may be allowed, with the reason, in $allow" >&2
  exit 1
fi
echo "globals-check: $nobj objects, $nsym writable data symbols, each allowed by $allow"
