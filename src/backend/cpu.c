/*
** cpu.c — the CPU backend: OpenBLAS cblas_dgemm for products and tight loops for the rest.
** One switch over OpKind per op family; the switch sits outside the loops, so every loop is
** a plain pass over contiguous memory that the compiler can vectorize.
** Freed data buffers are kept in a small cache by size and handed out again, so a loop that
** makes a fresh result of the same shape each time pays no page faults.
*/
#include "backend/dynlibs.h"   /* OpenBLAS, LAPACKE, CHOLMOD: loaded on first use */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/scalar.h"
#include "backend/vmath.h"
#include "backend/xsmm.h"
#include "backend/cpu.h"
#include "mem.h"


/* ---- buffer cache ----
** Freed buffers of 4 KiB and more, up to half of CACHE_MAX_BYTES each (a 60000x784 matrix of
** doubles, 376 MB, included), are kept and handed out again for a request of the same size:
** glibc maps every block above its mmap threshold afresh and unmaps it when freed, so without
** the cache each new result of a loop (Y = X * 2 on a large X) faults all its pages in again.
** The cache never raises the peak: what it holds plus the counted memory in use stays within
** the peak the counted memory has reached (mem_stats.counted_peak), the resident memory a
** process without the cache would have had at its peak; a fresh allocation that would go
** over evicts first (docs/robustness.md "Memory"). */
#define CACHE_SLOTS 16
#define CACHE_MAX_BYTES ((size_t)1 << 30)

typedef struct BufCache { double *p[CACHE_SLOTS]; size_t n[CACHE_SLOTS]; size_t total; } BufCache;

/* The state of a CPU instance (its ctx; one per interpreter, cpu.h): the buffer cache, which
** holds only free memory, like malloc's own arenas, and the panel size of long products. */
struct CpuCtx {
  BufCache cache;
  double gemm_panel_flops;     /* cpu_gemm_set_panel_flops */
  char desc[640];              /* cpu_describe's text */
  CpuPool *pool;               /* its worker threads (cpu_par.c), started by the first parallel job */
};
#define CPU(be) ((CpuCtx *)(be)->ctx)

/* The cache holds memory that counts against nothing, so it is kept within what the counted
** peak and --max-memory leave: a buffer is cached only while the counted bytes and the cache
** fit both together, and a fresh allocation that would not fit beside the cache evicts first.
** The resident memory then stays within the limit (docs/robustness.md "Memory"), and its peak
** at most an eighth above where it would be without the cache. That slack keeps a cached buffer
** as large as the peak's largest when a few small temporaries come on top of the rest: a staged
** graph's memory plan reuses buffers, so its peak can be one large result plus the inputs, and
** without the slack each run's large product was evicted by the next small allocation and
** faulted in again (a CG step of alsCG under jit: 10.7 ms against eager's 2.7, 2.8 with it). cache_over: whether the cache holding extra more bytes
** beside a fresh allocation of nbytes would go over either. */
static bool cache_over(const CpuCtx *cpu, size_t extra, size_t nbytes) {
  uint64_t with = (uint64_t)cpu->cache.total + extra;
  return with > 0 && (mem_over_limit(with + nbytes) || with + nbytes + mem_in_use() > mem_stats.counted_peak + mem_stats.counted_peak / 8);
}

static void cache_evict_for(CpuCtx *cpu, size_t nbytes) {
  for (int i = 0; i < CACHE_SLOTS && cpu->cache.total > 0 && cache_over(cpu, 0, nbytes); i++) {
    if (!cpu->cache.p[i]) continue;
    free(cpu->cache.p[i]);
    cpu->cache.total -= cpu->cache.n[i];
    cpu->cache.p[i] = NULL;
  }
}

static double *cpu_alloc(const Backend *be, size_t nbytes) {
  CpuCtx *cpu = CPU(be);
  if (nbytes == 0) nbytes = 8;
  for (int i = 0; i < CACHE_SLOTS; i++) {
    if (cpu->cache.p[i] && cpu->cache.n[i] == nbytes) {
      double *p = cpu->cache.p[i];
      cpu->cache.p[i] = NULL;
      cpu->cache.total -= nbytes;
      return p;
    }
  }
  cache_evict_for(cpu, nbytes);
  void *p = NULL;
  if (posix_memalign(&p, 64, nbytes) != 0) return NULL;
  return p;
}

