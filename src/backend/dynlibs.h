/*
** dynlibs.h — OpenBLAS, LAPACKE, CHOLMOD and UMFPACK loaded with dlopen on their first call (dynlibs.c),
** not by the dynamic linker at start: OpenBLAS alone has some 14000 symbol relocations, about
** 2 ms of every start (issue 31). A file that calls them includes this header instead of
** <cblas.h>, <lapacke.h>, <suitesparse/cholmod.h> or <suitesparse/umfpack.h>: each name below becomes a call through the
** library's table, e.g. cblas_dgemm(...) is (dl_blas()->cblas_dgemm)(...), with the very
** prototype of the library's header (__typeof__), so the compiler checks every call as before.
*/
#ifndef MLS_BACKEND_DYNLIBS_H
#define MLS_BACKEND_DYNLIBS_H

#include <cblas.h>
#undef I          /* <complex.h> (via cblas.h) defines I; MLS uses I for the interpreter */
#include <lapacke.h>
#undef I
#include <suitesparse/cholmod.h>
#include <suitesparse/umfpack.h>

/* OpenBLAS's own entry points, declared here because <cblas.h> may be another package's
** (Debian's reference libblas-dev ships one too); loading libopenblas by name (its soname, from
** the Makefile) means the program never silently ends up on the reference BLAS. */
void openblas_set_num_threads(int num_threads);
char *openblas_get_config(void);

/* The functions of each library MLS calls. ORDER: the #defines at the end of this file. */
#define DL_BLAS(X) X(cblas_dgemm) X(cblas_dsyrk) X(cblas_dgemv) X(cblas_ddot) X(cblas_daxpy) \
  X(openblas_set_num_threads) X(openblas_get_config)
#define DL_LAPACK(X) X(LAPACKE_dgecon) X(LAPACKE_dgeqrf) X(LAPACKE_dgesdd) X(LAPACKE_dgesdd_work) X(LAPACKE_dgesvd) \
  X(LAPACKE_dgesvd_work) X(LAPACKE_dgetrf) X(LAPACKE_dgetri) X(LAPACKE_dgetrs) X(LAPACKE_dlange) X(LAPACKE_dorgqr) \
  X(LAPACKE_dpotrf) X(LAPACKE_dsyevd)
#define DL_CHOLMOD(X) X(cholmod_l_start) X(cholmod_l_finish) X(cholmod_l_allocate_sparse) X(cholmod_l_allocate_dense) \
  X(cholmod_l_analyze) X(cholmod_l_factorize) X(cholmod_l_solve) X(cholmod_l_factor_to_sparse) X(cholmod_l_free_dense) \
  X(cholmod_l_free_factor) X(cholmod_l_free_sparse)
#define DL_UMFPACK(X) X(umfpack_dl_defaults) X(umfpack_dl_symbolic) X(umfpack_dl_numeric) X(umfpack_dl_wsolve) \
  X(umfpack_dl_get_numeric) X(umfpack_dl_get_determinant) X(umfpack_dl_free_symbolic) X(umfpack_dl_free_numeric)

#define DL_FIELD(f) __typeof__(&f) f;
typedef struct DlBlas { DL_BLAS(DL_FIELD) } DlBlas;
typedef struct DlLapack { DL_LAPACK(DL_FIELD) } DlLapack;
typedef struct DlCholmod { DL_CHOLMOD(DL_FIELD) } DlCholmod;
typedef struct DlUmfpack { DL_UMFPACK(DL_FIELD) } DlUmfpack;
#undef DL_FIELD

/* Each library's table, the library loaded on the first call (from any thread; once per
** process). A library that cannot be loaded ends the process with status 127 and its name and
** dlerror()'s reason on stderr, as the dynamic linker did at start when it was linked. */
const DlBlas *dl_blas(void);
const DlLapack *dl_lapack(void);
const DlCholmod *dl_cholmod(void);
const DlUmfpack *dl_umfpack(void);
/* The libxsmm plugin's table (backend/xsmm.h), loaded on the first call; NULL when the plugin
** is not there (built without libxsmm-dev, or hidden by MLS_PLUGIN_DIR) or MLS_XSMM=0 is set:
** then every product is OpenBLAS's. Never ends the process. */
const struct XsmmPlugin *dl_xsmm(void);
/* After dl_xsmm returned NULL: why, when the plugin was there but could not be loaded (dlopen's
** reason), else NULL (not there, or MLS_XSMM=0). */
const char *dl_xsmm_why(void);

