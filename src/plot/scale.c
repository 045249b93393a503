/* scale.c — what the axes and colours of a figure need: round tick values (the idea of R's
** pretty()), the 4% range extension of R's xaxs="r", tick label text, and colour names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "plot/plot_int.h"

/*
** (Returns 0 also for a range whose steps doubles cannot represent: a subnormal width.)
** Ticks: the step is 1, 2, 5 or 10 times a power of ten U chosen so that about n intervals
** cover [lo, hi]. Going up from U to 2U, 5U, 10U is taken while the larger step is "not much
** further" from the ideal cell (hi - lo) / n than the smaller one is below it: the distances are
** weighed with a bias of 1.5 (2.75 for the 5U step), so large round steps win ties, as R's
** high.u.bias does. The ticks then run from the largest multiple of the step at or below lo to
** the smallest at or above hi; fewer than min_n intervals are widened symmetrically.
*/
int plot_pretty(double lo, double hi, int n, int min_n, double *out, int max) {
  if (!isfinite(lo) || !isfinite(hi) || max < 1) return 0;
  if (lo > hi) { double t = lo; lo = hi; hi = t; }
  if (n < 1) n = 1;
  double dx = hi - lo, cell;
  if (dx == 0 || dx < 1e-10 * fmax(fabs(lo), fabs(hi))) { cell = fabs(lo) > 0 ? fabs(lo) : 1; n = 1; if (min_n < 1) min_n = 1; }
  else cell = isfinite(dx) ? dx / n : hi / n - lo / n;   /* (a span past DBL_MAX) */
  const double bias = 1.5, bias5 = 0.5 + 1.5 * bias;
  double U = pow(10.0, floor(log10(cell))), unit = U;
  if (2 * U - cell < bias * (cell - unit)) {
    unit = 2 * U;
    if (5 * U - cell < bias5 * (cell - unit)) {
      unit = 5 * U;
      if (10 * U - cell < bias * (cell - unit)) unit = 10 * U;
    }
  }
  /* a range past what doubles can step through (subnormal cells: U underflows to 0; a span
  ** over DBL_MAX: it overflows) or too many steps for an int: no ticks (fuzz_plot found both) */
  if (!(unit > 0) || !isfinite(unit) || !isfinite(lo / unit) || !isfinite(hi / unit)) return 0;
  double ns = floor(lo / unit + 1e-7), nu = ceil(hi / unit - 1e-7);
  while (ns * unit > lo + 1e-10 * unit) ns--;
  while (nu * unit < hi - 1e-10 * unit) nu++;
  if (!(nu - ns < 1e9)) return 0;
  int k = (int)(0.5 + nu - ns);
  if (k < min_n) {
    k = min_n - k;
    if (ns >= 0) { nu += k / 2; ns -= k / 2 + k % 2; }
    else { ns -= k / 2; nu += k / 2 + k % 2; }
  }
  if (nu == ns) nu++;
  int count = 0;
  for (double i = ns; i <= nu + 0.5 && count < max; i++) {
    double v = i * unit;
    if (fabs(v) < 1e-12 * unit) v = 0;
    out[count++] = v;
  }
  return count;
}

void plot_extend_range(double lo, double hi, double out[2]) {
  if (lo == hi) {                               /* one value: R widens by 40% (or +-1 at zero) */
    double d = lo == 0 ? 1 : 0.4 * fabs(lo);
    lo -= d;
    hi += d;
  }
  double d = 0.04 * (hi - lo);
  out[0] = lo - d;
  out[1] = hi + d;
}

/* R's scientific() for 7 digits: |x| = m * 10^kpower with m rounded to 7 significant digits,
** nsig of them needed (trailing zeros dropped). */
static void sci_parts(double x, int *kpower, int *nsig) {
  if (x == 0) { *kpower = 0; *nsig = 1; return; }
  char b[40];
  snprintf(b, sizeof b, "%.6e", fabs(x));       /* d.dddddde+XX, rounded as printf rounds */
  *kpower = atoi(strchr(b, 'e') + 1);
  char dig[8] = { b[0], b[2], b[3], b[4], b[5], b[6], b[7], 0 };
  int ns = 7;
  while (ns > 1 && dig[ns - 1] == '0') ns--;
  *nsig = ns;
}

