/*
** apply.c — the one dispatcher of the ops (docs/architecture.md "The path of one op"). op_apply
** takes every op application, from the entry points of ops.h, the builtins, the derivative
** rules and the graph runner alike: when an operand is traced, the innermost trace handles the
** op (its TraceKind: a grad tape records it, jvp pushes tangents, a stage adds a graph node);
** otherwise op_kernel runs the op's family kernel on the backend where the operands live. Here
** too: the located errors every family gives alike, and the backend call of one kernel.
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "ops/family.h"
#include "ops/index.h"
#include "ops/linalg.h"
#include "ops/rules.h"

/* ---- what the families share ---- */
void op_shape_str(Value v, char *buf, size_t n) {
  if (v.t == VT_MAT) snprintf(buf, n, "%lldx%lld", (long long)tensor_rows(v.u.m), (long long)tensor_cols(v.u.m));
  else if (is_numlike(v)) snprintf(buf, n, "1x1");
  else snprintf(buf, n, "%s", val_type_name(v));
}

l_noret op_bad_operand(Interp *I, OpKind op, Value v, Span sp) {
  char d[64];
  mls_throw(I, sp, "invalid operand for '%s': %s", op_info[op].sym, val_describe(v, d, sizeof d));
}

l_noret op_bad_operands(Interp *I, OpKind op, Value a, Value b, Span sp) {
  char d0[64], d1[64];
  mls_throw(I, sp, "invalid operands for '%s': %s and %s", op_info[op].sym, val_describe(a, d0, sizeof d0),
            val_describe(b, d1, sizeof d1));
}

l_noret op_bad_argn(Interp *I, OpKind op, int argn, Span sp, const char *what, Value v) {
  char d[64];
  if (v.t == VT_MAT) op_shape_str(v, d, sizeof d);         /* "got 3x4" for shapes */
  else val_describe(v, d, sizeof d);                       /* "got a string" */
  mls_throw(I, sp, "bad argument #%d to '%s' (%s, got %s)", argn, op_info[op].sym, what, d);
}

static bool all_finite(const double *d, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(d[i])) return false;
  return true;
}

/* --nan-check: out (a fresh result) holds NaN/Inf although the inputs were finite. */
static void nan_check_result(Interp *I, OpKind op, Tensor *out, Tensor *const in[], int nin, const OpParams *p, Span sp) {
  if (all_finite(tensor_data(out), tensor_numel(out))) return;
  for (int k = 0; k < nin; k++) {
    if (in[k] && !all_finite(tensor_data(in[k]), tensor_numel(in[k]))) return;
    if (!in[k] && p && !isfinite(p->scalar[k])) return;
  }
  tensor_free_ref(out);
  nan_check_fail(I, op_info[op].sym, sp);
}

bool op_abstract_in(Tensor *const in[], int n) {
  for (int k = 0; k < n; k++)
    if (in[k] && in[k]->st->abstract) return true;
  return false;
}

l_noret op_abstract_stop(Interp *I, OpKind op, Span sp) {
  interp_abstract_stop(I, sp, "'%s' would compute on a value the trace did not compute", op_info[op].sym);
}

void op_run_kernel(Interp *I, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p, Span sp) {
  int nin = op_info[op].arity < 3 ? op_info[op].arity : 3;
  if (op_abstract_in(in, nin)) { tensor_free_ref(out); op_abstract_stop(I, op, sp); }
  I->kernel_runs++;
  const Backend *be = be_runner(I->cpu, op, out, in, nin, &I->be_fallbacks);
  bool over = false;                         /* out is an operand (an elementwise op written in place) */
  for (int k = 0; k < nin; k++) over |= in[k] == out;
  if (over && be->set_stop) be->set_stop(be, NULL);   /* never left half written: Ctrl-C waits for its end */
  int rc = be->run(be, op, out, in, p);
  if (over && be->set_stop) be->set_stop(be, &I->interrupted);
  if (rc != 0) {
    tensor_free_ref(out);
    if (be->error) mls_throw(I, sp, "the %s backend failed running '%s': %s", be->name, op_info[op].sym, be->error(be));
    mls_throw(I, sp, "the %s backend cannot run '%s'", be->name, op_info[op].name);
  }
  /* the kernel stopped early; one written in place ran to its end, and the interrupt is
  ** raised at the next safe point, after the statement (X = X / 255) has stored its result */
  if (I->interrupted && !over) { tensor_free_ref(out); interp_check_interrupt(I, sp); }
  if (I->nan_check) nan_check_result(I, op, out, in, nin, p, sp);
  out->logical = (op_info[op].flags & OPF_CMP) != 0;      /* also clears a reused operand's flag */
  if (out->names) tensor_set_names(out, NULL);             /* (and names: eval.c passes them on) */
}

