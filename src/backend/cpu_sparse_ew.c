/*
** cpu_sparse_ew.c — the CSR kernels of sparse.h's elementwise, aggregate, indexing and binding
** sections: linear passes over rowptr/col/val, values from scalar.h's formulas.
*/
#include <math.h>
#include <string.h>
#include "backend/cpu.h"
#include "backend/scalar.h"
#include "backend/sparse.h"
#include "backend/vmath.h"
#include "mem.h"

/* Every kernel reads its operands (borrowed) and writes only into out's arrays (the caller's);
** none keeps a pointer past its return. Passes over the values run on the cores (cpu_parallel_for)
** once the work reaches PAR_MIN elements; like the dense kernels, a part skipped on an interrupt
** leaves its output unfinished and the op raises the interrupt. */

/* fn over [0, n), on the cores when work (elements touched) is large. */
static void run_parts(const Backend *be, int64_t n, int64_t work, ParFn fn, void *ctx) {
  if (work >= PAR_MIN && n > 1) cpu_parallel_for(be, n, fn, ctx);
  else if (n > 0) fn(ctx, 0, n);
}

/* The ops.def rows, for the switches below that call a loop with the op a constant (its
** sc_unary/sc_binary switch then folds away inside the loop, as cpu.c's loops are per op). */
#define OP(NAME, SYM, ARITY, FLAGS)

typedef struct EwJob {
  int op;
  const SpCsr *a, *b;
  SpCsr *out;
  const double *B;           /* spk_dense_pattern's dense operand */
  int64_t ldb;
  BcastMode bc;
  bool left;                 /* the scalar / dense operand is the left one */
  double s;                  /* spk_scalar's scalar */
  double *o;                 /* the aggregates' dense output */
} EwJob;

/* ---- elementwise ---- */

/* Keeps a's pattern in out (nothing to copy when out is a itself). */
static void copy_pattern(const SpCsr *a, SpCsr *out) {
  if (out->rowptr != a->rowptr) memcpy(out->rowptr, a->rowptr, (size_t)(a->rows + 1) * sizeof(int64_t));
  if (out->col != a->col && a->nnz > 0) memcpy(out->col, a->col, (size_t)a->nnz * sizeof(int32_t));
  out->nnz = a->nnz;
}

static inline __attribute__((always_inline)) void unary_loop(int op, const double *x, double *o, int64_t lo, int64_t hi) {
  for (int64_t k = lo; k < hi; k++) o[k] = sc_unary(op, x[k]);
}

__attribute__((target_clones("avx2", "default"))) static void spk_unary_range(void *ctx, int64_t lo, int64_t hi) {
  const EwJob *j = ctx;
  const double *x = j->a->val;
  double *o = j->out->val;
  switch (j->op) {
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND)                                 \
  case OP_##NAME:                         /* as the dense loop (cpu.c): libmvec's where it has it */ \
    if (VEC != vm_none) VEC(o + lo, x + lo, hi - lo);                                         \
    else unary_loop(OP_##NAME, x, o, lo, hi);                                                 \
    break;
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y)
#include "ops/ops.def"
#undef EW1
#undef EW2
  default: unary_loop(j->op, x, o, lo, hi); break;
  }
}

void spk_unary(const Backend *be, int op, const SpCsr *a, SpCsr *out) {
  EwJob j = { .op = op, .a = a, .out = out };
  copy_pattern(a, out);
  run_parts(be, a->nnz, a->nnz, spk_unary_range, &j);
}

static inline __attribute__((always_inline)) void scalar_loop(int op, const double *x, double *o, int64_t lo, int64_t hi,
                                                              double s, bool left) {
  if (left) for (int64_t k = lo; k < hi; k++) o[k] = sc_binary(op, s, x[k]);
  else for (int64_t k = lo; k < hi; k++) o[k] = sc_binary(op, x[k], s);
}

__attribute__((target_clones("avx2", "default"))) static void spk_scalar_range(void *ctx, int64_t lo, int64_t hi) {
  const EwJob *j = ctx;
  const double *x = j->a->val;
  double *o = j->out->val;
  switch (j->op) {
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND)
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) \
  case OP_##NAME: scalar_loop(OP_##NAME, x, o, lo, hi, j->s, j->left); break;
