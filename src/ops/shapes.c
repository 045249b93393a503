/*
** ops/shapes.c — what is known of a value's shape (ops/shapes.h), the ordered checks and shared
** messages of the shape rules (ops/shapes_impl.h), and the table of every op's rule. Each rule
** is the eager entry point's checks on shapes alone, with the same messages, and sits in its
** family's file beside the kernels' entry and the derivative rules (ew.c, matmul.c, products.c,
** shape.c, index.c, linalg.c, reduce.c, nn.c, comm.c). mls --check and explain evaluate them.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "ops/shapes_impl.h"

/* ---- shapes ---- */
Shape shape_of_kind(ShapeKind k) {
  Shape s;
  memset(&s, 0, sizeof s);
  s.kind = (uint8_t)k;
  s.rows = s.cols = SHAPE_UNKNOWN;
  s.len = -1;
  return s;
}
Shape shape_any(void) { return shape_of_kind(SK_ANY); }
Shape shape_numeric(void) { return shape_of_kind(SK_NUMERIC); }
Shape shape_num_unknown(void) { return shape_of_kind(SK_NUM); }
Shape shape_num(double v) { Shape s = shape_of_kind(SK_NUM); s.known = true; s.value = v; return s; }
Shape shape_bool(bool known, bool v) { Shape s = shape_of_kind(SK_BOOL); s.known = known; s.value = known && v; return s; }
Shape shape_mat(int64_t rows, int64_t cols) { Shape s = shape_of_kind(SK_MAT); s.rows = rows; s.cols = cols; return s; }

bool sh_numlike(Shape s) { return s.kind == SK_NUM || s.kind == SK_BOOL; }
bool sh_unknown(Shape s) { return s.kind == SK_NONE || s.kind == SK_ANY; }
bool sh_matlike(Shape s) { return s.kind == SK_MAT || sh_numlike(s); }          /* numbers are 1x1 */
bool sh_maybe_matlike(Shape s) { return sh_matlike(s) || s.kind == SK_NUMERIC || sh_unknown(s); }

void sh_dims(Shape s, int64_t *r, int64_t *c) {
  if (s.kind == SK_MAT) { *r = s.rows; *c = s.cols; }
  else if (sh_numlike(s)) { *r = *c = 1; }
  else { *r = *c = SHAPE_UNKNOWN; }
}

bool shape_known(Shape s) {
  switch (s.kind) {
  case SK_NUM: case SK_BOOL: return s.known;
  case SK_MAT: return s.rows >= 0 && s.cols >= 0;
  case SK_LIST: return s.len >= 0;
  case SK_STR: case SK_FUNC: case SK_NULL: return true;
  default: return false;
  }
}

bool shape_describe(Shape s, char *buf, size_t n) {
  switch (s.kind) {
  case SK_MAT:
    if (s.rows < 0 || s.cols < 0) return false;
    snprintf(buf, n, "a %lldx%lld matrix", (long long)s.rows, (long long)s.cols);
    return true;
  case SK_LIST:
    if (s.len < 0) return false;
    snprintf(buf, n, "a list of %d", (int)s.len);
    return true;
  case SK_NULL: snprintf(buf, n, "NULL"); return true;
  case SK_NUM: snprintf(buf, n, "a number"); return true;
  case SK_BOOL: snprintf(buf, n, "a boolean"); return true;
  case SK_STR: snprintf(buf, n, "a string"); return true;
  case SK_FUNC: snprintf(buf, n, "a function"); return true;
  default: return false;
  }
}

