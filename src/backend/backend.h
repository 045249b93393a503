/*
** backend.h — the device interface (ggml-backend-impl.h model): a struct of function pointers
** per device, and an instance of it per interpreter (as ggml_backend_t): each backend has a
** const template (cpu.c's be_cpu, sim.c's be_sim, the CUDA plugin's be_cuda) that be_new
** copies into an instance with its own state (ctx: the CPU's buffer cache, panel size and
** thread pool; the simulated GPU's capture and counts; the CUDA context). Every entry takes
** its instance first. The interpreter owns its instances (BackendSet, Interp.backends), and a
** storage records the instance that allocated its data (Storage.be), holding it, so that a
** free goes back to that instance's cache even after the interpreter has gone (be_hold,
** be_drop). Every entry returns a status (0 = ok) and never throws; the caller (ops.c) turns a
** failure into a located error. NULL entries are optional.
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

/* The forms of a product with a sparse operand S (Backend.spmm): S %*% B, t(S) %*% B, B %*% S. */
enum { SPMM_SB, SPMM_TB, SPMM_BS };

typedef struct Backend Backend;
struct Backend {
  const char *name;
  /* Returns nbytes of device memory, or NULL. */
  double *(*alloc)(const Backend *be, size_t nbytes);
  void (*free)(const Backend *be, double *p, size_t nbytes);
  /* host <-> device copies (optional for the CPU) */
  int (*upload)(const Backend *be, double *dst, const double *src, size_t nbytes);
  int (*download)(const Backend *be, double *dst, const double *src, size_t nbytes);
  /* Can run(op, ...) handle these inputs? */
  bool (*supports_op)(const Backend *be, OpKind op);
  /* out = op(in...): out is allocated with the right shape, inputs are contiguous or NULL
  ** (a number in p->scalar). Returns 0 or an error status. */
  int (*run)(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p);
  /* C = alpha * op(A) op(B) + beta * C, row-major; op(X) is X, or X transposed when its flag
  ** is set. A and B have unit column stride with rows stride[0] apart (the leading dimension;
  ** a transposed view reaches here as the matrix underneath plus the flag); C is packed. */
  int (*gemm)(const Backend *be, bool ta, bool tb, double alpha, const Tensor *A, const Tensor *B, double beta, Tensor *C);
  void (*sync)(const Backend *be);
  /* Threads to use (optional). */
  void (*set_threads)(const Backend *be, int n);
  /* Gives cached free memory back (optional). */
  void (*trim)(const Backend *be);
  /* Runs a fusion group (optional: without it graph_run runs the group's ops one by one). */
  int (*run_fused)(const Backend *be, const FusedProg *prog, Tensor *out, Tensor *const in[], const double *scalar);
  /* What it runs on, for `mls --version` (e.g. the BLAS library and its build). */
  const char *(*describe)(const Backend *be);
  /* ---- devices with their own memory (CUDA); NULL on the CPU ----
  ** Data is managed memory the host can address: before host code reads or writes a
  ** storage (tensor_data), host_access(base) waits for the device's queued work. */
  int (*host_access)(const Backend *be, const double *base);
  /* out = in, on the device, each read and written through its own strides: a packed copy of
  ** a transposed view or a block, a block of out written (left indexing), or one value filled
  ** in (in with strides 0, 0). The shape is in's. */
  int (*copy2d)(const Backend *be, Tensor *out, const Tensor *in);
  /* 0 when the device is usable (called once, before anything else); else error() says why. */
  int (*init)(Backend *be);
  const char *(*error)(const Backend *be);
  /* The interrupt flag (Ctrl-C, NULL: none) that long kernels poll: once it is set they stop
  ** early, leaving their output unfinished, and the caller raises the interrupt (optional). */
  void (*set_stop)(const Backend *be, const volatile sig_atomic_t *flag);
  /* Dense LU on the device, for solve, inv and det (optional; NULL: LAPACK on the host).
  ** getrf factors the n x n column-major a (this device's memory) in place as LAPACK's dgetrf
  ** does: ipiv (host, n) gets the 1-based pivots, *info LAPACK's info (> 0: U[info, info]
  ** is exactly zero). getrs then overwrites the n x k column-major b by the solution. */
  int (*getrf)(const Backend *be, double *a, int64_t n, int32_t *ipiv, int64_t *info);
  int (*getrs)(const Backend *be, const double *lu, int64_t n, const int32_t *ipiv, double *b, int64_t k);
  /* out[i, j] = in[r[i], c[j]] on the device (X[v, w]): r and c are packed vectors of 0-based
  ** positions (as doubles) in this device's memory, one per row and per column of out; NULL
  ** for r0 + i (c0 + j). in is read through its strides (optional). */
  int (*gather)(const Backend *be, Tensor *out, const Tensor *in, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0);
  /* out[r[i], c[j]] = in[i, j] (X[v, w] = Y; in's shape, read through its strides, 0 strides
  ** for one value), the positions as for gather and distinct (optional). */
  int (*scatter)(const Backend *be, Tensor *out, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0, const Tensor *in);
  /* ---- captured launches (CUDA graphs; optional) ----
  ** capture_begin: from now on the device records the work it is given instead of running it.
  ** capture_end stops and returns a replay of what was recorded, or NULL (why says why, in at
  ** most nwhy bytes) when something needed the host meanwhile (a wait, a copy from or to host
  ** memory): then nothing ran, and the caller runs the work again uncaptured. The recording
  ** keeps the addresses it saw, so memory allocated while capturing belongs to the replay until
  ** replay_free: when its tensor frees it, it is kept for the replay, never handed out again.
  ** replay queues one run of the recording. */
  int (*capture_begin)(const Backend *be);
  void *(*capture_end)(const Backend *be, char *why, size_t nwhy);
  int (*replay)(const Backend *be, void *r);
  void (*replay_free)(const Backend *be, void *r);
  /* ---- the allreduce of device matrices (src/mpi/mpi.c, docs/mpi.md "GPU buffers"; optional) ----
  ** pinned_alloc: nbytes of page-locked host memory, which copies to and from the device reach
  ** at full speed without a bounce buffer (the staging buffer when MPI cannot take device
  ** pointers), or NULL; pinned_free gives it back. */
  double *(*pinned_alloc)(const Backend *be, size_t nbytes);
  void (*pinned_free)(const Backend *be, double *p, size_t nbytes);
  /* acc[i] = lo (+) hi over n doubles in this device's memory, for the allreduce's reduction
  ** op (0 sum, 1 max, 2 min: MPI_RED_SUM, _MAX, _MIN of state.h): lo is acc and hi other when
  ** acc_lower, else the other way round. Sum: lo + hi; max: lo when lo is NaN, else hi when
  ** hi > lo or hi is NaN, else lo (min: the same with <), the host's formula bit for bit.
  ** Finished when it returns (MPI reads acc next). */
  int (*combine)(const Backend *be, int op, double *acc, const double *other, int64_t n, bool acc_lower);
  /* ---- products with a sparse operand (docs/sparse.md "On the GPU"; optional: NULL, and such a
  ** product runs on the CPU) ----
  ** spmm: C = S %*% B (form SPMM_SB), t(S) %*% B (SPMM_TB) or B %*% S (SPMM_BS), S a CSR matrix
  ** in host memory (tensor.h's SpCsr, borrowed, unchanged), B a dense matrix of this device with
  ** unit column stride and rows stride[0] apart, C packed on this device with the product's
  ** shape, overwritten. *dev is this device's copy of S (its arrays uploaded): NULL on the first
  ** call, when spmm makes it and sets *dev (also when it then fails: NULL or a copy), and passed
  ** back by later calls for the same, unchanged S, which then upload nothing. The caller owns
  ** the copy: spmm_free gives it back (tensor.c, when S's storage is freed or changed). */
  int (*spmm)(const Backend *be, void **dev, const SpCsr *s, int form, const Tensor *B, Tensor *C);
  void (*spmm_free)(const Backend *be, void *dev);
  /* Frees the instance's state (ctx) when its last holder lets it go (be_drop; optional). */
  void (*destroy)(Backend *be);
  /* ---- the instance (not the interface): its state and its holders ---- */
  void *ctx;                  /* the backend's state: CpuCtx (cpu.c), SimDevice (sim.c), McuContext (CUDA) */
  int64_t refs;               /* be_hold/be_drop: the interpreter's hold, each storage's, a simulated GPU's */
};

