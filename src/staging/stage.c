/*
** stage.c — staging by tracing: a stage tape is one more level of grad's tapes, so the op
** entry points record graph nodes through ad_apply (no second evaluator, no second copy of
** shape or derivative rules). Here: the recording hooks, jit(f) with its cache keyed by
** argument types and shapes, and the builtins jit, explain and dot.
*/
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "builtins.h"
#include "err.h"
#include "mem.h"
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

static void set_shape(GNode *nd, Value v) {
  Value p = ad_primal(v);
  nd->vt = p.t;
  if (p.t == VT_MAT) { nd->rows = tensor_rows(p.u.m); nd->cols = tensor_cols(p.u.m); }
}

/* The node of v in t's graph: its box's node, else a new constant. */
static int32_t node_of(Interp *I, Tape *t, Value v, Span sp) {
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape == t) return x.u.box->node;
  Value c = unbox(v, t);
  Graph *g = t->graph;
  if (holds_box(c, NULL)) graph_mark_dynamic(g, I, sp, "a value traced by an enclosing grad or a list of staged values is used");
  int32_t id = graph_add(g, GN_CONST, sp, NULL);
  GNode *nd = &g->nodes[id];
  val_retain(c);
  nd->v = c;
  nd->flags |= GF_CONSTANT;
  set_shape(nd, c);
  return id;
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
  GNode *nd = &g->nodes[id];
  nd->op = (uint16_t)op;
  nd->nin = n;
  nd->nextra = n - nin;
  nd->in = mem_alloc((size_t)n * sizeof(int32_t));
  memcpy(nd->in, ins, (size_t)n * sizeof(int32_t));
  bool cst = true;
  for (int k = 0; k < n; k++) cst = cst && (g->nodes[ins[k]].flags & GF_CONSTANT);
  if (cst) nd->flags |= GF_CONSTANT;
  set_shape(nd, out);
  tmp_pop(I, 1);
  return ad_box_new(t, id, out);
}

bool stage_wants_call(Interp *I, const Builtin *b, int nargs, const Value *args) {
  if (!I->stage->active || (b->flags & (BI_SHAPE | BI_LAZY))) return false;
  if (b->flags & BI_EFFECT) return true;
  if (b->flags & BI_DIFF) return false;      /* computes through ops: those are recorded */
  for (int i = 0; i < nargs; i++)
    if (holds_box(args[i], I->stage)) return true;
  return false;
}

Value stage_call(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, Span sp) {
  Tape *t = I->stage;
  Graph *g = t->graph;
  int mark = I->ntmp;
  int32_t *ins = mem_alloc((size_t)(nargs > 0 ? nargs : 1) * sizeof(int32_t));
  for (int k = 0; k < nargs; k++) ins[k] = node_of(I, t, args[k], sp);
  int32_t id = graph_add(g, GN_CALL, sp, I->src);
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
  for (int k = 0; k < nargs; k++) un[k] = unbox(args[k], t);
  Job job = { val_null(), b, nargs, un, names, sp, val_null() };
  Value r = with_stage(I, NULL, &job);           /* the call itself records nothing */
  if (r.t == VT_NULL || r.t == VT_UNBOUND) { tmp_release_to(I, mark); return r; }
  if (r.t != VT_NUM && r.t != VT_BOOL && r.t != VT_MAT && r.t != VT_STR) {   /* a list: not traced */
    graph_mark_dynamic(g, I, sp, "'%s' gives a %s computed from staged values", b->name, val_type_name(r));
    tmp_release_to(I, mark);
    return r;
  }
  nd = &g->nodes[id];
  set_shape(nd, r);
  tmp_release_to(I, mark);
  return ad_box_new(t, id, r);
}

Value stage_read(Interp *I, Value *place, Env *env, Symbol *sym) {
  Value v = *place;
  Tape *t = I->stage;
  Value p = ad_primal(v);
  bool traced = p.t == VT_NUM || p.t == VT_MAT || p.t == VT_BOOL;
  if (!t->active || !stage_outside(I, env) || !traced || unbox(v, t).t != v.t) { val_retain(v); return v; }
  for (Value x = v; x.t == VT_BOX; x = x.u.box->v)
    if (x.u.box->tape == t) { val_retain(v); return v; }
  Graph *g = t->graph;
  int32_t id = -1;
  for (int32_t i = 0; i < g->n && id < 0; i++)
    if (g->nodes[i].kind == GN_CAPTURE && g->nodes[i].place == place) id = i;
  if (id < 0) {
    id = graph_add(g, GN_CAPTURE, (Span){ 0, 0 }, NULL);
    GNode *nd = &g->nodes[id];
    nd->place = place;
    nd->penv = env;
    if (env) env->refcount++;
    nd->sym = sym;
    set_shape(nd, v);
  }
  val_retain(v);
  return ad_box_new(t, id, v);
}

