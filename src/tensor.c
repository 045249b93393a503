/*
** tensor.c — allocation, views and copies of Tensors (Torch7 TH model). Data buffers come
** from the backend; sizes are checked first so that a huge request is a clean runtime error.
*/
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "backend/backend.h"
#include "backend/sparse.h"
#include "err.h"
#include "interp/interp.h"
#include "mem.h"
#include "tensor.h"

/* One block for a small matrix: the Tensor, its Storage and the data, one malloc/free. */
typedef struct SmallBlock { Tensor t; Storage st; double data[]; } SmallBlock;

l_noret tensor_oom(Interp *I, int64_t rows, int64_t cols);
static l_noret tensor_oom_on(Interp *I, const Backend *be, int64_t rows, int64_t cols) {
  char size[32], lim[32], used[32];
  double bytes = (double)rows * (double)cols * 8.0;
  if (bytes >= 18446744073709551615.0) snprintf(size, sizeof size, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  else mem_format_size(size, sizeof size, (uint64_t)bytes);
  if (be != I->cpu)
    mls_throw(I, I->call_span, "out of GPU memory allocating a %lldx%lld matrix (%s)", (long long)rows, (long long)cols, size);
  if (!mem_limit_is_set())
    mls_throw(I, I->call_span, "out of memory allocating a %lldx%lld matrix (%s)", (long long)rows, (long long)cols, size);
  mls_throw(I, I->call_span, "out of memory allocating a %lldx%lld matrix (%s): over the limit of %s "
            "(--max-memory), %s in use", (long long)rows, (long long)cols, size,
            mem_format_size(lim, sizeof lim, mem_limit()), mem_format_size(used, sizeof used, mem_in_use()));
}

void tensor_charge(Interp *I, uint64_t n, const char *what) {
  if (mem_charge(n)) return;
  char size[32], lim[32], used[32];
  mem_format_size(size, sizeof size, n);
  if (!mem_limit_is_set())
    mls_throw(I, I->call_span, "out of memory allocating %s of %s", size, what);
  mls_throw(I, I->call_span, "out of memory allocating %s of %s: over the limit of %s (--max-memory), %s in use", size,
            what, mem_format_size(lim, sizeof lim, mem_limit()), mem_format_size(used, sizeof used, mem_in_use()));
}

l_noret tensor_oom(Interp *I, int64_t rows, int64_t cols) { tensor_oom_on(I, I->cpu, rows, cols); }

/* A scratch block starts with its size (16 bytes, keeping the alignment of malloc's), so that
** its release gives back to --max-memory what it counted. */
#define SCRATCH_HDR 16

static void scratch_release(void *q) {
  char *p = (char *)q - SCRATCH_HDR;
  size_t n;
  memcpy(&n, p, sizeof n);
  mem_uncharge(n);
  mem_free(p);
}

void *tensor_scratch(Interp *I, size_t n) {
  if (n > SIZE_MAX / 2) mem_oom(SIZE_MAX);
  size_t total = n + SCRATCH_HDR;
  tensor_charge(I, total, "workspace");
  char *p = mem_try_alloc(total);
  if (!p) {
    mem_uncharge(total);
    mem_oom(total);
  }
  memcpy(p, &total, sizeof total);
  mls_defer(I, scratch_release, p + SCRATCH_HDR);
  return p + SCRATCH_HDR;
}

void tensor_scratch_free(Interp *I, void *p) {
  mls_undefer(I, p);
  scratch_release(p);
}

static void storage_densify(Storage *st);

void tensor_host_access(const Storage *st) {
  if (st->sparse) storage_densify((Storage *)st);    /* the one place a const storage changes form */
  else st->be->host_access(st->be, st->data);
}

void tensor_host_touch(const Tensor *t) {
  if (t->st->sparse && tensor_is_sparse_t(t)) tensor_sparse_settle((Tensor *)t);
  tensor_host_access(t->st);
}

Tensor *tensor_new(Interp *I, int64_t rows, int64_t cols) { return tensor_new_on(I, I->device, rows, cols); }
Tensor *tensor_new_host(Interp *I, int64_t rows, int64_t cols) { return tensor_new_on(I, I->cpu, rows, cols); }

Tensor *tensor_new_on(Interp *I, const Backend *be, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0)
    mls_throw(I, I->call_span, "invalid matrix size %lldx%lld", (long long)rows, (long long)cols);
  if ((rows && (uint64_t)cols > UINT64_MAX / 8 / (uint64_t)rows) || mem_over_limit((uint64_t)rows * (uint64_t)cols * 8))
    tensor_oom(I, rows, cols);                 /* --max-memory counts every device's matrices */
  size_t nbytes = (size_t)rows * (size_t)cols * sizeof(double);
  Tensor *t;
  Storage *st;
  if (rows * cols <= TENSOR_SMALL && be == I->cpu) {
    SmallBlock *b = mem_try_alloc(sizeof *b + nbytes);
    if (!b) tensor_oom(I, rows, cols);
    t = &b->t;
    st = &b->st;
    st->embedded = true;
    st->data = b->data;
  } else {
    /* nothing is thrown until all three parts exist: a failure frees the others first */
    double *data = mem_fail_now() ? NULL : be->alloc(be, nbytes);
    st = mem_try_alloc(sizeof *st);
    t = mem_try_alloc(sizeof *t);
    if (!data || !st || !t) {
      if (data) be->free(be, data, nbytes);
      mem_free(st);
      mem_free(t);
      tensor_oom_on(I, be, rows, cols);
    }
    st->embedded = false;
    st->data = data;
  }
  st->refcount = 1;
  st->abstract = false;
  st->sparse = false;
  st->csr = NULL;
  st->csr_bytes = 0;
  st->csr_dev = NULL;
  st->csr_dev_be = NULL;
  st->dev = be->host_access != NULL;
  st->be = be;
  if (!st->embedded) be_hold(be);            /* its free goes back to be (be_drop in storage_free_data);
                                             ** an embedded block's data is not be's */
  st->nbytes = nbytes;
  mem_stats.data_allocs++;
  mem_stats.data_bytes += nbytes;
  if (mem_stats.data_bytes > mem_stats.data_peak) mem_stats.data_peak = mem_stats.data_bytes;
  if (mem_in_use() > mem_stats.counted_peak) mem_stats.counted_peak = mem_in_use();
  t->refcount = 1;
  t->logical = false;
  t->names = NULL;
  t->st = st;
  t->offset = 0;
  t->shape[0] = rows;
  t->shape[1] = cols;
  t->stride[0] = cols;
  t->stride[1] = 1;
  t->origin.start = t->origin.end = 0;
  return t;
}

