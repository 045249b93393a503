/*
** loop.c — loops as graph nodes (loop.h; docs/staging.md "Loops"). The body of a loop a stage
** meets is traced once, on a stage tape of its own, into a graph whose parameters are the
** variables the body assigns (the carried values), the index of a for loop and the values of the
** enclosing graph it reads; a while loop's condition is traced the same way, first. The
** remaining iterations of this (tracing) run are runs of those graphs, and the enclosing graph
** gets one GN_LOOP node, whose later runs (loop_run) run them again: the graph does not grow
** with the trip count. A loop whose body cannot be such a graph (it goes eager, a variable
** changes its type or shape) makes the enclosing stage eager from there, with the values
** computed so far: never another result than eager code.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "err.h"
#include "mem.h"
#include "staging/graph.h"
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
  val_release(L->c);
  mem_free(L->lt.ov);
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
  g->fbase = I->nframes;
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
    Value p = stage_strip(L->init[k]);
    graph_node_shape(nd, p);
    val_retain(p);
    put(L->places[k], ad_box_new(t, id, p));
  }
}

LoopStage *stage_loop_begin(Interp *I, bool is_while, int n, Value **places, Symbol **syms, Span sp) {
  Tape *o = I->stage;
  if (!o || !o->active || !o->graph || o->graph->dynamic || n > LOOP_MAX_CARRY) return NULL;
  if (o->graph->block && (I->env || o->graph->relative)) return NULL;   /* (a function's blocks) */
  for (int k = 0; k < n; k++) {
    Value v = *places[k];
    if (v.t == VT_UNBOUND) continue;
    if (ad_any_grad(1, &v) || !plain_kind(ad_primal(v))) return NULL;   /* (grad or jvp traces it) */
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
  Value u = ad_finished(v);
  *c = 0;
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
  int k = 0;
  for (; k < lt->nov; k++)
    if (lt->ov[k].u.box->tape == v.u.box->tape && lt->ov[k].u.box->node == v.u.box->node) break;
  if (k == lt->nov) {
    if (lt->nov == lt->cap) {
      lt->cap = lt->cap ? 2 * lt->cap : 8;
      lt->ov = mem_realloc(lt->ov, (size_t)lt->cap * sizeof(Value));
    }
    val_retain(v);
    lt->ov[lt->nov++] = v;
  }
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

/* Runs the loop from leaves (n carried, the index, the enclosing graph's values; held by the
** caller's list, updated in place) for iterations from .. of a for loop or, while: until the
** condition is false. *iters counts the iterations run; false: a run was stale (*at: the
** iteration it was in). */
static bool run_iterations(Interp *I, const Loop *lp, Value *leaves, int64_t from, int64_t *iters, int64_t *at, char *why,
                           size_t nwhy) {
  bool stale = false;
  int n = lp->ncarry;
  double r0 = 0, rstep = 1;
  int64_t count = lp->count;
  if (lp->range.on) range_of(I, lp, leaves, &r0, &rstep, &count);
  int mark = I->ntmp;                            /* the runs' node values, one list for all */
  int32_t most = lp->body->n > (lp->cond ? lp->cond->n : 0) ? lp->body->n : lp->cond->n;
  List *hold = list_held_nulls(I, most);
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
    graph_run_into(I, lp->body, leaves, &stale, hold, outv);
    if (stale) { snprintf(why, nwhy, "%s", lp->body->stale_why); tmp_release_to(I, mark); return false; }
    for (int k = 0; k < n; k++) {                /* (outv's references now the leaves') */
      Value x = outv[k];
      if (lp->temp[k] && x.t == VT_NULL) continue;
      val_release(leaves[k]);
      leaves[k] = x;
    }
    ++*iters;
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
  *stale = !run_iterations(I, lp, h->items, 0, &iters, NULL, why, sizeof why);
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
** loop's boxes (a grad's kept). */
static void bind_item(Interp *I, Tape *o, int32_t id, int k, Value *place) {
  int32_t it = graph_add(o->graph, GN_ITEM, o->graph->nodes[id].span, NULL);
  GNode *in = &o->graph->nodes[it];
  in->nin = 1;
  in->in = mem_alloc(sizeof(int32_t));
  in->in[0] = id;
  in->param = k;
  in->chain = -1;
  Value v = stage_strip(*place);
  graph_node_shape(in, v);
  val_retain(v);
  put(place, ad_box_new(o, it, v));
  (void)I;
}

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
    if (!plain_kind(p) || ad_any_grad(1, &v))
      snprintf(why, sizeof why, "'%s' is %s after the body", L->syms[k]->name, val_describe(p, d0, sizeof d0));
    else if (L->init[k].t != VT_UNBOUND &&
             (ip.t != p.t || (p.t == VT_MAT && (tensor_rows(p.u.m) != tensor_rows(ip.u.m) || tensor_cols(p.u.m) != tensor_cols(ip.u.m)))))
      snprintf(why, sizeof why, "'%s' changes from %s to %s in the body", L->syms[k]->name, val_describe(ip, d0, sizeof d0),
               val_describe(p, d1, sizeof d1));
  }
  if (!why[0] && n + L->lt.nov > 64) snprintf(why, sizeof why, "it carries and reads more than 64 values");
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
    h->items[k] = stage_strip(p);               /* (a grad's boxes kept: it records these runs) */
    val_retain(h->items[k]);
  }
  for (int k = 0; k < lp->nouter; k++) { h->items[n + 1 + k] = stage_strip(L->lt.ov[k]); val_retain(h->items[n + 1 + k]); }
  Tape *saved = I->stage;
  I->stage = NULL;                               /* (plain runs: nothing is lifted into a stage) */
  int64_t iters = 1, at = 1;
  char swhy[160] = "";
  bool ok = run_iterations(I, lp, h->items, 1, &iters, &at, swhy, sizeof swhy);
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
    bind_item(I, o, id, k, L->places[k]);
    if (og->block) stage_assigned(I, L->places[k], L->syms[k], NULL);   /* (an output of the block) */
  }
  if (L->range.on) bind_item(I, o, id, n + 1, L->var_place);   /* the loop variable: the range's last element */
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
  if (!lp) return;
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
