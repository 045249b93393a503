/*
** sparse.cu — products with a sparse operand through cuSPARSE's generic API (cusparseSpMM on
** CSR; cuda.h, backend.h's spmm, docs/sparse.md "On the GPU"). The interpreter keeps sparse
** matrices on the host; the first product of one with a matrix of this device uploads its CSR
** arrays (an McuCsr, which the matrix's storage keeps until it is freed), so a loop over the
** same matrix uploads it once. cuSPARSE is told only NON_TRANSPOSE products, whose results it
** documents as the same from run to run (a transposed sparse operand may not be): t(S) %*% B and
** B %*% S read the CSR of t(S), made on the host and uploaded the first time a product asks
** for it. MLS's dense matrices are row-major, so S %*% B and t(S) %*% B take B and C in
** CUSPARSE_ORDER_ROW, and B %*% S is computed as its transpose, t(S) t(B): a row-major matrix
** read column-major is its transpose, so B and C are the same memory in CUSPARSE_ORDER_COL.
** Indices are 32-bit when the matrix allows (nnz and both sizes below 2^31), else 64-bit.
** The handle is made on first use: most runs multiply no sparse matrix.
*/
#include <stdlib.h>
#include <string.h>
#include <new>
#include <cusparse.h>
#include "backend/cuda/cuda_impl.h"

/* One CSR matrix on the device: rows x cols, rowptr (rows + 1) and col (nnz) in the index type
** of its McuCsr, val (nnz); NULL arrays when not made yet. */
typedef struct DevCsr { int64_t rows, cols; void *rowptr, *col; double *val; } DevCsr;
struct McuCsr {
  int64_t nnz;
  bool i64;                                  /* 64-bit indices */
  DevCsr s, t;                               /* the matrix, and its transpose once asked for */
};

static int start(McuContext *cx) {
  if (cx->sparse) return 0;
  if (cusparseCreate(&cx->sparse) != CUSPARSE_STATUS_SUCCESS) return mcu_fail(cx, "cuSPARSE could not start");
  if (cusparseSetStream(cx->sparse, cx->stream) != CUSPARSE_STATUS_SUCCESS) return mcu_fail(cx, "cuSPARSE: no stream");
  return 0;
}

static void dev_free(McuContext *cx, DevCsr *d) {
  mcu_free(cx, (double *)d->rowptr);
  mcu_free(cx, (double *)d->col);
  mcu_free(cx, d->val);
  d->rowptr = d->col = d->val = NULL;
}

void mcu_csr_free(McuContext *cx, McuCsr *m) {
  if (!m) return;
  dev_free(cx, &m->s);
  dev_free(cx, &m->t);
  delete m;
}