Tensor *tensor_zeros(Interp *I, int64_t rows, int64_t cols) {
  Tensor *t = tensor_new(I, rows, cols);
  memset(tensor_data(t), 0, (size_t)(rows * cols) * sizeof(double));
  return t;
}

Tensor *tensor_abstract(Interp *I, int64_t rows, int64_t cols) {
  Tensor *t;
  if (rows * cols <= TENSOR_SMALL || cols > SP_MAX_COLS) {
    t = tensor_new_host(I, rows, cols);
    memset(tensor_data(t), 0, (size_t)(rows * cols) * sizeof(double));
  } else {                                  /* no dense block: an empty sparse one (rowptr only) */
    t = tensor_sparse_new(I, rows, cols, 0);
  }
  t->st->abstract = true;
  return t;
}

double tensor_get1(const Tensor *t, int64_t i, int64_t j) {
  if (tensor_is_sparse(t)) {                 /* a binary search in row i */
    const SpCsr *c = tensor_csr(t);
    int64_t lo = c->rowptr[i], hi = c->rowptr[i + 1];
    while (lo < hi) {
      int64_t mid = lo + (hi - lo) / 2;
      if (c->col[mid] < j) lo = mid + 1;
      else hi = mid;
    }
    return lo < c->rowptr[i + 1] && c->col[lo] == j ? c->val[lo] : 0.0;
  }
  const Backend *be = t->st->be;
  double x;
  if (t->st->dev && be->download &&
      be->download(be, &x, t->st->data + t->offset + i * t->stride[0] + j * t->stride[1], sizeof x) == 0)
    return x;
  return tensor_get(t, i, j);
}

Tensor *tensor_block_on_device(Interp *I, const Tensor *m, int64_t r0, int64_t nr, int64_t c0, int64_t nc, Span sp) {
  const Backend *be = m->st->be;
  if (!m->st->dev || !be->copy2d) return NULL;
  Tensor v = *m;                                /* the block as a strided view, copied packed */
  v.offset += r0 * m->stride[0] + c0 * m->stride[1];
  v.shape[0] = nr;
  v.shape[1] = nc;
  Tensor *o = tensor_new_on(I, be, nr, nc);
  if (be->copy2d(be, o, &v) != 0) {
    tensor_free_ref(o);
    mls_throw(I, sp, "indexing a %lldx%lld block failed on the %s backend: %s", (long long)nr, (long long)nc, be->name,
              be->error ? be->error(be) : "unknown error");
  }
  return o;
}