static void cpu_free(const Backend *be, double *p, size_t nbytes) {
  CpuCtx *cpu = CPU(be);
  if (!p) return;
  if (nbytes == 0) nbytes = 8;
  if (nbytes >= 4096 && nbytes <= CACHE_MAX_BYTES / 2 && !cache_over(cpu, nbytes, 0)) {
    int slot = -1;
    for (int i = 0; i < CACHE_SLOTS; i++)
      if (!cpu->cache.p[i]) { slot = i; break; }
    while (slot < 0 || cpu->cache.total + nbytes > CACHE_MAX_BYTES) {   /* evict the first */
      int v = -1;
      for (int i = 0; i < CACHE_SLOTS; i++)
        if (cpu->cache.p[i]) { v = i; break; }
      if (v < 0) break;
      free(cpu->cache.p[v]);
      cpu->cache.total -= cpu->cache.n[v];
      cpu->cache.p[v] = NULL;
      slot = v;
    }
    if (slot >= 0 && cpu->cache.total + nbytes <= CACHE_MAX_BYTES) {
      cpu->cache.p[slot] = p;
      cpu->cache.n[slot] = nbytes;
      cpu->cache.total += nbytes;
      return;
    }
  }
  free(p);
}

static int cpu_copy(const Backend *be, double *dst, const double *src, size_t nbytes) {
  (void)be;
  memcpy(dst, src, nbytes);
  return 0;
}

static bool cpu_supports(const Backend *be, OpKind op) { (void)be; (void)op; return true; }

/* ---- elementwise binary ----
** Each kernel runs on a range [lo, hi): of elements, or of rows when an operand broadcasts
** by rows or columns. Large inputs are split across the cores by cpu_parallel_for. */
typedef struct EwJob {
  OpKind op;
  const double *a, *b;
  double *o;
  BcastMode bc0, bc1;
  int64_t rows, cols;
  int64_t n;                 /* run_unary: the elements */
} EwJob;

#define EW_LOOP(EXPR)                                                            \
  do {                                                                           \
    if (bc0 == BC_FULL && bc1 == BC_FULL) {                                      \
      for (int64_t i = lo; i < hi; i++) { double x = a[i], y = b[i]; o[i] = (EXPR); } \
    } else if (bc1 == BC_SCALAR && bc0 == BC_FULL) {                             \
      double y = b[0];                                                           \
      for (int64_t i = lo; i < hi; i++) { double x = a[i]; o[i] = (EXPR); }      \
    } else if (bc0 == BC_SCALAR && bc1 == BC_FULL) {                             \
      double x = a[0];                                                           \
      for (int64_t i = lo; i < hi; i++) { double y = b[i]; o[i] = (EXPR); }      \
    } else {                                                                     \
      for (int64_t r = lo; r < hi; r++) {                                        \
        const double *ar = a + (bc0 == BC_FULL ? r * cols : bc0 == BC_COL ? r : 0); \
        const double *br = b + (bc1 == BC_FULL ? r * cols : bc1 == BC_COL ? r : 0); \
        int64_t sa = (bc0 == BC_FULL || bc0 == BC_ROW), sb = (bc1 == BC_FULL || bc1 == BC_ROW); \
        double *orow = o + r * cols;                                             \
        for (int64_t c = 0; c < cols; c++) {                                     \
          double x = ar[c * sa], y = br[c * sb]; orow[c] = (EXPR);               \
        }                                                                        \
      }                                                                          \
    }                                                                            \
  } while (0)

static bool by_rows(BcastMode bc0, BcastMode bc1) {
  return !((bc0 == BC_FULL && bc1 == BC_FULL) || (bc0 == BC_FULL && bc1 == BC_SCALAR) || (bc0 == BC_SCALAR && bc1 == BC_FULL));
}

