/*
** ops/reduce.c — the reduction family: sums, products, extremes and their row and column forms
** (OPF_RED), the scans that keep the shape (OPF_KEEP: cumsum, softmax ...), diag, and the
** kernels some of their derivative rules use (OP_CUMEXT_GRAD ...).
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "ops/family.h"

/* "bad argument #1 to 'rowMaxs' (...)": these ops are called as the builtins of their symbol. */
static l_noret bad_arg(Interp *I, OpKind op, Span sp, const char *what, Value v) { op_bad_argn(I, op, 1, sp, what, v); }

/* The matrix an op of the reduction family works on: a number becomes 1x1 (+1, contiguous). */
Tensor *red_input(Interp *I, OpKind op, Value a, Span sp) {
  if (a.t == VT_MAT) return tensor_contiguous(I, a.u.m);
  if (!is_numlike(a)) bad_arg(I, op, sp, "matrix expected", a);
  Tensor *t = tensor_new(I, 1, 1);
  tensor_data(t)[0] = numv(a);
  return t;
}

/* Runs the OPF_RED op on a's matrix into a new rows x cols result (+1). */
static Tensor *run_red(Interp *I, OpKind op, Value a, int64_t rows, int64_t cols, Span sp) {
  Tensor *x = red_input(I, op, a, sp);
  tmp_push(I, val_mat(x));
  Tensor *out = op_run1(I, op, x, rows, cols, sp);
  tmp_pop(I, 1);
  tensor_free_ref(x);
  return out;
}

Value red_reduce(Interp *I, OpKind op, Value a, Span sp) {
  MLS_ASSERT((op_info[op].flags & (OPF_RED | OPF_KEEP)) == OPF_RED && op != OP_DIAG && op != OP_IFELSE);
  if (a.t != VT_MAT && !is_numlike(a)) bad_arg(I, op, sp, "matrix expected", a);
  int64_t r = a.t == VT_MAT ? tensor_rows(a.u.m) : 1, c = a.t == VT_MAT ? tensor_cols(a.u.m) : 1;
  int64_t orows = 1, ocols = 1;
  switch (op) {
  case OP_MAX: case OP_MIN:
    if (r * c == 0) bad_arg(I, op, sp, "non-empty matrix expected", a);
    break;
  case OP_ROWMAXS: case OP_ROWMINS: case OP_ROWINDEXMAX: case OP_ROWINDEXMIN:
    if (c == 0 && r > 0) bad_arg(I, op, sp, "matrix with non-empty rows expected", a);
    /* fall through */
  case OP_ROWSUMS: case OP_ROWPRODS:
    orows = r;
    break;
  case OP_COLMAXS: case OP_COLMINS:
    if (r == 0 && c > 0) bad_arg(I, op, sp, "matrix with non-empty columns expected", a);
    /* fall through */
  case OP_COLSUMS: case OP_COLPRODS:
    ocols = c;
    break;
  case OP_CUMSUMPROD:
    if (c != 2) bad_arg(I, op, sp, "matrix of two columns expected", a);
    orows = r;
    break;
  default: break;                            /* SUM, PROD: one value */
  }
  if (is_numlike(a) && op == OP_SUM) return val_num(numv(a));      /* the common fast path */
  Tensor *out = run_red(I, op, a, orows, ocols, sp);
  if (op == OP_SUM || op == OP_PROD || op == OP_MAX || op == OP_MIN || is_numlike(a)) {
    if (I->dev_scalars && out->st->dev) return val_mat(out);        /* (replay.c) */
    double s = tensor_data(out)[0];
    tensor_free_ref(out);
    return val_num(s);
  }
  return val_mat(out);
}

Value red_scan(Interp *I, OpKind op, Value a, Span sp) {
  MLS_ASSERT(op_info[op].flags & OPF_KEEP);
  if (a.t != VT_MAT && !is_numlike(a)) bad_arg(I, op, sp, "matrix expected", a);
  int64_t r = a.t == VT_MAT ? tensor_rows(a.u.m) : 1, c = a.t == VT_MAT ? tensor_cols(a.u.m) : 1;
  Tensor *out = run_red(I, op, a, r, c, sp);
  if (a.t == VT_MAT) return val_mat(out);
  double s = tensor_data(out)[0];
  tensor_free_ref(out);
  return val_num(s);
}

Value red_grad_aux(Interp *I, OpKind op, int nin, const Value *in, Span sp) {
  MLS_ASSERT(op == OP_CUMEXT_GRAD || op == OP_CUMEXT_TAN || op == OP_CUMSUMPROD_GRAD || op == OP_ROWPRODS_GRAD || op == OP_COLPRODS_GRAD);
  int mark = I->ntmp;
  Tensor *t[3];
  for (int k = 0; k < nin; k++) {
    t[k] = red_input(I, op, in[k], sp);
    tmp_push(I, val_mat(t[k]));
  }
  Tensor *out = tensor_new_on(I, be_place(I->device, t, nin), tensor_rows(t[1]), tensor_cols(t[1]));   /* x's shape */
  op_run_kernel(I, op, out, t, NULL, sp);
  tmp_release_to(I, mark);
  if (in[1].t == VT_MAT) return val_mat(out);
  double s = tensor_data(out)[0];
  tensor_free_ref(out);
  return val_num(s);
}

Value red_diag(Interp *I, Value a, Span sp) {
  if (a.t != VT_MAT && !is_numlike(a)) bad_arg(I, OP_DIAG, sp, "vector or square matrix expected", a);
  int64_t r = a.t == VT_MAT ? tensor_rows(a.u.m) : 1, c = a.t == VT_MAT ? tensor_cols(a.u.m) : 1;
  if (r == c) return val_mat(run_red(I, OP_DIAG, a, r, 1, sp));   /* 1x1 either way */
  if (r == 1 || c == 1) return val_mat(run_red(I, OP_DIAG, a, r * c, r * c, sp));
  bad_arg(I, OP_DIAG, sp, "vector or square matrix expected", a);
}

/* The entry points (ops.h). */
Value op_reduce(Interp *I, OpKind op, Value a, Span sp) { return op_enter(I, op, 1, &a, 0, NULL, sp); }
Value op_scan(Interp *I, OpKind op, Value a, Span sp) { return op_enter(I, op, 1, &a, 0, NULL, sp); }
Value op_grad_aux(Interp *I, OpKind op, int nin, const Value *in, Span sp) { return op_enter(I, op, nin, in, 0, NULL, sp); }
Value op_diag(Interp *I, Value a, Span sp) { return op_enter(I, OP_DIAG, 1, &a, 0, NULL, sp); }
