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

/* bits of PlotSeries.kind; a series is one call's drawing. The data kinds are clipped to the
** plot region; SER_AXIS and SER_MTEXT draw in the margins. */
enum {
  SER_LINE = 1, SER_POINTS = 2,
  SER_RECTS = 4,             /* histogram bars: x the n+1 breaks, y the n heights */
  SER_BOXES = 8,             /* n rectangles: x[2i], x[2i+1] left and right, y[2i], y[2i+1] bottom and top */
  SER_SEGS = 16,             /* n segments (x[2i], y[2i]) to (x[2i+1], y[2i+1]) */
  SER_TEXT = 32,             /* labels lab[i] at (x[i], y[i]) */
  SER_ABLINE = 64,           /* n lines: x[i] = NaN: y = y[i]; y[i] = NaN: x = x[i]; else ab[] */
  SER_AXIS = 128,            /* an axis on side `side`: ticks at x[i], labels lab[i] (NULL: the number) */
  SER_MTEXT = 256            /* lab[0] in margin `side`, line `line`, at x[0] (NaN: the middle) */
};

/* One call's data. Coordinates are data values (a log axis maps them when drawn). The arrays
** and strings belong to the series. */
typedef struct PlotSeries {
  int kind;
  int64_t n;
  double *x, *y;
  double *ab;                /* SER_ABLINE: a[i] = ab[2i], b[i] = ab[2i+1] (NULL: none) */
  char **lab;                /* SER_TEXT, SER_AXIS, SER_MTEXT: n labels (SER_MTEXT: 1) */
  PlotColor col;             /* line, point, text and border colour (a = 0: no border) */
  PlotColor fill;            /* bars, boxes and filled symbols 21-25 (a = 0: not filled) */
  PlotColor *cols;           /* per point or box (recycled; NULL: col, or fill for boxes) */
  int ncols;
  int pch;                   /* point symbol, R's numbers 0-25; 256 + c: the character c */
  int *pchs;                 /* per point (recycled; NULL: pch) */
  int npchs;
  int lty;                   /* 0 none, 1 solid, 2 dashed, 3 dotted, 4 dot-dash ... */
  double lwd;
  double cex;                /* symbol and text size (1: 0.6 and 1 times the font) */
  int side;                  /* SER_AXIS, SER_MTEXT: 1 below, 2 left, 3 above, 4 right */
  double line;               /* SER_MTEXT: the margin line */
  double adj;                /* SER_TEXT: 0 left, 0.5 centred, 1 right */
  int pos;                   /* SER_TEXT: 0, or R's pos: 1 below, 2 left, 3 above, 4 right */
} PlotSeries;

typedef struct PlotLegendItem { char *label; PlotColor col; int pch; int lty; } PlotLegendItem;

typedef enum {
  LEG_TOPRIGHT, LEG_TOPLEFT, LEG_BOTTOMRIGHT, LEG_BOTTOMLEFT, LEG_TOP, LEG_BOTTOM, LEG_LEFT,
  LEG_RIGHT, LEG_CENTER
} PlotLegendPos;

typedef struct PlotLegend { PlotLegendPos pos; int n; PlotLegendItem *items; } PlotLegend;

/* An image()'s colour key in the right margin: ncol colours over [z0, z1]. */
typedef struct PlotKey { double z0, z1; int ncol; PlotColor *col; } PlotKey;

/* One plot in the figure (par(mfrow) puts several on a page): its coordinates and contents. */
typedef struct Panel {
  double usr[4];             /* x0, x1, y0, y1: the range the plot region shows (log10 of it on a log axis) */
  bool logx, logy;
  int axes;                  /* bits 1 << side of the default pretty axes (sides 1 and 2: 6) */
  bool box;
  char *main, *xlab, *ylab;  /* owned; NULL: none */
  PlotSeries *s;
  int ns, caps;
  PlotLegend *leg;
  int nleg, capleg;
  PlotKey *key;              /* NULL: none */
  double mar[4];             /* par(mar) when it was started: margins in lines (bottom, left, top, right) */
  double cex;                /* par(cex) then: text, symbols and margin lines scale by it */
  int las;                   /* par(las) then: 0 labels parallel to the axis, 1 horizontal, 2 perpendicular, 3 vertical */
} Panel;

typedef struct Figure {
  int number;                /* the default file's number k (mlsplot%03d.png); 0: file= or the display's */
  char *file;                /* where it is written (owned); NULL: the display hook only */
  bool user_file;            /* file= was given (no message when it is written) */
  PlotFormat fmt;
  int width, height;         /* pixels (png) or points (svg, pdf) */
  int rows, cols;            /* par(mfrow) or par(mfcol) when it was opened: rows x cols panels */
  bool bycol;                /* par(mfcol): the panels fill the columns first */
  double oma[4];             /* par(oma) then: outer margins in lines (bottom, left, top, right) */
  double oma_cex;            /* par(cex) then: the size of an outer margin line */
  PlotColor bg;              /* par(bg) then: the page is painted with it */
  Panel *p;                  /* the panels so far (1 .. rows * cols); p[np - 1] is drawn on */
  int np;
  bool dirty;                /* changed since it was last written or displayed */
  bool write_failed;         /* plot_flush could not write it (dev.off() tries again) */
  const volatile sig_atomic_t *stop;   /* the interpreter's Ctrl-C flag: rendering stops */
  struct Source *src;        /* retained: where the plot() or hist() call that opened it is */
  Span span;                 /* that call (the location of an error writing it at the end) */
} Figure;

