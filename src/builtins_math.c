/*
** builtins_math.c — aggregates (var, sd, prod, row/column means, maxima, minima and their
** indices, cumulative sums and products), softmax and diag.
** Each is one op of ops.def (the table row names it) or a composition of op_* calls, so the
** grad tape and the stager see every step; the loops themselves live in backend/cpu_reduce.c.
** Arguments are borrowed (Args); every result is owned by the caller.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"
#include "mem.h"

/* Argument i must be a number, boolean or matrix (else "bad argument #i to 'f' (...)"). */
static void need_numeric(Interp *I, Args *a, int i) {
  Value v = ad_primal(a->v[i]);                                /* a value grad traces is fine */
  if (v.t == VT_MAT || v.t == VT_NUM || v.t == VT_BOOL) return;
  char d[64];
  bi_argerror(I, i + 1, "matrix expected, got %s", val_describe(v, d, sizeof d));
}

/* The builtins that are exactly one op: the row's op field says which. */
static Value reduce_row_op(Interp *I, Args *a) { return op_reduce(I, I->cur_bi->op, a->v[0], a->span); }
static Value scan_row_op(Interp *I, Args *a) { return op_scan(I, I->cur_bi->op, a->v[0], a->span); }

Value bi_prod(Interp *I, Args *a) { return reduce_row_op(I, a); }
Value bi_rowMaxs(Interp *I, Args *a) { return reduce_row_op(I, a); }
Value bi_rowMins(Interp *I, Args *a) { return reduce_row_op(I, a); }
Value bi_colMaxs(Interp *I, Args *a) { return reduce_row_op(I, a); }
Value bi_colMins(Interp *I, Args *a) { return reduce_row_op(I, a); }
Value bi_rowIndexMax(Interp *I, Args *a) { return reduce_row_op(I, a); }
Value bi_rowIndexMin(Interp *I, Args *a) { return reduce_row_op(I, a); }
Value bi_cumsum(Interp *I, Args *a) { return scan_row_op(I, a); }
Value bi_cumprod(Interp *I, Args *a) { return scan_row_op(I, a); }
Value bi_softmax(Interp *I, Args *a) { return scan_row_op(I, a); }
Value bi_logsoftmax(Interp *I, Args *a) { return scan_row_op(I, a); }
Value bi_diag(Interp *I, Args *a) { return op_diag(I, a->v[0], a->span); }

/* rowSums / ncol or colSums / nrow: an empty row or column gives NaN (0/0), as R. */
static Value means(Interp *I, Args *a, OpKind sums) {
  need_numeric(I, a, 0);
  Value x = a->v[0], px = ad_primal(x);                        /* shapes from the primal */
  double n = px.t != VT_MAT ? 1 : (double)(sums == OP_ROWSUMS ? tensor_cols(px.u.m) : tensor_rows(px.u.m));
  Value s = op_reduce(I, sums, x, a->span);
  tmp_push(I, s);
  Value r = op_binary(I, OP_DIV, s, val_num(n), a->span);
  tmp_pop(I, 1);
  val_release(s);
  return r;
}

Value bi_rowMeans(Interp *I, Args *a) { return means(I, a, OP_ROWSUMS); }
Value bi_colMeans(Interp *I, Args *a) { return means(I, a, OP_COLSUMS); }

/* Sample variance with divisor n - 1 by the two-pass formula sum((x - mean)^2) / (n - 1);
** fewer than two values give NaN (R gives NA). */
static Value variance(Interp *I, Args *a) {
  need_numeric(I, a, 0);
  Value x = a->v[0], px = ad_primal(x);
  if (px.t != VT_MAT || tensor_numel(px.u.m) < 2) return val_num(NAN);
  double n = (double)tensor_numel(px.u.m);
  Value s = op_reduce(I, OP_SUM, x, a->span);
  tmp_push(I, s);                                             /* a number, or a box under grad */
  Value mu = op_binary(I, OP_DIV, s, val_num(n), a->span);
  tmp_push(I, mu);
  Value d = op_binary(I, OP_SUB, x, mu, a->span);
  tmp_push(I, d);
  Value d2 = op_binary(I, OP_MUL, d, d, a->span);
  tmp_push(I, d2);
  Value ss = op_reduce(I, OP_SUM, d2, a->span);
  tmp_push(I, ss);
  Value r = op_binary(I, OP_DIV, ss, val_num(n - 1), a->span);
  tmp_pop(I, 5);
  val_release(ss);
  val_release(d2);
  val_release(d);
  val_release(mu);
  val_release(s);
  return r;
}

Value bi_var(Interp *I, Args *a) { return variance(I, a); }

