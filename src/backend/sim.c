/*
** sim.c — a simulated GPU, for testing the device paths where there is no GPU (CI). With
** $MLS_SIM_GPU set, "gpu" (--device gpu, gpu(X), device("gpu")) is this backend instead of the
** CUDA plugin: its memory is host memory treated as a device's (storages are dev, so the
** host reaches them through host_access as it does CUDA's managed memory), its kernels are
** the CPU's, and its device entries (copy2d, gather, scatter, getrf, getrs, download) are
** reference loops and column-major LAPACK with the contracts of backend.h (pinned host memory
** and the allreduce's combine too, so that MPI's device path runs in make test). The interpreter's
** side of a device (placement, copies, indexing and solvers on the device, fallbacks) runs
** as with the GPU; only the CUDA kernels themselves are not checked here.
**
** Capture (CUDA graphs) is simulated as CUDA does it: while capturing, the kernels are not
** run but recorded with the addresses they were given (copies of their Tensors and
** Storages), and a replay runs the recording again on those addresses. Memory allocated
** while capturing belongs to the replay, and what needs the host (host_access, a copy from
** or to host memory, a wait, the LU's pivots) breaks the capture. So a caller that let a
** replay's buffer be handed out again, or read a captured result before the launch, gets
** wrong numbers (or an ASan report) here, as it would on a GPU.
*/
#include "backend/dynlibs.h"   /* OpenBLAS and LAPACKE, loaded on first use */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/sim.h"
#include "backend/sparse.h"

/* ---- capture: a recording of kernel calls, and the blocks it owns ---- */
typedef enum RecKind { R_RUN, R_GEMM, R_FUSED, R_COPY2D, R_GATHER, R_SCATTER } RecKind;
typedef struct Rec {
  RecKind kind;
  OpKind op;
  Tensor *t[66];              /* copies of the Tensors given (each with its own Storage copy) */
  OpParams p;
  bool hasp;                  /* run() was given p (else NULL) */
  NnParams nn;
  const FusedProg *prog;      /* the graph's, which outlives its replay */
  double *sc;
  bool ta, tb;
  double alpha, beta;
  int64_t r0, c0;
} Rec;

typedef struct Owned { double *p; bool alive; } Owned;
typedef struct Capture {
  Rec *rec;
  int n, cap;
  Owned *own;
  int nown, capown;
  bool broken;
  char why[128];
  struct Capture *next;       /* every live replay (the blocks' owners) */
} Capture;

/* The state of a simulated GPU (its instance's ctx): the capture under way, the live replays,
** the counts the tests read, and the CPU instance whose kernels it runs. */
typedef struct SimDevice {
  Capture *capturing, *replays;
  SimCalls calls;
  const Backend *cpu;
} SimDevice;
#define DEV(be) ((SimDevice *)(be)->ctx)

static void cap_break(SimDevice *dev, const char *why) {
  if (!dev->capturing || dev->capturing->broken) return;
  dev->capturing->broken = true;
  snprintf(dev->capturing->why, sizeof dev->capturing->why, "%s", why);
}

static Tensor *snap(const Tensor *t) {
  if (!t) return NULL;
  Tensor *c = malloc(sizeof *c);
  Storage *st = malloc(sizeof *st);
  if (!c || !st) abort();
  *c = *t;
  *st = *t->st;
  c->st = st;
  return c;
}

static Rec *record(SimDevice *dev, RecKind k) {
  Capture *c = dev->capturing;
  if (c->n == c->cap) {
    c->cap = c->cap ? 2 * c->cap : 16;
    c->rec = realloc(c->rec, (size_t)c->cap * sizeof *c->rec);
    if (!c->rec) abort();
  }
  Rec *r = &c->rec[c->n++];
  memset(r, 0, sizeof *r);
  r->kind = k;
  return r;
}

/* The owner of block p among the capture and the live replays, and its entry. */
static Owned *owned(SimDevice *dev, double *p) {
  for (Capture *c = dev->capturing ? dev->capturing : dev->replays; c; c = c == dev->capturing ? dev->replays : c->next)
    for (int i = 0; i < c->nown; i++)
      if (c->own[i].p == p) return &c->own[i];
  return NULL;
}

