/*
** ops/reduce.c — the reduction family: sums, products, extremes and their row and column forms
** (OPF_RED), the scans that keep the shape (OPF_KEEP: cumsum, softmax ...), diag, and the
** kernels some of their derivative rules use (OP_CUMEXT_GRAD ...).
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "ops/family.h"
#include "ops/rules.h"
#include "ops/shapes_impl.h"

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
  MLS_ASSERT(op == OP_CUMEXT_GRAD || op == OP_CUMEXT_TAN || op == OP_ROWPRODS_GRAD || op == OP_COLPRODS_GRAD ||
             op == OP_LINREC || op == OP_RLINREC);
  int mark = I->ntmp;
  Tensor *t[3];
  for (int k = 0; k < nin; k++) {
    t[k] = red_input(I, op, in[k], sp);
    tmp_push(I, val_mat(t[k]));
  }
  Tensor *out = tensor_new_on(I, be_place(I->cpu, I->device, t, nin), tensor_rows(t[1]), tensor_cols(t[1]));   /* x's shape */
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

/* ---- derivative rules (ops/rules.h) ---- */
/* The reduction a max/min's tie count uses: the extreme's own shape of sums. */
static OpKind count_of(OpKind op) {
  return op == OP_MAX || op == OP_MIN ? OP_SUM : op == OP_ROWMAXS || op == OP_ROWMINS ? OP_ROWSUMS : OP_COLSUMS;
}

/* prod's and cumprod's rules are built from ops alone, the same ops whatever the values, so a
** staged gradient replayed at a zero is right (rules that chose their formula by the values they
** were traced with gave NaN there) and a second derivative goes through them. */
#define IFE(c, yes, no) T(I, op_ifelse(I, c, yes, no, sp))

/* prod's partial derivatives, the product of the others: y / a where a_i is not zero (to the bit
** what it was); where a_i is zero, the product of the nonzero elements if it is the only zero,
** times the other zero's value if there are two (0, but its derivative is the product of the
** rest: the Hessian), else 0. n: a is a number. */
static Value prod_others(Interp *I, Value a, Value y, bool n, Span sp) {
  Value z = B2(OP_EQ, a, val_num(0));
  Value a1 = IFE(z, val_num(1), a);
  if (n) return IFE(z, val_num(1), B2(OP_DIV, y, a1));   /* a number: 1 (y / a, unless a is not finite) */
  Value nz = T(I, op_reduce(I, OP_SUM, z, sp));
  Value other = B2(OP_SUB, T(I, op_reduce(I, OP_SUM, IFE(z, a, val_num(0)), sp)), a);   /* the other zero */
  Value k = B2(OP_ADD, B2(OP_EQ, nz, val_num(1)), B2(OP_MUL, B2(OP_EQ, nz, val_num(2)), other));
  return IFE(z, B2(OP_MUL, T(I, op_reduce(I, OP_PROD, a1, sp)), k), B2(OP_DIV, y, a1));
}

/* v shifted one step along the scan direction (down each column; along a row vector): by 1,
** v[i-1] at i and fill at the first; by -1, v[i+1] at i and fill at the last. A gather and a
** choice, so it is differentiated as they are. */
static Value shift_scan(Interp *I, Value v, int by, double fill, int64_t ar, int64_t ac, Span sp) {
  bool row = ar == 1 && ac > 1;
  int64_t n = row ? ac : ar;
  Tensor *ix = tensor_new(I, row ? 1 : n, row ? n : 1), *keep = tensor_new(I, ar, ac);
  T(I, val_mat(ix));
  T(I, val_mat(keep));
  for (int64_t i = 0; i < n; i++) {
    int64_t j = i - by;
    tensor_data(ix)[i] = (double)(j < 0 ? 0 : j >= n ? n - 1 : j) + 1;
  }
  for (int64_t i = 0; i < ar; i++)
    for (int64_t j = 0; j < ac; j++) {
      int64_t at = row ? j : i;
      tensor_data(keep)[i * ac + j] = by > 0 ? at > 0 : at < n - 1;
    }
  keep->logical = true;
  Value idx[2] = { row ? val_unbound() : val_mat(ix), row ? val_mat(ix) : val_unbound() };
  return IFE(val_mat(keep), T(I, ad_index(I, v, 2, idx, sp)), val_num(fill));
}

