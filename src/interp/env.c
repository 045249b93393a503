/*
** env.c — function environments and closures. An Env is refcounted: the running frame holds
** one reference and each closure created inside holds another. A closure stored in the env
** it captured (in one slot or several) makes a cycle (env -> slot -> closure -> env); it is
** freed as soon as nothing but such closures holds the env (env_release, closure_unref).
** Longer cycles (through a list, a grad or jit function, or between two envs) are left to the
** cycle collector (gc.c).
*/
#include <string.h>
#include "interp/interp.h"
#include "mem.h"
#include "staging/stage.h"

Env *env_new(Interp *I, const FuncInfo *fi, Env *parent) {
  Env *e = mem_alloc(sizeof *e + (size_t)fi->nslots * sizeof(Value));
  e->refcount = 1;
  e->n = fi->nslots;
  e->parent = parent;
  if (parent) parent->refcount++;
  e->fi = fi;
  e->stage_id = 0;
  for (int i = 0; i < e->n; i++) e->slots[i] = val_unbound();
  gc_track(I, &e->gc, GC_ENV);
  return e;
}

static void env_destroy(Env *e) {
  gc_untrack(&e->gc);
  for (int i = 0; i < e->n; i++) val_release(e->slots[i]);
  Env *p = e->parent;
  mem_free(e);
  if (p) env_release(p);
}

/* The slots of e holding closure c. */
static int slots_holding(const Env *e, const Closure *c) {
  int m = 0;
  for (int i = 0; i < e->n; i++) m += e->slots[i].t == VT_FUNC && e->slots[i].u.f == c;
  return m;
}

/* References to e from closures held only by e's own slots (one slot or several: `a = f = function() ...`).
** Linear in e's slots: each such closure's count is lowered by the slots holding it, those at 0
** are counted once (marked by a large negative count), and the counts are put back. */
static bool own_closure(const Env *e, Value v) { return v.t == VT_FUNC && v.u.f->env == e; }
static int self_refs(const Env *e) {
  enum { MARK = INT32_MIN / 2 };
  int k = 0;
  for (int i = 0; i < e->n; i++)
    if (own_closure(e, e->slots[i])) e->slots[i].u.f->refcount--;
  for (int i = 0; i < e->n; i++)
    if (own_closure(e, e->slots[i]) && e->slots[i].u.f->refcount == 0) { e->slots[i].u.f->refcount = MARK; k++; }
  for (int i = 0; i < e->n; i++) {
    if (!own_closure(e, e->slots[i])) continue;
    Closure *c = e->slots[i].u.f;
    if (c->refcount <= MARK / 2) c->refcount = 0;    /* the first of its slots: it was only theirs */
    c->refcount++;
  }
  return k;
}

/* When only closures stored in e's own slots keep e alive, e and they are garbage. */
static void break_if_dead_cycle(Env *e) {
  int own = 0;                               /* an upper bound of self_refs, in one pass */
  for (int i = 0; i < e->n; i++) own += own_closure(e, e->slots[i]);
  if (e->refcount > own) return;             /* (the usual case: held from outside) */
  if (e->refcount == self_refs(e)) {
    e->refcount++;                          /* hold it while the slots let go */
    for (int i = 0; i < e->n; i++) {
      Value v = e->slots[i];
      e->slots[i] = val_unbound();
      val_release(v);
    }
    env_release(e);
  }
}

void env_release(Env *e) {
  if (!e) return;
  if (--e->refcount == 0) { env_destroy(e); return; }
  break_if_dead_cycle(e);
}

void closure_unref(Closure *c) {
  if (c->env && c->refcount <= c->env->n && c->refcount == slots_holding(c->env, c)) break_if_dead_cycle(c->env);
}

Value closure_new(Interp *I, const FuncInfo *fi, Env *env) {
  Closure *c = mem_alloc(sizeof *c);
  c->serial = 0;                     /* (given by the first staged graph that guards it) */
  c->refcount = 1;
  c->fi = fi;
  c->env = env;
  if (env) env->refcount++;
  c->chunk = fi->chunk;
  chunk_retain(c->chunk);
  c->derived = NULL;
  c->jit = NULL;
  c->dname = NULL;
  gc_track(I, &c->gc, GC_CLOSURE);
  Value v;
  v.t = VT_FUNC;
  v.u.f = c;
  return v;
}

Value closure_new_derived(Interp *I, struct Derived *d, const char *name) {  /* takes d (freed on failure) */
  Closure *c = mem_try_alloc(sizeof *c);
  if (!c) {
    ad_derived_free(d);
    mem_oom(sizeof *c);
  }
  memset(c, 0, sizeof *c);           /* (serial 0: none yet) */
  c->refcount = 1;
  c->derived = d;
  c->dname = name;
  gc_track(I, &c->gc, GC_CLOSURE);
  Value v;
  v.t = VT_FUNC;
  v.u.f = c;
  return v;
}

void closure_free(Closure *c) {
  Env *e = c->env;
  Chunk *ch = c->chunk;
  struct Derived *d = c->derived;
  gc_untrack(&c->gc);
  if (c->jit) stage_jit_free(c->jit);
  mem_free(c);
  if (d) ad_derived_free(d);
  if (e) env_release(e);
  if (ch) chunk_release(ch);
}
