/*
** autodiff.c — the tape, the trace kinds of grad and jvp (record an op, push a tangent), the
** derivative rules (vjp and jvp, expanded from ops.def for the elementwise ops), the backward
** pass, and grad()/value_and_grad() (ggml's backward design on a tape).
** Rules are written with the op entry points of ops.h, so when an outer grad is active the
** backward pass is recorded too and can be differentiated again. Every temporary made here
** sits on the temp stack (T()), so an error anywhere releases it.
*/
#include <float.h>
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "diag.h"
#include "backend/backend.h"
#include "builtins.h"
#include "err.h"
#include "interp/interp.h"
#include "mem.h"
#include "mpi/mpi.h"
#include "ops/index.h"
#include "staging/graph.h"
#include "staging/stage.h"
#include "tensor.h"

/* ---- tapes and boxes ---- */
static Value box_new(Tape *t, int node, Value v);
static void node_release(TNode *nd) {
  for (int k = 0; k < nd->nval; k++) val_release(nd->val[k]);
  val_release(nd->out);
  nd->nval = 0;
  nd->out = val_null();
  source_release(nd->src);
  nd->src = NULL;
}

void ad_tape_free(Tape *t) {
  for (int i = 0; i < t->n; i++) node_release(&t->nodes[i]);
  mem_free(t->nodes);
  mem_free(t);
}

void ad_box_free(Box *b) {
  Tape *t = b->tape;
  val_release(b->v);
  val_release(b->tangent);
  mem_free(b);
  if (--t->refcount == 0) ad_tape_free(t);
}

Value ad_box_new(Tape *t, int node, Value v) { return box_new(t, node, v); }
static Value box_new(Tape *t, int node, Value v) {    /* takes v (released if this fails) */
  Box *b = mem_try_alloc(sizeof *b);
  if (!b) {
    val_release(v);
    mem_oom(sizeof *b);
  }
  b->refcount = 1;
  b->tape = t;
  t->refcount++;
  b->node = node;
  b->v = v;
  b->tangent = val_null();
  Value r;
  r.t = VT_BOX;
  r.u.box = b;
  return r;
}

static int tape_push(Tape *t) {
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 64;
    t->nodes = mem_realloc(t->nodes, (size_t)t->cap * sizeof(TNode));
  }
  TNode *nd = &t->nodes[t->n];
  memset(nd, 0, sizeof *nd);
  nd->in[0] = nd->in[1] = nd->in[2] = -1;
  nd->out = val_null();
  return t->n++;
}

bool ad_any_grad(int n, const Value *v) {
  for (int i = 0; i < n; i++)
    for (Value x = v[i]; x.t == VT_BOX; x = x.u.box->v)
      if (x.u.box->tape->active && !x.u.box->tape->graph) return true;
  return false;
}

static bool grad_in(Value v, int depth) {
  if (v.t == VT_LIST && depth < 64)
    for (int i = 0; i < v.u.l->n; i++)
      if (grad_in(v.u.l->items[i], depth + 1)) return true;
  return ad_any_grad(1, &v);
}

bool ad_any_grad_deep(int n, const Value *v) {
  for (int i = 0; i < n; i++)
    if (grad_in(v[i], 0)) return true;
  return false;
}

bool ad_any_active(int n, const Value *v) {
  for (int i = 0; i < n; i++)
    for (Value x = v[i]; x.t == VT_BOX; x = x.u.box->v)
      if (x.u.box->tape->active) return true;
  return false;
}


static Value T(Interp *I, Value v) { tmp_push(I, v); return v; }   /* owned temp, freed by the caller's mark */

static Value fwd_apply(Interp *I, Tape *t, OpKind op, int nin, const Value *in, const Value *un,
                       int nextra, const Value *extra, Value out, Span sp);

/* v's values, read by a derivative rule that picks its form from them (borrowed). An abstract
** trace (explain) did not compute a staged value's elements: it stops here. */
static Value rule_values(Interp *I, Value v, Span sp, const char *what) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape->graph && x.u.box->tape->active && x.u.box->tape->graph->abstract &&
        !(x.u.box->tape->graph->nodes[x.u.box->node].flags & GF_CONSTANT))
      interp_abstract_stop(I, sp, "%s depends on a staged value's elements", what);
  Value p = ad_primal(v);
  if (p.t == VT_MAT && p.u.m->st->abstract) interp_abstract_stop(I, sp, "%s depends on a staged value's elements", what);
  return p;
}

/* Staging's stable rewrites (log(softmax(z)) -> logsoftmax(z), log(1 + exp(x)) -> softplus(x);
** docs/staging.md) made where a grad's tape records the log, so that its backward pass is the
** stable op's too: a graph optimizer rewriting the forward ops finds the backward ones already
** built from 1 / softmax(z) (jit(grad(f)) gave NaN where jit(f) was finite). Only on values a
** stage traces: eager code keeps eager's arithmetic. x is the log's operand; false when it is no such pattern. */
static bool stable_log(Interp *I, Value x, Span sp, Value *out) {
  bool staged = I->stage && I->stage->active;   /* x also traced by a stage (jit(grad(f))) */
  for (Value v = x; v.t == VT_BOX && !staged; v = v.u.box->v) staged = v.u.box->tape->graph && v.u.box->tape->active;
  if (!staged || x.t != VT_BOX || I->exact_rewrites) return false;
  Tape *t = x.u.box->tape;
  if (!t->active || t->graph || t->forward) return false;
  const TNode *p = &t->nodes[x.u.box->node];
  int32_t src = -1;                         /* the node whose operand the stable op takes */
  OpKind op = OP_NONE;
  if (p->op == OP_SOFTMAX) { src = x.u.box->node; op = OP_LOGSOFTMAX; }
  else if (p->op == OP_ADD)
    for (int k = 0; k < 2 && op == OP_NONE; k++) {
      Value one = ad_primal(p->val[k]);
      int32_t e = p->in[1 - k];
      if (p->in[k] < 0 && e >= 0 && t->nodes[e].op == OP_EXP) one = rule_values(I, p->val[k], sp, "a stable rewrite");
      if (p->in[k] < 0 && one.t == VT_NUM && one.u.n == 1 && e >= 0 && t->nodes[e].op == OP_EXP) { src = e; op = OP_SOFTPLUS; }
    }
  if (op == OP_NONE) return false;
  const TNode *s = &t->nodes[src];
  Value z = s->val[0];
  val_retain(z);
  if (s->in[0] >= 0) z = box_new(t, s->in[0], z);
  tmp_push(I, z);
  *out = op_apply(I, op, 1, &z, 0, NULL, sp);
  tmp_pop(I, 1);
  val_release(z);
  return true;
}

/* ---- the trace kinds of grad and jvp (op_apply, src/ops/apply.c, hands them their ops) ---- */
/* grad's tape: the op computed on the plain values, and a node recorded for the backward pass. */
static Value tape_process(Interp *I, Tape *t, const OpCall *c) {
  OpKind op = c->op;
  int nin = c->nin, nextra = c->nextra;
  const Value *in = c->in, *un = c->un, *ux = c->ux;
  Span sp = c->sp;
  Value stable;
  if (op == OP_LOG && stable_log(I, in[0], sp, &stable)) return stable;
  Value out = ad_apply_inner(I, c);
  if (!(op_info[op].flags & OPF_DIFF) || (op_info[op].flags & (OPF_CMP | OPF_DISCRETE))) return out;
  tmp_push(I, out);
  int id = tape_push(t);
  TNode *nd = &t->nodes[id];
  nd->op = (uint16_t)op;
  nd->nin = (uint8_t)nin;
  nd->span = sp;
  nd->src = I->src;
  if (nd->src) source_retain(nd->src);
  for (int k = 0; k < nin; k++) {
    Value v = in[k];
    while (v.t == VT_BOX && !v.u.box->tape->active) v = v.u.box->v;
    nd->in[k] = v.t == VT_BOX && v.u.box->tape == t ? v.u.box->node : -1;
    val_retain(un[k]);
    nd->val[nd->nval++] = un[k];
  }
  for (int k = 0; k < nextra && nd->nval < 6; k++) {
    val_retain(ux[k]);
    nd->val[nd->nval++] = ux[k];
  }
  val_retain(out);
  nd->out = out;
  tmp_pop(I, 1);
  return box_new(t, id, out);
}


/* jvp's tape: the op computed, its tangent pushed along by the op's forward rule. */
static Value forward_process(Interp *I, Tape *t, const OpCall *c) {
  Value out = ad_apply_inner(I, c);
  return fwd_apply(I, t, c->op, c->nin, c->in, c->un, c->nextra, c->ux, out, c->sp);
}

const TraceKind grad_kind = { "grad", tape_process };
const TraceKind jvp_kind = { "jvp", forward_process };

/* ---- helpers for the rules (every result is a temp on the stack) ---- */
static void shape(Value v, bool *num, int64_t *r, int64_t *c) {
  v = ad_primal(v);
  *num = v.t != VT_MAT;
  *r = *num ? 1 : tensor_rows(v.u.m);
  *c = *num ? 1 : tensor_cols(v.u.m);
}

static Value ones(Interp *I, int64_t r, int64_t c) {
  Tensor *t = tensor_new(I, r, c);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < r * c; i++) d[i] = 1;
  return T(I, val_mat(t));
}

#define B2(op, a, b) T(I, op_binary(I, op, a, b, sp))
#define U1(op, a) T(I, op_unary(I, op, a, sp))

/* g summed back to the shape of x (undoing broadcasting, LANGUAGE.md §5). */
static Value sum_to(Interp *I, Value g, Value x, Span sp) {
  bool xn, gn;
  int64_t xr, xc, gr, gc;
  shape(x, &xn, &xr, &xc);
  shape(g, &gn, &gr, &gc);
  if (xn) return gn ? g : T(I, op_reduce(I, OP_SUM, g, sp));
  if (gn) return B2(OP_MUL, ones(I, xr, xc), g);
  if (xr == gr && xc == gc) return g;
  if (xr == 1 && xc == 1) return B2(OP_MUL, ones(I, 1, 1), T(I, op_reduce(I, OP_SUM, g, sp)));
  if (xr == 1) return T(I, op_reduce(I, OP_COLSUMS, g, sp));
  return T(I, op_reduce(I, OP_ROWSUMS, g, sp));
}

/* op(A) %*% op(B) with op = transpose when the flag is set, on plain values: one GEMM with
** its transpose flags (TH's addmm), never a transposed copy. Numbers act as 1x1. An operand
** that is itself a transposed view (t() makes one) toggles its flag instead of being packed. */
static Value matmul_t(Interp *I, Value a, bool ta, Value b, bool tb, Span sp) {
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
  return val_mat(op_gemm_new(I, ta, tb, A, B, sp));
}

/* OPF_NN helpers: op on (x, y) with node nd's parameter matrix (a temp); the sums of g
** (N x C*HW) over the images and the pixels of each of the C = nrow(bias) channels (C x 1). */
#define NN(op, x, y) T(I, op_nn(I, op, (Value[]){ x, y }, nd->val[nd->nin], sp))
static Value channel_sums(Interp *I, Value g, Value bias, Span sp) {
  bool n;
  int64_t gr, gc, c, one;
  shape(g, &n, &gr, &gc);
  shape(bias, &n, &c, &one);
  Value cs = T(I, op_reduce(I, OP_COLSUMS, g, sp));
  Value m = T(I, op_reshape(I, cs, c, gc / c, sp));
  return T(I, op_reduce(I, OP_ROWSUMS, m, sp));
}