/* The CPU backend's template (cpu.c): be_new(&be_cpu) makes an instance of it. */
extern const Backend be_cpu;

/* An instance of the template tmpl (+1: its holder calls be_drop): a copy of its entries, with
** the state its init entry makes (none: ctx NULL). NULL when init fails or there is no memory;
** then *why (if not NULL) says why (the template's error entry, or "out of memory"). */
Backend *be_new(const Backend *tmpl, char *why, size_t nwhy);
/* One more holder of be (a storage of memory be allocated, an interpreter, a simulated GPU on a
** CPU instance); be_drop lets one go, and the last one destroys the instance (its destroy
** entry frees the state). Called on the interpreter's thread (as storages are made and freed).
** (Inline: every matrix made and freed holds and lets go its instance.) */
static inline void be_hold(const Backend *be) { ((Backend *)be)->refs++; }   /* (instances are malloc'd, never const objects) */
void be_destroy(Backend *be);   /* be_drop's end: the destroy entry, then the instance freed */
static inline void be_drop(const Backend *be) {
  if (--((Backend *)be)->refs == 0) be_destroy((Backend *)be);
}
/* Whether be is a CPU instance (host memory, the CPU's kernels). */
bool be_is_cpu(const Backend *be);

/* registry.c: an interpreter's backends. cpu is made with the set; the GPU ("gpu" or "cuda":
** the CUDA plugin in a CUDA build, loaded on first use, or the simulated GPU when $MLS_SIM_GPU
** is set) when first asked for. */
typedef struct BackendSet {
  Backend *cpu;                /* the CPU instance (held) */
  Backend *gpu;                /* the GPU instance once made (held), else NULL */
  bool gpu_tried;              /* be_find("gpu") ran: gpu, or why not */
  char why[400];               /* why there is no GPU ("no CUDA device available") */
} BackendSet;
/* 0, or 1 when the CPU instance could not be made (out of memory). */
int be_set_init(BackendSet *s);
/* Lets the set's instances go (interp_free): their cached memory is given back (trim) and
** each is destroyed once no storage holds it. */
void be_set_free(BackendSet *s);
/* Device lookup by name ("cpu"; "gpu" or "cuda"). NULL when the device is not there, and
** be_why(s) then says why ("no CUDA device available"). The backend new matrices are made on
** is the interpreter's (Interp.device: --device, device()), handed to be_place. */
const Backend *be_find(BackendSet *s, const char *name);
const char *be_why(const BackendSet *s);
/* Where an op's result lives: the backend all its matrix inputs (NULL entries: numbers) share,
** dflt (the interpreter's device) when it has none, the CPU instance cpu when they are mixed
** (data moves to the host). */
const Backend *be_place(const Backend *cpu, const Backend *dflt, Tensor *const in[], int nin);
/* Who runs op into out: out's backend when it has the kernel and all inputs are there, else
** the CPU instance cpu (through host_access; counted in *fallbacks: the interpreter's
** be_fallbacks). */
const Backend *be_runner(const Backend *cpu, int op, const Tensor *out, Tensor *const in[], int nin, uint64_t *fallbacks);
/* Waits for every device's queued work (time() calls it, so timings include the GPU's). */
void be_sync_all(const BackendSet *s);
/* Gives every backend's cached memory back. */
void be_trim_all(const BackendSet *s);

#endif
