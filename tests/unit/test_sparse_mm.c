/*
** test_sparse_mm.c — the CSR conversions, transpose and products of src/backend/cpu_sparse_mm.c
** against naive dense loops: exact conversions, 1e-12 products, the dense NaN/Inf, thread-free bits.
*/
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "backend/cpu.h"
#include "backend/sparse.h"
#include "mem.h"

/* The CPU instance whose threads the kernels run on (backend.h; made by main). */
static Backend *cpu;

/* ---- helpers: a small LCG, dense matrices, CSR arrays (malloc, the test's own) ---- */

static uint64_t rng = 1;

static uint64_t rnd(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return rng >> 11;
}
static double unif(void) { return (double)(rnd() >> 1) / 4503599627370496.0; }   /* [0, 1) */

/* rows x cols (packed; caller frees) with about density of values in [-1, 1) \ {0}; every
** seventh row and fifth column empty when holes is set. */
static double *rand_dense(int64_t rows, int64_t cols, double density, bool holes) {
  double *d = calloc((size_t)(rows * cols > 0 ? rows * cols : 1), sizeof(double));
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) {
      if (holes && (i % 7 == 3 || j % 5 == 2)) continue;
      if (unif() < density) {
        double x = 2 * unif() - 1;
        d[i * cols + j] = x != 0 ? x : 0.5;
      }
    }
  return d;
}

static double *rand_full(int64_t n) {         /* n values in [-1, 1), zeros among them */
  double *d = malloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int64_t i = 0; i < n; i++) d[i] = rnd() % 9 == 0 ? 0.0 : 2 * unif() - 1;
  return d;
}

static SpCsr *csr_new(int64_t rows, int64_t cols, int64_t cap) {
  SpCsr *s = malloc(sizeof *s);
  s->rows = rows;
  s->cols = cols;
  s->nnz = 0;
  s->cap = cap;
  s->rowptr = malloc((size_t)(rows + 1) * sizeof(int64_t));
  s->col = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(int32_t));
  s->val = malloc((size_t)(cap > 0 ? cap : 1) * sizeof(double));
  return s;
}

static void csr_free(SpCsr *s) {
  free(s->rowptr);
  free(s->col);
  free(s->val);
  free(s);
}

/* spk_count_dense's number of d's stored values (its row pointers made in scratch). */
static int64_t count_dense(const double *d, int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  int64_t *rp = malloc((size_t)(rows + 1) * sizeof(int64_t));
  int64_t n = spk_count_dense(cpu, d, rows, cols, s0, s1, rp);
  free(rp);
  return n;
}

/* The CSR of d read at d[i * s0 + j * s1] (rows x cols), both steps into its own rowptr. */
static SpCsr *csr_of_strided(const double *d, int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  SpCsr *s = csr_new(rows, cols, count_dense(d, rows, cols, s0, s1));
  int64_t n = spk_count_dense(cpu, d, rows, cols, s0, s1, s->rowptr);
  spk_from_dense(cpu, d, rows, cols, s0, s1, s->rowptr, s);
  assert_int_equal(s->nnz, n);
  return s;
}

/* The CSR of the packed dense d (rows x cols). */
static SpCsr *csr_of(const double *d, int64_t rows, int64_t cols) { return csr_of_strided(d, rows, cols, cols, 1); }

/* rowptr from 0 to nnz, nondecreasing; columns in range and strictly increasing in a row. */
static void check_valid(const SpCsr *s) {
  assert_int_equal(s->rowptr[0], 0);
  assert_int_equal(s->rowptr[s->rows], s->nnz);
  assert_true(s->nnz <= s->cap);
  for (int64_t i = 0; i < s->rows; i++) {
    assert_true(s->rowptr[i] <= s->rowptr[i + 1]);
    for (int64_t p = s->rowptr[i]; p < s->rowptr[i + 1]; p++) {
      assert_true(s->col[p] >= 0 && s->col[p] < s->cols);
      if (p > s->rowptr[i]) assert_true(s->col[p - 1] < s->col[p]);
    }
  }
}