/* ---- eigen, cholesky, qr and svd (issue 25): the rules of OP_EIGVALS .. OP_SVD_V ----
** Each output of a factorization is an op of its own; a rule that needs another output gets it
** as that op (op_apply), and solves are the op solve, so an outer grad differentiates the rules
** too. Conventions, as PyTorch's linalg.eigh/cholesky/qr/svd and JAX's: eigen and cholesky
** take symmetric matrices, so their derivatives are along symmetric perturbations: the adjoint
** is symmetric (symmetrized) and a tangent direction is symmetrized first. qr is differentiable
** for m >= n at full rank; vectors at a repeated eigenvalue or singular value see la_fdiv. */
static Value tp(Interp *I, Value v, Span sp) { return T(I, op_transpose(I, v, sp)); }
static Value mm(Interp *I, Value a, Value b, Span sp) { return T(I, op_matmul(I, a, b, sp)); }
static Value la_out(Interp *I, OpKind op, Value a, Span sp) { return T(I, op_apply(I, op, 1, &a, 0, NULL, sp)); }
/* A^-1 B and X B^-1 */
static Value lsolve(Interp *I, Value A, Value B, Span sp) {
  return T(I, op_apply(I, OP_SOLVE, 2, (Value[]){ A, B }, 0, NULL, sp));
}
static Value rsolve(Interp *I, Value X, Value B, Span sp) { return tp(I, lsolve(I, tp(I, B, sp), tp(I, X, sp), sp), sp); }
static Value symm(Interp *I, Value X, Span sp) { return B2(OP_MUL, B2(OP_ADD, X, tp(I, X, sp)), val_num(0.5)); }

enum { LM_EYE, LM_LOWER, LM_PHI, LM_UPPER };
/* A constant n x n mask: the identity, the strict lower triangle, the lower triangle with 1/2 on
** the diagonal (Phi of the Cholesky rules), the upper triangle with the diagonal. */
static Value la_mask(Interp *I, int64_t n, int kind) {
  Tensor *t = tensor_new(I, n, n);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++)
      d[i * n + j] = kind == LM_EYE ? i == j : kind == LM_LOWER ? i > j : kind == LM_UPPER ? i <= j : i > j ? 1 : i == j ? 0.5 : 0;
  return T(I, val_mat(t));
}

/* The gaps of the k x 1 column w (eigenvalues, or squared singular values): D[j, k] = w[k] - w[j]
** and the ties, 1 where w[j] and w[k] are equal to rounding (|D| <= 64 k eps max|w|), the
** diagonal included. Ops, so a staged graph recomputes them from its run's values. */
static void la_gaps(Interp *I, Value w, Value *D, Value *tie, Span sp) {
  bool num;
  int64_t k, one;
  shape(w, &num, &k, &one);
  *D = B2(OP_SUB, tp(I, w, sp), B2(OP_MUL, ones(I, k, k), w));
  Value big = T(I, op_reduce(I, OP_MAX, U1(OP_ABS, w), sp));
  *tie = B2(OP_LE, U1(OP_ABS, *D), B2(OP_MUL, big, val_num(64.0 * (double)k * DBL_EPSILON)));
}

/* x with its entries averaged over each group of tied w (the k x k averaging matrix times x): at a
** repeated eigenvalue or singular value the derivatives of the tied ones are split evenly, as
** max() splits its derivative among tied elements, so they do not depend on the basis LAPACK
** chose for their vectors; elsewhere x itself. Sums over a group are exact either way. */
static Value la_tie_mean(Interp *I, Value x, Value w, Span sp) {
  Value D, tie;
  la_gaps(I, w, &D, &tie, sp);
  return mm(I, B2(OP_DIV, tie, T(I, op_reduce(I, OP_ROWSUMS, tie, sp))), x, sp);
}

/* F o X with F[j, k] = 1 / (w[k] - w[j]) off the diagonal and 0 on it: the eigenvector (w = the
** eigenvalues) and singular-vector (w = the squared singular values) rules. At a pair of tied
** w[j], w[k] (a repeated eigenvalue) the vectors j and k are not unique (any rotation of them is
** as good), so a result that depends on them has no derivative. Reverse mode (g, the adjoint of
** the vectors, given): a pair whose columns of g are zero contributes 0; any other is the
** located error, checked here on this run's values (a staged graph that meets one at a later run
** gives NaN there: never a silent 0). Forward mode (g VT_NULL): every output's tangent is
** computed whether used or not, so a tied pair gives NaN tangents to its vectors, not an error. */
static Value la_fdiv(Interp *I, Value X, Value w, Value g, bool svd, Span sp) {
  bool num;
  int64_t k, one;
  shape(w, &num, &k, &one);
  Value E = la_mask(I, k, LM_EYE), off = B2(OP_SUB, val_num(1), E), D, same;
  la_gaps(I, w, &D, &same, sp);
  Value tie = B2(OP_MUL, same, off), bad = tie;
  if (g.t != VT_NULL) {
    Value tp0 = rule_values(I, tie, sp, "the derivative of eigen or svd"), gp = rule_values(I, g, sp, "the derivative of eigen or svd"),
          wp = ad_primal(w);
    int64_t gr = gp.t == VT_MAT ? tensor_rows(gp.u.m) : 1;
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = i + 1; j < k; j++) {
        if (tensor_at(tp0.u.m, i * k + j) == 0) continue;
        bool used = false;
        for (int64_t r = 0; r < gr && !used; r++) used = tensor_get(gp.u.m, r, i) != 0 || tensor_get(gp.u.m, r, j) != 0;
        if (!used) continue;
        double v = tensor_at(wp.u.m, i);
        mls_throw(I, sp, "grad: '%s' is not differentiable here: %s %lld and %lld are equal (%.6g), so their %s are not "
                  "unique and the result depends on which are chosen", svd ? "svd" : "eigen",
                  svd ? "singular values" : "eigenvalues", (long long)i + 1, (long long)j + 1, svd ? sqrt(v) : v,
                  svd ? "singular vectors" : "eigenvectors");
      }
    Value cz = B2(OP_NE, T(I, op_reduce(I, OP_COLSUMS, U1(OP_ABS, g), sp)), val_num(0));   /* 1 x k: used columns */
    bad = B2(OP_MUL, tie, B2(OP_ADD, B2(OP_MUL, ones(I, k, k), tp(I, cz, sp)), cz));
  }
  Value main = B2(OP_DIV, B2(OP_MUL, X, off), B2(OP_ADD, D, B2(OP_ADD, E, tie)));
  return T(I, op_ifelse(I, bad, val_num(NAN), main, sp));
}

/* qr's rules hold for an m x n matrix with m >= n and full rank (R's diagonal nonzero). */
static void qr_check(Interp *I, Value R, int64_t m, int64_t n, bool fwd, Span sp) {
  const char *who = fwd ? "jvp" : "grad";
  if (m < n)
    mls_throw(I, sp, "%s: 'qr' is not differentiable for a wide matrix (%lldx%lld: more columns than rows)", who,
              (long long)m, (long long)n);
  Value p = rule_values(I, R, sp, "the derivative of qr");
  double big = 0;
  for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(tensor_get(p.u.m, i, i)));
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(tensor_get(p.u.m, i, i)) > 64.0 * (double)n * DBL_EPSILON * big))
      mls_throw(I, sp, "%s: 'qr' is not differentiable here: the matrix has rank below its %lld columns (R[%lld,%lld] = %g)",
                who, (long long)n, (long long)i + 1, (long long)i + 1, tensor_get(p.u.m, i, i));
}

/* 1 / s for the singular values s (k x 1), NaN where s is 0 (64 k eps max s): the part of a
** non-square matrix's singular vectors outside the others' span needs S^-1. Reverse mode checks
** first (svd_check); forward mode computes every tangent, so there it is NaN, not an error. */
static Value svd_zero(Interp *I, Value s, Span sp) {     /* 1 where s is 0 to rounding */
  bool num;
  int64_t k, one;
  shape(s, &num, &k, &one);
  Value big = T(I, op_reduce(I, OP_MAX, s, sp));
  return B2(OP_LE, s, B2(OP_MUL, big, val_num(64.0 * (double)k * DBL_EPSILON)));
}
static Value svd_inv(Interp *I, Value s, Span sp) {
  Value zero = svd_zero(I, s, sp);
  return T(I, op_ifelse(I, zero, val_num(NAN), B2(OP_DIV, val_num(1), B2(OP_ADD, s, zero)), sp));
}

/* Reverse mode: the singular vectors of a non-square matrix need every singular value nonzero. */
static void svd_check(Interp *I, Value s, Span sp) {
  Value p = rule_values(I, s, sp, "the derivative of svd");
  int64_t k = tensor_rows(p.u.m);
  double big = 0;
  for (int64_t i = 0; i < k; i++) big = fmax(big, fabs(tensor_at(p.u.m, i)));
  for (int64_t i = 0; i < k; i++)
    if (!(fabs(tensor_at(p.u.m, i)) > 64.0 * (double)k * DBL_EPSILON * big))
      mls_throw(I, sp, "grad: 'svd' is not differentiable here: singular value %lld is 0, so the singular vectors of this "
                "non-square matrix are not unique", (long long)i + 1);
}

