/* plot_builtins.c — the builtins of R's base graphics: plot, lines, points, hist, legend, title,
** abline, text, mtext, axis, image, barplot, boxplot, matplot, par and dev.off. Each checks all
** of its arguments before it touches the figure, so an error leaves the figure as it was and
** leaks nothing. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "builtins.h"
#include "mem.h"
#include "plot/plot_int.h"
#include "tensor.h"

/* ---- argument helpers ---- */

static const char *arg_name(Interp *I, int i) { return I->bi[I->cur_bi - builtin_table].names[i]->name; }

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

/* A column of data: the index 1..n, a number, a vector, or column col of a matrix. */
typedef struct Vec { Value v; int64_t n; int64_t col; bool index; } Vec;

static double vat(const Vec *x, int64_t k) {
  if (x->index) return (double)(k + 1);
  if (x->v.t == VT_NUM) return x->v.u.n;
  if (x->v.t == VT_BOOL) return x->v.u.b;
  if (x->col >= 0) return tensor_get(x->v.u.m, k, x->col);
  return tensor_at(x->v.u.m, k);
}

static Vec vec_arg(Interp *I, Args *a, int i) {
  Vec x = { a->v[i], vec_len(I, a, i), -1, false };
  return x;
}

/* A copy of x's n values in a new array (the caller owns it). */
static double *vec_copy(const Vec *x, int64_t n) {
  double *d = mem_alloc((size_t)(n > 0 ? n : 1) * sizeof(double));
  for (int64_t k = 0; k < n; k++) d[k] = vat(x, k);
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

/* The k-th of a per-item argument: a list or vector is recycled, anything else is one value. */
static Value item_of(Value v, int64_t k) {
  if (v.t == VT_LIST && v.u.l->n > 0) return v.u.l->items[k % v.u.l->n];
  if (v.t == VT_MAT && tensor_numel(v.u.m) > 0) return val_num(tensor_at(v.u.m, k % tensor_numel(v.u.m)));
  return v;
}

static int64_t items_in(Value v) {
  return v.t == VT_LIST ? v.u.l->n : v.t == VT_MAT ? tensor_numel(v.u.m) : 1;
}

/* col= as one colour or several (a list of colours, a vector of palette numbers), each checked;
** returns how many (0: not given, 1: *one). */
static int64_t colors_check(Interp *I, Args *a, int i, PlotColor *one) {
  if (!bi_given(a, i)) return 0;
  int64_t n = items_in(a->v[i]);
  if (n < 1) bi_argerror(I, i + 1, "at least one colour expected");
  PlotColor c;
  for (int64_t k = 0; k < n; k++) color_of(I, item_of(a->v[i], k), i + 1, k == 0 ? one : &c);
  return n;
}

/* The n colours of a col= that colors_check accepted, in a new array (the caller owns it). */
static PlotColor *colors_copy(Interp *I, Args *a, int i, int64_t n) {
  PlotColor *c = mem_alloc((size_t)n * sizeof *c);
  for (int64_t k = 0; k < n; k++) color_of(I, item_of(a->v[i], k), i + 1, &c[k]);   /* (checked: no throw) */
  return c;
}

static const PlotColor black = { 0, 0, 0, 1 };
static const PlotColor none = { 0, 0, 0, 0 };

/* One pch: R's numbers 0-25, or a one-character string (256 + the character). */
static int pch_of(Interp *I, Value v, int argn) {
  char d[64];
  if (v.t == VT_MAT && tensor_numel(v.u.m) == 1) v = val_num(tensor_at(v.u.m, 0));
  if (v.t == VT_STR) {
    unsigned char c = (unsigned char)v.u.s->s[0];
    if (!(c >= 32 && c < 127) || v.u.s->s[1]) bi_argerror(I, argn, "pch must be 0-25 or one ASCII character, got \"%s\"", v.u.s->s);
    return 256 + c;
  }
  if (v.t != VT_NUM) bi_argerror(I, argn, "pch must be 0-25 or one ASCII character, got %s", val_describe(v, d, sizeof d));
  double p = v.u.n;
  if (!(p == floor(p) && p >= 0 && p <= 25)) bi_argerror(I, argn, "pch must be 0-25 or one ASCII character, got %g", p);
  return (int)p;
}

/* pch= as one symbol (returned) or several, one per point (each checked; *n says how many). */
static int opt_pch(Interp *I, Args *a, int i, int dflt, int64_t *n) {
  if (n) *n = 0;
  if (!bi_given(a, i)) return dflt;
  Value v = a->v[i];
  int64_t k = items_in(v);
  if (n && k > 1 && v.t != VT_STR) {
    *n = k;
    for (int64_t j = 0; j < k; j++) pch_of(I, item_of(v, j), i + 1);
    return pch_of(I, item_of(v, 0), i + 1);
  }
  return pch_of(I, v, i + 1);
}

static int lty_of(Interp *I, double p, int argn) {
  if (!(p == floor(p) && p >= 0 && p <= 6)) bi_argerror(I, argn, "lty must be a whole number 0-6, got %g", p);
  return (int)p;
}

static int opt_lty(Interp *I, Args *a, int i, int dflt) {
  return bi_given(a, i) ? lty_of(I, bi_num(I, a, i), i + 1) : dflt;
}

static double opt_lwd(Interp *I, Args *a, int i) {
  double w = bi_opt_num(I, a, i, 1);
  if (!(w > 0 && w <= 100)) bi_argerror(I, i + 1, "lwd must be in (0, 100], got %g", w);
  return w;
}

static double opt_cex(Interp *I, Args *a, int i, double dflt) {
  double c = bi_opt_num(I, a, i, dflt);
  if (!(c > 0 && c <= 100)) bi_argerror(I, i + 1, "cex must be in (0, 100], got %g", c);
  return c;
}

/* xlim=, ylim=: two finite numbers, increasing. */
static bool opt_lim(Interp *I, Args *a, int i, double lim[2]) {
  if (!bi_given(a, i)) return false;
  const char *name = arg_name(I, i);
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

/* log="": "x", "y", "xy" or "yx" (R's log=). */
static void opt_log(Interp *I, Args *a, int i, bool *lx, bool *ly) {
  const char *s = opt_str(I, a, i, "");
  *lx = *ly = false;
  if (!strcmp(s, "x")) *lx = true;
  else if (!strcmp(s, "y")) *ly = true;
  else if (!strcmp(s, "xy") || !strcmp(s, "yx")) *lx = *ly = true;
  else if (*s) bi_argerror(I, i + 1, "log must be \"\", \"x\", \"y\" or \"xy\", got \"%s\"", s);
}

/* The range of the finite values of x (only the positive ones when pos: a log axis); false
** when none. */
static bool vec_range(const Vec *x, int64_t n, bool pos, double r[2]) {
  r[0] = INFINITY;
  r[1] = -INFINITY;
  for (int64_t k = 0; k < n; k++) {
    double v = vat(x, k);
    if (!isfinite(v) || (pos && v <= 0)) continue;
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

/* What the builtins that start a plot share: titles, the file and the size. */
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
    double v = iwidth < 0 ? (k ? 480 : 640) : bi_opt_num(I, a, iwidth + k, k ? 480 : 640);
    if (!(v >= 100 && v <= 10000 && v == floor(v)))
      bi_argerror(I, iwidth + k + 1, "%s must be a whole number in [100, 10000], got %g", k ? "height" : "width", v);
    if (k) o->height = (int)v; else o->width = (int)v;
  }
  if ((o->file || !I->display) && I->no_write) bi_error(I, "cannot draw: writing files is turned off");
}

/* The next default file number: one past the largest mlsplotNNN.png the working directory held
** when the session first needed one, so that a new session does not overwrite old figures. */
static int next_default_number(PlotState *st) {
  if (!st->looked) {
    st->looked = true;
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      int k, len = 0;
      if (sscanf(e->d_name, "mlsplot%d.png%n", &k, &len) == 1 && len > 0 && e->d_name[len] == 0 && k > st->count &&
          k < 1000000)
        st->count = k;
    }
    if (d) closedir(d);
  }
  return ++st->count;
}

/* The axes of a new plot: the data range lim (x0, x1, y0, y1; positive on a log axis), widened
** by 4% on each side (R's xaxs="r") unless exact has bit 1 (x) or 2 (y) set (xaxs="i"). */
typedef struct PlotAxes { double lim[4]; bool logx, logy; int exact; } PlotAxes;

/* Starts a new plot made by the call at sp: the next panel of the open figure when par(mfrow)
** leaves room on it (and o names no other file), else a new figure (the open one finished). */
static Panel *panel_start(Interp *I, const FigOpts *o, const PlotAxes *ax, const char *xlab, const char *ylab, Span sp) {
  plot_renderer(I);                          /* no cairo: the located error, before any change */
  PlotState *st = plot_state(I);
  Figure *f = st->cur;
  bool join = f && !st->new_page && f->np < f->rows * f->cols && f->rows == (st->rows ? st->rows : 1) &&
              f->cols == (st->cols ? st->cols : 1) && f->bycol == st->bycol && (!o->file || (f->user_file && !strcmp(o->file, f->file)));
  if (!join) {
    plot_finish(I, true);
    st->new_page = false;
    f = mem_calloc(1, sizeof *f);
    st->cur = f;                             /* owned from here on */
    f->rows = st->rows ? st->rows : 1;
    f->cols = st->cols ? st->cols : 1;
    f->bycol = st->bycol;
    memcpy(f->oma, st->par.oma, sizeof f->oma);
    f->oma_cex = st->par.cex;
    f->bg = st->par.bg;
    f->p = mem_calloc((size_t)(f->rows * f->cols), sizeof *f->p);
    f->span = sp;
    f->src = I->src;
    if (f->src) source_retain(f->src);
    f->fmt = o->fmt;
    f->width = o->width;
    f->height = o->height;
    f->stop = &I->interrupted;
    if (o->file) {
      f->file = mem_strdup(o->file);
      f->user_file = true;
    } else if (!I->display) {
      char name[32];
      f->number = next_default_number(st);
      snprintf(name, sizeof name, "mlsplot%03d.png", f->number);
      f->file = mem_strdup(name);
    }
  }
  Panel *p = &f->p[f->np++];
  memset(p, 0, sizeof *p);
  memcpy(p->mar, st->par.mar, sizeof p->mar);
  p->cex = st->par.cex;
  p->las = st->par.las;
  p->logx = ax->logx;
  p->logy = ax->logy;
  for (int k = 0; k < 2; k++) {
    bool lg = k ? ax->logy : ax->logx;
    double lo = ax->lim[2 * k], hi = ax->lim[2 * k + 1];
    if (lg) { lo = log10(lo); hi = log10(hi); }
    if ((ax->exact & (1 << k)) && lo < hi) { p->usr[2 * k] = lo; p->usr[2 * k + 1] = hi; }
    else plot_extend_range(lo, hi, p->usr + 2 * k);
  }
  p->axes = (1 << 1) | (1 << 2);
  p->box = true;
  f->dirty = true;
  p->main = o->main ? text_dup(o->main) : NULL;
  p->xlab = text_dup(o->xlab ? o->xlab : xlab);
  p->ylab = text_dup(o->ylab ? o->ylab : ylab);
  return p;
}

static PlotSeries *add_series(Panel *p) {
  if (p->ns == p->caps) {
    int cap = p->caps ? 2 * p->caps : 4;
    p->s = mem_realloc(p->s, (size_t)cap * sizeof *p->s);
    p->caps = cap;
  }
  PlotSeries *s = &p->s[p->ns++];
  memset(s, 0, sizeof *s);
  s->lwd = 1;
  s->lty = 1;
  s->cex = 1;
  s->col = black;
  return s;
}

/* The plot the figure's adders draw on (marked changed), or the "no plot" error. */
static Panel *cur_panel(Interp *I) {
  if (!I->plot || !I->plot->cur) bi_error(I, "no plot to draw on: call plot() or hist() first");
  Figure *f = I->plot->cur;
  return &f->p[f->np - 1];
}

static void touch(Interp *I) { I->plot->cur->dirty = true; }

/* The x and y of plot, lines and points: (x, y); (1..n, x) when y is not given; the columns of
** an n x 2 matrix x. */
static int64_t xy_args(Interp *I, Args *a, Vec *x, Vec *y) {
  Value v = a->v[0];
  if (!bi_given(a, 1) && v.t == VT_MAT && v.u.m->shape[1] == 2 && v.u.m->shape[0] != 1) {
    int64_t n = v.u.m->shape[0];
    *x = (Vec){ v, n, 0, false };
    *y = (Vec){ v, n, 1, false };
    return n;
  }
  Vec v0 = vec_arg(I, a, 0);
  if (!bi_given(a, 1)) { *x = (Vec){ v, v0.n, -1, true }; *y = v0; return v0.n; }
  Vec v1 = vec_arg(I, a, 1);
  if (v0.n != v1.n) bi_error(I, "x and y lengths differ (%lld and %lld)", (long long)v0.n, (long long)v1.n);
  *x = v0;
  *y = v1;
  return v0.n;
}

static int type_kind(Interp *I, Args *a, int i, const char *dflt) {
  const char *t = opt_str(I, a, i, dflt);
  if (!strcmp(t, "l")) return SER_LINE;
  if (!strcmp(t, "p")) return SER_POINTS;
  if (!strcmp(t, "b") || !strcmp(t, "o")) return SER_LINE | SER_POINTS;
  if (!strcmp(t, "n")) return 0;
  bi_argerror(I, i + 1, "type must be \"p\", \"l\", \"b\", \"o\" or \"n\", got \"%s\"", t);
}

/* The style of plot, lines, points and matplot's columns. */
typedef struct Style { int kind; PlotColor col, bg; int64_t ncol; int ccol; int pch, lty; double lwd, cex; int64_t npch; int cpch; } Style;

/* A new series of p through the points (x, y), with style st; icol: the argument of a col= of
** several colours (st->ncol > 1). */
static void add_xy_series(Interp *I, Args *a, Panel *p, const Style *st, const Vec *x, const Vec *y, int64_t n) {
  PlotSeries *s = add_series(p);
  s->kind = st->kind;
  s->col = st->col;
  s->fill = st->bg;
  s->lwd = st->lwd;
  s->lty = st->lty;
  s->pch = st->pch;
  s->cex = st->cex;
  s->x = vec_copy(x, n);
  s->y = vec_copy(y, n);
  s->n = n;
  if (st->ncol > 1) {
    s->cols = colors_copy(I, a, st->ccol, st->ncol);
    s->ncols = (int)(st->ncol < 1 << 30 ? st->ncol : 1 << 30);
  }
  if (st->npch > 1) {
    s->npchs = (int)(st->npch < 1 << 30 ? st->npch : 1 << 30);
    s->pchs = mem_alloc((size_t)s->npchs * sizeof *s->pchs);
    for (int k = 0; k < s->npchs; k++) s->pchs[k] = pch_of(I, item_of(a->v[st->cpch], k), st->cpch + 1);   /* (checked) */
  }
}

/* The range of x and y for a new plot with the given limits and log axes: an error when none. */
static void data_lims(Interp *I, Args *a, int ixlim, PlotAxes *ax, const Vec *x, const Vec *y, int64_t n) {
  for (int k = 0; k < 2; k++) {
    bool lg = k ? ax->logy : ax->logx;
    const char *nm = k ? "y" : "x";
    if (opt_lim(I, a, ixlim + k, ax->lim + 2 * k)) {
      if (lg && ax->lim[2 * k] <= 0) bi_argerror(I, ixlim + k + 1, "%slim must be positive on a log axis", nm);
    } else if (!vec_range(k ? y : x, n, lg, ax->lim + 2 * k)) {
      if (lg) bi_error(I, "%s has no positive finite values for a log axis: give %slim", nm, nm);
      bi_error(I, "%s has no finite values: give %slim", nm, nm);
    }
  }
}

/* ---- the builtins ---- */

/* plot(x, y=, type="p", main=, xlab=, ylab=, col=, xlim=, ylim=, file=, width=, height=, lwd=,
** lty=, pch=, log="", cex=1, axes=TRUE, bg=) */
Value bi_plot(Interp *I, Args *a) {
  Vec x, y;
  int64_t n = xy_args(I, a, &x, &y);
  Style st = { type_kind(I, a, 2, "p"), black, none, 0, 6, 1, 1, 1, 1, 0, 14 };
  FigOpts o;
  fig_opts(I, a, 3, 9, 10, &o);
  st.ncol = colors_check(I, a, 6, &st.col);
  PlotAxes ax = { { 0 }, false, false, 0 };
  opt_log(I, a, 15, &ax.logx, &ax.logy);
  st.lwd = opt_lwd(I, a, 12);
  st.lty = opt_lty(I, a, 13, 1);
  st.pch = opt_pch(I, a, 14, 1, &st.npch);
  st.cpch = 14;
  st.cex = opt_cex(I, a, 16, 1);
  bool axes = bi_opt_bool(I, a, 17, true);
  st.bg = opt_color(I, a, 18, none);
  data_lims(I, a, 7, &ax, &x, &y, n);
  bool mat = x.col == 0;
  Panel *p = panel_start(I, &o, &ax, mat ? "x[,1]" : x.index ? "Index" : "x", mat ? "x[,2]" : "y", a->span);
  if (!axes) { p->axes = 0; p->box = false; }
  if (st.kind) add_xy_series(I, a, p, &st, &x, &y, n);
  return val_null();
}

/* lines(x, y=, col=, lwd=, lty=, type="l") and points(x, y=, col=, pch=, type="p", cex=, bg=) */
static Value add_xy(Interp *I, Args *a, bool is_points) {
  Vec x, y;
  int64_t n = xy_args(I, a, &x, &y);
  Style st = { 0, black, none, 0, 2, 1, 1, 1, 1, 0, 3 };
  st.ncol = colors_check(I, a, 2, &st.col);
  if (is_points) {
    st.pch = opt_pch(I, a, 3, 1, &st.npch);
    st.cpch = 3;
    st.kind = type_kind(I, a, 4, "p");
    st.bg = opt_color(I, a, 6, none);
  } else {
    st.lwd = opt_lwd(I, a, 3);
    st.lty = opt_lty(I, a, 4, 1);
    st.kind = type_kind(I, a, 5, "l");
    if (st.ncol > 1) bi_argerror(I, 3, "lines() takes one colour");
  }
  Panel *p = cur_panel(I);
  st.cex = is_points ? opt_cex(I, a, 5, 1) : 1;   /* R: par("cex"), not the plot's cex= */
  touch(I);
  if (st.kind) add_xy_series(I, a, p, &st, &x, &y, n);
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
  if (!vec_range(&(Vec){ a->v[0], n, -1, false }, n, false, r)) bi_argerror(I, 1, "x has no finite values");
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
    PlotAxes ax = { { lim[0], lim[1], lim[2], lim[3] }, false, false, 0 };
    Panel *p = panel_start(I, &o, &ax, "x", "Frequency", a->span);
    p->box = false;
    if (!o.main) p->main = mem_strdup("Histogram");
    PlotSeries *s = add_series(p);
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
      if (j == 4 && !isnan(v.u.n) && !(v.u.n == floor(v.u.n) && v.u.n >= 0 && v.u.n <= 25))
        bi_argerror(I, 5, "pch must be 0-25 or NaN (none), got %g", v.u.n);
    }
  }
  Panel *f = cur_panel(I);
  touch(I);
  if (f->nleg == f->capleg) {
    int cap = f->capleg ? 2 * f->capleg : 2;
    f->leg = mem_realloc(f->leg, (size_t)cap * sizeof *f->leg);
    f->capleg = cap;
  }
  PlotLegend *L = &f->leg[f->nleg++];
  L->pos = (PlotLegendPos)ipos;
  L->n = 0;
  L->items = mem_calloc((size_t)n, sizeof *L->items);   /* (n <= 100) */
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
  Panel *f = cur_panel(I);
  touch(I);
  char **slot[3] = { &f->main, &f->xlab, &f->ylab };
  for (int k = 0; k < 3; k++) {
    if (!s[k]) continue;
    char *c = text_dup(s[k]);
    mem_free(*slot[k]);
    *slot[k] = c;
  }
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

