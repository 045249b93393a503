/*
** stage.c — staging by tracing: a stage tape is one more level of grad's tapes, so the op
** entry points record graph nodes through op_apply and the stage's trace kind (no second
** evaluator, no second copy of shape or derivative rules). Here: the recording hooks, jit(f) with its cache keyed by
** argument types and shapes, and the builtins jit, explain and dot.
*/
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdarg.h>
#include <string.h>
#include "builtins.h"
#include "check/check.h"
#include "ops/shapes.h"
#include "err.h"
#include "mem.h"
#include "ops/index.h"
#include "ops/nn.h"
#include "print.h"
#include "staging/graph.h"
#include "staging/stage.h"
#include "tensor.h"

/* A call made with I->stage set to stage, restored however the call ends. */
typedef struct Job { Value fn; const Builtin *b; int n; Value *a; Symbol **nm; Span sp; Value r; } Job;
static void job_run(Interp *I, void *ud) {
  Job *j = ud;
  j->r = j->b ? bi_call(I, j->b, j->n, j->a, j->nm, j->sp) : call_value(I, j->fn, j->n, j->a, j->nm, j->sp);
}
static Value with_stage(Interp *I, Tape *stage, Job *j) {
  Tape *saved = I->stage;
  I->stage = stage;
  int err = mls_pcall(I, job_run, j);
  I->stage = saved;
  if (err) mls_rethrow(I);
  return j->r;
}

/* ---- recording ---- */
static bool holds_box(Value v, const Tape *t) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape->active && (!t || x.u.box->tape == t)) return true;
  if (v.t == VT_LIST)
    for (int i = 0; i < v.u.l->n; i++)
      if (holds_box(v.u.l->items[i], t)) return true;
  return false;
}

/* v without the boxes of t and of finished tapes (borrowed). */
static Value unbox(Value v, const Tape *t) {
  while (v.t == VT_BOX && (v.u.box->tape == t || !v.u.box->tape->active)) v = v.u.box->v;
  return v;
}

/* The node of v in t's graph: its box's node, a parameter for a value of an enclosing stage
** that a loop's body or condition reads (loop.c), else a new constant. */
static int32_t node_of(Interp *I, Tape *t, Value v, Span sp) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape == t) return x.u.box->node;
  Value c = unbox(v, t);
  Graph *g = t->graph;
  Value in;
  if (g->lt && loop_grad_value(I, g, c, &in)) c = in;   /* (jit(grad(f)): the grad's box set aside) */
  if (g->lt && c.t == VT_BOX && c.u.box->tape->active && c.u.box->tape->graph && c.u.box->tape->id < t->id)
    return loop_outer_param(I, g, c);
  if (holds_box(c, NULL)) graph_mark_dynamic(g, I, sp, "a value traced by an enclosing grad or a list of staged values is used");
  int32_t id = graph_add(g, GN_CONST, sp, NULL);
  GNode *nd = &g->nodes[id];
  val_retain(c);
  nd->v = c;
  nd->flags |= GF_CONSTANT;
  graph_node_shape(nd, c);
  return id;
}

static void effect_shapes(Interp *I, Graph *g, const GNode *nd, const char *what, Span sp) {
  if ((g->effects || (nd->flags & GF_EFFECT)) && graph_shape_varies(g, nd))
    graph_mark_dynamic(g, I, sp, "'%s' gives a matrix whose shape may change, %s", what,
                       nd->flags & GF_EFFECT ? "and is an effect" : "after an effect");
  if (nd->flags & GF_EFFECT) g->effects = true;
}

Value stage_record_op(Interp *I, Tape *t, OpKind op, int nin, const Value *in, int nextra, const Value *extra,
                      Value out, Span sp) {
  tmp_push(I, out);
  int32_t ins[12];
  int n = 0;
  for (int k = 0; k < nin; k++) ins[n++] = node_of(I, t, in[k], sp);
  for (int k = 0; k < nextra && n < 12; k++) ins[n++] = node_of(I, t, extra[k], sp);
  Graph *g = t->graph;
  int32_t id = graph_add(g, GN_OP, sp, I->src);
  g->nodes[id].chain = graph_chain(I, g);
  GNode *nd = &g->nodes[id];
  nd->op = (uint16_t)op;
  nd->nin = n;
  nd->nextra = n - nin;
  nd->in = mem_alloc((size_t)n * sizeof(int32_t));
  memcpy(nd->in, ins, (size_t)n * sizeof(int32_t));
  bool cst = true;
  for (int k = 0; k < n; k++) cst = cst && (g->nodes[ins[k]].flags & GF_CONSTANT);
  if (!cst && (op == OP_AND || op == OP_OR) && nin == 2 && ad_primal(out).t == VT_BOOL &&
      ad_primal(out).u.b == (op == OP_OR))     /* (the value it must have: an abstract trace's is a stand-in) */
    for (int k = 0; k < 2; k++) {            /* FALSE & x, TRUE | x: known whatever x is, so a */
      Value c = ad_primal(in[k]);            /* test of it (verbose & i >= maxi) stays staged */
      double x = c.t == VT_BOOL ? (double)c.u.b : c.t == VT_NUM ? c.u.n : 0;
      if ((g->nodes[ins[k]].flags & GF_CONSTANT) && (c.t == VT_BOOL || c.t == VT_NUM) && (op == OP_AND ? x == 0 : x != 0))
        cst = true;
    }
  if (cst) nd->flags |= GF_CONSTANT;
  graph_node_shape(nd, out);
  effect_shapes(I, g, nd, op_info[op].name, sp);
  tmp_pop(I, 1);
  return ad_box_new(t, id, out);
}

Value stage_record_nested(Interp *I, OpKind op, int n, const Value *in, Value r, Value pv, Span sp) {
  Tape *tapes[8];
  int nt = 0;
  for (int k = 0; k < n; k++)
    for (Value x = in[k]; x.t == VT_BOX; x = x.u.box->v) {
      int j = 0;
      while (j < nt && tapes[j] != x.u.box->tape) j++;
      if (j == nt && nt < 8) tapes[nt++] = x.u.box->tape;
    }
  for (int a = 1; a < nt; a++)                     /* by id: the outermost (oldest) first */
    for (int b = a; b > 0 && tapes[b - 1]->id > tapes[b]->id; b--) { Tape *t = tapes[b]; tapes[b] = tapes[b - 1]; tapes[b - 1] = t; }
  for (int l = 0; l < nt; l++) {
    Value at[12];
    for (int k = 0; k < n; k++) {
      at[k] = in[k];
      while (at[k].t == VT_BOX && at[k].u.box->tape->id > tapes[l]->id) at[k] = at[k].u.box->v;
    }
    r = stage_record_op(I, tapes[l], op, n, at, 0, NULL, r, sp);
    Graph *g = tapes[l]->graph;
    val_retain(pv);
    g->nodes[g->n - 1].v = pv;
  }
  return r;
}

int32_t stage_node_of(Interp *I, Tape *t, Value v, Span sp) { return node_of(I, t, v, sp); }

/* ---- the abstract trace (explain): shapes from the shape rules, no kernel ---- */
/* Is v a constant of t's graph (known while staging: no box of t, or a box of a GF_CONSTANT
** node)? An abstract trace computes those, and only those, with values. */
static bool graph_constant(Value v, const Tape *t) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape == t) return (t->graph->nodes[x.u.box->node].flags & GF_CONSTANT) != 0;
  return true;
}

static Shape shape_of_value(Value v, bool known) {
  Shape s;
  switch (v.t) {
  case VT_NUM: return known ? shape_num(v.u.n) : shape_num_unknown();
  case VT_BOOL: return shape_bool(known, v.u.b);
  case VT_MAT: return shape_mat(tensor_rows(v.u.m), tensor_cols(v.u.m));
  case VT_STR: return shape_of_kind(SK_STR);
  case VT_LIST: s = shape_of_kind(SK_LIST); s.len = v.u.l->n; return s;
  case VT_NULL: return shape_of_kind(SK_NULL);
  case VT_FUNC: case VT_BUILTIN: return shape_of_kind(SK_FUNC);
  default: return shape_any();
  }
}

