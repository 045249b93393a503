/*
** graph.h — the staged dataflow graph (LANGUAGE.md §12): nodes carry an ops.def code (or a
** builtin call), their inputs, the type and shape seen while staging and a source span.
** Nodes are kept in execution order, which is a topological order; effect nodes (print,
** write, rand, ...) keep their program order. Backend-neutral: graph_run calls the op entry
** points of ops.c, and a fusion group is a small program any backend can run in one pass.
** Ownership: a Graph owns its nodes, their constant values and retained sources/envs.
*/
#ifndef MLS_GRAPH_H
#define MLS_GRAPH_H

#include "backend/backend.h"
#include "interp/interp.h"
#include "ops.h"
#include "print.h"

typedef enum GKind {
  GN_PARAM,      /* an argument leaf of the staged call (number or matrix) */
  GN_CAPTURE,    /* a variable read from outside the staged code: read again at every run */
  GN_CONST,      /* a value known while staging */
  GN_OP,         /* one op of ops.def through its entry point (ops.c) */
  GN_CALL,       /* a builtin that is not an op (effects such as print, or rand): called again */
  GN_FUSED,      /* an elementwise fusion group (optionally ending in a reduction) */
  GN_LOOP,       /* a for or while loop (GNode.loop): its inputs the carried values' initial values,
                 ** then the enclosing graph's values it reads; its result the list of the carried
                 ** values' final values, then the number of iterations run */
  GN_ITEM,       /* item param (0-based) of a loop node's result (its one input), or of a
                 ** reverse loop node's */
  GN_RLOOP       /* the reverse of a loop node under a grad traced inside the stage (jit(grad(f)),
                 ** loop.c "reverse loop nodes"): its inputs the loop's (the carried values'
                 ** initial values, the enclosing graph's values it reads), then the carried values'
                 ** adjoints at its end, then the adjoint sums so far of those inputs; its result the
                 ** list of those sums with the loop's contributions added (GNode.loop shared with
                 ** the loop node, GNode.rev) */
} GKind;

/* A for loop over a:b with an end the graph computes (staging/loop.c): each run takes the ends
** from leaves ra, rb (or the numbers ca, cb where < 0); the node's item ncarry + 1 is the last
** element. */
/* A reverse loop node's plan (GN_RLOOP): per input of the loop (ncarry, then nouter) the node it
** was on the grad's tape (-1: none). Inputs of one tape node share one adjoint sum. */
typedef struct LoopRev {
  int32_t nin;
  int32_t *gid;             /* (owned) */
  bool *null;               /* per sum: NULL when traced (no adjoint: a run must agree; owned) */
} LoopRev;

typedef struct LoopRange {
  bool on;
  int32_t ra, rb;
  double ca, cb;
  Span span;                /* the range a:b (its errors) */
} LoopRange;

/* A loop node's loop (staging/loop.c): its body (and a while loop's condition) is a graph of
** its own, run once an iteration, whose leaves are the carried values (0 .. ncarry-1), the
** index (ncarry: a for loop's element, else unused) and the enclosing graph's values
** (ncarry + 1 ..). The body's result is the list of the carried values' new values; the
** condition's, a number or a boolean. */
typedef struct Loop {
  int32_t refs;             /* the graph's, and a checkpointed run's on a grad tape (loop.c) */
  bool is_while;
  int32_t ncarry, nouter;
  Value seq;                /* for: the sequence (a vector known while staging), its elements the index */
  int64_t count;            /* for: its length */
  LoopRange range;          /* for over a traced a:b (range.on): seq is unused */
  struct Graph *body, *cond;
  Symbol **names;           /* the carried variables (explain; error messages), then (range) at
                            ** ncarry + 1 the loop variable */
  bool *temp;               /* per carried: unbound before the loop (assigned before read in the body) */
  Span span;                /* the loop statement */
  Source *src;              /* retained */
  struct LeanProg *lean;    /* the body as a lean program (staging/lean.c; owned), or NULL */
  bool some_iter;           /* a while loop whose grad's trace (jit(grad(f)): rev_record) took a
                            ** run of one iteration or more for all: a run of none is stale */
} Loop;

