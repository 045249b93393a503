/*
** tensor.h — Storage (bytes owned through a backend) and Tensor (a 2-D row-major view of a
** storage with element strides), after Torch7's TH. A transposed or sliced view shares the
** storage; tensor_contiguous() returns the tensor itself (retained) or a packed copy.
** Every *_new/_clone/_contiguous returns a reference the caller owns (+1).
*/
#ifndef MLS_TENSOR_H
#define MLS_TENSOR_H

#include "mls.h"

#define MLS_MAX_DIMS 2

struct Backend;

/* A sparse matrix's storage (docs/sparse.md): compressed sparse rows. Row i's stored entries
** are val[rowptr[i] .. rowptr[i+1]) at the 0-based columns col[...], strictly increasing within
** a row; rowptr[rows] == nnz. A stored entry may hold 0 (an op that keeps the pattern, X * 0);
** an entry not stored is +0. Arrays hold cap entries (rowptr: rows + 1), from mem_try_alloc. */
typedef struct SpCsr {
  int64_t rows, cols, nnz, cap;
  int64_t *rowptr;
  int32_t *col;
  double *val;
} SpCsr;
/* Columns a sparse matrix may have (its column indices are int32_t). */
#define SP_MAX_COLS INT32_MAX

typedef struct Storage {
  int32_t refcount;
  bool embedded;                  /* lives in one block with its first Tensor and the data */
  bool dev;                       /* device memory the host reaches through be->host_access */
  const struct Backend *be;
  bool abstract;                  /* not computed: an abstract trace's stand-in (tensor_abstract) */
  bool sparse;                    /* the data is csr, not yet densified: data is NULL and host code
                                  ** that reads data (tensor_data) first turns the storage dense */
  double *data;
  size_t nbytes;                  /* of data; a sparse storage's arrays are counted in csr_bytes */
  SpCsr *csr;                     /* sparse: the matrix; else NULL */
  size_t csr_bytes;
  void *csr_dev;                  /* sparse: a device's copy of csr (Backend spmm, made on a product
                                  ** with a matrix of that device), or NULL; freed with csr, or when
                                  ** csr changes (tensor_sparse_reserve) */
  const struct Backend *csr_dev_be;   /* the instance that made csr_dev (held while it lives) */
} Storage;

/* R's names of a vector's elements (docs/language.md §16, "Named elements"): one string per
** element, in row-major order, "" for an unnamed one; the strings live in the same block.
** Shared by the tensors that carry them (refcounted); NULL on almost every tensor. */
typedef struct Tensor Tensor;
typedef struct TensorNames {
  int32_t refcount;
  int64_t n;
  const char *s[];
} TensorNames;
/* A names block (+1) for n strings s[i] of lens[i] bytes (lens NULL: NUL-terminated). */
TensorNames *tnames_new(int64_t n, const char *const *s, const size_t *lens);
void tnames_release(TensorNames *nm);
/* Gives t the names nm (retained; NULL removes them), dropping the ones it had. */
void tensor_set_names(Tensor *t, TensorNames *nm);

typedef struct Tensor {
  int32_t refcount;
  bool logical;                   /* made by a comparison or !, &, |: its 0/1 are FALSE/TRUE, so
                                  ** x[x > 1] is a mask, not positions (eval.c index_masks) */
  Storage *st;
  size_t offset;                  /* in elements */
  int64_t shape[MLS_MAX_DIMS];    /* rows, cols */
  int64_t stride[MLS_MAX_DIMS];   /* in elements */
  Span origin;
  TensorNames *names;             /* R's element names, or NULL: only tensor_set_names sets them;
                                  ** ops make results without, eval.c passes them on as R does */
} Tensor;

