/*
** kernels_red.cu — the reduction family on the device: whole-matrix, row and column
** reductions, row indices of extremes, scans, row-wise softmax and diag. Every kernel's
** blocking depends only on the shape, and partial results are combined in a fixed tree, so
** the same input gives the same bits on every run (no atomics). NaN rules are the CPU's:
** max/min propagate a NaN, an index of a row holding a NaN is NaN, ties go to the last.
*/
#include <math.h>
#include "cuda_impl.h"

/* ---- combining rules ---- */
struct Sum { __device__ static double id() { return 0.0; } __device__ static double f(double a, double b) { return a + b; } };
struct Prod { __device__ static double id() { return 1.0; } __device__ static double f(double a, double b) { return a * b; } };
struct Max {
  __device__ static double id() { return -INFINITY; }
  __device__ static double f(double m, double x) { return x > m || x != x ? x : m; }   /* NaN wins */
};
struct Min {
  __device__ static double id() { return INFINITY; }
  __device__ static double f(double m, double x) { return x < m || x != x ? x : m; }
};

template <class R> __device__ static double warp_reduce(double v) {
  for (int o = 16; o > 0; o >>= 1) v = R::f(v, __shfl_down_sync(0xffffffffu, v, o));
  return v;                                   /* lane 0 holds the result */
}

/* A block of blockDim.x (a multiple of 32, at most 1024) threads reduces its values; thread 0
** gets the result. */
template <class R> __device__ static double block_reduce(double v) {
  __shared__ double part[32];
  int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
  v = warp_reduce<R>(v);
  if (lane == 0) part[w] = v;
  __syncthreads();
  int nw = blockDim.x >> 5;
  v = threadIdx.x < nw ? part[threadIdx.x] : R::id();
  if (w == 0) v = warp_reduce<R>(v);
  __syncthreads();
  return v;
}

/* ---- all elements: per-block partials into scratch, then one block over them ---- */
template <class R> __global__ void k_all_partial(double *part, const double *x, int64_t n) {
  double v = R::id();
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x)
    v = R::f(v, x[k]);
  v = block_reduce<R>(v);
  if (threadIdx.x == 0) part[blockIdx.x] = v;
}

template <class R> __global__ void k_all_final(double *out, const double *part, int np) {
  double v = R::id();
  for (int k = threadIdx.x; k < np; k += blockDim.x) v = R::f(v, part[k]);
  v = block_reduce<R>(v);
  if (threadIdx.x == 0) out[0] = v;
}

template <class R> static int reduce_all(McuContext *cx, double *out, const double *x, int64_t n) {
  int64_t nb = (n + 4 * 256 - 1) / (4 * 256);            /* about 4 elements per thread */
  int np = (int)(nb < 1 ? 1 : nb > 1024 ? 1024 : nb);
  k_all_partial<R><<<np, 256, 0, cx->stream>>>(cx->scratch, x, n);
  k_all_final<R><<<1, 1024, 0, cx->stream>>>(out, cx->scratch, np);
  return mcu_launched(cx, "reduce");
}

int mcu_sum_partials(McuContext *cx, double *out, const double *part, int np) {
  k_all_final<Sum><<<1, 1024, 0, cx->stream>>>(out, part, np);
  return mcu_launched(cx, "fused sum");
}

/* ---- rows: a warp per row (narrow rows) or a block per row (wide ones) ---- */
template <class R> __global__ void k_rows_warp(double *out, const double *x, int64_t rows, int64_t cols) {
  int64_t i = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (i >= rows) return;
  const double *row = x + i * cols;
  double v = R::id();
  for (int64_t j = lane; j < cols; j += 32) v = R::f(v, row[j]);
  v = warp_reduce<R>(v);
  if (lane == 0) out[i] = v;
}

template <class R> __global__ void k_rows_block(double *out, const double *x, int64_t cols) {
  const double *row = x + blockIdx.x * cols;
  double v = R::id();
  for (int64_t j = threadIdx.x; j < cols; j += blockDim.x) v = R::f(v, row[j]);
  v = block_reduce<R>(v);
  if (threadIdx.x == 0) out[blockIdx.x] = v;
}

