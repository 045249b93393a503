/*
** ops.h — the eager entry points of the ops (the op table itself is ops/table.h): they check
** shapes ("shape inference"), allocate results and dispatch to the backend.
** Arguments are borrowed; every returned Value is owned by the caller (+1).
*/
#ifndef MLS_OPS_H
#define MLS_OPS_H

#include "mls.h"
#include "ops/table.h"
#include "value.h"

/* The one dispatcher (src/ops/apply.c): op on in[0..nin) (values or boxes) with its parameters
** extra[0..nextra) (index values, shapes; borrowed). When an operand is traced, the innermost
** trace's kind handles the op (grad's tape records it, jvp pushes tangents, a stage adds a graph
** node: TraceKind, autodiff.h); an active stage takes an op on constants too; otherwise the op's
** family kernel runs on the backend where the operands live. Errors are located at sp (an
** out-of-memory too: I->call_span is sp meanwhile). The result is owned. */
Value op_apply(Interp *I, OpKind op, int nin, const Value *in, int nextra, const Value *extra, Span sp);
/* The same with the caller's grant, lent: the caller lends the operands in[]: it releases its
** references right after the call, or the one other reference is the variable the result is
** assigned to (X = X / 255), so an elementwise kernel may write its result over an operand
** that nothing else holds (ops/ew.c reusable). The grant is for this op only, never passed on
** to the ops it makes, and a trace ignores it. */
Value op_apply_lent(Interp *I, OpKind op, bool lent, int nin, const Value *in, int nextra, const Value *extra, Span sp);

/* ---- the entry points of the families (src/ops/): op_apply on their operands ----
** Arguments are borrowed; results are owned by the caller. */
Value op_binary(Interp *I, OpKind op, Value a, Value b, Span sp);
Value op_unary(Interp *I, OpKind op, Value a, Span sp);
/* op_binary, op_unary with op_apply_lent's grant. */
Value op_binary_lent(Interp *I, OpKind op, Value a, Value b, bool lent, Span sp);
Value op_unary_lent(Interp *I, OpKind op, Value a, bool lent, Span sp);
Value op_matmul(Interp *I, Value a, Value b, Span sp);
/* t(a): for a matrix, a view sharing a's storage (tensor_view_t), never a copy (a sparse row or
** column excepted: its transpose is a CSR of its own). */
Value op_transpose(Interp *I, Value a, Span sp);
/* a's elements, row-major, as a rows x cols matrix (a packed copy; rows * cols == numel(a)). */
Value op_reshape(Interp *I, Value a, int64_t rows, int64_t cols, Span sp);
/* Operand v (a matrix, number or boolean; borrowed) of a GEMM, as a tensor the backend reads
** row-major with unit column stride (+1): the matrix itself, a number as 1x1, a packed copy,
** or, when v is a transposed view, the matrix underneath with *flip set: the caller then
** toggles that operand's transpose flag instead of copying. */
struct Tensor *op_gemm_operand(Interp *I, Value v, bool *flip);
/* Operands on different devices: a CPU matrix of at most TENSOR_SMALL elements among device
** ones is copied to their device (the copy held on the tmp stack, in[] updated); with a larger
** one nothing moves, and the op runs on the CPU (be_place). */
void op_align_devices(Interp *I, struct Tensor *in[], int n);
/* OP_SUMPROD's computation, sum(x %*% y) without the product, written with the ops (so each
** piece is traced on its own): op_kernel's, and OP_SUMPROD's forward rule (+1). */
Value op_sumprod(Interp *I, Value x, Value y, Span sp);
/* A chain of products leaves[0] %*% ... %*% leaves[n-1] (2 <= n <= MM_CHAIN_MAX; borrowed, boxes
** allowed: each product goes through op_apply) in the order plan says: a 1 x (4n - 1) matrix
** of n, then two postfix programs of 2n - 1 tokens each (k >= 0: leaf k; -1: the product of
** the two values on top), the order to compute and, where its result is not finite, the order
** the program wrote (ops/products.c). Staging's chain rewrite; the result is owned. */
#define MM_CHAIN_MAX 32
Value op_mmchain(Interp *I, int n, const Value *leaves, Value plan, Span sp);
/* A new C = op(A) op(B) (+1), where A and B live (be_place), computed by the backend that can
** (be_runner); a failure is a located error. */
struct Tensor *op_gemm_new(Interp *I, bool ta, bool tb, struct Tensor *A, struct Tensor *B, Span sp);
/* op_gemm_new's product into C (m x n, packed; borrowed, as A and B): the backend call alone,
** the one both op_gemm_new and a loop body's lean runner (staging/lean.c) make, so their bits
** are the same. Returns the backend's status and sets *ran to the backend that ran it; a product
** the interrupt flag stopped (I->interrupted) left C unfinished: the caller raises it. */
struct Backend;
int op_gemm_into(Interp *I, bool ta, bool tb, struct Tensor *A, struct Tensor *B, struct Tensor *C, const struct Backend **ran);
/* A reduction (OPF_RED without OPF_KEEP, not DIAG or IFELSE): sum, prod, max and min of all elements
** give a number; row* ops an nrow x 1 and col* ops a 1 x ncol matrix. A number is a 1x1
** matrix. Empty rows/columns have no max/min/index: "bad argument #1 to 'rowMaxs' (...)". */
Value op_reduce(Interp *I, OpKind op, Value a, Span sp);
/* An OPF_KEEP op (cumsum, cumprod, softmax): same shape as a; a number gives a number. */
Value op_scan(Interp *I, OpKind op, Value a, Span sp);
/* diag: a vector (nx1 or 1xn, or a number) to an nxn diagonal matrix; a square matrix to its
** diagonal as nx1; anything else is "bad argument #1 to 'diag' (...)". */
Value op_diag(Interp *I, Value a, Span sp);
/* The derivative kernels CUMEXT_GRAD(g, x, y), CUMEXT_TAN(t, x, y), ROWPRODS_GRAD(g, x), COLPRODS_GRAD(g, x): a result
** shaped as x = in[1] (+1); the inputs are borrowed. Recorded when traced or staged. */
Value op_grad_aux(Interp *I, OpKind op, int nin, const Value *in, Span sp);
/* ifelse(test, yes, no) elementwise: yes where test is nonzero, no where 0, NaN where NaN.
** Numbers and 1x1 matrices broadcast; other matrices share one shape. Without any matrix the
** chosen argument itself is returned (retained; any value). */
Value op_ifelse(Interp *I, Value test, Value yes, Value no, Span sp);
Value op_range(Interp *I, Value a, Value b, Span sp);
/* How many numbers from:to has (from, from +/- 1, ... up to to, as ':' counts them), and the
** same after ':''s checks of its ends (finite, less than 1e15 apart: else the located error). */
int64_t op_range_length(double from, double to);
int64_t op_range_count(Interp *I, double from, double to, Span sp);
/* Whether comparison op holds for an order c (< 0, 0, > 0: strcmp's); -1 for another op. */
int op_cmp_holds(OpKind op, int c);
/* A string of the value for '+' and paste(): 15 significant digits (LANGUAGE.md §15). */
Value op_concat(Interp *I, Value a, Value b, Span sp);
/* An OPF_NN op (ops/nn.c) on in[0..arity) (numbers or matrices; boxes allowed: recorded
** when traced) with its extra prm, the 1x11 parameter matrix (VT_NULL for bias ops). Shapes are
** checked against prm (ops/nn.h) with errors naming both; the result is owned. */
Value op_nn(Interp *I, OpKind op, const Value *in, Value prm, Span sp);


