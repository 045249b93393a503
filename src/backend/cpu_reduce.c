/*
** cpu_reduce.c — the CPU kernels of the OPF_RED family: reductions (pairwise sums, products,
** NaN-propagating maxima and minima and their indices), scans, row-wise softmax, diag and
** ifelse.
** The switch sits outside the loops; each loop is a plain pass over contiguous memory.
*/
#include <math.h>
#include <string.h>
#include "backend/cpu.h"
#include "backend/vmath.h"

/* A sum is one tree, whoever computes it: leaves of SUM_LEAF elements from the start, each
** summed by four chains, combined pairwise by splitting the leaves at the middle one. The
** parallel sum below computes subtrees apart, and a staged graph's fused reduction
** (cpu_fused.c) its leaves, combined by cpu_sum_leaves: eager, staged and threaded sums
** agree to the last bit. */
static double sum_leaf(const double *a, int64_t n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) { s0 += a[i]; s1 += a[i + 1]; s2 += a[i + 2]; s3 += a[i + 3]; }
  for (; i < n; i++) s0 += a[i];
  return (s0 + s1) + (s2 + s3);
}

__attribute__((target_clones("avx2", "default"))) static double sum_tree(const double *a, int64_t n, int64_t l0, int64_t l1) {   /* leaves l0 .. l1-1 */
  if (l1 - l0 == 1) {
    int64_t at = l0 * SUM_LEAF;
    return sum_leaf(a + at, n - at < SUM_LEAF ? n - at : SUM_LEAF);
  }
  int64_t m = l0 + (l1 - l0) / 2;
  return sum_tree(a, n, l0, m) + sum_tree(a, n, m, l1);
}

static double sum_pairwise(const double *a, int64_t n) {   /* accurate and vectorizable */
  return n <= SUM_LEAF ? sum_leaf(a, n) : sum_tree(a, n, 0, (n + SUM_LEAF - 1) / SUM_LEAF);
}

/* (cloned for AVX2 as a static function: clang 14 does not link an exported target_clones
** function when it instruments for the fuzzers) */
__attribute__((target_clones("avx2", "default"))) static void leaf_range(const double *a, int64_t n, double *leaf, int64_t l0, int64_t l1) {
  for (int64_t l = l0; l < l1; l++) {
    int64_t at = l * SUM_LEAF;
    leaf[l] = sum_leaf(a + at, n - at < SUM_LEAF ? n - at : SUM_LEAF);
  }
}

void cpu_sum_leaf_range(const double *a, int64_t n, double *leaf, int64_t l0, int64_t l1) { leaf_range(a, n, leaf, l0, l1); }

static double leaves_tree(const double *leaf, int64_t l0, int64_t l1) {
  if (l1 - l0 == 1) return leaf[l0];
  int64_t m = l0 + (l1 - l0) / 2;
  return leaves_tree(leaf, l0, m) + leaves_tree(leaf, m, l1);
}

double cpu_sum_leaves(const double *leaf, int64_t nleaf) { return nleaf == 0 ? 0 : leaves_tree(leaf, 0, nleaf); }

static double prod_all(const Backend *be, const double *a, int64_t n) {       /* 1 for n = 0, as R */
  double p0 = 1, p1 = 1, p2 = 1, p3 = 1;
  int64_t i = 0, budget = 0;
  while (i + 4 <= n) {                                     /* blocks of CPU_POLL (a multiple of 4) */
    if (cpu_tick(be, &budget, CPU_POLL)) return NAN;
    int64_t end = n - i >= CPU_POLL ? i + CPU_POLL : i + (n - i) / 4 * 4;
    for (; i < end; i += 4) { p0 *= a[i]; p1 *= a[i + 1]; p2 *= a[i + 2]; p3 *= a[i + 3]; }
  }
  for (; i < n; i++) p0 *= a[i];
  return (p0 * p1) * (p2 * p3);
}

