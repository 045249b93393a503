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
#include "ops/rules.h"
#include "ops/shapes_impl.h"
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
  Tensor *out = tensor_new_on(I, be_place(I->cpu, I->device, cin, 2), rows, cols);
  tmp_push(I, val_mat(out));
  if (op_abstract_in(cin, nin)) op_abstract_stop(I, op, sp);   /* (out is held) */
  I->kernel_runs++;
  const Backend *be = be_runner(I->cpu, op, out, cin, nin, &I->be_fallbacks);
  if (be->run(be, op, out, cin, &p) != 0)
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

/* ---- derivative rules (ops/rules.h): the conv2d family is bilinear and closed under
** differentiation, so every rule is another op of the family (grad of grad works) ---- */
/* op on (x, y) with the call's parameter matrix (a temp). */
#define NN(op, x, y) T(I, op_nn(I, op, (Value[]){ x, y }, r->prm[0], sp))

/* The sums of g (N x C*HW) over the images and the pixels of each of the C = nrow(bias)
** channels (C x 1). */
static Value channel_sums(Interp *I, Value g, Value bias, Span sp) {
  bool n;
  int64_t gr, gc, c, one;
  rl_shape(g, &n, &gr, &gc);
  rl_shape(bias, &n, &c, &one);
  Value cs = T(I, op_reduce(I, OP_COLSUMS, g, sp));
  Value m = T(I, op_reshape(I, cs, c, gc / c, sp));
  return T(I, op_reduce(I, OP_ROWSUMS, m, sp));
}

void nn_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  Span sp = r->sp;
  Value a = r->in[0], b = r->nin > 1 ? r->in[1] : val_null();
  bool want0 = r->want[0], want1 = r->want[1];
  switch (r->op) {
  case OP_CONV2D:                           /* (X, W): dX = bwd_data(W, g), dW = bwd_filter(X, g) */
    if (want0) gin[0] = NN(OP_CONV2D_BWD_DATA, b, g);
    if (want1) gin[1] = NN(OP_CONV2D_BWD_FILT, a, g);
    return;
  case OP_CONV2D_BWD_DATA:                  /* (W, D) -> N x CHW: dW = bwd_filter(g, D), dD = conv2d(g, W) */
    if (want0) gin[0] = NN(OP_CONV2D_BWD_FILT, g, b);
    if (want1) gin[1] = NN(OP_CONV2D, g, a);
    return;
  case OP_CONV2D_BWD_FILT:                  /* (X, D) -> F x CRS: dX = bwd_data(g, D), dD = conv2d(X, g) */
    if (want0) gin[0] = NN(OP_CONV2D_BWD_DATA, g, b);
    if (want1) gin[1] = NN(OP_CONV2D, a, g);
    return;
  case OP_MAX_POOL: gin[0] = NN(OP_MAX_POOL_BWD, a, g); return;
  case OP_MAX_POOL_BWD:                     /* (X, D): piecewise constant in X; linear in D */
    if (want1) gin[1] = NN(OP_MAX_POOL_GATHER, a, g);
    return;
  case OP_MAX_POOL_GATHER:                  /* (X, G): the adjoint of max_pool_backward in G */
    if (want1) gin[1] = NN(OP_MAX_POOL_BWD, a, g);
    return;
  case OP_AVG_POOL: gin[0] = NN(OP_AVG_POOL_BWD, a, g); return;
  case OP_AVG_POOL_BWD:                     /* (X, D): X gives only the shape */
    if (want1) gin[1] = T(I, op_nn(I, OP_AVG_POOL, &g, r->prm[0], sp));
    return;
  case OP_BIAS_ADD:                         /* (X, b): db = the sums of g over each channel */
    if (want0) gin[0] = g;
    if (want1) gin[1] = channel_sums(I, g, b, sp);
    return;
  case OP_BIAS_MULTIPLY:
    if (want0) gin[0] = T(I, op_nn(I, OP_BIAS_MULTIPLY, (Value[]){ g, b }, val_null(), sp));
    if (want1) gin[1] = channel_sums(I, B2(OP_MUL, g, a), b, sp);
    return;
  default: break;
  }
  rl_no_rule(I, r->op, false, sp);
}

