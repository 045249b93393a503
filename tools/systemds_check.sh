#!/bin/sh
# systemds_check.sh — measures issue 29's goals on a SystemDS checkout, unchanged:
#   1. builtins: each scripts/builtin/NAME.dml loads (`source(".../NAME.dml") as B`, with
#      --dml-builtins pointing at that directory);
#   2. algorithms: each classic algorithm script (scripts/algorithms/*.dml, and algorithms_old/
#      *.dml, where the scripts a newer SystemDS removed from scripts/algorithms are kept) runs
#      to its end on small inputs generated here (the table at the end of this script: its
#      -nvargs), one line per script;
#   3. nn components: each src/test/scripts/applications/nn/component/*.dml runs with no
#      "ERROR" line (a test that needs values or files from SystemDS's Java test harness is
#      counted apart as "needs harness");
#   4. gradients: src/test/scripts/applications/nn/run_tests_gradients.dml runs to its end with
#      no "ERROR" line (its WARNING lines are counted).
#   5. DML/R pairs: each src/test/scripts/functions/**/X.dml with an X.R beside it whose scripts
#      take only inputs and outputs is run by MLS and by Rscript on the same generated inputs,
#      and the outputs must agree (tools/systemds_pairs.py, which says how; skipped with a
#      note when Rscript is not installed, or when SDS_CHECK_PAIRS=0).
# Then it prints the counts.
#   tools/systemds_check.sh DIR [MLS]
# DIR is SystemDS's root (the directory that holds scripts/ and src/); MLS defaults to ./mls.
# The files are not part of this repository (docs/dml.md, "SystemDS's own builtin files").
# Every run happens in a scratch directory that links scripts -> DIR/scripts, nn ->
# DIR/scripts/nn and src -> DIR/src, as SystemDS's scripts source "scripts/...", "nn/..." and
# "src/test/...". A table row "#EXPECT-FAIL reason" marks a script that SystemDS cannot run
# either (it must fail with a located error, and is counted apart); a script with no row is
# "no driver" (a failure).
# Each run may take SDS_CHECK_TIMEOUT seconds (default 120).
# Exit status: 0 when nothing failed, else 1 (2: bad arguments).
set -u
[ $# -ge 1 ] || { echo "usage: $0 DIR [MLS]" >&2; exit 2; }
[ -d "$1/scripts/builtin" ] || { echo "$0: no scripts/builtin under $1" >&2; exit 2; }
dir=$(cd "$1" && pwd)
mls=${2:-./mls}
case $mls in /*) ;; *) mls=$(pwd)/$mls ;; esac
[ -x "$mls" ] || { echo "$0: cannot run $mls" >&2; exit 2; }
tmo=${SDS_CHECK_TIMEOUT:-120}
T=$(mktemp -d /tmp/mls-sdscheck.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir "$T/run" "$T/data" "$T/out"
ln -s "$dir/scripts" "$T/run/scripts"
ln -s "$dir/scripts/nn" "$T/run/nn"
[ -d "$dir/src" ] && ln -s "$dir/src" "$T/run/src"
self=$0
B="$dir/scripts/builtin"
fails=0

# run FILE ARGS...: mls on FILE from the scratch directory; output in $T/o, status in $rc
run() {
  (cd "$T/run" && timeout "$tmo" "$mls" --dml-builtins "$B" "$@") >"$T/o" 2>&1
  rc=$?
}
# the first error line of the last run (or its last line), shortened, paths from DIR
why() { { grep -m1 'error' "$T/o" || tail -n 1 "$T/o"; } | sed "s|$dir/||g; s|$T/||g" | cut -c1-200; }

# ---- 1. builtins ----
echo "== builtins: $B/*.dml, each sourced as a namespace"
bp=0 bf=0
for f in "$B"/*.dml; do
  [ -f "$f" ] || continue
  printf 'source("%s") as B\nprint("OK")\n' "$f" >"$T/run/load.dml"
  run load.dml
  if [ $rc -eq 0 ] && tail -n 1 "$T/o" | grep -qx OK; then bp=$((bp + 1))
  else bf=$((bf + 1)); printf '  FAIL %-34s %s\n' "$(basename "$f")" "$(why)"; fi
done
echo "builtins: $bp of $((bp + bf)) load"

# ---- 2. algorithm scripts ----
AD=""
for a in "$dir/scripts/algorithms" "$dir/algorithms_old"; do
  ls "$a"/*.dml >/dev/null 2>&1 && AD="$AD $a"
done
echo "== algorithms:$(for a in $AD; do printf ' %s/*.dml' "${a#"$dir"/}"; done) on generated inputs"
ap=0 af=0 ax=0
if [ -z "$AD" ]; then
  echo "  (no algorithm scripts found)"
else
  sed -n '/^#GEN-BEGIN$/,/^#GEN-END$/p' "$self" | sed '1d;$d' >"$T/gen.dml"
  run "$T/gen.dml" -nvargs D="$T/data"
  printf '1,2\n3,4\n' >"$T/data/raw.csv"                  # (transform.dml: no .mtd)
  printf '{"ids": true, "recode": [1]}\n' >"$T/data/spec.json"
  [ $rc -eq 0 ] || { echo "  the input generator failed: $(why)"; af=1; }
  rows=$(sed -n '/^#TABLE-BEGIN$/,/^#TABLE-END$/p' "$self" | grep '^@@ ' | cut -c4-)
  for s in $rows; do
    block=$(awk -v want="@@ $s" '$0 == want { on = 1; next } /^@@ |^#TABLE-END/ { on = 0 } on' "$self")
    expect=$(printf '%s\n' "$block" | sed -n 's/^#EXPECT-FAIL //p')
    args=$(printf '%s\n' "$block" | grep -v '^#' | sed "s|@D|$T/data|g; s|@O|$T/out|g" | tr '\n' ' ')
    for a in $AD; do
      [ -f "$a/$s" ] || continue
      name=${a#"$dir"/}/$s
      # shellcheck disable=SC2086
      run "$a/$s" -nvargs $args
      if [ -n "$expect" ]; then
        if [ $rc -ne 0 ] && grep -q ':[0-9]*:[0-9]*: error:' "$T/o"; then
          ax=$((ax + 1)); printf '  %-40s %s\n' "$name" "not runnable in SystemDS either ($expect): $(why)"
        else
          af=$((af + 1)); printf '  %-40s %s\n' "$name" "FAIL  (expected a located error: $expect)"
        fi
      elif [ $rc -eq 0 ]; then ap=$((ap + 1)); printf '  %-40s %s\n' "$name" pass
      else af=$((af + 1)); printf '  %-40s %s\n' "$name" "FAIL  $(why)"; fi
    done
  done
  for a in $AD; do                         # scripts the table does not know
    for f in "$a"/*.dml; do
      s=$(basename "$f")
      printf '%s\n' "$rows" | grep -qx "$s" && continue
      af=$((af + 1)); printf '  %-40s %s\n' "${a#"$dir"/}/$s" "FAIL  no driver"
    done
  done
fi
echo "algorithms: $ap of $((ap + af)) run; $ax not runnable in SystemDS either"

# ---- 3. nn component tests ----
C="$dir/src/test/scripts/applications/nn/component"
echo "== nn components: $C/*.dml"
cp=0 cf=0 cs=0
for f in "$C"/*.dml; do
  [ -f "$f" ] || continue
  run "src/test/scripts/applications/nn/component/$(basename "$f")"
  n=$(grep -c '^ERROR' "$T/o")
  if [ $rc -eq 0 ] && [ "$n" -eq 0 ]; then cp=$((cp + 1))
  elif [ $rc -ne 0 ] && grep -Eq 'command-line value .\$[0-9A-Za-z_]+. was not given|read: cannot open .src/test/resources/' "$T/o"; then
    cs=$((cs + 1)); printf '  skip %-34s needs harness: %s\n' "$(basename "$f")" "$(why)"
  else
    cf=$((cf + 1))
    if [ $rc -eq 0 ]; then printf '  FAIL %-34s %s ERROR lines, the first: %s\n' "$(basename "$f")" "$n" "$(grep -m1 '^ERROR' "$T/o" | cut -c1-150)"
    else printf '  FAIL %-34s %s\n' "$(basename "$f")" "$(why)"; fi
  fi
done
echo "nn components: $cp of $((cp + cf)) pass; $cs need inputs from SystemDS's Java test harness"

# ---- 4. run_tests_gradients.dml ----
G=src/test/scripts/applications/nn/run_tests_gradients.dml
echo "== gradients: $G"
if [ -f "$dir/$G" ]; then
  run "$G"
  ne=$(grep -c '^ERROR' "$T/o")
  nw=$(grep -c '^WARNING' "$T/o")
  nc=$(grep -c '^Grad checking' "$T/o")
  if [ $rc -eq 0 ] && [ "$ne" -eq 0 ]; then g=runs
  else g="FAILS (exit status $rc, $ne ERROR lines): $(if [ $rc -ne 0 ]; then why; else grep -m1 '^ERROR' "$T/o" | cut -c1-150; fi)"; fi
  echo "run_tests_gradients.dml: $g; $nc layers checked, $ne ERROR and $nw WARNING lines"
  [ "$g" = runs ] || fails=1
else
  echo "run_tests_gradients.dml: not in this checkout"
fi

# ---- 5. DML/R test pairs ----
echo "== DML/R pairs: src/test/scripts/functions/**/X.dml beside X.R"
pr="not measured"
if [ "${SDS_CHECK_PAIRS:-1}" = 0 ]; then echo "pairs: not measured (SDS_CHECK_PAIRS=0)"
elif ! command -v Rscript >/dev/null 2>&1; then echo "pairs: not measured (no Rscript: apt-get install r-base-core r-cran-matrix)"
elif [ ! -d "$dir/src/test/scripts/functions" ]; then echo "pairs: not in this checkout"
else
  python3 "$(dirname "$self")/systemds_pairs.py" "$dir" "$mls" >"$T/pairs" 2>&1
  prc=$?
  grep -v '^  pass ' "$T/pairs"
  pr=$(sed -n 's/^pairs: \([0-9]* of [0-9]*\) agree.*/\1 agree/p' "$T/pairs")
  [ $prc -eq 0 ] || fails=1
fi

echo "summary: builtins $bp/$((bp + bf)) load; algorithms $ap/$((ap + af)) run ($ax not runnable in SystemDS either); nn components $cp/$((cp + cf)) pass ($cs need the harness); run_tests_gradients.dml ${g:-absent}; DML/R pairs ${pr:-not measured}"
[ $bf -eq 0 ] && [ $af -eq 0 ] && [ $cf -eq 0 ] && [ $fails -eq 0 ]
exit $?

# (data for the code above, read by sed; a here-document so that the shell never parses it)
# shellcheck disable=SC2317
: <<'END_OF_DATA'

# The inputs (a DML script run with D=the data directory): csv files with .mtd sidecars.
#GEN-BEGIN
D = $D
N = 60
X = rand(rows=N, cols=4, min=-1, max=1, seed=1)
w = matrix("1.5 -2 0.5 3", rows=4, cols=1)
y = X %*% w + 0.1 * rand(rows=N, cols=1, pdf="normal", seed=2)
write(X, D + "/X", format="csv")
write(y, D + "/y", format="csv")
write(2 * (y > median(y)) - 1, D + "/yb", format="csv")          # labels -1 / +1
y3 = 1 + (y > quantile(y, 0.33)) + (y > quantile(y, 0.67))      # labels 1, 2, 3
write(y3, D + "/y3", format="csv")
write(table(seq(1, N), y3), D + "/y3hot", format="csv")          # the same, dummy coded
write(round(exp(X %*% (w / 3))), D + "/ycnt", format="csv")      # counts (Poisson GLM)
write(round(5 * rand(rows=N, cols=4, seed=3)), D + "/Xc", format="csv")   # counts (naive Bayes)
xk = matrix(seq(1, 10), rows=10, cols=1) / 2                     # spline knots, increasing
write(xk, D + "/xk", format="csv")
write(sin(xk), D + "/yk", format="csv")
V = round(4 * rand(rows=20, cols=12, seed=4)) + 1                # ratings: 20 users, 12 items
write(V * (rand(rows=20, cols=12, seed=5) < 0.4), D + "/V", format="csv")
write(matrix("1 2 2 3 3 4 4 5 5 6", rows=5, cols=2), D + "/pairs", format="csv")
write(matrix("1 2 3", rows=3, cols=1), D + "/users", format="csv")
time = round(10 * rand(rows=N, cols=1, seed=6)) + 1             # survival data: time, event,
event = rand(rows=N, cols=1, seed=7) < 0.7                       # a group, a stratum, features
grp = 1 + (rand(rows=N, cols=1, seed=8) < 0.5)
strat = 1 + (rand(rows=N, cols=1, seed=9) < 0.5)
write(cbind(time, event, grp, strat, X[, 1:2]), D + "/surv", format="csv")
write(matrix("1 2", rows=2, cols=1), D + "/TE", format="csv")
write(matrix(3, rows=1, cols=1), D + "/GI", format="csv")
write(matrix(4, rows=1, cols=1), D + "/SI", format="csv")
write(matrix("5 6", rows=2, cols=1), D + "/F", format="csv")
ord = 1 + round(3 * rand(rows=N, cols=1, seed=10))               # 2 scale, a nominal, an ordinal
write(cbind(X[, 1:2], y3, ord), D + "/M", format="csv")
write(matrix("1 1 2 3", rows=1, cols=4), D + "/types", format="csv")
write(matrix("1 2", rows=1, cols=2), D + "/idx1", format="csv")
write(matrix("3 4", rows=1, cols=2), D + "/idx2", format="csv")
write(matrix("1 1", rows=1, cols=2), D + "/types1", format="csv")
write(matrix("2 3", rows=1, cols=2), D + "/types2", format="csv")
write(cbind(X, y3), D + "/XS", format="csv")                    # stratstats: stratum column 5
# a decision tree by hand (decision-tree.dml cannot run): the root splits scale feature 1 at 0
write(matrix("1 2 3  1 0 0  1 0 0  1 1 2  1 0 0  0 0 0", rows=6, cols=3), D + "/tree", format="csv")
# a forest of two such trees (random-forest-predict.dml's layout: row 2 is the tree id)
write(matrix("1 2 3 1 2 3  1 1 1 2 2 2  1 0 0 1 0 0  1 0 0 2 0 0  1 1 3 1 2 3  1 0 0 1 0 0  0 0 0 0.2 0 0",
             rows=7, cols=6), D + "/forest", format="csv")
#GEN-END

# The table: "@@ SCRIPT", then its -nvargs (@D: the inputs, @O: a directory for the outputs),
# in an order where a predict script follows the script that makes its model.
#TABLE-BEGIN
@@ LinearRegDS.dml
X=@D/X Y=@D/y B=@O/B_ds O=@O/stats_ds fmt=csv icpt=2 reg=0.001
@@ LinearRegCG.dml
X=@D/X Y=@D/y B=@O/B_cg O=@O/stats_cg Log=@O/log_cg fmt=csv icpt=1 reg=0.001 tol=1e-9 maxi=20
@@ StepLinearRegDS.dml
X=@D/X Y=@D/y B=@O/B_step S=@O/S_step O=@O/stats_step fmt=csv icpt=1 thr=0.01 write_beta=TRUE
@@ GLM.dml
X=@D/X Y=@D/ycnt B=@O/B_glm O=@O/stats_glm Log=@O/log_glm fmt=csv dfam=1 vpow=1 link=1 lpow=0 icpt=1
@@ GLM-predict.dml
X=@D/X B=@O/B_glm Y=@D/ycnt M=@O/M_glm O=@O/stats_glmp dfam=1 vpow=1 link=1 lpow=0 fmt=csv
@@ StepGLM.dml
X=@D/X Y=@D/yb B=@O/B_sglm S=@O/S_sglm O=@O/stats_sglm dfam=2 link=2 yneg=-1 icpt=1 thr=0.01 fmt=csv
@@ MultiLogReg.dml
X=@D/X Y=@D/y3 B=@O/B_mlr Log=@O/log_mlr fmt=csv icpt=2 reg=1 moi=20 mii=5
@@ l2-svm.dml
X=@D/X Y=@D/yb model=@O/w_l2 fmt=csv icpt=1 reg=1 tol=0.001 maxiter=50
@@ l2-svm-predict.dml
X=@D/X Y=@D/yb model=@O/w_l2 scores=@O/sc_l2 accuracy=@O/acc_l2 confusion=@O/cm_l2 fmt=csv
@@ m-svm.dml
X=@D/X Y=@D/y3 model=@O/w_m Log=@O/log_m fmt=csv icpt=1 reg=1 tol=0.001 maxiter=50
@@ m-svm-predict.dml
X=@D/X Y=@D/y3 model=@O/w_m scores=@O/sc_m accuracy=@O/acc_m confusion=@O/cm_m fmt=csv
@@ naive-bayes.dml
X=@D/Xc Y=@D/y3 prior=@O/prior conditionals=@O/cond accuracy=@O/acc_nb fmt=csv laplace=1
@@ naive-bayes-predict.dml
X=@D/Xc Y=@D/y3 prior=@O/prior conditionals=@O/cond probabilities=@O/prob accuracy=@O/acc_nbp confusion=@O/cm_nb fmt=csv
@@ Kmeans.dml
X=@D/X k=3 runs=2 maxi=50 C=@O/C_km isY=TRUE Y=@O/Y_km fmt=csv
@@ Kmeans-predict.dml
X=@D/X C=@O/C_km spY=@D/y3 prY=@O/prY_km O=@O/stats_kmp
@@ PCA.dml
INPUT=@D/X K=2 CENTER=1 SCALE=1 PROJDATA=1 OFMT=csv OUTPUT=@O/pca
@@ ALS-CG.dml
X=@D/V U=@O/U V=@O/Vf rank=3 reg=L2 lambda=0.001 maxi=5 check=TRUE fmt=csv
@@ ALS-DS.dml
V=@D/V L=@O/L R=@O/R rank=3 reg=L2 lambda=0.001 maxi=5 check=TRUE fmt=csv
@@ ALS_predict.dml
X=@D/pairs L=@O/L R=@O/R Y=@O/Y_als Vrows=20 Vcols=12 fmt=csv
@@ ALS_topk_predict.dml
X=@D/users L=@O/L R=@O/R V=@D/V Y=@O/Y_topk K=2 fmt=csv
@@ CsplineDS.dml
X=@D/xk Y=@D/yk K=@O/K_cs O=@O/pred_cs inp_x=2.3 fmt=csv
@@ CsplineCG.dml
X=@D/xk Y=@D/yk K=@O/K_cg O=@O/pred_cg Log=@O/log_cs inp_x=2.3 fmt=csv tol=1e-9 maxi=50
@@ KM.dml
X=@D/surv TE=@D/TE GI=@D/GI SI=@D/SI O=@O/KM M=@O/KM_M T=@O/KM_T alpha=0.05 etype=greenwood ctype=log ttype=log-rank fmt=csv
@@ Cox.dml
X=@D/surv TE=@D/TE F=@D/F M=@O/cox_M S=@O/cox_S T=@O/cox_T COV=@O/cox_COV RT=@O/cox_RT XO=@O/cox_XO MF=@O/cox_MF alpha=0.05 tol=1e-6 moi=20 mii=5 fmt=csv
@@ Cox-predict.dml
X=@O/cox_XO RT=@O/cox_RT M=@O/cox_M Y=@O/cox_XO COV=@O/cox_COV MF=@O/cox_MF P=@O/cox_P fmt=csv
@@ Univar-Stats.dml
X=@D/M TYPES=@D/types STATS=@O/univar CONSOLE_OUTPUT=FALSE
@@ bivar-stats.dml
X=@D/M index1=@D/idx1 index2=@D/idx2 types1=@D/types1 types2=@D/types2 OUTDIR=@O/bivar
@@ stratstats.dml
X=@D/XS Xcid=@D/idx1 Y=@D/XS Ycid=@D/idx1 S=@D/XS Scid=5 O=@O/strat fmt=csv
@@ decision-tree.dml
#EXPECT-FAIL it declares an externalFunction (a SystemML Java UDF), which SystemDS removed
X=@D/X Y=@D/y3hot M=@O/dt_M bins=5 depth=4 num_leaf=5 num_samples=30 impurity=Gini fmt=csv
@@ decision-tree-predict.dml
X=@D/X Y=@D/y3hot M=@D/tree P=@O/dt_P A=@O/dt_A CM=@O/dt_CM fmt=csv
@@ random-forest.dml
#EXPECT-FAIL it declares an externalFunction (a SystemML Java UDF), which SystemDS removed
X=@D/X Y=@D/y3hot M=@O/rf_M bins=5 depth=4 num_leaf=5 num_samples=30 num_trees=3 impurity=Gini fmt=csv
@@ random-forest-predict.dml
X=@D/X Y=@D/y3hot M=@D/forest P=@O/rf_P A=@O/rf_A CM=@O/rf_CM fmt=csv
@@ transform.dml
#EXPECT-FAIL transform(target=, transformPath=, spec=) and read(data_type="scalar"), SystemML's API that SystemDS replaced by transformencode
DATA_PATH=@D/raw.csv TRANSFORM_SPEC_PATH=@D/spec.json TRANSFORM_PATH=@O/tf OUTPUT_NAMES=@O/names OUTPUT_DATA_PATH=@O/tfout
@@ apply-transform.dml
#EXPECT-FAIL transform(target=, transformPath=, applyTransformPath=), SystemML's API that SystemDS replaced by transformapply
DATA_PATH=@D/raw.csv TRANSFORM_PATH=@O/tf APPLY_TRANSFORM_PATH=@O/atf OUTPUT_DATA_PATH=@O/atfout
#TABLE-END
END_OF_DATA
