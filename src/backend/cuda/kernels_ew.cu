/*
** kernels_ew.cu — elementwise kernels: binary ops with the four broadcast modes, unary
** ops, strided copies (transposes) and ifelse. The formulas are backend/scalar.h's, the
** same source the CPU kernels inline, compiled here for the device: the two backends
** cannot disagree on a formula, only on the last bit of a libm call.
*/
#include <stdint.h>
#include "cuda_impl.h"
#include "backend/scalar.h"

__device__ static inline double load(const double *p, int bc, double s, int64_t k, int64_t cols) {
  if (!p) return s;
  switch (bc) {
  case 0: return p[k];                       /* BC_FULL */
  case 1: return p[0];                       /* BC_SCALAR */
  case 2: return p[k % cols];                /* BC_ROW: one row, repeated down */
  default: return p[k / cols];               /* BC_COL: one column, repeated across */
  }
}

/* The common shapes get their own loops (no per-element switch on the broadcast mode), two
** elements per thread through 16-byte loads when the pointers allow it: a memory-bound kernel
** needs bytes in flight. The odd last element goes to thread 0. */
#define GRID_LOOP(k, n) for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < (n); k += (int64_t)gridDim.x * blockDim.x)

template <int OP>
__global__ void k_binary_full(double *o, const double *a, const double *b, int64_t n) {
  GRID_LOOP(k, n) o[k] = sc_binary(OP, a[k], b[k]);
}

template <int OP>
__global__ void k_binary_full2(double2 *o, const double2 *a, const double2 *b, int64_t n2, double *ot, const double *at, const double *bt) {
  GRID_LOOP(k, n2) {
    double2 x = a[k], y = b[k];
    o[k] = make_double2(sc_binary(OP, x.x, y.x), sc_binary(OP, x.y, y.y));
  }
  if (ot && blockIdx.x == 0 && threadIdx.x == 0) *ot = sc_binary(OP, *at, *bt);
}

template <int OP>
__global__ void k_binary_scalar(double *o, const double *a, double y, int64_t n, bool swap) {
  GRID_LOOP(k, n) o[k] = swap ? sc_binary(OP, y, a[k]) : sc_binary(OP, a[k], y);
}

template <int OP>
__global__ void k_binary_scalar2(double2 *o, const double2 *a, double y, int64_t n2, bool swap, double *ot, const double *at) {
  GRID_LOOP(k, n2) {
    double2 x = a[k];
    o[k] = swap ? make_double2(sc_binary(OP, y, x.x), sc_binary(OP, y, x.y))
                : make_double2(sc_binary(OP, x.x, y), sc_binary(OP, x.y, y));
  }
  if (ot && blockIdx.x == 0 && threadIdx.x == 0) *ot = swap ? sc_binary(OP, y, *at) : sc_binary(OP, *at, y);
}

__global__ void k_binary(int op, double *o, McuArg a, McuArg b, int64_t n, int64_t cols) {
  GRID_LOOP(k, n) o[k] = sc_binary(op, load(a.p, a.bc, a.s, k, cols), load(b.p, b.bc, b.s, k, cols));
}

static bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

