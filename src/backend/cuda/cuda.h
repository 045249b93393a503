/*
** cuda.h — the plain-C face of the CUDA code (cuda.cu, kernels_*.cu) towards backend.c: raw
** device pointers, sizes and op codes, status codes (0 = ok, the reason in mcu_error()).
** Every function but the pure ones takes the context it works in (McuContext, cuda_impl.h):
** the state of one instance of the CUDA backend, which backend.c keeps in Backend.ctx.
** Nothing here names an interpreter type, and nothing behind it longjmps: backend.c turns a
** status into the Backend interface's status, and ops.c into a located error.
**
** Memory is CUDA managed memory (cudaMallocManaged): a matrix on the GPU stays there between
** kernels, and host code that reads it (printing, indexing, an op without a GPU kernel) reads
** the same pointer after mcu_host_access() has waited for the device. A buffer the host has
** touched is prefetched back to the device (one bulk migration) before a kernel uses it.
*/
#ifndef MLS_CUDA_H
#define MLS_CUDA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- cuda.cu: the device, the stream, memory ---- */
typedef struct McuContext McuContext;
McuContext *mcu_new(void);                   /* a context (device untried), NULL: no memory */
void mcu_delete(McuContext *cx);             /* waits, gives its memory and handles back, frees it */
int mcu_init(McuContext *cx);                /* 0 when a device is usable (idempotent) */
const char *mcu_error(McuContext *cx);       /* the last failure, in words */
const char *mcu_describe(McuContext *cx);    /* "NVIDIA H100 80GB HBM3, CUDA 13.0, sm_90" */
/* The caching allocator (PyTorch's idea): freed blocks are kept by rounded size and handed
** out again, so a training loop does not call cudaMallocManaged every step. NULL when the
** device has no room (after giving the cache back). */
double *mcu_alloc(McuContext *cx, size_t nbytes);
void mcu_free(McuContext *cx, double *p);
void mcu_trim(McuContext *cx);               /* gives every cached block back */
int mcu_sync(McuContext *cx);                /* waits for the stream */
int mcu_host_access(McuContext *cx, const double *p);   /* waits; p is read or written by the host next */
int mcu_device_access(McuContext *cx, const double *p); /* p is used by a kernel next: prefetch if on host */
/* Bulk copies between host memory and a device buffer (DMA, not page migration). */
int mcu_upload(McuContext *cx, double *dst, const double *src, size_t nbytes);
int mcu_download(McuContext *cx, double *dst, const double *src, size_t nbytes);
size_t mcu_bytes_in_use(McuContext *cx);
size_t mcu_bytes_cached(McuContext *cx);
/* Page-locked host memory (cudaHostAlloc): the MPI allreduce's staging buffer; NULL on failure. */
double *mcu_pinned_alloc(size_t nbytes);
void mcu_pinned_free(double *p);
/* The allreduce's combine (backend.h "combine"): acc = lo (+) hi over n doubles, op 0 sum,
** 1 max, 2 min; waits for the stream before returning (MPI reads acc next). */
int mcu_combine(McuContext *cx, int op, double *acc, const double *other, int64_t n, bool acc_lower);

/* ---- CUDA graphs (cuda.cu) ----
** capture_begin records the stream's work from now on instead of running it; capture_end
** stops and returns the instantiated graph (a replay), or NULL with the reason in why when
** something needed the host meanwhile (then nothing ran). The blocks allocated while
** capturing belong to the replay until replay_free: freeing them keeps them for it. replay
** queues one launch of the whole graph. While capturing, mcu_capture_refuse(what) fails the
** capture and returns 1 (0 when not capturing): for entries that cannot be captured. */
int mcu_capture_begin(McuContext *cx);
void *mcu_capture_end(McuContext *cx, char *why, size_t nwhy);
int mcu_replay(McuContext *cx, void *r);
void mcu_replay_free(McuContext *cx, void *r);
bool mcu_capturing(McuContext *cx);
int mcu_capture_refuse(McuContext *cx, const char *what);

/* ---- cuBLAS (cuda.cu) ----
** Row-major C (m x n, leading dimension ldc) = alpha op(A) op(B) + beta C, op(X) = X or X^T. */
int mcu_gemm(McuContext *cx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *A, int64_t lda,
             const double *B, int64_t ldb, double beta, double *C, int64_t ldc);