static bool same_value(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

Shape shape_join(Shape a, Shape b) {
  if (a.kind == SK_NONE && b.kind == SK_NONE) return a;
  if (a.kind == SK_NONE || b.kind == SK_NONE || sh_unknown(a) || sh_unknown(b)) return shape_any();
  if (a.kind == b.kind) {
    Shape r = a;
    r.known = a.known && b.known && same_value(a.value, b.value);
    if (!r.known) r.value = 0;
    if (a.rows != b.rows) r.rows = SHAPE_UNKNOWN;
    if (a.cols != b.cols) r.cols = SHAPE_UNKNOWN;
    if (a.len != b.len) r.len = -1;
    return r;
  }
  bool na = sh_matlike(a) || a.kind == SK_NUMERIC, nb = sh_matlike(b) || b.kind == SK_NUMERIC;
  if (na && nb) return shape_numeric();
  return shape_any();
}

bool shape_equal(Shape a, Shape b) {
  return a.kind == b.kind && a.known == b.known && (!a.known || same_value(a.value, b.value)) && a.rows == b.rows &&
         a.cols == b.cols && a.len == b.len;
}

/* ---- ordered checks: each passes, fails (with the eager message when every part it names
** is known) or cannot tell; after one that cannot tell, a failure is certain but its message
** is not (an earlier check may fail first, with another). ---- */

void chk_init(Chk *k, ShapeError *err) { k->sure = true; k->failed = false; k->exact = false; k->err = err; }

void chk_fail(Chk *k, Span sp, const char *fmt, ...) {
  if (k->failed) return;
  k->failed = true;
  k->exact = k->sure;
  if (!k->sure) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(k->err->msg, sizeof k->err->msg, fmt, ap);
  va_end(ap);
  k->err->span = sp;
}

/* A failure whose message needs a part that is not known. */
void chk_fail_unsaid(Chk *k) {
  if (k->failed) return;
  k->failed = true;
  k->exact = false;
}

ShapeStatus chk_status(const Chk *k) { return !k->failed ? SHAPE_OK : k->exact ? SHAPE_ERROR : SHAPE_FAILS; }

/* "3x4" for a matrix, "1x1" for a number, else the type's name (ops.c sh_shape_str). */
bool sh_shape_str(Shape s, char *buf, size_t n) {
  if (s.kind == SK_MAT) {
    if (s.rows < 0 || s.cols < 0) return false;
    snprintf(buf, n, "%lldx%lld", (long long)s.rows, (long long)s.cols);
  } else if (sh_numlike(s)) snprintf(buf, n, "1x1");
  else if (s.kind == SK_STR) snprintf(buf, n, "string");
  else if (s.kind == SK_LIST) snprintf(buf, n, "list");
  else if (s.kind == SK_FUNC) snprintf(buf, n, "function");
  else if (s.kind == SK_NULL) snprintf(buf, n, "NULL");
  else return false;
  return true;
}

/* "got 3x4" for a matrix, "got a string" otherwise (ops.c sh_bad_argn). */
bool sh_got_str(Shape s, char *buf, size_t n) { return s.kind == SK_MAT ? sh_shape_str(s, buf, n) : shape_describe(s, buf, n); }

const char *sh_name_of(OpKind op, const ShapeExtra *x) { return x && x->name ? x->name : op_info[op].sym; }

void sh_bad_operand(Chk *k, OpKind op, Shape v, Span sp) {
  char d[64];
  if (!shape_describe(v, d, sizeof d)) { chk_fail_unsaid(k); return; }
  chk_fail(k, sp, "invalid operand for '%s': %s", op_info[op].sym, d);
}

void sh_bad_operands(Chk *k, OpKind op, Shape a, Shape b, Span sp) {
  char d0[64], d1[64];
  if (!shape_describe(a, d0, sizeof d0) || !shape_describe(b, d1, sizeof d1)) { chk_fail_unsaid(k); return; }
  chk_fail(k, sp, "invalid operands for '%s': %s and %s", op_info[op].sym, d0, d1);
}

/* "bad argument #n to 'name' (what, got X)" of ops.c sh_bad_argn. */
void sh_bad_argn(Chk *k, const char *name, int argn, Span sp, const char *what, Shape v) {
  char d[64];
  if (!sh_got_str(v, d, sizeof d)) { chk_fail_unsaid(k); return; }
  chk_fail(k, sp, "bad argument #%d to '%s' (%s, got %s)", argn, name, what, d);
}

/* The result's extent along one axis from the operands' (an elementwise result has the shape
** of its full operand, whose extent is the other's or 1 along every axis). */
int64_t sh_pick(int64_t x, int64_t y) {
  if (x >= 0 && x != 1) return x;
  if (y >= 0 && y != 1) return y;
  if (x >= 0 && y >= 0) return 1;
  return SHAPE_UNKNOWN;
}


/* ==== linear algebra and layout ==== */
/* The operand check of ops.c: a number, a boolean or a matrix passes; SK_ANY cannot tell. */
void sh_need_matlike(Chk *k, OpKind op, Shape v, Span sp) {
  if (sh_unknown(v)) k->sure = false;
  else if (!sh_maybe_matlike(v)) sh_bad_operand(k, op, v, sp);
}

/* ==== the table: grep ORDER OP. Ops flagged OPF_EW take the elementwise rule of their arity;
** every other op names its rule here (a missing one fails tests/unit/test_shape_rules.c). ==== */
static const ShapeRuleFn rules[OP_COUNT] = {
  [OP_MATMUL] = shape_rule_matmul, [OP_SUMPROD] = shape_rule_sumprod,
  [OP_DOT] = shape_rule_products, [OP_ROWSUMSPROD] = shape_rule_products, [OP_COLSUMSPROD] = shape_rule_products, [OP_DIAGPROD] = shape_rule_products,
  [OP_CROSSPROD] = shape_rule_products, [OP_TCROSSPROD] = shape_rule_products, [OP_XTWXV] = shape_rule_products, [OP_MMCHAIN] = shape_rule_products, [OP_MASKED] = shape_rule_products, [OP_TRANSPOSE] = shape_rule_transpose, [OP_RESHAPE] = shape_rule_reshape, [OP_RANGE] = shape_rule_range,
  [OP_INDEX] = shape_rule_index, [OP_SCATTER] = shape_rule_scatter, [OP_SOLVE] = shape_rule_solve, [OP_INV] = shape_rule_linalg1,
  [OP_DET] = shape_rule_linalg1, [OP_EIGVALS] = shape_rule_linalg1, [OP_EIGVECS] = shape_rule_linalg1, [OP_CHOL] = shape_rule_linalg1,
  [OP_QR_Q] = shape_rule_linalg1, [OP_QR_R] = shape_rule_linalg1, [OP_SVD_U] = shape_rule_linalg1, [OP_SVD_S] = shape_rule_linalg1,
  [OP_SVD_V] = shape_rule_linalg1,
  [OP_SUM] = shape_rule_reduce, [OP_ROWSUMS] = shape_rule_reduce, [OP_COLSUMS] = shape_rule_reduce, [OP_PROD] = shape_rule_reduce,
  [OP_MAX] = shape_rule_reduce, [OP_MIN] = shape_rule_reduce, [OP_ROWMAXS] = shape_rule_reduce, [OP_ROWMINS] = shape_rule_reduce,
  [OP_COLMAXS] = shape_rule_reduce, [OP_COLMINS] = shape_rule_reduce, [OP_ROWINDEXMAX] = shape_rule_reduce, [OP_ROWINDEXMIN] = shape_rule_reduce,
  [OP_CUMSUM] = shape_rule_scan, [OP_CUMPROD] = shape_rule_scan, [OP_SOFTMAX] = shape_rule_scan, [OP_LOGSOFTMAX] = shape_rule_scan,
  [OP_DIAG] = shape_rule_diag, [OP_IFELSE] = shape_rule_ifelse,
  [OP_CUMMAX] = shape_rule_scan, [OP_CUMMIN] = shape_rule_scan, [OP_CUMSUMPROD] = shape_rule_reduce, [OP_ROWPRODS] = shape_rule_reduce,
  [OP_COLPRODS] = shape_rule_reduce,
  [OP_CUMEXT_GRAD] = shape_rule_grad_aux, [OP_CUMEXT_TAN] = shape_rule_grad_aux, [OP_ROWPRODS_GRAD] = shape_rule_grad_aux,
  [OP_COLPRODS_GRAD] = shape_rule_grad_aux,
  [OP_LINREC] = shape_rule_grad_aux, [OP_RLINREC] = shape_rule_grad_aux,
  [OP_CONV2D] = shape_rule_nn, [OP_CONV2D_BWD_DATA] = shape_rule_nn, [OP_CONV2D_BWD_FILT] = shape_rule_nn, [OP_MAX_POOL] = shape_rule_nn,
  [OP_MAX_POOL_BWD] = shape_rule_nn, [OP_MAX_POOL_GATHER] = shape_rule_nn, [OP_AVG_POOL] = shape_rule_nn, [OP_AVG_POOL_BWD] = shape_rule_nn,
  [OP_BIAS_ADD] = shape_rule_nn, [OP_BIAS_MULTIPLY] = shape_rule_nn,
  [OP_ALLREDUCE] = shape_rule_allreduce,
};

static ShapeRuleFn rule_for(OpKind op) {
  if (op <= OP_NONE || op >= OP_COUNT) return NULL;
  if (rules[op]) return rules[op];
  if (op_info[op].flags & OPF_EW) return op_info[op].arity == 2 ? shape_rule_ew2 : shape_rule_ew1;
  return NULL;
}

bool shape_has_rule(OpKind op) { return rule_for(op) != NULL; }

ShapeStatus shape_rule(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  ShapeRuleFn f = rule_for(op);
  *out = shape_any();
  if (!f) return SHAPE_OK;
  err->msg[0] = '\0';
  err->span = sp;
  return f(op, in, x, sp, out, err);
}
