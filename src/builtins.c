/*
** builtins.c — THE builtin table and the machinery around it: binding arguments to the
** signature (named and positional, R's matching), argument helpers with Lua-style messages,
** and help text. Bodies live in builtins_*.c. Keep the table sorted by name.
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"
#include "mem.h"
#include "print.h"
#include "staging/stage.h"

#define DIFF BI_DIFF
#define INV BI_INVISIBLE

/* grep ORDER BUILTIN: sorted by name; the doc's first line is the summary help() lists. */
const Builtin builtin_table[] = {
  { "Filter", bi_Filter, "Filter(f, x)", OP_NONE, BI_CALLS,
    "The items of x for which f gives TRUE, as R's Filter: a vector (a matrix: its elements,\nrow-major) gives a column vector, a list a list (names kept). f is a function or its name." },
  { "Map", bi_Map, "Map(f, ...)", OP_NONE, BI_CALLS,
    "A list of f(a[i], b[i], ...) over the items of the arguments (lists, or matrices' elements,\nrow-major), the shorter ones recycled, as R's Map; named arguments bind by name in f.\nThe names come from the first argument when it is a named list." },
  { "Rand", bi_rand, "Rand(rows=1, cols=1, min=0, max=1, pdf=\"uniform\", sparsity=1, seed=)", OP_NONE, BI_EFFECT | BI_AD,
    "DML's other name of rand: a random rows x cols matrix (see help(rand))." },
  { "Reduce", bi_Reduce, "Reduce(f, x, init=, right=FALSE, accumulate=FALSE)", OP_NONE, BI_CALLS,
    "Folds x (a list, or a matrix's elements row-major) with the two-argument function f from the\nleft, f(f(f(init, x1), x2), x3), or with right=TRUE from the right, f(x1, f(x2, f(x3, init))).\nWithout init the first (last) item starts. accumulate=TRUE gives every step: a column vector\nwhen all are numbers, else a list, as R. An empty x without init gives NULL." },
  { "abline", bi_abline, "abline(a=, b=, h=, v=, col=, lty=1, lwd=1)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Adds straight lines across the open plot (R's abline): y = a + b x (a alone: [intercept, slope]),\n"
    "horizontal lines at the values of h, vertical ones at v. On a log axis a and b are in log10 units,\n"
    "as R's untf=FALSE. col, lty and lwd as in lines()." },
  { "abs", bi_unary, "abs(x)", OP_ABS, DIFF | BI_AD, "Absolute value, elementwise." },
  { "acos", bi_unary, "acos(x)", OP_ACOS, DIFF | BI_AD, "Arc cosine (radians, in [0, pi]), elementwise; NaN outside [-1, 1]." },
  { "aggregate", bi_aggregate, "aggregate(target, groups, fn, ngroups=, weights=, order=)", OP_NONE, BI_AD, "Grouped statistics (DML's aggregate): row k is fn of the rows i of target with groups[i] = k.\nfn is \"sum\", \"count\", \"mean\", \"variance\" (divisor count - 1), \"centralmoment\" (with order=\n2, 3 or 4), \"min\" or \"max\". groups is a column of whole numbers >= 1 (NaN skips the row);\nthe result has max(groups) rows, or ngroups (larger groups dropped). The variance of\na group of one (total weight 1) is 0, as SystemDS. target is a column\nunless ngroups is given without weights (each column then separately). weights (counts)\nweight sum, count, mean, variance and moment. An empty group gives 0.\nUnder grad, sum and mean carry the gradient to target; other fns except count are refused." },
  { "all", bi_all, "all(..., na.rm=FALSE)", OP_NONE, BI_NODIFF,
    "TRUE when every element of every argument is TRUE (nonzero), as R. A NaN among TRUEs gives\nNaN (R's NA) unless na.rm=TRUE; all() of nothing is TRUE." },
  { "allreduce", bi_allreduce, "allreduce(X, op=\"sum\")", OP_NONE, DIFF | BI_AD,
    "The elementwise sum (op=\"sum\"), max or min of X over the MPI ranks, on every rank (docs/mpi.md).\nEvery rank must call it with the same op and shape (a located error on every rank otherwise). The reduction is\nrecursive halving then doubling, whose tree of additions is fixed by the number of ranks: the same bits on every\nrank and on every run with the same number of ranks. One process (no mpirun): X itself. A number stays a number.\nA GPU matrix's result stays on the GPU (device buffers to a CUDA-aware MPI, else staged through pinned host memory).\nUnder grad the adjoint of the sum is allreduce(adjoint) (the loss is the sum of the ranks'\nlosses); of max/min the same, kept where X holds the extreme. Not allowed in parfor(mode=REMOTE)." },
  { "any", bi_any, "any(..., na.rm=FALSE)", OP_NONE, BI_NODIFF,
    "TRUE when some element of some argument is TRUE (nonzero), as R. A NaN among FALSEs gives\nNaN (R's NA) unless na.rm=TRUE; any() of nothing is FALSE." },
  { "append", bi_append, "append(x, y)", OP_NONE, DIFF | BI_AD, "As SystemDS: a list x gets y as its last element (a list y of one element: that element,\nwith its name, so append(L, list(X=X)) adds X named X); two strings are joined with a newline\nbetween; matrices are cbind(x, y)." },
  { "apply", bi_apply, "apply(X, MARGIN, FUN, ...)", OP_NONE, BI_CALLS,
    "FUN applied to each row (MARGIN=1) or column (MARGIN=2) of matrix X, given as a column\nvector, with the arguments after FUN, as R's apply. Results that are all numbers give a column\nvector; vectors all of one length k give a k x n matrix (a column per row or column of X, as\nR); anything else a list." },
  { "applySchema", bi_applySchema, "applySchema(F, schema)", OP_NONE, BI_NODIFF,
    "F with its columns converted to the types of schema (a frame of type names as detectSchema\ngives, a string \"STRING,FP64\" or a list of names); a cell that does not fit its new type\n(\"abc\" as FP64) is an error naming its row and column (docs/frames.md)." },
  { "as.boolean", bi_as_logical, "as.boolean(x)", OP_NONE, BI_NODIFF, "DML's other name of as.logical: a number or string to TRUE/FALSE (nonzero is TRUE)." },
  { "as.double", bi_as_double, "as.double(x)", OP_NONE, DIFF | BI_AD,
    "Converts to a number: booleans to 1/0, strings by parsing, a 1x1 matrix to its value.\nOther matrices are returned unchanged (they already hold doubles)." },
  { "as.frame", bi_as_frame, "as.frame(x)", OP_NONE, 0,
    "Makes a frame (docs/frames.md): a matrix gives FP64 columns; a number, string or boolean\na 1x1 frame of that type; a list of one element as.frame of it, a list of scalars one row\n(a column per element, named after the list's names); a frame is returned as is.\nNot differentiable: under grad, a traced x is an error (docs/frames.md)." },
  { "as.integer", bi_as_integer, "as.integer(x)", OP_NONE, BI_NODIFF, "Truncates toward zero, elementwise (numbers stay doubles)." },
  { "as.list", bi_as_list, "as.list(L)", OP_NONE, BI_AD, "DML's list unnesting: a list holding one list gives that list; any other list is returned as\nit is (the results of a call become an ordinary list). Anything but a list is an error." },
  { "as.logical", bi_as_logical, "as.logical(x)", OP_NONE, BI_NODIFF, "Converts a number or string to TRUE/FALSE (nonzero is TRUE)." },
  { "as.matrix", bi_as_matrix, "as.matrix(x)", OP_NONE, DIFF | BI_AD, "Makes a number a 1x1 matrix; a matrix is returned as is, except that a sparse one\nis returned stored dense (as R's as.matrix of a Matrix package matrix; docs/sparse.md).\nA list of one element gives as.matrix of it; a longer list of numbers (or booleans) gives\nthem as a column, as DML's as.matrix of a list." },
  { "as.scalar", bi_as_scalar, "as.scalar(x)", OP_NONE, DIFF | BI_AD, "The number inside a 1x1 matrix (a number or a string is returned as is, and a list of one\nsuch element gives the element, as SystemDS's as.scalar(L[\"name\"]))." },
  { "asin", bi_unary, "asin(x)", OP_ASIN, DIFF | BI_AD, "Arc sine (radians, in [-pi/2, pi/2]), elementwise; NaN outside [-1, 1]." },
  { "assert", bi_assert, "assert(cond, msg=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Stops with 'assertion failed' (or msg) unless cond is TRUE (or nonzero)." },
  { "atan", bi_unary, "atan(x)", OP_ATAN, DIFF | BI_AD, "Arc tangent (radians, in (-pi/2, pi/2)), elementwise." },
  { "avg", bi_mean, "avg(x)", OP_NONE, DIFF | BI_AD, "DML's other name of mean: the arithmetic mean of all elements." },
  { "avg_pool", bi_max_pool, "avg_pool(input, input_shape, pool_size, stride, padding)", OP_AVG_POOL, DIFF | BI_AD,
    "Average pooling of N images (N x C*H*W) over pool_size=[Hf,Wf] windows: N x C*P*Q.\nThe geometry arguments are DML's: input_shape=[N,C,H,W], stride=[sh,sw], padding=[ph,pw]\n(zero padding), as matrices [a,b] or lists; each image is a row, NCHW row-major.\nThe output is P x Q per channel with P = (H + 2*ph - Hf) %/% sh + 1, Q likewise.\nAs SystemDS, every window's sum is divided by Hf*Wf: padding counts as zeros." },
  { "avg_pool_backward", bi_max_pool_backward, "avg_pool_backward(input, dout, input_shape, pool_size, stride, padding)", OP_AVG_POOL_BWD, DIFF | BI_AD,
    "The gradient of avg_pool: dout (N x C*P*Q) spread evenly back over each window: N x C*H*W.\nThe geometry arguments are DML's: input_shape=[N,C,H,W], stride=[sh,sw], padding=[ph,pw]\n(zero padding), as matrices [a,b] or lists; each image is a row, NCHW row-major.\nThe output is P x Q per channel with P = (H + 2*ph - Hf) %/% sh + 1, Q likewise.\ninput gives only the shape." },
  { "axis", bi_axis, "axis(side, at=, labels=TRUE, tick=TRUE, col=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Adds an axis to the open plot on side 1 (below), 2 (left), 3 (above) or 4 (right): ticks at the\n"
    "values of at (default: the ones plot() draws) labelled with the numbers as R formats them,\n"
    "or with labels (one string or number per tick; FALSE: none). tick=FALSE leaves out the line\n"
    "and ticks. plot(..., axes=FALSE) then axis() gives axes of your own." },
  { "barplot", bi_barplot, "barplot(height, names.arg=, col=, main=, xlab=, ylab=, ylim=, space=, beside=FALSE, border=, axes=TRUE, file=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Starts a new figure of bars (R's barplot): one per element of a vector, or one per column of a\n"
    "matrix, its rows stacked (beside=TRUE: side by side, one colour per row). Bars are 1 wide with\n"
    "space (0.2; beside: [0, 1]) before each; names.arg labels them. Colours: col (recycled), by\n"
    "default gray (a matrix: R's gray.colors(nrow)). Returns the bars' midpoints invisibly, as R.\n"
    "The figure is 640 x 480 (barplot's height is the data, so there is no size argument)." },
  { "barrier", bi_barrier, "barrier()", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Waits until every MPI rank has reached this barrier() (docs/mpi.md); nothing with one process.\nA rank that calls another collective, or ends its script, instead makes it a located error on\nevery rank; --mpi-timeout S bounds the wait." },
  { "batch_norm2d", bi_batch_norm2d, "batch_norm2d(X, gamma, beta, ema_mean, ema_var, mode, epsilon, mu)", OP_NONE, DIFF | BI_AD,
    "SystemDS's spatial batch normalization: [out, ema_mean_upd, ema_var_upd, cache_mean, cache_inv_var].\n"
    "X is N x C*H*W (each image a row, NCHW); gamma, beta, ema_mean and ema_var are C x 1.\n"
    "mode \"train\": mean and var are each channel's mean and uncorrected variance over its N*H*W\n"
    "cells, and ema_mean_upd = mu * ema_mean + (1 - mu) * mean (ema_var_upd likewise with var);\n"
    "mode \"test\": mean = ema_mean, var = ema_var, and the running values are returned unchanged.\n"
    "out = (X - mean) * cache_inv_var * gamma + beta per channel, cache_mean = mean and\n"
    "cache_inv_var = 1 / sqrt(var + epsilon). Written with ops: grad follows it exactly\n"
    "(through the batch statistics in train mode). nn/layers/batch_norm2d.dml calls it." },
  { "batch_norm2d_backward", bi_batch_norm2d_backward, "batch_norm2d_backward(X, dout, gamma, epsilon, cache_mean, cache_inv_var)", OP_NONE, DIFF | BI_AD,
    "The backward pass of batch_norm2d in train mode: [dX, dgamma, dbeta], as SystemDS computes them.\n"
    "X and dout are N x C*H*W; gamma, cache_mean and cache_inv_var C x 1 (batch_norm2d's caches).\n"
    "dbeta and dgamma are the channel sums of dout and dout * (X - mean) * cache_inv_var; dX is the\n"
    "chain rule through the batch's mean and variance, with the caches standing for them (epsilon\n"
    "is not used, as in SystemDS). With train-mode caches it equals grad of sum(out * dout)." },
  { "bcast", bi_bcast, "bcast(X, root=1)", OP_NONE, BI_EFFECT,
    "Rank root's X (a number, boolean, string or matrix) on every MPI rank (docs/mpi.md).\nEvery rank must call it with the same root (a located error on every rank otherwise); the\nothers' X is ignored (any value). One process: X. Not differentiable: under grad it is an error\n(bcast(stop_gradient(X)) is a constant)." },
  { "bias_add", bi_bias_add, "bias_add(input, bias)", OP_BIAS_ADD, DIFF | BI_AD,
    "Adds bias[c] to channel c of every image: input is N x C*H*W, bias is C x 1.\nThe channels are the equal column blocks of input, one per row of bias." },
  { "bias_multiply", bi_bias_add, "bias_multiply(input, bias)", OP_BIAS_MULTIPLY, DIFF | BI_AD,
    "Multiplies channel c of every image by bias[c]: input is N x C*H*W, bias is C x 1.\nThe channels are the equal column blocks of input, one per row of bias." },
  { "bitwAnd", bi_ew2, "bitwAnd(x, y)", OP_BITWAND, BI_NODIFF, "Bitwise and, elementwise (numbers broadcast), as SystemDS: each operand is made a 32-bit\ninteger first (truncated toward 0; NaN is 0; beyond the range, its nearest end).\nbitwAnd(12, 10) is 8. A number (or boolean) pair gives a number." },
  { "bitwOr", bi_ew2, "bitwOr(x, y)", OP_BITWOR, BI_NODIFF, "Bitwise or, elementwise, on 32-bit integers as bitwAnd: bitwOr(12, 10) is 14." },
  { "bitwShiftL", bi_ew2, "bitwShiftL(x, n)", OP_BITWSHIFTL, BI_NODIFF, "x shifted left by n bits, elementwise, on 32-bit integers as bitwAnd (n is taken mod 32, as\nJava): bitwShiftL(3, 4) is 48. A result that overflows to -2^31 is NaN (as SystemDS; R: NA)." },
  { "bitwShiftR", bi_ew2, "bitwShiftR(x, n)", OP_BITWSHIFTR, BI_NODIFF, "x shifted right by n bits, elementwise, on 32-bit integers as bitwAnd (n mod 32). Negative\nx shift in its sign bit, as SystemDS (bitwShiftR(-8, 1) is -4); R shifts them as unsigned." },
  { "bitwXor", bi_ew2, "bitwXor(x, y)", OP_BITWXOR, BI_NODIFF, "Bitwise exclusive or, elementwise, on 32-bit integers as bitwAnd: bitwXor(12, 10) is 6." },
  { "boxplot", bi_boxplot, "boxplot(x, names=, col=, main=, xlab=, ylab=, ylim=, range=1.5, file=, width=640, height=480, plot=TRUE)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Starts a new figure of box-and-whisker plots (R's boxplot) of a vector, each column of a\n"
    "matrix, or each vector of a list. Boxes span the hinges with the median across them; whiskers\n"
    "reach the most extreme values within range x the box's length (range=0: all), the rest are\n"
    "drawn as outliers. Returns list(stats=, n=, out=, group=) invisibly as R's boxplot.stats (stats:\n"
    "5 x groups: lower whisker, lower hinge, median, upper hinge, upper whisker)." },
  { "c", bi_c, "c(...)", OP_NONE, DIFF | BI_AD, "Combines numbers, booleans (1/0) and matrices into one column vector, as R's c().\nA matrix contributes its elements in row-major order (MLS's order, as matrix() fills and\nfor iterates), so c(t(X)) is R's column-major c(X). NULL arguments are skipped; c() is NULL.\nNamed arguments name the elements (c(a = 1, b = 2), names(), x[\"a\"]: docs/language.md section 16).\nc() of strings (or lists of strings) is a list of strings, MLS's character vector; numbers mixed\nwith strings are refused (use paste()). Differentiable: grad flows to every piece." },
  { "cat", bi_cat, "cat(..., sep=\" \")", OP_NONE, INV | BI_EFFECT | BI_NODIFF, "Writes its arguments to standard output joined by sep, with no newline added (R's cat):\nnumbers as print shows them (7 significant digits), strings unquoted, the elements of a\nmatrix one by one (row-major), the items of a list. cat(\"loss\", x, \"\\n\")." },
  { "cbind", bi_cbind, "cbind(...)", OP_NONE, DIFF | BI_AD, "Joins matrices (and numbers) side by side; row counts must match." },
  { "cdf", bi_cdf, "cdf(target, dist, mean=0, sd=1, rate=1, df=, df1=, df2=, lower.tail=TRUE)", OP_NONE, DIFF | BI_AD, "P[X <= target] for dist \"normal\" (mean, sd), \"exp\" (rate), \"chisq\" or \"t\" (df), \"f\" (df1, df2):\ncdf(target=q, dist=\"t\", df=5) is pt(target=q, df=5). lower.tail=FALSE gives P[X > q].\nDifferentiable in target for \"normal\" and \"exp\"; grad through the others is an error." },
  { "ceil", bi_unary, "ceil(x)", OP_CEIL, DIFF | BI_AD, "Smallest whole number not below x, elementwise." },
  { "ceiling", bi_unary, "ceiling(x)", OP_CEIL, DIFF | BI_AD, "DML's and R's name of ceil: smallest whole number not below x, elementwise." },
  { "centralMoment", bi_moment, "centralMoment(X, W=, k=)", OP_NONE, DIFF | BI_AD, "DML's other name of moment: the k-th central moment of a column vector, optionally weighted." },
  { "cholesky", bi_cholesky, "cholesky(A)", OP_NONE, DIFF | BI_AD, "Lower-triangular L with L %*% t(L) = A for symmetric positive definite A.\n"
    "R's chol gives the upper factor t(L). A not positive definite is an error naming the leading minor.\n"
    "Differentiable (grad, jvp): along symmetric perturbations; the gradient is symmetric." },
  { "colMaxs", bi_colMaxs, "colMaxs(X)", OP_COLMAXS, DIFF | BI_AD, "Largest element of each column: a 1 x ncol(X) row vector.\nNaN propagates; a matrix with empty columns (0 x n, n > 0) is an error." },
  { "colMeans", bi_colMeans, "colMeans(X)", OP_NONE, DIFF | BI_AD, "Mean of each column: a 1 x ncol(X) row vector.\ncolSums(X) / nrow(X): an empty column gives NaN, as R." },
  { "colMins", bi_colMins, "colMins(X)", OP_COLMINS, DIFF | BI_AD, "Smallest element of each column: a 1 x ncol(X) row vector.\nNaN propagates; a matrix with empty columns (0 x n, n > 0) is an error." },
  { "colProds", bi_colProds, "colProds(X)", OP_COLPRODS, DIFF | BI_AD, "Product of each column: a 1 x ncol(X) row vector (1 for an empty column)." },
  { "colSds", bi_colSds, "colSds(X)", OP_NONE, DIFF | BI_AD, "Sample standard deviation of each column: sqrt(colVars(X))." },
  { "colSums", bi_reduce, "colSums(X)", OP_COLSUMS, DIFF | BI_AD, "Sum of each column: a 1 x ncol(X) row vector." },
  { "colVars", bi_colVars, "colVars(X)", OP_NONE, DIFF | BI_AD, "Sample variance of each column (divisor nrow(X) - 1): a 1 x ncol(X) row vector.\nA column of one element gives 0, as SystemDS (R: NA; var() here gives NaN)." },
  { "colnames", bi_colnames, "colnames(F)", OP_NONE, BI_NODIFF, "The column names of frame F, as a 1 x ncol(F) frame of strings (DML)." },
  { "contains", bi_contains, "contains(target, pattern)", OP_NONE, BI_NODIFF, "TRUE when some cell of target equals pattern (a number); NaN matches NaN, as DML's contains." },
  { "conv2d", bi_conv2d, "conv2d(input, filter, input_shape, filter_shape, stride, padding, bias=)", OP_CONV2D, DIFF | BI_AD,
    "2-D convolution (cross-correlation, as DML) of N images (N x C*H*W) with F filters\n(filter: F x C*Hf*Wf, filter_shape=[F,C,Hf,Wf]): N x F*P*Q.\nbias (F x 1, optional) is then added to each filter's outputs, as bias_add does.\nThe geometry arguments are DML's: input_shape=[N,C,H,W], stride=[sh,sw], padding=[ph,pw]\n(zero padding), as matrices [a,b] or lists; each image is a row, NCHW row-major.\nThe output is P x Q per channel with P = (H + 2*ph - Hf) %/% sh + 1, Q likewise.\nComputed by im2col and a matrix product on the backend." },
  { "conv2d_backward_data", bi_conv2d_backward_data, "conv2d_backward_data(filter, dout, stride, padding, input_shape, filter_shape)", OP_CONV2D_BWD_DATA, DIFF | BI_AD,
    "The gradient of conv2d with respect to its input: from filter (F x C*Hf*Wf) and dout\n(N x F*P*Q), an N x C*H*W matrix.\nThe geometry arguments are DML's: input_shape=[N,C,H,W], stride=[sh,sw], padding=[ph,pw]\n(zero padding), as matrices [a,b] or lists; each image is a row, NCHW row-major.\nThe output is P x Q per channel with P = (H + 2*ph - Hf) %/% sh + 1, Q likewise." },
  { "conv2d_backward_filter", bi_conv2d_backward_filter, "conv2d_backward_filter(input, dout, stride, padding, input_shape, filter_shape)", OP_CONV2D_BWD_FILT, DIFF | BI_AD,
    "The gradient of conv2d with respect to its filter: from input (N x C*H*W) and dout\n(N x F*P*Q), an F x C*Hf*Wf matrix (summed over the images in order).\nThe geometry arguments are DML's: input_shape=[N,C,H,W], stride=[sh,sw], padding=[ph,pw]\n(zero padding), as matrices [a,b] or lists; each image is a row, NCHW row-major.\nThe output is P x Q per channel with P = (H + 2*ph - Hf) %/% sh + 1, Q likewise." },
  { "cos", bi_unary, "cos(x)", OP_COS, DIFF | BI_AD, "Cosine (radians), elementwise." },
  { "cosh", bi_unary, "cosh(x)", OP_COSH, DIFF | BI_AD, "Hyperbolic cosine, elementwise." },
  { "cov", bi_cov, "cov(X, Y, W=)", OP_NONE, DIFF | BI_AD, "Sample covariance of column vectors X and Y: sum((X - mean(X)) * (Y - mean(Y))) / (n - 1).\nWith weights W (counts): sum(W (X - mx)(Y - my)) / (sum(W) - 1), mx and my weighted means." },
  { "cpu", bi_cpu, "cpu(x)", OP_NONE, BI_AD, "A copy of x in the host's memory (a list: each element); x itself when it is there already.\nMatrices made from it afterwards are computed on the CPU. See gpu() and device()." },
  { "cummax", bi_cummax, "cummax(X)", OP_CUMMAX, DIFF | BI_AD, "Running maxima down each column (a row vector: along it), as DML's cummax.\nNaN propagates down its column. The derivative goes to the element each maximum came from\n(the latest on ties)." },
  { "cummin", bi_cummin, "cummin(X)", OP_CUMMIN, DIFF | BI_AD, "Running minima down each column (a row vector: along it), as DML's cummin.\nNaN propagates down its column. The derivative goes to the element each minimum came from\n(the latest on ties)." },
  { "cumprod", bi_cumprod, "cumprod(X)", OP_CUMPROD, DIFF | BI_AD, "Cumulative products down each column (a row vector: along it), as DML's colCumprod.\nA number gives itself; NaN propagates down its column." },
  { "cumsum", bi_cumsum, "cumsum(X)", OP_CUMSUM, DIFF | BI_AD, "Cumulative sums down each column (a row vector: along it), as DML's colCumsum.\nA number gives itself; NaN propagates down its column." },
  { "cumsumprod", bi_cumsumprod, "cumsumprod(X)", OP_CUMSUMPROD, DIFF | BI_AD, "DML's cumulative sum-product of an n x 2 matrix: the n x 1 Y with Y[i] = X[i,1] + X[i,2] * Y[i-1],\nY[0] = 0 (a linear recurrence: X[,2] are the decay factors)." },
  { "det", bi_det, "det(A)", OP_NONE, DIFF | BI_AD, "Determinant of a square matrix (LU factorization); 0 for a singular A, 1 for 0x0.\n"
    "A sparse A stays sparse: UMFPACK's LU (never a dense copy)." },
  { "detectSchema", bi_detectSchema, "detectSchema(F)", OP_NONE, BI_NODIFF,
    "The value types F's cells suggest, as a 1 x ncol(F) frame of type names: BOOLEAN (true/false),\nINT32 or INT64 (whole numbers), FP64 (other numbers, NaN, Inf), else STRING; NA cells say\nnothing, and a column of only NA is STRING." },
  { "dev.off", bi_dev_off, "dev.off()", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Finishes the open figure (R's name): writes it to its file now, or, under a front end that\n"
    "shows images (Jupyter), hands it over at the end of the cell. Returns the file name\n"
    "invisibly (NULL when no figure is open). Later lines(), points(), legend() need a new plot().\n"
    "A figure is also finished by the next plot() or hist(), and at the end of the script or session." },
  { "device", bi_device, "device(d=)", OP_NONE, BI_INVISIBLE | BI_NODIFF, "Where new matrices live: device() is \"cpu\" or \"gpu\"; device(\"gpu\") makes it the GPU (as --device gpu)\nand returns the previous one; device(X) tells where matrix X lives. Ops run where their\nmatrix operands live; a GPU matrix combined with a CPU one is read by the CPU. Without a CUDA\nbuild or device, device(\"gpu\") is the error \"no CUDA device available\"." },
  { "diag", bi_diag, "diag(X)", OP_DIAG, DIFF | BI_AD, "A vector becomes a diagonal matrix; a square matrix gives its diagonal as a column vector.\nA vector is n x 1 or 1 x n; a number or 1x1 matrix gives a 1x1 matrix (not R's identity)." },
  { "display", bi_display, "display(x)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Shows x now: in a Jupyter notebook as display data below the cell (a matrix as an HTML table\n"
    "with [i,] and [,j] labels, elided as at a terminal, with its text form beside it for front\n"
    "ends without HTML); elsewhere printed as print(x). Returns NULL invisibly." },
  { "do.call", bi_do_call, "do.call(what, args=)", OP_NONE, BI_CALLS,
    "Calls what (a function, or the name of one as a string) with the items of the list args as\nits arguments, named items by name, as R's do.call: do.call(\"sum\", list(X))." },
  { "dot", bi_dot, "dot(f, ..., file=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Writes the optimized graph of f staged for the arguments as Graphviz to file (render it with\n"
    "dot -Tsvg). When f returns a number, the graph of grad(f) (forward and backward) is written\n"
    "beside it. Returns the file name." },
  { "eigen", bi_eigen, "eigen(A)", OP_NONE, DIFF | BI_AD, "[values, vectors] = eigen(A) for symmetric A: eigenvalues (column, decreasing) and eigenvectors.\n"
    "The eigenvectors are the columns of vectors; each is signed so that its largest-magnitude\n"
    "entry is positive (the first of equal ones). e = eigen(A) gives the list e$values, e$vectors.\n"
    "Differentiable (grad, jvp) along symmetric perturbations; the gradient is symmetric. The\n"
    "eigenvectors of a repeated eigenvalue are not unique: grad through them there is an error." },
  { "eval", bi_eval, "eval(f, ...)", OP_NONE, BI_EVAL | DIFF | BI_AD,
    "DML's eval: calls the function named f (a string: a function defined by the script, a\nbuiltin, a stdlib builtin or \"ns::name\"; or a function value) with the other arguments.\nA single list argument is spread into f's arguments (its names bind by name), unless f's\nonly parameter is declared list. Gives f's first result; a number becomes a 1x1 matrix, as\nSystemDS. The call is an ordinary call of f: grad and jit see through it." },
  { "evalList", bi_evalList, "evalList(f, ...)", OP_NONE, BI_EVAL | DIFF | BI_AD,
    "As eval, but gives every result of f as a list named by f's declared results\n(evalList(\"f\", X)[\"B\"]); a function without declared results gives a list of one." },
  { "exists", bi_exists, "exists(name)", OP_NONE, BI_EFFECT | BI_NODIFF, "TRUE when a variable or builtin of that name (a string) exists." },
  { "exp", bi_unary, "exp(x)", OP_EXP, DIFF | BI_AD, "e to the power x, elementwise." },
  { "explain", bi_explain, "explain(f, ...)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Stages f for the arguments after it and prints the graph before and after optimization: each\n"
    "node with its op, inputs, shape and line, what each optimization did, and the peak bytes of\n"
    "intermediate values. Returns, invisibly, list(before=, after=) with the node counts. f runs\n"
    "once while staging, so its effects happen." },
  { "expm1", bi_unary, "expm1(x)", OP_EXPM1, DIFF | BI_AD, "exp(x) - 1, elementwise, accurate where x is near 0 (expm1(1e-10) is 1.00000000005e-10,\nwhere exp(1e-10) - 1 keeps seven digits); -1 at -Inf. Its derivative is exp(x)." },
  { "floor", bi_unary, "floor(x)", OP_FLOOR, DIFF | BI_AD, "Largest whole number not above x, elementwise." },
  { "format", bi_format, "format(x, digits=7, nsmall=0, width=0, justify=\"left\")", OP_NONE, BI_NODIFF,
    "The text of x as R's format gives it: numbers to digits significant digits, at least nsmall\ndecimals in fixed notation, padded on the left to width; a vector (a matrix, row-major) gives\na list of strings formatted in common (one width, one number of decimals), where R gives a\ncharacter vector. A string is padded on the right to width (justify=\"right\": on the left)." },
  { "frame", bi_frame, "frame(data, rows=, cols=, schema=, colnames=)", OP_NONE, 0,
    "A rows x cols frame (DML's constructor): data is one value filling every cell, or a list,\nmatrix or frame with one value per cell, row-major. schema gives the column types (a string\n\"STRING,FP64,...\", a list of type names or a frame of them: STRING, INT64, INT32, FP64, FP32,\nBOOLEAN); every column is STRING without it. colnames: a list of names (default C1, C2, ...).\nNot differentiable: under grad, traced data is an error (docs/frames.md)." },
  { "gc", bi_gc, "gc()", OP_NONE, BI_EFFECT | BI_NODIFF,
    "Runs the cycle collector now and returns how many objects (lists, functions and function\n"
    "environments) it freed. Memory is freed as soon as nothing refers to it; what that leaves\n"
    "are cycles (a function stored in the environment it captured, through a list or a grad or\n"
    "jit function), which the collector also frees by itself after every ~10000 new objects.\n"
    "Unlike R's gc() it returns a count, not a table of memory use." },
  { "gpu", bi_gpu, "gpu(x)", OP_NONE, BI_AD, "A copy of x in GPU memory (a list: each element); x itself when it is there already.\nOps on GPU matrices run on the GPU (cuBLAS for %*%, CUDA kernels for the rest) and their\nresults stay there until printed, written or combined with a CPU matrix. Without a CUDA\nbuild or device: the error \"no CUDA device available\". See cpu(), device()." },
  { "grad", bi_grad, "grad(f, argnum=1)", OP_NONE, BI_DIFF | BI_AD,
    "A function with f's parameters that returns the derivative of f with respect to argument\n"
    "argnum (a vector of positions gives a list). f must return a number or 1x1 matrix; the\n"
    "derivative has the argument's structure. Nested grad(grad(f)) differentiates again." },
  { "grad_allreduce", bi_grad_allreduce, "grad_allreduce(df, args, weight=1, bucket=65536)", OP_NONE, DIFF | BI_AD | BI_EFFECT,
    "df(args[1], args[2], ...) for df a grad(f), its gradient times weight summed over the MPI ranks\n"
    "(docs/mpi.md), as allreduce(weight * g) of each part would give it, bit for bit. The reduction runs in\n"
    "buckets of at most `bucket` numbers, each started during df's backward pass as soon as its parameters'\n"
    "gradients are final (nn::dp_grad uses it). A collective: every rank calls it with the same\n"
    "parameter shapes and bucket (a located error on every rank otherwise). Parameters all on the GPU: the\n"
    "gradient is on the GPU too (the buckets as for allreduce). One process: weight * df(...)." },
  { "gradcheck", bi_gradcheck, "gradcheck(f, x)", OP_NONE, 0,
    "Compares grad(f)(x) with central finite differences; returns the largest relative error.\n"
    "Its result is not differentiable: under an outer grad, a traced x is an error." },
  { "grepl", bi_grepl, "grepl(pattern, x, ignore.case=FALSE, fixed=FALSE, perl=FALSE)", OP_NONE, BI_NODIFF,
    "TRUE where the regular expression pattern matches x, as R's grepl: a string gives TRUE or\nFALSE, a list of strings a logical column vector. POSIX extended regular expressions (see\nhelp(gsub)); fixed=TRUE matches pattern as plain text." },
  { "gsub", bi_gsub, "gsub(pattern, replacement, x, ignore.case=FALSE, fixed=FALSE, perl=FALSE)", OP_NONE, BI_NODIFF,
    "x with every match of the regular expression pattern replaced, as R's gsub; \\\\1 .. \\\\9 in\nreplacement are the groups. x is a string or a list of strings (a list comes back). Patterns\nare POSIX extended regular expressions (regcomp), which R's default (TRE) extends: no \\\\d, \\\\w,\n\\\\s (use [0-9], [[:alnum:]_], [[:space:]]), no lazy quantifiers; perl=TRUE is an error.\nfixed=TRUE matches pattern as plain text." },
  { "head", bi_head, "head(x, n=6)", OP_NONE, 0,
    "The first n rows of matrix x (a column vector: its first n elements), or the first n items\nof a list, as R's head; a negative n leaves out the last -n. A number or string is itself." },
  { "help", bi_help, "help(topic=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Shows the signature and text of a builtin or user function; help() lists every builtin." },
  { "help.search", bi_help_search, "help.search(pattern)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Lists the help pages whose name or text contains pattern (a string, matched without regard\n"
    "to case): builtins, keywords and operators, and builtins written in MLS, each with its first\n"
    "line. At the REPL, ??word is help.search(\"word\"), as in R." },
  { "hessian", bi_hessian, "hessian(f)", OP_NONE, 0,
    "For f from an n x 1 vector to a number, a function giving the n x n Hessian\n"
    "(the Jacobian of grad(f)). The result is not differentiated again." },
  { "hist", bi_hist, "hist(x, breaks=, main=, xlab=, ylab=, col=\"lightgray\", xlim=, ylim=, file=, width=640, height=480, plot=TRUE)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Histogram of the finite values of vector x, as R's hist: a new figure of bars filled with col.\n"
    "breaks: a number of cells (default Sturges' ceiling(log2(n) + 1)), made round by pretty(), or\n"
    "the vector of break points (increasing, spanning the data). Cells are right-closed (a, b], the\n"
    "first also holds its left end. Returns, invisibly, list(breaks=, counts=, mids=, density=);\n"
    "plot=FALSE only computes it. main=, file=, width=, height= as plot()." },
  { "icdf", bi_icdf, "icdf(target, dist, mean=0, sd=1, rate=1, df=, df1=, df2=)", OP_NONE, DIFF | BI_AD, "The quantile q with P[X <= q] = target for dist \"normal\", \"exp\", \"chisq\", \"t\" or \"f\"\n(parameters as cdf): icdf(target=p, dist=\"normal\") is qnorm(target=p).\nDifferentiable in target for \"normal\" and \"exp\"; grad through the others is an error." },
  { "identity", bi_identity, "identity(x)", OP_NONE, DIFF | BI_AD, "Returns x." },
  { "ifdef", bi_ifdef, "ifdef(value, default)", OP_NONE, BI_IFDEF | DIFF | BI_AD,
    "ifdef($k, d) is the command-line value $k when it was given, else d." },
  { "ifelse", bi_ifelse, "ifelse(test, yes, no)", OP_IFELSE, DIFF | BI_AD, "Elementwise choice: yes where test is nonzero, else no (numbers broadcast).\nNumbers and 1x1 matrices broadcast; other matrices must have one shape. A NaN test gives NaN.\nWith no matrix argument the chosen argument itself is returned (any value).\nWith a string (or a list of strings, c(\"a\", \"b\")) for yes or no the result is a list of strings,\none per element of test (row-major), numbers made text and yes/no recycled as R; an NA test gives NA." },
  { "image", bi_image, "image(x, y=, z=, zlim=, xlim=, ylim=, col=, main=, xlab=, ylab=, axes=TRUE, key=TRUE, file=, width=640, height=480)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Starts a new figure of coloured cells (R's image), a heatmap: image(Z) draws Z[i, j] at x = (i-1)/(nrow-1),\n"
    "y = (j-1)/(ncol-1) (R's orientation: rows along x, the first at the left; image(t(Z[n:1, ])) shows Z\n"
    "as it prints); image(x, y, Z) at the given cell centres or edges. Values are cut into the colours of col\n"
    "(a list; default R's hcl.colors(12, \"YlOrRd\", rev=TRUE)) evenly over zlim (default: the range);\n"
    "NaN and values outside zlim are not drawn. key=TRUE adds a colour key right of the plot." },
  { "interQuartileMean", bi_interQuartileMean, "interQuartileMean(X, W=)", OP_NONE, DIFF | BI_AD, "DML's interquartile mean of column vector X: the mean of the values at positions\nceil(n/4)+1 .. ceil(3n/4) of sorted X (n = sum(W) with weights W, counts); 0 when n < 2\nleaves that range empty. Its derivative is each element's share of that mean." },
  { "inv", bi_inv, "inv(A)", OP_NONE, DIFF | BI_AD, "Inverse of a square matrix (LAPACK LU); a singular or computationally singular A is an error.\n"
    "A sparse A stays sparse: UMFPACK's LU, one solve a row; the result is sparse when its nonzeros\n"
    "are few enough (the format rule), else dense." },
  { "inverse", bi_inv, "inverse(A)", OP_NONE, DIFF | BI_AD, "DML's other name of inv: the inverse of a square matrix." },
  { "is.character", bi_is_type, "is.character(x)", OP_NONE, BI_SHAPE, "TRUE when x is a string." },
  { "is.finite", bi_is_inf, "is.finite(x)", OP_NONE, BI_NODIFF, "1 where x is neither Inf, -Inf, NaN nor NA, else 0 (elementwise; TRUE/FALSE for a number), as R." },
  { "is.frame", bi_is_type, "is.frame(x)", OP_NONE, BI_SHAPE, "TRUE when x is a frame." },
  { "is.function", bi_is_type, "is.function(x)", OP_NONE, BI_SHAPE, "TRUE when x is a function or builtin." },
  { "is.infinite", bi_is_inf, "is.infinite(x)", OP_NONE, BI_NODIFF, "1 where x is Inf or -Inf, else 0 (elementwise; TRUE/FALSE for a number)." },
  { "is.list", bi_is_type, "is.list(x)", OP_NONE, BI_SHAPE, "TRUE when x is a list." },
  { "is.logical", bi_is_type, "is.logical(x)", OP_NONE, BI_SHAPE, "TRUE when x is TRUE or FALSE." },
  { "is.matrix", bi_is_type, "is.matrix(x)", OP_NONE, BI_SHAPE, "TRUE when x is a matrix (a number is not)." },
  { "is.na", bi_is_na, "is.na(x)", OP_NONE, BI_NODIFF, "1 where x is NA or NaN, else 0 (elementwise; TRUE/FALSE for a number), as R." },
  { "is.nan", bi_is_na, "is.nan(x)", OP_NONE, BI_NODIFF, "1 where x is NaN but not NA, else 0 (elementwise; TRUE/FALSE for a number), as R." },
  { "is.null", bi_is_type, "is.null(x)", OP_NONE, BI_SHAPE, "TRUE when x is NULL." },
  { "is.numeric", bi_is_type, "is.numeric(x)", OP_NONE, BI_SHAPE, "TRUE when x is a number or a matrix." },
  { "isInf", bi_is_inf, "isInf(x)", OP_NONE, BI_NODIFF, "DML's other name of is.infinite: 1 where x is Inf or -Inf, else 0." },
  { "isNA", bi_is_na, "isNA(x)", OP_NONE, BI_NODIFF, "DML's other name of is.na: 1 where x is NaN, else 0 (TRUE/FALSE for a number)." },
  { "isNaN", bi_is_na, "isNaN(x)", OP_NONE, BI_NODIFF, "DML's other name of is.nan: 1 where x is NaN but not NA, else 0 (TRUE/FALSE for a number)." },
  { "jacobian", bi_jacobian, "jacobian(f)", OP_NONE, 0,
    "For f from an n x 1 vector to an m x 1 vector, a function giving the m x n Jacobian\n"
    "(one reverse pass per output). The result is not differentiated again." },
  { "jit", bi_jit, "jit(f, cache=8)", OP_NONE, 0,
    "A function with f's signature that runs f staged: its first call for given argument types and\n"
    "shapes runs f once while recording a dataflow graph, optimizes it (see explain) and caches it;\n"
    "later calls with the same types and shapes run the optimized graph. Numbers and matrices are\n"
    "traced; booleans, strings and functions are part of the cache key. Variables read from outside\n"
    "f are read again at every call. print, write, rand and other effects happen at every call, in\n"
    "order. An if or while on a computed value splits f: its straight-line code between such\n"
    "control flow runs as staged blocks, the control flow eagerly. What cannot be staged (an index\n"
    "computed from the arguments) runs eagerly; explain(f, ...) says what and why.\n"
    "The cache keeps the cache most recently used graphs (8 by default); explain(jf) lists them, and\n"
    "--log-compiles (or MLS_LOG_COMPILES=1) prints every trace and drop with its reason." },
  { "jvp", bi_jvp, "jvp(f, x, v)", OP_NONE, BI_DIFF | BI_AD,
    "[value, tangent] = jvp(f, x, v): f(x) and the derivative of f at x along v (v has x's shape),\n"
    "computed in one forward pass with dual numbers (forward mode)." },
  { "lapply", bi_lapply, "lapply(X, FUN, ...)", OP_NONE, BI_CALLS,
    "A list of FUN(x, ...) for each item x of X (a list's items, a matrix's elements row-major),\nas R's lapply; names are kept. FUN is a function or its name (\"sqrt\")." },
  { "legend", bi_legend, "legend(pos=\"topright\", labels=, col=, lty=, pch=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Adds a legend to the open figure: pos is \"topright\", \"topleft\", \"bottomright\", \"bottomleft\",\n"
    "\"top\", \"bottom\", \"left\", \"right\" or \"center\"; labels a string or list of strings.\n"
    "col, lty and pch give each label's sample (a list or vector is recycled over the labels):\n"
    "a line of type lty (the default, 1, unless pch is given; 0: none) and/or a point symbol pch\n"
    "(NaN: none). legend(list(\"a\", \"b\")) alone puts the labels at the top right." },
  { "length", bi_length, "length(x)", OP_NONE, BI_SHAPE, "Number of elements of a matrix or list (1 for a number or string)." },
  { "lines", bi_lines, "lines(x, y=, col=, lwd=1, lty=1, type=\"l\")", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Adds a line through the points (x[i], y[i]) to the open figure (lines(y): x = 1..n), in its\n"
    "coordinates (what falls outside is clipped). lty: 1 solid, 2 dashed, 3 dotted, 4 dot-dash,\n"
    "5 long dash, 6 two-dash, 0 none; a NaN or Inf value breaks the line. type as plot()." },
  { "list", bi_list, "list(...)", OP_NONE, DIFF | BI_AD, "A list of the arguments; named arguments become named elements." },
  { "load", bi_load, "load(path)", OP_NONE, BI_EFFECT | BI_NODIFF, "Reads a checkpoint written by save() and returns its values as a named list.\nA truncated or corrupt file (checked with its CRC-32), a name given twice or not UTF-8,\nis an error saying what is wrong." },
  { "log", bi_log, "log(x, base=)", OP_LOG, DIFF | BI_AD, "Natural logarithm, or logarithm to base; elementwise. log(-1) is NaN." },
  { "log1p", bi_unary, "log1p(x)", OP_LOG1P, DIFF | BI_AD, "log(1 + x), elementwise, accurate where x is near 0 (log1p(1e-10) is 1e-10, where\nlog(1 + 1e-10) loses six digits); NaN below -1, -Inf at -1. Its derivative is 1 / (1 + x)." },
  { "logit", bi_unary, "logit(p)", OP_LOGIT, DIFF | BI_AD, "The log-odds log(p / (1 - p)), elementwise (R's qlogis(p)): the inverse of sigmoid; -Inf at 0,\nInf at 1, NaN outside [0, 1]. Its derivative is 1 / (p (1 - p))." },
  { "logsoftmax", bi_logsoftmax, "logsoftmax(X)", OP_LOGSOFTMAX, DIFF | BI_AD, "Row-wise log(softmax(X)), computed stably as X - max - log(sum(exp(X - max))): finite\nwhere softmax underflows to 0. A number gives 0." },
  { "lower.tri", bi_lower_tri, "lower.tri(target, diag=FALSE, values=FALSE)", OP_NONE, DIFF | BI_AD, "The lower triangle of target (below the diagonal; diag=TRUE includes it), as DML:\n1 there and 0 elsewhere, or with values=TRUE target's values there and 0 elsewhere.\nAny shape; the result has target's shape." },
  { "ls", bi_ls, "ls()", OP_NONE, INV | BI_EFFECT | BI_VARS | BI_NODIFF, "Lists the variables in scope with their types and shapes." },
  { "map", bi_map, "map(F, fn, margin=0)", OP_NONE, BI_NODIFF,
    "Applies the Java lambda fn (\"x -> x.toLowerCase()\") to every cell of frame F: a STRING frame\nof the results, NA cells left NA. MLS interprets the subset the SystemDS builtins use\n(docs/frames.md lists the methods); other forms, and margin=1, are located errors." },
  { "matplot", bi_matplot, "matplot(x, y=, type=\"p\", col=, lty=, pch=, lwd=1, main=, xlab=, ylab=, xlim=, ylim=, file=, width=640, height=480, log=\"\", cex=1)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Starts a new figure of the columns of matrix y against x (R's matplot): a vector of nrow(y)\n"
    "values, a matrix of y's shape (column by column), or 1..nrow(y) for matplot(y). Column j gets\n"
    "colour j, line type j and symbol j of col (default palette 1-6), lty (1-5) and pch (\"1\", \"2\",\n"
    "... \"9\", \"0\", \"a\" ...), recycled." },
  { "matrix", bi_matrix, "matrix(v, rows=, cols=, byrow=TRUE)", OP_NONE, DIFF | BI_AD,
    "Builds a rows x cols matrix from v: a number or 1x1 matrix (filled, as R recycles it),\n"
    "a string of numbers \"1 2 3 4\", or a matrix to reshape (row-major; byrow=FALSE fills\n"
    "column by column as R does). Either rows or cols may be left out when v has the elements;\n"
    "a filling value with one of them gives a row or a column." },
  { "max", bi_minmax, "max(x, y=, ...)", OP_MAX2, DIFF | BI_AD | BI_NARM, "Largest element of x, or elementwise maximum of x and y (more arguments fold left, as DML).\nNaN propagates; max of an empty matrix is an error (R warns and gives -Inf)." },
  { "max_pool", bi_max_pool, "max_pool(input, input_shape, pool_size, stride, padding)", OP_MAX_POOL, DIFF | BI_AD,
    "Max pooling of N images (N x C*H*W) over pool_size=[Hf,Wf] windows: N x C*P*Q.\nThe geometry arguments are DML's: input_shape=[N,C,H,W], stride=[sh,sw], padding=[ph,pw]\n(zero padding), as matrices [a,b] or lists; each image is a row, NCHW row-major.\nThe output is P x Q per channel with P = (H + 2*ph - Hf) %/% sh + 1, Q likewise.\nAs SystemDS, padded cells are ignored (not zeros) and NaN propagates." },
  { "max_pool_backward", bi_max_pool_backward, "max_pool_backward(input, dout, input_shape, pool_size, stride, padding)", OP_MAX_POOL_BWD, DIFF | BI_AD,
    "The gradient of max_pool: each entry of dout (N x C*P*Q) goes to the first largest cell\n(row-major) of its window of input: N x C*H*W.\nThe geometry arguments are DML's: input_shape=[N,C,H,W], stride=[sh,sw], padding=[ph,pw]\n(zero padding), as matrices [a,b] or lists; each image is a row, NCHW row-major.\nThe output is P x Q per channel with P = (H + 2*ph - Hf) %/% sh + 1, Q likewise." },
  { "mean", bi_mean, "mean(x)", OP_NONE, DIFF | BI_AD | BI_NARM, "Arithmetic mean of all elements; NaN for an empty matrix." },
  { "median", bi_median, "median(X, W=)", OP_NONE, DIFF | BI_AD | BI_NARM, "Median of column vector X, optionally weighted by W (counts): the middle value, or the mean of\nthe two middle values when the total weight is even (as R). Its derivative goes to those\nelements (W is not differentiated); staged code runs it eagerly." },
  { "min", bi_minmax, "min(x, y=, ...)", OP_MIN2, DIFF | BI_AD | BI_NARM, "Smallest element of x, or elementwise minimum of x and y (more arguments fold left, as DML).\nNaN propagates; min of an empty matrix is an error (R warns and gives Inf)." },
  { "moment", bi_moment, "moment(X, W=, k=)", OP_NONE, DIFF | BI_AD, "The k-th central moment (k = 2, 3 or 4) of column vector X: sum((X - mean)^k) / n.\nmoment(X, k) or moment(X, W, k) with weights W (counts): sum(W * (X - mu)^k) / sum(W),\nmu = sum(W * X) / sum(W). Divisor n, not n - 1 (moment(X, 2) is not var(X))." },
  { "mpi_rank", bi_mpi_rank, "mpi_rank()", OP_NONE, BI_NODIFF,
    "This process's MPI rank, 1 to mpi_size() (1-based, as R and DML count; docs/mpi.md).\n1 when mls runs as one process (not started by mpirun, or built without MPI)." },
  { "mpi_size", bi_mpi_size, "mpi_size()", OP_NONE, BI_NODIFF,
    "The number of MPI ranks running this script (mpirun -np N mls script.mls; docs/mpi.md); 1\nwhen mls runs as one process." },
  { "mtext", bi_mtext, "mtext(text, side=3, line=0, adj=0.5, at=, cex=1, col=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Writes text in a margin of the open plot (R's mtext): side 1 below, 2 left, 3 above, 4 right;\n"
    "line is the margin line counted out from the plot's edge (the text is centred on it); adj 0 puts\n"
    "it at the start of the side, 0.5 the middle, 1 the end; at places it at that x (or y) value." },
  { "names", bi_names, "names(x)", OP_NONE, BI_NODIFF,
    "The names of a list's elements, as a list of strings (\"\" when unnamed); of a vector made\n"
    "by c(a = 1, b = 2) or given names(x) = ..., its element names as a list of strings (NULL when\n"
    "it has none). names(x) = value (or <-) sets them: a string, a list of strings, or NULL." },
  { "names<-", bi_names_set, "names<-(x, value)", OP_NONE, 0,
    "What names(x) = value calls (R's replacement function): a copy of x, a list, a vector or a\n"
    "number, whose elements are named by value (a string, a list of strings such as c(\"a\", \"b\"),\n"
    "or NULL to drop the names). A shorter value leaves the rest named \"<NA>\", as R. Not\ndifferentiable: a value grad traces is a located error." },
  { "nchar", bi_nchar, "nchar(x)", OP_NONE, BI_NODIFF, "The number of characters of a string (UTF-8 code points, as R); of a number, of its text.\nA list of strings gives a column vector of their counts." },
  { "ncol", bi_ncol, "ncol(X)", OP_NONE, BI_SHAPE, "Number of columns (1 for a number)." },
  { "nnz", bi_nnz, "nnz(X)", OP_NONE, BI_NODIFF,
    "The number of nonzero elements of X (NaN counts as nonzero), whether X is stored dense or\nsparse (docs/sparse.md). A number counts as a 1x1 matrix." },
  { "nrow", bi_nrow, "nrow(X)", OP_NONE, BI_SHAPE, "Number of rows (1 for a number)." },
  { "order", bi_order, "order(target, by=1, decreasing=FALSE, index.return=FALSE)", OP_NONE, BI_AD, "Sorts the rows of target by column by (stable); index.return=TRUE gives the row indices.\nby may be a vector of columns (the first most significant). NaN sorts last either way, as R.\nindex.return=TRUE returns the permutation as a column vector of 1-based row indices.\nAs DML, not R: order(c(3, 1, 2)) gives the sorted values 1 2 3; R's permutation 2 3 1 is\norder(x, index.return = TRUE) (docs/language.md section 16)." },
  { "outer", bi_outer, "outer(a, b, op=\"*\")", OP_NONE, DIFF | BI_AD, "Matrix of op(a[i], b[j]) for column vector a and row vector b; op is \"+\", \"-\", \"*\", \"/\", \"^\", a comparison, \"min\" or \"max\".\nVectors of either orientation are accepted; the result is length(a) x length(b).\nAlso \"%%\", \"%/%\", \"&\" and \"|\": any elementwise binary operator. Differentiable in a and b." },
  { "par", bi_par, "par(mfrow=, mfcol=, mar=, oma=, cex=, las=, bg=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "R's graphics parameters for the next plots, kept until changed (docs/plots.md, Layout):\n"
    "mfrow=[r, c] a page of r x c plots filled by rows, mfcol=[r, c] by columns (each starts a new\n"
    "figure and sets cex to 1, 0.83 for 2 x 2, 0.66 with 3 or more rows or columns); mar= the\n"
    "margins of each plot in lines, [bottom, left, top, right] (default [5.1, 4.1, 4.1, 2.1]);\n"
    "oma= the outer margins of the page in lines (default 0s); cex= the size of text, symbols and\n"
    "margin lines (default 1); las= the axis labels: 0 parallel to the axis, 1 horizontal,\n"
    "2 perpendicular, 3 vertical; bg= the page's colour (default \"white\").\n"
    "Returns the old values of the settings given as a list, invisibly, so op = par(mar=[2, 2, 1, 1])\n"
    "... par(op) restores them; par() alone returns all of them, par(\"mar\") the one value." },
  { "paste", bi_paste, "paste(..., sep=\" \")", OP_NONE, BI_NODIFF,
    "Joins the text of its arguments with sep (numbers to 15 significant digits)." },
  { "paste0", bi_paste0, "paste0(...)", OP_NONE, BI_NODIFF,
    "Joins the text of its arguments with nothing between (paste with sep=\"\")." },
  { "pchisq", bi_pchisq, "pchisq(target, df, lower.tail=TRUE)", OP_NONE, DIFF | BI_AD, "Chi-squared distribution function with df degrees of freedom (elementwise); lower.tail=FALSE gives P[X > q].\nNot differentiable: grad through it is an error." },
  { "pexp", bi_pexp, "pexp(target, rate=1, lower.tail=TRUE)", OP_NONE, DIFF | BI_AD, "Exponential distribution function 1 - exp(-rate * target) (elementwise); lower.tail=FALSE gives P[X > q].\nDifferentiable in target." },
  { "pf", bi_pf, "pf(target, df1, df2, lower.tail=TRUE)", OP_NONE, DIFF | BI_AD, "F distribution function with df1 and df2 degrees of freedom (elementwise); lower.tail=FALSE gives P[X > q].\nNot differentiable: grad through it is an error." },
  { "plot", bi_plot, "plot(x, y=, type=\"p\", main=, xlab=, ylab=, col=, xlim=, ylim=, file=, width=640, height=480, lwd=1, lty=1, pch=1, log=\"\", cex=1, axes=TRUE, bg=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Starts a new figure (R's base graphics, drawn with cairo; docs/plots.md) showing y against x,\n"
    "vectors of one length (plot(y): x = 1..n). type \"p\" points, \"l\" a line, \"b\" both, \"n\" axes\n"
    "only. The axes span xlim and ylim (default: the data) plus 4%, with pretty tick labels; col is\n"
    "a colour name, \"#RRGGBB\" or a palette number. The figure goes to file (.png, .svg or .pdf;\n"
    "width x height pixels or points) or, by default, mlsplot001.png, mlsplot002.png... in the\n"
    "working directory, named when written. It is written when finished (the next plot() or\n"
    "hist(), dev.off(), the end of the script) and, in the REPL, after each input; under Jupyter\n"
    "it is shown below the cell instead. lines(), points(), abline(), text(), mtext(), axis(),\n"
    "legend() and title() add to it; par(mfrow=) puts several plots on one figure. plot(M) of an\n"
    "n x 2 matrix plots its columns. log=\"x\", \"y\" or \"xy\" gives log axes; cex scales the\n"
    "symbols; col may give one colour per point; axes=FALSE leaves out the axes and the box." },
  { "pmax", bi_minmax, "pmax(x, y=, ...)", OP_MAX2, DIFF | BI_AD, "DML's other name of max: pmax(X, Y) is the elementwise maximum (numbers broadcast);\nmore arguments fold left; pmax(X) alone is the largest element." },
  { "pmin", bi_minmax, "pmin(x, y=, ...)", OP_MIN2, DIFF | BI_AD, "DML's other name of min: pmin(X, Y) is the elementwise minimum (numbers broadcast);\nmore arguments fold left; pmin(X) alone is the smallest element." },
  { "pnorm", bi_pnorm, "pnorm(target, mean=0, sd=1, lower.tail=TRUE)", OP_NONE, DIFF | BI_AD, "Normal distribution function P[X <= target] (elementwise over a matrix); lower.tail=FALSE gives P[X > q].\nDifferentiable in target." },
  { "points", bi_points, "points(x, y=, col=, pch=1, type=\"p\", cex=1, bg=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Adds point symbols at (x[i], y[i]) to the open figure (points(y): x = 1..n). pch as R: 0 square,\n"
    "1 circle, 2 triangle, 3 plus, 4 cross, 5 diamond, 6-14 R's combined symbols; 15-18 filled square,\n"
    "circle, triangle, diamond; 19 filled circle, 20 small filled circle; 21-25 filled with bg; or one\n"
    "character (pch=\"x\"). col may give one colour per point; cex scales the symbols." },
  { "print", bi_print, "print(x, digits=7)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Prints a value: numbers to 7 significant digits (or digits), strings as they are,\nmatrices one row a line (large ones elided)." },
  { "prod", bi_prod, "prod(x)", OP_PROD, DIFF | BI_AD | BI_NARM, "Product of all elements (a number; 1 for an empty matrix, as R)." },
  { "progress", bi_progress, "progress(x)", OP_NONE, DIFF | BI_AD, "x itself, marked for a progress bar: for (i in progress(1:n)) { ... } draws a bar\n(done/total, percent, elapsed and remaining time) on standard error while the loop runs,\nonly when standard error is a terminal; in a pipe or a file nothing extra is written. In a\nJupyter notebook the bar is drawn below the cell and redrawn in place (update_display_data)." },
  { "pt", bi_pt, "pt(target, df, lower.tail=TRUE)", OP_NONE, DIFF | BI_AD, "Student t distribution function with df degrees of freedom (elementwise); lower.tail=FALSE gives P[X > q].\nNot differentiable: grad through it is an error." },
  { "qchisq", bi_qchisq, "qchisq(target, df)", OP_NONE, DIFF | BI_AD, "Chi-squared quantile with df degrees of freedom (elementwise).\nNot differentiable: grad through it is an error." },
  { "qexp", bi_qexp, "qexp(target, rate=1)", OP_NONE, DIFF | BI_AD, "Exponential quantile -log(1 - target) / rate (elementwise).\nDifferentiable in target." },
  { "qf", bi_qf, "qf(target, df1, df2)", OP_NONE, DIFF | BI_AD, "F quantile with df1 and df2 degrees of freedom (elementwise).\nNot differentiable: grad through it is an error." },
  { "qnorm", bi_qnorm, "qnorm(target, mean=0, sd=1)", OP_NONE, DIFF | BI_AD, "Normal quantile: the q with P[X <= q] = target (elementwise).\nDifferentiable in target." },
  { "qr", bi_qr, "qr(A)", OP_NONE, DIFF | BI_AD, "[Q, R] = qr(A): orthonormal Q and upper-triangular R with Q %*% R = A.\n"
    "Thin, as R's qr.Q and qr.R: for m x n A, Q is m x k and R is k x n, k = min(m, n); diag(R) >= 0.\n"
    "Differentiable (grad, jvp) for m >= n at full rank; grad through a wide A is an error." },
  { "qt", bi_qt, "qt(target, df)", OP_NONE, DIFF | BI_AD, "Student t quantile with df degrees of freedom (elementwise).\nNot differentiable: grad through it is an error." },
  { "quantile", bi_quantile, "quantile(X, W=, P=)", OP_NONE, DIFF | BI_AD, "DML's p-quantile of column vector X: the value at position ceil(p * n) of sorted X (at least 1).\nquantile(X, p) or quantile(X, W, p) with weights W (counts: n = sum(W)). P may be a column\nvector of probabilities in [0, 1]: the result is then a column vector. No interpolation (R's type 1).\nThe derivative is 1 at the element picked (W is not differentiated); staged code runs it eagerly." },
  { "quit", bi_quit, "quit(status=0)", OP_NONE, INV | BI_EFFECT | BI_NODIFF, "Ends the program (or the REPL) with the exit status." },
  { "rand", bi_rand, "rand(rows=1, cols=1, min=0, max=1, pdf=\"uniform\", sparsity=1, seed=)", OP_NONE, BI_EFFECT | BI_AD,
    "A random rows x cols matrix: pdf \"uniform\" on [min, max) or \"normal\" (mean 0, sd 1);\n"
    "sparsity is the fraction of nonzero cells. The same seed (or --seed) gives the same matrix\n"
    "on every run and machine (xoshiro256** seeded by splitmix64). Under grad, a traced min or\n"
    "max is an error (write min + (max - min) * rand(...) to differentiate in them)." },
  { "rbind", bi_rbind, "rbind(...)", OP_NONE, DIFF | BI_AD, "Stacks matrices (and numbers) on top of each other; column counts must match." },
  { "rbinom", bi_rbinom, "rbinom(n, size, prob)", OP_NONE, BI_EFFECT,
    "n draws (a column vector) from the binomial distribution of size trials with success\nprobability prob, as R's rbinom (parameters recycled when vectors; n a vector: its length).\nSeeded by set.seed and --seed like rand; the stream is MLS's (xoshiro256**), so the values\ndiffer from R's for the same seed." },
  { "read", bi_read, "read(path, format=, header=FALSE, sep=\",\", rows=, cols=, data_type=\"matrix\", na.strings=, schema=)", OP_NONE, BI_EFFECT | BI_NODIFF,
    "Reads a matrix from a file. format: \"csv\", \"text\" (DML's i j v triples), \"mm\" (Matrix Market),\n"
    "\"libsvm\" (label idx:val ...: the features, then the label as the last column, as SystemDS),\n"
    "\"npy\" (NumPy: float64/32, integers, bool; C or Fortran order; 1-D is a column) or \"idx\"\n"
    "(MNIST; an N x 28 x 28 file gives N x 784, one image per row); by default it follows the\n"
    "extension (.csv .txt .text .ijv .mtx .mm .libsvm .svm .npy .idx -ubyte), and a .gz file is\n"
    "decompressed. A csv or text file's .mtd sidecar (written by write) supplies the shape, header\n"
    "and sep; rows= and cols= declare the shape of a text file (or check the shape of any other).\n"
    "The sparse formats (text, Matrix Market coordinate, libsvm) are read straight into sparse\n"
    "storage, memory bounded by the entries; the format rule then picks the result's format\n"
    "(docs/sparse.md)." },
  { "read.csv", bi_read_csv, "read.csv(file, header=TRUE, sep=\",\", na.strings=\"NA\", schema=)", OP_NONE, BI_EFFECT | BI_NODIFF,
    "R's read.csv: a csv file as a frame, column types detected as R's type.convert does\n(BOOLEAN for TRUE/FALSE, INT32 for whole numbers, FP64 for numbers, else STRING) unless\nschema= gives them; na.strings (a string or a list of them) and empty cells are NA." },
  { "remove", bi_remove, "remove(L, pos)", OP_NONE, BI_AD, "[L2, e] = remove(L, pos): the list L without its element pos (1-based; names kept), and that\nelement as a list of one, as DML's list remove." },
  { "removeEmpty", bi_removeEmpty, "removeEmpty(target, margin, select=, empty.return=FALSE)", OP_NONE, BI_AD, "Drops the all-zero rows (margin=\"rows\") or columns (margin=\"cols\"), or those not selected.\nNaN counts as nonzero. select is a vector with one entry per row (column): nonzero keeps it.\nWhen nothing is kept the result has 0 rows (columns); empty.return=TRUE gives DML's\nsingle row (column) of zeros instead." },
  { "rep", bi_rep, "rep(x, times=1, each=1, length.out=)", OP_NONE, DIFF | BI_AD, "R's rep as a column vector: each element of x (row-major for a matrix) repeated each\ntimes, then the whole repeated times times. times may instead give one count per element;\nlength.out= cuts or cycles the result to that length. rep(c(1, 2), times=2, each=2) is\n1 1 2 2 1 1 2 2. Differentiable: the copies' adjoints are summed into x." },
  { "replace", bi_replace, "replace(target, pattern, replacement)", OP_NONE, BI_AD, "Replaces every cell equal to pattern (NaN matches NaN) by replacement.\nA number gives a number. pattern and replacement may be strings that read as numbers\n(\"Infinity\", \"NaN\", \"1e3\"), as SystemDS parses them." },
  { "rev", bi_rev, "rev(X)", OP_NONE, BI_AD, "The rows of X in reverse order (DML's rev): a column vector is reversed, a row vector is\nunchanged (as DML; R's rev reverses any vector), a number is itself. grad follows the rows." },
  { "rnorm", bi_rnorm, "rnorm(n, mean=0, sd=1)", OP_NONE, BI_EFFECT,
    "n draws (a column vector) from the normal distribution, as R's rnorm (mean and sd recycled\nwhen vectors; n a vector: its length). Seeded by set.seed and --seed like rand; the stream\nis MLS's (xoshiro256**, Box-Muller), so the values differ from R's for the same seed." },
  { "round", bi_round, "round(x, digits=0)", OP_ROUND, DIFF | BI_AD, "Rounds to the nearest whole number, elementwise. Halves go to even (as R: round(2.5) is 2,\nround(-0.5) is -0) in .mls code; in code of a .dml file halves go up, toward +Inf, as\nSystemDS's Math.round (round(2.5) is 3, round(-2.5) is -2). NaN and Inf stay." },
  { "rowCumsum", bi_rowCumsum, "rowCumsum(X)", OP_NONE, DIFF | BI_AD, "Cumulative sums along each row (SystemDS's rowCumsum): t(cumsum(t(X))) for a matrix;\na column vector is returned as is (each row has one element)." },
  { "rowIndexMax", bi_rowIndexMax, "rowIndexMax(X)", OP_ROWINDEXMAX, BI_NODIFF, "Column index (1-based) of the largest element of each row; the last on ties (as DML).\nNaN is skipped and a row of NaN only gives 1, as SystemDS (R's max.col gives NA for a\nrow holding NA); empty rows are an error." },
  { "rowIndexMin", bi_rowIndexMin, "rowIndexMin(X)", OP_ROWINDEXMIN, BI_NODIFF, "Column index (1-based) of the smallest element of each row; the last on ties (as DML).\nNaN is skipped and a row of NaN only gives 1, as SystemDS; empty rows are an error." },
  { "rowMaxs", bi_rowMaxs, "rowMaxs(X)", OP_ROWMAXS, DIFF | BI_AD, "Largest element of each row: an nrow(X) x 1 column vector.\nNaN propagates; a matrix with empty rows (n x 0, n > 0) is an error." },
  { "rowMeans", bi_rowMeans, "rowMeans(X)", OP_NONE, DIFF | BI_AD, "Mean of each row: an nrow(X) x 1 column vector.\nrowSums(X) / ncol(X): an empty row gives NaN, as R." },
  { "rowMins", bi_rowMins, "rowMins(X)", OP_ROWMINS, DIFF | BI_AD, "Smallest element of each row: an nrow(X) x 1 column vector.\nNaN propagates; a matrix with empty rows (n x 0, n > 0) is an error." },
  { "rowProds", bi_rowProds, "rowProds(X)", OP_ROWPRODS, DIFF | BI_AD, "Product of each row: an nrow(X) x 1 column vector (1 for an empty row)." },
  { "rowSds", bi_rowSds, "rowSds(X)", OP_NONE, DIFF | BI_AD, "Sample standard deviation of each row: sqrt(rowVars(X))." },
  { "rowSums", bi_reduce, "rowSums(X)", OP_ROWSUMS, DIFF | BI_AD, "Sum of each row: an nrow(X) x 1 column vector." },
  { "rowVars", bi_rowVars, "rowVars(X)", OP_NONE, DIFF | BI_AD, "Sample variance of each row (divisor ncol(X) - 1): an nrow(X) x 1 column vector.\nA row of one element gives 0, as SystemDS (R: NA; var() here gives NaN)." },
  { "rowcumsum", bi_rowCumsum, "rowcumsum(X)", OP_NONE, DIFF | BI_AD, "SystemDS's other spelling of rowCumsum: cumulative sums along each row." },
  { "runif", bi_runif, "runif(n, min=0, max=1)", OP_NONE, BI_EFFECT,
    "n draws (a column vector) uniform on [min, max), as R's runif (min and max recycled when\nvectors; n a vector: its length). Seeded by set.seed and --seed like rand; the stream is\nMLS's, so the values differ from R's for the same seed." },
  { "sample", bi_sample, "sample(range, size=, replace=FALSE, seed=)", OP_NONE, BI_EFFECT | BI_NODIFF, "size values drawn from 1..range, without replacement unless replace=TRUE, as a column vector.\nsize defaults to range (a random permutation). The same seed (or --seed) gives the same\nsample on every run and machine." },
  { "sapply", bi_sapply, "sapply(X, FUN, ..., simplify=TRUE)", OP_NONE, BI_CALLS,
    "lapply, simplified as R's sapply: results that are all numbers give a column vector (R's\nvector); vectors all of one length k give a k x n matrix, one column per item; anything else\n(strings among them: MLS has no character vector) stays a list. simplify=FALSE is lapply." },
  { "save", bi_save, "save(path, ...)", OP_NONE, INV | BI_EFFECT | BI_NODIFF, "save(path, a=X, b=Y) writes named numbers, strings and matrices to one checkpoint file (atomically).\nBooleans, NULL and lists of these can be saved too; load(path) gives them back as a list." },
  { "scale", bi_scale, "scale(X, center=TRUE, scale=TRUE)", OP_NONE, DIFF | BI_AD, "[Y, ColMean, ScaleFactor] = scale(X): SystemDS's column scaling. center subtracts colMeans(X);\nscale divides by sqrt(colSums(X^2) / (nrow(X) - 1)) of the (centered) X, a 0 or NaN factor\nbeing replaced by 1. A step not taken gives a 0x0 matrix in its place." },
  { "sd", bi_sd, "sd(x)", OP_NONE, DIFF | BI_AD | BI_NARM, "Sample standard deviation of all elements (divisor n - 1, as R).\nsqrt(var(x)): NaN for fewer than two elements." },
  { "seq", bi_seq, "seq(from=, to=, by=, length.out=)", OP_NONE, BI_AD,
    "Column vector from, from+by, ... up to to. by defaults to 1, or -1 when from > to.\n"
    "With length.out = n (as R): n values from from to to evenly spaced (the ends exact), or n\n"
    "values from from in steps of by; seq(length.out = n) and seq(n) are 1..n.\n"
    "Differentiable in from and by (to only sets the length), as from:to in from." },
  { "seq_len", bi_seq_len, "seq_len(length.out)", OP_NONE, BI_NODIFF, "1, 2, ..., length.out as a column vector (R's seq_len); seq_len(0) is a 0x1 matrix, so\nfor (i in seq_len(n)) runs no iteration when n is 0 (1:0 would count down)." },
  { "set.seed", bi_set_seed, "set.seed(seed)", OP_NONE, INV | BI_EFFECT | BI_NODIFF, "Reseeds the random stream that rand(), sample() and friends use without seed=: the same\nseed gives the same numbers again, as --seed N does (a different generator from R's, so\nnot R's numbers)." },
  { "sigmoid", bi_unary, "sigmoid(x)", OP_SIGMOID, DIFF | BI_AD, "1 / (1 + exp(-x)), elementwise and stable for large |x|." },
  { "sign", bi_unary, "sign(x)", OP_SIGN, DIFF | BI_AD, "-1, 0 or 1 by the sign of x, elementwise." },
  { "signif", bi_signif, "signif(x, digits=6)", OP_NONE, BI_NODIFF,
    "x rounded to digits significant digits, elementwise, as R's signif (digits below 1 count as 1)." },
  { "sin", bi_unary, "sin(x)", OP_SIN, DIFF | BI_AD, "Sine (radians), elementwise." },
  { "sinh", bi_unary, "sinh(x)", OP_SINH, DIFF | BI_AD, "Hyperbolic sine, elementwise." },
  { "softmax", bi_softmax, "softmax(X)", OP_SOFTMAX, DIFF | BI_AD, "Row-wise softmax, computed stably (the row maximum is subtracted first).\n-Inf entries give 0; a row of only -Inf, or holding NaN or Inf, gives NaN." },
  { "softplus", bi_unary, "softplus(x)", OP_SOFTPLUS, DIFF | BI_AD, "log(1 + exp(x)), elementwise, computed without overflow for large x.\nIts derivative is sigmoid(x); the staged graph rewrites log(1 + exp(x)) into it." },
  { "solve", bi_solve, "solve(A, b)", OP_NONE, DIFF | BI_AD, "Solves A %*% x = b for square A (LAPACK LU); b is a vector or matrix with nrow(A) rows.\n"
    "A singular A, or one with reciprocal condition number below machine epsilon, is an error (as R).\n"
    "A sparse A stays sparse: CHOLMOD's Cholesky when it is symmetric positive definite, else UMFPACK's LU." },
  { "sort", bi_sort, "sort(x, decreasing=FALSE)", OP_NONE, 0,
    "The elements of x sorted (increasing, or decreasing=TRUE) as a column vector, as R's sort of\na vector; NaN values are dropped (R's na.last=NA). Not differentiable: grad through it is an error." },
  { "source", bi_source, "source(path)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Runs a file in the global scope; relative paths are looked up next to the calling script,\n"
    "then in the standard library ($MLS_PATH or stdlib/). source(path) as ns binds ns::name instead." },
  { "sparsity", bi_sparsity, "sparsity(X)", OP_NONE, BI_NODIFF,
    "The fraction of X's elements that are nonzero, nnz(X) / length(X) (0 for an empty matrix),\nas SystemDS's rand(sparsity=) counts it; below 0.1 a matrix of 1024 or more cells is kept\nsparse (docs/sparse.md)." },
  { "sprintf", bi_sprintf, "sprintf(fmt, ...)", OP_NONE, BI_NODIFF,
    "Formats numbers and strings C-style: %d %i %f %e %g %s %x %%, with flags, width and precision; as in R, %d %i %x take whole numbers only.\nAs R, the format and each width and precision are at most 8192 (a located error past it);\nfields are not cut, and %s of a long string is whole.\nOver vectors as R: an argument that is a vector (a matrix of other than one element, row-major)\nor a list gives one string per element, the others recycled, as a list of strings (R's\ncharacter vector): sprintf(\"x%d\", 1:3) is list(\"x1\", \"x2\", \"x3\")." },
  { "sqrt", bi_unary, "sqrt(x)", OP_SQRT, DIFF | BI_AD, "Square root, elementwise; sqrt(-1) is NaN." },
  { "stop", bi_stop, "stop(msg)", OP_NONE, BI_EFFECT | BI_NODIFF, "Stops the program with the error message msg (exit status 1)." },
  { "stop_gradient", bi_stop_gradient, "stop_gradient(x)", OP_NONE, BI_DIFF | BI_AD,
    "x itself, with derivative zero: grad does not look through it." },
  { "stopifnot", bi_stopifnot, "stopifnot(...)", OP_NONE, BI_LAZY,
    "Stops with R's message unless every argument is TRUE (every element nonzero and not NaN):\n\"x > 0 is not TRUE\" (\"are not all TRUE\" for a vector), the expression as written; a named\nargument stopifnot(\"x must be positive\" = x > 0) gives its name as the message. The\narguments are checked in order; the first failing one stops, the rest are not evaluated." },
  { "str", bi_str_struct, "str(x)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Prints the structure of x in one line as R's str: \" num 3.14\", \" num [1:5] 1 2 3 4 5\" (a\ncolumn vector as R's vector), \" num [1:2, 1:3] ...\" (elements column-major, as R lists them),\n\" chr \\\"a\\\"\", \" logi TRUE\", and \"List of n\" with a line per element. Numbers show 3\nsignificant digits, at most 10 elements. Every number is a double, so R's \"int\" is \"num\"." },
  { "strsplit", bi_strsplit, "strsplit(x, split, fixed=FALSE, perl=FALSE)", OP_NONE, BI_NODIFF,
    "The pieces of string x between matches of split (a regular expression, or plain text with\nfixed=TRUE), as a list of strings: R's strsplit(x, split)[[1]]. split=\"\" splits into\ncharacters. A list of strings gives a list of such lists (R's list of character vectors)." },
  { "sub", bi_sub, "sub(pattern, replacement, x, ignore.case=FALSE, fixed=FALSE, perl=FALSE)", OP_NONE, BI_NODIFF,
    "As gsub, but only the first match in each string is replaced (R's sub)." },
  { "substr", bi_substr, "substr(x, start, stop)", OP_NONE, BI_NODIFF,
    "The characters start to stop (1-based, UTF-8 characters, as R) of string x; \"\" when\nstop < start. A list of strings gives a list." },
  { "sum", bi_reduce, "sum(x)", OP_SUM, DIFF | BI_AD | BI_NARM, "Sum of all elements (a number). sum(x, na.rm = TRUE) leaves out NaN and NA, as R." },
  { "summary", bi_summary, "summary(x)", OP_NONE, 0,
    "R's summary of the numbers of x: a named list of Min., 1st Qu., Median, Mean, 3rd Qu. and Max.\n(quartiles by R's default type-7 interpolation), and NA's (the count of NaN, R's NA) when x has any, which\nthe others leave out. It prints as R prints it (4 significant digits); s$Median, s[\"1st Qu.\"]." },
  { "svd", bi_svd, "svd(A)", OP_NONE, DIFF | BI_AD, "[U, S, V] = svd(A): A = U %*% S %*% t(V), singular values on the diagonal of S, decreasing.\n"
    "Thin, as R's svd: for m x n A, U is m x k, S k x k, V n x k, k = min(m, n). Each column of V\n"
    "is signed so that its largest-magnitude entry is positive, its column of U with it.\n"
    "Differentiable (grad, jvp): S always; U and V where the singular values are distinct (and,\n"
    "for a non-square A, nonzero); elsewhere grad through U or V is an error." },
  { "switch", bi_switch, "switch(EXPR, ...)", OP_NONE, BI_LAZY,
    "R's switch: EXPR a string picks the argument of that name (an empty one, a=, falls through\nto the next with a value), else the one unnamed argument; a number k picks the k-th. Only\nthe chosen alternative is evaluated. No match gives NULL." },
  { "system.time", bi_system_time, "system.time(expr)", OP_NONE, BI_LAZY, "Evaluates expr and returns the user, system and elapsed seconds it took, a list (user, system, elapsed) that prints as R's table: at the prompt `system.time(expr)` shows it, `t = system.time(expr)` shows nothing, and `t$elapsed` is the seconds." },
  { "t", bi_t, "t(X)", OP_TRANSPOSE, DIFF | BI_AD, "Transpose." },
  { "table", bi_table, "table(A, B=, weights=, odim1=, odim2=, outputEmptyBlocks=TRUE)", OP_NONE, BI_AD, "Contingency table: cell (A[i], B[i]) counts (or sums weights); with one argument, counts of each value.\nDML semantics: values are floored and must be at least 1; NaN skips the entry; numbers\nand 1x1 matrices broadcast. The size is max(A) x max(B), or odim1 x odim2 (entries outside are dropped).\ntable(A, B, odim1, odim2) is DML's four-argument form; table(A) is table(A, 1), a column.\nThe sixth, outputEmptyBlocks (a boolean), is SystemDS's hint for its distributed blocks:\naccepted and checked, it changes nothing here." },
  { "tail", bi_tail, "tail(x, n=6)", OP_NONE, 0,
    "The last n rows of matrix x (a column vector: its last n elements), or the last n items of\na list, as R's tail; a negative n leaves out the first -n. A number or string is itself." },
  { "tan", bi_unary, "tan(x)", OP_TAN, DIFF | BI_AD, "Tangent (radians), elementwise." },
  { "tanh", bi_unary, "tanh(x)", OP_TANH, DIFF | BI_AD, "Hyperbolic tangent, elementwise." },
  { "text", bi_text, "text(x, y=, labels=, adj=0.5, pos=, cex=1, col=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Writes labels (strings or numbers, recycled; default 1..n) centred at the points (x[i], y[i]) of the\n"
    "open plot (R's text). adj 0 left-aligns, 1 right-aligns; pos 1, 2, 3 or 4 puts each label below,\n"
    "left of, above or right of its point instead. col may give one colour per label." },
  { "time", bi_time, "time()", OP_NONE, BI_EFFECT | BI_NODIFF, "A monotonic clock in nanoseconds (differences measure elapsed time)." },
  { "title", bi_title, "title(main=, xlab=, ylab=)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Sets the main title and the axis labels of the open figure (those given)." },
  { "toString", bi_toString, "toString(x)", OP_NONE, BI_NODIFF,
    "The full text of a value: numbers to 15 significant digits, matrices in full, one row a line." },
  { "tolower", bi_tolower, "tolower(x)", OP_NONE, BI_NODIFF,
    "x with ASCII letters in lower case (other characters unchanged); a list of strings gives a list." },
  { "toupper", bi_toupper, "toupper(x)", OP_NONE, BI_NODIFF,
    "x with ASCII letters in upper case (other characters unchanged); a list of strings gives a list." },
  { "tr", bi_trace, "tr(A)", OP_NONE, DIFF | BI_AD, "DML's other name of trace: the sum of the diagonal of a square matrix." },
  { "trace", bi_trace, "trace(A)", OP_NONE, DIFF | BI_AD, "Sum of the diagonal of a square matrix (NaN and Inf propagate, as in sum)." },
  { "trace_grad", bi_trace_grad, "trace_grad(f, ..., mode=\"reverse\", wrt=, digits=4, ascii=FALSE)", OP_NONE, INV | BI_EFFECT,
    "Prints the evaluation-trace tables of f at a point of numbers (teaching; docs/autodiff.md).\n"
    "The primal trace v_i = op = value (Baydin et al.'s layout), then the reverse adjoint trace\n"
    "(returns the gradient, invisibly) or, with mode=\"forward\", the tangent trace seeded on wrt (a\n"
    "position, a name or a direction; returns the derivative). digits= is the tables' precision;\n"
    "ascii=TRUE writes vbar, vdot and d instead of the Unicode bar, dot and partial sign.\n"
    "Its result is plain numbers: under an outer grad, a traced argument is an error." },
  { "transformapply", bi_transformapply, "transformapply(target, spec, meta)", OP_NONE, BI_NODIFF,
    "Encodes frame target as transformencode did, with the recode maps, bins and imputed values\nof its meta frame: a value the meta frame does not know is NaN (docs/frames.md)." },
  { "transformcolmap", bi_transformcolmap, "transformcolmap(spec, target, meta=)", OP_NONE, BI_NODIFF,
    "An ncol(target) x 3 matrix: for each column of frame target, its id and the first and last\ncolumns of the encoded matrix it becomes (a dummycoded column spans several)." },
  { "transformdecode", bi_transformdecode, "transformdecode(target, spec, meta)", OP_NONE, 0,
    "The frame an encoded matrix target stands for: recoded (and dummycoded) columns back to their\nvalues (STRING), other columns as numbers (a binned or hashed column gives its code).\nNot differentiable: under grad, a traced target is an error." },
  { "transformencode", bi_transformencode, "transformencode(target, spec)", OP_NONE, BI_NODIFF,
    "[X, M] = transformencode(target=F, spec=S): frame F encoded as a matrix X by the JSON spec S\n(recode, dummycode, bin with method equi-width or equi-height and numbins, hash with K,\nimpute with global_mean, global_mode/most_frequent or constant, omit; columns by name, or by\n1-based id with \"ids\": true), and the meta frame M that transformapply and transformdecode\ntake. Recode codes follow sorted order (R's factor levels); docs/frames.md has the details." },
  { "transformmeta", bi_transformmeta, "transformmeta(spec, transformPath, sep=\",\")", OP_NONE, BI_NODIFF,
    "The meta frame that transformapply and transformdecode take, read from a directory of the\nmetadata files SystemML wrote: column.names (the names, split by sep), Recode/NAME.map\n(\"value\",code,count lines) and NAME.ndistinct for the columns spec recodes or dummycodes,\nBin/NAME.bin (colid,min,max,binwidth,numbins) for those it bins, Impute/NAME.impute (colid,value)\nfor imputed values. A missing or malformed file is an error naming it and its line\n(docs/frames.md)." },
  { "tryCatch", bi_tryCatch, "tryCatch(expr, error=, warning=, finally=)", OP_NONE, BI_LAZY,
    "Evaluates expr; if it raises an error (stop() or any runtime error), the value is error(e),\nwith e the condition list(message=, call=NULL): conditionMessage(e) or e$message is the\nerror's text. warning= catches warning() likewise. finally is evaluated last in every case.\nAs R, the handlers are functions of one argument; an error without a handler goes on\nafter finally. Staged code runs eagerly from a tryCatch." },
  { "typeof", bi_typeof, "typeof(x)", OP_NONE, BI_SHAPE, "The type of x as a string: \"number\", \"boolean\", \"string\", \"matrix\", \"list\", \"function\" or \"NULL\"." },
  { "unique", bi_unique, "unique(x, dir=\"rc\")", OP_NONE, 0, "DML's unique: the distinct values of matrix x as a column, in order of first occurrence\n(row-major; NaN is one value). dir=\"r\": those of each row, one row each, zero-padded to the\nwidest; dir=\"c\": those of each column likewise. SystemDS gives them in its hash order." },
  { "upper.tri", bi_upper_tri, "upper.tri(target, diag=FALSE, values=FALSE)", OP_NONE, DIFF | BI_AD, "The upper triangle of target (above the diagonal; diag=TRUE includes it), as DML:\n1 there and 0 elsewhere, or with values=TRUE target's values there and 0 elsewhere.\nAny shape; the result has target's shape." },
  { "value_and_grad", bi_value_and_grad, "value_and_grad(f, argnum=1)", OP_NONE, BI_DIFF | BI_AD,
    "Like grad, but the function returns [value, gradient] in one pass." },
  { "vapply", bi_vapply, "vapply(X, FUN, FUN.VALUE, ...)", OP_NONE, BI_CALLS,
    "sapply with a declared result: each FUN(x) must be like FUN.VALUE (a number: one number;\na vector of k numbers: k; a string: a string; TRUE: a boolean), else the error as R's.\nNumbers give a column vector, k-vectors a k x n matrix, strings a list." },
  { "var", bi_var, "var(x)", OP_NONE, DIFF | BI_AD | BI_NARM, "Sample variance of all elements (divisor n - 1, as R).\nNaN for fewer than two elements (R gives NA)." },
  { "warning", bi_warning, "warning(...)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Writes \"Warning message:\" and the text of its arguments to standard error (at once, where R\nwaits for the top-level call to end) and returns the text invisibly. Inside tryCatch(...,\nwarning = h), it stops the expression and h gets the condition, as in R." },
  { "which", bi_which, "which(x)", OP_NONE, BI_NODIFF, "The positions (1-based) of the TRUE (nonzero) elements of x as a column vector, row-major\nfor a matrix; NaN counts as not TRUE. which(x > 2) gives the indices x[x > 2] selects." },
  { "which.max", bi_which_max, "which.max(x)", OP_NONE, BI_NODIFF,
    "The position (1-based, row-major for a matrix) of the first largest element of x, NaN skipped,\nas R's which.max; an empty result (0x1) when there is no number." },
  { "which.min", bi_which_min, "which.min(x)", OP_NONE, BI_NODIFF,
    "The position (1-based, row-major for a matrix) of the first smallest element of x, NaN skipped,\nas R's which.min; an empty result (0x1) when there is no number." },
  { "write", bi_write, "write(X, path, format=, header=FALSE, sep=\",\")", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "Writes a matrix to a file: format \"csv\", \"text\", \"mm\", \"libsvm\" (the last column is the\n"
    "label), \"npy\" (float64, C order) or \"idx\", by default from the extension as read() does; a\n"
    "path ending in .gz is compressed. A sparse matrix is written from its nonzeros (text, mm,\n"
    "libsvm, csv) without densifying it. csv, text and libsvm files get a DML .mtd sidecar\n"
    "(path.mtd) recording the shape and options.\n"
    "The write is atomic: a temporary file is renamed over the old one only when complete.\n"
    "A string X is written as its text (no newline) with a .mtd sidecar saying \"scalar\", as\n"
    "DML writes a scalar; so is a number (15 significant digits) or boolean in code of a .dml\n"
    "file, where .mls code writes a number as a 1x1 matrix.\n"
    "In code of a .dml file, as SystemDS: a scalar is written so whatever format= says (.mls code\n"
    "allows only \"text\"), a matrix whose path has no known extension is written as \"text\", and\n"
    "missing directories above path are made." },
  { "write.csv", bi_write_csv, "write.csv(x, file, row.names=TRUE)", OP_NONE, INV | BI_EFFECT | BI_NODIFF,
    "R's write.csv of a matrix or a number: a header of quoted column names \"V1\", \"V2\", ..., then a\n"
    "line per row, numbers to 15 significant digits (NA, NaN, Inf as R writes them); row.names=TRUE\n"
    "(the default) starts each line with the quoted row number, under the header \"\". A vector with\n"
    "names is R's named vector: one column \"x\", the names as row names. No .mtd sidecar\n"
    "(write(X, path, format=\"csv\") writes DML's csv; a frame goes there too)." },
  { "xor", bi_xor, "xor(x, y)", OP_NONE, BI_NODIFF, "Elementwise exclusive or: (x != 0) != (y != 0), as 1/0 (TRUE/FALSE for numbers)." },
  { NULL, NULL, NULL, OP_NONE, 0, NULL }
};
const int builtin_count = (int)(sizeof builtin_table / sizeof builtin_table[0]) - 1;

static void parse_sig(Interp *I, const Builtin *b, BiInfo *info) {
  const char *p = strchr(b->sig, '(');
  MLS_ASSERT(p);
  p++;
  info->nparams = 0;
  info->nreq = 0;
  info->dots = -1;
  while (*p && *p != ')') {
    while (*p == ' ' || *p == ',') p++;
    const char *s = p;
    while (*p && *p != ',' && *p != '=' && *p != ')') p++;
    const char *e = p;
    while (e > s && e[-1] == ' ') e--;
    bool optional = *p == '=';
    int depth = 0;
    bool inq = false;
    while (*p && (inq || depth || (*p != ',' && *p != ')'))) {     /* skip the default's text */
      if (*p == '"') inq = !inq;
      else if (!inq && *p == '(') depth++;
      else if (!inq && *p == ')') depth--;
      p++;
    }
    if (e - s == 3 && memcmp(s, "...", 3) == 0) { info->dots = info->nparams; continue; }
    MLS_ASSERT(info->nparams < BI_MAX_PARAMS);
    info->names[info->nparams] = sym_intern(&I->syms, s, (size_t)(e - s));
    if (!optional && info->dots < 0) info->nreq = info->nparams + 1;
    info->nparams++;
  }
}

/* Named constants, bound as ordinary globals at startup (a script may assign its own pi);
** ls() leaves them out while they hold their value. */
static const struct { const char *name; double v; const char *doc; } constants[] = {
  { "pi", 3.14159265358979323846, "pi = 3.14159265358979\n\nThe ratio of a circle's circumference to its diameter, as R's pi: an ordinary global\nnumber that a script may assign (pi = 3 then reads 3)." },
};

const char *bi_constant_doc(const char *name) {
  for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
    if (strcmp(name, constants[i].name) == 0) return constants[i].doc;
  return NULL;
}

bool bi_is_constant(const Symbol *s) {
  for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
    if (strcmp(s->name, constants[i].name) == 0) return s->global.t == VT_NUM && s->global.u.n == constants[i].v;
  return false;
}

void bi_open(Interp *I) {
  for (size_t i = 0; i < sizeof constants / sizeof constants[0]; i++)
    sym_intern(&I->syms, constants[i].name, strlen(constants[i].name))->global = val_num(constants[i].v);
  I->nbi = builtin_count;
  I->bi = mem_calloc((size_t)builtin_count, sizeof(BiInfo));
  for (int i = 0; i < builtin_count; i++) {
    const Builtin *b = &builtin_table[i];
    MLS_ASSERT(i == 0 || strcmp(builtin_table[i - 1].name, b->name) < 0);   /* sorted, unique */
    Symbol *s = sym_intern(&I->syms, b->name, strlen(b->name));
    s->bi = b;
    parse_sig(I, b, &I->bi[i]);
  }
}

const Builtin *bi_find(const char *name) {
  int lo = 0, hi = builtin_count - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = strcmp(builtin_table[mid].name, name);
    if (c == 0) return &builtin_table[mid];
    if (c < 0) lo = mid + 1; else hi = mid - 1;
  }
  return NULL;
}

/* na.rm = TRUE: the elements of x (a number or a matrix; traced or not) that are not NaN or NA,
** as a column in row-major order, through ops (grad sees an index); x itself when it has none.
** Which they are depends on values: a staged x makes its block run eagerly (ad_concrete). +1. */
static Value na_omit(Interp *I, Value x, Span sp) {
  Value p = ad_concrete(I, x, sp, "na.rm's test of the elements");
  if (p.t == VT_NUM && isnan(p.u.n)) return val_mat(tensor_new(I, 0, 1));
  if (p.t != VT_MAT) { val_retain(x); return x; }
  const Tensor *m = p.u.m;
  int64_t n = tensor_numel(m), keep = 0;
  for (int64_t k = 0; k < n; k++) keep += !isnan(tensor_at(m, k));
  if (keep == n) { val_retain(x); return x; }
  int mark = I->ntmp;
  Tensor *pos = tensor_new_host(I, keep, 1);
  tmp_push(I, val_mat(pos));
  double *d = tensor_data(pos);
  for (int64_t k = 0, j = 0; k < n; k++)
    if (!isnan(tensor_at(m, k))) d[j++] = (double)(k + 1);
  Value col = op_reshape(I, x, n, 1, sp);
  tmp_push(I, col);
  Value r = keep ? ad_index(I, col, 1, (Value[]){ val_mat(pos) }, sp) : val_mat(tensor_new(I, 0, 1));
  tmp_release_to(I, mark);
  return r;
}

Value bi_call(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, Span sp) {
  return bi_call_lent(I, b, nargs, args, names, false, sp);
}

Value bi_call_lent(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, bool lent, Span sp) {
  interp_abstract_poll(I, sp);               /* (an abstract trace that needed a value: before any effect) */
  if (b->flags & BI_EFFECT) {
    if (I->abstract) interp_abstract_stop(I, sp, "'%s' is an effect", b->name);   /* (also where no stage */
    I->effects++;                                                              /* sees it: jvp's f) */
  }
  if ((b->flags & BI_NARM) && !I->stage)
    for (int i = 0; i < nargs; i++)
      if (names[i] && !strcmp(names[i]->name, "na.rm")) {   /* R's na.rm: taken off, applied to x */
        Value f = ad_primal(args[i]);
        if (f.t != VT_BOOL && f.t != VT_NUM) mls_throw(I, sp, "na.rm must be TRUE or FALSE");
        int mark = I->ntmp, n = 0;
        Value av[nargs];
        Symbol *nv[nargs];
        for (int k = 0; k < nargs; k++)
          if (k != i) { av[n] = args[k]; nv[n++] = names[k]; }
        if ((f.t == VT_BOOL ? f.u.b : f.u.n != 0) && n > 0 && !nv[0]) {
          av[0] = na_omit(I, av[0], sp);
          tmp_push(I, av[0]);
        }
        Value r = bi_call(I, b, n, av, nv, sp);
        tmp_release_to(I, mark);
        return r;
      }
  if (!(b->flags & (BI_DIFF | BI_AD | BI_NODIFF | BI_SHAPE | BI_LAZY)) && ad_any_grad_deep(nargs, args))
    mls_throw(I, sp, "grad: '%s' is not differentiable (give it stop_gradient(x) to use its result as a constant)", b->name);
  if (I->stage) {                            /* staging: a call node, or the builtin on its own */
    if (stage_wants_call(I, b, nargs, args)) return stage_call(I, b, nargs, args, names, sp);
    struct Tape *st = I->stage;              /* staged arguments are still recorded through their */
    I->stage = NULL;                         /* boxes; what it computes from constants is constant */
    uint64_t e0 = I->effects;
    Value r = bi_call(I, b, nargs, args, names, sp);   /* (a throw ends the staging, which restores it) */
    I->stage = st;
    if (I->effects != e0) stage_effect_unrecorded(I, b->name, sp);   /* (jvp(f, x, v), f printing) */
    return r;
  }
  const BiInfo *info = &I->bi[b - builtin_table];
  Args a;
  a.n = info->nparams;
  for (int i = 0; i < BI_MAX_PARAMS; i++) a.v[i] = val_unbound();
  Value dots[nargs > 0 ? nargs : 1];
  Symbol *dotnames[nargs > 0 ? nargs : 1];
  a.ndots = 0;
  a.dots = dots;
  a.dotnames = dotnames;
  a.span = sp;
  a.lent = false;
  bool to_param[nargs > 0 ? nargs : 1];    /* named arguments that match a parameter */
  for (int i = 0; i < nargs; i++) {
    to_param[i] = false;
    if (!names[i]) continue;
    for (int j = 0; j < info->nparams; j++)
      if (info->names[j] == names[i]) {
        if (a.v[j].t != VT_UNBOUND) mls_throw(I, sp, "argument '%s' given twice to '%s'", names[i]->name, b->name);
        a.v[j] = args[i];
        to_param[i] = true;
        break;
      }
    if (!to_param[i] && info->dots < 0)
      mls_throw(I, sp, "unknown argument '%s' to '%s' (see help(\"%s\"))", names[i]->name, b->name, b->name);
  }
  int next = 0;                            /* then the rest in order: positions, then "..." */
  for (int i = 0; i < nargs; i++) {
    if (to_param[i]) continue;
    if (names[i]) { dots[a.ndots] = args[i]; dotnames[a.ndots++] = names[i]; continue; }
    while (next < info->nparams && (info->dots < 0 || next < info->dots) && a.v[next].t != VT_UNBOUND) next++;
    if (next < info->nparams && (info->dots < 0 || next < info->dots)) { a.v[next++] = args[i]; continue; }
    if (info->dots >= 0) { dots[a.ndots] = args[i]; dotnames[a.ndots++] = NULL; continue; }
    mls_throw(I, sp, "too many arguments to '%s' (at most %d): %s", b->name, info->nparams, b->sig);
  }
  for (int j = 0; j < info->nreq; j++)
    if (a.v[j].t == VT_UNBOUND)
      mls_throw(I, sp, "missing argument '%s' to '%s': %s", info->names[j]->name, b->name, b->sig);
  for (int j = 0; j < a.n; j++) a.v[j] = ad_finished(a.v[j]);   /* boxes of ended tapes are plain values */
  for (int j = 0; j < a.ndots; j++) dots[j] = ad_finished(dots[j]);
  if (ad_any_active(nargs, args)) {          /* a grad (or a stage) is tracing some argument */
    if ((b->flags & BI_DIFF) && !(b->flags & BI_AD) && ad_any_grad(nargs, args))
      mls_throw(I, sp, "grad: '%s' has no derivative rule yet", b->name);
    if (!(b->flags & BI_DIFF) && (!(b->flags & BI_AD) || !ad_any_grad(nargs, args))) {
      /* discrete results (and data movers no grad is tracing): see through the boxes */
      for (int j = 0; j < a.n; j++) a.v[j] = ad_primal(a.v[j]);
      for (int j = 0; j < a.ndots; j++) dots[j] = ad_primal(dots[j]);
    }
  }
  /* the grant holds for the one positional argument, a plain matrix seen as it was passed */
  a.lent = lent && nargs == 1 && !names[0] && a.n >= 1 && a.v[0].t == VT_MAT && args[0].t == VT_MAT && a.v[0].u.m == args[0].u.m;
  Span saved = I->call_span;
  const Builtin *saved_bi = I->cur_bi;
  I->call_span = sp;
  I->cur_bi = b;
  Value r = b->fn(I, &a);
  I->call_span = saved;
  I->cur_bi = saved_bi;
  /* a signal that came while the builtin ran (and it did not poll, or it stopped early with
  ** an unfinished result) is raised at its call: what follows never sees the result */
  if (I->interrupted) { val_release(r); interp_check_interrupt(I, sp); }
  return r;
}

l_noret bi_argerror(Interp *I, int argn, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mls_throw(I, I->call_span, "bad argument #%d to '%s' (%s)", argn, I->cur_bi ? I->cur_bi->name : "?", msg);
}

l_noret bi_error(Interp *I, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mls_throw(I, I->call_span, "%s: %s", I->cur_bi ? I->cur_bi->name : "?", msg);
}

bool bi_given(const Args *a, int i) { return a->v[i].t != VT_UNBOUND; }

double bi_num(Interp *I, Args *a, int i) {
  Value v = a->v[i];
  char d[64];
  if (v.t == VT_NUM) return v.u.n;
  if (v.t == VT_BOOL) return v.u.b;
  if (v.t == VT_MAT && tensor_numel(v.u.m) == 1) return tensor_data(v.u.m)[0];
  bi_argerror(I, i + 1, "number expected, got %s", val_describe(v, d, sizeof d));
}

double bi_opt_num(Interp *I, Args *a, int i, double dflt) { return bi_given(a, i) ? bi_num(I, a, i) : dflt; }

int64_t bi_opt_dim(Interp *I, Args *a, int i, int64_t dflt) {
  if (!bi_given(a, i)) return dflt;
  double d = bi_num(I, a, i);
  if (!(d >= 0 && d == floor(d) && d < 9e15)) {   /* (no cast of NaN or 1e300 to an integer) */
    char buf[32];
    if (isnan(d)) snprintf(buf, sizeof buf, "NaN");
    else snprintf(buf, sizeof buf, "%.15g", d);
    bi_argerror(I, i + 1, "a non-negative whole number expected, got %s", buf);
  }
  return (int64_t)d;
}

bool bi_opt_bool(Interp *I, Args *a, int i, bool dflt) {
  if (!bi_given(a, i)) return dflt;
  Value v = a->v[i];
  char d[64];
  if (v.t == VT_BOOL) return v.u.b;
  if (v.t == VT_NUM) return v.u.n != 0;
  bi_argerror(I, i + 1, "boolean expected, got %s", val_describe(v, d, sizeof d));
}

const char *bi_str(Interp *I, Args *a, int i) {
  Value v = a->v[i];
  char d[64];
  if (v.t == VT_STR) return v.u.s->s;
  bi_argerror(I, i + 1, "string expected, got %s", val_describe(v, d, sizeof d));
}

Tensor *bi_mat(Interp *I, Args *a, int i) {
  Value v = a->v[i];
  char d[64];
  if (v.t == VT_MAT) { v.u.m->refcount++; return v.u.m; }
  if (v.t == VT_NUM || v.t == VT_BOOL) {
    Tensor *t = tensor_new(I, 1, 1);
    tensor_data(t)[0] = v.t == VT_NUM ? v.u.n : v.u.b;
    return t;
  }
  bi_argerror(I, i + 1, "matrix expected, got %s", val_describe(v, d, sizeof d));
}

void bi_interrupted(Interp *I, Tensor *t) {
  if (!I->interrupted) return;
  if (t) tensor_free_ref(t);
  interp_check_interrupt(I, I->call_span);
}

void *bi_scratch(Interp *I, size_t n) { return tensor_scratch(I, n); }

void bi_scratch_free(Interp *I, void *p) { tensor_scratch_free(I, p); }
