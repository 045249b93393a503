/*
** backend.c — the CUDA backend's Backend (backend.h), built into the plugin libmls_cuda.so
** with cuda.cu and the kernels. It translates Tensors and OpParams into the raw pointers and
** sizes of cuda.h; only registry.c knows the plugin exists. It calls nothing of the
** interpreter (the plugin is linked with -z defs): the data of a tensor is read from its
** fields directly, because tensor_data() would wait for the device.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/cuda/cuda.h"

static double *dptr(const Tensor *t) { return t->st->data + t->offset; }
/* The instance's CUDA context (cuda.h; be_new made it through cu_init). */
#define CX(be) ((McuContext *)(be)->ctx)

static double *cu_alloc(const Backend *be, size_t nbytes) { return mcu_alloc(CX(be), nbytes); }
static void cu_free(const Backend *be, double *p, size_t nbytes) { (void)nbytes; mcu_free(CX(be), p); }

static int cu_upload(const Backend *be, double *dst, const double *src, size_t nbytes) { return mcu_upload(CX(be), dst, src, nbytes); }
static int cu_download(const Backend *be, double *dst, const double *src, size_t nbytes) { return mcu_download(CX(be), dst, src, nbytes); }

/* t() is a view and a reshape a device copy (copy2d): neither needs run(), both stay here. */
static bool cu_supports(const Backend *be, OpKind op) {
  return mcu_ew_arity(op) != 0 || mcu_reduce_supported(op) || op == OP_IFELSE || op == OP_MATMUL || op == OP_TRANSPOSE ||
         op == OP_RESHAPE;
}

/* Before a kernel touches a tensor: bring its pages back if the host had them. */
static int to_device(const Backend *be, const Tensor *t) { return t ? mcu_device_access(CX(be), t->st->data) : 0; }

static int cu_run(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) {
  int arity = mcu_ew_arity(op);               /* 0: not elementwise */
  int nin = op == OP_IFELSE ? 3 : arity == 2 ? 2 : 1;
  for (int k = 0; k < nin; k++)
    if (to_device(be, in[k])) return 1;
  if (to_device(be, out)) return 1;
  int64_t r = tensor_rows(out), c = tensor_cols(out);
  if (arity == 2) {
    McuArg a = { in[0] ? dptr(in[0]) : NULL, (int)p->bc[0], p->scalar[0] };
    McuArg b = { in[1] ? dptr(in[1]) : NULL, (int)p->bc[1], p->scalar[1] };
    return mcu_binary(CX(be), op, dptr(out), a, b, r, c);
  }
  if (arity == 1) return mcu_unary(CX(be), op, dptr(out), dptr(in[0]), r * c);
  if (op == OP_IFELSE)
    return mcu_ifelse(CX(be), dptr(out), dptr(in[0]), tensor_numel(in[0]) == 1, dptr(in[1]), tensor_numel(in[1]) == 1,
                      dptr(in[2]), tensor_numel(in[2]) == 1, r * c);
  if (mcu_reduce_supported(op))
    return mcu_reduce(CX(be), op, dptr(out), dptr(in[0]), tensor_rows(in[0]), tensor_cols(in[0]), r, c);
  return 1;
}

/* The leading dimension cuBLAS needs: the row stride, at least the row's length. */
static int64_t ld_of(const Tensor *t) {
  int64_t ld = t->stride[0];
  return tensor_rows(t) <= 1 || ld < tensor_cols(t) ? (tensor_cols(t) > 0 ? tensor_cols(t) : 1) : ld;
}

static int cu_gemm(const Backend *be, bool ta, bool tb, double alpha, const Tensor *A, const Tensor *B, double beta, Tensor *C) {
  if (to_device(be, A) || to_device(be, B) || to_device(be, C)) return 1;
  int64_t m = tensor_rows(C), n = tensor_cols(C), k = ta ? tensor_rows(A) : tensor_cols(A);
  return mcu_gemm(CX(be), ta, tb, m, n, k, alpha, dptr(A), ld_of(A), dptr(B), ld_of(B), beta, dptr(C), n > 0 ? n : 1);
}

static int cu_copy2d(const Backend *be, Tensor *out, const Tensor *in) {
  if (to_device(be, in) || to_device(be, out)) return 1;
  return mcu_copy2d(CX(be), dptr(out), out->stride[0], out->stride[1], dptr(in), tensor_rows(in), tensor_cols(in), in->stride[0],
                    in->stride[1]);
}

/* ---- fusion groups: CUDA C written here, compiled by NVRTC (fused.cu) ----
** The program #includes backend/scalar.h (its text is compiled into this file by the build),
** so the generated kernel evaluates the very formulas of the CPU kernels. */
#include "backend/cuda/nvrtc_headers.h"

