/*
** xsmm.c — the libxsmm plugin (backend/xsmm.h): build/libmls_xsmm.so, this file linked with the
** static libxsmm of the Debian package libxsmm-dev (and its BLAS-free stubs, libxsmmnoblas: the
** plugin never calls a BLAS). Its one exported symbol is the table mls_xsmm_plugin.
*/
#include <libxsmm.h>
#include "backend/xsmm.h"

static XsmmKernel xsmm_dispatch(int m, int n, int k, int lda, int ldb, int ldc, int ta, int tb) {
  libxsmm_blasint M = m, N = n, K = k, LA = lda, LB = ldb, LC = ldc;
  const double alpha = 1, beta = 0;
  int flags = (ta ? LIBXSMM_GEMM_FLAG_TRANS_A : 0) | (tb ? LIBXSMM_GEMM_FLAG_TRANS_B : 0);
  int prefetch = LIBXSMM_PREFETCH_NONE;
  libxsmm_dmmfunction f = libxsmm_dmmdispatch(M, N, K, &LA, &LB, &LC, &alpha, &beta, &flags, &prefetch);
  return (XsmmKernel)f;
}

static const char *xsmm_arch(void) { return libxsmm_get_target_arch(); }

__attribute__((visibility("default"))) const XsmmPlugin mls_xsmm_plugin = { xsmm_dispatch, xsmm_arch, "libxsmm " LIBXSMM_VERSION };
