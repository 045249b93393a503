/*
** cuda_impl.h — what the CUDA translation units share (never included by C files): the
** stream every kernel runs on, the reduction scratch, launch checking and failure text.
*/
#ifndef MLS_CUDA_IMPL_H
#define MLS_CUDA_IMPL_H

#include <cuda_runtime.h>
#include "cuda.h"

/* The op codes of ops.def, as ops.h numbers them (ops.h itself is C, not for nvcc). */
enum {
#define OP(name, sym, arity, flags) OP_##name,
#include "ops/ops.def"
#undef OP
  OP_COUNT
};

extern cudaStream_t mcu_stream;
extern double *mcu_scratch;                   /* MCU_SCRATCH doubles of device memory */
#define MCU_SCRATCH 4096

/* Records a failure (printf-style) for mcu_error(); returns 1 (the failing status). */
int mcu_fail(const char *fmt, ...);
/* After a launch: 0, or 1 with the CUDA error recorded. Marks the stream as busy. */
int mcu_launched(const char *kernel);

#define MCU_THREADS 256
/* Blocks for a grid-stride loop over n items (capped: the loop covers the rest). */
static inline unsigned mcu_blocks(int64_t n, int threads) {
  int64_t b = (n + threads - 1) / threads;
  if (b > (1 << 20)) b = 1 << 20;
  return (unsigned)(b < 1 ? 1 : b);
}

#endif
