/*
** solver.cu — cuSOLVER's dense LU for solve(), inv() and det() (cuda.h). Column-major, as
** LAPACK: the caller (ops/linalg.c, through backend.c) hands over column-major copies,
** so the factorization, the pivots and a zero pivot's position are LAPACK's dgetrf's, and
** the condition estimate it computes on the host from the factors agrees with the CPU's.
** The handle is made on first use: most runs factor nothing.
*/
#include <cusolverDn.h>
#include "backend/cuda/cuda_impl.h"

static int start(McuContext *cx) {
  if (cx->solver) return 0;
  if (cusolverDnCreate(&cx->solver) != CUSOLVER_STATUS_SUCCESS) return mcu_fail(cx, "cuSOLVER could not start");
  if (cusolverDnSetStream(cx->solver, cx->stream) != CUSOLVER_STATUS_SUCCESS) return mcu_fail(cx, "cuSOLVER: no stream");
  return 0;
}

int mcu_getrf(McuContext *cx, double *a, int64_t n, int32_t *ipiv, int64_t *info) {
  *info = 0;
  if (mcu_capture_refuse(cx, "cuSOLVER's LU (its pivots are read on the host)")) return 1;
  if (n == 0) return 0;
  if (n > INT32_MAX / 2) return mcu_fail(cx, "matrix too large for cuSOLVER");
  if (start(cx)) return 1;
  int lwork = 0;
  cusolverStatus_t s = cusolverDnDgetrf_bufferSize(cx->solver, (int)n, (int)n, a, (int)n, &lwork);
  if (s != CUSOLVER_STATUS_SUCCESS) return mcu_fail(cx, "cuSOLVER dgetrf_bufferSize failed (status %d)", (int)s);
  double *work = mcu_alloc(cx, (size_t)(lwork > 0 ? lwork : 1) * sizeof(double));
  int *dev = (int *)mcu_alloc(cx, ((size_t)n + 1) * sizeof(int));      /* the pivots, then info */
  if (!work || !dev) {
    if (work) mcu_free(cx, work);
    if (dev) mcu_free(cx, (double *)dev);
    return mcu_fail(cx, "out of GPU memory for cuSOLVER's workspace (%lld doubles)", (long long)lwork);
  }
  int rc = 0;
  s = cusolverDnDgetrf(cx->solver, (int)n, (int)n, a, (int)n, work, dev, dev + n);
  if (s != CUSOLVER_STATUS_SUCCESS) rc = mcu_fail(cx, "cuSOLVER dgetrf failed (status %d)", (int)s);
  else if (mcu_launched(cx, "dgetrf")) rc = 1;
  int h_info = 0;
  if (!rc && cudaMemcpyAsync(ipiv, dev, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost, cx->stream) != cudaSuccess)
    rc = mcu_fail(cx, "copying dgetrf's pivots failed");
  if (!rc && cudaMemcpyAsync(&h_info, dev + n, sizeof(int), cudaMemcpyDeviceToHost, cx->stream) != cudaSuccess)
    rc = mcu_fail(cx, "copying dgetrf's status failed");
  if (!rc) rc = mcu_sync(cx);
  mcu_free(cx, work);
  mcu_free(cx, (double *)dev);
  if (!rc && h_info < 0) rc = mcu_fail(cx, "cuSOLVER dgetrf rejected argument %d", -h_info);
  *info = h_info;
  return rc;
}

int mcu_getrs(McuContext *cx, const double *lu, int64_t n, const int32_t *ipiv, double *b, int64_t k) {
  if (mcu_capture_refuse(cx, "cuSOLVER's LU (its pivots come from the host)")) return 1;
  if (n == 0 || k == 0) return 0;
  if (n > INT32_MAX / 2 || k > INT32_MAX) return mcu_fail(cx, "matrix too large for cuSOLVER");
  if (start(cx)) return 1;
  int *dev = (int *)mcu_alloc(cx, ((size_t)n + 1) * sizeof(int));
  if (!dev) return mcu_fail(cx, "out of GPU memory for cuSOLVER's pivots");
  int rc = 0;
  if (cudaMemcpyAsync(dev, ipiv, (size_t)n * sizeof(int), cudaMemcpyHostToDevice, cx->stream) != cudaSuccess)
    rc = mcu_fail(cx, "copying the pivots to the GPU failed");
  if (!rc) {
    cusolverStatus_t s = cusolverDnDgetrs(cx->solver, CUBLAS_OP_N, (int)n, (int)k, lu, (int)n, dev, b, (int)n, dev + n);
    if (s != CUSOLVER_STATUS_SUCCESS) rc = mcu_fail(cx, "cuSOLVER dgetrs failed (status %d)", (int)s);
    else if (mcu_launched(cx, "dgetrs")) rc = 1;
  }
  if (!rc) rc = mcu_sync(cx);                  /* (the pivots were copied from the caller's memory) */
  mcu_free(cx, (double *)dev);
  return rc;
}
