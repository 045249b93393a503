/*
** sparse.c — the sparse case of the op families (docs/sparse.md): op_kernel hands an op here
** when an operand is a sparse matrix (or --sparse always is on), and it runs the sparse kernel
** of backend/sparse.h when there is one for these operands, choosing the result's format by
** tensor_prefer_sparse; otherwise the sparse operands are densified for this op only (copies:
** the operands stay sparse) and the dense kernel runs. Either way the values are the dense
** op's. Arguments borrowed, results owned (+1), temporaries on the temp stack.
*/
#include <float.h>
#include <math.h>
#include <string.h>
#include "backend/scalar.h"
#include "backend/sparse.h"
#include "backend/vmath.h"
#include "mem.h"
#include "ops/family.h"
#include "ops/linalg.h"

static bool is_sp(Value v) { return v.t == VT_MAT && tensor_is_sparse(v.u.m); }
/* A dense matrix the host can read: on the CPU, or a device's managed memory (a mixed op runs on
** the CPU, be_place: reading waits for the device; the result is the CPU's). */
static bool is_dense_host(Value v) { return v.t == VT_MAT && !v.u.m->st->sparse && !v.u.m->st->abstract; }

/* A number, or a 1x1 matrix on the host: its value in *s. */
static bool as_scalar(Value v, double *s) {
  if (is_numlike(v)) { *s = numv(v); return true; }
  if (v.t == VT_MAT && tensor_numel(v.u.m) == 1 && !v.u.m->st->dev && !v.u.m->st->abstract) {
    *s = tensor_get(v.u.m, 0, 0);
    return true;
  }
  return false;
}

/* A kernel stopped by Ctrl-C leaves its output unfinished (cpu_parallel_for skips parts): the
** output t (owned) is freed and the interrupt raised. */
static void sp_check(Interp *I, Tensor *t) {
  if (!I->interrupted) return;
  if (t) tensor_free_ref(t);
  interp_check_interrupt(I, I->call_span);
}

/* The op's sparse result t (owned) in the format the rule picks for its nonzeros. */
static Value sp_result(Interp *I, Tensor *t, OpKind op) {
  sp_check(I, t);
  t->logical = (op_info[op].flags & OPF_CMP) != 0;
  bool logical = t->logical;
  t = tensor_auto_format(I, t);
  t->logical = logical;
  return val_mat(t);
}

/* The operand as a packed host matrix (borrowed when it already is one; else a copy on tmp). */
static Tensor *packed(Interp *I, Tensor *t) {
  if (tensor_is_contiguous(t)) return t;
  Tensor *c = tensor_clone(I, t);
  tmp_push(I, val_mat(c));
  return c;
}

/* Whether z, an op's value at an unstored cell, may stay unstored: 0 (NaN is not), and under
** SPARSE_EXACT +0 only (densely -X has -0 there; docs/sparse.md's one exception elsewhere). */
static bool zero_ok(const Interp *I, double z) { return z == 0 && (I->sparse_mode != SPARSE_EXACT || !signbit(z)); }

/* Whether every value of the dense d (n values) gives zero_ok's 0 with the sparse operand's 0
** (sparse_left: the sparse operand is the left one): its unstored zeros stay unstored. */
static bool zeros_stay(const Interp *I, OpKind op, const double *d, int64_t n, bool sparse_left) {
  for (int64_t k = 0; k < n; k++) {
    double z = sparse_left ? sc_binary(op, 0.0, d[k]) : sc_binary(op, d[k], 0.0);
    if (!zero_ok(I, z)) return false;
  }
  return true;
}

static bool all_finite_csr(const SpCsr *c) {
  for (int64_t k = 0; k < c->nnz; k++)
    if (!isfinite(c->val[k])) return false;
  return true;
}

/* ---- elementwise ---- */
static bool sp_unary(Interp *I, OpKind op, Value a, Value *r) {
  if (!is_sp(a)) return false;
  double z = sc_unary(op, 0.0);
  if (!zero_ok(I, z)) return false;          /* f(0) != 0: a dense result */
  const SpCsr *c = tensor_csr(a.u.m);
  Tensor *o = tensor_sparse_new(I, c->rows, c->cols, c->nnz);
  spk_unary(I->cpu, op, c, tensor_csr(o));
  *r = sp_result(I, o, op);
  return true;
}

