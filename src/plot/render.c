/* render.c — draws a Figure with cairo (R's base-graphics layout: margins of 5.1, 4.1, 4.1 and
** 2.1 lines, a box, pretty ticks) and writes it as PNG, SVG or PDF, or PNG bytes in memory. */
#include <cairo.h>
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "plot/plot_int.h"

typedef struct Region { double l, r, t, b; } Region;

static double map_x(const Figure *f, const Region *R, double x) {
  return R->l + (x - f->usr[0]) / (f->usr[1] - f->usr[0]) * (R->r - R->l);
}
static double map_y(const Figure *f, const Region *R, double y) {
  return R->b - (y - f->usr[2]) / (f->usr[3] - f->usr[2]) * (R->b - R->t);
}

static void set_color(cairo_t *cr, PlotColor c) { cairo_set_source_rgba(cr, c.r, c.g, c.b, c.a); }

static void set_line(cairo_t *cr, int lty, double lwd) {
  static const double dash[][4] = { { 0 }, { 0 }, { 4, 4 }, { 1, 3 }, { 1, 3, 4, 3 }, { 7, 3 }, { 2, 2, 6, 2 } };
  static const int ndash[] = { 0, 0, 2, 2, 4, 2, 4 };
  cairo_set_line_width(cr, lwd);
  int k = lty >= 0 && lty <= 6 ? lty : 1;
  double d[4];
  for (int i = 0; i < ndash[k]; i++) d[i] = dash[k][i] * lwd;
  cairo_set_dash(cr, d, ndash[k], 0);
}

/* Text with its anchor (x, y): hadj 0 left, 0.5 centre, 1 right; vadj 0 baseline, 0.5 middle of
** the digits, 1 their top; rotated by angle (radians, counter-clockwise on the page). */
static void text_at(cairo_t *cr, const char *s, double x, double y, double hadj, double vadj, double angle) {
  cairo_text_extents_t te;
  cairo_text_extents(cr, s, &te);
  double cap = 0.72 * PLOT_FONT;
  cairo_save(cr);
  cairo_translate(cr, x, y);
  cairo_rotate(cr, -angle);
  cairo_move_to(cr, -hadj * te.x_advance, vadj * cap);
  cairo_show_text(cr, s);
  cairo_restore(cr);
}

static void font(cairo_t *cr, double size, bool bold) {
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, size);
}

/* One point symbol (R's pch) centred at (x, y), its own path. */
static void point(cairo_t *cr, int pch, double x, double y, PlotColor col) {
  double r = 0.3 * PLOT_FONT;
  set_color(cr, col);
  set_line(cr, 1, 1);
  cairo_new_path(cr);
  switch (pch) {
  case 0: case 15: cairo_rectangle(cr, x - r, y - r, 2 * r, 2 * r); break;
  case 2: case 17:
    cairo_move_to(cr, x, y - 1.15 * r);
    cairo_line_to(cr, x + r, y + 0.6 * r);
    cairo_line_to(cr, x - r, y + 0.6 * r);
    cairo_close_path(cr);
    break;
  case 3:
    cairo_move_to(cr, x - 1.2 * r, y); cairo_line_to(cr, x + 1.2 * r, y);
    cairo_move_to(cr, x, y - 1.2 * r); cairo_line_to(cr, x, y + 1.2 * r);
    break;
  case 4:
    cairo_move_to(cr, x - r, y - r); cairo_line_to(cr, x + r, y + r);
    cairo_move_to(cr, x - r, y + r); cairo_line_to(cr, x + r, y - r);
    break;
  case 5: case 18:
    cairo_move_to(cr, x, y - 1.3 * r); cairo_line_to(cr, x + 1.3 * r, y);
    cairo_line_to(cr, x, y + 1.3 * r); cairo_line_to(cr, x - 1.3 * r, y);
    cairo_close_path(cr);
    break;
  case 20: cairo_arc(cr, x, y, 0.66 * r, 0, 2 * M_PI); break;
  default: cairo_arc(cr, x, y, r, 0, 2 * M_PI); break;   /* 1, 16, 19 */
  }
  if (pch >= 15) cairo_fill(cr);
  else cairo_stroke(cr);
}

/* Ctrl-C (the flag the figure carries) stops a long series: cairo draws a million points or
** segments in seconds to minutes, so the loops look every 1024 of them. */
static bool stopped(const Figure *f, int64_t i) { return (i & 1023) == 0 && f->stop && *f->stop; }