/* The par() settings the next plots take (R's graphics parameters), held by the interpreter
** (PlotState, I->plot) as R's device state; plot_state() sets R's defaults. */
typedef struct PlotPar {
  double mar[4];             /* c(5.1, 4.1, 4.1, 2.1) lines */
  double oma[4];             /* c(0, 0, 0, 0) lines */
  double cex;                /* 1; par(mfrow=) and par(mfcol=) set it to 1, 0.83 or 0.66 as R does */
  int las;                   /* 0 */
  PlotColor bg;              /* "white" */
  char bgname[32];           /* bg as given: a colour name, or "" when bgnum holds a palette number */
  double bgnum;
} PlotPar;

typedef struct PlotState {
  Figure *cur;               /* the open figure lines(), points(), legend() and title() draw on */
  Figure **done;             /* finished but not yet displayed (display mode only) */
  int ndone, capdone;
  int count;                 /* the last default file number used (mlsplot%03d.png) */
  bool looked;               /* count starts from the files the working directory holds */
  int rows, cols;            /* par(mfrow) or par(mfcol) */
  bool bycol;                /* the last of them was par(mfcol) */
  PlotPar par;               /* mar, oma, cex, las, bg */
  bool new_page;             /* par(mfrow=) was called: the next plot starts a new figure */
} PlotState;

/* ---- layout (render.c): R's defaults at 72 units per inch ---- */
#define PLOT_FONT 12.0                    /* pointsize */
#define PLOT_LINE (1.2 * PLOT_FONT)       /* one margin line */

/* Draws f on a cairo context of f->width x f->height units. */
struct _cairo;
void plot_render(const Figure *f, struct _cairo *cr);
/* Writes f to path in format f->fmt (through a temporary file renamed over path). Returns
** false with a message in err on failure. */
bool plot_write_file(const Figure *f, const char *path, char *err, size_t errn);
/* f as PNG bytes (malloc'd; the caller frees), or NULL with a message in err. */
unsigned char *plot_png_bytes(const Figure *f, size_t *len, char *err, size_t errn);
/* render.c is the plugin libmls_plot.so (plugin.h), so that only a run that draws loads cairo:
** its entry, mls_plot_plugin, is this table of the two functions above, which plot.c calls. */
typedef struct PlotRenderer {
  bool (*write_file)(const Figure *f, const char *path, char *err, size_t errn);
  unsigned char *(*png_bytes)(const Figure *f, size_t *len, char *err, size_t errn);
} PlotRenderer;

/* ---- scales (scale.c) ---- */
/* R's pretty() idea: about n+1 equally spaced round values (1, 2 or 5 times a power of ten)
** covering [lo, hi], at least min_n intervals. Writes at most max values to out; returns how
** many there are (0 for a non-finite range, or one whose step underflows or overflows). */
int plot_pretty(double lo, double hi, int n, int min_n, double *out, int max);
/* The axis range R's xaxs="r" shows for data in [lo, hi]: 4% more on each side. */
void plot_extend_range(double lo, double hi, double out[2]);
/* Tick labels as R's axis() writes them: the n values formatted together (R's formatReal with 7
** digits: fixed notation unless scientific is narrower, one number of decimals for all);
** writes n strings of at most PLOT_LABEL bytes to out. */
#define PLOT_LABEL 40
void plot_tick_labels(const double *v, int n, char (*out)[PLOT_LABEL]);
/* The ticks R's axis() puts on a log axis showing 10^lo .. 10^hi (R's GLpretty and
** CreateAtVector): 10^k, 1-5-10 or 1-2-5-10 steps, or pretty() when it spans under a decade.
** Returns how many (at most max). */
int plot_log_ticks(double lo, double hi, double *out, int max);
/* A colour by name ("red", "#RRGGBB", "#RRGGBBAA") or R's palette() index (1 black, 2 red...);
** false when unknown. */
bool plot_color_name(const char *name, PlotColor *c);
bool plot_color_index(double k, PlotColor *c);
/* The opaque colour 0xRRGGBB. */
PlotColor plot_rgb(unsigned rgb);

/* ---- figures (plot.c) ---- */
PlotState *plot_state(Interp *I);
/* The renderer, loaded on the first call; without it (no cairo: the plugin is missing or its
** libraries are) a located error at the call: "plots need cairo: libmls_plot.so could not be
** loaded (...)". plot(), hist() ... call it before they open a figure. */
const PlotRenderer *plot_renderer(Interp *I);
/* Finishes the open figure, if any: written to its file, or queued for the display hook. */
void plot_finish(Interp *I, bool throw_errors);
/* The format from a file name's extension; false when it is not .png, .svg or .pdf. */
bool plot_format_of(const char *path, PlotFormat *fmt);
void plot_figure_free(Figure *f);
void plot_series_free(PlotSeries *s);

#endif