/* GF_CONSTANT: the value depends on no argument, capture or effect (known while staging);
** GF_SPARSE: the value was a sparse matrix while staging (the masked rewrite, optimize.c);
** GF_ZEROS: an argument or capture that was a dense matrix with few nonzeros (MK_DENSE_W_MAX)
** while staging (graph_mostly_zeros: the masked rewrite may read it as sparse) */
enum { GF_EFFECT = 1, GF_TA = 2, GF_TB = 4, GF_DEAD = 8, GF_CONSTANT = 16, GF_SPARSE = 32, GF_ZEROS = 64 };

typedef struct GNode {
  uint8_t kind;             /* GKind */
  uint8_t flags;            /* GF_*: GF_TA/GF_TB are the transpose flags of a MATMUL */
  uint16_t op;              /* GN_OP, GN_FUSED (its final op): OpKind */
  int32_t nin;
  int32_t *in;              /* producing nodes (owned) */
  int32_t nextra;           /* GN_OP: the last nextra inputs are op parameters (index values) */
  Symbol **names;           /* GN_CALL: argument names, NULL = positional (owned) */
  const struct Builtin *bi; /* GN_CALL */
  Value v;                  /* GN_CONST: the value (retained) */
  int32_t param;            /* GN_PARAM: position among the flattened argument leaves */
  Value *place;             /* GN_CAPTURE: where the variable lives */
  Env *penv;                /* GN_CAPTURE: the env holding place, NULL = global. Not retained: it
                            ** is on the lexical chain of the staged function (kept by its owner)
                            ** or of an inlined one, which a guard checked first (Graph.fg) */
  int32_t pdepth, pslot;    /* GN_CAPTURE in a relative graph: the place is slot pslot of the env
                            ** pdepth levels up from the running one (pslot < 0: place itself) */
  Symbol *sym;              /* GN_CAPTURE: the variable's name */
  uint8_t vt;               /* the result's ValueType while staging */
  int64_t rows, cols;       /* its shape when vt is VT_MAT */
  Span span;
  Source *src;              /* retained */
  int32_t uses;             /* consumers (computed by graph_count_uses) */
  FusedProg *fused;         /* GN_FUSED (owned) */
  Span *fspan;              /* GN_FUSED: each instruction's op's own span, then the sum's (owned), */
  Source **fsrc;            /* and source (retained): run op by op, errors are located there */
  int32_t chain;            /* Graph.chains: the calls it was inlined through (-1: none) */
  Loop *loop;               /* GN_LOOP (owned); GN_RLOOP (a reference: Loop.refs) */
  LoopRev *rev;             /* GN_RLOOP (owned) */
} GNode;

/* While a loop's body or condition is traced (staging/loop.c): the values of enclosing stages it
** reads (boxes, retained), each leaf base + k of the body and the condition alike. */
typedef struct LoopTrace {
  struct Tape *outer;       /* the stage the loop is in */
  Value *ov;
  int32_t nov, cap, base;
  Value **places;           /* the carried variables' places: a read of one is never a capture */
  int32_t nplaces;
  Value *ivar;              /* a for loop's variable's place (the same), or NULL */
  /* jit(grad(f)): the grad traced inside the stage the loop is in, whose boxes wrap that stage's
  ** values (a carried value's, one the body reads): the body is traced without them and the
  ** loop's run is one node on that grad's tape (loop.c); gv: the values read with its boxes
  ** (retained), to find each outer value's node on its tape */
  struct Tape *gt;
  Value *gv;
  int32_t ngv, gcap;
  bool effects;             /* an effect was recorded in the body or condition (or a loop's inside) */
} LoopTrace;

/* How the staged function's result is rebuilt from node values. */
typedef struct GOut {
  int32_t node;             /* >= 0: the node's value; -1: v; -2: a list of kids */
  Value v;                  /* retained */
  bool multi;
  int32_t n;
  Symbol **names;
  struct GOut *kids;
} GOut;

