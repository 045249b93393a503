/*
** ops/products.c — the product forms staging's linear-algebra rewrites make (docs/staging.md
** "Linear-algebra rewrites"): dot, rowsumsprod, colsumsprod, diagprod, crossprod, tcrossprod,
** xtwxv and a chain of products in a planned order. Each computes what a product (or a reduction of
** one) gives with fewer flops and no product temporary, on the backend where the operands
** live when it has the kernel (else through the ops there); where its result is not finite,
** it computes the eager form instead, so that it never gives NaN or Inf where eager code gives
** a number (the overflow of a partial sum depends on the order of the additions).
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "ops/family.h"
#include "ops/rules.h"
#include "ops/shapes_impl.h"

static Value TMP(Interp *I, Value v) { tmp_push(I, v); return v; }   /* owned temp, freed by the caller's mark */

static bool has_kernel(const Backend *be, OpKind op) {
  return be_is_cpu(be) || (be->supports_op && be->supports_op(be, op));
}

/* Is every element of v (a plain number or matrix) finite? A device matrix is asked through
** its sum, which a non-finite element makes non-finite (so does a sum of finite elements that
** overflows: the caller then only takes the eager form). The stage is set aside: a chain run
** while another graph is traced must not record the check. */
static bool all_finite(Interp *I, Value v, Span sp) {
  v = ad_primal(v);
  if (v.t == VT_NUM) return isfinite(v.u.n);
  if (v.t != VT_MAT) return true;
  const Tensor *m = v.u.m;
  int64_t r = tensor_rows(m), c = tensor_cols(m);
  if (m->st->be == I->cpu) {
    const double *d = tensor_data(m);
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < c; j++)
        if (!isfinite(d[i * m->stride[0] + j * m->stride[1]])) return false;
    return true;
  }
  Tape *st = I->stage;
  I->stage = NULL;                           /* (a throw ends the staging, which restores it) */
  Value s = op_reduce(I, OP_SUM, v, sp);
  I->stage = st;
  double x = s.t == VT_NUM ? s.u.n : s.t == VT_MAT ? tensor_data(s.u.m)[0] : 0;
  val_release(s);
  return isfinite(x);
}

/* A fast form's result out (taken; NULL: the backend has no such kernel) as *r when it is
** finite; false (out released) when the caller must compute the eager form instead. */
static bool finite_result(Interp *I, Tensor *out, Span sp, Value *r) {
  if (!out) return false;
  *r = val_mat(out);
  tmp_push(I, *r);
  bool ok = all_finite(I, *r, sp);
  tmp_pop(I, 1);
  if (!ok) val_release(*r);
  return ok;
}

static int64_t rows_of(Value v) { return v.t == VT_MAT ? tensor_rows(v.u.m) : 1; }
static int64_t cols_of(Value v) { return v.t == VT_MAT ? tensor_cols(v.u.m) : 1; }

/* The kernel of op into a new rows x cols result on the operands' backend (+1), or NULL when
** that backend has no kernel for it, the operands live apart, or --nan-check is on (then each
** op of the eager form is checked as eager code is). */
static Tensor *run_fast(Interp *I, OpKind op, Tensor *const in[], int nin, const OpParams *p, int64_t rows, int64_t cols,
                        Span sp) {
  if (I->nan_check) return NULL;
  for (int k = 1; k < nin; k++)
    if (in[k]->st->be != in[0]->st->be) return NULL;
  const Backend *be = in[0]->st->be;
  if (!has_kernel(be, op)) return NULL;
  Tensor *out = tensor_new_on(I, be, rows, cols);
  op_run_kernel(I, op, out, in, p, sp);
  return out;
}

/* The eager form of op: what the rewrite replaced (its result and errors are eager code's). */
static Value eager_form(Interp *I, OpKind op, Value x, Value y, Span sp) {
  int mark = I->ntmp;
  Value r;
  switch (op) {
  case OP_DOT: r = op_reduce(I, OP_SUM, TMP(I, op_binary(I, OP_MUL, x, y, sp)), sp); break;
  case OP_ROWSUMSPROD: r = op_reduce(I, OP_ROWSUMS, TMP(I, op_matmul(I, x, y, sp)), sp); break;
  case OP_COLSUMSPROD: r = op_reduce(I, OP_COLSUMS, TMP(I, op_matmul(I, x, y, sp)), sp); break;
  case OP_DIAGPROD: r = op_diag(I, TMP(I, op_matmul(I, x, y, sp)), sp); break;
  case OP_CROSSPROD: r = op_matmul(I, TMP(I, op_transpose(I, x, sp)), x, sp); break;
  case OP_TCROSSPROD: r = op_matmul(I, x, TMP(I, op_transpose(I, x, sp)), sp); break;
  default: MLS_ASSERT(0);   /* (xtwxv's: xtwxv_eager) */
  }
  tmp_release_to(I, mark);
  return r;
}

