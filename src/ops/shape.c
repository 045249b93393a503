/*
** ops/shape.c — the ops that change a matrix's shape but not its values: reshape (a packed
** copy), transpose (a view), and the range a:b, whose length is its value.
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "ops/family.h"

Value shp_reshape(Interp *I, Value a, int64_t rows, int64_t cols, Span sp) {
  if (!is_numlike(a) && a.t != VT_MAT) op_bad_operand(I, OP_RESHAPE, a, sp);
  int64_t n = a.t == VT_MAT ? tensor_numel(a.u.m) : 1;
  if (rows * cols != n)
    mls_throw(I, sp, "cannot shape %lld values into a %lldx%lld matrix", (long long)n, (long long)rows, (long long)cols);
  Tensor *t = tensor_new_on(I, a.t == VT_MAT ? a.u.m->st->be : I->device, rows, cols);
  if (a.t == VT_MAT && tensor_is_contiguous(a.u.m) && a.u.m->st->be->copy2d) {   /* on the device */
    Tensor v = *a.u.m;
    v.shape[0] = rows; v.shape[1] = cols; v.stride[0] = cols; v.stride[1] = 1;
    if (t->st->be->copy2d(t, &v) != 0) { tensor_free_ref(t); mls_throw(I, sp, "reshape failed on the %s backend", t->st->be->name); }
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
  if (!isfinite(from) || !isfinite(to)) mls_throw(I, sp, "the ends of ':' must be finite numbers");
  double span = fabs(to - from);
  if (span >= 1e15) mls_throw(I, sp, "the range of ':' is too long");
  int64_t n = (int64_t)floor(span + 1e-10) + 1;
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
