/*
** cpu_conv.c — the CPU backend's deep-learning kernels (OPF_NN): conv2d and its two backward
** ops by im2col + OpenBLAS GEMM, a block of images per product; max and average pooling and their
** backward ops as direct loops over (image, channel) planes; bias_add and bias_multiply.
** Images are rows of an N x (C*H*W) matrix, NCHW row-major per row (DML's layout). Every
** result is computed in a fixed order, so it does not depend on the thread count.
*/
#include "backend/dynlibs.h"   /* OpenBLAS and LAPACKE, loaded on first use */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "backend/cpu.h"

/* ---- im2col / col2im ----
** col holds (C*R*S) rows of ld entries; an image's patches fill columns [0, P*Q) of it: row
** (c*R + r)*S + s, column p*Q + q holds the input pixel that filter tap (c, r, s) meets at
** output (p, q), or 0 in the padding. Images of a block sit side by side (ld = B*P*Q). */
static void im2col(const NnParams *g, const double *x, double *col, int64_t ld) {
  for (int64_t c = 0; c < g->C; c++)
    for (int64_t r = 0; r < g->R; r++)
      for (int64_t s = 0; s < g->S; s++) {
        double *row = col + ((c * g->R + r) * g->S + s) * ld;
        for (int64_t p = 0; p < g->P; p++) {
          int64_t h = p * g->sh - g->ph + r;
          double *o = row + p * g->Q;
          if (h < 0 || h >= g->H) { memset(o, 0, (size_t)g->Q * sizeof(double)); continue; }
          const double *xr = x + (c * g->H + h) * g->W;
          for (int64_t q = 0; q < g->Q; q++) {
            int64_t w = q * g->sw - g->pw + s;
            o[q] = (w < 0 || w >= g->W) ? 0.0 : xr[w];
          }
        }
      }
}

/* The adjoint of im2col: dx (one image, zeroed by the caller) += each entry of col at its pixel. */
static void col2im(const NnParams *g, const double *col, int64_t ld, double *dx) {
  for (int64_t c = 0; c < g->C; c++)
    for (int64_t r = 0; r < g->R; r++)
      for (int64_t s = 0; s < g->S; s++) {
        const double *row = col + ((c * g->R + r) * g->S + s) * ld;
        for (int64_t p = 0; p < g->P; p++) {
          int64_t h = p * g->sh - g->ph + r;
          if (h < 0 || h >= g->H) continue;
          double *xr = dx + (c * g->H + h) * g->W;
          const double *o = row + p * g->Q;
          for (int64_t q = 0; q < g->Q; q++) {
            int64_t w = q * g->sw - g->pw + s;
            if (w >= 0 && w < g->W) xr[w] += o[q];
          }
        }
      }
}

/* Images are processed in blocks of B side by side, so each GEMM is large (one per block, not
** per image); B keeps the patch matrix and the block's F x B*P*Q product near 32 MB. */
#define CONV_BLOCK_DOUBLES ((int64_t)4 << 20)
static int64_t block_images(const NnParams *g) {
  int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q, per = (CRS > g->F ? CRS : g->F) * PQ;
  int64_t B = per > 0 ? CONV_BLOCK_DOUBLES / per : g->N;
  if (B < 1) B = 1;
  return B < g->N ? B : g->N;
}

/* The patch matrix and the block product, from the backend's buffer cache (a call per layer
** and batch reuses the same sizes, so they cost no page faults after the first). */
typedef struct Scratch { const Backend *be; double *col, *blk; size_t ncol, nblk; } Scratch;
static void scratch_free(Scratch *sc) {
  if (sc->col) sc->be->free(sc->be, sc->col, sc->ncol);
  if (sc->blk) sc->be->free(sc->be, sc->blk, sc->nblk);
}