__attribute__((target_clones("avx2", "default"))) static void binary_range(void *ctx, int64_t lo, int64_t hi) {
  const EwJob *j = ctx;
  const double *a = j->a, *b = j->b;
  double *o = j->o;
  BcastMode bc0 = j->bc0, bc1 = j->bc1;
  int64_t cols = j->cols;
  if (j->op == OP_POW && bc1 == BC_SCALAR && b[0] == 2.0) { EW_LOOP(((void)y, x * x)); return; }   /* x^2: vectorized */
  switch (j->op) {                        /* ops.def's formulas, each its own loop */
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND)
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) case OP_##NAME: EW_LOOP(F); break;
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
  default: break;
  }
}

static bool binary_known(OpKind op) {
  return (op_info[op].flags & OPF_EW) && op_info[op].arity == 2;
}

static int run_binary(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) {
  if (!binary_known(op)) return 1;
  EwJob j = { op, in[0] ? tensor_data(in[0]) : &p->scalar[0], in[1] ? tensor_data(in[1]) : &p->scalar[1],
              tensor_data(out), p->bc[0], p->bc[1], tensor_rows(out), tensor_cols(out), 0 };
  int64_t n = j.rows * j.cols, span = by_rows(j.bc0, j.bc1) ? j.rows : n;
  if (n >= PAR_MIN) cpu_parallel_for(be, span, binary_range, &j);
  else binary_range(&j, 0, span);
  return 0;
}

/* ---- elementwise unary ---- */
#define UN_LOOP(EXPR) do { for (int64_t i = lo; i < hi; i++) { double x = a[i]; o[i] = (EXPR); } } while (0)

__attribute__((target_clones("avx2", "default"))) static void unary_range(void *ctx, int64_t lo, int64_t hi) {
  const EwJob *j = ctx;
  const double *a = j->a;
  double *o = j->o;
  switch (j->op) {                        /* ops.def's formulas, each its own loop (vec: libmvec) */
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND)                    \
  case OP_##NAME:                         /* (a test of two functions' addresses: folded) */ \
    if (VEC != vm_none) VEC(o + lo, a + lo, hi - lo);                                                 \
    else UN_LOOP(F);                                                                  \
    break;
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y)
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
  default: break;
  }
}

/* The cores' parts of a unary op start at multiples of UN_BLOCK elements: the array functions
** (libmvec's four- and two-lane forms, whose last bits differ, and vm_sigmoid's blocks of 256)
** then see the same lanes whatever the thread count, and the fused kernels (cpu_fused.c, blocks
** of 256 from 0) see eager's: a result does not depend on --threads. */
#define UN_BLOCK 256
static void unary_blocks(void *ctx, int64_t b0, int64_t b1) {
  const EwJob *j = ctx;
  unary_range(ctx, b0 * UN_BLOCK, b1 * UN_BLOCK < j->n ? b1 * UN_BLOCK : j->n);
}

static int run_unary(const Backend *be, OpKind op, Tensor *out, Tensor *const in[]) {
  if (!(op_info[op].flags & OPF_EW) || op_info[op].arity != 1) return 1;
  EwJob j = { op, tensor_data(in[0]), NULL, tensor_data(out), BC_FULL, BC_FULL, tensor_rows(out), tensor_cols(out), tensor_numel(out) };
  int64_t n = j.n;
  if (n >= PAR_MIN) cpu_parallel_for(be, (n + UN_BLOCK - 1) / UN_BLOCK, unary_blocks, &j);
  else unary_range(&j, 0, n);
  return 0;
}

/* ---- layout and reductions ---- */
/* OP_TRANSPOSE into a packed result: the backend's run of the op. Eager t() makes a view
** instead (tensor_view_t), which GEMM reads through its 'T' flag and tensor_clone packs. */
static void transpose(const Backend *be, const Tensor *in, Tensor *out) {
  int64_t r = tensor_rows(in), c = tensor_cols(in);
  const double *a = tensor_data(in);
  double *o = tensor_data(out);
  const int64_t B = 32;                       /* cache blocks */
  int64_t budget = 0;
  for (int64_t i0 = 0; i0 < r && !cpu_tick(be, &budget, B * c); i0 += B)
    for (int64_t j0 = 0; j0 < c; j0 += B)
      for (int64_t i = i0; i < r && i < i0 + B; i++)
        for (int64_t j = j0; j < c && j < j0 + B; j++)
          o[j * r + i] = a[i * c + j];
}