template <int OP>
static void launch_fast(McuContext *cx, double *o, McuArg a, McuArg b, int64_t n) {
  int64_t n2 = n / 2;
  bool odd = n & 1;
  if (a.p && b.p && a.bc == 0 && b.bc == 0) {
    if (aligned16(o) && aligned16(a.p) && aligned16(b.p) && n2 > 0)
      k_binary_full2<OP><<<mcu_blocks(n2, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(
          (double2 *)o, (const double2 *)a.p, (const double2 *)b.p, n2, odd ? o + n - 1 : NULL, a.p + n - 1, b.p + n - 1);
    else
      k_binary_full<OP><<<mcu_blocks(n, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(o, a.p, b.p, n);
    return;
  }
  bool swap = !(a.p && a.bc == 0);
  const double *x = swap ? b.p : a.p;
  double y = swap ? a.s : b.s;
  if (aligned16(o) && aligned16(x) && n2 > 0)
    k_binary_scalar2<OP><<<mcu_blocks(n2, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(
        (double2 *)o, (const double2 *)x, y, n2, swap, odd ? o + n - 1 : NULL, x + n - 1);
  else
    k_binary_scalar<OP><<<mcu_blocks(n, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(o, x, y, n, swap);
}

/* The elementwise ops with a kernel, from ops.def: every binary row and the unary rows not
** marked HOST (QNORM, a bisection, runs on the CPU). */
int mcu_ew_arity(int op) {
  switch (op) {
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) MLS_WHERE_##WHERE(case OP_##NAME: return 1;)
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) case OP_##NAME: return 2;
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
  default:
    return 0;
  }
}

int mcu_binary(McuContext *cx, int op, double *out, McuArg a, McuArg b, int64_t rows, int64_t cols) {
  int64_t n = rows * cols;
  if (n == 0) return 0;
  /* a scalar operand held in a 1-element buffer: read it through the pointer (no sync) */
  bool simple = (a.bc == 0 || a.bc == 1) && (b.bc == 0 || b.bc == 1) && !(a.p && a.bc == 1) && !(b.p && b.bc == 1);
  if (simple) {
    switch (op) {                            /* one instantiation per op: the switch folds away */
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND)
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) \
    case OP_##NAME: launch_fast<OP_##NAME>(cx, out, a, b, n); return mcu_launched(cx, "binary");
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
    default: break;
    }
  }
  k_binary<<<mcu_blocks(n, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(op, out, a, b, n, cols);
  return mcu_launched(cx, "binary");
}

template <int OP>
__global__ void k_unary(double *o, const double *x, int64_t n) {
  GRID_LOOP(k, n) o[k] = sc_unary(OP, x[k]);
}

template <int OP>
__global__ void k_unary2(double2 *o, const double2 *x, int64_t n2, double *ot, const double *xt) {
  GRID_LOOP(k, n2) {
    double2 v = x[k];
    o[k] = make_double2(sc_unary(OP, v.x), sc_unary(OP, v.y));
  }
  if (ot && blockIdx.x == 0 && threadIdx.x == 0) *ot = sc_unary(OP, *xt);
}

template <int OP>
static void launch_unary(McuContext *cx, double *o, const double *x, int64_t n) {
  int64_t n2 = n / 2;
  if (aligned16(o) && aligned16(x) && n2 > 0)
    k_unary2<OP><<<mcu_blocks(n2, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>((double2 *)o, (const double2 *)x, n2,
                                                                            (n & 1) ? o + n - 1 : NULL, x + n - 1);
  else
    k_unary<OP><<<mcu_blocks(n, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(o, x, n);
}

int mcu_unary(McuContext *cx, int op, double *out, const double *x, int64_t n) {
  if (n == 0) return 0;
  switch (op) {                              /* one instantiation per op: the switch folds away */
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) \
  MLS_WHERE_##WHERE(case OP_##NAME: launch_unary<OP_##NAME>(cx, out, x, n); break;)
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y)
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
  default: return mcu_fail(cx, "no CUDA kernel for op %d", op);
  }
  return mcu_launched(cx, "unary");
}

/* A transpose through shared memory: 32x32 tiles, both sides coalesced. */
__global__ void k_transpose(double *o, int64_t o0, const double *in, int64_t rows, int64_t cols, int64_t s1) {
  __shared__ double tile[32][33];
  int64_t j0 = (int64_t)blockIdx.x * 32, i0 = (int64_t)blockIdx.y * 32;
  for (int d = threadIdx.y; d < 32; d += blockDim.y) {       /* read along in's rows: i varies slowest in o */
    int64_t i = i0 + threadIdx.x, j = j0 + d;                /* element (i, j) of o is in[j * s1 + i] */
    if (i < rows && j < cols) tile[d][threadIdx.x] = in[j * s1 + i];
  }
  __syncthreads();
  for (int d = threadIdx.y; d < 32; d += blockDim.y) {
    int64_t i = i0 + d, j = j0 + threadIdx.x;
    if (i < rows && j < cols) o[i * o0 + j] = tile[threadIdx.x][d];
  }
}

__global__ void k_copy2d(double *o, int64_t o0, int64_t o1, const double *in, int64_t n, int64_t cols, int64_t s0,
                         int64_t s1) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = k / cols, j = k % cols;
    o[i * o0 + j * o1] = in[i * s0 + j * s1];
  }
}

