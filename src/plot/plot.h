/* plot.h — R-style base graphics (plot, lines, points, hist, legend, title) drawn with cairo.
** The figure state lives in I->plot; a front end with I->display set gets figures through
** plot_flush instead of files. */
#ifndef MLS_PLOT_H
#define MLS_PLOT_H
#include "interp/interp.h"

/* Brings the outputs up to date: hands every figure changed since the last call to I->display
** (as "image/png"), or, without a display, writes the open figure to its file when it changed.
** The Jupyter kernel calls it after each cell, the REPL after each input. */
void plot_flush(Interp *I);
/* The end of a script (mpi_run_script): writes the open figure to its file. A write that fails
** is reported as a located error (at the plot() or hist() call that opened the figure) on
** I->errf; returns status then, or 1 when status was 0, else status. */
int plot_end(Interp *I, int status);
/* Frees the figure state (interp_free calls it). */
void plot_free(Interp *I);

#endif
