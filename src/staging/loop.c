/*
** loop.c — loops as graph nodes (loop.h; docs/staging.md "Loops"). The body of a loop a stage
** meets is traced once, on a stage tape of its own, into a graph whose parameters are the
** variables the body assigns (the carried values), the index of a for loop and the values of the
** enclosing graph it reads; a while loop's condition is traced the same way, first. The
** remaining iterations of this (tracing) run are runs of those graphs, and the enclosing graph
** gets one GN_LOOP node, whose later runs (loop_run) run them again: the graph does not grow
** with the trip count. A loop whose body cannot be such a graph (it goes eager, a variable
** changes its type or shape) makes the enclosing stage eager from there, with the values
** computed so far: never another result than eager code. Under grad (grad(jit(f))) a node's
** run is one checkpointed node on the grad's tape; under a grad inside the stage (jit(grad(f)))
** its backward pass is a reverse loop node of the graph, checkpointed the same way (the end of
** this file).
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "err.h"
#include "mem.h"
#include "staging/graph.h"
#include "staging/lean.h"
#include "staging/loop.h"
#include "staging/stage.h"
#include "tensor.h"

struct LoopStage {
  bool is_while;
  int n;
  Value **places;           /* the carried variables (owned array) */
  Symbol **syms;
  Value *init;              /* their values before the loop, retained (VT_UNBOUND: a temporary) */
  Tape *outer, *ct, *bt;    /* the enclosing stage; the condition's and the body's */
  Graph *cg, *bg;
  LoopTrace lt;             /* the enclosing graph's values read (both graphs share it) */
  Value c;                  /* while: the first condition (retained) */
  Span sp;
  LoopRange range;          /* for over a traced a:b (stage_loop_range) */
  Symbol *var;
  Value *var_place;
};

int64_t stage_loop_unroll(Interp *I) {
  (void)I;
  const char *e = getenv("MLS_LOOP_UNROLL");
  if (e && *e) return strtoll(e, NULL, 10);
  return 64;
}

Value stage_strip(Value v) {
  while (v.t == VT_BOX && (v.u.box->tape->graph || !v.u.box->tape->active)) v = v.u.box->v;
  return v;
}

static bool plain_kind(Value p) { return p.t == VT_NUM || p.t == VT_BOOL || p.t == VT_MAT; }

/* Whether v's boxes of active traces leave the loop of stage s a node: a grad's box only inside
** the stages' (grad(jit(f)): the node's runs are what the grad differentiates, checkpointed
** below), never a stage's inside a grad's (jit(grad(f))) nor a jvp's, and never a grad begun
** inside s (a larger id) around a value s does not trace (a capture): its box would end up
** inside the loop node's, the wrong way round for the nesting (op_apply would meet the grad's
** box again after stripping it: found by gen_diff, a loop node's body calling a grad of a
** function with a loop). grad_over takes that grad where v is s's value. */
static bool grad_inside(Value v, const Tape *s) {
  bool grad = false;
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v) {
    const Tape *t = x.u.box->tape;
    if (!t->active) continue;
    if (t->graph) { if (grad) return false; }
    else if (t->forward || t->id > s->id) return false;
    else grad = true;
  }
  return true;
}


/* MLS_LOOP_CHECKPOINT (the checkpointed runs below). */
static int64_t ckpt_setting(void);

/* v is a box of a grad traced inside stage s (jit(grad(f))) around s's value, nothing else
** active inside: that grad's tape, else NULL. */
static Tape *grad_over(Value v, const Tape *s) {
  v = ad_finished(v);
  if (v.t != VT_BOX) return NULL;
  Tape *gt = v.u.box->tape;
  if (!gt->active || gt->graph || gt->forward || gt->id < s->id) return NULL;
  Value w = ad_finished(v.u.box->v);
  return w.t == VT_BOX && w.u.box->tape == s && ad_finished(w.u.box->v).t != VT_BOX ? gt : NULL;
}

/* A value a loop's body computes on: without the stages' boxes and, under a grad traced inside
** the stage (lt->gt), without that grad's (borrowed). */
static Value body_value(const LoopTrace *lt, Value v) {
  Value p = stage_strip(v);
  if (lt->gt && p.t == VT_BOX && p.u.box->tape == lt->gt) p = stage_strip(p.u.box->v);
  return p;
}

/* The place of box v (the same tape node) in the list (*a)[0..*n), appended (retained) when it is
** not there yet. */
static int32_t box_index(Value **a, int32_t *n, int32_t *cap, Value v) {
  for (int32_t k = 0; k < *n; k++)
    if ((*a)[k].u.box->tape == v.u.box->tape && (*a)[k].u.box->node == v.u.box->node) return k;
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 8;
    *a = mem_realloc(*a, (size_t)*cap * sizeof(Value));
  }
  val_retain(v);
  (*a)[*n] = v;
  return (*n)++;
}

bool loop_grad_value(Interp *I, Graph *g, Value v, Value *inner) {
  (void)I;
  v = ad_finished(v);
  if (v.t != VT_BOX || !g->lt || ckpt_setting() == 0) return false;
  for (Graph *x = g; x && x->lt; x = x->lt->outer->graph) {
    LoopTrace *lt = x->lt;
    Tape *gt = grad_over(v, lt->outer);
    if (!gt) continue;
    if (lt->gt != gt && (lt->gt || lt->effects)) return false;   /* (another grad; an effect ran) */
    lt->gt = gt;
    box_index(&lt->gv, &lt->ngv, &lt->gcap, v);
    *inner = ad_finished(v.u.box->v);
    return true;
  }
  return false;
}

bool loop_grad_body(const Graph *g) {
  for (; g && g->lt; g = g->lt->outer->graph)
    if (g->lt->gt) return true;
  return false;
}

void loop_note_effect(const Graph *g) {
  for (; g && g->lt; g = g->lt->outer->graph) g->lt->effects = true;
}

static void put(Value *place, Value v) {   /* takes v */
  Value old = *place;
  *place = v;
  val_release(old);
}

static void free_stage(LoopStage *L, bool graphs) {
  Tape *tapes[2] = { L->ct, L->bt };
  if (graphs) { graph_free(L->cg); graph_free(L->bg); }
  for (int k = 0; k < 2; k++)
    if (tapes[k]) {
      tapes[k]->active = false;
      tapes[k]->graph = NULL;
      Value tv;                                   /* our reference (part_tape) */
      tv.t = VT_TAPE;
      tv.u.tape = tapes[k];
      val_release(tv);
    }
  for (int k = 0; k < L->n; k++) val_release(L->init[k]);
  for (int k = 0; k < L->lt.nov; k++) val_release(L->lt.ov[k]);
  for (int k = 0; k < L->lt.ngv; k++) val_release(L->lt.gv[k]);
  val_release(L->c);
  mem_free(L->lt.ov);
  mem_free(L->lt.gv);
  mem_free(L->init);
  mem_free(L->places);
  mem_free(L->syms);
  mem_free(L);
}

static void free_cb(void *p) { free_stage(p, true); }   /* a throw while tracing the loop */

/* Ends L (undeferred). */
static void finish(Interp *I, LoopStage *L, bool graphs) {
  mls_undefer(I, L);
  free_stage(L, graphs);
}

/* A stage tape for g tracing a part of L's loop, held by L (not the temp stack: the evaluator's
** entries around the loop stay as they were). */
static Tape *part_tape(Interp *I, LoopStage *L, Graph *g) {
  g->lt = &L->lt;
  graph_trace_base(I, g, I->nframes);
  g->abstract = L->outer->graph->abstract;        /* (an abstract trace: the body's too, no values) */
  Tape *t = ad_stage_tape(I, g);
  tmp_pop(I, 1);                                  /* (its reference now L's) */
  t->capture_id = L->outer->capture_id ? L->outer->capture_id : L->outer->id;
  return t;
}

/* The places hold t's parameters: carried value k is leaf k (temporaries stay unbound). */
static void bind_params(Interp *I, LoopStage *L, Tape *t) {
  for (int k = 0; k < L->n; k++) {
    if (L->init[k].t == VT_UNBOUND) continue;
    int32_t id = graph_add(t->graph, GN_PARAM, (Span){ 0, 0 }, NULL);
    GNode *nd = &t->graph->nodes[id];
    nd->param = k;
    Value p = body_value(&L->lt, L->init[k]);
    graph_node_shape(nd, p);
    val_retain(p);
    put(L->places[k], ad_box_new(t, id, p));
  }
}

