#!/bin/sh
# run.sh — runs the DML scripts under tests/dml/ as a user would (mls script.dml -nvargs ...)
# on the fixtures in tests/fixtures/dml/ and compares what they write with R's results
# (tests/fixtures/dml/gen.R) to 1e-6; then the golden cases tests/dml/*.test (the builtins
# written in MLS: help, errors located in their files); then a few scripts again under --staged
# and --jit-all, and from an installed tree. Usage: [MLS_PATH=stdlib] tests/dml/run.sh [./mls]
set -u
mls=${1:-./mls}
case $mls in /*) ;; *) mls=$(pwd)/$mls ;; esac
F=tests/fixtures/dml
D=tests/dml
T=$(mktemp -d /tmp/mls-dml.XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
cmp() { "$D/compare.py" "$@"; }
# the standard library: $MLS_PATH (an ASan build in build/asan has none beside it), else stdlib/
# beside the binary
lib=${MLS_PATH:-$(cd "$(dirname "$mls")" && pwd)/stdlib}
export MLS_PATH="$lib"

# run NAME FLAGS SCRIPT NVARGS... -- COMPARISONS (each "got expected [options]", ';'-separated)
run() {
  name=$1 flags=$2 script=$3
  shift 3
  args=""
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do args="$args $1"; shift; done
  shift
  ok=1
  # shellcheck disable=SC2086
  if ! $mls $flags "$D/$script" -nvargs $args >"$T/out" 2>&1; then
    echo "FAIL $name: $script exited with status $? :"; sed 's/^/    /' "$T/out"; ok=0
  else
    echo "$*" | tr ';' '\n' | while read -r got exp opts; do
      [ -n "$got" ] || continue
      # shellcheck disable=SC2086
      cmp "$T/$got" "$F/$exp" $opts || echo x >>"$T/bad"
    done
    [ -f "$T/bad" ] && { echo "FAIL $name"; rm -f "$T/bad"; ok=0; }
  fi
  if [ $ok = 1 ]; then pass=$((pass + 1)); echo "ok   $name"; else fail=$((fail + 1)); fi
}

X="X=$F/lm_X.csv Y=$F/lm_y.csv B=$T/B.csv fmt=csv"
run "LinearRegDS icpt=0"        "" LinearRegDS.dml $X icpt=0 reg=0   -- B.csv lm_B_icpt0.csv
run "LinearRegDS icpt=1"        "" LinearRegDS.dml $X icpt=1 reg=0   -- B.csv lm_B_icpt1.csv
run "LinearRegDS icpt=2"        "" LinearRegDS.dml $X icpt=2 reg=0   -- B.csv lm_B_icpt1.csv
run "LinearRegDS icpt=0 reg"    "" LinearRegDS.dml $X icpt=0 reg=0.5 -- B.csv lm_B_icpt0_reg.csv
run "LinearRegDS icpt=1 reg"    "" LinearRegDS.dml $X icpt=1 reg=0.5 -- B.csv lm_B_icpt1_reg.csv
run "LinearRegDS icpt=2 reg"    "" LinearRegDS.dml $X icpt=2 reg=0.5 -- B.csv lm_B_icpt2_reg.csv
run "LinearRegCG icpt=0 reg"    "" LinearRegCG.dml $X icpt=0 reg=0.5 tol=1e-12 -- B.csv lm_B_icpt0_reg.csv
run "LinearRegCG icpt=1"        "" LinearRegCG.dml $X icpt=1 reg=0 tol=1e-12   -- B.csv lm_B_icpt1.csv
run "LinearRegCG icpt=2 reg"    "" LinearRegCG.dml $X icpt=2 reg=0.5 tol=1e-12 -- B.csv lm_B_icpt2_reg.csv
run "lm icpt=1"                 "" lm.dml $X icpt=1 reg=0 -- B.csv lm_B_icpt1.csv
S="X=$F/svm_X.csv Y=$F/svm_y.csv model=$T/w.csv fmt=csv tol=1e-14 maxiter=1000"
run "l2svm"                     "" l2svm.dml $S icpt=0 reg=1   -- w.csv svm_w.csv
run "l2svm icpt=1"              "" l2svm.dml $S icpt=1 reg=0.1 -- w.csv svm_w_icpt.csv
K="X=$F/km_X C=$T/C.csv Y=$T/Y.csv fmt=csv tol=1e-12"
run "kmeans fixed starts"       "" kmeans.dml $K Cinit=$F/km_C0 -- "C.csv km_C.csv; Y.csv km_Y.csv --tol 0"
run "kmeans k-means++ seed=5"   "" kmeans.dml $K k=3 runs=4 seed=5 -- C.csv km_C.csv --sorted-rows
M="X=$F/mlr_X.csv Y=$F/mlr_y.csv B=$T/B.csv fmt=csv tol=1e-12"
run "MultiLogReg icpt=0"        "" MultiLogReg.dml $M icpt=0 reg=0   -- B.csv mlr_B_icpt0.csv
run "MultiLogReg icpt=1 reg"    "" MultiLogReg.dml $M icpt=1 reg=0.5 -- B.csv mlr_B_icpt1.csv
run "MultiLogReg icpt=2 reg"    "" MultiLogReg.dml $M icpt=2 reg=0.5 -- B.csv mlr_B_icpt2.csv
N="X=$F/nb_D.csv Y=$F/nb_C.csv prior=$T/p.csv conditionals=$T/c.csv fmt=csv"
run "naive-bayes"               "" naive-bayes.dml $N laplace=1 -- "p.csv nb_prior.csv; c.csv nb_cond.csv"
G="X=$F/glm_X.csv B=$T/B.csv fmt=csv tol=1e-12"
run "GLM Poisson log"           "" GLM.dml $G Y=$F/glm_pois_y.csv dfam=1 vpow=1 icpt=1 -- B.csv glm_pois_B.csv
run "GLM Bernoulli logit icpt=2" "" GLM.dml $G Y=$F/glm_bern_y.csv dfam=2 icpt=2 -- B.csv glm_bern_B.csv
run "GLM Gamma log"             "" GLM.dml $G Y=$F/glm_gamma_y.csv dfam=1 vpow=2 link=1 lpow=0 icpt=1 -- B.csv glm_gamma_B.csv
run "GLM binomial cloglog"      "" GLM.dml $G Y=$F/glm_binom_y.csv dfam=2 link=4 icpt=1 -- B.csv glm_binom_B.csv
run "GLM Gaussian identity"     "" GLM.dml $G Y=$F/glm_gauss_y.csv -- B.csv glm_gauss_B.csv
L="X=$F/glml_X.csv B=$T/B.csv fmt=csv tol=1e-12"
run "GLM Bernoulli probit icpt=2" "" GLM.dml $L Y=$F/glml_probit_y.csv dfam=2 link=3 icpt=2 -- B.csv glml_probit_B.csv
run "GLM Bernoulli probit icpt=0" "" GLM.dml $L Y=$F/glml_probit_y.csv dfam=2 link=3 icpt=0 -- B.csv glml_probit_B0.csv
run "GLM binomial cauchit"      "" GLM.dml $L Y=$F/glml_cauchit_y.csv dfam=2 link=5 icpt=1 -- B.csv glml_cauchit_B.csv
run "GLM Bernoulli sqrt link"   "" GLM.dml $L Y=$F/glml_sqrt_y.csv dfam=2 link=1 lpow=0.5 icpt=1 tol=1e-15 -- B.csv glml_sqrt_B.csv
run "GLM Poisson sqrt"          "" GLM.dml $L Y=$F/glml_pois_sqrt_y.csv dfam=1 vpow=1 link=1 lpow=0.5 icpt=1 tol=1e-15 -- B.csv glml_pois_sqrt_B.csv
run "GLM Gamma inverse"         "" GLM.dml $L Y=$F/glml_gamma_inv_y.csv dfam=1 vpow=2 icpt=1 tol=1e-15 -- B.csv glml_gamma_inv_B.csv
run "GLM inverse Gaussian"      "" GLM.dml $L Y=$F/glml_invgauss_y.csv dfam=1 vpow=3 icpt=1 tol=1e-15 -- B.csv glml_invgauss_B.csv
run "GLM Gaussian log"          "" GLM.dml $L Y=$F/glml_gauss_log_y.csv dfam=1 link=1 lpow=0 icpt=1 tol=1e-15 -- B.csv glml_gauss_log_B.csv
run "m-svm icpt=1"              "" m-svm.dml X=$F/mlr_X.csv Y=$F/mlr_y.csv model=$T/W.csv fmt=csv icpt=1 reg=0.5 tol=1e-14 maxiter=1000 -- W.csv msvm_W.csv
W="X=$F/step_X.csv Y=$F/step_y.csv B=$T/B.csv S=$T/S.csv fmt=csv"
run "StepLinearRegDS icpt=1"    "" StepLinearRegDS.dml $W icpt=1 -- "B.csv step_B_icpt1.csv; S.csv step_S_icpt1.csv --tol 0"
run "StepLinearRegDS icpt=0"    "" StepLinearRegDS.dml $W icpt=0 -- "B.csv step_B_icpt0.csv; S.csv step_S_icpt0.csv --tol 0"
P="X=$F/pca_X.csv Xout=$T/Xo.csv M=$T/M.csv"
run "pca"                       "" pca.dml $P K=2 -- "Xo.csv pca_Xout.csv --sign-columns; M.csv pca_M.csv --sign-columns"

A="X=$F/als_X.csv U=$T/U.csv V=$T/V.csv fmt=csv"
A3="rank=3 Uinit=$F/als_U0_r3.csv Vinit=$F/als_V0_r3.csv"
run "ALS-CG L2 unchecked"       "" ALS-CG.dml $A $A3 reg=L2 lambda=0.01 maxi=8 check=FALSE -- "U.csv als_U_L2.csv; V.csv als_V_L2.csv"
run "ALS-CG wL2 converges"      "" ALS-CG.dml $A $A3 reg=wL2 lambda=0.05 maxi=50 thr=0.001 -- "U.csv als_U_wL2.csv; V.csv als_V_wL2.csv"
run "ALS-CG rank 2"             "" ALS-CG.dml $A rank=2 Uinit=$F/als_U0_r2.csv Vinit=$F/als_V0_r2.csv lambda=0.1 maxi=30 -- "U.csv als_U_r2.csv; V.csv als_V_r2.csv"

# the same scripts staged: every block traced (--staged), every function call jit (--jit-all)
for fl in --staged --jit-all; do
  run "LinearRegCG icpt=2 reg $fl" $fl LinearRegCG.dml $X icpt=2 reg=0.5 tol=1e-12 -- B.csv lm_B_icpt2_reg.csv
  run "lm icpt=1 $fl"              $fl lm.dml $X icpt=1 reg=0 -- B.csv lm_B_icpt1.csv
  run "l2svm icpt=1 $fl"           $fl l2svm.dml $S icpt=1 reg=0.1 -- w.csv svm_w_icpt.csv
  run "kmeans fixed starts $fl"    $fl kmeans.dml $K Cinit=$F/km_C0 -- "C.csv km_C.csv; Y.csv km_Y.csv --tol 0"
  run "pca $fl"                    $fl pca.dml $P K=2 -- M.csv pca_M.csv --sign-columns
  run "MultiLogReg icpt=2 reg $fl" $fl MultiLogReg.dml $M icpt=2 reg=0.5 -- B.csv mlr_B_icpt2.csv
  run "GLM Bernoulli logit icpt=2 $fl" $fl GLM.dml $G Y=$F/glm_bern_y.csv dfam=2 icpt=2 -- B.csv glm_bern_B.csv
  run "GLM Poisson log $fl"        $fl GLM.dml $G Y=$F/glm_pois_y.csv dfam=1 vpow=1 icpt=1 -- B.csv glm_pois_B.csv
  run "GLM binomial cauchit $fl"  $fl GLM.dml $L Y=$F/glml_cauchit_y.csv dfam=2 link=5 icpt=1 -- B.csv glml_cauchit_B.csv
  run "ALS-CG wL2 converges $fl"  $fl ALS-CG.dml $A $A3 reg=wL2 lambda=0.05 maxi=50 thr=0.001 -- "U.csv als_U_wL2.csv; V.csv als_V_wL2.csv"
  run "StepLinearRegDS icpt=1 $fl" $fl StepLinearRegDS.dml $W icpt=1 -- "B.csv step_B_icpt1.csv; S.csv step_S_icpt1.csv --tol 0"
done

# help() ends with the builtins written in MLS, from the files in stdlib/builtin
got=$($mls -e 'help()' 2>&1 | sed -n '/^Builtins written in MLS/,$p' | tail -n +2 | tr -s ' \n' ' ')
want=" $(cd "$lib/builtin" && ls -- *.mls | LC_ALL=C sort | sed 's/\.mls$//' | tr '\n' ' ')"
if [ "$got" = "$want" ]; then pass=$((pass + 1)); echo "ok   help() lists the builtins written in MLS"
else fail=$((fail + 1)); echo "FAIL help() lists the builtins written in MLS: got '$got', want '$want'"; fi

# a unary builtin on a variable that holds a box of an abandoned trace (a function whose
# condition depends on a staged value) must not overwrite it: log(mu) - mu was 0 under --staged
printf 'f = function(e) {\n  mu = exp(e)\n  if (sum(mu) > 0) sum(log(mu) - mu)\n}\nprint(f(matrix(0, rows = 80, cols = 1) + rand(rows = 80, cols = 1) * 0))\n' >"$T/box.mls"
for fl in "" --staged --jit-all; do
  # shellcheck disable=SC2086
  got=$($mls $fl "$T/box.mls" 2>&1)
  if [ "$got" = "-80" ]; then pass=$((pass + 1)); echo "ok   log(mu) - mu on a traced variable $fl"
  else fail=$((fail + 1)); echo "FAIL log(mu) - mu on a traced variable $fl: got $got, expected -80"; fi
done

# golden cases: help(), errors inside the builtins' files, calls from functions and namespaces
if $mls --run-tests $D/*.test >"$T/out" 2>&1; then
  pass=$((pass + 1)); echo "ok   $D/*.test: $(tail -1 "$T/out")"
else
  fail=$((fail + 1)); echo "FAIL $D/*.test:"; sed 's/^/    /' "$T/out"
fi

# $MLS_DML_BUILTINS as --dml-builtins (dml_builtins.test); the option overrides it; a
# --dml-builtins that is not a directory is a usage error (status 2)
mkdir -p "$T/db1" "$T/db2"
echo 'm_dbx = function(Double x) return (Double y) { y = x + 1 }' >"$T/db1/dbx.dml"
echo 'm_dbx = function(Double x) return (Double y) { y = x + 2 }' >"$T/db2/dbx.dml"
got=$(MLS_DML_BUILTINS=$T/db1 $mls -e 'print(dbx(1))' 2>&1; MLS_DML_BUILTINS=$T/db1 $mls --dml-builtins "$T/db2" -e 'print(dbx(1))' 2>&1)
if [ "$got" = "$(printf '2\n3')" ]; then pass=$((pass + 1)); echo "ok   MLS_DML_BUILTINS and --dml-builtins"
else fail=$((fail + 1)); echo "FAIL MLS_DML_BUILTINS and --dml-builtins: got $got"; fi
$mls --dml-builtins "$T/db1/dbx.dml" -e 'print(1)' >"$T/out" 2>&1
st=$?
if [ $st = 2 ] && head -1 "$T/out" | grep -q "^mls: --dml-builtins takes a readable directory, got $T/db1/dbx.dml\$"; then
  pass=$((pass + 1)); echo "ok   --dml-builtins FILE is a usage error"
else fail=$((fail + 1)); echo "FAIL --dml-builtins FILE: status $st, $(head -1 "$T/out")"; fi

# errors inside a builtin written in MLS are located in its file (the stdlib folder shown as
# STDLIB), with the calls that led there; compared: the error and "in f() at" lines
err_case() {
  MLS_PATH=$lib $mls -e "$2" 2>&1 | grep -E 'error:|^  in ' | sed "s|$lib|STDLIB|" >"$T/got"
  printf '%s\n' "$3" >"$T/want"
  if diff "$T/want" "$T/got" >"$T/diff"; then pass=$((pass + 1)); echo "ok   $1"
  else fail=$((fail + 1)); echo "FAIL $1:"; sed 's/^/    /' "$T/diff"; fi
}
err_case "error in lmDS called by lm" 'X = [1, 2; 3, 4]
B = lm(X, [1; 2; 3])' "STDLIB/builtin/lmDS.mls:16:5: error: lmDS: y must be a column with one row per row of X (X is 2x2, y is 3x1)
  in lmDS() at STDLIB/builtin/lm.mls:14:9
  in lm() at -e:2:5"
err_case "argument type checked at the call" 'B = lm([1, 2; 3, 4], "a")' \
  "-e:1:5: error: argument 'y' of lm() must be a matrix, got a string"
err_case "pca's K checked" 'f = function(X) pca(X, K = 5)
f([1, 2; 3, 4])' "STDLIB/builtin/pca.mls:18:5: error: pca: K must be between 1 and ncol(X) = 2, got 5
  in pca() at -e:1:17
  in f() at -e:2:1"
err_case "kmeans: starting centroids of the wrong width" 'kmeans([1, 2; 3, 4], centroids = [1, 2, 3])' \
  "STDLIB/builtin/kmeans.mls:23:7: error: kmeans: centroids has 3 columns, X has 2
  in kmeans() at -e:1:1"
err_case "l2svm: one row is too few" 'w = l2svm([1, 2], [1])' \
  "STDLIB/builtin/l2svm.mls:16:5: error: L2SVM: Stopping due to invalid inputs: Not possible to learn a binary class classifier without at least 2 rows
  in l2svm() at -e:1:5"

err_case "glm: an unsupported link" 'B = glm([1; 2], [0; 1], dfam = 1, link = 3)' \
  "STDLIB/builtin/glm.mls:68:5: error: glm: distribution family 1 (vpow 0) with link 3 (lpow 1) and a 1-column Y is not supported
  in glm() at -e:1:5"
err_case "lstm: a bias of the wrong width (nn-load)" 'o = lstm(matrix(1, rows=2, cols=6), matrix(0, rows=5, cols=12), matrix(0, rows=1, cols=11), matrix(0, rows=2, cols=3), matrix(0, rows=2, cols=3), TRUE)' \
  "STDLIB/builtin/lstm.mls:23:5: error: lstm: b must be 1 x 12, got 1x11
  in lstm() at -e:1:5"

err_case "alsCG: an unknown regularization" '[U, V] = alsCG([1, 2; 3, 4], rank = 2, reg = "L1")' \
  "STDLIB/builtin/alsCG.mls:56:5: error: alsCG: wrong regularization! L1 (\"L2\" or \"wL2\")
  in alsCG() at -e:1:10"
err_case "alsCG: a start of the wrong shape" '[U, V] = alsCG([1, 2; 3, 4], rank = 2, Uinit = [1, 2])' \
  "STDLIB/builtin/alsCG.mls:32:5: error: alsCG: Uinit must be 2x2 (nrow(X) x rank), got 1x2
  in alsCG() at -e:1:10"

# the builtins of tests/dml/stdlib2.test: their arguments checked where SystemDS's are, or more
err_case "split: f outside (0, 1)" 'S = split([1; 2], [1; 2], f = 1)' \
  "STDLIB/builtin/split.mls:15:5: error: Invalid train/test split configuration: f=1
  in split() at -e:1:5"
err_case "confusionMatrix: P and Y of different lengths" 'S = confusionMatrix([1; 2], [1; 2; 3])' \
  "STDLIB/builtin/confusionMatrix.mls:16:5: error: confusionMatrix: The number of rows have to be equal in both P [2] and Y [3]
  in confusionMatrix() at -e:1:5"
err_case "imputeByMedian: a mask of the wrong width" 'Y = imputeByMedian([1, 2], [0])' \
  "STDLIB/builtin/imputeByMedian.mls:15:5: error: imputeByMedian: mask must be 1 x ncol(X) = 1x2, got 1x1
  in imputeByMedian() at -e:1:5"
err_case "outlierBySd: k below 1" 'Y = outlierBySd([1; 2], k = 0.5, max_iterations = 0)' \
  "STDLIB/builtin/outlierBySd.mls:19:5: error: outlierBySd: invalid argument - k should be in range 1-10 found 0.5
  in outlierBySd() at -e:1:5"
err_case "outlierBySd: max_iterations has no default" 'Y = outlierBySd([1; 2])' \
  "-e:1:5: error: argument 'max_iterations' is missing in call to outlierBySd(), with no default"
err_case "cvlm: one fold" 'P = cvlm([1; 2; 3], [1; 2; 3], 1)' \
  "STDLIB/builtin/cvlm.mls:16:5: error: cvlm: k must be between 2 and nrow(X) = 3, got 1
  in cvlm() at -e:1:5"
err_case "knn: a START_SELECTED of the wrong width" 'N = knn([1; 2], [1], [1; 2], select_feature = 1, k_value = 1, START_SELECTED = [1, 1])' \
  "STDLIB/builtin/knn.mls:84:7: error: knn: START_SELECTED must be 1x1 of 0 and 1, got 1x2
  in knn() at -e:1:5"
err_case "knn: k selection with k_min >= k_max" 'N = knn([1; 2; 3; 4], [1], [1; 2; 1; 2], select_k = 1, k_min = 3, k_max = 3)' \
  "STDLIB/builtin/knn.mls:66:7: error: k_min >= k_max
  in knn() at -e:1:5"
err_case "lasso: y of the wrong length" 'w = lasso([1; 2], [1])' \
  "STDLIB/builtin/lasso.mls:20:5: error: lasso: y must be a column with one row per row of X (X is 2x1, y is 1x1)
  in lasso() at -e:1:5"
err_case "gnmf: a start of the wrong shape" '[W, H] = gnmf([1, 2; 3, 4], 1, Winit = [1, 2])' \
  "STDLIB/builtin/gnmf.mls:22:5: error: gnmf: Winit must be 2x1 (nrow(X) x rnk), got 1x2
  in gnmf() at -e:1:10"
err_case "als: a start of the wrong shape" '[U, V] = als([1, 2; 3, 4], rank = 2, Vinit = [1, 2])' \
  "STDLIB/builtin/als.mls:50:5: error: als: Vinit must be 2x2 (rank x ncol(X)), got 1x2
  in als_direct() at STDLIB/builtin/als.mls:28:14
  in als() at -e:1:10"

err_case "dbscan: no core point" 'c = dbscan([0; 5; 10], eps = 1, minPts = 2)' \
  "STDLIB/builtin/dbscan.mls:27:5: error: Invalid DBScan there was no neighbors within epsilon
  in dbscan() at -e:1:5"

# from an installed tree, run from elsewhere with no MLS_PATH: the builtins come from
# PREFIX/share/mls/stdlib/builtin
if make -s install PREFIX="$T/p" >/dev/null 2>&1 &&
   (cd / && env -u MLS_PATH "$T/p/bin/mls" "$OLDPWD/$D/lm.dml" -nvargs X="$OLDPWD/$F/lm_X.csv" \
      Y="$OLDPWD/$F/lm_y.csv" B="$T/B.csv" icpt=1 reg=0) >"$T/out" 2>&1 &&
   cmp "$T/B.csv" "$F/lm_B_icpt1.csv"; then
  pass=$((pass + 1)); echo "ok   lm.dml from an installed tree"
else
  fail=$((fail + 1)); echo "FAIL lm.dml from an installed tree:"; sed 's/^/    /' "$T/out"
fi

echo "dml: $pass passed, $fail failed"
[ $fail = 0 ]