/*
** R's formatReal (format.c) with digits 7 and scipen 0 over the whole vector: the widths of
** fixed notation (as many decimals as the most precise value needs) and of scientific notation
** (as many mantissa digits as the most precise value needs) are compared, and fixed wins ties.
** R's axis() labels its ticks so (labelformat in plot.c): 0 1e-05 2e-05 3e-05 are scientific,
** 0.0 0.5 1.0 fixed.
*/
void plot_tick_labels(const double *v, int n, char (*out)[PLOT_LABEL]) {
  int rgt = 0, mxsl = 1, mxl = -1000, mnl = 1000, mxns = 1, neg = 0;
  bool any = false;
  for (int i = 0; i < n; i++) {
    if (!isfinite(v[i])) continue;
    int kp, ns;
    sci_parts(v[i], &kp, &ns);
    int ng = v[i] < 0, left = kp + 1, sleft = ng + (left <= 0 ? 1 : left), right = ns - left;
    if (ng) neg = 1;
    if (right > rgt) rgt = right;
    if (left > mxl) mxl = left;
    if (left < mnl) mnl = left;
    if (sleft > mxsl) mxsl = sleft;
    if (ns > mxns) mxns = ns;
    any = true;
  }
  if (any && mxl < 0) mxsl = 1 + neg;
  if (rgt < 0) rgt = 0;
  int wF = mxsl + rgt + (rgt != 0), e = (mxl > 100 || mnl <= -99) ? 2 : 1, d = mxns - 1;
  int wE = neg + (d > 0) + d + 4 + e;
  bool fixed = !any || wF <= wE;
  for (int i = 0; i < n; i++) {
    double x = v[i] == 0 ? 0 : v[i];            /* (no "-0") */
    if (!isfinite(x)) snprintf(out[i], PLOT_LABEL, isnan(x) ? "NaN" : x > 0 ? "Inf" : "-Inf");
    else if (fixed) snprintf(out[i], PLOT_LABEL, "%.*f", rgt > 15 ? 15 : rgt, x);
    else snprintf(out[i], PLOT_LABEL, "%.*e", d, x);
    if (out[i][0] == '-') {                     /* a value that rounds to zero: "0.0", not "-0.0" */
      bool zero = true;
      for (const char *p = out[i] + 1; *p && *p != 'e'; p++)
        if (*p != '0' && *p != '.') zero = false;
      if (zero) memmove(out[i], out[i] + 1, strlen(out[i]));
    }
  }
}

/*
** R's GLpretty (graphics.c) picks the kind of log axis from the decades p1 = ceil(lo) to
** p2 = floor(hi) inside it; CreateAtVector (plot.c) then lists the ticks: over more than 3
** decades the powers of ten (every k-th when there are more than 5 intervals), over 3 the
** steps 1 and 5, over 1 or 2 the steps 1, 2 and 5; under one decade pretty() of the values.
*/
int plot_log_ticks(double lo, double hi, double *out, int max) {
  if (!isfinite(lo) || !isfinite(hi) || lo >= hi || hi - lo > 600 || max < 1) return 0;
  double ul = pow(10, lo), uh = pow(10, hi), p1 = ceil(lo), p2 = floor(hi);
  if (p2 <= p1 && uh / ul > 10.0) { p1 = ceil(lo - 0.5); p2 = floor(hi + 0.5); }
  if (p2 <= p1) return plot_pretty(ul, uh, 5, 5 / 3, out, max);
  double umin = ul * (1 - 1e-12), umax = uh * (1 + 1e-12), dn = pow(10, p1);
  int kind = p2 - p1 <= 2 ? 3 : p2 - p1 <= 3 ? 2 : 1, count = 0;
  if (kind == 1) {
    int ne = (int)(p2 - p1 + 0.25) / 5;       /* every ne-th decade (R 4.2 draws these) */
    if (ne < 1) ne = 1;
    double rng = pow(10, ne);
    for (; dn < umax && count < max; dn *= rng) out[count++] = dn;
    return count;
  }
  if (kind == 3 && 0.2 * dn >= umin) out[count++] = 0.2 * dn;
  if (0.5 * dn >= umin && count < max) out[count++] = 0.5 * dn;
  for (; dn <= umax && count < max; dn *= 10) {
    out[count++] = dn;
    if (kind == 3 && 2 * dn <= umax && count < max) out[count++] = 2 * dn;
    if (5 * dn <= umax && count < max) out[count++] = 5 * dn;
  }
  return count;
}