/* The op c on a staged value, not computed: a result of the type and shape its shape rule gives
** (a number 0, FALSE, or zeros flagged abstract: tensor_abstract). What the rule cannot give
** exactly (an error, a shape that depends on values), an index or a size that is a staged value,
** a collective, a value an enclosing grad traces: the trace stops (explain traces with values). */
static Value abstract_op(Interp *I, Tape *t, const OpCall *c) {
  OpKind op = c->op;
  const char *sym = op_info[op].sym;
  for (int k = 0; k < c->nin; k++)
    if (c->un[k].t == VT_BOX) interp_abstract_stop(I, c->sp, "'%s' of a value an enclosing grad traces", sym);
  for (int k = 0; k < c->nextra; k++)
    if (!graph_constant(c->extra[k], t) || c->ux[k].t == VT_BOX)
      interp_abstract_stop(I, c->sp, "%s depends on a staged value",
                           op == OP_INDEX || op == OP_SCATTER ? "an index" : "a size");
  const Value *x = c->ux;
  switch (op) {
  case OP_INDEX: return index_read_abstract(I, c->un[0], (int)x[0].u.n, x + 1, c->sp);
  case OP_SCATTER: return index_scatter_abstract(I, (int64_t)x[0].u.n, (int64_t)x[1].u.n, (int)x[2].u.n, x + 3, c->sp);
  case OP_ALLREDUCE: interp_abstract_stop(I, c->sp, "'%s' is a collective: every process takes part", sym);
  default: break;
  }
  Shape in[3], out;
  for (int k = 0; k < c->nin && k < 3; k++) in[k] = shape_of_value(c->un[k], graph_constant(c->in[k], t));
  ShapeExtra ex;
  memset(&ex, 0, sizeof ex);
  double nn[NN_NPRM];
  if (op == OP_RESHAPE && c->nextra == 2) {
    ex.rows = (int64_t)x[0].u.n;
    ex.cols = (int64_t)x[1].u.n;
  }
  if ((op_info[op].flags & OPF_NN) && c->nextra == 1 && x[0].t == VT_MAT && tensor_numel(x[0].u.m) == NN_NPRM) {
    for (int k = 0; k < NN_NPRM; k++) nn[k] = tensor_at(x[0].u.m, k);
    ex.nn = nn;
  }
  ShapeError err;
  ShapeStatus st = shape_rule(op, in, &ex, c->sp, &out, &err);
  if (st != SHAPE_OK) interp_abstract_stop(I, c->sp, "'%s' fails on these shapes", sym);
  if (out.kind == SK_NUM) return val_num(0);
  if (out.kind == SK_BOOL) return val_bool(false);
  if (out.kind == SK_STR) interp_abstract_stop(I, c->sp, "'%s' makes a string of a staged value", sym);
  if (out.kind != SK_MAT || out.rows < 0 || out.cols < 0)
    interp_abstract_stop(I, c->sp, "the shape of '%s' depends on values", sym);
  Tensor *m = tensor_abstract(I, out.rows, out.cols);
  m->logical = (op_info[op].flags & OPF_CMP) != 0;
  return val_mat(m);
}

/* Whether every operand and extra of c is a constant of t's graph. */
static bool op_constant(const Tape *t, const OpCall *c) {
  for (int k = 0; k < c->nin; k++)
    if (!graph_constant(c->in[k], t)) return false;
  for (int k = 0; k < c->nextra; k++)
    if (!graph_constant(c->extra[k], t)) return false;
  return true;
}

/* The stage's trace kind: an op on a staged value (or, lifted, on constants while staging) is
** computed on the plain values at trace time (its shape, and constant folding) and becomes a
** graph node; an abstract trace computes only constants (abstract_op). A string a lifted op
** makes ("W" + k) is not traced. */
static Value stage_process(Interp *I, Tape *t, const OpCall *c) {
  Tape *st = I->stage;
  I->stage = NULL;                           /* (a throw ends the staging, which restores it) */
  const Value *un = c->un;
  Value plain[3];
  if (t->graph->lt) {                        /* a loop's body: the enclosing stages' values are its */
    for (int k = 0; k < c->nin && k < 3; k++) {   /* parameters, their ops its own, not theirs */
      plain[k] = stage_strip(c->un[k]);
      Value in;
      if (loop_grad_value(I, t->graph, plain[k], &in)) plain[k] = stage_strip(in);   /* (jit(grad(f))) */
      for (Value x = plain[k]; x.t == VT_BOX; x = x.u.box->v)
        if (x.u.box->tape->active && x.u.box->tape->graph) {   /* a grad's box around a stage's: */
          graph_mark_dynamic(t->graph, I, c->sp, "%s", "a value grad traces wraps one the loop traces");
          t->active = false;                 /* the loop is not a node; this op through the grad */
          plain[k] = c->un[k];
          break;
        }
    }
    un = plain;
  }
  OpCall cp = *c;                            /* (the abstract trace's view of the same operands) */
  cp.un = un;
  Value v = t->graph->abstract && !op_constant(t, c) ? abstract_op(I, t, &cp)
                                                      : op_apply(I, c->op, c->nin, un, c->nextra, c->ux, c->sp);
  I->stage = st;
  if (c->lifted && v.t != VT_NUM && v.t != VT_BOOL && v.t != VT_MAT) return v;
  return stage_record_op(I, t, c->op, c->nin, c->in, c->nextra, c->extra, v, c->sp);
}

const TraceKind stage_kind = { "stage", stage_process };

/* The node of v on the active stage's graph, or -1 (borrowed). */
static int32_t staged_node(Interp *I, Value v) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape == I->stage) return x.u.box->node;
  return -1;
}

/* The number a constant node of g holds, when it is one. */
static bool const_number(const Graph *g, int32_t id, double *c) {
  const GNode *nd = &g->nodes[id];
  if (nd->kind != GN_CONST || !(nd->flags & GF_CONSTANT)) return false;
  Value v = nd->v;
  if (v.t == VT_NUM) { *c = v.u.n; return true; }
  if (v.t == VT_MAT && tensor_numel(v.u.m) == 1 && !v.u.m->st->dev) { *c = tensor_data(v.u.m)[0]; return true; }
  return false;
}

bool stage_fixed_offset(Interp *I, Value a, Value b, double *k) {
  if (!I->stage || !I->stage->active || !I->stage->graph) return false;
  Value pa = ad_primal(a), pb = ad_primal(b);
  if (pa.t != VT_NUM || pb.t != VT_NUM) return false;
  int32_t na = staged_node(I, a), nb = staged_node(I, b);
  if (na < 0 || nb < 0) return false;
  const Graph *g = I->stage->graph;
  double off = 0;
  for (int steps = 0; steps < 16; steps++) {       /* b = ((a + c1) - c2) + ...: the c's summed */
    if (nb == na) {
      if (pb.u.n - pa.u.n != off) return false;  /* (rounding: a is too large for whole steps) */
      *k = off;
      return true;
    }
    const GNode *nd = &g->nodes[nb];
    if (nd->kind != GN_OP || nd->nin != 2 || nd->nextra != 0 || (nd->op != OP_ADD && nd->op != OP_SUB)) return false;
    double c;
    if (const_number(g, nd->in[1], &c)) { off += nd->op == OP_ADD ? c : -c; nb = nd->in[0]; }
    else if (nd->op == OP_ADD && const_number(g, nd->in[0], &c)) { off += c; nb = nd->in[1]; }
    else return false;
  }
  return false;
}

bool stage_wants_call(Interp *I, const Builtin *b, int nargs, const Value *args) {
  Graph *lg = I->stage->graph;                    /* an effect in the body of a loop traced without a */
  if ((b->flags & BI_EFFECT) && lg && !lg->abstract && loop_grad_body(lg)) {   /* grad's boxes, even */
    graph_mark_dynamic(lg, I, I->call_span, "'%s' is an effect in the body of a loop a grad traces", b->name);
    I->loop_restart = true;                       /* gone eager: before it happens (loop.h) */
    mls_throw(I, I->call_span, "'%s' is an effect in the body of a loop a grad traces (the loop runs again as before)", b->name);
  }
  if (b->flags & BI_EFFECT) loop_note_effect(lg);  /* (runs, recorded or not: a grad met later in a */
                                                  /* loop's body must not run the loop again, loop.c) */
  if (I->stage->active && I->stage->graph->abstract && (b->flags & BI_LAZY))   /* system.time: runs and prints */
    interp_abstract_stop(I, I->call_span, "'%s' runs its expression and prints", b->name);
  if (!I->stage->active || (b->flags & (BI_SHAPE | BI_LAZY))) return false;
  if (b->flags & (BI_VARS | BI_CALLS)) {
    /* ls() at a graph's run would see the block's assignments not yet written back: the block
    ** is not a graph, it runs eagerly from here */
    graph_mark_dynamic(I->stage->graph, I, (Span){ 0, 0 }, (b->flags & BI_VARS) ? "'%s' reads the variables" : "'%s' calls a function it is given", b->name);
    I->stage->active = false;
    return false;
  }
  if (b->flags & BI_EFFECT) return true;
  if (b->flags & BI_DIFF) return false;      /* computes through ops: those are recorded */
  bool staged = false;                       /* (a loop's body: an enclosing stage's values too, */
  bool any = I->stage->graph->lt != NULL;    /* its parameters: not a constant of the body) */
  for (int i = 0; i < nargs; i++) staged = staged || holds_box(args[i], any ? NULL : I->stage);
  if (staged && (b->flags & BI_AD) && ad_any_grad(nargs, args)) {
    /* a data mover (order, removeEmpty, replace) under a grad: which cells it keeps is found
    ** from the values of this run, so the block is not a graph; it runs eagerly from here. */
    graph_mark_dynamic(I->stage->graph, I, (Span){ 0, 0 }, "'%s' moves cells a grad is tracing", b->name);
    I->stage->active = false;
    return false;
  }
  return staged;
}

/* Builtin name, run with no stage (builtins.c: what it computes from constants is constant),
** called a function it was given whose effects ran (jvp(f, x, v) with a print or rand in f):
** not recorded, so a replay would skip them. The block goes on eagerly from here (its runs
** run them), and an enclosing loop notes the effect (stage_wants_call). */
void stage_effect_unrecorded(Interp *I, const char *name, Span sp) {
  Tape *t = I->stage;
  loop_note_effect(t->graph);
  if (!t->active) return;
  graph_mark_dynamic(t->graph, I, sp, "'%s' calls a function with an effect", name);
  t->active = false;
}

void stage_eager_here(Interp *I, const char *what, Span sp) {
  if (!I->stage || !I->stage->active) return;
  if (I->stage->graph->abstract) interp_abstract_stop(I, sp, "%s", what);
  graph_mark_dynamic(I->stage->graph, I, (Span){ 0, 0 }, "%s", what);
  I->stage->active = false;
}

