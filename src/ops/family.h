/*
** ops/family.h — what the op families of src/ops/ share, and nothing outside them includes:
** operand tests, the located errors every op gives alike, the backend call of one kernel, and
** each family's kernel entry on plain values (no boxes, no active stage: op_apply has handed
** every traced operand to its trace before it calls op_kernel). Arguments are borrowed;
** every returned Value is owned by the caller (+1).
*/
#ifndef MLS_OPS_FAMILY_H
#define MLS_OPS_FAMILY_H

#include "backend/backend.h"
#include "ops.h"
#include "state.h"
#include "tensor.h"

static inline bool is_numlike(Value v) { return v.t == VT_NUM || v.t == VT_BOOL; }
static inline double numv(Value v) { return v.t == VT_NUM ? v.u.n : (double)v.u.b; }

/* ---- apply.c: errors and the backend call ---- */
/* "3x4", "1x1" for a number, else the type's name. */
void op_shape_str(Value v, char *buf, size_t n);
/* "invalid operand(s) for '+': ..." */
l_noret op_bad_operand(Interp *I, OpKind op, Value v, Span sp);
l_noret op_bad_operands(Interp *I, OpKind op, Value a, Value b, Span sp);
/* "bad argument #argn to 'rowMaxs' (what, got 3x4)": these ops are called as the builtins of
** their symbol. */
l_noret op_bad_argn(Interp *I, OpKind op, int argn, Span sp, const char *what, Value v);
/* Runs op's kernel into out (fresh, +1, freed on failure) on the backend be_runner picks; a
** failure, an interrupt or (--nan-check) a NaN from finite inputs is a located error. */
void op_run_kernel(Interp *I, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p, Span sp);
/* A one-input op on matrix x (borrowed; packed first when it is a view) into a new rows x cols
** result on x's device (+1). */
Tensor *op_run1(Interp *I, OpKind op, Tensor *x, int64_t rows, int64_t cols, Span sp);
/* Whether one of in[0..n) (NULL entries skipped) holds values an abstract trace did not compute
** (tensor_abstract); the error that stops that trace when a kernel would read them. Every
** kernel call (op_run_kernel, GEMM, nn, LAPACK) checks this and counts itself in
** Interp.kernel_runs. */
bool op_abstract_in(Tensor *const in[], int n);
l_noret op_abstract_stop(Interp *I, OpKind op, Span sp);

/* ---- apply.c: the kernels by family, and the families' entry into op_apply ---- */
/* op on plain operands (no box, no active stage): its family's kernel (+1). */
Value op_kernel(Interp *I, OpKind op, bool lent, const Value *in, int nextra, const Value *x, Span sp);

/* The same on dense operands: the sparse case (sparse.c) comes here once its operands are dense. */
Value op_kernel_dense(Interp *I, OpKind op, bool lent, const Value *in, int nextra, const Value *x, Span sp);

/* ---- sparse.c: the sparse case of every family (docs/sparse.md) ---- */
/* Whether an operand is a sparse matrix (or --sparse always is on): op_kernel then hands the op
** to sp_kernel. */
static inline bool sp_involved(const Interp *I, int nin, const Value *in) {
  bool any = I->sparse_mode >= SPARSE_ALWAYS;
  for (int k = 0; k < nin; k++) any |= in[k].t == VT_MAT && in[k].u.m->st->sparse;
  return any;
}
/* op on operands of which one is sparse: its sparse kernel when it has one for them, else the
** dense kernel on dense copies of the sparse operands. */
Value sp_kernel(Interp *I, OpKind op, bool lent, int nin, const Value *in, int nextra, const Value *x, Span sp);
/* solve(A, B), cholesky(A), inv(A), det(A) (op OP_SOLVE, OP_CHOL, OP_INV, OP_DET) of a sparse
** square A through CHOLMOD (symmetric positive definite: solve, cholesky) or UMFPACK (solve, inv,
** det) into *r (+1): true; false (nothing made) for any other operands, which take LAPACK's path
** and its errors. name: the builtin called, for inv's errors ("inv", "inverse"). */
bool sp_linalg(Interp *I, OpKind op, const Value *in, const char *name, Value *r);

