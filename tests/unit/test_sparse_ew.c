/*
** test_sparse_ew.c — the CSR kernels of src/backend/cpu_sparse_ew.c (elementwise, aggregates,
** indexing, binding) against naive dense computations with scalar.h's formulas, on random matrices.
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
#include "backend/scalar.h"
#include "backend/sparse.h"
#include "mem.h"

/* The CPU instance whose threads the kernels run on (backend.h; made by main). */
static Backend *cpu;

/* ---- random matrices ---- */
static uint64_t lcg_state = 12345;

static double rnd(void) {                    /* [0, 1) */
  lcg_state = lcg_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(lcg_state >> 11) / 9007199254740992.0;
}

static int64_t rnd_int(int64_t n) { return n > 0 ? (int64_t)(rnd() * (double)n) : 0; }

/* A test matrix: dense values d (rows x cols, packed) and which of them are stored. */
typedef struct Mat {
  int64_t rows, cols;
  double *d;
  bool *stored;
  SpCsr s;                   /* the CSR form (arrays owned here) */
} Mat;

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  assert_non_null(p);
  return p;
}

/* out's arrays (owned by the caller: free_csr) with room for cap entries. */
static void alloc_csr(SpCsr *out, int64_t rows, int64_t cols, int64_t cap) {
  out->rows = rows;
  out->cols = cols;
  out->nnz = 0;
  out->cap = cap;
  out->rowptr = xmalloc((size_t)(rows + 1) * sizeof(int64_t));
  out->col = xmalloc((size_t)cap * sizeof(int32_t));
  out->val = xmalloc((size_t)cap * sizeof(double));
  for (int64_t i = 0; i <= rows; i++) out->rowptr[i] = 0;
}

static void free_csr(SpCsr *s) {
  free(s->rowptr);
  free(s->col);
  free(s->val);
}

static void build_csr(Mat *m) {
  int64_t n = 0;
  for (int64_t k = 0; k < m->rows * m->cols; k++) n += m->stored[k];
  alloc_csr(&m->s, m->rows, m->cols, n);
  for (int64_t i = 0; i < m->rows; i++) {
    for (int64_t j = 0; j < m->cols; j++)
      if (m->stored[i * m->cols + j]) {
        m->s.col[m->s.nnz] = (int32_t)j;
        m->s.val[m->s.nnz++] = m->d[i * m->cols + j];
      }
    m->s.rowptr[i + 1] = m->s.nnz;
  }
}

/* density: the share of stored entries; special: a few NaN and +-Inf. Some stored entries hold
** 0 or -0; with 3 rows or more row 1 is empty, with 3 columns or more column 1. */
static Mat gen(int64_t rows, int64_t cols, double density, bool special) {
  Mat m = { rows, cols, xmalloc((size_t)(rows * cols) * sizeof(double)), xmalloc((size_t)(rows * cols)), { 0 } };
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) {
      int64_t k = i * cols + j;
      bool st = rnd() < density && !(rows >= 3 && i == 1) && !(cols >= 3 && j == 1);
      double v = 0;
      if (st) {
        double u = rnd();
        v = rnd() * 4 - 2;
        if (u < 0.02) v = 0.0;
        else if (u < 0.03) v = -0.0;
        else if (u < 0.1) v = round(v * 3);
        else if (special && u < 0.13) v = NAN;
        else if (special && u < 0.15) v = INFINITY;
        else if (special && u < 0.17) v = -INFINITY;
      }
      m.d[k] = v;
      m.stored[k] = st;
    }
  build_csr(&m);
  return m;
}

static void free_mat(Mat *m) {
  free(m->d);
  free(m->stored);
  free_csr(&m->s);
}

/* ---- checks ---- */
/* Exactly equal (NaN to NaN); within tol_ulps units in the last place when the op runs through
** libmvec (sin: cpu.c's dense loop and spk_unary both call vm_sin, whose four-lane and tail
** forms may differ from libm's sin, which the reference here uses, in the last bit). */
static double tol_ulps;
static bool same(double x, double y) {
  if ((isnan(x) && isnan(y)) || x == y) return true;
  return tol_ulps > 0 && isfinite(x) && isfinite(y) && fabs(x - y) <= tol_ulps * fabs(y) * 0x1p-52;
}