Value stage_call(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, Span sp) {
  Tape *t = I->stage;
  Graph *g = t->graph;
  if (g->abstract) {                               /* a builtin that is not an op: it needs values */
    if (b->flags & BI_EFFECT) interp_abstract_stop(I, sp, "'%s' is an effect", b->name);
    for (int k = 0; k < nargs; k++)
      if (holds_box(args[k], NULL) && (!graph_constant(args[k], t) || args[k].t == VT_LIST))
        interp_abstract_stop(I, sp, "'%s' is a builtin that needs the values of its arguments", b->name);
  }
  int mark = I->ntmp;                              /* (an effect: noted by stage_wants_call) */
  int32_t *ins = mem_alloc((size_t)(nargs > 0 ? nargs : 1) * sizeof(int32_t));
  for (int k = 0; k < nargs; k++) ins[k] = node_of(I, t, args[k], sp);
  int32_t id = graph_add(g, GN_CALL, sp, I->src);
  g->nodes[id].chain = graph_chain(I, g);
  GNode *nd = &g->nodes[id];
  nd->bi = b;
  nd->nin = nargs;
  nd->in = ins;
  nd->names = mem_alloc((size_t)(nargs > 0 ? nargs : 1) * sizeof(Symbol *));
  for (int k = 0; k < nargs; k++) nd->names[k] = names[k];
  if (b->flags & BI_EFFECT) nd->flags |= GF_EFFECT;
  bool cst = !(b->flags & BI_EFFECT);
  for (int k = 0; k < nargs; k++) cst = cst && (g->nodes[ins[k]].flags & GF_CONSTANT);
  if (cst) nd->flags |= GF_CONSTANT;
  Value un[nargs > 0 ? nargs : 1];
  for (int k = 0; k < nargs; k++) {
    un[k] = g->lt ? stage_strip(args[k]) : unbox(args[k], t);   /* (stage_process) */
    Value in;
    if (g->lt && loop_grad_value(I, g, un[k], &in)) un[k] = stage_strip(in);
  }
  Job job = { val_null(), b, nargs, un, names, sp, val_null() };
  Value r = with_stage(I, NULL, &job);           /* the call itself records nothing */
  if (r.t == VT_NULL || r.t == VT_UNBOUND) {      /* print(x): an effect, nothing to trace */
    if (b->flags & BI_EFFECT) g->effects = true;
    tmp_release_to(I, mark);
    return r;
  }
  if (r.t != VT_NUM && r.t != VT_BOOL && r.t != VT_MAT && r.t != VT_STR) {   /* a list: not traced */
    graph_mark_dynamic(g, I, sp, "'%s' gives a %s computed from staged values", b->name, val_type_name(r));
    tmp_release_to(I, mark);
    return r;
  }
  nd = &g->nodes[id];
  graph_node_shape(nd, r);
  effect_shapes(I, g, nd, b->name, sp);
  tmp_release_to(I, mark);
  return ad_box_new(t, id, r);
}

/* The function at place was called (inlined) or used while staging, or the NULL there read: runs
** check it is still there (a closure by its serial, given here the first time one is guarded:
** unique in I). */
static void guard_fn(Interp *I, Graph *g, Value *place, Env *env, Value fn) {
  for (int i = 0; i < g->nasg; i++)
    if (g->asg[i] == place) return;                  /* assigned earlier in this block */
  for (int i = 0; i < g->nfg; i++)
    if (g->fg[i].place == place) return;
  if (fn.t == VT_FUNC && !fn.u.f->serial) fn.u.f->serial = ++I->closure_serial;
  g->fg = mem_realloc(g->fg, (size_t)(g->nfg + 1) * sizeof *g->fg);
  g->fg[g->nfg++] = (struct FnGuard){ place, env, 0, -1, (uint8_t)fn.t, fn.t == VT_BUILTIN ? (const void *)fn.u.bi : NULL,
                                      fn.t == VT_FUNC ? fn.u.f->serial : 0 };
}

void stage_guard_unbound(Interp *I, Value *slot, Env *env) {
  Tape *t = I->stage;
  Graph *g = t->graph;
  if (t->active && g && g->lt) {             /* a loop's body reads a name through before the local */
    graph_mark_dynamic(g, I, (Span){ 0, 0 }, "a name is read from outside before the loop's body assigns its local");
    t->active = false;                        /* exists: later iterations read the local (loop.c) */
    return;
  }
  /* a frame made before the trace began: a block's (relative places), a jit function's (on its
  ** closure's chain, which the closure keeps; its own frame is new at every call, where the local
  ** is unbound again, as a callee's) */
  if (!t->active || !g || !env || !stage_outside(I, env)) return;
  for (int i = 0; i < g->nfg; i++)
    if (g->fg[i].place == slot) return;
  g->fg = mem_realloc(g->fg, (size_t)(g->nfg + 1) * sizeof *g->fg);
  g->fg[g->nfg++] = (struct FnGuard){ slot, env, 0, -1, VT_UNBOUND, NULL, 0 };
}

void stage_take_guards(Interp *I, const Graph *g) {
  Tape *t = I->stage;
  for (int i = 0; i < g->nfg && t->active; i++) {
    const struct FnGuard *q = &g->fg[i];
    Env *e = g->relative && q->env ? graph_env(I, q->depth) : q->env;
    if (q->env && !e) continue;
    Value *at = g->relative ? graph_place(I, q->place, q->depth, q->slot) : q->place;
    if (!at) continue;
    if (q->t == VT_UNBOUND) stage_guard_unbound(I, at, e);
    else if (stage_outside(I, e) && (at->t == VT_FUNC || at->t == VT_BUILTIN || at->t == VT_NULL))
      guard_fn(I, t->graph, at, e, *at);
  }
}

Value stage_read(Interp *I, Value *place, Env *env, Symbol *sym, Span sp) {
  if (place->t == VT_BOX && !place->u.box->tape->active) {   /* a finished trace's box: its value */
    Value w = ad_finished(*place);
    val_retain(w);
    Value old = *place;
    *place = w;
    val_release(old);
  }
  Value v = *place;
  Tape *t = I->stage;
  Value p = ad_primal(v);
  bool traced = p.t == VT_NUM || p.t == VT_MAT || p.t == VT_BOOL || p.t == VT_STR || p.t == VT_LIST || p.t == VT_FRAME;
  /* a function (its body inlined) or NULL (what is.null or length gave is a constant) read from
  ** outside: runs check it is still that */
  if ((v.t == VT_FUNC || v.t == VT_BUILTIN || v.t == VT_NULL) && t->active && stage_outside(I, env))
    guard_fn(I, t->graph, place, env, v);
  if (!t->active || !stage_outside(I, env) || !traced || unbox(v, t).t != v.t) { val_retain(v); return v; }
  Graph *g = t->graph;
  /* assigned earlier in this block, or a carried variable of a loop this trace is in (a --staged
  ** block's global): its value is the trace's, not a capture read again at a run */
  for (const Graph *x = g; x; x = x->lt ? x->lt->outer->graph : NULL) {
    for (int i = 0; i < x->nasg; i++)
      if (x->asg[i] == place) { val_retain(v); return v; }
    for (int i = 0; x->lt && i < x->lt->nplaces; i++)
      if (x->lt->places[i] == place) { val_retain(v); return v; }
    if (x->lt && x->lt->ivar == place) { val_retain(v); return v; }
  }
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape == t) { val_retain(v); return v; }
  /* a list's items and a frame are not graph values (yet), nor captures: what is computed from
  ** them would be constants of the graph (a frame changed later gave the old one's numbers):
  ** eager from here */
  if (p.t == VT_LIST || p.t == VT_FRAME) {
    graph_mark_dynamic(t->graph, I, sp, "the %s '%s' is read", p.t == VT_LIST ? "list" : "frame", sym ? sym->name : "?");
    t->active = false;
    val_retain(v);
    return v;
  }
  int32_t id = -1;
  for (int32_t i = 0; i < g->n && id < 0; i++)
    if (g->nodes[i].kind == GN_CAPTURE && g->nodes[i].place == place) id = i;
  if (id < 0) {
    id = graph_add(g, GN_CAPTURE, (Span){ 0, 0 }, NULL);
    GNode *nd = &g->nodes[id];
    nd->place = place;
    nd->penv = env;
    nd->sym = sym;
    graph_node_shape(nd, v);
  }
  val_retain(v);
  return ad_box_new(t, id, v);
}

/* ---- jit ---- */
typedef struct JitEntry {
  char *key;
  char *desc;                /* its arguments described, for explain and --log-compiles */
  Graph *g;
  List *statics;             /* functions in the key, kept alive so their addresses stay theirs */
  int64_t runs;
  struct JitEntry *next;
} JitEntry;

/* A jit function's graphs, most recently used first (LRU): at most max of them. */
typedef struct Jit { JitEntry *entries; int n; int tracing; int max; } Jit;
#define JIT_DEFAULT_ENTRIES 8

/* The description of a call's arguments, as explain prints them: "a 2x2 matrix, a number" (a
** sparse one: "a 2000x300 sparse matrix", the format being part of the key; not under
** --sparse always, a test aid that must print what the default prints). */
static void describe_args(const Interp *I, TextBuf *t, int nargs, const Value *args, Symbol **names) {
  for (int i = 0; i < nargs; i++) {
    char d[64];
    Value p = ad_primal(args[i]);
    val_describe(p, d, sizeof d);
    if (p.t == VT_MAT && p.u.m->st->sparse && I->sparse_mode == SPARSE_AUTO) snprintf(d + strlen(d) - 6, sizeof d - strlen(d) + 6, "sparse matrix");
    tb_printf(t, "%s%s%s%s", i ? ", " : "", names && names[i] ? names[i]->name : "", names && names[i] ? "=" : "", d);
  }
}