/* One step of a NaN-propagating max (min): a NaN x wins, and a NaN m stays (x > NaN is false). */
#define MAX_STEP(m, x) ((x) > (m) || (x) != (x) ? (x) : (m))
#define MIN_STEP(m, x) ((x) < (m) || (x) != (x) ? (x) : (m))

/* Max (is_max) or min of n values; -Inf (Inf) for n = 0 (op_reduce rejects that case). */
static double extreme(const double *a, int64_t n, bool is_max) {
  double m0 = is_max ? -INFINITY : INFINITY, m1 = m0, m2 = m0, m3 = m0;
  int64_t i = 0;
  if (is_max) {
    for (; i + 4 <= n; i += 4) {
      m0 = MAX_STEP(m0, a[i]); m1 = MAX_STEP(m1, a[i + 1]);
      m2 = MAX_STEP(m2, a[i + 2]); m3 = MAX_STEP(m3, a[i + 3]);
    }
    for (; i < n; i++) m0 = MAX_STEP(m0, a[i]);
    m0 = MAX_STEP(m0, m1);
    m2 = MAX_STEP(m2, m3);
    return MAX_STEP(m0, m2);
  }
  for (; i + 4 <= n; i += 4) {
    m0 = MIN_STEP(m0, a[i]); m1 = MIN_STEP(m1, a[i + 1]);
    m2 = MIN_STEP(m2, a[i + 2]); m3 = MIN_STEP(m3, a[i + 3]);
  }
  for (; i < n; i++) m0 = MIN_STEP(m0, a[i]);
  m0 = MIN_STEP(m0, m1);
  m2 = MIN_STEP(m2, m3);
  return MIN_STEP(m0, m2);
}

/* Column-wise max/min into o[0..c): the first row, then one vectorizable pass per row. */
static void col_extreme(const Backend *be, const double *a, int64_t r, int64_t c, double *o, bool is_max) {
  if (r == 0) {
    for (int64_t j = 0; j < c; j++) o[j] = is_max ? -INFINITY : INFINITY;
    return;
  }
  memcpy(o, a, (size_t)c * sizeof(double));
  int64_t budget = 0;
  for (int64_t i = 1; i < r; i++) {
    if (cpu_tick(be, &budget, c)) return;
    const double *row = a + i * c;
    if (is_max) for (int64_t j = 0; j < c; j++) o[j] = MAX_STEP(o[j], row[j]);
    else for (int64_t j = 0; j < c; j++) o[j] = MIN_STEP(o[j], row[j]);
  }
}

/* 1-based column of the first max (min) of each row; NaN for a row holding a NaN (R's max.col)
** or an empty row (op_reduce rejects those). */
static void row_index(const Backend *be, const double *a, int64_t r, int64_t c, double *o, bool is_max) {
  int64_t budget = 0;
  for (int64_t i = 0; i < r; i++) {
    if (cpu_tick(be, &budget, c)) return;
    const double *row = a + i * c;
    double m = is_max ? -INFINITY : INFINITY;
    int64_t k = 0;                                       /* (a row of NaN only: 1) */
    for (int64_t j = 0; j < c; j++) {
      double x = row[j];                                 /* NaN never compares: skipped */
      if (is_max ? x >= m : x <= m) { m = x; k = j; }   /* ties: the last, as SystemDS */
    }
    o[i] = c == 0 ? NAN : (double)(k + 1);
  }
}

