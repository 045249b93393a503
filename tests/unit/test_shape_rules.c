/*
** test_shape_rules.c — every op's shape rule (ops/shapes.c, rules in the family files of src/ops/) against the eager code on
** generated operands (mismatches, empty, 1x1, numbers, booleans, strings, lists...): the rule's
** shape or error must be what the op gives; indexing and assignment through the evaluator.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builtins.h"
#include "capture.h"
#include "ops/shapes.h"
#include "interp/interp.h"
#include "ops/index.h"
#include "ops/linalg.h"
#include "tensor.h"

static const Span SP = { 3, 7 };

/* ---- operands: a shape and a value of that shape ---- */
static Shape sh_num(double v) { return shape_num(v); }
static Shape sh_mat(int64_t r, int64_t c) {
  Shape s = shape_mat(r, c);
  if (r == 1 && c == 1) { s.known = true; s.value = 1; }   /* filled below with the identity */
  return s;
}

static Shape operands[32];
static int noperands;

static void init_operands(void) {
  int n = 0;
  operands[n++] = sh_num(2.5);
  operands[n++] = sh_num(0);
  operands[n++] = shape_bool(true, true);
  operands[n++] = shape_bool(true, false);
  static const int64_t d[][2] = { { 0, 0 }, { 0, 3 }, { 3, 0 }, { 1, 1 }, { 1, 3 }, { 3, 1 }, { 3, 3 }, { 2, 3 }, { 3, 2 },
                                  { 1, 2 }, { 2, 1 }, { 2, 2 }, { 1, 0 }, { 0, 1 } };
  for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) operands[n++] = sh_mat(d[i][0], d[i][1]);
  operands[n++] = shape_of_kind(SK_STR);
  Shape l = shape_of_kind(SK_LIST);
  l.len = 2;
  operands[n++] = l;
  operands[n++] = shape_of_kind(SK_NULL);
  operands[n++] = shape_of_kind(SK_FUNC);
  noperands = n;
}

/* A value of shape s (owned): a matrix holds the identity's pattern (nonsingular, symmetric,
** positive definite when square), so the LAPACK builtins fail only on shapes. */
static Value make_val(Interp *I, Shape s) {
  switch (s.kind) {
  case SK_NUM: return val_num(s.value);
  case SK_BOOL: return val_bool(s.value != 0);
  case SK_MAT: {
    Tensor *t = tensor_zeros(I, s.rows, s.cols);
    for (int64_t i = 0; i < s.rows && i < s.cols; i++) tensor_data(t)[i * s.cols + i] = 1;
    if (s.rows == 1 && s.cols == 1 && s.known) tensor_data(t)[0] = s.value;
    return val_mat(t);
  }
  case SK_STR: return val_cstr("a");
  case SK_LIST: {
    List *l = list_new(I, s.len);
    for (int i = 0; i < s.len; i++) list_push(l, val_num(i), NULL);
    return val_list(l);
  }
  case SK_FUNC: { Value v; v.t = VT_BUILTIN; v.u.bi = bi_find("sum"); return v; }
  default: return val_null();
  }
}

static void describe_shape(Shape s, char *buf, size_t n) {
  if (s.kind == SK_MAT) snprintf(buf, n, "%lldx%lld", (long long)s.rows, (long long)s.cols);
  else if (s.kind == SK_NUM || s.kind == SK_BOOL) snprintf(buf, n, "%s %g%s", s.kind == SK_NUM ? "num" : "bool", s.value, s.known ? "" : "?");
  else if (!shape_describe(s, buf, n)) snprintf(buf, n, "kind %d", s.kind);
}

/* ---- running the eager code under a protected call ---- */
typedef enum { E_BINARY, E_UNARY, E_MATMUL, E_TRANSPOSE, E_RESHAPE, E_RANGE, E_REDUCE, E_SCAN, E_DIAG, E_IFELSE, E_AUX,
               E_NN, E_BUILTIN, E_LINALG, E_SCATTER } EagerKind;
typedef struct Eager {
  EagerKind kind;
  OpKind op;
  int n;
  Value in[3];
  Value prm;
  int64_t rows, cols;
  int nix;
  Value ix[2];
  const char *bname;
  Value result;
} Eager;

static void eager_body(Interp *I, void *ud) {
  Eager *e = ud;
  switch (e->kind) {
  case E_BINARY: e->result = op_binary(I, e->op, e->in[0], e->in[1], SP); break;
  case E_UNARY: e->result = op_unary(I, e->op, e->in[0], SP); break;
  case E_MATMUL: e->result = op_matmul(I, e->in[0], e->in[1], SP); break;
  case E_TRANSPOSE: e->result = op_transpose(I, e->in[0], SP); break;
  case E_RESHAPE: e->result = op_reshape(I, e->in[0], e->rows, e->cols, SP); break;
  case E_RANGE: e->result = op_range(I, e->in[0], e->in[1], SP); break;
  case E_REDUCE: e->result = op_reduce(I, e->op, e->in[0], SP); break;
  case E_SCAN: e->result = op_scan(I, e->op, e->in[0], SP); break;
  case E_DIAG: e->result = op_diag(I, e->in[0], SP); break;
  case E_IFELSE: e->result = op_ifelse(I, e->in[0], e->in[1], e->in[2], SP); break;
  case E_AUX: e->result = op_grad_aux(I, e->op, e->n, e->in, SP); break;
  case E_NN: e->result = op_nn(I, e->op, e->in, e->prm, SP); break;
  case E_LINALG: e->result = linalg_apply(I, e->op, e->in, SP); break;
  case E_SCATTER: e->result = index_scatter(I, e->in[0], e->rows, e->cols, e->nix, e->ix, SP); break;
  case E_BUILTIN: {
    Symbol *names[3] = { NULL, NULL, NULL };
    e->result = bi_call(I, bi_find(e->bname), e->n, e->in, names, SP);
    break;
  }
  }
}

