/*
** check_impl.h — the shape analysis' own types, shared by check.c (the walk over the tree)
** and check_builtins.c (what each builtin gives, source(), read()'s .mtd sidecars).
*/
#ifndef MLS_CHECK_IMPL_H
#define MLS_CHECK_IMPL_H

#include <setjmp.h>
#include "ast.h"
#include "builtins.h"
#include "ops/shapes.h"
#include "interp/interp.h"

#define CHECK_MAX_EL 16          /* a matrix's elements are kept when known and this few */
#define CHECK_MAX_FRAMES 48      /* nested calls analyzed at once (deeper: the result is unknown) */

typedef struct AList AList;
typedef struct AFunc AFunc;
typedef struct AEnv AEnv;

/* An abstract value: what is known of a value at one point of the program. */
typedef struct AVal {
  Shape sh;
  const char *str;               /* SK_STR: the text, when known */
  const double *el;              /* SK_MAT: the elements (row-major), when known and few */
  const AList *list;             /* SK_LIST: the items, when known */
  const AFunc *fn;               /* SK_FUNC: a function written in MLS, when known */
  const Builtin *bi;             /* SK_FUNC: a builtin */
} AVal;

struct AList { int32_t n; bool multi; AVal *items; Symbol **names; };

typedef enum { AF_CLOSURE, AF_GRAD, AF_OPAQUE } AFuncKind;
struct AFunc {
  uint8_t kind;                  /* AF_GRAD: grad(f), its arguments' shapes back; AF_OPAQUE: runs f
                                 ** (value_and_grad, ...), result unknown */
  const FuncInfo *fi;
  AEnv *env;                     /* the defining environment (NULL: the global scope) */
  Source *src;                   /* where fi is written (borrowed: a chunk the check holds) */
  const AFunc *of;               /* AF_GRAD, AF_OPAQUE: the function differentiated */
  int argnum;                    /* AF_GRAD: the argument (1-based), 0 when not one known number */
};

/* A function call's locals, as eval's Env: slot i of fi->slots; SK_NONE is unbound. */
struct AEnv { const FuncInfo *fi; AEnv *parent; int32_t n; AVal *slots; };

typedef struct GSlot { Symbol *sym; AVal v; } GSlot;
typedef struct GMap { int32_t n, cap; GSlot *e; } GMap;

/* A copy of the store the running code assigns: the globals at top level, else the locals. */
typedef struct Snap { bool global; bool valid; GMap g; int32_t n; AVal *slots; } Snap;

/* How surely the point being analyzed is reached: R_MUST when the program gets there unless it
** fails before; R_MAY when it may also have left another way (a branch not taken, a return);
** R_ERR and R_EXIT: not reached on this path (it failed; it left by return, break, next, quit). */
enum { R_MUST, R_MAY, R_ERR, R_EXIT };

typedef struct LoopCtx {
  struct LoopCtx *outer;
  Snap brk, nxt;                 /* the stores at break and at next, joined */
  int64_t events;                /* breaks and nexts seen */
} LoopCtx;

typedef struct FnCtx {
  struct FnCtx *outer;
  int64_t events;                /* returns seen */
  bool has_ret;
  AVal ret;                      /* the values returned, joined */
  Snap retenv;                   /* DML results: the locals at each return, joined */
} FnCtx;

typedef struct CFrame { const char *name; const FuncInfo *fi; Source *call_src; Span call_site; } CFrame;

typedef struct Ck {
  Interp *I;
  Arena arena;                   /* lists, texts, functions, environments of the analysis */
  GMap globals;
  AEnv *env;                     /* the running function's locals (or a namespace's); NULL: globals */
  Source *src;                   /* the source being analyzed */
  int reach;
  bool report;                   /* a certain error here may be reported (a loop's first pass) */
  LoopCtx *loop;
  FnCtx *fn;
  int64_t quits;                 /* quit() calls seen */
  bool has_quit;                 /* the program names quit: a call not analyzed may end it */
  CFrame frames[CHECK_MAX_FRAMES];
  int nframes;
  int64_t budget;                /* nodes left to analyze; then the check stops, finding nothing */
  char *stack_base;              /* the C stack where the check began, and how much of it it may use */
  size_t stack_limit;            /* (deeper: the check stops, finding nothing) */
  jmp_buf done;
  bool found;                    /* the error, with where it is and the calls that led there */
  ShapeError err;
  Source *err_src;
  CFrame err_frames[CHECK_MAX_FRAMES];
  int err_nframes;
  Chunk *chunks[64];             /* the sourced files parsed (held to the end) */
  int nchunks;
  char *sourcing[16];            /* the files being sourced, outermost first */
  int nsourcing;
  struct { Symbol *name; AVal fn; } libs[32];   /* builtins written in MLS, once followed */
  int nlibs;
  bool opaque_globals;           /* a file sourced where it could not be followed may have set any
                                 ** global: those not assigned since are unknown */
  void *heap;                    /* the check's own C heap blocks (check.c), freed at the end */
  struct EnvMemo *memo;          /* explain: the runtime Envs met, each as one AEnv */
} Ck;

/* check.c */
AVal av_any(void);
AVal av_shape(Shape s);
AVal av_num(double v);
AVal av_str(Ck *c, const char *s, size_t n);
void *ck_alloc(Ck *c, size_t n);
bool ck_alive(const Ck *c);
/* A certain error at sp: reported (the check ends) where it is reached for certain, else the
** path ends. */
void ck_fail(Ck *c, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The path certainly fails, with an error not told. */
void ck_die(Ck *c);
/* The rule of op on in[], with its error handled as ck_fail. */
AVal ck_rule(Ck *c, OpKind op, const AVal *in, const ShapeExtra *x, Span sp);
/* Calls fn on args (names[i] NULL: positional), as call_value. */
AVal ck_call(Ck *c, AVal fn, int nargs, AVal *args, Symbol **names, Span sp, bool report);
/* Runs the top level of chunk ch, at top level (env NULL) or as namespace env. */
void ck_run_chunk(Ck *c, Chunk *ch, AEnv *env);
AEnv *ck_env_new(Ck *c, const FuncInfo *fi, AEnv *parent);
AVal ck_lookup_global(Ck *c, Symbol *s);
void ck_set_global(Ck *c, Symbol *s, AVal v);
void ck_push_frame(Ck *c, const char *name, const FuncInfo *fi, Span call_site);
void ck_pop_frame(Ck *c);
/* Whether the tree names quit (then a call that is not analyzed may end the program). */
bool ck_names_quit(const Chunk *ch);

/* check_builtins.c */
/* What builtin b gives on the arguments (evaluated), or its certain error. */
AVal ck_builtin(Ck *c, const Builtin *b, int nargs, AVal *args, Symbol **names, Span sp);
/* source(path) (ns NULL) and source(path) as ns: the file's top level analyzed; the namespace
** (a list) or NULL. */
AVal ck_source(Ck *c, const char *path, Symbol *ns, Span sp);
/* The builtin written in MLS called name (stdlib/builtin/NAME.mls, analyzed as a namespace the
** first time, as interp_lib_function loads it), or an unknown value when there is none. */
AVal ck_lib_function(Ck *c, Symbol *name, Span sp);

#endif
