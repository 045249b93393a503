/*
** call.c — calling a function value (call_value): builtins, grad/jit functions, and user
** functions, whose arguments are bound to their parameters here (R's matching, DML's types);
** and the call frames (frame_push) that errors list as the call stack.
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "interp/interp.h"
#include "mem.h"
#include "staging/stage.h"

static l_noret arg_type_error(Interp *I, Span sp, const FuncInfo *fi, const Param *p, Value v, bool result) {
  char d[64];
  static const char *const tn[] = { "anything", "a matrix", "a number", "an integer", "a boolean", "a string", "a list", "a function", "a frame" };
  mls_throw(I, sp, "%s '%s' of %s() must be %s, got %s", result ? "result" : "argument", p->name->name,
            fi->name ? fi->name->name : "function", tn[p->type], val_describe(v, d, sizeof d));
}

static bool type_ok(uint8_t ty, Value v) {
  v = ad_primal(v);                           /* a value traced by grad or staged has its type */
  switch (ty) {
  case TY_ANY: return true;
  case TY_MATRIX: return v.t == VT_MAT;
  case TY_DOUBLE: case TY_BOOL: return v.t == VT_NUM || v.t == VT_BOOL;
  case TY_INT: return (v.t == VT_NUM && v.u.n == floor(v.u.n)) || v.t == VT_BOOL;
  case TY_STRING: return v.t == VT_STR;
  case TY_LIST: return v.t == VT_LIST;
  case TY_FUNC: return v.t == VT_FUNC || v.t == VT_BUILTIN;
  case TY_FRAME: return v.t == VT_FRAME;
  default: return false;
  }
}

bool call_types_ok(const Closure *c, int nargs, const Value *args, Symbol **names) {
  const FuncInfo *fi = c->fi;
  if (!fi) return true;
  const Value *bound[64] = { 0 };
  if (fi->nparams > 64) return false;
  for (int i = 0; i < nargs; i++) {
    if (!names[i]) continue;
    int k = -1;
    for (int j = 0; j < fi->nparams; j++)
      if (fi->params[j].name == names[i]) { k = j; break; }
    if (k < 0) return false;
    bound[k] = &args[i];
  }
  int next = 0;
  for (int i = 0; i < nargs; i++) {
    if (names[i]) continue;
    while (next < fi->nparams && bound[next]) next++;
    if (next >= fi->nparams) return false;
    bound[next++] = &args[i];
  }
  for (int j = 0; j < fi->nparams; j++)
    if (bound[j] && !type_ok(fi->params[j].type, *bound[j])) return false;
  return true;
}