static int ncases, nerrors;

/* Whether the rule's shape s fits the eager value v (unknown parts fit anything). */
static bool fits(Shape s, Value v) {
  switch (s.kind) {
  case SK_NONE: case SK_ANY: return true;
  case SK_NUMERIC: return v.t == VT_NUM || v.t == VT_BOOL || v.t == VT_MAT;
  case SK_NUM: return v.t == VT_NUM && (!s.known || s.value == v.u.n || (isnan(s.value) && isnan(v.u.n)));
  case SK_BOOL: return v.t == VT_BOOL && (!s.known || (s.value != 0) == v.u.b);
  case SK_MAT:
    return v.t == VT_MAT && (s.rows < 0 || s.rows == tensor_rows(v.u.m)) && (s.cols < 0 || s.cols == tensor_cols(v.u.m));
  case SK_STR: return v.t == VT_STR;
  case SK_LIST: return v.t == VT_LIST;
  case SK_FUNC: return v.t == VT_FUNC || v.t == VT_BUILTIN;
  case SK_NULL: return v.t == VT_NULL;
  default: return false;
  }
}

/* The rule's answer against the eager run's (status st; I->err when it failed). known: every
** input was known, so the rule must tell the result's shape, or the error, exactly. */
static void compare(Interp *I, const char *what, int st, Value got, ShapeStatus rs, Shape out, const ShapeError *err, bool known,
                    bool check_span) {
  ncases++;
  char want[2400];
  bool bad = false;
  if (rs == SHAPE_ERROR) {
    if (!st) { snprintf(want, sizeof want, "the rule says '%s' but the op succeeds", err->msg); bad = true; }
    else if (strcmp(err->msg, I->err.msg) != 0) {
      snprintf(want, sizeof want, "the rule says '%s' but the op says '%s'", err->msg, I->err.msg);
      bad = true;
    } else if (check_span && (err->span.start != I->err.span.start || err->span.end != I->err.span.end)) {
      snprintf(want, sizeof want, "the error's span differs");
      bad = true;
    }
  } else if (rs == SHAPE_FAILS) {
    if (!st) { snprintf(want, sizeof want, "the rule says it fails but the op succeeds"); bad = true; }
    else if (known) { snprintf(want, sizeof want, "inputs known, but the rule did not give the message '%s'", I->err.msg); bad = true; }
  } else if (st) {
    if (known) { snprintf(want, sizeof want, "the rule gives a shape but the op fails: '%s'", I->err.msg); bad = true; }
  } else if (!fits(out, got)) {
    char d[64];
    describe_shape(out, d, sizeof d);
    snprintf(want, sizeof want, "the rule gives %s, the op a %s", d, val_type_name(got));
    bad = true;
  } else if (known && (out.kind == SK_ANY || out.kind == SK_NUMERIC || (out.kind == SK_MAT && (out.rows < 0 || out.cols < 0)))) {
    snprintf(want, sizeof want, "inputs known, the result's shape not");
    bad = true;
  }
  if (bad) {
    nerrors++;
    if (nerrors < 40) print_error("%s: %s\n", what, want);
  }
}

static void run_case(Interp *I, Eager *e, const char *what, ShapeStatus rs, Shape out, const ShapeError *err, bool known, bool span) {
  e->result = val_null();
  int st = mls_pcall(I, eager_body, e);
  compare(I, what, st, e->result, rs, out, err, known, span);
  if (!st) val_release(e->result);
}

static bool all_known(const Shape *s, int n) {
  for (int i = 0; i < n; i++)
    if (!shape_known(s[i]) && !(s[i].kind == SK_MAT && s[i].rows >= 0 && s[i].cols >= 0)) return false;
  return true;
}

