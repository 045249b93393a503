#!/usr/bin/env bash
# MLS benchmark harness: runs MLS and its peers (C/OpenBLAS, R, NumPy, Python, Lua)
# side by side and checks the performance goals.  `make bench` calls it as
#
#     bench/run.sh ./mls
#
# Every measurement is the best (minimum) of several repetitions.  A missed goal is
# reported as MISS but never fails the run; the exit status is 1 only when a program
# crashed, timed out, printed no timing or printed a wrong result (or the MLS binary
# is missing).  Missing peers (R, NumPy, lua5.4, OpenBLAS) are reported as skipped.
#
# Environment knobs (all optional):
#   BENCH_ONLY=scalar,matmul,small,startup,ew,mlp,logreg,load,tmatmul,staging,sparse  which benchmarks to run (default: all)
#   BENCH_RUNS=5        process repetitions for the scalar loop
#   BENCH_ROUNDS=N      processes per program and matmul size (default 6 for
#                       n <= 256, else 3), run interleaved
#   BENCH_SIZES="256 1024 2048"             matrix sizes for the matmul benchmark
#   BENCH_TIMEOUT=300   seconds before one program run is killed
#   BENCH_MLP_ROUNDS=10, BENCH_MLP_REPS=20   rounds and passes per round of the MLP benchmark
#   BENCH_LOGREG_ROUNDS=3   processes per program of the softmax-regression benchmark
#   BENCH_LOAD_ROUNDS=3     processes per program of the data-loading benchmark (l)
#   BENCH_TMATMUL_ROUNDS=3  processes per program of the t(X) %*% D benchmark
#   BENCH_EW_ROUNDS=3       processes per program of the elementwise-chain benchmark (e)
#   BENCH_STAGING_ROUNDS=3, BENCH_STAGING_REPS=2, BENCH_STAGING_MLP_ROWS=60000  section (s), bench/staging.sh
#   BENCH_SPARSE_SCALE=1 and the other BENCH_SPARSE_* knobs: section (sp), bench/sparse.sh
#   BENCH_FASHION=/usr/share/datasets/fashion-mnist/   where the Fashion-MNIST idx files are
#   PYTHON=/usr/bin/python3, RSCRIPT=Rscript, LUA=lua5.4, CC=gcc, HYPERFINE=hyperfine
set -u
export LC_ALL=C

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=$HERE/out
MLS=${1:-./mls}
[[ -e $MLS && $MLS != /* ]] && MLS=$(cd "$(dirname "$MLS")" && pwd)/$(basename "$MLS")

ONLY=${BENCH_ONLY:-scalar,matmul,small,startup,ew,mlp,logreg,load,tmatmul,staging,sparse}
RUNS=${BENCH_RUNS:-5}
SIZES=${BENCH_SIZES:-256 1024 2048}
ROUNDS=${BENCH_ROUNDS:-}
TIMEOUT=${BENCH_TIMEOUT:-300}
CC=${CC:-gcc}
RSCRIPT=${RSCRIPT:-Rscript}
LUA=${LUA:-lua5.4}
HYPERFINE=${HYPERFINE:-hyperfine}
if [[ -z ${PYTHON:-} ]]; then
    if [[ -x /usr/bin/python3 ]]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
fi

STATUS=0          # becomes 1 when something crashed (never because of a missed goal)
GOALS=()          # one summary line per goal

mkdir -p "$OUT" || { echo "run.sh: cannot create $OUT" >&2; exit 1; }
rm -f "$OUT"/*.out "$OUT"/*.times "$OUT"/startup.csv "$OUT"/startup.json  # stale results

# ---------------------------------------------------------------- helpers

have() { command -v "$1" >/dev/null 2>&1; }

# NOW_US = wall clock in microseconds (no fork when bash provides EPOCHREALTIME)
now_us() {
    if [[ -n ${EPOCHREALTIME:-} ]]; then
        NOW_US=${EPOCHREALTIME//[.,]/}
    else
        NOW_US=$(( $(date +%s%N) / 1000 ))
    fi
}

# run_once FILE CMD... : run CMD once with a timeout, stdout+stderr appended to FILE.
# Sets RC and WALL_NS (whole-process wall time).
run_once() {
    local file=$1; shift
    local t0
    now_us; t0=$NOW_US
    timeout "$TIMEOUT" "$@" >>"$file" 2>&1
    RC=$?
    now_us
    WALL_NS=$(( (NOW_US - t0) * 1000 ))
}

# minkey KEY FILE: smallest number that follows the word KEY anywhere in FILE
# (tolerates quotes and prefixes such as "[1]"); prints nothing if KEY never appears.
minkey() {
    awk -v k="$1" '{
        gsub(/"/, "")
        for (i = 1; i < NF; i++)
            if ($i == k && $(i + 1) ~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/) {
                v = $(i + 1) + 0
                if (!n || v < m) m = v
                n++
            }
    } END { if (n) printf "%.17g\n", m }' "$2"
}

# lastkey KEY FILE: the last value that follows KEY in FILE
lastkey() {
    awk -v k="$1" '{ gsub(/"/, ""); for (i = 1; i < NF; i++) if ($i == k) v = $(i + 1) }
                   END { if (v != "") print v }' "$2"
}

calc() { awk "BEGIN { printf \"%.17g\n\", $* }"; }   # calc EXPR
fmt()  { awk -v x="$2" "BEGIN { printf \"$1\", x }"; }  # fmt FORMAT VALUE
ge()   { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 >= b + 0) }'; }

# fmt_ns NS: human-readable duration
fmt_ns() {   # (a negative time, such as a first call - steady below 0 in a noisy run, with its sign)
    awk -v t="$1" 'BEGIN {
        s = ""; if (t < 0) { s = "-"; t = -t }
        if (t >= 1e9)      printf "%s%.3f s", s, t / 1e9
        else if (t >= 1e6) printf "%s%.2f ms", s, t / 1e6
        else if (t >= 1e3) printf "%s%.2f us", s, t / 1e3
        else               printf "%s%.0f ns", s, t
    }'
}

# the last few lines of a failed run, indented
show_tail() { tail -n 5 "$1" | sed 's/^/        | /'; }

# describe_failure FILE: one line saying why the last run produced nothing useful
describe_failure() {
    if (( RC == 124 || RC == 137 )); then
        echo "FAILED: timed out after ${TIMEOUT} s (output in bench/${1#"$HERE"/})"
    elif (( RC != 0 )); then
        echo "FAILED: exit status $RC (output in bench/${1#"$HERE"/})"
    else
        echo "FAILED: no timing in output (output in bench/${1#"$HERE"/})"
    fi
}

section() {
    echo
    echo "== $1"
    echo
}

goal() {  # goal TEXT "VERDICT (detail)"
    printf '  goal: %s -> %s\n' "$1" "$2"
    local detail=
    [[ $2 == *" "* ]] && detail=${2#* }
    GOALS+=("$(printf '%-4s  %-58s %s' "${2%% *}" "$1" "$detail")")
}

# limit_goal TEXT NS LIMIT_NS PEER_NS: PASS when NS <= LIMIT_NS; the detail gives NS, PEER_NS
# and their ratio
limit_goal() {
    local text=$1 ns=$2 lim=$3 peer=$4
    local detail; detail="$(fmt_ns "$ns") vs $(fmt_ns "$peer"), $(fmt '%.2f' "$(calc "$ns / $peer")")x"
    if ge "$lim" "$ns"; then goal "$text" "PASS ($detail)"; else goal "$text" "MISS ($detail)"; fi
}

want() { [[ ",$ONLY," == *",$1,"* ]]; }

# ---------------------------------------------------------------- environment

MLS_OK=1
if [[ ! -x $MLS ]]; then
    MLS_OK=0
    STATUS=1
fi
R_OK=0;     have "$RSCRIPT" && R_OK=1
PY_OK=0;    have "$PYTHON" && PY_OK=1
NP_OK=0;    (( PY_OK )) && "$PYTHON" -c 'import numpy' >/dev/null 2>&1 && NP_OK=1
LUA_OK=0;   have "$LUA" && LUA_OK=1

R_SKIP="skipped: R not installed"
PY_SKIP="skipped: python3 not installed"
NP_SKIP="skipped: numpy not installed"
(( PY_OK )) || NP_SKIP=$PY_SKIP
MLS_SKIP="not run: MLS binary not found at $MLS"

# Build the C peers.
BUILD_LOG=$OUT/build.log
: >"$BUILD_LOG"
C_MATMUL_OK=0
C_LOOP_OK=0
if have "$CC"; then
    "$CC" -O2 -o "$OUT/matmul" "$HERE/matmul.c" -lopenblas >>"$BUILD_LOG" 2>&1 && C_MATMUL_OK=1
    "$CC" -O2 -o "$OUT/scalar_loop" "$HERE/scalar_loop.c" >>"$BUILD_LOG" 2>&1 && C_LOOP_OK=1
    C_MATMUL_SKIP="skipped: could not build matmul.c against OpenBLAS (see bench/out/build.log)"
    C_LOOP_SKIP="skipped: could not build scalar_loop.c (see bench/out/build.log)"
else
    C_MATMUL_SKIP="skipped: C compiler $CC not found"
    C_LOOP_SKIP=$C_MATMUL_SKIP
fi

START_ALL=$SECONDS
echo "MLS benchmarks  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "  machine : $(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo 2>/dev/null), $(nproc 2>/dev/null || echo '?') cores"
echo "  mls     : $MLS$( (( MLS_OK )) || echo '  (NOT FOUND)')"
echo "  R       : $( (( R_OK )) && "$RSCRIPT" --version 2>&1 | head -n 1 | sed 's/^.*version /R /' || echo 'not installed')"
echo "  python  : $( (( PY_OK )) && "$PYTHON" --version 2>&1 || echo 'not installed')$( (( NP_OK )) && echo ", numpy $("$PYTHON" -c 'import numpy; print(numpy.__version__)')")"
echo "  OpenBLAS threads: ${OPENBLAS_NUM_THREADS:-default (one per core)}"
LOAD1=$(cut -d' ' -f1 /proc/loadavg 2>/dev/null || echo 0)
echo "  load average at start: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo '?')"
if ge "$LOAD1" 0.5; then
    echo "  WARNING: the machine is busy (load $LOAD1); figures, the BLAS ones most, will be noisy"
fi
echo "  every figure is the best of several repetitions; raw output in bench/out/"

# ---------------------------------------------------------------- (a) scalar loop

SCALAR_EXPECT=24999997500000

# measure_loop TAG CMD... : RUNS runs; sets M_LOOP (min time_ns), M_WALL (min wall),
# M_MSG (empty on success, else why it failed).
measure_loop() {
    local tag=$1; shift
    local file=$OUT/$tag.out r res
    : >"$file"
    M_LOOP='' M_WALL='' M_MSG=''
    for (( r = 1; r <= RUNS; r++ )); do
        echo "--- run $r: $*" >>"$file"
        run_once "$file" "$@"
        if (( RC != 0 )); then M_MSG=$(describe_failure "$file"); return 1; fi
        if [[ -z $M_WALL ]] || (( WALL_NS < M_WALL )); then M_WALL=$WALL_NS; fi
    done
    M_LOOP=$(minkey time_ns "$file")
    if [[ -z $M_LOOP ]]; then M_MSG=$(describe_failure "$file"); return 1; fi
    res=$(lastkey result "$file")
    if [[ -z $res ]] || ! awk -v a="$res" -v b="$SCALAR_EXPECT" \
            'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * b) }'; then
        M_MSG="FAILED: wrong result '${res}', expected $SCALAR_EXPECT (output in bench/${file#"$HERE"/})"
        return 1
    fi
    return 0
}

scalar_row() {  # scalar_row LABEL  (uses M_* and MLS_LOOP)
    local ratio="-"
    if [[ -n $MLS_LOOP && $1 != MLS* ]]; then ratio="$(fmt '%.2fx' "$(calc "$M_LOOP / $MLS_LOOP")")"; fi
    printf '  %-34s %12s %14s %14s\n' "$1" "$(fmt_ns "$M_LOOP")" "$(fmt_ns "$M_WALL")" "$ratio"
}

bench_scalar() {
    section "(a) scalar loop at top level: 1e7 x { s = s + i * 0.5; i = i + 1 }  (best of $RUNS runs)"
    printf '  %-34s %12s %14s %14s\n' "program" "loop time" "process wall" "peer/MLS time"
    MLS_LOOP=
    local R_CMP= MLS_FN= MLS_CPU= LUA_LOOP=

    if (( MLS_OK )); then
        if measure_loop scalar_mls "$MLS" "$HERE/scalar_loop.mls"; then
            MLS_LOOP=$M_LOOP; MLS_CPU=$(minkey cpu_ns "$OUT/scalar_mls.out"); scalar_row "MLS"
        else
            printf '  %-34s %s\n' "MLS" "$M_MSG"; show_tail "$OUT/scalar_mls.out"; STATUS=1
        fi
        if measure_loop scalar_mls_fn "$MLS" "$HERE/scalar_loop_fn.mls"; then
            MLS_FN=$(minkey cpu_ns "$OUT/scalar_mls_fn.out"); scalar_row "MLS, inside a function"
        else
            printf '  %-34s %s\n' "MLS, inside a function" "$M_MSG"; show_tail "$OUT/scalar_mls_fn.out"; STATUS=1
        fi
    else
        printf '  %-34s %s\n' "MLS" "$MLS_SKIP"
    fi

    if (( R_OK )); then
        if measure_loop scalar_r_cmp "$RSCRIPT" "$HERE/scalar_loop.R"; then
            R_CMP=$M_LOOP; scalar_row "R, function + compiler::cmpfun"
        else
            printf '  %-34s %s\n' "R, function + compiler::cmpfun" "$M_MSG"; STATUS=1
        fi
        if measure_loop scalar_r_top "$RSCRIPT" "$HERE/scalar_loop_top.R"; then
            scalar_row "R, top level (JIT)"
        else
            printf '  %-34s %s\n' "R, top level (JIT)" "$M_MSG"; STATUS=1
        fi
    else
        printf '  %-34s %s\n' "R" "$R_SKIP"
    fi

    if (( PY_OK )); then
        if measure_loop scalar_py "$PYTHON" "$HERE/scalar_loop.py"; then
            scalar_row "Python, plain loop at top level"
        else
            printf '  %-34s %s\n' "Python" "$M_MSG"; STATUS=1
        fi
    else
        printf '  %-34s %s\n' "Python" "$PY_SKIP"
    fi

    if (( LUA_OK )); then
        if measure_loop scalar_lua "$LUA" "$HERE/scalar_loop.lua"; then
            LUA_LOOP=$M_LOOP; scalar_row "Lua 5.4"
        else
            printf '  %-34s %s\n' "Lua 5.4" "$M_MSG"; STATUS=1
        fi
    else
        printf '  %-34s %s\n' "Lua 5.4" "skipped: $LUA not installed"
    fi

    if (( C_LOOP_OK )); then
        if measure_loop scalar_c "$OUT/scalar_loop"; then
            scalar_row "C -O2 (reference, no goal)"
        else
            printf '  %-34s %s\n' "C -O2" "$M_MSG"; STATUS=1
        fi
    else
        printf '  %-34s %s\n' "C -O2" "$C_LOOP_SKIP"
    fi

    echo
    local text="MLS loop at least 2x faster than R byte-compiled (cmpfun)"
    if [[ -z $MLS_LOOP ]]; then
        goal "$text" "MISS (no MLS figure)"
    elif [[ -z $R_CMP ]]; then
        goal "$text" "n/a (no R figure)"
    else
        local speedup; speedup=$(calc "$R_CMP / $MLS_LOOP")
        if ge "$speedup" 2; then
            goal "$text" "PASS ($(fmt '%.2f' "$speedup")x)"
        else
            goal "$text" "MISS ($(fmt '%.2f' "$speedup")x)"
        fi
    fi
    # issue 31: the loop at most Lua's time, at top level and inside a function. Lua's figure
    # is os.clock(), CPU time, so MLS's is too (cpu_ns): on a busy machine wall time is not
    # comparable with it.
    if [[ -n $MLS_CPU && -n $MLS_FN ]]; then
        printf '  %-34s %12s %12s\n' "MLS CPU time: top level, function" "$(fmt_ns "$MLS_CPU")" "$(fmt_ns "$MLS_FN")"
    fi
    local where mt
    for where in "top level" "inside a function"; do
        text="MLS loop ($where) CPU time at most Lua 5.4's (os.clock)"
        mt=$MLS_CPU; [[ $where == inside* ]] && mt=$MLS_FN
        if [[ -z $mt ]]; then
            goal "$text" "MISS (no MLS figure)"
        elif [[ -z $LUA_LOOP ]]; then
            goal "$text" "n/a (no Lua figure)"
        else
            local ratio; ratio=$(calc "$mt / $LUA_LOOP")
            if ge 1 "$ratio"; then
                goal "$text" "PASS ($(fmt '%.2f' "$ratio")x Lua's time)"
            else
                goal "$text" "MISS ($(fmt '%.2f' "$ratio")x Lua's time)"
            fi
        fi
    done
}

# ---------------------------------------------------------------- (b) matmul

reps_for() {  # reps_for N: products timed inside one process for size N
    if (( $1 <= 256 )); then echo 100
    elif (( $1 <= 1024 )); then echo 8
    else echo 4
    fi
}

# rounds_for N: processes per program for size N.  Small products vary a lot from one
# process to the next (thread placement), so they get more processes.
rounds_for() {
    if [[ -n $ROUNDS ]]; then echo "$ROUNDS"
    elif (( $1 <= 256 )); then echo 6
    else echo 3
    fi
}

# mm_run KEY N REPS FILE: one process of program KEY doing REPS products, output
# appended to FILE.  Sets RC.
mm_run() {
    local key=$1 n=$2 reps=$3 file=$4
    case $key in
        mls) set -- "$MLS" "$HERE/matmul.mls" -nvargs "n=$n" "reps=$reps" ;;
        c)   set -- "$OUT/matmul" "$n" "$reps" ;;
        np)  set -- "$PYTHON" "$HERE/matmul.py" "$n" "$reps" ;;
        r)   set -- "$RSCRIPT" "$HERE/matmul.R" "$n" "$reps" ;;
    esac
    echo "--- $*" >>"$file"
    run_once "$file" "$@"
}

mm_row() {  # mm_row LABEL N BEST_NS  (uses MLS_GF; sets LAST_GF)
    local gf ratio="-"
    gf=$(calc "2 * $2 ^ 3 / $3")
    if [[ -n $MLS_GF && $1 != MLS* ]]; then ratio="$(fmt '%.1f%%' "$(calc "100 * $MLS_GF / $gf")")"; fi
    printf '  %-26s %12s %10s %12s\n' "$1" "$(fmt_ns "$3")" "$(fmt '%.1f' "$gf")" "$ratio"
    LAST_GF=$gf
}

bench_matmul() {
    local n reps rounds target key r file best
    local keys=() labels=() skips=()
    if (( MLS_OK )); then keys+=(mls); labels+=("MLS"); else skips+=(mls); fi
    if (( C_MATMUL_OK )); then keys+=(c); labels+=("C cblas_dgemm (OpenBLAS)"); else skips+=(c); fi
    if (( NP_OK )); then keys+=(np); labels+=("NumPy A @ B"); else skips+=(np); fi
    if (( R_OK )); then keys+=(r); labels+=("R A %*% B"); else skips+=(r); fi

    for n in $SIZES; do
        reps=$(reps_for "$n")
        rounds=$(rounds_for "$n")
        section "(b) C = A %*% B, n = $n  (best of $rounds processes x $reps products; GFLOP/s = 2n^3/t)"
        printf '  %-26s %12s %10s %12s\n' "program" "time" "GFLOP/s" "MLS/peer"
        MLS_GF=
        local C_GF=
        declare -A failed=()

        # rounds interleave the programs so that a noisy spell hits all of them alike
        for key in "${keys[@]}"; do : >"$OUT/matmul_${key}_$n.out"; done
        for (( r = 1; r <= rounds; r++ )); do
            for key in "${keys[@]}"; do
                [[ -n ${failed[$key]:-} ]] && continue
                file=$OUT/matmul_${key}_$n.out
                mm_run "$key" "$n" "$reps" "$file"
                if (( RC != 0 )) || [[ -z $(minkey time_ns "$file") ]]; then
                    failed[$key]=$(describe_failure "$file")
                fi
            done
        done

        for r in "${!keys[@]}"; do
            key=${keys[$r]}
            file=$OUT/matmul_${key}_$n.out
            if [[ -n ${failed[$key]:-} ]]; then
                printf '  %-26s %s\n' "${labels[$r]}" "${failed[$key]}"
                [[ $key == mls ]] && show_tail "$file"
                STATUS=1
                continue
            fi
            best=$(minkey time_ns "$file")
            mm_row "${labels[$r]}" "$n" "$best"
            [[ $key == mls ]] && MLS_GF=$LAST_GF
            [[ $key == c ]] && C_GF=$LAST_GF
        done
        for key in "${skips[@]}"; do
            case $key in
                mls) printf '  %-26s %s\n' "MLS" "$MLS_SKIP" ;;
                c)   printf '  %-26s %s\n' "C cblas_dgemm" "$C_MATMUL_SKIP" ;;
                np)  printf '  %-26s %s\n' "NumPy" "$NP_SKIP" ;;
                r)   printf '  %-26s %s\n' "R" "$R_SKIP" ;;
            esac
        done
        unset failed

        local check=
        (( MLS_OK )) && check=$(lastkey check "$OUT/matmul_mls_$n.out")
        [[ -n $check ]] && echo "  (MLS check: sum(C) = $check)"

        echo
        if (( n <= 256 )); then target=85; else target=95; fi
        local text="n=$n: MLS >= ${target}% of C cblas_dgemm GFLOP/s"
        if [[ -z $MLS_GF ]]; then
            goal "$text" "MISS (no MLS figure)"
        elif [[ -z $C_GF ]]; then
            goal "$text" "n/a (no C figure)"
        else
            local pct; pct=$(calc "100 * $MLS_GF / $C_GF")
            if ge "$pct" "$target"; then
                goal "$text" "PASS ($(fmt '%.1f' "$pct")%)"
            else
                goal "$text" "MISS ($(fmt '%.1f' "$pct")%)"
            fi
        fi
    done
}

# ---------------------------------------------------------------- (c) small add

SMALL_ITERS=100000

# measure_small TAG CMD... : sets M_BASE, M_OP (best ns per whole loop), M_PER (ns/op)
measure_small() {
    local tag=$1; shift
    local file=$OUT/$tag.out
    : >"$file"
    M_BASE='' M_OP='' M_PER='' M_MSG=''
    echo "--- $*" >>"$file"
    run_once "$file" "$@"
    if (( RC != 0 )); then M_MSG=$(describe_failure "$file"); return 1; fi
    M_BASE=$(minkey base_ns "$file")
    M_OP=$(minkey op_ns "$file")
    if [[ -z $M_BASE || -z $M_OP ]]; then M_MSG=$(describe_failure "$file"); return 1; fi
    M_PER=$(calc "($M_OP - $M_BASE) / $SMALL_ITERS")
    return 0
}

small_row() {  # small_row LABEL (uses M_*, MLS_PER)
    local ratio="-"
    if [[ -n $MLS_PER && $1 != MLS* ]]; then ratio="$(fmt '%.2fx' "$(calc "$M_PER / $MLS_PER")")"; fi
    printf '  %-28s %14s %14s %12s %12s\n' "$1" \
        "$(fmt_ns "$(calc "$M_BASE / $SMALL_ITERS")")" \
        "$(fmt_ns "$(calc "$M_OP / $SMALL_ITERS")")" \
        "$(fmt_ns "$M_PER")" "$ratio"
}

bench_small() {
    section "(c) 1e5 x C = A + B on 4x4 matrices  (best of 5 rounds; per op = (loop - empty loop) / 1e5)"
    printf '  %-28s %14s %14s %12s %12s\n' "program" "empty loop/it" "add loop/it" "per op" "peer/MLS"
    MLS_PER=
    local R_PER=

    if (( MLS_OK )); then
        if measure_small small_mls "$MLS" "$HERE/small_add.mls"; then
            MLS_PER=$M_PER; small_row "MLS"
        else
            printf '  %-28s %s\n' "MLS" "$M_MSG"; show_tail "$OUT/small_mls.out"; STATUS=1
        fi
    else
        printf '  %-28s %s\n' "MLS" "$MLS_SKIP"
    fi

    if (( R_OK )); then
        if measure_small small_r "$RSCRIPT" "$HERE/small_add.R"; then
            R_PER=$M_PER; small_row "R, cmpfun'd function"
        else
            printf '  %-28s %s\n' "R" "$M_MSG"; STATUS=1
        fi
    else
        printf '  %-28s %s\n' "R" "$R_SKIP"
    fi

    if (( NP_OK )); then
        if measure_small small_np "$PYTHON" "$HERE/small_add.py"; then
            small_row "NumPy, loop in a function"
        else
            printf '  %-28s %s\n' "NumPy" "$M_MSG"; STATUS=1
        fi
    else
        printf '  %-28s %s\n' "NumPy" "$NP_SKIP"
    fi

    echo
    local text="MLS per-op time <= R's"
    if [[ -z $MLS_PER ]]; then
        goal "$text" "MISS (no MLS figure)"
    elif [[ -z $R_PER ]]; then
        goal "$text" "n/a (no R figure)"
    else
        local cmp
        cmp="$(fmt_ns "$MLS_PER") vs $(fmt_ns "$R_PER")"
        if ge "$R_PER" "$MLS_PER"; then goal "$text" "PASS ($cmp)"; else goal "$text" "MISS ($cmp)"; fi
    fi
}

# ---------------------------------------------------------------- (e) elementwise + sum

EW_ROUNDS=${BENCH_EW_ROUNDS:-3}  # processes per program, run interleaved (5 evaluations in each)

bench_ew() {
    section "(e) s = sum((x - y)^2 * 0.5 + exp(-x)), x and y 1e7 x 1  (best of $EW_ROUNDS processes x 5 evaluations)"
    local c_ok=0 c2_ok=0 c2v_ok=0 c_skip="skipped: C compiler $CC not found" c2_skip c2v_skip
    if have "$CC"; then
        if "$CC" -O2 -o "$OUT/ew_sum_c" "$HERE/ew_sum.c" -lm >>"$BUILD_LOG" 2>&1; then c_ok=1
        else c_skip="skipped: could not build ew_sum.c (see bench/out/build.log)"; fi
        c2_skip="skipped: could not build ew_sum_2t.c with pthreads (see bench/out/build.log)"
        "$CC" -O2 -pthread -o "$OUT/ew_sum_2t" "$HERE/ew_sum_2t.c" -lm >>"$BUILD_LOG" 2>&1 && c2_ok=1
        # the same loop vectorized, exp included (gcc calls glibc's libmvec, as MLS's exp does)
        c2v_skip="skipped: could not build ew_sum_2t.c with -O3 -ffast-math -march=native (see bench/out/build.log)"
        "$CC" -O3 -ffast-math -march=native -pthread -o "$OUT/ew_sum_2tv" "$HERE/ew_sum_2t.c" -lm >>"$BUILD_LOG" 2>&1 && c2v_ok=1
    else
        c2_skip=$c_skip; c2v_skip=$c_skip
    fi
    local mls_note=; (( MLS_OK )) || mls_note=$MLS_SKIP
    local -a keys=(mls jit np c c2 c2v) notes=()
    local -a labels=("MLS (eager, one op at a time)" "MLS jit (staged, one fused pass)" "NumPy"
                     "C, one fused loop (no goal)" "C, fused loop on 2 threads"
                     "C, 2 threads, vectorized (no goal)")
    notes+=("$mls_note" "$mls_note" "$( (( NP_OK )) || echo "$NP_SKIP")" "$( (( c_ok )) || echo "$c_skip")"
            "$( (( c2_ok )) || echo "$c2_skip")" "$( (( c2v_ok )) || echo "$c2v_skip")")
    ew_cmd() {  # ew_cmd KEY: sets EW_CMD to KEY's command
        case $1 in
            mls) EW_CMD=("$MLS" "$HERE/ew_sum.mls") ;;
            jit) EW_CMD=("$MLS" "$HERE/ew_sum_jit.mls") ;;
            np)  EW_CMD=("$PYTHON" "$HERE/ew_sum.py") ;;
            c)   EW_CMD=("$OUT/ew_sum_c") ;;
            c2)  EW_CMD=("$OUT/ew_sum_2t" 2) ;;
            c2v) EW_CMD=("$OUT/ew_sum_2tv" 2) ;;
        esac
    }
    declare -A failed=()
    local i r key file
    for key in "${keys[@]}"; do : >"$OUT/ew_$key.out"; done
    for (( r = 1; r <= EW_ROUNDS; r++ )); do
        for i in "${!keys[@]}"; do
            key=${keys[$i]}
            [[ -n ${notes[$i]} || -n ${failed[$key]:-} ]] && continue
            file=$OUT/ew_$key.out
            ew_cmd "$key"
            echo "--- ${EW_CMD[*]}" >>"$file"
            run_once "$file" "${EW_CMD[@]}"
            if (( RC != 0 )) || [[ -z $(minkey time_ns "$file") ]]; then failed[$key]=$(describe_failure "$file"); fi
        done
    done

    # reference result: NumPy's, else the one-thread C loop's (the inputs are the same everywhere)
    local ref='' ref_key='' ref_from=''
    for key in np c; do
        file=$OUT/ew_$key.out
        [[ -z $ref && -s $file && -z ${failed[$key]:-} ]] || continue
        ref=$(lastkey result "$file"); ref_key=$key
        [[ $key == np ]] && ref_from=NumPy || ref_from=C
    done
    local -A ns=()
    for i in "${!keys[@]}"; do
        key=${keys[$i]}; file=$OUT/ew_$key.out
        [[ -n ${notes[$i]} || -n ${failed[$key]:-} ]] && continue
        local res; res=$(lastkey result "$file")
        if [[ -n $ref && $key != "$ref_key" ]] && ! { [[ -n $res ]] && same_num "$res" "$ref"; }; then
            failed[$key]="FAILED: wrong result '$res', $ref_from: $ref (output in bench/${file#"$HERE"/})"
            continue
        fi
        ns[$key]=$(minkey time_ns "$file")
    done

    printf '  %-34s %12s %10s %10s\n' "program" "time" "peer/MLS" "jit/peer"
    for i in "${!keys[@]}"; do
        key=${keys[$i]}; file=$OUT/ew_$key.out
        if [[ -n ${notes[$i]} ]]; then printf '  %-34s %s\n' "${labels[$i]}" "${notes[$i]}"; continue; fi
        if [[ -n ${failed[$key]:-} ]]; then
            printf '  %-34s %s\n' "${labels[$i]}" "${failed[$key]}"; show_tail "$file"; STATUS=1; continue
        fi
        local t=${ns[$key]} r1="-" r2="-"
        [[ -n ${ns[mls]:-} && $key != mls ]] && r1=$(fmt '%.2fx' "$(calc "$t / ${ns[mls]}")")
        [[ -n ${ns[jit]:-} && $key != jit ]] && r2=$(fmt '%.2fx' "$(calc "${ns[jit]} / $t")")
        printf '  %-34s %12s %10s %10s\n' "${labels[$i]}" "$(fmt_ns "$t")" "$r1" "$r2"
    done
    [[ -n $ref ]] && echo "  (check: s = $ref, $ref_from's; every other program agrees to 1e-9)"
    if [[ -n ${ns[jit]:-} ]]; then
        local first=''; [[ -n ${ns[mls]:-} ]] && first=$(minkey first_ns "$OUT/ew_mls.out")
        echo "  (MLS jit staging, the first call of jit(f), which traces f while running it, optimizes and"
        echo "   runs the graph once: $(fmt_ns "$(minkey stage_ns "$OUT/ew_jit.out")")$([[ -n $first ]] && echo "; eager MLS's first evaluation: $(fmt_ns "$first")"), best of $EW_ROUNDS)"
    fi
    unset failed
    unset -f ew_cmd
    echo
    local text="sum((x-y)^2*0.5+exp(-x)) on 1e7: MLS no slower than NumPy"
    if [[ -z ${ns[mls]:-} ]]; then goal "$text" "MISS (no MLS figure)"
    elif [[ -z ${ns[np]:-} ]]; then goal "$text" "n/a (no NumPy figure)"
    elif ge "${ns[np]}" "${ns[mls]}"; then goal "$text" "PASS ($(fmt_ns "${ns[mls]}") vs $(fmt_ns "${ns[np]}"))"
    else goal "$text" "MISS ($(fmt_ns "${ns[mls]}") vs $(fmt_ns "${ns[np]}"))"; fi
    text="sum((x-y)^2*0.5+exp(-x)): jit at most 0.35x NumPy's time"
    if [[ -z ${ns[jit]:-} ]]; then goal "$text" "MISS (no MLS jit figure)"
    elif [[ -z ${ns[np]:-} ]]; then goal "$text" "n/a (no NumPy figure)"
    else limit_goal "$text" "${ns[jit]}" "$(calc "0.35 * ${ns[np]}")" "${ns[np]}"; fi
    text="sum((x-y)^2*0.5+exp(-x)): jit within 1.2x of 2-thread C"
    if [[ -z ${ns[jit]:-} ]]; then goal "$text" "MISS (no MLS jit figure)"
    elif [[ -z ${ns[c2]:-} ]]; then goal "$text" "n/a (no 2-thread C figure)"
    else limit_goal "$text" "${ns[jit]}" "$(calc "1.2 * ${ns[c2]}")" "${ns[c2]}"; fi
}

# ---------------------------------------------------------------- (d) start-up

STARTUP_RUNS=30
STARTUP_WARMUP=3

# startup_loop FILE CMD... : fallback timer when hyperfine is missing.
# Sets S_MIN, S_MEAN, S_MEDIAN in ns.
startup_loop() {
    local file=$1; shift
    local i t0 times=()
    for (( i = 0; i < STARTUP_WARMUP + STARTUP_RUNS; i++ )); do
        now_us; t0=$NOW_US
        "$@" >/dev/null 2>&1
        now_us
        (( i >= STARTUP_WARMUP )) && times+=( $(( (NOW_US - t0) * 1000 )) )
    done
    printf '%s\n' "${times[@]}" >"$file"
    read -r S_MIN S_MEAN S_MEDIAN < <(sort -n "$file" | awk '{ v[NR] = $1; s += $1 }
        END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
              printf "%.0f %.0f %.0f\n", v[1], s / NR, m }')
}

bench_startup() {
    local tool="hyperfine, $STARTUP_WARMUP warm-up + $STARTUP_RUNS runs"
    have "$HYPERFINE" || tool="shell timer, $STARTUP_WARMUP warm-up + $STARTUP_RUNS runs (hyperfine not installed)"
    section "(d) start-up: time of a whole process that evaluates 1  ($tool)"
    printf '  %-28s %12s %12s %12s\n' "command" "min" "median" "mean"

    local labels=() cmds=() skips=()
    local empty=$OUT/startup_empty.mls; : >"$empty"
    if (( MLS_OK )); then
        local f=$OUT/startup_mls_check.out; : >"$f"
        run_once "$f" "$MLS" -e 1
        if (( RC == 0 )); then
            labels+=("mls -e '1'"); cmds+=("$(printf '%q' "$MLS") -e '1'")
            labels+=("mls -e ''"); cmds+=("$(printf '%q' "$MLS") -e ''")
            labels+=("mls empty.mls"); cmds+=("$(printf '%q %q' "$MLS" "$empty")")
        else
            skips+=("$(printf '  %-28s %s' "mls -e '1'" "$(describe_failure "$f")")"); STATUS=1
            skips+=("$(show_tail "$f")")
        fi
    else
        skips+=("$(printf '  %-28s %s' "mls -e '1'" "$MLS_SKIP")")
    fi
    if have "$LUA"; then
        labels+=("$LUA -e ''"); cmds+=("$(printf '%q' "$LUA") -e ''")
    else
        skips+=("$(printf '  %-28s %s' "$LUA -e ''" "skipped: $LUA not installed")")
    fi
    if (( R_OK )); then
        labels+=("Rscript -e 1"); cmds+=("$(printf '%q' "$RSCRIPT") -e 1")
    else
        skips+=("$(printf '  %-28s %s' "Rscript -e 1" "$R_SKIP")")
    fi
    if (( PY_OK )); then
        labels+=("python3 -c 1"); cmds+=("$(printf '%q' "$PYTHON") -c 1")
    else
        skips+=("$(printf '  %-28s %s' "python3 -c 1" "$PY_SKIP")")
    fi

    local MLS_MIN='' i
    local -A SMIN=()                 # the best run of each label
    if (( ${#cmds[@]} > 0 )); then
        if have "$HYPERFINE"; then
            local args=()
            for i in "${!cmds[@]}"; do args+=(-n "${labels[$i]}" "${cmds[$i]}"); done
            if timeout "$TIMEOUT" "$HYPERFINE" -N --style none --warmup "$STARTUP_WARMUP" --runs "$STARTUP_RUNS" \
                    --export-json "$OUT/startup.json" --export-csv "$OUT/startup.csv" \
                    "${args[@]}" >"$OUT/startup.out" 2>&1; then
                # CSV columns: command,mean,stddev,median,user,system,min,max (count from
                # the end: the command name may contain commas)
                i=0
                while IFS= read -r line; do
                    read -r mean median min < <(awk -F, '{ printf "%.0f %.0f %.0f\n", $(NF-6) * 1e9, $(NF-4) * 1e9, $(NF-1) * 1e9 }' <<<"$line")
                    printf '  %-28s %12s %12s %12s\n' "${labels[$i]}" "$(fmt_ns "$min")" "$(fmt_ns "$median")" "$(fmt_ns "$mean")"
                    [[ ${labels[$i]} == "mls -e '1'" ]] && MLS_MIN=$min
                    SMIN[${labels[$i]}]=$min
                    i=$(( i + 1 ))
                done < <(tail -n +2 "$OUT/startup.csv")
            else
                echo "  FAILED: hyperfine exited with an error (output in bench/out/startup.out)"
                show_tail "$OUT/startup.out"
                STATUS=1
            fi
        else
            for i in "${!cmds[@]}"; do
                eval "startup_loop \"\$OUT/startup_$i.times\" ${cmds[$i]}"
                printf '  %-28s %12s %12s %12s\n' "${labels[$i]}" "$(fmt_ns "$S_MIN")" "$(fmt_ns "$S_MEDIAN")" "$(fmt_ns "$S_MEAN")"
                [[ ${labels[$i]} == "mls -e '1'" ]] && MLS_MIN=$S_MIN
                SMIN[${labels[$i]}]=$S_MIN
            done
        fi
    fi
    for i in "${skips[@]}"; do [[ -n $i ]] && echo "$i"; done

    echo
    local text="mls -e '1' start-up under 20 ms (best run)"
    if [[ -z $MLS_MIN ]]; then
        goal "$text" "MISS (no MLS figure)"
    elif (( MLS_MIN < 20000000 )); then
        goal "$text" "PASS ($(fmt_ns "$MLS_MIN"))"
    else
        goal "$text" "MISS ($(fmt_ns "$MLS_MIN"))"
    fi
    # issue 31: an empty program at most 3 ms, beside Lua's (plugins loaded on first use,
    # docs/architecture.md "Plugins")
    local lk="$LUA -e ''" l
    local lua=${SMIN[$lk]:-}
    for l in "mls -e ''" "mls empty.mls"; do
        text="$l start-up at most 3 ms (best run; $LUA -e '' $([[ -n $lua ]] && fmt_ns "$lua" || echo "not measured"))"
        if [[ -z ${SMIN[$l]:-} ]]; then goal "$text" "MISS (no MLS figure)"
        elif (( SMIN[$l] <= 3000000 )); then goal "$text" "PASS ($(fmt_ns "${SMIN[$l]}"))"
        else goal "$text" "MISS ($(fmt_ns "${SMIN[$l]}"))"; fi
    done
}

# ---------------------------------------------------------------- (f) MLP gradient / forward

MLP_ROUNDS=${BENCH_MLP_ROUNDS:-10}   # rounds inside each process (best one kept)
MLP_REPS=${BENCH_MLP_REPS:-20}       # passes timed together in a round
MLS_STDLIB=${MLS_PATH:-$HERE/../stdlib}
TORCH_OK=0; (( NP_OK )) && "$PYTHON" -c 'import torch' >/dev/null 2>&1 && TORCH_OK=1
TORCH_SKIP="skipped: PyTorch not installed"
(( PY_OK )) || TORCH_SKIP=$PY_SKIP

# same_num A B: A and B agree to 1e-9 relative
same_num() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; m = b < 0 ? -b : b;
                                             if (m < 1) m = 1; exit !(d <= 1e-9 * m) }'; }

# mlp_run TAG CMD...: one process; sets MLP_FWD, MLP_VG (best ns), MLP_LOSS, MLP_GSUM, MLP_MSG
mlp_run() {
    local tag=$1; shift
    local file=$OUT/$tag.out
    : >"$file"
    MLP_FWD='' MLP_VG='' MLP_LOSS='' MLP_GSUM='' MLP_MSG=''
    echo "--- $*" >>"$file"
    run_once "$file" "$@"
    MLP_FWD=$(minkey fwd_ns "$file"); MLP_VG=$(minkey vg_ns "$file")
    MLP_LOSS=$(lastkey loss "$file"); MLP_GSUM=$(lastkey gsum "$file")
    if (( RC != 0 )) || [[ -z $MLP_FWD || -z $MLP_VG ]]; then MLP_MSG=$(describe_failure "$file"); return 1; fi
    return 0
}

bench_mlp() {
    section "(f) 784-256-10 MLP, relu + softmax cross-entropy, batch 128: loss + gradient vs forward pass  (best of $MLP_ROUNDS rounds x $MLP_REPS)"
    printf '  %-40s %12s %14s %12s\n' "program" "forward" "loss + grad" "grad/fwd"
    local mls_ratio='' np_loss='' np_gsum='' torch_ratio='' mls_vg='' jit_vg='' mls_fwd='' jit_fwd=''
    local -a keys=(mls mls_jit np torch)
    local -A loss=() gsum=() name=()
    local key label ok skip
    for key in "${keys[@]}"; do
        case $key in
            mls)     label="MLS value_and_grad (stdlib/nn)"; ok=$MLS_OK; skip=$MLS_SKIP
                     set -- env MLS_PATH="$MLS_STDLIB" "$MLS" "$HERE/mlp_grad.mls" -nvargs "rounds=$MLP_ROUNDS" "reps=$MLP_REPS" ;;
            mls_jit) label="MLS jit(value_and_grad), jit(loss)"; ok=$MLS_OK; skip=$MLS_SKIP
                     set -- env MLS_PATH="$MLS_STDLIB" "$MLS" "$HERE/mlp_grad.mls" -nvargs "rounds=$MLP_ROUNDS" "reps=$MLP_REPS" mode=jit ;;
            np)      label="NumPy, backward written by hand"; ok=$NP_OK; skip=$NP_SKIP
                     set -- "$PYTHON" "$HERE/mlp_grad.py" "$MLP_ROUNDS" "$MLP_REPS" ;;
            torch)   label="PyTorch autograd (float64)"; ok=$TORCH_OK; skip=$TORCH_SKIP
                     set -- "$PYTHON" "$HERE/mlp_grad_torch.py" "$MLP_ROUNDS" "$MLP_REPS" ;;
        esac
        name[$key]=$label
        if (( ! ok )); then printf '  %-40s %s\n' "$label" "$skip"; continue; fi
        if ! mlp_run "mlp_$key" "$@"; then
            printf '  %-40s %s\n' "$label" "$MLP_MSG"; show_tail "$OUT/mlp_$key.out"; STATUS=1; continue
        fi
        local ratio; ratio=$(calc "$MLP_VG / $MLP_FWD")
        printf '  %-40s %12s %14s %12s\n' "$label" "$(fmt_ns "$MLP_FWD")" "$(fmt_ns "$MLP_VG")" "$(fmt '%.2fx' "$ratio")"
        loss[$key]=$MLP_LOSS; gsum[$key]=$MLP_GSUM
        case $key in
            mls)     mls_ratio=$ratio; mls_vg=$MLP_VG; mls_fwd=$MLP_FWD ;;
            mls_jit) jit_vg=$MLP_VG; jit_fwd=$MLP_FWD ;;
            np)      np_loss=$MLP_LOSS; np_gsum=$MLP_GSUM ;;
            torch)   torch_ratio=$ratio ;;
        esac
    done
    # the programs compute the same loss and gradient: MLS (eager and jit) must agree with NumPy
    if [[ -n $np_loss ]]; then
        local checked=()
        for key in mls mls_jit; do
            [[ -n ${loss[$key]:-} ]] || continue
            if same_num "${loss[$key]}" "$np_loss" && same_num "${gsum[$key]}" "$np_gsum"; then
                checked+=("$key")
            else
                echo "  FAILED: ${name[$key]} computed loss ${loss[$key]}, |grad|^2 ${gsum[$key]}; NumPy $np_loss, $np_gsum"
                [[ $key == mls ]] && mls_ratio='' mls_vg=''
                [[ $key == mls_jit ]] && jit_vg=''
                STATUS=1
            fi
        done
        if (( ${#checked[@]} )); then
            local who="MLS"; (( ${#checked[@]} == 2 )) && who="MLS eager and jit"
            [[ ${checked[*]} == mls_jit ]] && who="MLS jit"
            echo "  (check: $who computed loss ${loss[${checked[0]}]} and sum of squared gradients ${gsum[${checked[0]}]}, as NumPy's)"
        fi
    fi
    if [[ -n $jit_vg ]]; then
        local jf=$OUT/mlp_mls_jit.out
        echo "  (MLS jit staging, the first calls: jit(value_and_grad) $(fmt_ns "$(minkey stage_ns "$jf")"), jit(loss) $(fmt_ns "$(minkey stage_fwd_ns "$jf")"))"
        [[ -n $mls_vg ]] && echo "  (jit vs eager: loss + grad $(fmt '%.2f' "$(calc "$jit_vg / $mls_vg")")x, forward $(fmt '%.2f' "$(calc "$jit_fwd / $mls_fwd")")x)"
    fi
    echo
    local text="MLP value_and_grad <= 3x the forward pass (PyTorch: 2.6x)"
    [[ -n $torch_ratio ]] && text="MLP value_and_grad <= 3x the forward pass (PyTorch here: $(fmt '%.2f' "$torch_ratio")x)"
    if [[ -z $mls_ratio ]]; then goal "$text" "MISS (no MLS figure)"
    elif ge 3 "$mls_ratio"; then goal "$text" "PASS ($(fmt '%.2f' "$mls_ratio")x)"
    else goal "$text" "MISS ($(fmt '%.2f' "$mls_ratio")x)"; fi
    text="MLP: MLS jit(value_and_grad) no slower than eager"
    if [[ -z $jit_vg ]]; then goal "$text" "MISS (no MLS jit figure)"
    elif [[ -z $mls_vg ]]; then goal "$text" "n/a (no eager MLS figure)"
    else limit_goal "$text" "$jit_vg" "$mls_vg" "$mls_vg"; fi
}

# ---------------------------------------------------------------- (g) softmax regression

LR_ROUNDS=${BENCH_LOGREG_ROUNDS:-3}  # processes per program, run interleaved
LR_DATA=${BENCH_FASHION:-/usr/share/datasets/fashion-mnist/}
TIME_V=/usr/bin/time

# peak_kb FILE: the smallest "Maximum resident set size" that /usr/bin/time -v wrote to FILE
peak_kb() {
    awk -F': *' '/Maximum resident set size/ { v = $2 + 0; if (!n || v < m) m = v; n++ }
                 END { if (n) print m }' "$1"
}

fmt_mb() { [[ -n $1 ]] && fmt '%.0f MB' "$(calc "$1 / 1024")" || echo "n/a"; }

bench_logreg() {
    section "(g) softmax regression on Fashion-MNIST: 1000 steps of batch 100, lr 0.5/100 (the seed program)  (best of $LR_ROUNDS processes)"
    if [[ ! -r $LR_DATA/train-images-idx3-ubyte.gz ]]; then
        echo "  skipped: Fashion-MNIST not found in $LR_DATA (set BENCH_FASHION)"
        goal "softmax regression: MLS (grad) trains no slower than NumPy" "n/a (no data)"
        goal "softmax regression: MLS peak memory <= NumPy's" "n/a (no data)"
        goal "softmax regression: jit(grad) at most 0.8x NumPy's time" "n/a (no data)"
        goal "softmax regression: jit(grad) within 1.2x of C" "n/a (no data)"
        return
    fi
    local timer=()
    [[ -x $TIME_V ]] && timer=("$TIME_V" -v)
    local c_ok=0 c_skip="skipped: C compiler $CC not found"
    if have "$CC"; then
        if "$CC" -O2 -o "$OUT/logreg" "$HERE/logreg.c" -lopenblas -lz -lm >>"$BUILD_LOG" 2>&1; then c_ok=1
        else c_skip="skipped: could not build logreg.c against OpenBLAS and zlib (see bench/out/build.log)"; fi
    fi
    local -a keys=() labels=() notes=()
    local key
    for key in mls mls_jit mls_hand np c torch; do
        case $key in
            mls)      labels+=("MLS, gradient by grad"); notes+=("$( (( MLS_OK )) || echo "$MLS_SKIP")") ;;
            mls_jit)  labels+=("MLS, gradient by jit(grad)"); notes+=("$( (( MLS_OK )) || echo "$MLS_SKIP")") ;;
            mls_hand) labels+=("MLS, hand-derived gradient (no goal)"); notes+=("$( (( MLS_OK )) || echo "$MLS_SKIP")") ;;
            np)       labels+=("NumPy seed program (hand gradient)"); notes+=("$( (( NP_OK )) || echo "$NP_SKIP")") ;;
            c)        labels+=("C on OpenBLAS (hand gradient)"); notes+=("$( (( c_ok )) || echo "$c_skip")") ;;
            torch)    labels+=("PyTorch autograd (float64)"); notes+=("$( (( TORCH_OK )) || echo "$TORCH_SKIP")") ;;
        esac
        keys+=("$key")
    done
    lr_cmd() {  # lr_cmd KEY: sets LR_CMD to KEY's command
        case $1 in
            mls)      LR_CMD=(env MLS_PATH="$MLS_STDLIB" "$MLS" "$HERE/logreg.mls" -nvargs mode=grad "data=$LR_DATA") ;;
            mls_jit)  LR_CMD=(env MLS_PATH="$MLS_STDLIB" "$MLS" "$HERE/logreg.mls" -nvargs mode=jit "data=$LR_DATA") ;;
            mls_hand) LR_CMD=(env MLS_PATH="$MLS_STDLIB" "$MLS" "$HERE/logreg.mls" -nvargs mode=hand "data=$LR_DATA") ;;
            np)       LR_CMD=("$PYTHON" "$HERE/logreg.py" 1000 "$LR_DATA") ;;
            c)        LR_CMD=("$OUT/logreg" 1000 "$LR_DATA") ;;
            torch)    LR_CMD=("$PYTHON" "$HERE/logreg_torch.py" 1000 "$LR_DATA") ;;
        esac
    }
    declare -A failed=()
    local i r file
    for i in "${!keys[@]}"; do : >"$OUT/logreg_${keys[$i]}.out"; done
    for (( r = 1; r <= LR_ROUNDS; r++ )); do
        for i in "${!keys[@]}"; do
            key=${keys[$i]}
            [[ -n ${notes[$i]} || -n ${failed[$key]:-} ]] && continue
            file=$OUT/logreg_$key.out
            lr_cmd "$key"
            echo "--- ${LR_CMD[*]}" >>"$file"
            run_once "$file" "${timer[@]}" "${LR_CMD[@]}"
            if (( RC != 0 )) || [[ -z $(minkey time_ns "$file") ]]; then failed[$key]=$(describe_failure "$file"); fi
        done
    done

    printf '  %-38s %11s %10s %10s %9s %17s\n' "program" "train time" "peer/MLS" "peak RSS" "accuracy" "W after 10 steps"
    local mls_t='' np_t='' mls_kb='' np_kb='' ref_ss='' ref_ws='' ref_from='' ref_key='' jit_t='' c_t=''
    # reference weights: NumPy's, else C's
    for key in np c; do
        file=$OUT/logreg_$key.out
        [[ -z $ref_ss && -s $file && -z ${failed[$key]:-} ]] || continue
        ref_ss=$(lastkey w10_ss "$file"); ref_ws=$(lastkey w10_ws "$file"); ref_key=$key
        [[ $key == np ]] && ref_from=NumPy || ref_from=C
    done
    [[ -s $OUT/logreg_mls.out && -z ${failed[mls]:-} ]] && mls_t=$(minkey time_ns "$OUT/logreg_mls.out")
    for i in "${!keys[@]}"; do
        key=${keys[$i]}; file=$OUT/logreg_$key.out
        if [[ -n ${notes[$i]} ]]; then printf '  %-38s %s\n' "${labels[$i]}" "${notes[$i]}"; continue; fi
        if [[ -n ${failed[$key]:-} ]]; then
            printf '  %-38s %s\n' "${labels[$i]}" "${failed[$key]}"; show_tail "$file"; STATUS=1; continue
        fi
        local t kb acc ss ws check="-" ratio="-"
        t=$(minkey time_ns "$file"); kb=$(peak_kb "$file"); acc=$(lastkey accuracy "$file")
        ss=$(lastkey w10_ss "$file"); ws=$(lastkey w10_ws "$file")
        if [[ $key == "$ref_key" ]]; then check="(reference)"
        elif [[ -n $ref_ss ]]; then
            if same_num "$ss" "$ref_ss" && same_num "$ws" "$ref_ws"; then check="= $ref_from (1e-9)"
            else check="DIFFERS"; STATUS=1; fi
        fi
        [[ -n $mls_t && $key != mls ]] && ratio=$(fmt '%.2fx' "$(calc "$t / $mls_t")")
        printf '  %-38s %11s %10s %10s %9s %17s\n' "${labels[$i]}" "$(fmt_ns "$t")" "$ratio" "$(fmt_mb "$kb")" \
            "$(fmt '%.4f' "$acc")" "$check"
        [[ $check == DIFFERS ]] && echo "        | w10_ss $ss, w10_ws $ws; $ref_from: $ref_ss, $ref_ws"
        case $key in
            mls)     mls_kb=$kb ;;
            mls_jit) [[ $check != DIFFERS ]] && jit_t=$t ;;
            np)      np_t=$t; np_kb=$kb ;;
            c)       [[ $check != DIFFERS ]] && c_t=$t ;;
        esac
    done
    if [[ -n $jit_t ]]; then
        echo "  (MLS jit(grad) staging, its first call: $(fmt_ns "$(minkey stage_ns "$OUT/logreg_mls_jit.out")")," \
             "best of $LR_ROUNDS; part of its train time)"
    fi
    unset failed
    unset -f lr_cmd
    echo "  (train time: the 1000-step loop only, reading the data is not timed; peak RSS: the whole"
    echo "   process, from $TIME_V -v; accuracy on the 10000 test images after 1000 steps varies with"
    echo "   last-bit rounding at this learning rate, the weights after 10 steps must not)"
    echo
    local text="softmax regression: MLS (grad) trains no slower than NumPy"
    if [[ -z $mls_t ]]; then goal "$text" "MISS (no MLS figure)"
    elif [[ -z $np_t ]]; then goal "$text" "n/a (no NumPy figure)"
    elif ge "$np_t" "$mls_t"; then goal "$text" "PASS ($(fmt_ns "$mls_t") vs $(fmt_ns "$np_t"))"
    else goal "$text" "MISS ($(fmt_ns "$mls_t") vs $(fmt_ns "$np_t"), $(fmt '%.2f' "$(calc "$mls_t / $np_t")")x)"; fi
    text="softmax regression: MLS peak memory <= NumPy's"
    if [[ -z $mls_kb || -z $np_kb ]]; then goal "$text" "n/a (no peak memory figure)"
    elif ge "$np_kb" "$mls_kb"; then goal "$text" "PASS ($(fmt_mb "$mls_kb") vs $(fmt_mb "$np_kb"))"
    else goal "$text" "MISS ($(fmt_mb "$mls_kb") vs $(fmt_mb "$np_kb"))"; fi
    text="softmax regression: MLS peak RSS at most 600 MB (the data are 376 MB of doubles)"
    if [[ -z $mls_kb ]]; then goal "$text" "n/a (no peak memory figure)"
    elif ge 614400 "$mls_kb"; then goal "$text" "PASS ($(fmt_mb "$mls_kb"))"
    else goal "$text" "MISS ($(fmt_mb "$mls_kb"))"; fi
    text="softmax regression: jit(grad) at most 0.8x NumPy's time"
    if [[ -z $jit_t ]]; then goal "$text" "MISS (no MLS jit figure)"
    elif [[ -z $np_t ]]; then goal "$text" "n/a (no NumPy figure)"
    else limit_goal "$text" "$jit_t" "$(calc "0.8 * $np_t")" "$np_t"; fi
    text="softmax regression: jit(grad) within 1.2x of C"
    if [[ -z $jit_t ]]; then goal "$text" "MISS (no MLS jit figure)"
    elif [[ -z $c_t ]]; then goal "$text" "n/a (no C figure)"
    else limit_goal "$text" "$jit_t" "$(calc "1.2 * $c_t")" "$c_t"; fi
}

# ---------------------------------------------------------------- (l) data loading

LD_ROUNDS=${BENCH_LOAD_ROUNDS:-3}  # processes per program, run interleaved

bench_load() {
    section "(l) load the Fashion-MNIST training images (idx, gzip), X / 255, X[perm, ] (best of $LD_ROUNDS processes)"
    if [[ ! -r $LR_DATA/train-images-idx3-ubyte.gz ]]; then
        echo "  skipped: Fashion-MNIST not found in $LR_DATA (set BENCH_FASHION)"
        goal "data loading: read, scale and shuffle in at most NumPy's time" "n/a (no data)"
        return
    fi
    local timer=()
    [[ -x $TIME_V ]] && timer=("$TIME_V" -v)
    local c_ok=0 c_skip="skipped: C compiler $CC not found"
    if have "$CC"; then
        if "$CC" -O2 -o "$OUT/load" "$HERE/load.c" -lz >>"$BUILD_LOG" 2>&1; then c_ok=1
        else c_skip="skipped: could not build load.c against zlib (see bench/out/build.log)"; fi
    fi
    local mls_note=; (( MLS_OK )) || mls_note=$MLS_SKIP
    local -a keys=(mls np c) labels=("MLS" "NumPy" "C (malloc + memcpy per row)")
    local -a notes=("$mls_note" "$( (( NP_OK )) || echo "$NP_SKIP")" "$( (( c_ok )) || echo "$c_skip")")
    ld_cmd() {  # ld_cmd KEY: sets LD_CMD to KEY's command
        case $1 in
            mls) LD_CMD=("$MLS" "$HERE/load.mls" -nvargs "data=$LR_DATA") ;;
            np)  LD_CMD=("$PYTHON" "$HERE/load.py" "$LR_DATA") ;;
            c)   LD_CMD=("$OUT/load" "$LR_DATA") ;;
        esac
    }
    declare -A failed=()
    local i r key file
    for key in "${keys[@]}"; do : >"$OUT/load_$key.out"; done
    for (( r = 1; r <= LD_ROUNDS; r++ )); do
        for i in "${!keys[@]}"; do
            key=${keys[$i]}
            [[ -n ${notes[$i]} || -n ${failed[$key]:-} ]] && continue
            file=$OUT/load_$key.out
            ld_cmd "$key"
            echo "--- ${LD_CMD[*]}" >>"$file"
            run_once "$file" "${timer[@]}" "${LD_CMD[@]}"
            if (( RC != 0 )) || [[ -z $(minkey time_ns "$file") ]]; then failed[$key]=$(describe_failure "$file"); fi
        done
    done
    local ref='' ref_key=''
    for key in np c mls; do
        file=$OUT/load_$key.out
        [[ -z $ref && -s $file && -z ${failed[$key]:-} ]] || continue
        ref=$(lastkey check "$file"); ref_key=$key
    done
    local -A ns=()
    for i in "${!keys[@]}"; do
        key=${keys[$i]}; file=$OUT/load_$key.out
        [[ -n ${notes[$i]} || -n ${failed[$key]:-} ]] && continue
        local res; res=$(lastkey check "$file")
        if [[ -n $ref && $key != "$ref_key" ]] && ! { [[ -n $res ]] && same_num "$res" "$ref"; }; then
            failed[$key]="FAILED: wrong checksum '$res', expected $ref (output in bench/${file#"$HERE"/})"
            continue
        fi
        ns[$key]=$(minkey time_ns "$file")
    done
    printf '  %-30s %10s %10s %10s %10s %10s %10s\n' "program" "total" "read" "/ 255" "X[perm, ]" "peer/MLS" "peak RSS"
    for i in "${!keys[@]}"; do
        key=${keys[$i]}; file=$OUT/load_$key.out
        if [[ -n ${notes[$i]} ]]; then printf '  %-30s %s\n' "${labels[$i]}" "${notes[$i]}"; continue; fi
        if [[ -n ${failed[$key]:-} ]]; then
            printf '  %-30s %s\n' "${labels[$i]}" "${failed[$key]}"; show_tail "$file"; STATUS=1; continue
        fi
        local t=${ns[$key]} ratio="-"
        [[ -n ${ns[mls]:-} && $key != mls ]] && ratio=$(fmt '%.2fx' "$(calc "$t / ${ns[mls]}")")
        printf '  %-30s %10s %10s %10s %10s %10s %10s\n' "${labels[$i]}" "$(fmt_ns "$t")" "$(fmt_ns "$(minkey read_ns "$file")")" \
            "$(fmt_ns "$(minkey scale_ns "$file")")" "$(fmt_ns "$(minkey shuffle_ns "$file")")" "$ratio" "$(fmt_mb "$(peak_kb "$file")")"
    done
    echo "  (each step's best and the total's best, of $LD_ROUNDS processes; the same permutation and checksum everywhere)"
    unset failed
    unset -f ld_cmd
    echo
    local text="data loading: read, scale and shuffle in at most NumPy's time"
    if [[ -z ${ns[mls]:-} ]]; then goal "$text" "MISS (no MLS figure)"
    elif [[ -z ${ns[np]:-} ]]; then goal "$text" "n/a (no NumPy figure)"
    else limit_goal "$text" "${ns[mls]}" "${ns[np]}" "${ns[np]}"; fi
}

# ---------------------------------------------------------------- (h) t(X) %*% D

TM_ROUNDS=${BENCH_TMATMUL_ROUNDS:-3}  # processes per program, run interleaved

bench_tmatmul() {
    section "(h) G = t(X) %*% D, X 100 x 784 and D 100 x 10: the seed's hand gradient product  (best of $TM_ROUNDS processes x 10 rounds x 200)"
    local c_ok=0 c_skip="skipped: C compiler $CC not found"
    if have "$CC"; then
        if "$CC" -O2 -o "$OUT/tmatmul" "$HERE/tmatmul.c" -lopenblas -lm >>"$BUILD_LOG" 2>&1; then c_ok=1
        else c_skip="skipped: could not build tmatmul.c against OpenBLAS (see bench/out/build.log)"; fi
    fi
    local -a keys=(mls np c) labels=("MLS t(X) %*% D" "NumPy X.T @ D" "C cblas_dgemm, CblasTrans") notes=()
    notes+=("$( (( MLS_OK )) || echo "$MLS_SKIP")" "$( (( NP_OK )) || echo "$NP_SKIP")" "$( (( c_ok )) || echo "$c_skip")")
    tm_cmd() {  # tm_cmd KEY: sets TM_CMD to KEY's command
        case $1 in
            mls) TM_CMD=("$MLS" "$HERE/tmatmul.mls") ;;
            np)  TM_CMD=("$PYTHON" "$HERE/tmatmul.py") ;;
            c)   TM_CMD=("$OUT/tmatmul") ;;
        esac
    }
    declare -A failed=()
    local i r key file
    for key in "${keys[@]}"; do : >"$OUT/tmatmul_$key.out"; done
    for (( r = 1; r <= TM_ROUNDS; r++ )); do
        for i in "${!keys[@]}"; do
            key=${keys[$i]}
            [[ -n ${notes[$i]} || -n ${failed[$key]:-} ]] && continue
            file=$OUT/tmatmul_$key.out
            tm_cmd "$key"
            echo "--- ${TM_CMD[*]}" >>"$file"
            run_once "$file" "${TM_CMD[@]}"
            if (( RC != 0 )) || [[ -z $(minkey time_ns "$file") ]]; then failed[$key]=$(describe_failure "$file"); fi
        done
    done
    printf '  %-30s %14s %12s\n' "program" "per product" "peer/MLS"
    local mls_ns='' np_ns='' mls_chk='' np_chk=''
    [[ -z ${notes[0]} && -z ${failed[mls]:-} ]] && mls_ns=$(minkey time_ns "$OUT/tmatmul_mls.out")
    for i in "${!keys[@]}"; do
        key=${keys[$i]}; file=$OUT/tmatmul_$key.out
        if [[ -n ${notes[$i]} ]]; then printf '  %-30s %s\n' "${labels[$i]}" "${notes[$i]}"; continue; fi
        if [[ -n ${failed[$key]:-} ]]; then
            printf '  %-30s %s\n' "${labels[$i]}" "${failed[$key]}"; show_tail "$file"; STATUS=1; continue
        fi
        local t ratio="-"
        t=$(minkey time_ns "$file")
        [[ -n $mls_ns && $key != mls ]] && ratio=$(fmt '%.2fx' "$(calc "$t / $mls_ns")")
        printf '  %-30s %14s %12s\n' "${labels[$i]}" "$(fmt_ns "$t")" "$ratio"
        case $key in
            mls) mls_chk=$(lastkey check "$file") ;;
            np)  np_ns=$t; np_chk=$(lastkey check "$file") ;;
        esac
    done
    unset failed
    unset -f tm_cmd
    if [[ -n $mls_chk && -n $np_chk ]]; then       # the same product: MLS must agree with NumPy
        if same_num "$mls_chk" "$np_chk"; then echo "  (check: sum(G) = $mls_chk, as NumPy's)"
        else echo "  FAILED: MLS computed sum(G) = $mls_chk, NumPy $np_chk"; STATUS=1; fi
    fi
    echo
    local text="t(X) %*% D (100x784, 100x10): MLS time <= 1.1x NumPy's"
    if [[ -z $mls_ns ]]; then goal "$text" "MISS (no MLS figure)"
    elif [[ -z $np_ns ]]; then goal "$text" "n/a (no NumPy figure)"
    elif ge "$(calc "1.1 * $np_ns")" "$mls_ns"; then
        goal "$text" "PASS ($(fmt_ns "$mls_ns") vs $(fmt_ns "$np_ns"), $(fmt '%.2f' "$(calc "$mls_ns / $np_ns")")x)"
    else goal "$text" "MISS ($(fmt_ns "$mls_ns") vs $(fmt_ns "$np_ns"), $(fmt '%.2f' "$(calc "$mls_ns / $np_ns")")x)"; fi
}

# ---------------------------------------------------------------- (s) staging

source "$HERE/staging.sh"   # bench_staging: eager vs jit vs NumPy, issue 27's goals

# ---------------------------------------------------------------- (sp) sparse

# bench/sparse.sh runs as its own process (its knobs are BENCH_SPARSE_*); a failure there
# (a crash, a timeout, a wrong check) fails the run
bench_sparse() {
    section "(sp) sparse matrices: MLS, SciPy and R's Matrix side by side (bench/sparse.sh)"
    BENCH_SPARSE_NO_HEADER=1 PYTHON="$PYTHON" RSCRIPT="$RSCRIPT" "$HERE/sparse.sh" "$MLS" || STATUS=1
}

# ---------------------------------------------------------------- main

want scalar  && bench_scalar
want matmul  && bench_matmul
want small   && bench_small
want startup && bench_startup
want ew      && bench_ew
want mlp     && bench_mlp
want logreg  && bench_logreg
want load    && bench_load
want tmatmul && bench_tmatmul
want staging && bench_staging
want sparse  && bench_sparse

section "summary"
for g in "${GOALS[@]}"; do echo "  $g"; done
echo
echo "  total bench time: $(( SECONDS - START_ALL )) s"
if (( STATUS != 0 )); then
    echo "  some programs failed (see above); exit status 1"
fi
exit "$STATUS"
