/*
** builtins_nn.c — DML's deep-learning builtins (conv2d, conv2d_backward_data/filter, max_pool,
** avg_pool and their backward ops, bias_add, bias_multiply): their arguments read into the
** geometry's parameter matrix (ops/nn.h), then op_nn (ops/nn.c: shape checks and kernels);
** batch_norm2d and batch_norm2d_backward, composed of ops.
** Arguments are borrowed (Args); every result is owned by the caller.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
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

/* ---- batch_norm2d and batch_norm2d_backward (SystemDS's fused builtins) ----
** Both are written with ops (bias_add, bias_multiply, colSums, matrix, rowSums, arithmetic), so
** grad, jvp and staging follow them exactly, as they follow any composition; every value made
** is held on the temp stack until the builtin returns. */
typedef struct Bn { Interp *I; Span sp; } Bn;

static Value bn_held(Bn *b, Value v) { tmp_push(b->I, v); return v; }
static Value bn_bin(Bn *b, OpKind op, Value x, Value y) { return bn_held(b, op_binary(b->I, op, x, y, b->sp)); }
static Value bn_bias(Bn *b, OpKind op, Value x, Value v) {
  Value in[2] = { x, v };
  return bn_held(b, op_nn(b->I, op, in, val_null(), b->sp));
}
/* The K x 1 sums of the channels of M (N x K*PQ): rowSums(matrix(colSums(M), rows=K)). */
static Value bn_chsum(Bn *b, Value M, int64_t K, int64_t PQ) {
  Value cs = bn_held(b, op_reduce(b->I, OP_COLSUMS, M, b->sp));
  Value r = bn_held(b, op_reshape(b->I, cs, K, PQ, b->sp));
  return bn_held(b, op_reduce(b->I, OP_ROWSUMS, r, b->sp));
}

/* The results' list (+1; [a, b, ...] = f(...) unpacks it), vals[i] named names[i]; then the temp
** stack back to mark. */
static Value bn_results(Interp *I, int mark, int n, const char *const names[], const Value vals[]) {
  List *l = list_new(I, n);
  Value r = val_list(l);
  tmp_push(I, r);
  l->multi = true;
  for (int i = 0; i < n; i++) {
    val_retain(vals[i]);
    list_push(l, vals[i], sym_intern(&I->syms, names[i], strlen(names[i])));
  }
  val_retain(r);
  tmp_release_to(I, mark);
  return r;
}

/* Argument i as a matrix (its rows and columns in *r, *c). */
static void bn_mat(Interp *I, Args *a, int i, int64_t *r, int64_t *c) {
  Value v = ad_primal(a->v[i]);
  char d[64];
  if (v.t != VT_MAT) bi_argerror(I, i + 1, "matrix expected, got %s", val_describe(v, d, sizeof d));
  *r = tensor_rows(v.u.m);
  *c = tensor_cols(v.u.m);
}
/* Argument i must be a K x 1 column, one value per channel of X. */
static void bn_column(Interp *I, Args *a, int i, int64_t K, const char *what) {
  int64_t r, c;
  bn_mat(I, a, i, &r, &c);
  if (r != K || c != 1)
    bi_argerror(I, i + 1, "%s: a %lldx1 column expected (one per channel), got %lldx%lld", what, (long long)K,
                (long long)r, (long long)c);
}
/* Argument i must be a number (or a 1x1 matrix); it is used as it is (grad may trace it). */
static void bn_number(Interp *I, Args *a, int i, const char *what) {
  Value v = ad_primal(a->v[i]);
  char d[64];
  if (v.t != VT_NUM && v.t != VT_BOOL && !(v.t == VT_MAT && tensor_numel(v.u.m) == 1))
    bi_argerror(I, i + 1, "%s: a number expected, got %s", what, val_describe(v, d, sizeof d));
}
/* X (argument ix) must be N x K*PQ; K is the rows of argument ik (a column). Sets *N, *K, *PQ. */
static void bn_geometry(Interp *I, Args *a, int ix, int ik, const char *what, int64_t *N, int64_t *K, int64_t *PQ) {
  int64_t kc, xc;
  bn_mat(I, a, ik, K, &kc);
  if (*K < 1 || kc != 1)
    bi_argerror(I, ik + 1, "%s: a C x 1 column expected (one per channel), got %lldx%lld", what, (long long)*K, (long long)kc);
  bn_mat(I, a, ix, N, &xc);
  if (xc % *K != 0 || xc == 0)
    bi_argerror(I, ix + 1, "N x C*H*W expected with C = %lld channels (the rows of argument #%d), got %lldx%lld",
                (long long)*K, ik + 1, (long long)*N, (long long)xc);
  *PQ = xc / *K;
}

