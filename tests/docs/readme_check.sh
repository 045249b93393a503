#!/bin/sh
# readme_check.sh — the README says only what the code does (issue 33): `make docs-check`.
#   tests/docs/readme_check.sh [MLS]     (run from the repository root; MLS default ./mls)
# 1. Every ```mls block of README.md runs, as script.mls in an empty temporary directory, and
#    prints what the README shows: the block's lines that start with `#>` (the prefix `#> `
#    removed) followed by the ```text block right after it, if one follows (blank lines
#    between allowed). stdout and stderr are compared together, exactly; the exit status must
#    be 0 unless the expected output holds "error:". A block with no output shown must print
#    nothing.
# 2. Every relative link, `](path)` or `](path#anchor)`, in README.md, docs/README.md and the
#    two chapters made of links (docs/install.md, docs/status.md) names an existing file, and
#    its #anchor, into a .md file, one of that file's headings; docs/README.md links every
#    chapter docs/*.md. Every `make TARGET`, repository path and BENCH_ONLY= name that README.md
#    and docs/install.md mention exists; docs/install.md lists every package of tools/deps.sh.
# 3. Every chapter docs/*.md opens, after its title, with a paragraph of prose (not a table,
#    a list, a code block or another heading).
# Prints one line a failure and a summary; exit status 1 on any failure.
set -u
MLS=${1:-./mls}
case "$MLS" in /*) ;; *) MLS="$(pwd)/$MLS" ;; esac
[ -x "$MLS" ] || { echo "readme_check: no mls at $MLS (make mls)"; exit 2; }
REPO=$(pwd)
[ -f README.md ] && [ -d docs ] || { echo "readme_check: run from the repository root"; exit 2; }
export MLS_PATH="$REPO/stdlib"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT INT TERM
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }

# --- 1. the mls blocks: block N's code to $TMP/N.mls, its output to $TMP/N.out, its first line to $TMP/N.line
awk -v dir="$TMP" '
  function flush() { if (n) { close(code); close(out) } }
  /^```mls[ \t]*$/ { n++; code = dir "/" n ".mls"; out = dir "/" n ".out"; printf "" > code; printf "" > out
                     print NR + 1 > (dir "/" n ".line"); close(dir "/" n ".line"); inmls = 1; next }
  inmls && /^```[ \t]*$/ { inmls = 0; after = 1; next }
  inmls { if ($0 ~ /^#>( |$)/) { s = $0; sub(/^#> ?/, "", s); print s > out } else print > code; next }
  after && /^[ \t]*$/ { next }
  after && /^```text[ \t]*$/ { after = 0; intext = 1; next }
  { after = 0 }
  intext && /^```[ \t]*$/ { intext = 0; next }
  intext { print > out; next }
  END { flush(); print n + 0 > (dir "/count") }
' README.md
count=$(cat "$TMP/count")
[ "$count" -gt 0 ] || bad "README.md has no \`\`\`mls block"
i=1
while [ "$i" -le "$count" ]; do
  line=$(cat "$TMP/$i.line")
  run="$TMP/run$i"; mkdir -p "$run"; cp "$TMP/$i.mls" "$run/script.mls"
  (cd "$run" && timeout 120 "$MLS" script.mls >"$TMP/$i.got" 2>&1); st=$?
  if ! cmp -s "$TMP/$i.out" "$TMP/$i.got"; then
    bad "README.md:$line: the mls block prints other output than the README shows (- README, + mls):"
    diff -u "$TMP/$i.out" "$TMP/$i.got" | sed '1,2d; s/^/    /' | head -40
  elif [ "$st" -ne 0 ] && ! grep -q 'error:' "$TMP/$i.out"; then
    bad "README.md:$line: the mls block exits with status $st"
  else ok; fi
  i=$((i + 1))
done

# --- 2. links
for f in README.md docs/README.md docs/install.md docs/status.md; do
  d=$(dirname "$f")
  # every ](target) of the file, one a line with its line number; images too
  grep -no '](\([^)]*\))' "$f" | sed 's/^\([0-9]*\):](\(.*\))$/\1 \2/' | while read -r ln target; do
    case "$target" in http://*|https://*|mailto:*|\#*) continue ;; esac
    path=${target%%#*}
    if [ ! -e "$d/$path" ]; then echo "FAIL $f:$ln: the link $target names no file ($d/$path)"; continue; fi
    case "$target" in
    *.md\#*)
      # the anchor must be one of the file's headings as GitHub names them: lower case, only
      # letters, digits, blanks, '-' and '_' kept, blanks made '-'
      anchor=${target#*#}
      if grep '^#' "$d/$path" | sed 's/^#* *//' | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g' | grep -qx -- "$anchor"
      then echo ok; else echo "FAIL $f:$ln: the link $target names no heading of $d/$path"; fi ;;
    *) echo ok ;;
    esac
  done