/* abline(a=, b=, h=, v=, col=, lty=1, lwd=1): straight lines across the plot region. */
Value bi_abline(Interp *I, Args *a) {
  double A = 0, B = 0;
  bool ab = bi_given(a, 0) || bi_given(a, 1);
  if (bi_given(a, 0) && !bi_given(a, 1)) {
    if (vec_len(I, a, 0) != 2) bi_argerror(I, 1, "a must be two numbers (intercept and slope) when b is not given");
    A = vec_at(a, 0, 0);
    B = vec_at(a, 0, 1);
  } else if (ab) {
    if (bi_given(a, 0) && vec_len(I, a, 0) != 1) bi_argerror(I, 1, "a must be one number (the intercept)");
    if (vec_len(I, a, 1) != 1) bi_argerror(I, 2, "b must be one number (the slope)");
    A = bi_given(a, 0) ? vec_at(a, 0, 0) : 0;
    B = vec_at(a, 1, 0);
  }
  if (ab && !(isfinite(A) && isfinite(B))) bi_argerror(I, bi_given(a, 0) ? 1 : 2, "the intercept and slope must be finite");
  int64_t nh = bi_given(a, 2) ? vec_len(I, a, 2) : 0, nv = bi_given(a, 3) ? vec_len(I, a, 3) : 0;
  if (!ab && !nh && !nv) bi_error(I, "nothing to draw: give a and b, h or v");
  PlotColor col = opt_color(I, a, 4, black);
  int lty = opt_lty(I, a, 5, 1);
  double lwd = opt_lwd(I, a, 6);
  Panel *p = cur_panel(I);
  touch(I);
  PlotSeries *s = add_series(p);
  int64_t n = ab + nh + nv;
  s->kind = SER_ABLINE;
  s->col = col;
  s->lty = lty;
  s->lwd = lwd;
  s->x = mem_alloc((size_t)n * sizeof(double));
  s->y = mem_alloc((size_t)n * sizeof(double));
  s->ab = mem_alloc((size_t)(2 * n) * sizeof(double));
  s->n = n;
  int64_t k = 0;
  if (ab) { s->x[k] = s->y[k] = 0; s->ab[0] = A; s->ab[1] = B; k++; }
  for (int64_t i = 0; i < nh; i++, k++) { s->x[k] = NAN; s->y[k] = vec_at(a, 2, i); }
  for (int64_t i = 0; i < nv; i++, k++) { s->x[k] = vec_at(a, 3, i); s->y[k] = NAN; }
  return val_null();
}