static bool sp_binary(Interp *I, OpKind op, Value a, Value b, Value *r) {
  double s;
  int mark = I->ntmp;
  bool sa = is_sp(a), sb = is_sp(b);
  if (sa && !sb && as_scalar(b, &s)) {               /* X op s */
    if (!zero_ok(I, sc_binary(op, 0.0, s))) return false;
    const SpCsr *c = tensor_csr(a.u.m);
    Tensor *o = tensor_sparse_new(I, c->rows, c->cols, c->nnz);
    spk_scalar(I->cpu, op, c, s, false, tensor_csr(o));
    *r = sp_result(I, o, op);
    return true;
  }
  if (sb && !sa && as_scalar(a, &s)) {               /* s op X */
    if (!zero_ok(I, sc_binary(op, s, 0.0))) return false;
    const SpCsr *c = tensor_csr(b.u.m);
    Tensor *o = tensor_sparse_new(I, c->rows, c->cols, c->nnz);
    spk_scalar(I->cpu, op, c, s, true, tensor_csr(o));
    *r = sp_result(I, o, op);
    return true;
  }
  if (sa && sb) {                                    /* the union of the patterns */
    const SpCsr *x = tensor_csr(a.u.m), *y = tensor_csr(b.u.m);
    if (x->rows != y->rows || x->cols != y->cols || !zero_ok(I, sc_binary(op, 0.0, 0.0))) return false;
    Tensor *o = tensor_sparse_new(I, x->rows, x->cols, 1);
    tmp_push(I, val_mat(o));
    int64_t n = spk_union_count(I->cpu, x, y, tensor_csr(o)->rowptr);
    tensor_sparse_reserve(I, o, n);
    spk_union(I->cpu, op, x, y, tensor_csr(o));
    tmp_pop(I, 1);
    *r = sp_result(I, o, op);
    return true;
  }
  /* a sparse matrix and a dense one of its shape, or a dense row or column broadcast along it */
  Value sv = sa ? a : b, dv = sa ? b : a;
  if (!(sa || sb) || !is_dense_host(dv)) return false;
  const SpCsr *x = tensor_csr(sv.u.m);
  Tensor *d = dv.u.m;
  int64_t dr = tensor_rows(d), dc = tensor_cols(d);
  BcastMode bc;
  if (dr == x->rows && dc == x->cols) bc = BC_FULL;
  else if (dr == 1 && dc == x->cols) bc = BC_ROW;
  else if (dc == 1 && dr == x->rows) bc = BC_COL;
  else return false;                                 /* a broadcast the other way, or an error */
  d = packed(I, d);
  const double *dd = tensor_data(d);
  if (!zeros_stay(I, op, dd, tensor_numel(d), sa)) { tmp_release_to(I, mark); return false; }
  Tensor *o = tensor_sparse_new(I, x->rows, x->cols, x->nnz);
  spk_dense_pattern(I->cpu, op, x, dd, dc, bc, !sa, tensor_csr(o));
  tmp_release_to(I, mark);
  *r = sp_result(I, o, op);
  return true;
}

/* ---- products ---- */
/* A dense product C (owned) the kernel wrote: the temporaries above mark released, C in *r. */
static bool product_done(Interp *I, Tensor *C, int mark, Value *r) {
  tmp_release_to(I, mark);
  sp_check(I, C);
  I->kernel_runs++;
  *r = val_mat(C);
  return true;
}

/* ---- on a device (Backend spmm: cuSPARSE, the simulated GPU; docs/sparse.md "On the GPU") ---- */
/* The device of d, a dense matrix there, when that device runs products with a sparse operand;
** else NULL (the CPU kernels run, reading d where it lives). */
static const Backend *sp_device(Value d) {
  if (d.t != VT_MAT || d.u.m->st->sparse || d.u.m->st->abstract || !d.u.m->st->dev) return NULL;
  const Backend *be = d.u.m->st->be;
  return be->spmm && be->spmm_free ? be : NULL;
}

/* The product of form (backend.h SPMM_*) of the sparse matrix of storage st (borrowed) and the
** dense D on its device be, rows x cols, run there into *r (+1, on be). false, nothing done, when
** D holds an Inf or a NaN (or its sum overflows): the CPU kernels then give the dense product's
** NaN where an unstored 0 meets one, which cuSPARSE, adding the stored products only, does not.
** The device copy of st's CSR is kept on st (csr_dev), so a loop over the same matrix uploads it
** once. A device failure is a located error. */
static bool sp_dev_matmul(Interp *I, const Backend *be, Storage *st, int form, Tensor *D, int64_t rows, int64_t cols,
                          Value *r) {
  int mark = I->ntmp;
  Tensor *B = D;
  if (B->stride[1] != 1 && tensor_cols(B) > 1) {   /* a transposed view: packed on the device */
    B = tensor_contiguous(I, B);
    tmp_push(I, val_mat(B));
  }
  if (tensor_numel(B) > 0) {                       /* one reduction on the device, one number read */
    Tensor *s = op_run1(I, OP_SUM, B, 1, 1, I->call_span);
    double v = tensor_get1(s, 0, 0);           /* (8 bytes copied, not the page moved) */
    tensor_free_ref(s);
    if (!isfinite(v)) { tmp_release_to(I, mark); return false; }
  }
  Tensor *C = tensor_new_on(I, be, rows, cols);
  tmp_push(I, val_mat(C));
  if (st->csr_dev && st->csr_dev_be != be) tensor_csr_dev_free(st);
  void *dev = st->csr_dev;
  int rc = be->spmm(be, &dev, st->csr, form, B, C);
  if (dev && !st->csr_dev) {                       /* made by this call: st keeps it, holding be */
    st->csr_dev = dev;
    st->csr_dev_be = be;
    be_hold(be);
  }
  if (rc != 0)
    mls_throw(I, I->call_span, "the %s backend failed running '%%*%%' with a sparse operand: %s", be->name,
              be->error ? be->error(be) : "unknown error");
  C->refcount++;
  return product_done(I, C, mark, r);
}

/* The CPU product C (owned) when its dense operand lives on a device be: moved there (+1), so that
** a product's result lives where its dense operand does, whichever kernel ran. */
static Tensor *sp_to_device(Interp *I, Tensor *C, const Backend *be) {
  if (!be) return C;
  tmp_push(I, val_mat(C));
  Tensor *o = tensor_to(I, C, be);
  tmp_pop(I, 1);
  tensor_free_ref(C);
  return o;
}

