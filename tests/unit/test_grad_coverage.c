/*
** test_grad_coverage.c — walks THE builtin table: every entry marked differentiable (BI_DIFF)
** must have a recipe below, and each recipe is checked against central finite differences
** (gradcheck) at random points over several shapes, broadcasting and 1x1 included. Every
** operator is checked too. A differentiable builtin added without a rule or a recipe fails.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builtins.h"
#include "interp/interp.h"

/* X and Y are the points; the check differentiates sum(EXPR^2) with respect to each of them
** that the recipe names in `wrt`. Shapes: "RxC" or "n" (a number); a list of pairs. */
typedef struct Recipe {
  const char *name;      /* builtin or operator */
  const char *expr;      /* in X (and Y) */
  const char *shapes;    /* "3x4,3x4;3x4,1x4;..." pairs X,Y (Y may be "-") */
  const char *wrt;       /* "X", "XY" */
  double lo, hi;         /* the range of random points */
} Recipe;

static const char *const EW = "3x4,-;1x1,-;n,-;1x5,-;4x1,-";
static const char *const BIN = "3x4,3x4;3x4,1x4;3x4,3x1;3x4,1x1;1x4,3x4;3x1,3x4;n,3x4;3x4,n;n,n";
static const char *const MAT = "3x4,-;1x1,-;4x1,-;1x5,-";