/* A label as text (a string, or a number as print() would show it, %g), or an argument error. */
static void label_check(Interp *I, Value v, int argn) {
  char d[64];
  if (v.t != VT_STR && v.t != VT_NUM && v.t != VT_BOOL) bi_argerror(I, argn, "labels must be strings or numbers, got %s", val_describe(v, d, sizeof d));
}

static char *label_dup(Value v) {
  char num[40];
  if (v.t == VT_STR) return text_dup(v.u.s->s);
  snprintf(num, sizeof num, "%.15g", v.t == VT_BOOL ? (double)v.u.b : v.u.n);
  return mem_strdup(num);
}

/* The n labels of argument i (recycled; NULL when i is not given: 1..n) in a new array. */
static char **labels_copy(Args *a, int i, int64_t n) {
  char **l = mem_calloc((size_t)(n > 0 ? n : 1), sizeof *l);
  for (int64_t k = 0; k < n; k++) l[k] = bi_given(a, i) ? label_dup(item_of(a->v[i], k)) : label_dup(val_num((double)(k + 1)));
  return l;
}

/* text(x, y=, labels=, adj=0.5, pos=, cex=1, col=): labels at the points (x[i], y[i]). */
Value bi_text(Interp *I, Args *a) {
  Vec x, y;
  int64_t n = xy_args(I, a, &x, &y);
  if (bi_given(a, 2)) {
    int64_t nl = items_in(a->v[2]);
    if (nl < 1) bi_argerror(I, 3, "at least one label expected");
    for (int64_t k = 0; k < nl; k++) label_check(I, item_of(a->v[2], k), 3);
  }
  double adj = bi_opt_num(I, a, 3, 0.5);
  if (!isfinite(adj)) bi_argerror(I, 4, "adj must be finite");
  double pos = bi_opt_num(I, a, 4, 0);
  if (bi_given(a, 4) && !(pos == floor(pos) && pos >= 1 && pos <= 4)) bi_argerror(I, 5, "pos must be 1 (below), 2 (left), 3 (above) or 4 (right), got %g", pos);
  double cex = opt_cex(I, a, 5, 1);
  PlotColor col = black;
  int64_t ncol = colors_check(I, a, 6, &col);
  Panel *p = cur_panel(I);
  touch(I);
  PlotSeries *s = add_series(p);
  s->kind = SER_TEXT;
  s->x = vec_copy(&x, n);
  s->y = vec_copy(&y, n);
  s->n = n;
  s->lab = labels_copy(a, 2, n);
  s->adj = adj;
  s->pos = (int)pos;
  s->cex = cex;
  s->col = col;
  if (ncol > 1) { s->cols = colors_copy(I, a, 6, ncol); s->ncols = (int)(ncol < 1 << 30 ? ncol : 1 << 30); }
  return val_null();
}

static int side_of(Interp *I, Args *a, int i, int dflt) {
  double v = bi_opt_num(I, a, i, dflt);
  if (!(v == floor(v) && v >= 1 && v <= 4)) bi_argerror(I, i + 1, "side must be 1 (below), 2 (left), 3 (above) or 4 (right), got %g", v);
  return (int)v;
}

