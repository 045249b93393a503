/*
** tensor.c — allocation, views and copies of Tensors (Torch7 TH model). Data buffers come
** from the backend; sizes are checked first so that a huge request is a clean runtime error.
*/
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include "backend/backend.h"
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
  if (be != &be_cpu)
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

l_noret tensor_oom(Interp *I, int64_t rows, int64_t cols) { tensor_oom_on(I, &be_cpu, rows, cols); }

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

void tensor_host_access(const Storage *st) { st->be->host_access(st->data); }

Tensor *tensor_new(Interp *I, int64_t rows, int64_t cols) { return tensor_new_on(I, I->device, rows, cols); }
Tensor *tensor_new_host(Interp *I, int64_t rows, int64_t cols) { return tensor_new_on(I, &be_cpu, rows, cols); }

Tensor *tensor_new_on(Interp *I, const Backend *be, int64_t rows, int64_t cols) {
  if (rows < 0 || cols < 0)
    mls_throw(I, I->call_span, "invalid matrix size %lldx%lld", (long long)rows, (long long)cols);
  if ((rows && (uint64_t)cols > UINT64_MAX / 8 / (uint64_t)rows) || mem_over_limit((uint64_t)rows * (uint64_t)cols * 8))
    tensor_oom(I, rows, cols);                 /* --max-memory counts every device's matrices */
  size_t nbytes = (size_t)rows * (size_t)cols * sizeof(double);
  Tensor *t;
  Storage *st;
  if (rows * cols <= TENSOR_SMALL && be == &be_cpu) {
    SmallBlock *b = mem_try_alloc(sizeof *b + nbytes);
    if (!b) tensor_oom(I, rows, cols);
    t = &b->t;
    st = &b->st;
    st->embedded = true;
    st->data = b->data;
  } else {
    /* nothing is thrown until all three parts exist: a failure frees the others first */
    double *data = mem_fail_now() ? NULL : be->alloc(nbytes);
    st = mem_try_alloc(sizeof *st);
    t = mem_try_alloc(sizeof *t);
    if (!data || !st || !t) {
      if (data) be->free(data, nbytes);
      mem_free(st);
      mem_free(t);
      tensor_oom_on(I, be, rows, cols);
    }
    st->embedded = false;
    st->data = data;
  }
  st->refcount = 1;
  st->abstract = false;
  st->dev = be->host_access != NULL;
  st->be = be;
  st->nbytes = nbytes;
  mem_stats.data_allocs++;
  mem_stats.data_bytes += nbytes;
  if (mem_stats.data_bytes > mem_stats.data_peak) mem_stats.data_peak = mem_stats.data_bytes;
  if (mem_in_use() > mem_stats.counted_peak) mem_stats.counted_peak = mem_in_use();
  t->refcount = 1;
  t->logical = false;
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
  Tensor *t = tensor_new_host(I, rows, cols);
  memset(tensor_data(t), 0, (size_t)(rows * cols) * sizeof(double));
  t->st->abstract = true;
  return t;
}

double tensor_get1(const Tensor *t, int64_t i, int64_t j) {
  const Backend *be = t->st->be;
  double x;
  if (t->st->dev && be->download &&
      be->download(&x, t->st->data + t->offset + i * t->stride[0] + j * t->stride[1], sizeof x) == 0)
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
  if (be->copy2d(o, &v) != 0) {
    tensor_free_ref(o);
    mls_throw(I, sp, "indexing a %lldx%lld block failed on the %s backend: %s", (long long)nr, (long long)nc, be->name,
              be->error ? be->error() : "unknown error");
  }
  return o;
}

/* A host vector of positions on device be (NULL stays NULL), on the temp stack. */
static Tensor *positions_to(Interp *I, const Backend *be, Tensor *pos) {
  if (!pos) return NULL;
  Tensor *d = tensor_new_on(I, be, tensor_numel(pos), 1);
  tmp_push(I, val_mat(d));
  if (be->upload(d->st->data + d->offset, pos->st->data + pos->offset, (size_t)tensor_numel(pos) * sizeof(double)) != 0)
    mls_throw(I, I->call_span, "moving index positions to the %s backend failed: %s", be->name,
              be->error ? be->error() : "unknown error");
  return d;
}

