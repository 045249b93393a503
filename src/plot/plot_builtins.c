/* plot_builtins.c — the builtins of R's base graphics: plot, lines, points, hist, legend, title
** and dev.off. Each checks all of its arguments before it touches the figure, so an error
** leaves the figure as it was and leaks nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builtins.h"
#include "mem.h"
#include "plot/plot_int.h"
#include "tensor.h"

/* ---- argument helpers ---- */

/* The length of a vector argument (a number, n x 1 or 1 x n), or an argument error. */
static int64_t vec_len(Interp *I, Args *a, int i) {
  Value v = a->v[i];
  char d[64];
  if (v.t == VT_NUM || v.t == VT_BOOL) return 1;
  if (v.t != VT_MAT) bi_argerror(I, i + 1, "numeric vector expected, got %s", val_describe(v, d, sizeof d));
  const Tensor *t = v.u.m;
  if (t->shape[0] != 1 && t->shape[1] != 1)
    bi_argerror(I, i + 1, "a vector (n x 1 or 1 x n) expected, got a %lldx%lld matrix", (long long)t->shape[0], (long long)t->shape[1]);
  return tensor_numel(t);
}

/* Element k of a vector argument that vec_len accepted. */
static double vec_at(const Args *a, int i, int64_t k) {
  Value v = a->v[i];
  if (v.t == VT_NUM) return v.u.n;
  if (v.t == VT_BOOL) return v.u.b;
  return tensor_at(v.u.m, k);
}

/* A copy of the vector argument i (or 1..n when i < 0) in a new array (the caller owns it). */
static double *vec_copy(const Args *a, int i, int64_t n) {
  double *d = mem_alloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int64_t k = 0; k < n; k++) d[k] = i < 0 ? (double)(k + 1) : vec_at(a, i, k);
  return d;
}

static void color_of(Interp *I, Value v, int argn, PlotColor *c) {
  char d[64];
  if (v.t == VT_MAT && tensor_numel(v.u.m) == 1) v = val_num(tensor_at(v.u.m, 0));
  if (v.t == VT_STR) {
    if (!plot_color_name(v.u.s->s, c)) bi_argerror(I, argn, "unknown colour '%s'", v.u.s->s);
    return;
  }
  if (v.t == VT_NUM) {
    if (!plot_color_index(v.u.n, c)) bi_argerror(I, argn, "a colour number must be a whole number >= 0, got %g", v.u.n);
    return;
  }
  bi_argerror(I, argn, "colour expected (a name, \"#RRGGBB\" or a number), got %s", val_describe(v, d, sizeof d));
}

static PlotColor opt_color(Interp *I, Args *a, int i, PlotColor dflt) {
  if (!bi_given(a, i)) return dflt;
  PlotColor c;
  color_of(I, a->v[i], i + 1, &c);
  return c;
}

static const PlotColor black = { 0, 0, 0, 1 };

static int opt_pch(Interp *I, Args *a, int i, int dflt) {
  if (!bi_given(a, i)) return dflt;
  double p = bi_num(I, a, i);
  if (!(p == floor(p) && ((p >= 0 && p <= 5) || (p >= 15 && p <= 20))))
    bi_argerror(I, i + 1, "pch must be 0-5 or 15-20, got %g", p);
  return (int)p;
}

static int opt_lty(Interp *I, Args *a, int i, int dflt) {
  if (!bi_given(a, i)) return dflt;
  double p = bi_num(I, a, i);
  if (!(p == floor(p) && p >= 0 && p <= 6)) bi_argerror(I, i + 1, "lty must be a whole number 0-6, got %g", p);
  return (int)p;
}

static double opt_lwd(Interp *I, Args *a, int i) {
  double w = bi_opt_num(I, a, i, 1);
  if (!(w > 0 && w <= 100)) bi_argerror(I, i + 1, "lwd must be in (0, 100], got %g", w);
  return w;
}

/* xlim=, ylim=: two finite numbers, increasing. */
static bool opt_lim(Interp *I, Args *a, int i, double lim[2]) {
  if (!bi_given(a, i)) return false;
  const char *name = I->bi[I->cur_bi - builtin_table].names[i]->name;
  if (vec_len(I, a, i) != 2) bi_argerror(I, i + 1, "%s must be two numbers", name);
  lim[0] = vec_at(a, i, 0);
  lim[1] = vec_at(a, i, 1);
  if (!isfinite(lim[0]) || !isfinite(lim[1]) || lim[0] >= lim[1])
    bi_argerror(I, i + 1, "%s must be two finite numbers, the first smaller", name);
  return true;
}