/* A host vector of positions on device be (NULL stays NULL), on the temp stack. */
static Tensor *positions_to(Interp *I, const Backend *be, Tensor *pos) {
  if (!pos) return NULL;
  Tensor *d = tensor_new_on(I, be, tensor_numel(pos), 1);
  tmp_push(I, val_mat(d));
  if (be->upload(be, d->st->data + d->offset, pos->st->data + pos->offset, (size_t)tensor_numel(pos) * sizeof(double)) != 0)
    mls_throw(I, I->call_span, "moving index positions to the %s backend failed: %s", be->name,
              be->error ? be->error(be) : "unknown error");
  return d;
}

Tensor *tensor_gather_on_device(Interp *I, const Tensor *m, Tensor *rpos, int64_t nr, int64_t r0, Tensor *cpos, int64_t nc,
                                int64_t c0, Span sp) {
  const Backend *be = m->st->be;
  if (!m->st->dev || !be->gather || !be->upload) return NULL;
  int mark = I->ntmp;
  Tensor *r = positions_to(I, be, rpos), *c = positions_to(I, be, cpos);
  Tensor *o = tensor_new_on(I, be, nr, nc);
  if (be->gather(be, o, m, r, r0, c, c0) != 0) {
    tensor_free_ref(o);
    mls_throw(I, sp, "indexing failed on the %s backend: %s", be->name, be->error ? be->error(be) : "unknown error");
  }
  tmp_release_to(I, mark);
  return o;
}

/* What is written into an nr x nc selection of device matrix m: src read as that shape (a
** vector along it), or fill as a 1x1 device matrix read with strides 0 (*one holds it). false
** when src is not on m's device. */
static bool write_source(Interp *I, const Tensor *m, int64_t nr, int64_t nc, const Tensor *src, double fill, Tensor *in,
                         Tensor **one) {
  const Backend *be = m->st->be;
  *one = NULL;
  if (src) {
    if (src->st->be != be || tensor_numel(src) != nr * nc) return false;   /* a host operand: the host writes */
    *in = *src;
    if (tensor_rows(src) != nr) {                /* a vector into a row or column: read along it */
      int64_t s = tensor_rows(src) == 1 ? src->stride[1] : src->stride[0];
      in->stride[0] = nr == 1 ? 0 : s;
      in->stride[1] = nc == 1 ? 0 : s;
    }
  } else {
    Tensor *o = tensor_new_on(I, be, 1, 1);
    if (be->upload(be, o->st->data + o->offset, &fill, sizeof fill) != 0) {
      tensor_free_ref(o);
      return false;
    }
    *in = *o;
    in->stride[0] = in->stride[1] = 0;
    *one = o;
  }
  in->shape[0] = nr;
  in->shape[1] = nc;
  return true;
}

bool tensor_write_block_on_device(Interp *I, Tensor *m, int64_t r0, int64_t nr, int64_t c0, int64_t nc, const Tensor *src,
                                  double fill, Span sp) {
  const Backend *be = m->st->be;
  if (!m->st->dev || !be->copy2d || !be->upload) return false;
  Tensor in, *one;
  if (!write_source(I, m, nr, nc, src, fill, &in, &one)) return false;
  Tensor out = *m;                               /* the block of m, written through m's strides */
  out.offset += r0 * m->stride[0] + c0 * m->stride[1];
  out.shape[0] = nr;
  out.shape[1] = nc;
  int rc = be->copy2d(be, &out, &in);
  if (one) tensor_free_ref(one);
  if (rc != 0)
    mls_throw(I, sp, "assigning a %lldx%lld block failed on the %s backend: %s", (long long)nr, (long long)nc, be->name,
              be->error ? be->error(be) : "unknown error");
  return true;
}

