/*
** cpu_sparse_mm.c — sparse.h's CSR conversions, transpose and copy, and the products sparse x
** dense, t(sparse) x dense, dense x sparse and sparse x sparse (Gustavson), parallel over rows.
*/
#include <math.h>
#include <stdatomic.h>
#include <string.h>
#include "backend/cpu.h"
#include "backend/sparse.h"
#include "mem.h"

/* All kernels borrow their arguments: a, b, B, A and d are read only, out / C / rowptr are the
** caller's arrays, written in place. Scratch (spk_spmm_t's transpose, spk_spgemm's markers and sums)
** comes from mem_try_alloc on the calling thread, is the kernel's own and is freed before it
** returns; the pool's threads never allocate (cpu_par.c's mem_forbid_thread).
**
** Exactness. The dense product sums A[i,k] * B[k,j] over every k: an entry that a sparse
** operand does not store is a true +0, and 0 * Inf, 0 * NaN are NaN. So where the dense
** operand holds a non-finite value, the products of the unstored zeros are not 0: the kernels
** below give NaN at each result position where such a product occurs (the dense result), and
** the sum of the stored products elsewhere (where the unstored products are all +-0). The sum
** runs in the order of the stored entries (k increasing), whatever the thread count. */

/* Work of at least this size (elements touched, as a double: no overflow) runs in parallel. */
static bool par_work(double work) { return work >= (double)PAR_MIN; }

/* The first row i in [0, rows] with rowptr[i] + i >= w: a part [lo, hi) of [0, nnz + rows)
** (one unit per stored entry and per row) is rows row_at(lo) .. row_at(hi) - 1, so the parts
** cpu_parallel_for cuts hold about equal numbers of stored entries. */
static int64_t row_at(const int64_t *rowptr, int64_t rows, int64_t w) {
  int64_t lo = 0, hi = rows;
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (rowptr[mid] + mid >= w) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* c[0 .. n) += v * b[0 .. n), four lanes at a time (gcc's -O2 leaves the plain loop scalar):
** one ymm operation in the callers' avx2 clones, two xmm ones in the default clone, each lane a
** multiply then an add (no FMA), so every clone gives the same bits. */
typedef double V4 __attribute__((vector_size(32)));

static inline void axpy(double *restrict c, const double *restrict b, double v, int64_t n) {
  V4 vv = { v, v, v, v };
  int64_t j = 0;
  for (; j + 4 <= n; j += 4) {
    V4 x, y;
    memcpy(&x, b + j, sizeof x);
    memcpy(&y, c + j, sizeof y);
    y += vv * x;
    memcpy(c + j, &y, sizeof y);
  }
  for (; j < n; j++) c[j] += v * b[j];
}

/* ---- conversions and structure ---- */

void spk_to_dense(const SpCsr *a, double *d) {
  int64_t rows = a->rows, cols = a->cols;
  if (rows == 0 || cols == 0) return;
  memset(d, 0, (size_t)rows * (size_t)cols * sizeof(double));
  for (int64_t i = 0; i < rows; i++) {
    double *r = d + i * cols;
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) r[a->col[p]] = a->val[p];
  }
}

typedef struct DenseRowsJob {
  const double *d;
  int64_t cols, s0, s1;
  int64_t *rp;
  const int64_t *crp;
  SpCsr *out;
} DenseRowsJob;

static void count_rows(void *ctx, int64_t lo, int64_t hi) {
  const DenseRowsJob *j = ctx;
  for (int64_t i = lo; i < hi; i++) {
    const double *r = j->d + i * j->s0;
    int64_t n = 0;
    for (int64_t c = 0; c < j->cols; c++) n += spk_stored(r[c * j->s1]);
    j->rp[i + 1] = n;
  }
}

int64_t spk_count_dense(const Backend *be, const double *d, int64_t rows, int64_t cols, int64_t s0, int64_t s1, int64_t *rp) {
  DenseRowsJob j = { d, cols, s0, s1, rp, NULL, NULL };
  if (rows > 1 && par_work((double)rows * (double)cols)) cpu_parallel_for(be, rows, count_rows, &j);
  else count_rows(&j, 0, rows);
  rp[0] = 0;
  for (int64_t i = 0; i < rows; i++) rp[i + 1] += rp[i];
  return rp[rows];
}

static void fill_rows(void *ctx, int64_t lo, int64_t hi) {
  const DenseRowsJob *j = ctx;
  for (int64_t i = lo; i < hi; i++) {
    const double *r = j->d + i * j->s0;
    int64_t q = j->crp[i];
    for (int64_t c = 0; c < j->cols; c++) {
      double x = r[c * j->s1];
      if (spk_stored(x)) { j->out->col[q] = (int32_t)c; j->out->val[q] = x; q++; }
    }
  }
}

void spk_from_dense(const Backend *be, const double *d, int64_t rows, int64_t cols, int64_t s0, int64_t s1, const int64_t *rp,
                         SpCsr *out) {
  if (out->rowptr != rp) memcpy(out->rowptr, rp, (size_t)(rows + 1) * sizeof(int64_t));
  DenseRowsJob j = { d, cols, s0, s1, NULL, rp, out };
  if (rows > 1 && par_work((double)rows * (double)cols)) cpu_parallel_for(be, rows, fill_rows, &j);
  else fill_rows(&j, 0, rows);
  out->nnz = rp[rows];
}

/* Counting sort by column: out's rowptr counts the columns, then serves as each column's
** cursor (ending one column ahead), then moves back one place. Rows are read in order, so
** each row of out gets its columns (a's rows) increasing. */
void spk_transpose(const SpCsr *a, SpCsr *out) {
  int64_t rows = a->rows, cols = a->cols, nnz = a->nnz;
  int64_t *rp = out->rowptr;
  memset(rp, 0, (size_t)(cols + 1) * sizeof(int64_t));
  for (int64_t p = 0; p < nnz; p++) rp[a->col[p] + 1]++;
  for (int64_t c = 0; c < cols; c++) rp[c + 1] += rp[c];
  for (int64_t i = 0; i < rows; i++)
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) {
      int64_t q = rp[a->col[p]]++;
      out->col[q] = (int32_t)i;
      out->val[q] = a->val[p];
    }
  memmove(rp + 1, rp, (size_t)cols * sizeof(int64_t));
  rp[0] = 0;
  out->nnz = nnz;
}