static const char *opt_str(Interp *I, Args *a, int i, const char *dflt) {
  return bi_given(a, i) ? bi_str(I, a, i) : dflt;
}

/* The range of the finite values of vector argument i (1..n when i < 0); false when none. */
static bool finite_range(const Args *a, int i, int64_t n, double r[2]) {
  r[0] = INFINITY;
  r[1] = -INFINITY;
  for (int64_t k = 0; k < n; k++) {
    double v = i < 0 ? (double)(k + 1) : vec_at(a, i, k);
    if (!isfinite(v)) continue;
    if (v < r[0]) r[0] = v;
    if (v > r[1]) r[1] = v;
  }
  return r[0] <= r[1];
}

/* A copy of s for the figure's text: bytes that are not UTF-8 become '?' (cairo draws only
** valid UTF-8). */
static char *text_dup(const char *s) {
  char *c = mem_strdup(s);
  unsigned char *p = (unsigned char *)c;
  while (*p) {
    int n = *p < 0x80 ? 1 : (*p & 0xE0) == 0xC0 ? 2 : (*p & 0xF0) == 0xE0 ? 3 : (*p & 0xF8) == 0xF0 ? 4 : 0;
    bool ok = n > 0 && !(n == 2 && *p < 0xC2) && !(n == 4 && *p > 0xF4);
    for (int k = 1; ok && k < n; k++)
      if ((p[k] & 0xC0) != 0x80) ok = false;
    if (!ok) { *p++ = '?'; continue; }
    p += n;
  }
  return c;
}

/* What plot() and hist() share: titles, the file and the size. */
typedef struct FigOpts { const char *main, *xlab, *ylab, *file; PlotFormat fmt; int width, height; } FigOpts;

static void fig_opts(Interp *I, Args *a, int imain, int ifile, int iwidth, FigOpts *o) {
  o->main = opt_str(I, a, imain, NULL);
  o->xlab = opt_str(I, a, imain + 1, NULL);
  o->ylab = opt_str(I, a, imain + 2, NULL);
  o->file = opt_str(I, a, ifile, NULL);
  o->fmt = PF_PNG;
  if (o->file && !plot_format_of(o->file, &o->fmt))
    bi_argerror(I, ifile + 1, "file '%s' must end in .png, .svg or .pdf", o->file);
  for (int k = 0; k < 2; k++) {
    double v = bi_opt_num(I, a, iwidth + k, k ? 480 : 640);
    if (!(v >= 100 && v <= 10000 && v == floor(v)))
      bi_argerror(I, iwidth + k + 1, "%s must be a whole number in [100, 10000], got %g", k ? "height" : "width", v);
    if (k) o->height = (int)v; else o->width = (int)v;
  }
  if ((o->file || !I->display) && I->no_write) bi_error(I, "cannot draw: writing files is turned off");
}

/* Finishes the open figure and opens a new one showing usr (x0, x1, y0, y1, not extended), made
** by the call at sp. */
static Figure *fig_start(Interp *I, const FigOpts *o, const double lim[4], const char *xlab, const char *ylab,
                         Span sp) {
  plot_finish(I, true);
  PlotState *st = plot_state(I);
  Figure *f = mem_calloc(1, sizeof *f);
  st->cur = f;                               /* owned from here on */
  f->span = sp;
  f->src = I->src;
  if (f->src) source_retain(f->src);
  f->number = ++st->count;
  f->fmt = o->fmt;
  f->width = o->width;
  f->height = o->height;
  plot_extend_range(lim[0], lim[1], f->usr);
  plot_extend_range(lim[2], lim[3], f->usr + 2);
  f->axes = f->box = true;
  f->dirty = true;
  f->stop = &I->interrupted;
  if (o->file) {
    f->file = mem_strdup(o->file);
    f->user_file = true;
  } else if (!I->display) {
    char name[32];
    snprintf(name, sizeof name, "mlsplot%03d.png", f->number);
    f->file = mem_strdup(name);
  }
  f->main = o->main ? text_dup(o->main) : NULL;
  f->xlab = text_dup(o->xlab ? o->xlab : xlab);
  f->ylab = text_dup(o->ylab ? o->ylab : ylab);
  return f;
}

