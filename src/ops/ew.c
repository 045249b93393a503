/*
** ops/ew.c — the elementwise family: binary and unary ops with broadcasting (LANGUAGE.md §5),
** string concatenation and comparison, ifelse. The formulas are ops.def's rows (scalar.h for
** numbers, the backends' loops for matrices); here the shapes are checked and results made.
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "backend/scalar.h"
#include "frame/frame.h"
#include "ops/family.h"
#include "ops/rules.h"
#include "ops/shapes_impl.h"
#include "print.h"

int op_cmp_holds(OpKind op, int c) {
  switch (op) {
  case OP_EQ: return c == 0;
  case OP_NE: return c != 0;
  case OP_LT: return c < 0;
  case OP_LE: return c <= 0;
  case OP_GT: return c > 0;
  case OP_GE: return c >= 0;
  default: return -1;
  }
}

static int cmp_strings(OpKind op, const Str *a, const Str *b) { return op_cmp_holds(op, strcmp(a->s, b->s)); }

Value op_concat(Interp *I, Value a, Value b, Span sp) {
  TextBuf t;
  tb_open(I, &t);
  fmt_value_text(I, &t, a, sp);
  fmt_value_text(I, &t, b, sp);
  if (I->interrupted) { tb_close(I, &t); interp_check_interrupt(I, sp); }
  Value r = tb_close_str(I, &t);
  return r;
}

/* An operand nothing else holds (refcount 1, no view), shaped like the result and contiguous:
** an elementwise op may write its result over it, saving a fresh buffer and the page faults
** and cache misses of cold memory (NumPy elides temporaries the same way; R reuses a vector
** its reference count says is unshared). Only when the caller lends its operands (lent,
** op_apply_lent): the evaluator, for temporaries it releases right after and for the old
** value of the variable the result is assigned to (X = X / 255); other C callers may pass
** values whose only reference is a container they still use. Not under --nan-check, which
** compares the result with the operands it would have overwritten. The kernel then runs to
** its end (op_run_kernel): the operand is never left half written. */
static bool reusable(const Interp *I, const Tensor *t, int64_t rows, int64_t cols) {
  return tensor_is_unique(t) && tensor_is_contiguous(t) && tensor_rows(t) == rows && tensor_cols(t) == cols &&
         rows * cols > TENSOR_SMALL && !I->nan_check;
}

