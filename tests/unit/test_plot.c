/*
** test_plot.c — unit tests of src/plot/: pretty() ticks and hist() against R's values (recorded
** by tests/plot/reference.R), rendered PNGs read back with cairo (size, where the lines and
** points land), SVG element counts, the PDF header, the display hook, the default file names
** and the located errors. Each test runs in a fresh directory.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <cairo.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "capture.h"
#include "interp/interp.h"
#include "plot/plot_int.h"

static int setup(void **state) { return dir_fix_setup(state, "plot"); }

static void ok(DirFix *f, const char *code) {
  int st = run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 0) print_error("'%s' failed (%d): %s\n", code, st, f->err);
  assert_int_equal(st, 0);
}

/* code must fail with exactly msg (after "t.mls:L:C: error: ") at line 1, column col. */
static void expect_error(DirFix *f, const char *code, int col, const char *msg) {
  int st = run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 1) print_error("'%s': status %d, stderr: %s\n", code, st, f->err);
  assert_int_equal(st, 1);
  assert_error_message(code, f->err, msg);
  char where[32];
  snprintf(where, sizeof where, "t.mls:1:%d: error: ", col);
  if (strncmp(f->err, where, strlen(where)) != 0) print_error("'%s': not at %s: %s\n", code, where, f->err);
  assert_true(strncmp(f->err, where, strlen(where)) == 0);
  assert_int_equal(f->I->nframes, 0);
  assert_int_equal(f->I->ntmp, 0);
}

static char *slurp(const char *name, size_t *n) {
  FILE *fp = fopen(name, "rb");
  if (!fp) print_error("cannot open %s\n", name);
  assert_non_null(fp);
  fseek(fp, 0, SEEK_END);
  long len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *b = malloc((size_t)len + 1);
  assert_non_null(b);
  *n = fread(b, 1, (size_t)len, fp);
  b[*n] = 0;
  fclose(fp);
  return b;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

static bool exists(const char *name) { return access(name, F_OK) == 0; }

/* ---- pretty and hist against R ---- */

static const struct { double lo, hi; int n, min_n, count; double v[16]; } pretty_R[] = {
  /* Rscript tests/plot/reference.R: pretty([lo, hi], n, min.n) */
  { 0, 1, 5, 1, 6, { 0, 0.20000000000000001, 0.40000000000000002, 0.60000000000000009, 0.80000000000000004, 1 } },
  { 1, 10, 5, 1, 6, { 0, 2, 4, 6, 8, 10 } },
  { -0.080000000000000002, 2.0800000000000001, 5, 1, 7, { -0.5, 0, 0.5, 1, 1.5, 2, 2.5 } },
  { 0.29999999999999999, 97.099999999999994, 5, 1, 6, { 0, 20, 40, 60, 80, 100 } },
  { -3.7000000000000002, 12.199999999999999, 5, 1, 5, { -5, 0, 5, 10, 15 } },
  { 1.0000000000000001e-05, 3.0000000000000001e-05, 5, 1, 5, { 9.9999999999999991e-06, 1.4999999999999999e-05, 1.9999999999999998e-05, 2.5000000000000001e-05, 3.0000000000000001e-05 } },
  { 123456, 123999, 5, 1, 7, { 123400, 123500, 123600, 123700, 123800, 123900, 124000 } },
  { -1, -0.5, 5, 1, 6, { -1, -0.90000000000000002, -0.80000000000000004, -0.69999999999999996, -0.59999999999999998, -0.5 } },
  { 0, 0.040000000000000001, 5, 1, 5, { 0, 0.01, 0.02, 0.029999999999999999, 0.040000000000000001 } },
  { 5, 5, 5, 1, 2, { 0, 5 } },
  { -2.5099999999999998, 2.5099999999999998, 5, 1, 7, { -3, -2, -1, 0, 1, 2, 3 } },
  { 0.001, 1000, 5, 1, 6, { 0, 200, 400, 600, 800, 1000 } },
  { 0, 100, 10, 3, 11, { 0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100 } },
  { -2.2999999999999998, 3.1000000000000001, 12, 1, 13, { -2.5, -2, -1.5, -1, -0.5, 0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5 } },
  { 0.95999999999999996, 10.44, 5, 1, 7, { 0, 2, 4, 6, 8, 10, 12 } },
  { -1.0800000000000001, 1.0800000000000001, 5, 1, 7, { -1.5, -1, -0.5, 0, 0.5, 1, 1.5 } },
  { 17, 23, 3, 1, 5, { 16, 18, 20, 22, 24 } },
};

static void test_pretty_as_R(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof pretty_R / sizeof pretty_R[0]; i++) {
    double v[64];
    int n = plot_pretty(pretty_R[i].lo, pretty_R[i].hi, pretty_R[i].n, pretty_R[i].min_n, v, 64);
    if (n != pretty_R[i].count) print_error("pretty([%g, %g], %d): %d values, R %d\n", pretty_R[i].lo, pretty_R[i].hi, pretty_R[i].n, n, pretty_R[i].count);
    assert_int_equal(n, pretty_R[i].count);
    double step = pretty_R[i].v[1] - pretty_R[i].v[0];
    for (int k = 0; k < n; k++) {
      if (fabs(v[k] - pretty_R[i].v[k]) > 1e-9 * step) print_error("pretty case %zu value %d: %.17g, R %.17g\n", i, k, v[k], pretty_R[i].v[k]);
      assert_true(fabs(v[k] - pretty_R[i].v[k]) <= 1e-9 * step);
    }
  }
  double v[4];
  assert_int_equal(plot_pretty(0, NAN, 5, 1, v, 4), 0);
  assert_int_equal(plot_pretty(0, 1, 5, 1, v, 4), 4);       /* stops at max */
}