static void draw_series(cairo_t *cr, const Figure *f, const Region *R, const PlotSeries *s) {
  if (s->kind & SER_RECTS) {
    double y0 = map_y(f, R, 0);
    for (int64_t i = 0; i < s->n && !stopped(f, i); i++) {
      double xa = map_x(f, R, s->x[i]), xb = map_x(f, R, s->x[i + 1]), yt = map_y(f, R, s->y[i]);
      if (s->fill.a > 0) {
        cairo_new_path(cr);
        cairo_rectangle(cr, xa, yt, xb - xa, y0 - yt);
        set_color(cr, s->fill);
        cairo_fill(cr);
      }
      cairo_new_path(cr);
      cairo_rectangle(cr, xa, yt, xb - xa, y0 - yt);
      set_color(cr, s->col);
      set_line(cr, s->lty, s->lwd);
      cairo_stroke(cr);
    }
    return;
  }
  if (s->kind & SER_LINE) {               /* one path; a non-finite value lifts the pen */
    set_color(cr, s->col);
    set_line(cr, s->lty, s->lwd);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_new_path(cr);
    bool down = false;
    for (int64_t i = 0; i < s->n; i++) {
      if (!isfinite(s->x[i]) || !isfinite(s->y[i])) { down = false; continue; }
      double x = map_x(f, R, s->x[i]), y = map_y(f, R, s->y[i]);
      if (down) cairo_line_to(cr, x, y);
      else cairo_move_to(cr, x, y);
      down = true;
      if (i > 0 && (i & 1023) == 0) {       /* stroked 1024 segments at a time (the joint there */
        if (f->stop && *f->stop) return;    /* is two butt ends, not a round join) */
        cairo_stroke(cr);
        cairo_move_to(cr, x, y);
      }
    }
    cairo_stroke(cr);
  }
  if (s->kind & SER_POINTS)
    for (int64_t i = 0; i < s->n && !stopped(f, i); i++)
      if (isfinite(s->x[i]) && isfinite(s->y[i]))
        point(cr, s->pch, map_x(f, R, s->x[i]), map_y(f, R, s->y[i]), s->col);
}

static void draw_axes(cairo_t *cr, const Figure *f, const Region *R) {
  double ticks[64];
  char lab[64];
  font(cr, PLOT_FONT, false);
  set_color(cr, (PlotColor){ 0, 0, 0, 1 });
  set_line(cr, 1, 1);
  for (int axis = 0; axis < 2; axis++) {
    double lo = f->usr[2 * axis], hi = f->usr[2 * axis + 1], eps = 1e-9 * (hi - lo);
    int n = plot_pretty(lo, hi, 5, 5 / 3, ticks, 64), k = 0;
    for (int i = 0; i < n; i++)
      if (ticks[i] >= lo - eps && ticks[i] <= hi + eps) ticks[k++] = ticks[i];
    if (k == 0) continue;
    double step = k > 1 ? ticks[1] - ticks[0] : 1, tick = 0.5 * PLOT_LINE;
    cairo_new_path(cr);
    if (axis == 0) {
      cairo_move_to(cr, map_x(f, R, ticks[0]), R->b);
      cairo_line_to(cr, map_x(f, R, ticks[k - 1]), R->b);
      for (int i = 0; i < k; i++) {
        cairo_move_to(cr, map_x(f, R, ticks[i]), R->b);
        cairo_line_to(cr, map_x(f, R, ticks[i]), R->b + tick);
      }
    } else {
      cairo_move_to(cr, R->l, map_y(f, R, ticks[0]));
      cairo_line_to(cr, R->l, map_y(f, R, ticks[k - 1]));
      for (int i = 0; i < k; i++) {
        cairo_move_to(cr, R->l, map_y(f, R, ticks[i]));
        cairo_line_to(cr, R->l - tick, map_y(f, R, ticks[i]));
      }
    }
    cairo_stroke(cr);
    for (int i = 0; i < k; i++) {
      plot_tick_label(ticks[i], step, lab, sizeof lab);
      if (axis == 0) text_at(cr, lab, map_x(f, R, ticks[i]), R->b + 0.95 * PLOT_LINE, 0.5, 1, 0);
      else text_at(cr, lab, R->l - 0.95 * PLOT_LINE, map_y(f, R, ticks[i]), 0.5, 0, M_PI / 2);
    }
  }
}