Value ew_binary(Interp *I, OpKind op, Value a, Value b, bool lent, Span sp) {
  if (is_numlike(a) && is_numlike(b)) {
    double r = sc_binary(op, numv(a), numv(b));
    if (!isfinite(r) && I->nan_check && isfinite(numv(a)) && isfinite(numv(b))) nan_check_fail(I, op_info[op].sym, sp);
    return (op_info[op].flags & OPF_CMP) && r == r ? val_bool(r != 0) : val_num(r);   /* (NA & TRUE is NA, as R) */
  }
  if ((a.t == VT_FRAME || b.t == VT_FRAME) && (op_info[op].flags & OPF_CMP))
    return frame_compare(I, op, a, b, sp);     /* F == "x": a 0/1 matrix (docs/frames.md) */
  if (a.t == VT_STR || b.t == VT_STR) {
    if (op == OP_ADD) return op_concat(I, a, b, sp);
    if (a.t == VT_STR && b.t == VT_STR) {
      int c = cmp_strings(op, a.u.s, b.u.s);
      if (c >= 0) return val_bool(c);
    } else if ((op_info[op].flags & OPF_CMP) && (is_numlike(a) || is_numlike(b))) {
      /* a number against a string compares as text, the number written as print writes it:
      ** "5" == 5 (R's rule; SystemDS's compares getStringValue()s, docs/dml.md) */
      Value e = val_str("", 0);
      Value t = op_concat(I, e, a.t == VT_STR ? b : a, sp);
      int c = a.t == VT_STR ? cmp_strings(op, a.u.s, t.u.s) : cmp_strings(op, t.u.s, b.u.s);
      val_release(t);
      val_release(e);
      if (c >= 0) return val_bool(c);
    }
    op_bad_operands(I, op, a, b, sp);
  }
  if ((a.t != VT_MAT && !is_numlike(a)) || (b.t != VT_MAT && !is_numlike(b))) op_bad_operands(I, op, a, b, sp);

  OpParams p;
  memset(&p, 0, sizeof p);
  Tensor *in[2] = { NULL, NULL };
  int64_t r0 = 1, c0 = 1, r1 = 1, c1 = 1;
  if (a.t == VT_MAT) { in[0] = a.u.m; r0 = tensor_rows(a.u.m); c0 = tensor_cols(a.u.m); }
  else p.scalar[0] = numv(a);
  if (b.t == VT_MAT) { in[1] = b.u.m; r1 = tensor_rows(b.u.m); c1 = tensor_cols(b.u.m); }
  else p.scalar[1] = numv(b);
  int64_t rows, cols;
  if (r0 == r1 && c0 == c1) { rows = r0; cols = c0; p.bc[0] = p.bc[1] = BC_FULL; }
  else if (r1 == 1 && c1 == 1) { rows = r0; cols = c0; p.bc[0] = BC_FULL; p.bc[1] = BC_SCALAR; }
  else if (r0 == 1 && c0 == 1) { rows = r1; cols = c1; p.bc[0] = BC_SCALAR; p.bc[1] = BC_FULL; }
  else if (r1 == 1 && c1 == c0) { rows = r0; cols = c0; p.bc[0] = BC_FULL; p.bc[1] = BC_ROW; }
  else if (c1 == 1 && r1 == r0) { rows = r0; cols = c0; p.bc[0] = BC_FULL; p.bc[1] = BC_COL; }
  else if (r0 == 1 && c0 == c1) { rows = r1; cols = c1; p.bc[0] = BC_ROW; p.bc[1] = BC_FULL; }
  else if (c0 == 1 && r0 == r1) { rows = r1; cols = c1; p.bc[0] = BC_COL; p.bc[1] = BC_FULL; }
  else {
    char s0[48], s1[48];
    op_shape_str(a, s0, sizeof s0);
    op_shape_str(b, s1, sizeof s1);
    mls_throw(I, sp, "non-conformable operands for '%s': %s and %s", op_info[op].sym, s0, s1);
  }
  int mark = I->ntmp;                       /* a and b are borrowed; packed copies go on tmp */
  Tensor *cin[2] = { in[0], in[1] };
  for (int k = 0; k < 2; k++)
    if (cin[k] && !tensor_is_contiguous(cin[k])) {
      cin[k] = tensor_clone(I, cin[k]);
      tmp_push(I, val_mat(cin[k]));
    }
  op_align(I, cin, 2);
  Tensor *out = NULL;
  for (int k = 0; k < 2 && !out; k++)       /* write into a temporary operand (NumPy does too) */
    if (lent && in[k] && cin[k] == in[k] && p.bc[k] == BC_FULL && reusable(I, in[k], rows, cols)) { out = in[k]; out->refcount++; }
  if (!out) out = tensor_new_on(I, be_place(I->cpu, I->device, cin, 2), rows, cols);
  op_run_kernel(I, op, out, cin, &p, sp);
  tmp_release_to(I, mark);
  return val_mat(out);
}

Value ew_unary(Interp *I, OpKind op, Value a, bool lent, Span sp) {
  if (is_numlike(a)) {
    double r = sc_unary(op, numv(a));
    if (!isfinite(r) && I->nan_check && isfinite(numv(a))) nan_check_fail(I, op_info[op].sym, sp);
    return op == OP_NOT && r == r ? val_bool(r != 0) : val_num(r);
  }
  if (a.t != VT_MAT) op_bad_operand(I, op, a, sp);
  Tensor *m = a.u.m;
  if (lent && reusable(I, m, tensor_rows(m), tensor_cols(m))) {     /* in place over a lent operand */
    m->refcount++;
    Tensor *in[1] = { m };
    op_run_kernel(I, op, m, in, NULL, sp);
    return val_mat(m);
  }
  return val_mat(op_run1(I, op, m, tensor_rows(m), tensor_cols(m), sp));
}

Value ew_ifelse(Interp *I, Value test, Value yes, Value no, Span sp) {
  Value v[3] = { test, yes, no };
  int64_t r = 1, c = 1;
  int from = -1;
  for (int k = 0; k < 3; k++) {
    if (v[k].t != VT_MAT) continue;
    if (tensor_numel(v[k].u.m) == 1) continue;               /* 1x1 broadcasts like a number */
    if (from < 0) { r = tensor_rows(v[k].u.m); c = tensor_cols(v[k].u.m); from = k; continue; }
    if (tensor_rows(v[k].u.m) != r || tensor_cols(v[k].u.m) != c) {
      char what[80];
      snprintf(what, sizeof what, "number or %lldx%lld matrix expected", (long long)r, (long long)c);
      op_bad_argn(I, OP_IFELSE, k + 1, sp, what, v[k]);
    }
  }
  bool any_mat = test.t == VT_MAT || yes.t == VT_MAT || no.t == VT_MAT;
  if (!any_mat) {                                            /* the chosen value itself */
    if (!is_numlike(test)) op_bad_argn(I, OP_IFELSE, 1, sp, "boolean, number or matrix expected", test);
    double t = numv(test);
    if (t != t) return val_num(NAN);
    Value pick = t != 0 ? yes : no;
    val_retain(pick);
    return pick;
  }
  for (int k = 0; k < 3; k++)
    if (v[k].t != VT_MAT && !is_numlike(v[k]))
      op_bad_argn(I, OP_IFELSE, k + 1, sp, k ? "number or matrix expected" : "boolean, number or matrix expected", v[k]);
  int mark = I->ntmp;
  Tensor *in[3];
  for (int k = 0; k < 3; k++) {
    in[k] = red_input(I, OP_IFELSE, v[k], sp);
    tmp_push(I, val_mat(in[k]));
  }
  op_align(I, in, 3);
  Tensor *out = tensor_new_on(I, be_place(I->cpu, I->device, in, 3), r, c);
  op_run_kernel(I, OP_IFELSE, out, in, NULL, sp);
  tmp_release_to(I, mark);
  return val_mat(out);
}