Tensor *op_run1(Interp *I, OpKind op, Tensor *x, int64_t rows, int64_t cols, Span sp) {
  Tensor *cx = tensor_contiguous(I, x);
  tmp_push(I, val_mat(cx));
  Tensor *out = tensor_new_on(I, cx->st->be, rows, cols);
  Tensor *in[1] = { cx };
  op_run_kernel(I, op, out, in, NULL, sp);
  tmp_pop(I, 1);
  tensor_free_ref(cx);
  return out;
}

/* Operands on different devices: a small CPU matrix (a literal, a 1x1 from a number) joins
** the device of the others, copied up (PyTorch lets a CPU scalar tensor join CUDA ones);
** a larger one keeps the op on the CPU, which reads the device data (be_place). The copies go
** on the tmp stack; in[] is updated in place. */
void op_align_devices(Interp *I, Tensor *in[], int n) {
  const Backend *dev = NULL;
  for (int k = 0; k < n && !dev; k++)
    if (in[k] && in[k]->st->be != I->cpu) dev = in[k]->st->be;
  if (!dev) return;
  for (int k = 0; k < n; k++)
    if (in[k] && in[k]->st->be != dev && (in[k]->st->be != I->cpu || tensor_numel(in[k]) > TENSOR_SMALL)) return;
  for (int k = 0; k < n; k++)
    if (in[k] && in[k]->st->be != dev) {
      in[k] = tensor_to(I, in[k], dev);
      tmp_push(I, val_mat(in[k]));
    }
}

/* ---- the kernels, by family: op on plain operands (no trace takes it) ---- */
Value op_kernel(Interp *I, OpKind op, bool lent, const Value *in, int nextra, const Value *x, Span sp) {
  int nin = op_info[op].arity < 3 ? op_info[op].arity : 3;
  if (sp_involved(I, nin, in)) return sp_kernel(I, op, lent, nin, in, nextra, x, sp);
  return op_kernel_dense(I, op, lent, in, nextra, x, sp);
}

Value op_kernel_dense(Interp *I, OpKind op, bool lent, const Value *in, int nextra, const Value *x, Span sp) {
  int flags = op_info[op].flags;
  if ((flags & OPF_EW) && op_info[op].arity == 2) return ew_binary(I, op, in[0], in[1], lent, sp);
  if (flags & OPF_EW) return ew_unary(I, op, in[0], lent, sp);
  switch (op) {
  case OP_MATMUL: return mm_matmul(I, in[0], in[1], sp);
  case OP_SUMPROD: return op_sumprod(I, in[0], in[1], sp);
  case OP_DOT: case OP_ROWSUMSPROD: case OP_COLSUMSPROD: case OP_DIAGPROD: case OP_CROSSPROD: case OP_TCROSSPROD: case OP_XTWXV:
    return mm_product_form(I, op, in, sp);
  case OP_TRANSPOSE: return shp_transpose(I, in[0], sp);
  case OP_RESHAPE: return shp_reshape(I, in[0], (int64_t)x[0].u.n, (int64_t)x[1].u.n, sp);
  case OP_DIAG: return red_diag(I, in[0], sp);
  case OP_SOLVE: case OP_INV: case OP_DET:
  case OP_EIGVALS: case OP_EIGVECS: case OP_CHOL: case OP_QR_Q: case OP_QR_R: case OP_SVD_U: case OP_SVD_S: case OP_SVD_V:
    return linalg_apply(I, op, in, sp);
  case OP_IFELSE: return ew_ifelse(I, in[0], in[1], in[2], sp);
  case OP_ALLREDUCE: return comm_allreduce(I, in[0], (int)x[0].u.n, sp);
  case OP_CUMEXT_GRAD: case OP_CUMEXT_TAN: return red_grad_aux(I, op, 3, in, sp);
  case OP_ROWPRODS_GRAD: case OP_COLPRODS_GRAD: case OP_LINREC: case OP_RLINREC: return red_grad_aux(I, op, 2, in, sp);
  case OP_INDEX: return index_read(I, in[0], (int)x[0].u.n, x + 1, sp);
  case OP_SCATTER: return index_scatter(I, in[0], (int64_t)x[0].u.n, (int64_t)x[1].u.n, (int)x[2].u.n, x + 3, sp);
  default:
    if (flags & OPF_NN) return op_nn(I, op, in, nextra ? x[0] : val_null(), sp);
    if (flags & OPF_KEEP) return red_scan(I, op, in[0], sp);
    if (flags & OPF_RED) return red_reduce(I, op, in[0], sp);
    break;
  }
  mls_throw(I, sp, "grad: '%s' is not differentiable", op_info[op].sym);
}

