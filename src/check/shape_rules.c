/*
** shape_rules.c — one shape rule per op family (elementwise, linear algebra and layout,
** indexing, reductions and scans, LAPACK, nn, communication), each the eager entry point's
** checks of ops.c / eval.c / builtins_*.c on shapes alone, with the same messages; one table
** by OpKind picks the rule. Written to move, rule by rule, next to its op (issue 26).
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "backend/scalar.h"
#include "check/shape_rules.h"
#include "print.h"

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

static bool numlike(Shape s) { return s.kind == SK_NUM || s.kind == SK_BOOL; }
static bool unknown_kind(Shape s) { return s.kind == SK_NONE || s.kind == SK_ANY; }
static bool matlike(Shape s) { return s.kind == SK_MAT || numlike(s); }          /* numbers are 1x1 */
static bool maybe_matlike(Shape s) { return matlike(s) || s.kind == SK_NUMERIC || unknown_kind(s); }

static void dims(Shape s, int64_t *r, int64_t *c) {
  if (s.kind == SK_MAT) { *r = s.rows; *c = s.cols; }
  else if (numlike(s)) { *r = *c = 1; }
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
  if (a.kind == SK_NONE || b.kind == SK_NONE || unknown_kind(a) || unknown_kind(b)) return shape_any();
  if (a.kind == b.kind) {
    Shape r = a;
    r.known = a.known && b.known && same_value(a.value, b.value);
    if (!r.known) r.value = 0;
    if (a.rows != b.rows) r.rows = SHAPE_UNKNOWN;
    if (a.cols != b.cols) r.cols = SHAPE_UNKNOWN;
    if (a.len != b.len) r.len = -1;
    return r;
  }
  bool na = matlike(a) || a.kind == SK_NUMERIC, nb = matlike(b) || b.kind == SK_NUMERIC;
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
typedef struct Chk {
  bool sure;            /* every check so far passed for certain */
  bool failed;
  bool exact;           /* the failure's message is the eager one */
  ShapeError *err;
} Chk;

static void chk_init(Chk *k, ShapeError *err) { k->sure = true; k->failed = false; k->exact = false; k->err = err; }

__attribute__((format(printf, 3, 4))) static void chk_fail(Chk *k, Span sp, const char *fmt, ...) {
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
static void chk_fail_unsaid(Chk *k) {
  if (k->failed) return;
  k->failed = true;
  k->exact = false;
}

static ShapeStatus chk_status(const Chk *k) { return !k->failed ? SHAPE_OK : k->exact ? SHAPE_ERROR : SHAPE_FAILS; }

/* "3x4" for a matrix, "1x1" for a number, else the type's name (ops.c shape_str). */
static bool shape_str(Shape s, char *buf, size_t n) {
  if (s.kind == SK_MAT) {
    if (s.rows < 0 || s.cols < 0) return false;
    snprintf(buf, n, "%lldx%lld", (long long)s.rows, (long long)s.cols);
  } else if (numlike(s)) snprintf(buf, n, "1x1");
  else if (s.kind == SK_STR) snprintf(buf, n, "string");
  else if (s.kind == SK_LIST) snprintf(buf, n, "list");
  else if (s.kind == SK_FUNC) snprintf(buf, n, "function");
  else if (s.kind == SK_NULL) snprintf(buf, n, "NULL");
  else return false;
  return true;
}

/* "got 3x4" for a matrix, "got a string" otherwise (ops.c bad_argn). */
static bool got_str(Shape s, char *buf, size_t n) { return s.kind == SK_MAT ? shape_str(s, buf, n) : shape_describe(s, buf, n); }

static const char *name_of(OpKind op, const ShapeExtra *x) { return x && x->name ? x->name : op_info[op].sym; }

static void bad_operand(Chk *k, OpKind op, Shape v, Span sp) {
  char d[64];
  if (!shape_describe(v, d, sizeof d)) { chk_fail_unsaid(k); return; }
  chk_fail(k, sp, "invalid operand for '%s': %s", op_info[op].sym, d);
}

static void bad_operands(Chk *k, OpKind op, Shape a, Shape b, Span sp) {
  char d0[64], d1[64];
  if (!shape_describe(a, d0, sizeof d0) || !shape_describe(b, d1, sizeof d1)) { chk_fail_unsaid(k); return; }
  chk_fail(k, sp, "invalid operands for '%s': %s and %s", op_info[op].sym, d0, d1);
}

/* "bad argument #n to 'name' (what, got X)" of ops.c bad_argn. */
static void bad_argn(Chk *k, const char *name, int argn, Span sp, const char *what, Shape v) {
  char d[64];
  if (!got_str(v, d, sizeof d)) { chk_fail_unsaid(k); return; }
  chk_fail(k, sp, "bad argument #%d to '%s' (%s, got %s)", argn, name, what, d);
}

/* The result's extent along one axis from the operands' (an elementwise result has the shape
** of its full operand, whose extent is the other's or 1 along every axis). */
static int64_t pick(int64_t x, int64_t y) {
  if (x >= 0 && x != 1) return x;
  if (y >= 0 && y != 1) return y;
  if (x >= 0 && y >= 0) return 1;
  return SHAPE_UNKNOWN;
}

typedef ShapeStatus (*RuleFn)(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);

/* ==== elementwise (ops.c op_binary, op_unary): LANGUAGE.md §5 ==== */
static ShapeStatus rule_ew2(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0], b = in[1];
  bool cmp = (op_info[op].flags & OPF_CMP) != 0;
  Chk k;
  chk_init(&k, err);
  (void)x;
  if (unknown_kind(a) || unknown_kind(b)) { *out = shape_any(); return SHAPE_OK; }
  if (numlike(a) && numlike(b)) {
    if (a.known && b.known) {
      double r = sc_binary(op, a.value, b.value);
      *out = cmp ? shape_bool(true, r != 0) : shape_num(r);
    } else *out = cmp ? shape_bool(false, false) : shape_num_unknown();
    return SHAPE_OK;
  }
  if (a.kind == SK_STR || b.kind == SK_STR) {
    if (op == OP_ADD) { *out = shape_of_kind(SK_STR); return SHAPE_OK; }        /* op_concat */
    if (a.kind == SK_STR && b.kind == SK_STR && op >= OP_EQ && op <= OP_GE) { *out = shape_bool(false, false); return SHAPE_OK; }
    bad_operands(&k, op, a, b, sp);
    return chk_status(&k);
  }
  if (!maybe_matlike(a) || !maybe_matlike(b)) {
    bad_operands(&k, op, a, b, sp);
    return chk_status(&k);
  }
  if (a.kind == SK_NUMERIC || b.kind == SK_NUMERIC) {   /* a number or a matrix */
    if (a.kind != SK_MAT && b.kind != SK_MAT) { *out = shape_numeric(); return SHAPE_OK; }
    int64_t r0, c0, r1, c1;
    dims(a, &r0, &c0);
    dims(b, &r1, &c1);
    *out = shape_mat(pick(r0, r1), pick(c0, c1));
    return SHAPE_OK;
  }
  int64_t r0, c0, r1, c1;
  dims(a, &r0, &c0);
  dims(b, &r1, &c1);
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
      shape_str(a, s0, sizeof s0);
      shape_str(b, s1, sizeof s1);
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
  *out = shape_mat(pick(r0, r1), pick(c0, c1));
  return SHAPE_OK;
}

static ShapeStatus rule_ew1(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  (void)x;
  if (numlike(a)) {
    if (a.known) {
      double r = sc_unary(op, a.value);
      *out = op == OP_NOT ? shape_bool(true, r != 0) : shape_num(r);
    } else *out = op == OP_NOT ? shape_bool(false, false) : shape_num_unknown();
    return SHAPE_OK;
  }
  if (a.kind == SK_MAT) { *out = shape_mat(a.rows, a.cols); return SHAPE_OK; }
  if (a.kind == SK_NUMERIC || unknown_kind(a)) { *out = a.kind == SK_NUMERIC ? shape_numeric() : shape_any(); return SHAPE_OK; }
  bad_operand(&k, op, a, sp);
  return chk_status(&k);
}

/* ==== linear algebra and layout ==== */
/* The operand check of ops.c: a number, a boolean or a matrix passes; SK_ANY cannot tell. */
static void need_matlike(Chk *k, OpKind op, Shape v, Span sp) {
  if (unknown_kind(v)) k->sure = false;
  else if (!maybe_matlike(v)) bad_operand(k, op, v, sp);
}

static ShapeStatus rule_matmul(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0], b = in[1];
  Chk k;
  chk_init(&k, err);
  (void)x;
  need_matlike(&k, op, a, sp);
  need_matlike(&k, op, b, sp);
  if (k.failed) return chk_status(&k);
  int64_t ra, ca, rb, cb;
  dims(a, &ra, &ca);
  dims(b, &rb, &cb);
  if (ca >= 0 && rb >= 0 && ca != rb) {
    if (ra >= 0 && cb >= 0)
      chk_fail(&k, sp, "non-conformable arguments for '%%*%%': %lldx%lld and %lldx%lld", (long long)ra, (long long)ca,
               (long long)rb, (long long)cb);
    else chk_fail_unsaid(&k);
    return chk_status(&k);
  }
  *out = shape_mat(ra, cb);
  return SHAPE_OK;
}