static const Recipe recipes[] = {
  /* operators */
  { "+", "X + Y", NULL, "XY", -1, 1 }, { "-", "X - Y", NULL, "XY", -1, 1 },
  { "*", "X * Y", NULL, "XY", -1, 1 }, { "/", "X / Y", NULL, "XY", 0.5, 2 },
  { "^", "X ^ Y", NULL, "XY", 0.5, 2 }, { "%%", "X %% 0.7 + (X + 1.3) %% Y", NULL, "XY", 0.3, 0.45 },
  { "unary -", "-X", "3x4,-;n,-", "X", -1, 1 },
  { "%*%", "X %*% Y", "3x4,4x2;1x3,3x1;3x1,1x3;n,n;2x2,2x2", "XY", -1, 1 },
  { "[]", "X[2, ] * 3 + X[1, 4] + sum(X[[1; 1; 3], 2]) + t(X[, 3]) %*% X", "3x4,-", "X", -1, 1 },
  { "[]<-", "Z = X; Z[2, 2:3] = Y; Z * X", "3x4,1x2;3x4,n", "XY", -1, 1 },
  { "literal", "[X, Y; Y, X]", "2x2,2x2;n,n", "XY", -1, 1 },
  /* builtins marked differentiable */
  { "abs", "abs(X)", NULL, "X", -1, 1 }, { "ceil", "ceil(X) + X", NULL, "X", 0.1, 0.4 },
  { "floor", "floor(X) + X", NULL, "X", 0.1, 0.4 }, { "round", "round(X) + X", NULL, "X", 0.1, 0.4 },
  { "sign", "sign(X) + X", NULL, "X", 0.1, 0.9 },
  { "cos", "cos(X)", NULL, "X", -2, 2 }, { "sin", "sin(X)", NULL, "X", -2, 2 },
  { "tan", "tan(X)", NULL, "X", -1, 1 }, { "tanh", "tanh(X)", NULL, "X", -2, 2 },
  { "exp", "exp(X)", NULL, "X", -1, 1 }, { "log", "log(X) + log(X, 3)", NULL, "X", 0.5, 2 },
  { "sqrt", "sqrt(X)", NULL, "X", 0.5, 2 }, { "sigmoid", "sigmoid(X)", NULL, "X", -3, 3 },
  { "softplus", "softplus(X)", NULL, "X", -3, 3 },
  { "sum", "sum(X)", "3x4,-;1x1,-;n,-", "X", -1, 1 }, { "mean", "mean(X)", "3x4,-;1x1,-;n,-", "X", -1, 1 },
  { "prod", "prod(X)", "3x4,-;1x1,-", "X", 0.5, 1.5 },
  { "var", "var(X)", "3x4,-;1x5,-", "X", -1, 1 }, { "sd", "sd(X)", "3x4,-;4x1,-", "X", -1, 1 },
  { "rowSums", "rowSums(X)", NULL, "X", -1, 1 }, { "colSums", "colSums(X)", NULL, "X", -1, 1 },
  { "rowMeans", "rowMeans(X)", NULL, "X", -1, 1 }, { "colMeans", "colMeans(X)", NULL, "X", -1, 1 },
  { "rowMaxs", "rowMaxs(X)", NULL, "X", -1, 1 }, { "rowMins", "rowMins(X)", NULL, "X", -1, 1 },
  { "colMaxs", "colMaxs(X)", NULL, "X", -1, 1 }, { "colMins", "colMins(X)", NULL, "X", -1, 1 },
  { "max", "max(X) + max(X, Y)", NULL, "XY", -1, 1 }, { "min", "min(X) + min(X, Y)", NULL, "XY", -1, 1 },
  { "cumsum", "cumsum(X)", "3x4,-;1x5,-;4x1,-;n,-", "X", -1, 1 },
  { "cumprod", "cumprod(X)", "3x4,-;1x5,-;4x1,-", "X", 0.5, 1.5 },
  { "softmax", "softmax(X)", "3x4,-;1x5,-;1x1,-", "X", -2, 2 },
  { "logsoftmax", "logsoftmax(X)", "3x4,-;1x5,-;1x1,-", "X", -2, 2 },
  { "diag", "diag(X)", "4x1,-;1x4,-;3x3,-", "X", -1, 1 },
  { "t", "t(X) %*% X", "3x4,-;1x1,-", "X", -1, 1 },
  { "trace", "trace(X %*% X)", "3x3,-;1x1,-", "X", -1, 1 },
  { "det", "det(X + 3 * diag(matrix(1, rows=nrow(X), cols=1)))", "3x3,-;1x1,-", "X", -1, 1 },
  { "inv", "inv(X + 3 * diag(matrix(1, rows=nrow(X), cols=1)))", "3x3,-;1x1,-", "X", -1, 1 },
  { "solve", "solve(X + 3 * diag(matrix(1, rows=nrow(X), cols=1)), Y)", "3x3,3x2;3x3,3x1;1x1,1x1", "XY", -1, 1 },
  /* the factorizations (issue 25): eigen and cholesky of symmetric matrices, qr of tall ones */
  { "eigen", "E = eigen(X + t(X)); E$values %*% t(E$values) + E$vectors * X", "3x3,-;1x1,-", "X", -1, 1 },
  { "cholesky", "cholesky(X %*% t(X) + 3 * diag(matrix(1, rows=nrow(X), cols=1))) * X", "3x3,-;1x1,-", "X", -1, 1 },
  { "qr", "E = qr(X); cbind(t(E$Q) * t(X), E$R)", "4x3,-;3x3,-;1x1,-", "X", -1, 1 },
  { "svd", "E = svd(X); cbind(t(E$U) * t(X), E$S, E$V * X[1:ncol(X), ])", "4x3,-;3x3,-", "X", -1, 1 },
  /* identities and outer (issue 25: they dropped the derivative) */
  { "as.double", "as.double(X[1, 1]) * X + as.double(X)", "3x4,-;1x1,-", "X", -1, 1 },
  { "as.matrix", "as.matrix(X) * 2 + as.matrix(X[1, 1])", "3x4,-;1x1,-", "X", -1, 1 },
  { "ifdef", "ifdef(X, 0) * X", EW, "X", -1, 1 },
  { "progress", "progress(X) * X", EW, "X", -1, 1 },
  { "outer", "outer(X, Y) + t(outer(Y, X, \"-\")) * 2", "4x1,1x3;1x3,3x1;n,4x1", "XY", -1, 1 },
  { "matrix", "matrix(X, rows = ncol(X), cols = nrow(X)) * matrix(X, rows = ncol(X), cols = nrow(X), byrow = FALSE)",
    "3x4,-;1x5,-;4x1,-;n,-", "X", -1, 1 },
  { "cbind", "cbind(X, Y, X * Y)", "3x1,3x1;1x2,1x2;3x2,3x1;n,n", "XY", -1, 1 },
  { "rbind", "rbind(X, Y, X * Y)", "1x3,1x3;2x1,2x1;2x3,1x3;n,n", "XY", -1, 1 },
  { "ifelse", "ifelse(X > 0, X^2, Y)", "3x4,3x4;3x4,n;n,n", "XY", -1, 1 },
  { "as.scalar", "as.scalar(X[2, 2]) * X", "3x3,-", "X", -1, 1 },
  { "identity", "identity(X)", EW, "X", -1, 1 },
  { "list", "L = list(a = X, b = 2); L$a * L$b + L[1]", MAT, "X", -1, 1 },
  { "grad", "grad(function(Z) sum(sin(Z) * Z))(X)", MAT, "X", -1, 1 },
  { "grad_allreduce", "grad_allreduce(grad(function(Z, a) sum(sin(Z) * Z) * a), list(X, 2), weight = 0.5, bucket = 2)", MAT, "X", -1, 1 },
  { "value_and_grad", "[v, g] = value_and_grad(function(Z) sum(exp(Z) * Z))(X); v + g", MAT, "X", -1, 1 },
  { "jvp", "[v, d] = jvp(function(Z) sum(sin(Z)^2), X, X); v + d", MAT, "X", -1, 1 },
  { "stop_gradient", NULL, NULL, NULL, 0, 0 },   /* checked separately: its derivative is 0 */
  /* DML math and statistics (issue 11) */
  { "sinh", "sinh(X)", NULL, "X", -2, 2 }, { "cosh", "cosh(X)", NULL, "X", -2, 2 },
  { "log1p", "log1p(X)", NULL, "X", -0.5, 2 }, { "expm1", "expm1(X)", NULL, "X", -2, 2 },
  { "logit", "logit(X)", NULL, "X", 0.1, 0.9 },
  { "asin", "asin(X)", NULL, "X", -0.9, 0.9 }, { "acos", "acos(X)", NULL, "X", -0.9, 0.9 },
  { "atan", "atan(X)", NULL, "X", -2, 2 }, { "ceiling", "ceiling(X) + X", NULL, "X", 0.1, 0.4 },
  { "avg", "avg(X)", "3x4,-;1x1,-;n,-", "X", -1, 1 },
  { "pmax", "pmax(X, Y) + pmax(X, 0.1, Y)", NULL, "XY", -1, 1 },
  { "pmin", "pmin(X, Y) + pmin(X, 0.1, Y)", NULL, "XY", -1, 1 },
  { "cummax", "cummax(X)", "3x4,-;1x5,-;4x1,-;n,-", "X", -1, 1 },
  { "cummin", "cummin(X)", "3x4,-;1x5,-;4x1,-;n,-", "X", -1, 1 },
  { "cumsumprod", "cumsumprod(X)", "4x2,-;1x2,-", "X", -1, 1 },
  { "median", "median(X)", "5x1,-;4x1,-;1x1,-", "X", -1, 1 },
  { "pnorm", "pnorm(X, mean=0.5, sd=2) + pnorm(X, lower.tail=FALSE)", EW, "X", -2, 2 },
  { "qnorm", "qnorm(X, 1, 3)", EW, "X", 0.05, 0.95 },
  { "pexp", "pexp(X, rate=2) + pexp(X, 0.5, FALSE)", EW, "X", 0.1, 3 },
  { "qexp", "qexp(X, 2)", EW, "X", 0.05, 0.95 },
  { "cdf", "cdf(target=X, dist=\"normal\", mean=1) + cdf(target=X, dist=\"exp\", rate=3)", EW, "X", 0.1, 2 },
  { "pchisq", NULL, NULL, NULL, 0, 0 }, { "qchisq", NULL, NULL, NULL, 0, 0 },   /* grad through them is an */
  { "pt", NULL, NULL, NULL, 0, 0 }, { "qt", NULL, NULL, NULL, 0, 0 },           /* error: checked separately */
  { "pf", NULL, NULL, NULL, 0, 0 }, { "qf", NULL, NULL, NULL, 0, 0 },
  { "icdf", "icdf(target=X, dist=\"normal\", sd=2) + icdf(target=X, dist=\"exp\")", EW, "X", 0.05, 0.95 },
  { "quantile", "quantile(X, [0.3; 0.8]) + quantile(X, 0.5)", "5x1,-;4x1,-", "X", -1, 1 },
  { "interQuartileMean", "interQuartileMean(X)", "5x1,-;8x1,-", "X", -1, 1 },
  { "inverse", "inverse(X + 3 * diag(matrix(1, rows=nrow(X), cols=1)))", "3x3,-;1x1,-", "X", -1, 1 },
  { "tr", "tr(X %*% X)", "3x3,-;1x1,-", "X", -1, 1 },
  { "rowCumsum", "rowCumsum(X)", "3x4,-;1x5,-;4x1,-;n,-", "X", -1, 1 },
  { "rowcumsum", "rowcumsum(X)", "3x4,-", "X", -1, 1 },
  { "eval", "eval(\"rowCumsum\", X)", "3x4,-", "X", -1, 1 },
  { "evalList", "as.matrix(evalList(\"rowCumsum\", list(X)))", "3x4,-", "X", -1, 1 },
  { "rowProds", "rowProds(X)", MAT, "X", 0.5, 1.5 }, { "colProds", "colProds(X)", MAT, "X", 0.5, 1.5 },
  { "rowVars", "rowVars(X)", "3x4,-;1x5,-", "X", -1, 1 }, { "colVars", "colVars(X)", "3x4,-;4x1,-", "X", -1, 1 },
  { "rowSds", "rowSds(X)", "3x4,-;1x5,-", "X", -1, 1 }, { "colSds", "colSds(X)", "3x4,-;4x1,-", "X", -1, 1 },
  { "moment", "moment(X, 2) + moment(X, 3) + moment(X, Y, 4)", "4x1,4x1", "XY", 0.5, 2 },
  { "centralMoment", "centralMoment(X, Y, 3)", "4x1,4x1", "XY", 0.5, 2 },
  { "cov", "cov(X, Y) + cov(X, Y, X)", "4x1,4x1", "XY", 0.5, 2 },
  { "lower.tri", "lower.tri(target=X, values=TRUE) * X + lower.tri(target=X, diag=TRUE, values=TRUE)", "3x4,-;4x3,-;1x1,-", "X", -1, 1 },
  { "upper.tri", "upper.tri(target=X, values=TRUE) * X + upper.tri(target=X, diag=TRUE, values=TRUE)", "3x4,-;4x3,-;1x1,-", "X", -1, 1 },
  { "append", "append(X, Y)", "3x1,3x1;3x2,3x1;n,n", "XY", -1, 1 },
  { "scale", "[A, B, C] = scale(X); sum(A * A * X) + sum(B) + sum(C) + A", "3x4,-;4x1,-", "X", -1, 1 },
  /* R habits (builtins_r.c, issue 13): c(), rep() and logical masks, read and assigned */
  { "c", "c(X, 2 * Y, X ^ 2)", "3x4,3x4;n,3x4;1x1,n;4x1,1x5", "XY", -1, 1 },
  { "rep", "rep(X, times=2, each=3) * rep(X, each=6) + sum(rep(X, length.out=5))", "3x4,-;n,-;4x1,-", "X", -1, 1 },
  { "mask", "Z = X; Z[X < 0] = 0; Z * X + sum(X[X > -2]) + sum(Y[, Y[1, ] > 0])", "3x4,3x4;4x1,4x1", "XY", -1, 1 },
  /* DML's deep-learning builtins (builtins_nn.c): 2 images of 2 channels of 3x3, 3 filters of 2x2 */
  { "conv2d", "conv2d(X, Y, input_shape=[2,2,3,3], filter_shape=[3,2,2,2], stride=[1,1], padding=[1,1])", "2x18,3x8", "XY", -1, 1 },
  { "conv2d_backward_data", "conv2d_backward_data(X, Y, stride=[1,1], padding=[0,0], input_shape=[2,2,3,3], filter_shape=[3,2,2,2])",
    "3x8,2x12", "XY", -1, 1 },
  { "conv2d_backward_filter", "conv2d_backward_filter(X, Y, stride=[2,1], padding=[1,0], input_shape=[2,2,3,3], filter_shape=[3,2,2,2])",
    "2x18,2x12", "XY", -1, 1 },
  { "max_pool", "max_pool(X, input_shape=[2,2,3,3], pool_size=[2,2], stride=[1,1], padding=[1,1])", "2x18,-", "X", -1, 1 },
  { "max_pool_backward", "max_pool_backward(X, Y, input_shape=[2,2,3,3], pool_size=[2,2], stride=[1,1], padding=[0,0])",
    "2x18,2x8", "XY", -1, 1 },
  { "avg_pool", "avg_pool(X, input_shape=[2,2,3,3], pool_size=[2,2], stride=[1,1], padding=[1,1])", "2x18,-", "X", -1, 1 },
  { "avg_pool_backward", "avg_pool_backward(X, Y, input_shape=[2,2,3,3], pool_size=[2,2], stride=[1,1], padding=[1,1])",
    "2x18,2x32", "XY", -1, 1 },
  { "batch_norm2d", "B = batch_norm2d(X, Y, Y * 2, Y, Y * Y + 1, \"train\", 1e-5, 0.9); "
    "B$out * 2 + sum(B$ema_mean_upd) + sum(B$ema_var_upd * B$cache_inv_var) + sum(B$cache_mean)", "3x8,2x1;2x6,3x1;4x3,1x1", "XY", -1, 1 },
  { "batch_norm2d", "B = batch_norm2d(X, Y, Y * 2, Y, Y * Y + 1, \"test\", 1e-5, 0.9); "
    "B$out * 2 + sum(B$ema_var_upd * B$cache_inv_var)", "3x8,2x1;2x6,3x1", "XY", -1, 1 },
  { "batch_norm2d_backward", "B = batch_norm2d_backward(X, X * X + 1, Y, 1e-5, Y * 0.3, Y * Y + 1); "
    "B$dX * 2 + sum(B$dgamma) + sum(B$dbeta * B$dbeta)", "3x8,2x1;2x6,3x1", "XY", -1, 1 },
  { "bias_add", "bias_add(X, Y)", "2x6,3x1;1x4,1x1;3x4,4x1", "XY", -1, 1 },
  { "bias_multiply", "bias_multiply(X, Y)", "2x6,3x1;1x4,1x1;3x4,4x1", "XY", -1, 1 },
  /* one process: X itself (tests/mpi/ checks 2 ranks against finite differences) */
  { "allreduce", "allreduce(X) * X + allreduce(X, op=\"max\") + allreduce(X, \"min\")", EW, "X", -1, 1 },
};