/* Allocates rows x cols on the interpreter's device (I->device: the CPU unless --device gpu
** or device("gpu")), uninitialized; throws "out of memory allocating a RxC matrix (N GiB)" (on a
** GPU: "out of GPU memory ...") when too large. */
Tensor *tensor_new(Interp *I, int64_t rows, int64_t cols);
/* Counts n bytes of workspace (a builtin's scratch, LAPACK's arrays; what: "LAPACK workspace
** for svd") against --max-memory, or throws the located "out of memory allocating N of what:
** over the limit of ..." error. The caller gives them back with mem_uncharge(n). */
void tensor_charge(Interp *I, uint64_t n, const char *what);
/* n bytes of scratch memory (+1: the caller's, not zeroed) counted against --max-memory (past
** the limit: the located "out of memory allocating N of workspace" error; a failing malloc is
** mem_oom). A throw frees it (mls_defer) until tensor_scratch_free, which frees it on the normal
** path; several are freed newest first. (bi_scratch is this for the builtins.) */
void *tensor_scratch(Interp *I, size_t n);
void tensor_scratch_free(Interp *I, void *p);
/* The same on backend be. */
Tensor *tensor_new_on(Interp *I, const struct Backend *be, int64_t rows, int64_t cols);
/* In host memory whatever the default device (scratch the host fills, such as positions). */
Tensor *tensor_new_host(Interp *I, int64_t rows, int64_t cols);
/* A packed copy of t on backend be (+1): how gpu(X) and cpu(X) move data. */
Tensor *tensor_to(Interp *I, const Tensor *t, const struct Backend *be);
/* Matrices of at most this many elements live in one block: Tensor, Storage and data. */
#define TENSOR_SMALL 64
Tensor *tensor_zeros(Interp *I, int64_t rows, int64_t cols);
/* A rows x cols matrix whose elements an abstract trace did not compute (staging/stage.c):
** zeros, its storage flagged abstract, so a kernel that meets it stops the trace. A large one
** is an empty sparse storage, so that tracing a 20000 x 20000 temporary costs no 3 GB. +1. */
Tensor *tensor_abstract(Interp *I, int64_t rows, int64_t cols);
Tensor *tensor_clone(Interp *I, const Tensor *t);      /* on t's backend */
Tensor *tensor_contiguous(Interp *I, Tensor *t);
/* Rows r0 .. r0+n-1 of t (all columns) as a view sharing t's storage (+1): no data copied.
** t must have unit column stride; the view is contiguous. Writes to either copy first
** (copy-on-write checks the storage's refcount). */
Tensor *tensor_view_rows(Tensor *t, int64_t r0, int64_t n);
/* The transpose of t as a view sharing t's storage (+1; t is borrowed): shape and strides
** swapped, no data copied. The transpose of a packed matrix has stride[0] == 1, which a GEMM
** reads through its transpose flag; other consumers pack it (tensor_contiguous). A vector or
** an empty matrix gets the strides of a packed one, so its transpose stays contiguous. Writes
** to either copy first (copy-on-write checks the storage's refcount). */
Tensor *tensor_view_t(Tensor *t);
/* Rows r0..r0+nr-1 and columns c0..c0+nc-1 (0-based) of a matrix in device memory, copied
** there (X[a:b, c:d] of a GPU matrix); NULL when m is in host memory. */
Tensor *tensor_block_on_device(Interp *I, const Tensor *m, int64_t r0, int64_t nr, int64_t c0, int64_t nc, Span sp);
/* X[v, w] of a matrix in device memory, gathered there: rpos and cpos are host vectors
** (packed, CPU memory) of nr and nc 0-based positions, or NULL for r0 + i and c0 + j. NULL
** when m is in host memory. */
Tensor *tensor_gather_on_device(Interp *I, const Tensor *m, Tensor *rpos, int64_t nr, int64_t r0, Tensor *cpos, int64_t nc,
                                int64_t c0, Span sp);
/* Writes src (nr x nc, or a vector of nr * nc; NULL: fill) into that block of m, which the
** caller owns alone, on the device (X[a:b, c:d] = Y of GPU matrices). false, with nothing
** written, when m is in host memory or src is not on m's device: the host writes then. */
bool tensor_write_block_on_device(Interp *I, Tensor *m, int64_t r0, int64_t nr, int64_t c0, int64_t nc, const Tensor *src,
                                  double fill, Span sp);
/* The same for X[v, w] = Y: rpos and cpos as for tensor_gather_on_device, distinct. */
bool tensor_scatter_on_device(Interp *I, Tensor *m, Tensor *rpos, int64_t nr, int64_t r0, Tensor *cpos, int64_t nc, int64_t c0,
                              const Tensor *src, double fill, Span sp);
void tensor_free(Tensor *t);     /* the refcount reached zero */
static inline void tensor_free_ref(Tensor *t) { if (--t->refcount == 0) tensor_free(t); }