void spk_copy(const SpCsr *a, SpCsr *out) {
  memcpy(out->rowptr, a->rowptr, (size_t)(a->rows + 1) * sizeof(int64_t));
  if (a->nnz > 0) {
    memcpy(out->col, a->col, (size_t)a->nnz * sizeof(int32_t));
    memcpy(out->val, a->val, (size_t)a->nnz * sizeof(double));
  }
  out->nnz = a->nnz;
}

/* ---- the finiteness of a dense operand ---- */

typedef struct FiniteJob {
  const double *B;
  int64_t ldb, n;
  atomic_int bad;                 /* set by any part that meets Inf or NaN */
} FiniteJob;

__attribute__((target_clones("avx2", "default"))) static void finite_range(void *ctx, int64_t lo, int64_t hi) {
  FiniteJob *f = ctx;
  int64_t n = f->n;
  for (int64_t k = lo; k < hi; k++) {
    if (atomic_load_explicit(&f->bad, memory_order_relaxed)) return;
    const double *r = f->B + k * f->ldb;
    int bad = 0;
    for (int64_t j = 0; j < n; j++) bad |= !isfinite(r[j]);
    if (bad) { atomic_store_explicit(&f->bad, 1, memory_order_relaxed); return; }
  }
}

/* True when the rows x n matrix at B[k * ldb + j] holds no Inf or NaN. */
static bool all_finite(const Backend *be, const double *B, int64_t rows, int64_t n, int64_t ldb) {
  if (rows == 0 || n == 0) return true;
  FiniteJob f = { B, ldb, n, 0 };
  if (rows > 1 && par_work((double)rows * (double)n)) cpu_parallel_for(be, rows, finite_range, &f);
  else finite_range(&f, 0, rows);
  return !atomic_load(&f.bad);
}

/* ---- sparse %*% dense ---- */

typedef struct SpmmJob {
  const SpCsr *a;
  const double *B;
  int64_t ldb, n;
  double *C;
} SpmmJob;

/* The row widths the sparse products unroll (their rows held in registers: 2 to 16 columns). */
#define SMALL_WIDTHS(X) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15) X(16)