typedef struct Job { const char *code; int status; char *out, *err; } Job;

/* Runs code on a fresh interpreter on a thread with a large stack; captures stdout/stderr. */
static void *job_main(void *p) {
  Job *j = p;
  Interp *I = interp_new();
  size_t no = 0, ne = 0;
  I->out = open_memstream(&j->out, &no);
  I->errf = open_memstream(&j->err, &ne);
  Source *src = source_new("coverage.mls", j->code, strlen(j->code));
  j->status = interp_run_source(I, src, false);
  source_release(src);
  fclose(I->out);
  fclose(I->errf);
  I->out = stdout;
  I->errf = stderr;
  interp_free(I);
  return NULL;
}

static int run(const char *code, char **out, char **err) {
  Job j = { code, 0, NULL, NULL };
  pthread_attr_t a;
  pthread_t th;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, (size_t)256 << 20);
  pthread_create(&th, &a, job_main, &j);
  pthread_join(th, NULL);
  pthread_attr_destroy(&a);
  *out = j.out;
  *err = j.err;
  return j.status;
}

static const Recipe *find_recipe(const char *name) {
  for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++)
    if (strcmp(recipes[i].name, name) == 0) return &recipes[i];
  return NULL;
}

/* MLS code for a point of the given shape, random in [lo, hi). */
static void point(char *buf, size_t n, const char *shape, double lo, double hi, int seed) {
  int r, c;
  if (strcmp(shape, "n") == 0) snprintf(buf, n, "as.scalar(rand(rows=1, cols=1, min=%g, max=%g, seed=%d))", lo, hi, seed);
  else if (sscanf(shape, "%dx%d", &r, &c) == 2) snprintf(buf, n, "rand(rows=%d, cols=%d, min=%g, max=%g, seed=%d)", r, c, lo, hi, seed);
  else fail_msg("bad shape '%s'", shape);
}