/* One op on shapes in[0..n) through eager kind k. */
static void one(Interp *I, EagerKind k, OpKind op, int n, const Shape *in, const ShapeExtra *x, const char *bname) {
  Eager e;
  memset(&e, 0, sizeof e);
  e.kind = k;
  e.op = op;
  e.n = n;
  e.bname = bname;
  for (int i = 0; i < n; i++) e.in[i] = make_val(I, in[i]);
  if (x) { e.rows = x->rows; e.cols = x->cols; }
  Shape out;
  ShapeError err;
  ShapeStatus rs = shape_rule(op, in, x, SP, &out, &err);
  char what[300], d[64];
  int w = snprintf(what, sizeof what, "%s(", bname ? bname : op_info[op].name);
  for (int i = 0; i < n; i++) {
    describe_shape(in[i], d, sizeof d);
    w += snprintf(what + w, sizeof what - (size_t)w, "%s%s", i ? ", " : "", d);
  }
  snprintf(what + w, sizeof what - (size_t)w, ")");
  run_case(I, &e, what, rs, out, &err, all_known(in, n), true);
  for (int i = 0; i < n; i++) val_release(e.in[i]);
}

static int setup(void **state) {
  init_operands();
  ncases = nerrors = 0;
  return fix_setup(state);
}

static void report(const char *name) {
  if (nerrors) print_error("%s: %d of %d cases differ\n", name, nerrors, ncases);
  assert_int_equal(nerrors, 0);
  assert_true(ncases > 0);
  if (getenv("SHAPE_RULES_VERBOSE")) print_message("%s: %d cases\n", name, ncases);
  ncases = nerrors = 0;
}

/* Every op of ops.def has a rule (the table's entries, or the elementwise default). */
static void test_every_op_has_a_rule(void **state) {
  (void)state;
  for (int op = OP_NONE + 1; op < OP_COUNT; op++) {
    if (!shape_has_rule((OpKind)op)) print_error("op %s has no shape rule\n", op_info[op].name);
    assert_true(shape_has_rule((OpKind)op));
  }
}

static void test_elementwise(void **state) {
  Interp *I = ((Fix *)*state)->I;
  for (int op = 1; op < OP_COUNT; op++) {
    if (!(op_info[op].flags & OPF_EW)) continue;
    if (op_info[op].arity == 2) {
      for (int i = 0; i < noperands; i++)
        for (int j = 0; j < noperands; j++) one(I, E_BINARY, (OpKind)op, 2, (Shape[]){ operands[i], operands[j] }, NULL, NULL);
    } else {
      for (int i = 0; i < noperands; i++) one(I, E_UNARY, (OpKind)op, 1, &operands[i], NULL, NULL);
    }
  }
  report("elementwise");
}

static void test_layout(void **state) {
  Interp *I = ((Fix *)*state)->I;
  for (int i = 0; i < noperands; i++) {
    for (int j = 0; j < noperands; j++) one(I, E_MATMUL, OP_MATMUL, 2, (Shape[]){ operands[i], operands[j] }, NULL, NULL);
    one(I, E_TRANSPOSE, OP_TRANSPOSE, 1, &operands[i], NULL, NULL);
    static const int64_t rc[][2] = { { 2, 3 }, { 3, 2 }, { 6, 1 }, { 1, 1 }, { 0, 0 }, { 0, 5 }, { 9, 1 }, { 3, 3 } };
    for (size_t k = 0; k < sizeof rc / sizeof rc[0]; k++) {
      ShapeExtra x = { .rows = rc[k][0], .cols = rc[k][1] };
      one(I, E_RESHAPE, OP_RESHAPE, 1, &operands[i], &x, NULL);
    }
  }
  /* a:b: numbers, booleans, 1x1 matrices, non-finite, too long, not numbers */
  Shape ends[16];
  int n = 0;
  static const double v[] = { 1, 3, 0, -2, 2.5, NAN, INFINITY, 2e15 };
  for (size_t k = 0; k < sizeof v / sizeof v[0]; k++) ends[n++] = sh_num(v[k]);
  ends[n++] = shape_bool(true, true);
  ends[n++] = sh_mat(1, 1);
  ends[n++] = sh_mat(1, 2);
  ends[n++] = sh_mat(0, 0);
  ends[n++] = shape_of_kind(SK_STR);
  ends[n++] = shape_of_kind(SK_NULL);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      if (ends[i].kind == SK_NUM && ends[j].kind == SK_NUM && isfinite(ends[i].value) && isfinite(ends[j].value) &&
          fabs(ends[i].value - ends[j].value) >= 1e15)
        continue;                               /* (2e15:-2 is too long; 2e15:3 too) */
      one(I, E_RANGE, OP_RANGE, 2, (Shape[]){ ends[i], ends[j] }, NULL, NULL);
    }
  report("layout");
}

static void test_reductions(void **state) {
  Interp *I = ((Fix *)*state)->I;
  for (int op = 1; op < OP_COUNT; op++) {
    int f = op_info[op].flags;
    if (!(f & OPF_RED) || op == OP_IFELSE || op == OP_CUMEXT_GRAD || op == OP_CUMEXT_TAN || op == OP_ROWPRODS_GRAD ||
        op == OP_COLPRODS_GRAD || op == OP_LINREC || op == OP_RLINREC)
      continue;
    EagerKind k = op == OP_DIAG ? E_DIAG : (f & OPF_KEEP) ? E_SCAN : E_REDUCE;
    for (int i = 0; i < noperands; i++) one(I, k, (OpKind)op, 1, &operands[i], NULL, NULL);
    Shape two = sh_mat(4, 2), three = sh_mat(4, 3);
    one(I, k, (OpKind)op, 1, &two, NULL, NULL);
    one(I, k, (OpKind)op, 1, &three, NULL, NULL);
  }
  /* ifelse: every triple of a smaller set */
  Shape set[] = { sh_num(1), sh_num(0), sh_num(NAN), shape_bool(true, true), sh_mat(1, 1), sh_mat(2, 3), sh_mat(3, 2), sh_mat(0, 0),
                  shape_of_kind(SK_STR), shape_of_kind(SK_NULL) };
  int n = (int)(sizeof set / sizeof set[0]);
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      for (int k = 0; k < n; k++) one(I, E_IFELSE, OP_IFELSE, 3, (Shape[]){ set[i], set[j], set[k] }, NULL, NULL);
  report("reductions");
}