/* Uploads a rows x cols CSR matrix of nnz entries (rowptr; col as 32-bit c32 or 64-bit c64)
** into d, converting the indices to m's type on the host first. Waits for the copies (the
** converted indices are freed next; an upload happens once per matrix). */
static int upload(McuContext *cx, McuCsr *m, DevCsr *d, int64_t rows, int64_t cols, const int64_t *rowptr, const int32_t *c32,
                  const int64_t *c64, const double *val) {
  int64_t nnz = m->nnz;
  size_t isz = m->i64 ? sizeof(int64_t) : sizeof(int32_t), n1 = (size_t)(nnz > 0 ? nnz : 1);
  d->rows = rows;
  d->cols = cols;
  d->rowptr = mcu_alloc(cx, (size_t)(rows + 1) * isz);
  d->col = mcu_alloc(cx, n1 * isz);
  d->val = mcu_alloc(cx, n1 * sizeof(double));
  if (!d->rowptr || !d->col || !d->val) {
    dev_free(cx, d);
    return mcu_fail(cx, "out of GPU memory for a sparse matrix of %lld nonzeros", (long long)nnz);
  }
  /* the host's arrays in the device's index type (converted copies where they differ) */
  void *rp = (void *)rowptr, *ci = m->i64 ? (void *)c64 : (void *)c32, *trp = NULL, *tci = NULL;
  bool oom = false;
  if (!m->i64) {
    int32_t *r = (int32_t *)malloc((size_t)(rows + 1) * sizeof *r);
    if (r)
      for (int64_t i = 0; i <= rows; i++) r[i] = (int32_t)rowptr[i];
    rp = trp = r;
    oom |= !r;
  }
  if (!ci) {
    void *c = malloc(n1 * isz);
    for (int64_t q = 0; c && q < nnz; q++) {
      if (m->i64) ((int64_t *)c)[q] = c32[q];
      else ((int32_t *)c)[q] = (int32_t)c64[q];
    }
    ci = tci = c;
    oom |= !c;
  }
  if (oom) {
    free(trp);
    free(tci);
    dev_free(cx, d);
    return mcu_fail(cx, "out of host memory uploading a sparse matrix");
  }
  int rc = 0;
  cx->busy = true;
  if (cudaMemcpyAsync(d->rowptr, rp, (size_t)(rows + 1) * isz, cudaMemcpyHostToDevice, cx->stream) != cudaSuccess ||
      (nnz > 0 && cudaMemcpyAsync(d->col, ci, (size_t)nnz * isz, cudaMemcpyHostToDevice, cx->stream) != cudaSuccess) ||
      (nnz > 0 && cudaMemcpyAsync(d->val, val, (size_t)nnz * sizeof(double), cudaMemcpyHostToDevice, cx->stream) != cudaSuccess)) {
    cudaGetLastError();
    rc = mcu_fail(cx, "uploading a sparse matrix of %lld nonzeros failed", (long long)nnz);
  }
  if (!rc) {
    cx->st.uploads += nnz > 0 ? 3 : 1;
    rc = mcu_sync(cx);
  }
  free(trp);
  free(tci);
  if (rc) dev_free(cx, d);
  return rc;
}

/* d = t(S) of the host's rows x cols CSR (rowptr, col, val), made on the host (a stable
** counting sort by column: each row of t(S) keeps S's row order, so its columns increase) and
** uploaded. */
static int upload_t(McuContext *cx, McuCsr *m, DevCsr *d, int64_t rows, int64_t cols, const int64_t *rowptr, const int32_t *col,
                    const double *val) {
  int64_t nnz = m->nnz;
  size_t n1 = (size_t)(nnz > 0 ? nnz : 1);
  int64_t *trp = (int64_t *)calloc((size_t)cols + 1, sizeof *trp);
  int64_t *tcol = (int64_t *)malloc(n1 * sizeof *tcol);
  double *tval = (double *)malloc(n1 * sizeof *tval);
  int rc;
  if (!trp || !tcol || !tval) {
    rc = mcu_fail(cx, "out of host memory transposing a sparse matrix of %lld nonzeros", (long long)nnz);
  } else {
    for (int64_t k = 0; k < nnz; k++) trp[col[k] + 1]++;
    for (int64_t j = 0; j < cols; j++) trp[j + 1] += trp[j];
    int64_t *next = (int64_t *)malloc(((size_t)cols + 1) * sizeof *next);
    if (!next) {
      rc = mcu_fail(cx, "out of host memory transposing a sparse matrix of %lld nonzeros", (long long)nnz);
    } else {
      memcpy(next, trp, ((size_t)cols + 1) * sizeof *next);
      for (int64_t i = 0; i < rows; i++)
        for (int64_t p = rowptr[i]; p < rowptr[i + 1]; p++) {
          int64_t q = next[col[p]]++;
          tcol[q] = i;
          tval[q] = val[p];
        }
      free(next);
      rc = upload(cx, m, d, cols, rows, trp, NULL, tcol, tval);
    }
  }
  free(trp);
  free(tcol);
  free(tval);
  return rc;
}