static PlotSeries *add_series(Figure *f) {
  if (f->ns == f->caps) {
    int cap = f->caps ? 2 * f->caps : 4;
    f->s = mem_realloc(f->s, (size_t)cap * sizeof *f->s);
    f->caps = cap;
  }
  PlotSeries *s = &f->s[f->ns++];
  memset(s, 0, sizeof *s);
  return s;
}

static Figure *cur_figure(Interp *I) {
  if (!I->plot || !I->plot->cur) bi_error(I, "no plot to draw on: call plot() or hist() first");
  return I->plot->cur;
}

/* The x and y of plot, lines and points: (x, y), or (1..n, x) when y is not given. Sets *ix
** and *iy to the argument positions (-1: the index 1..n). */
static int64_t xy_args(Interp *I, Args *a, int *ix, int *iy) {
  int64_t nx = vec_len(I, a, 0);
  if (!bi_given(a, 1)) { *ix = -1; *iy = 0; return nx; }
  int64_t ny = vec_len(I, a, 1);
  if (nx != ny) bi_error(I, "x and y lengths differ (%lld and %lld)", (long long)nx, (long long)ny);
  *ix = 0;
  *iy = 1;
  return nx;
}

static int type_kind(Interp *I, Args *a, int i, const char *dflt) {
  const char *t = opt_str(I, a, i, dflt);
  if (!strcmp(t, "l")) return SER_LINE;
  if (!strcmp(t, "p")) return SER_POINTS;
  if (!strcmp(t, "b") || !strcmp(t, "o")) return SER_LINE | SER_POINTS;
  if (!strcmp(t, "n")) return 0;
  bi_argerror(I, i + 1, "type must be \"p\", \"l\", \"b\", \"o\" or \"n\", got \"%s\"", t);
}

/* A new series of f drawn as kind with that style, through the points (x, y) of the arguments. */
static void add_xy_series(Figure *f, int kind, PlotColor col, double lwd, int lty, int pch, const Args *a, int ix, int iy,
                          int64_t n) {
  PlotSeries *s = add_series(f);
  s->kind = kind;
  s->col = col;
  s->lwd = lwd;
  s->lty = lty;
  s->pch = pch;
  s->x = vec_copy(a, ix, n);
  s->y = vec_copy(a, iy, n);
  s->n = n;
}

/* ---- the builtins ---- */

/* plot(x, y=, type="p", main=, xlab=, ylab=, col=, xlim=, ylim=, file=, width=, height=, lwd=, lty=, pch=) */
Value bi_plot(Interp *I, Args *a) {
  int ix, iy;
  int64_t n = xy_args(I, a, &ix, &iy);
  int kind = type_kind(I, a, 2, "p");
  FigOpts o;
  fig_opts(I, a, 3, 9, 10, &o);
  PlotColor col = opt_color(I, a, 6, black);
  double lim[4];
  bool gx = opt_lim(I, a, 7, lim), gy = opt_lim(I, a, 8, lim + 2);
  double lwd = opt_lwd(I, a, 12);
  int lty = opt_lty(I, a, 13, 1), pch = opt_pch(I, a, 14, 1);
  if (!gx && !finite_range(a, ix, n, lim)) bi_error(I, "x has no finite values: give xlim");
  if (!gy && !finite_range(a, iy, n, lim + 2)) bi_error(I, "y has no finite values: give ylim");
  Figure *f = fig_start(I, &o, lim, ix < 0 ? "Index" : "x", ix < 0 ? "y" : "y", a->span);
  if (kind) add_xy_series(f, kind, col, lwd, lty, pch, a, ix, iy, n);
  return val_null();
}

/* lines(x, y=, col=, lwd=, lty=, type="l") and points(x, y=, col=, pch=, type="p") */
static Value add_xy(Interp *I, Args *a, bool is_points) {
  int ix, iy;
  int64_t n = xy_args(I, a, &ix, &iy);
  PlotColor col = opt_color(I, a, 2, black);
  double lwd = is_points ? 1 : opt_lwd(I, a, 3);
  int lty = is_points ? 1 : opt_lty(I, a, 4, 1), pch = is_points ? opt_pch(I, a, 3, 1) : 1;
  int kind = type_kind(I, a, is_points ? 4 : 5, is_points ? "p" : "l");
  Figure *f = cur_figure(I);
  f->dirty = true;
  if (kind) add_xy_series(f, kind, col, lwd, lty, pch, a, ix, iy, n);
  return val_null();
}