static void check_same_csr(const SpCsr *x, const SpCsr *y) {
  assert_int_equal(x->rows, y->rows);
  assert_int_equal(x->nnz, y->nnz);
  assert_memory_equal(x->rowptr, y->rowptr, (size_t)(x->rows + 1) * sizeof(int64_t));
  if (x->nnz) {
    assert_memory_equal(x->col, y->col, (size_t)x->nnz * sizeof(int32_t));
    assert_memory_equal(x->val, y->val, (size_t)x->nnz * sizeof(double));
  }
}

/* C (m x n, packed; caller frees) = A (m x k at A[i * lda + kk]) %*% B (k x n at B[kk * ldb + j]):
** every term, in k's order, from 0. */
static double *naive_mm(const double *A, int64_t lda, int64_t m, int64_t k, const double *B, int64_t ldb, int64_t n) {
  double *C = malloc((size_t)(m * n > 0 ? m * n : 1) * sizeof(double));
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t kk = 0; kk < k; kk++) s += A[i * lda + kk] * B[kk * ldb + j];
      C[i * n + j] = s;
    }
  return C;
}

static double *dense_t(const double *d, int64_t rows, int64_t cols) {
  double *t = malloc((size_t)(rows * cols > 0 ? rows * cols : 1) * sizeof(double));
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) t[j * rows + i] = d[i * cols + j];
  return t;
}

/* got within 1e-12 of want (relative above 1); NaN where want is NaN, the same Inf. */
static void check_close(const double *got, const double *want, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (isnan(want[i])) { assert_true(isnan(got[i])); continue; }
    if (isinf(want[i])) { assert_true(got[i] == want[i]); continue; }
    if (!(fabs(got[i] - want[i]) <= 1e-12 * fmax(1, fabs(want[i])))) fail_msg("at %lld: %.17g, want %.17g", (long long)i, got[i], want[i]);
  }
}

/* Equal bits, or both NaN. */
static void check_bits(const double *x, const double *y, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    if (isnan(x[i]) && isnan(y[i])) continue;
    assert_memory_equal(&x[i], &y[i], sizeof(double));
  }
}

static const int64_t shapes[][2] = { { 0, 5 }, { 5, 0 }, { 0, 0 }, { 1, 9 }, { 9, 1 }, { 1, 1 }, { 13, 11 }, { 40, 37 }, { 64, 3 } };
static const double densities[] = { 0, 1e-3, 0.1, 0.5, 1 };
#define NSHAPES (sizeof shapes / sizeof shapes[0])
#define NDENS (sizeof densities / sizeof densities[0])

/* ---- conversions, transpose, copy ---- */

static void test_convert(void **state) {
  (void)state;
  for (size_t s = 0; s < NSHAPES; s++)
    for (size_t di = 0; di < NDENS; di++)
      for (int holes = 0; holes < 2; holes++) {
        int64_t r = shapes[s][0], c = shapes[s][1];
        double *d = rand_dense(r, c, densities[di], holes);
        SpCsr *a = csr_of(d, r, c);
        check_valid(a);
        int64_t n = 0;
        for (int64_t i = 0; i < r * c; i++) n += d[i] != 0;
        assert_int_equal(a->nnz, n);
        double *back = malloc((size_t)(r * c > 0 ? r * c : 1) * sizeof(double));
        spk_to_dense(a, back);
        if (r * c > 0) assert_memory_equal(back, d, (size_t)(r * c) * sizeof(double));
        /* read through strides: t(d) as a c x r matrix equals spk_transpose(a) */
        assert_int_equal(count_dense(d, c, r, 1, c), n);
        SpCsr *ts = csr_of_strided(d, c, r, 1, c);
        SpCsr *t = csr_new(c, r, n);
        spk_transpose(a, t);
        check_valid(t);
        check_same_csr(t, ts);
        double *td = dense_t(d, r, c);
        SpCsr *t2 = csr_of(td, c, r);
        check_same_csr(t, t2);
        SpCsr *tt = csr_new(r, c, n);             /* t(t(a)) == a */
        spk_transpose(t, tt);
        check_same_csr(tt, a);
        SpCsr *cp = csr_new(r, c, n);
        spk_copy(a, cp);
        check_same_csr(cp, a);
        csr_free(cp);
        csr_free(tt);
        csr_free(t2);
        free(td);
        csr_free(t);
        csr_free(ts);
        free(back);
        csr_free(a);
        free(d);
      }
}

