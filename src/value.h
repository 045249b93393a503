/*
** value.h — the tagged Value (LANGUAGE.md §3) and its refcounted heap objects.
** Numbers and booleans are unboxed; strings, matrices, lists and closures are refcounted and
** shared on assignment (copy-on-write: mutate only when the count is 1).
** Ownership: functions named *_new or returning Value give the caller a reference (+1);
** arguments are borrowed unless the name says "take".
*/
#ifndef MLS_VALUE_H
#define MLS_VALUE_H

#include "mls.h"

typedef enum ValueType {
  VT_UNBOUND = 0,   /* internal: an empty slot or a missing argument; never a user value */
  VT_NULL,          /* NULL: what print() and assignments return */
  VT_NUM,
  VT_BOOL,
  VT_STR,           /* first refcounted type: keep the heap types last */
  VT_MAT,
  VT_LIST,
  VT_FRAME,         /* a SystemDS frame (frame/frame.h): holds no values */
  VT_FUNC,
  VT_BOX,           /* a value traced by grad (autodiff.h); last refcounted type */
  VT_TAPE,          /* internal: a grad tape held on the temp stack */
  VT_BUILTIN        /* a row of the builtin table; not refcounted */
} ValueType;

typedef struct Str { int32_t refcount; size_t len; char s[]; } Str;   /* s[len] is '\0' */
/* The bytes of a string of len bytes, as counted against --max-memory (mem_charge). */
#define STR_BYTES(len) (offsetof(Str, s) + (size_t)(len) + 1)
struct Tensor;
struct List;
struct FrameBlock;
struct Closure;
struct Builtin;

typedef struct Value {
  uint8_t t;        /* ValueType */
  union {
    double n;
    bool b;
    Str *s;
    struct Tensor *m;
    struct List *l;
    struct FrameBlock *fr;
    struct Closure *f;
    const struct Builtin *bi;
    struct Box *box;
    struct Tape *tape;
    int32_t *rc;    /* the refcount every heap object starts with */
  } u;
} Value;

/* Cycle collection (interp/gc.c). Every list, closure and function env is linked on its
** interpreter's heap (Interp.gc) while it lives, so that reference cycles among them (an env
** holding a closure that holds the env, through any number of lists, closures and envs) can be
** found and freed. */
typedef struct GcLink {
  struct GcLink *prev, *next;  /* NULL while untracked */
  struct GcHeap *heap;         /* the heap it is linked on: its free unlinks it without the Interp */
  int32_t gc_refs;             /* during a collection: references from outside the tracked objects */
  uint8_t kind, state;         /* GC_LIST, GC_CLOSURE, GC_ENV; a collection's mark */
} GcLink;
enum { GC_LIST = 1, GC_CLOSURE, GC_ENV };
/* One interpreter's tracked objects and its collector's schedule (gc.c's; in struct Interp). */
typedef struct GcHeap {
  GcLink all;                  /* every tracked object: the head of the ring */
  int64_t ntracked;
  int64_t next_at;             /* gc_maybe collects past this many */
  int64_t min_new;             /* gc_set_min */
  bool running;                /* a collection is under way: the frees it makes start no other */
} GcHeap;
/* Links g (of a new object of that kind) on I's heap. */
void gc_track(Interp *I, GcLink *g, int kind);
/* Unlinks g from the heap it is on, if any (the object's free). */
void gc_untrack(GcLink *g);

typedef struct List {
  int32_t refcount;
  bool multi;               /* the results of a multi-return call: [a, b] = f() unpacks */
  bool timing;              /* system.time's user, system, elapsed: prints as R's table */
  bool table;               /* summary()'s named numbers: print as R's named vector */
  int32_t n, cap;
  Value *items;
  struct Symbol **names;    /* NULL, or one per item (NULL = unnamed) */
  GcLink gc;
} List;

static inline Value val_unbound(void) { Value v; v.t = VT_UNBOUND; v.u.n = 0; return v; }
static inline Value val_null(void) { Value v; v.t = VT_NULL; v.u.n = 0; return v; }
static inline Value val_num(double x) { Value v; v.t = VT_NUM; v.u.n = x; return v; }
static inline Value val_bool(bool b) { Value v; v.t = VT_BOOL; v.u.n = 0; v.u.b = b; return v; }
static inline bool val_is_heap(Value v) { return v.t >= VT_STR && v.t <= VT_TAPE; }

static inline void val_retain(Value v) { if (val_is_heap(v)) (*v.u.rc)++; }
void val_free_heap(Value v);
/* A closure lost a reference but lives on: free it if only its own env's slots hold it. */
void closure_unref(struct Closure *c);
static inline void val_release(Value v) {
  if (!val_is_heap(v)) return;
  if (--(*v.u.rc) == 0) val_free_heap(v);
  else if (v.t == VT_FUNC) closure_unref(v.u.f);
}

Value val_str(const char *s, size_t len);
/* A string of len bytes for the caller to fill (s[len] is already '\0'). */
Value val_str_new(size_t len);
Value val_cstr(const char *s);
Value val_mat(struct Tensor *m);       /* takes the reference */
Value val_list(List *l);               /* takes the reference */

/* A new empty list (+1) of room for cap items, tracked on I's heap. */
List *list_new(Interp *I, int cap);
/* A list of n NULL items (room for at least one) held on I's temp stack, which owns it: a
** throw releases it and whatever its items then hold (scratch for values made one by one). */
List *list_held_nulls(Interp *I, int n);
/* Appends, taking the reference to v; name may be NULL. */
void list_push(List *l, Value v, struct Symbol *name);
int list_find(const List *l, const struct Symbol *name);   /* -1 when absent */
List *list_copy(Interp *I, const List *l);   /* shallow: retains the items; +1, on I's heap */

/* "number", "boolean", "string", "3x4 matrix", "list", "function" for messages. */
const char *val_describe(Value v, char *buf, size_t n);
const char *val_type_name(Value v);
/* The numbers of the text s, separated by spaces, tabs, newlines or commas (matrix("1 2 3")):
** stored into d when it is not NULL, counted either way. Returns the count, or -1 with *bad at
** the first cell that is not a number. */
int64_t val_scan_numbers(const char *s, double *d, const char **bad);

#endif
