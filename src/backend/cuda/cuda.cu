/*
** cuda.cu — the CUDA runtime side of the GPU backend: the device and its stream, the caching
** allocator over managed memory, host/device residency, and products through cuBLAS.
** Failures are status codes with the reason kept for mcu_error(); nothing here longjmps.
*/
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unordered_map>
#include <vector>
#include <cublas_v2.h>
#include "cuda_impl.h"

#include <new>

McuContext *mcu_new(void) { return new (std::nothrow) McuContext{}; }

/* (The storages of its memory hold the instance, so none is left when it ends: every block in
** the pool is a cached one or a finished capture's.) */
void mcu_delete(McuContext *cx) {
  if (!cx) return;
  if (cx->stream) cudaStreamSynchronize(cx->stream);
  for (auto &b : cx->blocks) cudaFree((void *)b.first);
  if (cx->blas) cublasDestroy(cx->blas);
  if (cx->blas_ws) cudaFree(cx->blas_ws);
  if (cx->solver) cusolverDnDestroy(cx->solver);
  if (cx->sparse) cusparseDestroy(cx->sparse);
  if (cx->scratch) cudaFree(cx->scratch);
  if (cx->stream) cudaStreamDestroy(cx->stream);
  cudaGetLastError();
  delete cx;
}

static void cap_break(McuContext *cx, const char *why);
static void capture_keep(McuContext *cx, Capture *c, double *p);

int mcu_fail(McuContext *cx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cx->errbuf, sizeof cx->errbuf, fmt, ap);
  va_end(ap);
  return 1;
}

const char *mcu_error(McuContext *cx) { return cx->errbuf[0] ? cx->errbuf : "unknown CUDA failure"; }

static int cuda_check(McuContext *cx, cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  cudaGetLastError();                        /* clear a non-sticky error */
  return mcu_fail(cx, "CUDA error in %s: %s", what, cudaGetErrorString(e));
}

int mcu_launched(McuContext *cx, const char *kernel) {
  cx->busy = true;
  cx->st.launches++;
  return cuda_check(cx, cudaGetLastError(), kernel);
}

int mcu_init(McuContext *cx) {
  if (cx->state) return cx->state > 0 ? 0 : 1;
  cx->state = -1;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return mcu_fail(cx, "no CUDA device available");
  }
  if (cuda_check(cx, cudaSetDevice(cx->device), "cudaSetDevice")) return 1;
  int cma = 0;
  cudaDeviceGetAttribute(&cma, cudaDevAttrConcurrentManagedAccess, cx->device);
  cx->concurrent_managed = cma != 0;
  if (cuda_check(cx, cudaStreamCreateWithFlags(&cx->stream, cudaStreamNonBlocking), "cudaStreamCreate")) return 1;
  if (cuda_check(cx, cudaMalloc((void **)&cx->scratch, MCU_SCRATCH * sizeof(double)), "cudaMalloc")) return 1;
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, cx->device);
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  snprintf(cx->descr, sizeof cx->descr, "%.200s, %.0f GiB, sm_%d%d, CUDA runtime %d.%d, cuBLAS", p.name,
           (double)p.totalGlobalMem / (1024.0 * 1024 * 1024), p.major, p.minor, rt / 1000, rt % 1000 / 10);
  cx->state = 1;
  return 0;
}

const char *mcu_describe(McuContext *cx) { return cx->state > 0 ? cx->descr : "CUDA (no device)"; }

/* ---- the caching allocator ----
** A block handed out while a graph is being captured belongs to that capture (owner): the
** captured kernels read and write it at every replay, so when its tensor frees it, it is kept
** for the capture (reused by the capture's later allocations) instead of going back to the
** cache, until the replay is freed. The pool is cx->blocks (every block we own), cx->cached
** (the free ones by size) and the byte counts cx->in_use and cx->in_cache (cuda_impl.h). */