/* R's labels of these ticks (format(), as axis() writes them; tests/plot/reference.R) */
static const struct { int n; double v[8]; const char *s[8]; } labels_R[] = {
  { 4, { 0, 1.0000000000000001e-05, 2.0000000000000002e-05, 3.0000000000000001e-05 }, { "0e+00", "1e-05", "2e-05", "3e-05" } },
  { 5, { 1.0000000000000001e-05, 1.5000000000000002e-05, 2.0000000000000002e-05, 2.5000000000000005e-05, 3.0000000000000001e-05 }, { "1.0e-05", "1.5e-05", "2.0e-05", "2.5e-05", "3.0e-05" } },
  { 4, { 0.20000000000000001, 0.40000000000000002, 0.60000000000000009, 0.80000000000000004 }, { "0.2", "0.4", "0.6", "0.8" } },
  { 2, { 123400, 123500 }, { "123400", "123500" } },
  { 3, { 100000, 200000, 300000 }, { "1e+05", "2e+05", "3e+05" } },
  { 5, { -1, -0.5, 0, 0.5, 1 }, { "-1.0", "-0.5", "0.0", "0.5", "1.0" } },
  { 3, { 0, 20, 40 }, { "0", "20", "40" } },
  { 2, { 1000000000000000, 2000000000000000 }, { "1e+15", "2e+15" } },
  { 2, { 0.001, 0.002 }, { "0.001", "0.002" } },
  { 5, { 1, 10, 100, 1000, 10000 }, { "1", "10", "100", "1000", "10000" } },
  { 3, { 0, 100000, 200000 }, { "0e+00", "1e+05", "2e+05" } },
  { 3, { -1.9999999999999999e-07, 0, 1.9999999999999999e-07 }, { "-2e-07", "0e+00", "2e-07" } },
  { 2, { 9.9999999999999998e-121, 1.0000000000000001e-110 }, { "1e-120", "1e-110" } },
};

/* R's ticks on a log axis over usr [lo, hi] (log10; axis() after plot.window(log = "x")) */
static const struct { double lo, hi; int n; double v[16]; } log_R[] = {
  { -0.080000000000000002, 2.0800000000000001, 7, { 1, 2, 5, 10, 20, 50, 100 } },
  { -0.16, 4.1600000000000001, 5, { 1, 10, 100, 1000, 10000 } },
  { 0.10000000000000001, 0.90000000000000002, 6, { 2, 3, 4, 5, 6, 7 } },
  { -3.2000000000000002, 3.2000000000000002, 7, { 0.001, 0.01, 0.10000000000000001, 1, 10, 100, 1000 } },
  { 0, 3, 7, { 1, 5, 10, 50, 100, 500, 1000 } },
  { -20, 20, 6, { 9.9999999999999995e-21, 9.9999999999999998e-13, 9.9999999999999991e-05, 10000, 1000000000000, 1e+20 } },
  { 0.5, 1.5, 6, { 5, 10, 15, 20, 25, 30 } },
  { 2.2999999999999998, 2.3500000000000001, 5, { 200, 205, 210, 215, 220 } },
};