/* ---- jit ---- */
typedef struct JitEntry {
  char *key;
  Graph *g;
  List *statics;             /* functions in the key, kept alive so their addresses stay theirs */
  int64_t runs;
  struct JitEntry *next;
} JitEntry;

typedef struct Jit { JitEntry *entries; int n; } Jit;
#define JIT_MAX_ENTRIES 8

static void entry_free(JitEntry *e) {
  mem_free(e->key);
  graph_free(e->g);
  if (e->statics) val_release(val_list(e->statics));
  mem_free(e);
}

void stage_jit_free(Jit *j) {
  for (JitEntry *e = j->entries, *nx; e; e = nx) { nx = e->next; entry_free(e); }
  mem_free(j);
}

typedef struct Leaves { Value *v; int n, cap; } Leaves;
static void leaf_push(Leaves *l, Value v) {
  if (l->n == l->cap) { l->cap = l->cap ? l->cap * 2 : 8; l->v = mem_realloc(l->v, (size_t)l->cap * sizeof(Value)); }
  l->v[l->n++] = v;
}

/* Appends v's part of the cache key: numbers and matrices are traced leaves (their shapes are
** the key), booleans, strings and functions are static (their values are). */
static void key_of(TextBuf *k, Value v, Leaves *lv, List *statics) {
  Value p = ad_primal(v);
  switch (p.t) {
  case VT_NUM: tb_puts(k, "n;"); leaf_push(lv, v); break;
  case VT_MAT: tb_printf(k, "m%lldx%lld;", (long long)tensor_rows(p.u.m), (long long)tensor_cols(p.u.m)); leaf_push(lv, v); break;
  case VT_BOOL: tb_printf(k, "b%d;", p.u.b); break;
  case VT_STR: tb_printf(k, "s%u:", p.u.s->len); tb_putn(k, p.u.s->s, p.u.s->len); tb_puts(k, ";"); break;
  case VT_LIST:
    tb_printf(k, "l%d(", p.u.l->n);
    for (int i = 0; i < p.u.l->n; i++) {
      if (p.u.l->names && p.u.l->names[i]) tb_printf(k, "%s=", p.u.l->names[i]->name);
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

/* v with its traced leaves replaced by boxes of t (param nodes), lists rebuilt (owned). */
static Value box_leaves(Interp *I, Tape *t, Value v, int *pi) {
  Value p = ad_primal(v);
  Graph *g = t->graph;
  if (p.t == VT_NUM || p.t == VT_MAT) {
    int32_t id = graph_add(g, GN_PARAM, (Span){ 0, 0 }, NULL);
    g->nodes[id].param = (*pi)++;
    set_shape(&g->nodes[id], v);
    val_retain(v);
    return ad_box_new(t, id, v);
  }
  if (p.t == VT_LIST && v.t == VT_LIST) {
    List *l = list_new(v.u.l->n > 0 ? v.u.l->n : 1);
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
  o->node = -1;
  val_retain(u);
  o->v = u;
}

static void collect_outs(Graph *g, const GOut *o) {
  if (o->node >= 0) {
    g->outs = mem_realloc(g->outs, (size_t)(g->nout + 1) * sizeof(int32_t));
    g->outs[g->nout++] = o->node;
  }
  for (int i = 0; i < o->n && o->kids; i++) collect_outs(g, &o->kids[i]);
}

/* v without t's boxes, lists rebuilt (owned). */
static Value strip_deep(Interp *I, Value v, Tape *t) {
  Value u = unbox(v, t);
  if (u.t != VT_LIST || !holds_box(u, NULL)) { val_retain(u); return u; }
  List *l = list_new(u.u.l->n > 0 ? u.u.l->n : 1);
  l->multi = u.u.l->multi;
  Value r = val_list(l);
  tmp_push(I, r);
  for (int i = 0; i < u.u.l->n; i++) list_push(l, strip_deep(I, u.u.l->items[i], t), u.u.l->names ? u.u.l->names[i] : NULL);
  tmp_pop(I, 1);
  return r;
}

/* Stages f on these arguments: runs it once with its leaves traced (so its effects and result
** are this call's), recording the graph. *result: f's result (owned). */
static Graph *stage_trace(Interp *I, Value f, int nargs, Value *args, Symbol **names, Span sp, Value *result) {
  int mark = I->ntmp;
  Graph *g = graph_new();
  Tape *t = ad_stage_tape(I, g);
  List *boxed = list_new(nargs > 0 ? nargs : 1);
  tmp_push(I, val_list(boxed));
  int pi = 0;
  for (int i = 0; i < nargs; i++) list_push(boxed, box_leaves(I, t, args[i], &pi), NULL);
  g->nparams = pi;
  Job job = { f, NULL, nargs, boxed->items, names, sp, val_null() };
  Tape *saved = I->stage;
  I->stage = t;
  int err = mls_pcall(I, job_run, &job);
  I->stage = saved;
  t->active = false;
  if (err) {
    t->graph = NULL;
    graph_free(g);
    mls_rethrow(I);
  }
  Value r = job.r;
  tmp_push(I, r);
  make_gout(&g->out, r, t, g);
  collect_outs(g, &g->out);
  *result = strip_deep(I, r, t);
  t->graph = NULL;
  tmp_release_to(I, mark);
  graph_count_uses(g);
  g->before = graph_live_count(g);
  g->peak_before = graph_peak_bytes(g);
  return g;
}

Value stage_call_jit(Interp *I, Jit *j, Value f, int nargs, Value *args, Symbol **names, Span sp) {
  TextBuf key;
  tb_init(&key);
  Leaves lv = { NULL, 0, 0 };
  for (int i = 0; i < nargs; i++) {
    tb_printf(&key, "%s=", names[i] ? names[i]->name : "");
    key_of(&key, args[i], &lv, NULL);
  }
  JitEntry **pe = &j->entries, *e = NULL;
  for (; *pe; pe = &(*pe)->next)
    if (strcmp((*pe)->key, key.p) == 0) { e = *pe; break; }
  if (e && e->g->dynamic) {                      /* not stageable: f runs eagerly */
    tb_free(&key);
    mem_free(lv.v);
    return call_value(I, f, nargs, args, names, sp);
  }
  if (e) {
    bool stale;
    Leaves held = lv;
    lv.v = NULL;
    List *hold = list_new(1);                      /* frees the leaf array on a throw */
    tmp_push(I, val_list(hold));
    bool framed = frame_push_staged(I, f, sp);
    Value r = graph_run(I, e->g, held.v, &stale);
    if (framed) I->nframes--;
    tmp_pop(I, 1);
    val_release(val_list(hold));
    mem_free(held.v);
    if (!stale) { e->runs++; tb_free(&key); return r; }
    *pe = e->next;                                 /* a capture changed shape: stage again */
    entry_free(e);
    j->n--;
  }
  mem_free(lv.v);
  Value r;
  Graph *g = stage_trace(I, f, nargs, args, names, sp, &r);
  tmp_push(I, r);
  if (!g->dynamic) graph_optimize(I, g);
  e = mem_calloc(1, sizeof *e);
  e->key = mem_strdup(key.p);
  tb_free(&key);
  e->g = g;
  e->statics = list_new(1);
  Leaves dummy = { NULL, 0, 0 };
  TextBuf k2;
  tb_init(&k2);
  for (int i = 0; i < nargs; i++) key_of(&k2, args[i], &dummy, e->statics);
  tb_free(&k2);
  mem_free(dummy.v);
  e->next = j->entries;
  j->entries = e;
  if (++j->n > JIT_MAX_ENTRIES) {                  /* drop the oldest */
    JitEntry **q = &j->entries;
    while ((*q)->next) q = &(*q)->next;
    entry_free(*q);
    *q = NULL;
    j->n--;
  }
  tmp_pop(I, 1);
  return r;
}

/* ---- builtins ---- */
Value bi_jit(Interp *I, Args *a) {
  Value f = a->v[0];
  if (f.t != VT_FUNC && f.t != VT_BUILTIN) {
    char d[64];
    bi_argerror(I, 1, "function expected, got %s", val_describe(f, d, sizeof d));
  }
  return ad_derived_jit(f, mem_calloc(1, sizeof(Jit)));
}

/* The arguments after f (positional and named "..."), as a call would pass them. */
static Graph *stage_for(Interp *I, Args *a, Value f, TextBuf *desc) {
  int n = a->ndots;
  for (int i = 0; i < n; i++) {
    char d[64];
    tb_printf(desc, "%s%s%s%s", i ? ", " : "", a->dotnames[i] ? a->dotnames[i]->name : "", a->dotnames[i] ? "=" : "",
              val_describe(ad_primal(a->dots[i]), d, sizeof d));
  }
  Value r;
  Graph *g = stage_trace(I, f, n, a->dots, a->dotnames, a->span, &r);
  val_release(r);
  return g;
}

static void graph_hold(Interp *I, Graph *g);

Value bi_explain(Interp *I, Args *a) {
  Value f = a->v[0];
  if (f.t != VT_FUNC && f.t != VT_BUILTIN) bi_argerror(I, 1, "function expected");
  TextBuf t;
  tb_init(&t);
  int mark = I->ntmp;
  tb_puts(&t, "explain: staged for (");
  Graph *g = stage_for(I, a, f, &t);
  graph_hold(I, g);
  tb_puts(&t, ")\n");
  tb_printf(&t, "before optimization: %d nodes, peak %zu bytes of intermediates\n", g->before, g->peak_before);
  if (!g->dynamic) graph_print(I, g, &t);
  if (g->dynamic) {
    tb_printf(&t, "not staged, runs eagerly (jit calls f as it is): %s\n", g->why);
    g->after = g->before;
  } else {
    graph_optimize(I, g);
    if (g->loglen) tb_printf(&t, "optimizations:\n%s", g->log);
    tb_printf(&t, "after optimization: %d nodes, peak %zu bytes of intermediates\n", g->after, g->peak_after);
    graph_print(I, g, &t);
  }
  fputs(t.p, I->out);
  fflush(I->out);
  tb_free(&t);
  List *l = list_new(2);
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
  int mark = I->ntmp;
  TextBuf desc, t;
  tb_init(&desc);
  Graph *g = stage_for(I, a, f, &desc);
  tb_free(&desc);
  graph_hold(I, g);
  if (!g->dynamic) graph_optimize(I, g);
  tb_init(&t);
  tb_puts(&t, "digraph mls {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n");
  graph_dot(g, &t, "forward", "f");
  Graph *gb = NULL;                        /* the backward graph: grad(f) staged the same way */
  if (g->out.node >= 0 && (g->nodes[g->out.node].vt == VT_NUM ||
                           (g->nodes[g->out.node].vt == VT_MAT && g->nodes[g->out.node].rows * g->nodes[g->out.node].cols == 1))) {
    Symbol *none[1] = { NULL };
    Value gf = bi_call(I, bi_find("grad"), 1, &f, none, a->span);
    tmp_push(I, gf);
    tb_init(&desc);
    gb = stage_for(I, a, gf, &desc);
    tb_free(&desc);
    graph_hold(I, gb);
    if (!gb->dynamic) graph_optimize(I, gb);
    graph_dot(gb, &t, "forward and backward (grad)", "b");
  }
  tb_puts(&t, "}\n");
  FILE *fp = fopen(path, "w");
  if (!fp) { tb_free(&t); bi_error(I, "cannot write '%s': %s", path, strerror(errno)); }
  size_t w = fwrite(t.p, 1, t.n, fp);
  int c = fclose(fp);
  size_t n = t.n;
  tb_free(&t);
  if (w != n || c != 0) bi_error(I, "cannot write '%s': %s", path, strerror(errno));
  tmp_release_to(I, mark);
  return val_str(path, strlen(path));
}

/* Keeps g on the temp stack (freed with it, or by a throw) inside a jit function value. */
static void graph_hold(Interp *I, Graph *g) {
  Jit *j = mem_calloc(1, sizeof *j);
  JitEntry *e = mem_calloc(1, sizeof *e);
  e->key = mem_strdup("");
  e->g = g;
  j->entries = e;
  j->n = 1;
  tmp_push(I, ad_derived_jit(val_null(), j));
}