static void test_convert_special(void **state) {
  (void)state;
  double d[] = { 0, NAN, -0.0, INFINITY, 1e-310, 0, -INFINITY, 0, 2 };   /* 3 x 3 */
  assert_int_equal(count_dense(d, 3, 3, 3, 1), 6);          /* +0 is not stored; NaN and -0 are */
  SpCsr *a = csr_of(d, 3, 3);
  check_valid(a);
  int64_t rp[] = { 0, 2, 4, 6 };
  int32_t col[] = { 1, 2, 0, 1, 0, 2 };
  assert_memory_equal(a->rowptr, rp, sizeof rp);
  assert_memory_equal(a->col, col, sizeof col);
  assert_true(isnan(a->val[0]) && a->val[1] == 0 && signbit(a->val[1]) && a->val[2] == INFINITY &&
              a->val[3] == 1e-310 && a->val[4] == -INFINITY && a->val[5] == 2);
  double back[9];
  spk_to_dense(a, back);
  for (int i = 0; i < 9; i++)
    assert_true(isnan(d[i]) ? isnan(back[i]) : back[i] == d[i] && signbit(back[i]) == signbit(d[i]));
  csr_free(a);
}

/* ---- products ---- */

/* spmm, spmm_t (and spmm on spk_transpose, the same bits) against the naive product, with B's
** rows padded (ldb = n + 2). */
static void check_spmm(const double *d, int64_t r, int64_t c, const SpCsr *a, const double *Bsrc, int64_t n) {
  int64_t ldb = n + 2;
  /* C = a %*% B, B: c x n */
  double *B = malloc((size_t)((c > 0 ? c : 1) * ldb) * sizeof(double));
  for (int64_t k = 0; k < c; k++)
    for (int64_t j = 0; j < ldb; j++) B[k * ldb + j] = j < n ? Bsrc[k * n + j] : 12345.0;
  double *want = naive_mm(d, c, r, c, B, ldb, n);
  double *C = malloc((size_t)(r * n > 0 ? r * n : 1) * sizeof(double));
  for (int64_t i = 0; i < r * n; i++) C[i] = -777;                  /* overwritten, not added to */
  spk_spmm(cpu, a, B, ldb, n, C);
  check_close(C, want, r * n);
  free(C);
  free(want);
  free(B);
  /* C = t(a) %*% B2, B2: r x n */
  double *B2 = malloc((size_t)((r > 0 ? r : 1) * ldb) * sizeof(double));
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < ldb; j++) B2[i * ldb + j] = j < n ? Bsrc[i * n + j] : -9.0;
  double *dt = dense_t(d, r, c);
  double *want2 = naive_mm(dt, r, c, r, B2, ldb, n);
  double *C2 = malloc((size_t)(c * n > 0 ? c * n : 1) * sizeof(double));
  for (int64_t i = 0; i < c * n; i++) C2[i] = -777;
  assert_int_equal(spk_spmm_t(cpu, a, B2, ldb, n, C2), 0);
  check_close(C2, want2, c * n);
  SpCsr *t = csr_new(c, r, a->nnz);
  spk_transpose(a, t);
  double *C3 = malloc((size_t)(c * n > 0 ? c * n : 1) * sizeof(double));
  spk_spmm(cpu, t, B2, ldb, n, C3);
  check_bits(C2, C3, c * n);
  free(C3);
  csr_free(t);
  free(C2);
  free(want2);
  free(dt);
  free(B2);
}

