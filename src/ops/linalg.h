/*
** ops/linalg.h — the linear-algebra family's ops that LAPACK (or a device's solver) computes:
** solve, inv, det and the outputs of cholesky, eigen, qr and svd as ops of their own (ops.def
** OP_SOLVE .. OP_SVD_V), on plain values (ops/linalg.c). The tape, the stager and the graph
** runner reach them through linalg_apply; the builtins of the same names call them too.
*/
#ifndef MLS_OPS_LINALG_H
#define MLS_OPS_LINALG_H

#include "ops.h"

/* op (OP_SOLVE, OP_INV, OP_DET, OP_CHOL, OP_EIGVALS, OP_EIGVECS, OP_QR_Q, OP_QR_R, OP_SVD_U,
** OP_SVD_S, OP_SVD_V) on in[0..arity) (borrowed): plain values, computed; an operand still
** traced by an outer grad (a derivative's derivative) hands the op to that tape (ad_apply).
** The result is owned. Errors are those of the builtin of the same name ("bad argument #1 to
** 'solve' (...)", "eigen: ..."), at sp. */
Value linalg_apply(Interp *I, OpKind op, const Value *in, Span sp);
/* The same with the errors of solve, inv and det naming name (the builtin called: "inverse" is
** DML's other name of inv); the factorizations' always name cholesky, eigen, qr or svd. */
Value linalg_apply_as(Interp *I, OpKind op, const Value *in, const char *name, Span sp);

/* The factorizations, all outputs at once. ORDER: the names in linalg.c factor_at. */
typedef enum LinalgFactor {
  LF_CHOLESKY,     /* L (lower, L %*% t(L) = A) */
  LF_EIGEN,        /* values (n x 1, decreasing), vectors (n x n, one per column) */
  LF_QR,           /* Q (m x k), R (k x n), k = min(m, n) */
  LF_SVD           /* U (m x k), S (k x k diagonal), V (n x k) */
} LinalgFactor;

/* The outputs of factorization f of the plain (not traced) matrix or number A (borrowed) into
** out[0..n), each owned by the caller; returns n (1, 2, 2, 3). Errors are the builtin's
** ("eigen: ...", at sp). */
int linalg_factor(Interp *I, LinalgFactor f, Value A, Value out[3], Span sp);

/* The worker thread of long LAPACK calls (linalg.c, "Ctrl-C during a long factorization"): a
** call of I estimated at `flops` or more (I->la_thread_flops, default 1e9) runs on one, so that
** Ctrl-C ends the op at once; an interrupted call's worker runs on to its end alone
** (I->la_abandoned). la_busy: some such worker of I still runs (main() asks before interp_free,
** and then ends the process without the library destructors); la_wait_abandoned waits for them
** and frees what they held (tests); la_detach_abandoned (interp_free) frees those that ended and
** leaves the others running with what they hold, never freed: the process is about to end. */
void la_set_thread_flops(Interp *I, double flops);
/* Runs call(ctx), estimated at `flops` at most, on such a worker (on this thread when under
** I->la_thread_flops or when none starts) and returns when it has ended; on Ctrl-C raises
** "interrupted" at sp at once, and the worker runs on alone, then drop(ctx) frees the context
** with whatever call made in it (when I reaps the job). ctx: heap memory that passes to the job
** for the call (the caller's again when la_call returns; dropped if la_call throws before the
** worker starts); call must not throw nor touch the interpreter. hold0, hold1 (or NULL): tensors
** call reads or writes, held by the job while it runs. */
void la_call(Interp *I, Span sp, double flops, void (*call)(void *ctx), void (*drop)(void *ctx), void *ctx,
             Tensor *hold0, Tensor *hold1);
bool la_busy(Interp *I);
void la_wait_abandoned(Interp *I);
void la_detach_abandoned(Interp *I);

#endif