/* sumprod(X, Y), staging's sum(X %*% Y): the product's checks, a number */
static ShapeStatus rule_sumprod(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  ShapeStatus st = rule_matmul(op, in, x, sp, out, err);
  if (st == SHAPE_OK) *out = shape_num_unknown();
  return st;
}

static ShapeStatus rule_transpose(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);

/* The product forms of staging's rewrites (ops.def), each as the form it replaces: dot(X, Y)
** is sum(X * Y), a number; rowsumsprod, colsumsprod and diagprod are the product's rowSums,
** colSums and diag; crossprod(X) is t(X) %*% X, tcrossprod(X) X %*% t(X), xtwxv(X, w, v)
** t(X) %*% (w * (X %*% v)); a chain, the product of its (first two) operands. */
static ShapeStatus rule_products(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  ShapeStatus st;
  int64_t r, c;
  switch (op) {
  case OP_DOT:
    st = rule_ew2(op, in, x, sp, out, err);
    if (st == SHAPE_OK) *out = shape_num_unknown();
    return st;
  case OP_XTWXV: {                        /* t(X) %*% (w * (X %*% v)) */
    Shape xv, u, t;
    if ((st = rule_matmul(OP_MATMUL, (Shape[]){ in[0], in[2] }, x, sp, &xv, err)) != SHAPE_OK) return st;
    if ((st = rule_ew2(OP_MUL, (Shape[]){ in[1], xv }, x, sp, &u, err)) != SHAPE_OK) return st;
    if ((st = rule_transpose(OP_TRANSPOSE, in, x, sp, &t, err)) != SHAPE_OK) return st;
    return rule_matmul(OP_MATMUL, (Shape[]){ t, u }, x, sp, out, err);
  }
  case OP_CROSSPROD: case OP_TCROSSPROD: {
    Shape t;
    st = rule_transpose(OP_TRANSPOSE, in, x, sp, &t, err);
    if (st != SHAPE_OK) return st;
    Shape ab[2] = { op == OP_CROSSPROD ? t : in[0], op == OP_CROSSPROD ? in[0] : t };
    return rule_matmul(OP_MATMUL, ab, x, sp, out, err);
  }
  default: break;
  }
  st = rule_matmul(OP_MATMUL, in, x, sp, out, err);
  if (st != SHAPE_OK || out->kind != SK_MAT) return st;
  r = out->rows;
  c = out->cols;
  if (op == OP_ROWSUMSPROD) *out = shape_mat(r, 1);
  else if (op == OP_COLSUMSPROD) *out = shape_mat(1, c);
  else if (op == OP_DIAGPROD) *out = shape_mat(r >= 0 ? r : c, 1);
  return SHAPE_OK;
}

static ShapeStatus rule_transpose(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  (void)x;
  if (numlike(a)) { *out = a.known ? shape_num(a.value) : shape_num_unknown(); return SHAPE_OK; }
  if (a.kind == SK_MAT) { *out = shape_mat(a.cols, a.rows); return SHAPE_OK; }
  if (a.kind == SK_NUMERIC || unknown_kind(a)) { *out = a.kind == SK_NUMERIC ? shape_numeric() : shape_any(); return SHAPE_OK; }
  bad_operand(&k, op, a, sp);
  return chk_status(&k);
}

/* op_reshape(a, rows, cols) */
static ShapeStatus rule_reshape(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  int64_t rows = x ? x->rows : SHAPE_UNKNOWN, cols = x ? x->cols : SHAPE_UNKNOWN;
  need_matlike(&k, op, a, sp);
  if (k.failed) return chk_status(&k);
  int64_t r, c;
  dims(a, &r, &c);
  if (r >= 0 && c >= 0 && rows >= 0 && cols >= 0 && rows * cols != r * c) {
    chk_fail(&k, sp, "cannot shape %lld values into a %lldx%lld matrix", (long long)(r * c), (long long)rows, (long long)cols);
    return chk_status(&k);
  }
  *out = shape_mat(rows, cols);
  return SHAPE_OK;
}

/* A range's end as op_range reads it (a number, a boolean or a 1x1 matrix): 1 it is one (*v its
** value when *known), 0 it is not (the error), -1 cannot tell. */
static int range_end(Shape s, double *v, bool *known) {
  *known = false;
  *v = 0;
  if (numlike(s)) { *known = s.known; *v = s.value; return 1; }
  if (s.kind == SK_MAT) {
    if (s.rows >= 0 && s.cols >= 0) {
      if (s.rows * s.cols != 1) return 0;
      *known = s.known;
      *v = s.value;
      return 1;
    }
    return s.rows == 0 || s.cols == 0 || s.rows > 1 || s.cols > 1 ? 0 : -1;
  }
  return s.kind == SK_NUMERIC || unknown_kind(s) ? -1 : 0;
}