/* mtext(text, side=3, line=0, adj=0.5, at=, cex=1, col=): text in a margin of the plot. */
Value bi_mtext(Interp *I, Args *a) {
  label_check(I, a->v[0], 1);
  int side = side_of(I, a, 1, 3);
  double line = bi_opt_num(I, a, 2, 0), adj = bi_opt_num(I, a, 3, 0.5), at = bi_opt_num(I, a, 4, NAN);
  if (!(isfinite(line) && fabs(line) <= 100)) bi_argerror(I, 3, "line must be a finite number in [-100, 100]");
  if (!isfinite(adj)) bi_argerror(I, 4, "adj must be finite");
  if (bi_given(a, 4) && !isfinite(at)) bi_argerror(I, 5, "at must be finite");
  double cex = opt_cex(I, a, 5, 1);
  PlotColor col = opt_color(I, a, 6, black);
  Panel *p = cur_panel(I);
  touch(I);
  PlotSeries *s = add_series(p);
  s->kind = SER_MTEXT;
  s->n = 1;
  s->x = mem_alloc(sizeof(double));
  s->x[0] = at;
  s->lab = mem_calloc(1, sizeof *s->lab);
  s->lab[0] = label_dup(a->v[0]);
  s->side = side;
  s->line = line;
  s->adj = adj;
  s->cex = cex;
  s->col = col;
  return val_null();
}

/* axis(side, at=, labels=TRUE, tick=TRUE, col=): an axis with ticks at `at` (default: the pretty
** ones R would draw) labelled by labels (TRUE: the numbers, FALSE: none, or one per tick). */
Value bi_axis(Interp *I, Args *a) {
  int side = side_of(I, a, 0, 1);
  int64_t n = bi_given(a, 1) ? vec_len(I, a, 1) : 0;
  if (bi_given(a, 1) && n < 1) bi_argerror(I, 2, "at least one tick expected");
  for (int64_t k = 0; k < n; k++)
    if (!isfinite(vec_at(a, 1, k))) bi_argerror(I, 2, "at must be finite numbers");
  Value lv = a->v[2];
  bool show = true, given_labels = false;
  if (bi_given(a, 2)) {
    if (lv.t == VT_BOOL) show = lv.u.b;
    else {
      if (!bi_given(a, 1)) bi_argerror(I, 3, "labels other than TRUE or FALSE need at");
      if (items_in(lv) != n) bi_argerror(I, 3, "at and labels lengths differ (%lld and %lld)", (long long)n, (long long)items_in(lv));
      for (int64_t k = 0; k < n; k++) label_check(I, item_of(lv, k), 3);
      given_labels = true;
    }
  }
  bool tick = bi_opt_bool(I, a, 3, true);
  PlotColor col = opt_color(I, a, 4, black);
  Panel *p = cur_panel(I);
  touch(I);
  PlotSeries *s = add_series(p);
  s->kind = SER_AXIS;
  s->side = side;
  s->lty = tick ? 1 : 0;
  s->col = col;
  s->pos = show ? 0 : 1;                    /* (1: no labels) */
  if (n) {
    Vec at = vec_arg(I, a, 1);
    s->x = vec_copy(&at, n);
    s->n = n;
    if (given_labels) s->lab = labels_copy(a, 2, n);
  }
  return val_null();
}

/* R's default image() colours: hcl.colors(12, "YlOrRd", rev = TRUE). */
static const unsigned ylorrd[12] = { 0xFFFFC8, 0xFFF4B7, 0xFBE49A, 0xF8D074, 0xF7BA3C, 0xF5A100,
                                     0xF28400, 0xED6200, 0xE13C00, 0xC32200, 0xA20706, 0x7D0025 };

/* The n + 1 cell edges of image()'s x (or y): given centres (n) or edges (n + 1), or
** seq(0, 1, length = n) as centres; the midpoints between centres, the ends half a step out. */
static void cell_edges(const Vec *c, int64_t nc, int64_t n, double *e) {
  if (nc == n + 1) { for (int64_t k = 0; k <= n; k++) e[k] = vat(c, k); return; }
  if (n == 1) { double m = vat(c, 0); e[0] = m - 0.5; e[1] = m + 0.5; return; }
  for (int64_t k = 1; k < n; k++) e[k] = (vat(c, k - 1) + vat(c, k)) / 2;
  e[0] = vat(c, 0) - (vat(c, 1) - vat(c, 0)) / 2;
  e[n] = vat(c, n - 1) + (vat(c, n - 1) - vat(c, n - 2)) / 2;
}

/* image(x, y=, z=, zlim=, xlim=, ylim=, col=, main=, xlab=, ylab=, axes=TRUE, key=TRUE, file=,
** width=640, height=480): a grid of coloured cells, z[i, j] at (x[i], y[j]), as R's image(). */
Value bi_image(Interp *I, Args *a) {
  char d[64];
  int iz = bi_given(a, 2) ? 2 : 0;
  Value zv = a->v[iz];
  if (zv.t != VT_MAT) bi_argerror(I, iz + 1, "a matrix z expected, got %s", val_describe(zv, d, sizeof d));
  const Tensor *z = zv.u.m;
  int64_t nr = z->shape[0], nc = z->shape[1];
  if (nr < 1 || nc < 1) bi_argerror(I, iz + 1, "z has no cells");
  Vec xs = { val_null(), nr, -1, false }, ys = { val_null(), nc, -1, false };
  int64_t nxs = nr, nys = nc;
  if (iz == 2) {
    if (!bi_given(a, 1)) bi_argerror(I, 2, "y expected with x and z");
    xs = vec_arg(I, a, 0);
    ys = vec_arg(I, a, 1);
    nxs = xs.n;
    nys = ys.n;
    if (!(nxs == nr || nxs == nr + 1)) bi_argerror(I, 1, "x must have nrow(z) = %lld values (centres) or %lld (edges), got %lld", (long long)nr, (long long)nr + 1, (long long)nxs);
    if (!(nys == nc || nys == nc + 1)) bi_argerror(I, 2, "y must have ncol(z) = %lld values (centres) or %lld (edges), got %lld", (long long)nc, (long long)nc + 1, (long long)nys);
    for (int k = 0; k < 2; k++) {
      const Vec *v = k ? &ys : &xs;
      for (int64_t i = 0; i < v->n; i++)
        if (!isfinite(vat(v, i)) || (i > 0 && !(vat(v, i) > vat(v, i - 1)))) bi_argerror(I, k + 1, "%s must be finite and increasing", k ? "y" : "x");
    }
  } else if (bi_given(a, 1)) {
    bi_argerror(I, 2, "y needs z: image(x, y, z) or image(z)");
  }
  if (nr * nc > 16000000) bi_argerror(I, iz + 1, "z has %lld cells; at most 16000000 are drawn", (long long)(nr * nc));
  double zl[2];
  if (bi_given(a, 3)) {
    opt_lim(I, a, 3, zl);
  } else {
    zl[0] = INFINITY;
    zl[1] = -INFINITY;
    for (int64_t i = 0; i < nr; i++)
      for (int64_t j = 0; j < nc; j++) {
        double v = tensor_get(z, i, j);
        if (isfinite(v)) { zl[0] = fmin(zl[0], v); zl[1] = fmax(zl[1], v); }
      }
    if (!(zl[0] <= zl[1])) bi_argerror(I, iz + 1, "z has no finite values: give zlim");
    if (zl[0] == zl[1]) {                    /* as R: one value is widened */
      double c = zl[0];
      zl[0] = c == 0 ? -1 : c - 0.4 * fabs(c);
      zl[1] = c == 0 ? 1 : c + 0.4 * fabs(c);
    }
  }
  PlotColor c1;
  int64_t ncol = colors_check(I, a, 6, &c1);
  if (ncol > 1024) bi_argerror(I, 7, "at most 1024 colours, got %lld", (long long)ncol);
  double lim[4];
  bool gx = opt_lim(I, a, 4, lim), gy = opt_lim(I, a, 5, lim + 2);
  FigOpts o;
  fig_opts(I, a, 7, 12, 13, &o);
  bool axes = bi_opt_bool(I, a, 10, true), key = bi_opt_bool(I, a, 11, true);
  /* the cells' edges and colours: in the temporary tensor (freed by a throw) until the series owns them */
  Tensor *et = tensor_new(I, nr + nc + 2, 1);
  tmp_push(I, val_mat(et));
  double *ex = tensor_data(et), *ey = ex + nr + 1;
  if (iz == 2) {
    cell_edges(&xs, nxs, nr, ex);
    cell_edges(&ys, nys, nc, ey);
  } else {                                   /* seq(0, 1, length = n) */
    Tensor *ct = tensor_new(I, nr > nc ? nr : nc, 1);
    double *cv = tensor_data(ct);
    for (int k = 0; k < 2; k++) {
      int64_t n = k ? nc : nr;
      for (int64_t i = 0; i < n; i++) cv[i] = n > 1 ? (double)i / (double)(n - 1) : 0;
      Vec v = { val_mat(ct), n, -1, false };
      cell_edges(&v, n, n, k ? ey : ex);
    }
    val_release(val_mat(ct));
  }
  if (!gx) { lim[0] = ex[0]; lim[1] = ex[nr]; }
  if (!gy) { lim[2] = ey[0]; lim[3] = ey[nc]; }
  PlotAxes ax = { { lim[0], lim[1], lim[2], lim[3] }, false, false, 3 };
  Panel *p = panel_start(I, &o, &ax, iz == 2 ? "x" : "", iz == 2 ? "y" : "", a->span);
  if (!axes) p->axes = 0;
  PlotColor *pal;
  int npal = ncol ? (int)ncol : 12;
  if (ncol) pal = colors_copy(I, a, 6, ncol);
  else {
    pal = mem_alloc(12 * sizeof *pal);
    for (int k = 0; k < 12; k++) pal[k] = plot_rgb(ylorrd[k]);
  }
  if (key) {
    p->key = mem_calloc(1, sizeof *p->key);
    p->key->z0 = zl[0];
    p->key->z1 = zl[1];
    p->key->ncol = npal;
    p->key->col = pal;                       /* owned by the key */
  }
  PlotSeries *s = add_series(p);
  int64_t n = nr * nc;
  s->kind = SER_BOXES;
  s->col = none;                             /* no borders */
  s->fill = none;
  s->x = mem_alloc((size_t)(2 * n) * sizeof(double));
  s->y = mem_alloc((size_t)(2 * n) * sizeof(double));
  s->cols = mem_alloc((size_t)n * sizeof *s->cols);
  s->ncols = (int)n;
  s->n = n;
  for (int64_t i = 0; i < nr; i++)
    for (int64_t j = 0; j < nc; j++) {
      int64_t k = i * nc + j;
      double v = tensor_get(z, i, j), zi = floor((npal - 1e-5) * (v - zl[0]) / (zl[1] - zl[0]) + 1e-7);
      s->x[2 * k] = ex[i];
      s->x[2 * k + 1] = ex[i + 1];
      s->y[2 * k] = ey[j];
      s->y[2 * k + 1] = ey[j + 1];
      s->cols[k] = zi >= 0 && zi < npal ? pal[(int)zi] : none;   /* NaN or outside zlim: not drawn */
    }
  if (!key) mem_free(pal);
  tmp_pop(I, 1);
  val_release(val_mat(et));
  return val_null();
}

