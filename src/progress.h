/*
** progress.h — the bar of `for (i in progress(x))` (issue 13): drawn on standard error only
** when it is a terminal, redrawn at most ten times a second, sized to the terminal's width.
*/
#ifndef MLS_PROGRESS_H
#define MLS_PROGRESS_H

#include <stdio.h>
#include "mls.h"

typedef struct Progress { bool on; int64_t total; double t0, last; FILE *f; int fd; bool *open; } Progress;

/* Starts a bar for total steps on f (off unless f is a terminal; MLS_PROGRESS=0 turns it off).
** *open (the interpreter's bar_open) is true while the bar's line is drawn and unfinished: an
** error report ends that line first, and print() clears it (progress_clear) before writing. */
void progress_start(Progress *p, FILE *f, int64_t total, bool *open);
/* Erases an unfinished bar line on f (the next step redraws it). */
void progress_clear(FILE *f, bool *open);
/* done steps of total are finished: redraws when a tenth of a second has passed (or at the end). */
void progress_step(Progress *p, int64_t done);
/* Ends the bar's line (after the loop, broken out of or not). */
void progress_end(Progress *p);
/* The width of the terminal on fd: its size (ioctl), else $COLUMNS, else 80. */
int term_columns(int fd);

#endif
