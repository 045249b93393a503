# bench/staging.sh — section (s) of bench/run.sh, "staging that pays" (issue 27 item 9): MLS
# eager, MLS staged (jit) and a NumPy peer side by side in one run, with the issue's goals.
# Sourced by run.sh (BENCH_ONLY=staging), whose helpers and settings it uses: run_once, minkey,
# lastkey, calc, fmt, fmt_ns, same_num, describe_failure, show_tail, section, goal, limit_goal,
# MLS, PYTHON, OUT, HERE, MLS_OK, NP_OK, MLS_STDLIB, LR_DATA, STATUS. It defines bench_staging.
#
# Every program runs in ST_ROUNDS processes, the programs of one benchmark interleaved (a noisy
# spell hits all of them alike). An MLS process calls the benchmarked function once (the first
# call: for jit, tracing while running it, optimizing the graph and one run of the graph), then
# ST_REPS more times ((s3) and (s4), whose jit traces its blocks at the second call, time a
# second call apart first); "steady" is the best of those later calls over all processes,
# "first call" the best first call. Results are checked: every MLS variant must print the
# eager one's checksums and the peer its shared ones, to 1e-9 (a mismatch fails the run, exit
# status 1).

ST_ROUNDS=${BENCH_STAGING_ROUNDS:-3}       # processes per program, interleaved
ST_REPS=${BENCH_STAGING_REPS:-2}           # calls timed after the first in each process
ST_MLP_ROWS=${BENCH_STAGING_MLP_ROWS:-60000}  # rows of Fashion-MNIST in the MLP epoch (s2)

declare -A ST_LABEL=() ST_NOTE=() ST_FAIL=() ST_T=() ST_FIRST=()
ST_KEYS=()
ST_NAME=

# st_start NAME: begins a benchmark whose outputs are bench/out/staging_NAME_KEY.out
st_start() {
    ST_NAME=$1; ST_KEYS=()
    ST_LABEL=(); ST_NOTE=(); ST_FAIL=(); ST_T=(); ST_FIRST=()
}

# st_add KEY LABEL NOTE: a row; a non-empty NOTE says why the row is skipped
st_add() { ST_KEYS+=("$1"); ST_LABEL[$1]=$2; ST_NOTE[$1]=$3; }

st_file() { echo "$OUT/staging_${ST_NAME}_$1.out"; }

# st_measure: ST_ROUNDS processes of every row (st_cmd KEY sets ST_CMD), interleaved;
# sets ST_T[KEY] (best time_ns), ST_FIRST[KEY] (best first_ns or stage_ns), ST_FAIL[KEY]
st_measure() {
    local r key file
    for key in "${ST_KEYS[@]}"; do : >"$(st_file "$key")"; done
    for (( r = 1; r <= ST_ROUNDS; r++ )); do
        for key in "${ST_KEYS[@]}"; do
            [[ -n ${ST_NOTE[$key]} || -n ${ST_FAIL[$key]:-} ]] && continue
            file=$(st_file "$key")
            st_cmd "$key"
            echo "--- ${ST_CMD[*]}" >>"$file"
            run_once "$file" "${ST_CMD[@]}"
            if (( RC != 0 )) || [[ -z $(minkey time_ns "$file") ]]; then
                ST_FAIL[$key]=$(describe_failure "$file")
            fi
        done
    done
    for key in "${ST_KEYS[@]}"; do
        [[ -n ${ST_NOTE[$key]} || -n ${ST_FAIL[$key]:-} ]] && continue
        file=$(st_file "$key")
        ST_T[$key]=$(minkey time_ns "$file")
        ST_FIRST[$key]=$(minkey first_ns "$file")
        [[ -n ${ST_FIRST[$key]} ]] || ST_FIRST[$key]=$(minkey stage_ns "$file")
    done
}

# st_check KEY REF NAMES...: KEY's last printed value of each NAME must equal REF's to 1e-9;
# otherwise KEY fails (no figure). Nothing to check when either has no figure. Sets ST_CHECKED
# to "yes" when it compared.
st_check() {
    local key=$1 ref=$2 name a b; shift 2
    ST_CHECKED=
    [[ -n ${ST_T[$key]:-} && -n ${ST_T[$ref]:-} ]] || return 0
    for name in "$@"; do
        a=$(lastkey "$name" "$(st_file "$key")"); b=$(lastkey "$name" "$(st_file "$ref")")
        if [[ -z $a || -z $b ]] || ! same_num "$a" "$b"; then
            ST_FAIL[$key]="FAILED: wrong result: $name '$a', ${ST_LABEL[$ref]%%,*} '$b' (output in bench/${OUT#"$HERE"/}/staging_${ST_NAME}_$key.out)"
            unset "ST_T[$key]"
            return 0
        fi
    done
    ST_CHECKED=yes
}