done >"$TMP/links"
n=$(grep -c '^ok$' "$TMP/links"); pass=$((pass + n))
grep '^FAIL' "$TMP/links" && fail=$((fail + $(grep -c '^FAIL' "$TMP/links")))
for c in docs/*.md; do
  b=$(basename "$c")
  [ "$b" = README.md ] && continue
  if grep -q "](\(\./\)\?$b\(#[^)]*\)\?)" docs/README.md; then ok; else bad "docs/README.md does not link the chapter $b"; fi
done

# --- 2b. what README.md and docs/install.md name exists: every `make TARGET` is a target of the
# Makefile, every repository path (examples/, tools/, tests/, bench/, stdlib/, editors/, src/,
# man/) is there, every BENCH_ONLY= name is one bench/run.sh knows
for f in README.md docs/install.md; do
  grep -o '`make [a-z][a-z0-9-]*' "$f" | sed 's/^`make //' | sort -u | while read -r t; do
    if grep -q "^$t:" Makefile || { case "$t" in fuzz-run-*) grep -q '^fuzz-run-%:' Makefile ;; *) false ;; esac; }
    then echo ok; else echo "FAIL $f: \`make $t\` is no target of the Makefile"; fi
  done
  grep -o '\(^\|[^A-Za-z0-9_./-]\)\(examples\|tools\|tests\|bench\|stdlib\|editors\|src\|man\)/[A-Za-z0-9_./-]*[A-Za-z0-9_]' "$f" |
    sed 's|^[^a-z]||' | sort -u | while read -r p; do
    case "$p" in *NAME*|*NNN*) continue ;; esac
    if [ -e "$p" ]; then echo ok; else echo "FAIL $f: it names $p, which does not exist"; fi
  done
  grep -o 'BENCH_ONLY=[a-z,]*' "$f" | sed 's/BENCH_ONLY=//' | tr ',' '\n' | sort -u | while read -r b; do
    if grep -q "^want $b " bench/run.sh; then echo ok; else echo "FAIL $f: bench/run.sh has no benchmark '$b' (BENCH_ONLY)"; fi
  done
done >"$TMP/names"
# every package tools/deps.sh checks is in docs/install.md's list
for pkg in $(sed -n '/^PKGS="/,/"$/p' tools/deps.sh | sed 's/^PKGS="//; s/["\\]//g'); do
  if grep -q "\`$pkg\`" docs/install.md; then echo ok; else echo "FAIL docs/install.md does not list the package $pkg of tools/deps.sh"; fi
done >>"$TMP/names"
n=$(grep -c '^ok$' "$TMP/names"); pass=$((pass + n))
grep '^FAIL' "$TMP/names" && fail=$((fail + $(grep -c '^FAIL' "$TMP/names")))

# --- 3. each chapter opens with a paragraph: the first non-blank line after the title is prose
for c in docs/*.md; do
  first=$(awk 'NR == 1 { next } /^[ \t]*$/ { next } { print; exit }' "$c")
  case "$first" in
  '#'*|'|'*|'```'*|'- '*|'* '*|'!['*|'') bad "$c: no opening paragraph after the title (it starts: $first)" ;;
  *) ok ;;
  esac
done

echo "readme_check: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
