/*
** cpu_stats.c — CPU kernels of the DML statistics ops (ops.def's "DML math and statistics"
** block): running maxima and minima, row and column products, and their backward kernels.
** Inputs are contiguous (ops.c packs them); the switch sits outside the loops.
*/
#include <math.h>
#include <string.h>
#include "backend/cpu.h"
#include "backend/scalar.h"

#define MAX_STEP(m, x) ((x) > (m) || (x) != (x) ? (x) : (m))   /* NaN wins and stays */
#define MIN_STEP(m, x) ((x) < (m) || (x) != (x) ? (x) : (m))

/* cummax / cummin: down each column; a 1xn row vector along the row (as cumsum: a vector is
** one line either way). */
static void scan_ext(const Backend *be, const double *a, int64_t r, int64_t c, double *o, bool is_max) {
  if (r * c == 0) return;
  int64_t budget = 0;
  if (r == 1 || c == 1) {
    int64_t n = r * c;
    double m = a[0];
    o[0] = m;
    for (int64_t j0 = 1; j0 < n; j0 += CPU_POLL) {           /* in blocks, polling between */
      if (cpu_tick(be, &budget, CPU_POLL)) return;
      int64_t j1 = n - j0 > CPU_POLL ? j0 + CPU_POLL : n;
      if (is_max) for (int64_t j = j0; j < j1; j++) { m = MAX_STEP(m, a[j]); o[j] = m; }
      else for (int64_t j = j0; j < j1; j++) { m = MIN_STEP(m, a[j]); o[j] = m; }
    }
    return;
  }
  memcpy(o, a, (size_t)c * sizeof(double));
  for (int64_t i = 1; i < r; i++) {
    if (cpu_tick(be, &budget, c)) return;
    const double *prev = o + (i - 1) * c, *row = a + i * c;
    double *cur = o + i * c;
    if (is_max) for (int64_t j = 0; j < c; j++) cur[j] = MAX_STEP(prev[j], row[j]);
    else for (int64_t j = 0; j < c; j++) cur[j] = MIN_STEP(prev[j], row[j]);
  }
}

/* The adjoint of a running extreme along n elements d apart: each g goes to the element the
** running value came from, the latest such on ties (back to front: sum g until an owner). */
static void ext_grad_line(const double *g, const double *x, const double *y, double *o, int64_t n, int64_t d) {
  double acc = 0;
  for (int64_t i = n - 1; i >= 0; i--) {
    double xi = x[i * d], yi = y[i * d];
    acc += g[i * d];
    if (xi == yi || (xi != xi && yi != yi)) { o[i * d] = acc; acc = 0; }
    else o[i * d] = 0;
  }
}

/* Its transpose: o[i] = t at the element y[i] came from (front to back: the latest owner). */
static void ext_tan_line(const double *t, const double *x, const double *y, double *o, int64_t n, int64_t d) {
  double cur = 0;
  for (int64_t i = 0; i < n; i++) {
    double xi = x[i * d], yi = y[i * d];
    if (i == 0 || xi == yi || (xi != xi && yi != yi)) cur = t[i * d];
    o[i * d] = cur;
  }
}

static void cumext_grad(const Backend *be, Tensor *const in[], Tensor *out, bool tangent) {
  void (*line)(const double *, const double *, const double *, double *, int64_t, int64_t) = tangent ? ext_tan_line : ext_grad_line;
  const double *g = tensor_data(in[0]), *x = tensor_data(in[1]), *y = tensor_data(in[2]);
  double *o = tensor_data(out);
  int64_t r = tensor_rows(out), c = tensor_cols(out);
  if (r * c == 0) return;
  if (r == 1) { line(g, x, y, o, c, 1); return; }
  int64_t budget = 0;
  for (int64_t j = 0; j < c; j++) {
    if (cpu_tick(be, &budget, r)) return;
    line(g + j, x + j, y + j, o + j, r, c);
  }
}

/* Product of n elements d apart. */
static double prod_line(const double *a, int64_t n, int64_t d) {
  double p = 1;
  for (int64_t i = 0; i < n; i++) p *= a[i * d];
  return p;
}

/* o[i] = g times the product of the other n - 1 elements (prefix times suffix: zeros are fine). */
static void prods_grad_line(double g, const double *x, double *o, int64_t n, int64_t d) {
  double left = 1;
  for (int64_t i = 0; i < n; i++) { o[i * d] = left; left *= x[i * d]; }
  double right = 1;
  for (int64_t i = n - 1; i >= 0; i--) { o[i * d] = g == 0 ? 0 : g * o[i * d] * right; right *= x[i * d]; }
}