/* The entry points (ops.h): op_apply takes them (a trace, or the kernels above). */
Value op_binary(Interp *I, OpKind op, Value a, Value b, Span sp) { return op_binary_lent(I, op, a, b, false, sp); }

Value op_binary_lent(Interp *I, OpKind op, Value a, Value b, bool lent, Span sp) {
  if (op == OP_RANGE) {                      /* its length is its value: concrete bounds */
    Span saved = I->call_span;
    I->call_span = sp;
    Value r = op_range(I, a, b, sp);
    I->call_span = saved;
    return r;
  }
  return op_enter_lent(I, op, lent, 2, (Value[]){ a, b }, 0, NULL, sp);
}

Value op_unary(Interp *I, OpKind op, Value a, Span sp) { return op_enter(I, op, 1, &a, 0, NULL, sp); }

Value op_unary_lent(Interp *I, OpKind op, Value a, bool lent, Span sp) { return op_enter_lent(I, op, lent, 1, &a, 0, NULL, sp); }

Value op_ifelse(Interp *I, Value test, Value yes, Value no, Span sp) {
  return op_enter(I, OP_IFELSE, 3, (Value[]){ test, yes, no }, 0, NULL, sp);
}

/* rl_sum_to, except that a number g for an operand of the result's shape stays a broadcast
** adjoint (rules.h): `sum(A + B)` gives A and B the number, not two matrices of it. */
static Value ew_sum_to(Interp *I, Value g, Value x, Value y, Span sp) {
  bool gn, xn, yn;
  int64_t gr, gc, xr, xc, yr, yc;
  rl_shape(g, &gn, &gr, &gc);
  rl_shape(x, &xn, &xr, &xc);
  rl_shape(y, &yn, &yr, &yc);
  if (ad_primal(g).t == VT_NUM && !xn && !yn && xr == yr && xc == yc && xr * xc != 1) return g;
  return rl_sum_to(I, g, x, sp);
}

/* ---- derivative rules (ops/rules.h): the elementwise ops' from ops.def, and ifelse's ---- */
/* The reverse rules: ops.def's D_* in terms of g, the incoming gradient; a binary op's gradient
** summed back to its operand's shape. */
void ew_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  Span sp = r->sp;
  Value a = r->in[0], b = r->nin > 1 ? r->in[1] : val_null(), y = r->y;
  (void)b;
  (void)y;
  switch (r->op) {
#include "ops/rules_def.h"
#define D_ONE g
#define D_NEG U1(OP_NEG, g)
#define D_ZERO B2(OP_MUL, g, val_num(0))
#define D_MUL(e) B2(OP_MULZ, g, e)
#define D_NMUL(e) U1(OP_NEG, B2(OP_MULZ, g, e))
#define D_DIV(e) B2(OP_DIV, g, e)
#define D_NDIV(e) U1(OP_NEG, B2(OP_DIV, g, e))
#define D_NONE (rl_no_rule(I, r->op, false, sp), val_null())
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) case OP_##NAME: gin[0] = RULE; return;
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) \
  case OP_##NAME:                                                              \
    if (r->want[0]) gin[0] = ew_sum_to(I, RULE_X, a, y, sp);                   \
    if (r->want[1]) gin[1] = ew_sum_to(I, RULE_Y, b, y, sp);                   \
    return;
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
#include "ops/rules_undef.h"
  case OP_IFELSE: {                          /* nothing from the branch not chosen */
    Value yes = r->in[1], no = r->in[2];
    if (r->want[1]) gin[1] = rl_sum_to(I, B2(OP_MULZ, g, B2(OP_NE, a, val_num(0))), yes, sp);
    if (r->want[2]) gin[2] = rl_sum_to(I, B2(OP_MULZ, g, B2(OP_EQ, a, val_num(0))), no, sp);
    return;
  }
  default: break;
  }
  rl_no_rule(I, r->op, false, sp);
}