/* Column k (1-based) of X, and X with column k set to v: cumsumprod's two columns. */
static Value col_of(Interp *I, Value X, int k, Span sp) {
  return T(I, ad_index(I, X, 2, (Value[]){ val_unbound(), val_num(k) }, sp));
}
static Value with_col(Interp *I, Value X, int k, Value v, Span sp) {
  return T(I, ad_set_index(I, X, 2, (Value[]){ val_unbound(), val_num(k) }, v, sp));
}

/* v as an ar x ac matrix: a broadcast adjoint (a number, rules.h) filled out, for the
** recurrences' kernels, which read their operands cell by cell */
static Value full_of(Interp *I, Value v, int64_t ar, int64_t ac, Span sp) {
  Value p = ad_primal(v);
  if (ar * ac == 1 || (p.t == VT_MAT && tensor_rows(p.u.m) == ar && tensor_cols(p.u.m) == ac)) return v;
  return B2(OP_MUL, rl_ones(I, ar, ac), v);
}

void red_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  Span sp = r->sp;
  OpKind op = r->op;
  Value a = r->in[0], y = r->y;
  bool n;
  int64_t ar, ac;
  rl_shape(a, &n, &ar, &ac);
  switch (op) {
  case OP_SUM: case OP_ROWSUMS: case OP_COLSUMS:
    if (op == OP_SUM && !n && ar * ac != 1 && ad_primal(g).t == VT_NUM)
      gin[0] = g;                            /* a broadcast adjoint (rules.h): no matrix of ones */
    else
      gin[0] = n ? g : B2(OP_MUL, rl_ones(I, ar, ac), g);
    return;
  case OP_MAX: case OP_MIN: case OP_ROWMAXS: case OP_ROWMINS: case OP_COLMAXS: case OP_COLMINS: {
    /* to the elements equal to the extreme, split evenly on ties */
    Value mask = B2(OP_EQ, a, y);
    Value w = B2(OP_DIV, mask, T(I, op_reduce(I, count_of(op), mask, sp)));
    gin[0] = rl_sum_to(I, B2(OP_MULZ, g, w), a, sp);
    return;
  }
  case OP_PROD:                             /* the product of the others */
    gin[0] = B2(OP_MULZ, g, prod_others(I, a, y, n, sp));
    return;
  case OP_CUMSUM: {                         /* reversed cumulative sum: total - cumsum + g */
    if (n) { gin[0] = g; return; }
    Value tot = T(I, op_reduce(I, ar == 1 && ac > 1 ? OP_ROWSUMS : OP_COLSUMS, g, sp));
    gin[0] = B2(OP_ADD, B2(OP_SUB, tot, T(I, op_scan(I, OP_CUMSUM, g, sp))), g);
    return;
  }
  case OP_CUMPROD:                          /* rlinrec(g, a) times the products before each element */
    gin[0] = n ? g : B2(OP_MULZ, T(I, op_grad_aux(I, OP_RLINREC, 2, (Value[]){ full_of(I, g, ar, ac, sp), a }, sp)),
                         shift_scan(I, y, 1, 1, ar, ac, sp));
    return;
  case OP_LINREC: case OP_RLINREC: {        /* linear in s, the other recurrence its adjoint; for a: */
    Value q = T(I, op_grad_aux(I, op == OP_LINREC ? OP_RLINREC : OP_LINREC, 2, (Value[]){ full_of(I, g, ar, ac, sp), r->in[1] }, sp));
    if (r->want[0]) gin[0] = q;               /* x's previous step times q, q's previous step times r */
    if (r->want[1])
      gin[1] = op == OP_LINREC ? B2(OP_MULZ, shift_scan(I, y, 1, 0, ar, ac, sp), q) : B2(OP_MULZ, shift_scan(I, q, 1, 0, ar, ac, sp), y);
    return;
  }
  case OP_CUMMAX: case OP_CUMMIN:           /* each g to the element the running value came from */
    gin[0] = T(I, op_grad_aux(I, OP_CUMEXT_GRAD, 3, (Value[]){ g, a, y }, sp));
    return;
  case OP_ROWPRODS: case OP_COLPRODS:       /* g times the product of the others (zeros are fine) */
    gin[0] = T(I, op_grad_aux(I, op == OP_ROWPRODS ? OP_ROWPRODS_GRAD : OP_COLPRODS_GRAD, 2, (Value[]){ g, a }, sp));
    return;
  case OP_CUMEXT_GRAD: case OP_CUMEXT_TAN:  /* linear in g, each the other's transpose; x, y discrete */
    if (r->want[0])
      gin[0] = T(I, op_grad_aux(I, op == OP_CUMEXT_GRAD ? OP_CUMEXT_TAN : OP_CUMEXT_GRAD, 3, (Value[]){ g, r->in[1], r->in[2] }, sp));
    return;
  case OP_CUMSUMPROD: {                     /* Y = linrec(X[, 1], X[, 2]) */
    /* X[, 1]'s adjoint is q = rlinrec(g, X[, 2]); X[, 2]'s, q times Y's previous step */
    Value q = T(I, op_grad_aux(I, OP_RLINREC, 2, (Value[]){ full_of(I, g, ar, 1, sp), col_of(I, a, 2, sp) }, sp));
    Value q2 = B2(OP_MULZ, shift_scan(I, y, 1, 0, ar, 1, sp), q);
    gin[0] = with_col(I, with_col(I, B2(OP_MUL, rl_ones(I, ar, 2), val_num(0)), 1, q, sp), 2, q2, sp);
    return;
  }
  case OP_ROWPRODS_GRAD: case OP_COLPRODS_GRAD:
    mls_throw(I, sp, "grad: the second derivative of %s is not supported", op == OP_ROWPRODS_GRAD ? "rowProds" : "colProds");
  case OP_LOGSOFTMAX:                       /* g - exp(y) * rowSums(g) */
    gin[0] = B2(OP_SUB, g, B2(OP_MUL, U1(OP_EXP, y), T(I, op_reduce(I, OP_ROWSUMS, g, sp))));
    return;
  case OP_SOFTMAX:                          /* y * (g - rowSums(g * y)) */
    gin[0] = B2(OP_MUL, y, B2(OP_SUB, g, T(I, op_reduce(I, OP_ROWSUMS, B2(OP_MUL, g, y), sp))));
    return;
  case OP_DIAG: {
    Value d = T(I, op_diag(I, g, sp));
    if (n) gin[0] = T(I, op_reduce(I, OP_SUM, d, sp));
    else if (ar == 1 && ac > 1) gin[0] = T(I, op_transpose(I, d, sp));
    else gin[0] = d;
    return;
  }
  default: break;
  }
  rl_no_rule(I, op, false, sp);
}

