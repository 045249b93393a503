/*
** ops/matmul.c — the matrix product of the linear-algebra family: one GEMM per product on the
** backend where the operands live (transposed views read with the transpose flag, never
** copied), and OP_SUMPROD, sum(X %*% Y) without the product (staging's rewrite).
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "ops/family.h"
#include "ops/rules.h"
#include "ops/shapes_impl.h"

static Value TMP(Interp *I, Value v) { tmp_push(I, v); return v; }   /* owned temp, freed by the caller's mark */

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

Value mm_matmul(Interp *I, Value a, Value b, Span sp) {
  int64_t ra = a.t == VT_MAT ? tensor_rows(a.u.m) : 1, ca = a.t == VT_MAT ? tensor_cols(a.u.m) : 1;
  int64_t rb = b.t == VT_MAT ? tensor_rows(b.u.m) : 1, cb = b.t == VT_MAT ? tensor_cols(b.u.m) : 1;
  if ((a.t != VT_MAT && !is_numlike(a))) op_bad_operand(I, OP_MATMUL, a, sp);
  if ((b.t != VT_MAT && !is_numlike(b))) op_bad_operand(I, OP_MATMUL, b, sp);
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
  op_align(I, ab, 2);
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
  if (op_abstract_in((Tensor *[]){ A, B }, 2)) op_abstract_stop(I, OP_MATMUL, sp);
  I->kernel_runs++;
  Tensor *C = tensor_new_on(I, be_place(I->cpu, I->device, (Tensor *[]){ A, B }, 2), m, n);
  const Backend *be = NULL;
  int rc = op_gemm_into(I, ta, tb, A, B, C, &be);
  if (I->interrupted) { tensor_free_ref(C); interp_check_interrupt(I, sp); }   /* stopped between panels */
  if (rc != 0) {
    tensor_free_ref(C);
    if (be->error) mls_throw(I, sp, "matrix product failed on the %s backend: %s", be->name, be->error(be));
    mls_throw(I, sp, "matrix product failed on the %s backend", be->name);
  }
  return C;
}

int op_gemm_into(Interp *I, bool ta, bool tb, Tensor *A, Tensor *B, Tensor *C, const Backend **ran) {
  int64_t m = ta ? tensor_cols(A) : tensor_rows(A), n = tb ? tensor_rows(B) : tensor_cols(B);
  int64_t k = ta ? tensor_rows(A) : tensor_cols(A);
  const Backend *be = be_runner(I->cpu, OP_MATMUL, C, (Tensor *[]){ A, B }, 2, &I->be_fallbacks);
  *ran = be;
  Tensor va, vb;
  if (vector_view(A, ta, m, k, &va)) { A = &va; ta = false; }
  if (vector_view(B, tb, k, n, &vb)) { B = &vb; tb = false; }
  return be->gemm(be, ta, tb, 1.0, A, B, 0.0, C);
}

/* OP_SUMPROD: sum(X %*% Y) without the product, sum(t(colSums(X)) * rowSums(Y)) (staging's
** rewrite), unless that is not finite: then the product's sum, so the rewrite keeps eager's
** result where eager's is finite (sum([1e308; 1e308] %*% [1, -1]) is 0, not Inf * 0). A
** non-conformable pair is the product's error. The result (a number) is owned. */
Value op_sumprod(Interp *I, Value x, Value y, Span sp) {
  int mark = I->ntmp;
  Value px = ad_primal(x), py = ad_primal(y);
  int64_t xc = px.t == VT_MAT ? tensor_cols(px.u.m) : 1, yr = py.t == VT_MAT ? tensor_rows(py.u.m) : 1;
  Value r;
  if (xc == yr) {
    Value cs = op_transpose(I, TMP(I, op_reduce(I, OP_COLSUMS, x, sp)), sp);
    tmp_push(I, cs);
    Value rs = TMP(I, op_reduce(I, OP_ROWSUMS, y, sp));
    r = op_reduce(I, OP_SUM, TMP(I, op_binary(I, OP_MUL, cs, rs, sp)), sp);
    Value pr = ad_primal(r);
    double v = pr.t == VT_NUM ? pr.u.n : pr.t == VT_MAT ? tensor_data(pr.u.m)[0] : 0;
    if (isfinite(v)) { tmp_release_to(I, mark); return r; }
    val_release(r);
  }
  r = op_reduce(I, OP_SUM, TMP(I, op_matmul(I, x, y, sp)), sp);
  tmp_release_to(I, mark);
  return r;
}