/* The count of a:b from its finite ends (op_range). */
static int64_t range_count(double from, double to) { return (int64_t)floor(fabs(to - from) + 1e-10) + 1; }

static void range_checks(Chk *k, Shape a, Shape b, Span sp, bool *known, double *from, double *to) {
  bool ka, kb;
  *known = false;
  int ea = range_end(a, from, &ka);
  if (ea == 0) { bad_operand(k, OP_RANGE, a, sp); return; }
  if (ea < 0) k->sure = false;
  int eb = range_end(b, to, &kb);
  if (eb == 0) { bad_operand(k, OP_RANGE, b, sp); return; }
  if (eb < 0) k->sure = false;
  if ((ka && !isfinite(*from)) || (kb && !isfinite(*to))) { chk_fail(k, sp, "the ends of ':' must be finite numbers"); return; }
  if (!ka || !kb) return;
  if (fabs(*to - *from) >= 1e15) { chk_fail(k, sp, "the range of ':' is too long"); return; }
  *known = true;
}

static ShapeStatus rule_range(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  bool known;
  double from, to;
  (void)op;
  (void)x;
  range_checks(&k, in[0], in[1], sp, &known, &from, &to);
  if (k.failed) return chk_status(&k);
  *out = shape_mat(known ? range_count(from, to) : SHAPE_UNKNOWN, 1);
  return SHAPE_OK;
}

/* ==== indexing (eval.c: eval_index, assign_matrix_index; ops/index.c: index_range_precheck,
** index_masks, index_read, make_index, index_assign, assign_checks, index_scatter) ==== */

/* One index, evaluated: what make_index sees. */
typedef enum { IV_ALL, IV_NUM, IV_RANGE, IV_POS, IV_VEC, IV_OTHER, IV_UNKNOWN } IvKind;
typedef struct Iv {
  IvKind kind;
  bool known;            /* IV_NUM: k known */
  double k;              /* IV_NUM */
  double from, step;     /* IV_RANGE: from + step * i, i < n */
  int64_t n;             /* IV_RANGE, IV_POS: the count */
  Shape v;               /* IV_VEC, IV_OTHER: the value */
} Iv;

/* A selection along one axis (ops/index.c Index). sc: scalar 1, not 0, cannot tell -1. */
typedef struct Sel { bool all; int sc; int64_t n; } Sel;

static void index_oob(Chk *k, Span sp, double v, int64_t mr, int64_t mc, const char *dim) {
  char buf[64];
  if (mr < 0 || mc < 0) { chk_fail_unsaid(k); return; }
  fmt_num(buf, sizeof buf, v, 15);
  chk_fail(k, sp, "index %s out of bounds for %lldx%lld matrix (%s)", buf, (long long)mr, (long long)mc, dim);
}

static bool in_bounds(double v, int64_t len) { return v >= 1 && v < (double)len + 1; }

/* make_index for a dimension of length len (SHAPE_UNKNOWN: not known) of the mr x mc matrix. */
static void make_sel(Chk *k, Sel *s, const Iv *v, int64_t len, int64_t mr, int64_t mc, const char *dim, Span sp) {
  s->all = false;
  s->sc = 0;
  s->n = SHAPE_UNKNOWN;
  char d[64];
  switch (v->kind) {
  case IV_ALL: s->all = true; s->n = len; return;
  case IV_NUM:
    s->sc = 1;
    s->n = 1;
    if (!v->known) { k->sure = false; return; }
    if (len >= 0 ? !in_bounds(v->k, len) : !(v->k >= 1)) index_oob(k, sp, v->k, mr, mc, dim);
    else if (len < 0) k->sure = false;
    return;
  case IV_RANGE: {
    s->n = v->n;
    if (v->n == 0) return;
    double bad;
    bool found = false;
    if (!(v->from >= 1)) { bad = v->from; found = true; }
    else if (len < 0) { k->sure = false; return; }
    else if (!in_bounds(v->from, len)) { bad = v->from; found = true; }
    else if (v->step > 0) {                       /* the first of from + i past len */
      double i0 = ceil((double)len + 1 - v->from);
      if (i0 < (double)v->n) { bad = v->from + i0; found = true; }
    } else {                                      /* the first of from - i below 1 */
      double i0 = floor(v->from - 1) + 1;
      if (i0 < (double)v->n) { bad = v->from - i0; found = true; }
    }
    if (found) index_oob(k, sp, bad, mr, mc, dim);
    return;
  }
  case IV_POS: s->n = v->n; return;
  case IV_VEC:
    if (v->v.rows >= 0 && v->v.cols >= 0) s->n = v->v.rows * v->v.cols;
    if (v->v.rows >= 0 && v->v.cols >= 0 && v->v.rows != 1 && v->v.cols != 1) {
      shape_describe(v->v, d, sizeof d);
      chk_fail(k, sp, "an index must be a number or a vector, got %s", d);
      return;
    }
    k->sure = false;                             /* its values: in bounds or not */
    return;
  case IV_OTHER:
    if (!shape_describe(v->v, d, sizeof d)) { chk_fail_unsaid(k); return; }
    chk_fail(k, sp, "an index must be a number or a vector, got %s", d);
    return;
  default:
    s->sc = -1;
    k->sure = false;
    return;
  }
}

/* An index value as make_index reads it (after index_masks for a vector of known values). */
static void iv_of_value(Iv *iv, Shape v) {
  memset(iv, 0, sizeof *iv);
  iv->v = v;
  if (v.kind == SK_NUM || v.kind == SK_BOOL) {
    if (v.kind == SK_BOOL && !v.known) { iv->kind = IV_UNKNOWN; return; }
    if (v.kind == SK_BOOL && v.value == 0) { iv->kind = IV_POS; iv->n = 0; return; }   /* FALSE: nothing */
    iv->kind = IV_NUM;
    iv->known = v.known;
    iv->k = v.value;
    return;
  }
  if (v.kind == SK_MAT) { iv->kind = IV_VEC; return; }
  if (v.kind == SK_STR || v.kind == SK_LIST || v.kind == SK_FUNC || v.kind == SK_NULL) { iv->kind = IV_OTHER; return; }
  iv->kind = IV_UNKNOWN;
}

/* is_mask and mask_positions of ops/index.c for the range from..to (n values): whether it is a mask
** of a dimension of length len, with the error of one of the wrong length. */
static void range_mask(Chk *k, Iv *iv, int64_t len, const char *dim, Span sp) {
  if (iv->n > 2) return;                                  /* three values are not all 0 or 1 */
  bool zero = false;
  int64_t ones = 0;
  for (int64_t i = 0; i < iv->n; i++) {
    double v = iv->from + iv->step * (double)i;
    if (v != 0 && v != 1) return;                         /* positions */
    zero = zero || v == 0;
    ones += v == 1;
  }
  if (!zero) return;                                      /* only 1s, not logical: positions */
  if (iv->n == 1 && len != 1) return;
  if (len < 0) { k->sure = false; iv->kind = IV_UNKNOWN; return; }
  if (iv->n != len) {
    chk_fail(k, sp, "a logical mask of length %lld for %lld %s (a mask needs one TRUE/FALSE per %s)", (long long)iv->n,
             (long long)len, dim, dim[0] == 'r' ? "row" : dim[0] == 'c' ? "column" : "element");
    return;
  }
  iv->kind = IV_POS;
  iv->n = ones;
}