static void draw_legend(cairo_t *cr, const Region *R, const PlotLegend *L) {
  if (L->n == 0) return;
  font(cr, PLOT_FONT, false);
  double tw = 0;
  bool any_line = false;
  for (int i = 0; i < L->n; i++) {
    cairo_text_extents_t te;
    cairo_text_extents(cr, L->items[i].label, &te);
    if (te.x_advance > tw) tw = te.x_advance;
    if (L->items[i].lty > 0) any_line = true;
  }
  double pad = 0.5 * PLOT_LINE, sample = any_line ? 2 * PLOT_LINE : PLOT_LINE, row = PLOT_LINE;
  double w = pad + sample + pad + tw + pad, h = pad + L->n * row + pad;
  double inset = 0.5 * PLOT_LINE, x, y;
  switch (L->pos) {
  case LEG_TOPLEFT: case LEG_LEFT: case LEG_BOTTOMLEFT: x = R->l + inset; break;
  case LEG_TOP: case LEG_CENTER: case LEG_BOTTOM: x = (R->l + R->r - w) / 2; break;
  default: x = R->r - inset - w; break;
  }
  switch (L->pos) {
  case LEG_TOPLEFT: case LEG_TOP: case LEG_TOPRIGHT: y = R->t + inset; break;
  case LEG_LEFT: case LEG_CENTER: case LEG_RIGHT: y = (R->t + R->b - h) / 2; break;
  default: y = R->b - inset - h; break;
  }
  cairo_new_path(cr);
  cairo_rectangle(cr, x, y, w, h);
  set_color(cr, (PlotColor){ 1, 1, 1, 1 });
  cairo_fill_preserve(cr);
  set_color(cr, (PlotColor){ 0, 0, 0, 1 });
  set_line(cr, 1, 1);
  cairo_stroke(cr);
  for (int i = 0; i < L->n; i++) {
    const PlotLegendItem *it = &L->items[i];
    double cy = y + pad + (i + 0.5) * row, sx = x + pad;
    if (it->lty > 0) {
      set_color(cr, it->col);
      set_line(cr, it->lty, 1.5);
      cairo_new_path(cr);
      cairo_move_to(cr, sx, cy);
      cairo_line_to(cr, sx + sample, cy);
      cairo_stroke(cr);
    }
    if (it->pch >= 0) point(cr, it->pch, sx + sample / 2, cy, it->col);
    set_color(cr, (PlotColor){ 0, 0, 0, 1 });
    text_at(cr, it->label, sx + sample + pad, cy, 0, 0.5, 0);
  }
}

/* The plot region: the margins from the edges, its sides on pixel centres so that the 1-unit
** box and axis lines are crisp (one pixel row or column each). */
static Region region_of(const Figure *f) {
  Region R = { floor(PLOT_MAR_LEFT) + 0.5, floor(f->width - PLOT_MAR_RIGHT) + 0.5, floor(PLOT_MAR_TOP) + 0.5,
               floor(f->height - PLOT_MAR_BOTTOM) + 0.5 };
  return R;
}

void plot_render(const Figure *f, cairo_t *cr) {
  Region R = region_of(f);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_save(cr);                          /* the data, clipped to the plot region */
  cairo_rectangle(cr, R.l, R.t, R.r - R.l, R.b - R.t);
  cairo_clip(cr);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  for (int i = 0; i < f->ns; i++) draw_series(cr, f, &R, &f->s[i]);
  cairo_restore(cr);
  set_color(cr, (PlotColor){ 0, 0, 0, 1 });
  set_line(cr, 1, 1);
  if (f->box) {
    cairo_new_path(cr);
    cairo_rectangle(cr, R.l, R.t, R.r - R.l, R.b - R.t);
    cairo_stroke(cr);
  }
  if (f->axes) draw_axes(cr, f, &R);
  set_color(cr, (PlotColor){ 0, 0, 0, 1 });
  if (f->main && *f->main) {
    font(cr, 1.2 * PLOT_FONT, true);
    text_at(cr, f->main, (R.l + R.r) / 2, R.t - 1.7 * PLOT_LINE, 0.5, 0, 0);
  }
  font(cr, PLOT_FONT, false);
  if (f->xlab && *f->xlab) text_at(cr, f->xlab, (R.l + R.r) / 2, R.b + 3.2 * PLOT_LINE, 0.5, 0, 0);
  if (f->ylab && *f->ylab) text_at(cr, f->ylab, R.l - 2.6 * PLOT_LINE, (R.t + R.b) / 2, 0.5, 0, M_PI / 2);
  for (int i = 0; i < f->nleg; i++) draw_legend(cr, &R, &f->leg[i]);
}

/* ---- output ---- */

typedef struct Sink { FILE *fp; unsigned char *buf; size_t len, cap; bool failed; } Sink;