/* R's gray.colors(n): gray levels from 0.3 to 0.9, gamma 2.2 (n = 1: 0.3). */
static PlotColor gray_level(int k, int n) {
  double lv = n > 1 ? pow(pow(0.3, 2.2) + (pow(0.9, 2.2) - pow(0.3, 2.2)) * k / (n - 1), 1 / 2.2) : 0.3;
  PlotColor c = { lv, lv, lv, 1 };
  return c;
}

/* barplot(height, names.arg=, col=, main=, xlab=, ylab=, ylim=, space=, beside=FALSE, border=,
** axes=TRUE, file=): bars of a vector, or of a matrix's columns (stacked, or side by side).
** Returns the bars' midpoints (a matrix of them for beside=TRUE) invisibly, as R. */
Value bi_barplot(Interp *I, Args *a) {
  char d[64];
  Value hv = a->v[0];
  if (hv.t != VT_MAT && hv.t != VT_NUM) bi_argerror(I, 1, "numeric vector or matrix expected, got %s", val_describe(hv, d, sizeof d));
  bool ismat = hv.t == VT_MAT && hv.u.m->shape[0] > 1 && hv.u.m->shape[1] > 1;
  int64_t nr = ismat ? hv.u.m->shape[0] : 1, nc = ismat ? hv.u.m->shape[1] : vec_len(I, a, 0);
  if (nc < 1) bi_argerror(I, 1, "no bars to draw");
  if (nr * nc > 100000) bi_argerror(I, 1, "at most 100000 bars, got %lld", (long long)(nr * nc));
  for (int64_t k = 0; k < nr * nc; k++) {
    double v = ismat ? tensor_get(hv.u.m, k % nr, k / nr) : vec_at(a, 0, k);
    if (isinf(v)) bi_argerror(I, 1, "heights must be finite (or NaN: no bar)");
  }
  bool beside = ismat && bi_opt_bool(I, a, 8, false);
  int64_t ngroups = nc, nbars = beside ? nr * nc : nc;
  int64_t nnames = bi_given(a, 1) ? items_in(a->v[1]) : 0;
  if (nnames && nnames != ngroups) bi_argerror(I, 2, "names.arg must have %lld names, got %lld", (long long)ngroups, (long long)nnames);
  for (int64_t k = 0; k < nnames; k++) label_check(I, item_of(a->v[1], k), 2);
  PlotColor c1;
  int64_t ncol = colors_check(I, a, 2, &c1);
  FigOpts o;
  fig_opts(I, a, 3, 11, -1, &o);
  double lim[4];
  bool gy = opt_lim(I, a, 6, lim + 2);
  double sp[2] = { beside ? 0 : 0.2, 1 };
  if (bi_given(a, 7)) {
    int64_t ns = vec_len(I, a, 7);
    if (ns < 1 || ns > 2) bi_argerror(I, 8, "space must be one or two numbers");
    for (int64_t k = 0; k < ns; k++) {
      sp[k] = vec_at(a, 7, k);
      if (!(sp[k] >= 0 && sp[k] <= 100)) bi_argerror(I, 8, "space must be in [0, 100]");
    }
  }
  PlotColor border = opt_color(I, a, 9, black);
  bool axes = bi_opt_bool(I, a, 10, true);
  /* R: bar k spans [w.r - 1, w.r] with w.r = cumsum(space + 1); beside: space[1] within a group, space[2] before it */
  Tensor *mt = beside ? tensor_new(I, nr, nc) : tensor_new(I, nc, 1);
  tmp_push(I, val_mat(mt));
  double *mid = tensor_data(mt), wr = 0, ylo = 0, yhi = 0;
  for (int64_t k = 0; k < nbars; k++) {
    wr += (beside ? (k % nr == 0 ? sp[1] : sp[0]) : sp[0]) + 1;
    if (beside) mid[(k % nr) * nc + k / nr] = wr - 0.5;
    else mid[k] = wr - 0.5;
  }
  for (int64_t j = 0; j < nc; j++) {         /* ylim = range(-0.01 * tops, tops) over the stacks */
    double top = 0;
    for (int64_t i = 0; i < nr; i++) {
      double v = ismat ? tensor_get(hv.u.m, i, j) : vec_at(a, 0, j);
      if (isnan(v)) continue;
      top = beside ? v : top + v;
      ylo = fmin(ylo, fmin(top, -0.01 * top));
      yhi = fmax(yhi, fmax(top, -0.01 * top));
    }
  }
  if (!gy) { lim[2] = ylo; lim[3] = yhi; }
  if (lim[2] == lim[3]) { lim[2] -= 1; lim[3] += 1; }
  lim[0] = beside ? sp[1] : sp[0];           /* min(w.l) to max(w.r) */
  lim[1] = wr;
  PlotAxes ax = { { lim[0], lim[1], lim[2], lim[3] }, false, false, 2 };
  Panel *p = panel_start(I, &o, &ax, "", "", a->span);
  p->box = false;
  p->axes = axes ? 1 << 2 : 0;
  PlotSeries *s = add_series(p);
  s->kind = SER_BOXES;
  s->col = border;
  s->x = mem_alloc((size_t)(2 * nr * nc) * sizeof(double));
  s->y = mem_alloc((size_t)(2 * nr * nc) * sizeof(double));
  s->cols = mem_alloc((size_t)(nr * nc) * sizeof *s->cols);
  s->ncols = (int)(nr * nc);
  s->n = nr * nc;
  for (int64_t j = 0, k = 0; j < nc; j++) {
    double base = 0;
    for (int64_t i = 0; i < nr; i++, k++) {
      double v = ismat ? tensor_get(hv.u.m, i, j) : vec_at(a, 0, j);
      double m = beside ? mid[i * nc + j] : mid[j];
      s->x[2 * k] = m - 0.5;
      s->x[2 * k + 1] = m + 0.5;
      s->y[2 * k] = beside ? 0 : base;
      s->y[2 * k + 1] = isnan(v) ? NAN : (beside ? 0 : base) + v;
      if (!beside && !isnan(v)) base += v;
      int64_t ci = ismat ? i : j;            /* colours: one per row of a matrix, else per bar */
      if (ncol) color_of(I, item_of(a->v[2], ci), 3, &s->cols[k]);
      else s->cols[k] = ismat ? gray_level((int)i, (int)nr) : plot_rgb(0xBEBEBE);
    }
  }
  if (nnames) {
    PlotSeries *ls = add_series(p);
    ls->kind = SER_AXIS;
    ls->side = 1;
    ls->lty = 0;
    ls->x = mem_alloc((size_t)ngroups * sizeof(double));
    ls->n = ngroups;
    for (int64_t j = 0; j < nc; j++) {
      double m = 0;
      for (int64_t i = 0; i < (beside ? nr : 1); i++) m += beside ? mid[i * nc + j] : mid[j];
      ls->x[j] = m / (beside ? (double)nr : 1);
    }
    ls->lab = labels_copy(a, 1, ngroups);
  }
  tmp_pop(I, 1);
  return val_mat(mt);
}

