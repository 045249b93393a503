/* render.c — draws a Figure with cairo (R's base-graphics layout: par(mar) margins, by default
** 5.1, 4.1, 4.1 and 2.1 lines, a box, pretty ticks) and writes it as PNG, SVG or PDF, or PNG bytes. */
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

/* What drawing one panel needs: its region on the page and the sizes its par(cex) makes (R's
** par(mfrow) sets cex to 0.83 in a 2 x 2 layout, 0.66 with 3 or more rows or columns). */
typedef struct Ctx {
  cairo_t *cr;
  const Figure *f;
  const Panel *p;
  Region R;
  double line, font;         /* one margin line and the font size, scaled */
} Ctx;

/* A data value on the axis (log10 of it on a log axis; NaN for a value <= 0 there). */
static double tx(bool log, double v) { return !log ? v : v > 0 ? log10(v) : NAN; }

static double map_x(const Ctx *C, double x) {
  const Panel *p = C->p;
  return C->R.l + (tx(p->logx, x) - p->usr[0]) / (p->usr[1] - p->usr[0]) * (C->R.r - C->R.l);
}
static double map_y(const Ctx *C, double y) {
  const Panel *p = C->p;
  return C->R.b - (tx(p->logy, y) - p->usr[2]) / (p->usr[3] - p->usr[2]) * (C->R.b - C->R.t);
}
/* A value already in usr coordinates (log10 on a log axis). */
static double ux(const Ctx *C, double u) { return C->R.l + (u - C->p->usr[0]) / (C->p->usr[1] - C->p->usr[0]) * (C->R.r - C->R.l); }
static double uy(const Ctx *C, double u) { return C->R.b - (u - C->p->usr[2]) / (C->p->usr[3] - C->p->usr[2]) * (C->R.b - C->R.t); }

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
** the digits, 1 their top; rotated by angle (radians, counter-clockwise on the page). The cap
** height is that of the current font size. */
static void text_at(cairo_t *cr, const char *s, double x, double y, double hadj, double vadj, double angle) {
  cairo_text_extents_t te;
  cairo_text_extents(cr, s, &te);
  cairo_matrix_t m;
  cairo_get_font_matrix(cr, &m);
  double cap = 0.72 * m.yy;
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

static void poly(cairo_t *cr, const double *xy, int n, double x, double y, double r) {
  cairo_move_to(cr, x + r * xy[0], y + r * xy[1]);
  for (int i = 1; i < n; i++) cairo_line_to(cr, x + r * xy[2 * i], y + r * xy[2 * i + 1]);
  cairo_close_path(cr);
}

static const double sq[] = { -1, -1, 1, -1, 1, 1, -1, 1 };
static const double tri_up[] = { 0, -1.15, 1, 0.6, -1, 0.6 };
static const double tri_down[] = { 0, 1.15, 1, -0.6, -1, -0.6 };
static const double dia[] = { 0, -1.3, 1.3, 0, 0, 1.3, -1.3, 0 };

static void plus(cairo_t *cr, double x, double y, double r) {
  cairo_move_to(cr, x - r, y); cairo_line_to(cr, x + r, y);
  cairo_move_to(cr, x, y - r); cairo_line_to(cr, x, y + r);
}
static void cross(cairo_t *cr, double x, double y, double r) {
  cairo_move_to(cr, x - r, y - r); cairo_line_to(cr, x + r, y + r);
  cairo_move_to(cr, x - r, y + r); cairo_line_to(cr, x + r, y - r);
}
static void circle(cairo_t *cr, double x, double y, double r) {
  cairo_new_sub_path(cr);
  cairo_arc(cr, x, y, r, 0, 2 * M_PI);
}

/* One point symbol (R's pch 0-25, or 256 + c: the character c) centred at (x, y), its own
** path; r is the symbol's half size (0.3 of the font at cex 1); bg fills 21-25. */
static void point(cairo_t *cr, int pch, double x, double y, PlotColor col, PlotColor bg, double r) {
  set_color(cr, col);
  set_line(cr, 1, 1);
  cairo_new_path(cr);
  if (pch >= 256) {
    char s[2] = { (char)(pch - 256), 0 };
    cairo_save(cr);
    font(cr, r / 0.3, false);
    text_at(cr, s, x, y, 0.5, 0.5, 0);
    cairo_restore(cr);
    return;
  }
  switch (pch) {
  case 0: case 15: case 22: poly(cr, sq, 4, x, y, r); break;
  case 2: case 17: case 24: poly(cr, tri_up, 3, x, y, r); break;
  case 6: case 25: poly(cr, tri_down, 3, x, y, r); break;
  case 3: plus(cr, x, y, 1.2 * r); break;
  case 4: cross(cr, x, y, r); break;
  case 5: case 18: case 23: poly(cr, dia, 4, x, y, pch == 18 ? 0.8 * r : r); break;
  case 7: poly(cr, sq, 4, x, y, r); cross(cr, x, y, r); break;
  case 8: plus(cr, x, y, 1.2 * r); cross(cr, x, y, r); break;
  case 9: poly(cr, dia, 4, x, y, r); plus(cr, x, y, 1.3 * r); break;
  case 10: circle(cr, x, y, r); plus(cr, x, y, r); break;
  case 11: poly(cr, tri_up, 3, x, y, r); poly(cr, tri_down, 3, x, y, r); break;
  case 12: poly(cr, sq, 4, x, y, r); plus(cr, x, y, r); break;
  case 13: circle(cr, x, y, r); cross(cr, x, y, r); break;
  case 14: poly(cr, sq, 4, x, y, r); cairo_move_to(cr, x - r, y + r); cairo_line_to(cr, x, y - r); cairo_line_to(cr, x + r, y + r); break;
  case 20: circle(cr, x, y, 0.66 * r); break;
  default: circle(cr, x, y, r); break;   /* 1, 16, 19, 21 */
  }
  if (pch >= 21 && pch <= 25) {
    if (bg.a > 0) { set_color(cr, bg); cairo_fill_preserve(cr); set_color(cr, col); }
    cairo_stroke(cr);
  } else if (pch >= 15) {
    cairo_fill(cr);
  } else {
    cairo_stroke(cr);
  }
}

/* Ctrl-C (the flag the figure carries) stops a long series: cairo draws a million points or
** segments in seconds to minutes, so the loops look every 1024 of them. */
static bool stopped(const Figure *f, int64_t i) { return (i & 1023) == 0 && f->stop && *f->stop; }

static PlotColor col_at(const PlotSeries *s, int64_t i, PlotColor dflt) {
  return s->cols && s->ncols > 0 ? s->cols[i % s->ncols] : dflt;
}

/* The plot region's data, clipped to it. */
static void draw_series(const Ctx *C, const PlotSeries *s) {
  cairo_t *cr = C->cr;
  const Figure *f = C->f;
  if (s->kind & SER_RECTS) {
    double y0 = map_y(C, 0);
    for (int64_t i = 0; i < s->n && !stopped(f, i); i++) {
      double xa = map_x(C, s->x[i]), xb = map_x(C, s->x[i + 1]), yt = map_y(C, s->y[i]);
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
  if (s->kind & SER_BOXES) {
    for (int64_t i = 0; i < s->n && !stopped(f, i); i++) {
      double xa = map_x(C, s->x[2 * i]), xb = map_x(C, s->x[2 * i + 1]);
      double ya = map_y(C, s->y[2 * i]), yb = map_y(C, s->y[2 * i + 1]);
      if (!isfinite(xa) || !isfinite(xb) || !isfinite(ya) || !isfinite(yb)) continue;
      PlotColor fill = col_at(s, i, s->fill);
      cairo_new_path(cr);
      cairo_rectangle(cr, fmin(xa, xb), fmin(ya, yb), fabs(xb - xa), fabs(yb - ya));
      if (fill.a > 0) {
        set_color(cr, fill);
        if (s->col.a > 0) cairo_fill_preserve(cr);
        else {                              /* cells without borders: no seams between them */
          cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
          cairo_fill(cr);
          cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
        }
      }
      if (s->col.a > 0 && s->lty > 0) {
        set_color(cr, s->col);
        set_line(cr, s->lty, s->lwd);
        cairo_stroke(cr);
      }
      cairo_new_path(cr);
    }
    return;
  }
  if (s->kind & SER_SEGS) {
    set_color(cr, s->col);
    set_line(cr, s->lty, s->lwd);
    for (int64_t i = 0; i < s->n && !stopped(f, i); i++) {
      double xa = map_x(C, s->x[2 * i]), xb = map_x(C, s->x[2 * i + 1]);
      double ya = map_y(C, s->y[2 * i]), yb = map_y(C, s->y[2 * i + 1]);
      if (!isfinite(xa) || !isfinite(xb) || !isfinite(ya) || !isfinite(yb) || s->lty == 0) continue;
      cairo_new_path(cr);
      cairo_move_to(cr, xa, ya);
      cairo_line_to(cr, xb, yb);
      cairo_stroke(cr);
    }
    return;
  }
  if (s->kind & SER_ABLINE) {
    if (s->lty == 0) return;
    set_color(cr, s->col);
    set_line(cr, s->lty, s->lwd);
    const double *u = C->p->usr;
    for (int64_t i = 0; i < s->n; i++) {
      cairo_new_path(cr);
      if (isnan(s->x[i])) {                 /* h: a data value */
        double y = map_y(C, s->y[i]);
        if (!isfinite(y)) continue;
        cairo_move_to(cr, C->R.l, y);
        cairo_line_to(cr, C->R.r, y);
      } else if (isnan(s->y[i])) {          /* v */
        double x = map_x(C, s->x[i]);
        if (!isfinite(x)) continue;
        cairo_move_to(cr, x, C->R.t);
        cairo_line_to(cr, x, C->R.b);
      } else {                              /* y = a + b x in the axes' (log10) coordinates, as R's untf=FALSE */
        double a = s->ab[2 * i], b = s->ab[2 * i + 1];
        cairo_move_to(cr, ux(C, u[0]), uy(C, a + b * u[0]));
        cairo_line_to(cr, ux(C, u[1]), uy(C, a + b * u[1]));
      }
      cairo_stroke(cr);
    }
    return;
  }
  if (s->kind & SER_TEXT) {
    font(cr, C->font * s->cex, false);
    double off = 0.5 * C->font * s->cex;
    for (int64_t i = 0; i < s->n && !stopped(f, i); i++) {
      double x = map_x(C, s->x[i]), y = map_y(C, s->y[i]);
      if (!isfinite(x) || !isfinite(y)) continue;
      set_color(cr, col_at(s, i, s->col));
      switch (s->pos) {
      case 1: text_at(cr, s->lab[i], x, y + off, 0.5, 1, 0); break;
      case 2: text_at(cr, s->lab[i], x - off, y, 1, 0.5, 0); break;
      case 3: text_at(cr, s->lab[i], x, y - off, 0.5, 0, 0); break;
      case 4: text_at(cr, s->lab[i], x + off, y, 0, 0.5, 0); break;
      default: text_at(cr, s->lab[i], x, y, s->adj, 0.5, 0); break;
      }
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
      double x = map_x(C, s->x[i]), y = map_y(C, s->y[i]);
      if (!isfinite(x) || !isfinite(y)) { down = false; continue; }
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
  if (s->kind & SER_POINTS) {
    double r = 0.3 * C->font * s->cex;
    for (int64_t i = 0; i < s->n && !stopped(f, i); i++) {
      double x = map_x(C, s->x[i]), y = map_y(C, s->y[i]);
      if (isfinite(x) && isfinite(y)) point(cr, s->pchs ? s->pchs[i % s->npchs] : s->pch, x, y, col_at(s, i, s->col), s->fill, r);
    }
  }
}

/* The ticks R's axis() puts on side (1-4) by default, inside the shown range (data values). */
static int default_ticks(const Panel *p, int side, double *t, int max) {
  bool xa = side % 2 == 1, log = xa ? p->logx : p->logy;
  double lo = p->usr[xa ? 0 : 2], hi = p->usr[xa ? 1 : 3], eps = 1e-9 * (hi - lo);
  int n = log ? plot_log_ticks(lo, hi, t, max) : plot_pretty(lo, hi, 5, 5 / 3, t, max), k = 0;
  for (int i = 0; i < n; i++) {
    double u = tx(log, t[i]);
    if (u >= lo - eps && u <= hi + eps) t[k++] = t[i];
  }
  return k;
}

/* An axis on side (1 below, 2 left, 3 above, 4 right): a line from the first tick to the last,
** ticks half a line out, labels (NULL: the numbers as R formats them) a line out, turned as the
** panel's par(las) says (0: parallel to the axis). lty 0: the labels alone. */
static void draw_axis(const Ctx *C, int side, const double *at, int n, char *const *labels, int lty, PlotColor col) {
  cairo_t *cr = C->cr;
  if (n <= 0) return;
  char (*fmt)[PLOT_LABEL] = NULL;
  if (!labels) {
    fmt = malloc((size_t)n * sizeof *fmt);
    if (!fmt) return;
    plot_tick_labels(at, n, fmt);
  }
  font(cr, C->font, false);
  set_color(cr, col);
  set_line(cr, 1, 1);
  double tick = 0.5 * C->line, first = INFINITY, last = -INFINITY;
  bool xa = side % 2 == 1;
  /* par(las): 0 parallel to the axis, 1 horizontal, 2 perpendicular, 3 vertical */
  int las = C->p->las;
  bool perp = xa ? (las == 2 || las == 3) : (las == 1 || las == 2);
  double edge = side == 1 ? C->R.b : side == 2 ? C->R.l : side == 3 ? C->R.t : C->R.r;
  double out = side == 1 || side == 4 ? 1 : -1;   /* the outward direction */
  cairo_new_path(cr);
  for (int i = 0; i < n; i++) {
    double v = xa ? map_x(C, at[i]) : map_y(C, at[i]);
    if (!isfinite(v)) continue;
    first = fmin(first, v);
    last = fmax(last, v);
    if (lty == 0) continue;
    if (xa) { cairo_move_to(cr, v, edge); cairo_line_to(cr, v, edge + out * tick); }
    else { cairo_move_to(cr, edge, v); cairo_line_to(cr, edge + out * tick, v); }
  }
  if (lty != 0 && first <= last) {
    if (xa) { cairo_move_to(cr, first, edge); cairo_line_to(cr, last, edge); }
    else { cairo_move_to(cr, edge, first); cairo_line_to(cr, edge, last); }
    cairo_stroke(cr);
  }
  cairo_new_path(cr);
  double gap = 0.95 * C->line, llo = NAN, lhi = NAN;
  cairo_text_extents_t em;
  cairo_text_extents(cr, "m", &em);
  for (int i = 0; i < n; i++) {
    double v = xa ? map_x(C, at[i]) : map_y(C, at[i]);
    const char *s = labels ? labels[i] : fmt[i];
    if (!isfinite(v) || !s) continue;
    /* as R (gap.axis = 1): a label closer than an "m" to the last one drawn is left out */
    cairo_text_extents_t te;
    cairo_text_extents(cr, s, &te);
    double along = perp ? C->font : te.x_advance;   /* the label's extent along the axis */
    double lo = v - along / 2, hi = v + along / 2;
    if (!isnan(llo) && lo < lhi + em.x_advance && hi > llo - em.x_advance) continue;
    llo = lo;
    lhi = hi;
    if (!perp) {
      switch (side) {
      case 1: text_at(cr, s, v, edge + gap, 0.5, 1, 0); break;
      case 2: text_at(cr, s, edge - gap, v, 0.5, 0, M_PI / 2); break;
      case 3: text_at(cr, s, v, edge - gap, 0.5, 0, 0); break;
      default: text_at(cr, s, edge + gap, v, 0.5, 1, M_PI / 2); break;
      }
    } else {                                /* ends a line out from the axis, centred on the tick */
      switch (side) {
      case 1: text_at(cr, s, v, edge + gap, 1, 0.5, M_PI / 2); break;
      case 2: text_at(cr, s, edge - gap, v, 1, 0.5, 0); break;
      case 3: text_at(cr, s, v, edge - gap, 0, 0.5, M_PI / 2); break;
      default: text_at(cr, s, edge + gap, v, 0, 0.5, 0); break;
      }
    }
  }
  free(fmt);
}

static void draw_default_axes(const Ctx *C) {
  double t[64];
  for (int side = 1; side <= 4; side++) {
    if (!(C->p->axes & (1 << side))) continue;
    int k = default_ticks(C->p, side, t, 64);
    draw_axis(C, side, t, k, NULL, 1, (PlotColor){ 0, 0, 0, 1 });
  }
}

/* The margin items: axis() and mtext(). */
static void draw_margin(const Ctx *C, const PlotSeries *s) {
  cairo_t *cr = C->cr;
  if (s->kind & SER_AXIS) {
    double t[64];
    if (s->n > 0) draw_axis(C, s->side, s->x, (int)s->n, s->lab, s->lty, s->col);
    else draw_axis(C, s->side, t, default_ticks(C->p, s->side, t, 64), NULL, s->lty, s->col);
    return;
  }
  /* SER_MTEXT: the text's middle on the middle of margin line `line` */
  font(cr, C->font * s->cex, false);
  set_color(cr, s->col);
  double d = (s->line + 0.5) * C->line, at = s->x[0];
  bool xa = s->side % 2 == 1;
  double pos = isnan(at) ? (xa ? C->R.l + s->adj * (C->R.r - C->R.l) : C->R.b - s->adj * (C->R.b - C->R.t))
                         : (xa ? map_x(C, at) : map_y(C, at));
  if (!isfinite(pos)) return;
  switch (s->side) {
  case 1: text_at(cr, s->lab[0], pos, C->R.b + d, s->adj, 0.5, 0); break;
  case 2: text_at(cr, s->lab[0], C->R.l - d, pos, s->adj, 0.5, M_PI / 2); break;
  case 3: text_at(cr, s->lab[0], pos, C->R.t - d, s->adj, 0.5, 0); break;
  default: text_at(cr, s->lab[0], C->R.r + d, pos, s->adj, 0.5, M_PI / 2); break;
  }
}

static void draw_legend(const Ctx *C, const PlotLegend *L) {
  cairo_t *cr = C->cr;
  const Region *R = &C->R;
  if (L->n == 0) return;
  font(cr, C->font, false);
  double tw = 0;
  bool any_line = false;
  for (int i = 0; i < L->n; i++) {
    cairo_text_extents_t te;
    cairo_text_extents(cr, L->items[i].label, &te);
    if (te.x_advance > tw) tw = te.x_advance;
    if (L->items[i].lty > 0) any_line = true;
  }
  double pad = 0.5 * C->line, sample = any_line ? 2 * C->line : C->line, row = C->line;
  double w = pad + sample + pad + tw + pad, h = pad + L->n * row + pad;
  double inset = 0.5 * C->line, x, y;
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
  set_color(cr, C->f->bg);                 /* R's legend(bg = par("bg")) */
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
    if (it->pch >= 0) point(cr, it->pch, sx + sample / 2, cy, it->col, (PlotColor){ 0, 0, 0, 0 }, 0.3 * C->font);
    set_color(cr, (PlotColor){ 0, 0, 0, 1 });
    font(cr, C->font, false);
    text_at(cr, it->label, sx + sample + pad, cy, 0, 0.5, 0);
  }
}

/* image()'s colour key: a bar one line wide, a line right of the plot region, the colours from
** z0 at the bottom to z1 at the top, with pretty ticks on its right. */
static void draw_key(const Ctx *C, const PlotKey *K) {
  cairo_t *cr = C->cr;
  double x0 = floor(C->R.r + 1.0 * C->line) + 0.5, x1 = floor(x0 + C->line) + 0.5, h = C->R.b - C->R.t;
  for (int i = 0; i < K->ncol; i++) {
    double ya = C->R.b - h * i / K->ncol, yb = C->R.b - h * (i + 1) / K->ncol;
    cairo_new_path(cr);
    cairo_rectangle(cr, x0, yb, x1 - x0, ya - yb);
    set_color(cr, K->col[i]);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
    cairo_fill(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_DEFAULT);
  }
  set_color(cr, (PlotColor){ 0, 0, 0, 1 });
  set_line(cr, 1, 1);
  cairo_new_path(cr);
  cairo_rectangle(cr, x0, C->R.t, x1 - x0, h);
  cairo_stroke(cr);
  double t[64];
  int n = plot_pretty(K->z0, K->z1, 5, 1, t, 64), k = 0;
  double eps = 1e-9 * (K->z1 - K->z0);
  for (int i = 0; i < n; i++)
    if (t[i] >= K->z0 - eps && t[i] <= K->z1 + eps) t[k++] = t[i];
  char (*lab)[PLOT_LABEL] = malloc((size_t)(k > 0 ? k : 1) * sizeof *lab);
  if (!lab) return;
  plot_tick_labels(t, k, lab);
  font(cr, C->font, false);
  for (int i = 0; i < k; i++) {
    double y = C->R.b - (t[i] - K->z0) / (K->z1 - K->z0) * h;
    cairo_new_path(cr);
    cairo_move_to(cr, x1, y);
    cairo_line_to(cr, x1 + 0.3 * C->line, y);
    cairo_stroke(cr);
    text_at(cr, lab[i], x1 + 0.5 * C->line, y, 0, 0.5, 0);
  }
  free(lab);
}

/* Panel k's plot region: its cell of the page inside the outer margins (f->oma lines, filled
** by rows, or by columns under par(mfcol)), less the panel's margins (p->mar lines; an image()
** key adds 4 on the right), its sides on pixel centres so that the 1-unit box and axis lines are
** crisp (one pixel row or column each). */
static Region region_of(const Figure *f, int k, const Panel *p, double line, bool key) {
  int rows = f->rows > 0 ? f->rows : 1, cols = f->cols > 0 ? f->cols : 1;
  double ol = PLOT_LINE * (f->oma_cex > 0 ? f->oma_cex : 1);
  double x0 = f->oma[1] * ol, y0 = f->oma[2] * ol;
  double cw = (f->width - (f->oma[1] + f->oma[3]) * ol) / cols, ch = (f->height - (f->oma[0] + f->oma[2]) * ol) / rows;
  int row = f->bycol ? k % rows : k / cols % rows, col = f->bycol ? k / rows % cols : k % cols;
  double x = x0 + col * cw, y = y0 + row * ch;
  double right = p->mar[3] + (key ? 4 : 0);
  Region R = { floor(x + p->mar[1] * line) + 0.5, floor(x + cw - right * line) + 0.5, floor(y + p->mar[2] * line) + 0.5,
               floor(y + ch - p->mar[0] * line) + 0.5 };
  return R;
}

static void draw_panel(cairo_t *cr, const Figure *f, int k) {
  const Panel *p = &f->p[k];
  double sc = p->cex > 0 ? p->cex : 1;     /* par(cex) when the plot started */
  Ctx C = { cr, f, p, region_of(f, k, p, PLOT_LINE * sc, p->key != NULL), PLOT_LINE * sc, PLOT_FONT * sc };
  if (C.R.r - C.R.l < 2 || C.R.b - C.R.t < 2) return;   /* no room (a small page of many panels) */
  const Region R = C.R;
  cairo_save(cr);                          /* the data, clipped to the plot region */
  cairo_rectangle(cr, R.l, R.t, R.r - R.l, R.b - R.t);
  cairo_clip(cr);
  cairo_set_line_cap(cr, CAIRO_LINE_CAP_BUTT);
  for (int i = 0; i < p->ns; i++)
    if (!(p->s[i].kind & (SER_AXIS | SER_MTEXT))) draw_series(&C, &p->s[i]);
  cairo_restore(cr);
  set_color(cr, (PlotColor){ 0, 0, 0, 1 });
  set_line(cr, 1, 1);
  if (p->box) {
    cairo_new_path(cr);
    cairo_rectangle(cr, R.l, R.t, R.r - R.l, R.b - R.t);
    cairo_stroke(cr);
  }
  draw_default_axes(&C);
  for (int i = 0; i < p->ns; i++)
    if (p->s[i].kind & (SER_AXIS | SER_MTEXT)) draw_margin(&C, &p->s[i]);
  if (p->key) draw_key(&C, p->key);
  set_color(cr, (PlotColor){ 0, 0, 0, 1 });
  if (p->main && *p->main) {
    font(cr, 1.2 * C.font, true);
    text_at(cr, p->main, (R.l + R.r) / 2, R.t - 1.7 * C.line, 0.5, 0, 0);
  }
  font(cr, C.font, false);
  if (p->xlab && *p->xlab) text_at(cr, p->xlab, (R.l + R.r) / 2, R.b + 3.2 * C.line, 0.5, 0, 0);
  if (p->ylab && *p->ylab) text_at(cr, p->ylab, R.l - 2.6 * C.line, (R.t + R.b) / 2, 0.5, 0, M_PI / 2);
  for (int i = 0; i < p->nleg; i++) draw_legend(&C, &p->leg[i]);
}

void plot_render(const Figure *f, cairo_t *cr) {
  set_color(cr, f->bg);                    /* par(bg) when the figure was opened */
  cairo_set_operator(cr, CAIRO_OPERATOR_SOURCE);
  cairo_paint(cr);
  cairo_set_operator(cr, CAIRO_OPERATOR_OVER);
  for (int k = 0; k < f->np; k++) draw_panel(cr, f, k);
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

/* The plugin's entry (plugin.h, plot_int.h): the one symbol libmls_plot.so exports. */
__attribute__((visibility("default"))) const PlotRenderer mls_plot_plugin = {
  /* .write_file = */ plot_write_file,
  /* .png_bytes = */ plot_png_bytes,
};