/* ---- the derivative rules, by family (ops/rules.h) ---- */
typedef enum OpFamily { FAM_NONE, FAM_EW, FAM_RED, FAM_MATMUL, FAM_PRODUCTS, FAM_SHAPE, FAM_INDEX, FAM_LINALG, FAM_NN, FAM_COMM,
                        FAM_COUNT } OpFamily;

/* The family whose file holds op's kernel entry and rules. A switch over every op code with no
** default: a new op of ops.def without its family is a build error (-Werror=switch). */
static OpFamily op_family(OpKind op) {
  switch (op) {
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) case OP_##NAME:
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) case OP_##NAME:
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
  case OP_IFELSE:
    return FAM_EW;
  case OP_SUM: case OP_PROD: case OP_MAX: case OP_MIN: case OP_ROWSUMS: case OP_COLSUMS: case OP_ROWMAXS:
  case OP_ROWMINS: case OP_COLMAXS: case OP_COLMINS: case OP_ROWINDEXMAX: case OP_ROWINDEXMIN: case OP_ROWPRODS:
  case OP_COLPRODS: case OP_CUMSUM: case OP_CUMPROD: case OP_CUMMAX: case OP_CUMMIN: case OP_CUMSUMPROD:
  case OP_SOFTMAX: case OP_LOGSOFTMAX: case OP_DIAG: case OP_CUMEXT_GRAD: case OP_CUMEXT_TAN:
  case OP_ROWPRODS_GRAD: case OP_COLPRODS_GRAD: case OP_LINREC: case OP_RLINREC:
    return FAM_RED;
  case OP_MATMUL: case OP_SUMPROD: return FAM_MATMUL;
  case OP_DOT: case OP_ROWSUMSPROD: case OP_COLSUMSPROD: case OP_DIAGPROD: case OP_CROSSPROD: case OP_TCROSSPROD:
  case OP_XTWXV: case OP_MMCHAIN: case OP_MASKED:
    return FAM_PRODUCTS;
  case OP_TRANSPOSE: case OP_RESHAPE: case OP_RANGE: return FAM_SHAPE;
  case OP_INDEX: case OP_SCATTER: return FAM_INDEX;
  case OP_SOLVE: case OP_INV: case OP_DET: case OP_EIGVALS: case OP_EIGVECS: case OP_CHOL: case OP_QR_Q: case OP_QR_R:
  case OP_SVD_U: case OP_SVD_S: case OP_SVD_V:
    return FAM_LINALG;
  case OP_CONV2D: case OP_CONV2D_BWD_DATA: case OP_CONV2D_BWD_FILT: case OP_MAX_POOL: case OP_MAX_POOL_BWD:
  case OP_MAX_POOL_GATHER: case OP_AVG_POOL: case OP_AVG_POOL_BWD: case OP_BIAS_ADD: case OP_BIAS_MULTIPLY:
    return FAM_NN;
  case OP_ALLREDUCE: return FAM_COMM;
  case OP_NONE: case OP_COUNT: break;
  }
  return FAM_NONE;
}

static const struct { VjpRule vjp; JvpRule jvp; } family_rules[] = {
  [FAM_NONE] = { NULL, NULL },           [FAM_EW] = { ew_vjp, ew_jvp },
  [FAM_RED] = { red_vjp, red_jvp },      [FAM_MATMUL] = { mm_vjp, mm_jvp },
  [FAM_PRODUCTS] = { prod_vjp, prod_jvp }, [FAM_SHAPE] = { shp_vjp, shp_jvp },
  [FAM_INDEX] = { index_vjp, index_jvp }, [FAM_LINALG] = { linalg_vjp, linalg_jvp },
  [FAM_NN] = { nn_vjp, nn_jvp },         [FAM_COMM] = { comm_vjp, comm_jvp },
};
_Static_assert(sizeof family_rules / sizeof family_rules[0] == FAM_COUNT, "a family without its rules");

void op_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  VjpRule f = family_rules[op_family(r->op)].vjp;
  if (!f) rl_no_rule(I, r->op, false, r->sp);
  f(I, r, g, gin);
}

Value op_jvp(Interp *I, const RuleArgs *r, const Value *tin) {
  JvpRule f = family_rules[op_family(r->op)].jvp;
  if (!f) rl_no_rule(I, r->op, true, r->sp);
  return f(I, r, tin);
}

/* Whether an active stage takes op as a constant node when no operand is traced (the trace is
** then "lifted" to the stage, as JAX's omnistaging does). The shape op reshape, the LAPACK ops,
** indexing and the sum of a product are folded while tracing instead: their plain results are
** constants of the graph. */
static bool stage_lifts(OpKind op) {
  switch (op) {
  case OP_RESHAPE: case OP_INDEX: case OP_SCATTER: case OP_SUMPROD:
  case OP_SOLVE: case OP_INV: case OP_DET:
  case OP_EIGVALS: case OP_EIGVECS: case OP_CHOL: case OP_QR_Q: case OP_QR_R: case OP_SVD_U: case OP_SVD_S: case OP_SVD_V:
    return false;
  default:
    return true;
  }
}