/* LINREC (rev false): x[i] = a[i] x[i-1] + s[i] from the start; RLINREC (rev true): x[i] = s[i] +
** a[i+1] x[i+1] from the end (ops.def); the first step is s alone. Down each column, a row at a
** time; a row vector along it. */
static void linrec(const Backend *be, Tensor *const in[], Tensor *out, bool rev) {
  const double *s = tensor_data(in[0]), *a = tensor_data(in[1]);
  double *o = tensor_data(out);
  int64_t r = tensor_rows(out), c = tensor_cols(out), budget = 0;
  int64_t n = r == 1 ? c : r, w = r == 1 ? 1 : c;       /* steps and the lines run side by side */
  if (n == 0) return;
  int64_t d = r == 1 ? 1 : c, i0 = rev ? n - 1 : 0, step = rev ? -d : d;
  memcpy(o + i0 * d, s + i0 * d, (size_t)w * sizeof(double));   /* the first step: s alone */
  for (int64_t k = 1; k < n; k++) {
    if (cpu_tick(be, &budget, w)) return;
    int64_t at = (i0 + (rev ? -k : k)) * d;          /* this step's line; the previous one is at - step */
    const double *si = s + at, *ai = a + (rev ? at - step : at), *prev = o + at - step;
    double *oi = o + at;
    for (int64_t j = 0; j < w; j++) oi[j] = ai[j] * prev[j] + si[j];
  }
}

double sc_qnorm(double p) {
  if (p != p || p < 0 || p > 1) return NAN;
  if (p == 0) return -INFINITY;
  if (p == 1) return INFINITY;
  if (p > 0.25 && p < 0.75) {                  /* the middle: Newton on erf(x / sqrt 2) / 2 = p - 0.5 */
    double q = p - 0.5, x = q * 2.5066282746310002;   /* (exact here; pnorm is flat to 2^-53 near */
    for (int it = 0; it < 8; it++)                    /* 0, so a bisection on it gave qnorm(0.5) = -7e-17) */
      x -= (0.5 * erf(x / M_SQRT2) - q) / (0.3989422804014327 * exp(-0.5 * x * x));
    return x;
  }
  double lo = -1, hi = 1;
  while (sc_pnorm(lo) > p) lo *= 2;
  while (sc_pnorm(hi) < p) hi *= 2;
  for (int it = 0; it < 2200; it++) {
    double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    if (sc_pnorm(mid) < p) lo = mid; else hi = mid;
  }
  return lo + (hi - lo) / 2;
}

int cpu_run_stats(const Backend *be, OpKind op, Tensor *out, Tensor *const in[]) {
  const double *a = tensor_data(in[0]);
  double *o = tensor_data(out);
  int64_t r = tensor_rows(in[0]), c = tensor_cols(in[0]), budget = 0;
  switch (op) {
  case OP_CUMMAX: scan_ext(be, a, r, c, o, true); break;
  case OP_CUMMIN: scan_ext(be, a, r, c, o, false); break;
  case OP_ROWPRODS: for (int64_t i = 0; i < r && !cpu_tick(be, &budget, c); i++) o[i] = prod_line(a + i * c, c, 1); break;
  case OP_COLPRODS: for (int64_t j = 0; j < c && !cpu_tick(be, &budget, r); j++) o[j] = prod_line(a + j, r, c); break;
  case OP_CUMSUMPROD: {                          /* in[0] is n x 2 (ops.c checks) */
    double yv = 0;
    for (int64_t i = 0; i < r && !cpu_tick(be, &budget, 1); i++) { yv = a[i * 2] + a[i * 2 + 1] * yv; o[i] = yv; }
    break;
  }
  case OP_LINREC: case OP_RLINREC: linrec(be, in, out, op == OP_RLINREC); break;
  case OP_CUMEXT_GRAD: cumext_grad(be, in, out, false); break;
  case OP_CUMEXT_TAN: cumext_grad(be, in, out, true); break;
  case OP_ROWPRODS_GRAD: {                       /* in[0] = g (r x 1), in[1] = x */
    const double *x = tensor_data(in[1]);
    int64_t xr = tensor_rows(in[1]), xc = tensor_cols(in[1]);
    for (int64_t i = 0; i < xr && !cpu_tick(be, &budget, 2 * xc); i++) prods_grad_line(a[i], x + i * xc, o + i * xc, xc, 1);
    break;
  }
  case OP_COLPRODS_GRAD: {                       /* in[0] = g (1 x c), in[1] = x */
    const double *x = tensor_data(in[1]);
    int64_t xr = tensor_rows(in[1]), xc = tensor_cols(in[1]);
    for (int64_t j = 0; j < xc && !cpu_tick(be, &budget, 2 * xr); j++) prods_grad_line(a[j], x + j, o + j, xr, xc);
    break;
  }
  default: return 1;
  }
  return 0;
}