#include "ops/ops.def"
#undef EW1
#undef EW2
  default: scalar_loop(j->op, x, o, lo, hi, j->s, j->left); break;
  }
}

void spk_scalar(const Backend *be, int op, const SpCsr *a, double s, bool s_left, SpCsr *out) {
  EwJob j = { .op = op, .a = a, .out = out, .s = s, .left = s_left };
  copy_pattern(a, out);
  run_parts(be, a->nnz, a->nnz, spk_scalar_range, &j);
}

/* Rows lo .. hi-1: the dense operand's row i is brow[col * sb] (sb 0: one value per row). */
static inline __attribute__((always_inline)) void dense_loop(int op, const EwJob *j, int64_t lo, int64_t hi) {
  const SpCsr *a = j->a;
  const int64_t *rp = a->rowptr;
  const int32_t *col = a->col;
  const double *x = a->val;
  double *o = j->out->val;
  BcastMode bc = j->bc;
  int64_t sb = bc == BC_FULL || bc == BC_ROW;
  for (int64_t i = lo; i < hi; i++) {
    const double *brow = j->B + (bc == BC_FULL || bc == BC_COL ? i * j->ldb : 0);
    if (j->left) for (int64_t k = rp[i]; k < rp[i + 1]; k++) o[k] = sc_binary(op, brow[col[k] * sb], x[k]);
    else for (int64_t k = rp[i]; k < rp[i + 1]; k++) o[k] = sc_binary(op, x[k], brow[col[k] * sb]);
  }
}

static void dense_range(void *ctx, int64_t lo, int64_t hi) {
  const EwJob *j = ctx;
  switch (j->op) {
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND)
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) \
  case OP_##NAME: dense_loop(OP_##NAME, j, lo, hi); break;
#include "ops/ops.def"
#undef EW1
#undef EW2
  default: dense_loop(j->op, j, lo, hi); break;
  }
}

void spk_dense_pattern(const Backend *be, int op, const SpCsr *a, const double *B, int64_t ldb, BcastMode bc, bool b_left, SpCsr *out) {
  EwJob j = { .op = op, .a = a, .out = out, .B = B, .ldb = ldb, .bc = bc, .left = b_left };
  copy_pattern(a, out);
  run_parts(be, a->rows, a->nnz + a->rows, dense_range, &j);
}

/* The size of the union of two sorted rows. */
static int64_t merge_count(const int32_t *ca, int64_t na, const int32_t *cb, int64_t nb) {
  int64_t p = 0, q = 0, n = 0;
  while (p < na && q < nb) {
    int32_t x = ca[p], y = cb[q];
    p += x <= y;
    q += y <= x;
    n++;
  }
  return n + (na - p) + (nb - q);
}

static void union_count_range(void *ctx, int64_t lo, int64_t hi) {   /* rowptr[i + 1] = row i's count */
  const EwJob *j = ctx;
  const SpCsr *a = j->a, *b = j->b;
  int64_t *rowptr = j->out->rowptr;
  for (int64_t i = lo; i < hi; i++) {
    int64_t pa = a->rowptr[i], pb = b->rowptr[i];
    rowptr[i + 1] = merge_count(a->col + pa, a->rowptr[i + 1] - pa, b->col + pb, b->rowptr[i + 1] - pb);
  }
}

int64_t spk_union_count(const Backend *be, const SpCsr *a, const SpCsr *b, int64_t *rowptr) {
  SpCsr view = { .rowptr = rowptr };
  EwJob j = { .a = a, .b = b, .out = &view };
  rowptr[0] = 0;
  run_parts(be, a->rows, a->nnz + b->nnz + a->rows, union_count_range, &j);
  for (int64_t i = 0; i < a->rows; i++) rowptr[i + 1] += rowptr[i];
  return rowptr[a->rows];
}

