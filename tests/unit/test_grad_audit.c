/*
** test_grad_audit.c — walks THE builtin table (issue 25): for every builtin, what grad does when
** a numeric argument is traced, each claim checked by running it. A builtin without an entry
** here fails; so does one whose gradient silently disagrees with finite differences.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "builtins.h"
#include "interp/interp.h"

/* What grad does through a builtin, f(X) = a weighted sum of the numbers in CALL's result:
** FLOWS  the derivative flows: grad(f) agrees with central differences (gradcheck) and is not
**        all zero; jit(grad(f)) gives the same gradient.
** ZERO   the derivative is legitimately zero (discrete, whole-number, boolean or string results,
**        effects): grad gives 0 and so do the finite differences, so this is no silent drop.
**        `why` says why. BI_NODIFF builtins (grad sees through their arguments) must be here.
** ERROR  no derivative: grad(f) and jit(grad(f)) stop with a located error saying so.
** CONST  zero by definition (stop_gradient); the finite differences are not.
** NONUM  no numeric argument to trace (`why` says what it takes), or not callable here. */
enum { FLOWS, ZERO, ERROR, CONST, NONUM };

typedef struct Audit {
  const char *name;      /* the builtin */
  int kind;
  const char *call;      /* an MLS expression in X, a 3x3 matrix (D: a scratch directory) */
  const char *why;
} Audit;

#define POOL "input_shape=[1,1,3,3], pool_size=[2,2], stride=[1,1], padding=[0,0]"
#define CONV "stride=[1,1], padding=[0,0], input_shape=[1,1,3,3], filter_shape=[1,1,2,2]"
#define IMG "matrix(X, rows=1, cols=9)"
#define DOUT "matrix(X[2:3, 2:3], rows=1, cols=4)"