/* C's row c of n = N columns (a constant: the sums stay in registers, where axpy's go through
** memory, one store-to-load chain a stored entry): the same sums in the same order. */
static inline __attribute__((always_inline)) void spmm_row_small(double *c, const int64_t *rp, const int32_t *col, const double *val,
                                                                 const double *B, int64_t ldb, int64_t i, int N) {
  V4 a0 = { 0, 0, 0, 0 }, a1 = a0, a2 = a0, a3 = a0;   /* columns 0-15 by fours, the rest alone */
  double r0 = 0, r1 = 0, r2 = 0;
  const int Q = N / 4, R = N % 4;
  for (int64_t p = rp[i]; p < rp[i + 1]; p++) {
    const double *b = B + (int64_t)col[p] * ldb;
    double v = val[p];
    V4 vv = { v, v, v, v }, x;
    if (Q > 0) { memcpy(&x, b, sizeof x); a0 += vv * x; }
    if (Q > 1) { memcpy(&x, b + 4, sizeof x); a1 += vv * x; }
    if (Q > 2) { memcpy(&x, b + 8, sizeof x); a2 += vv * x; }
    if (Q > 3) { memcpy(&x, b + 12, sizeof x); a3 += vv * x; }
    if (R > 0) r0 += v * b[4 * Q];
    if (R > 1) r1 += v * b[4 * Q + 1];
    if (R > 2) r2 += v * b[4 * Q + 2];
  }
  if (Q > 0) memcpy(c, &a0, sizeof a0);
  if (Q > 1) memcpy(c + 4, &a1, sizeof a1);
  if (Q > 2) memcpy(c + 8, &a2, sizeof a2);
  if (Q > 3) memcpy(c + 12, &a3, sizeof a3);
  if (R > 0) c[4 * Q] = r0;
  if (R > 1) c[4 * Q + 1] = r1;
  if (R > 2) c[4 * Q + 2] = r2;
}

/* Rows of C for the units [lo, hi) (row_at): C[i, ] = sum over row i's entries (k, v), in
** order, of v * B[k, ], from +0. */
__attribute__((target_clones("avx2", "default"))) static void spmm_range(void *ctx, int64_t lo, int64_t hi) {
  const SpmmJob *jb = ctx;
  const SpCsr *a = jb->a;
  const int64_t *rp = a->rowptr;
  const int32_t *col = a->col;
  const double *val = a->val, *B = jb->B;
  int64_t n = jb->n, ldb = jb->ldb;
  int64_t r0 = row_at(rp, a->rows, lo), r1 = row_at(rp, a->rows, hi);
  for (int64_t i = r0; i < r1; i++) {
    double *c = jb->C + i * n;
    if (n == 1) {                                   /* a matrix-vector product: one dot a row */
      double s = 0;
      for (int64_t p = rp[i]; p < rp[i + 1]; p++) s += val[p] * B[(int64_t)col[p] * ldb];
      c[0] = s;
      continue;
    }
    switch (n) {                                    /* a few columns: each its own loop */
#define SMALL(N) case N: spmm_row_small(c, rp, col, val, B, ldb, i, N); continue;
    SMALL_WIDTHS(SMALL)
#undef SMALL
    default: break;
    }
    memset(c, 0, (size_t)n * sizeof(double));
    for (int64_t p = rp[i]; p < rp[i + 1]; p++) axpy(c, B + (int64_t)col[p] * ldb, val[p], n);
  }
}

/* Columns [lo, hi) of C where B's column j holds m > 0 non-finite values: C[i, j] is NaN when
** row i of a does not store all m of their rows (an unstored 0 times Inf or NaN). */
static void spmm_nonfinite_range(void *ctx, int64_t lo, int64_t hi) {
  const SpmmJob *jb = ctx;
  const SpCsr *a = jb->a;
  const double *B = jb->B;
  int64_t n = jb->n, ldb = jb->ldb;
  for (int64_t j = lo; j < hi; j++) {
    int64_t m = 0;
    for (int64_t k = 0; k < a->cols; k++) m += !isfinite(B[k * ldb + j]);
    if (m == 0) continue;
    for (int64_t i = 0; i < a->rows; i++) {
      int64_t cnt = 0;
      for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) cnt += !isfinite(B[(int64_t)a->col[p] * ldb + j]);
      if (cnt < m) jb->C[i * n + j] = NAN;
    }
  }
}

void spk_spmm(const Backend *be, const SpCsr *a, const double *B, int64_t ldb, int64_t n, double *C) {
  int64_t rows = a->rows, units = a->nnz + rows;
  if (rows == 0 || n == 0) return;
  SpmmJob jb = { a, B, ldb, n, C };
  if (rows > 1 && par_work((double)units * (double)n)) cpu_parallel_for(be, units, spmm_range, &jb);
  else spmm_range(&jb, 0, units);
  if (all_finite(be, B, a->cols, n, ldb)) return;
  /* the rare case: a pass over each column of B (K values) and a's pattern, per column */
  if (n > 1 && par_work((double)n * (double)(a->cols + units))) cpu_parallel_for(be, n, spmm_nonfinite_range, &jb);
  else spmm_nonfinite_range(&jb, 0, n);
}

/* ---- t(sparse) %*% dense ---- */