static cairo_status_t sink_write(void *closure, const unsigned char *data, unsigned int n) {
  Sink *k = closure;
  if (k->fp) {
    if (fwrite(data, 1, n, k->fp) != n) { k->failed = true; return CAIRO_STATUS_WRITE_ERROR; }
    return CAIRO_STATUS_SUCCESS;
  }
  if (k->len + n > k->cap) {
    size_t cap = k->cap ? k->cap : 65536;
    while (cap < k->len + n) cap *= 2;
    unsigned char *b = realloc(k->buf, cap);
    if (!b) { k->failed = true; return CAIRO_STATUS_NO_MEMORY; }
    k->buf = b;
    k->cap = cap;
  }
  memcpy(k->buf + k->len, data, n);
  k->len += n;
  return CAIRO_STATUS_SUCCESS;
}

#if defined(__SANITIZE_ADDRESS__)          /* gcc's */
#define PLOT_ASAN 1
#elif defined(__has_feature)               /* clang's */
#if __has_feature(address_sanitizer)
#define PLOT_ASAN 1
#endif
#endif
#ifdef PLOT_ASAN
/* Under ASan only (gcc's or clang's: the fuzzing build, tests/fuzz/fuzz_plot.c): cairo and fontconfig keep font caches for the life of the process (and
** fontconfig loses a few patterns of them); they are freed at exit, so that LeakSanitizer (which
** checks after the handlers registered later than its own) reports only the interpreter's leaks. */
static void release_font_caches(void) {
  cairo_debug_reset_static_data();
  void (*fc_fini)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "FcFini");
  if (fc_fini) fc_fini();
}
static void font_caches_at_exit(void) {
  static bool registered;                  /* process-wide, as the caches are */
  if (!registered && atexit(release_font_caches) == 0) registered = true;
}
#else
static void font_caches_at_exit(void) {}
#endif

/* Renders f into the sink in format fmt; returns cairo's status. */
static cairo_status_t render_to(const Figure *f, PlotFormat fmt, Sink *k) {
  font_caches_at_exit();
  cairo_surface_t *s;
  if (fmt == PF_SVG) s = cairo_svg_surface_create_for_stream(sink_write, k, f->width, f->height);
  else if (fmt == PF_PDF) s = cairo_pdf_surface_create_for_stream(sink_write, k, f->width, f->height);
  else s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, f->width, f->height);
  cairo_t *cr = cairo_create(s);
  plot_render(f, cr);
  cairo_status_t st = cairo_status(cr);
  cairo_destroy(cr);
  if (fmt == PF_PNG && st == CAIRO_STATUS_SUCCESS) st = cairo_surface_write_to_png_stream(s, sink_write, k);
  cairo_surface_finish(s);
  if (st == CAIRO_STATUS_SUCCESS) st = cairo_surface_status(s);
  cairo_surface_destroy(s);
  return st;
}

bool plot_write_file(const Figure *f, const char *path, char *err, size_t errn) {
  size_t n = strlen(path) + 32;
  char *tmp = malloc(n);
  if (!tmp) { snprintf(err, errn, "cannot write '%s': out of memory", path); return false; }
  snprintf(tmp, n, "%s.tmp%ld", path, (long)getpid());
  Sink k = { fopen(tmp, "wb"), NULL, 0, 0, false };
  if (!k.fp) {
    snprintf(err, errn, "cannot write '%s': %s", path, strerror(errno));
    free(tmp);
    return false;
  }
  cairo_status_t st = render_to(f, f->fmt, &k);
  int e = k.failed ? errno : 0;
  if (f->stop && *f->stop) {                /* interrupted: the old file stays */
    fclose(k.fp);
    unlink(tmp);
    snprintf(err, errn, "cannot write '%s': interrupted", path);
    free(tmp);
    return false;
  }
  if (fclose(k.fp) != 0 && !e) e = errno ? errno : EIO;
  if (st == CAIRO_STATUS_SUCCESS && !e && rename(tmp, path) != 0) e = errno;
  if (st != CAIRO_STATUS_SUCCESS || e) {
    unlink(tmp);
    snprintf(err, errn, "cannot write '%s': %s", path, e ? strerror(e) : cairo_status_to_string(st));
    free(tmp);
    return false;
  }
  free(tmp);
  return true;
}

unsigned char *plot_png_bytes(const Figure *f, size_t *len, char *err, size_t errn) {
  Sink k = { NULL, NULL, 0, 0, false };
  cairo_status_t st = render_to(f, PF_PNG, &k);
  if (st != CAIRO_STATUS_SUCCESS || (f->stop && *f->stop)) {
    free(k.buf);
    snprintf(err, errn, "cannot render the figure: %s", st != CAIRO_STATUS_SUCCESS ? cairo_status_to_string(st) : "interrupted");
    return NULL;
  }
  *len = k.len;
  return k.buf;
}