# st_table EAGER PEER: the rows, steady time, first call, and the ratios to EAGER's and PEER's
# steady times (PEER may be empty: no peer, no column)
st_table() {
    local eager=$1 peer=$2 key t r1 r2 first
    if [[ -n $peer ]]; then
        printf '  %-46s %11s %11s %8s %8s\n' "program" "steady" "first call" "/eager" "/${ST_LABEL[$peer]%%[ ,]*}"
    else
        printf '  %-46s %11s %11s %8s\n' "program" "steady" "first call" "/eager"
    fi
    for key in "${ST_KEYS[@]}"; do
        if [[ -n ${ST_NOTE[$key]} ]]; then printf '  %-46s %s\n' "${ST_LABEL[$key]}" "${ST_NOTE[$key]}"; continue; fi
        if [[ -n ${ST_FAIL[$key]:-} ]]; then
            printf '  %-46s %s\n' "${ST_LABEL[$key]}" "${ST_FAIL[$key]}"; show_tail "$(st_file "$key")"
            STATUS=1; continue
        fi
        t=${ST_T[$key]} r1="-" r2="-" first="-"
        [[ -n ${ST_FIRST[$key]} ]] && first=$(fmt_ns "${ST_FIRST[$key]}")
        [[ $key != "$eager" && -n ${ST_T[$eager]:-} ]] && r1=$(fmt '%.2fx' "$(calc "$t / ${ST_T[$eager]}")")
        if [[ -n $peer ]]; then
            [[ $key != "$peer" && -n ${ST_T[$peer]:-} ]] && r2=$(fmt '%.2fx' "$(calc "$t / ${ST_T[$peer]}")")
            printf '  %-46s %11s %11s %8s %8s\n' "${ST_LABEL[$key]}" "$(fmt_ns "$t")" "$first" "$r1" "$r2"
        else
            printf '  %-46s %11s %11s %8s\n' "${ST_LABEL[$key]}" "$(fmt_ns "$t")" "$first" "$r1"
        fi
    done
}

# st_goal TEXT KEY BASE FACTOR BASE_NAME: PASS when KEY's steady time <= FACTOR x BASE's
st_goal() {
    local text=$1 key=$2 base=$3 factor=$4 base_name=$5
    if [[ -n ${ST_DATA_NOTE:-} && ${ST_NOTE[$key]} == "$ST_DATA_NOTE" ]]; then goal "$text" "n/a (no data)"
    elif [[ -z ${ST_T[$key]:-} ]]; then goal "$text" "MISS (no MLS jit figure)"
    elif [[ -z ${ST_T[$base]:-} ]]; then goal "$text" "n/a (no $base_name figure)"
    else limit_goal "$text" "${ST_T[$key]}" "$(calc "$factor * ${ST_T[$base]}")" "${ST_T[$base]}"; fi
}

# st_first_line KEY: what the jit's first call cost beside its steady state
st_first_line() {
    local key=$1
    [[ -n ${ST_T[$key]:-} && -n ${ST_FIRST[$key]} ]] || return 0
    echo "  (jit first call $(fmt_ns "${ST_FIRST[$key]}"): f traced while it runs, the graph optimized, then run;"
    echo "   first call - steady = $(fmt_ns "$(calc "${ST_FIRST[$key]} - ${ST_T[$key]}")")," \
         "the cost of staging; best of $ST_ROUNDS processes)"
}

# st_dynamic_line KEY: the same for a function whose loops depend on computed values
st_dynamic_line() {
    local key=$1
    [[ -n ${ST_T[$key]:-} ]] || return 0
    echo "  (jit: a loop condition depends on computed values, so f is not one graph: its first call"
    echo "   ($(fmt_ns "${ST_FIRST[$key]}")) runs eagerly from that condition on, the second" \
         "($(fmt_ns "$(minkey second_ns "$(st_file "$key")")"), not in steady)"
    echo "   traces each straight-line block into a graph, later calls run the blocks' graphs with"
    echo "   the control flow eager; best of $ST_ROUNDS processes)"
}

