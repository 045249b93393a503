/*
** builtins_nn.c — DML's deep-learning builtins (conv2d, conv2d_backward_data/filter, max_pool,
** avg_pool and their backward ops, bias_add, bias_multiply) and op_nn, the eager entry point
** of the OPF_NN ops: shape checks against the geometry, then the backend's kernels
** (backend/cpu_conv.c). Images are rows of an N x (C*H*W) matrix, NCHW row-major per row.
** Arguments are borrowed (Args); every result is owned by the caller.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "autodiff.h"
#include "backend/backend.h"
#include "builtins.h"
#include "err.h"
#include "ops.h"
#include "tensor.h"

/* ---- geometry ---- */
enum { NN_NPRM = 11 };    /* [N, C, H, W, F, R, S, sh, sw, ph, pw] */

static void geometry(const Tensor *prm, NnParams *g) {
  const double *d = tensor_data(prm);
  g->N = (int64_t)d[0]; g->C = (int64_t)d[1]; g->H = (int64_t)d[2]; g->W = (int64_t)d[3];
  g->F = (int64_t)d[4]; g->R = (int64_t)d[5]; g->S = (int64_t)d[6];
  g->sh = (int64_t)d[7]; g->sw = (int64_t)d[8]; g->ph = (int64_t)d[9]; g->pw = (int64_t)d[10];
  g->P = (g->H + 2 * g->ph - g->R) / g->sh + 1;
  g->Q = (g->W + 2 * g->pw - g->S) / g->sw + 1;
}

static bool is_pool(OpKind op) {
  return op == OP_MAX_POOL || op == OP_MAX_POOL_BWD || op == OP_MAX_POOL_GATHER || op == OP_AVG_POOL || op == OP_AVG_POOL_BWD;
}

/* Operand k of op must be a rows x cols matrix: "bad argument #k to 'conv2d' (a 2x18 matrix
** (N x C*H*W for input_shape [2,2,3,3]) expected, got 2x16)". */
static void need_shape(Interp *I, OpKind op, int k, Value v, int64_t rows, int64_t cols, const char *what, Span sp) {
  char d[64];
  if (v.t != VT_MAT) {
    mls_throw(I, sp, "bad argument #%d to '%s' (a %lldx%lld matrix (%s) expected, got %s)", k + 1, op_info[op].sym,
              (long long)rows, (long long)cols, what, val_describe(v, d, sizeof d));
  }
  if (tensor_rows(v.u.m) == rows && tensor_cols(v.u.m) == cols) return;
  mls_throw(I, sp, "bad argument #%d to '%s' (a %lldx%lld matrix (%s) expected, got %lldx%lld)", k + 1, op_info[op].sym,
            (long long)rows, (long long)cols, what, (long long)tensor_rows(v.u.m), (long long)tensor_cols(v.u.m));
}

/* The operands' expected shapes and the result's, for op with geometry g. */
static void nn_shapes(Interp *I, OpKind op, const NnParams *g, const Value *in, int64_t *orows, int64_t *ocols, Span sp) {
  char img[160], flt[160], out[160];
  int64_t CHW = g->C * g->H * g->W, CRS = g->C * g->R * g->S, FPQ = g->F * g->P * g->Q;
  snprintf(img, sizeof img, "N x C*H*W for input_shape [%lld,%lld,%lld,%lld]", (long long)g->N, (long long)g->C,
           (long long)g->H, (long long)g->W);
  if (is_pool(op)) {
    snprintf(out, sizeof out, "N x C*P*Q: P x Q = %lldx%lld pooled from %lldx%lld", (long long)g->P, (long long)g->Q,
             (long long)g->H, (long long)g->W);
    flt[0] = 0;
  } else {
    snprintf(flt, sizeof flt, "F x C*Hf*Wf for filter_shape [%lld,%lld,%lld,%lld]", (long long)g->F, (long long)g->C,
             (long long)g->R, (long long)g->S);
    snprintf(out, sizeof out, "N x F*P*Q: P x Q = %lldx%lld from %lldx%lld", (long long)g->P, (long long)g->Q,
             (long long)g->H, (long long)g->W);
  }
  switch (op) {
  case OP_CONV2D:
    need_shape(I, op, 0, in[0], g->N, CHW, img, sp);
    need_shape(I, op, 1, in[1], g->F, CRS, flt, sp);
    *orows = g->N; *ocols = FPQ;
    break;
  case OP_CONV2D_BWD_DATA:
    need_shape(I, op, 0, in[0], g->F, CRS, flt, sp);
    need_shape(I, op, 1, in[1], g->N, FPQ, out, sp);
    *orows = g->N; *ocols = CHW;
    break;
  case OP_CONV2D_BWD_FILT:
    need_shape(I, op, 0, in[0], g->N, CHW, img, sp);
    need_shape(I, op, 1, in[1], g->N, FPQ, out, sp);
    *orows = g->F; *ocols = CRS;
    break;
  case OP_MAX_POOL: case OP_AVG_POOL:
    need_shape(I, op, 0, in[0], g->N, CHW, img, sp);
    *orows = g->N; *ocols = FPQ;
    break;
  case OP_MAX_POOL_BWD: case OP_AVG_POOL_BWD:
    need_shape(I, op, 0, in[0], g->N, CHW, img, sp);
    need_shape(I, op, 1, in[1], g->N, FPQ, out, sp);
    *orows = g->N; *ocols = CHW;
    break;
  case OP_MAX_POOL_GATHER:
    need_shape(I, op, 0, in[0], g->N, CHW, img, sp);
    need_shape(I, op, 1, in[1], g->N, CHW, img, sp);
    *orows = g->N; *ocols = FPQ;
    break;
  default: MLS_ASSERT(0);
  }
}