/* The derivative kernels, on operands of the shapes they are recorded with, and a string in
** each place. */
static void test_grad_aux(void **state) {
  Interp *I = ((Fix *)*state)->I;
  Shape s = shape_of_kind(SK_STR);
  static const int64_t d[][2] = { { 3, 4 }, { 1, 5 }, { 4, 1 }, { 1, 1 } };
  for (size_t q = 0; q < sizeof d / sizeof d[0]; q++) {
    int64_t r = d[q][0], c = d[q][1];
    Shape m = sh_mat(r, c);
    Shape cases[][3] = {
      { m, m, m }, { s, m, m }, { m, s, m }, { m, m, s },
    };
    for (size_t k = 0; k < 4; k++) {
      one(I, E_AUX, OP_CUMEXT_GRAD, 3, cases[k], NULL, NULL);
      one(I, E_AUX, OP_CUMEXT_TAN, 3, cases[k], NULL, NULL);
    }
    Shape rp[][2] = { { sh_mat(r, 1), m }, { s, m }, { sh_mat(r, 1), s } };
    Shape cp[][2] = { { sh_mat(1, c), m }, { s, m }, { sh_mat(1, c), s } };
    for (size_t k = 0; k < 3; k++) {
      one(I, E_AUX, OP_ROWPRODS_GRAD, 2, rp[k], NULL, NULL);
      one(I, E_AUX, OP_COLPRODS_GRAD, 2, cp[k], NULL, NULL);
    }
    Shape lr[][2] = { { m, m }, { s, m }, { m, s } };
    for (size_t k = 0; k < 3; k++) {
      one(I, E_AUX, OP_LINREC, 2, lr[k], NULL, NULL);
      one(I, E_AUX, OP_RLINREC, 2, lr[k], NULL, NULL);
    }
  }
  Shape nums[3] = { sh_num(2), sh_num(3), sh_num(1) };
  one(I, E_AUX, OP_CUMEXT_GRAD, 3, nums, NULL, NULL);
  report("derivative kernels");
}

static void test_linalg(void **state) {
  Interp *I = ((Fix *)*state)->I;
  for (int i = 0; i < noperands; i++) {
    if ((operands[i].kind == SK_NUM || operands[i].kind == SK_BOOL) && operands[i].value == 0) continue;   /* singular */
    for (int j = 0; j < noperands; j++) one(I, E_BUILTIN, OP_SOLVE, 2, (Shape[]){ operands[i], operands[j] }, NULL, "solve");
    ShapeExtra inv = { .name = "inv" }, inverse = { .name = "inverse" }, det = { .name = "det" };
    one(I, E_BUILTIN, OP_INV, 1, &operands[i], &inv, "inv");
    one(I, E_BUILTIN, OP_INV, 1, &operands[i], &inverse, "inverse");
    one(I, E_BUILTIN, OP_DET, 1, &operands[i], &det, "det");
    static const OpKind parts[] = { OP_EIGVALS, OP_EIGVECS, OP_CHOL, OP_QR_Q, OP_QR_R, OP_SVD_U, OP_SVD_S, OP_SVD_V };
    for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) one(I, E_LINALG, parts[k], 1, &operands[i], NULL, NULL);
    one(I, E_BUILTIN, OP_ALLREDUCE, 1, &operands[i], NULL, "allreduce");
  }
  Shape tall = sh_mat(4, 2), wide = sh_mat(2, 5);
  static const OpKind parts[] = { OP_QR_Q, OP_QR_R, OP_SVD_U, OP_SVD_S, OP_SVD_V };
  for (size_t k = 0; k < sizeof parts / sizeof parts[0]; k++) {
    one(I, E_LINALG, parts[k], 1, &tall, NULL, NULL);
    one(I, E_LINALG, parts[k], 1, &wide, NULL, NULL);
  }
  report("linear algebra");
}