Value bi_sd(Interp *I, Args *a) {
  Value v = variance(I, a);                                    /* a number, or a box under grad */
  tmp_push(I, v);
  Value r = op_unary(I, OP_SQRT, v, a->span);
  tmp_pop(I, 1);
  val_release(v);
  return r;
}

/* ---- DML math and statistics (issue 11 item 2) ----
** The differentiable ones compose op_* calls (K keeps each piece on the temp stack until the
** builtin returns); the order statistics and aggregate are plain C on the values. */
static Value K(Interp *I, Value v) { tmp_push(I, v); return v; }

/* The result r, kept past the release of the temporaries above mark. */
static Value keep(Interp *I, int mark, Value r) {
  val_retain(r);
  tmp_release_to(I, mark);
  return r;
}

static void dims(Value v, int64_t *r, int64_t *c) {
  v = ad_primal(v);
  *r = v.t == VT_MAT ? tensor_rows(v.u.m) : 1;
  *c = v.t == VT_MAT ? tensor_cols(v.u.m) : 1;
}

#define OB(op, x, y) K(I, op_binary(I, op, x, y, sp))
#define OR(op, x) K(I, op_reduce(I, op, x, sp))

Value bi_cummax(Interp *I, Args *a) { return scan_row_op(I, a); }
Value bi_cummin(Interp *I, Args *a) { return scan_row_op(I, a); }
Value bi_rowProds(Interp *I, Args *a) { return reduce_row_op(I, a); }
Value bi_cumsumprod(Interp *I, Args *a) { return reduce_row_op(I, a); }

/* Cumulative sums along each row: t(cumsum(t(X))); a column (one element a row) is itself. */
Value bi_rowCumsum(Interp *I, Args *a) {
  need_numeric(I, a, 0);
  Span sp = a->span;
  int64_t r, c;
  dims(a->v[0], &r, &c);
  if (c == 1) return op_binary(I, OP_ADD, a->v[0], val_num(0), sp);      /* X itself, through an op */
  if (r == 1) return op_scan(I, OP_CUMSUM, a->v[0], sp);   /* along the row already */
  int mark = I->ntmp;
  Value t1 = K(I, op_transpose(I, a->v[0], sp));
  Value s = K(I, op_scan(I, OP_CUMSUM, t1, sp));
  return keep(I, mark, K(I, op_transpose(I, s, sp)));
}
Value bi_colProds(Interp *I, Args *a) { return reduce_row_op(I, a); }

/* Sample variances of the rows or columns: sums((X - means)^2) / (n - 1); one element gives 0
** (SystemDS's CM variance; R gives NA), none NaN. */
static Value line_vars(Interp *I, Args *a, bool rows) {
  need_numeric(I, a, 0);
  Span sp = a->span;
  int mark = I->ntmp;
  int64_t r, c;
  dims(a->v[0], &r, &c);
  double n = (double)(rows ? c : r);
  OpKind sums = rows ? OP_ROWSUMS : OP_COLSUMS;
  Value mu = OB(OP_DIV, OR(sums, a->v[0]), val_num(n));
  Value d = OB(OP_SUB, a->v[0], mu);
  Value v = OB(OP_DIV, OR(sums, OB(OP_MUL, d, d)), val_num(n > 1 ? n - 1 : 1));
  return keep(I, mark, v);
}

static Value line_sds(Interp *I, Args *a, bool rows) {
  int mark = I->ntmp;
  Value v = K(I, line_vars(I, a, rows));
  return keep(I, mark, K(I, op_unary(I, OP_SQRT, v, a->span)));
}

Value bi_rowVars(Interp *I, Args *a) { return line_vars(I, a, true); }
Value bi_colVars(Interp *I, Args *a) { return line_vars(I, a, false); }
Value bi_rowSds(Interp *I, Args *a) { return line_sds(I, a, true); }
Value bi_colSds(Interp *I, Args *a) { return line_sds(I, a, false); }

/* Argument i must be an n x 1 matrix (n = rows when rows >= 0). */
static void need_column(Interp *I, Args *a, int i, int64_t rows) {
  Value v = ad_primal(a->v[i]);
  char d[64];
  if (v.t != VT_MAT && v.t != VT_NUM && v.t != VT_BOOL)
    bi_argerror(I, i + 1, "column vector expected, got %s", val_describe(v, d, sizeof d));
  int64_t r, c;
  dims(v, &r, &c);
  if (c != 1 || (rows >= 0 && r != rows)) {
    if (rows >= 0) bi_argerror(I, i + 1, "%lldx1 column vector expected, got %lldx%lld", (long long)rows, (long long)r, (long long)c);
    bi_argerror(I, i + 1, "column vector expected, got %lldx%lld", (long long)r, (long long)c);
  }
}