static bool sp_matmul(Interp *I, Value a, Value b, Value *r, Span sp) {
  bool sa = is_sp(a), sb = is_sp(b);
  if (a.t != VT_MAT || b.t != VT_MAT) return false;
  int64_t ra = tensor_rows(a.u.m), ca = tensor_cols(a.u.m), rb = tensor_rows(b.u.m), cb = tensor_cols(b.u.m);
  if (ca != rb)
    mls_throw(I, sp, "non-conformable arguments for '%%*%%': %lldx%lld and %lldx%lld", (long long)ra, (long long)ca,
              (long long)rb, (long long)cb);
  int mark = I->ntmp;
  if (sa && sb) {
    const SpCsr *x = tensor_csr(a.u.m), *y = tensor_csr(b.u.m);
    if (!all_finite_csr(x) || !all_finite_csr(y)) return false;     /* 0 * Inf: the dense product's NaN */
    Tensor *o = tensor_sparse_new(I, ra, cb, 1);
    tmp_push(I, val_mat(o));
    int64_t n = spk_spgemm_count(I->cpu, x, y, tensor_csr(o)->rowptr);
    if (n < 0) mem_oom(0);
    if (tensor_prefer_sparse(I, ra, cb, n)) {
      tensor_sparse_reserve(I, o, n);
      if (spk_spgemm(I->cpu, x, y, tensor_csr(o)) != 0) mem_oom(0);
      tmp_pop(I, 1);
      *r = sp_result(I, o, OP_MATMUL);
      I->kernel_runs++;
      return true;
    }
    b = val_mat(tensor_densify(I, b.u.m));         /* a dense result: X %*% dense(Y), no CSR of it */
    tmp_push(I, b);
  }
  const Backend *dev = sa && !sb ? sp_device(b) : sb && !sa ? sp_device(a) : NULL;
  if (dev && sa && sp_dev_matmul(I, dev, a.u.m->st, SPMM_SB, b.u.m, ra, cb, r)) return true;
  if (dev && sb && sp_dev_matmul(I, dev, b.u.m->st, SPMM_BS, a.u.m, ra, cb, r)) return true;
  if (sa && is_dense_host(b)) {
    Tensor *B = b.u.m;
    if (B->stride[1] != 1 && cb > 1) B = packed(I, B);
    Tensor *C = tensor_new_host(I, ra, cb);
    spk_spmm(I->cpu, tensor_csr(a.u.m), tensor_data(B), B->stride[0], cb, tensor_data(C));
    return product_done(I, sp_to_device(I, C, dev), mark, r);
  }
  if (sb && is_dense_host(a)) {
    Tensor *A = a.u.m;
    if (A->stride[1] != 1 && ca > 1) A = packed(I, A);
    Tensor *C = tensor_new_host(I, ra, cb);
    spk_dsmm(I->cpu, tensor_data(A), A->stride[0], ra, tensor_csr(b.u.m), tensor_data(C));
    return product_done(I, sp_to_device(I, C, dev), mark, r);
  }
  return false;
}

/* a %*% b with a a sparse t(S) view (tensor_is_sparse_t) and b dense in host memory, into *r
** (+1): CSR's transposed product, t(S) never formed. false (nothing done) for other operands. */
static bool sp_matmul_tn(Interp *I, Value a, Value b, Value *r) {
  if (a.t != VT_MAT || !tensor_is_sparse_t(a.u.m) || !is_dense_host(b) || I->sparse_mode == SPARSE_EXACT) return false;
  const SpCsr *c = tensor_csr(a.u.m);
  Tensor *B = b.u.m;
  if (tensor_rows(B) != c->rows) return false;     /* the dense path's error */
  int mark = I->ntmp;
  int64_t n = tensor_cols(B);
  const Backend *dev = sp_device(b);
  if (dev && sp_dev_matmul(I, dev, a.u.m->st, SPMM_TB, B, c->cols, n, r)) return true;
  if (B->stride[1] != 1 && n > 1) B = packed(I, B);
  Tensor *C = tensor_new_host(I, c->cols, n);
  tmp_push(I, val_mat(C));                         /* (freed by a throw) */
  if (spk_spmm_t(I->cpu, c, tensor_data(B), B->stride[0], n, tensor_data(C)) != 0) mem_oom(0);
  tmp_pop(I, 1);
  return product_done(I, sp_to_device(I, C, dev), mark, r);
}

/* ---- shape and reductions ---- */
static bool sp_transpose(Interp *I, Value a, Value *r) {
  if (!is_sp(a)) return false;
  const SpCsr *c = tensor_csr(a.u.m);
  if (c->rows > 1 && c->cols > 1) {                /* a view (tensor_is_sparse_t), made in O(1) */
    *r = val_mat(tensor_view_t(a.u.m));
    return true;
  }
  Tensor *o = tensor_sparse_new(I, c->cols, c->rows, c->nnz);
  spk_transpose(c, tensor_csr(o));
  sp_check(I, o);
  o->logical = a.u.m->logical;
  *r = val_mat(o);
  return true;
}