static double *sim_alloc(const Backend *be, size_t n) {
  SimDevice *dev = DEV(be);
  double *p = malloc(n ? n : 1);
  if (p && dev->capturing) {
    Capture *c = dev->capturing;
    if (c->nown == c->capown) {
      c->capown = c->capown ? 2 * c->capown : 16;
      c->own = realloc(c->own, (size_t)c->capown * sizeof *c->own);
      if (!c->own) abort();
    }
    c->own[c->nown++] = (Owned){ p, true };
  }
  return p;
}

static void sim_free(const Backend *be, double *p, size_t n) {
  SimDevice *dev = DEV(be);
  (void)n;
  Owned *o = dev->capturing || dev->replays ? owned(dev, p) : NULL;
  if (o) { o->alive = false; return; }       /* the recording writes it: kept until replay_free */
  free(p);
}

static int sim_capture_begin(const Backend *be) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) return 1;
  dev->capturing = calloc(1, sizeof *dev->capturing);
  return dev->capturing ? 0 : 1;
}

/* Gives a capture's blocks back: the dead ones are freed, the live ones (results still held)
** are left to their tensors. */
static void capture_release(Capture *c) {
  for (int i = 0; i < c->nown; i++)
    if (!c->own[i].alive) free(c->own[i].p);
  for (int i = 0; i < c->n; i++) {
    for (int k = 0; k < 66; k++)
      if (c->rec[i].t[k]) { free(c->rec[i].t[k]->st); free(c->rec[i].t[k]); }
    free(c->rec[i].sc);
  }
  free(c->rec);
  free(c->own);
  free(c);
}

static void *sim_capture_end(const Backend *be, char *why, size_t nwhy) {
  SimDevice *dev = DEV(be);
  Capture *c = dev->capturing;
  if (!c) return NULL;
  dev->capturing = NULL;
  if (c->broken) {
    dev->calls.capture_broken++;
    snprintf(why, nwhy, "%s", c->why);
    capture_release(c);
    return NULL;
  }
  dev->calls.capture++;
  c->next = dev->replays;
  dev->replays = c;
  return c;
}

static int sim_copy2d(const Backend *be, Tensor *out, const Tensor *in);
static int sim_gather(const Backend *be, Tensor *out, const Tensor *in, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0);
static int sim_scatter(const Backend *be, Tensor *out, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0, const Tensor *in);

static int sim_replay(const Backend *be, void *h) {
  SimDevice *dev = DEV(be);
  const Backend *cpu = dev->cpu;
  Capture *c = h;
  dev->calls.replay++;
  for (int i = 0; i < c->n; i++) {
    Rec *r = &c->rec[i];
    int rc = 0;
    switch (r->kind) {
    case R_RUN: rc = cpu->run(cpu, r->op, r->t[0], r->t + 1, r->hasp ? &r->p : NULL); break;
    case R_GEMM: rc = cpu->gemm(cpu, r->ta, r->tb, r->alpha, r->t[1], r->t[2], r->beta, r->t[0]); break;
    case R_FUSED: rc = cpu->run_fused(cpu, r->prog, r->t[0], r->t + 1, r->sc); break;
    case R_COPY2D: rc = sim_copy2d(be, r->t[0], r->t[1]); break;
    case R_GATHER: rc = sim_gather(be, r->t[0], r->t[1], r->t[2], r->r0, r->t[3], r->c0); break;
    case R_SCATTER: rc = sim_scatter(be, r->t[0], r->t[2], r->r0, r->t[3], r->c0, r->t[1]); break;
    }
    if (rc) return rc;
  }
  return 0;
}

static void sim_replay_free(const Backend *be, void *h) {
  SimDevice *dev = DEV(be);
  Capture *c = h, **q = &dev->replays;
  while (*q && *q != c) q = &(*q)->next;
  if (*q) *q = c->next;
  capture_release(c);
}

static int sim_upload(const Backend *be, double *dst, const double *src, size_t n) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) { cap_break(dev, "a copy from host memory"); return 0; }
  memcpy(dst, src, n);
  return 0;
}
static int sim_download(const Backend *be, double *dst, const double *src, size_t n) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) { cap_break(dev, "a copy to host memory"); return 0; }
  dev->calls.download++;
  memcpy(dst, src, n);
  return 0;
}
static bool sim_supports(const Backend *be, OpKind op) { return DEV(be)->cpu->supports_op(DEV(be)->cpu, op); }