/* cumsum / cumprod: down each column; a 1xn row vector along the row. A vector either way is
** one line of r * c elements, the same sums in the same order (a column's were one row at a
** time: 6 times slower). */
static void scan(const Backend *be, const double *a, int64_t r, int64_t c, double *o, bool is_sum) {
  if (r * c == 0) return;
  int64_t budget = 0;
  if (r == 1 || c == 1) {
    int64_t n = r * c;
    double s = a[0];
    o[0] = s;
    for (int64_t j0 = 1; j0 < n; j0 += CPU_POLL) {           /* in blocks, polling between */
      if (cpu_tick(be, &budget, CPU_POLL)) return;
      int64_t j1 = n - j0 > CPU_POLL ? j0 + CPU_POLL : n;
      if (is_sum) for (int64_t j = j0; j < j1; j++) { s += a[j]; o[j] = s; }
      else for (int64_t j = j0; j < j1; j++) { s *= a[j]; o[j] = s; }
    }
    return;
  }
  memcpy(o, a, (size_t)c * sizeof(double));
  for (int64_t i = 1; i < r; i++) {
    if (cpu_tick(be, &budget, c)) return;
    const double *prev = o + (i - 1) * c, *row = a + i * c;
    double *cur = o + i * c;
    if (is_sum) for (int64_t j = 0; j < c; j++) cur[j] = prev[j] + row[j];
    else for (int64_t j = 0; j < c; j++) cur[j] = prev[j] * row[j];
  }
}

/* Row-wise softmax, stable: the row max is subtracted first. -Inf entries give 0; a row of
** only -Inf, or with a NaN or +Inf, gives NaN (IEEE: -Inf - -Inf and Inf - Inf are NaN). */
/* One row of softmax (op OP_SOFTMAX) or log-softmax (OP_LOGSOFTMAX) of the c values at row into
** orow (not row itself): the eager kernels below call it on each row, and so do the fusion
** groups that end in one (cpu_fused.c), so both give the same bits.
** log(softmax(row)) = row - max - log(sum(exp(row - max))): finite where softmax underflows. */
void cpu_row_softmax(OpKind op, const double *row, int64_t c, double *orow) {
  double m = extreme(row, c, true);
  for (int64_t j = 0; j < c; j++) orow[j] = row[j] - m;
  vm_exp(orow, orow, c);
  if (op == OP_LOGSOFTMAX) {
    double lse = m + log(sum_pairwise(orow, c));
    for (int64_t j = 0; j < c; j++) orow[j] = row[j] - lse;
  } else {
    double s = sum_pairwise(orow, c);
    for (int64_t j = 0; j < c; j++) orow[j] /= s;
  }
}

static void logsoftmax(const Backend *be, const double *a, int64_t r, int64_t c, double *o) {
  int64_t budget = 0;
  for (int64_t i = 0; i < r; i++) {
    if (cpu_tick(be, &budget, 4 * c)) return;
    cpu_row_softmax(OP_LOGSOFTMAX, a + i * c, c, o + i * c);
  }
}

static void softmax(const Backend *be, const double *a, int64_t r, int64_t c, double *o) {
  int64_t budget = 0;
  for (int64_t i = 0; i < r; i++) {
    if (cpu_tick(be, &budget, 4 * c)) return;
    cpu_row_softmax(OP_SOFTMAX, a + i * c, c, o + i * c);
  }
}

/* diag: out nx1 from a square in (its diagonal), else out nxn from a vector of n values. */
static void diag(const Backend *be, const double *a, int64_t r, int64_t c, double *o, int64_t orows, int64_t ocols) {
  if (ocols == 1 && r == c) {
    for (int64_t i = 0; i < r; i++) o[i] = a[i * c + i];
    return;
  }
  int64_t budget = 0;
  for (int64_t i = 0; i < orows && !cpu_tick(be, &budget, ocols); i++) {   /* n x n: up to gigabytes */
    memset(o + i * ocols, 0, (size_t)ocols * sizeof(double));
    o[i * ocols + i] = a[i];
  }
}