static int scratch(const Backend *be, Scratch *sc, int64_t ncol, int64_t nblk) {
  sc->be = be;
  sc->ncol = (size_t)ncol * sizeof(double);
  sc->nblk = (size_t)nblk * sizeof(double);
  sc->col = be->alloc(be, sc->ncol);
  sc->blk = nblk ? be->alloc(be, sc->nblk) : NULL;
  if (!sc->col || (nblk && !sc->blk)) { scratch_free(sc); return 1; }
  return 0;
}

/* blk (F x B*PQ, images side by side) <-> rows n0.. of an N x F*PQ matrix (a copy each way). */
static void unpack_block(const NnParams *g, const double *blk, int64_t B, double *rows) {
  int64_t PQ = g->P * g->Q;
  for (int64_t b = 0; b < B; b++)
    for (int64_t f = 0; f < g->F; f++)
      memcpy(rows + (b * g->F + f) * PQ, blk + f * B * PQ + b * PQ, (size_t)PQ * sizeof(double));
}

static void pack_block(const NnParams *g, const double *rows, int64_t B, double *blk) {
  int64_t PQ = g->P * g->Q;
  for (int64_t b = 0; b < B; b++)
    for (int64_t f = 0; f < g->F; f++)
      memcpy(blk + f * B * PQ + b * PQ, rows + (b * g->F + f) * PQ, (size_t)PQ * sizeof(double));
}

/* out (N x F*P*Q) = conv2d(x (N x C*H*W), filt (F x C*R*S)): per block, filt %*% im2col(x). */
static int conv2d(const Backend *be, const NnParams *g, const double *x, const double *filt, double *out) {
  int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q, CHW = g->C * g->H * g->W, Bmax = block_images(g);
  Scratch sc;
  if (scratch(be, &sc, CRS * Bmax * PQ, Bmax > 1 ? g->F * Bmax * PQ : 0) != 0) return 1;
  double *col = sc.col, *blk = sc.blk;
  int64_t budget = 0;
  for (int64_t n0 = 0; n0 < g->N && !cpu_tick(be, &budget, Bmax * PQ * g->F * CRS); n0 += Bmax) {
    int64_t B = g->N - n0 < Bmax ? g->N - n0 : Bmax;
    for (int64_t b = 0; b < B; b++) im2col(g, x + (n0 + b) * CHW, col + b * PQ, B * PQ);
    double *dst = B > 1 ? blk : out + n0 * g->F * PQ;     /* one image: straight into its row */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->F, (int)(B * PQ), (int)CRS, 1.0, filt, (int)CRS,
                col, (int)(B * PQ), 0.0, dst, (int)(B * PQ));
    if (B > 1) unpack_block(g, blk, B, out + n0 * g->F * PQ);
  }
  scratch_free(&sc);
  return 0;
}

/* dfilt (F x C*R*S) = the sum over blocks of dout_block (F x B*P*Q) %*% t(im2col(x_block)). */
static int conv2d_bwd_filter(const Backend *be, const NnParams *g, const double *x, const double *dout, double *dfilt) {
  int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q, CHW = g->C * g->H * g->W, Bmax = block_images(g);
  Scratch sc;
  if (scratch(be, &sc, CRS * Bmax * PQ, Bmax > 1 ? g->F * Bmax * PQ : 0) != 0) return 1;
  double *col = sc.col, *blk = sc.blk;
  if (g->N == 0) memset(dfilt, 0, (size_t)(g->F * CRS) * sizeof(double));
  int64_t budget = 0;
  for (int64_t n0 = 0; n0 < g->N && !cpu_tick(be, &budget, Bmax * PQ * g->F * CRS); n0 += Bmax) {
    int64_t B = g->N - n0 < Bmax ? g->N - n0 : Bmax;
    for (int64_t b = 0; b < B; b++) im2col(g, x + (n0 + b) * CHW, col + b * PQ, B * PQ);
    const double *d = dout + n0 * g->F * PQ;
    if (B > 1) { pack_block(g, d, B, blk); d = blk; }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)g->F, (int)CRS, (int)(B * PQ), 1.0, d, (int)(B * PQ),
                col, (int)(B * PQ), n0 == 0 ? 0.0 : 1.0, dfilt, (int)CRS);
  }
  scratch_free(&sc);
  return 0;
}