LoopStage *stage_loop_begin(Interp *I, bool is_while, int n, Value **places, Symbol **syms, Span sp) {
  Tape *o = I->stage;
  if (!o || !o->active || !o->graph || o->graph->dynamic || n > LOOP_MAX_CARRY) return NULL;
  if (o->graph->block && (I->env || o->graph->relative)) return NULL;   /* (a function's blocks) */
  Tape *gt = NULL;                               /* jit(grad(f)): the grad inside the stage */
  for (int k = 0; k < n; k++) {
    Value v = *places[k];
    if (v.t == VT_UNBOUND) continue;
    Tape *g1 = o->graph->block || ckpt_setting() == 0 ? NULL : grad_over(v, o);
    if (g1 && (!gt || gt == g1) && plain_kind(ad_primal(v))) { gt = g1; continue; }
    if (!grad_inside(v, o) || !plain_kind(ad_primal(v))) return NULL;   /* (jvp traces it, a grad of grad ...) */
  }
  LoopStage *L = mem_calloc(1, sizeof *L);
  L->is_while = is_while;
  L->n = n;
  L->c = val_null();
  L->sp = sp;
  L->outer = o;
  L->places = mem_alloc((size_t)(n > 0 ? n : 1) * sizeof(Value *));
  L->syms = mem_alloc((size_t)(n > 0 ? n : 1) * sizeof(Symbol *));
  L->init = mem_alloc((size_t)(n > 0 ? n : 1) * sizeof(Value));
  for (int k = 0; k < n; k++) {
    L->places[k] = places[k];
    L->syms[k] = syms[k];
    L->init[k] = ad_finished(*places[k]);
    bool ours = false;                            /* a --staged block's global: read as the block */
    for (Value x = L->init[k]; x.t == VT_BOX; x = x.u.box->v) ours = ours || x.u.box->tape == o;
    if (o->graph->block && !ours && L->init[k].t != VT_UNBOUND) {   /* reads it (a capture, read at */
      L->init[k] = val_null();                    /* every run; not a constant) */
      L->init[k] = stage_read(I, places[k], NULL, syms[k], sp);
    } else {
      val_retain(L->init[k]);
    }
  }
  L->lt.outer = o;
  L->lt.gt = gt;
  L->lt.base = n + 1;
  L->lt.places = L->places;
  L->lt.nplaces = n;
  mls_defer(I, free_cb, L);
  Graph *g = graph_new();
  if (is_while) { L->cg = g; L->ct = part_tape(I, L, g); }
  else { L->bg = g; L->bt = part_tape(I, L, g); }
  bind_params(I, L, is_while ? L->ct : L->bt);
  I->stage = is_while ? L->ct : L->bt;
  return L;
}

Value stage_loop_index(Interp *I, LoopStage *L, Value x, Value *var) {
  L->lt.ivar = var;
  int32_t id = graph_add(L->bg, GN_PARAM, (Span){ 0, 0 }, NULL);
  GNode *nd = &L->bg->nodes[id];
  nd->param = L->n;
  graph_node_shape(nd, x);
  val_retain(x);
  return ad_box_new(L->bt, id, x);
}

/* An end of a traced range: its outer leaf (registered as a value the loop reads), or -1 and
** the number itself. */
static int32_t range_end(Interp *I, LoopStage *L, Value v, double *c) {
  Value u = ad_finished(v), in;
  *c = 0;
  if (loop_grad_value(I, L->bg, u, &in)) u = in;   /* (jit(grad(f)): the stage's value) */
  if (u.t == VT_BOX) {
    int32_t id = loop_outer_param(I, L->bg, u);
    return L->bg->nodes[id].param;
  }
  *c = u.t == VT_NUM ? u.u.n : u.t == VT_BOOL ? (double)u.u.b : tensor_data(u.u.m)[0];
  return -1;
}

void stage_loop_range(Interp *I, LoopStage *L, Value a, Value b, Span rsp, Symbol *var, Value *var_place) {
  L->range.on = true;
  L->range.ra = range_end(I, L, a, &L->range.ca);
  L->range.rb = range_end(I, L, b, &L->range.cb);
  L->range.span = rsp;
  L->var = var;
  L->var_place = var_place;
}

/* The node of value v of an enclosing stage in g, a loop part being traced: its parameter,
** leaf lt->base + k where lt->ov[k] is v's node (stage.c node_of calls this). */
int32_t loop_outer_param(Interp *I, Graph *g, Value v) {
  LoopTrace *lt = g->lt;
  /* t(Y) of an enclosing value Y: the body reads Y and transposes it itself (t() is a view,
  ** O(1)), so that its rewrites see t(Y) %*% ...: a GEMM's transpose flag, and xtwxv for
  ** lmCG's t(X) %*% (X %*% p), one pass over X an iteration instead of two. */
  const Graph *og = v.u.box->tape->graph;
  const GNode *on = &og->nodes[v.u.box->node];
  Value tv = v.u.box->v;
  if (on->kind == GN_OP && on->op == OP_TRANSPOSE && on->nin == 1 && !(on->flags & GF_CONSTANT) &&
      tv.t == VT_MAT && og->nodes[on->in[0]].vt == VT_MAT) {
    Value yv = ad_box_new(v.u.box->tape, on->in[0], val_mat(tensor_view_t(tv.u.m)));
    tmp_push(I, yv);
    int32_t py = loop_outer_param(I, g, yv);
    tmp_pop(I, 1);
    val_release(yv);
    int32_t id = graph_add(g, GN_OP, on->span, on->src);
    GNode *nd = &g->nodes[id];
    nd->op = OP_TRANSPOSE;
    nd->nin = 1;
    nd->in = mem_alloc(sizeof(int32_t));
    nd->in[0] = py;
    graph_node_shape(nd, tv);
    return id;
  }
  int32_t k = box_index(&lt->ov, &lt->nov, &lt->cap, v);
  for (int32_t i = 0; i < g->n; i++)
    if (g->nodes[i].kind == GN_PARAM && g->nodes[i].param == lt->base + k) return i;
  int32_t id = graph_add(g, GN_PARAM, (Span){ 0, 0 }, NULL);
  g->nodes[id].param = lt->base + k;
  graph_node_shape(&g->nodes[id], v);
  (void)I;
  return id;
}

/* The condition, traced, is known while staging: computed from constants only (no read of a
** variable from outside, no value of the enclosing graph, the carried values' first values
** known), so the enclosing graph may take its first test as a constant, as it takes an
** unrolled loop's. */
static bool cond_constant(const LoopStage *L) {
  if (L->cg->dynamic || L->lt.nov > 0) return false;
  for (int32_t i = 0; i < L->cg->n; i++)
    if (L->cg->nodes[i].kind == GN_CAPTURE || L->cg->nodes[i].kind == GN_CALL) return false;
  for (int k = 0; k < L->n; k++)
    for (Value x = L->init[k]; x.t == VT_BOX; x = x.u.box->v)
      if (x.u.box->tape->active && x.u.box->tape->graph &&
          !(x.u.box->tape->graph->nodes[x.u.box->node].flags & GF_CONSTANT))
        return false;
  return true;
}

/* The enclosing stage goes eager from here (a loop that depends on its values but cannot be a
** node); the places hold plain values. */
static void go_eager(Interp *I, LoopStage *L, const char *fmt, const char *what) {
  graph_mark_dynamic(L->outer->graph, I, L->sp, fmt, what);
  L->outer->active = false;
  if (L->ct) L->ct->active = false;
  if (L->bt) L->bt->active = false;
  for (int k = 0; k < L->n; k++) {
    Value p = ad_finished(*L->places[k]);
    val_retain(p);
    put(L->places[k], p);
  }
}

bool stage_loop_cond(Interp *I, LoopStage *L, Value c) {
  I->stage = L->outer;
  bool traced = false, constant = false;
  for (Value x = c; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape == L->ct) {
      traced = true;
      constant = (L->cg->nodes[x.u.box->node].flags & GF_CONSTANT) != 0;
    }
  Value p = ad_primal(c);
  bool truth = (p.t == VT_BOOL && p.u.b) || (p.t == VT_NUM && p.u.n != 0 && !isnan(p.u.n));
  bool abstract = L->cg->abstract && traced && !constant;
  if (abstract) truth = true;                    /* (no value: the body is traced, never run here) */
  if (!traced || L->cg->dynamic || !truth) {
    bool depends = !cond_constant(L);
    for (int k = 0; k < L->n; k++) {             /* the places as they were (the condition assigns none) */
      val_retain(L->init[k]);
      put(L->places[k], L->init[k]);
    }
    if (depends) {                               /* (unrolled, a false test would be a constant) */
      graph_mark_dynamic(L->outer->graph, I, L->sp, "%s", L->cg->dynamic ? L->cg->why
                         : truth ? "a while loop's condition depends on a staged value"
                                 : "a while loop whose condition depends on a staged value ran no iteration while traced");
      L->outer->active = false;
    }
    finish(I, L, true);
    return false;
  }
  val_retain(c);
  L->c = c;
  L->bg = graph_new();
  L->bt = part_tape(I, L, L->bg);
  bind_params(I, L, L->bt);
  I->stage = L->bt;
  return true;
}

/* g's result: the list of the carried values' nodes (an unbound temporary: NULL). */
static void body_out(Interp *I, LoopStage *L) {
  Graph *g = L->bg;
  g->out.node = -2;
  g->out.n = L->n;
  g->out.kids = mem_calloc((size_t)(L->n > 0 ? L->n : 1), sizeof(GOut));
  g->outs = mem_alloc((size_t)(L->n > 0 ? L->n : 1) * sizeof(int32_t));
  for (int k = 0; k < L->n; k++) {
    GOut *o = &g->out.kids[k];
    o->v = val_null();
    o->node = -1;
    if (L->places[k]->t == VT_UNBOUND) continue;
    o->node = stage_node_of(I, L->bt, *L->places[k], L->sp);
    g->outs[g->nout++] = o->node;
  }
}

static void graph_ready(Interp *I, Graph *g, int nparams) {
  g->nparams = nparams;
  graph_count_uses(g);
  g->before = graph_live_count(g);
  g->peak_before = graph_peak_bytes(g);
  Tape *saved = I->stage;                        /* (constant folding runs ops: on plain values, */
  I->stage = NULL;                               /* not lifted into the enclosing stage) */
  graph_optimize(I, g);
  I->stage = saved;
}

/* The value of element i of a for loop's sequence. */
static Value seq_at(Value seq, int64_t i) {
  int64_t c = tensor_cols(seq.u.m);
  return val_num(tensor_get(seq.u.m, i / c, i % c));
}