/* Inputs of run(): as many as the op's arity. */
static int sim_run(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) {
  SimDevice *dev = DEV(be);
  if (!dev->capturing) return dev->cpu->run(dev->cpu, op, out, in, p);
  int nin = op_info[op].arity;
  Rec *r = record(dev, R_RUN);
  r->op = op;
  r->t[0] = snap(out);
  for (int k = 0; k < nin; k++) r->t[1 + k] = snap(in[k]);
  r->hasp = p != NULL;
  if (p) r->p = *p;
  if (p && p->nn) { r->nn = *p->nn; r->p.nn = &r->nn; }
  return 0;
}
static int sim_gemm(const Backend *be, bool ta, bool tb, double alpha, const Tensor *A, const Tensor *B, double beta, Tensor *C) {
  SimDevice *dev = DEV(be);
  if (!dev->capturing) return dev->cpu->gemm(dev->cpu, ta, tb, alpha, A, B, beta, C);
  Rec *r = record(dev, R_GEMM);
  r->ta = ta; r->tb = tb; r->alpha = alpha; r->beta = beta;
  r->t[0] = snap(C); r->t[1] = snap(A); r->t[2] = snap(B);
  return 0;
}
static void sim_sync(const Backend *be) { cap_break(DEV(be), "the host waited for the device"); }
static int sim_fused(const Backend *be, const FusedProg *p, Tensor *out, Tensor *const in[], const double *sc) {
  SimDevice *dev = DEV(be);
  if (!dev->capturing) return dev->cpu->run_fused(dev->cpu, p, out, in, sc);
  if (p->nin > 64) { cap_break(dev, "a fusion group of more than 64 inputs"); return 0; }
  Rec *r = record(dev, R_FUSED);
  r->prog = p;
  r->t[0] = snap(out);
  for (int k = 0; k < p->nin; k++) r->t[1 + k] = snap(in[k]);
  r->sc = malloc((size_t)(p->nin > 0 ? p->nin : 1) * sizeof *r->sc);
  if (!r->sc) abort();
  memcpy(r->sc, sc, (size_t)p->nin * sizeof *sc);
  return 0;
}
static const char *sim_describe(const Backend *be) {
  (void)be;
  return "a simulated GPU ($MLS_SIM_GPU): host memory, the CPU's kernels"; }
static int sim_host_access(const Backend *be, const double *base) {
  (void)base;
  cap_break(DEV(be), "the host read or wrote device memory");
  return 0;
}
static double *at(const Tensor *t) { return t->st->data + t->offset; }

static int sim_copy2d(const Backend *be, Tensor *out, const Tensor *in) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) {
    Rec *r = record(dev, R_COPY2D);
    r->t[0] = snap(out);
    r->t[1] = snap(in);
    return 0;
  }
  dev->calls.copy2d++;
  double *o = at(out);
  const double *s = at(in);
  for (int64_t i = 0; i < in->shape[0]; i++)
    for (int64_t j = 0; j < in->shape[1]; j++) o[i * out->stride[0] + j * out->stride[1]] = s[i * in->stride[0] + j * in->stride[1]];
  return 0;
}

static int sim_gather(const Backend *be, Tensor *out, const Tensor *in, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) {
    Rec *q = record(dev, R_GATHER);
    q->t[0] = snap(out); q->t[1] = snap(in); q->t[2] = snap(r); q->t[3] = snap(c);
    q->r0 = r0; q->c0 = c0;
    return 0;
  }
  dev->calls.gather++;
  double *o = at(out);
  for (int64_t i = 0; i < out->shape[0]; i++)
    for (int64_t j = 0; j < out->shape[1]; j++) {
      int64_t ri = r ? (int64_t)at(r)[i] : r0 + i, cj = c ? (int64_t)at(c)[j] : c0 + j;
      o[i * out->shape[1] + j] = at(in)[ri * in->stride[0] + cj * in->stride[1]];
    }
  return 0;
}