static inline int64_t tensor_rows(const Tensor *t) { return t->shape[0]; }
static inline int64_t tensor_cols(const Tensor *t) { return t->shape[1]; }
static inline int64_t tensor_numel(const Tensor *t) { return t->shape[0] * t->shape[1]; }
static inline bool tensor_is_contiguous(const Tensor *t) {
  return t->stride[1] == 1 && (t->stride[0] == t->shape[1] || t->shape[0] <= 1);
}
/* The host is about to touch st's data: wait for the device (tensor.c; dev storages only), or
** (a sparse storage) make it dense in place: the safety net that lets code written for dense
** matrices read a sparse one (docs/sparse.md "What densifies"); the ops with sparse kernels
** never come here. A densification too large for memory is mem_oom's error. */
void tensor_host_access(const Storage *st);
/* The same for t's storage; a sparse t(S) view (tensor_is_sparse_t) first becomes a sparse
** matrix of its own, so that S keeps its form. */
void tensor_host_touch(const Tensor *t);
/* The first element. Read it as a packed row-major array only when tensor_is_contiguous(t)
** (or numel <= 1): a view made by t() is not; use tensor_get/tensor_at or tensor_contiguous. */
static inline double *tensor_data(const Tensor *t) {
  if (t->st->dev | t->st->sparse) tensor_host_touch(t);
  return t->st->data + t->offset;
}
static inline double tensor_get(const Tensor *t, int64_t i, int64_t j) {
  if (t->st->dev | t->st->sparse) tensor_host_touch(t);
  return t->st->data[t->offset + i * t->stride[0] + j * t->stride[1]];
}
/* Element (i, j) read once by the host (X[i, j]): from device memory it is copied (8 bytes)
** instead of bringing the matrix's pages to the host, which the next kernel would move back. */
double tensor_get1(const Tensor *t, int64_t i, int64_t j);
/* Element k of t in row-major order (0-based), whatever its strides. */
static inline double tensor_at(const Tensor *t, int64_t k) {
  int64_t c = t->shape[1];
  return tensor_get(t, k / c, k % c);
}
/* ---- sparse matrices (docs/sparse.md) ----
** A sparse Tensor is a whole packed view (offset 0, strides cols and 1) of a sparse Storage.
** Every matrix maker and op picks its result's format by tensor_prefer_sparse; code that only
** knows dense matrices reads them through tensor_data, which densifies (see above). */
/* Whether t is t(S) of a sparse matrix S (both dimensions above 1) as a view sharing S's storage
** (tensor_view_t): what t() of a sparse matrix gives, in O(1). A product reads it by the
** transposed kernel (t(S) %*% B, ops/sparse.c); anything else that asks tensor_is_sparse or
** reads its data first makes it a sparse matrix of its own (tensor_sparse_settle), once. */
static inline bool tensor_is_sparse_t(const Tensor *t) {
  const SpCsr *c = t->st->csr;
  return t->st->sparse && t->offset == 0 && t->shape[0] == c->cols && t->shape[1] == c->rows && t->shape[0] > 1 &&
         t->shape[1] > 1 && t->stride[0] == 1 && t->stride[1] == c->cols;
}
/* t (a tensor_is_sparse_t view) becomes a sparse matrix of its own: the transposed CSR in a new
** storage, the old one released (mem_oom's error when memory refuses it). Every reference to t
** sees the same values after as before. */
void tensor_sparse_settle(Tensor *t);
static inline bool tensor_is_sparse(const Tensor *t) {
  if (t->st->sparse && tensor_is_sparse_t(t)) tensor_sparse_settle((Tensor *)t);
  const SpCsr *c = t->st->csr;
  return t->st->sparse && t->offset == 0 && t->shape[0] == c->rows && t->shape[1] == c->cols &&
         (t->stride[1] == 1 || t->shape[1] <= 1) && (t->stride[0] == t->shape[1] || t->shape[0] <= 1);
}
static inline SpCsr *tensor_csr(const Tensor *t) { return t->st->csr; }
/* Gives back st's device copy of its CSR (csr_dev), if it has one, letting its instance go. */
void tensor_csr_dev_free(Storage *st);
/* Element (i, j) of t read without changing its form: a sparse matrix's by a binary search in
** its row (tensor_get1), else tensor_get's. */
static inline double tensor_cell(const Tensor *t, int64_t i, int64_t j) {
  return tensor_is_sparse(t) ? tensor_get1(t, i, j) : tensor_get(t, i, j);
}
/* A rows x cols sparse matrix with room for cap entries, none stored (+1): rowptr all 0, the
** caller fills it and sets csr->nnz and rowptr. Counted against --max-memory; a located
** out-of-memory error when too large. cols at most SP_MAX_COLS. */
Tensor *tensor_sparse_new(Interp *I, int64_t rows, int64_t cols, int64_t cap);
/* Grows t's (a sparse matrix the caller owns alone) room to at least cap entries. */
void tensor_sparse_reserve(Interp *I, Tensor *t, int64_t cap);
/* A rows x cols sparse matrix from n triplets (0-based rows ri, columns ci, values v; borrowed,
** any order): duplicates are summed when sum_dups, else the last one wins. Memory: the CSR only,
** built by a counting sort (no dense intermediate). +1. */
Tensor *tensor_sparse_from_coo(Interp *I, int64_t rows, int64_t cols, int64_t n, const int64_t *ri, const int64_t *ci,
                               const double *v, bool sum_dups);
/* A dense copy of t (sparse or not; +1), leaving t as it is. */
Tensor *tensor_densify(Interp *I, const Tensor *t);
/* A sparse copy of t (+1); t (borrowed) itself when it is sparse already (retained). */
Tensor *tensor_sparsify(Interp *I, Tensor *t);
/* The nonzeros of t (NaN counts; a stored 0 does not), either format. */
int64_t tensor_nnz(const Tensor *t);
/* Whether a rows x cols result with (an estimate of) nnz nonzeros is kept sparse under the
** interpreter's rule (Interp.sparse_mode; docs/sparse.md "The format rule"). */
bool tensor_prefer_sparse(const Interp *I, int64_t rows, int64_t cols, int64_t nnz);
/* t (owned: the reference passes to the result) in the format the rule picks for its exact
** nonzeros: a matrix maker's last step (read(), table(), matrix()). +1. */
Tensor *tensor_auto_format(Interp *I, Tensor *t);

/* True when the caller holds the only reference to tensor and storage (mutate in place). */
static inline bool tensor_is_unique(const Tensor *t) { return t->refcount == 1 && t->st->refcount == 1; }

#endif
