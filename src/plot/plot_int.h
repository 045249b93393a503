/* plot_int.h — the figure model shared by src/plot/: a Figure is a display list (series,
** legends, titles) over one coordinate system, rendered by cairo only when it is written. */
#ifndef MLS_PLOT_INT_H
#define MLS_PLOT_INT_H
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "plot/plot.h"

typedef enum { PF_PNG, PF_SVG, PF_PDF } PlotFormat;

typedef struct PlotColor { double r, g, b, a; } PlotColor;

enum { SER_LINE = 1, SER_POINTS = 2, SER_RECTS = 4 };   /* bits of PlotSeries.kind */

/* One call's data: lines and/or points through (x[i], y[i]); SER_RECTS: the bars of a
** histogram, x the n+1 breaks and y the n heights. The arrays belong to the series. */
typedef struct PlotSeries {
  int kind;
  int64_t n;
  double *x, *y;
  PlotColor col;             /* line, point and bar-border colour */
  PlotColor fill;            /* bars (a = 0: not filled) */
  int pch;                   /* point symbol, R's numbers (1 open circle, 16 filled, ...) */
  int lty;                   /* 1 solid, 2 dashed, 3 dotted, 4 dot-dash */
  double lwd;
} PlotSeries;

typedef struct PlotLegendItem { char *label; PlotColor col; int pch; int lty; } PlotLegendItem;

typedef enum {
  LEG_TOPRIGHT, LEG_TOPLEFT, LEG_BOTTOMRIGHT, LEG_BOTTOMLEFT, LEG_TOP, LEG_BOTTOM, LEG_LEFT,
  LEG_RIGHT, LEG_CENTER
} PlotLegendPos;

typedef struct PlotLegend { PlotLegendPos pos; int n; PlotLegendItem *items; } PlotLegend;

typedef struct Figure {
  int number;                /* 1, 2, ... in the session: the default file mlsplot%03d.png */
  char *file;                /* where it is written (owned); NULL: the display hook only */
  bool user_file;            /* file= was given (no message when it is written) */
  PlotFormat fmt;
  int width, height;         /* pixels (png) or points (svg, pdf) */
  double usr[4];             /* x0, x1, y0, y1: the data range the plot region shows */
  bool axes;
  char *main, *xlab, *ylab;  /* owned; NULL: none */
  PlotSeries *s;
  int ns, caps;
  PlotLegend *leg;
  int nleg, capleg;
  bool dirty;                /* changed since it was last written or displayed */
  bool write_failed;         /* plot_flush could not write it (dev.off() tries again) */
  bool box;
  const volatile sig_atomic_t *stop;   /* the interpreter's Ctrl-C flag: rendering stops */
  struct Source *src;        /* retained: where the plot() or hist() call that opened it is */
  Span span;                 /* that call (the location of an error writing it at the end) */
} Figure;

typedef struct PlotState {
  Figure *cur;               /* the open figure lines(), points(), legend() and title() draw on */
  Figure **done;             /* finished but not yet displayed (display mode only) */
  int ndone, capdone;
  int count;                 /* figures started so far */
} PlotState;

/* ---- layout (render.c): R's defaults at 72 units per inch ---- */
#define PLOT_FONT 12.0                    /* pointsize */
#define PLOT_LINE (1.2 * PLOT_FONT)       /* one margin line */
#define PLOT_MAR_BOTTOM (5.1 * PLOT_LINE)
#define PLOT_MAR_LEFT (4.1 * PLOT_LINE)
#define PLOT_MAR_TOP (4.1 * PLOT_LINE)
#define PLOT_MAR_RIGHT (2.1 * PLOT_LINE)

/* Draws f on a cairo context of f->width x f->height units. */
struct _cairo;
void plot_render(const Figure *f, struct _cairo *cr);
/* Writes f to path in format f->fmt (through a temporary file renamed over path). Returns
** false with a message in err on failure. */
bool plot_write_file(const Figure *f, const char *path, char *err, size_t errn);
/* f as PNG bytes (malloc'd; the caller frees), or NULL with a message in err. */
unsigned char *plot_png_bytes(const Figure *f, size_t *len, char *err, size_t errn);

/* ---- scales (scale.c) ---- */
/* R's pretty() idea: about n+1 equally spaced round values (1, 2 or 5 times a power of ten)
** covering [lo, hi], at least min_n intervals. Writes at most max values to out; returns how
** many there are (0 for a non-finite range, or one whose step underflows or overflows). */
int plot_pretty(double lo, double hi, int n, int min_n, double *out, int max);
/* The axis range R's xaxs="r" shows for data in [lo, hi]: 4% more on each side. */
void plot_extend_range(double lo, double hi, double out[2]);
/* Tick labels: formats v with as many decimals as the step between ticks needs. */
void plot_tick_label(double v, double step, char *buf, size_t n);
/* A colour by name ("red", "#RRGGBB", "#RRGGBBAA") or R's palette() index (1 black, 2 red...);
** false when unknown. */
bool plot_color_name(const char *name, PlotColor *c);
bool plot_color_index(double k, PlotColor *c);

/* ---- figures (plot.c) ---- */
PlotState *plot_state(Interp *I);
/* Finishes the open figure, if any: written to its file, or queued for the display hook. */
void plot_finish(Interp *I, bool throw_errors);
/* The format from a file name's extension; false when it is not .png, .svg or .pdf. */
bool plot_format_of(const char *path, PlotFormat *fmt);
void plot_figure_free(Figure *f);

#endif
