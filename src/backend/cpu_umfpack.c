/*
** cpu_umfpack.c — sparse LU through SuiteSparse's UMFPACK (libsuitesparse-dev): solve(A, B) of a
** square sparse A that is not symmetric positive definite, without densifying it (docs/sparse.md).
** A's CSR arrays read as compressed columns are t(A): UMFPACK factors t(A), and A x = b is its
** transposed solve (UMFPACK_At), so nothing is converted but the column indices (to 64 bits).
*/
#include <math.h>
#include <string.h>
#include "backend/dynlibs.h"   /* UMFPACK, loaded on first use */
#include "backend/sparse.h"
#include "mem.h"

struct SpLu {
  const SpCsr *A;              /* borrowed: the caller keeps it alive while the handle lives */
  SuiteSparse_long *ai;        /* A's column indices widened (UMFPACK's dl interface) */
  void *num;                   /* UMFPACK's numeric factorization */
  double control[UMFPACK_CONTROL];
  double *x, *b;               /* one column each of scratch */
  SuiteSparse_long *wi;        /* umfpack_dl_wsolve's workspace (n, 5 n), made once: umfpack_dl_solve */
  double *w;                   /* would allocate it at each solve (mapped and unmapped when large) */
};

void spk_lu_free(SpLu *h) {
  if (!h) return;
  if (h->num) umfpack_dl_free_numeric(&h->num);
  mem_free(h->ai);
  mem_free(h->x);
  mem_free(h->b);
  mem_free(h->wi);
  mem_free(h->w);
  mem_free(h);
}

SpLu *spk_lu_factor(const SpCsr *A, int *status, int64_t *zero_at) {
  int64_t n = A->rows;
  *status = -1;
  *zero_at = 0;
  SpLu *h = mem_try_alloc(sizeof *h);
  if (!h) return NULL;
  memset(h, 0, sizeof *h);
  h->A = A;
  h->ai = mem_try_alloc((size_t)(A->nnz > 0 ? A->nnz : 1) * sizeof(SuiteSparse_long));
  h->x = mem_try_alloc((size_t)n * sizeof(double));
  h->b = mem_try_alloc((size_t)n * sizeof(double));
  h->wi = mem_try_alloc((size_t)n * sizeof(SuiteSparse_long));
  h->w = mem_try_alloc((size_t)n * 5 * sizeof(double));
  if (!h->ai || !h->x || !h->b || !h->wi || !h->w) { spk_lu_free(h); return NULL; }
  for (int64_t q = 0; q < A->nnz; q++) h->ai[q] = A->col[q];
  umfpack_dl_defaults(h->control);
  h->control[UMFPACK_PRL] = 0;
  const SuiteSparse_long *ap = (const SuiteSparse_long *)A->rowptr;
  void *sym = NULL;
  double info[UMFPACK_INFO];
  SuiteSparse_long st = umfpack_dl_symbolic(n, n, ap, h->ai, A->val, &sym, h->control, info);
  if (st == UMFPACK_OK || st == UMFPACK_WARNING_singular_matrix)
    st = umfpack_dl_numeric(ap, h->ai, A->val, sym, &h->num, h->control, info);
  if (sym) umfpack_dl_free_symbolic(&sym);
  if (st == UMFPACK_WARNING_singular_matrix && h->num) {
    /* U's diagonal: the first zero pivot (1-based, in the factor's own order) */
    double *d = h->x;
    if (umfpack_dl_get_numeric(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, d, NULL, NULL, h->num) == UMFPACK_OK)
      for (int64_t i = 0; i < n && !*zero_at; i++)
        if (d[i] == 0) *zero_at = i + 1;
    if (!*zero_at) *zero_at = n;
    *status = 1;
    spk_lu_free(h);
    return NULL;
  }
  if (st != UMFPACK_OK || !h->num) { spk_lu_free(h); return NULL; }
  *status = 0;
  return h;
}

/* h->x = A^-1 h->b (sys UMFPACK_At: the factor is t(A)'s), or t(A)^-1 h->b (UMFPACK_A). */
static int col_solve(SpLu *h, int sys) {
  double info[UMFPACK_INFO];
  const SuiteSparse_long *ap = (const SuiteSparse_long *)h->A->rowptr;
  SuiteSparse_long st = umfpack_dl_wsolve(sys, ap, h->ai, h->A->val, h->x, h->b, h->num, h->control, info, h->wi, h->w);
  return st == UMFPACK_OK ? 0 : -1;
}

int spk_lu_inv_row(SpLu *h, int64_t i, double *x) {
  int64_t n = h->A->rows;
  memset(h->b, 0, (size_t)n * sizeof(double));
  h->b[i] = 1;                                  /* row i of A^-1 is t(A)^-1 e_i: the factor's own system */
  if (col_solve(h, UMFPACK_A) != 0) return -1;
  memcpy(x, h->x, (size_t)n * sizeof(double));
  return 0;
}