static void test_tick_labels_and_colours(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof labels_R / sizeof labels_R[0]; i++) {
    char out[8][PLOT_LABEL];
    plot_tick_labels(labels_R[i].v, labels_R[i].n, out);
    for (int k = 0; k < labels_R[i].n; k++) {
      if (strcmp(out[k], labels_R[i].s[k])) print_error("labels case %zu: '%s', R '%s'\n", i, out[k], labels_R[i].s[k]);
      assert_string_equal(out[k], labels_R[i].s[k]);
    }
  }
  for (size_t i = 0; i < sizeof log_R / sizeof log_R[0]; i++) {   /* log axes: the ticks inside */
    double t[64];
    int n = plot_log_ticks(log_R[i].lo, log_R[i].hi, t, 64), k = 0;
    for (int j = 0; j < n; j++)
      if (t[j] >= pow(10, log_R[i].lo) * (1 - 1e-9) && t[j] <= pow(10, log_R[i].hi) * (1 + 1e-9)) t[k++] = t[j];
    if (k != log_R[i].n) print_error("log case %zu: %d ticks, R %d\n", i, k, log_R[i].n);
    assert_int_equal(k, log_R[i].n);
    for (int j = 0; j < k; j++) assert_true(fabs(t[j] - log_R[i].v[j]) <= 1e-9 * log_R[i].v[j]);
  }
  PlotColor c;
  assert_true(plot_color_name("steelblue", &c));
  assert_true(fabs(c.r - 70 / 255.0) < 1e-12 && fabs(c.g - 130 / 255.0) < 1e-12 && fabs(c.b - 180 / 255.0) < 1e-12);
  assert_true(plot_color_name("#FF000080", &c));
  assert_true(c.r == 1 && c.g == 0 && fabs(c.a - 128 / 255.0) < 1e-12);
  assert_false(plot_color_name("#FF00", &c));
  assert_false(plot_color_name("nosuch", &c));
  assert_true(plot_color_index(2, &c));                     /* R 4's palette()[2], "#DF536B" */
  assert_true(fabs(c.r - 0xDF / 255.0) < 1e-12 && fabs(c.g - 0x53 / 255.0) < 1e-12);
  assert_true(plot_color_index(9, &c) && c.r == 0 && c.g == 0 && c.b == 0);   /* recycled: black */
  assert_false(plot_color_index(1.5, &c));
  double r[2];
  plot_extend_range(0, 10, r);
  assert_true(fabs(r[0] + 0.4) < 1e-12 && fabs(r[1] - 10.4) < 1e-12);
  plot_extend_range(5, 5, r);                               /* R: 5 +- 40%, then 4% */
  assert_true(fabs(r[0] - (3 - 0.16)) < 1e-12 && fabs(r[1] - (7 + 0.16)) < 1e-12);
}

static void test_hist_as_R(void **state) {
  DirFix *f = *state;
  /* R: hist(x1, plot=FALSE) and hist(x1, breaks=[0, 1, 2, 5, 10]), hist(x2, breaks=20) */
  ok(f, "x1 = matrix(\"0.5 1 1 1.5 2 2 2 2.5 3 3.5 4 4 4.2 5 7.3 9.9 10\", rows=17, cols=1)\n"
        "h = hist(x1, plot=FALSE); print(toString(t(h$breaks))); print(toString(t(h$counts)))\n"
        "h = hist(x1, breaks=matrix(\"0 1 2 5 10\", rows=5, cols=1), plot=FALSE)\n"
        "print(toString(t(h$breaks))); print(toString(t(h$counts))); print(toString(t(h$density)))\n"
        "h = hist(seq(1, 50)^1.5 / 10, breaks=20, plot=FALSE); print(toString(t(h$counts))); print(toString(t(h$mids[1:3])))\n");
  assert_string_equal(f->out,
    "0 2 4 6 8 10\n7 5 2 1 2\n"
    "0 1 2 5 10\n3 4 7 3\n0.176470588235294 0.235294117647059 0.137254901960784 0.0352941176470588\n"
    "7 4 4 3 3 3 2 3 2 3 2 2 2 2 2 2 2 2\n1 3 5\n");
  assert_false(exists("mlsplot001.png"));                  /* plot=FALSE draws nothing */
}

/* ---- rendered PNGs, read back with cairo ---- */