typedef struct Src { char *p; size_t n, cap; bool oom; } Src;
static void put(Src *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Src *s, const char *fmt, ...) {
  va_list ap;
  for (;;) {
    va_start(ap, fmt);
    int k = vsnprintf(s->p + s->n, s->cap - s->n, fmt, ap);
    va_end(ap);
    if (k < 0) { s->oom = true; return; }
    if ((size_t)k < s->cap - s->n) { s->n += (size_t)k; return; }
    size_t cap = (s->cap + (size_t)k) * 2;
    char *q = realloc(s->p, cap);
    if (!q) { s->oom = true; return; }
    s->p = q;
    s->cap = cap;
  }
}

static int cu_run_fused(const Backend *be, const FusedProg *p, Tensor *out, Tensor *const in[], const double *scalar) {
  if (p->nins == 0 || p->nin > 64) return 1;
  if (p->red != OP_NONE && p->red != OP_SUM) return 1;   /* a row aggregate: op by op on the device */
  for (int q = 0; q < p->nins; q++)
    if (!mcu_ew_arity(p->ins[q].op)) return 1;           /* qnorm: op by op (CPU) */
  for (int k = 0; k < p->nin; k++)
    if (to_device(be, in[k])) return 1;
  if (to_device(be, out)) return 1;
  bool sum = p->red == OP_SUM;
  int64_t n = p->rows * p->cols;
  if (n == 0 && !sum) return 0;
  Src s = { malloc(1024), 0, 1024, false };
  if (!s.p) return 1;
  put(&s, "#include <math.h>\n#include \"ops.h\"\n#include \"scalar.h\"\n"
          "extern \"C\" __global__ void mls_fused(double *o, double *part, long long n, long long cols");
  for (int k = 0; k < p->nin; k++) put(&s, ", const double *p%d, double s%d", k, k);
  put(&s, ") {\n  double acc = 0.0;\n"
          "  for (long long k = blockIdx.x * (long long)blockDim.x + threadIdx.x; k < n; k += (long long)gridDim.x * blockDim.x) {\n");
  for (int r = 0; r < p->nregs; r++) put(&s, "    double r%d;\n", r);
  for (int k = 0; k < p->nin; k++) {
    if (!in[k]) put(&s, "    r%d = s%d;\n", k, k);
    else switch (p->bc[k]) {
      case BC_FULL: put(&s, "    r%d = p%d[k];\n", k, k); break;
      case BC_SCALAR: put(&s, "    r%d = p%d[0];\n", k, k); break;
      case BC_ROW: put(&s, "    r%d = p%d[k %% cols];\n", k, k); break;
      case BC_COL: put(&s, "    r%d = p%d[k / cols];\n", k, k); break;
    }
  }
  for (int q = 0; q < p->nins; q++) {
    const FusedIns *f = &p->ins[q];
    if (f->b >= 0) put(&s, "    r%d = sc_binary(%d, r%d, r%d);\n", f->dst, f->op, f->a, f->b);
    else put(&s, "    r%d = sc_unary(%d, r%d);\n", f->dst, f->op, f->a);
  }
  int last = p->ins[p->nins - 1].dst;
  if (sum) {
    put(&s, "    acc += r%d;\n  }\n"
            "  __shared__ double sh[%d];\n  sh[threadIdx.x] = acc;\n  __syncthreads();\n"
            "  for (int h = blockDim.x / 2; h > 0; h >>= 1) {\n"
            "    if (threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];\n    __syncthreads();\n  }\n"
            "  if (threadIdx.x == 0) part[blockIdx.x] = sh[0];\n}\n", last, 256);
  } else {
    put(&s, "    o[k] = r%d;\n  }\n}\n", last);
  }
  if (s.oom) { free(s.p); return 1; }
  void *args[4 + 128];
  double *o = dptr(out), *part = mcu_scratch_ptr(CX(be));
  long long nn = (long long)n, cols = (long long)(p->cols > 0 ? p->cols : 1);
  const double *ptr[64];
  args[0] = &o; args[1] = &part; args[2] = &nn; args[3] = &cols;
  for (int k = 0; k < p->nin; k++) {
    ptr[k] = in[k] ? dptr(in[k]) : NULL;
    args[4 + 2 * k] = &ptr[k];
    args[5 + 2 * k] = (void *)&scalar[k];
  }
  int rc = mcu_fused_run(CX(be), s.p, nvrtc_header_src, nvrtc_header_names, NVRTC_NHEADERS, args, n, sum, o);
  free(s.p);
  return rc;
}

/* cuSOLVER's LU (solver.cu); the matrices are moved to the device first if the host had them */
static int cu_getrf(const Backend *be, double *a, int64_t n, int32_t *ipiv, int64_t *info) {
  if (mcu_device_access(CX(be), a)) return 1;
  return mcu_getrf(CX(be), a, n, ipiv, info);
}

static int cu_getrs(const Backend *be, const double *lu, int64_t n, const int32_t *ipiv, double *b, int64_t k) {
  if (mcu_device_access(CX(be), lu) || mcu_device_access(CX(be), b)) return 1;
  return mcu_getrs(CX(be), lu, n, ipiv, b, k);
}

