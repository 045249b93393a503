/*
** builtins_math.c — aggregates (var, sd, prod, row/column means, maxima, minima and their
** indices, cumulative sums and products), softmax and diag.
** Each is one op of ops.def (the table row names it) or a composition of op_* calls, so the
** grad tape and the stager see every step; the loops themselves live in backend/cpu_reduce.c.
** Arguments are borrowed (Args); every result is owned by the caller.
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"

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