/* moment(X, k) / moment(X, W, k): the k-th central moment sum(W * (X - mu)^k) / sum(W) with
** mu = sum(W * X) / sum(W) (W = 1 without weights), for k = 2, 3 or 4 as DML. */
Value bi_moment(Interp *I, Args *a) {
  Span sp = a->span;
  bool weighted = bi_given(a, 1) && bi_given(a, 2);        /* moment(X, k) puts k in W's place */
  int ki = bi_given(a, 2) ? 2 : 1;
  if (!bi_given(a, ki)) mls_throw(I, sp, "missing argument 'k' to '%s': %s", I->cur_bi->name, I->cur_bi->sig);
  double k = bi_num(I, a, ki);
  if (k != 2 && k != 3 && k != 4) bi_argerror(I, ki + 1, "order 2, 3 or 4 expected, got %g", k);
  need_column(I, a, 0, -1);
  int64_t n, c;
  dims(a->v[0], &n, &c);
  if (weighted) need_column(I, a, 1, n);
  int mark = I->ntmp;
  Value X = a->v[0];
  Value W = weighted ? a->v[1] : val_num(1);
  Value sw = weighted ? OR(OP_SUM, W) : val_num((double)n);
  Value mu = OB(OP_DIV, OR(OP_SUM, OB(OP_MUL, W, X)), sw);
  Value d = OB(OP_SUB, X, mu);
  Value p = OB(OP_MUL, d, d);
  if (k >= 3) p = OB(OP_MUL, p, d);
  if (k >= 4) p = OB(OP_MUL, p, d);
  return keep(I, mark, OB(OP_DIV, OR(OP_SUM, OB(OP_MUL, W, p)), sw));
}

/* cov(X, Y) / cov(X, Y, W): sum(W (X - mx)(Y - my)) / (sum(W) - 1), weighted means (W counts). */
Value bi_cov(Interp *I, Args *a) {
  Span sp = a->span;
  need_column(I, a, 0, -1);
  int64_t n, c;
  dims(a->v[0], &n, &c);
  need_column(I, a, 1, n);
  bool weighted = bi_given(a, 2);
  if (weighted) need_column(I, a, 2, n);
  int mark = I->ntmp;
  Value X = a->v[0], Y = a->v[1];
  Value W = weighted ? a->v[2] : val_num(1);
  Value sw = weighted ? OR(OP_SUM, W) : val_num((double)n);
  Value mx = OB(OP_DIV, OR(OP_SUM, OB(OP_MUL, W, X)), sw);
  Value my = OB(OP_DIV, OR(OP_SUM, OB(OP_MUL, W, Y)), sw);
  Value s = OR(OP_SUM, OB(OP_MUL, W, OB(OP_MUL, OB(OP_SUB, X, mx), OB(OP_SUB, Y, my))));
  return keep(I, mark, OB(OP_DIV, s, OB(OP_SUB, sw, val_num(1))));
}

/* ---- order statistics: DML's quantile, median, interQuartileMean ----
** Each is a weighted sum of X's elements, the weights chosen by X's order: the result is
** S %*% X with S computed from the values (sum(S * X) for one). The order is read with
** ad_concrete, so a staged function runs them eagerly (explain says so), and grad gets the
** derivative S (almost everywhere: the order is locally constant). W (counts) is not traced. */
typedef struct VW { double v, w; int64_t i; } VW;

static int cmp_vw(const void *p, const void *q) {
  double a = ((const VW *)p)->v, b = ((const VW *)q)->v;
  if (a != a) return b != b ? 0 : 1;                  /* NaN last */
  if (b != b) return -1;
  if (a != b) return (a > b) - (a < b);
  int64_t i = ((const VW *)p)->i, j = ((const VW *)q)->i;
  return (i > j) - (i < j);                            /* stable: ties by position */
}

/* Stable merge sort of p[0..n) by cmp_vw (t: scratch of n): qsort's order, since the keys are
** distinct (ties go by position), but it polls Ctrl-C as it merges (qsort of 4e7 values took
** 33 s to stop). p and t are the builtin's scratch: a throw frees them. */
static void sort_vw(Interp *I, VW *p, VW *t, int64_t n) {
  if (n <= 16) {                                       /* insertion sort */
    for (int64_t i = 1; i < n; i++) {
      VW v = p[i];
      int64_t j = i;
      while (j > 0 && cmp_vw(&p[j - 1], &v) > 0) { p[j] = p[j - 1]; j--; }
      p[j] = v;
    }
    return;
  }
  int64_t h = n / 2;
  sort_vw(I, p, t, h);
  sort_vw(I, p + h, t, n - h);
  if (cmp_vw(&p[h - 1], &p[h]) <= 0) return;          /* already in order */
  memcpy(t, p, (size_t)h * sizeof(VW));
  int64_t i = 0, j = h, o = 0;
  while (i < h && j < n) {
    bi_poll(I, o, NULL);
    p[o++] = cmp_vw(&p[j], &t[i]) < 0 ? p[j++] : t[i++];
  }
  while (i < h) p[o++] = t[i++];
}