static int cu_gather(const Backend *be, Tensor *out, const Tensor *in, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0) {
  if (to_device(be, in) || to_device(be, out) || to_device(be, r) || to_device(be, c)) return 1;
  return mcu_gather(CX(be), dptr(out), dptr(in), in->stride[0], in->stride[1], r ? dptr(r) : NULL, r0, c ? dptr(c) : NULL, c0,
                    tensor_rows(out), tensor_cols(out));
}

static int cu_scatter(const Backend *be, Tensor *out, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0, const Tensor *in) {
  if (to_device(be, in) || to_device(be, out) || to_device(be, r) || to_device(be, c)) return 1;
  return mcu_scatter(CX(be), dptr(out), out->stride[0], out->stride[1], r ? dptr(r) : NULL, r0, c ? dptr(c) : NULL, c0, dptr(in),
                     in->stride[0], in->stride[1], tensor_rows(in), tensor_cols(in));
}

/* cuSPARSE (sparse.cu): the forms are backend.h's, numbered as cuda.h takes them */
_Static_assert(SPMM_SB == 0 && SPMM_TB == 1 && SPMM_BS == 2, "cuda.h numbers the sparse product forms so");
static int cu_spmm(const Backend *be, void **dev, const SpCsr *s, int form, const Tensor *B, Tensor *C) {
  if (to_device(be, B) || to_device(be, C)) return 1;
  McuCsr *m = *dev;
  int rc = mcu_spmm(CX(be), &m, s->rows, s->cols, s->nnz, s->rowptr, s->col, s->val, form, dptr(B), ld_of(B), dptr(C),
                    tensor_rows(C), tensor_cols(C));
  *dev = m;
  return rc;
}
static void cu_spmm_free(const Backend *be, void *dev) { mcu_csr_free(CX(be), dev); }

static double *cu_pinned_alloc(const Backend *be, size_t nbytes) { (void)be; return mcu_pinned_alloc(nbytes); }
static void cu_pinned_free(const Backend *be, double *p, size_t nbytes) { (void)be; (void)nbytes; mcu_pinned_free(p); }
static int cu_combine(const Backend *be, int op, double *acc, const double *other, int64_t n, bool acc_lower) {
  return mcu_combine(CX(be), op, acc, other, n, acc_lower);
}

static void cu_sync(const Backend *be) { mcu_sync(CX(be)); }
static void cu_trim(const Backend *be) { mcu_trim(CX(be)); }
static int cu_host_access(const Backend *be, const double *base) { return mcu_host_access(CX(be), base); }
static const char *cu_describe(const Backend *be) { return mcu_describe(CX(be)); }
static int cu_init(Backend *be) {
  be->ctx = mcu_new();
  return be->ctx ? mcu_init(CX(be)) : 1;
}
static const char *cu_error(const Backend *be) { return be->ctx ? mcu_error(CX(be)) : "out of memory"; }
static void cu_destroy(Backend *be) {
  mcu_delete(CX(be));
  be->ctx = NULL;
}
static int cu_capture_begin(const Backend *be) { return mcu_capture_begin(CX(be)); }
static void *cu_capture_end(const Backend *be, char *why, size_t nwhy) { return mcu_capture_end(CX(be), why, nwhy); }
static int cu_replay(const Backend *be, void *r) { return mcu_replay(CX(be), r); }
static void cu_replay_free(const Backend *be, void *r) { mcu_replay_free(CX(be), r); }

const Backend be_cuda = {
  /* .name        = */ "cuda",
  /* .alloc       = */ cu_alloc,
  /* .free        = */ cu_free,
  /* .upload      = */ cu_upload,
  /* .download    = */ cu_download,
  /* .supports_op = */ cu_supports,
  /* .run         = */ cu_run,
  /* .gemm        = */ cu_gemm,
  /* .sync        = */ cu_sync,
  /* .set_threads = */ NULL,
  /* .trim        = */ cu_trim,
  /* .run_fused   = */ cu_run_fused,
  /* .describe    = */ cu_describe,
  /* .host_access = */ cu_host_access,
  /* .copy2d      = */ cu_copy2d,
  /* .init        = */ cu_init,
  /* .error       = */ cu_error,
  /* .set_stop    = */ NULL,
  /* .getrf       = */ cu_getrf,
  /* .getrs       = */ cu_getrs,
  /* .gather      = */ cu_gather,
  /* .scatter     = */ cu_scatter,
  /* .capture_begin = */ cu_capture_begin,
  /* .capture_end = */ cu_capture_end,
  /* .replay      = */ cu_replay,
  /* .replay_free = */ cu_replay_free,
  /* .pinned_alloc = */ cu_pinned_alloc,
  /* .pinned_free = */ cu_pinned_free,
  /* .combine     = */ cu_combine,
  /* .spmm        = */ cu_spmm,
  /* .spmm_free   = */ cu_spmm_free,
  /* .destroy     = */ cu_destroy,
  /* .ctx         = */ NULL,   /* (the template: an instance's, be_new) */
  /* .refs        = */ 0,
};