/* sum(X * Y) of two matrices of one shape, one pass (the CPU: BLAS ddot over blocks added
** pairwise, cpu_products.c). On a device, the eager form: its sum stays there for a captured
** launch (replay.c), which reading the dot back to check it would break. */
static Value dot(Interp *I, Value x, Value y, Span sp) {
  if (x.t != VT_MAT || y.t != VT_MAT || rows_of(x) != rows_of(y) || cols_of(x) != cols_of(y) ||
      x.u.m->st->be != I->cpu || y.u.m->st->be != I->cpu)
    return eager_form(I, OP_DOT, x, y, sp);
  Tensor *out = run_fast(I, OP_DOT, (Tensor *[]){ x.u.m, y.u.m }, 2, NULL, 1, 1, sp);
  if (out) {
    double s = tensor_data(out)[0];
    tensor_free_ref(out);
    if (isfinite(s)) return val_num(s);
  }
  return eager_form(I, OP_DOT, x, y, sp);
}

/* diag(X %*% Y) of a square product: each row of X times the same column of Y (cpu_products.c). */
static Value diagprod(Interp *I, Value x, Value y, Span sp) {
  int64_t m = rows_of(x), k = cols_of(x);
  if (x.t != VT_MAT || y.t != VT_MAT || rows_of(y) != k || cols_of(y) != m) return eager_form(I, OP_DIAGPROD, x, y, sp);
  Tensor *out = run_fast(I, OP_DIAGPROD, (Tensor *[]){ x.u.m, y.u.m }, 2, NULL, m, 1, sp);
  Value r;
  if (finite_result(I, out, sp, &r)) return r;
  return eager_form(I, OP_DIAGPROD, x, y, sp);
}

/* rowSums(X %*% Y) as X %*% rowSums(Y), colSums(X %*% Y) as colSums(X) %*% Y: through the ops,
** on any backend. */
static Value sumsprod(Interp *I, OpKind op, Value x, Value y, Span sp) {
  if ((x.t != VT_MAT && !is_numlike(x)) || (y.t != VT_MAT && !is_numlike(y)) || cols_of(x) != rows_of(y) || I->nan_check)
    return eager_form(I, op, x, y, sp);             /* (the product's error, or each op checked) */
  int mark = I->ntmp;
  Value r = op == OP_ROWSUMSPROD ? op_matmul(I, x, TMP(I, op_reduce(I, OP_ROWSUMS, y, sp)), sp)
                                 : op_matmul(I, TMP(I, op_reduce(I, OP_COLSUMS, x, sp)), y, sp);
  tmp_push(I, r);
  bool ok = all_finite(I, r, sp);
  tmp_pop(I, 1);                                   /* (r is ours again; the sums are freed) */
  tmp_release_to(I, mark);
  if (ok) return r;
  val_release(r);
  return eager_form(I, op, x, y, sp);
}

/* t(X) %*% X (crossprod) or X %*% t(X) (tcrossprod): one symmetric rank-k update (BLAS dsyrk),
** the triangle mirrored; a backend without it runs the GEMM. */
static Value crossprod(Interp *I, OpKind op, Value x, Span sp) {
  if (x.t != VT_MAT || I->nan_check) return eager_form(I, op, x, x, sp);
  int mark = I->ntmp;
  bool flip;
  Tensor *A = op_gemm_operand(I, x, &flip);        /* X itself, or what a transposed view reads */
  tmp_push(I, val_mat(A));
  OpParams p;
  memset(&p, 0, sizeof p);
  p.trans[0] = flip != (op == OP_TCROSSPROD);      /* A A^T, else A^T A */
  int64_t n = p.trans[0] ? tensor_rows(A) : tensor_cols(A);
  Tensor *out = run_fast(I, OP_CROSSPROD, (Tensor *[]){ A }, 1, &p, n, n, sp);
  tmp_release_to(I, mark);
  Value r;
  if (finite_result(I, out, sp, &r)) return r;
  return eager_form(I, op, x, x, sp);
}

