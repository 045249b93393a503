/*
** sim.c — a simulated GPU, for testing the device paths where there is no GPU (CI). With
** $MLS_SIM_GPU set, "gpu" (--device gpu, gpu(X), device("gpu")) is this backend instead of the
** CUDA plugin: its memory is host memory treated as a device's (storages are dev, so the
** host reaches them through host_access as it does CUDA's managed memory), its kernels are
** the CPU's, and its device entries (copy2d, gather, scatter, getrf, getrs, download) are
** reference loops and column-major LAPACK with the contracts of backend.h. The interpreter's
** side of a device (placement, copies, indexing and solvers on the device, fallbacks) runs
** as with the GPU; only the CUDA kernels themselves are not checked here.
*/
#include <lapacke.h>
#undef I
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/sim.h"

SimCalls sim_calls;

static double *sim_alloc(size_t n) { return malloc(n ? n : 1); }
static void sim_free(double *p, size_t n) { (void)n; free(p); }
static int sim_upload(double *dst, const double *src, size_t n) { memcpy(dst, src, n); return 0; }
static int sim_download(double *dst, const double *src, size_t n) { sim_calls.download++; memcpy(dst, src, n); return 0; }
static bool sim_supports(OpKind op) { return be_cpu.supports_op(op); }
static int sim_run(OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) { return be_cpu.run(op, out, in, p); }
static int sim_gemm(bool ta, bool tb, double alpha, const Tensor *A, const Tensor *B, double beta, Tensor *C) {
  return be_cpu.gemm(ta, tb, alpha, A, B, beta, C);
}
static void sim_sync(void) {}
static int sim_fused(const FusedProg *p, Tensor *out, Tensor *const in[], const double *sc) {
  return be_cpu.run_fused(p, out, in, sc);
}
static const char *sim_describe(void) { return "a simulated GPU ($MLS_SIM_GPU): host memory, the CPU's kernels"; }
static int sim_host_access(const double *base) { (void)base; return 0; }
static double *at(const Tensor *t) { return t->st->data + t->offset; }

static int sim_copy2d(Tensor *out, const Tensor *in) {
  sim_calls.copy2d++;
  double *o = at(out);
  const double *s = at(in);
  for (int64_t i = 0; i < in->shape[0]; i++)
    for (int64_t j = 0; j < in->shape[1]; j++) o[i * out->stride[0] + j * out->stride[1]] = s[i * in->stride[0] + j * in->stride[1]];
  return 0;
}

static int sim_gather(Tensor *out, const Tensor *in, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0) {
  sim_calls.gather++;
  double *o = at(out);
  for (int64_t i = 0; i < out->shape[0]; i++)
    for (int64_t j = 0; j < out->shape[1]; j++) {
      int64_t ri = r ? (int64_t)at(r)[i] : r0 + i, cj = c ? (int64_t)at(c)[j] : c0 + j;
      o[i * out->shape[1] + j] = at(in)[ri * in->stride[0] + cj * in->stride[1]];
    }
  return 0;
}

static int sim_scatter(Tensor *out, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0, const Tensor *in) {
  sim_calls.scatter++;
  for (int64_t i = 0; i < in->shape[0]; i++)
    for (int64_t j = 0; j < in->shape[1]; j++) {
      int64_t ri = r ? (int64_t)at(r)[i] : r0 + i, cj = c ? (int64_t)at(c)[j] : c0 + j;
      at(out)[ri * out->stride[0] + cj * out->stride[1]] = at(in)[i * in->stride[0] + j * in->stride[1]];
    }
  return 0;
}

static int sim_getrf(double *a, int64_t n, int32_t *ipiv, int64_t *info) {
  sim_calls.getrf++;
  *info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, a, (lapack_int)n, ipiv);
  return *info < 0;
}

static int sim_getrs(const double *lu, int64_t n, const int32_t *ipiv, double *b, int64_t k) {
  sim_calls.getrs++;
  return LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', (lapack_int)n, (lapack_int)k, lu, (lapack_int)n, ipiv, b, (lapack_int)n) != 0;
}

static int sim_init(void) { return 0; }
static const char *sim_error(void) { return "simulated GPU failure"; }

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
};
