/*
** err.h — the one error mechanism (Lua's ldo.c): mls_throw() longjmps to the innermost
** mls_pcall(), which releases the temporaries and frames pushed since it started.
*/
#ifndef MLS_ERR_H
#define MLS_ERR_H

#include <setjmp.h>
#include "mls.h"

typedef struct ErrJmp {
  struct ErrJmp *prev;
  jmp_buf buf;
  int defer_mark;            /* I->ndefers when it was pushed */
} ErrJmp;

/* Throws a runtime error located at sp in the source being run. */
l_noret mls_throw(Interp *I, Span sp, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Throws an error located in src, taking over the caller's reference to src. */
struct Source;
l_noret mls_throw_in(Interp *I, struct Source *src, Span sp, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Re-throws the error already recorded in I (after a nested pcall caught it). */
l_noret mls_rethrow(Interp *I);
/* C-owned memory live across a possible throw (a text buffer, a graph being built), which the
** temp stack of Values cannot hold: a throw runs the cleanups registered since the innermost
** mls_pcall, newest first, before it longjmps, while the frames that own them still exist (so
** p may point into the caller's frame). mls_defer runs fn(p) itself if it cannot record it.
** mls_undefer pops the newest entry, which must be p, without running it. */
typedef void (*CleanupFn)(void *p);
void mls_defer(Interp *I, CleanupFn fn, void *p);
void mls_undefer(Interp *I, void *p);
/* Runs f(I, ud); returns 0, or 1 when an error was thrown (recorded in I->err). */
int mls_pcall(Interp *I, void (*f)(Interp *I, void *ud), void *ud);

#endif
