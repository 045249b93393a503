/*
** check.c — the shape analysis of mls --check and explain: an abstract interpreter over the
** tree, mapping variables to what is known of their values, running no kernel and no effect.
**
** Abstract values (check_impl.h AVal) are shapes (number with its value when known, matrix
** with known or unknown extents, string, list, function, unknown). Ops go through the shape
** rules (src/ops/shapes.h: each in its family file of src/ops/); builtins through check_builtins.c; user functions are analyzed at
** each call with the arguments' shapes (a recursion and depth bound); loops iterate until the
** shapes their variables hold stop changing (a few passes, then unknown: never an unrolling),
** branches with an unknown condition are both analyzed and their shapes joined.
**
** Only certain errors are reported: an op whose operands' shapes are known to fail, at a point
** the program reaches for certain (unless it fails earlier): not inside a branch whose
** condition is unknown, not after a possible return, break or quit, and only in the first pass
** of a loop (its first iteration). A certain error where reaching is not certain ends that path
** silently. The report is the run's: file:line:col, the source line and caret, the calls.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "check/check.h"
#include "check/check_impl.h"
#include "diag.h"
#include "err.h"
#include "mem.h"
#include "parse.h"
#include "tensor.h"

#define CHECK_BUDGET 4000000    /* nodes analyzed at most (then the check stops, finding nothing) */
#define CHECK_PASSES 8          /* a loop's passes before what still changes is widened to unknown */

/* ---- values ---- */
AVal av_any(void) { AVal v; memset(&v, 0, sizeof v); v.sh = shape_any(); return v; }
AVal av_shape(Shape s) { AVal v; memset(&v, 0, sizeof v); v.sh = s; return v; }
AVal av_num(double x) { return av_shape(shape_num(x)); }
static AVal av_null(void) { return av_shape(shape_of_kind(SK_NULL)); }
static AVal av_none(void) { return av_shape(shape_of_kind(SK_NONE)); }

void *ck_alloc(Ck *c, size_t n) { return arena_alloc(&c->arena, n ? n : 1); }

AVal av_str(Ck *c, const char *s, size_t n) {
  AVal v = av_shape(shape_of_kind(SK_STR));
  char *t = ck_alloc(c, n + 1);
  memcpy(t, s, n);
  t[n] = '\0';
  v.str = t;
  return v;
}

bool ck_alive(const Ck *c) { return c->reach <= R_MAY; }

static bool el_equal(const AVal *a, const AVal *b) {
  if (!a->el || !b->el) return a->el == b->el;
  if (a->sh.rows != b->sh.rows || a->sh.cols != b->sh.cols) return false;
  return memcmp(a->el, b->el, (size_t)(a->sh.rows * a->sh.cols) * sizeof(double)) == 0;
}

static bool av_equal(const AVal *a, const AVal *b);

static bool list_equal(const AList *a, const AList *b) {
  if (a == b) return true;
  if (!a || !b || a->n != b->n || a->multi != b->multi) return false;
  for (int32_t i = 0; i < a->n; i++) {
    if ((a->names ? a->names[i] : NULL) != (b->names ? b->names[i] : NULL)) return false;
    if (!av_equal(&a->items[i], &b->items[i])) return false;
  }
  return true;
}

static bool fn_equal(const AFunc *a, const AFunc *b) {
  if (a == b) return true;
  if (!a || !b) return false;
  return a->kind == b->kind && a->fi == b->fi && a->env == b->env && a->argnum == b->argnum && fn_equal(a->of, b->of);
}

static bool av_equal(const AVal *a, const AVal *b) {
  if (!shape_equal(a->sh, b->sh) || a->bi != b->bi) return false;
  if ((a->str == NULL) != (b->str == NULL) || (a->str && strcmp(a->str, b->str) != 0)) return false;
  return el_equal(a, b) && list_equal(a->list, b->list) && fn_equal(a->fn, b->fn);
}

/* What is known of a value that is a or b. */
static AVal av_join(Ck *c, const AVal *a, const AVal *b) {
  if (av_equal(a, b)) return *a;
  AVal r = av_shape(shape_join(a->sh, b->sh));
  if (r.sh.kind == SK_STR && a->str && b->str && strcmp(a->str, b->str) == 0) r.str = a->str;
  if (r.sh.kind == SK_MAT && el_equal(a, b)) r.el = a->el;
  if (r.sh.kind == SK_FUNC) {
    if (a->bi == b->bi) r.bi = a->bi;
    if (fn_equal(a->fn, b->fn)) r.fn = a->fn;
  }
  if (r.sh.kind == SK_LIST && a->list && b->list && a->list->n == b->list->n && a->list->multi == b->list->multi) {
    const AList *x = a->list, *y = b->list;
    bool same_names = true;
    for (int32_t i = 0; i < x->n && same_names; i++)
      same_names = (x->names ? x->names[i] : NULL) == (y->names ? y->names[i] : NULL);
    if (same_names) {
      AList *l = ck_alloc(c, sizeof *l);
      l->n = x->n;
      l->multi = x->multi;
      l->names = x->names;
      l->items = ck_alloc(c, (size_t)x->n * sizeof(AVal));
      for (int32_t i = 0; i < x->n; i++) l->items[i] = av_join(c, &x->items[i], &y->items[i]);
      r.list = l;
      r.sh.len = x->n;
    }
  }
  return r;
}

/* ---- blocks of the C heap the check frees itself (snapshots can be large and many), all
** freed at the end however the check ends ---- */
typedef struct HeapBlock { struct HeapBlock *prev, *next; } HeapBlock;

static HeapBlock *heap_list(Ck *c) { return (HeapBlock *)c->heap; }

static void *heap_alloc(Ck *c, size_t n) {
  HeapBlock *b = mem_alloc(sizeof(HeapBlock) + (n ? n : 1));
  b->prev = NULL;
  b->next = heap_list(c);
  if (b->next) b->next->prev = b;
  c->heap = b;
  return b + 1;
}

static void heap_free(Ck *c, void *p) {
  if (!p) return;
  HeapBlock *b = (HeapBlock *)p - 1;
  if (b->prev) b->prev->next = b->next;
  else c->heap = b->next;
  if (b->next) b->next->prev = b->prev;
  mem_free(b);
}

static void heap_free_all(Ck *c) {
  while (c->heap) heap_free(c, heap_list(c) + 1);
}

/* ---- the globals: an open-addressing map from Symbol to AVal ---- */
static uint32_t ptr_hash(const void *p) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (uint32_t)x;
}

static GSlot *gmap_find(const GMap *m, const Symbol *s) {
  if (!m->cap) return NULL;
  for (uint32_t i = ptr_hash(s) & (uint32_t)(m->cap - 1);; i = (i + 1) & (uint32_t)(m->cap - 1)) {
    if (m->e[i].sym == s) return &m->e[i];
    if (!m->e[i].sym) return NULL;
  }
}

static void gmap_put(Ck *c, GMap *m, Symbol *s, AVal v);

static void gmap_grow(Ck *c, GMap *m) {
  GMap old = *m;
  m->cap = old.cap ? old.cap * 2 : 64;
  m->n = 0;
  m->e = heap_alloc(c, (size_t)m->cap * sizeof(GSlot));
  memset(m->e, 0, (size_t)m->cap * sizeof(GSlot));
  for (int32_t i = 0; i < old.cap; i++)
    if (old.e[i].sym) gmap_put(c, m, old.e[i].sym, old.e[i].v);
  heap_free(c, old.e);
}

static void gmap_put(Ck *c, GMap *m, Symbol *s, AVal v) {
  GSlot *g = gmap_find(m, s);
  if (g) { g->v = v; return; }
  if ((m->n + 1) * 2 > m->cap) gmap_grow(c, m);
  uint32_t i = ptr_hash(s) & (uint32_t)(m->cap - 1);
  while (m->e[i].sym) i = (i + 1) & (uint32_t)(m->cap - 1);
  m->e[i].sym = s;
  m->e[i].v = v;
  m->n++;
}

static GMap gmap_copy(Ck *c, const GMap *m) {
  GMap r = *m;
  if (!m->cap) return r;
  r.e = heap_alloc(c, (size_t)m->cap * sizeof(GSlot));
  memcpy(r.e, m->e, (size_t)m->cap * sizeof(GSlot));
  return r;
}

/* ---- the store the running code assigns (globals at top level, else the locals) ---- */
static Snap snap_take(Ck *c) {
  Snap s;
  memset(&s, 0, sizeof s);
  s.valid = true;
  if (!c->env) {
    s.global = true;
    s.g = gmap_copy(c, &c->globals);
  } else {
    s.n = c->env->n;
    s.slots = heap_alloc(c, (size_t)s.n * sizeof(AVal));
    memcpy(s.slots, c->env->slots, (size_t)s.n * sizeof(AVal));
  }
  return s;
}

static void snap_free(Ck *c, Snap *s) {
  if (!s->valid) return;
  if (s->global) heap_free(c, s->g.e);
  else heap_free(c, s->slots);
  memset(s, 0, sizeof *s);
}

static void snap_restore(Ck *c, const Snap *s) {
  if (!s->valid) return;
  if (s->global) {
    heap_free(c, c->globals.e);
    c->globals = gmap_copy(c, &s->g);
  } else {
    memcpy(c->env->slots, s->slots, (size_t)s->n * sizeof(AVal));
  }
}