static size_t round_size(size_t n) {
  if (n < 512) return 512;
  if (n < ((size_t)1 << 20)) return (n + 511) & ~(size_t)511;
  return (n + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
}

void mcu_trim(McuContext *cx) {
  if (cx->state <= 0) return;
  if (cx->capturing) { cap_break(cx, "the cache was given back"); return; }
  const char *e = getenv("MLS_CUDA_STATS");
  if (e && *e && *e != '0')
    fprintf(stderr, "cuda: %llu launches, %llu waits, %llu prefetches, %llu cudaMallocManaged, %llu reused blocks, "
            "%llu uploads, %llu downloads, %llu graphs captured, %llu graph launches, %.1f MiB cached\n",
            cx->st.launches, cx->st.waits, cx->st.prefetches, cx->st.mallocs, cx->st.reuses, cx->st.uploads,
            cx->st.downloads, cx->st.captures, cx->st.replays, (double)cx->in_cache / 1048576.0);
  cudaStreamSynchronize(cx->stream);
  cx->busy = false;
  for (auto &c : cx->cached) { cx->blocks.erase(c.second); cudaFree(c.second); }
  cx->cached.clear();
  cx->in_cache = 0;
}

static double *handed_out(McuContext *cx, double *p);
static double *capture_spare(McuContext *cx, size_t sz);

double *mcu_alloc(McuContext *cx, size_t nbytes) {
  size_t sz = round_size(nbytes);
  if (cx->capturing) {
    if (double *p = capture_spare(cx, sz)) return p;
  }
  auto it = cx->cached.find(sz);
  if (it != cx->cached.end()) {
    double *p = it->second;
    cx->cached.erase(it);
    cx->st.reuses++;
    cx->in_cache -= sz;
    cx->in_use += sz;
    return handed_out(cx, p);
  }
  size_t freeb = 0, total = 0;
  cudaMemGetInfo(&freeb, &total);
  size_t reserve = (size_t)1 << 30;           /* the context, cuBLAS and NVRTC's modules */
  /* managed pages take device memory when first touched, so count what we handed out */
  if (sz + cx->in_use + cx->in_cache + reserve > total) mcu_trim(cx);
  if (cx->capturing && sz + cx->in_use + cx->in_cache + reserve > total) return NULL; /* (the capture is broken) */
  if (sz + cx->in_use + reserve > total) {
    mcu_fail(cx, "out of GPU memory");
    return NULL;
  }
  double *p = NULL;
  if (cudaMallocManaged((void **)&p, sz, cudaMemAttachGlobal) != cudaSuccess) {
    cudaGetLastError();
    mcu_trim(cx);
    if (cudaMallocManaged((void **)&p, sz, cudaMemAttachGlobal) != cudaSuccess) {
      cudaGetLastError();
      mcu_fail(cx, "out of GPU memory");
      return NULL;
    }
  }
  cx->blocks[p] = Block{ sz, false, false, NULL };
  cx->st.mallocs++;
  cx->in_use += sz;
  return handed_out(cx, p);
}

void mcu_free(McuContext *cx, double *p) {
  if (!p) return;
  auto b = cx->blocks.find(p);
  if (b == cx->blocks.end()) return;
  cx->in_use -= b->second.size;
  b->second.alive = false;
  if (b->second.owner) { capture_keep(cx, b->second.owner, p); return; }   /* a replay's buffer */
  cx->in_cache += b->second.size;
  cx->cached.emplace(b->second.size, p);      /* stream order keeps pending kernels safe */
  if (cx->in_cache > ((size_t)8 << 30)) mcu_trim(cx);
}

size_t mcu_bytes_in_use(McuContext *cx) { return cx->in_use; }
double *mcu_scratch_ptr(McuContext *cx) { return cx->scratch; }
size_t mcu_bytes_cached(McuContext *cx) { return cx->in_cache; }

int mcu_sync(McuContext *cx) {
  if (cx->capturing) { cap_break(cx, "the host waited for the device"); return 0; }
  if (cx->state <= 0 || !cx->busy) return 0;
  cx->busy = false;
  cx->st.waits++;
  return cuda_check(cx, cudaStreamSynchronize(cx->stream), "a kernel");
}

int mcu_host_access(McuContext *cx, const double *p) {
  int rc = mcu_sync(cx);
  auto b = cx->blocks.find(p);
  if (b != cx->blocks.end()) b->second.host = true;
  return rc;
}

int mcu_device_access(McuContext *cx, const double *p) {
  if (!p) return 0;
  auto b = cx->blocks.find(p);
  if (b == cx->blocks.end() || !b->second.host) return 0;
  b->second.host = false;
  if (!cx->concurrent_managed) return 0;       /* pages migrate on fault instead */
  if (cx->capturing) { cap_break(cx, "a buffer the host had touched"); return 0; }
  cudaMemLocation loc;
  memset(&loc, 0, sizeof loc);
  loc.type = cudaMemLocationTypeDevice;
  loc.id = cx->device;
  cx->busy = true;
  cx->st.prefetches++;
  return cuda_check(cx, cudaMemPrefetchAsync(p, b->second.size, loc, 0, cx->stream), "cudaMemPrefetchAsync");
}

double *mcu_pinned_alloc(size_t nbytes) {
  double *p = NULL;
  if (cudaHostAlloc((void **)&p, nbytes ? nbytes : 1, cudaHostAllocDefault) != cudaSuccess) {
    cudaGetLastError();
    return NULL;
  }
  return p;
}

void mcu_pinned_free(double *p) {
  if (p) cudaFreeHost(p);
}

int mcu_upload(McuContext *cx, double *dst, const double *src, size_t nbytes) {
  if (nbytes == 0) return 0;
  if (cx->capturing) { cap_break(cx, "a copy from host memory"); return 0; }
  cx->busy = true;
  cx->st.uploads++;
  return cuda_check(cx, cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, cx->stream), "an upload");
}