/* --log-compiles: "jit: f (t.mls:3): REASON, for (ARGS)" on stderr. */
static void log_compile(Interp *I, Value f, int nargs, const Value *args, Symbol **names, const char *fmt, ...)
  __attribute__((format(printf, 6, 7)));
static void log_compile(Interp *I, Value f, int nargs, const Value *args, Symbol **names, const char *fmt, ...) {
  if (!I->log_compiles) return;
  TextBuf t;
  tb_open(I, &t);
  const char *name = f.t == VT_FUNC && f.u.f->fi && f.u.f->fi->name ? f.u.f->fi->name->name
                   : f.t == VT_BUILTIN ? f.u.bi->name : "<anonymous>";
  tb_printf(&t, "jit: %s", name);
  if (f.t == VT_FUNC && f.u.f->fi && f.u.f->chunk && f.u.f->chunk->src) {
    char where[256];
    diag_where(where, sizeof where, f.u.f->chunk->src, f.u.f->fi->span.start);
    tb_printf(&t, " (%s)", where);
  }
  tb_puts(&t, ": ");
  va_list ap;
  va_start(ap, fmt);
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tb_puts(&t, msg);
  tb_puts(&t, ", for (");
  describe_args(I, &t, nargs, args, names);
  tb_puts(&t, ")\n");
  fputs(t.p, I->errf);
  fflush(I->errf);
  tb_close(I, &t);
}

static void entry_free(JitEntry *e) {
  mem_free(e->key);
  mem_free(e->desc);
  graph_free(e->g);
  if (e->statics) val_release(val_list(e->statics));
  mem_free(e);
}

Jit *stage_jit_new(void) { return mem_calloc(1, sizeof(Jit)); }

void stage_jit_free(Jit *j) {
  for (JitEntry *e = j->entries, *nx; e; e = nx) { nx = e->next; entry_free(e); }
  mem_free(j);
}

void stage_jit_children(const Jit *j, GcVisit fn, void *ctx) {
  for (const JitEntry *e = j->entries; e; e = e->next) {
    if (e->statics) gc_visit_value(val_list(e->statics), fn, ctx);
    if (e->g) graph_children(e->g, fn, ctx);
  }
}

/* Appends v's part of the cache key: numbers and matrices are traced leaves (their shapes and
** formats are the key), booleans, strings and functions are static (their values are). */
static void key_of(TextBuf *k, Value v, List *lv, List *statics) {
  Value p = ad_primal(v);
  switch (p.t) {
  case VT_NUM: tb_puts(k, "n;"); if (lv) { val_retain(v); list_push(lv, v, NULL); } break;
  case VT_MAT:                                   /* (s: sparse, the format is part of the key) */
    tb_printf(k, "m%lldx%lld%s;", (long long)tensor_rows(p.u.m), (long long)tensor_cols(p.u.m), p.u.m->st->sparse ? "s" : "");
    if (lv) { val_retain(v); list_push(lv, v, NULL); }
    break;
  case VT_BOOL:                                  /* (one a grad traces: a leaf too, box_leaves) */
    tb_printf(k, "%s%d;", v.t == VT_BOX ? "B" : "b", p.u.b);
    if (lv && v.t == VT_BOX) { val_retain(v); list_push(lv, v, NULL); }
    break;
  case VT_STR: tb_printf(k, "s%zu:", p.u.s->len); tb_putn(k, p.u.s->s, p.u.s->len); tb_puts(k, ";"); break;
  case VT_LIST:
    tb_printf(k, "l%d(", p.u.l->n);
    for (int i = 0; i < p.u.l->n; i++) {
      if (p.u.l->names && p.u.l->names[i]) { tb_puts(k, p.u.l->names[i]->name); tb_puts(k, "="); }
      key_of(k, p.u.l->items[i], lv, statics);
    }
    tb_puts(k, ");");
    break;
  case VT_FUNC: case VT_BUILTIN:
    tb_printf(k, "f%p;", p.t == VT_FUNC ? (void *)p.u.f : (void *)p.u.bi);
    if (statics) { val_retain(p); list_push(statics, p, NULL); }
    break;
  default: tb_printf(k, "t%d;", p.t); break;
  }
}

/* v with its traced leaves replaced by boxes of t (param nodes), lists rebuilt (owned). A
** boolean is static (key_of keys its value), but one an outer grad traces is a leaf as well: its
** box must sit inside t's, as every traced value's does, or an op on it goes to the grad first,
** whose op then lands on t, outside the grad's box (grad(jit(f))(TRUE) recursed without end). */
static Value box_leaves(Interp *I, Tape *t, Value v, int *pi) {
  Value p = ad_primal(v);
  Graph *g = t->graph;
  if (p.t == VT_NUM || p.t == VT_MAT || (p.t == VT_BOOL && v.t == VT_BOX)) {
    int32_t id = graph_add(g, GN_PARAM, (Span){ 0, 0 }, NULL);
    g->nodes[id].param = (*pi)++;
    graph_node_shape(&g->nodes[id], v);
    val_retain(v);
    return ad_box_new(t, id, v);
  }
  if (p.t == VT_LIST && v.t == VT_LIST) {
    List *l = list_new(I, v.u.l->n > 0 ? v.u.l->n : 1);
    l->multi = v.u.l->multi;
    Value r = val_list(l);
    tmp_push(I, r);
    for (int i = 0; i < v.u.l->n; i++)
      list_push(l, box_leaves(I, t, v.u.l->items[i], pi), v.u.l->names ? v.u.l->names[i] : NULL);
    tmp_pop(I, 1);
    return r;
  }
  val_retain(v);
  return v;
}

static void make_gout(GOut *o, Value v, Tape *t, Graph *g) {
  memset(o, 0, sizeof *o);
  o->v = val_null();
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape == t) { o->node = x.u.box->node; return; }
  Value u = unbox(v, t);
  if (u.t == VT_LIST) {
    o->node = -2;
    o->multi = u.u.l->multi;
    o->n = u.u.l->n;
    o->kids = mem_calloc((size_t)(o->n > 0 ? o->n : 1), sizeof(GOut));
    if (u.u.l->names) {
      o->names = mem_alloc((size_t)(o->n > 0 ? o->n : 1) * sizeof(Symbol *));
      memcpy(o->names, u.u.l->names, (size_t)o->n * sizeof(Symbol *));
    }
    for (int i = 0; i < o->n; i++) make_gout(&o->kids[i], u.u.l->items[i], t, g);
    return;
  }
  if (u.t == VT_FUNC && u.u.f->env)            /* a closure made by this run: the next makes its own */
    graph_mark_dynamic(g, NULL, (Span){ 0, 0 }, "a function made while staging is returned or assigned");
  o->node = -1;
  val_retain(u);
  o->v = u;
}

/* Does o hold (not as a node's) a matrix an abstract trace did not compute? */
static bool gout_abstract(const GOut *o) {
  if (o->node == -1 && o->v.t == VT_MAT && o->v.u.m->st->abstract) return true;
  for (int i = 0; i < o->n && o->kids; i++)
    if (gout_abstract(&o->kids[i])) return true;
  return false;
}

static void collect_outs(Graph *g, const GOut *o) {
  if (o->node >= 0) {
    g->outs = mem_realloc(g->outs, (size_t)(g->nout + 1) * sizeof(int32_t));
    g->outs[g->nout++] = o->node;
  }
  for (int i = 0; i < o->n && o->kids; i++) collect_outs(g, &o->kids[i]);
}

/* v without t's boxes, lists rebuilt (owned). */
/* Does v hold (in a list, at any depth) a box that unbox(., t) removes? */
static bool holds_strippable(Value v, const Tape *t) {
  if (v.t == VT_BOX) return v.u.box->tape == t || !v.u.box->tape->active || holds_strippable(v.u.box->v, t);
  if (v.t == VT_LIST)
    for (int i = 0; i < v.u.l->n; i++)
      if (holds_strippable(v.u.l->items[i], t)) return true;
  return false;
}

static Value strip_deep(Interp *I, Value v, Tape *t) {
  Value u = unbox(v, t);
  if (u.t != VT_LIST || !holds_strippable(u, t)) { val_retain(u); return u; }
  List *l = list_new(I, u.u.l->n > 0 ? u.u.l->n : 1);
  l->multi = u.u.l->multi;
  Value r = val_list(l);
  tmp_push(I, r);
  for (int i = 0; i < u.u.l->n; i++) list_push(l, strip_deep(I, u.u.l->items[i], t), u.u.l->names ? u.u.l->names[i] : NULL);
  tmp_pop(I, 1);
  return r;
}

static void graph_free_cb(void *g) { graph_free(g); }

/* Stages f on these arguments: runs it once with its leaves traced (so its effects and result
** are this call's), recording the graph. *result: f's result (owned). The graph is returned
** registered with mls_defer (a throw frees it): the caller calls mls_undefer(I, g) once it has
** stored it. */
/* A function being traced (stage_trace), on the C stack: a jit call of the same function inside
** its trace is recursion, inlined, even through another jit(f) value (f = function(x) jit(f)(x)
** made a new trace, and a box around every argument, at each level: quadratic in the depth). */
typedef struct TraceMark { const void *fn; const struct TraceMark *up; } TraceMark;