/* Row i of B (N columns, a constant: held in registers) scattered into C's rows at row i's
** entries from p0 on whose columns lie below j1: axpy's sums, unrolled. */
static inline __attribute__((always_inline)) void scatter_row_small(const SpCsr *a, const double *b, int64_t p0, int64_t j1, int64_t i,
                                                                   double *C, int N) {
  const int Q = N / 4, R = N % 4;
  V4 b0 = { 0 }, b1 = b0, b2 = b0, b3 = b0;
  if (Q > 0) memcpy(&b0, b, sizeof b0);
  if (Q > 1) memcpy(&b1, b + 4, sizeof b1);
  if (Q > 2) memcpy(&b2, b + 8, sizeof b2);
  if (Q > 3) memcpy(&b3, b + 12, sizeof b3);
  for (int64_t p = p0; p < a->rowptr[i + 1] && a->col[p] < j1; p++) {
    double v = a->val[p], *c = C + (int64_t)a->col[p] * N;
    V4 vv = { v, v, v, v }, y;
    if (Q > 0) { memcpy(&y, c, sizeof y); y += vv * b0; memcpy(c, &y, sizeof y); }
    if (Q > 1) { memcpy(&y, c + 4, sizeof y); y += vv * b1; memcpy(c + 4, &y, sizeof y); }
    if (Q > 2) { memcpy(&y, c + 8, sizeof y); y += vv * b2; memcpy(c + 8, &y, sizeof y); }
    if (Q > 3) { memcpy(&y, c + 12, sizeof y); y += vv * b3; memcpy(c + 12, &y, sizeof y); }
    for (int r = 0; r < R; r++) c[4 * Q + r] += v * b[4 * Q + r];
  }
}

/* The scatter of row i's entries from p0 on with columns below j1 (n columns of B): true when
** n has its unrolled form. */
static inline __attribute__((always_inline)) bool scatter_small(const SpCsr *a, const double *b, int64_t p0, int64_t j1, int64_t i, double *C, int64_t n) {
  switch (n) {
#define SMALL(N) case N: scatter_row_small(a, b, p0, j1, i, C, N); return true;
  SMALL_WIDTHS(SMALL)
#undef SMALL
  default: return false;
  }
}

/* C (zeroed) += t(a) %*% B by scatter: row i of a adds v * B[i, ] to C[k, ] for each entry
** (k, v), i increasing: the order spk_spmm on t(a) (rows stable, i increasing) adds in. */
__attribute__((target_clones("avx2", "default"))) static void spmm_t_scatter(const SpCsr *a, const double *B, int64_t ldb,
                                                                              int64_t n, double *C) {
  for (int64_t i = 0; i < a->rows; i++) {
    if (scatter_small(a, B + i * ldb, a->rowptr[i], a->cols, i, C, n)) continue;
    const double *b = B + i * ldb;
    for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) axpy(C + (int64_t)a->col[p] * n, b, a->val[p], n);
  }
}

/* Before the scatter, on C zeroed: for each column j of B with m > 0 non-finite values, C[k, j]
** counts the entries column k of a stores at their rows, then becomes +0 when that is all m of
** them, else NaN (an unstored 0 times Inf or NaN), which the scatter's sums keep. */
static void spmm_t_nonfinite(const SpCsr *a, const double *B, int64_t ldb, int64_t n, double *C) {
  for (int64_t j = 0; j < n; j++) {
    int64_t m = 0;
    for (int64_t i = 0; i < a->rows; i++) {
      if (isfinite(B[i * ldb + j])) continue;
      m++;
      for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) C[(int64_t)a->col[p] * n + j] += 1;
    }
    if (m == 0) continue;
    for (int64_t k = 0; k < a->cols; k++) C[k * n + j] = C[k * n + j] == (double)m ? 0.0 : NAN;
  }
}

/* The scatter of the columns of a in slabs [s0, s1) of nslab equal ranges: each thread adds
** into rows of C no other writes (a row's entries found by a binary search in each row of a),
** in the order of the one-thread scatter. */
typedef struct SpmmTJob {
  const SpCsr *a;
  const double *B;
  int64_t ldb, n, nslab;
  double *C;
} SpmmTJob;

__attribute__((target_clones("avx2", "default"))) static void spmm_t_slabs(void *ctx, int64_t s0, int64_t s1) {
  const SpmmTJob *jb = ctx;
  const SpCsr *a = jb->a;
  int64_t j0 = a->cols * s0 / jb->nslab, j1 = a->cols * s1 / jb->nslab, n = jb->n;
  for (int64_t i = 0; i < a->rows; i++) {
    int64_t lo = a->rowptr[i], hi = a->rowptr[i + 1];
    while (lo < hi) {                            /* the first entry of column >= j0 */
      int64_t mid = lo + (hi - lo) / 2;
      if (a->col[mid] < j0) lo = mid + 1;
      else hi = mid;
    }
    const double *b = jb->B + i * jb->ldb;
    if (scatter_small(a, b, lo, j1, i, jb->C, n)) continue;
    for (int64_t p = lo; p < a->rowptr[i + 1] && a->col[p] < j1; p++) axpy(jb->C + (int64_t)a->col[p] * n, b, a->val[p], n);
  }
}

