/*
** ops/linalg.h — the linear-algebra family's ops that LAPACK (or a device's solver) computes:
** solve, inv, det and the outputs of cholesky, eigen, qr and svd as ops of their own (ops.def
** OP_SOLVE .. OP_SVD_V), on plain values. The tape, the stager and the graph runner reach
** them through op_run; the builtins of the same names call them too.
*/
#ifndef MLS_OPS_LINALG_H
#define MLS_OPS_LINALG_H

#include "ops.h"

/* op (OP_SOLVE, OP_INV, OP_DET, OP_CHOL, OP_EIGVALS, OP_EIGVECS, OP_QR_Q, OP_QR_R, OP_SVD_U,
** OP_SVD_S, OP_SVD_V) on in[0..arity) (plain values: no boxes; borrowed). The result is owned.
** Errors are those of the builtin of the same name ("bad argument #1 to 'solve' (...)"). */
Value linalg_apply(Interp *I, OpKind op, const Value *in, Span sp);

#endif
