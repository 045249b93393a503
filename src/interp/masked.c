/*
** masked.c — the eager front end of W * expr at a sparse W's stored cells (docs/sparse.md
** "Sparse-safe expressions"; the kernel and its conditions are ops/masked.c's): expr's form is
** checked before anything is evaluated (products, +, -, *, unary minus, ^2, log and exp over
** leaves that are names, numbers and t(name), which can be evaluated again without effect when the attempt
** is given up), then the leaves are evaluated and the program runs at W's cells. Arguments
** borrowed, the result owned (+1).
*/
#include <string.h>
#include "builtins.h"
#include "mem.h"
#include "interp/interp.h"
#include "staging/graph.h"
#include "staging/stage.h"

/* Whether n is a call name(x), one positional argument, of the builtin name (the name not bound
** by the program). The callee is evaluated only when it is spelled so: another name, unbound,
** would throw its "object not found" where the call reports "could not find function". */
static bool is_call_of(Interp *I, AstNode *n, const char *name) {
  if (n->kind != AST_CALL || n->nkids != 2 || n->kids[0]->kind != AST_NAME || strcmp(n->kids[0]->u.sym->name, name) ||
      n->kids[1]->kind == AST_ARG)
    return false;
  Value f = eval(I, n->kids[0]);
  bool is = f.t == VT_BUILTIN && !strcmp(f.u.bi->name, name);
  val_release(f);
  return is;
}

/* a name, a number or t(name) */
static bool is_leaf(Interp *I, AstNode *n) {
  return n->kind == AST_NUM || n->kind == AST_NAME || (is_call_of(I, n, "t") && n->kids[1]->kind == AST_NAME);
}

typedef struct Front {
  Interp *I;
  double pl[4 * MK_MAX];
  int n;
  Value leaf[MK_MAX];                /* evaluated (on the tmp stack) */
  int nleaf;
} Front;

static int emit(Front *f, int code, int a, int b, int fl) { return op_masked_emit(f->pl, &f->n, code, a, b, fl); }

/* A leaf's value as an instruction (evaluated: a name, a number or t(name)). */
static int leaf(Front *f, AstNode *n) {
  if (f->nleaf == MK_MAX - 1) return -1;
  Value v = eval(f->I, n);
  tmp_push(f->I, v);
  f->leaf[f->nleaf++] = v;
  return emit(f, MK_LEAF, f->nleaf, 0, 0);
}

/* n as the program's instructions (-1: another form). Checked first by form_ok. */
static int build(Front *f, AstNode *n) {
  if (is_leaf(f->I, n)) return leaf(f, n);
  bool lg = n->kind == AST_CALL && is_call_of(f->I, n, "log");
  if (lg || n->kind == AST_CALL) {                 /* log(x), exp(x) */
    int a = build(f, n->kids[1]);
    return a < 0 ? -1 : emit(f, lg ? MK_LOG : MK_EXP, a, 0, 0);
  }
  if (n->kind == AST_UNARY) {
    int a = build(f, n->kids[0]);
    return a < 0 ? -1 : emit(f, MK_NEG, a, 0, 0);
  }
  int a, b;
  switch (n->op) {
  case OP_MATMUL:
    a = leaf(f, n->kids[0]);
    b = a < 0 ? -1 : leaf(f, n->kids[1]);
    return b < 0 ? -1 : emit(f, MK_PROD, a, b, 0);
  case OP_POW:
    a = build(f, n->kids[0]);
    return a < 0 ? -1 : emit(f, MK_SQ, a, 0, 0);
  default:
    a = build(f, n->kids[0]);
    b = a < 0 ? -1 : build(f, n->kids[1]);
    return b < 0 ? -1 : emit(f, n->op == OP_ADD ? MK_ADD : n->op == OP_SUB ? MK_SUB : MK_MUL, a, b, 0);
  }
}

/* The form, checked without evaluating anything but names; *prods counts the products. */
static bool form_ok(Interp *I, AstNode *n, int *prods, int depth) {
  if (depth > 64) return false;
  if (is_leaf(I, n)) return true;
  if (is_call_of(I, n, "log") || is_call_of(I, n, "exp")) return form_ok(I, n->kids[1], prods, depth + 1);
  if (n->kind == AST_UNARY) return n->op == OP_NEG && form_ok(I, n->kids[0], prods, depth + 1);
  if (n->kind != AST_BINARY) return false;
  switch (n->op) {
  case OP_MATMUL:
    ++*prods;
    return is_leaf(I, n->kids[0]) && is_leaf(I, n->kids[1]);
  case OP_ADD: case OP_SUB: case OP_MUL:
    return form_ok(I, n->kids[0], prods, depth + 1) && form_ok(I, n->kids[1], prods, depth + 1);
  case OP_POW:
    return n->kids[1]->kind == AST_NUM && n->kids[1]->u.num == 2 && form_ok(I, n->kids[0], prods, depth + 1);
  default:
    return false;
  }
}