static bool being_traced(const Interp *I, Value f) {
  const void *id = f.t == VT_FUNC ? (const void *)f.u.f : f.t == VT_BUILTIN ? (const void *)f.u.bi : NULL;
  for (const TraceMark *m = I->traces; m && id; m = m->up)
    if (m->fn == id) return true;
  return false;
}

/* abstract: no kernel runs (Graph.abstract); *result is then f's result made of uncomputed
** values, and the trace stops (interp_abstract_stop) where it needs values. */
static Graph *stage_trace(Interp *I, Value f, int nargs, Value *args, Symbol **names, Span sp, Value *result, int *tracing,
                          bool abstract) {
  int mark = I->ntmp;
  Graph *g = graph_new();
  mls_defer(I, graph_free_cb, g);
  g->abstract = abstract;
  graph_trace_base(I, g, I->nframes + (f.t == VT_FUNC && f.u.f->fi ? 1 : 0));   /* (a run pushes f's frame) */
  g->entry_src = I->src;
  g->entry_sp = sp;
  Tape *t = ad_stage_tape(I, g);
  List *boxed = list_new(I, nargs > 0 ? nargs : 1);
  tmp_push(I, val_list(boxed));
  int pi = 0;
  for (int i = 0; i < nargs; i++) list_push(boxed, box_leaves(I, t, args[i], &pi), NULL);
  g->nparams = pi;
  Job job = { f, NULL, nargs, boxed->items, names, sp, val_null() };
  Tape *saved = I->stage;
  I->stage = t;
  I->jit_bypass = I->jit_all;                    /* --jit-all: f itself, not its jit again */
  if (tracing) ++*tracing;
  TraceMark mark_fn = { f.t == VT_FUNC ? (const void *)f.u.f : f.t == VT_BUILTIN ? (const void *)f.u.bi : NULL, I->traces };
  I->traces = &mark_fn;
  bool was_abstract = I->abstract;
  int was_frames = I->abstract_frames;
  I->abstract = abstract;
  if (abstract) I->abstract_frames = I->nframes;
  int err = mls_pcall(I, job_run, &job);
  g->entry_src = NULL;                           /* (not retained: for graph_chain while tracing) */
  I->abstract = was_abstract;
  I->abstract_frames = was_frames;
  I->traces = mark_fn.up;
  if (tracing) --*tracing;
  I->stage = saved;
  I->jit_bypass = false;
  t->active = false;
  if (err) {
    t->graph = NULL;
    mls_rethrow(I);                              /* (which frees g) */
  }
  Value r = job.r;
  tmp_push(I, r);
  if (abstract && I->abstract_pending) {           /* noted at the end, with no poll after it */
    t->graph = NULL;
    interp_abstract_stop(I, sp, "%s", "");
  }
  make_gout(&g->out, r, t, g);
  bool kept = false;                               /* an uncomputed value made a constant */
  for (int i = 0; i < g->n && abstract; i++)
    kept = kept || (g->nodes[i].kind == GN_CONST && g->nodes[i].v.t == VT_MAT && g->nodes[i].v.u.m->st->abstract);
  if (kept || (abstract && gout_abstract(&g->out))) {
    t->graph = NULL;
    interp_abstract_stop(I, (Span){ 0, 0 }, "a value the trace did not compute would be kept as a constant");
  }
  collect_outs(g, &g->out);
  graph_count_uses(g);
  g->before = graph_live_count(g);
  g->peak_before = graph_peak_bytes(g);         /* (allocates: before the result is made) */
  *result = strip_deep(I, r, t);
  t->graph = NULL;
  tmp_release_to(I, mark);
  return g;
}

/* f called with its body run as staged blocks (stage_block): the straight-line code between
** the control flow that depends on traced values is staged once and replayed at every call. */
static Value call_in_blocks(Interp *I, Value f, int nargs, Value *args, Symbol **names, Span sp) {
  int saved = I->block_frame;
  I->block_frame = I->nframes + 1;
  I->jit_bypass = I->jit_all;
  Job job = { f, NULL, nargs, args, names, sp, val_null() };
  int err = mls_pcall(I, job_run, &job);
  I->block_frame = saved;
  I->jit_bypass = false;
  if (err) mls_rethrow(I);
  return job.r;
}

/* stage_trace abstract, under mls_pcall. */
typedef struct AbsJob {
  Value f; int nargs; Value *args; Symbol **names; Span sp; int *tracing;
  Graph *g; Value r;                               /* the graph (deferred) and f's result (owned) */
} AbsJob;
static void abs_run(Interp *I, void *ud) {
  AbsJob *j = ud;
  j->g = stage_trace(I, j->f, j->nargs, j->args, j->names, j->sp, &j->r, j->tracing, true);
}

/* Runs job under mls_pcall: 0, or 1 where the trace stopped or met an error (I->abstract_why
** says which): the caller traces with values, which meets the run's own error, or an earlier
** one a value causes (a singular matrix), as eagerly; an interrupt or quit() is rethrown. What a
** dropped attempt made and left in cycles among its own lists, functions and envs is collected
** at once (gc_collect_since), so that it leaves nothing for a later gc() to count. to_run: a
** graph that cannot run (not one graph, an effect) is dropped as a stop (job->g NULL). desc (or
** NULL) is freed before a rethrow. */
static int abstract_attempt(Interp *I, AbsJob *job, TextBuf *desc, bool to_run) {
  List *mark = list_new(I, 1);                   /* (the newest tracked object: held) */
  tmp_push(I, val_list(mark));
  I->abstract_stopped = false;
  I->abstract_pending = false;
  int err = mls_pcall(I, abs_run, job);
  bool stopped = I->abstract_stopped || I->abstract_pending;
  I->abstract_pending = false;
  if (err && (I->interrupted || I->quitting)) {
    if (desc) tb_free(desc);
    mls_rethrow(I);
  }
  if (err && !stopped) {                         /* an error: said as the stop's reasons are */
    char where[112] = "";
    if (I->err.src && I->err.span.end > 0) diag_where(where, sizeof where, I->err.src, I->err.span.start);
    snprintf(I->abstract_why, sizeof I->abstract_why, "tracing without them met an error: %.160s%s%.110s", I->err.msg,
             where[0] ? " at " : "", where);
  }
  bool runs = !err && !job->g->dynamic;
  for (int i = 0; runs && i < job->g->n; i++) runs = !(job->g->nodes[i].flags & GF_EFFECT);
  if (!err && to_run && !runs) {
    val_release(job->r);
    job->r = val_null();
    mls_undefer(I, job->g);
    graph_free(job->g);
    job->g = NULL;
    err = 1;
  }
  if (err) gc_collect_since(I, &mark->gc);
  tmp_pop(I, 1);
  val_release(val_list(mark));
  return err;
}

/* A run of jit graph g for a call of f at sp: f's frame pushed (errors name it) and sp the place
** of the chains' entry frames (InlineFrame.entry: f's callee called where the trace's call was). */
static Value run_called(Interp *I, Graph *g, const Value *leaves, bool *stale, Value f, Span sp) {
  bool framed = frame_push_staged(I, f, sp);
  Source *es = I->gentry_src;
  Span esp = I->gentry_sp;
  I->gentry_src = I->src;
  I->gentry_sp = sp;
  Value r = graph_run(I, g, leaves, stale);
  I->gentry_src = es;
  I->gentry_sp = esp;
  if (framed) I->nframes--;
  return r;
}

/* The first call's trace for a key, abstract (no kernel runs: the graph's run gives the result,
** docs/staging.md "What a first call returns"): the graph (deferred, as stage_trace's) with
** *result, or NULL where it stopped (something needed values: the call traces with values) or
** gave no graph to run. */
static Graph *jit_trace_abstract(Interp *I, Value f, int nargs, Value *args, Symbol **names, Span sp, Value *result,
                                 int *tracing) {
  AbsJob job = { f, nargs, args, names, sp, tracing, NULL, val_null() };
  if (abstract_attempt(I, &job, NULL, true)) return NULL;
  *result = job.r;
  return job.g;
}

static Value call_jit(Interp *I, Jit *j, Value f, int nargs, Value *args, Symbol **names, Span sp, bool abstract_ok);

Value stage_call_jit(Interp *I, Jit *j, Value f, int nargs, Value *args, Symbol **names, Span sp) {
  return call_jit(I, j, f, nargs, args, names, sp, true);
}

/* Whether grad or jvp traces one of v[0..n): its call gets a graph of its own, traced with those
** boxes, where an if on a traced value is not made a choice of both branches (eval.c if_select:
** a branch not taken, differentiated with a zero adjoint, could give NaN through its rules). */
static bool differentiated(int n, const Value *v) {
  for (int i = 0; i < n; i++)
    for (Value x = v[i]; x.t == VT_BOX; x = x.u.box->v)
      if (x.u.box->tape->active && !x.u.box->tape->graph) return true;
  return false;
}

/* Is v a frame, or a list holding one at any depth? */
static bool holds_frame(Value v) {
  Value p = ad_primal(v);
  if (p.t == VT_FRAME) return true;
  for (int i = 0; p.t == VT_LIST && i < p.u.l->n; i++)
    if (holds_frame(p.u.l->items[i])) return true;
  return false;
}