/* The entry point (ops.h). */
Value op_matmul(Interp *I, Value a, Value b, Span sp) { return op_enter(I, OP_MATMUL, 2, (Value[]){ a, b }, 0, NULL, sp); }

/* ---- derivative rules (ops/rules.h): the product and the sum of a product ---- */
void mm_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  Span sp = r->sp;
  Value a = r->in[0], b = r->in[1];
  if (r->op == OP_MATMUL) {
    if (!ad_any_active(3, (Value[]){ a, b, g })) {   /* nothing records this: GEMM's T flags, no copies */
      Value pa = ad_primal(a), pb = ad_primal(b), pg = ad_primal(g);   /* (boxes of finished tapes) */
      if (r->want[0]) gin[0] = rl_sum_to(I, rl_matmul_t(I, pg, false, pb, true, sp), a, sp);
      if (r->want[1]) gin[1] = rl_sum_to(I, rl_matmul_t(I, pa, true, pg, false, sp), b, sp);
      return;
    }
    if (r->want[0]) gin[0] = rl_sum_to(I, rl_mm(I, g, rl_tp(I, b, sp), sp), a, sp);
    if (r->want[1]) gin[1] = rl_sum_to(I, rl_mm(I, rl_tp(I, a, sp), g, sp), b, sp);
    return;
  }
  if (r->op == OP_SUMPROD) {                /* d sum(X Y) / dX = rowSums(Y)' in every row; dY likewise */
    bool na, nb;
    int64_t ar, ac, br, bc;
    rl_shape(a, &na, &ar, &ac);
    rl_shape(b, &nb, &br, &bc);
    if (r->want[0]) gin[0] = rl_sum_to(I, B2(OP_MULZ, g, B2(OP_MUL, rl_ones(I, ar, ac),
                                                          rl_tp(I, T(I, op_reduce(I, OP_ROWSUMS, b, sp)), sp))), a, sp);
    if (r->want[1]) gin[1] = rl_sum_to(I, B2(OP_MULZ, g, B2(OP_MUL, rl_ones(I, br, bc),
                                                          rl_tp(I, T(I, op_reduce(I, OP_COLSUMS, a, sp)), sp))), b, sp);
    return;
  }
  rl_no_rule(I, r->op, false, sp);
}

Value mm_jvp(Interp *I, const RuleArgs *r, const Value *tin) {   /* both bilinear */
  Span sp = r->sp;
  Value a = r->in[0], b = r->in[1], ta = tin[0], tb = tin[1];
  if (r->op == OP_MATMUL)
    return rl_tadd(I, ta.t == VT_NULL ? ta : rl_mm(I, ta, b, sp), tb.t == VT_NULL ? tb : rl_mm(I, a, tb, sp), sp);
  if (r->op == OP_SUMPROD)
    return rl_tadd(I, ta.t == VT_NULL ? ta : T(I, op_sumprod(I, ta, b, sp)),
                   tb.t == VT_NULL ? tb : T(I, op_sumprod(I, a, tb, sp)), sp);
  rl_no_rule(I, r->op, true, sp);
}

/* ---- shape rules (ops/shapes_impl.h): the checks above on shapes alone, same messages ---- */
ShapeStatus shape_rule_matmul(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape a = in[0], b = in[1];
  Chk k;
  chk_init(&k, err);
  (void)x;
  sh_need_matlike(&k, op, a, sp);
  sh_need_matlike(&k, op, b, sp);
  if (k.failed) return chk_status(&k);
  int64_t ra, ca, rb, cb;
  sh_dims(a, &ra, &ca);
  sh_dims(b, &rb, &cb);
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
ShapeStatus shape_rule_sumprod(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  ShapeStatus st = shape_rule_matmul(op, in, x, sp, out, err);
  if (st == SHAPE_OK) *out = shape_num_unknown();
  return st;
}
