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

McuContext mcu{};                            /* the plugin's state (cuda_impl.h) */

static void cap_break(const char *why);
static void capture_keep(Capture *c, double *p);

int mcu_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(mcu.errbuf, sizeof mcu.errbuf, fmt, ap);
  va_end(ap);
  return 1;
}

const char *mcu_error(void) { return mcu.errbuf[0] ? mcu.errbuf : "unknown CUDA failure"; }

static int cuda_check(cudaError_t e, const char *what) {
  if (e == cudaSuccess) return 0;
  cudaGetLastError();                        /* clear a non-sticky error */
  return mcu_fail("CUDA error in %s: %s", what, cudaGetErrorString(e));
}

int mcu_launched(const char *kernel) {
  mcu.busy = true;
  mcu.st.launches++;
  return cuda_check(cudaGetLastError(), kernel);
}

int mcu_init(void) {
  if (mcu.state) return mcu.state > 0 ? 0 : 1;
  mcu.state = -1;
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    cudaGetLastError();
    return mcu_fail("no CUDA device available");
  }
  if (cuda_check(cudaSetDevice(mcu.device), "cudaSetDevice")) return 1;
  int cma = 0;
  cudaDeviceGetAttribute(&cma, cudaDevAttrConcurrentManagedAccess, mcu.device);
  mcu.concurrent_managed = cma != 0;
  if (cuda_check(cudaStreamCreateWithFlags(&mcu.stream, cudaStreamNonBlocking), "cudaStreamCreate")) return 1;
  if (cuda_check(cudaMalloc((void **)&mcu.scratch, MCU_SCRATCH * sizeof(double)), "cudaMalloc")) return 1;
  cudaDeviceProp p;
  cudaGetDeviceProperties(&p, mcu.device);
  int rt = 0;
  cudaRuntimeGetVersion(&rt);
  snprintf(mcu.descr, sizeof mcu.descr, "%.200s, %.0f GiB, sm_%d%d, CUDA runtime %d.%d, cuBLAS", p.name,
           (double)p.totalGlobalMem / (1024.0 * 1024 * 1024), p.major, p.minor, rt / 1000, rt % 1000 / 10);
  mcu.state = 1;
  return 0;
}

const char *mcu_describe(void) { return mcu.state > 0 ? mcu.descr : "CUDA (no device)"; }

/* ---- the caching allocator ----
** A block handed out while a graph is being captured belongs to that capture (owner): the
** captured kernels read and write it at every replay, so when its tensor frees it, it is kept
** for the capture (reused by the capture's later allocations) instead of going back to the
** cache, until the replay is freed. The pool is mcu.blocks (every block we own), mcu.cached
** (the free ones by size) and the byte counts mcu.in_use and mcu.in_cache (cuda_impl.h). */

static size_t round_size(size_t n) {
  if (n < 512) return 512;
  if (n < ((size_t)1 << 20)) return (n + 511) & ~(size_t)511;
  return (n + ((size_t)1 << 20) - 1) & ~(((size_t)1 << 20) - 1);
}

void mcu_trim(void) {
  if (mcu.state <= 0) return;
  if (mcu.capturing) { cap_break("the cache was given back"); return; }
  const char *e = getenv("MLS_CUDA_STATS");
  if (e && *e && *e != '0')
    fprintf(stderr, "cuda: %llu launches, %llu waits, %llu prefetches, %llu cudaMallocManaged, %llu reused blocks, "
            "%llu uploads, %llu downloads, %llu graphs captured, %llu graph launches, %.1f MiB cached\n",
            mcu.st.launches, mcu.st.waits, mcu.st.prefetches, mcu.st.mallocs, mcu.st.reuses, mcu.st.uploads,
            mcu.st.downloads, mcu.st.captures, mcu.st.replays, (double)mcu.in_cache / 1048576.0);
  cudaStreamSynchronize(mcu.stream);
  mcu.busy = false;
  for (auto &c : mcu.cached) { mcu.blocks.erase(c.second); cudaFree(c.second); }
  mcu.cached.clear();
  mcu.in_cache = 0;
}

static double *handed_out(double *p);
static double *capture_spare(size_t sz);