Value bi_lines(Interp *I, Args *a) { return add_xy(I, a, false); }
Value bi_points(Interp *I, Args *a) { return add_xy(I, a, true); }

static int cmp_double(const void *p, const void *q) {
  double x = *(const double *)p, y = *(const double *)q;
  return (x > y) - (x < y);
}

/* hist(x, breaks=, main=, xlab=, ylab=, col="lightgray", xlim=, ylim=, file=, width=, height=, plot=TRUE) */
Value bi_hist(Interp *I, Args *a) {
  int64_t n = vec_len(I, a, 0), nfin = 0;
  double r[2];
  if (!finite_range(a, 0, n, r)) bi_argerror(I, 1, "x has no finite values");
  for (int64_t k = 0; k < n; k++) nfin += isfinite(vec_at(a, 0, k));
  /* the breaks: given, or pretty values over the range with about `breaks` (Sturges) cells */
  int64_t nb = 0;
  int ncell = (int)ceil(log2((double)nfin) + 1);
  bool given = bi_given(a, 1);
  if (given) {
    nb = vec_len(I, a, 1);
    if (nb == 0) bi_argerror(I, 2, "a number of cells or at least 2 breaks expected");
    if (nb == 1) {
      double c = vec_at(a, 1, 0);
      if (!(c >= 1 && c <= 1e6)) bi_argerror(I, 2, "a number of cells in [1, 1e6] expected, got %g", c);
      ncell = (int)c;
      given = false;
    } else {
      for (int64_t k = 0; k < nb; k++)
        if (!isfinite(vec_at(a, 1, k)) || (k > 0 && !(vec_at(a, 1, k) > vec_at(a, 1, k - 1))))
          bi_argerror(I, 2, "breaks must be finite and increasing");
      if (vec_at(a, 1, 0) > r[0] || vec_at(a, 1, nb - 1) < r[1])
        bi_argerror(I, 2, "breaks [%g, %g] do not span the data [%g, %g]", vec_at(a, 1, 0), vec_at(a, 1, nb - 1), r[0], r[1]);
    }
  }
  bool draw = bi_opt_bool(I, a, 11, true);
  FigOpts o;
  PlotColor fill = { 0, 0, 0, 0 };
  double lim[4];
  bool gx = false, gy = false;
  if (draw) {
    fig_opts(I, a, 2, 8, 9, &o);
    fill = opt_color(I, a, 5, (PlotColor){ 0.827, 0.827, 0.827, 1 });
    gx = opt_lim(I, a, 6, lim);
    gy = opt_lim(I, a, 7, lim + 2);
  }
  /* the result list owns the arrays (a throw below cannot leak them) */
  if (!given) {
    int max = 2 * ncell + 128;               /* pretty makes at most about 1.4 ncell + 2 cells */
    Tensor *probe = tensor_new(I, max, 1);
    tmp_push(I, val_mat(probe));
    nb = plot_pretty(r[0], r[1], ncell, 1, tensor_data(probe), max);
    if (nb < 2) bi_argerror(I, 1, "cannot cut the range [%g, %g] into cells: give breaks", r[0], r[1]);
    Tensor *bt = tensor_new(I, nb, 1);
    memcpy(tensor_data(bt), tensor_data(probe), (size_t)nb * sizeof(double));
    tmp_pop(I, 1);
    val_release(val_mat(probe));
    tmp_push(I, val_mat(bt));
  } else {
    Tensor *bt = tensor_new(I, nb, 1);
    for (int64_t k = 0; k < nb; k++) tensor_data(bt)[k] = vec_at(a, 1, k);
    tmp_push(I, val_mat(bt));
  }
  const double *b = tensor_data(I->tmp[I->ntmp - 1].u.m);
  int64_t nc = nb - 1;
  Tensor *ct = tensor_new(I, nc, 1), *mt = NULL, *dt = NULL;
  tmp_push(I, val_mat(ct));
  mt = tensor_new(I, nc, 1);
  tmp_push(I, val_mat(mt));
  dt = tensor_new(I, nc, 1);
  tmp_push(I, val_mat(dt));
  double *cnt = tensor_data(ct);
  memset(cnt, 0, (size_t)nc * sizeof(double));
  /* right-closed cells (b[k], b[k+1]], the first also holds b[0]; as R, the breaks are
  ** nudged by 1e-7 of the median cell width so that values equal to a break up to rounding
  ** fall in the cell below it */
  double med = nc > 0 ? b[1] - b[0] : 1;    /* pretty breaks are equally spaced */
  if (given) {                               /* given ones: the median cell width */
    Tensor *wt = tensor_new(I, nc, 1);
    double *sw = tensor_data(wt);
    for (int64_t k = 0; k < nc; k++) sw[k] = b[k + 1] - b[k];
    qsort(sw, (size_t)nc, sizeof(double), cmp_double);
    med = nc % 2 ? sw[nc / 2] : (sw[nc / 2 - 1] + sw[nc / 2]) / 2;
    val_release(val_mat(wt));
  }
  double fuzz = 1e-7 * med;
  for (int64_t k = 0; k < n; k++) {
    bi_poll(I, k, NULL);                     /* (what it holds is on the temp stack) */
    double v = vec_at(a, 0, k);
    if (!isfinite(v)) continue;
    int64_t lo = 0, hi = nc - 1;             /* the first cell whose nudged top is >= v */
    while (lo < hi) {
      int64_t mid = (lo + hi) / 2;
      if (v <= b[mid + 1] + fuzz) hi = mid; else lo = mid + 1;
    }
    cnt[lo]++;
  }
  for (int64_t k = 0; k < nc; k++) {
    tensor_data(mt)[k] = (b[k] + b[k + 1]) / 2;
    tensor_data(dt)[k] = cnt[k] / ((double)nfin * (b[k + 1] - b[k]));
  }
  if (draw) {
    double cmax = 0;
    for (int64_t k = 0; k < nc; k++) cmax = fmax(cmax, cnt[k]);
    if (!gx) { lim[0] = b[0]; lim[1] = b[nc]; }
    if (!gy) { lim[2] = 0; lim[3] = cmax; }
    Figure *f = fig_start(I, &o, lim, "x", "Frequency", a->span);
    f->box = false;
    if (!o.main) f->main = mem_strdup("Histogram");
    PlotSeries *s = add_series(f);
    s->kind = SER_RECTS;
    s->col = black;
    s->fill = fill;
    s->lwd = 1;
    s->lty = 1;
    s->x = mem_alloc((size_t)nb * sizeof(double));
    memcpy(s->x, b, (size_t)nb * sizeof(double));
    s->y = mem_alloc((size_t)(nc > 0 ? nc : 1) * sizeof(double));
    memcpy(s->y, cnt, (size_t)nc * sizeof(double));
    s->n = nc;
  }
  List *l = list_new(I, 4);
  static const char *const names[] = { "breaks", "counts", "mids", "density" };
  for (int k = 0; k < 4; k++) {
    Value v = I->tmp[I->ntmp - 4 + k];
    list_push(l, v, sym_intern(&I->syms, names[k], strlen(names[k])));   /* takes the tmp's reference */
  }
  tmp_pop(I, 4);
  return val_list(l);
}

