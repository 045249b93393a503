/*
** gc.c — the cycle collector (interp.h). Lists, closures and function envs are the only
** objects that hold references to one another, so they are the only ones a cycle can be made
** of; each is on one doubly linked list from its creation to its free. A collection:
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

/* The tracked objects and the collector's schedule. The interpreter runs on one thread; the
** heap is still one per process, shared by every Interp of the process (each one's objects are
** reachable from its globals and frames, which count as outside), because list_new() and
** closure_new_derived() are called without the interpreter from autodiff.c and
** autodiff_trace.c, which the op-layer work of issue 26 is rewriting: once those pass it, this
** struct moves into the Interp (tools/globals_allow.txt). */
typedef struct GcHeap {
  GcLink all;                /* every tracked object: the head of the ring */
  int64_t ntracked;
  int64_t next_at;           /* gc_maybe collects past this many */
  int64_t min_new;           /* gc_set_min */
  bool running;              /* a collection is under way: the frees it makes start no other */
} GcHeap;
static GcHeap heap = { { &heap.all, &heap.all, 0, 0, 0 }, 0, GC_MIN, GC_MIN, false };

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

void gc_track(GcLink *g, int kind) {
  g->kind = (uint8_t)kind;
  g->state = MARK_NONE;
  g->gc_refs = 0;
  link_tail(&heap.all, g);
  heap.ntracked++;
}

void gc_untrack(GcLink *g) {
  if (!g->prev) return;
  unlink_(g);
  g->prev = g->next = NULL;
  heap.ntracked--;
}

int64_t gc_tracked(void) { return heap.ntracked; }

void gc_set_min(int64_t n) {
  heap.min_new = n > 0 ? n : 0;
  heap.next_at = heap.ntracked + heap.min_new;
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
  if (child->state == MARK_TENTATIVE) {         /* met earlier and set aside: it is reachable after all */
    unlink_(child);
    link_tail(&heap.all, child);               /* the scan reaches it again at the tail */
  }
  child->state = MARK_REACHABLE;
  (void)ctx;
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

int64_t gc_collect(void) {
  if (heap.running) return 0;
  heap.running = true;
  GcLink *g;
  for (g = heap.all.next; g != &heap.all; g = g->next) {
    g->gc_refs = *refcount_of(g);
    g->state = MARK_NONE;
  }
  for (g = heap.all.next; g != &heap.all; g = g->next) children(g, subtract_ref, NULL);
  for (g = heap.all.next; g != &heap.all; g = g->next)
    if (g->gc_refs < 0) {                       /* a reference traversed but not counted: a bug */
      MLS_ASSERT(!"gc: an object has more references from tracked objects than its count");
      heap.running = false;
      return 0;                                 /* (release builds) free nothing rather than too much */
    }
  GcLink unreach = { &unreach, &unreach, 0, 0, 0 };
  for (g = heap.all.next; g != &heap.all;) {
    GcLink *nx = g->next;
    if (g->gc_refs > 0 || g->state == MARK_REACHABLE) {
      g->state = MARK_REACHABLE;
      children(g, reach, NULL);
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
    link_tail(&heap.all, g);                    /* its free unlinks it from there */
    g->state = MARK_NONE;
    release(g);
  }
  heap.next_at = heap.min_new == 0 ? 0 : heap.ntracked + (heap.ntracked > heap.min_new ? heap.ntracked : heap.min_new);
  heap.running = false;
  return n;
}

void gc_maybe(void) {
  if (heap.ntracked > heap.next_at || heap.min_new == 0) gc_collect();
}