/* t(X) %*% (w * (X %*% v)), as written. */
static Value xtwxv_eager(Interp *I, Value x, Value w, Value v, Span sp) {
  int mark = I->ntmp;
  Value u = TMP(I, op_binary(I, OP_MUL, w, TMP(I, op_matmul(I, x, v, sp)), sp));
  Value r = op_matmul(I, TMP(I, op_transpose(I, x, sp)), u, sp);
  tmp_release_to(I, mark);
  return r;
}

/* The same in one pass over X's rows, each row's dot with v scaled by w and added back
** along the row (cpu_products.c). */
static Value xtwxv(Interp *I, Value x, Value w, Value v, Span sp) {
  int64_t m = rows_of(x), n = cols_of(x);
  bool wnum = is_numlike(w) || (w.t == VT_MAT && tensor_numel(w.u.m) == 1);
  if (x.t != VT_MAT || v.t != VT_MAT || rows_of(v) != n || cols_of(v) != 1 ||
      !(wnum || (w.t == VT_MAT && rows_of(w) == m && cols_of(w) == 1)))
    return xtwxv_eager(I, x, w, v, sp);
  int mark = I->ntmp;
  Tensor *wt = w.t == VT_MAT ? w.u.m : tensor_new_host(I, 1, 1);
  if (w.t == VT_MAT) wt->refcount++;
  else tensor_data(wt)[0] = numv(w);
  tmp_push(I, val_mat(wt));
  Tensor *out = run_fast(I, OP_XTWXV, (Tensor *[]){ x.u.m, wt, v.u.m }, 3, NULL, n, 1, sp);
  tmp_release_to(I, mark);
  Value r;
  if (finite_result(I, out, sp, &r)) return r;
  return xtwxv_eager(I, x, w, v, sp);
}

Value mm_product_form(Interp *I, OpKind op, const Value *in, Span sp) {
  bool sparse = false;                     /* a sparse operand: the eager form, whose ops have
                                           ** sparse kernels (docs/sparse.md) */
  for (int k = 0; k < op_info[op].arity; k++) sparse |= in[k].t == VT_MAT && in[k].u.m->st->sparse;
  if (sparse) return op == OP_XTWXV ? xtwxv_eager(I, in[0], in[1], in[2], sp) : eager_form(I, op, in[0], in[1], sp);
  switch (op) {
  case OP_DOT: return dot(I, in[0], in[1], sp);
  case OP_DIAGPROD: return diagprod(I, in[0], in[1], sp);
  case OP_ROWSUMSPROD: case OP_COLSUMSPROD: return sumsprod(I, op, in[0], in[1], sp);
  case OP_CROSSPROD: case OP_TCROSSPROD: return crossprod(I, op, in[0], sp);
  case OP_XTWXV: return xtwxv(I, in[0], in[1], in[2], sp);
  default: break;
  }
  mls_throw(I, sp, "internal error: '%s' is not a product form", op_info[op].sym);
}

/* ---- a chain of products ---- */
/* Runs one postfix program of the plan (k >= 0: leaf k; -1: the product of the two values on
** top) over the leaves; the intermediate products are held in a list (freed by a throw) and
** each is released once used. */
static Value chain_run(Interp *I, int n, const Value *leaves, const double *prog, Span sp) {
  int mark = I->ntmp;
  List *hold = list_held_nulls(I, n);               /* the intermediates, by stack slot */
  Value st[MM_CHAIN_MAX];
  int top = 0;
  for (int q = 0; q < 2 * n - 1; q++) {
    int tok = (int)prog[q];
    if (tok >= 0) {
      MLS_ASSERT(tok < n && top < n);
      st[top++] = leaves[tok];
      continue;
    }
    MLS_ASSERT(top >= 2);
    Value b = st[top - 1], a = st[top - 2];
    Value p = op_matmul(I, a, b, sp);
    for (int s = top - 2; s < top; s++) {         /* the operands that were intermediates die */
      Value d = hold->items[s];
      hold->items[s] = val_null();
      val_release(d);
    }
    top -= 2;
    hold->items[top] = p;
    st[top++] = p;
  }
  MLS_ASSERT(top == 1);
  Value r = st[0];
  val_retain(r);
  tmp_release_to(I, mark);
  return r;
}

