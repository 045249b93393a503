/*
** cpu_fused.c — runs a fusion group of a staged graph (FusedProg, backend.h) in one pass over
** memory: blocks of FB elements go through the whole program while they sit in L1, split
** across the cores by block. A final sum keeps the sums of its leaves (SUM_LEAF elements,
** FB / SUM_LEAF to a block) and combines them as cpu_reduce.c does: the result is the eager
** sum's to the last bit, whatever the thread count.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/cpu.h"
#include "backend/scalar.h"
#include "backend/vmath.h"
#include "mem.h"

#define FB 256                 /* elements per block */
_Static_assert(FB % SUM_LEAF == 0, "a block holds whole leaves of a sum");
#define MAX_REGS 40

typedef struct FusedJob {
  const FusedProg *p;
  Tensor *out;
  Tensor *const *in;
  const double *scalar;
  double *partial;             /* red == OP_SUM: one per leaf */
  int64_t n;
  uint64_t alias;              /* inputs whose data is out's (the GEMM epilogue in place): bit k */
} FusedJob;

#define LOOP2(EXPR) do { for (int64_t i = 0; i < n; i++) { double x = a[i], y = b[i]; o[i] = (EXPR); } } while (0)
#define LOOP1(EXPR) do { for (int64_t i = 0; i < n; i++) { double x = a[i]; o[i] = (EXPR); } } while (0)

/* o[0..n) = op(a, b): the formulas of scalar.h, with the switch outside the loop. Compiled
** twice (target_clones: AVX2 where the CPU has it, else the x86-64 baseline; the loader picks
** once): the same IEEE operations in wider registers, so the same bits, without FMA (no
** contraction under -std=c11). */
__attribute__((target_clones("avx2", "default"))) static void ew_block(OpKind op, double *restrict o, const double *restrict a, const double *restrict b, int64_t n) {
  switch (op) {                           /* ops.def's formulas, each its own loop (vec: libmvec) */
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND)                    \
  case OP_##NAME:                         /* (a test of two functions' addresses: folded) */ \
    if (VEC != vm_none) VEC(o, a, n);                                                 \
    else LOOP1(F);                                                                  \
    break;
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) case OP_##NAME: LOOP2(F); break;
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
  default: break;
  }
}

/* The program on elements [lo, lo + n) (n <= FB; global row-major positions, so broadcasts and
** the lanes of the array functions fall where the eager ops' do): r[k] points at each register's
** n values; the last instruction writes into last_out. */
static void run_block(const FusedJob *j, int64_t lo, int64_t n, double (*buf)[FB], const double **r, double *last_out) {
  const FusedProg *p = j->p;
  int64_t cols = p->cols;
  int last = p->ins[p->nins - 1].dst;
  for (int k = 0; k < p->nin; k++) {
    const double *d = j->in[k] ? tensor_data(j->in[k]) : NULL;
    switch (p->bc[k]) {
    case BC_FULL:                /* (an input out overwrites: its block copied first, as ew_block's */
      if (j->alias >> k & 1) {   /* operands and result are restrict) */
        memcpy(buf[k], d + lo, (size_t)n * sizeof(double));
        r[k] = buf[k];
      } else {
        r[k] = d + lo;
      }
      break;
    case BC_SCALAR: break;
    case BC_ROW:                 /* the block by runs along a row: position lo + i is (row, c) */
    case BC_COL:                 /* (no division per element) */
      for (int64_t i = 0, row = lo / cols, c = lo % cols; i < n; row++, c = 0) {
        int64_t e = i + (cols - c < n - i ? cols - c : n - i);
        if (p->bc[k] == BC_ROW) memcpy(buf[k] + i, d + c, (size_t)(e - i) * sizeof(double));
        else for (double v = d[row]; i < e; i++) buf[k][i] = v;
        i = e;
      }
      r[k] = buf[k];
      break;
    }
  }
  for (int q = 0; q < p->nins; q++) {
    const FusedIns *in = &p->ins[q];
    double *o = in->dst == last ? last_out : buf[in->dst];
    ew_block((OpKind)in->op, o, r[in->a], in->b >= 0 ? r[in->b] : r[in->a], n);
    r[in->dst] = o;
  }
}

/* The numbers' registers: one block filled once (as far as a block of this job reaches: a small
** matrix's run costs its size, not a block's). */
static void fill_scalars(const FusedJob *j, double (*buf)[FB], const double **r) {
  const FusedProg *p = j->p;
  int64_t m = (j->n + 3) & ~(int64_t)3;          /* (array functions run whole lanes of 4) */
  if (m > FB) m = FB;
  for (int k = 0; k < p->nin; k++)
    if (p->bc[k] == BC_SCALAR) {
      double s = j->in[k] ? tensor_data(j->in[k])[0] : j->scalar[k];
      for (int64_t i = 0; i < m; i++) buf[k][i] = s;
      r[k] = buf[k];
    }
}

