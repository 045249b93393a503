/*
** state.c — what every layer does with the interpreter's state (state.h): the temp stack's
** growth and release, the interrupt check, the --nan-check error, a value as a condition or a
** number.
*/
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include "autodiff.h"
#include "mem.h"
#include "state.h"
#include "tensor.h"

/* Makes room on the temp stack for pending, which the caller hands over: if the stack cannot
** grow, pending is released before the out-of-memory error is raised. */
void tmp_grow(Interp *I, Value pending);
void tmp_grow(Interp *I, Value pending) {
  int cap = I->captmp ? I->captmp * 2 : 256;
  Value *t = mem_try_realloc(I->tmp, (size_t)cap * sizeof(Value));
  if (!t) {
    val_release(pending);
    mem_oom((size_t)cap * sizeof(Value));
  }
  I->tmp = t;
  I->captmp = cap;
}

void tmp_release_to(Interp *I, int mark) {
  while (I->ntmp > mark) val_release(I->tmp[--I->ntmp]);
}

l_noret nan_check_fail(Interp *I, const char *op, Span sp) {
  if (I->ad_backward_of)
    mls_throw(I, sp, "nan-check: '%s' turned finite inputs into NaN or Inf (in the backward pass of '%s')", op, I->ad_backward_of);
  mls_throw(I, sp, "nan-check: '%s' turned finite inputs into NaN or Inf", op);
}

static void abstract_why(Interp *I, Span sp, const char *fmt, va_list ap) {
  char msg[200], where[112] = "";
  vsnprintf(msg, sizeof msg, fmt, ap);
  if (I->src && sp.end > 0) diag_where(where, sizeof where, I->src, sp.start);
  snprintf(I->abstract_why, sizeof I->abstract_why, "%s%s%s", msg, where[0] ? " at " : "", where);
}

void interp_abstract_note(Interp *I, Span sp, const char *fmt, ...) {
  if (I->abstract_pending) return;
  va_list ap;
  va_start(ap, fmt);
  abstract_why(I, sp, fmt, ap);
  va_end(ap);
  I->abstract_pending = true;
}

l_noret interp_abstract_stop(Interp *I, Span sp, const char *fmt, ...) {
  if (!I->abstract_pending) {
    va_list ap;
    va_start(ap, fmt);
    abstract_why(I, sp, fmt, ap);
    va_end(ap);
  }
  I->abstract_pending = false;
  I->abstract_stopped = true;
  mls_throw(I, sp, "%s", I->abstract_why);
}

/* The flag stays set until the outermost run ends (interp.c run_hooked): code that catches an
** error to go on another way (constant folding, a capture's plain rerun) stops at its next poll
** too, so nothing after the interrupted statement runs. */
void interp_check_interrupt(Interp *I, Span sp) {
  int sig = I->interrupted;                    /* the signal's number, or 1 (the REPL's Ctrl-C) */
  if (sig) mls_throw(I, sp, sig == SIGTERM ? "terminated (SIGTERM)" : "interrupted");
}

/* ---- conversions ---- */
bool val_truth(Interp *I, Value v, Span sp) {
  char d[64];
  double x;
  v = ad_concrete(I, v, sp, "a condition");
  interp_abstract_poll(I, sp);
  switch (v.t) {
  case VT_BOOL: return v.u.b;
  case VT_NUM: x = v.u.n; break;
  case VT_MAT:
    if (tensor_numel(v.u.m) == 1) { x = tensor_data(v.u.m)[0]; break; }
    /* fall through */
  default:
    mls_throw(I, sp, "condition must be a boolean, a number or a 1x1 matrix, got %s", val_describe(v, d, sizeof d));
  }
  if (mls_is_na(x)) mls_throw(I, sp, "missing value where TRUE/FALSE needed");   /* R's NA, R's words */
  if (isnan(x)) mls_throw(I, sp, "condition is NaN");
  return x != 0;
}

double val_to_num(Interp *I, Value v, Span sp, const char *what) {
  char d[64];
  v = ad_concrete(I, v, sp, what);
  interp_abstract_poll(I, sp);
  if (v.t == VT_NUM) return v.u.n;
  if (v.t == VT_BOOL) return v.u.b;
  if (v.t == VT_MAT && tensor_numel(v.u.m) == 1) return tensor_data(v.u.m)[0];
  mls_throw(I, sp, "%s must be a number, got %s", what, val_describe(v, d, sizeof d));
}