/* [out, ema_mean_upd, ema_var_upd, cache_mean, cache_inv_var] =
**   batch_norm2d(X, gamma, beta, ema_mean, ema_var, mode, epsilon, mu), as SystemDS's. */
Value bi_batch_norm2d(Interp *I, Args *a) {
  int64_t N, K, PQ;
  bn_geometry(I, a, 0, 1, "scale (gamma)", &N, &K, &PQ);
  bn_column(I, a, 2, K, "bias (beta)");
  bn_column(I, a, 3, K, "running mean");
  bn_column(I, a, 4, K, "running variance");
  const char *mode = bi_str(I, a, 5);
  bool train = strcasecmp(mode, "train") == 0;
  if (!train && strcasecmp(mode, "test") != 0) bi_argerror(I, 6, "mode \"train\" or \"test\" expected, got \"%s\"", mode);
  bn_number(I, a, 6, "epsilon");
  bn_number(I, a, 7, "momentum (mu)");
  int mark = I->ntmp;
  Bn b = { I, a->span };
  Value X = a->v[0], gamma = a->v[1], beta = a->v[2], em = a->v[3], ev = a->v[4], eps = a->v[6], mu = a->v[7];
  Value mean, var, centered, emu = em, evu = ev;
  if (train) {                  /* the batch's per-channel mean and uncorrected variance */
    double cells = (double)N * (double)PQ;
    mean = bn_bin(&b, OP_DIV, bn_chsum(&b, X, K, PQ), val_num(cells));
    centered = bn_bias(&b, OP_BIAS_ADD, X, bn_held(&b, op_unary(I, OP_NEG, mean, b.sp)));
    Value sq = bn_bin(&b, OP_MUL, centered, centered);
    var = bn_bin(&b, OP_DIV, bn_chsum(&b, sq, K, PQ), val_num(cells));
    Value keep = bn_bin(&b, OP_SUB, val_num(1), mu);      /* mu * ema + (1 - mu) * batch */
    emu = bn_bin(&b, OP_ADD, bn_bin(&b, OP_MUL, mu, em), bn_bin(&b, OP_MUL, keep, mean));
    evu = bn_bin(&b, OP_ADD, bn_bin(&b, OP_MUL, mu, ev), bn_bin(&b, OP_MUL, keep, var));
  } else {                      /* the running statistics */
    mean = em;
    var = ev;
    centered = bn_bias(&b, OP_BIAS_ADD, X, bn_held(&b, op_unary(I, OP_NEG, mean, b.sp)));
  }
  Value inv = bn_bin(&b, OP_DIV, val_num(1), bn_held(&b, op_unary(I, OP_SQRT, bn_bin(&b, OP_ADD, var, eps), b.sp)));
  Value norm = bn_bias(&b, OP_BIAS_MULTIPLY, centered, inv);
  Value out = bn_bias(&b, OP_BIAS_ADD, bn_bias(&b, OP_BIAS_MULTIPLY, norm, gamma), beta);
  static const char *const names[] = { "out", "ema_mean_upd", "ema_var_upd", "cache_mean", "cache_inv_var" };
  Value vals[5] = { out, emu, evu, mean, inv };
  return bn_results(I, mark, 5, names, vals);
}

/* [dX, dgamma, dbeta] = batch_norm2d_backward(X, dout, gamma, epsilon, cache_mean, cache_inv_var):
** SystemDS's formula (LibMatrixDNN.batchNorm2DBackward, the chain rule of the train-mode forward
** through the batch's mean and variance, with the caches for them). */
Value bi_batch_norm2d_backward(Interp *I, Args *a) {
  int64_t N, K, PQ, dr, dc;
  bn_geometry(I, a, 0, 2, "scale (gamma)", &N, &K, &PQ);
  bn_mat(I, a, 1, &dr, &dc);
  if (dr != N || dc != K * PQ)
    bi_argerror(I, 2, "dout: a %lldx%lld matrix expected (the shape of X), got %lldx%lld", (long long)N,
                (long long)(K * PQ), (long long)dr, (long long)dc);
  bn_number(I, a, 3, "epsilon");
  bn_column(I, a, 4, K, "cache_mean");
  bn_column(I, a, 5, K, "cache_inv_var");
  int mark = I->ntmp;
  Bn b = { I, a->span };
  Value X = a->v[0], dout = a->v[1], gamma = a->v[2], mean = a->v[4], inv = a->v[5];
  double cells = (double)N * (double)PQ;
  Value centered = bn_bias(&b, OP_BIAS_ADD, X, bn_held(&b, op_unary(I, OP_NEG, mean, b.sp)));
  Value norm = bn_bias(&b, OP_BIAS_MULTIPLY, centered, inv);
  Value dbeta = bn_chsum(&b, dout, K, PQ);
  Value dgamma = bn_chsum(&b, bn_bin(&b, OP_MUL, dout, norm), K, PQ);
  Value dnorm = bn_bias(&b, OP_BIAS_MULTIPLY, dout, gamma);
  Value inv3 = bn_bin(&b, OP_MUL, bn_bin(&b, OP_MUL, inv, inv), inv);
  Value dvar = bn_chsum(&b, bn_bin(&b, OP_MUL, bn_bin(&b, OP_MUL, val_num(-0.5), bn_bias(&b, OP_BIAS_MULTIPLY, centered, inv3)),
                                   dnorm), K, PQ);
  Value ninv = bn_held(&b, op_unary(I, OP_NEG, inv, b.sp));
  Value dmean_norm = bn_chsum(&b, bn_bias(&b, OP_BIAS_MULTIPLY, dnorm, ninv), K, PQ);
  Value dmean_var = bn_bin(&b, OP_MUL, bn_chsum(&b, bn_bin(&b, OP_MUL, val_num(-2 / cells), centered), K, PQ), dvar);
  Value dmean = bn_bin(&b, OP_ADD, dmean_norm, dmean_var);
  Value zero = bn_held(&b, val_mat(tensor_zeros(I, 1, K * PQ)));
  Value dx_mean = bn_bin(&b, OP_MUL, val_num(1 / cells), bn_bias(&b, OP_BIAS_ADD, zero, dmean));
  Value dx_var = bn_bin(&b, OP_MUL, val_num(2 / cells), bn_bias(&b, OP_BIAS_MULTIPLY, centered, dvar));
  Value dX = bn_bin(&b, OP_ADD, bn_bin(&b, OP_ADD, bn_bias(&b, OP_BIAS_MULTIPLY, dnorm, inv), dx_mean), dx_var);
  static const char *const names[] = { "dX", "dgamma", "dbeta" };
  Value vals[3] = { dX, dgamma, dbeta };
  return bn_results(I, mark, 3, names, vals);
}