/* ---- solver.cu: cuSOLVER's LU (column-major, as LAPACK's dgetrf/dgetrs) ----
** getrf factors the n x n a in place; ipiv (host memory, n) gets the 1-based pivots and
** *info dgetrf's info. getrs overwrites the n x k b by the solution of A X = B. */
int mcu_getrf(McuContext *cx, double *a, int64_t n, int32_t *ipiv, int64_t *info);
int mcu_getrs(McuContext *cx, const double *lu, int64_t n, const int32_t *ipiv, double *b, int64_t k);

/* ---- sparse.cu: products with a sparse operand through cuSPARSE (cusparseSpMM on CSR) ----
** C (crows x ccols, row-major, packed) = S B (form 0), t(S) B (form 1) or B S (form 2: backend.h's
** SPMM_SB, SPMM_TB, SPMM_BS), S the host's rows x cols CSR matrix of nnz entries (rowptr,
** col, val), B row-major on the device with rows ldb apart. *m is S's copy on the device: NULL
** the first time, when it is made (S uploaded; the CSR of t(S) too, made on the host, the
** first time a form needs it) and left in *m even when the product then fails; later calls
** for the same S pass it back. mcu_csr_free gives it back. */
typedef struct McuCsr McuCsr;
int mcu_spmm(McuContext *cx, McuCsr **m, int64_t rows, int64_t cols, int64_t nnz, const int64_t *rowptr, const int32_t *col,
             const double *val, int form, const double *B, int64_t ldb, double *C, int64_t crows, int64_t ccols);
void mcu_csr_free(McuContext *cx, McuCsr *m);

/* ---- kernels_ew.cu: elementwise ----
** An operand of a binary op: a pointer read as bc says (0 full, 1 scalar, 2 row, 3 column:
** backend.h's BcastMode), or, when p is NULL, the number s. */
typedef struct McuArg { const double *p; int bc; double s; } McuArg;
int mcu_binary(McuContext *cx, int op, double *out, McuArg a, McuArg b, int64_t rows, int64_t cols);
int mcu_unary(McuContext *cx, int op, double *out, const double *x, int64_t n);
/* 2 for a binary op with a kernel here, 1 for a unary one, 0 for an op without one. */
int mcu_ew_arity(int op);
/* out (rows x cols, written with element strides o0, o1: packed is cols, 1) = in read with
** element strides s0, s1 (a transposed view, a block, or 0, 0 for one value filled in). */
int mcu_copy2d(McuContext *cx, double *out, int64_t o0, int64_t o1, const double *in, int64_t rows, int64_t cols, int64_t s0, int64_t s1);
/* out (rows x cols, packed)[i, j] = in[r[i] * s0 + c[j] * s1]: r and c hold 0-based positions
** (as doubles) on the device; NULL: r0 + i (c0 + j). */
int mcu_gather(McuContext *cx, double *out, const double *in, int64_t s0, int64_t s1, const double *r, int64_t r0, const double *c,
               int64_t c0, int64_t rows, int64_t cols);
/* out[r[i] * o0 + c[j] * o1] = in[i * s0 + j * s1] for the rows x cols of in (distinct
** positions; NULL r or c: r0 + i, c0 + j). */
int mcu_scatter(McuContext *cx, double *out, int64_t o0, int64_t o1, const double *r, int64_t r0, const double *c, int64_t c0,
                const double *in, int64_t s0, int64_t s1, int64_t rows, int64_t cols);
/* out = t ? y : n elementwise (NaN where t is NaN); an input of 1 element broadcasts. */
int mcu_ifelse(McuContext *cx, double *out, const double *t, bool t1, const double *y, bool y1, const double *f, bool f1, int64_t n);

/* ---- kernels_red.cu: the reduction family (ops.def's OPF_RED), deterministic: a fixed
** blocking that depends only on the shape, so every run gives the same bits ---- */
int mcu_reduce(McuContext *cx, int op, double *out, const double *x, int64_t rows, int64_t cols, int64_t orows, int64_t ocols);
bool mcu_reduce_supported(int op);

/* ---- fused.cu: staged fusion groups as kernels generated by backend.c, compiled by NVRTC
** for this GPU on first use and cached by their source ----
** src defines extern "C" __global__ mls_fused(...) taking args (cudaLaunchKernel's array);
** the headers (name, text) are what it #includes. With sum, each block leaves its partial sum
** in the scratch and out[0] gets their total. */
int mcu_fused_run(McuContext *cx, const char *src, const char *const *hdr_src, const char *const *hdr_names, int nhdr, void **args,
                  int64_t n, bool sum, double *out);
double *mcu_scratch_ptr(McuContext *cx);

#ifdef __cplusplus
}
#endif

#endif