/* red or blue, or their antialiased blend with the white background (a 1-pixel line between two
** pixel rows is half red in each) */
static bool is_red(uint32_t p) { int r = (p >> 16) & 255, g = (p >> 8) & 255, b = p & 255; return r > 200 && r - g > 60 && g == b; }
static bool is_blue(uint32_t p) { int r = (p >> 16) & 255, g = (p >> 8) & 255, b = p & 255; return b > 200 && b - r > 60 && r == g; }
static bool is_dark(uint32_t p) { return ((p >> 16) & 255) < 100 && ((p >> 8) & 255) < 100 && (p & 255) < 100; }

typedef struct Png { cairo_surface_t *s; int w, h, stride; const unsigned char *d; } Png;

static Png png_open(const char *name) {
  Png p;
  p.s = cairo_image_surface_create_from_png(name);
  assert_int_equal(cairo_surface_status(p.s), CAIRO_STATUS_SUCCESS);
  p.w = cairo_image_surface_get_width(p.s);
  p.h = cairo_image_surface_get_height(p.s);
  p.stride = cairo_image_surface_get_stride(p.s);
  p.d = cairo_image_surface_get_data(p.s);
  return p;
}

static uint32_t px(const Png *p, int x, int y) { return *(const uint32_t *)(p->d + (size_t)y * p->stride + 4 * (size_t)x); }

/* The mean row (or column) of the pixels satisfying pred in the first band of rows (columns)
** where more than half of the span is such pixels: the box's edges. */
static double band_of(const Png *p, bool (*pred)(uint32_t), bool rows, bool from_end) {
  int n = rows ? p->h : p->w, span = rows ? p->w : p->h;
  double sum = 0, wsum = 0;
  bool in = false;
  for (int k = 0; k < n; k++) {
    int i = from_end ? n - 1 - k : k, c = 0;
    for (int j = 0; j < span; j++) c += pred(rows ? px(p, j, i) : px(p, i, j));
    if (c > span / 2) { sum += i; wsum++; in = true; }
    else if (in) break;
  }
  return wsum ? sum / wsum : -1;
}

static void test_png_lines_land_where_expected(void **state) {
  DirFix *f = *state;
  ok(f, "plot([0, 10], [0.5, 0.5], type=\"l\", col=\"red\", xlim=[0, 10], ylim=[0, 2], file=\"h.png\", width=400, height=300)\n"
        "lines([0, 10], [1.5, 1.5], col=\"blue\")\nr = dev.off()\nprint(r)\n");
  assert_string_equal(f->out, "h.png\n");
  size_t n;
  char *b = slurp("h.png", &n);                             /* the header: signature, IHDR size */
  assert_true(n > 33 && memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0 && memcmp(b + 12, "IHDR", 4) == 0);
  const unsigned char *u = (const unsigned char *)b;
  assert_int_equal((u[16] << 24) | (u[17] << 16) | (u[18] << 8) | u[19], 400);
  assert_int_equal((u[20] << 24) | (u[21] << 16) | (u[22] << 8) | u[23], 300);
  free(b);
  Png p = png_open("h.png");
  assert_int_equal(p.w, 400);
  assert_int_equal(p.h, 300);
  /* the box: R's margins of 4.1 (top, left), 5.1 (bottom), 2.1 (right) lines of 14.4 px */
  double top = band_of(&p, is_dark, true, false), bot = band_of(&p, is_dark, true, true);
  double left = band_of(&p, is_dark, false, false), right = band_of(&p, is_dark, false, true);
  if (fabs(top - (4.1 * 14.4 - 0.5)) > 1 || fabs(bot - (300 - 5.1 * 14.4 - 0.5)) > 1 || fabs(left - (4.1 * 14.4 - 0.5)) > 1 || fabs(right - (400 - 2.1 * 14.4 - 0.5)) > 1)
    print_error("box rows %.2f %.2f, columns %.2f %.2f\n", top, bot, left, right);
  assert_true(fabs(top - (4.1 * 14.4 - 0.5)) <= 1);
  assert_true(fabs(bot - (300 - 5.1 * 14.4 - 0.5)) <= 1);
  assert_true(fabs(left - (4.1 * 14.4 - 0.5)) <= 1);
  assert_true(fabs(right - (400 - 2.1 * 14.4 - 0.5)) <= 1);
  /* the y axis shows [0, 2] plus 4%: y = v is at bot - (v + 0.08) / 2.16 of the box height */
  double want_red = bot - (0.5 + 0.08) / 2.16 * (bot - top), want_blue = bot - (1.5 + 0.08) / 2.16 * (bot - top);
  double want_x0 = left + 0.4 / 10.8 * (right - left), want_x1 = right - 0.4 / 10.8 * (right - left);
  int nred = 0, nblue = 0, minx = p.w, maxx = -1;
  for (int y = 0; y < p.h; y++)
    for (int x = 0; x < p.w; x++) {
      uint32_t c = px(&p, x, y);
      if (is_red(c)) {
        nred++;
        if (fabs(y - want_red) > 1.5) print_error("red pixel at row %d, want %.1f\n", y, want_red);
        assert_true(fabs(y - want_red) <= 1.5);
        if (x < minx) minx = x;
        if (x > maxx) maxx = x;
      }
      if (is_blue(c)) {
        nblue++;
        assert_true(fabs(y - want_blue) <= 1.5);
      }
    }
  assert_true(fabs(minx - want_x0) <= 1.5 && fabs(maxx - want_x1) <= 1.5);
  assert_true(nred >= 0.9 * (want_x1 - want_x0) && nblue >= 0.9 * (want_x1 - want_x0));
  cairo_surface_destroy(p.s);
}

