/*
** autodiff.c — the tape, the trace kinds of grad and jvp (record an op, push a tangent), the
** backward pass, and grad()/value_and_grad()/jvp()/jacobian()/hessian() (ggml's backward
** design on a tape). The derivative rules are each op's own, beside its kernel in its family's
** file (ops/rules.h): the backward pass hands a node to op_vjp, forward mode an op to op_jvp.
** Every temporary made here sits on the temp stack (T()), so an error anywhere releases it.
*/
#include <float.h>
#include <math.h>
#include <stdlib.h>
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
#include "ops/rules.h"
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
  AdCustom *c = nd->cust;
  if (c && c->gout) {                       /* (what its backward pass needed; the stats stay) */
    for (int k = 0; k < c->nout; k++) val_release(c->gout[k]);
    mem_free(c->gout);
    c->gout = NULL;
    if (c->release) c->release(c);
  }
}

void ad_tape_free(Tape *t) {
  for (int i = 0; i < t->n; i++) {
    node_release(&t->nodes[i]);
    if (t->nodes[i].cust) ad_custom_discard(t->nodes[i].cust);
  }
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



static Value fwd_apply(Interp *I, Tape *t, OpKind op, int nin, const Value *in, const Value *un,
                       int nextra, const Value *extra, Value out, Span sp);

/* Whether box b is an active stage's around a value that is not a constant of its graph (one
** that may differ at the graph's next run). */
static bool box_varying(const Box *b) {
  return b->tape->graph && b->tape->active && !(b->tape->graph->nodes[b->node].flags & GF_CONSTANT);
}

/* Whether an active stage traces v as anything but a constant. */
static bool staged_varying(Value v) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (box_varying(x.u.box)) return true;
  return false;
}

Value ad_rule_values(Interp *I, Value v, Span sp, const char *what) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (box_varying(x.u.box) && x.u.box->tape->graph->abstract)
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
      /* the 1 must be one at every run: a constant of the stage, not a value it takes as an argument
      ** or capture (c = 1 at the trace made log(c + exp(x)) softplus(x) at c = 2 too) */
      if (p->in[k] < 0 && !staged_varying(p->val[k]) && one.t == VT_NUM && one.u.n == 1 && e >= 0 && t->nodes[e].op == OP_EXP) {
        src = e;
        op = OP_SOFTPLUS;
      }
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
  Value out = ad_apply_inner(I, t, c);
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
  Value out = ad_apply_inner(I, t, c);
  return fwd_apply(I, t, c->op, c->nin, c->in, c->un, c->nextra, c->ux, out, c->sp);
}

const TraceKind grad_kind = { "grad", tape_process };
const TraceKind jvp_kind = { "jvp", forward_process };

