/*
** cpu_cholmod.c — sparse Cholesky through SuiteSparse's CHOLMOD (libsuitesparse-dev): solve(A, B)
** and cholesky(A) of a sparse symmetric positive definite A without densifying it (docs/sparse.md).
** CHOLMOD's Common is made and finished in each call (no state kept). A is CSR and symmetric,
** so its arrays read as compressed columns are A itself; CHOLMOD is given its upper triangle.
*/
#include <string.h>
#include "backend/dynlibs.h"   /* CHOLMOD, loaded on first use */
#include "backend/sparse.h"
#include "mem.h"

/* A's upper triangle (j >= i) as CHOLMOD's compressed columns (stype 1), or NULL. */
static cholmod_sparse *upper_of(const SpCsr *A, cholmod_common *c) {
  int64_t n = A->rows, nz = 0;
  for (int64_t i = 0; i < n; i++)
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++) nz += A->col[q] <= i;
  cholmod_sparse *S = cholmod_l_allocate_sparse((size_t)n, (size_t)n, (size_t)(nz > 0 ? nz : 1), 1, 1, 1, CHOLMOD_REAL, c);
  if (!S) return NULL;
  SuiteSparse_long *p = S->p, *ri = S->i;
  double *x = S->x;
  /* the CSR's row i holds column i of the symmetric A: its entries at rows <= i (j >= i in the
  ** row) are column i's upper part, sorted */
  int64_t w = 0;
  for (int64_t i = 0; i < n; i++) {
    p[i] = w;
    for (int64_t q = A->rowptr[i]; q < A->rowptr[i + 1]; q++)
      if (A->col[q] <= i) { ri[w] = A->col[q]; x[w++] = A->val[q]; }
  }
  p[n] = w;
  (void)nz;
  return S;
}

/* Factors A = L L' in the natural ordering (simplicial, so that L is cholesky(A)'s), or with
** CHOLMOD's fill-reducing ordering (for solves). *status: 0, 1 not positive definite, -1 failed. */
static cholmod_factor *factor(const SpCsr *A, bool natural, cholmod_common *c, int *status) {
  cholmod_l_start(c);
  c->print = 0;
  c->error_handler = NULL;
  if (natural) {
    c->nmethods = 1;
    c->method[0].ordering = CHOLMOD_NATURAL;
    c->postorder = 0;
    c->supernodal = CHOLMOD_SIMPLICIAL;
    c->final_ll = 1;
  }
  *status = -1;
  cholmod_sparse *S = upper_of(A, c);
  if (!S) return NULL;
  cholmod_factor *L = cholmod_l_analyze(S, c);
  if (L && cholmod_l_factorize(S, L, c)) *status = c->status == CHOLMOD_NOT_POSDEF || L->minor < L->n ? 1 : 0;
  cholmod_l_free_sparse(&S, c);
  if (*status != 0 && L) cholmod_l_free_factor(&L, c);
  return L;
}

int spk_chol_solve(const SpCsr *A, const double *B, int64_t ldb, int64_t k, double *X) {
  cholmod_common c;
  int status;
  cholmod_factor *L = factor(A, false, &c, &status);
  if (!L) { cholmod_l_finish(&c); return status; }
  int64_t n = A->rows;
  cholmod_dense *Bd = cholmod_l_allocate_dense((size_t)n, (size_t)k, (size_t)n, CHOLMOD_REAL, &c);
  int rc = -1;
  if (Bd) {
    double *bx = Bd->x;                         /* column-major */
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < k; j++) bx[j * n + i] = B[i * ldb + j];
    cholmod_dense *Xd = cholmod_l_solve(CHOLMOD_A, L, Bd, &c);
    if (Xd) {
      const double *xx = Xd->x;
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < k; j++) X[i * k + j] = xx[j * n + i];
      cholmod_l_free_dense(&Xd, &c);
      rc = 0;
    }
    cholmod_l_free_dense(&Bd, &c);
  }
  cholmod_l_free_factor(&L, &c);
  cholmod_l_finish(&c);
  return rc;
}

struct SpChol {
  cholmod_common c;
  cholmod_sparse *L;           /* the factor's compressed columns (lower triangle, sorted) */
};

SpChol *spk_chol_factor(const SpCsr *A, int *status, int64_t *nnz) {
  SpChol *h = mem_try_alloc(sizeof *h);
  if (!h) { *status = -1; return NULL; }
  cholmod_factor *F = factor(A, true, &h->c, status);
  h->L = F ? cholmod_l_factor_to_sparse(F, &h->c) : NULL;
  if (F) cholmod_l_free_factor(&F, &h->c);
  if (!h->L) {
    if (*status == 0) *status = -1;
    cholmod_l_finish(&h->c);
    mem_free(h);
    return NULL;
  }
  const SuiteSparse_long *p = h->L->p;
  *nnz = p[h->L->ncol];
  return h;
}

void spk_chol_take(SpChol *h, SpCsr *out) {
  const cholmod_sparse *L = h->L;
  const SuiteSparse_long *p = L->p, *ri = L->i;
  const double *x = L->x;
  int64_t n = (int64_t)L->nrow;
  memset(out->rowptr, 0, (size_t)(n + 1) * sizeof(int64_t));
  for (int64_t j = 0; j < n; j++)               /* compressed columns to rows: count, then place */
    for (SuiteSparse_long q = p[j]; q < p[j + 1]; q++) out->rowptr[ri[q] + 1]++;
  for (int64_t i = 0; i < n; i++) out->rowptr[i + 1] += out->rowptr[i];
  for (int64_t j = 0; j < n; j++)               /* columns in order: each row's come sorted */
    for (SuiteSparse_long q = p[j]; q < p[j + 1]; q++) {
      int64_t at = out->rowptr[ri[q]]++;
      out->col[at] = (int32_t)j;
      out->val[at] = x[q];
    }
  for (int64_t i = n; i > 0; i--) out->rowptr[i] = out->rowptr[i - 1];
  out->rowptr[0] = 0;
  out->nnz = out->rowptr[n];
  spk_chol_free(h);
}

void spk_chol_free(SpChol *h) {
  if (!h) return;
  cholmod_l_free_sparse(&h->L, &h->c);
  cholmod_l_finish(&h->c);
  mem_free(h);
}
