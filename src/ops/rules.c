/*
** rules.c — the helpers the families' derivative rules share (ops/rules.h): shapes through
** boxes, constant ones, summing an adjoint back over broadcasting, products with transpose
** flags, and forward mode's tangent arithmetic with VT_NULL for zero.
*/
#include "ops/family.h"
#include "ops/rules.h"

void rl_shape(Value v, bool *num, int64_t *r, int64_t *c) {
  v = ad_primal(v);
  *num = v.t != VT_MAT;
  *r = *num ? 1 : tensor_rows(v.u.m);
  *c = *num ? 1 : tensor_cols(v.u.m);
}

Value rl_ones(Interp *I, int64_t r, int64_t c) {
  Tensor *t = tensor_new(I, r, c);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < r * c; i++) d[i] = 1;
  return T(I, val_mat(t));
}

Value rl_sum_to(Interp *I, Value g, Value x, Span sp) {
  bool xn, gn;
  int64_t xr, xc, gr, gc;
  rl_shape(x, &xn, &xr, &xc);
  rl_shape(g, &gn, &gr, &gc);
  if (xn) return gn ? g : T(I, op_reduce(I, OP_SUM, g, sp));
  if (gn) return B2(OP_MUL, rl_ones(I, xr, xc), g);
  if (xr == gr && xc == gc) return g;
  if (xr == 1 && xc == 1) return B2(OP_MUL, rl_ones(I, 1, 1), T(I, op_reduce(I, OP_SUM, g, sp)));
  if (xr == 1) return T(I, op_reduce(I, OP_COLSUMS, g, sp));
  return T(I, op_reduce(I, OP_ROWSUMS, g, sp));
}

Value rl_tp(Interp *I, Value v, Span sp) { return T(I, op_transpose(I, v, sp)); }
Value rl_mm(Interp *I, Value a, Value b, Span sp) { return T(I, op_matmul(I, a, b, sp)); }

/* Numbers act as 1x1. An operand that is itself a transposed view (t() makes one) toggles its
** flag instead of being packed. */
Value rl_matmul_t(Interp *I, Value a, bool ta, Value b, bool tb, Span sp) {
  if ((a.t == VT_MAT && a.u.m->st->sparse) || (b.t == VT_MAT && b.u.m->st->sparse))   /* through the ops */
    return rl_mm(I, ta ? rl_tp(I, a, sp) : a, tb ? rl_tp(I, b, sp) : b, sp);
  bool fa, fb;
  Tensor *A = op_gemm_operand(I, a, &fa);
  T(I, val_mat(A));
  Tensor *B = op_gemm_operand(I, b, &fb);
  T(I, val_mat(B));
  ta ^= fa;
  tb ^= fb;
  int64_t m = ta ? tensor_cols(A) : tensor_rows(A), k = ta ? tensor_rows(A) : tensor_cols(A);
  int64_t k2 = tb ? tensor_cols(B) : tensor_rows(B), n = tb ? tensor_rows(B) : tensor_cols(B);
  if (k != k2) mls_throw(I, sp, "internal error: matmul_t shapes %lldx%lld and %lldx%lld", (long long)m, (long long)k, (long long)k2, (long long)n);
  return T(I, val_mat(op_gemm_new(I, ta, tb, A, B, sp)));
}

Value rl_tadd(Interp *I, Value a, Value b, Span sp) {
  if (a.t == VT_NULL) return b;
  if (b.t == VT_NULL) return a;
  return B2(OP_ADD, a, b);
}

Value rl_tmul(Interp *I, Value t, Value x, Span sp) { return t.t == VT_NULL ? t : B2(OP_MUL, t, x); }
Value rl_tneg(Interp *I, Value t, Span sp) { return t.t == VT_NULL ? t : U1(OP_NEG, t); }

l_noret rl_no_rule(Interp *I, OpKind op, bool forward, Span sp) {
  if (forward) mls_throw(I, sp, "jvp: '%s' has no forward rule", op_info[op].sym);
  mls_throw(I, sp, "grad: '%s' has no derivative rule", op_info[op].sym);
}