/* range_precheck: index i of nuse, a:b written in the brackets, against the matrix x. */
static void range_precheck(Chk *k, Shape x, int nuse, int i, Shape a, Shape b, Span sp) {
  if (x.kind != SK_MAT || a.kind != SK_NUM || b.kind != SK_NUM || nuse > 2) {
    if (!(x.kind == SK_MAT || numlike(x) || x.kind == SK_STR || x.kind == SK_LIST || x.kind == SK_FUNC || x.kind == SK_NULL) ||
        a.kind == SK_NUMERIC || b.kind == SK_NUMERIC || unknown_kind(a) || unknown_kind(b) ||
        (a.kind == SK_MAT && !(a.rows >= 0 && a.cols >= 0 && a.rows * a.cols != 1)))
      k->sure = false;             /* x or an end might be of the kind it checks */
    return;
  }
  int64_t rows = x.rows, cols = x.cols, len;
  const char *dim;
  if (nuse == 1) {
    if (rows < 0 || cols < 0) { k->sure = false; return; }
    if (rows != 1 && cols != 1) {
      chk_fail(k, sp, "a single index needs a row or column vector, got a %lldx%lld matrix (use X[i, j])", (long long)rows,
               (long long)cols);
      return;
    }
    len = rows == 1 ? cols : rows;
    dim = rows == 1 ? "columns" : "rows";
  } else {
    len = i == 0 ? rows : cols;
    dim = i == 0 ? "rows" : "columns";
  }
  if (!a.known || !b.known) { k->sure = false; return; }
  double from = a.value, to = b.value;
  if (!isfinite(from) || !isfinite(to) || fabs(to - from) >= 1e15) return;
  if (len < 0) {
    if (!(from >= 1)) index_oob(k, sp, from, rows, cols, dim);
    else k->sure = false;
    return;
  }
  if (!(from >= 1 && from < (double)len + 1)) { index_oob(k, sp, from, rows, cols, dim); return; }
  double bad = to >= from ? from + ceil((double)len + 1 - from) : from - (floor(from - 1) + 1);
  if (to >= from ? bad <= to + 1e-10 : bad >= to - 1e-10) index_oob(k, sp, bad, rows, cols, dim);
}

/* The indices of x[...]: each range built (its errors at its own span), each made an Iv. */
static void eval_ranges(Chk *k, const ShapeIndex *ix, int nix, Iv *iv) {
  for (int i = 0; i < nix && !k->failed; i++) {
    if (ix[i].kind == SIX_ALL) { memset(&iv[i], 0, sizeof iv[i]); iv[i].kind = IV_ALL; continue; }
    if (ix[i].kind == SIX_VALUE) { iv_of_value(&iv[i], ix[i].v); continue; }
    bool known;
    double from, to;
    range_checks(k, ix[i].from, ix[i].to, ix[i].span, &known, &from, &to);
    memset(&iv[i], 0, sizeof iv[i]);
    iv[i].v = shape_mat(known ? range_count(from, to) : SHAPE_UNKNOWN, 1);
    if (!known) { iv[i].kind = IV_VEC; continue; }
    iv[i].kind = IV_RANGE;
    iv[i].from = from;
    iv[i].step = to >= from ? 1.0 : -1.0;
    iv[i].n = range_count(from, to);
  }
}

/* index_masks for the indices of x (a matrix or a number) as written (nix of them). Sets
** *whole when X[M] may be a mask M of X's own (non-vector) shape: then only the count is
** unknown, or the single index is an error. */
static void masks(Chk *k, Shape x, int nix, Iv *iv, Span sp, bool *whole) {
  *whole = false;
  if (nix < 1 || nix > 2 || !(x.kind == SK_MAT || numlike(x))) return;
  int64_t rows, cols;
  dims(x, &rows, &cols);
  for (int i = 0; i < nix && !k->failed; i++) {
    if (iv[i].kind == IV_VEC) {                      /* values not known: a mask or not */
      Shape m = iv[i].v;
      bool mk = m.rows >= 0 && m.cols >= 0, vec = mk && (m.rows == 1 || m.cols == 1);
      if (nix == 2) {                                /* a non-vector is no mask: make_index's error */
        if (!(mk && !vec)) { k->sure = false; iv[i].kind = IV_UNKNOWN; }
      } else if (rows < 0 || cols < 0) {
        k->sure = false;
        iv[i].kind = IV_UNKNOWN;
      } else if (rows != 1 && cols != 1) {           /* X[M]: M of X's shape, if a mask */
        if (!mk || (m.rows == rows && m.cols == cols)) { k->sure = false; iv[i].kind = IV_UNKNOWN; *whole = true; }
      } else if (!(mk && !vec)) {
        k->sure = false;
        iv[i].kind = IV_UNKNOWN;
      }
      continue;
    }
    if (iv[i].kind != IV_RANGE) continue;
    if (nix == 1 && (rows < 0 || cols < 0)) { k->sure = false; iv[i].kind = IV_UNKNOWN; continue; }
    if (nix == 1 && rows != 1 && cols != 1) continue;   /* X[M] needs M of X's (non-vector) shape */
    int64_t len = nix == 1 ? (rows == 1 ? cols : rows) : (i == 0 ? rows : cols);
    range_mask(k, &iv[i], len, nix == 1 ? "elements" : i == 0 ? "rows" : "columns", sp);
  }
}

/* index_read's selection of x (rows x cols, either maybe unknown) by nuse indices. false: the
** shape of the result cannot be told. */
static void select2(Chk *k, int64_t rows, int64_t cols, int nuse, const Iv *iv, Sel *ri, Sel *ci, Span sp, bool check_vec) {
  Iv all;
  memset(&all, 0, sizeof all);
  all.kind = IV_ALL;
  if (nuse == 1) {
    if (rows < 0 || (rows != 1 && cols < 0)) {      /* which axis it indexes: not known */
      k->sure = false;
      ri->all = ci->all = false;
      ri->sc = ci->sc = -1;
      ri->n = ci->n = SHAPE_UNKNOWN;
      return;
    }
    if (check_vec && rows != 1 && cols != 1) {
      chk_fail(k, sp, "a single index needs a row or column vector, got a %lldx%lld matrix (use X[i, j])", (long long)rows,
               (long long)cols);
      return;
    }
    if (rows == 1) { make_sel(k, ri, &all, 1, rows, cols, "rows", sp); make_sel(k, ci, &iv[0], cols, rows, cols, "columns", sp); }
    else { make_sel(k, ri, &iv[0], rows, rows, cols, "rows", sp); make_sel(k, ci, &all, 1, rows, cols, "columns", sp); }
  } else {
    make_sel(k, ri, &iv[0], rows, rows, cols, "rows", sp);
    if (!k->failed) make_sel(k, ci, &iv[1], cols, rows, cols, "columns", sp);
  }
}