/* A traced range's ends for this run (leaves or the constants), checked as ':' does; its
** first element, step and length. */
static void range_of(Interp *I, const Loop *lp, const Value *leaves, double *from, double *step, int64_t *count) {
  double e[2];
  for (int k = 0; k < 2; k++) {
    int32_t at = k ? lp->range.rb : lp->range.ra;
    if (at < 0) { e[k] = k ? lp->range.cb : lp->range.ca; continue; }
    Value v = ad_primal(leaves[at]);
    e[k] = val_to_num(I, v, lp->range.span, k ? "the end of ':'" : "the start of ':'");
  }
  *count = op_range_count(I, e[0], e[1], lp->range.span);   /* (op_range's checks) */
  *from = e[0];
  *step = e[1] >= e[0] ? 1.0 : -1.0;
}

typedef struct Ckpt Ckpt;
static void ckpt_note(Interp *I, Ckpt *ck, const Value *leaves, int64_t idx);
static bool run_ckpt(Interp *I, const Loop *lp, Tape *T, Value *leaves, int64_t from, int64_t *iters);
static Tape *ckpt_tape(Interp *I, const Loop *lp, const Value *leaves);

/* Runs the loop from leaves (n carried, the index, the enclosing graph's values; held by the
** caller's list, updated in place) for iterations from .. of a for loop or, while: until the
** condition is false. *iters counts the iterations run; false: a run was stale (*at: the
** iteration it was in). ck: a checkpointed run's plain runs (run_ckpt), which note the states;
** else, when one grad traces the leaves, the run is checkpointed (one node on its tape). */
static bool run_iterations(Interp *I, const Loop *lp, Value *leaves, int64_t from, int64_t *iters, int64_t *at, char *why,
                           size_t nwhy, Ckpt *ck) {
  Tape *T = ck ? NULL : ckpt_tape(I, lp, leaves);
  if (T && run_ckpt(I, lp, T, leaves, from, iters)) return true;   /* (stale: as before, below) */
  bool stale = false;
  int n = lp->ncarry;
  double r0 = 0, rstep = 1;
  int64_t count = lp->count;
  if (lp->range.on) range_of(I, lp, leaves, &r0, &rstep, &count);
  int mark = I->ntmp;                            /* the runs' node values, one list for all */
  int32_t most = lp->body->n > (lp->cond ? lp->cond->n : 0) ? lp->body->n : lp->cond->n;
  List *hold = list_held_nulls(I, most);
  List *lean = NULL;                             /* the lean runner's buffers (lean.c), kept across iterations */
  if (lp->lean && lean_fits(I, lp->lean, lp, leaves)) lean = list_held_nulls(I, 2 * lp->body->n);
  Value outv[LOOP_MAX_CARRY];
  for (int64_t i = from;; i++) {
    if (I->interrupted) interp_check_interrupt(I, lp->span);
    if (at) *at = i;
    if (!lp->is_while && i >= count) break;
    if (lp->is_while) {
      Value c = graph_run_into(I, lp->cond, leaves, &stale, hold, NULL);
      if (stale) { snprintf(why, nwhy, "%s", lp->cond->stale_why); tmp_release_to(I, mark); return false; }
      tmp_push(I, c);
      bool t = val_truth(I, c, lp->cond->n > 0 && lp->cond->out.node >= 0 ? lp->cond->nodes[lp->cond->out.node].span : lp->span);
      tmp_pop(I, 1);
      val_release(c);
      if (!t) break;
    } else {
      val_release(leaves[n]);
      leaves[n] = lp->range.on ? val_num(r0 + rstep * (double)i) : seq_at(lp->seq, i);
    }
    if (lean) {
      if (lean_step(I, lp->lean, lp, leaves, lean)) {
        ++*iters;
        if (ck) ckpt_note(I, ck, leaves, i + 1);
        continue;
      }
      lean = NULL;                               /* (declined: the graph runner from here) */
    }
    graph_run_into(I, lp->body, leaves, &stale, hold, outv);
    if (stale) { snprintf(why, nwhy, "%s", lp->body->stale_why); tmp_release_to(I, mark); return false; }
    for (int k = 0; k < n; k++) {                /* (outv's references now the leaves') */
      Value x = outv[k];
      if (lp->temp[k] && x.t == VT_NULL) continue;
      val_release(leaves[k]);
      leaves[k] = x;
    }
    ++*iters;
    if (ck) ckpt_note(I, ck, leaves, i + 1);
  }
  tmp_release_to(I, mark);
  return true;
}

Value loop_run(Interp *I, const GNode *nd, const Value *args, bool *stale) {
  const Loop *lp = nd->loop;
  int n = lp->ncarry, nl = n + 1 + lp->nouter;
  int mark = I->ntmp;
  List *h = list_held_nulls(I, nl);
  for (int k = 0; k < n; k++) { val_retain(args[k]); h->items[k] = args[k]; }
  for (int k = 0; k < lp->nouter; k++) { val_retain(args[n + k]); h->items[n + 1 + k] = args[n + k]; }
  int64_t iters = 0;
  char why[160];
  *stale = !run_iterations(I, lp, h->items, 0, &iters, NULL, why, sizeof why, NULL);
  if (!*stale && lp->some_iter && iters == 0) {
    *stale = true;
    snprintf(lp->body->stale_why, sizeof lp->body->stale_why, "a while loop ran no iteration (traced with one or more)");
  }
  if (*stale) { tmp_release_to(I, mark); return val_unbound(); }
  List *l = list_new(I, n + 2);
  Value r = val_list(l);
  for (int k = 0; k < n; k++) { val_retain(h->items[k]); list_push(l, h->items[k], NULL); }
  list_push(l, val_num((double)iters), NULL);
  if (lp->range.on) { val_retain(h->items[n]); list_push(l, h->items[n], NULL); }   /* the last element */
  tmp_release_to(I, mark);
  return r;
}

/* *place bound to item k of loop node id of stage o's graph, holding *place's value without the
** loop's boxes: without the stages' and, under a grad traced inside the stage (jit(grad(f)),
** lt->gt), without that grad's, which rev_record puts back around the item where the grad traces
** it; a grad begun outside the stage (grad(jit(f))) keeps its box, inside the stage's. */
static void bind_item(Interp *I, const LoopTrace *lt, Tape *o, int32_t id, int k, Value *place) {
  int32_t it = graph_add(o->graph, GN_ITEM, o->graph->nodes[id].span, NULL);
  GNode *in = &o->graph->nodes[it];
  in->nin = 1;
  in->in = mem_alloc(sizeof(int32_t));
  in->in[0] = id;
  in->param = k;
  in->chain = -1;
  Value v = body_value(lt, *place);
  graph_node_shape(in, v);
  val_retain(v);
  put(place, ad_box_new(o, it, v));
  (void)I;
}

static void rev_record(Interp *I, LoopStage *L, Loop *lp);

bool stage_loop_grad(const LoopStage *L) { return L->lt.gt != NULL; }

/* jit(grad(f)): the places hold their values from before the loop again (with the grad's boxes,
** which the body's trace set aside); L is freed. */
static void restore_places(Interp *I, LoopStage *L, bool graphs) {
  I->stage = L->outer;
  for (int k = 0; k < L->n; k++) {
    val_retain(L->init[k]);
    put(L->places[k], L->init[k]);
  }
  finish(I, L, graphs);
}

void stage_loop_abort(Interp *I, LoopStage *L) { restore_places(I, L, true); }