static const Audit audits[] = {
  { "Filter", ERROR, "Filter(function(v) v > 0, X)", NULL },
  { "Map", ERROR, "Map(function(a, b) a + b, X, X)", NULL },
  { "Rand", ERROR, "Rand(rows=2, cols=2, min=X[1, 1], max=3, seed=1)", NULL },
  { "Rand", ZERO, "Rand(rows=2, cols=2, seed=X[1, 1] * 0 + 1)", "the seed and the sizes are whole numbers" },
  { "Reduce", ERROR, "Reduce(function(a, b) a + b, X)", NULL },
  { "abline", ZERO, "{ plot(X[, 1], file=D + \"/ab.png\"); abline(h=X[1, 1]) }", "draws; gives NULL" },
  { "abs", FLOWS, "abs(X - 1)", NULL },
  { "acos", FLOWS, "acos(X / 3)", NULL },
  { "aggregate", FLOWS, "aggregate(X[, 1], [1; 1; 2], \"sum\") + aggregate(X[, 2], [1; 1; 2], \"mean\")", NULL },
  { "aggregate", ZERO, "aggregate(X[, 1], [1; 1; 2], \"count\")", "the counts do not depend on target" },
  { "aggregate", ERROR, "aggregate(X[, 1], [1; 1; 2], \"variance\")", NULL },
  { "aggregate", ERROR, "aggregate([1; 2; 3], [1; 1; 2], \"sum\", weights=X[, 1])", NULL },
  { "all", ZERO, "all(X > 0)", "a boolean" },
  { "allreduce", FLOWS, "allreduce(X)", NULL },
  { "any", ZERO, "any(X > 2)", "a boolean" },
  { "append", FLOWS, "append(X, X * 2)", NULL },
  { "apply", ERROR, "apply(X, 1, sum)", NULL },
  { "applySchema", NONUM, NULL, "takes a frame and a schema (frames hold no traced values)" },
  { "as.boolean", ZERO, "as.boolean(X - 1)", "a boolean" },
  { "as.double", FLOWS, "as.double(X[1, 1]) * X + as.double(X)", NULL },
  { "as.frame", ERROR, "as.frame(X)", NULL },
  { "as.integer", ZERO, "as.integer(X * 3)", "truncation: a step function, derivative 0 where it has one (as floor)" },
  { "as.list", FLOWS, "as.list(list(list(X, 2 * X)))", NULL },
  { "as.logical", ZERO, "as.logical(X - 1)", "a boolean" },
  { "as.matrix", FLOWS, "as.matrix(X[1, 1]) + as.matrix(X)", NULL },
  { "as.scalar", FLOWS, "as.scalar(X[2, 2])", NULL },
  { "asin", FLOWS, "asin(X / 3)", NULL },
  { "assert", ZERO, "assert(X[1, 1])", "an effect: stops or gives NULL" },
  { "atan", FLOWS, "atan(X)", NULL },
  { "avg", FLOWS, "avg(X)", NULL },
  { "avg_pool", FLOWS, "avg_pool(" IMG ", " POOL ")", NULL },
  { "avg_pool_backward", FLOWS, "avg_pool_backward(" IMG ", " DOUT ", " POOL ")", NULL },
  { "axis", ZERO, "{ plot(X[, 1], file=D + \"/ax.png\"); axis(1, at=X[, 1]) }", "draws; gives NULL" },
  { "barplot", ZERO, "barplot(X[, 1], file=D + \"/bp.png\")", "the bar midpoints depend only on how many bars there are" },
  { "barrier", NONUM, NULL, "takes no argument" },
  { "batch_norm2d", FLOWS, "batch_norm2d(X, X[, 1], X[, 2], X[, 3], X[, 1] ^ 2 + 1, \"train\", 1e-5, 0.9)", NULL },
  { "batch_norm2d", FLOWS, "batch_norm2d(X, X[, 1], X[, 2], X[, 3], X[, 1] ^ 2 + 1, \"test\", 1e-5, 0.9)", NULL },
  { "batch_norm2d_backward", FLOWS, "batch_norm2d_backward(X, X * X, X[, 1], 1e-5, X[, 2], X[, 3] ^ 2 + 1)", NULL },
  { "bcast", ERROR, "bcast(X)", NULL },
  { "bias_add", FLOWS, "bias_add(X, X[, 1])", NULL },
  { "bias_multiply", FLOWS, "bias_multiply(X, X[, 1])", NULL },
  { "bitwAnd", ZERO, "bitwAnd(X * 3, 5)", "whole numbers" },
  { "bitwOr", ZERO, "bitwOr(X * 3, 5)", "whole numbers" },
  { "bitwShiftL", ZERO, "bitwShiftL(X * 3, 2)", "whole numbers" },
  { "bitwShiftR", ZERO, "bitwShiftR(X * 3, 1)", "whole numbers" },
  { "bitwXor", ZERO, "bitwXor(X * 3, 5)", "whole numbers" },
  { "boxplot", ZERO, "boxplot(X[, 1], plot=FALSE)$n", "counts (its stats are order statistics that grad takes as constants)" },
  { "c", FLOWS, "c(X, X[1, 1])", NULL },
  { "cat", ZERO, "cat(X, \"\\n\")", "writes to standard output; gives NULL" },
  { "cbind", FLOWS, "cbind(X, X[, 1])", NULL },
  { "cdf", FLOWS, "cdf(target=X, dist=\"normal\", mean=1) + cdf(target=X, dist=\"exp\")", NULL },
  { "cdf", ERROR, "cdf(target=X, dist=\"t\", df=3)", NULL },
  { "cdf", ERROR, "cdf(target=1, dist=\"normal\", mean=X[1, 1])", NULL },
  { "ceil", ZERO, "ceil(X * 3)", "a step function: derivative 0 where it has one (R, JAX)" },
  { "ceiling", ZERO, "ceiling(X * 3)", "a step function" },
  { "centralMoment", FLOWS, "centralMoment(X[, 1], 3) + centralMoment([1; 2; 4], X[, 1], 2)", NULL },
  { "cholesky", FLOWS, "cholesky(X %*% t(X))", NULL },
  { "colMaxs", FLOWS, "colMaxs(X)", NULL },
  { "colMeans", FLOWS, "colMeans(X)", NULL },
  { "colMins", FLOWS, "colMins(X)", NULL },
  { "colProds", FLOWS, "colProds(X)", NULL },
  { "colSds", FLOWS, "colSds(X)", NULL },
  { "colSums", FLOWS, "colSums(X)", NULL },
  { "colVars", FLOWS, "colVars(X)", NULL },
  { "colnames", NONUM, NULL, "takes a frame" },
  { "contains", ZERO, "contains(X, X[1, 1])", "a boolean" },
  { "conv2d", FLOWS, "conv2d(" IMG ", matrix(X[1:2, 1:2], rows=1, cols=4), input_shape=[1,1,3,3], "
                     "filter_shape=[1,1,2,2], stride=[1,1], padding=[0,0], bias=as.matrix(X[1, 1]))", NULL },
  { "conv2d_backward_data", FLOWS, "conv2d_backward_data(matrix(X[1:2, 1:2], rows=1, cols=4), " DOUT ", " CONV ")", NULL },
  { "conv2d_backward_filter", FLOWS, "conv2d_backward_filter(" IMG ", " DOUT ", " CONV ")", NULL },
  { "cos", FLOWS, "cos(X)", NULL },
  { "cosh", FLOWS, "cosh(X)", NULL },
  { "cov", FLOWS, "cov(X[, 1], X[, 2]) + cov(X[, 1], X[, 2], X[, 3])", NULL },
  { "cpu", ERROR, "cpu(X)", NULL },
  { "cummax", FLOWS, "cummax(X)", NULL },
  { "cummin", FLOWS, "cummin(X)", NULL },
  { "cumprod", FLOWS, "cumprod(X)", NULL },
  { "cumsum", FLOWS, "cumsum(X)", NULL },
  { "cumsumprod", FLOWS, "cumsumprod(X[, 1:2] / 3)", NULL },
  { "det", FLOWS, "det(X)", NULL },
  { "detectSchema", NONUM, NULL, "takes a frame" },
  { "dev.off", NONUM, NULL, "takes no argument" },
  { "device", ZERO, "device(X)", "a string: where X lives" },
  { "diag", FLOWS, "diag(X)", NULL },
  { "display", ZERO, "display(X)", "shows X (a notebook's display_data, else printed); gives NULL" },
  { "do.call", ERROR, "do.call(\"sum\", list(X))", NULL },
  { "dot", ZERO, "dot(function(Z) Z * 2, X, file=D + \"/g.dot\")", "writes a graph file; gives its name" },
  { "eigen", FLOWS, "eigen(X + t(X))", NULL },
  { "eval", FLOWS, "eval(\"rowCumsum\", X * X) + eval(\"sum\", list(X))", NULL },
  { "evalList", FLOWS, "evalList(\"rowCumsum\", list(X * X))", NULL },
  { "exists", NONUM, NULL, "takes a name (a string)" },
  { "exp", FLOWS, "exp(X)", NULL },
  { "expm1", FLOWS, "expm1(X)", NULL },
  { "explain", ZERO, "explain(function(Z) Z * 2, X)", "prints the staged graph; gives node counts" },
  { "floor", ZERO, "floor(X * 3)", "a step function" },
  { "format", ZERO, "format(X[1, 1])", "a string" },
  { "frame", ERROR, "frame(X, rows=3, cols=3)", NULL },
  { "gc", NONUM, NULL, "takes no argument" },
  { "gpu", ERROR, "gpu(X)", NULL },
  { "grad", FLOWS, "grad(function(Z) sum(Z^3))(X)", NULL },
  { "grad_allreduce", FLOWS, "grad_allreduce(grad(function(Z) sum(Z^3)), list(X), weight = 2)", NULL },
  { "gradcheck", ERROR, "gradcheck(function(Z) sum(Z^3), X)", NULL },
  { "grepl", NONUM, NULL, "takes strings; gives booleans" },
  { "gsub", NONUM, NULL, "takes strings; gives a string" },
  { "head", ERROR, "head(X, 2)", NULL },
  { "help", NONUM, NULL, "takes a topic (a name)" },
  { "help.search", NONUM, NULL, "takes a pattern (a string)" },
  { "hessian", ERROR, "hessian(function(z) sum(z^3))(X[, 1])", NULL },
  { "hist", ZERO, "hist(X[, 1], plot=FALSE)", "counts and break points: piecewise constant in x" },
  { "icdf", FLOWS, "icdf(target=X / 3, dist=\"exp\") + icdf(target=X / 3, dist=\"normal\")", NULL },
  { "icdf", ERROR, "icdf(target=X / 3, dist=\"chisq\", df=3)", NULL },
  { "identity", FLOWS, "identity(X)", NULL },
  { "ifdef", FLOWS, "ifdef(X, 0)", NULL },
  { "ifelse", FLOWS, "ifelse(X > 1, X, 2 * X)", NULL },
  { "ifelse", ZERO, "ifelse(X - 1, 1, 2)", "the test is discrete" },
  { "image", ZERO, "image(X, file=D + \"/im.png\")", "draws; gives NULL" },
  { "interQuartileMean", FLOWS, "interQuartileMean(c(X))", NULL },
  { "interQuartileMean", ERROR, "interQuartileMean([1; 2; 3], X[, 1])", NULL },
  { "inv", FLOWS, "inv(X)", NULL },
  { "inverse", FLOWS, "inverse(X)", NULL },
  { "is.character", ZERO, "is.character(X)", "a type query" },
  { "is.frame", ZERO, "is.frame(X)", "a type query" },
  { "is.function", ZERO, "is.function(X)", "a type query" },
  { "is.finite", ZERO, "is.finite(X)", "0/1" },
  { "is.infinite", ZERO, "is.infinite(X)", "0/1" },
  { "is.list", ZERO, "is.list(X)", "a type query" },
  { "is.logical", ZERO, "is.logical(X)", "a type query" },
  { "is.matrix", ZERO, "is.matrix(X)", "a type query" },
  { "is.na", ZERO, "is.na(X)", "0/1" },
  { "is.nan", ZERO, "is.nan(X)", "0/1" },
  { "is.null", ZERO, "is.null(X)", "a type query" },
  { "is.numeric", ZERO, "is.numeric(X)", "a type query" },
  { "isInf", ZERO, "isInf(X)", "0/1" },
  { "isNA", ZERO, "isNA(X)", "0/1" },
  { "isNaN", ZERO, "isNaN(X)", "0/1" },
  { "jacobian", ERROR, "jacobian(function(z) z^2)(X[, 1])", NULL },
  { "jit", FLOWS, "jit(function(Z) Z^2)(X)", NULL },
  { "jvp", FLOWS, "jvp(function(Z) Z^2, X, X)", NULL },
  { "lapply", ERROR, "lapply(list(X), function(v) v * 2)", NULL },
  { "legend", NONUM, NULL, "takes labels and line styles, no data" },
  { "length", ZERO, "length(X)", "a shape query" },
  { "lines", ZERO, "{ plot(X[, 1], file=D + \"/l.png\"); lines(X[, 2]) }", "draws; gives NULL" },
  { "list", FLOWS, "list(X, 2 * X)", NULL },
  { "load", NONUM, NULL, "takes a path" },
  { "log", FLOWS, "log(X) + log(2, base=X + 1)", NULL },
  { "log1p", FLOWS, "log1p(X)", NULL },
  { "logit", FLOWS, "logit(sigmoid(X))", NULL },
  { "logsoftmax", FLOWS, "logsoftmax(X)", NULL },
  { "lower.tri", FLOWS, "lower.tri(target=X, values=TRUE)", NULL },
  { "ls", NONUM, NULL, "takes no argument" },
  { "map", NONUM, NULL, "takes a frame and a string" },
  { "matplot", ZERO, "matplot(X, file=D + \"/mp.png\")", "draws; gives NULL" },
  { "matrix", FLOWS, "matrix(X, rows=1, cols=9)", NULL },
  { "max", FLOWS, "max(X) + max(X, X[1, 1])", NULL },
  { "max_pool", FLOWS, "max_pool(" IMG ", " POOL ")", NULL },
  { "max_pool_backward", FLOWS, "max_pool_backward(" IMG ", " DOUT ", " POOL ")", NULL },
  { "mean", FLOWS, "mean(X)", NULL },
  { "median", FLOWS, "median(X[, 1])", NULL },
  { "median", ERROR, "median(X[, 1], X[, 2])", NULL },
  { "min", FLOWS, "min(X) + min(X, X[1, 1])", NULL },
  { "moment", FLOWS, "moment(X[, 1], 2) + moment([1; 2; 4], X[, 1], 3)", NULL },
  { "mpi_rank", NONUM, NULL, "takes no argument" },
  { "mpi_size", NONUM, NULL, "takes no argument" },
  { "mtext", NONUM, NULL, "takes text" },
  { "names", ZERO, "names(list(a = X))", "strings" },
  { "names<-", ERROR, "{ Y = X[1, 1]; names(Y) = \"a\"; Y }", NULL },
  { "nchar", ZERO, "nchar(X[1, 1])", "a count of characters" },
  { "ncol", ZERO, "ncol(X)", "a shape query" },
  { "nnz", ZERO, "nnz(X)", "a count of nonzero elements" },
  { "nrow", ZERO, "nrow(X)", "a shape query" },
  { "order", FLOWS, "order(X, by=2)", NULL },
  { "order", ZERO, "order(X, by=2, index.return=TRUE)", "a permutation: whole numbers" },
  { "outer", FLOWS, "outer(X[, 1], X[1, ]) + outer(X[, 2], X[3, ], \"-\")", NULL },
  { "par", ZERO, "par(mfrow=[1, 1] + 0 * X[1, 1])", "a layout of whole numbers" },
  { "paste", ZERO, "paste(X[1, 1], \"a\")", "a string" },
  { "paste0", ZERO, "paste0(X[1, 1], \"a\")", "a string" },
  { "pchisq", ERROR, "pchisq(X, 3)", NULL },
  { "pexp", FLOWS, "pexp(X)", NULL },
  { "pexp", ERROR, "pexp(1, rate=X[1, 1])", NULL },
  { "pf", ERROR, "pf(X, 3, 4)", NULL },
  { "plot", ZERO, "plot(X[, 1], file=D + \"/p.png\")", "draws; gives NULL" },
  { "pmax", FLOWS, "pmax(X, X[1, 1])", NULL },
  { "pmin", FLOWS, "pmin(X, X[1, 1])", NULL },
  { "pnorm", FLOWS, "pnorm(X)", NULL },
  { "pnorm", ERROR, "pnorm(1, mean=X[1, 1])", NULL },
  { "points", ZERO, "{ plot(X[, 1], file=D + \"/q.png\"); points(X[, 2]) }", "draws; gives NULL" },
  { "print", ZERO, "print(X)", "writes to standard output; gives NULL" },
  { "prod", FLOWS, "prod(X)", NULL },
  { "progress", FLOWS, "progress(X)", NULL },
  { "pt", ERROR, "pt(X, 3)", NULL },
  { "qchisq", ERROR, "qchisq(X / 3, 3)", NULL },
  { "qexp", FLOWS, "qexp(X / 3)", NULL },
  { "qf", ERROR, "qf(X / 3, 3, 4)", NULL },
  { "qnorm", FLOWS, "qnorm(X / 3)", NULL },
  { "qr", FLOWS, "qr(X)", NULL },
  { "qt", ERROR, "qt(X / 3, 3)", NULL },
  { "quantile", FLOWS, "quantile(X[, 1], 0.5)", NULL },
  { "quantile", ZERO, "quantile([1; 2; 3; 4], X[1, 1] / 3)", "the position ceil(p n) is piecewise constant in p" },
  { "quit", NONUM, NULL, "ends the program (not called here); takes a status" },
  { "rand", ERROR, "rand(rows=2, cols=2, min=X[1, 1], max=3, seed=1)", NULL },
  { "rand", ZERO, "rand(rows=2, cols=2, seed=X[1, 1] * 0 + 1)", "the seed and the sizes are whole numbers" },
  { "rbind", FLOWS, "rbind(X, X[1, ])", NULL },
  { "rbinom", ERROR, "rbinom(3, 5, X[1, 1] / 10)", NULL },
  { "read", NONUM, NULL, "takes a path" },
  { "read.csv", NONUM, NULL, "takes a path" },
  { "remove", FLOWS, "remove(list(X, 2 * X), 1)", NULL },
  { "removeEmpty", FLOWS, "removeEmpty(target=X * [1; 0; 1], margin=\"rows\")", NULL },
  { "rep", FLOWS, "rep(X, times=2)", NULL },
  { "replace", FLOWS, "replace(X, X[1, 1], 0) + replace(X * 0 + 1, 1, X[1, 1])", NULL },
  { "rev", FLOWS, "rev(X)", NULL },
  { "rnorm", ERROR, "rnorm(3, mean=X[1, 1])", NULL },
  { "round", ZERO, "round(X * 3)", "a step function" },
  { "rowCumsum", FLOWS, "rowCumsum(X)", NULL },
  { "rowIndexMax", ZERO, "rowIndexMax(X)", "column indices" },
  { "rowIndexMin", ZERO, "rowIndexMin(X)", "column indices" },
  { "rowMaxs", FLOWS, "rowMaxs(X)", NULL },
  { "rowMeans", FLOWS, "rowMeans(X)", NULL },
  { "rowMins", FLOWS, "rowMins(X)", NULL },
  { "rowProds", FLOWS, "rowProds(X)", NULL },
  { "rowSds", FLOWS, "rowSds(X)", NULL },
  { "rowSums", FLOWS, "rowSums(X)", NULL },
  { "rowVars", FLOWS, "rowVars(X)", NULL },
  { "rowcumsum", FLOWS, "rowcumsum(X)", NULL },
  { "runif", ERROR, "runif(3, min=X[1, 1], max=10)", NULL },
  { "sample", ZERO, "sample(X[1, 1] * 0 + 3, size=2, seed=1)", "indices drawn at random: whole numbers" },
  { "sapply", ERROR, "sapply(X, function(v) v * 2)", NULL },
  { "save", ZERO, "save(D + \"/s.bin\", x=X)", "writes a file; gives NULL" },
  { "scale", FLOWS, "scale(X)", NULL },
  { "sd", FLOWS, "sd(X)", NULL },
  { "seq", FLOWS, "sum(seq(X[1, 1], 9, 0.5)) + seq(1, 2, X[1, 2] / 4)[1:2]", NULL },
  { "seq", ZERO, "seq(1, X[1, 1] + 5)", "to only sets the length" },
  { "seq_len", ZERO, "seq_len(X[1, 1] * 0 + 3)", "1..n: whole numbers" },
  { "set.seed", ZERO, "set.seed(X[1, 1] * 0 + 2)", "an effect; gives NULL" },
  { "sigmoid", FLOWS, "sigmoid(X)", NULL },
  { "sign", ZERO, "sign(X - 1)", "a step function" },
  { "signif", ZERO, "signif(X * 3, 2)", "a step function" },
  { "sin", FLOWS, "sin(X)", NULL },
  { "sinh", FLOWS, "sinh(X)", NULL },
  { "softmax", FLOWS, "softmax(X)", NULL },
  { "softplus", FLOWS, "softplus(X)", NULL },
  { "solve", FLOWS, "solve(X, [1; 2; 3]) + solve(2 * diag(matrix(1, rows=3, cols=1)), X[, 2])", NULL },
  { "sort", ERROR, "sort(X)", NULL },
  { "source", NONUM, NULL, "takes a path" },
  { "sparsity", ZERO, "sparsity(X)", "a fraction of counts" },
  { "sprintf", ZERO, "sprintf(\"%f\", X[1, 1])", "a string" },
  { "sqrt", FLOWS, "sqrt(X)", NULL },
  { "stop", NONUM, NULL, "takes a message and stops" },
  { "stop_gradient", CONST, "stop_gradient(X)", "zero by definition" },
  { "stopifnot", NONUM, NULL, "takes unevaluated expressions; gives NULL" },
  { "str", ZERO, "str(X)", "writes to standard output; gives NULL" },
  { "strsplit", NONUM, NULL, "takes strings; gives strings" },
  { "sub", NONUM, NULL, "takes strings; gives a string" },
  { "substr", ZERO, "substr(\"hello\", X[1, 1] * 0 + 2, 4)", "positions are whole numbers; gives a string" },
  { "sum", FLOWS, "sum(X)", NULL },
  { "summary", ERROR, "summary(X)", NULL },
  { "svd", FLOWS, "svd(X)", NULL },
  { "switch", NONUM, NULL, "takes unevaluated expressions; the chosen one is differentiated as written" },
  { "system.time", NONUM, NULL, "takes an unevaluated expression; gives seconds" },
  { "t", FLOWS, "t(X)", NULL },
  { "table", ZERO, "table(ceil(X[, 1]), [1; 1; 2])", "counts" },
  { "table", ERROR, "table([1; 2; 2], [1; 1; 2], X[, 1])", NULL },
  { "tail", ERROR, "tail(X, 2)", NULL },
  { "tan", FLOWS, "tan(X / 3)", NULL },
  { "tanh", FLOWS, "tanh(X)", NULL },
  { "text", ZERO, "{ plot(X[, 1], file=D + \"/tx.png\"); text(X[, 1], X[, 2]) }", "draws; gives NULL" },
  { "time", NONUM, NULL, "takes no argument" },
  { "title", NONUM, NULL, "takes text" },
  { "toString", ZERO, "toString(X)", "a string" },
  { "tolower", NONUM, NULL, "takes strings; gives a string" },
  { "toupper", NONUM, NULL, "takes strings; gives a string" },
  { "tr", FLOWS, "tr(X)", NULL },
  { "trace", FLOWS, "trace(X)", NULL },
  { "trace_grad", ERROR, "trace_grad(function(a) a^2, X[1, 1])", NULL },
  { "transformapply", NONUM, NULL, "takes frames and a spec" },
  { "transformcolmap", NONUM, NULL, "takes a spec and frames" },
  { "transformdecode", ERROR, "transformdecode(target=X, spec=\"{}\", meta=frame(0, rows=0, cols=3))", NULL },
  { "transformencode", NONUM, NULL, "takes a frame and a spec" },
  { "transformmeta", NONUM, NULL, "takes a spec and a directory of files" },
  { "tryCatch", NONUM, NULL, "takes unevaluated expressions; its value is differentiated as written" },
  { "typeof", ZERO, "typeof(X)", "a type query" },
  { "unique", ERROR, "unique(X)", NULL },
  { "upper.tri", FLOWS, "upper.tri(target=X, values=TRUE)", NULL },
  { "value_and_grad", FLOWS, "value_and_grad(function(Z) sum(Z^3))(X)", NULL },
  { "vapply", ERROR, "vapply(X, function(v) v * 2, 0)", NULL },
  { "var", FLOWS, "var(X)", NULL },
  { "warning", ZERO, "warning(X[1, 1])", "an effect; gives the text" },
  { "which", ZERO, "which(X - X[1, 1])", "indices" },
  { "which.max", ZERO, "which.max(X)", "a position" },
  { "which.min", ZERO, "which.min(X)", "a position" },
  { "write", ZERO, "write(X, D + \"/w.csv\")", "writes a file; gives NULL" },
  { "write.csv", ZERO, "write.csv(X, D + \"/w2.csv\")", "writes a file; gives NULL" },
  { "xor", ZERO, "xor(X[1, 1], 0)", "a boolean" },
};