/* The k-th of a per-item argument: a list or vector is recycled, anything else is one value. */
static Value item_of(Value v, int k) {
  if (v.t == VT_LIST && v.u.l->n > 0) return v.u.l->items[k % v.u.l->n];
  if (v.t == VT_MAT && tensor_numel(v.u.m) > 0) return val_num(tensor_at(v.u.m, k % tensor_numel(v.u.m)));
  return v;
}

static const char *const legend_pos[] = { "topright", "topleft", "bottomright", "bottomleft", "top", "bottom", "left", "right", "center" };   /* ORDER PlotLegendPos */

/* legend(pos="topright", labels=, col=, lty=, pch=) */
Value bi_legend(Interp *I, Args *a) {
  char d[64];
  Value labels = a->v[1], pos = a->v[0];
  int ipos = 0;
  if (labels.t == VT_UNBOUND) {              /* legend(list("a", "b")): the labels alone */
    if (pos.t == VT_UNBOUND) bi_error(I, "labels expected");
    labels = pos;
    pos = val_unbound();
  }
  if (pos.t != VT_UNBOUND) {
    if (pos.t != VT_STR) bi_argerror(I, 1, "a position (\"topright\", ...) expected, got %s", val_describe(pos, d, sizeof d));
    ipos = -1;
    for (int k = 0; k < 9; k++)
      if (!strcmp(pos.u.s->s, legend_pos[k])) ipos = k;
    if (ipos < 0) bi_argerror(I, 1, "unknown position '%s' (topright, topleft, bottomright, bottomleft, top, bottom, left, right, center)", pos.u.s->s);
  }
  int64_t n = labels.t == VT_LIST ? labels.u.l->n : labels.t == VT_MAT ? tensor_numel(labels.u.m) : 1;
  if (n < 1 || n > 100) bi_argerror(I, 2, "1 to 100 labels expected");
  for (int k = 0; k < n; k++) {
    Value v = item_of(labels, k);
    if (v.t != VT_STR && v.t != VT_NUM) bi_argerror(I, 2, "labels must be strings or numbers, got %s", val_describe(v, d, sizeof d));
  }
  PlotLegendItem tmpi;
  for (int k = 0; k < n; k++) {               /* check every per-item value before allocating */
    if (bi_given(a, 2)) color_of(I, item_of(a->v[2], k), 3, &tmpi.col);
    for (int j = 3; j <= 4; j++) {
      if (!bi_given(a, j)) continue;
      Value v = item_of(a->v[j], k);
      if (v.t != VT_NUM) bi_argerror(I, j + 1, "number expected, got %s", val_describe(v, d, sizeof d));
      if (j == 3 && !(v.u.n == floor(v.u.n) && v.u.n >= 0 && v.u.n <= 6)) bi_argerror(I, 4, "lty must be a whole number 0-6, got %g", v.u.n);
      if (j == 4 && !isnan(v.u.n) && !(v.u.n == floor(v.u.n) && ((v.u.n >= 0 && v.u.n <= 5) || (v.u.n >= 15 && v.u.n <= 20))))
        bi_argerror(I, 5, "pch must be 0-5, 15-20 or NaN (none), got %g", v.u.n);
    }
  }
  Figure *f = cur_figure(I);
  if (f->nleg == f->capleg) {
    int cap = f->capleg ? 2 * f->capleg : 2;
    f->leg = mem_realloc(f->leg, (size_t)cap * sizeof *f->leg);
    f->capleg = cap;
  }
  PlotLegend *L = &f->leg[f->nleg++];
  L->pos = (PlotLegendPos)ipos;
  L->n = 0;
  L->items = mem_calloc((size_t)n, sizeof *L->items);   /* (n <= 100) */
  f->dirty = true;
  for (int k = 0; k < n; k++) {
    PlotLegendItem *it = &L->items[k];
    Value v = item_of(labels, k);
    char num[32];
    if (v.t == VT_NUM) snprintf(num, sizeof num, "%g", v.u.n);
    it->label = text_dup(v.t == VT_STR ? v.u.s->s : num);
    L->n++;
    it->col = black;
    if (bi_given(a, 2)) color_of(I, item_of(a->v[2], k), 3, &it->col);
    double pch = bi_given(a, 4) ? item_of(a->v[4], k).u.n : NAN;   /* NaN (R's NA): no symbol */
    it->pch = isnan(pch) ? -1 : (int)pch;
    it->lty = bi_given(a, 3) ? (int)item_of(a->v[3], k).u.n : (bi_given(a, 4) ? 0 : 1);
  }
  return val_null();
}

/* title(main=, xlab=, ylab=) */
Value bi_title(Interp *I, Args *a) {
  const char *s[3];
  for (int k = 0; k < 3; k++) s[k] = opt_str(I, a, k, NULL);
  Figure *f = cur_figure(I);
  char **slot[3] = { &f->main, &f->xlab, &f->ylab };
  for (int k = 0; k < 3; k++) {
    if (!s[k]) continue;
    char *c = text_dup(s[k]);
    mem_free(*slot[k]);
    *slot[k] = c;
  }
  f->dirty = true;
  return val_null();
}

/* dev.off(): finishes the open figure; returns its file name (NULL: none, or the display's). */
Value bi_dev_off(Interp *I, Args *a) {
  (void)a;
  if (!I->plot || !I->plot->cur) return val_null();
  Value r = I->plot->cur->file ? val_cstr(I->plot->cur->file) : val_null();
  tmp_push(I, r);
  plot_finish(I, true);
  tmp_pop(I, 1);
  return r;
}