/* ---- the derivative rules: each op's, in its family's file (ops/rules.h) ---- */
/* gin[k] = (dOut/dIn_k)^T g for the inputs nd->in[k] >= 0. */
static void vjp(Interp *I, const TNode *nd, Value g, Value *gin) {
  RuleArgs r = { (OpKind)nd->op, nd->nin, nd->nval - nd->nin, nd->val, nd->val + nd->nin, nd->out,
                 { nd->in[0] >= 0, nd->nin > 1 && nd->in[1] >= 0, nd->nin > 2 && nd->in[2] >= 0 }, nd->span };
  op_vjp(I, &r, g, gin);
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
  rl_shape(X, &n, &r, &c);
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
  rl_shape(v, &n, &h, &w);
  Tensor *ri = tensor_new_on(I, I->cpu, h, 1), *ci;      /* index lists: host data */
  T(I, val_mat(ri));
  for (int64_t i = 0; i < h; i++) tensor_data(ri)[i] = (double)(r0 + i + 1);
  ci = tensor_new_on(I, I->cpu, w, 1);
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
/* Shapes the tangent like the output (broadcasting may have widened the output). */
static Value fit(Interp *I, Value tv, Value out, Span sp) {
  bool tn, on;
  int64_t tr, tc, orr, oc;
  rl_shape(tv, &tn, &tr, &tc);
  rl_shape(out, &on, &orr, &oc);
  if (on) return tn ? tv : T(I, op_reduce(I, OP_SUM, tv, sp));
  if (!tn && tr == orr && tc == oc) return tv;
  return B2(OP_MUL, rl_ones(I, orr, oc), tv);
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
  RuleArgs ra = { op, nin, nextra, un, extra, out, { true, true, true }, sp };
  Value tv = op_jvp(I, &ra, tin);   /* the op's forward rule (its family's file) */
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
  rl_shape(x, &xn, &xr, &xc);
  rl_shape(v, &vn, &vr, &vc);
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

/* Whether g is a broadcast adjoint (ops/rules.h) for a node whose result is out. */
static bool adj_broadcast(Value out, Value g) {
  out = ad_primal(out);
  return out.t == VT_MAT && tensor_rows(out.u.m) * tensor_cols(out.u.m) != 1 && ad_primal(g).t == VT_NUM;
}

/* The matrix of out's shape that the broadcast adjoint g stands for. */
static Value adj_fill(Interp *I, Value out, Value g, Span sp) {
  out = ad_primal(out);
  return T(I, op_binary(I, OP_MUL, rl_ones(I, tensor_rows(out.u.m), tensor_cols(out.u.m)), g, sp));
}

/* Whether nd's rule takes a broadcast adjoint: an elementwise op whose operands all have its
** result's shape (its rules then multiply g by matrices of that shape, or pass it on). */
static bool takes_broadcast(const TNode *nd) {
  if (!(op_info[nd->op].flags & OPF_EW)) return false;
  Value out = ad_primal(nd->out);
  for (int k = 0; k < nd->nin; k++) {
    Value v = ad_primal(nd->val[k]);
    if (v.t != VT_MAT || tensor_rows(v.u.m) != tensor_rows(out.u.m) || tensor_cols(v.u.m) != tensor_cols(out.u.m))
      return false;
  }
  return true;
}

/* One empty adjoint per node of t (VT_NULL), as a List on the temp stack. */
static List *adj_list(Interp *I, Tape *t) {
  return list_held_nulls(I, t->n);
}
/* The hook of a grad call (autodiff.h AdHook) over its leaves, nodes [l0, l0 + h->nleaves) of the
** tape: which leaves become final after which node. */
typedef struct HookRun { AdHook *h; int l0; int *first, (*order)[2]; int next; const Tape *t; } HookRun;
static int by_first_desc(const void *a, const void *b) {        /* {first, leaf}: latest first */
  const int *x = a, *y = b;
  return x[0] != y[0] ? (x[0] < y[0]) - (x[0] > y[0]) : (x[1] > y[1]) - (x[1] < y[1]);
}
/* Reports the leaves whose first user is node i or later (all users have run), in that order. */
static void hook_fire(Interp *I, HookRun *hr, const List *adj, int i) {
  while (hr->next < hr->h->nleaves && hr->order[hr->next][0] >= i) {
    int k = hr->order[hr->next++][1];
    Value g = adj->items[hr->l0 + k], out = hr->t->nodes[hr->l0 + k].out;
    int mark = I->ntmp;
    if (adj_broadcast(out, g)) g = adj_fill(I, out, g, (Span){ 0, 0 });   /* the leaf's shape */
    hr->h->leaf(I, hr->h, k, g);
    tmp_release_to(I, mark);
  }
}

/* slot (an adjoint, VT_NULL: none) += g: set the first time, add after. */
static void add_into(Interp *I, Value *slot, Value g, Span sp) {
  Value sum;
  if (slot->t == VT_NULL) { sum = g; val_retain(sum); }
  else sum = op_binary(I, OP_ADD, *slot, g, sp);
  val_release(*slot);
  *slot = sum;
}

/* A custom node's backward pass (AdCustom): its outputs' adjoints gathered by its items. */
static void custom_backward(Interp *I, TNode *nd, List *adj) {
  AdCustom *c = nd->cust;
  bool any = false;
  for (int k = 0; k < c->nout && c->gout && !any; k++) any = c->gout[k].t != VT_NULL;
  if (!any) return;
  int mark = I->ntmp;
  List *scratch = list_held_nulls(I, c->nin);         /* the slots of inputs that are no node */
  Value *slots[64];
  Value **sl = c->nin <= 64 ? slots : mem_alloc((size_t)c->nin * sizeof(Value *));
  for (int k = 0; k < c->nin; k++) sl[k] = c->in[k] >= 0 ? &adj->items[c->in[k]] : &scratch->items[k];
  Source *saved_src = I->src;
  if (nd->src) I->src = nd->src;
  c->backward(I, c, sl);
  I->src = saved_src;
  if (!c->contrib) c->contrib = mem_alloc((size_t)(c->nin > 0 ? c->nin : 1) * sizeof(double));
  for (int k = 0; k < c->nin; k++) {                   /* (trace_grad: the sums so far) */
    Value p = ad_primal(*sl[k]);
    c->contrib[k] = p.t == VT_NUM ? p.u.n : p.t == VT_MAT && tensor_numel(p.u.m) == 1 ? tensor_data(p.u.m)[0] : NAN;
  }
  if (sl != slots) mem_free(sl);
  tmp_release_to(I, mark);
}

/* The backward pass over nodes from .. 0 of t from the adjoints in adj, each node's adjoint and
** saved values released as soon as they are used. hr (or NULL): the hook told of each leaf's
** final adjoint. */
static void backward_from(Interp *I, Tape *t, List *adj, int from, HookRun *hr) {
  if (hr) {                                      /* first[k]: the first node after leaf k using it */
    hr->t = t;
    int nl = hr->h->nleaves;
    hr->first = mem_alloc((size_t)(3 * nl + 2) * sizeof(int));
    mls_defer(I, mem_free, hr->first);
    hr->order = (int (*)[2])(hr->first + nl + (nl & 1));
    for (int k = 0; k < nl; k++) hr->first[k] = from + 1;   /* unused: final at once */
    for (int i = hr->l0 + 1; i <= from; i++) {   /* (rising: the first use found is the first) */
      const TNode *u = &t->nodes[i];
      int n = u->kind == TN_CUSTOM ? u->cust->nin : u->kind == TN_ITEM ? 0 : u->nin;
      for (int k = 0; k < n; k++) {
        int s = (u->kind == TN_CUSTOM ? u->cust->in[k] : u->in[k]) - hr->l0;
        if (s >= 0 && s < nl && hr->first[s] == from + 1) hr->first[s] = i;
      }
    }
    for (int k = 0; k < nl; k++) { hr->order[k][0] = hr->first[k]; hr->order[k][1] = k; }
    qsort(hr->order, (size_t)nl, sizeof hr->order[0], by_first_desc);
    hr->next = 0;
    hook_fire(I, hr, adj, from + 1);
  }
  for (int i = from; i >= 0; i--) {
    TNode *nd = &t->nodes[i];
    if (nd->kind == TN_CUSTOM) {
      custom_backward(I, nd, adj);
      node_release(nd);
      if (hr) hook_fire(I, hr, adj, i);
      continue;
    }
    if (nd->kind == TN_ITEM) {                     /* its adjoint: the custom node's output k's */
      AdCustom *c = t->nodes[nd->in[0]].cust;
      Value g = adj->items[i];
      int mark = I->ntmp;
      if (adj_broadcast(nd->out, g) && !c->takes_broadcast) g = adj_fill(I, nd->out, g, nd->span);   /* (the item's shape) */
      if (g.t != VT_NULL && c->gout) add_into(I, &c->gout[nd->in[1]], g, nd->span);
      tmp_release_to(I, mark);
      Value used = adj->items[i];
      adj->items[i] = val_null();
      val_release(used);
      node_release(nd);
      if (hr) hook_fire(I, hr, adj, i);
      continue;
    }
    if (adj->items[i].t == VT_NULL || nd->nin == 0) {
      if (hr) hook_fire(I, hr, adj, i);
      continue;
    }
    if (hr) hr->h->step(I, hr->h);                 /* the reductions under way move on */
    int mark = I->ntmp;
    Value gin[3] = { val_null(), val_null(), val_null() };
    const char *saved_of = I->ad_backward_of;
    Source *saved_src = I->src;
    I->ad_backward_of = op_info[nd->op].sym;        /* --nan-check names the op differentiated */
    if (nd->src) I->src = nd->src;                  /* errors point into the op's own file */
    if (I->interrupted) interp_check_interrupt(I, nd->span);   /* (a long tape of number ops runs no kernel) */
    Value g = adj->items[i];
    if (adj_broadcast(nd->out, g) && !takes_broadcast(nd)) g = adj_fill(I, nd->out, g, nd->span);
    vjp(I, nd, g, gin);
    I->ad_backward_of = saved_of;
    I->src = saved_src;
    for (int k = 0; k < nd->nin; k++) {
      int src = nd->in[k];
      if (src < 0 || gin[k].t == VT_NULL) continue;
      add_into(I, &adj->items[src], gin[k], nd->span);
    }
    tmp_release_to(I, mark);
    Value used = adj->items[i];                    /* this node's adjoint is no longer needed */
    adj->items[i] = val_null();
    val_release(used);
    node_release(nd);                              /* nor its saved values */
    if (hr) hook_fire(I, hr, adj, i);
  }
  if (hr) {
    hook_fire(I, hr, adj, -1);
    mls_undefer(I, hr->first);
    mem_free(hr->first);
  }
}

/* Adjoints of every node reachable backwards from root (seed g0), released as they are used.
** Returns a List of adjoints indexed by node (VT_NULL = none), on the temp stack. hr: as
** backward_from's. */
static List *backward(Interp *I, Tape *t, int root, Value g0, HookRun *hr) {
  List *adj = adj_list(I, t);
  val_retain(g0);
  adj->items[root] = g0;
  backward_from(I, t, adj, root, hr);
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
    if (adj_broadcast(leaf, g)) {    /* a matrix leaf's broadcast adjoint (ops/rules.h) */
      int mark = I->ntmp;
      Value m = adj_fill(I, leaf, g, (Span){ 0, 0 });
      val_retain(m);
      tmp_release_to(I, mark);                    /* (the callers' temp stack as it was) */
      val_release(g);
      return m;
    }
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
  AdHook *hook = I->ad_hook;                     /* this call's, not a nested grad's */
  I->ad_hook = NULL;
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
  HookRun hr = { NULL, 0, NULL, NULL, 0, NULL };
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
      int l0 = t->n;
      Value leaf = make_leaves(I, t, holder->items[i], sp);
      if (hook && npos == 1) { hr.h = hook; hr.l0 = l0; hook->nleaves = t->n - l0; hook->claimed = true; }
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
    adj = backward(I, t, r.u.box->node, seed, hr.h ? &hr : NULL);
  } else {                                     /* the result does not depend on the leaves */
    adj = adj_list(I, t);
    for (int k = 0; hr.h && k < hr.h->nleaves; k++) hr.h->leaf(I, hr.h, k, val_null());
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

bool ad_is_grad(Value f) {
  if (f.t != VT_FUNC || !f.u.f->derived) return false;
  const Derived *d = f.u.f->derived;
  Value an = d->argnum;
  return d->kind == 0 && an.t == VT_NUM && an.u.n == 1;
}
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
    adj = backward(I, t, r.u.box->node, seed, NULL);
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
Tape *ad_trace_tape(Interp *I) {
  Tape *t = tape_begin(I);
  t->teaching = true;
  return t;
}
Tape *ad_stage_tape(Interp *I, struct Graph *g) {
  Tape *t = tape_begin(I);
  t->graph = g;
  t->kind = &stage_kind;
  return t;
}

Value ad_concrete(Interp *I, Value v, Span sp, const char *what) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (box_varying(x.u.box)) {                /* (a constant: known while staging) */
      Tape *st = x.u.box->tape;
      graph_mark_dynamic(st->graph, I, sp, "%s depends on a staged value", what);
      st->active = false;              /* the rest of this staging run is plain eager code */
      /* and so is that of the loops' bodies and conditions traced inside it: they would take
      ** the values it no longer traces for constants of their graphs, and a grad begun outside
      ** both would box those constants, the traces nested the wrong way round (found by
      ** gen_diff --edge: grad(jit(f)), a loop node's body indexing x by a mask of x) */
      Tape *in = I->stage;
      while (in && in != st && in->graph && in->graph->lt) in = in->graph->lt->outer;
      for (in = in == st ? I->stage : NULL; in && in != st; in = in->graph->lt->outer) {
        graph_mark_dynamic(in->graph, I, sp, "%s depends on a staged value", what);
        in->active = false;
      }
    }
  return ad_primal(v);
}
Value ad_trace_leaf(Interp *I, Tape *t, Value v, Span sp) { return make_leaves(I, t, v, sp); }
List *ad_trace_backward(Interp *I, Tape *t, int root, Value seed) { return backward(I, t, root, seed, NULL); }
List *ad_tape_adjoints(Interp *I, Tape *t) { return adj_list(I, t); }
void ad_backward_all(Interp *I, Tape *t, List *adj) { backward_from(I, t, adj, t->n - 1, NULL); }

int32_t ad_node_on(const Tape *t, Value v) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v) {
    if (x.u.box->tape == t) return x.u.box->node;
    if (x.u.box->tape->active) return -1;
  }
  return -1;
}