static ShapeStatus rule_index(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape m = in[0];
  Chk k;
  chk_init(&k, err);
  (void)op;
  int nix = x ? x->nix : 0;
  if (nix < 1 || nix > 2 || !x->ix) { *out = shape_any(); return SHAPE_OK; }
  int nuse = nix;
  if (x->dml_row && nix == 1 && m.kind == SK_MAT) {          /* DML's X[i] = X[i, ] */
    if (m.cols < 0) { *out = shape_any(); return SHAPE_OK; }
    if (m.cols != 1) nuse = 2;
  } else if (x->dml_row && nix == 1 && (m.kind == SK_NUMERIC || unknown_kind(m))) { *out = shape_any(); return SHAPE_OK; }
  ShapeIndex ix[2];
  for (int i = 0; i < 2; i++) ix[i] = i < nix ? x->ix[i] : (ShapeIndex){ .kind = SIX_ALL };
  Iv iv[2];
  for (int i = 0; i < nix && !k.failed; i++) {              /* eval_index: a:b checked, then built */
    if (ix[i].kind != SIX_RANGE) continue;
    range_precheck(&k, m, nuse, i, ix[i].from, ix[i].to, sp);
    if (k.failed) break;
    eval_ranges(&k, &ix[i], 1, &iv[i]);
  }
  if (k.failed) return chk_status(&k);
  for (int i = 0; i < nuse; i++)
    if (ix[i].kind != SIX_RANGE) eval_ranges(&k, &ix[i], 1, &iv[i]);
  bool whole;
  masks(&k, m, nuse, iv, sp, &whole);
  if (k.failed) return chk_status(&k);
  if (whole) { *out = shape_mat(SHAPE_UNKNOWN, 1); return SHAPE_OK; }   /* the mask's count, or an error */
  if (m.kind == SK_LIST || m.kind == SK_NUMERIC || unknown_kind(m)) {
    *out = m.kind == SK_NUMERIC ? shape_numeric() : shape_any();   /* lists: the checker reads items */
    return SHAPE_OK;
  }
  if (!matlike(m)) {
    char d[64];
    if (!shape_describe(m, d, sizeof d)) chk_fail_unsaid(&k);
    else chk_fail(&k, sp, "cannot index %s", d);
    return chk_status(&k);
  }
  int64_t rows, cols;
  dims(m, &rows, &cols);
  Sel ri, ci;
  select2(&k, rows, cols, nuse, iv, &ri, &ci, sp, true);
  if (k.failed) return chk_status(&k);
  if (nuse == 1 && rows >= 0) {
    if (rows == 1) ri.sc = 1;
    if (cols == 1) ci.sc = 1;
  }
  if (ri.sc < 0 || ci.sc < 0 || (ri.sc == 1 && ci.sc == 1 && (ri.n < 0 || ci.n < 0))) {
    *out = shape_numeric();
    return SHAPE_OK;
  }
  if (ri.sc == 1 && ci.sc == 1 && ri.n == 1 && ci.n == 1 && (nuse == 2 ? (!ri.all && !ci.all) : true)) *out = shape_num_unknown();
  else *out = shape_mat(ri.n, ci.n);
  return SHAPE_OK;
}

/* index_scatter: zeros(rows, cols) with v at the selection (no mask, no vector check). */
static ShapeStatus rule_scatter(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  (void)op;
  (void)in;
  int nix = x ? x->nix : 0;
  int64_t rows = x ? x->rows : SHAPE_UNKNOWN, cols = x ? x->cols : SHAPE_UNKNOWN;
  if (nix < 1 || nix > 2 || !x->ix) { *out = shape_mat(rows, cols); return SHAPE_OK; }
  Iv iv[2];
  eval_ranges(&k, x->ix, nix, iv);
  if (k.failed) return chk_status(&k);
  Sel ri, ci;
  select2(&k, rows, cols, nix, iv, &ri, &ci, sp, false);
  if (k.failed) return chk_status(&k);
  *out = shape_mat(rows, cols);
  return SHAPE_OK;
}

ShapeStatus shape_index_assign(Shape target, const ShapeExtra *x, Shape rhs, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  int nix = x ? x->nix : 0;
  if (nix < 1 || nix > 2 || !x->ix) { *out = shape_any(); return SHAPE_OK; }
  int nuse = nix;
  if (x->dml_row && nix == 1) {                              /* on the target before it is made 1x1 */
    if (target.kind == SK_MAT && target.cols < 0) { *out = shape_mat(target.rows, target.cols); return SHAPE_OK; }
    if (target.kind == SK_MAT && target.cols != 1) nuse = 2;
    if (target.kind == SK_NUMERIC || unknown_kind(target)) { *out = shape_any(); return SHAPE_OK; }
  }
  if (numlike(target)) target = shape_mat(1, 1);          /* x = 5; x[1] = 3 */
  Iv iv[2];
  ShapeIndex ix[2];
  for (int i = 0; i < 2; i++) ix[i] = i < nix ? x->ix[i] : (ShapeIndex){ .kind = SIX_ALL };
  eval_ranges(&k, ix, nuse, iv);                             /* every index built before anything */
  if (k.failed) return chk_status(&k);
  if (target.kind == SK_NUMERIC || unknown_kind(target)) { *out = shape_any(); return SHAPE_OK; }
  if (target.kind != SK_MAT) {
    char d[64];
    if (!shape_describe(target, d, sizeof d)) chk_fail_unsaid(&k);
    else chk_fail(&k, sp, "cannot assign into an index of %s", d);
    return chk_status(&k);
  }
  *out = shape_mat(target.rows, target.cols);              /* the target keeps its shape */
  bool whole;
  masks(&k, target, nuse, iv, sp, &whole);
  if (k.failed) return chk_status(&k);
  if (whole) return SHAPE_OK;                                /* X[M] = v: a mask of X's shape, or not */
  Sel ri, ci;
  select2(&k, target.rows, target.cols, nuse, iv, &ri, &ci, sp, true);
  if (k.failed) return chk_status(&k);
  if (numlike(rhs) || (rhs.kind == SK_MAT && rhs.rows == 1 && rhs.cols == 1)) return SHAPE_OK;
  if (rhs.kind == SK_MAT) {
    if (rhs.rows < 0 || rhs.cols < 0 || ri.n < 0 || ci.n < 0) return SHAPE_OK;
    bool same = rhs.rows == ri.n && rhs.cols == ci.n;
    bool vec = (ri.n == 1 || ci.n == 1) && rhs.rows * rhs.cols == ri.n * ci.n && (rhs.rows == 1 || rhs.cols == 1);
    if (!same && !(nuse == 1 && vec))
      chk_fail(&k, sp, "cannot assign a %lldx%lld matrix into a %lldx%lld selection", (long long)rhs.rows, (long long)rhs.cols,
               (long long)ri.n, (long long)ci.n);
    return chk_status(&k);
  }
  if (rhs.kind == SK_NUMERIC || unknown_kind(rhs)) return SHAPE_OK;
  char d[64];
  if (!shape_describe(rhs, d, sizeof d)) chk_fail_unsaid(&k);
  else chk_fail(&k, sp, "cannot assign %s into a matrix", d);
  return chk_status(&k);
}