static int cpu_run(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) {
  int flags = op_info[op].flags;
  if ((flags & OPF_EW) && op_info[op].arity == 2) return run_binary(be, op, out, in, p);
  if (flags & OPF_EW) return run_unary(be, op, out, in);
  if (flags & OPF_RED) return cpu_run_reduce(be, op, out, in, p);
  if (flags & OPF_NN) return cpu_run_nn(be, op, out, in, p);
  if (op == OP_TRANSPOSE) { transpose(be, in[0], out); return 0; }
  return cpu_run_products(be, op, out, in, p);
}

/* The leading dimension of a GEMM operand stored row-major with unit column stride (ops.c
** op_gemm_operand): its row stride, which BLAS wants at least max(1, cols) even when only one
** row is read. An operand used transposed ('T') is the matrix underneath the view, so its
** leading dimension is that of the underlying storage too. */
static int gemm_ld(const Tensor *t) {
  if (tensor_rows(t) > 1) return (int)t->stride[0];
  return tensor_cols(t) > 1 ? (int)tensor_cols(t) : 1;
}

/* ---- libxsmm's kernels (backend/xsmm.h) for the small and skinny products: the rule of
** docs/architecture.md "Small products". A product of at most XSMM_MAX_MNK multiply-adds, alpha 1
** and beta 0, that is not a matrix-vector product (dgemv stays), runs libxsmm's kernel for its
** shape when the plugin is there and libxsmm makes one (not for a transposed right operand,
** 'T' on B: libxsmm has no kernel with its first, column-major operand transposed). A product of
** (A product OpenBLAS would make in panels, polling the interrupt flag between them, below, never
** does: only when a unit test lowers gemm_panel_flops.) A product of
** at least XSMM_PAR_MNK multiply-adds and 2 * XSMM_PANEL rows runs as panels of XSMM_PANEL rows
** of C (the last one the rest) on every core; the cut depends on the shapes alone, so the
** result does not depend on the thread count. Each cell is then libxsmm's sum over k in order
** (fused multiply-adds; OpenBLAS's differs in the last bits), the same in eager and staged runs,
** which share this function. */
#define XSMM_MAX_MNK ((double)(1 << 27))
#define XSMM_PAR_MNK ((double)(1 << 20))
#define XSMM_PANEL ((int64_t)64)

typedef struct XsmmJob {
  XsmmKernel full, last;          /* the kernel of a panel, of the last panel */
  const double *a, *b;
  double *c;
  int64_t n, lda, panel, np;
  bool ta;
} XsmmJob;

static void xsmm_panels(void *ctx, int64_t lo, int64_t hi) {
  const XsmmJob *j = ctx;
  for (int64_t p = lo; p < hi; p++) {
    int64_t r0 = p * j->panel;      /* rows r0.. of C: those of op(A), columns of A under 'T' */
    (p == j->np - 1 ? j->last : j->full)(j->b, j->ta ? j->a + r0 : j->a + r0 * j->lda, j->c + r0 * j->n);
  }
}

/* The product by libxsmm where the rule above takes it (false: OpenBLAS's, C untouched). The
** row-major C = op(A) op(B) is the column-major t(C) = t(op(B)) t(op(A)): libxsmm's first
** operand is B's storage, transposed when B is, its second A's. */
static bool gemm_xsmm(const Backend *be, bool ta, bool tb, const Tensor *A, const Tensor *B, Tensor *C,
                      int64_t m, int64_t n, int64_t k) {
  double mnk = (double)m * (double)n * (double)k;
  if (mnk > XSMM_MAX_MNK || 2 * mnk >= 2 * CPU(be)->gemm_panel_flops || tb) return false;
  const XsmmPlugin *x = dl_xsmm();
  if (!x) return false;
  int lda = gemm_ld(A), ldb = gemm_ld(B);
  int64_t panel = mnk >= XSMM_PAR_MNK && m >= 2 * XSMM_PANEL ? XSMM_PANEL : m;
  int64_t np = (m + panel - 1) / panel, rest = m - (np - 1) * panel;
  XsmmJob j = { x->dispatch((int)n, (int)panel, (int)k, ldb, lda, (int)n, tb, ta), NULL,
                tensor_data(A), tensor_data(B), tensor_data(C), n, lda, panel, np, ta };
  if (!j.full) return false;
  j.last = rest == panel ? j.full : x->dispatch((int)n, (int)rest, (int)k, ldb, lda, (int)n, tb, ta);
  if (!j.last) return false;
  if (np > 1) cpu_parallel_for(be, np, xsmm_panels, &j);
  else xsmm_panels(&j, 0, 1);
  return true;
}

