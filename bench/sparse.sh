#!/usr/bin/env bash
# bench/sparse.sh — sparse matrices (issue 28 item 8): MLS against SciPy and R's Matrix package
# in one run, with the ratios and each program's peak memory.
#
#     bench/sparse.sh ./mls          (bench/run.sh calls it for BENCH_ONLY=sparse)
#
# (sp1) C = X %*% W, X rows x cols sparse at each density, W cols x k dense: one process per
#       program and density (generation not timed), one warm-up product, then the best of REPS.
#       bench/sparse_spmm.{mls,py,R}. Each program checks itself: sum(C) must equal
#       sum(colSums(X) * rowSums(W)), computed from X and W alone, to 1e-9. The programs use
#       different random generators: their matrices share the shape and density, not the values.
# (sp2) Reading a Matrix Market coordinate file (general real, distinct random cells in random
#       order) written once by bench/sparse_read.py into a temporary directory: MLS's
#       read(path, format="mm"), SciPy's scipy.io.mmread(path).tocsr() and R's
#       as(Matrix::readMM(path), "CsparseMatrix"), one process each, the read timed inside it
#       (the file is in the page cache for all three: it was just written). Each reader's nnz and
#       sum must equal the writer's (1e-9).
# (sp3) One ALS-CG iteration on a ratings matrix: MLS's builtin alsCG(X, rank = 10, maxi = 1,
#       check = FALSE) (stdlib/builtin/alsCG.mls, bench/sparse_als.mls) against the same
#       algorithm written with NumPy and scipy.sparse (bench/sparse_als.py: the masked products
#       W * (U V^T - X) computed at W's cells only), X 10^6 x 10^5 with about 10^7 ratings on
#       [1, 5], one process each, the call timed inside it. Each program's loss after the
#       iteration must be below its loss at the starts (other random data: the values differ).
# Peak memory: the whole process's maximum RSS, from /usr/bin/time (else the peers' own VmHWM).
# The exit status is 1 when a program crashed, timed out, printed no timing or failed its check;
# a missing peer is reported as skipped.
#
# Environment knobs (all optional):
#   BENCH_SPARSE_SCALE=1          multiplies the row counts of (sp1), (sp2) and (sp3) and the
#                                 nnz of (sp2) and (sp3): 0.1 runs in about a tenth of the time
#   BENCH_SPARSE_ROWS=100000, BENCH_SPARSE_COLS=10000, BENCH_SPARSE_K=100   (sp1)'s X and W
#   BENCH_SPARSE_DENSITIES="0.001 0.01 0.1", BENCH_SPARSE_REPS=3            (sp1)
#   BENCH_SPARSE_MM_ROWS=1000000, BENCH_SPARSE_MM_COLS=100000, BENCH_SPARSE_MM_NNZ=10000000  (sp2)
#   BENCH_SPARSE_ALS_ROWS=1000000, BENCH_SPARSE_ALS_COLS=100000, BENCH_SPARSE_ALS_NNZ=10000000,
#   BENCH_SPARSE_ALS_RANK=10, BENCH_SPARSE_ALS_ITERS=1                      (sp3)
#   BENCH_SPARSE_PARTS=spmm,read,als  which parts to run
#   BENCH_SPARSE_TMP=DIR          where to write the .mtx file (default: a new directory under
#                                 ${TMPDIR:-/tmp}, removed at the end)
#   BENCH_TIMEOUT=600             seconds before one program run is killed
#   PYTHON=/usr/bin/python3, RSCRIPT=Rscript
#   BENCH_SPARSE_NO_HEADER=1      leave out the date, machine and load lines (run.sh prints its own)
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$HERE/out
MLS=${1:-./mls}
[[ -e $MLS && $MLS != /* ]] && MLS=$(cd "$(dirname "$MLS")" && pwd)/$(basename "$MLS")
MLS_STDLIB=${MLS_PATH:-$HERE/../stdlib}
RSCRIPT=${RSCRIPT:-Rscript}
if [[ -z ${PYTHON:-} ]]; then
    if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi
TIMEOUT=${BENCH_TIMEOUT:-600}
TIME_F=/usr/bin/time

SCALE=${BENCH_SPARSE_SCALE:-1}
scaled() { awk -v n="$1" -v s="$SCALE" 'BEGIN { v = int(n * s + 0.5); if (v < 1) v = 1; print v }'; }
ROWS=${BENCH_SPARSE_ROWS:-$(scaled 100000)}
COLS=${BENCH_SPARSE_COLS:-10000}
K=${BENCH_SPARSE_K:-100}
DENSITIES=${BENCH_SPARSE_DENSITIES:-0.001 0.01 0.1}
REPS=${BENCH_SPARSE_REPS:-3}
MM_ROWS=${BENCH_SPARSE_MM_ROWS:-$(scaled 1000000)}
MM_COLS=${BENCH_SPARSE_MM_COLS:-100000}
MM_NNZ=${BENCH_SPARSE_MM_NNZ:-$(scaled 10000000)}
ALS_ROWS=${BENCH_SPARSE_ALS_ROWS:-$(scaled 1000000)}
ALS_COLS=${BENCH_SPARSE_ALS_COLS:-100000}
ALS_NNZ=${BENCH_SPARSE_ALS_NNZ:-$(scaled 10000000)}
ALS_RANK=${BENCH_SPARSE_ALS_RANK:-10}
ALS_ITERS=${BENCH_SPARSE_ALS_ITERS:-1}
PARTS=${BENCH_SPARSE_PARTS:-spmm,read,als}

STATUS=0
mkdir -p "$OUT" || { echo "sparse.sh: cannot create $OUT" >&2; exit 1; }
rm -f "$OUT"/sparse_*.out

# ---------------------------------------------------------------- helpers

have() { command -v "$1" >/dev/null 2>&1; }

# minkey KEY FILE / lastkey KEY FILE: the smallest / last number after the word KEY in FILE
minkey() {
    awk -v k="$1" '{ gsub(/"/, ""); for (i = 1; i < NF; i++)
        if ($i == k && $(i + 1) ~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/) { v = $(i + 1) + 0; if (!n || v < m) m = v; n++ } }
        END { if (n) printf "%.17g\n", m }' "$2"
}
lastkey() {
    awk -v k="$1" '{ gsub(/"/, ""); for (i = 1; i < NF; i++) if ($i == k) v = $(i + 1) } END { if (v != "") print v }' "$2"
}
calc() { awk "BEGIN { printf \"%.17g\n\", $* }"; }
# same_num A B: A and B agree to 1e-9 relative
same_num() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
                                             if (m < 1) m = 1; exit !(d <= 1e-9 * m) }'; }
ms()    { [[ -n $1 ]] && awk -v t="$1" 'BEGIN { printf "%.2f", t / 1e6 }' || echo "-"; }
ratio() { [[ -n $1 && -n $2 ]] && awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }' || echo "-"; }
mb()    { [[ -n $1 ]] && awk -v k="$1" 'BEGIN { printf "%.0f MB", k / 1024 }' || echo "-"; }

# run_prog FILE CMD...: runs CMD once (timeout, peak RSS from /usr/bin/time when installed),
# stdout + stderr to FILE; sets RC
run_prog() {
    local file=$1; shift
    echo "--- $*" >"$file"
    if [[ -x $TIME_F ]]; then
        timeout "$TIMEOUT" "$TIME_F" -f "peak_rss_kb %M" "$@" >>"$file" 2>&1
    else
        timeout "$TIMEOUT" "$@" >>"$file" 2>&1
    fi
    RC=$?
}

# peak FILE: peak RSS in kB (from /usr/bin/time, else the program's own VmHWM)
peak() { local p; p=$(lastkey peak_rss_kb "$1"); [[ -n $p ]] || p=$(lastkey vmhwm_kb "$1"); echo "$p"; }

# why FILE: one word or phrase for a run that gave no usable figure
why() {
    if (( RC == 124 || RC == 137 )); then echo "TIMEOUT"
    elif (( RC != 0 )); then echo "FAILED($RC)"
    else echo "NO-TIME"; fi
}

FAILS=()   # one line per failed program: what and where its output is
fail() { FAILS+=("$1 (output in bench/out/${2##*/})"); STATUS=1; }