static bool sp_reduce(Interp *I, OpKind op, Value a, Value *r) {
  if (!is_sp(a)) return false;
  const SpCsr *c = tensor_csr(a.u.m);
  if (c->rows == 0 || c->cols == 0) return false;   /* the dense op's checks and values */
  if (I->sparse_mode == SPARSE_EXACT && op != OP_SUM && op != OP_ROWSUMS && op != OP_COLSUMS)
    for (int64_t q = 0; q < c->nnz; q++)            /* a stored +-0 ties with the unstored +0s: */
      if (c->val[q] == 0) return false;             /* which one max gives is the dense order's */
  Tensor *o;
  switch (op) {
  case OP_SUM: *r = val_num(spk_sum(I->cpu, c)); sp_check(I, NULL); return true;
  case OP_MAX: case OP_MIN: {
    double v;
    spk_extreme(I->cpu, op, c, &v);
    sp_check(I, NULL);
    *r = val_num(v);
    return true;
  }
  case OP_ROWSUMS: o = tensor_new_host(I, c->rows, 1); spk_row_sums(I->cpu, c, tensor_data(o)); break;
  case OP_COLSUMS: o = tensor_new_host(I, 1, c->cols); spk_col_sums(c, tensor_data(o)); break;
  case OP_ROWMAXS: case OP_ROWMINS: o = tensor_new_host(I, c->rows, 1); spk_extreme(I->cpu, op, c, tensor_data(o)); break;
  case OP_COLMAXS: case OP_COLMINS: o = tensor_new_host(I, 1, c->cols); spk_extreme(I->cpu, op, c, tensor_data(o)); break;
  default: return false;
  }
  sp_check(I, o);
  *r = val_mat(o);
  return true;
}

/* ifelse(test, yes, no) with sparse test and no of one shape: test's stored nonzeros choose yes,
** the rest of no's pattern stays (the staged X[i, j] = v: ifelse(hit, put, X), all sparse). */
static bool sp_ifelse_merge(Interp *I, Value test, Value yes, Value no, Value *r) {
  const SpCsr *t = tensor_csr(test.u.m), *n = tensor_csr(no.u.m);
  double ys = 0;
  bool ynum = as_scalar(yes, &ys);
  if (n->rows != t->rows || n->cols != t->cols ||
      (!ynum && !(yes.t == VT_MAT && !yes.u.m->st->abstract && tensor_rows(yes.u.m) == t->rows &&
                  tensor_cols(yes.u.m) == t->cols)))
    return false;
  Tensor *o = tensor_sparse_new(I, t->rows, t->cols, t->nnz + n->nnz);
  SpCsr *c = tensor_csr(o);
  int64_t w = 0;
  for (int64_t i = 0; i < t->rows; i++) {
    c->rowptr[i] = w;
    int64_t p = t->rowptr[i], pe = t->rowptr[i + 1], q = n->rowptr[i], qe = n->rowptr[i + 1];
    while (p < pe || q < qe) {
      int64_t j = p < pe && (q >= qe || t->col[p] <= n->col[q]) ? t->col[p] : n->col[q];
      bool in_t = p < pe && t->col[p] == j, in_n = q < qe && n->col[q] == j;
      double tv = in_t ? t->val[p] : 0, nv = in_n ? n->val[q] : 0;
      double x = tv != tv ? NAN : tv != 0 ? (ynum ? ys : tensor_cell(yes.u.m, i, j)) : nv;
      if (in_t || in_n) { c->col[w] = (int32_t)j; c->val[w++] = x; }
      p += in_t;
      q += in_n;
    }
  }
  c->rowptr[t->rows] = w;
  c->nnz = w;
  *r = sp_result(I, o, OP_IFELSE);
  return true;
}

/* ifelse(test, yes, 0) with a sparse test: nonzero only where test is stored (a mask). */
static bool sp_ifelse(Interp *I, Value test, Value yes, Value no, Value *r) {
  double z, ys = 0;
  if (is_sp(test) && is_sp(no)) return sp_ifelse_merge(I, test, yes, no, r);
  if (!is_sp(test) || !as_scalar(no, &z) || z != 0 || signbit(z)) return false;
  const SpCsr *t = tensor_csr(test.u.m);
  bool ynum = as_scalar(yes, &ys);
  if (!ynum && !(yes.t == VT_MAT && !yes.u.m->st->dev && !yes.u.m->st->abstract &&
                 tensor_rows(yes.u.m) == t->rows && tensor_cols(yes.u.m) == t->cols))
    return false;                                  /* a broadcast yes, or an error: the dense op */
  Tensor *o = tensor_sparse_new(I, t->rows, t->cols, t->nnz);
  SpCsr *c = tensor_csr(o);
  spk_copy(t, c);                                  /* test's pattern; the values chosen below */
  for (int64_t i = 0; i < t->rows; i++)
    for (int64_t q = t->rowptr[i]; q < t->rowptr[i + 1]; q++) {
      double tv = t->val[q];
      c->val[q] = tv != tv ? NAN : tv == 0 ? 0.0 : ynum ? ys
                : tensor_cell(yes.u.m, i, t->col[q]);
    }
  *r = sp_result(I, o, OP_IFELSE);
  return true;
}

/* ---- linear algebra through CHOLMOD and UMFPACK ---- */
/* Whether the sparse square c equals its transpose exactly (a scratch transpose). */
static bool symmetric(Interp *I, const SpCsr *c) {
  if (c->rows != c->cols) return false;
  Tensor *t = tensor_sparse_new(I, c->cols, c->rows, c->nnz);
  tmp_push(I, val_mat(t));
  const SpCsr *tc = tensor_csr(t);
  spk_transpose(c, tensor_csr(t));
  bool same = !memcmp(c->rowptr, tc->rowptr, (size_t)(c->rows + 1) * sizeof(int64_t)) &&
              !memcmp(c->col, tc->col, (size_t)c->nnz * sizeof(int32_t)) &&
              !memcmp(c->val, tc->val, (size_t)c->nnz * sizeof(double));
  tmp_pop(I, 1);
  tensor_free_ref(t);
  return same;
}