/* The adjoint of A (before sum_to) from the adjoint g of op's output y = op(A). */
static Value la_vjp(Interp *I, OpKind op, Value a, Value y, Value g, Span sp) {
  bool num;
  int64_t m, n;
  shape(a, &num, &m, &n);
  int64_t k = m < n ? m : n;
  if (k == 0) return T(I, val_mat(tensor_zeros(I, m, n)));
  switch (op) {
  case OP_EIGVALS: {                        /* V diag(g) V' (g averaged over tied eigenvalues) */
    Value V = la_out(I, OP_EIGVECS, a, sp);
    Value gm = la_tie_mean(I, g, la_out(I, OP_EIGVALS, a, sp), sp);
    return mm(I, B2(OP_MULZ, tp(I, gm, sp), V), tp(I, V, sp), sp);
  }
  case OP_EIGVECS: {                        /* V (F o (M - M')/2) V', M = V' g: symmetric */
    Value M = mm(I, tp(I, y, sp), g, sp);
    Value K = B2(OP_MUL, B2(OP_SUB, M, tp(I, M, sp)), val_num(0.5));
    Value FK = la_fdiv(I, K, la_out(I, OP_EIGVALS, a, sp), g, false, sp);
    return mm(I, mm(I, y, FK, sp), tp(I, y, sp), sp);
  }
  case OP_CHOL: {                           /* sym(L^-T Phi(L' g) L^-1) (Murray 2016) */
    Value P = B2(OP_MUL, mm(I, tp(I, y, sp), g, sp), la_mask(I, n, LM_PHI));
    return symm(I, rsolve(I, lsolve(I, tp(I, y, sp), P, sp), y, sp), sp);
  }
  case OP_QR_Q: case OP_QR_R: {             /* (Qbar + Q copyltu(X)) R^-T, X = triu(Rbar R' - Q' Qbar) */
    Value Q = op == OP_QR_Q ? y : la_out(I, OP_QR_Q, a, sp);
    Value R = op == OP_QR_R ? y : la_out(I, OP_QR_R, a, sp);
    qr_check(I, R, m, n, false, sp);
    Value X = op == OP_QR_R ? mm(I, g, tp(I, R, sp), sp) : U1(OP_NEG, mm(I, tp(I, Q, sp), g, sp));
    X = B2(OP_MUL, X, la_mask(I, n, LM_UPPER));
    Value S = B2(OP_SUB, B2(OP_ADD, X, tp(I, X, sp)), B2(OP_MUL, X, la_mask(I, n, LM_EYE)));
    Value Z = mm(I, Q, S, sp);
    if (op == OP_QR_Q) Z = B2(OP_ADD, g, Z);
    return rsolve(I, Z, tp(I, R, sp), sp);
  }
  case OP_SVD_S: {                          /* U diag(diag(g)) V', averaged over tied values; a zero */
    Value U = la_out(I, OP_SVD_U, a, sp), V = la_out(I, OP_SVD_V, a, sp);   /* one has derivative 0 (|x| at 0) */
    Value s = T(I, op_diag(I, y, sp));
    Value d = la_tie_mean(I, T(I, op_diag(I, g, sp)), B2(OP_MUL, s, s), sp);
    d = B2(OP_MUL, d, B2(OP_SUB, val_num(1), svd_zero(I, s, sp)));
    return mm(I, B2(OP_MULZ, tp(I, d, sp), U), tp(I, V, sp), sp);
  }
  case OP_SVD_U: case OP_SVD_V: {           /* PyTorch's svd_backward, one output at a time */
    bool isu = op == OP_SVD_U;
    Value U = isu ? y : la_out(I, OP_SVD_U, a, sp), V = isu ? la_out(I, OP_SVD_V, a, sp) : y, Y = isu ? U : V;
    Value s = T(I, op_diag(I, la_out(I, OP_SVD_S, a, sp), sp)), st = tp(I, s, sp);
    bool extra = isu ? m > k : n > k;       /* the part of g outside Y's columns */
    if (extra) svd_check(I, s, sp);
    Value G = mm(I, tp(I, Y, sp), g, sp);
    Value J = B2(OP_SUB, G, tp(I, G, sp));
    Value inner = la_fdiv(I, isu ? B2(OP_MUL, J, st) : B2(OP_MUL, s, J), B2(OP_MUL, s, s), g, true, sp);
    Value r = mm(I, mm(I, U, inner, sp), tp(I, V, sp), sp);
    if (extra) {                            /* (I - Y Y') g S^-1, then V' or U on the other side */
      Value P = B2(OP_MUL, B2(OP_SUB, g, mm(I, Y, G, sp)), tp(I, svd_inv(I, s, sp), sp));
      r = B2(OP_ADD, r, isu ? mm(I, P, tp(I, V, sp), sp) : mm(I, U, tp(I, P, sp), sp));
    }
    return r;
  }
  default: break;
  }
  mls_throw(I, sp, "internal error: la_vjp of '%s'", op_info[op].sym);
}

/* The tangent of op's output y = op(A) along the tangent ta of A. */
static Value la_jvp(Interp *I, OpKind op, Value a, Value y, Value ta, Span sp) {
  bool num;
  int64_t m, n, yr, yc;
  shape(a, &num, &m, &n);
  shape(y, &num, &yr, &yc);
  int64_t k = m < n ? m : n;
  if (k == 0) return T(I, val_mat(tensor_zeros(I, yr, yc)));
  switch (op) {
  case OP_EIGVALS: case OP_EIGVECS: {       /* diag(P), V (F o P); P = V' sym(dA) V */
    Value V = op == OP_EIGVECS ? y : la_out(I, OP_EIGVECS, a, sp), lam = la_out(I, OP_EIGVALS, a, sp);
    Value P = mm(I, mm(I, tp(I, V, sp), symm(I, ta, sp), sp), V, sp);
    if (op == OP_EIGVALS) return la_tie_mean(I, T(I, op_diag(I, P, sp)), lam, sp);
    return mm(I, V, la_fdiv(I, P, lam, val_null(), false, sp), sp);
  }
  case OP_CHOL: {                           /* L Phi(L^-1 sym(dA) L^-T) */
    Value W = rsolve(I, lsolve(I, y, symm(I, ta, sp), sp), tp(I, y, sp), sp);
    return mm(I, y, B2(OP_MUL, W, la_mask(I, n, LM_PHI)), sp);
  }
  case OP_QR_Q: case OP_QR_R: {             /* C = Q' dA R^-1 = Omega + U: dR = U R, dQ = dA R^-1 - Q U */
    Value Q = op == OP_QR_Q ? y : la_out(I, OP_QR_Q, a, sp);
    Value R = op == OP_QR_R ? y : la_out(I, OP_QR_R, a, sp);
    qr_check(I, R, m, n, true, sp);
    Value AR = rsolve(I, ta, R, sp);
    Value C = mm(I, tp(I, Q, sp), AR, sp);
    Value Lo = B2(OP_MUL, C, la_mask(I, n, LM_LOWER));
    Value Up = B2(OP_SUB, C, B2(OP_SUB, Lo, tp(I, Lo, sp)));
    return op == OP_QR_R ? mm(I, Up, R, sp) : B2(OP_SUB, AR, mm(I, Q, Up, sp));
  }
  case OP_SVD_U: case OP_SVD_S: case OP_SVD_V: {   /* dP = U' dA V */
    Value U = op == OP_SVD_U ? y : la_out(I, OP_SVD_U, a, sp), V = op == OP_SVD_V ? y : la_out(I, OP_SVD_V, a, sp);
    Value s = T(I, op_diag(I, la_out(I, OP_SVD_S, a, sp), sp)), w = B2(OP_MUL, s, s);
    Value dP = mm(I, mm(I, tp(I, U, sp), ta, sp), V, sp);
    if (op == OP_SVD_S) {
      Value d = la_tie_mean(I, T(I, op_diag(I, dP, sp)), w, sp);
      return T(I, op_diag(I, B2(OP_MUL, d, B2(OP_SUB, val_num(1), svd_zero(I, s, sp))), sp));
    }
    Value st = tp(I, s, sp), dPt = tp(I, dP, sp);
    bool isu = op == OP_SVD_U, extra = isu ? m > k : n > k;
    Value X = isu ? B2(OP_ADD, B2(OP_MUL, dP, st), B2(OP_MUL, s, dPt)) : B2(OP_ADD, B2(OP_MUL, s, dP), B2(OP_MUL, dPt, st));
    Value r = mm(I, isu ? U : V, la_fdiv(I, X, w, val_null(), true, sp), sp);
    if (extra)                              /* (I - U U') dA V S^-1, (I - V V') dA' U S^-1 */
      r = B2(OP_ADD, r, B2(OP_MUL, isu ? B2(OP_SUB, mm(I, ta, V, sp), mm(I, U, dP, sp))
                                       : B2(OP_SUB, mm(I, tp(I, ta, sp), U, sp), mm(I, V, dPt, sp)),
                           tp(I, svd_inv(I, s, sp), sp)));
    return r;
  }
  default: break;
  }
  mls_throw(I, sp, "internal error: la_jvp of '%s'", op_info[op].sym);
}

/* An op without a derivative (never recorded: only OPF_DIFF ops reach the rules). */
static Value no_rule(Interp *I, OpKind op, Span sp) {
  mls_throw(I, sp, "grad: '%s' has no derivative rule", op_info[op].sym);
}

