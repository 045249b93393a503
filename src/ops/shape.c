/*
** ops/shape.c — the ops that change a matrix's shape but not its values: reshape (a packed
** copy), transpose (a view), and the range a:b, whose length is its value.
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "ops/family.h"
#include "ops/rules.h"
#include "ops/shapes_impl.h"

Value shp_reshape(Interp *I, Value a, int64_t rows, int64_t cols, Span sp) {
  if (!is_numlike(a) && a.t != VT_MAT) op_bad_operand(I, OP_RESHAPE, a, sp);
  int64_t n = a.t == VT_MAT ? tensor_numel(a.u.m) : 1;
  if (rows * cols != n)
    mls_throw(I, sp, "cannot shape %lld values into a %lldx%lld matrix", (long long)n, (long long)rows, (long long)cols);
  Tensor *t = tensor_new_on(I, a.t == VT_MAT ? a.u.m->st->be : I->device, rows, cols);
  if (a.t == VT_MAT && tensor_is_contiguous(a.u.m) && a.u.m->st->be->copy2d) {   /* on the device */
    Tensor v = *a.u.m;
    v.shape[0] = rows; v.shape[1] = cols; v.stride[0] = cols; v.stride[1] = 1;
    if (t->st->be->copy2d(t->st->be, t, &v) != 0) { tensor_free_ref(t); mls_throw(I, sp, "reshape failed on the %s backend", t->st->be->name); }
    return val_mat(t);
  }
  double *d = tensor_data(t);
  if (a.t == VT_MAT)
    for (int64_t k = 0; k < n; k++) {
      if (interp_poll(I, k)) { tensor_free_ref(t); interp_check_interrupt(I, sp); }
      d[k] = tensor_at(a.u.m, k);
    }
  else if (n) d[0] = numv(a);
  return val_mat(t);
}

/* A view, never a copy (TH): t(X) %*% D becomes one GEMM with the transpose flag, and the ops
** that need packed rows pack it themselves (tensor_contiguous). */
Value shp_transpose(Interp *I, Value a, Span sp) {
  if (is_numlike(a)) return val_num(numv(a));
  if (a.t != VT_MAT) op_bad_operand(I, OP_TRANSPOSE, a, sp);
  return val_mat(tensor_view_t(a.u.m));
}

Value op_range(Interp *I, Value a, Value b, Span sp) {
  Value from0 = a;                            /* the length is discrete; under grad, from is not */
  bool traced = ad_any_grad(1, &from0);
  a = ad_concrete(I, a, sp, "a range's bound");
  b = ad_concrete(I, b, sp, "a range's bound");
  double from, to;
  if (a.t == VT_MAT && tensor_numel(a.u.m) == 1) from = tensor_data(a.u.m)[0];
  else if (is_numlike(a)) from = numv(a);
  else op_bad_operand(I, OP_RANGE, a, sp);
  if (b.t == VT_MAT && tensor_numel(b.u.m) == 1) to = tensor_data(b.u.m)[0];
  else if (is_numlike(b)) to = numv(b);
  else op_bad_operand(I, OP_RANGE, b, sp);
  int64_t n = op_range_count(I, from, to, sp);
  double step = to >= from ? 1.0 : -1.0;
  Tensor *out = tensor_new(I, n, 1);
  double *d = tensor_data(out);
  for (int64_t i = 0; i < n; i++) {
    if (interp_poll(I, i)) { tensor_free_ref(out); interp_check_interrupt(I, sp); }
    d[i] = traced ? step * (double)i : from + step * (double)i;
  }
  if (!traced) return val_mat(out);
  /* from traced by grad: from + step * i through the op '+' (the same bits), derivative 1 each */
  tmp_push(I, val_mat(out));
  Value r = op_binary(I, OP_ADD, from0, val_mat(out), sp);
  tmp_pop(I, 1);
  tensor_free_ref(out);
  return r;
}

/* The entry points (ops.h). */
Value op_reshape(Interp *I, Value a, int64_t rows, int64_t cols, Span sp) {
  return op_enter(I, OP_RESHAPE, 1, &a, 2, (Value[]){ val_num((double)rows), val_num((double)cols) }, sp);
}

Value op_transpose(Interp *I, Value a, Span sp) { return op_enter(I, OP_TRANSPOSE, 1, &a, 0, NULL, sp); }

/* ---- derivative rules (ops/rules.h): the same moves applied to the adjoint or tangent ---- */
void shp_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  Span sp = r->sp;
  if (r->op == OP_TRANSPOSE) { gin[0] = T(I, op_transpose(I, g, sp)); return; }
  if (r->op == OP_RESHAPE) {                /* the same elements back in the input's shape */
    Value p = ad_primal(r->in[0]);
    if (p.t != VT_MAT) gin[0] = T(I, op_reduce(I, OP_SUM, g, sp));
    else gin[0] = T(I, op_reshape(I, g, tensor_rows(p.u.m), tensor_cols(p.u.m), sp));
    return;
  }
  rl_no_rule(I, r->op, false, sp);
}