/* rowptr consistent, columns strictly increasing and in range. */
static void check_csr(const SpCsr *s) {
  assert_int_equal(s->rowptr[0], 0);
  assert_int_equal(s->rowptr[s->rows], s->nnz);
  assert_true(s->nnz <= s->cap);
  for (int64_t i = 0; i < s->rows; i++) {
    assert_true(s->rowptr[i] <= s->rowptr[i + 1]);
    for (int64_t k = s->rowptr[i]; k < s->rowptr[i + 1]; k++) {
      assert_true(s->col[k] >= 0 && s->col[k] < s->cols);
      if (k > s->rowptr[i]) assert_true(s->col[k - 1] < s->col[k]);
    }
  }
}

/* s equals the dense want (rows x cols) with exactly the positions want_st stored. */
static void check_equal(const SpCsr *s, const double *want, const bool *want_st) {
  check_csr(s);
  int64_t n = 0;
  for (int64_t i = 0; i < s->rows; i++) {
    int64_t k = s->rowptr[i];
    for (int64_t j = 0; j < s->cols; j++) {
      bool st = k < s->rowptr[i + 1] && s->col[k] == j;
      if (want_st) assert_int_equal(st, want_st[i * s->cols + j]);
      double got = st ? s->val[k++] : 0.0;
      if (!same(got, want[i * s->cols + j])) fail_msg("[%ld,%ld]: got %.17g, want %.17g", (long)i, (long)j, got, want[i * s->cols + j]);
      n += st;
    }
  }
  assert_int_equal(n, s->nnz);
}

static void check_close(double got, double want, double scale) {
  if (!isfinite(want) || !isfinite(got)) {
    if (!same(got, want)) fail_msg("got %.17g, want %.17g", got, want);
    return;
  }
  if (fabs(got - want) > 1e-12 * scale + 1e-300) fail_msg("got %.17g, want %.17g (scale %g)", got, want, scale);
}

/* The shapes and densities every test walks. */
static const int64_t shapes[][2] = { { 0, 0 }, { 0, 6 }, { 6, 0 }, { 1, 1 }, { 1, 17 }, { 17, 1 }, { 3, 3 },
                                     { 7, 9 }, { 40, 33 }, { 60, 257 } };
static const double densities[] = { 0, 1e-3, 0.1, 0.5, 1 };
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])
#define NDENS (int)(sizeof densities / sizeof densities[0])

/* ---- elementwise ---- */
static void test_unary(void **state) {
  (void)state;
  const int ops[] = { OP_ABS, OP_SQRT, OP_SIGN, OP_NEG, OP_SIN, OP_FLOOR };
  for (int si = 0; si < NSHAPES; si++)
    for (int di = 0; di < NDENS; di++) {
      Mat m = gen(shapes[si][0], shapes[si][1], densities[di], si % 2);
      int64_t n = m.rows * m.cols;
      double *want = xmalloc((size_t)n * sizeof(double));
      for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
        assert_true(sc_unary(ops[oi], 0.0) == 0);
        for (int64_t k = 0; k < n; k++) want[k] = sc_unary(ops[oi], m.d[k]);
        SpCsr out;
        alloc_csr(&out, m.rows, m.cols, m.s.nnz);
        spk_unary(cpu, ops[oi], &m.s, &out);
        tol_ulps = ops[oi] == OP_SIN ? 2 : 0;
        check_equal(&out, want, m.stored);
        tol_ulps = 0;
        free_csr(&out);
      }
      spk_unary(cpu, OP_NEG, &m.s, &m.s);             /* in place */
      for (int64_t k = 0; k < n; k++) want[k] = -m.d[k];
      check_equal(&m.s, want, m.stored);
      free(want);
      free_mat(&m);
    }
}

static void test_scalar(void **state) {
  (void)state;
  struct { int op; double s; bool left; } cases[] = {
    { OP_MUL, 2.5, false }, { OP_MUL, -3, true }, { OP_DIV, 7, false }, { OP_DIV, -0.5, false }, { OP_POW, 2, false },
    { OP_POW, 3, false }, { OP_NE, 0, false }, { OP_NE, 0, true }, { OP_MIN2, 0.5, false }, { OP_MAX2, -1, true },
    { OP_MUL, NAN, false }, { OP_MULZ, INFINITY, false },
  };
  for (int si = 0; si < NSHAPES; si++)
    for (int di = 0; di < NDENS; di++) {
      Mat m = gen(shapes[si][0], shapes[si][1], densities[di], si % 2 == 0);
      int64_t n = m.rows * m.cols;
      double *want = xmalloc((size_t)n * sizeof(double));
      for (size_t ci = 0; ci < sizeof cases / sizeof cases[0]; ci++) {
        int op = cases[ci].op;
        double s = cases[ci].s;
        bool left = cases[ci].left;
        for (int64_t k = 0; k < n; k++)
          want[k] = !m.stored[k] ? 0.0 : left ? sc_binary(op, s, m.d[k]) : sc_binary(op, m.d[k], s);
        SpCsr out;
        alloc_csr(&out, m.rows, m.cols, m.s.nnz);
        spk_scalar(cpu, op, &m.s, s, left, &out);
        check_equal(&out, want, m.stored);
        free_csr(&out);
      }
      free(want);
      free_mat(&m);
    }
}