/* The ONE switch of derivative rules: gin[k] = (dOut/dIn_k)^T g for the inputs in[k] >= 0.
** Multiplications by g use MULZ (0 where g is 0), so a NaN or Inf in a branch ifelse did not
** take never reaches the gradient (LANGUAGE.md §11). */
static void vjp(Interp *I, const TNode *nd, Value g, Value *gin) {
  Span sp = nd->span;
  Value a = nd->val[0], b = nd->nin > 1 ? nd->val[1] : val_null(), y = nd->out;
  bool want0 = nd->in[0] >= 0, want1 = nd->nin > 1 && nd->in[1] >= 0;
  switch ((OpKind)nd->op) {
  /* the elementwise ops: their rules in ops.def (D_* in terms of g, the incoming gradient;
  ** a binary op's gradient summed back to its operand's shape) */
#include "autodiff_rules_ops.h"
#define D_ONE g
#define D_NEG U1(OP_NEG, g)
#define D_ZERO B2(OP_MUL, g, val_num(0))
#define D_MUL(e) B2(OP_MULZ, g, e)
#define D_NMUL(e) U1(OP_NEG, B2(OP_MULZ, g, e))
#define D_DIV(e) B2(OP_DIV, g, e)
#define D_NDIV(e) U1(OP_NEG, B2(OP_DIV, g, e))
#define D_NONE no_rule(I, (OpKind)nd->op, sp)
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) case OP_##NAME: gin[0] = RULE; break;
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) \
  case OP_##NAME:                                                              \
    if (want0) gin[0] = sum_to(I, RULE_X, a, sp);                              \
    if (want1) gin[1] = sum_to(I, RULE_Y, b, sp);                              \
    break;
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
#include "autodiff_rules_undef.h"
  case OP_CUMMAX: case OP_CUMMIN:           /* each g to the element the running value came from */
    gin[0] = T(I, op_grad_aux(I, OP_CUMEXT_GRAD, 3, (Value[]){ g, a, y }, sp));
    break;
  case OP_ROWPRODS: case OP_COLPRODS:       /* g times the product of the others (zeros are fine) */
    gin[0] = T(I, op_grad_aux(I, nd->op == OP_ROWPRODS ? OP_ROWPRODS_GRAD : OP_COLPRODS_GRAD, 2, (Value[]){ g, a }, sp));
    break;
  case OP_CUMEXT_GRAD: case OP_CUMEXT_TAN:  /* linear in g, each the other's transpose; x, y discrete */
    if (want0) gin[0] = T(I, op_grad_aux(I, nd->op == OP_CUMEXT_GRAD ? OP_CUMEXT_TAN : OP_CUMEXT_GRAD, 3,
                                         (Value[]){ g, nd->val[1], nd->val[2] }, sp));
    break;
  case OP_CUMSUMPROD:                       /* the adjoint recursion (cpu_stats.c) */
    gin[0] = T(I, op_grad_aux(I, OP_CUMSUMPROD_GRAD, 3, (Value[]){ g, a, y }, sp));
    break;
  case OP_ROWPRODS_GRAD: case OP_COLPRODS_GRAD: case OP_CUMSUMPROD_GRAD:
    mls_throw(I, sp, "grad: the second derivative of %s is not supported",
              nd->op == OP_ROWPRODS_GRAD ? "rowProds" : nd->op == OP_COLPRODS_GRAD ? "colProds" : "cumsumprod");
  case OP_MATMUL:
    if (!ad_any_active(3, (Value[]){ a, b, g })) {   /* nothing records this: GEMM's T flags, no copies */
      Value pa = ad_primal(a), pb = ad_primal(b), pg = ad_primal(g);   /* (boxes of finished tapes) */
      if (want0) gin[0] = sum_to(I, T(I, matmul_t(I, pg, false, pb, true, sp)), a, sp);
      if (want1) gin[1] = sum_to(I, T(I, matmul_t(I, pa, true, pg, false, sp)), b, sp);
      break;
    }
    if (want0) gin[0] = sum_to(I, T(I, op_matmul(I, g, T(I, op_transpose(I, b, sp)), sp)), a, sp);
    if (want1) gin[1] = sum_to(I, T(I, op_matmul(I, T(I, op_transpose(I, a, sp)), g, sp)), b, sp);
    break;
  case OP_SUMPROD: {                        /* d sum(X Y) / dX = rowSums(Y)' in every row; dY likewise */
    bool na, nb;
    int64_t ar, ac, br, bc;
    shape(a, &na, &ar, &ac);
    shape(b, &nb, &br, &bc);
    if (want0) gin[0] = sum_to(I, B2(OP_MULZ, g, B2(OP_MUL, ones(I, ar, ac),
                                                   T(I, op_transpose(I, T(I, op_reduce(I, OP_ROWSUMS, b, sp)), sp)))), a, sp);
    if (want1) gin[1] = sum_to(I, B2(OP_MULZ, g, B2(OP_MUL, ones(I, br, bc),
                                                   T(I, op_transpose(I, T(I, op_reduce(I, OP_COLSUMS, a, sp)), sp)))), b, sp);
    break;
  }
  /* the product forms of staging's rewrites (ops.def): the rules of the forms they replace */
  case OP_DOT:                              /* sum(X * Y) */
    if (want0) gin[0] = sum_to(I, B2(OP_MULZ, g, b), a, sp);
    if (want1) gin[1] = sum_to(I, B2(OP_MULZ, g, a), b, sp);
    break;
  case OP_ROWSUMSPROD:                      /* X %*% rowSums(Y) */
    if (want0) gin[0] = sum_to(I, mm(I, g, tp(I, T(I, op_reduce(I, OP_ROWSUMS, b, sp)), sp), sp), a, sp);
    if (want1) {
      bool n;
      int64_t br, bc;
      shape(b, &n, &br, &bc);
      gin[1] = sum_to(I, B2(OP_MUL, ones(I, br, bc), mm(I, tp(I, a, sp), g, sp)), b, sp);
    }
    break;
  case OP_COLSUMSPROD:                      /* colSums(X) %*% Y */
    if (want0) {
      bool n;
      int64_t ar, ac;
      shape(a, &n, &ar, &ac);
      gin[0] = sum_to(I, B2(OP_MUL, ones(I, ar, ac), mm(I, g, tp(I, b, sp), sp)), a, sp);
    }
    if (want1) gin[1] = sum_to(I, mm(I, tp(I, T(I, op_reduce(I, OP_COLSUMS, a, sp)), sp), g, sp), b, sp);
    break;
  case OP_DIAGPROD:                         /* rowSums(X * t(Y)) */
    if (want0) gin[0] = sum_to(I, B2(OP_MULZ, g, tp(I, b, sp)), a, sp);
    if (want1) gin[1] = sum_to(I, tp(I, B2(OP_MULZ, g, a), sp), b, sp);
    break;
  case OP_CROSSPROD:                        /* t(X) %*% X: X (G + t(G)) */
    gin[0] = sum_to(I, mm(I, a, B2(OP_ADD, g, tp(I, g, sp)), sp), a, sp);
    break;
  case OP_TCROSSPROD:                       /* X %*% t(X): (G + t(G)) X */
    gin[0] = sum_to(I, mm(I, B2(OP_ADD, g, tp(I, g, sp)), a, sp), a, sp);
    break;
  case OP_XTWXV: {                          /* t(X) %*% (w * (X %*% v)) */
    Value w = nd->val[1], v = nd->val[2], Xg = mm(I, a, g, sp), Xv = mm(I, a, v, sp);
    if (want0) gin[0] = sum_to(I, B2(OP_ADD, mm(I, B2(OP_MUL, w, Xv), tp(I, g, sp), sp),
                                     mm(I, B2(OP_MUL, w, Xg), tp(I, v, sp), sp)), a, sp);
    if (want1) gin[1] = sum_to(I, B2(OP_MUL, Xg, Xv), w, sp);
    if (nd->nin > 2 && nd->in[2] >= 0) gin[2] = sum_to(I, T(I, op_apply(I, OP_XTWXV, 3, (Value[]){ a, w, g }, 0, NULL, sp)), v, sp);
    break;
  }
  case OP_TRANSPOSE: gin[0] = T(I, op_transpose(I, g, sp)); break;
  case OP_RESHAPE: {                        /* the same elements back in the input's shape */
    Value p = ad_primal(a);
    if (p.t != VT_MAT) { gin[0] = T(I, op_reduce(I, OP_SUM, g, sp)); break; }
    gin[0] = T(I, op_reshape(I, g, tensor_rows(p.u.m), tensor_cols(p.u.m), sp));
    break;
  }
  case OP_SUM: {
    bool n;
    int64_t r, c;
    shape(a, &n, &r, &c);
    gin[0] = n ? g : B2(OP_MUL, ones(I, r, c), g);
    break;
  }
  case OP_ROWSUMS: case OP_COLSUMS: {
    bool n;
    int64_t r, c;
    shape(a, &n, &r, &c);
    gin[0] = n ? g : B2(OP_MUL, ones(I, r, c), g);
    break;
  }
  case OP_MAX: case OP_MIN: case OP_ROWMAXS: case OP_ROWMINS: case OP_COLMAXS: case OP_COLMINS: {
    /* to the elements equal to the extreme, split evenly on ties */
    OpKind cnt = nd->op == OP_MAX || nd->op == OP_MIN ? OP_SUM
               : nd->op == OP_ROWMAXS || nd->op == OP_ROWMINS ? OP_ROWSUMS : OP_COLSUMS;
    Value mask = B2(OP_EQ, a, y);
    Value w = B2(OP_DIV, mask, T(I, op_reduce(I, cnt, mask, sp)));
    gin[0] = sum_to(I, B2(OP_MULZ, g, w), a, sp);
    break;
  }
  case OP_CUMSUM: {                         /* reversed cumulative sum: total - cumsum + g */
    bool n;
    int64_t r, c;
    shape(a, &n, &r, &c);
    if (n) { gin[0] = g; break; }
    Value tot = T(I, op_reduce(I, r == 1 && c > 1 ? OP_ROWSUMS : OP_COLSUMS, g, sp));
    gin[0] = B2(OP_ADD, B2(OP_SUB, tot, T(I, op_scan(I, OP_CUMSUM, g, sp))), g);
    break;
  }
  case OP_LOGSOFTMAX:                       /* g - exp(y) * rowSums(g) */
    gin[0] = B2(OP_SUB, g, B2(OP_MUL, U1(OP_EXP, y), T(I, op_reduce(I, OP_ROWSUMS, g, sp))));
    break;
  case OP_SOFTMAX:                          /* y * (g - rowSums(g * y)) */
    gin[0] = B2(OP_MUL, y, B2(OP_SUB, g, T(I, op_reduce(I, OP_ROWSUMS, B2(OP_MUL, g, y), sp))));
    break;
  case OP_DIAG: {
    bool n;
    int64_t r, c;
    shape(a, &n, &r, &c);
    Value d = T(I, op_diag(I, g, sp));
    if (n) gin[0] = T(I, op_reduce(I, OP_SUM, d, sp));
    else if (r == 1 && c > 1) gin[0] = T(I, op_transpose(I, d, sp));
    else gin[0] = d;
    break;
  }
  case OP_IFELSE: {                         /* nothing from the branch not chosen */
    Value yes = nd->val[1], no = nd->val[2];
    if (nd->in[1] >= 0) gin[1] = sum_to(I, B2(OP_MULZ, g, B2(OP_NE, a, val_num(0))), yes, sp);
    if (nd->in[2] >= 0) gin[2] = sum_to(I, B2(OP_MULZ, g, B2(OP_EQ, a, val_num(0))), no, sp);
    break;
  }
  case OP_INV:                              /* d inv(A) = -inv(A) dA inv(A) */
    gin[0] = U1(OP_NEG, T(I, op_matmul(I, T(I, op_matmul(I, T(I, op_transpose(I, y, sp)), g, sp)),
                                      T(I, op_transpose(I, y, sp)), sp)));
    break;
  case OP_DET: {                            /* d det(A) = det(A) t(inv(A)) */
    Value inv = T(I, op_apply(I, OP_INV, 1, &a, 0, NULL, sp));
    gin[0] = B2(OP_MUL, B2(OP_MUL, g, y), T(I, op_transpose(I, inv, sp)));
    break;
  }
  case OP_SOLVE: {                          /* x = A \ b: gb = t(A) \ g, gA = -gb t(x) */
    Value at = T(I, op_transpose(I, a, sp));
    Value gb = T(I, op_apply(I, OP_SOLVE, 2, (Value[]){ at, g }, 0, NULL, sp));
    if (want1) gin[1] = sum_to(I, gb, b, sp);
    if (want0) gin[0] = U1(OP_NEG, T(I, op_matmul(I, gb, T(I, op_transpose(I, y, sp)), sp)));
    break;
  }
  case OP_EIGVALS: case OP_EIGVECS: case OP_CHOL: case OP_QR_Q: case OP_QR_R: case OP_SVD_U: case OP_SVD_S: case OP_SVD_V:
    gin[0] = sum_to(I, la_vjp(I, (OpKind)nd->op, a, y, g, sp), a, sp);
    break;
  case OP_PROD: {                           /* the product of the others */
    Value p = rule_values(I, a, sp, "the derivative of prod");
    bool zero = p.t == VT_NUM ? p.u.n == 0 : false;
    for (int64_t i = 0; p.t == VT_MAT && i < tensor_numel(p.u.m) && !zero; i++) zero = tensor_at(p.u.m, i) == 0;
    if (!zero) { gin[0] = B2(OP_MULZ, g, B2(OP_DIV, y, a)); break; }
    if (p.t != VT_MAT) { gin[0] = B2(OP_MUL, g, val_num(1)); break; }
    int64_t n = tensor_numel(p.u.m);
    Tensor *o = tensor_new(I, tensor_rows(p.u.m), tensor_cols(p.u.m));
    T(I, val_mat(o));
    int64_t budget = 0;
    for (int64_t i = 0; i < n; i++) {
      if (interp_tick(I, &budget, n)) interp_check_interrupt(I, sp);   /* (o is on the temp stack) */
      double q = 1;
      for (int64_t j = 0; j < n; j++) if (j != i) q *= tensor_at(p.u.m, j);   /* a may be a view */
      tensor_data(o)[i] = q;
    }
    gin[0] = B2(OP_MULZ, g, val_mat(o));
    break;
  }
  case OP_CUMPROD: {                        /* reversed cumulative sum of g*y, over a */
    bool n;
    int64_t r, c;
    shape(a, &n, &r, &c);
    if (n) { gin[0] = g; break; }
    Value z = B2(OP_MUL, g, y);
    Value tot = T(I, op_reduce(I, r == 1 && c > 1 ? OP_ROWSUMS : OP_COLSUMS, z, sp));
    Value rev = B2(OP_ADD, B2(OP_SUB, tot, T(I, op_scan(I, OP_CUMSUM, z, sp))), z);
    Value p = rule_values(I, a, sp, "the derivative of cumprod");
    for (int64_t i = 0; i < tensor_numel(p.u.m); i++)
      if (tensor_at(p.u.m, i) == 0) mls_throw(I, sp, "grad: the derivative of cumprod at a zero element is not supported");
    gin[0] = B2(OP_DIV, rev, a);
    break;
  }
  case OP_INDEX: {                          /* scatter g back into the shape of x */
    bool n;
    int64_t r, c;
    shape(a, &n, &r, &c);
    Value ex[6] = { val_num((double)r), val_num((double)c), nd->val[1], nd->val[2], nd->val[3], val_null() };
    Value sg = T(I, op_apply(I, OP_SCATTER, 1, &g, 5, ex, sp));
    gin[0] = n ? T(I, ad_index(I, sg, 1, (Value[]){ val_num(1) }, sp)) : sg;
    break;
  }
  case OP_SCATTER: {                        /* read g at the places written */
    Value rd = T(I, op_apply(I, OP_INDEX, 1, &g, 3, nd->val + 3, sp));
    bool an, rn;
    int64_t ar, ac, rr, rc;
    shape(a, &an, &ar, &ac);
    shape(rd, &rn, &rr, &rc);
    gin[0] = an && !rn ? T(I, op_reduce(I, OP_SUM, rd, sp)) : rd;
    break;
  }
  /* ---- deep-learning ops (OPF_NN): the conv2d family is bilinear and closed under
  ** differentiation, so every rule is another op of the family (grad of grad works) ---- */
  case OP_CONV2D:                           /* (X, W): dX = bwd_data(W, g), dW = bwd_filter(X, g) */
    if (want0) gin[0] = NN(OP_CONV2D_BWD_DATA, b, g);
    if (want1) gin[1] = NN(OP_CONV2D_BWD_FILT, a, g);
    break;
  case OP_CONV2D_BWD_DATA:                  /* (W, D) -> N x CHW: dW = bwd_filter(g, D), dD = conv2d(g, W) */
    if (want0) gin[0] = NN(OP_CONV2D_BWD_FILT, g, b);
    if (want1) gin[1] = NN(OP_CONV2D, g, a);
    break;
  case OP_CONV2D_BWD_FILT:                  /* (X, D) -> F x CRS: dX = bwd_data(g, D), dD = conv2d(X, g) */
    if (want0) gin[0] = NN(OP_CONV2D_BWD_DATA, g, b);
    if (want1) gin[1] = NN(OP_CONV2D, a, g);
    break;
  case OP_MAX_POOL: gin[0] = NN(OP_MAX_POOL_BWD, a, g); break;
  case OP_MAX_POOL_BWD:                     /* (X, D): piecewise constant in X; linear in D */
    if (want1) gin[1] = NN(OP_MAX_POOL_GATHER, a, g);
    break;
  case OP_MAX_POOL_GATHER:                  /* (X, G): the adjoint of max_pool_backward in G */
    if (want1) gin[1] = NN(OP_MAX_POOL_BWD, a, g);
    break;
  case OP_AVG_POOL: gin[0] = NN(OP_AVG_POOL_BWD, a, g); break;
  case OP_AVG_POOL_BWD:                     /* (X, D): X gives only the shape */
    if (want1) gin[1] = T(I, op_nn(I, OP_AVG_POOL, &g, nd->val[2], sp));
    break;
  case OP_BIAS_ADD:                         /* (X, b): db = the sums of g over each channel */
    if (want0) gin[0] = g;
    if (want1) gin[1] = channel_sums(I, g, b, sp);
    break;
  case OP_BIAS_MULTIPLY:
    if (want0) gin[0] = T(I, op_nn(I, OP_BIAS_MULTIPLY, (Value[]){ g, b }, val_null(), sp));
    if (want1) gin[1] = channel_sums(I, B2(OP_MUL, g, a), b, sp);
    break;
  case OP_ALLREDUCE: {                      /* the loss is the sum of every rank's: each rank's */
    Value red = nd->val[1];                 /* adjoints, summed over the ranks (mpi/mpi.h) */
    Value gs = T(I, op_apply(I, OP_ALLREDUCE, 1, &g, 1, (Value[]){ val_num(MPI_RED_SUM) }, sp));
    if (red.u.n == MPI_RED_SUM) gin[0] = gs;
    else gin[0] = B2(OP_MULZ, B2(OP_EQ, a, y), gs);   /* max / min: to every rank that holds it */
    break;
  }
  /* Every op of ops.def is a case of this switch (no default: -Werror=switch makes a new op
  ** without a rule a build error). These are never recorded (not OPF_DIFF, or discrete): */
  case OP_NONE: case OP_RANGE: case OP_ROWINDEXMAX: case OP_ROWINDEXMIN: case OP_COUNT:
  case OP_MMCHAIN:                          /* (runs as its products: graph.c) */
    mls_throw(I, sp, "grad: '%s' has no derivative rule", op_info[nd->op].sym);
  }
}