static void test_spmm(void **state) {
  (void)state;
  static const int64_t ns[] = { 0, 1, 2, 3, 4, 5, 10, 16, 17 };   /* (2-16: spmm's rows in registers) */
  for (size_t s = 0; s < NSHAPES; s++)
    for (size_t di = 0; di < NDENS; di++)
      for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
        int64_t r = shapes[s][0], c = shapes[s][1], n = ns[ni];
        double *d = rand_dense(r, c, densities[di], di % 2 == 0);
        SpCsr *a = csr_of(d, r, c);
        int64_t kmax = r > c ? r : c;
        double *Bsrc = rand_full(kmax * n);
        check_spmm(d, r, c, a, Bsrc, n);
        free(Bsrc);
        csr_free(a);
        free(d);
      }
}

/* C = A %*% b, A dense m x k (lda = k + 1), b sparse k x n. */
static void check_dsmm(const double *A, int64_t lda, int64_t m, const double *bd, int64_t k, int64_t n) {
  SpCsr *b = csr_of(bd, k, n);
  double *want = naive_mm(A, lda, m, k, bd, n, n);
  double *C = malloc((size_t)(m * n > 0 ? m * n : 1) * sizeof(double));
  for (int64_t i = 0; i < m * n; i++) C[i] = -777;
  spk_dsmm(cpu, A, lda, m, b, C);
  check_close(C, want, m * n);
  free(C);
  free(want);
  csr_free(b);
}

static void test_dsmm(void **state) {
  (void)state;
  static const int64_t ms[] = { 0, 1, 6 };
  for (size_t s = 0; s < NSHAPES; s++)
    for (size_t di = 0; di < NDENS; di++)
      for (size_t mi = 0; mi < sizeof ms / sizeof ms[0]; mi++) {
        int64_t k = shapes[s][0], n = shapes[s][1], m = ms[mi], lda = k + 1;
        double *bd = rand_dense(k, n, densities[di], di % 2 == 1);
        double *A = rand_full(m * lda);
        check_dsmm(A, lda, m, bd, k, n);
        free(A);
        free(bd);
      }
}

/* a (m x k) %*% b (k x n), both sparse: values, sorted columns, and the symbolic pattern. */
static SpCsr *check_spgemm(const double *ad, const double *bd, int64_t m, int64_t k, int64_t n) {
  SpCsr *a = csr_of(ad, m, k), *b = csr_of(bd, k, n);
  int64_t *rp = malloc((size_t)(m + 1) * sizeof(int64_t));
  int64_t nnz = spk_spgemm_count(cpu, a, b, rp);
  assert_true(nnz >= 0);
  SpCsr *o = csr_new(m, n, nnz);
  memcpy(o->rowptr, rp, (size_t)(m + 1) * sizeof(int64_t));
  free(rp);
  assert_int_equal(spk_spgemm(cpu, a, b, o), 0);
  assert_int_equal(o->nnz, nnz);
  check_valid(o);
  double *got = malloc((size_t)(m * n > 0 ? m * n : 1) * sizeof(double));
  spk_to_dense(o, got);
  double *want = naive_mm(ad, k, m, k, bd, n, n);
  check_close(got, want, m * n);
  /* stored exactly where some a[i, kk] and b[kk, j] are both stored */
  int64_t p = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      bool sym = false;
      for (int64_t kk = 0; kk < k && !sym; kk++) sym = ad[i * k + kk] != 0 && bd[kk * n + j] != 0;
      bool stored = p < o->rowptr[i + 1] && o->col[p] == j;
      assert_int_equal(sym, stored);
      if (stored) p++;
    }
  assert_int_equal(p, nnz);
  free(want);
  free(got);
  csr_free(b);
  csr_free(a);
  return o;
}