static void test_dense_pattern(void **state) {
  (void)state;
  const int ops[] = { OP_MUL, OP_DIV, OP_MULZ, OP_POW };
  const BcastMode modes[] = { BC_FULL, BC_ROW, BC_COL, BC_SCALAR };
  for (int si = 0; si < NSHAPES; si++)
    for (int di = 0; di < NDENS; di++) {
      Mat m = gen(shapes[si][0], shapes[si][1], densities[di], true);
      int64_t r = m.rows, c = m.cols, ldb = c + 3;        /* a leading dimension past cols */
      double *B = xmalloc((size_t)((r + 1) * ldb + 1) * sizeof(double));
      for (int64_t k = 0; k < (r + 1) * ldb + 1; k++) B[k] = rnd() * 6 - 3;
      double *want = xmalloc((size_t)(r * c) * sizeof(double));
      for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++)
        for (int mi = 0; mi < 4; mi++)
          for (int left = 0; left < 2; left++) {
            BcastMode bc = modes[mi];
            int64_t ld = bc == BC_COL ? 1 : ldb;
            for (int64_t i = 0; i < r; i++)
              for (int64_t j = 0; j < c; j++) {
                double y = bc == BC_FULL ? B[i * ld + j] : bc == BC_ROW ? B[j] : bc == BC_COL ? B[i * ld] : B[0];
                double x = m.d[i * c + j];
                want[i * c + j] = !m.stored[i * c + j] ? 0.0 : left ? sc_binary(ops[oi], y, x) : sc_binary(ops[oi], x, y);
              }
            SpCsr out;
            alloc_csr(&out, r, c, m.s.nnz);
            spk_dense_pattern(cpu, ops[oi], &m.s, B, ld, bc, left, &out);
            check_equal(&out, want, m.stored);
            free_csr(&out);
          }
      free(want);
      free(B);
      free_mat(&m);
    }
}

static void test_union(void **state) {
  (void)state;
  const int ops[] = { OP_ADD, OP_SUB, OP_MUL, OP_MIN2, OP_MAX2, OP_NE, OP_MULZ };
  for (int si = 0; si < NSHAPES; si++)
    for (int di = 0; di < NDENS; di++)
      for (int dj = 0; dj < NDENS; dj += 2) {
        Mat a = gen(shapes[si][0], shapes[si][1], densities[di], di % 2);
        Mat b = gen(shapes[si][0], shapes[si][1], densities[dj], dj % 2 == 0);
        int64_t n = a.rows * a.cols;
        double *want = xmalloc((size_t)n * sizeof(double));
        bool *st = xmalloc((size_t)n);
        for (int64_t k = 0; k < n; k++) st[k] = a.stored[k] || b.stored[k];
        for (size_t oi = 0; oi < sizeof ops / sizeof ops[0]; oi++) {
          for (int64_t k = 0; k < n; k++) want[k] = st[k] ? sc_binary(ops[oi], a.d[k], b.d[k]) : 0.0;
          SpCsr out;
          alloc_csr(&out, a.rows, a.cols, 0);
          int64_t nnz = spk_union_count(cpu, &a.s, &b.s, out.rowptr);
          free(out.col);
          free(out.val);
          out.cap = nnz;
          out.col = xmalloc((size_t)nnz * sizeof(int32_t));
          out.val = xmalloc((size_t)nnz * sizeof(double));
          spk_union(cpu, ops[oi], &a.s, &b.s, &out);
          assert_int_equal(out.nnz, nnz);
          check_equal(&out, want, st);
          free_csr(&out);
        }
        free(st);
        free(want);
        free_mat(&a);
        free_mat(&b);
      }
}

