/*
** xsmm.h — the libxsmm plugin (build/libmls_xsmm.so, src/backend/xsmm/xsmm.c): libxsmm's
** JIT-generated kernels for the matrix products of small and skinny shapes, which read their
** operands in place (OpenBLAS packs both at every call). Optional: built when the Debian package
** libxsmm-dev (a static library) is there, loaded on the first product that fits
** (dynlibs.c dl_xsmm); without it every product is OpenBLAS's. docs/architecture.md "Plugins",
** the rule in docs/architecture.md "Small products".
*/
#ifndef MLS_BACKEND_XSMM_H
#define MLS_BACKEND_XSMM_H

/* A kernel: c = a b for the column-major shapes it was made for (alpha 1, beta 0). */
typedef void (*XsmmKernel)(const double *a, const double *b, double *c);

typedef struct XsmmPlugin {
  /* The kernel of column-major C (m x n, leading dimension ldc) = op(A) op(B), op(A) m x k and
  ** op(B) k x n, A transposed when ta (lda its leading dimension), B when tb; NULL when libxsmm
  ** makes none for that shape (it has no transposed-A kernels). Thread-safe: libxsmm keeps one
  ** kernel per shape, made on its first request. */
  XsmmKernel (*dispatch)(int m, int n, int k, int lda, int ldb, int ldc, int ta, int tb);
  const char *(*arch)(void);       /* the instruction set of its kernels: "avx512_core", "hsw" */
  const char *version;             /* "libxsmm 1.17" */
} XsmmPlugin;

#endif