static inline __attribute__((always_inline)) void union_loop(int op, const EwJob *j, int64_t lo, int64_t hi) {
  const SpCsr *a = j->a, *b = j->b;
  int32_t *oc = j->out->col;
  double *ov = j->out->val;
  for (int64_t i = lo; i < hi; i++) {
    int64_t p = a->rowptr[i], pe = a->rowptr[i + 1], q = b->rowptr[i], qe = b->rowptr[i + 1], k = j->out->rowptr[i];
    while (p < pe && q < qe) {
      int32_t x = a->col[p], y = b->col[q];
      if (x < y) { oc[k] = x; ov[k++] = sc_binary(op, a->val[p++], 0.0); }
      else if (y < x) { oc[k] = y; ov[k++] = sc_binary(op, 0.0, b->val[q++]); }
      else { oc[k] = x; ov[k++] = sc_binary(op, a->val[p++], b->val[q++]); }
    }
    for (; p < pe; p++) { oc[k] = a->col[p]; ov[k++] = sc_binary(op, a->val[p], 0.0); }
    for (; q < qe; q++) { oc[k] = b->col[q]; ov[k++] = sc_binary(op, 0.0, b->val[q]); }
  }
}

static void union_range(void *ctx, int64_t lo, int64_t hi) {
  const EwJob *j = ctx;
  switch (j->op) {
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND)
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) \
  case OP_##NAME: union_loop(OP_##NAME, j, lo, hi); break;
#include "ops/ops.def"
#undef EW1
#undef EW2
  default: union_loop(j->op, j, lo, hi); break;
  }
}

void spk_union(const Backend *be, int op, const SpCsr *a, const SpCsr *b, SpCsr *out) {
  EwJob j = { .op = op, .a = a, .b = b, .out = out };
  run_parts(be, a->rows, a->nnz + b->nnz + a->rows, union_range, &j);
  out->nnz = out->rowptr[a->rows];
}

/* ---- aggregates ----
** Sums: the stored values' sum (an unstored entry adds +0, which changes no sum but -0's sign,
** and the dense sum starts at +0 too). Row sums use cpu_row_reduce (the dense rowSums' pairwise
** sum) over the row's stored values; column sums add in row order, as the dense colSums does, so
** they give its bits. Extremes: NaN wins (cpu_reduce.c's MAX_STEP/MIN_STEP; scalar.h's
** sc_max/sc_min combine the same way), an empty set is -Inf (max) / Inf (min), and a row, column
** or matrix with an unstored entry has a 0 among its values. */

/* Whether a rows x cols matrix with nnz stored entries has an unstored one (no overflow). */
static bool has_zeros(int64_t nnz, int64_t rows, int64_t cols) {
  return rows > 0 && cols > 0 && (rows > nnz / cols || nnz < rows * cols);
}

/* A large whole-matrix aggregate: NCHUNK fixed parts of val computed on the cores and combined
** in order, so the result does not depend on the number of threads. */
#define NCHUNK 64

static void chunk_range(void *ctx, int64_t lo, int64_t hi) {
  const EwJob *j = ctx;
  int64_t n = j->a->nnz;
  for (int64_t k = lo; k < hi; k++) {
    int64_t a0 = n * k / NCHUNK, a1 = n * (k + 1) / NCHUNK;
    j->o[k] = cpu_row_reduce((OpKind)j->op, j->a->val + a0, a1 - a0);
  }
}

static double tree_sum(const double *v, int64_t l0, int64_t l1) {
  if (l1 - l0 == 1) return v[l0];
  int64_t m = l0 + (l1 - l0) / 2;
  return tree_sum(v, l0, m) + tree_sum(v, m, l1);
}

/* op: OP_ROWSUMS (sum), OP_ROWMAXS, OP_ROWMINS over all stored values. */
static double whole(const Backend *be, int op, const SpCsr *a) {
  if (a->nnz < PAR_MIN) return cpu_row_reduce((OpKind)op, a->val, a->nnz);
  double part[NCHUNK] = { 0 };          /* (an interrupt may skip chunks) */
  EwJob j = { .op = op, .a = a, .o = part };
  cpu_parallel_for(be, NCHUNK, chunk_range, &j);
  if (op == OP_ROWSUMS) return tree_sum(part, 0, NCHUNK);
  double m = part[0];
  for (int k = 1; k < NCHUNK; k++) m = op == OP_ROWMAXS ? sc_max(m, part[k]) : sc_min(m, part[k]);
  return m;
}