/* ---- aggregates ---- */
static double ref_extreme(const double *v, int64_t n, int64_t step, bool is_max) {   /* NaN wins */
  double m = is_max ? -INFINITY : INFINITY;
  for (int64_t k = 0; k < n; k++) {
    double x = v[k * step];
    if (isnan(x) || isnan(m)) m = NAN;
    else if (is_max ? x > m : x < m) m = x;
  }
  return m;
}

static void check_aggregates(const Mat *m) {
  int64_t r = m->rows, c = m->cols;
  const SpCsr *s = &m->s;
  double *o = xmalloc((size_t)(r + c + 1) * sizeof(double));
  long double tot = 0, scale = 0;
  for (int64_t k = 0; k < r * c; k++) { tot += m->d[k]; scale += fabs(m->d[k]); }
  check_close(spk_sum(cpu, s), (double)tot, (double)scale);
  spk_row_sums(cpu, s, o);
  for (int64_t i = 0; i < r; i++) {
    long double t = 0, sc = 0;
    for (int64_t j = 0; j < c; j++) { t += m->d[i * c + j]; sc += fabs(m->d[i * c + j]); }
    check_close(o[i], (double)t, (double)sc);
  }
  spk_col_sums(s, o);
  for (int64_t j = 0; j < c; j++) {
    double t = 0;                                  /* the dense colSums' order: exact */
    for (int64_t i = 0; i < r; i++) t += m->d[i * c + j];
    assert_true(same(o[j], t));
  }
  for (int mx = 0; mx < 2; mx++) {
    bool is_max = mx == 1;
    spk_extreme(cpu, is_max ? OP_MAX : OP_MIN, s, o);
    assert_true(same(o[0], ref_extreme(m->d, r * c, 1, is_max)));
    spk_extreme(cpu, is_max ? OP_ROWMAXS : OP_ROWMINS, s, o);
    for (int64_t i = 0; i < r; i++) assert_true(same(o[i], ref_extreme(m->d + i * c, c, 1, is_max)));
    spk_extreme(cpu, is_max ? OP_COLMAXS : OP_COLMINS, s, o);
    for (int64_t j = 0; j < c; j++) assert_true(same(o[j], ref_extreme(m->d + j, r, c, is_max)));
  }
  free(o);
}

static void test_aggregates(void **state) {
  (void)state;
  for (int si = 0; si < NSHAPES; si++)
    for (int di = 0; di < NDENS; di++)
      for (int special = 0; special < 2; special++) {
        Mat m = gen(shapes[si][0], shapes[si][1], densities[di], special);
        check_aggregates(&m);
        free_mat(&m);
      }
  /* a full column of negatives (no implicit 0), a full row, a lone NaN among zeros */
  Mat m = gen(4, 3, 0, false);
  for (int64_t i = 0; i < 4; i++) { m.d[i * 3 + 2] = -1.0 - (double)i; m.stored[i * 3 + 2] = true; }
  for (int64_t j = 0; j < 3; j++) { m.d[3 * 3 + j] = -5.0 + (double)j; m.stored[3 * 3 + j] = true; }
  free_csr(&m.s);
  build_csr(&m);
  check_aggregates(&m);
  double o[4];
  spk_extreme(cpu, OP_COLMAXS, &m.s, o);
  assert_true(o[2] == -1.0 && o[0] == 0.0);
  spk_extreme(cpu, OP_ROWMAXS, &m.s, o);
  assert_true(o[3] == -3.0 && o[0] == 0.0);
  m.d[0] = NAN;
  m.stored[0] = true;
  free_csr(&m.s);
  build_csr(&m);
  check_aggregates(&m);
  spk_extreme(cpu, OP_MIN, &m.s, o);
  assert_true(isnan(o[0]));
  free_mat(&m);
}