Value red_jvp(Interp *I, const RuleArgs *r, const Value *tin) {
  Span sp = r->sp;
  OpKind op = r->op;
  Value a = r->in[0], y = r->y, ta = tin[0];
  bool n;
  int64_t ar, ac;
  rl_shape(a, &n, &ar, &ac);
  switch (op) {
  case OP_SUM: case OP_ROWSUMS: case OP_COLSUMS: return T(I, op_reduce(I, op, ta, sp));
  case OP_MAX: case OP_MIN: case OP_ROWMAXS: case OP_ROWMINS: case OP_COLMAXS: case OP_COLMINS: {
    Value mask = B2(OP_EQ, a, y);
    Value w = B2(OP_DIV, mask, T(I, op_reduce(I, count_of(op), mask, sp)));
    return T(I, op_reduce(I, count_of(op), B2(OP_MULZ, ta, w), sp));
  }
  case OP_CUMSUM: return T(I, op_scan(I, OP_CUMSUM, ta, sp));
  case OP_SOFTMAX: return B2(OP_MUL, y, B2(OP_SUB, ta, T(I, op_reduce(I, OP_ROWSUMS, B2(OP_MUL, y, ta), sp))));
  case OP_LOGSOFTMAX: return B2(OP_SUB, ta, T(I, op_reduce(I, OP_ROWSUMS, B2(OP_MUL, U1(OP_EXP, y), ta), sp)));
  case OP_DIAG: return T(I, op_diag(I, ta, sp));
  case OP_CUMMAX: case OP_CUMMIN:           /* the tangent of the element each extreme came from */
    return ta.t == VT_NULL ? ta : T(I, op_grad_aux(I, OP_CUMEXT_TAN, 3, (Value[]){ ta, a, y }, sp));
  case OP_CUMEXT_GRAD: case OP_CUMEXT_TAN:
    return ta.t == VT_NULL ? ta : T(I, op_grad_aux(I, op, 3, (Value[]){ ta, r->in[1], r->in[2] }, sp));
  case OP_ROWPRODS: case OP_COLPRODS: {     /* sums of the tangent times the product of the others */
    Value others = T(I, op_grad_aux(I, op == OP_ROWPRODS ? OP_ROWPRODS_GRAD : OP_COLPRODS_GRAD, 2,
                                    (Value[]){ rl_ones(I, op == OP_ROWPRODS ? ar : 1, op == OP_ROWPRODS ? 1 : ac), a }, sp));
    return T(I, op_reduce(I, op == OP_ROWPRODS ? OP_ROWSUMS : OP_COLSUMS, B2(OP_MUL, rl_tzero(ta), others), sp));
  }
  case OP_PROD: {                           /* the tangent times the product of the others, summed */
    if (ta.t == VT_NULL) return ta;
    Value others = prod_others(I, a, y, n, sp);
    return T(I, op_reduce(I, OP_SUM, B2(OP_MULZ, ta, others), sp));
  }
  case OP_CUMPROD: {                        /* linrec(t times the products before each element, a) */
    if (ta.t == VT_NULL || n) return ta;
    Value src = full_of(I, B2(OP_MUL, shift_scan(I, y, 1, 1, ar, ac, sp), ta), ar, ac, sp);
    return T(I, op_grad_aux(I, OP_LINREC, 2, (Value[]){ src, a }, sp));
  }
  case OP_LINREC: case OP_RLINREC: {        /* the same recurrence of t_s plus a's part */
    if (ta.t == VT_NULL && tin[1].t == VT_NULL) return ta;
    Value src = rl_tzero(ta);
    if (tin[1].t != VT_NULL)                 /* t_a times x's previous step; the next step's t_a times r */
      src = B2(OP_ADD, src, op == OP_LINREC ? B2(OP_MUL, tin[1], shift_scan(I, y, 1, 0, ar, ac, sp))
                                            : shift_scan(I, B2(OP_MUL, tin[1], y), -1, 0, ar, ac, sp));
    return T(I, op_grad_aux(I, op, 2, (Value[]){ full_of(I, src, ar, ac, sp), r->in[1] }, sp));
  }
  case OP_CUMSUMPROD: {                     /* linrec(T[, 1] + T[, 2] times Y's previous step, X[, 2]) */
    if (ta.t == VT_NULL) return ta;
    Value src = B2(OP_ADD, col_of(I, ta, 1, sp), B2(OP_MUL, col_of(I, ta, 2, sp), shift_scan(I, y, 1, 0, ar, 1, sp)));
    return T(I, op_grad_aux(I, OP_LINREC, 2, (Value[]){ full_of(I, src, ar, 1, sp), col_of(I, a, 2, sp) }, sp));
  }
  /* no forward rule yet (the auxiliary ops of second derivatives): jvp through
  ** them is the located error */
  default: break;
  }
  rl_no_rule(I, op, true, sp);
}