int32_t ad_custom_node(Interp *I, Tape *t, AdCustom *c, Span sp) {
  int id = tape_push(t);
  TNode *nd = &t->nodes[id];
  nd->kind = TN_CUSTOM;
  nd->op = OP_NONE;
  nd->cust = c;
  nd->span = sp;
  nd->src = I->src;
  if (nd->src) source_retain(nd->src);
  return id;
}

void ad_custom_discard(AdCustom *c) {
  if (c->gout) {                         /* (not released by node_release yet) */
    for (int k = 0; k < c->nout; k++) val_release(c->gout[k]);
    mem_free(c->gout);
    c->gout = NULL;
    if (c->release) c->release(c);
  }
  mem_free(c->in);
  mem_free(c->contrib);
  c->free_fn(c);
}

Value ad_custom_item(Interp *I, Tape *t, int32_t cn, int k, Value v) {
  tmp_push(I, v);
  int id = tape_push(t);
  TNode *nd = &t->nodes[id];
  nd->kind = TN_ITEM;
  nd->op = OP_NONE;
  nd->nin = 1;
  nd->in[0] = cn;
  nd->in[1] = k;
  val_retain(v);
  nd->out = v;
  tmp_pop(I, 1);
  return box_new(t, id, v);
}
Value ad_trace_collect(Interp *I, Value leaf, const List *adj, Tape *t) { return collect(I, leaf, adj, t); }