int mcu_download(McuContext *cx, double *dst, const double *src, size_t nbytes) {
  if (nbytes == 0) return 0;
  if (cx->capturing) { cap_break(cx, "a copy to host memory"); return 0; }
  if (cuda_check(cx, cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, cx->stream), "a download")) return 1;
  cx->st.downloads++;
  cx->busy = true;
  return mcu_sync(cx);
}

/* ---- cuBLAS ----
** cuBLAS is column-major: a row-major m x n matrix with leading dimension ld is its n x m
** transpose there. So C^T = op(B)^T op(A)^T: call with the operands swapped. */
int mcu_gemm(McuContext *cx, bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *A, int64_t lda,
             const double *B, int64_t ldb, double beta, double *C, int64_t ldc) {
  if (m == 0 || n == 0) return 0;
  if (!cx->blas) {                           /* started on the first product: most runs need none */
    if (cx->capturing) { cap_break(cx, "cuBLAS started"); return 0; }
    if (cublasCreate(&cx->blas) != CUBLAS_STATUS_SUCCESS) return mcu_fail(cx, "cuBLAS could not start");
    cublasSetStream(cx->blas, cx->stream);
    /* a workspace of our own (NVIDIA's advice for Hopper: 32 MiB), so that a captured product
    ** never asks cuBLAS to allocate */
    void *ws = NULL;
    if (cudaMalloc(&ws, (size_t)32 << 20) == cudaSuccess) { cx->blas_ws = ws; cublasSetWorkspace(cx->blas, ws, (size_t)32 << 20); }
    else cudaGetLastError();
  }
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX || ldc > INT32_MAX)
    return mcu_fail(cx, "matrix too large for cuBLAS");
  if (k == 0) {                              /* C = beta C; cuBLAS would too, spelled out */
    if (beta == 0) return cuda_check(cx, cudaMemsetAsync(C, 0, (size_t)(m * ldc) * sizeof(double), cx->stream), "memset");
  }
  cx->busy = true;
  cublasStatus_t s = cublasDgemm(cx->blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n,
                                 (int)m, (int)k, &alpha, B, (int)(ldb > 0 ? ldb : 1), A, (int)(lda > 0 ? lda : 1),
                                 &beta, C, (int)(ldc > 0 ? ldc : 1));
  if (s != CUBLAS_STATUS_SUCCESS) return mcu_fail(cx, "cuBLAS dgemm failed (status %d)", (int)s);
  return 0;
}

/* ---- graph capture (CUDA graphs, issue 10 item 5) ----
** mcu_capture_begin starts recording the stream's work instead of running it (relaxed mode:
** allocation is allowed); what would need the host (a wait, a copy from or to host memory, a
** prefetch, the cache given back, cuSOLVER's host pivots) breaks the capture instead, and
** mcu_capture_end then returns NULL: nothing ran, the caller runs the work again uncaptured.
** Otherwise it returns the instantiated graph with the blocks the capture allocated. */
struct Capture {
  std::vector<double *> owned;               /* every block allocated while capturing */
  std::vector<double *> spare;               /* of those, freed: the capture's later allocations reuse them */
  cudaGraphExec_t exec;
  bool broken;
  char why[128];
};