/* boxplot's groups: a vector (one), a matrix's columns, or a list's vectors. */
static int64_t group_count(Interp *I, Args *a) {
  char d[64];
  Value x = a->v[0];
  if (x.t == VT_LIST) {
    if (x.u.l->n < 1) bi_argerror(I, 1, "no groups to draw");
    for (int k = 0; k < x.u.l->n; k++) {
      Value v = x.u.l->items[k];
      if (v.t != VT_NUM && !(v.t == VT_MAT && (v.u.m->shape[0] == 1 || v.u.m->shape[1] == 1)))
        bi_argerror(I, 1, "group %d: numeric vector expected, got %s", k + 1, val_describe(v, d, sizeof d));
    }
    return x.u.l->n;
  }
  if (x.t == VT_MAT && x.u.m->shape[0] > 1 && x.u.m->shape[1] > 1) return x.u.m->shape[1];
  vec_len(I, a, 0);
  return 1;
}

/* Group g as a Vec. */
static Vec group_vec(const Args *a, int64_t g) {
  Value x = a->v[0];
  if (x.t == VT_LIST) {
    Value v = x.u.l->items[g];
    return (Vec){ v, v.t == VT_NUM ? 1 : tensor_numel(v.u.m), -1, false };
  }
  if (x.t == VT_MAT && x.u.m->shape[0] > 1 && x.u.m->shape[1] > 1) return (Vec){ x, x.u.m->shape[0], g, false };
  return (Vec){ x, x.t == VT_MAT ? tensor_numel(x.u.m) : 1, -1, false };
}

/* R's boxplot.stats(x, coef): fivenum's Tukey hinges of the sorted finite values v[0..n-1];
** the whiskers reach the most extreme values within coef x the hinge spread of the box (all of
** them when coef is 0), the rest are outliers. */
static void box_stats(const double *v, int64_t n, double coef, double st[5]) {
  if (n == 0) { for (int k = 0; k < 5; k++) st[k] = NAN; return; }
  double n4 = floor((double)(n + 3) / 2) / 2, dd[5] = { 1, n4, (double)(n + 1) / 2, (double)(n + 1) - n4, (double)n };
  for (int k = 0; k < 5; k++) st[k] = 0.5 * (v[(int64_t)floor(dd[k]) - 1] + v[(int64_t)ceil(dd[k]) - 1]);
  if (coef > 0) {
    double iqr = st[3] - st[1], lo = st[1] - coef * iqr, hi = st[3] + coef * iqr;
    int64_t i = 0, j = n - 1;
    while (v[i] < lo) i++;
    while (v[j] > hi) j--;
    st[0] = v[i];
    st[4] = v[j];
  }
}

/* boxplot(x, names=, col=, main=, xlab=, ylab=, ylim=, range=1.5, file=, width=, height=,
** plot=TRUE): R's box-and-whisker plots of a vector, a matrix's columns or a list of vectors.
** Returns list(stats=, n=, out=, group=) invisibly, as R's (stats: 5 x groups). */
Value bi_boxplot(Interp *I, Args *a) {
  int64_t ng = group_count(I, a), nall = 0;
  if (ng > 10000) bi_argerror(I, 1, "at most 10000 groups, got %lld", (long long)ng);
  for (int64_t g = 0; g < ng; g++) nall += group_vec(a, g).n;
  int64_t nnames = bi_given(a, 1) ? items_in(a->v[1]) : 0;
  if (nnames && nnames != ng) bi_argerror(I, 2, "names must have %lld names, got %lld", (long long)ng, (long long)nnames);
  for (int64_t k = 0; k < nnames; k++) label_check(I, item_of(a->v[1], k), 2);
  double coef = bi_opt_num(I, a, 7, 1.5);
  if (!(coef >= 0 && isfinite(coef))) bi_argerror(I, 8, "range must be a finite number >= 0, got %g", coef);
  bool draw = bi_opt_bool(I, a, 11, true);
  PlotColor fill = none;
  int64_t ncol = 0;
  FigOpts o;
  double lim[4];
  bool gy = false;
  if (draw) {
    ncol = colors_check(I, a, 2, &fill);
    fig_opts(I, a, 3, 8, 9, &o);
    gy = opt_lim(I, a, 6, lim + 2);
  }
  /* the results (on the temp stack until returned): stats, n, a sorted copy of every group */
  Tensor *st = tensor_new(I, 5, ng);
  tmp_push(I, val_mat(st));
  Tensor *nt = tensor_new(I, 1, ng);
  tmp_push(I, val_mat(nt));
  Tensor *sorted = tensor_new(I, nall > 0 ? nall : 1, 1);
  tmp_push(I, val_mat(sorted));
  double *sv = tensor_data(sorted), *stats = tensor_data(st);
  int64_t nout = 0, off = 0;
  int64_t *start = bi_scratch(I, (size_t)(ng + 1) * sizeof *start);
  for (int64_t g = 0; g < ng; g++) {
    Vec v = group_vec(a, g);
    int64_t m = 0;
    for (int64_t k = 0; k < v.n; k++) {
      double x = vat(&v, k);
      if (isfinite(x)) sv[off + m++] = x;
    }
    qsort(sv + off, (size_t)m, sizeof(double), cmp_double);
    double b[5];
    box_stats(sv + off, m, coef, b);
    for (int k = 0; k < 5; k++) stats[k * ng + g] = b[k];
    tensor_data(nt)[g] = (double)m;
    for (int64_t k = 0; k < m; k++) nout += sv[off + k] < b[0] || sv[off + k] > b[4];
    start[g] = off;
    off += m;
  }
  start[ng] = off;
  Tensor *ot = tensor_new(I, nout, 1), *gt = NULL;
  tmp_push(I, val_mat(ot));
  gt = tensor_new(I, nout, 1);
  tmp_push(I, val_mat(gt));
  double ylo = INFINITY, yhi = -INFINITY;
  for (int64_t g = 0, j = 0; g < ng; g++)
    for (int64_t k = start[g]; k < start[g + 1]; k++) {
      double x = sv[k];
      ylo = fmin(ylo, x);
      yhi = fmax(yhi, x);
      if (x < stats[g] || x > stats[4 * ng + g]) { tensor_data(ot)[j] = x; tensor_data(gt)[j++] = (double)(g + 1); }
    }
  if (draw) {
    if (!gy) {
      if (!(ylo <= yhi)) bi_argerror(I, 1, "x has no finite values");
      lim[2] = ylo;
      lim[3] = yhi;
    }
    lim[0] = 0.5;
    lim[1] = (double)ng + 0.5;
    PlotAxes ax = { { lim[0], lim[1], lim[2], lim[3] }, false, false, 0 };
    Panel *p = panel_start(I, &o, &ax, "", "", a->span);
    p->axes = 1 << 2;
    /* boxes (boxwex 0.8), medians (lwd 3), dashed whiskers, staples (half the box), outliers */
    PlotSeries *bx = add_series(p), *med, *wh, *sta, *pts;
    bx->kind = SER_BOXES;
    bx->fill = fill;
    bx->x = mem_alloc((size_t)(2 * ng) * sizeof(double));
    bx->y = mem_alloc((size_t)(2 * ng) * sizeof(double));
    bx->n = ng;
    if (ncol > 1) { bx->cols = colors_copy(I, a, 2, ncol); bx->ncols = (int)ncol; }
    med = add_series(p);
    med->kind = SER_SEGS;
    med->lwd = 3;
    wh = add_series(p);
    wh->kind = SER_SEGS;
    wh->lty = 2;
    sta = add_series(p);
    sta->kind = SER_SEGS;
    PlotSeries *segs[3] = { med, wh, sta };
    int64_t nseg[3] = { ng, 2 * ng, 2 * ng };
    for (int k = 0; k < 3; k++) {
      segs[k]->x = mem_alloc((size_t)(2 * nseg[k]) * sizeof(double));
      segs[k]->y = mem_alloc((size_t)(2 * nseg[k]) * sizeof(double));
      segs[k]->n = nseg[k];
    }
    for (int64_t g = 0; g < ng; g++) {
      double c = (double)(g + 1), b[5];
      for (int k = 0; k < 5; k++) b[k] = stats[k * ng + g];
      bx->x[2 * g] = c - 0.4; bx->x[2 * g + 1] = c + 0.4; bx->y[2 * g] = b[1]; bx->y[2 * g + 1] = b[3];
      med->x[2 * g] = c - 0.4; med->x[2 * g + 1] = c + 0.4; med->y[2 * g] = med->y[2 * g + 1] = b[2];
      for (int e = 0; e < 2; e++) {
        int64_t k = 2 * g + e;
        wh->x[2 * k] = wh->x[2 * k + 1] = c;
        wh->y[2 * k] = e ? b[3] : b[1];
        wh->y[2 * k + 1] = e ? b[4] : b[0];
        sta->x[2 * k] = c - 0.2; sta->x[2 * k + 1] = c + 0.2;
        sta->y[2 * k] = sta->y[2 * k + 1] = e ? b[4] : b[0];
      }
    }
    if (nout) {
      pts = add_series(p);
      pts->kind = SER_POINTS;
      pts->pch = 1;
      Vec ox = { val_mat(gt), nout, -1, false }, oy = { val_mat(ot), nout, -1, false };
      pts->x = vec_copy(&ox, nout);
      pts->y = vec_copy(&oy, nout);
      pts->n = nout;
    }
    if (ng > 1 || nnames) {
      PlotSeries *ls = add_series(p);
      ls->kind = SER_AXIS;
      ls->side = 1;
      ls->x = mem_alloc((size_t)ng * sizeof(double));
      for (int64_t g = 0; g < ng; g++) ls->x[g] = (double)(g + 1);
      ls->n = ng;
      ls->lab = labels_copy(a, 1, ng);
    }
  }
  bi_scratch_free(I, start);
  List *l = list_new(I, 4);
  static const char *const names[] = { "stats", "n", "out", "group" };
  Value vals[4] = { I->tmp[I->ntmp - 5], I->tmp[I->ntmp - 4], I->tmp[I->ntmp - 2], I->tmp[I->ntmp - 1] };
  for (int k = 0; k < 4; k++) {
    val_retain(vals[k]);
    list_push(l, vals[k], sym_intern(&I->syms, names[k], strlen(names[k])));
  }
  for (int k = 0; k < 5; k++) val_release(I->tmp[I->ntmp - 1 - k]);
  tmp_pop(I, 5);
  return val_list(l);
}