/* conv2d and pooling on a geometry, with operands of the right and of wrong shapes. */
static void test_nn(void **state) {
  Interp *I = ((Fix *)*state)->I;
  static const double conv[11] = { 2, 2, 4, 4, 3, 3, 3, 1, 1, 0, 0 };   /* P = Q = 2 */
  static const double pool[11] = { 2, 2, 4, 4, 2, 2, 2, 2, 2, 0, 0 };   /* P = Q = 2 */
  Shape set[] = { sh_mat(2, 32), sh_mat(3, 18), sh_mat(2, 12), sh_mat(2, 8), sh_mat(2, 33), sh_mat(3, 32), sh_num(1),
                  shape_of_kind(SK_STR) };
  int n = (int)(sizeof set / sizeof set[0]);
  for (int op = 1; op < OP_COUNT; op++) {
    if (!(op_info[op].flags & OPF_NN) || op == OP_BIAS_ADD || op == OP_BIAS_MULTIPLY) continue;
    bool is_pool = op == OP_MAX_POOL || op == OP_MAX_POOL_BWD || op == OP_MAX_POOL_GATHER || op == OP_AVG_POOL || op == OP_AVG_POOL_BWD;
    const double *g = is_pool ? pool : conv;
    Tensor *p = tensor_new(I, 1, 11);
    memcpy(tensor_data(p), g, sizeof conv);
    ShapeExtra x = { .nn = g };
    int ar = op_info[op].arity;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < (ar == 2 ? n : 1); j++) {
        Shape in[2] = { set[i], set[j] };
        Eager e;
        memset(&e, 0, sizeof e);
        e.kind = E_NN;
        e.op = (OpKind)op;
        e.prm = val_mat(p);
        for (int k = 0; k < ar; k++) e.in[k] = make_val(I, in[k]);
        Shape out;
        ShapeError err;
        ShapeStatus rs = shape_rule((OpKind)op, in, &x, SP, &out, &err);
        char what[200], d0[64], d1[64];
        describe_shape(in[0], d0, sizeof d0);
        describe_shape(in[1], d1, sizeof d1);
        snprintf(what, sizeof what, "%s(%s, %s)", op_info[op].name, d0, ar == 2 ? d1 : "-");
        run_case(I, &e, what, rs, out, &err, true, true);
        for (int k = 0; k < ar; k++) val_release(e.in[k]);
      }
    tensor_free_ref(p);
  }
  Shape inp[] = { sh_mat(2, 8), sh_mat(2, 9), sh_mat(3, 6), sh_num(1), shape_of_kind(SK_STR) };
  Shape bias[] = { sh_mat(2, 1), sh_mat(4, 1), sh_mat(3, 1), sh_mat(1, 2), sh_mat(0, 1), sh_mat(2, 2), sh_num(1), shape_of_kind(SK_STR) };
  for (size_t i = 0; i < sizeof inp / sizeof inp[0]; i++)
    for (size_t j = 0; j < sizeof bias / sizeof bias[0]; j++) {
      Shape in[2] = { inp[i], bias[j] };
      for (int op = OP_BIAS_ADD; op <= OP_BIAS_MULTIPLY; op++) {
        Eager e;
        memset(&e, 0, sizeof e);
        e.kind = E_NN;
        e.op = (OpKind)op;
        e.prm = val_null();
        e.in[0] = make_val(I, in[0]);
        e.in[1] = make_val(I, in[1]);
        Shape out;
        ShapeError err;
        ShapeStatus rs = shape_rule((OpKind)op, in, NULL, SP, &out, &err);
        char what[200], d0[64], d1[64];
        describe_shape(in[0], d0, sizeof d0);
        describe_shape(in[1], d1, sizeof d1);
        snprintf(what, sizeof what, "%s(%s, %s)", op_info[op].name, d0, d1);
        run_case(I, &e, what, rs, out, &err, true, true);
        val_release(e.in[0]);
        val_release(e.in[1]);
      }
    }
  report("nn");
}

/* index_scatter on selections of numbers, ranges and whole dimensions. */
static void test_scatter(void **state) {
  Interp *I = ((Fix *)*state)->I;
  static const int64_t size[][2] = { { 3, 4 }, { 1, 4 }, { 4, 1 } };
  typedef struct { int kind; double a, b; } Ix;     /* 0 all, 1 number a, 2 range a:b */
  static const Ix ixs[] = { { 0, 0, 0 }, { 1, 1, 0 }, { 1, 4, 0 }, { 1, 5, 0 }, { 1, 0, 0 }, { 2, 1, 2 }, { 2, 3, 5 }, { 2, 2, 1 } };
  int nx = (int)(sizeof ixs / sizeof ixs[0]);
  Shape vs[] = { sh_num(2), sh_mat(1, 1), sh_mat(2, 2) };
  for (size_t q = 0; q < sizeof size / sizeof size[0]; q++)
    for (int nix = 1; nix <= 2; nix++)
      for (int i = 0; i < nx; i++)
        for (int j = 0; j < (nix == 2 ? nx : 1); j++)
          for (size_t v = 0; v < sizeof vs / sizeof vs[0]; v++) {
            const Ix *use[2] = { &ixs[i], &ixs[j] };
            if (nix == 1 && use[0]->kind == 0) continue;
            Eager e;
            memset(&e, 0, sizeof e);
            e.kind = E_SCATTER;
            e.rows = size[q][0];
            e.cols = size[q][1];
            e.nix = nix;
            e.in[0] = make_val(I, vs[v]);
            ShapeIndex si[2];
            for (int k = 0; k < nix; k++) {
              memset(&si[k], 0, sizeof si[k]);
              if (use[k]->kind == 0) { si[k].kind = SIX_ALL; e.ix[k] = val_null(); }
              else if (use[k]->kind == 1) { si[k].kind = SIX_VALUE; si[k].v = sh_num(use[k]->a); e.ix[k] = val_num(use[k]->a); }
              else {
                si[k].kind = SIX_RANGE;
                si[k].from = sh_num(use[k]->a);
                si[k].to = sh_num(use[k]->b);
                si[k].span = SP;
                e.ix[k] = op_range(I, val_num(use[k]->a), val_num(use[k]->b), SP);
              }
            }
            ShapeExtra x = { .rows = e.rows, .cols = e.cols, .nix = nix, .ix = si };
            Shape out;
            ShapeError err;
            ShapeStatus rs = shape_rule(OP_SCATTER, &vs[v], &x, SP, &out, &err);
            char what[200];
            snprintf(what, sizeof what, "scatter %lldx%lld nix %d ix %d/%g:%g %d/%g:%g", (long long)e.rows, (long long)e.cols, nix,
                     use[0]->kind, use[0]->a, use[0]->b, use[1]->kind, use[1]->a, use[1]->b);
            run_case(I, &e, what, rs, out, &err, true, true);
            val_release(e.in[0]);
            for (int k = 0; k < nix; k++) val_release(e.ix[k]);
          }
  report("scatter");
}