bool tensor_scatter_on_device(Interp *I, Tensor *m, Tensor *rpos, int64_t nr, int64_t r0, Tensor *cpos, int64_t nc, int64_t c0,
                              const Tensor *src, double fill, Span sp) {
  const Backend *be = m->st->be;
  if (!m->st->dev || !be->scatter || !be->upload) return false;
  int mark = I->ntmp;
  Tensor in, *one;
  if (!write_source(I, m, nr, nc, src, fill, &in, &one)) return false;
  if (one) tmp_push(I, val_mat(one));
  Tensor *r = positions_to(I, be, rpos), *c = positions_to(I, be, cpos);
  if (be->scatter(be, m, r, r0, c, c0, &in) != 0)
    mls_throw(I, sp, "assigning into a %lldx%lld selection failed on the %s backend: %s", (long long)nr, (long long)nc,
              be->name, be->error ? be->error(be) : "unknown error");
  tmp_release_to(I, mark);
  return true;
}

/* A device copies on the device; the host copies everything else (blocked for transposes). */
static Tensor *clone_on(Interp *I, const Tensor *t, const Backend *be) {
  int64_t r = tensor_rows(t), c = tensor_cols(t);
  if (tensor_is_sparse(t)) {                 /* a sparse copy; to a device, a dense one */
    if (be != I->cpu) {
      Tensor *d = tensor_densify(I, t);
      tmp_push(I, val_mat(d));
      Tensor *o = clone_on(I, d, be);
      tmp_pop(I, 1);
      tensor_free_ref(d);
      return o;
    }
    const SpCsr *sc = tensor_csr(t);
    Tensor *o = tensor_sparse_new(I, r, c, sc->nnz);
    spk_copy(sc, tensor_csr(o));
    return o;
  }
  Tensor *o = tensor_new_on(I, be, r, c);
  if (be == t->st->be && be->copy2d) {
    if (be->copy2d(be, o, t) != 0) {
      tensor_free_ref(o);
      mls_throw(I, I->call_span, "copying a %lldx%lld matrix failed on the %s backend: %s", (long long)r, (long long)c,
                be->name, be->error ? be->error(be) : "unknown error");
    }
    return o;
  }
  const Backend *from = t->st->be;
  if (from != be && tensor_is_contiguous(t)) {  /* between host and device: one bulk copy */
    size_t bytes = (size_t)(r * c) * sizeof(double);
    double *od = o->st->data + o->offset, *td = t->st->data + t->offset;
    int rc = -1;
    if (from == I->cpu && be->upload) rc = be->upload(be, od, td, bytes);
    else if (be == I->cpu && from->download) rc = from->download(from, od, td, bytes);
    if (rc > 0) {
      tensor_free_ref(o);
      mls_throw(I, I->call_span, "copying a %lldx%lld matrix between devices failed: %s", (long long)r, (long long)c,
                from->error ? from->error(from) : be->error ? be->error(be) : "unknown error");
    }
    if (rc == 0) return o;
  }
  double *d = tensor_data(o);
  if (tensor_is_contiguous(t)) {
    memcpy(d, tensor_data(t), (size_t)(r * c) * sizeof(double));
    return o;
  }
  const double *s = tensor_data(t);
  int64_t s0 = t->stride[0], s1 = t->stride[1];
  const int64_t B = 32;                      /* cache blocks: a transpose reads across rows */
  int64_t budget = 0;
  for (int64_t i0 = 0; i0 < r; i0 += B) {
    if (interp_tick(I, &budget, B * c)) { tensor_free_ref(o); interp_check_interrupt(I, I->call_span); }
    for (int64_t j0 = 0; j0 < c; j0 += B)
      for (int64_t i = i0; i < r && i < i0 + B; i++)
        for (int64_t j = j0; j < c && j < j0 + B; j++) d[i * c + j] = s[i * s0 + j * s1];
  }
  return o;
}

Tensor *tensor_clone(Interp *I, const Tensor *t) { return clone_on(I, t, t->st->be); }

Tensor *tensor_to(Interp *I, const Tensor *t, const Backend *be) { return clone_on(I, t, be); }

Tensor *tensor_contiguous(Interp *I, Tensor *t) {
  if (tensor_is_contiguous(t)) { t->refcount++; return t; }
  return tensor_clone(I, t);
}

void tensor_csr_dev_free(Storage *st) {
  if (!st->csr_dev) return;
  const Backend *be = st->csr_dev_be;
  be->spmm_free(be, st->csr_dev);
  st->csr_dev = NULL;
  st->csr_dev_be = NULL;
  be_drop(be);
}