/* ---- indexing and binding ---- */
static void check_select(const Mat *m, const int64_t *r, int64_t nr, const int64_t *c, int64_t nc) {
  int64_t C = m->cols, oc = c ? nc : C;
  double *want = xmalloc((size_t)(nr * oc) * sizeof(double));
  bool *st = xmalloc((size_t)(nr * oc));
  for (int64_t i = 0; i < nr; i++)
    for (int64_t p = 0; p < oc; p++) {
      int64_t k = r[i] * C + (c ? c[p] : p);
      want[i * oc + p] = m->d[k];
      st[i * oc + p] = m->stored[k];
    }
  SpCsr out;
  alloc_csr(&out, nr, oc, 0);
  int64_t nnz = spk_select_count(&m->s, r, nr, c, nc, out.rowptr);
  assert_true(nnz >= 0);
  free(out.col);
  free(out.val);
  out.cap = nnz;
  out.col = xmalloc((size_t)nnz * sizeof(int32_t));
  out.val = xmalloc((size_t)nnz * sizeof(double));
  assert_int_equal(spk_select(&m->s, r, nr, c, nc, &out), 0);
  check_equal(&out, want, st);
  free_csr(&out);
  free(want);
  free(st);
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

static void test_select(void **state) {
  (void)state;
  for (int si = 0; si < NSHAPES; si++)
    for (int di = 0; di < NDENS; di++) {
      Mat m = gen(shapes[si][0], shapes[si][1], densities[di], si % 3 == 0);
      int64_t R = m.rows, C = m.cols;
      int64_t *r = xmalloc((size_t)(2 * R + 1) * sizeof(int64_t)), *c = xmalloc((size_t)(2 * C + 1) * sizeof(int64_t));
      for (int trial = 0; trial < 6; trial++) {
        int64_t nr = R ? 1 + rnd_int(2 * R) : 0, nc = C ? 1 + rnd_int(2 * C) : 0;
        if (trial == 5) nr = 0;
        for (int64_t i = 0; i < nr; i++) r[i] = rnd_int(R);
        for (int64_t p = 0; p < nc; p++) c[p] = rnd_int(C);
        check_select(&m, r, nr, NULL, C);                  /* all columns */
        check_select(&m, r, nr, c, nc);                    /* any order, repeats */
        check_select(&m, r, nr, c, 0);                     /* none */
        qsort(c, (size_t)nc, sizeof *c, cmp_i64);
        check_select(&m, r, nr, c, nc);                    /* non-decreasing: no sort */
        for (int64_t p = 0; p < C; p++) c[p] = C - 1 - p;  /* reversed: every row sorted */
        check_select(&m, r, nr, c, C);
        for (int64_t p = 0; p < C; p++) c[p] = p;          /* identity */
        check_select(&m, r, nr, c, C);
      }
      if (R > 0 && C > 0) {                                 /* scratch that cannot be had: -1 */
        int64_t *rowptr = xmalloc((size_t)(R + 1) * sizeof(int64_t));
        r[0] = 0;
        c[0] = C - 1;
        c[1] = 0;
        mem_fail_at(1);
        assert_int_equal(spk_select_count(&m.s, r, 1, c, 2, rowptr), -1);
        mem_fail_at(0);
        SpCsr out;
        alloc_csr(&out, 1, 2, 2);
        assert_true(spk_select_count(&m.s, r, 1, c, 2, out.rowptr) >= 0);
        for (int f = 1; f <= 2; f++) {
          mem_fail_at((uint64_t)f);
          assert_int_equal(spk_select(&m.s, r, 1, c, 2, &out), -1);
          mem_fail_at(0);
        }
        free_csr(&out);
        free(rowptr);
      }
      free(r);
      free(c);
      free_mat(&m);
    }
}

/* Rows of hundreds of entries and positions past 2^16: the row sort's three byte passes. */
static void test_select_wide(void **state) {
  (void)state;
  Mat m = gen(3, 70001, 0.01, true);
  int64_t r[] = { 2, 0, 0, 1, 2 }, nc = 70001 + 500;
  int64_t *c = xmalloc((size_t)nc * sizeof(int64_t));
  for (int64_t p = 0; p < 70001; p++) c[p] = (p * 7919) % 70001;   /* a permutation */
  for (int64_t p = 70001; p < nc; p++) c[p] = rnd_int(70001);       /* repeats */
  check_select(&m, r, 5, c, nc);
  for (int64_t p = 0; p < nc; p++) c[p] = 70000 - p % 70001;
  check_select(&m, r, 5, c, nc);
  free(c);
  free_mat(&m);
}

static void test_bind_diag(void **state) {
  (void)state;
  for (int si = 0; si < NSHAPES; si++)
    for (int di = 0; di < NDENS; di++) {
      int64_t R = shapes[si][0], C = shapes[si][1];
      Mat a = gen(R, C, densities[di], true);
      int64_t R2 = rnd_int(5), C2 = rnd_int(5);
      Mat b = gen(R2, C, densities[(di + 2) % NDENS], false);
      Mat e = gen(R, C2, densities[(di + 3) % NDENS], false);
      /* rbind(a, b) */
      SpCsr out;
      alloc_csr(&out, R + R2, C, a.s.nnz + b.s.nnz);
      spk_rbind(&a.s, &b.s, &out);
      double *want = xmalloc((size_t)((R + R2) * (C + C2)) * sizeof(double));
      bool *st = xmalloc((size_t)((R + R2) * (C + C2)));
      memcpy(want, a.d, (size_t)(R * C) * sizeof(double));
      memcpy(want + R * C, b.d, (size_t)(R2 * C) * sizeof(double));
      memcpy(st, a.stored, (size_t)(R * C));
      memcpy(st + R * C, b.stored, (size_t)(R2 * C));
      check_equal(&out, want, st);
      free_csr(&out);
      /* cbind(a, e) */
      alloc_csr(&out, R, C + C2, a.s.nnz + e.s.nnz);
      spk_cbind(&a.s, &e.s, &out);
      for (int64_t i = 0; i < R; i++) {
        for (int64_t j = 0; j < C; j++) {
          want[i * (C + C2) + j] = a.d[i * C + j];
          st[i * (C + C2) + j] = a.stored[i * C + j];
        }
        for (int64_t j = 0; j < C2; j++) {
          want[i * (C + C2) + C + j] = e.d[i * C2 + j];
          st[i * (C + C2) + C + j] = e.stored[i * C2 + j];
        }
      }
      check_equal(&out, want, st);
      free_csr(&out);
      /* diag(a) */
      int64_t n = R < C ? R : C;
      double *o = xmalloc((size_t)n * sizeof(double));
      spk_diag(&a.s, o);
      for (int64_t i = 0; i < n; i++) assert_true(same(o[i], a.d[i * C + i]));
      free(o);
      free(want);
      free(st);
      free_mat(&a);
      free_mat(&b);
      free_mat(&e);
    }
}

/* Matrices past PAR_MIN stored entries take the kernels' parallel paths. */
static void test_large(void **state) {
  (void)state;
  Mat a = gen(700, 600, 0.9, false), b = gen(700, 600, 0.7, true);
  assert_true(a.s.nnz >= PAR_MIN);
  int64_t n = a.rows * a.cols;
  double *want = xmalloc((size_t)n * sizeof(double));
  bool *st = xmalloc((size_t)n);
  SpCsr out;
  alloc_csr(&out, a.rows, a.cols, a.s.nnz + b.s.nnz);
  spk_unary(cpu, OP_SQRT, &a.s, &out);
  for (int64_t k = 0; k < n; k++) want[k] = sc_unary(OP_SQRT, a.d[k]);
  check_equal(&out, want, a.stored);
  spk_scalar(cpu, OP_MUL, &a.s, -1.5, true, &out);
  for (int64_t k = 0; k < n; k++) want[k] = sc_binary(OP_MUL, -1.5, a.d[k]);
  check_equal(&out, want, a.stored);
  spk_dense_pattern(cpu, OP_MUL, &a.s, b.d, a.cols, BC_FULL, false, &out);
  for (int64_t k = 0; k < n; k++) want[k] = a.stored[k] ? sc_binary(OP_MUL, a.d[k], b.d[k]) : 0.0;
  check_equal(&out, want, a.stored);
  assert_true(spk_union_count(cpu, &a.s, &b.s, out.rowptr) <= out.cap);
  spk_union(cpu, OP_SUB, &a.s, &b.s, &out);
  for (int64_t k = 0; k < n; k++) {
    st[k] = a.stored[k] || b.stored[k];
    want[k] = st[k] ? sc_binary(OP_SUB, a.d[k], b.d[k]) : 0.0;
  }
  check_equal(&out, want, st);
  free_csr(&out);
  check_aggregates(&a);
  check_aggregates(&b);
  free(want);
  free(st);
  free_mat(&a);
  free_mat(&b);
  cpu_par_shutdown(cpu);
}

int main(void) {
  cpu = be_new(&be_cpu, NULL, 0);
  if (!cpu) return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_unary),
    cmocka_unit_test(test_scalar),
    cmocka_unit_test(test_dense_pattern),
    cmocka_unit_test(test_union),
    cmocka_unit_test(test_aggregates),
    cmocka_unit_test(test_select),
    cmocka_unit_test(test_select_wide),
    cmocka_unit_test(test_bind_diag),
    cmocka_unit_test(test_large),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  be_drop(cpu);
  return rc;
}