static Value call_closure(Interp *I, Closure *c, int nargs, Value *args, Symbol **names, Span sp) {
  const FuncInfo *fi = c->fi;
  const char *fname = fi->name ? fi->name->name : "function";
  if (I->nframes >= I->maxframes) mls_throw(I, sp, "stack overflow (more than %d nested calls)", I->maxframes);
  interp_burn(I);
  if (I->interrupted) interp_check_interrupt(I, sp);     /* Ctrl-C in deep recursion */
  char here;
  if (I->stack_base && (size_t)(I->stack_base - &here) > I->stack_limit)
    mls_throw(I, sp, "stack overflow (%d nested calls used the C stack)", I->nframes);
  interp_abstract_poll(I, sp);
  if (I->abstract && I->nframes > I->abstract_frames + ABSTRACT_DEPTH)
    interp_abstract_stop(I, sp, "a recursion more than %d calls deep", ABSTRACT_DEPTH);
  /* the frame first, not entered (a throw lists it only once the arguments are bound): it owns
  ** env from when env is made, so a throw below releases it */
  Frame *f = frame_push(I, (Frame){ .fi = fi, .src = c->chunk->src, .call_src = I->src, .call_site = sp }, false);
  Env *env = env_new(I, fi, c->env);
  env->stage_id = I->stage ? I->stage->id : 0;   /* made while staging: its reads are not captures */
  f->env = env;
  /* bind: named first, then positional into the remaining parameters (R's matching); with a
  ** parameter ... (R's dots), the arguments no other parameter takes go to it as a list, names
  ** kept, and the parameters after it are matched by name only */
  int dots = -1;
  for (int j = 0; j < fi->nparams; j++)
    if (fi->params[j].name->len == 3 && !strcmp(fi->params[j].name->name, "...")) dots = j;
  List *dl = NULL;
  if (dots >= 0) {
    dl = list_new(I, 4);
    env->slots[dots] = val_list(dl);
  }
  for (int i = 0; i < nargs; i++) {
    if (!names[i]) continue;
    int k = -1;
    for (int j = 0; j < fi->nparams; j++)
      if (fi->params[j].name == names[i] && j != dots) { k = j; break; }
    if (k < 0 && dl) { val_retain(args[i]); list_push(dl, args[i], names[i]); continue; }
    if (k < 0) mls_throw(I, sp, "unknown argument '%s' in call to %s()", names[i]->name, fname);
    val_retain(args[i]);
    env->slots[k] = args[i];
  }
  int next = 0, end = dots >= 0 ? dots : fi->nparams;
  for (int i = 0; i < nargs; i++) {
    if (names[i]) continue;
    while (next < end && env->slots[next].t != VT_UNBOUND) next++;
    if (next >= end && dl) { val_retain(args[i]); list_push(dl, args[i], NULL); continue; }
    if (next >= end) {
      mls_throw(I, sp, "too many arguments in call to %s() (%d expected, got %d)", fname, fi->nparams, nargs);
    }
    val_retain(args[i]);
    env->slots[next++] = args[i];
  }
  for (int j = 0; j < fi->nparams; j++) {
    const Param *p = &fi->params[j];
    if (env->slots[j].t == VT_UNBOUND && !p->dflt)
      mls_throw(I, sp, "argument '%s' is missing in call to %s(), with no default", p->name->name, fname);
    if (env->slots[j].t != VT_UNBOUND && !type_ok(p->type, env->slots[j]))
      arg_type_error(I, sp, fi, p, env->slots[j], false);
  }
  Env *saved_env = I->env;
  Source *saved_src = I->src;
  Span saved_call = I->call_span;
  I->env = env;
  I->src = c->chunk->src;
  I->call_span = fi->span;                   /* a span in the callee's source (out-of-memory errors) */
  f->entered = true;
  for (int j = 0; j < fi->nparams; j++) {           /* defaults, at call time, in the callee */
    const Param *p = &fi->params[j];
    if (env->slots[j].t != VT_UNBOUND) continue;
    Value d = eval(I, p->dflt);
    if (!type_ok(p->type, d)) { tmp_push(I, d); arg_type_error(I, p->span, fi, p, d, false); }
    env->slots[j] = d;
  }
  Value r = eval(I, fi->body);
  if (I->ctl == CTL_RETURN) {
    val_release(r);
    r = I->retval;
    I->retval = val_null();
    I->ctl = CTL_NONE;
  }
  if (fi->rets) {                                      /* DML: the named results */
    val_release(r);
    r = val_null();
    List *l = fi->nrets > 1 ? list_new(I, fi->nrets) : NULL;
    if (l) { l->multi = true; r = val_list(l); tmp_push(I, r); }
    for (int k = 0; k < fi->nrets; k++) {
      const Param *p = &fi->rets[k];
      int s = 0;                                       /* a result may share a parameter's slot (DML) */
      while (s < fi->nslots && fi->slots[s] != p->name) s++;
      Value v = env->slots[s];
      if (v.t == VT_UNBOUND) mls_throw(I, p->span, "result '%s' of %s() was not assigned", p->name->name, fname);
      if (!type_ok(p->type, v)) arg_type_error(I, p->span, fi, p, v, true);
      val_retain(v);
      if (l) list_push(l, v, p->name);
      else r = v;
    }
    if (l) tmp_pop(I, 1);
  }
  I->env = saved_env;
  I->src = saved_src;
  I->call_span = saved_call;
  I->nframes--;
  env_release(env);
  gc_maybe(I);                               /* a call's env is where cycles form */
  return r;
}

Frame *frame_push(Interp *I, Frame fr, bool bounded) {
  if (bounded && I->nframes >= I->maxframes)
    mls_throw(I, fr.call_site, "stack overflow (more than %d nested calls)", I->maxframes);
  if (I->nframes == I->capframes) {
    int cap = I->capframes ? I->capframes * 2 : 64;
    I->frames = mem_realloc(I->frames, (size_t)cap * sizeof(Frame));
    I->capframes = cap;
  }
  Frame *f = &I->frames[I->nframes++];
  *f = fr;
  return f;
}

bool frame_push_staged(Interp *I, Value fn, Span sp) {
  if (fn.t != VT_FUNC || !fn.u.f->fi) return false;
  frame_push(I, (Frame){ .fi = fn.u.f->fi, .src = fn.u.f->chunk->src, .call_src = I->src, .call_site = sp, .entered = true },
             true);
  return true;
}

Value call_value(Interp *I, Value fn, int nargs, Value *args, Symbol **names, Span sp) {
  if (I->jit_all && fn.t == VT_FUNC && fn.u.f->fi) {          /* --jit-all: as jit(f) */
    if (I->jit_bypass) I->jit_bypass = false;
    else {
      if (!fn.u.f->jit) fn.u.f->jit = stage_jit_new();
      return stage_call_jit(I, fn.u.f->jit, fn, nargs, args, names, sp);
    }
  }
  if (fn.t == VT_BUILTIN && (fn.u.bi->flags & BI_EVAL)) return bi_eval_call(I, fn.u.bi, nargs, args, names, sp);
  if (fn.t == VT_BUILTIN) return bi_call(I, fn.u.bi, nargs, args, names, sp);
  if (fn.t == VT_FUNC && fn.u.f->derived) return ad_call_derived(I, fn.u.f, nargs, args, names, sp);
  if (fn.t == VT_FUNC) return call_closure(I, fn.u.f, nargs, args, names, sp);
  char d[64];
  mls_throw(I, sp, "attempt to call %s", val_describe(fn, d, sizeof d));
}