/* R's matplot pch: "1".."9", "0", then the letters. */
static int matplot_pch(int64_t k) {
  static const char s[] = "1234567890abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
  return 256 + s[k % (int64_t)(sizeof s - 1)];
}

/* matplot(x, y=, type="p", col=, lty=, pch=, lwd=1, main=, xlab=, ylab=, xlim=, ylim=, file=,
** width=, height=, log="", cex=1): the columns of y against x (or against 1..n), one series each,
** with R's default styles per column: colours 1-6, line types 1-5, symbols "1", "2" ... */
Value bi_matplot(Interp *I, Args *a) {
  char d[64];
  int iy = bi_given(a, 1) ? 1 : 0;
  Value yv = a->v[iy];
  if (yv.t != VT_MAT && yv.t != VT_NUM) bi_argerror(I, iy + 1, "numeric matrix expected, got %s", val_describe(yv, d, sizeof d));
  bool yvec = yv.t == VT_NUM || yv.u.m->shape[0] == 1 || yv.u.m->shape[1] == 1;
  int64_t n = yv.t == VT_NUM ? 1 : yvec ? tensor_numel(yv.u.m) : yv.u.m->shape[0], m = yvec ? 1 : yv.u.m->shape[1];
  if (m > 10000) bi_argerror(I, iy + 1, "at most 10000 columns, got %lld", (long long)m);
  bool xmat = false;
  if (iy == 1) {
    Value xv = a->v[0];
    if (xv.t == VT_MAT && xv.u.m->shape[0] > 1 && xv.u.m->shape[1] > 1) {
      if (xv.u.m->shape[0] != n || xv.u.m->shape[1] != m)
        bi_argerror(I, 1, "a matrix x must have y's shape %lldx%lld", (long long)n, (long long)m);
      xmat = true;
    } else if (vec_len(I, a, 0) != n) {
      bi_error(I, "x and y lengths differ (%lld and %lld)", (long long)vec_len(I, a, 0), (long long)n);
    }
  }
  int kind = type_kind(I, a, 2, "p");
  PlotColor c1;
  int64_t ncol = colors_check(I, a, 3, &c1);
  int64_t nlty = bi_given(a, 4) ? items_in(a->v[4]) : 0, npch = bi_given(a, 5) ? items_in(a->v[5]) : 0;
  for (int64_t k = 0; k < nlty; k++) {
    Value v = item_of(a->v[4], k);
    if (v.t != VT_NUM) bi_argerror(I, 5, "lty: number expected, got %s", val_describe(v, d, sizeof d));
    lty_of(I, v.u.n, 5);
  }
  for (int64_t k = 0; k < npch; k++) pch_of(I, item_of(a->v[5], k), 6);
  double lwd = opt_lwd(I, a, 6);
  FigOpts o;
  fig_opts(I, a, 7, 12, 13, &o);
  PlotAxes ax = { { 0 }, false, false, 0 };
  opt_log(I, a, 15, &ax.logx, &ax.logy);
  double cex = opt_cex(I, a, 16, 1);
  /* the range over every column */
  Vec xs[1], ys[1];
  double r[2], lx[2] = { INFINITY, -INFINITY }, ly[2] = { INFINITY, -INFINITY };
  for (int64_t j = 0; j < m; j++) {
    ys[0] = yvec ? (Vec){ yv, n, -1, false } : (Vec){ yv, n, j, false };
    xs[0] = iy == 0 ? (Vec){ yv, n, -1, true } : xmat ? (Vec){ a->v[0], n, j, false } : (Vec){ a->v[0], n, -1, false };
    if (vec_range(xs, n, ax.logx, r)) { lx[0] = fmin(lx[0], r[0]); lx[1] = fmax(lx[1], r[1]); }
    if (vec_range(ys, n, ax.logy, r)) { ly[0] = fmin(ly[0], r[0]); ly[1] = fmax(ly[1], r[1]); }
  }
  for (int k = 0; k < 2; k++) {
    double *l = k ? ly : lx;
    const char *nm = k ? "y" : "x";
    bool lg = k ? ax.logy : ax.logx;
    if (opt_lim(I, a, 10 + k, ax.lim + 2 * k)) {
      if (lg && ax.lim[2 * k] <= 0) bi_argerror(I, 11 + k, "%slim must be positive on a log axis", nm);
    } else {
      if (!(l[0] <= l[1])) bi_error(I, "%s has no %sfinite values: give %slim", nm, lg ? "positive " : "", nm);
      ax.lim[2 * k] = l[0];
      ax.lim[2 * k + 1] = l[1];
    }
  }
  Panel *p = panel_start(I, &o, &ax, iy == 0 ? "" : "x", iy == 0 ? "" : "y", a->span);
  if (!kind) return val_null();
  for (int64_t j = 0; j < m; j++) {
    Style st = { kind, black, none, 0, 3, matplot_pch(j), (int)(j % 5) + 1, lwd, cex, 0, 5 };
    if (ncol) color_of(I, item_of(a->v[3], j), 4, &st.col);
    else plot_color_index((double)(j % 6 + 1), &st.col);
    if (nlty) st.lty = (int)item_of(a->v[4], j).u.n;
    if (npch) st.pch = pch_of(I, item_of(a->v[5], j), 6);
    ys[0] = yvec ? (Vec){ yv, n, -1, false } : (Vec){ yv, n, j, false };
    xs[0] = iy == 0 ? (Vec){ yv, n, -1, true } : xmat ? (Vec){ a->v[0], n, j, false } : (Vec){ a->v[0], n, -1, false };
    add_xy_series(I, a, p, &st, xs, ys, n);
  }
  return val_null();
}