#ifndef MLS_DYNLIBS_IMPL
#define cblas_dgemm (dl_blas()->cblas_dgemm)
#define cblas_dsyrk (dl_blas()->cblas_dsyrk)
#define cblas_dgemv (dl_blas()->cblas_dgemv)
#define cblas_ddot (dl_blas()->cblas_ddot)
#define cblas_daxpy (dl_blas()->cblas_daxpy)
#define openblas_set_num_threads (dl_blas()->openblas_set_num_threads)
#define openblas_get_config (dl_blas()->openblas_get_config)
#define LAPACKE_dgecon (dl_lapack()->LAPACKE_dgecon)
#define LAPACKE_dgeqrf (dl_lapack()->LAPACKE_dgeqrf)
#define LAPACKE_dgesdd (dl_lapack()->LAPACKE_dgesdd)
#define LAPACKE_dgesdd_work (dl_lapack()->LAPACKE_dgesdd_work)
#define LAPACKE_dgesvd (dl_lapack()->LAPACKE_dgesvd)
#define LAPACKE_dgesvd_work (dl_lapack()->LAPACKE_dgesvd_work)
#define LAPACKE_dgetrf (dl_lapack()->LAPACKE_dgetrf)
#define LAPACKE_dgetri (dl_lapack()->LAPACKE_dgetri)
#define LAPACKE_dgetrs (dl_lapack()->LAPACKE_dgetrs)
#define LAPACKE_dlange (dl_lapack()->LAPACKE_dlange)
#define LAPACKE_dorgqr (dl_lapack()->LAPACKE_dorgqr)
#define LAPACKE_dpotrf (dl_lapack()->LAPACKE_dpotrf)
#define LAPACKE_dsyevd (dl_lapack()->LAPACKE_dsyevd)
#define cholmod_l_start (dl_cholmod()->cholmod_l_start)
#define cholmod_l_finish (dl_cholmod()->cholmod_l_finish)
#define cholmod_l_allocate_sparse (dl_cholmod()->cholmod_l_allocate_sparse)
#define cholmod_l_allocate_dense (dl_cholmod()->cholmod_l_allocate_dense)
#define cholmod_l_analyze (dl_cholmod()->cholmod_l_analyze)
#define cholmod_l_factorize (dl_cholmod()->cholmod_l_factorize)
#define cholmod_l_solve (dl_cholmod()->cholmod_l_solve)
#define cholmod_l_factor_to_sparse (dl_cholmod()->cholmod_l_factor_to_sparse)
#define cholmod_l_free_dense (dl_cholmod()->cholmod_l_free_dense)
#define cholmod_l_free_factor (dl_cholmod()->cholmod_l_free_factor)
#define cholmod_l_free_sparse (dl_cholmod()->cholmod_l_free_sparse)
#define umfpack_dl_defaults (dl_umfpack()->umfpack_dl_defaults)
#define umfpack_dl_symbolic (dl_umfpack()->umfpack_dl_symbolic)
#define umfpack_dl_numeric (dl_umfpack()->umfpack_dl_numeric)
#define umfpack_dl_wsolve (dl_umfpack()->umfpack_dl_wsolve)
#define umfpack_dl_get_numeric (dl_umfpack()->umfpack_dl_get_numeric)
#define umfpack_dl_get_determinant (dl_umfpack()->umfpack_dl_get_determinant)
#define umfpack_dl_free_symbolic (dl_umfpack()->umfpack_dl_free_symbolic)
#define umfpack_dl_free_numeric (dl_umfpack()->umfpack_dl_free_numeric)
#endif

#endif