double *mcu_alloc(size_t nbytes) {
  size_t sz = round_size(nbytes);
  if (mcu.capturing) {
    if (double *p = capture_spare(sz)) return p;
  }
  auto it = mcu.cached.find(sz);
  if (it != mcu.cached.end()) {
    double *p = it->second;
    mcu.cached.erase(it);
    mcu.st.reuses++;
    mcu.in_cache -= sz;
    mcu.in_use += sz;
    return handed_out(p);
  }
  size_t freeb = 0, total = 0;
  cudaMemGetInfo(&freeb, &total);
  size_t reserve = (size_t)1 << 30;           /* the context, cuBLAS and NVRTC's modules */
  /* managed pages take device memory when first touched, so count what we handed out */
  if (sz + mcu.in_use + mcu.in_cache + reserve > total) mcu_trim();
  if (mcu.capturing && sz + mcu.in_use + mcu.in_cache + reserve > total) return NULL; /* (the capture is broken) */
  if (sz + mcu.in_use + reserve > total) {
    mcu_fail("out of GPU memory");
    return NULL;
  }
  double *p = NULL;
  if (cudaMallocManaged((void **)&p, sz, cudaMemAttachGlobal) != cudaSuccess) {
    cudaGetLastError();
    mcu_trim();
    if (cudaMallocManaged((void **)&p, sz, cudaMemAttachGlobal) != cudaSuccess) {
      cudaGetLastError();
      mcu_fail("out of GPU memory");
      return NULL;
    }
  }
  mcu.blocks[p] = Block{ sz, false, false, NULL };
  mcu.st.mallocs++;
  mcu.in_use += sz;
  return handed_out(p);
}

void mcu_free(double *p) {
  if (!p) return;
  auto b = mcu.blocks.find(p);
  if (b == mcu.blocks.end()) return;
  mcu.in_use -= b->second.size;
  b->second.alive = false;
  if (b->second.owner) { capture_keep(b->second.owner, p); return; }   /* a replay's buffer */
  mcu.in_cache += b->second.size;
  mcu.cached.emplace(b->second.size, p);      /* stream order keeps pending kernels safe */
  if (mcu.in_cache > ((size_t)8 << 30)) mcu_trim();
}

size_t mcu_bytes_in_use(void) { return mcu.in_use; }
double *mcu_scratch_ptr(void) { return mcu.scratch; }
size_t mcu_bytes_cached(void) { return mcu.in_cache; }

int mcu_sync(void) {
  if (mcu.capturing) { cap_break("the host waited for the device"); return 0; }
  if (mcu.state <= 0 || !mcu.busy) return 0;
  mcu.busy = false;
  mcu.st.waits++;
  return cuda_check(cudaStreamSynchronize(mcu.stream), "a kernel");
}

int mcu_host_access(const double *p) {
  int rc = mcu_sync();
  auto b = mcu.blocks.find(p);
  if (b != mcu.blocks.end()) b->second.host = true;
  return rc;
}

int mcu_device_access(const double *p) {
  if (!p) return 0;
  auto b = mcu.blocks.find(p);
  if (b == mcu.blocks.end() || !b->second.host) return 0;
  b->second.host = false;
  if (!mcu.concurrent_managed) return 0;       /* pages migrate on fault instead */
  if (mcu.capturing) { cap_break("a buffer the host had touched"); return 0; }
  cudaMemLocation loc;
  memset(&loc, 0, sizeof loc);
  loc.type = cudaMemLocationTypeDevice;
  loc.id = mcu.device;
  mcu.busy = true;
  mcu.st.prefetches++;
  return cuda_check(cudaMemPrefetchAsync(p, b->second.size, loc, 0, mcu.stream), "cudaMemPrefetchAsync");
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

int mcu_upload(double *dst, const double *src, size_t nbytes) {
  if (nbytes == 0) return 0;
  if (mcu.capturing) { cap_break("a copy from host memory"); return 0; }
  mcu.busy = true;
  mcu.st.uploads++;
  return cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyHostToDevice, mcu.stream), "an upload");
}

int mcu_download(double *dst, const double *src, size_t nbytes) {
  if (nbytes == 0) return 0;
  if (mcu.capturing) { cap_break("a copy to host memory"); return 0; }
  if (cuda_check(cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToHost, mcu.stream), "a download")) return 1;
  mcu.st.downloads++;
  mcu.busy = true;
  return mcu_sync();
}