/* The factorizations run on a worker thread (la_call, ops/linalg.c): CHOLMOD and UMFPACK cannot
** be stopped part-way and their cost is not known before their own analysis (the factor's fill),
** so every one that could pass la_call's threshold runs there, bounded by the dense LU's
** (2/3) n^3 flops (full fill), and Ctrl-C ends the op at once while the worker finishes alone
** (its memory is held until then). Below it (n < 1145 at the default 1e9 flops) a thread would
** cost more than the factorization (about 100 us a call). The worker reads a private copy of A's CSR, not A's storage, which code written for
** dense matrices may turn dense in place (tensor_host_access) once the interrupted op has unwound;
** the copy and what the factorization made belong to the SpFact, freed with it (sp_fact_free) by
** the op, or by the job when the op was interrupted. */
typedef enum SpFactKind { SF_LU, SF_LU_DET, SF_CHOL_SOLVE, SF_CHOL } SpFactKind;

typedef struct SpFact {
  SpFactKind kind;
  SpCsr A;                      /* the copy: rowptr, col, val of its own */
  uint64_t charged;             /* the copy's bytes, counted against --max-memory */
  const double *B;              /* SF_CHOL_SOLVE: X (n x k) = A^-1 B (B: ldb), in tensors the job holds */
  double *X;
  int64_t ldb, k;
  int status;                   /* 0; 1 singular (LU) or not positive definite (CHOL); -1 out of memory */
  int64_t zero_at;              /* SF_LU, status 1: the zero pivot (spk_lu_factor) */
  double rcond;                 /* SF_LU: spk_lu_rcond (< 0: a solve failed) */
  double det;                   /* SF_LU_DET */
  int64_t nnz;                  /* SF_CHOL: the factor's entries */
  SpLu *lu;                     /* SF_LU: the factor, for the op's solves */
  SpChol *chol;                 /* SF_CHOL */
} SpFact;

static void sp_fact_free(void *p) {
  SpFact *f = p;
  spk_lu_free(f->lu);
  spk_chol_free(f->chol);
  mem_free(f->A.rowptr);
  mem_free(f->A.col);
  mem_free(f->A.val);
  mem_uncharge(f->charged);
  mem_free(f);
}

/* The worker's part (no throw, no interpreter). */
static void sp_fact_run(void *p) {
  SpFact *f = p;
  switch (f->kind) {
  case SF_LU:
    f->lu = spk_lu_factor(&f->A, &f->status, &f->zero_at);
    if (f->lu) f->rcond = spk_lu_rcond(f->lu);
    break;
  case SF_LU_DET: {
    SpLu *h = spk_lu_factor(&f->A, &f->status, &f->zero_at);
    f->det = 0;                                 /* singular (a zero pivot): exactly 0, as dgetrf's */
    if (f->status == 1) f->status = 0;
    else if (h && spk_lu_det(h, &f->det) != 0) f->status = -1;
    spk_lu_free(h);
    break;
  }
  case SF_CHOL_SOLVE: f->status = spk_chol_solve(&f->A, f->B, f->ldb, f->k, f->X); break;
  case SF_CHOL: f->chol = spk_chol_factor(&f->A, &f->status, &f->nnz); break;
  }
}

/* Factorization kind of A (sparse, square, finite) on the worker, with f's other inputs set by
** init (NULL: none); hold0, hold1: the tensors they point into. The SpFact comes back deferred
** (a throw frees it): the caller ends with sp_fact_done. */
static SpFact *sp_factor(Interp *I, Span sp, SpFactKind kind, const SpCsr *A, const SpFact *init, Tensor *hold0,
                         Tensor *hold1) {
  SpFact *f = mem_calloc(1, sizeof *f);
  if (init) *f = *init;
  f->kind = kind;
  mls_defer(I, sp_fact_free, f);
  int64_t n = A->rows, nz = A->nnz > 0 ? A->nnz : 1;
  uint64_t bytes = (uint64_t)(n + 1) * sizeof(int64_t) + (uint64_t)nz * (sizeof(int32_t) + sizeof(double));
  tensor_charge(I, bytes, "a sparse factorization's copy of its matrix");
  f->charged = bytes;
  f->A = (SpCsr){ .rows = n, .cols = A->cols, .nnz = A->nnz, .cap = nz };
  f->A.rowptr = mem_alloc((size_t)(n + 1) * sizeof(int64_t));
  f->A.col = mem_alloc((size_t)nz * sizeof(int32_t));
  f->A.val = mem_alloc((size_t)nz * sizeof(double));
  memcpy(f->A.rowptr, A->rowptr, (size_t)(n + 1) * sizeof(int64_t));
  memcpy(f->A.col, A->col, (size_t)A->nnz * sizeof(int32_t));
  memcpy(f->A.val, A->val, (size_t)A->nnz * sizeof(double));
  mls_undefer(I, f);
  I->kernel_runs++;
  double dn = (double)n;
  la_call(I, sp, 2 * dn * dn * dn / 3, sp_fact_run, sp_fact_free, f, hold0, hold1);
  mls_defer(I, sp_fact_free, f);
  return f;
}

static void sp_fact_done(Interp *I, SpFact *f) {
  mls_undefer(I, f);
  sp_fact_free(f);
}

/* The largest n whose singular or ill-conditioned sparse A is handed to the dense LU (n x n
** doubles: 128 MiB), so that its error is LAPACK's own, pivot for pivot and digit for digit. */
#define SP_LU_DENSE_ERRORS 4096

