/*
** builtins.h — THE builtin table (Lua's luaL_Reg, jq's function_list): one row per builtin
** with its signature (which also drives named-argument matching), its op code when it is a
** thin wrapper of one op (the stager and grad use it), flags and its help() text.
*/
#ifndef MLS_BUILTINS_H
#define MLS_BUILTINS_H

#include "interp/interp.h"
#include "ops.h"
#include "tensor.h"

#define BI_MAX_PARAMS 24

/* Arguments as bound to the signature: v[i] is parameter i (VT_UNBOUND when not given);
** arguments that fall into "..." are in dots (with their names, NULL when positional). */
typedef struct Args {
  int n;
  Value v[BI_MAX_PARAMS];
  int ndots;
  Value *dots;
  Symbol **dotnames;
  Span span;
  struct AstNode **nodes;  /* BI_LAZY: the unevaluated argument expressions */
  int nnodes;
  bool lent;               /* v[0] is lent for an elementwise op's result (bi_call_lent) */
} Args;

typedef Value (*BuiltinFn)(Interp *I, Args *a);

enum {
  BI_DIFF = 1,       /* differentiable: the grad issue's coverage test walks these */
  BI_IFDEF = 2,      /* ifdef($k, d): the first argument may be an unbound $k */
  BI_INVISIBLE = 4,  /* the REPL does not echo its result */
  BI_LAZY = 8,       /* gets its arguments unevaluated in Args.nodes (system.time) */
  BI_AD = 16,        /* differentiable and ready: it computes through ops, or is a grad builtin */
  BI_EFFECT = 32,    /* an effect or fresh randomness: a staged graph calls it again at every run */
  BI_SHAPE = 64,     /* the result depends only on types and shapes: a constant while staging */
  BI_VARS = 128,     /* reads the variables in scope (ls): a staged block runs eagerly from it */
  BI_NODIFF = 256,   /* its result legitimately has derivative 0 in its numeric arguments (discrete
                     ** or whole-number results, booleans, strings, effects): grad sees through them.
                     ** A builtin with none of BI_DIFF, BI_AD, BI_NODIFF, BI_SHAPE that gets a value
                     ** traced by grad is the located error "not differentiable", never a silent 0;
                     ** tests/unit/test_grad_audit.c lists each such builtin and why. */
  BI_CALLS = 1024,   /* calls a function it is given (lapply, Reduce, do.call): a staged block runs
                     ** eagerly from it, the function's calls with it */
  BI_NARM = 2048,    /* takes R's na.rm = TRUE: its first argument's NaN/NA elements are dropped
                     ** first (its other elements as a column), in bi_call */
  BI_EVAL = 512,     /* eval/evalList: call_value hands the call to bi_eval_call, which calls the
                     ** function named by the first argument as if called directly (grad, staging
                     ** and jit see that call) */
};

typedef struct Builtin {
  const char *name;
  BuiltinFn fn;
  const char *sig;   /* "matrix(v, rows=, cols=, byrow=FALSE)": names, '=' marks optional */
  OpKind op;         /* OP_NONE unless the builtin is exactly one op */
  uint16_t flags;
  const char *doc;   /* help() text: first line is the summary */
} Builtin;

typedef struct BiInfo { int nparams, nreq, dots; Symbol *names[BI_MAX_PARAMS]; } BiInfo;

extern const Builtin builtin_table[];
extern const int builtin_count;

/* Binds every row to its symbol and parses the signatures (luaL_setfuncs). */
/* True while s is a named constant (pi) that still holds its value (ls leaves it out). */
bool bi_is_constant(const Symbol *s);
/* help()'s text of a named constant (pi), or NULL. */
const char *bi_constant_doc(const char *name);
void bi_open(Interp *I);
const Builtin *bi_find(const char *name);
/* Calls builtin b with evaluated arguments (names[i] NULL = positional). */
Value bi_call(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, Span sp);
/* The same with the caller's grant for its one positional argument: a temporary it releases
** right after the call, lent to the op of an elementwise builtin (Args.lent, op_apply_lent). */
Value bi_call_lent(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, bool lent, Span sp);

/* eval(f, ...) and evalList(f, ...) (builtins_dml.c): calls the function f names (a string: a
** global function, a builtin, "ns::name"; or a function) with the other arguments, a single
** list argument spread into them; eval gives the first result (a number as a 1x1 matrix),
** evalList the list of all, named by f's results. Arguments borrowed; the result is +1. */
Value bi_eval_call(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, Span sp);

/* The function f names (+1), as eval's first argument (builtins_dml.c): a function value itself,
** or the name (a string) of a function in scope, a builtin (C or stdlib/builtin/NAME.mls) or
** "ns::name"; else the located error naming who. */
Value bi_fun_value(Interp *I, Value f, const char *who, Span sp);

/* Argument helpers: "bad argument #2 to 'solve' (square matrix expected, got 3x4)". */
l_noret bi_argerror(Interp *I, int argn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
l_noret bi_error(Interp *I, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Scratch memory of a builtin: a throw frees it (mls_defer) until bi_scratch_free, which frees
** it on the normal path; several are freed newest first. It counts against --max-memory (past
** the limit: the located "out of memory allocating N of workspace" error). */
void *bi_scratch(Interp *I, size_t n);
void bi_scratch_free(Interp *I, void *p);
/* Ctrl-C in a builtin's loop over many elements (docs/robustness.md, "Signals"): bi_poll at
** step i (every 2^20th, interp_poll) and bi_tick for steps of w elements (interp_tick) free t
** when the flag is set (the result being filled when it is not on the temp stack; NULL: none)
** and raise "interrupted" at the call. */
void bi_interrupted(Interp *I, Tensor *t);
static inline void bi_poll(Interp *I, int64_t i, Tensor *t) { if (interp_poll(I, i)) bi_interrupted(I, t); }
static inline void bi_tick(Interp *I, int64_t *budget, int64_t w, Tensor *t) { if (interp_tick(I, budget, w)) bi_interrupted(I, t); }
bool bi_given(const Args *a, int i);
double bi_num(Interp *I, Args *a, int i);
double bi_opt_num(Interp *I, Args *a, int i, double dflt);
/* A dimension (rows=, cols=): a non-negative whole number, else an argument error naming it. */
int64_t bi_opt_dim(Interp *I, Args *a, int i, int64_t dflt);
bool bi_opt_bool(Interp *I, Args *a, int i, bool dflt);
const char *bi_str(Interp *I, Args *a, int i);
/* A matrix argument; numbers are made 1x1 (returned +1 either way). */
Tensor *bi_mat(Interp *I, Args *a, int i);

/* Bodies (builtins_*.c) */
#define BI_DECL(name) Value bi_##name(Interp *I, Args *a);
#include "builtins_list.h"
#undef BI_DECL

#endif