/* Small products, and any on one thread, scatter on the calling thread; large ones scatter in
** column slabs, one a thread, when a's rows are few beside its entries (each slab searches
** every row), else run as spk_spmm on t(a) built in scratch (parallel over t(a)'s rows, no two
** threads writing one row of C; also an a whose rows do not fit t(a)'s int32_t columns
** scatters). All add each C[k, j]'s terms in the same order, so the bits do not depend on the
** path or the thread count. */
int spk_spmm_t(const Backend *be, const SpCsr *a, const double *B, int64_t ldb, int64_t n, double *C) {
  int64_t rows = a->rows, cols = a->cols;
  if (cols == 0 || n == 0) return 0;
  int nt = cpu_par_threads(be);
  bool par = nt > 1 && cols > 1 && par_work((double)(a->nnz + cols) * (double)n);
  if (par && rows > 0 && rows <= SP_MAX_COLS && (double)rows * nt * 4 > (double)a->nnz) {
    SpCsr t = { cols, rows, a->nnz, a->nnz, NULL, NULL, NULL };
    t.rowptr = mem_try_alloc((size_t)(cols + 1) * sizeof(int64_t));
    t.col = mem_try_alloc((size_t)a->nnz * sizeof(int32_t));
    t.val = mem_try_alloc((size_t)a->nnz * sizeof(double));
    int rc = -1;
    if (t.rowptr && t.col && t.val) {
      spk_transpose(a, &t);
      spk_spmm(be, &t, B, ldb, n, C);
      rc = 0;
    }
    mem_free(t.val);
    mem_free(t.col);
    mem_free(t.rowptr);
    return rc;
  }
  memset(C, 0, (size_t)cols * (size_t)n * sizeof(double));
  if (!all_finite(be, B, rows, n, ldb)) spmm_t_nonfinite(a, B, ldb, n, C);
  if (par) {
    int64_t nslab = nt < cols ? nt : cols;
    SpmmTJob jb = { a, B, ldb, n, nslab, C };
    cpu_parallel_for(be, nslab, spmm_t_slabs, &jb);
  } else {
    spmm_t_scatter(a, B, ldb, n, C);
  }
  return 0;
}

/* ---- dense %*% sparse ---- */

typedef struct DsmmJob {
  const double *A;
  int64_t lda;
  const SpCsr *b;
  double *C;
} DsmmJob;

/* Rows [lo, hi) of C: C[i, ] = sum over every k (zeros of A included, so that 0 * Inf at a
** stored entry of b is NaN as in the dense product) of A[i, k] * b[k, ]. A row of A with m > 0
** non-finite values first marks C[i, j] NaN where b's column j does not store all m of their
** rows (counting in C[i, ] itself), +0 elsewhere. */
static void dsmm_range(void *ctx, int64_t lo, int64_t hi) {
  const DsmmJob *jb = ctx;
  const SpCsr *b = jb->b;
  const int64_t *rp = b->rowptr;
  const int32_t *col = b->col;
  const double *val = b->val;
  int64_t K = b->rows, nc = b->cols;
  for (int64_t i = lo; i < hi; i++) {
    const double *ar = jb->A + i * jb->lda;
    double *c = jb->C + i * nc;
    memset(c, 0, (size_t)nc * sizeof(double));
    int64_t m = 0;
    for (int64_t k = 0; k < K; k++) m += !isfinite(ar[k]);
    if (m > 0) {
      for (int64_t k = 0; k < K; k++)
        if (!isfinite(ar[k]))
          for (int64_t p = rp[k]; p < rp[k + 1]; p++) c[col[p]] += 1;
      for (int64_t j = 0; j < nc; j++) c[j] = c[j] == (double)m ? 0.0 : NAN;
    }
    for (int64_t k = 0; k < K; k++) {
      double x = ar[k];
      for (int64_t p = rp[k]; p < rp[k + 1]; p++) c[col[p]] += x * val[p];
    }
  }
}

void spk_dsmm(const Backend *be, const double *A, int64_t lda, int64_t m, const SpCsr *b, double *C) {
  if (m == 0 || b->cols == 0) return;
  DsmmJob jb = { A, lda, b, C };
  if (m > 1 && par_work((double)m * (double)(b->rows + b->nnz + b->cols))) cpu_parallel_for(be, m, dsmm_range, &jb);
  else dsmm_range(&jb, 0, m);
}