/* UMFPACK's LU of the sparse square A for solve and inv (name: the builtin called): its SpFact
** (deferred, as sp_factor's) when A is regular; NULL when the dense LU should decide (a small
** singular or ill-conditioned A). A larger singular or ill-conditioned A gets the dense path's
** errors, located at sp: the zero pivot is the sparse factor's (UMFPACK's pivot order), the
** condition number its estimate (dgecon's method). */
static SpFact *sp_lu(Interp *I, const SpCsr *A, const char *name, Span sp) {
  SpFact *f = sp_factor(I, sp, SF_LU, A, NULL, NULL, NULL);
  if (f->status < 0) mem_oom(0);
  bool small = A->rows <= SP_LU_DENSE_ERRORS;
  if (!f->lu) {
    if (small) { sp_fact_done(I, f); return NULL; }
    mls_throw(I, sp, "%s: the matrix is singular (U[%lld,%lld] is exactly zero)", name, (long long)f->zero_at,
              (long long)f->zero_at);
  }
  if (f->rcond < 0) mem_oom(0);
  if (!(f->rcond >= DBL_EPSILON)) {
    if (small) { sp_fact_done(I, f); return NULL; }
    mls_throw(I, sp, "%s: the matrix is computationally singular (reciprocal condition number %.3g)", name, f->rcond);
  }
  return f;
}

/* X = A^-1 B by UMFPACK's LU of the sparse A (a non-symmetric or indefinite one): true with X
** filled, false when the dense LU should decide (sp_lu). The solves run here, one column at a
** time, Ctrl-C seen between columns. */
static bool sp_lu_solve(Interp *I, const SpCsr *A, const double *B, int64_t bc, double *X, Span sp) {
  SpFact *f = sp_lu(I, A, "solve", sp);
  if (!f) return false;
  for (int64_t j = 0; j < bc; j++) {
    if (I->interrupted) interp_check_interrupt(I, sp);
    if (spk_lu_solve(f->lu, B + j, bc, 1, X + j, bc) != 0) mem_oom(0);
  }
  sp_fact_done(I, f);
  return true;
}

/* solve(A, B) with a sparse square A: CHOLMOD's Cholesky when A is symmetric positive definite,
** else UMFPACK's LU (sp_lu_solve); A is never dense. An A or B that is not finite takes the
** dense path and its errors. */
static bool sp_solve(Interp *I, Value a, Value b, Value *r, Span sp) {
  if (!is_sp(a) || !(is_dense_host(b) || is_sp(b) || is_numlike(b))) return false;
  const SpCsr *A = tensor_csr(a.u.m);
  int64_t n = A->rows, bc = b.t == VT_MAT ? tensor_cols(b.u.m) : 1, br = b.t == VT_MAT ? tensor_rows(b.u.m) : 1;
  if (n == 0 || A->cols != n || br != n || !all_finite_csr(A)) return false;
  int mark = I->ntmp;
  Tensor *B;
  if (b.t != VT_MAT) {
    B = tensor_new_host(I, 1, 1);
    tensor_data(B)[0] = numv(b);
    tmp_push(I, val_mat(B));
  } else {
    B = tensor_is_sparse(b.u.m) ? tensor_densify(I, b.u.m) : tensor_contiguous(I, b.u.m);
    tmp_push(I, val_mat(B));
  }
  const double *bd = tensor_data(B);
  for (int64_t q = 0; q < n * bc; q++)
    if (!isfinite(bd[q])) { tmp_release_to(I, mark); return false; }   /* LAPACK's path gives the error */
  Tensor *X = tensor_new_host(I, n, bc);
  tmp_push(I, val_mat(X));
  int st = 1;
  if (symmetric(I, A)) {                         /* the job holds B and X (an interrupt leaves them to it) */
    SpFact in = { .B = bd, .X = tensor_data(X), .ldb = bc, .k = bc };
    SpFact *f = sp_factor(I, sp, SF_CHOL_SOLVE, A, &in, B, X);
    st = f->status;
    sp_fact_done(I, f);
  }
  if (st < 0) mem_oom(0);
  if (st > 0 && !sp_lu_solve(I, A, tensor_data(B), bc, tensor_data(X), sp)) {   /* not SPD: LU */
    tmp_release_to(I, mark);
    return false;
  }
  X->refcount++;
  tmp_release_to(I, mark);
  *r = val_mat(X);
  return true;
}