/* Checks one recipe over all its shape pairs; returns the number of failures. */
static int check_recipe(const Recipe *rc) {
  const char *shapes = rc->shapes ? rc->shapes : strchr(rc->wrt, 'Y') ? BIN : EW;
  char list[512];
  snprintf(list, sizeof list, "%s", shapes);
  int failures = 0, seed = 1;
  for (char *save = NULL, *pair = strtok_r(list, ";", &save); pair; pair = strtok_r(NULL, ";", &save), seed += 2) {
    char xs[16], ys[16], px[200], py[200], code[4096];
    if (sscanf(pair, "%15[^,],%15s", xs, ys) != 2) fail_msg("bad shape pair '%s'", pair);
    point(px, sizeof px, xs, rc->lo, rc->hi, seed);
    if (strcmp(ys, "-") == 0) snprintf(py, sizeof py, "0");
    else point(py, sizeof py, ys, rc->lo, rc->hi, seed + 1);
    int k = snprintf(code, sizeof code, "X0 = %s\nY0 = %s\n", px, py);
    if (strchr(rc->wrt, 'X'))
      k += snprintf(code + k, sizeof code - k,
                    "fx = function(X) { Y = Y0; R = { %s }; sum(R * R) }\nprint(\"X \" + gradcheck(fx, X0))\n", rc->expr);
    if (strchr(rc->wrt, 'Y'))
      snprintf(code + k, sizeof code - k,
               "fy = function(Y) { X = X0; R = { %s }; sum(R * R) }\nprint(\"Y \" + gradcheck(fy, Y0))\n", rc->expr);
    char *out = NULL, *err = NULL;
    int st = run(code, &out, &err);
    if (st != 0) {
      print_error("%s with shapes %s: status %d: %s\n", rc->name, pair, st, err);
      failures++;
    } else {
      for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        double e = atof(line + 2);
        if (!(e < 1e-5)) { print_error("%s with shapes %s: relative error %s\n", rc->name, pair, line); failures++; }
      }
    }
    free(out);
    free(err);
  }
  return failures;
}