template <class R> static int reduce_rows(McuContext *cx, double *out, const double *x, int64_t rows, int64_t cols) {
  if (rows == 0) return 0;
  if (cols > 1024 && rows < (1 << 30)) k_rows_block<R><<<(unsigned)rows, 256, 0, cx->stream>>>(out, x, cols);
  else k_rows_warp<R><<<mcu_blocks(rows, 8), 256, 0, cx->stream>>>(out, x, rows, cols);
  return mcu_launched(cx, "row reduce");
}

/* ---- columns: a thread per column walks down it (coalesced across the threads) ---- */
template <class R> __global__ void k_cols(double *out, const double *x, int64_t rows, int64_t cols) {
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < cols; j += (int64_t)gridDim.x * blockDim.x) {
    double v = rows > 0 ? x[j] : R::id();
    for (int64_t i = 1; i < rows; i++) v = R::f(v, x[i * cols + j]);
    out[j] = v;
  }
}

template <class R> static int reduce_cols(McuContext *cx, double *out, const double *x, int64_t rows, int64_t cols) {
  if (cols == 0) return 0;
  k_cols<R><<<mcu_blocks(cols, 128), 128, 0, cx->stream>>>(out, x, rows, cols);
  return mcu_launched(cx, "column reduce");
}

/* ---- the 1-based column of each row's max (min): ties to the last, NaN rows give NaN ---- */
__global__ void k_row_index(double *out, const double *x, int64_t rows, int64_t cols, bool is_max) {
  int64_t i = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (i >= rows) return;
  const double *row = x + i * cols;
  double m = is_max ? -INFINITY : INFINITY;
  int64_t k = -1;
  for (int64_t j = lane; j < cols; j += 32) {       /* NaN never compares: skipped, as SystemDS */
    double v = row[j];
    if (is_max ? v >= m : v <= m) { m = v; k = j; }
  }
  for (int o = 16; o > 0; o >>= 1) {
    double m2 = __shfl_down_sync(0xffffffffu, m, o);
    long long k2 = __shfl_down_sync(0xffffffffu, (long long)k, o);
    bool better = k2 >= 0 && (k < 0 || (is_max ? m2 > m : m2 < m));
    if (better || (k2 >= 0 && m2 == m && k2 > k)) { m = m2; k = k2; }
  }
  if (lane == 0) out[i] = cols == 0 ? NAN : (double)((k < 0 ? 0 : k) + 1);   /* NaN only: 1 */
}

/* ---- scans down each column (a 1 x n row vector: along it) ----
** One step of cumsum, cumprod, cummax, cummin; a running extreme keeps a NaN once met (as the
** CPU's scan_ext, cpu_stats.c). */
__device__ static inline double scan_step(int op, double s, double x) {
  switch (op) {
  case OP_CUMSUM: return s + x;
  case OP_CUMPROD: return s * x;
  case OP_CUMMAX: return x > s || x != x ? x : s;
  default: return x < s || x != x ? x : s;
  }
}

__global__ void k_scan_cols(double *o, const double *a, int64_t rows, int64_t cols, int op) {
  for (int64_t j = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; j < cols; j += (int64_t)gridDim.x * blockDim.x) {
    double s = a[j];
    o[j] = s;
    for (int64_t i = 1; i < rows; i++) {
      s = scan_step(op, s, a[i * cols + j]);
      o[i * cols + j] = s;
    }
  }
}

__global__ void k_scan_row(double *o, const double *a, int64_t n, int op) {
  double s = a[0];
  o[0] = s;
  for (int64_t j = 1; j < n; j++) { s = scan_step(op, s, a[j]); o[j] = s; }
}

/* ---- row-wise softmax / log-softmax, a warp per row: max, exp, sum, scale ---- */
__global__ void k_softmax(double *o, const double *x, int64_t rows, int64_t cols, bool logp) {
  int64_t i = blockIdx.x * (int64_t)(blockDim.x >> 5) + (threadIdx.x >> 5);
  int lane = threadIdx.x & 31;
  if (i >= rows) return;
  const double *row = x + i * cols;
  double *orow = o + i * cols;
  double m = -INFINITY;
  for (int64_t j = lane; j < cols; j += 32) m = Max::f(m, row[j]);
  m = warp_reduce<Max>(m);
  m = __shfl_sync(0xffffffffu, m, 0);
  double s = 0;
  for (int64_t j = lane; j < cols; j += 32) {
    double e = exp(row[j] - m);
    if (!logp) orow[j] = e;
    s += e;
  }
  s = warp_reduce<Sum>(s);
  s = __shfl_sync(0xffffffffu, s, 0);
  if (logp) {
    double lse = m + log(s);
    for (int64_t j = lane; j < cols; j += 32) orow[j] = row[j] - lse;
  } else {
    for (int64_t j = lane; j < cols; j += 32) orow[j] /= s;
  }
}