# ---------------------------------------------------------------- environment

MLS_OK=0;  [[ -x $MLS ]] && MLS_OK=1
NP_OK=0;   have "$PYTHON" && "$PYTHON" -c 'import numpy' >/dev/null 2>&1 && NP_OK=1
SP_OK=0;   (( NP_OK )) && "$PYTHON" -c 'import scipy.sparse, scipy.io' >/dev/null 2>&1 && SP_OK=1
R_OK=0;    have "$RSCRIPT" && "$RSCRIPT" -e 'suppressMessages(library(Matrix))' >/dev/null 2>&1 && R_OK=1
(( MLS_OK )) || STATUS=1

START=$SECONDS
if [[ -z ${BENCH_SPARSE_NO_HEADER:-} ]]; then
    echo "MLS sparse benchmarks  $(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "  machine : $(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null), $(nproc 2>/dev/null || echo '?') cores"
    echo "  load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
fi
echo "  mls     : $MLS$( (( MLS_OK )) || echo '  (NOT FOUND)')"
echo "  SciPy   : $( (( SP_OK )) && "$PYTHON" -c 'import scipy, numpy, sys; print("scipy %s, numpy %s (%s)" % (scipy.__version__, numpy.__version__, sys.executable))' || echo 'not installed (skipped)')"
echo "  R Matrix: $( (( R_OK )) && "$RSCRIPT" -e 'cat(R.version$major, ".", R.version$minor, ", Matrix ", as.character(packageVersion("Matrix")), "\n", sep = "")' 2>/dev/null | sed 's/^/R /' || echo 'not installed (skipped)')"
echo "  peak RSS: $([[ -x $TIME_F ]] && echo "$TIME_F (whole process)" || echo "VmHWM printed by SciPy and R (MLS: none without $TIME_F)")"
echo "  MLS runs its sparse product on every core; SciPy's and Matrix's run on one thread"