/* abstract_ok: a first trace may be abstract (not inside another trace, no argument traced). */
static Value call_jit(Interp *I, Jit *j, Value f, int nargs, Value *args, Symbol **names, Span sp, bool abstract_ok) {
  if (I->stage && (I->jit_all || j->tracing || being_traced(I, f))) {   /* recursion, or --jit-all: */
                                                                        /* inlined into that graph */
    I->jit_bypass = I->jit_all;
    return call_value(I, f, nargs, args, names, sp);
  }
  for (int i = 0; i < nargs; i++)              /* a frame is no graph value and no key: what the */
    if (holds_frame(args[i])) {                /* body computes from it would be the graph's */
      I->jit_bypass = I->jit_all;              /* constants, the first frame's numbers at every */
      return call_value(I, f, nargs, args, names, sp);   /* call: the call runs eagerly */
    }
  if (I->abstract) interp_abstract_stop(I, sp, "a jit function is called: its own graph would run");
  int mark = I->ntmp;
  TextBuf kb;                                    /* the key, and the leaves in it (held on the */
  tb_open(I, &kb);                                  /* temporaries: a throw frees them) */
  List *lv = list_new(I, 4);
  tmp_push(I, val_list(lv));
  for (int i = 0; i < nargs; i++) {
    tb_puts(&kb, names[i] ? names[i]->name : "");
    tb_puts(&kb, "=");
    key_of(&kb, args[i], lv, NULL);
  }
  if (differentiated(nargs, args)) tb_puts(&kb, "D;");   /* (a graph of its own: no if-conversion, */
  Value key = val_str(kb.p, kb.n);                          /* whose untaken branches a grad would see) */
  tb_close(I, &kb);
  tmp_push(I, key);
  JitEntry **pe = &j->entries, *e = NULL;
  for (; *pe; pe = &(*pe)->next)
    if (strcmp((*pe)->key, key.u.s->s) == 0) { e = *pe; break; }
  if (e && e->g->dynamic) {                      /* not stageable as a whole: f's body in blocks */
    tmp_release_to(I, mark);
    if (I->stage) {                              /* (inside another trace: inlined into it) */
      I->jit_bypass = I->jit_all;
      return call_value(I, f, nargs, args, names, sp);
    }
    return call_in_blocks(I, f, nargs, args, names, sp);
  }
  if (e && f.t == VT_FUNC && !call_types_ok(f.u.f, nargs, args, names)) {
    tmp_release_to(I, mark);                     /* a type error: the eager call reports it */
    I->jit_bypass = I->jit_all;
    return call_value(I, f, nargs, args, names, sp);
  }
  char reason[200];
  if (e) {
    bool stale;
    Value r = run_called(I, e->g, lv->items, &stale, f, sp);
    if (!stale) {
      e->runs++;
      if (pe != &j->entries) {                     /* the most recently used first */
        *pe = e->next;
        e->next = j->entries;
        j->entries = e;
      }
      tmp_release_to(I, mark);
      return r;
    }
    snprintf(reason, sizeof reason, "traced again: %s", e->g->stale_why[0] ? e->g->stale_why : "its graph no longer fits");
    *pe = e->next;                                 /* a capture changed shape: stage again */
    entry_free(e);
    j->n--;
  } else if (!j->entries) snprintf(reason, sizeof reason, "traced: the first call");
  else snprintf(reason, sizeof reason, "traced: new argument types or shapes (%d graph%s cached)", j->n, j->n == 1 ? "" : "s");
  if (abstract_ok) log_compile(I, f, nargs, args, names, "%s", reason);   /* (not again for a retrace) */
  List *statics = list_new(I, 1);                  /* (args may point into the temporaries, */
  tmp_push(I, val_list(statics));                  /* which the trace can move: read them first) */
  TextBuf k2;
  tb_open(I, &k2);
  for (int i = 0; i < nargs; i++) key_of(&k2, args[i], NULL, statics);
  tb_close(I, &k2);
  bool graded = ad_any_grad(nargs, args);
  Value r;
  Graph *g = abstract_ok && !I->stage && !ad_any_active(nargs, args)
               ? jit_trace_abstract(I, f, nargs, args, names, sp, &r, &j->tracing) : NULL;
  bool abstract = g != NULL;                       /* r holds no computed value then */
  if (!g) g = stage_trace(I, f, nargs, args, names, sp, &r, &j->tracing, false);
  tmp_push(I, r);
  if (!g->dynamic) graph_optimize(I, g);
  else gout_clear(g);                              /* never run: hold nothing (no cycles) */
  TextBuf dt;
  tb_open(I, &dt);
  describe_args(I, &dt, nargs, args, names);
  Value dv = val_str(dt.p, dt.n);                  /* (held: the allocations below may fail) */
  tb_close(I, &dt);
  tmp_push(I, dv);
  char *k = mem_strdup(key.u.s->s);
  char *desc = mem_try_alloc(dv.u.s->len + 1);
  e = desc ? mem_try_alloc(sizeof *e) : NULL;      /* cached first: the graph is owned from here */
  if (!e) {
    mem_free(k);
    mem_free(desc);
    mem_oom(sizeof *e);
  }
  memcpy(desc, dv.u.s->s, dv.u.s->len + 1);
  memset(e, 0, sizeof *e);
  e->key = k;
  e->desc = desc;
  e->g = g;
  mls_undefer(I, g);
  val_retain(val_list(statics));
  e->statics = statics;
  e->next = j->entries;
  j->entries = e;
  if (++j->n > (j->max > 0 ? j->max : JIT_DEFAULT_ENTRIES)) {   /* drop the least recently used */
    JitEntry **q = &j->entries;
    while ((*q)->next) q = &(*q)->next;
    log_compile(I, f, nargs, args, names, "the cache holds %d graphs (jit(f, cache = N)): dropped the least "
                "recently used one, made for (%s)", j->n - 1, (*q)->desc ? (*q)->desc : "?");
    entry_free(*q);
    *q = NULL;
    j->n--;
  }
  /* Traced by an outer grad too, the graph's run is what that grad differentiates, as at a
  ** later call (its ops recorded on the grad's tape; the trace's are left unused there): the
  ** first call's gradient is the later calls' (it was the trace's, without the rewrites) */
  bool pure = !g->dynamic;
  (void)graded;
  for (int i = 0; i < g->n && pure; i++) pure = !(g->nodes[i].flags & GF_EFFECT);
  if (pure && j->entries == e) {   /* the first call's result comes from the optimized graph, as later ones */
    bool stale;
    Value r2 = run_called(I, g, lv->items, &stale, f, sp);   /* (as a later call) */
    if (!stale) { tmp_release_to(I, mark); return r2; }   /* (the trace's r is released there) */
  }
  if (abstract) {                                  /* its run did not fit: traced again with values */
    JitEntry **q = &j->entries;
    while (*q && *q != e) q = &(*q)->next;
    if (*q) { *q = e->next; entry_free(e); j->n--; }
    tmp_release_to(I, mark);
    return call_jit(I, j, f, nargs, args, names, sp, false);
  }
  /* Called while another graph is traced (a --staged block, a jit function calling this one):
  ** the graph runs above read their captures as that graph's (graph_run_nodes), but this
  ** trace read them as values, so its result would be a constant there: that graph runs
  ** eagerly instead. */
  if (I->stage && I->stage->active && I->stage->graph)
    graph_mark_dynamic(I->stage->graph, I, sp, "a jit function first called inside it returns its traced run's value (effects, a grad, or no graph)");
  val_retain(r);
  tmp_release_to(I, mark);
  return r;
}

/* ---- builtins ---- */
Value bi_jit(Interp *I, Args *a) {
  Value f = a->v[0];
  if (f.t != VT_FUNC && f.t != VT_BUILTIN) {
    char d[64];
    bi_argerror(I, 1, "function expected, got %s", val_describe(f, d, sizeof d));
  }
  int max = JIT_DEFAULT_ENTRIES;
  if (bi_given(a, 1)) {
    double c = bi_num(I, a, 1);
    if (!(c >= 1 && c <= 1e6 && c == floor(c))) bi_argerror(I, 2, "cache takes a whole number from 1 to 1e6, got %g", c);
    max = (int)c;
  }
  Jit *j = mem_calloc(1, sizeof(Jit));
  j->max = max;
  return ad_derived_jit(I, f, j);
}

static void explain_fn_blocks(const Interp *I, TextBuf *t);

/* explain's listing of a jit function's cache: each graph's key, nodes and runs; where a body
** runs as staged blocks, the blocks of function bodies staged so far. */
static void explain_cache(const Interp *I, const Jit *j, TextBuf *t) {
  tb_printf(t, "jit cache: %d graph%s (at most %d), most recently used first\n", j->n, j->n == 1 ? "" : "s",
            j->max > 0 ? j->max : JIT_DEFAULT_ENTRIES);
  bool blocks = false;
  for (const JitEntry *e = j->entries; e; e = e->next) {
    tb_printf(t, "  for (%s): %s, %lld run%s after its trace\n", e->desc ? e->desc : "?",
              e->g->dynamic ? "runs its body as staged blocks" : "one graph", (long long)e->runs, e->runs == 1 ? "" : "s");
    blocks = blocks || e->g->dynamic;
  }
  if (blocks) explain_fn_blocks(I, t);
}

/* The arguments after f (positional and named "...") described, as explain prints them. */
static void describe_dots(const Interp *I, const Args *a, TextBuf *desc) { describe_args(I, desc, a->ndots, a->dots, a->dotnames); }