/* Whether v is plain or traced only by active stages (not by a grad or jvp, which would need the
** masked op's derivative rules). */
static bool staged_or_plain(Value v) {
  for (; v.t == VT_BOX; v = v.u.box->v)
    if (!v.u.box->tape->graph || !v.u.box->tape->active) return false;
  return true;
}

/* ---- eager grad: the masked op as one tape node (autodiff.h AdCustom) ----
** A tape node holds at most three operands, so W * e with e's leaves traced by a grad is recorded
** as a custom node over the leaves: its forward pass is op_masked_sparse on their values, its
** backward op_masked_vjp (ops/masked.c) at W's stored cells, and the sum of it takes the broadcast
** adjoint as a number: the dense m x n product is made neither way (docs/sparse.md "grad"). */
typedef struct MaskedNode {
  AdCustom c;                        /* first: the tape's view of it */
  int nin;                           /* W and the leaves */
  Value in[MK_MAX];                  /* their values (retained until the backward pass has run) */
  Value plan;
  Span sp;                           /* the product's (W * e): where the backward pass reports */
} MaskedNode;

static void masked_release(AdCustom *c) {
  MaskedNode *m = (MaskedNode *)c;
  for (int k = 0; k < m->nin; k++) { val_release(m->in[k]); m->in[k] = val_null(); }
  val_release(m->plan);
  m->plan = val_null();
  m->nin = 0;
}

static void masked_free(AdCustom *c) {
  masked_release(c);
  mem_free(c);
}

static void masked_discard(void *c) { ad_custom_discard(c); }

/* gin[k] (owned) = the adjoint of input k by the ops one by one (op_masked's dense path) on a
** tape of their own, seeded with g: the rule for an adjoint that an outer grad traces as a
** matrix, whose backward ops that outer tape then records (dense, as without the node). */
static void masked_dense_vjp(Interp *I, MaskedNode *m, Value g, Value *gin) {
  int mark = I->ntmp;
  Tape *t = ad_trace_tape(I);
  Value bx[MK_MAX];
  bx[0] = m->in[0];
  gin[0] = val_null();
  for (int k = 1; k < m->nin; k++) {
    bx[k] = ad_trace_leaf(I, t, m->in[k], m->sp);
    tmp_push(I, bx[k]);
  }
  Value r = op_masked(I, m->nin, bx, m->plan, m->sp);
  tmp_push(I, r);
  t->active = false;
  int root = r.t == VT_BOX && r.u.box->tape == t ? r.u.box->node : -1;
  List *adj = root >= 0 ? ad_trace_backward(I, t, root, g) : NULL;
  for (int k = 1; k < m->nin; k++) gin[k] = adj ? ad_trace_collect(I, bx[k], adj, t) : val_null();
  for (int k = 1; k < m->nin; k++) tmp_push(I, gin[k]);
  for (int k = 1; k < m->nin; k++) val_retain(gin[k]);
  tmp_release_to(I, mark);
}

/* The custom node's backward pass: slots[k] += the adjoint of leaf k. An adjoint traced by an
** outer grad (a loss scaled by a value it differentiates) that is a number: the rule runs with 1
** and its results are scaled by it through op_binary, so that the outer tape records the
** scaling; a traced matrix: the ops one by one (masked_dense_vjp). */
static void masked_backward(Interp *I, AdCustom *c, Value **slots) {
  MaskedNode *m = (MaskedNode *)c;
  Value g = c->gout[0];
  Span sp = m->sp;
  bool traced = ad_any_active(1, &g);
  Value gp = ad_primal(g);
  Value gin[MK_MAX];
  int mark = I->ntmp;
  if ((traced && gp.t != VT_NUM) || !op_masked_vjp(I, m->nin, m->in, m->plan, traced ? val_num(1) : gp, gin, sp)) {
    masked_dense_vjp(I, m, traced ? g : gp, gin);
    traced = false;
  }
  for (int k = 1; k < m->nin; k++) tmp_push(I, gin[k]);
  for (int k = 1; k < m->nin; k++) {
    if (gin[k].t == VT_NULL) continue;
    Value d = gin[k];
    if (traced) { d = op_binary(I, OP_MUL, gin[k], g, sp); tmp_push(I, d); }
    Value *slot = slots[k - 1];
    Value sum = slot->t == VT_NULL ? (val_retain(d), d) : op_binary(I, OP_ADD, *slot, d, sp);
    val_release(*slot);
    *slot = sum;
  }
  tmp_release_to(I, mark);
}