static void test_spgemm(void **state) {
  (void)state;
  static const int64_t ns[] = { 0, 1, 7, 50 };
  for (size_t s = 0; s < NSHAPES; s++)
    for (size_t di = 0; di < NDENS; di++)
      for (size_t dj = 0; dj < NDENS; dj += 2)
        for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
          int64_t m = shapes[s][0], k = shapes[s][1], n = ns[ni];
          double *ad = rand_dense(m, k, densities[di], ni % 2 == 0);
          double *bd = rand_dense(k, n, densities[dj], ni % 2 == 1);
          csr_free(check_spgemm(ad, bd, m, k, n));
          free(bd);
          free(ad);
        }
  /* long rows (past the insertion sort), ordered by a scan of the markers: columns close */
  double *ad = rand_dense(3, 200, 0.6, false), *bd = rand_dense(200, 300, 0.05, false);
  csr_free(check_spgemm(ad, bd, 3, 200, 300));
  free(bd);
  free(ad);
  /* and by the heapsort: about 50 columns spread over 4000 */
  ad = rand_dense(3, 4, 1, false);
  bd = rand_dense(4, 4000, 0.004, false);
  csr_free(check_spgemm(ad, bd, 3, 4, 4000));
  free(bd);
  free(ad);
}

/* ---- Inf and NaN: the dense product's values, NaN where an unstored 0 meets them ---- */

static void test_nonfinite(void **state) {
  (void)state;
  for (int rep = 0; rep < 20; rep++) {
    int64_t r = 1 + (int64_t)(rnd() % 12), c = 1 + (int64_t)(rnd() % 12), n = 1 + (int64_t)(rnd() % 6);
    double *d = rand_dense(r, c, rep % 2 ? 0.3 : 0.8, false);
    SpCsr *a = csr_of(d, r, c);
    if (a->nnz > 0) {                                 /* a stored 0 (X * 0 keeps the pattern) */
      int64_t p = (int64_t)(rnd() % (uint64_t)a->nnz);
      a->val[p] = 0;
      spk_to_dense(a, d);
    }
    if (rep % 4 == 3 && a->nnz > 1) { a->val[0] = INFINITY; a->val[1] = NAN; spk_to_dense(a, d); }
    int64_t kmax = r > c ? r : c;
    double *Bsrc = rand_full(kmax * n);
    for (int64_t q = 0; q < kmax * n; q++) {
      uint64_t u = rnd() % 16;
      if (u == 0) Bsrc[q] = INFINITY;
      else if (u == 1) Bsrc[q] = -INFINITY;
      else if (u == 2) Bsrc[q] = NAN;
    }
    check_spmm(d, r, c, a, Bsrc, n);
    /* dsmm: A dense with Inf/NaN (some rows), b = a */
    int64_t m = 1 + (int64_t)(rnd() % 5), lda = r + 2;
    double *A = rand_full(m * lda);
    for (int64_t q = 0; q < m * lda; q++) {
      uint64_t u = rnd() % 20;
      if (u == 0) A[q] = INFINITY;
      else if (u == 1) A[q] = -INFINITY;
      else if (u == 2) A[q] = NAN;
    }
    SpCsr *b = csr_of(d, r, c);                        /* (values only; no stored 0 here) */
    double *want = naive_mm(A, lda, m, r, d, c, c);
    double *C = malloc((size_t)(m * c) * sizeof(double));
    spk_dsmm(cpu, A, lda, m, b, C);
    check_close(C, want, m * c);
    free(C);
    free(want);
    csr_free(b);
    free(A);
    free(Bsrc);
    csr_free(a);
    free(d);
  }
}

/* ---- large: the parallel paths, the same bits with 1 and 3 threads ---- */