/* ---- shape rules (ops/shapes_impl.h): the checks above on shapes alone, same messages ---- */
/* ==== reductions, scans, diag, ifelse (ops.c op_reduce, op_scan, op_diag, op_ifelse) ==== */
ShapeStatus shape_rule_reduce(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  const char *name = sh_name_of(op, x);
  bool whole = op == OP_SUM || op == OP_PROD || op == OP_MAX || op == OP_MIN;
  if (sh_unknown(a)) { *out = whole ? shape_num_unknown() : shape_numeric(); k.sure = false; return SHAPE_OK; }
  if (a.kind == SK_NUMERIC) { *out = whole ? shape_num_unknown() : shape_numeric(); return SHAPE_OK; }
  if (!sh_matlike(a)) { sh_bad_argn(&k, name, 1, sp, "matrix expected", a); return chk_status(&k); }
  int64_t r, c, orows = 1, ocols = 1;
  sh_dims(a, &r, &c);
  switch (op) {
  case OP_MAX: case OP_MIN:
    if (r == 0 || c == 0) sh_bad_argn(&k, name, 1, sp, "non-empty matrix expected", a);
    break;
  case OP_ROWMAXS: case OP_ROWMINS: case OP_ROWINDEXMAX: case OP_ROWINDEXMIN:
    if (c == 0 && r > 0) sh_bad_argn(&k, name, 1, sp, "matrix with non-empty rows expected", a);
    else if (c < 0 || (c == 0 && r < 0)) k.sure = false;
    orows = r;
    break;
  case OP_ROWSUMS: case OP_ROWPRODS: orows = r; break;
  case OP_COLMAXS: case OP_COLMINS:
    if (r == 0 && c > 0) sh_bad_argn(&k, name, 1, sp, "matrix with non-empty columns expected", a);
    ocols = c;
    break;
  case OP_COLSUMS: case OP_COLPRODS: ocols = c; break;
  case OP_CUMSUMPROD:
    if (c >= 0 && c != 2) sh_bad_argn(&k, name, 1, sp, "matrix of two columns expected", a);
    orows = r;
    break;
  default: break;
  }
  if (k.failed) return chk_status(&k);
  *out = whole || sh_numlike(a) ? shape_num_unknown() : shape_mat(orows, ocols);
  if (whole && sh_numlike(a) && a.known) *out = shape_num(a.value);   /* sum(x), prod(x), max(x) of a number: x */
  return SHAPE_OK;
}