/* The values of column X (argument 0) with the weights of argument wi (-1: all 1), sorted;
** *sw = the total weight. The array is owned by the caller (mem_free). */
static VW *sorted_values(Interp *I, Args *a, int wi, int64_t *n, double *sw) {
  need_column(I, a, 0, -1);
  int64_t c;
  dims(a->v[0], n, &c);
  if (wi >= 0) need_column(I, a, wi, *n);
  if (*n == 0) bi_argerror(I, 1, "non-empty column vector expected, got 0x1");
  if (wi >= 0 && ad_any_grad(1, &a->v[wi])) bi_error(I, "grad cannot differentiate in the weights W");
  Value x = ad_concrete(I, a->v[0], a->span, "an order statistic's order");
  Value w = wi >= 0 ? ad_concrete(I, a->v[wi], a->span, "an order statistic's weights") : val_null();
  VW *p = bi_scratch(I, (size_t)*n * sizeof(VW));     /* the caller frees it (bi_scratch_free) */
  *sw = 0;
  for (int64_t i = 0; i < *n; i++) {
    bi_poll(I, i, NULL);
    p[i].v = x.t == VT_MAT ? tensor_at(x.u.m, i) : x.t == VT_NUM ? x.u.n : x.u.b;
    p[i].w = w.t == VT_MAT ? tensor_at(w.u.m, i) : w.t == VT_NUM ? w.u.n : w.t == VT_BOOL ? w.u.b : 1;
    p[i].i = i;
    if (!(p[i].w >= 0)) {
      double bad = p[i].w;
      bi_argerror(I, wi + 1, "weights must be non-negative, got %g", bad);
    }
    *sw += p[i].w;
  }
  if (wi >= 0 && *sw != floor(*sw)) {
    double t = *sw;
    bi_argerror(I, wi + 1, "weights must sum to a whole number (they are counts), got %g", t);
  }
  VW *t = bi_scratch(I, (size_t)*n * sizeof(VW));
  sort_vw(I, p, t, *n);
  bi_scratch_free(I, t);
  return p;
}

/* The sorted index k holding (1-based) position pos of the values expanded by their weights. */
static int64_t at_pos(const VW *p, int64_t n, double pos) {
  double cum = 0;
  for (int64_t k = 0; k < n; k++) {
    cum += p[k].w;
    if (cum >= pos) return k;
  }
  return n - 1;
}

/* S %*% X for the n x 1 X of argument 0 and the q x n selection S (taken over), as
** rowSums(S *0 t(X)) so that an Inf or NaN not selected stays out; a number when asked. */
static Value select_sum(Interp *I, Args *a, Tensor *S, bool number) {
  Span sp = a->span;
  int mark = I->ntmp;
  K(I, val_mat(S));
  Value xt = K(I, op_transpose(I, a->v[0], sp));
  Value r = OR(number ? OP_SUM : OP_ROWSUMS, OB(OP_MULZ, val_mat(S), xt));
  return keep(I, mark, r);
}

static Tensor *zeros(Interp *I, int64_t r, int64_t c) {
  Tensor *t = tensor_new(I, r, c);
  if (r > 0 && c > 0) memset(tensor_data(t), 0, (size_t)(r * c) * sizeof(double));
  return t;
}