/* The forward rules: ops.def's D_* applied to the tangents ta (and tb). */
Value ew_jvp(Interp *I, const RuleArgs *r, const Value *tin) {
  Span sp = r->sp;
  Value a = r->in[0], b = r->nin > 1 ? r->in[1] : val_null(), y = r->y, ta = tin[0], tb = tin[1];
  (void)a;
  (void)b;
  (void)y;
  (void)tb;
  switch (r->op) {
#include "ops/rules_def.h"
#define D_ONE t
#define D_NEG rl_tneg(I, t, sp)
#define D_ZERO val_null()
#define D_MUL(e) rl_tmul(I, t, e, sp)
#define D_NMUL(e) rl_tneg(I, rl_tmul(I, t, e, sp), sp)
#define D_DIV(e) B2(OP_DIV, rl_tzero(t), e)
#define D_NDIV(e) rl_tneg(I, B2(OP_DIV, rl_tzero(t), e), sp)
#define D_NONE (rl_no_rule(I, r->op, true, sp), val_null())
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) \
  case OP_##NAME: { Value t = ta; (void)t; return RULE; }
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) \
  case OP_##NAME: {                                                            \
    Value t = ta;                                                              \
    (void)t;                                                                   \
    Value dx = RULE_X;                                                         \
    t = tb;                                                                    \
    (void)t;                                                                   \
    return rl_tadd(I, dx, RULE_Y, sp);                                         \
  }
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
#include "ops/rules_undef.h"
  case OP_IFELSE: return T(I, op_ifelse(I, a, rl_tzero(tin[1]), rl_tzero(tin[2]), sp));
  default: break;
  }
  rl_no_rule(I, r->op, true, sp);
}

/* ---- shape rules (ops/shapes_impl.h): the checks above on shapes alone, same messages ---- */
/* ==== elementwise (ops.c op_binary, op_unary): LANGUAGE.md §5 ==== */
ShapeStatus shape_rule_ew2(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0], b = in[1];
  bool cmp = (op_info[op].flags & OPF_CMP) != 0;
  Chk k;
  chk_init(&k, err);
  (void)x;
  if (sh_unknown(a) || sh_unknown(b)) { *out = shape_any(); return SHAPE_OK; }
  if (sh_numlike(a) && sh_numlike(b)) {
    if (a.known && b.known) {
      double r = sc_binary(op, a.value, b.value);
      *out = cmp ? shape_bool(true, r != 0) : shape_num(r);
    } else *out = cmp ? shape_bool(false, false) : shape_num_unknown();
    return SHAPE_OK;
  }
  if (a.kind == SK_STR || b.kind == SK_STR) {
    if (op == OP_ADD) { *out = shape_of_kind(SK_STR); return SHAPE_OK; }        /* op_concat */
    if (a.kind == SK_STR && b.kind == SK_STR && op >= OP_EQ && op <= OP_GE) { *out = shape_bool(false, false); return SHAPE_OK; }
    if (op >= OP_EQ && op <= OP_GE && (sh_numlike(a) || sh_numlike(b))) { *out = shape_bool(false, false); return SHAPE_OK; }   /* "5" == 5 */
    sh_bad_operands(&k, op, a, b, sp);
    return chk_status(&k);
  }
  if (!sh_maybe_matlike(a) || !sh_maybe_matlike(b)) {
    sh_bad_operands(&k, op, a, b, sp);
    return chk_status(&k);
  }
  if (a.kind == SK_NUMERIC || b.kind == SK_NUMERIC) {   /* a number or a matrix */
    if (a.kind != SK_MAT && b.kind != SK_MAT) { *out = shape_numeric(); return SHAPE_OK; }
    int64_t r0, c0, r1, c1;
    sh_dims(a, &r0, &c0);
    sh_dims(b, &r1, &c1);
    *out = shape_mat(sh_pick(r0, r1), sh_pick(c0, c1));
    return SHAPE_OK;
  }
  int64_t r0, c0, r1, c1;
  sh_dims(a, &r0, &c0);
  sh_dims(b, &r1, &c1);
  if (r0 >= 0 && c0 >= 0 && r1 >= 0 && c1 >= 0) {
    int64_t rows, cols;
    if (r0 == r1 && c0 == c1) { rows = r0; cols = c0; }
    else if (r1 == 1 && c1 == 1) { rows = r0; cols = c0; }
    else if (r0 == 1 && c0 == 1) { rows = r1; cols = c1; }
    else if (r1 == 1 && c1 == c0) { rows = r0; cols = c0; }
    else if (c1 == 1 && r1 == r0) { rows = r0; cols = c0; }
    else if (r0 == 1 && c0 == c1) { rows = r1; cols = c1; }
    else if (c0 == 1 && r0 == r1) { rows = r1; cols = c1; }
    else {
      char s0[48], s1[48];
      sh_shape_str(a, s0, sizeof s0);
      sh_shape_str(b, s1, sizeof s1);
      chk_fail(&k, sp, "non-conformable operands for '%s': %s and %s", op_info[op].sym, s0, s1);
      return chk_status(&k);
    }
    *out = shape_mat(rows, cols);
    return SHAPE_OK;
  }
  /* extents known on one axis that cannot broadcast (neither is 1) and differ: no case fits */
  if ((r0 >= 0 && r1 >= 0 && r0 != 1 && r1 != 1 && r0 != r1) || (c0 >= 0 && c1 >= 0 && c0 != 1 && c1 != 1 && c0 != c1)) {
    chk_fail_unsaid(&k);
    return chk_status(&k);
  }
  *out = shape_mat(sh_pick(r0, r1), sh_pick(c0, c1));
  return SHAPE_OK;
}