static int sim_scatter(const Backend *be, Tensor *out, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0, const Tensor *in) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) {
    Rec *q = record(dev, R_SCATTER);
    q->t[0] = snap(out); q->t[1] = snap(in); q->t[2] = snap(r); q->t[3] = snap(c);
    q->r0 = r0; q->c0 = c0;
    return 0;
  }
  dev->calls.scatter++;
  for (int64_t i = 0; i < in->shape[0]; i++)
    for (int64_t j = 0; j < in->shape[1]; j++) {
      int64_t ri = r ? (int64_t)at(r)[i] : r0 + i, cj = c ? (int64_t)at(c)[j] : c0 + j;
      at(out)[ri * out->stride[0] + cj * out->stride[1]] = at(in)[i * in->stride[0] + j * in->stride[1]];
    }
  return 0;
}

static int sim_getrf(const Backend *be, double *a, int64_t n, int32_t *ipiv, int64_t *info) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) { cap_break(dev, "the LU's pivots are read on the host"); return 1; }
  dev->calls.getrf++;
  *info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, a, (lapack_int)n, ipiv);
  return *info < 0;
}

static int sim_getrs(const Backend *be, const double *lu, int64_t n, const int32_t *ipiv, double *b, int64_t k) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) { cap_break(dev, "the LU's pivots come from the host"); return 1; }
  dev->calls.getrs++;
  return LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', (lapack_int)n, (lapack_int)k, lu, (lapack_int)n, ipiv, b, (lapack_int)n) != 0;
}

/* ---- products with a sparse operand (backend.h spmm): cuSPARSE's contract, the CPU's CSR
** kernels. The device copy of S is a copy of its arrays made here (counted: a loop over the
** same S must copy once), and each call checks that the copy it is handed still equals S, so
** that a caller keeping a stale copy (S changed or freed) fails the tests here. ---- */
static void csr_copy_free(SpCsr *d) {
  if (!d) return;
  free(d->rowptr);
  free(d->col);
  free(d->val);
  free(d);
}

static SpCsr *csr_copy(const SpCsr *s) {
  SpCsr *d = calloc(1, sizeof *d);
  if (!d) return NULL;
  *d = (SpCsr){ s->rows, s->cols, s->nnz, s->nnz, NULL, NULL, NULL };
  d->rowptr = malloc((size_t)(s->rows + 1) * sizeof *d->rowptr);
  d->col = malloc((size_t)(s->nnz > 0 ? s->nnz : 1) * sizeof *d->col);
  d->val = malloc((size_t)(s->nnz > 0 ? s->nnz : 1) * sizeof *d->val);
  if (!d->rowptr || !d->col || !d->val) { csr_copy_free(d); return NULL; }
  memcpy(d->rowptr, s->rowptr, (size_t)(s->rows + 1) * sizeof *d->rowptr);
  memcpy(d->col, s->col, (size_t)s->nnz * sizeof *d->col);
  memcpy(d->val, s->val, (size_t)s->nnz * sizeof *d->val);
  return d;
}

static bool csr_same(const SpCsr *d, const SpCsr *s) {
  return d->rows == s->rows && d->cols == s->cols && d->nnz == s->nnz &&
         !memcmp(d->rowptr, s->rowptr, (size_t)(s->rows + 1) * sizeof *d->rowptr) &&
         !memcmp(d->col, s->col, (size_t)s->nnz * sizeof *d->col) && !memcmp(d->val, s->val, (size_t)s->nnz * sizeof *d->val);
}

static int sim_spmm(const Backend *be, void **devp, const SpCsr *s, int form, const Tensor *B, Tensor *C) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) { cap_break(dev, "a sparse product (its matrix comes from the host)"); return 1; }
  SpCsr *d = *devp;
  if (!d) {
    if (!(d = csr_copy(s))) return 1;
    *devp = d;
    dev->calls.spmm_upload++;
  } else if (!csr_same(d, s)) {
    return 1;                                  /* a stale copy: the caller's bug */
  }
  if (form < SPMM_SB || form > SPMM_BS) return 1;
  dev->calls.spmm[form]++;
  const double *b = at(B);
  double *c = at(C);
  int64_t ldb = B->stride[0];
  switch (form) {
  case SPMM_SB: spk_spmm(dev->cpu, d, b, ldb, C->shape[1], c); return 0;
  case SPMM_TB: return spk_spmm_t(dev->cpu, d, b, ldb, C->shape[1], c) != 0;
  default: spk_dsmm(dev->cpu, b, ldb, C->shape[0], d, c); return 0;
  }
}

