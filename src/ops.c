/*
** ops.c — the op table's names and arities, and eager evaluation of every op: shape
** inference with the errors of LANGUAGE.md §5–§6, result allocation, backend dispatch.
*/
#include <math.h>
#include <string.h>
#include "backend/backend.h"
#include "autodiff.h"
#include "backend/scalar.h"
#include "err.h"
#include "interp/interp.h"
#include "ops.h"
#include "print.h"
#include "tensor.h"

static const OpInfo op_rows[] = {
#define OP(name, sym, arity, flags) { #name, sym, arity, flags },
#include "ops/ops.def"
#undef OP
};
/* sized by its rows, not by OP_COUNT: an expansion that drops a row (a new row kind that
** does not default to OP) cannot build */
_Static_assert(sizeof op_rows / sizeof op_rows[0] == OP_COUNT, "ORDER OP: op_info follows ops.def");
const OpInfo *const op_info = op_rows;

static bool is_numlike(Value v) { return v.t == VT_NUM || v.t == VT_BOOL; }
static double numv(Value v) { return v.t == VT_NUM ? v.u.n : (double)v.u.b; }

static void shape_str(Value v, char *buf, size_t n) {
  if (v.t == VT_MAT) snprintf(buf, n, "%lldx%lld", (long long)tensor_rows(v.u.m), (long long)tensor_cols(v.u.m));
  else if (is_numlike(v)) snprintf(buf, n, "1x1");
  else snprintf(buf, n, "%s", val_type_name(v));
}

static l_noret bad_operand(Interp *I, OpKind op, Value v, Span sp) {
  char d[64];
  mls_throw(I, sp, "invalid operand for '%s': %s", op_info[op].sym, val_describe(v, d, sizeof d));
}

static l_noret bad_operands(Interp *I, OpKind op, Value a, Value b, Span sp) {
  char d0[64], d1[64];
  mls_throw(I, sp, "invalid operands for '%s': %s and %s", op_info[op].sym, val_describe(a, d0, sizeof d0),
            val_describe(b, d1, sizeof d1));
}

static bool all_finite(const double *d, int64_t n) {
  for (int64_t i = 0; i < n; i++)
    if (!isfinite(d[i])) return false;
  return true;
}

/* --nan-check: out (a fresh result) holds NaN/Inf although the inputs were finite. */
static void nan_check_result(Interp *I, OpKind op, Tensor *out, Tensor *const in[], int nin, const OpParams *p, Span sp) {
  if (all_finite(tensor_data(out), tensor_numel(out))) return;
  for (int k = 0; k < nin; k++) {
    if (in[k] && !all_finite(tensor_data(in[k]), tensor_numel(in[k]))) return;
    if (!in[k] && p && !isfinite(p->scalar[k])) return;
  }
  tensor_free_ref(out);
  nan_check_fail(I, op_info[op].sym, sp);
}

static void run_or_throw(Interp *I, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p, Span sp) {
  int nin = op_info[op].arity < 3 ? op_info[op].arity : 3;
  const Backend *be = be_runner(op, out, in, nin);
  if (be->run(op, out, in, p) != 0) {
    tensor_free_ref(out);
    if (be->error) mls_throw(I, sp, "the %s backend failed running '%s': %s", be->name, op_info[op].sym, be->error());
    mls_throw(I, sp, "the %s backend cannot run '%s'", be->name, op_info[op].name);
  }
  if (I->interrupted) { tensor_free_ref(out); interp_check_interrupt(I, sp); }   /* the kernel stopped early */
  if (I->nan_check) nan_check_result(I, op, out, in, nin, p, sp);
  out->logical = (op_info[op].flags & OPF_CMP) != 0;      /* also clears a reused operand's flag */
}

/* Operands on different devices: a small CPU matrix (a literal, a 1x1 from a number) joins
** the device of the others, copied up (PyTorch lets a CPU scalar tensor join CUDA ones);
** a larger one keeps the op on the CPU, which reads the device data (be_place). The copies go
** on the tmp stack; in[] is updated in place. */
void op_align_devices(Interp *I, Tensor *in[], int n) {
  const Backend *dev = NULL;
  for (int k = 0; k < n && !dev; k++)
    if (in[k] && in[k]->st->be != &be_cpu) dev = in[k]->st->be;
  if (!dev) return;
  for (int k = 0; k < n; k++)
    if (in[k] && in[k]->st->be != dev && (in[k]->st->be != &be_cpu || tensor_numel(in[k]) > TENSOR_SMALL)) return;
  for (int k = 0; k < n; k++)
    if (in[k] && in[k]->st->be != dev) {
      in[k] = tensor_to(I, in[k], dev);
      tmp_push(I, val_mat(in[k]));
    }
}

