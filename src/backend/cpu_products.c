/*
** cpu_products.c — the CPU kernels of the product forms staging's rewrites make (ops.def,
** ops/products.c): dot (BLAS ddot over blocks, added pairwise), diagprod (tiled row-column
** dots), crossprod (BLAS dsyrk, then the upper triangle mirrored) and xtwxv (one pass over
** X's rows). dot, diagprod and xtwxv read their operands through their strides, so a
** transposed view is not copied.
*/
#include "backend/dynlibs.h"   /* OpenBLAS and LAPACKE, loaded on first use */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cpu.h"

/* ---- dot ---- */
#define DOT_BLOCK ((int64_t)4096)

/* n products of x[i * ix] and y[i * iy]: BLAS for unit strides, else a loop. */
static double line_dot(const double *x, int64_t ix, const double *y, int64_t iy, int64_t n) {
  if (ix == 1 && iy == 1 && n <= INT_MAX) return cblas_ddot((int)n, x, 1, y, 1);
  double s0 = 0, s1 = 0;
  int64_t i = 0;
  for (; i + 2 <= n; i += 2) { s0 += x[i * ix] * y[i * iy]; s1 += x[(i + 1) * ix] * y[(i + 1) * iy]; }
  if (i < n) s0 += x[i * ix] * y[i * iy];
  return s0 + s1;
}

/* Block sums added as a pairwise tree (a binary counter of partial sums: level l holds the sum
** of 2^l blocks), so the rounding grows with the log of the length, as the eager sum's does. */
typedef struct Cascade { double lev[64]; uint64_t n; } Cascade;

static void cascade_add(Cascade *c, double s) {
  int l = 0;
  while (c->n >> l & 1) s = c->lev[l++] + s;
  c->lev[l] = s;
  c->n++;
}

static double cascade_total(const Cascade *c) {
  double t = 0;
  bool any = false;
  for (int l = 0; l < 64; l++)
    if (c->n >> l & 1) { t = any ? c->lev[l] + t : c->lev[l]; any = true; }
  return t;
}

typedef struct DotJob { const double *x, *y; int64_t n; double *part; } DotJob;

static void dot_blocks(void *ctx, int64_t lo, int64_t hi) {
  DotJob *j = ctx;
  for (int64_t b = lo; b < hi; b++) {
    int64_t at = b * DOT_BLOCK, len = j->n - at < DOT_BLOCK ? j->n - at : DOT_BLOCK;
    j->part[b] = cblas_ddot((int)len, j->x + at, 1, j->y + at, 1);
  }
}

static bool packed(const Tensor *t) {
  return t->stride[1] == 1 && (tensor_rows(t) <= 1 || t->stride[0] == tensor_cols(t));
}

static int run_dot(const Backend *be, Tensor *out, Tensor *const in[]) {
  const Tensor *X = in[0], *Y = in[1];
  const double *x = tensor_data(X), *y = tensor_data(Y);
  int64_t r = tensor_rows(X), c = tensor_cols(X);
  Cascade acc = { { 0 }, 0 };
  int64_t budget = 0;
  if (packed(X) && packed(Y)) {                   /* one line of r * c elements */
    int64_t n = r * c, nb = (n + DOT_BLOCK - 1) / DOT_BLOCK;
    if (n >= PAR_MIN) {                           /* the blocks on every core, added in order */
      double *part = calloc((size_t)nb, sizeof(double));
      if (!part) return 1;
      DotJob j = { x, y, n, part };
      cpu_parallel_for(be, nb, dot_blocks, &j);
      for (int64_t b = 0; b < nb; b++) cascade_add(&acc, part[b]);
      free(part);
    } else {
      for (int64_t at = 0; at < n; at += DOT_BLOCK)
        cascade_add(&acc, cblas_ddot((int)(n - at < DOT_BLOCK ? n - at : DOT_BLOCK), x + at, 1, y + at, 1));
    }
  } else {                                        /* lines along the longer side, in blocks */
    bool rows = c >= r;
    int64_t nl = rows ? r : c, len = rows ? c : r;
    int64_t xs = rows ? X->stride[0] : X->stride[1], ys = rows ? Y->stride[0] : Y->stride[1];
    int64_t xi = rows ? X->stride[1] : X->stride[0], yi = rows ? Y->stride[1] : Y->stride[0];
    for (int64_t l = 0; l < nl; l++) {
      if (cpu_tick(be, &budget, len)) return 0;       /* (interrupted: the op raises it) */
      for (int64_t at = 0; at < len; at += DOT_BLOCK)
        cascade_add(&acc, line_dot(x + l * xs + at * xi, xi, y + l * ys + at * yi, yi,
                                   len - at < DOT_BLOCK ? len - at : DOT_BLOCK));
    }
  }
  tensor_data(out)[0] = cascade_total(&acc);
  return 0;
}