Value bi_quantile(Interp *I, Args *a) {
  bool weighted = bi_given(a, 1) && bi_given(a, 2);        /* quantile(X, P) puts P in W's place */
  int pi = bi_given(a, 2) ? 2 : 1;
  if (!bi_given(a, pi)) mls_throw(I, a->span, "missing argument 'P' to 'quantile': %s", I->cur_bi->sig);
  Value P = ad_concrete(I, a->v[pi], a->span, "a quantile's probability");
  char d[64];
  if (P.t != VT_MAT && P.t != VT_NUM) bi_argerror(I, pi + 1, "number or column vector expected, got %s", val_describe(P, d, sizeof d));
  int64_t pr = 1, pc = 1;
  dims(P, &pr, &pc);
  if (pc != 1) bi_argerror(I, pi + 1, "number or column vector expected, got %lldx%lld", (long long)pr, (long long)pc);
  for (int64_t i = 0; i < pr; i++) {
    double q = P.t == VT_MAT ? tensor_at(P.u.m, i) : P.u.n;
    if (!(q >= 0 && q <= 1)) bi_argerror(I, pi + 1, "probabilities in [0, 1] expected, got %g", q);
  }
  int64_t n;
  double sw;
  VW *p = sorted_values(I, a, weighted ? 1 : -1, &n, &sw);
  Tensor *S = zeros(I, pr, n);
  for (int64_t i = 0; i < pr; i++) {                    /* position ceil(p * n), at least 1 */
    double pos = ceil((P.t == VT_MAT ? tensor_at(P.u.m, i) : P.u.n) * sw);
    tensor_data(S)[i * n + p[at_pos(p, n, pos < 1 ? 1 : pos)].i] = 1;
  }
  bi_scratch_free(I, p);
  return select_sum(I, a, S, P.t == VT_NUM);
}

/* The middle value; for an even total weight the mean of the two middle ones (as R). */
Value bi_median(Interp *I, Args *a) {
  int64_t n;
  double sw;
  VW *p = sorted_values(I, a, bi_given(a, 1) ? 1 : -1, &n, &sw);
  Tensor *S = zeros(I, 1, n);
  double pos = ceil(0.5 * sw);
  if (fmod(sw, 2) == 0) {
    tensor_data(S)[p[at_pos(p, n, pos)].i] += 0.5;
    tensor_data(S)[p[at_pos(p, n, pos + 1)].i] += 0.5;
  } else tensor_data(S)[p[at_pos(p, n, pos)].i] = 1;
  bi_scratch_free(I, p);
  return select_sum(I, a, S, true);
}

/* The mean of the values at positions ceil(n/4)+1 .. ceil(3n/4) of sorted X expanded by its
** weights (n = sum(W)): DML's interQuartileMean; 0 when that range is empty. */
Value bi_interQuartileMean(Interp *I, Args *a) {
  int64_t n;
  double sw;
  VW *p = sorted_values(I, a, bi_given(a, 1) ? 1 : -1, &n, &sw);
  Tensor *S = zeros(I, 1, n);
  double from = ceil(0.25 * sw), to = ceil(0.75 * sw), cum = 0;
  for (int64_t k = 0; k < n && cum < to; k++) {
    double lo = cum > from ? cum : from, hi = cum + p[k].w < to ? cum + p[k].w : to;
    if (hi > lo) tensor_data(S)[p[k].i] = (hi - lo) / (to - from);
    cum += p[k].w;
  }
  bi_scratch_free(I, p);
  return select_sum(I, a, S, true);
}

/* ---- lower.tri / upper.tri ---- */
static Value tri(Interp *I, Args *a, bool lower) {
  Value X = ad_primal(a->v[0]);
  char d[64];
  if (X.t != VT_MAT && X.t != VT_NUM && X.t != VT_BOOL) bi_argerror(I, 1, "matrix expected, got %s", val_describe(X, d, sizeof d));
  bool diag = bi_opt_bool(I, a, 1, false), values = bi_opt_bool(I, a, 2, false);
  int64_t r, c;
  dims(X, &r, &c);
  Tensor *m = tensor_new(I, r, c);
  int64_t budget = 0;
  for (int64_t i = 0; i < r; i++) {
    bi_tick(I, &budget, c, m);
    for (int64_t j = 0; j < c; j++)
      tensor_data(m)[i * c + j] = lower ? (j < i || (diag && j == i)) : (j > i || (diag && j == i));
  }
  if (!values) return val_mat(m);
  int mark = I->ntmp;
  K(I, val_mat(m));
  Span sp = a->span;
  return keep(I, mark, OB(OP_MUL, a->v[0], val_mat(m)));      /* through the op: grad sees it */
}

Value bi_lower_tri(Interp *I, Args *a) { return tri(I, a, true); }
Value bi_upper_tri(Interp *I, Args *a) { return tri(I, a, false); }