/* Tiny products (m, n <= TINY_MN, k <= TINY_K: the 4x4 products of a small recurrence, bench
** (s6)) skip OpenBLAS: its driver, a mutex in its buffer allocator and the packing cost about 1400
** instructions for a 4x4 product whose arithmetic is 64 multiply-adds. Each element is computed as
** OpenBLAS's Haswell kernels compute it for such a k: one accumulator from +0, a fused
** multiply-add per term in the order of k, then C = acc + 0 (alpha 1, beta 0). Checked against
** OpenBLAS 0.3.21 on this machine's kernels (random operands of mixed magnitudes, every m, n <= 16,
** k <= 7, both transpose flags: identical to the last bit; from k = 8 on, some tiles' kernels
** split the sum, hence the bound). On a CPU whose OpenBLAS kernel sums otherwise, the last bits
** of such a product may differ from OpenBLAS's there, but eager code and staged graphs (the graph
** runner, the lean loop runner) both come here, so they agree with each other by construction.
** libxsmm's kernels (above) take a tiny product first where the plugin is there; this kernel then
** runs the tiny products libxsmm has no kernel for (a transposed right operand, A %*% t(B)) and
** every tiny product when the plugin is absent (XSMM=0, MLS_XSMM=0). */
#define TINY_MN 16
#define TINY_K 7
__attribute__((target_clones("fma", "default"))) static void gemm_tiny(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                                                                     const double *a, int64_t lda, const double *b,
                                                                     int64_t ldb, double *c) {
  int64_t sap = ta ? lda : 1, sbp = tb ? 1 : ldb, sbj = tb ? ldb : 1;   /* steps along k, and along C's row */
  for (int64_t i = 0; i < m; i++) {
    const double *ai = ta ? a + i : a + i * lda;
    double *cr = c + i * n;
    int64_t j = 0;
    for (; j + 4 <= n; j += 4) {               /* four elements' chains side by side */
      const double *bj = b + j * sbj;
      double c0 = 0.0, c1 = 0.0, c2 = 0.0, c3 = 0.0;
      for (int64_t p = 0; p < k; p++) {
        double x = ai[p * sap];
        const double *bp = bj + p * sbp;
        c0 = fma(x, bp[0], c0);
        c1 = fma(x, bp[sbj], c1);
        c2 = fma(x, bp[2 * sbj], c2);
        c3 = fma(x, bp[3 * sbj], c3);
      }
      cr[j] = c0 + 0.0;                        /* (-0 is +0, as alpha * acc + 0) */
      cr[j + 1] = c1 + 0.0;
      cr[j + 2] = c2 + 0.0;
      cr[j + 3] = c3 + 0.0;
    }
    for (; j < n; j++) {
      const double *bj = b + j * sbj;
      double acc = 0.0;
      for (int64_t p = 0; p < k; p++) acc = fma(ai[p * sap], bj[p * sbp], acc);
      cr[j] = acc + 0.0;
    }
  }
}

#define GEMM_KSTEP 1536                         /* k-pieces are multiples of this (below) */
void cpu_gemm_set_panel_flops(const Backend *be, double flops) { CPU(be)->gemm_panel_flops = flops; }