static int cmp_strings(OpKind op, const Str *a, const Str *b) {
  int c = strcmp(a->s, b->s);
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

Value op_concat(Interp *I, Value a, Value b, Span sp) {
  TextBuf t;
  tb_open(I, &t);
  fmt_value_text(I, &t, a, sp);
  fmt_value_text(I, &t, b, sp);
  if (I->interrupted) { tb_close(I, &t); interp_check_interrupt(I, sp); }
  Value r = tb_close_str(I, &t);
  return r;
}

/* A temporary only this evaluation holds (refcount 1, no view), shaped like the result and
** contiguous: an elementwise op may write its result over it, saving a fresh buffer and the
** cache misses of cold memory (NumPy elides temporaries the same way). Only the evaluator
** grants this (I->inplace_ok), for operands it evaluated itself and releases right after:
** other C callers may pass values whose only reference is a container they still use. */
static bool reusable(const Tensor *t, int64_t rows, int64_t cols) {
  return tensor_is_unique(t) && tensor_is_contiguous(t) && tensor_rows(t) == rows && tensor_cols(t) == cols &&
         rows * cols > TENSOR_SMALL;
}

static Value op_binary_at(Interp *I, OpKind op, Value a, Value b, Span sp) {
  bool inplace = I->inplace_ok;              /* only for this call: nested ops never see it */
  I->inplace_ok = false;
  if (op == OP_RANGE) return op_range(I, a, b, sp);   /* its length is its value: concrete bounds */
  if (a.t == VT_BOX || b.t == VT_BOX || I->stage) return ad_apply(I, op, 2, (Value[]){ a, b }, 0, NULL, sp);
  if (op == OP_MATMUL) return op_matmul(I, a, b, sp);
  if (is_numlike(a) && is_numlike(b)) {
    double r = sc_binary(op, numv(a), numv(b));
    if (!isfinite(r) && I->nan_check && isfinite(numv(a)) && isfinite(numv(b))) nan_check_fail(I, op_info[op].sym, sp);
    return (op_info[op].flags & OPF_CMP) ? val_bool(r != 0) : val_num(r);
  }
  if (a.t == VT_STR || b.t == VT_STR) {
    if (op == OP_ADD) return op_concat(I, a, b, sp);
    if (a.t == VT_STR && b.t == VT_STR) {
      int c = cmp_strings(op, a.u.s, b.u.s);
      if (c >= 0) return val_bool(c);
    }
    bad_operands(I, op, a, b, sp);
  }
  if ((a.t != VT_MAT && !is_numlike(a)) || (b.t != VT_MAT && !is_numlike(b))) bad_operands(I, op, a, b, sp);

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
    shape_str(a, s0, sizeof s0);
    shape_str(b, s1, sizeof s1);
    mls_throw(I, sp, "non-conformable operands for '%s': %s and %s", op_info[op].sym, s0, s1);
  }
  int mark = I->ntmp;                       /* a and b are borrowed; packed copies go on tmp */
  Tensor *cin[2] = { in[0], in[1] };
  for (int k = 0; k < 2; k++)
    if (cin[k] && !tensor_is_contiguous(cin[k])) {
      cin[k] = tensor_clone(I, cin[k]);
      tmp_push(I, val_mat(cin[k]));
    }
  op_align_devices(I, cin, 2);
  Tensor *out = NULL;
  for (int k = 0; k < 2 && !out; k++)       /* write into a temporary operand (NumPy does too) */
    if (inplace && in[k] && cin[k] == in[k] && p.bc[k] == BC_FULL && reusable(in[k], rows, cols)) { out = in[k]; out->refcount++; }
  if (!out) out = tensor_new_on(I, be_place(cin, 2), rows, cols);
  run_or_throw(I, op, out, cin, &p, sp);
  tmp_release_to(I, mark);
  return val_mat(out);
}

/* Runs a one-input op on matrix x (borrowed) into a new rows x cols result (+1). */
static Tensor *run1(Interp *I, OpKind op, Tensor *x, int64_t rows, int64_t cols, Span sp) {
  Tensor *cx = tensor_contiguous(I, x);
  tmp_push(I, val_mat(cx));
  Tensor *out = tensor_new_on(I, cx->st->be, rows, cols);
  Tensor *in[1] = { cx };
  run_or_throw(I, op, out, in, NULL, sp);
  tmp_pop(I, 1);
  tensor_free_ref(cx);
  return out;
}