int64_t stage_loop_end(Interp *I, LoopStage *L, Value seq, int64_t count) {
  I->stage = L->outer;
  int n = L->n;
  char why[300] = "";
  if (L->bg->dynamic) snprintf(why, sizeof why, "%s", L->bg->why);
  else if (L->outer->graph->dynamic || !L->outer->active) snprintf(why, sizeof why, "%s", "the enclosing staging went eager");
  for (int k = 0; k < n && !why[0]; k++) {
    Value v = *L->places[k];
    if (v.t == VT_UNBOUND) continue;
    Value p = ad_primal(v), ip = ad_primal(L->init[k]);
    char d0[64], d1[64];
    if (!plain_kind(p) || (!grad_inside(v, L->outer) && !(L->lt.gt && grad_over(v, L->outer) == L->lt.gt)))
      snprintf(why, sizeof why, "'%s' is %s after the body", L->syms[k]->name, val_describe(p, d0, sizeof d0));
    else if (L->init[k].t != VT_UNBOUND &&
             (ip.t != p.t || (p.t == VT_MAT && (tensor_rows(p.u.m) != tensor_rows(ip.u.m) || tensor_cols(p.u.m) != tensor_cols(ip.u.m)))))
      snprintf(why, sizeof why, "'%s' changes from %s to %s in the body", L->syms[k]->name, val_describe(ip, d0, sizeof d0),
               val_describe(p, d1, sizeof d1));
  }
  if (!why[0] && n + L->lt.nov > 64) snprintf(why, sizeof why, "it carries and reads more than 64 values");
  if (why[0] && L->lt.gt) {                      /* (the first iteration ran without the grad) */
    restore_places(I, L, true);
    return 0;
  }
  if (why[0]) {
    go_eager(I, L, "a loop could not be one node: %s", why);
    finish(I, L, true);
    return 1;
  }
  /* the graphs */
  body_out(I, L);
  graph_ready(I, L->bg, n + 1 + L->lt.nov);
  if (L->cg) {
    L->cg->out.node = stage_node_of(I, L->ct, L->c, L->sp);
    L->cg->outs = mem_alloc(sizeof(int32_t));
    L->cg->outs[L->cg->nout++] = L->cg->out.node;
    graph_ready(I, L->cg, n + 1 + L->lt.nov);
  }
  Loop *lp = mem_calloc(1, sizeof *lp);
  lp->refs = 1;
  lp->is_while = L->is_while;
  lp->ncarry = n;
  lp->nouter = L->lt.nov;
  lp->seq = L->is_while ? val_null() : seq;
  val_retain(lp->seq);
  lp->count = count;
  lp->range = L->range;
  lp->body = L->bg;
  lp->cond = L->cg;
  lp->names = mem_calloc((size_t)n + 2, sizeof(Symbol *));
  lp->names[n + 1] = L->var;
  lp->temp = mem_calloc((size_t)(n > 0 ? n : 1), sizeof(bool));
  for (int k = 0; k < n; k++) { lp->names[k] = L->syms[k]; lp->temp[k] = L->init[k].t == VT_UNBOUND; }
  lp->span = L->sp;
  lp->src = I->src;
  if (lp->src) source_retain(lp->src);
  const char *ls = getenv("MLS_LOOP_LEAN");       /* (0: the graph runner only, to compare) */
  if (!(ls && strcmp(ls, "0") == 0)) lp->lean = lean_compile(lp);
  L->bg->lt = NULL;
  if (L->cg) L->cg->lt = NULL;
  L->bg = L->cg = NULL;                          /* (now the Loop's) */
  mls_defer(I, (CleanupFn)loop_free, lp);
  if (lp->body->abstract) {                      /* an abstract trace: no values, no iterations run */
    for (int k = 0; k < n; k++) {                /* (the body's results: the loop's, uncomputed) */
      if (L->places[k]->t == VT_UNBOUND) continue;
      Value p = stage_strip(*L->places[k]);
      val_retain(p);
      put(L->places[k], p);
    }
    if (L->range.on) {
      Value p = stage_strip(*L->var_place);
      val_retain(p);
      put(L->var_place, p);
    }
    goto node;
  }
  /* the rest of this run's iterations: runs of the graphs on plain values */
  int mark = I->ntmp;
  int nl = n + 1 + lp->nouter;
  List *h = list_held_nulls(I, nl);
  for (int k = 0; k < n; k++) {
    Value p = ad_finished(*L->places[k]);
    if (p.t == VT_UNBOUND) p = val_null();
    h->items[k] = body_value(&L->lt, p);        /* (a grad's boxes kept: it records these runs; */
                                                /* not one traced inside the stage: rev_record) */
    val_retain(h->items[k]);
  }
  for (int k = 0; k < lp->nouter; k++) { h->items[n + 1 + k] = stage_strip(L->lt.ov[k]); val_retain(h->items[n + 1 + k]); }
  Tape *saved = I->stage;
  I->stage = NULL;                               /* (plain runs: nothing is lifted into a stage) */
  int64_t iters = 1, at = 1;
  char swhy[160] = "";
  bool ok = run_iterations(I, lp, h->items, 1, &iters, &at, swhy, sizeof swhy, NULL);
  I->stage = saved;
  for (int k = 0; k < n; k++) {                  /* the values so far */
    if (lp->temp[k] && h->items[k].t == VT_NULL) continue;
    val_retain(h->items[k]);
    put(L->places[k], h->items[k]);
  }
  if (L->range.on && h->items[n].t != VT_NULL) {    /* the loop variable: the last element run */
    val_retain(h->items[n]);
    put(L->var_place, h->items[n]);
  }
  tmp_release_to(I, mark);
  if (!ok && L->lt.gt) {                         /* (from the start, with the grad) */
    mls_undefer(I, lp);
    loop_free(lp);
    restore_places(I, L, false);
    return 0;
  }
  if (!ok) {                                     /* a run was stale: on eagerly from iteration at */
    mls_undefer(I, lp);
    loop_free(lp);
    go_eager(I, L, "a loop could not be one node: %s", swhy);
    bool is_while = L->is_while;
    finish(I, L, false);
    return is_while ? 1 : at;
  }
node:;
  /* the node, and the places bound to its results */
  Tape *o = L->outer;
  Graph *og = o->graph;
  int32_t ins[64];
  int nin = 0;
  for (int k = 0; k < n; k++) ins[nin++] = stage_node_of(I, o, L->init[k].t == VT_UNBOUND ? val_null() : L->init[k], L->sp);
  for (int k = 0; k < lp->nouter; k++) ins[nin++] = stage_node_of(I, o, L->lt.ov[k], L->sp);
  mls_undefer(I, lp);
  int32_t id = graph_add(og, GN_LOOP, L->sp, I->src);
  GNode *nd = &og->nodes[id];
  nd->chain = graph_chain(I, og);
  nd->nin = nin;
  nd->in = mem_alloc((size_t)(nin > 0 ? nin : 1) * sizeof(int32_t));
  memcpy(nd->in, ins, (size_t)nin * sizeof(int32_t));
  nd->vt = VT_LIST;
  nd->loop = lp;
  if (lp->body->effects || (lp->cond && lp->cond->effects)) { nd->flags |= GF_EFFECT; og->effects = true; }
  graph_log(og, "  loop node: %s, %d carried value%s, body of %d node%s", lp->is_while ? "while" : "for", n, n == 1 ? "" : "s",
            graph_live_count(lp->body), graph_live_count(lp->body) == 1 ? "" : "s");
  for (int k = 0; k < n; k++) {
    if (ad_finished(*L->places[k]).t == VT_UNBOUND) continue;
    bind_item(I, &L->lt, o, id, k, L->places[k]);
    if (og->block) stage_assigned(I, L->places[k], L->syms[k], NULL);   /* (an output of the block) */
  }
  if (L->range.on) bind_item(I, &L->lt, o, id, n + 1, L->var_place);   /* the loop variable: the range's last element */
  if (L->lt.gt) rev_record(I, L, lp);            /* jit(grad(f)): the run, one node on the grad's tape */
  finish(I, L, false);
  return -1;
}

bool stage_select_ok(Interp *I, Value c) {
  Tape *t = I->stage;
  if (!t || !t->active || !t->graph || t->graph->block || t->graph->abstract || t->graph->dynamic) return false;
  for (Value x = c; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape == t) {                  /* a comparison's boolean: never NaN (an if on */
      const GNode *nd = &t->graph->nodes[x.u.box->node];   /* NaN is eager's error, not a choice) */
      return !(nd->flags & GF_CONSTANT) && nd->kind == GN_OP && (op_info[nd->op].flags & OPF_CMP) && nd->vt == VT_BOOL;
    }
  return false;
}

int32_t stage_graph_mark(Interp *I) { return I->stage->graph->n; }

/* Nodes a and b compute the same (one op of the same inputs: the same nodes, or constants of
** the same number or NULL). */
static bool same_input(const Graph *g, int32_t a, int32_t b) {
  if (a == b) return true;
  const GNode *x = &g->nodes[a], *y = &g->nodes[b];
  if (x->kind != GN_CONST || y->kind != GN_CONST || x->v.t != y->v.t) return false;
  return x->v.t == VT_NULL || (x->v.t == VT_NUM && x->v.u.n == y->v.u.n) || (x->v.t == VT_BOOL && x->v.u.b == y->v.u.b);
}

static bool same_op(const Graph *g, const GNode *x, const GNode *y) {
  if (x->kind != GN_OP || y->kind != GN_OP || x->op != y->op || x->nin != y->nin || x->nextra != y->nextra ||
      (x->flags & (GF_TA | GF_TB)) != (y->flags & (GF_TA | GF_TB)))
    return false;
  for (int k = 0; k < x->nin; k++)
    if (!same_input(g, x->in[k], y->in[k]) && !same_op(g, &g->nodes[x->in[k]], &g->nodes[y->in[k]])) return false;
  return true;
}

bool stage_pure_since(Interp *I, int32_t mark) {
  Tape *t = I->stage;
  if (!t || !t->active || !t->graph || t->graph->dynamic) return false;
  const Graph *g = t->graph;
  for (int32_t i = mark; i < g->n; i++) {
    const GNode *nd = &g->nodes[i];
    if (nd->flags & GF_EFFECT) return false;
    if (!graph_may_fail(g, nd)) continue;
    bool before = false;                         /* the same op ran unconditionally before the if */
    for (int32_t j = 0; j < mark && !before; j++) before = same_op(g, &g->nodes[j], nd);   /* (x[i] of the test) */
    if (!before) return false;
  }
  return true;
}

void stage_select_abandon(Interp *I, Span sp, const char *why) {
  Tape *t = I->stage;
  if (!t || !t->graph) return;
  graph_mark_dynamic(t->graph, I, sp, "%s", why);
  t->active = false;
}

void loop_free(Loop *lp) {
  if (!lp || --lp->refs > 0) return;          /* (a checkpointed run on a tape holds it too) */
  lean_free(lp->lean);
  graph_free(lp->body);
  graph_free(lp->cond);
  val_release(lp->seq);
  if (lp->src) source_release(lp->src);
  mem_free(lp->names);
  mem_free(lp->temp);
  mem_free(lp);
}

void loop_children(const Loop *lp, GcVisit fn, void *ctx) {
  gc_visit_value(lp->seq, fn, ctx);
  graph_children(lp->body, fn, ctx);
  if (lp->cond) graph_children(lp->cond, fn, ctx);
}