/* f staged for the arguments after it, as a call would pass them; abstract: stage_trace's. */
static Graph *stage_for(Interp *I, Args *a, Value f, bool abstract) {
  Value r;
  Graph *g = stage_trace(I, f, a->ndots, a->dots, a->dotnames, a->span, &r, NULL, abstract);
  val_release(r);
  return g;
}

static void graph_hold(Interp *I, Graph *g);

/* stage_for, freeing desc when the trace throws (explain and dot hold it on the C stack). */
typedef struct ForJob { Args *a; Value f; bool abstract; Graph *g; } ForJob;
static void for_run(Interp *I, void *ud) {
  ForJob *j = ud;
  j->g = stage_for(I, j->a, j->f, j->abstract);
}
static Graph *stage_for_freeing(Interp *I, Args *a, Value f, TextBuf *desc) {
  ForJob j = { a, f, false, NULL };
  if (mls_pcall(I, for_run, &j)) {
    tb_free(desc);
    mls_rethrow(I);
  }
  return j.g;
}

/* explain's trace: abstract first (no kernel runs, no effect happens: docs/staging.md); where
** that stops (a value is needed, an effect, a shape that depends on values), traced again with
** values, as a call runs f, and why says so in one line (else it is empty). */
static Graph *explain_trace(Interp *I, Args *a, Value f, TextBuf *desc, char *why, size_t nwhy) {
  AbsJob job = { f, a->ndots, a->dots, a->dotnames, a->span, NULL, NULL, val_null() };
  why[0] = '\0';
  if (!abstract_attempt(I, &job, desc, false)) {
    val_release(job.r);
    return job.g;
  }
  snprintf(why, nwhy, "traced with values: %s\n", I->abstract_why);
  return stage_for_freeing(I, a, f, desc);
}

Value bi_explain(Interp *I, Args *a) {
  Value f = a->v[0];
  if (f.t != VT_FUNC && f.t != VT_BUILTIN) bi_argerror(I, 1, "function expected");
  check_call(I, f, a->ndots, a->dots, a->dotnames, a->span);   /* shapes first: a certain error before f runs */
  TextBuf t;
  tb_open(I, &t);
  int mark = I->ntmp;
  const Jit *jc = ad_jit_of(f);
  if (jc) explain_cache(I, jc, &t);
  if (jc && a->ndots == 0) {                       /* explain(jf): the cache alone */
    fputs(t.p, I->out);
    fflush(I->out);
    tb_close(I, &t);
    List *l = list_new(I, 1);
    list_push(l, val_num(jc->n), sym_intern(&I->syms, "graphs", 6));
    return val_list(l);
  }
  tb_puts(&t, "explain: staged for (");
  describe_dots(I, a, &t);
  tb_puts(&t, ")\n");
  char why[sizeof I->abstract_why + 32];
  Graph *g = explain_trace(I, a, f, &t, why, sizeof why);
  graph_hold(I, g);
  tb_puts(&t, why);
  tb_printf(&t, "before optimization: %d nodes, peak %zu bytes of intermediates\n", g->before, g->peak_before);
  if (!g->dynamic) graph_print(I, g, &t);
  if (g->dynamic) {
    tb_printf(&t, "not one graph: %s\n"
                "later calls run f's body as staged blocks: straight-line code staged, that control flow eagerly\n", g->why);
    g->after = g->before;
  } else {
    graph_optimize(I, g);
    if (g->loglen) tb_printf(&t, "optimizations:\n%s", g->log);
    tb_printf(&t, "after optimization: %d nodes, peak %zu bytes of intermediates\n", g->after, g->peak_after);
    graph_print(I, g, &t);
  }
  fputs(t.p, I->out);
  fflush(I->out);
  tb_close(I, &t);
  List *l = list_new(I, 2);
  Value r = val_list(l);
  list_push(l, val_num(g->before), sym_intern(&I->syms, "before", 6));
  list_push(l, val_num(g->after), sym_intern(&I->syms, "after", 5));
  tmp_release_to(I, mark);
  return r;
}