/* W * e recorded on the grad tape that traces e's leaves, or unbound: the leaves traced by one
** active grad tape, whose boxes hold plain values (a grad of a grad records the ops one by one),
** W plain, and e's values given by the sparse path. */
static Value masked_grad(Interp *I, Front *f, Value plan, Value W, Span sp) {
  Tape *t = NULL;
  Value in[MK_MAX];
  in[0] = W;
  for (int k = 0; k < f->nleaf; k++) {
    Value v = ad_finished(f->leaf[k]);
    if (v.t == VT_BOX) {
      Tape *bt = v.u.box->tape;
      if (bt->kind != &grad_kind || bt->forward || bt->graph || bt->teaching || (t && bt != t)) return val_unbound();
      t = bt;
      v = ad_finished(v.u.box->v);
      if (v.t == VT_BOX) return val_unbound();
    }
    in[1 + k] = v;
  }
  Value r;
  if (!t || !op_masked_sparse(I, 1 + f->nleaf, in, plan, &r)) return val_unbound();
  tmp_push(I, r);
  MaskedNode *m = mem_calloc(1, sizeof *m);
  m->c.nin = f->nleaf;
  m->c.nout = 1;
  m->c.in = mem_calloc((size_t)f->nleaf, sizeof(int32_t));
  m->c.gout = mem_calloc(1, sizeof(Value));
  m->c.gout[0] = val_null();
  m->c.backward = masked_backward;
  m->c.release = masked_release;
  m->c.free_fn = masked_free;
  m->c.takes_broadcast = true;
  m->nin = 1 + f->nleaf;
  for (int k = 0; k < m->nin; k++) { m->in[k] = in[k]; val_retain(in[k]); }
  m->plan = plan;
  val_retain(plan);
  m->sp = sp;
  for (int k = 0; k < f->nleaf; k++) m->c.in[k] = ad_node_on(t, f->leaf[k]);
  mls_defer(I, masked_discard, m);
  int32_t cn = ad_custom_node(I, t, &m->c, sp);
  mls_undefer(I, m);
  tmp_pop(I, 1);
  return ad_custom_item(I, t, cn, 0, r);
}

Value eval_masked(Interp *I, AstNode *expr, Value Wv, Span sp) {
  Value W = ad_primal(Wv);
  int prods = 0;
  if (I->sparse_mode == SPARSE_EXACT || W.t != VT_MAT || !tensor_is_sparse(W.u.m) || !staged_or_plain(Wv) ||
      (I->stage && (!I->stage->active || !I->stage->graph || I->stage->graph->abstract)) ||
      !form_ok(I, expr, &prods, 0) || prods == 0)
    return val_unbound();
  int mark = I->ntmp;
  Front f = { .I = I };
  Value out = val_unbound();
  if (build(&f, expr) >= 0 && (!I->stage || f.nleaf <= 11)) {
    Tensor *plan = tensor_new_host(I, 1, 1 + 4 * f.n);
    Value pv = val_mat(plan);
    tmp_push(I, pv);
    tensor_data(plan)[0] = MK_ROOT_MUL;
    memcpy(tensor_data(plan) + 1, f.pl, (size_t)(4 * f.n) * sizeof(double));
    Value in[MK_MAX], boxed[MK_MAX];
    boxed[0] = Wv;
    in[0] = W;
    bool ok = true;
    for (int k = 0; k < f.nleaf; k++) {
      boxed[1 + k] = f.leaf[k];
      in[1 + k] = ad_primal(f.leaf[k]);
      ok = ok && staged_or_plain(f.leaf[k]);
    }
    Value r;
    if (ok && op_masked_sparse(I, 1 + f.nleaf, in, pv, &r)) out = I->stage ? stage_record_nested(I, OP_MASKED, 1 + f.nleaf, boxed, r, pv, sp) : r;
    else if (!ok && !I->stage && staged_or_plain(Wv)) out = masked_grad(I, &f, pv, W, sp);   /* traced by a grad */
  }
  tmp_release_to(I, mark);
  return out;
}