double spk_sum(const Backend *be, const SpCsr *a) { return whole(be, OP_ROWSUMS, a); }

static void rows_range(void *ctx, int64_t lo, int64_t hi) {   /* row aggregates lo .. hi-1 */
  const EwJob *j = ctx;
  const SpCsr *a = j->a;
  int op = j->op;
  for (int64_t i = lo; i < hi; i++) {
    int64_t p = a->rowptr[i], n = a->rowptr[i + 1] - p;
    double v = cpu_row_reduce((OpKind)op, a->val + p, n);
    if (op != OP_ROWSUMS && n < a->cols) v = op == OP_ROWMAXS ? sc_max(v, 0.0) : sc_min(v, 0.0);
    j->o[i] = v;
  }
}

static void row_aggregate(const Backend *be, int op, const SpCsr *a, double *out) {
  EwJob j = { .op = op, .a = a, .o = out };
  run_parts(be, a->rows, a->nnz + a->rows, rows_range, &j);
}

void spk_row_sums(const Backend *be, const SpCsr *a, double *out) { row_aggregate(be, OP_ROWSUMS, a, out); }

void spk_col_sums(const SpCsr *a, double *out) {
  for (int64_t j = 0; j < a->cols; j++) out[j] = 0;
  const int32_t *col = a->col;
  const double *val = a->val;
  for (int64_t k = 0; k < a->nnz; k++) out[col[k]] += val[k];
}

/* Column maxima (is_max) or minima into out, without scratch: out first counts each column's
** stored entries, then starts at 0 for a column with an unstored entry (else at -Inf / Inf),
** then takes in the stored values. */
static void col_extreme(const Backend *be, const SpCsr *a, double *out, bool is_max) {
  double none = is_max ? -INFINITY : INFINITY;
  const int32_t *col = a->col;
  const double *val = a->val;
  for (int64_t j = 0; j < a->cols; j++) out[j] = 0;
  if (a->nnz >= a->rows) {                     /* else no column can be full */
    for (int64_t k = 0; k < a->nnz; k++) out[col[k]] += 1;    /* exact: counts < 2^53 */
    for (int64_t j = 0; j < a->cols; j++) out[j] = out[j] < (double)a->rows ? 0.0 : none;
  }
  if (is_max) for (int64_t k = 0; k < a->nnz; k++) out[col[k]] = sc_max(out[col[k]], val[k]);
  else for (int64_t k = 0; k < a->nnz; k++) out[col[k]] = sc_min(out[col[k]], val[k]);
}

void spk_extreme(const Backend *be, int op, const SpCsr *a, double *out) {
  switch (op) {
  case OP_MAX: case OP_MIN: {
    bool is_max = op == OP_MAX;
    double m = whole(be, is_max ? OP_ROWMAXS : OP_ROWMINS, a);   /* -Inf / Inf for none, as dense */
    if (has_zeros(a->nnz, a->rows, a->cols)) m = is_max ? sc_max(m, 0.0) : sc_min(m, 0.0);
    out[0] = m;
    break;
  }
  case OP_ROWMAXS: case OP_ROWMINS: row_aggregate(be, op, a, out); break;
  case OP_COLMAXS: col_extreme(be, a, out, true); break;
  case OP_COLMINS: col_extreme(be, a, out, false); break;
  default: break;
  }
}

/* ---- indexing ---- */