st_mls() {  # st_mls PROGRAM ARGS...: sets ST_CMD to an MLS run of bench/PROGRAM
    local prog=$1; shift
    ST_CMD=(env MLS_PATH="$MLS_STDLIB" "$MLS" "$HERE/$prog" -nvargs "$@")
}

st_skips() {  # sets ST_MLS_NOTE and ST_NP_NOTE, and ST_DATA_NOTE for the Fashion-MNIST ones
    ST_MLS_NOTE=; (( MLS_OK )) || ST_MLS_NOTE=$MLS_SKIP
    ST_NP_NOTE=; (( NP_OK )) || ST_NP_NOTE=$NP_SKIP
    ST_DATA_NOTE=
    [[ -r $LR_DATA/train-images-idx3-ubyte.gz ]] || ST_DATA_NOTE="skipped: Fashion-MNIST not found in $LR_DATA (set BENCH_FASHION)"
    # the rows that turn libxsmm's products off (MLS_XSMM=0) show what they buy; without the plugin
    # every row already runs on OpenBLAS
    ST_XSMM_NOTE=
    if (( MLS_OK )) && ! "$MLS" --version 2>/dev/null | grep -q 'small products: libxsmm'; then
        ST_XSMM_NOTE="skipped: this mls has no libxsmm (build/libmls_xsmm.so): the rows above are OpenBLAS's"
    fi
}

# ---------------------------------------------------------------- (s1) softmax regression