/* The par() settings, in the order of par's parameters (ORDER bi_par's signature). */
static const char *const par_names[] = { "mfrow", "mfcol", "mar", "oma", "cex", "las", "bg" };
enum { PAR_MFROW, PAR_MFCOL, PAR_MAR, PAR_OMA, PAR_CEX, PAR_LAS, PAR_BG, PAR_N };

/* n numbers of setting `what` (argument argn) into out. */
static void par_nums(Interp *I, Value v, int argn, const char *what, double *out, int n) {
  char d[64];
  int64_t len = v.t == VT_NUM ? 1 : v.t == VT_MAT ? tensor_numel(v.u.m) : -1;
  if (len < 0) bi_argerror(I, argn, "%s: numbers expected, got %s", what, val_describe(v, d, sizeof d));
  if (len != n) bi_argerror(I, argn, "%s must be %d number%s, got %lld", what, n, n > 1 ? "s" : "", (long long)len);
  for (int k = 0; k < n; k++) out[k] = v.t == VT_NUM ? v.u.n : tensor_at(v.u.m, k);
}

/* The current value of setting k, +1. */
static Value par_value(Interp *I, const PlotState *st, int k) {
  const PlotPar *p = &st->par;
  switch (k) {
  case PAR_MFROW: case PAR_MFCOL: case PAR_MAR: case PAR_OMA: {
    int n = k <= PAR_MFCOL ? 2 : 4;
    Tensor *t = tensor_new(I, 1, n);
    double *x = tensor_data(t);
    if (k <= PAR_MFCOL) { x[0] = st->rows ? st->rows : 1; x[1] = st->cols ? st->cols : 1; }
    else memcpy(x, k == PAR_MAR ? p->mar : p->oma, 4 * sizeof(double));
    return val_mat(t);
  }
  case PAR_CEX: return val_num(p->cex);
  case PAR_LAS: return val_num(p->las);
  default: return p->bgname[0] ? val_cstr(p->bgname) : val_num(p->bgnum);
  }
}

/* par(mfrow=, mfcol=, mar=, oma=, cex=, las=, bg=): R's graphics parameters for the next plots,
** held in the interpreter's PlotState. par(op) takes a list of them (what par() returned).
** Returns the old values of the settings given, or all of them when none is, as a list;
** par("mar") returns the one value. */
Value bi_par(Interp *I, Args *a) {
  char d[64];
  Value in[PAR_N];
  int argn[PAR_N];
  for (int k = 0; k < PAR_N; k++) { in[k] = val_unbound(); argn[k] = k + 1; }
  if (bi_given(a, 0) && a->v[0].t == VT_STR) {       /* par("mar"): the one value */
    int k = 0;
    while (k < PAR_N && strcmp(a->v[0].u.s->s, par_names[k])) k++;
    if (k == PAR_N) bi_argerror(I, 1, "'%s' is not a par() setting (mfrow, mfcol, mar, oma, cex, las, bg)", a->v[0].u.s->s);
    for (int j = 1; j < PAR_N; j++)
      if (bi_given(a, j)) bi_argerror(I, j + 1, "par(\"%s\") asks for a value; it sets nothing", a->v[0].u.s->s);
    return par_value(I, plot_state(I), k);
  }
  if (bi_given(a, 0) && a->v[0].t == VT_LIST) {      /* par(op) */
    const List *l = a->v[0].u.l;
    for (int32_t i = 0; i < l->n; i++) {
      const Symbol *nm = l->names ? l->names[i] : NULL;
      int k = 0;
      while (k < PAR_N && !(nm && !strcmp(nm->name, par_names[k]))) k++;
      if (k == PAR_N) bi_argerror(I, 1, "item %d of the list is not a par() setting (%s)", (int)i + 1, nm ? nm->name : "no name");
      in[k] = l->items[i];
    }
  } else if (bi_given(a, 0)) {
    in[0] = a->v[0];
  }
  for (int k = 1; k < PAR_N; k++)
    if (bi_given(a, k)) in[k] = a->v[k];
  bool any = false;
  for (int k = 0; k < PAR_N; k++) any |= in[k].t != VT_UNBOUND;
  /* check every setting before changing any */
  double rc[2][2], mar[4], oma[4], cex = 0, las = 0;
  PlotColor bg = { 1, 1, 1, 1 };
  for (int k = PAR_MFROW; k <= PAR_MFCOL; k++) {
    if (in[k].t == VT_UNBOUND) continue;
    par_nums(I, in[k], argn[k], par_names[k], rc[k], 2);
    for (int j = 0; j < 2; j++)
      if (!(rc[k][j] == floor(rc[k][j]) && rc[k][j] >= 1 && rc[k][j] <= 20))
        bi_argerror(I, argn[k], "%s must be two whole numbers in [1, 20], got %g", par_names[k], rc[k][j]);
  }
  for (int k = PAR_MAR; k <= PAR_OMA; k++) {
    if (in[k].t == VT_UNBOUND) continue;
    double *m = k == PAR_MAR ? mar : oma;
    par_nums(I, in[k], argn[k], par_names[k], m, 4);
    for (int j = 0; j < 4; j++)
      if (!(m[j] >= 0 && m[j] <= 100)) bi_argerror(I, argn[k], "%s: margins must be in [0, 100] lines, got %g", par_names[k], m[j]);
  }
  if (in[PAR_CEX].t != VT_UNBOUND) {
    par_nums(I, in[PAR_CEX], argn[PAR_CEX], "cex", &cex, 1);
    if (!(cex > 0 && cex <= 100)) bi_argerror(I, argn[PAR_CEX], "cex must be in (0, 100], got %g", cex);
  }
  if (in[PAR_LAS].t != VT_UNBOUND) {
    par_nums(I, in[PAR_LAS], argn[PAR_LAS], "las", &las, 1);
    if (!(las == 0 || las == 1 || las == 2 || las == 3)) bi_argerror(I, argn[PAR_LAS], "las must be 0, 1, 2 or 3, got %g", las);
  }
  Value bgv = in[PAR_BG];
  if (bgv.t != VT_UNBOUND) {
    if (bgv.t == VT_MAT && tensor_numel(bgv.u.m) == 1) bgv = val_num(tensor_at(bgv.u.m, 0));
    if (bgv.t != VT_STR && bgv.t != VT_NUM) bi_argerror(I, argn[PAR_BG], "bg: a colour expected, got %s", val_describe(bgv, d, sizeof d));
    if (bgv.t == VT_STR && bgv.u.s->len >= sizeof ((PlotPar *)0)->bgname) bi_argerror(I, argn[PAR_BG], "bg: unknown colour '%s'", bgv.u.s->s);
    color_of(I, bgv, argn[PAR_BG], &bg);
  }
  /* the old values */
  PlotState *st = plot_state(I);
  List *l = list_new(I, PAR_N);
  tmp_push(I, val_list(l));
  for (int k = 0; k < PAR_N; k++)
    if (!any || in[k].t != VT_UNBOUND) list_push(l, par_value(I, st, k), sym_intern(&I->syms, par_names[k], strlen(par_names[k])));
  tmp_pop(I, 1);
  /* the new ones: mfrow and mfcol set cex as R does (1; 0.83 for 2 x 2; 0.66 with 3 or more
  ** rows or columns) before a cex= given with them. Given both (par(op) of what par() returned),
  ** mfrow wins and the panels fill by rows, as in R, whose par() list has mfcol before mfrow */
  for (int k = PAR_MFCOL; k >= PAR_MFROW; k--) {
    if (in[k].t == VT_UNBOUND) continue;
    st->rows = (int)rc[k][0];
    st->cols = (int)rc[k][1];
    st->bycol = k == PAR_MFCOL;
    st->new_page = true;
    st->par.cex = st->rows >= 3 || st->cols >= 3 ? 0.66 : st->rows == 2 && st->cols == 2 ? 0.83 : 1;
  }
  if (in[PAR_MAR].t != VT_UNBOUND) memcpy(st->par.mar, mar, sizeof mar);
  if (in[PAR_OMA].t != VT_UNBOUND) memcpy(st->par.oma, oma, sizeof oma);
  if (in[PAR_CEX].t != VT_UNBOUND) st->par.cex = cex;
  if (in[PAR_LAS].t != VT_UNBOUND) st->par.las = (int)las;
  if (bgv.t != VT_UNBOUND) {
    st->par.bg = bg;
    st->par.bgname[0] = '\0';
    st->par.bgnum = 0;
    if (bgv.t == VT_STR) memcpy(st->par.bgname, bgv.u.s->s, bgv.u.s->len + 1);
    else st->par.bgnum = bgv.u.n;
  }
  return val_list(l);
}