/* The storage's last reference went: free the data (and, if embedded, the whole block). */
static void csr_free(Storage *st) {
  tensor_csr_dev_free(st);
  SpCsr *c = st->csr;
  mem_free(c->rowptr);
  mem_free(c->col);
  mem_free(c->val);
  mem_free(c);
  mem_stats.data_bytes -= st->csr_bytes;
  st->csr = NULL;
  st->csr_bytes = 0;
  st->sparse = false;
}

/* A storage's data back to the instance that allocated it, which the storage then lets go (apart,
** so that freeing a small matrix's one block stays a few instructions). */
__attribute__((noinline)) static void storage_free_data(Storage *st) {
  const Backend *be = st->be;
  be->free(be, st->data, st->nbytes);
  mem_free(st);
  be_drop(be);
}

static void storage_free(Storage *st) {
  if (st->sparse) {                          /* never densified: the CSR arrays are all it has */
    csr_free(st);
    be_drop(st->be);
    mem_free(st);
    return;
  }
  mem_stats.data_bytes -= st->nbytes;
  if (st->embedded) { mem_free((char *)st - offsetof(SmallBlock, st)); return; }
  storage_free_data(st);
}

Tensor *tensor_view_rows(Tensor *t, int64_t r0, int64_t n) {
  Tensor *v = mem_alloc(sizeof *v);
  *v = *t;
  v->refcount = 1;
  v->names = NULL;
  v->offset = t->offset + (size_t)(r0 * t->stride[0]);
  v->shape[0] = n;
  v->st->refcount++;
  return v;
}

Tensor *tensor_view_t(Tensor *t) {
  Tensor *v = mem_alloc(sizeof *v);
  *v = *t;
  v->refcount = 1;
  v->names = NULL;
  v->shape[0] = t->shape[1];
  v->shape[1] = t->shape[0];
  v->stride[0] = t->stride[1];
  v->stride[1] = t->stride[0];
  /* a dimension of extent 1 is never stepped along: give it the packed stride, so that the
  ** transpose of a vector is contiguous (as is that of an empty matrix) */
  bool empty = v->shape[0] == 0 || v->shape[1] == 0;
  if (empty || v->shape[1] == 1) v->stride[1] = 1;
  if (empty || v->shape[0] == 1) v->stride[0] = v->shape[1];
  v->st->refcount++;
  return v;
}

TensorNames *tnames_new(int64_t n, const char *const *s, const size_t *lens) {
  size_t bytes = sizeof(TensorNames) + (size_t)n * sizeof(char *);
  for (int64_t i = 0; i < n; i++) bytes += (lens ? lens[i] : strlen(s[i])) + 1;
  TensorNames *nm = mem_alloc(bytes);
  nm->refcount = 1;
  nm->n = n;
  char *p = (char *)&nm->s[n];
  for (int64_t i = 0; i < n; i++) {
    size_t len = lens ? lens[i] : strlen(s[i]);
    memcpy(p, s[i], len);
    p[len] = '\0';
    nm->s[i] = p;
    p += len + 1;
  }
  return nm;
}

void tnames_release(TensorNames *nm) {
  if (nm && --nm->refcount == 0) mem_free(nm);
}

void tensor_set_names(Tensor *t, TensorNames *nm) {
  if (nm) nm->refcount++;
  tnames_release(t->names);
  t->names = nm;
}

void tensor_free(Tensor *t) {
  tnames_release(t->names);
  Storage *st = t->st;
  bool owner = st->embedded && t == &((SmallBlock *)(void *)((char *)st - offsetof(SmallBlock, st)))->t;
  if (!owner) mem_free(t);        /* an owner's header goes with its block */
  if (--st->refcount == 0) storage_free(st);
}

/* ---- sparse matrices (docs/sparse.md) ---- */

/* The format rule's numbers (docs/sparse.md "The format rule"): a result is kept sparse when it
** has at least SP_MIN_CELLS cells and at most SP_MAX_DENSITY of them nonzero. */
#define SP_MIN_CELLS 1024
#define SP_MAX_DENSITY 0.1

bool tensor_prefer_sparse(const Interp *I, int64_t rows, int64_t cols, int64_t nnz) {
  if (I->sparse_mode == SPARSE_NEVER || cols > SP_MAX_COLS) return false;
  double cells = (double)rows * (double)cols;
  if (I->sparse_mode >= SPARSE_ALWAYS) return cells >= 2;   /* (SPARSE_EXACT too) */
  return cells >= SP_MIN_CELLS && (double)nnz <= SP_MAX_DENSITY * cells;
}