/* dx (N x C*H*W) = per block col2im(t(filt) %*% dout_block). */
static int conv2d_bwd_data(const Backend *be, const NnParams *g, const double *filt, const double *dout, double *dx) {
  int64_t CRS = g->C * g->R * g->S, PQ = g->P * g->Q, CHW = g->C * g->H * g->W, Bmax = block_images(g);
  Scratch sc;
  if (scratch(be, &sc, CRS * Bmax * PQ, Bmax > 1 ? g->F * Bmax * PQ : 0) != 0) return 1;
  double *col = sc.col, *blk = sc.blk;
  memset(dx, 0, (size_t)(g->N * CHW) * sizeof(double));
  int64_t budget = 0;
  for (int64_t n0 = 0; n0 < g->N && !cpu_tick(be, &budget, Bmax * PQ * g->F * CRS); n0 += Bmax) {
    int64_t B = g->N - n0 < Bmax ? g->N - n0 : Bmax;
    const double *d = dout + n0 * g->F * PQ;
    if (B > 1) { pack_block(g, d, B, blk); d = blk; }
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, (int)CRS, (int)(B * PQ), (int)g->F, 1.0, filt, (int)CRS,
                d, (int)(B * PQ), 0.0, col, (int)(B * PQ));
    for (int64_t b = 0; b < B; b++) col2im(g, col + b * PQ, B * PQ, dx + (n0 + b) * CHW);
  }
  scratch_free(&sc);
  return 0;
}

/* ---- pooling: planes (n, c) split across the cores; each writes only its own plane ---- */
typedef struct PoolJob {
  OpKind op;
  const NnParams *g;
  const double *x, *d;      /* input, and dout (backward) or G (gather) */
  double *o;
} PoolJob;

/* Index (h*W + w) of the first largest valid pixel of window (p, q) of plane x, or -1 when
** the window holds no pixel above -DBL_MAX (SystemDS's getMaxIndex: NaN is never chosen). */
static int64_t argmax(const NnParams *g, const double *x, int64_t p, int64_t q) {
  int64_t h0 = p * g->sh - g->ph, w0 = q * g->sw - g->pw, best = -1;
  double m = -DBL_MAX;
  for (int64_t h = h0 < 0 ? 0 : h0; h < h0 + g->R && h < g->H; h++)
    for (int64_t w = w0 < 0 ? 0 : w0; w < w0 + g->S && w < g->W; w++)
      if (m < x[h * g->W + w]) { m = x[h * g->W + w]; best = h * g->W + w; }
  return best;
}