static void fused_range(void *ctx, int64_t blo, int64_t bhi) {
  const FusedJob *j = ctx;
  const FusedProg *p = j->p;
  double buf[MAX_REGS][FB];
  const double *r[MAX_REGS];
  fill_scalars(j, buf, r);
  double *outd = j->out ? tensor_data(j->out) : NULL;
  int last = p->ins[p->nins - 1].dst;
  for (int64_t blk = blo; blk < bhi; blk++) {
    int64_t lo = blk * FB, n = j->n - lo < FB ? j->n - lo : FB;
    run_block(j, lo, n, buf, r, p->red == OP_NONE ? outd + lo : buf[last]);
    if (p->red == OP_SUM)            /* this block's leaves, indexed from the block's */
      cpu_sum_leaf_range(r[last], n, j->partial + lo / SUM_LEAF, 0, (n + SUM_LEAF - 1) / SUM_LEAF);
  }
}

/* A row aggregate (red: rowSums, rowMaxs, rowMins): each row of the program's result is made in
** a row buffer and reduced as the eager reduction reduces it (cpu_row_reduce); the rows x cols
** result itself is never written. A row is computed over the run of 4-aligned positions around
** it (a few elements of its neighbours too), so that every element goes through the same lanes
** of the array functions (libmvec's four- and two-lane forms differ in the last bit) as in the
** eager pass over the whole matrix: the result is eager's to the last bit. */
static void fused_rows(void *ctx, int64_t r0, int64_t r1) {
  const FusedJob *j = ctx;
  const FusedProg *p = j->p;
  double buf[MAX_REGS][FB], row[FUSED_ROW_MAX], tmp[FB];
  const double *r[MAX_REGS];
  fill_scalars(j, buf, r);
  int64_t cols = p->cols;
  double *outd = tensor_data(j->out);
  for (int64_t i = r0; i < r1; i++) {
    int64_t g0 = i * cols, g1 = g0 + cols;
    int64_t a0 = g0 & ~(int64_t)3, a1 = (g1 + 3) & ~(int64_t)3;
    if (a1 > j->n) a1 = j->n;
    for (int64_t lo = a0; lo < a1; lo += FB) {
      int64_t n = a1 - lo < FB ? a1 - lo : FB;
      run_block(j, lo, n, buf, r, tmp);
      int64_t s = lo > g0 ? lo : g0, e = lo + n < g1 ? lo + n : g1;
      if (s < e) memcpy(row + (s - g0), tmp + (s - lo), (size_t)(e - s) * sizeof(double));
    }
    if (fused_row_map(p->red)) cpu_row_softmax(p->red, row, cols, outd + i * cols);
    else outd[i] = cpu_row_reduce(p->red, row, cols);
  }
}

int cpu_run_fused(const Backend *be, const FusedProg *p, Tensor *out, Tensor *const in[], const double *scalar) {
  if (p->nregs > MAX_REGS || p->nins == 0) return 1;
  if (p->red != OP_NONE && p->red != OP_SUM) {            /* a row aggregate */
    if (p->cols > FUSED_ROW_MAX || p->cols < FUSED_ROW_MIN) return 1;
    FusedJob j = { p, out, in, scalar, NULL, p->rows * p->cols, 0 };
    if (j.n >= PAR_MIN) cpu_parallel_for(be, p->rows, fused_rows, &j);
    else fused_rows(&j, 0, p->rows);
    return 0;
  }
  int64_t n = p->rows * p->cols, nblk = (n + FB - 1) / FB;
  FusedJob j = { p, p->red == OP_SUM ? NULL : out, in, scalar, NULL, n, 0 };
  if (p->red == OP_NONE)
    for (int k = 0; k < p->nin && k < 64; k++)
      if (in[k] && p->bc[k] == BC_FULL && tensor_data(in[k]) == tensor_data(out)) j.alias |= (uint64_t)1 << k;
  int64_t nleaf = (n + SUM_LEAF - 1) / SUM_LEAF;
  if (p->red == OP_SUM) {      /* a backend never throws: no memory is a status (graph_run then runs the ops) */
    j.partial = mem_try_alloc((size_t)(nleaf > 0 ? nleaf : 1) * sizeof(double));
    if (!j.partial) return 2;
  }
  if (n >= PAR_MIN) cpu_parallel_for(be, nblk, fused_range, &j);
  else fused_range(&j, 0, nblk);
  if (p->red == OP_SUM) {
    tensor_data(out)[0] = cpu_sum_leaves(j.partial, nleaf);
    mem_free(j.partial);
  }
  return 0;
}