static void cap_break(McuContext *cx, const char *why) {
  if (!cx->capturing || cx->capturing->broken) return;
  cx->capturing->broken = true;
  snprintf(cx->capturing->why, sizeof cx->capturing->why, "%s", why);
}

static void capture_keep(McuContext *cx, Capture *c, double *p) {
  if (c == cx->capturing) c->spare.push_back(p);
}

static double *handed_out(McuContext *cx, double *p) {
  Block &b = cx->blocks[p];
  b.alive = true;
  if (cx->capturing) {
    b.owner = cx->capturing;
    cx->capturing->owned.push_back(p);
  }
  return p;
}

static double *capture_spare(McuContext *cx, size_t sz) {
  std::vector<double *> &sp = cx->capturing->spare;
  for (size_t i = 0; i < sp.size(); i++) {
    Block &b = cx->blocks[sp[i]];
    if (b.size != sz) continue;
    double *p = sp[i];
    sp.erase(sp.begin() + (long)i);
    b.alive = true;
    cx->in_use += sz;
    return p;
  }
  return NULL;
}

bool mcu_capturing(McuContext *cx) { return cx->capturing != NULL; }

int mcu_capture_refuse(McuContext *cx, const char *what) {
  if (!cx->capturing) return 0;
  cap_break(cx, what);
  return mcu_fail(cx, "%s cannot be captured in a CUDA graph", what);
}

int mcu_capture_begin(McuContext *cx) {
  if (cx->state <= 0) return mcu_fail(cx, "no CUDA device");
  if (cx->capturing) return mcu_fail(cx, "a capture is already in progress");
  if (mcu_sync(cx)) return 1;                  /* nothing in flight: a broken capture's host reads are safe */
  Capture *c = new Capture();
  cudaError_t e = cudaStreamBeginCapture(cx->stream, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) { delete c; return cuda_check(cx, e, "cudaStreamBeginCapture"); }
  cx->capturing = c;
  return 0;
}

/* Gives a capture's blocks back: free ones to the cache, live ones (results still held) to
** their tensors, which free them as any other block. */
static void capture_release(McuContext *cx, Capture *c) {
  for (double *p : c->owned) {
    auto b = cx->blocks.find(p);
    if (b == cx->blocks.end() || b->second.owner != c) continue;
    b->second.owner = NULL;
    if (!b->second.alive) {
      cx->in_cache += b->second.size;
      cx->cached.emplace(b->second.size, p);
    }
  }
  delete c;
}

void *mcu_capture_end(McuContext *cx, char *why, size_t nwhy) {
  Capture *c = cx->capturing;
  if (!c) return NULL;
  cx->capturing = NULL;
  cudaGraph_t g = NULL;
  cudaError_t e = cudaStreamEndCapture(cx->stream, &g);
  if (e == cudaSuccess && !c->broken && g) e = cudaGraphInstantiate(&c->exec, g, 0);
  else if (e == cudaSuccess && !c->broken) e = cudaErrorStreamCaptureInvalidated;
  if (g) cudaGraphDestroy(g);
  if (c->broken || e != cudaSuccess) {
    if (!c->broken) snprintf(c->why, sizeof c->why, "%s", cudaGetErrorString(e));
    cudaGetLastError();
    snprintf(why, nwhy, "%s", c->why);
    capture_release(cx, c);
    return NULL;
  }
  cx->st.captures++;
  return c;
}

int mcu_replay(McuContext *cx, void *r) {
  Capture *c = (Capture *)r;
  cx->busy = true;
  cx->st.replays++;
  return cuda_check(cx, cudaGraphLaunch(c->exec, cx->stream), "cudaGraphLaunch");
}

void mcu_replay_free(McuContext *cx, void *r) {
  Capture *c = (Capture *)r;
  if (!c) return;
  cudaStreamSynchronize(cx->stream);          /* a replay may still be running */
  cx->busy = false;
  cudaGraphExecDestroy(c->exec);
  capture_release(cx, c);
}