static void pool_range(void *ctx, int64_t lo, int64_t hi) {
  const PoolJob *j = ctx;
  const NnParams *g = j->g;
  int64_t HW = g->H * g->W, PQ = g->P * g->Q;
  double inv = 1.0 / (double)(g->R * g->S);            /* SystemDS: padding counts in the average */
  for (int64_t pl = lo; pl < hi; pl++) {
    const double *x = j->x + pl * HW;
    for (int64_t p = 0; p < g->P; p++)
      for (int64_t q = 0; q < g->Q; q++) {
        int64_t h0 = p * g->sh - g->ph, w0 = q * g->sw - g->pw;
        int64_t ha = h0 < 0 ? 0 : h0, wa = w0 < 0 ? 0 : w0;
        int64_t hb = h0 + g->R < g->H ? h0 + g->R : g->H, wb = w0 + g->S < g->W ? w0 + g->S : g->W;
        int64_t k = pl * PQ + p * g->Q + q;
        switch (j->op) {
        case OP_MAX_POOL: {                          /* Math.max: NaN propagates */
          double m = -DBL_MAX;
          for (int64_t h = ha; h < hb; h++)
            for (int64_t w = wa; w < wb; w++) {
              double v = x[h * g->W + w];
              m = (v != v || m != m) ? NAN : (v > m ? v : m);
            }
          j->o[k] = m;
          break;
        }
        case OP_AVG_POOL: {
          double s = 0;
          for (int64_t h = ha; h < hb; h++)
            for (int64_t w = wa; w < wb; w++) s += x[h * g->W + w];
          j->o[k] = s * inv;
          break;
        }
        case OP_MAX_POOL_BWD: {
          int64_t i = argmax(g, x, p, q);
          if (i >= 0) j->o[pl * HW + i] += j->d[k];
          break;
        }
        case OP_MAX_POOL_GATHER: {
          int64_t i = argmax(g, x, p, q);
          j->o[k] = i >= 0 ? j->d[pl * HW + i] : 0.0;
          break;
        }
        case OP_AVG_POOL_BWD: {
          double v = j->d[k] * inv;
          for (int64_t h = ha; h < hb; h++)
            for (int64_t w = wa; w < wb; w++) j->o[pl * HW + h * g->W + w] += v;
          break;
        }
        default: break;
        }
      }
  }
}

static int pool(const Backend *be, OpKind op, const NnParams *g, const double *x, const double *d, double *o) {
  int64_t planes = g->N * g->C;
  if (op == OP_MAX_POOL_BWD || op == OP_AVG_POOL_BWD) memset(o, 0, (size_t)(planes * g->H * g->W) * sizeof(double));
  PoolJob j = { op, g, x, d, o };
  if (planes > 1 && planes * g->H * g->W >= PAR_MIN) cpu_parallel_for(be, planes, pool_range, &j);
  else pool_range(&j, 0, planes);
  return 0;
}

/* ---- bias: out[n, c*HW + k] = x[n, c*HW + k] (+ or *) b[c] ---- */
static void bias(const Backend *be, OpKind op, const Tensor *X, const Tensor *B, Tensor *out) {
  int64_t N = tensor_rows(X), K = tensor_cols(X), C = tensor_rows(B), HW = C ? K / C : 0;
  const double *x = tensor_data(X), *b = tensor_data(B);
  double *o = tensor_data(out);
  int64_t budget = 0;
  for (int64_t n = 0; n < N && !cpu_tick(be, &budget, K); n++)
    for (int64_t c = 0; c < C; c++) {
      const double *xr = x + n * K + c * HW;
      double *orow = o + n * K + c * HW, bc = b[c];
      if (op == OP_BIAS_ADD) for (int64_t k = 0; k < HW; k++) orow[k] = xr[k] + bc;
      else for (int64_t k = 0; k < HW; k++) orow[k] = xr[k] * bc;
    }
}

int cpu_run_nn(const Backend *be, OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) {
  if (op == OP_BIAS_ADD || op == OP_BIAS_MULTIPLY) { bias(be, op, in[0], in[1], out); return 0; }
  if (!p || !p->nn) return 1;
  const NnParams *g = p->nn;
  double *o = tensor_data(out);
  switch (op) {
  case OP_CONV2D: return conv2d(be, g, tensor_data(in[0]), tensor_data(in[1]), o);
  case OP_CONV2D_BWD_DATA: return conv2d_bwd_data(be, g, tensor_data(in[0]), tensor_data(in[1]), o);
  case OP_CONV2D_BWD_FILT: return conv2d_bwd_filter(be, g, tensor_data(in[0]), tensor_data(in[1]), o);
  case OP_MAX_POOL: case OP_AVG_POOL: return pool(be, op, g, tensor_data(in[0]), NULL, o);
  case OP_MAX_POOL_BWD: case OP_MAX_POOL_GATHER: case OP_AVG_POOL_BWD:
    return pool(be, op, g, tensor_data(in[0]), tensor_data(in[1]), o);
  default: return 1;
  }
}