static void test_every_differentiable_builtin_has_a_checked_rule(void **state) {
  (void)state;
  int failures = 0, checked = 0;
  for (int i = 0; i < builtin_count; i++) {
    const Builtin *b = &builtin_table[i];
    if (!(b->flags & BI_DIFF)) continue;
    const Recipe *rc = find_recipe(b->name);
    if (!rc) { print_error("builtin '%s' is marked differentiable but has no gradient-check recipe\n", b->name); failures++; continue; }
    if (!(b->flags & BI_AD)) { print_error("builtin '%s' is marked differentiable but has no derivative rule (BI_AD)\n", b->name); failures++; }
    if (rc->expr) failures += check_recipe(rc);
    checked++;
  }
  assert_true(checked > 40);
  assert_int_equal(failures, 0);
}

static void test_every_operator(void **state) {
  (void)state;
  int failures = 0;
  for (size_t i = 0; i < sizeof recipes / sizeof recipes[0]; i++)
    if (!bi_find(recipes[i].name) && recipes[i].expr) failures += check_recipe(&recipes[i]);
  assert_int_equal(failures, 0);
}

static void test_stop_gradient(void **state) {
  (void)state;
  char *out, *err;
  int st = run("g = grad(function(X) sum(stop_gradient(X) * X))([1, 2; 3, 4])\nprint(g)\n", &out, &err);
  assert_int_equal(st, 0);
  assert_string_equal(out, "1 2\n3 4\n");
  free(out);
  free(err);
}

/* The distributions without a derivative rule stop grad with an error, never a silent zero. */
static void test_no_derivative_is_an_error(void **state) {
  (void)state;
  static const char *const calls[] = { "pchisq(x, 3)", "qchisq(x / 4, 3)", "pt(x, 3)", "qt(x / 4, 3)",
                                       "pf(x, 3, 4)", "qf(x / 4, 3, 4)", "pnorm(1, mean=x)" };
  for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
    char code[256], *out, *err;
    snprintf(code, sizeof code, "print(grad(function(x) sum(%s))(2))\n", calls[i]);
    int st = run(code, &out, &err);
    if (st == 0 || !strstr(err, "grad cannot differentiate")) print_error("%s: status %d, stderr %s\n", calls[i], st, err);
    assert_int_not_equal(st, 0);
    assert_non_null(strstr(err, "grad cannot differentiate"));
    free(out);
    free(err);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_differentiable_builtin_has_a_checked_rule),
    cmocka_unit_test(test_every_operator),
    cmocka_unit_test(test_stop_gradient),
    cmocka_unit_test(test_no_derivative_is_an_error),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