/* ---- X[i, j] and X[i, j] = v through the evaluator (eval_index's range check first) ---- */
typedef struct IxText { const char *text; ShapeIndex ix; } IxText;

static IxText ix_num(const char *t, double v) { IxText r; memset(&r, 0, sizeof r); r.text = t; r.ix.kind = SIX_VALUE; r.ix.v = sh_num(v); return r; }
static IxText ix_range(const char *t, double a, double b) {
  IxText r;
  memset(&r, 0, sizeof r);
  r.text = t;
  r.ix.kind = SIX_RANGE;
  r.ix.from = sh_num(a);
  r.ix.to = sh_num(b);
  return r;
}
static IxText ix_val(const char *t, Shape v) { IxText r; memset(&r, 0, sizeof r); r.text = t; r.ix.kind = SIX_VALUE; r.ix.v = v; return r; }

typedef struct XText { const char *text; Shape s; } XText;

/* The message of "t.mls:L:C: error: MSG" in err, or NULL. */
static const char *err_msg(const char *err, char *buf, size_t n) {
  const char *p = err ? strstr(err, ": error: ") : NULL;
  if (!p) return NULL;
  p += strlen(": error: ");
  size_t k = strcspn(p, "\n");
  snprintf(buf, n, "%.*s", (int)k, p);
  return buf;
}

/* The code's result "M r c" or "N" on stdout against the rule. */
static void compare_text(const char *what, int st, const char *out, const char *err, ShapeStatus rs, Shape sh,
                         const ShapeError *e, bool known) {
  ncases++;
  char m[400], want[1200];
  const char *msg = err_msg(err, m, sizeof m);
  bool bad = false;
  if (rs == SHAPE_ERROR) {
    if (!st || !msg || strcmp(msg, e->msg) != 0) {
      snprintf(want, sizeof want, "the rule says '%s', the code %s", e->msg, msg ? msg : "succeeds");
      bad = true;
    }
  } else if (rs == SHAPE_FAILS) {
    if (!st) { snprintf(want, sizeof want, "the rule says it fails, the code succeeds"); bad = true; }
    else if (known) { snprintf(want, sizeof want, "inputs known, the rule did not give '%s'", msg ? msg : "?"); bad = true; }
  } else if (st) {
    if (known) { snprintf(want, sizeof want, "the rule gives a shape, the code fails: %s", msg ? msg : err); bad = true; }
  } else {
    long long r = -1, c = -1;
    bool mat = out[0] == 'M';
    if (mat) sscanf(out + 1, "%lld %lld", &r, &c);
    bool ok = sh.kind == SK_ANY || sh.kind == SK_NUMERIC || (sh.kind == SK_NUM && !mat) ||
              (sh.kind == SK_MAT && mat && (sh.rows < 0 || sh.rows == r) && (sh.cols < 0 || sh.cols == c));
    if (!ok) { snprintf(want, sizeof want, "the rule gives kind %d %lldx%lld, the code '%s'", sh.kind, (long long)sh.rows, (long long)sh.cols, out); bad = true; }
    else if (known && (sh.kind == SK_ANY || sh.kind == SK_NUMERIC || (sh.kind == SK_MAT && (sh.rows < 0 || sh.cols < 0)))) {
      snprintf(want, sizeof want, "inputs known, the result's shape not (code '%s')", out);
      bad = true;
    }
  }
  if (bad) {
    nerrors++;
    if (nerrors < 40) print_error("%s: %s\n", what, want);
  }
}