/* ---- diagprod: out[i] = X[i, ] . Y[, i], in tiles of rows and of the inner dimension, so
** that the tile of Y stays in cache whichever way it is laid out ---- */
#define DP_ROWS ((int64_t)64)
#define DP_INNER ((int64_t)256)

typedef struct DiagJob { const Tensor *X, *Y; double *o; } DiagJob;

static void diag_tiles(void *ctx, int64_t lo, int64_t hi) {
  const DiagJob *j = ctx;
  const double *x = tensor_data(j->X), *y = tensor_data(j->Y);
  int64_t m = tensor_rows(j->X), k = tensor_cols(j->X);
  int64_t xs0 = j->X->stride[0], xs1 = j->X->stride[1], ys0 = j->Y->stride[0], ys1 = j->Y->stride[1];
  for (int64_t t = lo; t < hi; t++) {
    int64_t i0 = t * DP_ROWS, i1 = i0 + DP_ROWS < m ? i0 + DP_ROWS : m;
    double acc[DP_ROWS];
    for (int64_t i = i0; i < i1; i++) acc[i - i0] = 0;
    for (int64_t k0 = 0; k0 < k; k0 += DP_INNER) {
      int64_t kb = k - k0 < DP_INNER ? k - k0 : DP_INNER;
      for (int64_t i = i0; i < i1; i++) acc[i - i0] += line_dot(x + i * xs0 + k0 * xs1, xs1, y + k0 * ys0 + i * ys1, ys0, kb);
    }
    for (int64_t i = i0; i < i1; i++) j->o[i] = acc[i - i0];
  }
}

static int run_diagprod(const Backend *be, Tensor *out, Tensor *const in[]) {
  int64_t m = tensor_rows(in[0]), k = tensor_cols(in[0]), nt = (m + DP_ROWS - 1) / DP_ROWS;
  DiagJob j = { in[0], in[1], tensor_data(out) };
  if (m * k >= PAR_MIN) {
    cpu_parallel_for(be, nt, diag_tiles, &j);
  } else {
    int64_t budget = 0;
    for (int64_t t = 0; t < nt; t++) {
      if (cpu_tick(be, &budget, DP_ROWS * k)) return 0;
      diag_tiles(&j, t, t + 1);
    }
  }
  return 0;
}

/* ---- crossprod: C = A^T A, or A A^T with p->trans[0]; A has unit column stride ---- */
#define SYRK_PIECE_FLOPS 16e9                     /* then a piece of the inner dimension, polled */
#define SYRK_KSTEP 1536

static int run_crossprod(const Backend *be, Tensor *out, Tensor *const in[], const OpParams *p) {
  const Tensor *A = in[0];
  bool tr = p && p->trans[0];
  int64_t n = tensor_rows(out), k = tr ? tensor_cols(A) : tensor_rows(A);
  int64_t lda = tensor_rows(A) > 1 ? A->stride[0] : (tensor_cols(A) > 1 ? tensor_cols(A) : 1);
  double *c = tensor_data(out);
  const double *a = tensor_data(A);
  if (n == 0) return 0;
  memset(c, 0, (size_t)(n * n) * sizeof(double));
  if (k == 0) return 0;
  if (n > INT_MAX || k > INT_MAX || lda > INT_MAX) return 1;
  /* cut along k into pieces of about SYRK_PIECE_FLOPS (multiples of SYRK_KSTEP), each adding
  ** into C and the interrupt flag polled between them; the cut depends on the shapes only */
  double flops = (double)n * (double)n * (double)k;
  int64_t pieces = flops < 2 * SYRK_PIECE_FLOPS ? 1 : (int64_t)(flops / SYRK_PIECE_FLOPS);
  if (pieces > k / SYRK_KSTEP) pieces = k / SYRK_KSTEP > 0 ? k / SYRK_KSTEP : 1;
  int64_t step = pieces > 1 ? k / pieces / SYRK_KSTEP * SYRK_KSTEP : k;
  const volatile sig_atomic_t *stop = cpu_par_stop_flag(be);
  for (int64_t q = 0; q < pieces; q++) {
    if (stop && *stop) return 0;                  /* (the caller discards C) */
    int64_t k0 = q * step, k1 = q == pieces - 1 ? k : k0 + step;
    const double *ak = tr ? a + k0 : a + k0 * lda;
    cblas_dsyrk(CblasRowMajor, CblasUpper, tr ? CblasNoTrans : CblasTrans, (int)n, (int)(k1 - k0), 1.0, ak, (int)lda,
                q == 0 ? 0.0 : 1.0, c, (int)n);
  }
  for (int64_t i = 0; i < n; i++)                 /* the lower triangle from the upper */
    for (int64_t j = i + 1; j < n; j++) c[j * n + i] = c[i * n + j];
  return 0;
}

