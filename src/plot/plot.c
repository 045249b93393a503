/* plot.c — the figures' life cycle (docs/plots.md): plot() and hist() open a figure and finish
** the one before; a finished figure is written to its file (default mlsplot%03d.png) or, with
** I->display set, queued for plot_flush, which also brings the open figure up to date. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "builtins.h"
#include "mem.h"
#include "plot/plot_int.h"
#include "plugin.h"

/* The renderer (render.c): linked in (the unit tests, the fuzz harness) or the plugin
** libmls_plot.so, loaded once per process on the first figure. */
extern const PlotRenderer mls_plot_plugin __attribute__((weak));
static Plugin renderer = { .file = "libmls_plot.so", .entry = "mls_plot_plugin", .needs = "plots need cairo",
                           .linked = &mls_plot_plugin };

const PlotRenderer *plot_renderer(Interp *I) {
  const PlotRenderer *r = plugin_get(&renderer);
  if (!r) bi_error(I, "%s", renderer.why);
  return r;
}

/* Without throwing: the renderer, or NULL with the reason in err. */
static const PlotRenderer *renderer_or(char *err, size_t n) {
  const PlotRenderer *r = plugin_get(&renderer);
  if (!r) snprintf(err, n, "%s", renderer.why);
  return r;
}

PlotState *plot_state(Interp *I) {
  if (!I->plot) {
    PlotState *st = mem_calloc(1, sizeof(PlotState));
    PlotPar d = { { 5.1, 4.1, 4.1, 2.1 }, { 0, 0, 0, 0 }, 1, 0, { 1, 1, 1, 1 }, "white", 0 };
    st->par = d;                             /* R's defaults */
    I->plot = st;
  }
  return I->plot;
}

void plot_series_free(PlotSeries *s) {
  mem_free(s->x);
  mem_free(s->y);
  mem_free(s->ab);
  mem_free(s->cols);
  mem_free(s->pchs);
  if (s->lab)
    for (int64_t j = 0; j < s->n; j++) mem_free(s->lab[j]);
  mem_free(s->lab);
}

static void panel_free(Panel *p) {
  for (int i = 0; i < p->ns; i++) plot_series_free(&p->s[i]);
  mem_free(p->s);
  for (int i = 0; i < p->nleg; i++) {
    for (int j = 0; j < p->leg[i].n; j++) mem_free(p->leg[i].items[j].label);
    mem_free(p->leg[i].items);
  }
  mem_free(p->leg);
  if (p->key) mem_free(p->key->col);
  mem_free(p->key);
  mem_free(p->main);
  mem_free(p->xlab);
  mem_free(p->ylab);
}

void plot_figure_free(Figure *f) {
  if (!f) return;
  for (int i = 0; i < f->np; i++) panel_free(&f->p[i]);
  mem_free(f->p);
  mem_free(f->file);
  if (f->src) source_release(f->src);
  mem_free(f);
}

bool plot_format_of(const char *path, PlotFormat *fmt) {
  const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
  if (!dot || (slash && dot < slash) || dot == path || (slash && dot == slash + 1)) return false;
  if (!strcasecmp(dot, ".png")) *fmt = PF_PNG;
  else if (!strcasecmp(dot, ".svg")) *fmt = PF_SVG;
  else if (!strcasecmp(dot, ".pdf")) *fmt = PF_PDF;
  else return false;
  return true;
}

/* Writes f to its file when it changed; the first write of a default-named file says so. */
static bool write_figure(Interp *I, Figure *f, char *err, size_t n) {
  if (!f->dirty) return true;
  const PlotRenderer *r = renderer_or(err, n);
  if (!r || !r->write_file(f, f->file, err, n)) return false;
  if (!f->user_file && f->number > 0) {
    fprintf(I->out, "plot: %s\n", f->file);
    f->number = -f->number;                 /* announced once */
  }
  f->dirty = false;
  return true;
}

static void display(Interp *I, Figure *f) {
  char err[512];
  size_t len;
  const PlotRenderer *r = renderer_or(err, sizeof err);
  unsigned char *png = r ? r->png_bytes(f, &len, err, sizeof err) : NULL;
  if (!png) { fprintf(I->errf, "plot: %s\n", err); return; }
  I->display(I, "image/png", png, len, I->display_ctx);
  free(png);
  f->dirty = false;
}

void plot_finish(Interp *I, bool throw_errors) {
  PlotState *st = I->plot;
  if (!st || !st->cur) return;
  Figure *f = st->cur;
  st->cur = NULL;
  if (!f->file) {                           /* the display's: shown at the next plot_flush */
    if (!f->dirty) { plot_figure_free(f); return; }
    if (st->ndone == st->capdone) {
      int cap = st->capdone ? 2 * st->capdone : 4;
      Figure **d = mem_try_realloc(st->done, (size_t)cap * sizeof *d);
      if (!d) { plot_figure_free(f); return; }
      st->done = d;
      st->capdone = cap;
    }
    st->done[st->ndone++] = f;
    return;
  }
  char err[600];
  if (f->write_failed) f->dirty = true;
  bool ok = write_figure(I, f, err, sizeof err);
  plot_figure_free(f);
  if (ok) return;
  if (throw_errors && I->interrupted) interp_check_interrupt(I, I->call_span);   /* Ctrl-C while it rendered */
  if (throw_errors) bi_error(I, "%s", err);
  fprintf(I->errf, "plot: %s\n", err);
}

void plot_flush(Interp *I) {
  PlotState *st = I->plot;
  if (!st) return;
  for (int i = 0; i < st->ndone; i++) {
    if (I->display) display(I, st->done[i]);
    plot_figure_free(st->done[i]);
  }
  st->ndone = 0;
  Figure *f = st->cur;
  if (!f || !f->dirty) return;
  if (f->file) {
    char err[600];
    if (!write_figure(I, f, err, sizeof err)) {
      fprintf(I->errf, "plot: %s\n", err);
      f->dirty = false;                     /* said once; dev.off() tries again */
      f->write_failed = true;
    }
  } else if (I->display) {
    display(I, f);
  }
}

static void end_protected(Interp *I, void *ud) {
  (void)ud;
  PlotState *st = I->plot;
  Figure *f = st->cur;
  st->cur = NULL;
  char err[600];
  if (f->write_failed) f->dirty = true;
  bool ok = write_figure(I, f, err, sizeof err);
  Source *src = f->src;
  Span sp = f->span;
  f->src = NULL;
  plot_figure_free(f);
  if (ok) {
    if (src) source_release(src);
    return;
  }
  mls_throw_in(I, src, sp, "%s (the figure this call opened is written when the script ends)", err);
}

int plot_end(Interp *I, int status) {
  if (!I->plot || !I->plot->cur || !I->plot->cur->file) return status;   /* (the display's: plot_free) */
  if (mls_pcall(I, end_protected, NULL) == 0) return status;
  interp_report_error(I);
  return status ? status : 1;
}

void plot_free(Interp *I) {
  if (!I->plot) return;
  plot_finish(I, false);                    /* a script's last figure is written at its end */
  PlotState *st = I->plot;
  for (int i = 0; i < st->ndone; i++) plot_figure_free(st->done[i]);
  mem_free(st->done);
  mem_free(st);
  I->plot = NULL;
}