Value op_mmchain(Interp *I, int n, const Value *leaves, Value plan, Span sp) {
  MLS_ASSERT(n >= 2 && n <= MM_CHAIN_MAX && plan.t == VT_MAT && tensor_numel(plan.u.m) == 4 * n - 1);
  const double *pl = tensor_data(plan.u.m);
  if (!I->nan_check) {
    Value r = chain_run(I, n, leaves, pl + 1, sp);
    tmp_push(I, r);
    if (all_finite(I, r, sp)) { tmp_pop(I, 1); return r; }
    tmp_pop(I, 1);
    val_release(r);
  }
  return chain_run(I, n, leaves, pl + 2 * n, sp);  /* the order the program wrote */
}

/* ---- derivative rules (ops/rules.h): those of the forms each op replaces ---- */
void prod_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  Span sp = r->sp;
  Value a = r->in[0], b = r->nin > 1 ? r->in[1] : val_null();
  bool n;
  int64_t ar, ac, br, bc;
  rl_shape(a, &n, &ar, &ac);
  rl_shape(b, &n, &br, &bc);
  switch (r->op) {
  case OP_DOT:                              /* sum(X * Y) */
    if (r->want[0]) gin[0] = rl_sum_to(I, B2(OP_MULZ, g, b), a, sp);
    if (r->want[1]) gin[1] = rl_sum_to(I, B2(OP_MULZ, g, a), b, sp);
    return;
  case OP_ROWSUMSPROD:                      /* X %*% rowSums(Y) */
    if (r->want[0]) gin[0] = rl_sum_to(I, rl_mm(I, g, rl_tp(I, T(I, op_reduce(I, OP_ROWSUMS, b, sp)), sp), sp), a, sp);
    if (r->want[1]) gin[1] = rl_sum_to(I, B2(OP_MUL, rl_ones(I, br, bc), rl_mm(I, rl_tp(I, a, sp), g, sp)), b, sp);
    return;
  case OP_COLSUMSPROD:                      /* colSums(X) %*% Y */
    if (r->want[0]) gin[0] = rl_sum_to(I, B2(OP_MUL, rl_ones(I, ar, ac), rl_mm(I, g, rl_tp(I, b, sp), sp)), a, sp);
    if (r->want[1]) gin[1] = rl_sum_to(I, rl_mm(I, rl_tp(I, T(I, op_reduce(I, OP_COLSUMS, a, sp)), sp), g, sp), b, sp);
    return;
  case OP_DIAGPROD:                         /* rowSums(X * t(Y)) */
    if (r->want[0]) gin[0] = rl_sum_to(I, B2(OP_MULZ, g, rl_tp(I, b, sp)), a, sp);
    if (r->want[1]) gin[1] = rl_sum_to(I, rl_tp(I, B2(OP_MULZ, g, a), sp), b, sp);
    return;
  case OP_CROSSPROD:                        /* t(X) %*% X: X (G + t(G)) */
    gin[0] = rl_sum_to(I, rl_mm(I, a, B2(OP_ADD, g, rl_tp(I, g, sp)), sp), a, sp);
    return;
  case OP_TCROSSPROD:                       /* X %*% t(X): (G + t(G)) X */
    gin[0] = rl_sum_to(I, rl_mm(I, B2(OP_ADD, g, rl_tp(I, g, sp)), a, sp), a, sp);
    return;
  case OP_XTWXV: {                          /* t(X) %*% (w * (X %*% v)) */
    Value w = r->in[1], v = r->in[2], Xg = rl_mm(I, a, g, sp), Xv = rl_mm(I, a, v, sp);
    if (r->want[0]) gin[0] = rl_sum_to(I, B2(OP_ADD, rl_mm(I, B2(OP_MUL, w, Xv), rl_tp(I, g, sp), sp),
                                            rl_mm(I, B2(OP_MUL, w, Xg), rl_tp(I, v, sp), sp)), a, sp);
    if (r->want[1]) gin[1] = rl_sum_to(I, B2(OP_MUL, Xg, Xv), w, sp);
    if (r->want[2]) gin[2] = rl_sum_to(I, T(I, op_apply(I, OP_XTWXV, 3, (Value[]){ a, w, g }, 0, NULL, sp)), v, sp);
    return;
  }
  default: break;
  }
  rl_no_rule(I, r->op, false, sp);
}