/* inv(A) of a sparse square finite A through UMFPACK's LU, row by row (row i of A^-1 is one solve,
** Ctrl-C seen between rows), into a sparse result while the rule keeps it sparse, else (from the
** row where its nonzeros pass the rule) a dense one. A is never dense; errors as sp_lu's. */
static bool sp_inv(Interp *I, Value a, const char *name, Value *r, Span sp) {
  if (!is_sp(a)) return false;
  const SpCsr *A = tensor_csr(a.u.m);
  int64_t n = A->rows;
  if (n == 0 || A->cols != n || !all_finite_csr(A)) return false;
  int mark = I->ntmp;
  SpFact *f = sp_lu(I, A, name, sp);
  if (!f) return false;
  double *x = tensor_scratch(I, (size_t)n * sizeof(double));
  Tensor *S = tensor_sparse_new(I, n, n, n), *D = NULL;
  tmp_push(I, val_mat(S));
  double *d = NULL;
  int64_t w = 0;
  for (int64_t i = 0; i < n; i++) {
    if (I->interrupted) interp_check_interrupt(I, sp);
    if (spk_lu_inv_row(f->lu, i, x) != 0) mem_oom(0);
    if (d) { memcpy(d + i * n, x, (size_t)n * sizeof(double)); continue; }
    int64_t cnt = 0;
    for (int64_t j = 0; j < n; j++) cnt += spk_stored(x[j]);
    SpCsr *c = tensor_csr(S);
    if (!tensor_prefer_sparse(I, n, n, w + cnt)) {   /* dense from here: the rows so far copied */
      D = tensor_new_host(I, n, n);
      tmp_push(I, val_mat(D));
      d = tensor_data(D);
      memset(d, 0, (size_t)(i * n) * sizeof(double));
      for (int64_t k = 0; k < i; k++)
        for (int64_t q = c->rowptr[k]; q < c->rowptr[k + 1]; q++) d[k * n + c->col[q]] = c->val[q];
      memcpy(d + i * n, x, (size_t)n * sizeof(double));
      continue;
    }
    if (w + cnt > c->cap) {
      tensor_sparse_reserve(I, S, w + cnt > 2 * c->cap ? w + cnt : 2 * c->cap);
      c = tensor_csr(S);
    }
    for (int64_t j = 0; j < n; j++)
      if (spk_stored(x[j])) { c->col[w] = (int32_t)j; c->val[w++] = x[j]; }
    c->rowptr[i + 1] = w;
    c->nnz = w;                                 /* (what tensor_sparse_reserve keeps) */
  }
  tensor_scratch_free(I, x);
  sp_fact_done(I, f);
  if (D) {
    D->refcount++;
    tmp_release_to(I, mark);
    *r = val_mat(D);
    return true;
  }
  S->refcount++;
  tmp_release_to(I, mark);
  *r = sp_result(I, S, OP_INV);
  return true;
}

/* det(A) of a sparse square finite A from UMFPACK's LU: the dense det's value (0 when a pivot is
** exactly zero, Inf or 0 only when it overflows or underflows); A is never dense. */
static bool sp_det(Interp *I, Value a, Value *r, Span sp) {
  if (!is_sp(a)) return false;
  const SpCsr *A = tensor_csr(a.u.m);
  if (A->rows == 0 || A->cols != A->rows || !all_finite_csr(A)) return false;
  SpFact *f = sp_factor(I, sp, SF_LU_DET, A, NULL, NULL, NULL);
  if (f->status < 0) mem_oom(0);
  double det = f->det;
  sp_fact_done(I, f);
  *r = val_num(det);
  return true;
}

/* cholesky(A) of a sparse symmetric positive definite A: CHOLMOD's L in the natural ordering
** (LAPACK's), sparse by the rule. Else the dense op and its errors. */
static bool sp_chol(Interp *I, Value a, Value *r, Span sp) {
  if (!is_sp(a)) return false;
  const SpCsr *A = tensor_csr(a.u.m);
  if (A->rows == 0 || !all_finite_csr(A) || !symmetric(I, A)) return false;
  SpFact *f = sp_factor(I, sp, SF_CHOL, A, NULL, NULL, NULL);
  if (!f->chol) {
    int st = f->status;
    sp_fact_done(I, f);
    if (st < 0) mem_oom(0);
    return false;                              /* not positive definite: the dense op's error */
  }
  Tensor *o = tensor_sparse_new(I, A->rows, A->cols, f->nnz);
  spk_chol_take(f->chol, tensor_csr(o));       /* (frees the handle) */
  f->chol = NULL;
  sp_fact_done(I, f);
  *r = sp_result(I, o, OP_CHOL);
  return true;
}

bool sp_linalg(Interp *I, OpKind op, const Value *in, const char *name, Value *r) {
  if (I->sparse_mode == SPARSE_EXACT) return false;      /* (CHOLMOD's bits are not LAPACK's) */
  switch (op) {
  case OP_SOLVE: return sp_solve(I, in[0], in[1], r, I->call_span);
  case OP_CHOL: return sp_chol(I, in[0], r, I->call_span);
  case OP_INV: return sp_inv(I, in[0], name, r, I->call_span);
  case OP_DET: return sp_det(I, in[0], r, I->call_span);
  default: return false;
  }
}

/* Whether op has a sparse kernel that --sparse always should exercise on dense operands. */
static bool sp_has_kernel(OpKind op) {
  int flags = op_info[op].flags;
  if (flags & OPF_EW) return op_info[op].arity == 2 || sc_unary(op, 0.0) == 0;
  switch (op) {
  case OP_MATMUL: case OP_TRANSPOSE: case OP_SUM: case OP_MAX: case OP_MIN: case OP_ROWSUMS: case OP_COLSUMS:
  case OP_ROWMAXS: case OP_ROWMINS: case OP_COLMAXS: case OP_COLMINS: case OP_IFELSE: case OP_DIAG:
    return true;                       /* (not solve, cholesky, inv, det: a factorization in another
                                       ** order differs in the last bits, which 1 / x of a value near
                                       ** 0 amplifies past any tolerance; sparse.test checks them) */
  default:
    return false;
  }
}