/* ---- sparse %*% sparse (Gustavson) ----
** Values are the sums of the products of stored entries only: unstored x unstored is 0 * 0 = 0,
** but a stored Inf or NaN times an unstored 0 would be NaN in the dense product, which this
** kernel does not give: the caller checks that both operands are finite (else densifies).
** The rows are cut into at most SPG_MAXP chunks of about equal work, each with its own
** scratch over b's columns (a marker; the fill pass also a dense accumulator); a chunk's rows
** run in order on one thread, so each value's sum runs in a's order whatever the chunks. */
#define SPG_MAXP 32
#define SPG_SCRATCH_BYTES ((double)(1 << 28))     /* the chunks' scratch, at most (more chunks) */

typedef struct SpgJob {
  const SpCsr *a, *b;
  int64_t *rowptr;                /* the count pass's output, the fill pass's input */
  SpCsr *out;                     /* fill pass */
  int64_t *marker;                /* nchunk x b->cols: marker[j] == i, column j met in row i */
  double *acc;                    /* fill pass: nchunk x b->cols, row i's value at column j */
  int64_t bound[SPG_MAXP + 1];    /* chunk c: rows bound[c] .. bound[c+1] - 1 */
} SpgJob;

/* The work of row i of a %*% b: 1 + a's entries in the row + the entries of b they read. */
static int64_t spg_row_work(const SpCsr *a, const SpCsr *b, int64_t i) {
  int64_t w = 1;
  for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) {
    int64_t k = a->col[p];
    w += 1 + b->rowptr[k + 1] - b->rowptr[k];
  }
  return w;
}

/* Cuts a's rows into chunks of about equal work (jb->bound) and allocates their scratch (the
** accumulators too when fill); returns the number of chunks, 0 when even one chunk's scratch
** could not be allocated (nothing allocated then). */
static int spg_plan(SpgJob *jb, bool fill) {
  const SpCsr *a = jb->a, *b = jb->b;
  int64_t rows = a->rows, total = 0;
  for (int64_t i = 0; i < rows; i++) total += spg_row_work(a, b, i);
  double bc = (double)(b->cols > 0 ? b->cols : 1), per = fill ? 16 : 8;
  int nc = 1;
  if (rows > 1 && par_work((double)total)) {
    double lim = fmin(fmin((double)SPG_MAXP, (double)rows), fmin((double)total / bc, SPG_SCRATCH_BYTES / (per * bc)));
    nc = lim >= 2 ? (int)lim : 1;
  }
  for (;;) {
    size_t n = (size_t)nc * (size_t)bc;
    jb->marker = mem_try_alloc(n * sizeof(int64_t));
    jb->acc = fill && jb->marker ? mem_try_alloc(n * sizeof(double)) : NULL;
    if (jb->marker && (jb->acc || !fill)) break;
    mem_free(jb->marker);
    jb->marker = NULL;
    if (nc == 1) return 0;
    nc = 1;
  }
  jb->bound[0] = 0;
  jb->bound[nc] = rows;
  if (nc > 1) {                         /* bound[c]: the first row whose work before it is >= total * c / nc */
    int c = 1;
    int64_t acc = 0;
    for (int64_t i = 0; i < rows && c < nc; i++) {
      while (c < nc && (double)acc >= (double)total * c / nc) jb->bound[c++] = i;
      acc += spg_row_work(a, b, i);
    }
    while (c < nc) jb->bound[c++] = rows;
  }
  return nc;
}

/* Chunks [lo, hi): rowptr[i + 1] = the number of distinct columns of row i of the product. */
static void spg_count_range(void *ctx, int64_t lo, int64_t hi) {
  const SpgJob *jb = ctx;
  const SpCsr *a = jb->a, *b = jb->b;
  for (int64_t c = lo; c < hi; c++) {
    int64_t *mk = jb->marker + c * b->cols;
    for (int64_t j = 0; j < b->cols; j++) mk[j] = -1;
    for (int64_t i = jb->bound[c]; i < jb->bound[c + 1]; i++) {
      int64_t cnt = 0;
      for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) {
        int64_t k = a->col[p];
        for (int64_t q = b->rowptr[k]; q < b->rowptr[k + 1]; q++) {
          int32_t j = b->col[q];
          if (mk[j] != i) { mk[j] = i; cnt++; }
        }
      }
      jb->rowptr[i + 1] = cnt;
    }
  }
}

int64_t spk_spgemm_count(const Backend *be, const SpCsr *a, const SpCsr *b, int64_t *rowptr) {
  SpgJob jb = { a, b, rowptr, NULL, NULL, NULL, { 0 } };
  int nc = spg_plan(&jb, false);
  if (nc == 0) return -1;
  /* zeroed first: rows of chunks an interrupt skipped count 0, a valid (unused) pattern */
  memset(rowptr, 0, (size_t)(a->rows + 1) * sizeof(int64_t));
  if (nc > 1) cpu_parallel_for(be, nc, spg_count_range, &jb);
  else spg_count_range(&jb, 0, 1);
  mem_free(jb.marker);
  for (int64_t i = 0; i < a->rows; i++) rowptr[i + 1] += rowptr[i];
  return rowptr[a->rows];
}