/* ---- checkpointed runs under grad (docs/staging.md "Checkpointing") ----
** When one grad traces a loop node's inputs (grad(jit(f))), the node's run is one custom node on
** that grad's tape (autodiff.h AdCustom) instead of every iteration's ops: the iterations run on
** plain values, keeping the carried state every k-th iteration (a checkpoint), and the backward
** pass recomputes the iterations segment by segment from the last, each from its checkpoint on a
** tape of its own, and backpropagates through them: the carried values' adjoints flow from
** segment to segment, the adjoints of the values read from outside the loop add up across them.
** k is ceil(sqrt(n)) for a for loop of n iterations; a while loop's n is known only at its end,
** so k starts at 1 and doubles whenever more than 2k + 1 checkpoints are kept (every other one
** dropped): at the end k <= sqrt(2n) and at most 2k + 1 checkpoints, so the backward pass holds
** at most 3 sqrt(2n) + 1 states at once (checkpoints and one segment's), against n when every
** iteration is recorded. MLS_LOOP_CHECKPOINT=k fixes k; 0 records every iteration as before. */

struct Ckpt {
  AdCustom c;                /* first: the tape's view of it */
  Loop *lp;                  /* held (refs) */
  int n, nl;                 /* carried values; leaves (n + 1 + nouter) */
  int64_t from, end;         /* the iterations it ran: from .. end - 1 */
  double r0, rstep;          /* a traced range's first element and step */
  Value *outer;              /* the enclosing graph's values (plain, retained; nouter) */
  Value *capb;               /* the body's captures as read at the run (per body node; retained) */
  Value *st;                 /* nck states of n carried values each (retained) */
  int64_t *at;               /* the iteration each state is before */
  int64_t nck, cap, stride;
  bool adaptive;
};

/* MLS_LOOP_CHECKPOINT: k > 0 keeps every k-th state; 0 records every iteration; unset: -1. */
static int64_t ckpt_setting(void) {
  const char *e = getenv("MLS_LOOP_CHECKPOINT");
  if (e && *e) return strtoll(e, NULL, 10);
  return -1;
}

/* The grad tape a checkpointed run records on: one active grad tape (not jvp) whose box is the
** only active one on each leaf that has one (nothing of an outer grad or a stage: those record
** the iterations as before), the loop free of effects (the backward pass runs its body again)
** and no stage taking ops; NULL otherwise. */
static Tape *ckpt_tape(Interp *I, const Loop *lp, const Value *leaves) {
  if (ckpt_setting() == 0 || I->ad_no_checkpoint || (I->stage && I->stage->active)) return NULL;
  if (lp->body->effects || (lp->cond && lp->cond->effects)) return NULL;
  Tape *t = NULL;
  int nl = lp->ncarry + 1 + lp->nouter;
  for (int k = 0; k < nl; k++) {
    Value x = ad_finished(leaves[k]);
    if (x.t == VT_LIST && ad_any_grad_deep(1, &x)) return NULL;
    if (x.t != VT_BOX) continue;
    Tape *u = x.u.box->tape;
    if (u->graph || u->forward || (t && u != t) || ad_any_active(1, &x.u.box->v)) return NULL;
    if (ad_primal(x).t == VT_LIST) return NULL;
    t = u;
  }
  return t;
}

static void ckpt_drop_states(Ckpt *ck) {
  for (int64_t j = 0; j < ck->nck * ck->n; j++) val_release(ck->st[j]);
  ck->nck = 0;
}

static void ckpt_release(AdCustom *c) {      /* what the backward pass needed */
  Ckpt *ck = (Ckpt *)c;
  ckpt_drop_states(ck);
  mem_free(ck->st);
  mem_free(ck->at);
  ck->st = NULL;
  ck->at = NULL;
  for (int k = 0; ck->outer && k < ck->lp->nouter; k++) val_release(ck->outer[k]);
  for (int32_t i = 0; ck->capb && i < ck->lp->body->n; i++) val_release(ck->capb[i]);
  mem_free(ck->outer);
  mem_free(ck->capb);
  ck->outer = ck->capb = NULL;
  Loop *lp = ck->lp;
  ck->lp = NULL;
  loop_free(lp);
}

/* The header of a custom tape node standing for a run of loop lp (autodiff.h AdCustom): its
** entries, its inputs the carried values then the outer ones (in[] zeroed: the caller fills
** it), its outputs the carried values (their adjoints gout[] all VT_NULL so far). */
static void loop_custom(AdCustom *c, const Loop *lp, void (*backward)(Interp *, AdCustom *, Value **),
                        void (*release)(AdCustom *), void (*free_fn)(AdCustom *)) {
  int n = lp->ncarry, ni = n + lp->nouter;
  c->backward = backward;
  c->release = release;
  c->free_fn = free_fn;
  c->nin = ni;
  c->nout = n;
  c->is_while = lp->is_while;
  c->in = mem_calloc((size_t)(ni > 0 ? ni : 1), sizeof(int32_t));
  c->gout = mem_calloc((size_t)(n > 0 ? n : 1), sizeof(Value));
  for (int k = 0; k < n; k++) c->gout[k] = val_null();
}

static void ckpt_free(AdCustom *c) {
  mem_free((void *)c->names);
  mem_free(c);
}

static void ckpt_keep(Ckpt *ck, const Value *leaves, int64_t idx) {
  if (ck->nck == ck->cap) {
    ck->cap = ck->cap ? 2 * ck->cap : 16;
    ck->st = mem_realloc(ck->st, (size_t)(ck->cap * (ck->n > 0 ? ck->n : 1)) * sizeof(Value));
    ck->at = mem_realloc(ck->at, (size_t)ck->cap * sizeof(int64_t));
  }
  for (int k = 0; k < ck->n; k++) {
    val_retain(leaves[k]);
    ck->st[ck->nck * ck->n + k] = leaves[k];
  }
  ck->at[ck->nck++] = idx;
  if (ck->nck + 1 > ck->c.peak_states) ck->c.peak_states = ck->nck + 1;   /* (and the state running) */
}

/* After iteration idx - 1: the state before iteration idx is a checkpoint every stride
** iterations; a while loop's stride doubles when more than 2 stride + 1 are kept. */
static void ckpt_note(Interp *I, Ckpt *ck, const Value *leaves, int64_t idx) {
  (void)I;
  if ((idx - ck->from) % ck->stride != 0) return;
  ckpt_keep(ck, leaves, idx);
  if (!ck->adaptive || ck->nck <= 2 * ck->stride + 1) return;
  ck->stride *= 2;
  int64_t m = 0;
  for (int64_t j = 0; j < ck->nck; j++) {
    Value *s = ck->st + j * ck->n;
    if ((ck->at[j] - ck->from) % ck->stride != 0) {
      for (int k = 0; k < ck->n; k++) val_release(s[k]);
      continue;
    }
    if (m != j) {
      memmove(ck->st + m * ck->n, s, (size_t)ck->n * sizeof(Value));
      ck->at[m] = ck->at[j];
    }
    m++;
  }
  ck->nck = m;
}

static Value index_at(const Loop *lp, const Ckpt *ck, int64_t i) {
  return lp->range.on ? val_num(ck->r0 + ck->rstep * (double)i) : seq_at(lp->seq, i);
}

/* slot += g: set the first time, add after (the backward pass's rule). */
static void ckpt_add(Interp *I, Value *slot, Value g, Span sp) {
  Value sum;
  if (slot->t == VT_NULL) { sum = g; val_retain(sum); }
  else sum = op_binary(I, OP_ADD, *slot, g, sp);
  val_release(*slot);
  *slot = sum;
}

