/*
** progress.h — the bar of `for (i in progress(x))` (issue 13): drawn on standard error only
** when it is a terminal, redrawn at most ten times a second, sized to the terminal's width.
*/
#ifndef MLS_PROGRESS_H
#define MLS_PROGRESS_H

#include <stdio.h>
#include "mls.h"

/* A front end that redraws output in place (the Jupyter kernel: display_data, then
** update_display_data) shows the bar itself: phase 0 is a new bar, 1 a redraw of it; text is
** the bar's line (no newline); ctx is the one given to progress_start_shown. */
typedef void (*ProgressShow)(void *ctx, int phase, int64_t done, int64_t total, const char *text);

typedef struct Progress {
  bool on;
  int64_t total, at, drawn;       /* at: the step reached; drawn: the step last shown (-1: none) */
  double t0, last;
  FILE *f;
  int fd;
  bool *open;
  ProgressShow show;              /* NULL: drawn on f */
  void *ctx;
} Progress;

/* Starts a bar for total steps on f (off unless f is a terminal; MLS_PROGRESS=0 turns it off).
** *open (the interpreter's bar_open) is true while the bar's line is drawn and unfinished: an
** error report ends that line first, and print() clears it (progress_clear) before writing. */
void progress_start(Progress *p, FILE *f, int64_t total, bool *open);
/* Starts a bar for total steps shown by show(ctx, ...) (MLS_PROGRESS=0 turns it off). */
void progress_start_shown(Progress *p, ProgressShow show, void *ctx, int64_t total);
/* Erases an unfinished bar line on f (the next step redraws it). */
void progress_clear(FILE *f, bool *open);
/* done steps of total are finished: redraws when a tenth of a second has passed (or at the end). */
void progress_step(Progress *p, int64_t done);
/* Ends the bar's line (after the loop, broken out of or not). */
void progress_end(Progress *p);
/* The width of the terminal on fd: its size (ioctl), else $COLUMNS, else 80. */
int term_columns(int fd);

#endif