# ---------------------------------------------------------------- (sp1) sparse x dense

# spmm_row D: the three programs at density D, one table row
spmm_row() {
    local d=$1 key file t c id
    local -A T=() P=() NOTE=()
    for key in mls scipy r; do
        file=$OUT/sparse_spmm_${key}_$d.out
        case $key in
            mls)   (( MLS_OK )) || { NOTE[$key]="n/a"; continue; }
                   run_prog "$file" env MLS_PATH="$MLS_STDLIB" "$MLS" "$HERE/sparse_spmm.mls" -nvargs \
                       "rows=$ROWS" "cols=$COLS" "k=$K" "d=$d" "reps=$REPS" ;;
            scipy) (( SP_OK )) || { NOTE[$key]="skip"; continue; }
                   run_prog "$file" "$PYTHON" "$HERE/sparse_spmm.py" "$ROWS" "$COLS" "$K" "$d" "$REPS" ;;
            r)     (( R_OK )) || { NOTE[$key]="skip"; continue; }
                   run_prog "$file" "$RSCRIPT" "$HERE/sparse_spmm.R" "$ROWS" "$COLS" "$K" "$d" "$REPS" ;;
        esac
        t=$(minkey time_ns "$file")
        P[$key]=$(peak "$file")
        if (( RC != 0 )) || [[ -z $t ]]; then
            NOTE[$key]=$(why); fail "(sp1) d=$d $key: ${NOTE[$key]}" "$file"; continue
        fi
        c=$(lastkey check "$file"); id=$(lastkey ident "$file")
        if [[ -z $c || -z $id ]] || ! same_num "$c" "$id"; then
            NOTE[$key]="WRONG"; fail "(sp1) d=$d $key: sum(C) '$c' != sum(colSums(X) * rowSums(W)) '$id'" "$file"; continue
        fi
        T[$key]=$t
    done
    local fmt="-" nnz="-" mf=$OUT/sparse_spmm_mls_$d.out
    if [[ -r $mf ]]; then
        nnz=$(lastkey nnz "$mf")
        if grep -q 'sparse matrix' "$mf"; then fmt=sparse; elif grep -q '^\[[0-9]* x [0-9]* matrix\]' "$mf"; then fmt=dense; fi
    fi
    col() { [[ -n ${T[$1]:-} ]] && ms "${T[$1]}" || echo "${NOTE[$1]:--}"; }
    printf '  %-8s %9s %6s %11s %11s %11s %10s %8s %9s %9s %9s\n' "$d" "$(awk -v n="$nnz" 'BEGIN { if (n == "-") print n; else printf "%.3g", n }')" "$fmt" \
        "$(col mls)" "$(col scipy)" "$(col r)" "$(ratio "${T[mls]:-}" "${T[scipy]:-}")" "$(ratio "${T[mls]:-}" "${T[r]:-}")" \
        "$(mb "${P[mls]:-}")" "$(mb "${P[scipy]:-}")" "$(mb "${P[r]:-}")"
    # the untimed generation and the checksums, for the record
    local g=() s=()
    for key in mls scipy r; do
        file=$OUT/sparse_spmm_${key}_$d.out
        [[ -r $file ]] || continue
        g+=("$key $(awk -v t="$(lastkey gen_ns "$file")" 'BEGIN { if (t == "") print "-"; else printf "%.2f s", t / 1e9 }')")
        c=$(lastkey check "$file"); s+=("$key ${c:--}")
    done
    SPMM_NOTES+=("  d=$d  generation (not timed): $(IFS=,; echo "${g[*]}" | sed 's/,/, /g');  sum(C): $(IFS=,; echo "${s[*]}" | sed 's/,/, /g')")
}