Value nn_jvp(Interp *I, const RuleArgs *r, const Value *tin) {
  Span sp = r->sp;
  OpKind op = r->op;
  Value a = r->in[0], b = r->nin > 1 ? r->in[1] : val_null(), ta = tin[0], tb = tin[1];
  switch (op) {
  case OP_CONV2D: case OP_CONV2D_BWD_DATA: case OP_CONV2D_BWD_FILT: case OP_BIAS_MULTIPLY: {   /* bilinear */
    Value prm = op == OP_BIAS_MULTIPLY ? val_null() : r->prm[0];
    return rl_tadd(I, ta.t == VT_NULL ? ta : T(I, op_nn(I, op, (Value[]){ ta, b }, prm, sp)),
                   tb.t == VT_NULL ? tb : T(I, op_nn(I, op, (Value[]){ a, tb }, prm, sp)), sp);
  }
  case OP_MAX_POOL: return ta.t == VT_NULL ? ta : T(I, op_nn(I, OP_MAX_POOL_GATHER, (Value[]){ a, ta }, r->prm[0], sp));
  case OP_AVG_POOL: return ta.t == VT_NULL ? ta : T(I, op_nn(I, OP_AVG_POOL, &ta, r->prm[0], sp));
  case OP_MAX_POOL_BWD: case OP_MAX_POOL_GATHER: case OP_AVG_POOL_BWD:   /* linear in the second */
    return tb.t == VT_NULL ? tb : T(I, op_nn(I, op, (Value[]){ a, tb }, r->prm[0], sp));
  case OP_BIAS_ADD:
    if (tb.t == VT_NULL) return ta;
    return T(I, op_nn(I, OP_BIAS_ADD, (Value[]){ ta.t == VT_NULL ? B2(OP_MULZ, val_num(0), a) : ta, tb }, val_null(), sp));
  default: break;
  }
  rl_no_rule(I, op, true, sp);
}

/* ---- shape rules (ops/shapes_impl.h): the checks above on shapes alone, same messages ---- */
/* ==== nn (ops/nn.c op_nn: nn_shapes, bias_shapes) ==== */
static void nn_need(Chk *k, OpKind op, int i, Shape v, int64_t rows, int64_t cols, const char *what, Span sp) {
  char d[64];
  if (sh_unknown(v) || v.kind == SK_NUMERIC) { k->sure = false; return; }
  if (v.kind != SK_MAT) {
    if (!shape_describe(v, d, sizeof d)) { chk_fail_unsaid(k); return; }
    chk_fail(k, sp, "bad argument #%d to '%s' (a %lldx%lld matrix (%s) expected, got %s)", i + 1, op_info[op].sym,
             (long long)rows, (long long)cols, what, d);
    return;
  }
  if (v.rows < 0 || v.cols < 0) {
    if ((v.rows >= 0 && v.rows != rows) || (v.cols >= 0 && v.cols != cols)) chk_fail_unsaid(k);
    else k->sure = false;
    return;
  }
  if (v.rows == rows && v.cols == cols) return;
  chk_fail(k, sp, "bad argument #%d to '%s' (a %lldx%lld matrix (%s) expected, got %lldx%lld)", i + 1, op_info[op].sym,
           (long long)rows, (long long)cols, what, (long long)v.rows, (long long)v.cols);
}

