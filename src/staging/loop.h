/*
** loop.h — loops as graph nodes (docs/staging.md "Loops"): while a stage traces a function, a
** while loop, and a for loop longer than the unroll limit, become one node of the graph (a
** GN_LOOP, graph.h) whose body (and condition) is a graph of its own, traced once and run at
** every iteration, so the graph does not grow with the trip count. The evaluator drives it (it
** evaluates the body); this file makes the body's and the condition's graphs, runs the
** remaining iterations while tracing, adds the node and binds the variables to its results.
** A run whose inputs one grad traces is checkpointed (docs/staging.md "Checkpointing"): one
** node on the grad's tape, about 2 sqrt(n) carried states kept, the segments between them
** recomputed in the backward pass (MLS_LOOP_CHECKPOINT=k: every k-th state; 0: none). Under a
** grad traced inside the stage (jit(grad(f))) the body is traced without that grad's boxes and
** the node's backward pass is a reverse loop node of the graph (GN_RLOOP), run the same way.
**
** The protocol, from eval.c:
**   L = stage_loop_begin(...)            NULL: the loop is run as before (unrolled, or eager)
**   while: stage_loop_cond(L, c)          after evaluating the condition with the places traced
**   for:   the loop variable = stage_loop_index(L, first element)
**   evaluate the body once
**   k = stage_loop_end(L, ...)            -1: staged, the loop is done; else the caller runs the
**                                         iterations from k on eagerly (the stage went eager)
*/
#ifndef MLS_LOOP_H
#define MLS_LOOP_H

#include "state.h"
#include "value.h"

/* if-conversion inside a loop's body (eval.c's if_select): whether the condition c can be a
** choice between both branches' values here (a loop body's stage traces it, not a constant, not
** an abstract trace); the graph's size now; whether every node added since mark can neither
** fail at a later run nor is an effect (then both branches may run at every run); and the
** body's stage made eager (why). */
bool stage_select_ok(Interp *I, Value c);
int32_t stage_graph_mark(Interp *I);
bool stage_pure_since(Interp *I, int32_t mark);
void stage_select_abandon(Interp *I, Span sp, const char *why);

/* The most variables a loop node carries. */
enum { LOOP_MAX_CARRY = 48 };

typedef struct LoopStage LoopStage;

/* The longest for loop of known length unrolled into a staged graph (MLS_LOOP_UNROLL; 64):
** a longer one becomes a loop node. */
int64_t stage_loop_unroll(Interp *I);
/* Begins staging a loop whose body assigns the n variables at places[] (syms: their names; a
** place may be unbound, a temporary the body assigns before it reads it). NULL when the loop
** cannot be a node (no stage tracing values here, a variable that is not a number, boolean or
** matrix, one traced by grad or jvp, ...): then nothing changed. Else the places hold the
** traced loop's parameters and the active stage is the condition's (while) or the body's (for). */
LoopStage *stage_loop_begin(Interp *I, bool is_while, int n, Value **places, Symbol **syms, Span sp);
/* for: the loop variable's value for element x of the sequence (owned); var: where the variable
** lives (a read of it in the body is the index, never a capture). */
Value stage_loop_index(Interp *I, LoopStage *L, Value x, Value *var);
/* for (var in a:b) with a or b traced (boxes of the stage): the node computes the range at each
** run (rsp: the range, for its errors; var: the loop variable, which the node's last element
** item binds). Call after stage_loop_begin, before stage_loop_index. */
void stage_loop_range(Interp *I, LoopStage *L, Value a, Value b, Span rsp, Symbol *var, Value *var_place);
/* while: the condition evaluated to c (borrowed). True: it depends on the carried variables and
** held at the first test; the body is traced next. False: the loop is not staged (L is freed,
** the places hold their values again; a condition that depended on traced values made the
** enclosing stage eager): the caller runs the loop as before, testing c first. */
bool stage_loop_cond(Interp *I, LoopStage *L, Value c);
/* The body was evaluated once. Runs the rest of the loop (for: elements 1 .. count-1 of seq;
** while: until the condition is false), adds the loop node and binds the places to its
** results: -1. Or the loop could not be a node (the body went eager, a variable changed its
** type or shape, ...): the enclosing stage runs eagerly from here, the places hold plain values,
** and the caller runs the iterations from the one returned on (for: an element's position;
** while: 1). L is freed either way. */
int64_t stage_loop_end(Interp *I, LoopStage *L, Value seq, int64_t count);
/* jit(grad(f)): whether L's body is traced without the boxes of a grad traced inside the stage
** (loop.c "reverse loop nodes"). Its first iteration must then run no effect (its run would not be
** the grad's): an effect there throws with I->loop_restart set before it happens, and the caller,
** which ran the body under mls_pcall, calls stage_loop_abort (the places hold their values before
** the loop again, L is freed) and runs the loop as before. Where such a loop cannot be a node,
** stage_loop_end also restores the places and returns 0: the caller runs the loop from its start
** (a while loop: from its first test). */
bool stage_loop_grad(const LoopStage *L);
void stage_loop_abort(Interp *I, LoopStage *L);

#endif