typedef struct Graph {
  GNode *nodes;
  int32_t n, cap;
  GOut out;
  int32_t *outs;            /* every node that GOut refers to */
  int32_t nout;
  int32_t nparams;
  /* a staged block (--staged): the global variables it assigns, in order; its GOut is a list
  ** of their values, stored back after every run */
  bool block;
  Value **asg;
  Symbol **asgsym;
  int32_t nasg;
  /* functions read from outside while staging (their bodies were inlined): a run checks, in
  ** this order, that each place still holds the same function (a closure by its serial, not
  ** retained: a graph held by a closure must not keep that closure alive), else it is stale;
  ** t == VT_UNBOUND: a block's local slot that a read found unbound (stage_guard_unbound) */
  struct FnGuard { Value *place; Env *env; int32_t depth, slot; uint8_t t; const void *bi; uint64_t serial; } *fg;
  int32_t nfg;
  /* a block in a function's body: places (captures, guards, asg) are relative to the running
  ** env (depth, slot), so the graph serves every call; benv is that env while staging */
  bool relative;
  Env *benv;
  int32_t *asgdepth, *asgslot;
  /* the calls nodes were inlined through (GNode.chain); frames[fbase..] while tracing, and the
  ** graph run around the trace when it began (graph_trace_base) */
  InlineChain *chains;
  int32_t nchains, fbase;
  const InlineChain *base_chain;
  const ChainLink *base_up;
  int base_at;
  Source *entry_src;        /* a jit call's trace: where it was called (not retained; NULL: none), */
  Span entry_sp;            /* so that a frame called from there is marked InlineFrame.entry */
  /* staging found something that cannot be staged: the calls run eagerly */
  bool dynamic;
  bool effects;             /* an effect was recorded (stage_call) */
  bool abstract;            /* traced abstractly (explain): an op on staged values gets a result
                            ** of the shape its shape rule gives, uncomputed (tensor_abstract);
                            ** whatever needs values stops the trace (interp_abstract_stop) */
  char why[256];
  char stale_why[160];      /* why the last run was stale (graph_run_nodes), for --log-compiles */
  int32_t before, after;    /* live node counts before and after optimization */
  size_t peak_before, peak_after;   /* planned peak bytes of intermediate values */
  char log[2048];           /* what the optimizer did, one line each */
  size_t loglen;
  LoopTrace *lt;            /* a loop's body or condition while traced (staging/loop.c) */
  /* replay.c: the graph captured as one device launch (CUDA graphs) */
  struct Replay *rep;
  int8_t repok;             /* 0: not known yet; 1: its nodes may be captured; -1: never */
  int32_t runs;             /* plain runs of a capturable graph so far */
} Graph;

typedef struct Replay Replay;