static size_t csr_bytes(int64_t rows, int64_t cap) {
  return (size_t)(rows + 1) * sizeof(int64_t) + (size_t)cap * (sizeof(int32_t) + sizeof(double));
}

static l_noret sparse_oom(Interp *I, int64_t rows, int64_t cols, int64_t cap) {
  char size[32], lim[32], used[32];
  mem_format_size(size, sizeof size, (uint64_t)((double)csr_bytes(rows, cap)));
  if (!mem_limit_is_set())
    mls_throw(I, I->call_span, "out of memory allocating a %lldx%lld sparse matrix of %lld nonzeros (%s)", (long long)rows,
              (long long)cols, (long long)cap, size);
  mls_throw(I, I->call_span, "out of memory allocating a %lldx%lld sparse matrix of %lld nonzeros (%s): over the limit of "
            "%s (--max-memory), %s in use", (long long)rows, (long long)cols, (long long)cap, size,
            mem_format_size(lim, sizeof lim, mem_limit()), mem_format_size(used, sizeof used, mem_in_use()));
}

/* A sparse storage of rows x cols with room for cap (>= 1) entries, none stored, counted in
** mem_stats; NULL (nothing allocated) when memory or --max-memory refuses it. */
static Storage *csr_storage_try(const Backend *cpu, int64_t rows, int64_t cols, int64_t cap) {
  if ((uint64_t)rows > (uint64_t)INT64_MAX / 16 || (uint64_t)cap > (uint64_t)INT64_MAX / 16 ||
      mem_over_limit(csr_bytes(rows, cap)))
    return NULL;
  Storage *st = mem_try_alloc(sizeof *st);
  SpCsr *c = mem_try_alloc(sizeof *c);
  int64_t *rp = mem_fail_now() ? NULL : mem_try_alloc((size_t)(rows + 1) * sizeof *rp);
  int32_t *col = mem_try_alloc((size_t)cap * sizeof *col);
  double *val = mem_try_alloc((size_t)cap * sizeof *val);
  if (!st || !c || !rp || !col || !val) {
    mem_free(st);
    mem_free(c);
    mem_free(rp);
    mem_free(col);
    mem_free(val);
    return NULL;
  }
  memset(rp, 0, (size_t)(rows + 1) * sizeof *rp);
  *c = (SpCsr){ rows, cols, 0, cap, rp, col, val };
  *st = (Storage){ .refcount = 1, .be = cpu, .sparse = true, .csr = c, .csr_bytes = csr_bytes(rows, cap) };
  mem_stats.data_allocs++;
  mem_stats.data_bytes += st->csr_bytes;
  if (mem_stats.data_bytes > mem_stats.data_peak) mem_stats.data_peak = mem_stats.data_bytes;
  if (mem_in_use() > mem_stats.counted_peak) mem_stats.counted_peak = mem_in_use();
  be_hold(cpu);
  return st;
}

Tensor *tensor_sparse_new(Interp *I, int64_t rows, int64_t cols, int64_t cap) {
  if (rows < 0 || cols < 0 || cap < 0)
    mls_throw(I, I->call_span, "invalid matrix size %lldx%lld", (long long)rows, (long long)cols);
  if (cols > SP_MAX_COLS)
    mls_throw(I, I->call_span, "a sparse matrix has at most %lld columns, not %lld", (long long)SP_MAX_COLS, (long long)cols);
  if (cap < 1) cap = 1;
  Tensor *t = mem_try_alloc(sizeof *t);
  Storage *st = t ? csr_storage_try(I->cpu, rows, cols, cap) : NULL;
  if (!st) {
    mem_free(t);
    sparse_oom(I, rows, cols, cap);
  }
  *t = (Tensor){ .refcount = 1, .st = st, .shape = { rows, cols }, .stride = { cols, 1 } };
  return t;
}

void tensor_sparse_settle(Tensor *t) {
  const SpCsr *c = t->st->csr;
  int64_t cap = c->nnz > 0 ? c->nnz : 1;
  Storage *st = csr_storage_try(t->st->be, c->cols, c->rows, cap);
  if (!st) mem_oom(csr_bytes(c->cols, cap));
  spk_transpose(c, st->csr);
  if (--t->st->refcount == 0) storage_free(t->st);
  t->st = st;
  t->stride[0] = t->shape[1];
  t->stride[1] = 1;
}