static void sim_spmm_free(const Backend *be, void *devp) {
  DEV(be)->calls.spmm_free++;
  csr_copy_free(devp);
}

/* Pinned host memory is host memory here (counted: the MPI tests check the staged path ran). */
static double *sim_pinned_alloc(const Backend *be, size_t n) {
  DEV(be)->calls.pinned++;
  return malloc(n ? n : 1);
}
static void sim_pinned_free(const Backend *be, double *p, size_t n) { (void)be; (void)n; free(p); }

/* The allreduce's combine on "device" memory: backend.h's formula, a reference loop. */
static int sim_combine(const Backend *be, int op, double *acc, const double *other, int64_t n, bool acc_lower) {
  SimDevice *dev = DEV(be);
  if (dev->capturing) { cap_break(dev, "an allreduce"); return 1; }
  dev->calls.combine++;
  for (int64_t i = 0; i < n; i++) {
    double l = acc_lower ? acc[i] : other[i], u = acc_lower ? other[i] : acc[i];
    if (op == 0) acc[i] = l + u;
    else if (op == 1) acc[i] = l != l ? l : (u > l || u != u) ? u : l;
    else acc[i] = l != l ? l : (u < l || u != u) ? u : l;
  }
  return 0;
}

static int sim_init(Backend *be) {
  be->ctx = calloc(1, sizeof(SimDevice));
  return be->ctx == NULL;
}
static const char *sim_error(const Backend *be) { (void)be; return "simulated GPU failure"; }

static void sim_destroy(Backend *be) {
  SimDevice *dev = DEV(be);
  if (!dev) return;
  if (dev->capturing) capture_release(dev->capturing);
  while (dev->replays) {
    Capture *c = dev->replays;
    dev->replays = c->next;
    capture_release(c);
  }
  if (dev->cpu) be_drop(dev->cpu);
  free(dev);
  be->ctx = NULL;
}

Backend *sim_new(const Backend *cpu) {
  Backend *be = be_new(&be_sim, NULL, 0);
  if (!be) return NULL;
  DEV(be)->cpu = cpu;
  be_hold(cpu);
  return be;
}

SimCalls *sim_calls(const Backend *be) { return &DEV(be)->calls; }

const Backend be_sim = {
  /* .name        = */ "sim",
  /* .alloc       = */ sim_alloc,
  /* .free        = */ sim_free,
  /* .upload      = */ sim_upload,
  /* .download    = */ sim_download,
  /* .supports_op = */ sim_supports,
  /* .run         = */ sim_run,
  /* .gemm        = */ sim_gemm,
  /* .sync        = */ sim_sync,
  /* .set_threads = */ NULL,
  /* .trim        = */ NULL,
  /* .run_fused   = */ sim_fused,
  /* .describe    = */ sim_describe,
  /* .host_access = */ sim_host_access,
  /* .copy2d      = */ sim_copy2d,
  /* .init        = */ sim_init,
  /* .error       = */ sim_error,
  /* .set_stop    = */ NULL,
  /* .getrf       = */ sim_getrf,
  /* .getrs       = */ sim_getrs,
  /* .gather      = */ sim_gather,
  /* .scatter     = */ sim_scatter,
  /* .capture_begin = */ sim_capture_begin,
  /* .capture_end = */ sim_capture_end,
  /* .replay      = */ sim_replay,
  /* .replay_free = */ sim_replay_free,
  /* .pinned_alloc = */ sim_pinned_alloc,
  /* .pinned_free = */ sim_pinned_free,
  /* .combine     = */ sim_combine,
  /* .spmm        = */ sim_spmm,
  /* .spmm_free   = */ sim_spmm_free,
  /* .destroy     = */ sim_destroy,
  /* .ctx         = */ NULL,   /* (the template: an instance's, be_new) */
  /* .refs        = */ 0,
};