/* v without its boxes of trace t and of finished traces (borrowed). */
static Value strip(Value v, const Tape *t) {
  while (v.t == VT_BOX && (v.u.box->tape == t || !v.u.box->tape->active)) v = v.u.box->v;
  return v;
}

Value op_apply(Interp *I, OpKind op, int nin, const Value *in, int nextra, const Value *extra, Span sp) {
  return op_apply_lent(I, op, false, nin, in, nextra, extra, sp);
}

Value op_apply_lent(Interp *I, OpKind op, bool lent, int nin, const Value *in, int nextra, const Value *extra, Span sp) {
  interp_abstract_poll(I, sp);               /* an abstract trace that needed a value stops here */
  if (op_eager(I, nin, in, nextra, extra)) return op_run_eager(I, op, lent, in, nextra, extra, sp);   /* no trace */
  Span saved = I->call_span;                 /* an out-of-memory inside is located here */
  I->call_span = sp;
  Tape *t = NULL;                            /* the innermost trace of an operand */
  for (int k = 0; k < nin; k++)
    for (Value v = in[k]; v.t == VT_BOX; v = v.u.box->v)
      if (v.u.box->tape->active && (!t || v.u.box->tape->id > t->id)) t = v.u.box->tape;
  Value un[3] = { val_null(), val_null(), val_null() };
  for (int k = 0; k < nin; k++) un[k] = strip(in[k], t);
  for (int k = 0; k < nextra; k++)          /* a staged index value: the innermost stage records it */
    for (Value v = extra[k]; v.t == VT_BOX; v = v.u.box->v)
      if (v.u.box->tape->active && v.u.box->tape->graph && (!t || v.u.box->tape->id > t->id)) t = v.u.box->tape;
  if (t && t->graph)
    for (int k = 0; k < nin; k++) un[k] = strip(in[k], t);
  for (int k = 0; k < nin && t; k++)         /* a box of t under another trace's: t would get the op */
    for (Value v = un[k]; v.t == VT_BOX; v = v.u.box->v)   /* again (a stack overflow); never made */
      if (v.u.box->tape == t)                /* on purpose (found by gen_diff: bind_item, loop.c) */
        mls_throw(I, sp, "internal error: '%s' of a value whose traces are nested out of order", op_info[op].sym);
  Value ux[6] = { val_null(), val_null(), val_null(), val_null(), val_null(), val_null() };
  for (int k = 0; k < nextra && k < 6; k++)
    ux[k] = t && t->graph ? ad_primal(extra[k]) : ad_concrete(I, extra[k], sp, "an index");
  OpCall c = { op, nin, nextra, in, un, extra, ux, false, sp };
  Value r;
  if (!t && I->stage && I->stage->active && stage_lifts(op)) {
    c.lifted = true;                         /* staging, no traced operand: a constant node */
    r = I->stage->kind->process(I, I->stage, &c);
  } else if (t) {
    r = t->kind->process(I, t, &c);
  } else {
    Tape *st = I->stage;                     /* a staging run gone eager: plain ops from here */
    if (st && !st->active) I->stage = NULL;
    /* Not lent where an operand was a box (of a finished trace): the matrix inside has one
    ** reference, the box's, but the box may be shared (a list item, a variable), so the kernel
    ** must not write over it (a staged block gone eager wrote X[[k]] != Y[[k]] into X's item).
    ** A trace never gets lent either: its ops are its own. */
    for (int k = 0; k < nin && lent; k++) lent = in[k].t != VT_BOX;
    r = op_kernel(I, op, lent, un, nextra, ux, sp);
    I->stage = st;
  }
  I->call_span = saved;
  return r;
}

Value ad_apply_inner(Interp *I, const Tape *t, const OpCall *c) {
  Tape *st = I->stage;
  bool aside = st && !st->active;
  if (st && st->active && st->graph && st->id > t->id) {   /* a stage begun inside t: set aside */
    aside = true;                                          /* when no operand carries an active trace */
    for (int k = 0; k < c->nin && aside; k++)
      for (Value v = c->un[k]; v.t == VT_BOX && aside; v = v.u.box->v) aside = !v.u.box->tape->active;
  }
  if (aside) I->stage = NULL;
  Value out = op_apply(I, c->op, c->nin, c->un, c->nextra, c->ux, c->sp);
  I->stage = st;
  return out;
}
