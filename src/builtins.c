/*
** builtins.c — THE builtin table and the machinery around it: binding arguments to the
** signature (named and positional, R's matching), argument helpers with Lua-style messages,
** and help text. Bodies live in builtins_*.c. Keep the table sorted by name.
*/
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "builtins.h"
#include "err.h"
#include "mem.h"
#include "print.h"

#define DIFF BI_DIFF
#define INV BI_INVISIBLE

/* grep ORDER BUILTIN: sorted by name; the doc's first line is the summary help() lists. */
const Builtin builtin_table[] = {
  { "abs", bi_unary, "abs(x)", OP_ABS, DIFF, "Absolute value, elementwise." },
  { "as.double", bi_as_double, "as.double(x)", OP_NONE, 0,
    "Converts to a number: booleans to 1/0, strings by parsing, a 1x1 matrix to its value.\nOther matrices are returned unchanged (they already hold doubles)." },
  { "as.integer", bi_as_integer, "as.integer(x)", OP_NONE, 0, "Truncates toward zero, elementwise (numbers stay doubles)." },
  { "as.logical", bi_as_logical, "as.logical(x)", OP_NONE, 0, "Converts a number or string to TRUE/FALSE (nonzero is TRUE)." },
  { "as.matrix", bi_as_matrix, "as.matrix(x)", OP_NONE, 0, "Makes a number a 1x1 matrix; a matrix is returned as is." },
  { "as.scalar", bi_as_scalar, "as.scalar(x)", OP_NONE, DIFF, "The number inside a 1x1 matrix (a number is returned as is)." },
  { "assert", bi_assert, "assert(cond, msg=)", OP_NONE, INV,
    "Stops with 'assertion failed' (or msg) unless cond is TRUE (or nonzero)." },
  { "cbind", bi_cbind, "cbind(...)", OP_NONE, 0, "Joins matrices (and numbers) side by side; row counts must match." },
  { "ceil", bi_unary, "ceil(x)", OP_CEIL, DIFF, "Smallest whole number not below x, elementwise." },
  { "cholesky", bi_cholesky, "cholesky(A)", OP_NONE, 0, "Lower-triangular L with L %*% t(L) = A for symmetric positive definite A." },
  { "colMaxs", bi_colMaxs, "colMaxs(X)", OP_NONE, DIFF, "Largest element of each column: a 1 x ncol(X) row vector." },
  { "colMeans", bi_colMeans, "colMeans(X)", OP_NONE, DIFF, "Mean of each column: a 1 x ncol(X) row vector." },
  { "colMins", bi_colMins, "colMins(X)", OP_NONE, DIFF, "Smallest element of each column: a 1 x ncol(X) row vector." },
  { "colSums", bi_reduce, "colSums(X)", OP_COLSUMS, DIFF, "Sum of each column: a 1 x ncol(X) row vector." },
  { "cos", bi_unary, "cos(x)", OP_COS, DIFF, "Cosine (radians), elementwise." },
  { "cumprod", bi_cumprod, "cumprod(X)", OP_NONE, DIFF, "Cumulative products down each column (a vector: along it)." },
  { "cumsum", bi_cumsum, "cumsum(X)", OP_NONE, DIFF, "Cumulative sums down each column (a vector: along it)." },
  { "det", bi_det, "det(A)", OP_NONE, DIFF, "Determinant of a square matrix (LU factorization)." },
  { "diag", bi_diag, "diag(X)", OP_NONE, DIFF, "A vector becomes a diagonal matrix; a square matrix gives its diagonal as a column vector." },
  { "eigen", bi_eigen, "eigen(A)", OP_NONE, 0, "[values, vectors] = eigen(A) for symmetric A: eigenvalues (column, decreasing) and eigenvectors." },
  { "exists", bi_exists, "exists(name)", OP_NONE, 0, "TRUE when a variable or builtin of that name (a string) exists." },
  { "exp", bi_unary, "exp(x)", OP_EXP, DIFF, "e to the power x, elementwise." },
  { "floor", bi_unary, "floor(x)", OP_FLOOR, DIFF, "Largest whole number not above x, elementwise." },
  { "help", bi_help, "help(topic=)", OP_NONE, INV,
    "Shows the signature and text of a builtin or user function; help() lists every builtin." },
  { "identity", bi_identity, "identity(x)", OP_NONE, DIFF, "Returns x." },
  { "ifdef", bi_ifdef, "ifdef(value, default)", OP_NONE, BI_IFDEF,
    "ifdef($k, d) is the command-line value $k when it was given, else d." },
  { "ifelse", bi_ifelse, "ifelse(test, yes, no)", OP_NONE, DIFF, "Elementwise choice: yes where test is nonzero, else no (numbers broadcast)." },
  { "inv", bi_inv, "inv(A)", OP_NONE, DIFF, "Inverse of a square matrix (LAPACK); a singular A is an error." },
  { "is.na", bi_is_na, "is.na(x)", OP_NONE, 0, "1 where x is NaN, else 0 (elementwise; TRUE/FALSE for a number)." },
  { "is.nan", bi_is_na, "is.nan(x)", OP_NONE, 0, "1 where x is NaN, else 0 (elementwise; TRUE/FALSE for a number)." },
  { "length", bi_length, "length(x)", OP_NONE, 0, "Number of elements of a matrix or list (1 for a number or string)." },
  { "list", bi_list, "list(...)", OP_NONE, DIFF, "A list of the arguments; named arguments become named elements." },
  { "load", bi_load, "load(path)", OP_NONE, 0, "Reads a checkpoint written by save() and returns its values as a named list." },
  { "log", bi_log, "log(x, base=)", OP_LOG, DIFF, "Natural logarithm, or logarithm to base; elementwise. log(-1) is NaN." },
  { "ls", bi_ls, "ls()", OP_NONE, INV, "Lists the variables in scope with their types and shapes." },
  { "matrix", bi_matrix, "matrix(v, rows=, cols=, byrow=TRUE)", OP_NONE, 0,
    "Builds a rows x cols matrix from v: a number (filled), a string of numbers \"1 2 3 4\",\n"
    "or a matrix to reshape (row-major; byrow=FALSE fills column by column as R does).\n"
    "Either rows or cols may be left out when v has the elements." },
  { "max", bi_minmax, "max(x, y=)", OP_MAX2, DIFF, "Largest element of x, or elementwise maximum of x and y." },
  { "mean", bi_mean, "mean(x)", OP_NONE, DIFF, "Arithmetic mean of all elements." },
  { "min", bi_minmax, "min(x, y=)", OP_MIN2, DIFF, "Smallest element of x, or elementwise minimum of x and y." },
  { "names", bi_names, "names(L)", OP_NONE, 0, "The names of a list's elements, as a list of strings (\"\" when unnamed)." },
  { "ncol", bi_ncol, "ncol(X)", OP_NONE, 0, "Number of columns (1 for a number)." },
  { "nrow", bi_nrow, "nrow(X)", OP_NONE, 0, "Number of rows (1 for a number)." },
  { "order", bi_order, "order(target, by=1, decreasing=FALSE, index.return=FALSE)", OP_NONE, 0, "Sorts the rows of target by column by (stable); index.return=TRUE gives the row indices." },
  { "outer", bi_outer, "outer(a, b, op=\"*\")", OP_NONE, 0, "Matrix of op(a[i], b[j]) for column vector a and row vector b; op is \"+\", \"-\", \"*\", \"/\", \"^\", a comparison, \"min\" or \"max\"." },
  { "paste", bi_paste, "paste(..., sep=\" \")", OP_NONE, 0,
    "Joins the text of its arguments with sep (numbers to 15 significant digits)." },
  { "print", bi_print, "print(x, digits=7)", OP_NONE, INV,
    "Prints a value: numbers to 7 significant digits (or digits), strings as they are,\nmatrices one row a line (large ones elided)." },
  { "prod", bi_prod, "prod(x)", OP_NONE, DIFF, "Product of all elements." },
  { "qr", bi_qr, "qr(A)", OP_NONE, 0, "[Q, R] = qr(A): orthonormal Q and upper-triangular R with Q %*% R = A." },
  { "quit", bi_quit, "quit(status=0)", OP_NONE, INV, "Ends the program (or the REPL) with the exit status." },
  { "rand", bi_rand, "rand(rows=1, cols=1, min=0, max=1, pdf=\"uniform\", sparsity=1, seed=)", OP_NONE, 0,
    "A random rows x cols matrix: pdf \"uniform\" on [min, max) or \"normal\" (mean 0, sd 1);\n"
    "sparsity is the fraction of nonzero cells. The same seed (or --seed) gives the same matrix\n"
    "on every run and machine (xoshiro256** seeded by splitmix64)." },
  { "rbind", bi_rbind, "rbind(...)", OP_NONE, 0, "Stacks matrices (and numbers) on top of each other; column counts must match." },
  { "read", bi_read, "read(path, format=, header=FALSE, sep=\",\")", OP_NONE, 0,
    "Reads a matrix from a file: format \"csv\" or \"text\" (i j v triples), else from the extension." },
  { "removeEmpty", bi_removeEmpty, "removeEmpty(target, margin, select=)", OP_NONE, 0, "Drops the all-zero rows (margin=\"rows\") or columns (margin=\"cols\"), or those not selected." },
  { "replace", bi_replace, "replace(target, pattern, replacement)", OP_NONE, 0, "Replaces every cell equal to pattern (NaN matches NaN) by replacement." },
  { "round", bi_unary, "round(x)", OP_ROUND, DIFF, "Rounds to the nearest whole number, halves to even (as R), elementwise." },
  { "rowIndexMax", bi_rowIndexMax, "rowIndexMax(X)", OP_NONE, 0, "Column index (1-based) of the largest element of each row; the first on ties." },
  { "rowIndexMin", bi_rowIndexMin, "rowIndexMin(X)", OP_NONE, 0, "Column index (1-based) of the smallest element of each row; the first on ties." },
  { "rowMaxs", bi_rowMaxs, "rowMaxs(X)", OP_NONE, DIFF, "Largest element of each row: an nrow(X) x 1 column vector." },
  { "rowMeans", bi_rowMeans, "rowMeans(X)", OP_NONE, DIFF, "Mean of each row: an nrow(X) x 1 column vector." },
  { "rowMins", bi_rowMins, "rowMins(X)", OP_NONE, DIFF, "Smallest element of each row: an nrow(X) x 1 column vector." },
  { "rowSums", bi_reduce, "rowSums(X)", OP_ROWSUMS, DIFF, "Sum of each row: an nrow(X) x 1 column vector." },
  { "sample", bi_sample, "sample(range, size, replace=FALSE, seed=)", OP_NONE, 0, "size values drawn from 1..range, without replacement unless replace=TRUE, as a column vector." },
  { "save", bi_save, "save(path, ...)", OP_NONE, INV, "save(path, a=X, b=Y) writes named numbers, strings and matrices to one checkpoint file (atomically)." },
  { "sd", bi_sd, "sd(x)", OP_NONE, DIFF, "Sample standard deviation of all elements (divisor n - 1, as R)." },
  { "seq", bi_seq, "seq(from, to, by=)", OP_NONE, 0,
    "Column vector from, from+by, ... up to to. by defaults to 1, or -1 when from > to." },
  { "sigmoid", bi_unary, "sigmoid(x)", OP_SIGMOID, DIFF, "1 / (1 + exp(-x)), elementwise and stable for large |x|." },
  { "sign", bi_unary, "sign(x)", OP_SIGN, DIFF, "-1, 0 or 1 by the sign of x, elementwise." },
  { "sin", bi_unary, "sin(x)", OP_SIN, DIFF, "Sine (radians), elementwise." },
  { "softmax", bi_softmax, "softmax(X)", OP_NONE, DIFF, "Row-wise softmax, computed stably (the row maximum is subtracted first)." },
  { "solve", bi_solve, "solve(A, b)", OP_NONE, DIFF, "Solves A x = b for square A (LAPACK dgesv); a singular A is an error." },
  { "source", bi_source, "source(path)", OP_NONE, INV,
    "Runs a file in the global scope; relative paths are looked up next to the calling script,\n"
    "then in the standard library ($MLS_PATH or stdlib/). source(path) as ns binds ns::name instead." },
  { "sprintf", bi_sprintf, "sprintf(fmt, ...)", OP_NONE, 0,
    "Formats numbers and strings C-style: %d %i %f %e %g %s %x %%, with flags, width and precision." },
  { "sqrt", bi_unary, "sqrt(x)", OP_SQRT, DIFF, "Square root, elementwise; sqrt(-1) is NaN." },
  { "stop", bi_stop, "stop(msg)", OP_NONE, 0, "Stops the program with the error message msg (exit status 1)." },
  { "sum", bi_reduce, "sum(x)", OP_SUM, DIFF, "Sum of all elements (a number)." },
  { "svd", bi_svd, "svd(A)", OP_NONE, 0, "[U, S, V] = svd(A): A = U %*% S %*% t(V), singular values on the diagonal of S, decreasing." },
  { "system.time", bi_system_time, "system.time(expr)", OP_NONE, INV | BI_LAZY, "Evaluates expr and prints the user, system and elapsed seconds it took; returns the elapsed seconds." },
  { "t", bi_t, "t(X)", OP_TRANSPOSE, DIFF, "Transpose." },
  { "table", bi_table, "table(A, B=, weights=, odim1=, odim2=)", OP_NONE, 0, "Contingency table: cell (A[i], B[i]) counts (or sums weights); with one argument, counts of each value." },
  { "tan", bi_unary, "tan(x)", OP_TAN, DIFF, "Tangent (radians), elementwise." },
  { "tanh", bi_unary, "tanh(x)", OP_TANH, DIFF, "Hyperbolic tangent, elementwise." },
  { "time", bi_time, "time()", OP_NONE, 0, "A monotonic clock in nanoseconds (differences measure elapsed time)." },
  { "toString", bi_toString, "toString(x)", OP_NONE, 0,
    "The full text of a value: numbers to 15 significant digits, matrices in full, one row a line." },
  { "trace", bi_trace, "trace(A)", OP_NONE, DIFF, "Sum of the diagonal of a square matrix." },
  { "var", bi_var, "var(x)", OP_NONE, DIFF, "Sample variance of all elements (divisor n - 1, as R)." },
  { "write", bi_write, "write(X, path, format=, header=FALSE, sep=\",\")", OP_NONE, INV,
    "Writes a matrix to a file: format \"csv\" or \"text\" (i j v triples), else from the extension.\n"
    "The write is atomic: a temporary file is renamed over the old one only when complete." },
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

void bi_open(Interp *I) {
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

Value bi_call(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, Span sp) {
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
  Span saved = I->call_span;
  const Builtin *saved_bi = I->cur_bi;
  I->call_span = sp;
  I->cur_bi = b;
  Value r = b->fn(I, &a);
  I->call_span = saved;
  I->cur_bi = saved_bi;
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