/* ---- xtwxv: out = X^T (w .* (X v)) in one pass over X's rows. The rows are cut into at most
** XT_GROUPS groups by their count alone; each group adds its rows into its own n-vector (the
** groups on every core), and the groups' vectors are added as a pairwise tree: the result does
** not depend on the thread count. ---- */
#define XT_GROUPS ((int64_t)64)
#define XT_ROWS ((int64_t)256)                     /* rows per group at least */

typedef struct XtJob {
  const Tensor *X, *w, *v;
  int64_t ng;
  double *part;                                   /* ng vectors of n */
} XtJob;

static void xt_groups(void *ctx, int64_t lo, int64_t hi) {
  const XtJob *j = ctx;
  int64_t m = tensor_rows(j->X), n = tensor_cols(j->X);
  const double *x = tensor_data(j->X), *w = tensor_data(j->w), *v = tensor_data(j->v);
  int64_t xs0 = j->X->stride[0], xs1 = j->X->stride[1], vs = j->v->stride[0];
  bool wone = tensor_numel(j->w) == 1;
  int64_t ws = wone ? 0 : j->w->stride[0];
  for (int64_t gi = lo; gi < hi; gi++) {
    double *acc = j->part + gi * n;
    for (int64_t i = m * gi / j->ng; i < m * (gi + 1) / j->ng; i++) {
      const double *xi = x + i * xs0;
      double s = line_dot(xi, xs1, v, vs, n) * w[i * ws];
      if (xs1 == 1 && n <= INT_MAX) cblas_daxpy((int)n, s, xi, 1, acc, 1);
      else
        for (int64_t c = 0; c < n; c++) acc[c] += s * xi[c * xs1];
    }
  }
}

static void xt_tree(double *part, int64_t n, int64_t l0, int64_t l1) {   /* into part[l0] */
  if (l1 - l0 == 1) return;
  int64_t mid = l0 + (l1 - l0) / 2;
  xt_tree(part, n, l0, mid);
  xt_tree(part, n, mid, l1);
  double *a = part + l0 * n, *b = part + mid * n;
  for (int64_t c = 0; c < n; c++) a[c] += b[c];
}

static int run_xtwxv(const Backend *be, Tensor *out, Tensor *const in[]) {
  int64_t m = tensor_rows(in[0]), n = tensor_cols(in[0]);
  double *o = tensor_data(out);
  if (n == 0) return 0;
  int64_t ng = (m + XT_ROWS - 1) / XT_ROWS;
  if (ng > XT_GROUPS) ng = XT_GROUPS;
  if (ng < 1) ng = 1;
  double *part = calloc((size_t)(ng * n), sizeof(double));
  if (!part) return 1;
  XtJob j = { in[0], in[1], in[2], ng, part };
  if (m * n >= PAR_MIN) {
    cpu_parallel_for(be, ng, xt_groups, &j);
  } else {
    int64_t budget = 0;
    for (int64_t gi = 0; gi < ng; gi++) {
      if (cpu_tick(be, &budget, (m / ng + 1) * n)) break;
      xt_groups(&j, gi, gi + 1);
    }
  }
  xt_tree(part, n, 0, ng);
  memcpy(o, part, (size_t)n * sizeof(double));
  free(part);
  return 0;
}

int cpu_run_products(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) {
  switch (op) {
  case OP_DOT: return run_dot(be, out, in);
  case OP_DIAGPROD: return run_diagprod(be, out, in);
  case OP_CROSSPROD: return run_crossprod(be, out, in, p);
  case OP_XTWXV: return run_xtwxv(be, out, in);
  default: return 1;
  }
}