/* Sorts n distinct columns: insertion sort for short rows, heapsort (in place) for long ones. */
static void spg_sift(int32_t *c, int64_t root, int64_t n) {
  for (;;) {
    int64_t ch = 2 * root + 1;
    if (ch >= n) return;
    if (ch + 1 < n && c[ch + 1] > c[ch]) ch++;
    if (c[root] >= c[ch]) return;
    int32_t t = c[root]; c[root] = c[ch]; c[ch] = t;
    root = ch;
  }
}

static void spg_sort(int32_t *c, int64_t n) {
  if (n <= 32) {
    for (int64_t i = 1; i < n; i++) {
      int32_t key = c[i];
      int64_t j = i;
      for (; j > 0 && c[j - 1] > key; j--) c[j] = c[j - 1];
      c[j] = key;
    }
    return;
  }
  for (int64_t s = n / 2 - 1; s >= 0; s--) spg_sift(c, s, n);
  for (int64_t e = n - 1; e > 0; e--) {
    int32_t t = c[0]; c[0] = c[e]; c[e] = t;
    spg_sift(c, 0, e);
  }
}

/* Chunks [lo, hi): row i's products summed in acc (a's order), its columns listed as first met,
** then put in order: by a scan of the markers over the row's column range when that range is
** at most 32 times the row's length, else by sorting; the values then gathered from acc. */
static void spg_fill_range(void *ctx, int64_t lo, int64_t hi) {
  const SpgJob *jb = ctx;
  const SpCsr *a = jb->a, *b = jb->b;
  const int64_t *rp = jb->rowptr;
  int32_t *ocol = jb->out->col;
  double *oval = jb->out->val;
  for (int64_t c = lo; c < hi; c++) {
    int64_t *mk = jb->marker + c * b->cols;
    double *acc = jb->acc + c * b->cols;
    for (int64_t j = 0; j < b->cols; j++) mk[j] = -1;
    for (int64_t i = jb->bound[c]; i < jb->bound[c + 1]; i++) {
      int64_t start = rp[i], pos = start;
      int32_t jmin = INT32_MAX, jmax = -1;
      for (int64_t p = a->rowptr[i]; p < a->rowptr[i + 1]; p++) {
        int64_t k = a->col[p];
        double av = a->val[p];
        for (int64_t q = b->rowptr[k]; q < b->rowptr[k + 1]; q++) {
          int32_t j = b->col[q];
          double prod = av * b->val[q];
          if (mk[j] != i) {
            mk[j] = i;
            acc[j] = 0.0 + prod;
            ocol[pos++] = j;
            if (j < jmin) jmin = j;
            if (j > jmax) jmax = j;
          } else acc[j] += prod;
        }
      }
      int64_t len = pos - start;
      if (len > 32 && (int64_t)jmax - jmin < 32 * len) {     /* the scan: a sequential pass */
        int64_t t = start;
        for (int32_t j = jmin; j <= jmax; j++)
          if (mk[j] == i) ocol[t++] = j;
      } else spg_sort(ocol + start, len);
      for (int64_t t = start; t < pos; t++) oval[t] = acc[ocol[t]];
    }
  }
}

int spk_spgemm(const Backend *be, const SpCsr *a, const SpCsr *b, SpCsr *out) {
  SpgJob jb = { a, b, out->rowptr, out, NULL, NULL, { 0 } };
  int nc = spg_plan(&jb, true);
  if (nc == 0) return -1;
  if (nc > 1) cpu_parallel_for(be, nc, spg_fill_range, &jb);
  else spg_fill_range(&jb, 0, 1);
  mem_free(jb.acc);
  mem_free(jb.marker);
  out->nnz = out->rowptr[a->rows];
  return 0;
}

/* ---- sampled product (SDDMM) ---- */
typedef struct SddmmJob {
  const SpCsr *pat;
  const double *A, *Bt;
  int64_t lda, ldbt, k;
  double *out;
} SddmmJob;