Graph *graph_new(void);
void graph_free(Graph *g);
/* Frees a fused node's places (GNode.fspan, fsrc). */
void graph_fused_places_free(GNode *nd);
/* The cycle collector's view (interp/gc.c): the values graph_free releases (constants, outputs). */
void graph_children(const Graph *g, GcVisit fn, void *ctx);
/* Drops the result description (a dynamic graph, which never runs, then holds no values). */
void gout_clear(Graph *g);
/* Sets nd's type and shape (vt, rows, cols; a list's length in rows) from v's (through boxes). */
void graph_node_shape(GNode *nd, Value v);
/* Whether t is a dense CPU matrix of at least 4096 cells, at most MK_DENSE_W_MAX of them
** nonzero (NaN counts as nonzero): a cheap sample of 1024 cells first, then the count. */
bool graph_mostly_zeros(const Tensor *t);
/* Appends a node of kind k (returned index); the node's fields are set by the caller. */
int32_t graph_add(Graph *g, GKind k, Span sp, Source *src);
/* A trace of g begins: its nodes' calls are frames[fbase..] from now (graph_chain). */
void graph_trace_base(Interp *I, Graph *g, int fbase);
/* The calls frames[g->fbase..] the trace is inside now, as an index of g->chains (-1: none). */
int32_t graph_chain(Interp *I, Graph *g);
/* Marks the graph as not stageable, with the reason (the first one wins). */
void graph_mark_dynamic(Graph *g, Interp *I, Span sp, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void graph_log(Graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Can a later run of nd give a result of another shape than traced, its inputs' shapes the
** same (graph.c)? Can it raise an error the traced run did not (kept by dead-code elimination)? */
bool graph_shape_varies(const Graph *g, const GNode *nd);
bool graph_may_fail(const Graph *g, const GNode *nd);

/* Optimizes in place (optimize.c): constant folding, rewrites, CSE, DCE, fusion, memory plan. */
void graph_optimize(Interp *I, Graph *g);
void graph_count_uses(Graph *g);
int32_t graph_live_count(const Graph *g);
size_t graph_peak_bytes(const Graph *g);

/* Where place (depth, slot; slot < 0: p itself) is for the running env; NULL if there is none. */
Value *graph_place(Interp *I, Value *p, int32_t depth, int32_t slot);
/* The env depth frames out from the running one (I->env = 0); NULL past the outermost. */
Env *graph_env(Interp *I, int32_t depth);

/* Do the guards of g hold (Graph.fg): the places of the functions inlined while staging still hold
** them, the NULLs read are still NULL, the unbound locals read through still unbound? */
bool graph_guards_hold(Interp *I, const Graph *g);
/* Runs g with the flattened argument leaves; returns the result (owned). Sets *stale and
** returns VT_UNBOUND when a captured variable no longer has the type and shape it was staged
** with (the caller stages again). Errors are located at the node's own span. */
Value graph_run(Interp *I, Graph *g, const Value *leaves, bool *stale);
/* graph_run's work: with capv (per node; GN_CAPTURE nodes take capv[i] instead of reading
** their place) or without (NULL). */
Value graph_run_nodes(Interp *I, Graph *g, const Value *leaves, const Value *capv, bool *stale);

/* graph_run_nodes for a loop's runs (loop.c): hold is a list of at least g->n NULL items on the
** temp stack, reused by every run (and left NULL); outv (g->out a list) gets the result's items
** (owned); returns NULL, or VT_UNBOUND when stale. */
Value graph_run_into(Interp *I, Graph *g, const Value *leaves, bool *stale, List *hold, Value *outv);
/* graph_run_into with capv (per node, retained by the caller): each GN_CAPTURE node takes
** capv[i], read from its place earlier, and no place is read (a checkpointed loop's runs in the
** backward pass, loop.c, after the function that read them has returned). */
Value graph_run_fixed(Interp *I, Graph *g, const Value *leaves, const Value *capv, bool *stale, List *hold, Value *outv);
/* replay.c: runs g as its captured device launch when it can (true, *res set), capturing it
** on its second run; false: the caller runs it plainly. graph_replay_free drops the capture. */
bool graph_replay(Interp *I, Graph *g, const Value *leaves, bool *stale, Value *res);
void graph_replay_free(Graph *g);
/* Sets what MLS_REPLAY and MLS_REPLAY_LOG set for I (bits: 1 on, 2 log, 4 capture even when
** not worth it; -1: read them again), for tests. */
void graph_replay_mode(Interp *I, int m);

/* v without its outer boxes of stages and finished traces (a grad's box inside it kept: a loop's
** body computes on it, so the grad records the ops; borrowed). */
Value stage_strip(Value v);
/* loop.c: the parameter of g (a loop's body or condition being traced) for v, a box of an
** enclosing stage (stage.c's node_of). */
int32_t loop_outer_param(Interp *I, Graph *g, Value v);
/* loop.c: runs loop node nd on its inputs args (the carried values' initial values, then the
** enclosing graph's values); the result list (owned), or VT_UNBOUND with *stale set when a run
** of its body or condition was stale. Frees a loop. */
Value loop_run(Interp *I, const GNode *nd, const Value *args, bool *stale);
void loop_free(Loop *L);
void loop_children(const Loop *L, GcVisit fn, void *ctx);
/* loop.c: runs reverse loop node nd (GN_RLOOP) on its inputs args: the loop run again with
** checkpoints, then backward segment by segment; the result list of the adjoint sums (owned), or
** VT_UNBOUND with *stale set (a run of the body was stale, or a sum is NULL where the trace's
** was not, or the reverse). */
Value loop_reverse_run(Interp *I, Graph *g, const GNode *nd, const Value *args, bool *stale);
void loop_rev_free(LoopRev *r);
/* loop.c: v, an operand of an op or a call in a loop's body or condition g (without the body's own
** boxes), is a box of a grad traced inside the stage a loop around g is in, around that stage's
** value (jit(grad(f))): *inner is that value (the body reads it as the enclosing graph's; the
** loop's node on the grad's tape links its adjoint), true. */
bool loop_grad_value(Interp *I, Graph *g, Value v, Value *inner);
/* Whether graph g is a loop's body or condition under such a grad (an effect there: loop.h). */
bool loop_grad_body(const Graph *g);
/* loop.c: an effect is recorded in g, a loop's body or condition (LoopTrace.effects, up the loops). */
void loop_note_effect(const Graph *g);

/* explain's and dot's text (explain.c). */
void graph_print(Interp *I, const Graph *g, TextBuf *t);
void graph_dot(const Graph *g, TextBuf *t, const char *cluster, const char *prefix);

#endif