int mcu_spmm(McuContext *cx, McuCsr **mp, int64_t rows, int64_t cols, int64_t nnz, const int64_t *rowptr, const int32_t *col,
             const double *val, int form, const double *B, int64_t ldb, double *C, int64_t crows, int64_t ccols) {
  if (mcu_capture_refuse(cx, "a sparse product (its matrix comes from the host)")) return 1;
  if (form < 0 || form > 2) return mcu_fail(cx, "mcu_spmm: no product form %d", form);
  McuCsr *m = *mp;
  if (!m) {                                    /* the first product of this matrix on this device */
    m = new (std::nothrow) McuCsr{};
    if (!m) return mcu_fail(cx, "out of host memory");
    m->nnz = nnz;
    m->i64 = nnz > INT32_MAX || rows > INT32_MAX || cols > INT32_MAX;
    *mp = m;
  }
  if (m->nnz != nnz) return mcu_fail(cx, "mcu_spmm: the device copy of a sparse matrix is stale");
  if (!m->s.val && upload(cx, m, &m->s, rows, cols, rowptr, col, NULL, val)) return 1;
  if (crows == 0 || ccols == 0) return 0;
  if (nnz == 0) {                              /* no stored entry: C = 0 */
    cx->busy = true;
    if (cudaMemsetAsync(C, 0, (size_t)(crows * ccols) * sizeof(double), cx->stream) != cudaSuccess) {
      cudaGetLastError();
      return mcu_fail(cx, "clearing a sparse product's result failed");
    }
    return 0;
  }
  if (form != 0 && !m->t.val && upload_t(cx, m, &m->t, rows, cols, rowptr, col, val)) return 1;
  if (start(cx)) return 1;
  /* A: S (form 0) or t(S); B k x n and C: row-major (forms 0, 1), or for B %*% S their
  ** transposes, column-major over the same memory (form 2) */
  const DevCsr *a = form == 0 ? &m->s : &m->t;
  cusparseIndexType_t it = m->i64 ? CUSPARSE_INDEX_64I : CUSPARSE_INDEX_32I;
  int64_t k = a->cols, n = form == 2 ? crows : ccols;
  cusparseOrder_t order = form == 2 ? CUSPARSE_ORDER_COL : CUSPARSE_ORDER_ROW;
  int64_t ldc = ccols;                         /* C packed: a row of C, or a column of t(C), is ccols long */
  cusparseSpMatDescr_t A = NULL;
  cusparseDnMatDescr_t Bd = NULL, Cd = NULL;
  int rc = 0;
  if (cusparseCreateCsr(&A, a->rows, a->cols, nnz, a->rowptr, a->col, a->val, it, it, CUSPARSE_INDEX_BASE_ZERO, CUDA_R_64F) !=
          CUSPARSE_STATUS_SUCCESS ||
      cusparseCreateDnMat(&Bd, k, n, ldb, (void *)B, CUDA_R_64F, order) != CUSPARSE_STATUS_SUCCESS ||
      cusparseCreateDnMat(&Cd, a->rows, n, ldc, C, CUDA_R_64F, order) != CUSPARSE_STATUS_SUCCESS)
    rc = mcu_fail(cx, "cuSPARSE could not describe a %lldx%lld sparse product", (long long)crows, (long long)ccols);
  double alpha = 1.0, beta = 0.0;
  size_t bytes = 0;
  double *buf = NULL;
  if (!rc) {
    cusparseStatus_t s = cusparseSpMM_bufferSize(cx->sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE,
                                                 &alpha, A, Bd, &beta, Cd, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, &bytes);
    if (s != CUSPARSE_STATUS_SUCCESS) rc = mcu_fail(cx, "cuSPARSE SpMM_bufferSize failed (status %d)", (int)s);
  }
  if (!rc && bytes > 0 && !(buf = mcu_alloc(cx, bytes)))
    rc = mcu_fail(cx, "out of GPU memory for cuSPARSE's workspace (%zu bytes)", bytes);
  if (!rc) {
    cusparseStatus_t s = cusparseSpMM(cx->sparse, CUSPARSE_OPERATION_NON_TRANSPOSE, CUSPARSE_OPERATION_NON_TRANSPOSE, &alpha, A,
                                      Bd, &beta, Cd, CUDA_R_64F, CUSPARSE_SPMM_ALG_DEFAULT, buf);
    if (s != CUSPARSE_STATUS_SUCCESS) rc = mcu_fail(cx, "cuSPARSE SpMM failed (status %d)", (int)s);
    else rc = mcu_launched(cx, "cusparseSpMM");
  }
  if (buf) mcu_free(cx, buf);                  /* (stream order keeps it until the product is done) */
  if (A) cusparseDestroySpMat(A);
  if (Bd) cusparseDestroyDnMat(Bd);
  if (Cd) cusparseDestroyDnMat(Cd);
  return rc;
}