int64_t spk_select_count(const SpCsr *a, const int64_t *r, int64_t nr, const int64_t *c, int64_t nc, int64_t *rowptr) {
  rowptr[0] = 0;
  if (!c) {
    for (int64_t i = 0; i < nr; i++) rowptr[i + 1] = rowptr[i] + a->rowptr[r[i] + 1] - a->rowptr[r[i]];
    return rowptr[nr];
  }
  if (nc == 0 || nr == 0) {
    for (int64_t i = 0; i < nr; i++) rowptr[i + 1] = 0;
    return 0;
  }
  int64_t *times = mem_try_alloc((size_t)a->cols * sizeof(int64_t));   /* how often c names each column */
  if (!times) return -1;
  memset(times, 0, (size_t)a->cols * sizeof(int64_t));
  for (int64_t p = 0; p < nc; p++) times[c[p]]++;
  for (int64_t i = 0; i < nr; i++) {
    int64_t n = 0;
    for (int64_t k = a->rowptr[r[i]]; k < a->rowptr[r[i] + 1]; k++) n += times[a->col[k]];
    rowptr[i + 1] = rowptr[i] + n;
  }
  mem_free(times);
  return rowptr[nr];
}

/* Sorting one output row's entries by column (distinct within a row, all < nc): insertion sort
** up to INS_MAX entries, else an LSD radix sort by bytes of the column over (column, value) pairs
** in scratch (2 * the longest row): linear, where qsort's calls of a comparator cost 5-8 times
** more on rows of a hundred entries. */
#define INS_MAX 32
typedef struct ColVal { int32_t c; double v; } ColVal;

static void sort_row(int32_t *oc, double *ov, int64_t n, int passes, ColVal *pairs) {
  if (n <= INS_MAX) {
    for (int64_t i = 1; i < n; i++) {
      int32_t c = oc[i];
      double v = ov[i];
      int64_t k = i;
      for (; k > 0 && oc[k - 1] > c; k--) { oc[k] = oc[k - 1]; ov[k] = ov[k - 1]; }
      oc[k] = c;
      ov[k] = v;
    }
    return;
  }
  ColVal *src = pairs, *dst = pairs + n;
  for (int64_t i = 0; i < n; i++) src[i] = (ColVal){ oc[i], ov[i] };
  for (int pass = 0, shift = 0; pass < passes; pass++, shift += 8) {
    int64_t at[257] = { 0 };
    for (int64_t i = 0; i < n; i++) at[(((uint32_t)src[i].c >> shift) & 255) + 1]++;
    for (int d = 1; d < 257; d++) at[d] += at[d - 1];
    for (int64_t i = 0; i < n; i++) dst[at[((uint32_t)src[i].c >> shift) & 255]++] = src[i];
    ColVal *t = src;
    src = dst;
    dst = t;
  }
  for (int64_t i = 0; i < n; i++) { oc[i] = src[i].c; ov[i] = src[i].v; }
}