/* ---- elementwise tests ---- */
/* is.infinite(x) (DML's isInf), and is.finite(x) (R's: neither Inf, -Inf, NaN nor NA): a logical
** matrix of 0/1 (a mask, docs/language.md "Logical masks"), TRUE/FALSE for a number. */
Value bi_is_inf(Interp *I, Args *a) {
  Value v = a->v[0];
  bool fin = !strcmp(I->cur_bi->name, "is.finite");
  if (v.t == VT_MAT) {
    Tensor *t = tensor_new(I, tensor_rows(v.u.m), tensor_cols(v.u.m));
    for (int64_t i = 0; i < tensor_numel(v.u.m); i++) {
      bi_poll(I, i, t);
      double x = tensor_at(v.u.m, i);
      tensor_data(t)[i] = (fin ? isfinite(x) : isinf(x)) ? 1 : 0;   /* (isinf(-Inf) is -1 in glibc) */
    }
    t->logical = true;
    return val_mat(t);
  }
  if (v.t == VT_NUM) return val_bool((fin ? isfinite(v.u.n) : isinf(v.u.n)) != 0);
  if (v.t == VT_BOOL) return val_bool(fin);
  char d[64];
  bi_argerror(I, 1, "number or matrix expected, got %s", val_describe(v, d, sizeof d));
}

/* contains(target, pattern): TRUE when some cell equals pattern (NaN matches NaN), as DML. */
Value bi_contains(Interp *I, Args *a) {
  Value v = a->v[0];
  double p = bi_num(I, a, 1);
  char d[64];
  if (v.t != VT_MAT && v.t != VT_NUM && v.t != VT_BOOL) bi_argerror(I, 1, "matrix expected, got %s", val_describe(v, d, sizeof d));
  int64_t n = v.t == VT_MAT ? tensor_numel(v.u.m) : 1;
  for (int64_t i = 0; i < n; i++) {
    bi_poll(I, i, NULL);
    double x = v.t == VT_MAT ? tensor_at(v.u.m, i) : v.t == VT_NUM ? v.u.n : v.u.b;
    if (x == p || (x != x && p != p)) return val_bool(true);
  }
  return val_bool(false);
}

/* xor(x, y) = (x != 0) != (y != 0), elementwise with broadcasting. */
Value bi_xor(Interp *I, Args *a) {
  Span sp = a->span;
  int mark = I->ntmp;
  return keep(I, mark, OB(OP_NE, OB(OP_NE, a->v[0], val_num(0)), OB(OP_NE, a->v[1], val_num(0))));
}

/* ---- append: list append, string append (a newline between), else cbind (SystemDS) ---- */
Value bi_append(Interp *I, Args *a) {
  Value x = a->v[0], y = a->v[1], px = ad_primal(x), py = ad_primal(y);
  if (px.t == VT_LIST) {
    List *l = list_copy(I, px.u.l);
    l->multi = false;
    if (py.t == VT_LIST && py.u.l->n == 1) {     /* SystemDS unfolds a list of one: append(L, list(X=X)) */
      val_retain(py.u.l->items[0]);
      list_push(l, py.u.l->items[0], py.u.l->names ? py.u.l->names[0] : NULL);
    } else {
      val_retain(y);
      list_push(l, y, NULL);
    }
    return val_list(l);
  }
  if (px.t == VT_STR || py.t == VT_STR) {
    char d[64];
    if (px.t != VT_STR) bi_argerror(I, 1, "string expected (the second argument is a string), got %s", val_describe(px, d, sizeof d));
    if (py.t != VT_STR) bi_argerror(I, 2, "string expected (the first argument is a string), got %s", val_describe(py, d, sizeof d));
    size_t n1 = strlen(px.u.s->s), n2 = strlen(py.u.s->s);
    char *buf = mem_alloc(n1 + n2 + 2);
    memcpy(buf, px.u.s->s, n1);
    buf[n1] = '\n';
    memcpy(buf + n1 + 1, py.u.s->s, n2 + 1);
    Value r = val_str(buf, n1 + n2 + 1);
    mem_free(buf);
    return r;
  }
  Args b = *a;                                   /* matrices: cbind(x, y) */
  Value dots[2] = { x, y };
  Symbol *names[2] = { NULL, NULL };
  b.dots = dots;
  b.dotnames = names;
  b.ndots = 2;
  return bi_cbind(I, &b);
}

