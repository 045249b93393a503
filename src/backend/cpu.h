/*
** cpu.h — kernel families of the CPU backend, one file each, dispatched by cpu.c's cpu_run.
*/
#ifndef MLS_CPU_H
#define MLS_CPU_H

#include "backend/backend.h"

/* The state of a CPU instance (cpu.c): be->ctx of an instance of be_cpu. */
typedef struct CpuCtx CpuCtx;

/* Every kernel runs on the threads of the CPU instance be it is given (its CpuCtx's pool,
** cpu_par.c): the entries pass their instance down, and the sparse kernels (sparse.h) take the
** interpreter's CPU instance (Interp.cpu). */

/* A CPU instance's worker threads (cpu_par.c), started by its first parallel job. */
typedef struct CpuPool CpuPool;
CpuPool *cpu_pool_new(void);           /* NULL: no memory */
void cpu_pool_free(CpuPool *pool);     /* joins the workers */
void cpu_pool_shutdown(CpuPool *pool); /* joins the workers; a later job starts them again */
CpuPool *cpu_pool(const Backend *be);  /* be's pool (cpu.c) */

/* Runs fn(ctx, lo, hi) over [0, n), cut into one contiguous part per thread of be's pool.
** Below PAR_MIN elements the kernels call fn(ctx, 0, n) themselves. */
#define PAR_MIN ((int64_t)1 << 18)
typedef void (*ParFn)(void *ctx, int64_t lo, int64_t hi);
void cpu_parallel_for(const Backend *be, int64_t n, ParFn fn, void *ctx);
/* The interrupt flag cpu_parallel_for polls: each part runs in 16 pieces, and once the flag
** is set the pieces left are skipped (the caller raises the interrupt). NULL: none. */
void cpu_par_set_stop(const Backend *be, const volatile sig_atomic_t *flag);
/* The flag set by cpu_par_set_stop (NULL: none): long work outside cpu_parallel_for polls it. */
const volatile sig_atomic_t *cpu_par_stop_flag(const Backend *be);
/* The serial loops of the kernels poll it too: cpu_tick, called once per step of w elements
** (a row, a block), is true when about CPU_POLL elements have passed since its last look
** (*budget starts at 0) and the flag is set; the kernel then stops, leaving its output
** unfinished, and the op raises the interrupt. One look costs a call and a load. */
#define CPU_POLL ((int64_t)1 << 18)
static inline bool cpu_tick(const Backend *be, int64_t *budget, int64_t w) {
  if ((*budget -= w + 1) > 0) return false;
  *budget = CPU_POLL;
  const volatile sig_atomic_t *f = cpu_par_stop_flag(be);
  return f && *f;
}
/* A product of more than twice this many flops runs in panels, polling the flag between them
** (cpu.c; 16e9 by default). The unit tests lower it to check the panels on small products. */
void cpu_gemm_set_panel_flops(const Backend *be, double flops);
void cpu_par_set_threads(const Backend *be, int n);
int cpu_par_threads(const Backend *be);   /* the threads cpu_parallel_for uses (the caller's included) */
/* Stops and joins be's workers (a trim, interp_free); a later job starts them again. */
void cpu_par_shutdown(const Backend *be);

/* The sum of n elements is the pairwise tree of its leaves of SUM_LEAF elements (cpu_reduce.c):
** leaf[l0 .. l1) of a's leaves, and the tree over nleaf leaf sums, so that a kernel summing
** its own leaves (cpu_fused.c) gives the eager sum to the last bit. */
#define SUM_LEAF ((int64_t)128)
void cpu_sum_leaf_range(const double *a, int64_t n, double *leaf, int64_t l0, int64_t l1);
double cpu_sum_leaves(const double *leaf, int64_t nleaf);
/* One row's rowSums, rowMaxs or rowMins (op) of its c values, as the eager reduction computes
** it (the fused row aggregates, cpu_fused.c, call it on each row they make). */
double cpu_row_reduce(OpKind op, const double *row, int64_t c);
/* One row's softmax or log-softmax (op) of its c values into orow, as the eager kernel computes
** it (the fusion groups that end in one call it on each row they make). */
void cpu_row_softmax(OpKind op, const double *row, int64_t c, double *orow);

/* Reductions (ops with OPF_RED): out has the reduced shape; in[0] is contiguous. */
int cpu_run_reduce(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p);

/* The DML statistics ops and their backward kernels (cpu_stats.c); 1 when op is not one. */
int cpu_run_stats(const Backend *be, OpKind op, Tensor *out, Tensor *const in[]);
/* The deep-learning ops (OPF_NN: conv2d by im2col + GEMM, pooling, bias; cpu_conv.c): inputs
** contiguous, out packed with the result's shape; p->nn holds the geometry (bias ops: NULL). */
int cpu_run_nn(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p);

/* The product forms of staging's rewrites (ops.def: OP_DOT, OP_DIAGPROD read their operands
** through their strides; OP_CROSSPROD's is a GEMM operand, p->trans[0] as ops.def says);
** cpu_products.c. 1 when op is not one. */
int cpu_run_products(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p);

/* A fusion group, blockwise over both cores (cpu_fused.c). */
int cpu_run_fused(const Backend *be, const FusedProg *prog, Tensor *out, Tensor *const in[], const double *scalar);

#endif