static void test_png_points_and_clipping(void **state) {
  DirFix *f = *state;
  /* plot(y) alone: x = 1..3; a point far outside the limits is clipped away */
  ok(f, "plot([1, 2, 3], type=\"n\", xlim=[1, 3], ylim=[1, 3], file=\"p.png\")\n"
        "points([1, 2, 3], [1, 2, 3], pch=16, col=\"blue\")\npoints([50], [50], pch=16, col=\"red\")\ndev.off()\n");
  Png p = png_open("p.png");
  assert_int_equal(p.w, 640);
  assert_int_equal(p.h, 480);
  double l = 4.1 * 14.4, r = 640 - 2.1 * 14.4, t = 4.1 * 14.4, b = 480 - 5.1 * 14.4;
  for (int k = 1; k <= 3; k++) {                            /* [1, 3] + 4% on each axis */
    double x = l + (k - 0.92) / 2.16 * (r - l), y = b - (k - 0.92) / 2.16 * (b - t);
    assert_true(is_blue(px(&p, (int)x, (int)y)));
    assert_false(is_blue(px(&p, (int)x + 8, (int)y)));      /* a point, not a line */
  }
  int nblue = 0, nred = 0;
  for (int y = 0; y < p.h; y++)
    for (int x = 0; x < p.w; x++) { nblue += is_blue(px(&p, x, y)); nred += is_red(px(&p, x, y)); }
  assert_int_equal(nred, 0);
  assert_true(nblue > 3 * 20 && nblue < 3 * 80);           /* three discs of radius 3.6 */
  cairo_surface_destroy(p.s);
}

/* ---- SVG and PDF ---- */

static void test_svg_elements(void **state) {
  DirFix *f = *state;
  ok(f, "plot(seq(1, 5), type=\"l\", col=\"red\", file=\"a.svg\", main=\"svg\")\nlines(seq(5, 1), col=\"blue\", lty=2)\n"
        "points([1, 2, 3], [2, 2, 2], col=\"#00FF00\", pch=1)\n"
        "legend(\"topleft\", list(\"up\", \"down\"), col=list(\"red\", \"blue\"), lty=[1, 2])\n"
        "h = hist(matrix(\"1 2 2 3 3 3\", rows=6, cols=1), breaks=matrix(\"0 1 2 3\", rows=4, cols=1), col=\"#0000FF\", file=\"h.svg\")\ndev.off()\n");
  assert_false(exists("mlsplot001.png"));
  size_t n;
  char *s = slurp("a.svg", &n);
  assert_true(strstr(s, "<svg") != NULL && strstr(s, "width=\"640pt\"") != NULL);
  /* one path per line (the series and its legend sample), one per point */
  assert_int_equal(count(s, "stroke:rgb(100%,0%,0%)"), 2);
  assert_int_equal(count(s, "stroke:rgb(0%,0%,100%)"), 2);
  assert_int_equal(count(s, "stroke:rgb(0%,100%,0%)"), 3);
  assert_int_equal(count(s, "stroke-dasharray"), 2);       /* lty=2: the line and its sample */
  free(s);
  s = slurp("h.svg", &n);                                   /* 3 bars: filled and outlined */
  assert_int_equal(count(s, "fill:rgb(0%,0%,100%)"), 3);
  free(s);
}

