/*
** autodiff.h — reverse-mode differentiation on a tape (LANGUAGE.md §11).
** grad() boxes its arguments: a Box is a value being traced on one Tape. op_apply (the one
** dispatcher, src/ops/apply.c) hands an op with a Box among its operands to the innermost
** active tape's trace kind; a grad tape's computes the op on the unboxed values (which records
** on outer tapes if they are boxes of those) and records a node. Derivative rules are written with the same ops, so the
** backward pass of an inner grad is itself recorded by an outer one: grad(grad(f)) works.
** Nothing is recorded, and nothing costs, when no Box exists.
*/
#ifndef MLS_AUTODIFF_H
#define MLS_AUTODIFF_H

#include "ops.h"
#include "value.h"

struct AdCustom;

typedef struct TNode {
  uint16_t op;             /* OpKind (TN_OP nodes) */
  uint8_t kind;            /* TN_OP, TN_CUSTOM (cust: a node whose backward is its own), TN_ITEM
                           ** (output in[1] of the custom node in[0]) */
  uint8_t nin;
  int32_t in[3];           /* producing node in this tape, or -1 (a constant here) */
  Value val[6];            /* inputs as seen by the op (this tape's boxes removed), then extras */
  uint8_t nval;
  Value out;               /* the result (this tape's box removed) */
  Span span;
  struct Source *src;      /* where span points (retained): the backward pass reports there */
  struct AdCustom *cust;   /* TN_CUSTOM (owned) */
} TNode;

enum { TN_OP = 0, TN_CUSTOM = 1, TN_ITEM = 2 };

/* A tape node with many inputs and outputs whose backward pass is a function of its own: a
** checkpointed loop (staging/loop.c, docs/staging.md "Checkpointing"). in, gout (nout items
** VT_NULL) and contrib are the maker's mem_alloc'd arrays, freed with the node. Its outputs are TN_ITEM
** nodes; the backward pass adds each item's adjoint into gout[k], then, at the custom node,
** calls backward with slots[k] the adjoint of input k (a slot of the tape's adjoints, or a
** scratch one for an input that is no node): backward adds its contributions there ("set the
** first time, add after", ops through op_apply so an outer grad records them). release frees
** what the backward pass needed (run after it, or when the tape is freed); the struct itself,
** and what trace_grad reads (stats), live until the tape is freed, then free_fn. */
typedef struct AdCustom {
  int32_t nin, nout;
  int32_t *in;             /* producing nodes of the inputs on the tape, -1: not traced (owned) */
  Value *gout;             /* the outputs' adjoints so far (VT_NULL: none; owned) */
  void (*backward)(Interp *I, struct AdCustom *c, Value **slots);
  void (*release)(struct AdCustom *c);
  void (*free_fn)(struct AdCustom *c);
  bool takes_broadcast;    /* an output's broadcast adjoint (a number standing for a matrix of its
                           ** shape, ops/rules.h) reaches gout as the number, not made a matrix */
  /* for trace_grad and the tests (docs/staging.md): the loop's iterations, the checkpoints kept,
  ** the segments recomputed, the most carried states live at once (checkpoints + one segment),
  ** and each input's contribution to its adjoint when the backward pass ran (numbers only) */
  int64_t iters, nckpt, segments, peak_states;
  bool is_while;
  double *contrib;         /* nin numbers (owned), NAN where not a number */
  const char **names;      /* nout names of the outputs (the carried variables; borrowed symbols) */
} AdCustom;

/* One op application as op_apply (src/ops/apply.c) hands it to the trace that takes it. */
typedef struct OpCall {
  OpKind op;
  int nin, nextra;
  const Value *in;         /* the operands as given (boxes of this trace among them; borrowed) */
  const Value *un;         /* the same without this trace's boxes (and those of finished traces) */
  const Value *extra;      /* op parameters as given (a staged index value may be a box) */
  const Value *ux;         /* the same, plain */
  bool lifted;             /* no operand is traced: the active stage takes the op as a constant */
  Span sp;
} OpCall;