static void test_large(void **state) {
  (void)state;
  int64_t r = 3000, c = 500, n = 40;
  double *d = rand_dense(r, c, 0.01, true);
  SpCsr *a = csr_of(d, r, c);
  double *B = rand_full(c * n), *B2 = rand_full(r * n);
  B2[17 * n + 3] = INFINITY;                           /* spmm_t's (transpose path's) fix-up */
  double *C[2], *C2[2], *C3[2];
  for (int th = 0; th < 2; th++) {
    cpu_par_set_threads(cpu, th ? 3 : 1);
    C[th] = malloc((size_t)(r * n) * sizeof(double));
    spk_spmm(cpu, a, B, n, n, C[th]);
    C2[th] = malloc((size_t)(c * n) * sizeof(double));
    assert_int_equal(spk_spmm_t(cpu, a, B2, n, n, C2[th]), 0);
    C3[th] = malloc((size_t)(r * 1) * sizeof(double));     /* a matrix-vector product */
    double *x = rand_full(c);
    spk_spmm(cpu, a, x, 1, 1, C3[th]);
    if (th) {
      double *want3 = naive_mm(d, c, r, c, x, 1, 1);
      check_close(C3[th], want3, r);
      free(want3);
    }
    free(x);
  }
  double *want = naive_mm(d, c, r, c, B, n, n);
  check_close(C[1], want, r * n);
  free(want);
  double *dt = dense_t(d, r, c);
  double *want2 = naive_mm(dt, r, c, r, B2, n, n);
  check_close(C2[1], want2, c * n);
  int nanc = 0;
  for (int64_t i = 0; i < c * n; i++) nanc += isnan(C2[1][i]);
  assert_true(nanc > 0);
  free(want2);
  check_bits(C[0], C[1], r * n);
  check_bits(C2[0], C2[1], c * n);
  for (int th = 0; th < 2; th++) { free(C[th]); free(C2[th]); free(C3[th]); }

  /* spmm's non-finite fix-up over columns in parallel */
  B[5 * n + 7] = -INFINITY;
  B[9 * n + 8] = NAN;
  double *Cn[2];
  for (int th = 0; th < 2; th++) {
    cpu_par_set_threads(cpu, th ? 3 : 1);
    Cn[th] = malloc((size_t)(r * n) * sizeof(double));
    spk_spmm(cpu, a, B, n, n, Cn[th]);
  }
  want = naive_mm(d, c, r, c, B, n, n);
  check_close(Cn[1], want, r * n);
  check_bits(Cn[0], Cn[1], r * n);
  free(want);
  free(Cn[0]);
  free(Cn[1]);

  /* dsmm: A dense 40 x 3000 %*% a (3000 x 500) */
  int64_t m = 40;
  double *A = rand_full(m * r);
  A[3 * r + 100] = NAN;
  double *D[2];
  for (int th = 0; th < 2; th++) {
    cpu_par_set_threads(cpu, th ? 3 : 1);
    D[th] = malloc((size_t)(m * c) * sizeof(double));
    spk_dsmm(cpu, A, r, m, a, D[th]);
  }
  want = naive_mm(A, r, m, r, d, c, c);
  check_close(D[1], want, m * c);
  check_bits(D[0], D[1], m * c);
  free(want);
  free(D[0]);
  free(D[1]);
  free(A);

  /* spgemm: a (3000 x 500) %*% b (500 x 400, density 0.1): chunks in parallel */
  double *bd = rand_dense(c, 400, 0.1, false);
  SpCsr *o[2];
  for (int th = 0; th < 2; th++) {
    cpu_par_set_threads(cpu, th ? 3 : 1);
    o[th] = check_spgemm(d, bd, r, c, 400);
  }
  check_same_csr(o[0], o[1]);
  csr_free(o[0]);
  csr_free(o[1]);
  free(bd);

  free(dt);
  free(B2);
  free(B);
  csr_free(a);
  free(d);
  cpu_par_set_threads(cpu, 2);
}

/* spmm_t's column slabs (rows few beside the entries: 200 x 3000 at 20%) with 1, 2 and 3
** threads: the scatter's bits, and the naive product's values; an Inf in B2 (the fix-up pass
** before the slabs). */
static void test_spmm_t_slabs(void **state) {
  (void)state;
  int64_t r = 200, c = 3000, n = 10;
  double *d = rand_dense(r, c, 0.2, true);
  SpCsr *a = csr_of(d, r, c);
  double *B2 = rand_full(r * n);
  B2[17 * n + 3] = INFINITY;
  double *C2[3];
  for (int th = 0; th < 3; th++) {
    cpu_par_set_threads(cpu, th + 1);
    C2[th] = malloc((size_t)(c * n) * sizeof(double));
    for (int64_t i = 0; i < c * n; i++) C2[th][i] = -777;
    assert_int_equal(spk_spmm_t(cpu, a, B2, n, n, C2[th]), 0);
  }
  double *dt = dense_t(d, r, c);
  double *want = naive_mm(dt, r, c, r, B2, n, n);
  check_close(C2[0], want, c * n);
  int nanc = 0;
  for (int64_t i = 0; i < c * n; i++) nanc += isnan(C2[0][i]);
  assert_true(nanc > 0);
  check_bits(C2[0], C2[1], c * n);
  check_bits(C2[0], C2[2], c * n);
  for (int th = 0; th < 3; th++) free(C2[th]);
  free(want);
  free(dt);
  free(B2);
  csr_free(a);
  free(d);
  cpu_par_set_threads(cpu, 2);
}