static void test_pdf_header(void **state) {
  DirFix *f = *state;
  ok(f, "plot(seq(1, 10), seq(1, 10)^2, type=\"b\", file=\"q.PDF\", width=300, height=200)\ndev.off()\n");
  size_t n;
  char *s = slurp("q.PDF", &n);
  assert_true(n > 100 && memcmp(s, "%PDF-", 5) == 0);
  assert_true(memmem(s + n - 16, 16, "%%EOF", 5) != NULL);  /* (binary streams: no strstr) */
  assert_true(memmem(s, n, "/MediaBox [ 0 0 300 200 ]", 25) != NULL);
  free(s);
}

/* ---- when figures are finished, default names, the display hook ---- */

static void test_default_files_and_finish(void **state) {
  DirFix *f = *state;
  ok(f, "plot(seq(1, 3))\n");
  assert_string_equal(f->out, "");                          /* open: not written yet */
  assert_false(exists("mlsplot001.png"));
  ok(f, "lines(seq(3, 1))\nplot(seq(1, 4))\n");              /* a new plot finishes the first */
  assert_string_equal(f->out, "plot: mlsplot001.png\n");
  assert_true(exists("mlsplot001.png"));
  assert_false(exists("mlsplot002.png"));
  ok(f, "r = dev.off()\nprint(r)\nprint(dev.off())\n");     /* dev.off() with none open: NULL */
  assert_string_equal(f->out, "plot: mlsplot002.png\nmlsplot002.png\nNULL\n");
  ok(f, "plot(seq(1, 2))\n");
  assert_false(exists("mlsplot003.png"));
  plot_flush(f->I);                                         /* the REPL's flush after an input */
  assert_true(exists("mlsplot003.png"));
  unlink("mlsplot003.png");
  ok(f, "title(main=\"later\")\n");
  FILE *saved = f->I->out;
  f->I->out = fopen("/dev/null", "w");
  plot_free(f->I);                                          /* the end of a script */
  fclose(f->I->out);
  f->I->out = saved;
  assert_true(exists("mlsplot003.png"));
  assert_null(f->I->plot);
}

typedef struct Shown { int n; size_t len; char mime[32]; unsigned char head[8]; } Shown;

static void on_display(Interp *I, const char *mime, const unsigned char *data, size_t len, void *ctx) {
  (void)I;
  Shown *s = ctx;
  s->n++;
  s->len = len;
  snprintf(s->mime, sizeof s->mime, "%s", mime);
  memcpy(s->head, data, len < 8 ? len : 8);
}

static void test_display_hook(void **state) {
  DirFix *f = *state;
  Shown sh = { 0 };
  f->I->display = on_display;
  f->I->display_ctx = &sh;
  ok(f, "plot(seq(1, 3), type=\"l\")\n");
  plot_flush(f->I);
  assert_int_equal(sh.n, 1);
  assert_string_equal(sh.mime, "image/png");
  assert_memory_equal(sh.head, "\x89PNG\r\n\x1a\n", 8);
  assert_true(sh.len > 1000);
  plot_flush(f->I);                                         /* nothing changed */
  assert_int_equal(sh.n, 1);
  ok(f, "points(seq(3, 1))\n");                             /* the open figure again, updated */
  plot_flush(f->I);
  assert_int_equal(sh.n, 2);
  ok(f, "plot(seq(1, 2))\nplot(seq(2, 1))\nplot(seq(1, 5), file=\"kept.svg\")\n");
  plot_flush(f->I);                                         /* two finished; file= goes to its file */
  assert_int_equal(sh.n, 4);
  assert_true(exists("kept.svg"));
  assert_false(exists("mlsplot001.png"));
  assert_string_equal(f->out, "");
}

/* text that is not UTF-8 is drawn with '?' (cairo refuses it: the figure would be lost) */
static void test_text_not_utf8(void **state) {
  DirFix *f = *state;
  ok(f, "plot(seq(1, 3), main=\"a\xff\xc3" "b\", file=\"u.svg\")\nlegend(list(\"\xe2\x82\"))\ntitle(xlab=\"\xc3\xa9t\xc3\")\ndev.off()\n");
  assert_true(exists("u.svg"));
  assert_string_equal(f->I->plot->cur ? "open" : "closed", "closed");
}