/* acc becomes what is known of a store that is acc's or s's (acc invalid: s's). */
static void snap_join(Ck *c, Snap *acc, const Snap *s) {
  if (!s->valid) return;
  if (!acc->valid) {
    *acc = *s;
    if (s->global) acc->g = gmap_copy(c, &s->g);
    else {
      acc->slots = heap_alloc(c, (size_t)s->n * sizeof(AVal));
      memcpy(acc->slots, s->slots, (size_t)s->n * sizeof(AVal));
    }
    return;
  }
  if (!s->global) {
    for (int32_t i = 0; i < s->n && i < acc->n; i++) acc->slots[i] = av_join(c, &acc->slots[i], &s->slots[i]);
    return;
  }
  AVal any = av_any();
  for (int32_t i = 0; i < acc->g.cap; i++) {          /* a name only one side assigned: unknown */
    if (!acc->g.e[i].sym) continue;
    const GSlot *o = gmap_find(&s->g, acc->g.e[i].sym);
    acc->g.e[i].v = o ? av_join(c, &acc->g.e[i].v, &o->v) : any;
  }
  for (int32_t i = 0; i < s->g.cap; i++)
    if (s->g.e[i].sym && !gmap_find(&acc->g, s->g.e[i].sym)) gmap_put(c, &acc->g, s->g.e[i].sym, any);
}

static void snap_join_current(Ck *c, Snap *acc) {
  Snap cur = snap_take(c);
  snap_join(c, acc, &cur);
  snap_free(c, &cur);
}

static bool snap_equal(const Snap *a, const Snap *b) {
  if (a->valid != b->valid) return false;
  if (!a->valid) return true;
  if (!a->global) {
    for (int32_t i = 0; i < a->n; i++)
      if (!av_equal(&a->slots[i], &b->slots[i])) return false;
    return true;
  }
  if (a->g.n != b->g.n) return false;
  for (int32_t i = 0; i < a->g.cap; i++) {
    if (!a->g.e[i].sym) continue;
    const GSlot *o = gmap_find(&b->g, a->g.e[i].sym);
    if (!o || !av_equal(&a->g.e[i].v, &o->v)) return false;
  }
  return true;
}

/* What still differs between old and new becomes unknown in new (a loop's widening). */
static void snap_widen(Snap *nw, const Snap *old, bool all) {
  AVal any = av_any();
  if (!nw->global) {
    for (int32_t i = 0; i < nw->n; i++)
      if (all || !av_equal(&nw->slots[i], &old->slots[i])) nw->slots[i] = any;
    return;
  }
  for (int32_t i = 0; i < nw->g.cap; i++) {
    if (!nw->g.e[i].sym) continue;
    const GSlot *o = gmap_find(&old->g, nw->g.e[i].sym);
    if (all || !o || !av_equal(&nw->g.e[i].v, &o->v)) nw->g.e[i].v = any;
  }
}

/* ---- runtime values (explain: f's arguments, the globals and closures it reads) ---- */
typedef struct EnvMemo { const Env *rt; AEnv *env; struct EnvMemo *next; } EnvMemo;

static AEnv *wrap_env(Ck *c, const Env *e, int depth);

static AVal av_of_value(Ck *c, Value v, int depth) {
  switch (v.t) {
  case VT_NUM: return av_num(v.u.n);
  case VT_BOOL: return av_shape(shape_bool(true, v.u.b));
  case VT_NULL: return av_null();
  case VT_STR: return av_str(c, v.u.s->s, v.u.s->len);
  case VT_MAT: {
    const Tensor *t = v.u.m;
    AVal r = av_shape(shape_mat(tensor_rows(t), tensor_cols(t)));
    int64_t n = tensor_numel(t);
    if (n <= CHECK_MAX_EL && !t->st->dev) {
      double *el = ck_alloc(c, (size_t)(n ? n : 1) * sizeof(double));
      for (int64_t k = 0; k < n; k++) el[k] = tensor_at(t, k);
      r.el = el;
      if (n == 1) { r.sh.known = true; r.sh.value = el[0]; }
    }
    return r;
  }
  case VT_LIST: {
    const List *l = v.u.l;
    AVal r = av_shape(shape_of_kind(SK_LIST));
    r.sh.len = l->n;
    if (depth > 4 || l->n > 256) return r;
    AList *a = ck_alloc(c, sizeof *a);
    a->n = l->n;
    a->multi = l->multi;
    a->items = ck_alloc(c, (size_t)(l->n ? l->n : 1) * sizeof(AVal));
    a->names = l->names ? ck_alloc(c, (size_t)l->n * sizeof(Symbol *)) : NULL;
    for (int32_t i = 0; i < l->n; i++) {
      a->items[i] = av_of_value(c, l->items[i], depth + 1);
      if (a->names) a->names[i] = l->names[i];
    }
    r.list = a;
    return r;
  }
  case VT_FUNC: {
    AVal r = av_shape(shape_of_kind(SK_FUNC));
    const Closure *cl = v.u.f;
    if (!cl->fi || cl->derived || !cl->chunk || depth > 6) return r;
    AFunc *f = ck_alloc(c, sizeof *f);
    memset(f, 0, sizeof *f);
    f->kind = AF_CLOSURE;
    f->fi = cl->fi;
    f->src = cl->chunk->src;
    f->env = wrap_env(c, cl->env, depth + 1);
    r.fn = f;
    return r;
  }
  case VT_BUILTIN: { AVal r = av_shape(shape_of_kind(SK_FUNC)); r.bi = v.u.bi; return r; }
  case VT_BOX: return av_of_value(c, ad_primal(v), depth);     /* a traced value: its value's shape */
  default: return av_any();
  }
}

/* The runtime Env e as an AEnv (one per Env: closures sharing it share it; cycles end). */
static AEnv *wrap_env(Ck *c, const Env *e, int depth) {
  if (!e) return NULL;
  for (EnvMemo *m = c->memo; m; m = m->next)
    if (m->rt == e) return m->env;
  AEnv *a = ck_alloc(c, sizeof *a);
  a->fi = e->fi;
  a->n = e->n;
  a->slots = ck_alloc(c, (size_t)(e->n ? e->n : 1) * sizeof(AVal));
  EnvMemo *m = ck_alloc(c, sizeof *m);
  m->rt = e;
  m->env = a;
  m->next = c->memo;
  c->memo = m;
  a->parent = wrap_env(c, e->parent, depth);
  for (int32_t i = 0; i < e->n; i++) a->slots[i] = e->slots[i].t == VT_UNBOUND ? av_none() : av_of_value(c, e->slots[i], depth);
  return a;
}

/* ---- errors and reaching ---- */
static void record_error(Ck *c, Span sp, const char *msg) {
  c->found = true;
  snprintf(c->err.msg, sizeof c->err.msg, "%s", msg);
  c->err.span = sp;
  c->err_src = c->src;
  c->err_nframes = c->nframes;
  memcpy(c->err_frames, c->frames, (size_t)c->nframes * sizeof(CFrame));
  longjmp(c->done, 1);
}