/* ---- cuBLAS ----
** cuBLAS is column-major: a row-major m x n matrix with leading dimension ld is its n x m
** transpose there. So C^T = op(B)^T op(A)^T: call with the operands swapped. */
int mcu_gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const double *A, int64_t lda,
             const double *B, int64_t ldb, double beta, double *C, int64_t ldc) {
  if (m == 0 || n == 0) return 0;
  if (!mcu.blas) {                           /* started on the first product: most runs need none */
    if (mcu.capturing) { cap_break("cuBLAS started"); return 0; }
    if (cublasCreate(&mcu.blas) != CUBLAS_STATUS_SUCCESS) return mcu_fail("cuBLAS could not start");
    cublasSetStream(mcu.blas, mcu.stream);
    /* a workspace of our own (NVIDIA's advice for Hopper: 32 MiB), so that a captured product
    ** never asks cuBLAS to allocate */
    void *ws = NULL;
    if (cudaMalloc(&ws, (size_t)32 << 20) == cudaSuccess) cublasSetWorkspace(mcu.blas, ws, (size_t)32 << 20);
    else cudaGetLastError();
  }
  if (m > INT32_MAX || n > INT32_MAX || k > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX || ldc > INT32_MAX)
    return mcu_fail("matrix too large for cuBLAS");
  if (k == 0) {                              /* C = beta C; cuBLAS would too, spelled out */
    if (beta == 0) return cuda_check(cudaMemsetAsync(C, 0, (size_t)(m * ldc) * sizeof(double), mcu.stream), "memset");
  }
  mcu.busy = true;
  cublasStatus_t s = cublasDgemm(mcu.blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, (int)n,
                                 (int)m, (int)k, &alpha, B, (int)(ldb > 0 ? ldb : 1), A, (int)(lda > 0 ? lda : 1),
                                 &beta, C, (int)(ldc > 0 ? ldc : 1));
  if (s != CUBLAS_STATUS_SUCCESS) return mcu_fail("cuBLAS dgemm failed (status %d)", (int)s);
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

static void cap_break(const char *why) {
  if (!mcu.capturing || mcu.capturing->broken) return;
  mcu.capturing->broken = true;
  snprintf(mcu.capturing->why, sizeof mcu.capturing->why, "%s", why);
}

static void capture_keep(Capture *c, double *p) {
  if (c == mcu.capturing) c->spare.push_back(p);
}

static double *handed_out(double *p) {
  Block &b = mcu.blocks[p];
  b.alive = true;
  if (mcu.capturing) {
    b.owner = mcu.capturing;
    mcu.capturing->owned.push_back(p);
  }
  return p;
}

static double *capture_spare(size_t sz) {
  std::vector<double *> &sp = mcu.capturing->spare;
  for (size_t i = 0; i < sp.size(); i++) {
    Block &b = mcu.blocks[sp[i]];
    if (b.size != sz) continue;
    double *p = sp[i];
    sp.erase(sp.begin() + (long)i);
    b.alive = true;
    mcu.in_use += sz;
    return p;
  }
  return NULL;
}

bool mcu_capturing(void) { return mcu.capturing != NULL; }

int mcu_capture_refuse(const char *what) {
  if (!mcu.capturing) return 0;
  cap_break(what);
  return mcu_fail("%s cannot be captured in a CUDA graph", what);
}

int mcu_capture_begin(void) {
  if (mcu.state <= 0) return mcu_fail("no CUDA device");
  if (mcu.capturing) return mcu_fail("a capture is already in progress");
  if (mcu_sync()) return 1;                  /* nothing in flight: a broken capture's host reads are safe */
  Capture *c = new Capture();
  cudaError_t e = cudaStreamBeginCapture(mcu.stream, cudaStreamCaptureModeRelaxed);
  if (e != cudaSuccess) { delete c; return cuda_check(e, "cudaStreamBeginCapture"); }
  mcu.capturing = c;
  return 0;
}

/* Gives a capture's blocks back: free ones to the cache, live ones (results still held) to
** their tensors, which free them as any other block. */
static void capture_release(Capture *c) {
  for (double *p : c->owned) {
    auto b = mcu.blocks.find(p);
    if (b == mcu.blocks.end() || b->second.owner != c) continue;
    b->second.owner = NULL;
    if (!b->second.alive) {
      mcu.in_cache += b->second.size;
      mcu.cached.emplace(b->second.size, p);
    }
  }
  delete c;
}

void *mcu_capture_end(char *why, size_t nwhy) {
  Capture *c = mcu.capturing;
  if (!c) return NULL;
  mcu.capturing = NULL;
  cudaGraph_t g = NULL;
  cudaError_t e = cudaStreamEndCapture(mcu.stream, &g);
  if (e == cudaSuccess && !c->broken && g) e = cudaGraphInstantiate(&c->exec, g, 0);
  else if (e == cudaSuccess && !c->broken) e = cudaErrorStreamCaptureInvalidated;
  if (g) cudaGraphDestroy(g);
  if (c->broken || e != cudaSuccess) {
    if (!c->broken) snprintf(c->why, sizeof c->why, "%s", cudaGetErrorString(e));
    cudaGetLastError();
    snprintf(why, nwhy, "%s", c->why);
    capture_release(c);
    return NULL;
  }
  mcu.st.captures++;
  return c;
}

int mcu_replay(void *r) {
  Capture *c = (Capture *)r;
  mcu.busy = true;
  mcu.st.replays++;
  return cuda_check(cudaGraphLaunch(c->exec, mcu.stream), "cudaGraphLaunch");
}

void mcu_replay_free(void *r) {
  Capture *c = (Capture *)r;
  if (!c) return;
  cudaStreamSynchronize(mcu.stream);          /* a replay may still be running */
  mcu.busy = false;
  cudaGraphExecDestroy(c->exec);
  capture_release(c);
}