static Value op_unary_at(Interp *I, OpKind op, Value a, Span sp) {
  bool inplace = I->inplace_ok;
  I->inplace_ok = false;
  if (a.t == VT_BOX || I->stage) return ad_apply(I, op, 1, &a, 0, NULL, sp);
  if (is_numlike(a)) {
    double r = sc_unary(op, numv(a));
    if (!isfinite(r) && I->nan_check && isfinite(numv(a))) nan_check_fail(I, op_info[op].sym, sp);
    return op == OP_NOT ? val_bool(r != 0) : val_num(r);
  }
  if (a.t != VT_MAT) bad_operand(I, op, a, sp);
  Tensor *m = a.u.m;
  if (inplace && reusable(m, tensor_rows(m), tensor_cols(m))) {     /* in place over a temporary */
    m->refcount++;
    Tensor *in[1] = { m };
    run_or_throw(I, op, m, in, NULL, sp);
    return val_mat(m);
  }
  return val_mat(run1(I, op, m, tensor_rows(m), tensor_cols(m), sp));
}

/* True when a GEMM can read t as stored: unit column stride, rows a whole stride apart. */
static bool gemm_readable(const Tensor *t) {
  return t->stride[1] == 1 && (tensor_rows(t) <= 1 || t->stride[0] >= tensor_cols(t));
}

Tensor *op_gemm_operand(Interp *I, Value v, bool *flip) {
  *flip = false;
  if (v.t != VT_MAT) {
    MLS_ASSERT(is_numlike(v));
    Tensor *t = tensor_new(I, 1, 1);
    tensor_data(t)[0] = numv(v);
    return t;
  }
  Tensor *m = v.u.m;
  if (gemm_readable(m)) { m->refcount++; return m; }
  Tensor *u = tensor_view_t(m);              /* t(X): X itself, read with the transpose flag */
  if (gemm_readable(u)) { *flip = true; return u; }
  tensor_free_ref(u);
  return tensor_clone(I, m);
}

static Value op_matmul_at(Interp *I, Value a, Value b, Span sp) {
  if (a.t == VT_BOX || b.t == VT_BOX || I->stage) return ad_apply(I, OP_MATMUL, 2, (Value[]){ a, b }, 0, NULL, sp);
  int64_t ra = a.t == VT_MAT ? tensor_rows(a.u.m) : 1, ca = a.t == VT_MAT ? tensor_cols(a.u.m) : 1;
  int64_t rb = b.t == VT_MAT ? tensor_rows(b.u.m) : 1, cb = b.t == VT_MAT ? tensor_cols(b.u.m) : 1;
  if ((a.t != VT_MAT && !is_numlike(a))) bad_operand(I, OP_MATMUL, a, sp);
  if ((b.t != VT_MAT && !is_numlike(b))) bad_operand(I, OP_MATMUL, b, sp);
  if (ca != rb)
    mls_throw(I, sp, "non-conformable arguments for '%%*%%': %lldx%lld and %lldx%lld",
              (long long)ra, (long long)ca, (long long)rb, (long long)cb);
  bool ta, tb;                               /* t(X) %*% D: one GEMM on X with its 'T' flag */
  int mark = I->ntmp;
  Tensor *ab[2];
  ab[0] = op_gemm_operand(I, a, &ta);
  tmp_push(I, val_mat(ab[0]));
  ab[1] = op_gemm_operand(I, b, &tb);
  tmp_push(I, val_mat(ab[1]));
  op_align_devices(I, ab, 2);
  Tensor *C = op_gemm_new(I, ta, tb, ab[0], ab[1], sp);
  tmp_release_to(I, mark);
  return val_mat(C);
}

/* A vector operand op(X) (r x c with r or c 1) whose values are consecutive in memory, as an
** untransposed packed view va: a product then makes the same BLAS call whichever way X is laid
** out (a transposed view eagerly, a packed copy in a staged graph), so its bits are the same. */
static bool vector_view(const Tensor *X, bool t, int64_t r, int64_t c, Tensor *va) {
  if (r != 1 && c != 1) return false;
  int64_t len = r * c;
  if (len > 1) {
    int64_t step = tensor_rows(X) == 1 ? X->stride[1] : X->stride[0];
    if (step != 1) return false;
  }
  *va = *X;
  va->shape[0] = r;
  va->shape[1] = c;
  va->stride[0] = c;
  va->stride[1] = 1;
  (void)t;
  return true;
}