void ck_fail(Ck *c, Span sp, const char *fmt, ...) {
  if (!ck_alive(c)) return;
  if (c->reach == R_MUST && c->report) {
    char msg[sizeof c->err.msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    record_error(c, sp, msg);
  }
  c->reach = R_ERR;
}

void ck_die(Ck *c) {
  if (ck_alive(c)) c->reach = R_ERR;
}

static AVal av_of_rule(Shape s) {
  AVal r = av_shape(s);
  return r;
}

AVal ck_rule(Ck *c, OpKind op, const AVal *in, const ShapeExtra *x, Span sp) {
  Shape sh[3];
  int n = op_info[op].arity;
  for (int i = 0; i < n && i < 3; i++) sh[i] = in[i].sh;
  Shape out;
  ShapeError err;
  ShapeStatus st = shape_rule(op, sh, x, sp, &out, &err);
  if (st == SHAPE_ERROR) { ck_fail(c, err.span, "%s", err.msg); return av_any(); }
  if (st == SHAPE_FAILS) { ck_die(c); return av_any(); }
  return av_of_rule(out);
}

/* Anything that may leave the current construct other than by its end: breaks and nexts of
** the loop, returns of the function, quit. */
static int64_t escapes(const Ck *c) { return (c->loop ? c->loop->events : 0) + c->fn->events + c->quits; }

/* A call that is not analyzed may end the program (quit) when the program names quit. */
static void unknown_call(Ck *c) {
  if (c->has_quit && c->reach == R_MUST) c->reach = R_MAY;
}

/* ---- frames (for the "in f() at" lines) ---- */
void ck_push_frame(Ck *c, const char *name, const FuncInfo *fi, Span call_site) {
  MLS_ASSERT(c->nframes < CHECK_MAX_FRAMES);
  CFrame *f = &c->frames[c->nframes++];
  f->name = name;
  f->fi = fi;
  f->call_src = c->src;
  f->call_site = call_site;
}

void ck_pop_frame(Ck *c) { c->nframes--; }

/* ---- names ---- */
AEnv *ck_env_new(Ck *c, const FuncInfo *fi, AEnv *parent) {
  AEnv *e = ck_alloc(c, sizeof *e);
  e->fi = fi;
  e->parent = parent;
  e->n = fi->nslots;
  e->slots = ck_alloc(c, (size_t)(e->n ? e->n : 1) * sizeof(AVal));
  for (int32_t i = 0; i < e->n; i++) e->slots[i] = av_none();
  return e;
}

AVal ck_lookup_global(Ck *c, Symbol *s) {
  const GSlot *g = gmap_find(&c->globals, s);
  if (g) return g->v;
  if (c->opaque_globals) return av_any();
  if (s->global.t != VT_UNBOUND) return av_of_value(c, s->global, 0);    /* explain: as it is now */
  if (s->bi) { AVal f = av_shape(shape_of_kind(SK_FUNC)); f.bi = s->bi; return f; }
  return av_any();                      /* not found, or a builtin written in MLS (ck_lib_function) */
}

void ck_set_global(Ck *c, Symbol *s, AVal v) { gmap_put(c, &c->globals, s, v); }

static AEnv *env_at(Ck *c, int depth) {
  AEnv *e = c->env;
  while (depth-- > 0 && e) e = e->parent;
  return e;
}

static AVal *find_by_name(AEnv *e, const Symbol *s) {
  for (; e; e = e->parent)
    for (int32_t i = 0; i < e->n; i++)
      if (e->fi->slots[i] == s && e->slots[i].sh.kind != SK_NONE) return &e->slots[i];
  return NULL;
}

/* A global as eval_name reads it: a builtin written in MLS when nothing else has the name. */
static AVal read_global(Ck *c, Symbol *s, Span sp) {
  if (!gmap_find(&c->globals, s) && !c->opaque_globals && s->global.t == VT_UNBOUND && !s->bi) return ck_lib_function(c, s, sp);
  return ck_lookup_global(c, s);
}

static AVal read_name(Ck *c, AstNode *n) {
  if (n->slot < 0) return read_global(c, n->u.sym, n->span);
  AEnv *e = env_at(c, n->depth);
  if (!e || n->slot >= e->n) return av_any();
  AVal v = e->slots[n->slot];
  if (v.sh.kind != SK_NONE) return v;
  AVal *p = find_by_name(e->parent, n->u.sym);
  return p ? *p : read_global(c, n->u.sym, n->span);
}

static void assign_name(Ck *c, AstNode *n, AVal v) {
  if (n->slot < 0) { ck_set_global(c, n->u.sym, v); return; }
  AEnv *e = env_at(c, n->depth);
  if (e && n->slot < e->n) e->slots[n->slot] = v;
}

/* ---- evaluation ---- */
static AVal ev(Ck *c, AstNode *n);

static bool param_given(Ck *c, const Symbol *s) {
  for (int i = 0; i < c->I->nparams; i++)
    if (c->I->params[i].name == s) return true;
  return false;
}

/* val_truth: 1, 0, or -1 not known; a certain error fails. */
static int truth(Ck *c, AVal v, Span sp) {
  char d[64];
  switch (v.sh.kind) {
  case SK_BOOL: return v.sh.known ? v.sh.value != 0 : -1;
  case SK_NUM:
    if (!v.sh.known) return -1;
    if (isnan(v.sh.value)) { ck_fail(c, sp, mls_is_na(v.sh.value) ? "missing value where TRUE/FALSE needed" : "condition is NaN"); return -1; }
    return v.sh.value != 0;
  case SK_MAT:
    if (v.sh.rows >= 0 && v.sh.cols >= 0) {
      if (v.sh.rows * v.sh.cols == 1) {
        if (!v.sh.known) return -1;
        if (isnan(v.sh.value)) { ck_fail(c, sp, mls_is_na(v.sh.value) ? "missing value where TRUE/FALSE needed" : "condition is NaN"); return -1; }
        return v.sh.value != 0;
      }
      shape_describe(v.sh, d, sizeof d);
      ck_fail(c, sp, "condition must be a boolean, a number or a 1x1 matrix, got %s", d);
      return -1;
    }
    if (v.sh.rows == 0 || v.sh.cols == 0 || v.sh.rows > 1 || v.sh.cols > 1) ck_die(c);
    return -1;
  case SK_STR: case SK_LIST: case SK_FUNC: case SK_NULL:
    if (!shape_describe(v.sh, d, sizeof d)) { ck_die(c); return -1; }
    ck_fail(c, sp, "condition must be a boolean, a number or a 1x1 matrix, got %s", d);
    return -1;
  default: return -1;
  }
}

/* scalar_truth for '&&' and '||'. */
static int scalar_truth(Ck *c, AstNode *n, const char *op) {
  AVal v = ev(c, n);
  if (!ck_alive(c)) return -1;
  if (v.sh.kind == SK_MAT && v.sh.rows >= 0 && v.sh.cols >= 0 && v.sh.rows * v.sh.cols != 1) {
    char d[64];
    shape_describe(v.sh, d, sizeof d);
    ck_fail(c, n->span, "'%s' takes a boolean or a number, got %s (use '%c' for elementwise)", op, d, op[0]);
    return -1;
  }
  if (v.sh.kind == SK_MAT && (v.sh.rows < 0 || v.sh.cols < 0) && (v.sh.rows == 0 || v.sh.cols == 0 || v.sh.rows > 1 || v.sh.cols > 1)) {
    ck_die(c);
    return -1;
  }
  return truth(c, v, n->span);
}

static AVal ev_andor(Ck *c, AstNode *n, bool and) {
  const char *op = and ? "&&" : "||";
  int a = scalar_truth(c, n->kids[0], op);
  if (!ck_alive(c)) return av_any();
  if (a == (and ? 0 : 1)) return av_shape(shape_bool(true, !and));
  int r0 = c->reach;
  if (a < 0 && c->reach == R_MUST) c->reach = R_MAY;      /* the right side may not run */
  int b = scalar_truth(c, n->kids[1], op);
  bool died = !ck_alive(c);
  if (a < 0) c->reach = r0;                                /* (its certain error may not happen) */
  else if (died) return av_any();
  if (a >= 0 && b >= 0) return av_shape(shape_bool(true, b != 0));
  return av_shape(shape_bool(false, false));
}

static AVal ev_block(Ck *c, AstNode *n) {
  AVal v = av_null();
  for (uint32_t i = 0; i < n->nkids; i++) {
    v = ev(c, n->kids[i]);
    if (!ck_alive(c)) return av_any();
  }
  return v;
}

/* The reaching after a construct whose paths ended in reach a and b (R_* each), entered at r0,
** when something inside may have left it (left). */
static int after_branches(int r0, int a, int b, bool left) {
  bool la = a <= R_MAY, lb = b <= R_MAY;
  if (!la && !lb) return a == R_EXIT || b == R_EXIT ? R_EXIT : R_ERR;
  return left ? R_MAY : r0;
}

static AVal ev_if(Ck *c, AstNode *n) {
  AVal cond = ev(c, n->kids[0]);
  if (!ck_alive(c)) return av_any();
  int t = truth(c, cond, n->kids[0]->span);
  if (!ck_alive(c)) return av_any();
  if (t == 1) return ev(c, n->kids[1]);
  if (t == 0) return n->nkids > 2 ? ev(c, n->kids[2]) : av_null();
  int r0 = c->reach;
  Snap s0 = snap_take(c);
  int64_t e0 = escapes(c);
  c->reach = R_MAY;
  AVal vt = ev(c, n->kids[1]);
  int rt = c->reach;
  bool left = escapes(c) != e0;
  Snap st;
  memset(&st, 0, sizeof st);
  if (rt <= R_MAY) st = snap_take(c);
  snap_restore(c, &s0);
  int64_t e1 = escapes(c);
  c->reach = R_MAY;
  AVal ve = n->nkids > 2 ? ev(c, n->kids[2]) : av_null();
  int re = c->reach;
  left = left || escapes(c) != e1;
  AVal v;
  if (rt <= R_MAY && re <= R_MAY) {
    snap_join_current(c, &st);
    snap_restore(c, &st);
    v = av_join(c, &vt, &ve);
  } else if (rt <= R_MAY) {
    snap_restore(c, &st);
    v = vt;
  } else v = re <= R_MAY ? ve : av_any();
  snap_free(c, &s0);
  snap_free(c, &st);
  c->reach = after_branches(r0, rt, re, left);
  return v;
}

/* The reaching after a loop entered at r0: returns or quits inside make it may-be. */
static void after_loop(Ck *c, int r0, int64_t fe0, int64_t q0, bool exits) {
  bool left = c->fn->events != fe0 || c->quits != q0;
  if (!exits) { c->reach = left ? R_EXIT : R_ERR; return; }
  c->reach = left ? R_MAY : r0;
}

/* The end of a pass over a loop's body: the state there (with the next's) joined into the loop
** head's *T (and into *ends when not NULL), widened after CHECK_PASSES passes. True when *T did
** not change: the fixpoint, no more passes. */
static bool loop_pass_end(Ck *c, LoopCtx *L, Snap *T, int pass, Snap *ends) {
  Snap E;
  memset(&E, 0, sizeof E);
  if (ck_alive(c)) E = snap_take(c);
  snap_join(c, &E, &L->nxt);
  if (ends) snap_join(c, ends, &E);
  Snap nT;
  memset(&nT, 0, sizeof nT);
  snap_join(c, &nT, T);
  snap_join(c, &nT, &E);
  snap_free(c, &E);
  bool same = snap_equal(&nT, T);
  if (!same && pass >= CHECK_PASSES) snap_widen(&nT, T, pass >= CHECK_PASSES + 1);
  snap_free(c, T);
  *T = nT;
  return same;
}

static AVal ev_while(Ck *c, AstNode *n) {
  int r0 = c->reach;
  bool rep0 = c->report;
  LoopCtx L;
  memset(&L, 0, sizeof L);
  L.outer = c->loop;
  c->loop = &L;
  int64_t fe0 = c->fn->events, q0 = c->quits;
  Snap T = snap_take(c), ex;
  memset(&ex, 0, sizeof ex);
  for (int pass = 0;; pass++) {
    snap_restore(c, &T);
    c->reach = pass == 0 ? r0 : R_MAY;
    c->report = rep0 && pass == 0;
    AVal cond = ev(c, n->kids[0]);
    int t = ck_alive(c) ? truth(c, cond, n->kids[0]->span) : -1;
    if (!ck_alive(c)) break;                        /* the condition fails: no more passes */
    if (t != 1) snap_join_current(c, &ex);          /* the loop may end here */
    if (t == 0) break;
    if (c->reach == R_MUST && t != 1) c->reach = R_MAY;
    ev(c, n->kids[1]);
    if (loop_pass_end(c, &L, &T, pass, NULL)) break;
  }
  snap_join(c, &ex, &L.brk);
  bool exits = ex.valid;
  if (exits) snap_restore(c, &ex);
  else snap_restore(c, &T);
  snap_free(c, &T);
  snap_free(c, &ex);
  snap_free(c, &L.brk);
  snap_free(c, &L.nxt);
  c->loop = L.outer;
  c->report = rep0;
  after_loop(c, r0, fe0, q0, exits);
  return av_null();
}

/* The start of ':' of a for loop: val_to_num's checks. */
static bool loop_end(Ck *c, AVal v, AstNode *at, const char *what, double *x, bool *known) {
  char d[64];
  *known = false;
  if (v.sh.kind == SK_NUM || v.sh.kind == SK_BOOL || (v.sh.kind == SK_MAT && v.sh.rows == 1 && v.sh.cols == 1)) {
    *known = v.sh.known;
    *x = v.sh.value;
    return true;
  }
  if (v.sh.kind == SK_MAT && v.sh.rows >= 0 && v.sh.cols >= 0) {
    shape_describe(v.sh, d, sizeof d);
    ck_fail(c, at->span, "%s must be a number, got %s", what, d);
    return false;
  }
  if (v.sh.kind == SK_STR || v.sh.kind == SK_LIST || v.sh.kind == SK_FUNC || v.sh.kind == SK_NULL) {
    shape_describe(v.sh, d, sizeof d);
    ck_fail(c, at->span, "%s must be a number, got %s", what, d);
    return false;
  }
  if (v.sh.kind == SK_MAT && (v.sh.rows == 0 || v.sh.cols == 0 || v.sh.rows > 1 || v.sh.cols > 1)) { ck_die(c); return false; }
  return true;
}

static AVal ev_for(Ck *c, AstNode *n) {
  AstNode *var = n->kids[0], *iter = n->kids[1], *body = n->kids[2];
  int64_t cnt = -1;
  AVal first = av_any(), item = av_any();
  if (iter->kind == AST_BINARY && iter->op == OP_RANGE) {
    AVal a = ev(c, iter->kids[0]);
    AVal b = ck_alive(c) ? ev(c, iter->kids[1]) : av_any();
    double from = 0, to = 0;
    bool ka, kb;
    if (!ck_alive(c) || !loop_end(c, a, iter->kids[0], "the start of ':'", &from, &ka) ||
        !loop_end(c, b, iter->kids[1], "the end of ':'", &to, &kb))
      return av_any();
    if ((ka && !isfinite(from)) || (kb && !isfinite(to))) { ck_fail(c, iter->span, "the ends of ':' must be finite numbers"); return av_any(); }
    if (ka && kb) {
      if (fabs(to - from) >= 1e15) { ck_fail(c, iter->span, "the range of ':' is too long"); return av_any(); }
      cnt = op_range_length(from, to);
    } else cnt = -2;                                  /* at least one iteration */
    first = ka ? av_num(from) : av_shape(shape_num_unknown());
    item = cnt == 1 ? first : av_shape(shape_num_unknown());
  } else {
    AVal seq = ev(c, iter);
    if (!ck_alive(c)) return av_any();
    switch (seq.sh.kind) {
    case SK_MAT:
      if (seq.sh.rows >= 0 && seq.sh.cols >= 0) cnt = seq.sh.rows * seq.sh.cols;
      first = seq.el && cnt > 0 ? av_num(seq.el[0]) : av_shape(shape_num_unknown());
      item = cnt == 1 ? first : av_shape(shape_num_unknown());
      break;
    case SK_LIST:
      if (seq.list) {
        cnt = seq.list->n;
        if (cnt > 0) {
          first = seq.list->items[0];
          item = first;
          for (int32_t i = 1; i < seq.list->n; i++) item = av_join(c, &item, &seq.list->items[i]);
        }
      } else if (seq.sh.len >= 0) cnt = seq.sh.len;
      break;
    case SK_NULL: cnt = 0; break;
    case SK_NUM: case SK_BOOL: case SK_STR: cnt = 1; first = item = seq; break;
    case SK_FUNC: ck_fail(c, iter->span, "cannot iterate over a function"); return av_any();
    case SK_NUMERIC: first = item = av_shape(shape_numeric()); break;
    default: break;
    }
  }
  if (cnt == 0) return av_null();
  bool must_enter = cnt >= 1 || cnt == -2;
  int r0 = c->reach;
  bool rep0 = c->report;
  LoopCtx L;
  memset(&L, 0, sizeof L);
  L.outer = c->loop;
  c->loop = &L;
  int64_t fe0 = c->fn->events, q0 = c->quits;
  Snap T = snap_take(c), ends;
  memset(&ends, 0, sizeof ends);
  for (int pass = 0;; pass++) {
    snap_restore(c, &T);
    c->reach = pass == 0 && must_enter ? r0 : R_MAY;
    c->report = rep0 && pass == 0;
    assign_name(c, var, pass == 0 ? first : item);
    ev(c, body);
    if (loop_pass_end(c, &L, &T, pass, &ends)) break;
  }
  Snap after;
  memset(&after, 0, sizeof after);
  if (must_enter) snap_join(c, &after, &ends);
  else snap_join(c, &after, &T);
  snap_join(c, &after, &L.brk);
  bool exits = after.valid;
  snap_restore(c, exits ? &after : &T);
  snap_free(c, &after);
  snap_free(c, &ends);
  snap_free(c, &T);
  snap_free(c, &L.brk);
  snap_free(c, &L.nxt);
  c->loop = L.outer;
  c->report = rep0;
  after_loop(c, r0, fe0, q0, exits);
  return av_null();
}

/* ---- calls ---- */
/* type_ok of eval.c: 1 passes, 0 certainly fails, -1 cannot tell. */
static int type_ok(uint8_t ty, AVal v) {
  int k = v.sh.kind;
  if (ty == TY_ANY) return 1;
  if (k == SK_ANY || k == SK_NONE) return -1;
  if (k == SK_NUMERIC) return ty == TY_STRING || ty == TY_LIST || ty == TY_FUNC ? 0 : -1;
  switch (ty) {
  case TY_MATRIX: return k == SK_MAT;
  case TY_DOUBLE: case TY_BOOL: return k == SK_NUM || k == SK_BOOL;
  case TY_INT:
    if (k == SK_BOOL) return 1;
    if (k != SK_NUM) return 0;
    return v.sh.known ? v.sh.value == floor(v.sh.value) : -1;
  case TY_STRING: return k == SK_STR;
  case TY_LIST: return k == SK_LIST;
  case TY_FUNC: return k == SK_FUNC;
  default: return -1;
  }
}

static AVal call_closure(Ck *c, const AFunc *f, int nargs, AVal *args, Symbol **names, Span sp, bool report) {
  const FuncInfo *fi = f->fi;
  int same = 0;
  for (int i = 0; i < c->nframes; i++) same += c->frames[i].fi == fi;
  if (c->nframes >= CHECK_MAX_FRAMES - 1 || same >= 2) { unknown_call(c); return av_any(); }
  AEnv *env = ck_env_new(c, fi, f->env);
  bool bound[fi->nparams > 0 ? fi->nparams : 1];
  for (int j = 0; j < fi->nparams; j++) bound[j] = false;
  for (int i = 0; i < nargs; i++) {                 /* named first, then positional (R's matching) */
    if (!names[i]) continue;
    int k = -1;
    for (int j = 0; j < fi->nparams; j++)
      if (fi->params[j].name == names[i]) { k = j; break; }
    if (k < 0) { ck_die(c); return av_any(); }
    env->slots[k] = args[i];
    bound[k] = true;
  }
  int next = 0;
  for (int i = 0; i < nargs; i++) {
    if (names[i]) continue;
    while (next < fi->nparams && bound[next]) next++;
    if (next >= fi->nparams) { ck_die(c); return av_any(); }
    env->slots[next] = args[i];
    bound[next++] = true;
  }
  for (int j = 0; j < fi->nparams; j++) {
    if (!bound[j] && !fi->params[j].dflt) { ck_die(c); return av_any(); }
    if (bound[j] && type_ok(fi->params[j].type, env->slots[j]) == 0) { ck_die(c); return av_any(); }
  }
  ck_push_frame(c, fi->name ? fi->name->name : "<anonymous>", fi, sp);
  AEnv *saved_env = c->env;
  Source *saved_src = c->src;
  LoopCtx *saved_loop = c->loop;
  FnCtx *saved_fn = c->fn;
  bool saved_report = c->report;
  int r0 = c->reach;
  int64_t q0 = c->quits;
  FnCtx fc;
  memset(&fc, 0, sizeof fc);
  fc.outer = saved_fn;
  c->env = env;
  c->src = f->src;
  c->loop = NULL;
  c->fn = &fc;
  c->report = saved_report && report;
  for (int j = 0; j < fi->nparams && ck_alive(c); j++) {   /* defaults, at call time, in the callee */
    if (bound[j]) continue;
    AVal d = ev(c, fi->params[j].dflt);
    if (ck_alive(c) && type_ok(fi->params[j].type, d) == 0) ck_die(c);
    env->slots[j] = d;
  }
  AVal body = ck_alive(c) ? ev(c, fi->body) : av_any();
  bool fell = ck_alive(c);
  bool any_path = fell || fc.has_ret;
  AVal r = av_any();
  if (!fi->rets) {
    if (fell && fc.has_ret) r = av_join(c, &body, &fc.ret);
    else if (fell) r = body;
    else if (fc.has_ret) r = fc.ret;
  } else if (any_path) {
    if (fell) snap_join_current(c, &fc.retenv);
    AVal *vals = ck_alloc(c, (size_t)fi->nrets * sizeof(AVal));
    for (int k = 0; k < fi->nrets; k++) {
      const Param *p = &fi->rets[k];
      int s = 0;
      while (s < fi->nslots && fi->slots[s] != p->name) s++;
      vals[k] = s < fc.retenv.n ? fc.retenv.slots[s] : av_any();
      if (vals[k].sh.kind == SK_NONE) any_path = false;    /* "result 'x' of f() was not assigned" */
      else if (type_ok(p->type, vals[k]) == 0) any_path = false;
    }
    if (fi->nrets == 1) r = vals[0];
    else {
      AList *l = ck_alloc(c, sizeof *l);
      l->n = fi->nrets;
      l->multi = true;
      l->items = vals;
      l->names = ck_alloc(c, (size_t)fi->nrets * sizeof(Symbol *));
      for (int k = 0; k < fi->nrets; k++) l->names[k] = fi->rets[k].name;
      r = av_shape(shape_of_kind(SK_LIST));
      r.sh.len = fi->nrets;
      r.list = l;
    }
  }
  snap_free(c, &fc.retenv);
  c->env = saved_env;
  c->src = saved_src;
  c->loop = saved_loop;
  c->fn = saved_fn;
  c->report = saved_report;
  ck_pop_frame(c);
  if (!any_path) { c->reach = c->quits != q0 ? R_EXIT : R_ERR; return av_any(); }
  c->reach = c->quits != q0 && r0 == R_MUST ? R_MAY : r0;
  return r;
}

AVal ck_call(Ck *c, AVal fn, int nargs, AVal *args, Symbol **names, Span sp, bool report) {
  if (!ck_alive(c)) return av_any();
  if (fn.sh.kind == SK_FUNC && fn.bi) return ck_builtin(c, fn.bi, nargs, args, names, sp);
  if (fn.sh.kind == SK_FUNC && fn.fn) {
    const AFunc *f = fn.fn;
    if (f->kind == AF_CLOSURE) return call_closure(c, f, nargs, args, names, sp, report);
    AVal r = f->of && f->of->kind == AF_CLOSURE ? call_closure(c, f->of, nargs, args, names, sp, false) : av_any();
    if (!ck_alive(c)) return av_any();
    if (f->kind == AF_GRAD && f->argnum >= 1 && f->argnum <= nargs) {   /* the argument's structure */
      int k = 0, pos = 0;
      for (; k < nargs; k++)
        if (!names[k] && ++pos == f->argnum) break;
      if (k < nargs && pos == f->argnum && f->of && f->of->fi->nparams >= f->argnum && !names[k]) {
        Shape s = args[k].sh;
        if (s.kind == SK_NUM || s.kind == SK_BOOL) return av_shape(shape_num_unknown());
        if (s.kind == SK_MAT) return av_shape(shape_mat(s.rows, s.cols));
      }
    }
    (void)r;
    return av_any();
  }
  if (fn.sh.kind == SK_FUNC || fn.sh.kind == SK_ANY || fn.sh.kind == SK_NONE) { unknown_call(c); return av_any(); }
  ck_die(c);                                          /* "attempt to call a 3x4 matrix" */
  return av_any();
}

static bool is_fn(AVal v) { return v.sh.kind == SK_FUNC; }

/* lookup_function of eval.c: a call skips variables that are not functions. */
static AVal lookup_function(Ck *c, AstNode *f) {
  if (f->kind != AST_NAME) return ev(c, f);
  if (f->flags & AST_F_OWNFN) {                      /* a .dml namespace's call: a builtin */
    if (f->u.sym->bi) { AVal b = av_shape(shape_of_kind(SK_FUNC)); b.bi = f->u.sym->bi; return b; }
    return ck_lib_function(c, f->u.sym, f->span);
  }
  AVal v = read_name(c, f);
  if (is_fn(v)) return v;
  if (v.sh.kind == SK_ANY || v.sh.kind == SK_NONE) return av_any();
  for (AEnv *e = c->env; e; e = e->parent)
    for (int32_t i = 0; i < e->n; i++)
      if (e->fi->slots[i] == f->u.sym && is_fn(e->slots[i])) return e->slots[i];
  AVal g = ck_lookup_global(c, f->u.sym);
  if (is_fn(g)) return g;
  if (g.sh.kind == SK_ANY) return av_any();
  if (f->u.sym->bi) { AVal b = av_shape(shape_of_kind(SK_FUNC)); b.bi = f->u.sym->bi; return b; }
  return c->opaque_globals ? av_any() : ck_lib_function(c, f->u.sym, f->span);
}

static AVal ev_call(Ck *c, AstNode *n) {
  AVal fn = lookup_function(c, n->kids[0]);
  if (!ck_alive(c)) return av_any();
  int nargs = (int)n->nkids - 1;
  if (nargs > 1000) { ck_die(c); return av_any(); }
  if (fn.bi && (fn.bi->flags & BI_IFDEF) && nargs == 2 && n->kids[1]->kind == AST_CLPARAM && !param_given(c, n->kids[1]->u.sym))
    return ev(c, n->kids[2]);
  if (fn.bi && (fn.bi->flags & BI_LAZY)) {            /* system.time(expr): expr runs once */
    /* tryCatch(expr, error = ...): an error in expr is caught, so none inside is certain, and
    ** the path goes on after the call (the handlers may run, or not) */
    bool catches = strcmp(fn.bi->name, "tryCatch") == 0;
    int r0 = c->reach;
    for (int i = 0; i < nargs && ck_alive(c); i++) {
      if (catches && c->reach == R_MUST) c->reach = R_MAY;
      ev(c, n->kids[i + 1]->kind == AST_ARG ? n->kids[i + 1]->kids[0] : n->kids[i + 1]);
      if (catches && c->reach == R_ERR) c->reach = r0 == R_MUST ? R_MAY : r0;
    }
    if (catches && ck_alive(c)) c->reach = r0;
    return av_any();
  }
  AVal args[nargs > 0 ? nargs : 1];
  Symbol *names[nargs > 0 ? nargs : 1];
  for (int i = 0; i < nargs; i++) {
    AstNode *a = n->kids[i + 1];
    if (a->kind == AST_ARG) { names[i] = a->u.sym; a = a->kids[0]; }
    else names[i] = NULL;
    args[i] = ev(c, a);
    if (!ck_alive(c)) return av_any();
  }
  return ck_call(c, fn, nargs, args, names, n->span, true);
}

/* ---- matrix literals (eval_matrix) ---- */
static AVal ev_matrix(Ck *c, AstNode *n) {
  if (n->nkids == 0) { AVal r = av_shape(shape_mat(0, 0)); r.el = ck_alloc(c, sizeof(double)); return r; }
  int64_t total = 0, width = -1;
  bool total_known = true, width_known = true, sure = true, scalars = true;
  double el[CHECK_MAX_EL];
  int nel = 0;
  char d[64];
  for (uint32_t r = 0; r < n->nkids; r++) {
    AstNode *row = n->kids[r];
    int64_t h = -1, w = 0;
    bool h_set = false, h_known = true, w_known = true;
    for (uint32_t k = 0; k < row->nkids; k++) {
      AVal v = ev(c, row->kids[k]);
      if (!ck_alive(c)) return av_any();
      int64_t bh, bw;
      int kind = v.sh.kind;
      if (kind == SK_NUM || kind == SK_BOOL) {
        bh = bw = 1;
        if (v.sh.known && nel < CHECK_MAX_EL) el[nel] = v.sh.value;
        if (!v.sh.known) scalars = false;
        nel++;
      } else if (kind == SK_MAT) {
        bh = v.sh.rows;
        bw = v.sh.cols;
        scalars = false;
      } else if (kind == SK_STR && n->nkids == 1 && row->nkids == 1) {
        return v;                                      /* ["b"]: the string (L[["b"]], eval.c) */
      } else if (kind == SK_STR || kind == SK_LIST || kind == SK_FUNC || kind == SK_NULL) {
        if (!sure || !shape_describe(v.sh, d, sizeof d)) { ck_die(c); return av_any(); }
        ck_fail(c, row->kids[k]->span, "a matrix literal holds numbers and matrices, got %s", d);
        return av_any();
      } else {
        bh = bw = -1;
        sure = false;
        scalars = false;
      }
      if (h_set && h_known && bh >= 0 && bh != h) {
        if (!sure) { ck_die(c); return av_any(); }
        ck_fail(c, row->kids[k]->span, "blocks in a row of a matrix literal must have the same number of rows: %lld and %lld",
                (long long)h, (long long)bh);
        return av_any();
      }
      h_set = true;
      h = bh;
      h_known = bh >= 0;
      if (bw < 0) w_known = false;
      else w += bw;
    }
    if (r > 0 && width_known && w_known && w != width) {
      if (!sure) { ck_die(c); return av_any(); }
      ck_fail(c, row->span, "rows of a matrix literal must have the same number of columns: %lld and %lld", (long long)width,
              (long long)w);
      return av_any();
    }
    width = w;
    width_known = w_known;
    if (!h_known || !h_set) total_known = false;
    else total += h;
  }
  AVal res = av_shape(shape_mat(total_known ? total : SHAPE_UNKNOWN, width_known ? width : SHAPE_UNKNOWN));
  if (scalars && nel <= CHECK_MAX_EL && total_known && width_known && total * width == nel) {
    double *e = ck_alloc(c, (size_t)(nel ? nel : 1) * sizeof(double));
    memcpy(e, el, (size_t)nel * sizeof(double));
    res.el = e;
    if (nel == 1) { res.sh.known = true; res.sh.value = e[0]; }
  }
  return res;
}

/* ---- indexing ---- */
/* The indices of X[...] evaluated into ix[] (and their values into iv[]). */
static bool eval_indices(Ck *c, AstNode *n, ShapeIndex *ix, AVal *iv) {
  uint32_t nix = n->nkids - 1;
  for (uint32_t i = 0; i < nix && i < 2; i++) {
    AstNode *k = n->kids[i + 1];
    memset(&ix[i], 0, sizeof ix[i]);
    iv[i] = av_any();
    if (!k) { ix[i].kind = SIX_ALL; continue; }
    if (k->kind == AST_BINARY && k->op == OP_RANGE) {
      AVal a = ev(c, k->kids[0]);
      AVal b = ck_alive(c) ? ev(c, k->kids[1]) : av_any();
      ix[i].kind = SIX_RANGE;
      ix[i].from = a.sh;
      ix[i].to = b.sh;
      ix[i].span = k->span;
    } else {
      iv[i] = ev(c, k);
      ix[i].kind = SIX_VALUE;
      ix[i].v = iv[i].sh;
    }
    if (!ck_alive(c)) return false;
  }
  return true;
}

/* L[k] of a list (list_index). */
static AVal list_index(Ck *c, AVal x, uint32_t nix, const ShapeIndex *ix, const AVal *iv, Span sp) {
  if (nix != 1 || ix[0].kind == SIX_ALL) { ck_fail(c, sp, "a list takes one index: L[k] or L[\"name\"]"); return av_any(); }
  if (ix[0].kind != SIX_VALUE) return av_any();
  AVal k = iv[0];
  const AList *l = x.list;
  if (k.sh.kind == SK_STR) {
    if (!l || !k.str) return av_any();
    for (int32_t i = 0; i < l->n; i++)
      if (l->names && l->names[i] && strcmp(l->names[i]->name, k.str) == 0) return l->items[i];
    return av_null();
  }
  if ((k.sh.kind == SK_NUM || k.sh.kind == SK_BOOL) && k.sh.known) {
    int32_t len = l ? l->n : x.sh.len;
    if (len < 0) return av_any();
    double d = k.sh.value;
    if (!(d >= 1 && d < (double)len + 1)) { ck_fail(c, sp, "index %g out of bounds for a list of %d", d, (int)len); return av_any(); }
    return l ? l->items[(int32_t)d - 1] : av_any();
  }
  return av_any();
}

/* x["b"]: an index by names (a vector's, eval.c index_named), which shapes do not carry. */
static bool names_index(const AVal *iv, uint32_t nix) {
  for (uint32_t i = 0; i < nix; i++)
    if (iv[i].sh.kind == SK_STR || iv[i].sh.kind == SK_LIST) return true;
  return false;
}

static AVal ev_index(Ck *c, AstNode *n) {
  AVal x = ev(c, n->kids[0]);
  if (!ck_alive(c)) return av_any();
  uint32_t nix = n->nkids - 1;
  ShapeIndex ix[2];
  AVal iv[2];
  if (nix < 1 || nix > 2 || !eval_indices(c, n, ix, iv)) return av_any();
  if (x.sh.kind == SK_LIST) return list_index(c, x, nix, ix, iv, n->span);
  if (names_index(iv, nix)) return av_any();
  ShapeExtra ex;
  memset(&ex, 0, sizeof ex);
  ex.nix = (int)nix;
  ex.ix = ix;
  ex.dml_row = (n->flags & AST_F_DMLROW) != 0;
  AVal r = ck_rule(c, OP_INDEX, &x, &ex, n->span);
  if (!ck_alive(c) || r.sh.kind != SK_NUM || !x.el || x.sh.rows < 0 || x.sh.cols < 0) return r;
  int64_t pos[2] = { 0, 0 };                         /* an element of known elements */
  bool ok = true;
  for (uint32_t i = 0; i < nix; i++)
    ok = ok && ix[i].kind == SIX_VALUE && ix[i].v.kind == SK_NUM && ix[i].v.known;
  if (!ok) return r;
  if (nix == 2 && !ex.dml_row) { pos[0] = (int64_t)ix[0].v.value - 1; pos[1] = (int64_t)ix[1].v.value - 1; }
  else if (nix == 1 && x.sh.rows == 1) pos[1] = (int64_t)ix[0].v.value - 1;
  else if (nix == 1 && x.sh.cols == 1) pos[0] = (int64_t)ix[0].v.value - 1;
  else return r;
  if (pos[0] < 0 || pos[1] < 0 || pos[0] >= x.sh.rows || pos[1] >= x.sh.cols) return r;
  return av_num(x.el[pos[0] * x.sh.cols + pos[1]]);
}

static AVal ev_member(Ck *c, AstNode *n) {
  AVal x = ev(c, n->kids[0]);
  if (!ck_alive(c)) return av_any();
  if (x.sh.kind == SK_LIST) {
    if (!x.list) return av_any();
    for (int32_t i = 0; i < x.list->n; i++)
      if (x.list->names && x.list->names[i] == n->u.sym) return x.list->items[i];
    return av_null();
  }
  if (x.sh.kind == SK_ANY || x.sh.kind == SK_NONE || x.sh.kind == SK_NUMERIC) return av_any();
  char d[64];
  if (!shape_describe(x.sh, d, sizeof d)) { ck_die(c); return av_any(); }
  ck_fail(c, n->span, "'$' needs a list, got %s", d);
  return av_any();
}

/* ---- assignment ---- */
static AVal list_with(Ck *c, const AVal *l, Symbol *name, int32_t pos, AVal v) {
  const AList *o = l->list;
  int32_t n = o ? o->n : 0;
  if (pos < 0) {
    for (int32_t i = 0; i < n; i++)
      if (o->names && o->names[i] == name) { pos = i; break; }
    if (pos < 0) pos = n;
  }
  int32_t nn = pos >= n ? pos + 1 : n;
  AList *r = ck_alloc(c, sizeof *r);
  r->n = nn;
  r->multi = false;
  r->items = ck_alloc(c, (size_t)nn * sizeof(AVal));
  r->names = ck_alloc(c, (size_t)nn * sizeof(Symbol *));
  for (int32_t i = 0; i < nn; i++) {
    r->items[i] = i < n ? o->items[i] : av_null();
    r->names[i] = i < n && o->names ? o->names[i] : NULL;
  }
  r->items[pos] = v;
  if (name && pos >= n) r->names[pos] = name;
  AVal out = av_shape(shape_of_kind(SK_LIST));
  out.sh.len = nn;
  out.list = r;
  return out;
}

static AVal unknown_list(void) { return av_shape(shape_of_kind(SK_LIST)); }

static void ev_assign_path(Ck *c, AstNode *n, AVal v) {
  AstNode *lhs = n->kids[0], *chain[64];
  int depth = 0;
  AstNode *root = lhs;
  while (root->kind == AST_INDEX || root->kind == AST_MEMBER) {
    if (depth == 64) { ck_die(c); return; }
    chain[depth++] = root;
    root = root->kids[0];
  }
  for (int i = 0; i < depth / 2; i++) { AstNode *t = chain[i]; chain[i] = chain[depth - 1 - i]; chain[depth - 1 - i] = t; }
  ShapeIndex ix[2];
  AVal iv[2];
  for (int i = 0; i < depth; i++) {                  /* every index is evaluated before anything changes */
    if (chain[i]->kind != AST_INDEX) continue;
    ShapeIndex tix[2];
    AVal tiv[2];
    if (!eval_indices(c, chain[i], tix, tiv)) return;
    if (i == 0) { memcpy(ix, tix, sizeof ix); memcpy(iv, tiv, sizeof iv); }
  }
  if (root->kind != AST_NAME) { ck_die(c); return; }
  AVal cur = read_name(c, root);
  if (cur.bi && root->slot < 0 && !gmap_find(&c->globals, root->u.sym) && root->u.sym->global.t == VT_UNBOUND) {
    ck_die(c);                                       /* "object 'c' not found": a builtin's name is no variable */
    return;
  }
  AstNode *lv = chain[0];
  if (lv->kind == AST_INDEX && depth == 1 && names_index(iv, lv->nkids - 1)) {   /* x["c"] = v: by names */
    assign_name(c, root, av_any());
    return;
  }
  if (depth > 1) {                                   /* L$a$b = v, L[k]$a = v: the list changes */
    if (cur.sh.kind == SK_LIST || cur.sh.kind == SK_NULL || cur.sh.kind == SK_NONE) assign_name(c, root, unknown_list());
    else if (cur.sh.kind == SK_ANY) assign_name(c, root, av_any());
    else ck_die(c);
    return;
  }
  if (lv->kind == AST_MEMBER) {
    if (cur.sh.kind == SK_NONE || cur.sh.kind == SK_NULL) { AVal e = av_shape(shape_of_kind(SK_LIST)); e.sh.len = 0; cur = e; }
    if (cur.sh.kind == SK_LIST) {
      assign_name(c, root, cur.list || cur.sh.len == 0 ? list_with(c, &cur, lv->u.sym, -1, v) : unknown_list());
      return;
    }
    if (cur.sh.kind == SK_ANY) { assign_name(c, root, av_any()); return; }
    char d[64];
    if (!shape_describe(cur.sh, d, sizeof d)) { ck_die(c); return; }
    ck_fail(c, lv->span, "'$' assignment needs a list, got %s", d);
    return;
  }
  uint32_t nix = lv->nkids - 1;
  if (cur.sh.kind == SK_LIST) {                      /* L[k] = v, L["name"] = v */
    if (nix != 1 || ix[0].kind == SIX_ALL) { ck_fail(c, lv->span, "a list takes one index: L[k] = v"); return; }
    AVal k = iv[0];
    if (ix[0].kind == SIX_VALUE && k.sh.kind == SK_STR && k.str && cur.list) {
      Symbol *s = sym_intern(&c->I->syms, k.str, strlen(k.str));
      assign_name(c, root, list_with(c, &cur, s, -1, v));
      return;
    }
    if (ix[0].kind == SIX_VALUE && (k.sh.kind == SK_NUM || k.sh.kind == SK_BOOL) && k.sh.known && cur.list) {
      double d = k.sh.value;
      if (!(d >= 1 && d < (double)cur.list->n + 2)) {
        ck_fail(c, lv->span, "index %g out of bounds for a list of %d", d, (int)cur.list->n);
        return;
      }
      assign_name(c, root, list_with(c, &cur, NULL, (int32_t)d - 1, v));
      return;
    }
    assign_name(c, root, unknown_list());
    return;
  }
  if (cur.sh.kind == SK_NONE) { ck_die(c); return; }   /* object not found (or maybe: not told) */
  ShapeExtra ex;
  memset(&ex, 0, sizeof ex);
  ex.nix = (int)nix;
  ex.ix = ix;
  ex.dml_row = (lv->flags & AST_F_DMLROW) != 0;
  Shape out;
  ShapeError err;
  ShapeStatus st = shape_index_assign(cur.sh, &ex, v.sh, lv->span, &out, &err);
  if (st == SHAPE_ERROR) { ck_fail(c, err.span, "%s", err.msg); return; }
  if (st == SHAPE_FAILS) { ck_die(c); return; }
  assign_name(c, root, av_shape(out));
}

static AVal ev_assign(Ck *c, AstNode *n) {
  AVal v = ev(c, n->kids[1]);
  if (!ck_alive(c)) return av_any();
  if (n->kids[0]->kind == AST_NAME) assign_name(c, n->kids[0], v);
  else ev_assign_path(c, n, v);
  return v;
}

static AVal ev_massign(Ck *c, AstNode *n) {
  uint32_t nt = n->nkids - 1;
  AVal v = ev(c, n->kids[nt]);
  if (!ck_alive(c)) return av_any();
  if ((n->flags & AST_F_DMLMULTI) && nt == 1 && v.sh.kind != SK_ANY && v.sh.kind != SK_NONE &&
      !(v.sh.kind == SK_LIST && v.list && v.list->multi)) {   /* .dml: [x] = f(), one result */
    assign_name(c, n->kids[0], v);
    return av_null();
  }
  if (v.sh.kind == SK_LIST && v.list) {
    bool prefix = (n->flags & AST_F_DMLMULTI) && v.list->multi && (uint32_t)v.list->n > nt;
    if (!prefix && (uint32_t)v.list->n != nt) { ck_die(c); return av_any(); }
    for (uint32_t i = 0; i < nt; i++) assign_name(c, n->kids[i], v.list->items[i]);
    return av_null();
  }
  if (v.sh.kind == SK_LIST || v.sh.kind == SK_ANY || v.sh.kind == SK_NONE) {
    for (uint32_t i = 0; i < nt; i++) assign_name(c, n->kids[i], av_any());
    return av_null();
  }
  ck_die(c);                                         /* "the right side of [...] = must give ..." */
  return av_any();
}

/* ---- the walk ---- */
static AVal ev_binary(Ck *c, AstNode *n) {
  AVal in[2];
  in[0] = ev(c, n->kids[0]);
  if (!ck_alive(c)) return av_any();
  in[1] = ev(c, n->kids[1]);
  if (!ck_alive(c)) return av_any();
  OpKind op = (OpKind)n->op;
  if (op == OP_ADD && in[0].sh.kind == SK_STR && in[1].sh.kind == SK_STR && in[0].str && in[1].str) {
    size_t a = strlen(in[0].str), b = strlen(in[1].str);
    char *t = ck_alloc(c, a + b + 1);
    memcpy(t, in[0].str, a);
    memcpy(t + a, in[1].str, b + 1);
    AVal r = av_shape(shape_of_kind(SK_STR));
    r.str = t;
    return r;
  }
  AVal r = ck_rule(c, op, in, NULL, n->span);
  if (op == OP_RANGE && r.sh.kind == SK_MAT && r.sh.rows >= 1 && r.sh.rows <= CHECK_MAX_EL && in[0].sh.known && in[1].sh.known &&
      (in[0].sh.kind == SK_NUM || in[0].sh.kind == SK_BOOL)) {
    double *e = ck_alloc(c, (size_t)r.sh.rows * sizeof(double)), from = in[0].sh.value;
    double step = in[1].sh.value >= from ? 1.0 : -1.0;
    for (int64_t i = 0; i < r.sh.rows; i++) e[i] = from + step * (double)i;
    r.el = e;
    if (r.sh.rows == 1) { r.sh.known = true; r.sh.value = e[0]; }
  }
  return r;
}

static AVal ev_return(Ck *c, AstNode *n) {
  AVal v = n->nkids ? ev(c, n->kids[0]) : av_null();
  if (!ck_alive(c)) return av_any();
  FnCtx *f = c->fn;
  f->ret = f->has_ret ? av_join(c, &f->ret, &v) : v;
  f->has_ret = true;
  if (c->env && c->nframes > 0) snap_join_current(c, &f->retenv);
  f->events++;
  c->reach = R_EXIT;
  return av_any();
}

static AVal ev_source_as(Ck *c, AstNode *n) {
  AstNode *call = n->kids[0];
  if (call->nkids != 2 || call->kids[1]->kind == AST_ARG) { ck_die(c); return av_any(); }
  AVal p = ev(c, call->kids[1]);
  if (!ck_alive(c)) return av_any();
  if (p.sh.kind != SK_STR && p.sh.kind != SK_ANY) { ck_die(c); return av_any(); }
  AVal ns = av_any();
  if (!c->env && p.str) ns = ck_source(c, p.str, n->u.sym, call->span);
  else if (c->env) unknown_call(c);
  if (ck_alive(c)) assign_name(c, n->kids[1], c->env ? av_any() : ns);   /* "ns::" */
  return av_null();
}

static AVal ev(Ck *c, AstNode *n) {
  if (!n || !ck_alive(c)) return av_any();
  char here;
  if (--c->budget < 0 || (size_t)(c->stack_base - &here) > c->stack_limit) longjmp(c->done, 2);
  switch (n->kind) {
  case AST_NUM: return av_num(n->u.num);
  case AST_STR: return av_str(c, n->u.str.s, n->u.str.len);
  case AST_BOOL: return av_shape(shape_bool(true, n->u.num != 0));
  case AST_NULL: return av_shape(shape_of_kind(SK_NULL));
  case AST_NAME: return read_name(c, n);
  case AST_CLPARAM:
    for (int i = 0; i < c->I->nparams; i++)
      if (c->I->params[i].name == n->u.sym) return av_of_value(c, c->I->params[i].v, 0);
    return av_any();                                 /* not given: not told */
  case AST_NSREF: {
    AVal ns = read_name(c, n->kids[0]);             /* "ns::" (sym_namespace) */
    if (ns.sh.kind != SK_LIST || !ns.list) return av_any();
    for (int32_t i = 0; i < ns.list->n; i++)
      if (ns.list->names && ns.list->names[i] == n->sym2) return ns.list->items[i];
    return av_any();
  }
  case AST_BINARY: return ev_binary(c, n);
  case AST_UNARY: {
    AVal a = ev(c, n->kids[0]);
    if (!ck_alive(c)) return av_any();
    return ck_rule(c, (OpKind)n->op, &a, NULL, n->span);
  }
  case AST_ANDAND: return ev_andor(c, n, true);
  case AST_OROR: return ev_andor(c, n, false);
  case AST_CALL: {
    AVal v = ev_call(c, n);
    if ((n->flags & AST_F_DMLFIRST) && v.sh.kind == SK_LIST && v.list && v.list->multi && v.list->n >= 1)
      return v.list->items[0];                       /* .dml: x = f() takes f's first result */
    return v;
  }
  case AST_INDEX: return ev_index(c, n);
  case AST_MEMBER: return ev_member(c, n);
  case AST_MATRIX: return ev_matrix(c, n);
  case AST_FUNCTION: {
    AFunc *f = ck_alloc(c, sizeof *f);
    memset(f, 0, sizeof *f);
    f->kind = AF_CLOSURE;
    f->fi = n->u.fn;
    f->env = c->env;
    f->src = c->src;
    AVal v = av_shape(shape_of_kind(SK_FUNC));
    v.fn = f;
    return v;
  }
  case AST_RETURN: return ev_return(c, n);
  case AST_BLOCK: return ev_block(c, n);
  case AST_IF: return ev_if(c, n);
  case AST_WHILE: return ev_while(c, n);
  case AST_FOR: return ev_for(c, n);
  case AST_BREAK: case AST_NEXT: {
    LoopCtx *l = c->loop;
    if (l) {
      snap_join_current(c, n->kind == AST_BREAK ? &l->brk : &l->nxt);
      l->events++;
    }
    c->reach = R_EXIT;
    return av_any();
  }
  case AST_ASSIGN: return ev_assign(c, n);
  case AST_MASSIGN: return ev_massign(c, n);
  case AST_SOURCE_AS: return ev_source_as(c, n);
  default: return av_any();
  }
}

void ck_run_chunk(Ck *c, Chunk *ch, AEnv *env) {
  AEnv *saved_env = c->env;
  Source *saved_src = c->src;
  c->env = env;
  c->src = ch->src;
  AstNode *root = ch->root;
  for (uint32_t i = 0; i < root->nkids && ck_alive(c); i++)     /* a .dml file's functions first */
    if (root->kids[i]->flags & AST_F_HOISTED) ev(c, root->kids[i]);
  for (uint32_t i = 0; i < root->nkids && ck_alive(c); i++)
    if (!(root->kids[i]->flags & AST_F_HOISTED)) ev(c, root->kids[i]);
  c->env = saved_env;
  c->src = saved_src;
}

/* ---- set up, report, tear down ---- */
static bool names_quit(const AstNode *n) {
  if (!n) return false;
  if ((n->kind == AST_NAME || n->kind == AST_NSREF) && n->u.sym && strcmp(n->u.sym->name, "quit") == 0) return true;
  if (n->kind == AST_NSREF && n->sym2 && strcmp(n->sym2->name, "quit") == 0) return true;
  if (n->kind == AST_FUNCTION) {
    const FuncInfo *fi = n->u.fn;
    for (int j = 0; j < fi->nparams; j++)
      if (names_quit(fi->params[j].dflt)) return true;
    return names_quit(fi->body);
  }
  for (uint32_t i = 0; i < n->nkids; i++)
    if (names_quit(n->kids[i])) return true;
  return false;
}

bool ck_names_quit(const Chunk *ch) { return names_quit(ch->root); }

/* The C stack the check may use from here: what the run's guard leaves (I->stack_limit, when a
** run is on: explain), else 256 MiB of the interpreter thread's 1 GiB (main.c). */
static void ck_stack(Ck *c, Interp *I, char *here) {
  c->stack_base = here;
  c->stack_limit = (size_t)256 << 20;
  if (I->stack_base && I->stack_limit) {
    size_t used = I->stack_base > here ? (size_t)(I->stack_base - here) : 0;
    c->stack_limit = I->stack_limit > used + ((size_t)2 << 20) ? I->stack_limit - used - ((size_t)2 << 20) : 0;
  }
}

static void ck_init(Ck *c, Interp *I, Source *src) {
  memset(c, 0, sizeof *c);
  c->I = I;
  c->src = src;
  c->reach = R_MUST;
  c->report = true;
  c->budget = CHECK_BUDGET;
  const char *b = getenv("MLS_CHECK_BUDGET");       /* (tests: a small budget gives up early) */
  if (b && *b) c->budget = strtoll(b, NULL, 10);
}

static void ck_free(Ck *c) {
  heap_free_all(c);
  arena_free(&c->arena);
  for (int i = 0; i < c->nchunks; i++) chunk_release(c->chunks[i]);
  for (int i = 0; i < c->nsourcing; i++) mem_free(c->sourcing[i]);
  c->nchunks = c->nsourcing = 0;
}

/* The error as interp_report_error prints it: the located line, then "in f() at" lines
** innermost first (err.c record_trace, deep stacks cut the same way). */
static void print_found(Ck *c, FILE *f) {
  diag_report(f, c->err_src, c->err.span, "error", c->err.msg);
  size_t k = 0;
  for (int i = c->err_nframes - 1; i >= 0 && k + 200 < 2048; i--) {
    const CFrame *fr = &c->err_frames[i];
    char where[512];
    if (fr->call_src) diag_where(where, sizeof where, fr->call_src, fr->call_site.start);
    else snprintf(where, sizeof where, "?");
    int w = fprintf(f, "  in %s() at %s\n", fr->name, where);
    k += w > 0 ? (size_t)w : 0;
    if (c->err_nframes - i == 20 && i > 10) {
      w = fprintf(f, "  ... (%d more)\n", i - 10);
      k += w > 0 ? (size_t)w : 0;
      i = 10;
    }
  }
}

int check_program(Interp *I, Source *src) {
  ParseError pe;
  Chunk *ch = interp_load(I, src, false, &pe);
  if (!ch) {
    diag_report(I->errf, src, pe.span, "error", pe.msg);
    return pe.oom ? 1 : 2;
  }
  Ck *c = mem_alloc(sizeof *c);
  ck_init(c, I, src);
  char here;
  ck_stack(c, I, &here);
  c->has_quit = ck_names_quit(ch);
  FnCtx top;
  memset(&top, 0, sizeof top);
  c->fn = &top;
  if (setjmp(c->done) == 0) ck_run_chunk(c, ch, NULL);
  int status = 0;
  if (c->found) {
    print_found(c, I->errf);
    status = 1;
  }
  ck_free(c);
  mem_free(c);
  chunk_release(ch);
  return status;
}

/* A frame in I->frames (as frame_push_staged does) so that a throw lists the call. */
static void push_runtime_frame(Interp *I, const CFrame *f, Source *src) {
  frame_push(I, (Frame){ .fi = f->fi, .src = src, .call_src = f->call_src, .call_site = f->call_site, .entered = true }, false);
}

void check_call(Interp *I, Value f, int nargs, const Value *args, Symbol **names, Span sp) {
  if (f.t != VT_FUNC || !f.u.f->fi || f.u.f->derived || !f.u.f->chunk || nargs > 64) return;
  Ck *c = mem_alloc(sizeof *c);
  ck_init(c, I, I->src);
  char here;
  ck_stack(c, I, &here);
  c->has_quit = true;                  /* (what f calls is not all in one chunk) */
  FnCtx top;
  memset(&top, 0, sizeof top);
  c->fn = &top;
  if (setjmp(c->done) == 0) {
    AVal fn = av_of_value(c, f, 0);
    AVal av[64];
    Symbol *nm[64];
    for (int i = 0; i < nargs; i++) {
      av[i] = av_of_value(c, args[i], 0);
      nm[i] = names ? names[i] : NULL;
    }
    if (fn.fn) ck_call(c, fn, nargs, av, nm, sp, true);
  }
  if (!c->found) {
    ck_free(c);
    mem_free(c);
    return;
  }
  char msg[sizeof c->err.msg];
  snprintf(msg, sizeof msg, "%s", c->err.msg);
  Span at = c->err.span;
  Source *src = c->err_src;
  int nf = c->err_nframes;
  CFrame frames[CHECK_MAX_FRAMES];
  memcpy(frames, c->err_frames, (size_t)nf * sizeof(CFrame));
  ck_free(c);
  mem_free(c);
  for (int i = 0; i < nf; i++) push_runtime_frame(I, &frames[i], i + 1 < nf ? frames[i + 1].call_src : src);
  source_retain(src);
  mls_throw_in(I, src, at, "%s", msg);
}