Value shp_jvp(Interp *I, const RuleArgs *r, const Value *tin) {
  Span sp = r->sp;
  if (r->op == OP_TRANSPOSE) return T(I, op_transpose(I, tin[0], sp));
  if (r->op == OP_RESHAPE)
    return T(I, op_reshape(I, tin[0], (int64_t)ad_primal(r->prm[0]).u.n, (int64_t)ad_primal(r->prm[1]).u.n, sp));
  rl_no_rule(I, r->op, true, sp);
}

/* ---- shape rules (ops/shapes_impl.h): the checks above on shapes alone, same messages ---- */
ShapeStatus shape_rule_transpose(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  (void)x;
  if (sh_numlike(a)) { *out = a.known ? shape_num(a.value) : shape_num_unknown(); return SHAPE_OK; }
  if (a.kind == SK_MAT) { *out = shape_mat(a.cols, a.rows); return SHAPE_OK; }
  if (a.kind == SK_NUMERIC || sh_unknown(a)) { *out = a.kind == SK_NUMERIC ? shape_numeric() : shape_any(); return SHAPE_OK; }
  sh_bad_operand(&k, op, a, sp);
  return chk_status(&k);
}

/* op_reshape(a, rows, cols) */
ShapeStatus shape_rule_reshape(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  int64_t rows = x ? x->rows : SHAPE_UNKNOWN, cols = x ? x->cols : SHAPE_UNKNOWN;
  sh_need_matlike(&k, op, a, sp);
  if (k.failed) return chk_status(&k);
  int64_t r, c;
  sh_dims(a, &r, &c);
  if (r >= 0 && c >= 0 && rows >= 0 && cols >= 0 && rows * cols != r * c) {
    chk_fail(&k, sp, "cannot shape %lld values into a %lldx%lld matrix", (long long)(r * c), (long long)rows, (long long)cols);
    return chk_status(&k);
  }
  *out = shape_mat(rows, cols);
  return SHAPE_OK;
}

/* A range's end as op_range reads it (a number, a boolean or a 1x1 matrix): 1 it is one (*v its
** value when *known), 0 it is not (the error), -1 cannot tell. */
static int range_end(Shape s, double *v, bool *known) {
  *known = false;
  *v = 0;
  if (sh_numlike(s)) { *known = s.known; *v = s.value; return 1; }
  if (s.kind == SK_MAT) {
    if (s.rows >= 0 && s.cols >= 0) {
      if (s.rows * s.cols != 1) return 0;
      *known = s.known;
      *v = s.value;
      return 1;
    }
    return s.rows == 0 || s.cols == 0 || s.rows > 1 || s.cols > 1 ? 0 : -1;
  }
  return s.kind == SK_NUMERIC || sh_unknown(s) ? -1 : 0;
}

/* The count of a:b from its finite ends (op_range). */
int64_t op_range_length(double from, double to) { return (int64_t)floor(fabs(to - from) + 1e-10) + 1; }

int64_t op_range_count(Interp *I, double from, double to, Span sp) {
  if (!isfinite(from) || !isfinite(to)) mls_throw(I, sp, "the ends of ':' must be finite numbers");
  if (fabs(to - from) >= 1e15) mls_throw(I, sp, "the range of ':' is too long");
  return op_range_length(from, to);
}

void sh_range_checks(Chk *k, Shape a, Shape b, Span sp, bool *known, double *from, double *to) {
  bool ka, kb;
  *known = false;
  int ea = range_end(a, from, &ka);
  if (ea == 0) { sh_bad_operand(k, OP_RANGE, a, sp); return; }
  if (ea < 0) k->sure = false;
  int eb = range_end(b, to, &kb);
  if (eb == 0) { sh_bad_operand(k, OP_RANGE, b, sp); return; }
  if (eb < 0) k->sure = false;
  if ((ka && !isfinite(*from)) || (kb && !isfinite(*to))) { chk_fail(k, sp, "the ends of ':' must be finite numbers"); return; }
  if (!ka || !kb) return;
  if (fabs(*to - *from) >= 1e15) { chk_fail(k, sp, "the range of ':' is too long"); return; }
  *known = true;
}

ShapeStatus shape_rule_range(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  bool known;
  double from, to;
  (void)op;
  (void)x;
  sh_range_checks(&k, in[0], in[1], sp, &known, &from, &to);
  if (k.failed) return chk_status(&k);
  *out = shape_mat(known ? op_range_length(from, to) : SHAPE_UNKNOWN, 1);
  return SHAPE_OK;
}