/* ---- indexing as ops ---- */
static Value idx_extra(const Value *iv, int nidx, int k) {   /* kept boxed: a stage records it */
  if (k >= nidx || iv[k].t == VT_UNBOUND) return val_null();
  return iv[k];
}

Value ad_index(Interp *I, Value x, int nidx, const Value *iv, Span sp) {
  Value ex[3] = { val_num(nidx), idx_extra(iv, nidx, 0), idx_extra(iv, nidx, 1) };
  return op_apply(I, OP_INDEX, 1, &x, 3, ex, sp);
}

/* X[iv] = v traced: X where no cell is selected, else v's value scattered there. A choice,
** not a sum of masked parts: 0 + -0 is 0 and Inf * 0 is NaN, where the eager assignment
** copies. A cell selected twice takes its last write, as the eager loop does. */
Value ad_set_index(Interp *I, Value X, int nidx, const Value *iv, Value v, Span sp) {
  int mark = I->ntmp;
  bool n;
  int64_t r, c, sr, sc;
  shape(X, &n, &r, &c);
  Value ex[5] = { val_num((double)r), val_num((double)c), val_num(nidx), idx_extra(iv, nidx, 0), idx_extra(iv, nidx, 1) };
  Value keep[2], at[2];
  if (index_last_writes(I, r, c, nidx, ex + 3, keep, at, &sr, &sc, sp)) {
    Value vp = ad_primal(v);
    if (vp.t == VT_MAT && tensor_numel(vp.u.m) != 1) {    /* v's elements that are written last */
      if (tensor_rows(vp.u.m) != sr || tensor_cols(vp.u.m) != sc)
        v = T(I, op_reshape(I, v, sr, sc, sp));             /* a vector given to a single index */
      v = T(I, ad_index(I, v, 2, keep, sp));
    }
    ex[2] = val_num(2);
    ex[3] = at[0];
    ex[4] = at[1];
  }
  Value hit = T(I, index_scatter(I, val_num(1), r, c, (int)ex[2].u.n, ex + 3, sp));
  Value put = T(I, op_apply(I, OP_SCATTER, 1, &v, 5, ex, sp));
  Value res = op_ifelse(I, hit, put, X, sp);
  tmp_release_to(I, mark);
  return res;
}

/* acc with v's block written at [r0, c0] (a rows x cols matrix; acc a number fills the rest):
** matrix literals and cbind/rbind traced by grad or staged. */
Value ad_place(Interp *I, Value acc, Value v, int64_t rows, int64_t cols, int64_t r0, int64_t c0, Span sp) {
  int mark = I->ntmp;
  bool n;
  int64_t h, w;
  shape(v, &n, &h, &w);
  Tensor *ri = tensor_new_on(I, &be_cpu, h, 1), *ci;      /* index lists: host data */
  T(I, val_mat(ri));
  for (int64_t i = 0; i < h; i++) tensor_data(ri)[i] = (double)(r0 + i + 1);
  ci = tensor_new_on(I, &be_cpu, w, 1);
  T(I, val_mat(ci));
  for (int64_t j = 0; j < w; j++) tensor_data(ci)[j] = (double)(c0 + j + 1);
  Value ex[5] = { val_num((double)rows), val_num((double)cols), val_num(2), val_mat(ri), val_mat(ci) };
  Value placed = T(I, op_apply(I, OP_SCATTER, 1, &v, 5, ex, sp));
  Value hit = T(I, index_scatter(I, val_num(1), rows, cols, 2, ex + 3, sp));
  Value res = op_ifelse(I, hit, placed, acc, sp);      /* a choice: a sum would turn -0 into 0 */
  tmp_release_to(I, mark);
  return res;
}

/* ---- forward mode (jvp): tangents, one pass, nothing recorded ---- */
static Value zeros_like(Interp *I, Value v);
static Tape *tape_begin(Interp *I);
/* Tangents use VT_NULL for zero, so an input that does not depend on x costs nothing. */
static Value tadd(Interp *I, Value a, Value b, Span sp) {
  if (a.t == VT_NULL) return b;
  if (b.t == VT_NULL) return a;
  return B2(OP_ADD, a, b);
}

static Value tmul(Interp *I, Value t, Value x, Span sp) { return t.t == VT_NULL ? t : B2(OP_MUL, t, x); }
static Value tneg(Interp *I, Value t, Span sp) { return t.t == VT_NULL ? t : U1(OP_NEG, t); }
static Value tzero(Value t) { return t.t == VT_NULL ? val_num(0) : t; }