typedef struct Job { const char *code; int status; char *out, *err; } Job;

/* Runs code on a fresh interpreter on a thread with a large stack; captures stdout/stderr. */
static void *job_main(void *p) {
  Job *j = p;
  Interp *I = interp_new();
  size_t no = 0, ne = 0;
  I->out = open_memstream(&j->out, &no);
  I->errf = open_memstream(&j->err, &ne);
  Source *src = source_new("audit.mls", j->code, strlen(j->code));
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

static char scratch[64];     /* the directory D of the calls that write files */
static bool quiet;           /* the self-test's expected failures are not reported */

/* Lines 1-3 set D, X0 and scal (the numbers of a value, weighted, lists included); line 4 is f. */
static void program(char *buf, size_t n, const Audit *au, const char *tail) {
  snprintf(buf, n,
           "D = \"%s\"\n"
           "X0 = rand(rows=3, cols=3, min=0.2, max=0.9, seed=11) + diag(matrix(1.5, rows=3, cols=1))\n"
           "scal = function(v) { if (is.list(v)) { s = 0; for (i in seq_len(length(v))) { s = s + i * scal(v[[i]]) }; "
           "return(s) }; if (!is.numeric(v) | is.logical(v)) return(0); if (length(v) == 0) return(0); "
           "sum(v * sin(matrix(seq_len(length(v)), rows=nrow(v), cols=ncol(v)))) }\n"
           "f = function(X) scal(%s)\n%s",
           scratch, au->call, tail);
}

/* The phrases of grad's "no derivative" errors. */
static bool says_not_differentiable(const char *err) {
  return strstr(err, "not differentiable") || strstr(err, "cannot differentiate") ||
         strstr(err, "cannot be differentiated") || strstr(err, "no derivative rule");
}

static int check(const Audit *au) {
  char code[4096], *out = NULL, *err = NULL;
  int failures = 0;
  if (au->kind == ERROR) {
    static const char *const tails[] = { "g = grad(f)(X0)\n", "g = jit(grad(f))(X0)\n" };
    for (int k = 0; k < 2; k++) {
      program(code, sizeof code, au, tails[k]);
      int st = run(code, &out, &err);
      bool located = k == 1 || strncmp(err, "audit.mls:4:", 12) == 0;
      if (st == 0 || !located || !strstr(err, "error:") || !says_not_differentiable(err)) {
        if (!quiet) print_error("%s: %s through `%s` should be a located 'not differentiable' error; status %d, stderr:\n%s\n",
                    au->name, k ? "jit(grad)" : "grad", au->call, st, err);
        failures++;
      }
      free(out);
      free(err);
    }
    return failures;
  }
  const char *tail = au->kind == CONST
    ? "print(max(abs(grad(f)(X0))))\n"
    : "print(gradcheck(f, X0))\ng = grad(f)(X0)\nprint(max(abs(g)))\nprint(max(abs(jit(grad(f))(X0) - g)))\n";
  program(code, sizeof code, au, tail);
  int st = run(code, &out, &err);
  double v[3] = { -1, -1, -1 };
  int nv = 0;
  const char *p = out ? out : "";
  for (const char *line = p; *line && nv < 3; ) {      /* the last printed numbers (effects print too) */
    const char *nl = strchr(line, '\n');
    char *end;
    double x = strtod(line, &end);
    if (end != line && (*end == '\n' || *end == '\0')) {
      if (au->kind == CONST) v[nv++] = x;
      else { v[0] = v[1]; v[1] = v[2]; v[2] = x; nv = nv < 3 ? nv + 1 : 3; }
    }
    if (!nl) break;
    line = nl + 1;
  }
  bool ok = st == 0;
  if (ok && au->kind == CONST) ok = nv == 1 && v[0] == 0;
  else if (ok) {
    double e = v[0], gmax = v[1], jd = v[2];
    ok = nv == 3 && e < 1e-5 && jd <= 1e-12 * (gmax > 1 ? gmax : 1);
    ok = ok && (au->kind == FLOWS ? gmax > 0 : gmax == 0);
  }
  if (!ok) {
    if (!quiet) print_error("%s (%s): `%s`: status %d, gradcheck error / max|grad| / |jit(grad) - grad| = %g %g %g\nstdout:\n%s\nstderr:\n%s\n",
                au->name, au->kind == FLOWS ? "the derivative should flow" : au->kind == ZERO ? "listed as zero" : "zero by definition",
                au->call, st, v[0], v[1], v[2], out, err);
    failures++;
  }
  free(out);
  free(err);
  return failures;
}

/* Every builtin has an entry, and its flags agree: grad sees through a BI_NODIFF builtin's
** arguments, so it must be listed as ZERO (or take no number); one with none of the flags that
** let a traced value in must be an ERROR (or take no number, or only functions whose results
** FLOW, as jit). */
static void test_every_builtin_is_audited(void **state) {
  (void)state;
  int failures = 0;
  size_t n = sizeof audits / sizeof audits[0];
  for (int i = 0; i < builtin_count; i++) {
    const Builtin *b = &builtin_table[i];
    bool any = false, zero = false, error = false, flows = false, num = false;
    for (size_t k = 0; k < n; k++) {
      if (strcmp(audits[k].name, b->name) != 0) continue;
      any = true;
      zero = zero || audits[k].kind == ZERO;
      error = error || audits[k].kind == ERROR;
      flows = flows || audits[k].kind == FLOWS;
      num = num || audits[k].kind != NONUM;
      if ((audits[k].kind == ZERO || audits[k].kind == NONUM || audits[k].kind == CONST) && !audits[k].why) {
        print_error("builtin '%s': an entry of kind %d needs its reason\n", b->name, audits[k].kind);
        failures++;
      }
    }
    if (!any) {
      print_error("builtin '%s' has no entry in tests/unit/test_grad_audit.c: say what grad does through it\n", b->name);
      failures++;
      continue;
    }
    if ((b->flags & BI_NODIFF) && num && !zero) {
      print_error("builtin '%s' is BI_NODIFF (grad sees through it) but not listed as ZERO\n", b->name);
      failures++;
    }
    if (!(b->flags & (BI_DIFF | BI_AD | BI_NODIFF | BI_SHAPE | BI_LAZY)) && num && !error && !flows) {
      print_error("builtin '%s' refuses traced values but is not listed as ERROR\n", b->name);
      failures++;
    }
  }
  for (size_t k = 0; k < n; k++)
    if (!bi_find(audits[k].name)) { print_error("entry '%s' is not a builtin\n", audits[k].name); failures++; }
  assert_int_equal(failures, 0);
}

static void test_every_entry_holds(void **state) {
  (void)state;
  int failures = 0, checked = 0;
  for (size_t k = 0; k < sizeof audits / sizeof audits[0]; k++) {
    if (audits[k].kind == NONUM) continue;
    failures += check(&audits[k]);
    checked++;
  }
  assert_true(checked > 150);
  assert_int_equal(failures, 0);
}

/* The check itself can fail: a builtin that drops the derivative (stop_gradient as one) listed
** as FLOWS, and one with a derivative listed as ZERO, are both caught. */
static void test_the_audit_catches_a_silent_zero(void **state) {
  (void)state;
  const Audit dropped = { "sum", FLOWS, "sum(stop_gradient(X))", NULL };
  const Audit not_zero = { "sum", ZERO, "sum(X)", "wrong on purpose" };
  const Audit no_error = { "sum", ERROR, "sum(X)", NULL };
  quiet = true;
  int a = check(&dropped), b = check(&not_zero), c = check(&no_error);
  quiet = false;
  assert_int_equal(a, 1);
  assert_int_equal(b, 1);
  assert_int_equal(c, 2);
}

static int make_scratch(void **state) {
  (void)state;
  snprintf(scratch, sizeof scratch, "/tmp/mls_grad_audit_XXXXXX");
  return mkdtemp(scratch) ? 0 : -1;
}

static int remove_scratch(void **state) {
  (void)state;
  DIR *d = opendir(scratch);
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", scratch, e->d_name);
    unlink(path);
  }
  closedir(d);
  rmdir(scratch);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_builtin_is_audited),
    cmocka_unit_test(test_every_entry_holds),
    cmocka_unit_test(test_the_audit_catches_a_silent_zero),
  };
  return cmocka_run_group_tests(tests, make_scratch, remove_scratch);
}