/* ---- scale (SystemDS's builtin): [Y, ColMean, ScaleFactor] ---- */
Value bi_scale(Interp *I, Args *a) {
  need_numeric(I, a, 0);
  Span sp = a->span;
  bool center = bi_opt_bool(I, a, 1, true), scale = bi_opt_bool(I, a, 2, true);
  int64_t r, c;
  dims(a->v[0], &r, &c);
  int mark = I->ntmp;
  Value X = a->v[0];
  Value cm = K(I, val_mat(tensor_new(I, 0, 0))), sf = cm;
  if (center) {
    cm = OB(OP_DIV, OR(OP_COLSUMS, X), val_num((double)r));
    X = OB(OP_SUB, X, cm);
  }
  if (scale) {
    sf = K(I, op_unary(I, OP_SQRT, OB(OP_DIV, OR(OP_COLSUMS, OB(OP_MUL, X, X)), val_num((double)r - 1)), sp));
    Value bad = OB(OP_OR, OB(OP_EQ, sf, val_num(0)), OB(OP_NE, sf, sf));   /* 0 or NaN: 1 */
    sf = K(I, op_ifelse(I, bad, val_num(1), sf, sp));
    X = OB(OP_DIV, X, sf);
  }
  List *l = list_new(I, 3);
  l->multi = true;
  Value vals[3] = { X, cm, sf };
  static const char *const names[] = { "Y", "ColMean", "ScaleFactor" };
  for (int i = 0; i < 3; i++) {
    val_retain(vals[i]);
    list_push(l, vals[i], sym_intern(&I->syms, names[i], strlen(names[i])));
  }
  tmp_release_to(I, mark);
  return val_list(l);
}

/* ---- aggregate: grouped statistics (DML's groupedAggregate) ---- */
typedef enum { AG_SUM, AG_COUNT, AG_MEAN, AG_VAR, AG_CM, AG_MIN, AG_MAX } AgFn;

/* The 0-based group of row i, or -1 when the row is skipped (a NaN group, or one above k). */
static int64_t group_of(const Tensor *G, int64_t i, int64_t k) {
  double g = tensor_at(G, i);
  return g != g || floor(g) > (double)k ? -1 : (int64_t)floor(g) - 1;   /* (compared as doubles: g may be 1e300) */
}