st_logreg() {
    section "(s1) staging: the seed softmax regression, the whole 1000-step loop in one jit graph  (best of $ST_ROUNDS processes x $ST_REPS calls)"
    st_start logreg
    local mnote=${ST_DATA_NOTE:-$ST_MLS_NOTE} nnote=${ST_DATA_NOTE:-$ST_NP_NOTE}
    st_add eager "MLS eager, train(W, X, Y) (grad)" "$mnote"
    st_add jit "MLS jit(train): 1000 steps in one graph" "$mnote"
    st_add np "NumPy seed loop (bench/logreg.py)" "$nnote"
    st_add jitblas "MLS jit(train), OpenBLAS products (MLS_XSMM=0)" "${mnote:-$ST_XSMM_NOTE}"
    st_cmd() {
        case $1 in
            eager) st_mls staging_logreg.mls mode=eager "reps=$ST_REPS" "data=$LR_DATA" ;;
            jit)   st_mls staging_logreg.mls mode=jit "reps=$ST_REPS" "data=$LR_DATA" ;;
            jitblas) st_mls staging_logreg.mls mode=jit "reps=$ST_REPS" "data=$LR_DATA"; ST_CMD=(env MLS_XSMM=0 "${ST_CMD[@]}") ;;
            np)    ST_CMD=("$PYTHON" "$HERE/logreg.py" 1000 "$LR_DATA" $(( ST_REPS + 1 ))) ;;
        esac
    }
    st_measure
    local checks=()
    st_check jit eager w_ss w10_ss w10_ws; [[ -n $ST_CHECKED ]] && checks+=("jit = eager: W after 10 and 1000 steps")
    st_check jitblas eager w10_ss w10_ws
    local ref=eager; [[ -n ${ST_T[eager]:-} ]] || ref=jit
    st_check np "$ref" w10_ss w10_ws; [[ -n $ST_CHECKED ]] && checks+=("NumPy = MLS: W after 10 steps")
    st_table eager np
    if (( ${#checks[@]} )); then
        local joined=${checks[0]}; (( ${#checks[@]} > 1 )) && joined="$joined; ${checks[1]}"
        echo "  (check, to 1e-9: $joined; after 1000 steps at this learning"
        echo "   rate, W differs between grad's and NumPy's hand-derived gradient by rounding, so not checked;"
        echo "   the same holds between libxsmm's and OpenBLAS's products: the OpenBLAS row is checked after 10 steps)"
    fi
    echo "  (steady: the whole 1000-step loop, reading the data not timed; NumPy's first loop counts too)"
    st_first_line jit
    unset -f st_cmd
    echo
    st_goal "staging: softmax regression, jit(loop) <= 0.6x NumPy" jit np 0.6 NumPy
}

# ---------------------------------------------------------------- (s2) MLP epoch

st_mlp() {
    section "(s2) staging: one epoch of a 784-256-10 MLP, batches of 128 over $ST_MLP_ROWS rows  (best of $ST_ROUNDS processes x $ST_REPS calls)"
    st_start mlp
    local mnote=${ST_DATA_NOTE:-$ST_MLS_NOTE}
    st_add eager "MLS eager, epoch(p, X, Y) (grad + nn::sgd)" "$mnote"
    st_add jit "MLS jit(epoch): the epoch in one graph" "$mnote"
    st_add eagerblas "MLS eager, OpenBLAS products (MLS_XSMM=0)" "${mnote:-$ST_XSMM_NOTE}"
    st_add jitblas "MLS jit(epoch), OpenBLAS products (MLS_XSMM=0)" "${mnote:-$ST_XSMM_NOTE}"
    st_add products "floor: the epoch's 5 products a batch alone" "$mnote"
    st_cmd() {
        case $1 in
            eager|jit|products) st_mls staging_mlp.mls "mode=$1" "reps=$ST_REPS" "rows=$ST_MLP_ROWS" "data=$LR_DATA" ;;
            *) st_mls staging_mlp.mls "mode=${1%blas}" "reps=$ST_REPS" "rows=$ST_MLP_ROWS" "data=$LR_DATA"
               ST_CMD=(env MLS_XSMM=0 "${ST_CMD[@]}") ;;
        esac
    }
    st_measure
    st_check jit eager p_ss
    st_check eagerblas eager p_ss
    st_check jitblas eager p_ss
    st_table eager ""
    [[ -n $ST_CHECKED ]] && echo "  (check: jit = eager to 1e-9: the parameters after the epoch, sum of squares $(lastkey p_ss "$(st_file eager)"))"
    st_first_line jit
    echo "  (floor: the same products on the same kernels, eagerly, nothing else; both modes run them,"
    echo "   so jit/eager cannot go below floor/eager without faster products)"
    unset -f st_cmd
    echo
    st_goal "staging: MLP epoch, jit(epoch) <= 0.7x eager" jit eager 0.7 "eager MLS"
}

# ---------------------------------------------------------------- (s3) ALS-CG

st_als() {
    section "(s3) staging: alsCG on a 2000 x 1000 matrix, 15% observed, rank 10, 10 iterations  (best of $ST_ROUNDS processes x $ST_REPS calls)"
    st_start als
    st_add eager "MLS eager, alsCG (stdlib/builtin/alsCG.mls)" "$ST_MLS_NOTE"
    st_add jit "MLS jit, staged blocks" "$ST_MLS_NOTE"
    st_cmd() { st_mls staging_als.mls "mode=$1" "reps=$ST_REPS"; }
    st_measure
    st_check jit eager err uv_ss
    st_table eager ""
    [[ -n $ST_CHECKED ]] && echo "  (check: jit = eager to 1e-9: relative error on the observed cells $(lastkey err "$(st_file eager)"), sum(U^2) + sum(V^2))"
    st_dynamic_line jit
    unset -f st_cmd
    echo
    st_goal "staging: alsCG, jit <= 0.6x eager" jit eager 0.6 "eager MLS"
}

# ---------------------------------------------------------------- (s4) lmCG

st_lmcg() {
    section "(s4) staging: lmCG on X 10^5 x 100, 30 CG iterations  (best of $ST_ROUNDS processes x $ST_REPS calls)"
    st_start lmcg
    st_add eager "MLS eager, lmCG (stdlib/builtin/lmCG.mls)" "$ST_MLS_NOTE"
    st_add jit "MLS jit, staged blocks" "$ST_MLS_NOTE"
    st_cmd() { st_mls staging_lmcg.mls "mode=$1" "reps=$ST_REPS"; }
    st_measure
    st_check jit eager b_ss
    st_table eager ""
    [[ -n $ST_CHECKED ]] && echo "  (check: jit = eager to 1e-9: sum(B^2) = $(lastkey b_ss "$(st_file eager)"))"
    st_dynamic_line jit
    unset -f st_cmd
    echo
    st_goal "staging: lmCG 1e5 x 100, jit <= 0.6x eager" jit eager 0.6 "eager MLS"
}

# ---------------------------------------------------------------- (s5) elementwise chains

st_chain_checks() {  # after st_measure of a chain: jit and NumPy against eager (else NumPy)
    local ref=eager ref_name="MLS eager"
    [[ -n ${ST_T[eager]:-} ]] || { ref=np; ref_name=NumPy; }
    local who=()
    st_check jit "$ref" result; [[ -n $ST_CHECKED ]] && who+=("MLS jit")
    if [[ $ref == eager ]]; then st_check np eager result; [[ -n $ST_CHECKED ]] && who+=("NumPy"); fi
    ST_CHAIN_NOTE=
    if (( ${#who[@]} )); then
        local joined=${who[0]}; (( ${#who[@]} > 1 )) && joined="$joined and ${who[1]}"
        ST_CHAIN_NOTE="  (check: s = $(lastkey result "$(st_file "$ref")"), $ref_name's; $joined: the same to 1e-9)"
    fi
}

st_chains() {
    section "(s5) staging: elementwise chains and a sum on 1e7 elements, eager vs jit vs NumPy  (best of $ST_ROUNDS processes x 5 calls)"
    echo "  s = sum((x - y)^2 * 0.5 + exp(-x))  (the programs of (e))"
    st_start ew6
    st_add eager "MLS eager (bench/ew_sum.mls)" "$ST_MLS_NOTE"
    st_add jit "MLS jit (bench/ew_sum_jit.mls), one fused pass" "$ST_MLS_NOTE"
    st_add np "NumPy (bench/ew_sum.py)" "$ST_NP_NOTE"
    st_cmd() {
        case $1 in
            eager) ST_CMD=("$MLS" "$HERE/ew_sum.mls") ;;
            jit)   ST_CMD=("$MLS" "$HERE/ew_sum_jit.mls") ;;
            np)    ST_CMD=("$PYTHON" "$HERE/ew_sum.py") ;;
        esac
    }
    st_measure
    st_chain_checks
    st_table eager np
    [[ -n $ST_CHAIN_NOTE ]] && echo "$ST_CHAIN_NOTE"
    st_first_line jit
    echo
    st_goal "staging: sum((x-y)^2*0.5+exp(-x)), jit <= 0.35x NumPy" jit np 0.35 NumPy

    echo
    echo "  s = sum(tanh(x * 1.5 - y) * 0.5 + (x + y)^2 * 0.25 - exp(-x) / (1 + y))  (13 ops)"
    st_start ew13
    st_add eager "MLS eager (bench/staging_chain13.mls)" "$ST_MLS_NOTE"
    st_add jit "MLS jit, one fused pass" "$ST_MLS_NOTE"
    st_add np "NumPy (bench/staging_chain13.py)" "$ST_NP_NOTE"
    st_cmd() {
        case $1 in
            eager|jit) st_mls staging_chain13.mls "mode=$1" reps=5 ;;
            np)        ST_CMD=("$PYTHON" "$HERE/staging_chain13.py" 5) ;;
        esac
    }
    st_measure
    st_chain_checks
    st_table eager np
    [[ -n $ST_CHAIN_NOTE ]] && echo "$ST_CHAIN_NOTE"
    st_first_line jit
    unset -f st_cmd
    echo
    st_goal "staging: 13-op chain with tanh, jit <= 0.5x NumPy" jit np 0.5 NumPy
}

# ---------------------------------------------------------------- (s6, s7) loops, compile time

# st_write_straight FILE: (s7)'s program, f's body 25000 copies of the loop body of
# bench/staging_loop.mls written out (10^5 ops of straight-line code)
st_write_straight() {
    {
        echo "# (s7) generated by bench/staging.sh: f's body is 25000 copies of"
        echo "# x = tanh(x %*% a + b); s = s + x (10^5 ops, straight-line code, no loop); the protocol"
        echo "# of bench/staging_loop.mls. Run: mls $1 [-nvargs mode=eager|jit reps=3]"
        echo 'mode = ifdef($mode, "eager")'
        echo 'reps = ifdef($reps, 3)'
        echo 'f = function(x, a, b) {'
        echo '  s = x * 0'
        awk 'BEGIN { for (i = 0; i < 25000; i++) print "  x = tanh(x %*% a + b)\n  s = s + x" }'
        echo '  s'
        echo '}'
        sed -n '/^if (mode == "jit")/,$p' "$HERE/staging_loop.mls"
    } >"$1"
}

st_loops() {
    section "(s6) staging: a loop of 10^5 iterations of 4x4 ops inside a function, x = tanh(x %*% a + b); s = s + x  (best of $ST_ROUNDS processes x 3 calls)"
    st_start loop
    st_add eager "MLS eager, the interpreter" "$ST_MLS_NOTE"
    st_add jit "MLS jit: one loop node, its body a graph of 4 ops" "$ST_MLS_NOTE"
    st_cmd() { st_mls staging_loop.mls "mode=$1" reps=3; }
    st_measure
    st_check jit eager result
    st_table eager ""
    [[ -n $ST_CHECKED ]] && echo "  (check: jit = eager to 1e-9: sum(s) = $(lastkey result "$(st_file eager)"))"
    st_first_line jit
    local loop_first=${ST_FIRST[jit]:-} loop_t=${ST_T[jit]:-} loop_eager=${ST_T[eager]:-}
    unset -f st_cmd
    echo
    st_goal "staging: 10^5-iteration 4x4 loop, jit <= 0.5x eager" jit eager 0.5 "eager MLS"

    section "(s7) staging: compile time of 10^5-op graphs (printed, no goal)  (best of $ST_ROUNDS processes)"
    local straight=$OUT/staging_straight.mls
    st_write_straight "$straight"
    st_start straight
    st_add eager "MLS eager, 25000 statements (10^5 ops)" "$ST_MLS_NOTE"
    st_add jit "MLS jit: a straight-line graph of 10^5 nodes" "$ST_MLS_NOTE"
    st_cmd() { ST_CMD=(env MLS_PATH="$MLS_STDLIB" "$MLS" "$straight" -nvargs "mode=$1" reps=3); }
    st_measure
    st_check jit eager result
    st_table eager ""
    [[ -n $ST_CHECKED ]] && echo "  (check: jit = eager to 1e-9: sum(s) = $(lastkey result "$(st_file eager)"))"
    unset -f st_cmd
    echo "  staging cost (the jit's first call - its steady call; the trace also runs f once):"
    if [[ -n ${ST_T[jit]:-} && -n ${ST_FIRST[jit]} ]]; then
        printf '    %-58s %11s  (first call %s, eager call %s)\n' "straight-line graph of 10^5 ops" \
            "$(fmt_ns "$(calc "${ST_FIRST[jit]} - ${ST_T[jit]}")")" "$(fmt_ns "${ST_FIRST[jit]}")" \
            "$(fmt_ns "${ST_T[eager]:-0}")"
    else
        printf '    %-58s %s\n' "straight-line graph of 10^5 ops" "no figure"
    fi
    if [[ -n $loop_t && -n $loop_first ]]; then
        printf '    %-58s %11s  (first call %s, eager call %s)\n' "10^5-iteration loop as one loop node, from (s6)" \
            "$(fmt_ns "$(calc "$loop_first - $loop_t")")" "$(fmt_ns "$loop_first")" "$(fmt_ns "${loop_eager:-0}")"
    else
        printf '    %-58s %s\n' "10^5-iteration loop as one loop node, from (s6)" "no figure"
    fi
}

st_loopgrad() {
    section "(s8) staging: the gradient of (s6)'s sum(s) in a, eager grad against jit(grad) (printed, no goal)  (best of $ST_ROUNDS processes x 3 calls)"
    st_start loopgrad
    st_add grad "MLS eager grad: a tape of every iteration's ops" "$ST_MLS_NOTE"
    st_add jitgrad "MLS jit(grad): a loop node and its reverse node" "$ST_MLS_NOTE"
    st_cmd() { st_mls staging_loop.mls "mode=$1" reps=3; }
    st_measure
    st_check jitgrad grad result
    st_table grad ""
    [[ -n $ST_CHECKED ]] && echo "  (check: jit(grad) = eager grad to 1e-9: the gradient's sum = $(lastkey result "$(st_file grad)"))"
    echo "  (the reverse node runs the loop twice more, keeping 2 sqrt(n) states: 9 MB resident here against 190 MB for eager grad's tape)"
    unset -f st_cmd
}

bench_staging() {
    st_skips
    st_logreg
    st_mlp
    st_als
    st_lmcg
    st_chains
    st_loops
    st_loopgrad
}