/* ==== LAPACK builtins (ops/linalg.c: arg_copy, check_shape) ==== */
/* Argument argn of the builtin as bi_mat reads it (numbers are 1x1); square when asked. */
static void la_arg(Chk *k, const char *name, int argn, Shape a, bool square, int64_t *r, int64_t *c, Span sp) {
  char d[64];
  *r = *c = SHAPE_UNKNOWN;
  if (unknown_kind(a) || a.kind == SK_NUMERIC) { k->sure = false; return; }
  if (!matlike(a)) {
    if (!shape_describe(a, d, sizeof d)) { chk_fail_unsaid(k); return; }
    chk_fail(k, sp, "bad argument #%d to '%s' (matrix expected, got %s)", argn, name, d);
    return;
  }
  dims(a, r, c);
  if (square && *r >= 0 && *c >= 0 && *r != *c)
    chk_fail(k, sp, "bad argument #%d to '%s' (square matrix expected, got %lldx%lld)", argn, name, (long long)*r, (long long)*c);
  else if (square && (*r < 0 || *c < 0)) k->sure = false;
  if (*r < 0 || *c < 0 || (double)*r * (double)*c > 2147483647.0) k->sure = false;   /* LAPACK's integer range */
}

static ShapeStatus rule_solve(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  const char *name = name_of(op, x);
  int64_t ra, ca, rb, cb;
  la_arg(&k, name, 1, in[0], true, &ra, &ca, sp);
  if (!k.failed) la_arg(&k, name, 2, in[1], false, &rb, &cb, sp);
  if (k.failed) return chk_status(&k);
  if (ra >= 0 && rb >= 0 && ra != rb) {
    if (cb >= 0)
      chk_fail(&k, sp, "bad argument #2 to '%s' (a matrix with %lld rows expected, got %lldx%lld)", name, (long long)ra,
               (long long)rb, (long long)cb);
    else chk_fail_unsaid(&k);
    return chk_status(&k);
  }
  *out = shape_mat(rb >= 0 ? rb : ra, cb);
  return SHAPE_OK;
}

/* inv, det, cholesky, eigen's two outputs, qr's two, svd's three: one matrix argument. */
static ShapeStatus rule_linalg1(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  const char *name = x && x->name ? x->name
                   : op == OP_CHOL ? "cholesky" : op == OP_EIGVALS || op == OP_EIGVECS ? "eigen"
                   : op == OP_QR_Q || op == OP_QR_R ? "qr" : op == OP_SVD_U || op == OP_SVD_S || op == OP_SVD_V ? "svd"
                   : op_info[op].sym;
  bool square = !(op == OP_QR_Q || op == OP_QR_R || op == OP_SVD_U || op == OP_SVD_S || op == OP_SVD_V);
  int64_t m, n;
  la_arg(&k, name, 1, in[0], square, &m, &n, sp);
  if (k.failed) return chk_status(&k);
  int64_t kk = m >= 0 && n >= 0 ? (m < n ? m : n) : SHAPE_UNKNOWN;
  if (square && m < 0) m = n;
  if (square && n < 0) n = m;
  switch (op) {
  case OP_DET: *out = shape_num_unknown(); break;
  case OP_EIGVALS: *out = shape_mat(m, 1); break;
  case OP_QR_Q: case OP_SVD_U: *out = shape_mat(m, kk); break;
  case OP_QR_R: *out = shape_mat(kk, n); break;
  case OP_SVD_S: *out = shape_mat(kk, kk); break;
  case OP_SVD_V: *out = shape_mat(n, kk); break;
  default: *out = shape_mat(m, n); break;                  /* inv, cholesky, eigen's vectors */
  }
  return SHAPE_OK;
}

/* ==== reductions, scans, diag, ifelse (ops.c op_reduce, op_scan, op_diag, op_ifelse) ==== */
static ShapeStatus rule_reduce(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  const char *name = name_of(op, x);
  bool whole = op == OP_SUM || op == OP_PROD || op == OP_MAX || op == OP_MIN;
  if (unknown_kind(a)) { *out = whole ? shape_num_unknown() : shape_numeric(); k.sure = false; return SHAPE_OK; }
  if (a.kind == SK_NUMERIC) { *out = whole ? shape_num_unknown() : shape_numeric(); return SHAPE_OK; }
  if (!matlike(a)) { bad_argn(&k, name, 1, sp, "matrix expected", a); return chk_status(&k); }
  int64_t r, c, orows = 1, ocols = 1;
  dims(a, &r, &c);
  switch (op) {
  case OP_MAX: case OP_MIN:
    if (r == 0 || c == 0) bad_argn(&k, name, 1, sp, "non-empty matrix expected", a);
    break;
  case OP_ROWMAXS: case OP_ROWMINS: case OP_ROWINDEXMAX: case OP_ROWINDEXMIN:
    if (c == 0 && r > 0) bad_argn(&k, name, 1, sp, "matrix with non-empty rows expected", a);
    else if (c < 0 || (c == 0 && r < 0)) k.sure = false;
    orows = r;
    break;
  case OP_ROWSUMS: case OP_ROWPRODS: orows = r; break;
  case OP_COLMAXS: case OP_COLMINS:
    if (r == 0 && c > 0) bad_argn(&k, name, 1, sp, "matrix with non-empty columns expected", a);
    ocols = c;
    break;
  case OP_COLSUMS: case OP_COLPRODS: ocols = c; break;
  case OP_CUMSUMPROD:
    if (c >= 0 && c != 2) bad_argn(&k, name, 1, sp, "matrix of two columns expected", a);
    orows = r;
    break;
  default: break;
  }
  if (k.failed) return chk_status(&k);
  *out = whole || numlike(a) ? shape_num_unknown() : shape_mat(orows, ocols);
  if (whole && numlike(a) && a.known) *out = shape_num(a.value);   /* sum(x), prod(x), max(x) of a number: x */
  return SHAPE_OK;
}

static ShapeStatus rule_scan(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  if (unknown_kind(a)) { *out = shape_numeric(); return SHAPE_OK; }
  if (a.kind == SK_NUMERIC) { *out = shape_numeric(); return SHAPE_OK; }
  if (!matlike(a)) { bad_argn(&k, name_of(op, x), 1, sp, "matrix expected", a); return chk_status(&k); }
  *out = numlike(a) ? shape_num_unknown() : shape_mat(a.rows, a.cols);
  return SHAPE_OK;
}