Value prod_jvp(Interp *I, const RuleArgs *r, const Value *tin) {
  Span sp = r->sp;
  OpKind op = r->op;
  Value a = r->in[0], b = r->nin > 1 ? r->in[1] : val_null(), ta = tin[0], tb = tin[1];
  switch (op) {
  case OP_DOT: case OP_ROWSUMSPROD: case OP_COLSUMSPROD: case OP_DIAGPROD:   /* bilinear */
    return rl_tadd(I, ta.t == VT_NULL ? ta : T(I, op_apply(I, op, 2, (Value[]){ ta, b }, 0, NULL, sp)),
                   tb.t == VT_NULL ? tb : T(I, op_apply(I, op, 2, (Value[]){ a, tb }, 0, NULL, sp)), sp);
  case OP_XTWXV: {                          /* t(dX) (w Xv) + t(X) (w dX v + dw Xv) + xtwxv(X, w, dv) */
    Value w = r->in[1], v = r->in[2], tw = tin[1], tv = tin[2], res = val_null();
    if (ta.t != VT_NULL)
      res = rl_tadd(I, rl_mm(I, rl_tp(I, ta, sp), B2(OP_MUL, w, rl_mm(I, a, v, sp)), sp),
                    rl_mm(I, rl_tp(I, a, sp), B2(OP_MUL, w, rl_mm(I, ta, v, sp)), sp), sp);
    if (tw.t != VT_NULL) res = rl_tadd(I, res, rl_mm(I, rl_tp(I, a, sp), B2(OP_MUL, tw, rl_mm(I, a, v, sp)), sp), sp);
    if (tv.t != VT_NULL) res = rl_tadd(I, res, T(I, op_apply(I, OP_XTWXV, 3, (Value[]){ a, w, tv }, 0, NULL, sp)), sp);
    return res;
  }
  case OP_CROSSPROD: case OP_TCROSSPROD: {  /* P + t(P), P = t(dX) X or dX t(X) */
    if (ta.t == VT_NULL) return ta;
    Value P = op == OP_CROSSPROD ? rl_mm(I, rl_tp(I, ta, sp), a, sp) : rl_mm(I, ta, rl_tp(I, a, sp), sp);
    return B2(OP_ADD, P, rl_tp(I, P, sp));
  }
  default: break;
  }
  rl_no_rule(I, op, true, sp);
}

/* ---- shape rules (ops/shapes_impl.h): the checks above on shapes alone, same messages ---- */
/* The product forms of staging's rewrites (ops.def), each as the form it replaces: dot(X, Y)
** is sum(X * Y), a number; rowsumsprod, colsumsprod and diagprod are the product's rowSums,
** colSums and diag; crossprod(X) is t(X) %*% X, tcrossprod(X) X %*% t(X), xtwxv(X, w, v)
** t(X) %*% (w * (X %*% v)); a chain, the product of its (first two) operands. */
ShapeStatus shape_rule_products(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  ShapeStatus st;
  int64_t r, c;
  switch (op) {
  case OP_DOT:
    st = shape_rule_ew2(op, in, x, sp, out, err);
    if (st == SHAPE_OK) *out = shape_num_unknown();
    return st;
  case OP_XTWXV: {                        /* t(X) %*% (w * (X %*% v)) */
    Shape xv, u, t;
    if ((st = shape_rule_matmul(OP_MATMUL, (Shape[]){ in[0], in[2] }, x, sp, &xv, err)) != SHAPE_OK) return st;
    if ((st = shape_rule_ew2(OP_MUL, (Shape[]){ in[1], xv }, x, sp, &u, err)) != SHAPE_OK) return st;
    if ((st = shape_rule_transpose(OP_TRANSPOSE, in, x, sp, &t, err)) != SHAPE_OK) return st;
    return shape_rule_matmul(OP_MATMUL, (Shape[]){ t, u }, x, sp, out, err);
  }
  case OP_MASKED:                         /* W * e: W's */
    *out = in[0];
    return SHAPE_OK;
  case OP_CROSSPROD: case OP_TCROSSPROD: {
    Shape t;
    st = shape_rule_transpose(OP_TRANSPOSE, in, x, sp, &t, err);
    if (st != SHAPE_OK) return st;
    Shape ab[2] = { op == OP_CROSSPROD ? t : in[0], op == OP_CROSSPROD ? in[0] : t };
    return shape_rule_matmul(OP_MATMUL, ab, x, sp, out, err);
  }
  default: break;
  }
  st = shape_rule_matmul(OP_MATMUL, in, x, sp, out, err);
  if (st != SHAPE_OK || out->kind != SK_MAT) return st;
  r = out->rows;
  c = out->cols;
  if (op == OP_ROWSUMSPROD) *out = shape_mat(r, 1);
  else if (op == OP_COLSUMSPROD) *out = shape_mat(1, c);
  else if (op == OP_DIAGPROD) *out = shape_mat(r >= 0 ? r : c, 1);
  return SHAPE_OK;
}