/* aggregate(target=X, groups=G, fn=, ngroups=, weights=, order=): row k of the result is fn of
** the rows i of X (each column separately) with G[i] = k. Groups are whole numbers >= 1; a NaN
** group skips the row; groups above ngroups are dropped. Empty groups give 0. */
Value bi_aggregate(Interp *I, Args *a) {
  static const char *const fns[] = { "sum", "count", "mean", "variance", "centralmoment", "min", "max" };
  const char *f = bi_str(I, a, 2);
  int fn = -1;
  for (int k = 0; k < (int)(sizeof fns / sizeof fns[0]); k++)
    if (strcmp(f, fns[k]) == 0) fn = k;
  if (fn < 0) bi_argerror(I, 3, "fn must be \"sum\", \"count\", \"mean\", \"variance\", \"centralmoment\", \"min\" or \"max\", got \"%s\"", f);
  /* under grad (BI_AD) the target arrives boxed: sum and mean are then G %*% target, with G
  ** the group-membership weights, so the gradient flows back (it was silently zero); count does
  ** not depend on target; the rest have no rule yet. Groups are discrete: no gradient. */
  Value x0 = a->v[0].t == VT_BOX ? a->v[0] : val_null();
  if (x0.t == VT_BOX && fn != AG_SUM && fn != AG_MEAN && fn != AG_COUNT)
    bi_error(I, "fn=\"%s\" has no derivative rule yet under grad (sum, mean and count have)", f);
  if (a->n > 4 && a->v[4].t == VT_BOX) bi_error(I, "weights= cannot be differentiated yet under grad");
  for (int j = 0; j < a->n; j++) a->v[j] = ad_primal(a->v[j]);
  double order = 0;
  if (fn == AG_CM) {
    Value o = a->v[5];
    if (!bi_given(a, 5)) bi_error(I, "fn=\"centralmoment\" needs order= (2, 3 or 4)");
    order = o.t == VT_STR ? atof(o.u.s->s) : bi_num(I, a, 5);      /* DML writes order="2" */
    if (order != 2 && order != 3 && order != 4) bi_argerror(I, 6, "order 2, 3 or 4 expected, got %g", order);
  } else if (bi_given(a, 5)) bi_argerror(I, 6, "order= is for fn=\"centralmoment\" only");
  int mark = I->ntmp;
  Tensor *X = bi_mat(I, a, 0);
  tmp_push(I, val_mat(X));
  Tensor *G = bi_mat(I, a, 1);
  tmp_push(I, val_mat(G));
  int64_t n = tensor_rows(X), m = tensor_cols(X);
  if (tensor_cols(G) != 1 || tensor_rows(G) != n)
    bi_argerror(I, 2, "%lldx1 column vector expected, got %lldx%lld", (long long)n, (long long)tensor_rows(G), (long long)tensor_cols(G));
  Tensor *W = NULL;
  if (bi_given(a, 4)) {
    W = bi_mat(I, a, 4);
    tmp_push(I, val_mat(W));
    if (tensor_cols(W) != 1 || tensor_rows(W) != n)
      bi_argerror(I, 5, "%lldx1 column vector expected, got %lldx%lld", (long long)n, (long long)tensor_rows(W), (long long)tensor_cols(W));
  }
  if (m != 1 && (W || !bi_given(a, 3)))
    bi_argerror(I, 1, "column vector expected (a matrix needs ngroups= and no weights), got %lldx%lld", (long long)n, (long long)m);
  int64_t k = 0;
  for (int64_t i = 0; i < n; i++) {
    bi_poll(I, i, NULL);                                /* (what it holds: temp stack, scratch) */
    double g = tensor_at(G, i);
    if (g != g) continue;
    if (g < 1) bi_argerror(I, 2, "groups must be at least 1, got %g", g);
    if (!(g < 4503599627370496.0)) {          /* dropped by ngroups=, else too many groups */
      if (!bi_given(a, 3)) bi_argerror(I, 2, "groups must be below 2^52, got %g", g);
      continue;
    }
    if (floor(g) > k) k = (int64_t)floor(g);
  }
  if (bi_given(a, 3)) {
    double ng = bi_num(I, a, 3);
    if (!(ng >= 0 && ng < 4503599627370496.0) || ng != floor(ng))
      bi_argerror(I, 4, "a whole number from 0 below 2^52 expected, got %g", ng);
    k = (int64_t)ng;
  }
  /* per group and column: weight, weighted sum, then central sums in a second pass */
  size_t km = (size_t)(k * m + 1);
  double *sw = bi_scratch(I, 3 * km * sizeof(double)), *s1 = sw + km, *s2 = s1 + km;   /* one block */
  memset(sw, 0, 3 * km * sizeof(double));
  int64_t budget = 0;
  for (int64_t i = 0; i < n; i++) {
    bi_tick(I, &budget, m, NULL);
    int64_t gi = group_of(G, i, k);
    if (gi < 0) continue;
    double w = W ? tensor_at(W, i) : 1;
    for (int64_t j = 0; j < m; j++) {
      int64_t q = gi * m + j;
      double x = tensor_get(X, i, j), *e = &s1[q];
      if (fn == AG_MIN || fn == AG_MAX) {               /* s2: seen; NaN wins and stays */
        if (!s2[q]) { *e = x; s2[q] = 1; }
        else if (*e == *e && (x != x || (fn == AG_MIN ? x < *e : x > *e))) *e = x;
      } else *e += w * x;
      sw[q] += w;
    }
  }
  if (fn == AG_VAR || fn == AG_CM)
    for (int64_t i = 0; i < n; i++) {
      bi_tick(I, &budget, m, NULL);
      int64_t gi = group_of(G, i, k);
      if (gi < 0) continue;
      double w = W ? tensor_at(W, i) : 1;
      for (int64_t j = 0; j < m; j++) {
        double d = tensor_get(X, i, j) - s1[gi * m + j] / sw[gi * m + j];
        s2[gi * m + j] += w * (fn == AG_VAR ? d * d : pow(d, order));
      }
    }
  if (x0.t == VT_BOX && fn != AG_COUNT) {              /* G %*% target: traced */
    Tensor *A = tensor_zeros(I, k, n);
    tmp_push(I, val_mat(A));
    double *ad = tensor_data(A);
    for (int64_t i = 0; i < n; i++) {
      bi_poll(I, i, NULL);
      int64_t gi = group_of(G, i, k);
      if (gi < 0) continue;
      double w = W ? tensor_at(W, i) : 1, tot = sw[gi * m];
      ad[gi * n + i] = fn == AG_SUM ? w : tot == 0 ? 0 : w / tot;
    }
    bi_scratch_free(I, sw);
    Value r = op_matmul(I, val_mat(A), x0, a->span);
    tmp_release_to(I, mark);
    return r;
  }
  Tensor *out = tensor_new(I, k, m);
  for (int64_t q = 0; q < k * m; q++) {
    bi_poll(I, q, out);
    double w = sw[q], r;
    switch ((AgFn)fn) {
    case AG_SUM: r = s1[q]; break;
    case AG_COUNT: r = w; break;
    case AG_MEAN: r = w == 0 ? 0 : s1[q] / w; break;
    case AG_VAR: r = w == 0 || w == 1 ? 0 : s2[q] / (w - 1); break;   /* SystemDS: 0 for one */
    case AG_CM: r = w == 0 ? 0 : s2[q] / w; break;
    default: r = s2[q] ? s1[q] : 0; break;                 /* min, max */
    }
    tensor_data(out)[q] = r;
  }
  bi_scratch_free(I, sw);
  tmp_release_to(I, mark);
  return val_mat(out);
}