/* The backward pass of iterations a .. b - 1, from checkpoint j: recomputed on a tape of their
** own from the checkpoint, then backpropagated from the carried adjoints g (of the state after
** b - 1; replaced by those of the state before a) and the sums in the outer values' slots. */
static void ckpt_segment(Interp *I, Ckpt *ck, int64_t j, int64_t a, int64_t b, List *g, Value **slots) {
  const Loop *lp = ck->lp;
  int n = ck->n, no = lp->nouter;
  int mark = I->ntmp;
  Tape *L = ad_trace_tape(I);
  List *lv = list_held_nulls(I, ck->nl);
  int32_t lid[LOOP_MAX_CARRY + 64];
  for (int k = 0; k < n + no; k++) {
    Value s = k < n ? ck->st[j * n + k] : ck->outer[k - n];
    Value p = ad_primal(s);
    int at = k < n ? k : k + 1;
    lid[k] = -1;
    if (p.t == VT_NUM || p.t == VT_MAT) {
      lv->items[at] = ad_trace_leaf(I, L, s, lp->span);
      lid[k] = lv->items[at].u.box->node;
    } else {
      val_retain(s);
      lv->items[at] = s;
    }
  }
  if (a == ck->from)                             /* a first value that is a value the body reads */
    for (int k = 0; k < n; k++)                  /* (s = x; ... x): one leaf, as eagerly one node, */
      for (int q = 0; q < no; q++)               /* so its adjoint adds up in eager's order */
        if (lid[k] >= 0 && ck->c.in[k] >= 0 && ck->c.in[k] == ck->c.in[n + q] && lid[n + q] >= 0) {
          Value x = lv->items[n + 1 + q];
          val_retain(x);
          val_release(lv->items[k]);
          lv->items[k] = x;
          lid[k] = -1;                           /* (its adjoint is the outer value's) */
          break;
        }
  int32_t most = lp->body->n;
  List *hold = list_held_nulls(I, most);
  Value outv[LOOP_MAX_CARRY];
  for (int64_t i = a; i < b; i++) {
    if (I->interrupted) interp_check_interrupt(I, lp->span);
    if (!lp->is_while) {
      val_release(lv->items[n]);
      lv->items[n] = index_at(lp, ck, i);
    }
    bool stale = false;
    graph_run_fixed(I, lp->body, lv->items, ck->capb, &stale, hold, outv);
    if (stale)
      mls_throw(I, lp->span, "grad: the loop's body, run again for its backward pass, no longer fits its graph (%s)",
                lp->body->stale_why);
    for (int k = 0; k < n; k++) {
      if (lp->temp[k] && outv[k].t == VT_NULL) continue;
      val_release(lv->items[k]);
      lv->items[k] = outv[k];
    }
  }
  L->active = false;
  int64_t live = (j + 1) + (b - a);              /* the checkpoints left and this segment's states */
  if (live > ck->c.peak_states) ck->c.peak_states = live;
  List *adj = ad_tape_adjoints(I, L);
  bool seeded[64];
  for (int q = 0; q < no; q++) {                 /* an outer value's sum so far: its contributions */
    seeded[q] = lid[n + q] >= 0;                 /* add to it in the order eager grad adds them */
    for (int r = 0; r < q && seeded[q]; r++) seeded[q] = slots[n + r] != slots[n + q];
    if (seeded[q] && slots[n + q]->t != VT_NULL) { val_retain(*slots[n + q]); adj->items[lid[n + q]] = *slots[n + q]; }
  }
  for (int k = 0; k < n; k++) {                  /* the carried adjoints at the segment's end */
    if (g->items[k].t == VT_NULL) continue;
    int32_t nd = ad_node_on(L, lv->items[k]);
    if (nd >= 0) ckpt_add(I, &adj->items[nd], g->items[k], lp->span);
  }
  ad_backward_all(I, L, adj);
  for (int k = 0; k < n; k++) {
    Value x = lid[k] >= 0 ? adj->items[lid[k]] : val_null();
    val_retain(x);
    val_release(g->items[k]);
    g->items[k] = x;
  }
  for (int q = 0; q < no; q++) {
    if (lid[n + q] < 0) continue;
    Value x = adj->items[lid[n + q]];
    if (x.t == VT_NULL) continue;
    if (seeded[q]) {
      val_retain(x);
      val_release(*slots[n + q]);
      *slots[n + q] = x;
    } else {
      ckpt_add(I, slots[n + q], x, lp->span);
    }
  }
  tmp_release_to(I, mark);
}

static void ckpt_backward(Interp *I, AdCustom *c, Value **slots) {
  Ckpt *ck = (Ckpt *)c;
  int n = ck->n;
  int mark = I->ntmp;
  List *g = list_held_nulls(I, n);
  for (int k = 0; k < n; k++) { val_retain(c->gout[k]); g->items[k] = c->gout[k]; }
  c->segments = 0;
  int64_t b = ck->end;
  for (int64_t j = ck->nck - 1; j >= 0; b = ck->at[j--]) {
    int64_t a = ck->at[j];
    if (a < b) {
      ckpt_segment(I, ck, j, a, b, g, slots);
      c->segments++;
    }
    for (int k = 0; k < n; k++) val_release(ck->st[j * n + k]);   /* (this checkpoint is done) */
    ck->nck = j;
  }
  for (int k = 0; k < n; k++)
    if (g->items[k].t != VT_NULL) ckpt_add(I, slots[k], g->items[k], ck->lp->span);
  tmp_release_to(I, mark);
}

/* Sets ck up for a run of lp's body from iteration from on the loop's values items (carried,
** counter, outer): the body's captures as they are now (ck->capb, retained), the range, and the
** checkpoint stride (MLS_LOOP_CHECKPOINT = k > 0: every k-th state; else a for loop's
** ceil(sqrt(n)), a while loop's 1, doubling as it runs), keeping the state at from. NULL, or the
** capture node whose variable is gone (then nothing is kept: the caller drops ck). The
** checkpointed runs come here only with MLS_LOOP_CHECKPOINT not 0 (ckpt_tape, grad_over). */
static const GNode *ckpt_start(Interp *I, Ckpt *ck, const Loop *lp, Value *items, int64_t from) {
  const Graph *bg = lp->body;
  ck->capb = mem_calloc((size_t)(bg->n > 0 ? bg->n : 1), sizeof(Value));
  for (int32_t i = 0; i < bg->n; i++) {
    ck->capb[i] = val_null();
    const GNode *nd = &bg->nodes[i];
    if (nd->kind != GN_CAPTURE || (nd->flags & GF_DEAD)) continue;
    Value *at = bg->relative ? graph_place(I, nd->place, nd->pdepth, nd->pslot) : nd->place;
    if (!at) return nd;
    ck->capb[i] = *at;
    val_retain(*at);
  }
  int64_t count = lp->count;
  ck->r0 = 0;
  ck->rstep = 1;
  if (lp->range.on) range_of(I, lp, items, &ck->r0, &ck->rstep, &count);
  int64_t k0 = ckpt_setting();
  ck->adaptive = k0 <= 0 && lp->is_while;
  ck->stride = k0 > 0 ? k0 : lp->is_while ? 1 : (int64_t)ceil(sqrt((double)(count > from ? count - from : 1)));
  if (ck->stride < 1) ck->stride = 1;
  ckpt_keep(ck, items, from);
  return NULL;
}

/* Whether op's result carries a grad's trace on (tape_process: a comparison's, a discrete or
** not differentiable op's result is a plain value). */
static bool op_traces(int op) {
  int f = op_info[op].flags;
  return (f & OPF_DIFF) && !(f & (OPF_CMP | OPF_DISCRETE));
}

/* The same for a fusion group, its program run on which inputs are traced (nd: per node). */
static bool fused_traces(const GNode *x, const bool *nd) {
  const FusedProg *p = x->fused;
  bool r[64] = { false };
  if (p->nregs > 64 || p->nins == 0) return true;
  for (int k = 0; k < p->nin; k++)              /* (the GEMM epilogue: register 0 the product of inputs 0 and 1) */
    r[k] = p->mm ? (k == 0 ? nd[x->in[0]] || nd[x->in[1]] : nd[x->in[k + 1]]) : nd[x->in[k]];
  for (int q = 0; q < p->nins; q++) {
    const FusedIns *in = &p->ins[q];
    r[in->dst] = op_traces(in->op) && (r[in->a] || (in->b >= 0 && r[in->b]));
  }
  return r[p->ins[p->nins - 1].dst];
}

static void loop_traced(const Loop *lp, bool *dep, bool *after);

/* Whether GN_ITEM x is an item of a loop node whose inputs are its carried values' initial
** values then the outer values (a reverse loop node's are not). */
static bool loop_item(const Graph *g, const GNode *x) {
  const GNode *ln = &g->nodes[x->in[0]];
  return ln->kind == GN_LOOP && ln->loop && ln->nin == ln->loop->ncarry + ln->loop->nouter;
}

/* Whether a grad traces item x of a nested loop node (loop_item: loop_traced on that loop, from
** which of its inputs nd says are traced); the iteration count is a number no grad follows. */
static bool item_traced(const Graph *g, const GNode *x, const bool *nd) {
  const GNode *ln = &g->nodes[x->in[0]];
  bool d = false;
  const Loop *lp = ln->loop;
  int n = lp->ncarry;
  if (x->param >= n) return false;
  bool *dep = mem_calloc((size_t)(n + 1 + lp->nouter), sizeof(bool));
  for (int k = 0; k < n; k++) dep[k] = nd[ln->in[k]];
  for (int q = 0; q < lp->nouter; q++) dep[n + 1 + q] = nd[ln->in[n + q]];
  loop_traced(lp, dep, NULL);
  d = dep[x->param];
  mem_free(dep);
  return d;
}

/* Which carried values of lp a grad traces after its iterations, given which of its leaves
** (the carried values, the loop variable, the outer values) it traces before: dep[0..ncarry +
** 1 + nouter) in, its carried entries out. A fixpoint over the body, since a traced value
** carried into an iteration traces what the next computes from it; through comparisons and
** other discrete ops nothing flows, as on the grad's tape, so a value eager code leaves plain
** stays plain (sort of it is then no error; grad(jit(f)) boxed every carried value). dep's
** carried entries out are those traced after any number of iterations, none included (a value
** traced before and not assigned); after (NULL: not asked) those traced after one or more: a
** carried value the body sets from untraced values is plain after a run of at least one
** iteration, as eagerly (found by gen_diff --edge --rect: sort of it stopped grad(jit(f))). */
static void loop_traced(const Loop *lp, bool *dep, bool *after) {
  const Graph *g = lp->body;
  if (g->out.node != -2 || g->out.n < lp->ncarry) {   /* (not the carried list: all of them) */
    for (int k = 0; k < lp->ncarry; k++) dep[k] = true;
    if (after) for (int k = 0; k < lp->ncarry; k++) after[k] = true;
    return;
  }
  bool *nd = mem_calloc((size_t)(g->n > 0 ? g->n : 1), sizeof(bool));
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t i = 0; i < g->n; i++) {
      const GNode *x = &g->nodes[i];
      bool d = false;
      switch ((GKind)x->kind) {
      case GN_PARAM: d = dep[x->param]; break;
      case GN_CAPTURE: case GN_CONST: break;
      case GN_OP:
        if (op_traces(x->op))
          for (int k = 0; k < x->nin - x->nextra; k++) d = d || nd[x->in[k]];
        break;
      case GN_FUSED: d = fused_traces(x, nd); break;
      case GN_ITEM:                              /* a loop node's item: through its body */
        if (loop_item(g, x)) { d = item_traced(g, x, nd); break; }
        /* fall through */
      default:                                   /* calls, loop nodes: as their inputs */
        for (int k = 0; k < x->nin; k++) d = d || nd[x->in[k]];
        break;
      }
      nd[i] = d;
    }
    for (int k = 0; k < lp->ncarry; k++) {
      int32_t o = g->out.kids[k].node;
      if (o >= 0 && nd[o] && !dep[k]) {
        dep[k] = true;
        changed = true;
      }
    }
  }
  for (int k = 0; k < lp->ncarry && after; k++) after[k] = g->out.kids[k].node >= 0 && nd[g->out.kids[k].node];
  mem_free(nd);
}