Tensor *op_gemm_new(Interp *I, bool ta, bool tb, Tensor *A, Tensor *B, Span sp) {
  int64_t m = ta ? tensor_cols(A) : tensor_rows(A), n = tb ? tensor_rows(B) : tensor_cols(B);
  int64_t k = ta ? tensor_rows(A) : tensor_cols(A);
  Tensor *C = tensor_new_on(I, be_place((Tensor *[]){ A, B }, 2), m, n);
  const Backend *be = be_runner(OP_MATMUL, C, (Tensor *[]){ A, B }, 2);
  Tensor va, vb;
  if (vector_view(A, ta, m, k, &va)) { A = &va; ta = false; }
  if (vector_view(B, tb, k, n, &vb)) { B = &vb; tb = false; }
  int rc = be->gemm(ta, tb, 1.0, A, B, 0.0, C);
  if (I->interrupted) { tensor_free_ref(C); interp_check_interrupt(I, sp); }   /* stopped between panels */
  if (rc != 0) {
    tensor_free_ref(C);
    if (be->error) mls_throw(I, sp, "matrix product failed on the %s backend: %s", be->name, be->error());
    mls_throw(I, sp, "matrix product failed on the %s backend", be->name);
  }
  return C;
}

Value op_reshape(Interp *I, Value a, int64_t rows, int64_t cols, Span sp) {
  if (a.t == VT_BOX) return ad_apply(I, OP_RESHAPE, 1, &a, 2, (Value[]){ val_num((double)rows), val_num((double)cols) }, sp);
  if (!is_numlike(a) && a.t != VT_MAT) bad_operand(I, OP_RESHAPE, a, sp);
  int64_t n = a.t == VT_MAT ? tensor_numel(a.u.m) : 1;
  if (rows * cols != n)
    mls_throw(I, sp, "cannot shape %lld values into a %lldx%lld matrix", (long long)n, (long long)rows, (long long)cols);
  Tensor *t = tensor_new_on(I, a.t == VT_MAT ? a.u.m->st->be : be_default(), rows, cols);
  if (a.t == VT_MAT && tensor_is_contiguous(a.u.m) && a.u.m->st->be->copy2d) {   /* on the device */
    Tensor v = *a.u.m;
    v.shape[0] = rows; v.shape[1] = cols; v.stride[0] = cols; v.stride[1] = 1;
    if (t->st->be->copy2d(t, &v) != 0) { tensor_free_ref(t); mls_throw(I, sp, "reshape failed on the %s backend", t->st->be->name); }
    return val_mat(t);
  }
  double *d = tensor_data(t);
  if (a.t == VT_MAT)
    for (int64_t k = 0; k < n; k++) {
      if (interp_poll(I, k)) { tensor_free_ref(t); interp_check_interrupt(I, sp); }
      d[k] = tensor_at(a.u.m, k);
    }
  else if (n) d[0] = numv(a);
  return val_mat(t);
}

/* A view, never a copy (TH): t(X) %*% D becomes one GEMM with the transpose flag, and the ops
** that need packed rows pack it themselves (tensor_contiguous). */
Value op_transpose(Interp *I, Value a, Span sp) {
  if (a.t == VT_BOX || I->stage) return ad_apply(I, OP_TRANSPOSE, 1, &a, 0, NULL, sp);
  if (is_numlike(a)) return val_num(numv(a));
  if (a.t != VT_MAT) bad_operand(I, OP_TRANSPOSE, a, sp);
  return val_mat(tensor_view_t(a.u.m));
}

/* "bad argument #1 to 'rowMaxs' (...)": these ops are called as the builtins of their symbol. */
static l_noret bad_argn(Interp *I, OpKind op, int argn, Span sp, const char *what, Value v) {
  char d[64];
  if (v.t == VT_MAT) shape_str(v, d, sizeof d);            /* "got 3x4" for shapes */
  else val_describe(v, d, sizeof d);                       /* "got a string" */
  mls_throw(I, sp, "bad argument #%d to '%s' (%s, got %s)", argn, op_info[op].sym, what, d);
}

static l_noret bad_arg(Interp *I, OpKind op, Span sp, const char *what, Value v) { bad_argn(I, op, 1, sp, what, v); }