static ShapeStatus shape_rule_bias(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  char d[64];
  (void)x;
  for (int i = 0; i < 2; i++) {
    if (sh_unknown(in[i]) || in[i].kind == SK_NUMERIC) { k.sure = false; continue; }
    if (in[i].kind != SK_MAT) {
      if (!shape_describe(in[i], d, sizeof d)) chk_fail_unsaid(&k);
      else chk_fail(&k, sp, "bad argument #%d to '%s' (matrix expected, got %s)", i + 1, op_info[op].sym, d);
      return chk_status(&k);
    }
  }
  Shape a = in[0], b = in[1];
  if (a.kind == SK_MAT && b.kind == SK_MAT && b.rows >= 0 && b.cols >= 0) {
    int64_t K = a.cols, C = b.rows;
    if (b.cols != 1 || C == 0) {
      chk_fail(&k, sp, "bad argument #2 to '%s' (a C x 1 column vector of one bias per channel expected, got %lldx%lld)",
               op_info[op].sym, (long long)C, (long long)b.cols);
      return chk_status(&k);
    }
    if (K >= 0 && K % C != 0) {
      if (a.rows >= 0)
        chk_fail(&k, sp, "bad argument #1 to '%s' (N x C*H*W with C = %lld channels expected (the rows of bias), got %lldx%lld: "
                 "%lld columns are not a multiple of %lld)", op_info[op].sym, (long long)C, (long long)a.rows, (long long)K,
                 (long long)K, (long long)C);
      else chk_fail_unsaid(&k);
      return chk_status(&k);
    }
  }
  *out = a.kind == SK_MAT ? shape_mat(a.rows, a.cols) : shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN);
  return SHAPE_OK;
}

ShapeStatus shape_rule_nn(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  if (op == OP_BIAS_ADD || op == OP_BIAS_MULTIPLY) return shape_rule_bias(op, in, x, sp, out, err);
  const double *g = x ? x->nn : NULL;
  if (!g) { *out = shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN); return SHAPE_OK; }
  int64_t N = (int64_t)g[0], C = (int64_t)g[1], H = (int64_t)g[2], W = (int64_t)g[3], F = (int64_t)g[4], R = (int64_t)g[5],
          S = (int64_t)g[6], sh = (int64_t)g[7], sw = (int64_t)g[8], ph = (int64_t)g[9], pw = (int64_t)g[10];
  int64_t P = (H + 2 * ph - R) / sh + 1, Q = (W + 2 * pw - S) / sw + 1;
  int64_t CHW = C * H * W, CRS = C * R * S, FPQ = F * P * Q;
  char img[160], flt[160], outs[160];
  bool pool = op == OP_MAX_POOL || op == OP_MAX_POOL_BWD || op == OP_MAX_POOL_GATHER || op == OP_AVG_POOL || op == OP_AVG_POOL_BWD;
  snprintf(img, sizeof img, "N x C*H*W for input_shape [%lld,%lld,%lld,%lld]", (long long)N, (long long)C, (long long)H, (long long)W);
  if (pool) {
    snprintf(outs, sizeof outs, "N x C*P*Q: P x Q = %lldx%lld pooled from %lldx%lld", (long long)P, (long long)Q, (long long)H,
             (long long)W);
    flt[0] = 0;
  } else {
    snprintf(flt, sizeof flt, "F x C*Hf*Wf for filter_shape [%lld,%lld,%lld,%lld]", (long long)F, (long long)C, (long long)R,
             (long long)S);
    snprintf(outs, sizeof outs, "N x F*P*Q: P x Q = %lldx%lld from %lldx%lld", (long long)P, (long long)Q, (long long)H,
             (long long)W);
  }
  int64_t orows, ocols;
  switch (op) {
  case OP_CONV2D:
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], F, CRS, flt, sp);
    orows = N; ocols = FPQ;
    break;
  case OP_CONV2D_BWD_DATA:
    nn_need(&k, op, 0, in[0], F, CRS, flt, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], N, FPQ, outs, sp);
    orows = N; ocols = CHW;
    break;
  case OP_CONV2D_BWD_FILT:
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], N, FPQ, outs, sp);
    orows = F; ocols = CRS;
    break;
  case OP_MAX_POOL: case OP_AVG_POOL:
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    orows = N; ocols = FPQ;
    break;
  case OP_MAX_POOL_BWD: case OP_AVG_POOL_BWD:
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], N, FPQ, outs, sp);
    orows = N; ocols = CHW;
    break;
  default:                                                   /* OP_MAX_POOL_GATHER */
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], N, CHW, img, sp);
    orows = N; ocols = FPQ;
    break;
  }
  if (k.failed) return chk_status(&k);
  *out = shape_mat(orows, ocols);
  return SHAPE_OK;
}