/* The ONE switch of tangent rules: the output's tangent from the inputs' tangents tin[k]. */
static Value jvp_rule(Interp *I, OpKind op, const Value *un, const Value *tin, const Value *x, Value y, Span sp) {
  Value a = un[0], b = op_info[op].arity > 1 ? un[1] : val_null(), ta = tin[0], tb = tin[1];
  switch (op) {
  /* the elementwise ops: their rules in ops.def, applied to the tangents ta (and tb) */
#include "autodiff_rules_ops.h"
#define D_ONE t
#define D_NEG tneg(I, t, sp)
#define D_ZERO val_null()
#define D_MUL(e) tmul(I, t, e, sp)
#define D_NMUL(e) tneg(I, tmul(I, t, e, sp), sp)
#define D_DIV(e) B2(OP_DIV, tzero(t), e)
#define D_NDIV(e) tneg(I, B2(OP_DIV, tzero(t), e), sp)
#define D_NONE no_rule(I, op, sp)
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) \
  case OP_##NAME: { Value t = ta; (void)t; return RULE; }
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) \
  case OP_##NAME: {                                                            \
    Value t = ta;                                                              \
    (void)t;                                                                   \
    Value dx = RULE_X;                                                         \
    t = tb;                                                                    \
    (void)t;                                                                   \
    return tadd(I, dx, RULE_Y, sp);                                            \
  }
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
#include "autodiff_rules_undef.h"
  case OP_CUMMAX: case OP_CUMMIN:           /* the tangent of the element each extreme came from */
    return ta.t == VT_NULL ? ta : T(I, op_grad_aux(I, OP_CUMEXT_TAN, 3, (Value[]){ ta, a, y }, sp));
  case OP_CUMEXT_GRAD: case OP_CUMEXT_TAN:
    return ta.t == VT_NULL ? ta : T(I, op_grad_aux(I, op, 3, (Value[]){ ta, un[1], un[2] }, sp));
  case OP_ROWPRODS: case OP_COLPRODS: {     /* sums of the tangent times the product of the others */
    bool n;
    int64_t r, c;
    shape(a, &n, &r, &c);
    Value others = T(I, op_grad_aux(I, op == OP_ROWPRODS ? OP_ROWPRODS_GRAD : OP_COLPRODS_GRAD, 2,
                                    (Value[]){ ones(I, op == OP_ROWPRODS ? r : 1, op == OP_ROWPRODS ? 1 : c), a }, sp));
    return T(I, op_reduce(I, op == OP_ROWPRODS ? OP_ROWSUMS : OP_COLSUMS, B2(OP_MUL, tzero(ta), others), sp));
  }
  case OP_MATMUL:
    return tadd(I, ta.t == VT_NULL ? ta : T(I, op_matmul(I, ta, b, sp)),
                tb.t == VT_NULL ? tb : T(I, op_matmul(I, a, tb, sp)), sp);
  case OP_SUMPROD:
    return tadd(I, ta.t == VT_NULL ? ta : T(I, op_sumprod(I, ta, b, sp)),
                tb.t == VT_NULL ? tb : T(I, op_sumprod(I, a, tb, sp)), sp);
  case OP_DOT: case OP_ROWSUMSPROD: case OP_COLSUMSPROD: case OP_DIAGPROD:   /* bilinear */
    return tadd(I, ta.t == VT_NULL ? ta : T(I, op_apply(I, op, 2, (Value[]){ ta, b }, 0, NULL, sp)),
                tb.t == VT_NULL ? tb : T(I, op_apply(I, op, 2, (Value[]){ a, tb }, 0, NULL, sp)), sp);
  case OP_XTWXV: {                          /* t(dX) (w Xv) + t(X) (w dX v + dw Xv) + xtwxv(X, w, dv) */
    Value w = un[1], v = un[2], tw = tin[1], tv = tin[2], r = val_null();
    if (ta.t != VT_NULL)
      r = tadd(I, mm(I, tp(I, ta, sp), B2(OP_MUL, w, mm(I, a, v, sp)), sp),
               mm(I, tp(I, a, sp), B2(OP_MUL, w, mm(I, ta, v, sp)), sp), sp);
    if (tw.t != VT_NULL) r = tadd(I, r, mm(I, tp(I, a, sp), B2(OP_MUL, tw, mm(I, a, v, sp)), sp), sp);
    if (tv.t != VT_NULL) r = tadd(I, r, T(I, op_apply(I, OP_XTWXV, 3, (Value[]){ a, w, tv }, 0, NULL, sp)), sp);
    return r;
  }
  case OP_CROSSPROD: case OP_TCROSSPROD: {  /* P + t(P), P = t(dX) X or dX t(X) */
    if (ta.t == VT_NULL) return ta;
    Value P = op == OP_CROSSPROD ? mm(I, tp(I, ta, sp), a, sp) : mm(I, ta, tp(I, a, sp), sp);
    return B2(OP_ADD, P, tp(I, P, sp));
  }
  case OP_TRANSPOSE: return T(I, op_transpose(I, ta, sp));
  case OP_RESHAPE: return T(I, op_reshape(I, ta, (int64_t)ad_primal(x[0]).u.n, (int64_t)ad_primal(x[1]).u.n, sp));
  case OP_SUM: case OP_ROWSUMS: case OP_COLSUMS: return T(I, op_reduce(I, op, ta, sp));
  case OP_MAX: case OP_MIN: case OP_ROWMAXS: case OP_ROWMINS: case OP_COLMAXS: case OP_COLMINS: {
    OpKind cnt = op == OP_MAX || op == OP_MIN ? OP_SUM : op == OP_ROWMAXS || op == OP_ROWMINS ? OP_ROWSUMS : OP_COLSUMS;
    Value mask = B2(OP_EQ, a, y);
    Value w = B2(OP_DIV, mask, T(I, op_reduce(I, cnt, mask, sp)));
    return T(I, op_reduce(I, cnt, B2(OP_MULZ, ta, w), sp));
  }
  case OP_CUMSUM: return T(I, op_scan(I, OP_CUMSUM, ta, sp));
  case OP_SOFTMAX: return B2(OP_MUL, y, B2(OP_SUB, ta, T(I, op_reduce(I, OP_ROWSUMS, B2(OP_MUL, y, ta), sp))));
  case OP_LOGSOFTMAX: return B2(OP_SUB, ta, T(I, op_reduce(I, OP_ROWSUMS, B2(OP_MUL, U1(OP_EXP, y), ta), sp)));
  case OP_DIAG: return T(I, op_diag(I, ta, sp));
  case OP_IFELSE: return T(I, op_ifelse(I, a, tzero(tin[1]), tzero(tin[2]), sp));
  case OP_INDEX: return T(I, op_apply(I, OP_INDEX, 1, &ta, 3, x, sp));
  case OP_SCATTER: return T(I, op_apply(I, OP_SCATTER, 1, &ta, 5, x, sp));
  case OP_CONV2D: case OP_CONV2D_BWD_DATA: case OP_CONV2D_BWD_FILT: case OP_BIAS_MULTIPLY: {   /* bilinear */
    Value prm = op == OP_BIAS_MULTIPLY ? val_null() : x[0];
    return tadd(I, ta.t == VT_NULL ? ta : T(I, op_nn(I, op, (Value[]){ ta, b }, prm, sp)),
                tb.t == VT_NULL ? tb : T(I, op_nn(I, op, (Value[]){ a, tb }, prm, sp)), sp);
  }
  case OP_MAX_POOL: return ta.t == VT_NULL ? ta : T(I, op_nn(I, OP_MAX_POOL_GATHER, (Value[]){ a, ta }, x[0], sp));
  case OP_AVG_POOL: return ta.t == VT_NULL ? ta : T(I, op_nn(I, OP_AVG_POOL, &ta, x[0], sp));
  case OP_MAX_POOL_BWD: case OP_MAX_POOL_GATHER: case OP_AVG_POOL_BWD:   /* linear in the second */
    return tb.t == VT_NULL ? tb : T(I, op_nn(I, op, (Value[]){ a, tb }, x[0], sp));
  case OP_BIAS_ADD:
    if (tb.t == VT_NULL) return ta;
    return T(I, op_nn(I, OP_BIAS_ADD, (Value[]){ ta.t == VT_NULL ? B2(OP_MULZ, val_num(0), a) : ta, tb }, val_null(), sp));
  case OP_INV: return U1(OP_NEG, mm(I, mm(I, y, ta, sp), y, sp));            /* -inv(A) dA inv(A) */
  case OP_DET:                              /* det(A) tr(inv(A) dA) */
    return B2(OP_MUL, y, T(I, op_reduce(I, OP_SUM, B2(OP_MUL, tp(I, la_out(I, OP_INV, a, sp), sp), ta), sp)));
  case OP_SOLVE: {                          /* x = A \ b: dx = A \ (db - dA x) */
    Value r = ta.t == VT_NULL ? tb : tadd(I, tb, U1(OP_NEG, mm(I, ta, y, sp)), sp);
    return lsolve(I, a, r, sp);
  }
  case OP_EIGVALS: case OP_EIGVECS: case OP_CHOL: case OP_QR_Q: case OP_QR_R: case OP_SVD_U: case OP_SVD_S: case OP_SVD_V:
    return la_jvp(I, op, a, y, ta, sp);
  case OP_ALLREDUCE: {                      /* max / min: the mean tangent of the ranks holding it */
    if (ta.t == VT_NULL) return ta;
    Value sum = val_num(MPI_RED_SUM);
    if (ad_primal(x[0]).u.n == MPI_RED_SUM) return T(I, op_apply(I, OP_ALLREDUCE, 1, &ta, 1, &sum, sp));
    Value mask = B2(OP_EQ, a, y);
    Value num = T(I, op_apply(I, OP_ALLREDUCE, 1, (Value[]){ B2(OP_MULZ, mask, ta) }, 1, &sum, sp));
    return B2(OP_DIV, num, T(I, op_apply(I, OP_ALLREDUCE, 1, &mask, 1, &sum, sp)));
  }
  /* Every op of ops.def is a case of this switch (no default: -Werror=switch makes a new op
  ** without a rule a build error). Never recorded (not OPF_DIFF, or discrete): */
  case OP_NONE: case OP_RANGE: case OP_ROWINDEXMAX: case OP_ROWINDEXMIN: case OP_COUNT: case OP_MMCHAIN:
  /* no forward rule yet: jvp through them is the located error below */
  case OP_PROD: case OP_CUMPROD: case OP_CUMSUMPROD: case OP_ROWPRODS_GRAD: case OP_COLPRODS_GRAD:
  case OP_CUMSUMPROD_GRAD:
    break;
  }
  mls_throw(I, sp, "jvp: '%s' has no forward rule", op_info[op].sym);
}

/* Shapes the tangent like the output (broadcasting may have widened the output). */
static Value fit(Interp *I, Value tv, Value out, Span sp) {
  bool tn, on;
  int64_t tr, tc, orr, oc;
  shape(tv, &tn, &tr, &tc);
  shape(out, &on, &orr, &oc);
  if (on) return tn ? tv : T(I, op_reduce(I, OP_SUM, tv, sp));
  if (!tn && tr == orr && tc == oc) return tv;
  return B2(OP_MUL, ones(I, orr, oc), tv);
}

static Value fwd_apply(Interp *I, Tape *t, OpKind op, int nin, const Value *in, const Value *un,
                       int nextra, const Value *extra, Value out, Span sp) {
  (void)nextra;
  Value tin[3] = { val_null(), val_null(), val_null() };
  bool any = false;
  for (int k = 0; k < nin; k++) {
    Value v = in[k];
    while (v.t == VT_BOX && !v.u.box->tape->active) v = v.u.box->v;
    if (v.t == VT_BOX && v.u.box->tape == t) { tin[k] = v.u.box->tangent; any = any || tin[k].t != VT_NULL; }
  }
  if (!any || !(op_info[op].flags & OPF_DIFF) || (op_info[op].flags & (OPF_CMP | OPF_DISCRETE))) return out;
  int mark = I->ntmp;
  tmp_push(I, out);
  Value tv = jvp_rule(I, op, un, tin, extra, out, sp);
  if (tv.t != VT_NULL) tv = fit(I, tv, out, sp);
  val_retain(tv);
  Value r = box_new(t, -1, out);               /* takes the reference on the stack */
  val_retain(out);
  r.u.box->tangent = tv;
  tmp_release_to(I, mark);
  return r;
}

/* jvp(f, x, v): [f(x), the derivative of f at x along v], one forward pass. */
Value bi_jvp(Interp *I, Args *a) {
  Value f = a->v[0], x = a->v[1], v = a->v[2];
  char d1[64], d2[64];
  if (f.t != VT_FUNC && f.t != VT_BUILTIN) bi_argerror(I, 1, "function expected, got %s", val_describe(f, d1, sizeof d1));
  bool xn, vn;
  int64_t xr, xc, vr, vc;
  Value xp = ad_primal(x), vp = ad_primal(v);
  if (xp.t != VT_NUM && xp.t != VT_BOOL && xp.t != VT_MAT) bi_argerror(I, 2, "number or matrix expected, got %s", val_describe(xp, d1, sizeof d1));
  shape(x, &xn, &xr, &xc);
  shape(v, &vn, &vr, &vc);
  if ((vp.t != VT_NUM && vp.t != VT_BOOL && vp.t != VT_MAT) || xr != vr || xc != vc)
    bi_argerror(I, 3, "a direction of x's shape expected (%s), got %s", val_describe(xp, d1, sizeof d1), val_describe(vp, d2, sizeof d2));
  int mark = I->ntmp;
  Tape *t = tape_begin(I);
  t->forward = true;
  t->kind = &jvp_kind;
  val_retain(x);
  Value X = T(I, box_new(t, -1, x));
  val_retain(v);
  X.u.box->tangent = v;
  Symbol *none[1] = { NULL };
  Value r = T(I, call_value(I, f, 1, &X, none, a->span));
  t->active = false;
  Value val = r, tan = val_null();
  while (val.t == VT_BOX && val.u.box->tape == t) { if (tan.t == VT_NULL) tan = val.u.box->tangent; val = val.u.box->v; }
  List *l = list_new(I, 2);
  l->multi = true;
  Value res = T(I, val_list(l));
  val_retain(val);
  list_push(l, val, NULL);
  if (tan.t == VT_NULL) list_push(l, zeros_like(I, val), NULL);
  else { val_retain(tan); list_push(l, tan, NULL); }
  val_retain(res);
  tmp_release_to(I, mark);
  return res;
}