/* The checkpointed run of iterations from .. on leaves traced by T (ckpt_tape): true, the
** leaves then hold the carried values' results, boxed as the custom node's outputs on T; false:
** a run was stale, nothing changed (the caller runs the iterations as before, which finds it). */
static bool run_ckpt(Interp *I, const Loop *lp, Tape *T, Value *leaves, int64_t from, int64_t *iters) {
  int n = lp->ncarry, no = lp->nouter, nl = n + 1 + no;
  if (n + no > LOOP_MAX_CARRY + 64) return false;
  Ckpt *ck = mem_calloc(1, sizeof *ck);
  loop_custom(&ck->c, lp, ckpt_backward, ckpt_release, ckpt_free);
  ck->lp = (Loop *)lp;
  ck->lp->refs++;
  ck->n = n;
  ck->nl = nl;
  ck->from = from;
  mls_defer(I, (CleanupFn)ad_custom_discard, ck);
  ck->c.names = mem_calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
  for (int k = 0; k < n; k++) ck->c.names[k] = lp->names[k] ? lp->names[k]->name : "?";
  int mark = I->ntmp;
  List *P = list_held_nulls(I, nl);              /* the leaves without T's boxes */
  for (int k = 0; k < nl; k++) {
    Value x = ad_finished(leaves[k]);
    if (x.t == VT_BOX && x.u.box->tape == T) x = x.u.box->v;
    val_retain(x);
    P->items[k] = x;
  }
  ck->outer = mem_calloc((size_t)(no > 0 ? no : 1), sizeof(Value));
  for (int k = 0; k < no; k++) { ck->outer[k] = P->items[n + 1 + k]; val_retain(ck->outer[k]); }
  if (ckpt_start(I, ck, lp, P->items, from)) {  /* a captured variable is gone */
    tmp_release_to(I, mark);
    mls_undefer(I, ck);
    ad_custom_discard(&ck->c);
    return false;
  }
  int64_t ran = 0, at = 0;
  char why[160];
  bool ok = run_iterations(I, lp, P->items, from, &ran, &at, why, sizeof why, ck);
  if (!ok || ran == 0) {                         /* stale (as before), or no iteration: no node */
    tmp_release_to(I, mark);
    mls_undefer(I, ck);
    ad_custom_discard(&ck->c);
    return ok;
  }
  ck->end = from + ran;
  *iters += ran;
  ck->c.iters = ran;
  ck->c.nckpt = ck->nck;
  for (int k = 0; k < n; k++) ck->c.in[k] = ad_node_on(T, leaves[k]);
  for (int k = 0; k < no; k++) ck->c.in[n + k] = ad_node_on(T, leaves[n + 1 + k]);
  int32_t cn = ad_custom_node(I, T, &ck->c, lp->span);
  mls_undefer(I, ck);                            /* (the tape's now) */
  bool *dep = mem_calloc((size_t)nl + (size_t)n + 1, sizeof(bool)), *after = dep + nl;   /* the results T traces */
  for (int k = 0; k < nl; k++) dep[k] = ad_node_on(T, leaves[k]) >= 0;
  loop_traced(lp, dep, after);                   /* (ran >= 1 iterations) */
  for (int k = 0; k < nl; k++) {
    if (k > n) break;                            /* (the outer values stay) */
    Value x = P->items[k];
    Value p = ad_primal(x);
    if (k < n && after[k] && (p.t == VT_NUM || p.t == VT_MAT)) {
      val_retain(x);
      x = ad_custom_item(I, T, cn, k, x);
    } else {
      if (k < n && lp->temp[k] && x.t == VT_NULL) continue;
      val_retain(x);
    }
    val_release(leaves[k]);
    leaves[k] = x;
  }
  mem_free(dep);
  tmp_release_to(I, mark);
  return true;
}

/* ---- reverse loop nodes: grad traced inside the stage (jit(grad(f))) ----
** When a grad that a stage is tracing follows a loop's values (its boxes wrap the stage's: the
** grad call is inside the staged code), the body is traced without the grad's boxes, and the
** loop node's run is one custom node on the grad's tape (rev_record), as a checkpointed run is
** under grad(jit(f)). Its backward pass, which the stage traces too, adds a reverse loop node
** (GN_RLOOP) to the stage's graph: its run runs the loop again with checkpoints and then
** backward, segment by segment, as the checkpointed run's backward pass does (rev_compute:
** ckpt_backward), adding the loop's contributions to the adjoint sums it is given in the order
** eager grad adds them. So the graph holds the loop twice, forward and reverse, whatever the
** trip count, and a run holds at most the checkpoints and one segment's states. */

/* The first input with i's node on the grad's tape (they share one adjoint sum). */
static int alias_of(const int32_t *gid, int i) {
  if (gid[i] < 0) return i;
  for (int j = 0; j < i; j++)
    if (gid[j] == gid[i]) return j;
  return i;
}

/* The reverse of lp on values a (plain, or boxes of traces outside: they record it): the loop's
** inputs (ncarry, then nouter), the carried values' adjoints at its end (ncarry), the inputs'
** adjoint sums so far (ncarry + nouter; VT_NULL: none). The sums with the loop's contributions
** (a list on the temp stack), or *stale (why) when a run of the body or condition was stale. */
static List *rev_compute(Interp *I, const Loop *lp, const int32_t *gid, const Value *a, bool *stale, char *why, size_t nwhy) {
  int n = lp->ncarry, no = lp->nouter, ni = n + no, nl = n + 1 + no;
  *stale = false;
  List *res = list_held_nulls(I, ni);
  Ckpt *ck = mem_calloc(1, sizeof *ck);
  loop_custom(&ck->c, lp, ckpt_backward, ckpt_release, ckpt_free);
  memcpy(ck->c.in, gid, (size_t)ni * sizeof(int32_t));
  for (int k = 0; k < n; k++) { ck->c.gout[k] = a[ni + k]; val_retain(a[ni + k]); }
  ck->lp = (Loop *)lp;
  ck->lp->refs++;
  ck->n = n;
  ck->nl = nl;
  mls_defer(I, (CleanupFn)ad_custom_discard, ck);
  int mark = I->ntmp;
  List *P = list_held_nulls(I, nl);
  for (int k = 0; k < n; k++) { P->items[k] = a[k]; val_retain(a[k]); }
  for (int q = 0; q < no; q++) { P->items[n + 1 + q] = a[n + q]; val_retain(a[n + q]); }
  ck->outer = mem_calloc((size_t)(no > 0 ? no : 1), sizeof(Value));
  for (int q = 0; q < no; q++) { ck->outer[q] = a[n + q]; val_retain(a[n + q]); }
  const GNode *gone = ckpt_start(I, ck, lp, P->items, 0);
  if (gone) {
    snprintf(why, nwhy, "the captured variable '%s' is gone", gone->sym ? gone->sym->name : "?");
    *stale = true;
    goto out;
  }
  int64_t ran = 0, at = 0;
  if (!run_iterations(I, lp, P->items, 0, &ran, &at, why, nwhy, ck)) {
    *stale = true;
    goto out;
  }
  ck->end = ran;
  ck->c.iters = ran;
  ck->c.nckpt = ck->nck;
  Value *sl[LOOP_MAX_CARRY + 64];
  for (int i = 0; i < ni; i++) {
    int j = alias_of(gid, i);
    if (j == i) { res->items[i] = a[ni + n + i]; val_retain(res->items[i]); }
    sl[i] = &res->items[j];
  }
  ckpt_backward(I, &ck->c, sl);
  for (int i = 0; i < ni; i++) {
    int j = alias_of(gid, i);
    if (j != i) { res->items[i] = res->items[j]; val_retain(res->items[i]); }
  }
out:
  tmp_release_to(I, mark);
  mls_undefer(I, ck);
  ad_custom_discard(&ck->c);
  return res;
}

Value loop_reverse_run(Interp *I, Graph *g, const GNode *nd, const Value *args, bool *stale) {
  const LoopRev *rv = nd->rev;
  int mark = I->ntmp;
  char why[160] = "";
  List *out = rev_compute(I, nd->loop, rv->gid, args, stale, why, sizeof why);
  for (int i = 0; i < rv->nin && !*stale; i++)
    if ((out->items[i].t == VT_NULL) != rv->null[i]) {   /* (a while loop that ran no iteration) */
      snprintf(why, sizeof why, "the reverse of a loop gave %s adjoint where its trace gave %s", rv->null[i] ? "an" : "no",
               rv->null[i] ? "none" : "one");
      *stale = true;
    }
  if (*stale) {
    snprintf(g->stale_why, sizeof g->stale_why, "%s", why);
    tmp_release_to(I, mark);
    return val_unbound();
  }
  List *l = list_new(I, rv->nin);
  Value r = val_list(l);
  for (int i = 0; i < rv->nin; i++) { val_retain(out->items[i]); list_push(l, out->items[i], NULL); }
  tmp_release_to(I, mark);
  return r;
}