Tensor *tensor_gather_on_device(Interp *I, const Tensor *m, Tensor *rpos, int64_t nr, int64_t r0, Tensor *cpos, int64_t nc,
                                int64_t c0, Span sp) {
  const Backend *be = m->st->be;
  if (!m->st->dev || !be->gather || !be->upload) return NULL;
  int mark = I->ntmp;
  Tensor *r = positions_to(I, be, rpos), *c = positions_to(I, be, cpos);
  Tensor *o = tensor_new_on(I, be, nr, nc);
  if (be->gather(o, m, r, r0, c, c0) != 0) {
    tensor_free_ref(o);
    mls_throw(I, sp, "indexing failed on the %s backend: %s", be->name, be->error ? be->error() : "unknown error");
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
    if (be->upload(o->st->data + o->offset, &fill, sizeof fill) != 0) {
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
  int rc = be->copy2d(&out, &in);
  if (one) tensor_free_ref(one);
  if (rc != 0)
    mls_throw(I, sp, "assigning a %lldx%lld block failed on the %s backend: %s", (long long)nr, (long long)nc, be->name,
              be->error ? be->error() : "unknown error");
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
  if (be->scatter(m, r, r0, c, c0, &in) != 0)
    mls_throw(I, sp, "assigning into a %lldx%lld selection failed on the %s backend: %s", (long long)nr, (long long)nc,
              be->name, be->error ? be->error() : "unknown error");
  tmp_release_to(I, mark);
  return true;
}

/* A device copies on the device; the host copies everything else (blocked for transposes). */
static Tensor *clone_on(Interp *I, const Tensor *t, const Backend *be) {
  int64_t r = tensor_rows(t), c = tensor_cols(t);
  Tensor *o = tensor_new_on(I, be, r, c);
  if (be == t->st->be && be->copy2d) {
    if (be->copy2d(o, t) != 0) {
      tensor_free_ref(o);
      mls_throw(I, I->call_span, "copying a %lldx%lld matrix failed on the %s backend: %s", (long long)r, (long long)c,
                be->name, be->error ? be->error() : "unknown error");
    }
    return o;
  }
  const Backend *from = t->st->be;
  if (from != be && tensor_is_contiguous(t)) {  /* between host and device: one bulk copy */
    size_t bytes = (size_t)(r * c) * sizeof(double);
    double *od = o->st->data + o->offset, *td = t->st->data + t->offset;
    int rc = -1;
    if (from == &be_cpu && be->upload) rc = be->upload(od, td, bytes);
    else if (be == &be_cpu && from->download) rc = from->download(od, td, bytes);
    if (rc > 0) {
      tensor_free_ref(o);
      mls_throw(I, I->call_span, "copying a %lldx%lld matrix between devices failed: %s", (long long)r, (long long)c,
                from->error ? from->error() : be->error ? be->error() : "unknown error");
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

/* The storage's last reference went: free the data (and, if embedded, the whole block). */
static void storage_free(Storage *st) {
  mem_stats.data_bytes -= st->nbytes;
  if (st->embedded) { mem_free((char *)st - offsetof(SmallBlock, st)); return; }
  st->be->free(st->data, st->nbytes);
  mem_free(st);
}

Tensor *tensor_view_rows(Tensor *t, int64_t r0, int64_t n) {
  Tensor *v = mem_alloc(sizeof *v);
  *v = *t;
  v->refcount = 1;
  v->offset = t->offset + (size_t)(r0 * t->stride[0]);
  v->shape[0] = n;
  v->st->refcount++;
  return v;
}

Tensor *tensor_view_t(Tensor *t) {
  Tensor *v = mem_alloc(sizeof *v);
  *v = *t;
  v->refcount = 1;
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

void tensor_free(Tensor *t) {
  Storage *st = t->st;
  bool owner = st->embedded && t == &((SmallBlock *)(void *)((char *)st - offsetof(SmallBlock, st)))->t;
  if (!owner) mem_free(t);        /* an owner's header goes with its block */
  if (--st->refcount == 0) storage_free(st);
}