static int cpu_gemm(const Backend *be, bool ta, bool tb, double alpha, const Tensor *A, const Tensor *B, double beta, Tensor *C) {
  const double panel = CPU(be)->gemm_panel_flops;
  int64_t m = tensor_rows(C), n = tensor_cols(C);
  int64_t k = ta ? tensor_rows(A) : tensor_cols(A);
  if (m == 0 || n == 0) return 0;
  if (k == 0) { memset(tensor_data(C), 0, (size_t)(m * n) * sizeof(double)); return 0; }
  if (n == 1 && !tb) {                          /* matrix-vector: y = op(A) x, x a column of B */
    int incx = k > 1 ? (int)B->stride[0] : 1;
    cblas_dgemv(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, (int)tensor_rows(A), (int)tensor_cols(A),
                alpha, tensor_data(A), gemm_ld(A), tensor_data(B), incx, beta, tensor_data(C), 1);
    return 0;
  }
  if (alpha == 1 && beta == 0 && gemm_xsmm(be, ta, tb, A, B, C, m, n, k)) return 0;
  const double *a = tensor_data(A), *b = tensor_data(B);
  double *c = tensor_data(C);
  int lda = gemm_ld(A), ldb = gemm_ld(B);
  if (m <= TINY_MN && n <= TINY_MN && k <= TINY_K && alpha == 1.0 && beta == 0.0) {
    gemm_tiny(ta, tb, m, n, k, a, lda, b, ldb, c);
    return 0;
  }
  /* One OpenBLAS call cannot be stopped, so a product of more than 2 gemm_panel_flops (16e9) runs as
  ** panels of C's rows (or columns, when it has fewer rows), one per gemm_panel_flops (at most
  ** 16, each at least 512 rows), polling the interrupt flag between them (the caller raises
  ** it): Ctrl-C then ends a long product within a panel, about 0.3 s of one core. Each call
  ** packs op(B) again, so the panels are kept large: a 3000x3000 product is 2 of them, and
  ** costs about 1% more than one call. */
  const volatile sig_atomic_t *stop = cpu_par_stop_flag(be);
  int64_t along = m >= n ? m : n;
  double flops = 2.0 * (double)m * (double)n * (double)k;
  int64_t pieces = flops < 2 * panel || !stop ? 1 : (int64_t)(flops / panel);
  if (pieces > 16) pieces = 16;
  if (pieces > along / 512) pieces = along / 512 > 0 ? along / 512 : 1;
  /* A panel still past 2 gemm_panel_flops (a small result of a long inner dimension, such as
  ** t(A) %*% A of a tall A: one panel) is also cut along k, into pieces of about
  ** gemm_panel_flops whose lengths are multiples of GEMM_KSTEP, the last taking the rest; each
  ** piece adds into C (beta 1 after the first). OpenBLAS itself adds k-blocks (of 256 with
  ** the Haswell kernels here) into C one after another, the last one taking the rest, so the
  ** cut is where it adds anyway: the result is the unsplit one to the last bit here (on a core
  ** whose k-block does not divide GEMM_KSTEP it may differ in the last bits: tests/unit/
  ** test_interrupt.c compares with the unsplit product to 1e-12). The cut depends only on the
  ** shapes, never on the flag or the threads, so results are reproducible. */
  double pflops = flops / (double)pieces;
  int64_t kpieces = pflops < 2 * panel ? 1 : (int64_t)ceil(pflops / panel);
  if (kpieces > k / GEMM_KSTEP) kpieces = k / GEMM_KSTEP > 0 ? k / GEMM_KSTEP : 1;
  int64_t kstep = kpieces > 1 ? k / kpieces / GEMM_KSTEP * GEMM_KSTEP : k;
  for (int64_t p = 0; p < pieces; p++) {
    int64_t lo = along * p / pieces, hi = along * (p + 1) / pieces;
    for (int64_t q = 0; q < kpieces; q++) {
      if (stop && *stop) return 0;            /* (the caller discards C) */
      int64_t k0 = q * kstep, k1 = q == kpieces - 1 ? k : k0 + kstep;
      const double *ak = ta ? a + k0 * lda : a + k0, *bk = tb ? b + k0 : b + k0 * ldb;   /* op(A)[, k0:k1], op(B)[k0:k1, ] */
      double bq = q == 0 ? beta : 1.0;
      if (m >= n) {                             /* rows lo..hi of C: those rows of op(A) */
        const double *ap = ta ? ak + lo : ak + lo * lda;
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)(hi - lo), (int)n,
                    (int)(k1 - k0), alpha, ap, lda, bk, ldb, bq, c + lo * n, (int)n);
      } else {                                  /* columns lo..hi of C: those columns of op(B) */
        const double *bp = tb ? bk + lo * ldb : bk + lo;
        cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, (int)m, (int)(hi - lo),
                    (int)(k1 - k0), alpha, ak, lda, bp, ldb, bq, c + lo, (int)n);
      }
    }
  }
  return 0;
}