ShapeStatus shape_rule_ew1(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  (void)x;
  if (sh_numlike(a)) {
    if (a.known) {
      double r = sc_unary(op, a.value);
      *out = op == OP_NOT ? shape_bool(true, r != 0) : shape_num(r);
    } else *out = op == OP_NOT ? shape_bool(false, false) : shape_num_unknown();
    return SHAPE_OK;
  }
  if (a.kind == SK_MAT) { *out = shape_mat(a.rows, a.cols); return SHAPE_OK; }
  if (a.kind == SK_NUMERIC || sh_unknown(a)) { *out = a.kind == SK_NUMERIC ? shape_numeric() : shape_any(); return SHAPE_OK; }
  sh_bad_operand(&k, op, a, sp);
  return chk_status(&k);
}

ShapeStatus shape_rule_ifelse(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  const char *name = sh_name_of(op, x);
  bool all_known = true, any_mat = false;
  for (int i = 0; i < 3; i++) {
    if (in[i].kind == SK_NUMERIC || sh_unknown(in[i]) || (in[i].kind == SK_MAT && (in[i].rows < 0 || in[i].cols < 0)))
      all_known = false;
    any_mat = any_mat || in[i].kind == SK_MAT;
  }
  if (!all_known) {                        /* no error told; the shape of a full matrix operand */
    int64_t r = SHAPE_UNKNOWN, c = SHAPE_UNKNOWN;
    for (int i = 0; i < 3 && r < 0; i++)
      if (in[i].kind == SK_MAT && in[i].rows >= 0 && in[i].cols >= 0 && in[i].rows * in[i].cols != 1) { r = in[i].rows; c = in[i].cols; }
    *out = any_mat ? shape_mat(r, c) : shape_any();
    return SHAPE_OK;
  }
  int64_t r = 1, c = 1;
  int from = -1;
  for (int i = 0; i < 3; i++) {
    Shape v = in[i];
    if (v.kind != SK_MAT || v.rows * v.cols == 1) continue;   /* 1x1 broadcasts like a number */
    if (from < 0) { r = v.rows; c = v.cols; from = i; continue; }
    if (v.rows != r || v.cols != c) {
      char what[80];
      snprintf(what, sizeof what, "number or %lldx%lld matrix expected", (long long)r, (long long)c);
      sh_bad_argn(&k, name, i + 1, sp, what, v);
      return chk_status(&k);
    }
  }
  if (!any_mat) {                          /* the chosen value itself */
    if (!sh_numlike(in[0])) { sh_bad_argn(&k, name, 1, sp, "boolean, number or matrix expected", in[0]); return chk_status(&k); }
    if (!in[0].known) { *out = shape_join(in[1], in[2]); return SHAPE_OK; }
    if (in[0].value != in[0].value) { *out = shape_num(NAN); return SHAPE_OK; }
    *out = in[0].value != 0 ? in[1] : in[2];
    return SHAPE_OK;
  }
  for (int i = 0; i < 3; i++)
    if (in[i].kind != SK_MAT && !sh_numlike(in[i])) {
      sh_bad_argn(&k, name, i + 1, sp, i ? "number or matrix expected" : "boolean, number or matrix expected", in[i]);
      return chk_status(&k);
    }
  *out = shape_mat(r, c);
  return SHAPE_OK;
}