/* diag(X): a sparse square matrix's diagonal (a dense column); a sparse vector's diagonal matrix
** (sparse by the rule). */
static bool sp_diag(Interp *I, Value a, Value *r) {
  if (!is_sp(a)) return false;
  const SpCsr *c = tensor_csr(a.u.m);
  if (c->rows == c->cols && c->rows > 1) {
    Tensor *o = tensor_new_host(I, c->rows, 1);
    spk_diag(c, tensor_data(o));
    *r = val_mat(o);
    return true;
  }
  if (c->rows != 1 && c->cols != 1) return false;  /* (the dense op's error) */
  int64_t n = c->rows * c->cols;
  Tensor *o = tensor_sparse_new(I, n, n, c->nnz);
  SpCsr *d = tensor_csr(o);
  for (int64_t i = 0, q = 0; i < c->rows; i++)    /* entry k of the vector at (k, k) */
    for (int64_t p = c->rowptr[i]; p < c->rowptr[i + 1]; p++, q++) {
      int64_t k = c->rows == 1 ? c->col[p] : i;
      d->col[q] = (int32_t)k;
      d->val[q] = c->val[p];
      d->rowptr[k + 1] = 1;
    }
  for (int64_t k = 0; k < n; k++) d->rowptr[k + 1] += d->rowptr[k];
  d->nnz = c->nnz;
  *r = sp_result(I, o, OP_DIAG);
  return true;
}

/* Whether op's sparse kernel gives the dense kernel's bits: no sum in another order, no libmvec
** lanes falling elsewhere (SPARSE_EXACT runs only these sparse). */
static bool sp_exact(OpKind op) {
  switch (op) {
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) case OP_##NAME: return VEC == vm_none;
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) case OP_##NAME: return true;
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
  case OP_MAX: case OP_MIN: case OP_ROWMAXS: case OP_ROWMINS: case OP_COLMAXS: case OP_COLMINS:
  case OP_INDEX: case OP_DIAG: case OP_IFELSE:
    return true;                       /* (not t(): densely a view, whose product takes BLAS's
                                       ** transposed path and its own bits) */
  default:
    return false;
  }
}

static bool sp_try(Interp *I, OpKind op, const Value *in, int nextra, const Value *x, Value *r, Span sp) {
  int flags = op_info[op].flags;
  if ((flags & OPF_EW) && op_info[op].arity == 2) return sp_binary(I, op, in[0], in[1], r);
  if (flags & OPF_EW) return sp_unary(I, op, in[0], r);
  switch (op) {
  case OP_MATMUL: return sp_matmul(I, in[0], in[1], r, sp);
  case OP_DOT: case OP_ROWSUMSPROD: case OP_COLSUMSPROD: case OP_DIAGPROD: case OP_CROSSPROD: case OP_TCROSSPROD: case OP_XTWXV:
    *r = mm_product_form(I, op, in, sp);     /* its eager form, through the ops above */
    return true;
  case OP_SUMPROD:
    *r = op_sumprod(I, in[0], in[1], sp);
    return true;
  case OP_INDEX:                             /* index.c reads a sparse matrix's rows itself */
    *r = op_kernel_dense(I, op, false, in, nextra, x, sp);
    return true;
  case OP_DIAG: return sp_diag(I, in[0], r);
  case OP_IFELSE: return sp_ifelse(I, in[0], in[1], in[2], r);
  case OP_SOLVE: return sp_solve(I, in[0], in[1], r, sp);
  case OP_CHOL: return sp_chol(I, in[0], r, sp);
  case OP_INV: return sp_inv(I, in[0], op_info[op].sym, r, sp);
  case OP_DET: return sp_det(I, in[0], r, sp);
  case OP_TRANSPOSE: return sp_transpose(I, in[0], r);
  case OP_SUM: case OP_MAX: case OP_MIN: case OP_ROWSUMS: case OP_COLSUMS: case OP_ROWMAXS: case OP_ROWMINS:
  case OP_COLMAXS: case OP_COLMINS:
    return sp_reduce(I, op, in[0], r);
  default:
    return false;
  }
}

Value sp_kernel(Interp *I, OpKind op, bool lent, int nin, const Value *in, int nextra, const Value *x, Span sp) {
  for (int k = 0; k < nin; k++)                    /* an abstract trace's stand-in (tensor_abstract) */
    if (in[k].t == VT_MAT && in[k].u.m->st->abstract) op_abstract_stop(I, op, sp);
  int mark = I->ntmp;
  Value v[3];
  for (int k = 0; k < nin; k++) v[k] = in[k];
  bool exact_only = I->sparse_mode == SPARSE_EXACT;
  if (I->sparse_mode >= SPARSE_ALWAYS && sp_has_kernel(op) && (!exact_only || sp_exact(op)))   /* the test modes */
    for (int k = 0; k < nin; k++)
      if (is_dense_host(v[k]) && tensor_numel(v[k].u.m) >= 2 && tensor_cols(v[k].u.m) <= SP_MAX_COLS) {
        Tensor *s = tensor_sparsify(I, v[k].u.m);
        v[k] = val_mat(s);
        tmp_push(I, v[k]);
      }
  Value r;
  if (op == OP_MATMUL && sp_matmul_tn(I, v[0], v[1], &r)) {
    tmp_release_to(I, mark);
    return r;
  }
  bool any = false;
  for (int k = 0; k < nin; k++) any |= is_sp(v[k]);
  if (any && (!exact_only || sp_exact(op))) {
    Span saved = I->call_span;
    I->call_span = sp;
    bool done = sp_try(I, op, v, nextra, x, &r, sp);
    I->call_span = saved;
    if (done) { tmp_release_to(I, mark); return r; }
  }
  for (int k = 0; k < nin; k++)                    /* no sparse kernel: dense copies for this op */
    if (v[k].t == VT_MAT && v[k].u.m->st->sparse) {
      Tensor *d = tensor_densify(I, v[k].u.m);
      v[k] = val_mat(d);
      tmp_push(I, v[k]);
      lent = false;
    }
  r = op_kernel_dense(I, op, lent && I->ntmp == mark, v, nextra, x, sp);
  tmp_release_to(I, mark);
  return r;
}