/* A kind of trace (JAX's Trace classes): what happens to an op one of whose operands it traces.
** Three kinds: a grad tape records a node for the backward pass (autodiff.c grad_kind), a jvp
** tape pushes the tangents forward (autodiff.c jvp_kind), a stage adds a graph node
** (staging/stage.c stage_kind). process computes the op on c->un (op_apply again, so an outer
** trace sees it) and returns the result boxed for t (owned). */
typedef struct TraceKind {
  const char *name;
  Value (*process)(Interp *I, struct Tape *t, const OpCall *c);
} TraceKind;

typedef struct Tape {
  int32_t refcount;
  const TraceKind *kind;   /* what an op on a box of this tape does (op_apply) */
  int32_t id;              /* nesting: a larger id is an inner grad */
  bool active;             /* recording; false once its grad call has finished */
  bool forward;            /* jvp: boxes carry tangents, nothing is recorded */
  bool teaching;           /* trace_grad's tape (autodiff_trace.c): every op its own node, no
                           ** custom node but checkpointed loops' */
  struct Graph *graph;     /* staging (jit, --staged): ops are recorded as graph nodes; a box's
                           ** node is then a node of this graph. Owned by the stager, not the tape. */
  int32_t capture_id;      /* a loop body's stage (staging/loop.c): the id of the stage whose reads
                           ** of outside variables it shares (stage_outside); 0: its own id */
  TNode *nodes;
  int32_t n, cap;
} Tape;

typedef struct Box {
  int32_t refcount;
  Tape *tape;              /* retained */
  int32_t node;
  Value v;                 /* the primal value (may be a Box of an outer tape) */
  Value tangent;           /* forward tapes: the directional derivative (VT_NULL = 0) */
} Box;

/* A hook on the backward pass of one grad(f) call (nn::dp_grad's bucketed allreduce, src/mpi/,
** docs/mpi.md "Overlap"). Set I->ad_hook just before calling a function for which ad_is_grad
** holds; the call takes it (and clears I->ad_hook, so grads nested in f do not see it), sets
** nleaves and claimed, and its backward pass calls leaf(k, g) as soon as leaf k's adjoint is
** final (no node left to run adds to it), and step() before every node it runs. The leaves are
** the numbers and matrices of f's first argument, depth first (k from 0); g is borrowed,
** VT_NULL when nothing reached the leaf (a zero gradient). A leaf that no node uses is reported
** before the first node runs. */
typedef struct AdHook {
  void (*leaf)(Interp *I, struct AdHook *h, int k, Value g);
  void (*step)(Interp *I, struct AdHook *h);
  int nleaves;
  bool claimed;
} AdHook;
/* f is grad(g) with respect to its first argument (the calls AdHook serves). */
bool ad_is_grad(Value f);

void ad_box_free(Box *b);
void ad_tape_free(Tape *t);

/* The value with every box removed (borrowed). */
static inline Value ad_primal(Value v) { while (v.t == VT_BOX) v = v.u.box->v; return v; }
/* v without its outer boxes of finished tapes (borrowed): a plain value to the builtins. */
static inline Value ad_finished(Value v) { while (v.t == VT_BOX && !v.u.box->tape->active) v = v.u.box->v; return v; }
/* True when any of v[0..n) is a Box of an active tape. */
bool ad_any_active(int n, const Value *v);
/* The same, counting only grad's tapes (not staging). */
bool ad_any_grad(int n, const Value *v);
/* The same, looking inside lists too (a grad box in list(x) reaching a builtin). */
bool ad_any_grad_deep(int n, const Value *v);