static int run_named(Fix *f, const char *name, const char *code) {
  free(f->out);
  free(f->err);
  f->out = f->err = NULL;
  f->I->out = open_memstream(&f->out, &f->nout);
  f->I->errf = open_memstream(&f->err, &f->nerr);
  Source *src = source_new(name, code, strlen(code));
  int st = interp_run_source(f->I, src, false);
  source_release(src);
  fclose(f->I->out);
  fclose(f->I->errf);
  f->I->out = stdout;
  f->I->errf = stderr;
  return st;
}

static bool ix_known(const ShapeIndex *ix) {
  if (ix->kind == SIX_ALL) return true;
  if (ix->kind == SIX_RANGE) return true;
  return shape_known(ix->v) && ix->v.kind != SK_MAT;
}

static void test_index(void **state) {
  Fix *f = *state;
  XText xs[] = { { "matrix(seq(1, 12), rows=3, cols=4)", sh_mat(3, 4) }, { "matrix(seq(1, 4), rows=1, cols=4)", sh_mat(1, 4) },
                 { "matrix(seq(1, 4), rows=4, cols=1)", sh_mat(4, 1) }, { "matrix(7, rows=1, cols=1)", sh_mat(1, 1) },
                 { "matrix(0, rows=0, cols=3)", sh_mat(0, 3) }, { "5", sh_num(5) }, { "\"s\"", shape_of_kind(SK_STR) } };
  IxText ixs[] = { ix_num("2", 2), ix_num("4", 4), ix_num("5", 5), ix_num("0", 0), ix_num("-1", -1), ix_num("2.5", 2.5),
                   ix_num("NaN", NAN), ix_val("TRUE", shape_bool(true, true)), ix_val("FALSE", shape_bool(true, false)),
                   ix_range("1:2", 1, 2), ix_range("2:4", 2, 4), ix_range("3:5", 3, 5), ix_range("0:1", 0, 1),
                   ix_range("1:0", 1, 0), ix_range("3:1", 3, 1), ix_range("1:1", 1, 1), ix_range("0:0", 0, 0),
                   ix_range("1.5:3", 1.5, 3), ix_range("5:6", 5, 6), ix_val("[1;2]", sh_mat(2, 1)), ix_val("[1,2;3,4]", sh_mat(2, 2)),
                   ix_val("\"a\"", shape_of_kind(SK_STR)) };
  int nx = (int)(sizeof xs / sizeof xs[0]), ni = (int)(sizeof ixs / sizeof ixs[0]);
  IxText empty;
  memset(&empty, 0, sizeof empty);
  empty.text = "";
  empty.ix.kind = SIX_ALL;
  char code[512], what[300];
  for (int dml = 0; dml <= 1; dml++)
    for (int x = 0; x < nx; x++)
      for (int nix = 1; nix <= 2; nix++)
        for (int i = -1; i < ni; i++)
          for (int j = -1; j < (nix == 2 ? ni : 0); j++) {
            if (nix == 1 && i < 0) continue;
            if (dml && nix == 2) continue;
            const IxText *a = i < 0 ? &empty : &ixs[i], *b = j < 0 ? &empty : &ixs[j];
            if (nix == 1) snprintf(code, sizeof code, "X = %s\nr = X[%s]\nif (is.matrix(r)) cat(\"M\", nrow(r), ncol(r)) else cat(\"N\")\n", xs[x].text, a->text);
            else snprintf(code, sizeof code, "X = %s\nr = X[%s, %s]\nif (is.matrix(r)) cat(\"M\", nrow(r), ncol(r)) else cat(\"N\")\n", xs[x].text, a->text, b->text);
            ShapeIndex si[2] = { a->ix, b->ix };
            ShapeExtra ex = { .nix = nix, .ix = si, .dml_row = dml != 0 };
            Shape out;
            ShapeError err;
            ShapeStatus rs = shape_rule(OP_INDEX, &xs[x].s, &ex, SP, &out, &err);
            int st = run_named(f, dml ? "t.dml" : "t.mls", code);
            snprintf(what, sizeof what, "%s: X = %s; X[%s%s%s]", dml ? "dml" : "mls", xs[x].text, a->text, nix == 2 ? ", " : "", nix == 2 ? b->text : "");
            compare_text(what, st, f->out ? f->out : "", f->err, rs, out, &err, ix_known(&a->ix) && ix_known(&b->ix));
          }
  report("index");
}

