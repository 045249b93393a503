/*
** ops/comm.c — the communication family: allreduce, the sum (or max, min) of a value over the
** processes of an MPI run. Its kernel is the interpreter's communication backend
** (Interp.comm_allreduce: src/mpi/'s, or the identity of one process), so this layer names no
** MPI function; its derivative rules are here beside it.
*/
#include "ops/family.h"
#include "ops/rules.h"
#include "ops/shapes_impl.h"

Value comm_allreduce(Interp *I, Value x, int red, Span sp) { return I->comm_allreduce(I, x, red, sp); }

/* ---- derivative rules (ops/rules.h) ---- */
/* The loss is the sum of every rank's: each rank's adjoints, summed over the ranks. Max and
** min: to every rank that holds the extreme. */
void comm_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  Span sp = r->sp;
  if (r->op != OP_ALLREDUCE) rl_no_rule(I, r->op, false, sp);
  Value a = r->in[0], y = r->y, red = ad_primal(r->prm[0]);
  Value gs = T(I, op_apply(I, OP_ALLREDUCE, 1, &g, 1, (Value[]){ val_num(MPI_RED_SUM) }, sp));
  if (red.u.n == MPI_RED_SUM) gin[0] = gs;
  else gin[0] = B2(OP_MULZ, B2(OP_EQ, a, y), gs);
}

/* Max and min: the mean tangent of the ranks holding the extreme. */
Value comm_jvp(Interp *I, const RuleArgs *r, const Value *tin) {
  Span sp = r->sp;
  if (r->op != OP_ALLREDUCE) rl_no_rule(I, r->op, true, sp);
  Value a = r->in[0], y = r->y, ta = tin[0];
  if (ta.t == VT_NULL) return ta;
  Value sum = val_num(MPI_RED_SUM);
  if (ad_primal(r->prm[0]).u.n == MPI_RED_SUM) return T(I, op_apply(I, OP_ALLREDUCE, 1, &ta, 1, &sum, sp));
  Value mask = B2(OP_EQ, a, y);
  Value num = T(I, op_apply(I, OP_ALLREDUCE, 1, (Value[]){ B2(OP_MULZ, mask, ta) }, 1, &sum, sp));
  return B2(OP_DIV, num, T(I, op_apply(I, OP_ALLREDUCE, 1, &mask, 1, &sum, sp)));
}

/* ---- shape rules (ops/shapes_impl.h): the checks above on shapes alone, same messages ---- */
/* ==== communication: allreduce (one process: X itself; mpi/builtins_mpi.c) ==== */
ShapeStatus shape_rule_allreduce(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  Shape a = in[0];
  (void)op;
  (void)x;
  if (sh_numlike(a)) { *out = a.known ? shape_num(a.value) : shape_num_unknown(); return SHAPE_OK; }   /* a boolean: 1/0 */
  if (a.kind == SK_MAT || a.kind == SK_NUMERIC) { *out = a; return SHAPE_OK; }
  if (sh_unknown(a)) { *out = shape_numeric(); return SHAPE_OK; }
  char d[64];
  if (!shape_describe(a, d, sizeof d)) chk_fail_unsaid(&k);
  else chk_fail(&k, sp, "bad argument #1 to 'allreduce' (number or matrix expected, got %s)", d);
  return chk_status(&k);
}