void loop_rev_free(LoopRev *r) {
  if (!r) return;
  mem_free(r->gid);
  mem_free(r->null);
  mem_free(r);
}

/* The loop node's run on the grad's tape (rev_record): what its backward pass needs. */
typedef struct RevCk {
  AdCustom c;                /* first: the tape's view of it */
  Loop *lp;                  /* held (refs) */
  Tape *S;                   /* the stage (its boxes in vin hold it) */
  Value *vin;                /* the loop's inputs as the stage's values (retained; VT_NULL: a temporary) */
  Span sp;
} RevCk;

static void rev_release(AdCustom *c) {
  RevCk *rc = (RevCk *)c;
  for (int k = 0; rc->vin && k < c->nin; k++) val_release(rc->vin[k]);
  mem_free(rc->vin);
  rc->vin = NULL;
  Loop *lp = rc->lp;
  rc->lp = NULL;
  loop_free(lp);
}

static void rev_free(AdCustom *c) {
  mem_free((void *)c->names);
  mem_free(c);
}

/* The backward pass of the loop's run, traced by the stage: a reverse loop node, whose run at
** this trace gives the adjoint sums now (or, where the stage no longer traces, those sums). */
static void rev_backward(Interp *I, AdCustom *c, Value **slots) {
  RevCk *rc = (RevCk *)c;
  Loop *lp = rc->lp;
  int n = lp->ncarry, no = lp->nouter, ni = n + no, na = ni + n + ni;
  Tape *S = rc->S;
  bool staged = I->stage == S && S->active && S->graph && !S->graph->dynamic;
  if (staged && S->graph->abstract) interp_abstract_stop(I, rc->sp, "%s", "the reverse of a loop node runs the loop");
  if (!staged && S->active && S->graph && !S->graph->dynamic) {   /* (its values are plain from here) */
    graph_mark_dynamic(S->graph, I, rc->sp, "%s", "the reverse of a loop node ran outside its stage");
    S->active = false;
  }
  Value a[3 * (LOOP_MAX_CARRY + 64)];
  for (int i = 0; i < ni; i++) a[i] = rc->vin[i];
  for (int k = 0; k < n; k++) a[ni + k] = c->gout[k];
  for (int i = 0; i < ni; i++) a[ni + n + i] = *slots[i];
  int mark = I->ntmp;
  List *pl = list_held_nulls(I, na);
  for (int i = 0; i < na; i++) {
    Value p = ad_finished(a[i]);
    if (p.t == VT_BOX && p.u.box->tape == S) p = ad_finished(p.u.box->v);
    while (p.t == VT_BOX && p.u.box->tape->active && p.u.box->tape->graph && p.u.box->tape->id < S->id)
      p = ad_finished(p.u.box->v);                /* an enclosing stage's value: node_of below makes it an */
                                                  /* outer value of S's loop body, or S's graph dynamic */
    if (p.t == VT_BOX)
      mls_throw(I, rc->sp, "%s", "grad: the reverse of this loop meets a value another trace follows (not supported)");
    val_retain(p);
    pl->items[i] = p;
  }
  Tape *saved = I->stage;
  I->stage = NULL;                               /* (plain runs: nothing is lifted into a stage) */
  bool stale = false;
  char why[160] = "";
  List *out = rev_compute(I, lp, c->in, pl->items, &stale, why, sizeof why);
  I->stage = saved;
  if (stale) mls_throw(I, rc->sp, "grad: the loop's body, run again for its backward pass, no longer fits its graph (%s)", why);
  if (!staged) {
    for (int i = 0; i < ni; i++) {
      if (alias_of(c->in, i) != i) continue;
      val_retain(out->items[i]);
      put(slots[i], out->items[i]);
    }
    tmp_release_to(I, mark);
    return;
  }
  Graph *g = S->graph;
  int32_t *ins = mem_alloc((size_t)na * sizeof(int32_t));
  mls_defer(I, mem_free, ins);
  for (int i = 0; i < na; i++) ins[i] = stage_node_of(I, S, a[i].t == VT_UNBOUND ? val_null() : a[i], rc->sp);
  mls_undefer(I, ins);
  int32_t id = graph_add(g, GN_RLOOP, rc->sp, lp->src);
  GNode *nd = &g->nodes[id];
  nd->chain = -1;
  nd->nin = na;
  nd->in = ins;
  nd->vt = VT_LIST;
  nd->rows = ni;
  nd->loop = lp;
  lp->refs++;
  LoopRev *rv = mem_calloc(1, sizeof *rv);
  nd->rev = rv;
  rv->nin = ni;
  rv->gid = mem_alloc((size_t)(ni > 0 ? ni : 1) * sizeof(int32_t));
  memcpy(rv->gid, c->in, (size_t)ni * sizeof(int32_t));
  rv->null = mem_calloc((size_t)(ni > 0 ? ni : 1), sizeof(bool));
  for (int i = 0; i < ni; i++) rv->null[i] = out->items[i].t == VT_NULL;
  graph_log(g, "  reverse loop node: the %s loop's backward pass, its body run again from checkpoints segment by segment",
            lp->is_while ? "while" : "for");
  for (int i = 0; i < ni; i++) {
    Value r = out->items[i];
    if (alias_of(c->in, i) != i || r.t == VT_NULL) continue;
    int32_t it = graph_add(g, GN_ITEM, rc->sp, NULL);
    GNode *in = &g->nodes[it];
    in->nin = 1;
    in->in = mem_alloc(sizeof(int32_t));
    in->in[0] = id;
    in->param = i;
    in->chain = -1;
    graph_node_shape(in, r);
    val_retain(r);
    put(slots[i], ad_box_new(S, it, r));
  }
  tmp_release_to(I, mark);
}

/* The loop node just added (its results bound to the places) as one node on the grad traced
** inside the stage (L->lt.gt): its inputs the carried values' initial values and the values the
** body reads, as that grad follows them; its outputs the carried values. */
static void rev_record(Interp *I, LoopStage *L, Loop *lp) {
  Tape *G = L->lt.gt;
  int n = lp->ncarry, no = lp->nouter, ni = n + no;
  RevCk *rc = mem_calloc(1, sizeof *rc);
  loop_custom(&rc->c, lp, rev_backward, rev_release, rev_free);
  rc->c.names = mem_calloc((size_t)(n > 0 ? n : 1), sizeof(char *));
  for (int k = 0; k < n; k++) rc->c.names[k] = lp->names[k] ? lp->names[k]->name : "?";
  rc->lp = lp;
  lp->refs++;
  rc->S = L->outer;
  rc->sp = L->sp;
  rc->vin = mem_calloc((size_t)(ni > 0 ? ni : 1), sizeof(Value));
  for (int k = 0; k < n; k++) {
    Value v = L->init[k].t == VT_UNBOUND ? val_null() : ad_finished(L->init[k]);
    rc->c.in[k] = ad_node_on(G, v);
    if (v.t == VT_BOX && v.u.box->tape == G) v = ad_finished(v.u.box->v);
    val_retain(v);
    rc->vin[k] = v;
  }
  for (int q = 0; q < no; q++) {
    Value ov = L->lt.ov[q];
    val_retain(ov);
    rc->vin[n + q] = ov;
    rc->c.in[n + q] = -1;
    for (int j = 0; j < L->lt.ngv; j++) {
      Value w = ad_finished(L->lt.gv[j].u.box->v);
      if (w.t == VT_BOX && w.u.box->tape == ov.u.box->tape && w.u.box->node == ov.u.box->node) {
        rc->c.in[n + q] = ad_node_on(G, L->lt.gv[j]);
        break;
      }
    }
  }
  mls_defer(I, (CleanupFn)ad_custom_discard, rc);
  int32_t cn = ad_custom_node(I, G, &rc->c, L->sp);
  mls_undefer(I, rc);                            /* (the tape's now) */
  bool *dep = mem_calloc((size_t)(ni + 1) + (size_t)n + 1, sizeof(bool)), *after = dep + ni + 1;   /* the results G traces */
  for (int k = 0; k < n; k++) dep[k] = rc->c.in[k] >= 0;
  for (int q = 0; q < no; q++) dep[n + 1 + q] = rc->c.in[n + q] >= 0;
  /* the values traced after one iteration or more: a for loop runs that many at every run (a
  ** node's fixed sequence is longer than the unroll limit, a:b has one element or more, as in
  ** R); a while loop's trace ran one or more (its first test was true), and a later run of none
  ** is stale (loop_run: traced again, then as eager code, which hands the traced value on) */
  loop_traced(lp, dep, after);
  for (int k = 0; k < n && lp->is_while; k++)     /* (only where it changes what comes out traced) */
    if (dep[k] && !after[k]) lp->some_iter = true;
  for (int k = 0; k < n; k++) {
    Value *place = L->places[k];
    Value p = ad_primal(*place);
    if (!after[k] || ad_finished(*place).t == VT_UNBOUND || (p.t != VT_NUM && p.t != VT_MAT)) continue;
    Value v = *place;
    val_retain(v);
    put(place, ad_custom_item(I, G, cn, k, v));
  }
  mem_free(dep);
}