static ShapeStatus rule_diag(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0];
  Chk k;
  chk_init(&k, err);
  const char *name = name_of(op, x);
  if (unknown_kind(a) || a.kind == SK_NUMERIC) { *out = shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN); return SHAPE_OK; }
  if (!matlike(a)) { bad_argn(&k, name, 1, sp, "vector or square matrix expected", a); return chk_status(&k); }
  int64_t r, c;
  dims(a, &r, &c);
  if (r >= 0 && c >= 0) {
    if (r == c) *out = shape_mat(r, 1);
    else if (r == 1 || c == 1) *out = shape_mat(r * c, r * c);
    else { bad_argn(&k, name, 1, sp, "vector or square matrix expected", a); return chk_status(&k); }
    return SHAPE_OK;
  }
  *out = shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN);             /* square (n x 1), or n x n of a vector */
  return SHAPE_OK;
}

static ShapeStatus rule_ifelse(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  const char *name = name_of(op, x);
  bool all_known = true, any_mat = false;
  for (int i = 0; i < 3; i++) {
    if (in[i].kind == SK_NUMERIC || unknown_kind(in[i]) || (in[i].kind == SK_MAT && (in[i].rows < 0 || in[i].cols < 0)))
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
      bad_argn(&k, name, i + 1, sp, what, v);
      return chk_status(&k);
    }
  }
  if (!any_mat) {                          /* the chosen value itself */
    if (!numlike(in[0])) { bad_argn(&k, name, 1, sp, "boolean, number or matrix expected", in[0]); return chk_status(&k); }
    if (!in[0].known) { *out = shape_join(in[1], in[2]); return SHAPE_OK; }
    if (in[0].value != in[0].value) { *out = shape_num(NAN); return SHAPE_OK; }
    *out = in[0].value != 0 ? in[1] : in[2];
    return SHAPE_OK;
  }
  for (int i = 0; i < 3; i++)
    if (in[i].kind != SK_MAT && !numlike(in[i])) {
      bad_argn(&k, name, i + 1, sp, i ? "number or matrix expected" : "boolean, number or matrix expected", in[i]);
      return chk_status(&k);
    }
  *out = shape_mat(r, c);
  return SHAPE_OK;
}

/* op_grad_aux: the inputs as matrices (a number is 1x1), the result shaped as in[1]. */
static ShapeStatus rule_grad_aux(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  int nin = op_info[op].arity;
  for (int i = 0; i < nin; i++) {
    if (unknown_kind(in[i]) || in[i].kind == SK_NUMERIC) { k.sure = false; continue; }
    if (!matlike(in[i])) { bad_argn(&k, name_of(op, x), 1, sp, "matrix expected", in[i]); return chk_status(&k); }
  }
  Shape y = in[1];
  *out = y.kind == SK_MAT ? shape_mat(y.rows, y.cols) : numlike(y) ? shape_num_unknown() : shape_numeric();
  return SHAPE_OK;
}

/* ==== nn (ops/nn.c op_nn: nn_shapes, bias_shapes) ==== */
static void nn_need(Chk *k, OpKind op, int i, Shape v, int64_t rows, int64_t cols, const char *what, Span sp) {
  char d[64];
  if (unknown_kind(v) || v.kind == SK_NUMERIC) { k->sure = false; return; }
  if (v.kind != SK_MAT) {
    if (!shape_describe(v, d, sizeof d)) { chk_fail_unsaid(k); return; }
    chk_fail(k, sp, "bad argument #%d to '%s' (a %lldx%lld matrix (%s) expected, got %s)", i + 1, op_info[op].sym,
             (long long)rows, (long long)cols, what, d);
    return;
  }
  if (v.rows < 0 || v.cols < 0) {
    if ((v.rows >= 0 && v.rows != rows) || (v.cols >= 0 && v.cols != cols)) chk_fail_unsaid(k);
    else k->sure = false;
    return;
  }
  if (v.rows == rows && v.cols == cols) return;
  chk_fail(k, sp, "bad argument #%d to '%s' (a %lldx%lld matrix (%s) expected, got %lldx%lld)", i + 1, op_info[op].sym,
           (long long)rows, (long long)cols, what, (long long)v.rows, (long long)v.cols);
}

static ShapeStatus rule_bias(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  char d[64];
  (void)x;
  for (int i = 0; i < 2; i++) {
    if (unknown_kind(in[i]) || in[i].kind == SK_NUMERIC) { k.sure = false; continue; }
    if (in[i].kind != SK_MAT) {
      if (!shape_describe(in[i], d, sizeof d)) chk_fail_unsaid(&k);
      else chk_fail(&k, sp, "bad argument #%d to '%s' (matrix expected, got %s)", i + 1, op_info[op].sym, d);
      return chk_status(&k);
    }
  }
  Shape a = in[0], b = in[1];
  if (a.kind == SK_MAT && b.kind == SK_MAT && b.rows >= 0 && b.cols >= 0) {
    int64_t K = a.cols, C = b.rows;
    if (b.cols != 1 || C == 0) {
      chk_fail(&k, sp, "bad argument #2 to '%s' (a C x 1 column vector of one bias per channel expected, got %lldx%lld)",
               op_info[op].sym, (long long)C, (long long)b.cols);
      return chk_status(&k);
    }
    if (K >= 0 && K % C != 0) {
      if (a.rows >= 0)
        chk_fail(&k, sp, "bad argument #1 to '%s' (N x C*H*W with C = %lld channels expected (the rows of bias), got %lldx%lld: "
                 "%lld columns are not a multiple of %lld)", op_info[op].sym, (long long)C, (long long)a.rows, (long long)K,
                 (long long)K, (long long)C);
      else chk_fail_unsaid(&k);
      return chk_status(&k);
    }
  }
  *out = a.kind == SK_MAT ? shape_mat(a.rows, a.cols) : shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN);
  return SHAPE_OK;
}