static void test_index_assign(void **state) {
  Fix *f = *state;
  XText xs[] = { { "matrix(seq(1, 12), rows=3, cols=4)", sh_mat(3, 4) }, { "matrix(seq(1, 4), rows=1, cols=4)", sh_mat(1, 4) },
                 { "matrix(seq(1, 4), rows=4, cols=1)", sh_mat(4, 1) }, { "5", sh_num(5) }, { "\"s\"", shape_of_kind(SK_STR) } };
  IxText ixs[] = { ix_num("2", 2), ix_num("5", 5), ix_num("0", 0), ix_range("1:2", 1, 2), ix_range("3:5", 3, 5),
                   ix_range("0:1", 0, 1), ix_range("2:1", 2, 1), ix_val("FALSE", shape_bool(true, false)), ix_val("[1;2]", sh_mat(2, 1)) };
  XText rhs[] = { { "7", sh_num(7) }, { "[1, 2]", sh_mat(1, 2) }, { "[1; 2]", sh_mat(2, 1) }, { "matrix(0, rows=2, cols=2)", sh_mat(2, 2) },
                  { "\"s\"", shape_of_kind(SK_STR) }, { "matrix(0, rows=0, cols=0)", sh_mat(0, 0) } };
  int nx = (int)(sizeof xs / sizeof xs[0]), ni = (int)(sizeof ixs / sizeof ixs[0]), nr = (int)(sizeof rhs / sizeof rhs[0]);
  IxText empty;
  memset(&empty, 0, sizeof empty);
  empty.text = "";
  empty.ix.kind = SIX_ALL;
  char code[512], what[300];
  for (int dml = 0; dml <= 1; dml++)
    for (int x = 0; x < nx; x++)
      for (int nix = 1; nix <= 2; nix++)
        for (int i = -1; i < ni; i++)
          for (int j = -1; j < (nix == 2 ? ni : 0); j++)
            for (int r = 0; r < nr; r++) {
              if (nix == 1 && i < 0) continue;
              if (dml && nix == 2) continue;
              const IxText *a = i < 0 ? &empty : &ixs[i], *b = j < 0 ? &empty : &ixs[j];
              if (nix == 1) snprintf(code, sizeof code, "X = %s\nX[%s] = %s\nif (is.matrix(X)) cat(\"M\", nrow(X), ncol(X)) else cat(\"N\")\n", xs[x].text, a->text, rhs[r].text);
              else snprintf(code, sizeof code, "X = %s\nX[%s, %s] = %s\nif (is.matrix(X)) cat(\"M\", nrow(X), ncol(X)) else cat(\"N\")\n", xs[x].text, a->text, b->text, rhs[r].text);
              ShapeIndex si[2] = { a->ix, b->ix };
              ShapeExtra ex = { .nix = nix, .ix = si, .dml_row = dml != 0 };
              Shape out;
              ShapeError err;
              ShapeStatus rs = shape_index_assign(xs[x].s, &ex, rhs[r].s, SP, &out, &err);
              int st = run_named(f, dml ? "t.dml" : "t.mls", code);
              snprintf(what, sizeof what, "%s: X = %s; X[%s%s%s] = %s", dml ? "dml" : "mls", xs[x].text, a->text, nix == 2 ? ", " : "",
                       nix == 2 ? b->text : "", rhs[r].text);
              compare_text(what, st, f->out ? f->out : "", f->err, rs, out, &err, ix_known(&a->ix) && ix_known(&b->ix));
            }
  report("index assignment");
}

/* Unknown parts never give an error the known value would not: each operand of the elementwise
** and product rules with one extent hidden must give what the full one gives, or less. */
static void test_unknown_parts(void **state) {
  (void)state;
  int bad = 0;
  for (int op = 1; op < OP_COUNT; op++) {
    if (op != OP_MATMUL && !((op_info[op].flags & OPF_EW) && op_info[op].arity == 2)) continue;
    for (int i = 0; i < noperands; i++)
      for (int j = 0; j < noperands; j++) {
        Shape in[2] = { operands[i], operands[j] };
        Shape full;
        ShapeError e0;
        ShapeStatus s0 = shape_rule((OpKind)op, in, NULL, SP, &full, &e0);
        for (int hide = 0; hide < 6; hide++) {
          Shape h[2] = { in[0], in[1] };
          Shape *t = &h[hide / 3];
          if (t->kind != SK_MAT) continue;
          if (hide % 3 == 0) t->rows = SHAPE_UNKNOWN;
          else if (hide % 3 == 1) t->cols = SHAPE_UNKNOWN;
          else *t = shape_numeric();
          Shape part;
          ShapeError e1;
          ShapeStatus s1 = shape_rule((OpKind)op, h, NULL, SP, &part, &e1);
          bool ok = true;
          if (s1 == SHAPE_ERROR) ok = s0 == SHAPE_ERROR && strcmp(e0.msg, e1.msg) == 0;
          else if (s1 == SHAPE_FAILS) ok = s0 != SHAPE_OK;
          else if (s0 == SHAPE_OK) ok = part.kind == SK_ANY || part.kind == SK_NUMERIC || part.kind == full.kind;
          if (ok && s1 == SHAPE_OK && s0 == SHAPE_OK && part.kind == SK_MAT && full.kind == SK_MAT)
            ok = (part.rows < 0 || part.rows == full.rows) && (part.cols < 0 || part.cols == full.cols);
          if (!ok) {
            bad++;
            if (bad < 20) print_error("%s with part of operand %d hidden (%d): %d vs %d\n", op_info[op].name, hide / 3, hide % 3, s1, s0);
          }
        }
      }
  }
  assert_int_equal(bad, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_every_op_has_a_rule),
    cmocka_unit_test_setup_teardown(test_elementwise, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_layout, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_reductions, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_grad_aux, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_linalg, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_nn, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_scatter, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_index, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_index_assign, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_unknown_parts, setup, fix_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