/* The parity of the permutation p of 0..n-1 (destroyed): 1 even, -1 odd, from its cycles. */
static double perm_sign(SuiteSparse_long *p, int64_t n) {
  double s = 1;
  for (int64_t i = 0; i < n; i++) {
    if (p[i] < 0) continue;
    int64_t len = 0;
    for (int64_t j = i; p[j] >= 0; len++) {     /* walk the cycle, marking its members */
      int64_t next = p[j];
      p[j] = -1;
      j = next;
    }
    if (len % 2 == 0) s = -s;                   /* a cycle of even length is an odd permutation */
  }
  return s;
}

int spk_lu_det(SpLu *h, double *det) {
  int64_t n = h->A->rows;
  SuiteSparse_long *p = mem_try_alloc((size_t)n * 2 * sizeof *p), *q = p ? p + n : NULL, recip = 0;
  double *rs = mem_try_alloc((size_t)n * sizeof *rs), *u = h->x;
  int rc = -1;
  if (p && rs && umfpack_dl_get_numeric(NULL, NULL, NULL, NULL, NULL, NULL, p, q, u, &recip, rs, h->num) == UMFPACK_OK) {
    /* P R t(A) Q = L U, L unit lower, R = diag(rs) (recip) or diag(1 / rs): det(A) = det(t(A)) =
    ** sign(P) sign(Q) prod(diag(U)) / det(R), kept as mantissa and exponent as lu_det keeps it
    ** (ops/linalg.c), so that it overflows or underflows only when the determinant does */
    double m = perm_sign(p, n) * perm_sign(q, n);
    long e = 0;
    for (int64_t i = 0; i < n; i++) {
      int ex;
      m = frexp(m * u[i], &ex);
      e += ex;
      m = frexp(recip ? m / rs[i] : m * rs[i], &ex);
      e += ex;
    }
    if (e > 100000) e = 100000;                 /* ldexp saturates to Inf or 0 anyway */
    if (e < -100000) e = -100000;
    *det = ldexp(m, (int)e);
    rc = 0;
  }
  mem_free(p);
  mem_free(rs);
  return rc;
}

int spk_lu_solve(SpLu *h, const double *B, int64_t ldb, int64_t k, double *X, int64_t ldx) {
  int64_t n = h->A->rows;
  for (int64_t j = 0; j < k; j++) {
    for (int64_t i = 0; i < n; i++) h->b[i] = B[i * ldb + j];
    if (col_solve(h, UMFPACK_At) != 0) return -1;
    for (int64_t i = 0; i < n; i++) X[i * ldx + j] = h->x[i];
  }
  return 0;
}

/* ||A^-1||_1 estimated as LAPACK's dgecon does (Hager's method with Higham's check, dlacn2):
** a few solves with A and t(A). Returns -1 when a solve failed. */
static double inv_norm1(SpLu *h) {
  int64_t n = h->A->rows;
  double *x = h->b, *y = h->x, est = 0;
  for (int64_t i = 0; i < n; i++) x[i] = 1.0 / (double)n;
  int64_t jlast = -1;
  for (int it = 0; it < 5; it++) {
    if (col_solve(h, UMFPACK_At) != 0) return -1;          /* y = A^-1 x */
    double e = 0;
    for (int64_t i = 0; i < n; i++) e += fabs(y[i]);
    if (it > 0 && e <= est) break;
    est = e;
    for (int64_t i = 0; i < n; i++) x[i] = y[i] >= 0 ? 1.0 : -1.0;
    if (col_solve(h, UMFPACK_A) != 0) return -1;           /* z = t(A)^-1 sign(y) */
    int64_t j = 0;
    for (int64_t i = 1; i < n; i++)
      if (fabs(y[i]) > fabs(y[j])) j = i;
    if (j == jlast) break;
    jlast = j;
    for (int64_t i = 0; i < n; i++) x[i] = i == j ? 1.0 : 0.0;
  }
  for (int64_t i = 0; i < n; i++)                          /* Higham's alternating vector */
    x[i] = (i % 2 ? -1.0 : 1.0) * (1.0 + (n > 1 ? (double)i / (double)(n - 1) : 0.0));
  if (col_solve(h, UMFPACK_At) != 0) return -1;
  double alt = 0;
  for (int64_t i = 0; i < n; i++) alt += fabs(y[i]);
  alt = 2 * alt / (3 * (double)n);
  return alt > est ? alt : est;
}

double spk_lu_rcond(SpLu *h) {
  const SpCsr *A = h->A;
  int64_t n = A->rows;
  double *colsum = h->x, anorm = 0;
  memset(colsum, 0, (size_t)n * sizeof(double));
  for (int64_t q = 0; q < A->nnz; q++) colsum[A->col[q]] += fabs(A->val[q]);
  for (int64_t j = 0; j < n; j++) anorm = fmax(anorm, colsum[j]);
  double inv = inv_norm1(h);
  if (inv < 0) return -1;
  if (anorm == 0 || inv == 0) return 0;
  return 1.0 / anorm / inv;
}