/* op_apply as the entry points of the families call it: its eager case (no stage, no box)
** inline, straight to the kernel, as op_apply's own first test does (the per-op cost of a small
** matrix's op is the dispatch); else op_apply. */
/* True when no trace can take the op: no stage, no box among the operands and parameters. */
static inline bool op_eager(const Interp *I, int nin, const Value *in, int nextra, const Value *extra) {
  if (I->stage) return false;
  bool boxed = false;
  for (int k = 0; k < nin; k++) boxed |= in[k].t == VT_BOX;
  for (int k = 0; k < nextra; k++) boxed |= extra[k].t == VT_BOX;
  return !boxed;
}

/* op_kernel with op_apply's bookkeeping: errors (an out-of-memory too) located at sp; lent as
** op_apply_lent's. */
static inline Value op_run_eager(Interp *I, OpKind op, bool lent, const Value *in, int nextra, const Value *extra, Span sp) {
  Span saved = I->call_span;
  I->call_span = sp;
  Value r = op_kernel(I, op, lent, in, nextra, extra, sp);
  I->call_span = saved;
  return r;
}

static inline Value op_enter_lent(Interp *I, OpKind op, bool lent, int nin, const Value *in, int nextra, const Value *extra,
                                  Span sp) {
  if (op_eager(I, nin, in, nextra, extra)) return op_run_eager(I, op, lent, in, nextra, extra, sp);
  return op_apply_lent(I, op, lent, nin, in, nextra, extra, sp);
}

static inline Value op_enter(Interp *I, OpKind op, int nin, const Value *in, int nextra, const Value *extra, Span sp) {
  return op_enter_lent(I, op, false, nin, in, nextra, extra, sp);
}

/* op_align_devices where an operand is on a device; nothing to do (the common case, tested
** here inline) when all are on the CPU. */
static inline void op_align(Interp *I, Tensor *in[], int n) {
  for (int k = 0; k < n; k++)
    if (in[k] && in[k]->st->be != I->cpu) { op_align_devices(I, in, n); return; }
}

/* ---- each family's kernel entry (op_kernel dispatches to them) ---- */
/* ew.c: an elementwise op of two or one operands; lent: the caller lends its operands
** (op_apply_lent), so the result may be written over one that nothing else holds. */
Value ew_binary(Interp *I, OpKind op, Value a, Value b, bool lent, Span sp);
Value ew_unary(Interp *I, OpKind op, Value a, bool lent, Span sp);
Value ew_ifelse(Interp *I, Value test, Value yes, Value no, Span sp);
/* matmul.c: the product (OP_SUMPROD's is op_sumprod, ops.h). */
Value mm_matmul(Interp *I, Value a, Value b, Span sp);
/* products.c: the product forms of staging's rewrites (OP_DOT .. OP_XTWXV), each the
** eager form's result where its own is not finite. */
Value mm_product_form(Interp *I, OpKind op, const Value *in, Span sp);
/* reduce.c: OPF_RED ops without OPF_KEEP, OPF_KEEP ops, the derivative kernels, diag. */
Value red_reduce(Interp *I, OpKind op, Value a, Span sp);
Value red_scan(Interp *I, OpKind op, Value a, Span sp);
Value red_grad_aux(Interp *I, OpKind op, int nin, const Value *in, Span sp);
Value red_diag(Interp *I, Value a, Span sp);
/* The matrix an op of the reduction family (and ifelse) works on: a number becomes 1x1 (+1,
** contiguous); anything else is "bad argument #1 to 'op' (matrix expected, ...)". */
Tensor *red_input(Interp *I, OpKind op, Value a, Span sp);
/* comm.c: allreduce through the interpreter's communication backend (red: MPI_RED_SUM ..). */
Value comm_allreduce(Interp *I, Value x, int red, Span sp);
/* shape.c: reshape and transpose. */
Value shp_reshape(Interp *I, Value a, int64_t rows, int64_t cols, Span sp);
Value shp_transpose(Interp *I, Value a, Span sp);

#endif