/* ifelse: o = t ? y : n elementwise, NaN where t is NaN; a 1-element input broadcasts (stride 0). */
static void ifelse(const Backend *be, Tensor *const in[], Tensor *out) {
  int64_t n = tensor_numel(out);
  const double *t = tensor_data(in[0]), *y = tensor_data(in[1]), *f = tensor_data(in[2]);
  int64_t st = tensor_numel(in[0]) == n, sy = tensor_numel(in[1]) == n, sf = tensor_numel(in[2]) == n;
  double *o = tensor_data(out);
  if (!st) {                                   /* one test for all (a staged if's select): a copy */
    double c = t[0];
    const double *src = c != c ? NULL : c != 0 ? y : f;
    int64_t ss = c != 0 ? sy : sf;
    for (int64_t i0 = 0, budget = 0; i0 < n; i0 += CPU_POLL) {
      if (cpu_tick(be, &budget, CPU_POLL)) return;
      int64_t i1 = n - i0 > CPU_POLL ? i0 + CPU_POLL : n;
      if (src && ss) memcpy(o + i0, src + i0, (size_t)(i1 - i0) * sizeof(double));
      else for (int64_t i = i0; i < i1; i++) o[i] = src ? src[0] : NAN;
    }
    return;
  }
  for (int64_t i0 = 0, budget = 0; i0 < n; i0 += CPU_POLL) {
    if (cpu_tick(be, &budget, CPU_POLL)) return;
    int64_t i1 = n - i0 > CPU_POLL ? i0 + CPU_POLL : n;
    for (int64_t i = i0; i < i1; i++) {
      double c = t[i * st];
      o[i] = c != c ? NAN : c != 0 ? y[i * sy] : f[i * sf];
    }
  }
}

/* Large inputs use both cores (cpu_parallel_for). A whole-matrix maximum or minimum is cut
** into fixed chunks of CHUNK elements, reduced in parallel and combined in chunk order; a sum
** computes subtrees of the one tree (above) in parallel and combines them: the result does
** not depend on the number of threads (runs are reproducible). Row-wise work splits by rows
** and column sums by columns. */
#define CHUNK ((int64_t)1 << 15)

typedef struct RedJob {
  OpKind op;
  const double *a;
  double *o;                 /* per-chunk results, or the output */
  int64_t n, r, c;
} RedJob;

static void chunks_range(void *ctx, int64_t lo, int64_t hi) {   /* chunks lo .. hi-1 */
  RedJob *j = ctx;
  for (int64_t k = lo; k < hi; k++) {
    int64_t a0 = k * CHUNK, a1 = a0 + CHUNK < j->n ? a0 + CHUNK : j->n;
    j->o[k] = extreme(j->a + a0, a1 - a0, j->op == OP_MAX);
  }
}

/* The parallel sum computes the tree's nodes at depth SUM_DEPTH (the subtrees of its leaves,
** cut as sum_tree cuts them) apart, then combines them as sum_tree does: the same sum. */
#define SUM_DEPTH 6

typedef struct SumJob { const double *a; int64_t n, node[1 << SUM_DEPTH][2]; double val[1 << SUM_DEPTH]; int nnode; } SumJob;

static void sum_nodes(SumJob *j, int64_t l0, int64_t l1, int depth) {   /* in order */
  if (depth == 0 || l1 - l0 == 1) {
    j->node[j->nnode][0] = l0;
    j->node[j->nnode++][1] = l1;
    return;
  }
  int64_t m = l0 + (l1 - l0) / 2;
  sum_nodes(j, l0, m, depth - 1);
  sum_nodes(j, m, l1, depth - 1);
}

static void nodes_range(void *ctx, int64_t lo, int64_t hi) {
  SumJob *j = ctx;
  for (int64_t k = lo; k < hi; k++) j->val[k] = sum_tree(j->a, j->n, j->node[k][0], j->node[k][1]);
}

static double sum_combine(const SumJob *j, int64_t l0, int64_t l1, int depth, int *k) {
  if (depth == 0 || l1 - l0 == 1) return j->val[(*k)++];
  int64_t m = l0 + (l1 - l0) / 2;
  double left = sum_combine(j, l0, m, depth - 1, k);
  return left + sum_combine(j, m, l1, depth - 1, k);
}