/* The sampled product: each stored cell's dot of A's row and Bt's row, its k products added in
** order from +0 (the bits of that loop: four cells at a time keep each cell's order), for k
** from 1 to 17 and rows of 0 to 7 entries (the blocks of four and the rest), 1 and 3 threads. */
static void test_sddmm(void **state) {
  (void)state;
  static const int64_t ks[] = { 1, 2, 3, 4, 5, 9, 10, 16, 17 };
  int64_t r = 300, c = 200;
  double *d = rand_dense(r, c, 0.02, true);
  SpCsr *p = csr_of(d, r, c);
  for (size_t ki = 0; ki < sizeof ks / sizeof ks[0]; ki++) {
    int64_t k = ks[ki];
    double *A = rand_full(r * k), *Bt = rand_full(c * k);
    double *want = malloc((size_t)(p->nnz + 1) * sizeof(double));
    for (int64_t i = 0; i < r; i++)
      for (int64_t q = p->rowptr[i]; q < p->rowptr[i + 1]; q++) {
        double sum = 0;
        for (int64_t t = 0; t < k; t++) sum += A[i * k + t] * Bt[(int64_t)p->col[q] * k + t];
        want[q] = sum;
      }
    for (int th = 0; th < 2; th++) {
      cpu_par_set_threads(cpu, th ? 3 : 1);
      double *got = malloc((size_t)(p->nnz + 1) * sizeof(double));
      spk_sddmm(cpu, p, A, k, Bt, k, k, got);
      check_bits(got, want, p->nnz);
      free(got);
    }
    free(want);
    free(A);
    free(Bt);
  }
  csr_free(p);
  free(d);
  cpu_par_set_threads(cpu, 2);
}

/* The conversion by rows, on one thread and three (past the parallel threshold), gives the CSR
** a plain loop over the cells makes (-0 and NaN stored, empty rows); a strided (transposed) view
** too. */
static void test_from_dense_rows(void **state) {
  (void)state;
  int64_t r = 1200, c = 700;
  double *d = rand_dense(r, c, 0.1, true);
  d[5] = -0.0;
  d[c + 3] = NAN;
  for (int tr = 0; tr < 2; tr++) {
    int64_t rr = tr ? c : r, cc = tr ? r : c, s0 = tr ? 1 : c, s1 = tr ? c : 1;
    SpCsr *want = csr_new(rr, cc, r * c);
    int64_t q = 0;
    for (int64_t i = 0; i < rr; i++) {
      want->rowptr[i] = q;
      for (int64_t j = 0; j < cc; j++) {
        double x = d[i * s0 + j * s1];
        if (x != 0 || signbit(x)) { want->col[q] = (int32_t)j; want->val[q++] = x; }
      }
    }
    want->rowptr[rr] = want->nnz = q;
    for (int th = 0; th < 2; th++) {
      cpu_par_set_threads(cpu, th ? 3 : 1);
      int64_t *rp = malloc((size_t)(rr + 1) * sizeof(int64_t));
      assert_int_equal(spk_count_dense(cpu, d, rr, cc, s0, s1, rp), q);
      SpCsr *o = csr_new(rr, cc, q);
      spk_from_dense(cpu, d, rr, cc, s0, s1, rp, o);
      check_same_csr(o, want);
      csr_free(o);
      free(rp);
    }
    csr_free(want);
  }
  free(d);
  cpu_par_set_threads(cpu, 2);
}

