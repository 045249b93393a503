/*
** ops/nn.c — the deep-learning family (OPF_NN: conv2d, its backward ops, max and average
** pooling and theirs, bias_add, bias_multiply) on values: the shape checks against the geometry
** (errors naming both shapes), then the backend's kernels (backend/cpu_conv.c). Images are rows
** of an N x (C*H*W) matrix, NCHW row-major per row. The builtins (builtins_nn.c) call op_nn.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "autodiff.h"
#include "backend/backend.h"
#include "err.h"
#include "ops.h"
#include "ops/family.h"
#include "ops/nn.h"
#include "state.h"
#include "tensor.h"

/* ---- geometry ---- */
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
  if (op_abstract_in(cin, nin)) op_abstract_stop(I, op, sp);   /* (out is held) */
  I->kernel_runs++;
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
