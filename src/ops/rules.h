/*
** ops/rules.h — what the families' derivative rules share (docs/architecture.md "Adding an op").
** Each family file holds its ops' reverse rule (vjp: the operands' adjoints from the result's)
** and forward rule (jvp: the result's tangent from the operands'), beside their kernels' entry;
** op_vjp and op_jvp (apply.c) hand an op to its family's rules, as op_kernel hands it to its
** kernels. autodiff.c's tape (grad) and forward pass (jvp) are the only callers.
**
** Rules are written with the op entry points of ops.h, so when an outer grad is active the
** backward pass is recorded too and can be differentiated again. Every Value a helper here
** returns is a temp on the interpreter's stack (T), freed by the caller's mark: a rule owns
** nothing and an error anywhere releases everything.
*/
#ifndef MLS_OPS_RULES_H
#define MLS_OPS_RULES_H

#include "autodiff.h"
#include "ops.h"
#include "state.h"
#include "tensor.h"

/* One application of op as its rules see it: the operands in[0..nin) and the op's parameters
** prm[0..nprm) (plain values, no box of the trace differentiating), the result y, and for the
** reverse rule which operands want an adjoint. */
typedef struct RuleArgs {
  OpKind op;
  int nin, nprm;
  const Value *in, *prm;
  Value y;
  bool want[3];
  Span sp;
} RuleArgs;

/* The rules by family (each a switch over its family's ops). A reverse rule sets gin[k] (the
** adjoint of in[k], in in[k]'s shape) for the k that want one, from g (the result's adjoint);
** multiplications by g use OP_MULZ (0 where g is 0), so a NaN or Inf in a branch ifelse did not
** take never reaches the gradient (LANGUAGE.md §11). One exception to "in in[k]'s shape": a
** *broadcast adjoint*, a number g given for a matrix of more than one cell, stands for that
** matrix filled with g (sum's rule gives one, so the gradient of `sum(W * E)` never makes a
** dense matrix of ones). Only the elementwise rules, for a node whose operands all have its
** shape, receive one (they pass it on: `sum(A + B)`); autodiff.c's backward pass fills the
** matrix before any other rule runs, and for a leaf's gradient. A forward rule returns the result's tangent
** from the operands' tangents tin[k] (VT_NULL: zero), or VT_NULL when it is zero. */
typedef void (*VjpRule)(Interp *I, const RuleArgs *r, Value g, Value *gin);
typedef Value (*JvpRule)(Interp *I, const RuleArgs *r, const Value *tin);
void ew_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value ew_jvp(Interp *I, const RuleArgs *r, const Value *tin);
void red_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value red_jvp(Interp *I, const RuleArgs *r, const Value *tin);
void mm_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value mm_jvp(Interp *I, const RuleArgs *r, const Value *tin);
void prod_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value prod_jvp(Interp *I, const RuleArgs *r, const Value *tin);
void shp_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value shp_jvp(Interp *I, const RuleArgs *r, const Value *tin);
void index_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value index_jvp(Interp *I, const RuleArgs *r, const Value *tin);
void linalg_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value linalg_jvp(Interp *I, const RuleArgs *r, const Value *tin);
void nn_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value nn_jvp(Interp *I, const RuleArgs *r, const Value *tin);
void comm_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value comm_jvp(Interp *I, const RuleArgs *r, const Value *tin);

/* op's rules, through its family's (apply.c: a new op without a family is a build error). */
void op_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin);
Value op_jvp(Interp *I, const RuleArgs *r, const Value *tin);

/* ---- helpers (rules.c); every Value returned is a temp on the stack ---- */
static inline Value T(Interp *I, Value v) { tmp_push(I, v); return v; }   /* owned temp, freed by the caller's mark */
#define B2(op, a, b) T(I, op_binary(I, op, a, b, sp))
#define U1(op, a) T(I, op_unary(I, op, a, sp))
/* v's shape: *num for a number (1 x 1), else its rows and columns (through boxes). */
void rl_shape(Value v, bool *num, int64_t *r, int64_t *c);
/* A constant r x c matrix of ones. */
Value rl_ones(Interp *I, int64_t r, int64_t c);
/* g summed back to the shape of x (undoing broadcasting, LANGUAGE.md §5). */
Value rl_sum_to(Interp *I, Value g, Value x, Span sp);
Value rl_tp(Interp *I, Value v, Span sp);                  /* t(v) */
Value rl_mm(Interp *I, Value a, Value b, Span sp);         /* a %*% b */
/* op(A) %*% op(B) on plain values with op = transpose where the flag is set: one GEMM with its
** transpose flags (TH's addmm), never a transposed copy. */
Value rl_matmul_t(Interp *I, Value a, bool ta, Value b, bool tb, Span sp);
/* Forward mode's tangent arithmetic, VT_NULL standing for zero: a + b, t * x, -t, and the zero
** a rule needs as a value. */
Value rl_tadd(Interp *I, Value a, Value b, Span sp);
Value rl_tmul(Interp *I, Value t, Value x, Span sp);
Value rl_tneg(Interp *I, Value t, Span sp);
static inline Value rl_tzero(Value t) { return t.t == VT_NULL ? val_num(0) : t; }
/* An op without a rule in this mode: the located error ("grad: 'x' has no derivative rule",
** "jvp: 'x' has no forward rule"). */
l_noret rl_no_rule(Interp *I, OpKind op, bool forward, Span sp);

#endif
