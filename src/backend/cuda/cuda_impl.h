/*
** cuda_impl.h — what the CUDA translation units share (never included by C files): the
** plugin's one context (the stream every kernel runs on, the reduction scratch, the device
** memory pool, the library handles: cuBLAS, cuSOLVER, cuSPARSE), launch checking and failure text.
*/
#ifndef MLS_CUDA_IMPL_H
#define MLS_CUDA_IMPL_H

#include <string>
#include <unordered_map>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cusolverDn.h>
#include <cusparse.h>
#include "cuda.h"

/* The op codes of ops.def, as ops.h numbers them (ops.h itself is C, not for nvcc). */
enum {
#define OP(name, sym, arity, flags) OP_##name,
#include "ops/ops.def"
#undef OP
  OP_COUNT
};

#define MCU_SCRATCH 4096

struct Capture;                               /* cuda.cu: a stream capture and its blocks */
/* A block of the device memory pool (cuda.cu): its rounded size, whether the host touched it
** last, whether a tensor holds it, and the capture it belongs to (or NULL). */
typedef struct Block { size_t size; bool host, alive; Capture *owner; } Block;

/* The state of one instance of the CUDA backend (backend.h's Backend.ctx: each interpreter
** makes its own, mcu_new, and every function of cuda.h takes it). Zero-initialized: the device
** untried, no handle started. */
struct McuContext {
  cudaStream_t stream;                        /* the stream every kernel is queued on */
  double *scratch;                            /* MCU_SCRATCH doubles of device memory */
  int state;                                  /* 0 untried, 1 ready, -1 unusable */
  int device;                                 /* the device used: 0, the first (nothing picks another) */
  bool concurrent_managed;                    /* the host may touch managed memory at any time */
  bool busy;                                  /* work was queued since the last wait */
  Capture *capturing;                         /* the stream capture in progress, or NULL */
  cublasHandle_t blas;                        /* started on the first product */
  void *blas_ws;                              /* its workspace */
  char errbuf[256];                           /* the last failure's text (mcu_error) */
  /* MLS_CUDA_STATS=1: counts printed when the interpreter ends (docs/gpu.md, reading them) */
  struct { unsigned long long launches, waits, prefetches, mallocs, reuses, uploads, downloads, captures, replays; } st;
  char descr[512];                            /* the device in words (mcu_describe) */
  /* the caching allocator (cuda.cu) */
  std::unordered_map<const void *, Block> blocks;    /* every block we own */
  std::unordered_multimap<size_t, double *> cached;  /* free blocks by size */
  size_t in_use, in_cache;
  /* fused.cu: the compiled fusion kernels by their source, and NVRTC's target architecture */
  std::unordered_map<std::string, cudaKernel_t> kernels;
  char arch[32];
  cusolverDnHandle_t solver;                  /* solver.cu: started on the first factorization */
  cusparseHandle_t sparse;                    /* sparse.cu: started on the first product with a sparse operand */
};

/* Records a failure (printf-style) for mcu_error(); returns 1 (the failing status). */
int mcu_fail(McuContext *cx, const char *fmt, ...);
/* After a launch: 0, or 1 with the CUDA error recorded. Marks the stream as busy. */
int mcu_launched(McuContext *cx, const char *kernel);

#define MCU_THREADS 256
/* Blocks for a grid-stride loop over n items (capped: the loop covers the rest). */
static inline unsigned mcu_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b > (1 << 20)) b = 1 << 20;
  return (unsigned)(b < 1 ? 1 : b);
}

#endif