/* ---- W * e at a sparse W's stored cells (ops/masked.c, docs/sparse.md) ----
** A program: a 1 x (1 + 4n) matrix, the root (MK_ROOT_*: how W and e combine) and then n
** instructions (code, a, b, flags), each an MK_* code whose operands a, b are earlier
** instructions; MK_LEAF's a is an index into the inputs (>= 1), and an MK_PROD multiplies two
** MK_LEAF instructions, transposing either first as flags (MK_TA, MK_TB) say. Every
** instruction but a leaf is used once; e is the last. in[0] is W. */
enum { MK_LEAF, MK_PROD, MK_ADD, MK_SUB, MK_MUL, MK_MULZ, MK_NEG, MK_SQ, MK_LOG, MK_EXP };
enum { MK_TA = 1, MK_TB = 2 };
enum { MK_ROOT_MUL, MK_ROOT_ZW, MK_ROOT_ZE };     /* W * e, W *0 e, e *0 W (OP_MULZ) */
/* Added to the root: W may be dense (staging's rewrite of a mostly-zero dense W, GF_ZEROS): at
** run time a dense W with at most MK_DENSE_W_MAX nonzeros is read through a sparse copy, made once and
** kept while W lives (Interp.mask_dense); the result is then sparse too. */
#define MK_DENSE_W 8
/* The most nonzeros (a fraction of the cells) a dense W may have to be read as sparse. Measured
** (2026-11-28, one thread, a staged CG loop of (W * (S %*% t(V))) %*% V, 2000 x 1000, k = 10,
** against the GEMMs): 0.72x the dense loop's time at 15% nonzero, 0.96x at 20%, 0.99x at 25%,
** 2.3x at 30% (its arrays pass 4 MiB, which malloc maps afresh each time); so up to 20%. */
#define MK_DENSE_W_MAX 0.2
#define MK_MAX 64
/* Appends instruction (code, a, b, flags) to the program pl of *n instructions (room for
** MK_MAX): its index, or -1 when the program is full. For the front ends. */
int op_masked_emit(double *pl, int *n, int code, int a, int b, int fl);
/* W * e into *r (+1, sparse) computed at W's stored cells only, when W is a sparse matrix, the
** inputs are plain values (not traced) and bounds show e finite at every cell, or the root is
** W *0 e (so that the dense values are exactly these); false, nothing made, otherwise. */
bool op_masked_sparse(Interp *I, int nin, const Value *in, Value plan, Value *r);
/* Releases the sparse copy of a dense W that op_masked_sparse keeps (Interp.mask_dense). */
void op_masked_forget(Interp *I);
/* The same, or where it does not apply e's ops one by one and W * e (OP_MASKED's node). */
Value op_masked(Interp *I, int nin, const Value *in, Value plan, Span sp);
/* The reverse rule of W * e (root MK_ROOT_MUL, no MK_MULZ, no transposed products) at W's stored
** cells: gin[k] (owned; VT_NULL where nothing reaches input k, and always for W, in[0]) is the
** adjoint of input k given g, the result's adjoint (a number standing for a matrix filled with
** it, or a matrix of W's shape). Products take the sampled form (an n x k factor's adjoint is
** S %*% V, S the sparse adjoint at W's cells); an input of the result's shape gets a sparse
** adjoint with W's pattern. Plain values only; false (gin all VT_NULL) for another form. */
bool op_masked_vjp(Interp *I, int nin, const Value *in, Value plan, Value g, Value *gin, Span sp);

#endif