/* spk_mul_at: W's pattern and W * e at it, on one thread and in parallel (2000 x 1000 at 15%,
** past the parallel threshold), with empty rows among them. */
static void test_mul_at(void **state) {
  (void)state;
  int64_t r = 2000, c = 1000;
  double *d = rand_dense(r, c, 0.15, true);
  SpCsr *p = csr_of(d, r, c);
  double *e = rand_full(p->nnz > 0 ? p->nnz : 1);
  for (int th = 0; th < 2; th++) {
    cpu_par_set_threads(cpu, th ? 3 : 1);
    SpCsr *o = csr_new(r, c, p->nnz);
    spk_mul_at(cpu, p, e, o);
    assert_int_equal(o->nnz, p->nnz);
    assert_memory_equal(o->rowptr, p->rowptr, (size_t)(r + 1) * sizeof(int64_t));
    assert_memory_equal(o->col, p->col, (size_t)p->nnz * sizeof(int32_t));
    for (int64_t q = 0; q < p->nnz; q++) assert_true(o->val[q] == p->val[q] * e[q]);
    csr_free(o);
  }
  free(e);
  csr_free(p);
  free(d);
  cpu_par_set_threads(cpu, 2);
}

/* ---- scratch that cannot be allocated: -1, nothing written ---- */

static void test_scratch_fail(void **state) {
  (void)state;
  int64_t r = 3000, c = 500, n = 40;
  double *d = rand_dense(r, c, 0.01, false);
  SpCsr *a = csr_of(d, r, c);
  double *B2 = rand_full(r * n), *C2 = malloc((size_t)(c * n) * sizeof(double));
  mem_fail_at(1);
  assert_int_equal(spk_spmm_t(cpu, a, B2, n, n, C2), -1);             /* the transpose's scratch */
  mem_fail_at(2);
  assert_int_equal(spk_spmm_t(cpu, a, B2, n, n, C2), -1);
  mem_fail_at(0);
  double *bd = rand_dense(5, 6, 0.5, false), *sd = rand_dense(4, 5, 0.5, false);
  SpCsr *s = csr_of(sd, 4, 5), *b = csr_of(bd, 5, 6);
  int64_t rp[5] = { 7, 7, 7, 7, 7 };
  mem_fail_at(1);
  assert_int_equal(spk_spgemm_count(cpu, s, b, rp), -1);
  for (int i = 0; i < 5; i++) assert_int_equal(rp[i], 7);
  mem_fail_at(0);
  int64_t nnz = spk_spgemm_count(cpu, s, b, rp);
  SpCsr *o = csr_new(4, 6, nnz);
  memcpy(o->rowptr, rp, sizeof rp);
  mem_fail_at(1);                                                /* the markers */
  assert_int_equal(spk_spgemm(cpu, s, b, o), -1);
  mem_fail_at(2);                                                /* the accumulators */
  assert_int_equal(spk_spgemm(cpu, s, b, o), -1);
  mem_fail_at(0);
  assert_int_equal(spk_spgemm(cpu, s, b, o), 0);
  check_valid(o);
  csr_free(o);
  csr_free(b);
  csr_free(s);
  free(sd);
  free(bd);
  free(C2);
  free(B2);
  csr_free(a);
  free(d);
}

int main(void) {
  cpu = be_new(&be_cpu, NULL, 0);
  if (!cpu) return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_convert),
    cmocka_unit_test(test_convert_special),
    cmocka_unit_test(test_spmm),
    cmocka_unit_test(test_dsmm),
    cmocka_unit_test(test_spgemm),
    cmocka_unit_test(test_nonfinite),
    cmocka_unit_test(test_large),
    cmocka_unit_test(test_spmm_t_slabs),
    cmocka_unit_test(test_sddmm),
    cmocka_unit_test(test_mul_at),
    cmocka_unit_test(test_from_dense_rows),
    cmocka_unit_test(test_scratch_fail),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  be_drop(cpu);                           /* (joins its workers) */
  return rc;
}