Value bi_dot(Interp *I, Args *a) {
  Value f = a->v[0];
  if (f.t != VT_FUNC && f.t != VT_BUILTIN) bi_argerror(I, 1, "function expected");
  const char *path = bi_str(I, a, 1);
  if (I->no_write) bi_error(I, "cannot write '%s': writing files is turned off", path);
  int mark = I->ntmp;
  TextBuf desc, t;
  char why[sizeof I->abstract_why + 32];           /* (traced abstractly as explain, where it can) */
  tb_open(I, &desc);
  Graph *g = explain_trace(I, a, f, &desc, why, sizeof why);
  graph_hold(I, g);
  tb_close(I, &desc);
  if (!g->dynamic) graph_optimize(I, g);
  Graph *gb = NULL;                        /* the backward graph: grad(f) staged the same way */
  if (g->out.node >= 0 && (g->nodes[g->out.node].vt == VT_NUM ||
                           (g->nodes[g->out.node].vt == VT_MAT && g->nodes[g->out.node].rows * g->nodes[g->out.node].cols == 1))) {
    Symbol *none[1] = { NULL };
    Value gf = bi_call(I, bi_find("grad"), 1, &f, none, a->span);
    tmp_push(I, gf);
    tb_open(I, &desc);
    gb = explain_trace(I, a, gf, &desc, why, sizeof why);
    graph_hold(I, gb);
    tb_close(I, &desc);
    if (!gb->dynamic) graph_optimize(I, gb);
  }
  tb_open(I, &t);                             /* nothing below throws before it is freed */
  tb_puts(&t, "digraph mls {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
  graph_dot(g, &t, "forward", "f");
  if (gb) graph_dot(gb, &t, "forward and backward (grad)", "b");
  tb_puts(&t, "}\n");
  FILE *fp = fopen(path, "w");
  if (!fp) { tb_close(I, &t); bi_error(I, "cannot write '%s': %s", path, strerror(errno)); }
  size_t w = fwrite(t.p, 1, t.n, fp);
  int c = fclose(fp);
  size_t n = t.n;
  tb_close(I, &t);
  if (w != n || c != 0) bi_error(I, "cannot write '%s': %s", path, strerror(errno));
  tmp_release_to(I, mark);
  return val_str(path, strlen(path));
}

/* Keeps g on the temp stack (freed with it, or by a throw) inside a jit function value. */
/* Takes g from the defer list (stage_trace): a jit value on the temporaries owns it from here. */
static void graph_hold(Interp *I, Graph *g) {
  Jit *j = mem_try_alloc(sizeof *j);
  JitEntry *e = mem_try_alloc(sizeof *e);
  char *key = mem_try_alloc(1);
  if (!j || !e || !key) {                  /* (g is freed by the throw) */
    mem_free(j);
    mem_free(e);
    mem_free(key);
    mem_oom(sizeof *j + sizeof *e + 1);
  }
  memset(j, 0, sizeof *j);
  memset(e, 0, sizeof *e);
  key[0] = '\0';
  e->key = key;
  e->g = g;
  j->entries = e;
  j->n = 1;
  mls_undefer(I, g);
  tmp_push(I, ad_derived_jit(I, val_null(), j));
}

/* ---- --staged: straight-line blocks of the script ---- */
typedef struct StagedBlock {
  AstNode *first;            /* the block's first statement, its span and length identify it */
  Span s0, s1;
  int n;
  Graph *g;
  int64_t runs;
  bool busy;                 /* being traced or run: a use inside itself (recursion) runs eagerly */
  bool in_fn;                /* in a function's body (not the script's top level) */
  Source *src;               /* where it is (retained), for explain */
} StagedBlock;

typedef struct RunJob { Graph *g; Value r; bool stale; } RunJob;
static void graph_run_job(Interp *I, void *ud) {
  RunJob *j = ud;
  j->r = graph_run(I, j->g, NULL, &j->stale);
}

struct StagedBlocks { StagedBlock *b; int n, cap; };

void stage_blocks_free(Interp *I) {
  struct StagedBlocks *sb = I->blocks;
  if (!sb) return;
  for (int i = 0; i < sb->n; i++) {
    graph_free(sb->b[i].g);
    if (sb->b[i].src) source_release(sb->b[i].src);
  }
  mem_free(sb->b);
  mem_free(sb);
  I->blocks = NULL;
}

/* explain(jf): each block of a function's body staged so far (any function's: a jit body and
** the functions it calls), where it is, its nodes after optimization, and whether its graph ran
** after its trace (not how often: --jit-all gives a called function a trace of its own). */
static void explain_fn_blocks(const Interp *I, TextBuf *t) {
  const struct StagedBlocks *sb = I->blocks;
  int n = 0;
  for (int i = 0; sb && i < sb->n; i++) n += sb->b[i].in_fn;
  if (n == 0) return;
  tb_printf(t, "staged blocks of function bodies, so far: %d\n", n);
  for (int i = 0; i < sb->n; i++) {
    const StagedBlock *b = &sb->b[i];
    if (!b->in_fn) continue;
    uint32_t l0 = 0, l1 = 0, c;
    if (b->src) {
      diag_locate(b->src, b->s0.start, &l0, &c);
      diag_locate(b->src, b->s1.end > 0 ? b->s1.end - 1 : 0, &l1, &c);
    }
    tb_printf(t, "  %s:%u-%u: ", b->src ? b->src->name : "?", l0, l1);
    if (!b->g) tb_puts(t, "being traced\n");
    else if (b->g->dynamic) tb_printf(t, "runs eagerly: %s\n", b->g->why);
    else tb_printf(t, "a graph of %d node%s, %s\n", b->g->after, b->g->after == 1 ? "" : "s",
                   b->runs > 0 ? "replayed" : "not replayed yet");
  }
}

void stage_assigned(Interp *I, Value *place, Symbol *sym, Env *env) {
  Graph *g = I->stage->graph;
  while (g && g->lt) g = g->lt->outer->graph;       /* in a loop's body: the block the loop is in */
  /* (recorded after the block turned eager too: its boxes are stripped from the place at the end) */
  if (!g || !g->block || (env && env != g->benv)) return;   /* a call's own local */
  for (int i = 0; i < g->nasg; i++)
    if (g->asg[i] == place) return;
  g->asg = mem_realloc(g->asg, (size_t)(g->nasg + 1) * sizeof(Value *));
  g->asgsym = mem_realloc(g->asgsym, (size_t)(g->nasg + 1) * sizeof(Symbol *));
  g->asg[g->nasg] = place;
  g->asgsym[g->nasg++] = sym;
}

typedef struct BlockJob { AstNode **s; int n; Value last; } BlockJob;   /* last: owned */
static void block_run(Interp *I, void *ud) {
  BlockJob *j = ud;
  for (int i = 0; i < j->n; i++) {
    Value v = eval(I, j->s[i]);
    if (I->ctl || i == j->n - 1) { j->last = v; return; }
    val_release(v);
  }
}

/* The depth of env from the running one (I->env = 0), or -1 when it is not on that chain. */
static int32_t env_depth(Interp *I, const Env *env) {
  int32_t d = 0;
  for (Env *e = I->env; e; e = e->parent, d++)
    if (e == env) return d;
  return -1;
}

/* A block in a function's body: every place the graph names becomes (depth, slot) from the
** running env, so that the next call, with its own env, runs the same graph. */
static void relativize(Interp *I, Graph *g, Span sp) {
  g->relative = true;
  for (int i = 0; i < g->n; i++) {
    GNode *nd = &g->nodes[i];
    if (nd->kind != GN_CAPTURE) continue;
    nd->pslot = -1;
    if (!nd->penv) continue;
    nd->pdepth = env_depth(I, nd->penv);
    nd->pslot = (int32_t)(nd->place - nd->penv->slots);
    if (nd->pdepth < 0) graph_mark_dynamic(g, I, sp, "'%s' is a variable of another function", nd->sym ? nd->sym->name : "?");
  }
  for (int i = 0; i < g->nfg; i++) {
    struct FnGuard *q = &g->fg[i];
    q->slot = -1;
    if (!q->env) continue;
    q->depth = env_depth(I, q->env);
    q->slot = (int32_t)(q->place - q->env->slots);
    if (q->depth < 0)
      graph_mark_dynamic(g, I, sp, q->t == VT_UNBOUND ? "a name is read from another function's variables"
                                   : q->t == VT_NULL  ? "a NULL is read from another function's variables"
                                                      : "a function is read from another function's variables");
  }
  g->asgdepth = mem_alloc((size_t)(g->nasg > 0 ? g->nasg : 1) * sizeof(int32_t));
  g->asgslot = mem_alloc((size_t)(g->nasg > 0 ? g->nasg : 1) * sizeof(int32_t));
  for (int k = 0; k < g->nasg; k++) {
    g->asgdepth[k] = 0;
    g->asgslot[k] = -1;
    if (g->asg[k] >= I->env->slots && g->asg[k] < I->env->slots + I->env->n) g->asgslot[k] = (int32_t)(g->asg[k] - I->env->slots);
  }
}

/* --explain: the block's lines and graph; after optimizing, what changed and the result. */
static void explain_block(Interp *I, Graph *g, AstNode **s, int n, bool after) {
  TextBuf t;
  tb_open(I, &t);
  if (!after) {
    uint32_t l0, l1, c;
    diag_locate(I->src, s[0]->span.start, &l0, &c);
    diag_locate(I->src, s[n - 1]->span.end > 0 ? s[n - 1]->span.end - 1 : 0, &l1, &c);
    tb_printf(&t, "staged block, lines %u-%u: %d nodes before optimization, peak %zu bytes\n", l0, l1, g->before,
              g->peak_before);
    if (g->dynamic) tb_printf(&t, "  not staged, runs eagerly: %s\n", g->why);
    else if (g->before > 0) graph_print(I, g, &t);
  } else if (!g->dynamic && g->before > 0) {
    if (g->loglen) tb_printf(&t, "optimizations:\n%s", g->log);
    tb_printf(&t, "after optimization: %d nodes, peak %zu bytes\n", g->after, g->peak_after);
    graph_print(I, g, &t);
  }
  fputs(t.p, I->out);
  tb_close(I, &t);
}

Value stage_block(Interp *I, AstNode **s, int n) {
  struct StagedBlocks *sb = I->blocks;
  if (!sb) sb = I->blocks = mem_calloc(1, sizeof *sb);
  int bi = -1;                                     /* (an index: calls inside may grow the table) */
  for (int i = 0; i < sb->n && bi < 0; i++)
    if (sb->b[i].first == s[0] && sb->b[i].n == n && sb->b[i].s0.start == s[0]->span.start &&
        sb->b[i].s1.end == s[n - 1]->span.end)
      bi = i;
  if (bi >= 0 && (sb->b[bi].busy || (sb->b[bi].g && sb->b[bi].g->dynamic))) {
    BlockJob job = { s, n, val_null() };             /* not stageable, or this block inside itself */
    block_run(I, &job);
    return job.last;
  }
  if (bi >= 0 && sb->b[bi].g) {
    bool stale;
    Graph *g = sb->b[bi].g;
    RunJob rj = { g, val_null(), false };
    sb->b[bi].busy = true;
    int err = mls_pcall(I, graph_run_job, &rj);
    sb = I->blocks;
    sb->b[bi].busy = false;
    if (err) mls_rethrow(I);
    Value r = rj.r;
    stale = rj.stale;
    if (!stale) {
      for (int k = 0; k < g->nasg; k++) {
        Value *at = g->relative ? graph_place(I, g->asg[k], g->asgdepth[k], g->asgslot[k]) : g->asg[k];
        Value v = r.u.l->items[k];
        val_retain(v);
        Value old = *at;
        *at = v;
        val_release(old);
      }
      Value last = r.u.l->items[g->nasg];
      val_retain(last);
      val_release(r);
      sb->b[bi].runs++;
      return last;
    }
    graph_free(sb->b[bi].g);                        /* a variable changed type or shape */
    sb->b[bi].g = NULL;
  }
  if (bi < 0) {
    if (sb->n == sb->cap) {
      sb->cap = sb->cap ? sb->cap * 2 : 8;
      sb->b = mem_realloc(sb->b, (size_t)sb->cap * sizeof(StagedBlock));
    }
    bi = sb->n++;
    StagedBlock *b = &sb->b[bi];
    memset(b, 0, sizeof *b);
    b->first = s[0];
    b->n = n;
    b->s0 = s[0]->span;
    b->s1 = s[n - 1]->span;
    b->in_fn = I->env != NULL;
    b->src = I->src;
    if (b->src) source_retain(b->src);
  }
  sb->b[bi].busy = true;
  int mark = I->ntmp;
  Graph *g = graph_new();
  mls_defer(I, graph_free_cb, g);                  /* a throw frees it until the table holds it */
  g->block = true;
  g->benv = I->env;
  graph_trace_base(I, g, I->nframes);
  Tape *t = ad_stage_tape(I, g);
  Tape *saved = I->stage;
  I->stage = t;
  BlockJob job = { s, n, val_null() };
  int err = mls_pcall(I, block_run, &job);
  I->stage = saved;
  t->active = false;
  I->blocks->b[bi].busy = false;
  if (!err) tmp_push(I, job.last);                 /* held from here: what follows allocates */
  /* the assigned variables: their values (without this stage's boxes) and the outputs; then
  ** the last statement's value */
  g->out.node = -2;
  g->out.n = g->nasg + 1;
  g->out.kids = mem_calloc((size_t)(g->nasg + 1), sizeof(GOut));
  for (int k = 0; k < g->nasg; k++) {
    make_gout(&g->out.kids[k], *g->asg[k], t, g);
    Value v = strip_deep(I, *g->asg[k], t);
    Value old = *g->asg[k];
    *g->asg[k] = v;
    val_release(old);
  }
  Value last = val_null();
  if (!err) {
    make_gout(&g->out.kids[g->nasg], job.last, t, g);
    last = strip_deep(I, job.last, t);             /* owned */
  } else {
    g->out.kids[g->nasg].v = val_null();
    g->out.kids[g->nasg].node = -1;
  }
  t->graph = NULL;
  tmp_release_to(I, mark);
  if (err) mls_rethrow(I);                         /* (which frees g) */
  tmp_push(I, last);
  if (I->ctl) graph_mark_dynamic(g, I, s[0]->span, "a return, break or next ends it");
  if (I->env) relativize(I, g, s[0]->span);
  g->benv = NULL;
  collect_outs(g, &g->out);
  graph_count_uses(g);
  g->before = graph_live_count(g);
  g->peak_before = graph_peak_bytes(g);
  if (I->explain_staged) explain_block(I, g, s, n, false);
  if (!g->dynamic) graph_optimize(I, g);
  if (I->explain_staged) explain_block(I, g, s, n, true);
  sb = I->blocks;                                  /* (a call inside may have grown the table) */
  if (sb->b[bi].g) graph_free(sb->b[bi].g);
  mls_undefer(I, g);
  sb->b[bi].g = g;
  tmp_pop(I, 1);
  return last;
}
