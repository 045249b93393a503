/*
** gc.c — the cycle collector (interp.h). Lists, closures and function envs are the only
** objects that hold references to one another, so they are the only ones a cycle can be made
** of; each is on its interpreter's doubly linked list (Interp.gc) from its creation to its
** free. A collection:
**   1. gc_refs = refcount, for every tracked object;
**   2. for every reference one tracked object makes to another, the target's gc_refs -= 1;
**      what is left counts references from outside: a global, a frame, the temp stack, a
**      graph, a tape (anything not traversed here is outside, which only keeps more alive);
**   3. an object with gc_refs > 0 is reachable, and so is everything it reaches; the rest
**      moves to an "unreachable" list as it is met and back when something reachable
**      reaches it (CPython's move_unreachable);
**   4. the unreachable objects are held (+1), their references cleared (which frees what
**      only they held), and released: each is then freed by the ordinary path.
** It allocates nothing.
*/
#include <stddef.h>
#include "interp/interp.h"
#include "staging/stage.h"

#define GC_MIN 10000          /* new tracked objects before the first automatic collection */

/* The tracked objects and the collector's schedule are the interpreter's (Interp.gc, a GcHeap):
** two interpreters of one process (the unit tests, the fuzzing harnesses) collect apart, each
** object on the heap of the interpreter that made it. An object's link names its heap, so that
** its free, which has no interpreter at hand (val_release), unlinks it and keeps the count. */

void gc_init(Interp *I) {
  GcHeap *h = &I->gc;
  h->all.prev = h->all.next = &h->all;
  h->all.heap = h;
  h->ntracked = 0;
  h->next_at = GC_MIN;
  h->min_new = GC_MIN;
  h->running = false;
}

enum { MARK_NONE, MARK_REACHABLE, MARK_TENTATIVE };

static void link_tail(GcLink *head, GcLink *g) {
  g->prev = head->prev;
  g->next = head;
  head->prev->next = g;
  head->prev = g;
}

static void unlink_(GcLink *g) {
  g->prev->next = g->next;
  g->next->prev = g->prev;
}

void gc_track(Interp *I, GcLink *g, int kind) {
  g->kind = (uint8_t)kind;
  g->state = MARK_NONE;
  g->gc_refs = 0;
  g->heap = &I->gc;
  link_tail(&I->gc.all, g);
  I->gc.ntracked++;
}

void gc_untrack(GcLink *g) {
  if (!g->prev) return;
  unlink_(g);
  g->prev = g->next = NULL;
  g->heap->ntracked--;
  g->heap = NULL;
}

int64_t gc_tracked(Interp *I) { return I->gc.ntracked; }

void gc_set_min(Interp *I, int64_t n) {
  I->gc.min_new = n > 0 ? n : 0;
  I->gc.next_at = I->gc.ntracked + I->gc.min_new;
}

void gc_detach_all(Interp *I) {
  GcLink *head = &I->gc.all;
  while (head->next != head) {
    GcLink *g = head->next;
    unlink_(g);
    g->prev = g->next = NULL;
    g->heap = NULL;
  }
  I->gc.ntracked = 0;
}

#define OWNER(g, T) ((T *)(void *)((char *)(g) - offsetof(T, gc)))

static int32_t *refcount_of(GcLink *g) {
  switch (g->kind) {
  case GC_LIST: return &OWNER(g, List)->refcount;
  case GC_CLOSURE: return &OWNER(g, Closure)->refcount;
  default: return &OWNER(g, Env)->refcount;
  }
}

void gc_visit_value(Value v, GcVisit fn, void *ctx) {
  GcLink *g = v.t == VT_LIST ? &v.u.l->gc : v.t == VT_FUNC ? &v.u.f->gc : NULL;
  if (g && g->prev) fn(g, ctx);
}

/* Calls fn on each tracked object g holds a counted reference to. */
static void children(GcLink *g, GcVisit fn, void *ctx) {
  switch (g->kind) {
  case GC_LIST: {
    List *l = OWNER(g, List);
    for (int i = 0; i < l->n; i++) gc_visit_value(l->items[i], fn, ctx);
    break;
  }
  case GC_CLOSURE: {
    Closure *c = OWNER(g, Closure);
    if (c->env && c->env->gc.prev) fn(&c->env->gc, ctx);
    if (c->derived) ad_derived_children(c->derived, fn, ctx);
    if (c->jit) stage_jit_children(c->jit, fn, ctx);
    break;
  }
  default: {
    Env *e = OWNER(g, Env);
    for (int i = 0; i < e->n; i++) gc_visit_value(e->slots[i], fn, ctx);
    if (e->parent && e->parent->gc.prev) fn(&e->parent->gc, ctx);
  }
  }
}

