/*
** backend.h — the device interface (ggml-backend-impl.h model): a struct of function pointers
** per device, one static const instance each. Every entry returns a status (0 = ok) and never
** throws; the caller (ops.c) turns a failure into a located error. NULL entries are optional.
*/
#ifndef MLS_BACKEND_H
#define MLS_BACKEND_H

#include <signal.h>
#include <stddef.h>
#include "ops/table.h"
#include "tensor.h"

/* How an operand of an elementwise binary op is broadcast (LANGUAGE.md §5). */
typedef enum BcastMode { BC_FULL, BC_SCALAR, BC_ROW, BC_COL } BcastMode;

/* The geometry of an OPF_NN op (conv2d, pooling): N images of C channels of H x W, F filters
** (pools: F = C) of R x S, strides, zero padding, and the output P x Q per channel. */
typedef struct NnParams {
  int64_t N, C, H, W, F, R, S, sh, sw, ph, pw, P, Q;
} NnParams;

typedef struct OpParams {
  BcastMode bc[2];        /* per operand of a binary op */
  double scalar[2];       /* the operand's value when its Tensor* is NULL (a number) */
  bool trans[2];          /* OP_MATMUL: use the operand transposed */
  const NnParams *nn;     /* OPF_NN ops (conv2d, pooling); bias ops: NULL */
} OpParams;

/* A fusion group of a staged graph (staging/optimize.c) as a small register program: each
** instruction computes r[dst] = op(r[a]) or op(r[a], r[b]) elementwise; registers 0..nin-1
** hold the inputs, broadcast to rows x cols as bc[] says (a number: scalar[k], in[k] NULL).
** With red == OP_SUM the last register is summed to one number (out is 1x1), in a fixed
** blocking so the result does not depend on the thread count. One pass over memory, no
** temporaries: a backend runs it blockwise (CPU) or as one generated kernel (CUDA). */
typedef struct FusedIns { uint16_t op; int16_t a, b, dst; } FusedIns;
/* A fusion group may end in a row aggregate (rowSums, rowMaxs, rowMins) when its rows have
** FUSED_ROW_MIN to FUSED_ROW_MAX columns (the CPU's row buffer; narrower rows gain nothing). */
enum { FUSED_ROW_MIN = 8, FUSED_ROW_MAX = 4096 };
/* The row ends that keep the row's shape (softmax and log-softmax over each row). */
static inline bool fused_row_map(OpKind red) { return red == OP_SOFTMAX || red == OP_LOGSOFTMAX; }

typedef struct FusedProg {
  int32_t nins, nregs, nin;
  FusedIns *ins;
  OpKind red;               /* OP_NONE, OP_SUM, or a row aggregate: OP_ROWSUMS, OP_ROWMAXS, OP_ROWMINS
                            ** (out rows x 1), or a row map: OP_SOFTMAX, OP_LOGSOFTMAX (out rows x cols) */
  int64_t rows, cols;
  BcastMode *bc;            /* per input */
  /* The GEMM epilogue (staging/optimize.c `epilogue_input`): when mm is set, register 0 is the
  ** product op(A) op(B) (rows x cols, BC_FULL), run just before the program by the ordinary
  ** product path; the node's inputs are then A, B and registers 1..nin-1. graph.c runs the
  ** product and hands a backend the program with the product as in[0], on the CPU as out too
  ** (the epilogue overwrites the product in place): backends never run the GEMM themselves. */
  bool mm, mm_ta, mm_tb;
} FusedProg;