static ShapeStatus rule_nn(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  if (op == OP_BIAS_ADD || op == OP_BIAS_MULTIPLY) return rule_bias(op, in, x, sp, out, err);
  const double *g = x ? x->nn : NULL;
  if (!g) { *out = shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN); return SHAPE_OK; }
  int64_t N = (int64_t)g[0], C = (int64_t)g[1], H = (int64_t)g[2], W = (int64_t)g[3], F = (int64_t)g[4], R = (int64_t)g[5],
          S = (int64_t)g[6], sh = (int64_t)g[7], sw = (int64_t)g[8], ph = (int64_t)g[9], pw = (int64_t)g[10];
  int64_t P = (H + 2 * ph - R) / sh + 1, Q = (W + 2 * pw - S) / sw + 1;
  int64_t CHW = C * H * W, CRS = C * R * S, FPQ = F * P * Q;
  char img[160], flt[160], outs[160];
  bool pool = op == OP_MAX_POOL || op == OP_MAX_POOL_BWD || op == OP_MAX_POOL_GATHER || op == OP_AVG_POOL || op == OP_AVG_POOL_BWD;
  snprintf(img, sizeof img, "N x C*H*W for input_shape [%lld,%lld,%lld,%lld]", (long long)N, (long long)C, (long long)H, (long long)W);
  if (pool) {
    snprintf(outs, sizeof outs, "N x C*P*Q: P x Q = %lldx%lld pooled from %lldx%lld", (long long)P, (long long)Q, (long long)H,
             (long long)W);
    flt[0] = 0;
  } else {
    snprintf(flt, sizeof flt, "F x C*Hf*Wf for filter_shape [%lld,%lld,%lld,%lld]", (long long)F, (long long)C, (long long)R,
             (long long)S);
    snprintf(outs, sizeof outs, "N x F*P*Q: P x Q = %lldx%lld from %lldx%lld", (long long)P, (long long)Q, (long long)H,
             (long long)W);
  }
  int64_t orows, ocols;
  switch (op) {
  case OP_CONV2D:
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], F, CRS, flt, sp);
    orows = N; ocols = FPQ;
    break;
  case OP_CONV2D_BWD_DATA:
    nn_need(&k, op, 0, in[0], F, CRS, flt, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], N, FPQ, outs, sp);
    orows = N; ocols = CHW;
    break;
  case OP_CONV2D_BWD_FILT:
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], N, FPQ, outs, sp);
    orows = F; ocols = CRS;
    break;
  case OP_MAX_POOL: case OP_AVG_POOL:
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    orows = N; ocols = FPQ;
    break;
  case OP_MAX_POOL_BWD: case OP_AVG_POOL_BWD:
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], N, FPQ, outs, sp);
    orows = N; ocols = CHW;
    break;
  default:                                                   /* OP_MAX_POOL_GATHER */
    nn_need(&k, op, 0, in[0], N, CHW, img, sp);
    if (!k.failed) nn_need(&k, op, 1, in[1], N, CHW, img, sp);
    orows = N; ocols = FPQ;
    break;
  }
  if (k.failed) return chk_status(&k);
  *out = shape_mat(orows, ocols);
  return SHAPE_OK;
}

/* ==== communication: allreduce (one process: X itself; mpi/builtins_mpi.c) ==== */
static ShapeStatus rule_allreduce(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  Shape a = in[0];
  (void)op;
  (void)x;
  if (numlike(a)) { *out = a.known ? shape_num(a.value) : shape_num_unknown(); return SHAPE_OK; }   /* a boolean: 1/0 */
  if (a.kind == SK_MAT || a.kind == SK_NUMERIC) { *out = a; return SHAPE_OK; }
  if (unknown_kind(a)) { *out = shape_numeric(); return SHAPE_OK; }
  char d[64];
  if (!shape_describe(a, d, sizeof d)) chk_fail_unsaid(&k);
  else chk_fail(&k, sp, "bad argument #1 to 'allreduce' (number or matrix expected, got %s)", d);
  return chk_status(&k);
}

/* ==== the table: grep ORDER OP. Ops flagged OPF_EW take the elementwise rule of their arity;
** every other op names its rule here (a missing one fails tests/unit/test_shape_rules.c). ==== */
static const RuleFn rules[OP_COUNT] = {
  [OP_MATMUL] = rule_matmul, [OP_SUMPROD] = rule_sumprod,
  [OP_DOT] = rule_products, [OP_ROWSUMSPROD] = rule_products, [OP_COLSUMSPROD] = rule_products, [OP_DIAGPROD] = rule_products,
  [OP_CROSSPROD] = rule_products, [OP_TCROSSPROD] = rule_products, [OP_XTWXV] = rule_products, [OP_MMCHAIN] = rule_products, [OP_TRANSPOSE] = rule_transpose, [OP_RESHAPE] = rule_reshape, [OP_RANGE] = rule_range,
  [OP_INDEX] = rule_index, [OP_SCATTER] = rule_scatter, [OP_SOLVE] = rule_solve, [OP_INV] = rule_linalg1,
  [OP_DET] = rule_linalg1, [OP_EIGVALS] = rule_linalg1, [OP_EIGVECS] = rule_linalg1, [OP_CHOL] = rule_linalg1,
  [OP_QR_Q] = rule_linalg1, [OP_QR_R] = rule_linalg1, [OP_SVD_U] = rule_linalg1, [OP_SVD_S] = rule_linalg1,
  [OP_SVD_V] = rule_linalg1,
  [OP_SUM] = rule_reduce, [OP_ROWSUMS] = rule_reduce, [OP_COLSUMS] = rule_reduce, [OP_PROD] = rule_reduce,
  [OP_MAX] = rule_reduce, [OP_MIN] = rule_reduce, [OP_ROWMAXS] = rule_reduce, [OP_ROWMINS] = rule_reduce,
  [OP_COLMAXS] = rule_reduce, [OP_COLMINS] = rule_reduce, [OP_ROWINDEXMAX] = rule_reduce, [OP_ROWINDEXMIN] = rule_reduce,
  [OP_CUMSUM] = rule_scan, [OP_CUMPROD] = rule_scan, [OP_SOFTMAX] = rule_scan, [OP_LOGSOFTMAX] = rule_scan,
  [OP_DIAG] = rule_diag, [OP_IFELSE] = rule_ifelse,
  [OP_CUMMAX] = rule_scan, [OP_CUMMIN] = rule_scan, [OP_CUMSUMPROD] = rule_reduce, [OP_ROWPRODS] = rule_reduce,
  [OP_COLPRODS] = rule_reduce,
  [OP_CUMEXT_GRAD] = rule_grad_aux, [OP_CUMEXT_TAN] = rule_grad_aux, [OP_ROWPRODS_GRAD] = rule_grad_aux,
  [OP_CUMSUMPROD_GRAD] = rule_grad_aux, [OP_COLPRODS_GRAD] = rule_grad_aux,
  [OP_CONV2D] = rule_nn, [OP_CONV2D_BWD_DATA] = rule_nn, [OP_CONV2D_BWD_FILT] = rule_nn, [OP_MAX_POOL] = rule_nn,
  [OP_MAX_POOL_BWD] = rule_nn, [OP_MAX_POOL_GATHER] = rule_nn, [OP_AVG_POOL] = rule_nn, [OP_AVG_POOL_BWD] = rule_nn,
  [OP_BIAS_ADD] = rule_nn, [OP_BIAS_MULTIPLY] = rule_nn,
  [OP_ALLREDUCE] = rule_allreduce,
};

static RuleFn rule_for(OpKind op) {
  if (op <= OP_NONE || op >= OP_COUNT) return NULL;
  if (rules[op]) return rules[op];
  if (op_info[op].flags & OPF_EW) return op_info[op].arity == 2 ? rule_ew2 : rule_ew1;
  return NULL;
}

bool shape_has_rule(OpKind op) { return rule_for(op) != NULL; }

ShapeStatus shape_rule(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  RuleFn f = rule_for(op);
  *out = shape_any();
  if (!f) return SHAPE_OK;
  err->msg[0] = '\0';
  err->span = sp;
  return f(op, in, x, sp, out, err);
}