void tensor_sparse_reserve(Interp *I, Tensor *t, int64_t cap) {
  Storage *st = t->st;
  SpCsr *c = st->csr;
  if (cap <= c->cap) return;
  tensor_csr_dev_free(st);                   /* (the arrays move: a device copy is stale) */
  size_t nb = csr_bytes(c->rows, cap);
  if ((uint64_t)cap > (uint64_t)INT64_MAX / 16 || mem_over_limit(nb - st->csr_bytes)) sparse_oom(I, c->rows, c->cols, cap);
  int32_t *col = mem_try_alloc((size_t)cap * sizeof *col);
  double *val = mem_try_alloc((size_t)cap * sizeof *val);
  if (!col || !val) {
    mem_free(col);
    mem_free(val);
    sparse_oom(I, c->rows, c->cols, cap);
  }
  memcpy(col, c->col, (size_t)c->nnz * sizeof *col);
  memcpy(val, c->val, (size_t)c->nnz * sizeof *val);
  mem_free(c->col);
  mem_free(c->val);
  c->col = col;
  c->val = val;
  c->cap = cap;
  mem_stats.data_bytes += nb - st->csr_bytes;
  st->csr_bytes = nb;
}

/* The safety net (tensor_host_access): st becomes a dense storage of the same values. */
static void storage_densify(Storage *st) {
  SpCsr *c = st->csr;
  size_t nbytes = (size_t)c->rows * (size_t)c->cols * sizeof(double);
  if (mem_over_limit(nbytes)) mem_oom(nbytes);          /* --max-memory counts it too */
  double *d = nbytes ? st->be->alloc(st->be, nbytes) : NULL;   /* (a sparse storage's is a CPU instance) */
  if (nbytes && !d) mem_oom(nbytes);
  spk_to_dense(c, d);
  csr_free(st);
  st->data = d;
  st->nbytes = nbytes;
  mem_stats.data_bytes += nbytes;
  if (mem_stats.data_bytes > mem_stats.data_peak) mem_stats.data_peak = mem_stats.data_bytes;
}

/* qsort_r's order of entry positions by their column (ctx: the columns), then position. */
static int by_column(const void *a, const void *b, void *ctx) {
  const int64_t *ci = ctx, p = *(const int64_t *)a, q = *(const int64_t *)b;
  if (ci[p] != ci[q]) return ci[p] < ci[q] ? -1 : 1;
  return p < q ? -1 : p > q;
}

Tensor *tensor_sparse_from_coo(Interp *I, int64_t rows, int64_t cols, int64_t n, const int64_t *ri, const int64_t *ci,
                               const double *v, bool sum_dups) {
  for (int64_t k = 0; k < n; k++)
    if (ri[k] < 0 || ri[k] >= rows || ci[k] < 0 || ci[k] >= cols)
      mls_throw(I, I->call_span, "entry (%lld, %lld) is outside a %lldx%lld matrix", (long long)ri[k] + 1,
                (long long)ci[k] + 1, (long long)rows, (long long)cols);
  Tensor *t = tensor_sparse_new(I, rows, cols, n);
  tmp_push(I, val_mat(t));
  /* perm: the entries in column order, equal columns in input order: a stable counting sort by
  ** column, or, when the columns far outnumber the entries (1 x 2e9 for one entry), a sort of the
  ** entries (O(n log n), no O(cols) counts); then a counting sort by row into the CSR */
  size_t pnb = (size_t)n * sizeof(int64_t);
  bool by_count = cols <= 2 * (n + rows) + 4096;
  size_t cnb = (size_t)((by_count ? cols : 0) + 1) * sizeof(int64_t);
  int64_t *cnt = tensor_scratch(I, cnb > (size_t)(rows + 1) * sizeof(int64_t) ? cnb : (size_t)(rows + 1) * sizeof(int64_t));
  int64_t *perm = tensor_scratch(I, pnb ? pnb : 1);
  if (by_count) {
    memset(cnt, 0, cnb);
    for (int64_t k = 0; k < n; k++) cnt[ci[k] + 1]++;
    for (int64_t j = 0; j < cols; j++) cnt[j + 1] += cnt[j];
    for (int64_t k = 0; k < n; k++) perm[cnt[ci[k]]++] = k;
  } else {
    for (int64_t k = 0; k < n; k++) perm[k] = k;
    qsort_r(perm, (size_t)n, sizeof *perm, by_column, (void *)ci);
  }
  SpCsr *c = tensor_csr(t);
  int64_t *rp = c->rowptr;
  for (int64_t k = 0; k < n; k++) rp[ri[k] + 1]++;
  for (int64_t i = 0; i < rows; i++) rp[i + 1] += rp[i];
  memcpy(cnt, rp, (size_t)(rows + 1) * sizeof(int64_t));
  for (int64_t q = 0; q < n; q++) {
    int64_t k = perm[q], pos = cnt[ri[k]]++;
    c->col[pos] = (int32_t)ci[k];
    c->val[pos] = v[k];
  }
  tensor_scratch_free(I, perm);
  tensor_scratch_free(I, cnt);
  int64_t w = 0;                            /* duplicates merged, rowptr rebuilt */
  for (int64_t i = 0, beg = 0; i < rows; i++) {
    int64_t end = rp[i + 1];
    rp[i] = w;
    for (int64_t p = beg; p < end; p++) {
      if (w > rp[i] && c->col[w - 1] == c->col[p]) c->val[w - 1] = sum_dups ? c->val[w - 1] + c->val[p] : c->val[p];
      else { c->col[w] = c->col[p]; c->val[w] = c->val[p]; w++; }
    }
    beg = end;
  }
  rp[rows] = w;
  c->nnz = w;
  tmp_pop(I, 1);
  return t;
}