ShapeStatus shape_rule_scan(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  if (sh_unknown(a)) { *out = shape_numeric(); return SHAPE_OK; }
  if (a.kind == SK_NUMERIC) { *out = shape_numeric(); return SHAPE_OK; }
  if (!sh_matlike(a)) { sh_bad_argn(&k, sh_name_of(op, x), 1, sp, "matrix expected", a); return chk_status(&k); }
  *out = sh_numlike(a) ? shape_num_unknown() : shape_mat(a.rows, a.cols);
  return SHAPE_OK;
}

ShapeStatus shape_rule_diag(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  const char *name = sh_name_of(op, x);
  if (sh_unknown(a) || a.kind == SK_NUMERIC) { *out = shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN); return SHAPE_OK; }
  if (!sh_matlike(a)) { sh_bad_argn(&k, name, 1, sp, "vector or square matrix expected", a); return chk_status(&k); }
  int64_t r, c;
  sh_dims(a, &r, &c);
  if (r >= 0 && c >= 0) {
    if (r == c) *out = shape_mat(r, 1);
    else if (r == 1 || c == 1) *out = shape_mat(r * c, r * c);
    else { sh_bad_argn(&k, name, 1, sp, "vector or square matrix expected", a); return chk_status(&k); }
    return SHAPE_OK;
  }
  *out = shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN);             /* square (n x 1), or n x n of a vector */
  return SHAPE_OK;
}

/* op_grad_aux: the inputs as matrices (a number is 1x1), the result shaped as in[1]. */
ShapeStatus shape_rule_grad_aux(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  int nin = op_info[op].arity;
  for (int i = 0; i < nin; i++) {
    if (sh_unknown(in[i]) || in[i].kind == SK_NUMERIC) { k.sure = false; continue; }
    if (!sh_matlike(in[i])) { sh_bad_argn(&k, sh_name_of(op, x), 1, sp, "matrix expected", in[i]); return chk_status(&k); }
  }
  Shape y = in[1];
  *out = y.kind == SK_MAT ? shape_mat(y.rows, y.cols) : sh_numlike(y) ? shape_num_unknown() : shape_numeric();
  return SHAPE_OK;
}