bench_spmm() {
    echo
    echo "== (sp1) C = X %*% W, X $ROWS x $COLS sparse, W $COLS x $K dense  (one process each; best of $REPS products after a warm-up)"
    echo
    printf '  %-8s %9s %6s %11s %11s %11s %10s %8s %9s %9s %9s\n' "density" "nnz" "MLS X" "MLS ms" "SciPy ms" "R ms" \
        "MLS/SciPy" "MLS/R" "MLS peak" "SciPy pk" "R peak"
    SPMM_NOTES=()
    local d
    for d in $DENSITIES; do spmm_row "$d"; done
    echo
    local n; for n in "${SPMM_NOTES[@]}"; do echo "$n"; done
    echo "  (MLS X: the format MLS chose for X by its rule, docs/sparse.md; each program's sum(C) equals its"
    echo "   own sum(colSums(X) * rowSums(W)) to 1e-9; the sums differ between programs: other random X)"
}

# ---------------------------------------------------------------- (sp2) Matrix Market read

R_READ='suppressMessages(library(Matrix))
path <- commandArgs(trailingOnly = TRUE)[1]
t0 <- Sys.time()
X <- as(readMM(path), "CsparseMatrix")
t1 <- Sys.time()
cat(sprintf("time_ns %.0f\n", as.numeric(difftime(t1, t0, units = "secs")) * 1e9))
cat(sprintf("nnz %d\nsum %.15g\nclass %s\n", length(X@x), sum(X), class(X)))
hwm <- grep("^VmHWM:", readLines("/proc/self/status"), value = TRUE)
cat(sprintf("vmhwm_kb %s\n", sub("^VmHWM:[[:space:]]*([0-9]+).*", "\\1", hwm)))'