/* ---- diag: the diagonal of a square matrix (n x 1), or a vector onto one (n x n) ---- */
__global__ void k_diag_get(double *o, const double *a, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
    o[i] = a[i * n + i];
}

__global__ void k_diag_put(double *o, const double *a, int64_t n) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n * n; k += (int64_t)gridDim.x * blockDim.x)
    o[k] = k / n == k % n ? a[k / n] : 0.0;
}

bool mcu_reduce_supported(int op) {
  switch (op) {
  case OP_SUM: case OP_PROD: case OP_MAX: case OP_MIN:
  case OP_ROWSUMS: case OP_ROWMAXS: case OP_ROWMINS: case OP_ROWPRODS:
  case OP_COLSUMS: case OP_COLMAXS: case OP_COLMINS: case OP_COLPRODS:
  case OP_ROWINDEXMAX: case OP_ROWINDEXMIN:
  case OP_CUMSUM: case OP_CUMPROD: case OP_CUMMAX: case OP_CUMMIN: case OP_SOFTMAX: case OP_LOGSOFTMAX: case OP_DIAG:
    return true;
  default:
    return false;
  }
}

int mcu_reduce(McuContext *cx, int op, double *out, const double *x, int64_t r, int64_t c, int64_t orows, int64_t ocols) {
  int64_t n = r * c;
  switch (op) {
  case OP_SUM: return reduce_all<Sum>(cx, out, x, n);
  case OP_PROD: return reduce_all<Prod>(cx, out, x, n);
  case OP_MAX: return reduce_all<Max>(cx, out, x, n);
  case OP_MIN: return reduce_all<Min>(cx, out, x, n);
  case OP_ROWSUMS: return reduce_rows<Sum>(cx, out, x, r, c);
  case OP_ROWPRODS: return reduce_rows<Prod>(cx, out, x, r, c);
  case OP_ROWMAXS: return reduce_rows<Max>(cx, out, x, r, c);
  case OP_ROWMINS: return reduce_rows<Min>(cx, out, x, r, c);
  case OP_COLSUMS: return reduce_cols<Sum>(cx, out, x, r, c);
  case OP_COLPRODS: return reduce_cols<Prod>(cx, out, x, r, c);
  case OP_COLMAXS: return reduce_cols<Max>(cx, out, x, r, c);
  case OP_COLMINS: return reduce_cols<Min>(cx, out, x, r, c);
  case OP_ROWINDEXMAX: case OP_ROWINDEXMIN:
    if (r == 0) return 0;
    k_row_index<<<mcu_blocks(r, 8), 256, 0, cx->stream>>>(out, x, r, c, op == OP_ROWINDEXMAX);
    return mcu_launched(cx, "rowIndexMax");
  case OP_CUMSUM: case OP_CUMPROD: case OP_CUMMAX: case OP_CUMMIN:
    if (n == 0) return 0;
    if (r == 1) k_scan_row<<<1, 1, 0, cx->stream>>>(out, x, c, op);
    else k_scan_cols<<<mcu_blocks(c, 128), 128, 0, cx->stream>>>(out, x, r, c, op);
    return mcu_launched(cx, "scan");
  case OP_SOFTMAX: case OP_LOGSOFTMAX:
    if (r == 0) return 0;
    k_softmax<<<mcu_blocks(r, 8), 256, 0, cx->stream>>>(out, x, r, c, op == OP_LOGSOFTMAX);
    return mcu_launched(cx, "softmax");
  case OP_DIAG:
    if (ocols == 1 && r == c) {
      if (r == 0) return 0;
      k_diag_get<<<mcu_blocks(r, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(out, x, r);
    } else {
      if (orows == 0) return 0;
      k_diag_put<<<mcu_blocks(orows * orows, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(out, x, orows);
    }
    return mcu_launched(cx, "diag");
  default:
    return mcu_fail(cx, "no CUDA kernel for op %d", op);
  }
}