/* bias_add / bias_multiply: input N x K, bias C x 1 with K a multiple of C. */
static void bias_shapes(Interp *I, OpKind op, const Value *in, Span sp) {
  char d[64];
  for (int k = 0; k < 2; k++)
    if (in[k].t != VT_MAT)
      mls_throw(I, sp, "bad argument #%d to '%s' (matrix expected, got %s)", k + 1, op_info[op].sym,
                val_describe(in[k], d, sizeof d));
  int64_t K = tensor_cols(in[0].u.m), C = tensor_rows(in[1].u.m);
  if (tensor_cols(in[1].u.m) != 1 || C == 0)
    mls_throw(I, sp, "bad argument #2 to '%s' (a C x 1 column vector of one bias per channel expected, got %lldx%lld)",
              op_info[op].sym, (long long)C, (long long)tensor_cols(in[1].u.m));
  if (K % C != 0)
    mls_throw(I, sp, "bad argument #1 to '%s' (N x C*H*W with C = %lld channels expected (the rows of bias), got %lldx%lld: "
              "%lld columns are not a multiple of %lld)", op_info[op].sym, (long long)C, (long long)tensor_rows(in[0].u.m),
              (long long)K, (long long)K, (long long)C);
}

static bool all_finite(const Tensor *t) {
  const double *d = tensor_data(t);
  for (int64_t i = 0; i < tensor_numel(t); i++)
    if (!isfinite(d[i])) return false;
  return true;
}

Value op_nn(Interp *I, OpKind op, const Value *in, Value prm, Span sp) {
  int nin = op_info[op].arity;
  bool bias = op == OP_BIAS_ADD || op == OP_BIAS_MULTIPLY;
  bool traced = I->stage != NULL;
  for (int k = 0; k < nin; k++) traced = traced || in[k].t == VT_BOX;
  if (traced) return op_apply(I, op, nin, in, bias ? 0 : 1, &prm, sp);
  int64_t rows, cols;
  NnParams g;
  OpParams p;
  memset(&p, 0, sizeof p);
  if (bias) {
    bias_shapes(I, op, in, sp);
    rows = tensor_rows(in[0].u.m);
    cols = tensor_cols(in[0].u.m);
  } else {
    MLS_ASSERT(prm.t == VT_MAT && tensor_numel(prm.u.m) == NN_NPRM);
    geometry(prm.u.m, &g);
    nn_shapes(I, op, &g, in, &rows, &cols, sp);
    p.nn = &g;
  }
  int mark = I->ntmp;
  Tensor *cin[2] = { NULL, NULL };
  for (int k = 0; k < nin; k++) {
    cin[k] = tensor_contiguous(I, in[k].u.m);
    tmp_push(I, val_mat(cin[k]));
  }
  Tensor *out = tensor_new_on(I, be_place(I->device, cin, 2), rows, cols);
  tmp_push(I, val_mat(out));
  const Backend *be = be_runner(op, out, cin, nin, &I->be_fallbacks);
  if (be->run(op, out, cin, &p) != 0)
    mls_throw(I, sp, "the %s backend cannot run '%s'", be->name, op_info[op].sym);
  if (I->interrupted) interp_check_interrupt(I, sp);  /* the kernel stopped early (out is held) */
  if (I->nan_check && !all_finite(out)) {          /* --nan-check: only when the inputs were finite */
    bool fin = true;
    for (int k = 0; k < nin; k++) fin = fin && all_finite(cin[k]);
    if (fin) nan_check_fail(I, op_info[op].sym, sp);
  }
  out->refcount++;
  tmp_release_to(I, mark);
  return val_mat(out);
}

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