bench_read() {
    echo
    echo "== (sp2) X = read(\"x.mtx\"): Matrix Market coordinate, $MM_ROWS x $MM_COLS, $MM_NNZ entries  (one read, one process each)"
    echo
    if (( ! NP_OK )); then
        echo "  skipped: numpy is needed to write the file ($PYTHON)"
        return
    fi
    local dir made=0
    if [[ -n ${BENCH_SPARSE_TMP:-} ]]; then dir=$BENCH_SPARSE_TMP; mkdir -p "$dir"
    else dir=$(mktemp -d "${TMPDIR:-/tmp}/mls_sparse_bench.XXXXXX") && made=1; fi
    local path=$dir/sparse_bench_${MM_ROWS}x${MM_COLS}_${MM_NNZ}.mtx wf=$OUT/sparse_read_write.out
    local t0=$SECONDS
    run_prog "$wf" "$PYTHON" "$HERE/sparse_read.py" write "$path" "$MM_ROWS" "$MM_COLS" "$MM_NNZ"
    local ref_nnz ref_sum
    ref_nnz=$(lastkey nnz "$wf"); ref_sum=$(lastkey sum "$wf")
    if (( RC != 0 )) || [[ -z $ref_sum ]]; then
        echo "  FAILED: could not write $path ($(why); output in bench/out/${wf##*/})"
        STATUS=1
        (( made )) && rm -rf "$dir"
        return
    fi
    echo "  file: $path, $(awk -v b="$(stat -c %s "$path")" 'BEGIN { printf "%.0f MB", b / 1048576 }'), written in $(( SECONDS - t0 )) s (not timed)"
    echo
    printf '  %-44s %11s %10s %10s %6s\n' "program" "read time" "MLS/peer" "peak RSS" "check"
    local key file t n s
    local -A T=() P=() NOTE=() CHK=()
    for key in mls scipy r; do
        file=$OUT/sparse_read_$key.out
        case $key in
            mls)   (( MLS_OK )) || { NOTE[$key]="not run: no MLS binary"; continue; }
                   run_prog "$file" env MLS_PATH="$MLS_STDLIB" "$MLS" "$HERE/sparse_read.mls" -nvargs "path=$path" ;;
            scipy) (( SP_OK )) || { NOTE[$key]="skipped: scipy not installed"; continue; }
                   run_prog "$file" "$PYTHON" "$HERE/sparse_read.py" read "$path" ;;
            r)     (( R_OK )) || { NOTE[$key]="skipped: R or its Matrix package not installed"; continue; }
                   run_prog "$file" "$RSCRIPT" -e "$R_READ" "$path" ;;
        esac
        t=$(minkey time_ns "$file")
        P[$key]=$(peak "$file")
        if (( RC != 0 )) || [[ -z $t ]]; then
            NOTE[$key]="$(why): $(grep -v '^---\|^peak_rss_kb\|^Command exited\|^Command terminated' "$file" | tail -n 1 | cut -c1-100)"
            fail "(sp2) $key: $(why)" "$file"; continue
        fi
        n=$(lastkey nnz "$file"); s=$(lastkey sum "$file")
        if [[ -z $n || -z $s ]] || ! same_num "$n" "$ref_nnz" || ! same_num "$s" "$ref_sum"; then
            NOTE[$key]="WRONG: nnz $n, sum $s; the file has nnz $ref_nnz, sum $ref_sum"
            fail "(sp2) $key: nnz $n sum $s, the file's $ref_nnz $ref_sum" "$file"; continue
        fi
        T[$key]=$t; CHK[$key]=ok
    done
    local -A LABEL=([mls]='MLS read(path, format="mm")' [scipy]='SciPy scipy.io.mmread(path).tocsr()'
                    [r]='R as(Matrix::readMM(path), "CsparseMatrix")')
    for key in mls scipy r; do
        if [[ -n ${T[$key]:-} ]]; then
            printf '  %-44s %11s %10s %10s %6s\n' "${LABEL[$key]}" "$(ms "${T[$key]}") ms" \
                "$([[ $key == mls ]] && echo - || ratio "${T[mls]:-}" "${T[$key]}")" "$(mb "${P[$key]:-}")" "${CHK[$key]}"
        else
            printf '  %-44s %s\n' "${LABEL[$key]}" "${NOTE[$key]:-}"
        fi
    done
    echo
    local mf=$OUT/sparse_read_mls.out
    if [[ -n ${T[mls]:-} ]]; then
        if grep -q 'sparse matrix' "$mf"; then echo "  (MLS stored X sparse)"
        else echo "  (MLS stored X dense)"; fi
    fi
    echo "  (check: each reader's nnz and sum(X) equal the writer's, nnz $ref_nnz, sum $ref_sum, to 1e-9)"
    (( made )) && rm -rf "$dir"
}

# ---------------------------------------------------------------- (sp3) ALS-CG iteration