static const struct { const char *name; unsigned rgb; } color_names[] = {
  { "black", 0x000000 }, { "white", 0xFFFFFF }, { "red", 0xFF0000 }, { "green", 0x00FF00 },
  { "blue", 0x0000FF }, { "cyan", 0x00FFFF }, { "magenta", 0xFF00FF }, { "yellow", 0xFFFF00 },
  { "gray", 0xBEBEBE }, { "grey", 0xBEBEBE }, { "orange", 0xFFA500 }, { "purple", 0xA020F0 },
  { "brown", 0xA52A2A }, { "pink", 0xFFC0CB }, { "darkgreen", 0x006400 }, { "darkblue", 0x00008B },
  { "darkred", 0x8B0000 }, { "darkorange", 0xFF8C00 }, { "lightblue", 0xADD8E6 },
  { "lightgray", 0xD3D3D3 }, { "lightgrey", 0xD3D3D3 }, { "darkgray", 0xA9A9A9 },
  { "darkgrey", 0xA9A9A9 }, { "navy", 0x000080 }, { "steelblue", 0x4682B4 }, { "skyblue", 0x87CEEB },
  { "gold", 0xFFD700 }, { "violet", 0xEE82EE }, { "tomato", 0xFF6347 }, { "forestgreen", 0x228B22 },
  { "firebrick", 0xB22222 },
};

static PlotColor rgb_of(unsigned rgb, double a) {
  PlotColor c = { ((rgb >> 16) & 255) / 255.0, ((rgb >> 8) & 255) / 255.0, (rgb & 255) / 255.0, a };
  return c;
}

PlotColor plot_rgb(unsigned rgb) { return rgb_of(rgb, 1); }

bool plot_color_name(const char *name, PlotColor *c) {
  if (name[0] == '#') {
    size_t len = strlen(name + 1);
    if (len != 6 && len != 8) return false;
    for (size_t i = 1; i <= len; i++)
      if (!strchr("0123456789abcdefABCDEF", name[i])) return false;
    unsigned long v = strtoul(name + 1, NULL, 16);
    *c = len == 6 ? rgb_of((unsigned)v, 1) : rgb_of((unsigned)(v >> 8), (v & 255) / 255.0);
    return true;
  }
  if (!strcasecmp(name, "transparent")) { *c = rgb_of(0xFFFFFF, 0); return true; }
  for (size_t i = 0; i < sizeof color_names / sizeof color_names[0]; i++)
    if (!strcasecmp(name, color_names[i].name)) { *c = rgb_of(color_names[i].rgb, 1); return true; }
  return false;
}

/* R 4's default palette() */
static const unsigned palette[8] = { 0x000000, 0xDF536B, 0x61D04F, 0x2297E6, 0x28E2E5, 0xCD0BBC, 0xF5C710, 0x9E9E9E };

bool plot_color_index(double k, PlotColor *c) {
  if (!(k >= 0 && k == floor(k) && k < 1e9)) return false;
  if (k == 0) { *c = rgb_of(0xFFFFFF, 1); return true; }   /* 0: the background */
  *c = rgb_of(palette[((int)k - 1) % 8], 1);
  return true;
}