typedef struct Backend {
  const char *name;
  /* Returns nbytes of device memory, or NULL. */
  double *(*alloc)(size_t nbytes);
  void (*free)(double *p, size_t nbytes);
  /* host <-> device copies (optional for the CPU) */
  int (*upload)(double *dst, const double *src, size_t nbytes);
  int (*download)(double *dst, const double *src, size_t nbytes);
  /* Can run(op, ...) handle these inputs? */
  bool (*supports_op)(OpKind op);
  /* out = op(in...): out is allocated with the right shape, inputs are contiguous or NULL
  ** (a number in p->scalar). Returns 0 or an error status. */
  int (*run)(OpKind op, Tensor *out, Tensor *const in[], const OpParams *p);
  /* C = alpha * op(A) op(B) + beta * C, row-major; op(X) is X, or X transposed when its flag
  ** is set. A and B have unit column stride with rows stride[0] apart (the leading dimension;
  ** a transposed view reaches here as the matrix underneath plus the flag); C is packed. */
  int (*gemm)(bool ta, bool tb, double alpha, const Tensor *A, const Tensor *B, double beta, Tensor *C);
  void (*sync)(void);
  /* Threads to use (optional). */
  void (*set_threads)(int n);
  /* Gives cached free memory back (optional). */
  void (*trim)(void);
  /* Runs a fusion group (optional: without it graph_run runs the group's ops one by one). */
  int (*run_fused)(const FusedProg *prog, Tensor *out, Tensor *const in[], const double *scalar);
  /* What it runs on, for `mls --version` (e.g. the BLAS library and its build). */
  const char *(*describe)(void);
  /* ---- devices with their own memory (CUDA); NULL on the CPU ----
  ** Data is managed memory the host can address: before host code reads or writes a
  ** storage (tensor_data), host_access(base) waits for the device's queued work. */
  int (*host_access)(const double *base);
  /* out = in, on the device, each read and written through its own strides: a packed copy of
  ** a transposed view or a block, a block of out written (left indexing), or one value filled
  ** in (in with strides 0, 0). The shape is in's. */
  int (*copy2d)(Tensor *out, const Tensor *in);
  /* 0 when the device is usable (called once, before anything else); else error() says why. */
  int (*init)(void);
  const char *(*error)(void);
  /* The interrupt flag (Ctrl-C, NULL: none) that long kernels poll: once it is set they stop
  ** early, leaving their output unfinished, and the caller raises the interrupt (optional). */
  void (*set_stop)(const volatile sig_atomic_t *flag);
  /* Dense LU on the device, for solve, inv and det (optional; NULL: LAPACK on the host).
  ** getrf factors the n x n column-major a (this device's memory) in place as LAPACK's dgetrf
  ** does: ipiv (host, n) gets the 1-based pivots, *info LAPACK's info (> 0: U[info, info]
  ** is exactly zero). getrs then overwrites the n x k column-major b by the solution. */
  int (*getrf)(double *a, int64_t n, int32_t *ipiv, int64_t *info);
  int (*getrs)(const double *lu, int64_t n, const int32_t *ipiv, double *b, int64_t k);
  /* out[i, j] = in[r[i], c[j]] on the device (X[v, w]): r and c are packed vectors of 0-based
  ** positions (as doubles) in this device's memory, one per row and per column of out; NULL
  ** for r0 + i (c0 + j). in is read through its strides (optional). */
  int (*gather)(Tensor *out, const Tensor *in, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0);
  /* out[r[i], c[j]] = in[i, j] (X[v, w] = Y; in's shape, read through its strides, 0 strides
  ** for one value), the positions as for gather and distinct (optional). */
  int (*scatter)(Tensor *out, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0, const Tensor *in);
  /* ---- captured launches (CUDA graphs; optional) ----
  ** capture_begin: from now on the device records the work it is given instead of running it.
  ** capture_end stops and returns a replay of what was recorded, or NULL (why says why, in at
  ** most nwhy bytes) when something needed the host meanwhile (a wait, a copy from or to host
  ** memory): then nothing ran, and the caller runs the work again uncaptured. The recording
  ** keeps the addresses it saw, so memory allocated while capturing belongs to the replay until
  ** replay_free: when its tensor frees it, it is kept for the replay, never handed out again.
  ** replay queues one run of the recording. */
  int (*capture_begin)(void);
  void *(*capture_end)(char *why, size_t nwhy);
  int (*replay)(void *r);
  void (*replay_free)(void *r);
  /* ---- the allreduce of device matrices (src/mpi/mpi.c, docs/mpi.md "GPU buffers"; optional) ----
  ** pinned_alloc: nbytes of page-locked host memory, which copies to and from the device reach
  ** at full speed without a bounce buffer (the staging buffer when MPI cannot take device
  ** pointers), or NULL; pinned_free gives it back. */
  double *(*pinned_alloc)(size_t nbytes);
  void (*pinned_free)(double *p, size_t nbytes);
  /* acc[i] = lo (+) hi over n doubles in this device's memory, for the allreduce's reduction
  ** op (0 sum, 1 max, 2 min: MPI_RED_SUM, _MAX, _MIN of state.h): lo is acc and hi other when
  ** acc_lower, else the other way round. Sum: lo + hi; max: lo when lo is NaN, else hi when
  ** hi > lo or hi is NaN, else lo (min: the same with <), the host's formula bit for bit.
  ** Finished when it returns (MPI reads acc next). */
  int (*combine)(int op, double *acc, const double *other, int64_t n, bool acc_lower);
} Backend;

extern const Backend be_cpu;

/* registry.c: device lookup by name ("cpu"; "gpu" or "cuda" in a CUDA build, loaded on first
** use). be_find returns NULL when the device is not there, and be_why() then says why ("no
** CUDA device available"). The backend new matrices are made on is the interpreter's
** (Interp.device: --device, device()), handed to be_place. */
const Backend *be_find(const char *name);
const char *be_why(void);
/* Where an op's result lives: the backend all its matrix inputs (NULL entries: numbers) share,
** dflt (the interpreter's device) when it has none, the CPU when they are mixed (data moves to
** the host). */
const Backend *be_place(const Backend *dflt, Tensor *const in[], int nin);
/* Who runs op into out: out's backend when it has the kernel and all inputs are there, else
** the CPU (through host_access; counted in *fallbacks: the interpreter's be_fallbacks). */
const Backend *be_runner(int op, const Tensor *out, Tensor *const in[], int nin, uint64_t *fallbacks);
/* Waits for every device's queued work (time() calls it, so timings include the GPU's). */
void be_sync_all(void);
/* Gives every backend's cached memory back (interp_free). */
void be_trim_all(void);

#endif