int spk_select(const SpCsr *a, const int64_t *r, int64_t nr, const int64_t *c, int64_t nc, SpCsr *out) {
  const int64_t *orp = out->rowptr;           /* as spk_select_count filled it */
  int32_t *oc = out->col;
  double *ov = out->val;
  if (!c) {                                   /* whole rows */
    for (int64_t i = 0; i < nr; i++) {
      int64_t p = a->rowptr[r[i]], n = a->rowptr[r[i] + 1] - p;
      if (n == 0) continue;
      memcpy(oc + orp[i], a->col + p, (size_t)n * sizeof(int32_t));
      memcpy(ov + orp[i], a->val + p, (size_t)n * sizeof(double));
    }
    out->nnz = orp[nr];
    return 0;
  }
  if (nc == 0 || nr == 0) {
    out->nnz = 0;
    return 0;
  }
  /* The output positions of each source column j: pos[start[j] .. start[j + 1]), increasing
  ** (a counting sort of 0 .. nc-1 by c). Positions are < nc <= SP_MAX_COLS (out's cols). */
  bool sorted = true;                         /* c non-decreasing: each row comes out in order */
  for (int64_t p = 1; p < nc && sorted; p++) sorted = c[p - 1] <= c[p];
  int64_t maxlen = 0;
  if (!sorted)
    for (int64_t i = 0; i < nr; i++) maxlen = orp[i + 1] - orp[i] > maxlen ? orp[i + 1] - orp[i] : maxlen;
  int64_t *start = mem_try_alloc((size_t)(a->cols + 2) * sizeof(int64_t));
  int32_t *pos = mem_try_alloc((size_t)nc * sizeof(int32_t));
  ColVal *pairs = maxlen > INS_MAX ? mem_try_alloc((size_t)(2 * maxlen) * sizeof(ColVal)) : NULL;
  if (!start || !pos || (maxlen > INS_MAX && !pairs)) {
    mem_free(start);
    mem_free(pos);
    mem_free(pairs);
    return -1;
  }
  memset(start, 0, (size_t)(a->cols + 2) * sizeof(int64_t));
  for (int64_t p = 0; p < nc; p++) start[c[p] + 2]++;
  for (int64_t j = 2; j < a->cols + 2; j++) start[j] += start[j - 1];
  for (int64_t p = 0; p < nc; p++) pos[start[c[p] + 1]++] = (int32_t)p;   /* now start[j]: j's first */
  int passes = 1;                             /* bytes of the largest position, nc - 1 */
  while (passes < 4 && ((nc - 1) >> (8 * passes)) != 0) passes++;
  for (int64_t i = 0; i < nr; i++) {
    int64_t k = orp[i];
    for (int64_t e = a->rowptr[r[i]]; e < a->rowptr[r[i] + 1]; e++) {
      int32_t j = a->col[e];
      double v = a->val[e];
      for (int64_t t = start[j]; t < start[j + 1]; t++) { oc[k] = pos[t]; ov[k++] = v; }
    }
    if (!sorted) sort_row(oc + orp[i], ov + orp[i], k - orp[i], passes, pairs);
  }
  mem_free(start);
  mem_free(pos);
  mem_free(pairs);
  out->nnz = orp[nr];
  return 0;
}

/* ---- binding ---- */

void spk_rbind(const SpCsr *a, const SpCsr *b, SpCsr *out) {
  memcpy(out->rowptr, a->rowptr, (size_t)(a->rows + 1) * sizeof(int64_t));
  for (int64_t i = 1; i <= b->rows; i++) out->rowptr[a->rows + i] = a->nnz + b->rowptr[i];
  if (a->nnz > 0) {
    memcpy(out->col, a->col, (size_t)a->nnz * sizeof(int32_t));
    memcpy(out->val, a->val, (size_t)a->nnz * sizeof(double));
  }
  if (b->nnz > 0) {
    memcpy(out->col + a->nnz, b->col, (size_t)b->nnz * sizeof(int32_t));
    memcpy(out->val + a->nnz, b->val, (size_t)b->nnz * sizeof(double));
  }
  out->nnz = a->nnz + b->nnz;
}

void spk_cbind(const SpCsr *a, const SpCsr *b, SpCsr *out) {
  int32_t shift = (int32_t)a->cols;           /* a->cols + b->cols <= SP_MAX_COLS (out's cols) */
  int64_t k = 0;
  out->rowptr[0] = 0;
  for (int64_t i = 0; i < a->rows; i++) {
    int64_t p = a->rowptr[i], n = a->rowptr[i + 1] - p;
    if (n > 0) {
      memcpy(out->col + k, a->col + p, (size_t)n * sizeof(int32_t));
      memcpy(out->val + k, a->val + p, (size_t)n * sizeof(double));
      k += n;
    }
    for (int64_t q = b->rowptr[i]; q < b->rowptr[i + 1]; q++, k++) {
      out->col[k] = b->col[q] + shift;
      out->val[k] = b->val[q];
    }
    out->rowptr[i + 1] = k;
  }
  out->nnz = k;
}

void spk_diag(const SpCsr *a, double *out) {
  int64_t n = a->rows < a->cols ? a->rows : a->cols;
  for (int64_t i = 0; i < n; i++) {
    int64_t lo = a->rowptr[i], hi = a->rowptr[i + 1];   /* binary search for column i */
    while (lo < hi) {
      int64_t m = lo + (hi - lo) / 2;
      if (a->col[m] < i) lo = m + 1;
      else hi = m;
    }
    out[i] = lo < a->rowptr[i + 1] && a->col[lo] == i ? a->val[lo] : 0.0;
  }
}

#undef OP