/* ---- backward pass ---- */
/* A new active tape, held on the temp stack (an error releases it). */
static Tape *tape_begin(Interp *I) {
  Tape *t = mem_calloc(1, sizeof *t);
  t->refcount = 1;
  t->id = ++I->ad_next_id;
  t->active = true;
  t->kind = &grad_kind;
  Value tv;
  tv.t = VT_TAPE;
  tv.u.tape = t;
  tmp_push(I, tv);
  return t;
}

/* One empty adjoint per node of t (VT_NULL), as a List on the temp stack. */
static List *adj_list(Interp *I, Tape *t) {
  List *adj = list_new(I, t->n > 0 ? t->n : 1);
  for (int i = 0; i < t->n; i++) list_push(adj, val_null(), NULL);
  tmp_push(I, val_list(adj));
  return adj;
}
/* Adjoints of every node reachable backwards from root (seed g0), released as they are used.
** Returns a List of adjoints indexed by node (VT_NULL = none), on the temp stack. */
static List *backward(Interp *I, Tape *t, int root, Value g0) {
  List *adj = adj_list(I, t);
  val_retain(g0);
  adj->items[root] = g0;
  for (int i = root; i >= 0; i--) {
    TNode *nd = &t->nodes[i];
    if (adj->items[i].t == VT_NULL || nd->nin == 0) continue;
    int mark = I->ntmp;
    Value gin[3] = { val_null(), val_null(), val_null() };
    const char *saved_of = I->ad_backward_of;
    Source *saved_src = I->src;
    I->ad_backward_of = op_info[nd->op].sym;        /* --nan-check names the op differentiated */
    if (nd->src) I->src = nd->src;                  /* errors point into the op's own file */
    if (I->interrupted) interp_check_interrupt(I, nd->span);   /* (a long tape of number ops runs no kernel) */
    vjp(I, nd, adj->items[i], gin);
    I->ad_backward_of = saved_of;
    I->src = saved_src;
    for (int k = 0; k < nd->nin; k++) {
      int src = nd->in[k];
      if (src < 0 || gin[k].t == VT_NULL) continue;
      Value *slot = &adj->items[src];
      Value sum;
      if (slot->t == VT_NULL) { sum = gin[k]; val_retain(sum); }        /* set the first time */
      else sum = op_binary(I, OP_ADD, *slot, gin[k], nd->span);          /* add after */
      val_release(*slot);
      *slot = sum;
    }
    tmp_release_to(I, mark);
    Value used = adj->items[i];                    /* this node's adjoint is no longer needed */
    adj->items[i] = val_null();
    val_release(used);
    node_release(nd);                              /* nor its saved values */
  }
  return adj;
}

/* ---- grad(f) ---- */
/* kind: 0 grad, 1 value_and_grad, 2 jacobian, 3 hessian */
/* kind: 0 grad, 1 value_and_grad, 2 jacobian, 3 hessian, 4 jit (jit: the stager's cache) */
typedef struct Derived { int kind; Value f; Value argnum; struct Jit *jit; } Derived;
Value ad_call_jacobian(Interp *I, Closure *c, int nargs, Value *args, Symbol **names, Span sp);
static Value make_derived(Interp *I, Args *a, int kind);

static Value zeros_like(Interp *I, Value v) {
  v = ad_primal(v);
  if (v.t == VT_MAT) return val_mat(tensor_zeros(I, tensor_rows(v.u.m), tensor_cols(v.u.m)));
  if (v.t == VT_LIST) {
    List *l = list_new(I, v.u.l->n);
    Value r = val_list(l);
    tmp_push(I, r);
    for (int i = 0; i < v.u.l->n; i++) list_push(l, zeros_like(I, v.u.l->items[i]), v.u.l->names ? v.u.l->names[i] : NULL);
    tmp_pop(I, 1);
    return r;
  }
  return val_num(0);
}

/* Boxes the numbers and matrices in v (lists recursively) as leaves of t. */
static Value make_leaves(Interp *I, Tape *t, Value v, Span sp) {
  Value p = v;
  while (p.t == VT_BOX && !p.u.box->tape->active) p = p.u.box->v;
  Value prim = ad_primal(p);
  if (prim.t == VT_LIST && p.t == VT_BOX) p = ad_concrete(I, p, sp, "a list given to grad");   /* a staged capture */
  if (prim.t == VT_NUM || prim.t == VT_BOOL || prim.t == VT_MAT) {
    int id = tape_push(t);
    t->nodes[id].nin = 0;
    val_retain(p);
    t->nodes[id].out = p;
    val_retain(p);
    return box_new(t, id, p);
  }
  if (prim.t == VT_LIST && p.t == VT_LIST) {
    List *l = list_new(I, p.u.l->n);
    Value r = val_list(l);
    tmp_push(I, r);
    for (int i = 0; i < p.u.l->n; i++)
      list_push(l, make_leaves(I, t, p.u.l->items[i], sp), p.u.l->names ? p.u.l->names[i] : NULL);
    tmp_pop(I, 1);
    return r;
  }
  char d[64];
  mls_throw(I, sp, "grad: cannot differentiate with respect to %s", val_describe(v, d, sizeof d));
}

/* The gradient for leaf structure v: adjoints of its leaves, zeros where none arrived. */
static Value collect(Interp *I, Value leaf, const List *adj, Tape *t) {
  if (leaf.t == VT_BOX && leaf.u.box->tape == t) {
    Value g = adj->items[leaf.u.box->node];
    if (g.t == VT_NULL) return zeros_like(I, leaf);
    val_retain(g);
    bool gn = ad_primal(g).t != VT_MAT, ln = ad_primal(leaf).t != VT_MAT;
    if (ln && !gn) {                 /* a number leaf with a 1x1 adjoint */
      Value s = op_reduce(I, OP_SUM, g, (Span){ 0, 0 });
      val_release(g);
      return s;
    }
    return g;
  }
  if (leaf.t == VT_LIST) {
    List *l = list_new(I, leaf.u.l->n);
    Value r = val_list(l);
    tmp_push(I, r);
    for (int i = 0; i < leaf.u.l->n; i++)
      list_push(l, collect(I, leaf.u.l->items[i], adj, t), leaf.u.l->names ? leaf.u.l->names[i] : NULL);
    tmp_pop(I, 1);
    return r;
  }
  return zeros_like(I, leaf);
}

Value ad_call_derived(Interp *I, Closure *c, int nargs, Value *args, Symbol **names, Span sp) {
  const Derived *d = c->derived;
  if (d->kind == 4) return stage_call_jit(I, d->jit, d->f, nargs, args, names, sp);
  if (d->kind >= 2) return ad_call_jacobian(I, c, nargs, args, names, sp);
  int mark = I->ntmp;
  /* which positional arguments: argnum is a number or a vector of positions */
  int pos[16], npos = 0;
  Value an = ad_primal(d->argnum);
  bool many = an.t == VT_MAT;
  if (an.t == VT_NUM) pos[npos++] = (int)an.u.n;
  else for (int64_t i = 0; i < tensor_numel(an.u.m) && npos < 16; i++) pos[npos++] = (int)tensor_at(an.u.m, i);
  int npositional = 0;
  for (int i = 0; i < nargs; i++) npositional += names[i] == NULL;
  Tape *t = tape_begin(I);
  List *holder = list_new(I, nargs > 0 ? nargs : 1);       /* keeps the boxed args alive */
  tmp_push(I, val_list(holder));
  for (int i = 0; i < nargs; i++) { val_retain(args[i]); list_push(holder, args[i], NULL); }
  int leaf_at[16];
  int pi = 0;
  for (int k = 0; k < npos; k++) {
    int want = pos[k];
    if (want < 1 || want > npositional) {
      mls_throw(I, sp, "%s: argnum %d is not a positional argument of this call (it has %d)", c->dname, want, npositional);
    }
    int seen = 0, again = -1;
    for (int j = 0; j < k; j++)                  /* argnum=[1, 1]: the same leaf, its gradient twice */
      if (pos[j] == want) again = j;
    if (again >= 0) {                            /* (pi == k: one leaf_at per position) */
      leaf_at[pi++] = leaf_at[again];
      continue;
    }
    for (int i = 0; i < nargs; i++) {
      if (names[i]) continue;
      if (++seen != want) continue;
      Value leaf = make_leaves(I, t, holder->items[i], sp);
      val_release(holder->items[i]);
      holder->items[i] = leaf;
      leaf_at[pi++] = i;
    }
  }
  Value r = call_value(I, d->f, nargs, holder->items, names, sp);
  tmp_push(I, r);
  t->active = false;
  Value prim = ad_primal(r);
  if (!(prim.t == VT_NUM || prim.t == VT_BOOL || (prim.t == VT_MAT && tensor_numel(prim.u.m) == 1))) {
    char desc[64];
    mls_throw(I, sp, "%s: function must return a scalar, got %s", c->dname, val_describe(prim, desc, sizeof desc));
  }
  List *adj = NULL;
  Value val = r;
  while (val.t == VT_BOX && val.u.box->tape == t) val = val.u.box->v;
  if (r.t == VT_BOX && r.u.box->tape == t) {
    Value seed = ad_primal(r).t == VT_MAT ? val_mat(tensor_new(I, 1, 1)) : val_num(1);
    if (seed.t == VT_MAT) { tensor_data(seed.u.m)[0] = 1; tmp_push(I, seed); }
    adj = backward(I, t, r.u.box->node, seed);
  } else {                                     /* the result does not depend on the leaves */
    adj = adj_list(I, t);
  }
  Value grads;
  if (many) {
    List *gl = list_new(I, pi);
    grads = val_list(gl);
    tmp_push(I, grads);
    for (int k = 0; k < pi; k++) list_push(gl, collect(I, holder->items[leaf_at[k]], adj, t), NULL);
    tmp_pop(I, 1);
  } else {
    grads = collect(I, holder->items[leaf_at[0]], adj, t);
  }
  Value result = grads;
  if (d->kind == 1) {                                  /* value_and_grad: [value, gradient] */
    tmp_push(I, grads);                                /* held while the list is made */
    List *vl = list_new(I, 2);
    vl->multi = true;
    val_retain(val);
    list_push(vl, val, NULL);
    list_push(vl, grads, NULL);                        /* (room for two: these cannot fail) */
    tmp_pop(I, 1);
    result = val_list(vl);
  }
  tmp_push(I, result);
  val_retain(result);
  tmp_release_to(I, mark);
  return result;
}