/* ---- errors ---- */

static void test_errors_located(void **state) {
  DirFix *f = *state;
  expect_error(f, "plot(seq(1, 3), file=\"a.jpg\")", 1, "bad argument #10 to 'plot' (file 'a.jpg' must end in .png, .svg or .pdf)");
  expect_error(f, "plot(seq(1, 3), file=\"png\")", 1, "bad argument #10 to 'plot' (file 'png' must end in .png, .svg or .pdf)");
  expect_error(f, "x = 1; plot(seq(1, 3), seq(1, 4))", 8, "plot: x and y lengths differ (3 and 4)");
  expect_error(f, "lines(seq(1, 3))", 1, "lines: no plot to draw on: call plot() or hist() first");
  expect_error(f, "plot(seq(1, 3), col=\"nocolour\")", 1, "bad argument #7 to 'plot' (unknown colour 'nocolour')");
  expect_error(f, "plot(seq(1, 3), type=\"z\")", 1, "bad argument #3 to 'plot' (type must be \"p\", \"l\", \"b\", \"o\" or \"n\", got \"z\")");
  expect_error(f, "plot(matrix(1, rows=2, cols=3))", 1, "bad argument #1 to 'plot' (a vector (n x 1 or 1 x n) expected, got a 2x3 matrix)");
  expect_error(f, "plot(\"a\")", 1, "bad argument #1 to 'plot' (numeric vector expected, got a string)");
  expect_error(f, "plot(seq(1, 3), xlim=[2, 1])", 1, "bad argument #8 to 'plot' (xlim must be two finite numbers, the first smaller)");
  expect_error(f, "plot(seq(1, 3), width=20)", 1, "bad argument #11 to 'plot' (width must be a whole number in [100, 10000], got 20)");
  expect_error(f, "plot(seq(1, 3), pch=26)", 1, "bad argument #15 to 'plot' (pch must be 0-25 or one ASCII character, got 26)");
  expect_error(f, "plot(seq(1, 3), pch=\"ab\")", 1, "bad argument #15 to 'plot' (pch must be 0-25 or one ASCII character, got \"ab\")");
  expect_error(f, "plot(seq(0, 3), log=\"x\", xlim=[0, 3])", 1, "bad argument #8 to 'plot' (xlim must be positive on a log axis)");
  expect_error(f, "plot([-1, 0], [1, 2], log=\"x\")", 1, "plot: x has no positive finite values for a log axis: give xlim");
  expect_error(f, "plot(seq(1, 3), log=\"z\")", 1, "bad argument #16 to 'plot' (log must be \"\", \"x\", \"y\" or \"xy\", got \"z\")");
  expect_error(f, "plot(seq(1, 3), cex=0)", 1, "bad argument #17 to 'plot' (cex must be in (0, 100], got 0)");
  expect_error(f, "abline(h=1)", 1, "abline: no plot to draw on: call plot() or hist() first");
  expect_error(f, "image(\"a\")", 1, "bad argument #1 to 'image' (a matrix z expected, got a string)");
  expect_error(f, "image([1, 2], [1, 2, 3], matrix(1, rows=2, cols=3), col=list(\"red\", \"bad\"))", 1, "bad argument #7 to 'image' (unknown colour 'bad')");
  expect_error(f, "image([1, 2], [2, 1, 3], matrix(1, rows=2, cols=3))", 1, "bad argument #2 to 'image' (y must be finite and increasing)");
  expect_error(f, "image([1, 2], [1, 2], matrix(1, rows=2, cols=3))", 1, "bad argument #2 to 'image' (y must have ncol(z) = 3 values (centres) or 4 (edges), got 2)");
  expect_error(f, "barplot([1, 1/0])", 1, "bad argument #1 to 'barplot' (heights must be finite (or NaN: no bar))");
  expect_error(f, "barplot([1, 2], names.arg=list(\"a\"))", 1, "bad argument #2 to 'barplot' (names.arg must have 2 names, got 1)");
  expect_error(f, "boxplot(list([1, 2], \"a\"))", 1, "bad argument #1 to 'boxplot' (group 2: numeric vector expected, got a string)");
  expect_error(f, "boxplot([1, 2], range=-1)", 1, "bad argument #8 to 'boxplot' (range must be a finite number >= 0, got -1)");
  expect_error(f, "matplot(seq(1, 3), matrix(1, rows=4, cols=2))", 1, "matplot: x and y lengths differ (3 and 4)");
  expect_error(f, "par(mfrow=[0, 1])", 1, "bad argument #1 to 'par' (mfrow must be two whole numbers in [1, 20], got 0)");
  expect_error(f, "plot(0/0)", 1, "plot: y has no finite values: give ylim");
  expect_error(f, "hist(seq(1, 10), breaks=[2, 3])", 1, "bad argument #2 to 'hist' (breaks [2, 3] do not span the data [1, 10])");
  expect_error(f, "hist(seq(1, 10), breaks=[3, 2, 11])", 1, "bad argument #2 to 'hist' (breaks must be finite and increasing)");
  assert_false(exists("mlsplot001.png"));                  /* no figure was started */
  ok(f, "plot(seq(1, 3), file=\"/nonexistent/dir/a.png\")\n");
  expect_error(f, "dev.off()", 1, "dev.off: cannot write '/nonexistent/dir/a.png': No such file or directory");
  ok(f, "plot(seq(1, 3), file=\"ok.png\")\n");
  expect_error(f, "legend(\"middle\", list(\"a\"))", 1, "bad argument #1 to 'legend' (unknown position 'middle' (topright, topleft, bottomright, bottomleft, top, bottom, left, right, center))");
  expect_error(f, "legend(list(\"a\", \"b\"), col=list(\"red\", \"nocolour\"))", 1, "bad argument #3 to 'legend' (unknown colour 'nocolour')");
  expect_error(f, "points(seq(1, 3), seq(1, 2))", 1, "points: x and y lengths differ (3 and 2)");
  expect_error(f, "legend(list(\"a\"), pch=26)", 1, "bad argument #5 to 'legend' (pch must be 0-25 or NaN (none), got 26)");
  expect_error(f, "axis(5)", 1, "bad argument #1 to 'axis' (side must be 1 (below), 2 (left), 3 (above) or 4 (right), got 5)");
  expect_error(f, "axis(1, at=[1, 2], labels=list(\"a\"))", 1, "bad argument #3 to 'axis' (at and labels lengths differ (2 and 1))");
  expect_error(f, "mtext(\"a\", side=0)", 1, "bad argument #2 to 'mtext' (side must be 1 (below), 2 (left), 3 (above) or 4 (right), got 0)");
  expect_error(f, "text(1, 1, labels=list(list()))", 1, "bad argument #3 to 'text' (labels must be strings or numbers, got a list of 0)");
  expect_error(f, "text(1, 1, pos=5)", 1, "bad argument #5 to 'text' (pos must be 1 (below), 2 (left), 3 (above) or 4 (right), got 5)");
  expect_error(f, "abline()", 1, "abline: nothing to draw: give a and b, h or v");
  expect_error(f, "abline([1, 2, 3])", 1, "bad argument #1 to 'abline' (a must be two numbers (intercept and slope) when b is not given)");
  ok(f, "legend(list(\"a\", \"b\"), col=[2, 3], pch=[16, 0/0], lty=[0, 2])\ntitle(xlab=\"t\")\ndev.off()\n");
  assert_true(exists("ok.png"));
  f->I->no_write = true;
  expect_error(f, "plot(seq(1, 3))", 1, "plot: cannot draw: writing files is turned off");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_pretty_as_R),
    cmocka_unit_test(test_tick_labels_and_colours),
    cmocka_unit_test_setup_teardown(test_hist_as_R, setup, dir_fix_teardown),
    cmocka_unit_test_setup_teardown(test_png_lines_land_where_expected, setup, dir_fix_teardown),
    cmocka_unit_test_setup_teardown(test_png_points_and_clipping, setup, dir_fix_teardown),
    cmocka_unit_test_setup_teardown(test_svg_elements, setup, dir_fix_teardown),
    cmocka_unit_test_setup_teardown(test_pdf_header, setup, dir_fix_teardown),
    cmocka_unit_test_setup_teardown(test_default_files_and_finish, setup, dir_fix_teardown),
    cmocka_unit_test_setup_teardown(test_display_hook, setup, dir_fix_teardown),
    cmocka_unit_test_setup_teardown(test_text_not_utf8, setup, dir_fix_teardown),
    cmocka_unit_test_setup_teardown(test_errors_located, setup, dir_fix_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