static void cpu_sync(const Backend *be) { (void)be; }

CpuPool *cpu_pool(const Backend *be) { return CPU(be)->pool; }

static void cpu_trim(const Backend *be) {
  CpuCtx *cpu = CPU(be);
  cpu_par_shutdown(be);
  for (int i = 0; i < CACHE_SLOTS; i++) {
    free(cpu->cache.p[i]);
    cpu->cache.p[i] = NULL;
  }
  cpu->cache.total = 0;
}

static void cpu_threads(const Backend *be, int n) {
  openblas_set_num_threads(n);
  cpu_par_set_threads(be, n);
}

/* OpenBLAS's configuration, and libxsmm's version where the plugin is there (backend/xsmm.h), or
** why it is not used when it is there but could not be loaded */
static const char *cpu_describe(const Backend *be) {
  const XsmmPlugin *x = dl_xsmm();
  const char *why = dl_xsmm_why();
  char *d = CPU(be)->desc, ob[320];
  /* (how long OpenBLAS's idle threads spin: main sets 2^4 cycles unless the user set another) */
  const char *to = getenv("OPENBLAS_THREAD_TIMEOUT");
  if (to && *to) snprintf(ob, sizeof ob, "%s (idle threads spin 2^%s cycles)", openblas_get_config(), to);
  else snprintf(ob, sizeof ob, "%s", openblas_get_config());
  if (x) snprintf(d, sizeof CPU(be)->desc, "%s; small products: %s (%s kernels)", ob, x->version, x->arch());
  else if (why) snprintf(d, sizeof CPU(be)->desc, "%s; small products: OpenBLAS (%s)", ob, why);
  else snprintf(d, sizeof CPU(be)->desc, "%s", ob);
  return d;
}

static int cpu_init(Backend *be) {
  CpuCtx *cpu = calloc(1, sizeof *cpu);
  if (!cpu) return 1;
  cpu->gemm_panel_flops = 16e9;
  be->ctx = cpu;
  cpu->pool = cpu_pool_new();
  return cpu->pool == NULL;
}

static const char *cpu_error(const Backend *be) { (void)be; return "out of memory"; }

static void cpu_destroy(Backend *be) {
  if (!be->ctx) return;
  if (CPU(be)->pool) cpu_trim(be);
  cpu_pool_free(CPU(be)->pool);
  free(be->ctx);
  be->ctx = NULL;
}

static void cpu_set_stop(const Backend *be, const volatile sig_atomic_t *flag) {
  cpu_par_set_stop(be, flag);
}

const Backend be_cpu = {
  /* .name        = */ "cpu",
  /* .alloc       = */ cpu_alloc,
  /* .free        = */ cpu_free,
  /* .upload      = */ cpu_copy,
  /* .download    = */ cpu_copy,
  /* .supports_op = */ cpu_supports,
  /* .run         = */ cpu_run,
  /* .gemm        = */ cpu_gemm,
  /* .sync        = */ cpu_sync,
  /* .set_threads = */ cpu_threads,
  /* .trim        = */ cpu_trim,
  /* .run_fused   = */ cpu_run_fused,
  /* .describe    = */ cpu_describe,
  /* .host_access = */ NULL,
  /* .copy2d      = */ NULL,
  /* .init        = */ cpu_init,
  /* .error       = */ cpu_error,
  /* .set_stop    = */ cpu_set_stop,
  /* .getrf       = */ NULL,
  /* .getrs       = */ NULL,
  /* .gather      = */ NULL,
  /* .scatter     = */ NULL,
  /* .capture_begin = */ NULL,
  /* .capture_end = */ NULL,
  /* .replay      = */ NULL,
  /* .replay_free = */ NULL,
  /* .pinned_alloc = */ NULL,
  /* .pinned_free = */ NULL,
  /* .combine     = */ NULL,
  /* .spmm        = */ NULL,
  /* .spmm_free   = */ NULL,
  /* .destroy     = */ cpu_destroy,
  /* .ctx         = */ NULL,   /* (the template: an instance's, be_new) */
  /* .refs        = */ 0,
};
