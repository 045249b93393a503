/*
** stage.h — staging (LANGUAGE.md §12): while a stage tape is active, the op entry points
** record graph nodes (op_apply hands them to the stage's trace kind, stage_kind), builtins
** that are not ops are recorded as calls, and variables read from outside are recorded as
** captures. jit(f) stages f per argument types and shapes and runs the optimized graph.
*/
#ifndef MLS_STAGE_H
#define MLS_STAGE_H

#include "autodiff.h"
#include "builtins.h"

/* A range a:b in an index whose ends a stage traces, b being a plus constants (s:(s+99),
** s:(s + n - 1) with n a literal): true with b - a in *k, so the range is a + (0:k), a
** vector of fixed length whose values the graph computes (a slice at a traced offset is then a
** graph op, not a reason to run the block eagerly). false: no such relation (borrowed). */
bool stage_fixed_offset(Interp *I, Value a, Value b, double *k);
/* The stage's trace kind (op_apply's staging case, src/ops/apply.c), set on every stage tape. */
extern const TraceKind stage_kind;
/* Records op on tape t's graph; out (taken) is the value computed on the unboxed inputs.
** Returns out boxed for t (owned). */
Value stage_record_op(Interp *I, Tape *t, OpKind op, int nin, const Value *in, int nextra, const Value *extra,
                      Value out, Span sp);
/* r (taken), the value of op (OP_MASKED, OP_MMCHAIN: its program pv in the node's v) on the
** plain values of in[0..n) (at most 12), recorded as one node on every active stage that traces
** an input, outermost first, each level's value the one below it, as op_apply nests the ops of
** a jit call traced inside a staged block. Returns r boxed (owned). */
Value stage_record_nested(Interp *I, OpKind op, int n, const Value *in, Value r, Value pv, Span sp);
/* bi_call's hook: true when the builtin call must be recorded as a graph call node (an effect
** while staging, or a builtin that is not an op applied to a staged value). */
bool stage_wants_call(Interp *I, const Builtin *b, int nargs, const Value *args);
/* A staged block runs eagerly from here (tryCatch: an error it catches must not be replayed by a
** graph; a vector's names, which graphs do not carry); an abstract trace stops. what: the reason
** explain gives ("'tryCatch' catches errors"). Nothing when no stage is active. */
void stage_eager_here(Interp *I, const char *what, Span sp);
/* A builtin run with no stage (builtins.c) called a function whose effects ran unrecorded
** (jvp(f, x, v) with a print in f): the block runs eagerly from here, so they run at every run. */
void stage_effect_unrecorded(Interp *I, const char *name, Span sp);
/* Records the call and runs it on the staged values' current values. Result owned. */
Value stage_call(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, Span sp);
/* A variable read while staging (*place holds its value; env is the Env holding place, NULL for
** a global): a number or matrix from outside the staged code becomes a capture node, read
** again at every run. Returns the value to use (owned). */
Value stage_read(Interp *I, Value *place, Env *env, Symbol *sym, Span sp);
/* A read while a block is staged found the local slot of env unbound and fell back to an outer
** binding: a run of the block's graph checks that the slot is still unbound (else the name
** means the local now, and the block is traced again). */
void stage_guard_unbound(Interp *I, Value *slot, Env *env);
/* g (a jit function's graph) runs inside the active trace: g's guards become that trace's
** (where they name frames made before it), so that its runs check them too. */
struct Graph;
void stage_take_guards(Interp *I, const struct Graph *g);
/* True when env was made outside the innermost active stage (its variables are captures). */
static inline bool stage_outside(const Interp *I, const Env *env) {
  return !env || env->stage_id < (I->stage->capture_id ? I->stage->capture_id : I->stage->id);
}
/* The node of v in stage t's graph: its box's node, a parameter for a value of an enclosing
** stage read by a loop's body (loop.c), else a new constant. */
int32_t stage_node_of(Interp *I, struct Tape *t, Value v, Span sp);

/* --staged: runs statements s[0..n) (a straight-line block at top level) staged: the first run
** traces them, later runs (a loop body) run the optimized graph and store the variables it
** assigns. */
/* Returns the value of s[n-1] (owned). In a function's body (Interp.block_frame) the block's
** variables are its locals: the graph refers to them by depth and slot, so later calls reuse it. */
Value stage_block(Interp *I, AstNode **s, int n);
/* A variable assigned while a block is staged (its value is an output of the block): a global
** (env NULL), or a local of the block's own environment (env); others are internal to a call. */
void stage_assigned(Interp *I, Value *place, Symbol *sym, Env *env);
void stage_blocks_free(Interp *I);

struct Jit;
struct Jit *stage_jit_new(void);
Value stage_call_jit(Interp *I, struct Jit *j, Value f, int nargs, Value *args, Symbol **names, Span sp);
void stage_jit_free(struct Jit *j);
/* The cycle collector's view of a Jit (interp/gc.c): the lists of functions its cache keeps. */
void stage_jit_children(const struct Jit *j, GcVisit fn, void *ctx);

#endif