/* Each cell's dot adds its k products in order from 0. Four cells of a row at a time, one lane
** each (one cell alone is a chain bound by the adder's latency: k = 10 took 40 cycles a cell),
** their rows of Bt read four columns at a time and transposed in registers, so that lane c
** adds cell c's products in t order: the same bits as one cell at a time. */
__attribute__((target_clones("avx2", "default"))) static void sddmm_rows(void *ctx, int64_t i0, int64_t i1) {
  const SddmmJob *j = ctx;
  const SpCsr *p = j->pat;
  const int32_t *col = p->col;
  const double *Bt = j->Bt;
  int64_t k = j->k, ldbt = j->ldbt;
  double *out = j->out;
  for (int64_t i = i0; i < i1; i++) {
    const double *a = j->A + i * j->lda;
    int64_t q = p->rowptr[i], e = p->rowptr[i + 1];
    for (; q + 4 <= e; q += 4) {
      const double *b0 = Bt + (int64_t)col[q] * ldbt, *b1 = Bt + (int64_t)col[q + 1] * ldbt;
      const double *b2 = Bt + (int64_t)col[q + 2] * ldbt, *b3 = Bt + (int64_t)col[q + 3] * ldbt;
      V4 acc = { 0, 0, 0, 0 };
      int64_t t = 0;
      for (; t + 4 <= k; t += 4) {                 /* b0..b3[t .. t+3] transposed in registers */
        V4 r0, r1, r2, r3;
        memcpy(&r0, b0 + t, sizeof r0);
        memcpy(&r1, b1 + t, sizeof r1);
        memcpy(&r2, b2 + t, sizeof r2);
        memcpy(&r3, b3 + t, sizeof r3);
        V4 u0 = __builtin_shufflevector(r0, r1, 0, 4, 2, 6), u1 = __builtin_shufflevector(r0, r1, 1, 5, 3, 7);
        V4 u2 = __builtin_shufflevector(r2, r3, 0, 4, 2, 6), u3 = __builtin_shufflevector(r2, r3, 1, 5, 3, 7);
        V4 c0 = __builtin_shufflevector(u0, u2, 0, 1, 4, 5), c1 = __builtin_shufflevector(u1, u3, 0, 1, 4, 5);
        V4 c2 = __builtin_shufflevector(u0, u2, 2, 3, 6, 7), c3 = __builtin_shufflevector(u1, u3, 2, 3, 6, 7);
        V4 x0 = { a[t], a[t], a[t], a[t] }, x1 = { a[t + 1], a[t + 1], a[t + 1], a[t + 1] };
        V4 x2 = { a[t + 2], a[t + 2], a[t + 2], a[t + 2] }, x3 = { a[t + 3], a[t + 3], a[t + 3], a[t + 3] };
        acc += x0 * c0;
        acc += x1 * c1;
        acc += x2 * c2;
        acc += x3 * c3;
      }
      for (; t < k; t++) {
        double x = a[t];
        V4 xv = { x, x, x, x }, bv = { b0[t], b1[t], b2[t], b3[t] };
        acc += xv * bv;
      }
      memcpy(out + q, &acc, sizeof acc);
    }
    for (; q < e; q++) {
      const double *b = Bt + (int64_t)col[q] * ldbt;
      double s = 0;
      for (int64_t t = 0; t < k; t++) s += a[t] * b[t];
      out[q] = s;
    }
  }
}

typedef struct MulAtJob {
  const SpCsr *pat;
  const double *e;
  SpCsr *out;
} MulAtJob;

static void mul_at_range(void *ctx, int64_t lo, int64_t hi) {
  const MulAtJob *j = ctx;
  const SpCsr *p = j->pat;
  int64_t r0 = row_at(p->rowptr, p->rows, lo), r1 = row_at(p->rowptr, p->rows, hi);
  int64_t q0 = p->rowptr[r0], q1 = p->rowptr[r1];
  memcpy(j->out->col + q0, p->col + q0, (size_t)(q1 - q0) * sizeof(int32_t));
  const double *pv = p->val, *e = j->e;
  double *ov = j->out->val;
  for (int64_t q = q0; q < q1; q++) ov[q] = pv[q] * e[q];
}

void spk_mul_at(const Backend *be, const SpCsr *pat, const double *e, SpCsr *out) {
  memcpy(out->rowptr, pat->rowptr, (size_t)(pat->rows + 1) * sizeof(int64_t));
  MulAtJob j = { pat, e, out };
  int64_t units = pat->nnz + pat->rows;
  if (pat->rows > 1 && par_work((double)units)) cpu_parallel_for(be, units, mul_at_range, &j);
  else mul_at_range(&j, 0, units);
  out->nnz = pat->nnz;
}

void spk_sddmm(const Backend *be, const SpCsr *pat, const double *A, int64_t lda, const double *Bt, int64_t ldbt, int64_t k, double *out) {
  SddmmJob j = { pat, A, Bt, lda, ldbt, k, out };
  if ((pat->nnz + pat->rows) * (k + 1) >= PAR_MIN) cpu_parallel_for(be, pat->rows, sddmm_rows, &j);
  else sddmm_rows(&j, 0, pat->rows);
}