/* ---- builtins ---- */
static const char *const derived_names[] = { "grad", "value_and_grad", "jacobian", "hessian" };

static Value make_derived(Interp *I, Args *a, int kind) {
  Value f = a->v[0];
  if (f.t != VT_FUNC && f.t != VT_BUILTIN) {
    char desc[64];
    bi_argerror(I, 1, "function expected, got %s", val_describe(f, desc, sizeof desc));
  }
  Value argnum = bi_given(a, 1) ? a->v[1] : val_num(1);
  Value ap = ad_primal(argnum);
  if (ap.t != VT_NUM && !(ap.t == VT_MAT && (tensor_rows(ap.u.m) == 1 || tensor_cols(ap.u.m) == 1) && tensor_numel(ap.u.m) <= 16))
    bi_argerror(I, 2, "a position or a vector of at most 16 positions expected");
  int64_t nan = ap.t == VT_NUM ? 1 : tensor_numel(ap.u.m);
  for (int64_t i = 0; i < nan; i++) {              /* whole numbers from 1: no cast of 1e10 or NaN to int */
    double p = ap.t == VT_NUM ? ap.u.n : tensor_at(ap.u.m, i);
    if (!(p >= 1 && p <= 65535 && p == floor(p))) {
      char num[32];
      if (isnan(p)) snprintf(num, sizeof num, "NaN");
      else snprintf(num, sizeof num, "%.15g", p);
      bi_argerror(I, 2, "argnum must be whole numbers from 1 (argument positions), got %s", num);
    }
  }
  Derived *d = mem_calloc(1, sizeof *d);
  d->kind = kind;
  d->f = f;
  val_retain(f);
  d->argnum = ap;
  val_retain(ap);
  return closure_new_derived(I, d, derived_names[kind]);
}

Value ad_derived_jit(Interp *I, Value f, struct Jit *j) {  /* takes j (freed on failure) */
  Derived *d = mem_try_alloc(sizeof *d);
  if (!d) {
    stage_jit_free(j);
    mem_oom(sizeof *d);
  }
  memset(d, 0, sizeof *d);
  d->kind = 4;
  d->f = f;
  val_retain(f);
  d->argnum = val_null();
  d->jit = j;
  return closure_new_derived(I, d, "jit");
}

struct Jit *ad_jit_of(Value f) {
  return f.t == VT_FUNC && f.u.f->derived && f.u.f->derived->kind == 4 ? f.u.f->derived->jit : NULL;
}

void ad_derived_children(const Derived *d, GcVisit fn, void *ctx) {
  gc_visit_value(d->f, fn, ctx);
  gc_visit_value(d->argnum, fn, ctx);
  if (d->jit) stage_jit_children(d->jit, fn, ctx);
}

void ad_derived_free(Derived *d) {
  if (d->jit) stage_jit_free(d->jit);
  val_release(d->f);
  val_release(d->argnum);
  mem_free(d);
}

Value bi_grad(Interp *I, Args *a) { return make_derived(I, a, 0); }
Value bi_value_and_grad(Interp *I, Args *a) { return make_derived(I, a, 1); }

Value bi_stop_gradient(Interp *I, Args *a) {
  (void)I;
  Value v = ad_primal(a->v[0]);
  val_retain(v);
  return v;
}

/* ---- jacobian, hessian, gradcheck ---- */
/* The gradient of component k (0-based; -1 for a scalar result) of f(args) with respect to
** positional argument ap (0-based among the positional ones). */
static Value grad_component(Interp *I, Value f, int nargs, const Value *args, Symbol **names, int ap, int64_t k, Span sp,
                            const char *who) {
  int mark = I->ntmp;
  Tape *t = tape_begin(I);
  List *holder = list_new(I, nargs > 0 ? nargs : 1);
  tmp_push(I, val_list(holder));
  int at = -1, seen = 0;
  for (int i = 0; i < nargs; i++) {
    val_retain(args[i]);
    list_push(holder, args[i], NULL);
    if (!names[i] && seen++ == ap) at = i;
  }
  if (at < 0) mls_throw(I, sp, "%s: the call has no positional argument %d", who, ap + 1);
  Value leaf = make_leaves(I, t, holder->items[at], sp);
  val_release(holder->items[at]);
  holder->items[at] = leaf;
  Value r = T(I, call_value(I, f, nargs, holder->items, names, sp));
  if (k >= 0) {
    Value p = ad_primal(r);
    if (p.t == VT_MAT) r = T(I, ad_index(I, r, 1, (Value[]){ val_num((double)k + 1) }, sp));
  } else {
    Value p = ad_primal(r);
    if (!(p.t == VT_NUM || p.t == VT_BOOL || (p.t == VT_MAT && tensor_numel(p.u.m) == 1))) {
      char desc[64];
      mls_throw(I, sp, "%s: function must return a scalar, got %s", who, val_describe(p, desc, sizeof desc));
    }
  }
  t->active = false;
  List *adj;
  if (r.t == VT_BOX && r.u.box->tape == t) {
    Value seed = val_num(1);
    if (ad_primal(r).t == VT_MAT) {
      Tensor *s1 = tensor_new(I, 1, 1);
      tensor_data(s1)[0] = 1;
      seed = T(I, val_mat(s1));
    }
    adj = backward(I, t, r.u.box->node, seed);
  } else {
    adj = adj_list(I, t);
  }
  Value g = collect(I, holder->items[at], adj, t);
  tmp_push(I, g);
  val_retain(g);
  tmp_release_to(I, mark);
  return g;
}

static int64_t numel_of(Interp *I, Value v, Span sp, const char *who) {
  v = ad_primal(v);
  if (v.t == VT_NUM || v.t == VT_BOOL) return 1;
  if (v.t == VT_MAT) return tensor_numel(v.u.m);
  char d[64];
  mls_throw(I, sp, "%s: numbers and matrices only, got %s", who, val_describe(v, d, sizeof d));
}

static double elem(Value v, int64_t i) {
  v = ad_primal(v);
  if (v.t == VT_NUM) return v.u.n;
  if (v.t == VT_BOOL) return v.u.b;
  return tensor_at(v.u.m, i);            /* row-major: a result of t() is a strided view */
}

/* J[k, ] = d f(x)[k] / dx, one reverse pass per output (LANGUAGE.md §11). */
static Value jacobian_of(Interp *I, Value f, int nargs, Value *args, Symbol **names, Span sp, const char *who) {
  int mark = I->ntmp;
  Value y = T(I, call_value(I, f, nargs, args, names, sp));
  int64_t m = numel_of(I, y, sp, who), n = -1;
  Tensor *J = NULL;
  for (int64_t k = 0; k < m; k++) {
    Value g = T(I, grad_component(I, f, nargs, args, names, 0, ad_primal(y).t == VT_MAT ? k : -1, sp, who));
    if (!J) {
      n = numel_of(I, g, sp, who);
      J = tensor_new(I, m, n);
      T(I, val_mat(J));
    }
    for (int64_t j = 0; j < n; j++) tensor_data(J)[k * n + j] = elem(g, j);
  }
  if (!J) { J = tensor_new(I, 0, 0); T(I, val_mat(J)); }
  Value r = val_mat(J);
  val_retain(r);
  tmp_release_to(I, mark);
  return r;
}

Value ad_call_jacobian(Interp *I, Closure *c, int nargs, Value *args, Symbol **names, Span sp) {
  const Derived *d = c->derived;
  if (ad_any_grad(nargs, args))       /* its result is assembled from numbers, not ops */
    mls_throw(I, sp, "%s: its result cannot be differentiated again (use nested grad)", c->dname);
  for (int i = 0; i < nargs; i++) ad_concrete(I, args[i], sp, "a jacobian or hessian (assembled from numbers)");
  if (d->kind == 2) return jacobian_of(I, d->f, nargs, args, names, sp, "jacobian");
  /* hessian: the jacobian of grad(f) */
  Derived *gd = mem_calloc(1, sizeof *gd);
  gd->kind = 0;
  gd->f = d->f;
  val_retain(gd->f);
  gd->argnum = val_num(1);
  Value gf = closure_new_derived(I, gd, "hessian");  /* (its errors name hessian) */
  tmp_push(I, gf);
  Value h = jacobian_of(I, gf, nargs, args, names, sp, "hessian");
  tmp_pop(I, 1);
  val_release(gf);
  return h;
}

Value bi_jacobian(Interp *I, Args *a) { return make_derived(I, a, 2); }
Value bi_hessian(Interp *I, Args *a) { return make_derived(I, a, 3); }

/* Largest relative difference between grad(f)(x) and central differences. */
Value bi_gradcheck(Interp *I, Args *a) {
  Value f = a->v[0], x = ad_primal(a->v[1]);
  if (f.t != VT_FUNC && f.t != VT_BUILTIN) bi_argerror(I, 1, "function expected");
  if (x.t != VT_NUM && x.t != VT_MAT) bi_argerror(I, 2, "number or matrix expected");
  int mark = I->ntmp;
  Symbol *none[1] = { NULL };
  Value g = T(I, grad_component(I, f, 1, &x, none, 0, -1, a->span, "gradcheck"));
  int64_t n = numel_of(I, x, a->span, "gradcheck");
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double xi = elem(x, i), h = 1e-6 * fmax(1.0, fabs(xi)), fx[2];
    for (int s = 0; s < 2; s++) {
      Value xs;
      if (x.t == VT_NUM) xs = val_num(xi + (s ? -h : h));
      else {
        Tensor *c = tensor_clone(I, x.u.m);
        tensor_data(c)[i] = xi + (s ? -h : h);
        xs = T(I, val_mat(c));
      }
      Value y = T(I, call_value(I, f, 1, &xs, none, a->span));
      fx[s] = elem(y, 0);
    }
    double fd = (fx[0] - fx[1]) / (2 * h), gi = elem(g, i);
    double err = fabs(fd - gi) / fmax(fmax(fabs(fd), fabs(gi)), 1e-7);
    if (err > worst || isnan(err)) worst = err;
  }
  tmp_release_to(I, mark);
  return val_num(worst);
}

/* ---- entry points for trace_grad (autodiff_trace.c): thin wrappers, nothing new ---- */
Tape *ad_trace_tape(Interp *I) { return tape_begin(I); }
Tape *ad_stage_tape(Interp *I, struct Graph *g) {
  Tape *t = tape_begin(I);
  t->graph = g;
  t->kind = &stage_kind;
  return t;
}

Value ad_concrete(Interp *I, Value v, Span sp, const char *what) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape->graph && x.u.box->tape->active &&
        !(x.u.box->tape->graph->nodes[x.u.box->node].flags & GF_CONSTANT))   /* known while staging */
    {
      graph_mark_dynamic(x.u.box->tape->graph, I, sp, "%s depends on a staged value", what);
      x.u.box->tape->active = false;   /* the rest of this staging run is plain eager code */
    }
  return ad_primal(v);
}
Value ad_trace_leaf(Interp *I, Tape *t, Value v, Span sp) { return make_leaves(I, t, v, sp); }
List *ad_trace_backward(Interp *I, Tape *t, int root, Value seed) { return backward(I, t, root, seed); }
Value ad_trace_collect(Interp *I, Value leaf, const List *adj, Tape *t) { return collect(I, leaf, adj, t); }
