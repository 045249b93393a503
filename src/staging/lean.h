/*
** lean.h — the lean runner of a loop node's body (docs/staging.md "The lean runner"): a body
** whose nodes are elementwise ops, products and fusion groups on numbers and dense matrices of
** the shapes the trace gave runs as a flat program over buffers kept across the iterations of
** one loop run, calling the CPU kernels directly; the results are the graph runner's (and
** eager's) to the last bit. Any other body runs through graph_run_into as before.
*/
#ifndef MLS_LEAN_H
#define MLS_LEAN_H

#include "staging/graph.h"

typedef struct LeanProg LeanProg;

/* The lean program of loop lp's body (owned: lean_free), or NULL when the body has a node the
** lean runner does not run (then nothing else changes). */
LeanProg *lean_compile(const Loop *lp);
void lean_free(LeanProg *p);

/* Whether one loop run (leaves: the carried values, the index, the enclosing graph's values)
** can take the lean path: plain dense CPU matrices and numbers of the traced types and shapes,
** no --nan-check, no device but the CPU, no stage tracing around it, the body's guards holding.
** Checked once per run: the lean steps keep the carried values' types and shapes. */
bool lean_fits(Interp *I, const LeanProg *p, const Loop *lp, const Value *leaves);

/* One iteration: the body computed into the buffers held in hold (a list of 2n NULL items on
** the temp stack, n the body's node count: node i's buffer at i, the product under a summed
** fusion group i at n + i; kept across the run's iterations), then the carried
** leaves[0 .. ncarry-1] replaced by the new values (a buffer a carried value no longer needs
** becomes its node's buffer again, so a run of a fixed-shape body allocates nothing after its
** first iterations). False (nothing changed): a kernel declined (a fusion group a backend
** cannot run); the caller runs this iteration and the rest of the run through graph_run_into.
** Interrupts are raised before the leaves change. */
bool lean_step(Interp *I, const LeanProg *p, const Loop *lp, Value *leaves, List *hold);

#endif
