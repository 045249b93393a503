/*
** sparse.h — the CPU kernels of sparse matrices (CSR, tensor.h's SpCsr; docs/sparse.md).
** Pure functions over the arrays: no Interp, no allocation of results. A kernel whose result
** has a pattern not known in advance runs in two passes: a *_count pass fills the result's
** rowptr (rows + 1 entries) and returns its nnz, the caller (src/ops/sparse.c) allocates the
** result with that room (tensor_sparse_new), and the kernel proper fills col and val and sets
** nnz. Results keep column indices strictly increasing within each row. Scratch memory a
** kernel needs comes from mem_try_alloc; a kernel that can fail returns 0, or -1 when that
** allocation failed (nothing written). Elementwise values come from scalar.h's formulas
** (sc_unary, sc_binary), the one definition every other path uses, so a sparse result holds
** exactly the numbers the dense op gives at its stored positions.
**
** Dense arrays are row-major with a leading dimension (ld: elements between rows); "packed"
** means ld == cols. Kernels files: cpu_sparse_mm.c (conversions, products, transpose),
** cpu_sparse_ew.c (elementwise, aggregates, indexing, binding).
*/
#ifndef MLS_BACKEND_SPARSE_H
#define MLS_BACKEND_SPARSE_H

#include <math.h>
#include <stdbool.h>
#include "backend/backend.h"
#include "tensor.h"

/* ---- conversions and structure (cpu_sparse_mm.c) ---- */
/* d (a->rows x a->cols, packed) = a: zero-filled, then the stored values written. */
void spk_to_dense(const SpCsr *a, double *d);
/* Whether a dense value is stored in CSR: != 0, NaN, and -0 (stored so that its sign
** survives: 1 / -0 is -Inf; an unstored cell is +0). */
static inline bool spk_stored(double x) { return x != 0 || signbit(x); }
/* The rows x cols dense matrix read at d[i * s0 + j * s1] as CSR, in two steps by rows on be's
** threads: spk_count_dense makes rp[0 .. rows] the row pointers of its stored values and
** returns their number; spk_from_dense gives out (room for them; rows/cols set by the caller)
** rp (which may be out->rowptr itself) and those values. */
int64_t spk_count_dense(const Backend *be, const double *d, int64_t rows, int64_t cols, int64_t s0, int64_t s1, int64_t *rp);
void spk_from_dense(const Backend *be, const double *d, int64_t rows, int64_t cols, int64_t s0, int64_t s1, const int64_t *rp,
                    SpCsr *out);
/* out (a->cols x a->rows, room for a->nnz) = t(a). O(nnz + rows + cols), stable. */
void spk_transpose(const SpCsr *a, SpCsr *out);
/* Copies a into out (room for a->nnz; same shape). */
void spk_copy(const SpCsr *a, SpCsr *out);

/* ---- products (cpu_sparse_mm.c); parallel over result rows (cpu_parallel_for) ---- */
/* C (a->rows x n, packed, overwritten) = a %*% B, B: a->cols x n at B[k * ldb + j]. */
void spk_spmm(const Backend *be, const SpCsr *a, const double *B, int64_t ldb, int64_t n, double *C);
/* C (a->cols x n, packed, overwritten) = t(a) %*% B, B: a->rows x n at B[i * ldb + j], without
** forming t(a) (the gradient of X %*% W with sparse X: t(X) %*% G). Returns -1 only when its
** scratch could not be allocated. */
int spk_spmm_t(const Backend *be, const SpCsr *a, const double *B, int64_t ldb, int64_t n, double *C);
/* C (m x b->cols, packed, overwritten) = A %*% b, A: m x b->rows at A[i * lda + k]. */
void spk_dsmm(const Backend *be, const double *A, int64_t lda, int64_t m, const SpCsr *b, double *C);
/* Sparse %*% sparse (Gustavson): the count pass fills rowptr (a->rows + 1) and returns nnz
** (-1: scratch not allocated); spk_spgemm fills out (rowptr as counted, room for nnz). */
int64_t spk_spgemm_count(const Backend *be, const SpCsr *a, const SpCsr *b, int64_t *rowptr);
/* (The caller checks that both operands' stored values are finite: a stored Inf or NaN times an
** unstored 0 is NaN densely, which spk_spgemm does not make.) spk_union and spk_select read
** out->rowptr as their count pass filled it; select positions are below SP_MAX_COLS. */
int spk_spgemm(const Backend *be, const SpCsr *a, const SpCsr *b, SpCsr *out);

/* The sampled product (SDDMM): out[q] = sum_t A[i, t] * Bt[j, t] for each stored entry q = (i, j)
** of pat (its values unread): (A %*% t(Bt)) at pat's pattern only, A m x k (lda), Bt n x k (ldbt),
** summed in t order. Parallel over rows (docs/sparse.md "Sparse-safe expressions"). */
void spk_sddmm(const Backend *be, const SpCsr *pat, const double *A, int64_t lda, const double *Bt, int64_t ldbt, int64_t k, double *out);

/* out = pat * e at pat's pattern: out's rowptr and columns pat's, out->val[q] = pat->val[q] *
** e[q] (out allocated for pat->nnz entries). Parallel over rows: the masked products' result
** (ops/masked.c) at every CG step of a staged ALS, which one thread copied alone. */
void spk_mul_at(const Backend *be, const SpCsr *pat, const double *e, SpCsr *out);

