/*
** err.c — throwing and catching runtime errors (Lua ldo.c: luaD_throw / luaD_rawrunprotected).
** A throw records the message, the location in the running source and the call stack, then
** longjmps; mls_pcall restores the temp stack and frames it found and releases the rest.
*/
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "err.h"
#include "interp/interp.h"
#include "mem.h"

static void record_trace(Interp *I) {
  size_t k = 0;
  I->err.trace[0] = '\0';
  for (int i = I->nframes - 1; i >= -1 && k + 200 < sizeof I->err.trace; i--) {
    if ((I->gchain || I->gchain_up) && i == I->gchain_at - 1) {  /* a graph node: the calls it was */
      ChainLink self = { I->gchain, I->gchain_up };                /* inlined through, then its loop nodes' */
      for (const ChainLink *l = &self; l; l = l->up)
        for (int c = l->c ? l->c->n - 1 : -1; c >= 0 && k + 200 < sizeof I->err.trace; c--) {
          const InlineFrame *q = &l->c->f[c];
          char where[512];
          if (q->entry && I->gentry_src) diag_where(where, sizeof where, I->gentry_src, I->gentry_sp.start);
          else if (q->call_src) diag_where(where, sizeof where, q->call_src, q->call_site.start);
          else snprintf(where, sizeof where, "?");
          k += (size_t)snprintf(I->err.trace + k, sizeof I->err.trace - k, "  in %s() at %s\n", q->name, where);
        }
    }
    if (i < 0) break;
    const Frame *f = &I->frames[i];
    if (!f->entered) continue;             /* failed while binding its arguments */
    char where[512];
    if (f->call_src) diag_where(where, sizeof where, f->call_src, f->call_site.start);
    else snprintf(where, sizeof where, "?");
    const char *name = !f->fi ? "source" : f->fi->name ? f->fi->name->name : "<anonymous>";
    k += (size_t)snprintf(I->err.trace + k, sizeof I->err.trace - k, "  in %s() at %s\n", name, where);
    if (I->nframes - i == 20 && i > 10) {       /* deep recursion: show both ends */
      k += (size_t)snprintf(I->err.trace + k, sizeof I->err.trace - k, "  ... (%d more)\n", i - 10);
      i = 10;
    }
  }
}

l_noret mls_throw(Interp *I, Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(I->err.msg, sizeof I->err.msg, fmt, ap);
  va_end(ap);
  if (I->err.src) source_release(I->err.src);
  I->err.src = I->src;
  if (I->err.src) source_retain(I->err.src);
  I->err.span = sp;
  I->err.status = 1;
  I->err.warning = I->warn_pending;
  I->warn_pending = false;
  record_trace(I);
  mls_rethrow(I);
}

l_noret mls_throw_in(Interp *I, Source *src, Span sp, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(I->err.msg, sizeof I->err.msg, fmt, ap);
  va_end(ap);
  if (I->err.src) source_release(I->err.src);
  I->err.src = src;
  I->err.span = sp;
  I->err.status = 1;
  I->err.warning = I->warn_pending;
  I->warn_pending = false;
  record_trace(I);
  mls_rethrow(I);
}

l_noret mls_rethrow(Interp *I) {
  if (!I->errjmp) {
    fprintf(stderr, "mls: unprotected error: %s\n", I->err.msg);
    abort();
  }
  while (I->ndefers > I->errjmp->defer_mark) {   /* the cleanups this throw passes, newest first */
    Defer d = I->defers[--I->ndefers];
    d.fn(d.p);
  }
  longjmp(I->errjmp->buf, 1);
}

void mls_defer(Interp *I, CleanupFn fn, void *p) {
  if (I->ndefers == I->capdefers) {
    int cap = I->capdefers ? I->capdefers * 2 : 32;
    Defer *d = mem_try_realloc(I->defers, (size_t)cap * sizeof(Defer));
    if (!d) {
      fn(p);
      mem_oom((size_t)cap * sizeof(Defer));
    }
    I->defers = d;
    I->capdefers = cap;
  }
  I->defers[I->ndefers++] = (Defer){ fn, p };
}

void mls_undefer(Interp *I, void *p) {
  MLS_ASSERT(I->ndefers > 0 && I->defers[I->ndefers - 1].p == p);
  I->ndefers--;
}

int mls_pcall(Interp *I, void (*f)(Interp *I, void *ud), void *ud) {
  ErrJmp j;
  int tmark = I->ntmp, fmark = I->nframes, depth = I->eval_depth;
  Env *env = I->env;
  Source *src = I->src;
  const char *backward_of = I->ad_backward_of;
  Span call_span = I->call_span;
  const InlineChain *gchain = I->gchain;
  int gchain_at = I->gchain_at;
  const ChainLink *gchain_up = I->gchain_up;
  Source *gentry_src = I->gentry_src;
  Span gentry_sp = I->gentry_sp;
  struct Tape *stage = I->stage;             /* (an op that threw while a stage set it aside) */
  j.prev = I->errjmp;
  j.defer_mark = I->ndefers;
  I->errjmp = &j;
  volatile int status = 0;
  if (setjmp(j.buf) == 0) {
    f(I, ud);
  } else {
    status = 1;
    tmp_release_to(I, tmark);
    while (I->nframes > fmark) {
      Frame *fr = &I->frames[--I->nframes];
      env_release(fr->env);
    }
    I->env = env;
    I->src = src;
    I->call_span = call_span;
    I->gchain = gchain;
    I->gchain_at = gchain_at;
    I->gchain_up = gchain_up;
    I->gentry_src = gentry_src;
    I->gentry_sp = gentry_sp;
    I->stage = stage;
    I->ad_backward_of = backward_of;
    I->eval_depth = depth;
    I->ctl = CTL_NONE;
    val_release(I->retval);
    I->retval = val_null();
  }
  I->errjmp = j.prev;
  return status;
}