bench_als() {
    local dens
    dens=$(awk -v z="$ALS_NNZ" -v m="$ALS_ROWS" -v n="$ALS_COLS" 'BEGIN { d = z / (m * n); if (d > 1) d = 1; printf "%.17g\n", d }')
    echo
    echo "== (sp3) [U, V] = alsCG(X, rank=$ALS_RANK, maxi=$ALS_ITERS, check=FALSE), X $ALS_ROWS x $ALS_COLS ratings on [1, 5], about $ALS_NNZ of them (density $(awk -v d="$dens" 'BEGIN { printf "%.3g", d }'))  (one process each; the call timed)"
    echo
    printf '  %-46s %9s %11s %10s %10s %23s %6s\n' "program" "nnz" "s / iter" "MLS/SciPy" "peak RSS" "loss: start -> after" "check"
    local key file t l0 l1
    local -A T=() P=() NOTE=() L0=() L1=() NZ=() GEN=()
    for key in mls scipy; do
        file=$OUT/sparse_als_$key.out
        case $key in
            mls)   (( MLS_OK )) || { NOTE[$key]="not run: no MLS binary"; continue; }
                   run_prog "$file" env MLS_PATH="$MLS_STDLIB" "$MLS" "$HERE/sparse_als.mls" -nvargs \
                       "m=$ALS_ROWS" "n=$ALS_COLS" "s=$dens" "r=$ALS_RANK" "it=$ALS_ITERS" ;;
            scipy) (( SP_OK )) || { NOTE[$key]="skipped: scipy not installed"; continue; }
                   run_prog "$file" "$PYTHON" "$HERE/sparse_als.py" "$ALS_ROWS" "$ALS_COLS" "$ALS_NNZ" \
                       "$ALS_RANK" "$ALS_ITERS" ;;
        esac
        t=$(lastkey iter_ns "$file")
        P[$key]=$(peak "$file"); NZ[$key]=$(lastkey nnz "$file"); GEN[$key]=$(lastkey gen_ns "$file")
        if (( RC != 0 )) || [[ -z $t ]]; then
            NOTE[$key]="$(why): $(grep -v '^---\|^peak_rss_kb\|^Command exited\|^Command terminated' "$file" | tail -n 1 | cut -c1-100)"
            fail "(sp3) $key: $(why)" "$file"; continue
        fi
        l0=$(lastkey loss0 "$file"); l1=$(lastkey loss1 "$file")
        L0[$key]=$l0; L1[$key]=$l1
        if [[ -z $l0 || -z $l1 ]] || ! awk -v a="$l0" -v b="$l1" 'BEGIN { exit !(b + 0 < a + 0) }'; then
            NOTE[$key]="WRONG: the loss did not decrease ('$l0' -> '$l1')"
            fail "(sp3) $key: loss '$l0' -> '$l1', no decrease" "$file"; continue
        fi
        T[$key]=$t
    done
    local -A LABEL=([mls]="MLS alsCG (sparse_als.mls)" [scipy]="SciPy, the same algorithm (sparse_als.py)")
    lossfmt() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4g -> %.4g", a, b }'; }
    for key in mls scipy; do
        if [[ -n ${T[$key]:-} ]]; then
            printf '  %-46s %9s %11s %10s %10s %23s %6s\n' "${LABEL[$key]}" "${NZ[$key]:--}" \
                "$(awk -v t="${T[$key]}" 'BEGIN { printf "%.3f", t / 1e9 }')" \
                "$([[ $key == mls ]] && ratio "${T[mls]:-}" "${T[scipy]:-}" || echo -)" "$(mb "${P[$key]:-}")" \
                "$(lossfmt "${L0[$key]}" "${L1[$key]}")" ok
        else
            printf '  %-46s %s\n' "${LABEL[$key]}" "${NOTE[$key]:-}"
        fi
    done
    echo
    local g=()
    for key in mls scipy; do
        [[ -n ${GEN[$key]:-} ]] && g+=("$key $(awk -v t="${GEN[$key]}" 'BEGIN { printf "%.2f s", t / 1e9 }')")
    done
    (( ${#g[@]} )) && echo "  generation of X (not timed): $(IFS=,; echo "${g[*]}" | sed 's/,/, /g')"
    local mf=$OUT/sparse_als_mls.out
    if [[ -n ${T[mls]:-} ]]; then
        if grep -q 'sparse matrix' "$mf"; then echo "  (MLS stored X sparse)"; else echo "  (MLS stored X dense)"; fi
    fi
    echo "  (s / iter: the call's time over maxi, the starts and W = X != 0 included on both sides; MLS runs"
    echo "   on every core, SciPy's products on one thread; check: each program's loss after the iteration is"
    echo "   below its loss at the starts; the losses differ between programs: other random X and starts)"
}

# ---------------------------------------------------------------- main

want() { [[ ",$PARTS," == *",$1,"* ]]; }
want spmm && bench_spmm
want read && bench_read
want als  && bench_als

echo
if (( ${#FAILS[@]} )); then
    echo "  failed:"
    for f in "${FAILS[@]}"; do echo "    $f"; done
fi
(( MLS_OK )) || echo "  MLS binary not found at $MLS"
echo "  sparse bench time: $(( SECONDS - START )) s"
exit "$STATUS"