/* The matrix an op of the reduction family works on: a number becomes 1x1 (+1, contiguous). */
static Tensor *red_input(Interp *I, OpKind op, Value a, Span sp) {
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
  Tensor *out = tensor_new_on(I, x->st->be, rows, cols);
  Tensor *in[1] = { x };
  run_or_throw(I, op, out, in, NULL, sp);
  tmp_pop(I, 1);
  tensor_free_ref(x);
  return out;
}

static Value op_reduce_at(Interp *I, OpKind op, Value a, Span sp) {
  if (a.t == VT_BOX || I->stage) return ad_apply(I, op, 1, &a, 0, NULL, sp);
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

Value op_scan(Interp *I, OpKind op, Value a, Span sp) {
  if (a.t == VT_BOX || I->stage) return ad_apply(I, op, 1, &a, 0, NULL, sp);
  MLS_ASSERT(op_info[op].flags & OPF_KEEP);
  if (a.t != VT_MAT && !is_numlike(a)) bad_arg(I, op, sp, "matrix expected", a);
  int64_t r = a.t == VT_MAT ? tensor_rows(a.u.m) : 1, c = a.t == VT_MAT ? tensor_cols(a.u.m) : 1;
  Tensor *out = run_red(I, op, a, r, c, sp);
  if (a.t == VT_MAT) return val_mat(out);
  double s = tensor_data(out)[0];
  tensor_free_ref(out);
  return val_num(s);
}

Value op_grad_aux(Interp *I, OpKind op, int nin, const Value *in, Span sp) {
  for (int k = 0; k < nin; k++)
    if (in[k].t == VT_BOX || I->stage) return ad_apply(I, op, nin, in, 0, NULL, sp);
  MLS_ASSERT(op == OP_CUMEXT_GRAD || op == OP_CUMEXT_TAN || op == OP_CUMSUMPROD_GRAD || op == OP_ROWPRODS_GRAD || op == OP_COLPRODS_GRAD);
  int mark = I->ntmp;
  Tensor *t[3];
  for (int k = 0; k < nin; k++) {
    t[k] = red_input(I, op, in[k], sp);
    tmp_push(I, val_mat(t[k]));
  }
  Tensor *out = tensor_new_on(I, be_place(t, nin), tensor_rows(t[1]), tensor_cols(t[1]));   /* x's shape */
  run_or_throw(I, op, out, t, NULL, sp);
  tmp_release_to(I, mark);
  if (in[1].t == VT_MAT) return val_mat(out);
  double s = tensor_data(out)[0];
  tensor_free_ref(out);
  return val_num(s);
}

Value op_diag(Interp *I, Value a, Span sp) {
  if (a.t == VT_BOX || I->stage) return ad_apply(I, OP_DIAG, 1, &a, 0, NULL, sp);
  if (a.t != VT_MAT && !is_numlike(a)) bad_arg(I, OP_DIAG, sp, "vector or square matrix expected", a);
  int64_t r = a.t == VT_MAT ? tensor_rows(a.u.m) : 1, c = a.t == VT_MAT ? tensor_cols(a.u.m) : 1;
  if (r == c) return val_mat(run_red(I, OP_DIAG, a, r, 1, sp));   /* 1x1 either way */
  if (r == 1 || c == 1) return val_mat(run_red(I, OP_DIAG, a, r * c, r * c, sp));
  bad_arg(I, OP_DIAG, sp, "vector or square matrix expected", a);
}

Value op_ifelse(Interp *I, Value test, Value yes, Value no, Span sp) {
  Value v[3] = { test, yes, no };
  if (test.t == VT_BOX || yes.t == VT_BOX || no.t == VT_BOX || I->stage) return ad_apply(I, OP_IFELSE, 3, v, 0, NULL, sp);
  int64_t r = 1, c = 1;
  int from = -1;
  for (int k = 0; k < 3; k++) {
    if (v[k].t != VT_MAT) continue;
    if (tensor_numel(v[k].u.m) == 1) continue;               /* 1x1 broadcasts like a number */
    if (from < 0) { r = tensor_rows(v[k].u.m); c = tensor_cols(v[k].u.m); from = k; continue; }
    if (tensor_rows(v[k].u.m) != r || tensor_cols(v[k].u.m) != c) {
      char what[80];
      snprintf(what, sizeof what, "number or %lldx%lld matrix expected", (long long)r, (long long)c);
      bad_argn(I, OP_IFELSE, k + 1, sp, what, v[k]);
    }
  }
  bool any_mat = test.t == VT_MAT || yes.t == VT_MAT || no.t == VT_MAT;
  if (!any_mat) {                                            /* the chosen value itself */
    if (!is_numlike(test)) bad_argn(I, OP_IFELSE, 1, sp, "boolean, number or matrix expected", test);
    double t = numv(test);
    if (t != t) return val_num(NAN);
    Value pick = t != 0 ? yes : no;
    val_retain(pick);
    return pick;
  }
  for (int k = 0; k < 3; k++)
    if (v[k].t != VT_MAT && !is_numlike(v[k]))
      bad_argn(I, OP_IFELSE, k + 1, sp, k ? "number or matrix expected" : "boolean, number or matrix expected", v[k]);
  int mark = I->ntmp;
  Tensor *in[3];
  for (int k = 0; k < 3; k++) {
    in[k] = red_input(I, OP_IFELSE, v[k], sp);
    tmp_push(I, val_mat(in[k]));
  }
  op_align_devices(I, in, 3);
  Tensor *out = tensor_new_on(I, be_place(in, 3), r, c);
  run_or_throw(I, OP_IFELSE, out, in, NULL, sp);
  tmp_release_to(I, mark);
  return val_mat(out);
}

Value op_range(Interp *I, Value a, Value b, Span sp) {
  Value from0 = a;                            /* the length is discrete; under grad, from is not */
  bool traced = ad_any_grad(1, &from0);
  a = ad_concrete(I, a, sp, "a range's bound");
  b = ad_concrete(I, b, sp, "a range's bound");
  double from, to;
  if (a.t == VT_MAT && tensor_numel(a.u.m) == 1) from = tensor_data(a.u.m)[0];
  else if (is_numlike(a)) from = numv(a);
  else bad_operand(I, OP_RANGE, a, sp);
  if (b.t == VT_MAT && tensor_numel(b.u.m) == 1) to = tensor_data(b.u.m)[0];
  else if (is_numlike(b)) to = numv(b);
  else bad_operand(I, OP_RANGE, b, sp);
  if (!isfinite(from) || !isfinite(to)) mls_throw(I, sp, "the ends of ':' must be finite numbers");
  double span = fabs(to - from);
  if (span >= 1e15) mls_throw(I, sp, "the range of ':' is too long");
  int64_t n = (int64_t)floor(span + 1e-10) + 1;
  double step = to >= from ? 1.0 : -1.0;
  Tensor *out = tensor_new(I, n, 1);
  double *d = tensor_data(out);
  for (int64_t i = 0; i < n; i++) {
    if (interp_poll(I, i)) { tensor_free_ref(out); interp_check_interrupt(I, sp); }
    d[i] = traced ? step * (double)i : from + step * (double)i;
  }
  if (!traced) return val_mat(out);
  /* from traced by grad: from + step * i through the op '+' (the same bits), derivative 1 each */
  tmp_push(I, val_mat(out));
  Value r = op_binary(I, OP_ADD, from0, val_mat(out), sp);
  tmp_pop(I, 1);
  tensor_free_ref(out);
  return r;
}

/* The entry points: each runs with I->call_span at its own span (tensor_new's errors). */
Value op_binary(Interp *I, OpKind op, Value a, Value b, Span sp) {
  Span saved = I->call_span;                   /* an out-of-memory inside is located here */
  I->call_span = sp;
  Value r = op_binary_at(I, op, a, b, sp);
  I->call_span = saved;
  return r;
}

Value op_unary(Interp *I, OpKind op, Value a, Span sp) {
  Span saved = I->call_span;                   /* an out-of-memory inside is located here */
  I->call_span = sp;
  Value r = op_unary_at(I, op, a, sp);
  I->call_span = saved;
  return r;
}

Value op_matmul(Interp *I, Value a, Value b, Span sp) {
  Span saved = I->call_span;                   /* an out-of-memory inside is located here */
  I->call_span = sp;
  Value r = op_matmul_at(I, a, b, sp);
  I->call_span = saved;
  return r;
}

Value op_reduce(Interp *I, OpKind op, Value a, Span sp) {
  Span saved = I->call_span;                   /* an out-of-memory inside is located here */
  I->call_span = sp;
  Value r = op_reduce_at(I, op, a, sp);
  I->call_span = saved;
  return r;
}