int mcu_copy2d(McuContext *cx, double *out, int64_t o0, int64_t o1, const double *in, int64_t rows, int64_t cols, int64_t s0, int64_t s1) {
  int64_t n = rows * cols;
  if (n == 0) return 0;
  if (s0 == 1 && s1 != 0 && o1 == 1 && rows > 1 && cols > 1 && (cols + 31) / 32 < 65536 * 1024 && (rows + 31) / 32 < 65536) {
    dim3 grid((unsigned)((cols + 31) / 32), (unsigned)((rows + 31) / 32)), block(32, 8);
    k_transpose<<<grid, block, 0, cx->stream>>>(out, o0, in, rows, cols, s1);
  } else {
    k_copy2d<<<mcu_blocks(n, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(out, o0, o1, in, n, cols, s0, s1);
  }
  return mcu_launched(cx, "copy");
}

/* The allreduce's combine (mcu_combine): the host's formula of src/mpi/mpi.c red_combine. */
__global__ void k_combine(int op, double *acc, const double *other, int64_t n, bool acc_lower) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
    double l = acc_lower ? acc[i] : other[i], u = acc_lower ? other[i] : acc[i];
    if (op == 0) acc[i] = __dadd_rn(l, u);
    else if (op == 1) acc[i] = l != l ? l : (u > l || u != u) ? u : l;
    else acc[i] = l != l ? l : (u < l || u != u) ? u : l;
  }
}

int mcu_combine(McuContext *cx, int op, double *acc, const double *other, int64_t n, bool acc_lower) {
  if (n == 0) return 0;
  if (mcu_device_access(cx, acc) || mcu_device_access(cx, other)) return 1;
  k_combine<<<mcu_blocks(n, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(op, acc, other, n, acc_lower);
  if (mcu_launched(cx, "allreduce combine")) return 1;
  return mcu_sync(cx);
}

__global__ void k_gather(double *o, const double *in, int64_t s0, int64_t s1, const double *r, int64_t r0,
                         const double *c, int64_t c0, int64_t n, int64_t cols) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = k / cols, j = k % cols;
    int64_t ri = r ? (int64_t)r[i] : r0 + i, cj = c ? (int64_t)c[j] : c0 + j;
    o[k] = in[ri * s0 + cj * s1];
  }
}

int mcu_gather(McuContext *cx, double *out, const double *in, int64_t s0, int64_t s1, const double *r, int64_t r0, const double *c,
               int64_t c0, int64_t rows, int64_t cols) {
  int64_t n = rows * cols;
  if (n == 0) return 0;
  k_gather<<<mcu_blocks(n, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(out, in, s0, s1, r, r0, c, c0, n, cols);
  return mcu_launched(cx, "gather");
}

__global__ void k_scatter(double *o, int64_t o0, int64_t o1, const double *r, int64_t r0, const double *c, int64_t c0,
                          const double *in, int64_t s0, int64_t s1, int64_t n, int64_t cols) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = k / cols, j = k % cols;
    int64_t ri = r ? (int64_t)r[i] : r0 + i, cj = c ? (int64_t)c[j] : c0 + j;
    o[ri * o0 + cj * o1] = in[i * s0 + j * s1];
  }
}

int mcu_scatter(McuContext *cx, double *out, int64_t o0, int64_t o1, const double *r, int64_t r0, const double *c, int64_t c0,
                const double *in, int64_t s0, int64_t s1, int64_t rows, int64_t cols) {
  int64_t n = rows * cols;
  if (n == 0) return 0;
  k_scatter<<<mcu_blocks(n, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(out, o0, o1, r, r0, c, c0, in, s0, s1, n, cols);
  return mcu_launched(cx, "scatter");
}

__global__ void k_ifelse(double *o, const double *t, int64_t st, const double *y, int64_t sy, const double *f,
                         int64_t sf, int64_t n) {
  for (int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; k < n; k += (int64_t)gridDim.x * blockDim.x) {
    double c = t[k * st];
    o[k] = c != c ? NAN : c != 0 ? y[k * sy] : f[k * sf];
  }
}

int mcu_ifelse(McuContext *cx, double *out, const double *t, bool t1, const double *y, bool y1, const double *f, bool f1, int64_t n) {
  if (n == 0) return 0;
  k_ifelse<<<mcu_blocks(n, MCU_THREADS), MCU_THREADS, 0, cx->stream>>>(out, t, !t1, y, !y1, f, !f1, n);
  return mcu_launched(cx, "ifelse");
}
