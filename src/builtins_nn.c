/*
** builtins_nn.c — DML's deep-learning builtins (conv2d, conv2d_backward_data/filter, max_pool,
** avg_pool and their backward ops, bias_add, bias_multiply): their arguments read into the
** geometry's parameter matrix (ops/nn.h), then op_nn (ops/nn.c: shape checks and kernels).
** Arguments are borrowed (Args); every result is owned by the caller.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"
#include "ops.h"
#include "ops/nn.h"
#include "tensor.h"

/* ---- the builtins ---- */
/* Argument i as n whole numbers: a matrix or list of n numbers (DML's [a, b] or list(a, b)).
** min: the smallest value allowed (1 for sizes and strides, 0 for padding). */
static void ints(Interp *I, Args *a, int i, int n, int64_t min, double *out) {
  Value v = ad_concrete(I, a->v[i], a->span, "a shape argument");
  int got = -1;
  char d[64];
  if (v.t == VT_MAT) {
    got = (int)tensor_numel(v.u.m);
    if (got == n && (tensor_rows(v.u.m) == 1 || tensor_cols(v.u.m) == 1))
      for (int k = 0; k < n; k++) out[k] = tensor_at(v.u.m, k);
    else got = -1;
  } else if (v.t == VT_LIST && v.u.l->n == n) {
    got = n;
    for (int k = 0; k < n && got == n; k++) {
      Value x = ad_concrete(I, v.u.l->items[k], a->span, "a shape argument");
      if (x.t == VT_NUM) out[k] = x.u.n;
      else if (x.t == VT_MAT && tensor_numel(x.u.m) == 1) out[k] = tensor_data(x.u.m)[0];
      else got = -1;
    }
  }
  if (got != n) {
    if (v.t == VT_MAT) snprintf(d, sizeof d, "%lldx%lld", (long long)tensor_rows(v.u.m), (long long)tensor_cols(v.u.m));
    else val_describe(v, d, sizeof d);
    bi_argerror(I, i + 1, "%d whole numbers expected, as [%s], got %s", n,
                n == 4 ? "a, b, c, d" : "a, b", d);
  }
  for (int k = 0; k < n; k++)
    if (!(out[k] == floor(out[k]) && out[k] >= (double)min && out[k] < 1e9))
      bi_argerror(I, i + 1, "whole numbers %s expected, got %g", min ? "of at least 1" : "of at least 0", out[k]);
}

/* The parameter matrix of a call (+1) from its arguments: shape at ishape, filter_shape at
** fshape (or pool_size at fshape with fshape_n 2), stride and padding. */
static Tensor *params(Interp *I, Args *a, int ishape, int fshape, int fshape_n, int stride, int pad) {
  double in4[4], f4[4], st[2], pd[2];
  ints(I, a, ishape, 4, 1, in4);
  if (fshape_n == 4) ints(I, a, fshape, 4, 1, f4);
  else {
    double ps[2];
    ints(I, a, fshape, 2, 1, ps);
    f4[0] = in4[1]; f4[1] = in4[1]; f4[2] = ps[0]; f4[3] = ps[1];
  }
  ints(I, a, stride, 2, 1, st);
  ints(I, a, pad, 2, 0, pd);
  if (fshape_n == 4 && f4[1] != in4[1])
    bi_error(I, "filter_shape [%g,%g,%g,%g] has %g channels but input_shape [%g,%g,%g,%g] has %g",
             f4[0], f4[1], f4[2], f4[3], f4[1], in4[0], in4[1], in4[2], in4[3], in4[1]);
  const char *what = fshape_n == 4 ? "filter" : "pool";
  if (f4[2] > in4[2] + 2 * pd[0] || f4[3] > in4[3] + 2 * pd[1])
    bi_error(I, "the %s (%gx%g) is larger than the padded input (%gx%g: %gx%g with padding [%g,%g])",
             what, f4[2], f4[3], in4[2] + 2 * pd[0], in4[3] + 2 * pd[1], in4[2], in4[3], pd[0], pd[1]);
  Tensor *t = tensor_new(I, 1, NN_NPRM);
  double *d = tensor_data(t);
  d[0] = in4[0]; d[1] = in4[1]; d[2] = in4[2]; d[3] = in4[3];
  d[4] = f4[0]; d[5] = f4[2]; d[6] = f4[3];
  d[7] = st[0]; d[8] = st[1]; d[9] = pd[0]; d[10] = pd[1];
  return t;
}

/* Calls op on arguments 0..arity-1 with the parameter matrix of the call. */
static Value call_nn(Interp *I, Args *a, int ishape, int fshape, int fshape_n, int stride, int pad) {
  OpKind op = I->cur_bi->op;
  Tensor *prm = params(I, a, ishape, fshape, fshape_n, stride, pad);
  tmp_push(I, val_mat(prm));
  Value r = op_nn(I, op, a->v, val_mat(prm), a->span);
  tmp_pop(I, 1);
  tensor_free_ref(prm);
  return r;
}

/* conv2d(input, filter, input_shape, filter_shape, stride, padding, bias=): with bias (F x 1, as
** SystemDS's nn/layers/conv1d.dml passes it) the result is bias_add(conv2d(...), bias). */
Value bi_conv2d(Interp *I, Args *a) {
  if (bi_given(a, 6)) {
    double f4[4];
    ints(I, a, 3, 4, 1, f4);
    Value b = ad_primal(a->v[6]);
    char d[64];
    if (b.t == VT_MAT) snprintf(d, sizeof d, "%lldx%lld", (long long)tensor_rows(b.u.m), (long long)tensor_cols(b.u.m));
    else val_describe(b, d, sizeof d);
    if (b.t != VT_MAT || tensor_rows(b.u.m) != (int64_t)f4[0] || tensor_cols(b.u.m) != 1)
      bi_argerror(I, 7, "a %g x 1 matrix expected (one bias per filter), got %s", f4[0], d);
  }
  Value r = call_nn(I, a, 2, 3, 4, 4, 5);
  if (!bi_given(a, 6)) return r;
  tmp_push(I, r);
  Value in[2] = { r, a->v[6] };
  Value o = op_nn(I, OP_BIAS_ADD, in, val_null(), a->span);
  tmp_pop(I, 1);
  val_release(r);
  return o;
}
/* conv2d_backward_filter(input, dout, stride, padding, input_shape, filter_shape) */
Value bi_conv2d_backward_filter(Interp *I, Args *a) { return call_nn(I, a, 4, 5, 4, 2, 3); }
/* conv2d_backward_data(filter, dout, stride, padding, input_shape, filter_shape) */
Value bi_conv2d_backward_data(Interp *I, Args *a) { return call_nn(I, a, 4, 5, 4, 2, 3); }
/* max_pool(input, input_shape, pool_size, stride, padding), avg_pool likewise */
Value bi_max_pool(Interp *I, Args *a) { return call_nn(I, a, 1, 2, 2, 3, 4); }
/* max_pool_backward(input, dout, input_shape, pool_size, stride, padding), avg likewise */
Value bi_max_pool_backward(Interp *I, Args *a) { return call_nn(I, a, 2, 3, 2, 4, 5); }
/* bias_add(input, bias), bias_multiply(input, bias) */
Value bi_bias_add(Interp *I, Args *a) { return op_nn(I, I->cur_bi->op, a->v, val_null(), a->span); }