static void subtract_ref(GcLink *child, void *ctx) {
  child->gc_refs--;
  (void)ctx;
}

static void reach(GcLink *child, void *ctx) {
  GcHeap *h = ctx;
  if (child->state == MARK_TENTATIVE) {         /* met earlier and set aside: it is reachable after all */
    unlink_(child);
    link_tail(&h->all, child);                 /* the scan reaches it again at the tail */
  }
  child->state = MARK_REACHABLE;
}

/* Drops the references g makes (to tracked objects and to anything else). */
static void clear(GcLink *g) {
  switch (g->kind) {
  case GC_LIST: {
    List *l = OWNER(g, List);
    int n = l->n;
    l->n = 0;
    for (int i = 0; i < n; i++) val_release(l->items[i]);
    break;
  }
  case GC_CLOSURE: {
    Closure *c = OWNER(g, Closure);
    Env *e = c->env;
    struct Derived *d = c->derived;
    struct Jit *j = c->jit;
    c->env = NULL;
    c->derived = NULL;
    c->jit = NULL;
    if (j) stage_jit_free(j);
    if (d) ad_derived_free(d);
    if (e) env_release(e);
    break;
  }
  default: {
    Env *e = OWNER(g, Env);
    Env *p = e->parent;
    e->parent = NULL;
    for (int i = 0; i < e->n; i++) {
      Value v = e->slots[i];
      e->slots[i] = val_unbound();
      val_release(v);
    }
    if (p) env_release(p);
  }
  }
}

static void release(GcLink *g) {
  switch (g->kind) {
  case GC_LIST: val_release(val_list(OWNER(g, List))); break;
  case GC_CLOSURE: {
    Value v;
    v.t = VT_FUNC;
    v.u.f = OWNER(g, Closure);
    val_release(v);
    break;
  }
  default: env_release(OWNER(g, Env));
  }
}

/* A collection of the objects from first to the ring's end (all of them: h->all.next). */
static int64_t collect_from(GcHeap *h, GcLink *first) {
  GcLink *g;
  for (g = first; g != &h->all; g = g->next) {
    g->gc_refs = *refcount_of(g);
    g->state = MARK_NONE;
  }
  for (g = first; g != &h->all; g = g->next) children(g, subtract_ref, NULL);
  for (g = first; g != &h->all; g = g->next)
    if (g->gc_refs < 0) {                       /* a reference traversed but not counted: a bug */
      MLS_ASSERT(!"gc: an object has more references from tracked objects than its count");
      return 0;                                 /* (release builds) free nothing rather than too much */
    }
  GcLink unreach = { .prev = &unreach, .next = &unreach };
  for (g = first; g != &h->all;) {
    GcLink *nx = g->next;
    if (g->gc_refs > 0 || g->state == MARK_REACHABLE) {
      g->state = MARK_REACHABLE;
      children(g, reach, h);
      nx = g->next;                             /* (reach may have appended to the tail) */
    } else {
      unlink_(g);
      link_tail(&unreach, g);
      g->state = MARK_TENTATIVE;
    }
    g = nx;
  }
  int64_t n = 0;
  for (g = unreach.next; g != &unreach; g = g->next) {
    (*refcount_of(g))++;                        /* held while the references among them go */
    n++;
  }
  for (g = unreach.next; g != &unreach; g = g->next) clear(g);
  while (unreach.next != &unreach) {
    g = unreach.next;
    unlink_(g);
    link_tail(&h->all, g);                      /* its free unlinks it from there */
    g->state = MARK_NONE;
    release(g);
  }
  return n;
}

int64_t gc_collect(Interp *I) {
  GcHeap *h = &I->gc;
  if (h->running) return 0;
  h->running = true;
  int64_t n = collect_from(h, h->all.next);
  h->next_at = h->min_new == 0 ? 0 : h->ntracked + (h->ntracked > h->min_new ? h->ntracked : h->min_new);
  h->running = false;
  return n;
}

int64_t gc_collect_since(Interp *I, GcLink *mark) {
  GcHeap *h = &I->gc;
  if (h->running || mark->heap != h || !mark->prev) return 0;
  h->running = true;
  int64_t n = collect_from(h, mark->next);
  h->running = false;
  return n;
}

void gc_maybe(Interp *I) {
  GcHeap *h = &I->gc;
  if (h->ntracked > h->next_at || h->min_new == 0) gc_collect(I);
}