Tensor *tensor_densify(Interp *I, const Tensor *t) {
  if (!tensor_is_sparse(t)) return tensor_clone(I, t);
  Tensor *o = tensor_new_host(I, tensor_rows(t), tensor_cols(t));
  spk_to_dense(tensor_csr(t), o->st->data);
  o->logical = t->logical;
  return o;
}

Tensor *tensor_sparsify(Interp *I, Tensor *t) {
  if (tensor_is_sparse(t)) { t->refcount++; return t; }
  Tensor *h = t->st->dev ? tensor_to(I, t, I->cpu) : t;
  if (h != t) tmp_push(I, val_mat(h));
  const double *d = tensor_data(h);
  int64_t r = tensor_rows(h), c = tensor_cols(h);
  Tensor *o = tensor_sparse_new(I, r, c, 1);      /* (the rows counted into its row pointers) */
  tmp_push(I, val_mat(o));
  int64_t nnz = spk_count_dense(I->cpu, d, r, c, h->stride[0], h->stride[1], tensor_csr(o)->rowptr);
  tensor_sparse_reserve(I, o, nnz);
  spk_from_dense(I->cpu, d, r, c, h->stride[0], h->stride[1], tensor_csr(o)->rowptr, tensor_csr(o));
  tmp_pop(I, 1);                                  /* (its reference: the result's) */
  o->logical = t->logical;
  if (h != t) { tmp_pop(I, 1); tensor_free_ref(h); }
  return o;
}

int64_t tensor_nnz(const Tensor *t) {
  if (tensor_is_sparse(t)) {
    const SpCsr *c = tensor_csr(t);
    int64_t n = 0;
    for (int64_t k = 0; k < c->nnz; k++) n += c->val[k] != 0;
    return n;
  }
  int64_t n = 0, r = tensor_rows(t), cc = tensor_cols(t);
  for (int64_t i = 0; i < r; i++)
    for (int64_t j = 0; j < cc; j++) n += tensor_get(t, i, j) != 0;
  return n;
}

Tensor *tensor_auto_format(Interp *I, Tensor *t) {
  int64_t r = tensor_rows(t), c = tensor_cols(t);
  if (tensor_is_sparse(t)) {
    if (tensor_prefer_sparse(I, r, c, tensor_csr(t)->nnz)) return t;
    tmp_push(I, val_mat(t));
    Tensor *o = tensor_densify(I, t);
    o->logical = t->logical;
    tmp_pop(I, 1);
    tensor_free_ref(t);
    return o;
  }
  if (I->sparse_mode == SPARSE_NEVER || t->st->abstract || !tensor_prefer_sparse(I, r, c, 0)) return t;
  if (!tensor_prefer_sparse(I, r, c, tensor_nnz(t))) return t;
  tmp_push(I, val_mat(t));
  Tensor *o = tensor_sparsify(I, t);
  tmp_pop(I, 1);
  tensor_free_ref(t);
  return o;
}