/* The trace kinds of grad's tapes and of jvp's (autodiff.c). */
extern const TraceKind grad_kind, jvp_kind;
/* The op on the operands without t's boxes, computed as the trace t sees it: op_apply again, so
** an outer trace records it. Set aside meanwhile: a stage that has gone eager, and a stage begun
** inside t (a loop's body or condition under jit(grad(f))) when no operand carries an active
** trace, which would take the result for a constant of its graph with t's box going over the
** stage's, the traces nested the wrong way round (found by gen_diff --edge); where that stage
** meets the result, it is a value an enclosing grad traces (stage.c node_of: not one graph). Owned. */
Value ad_apply_inner(Interp *I, const Tape *t, const OpCall *c);
/* A box of tape t for node, holding v (takes v). */
Value ad_box_new(Tape *t, int node, Value v);
/* A new active tape for staging into g, held on the temp stack. */
Tape *ad_stage_tape(Interp *I, struct Graph *g);
/* The value with the boxes of staging tapes removed, marking those stages as depending on a
** value known only at run time (an if/while condition, a scalar index ...): they run eagerly.
** what: how the value was used, for explain. Borrowed. */
Value ad_concrete(Interp *I, Value v, Span sp, const char *what);

/* v's values, read by a derivative rule that picks its form from them (borrowed): an abstract
** trace (explain) did not compute a staged value's elements, so it stops here (what: the rule,
** for its message). */
Value ad_rule_values(Interp *I, Value v, Span sp, const char *what);

/* Index read, write and concatenation as recorded ops (the plain read and write: ops/index.c). */
Value ad_index(Interp *I, Value x, int nidx, const Value *iv, Span sp);
/* X with X[iv] replaced by v (a number fills); X or v may be boxes. */
Value ad_set_index(Interp *I, Value X, int nidx, const Value *iv, Value v, Span sp);
/* acc (a rows x cols matrix, or a number filling one) with v written at rows r0.., cols
** c0.., owned: how matrix literals and cbind/rbind of traced values are built block by block. */
Value ad_place(Interp *I, Value acc, Value v, int64_t rows, int64_t cols, int64_t r0, int64_t c0, Span sp);

/* grad / value_and_grad: the derived function's call. */
struct Closure;
struct Jit;
/* The function jit(f) returns: calls go to stage_call_jit with j (taken). */
Value ad_derived_jit(Interp *I, Value f, struct Jit *j);
/* The cache of a jit(f) value (borrowed), or NULL when f is not one. */
struct Jit *ad_jit_of(Value f);
Value ad_call_derived(Interp *I, struct Closure *c, int nargs, Value *args, struct Symbol **names, Span sp);

/* Entry points for trace_grad (autodiff_trace.c), wrappers of the static pieces above:
** a new active tape held on the temp stack; v boxed as a leaf of t (owned); the backward
** pass from node root seeded with seed (a List of adjoints by node, on the temp stack; it
** releases the nodes' saved values); the adjoint of a leaf from that List (owned). */
Tape *ad_trace_tape(Interp *I);
Value ad_trace_leaf(Interp *I, Tape *t, Value v, Span sp);
List *ad_trace_backward(Interp *I, Tape *t, int root, Value seed);
Value ad_trace_collect(Interp *I, Value leaf, const List *adj, Tape *t);

/* Custom nodes (AdCustom above; staging/loop.c's checkpointed loops). ad_custom_node appends
** c to t at sp and returns its node (t takes c, freed with the tape; if this throws, c is still
** the caller's, who frees it with ad_custom_discard); ad_custom_item boxes v (taken) as output k of custom node cn. ad_node_on(t, v): v's
** node on t, through finished tapes' boxes, or -1. ad_tape_adjoints: an empty adjoint list of
** t's nodes (on the temp stack); ad_backward_all: the backward pass of every node of t from the
** last, from the adjoints already in adj (several roots; leaves seeded with sums to add to). */
int32_t ad_custom_node(Interp *I, Tape *t, AdCustom *c, Span sp);
void ad_custom_discard(AdCustom *c);
Value ad_custom_item(Interp *I, Tape *t, int32_t cn, int k, Value v);
int32_t ad_node_on(const Tape *t, Value v);
List *ad_tape_adjoints(Interp *I, Tape *t);
void ad_backward_all(Interp *I, Tape *t, List *adj);

#endif