/* ---- sparse Cholesky through CHOLMOD (cpu_cholmod.c) ---- */
/* X (n x k, packed) = A^-1 B for a symmetric positive definite A (n x n; B n x k at B[i * ldb + j]).
** 0, 1 when A is not positive definite, -1 when CHOLMOD failed (out of memory). */
int spk_chol_solve(const SpCsr *A, const double *B, int64_t ldb, int64_t k, double *X);
/* cholesky(A): the lower L with L t(L) = A (natural ordering: LAPACK's L), in two steps: the
** factor (NULL with *status 1: not positive definite, -1: failed) and its entry count, then
** spk_chol_take fills out (room for nnz; n x n set by the caller) and frees the handle, which
** spk_chol_free frees instead when the result is not wanted. */
typedef struct SpChol SpChol;
SpChol *spk_chol_factor(const SpCsr *A, int *status, int64_t *nnz);
void spk_chol_take(SpChol *h, SpCsr *out);
void spk_chol_free(SpChol *h);

/* ---- sparse LU through UMFPACK (cpu_umfpack.c) ---- */
/* The LU factors of the square A (n >= 1, A borrowed and kept alive by the caller while the handle
** lives), or NULL with *status 1: A is singular (*zero_at: the 1-based position of a zero pivot on
** the diagonal of the factor's U, in UMFPACK's pivot order), or -1: UMFPACK failed (memory). */
typedef struct SpLu SpLu;
SpLu *spk_lu_factor(const SpCsr *A, int *status, int64_t *zero_at);
/* X (n x k at X[i * ldx + j]) = A^-1 B, B n x k at B[i * ldb + j]: 0, or -1 when UMFPACK failed. */
int spk_lu_solve(SpLu *h, const double *B, int64_t ldb, int64_t k, double *X, int64_t ldx);
/* x (n values) = row i (0-based) of A^-1: one solve with the factor. 0, or -1 when UMFPACK failed. */
int spk_lu_inv_row(SpLu *h, int64_t i, double *x);
/* *det = det(A) from the factor's pivots, row scaling and permutations, accumulated as mantissa and
** exponent (Inf or 0 only when det(A) itself overflows or underflows). 0, or -1 when memory or
** UMFPACK failed. */
int spk_lu_det(SpLu *h, double *det);
/* A's reciprocal condition number in the 1-norm, estimated as LAPACK's dgecon estimates it (Hager
** and Higham's method, a few solves); -1 when a solve failed. */
double spk_lu_rcond(SpLu *h);
void spk_lu_free(SpLu *h);

/* ---- elementwise (cpu_sparse_ew.c) ---- */
/* out (a's shape and pattern, room for a->nnz) = sc_unary(op, a) at a's stored entries. The
** caller checks that the op keeps zeros (sc_unary(op, 0) == 0). */
void spk_unary(const Backend *be, int op, const SpCsr *a, SpCsr *out);
/* out = sc_binary(op, a, s) (s_left: sc_binary(op, s, a)) at a's stored entries (the caller
** checks that sc_binary(op, 0, s) is 0). */
void spk_scalar(const Backend *be, int op, const SpCsr *a, double s, bool s_left, SpCsr *out);
/* out (a's pattern) = sc_binary(op, a, B) (b_left: sc_binary(op, B, a)) at a's stored entries,
** B dense broadcast to a's shape as bc says (BC_FULL: a->rows x a->cols at B[i * ldb + j];
** BC_ROW: one row, B[j]; BC_COL: one column, B[i * ldb]; BC_SCALAR: B[0]). The caller checks
** that the op gives 0 wherever a is not stored (e.g. *, with B finite there). */
void spk_dense_pattern(const Backend *be, int op, const SpCsr *a, const double *B, int64_t ldb, BcastMode bc, bool b_left, SpCsr *out);
/* Union of the patterns of a and b (same shape): the count pass fills rowptr and returns nnz;
** spk_union fills out with sc_binary(op, x, y) at each position of the union, x and y 0 where
** not stored (the caller checks sc_binary(op, 0, 0) == 0). */
int64_t spk_union_count(const Backend *be, const SpCsr *a, const SpCsr *b, int64_t *rowptr);
void spk_union(const Backend *be, int op, const SpCsr *a, const SpCsr *b, SpCsr *out);

/* ---- aggregates (cpu_sparse_ew.c): the dense op's value (NaN propagating as cpu_reduce.c
** does; a matrix with unstored entries has zeros among its values) ---- */
double spk_sum(const Backend *be, const SpCsr *a);
void spk_row_sums(const Backend *be, const SpCsr *a, double *out);           /* a->rows values */
void spk_col_sums(const SpCsr *a, double *out);           /* a->cols values */
/* op: OP_MAX, OP_MIN (the whole matrix; an empty one: the dense op's value for 0x0 is the
** caller's business), OP_ROWMAXS, OP_ROWMINS (out: rows values), OP_COLMAXS, OP_COLMINS
** (out: cols values). */
void spk_extreme(const Backend *be, int op, const SpCsr *a, double *out);

/* ---- indexing and binding (cpu_sparse_ew.c) ---- */
/* a[r, c]: r (nr 0-based row positions, any order, repeats allowed) and c (nc column
** positions, likewise; NULL: all columns, nc == a->cols). The count pass fills rowptr (nr + 1)
** and returns nnz (-1: scratch failed); spk_select fills out (nr x nc). */
int64_t spk_select_count(const SpCsr *a, const int64_t *r, int64_t nr, const int64_t *c, int64_t nc, int64_t *rowptr);
int spk_select(const SpCsr *a, const int64_t *r, int64_t nr, const int64_t *c, int64_t nc, SpCsr *out);
/* out = rbind(a, b) (same cols; room for a->nnz + b->nnz), cbind(a, b) (same rows). */
void spk_rbind(const SpCsr *a, const SpCsr *b, SpCsr *out);
void spk_cbind(const SpCsr *a, const SpCsr *b, SpCsr *out);
/* The diagonal of a (n = min(rows, cols) values, dense out). */
void spk_diag(const SpCsr *a, double *out);

#endif