/* sum, max or min of n elements */
static double whole(const Backend *be, OpKind op, const double *a, int64_t n) {
  if (n < PAR_MIN) return op == OP_SUM ? sum_pairwise(a, n) : extreme(a, n, op == OP_MAX);
  if (op == OP_SUM) {
    int64_t nl = (n + SUM_LEAF - 1) / SUM_LEAF;
    SumJob j = { .a = a, .n = n };
    sum_nodes(&j, 0, nl, SUM_DEPTH);
    cpu_parallel_for(be, j.nnode, nodes_range, &j);
    int k = 0;
    return sum_combine(&j, 0, nl, SUM_DEPTH, &k);
  }
  int64_t nc = (n + CHUNK - 1) / CHUNK;
  double part[nc];
  RedJob j = { op, a, part, n, 0, 0 };
  cpu_parallel_for(be, nc, chunks_range, &j);
  return extreme(part, nc, op == OP_MAX);
}

static void cols_range(void *ctx, int64_t j0, int64_t j1) {      /* column sums j0 .. j1-1 */
  RedJob *j = ctx;
  for (int64_t k = j0; k < j1; k++) j->o[k] = 0;
  for (int64_t i = 0; i < j->r; i++)
    for (int64_t k = j0; k < j1; k++) j->o[k] += j->a[i * j->c + k];
}

double cpu_row_reduce(OpKind op, const double *row, int64_t c) {
  return op == OP_ROWSUMS ? sum_pairwise(row, c) : extreme(row, c, op == OP_ROWMAXS);
}

static void rows_range(void *ctx, int64_t i0, int64_t i1) {      /* row reductions i0 .. i1-1 */
  RedJob *j = ctx;
  for (int64_t i = i0; i < i1; i++) j->o[i] = cpu_row_reduce(j->op, j->a + i * j->c, j->c);
}

/* Runs fn over [0, m) on the cores when the matrix (r x c) is large. */
static void split(const Backend *be, int64_t m, int64_t r, int64_t c, ParFn fn, RedJob *j) {
  if (r * c >= PAR_MIN) cpu_parallel_for(be, m, fn, j);
  else fn(j, 0, m);
}

int cpu_run_reduce(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) {
  (void)p;
  const double *a = tensor_data(in[0]);
  double *o = tensor_data(out);
  int64_t r = tensor_rows(in[0]), c = tensor_cols(in[0]);
  switch (op) {
  case OP_SUM: o[0] = whole(be, OP_SUM, a, r * c); break;
  case OP_ROWSUMS: case OP_ROWMAXS: case OP_ROWMINS: {
    RedJob j = { op, a, o, r * c, r, c };
    split(be, r, r, c, rows_range, &j);
    break;
  }
  case OP_COLSUMS: {
    RedJob j = { op, a, o, r * c, r, c };
    split(be, c, r, c, cols_range, &j);
    break;
  }
  case OP_PROD: o[0] = prod_all(be, a, r * c); break;
  case OP_MAX: o[0] = whole(be, OP_MAX, a, r * c); break;
  case OP_MIN: o[0] = whole(be, OP_MIN, a, r * c); break;
  case OP_COLMAXS: col_extreme(be, a, r, c, o, true); break;
  case OP_COLMINS: col_extreme(be, a, r, c, o, false); break;
  case OP_ROWINDEXMAX: row_index(be, a, r, c, o, true); break;
  case OP_ROWINDEXMIN: row_index(be, a, r, c, o, false); break;
  case OP_CUMSUM: scan(be, a, r, c, o, true); break;
  case OP_CUMPROD: scan(be, a, r, c, o, false); break;
  case OP_SOFTMAX: softmax(be, a, r, c, o); break;
  case OP_LOGSOFTMAX: logsoftmax(be, a, r, c, o); break;
  case OP_DIAG: diag(be, a, r, c, o, tensor_rows(out), tensor_cols(out)); break;
  case OP_IFELSE: ifelse(be, in, out); break;
  default: return cpu_run_stats(be, op, out, in);      /* cpu_stats.c */
  }
  return 0;
}
