/*
** builtins_device.c — devices (LANGUAGE.md §13): device() to ask or set where new matrices
** live, gpu(X) and cpu(X) to move a value (lists element by element).
*/
#include <string.h>
#include "autodiff.h"
#include "backend/backend.h"
#include "builtins.h"
#include "err.h"

static const char *device_name(const Backend *be) { return be_is_cpu(be) ? "cpu" : "gpu"; }

/* v moved to be (+1): matrices copied unless already there, lists rebuilt, the rest kept. */
static Value move_to(Interp *I, Value v, const Backend *be, const char *fn) {
  if (v.t == VT_BOX) bi_error(I, "not differentiable: %s() of a value traced by grad (move the data before calling grad)", fn);
  if (v.t == VT_MAT) {
    if (v.u.m->st->be == be) { val_retain(v); return v; }
    return val_mat(tensor_to(I, v.u.m, be));
  }
  if (v.t == VT_LIST) {
    List *src = v.u.l, *l = list_new(I, src->n > 0 ? src->n : 1);
    l->multi = src->multi;
    Value r = val_list(l);
    tmp_push(I, r);
    for (int i = 0; i < src->n; i++) list_push(l, move_to(I, src->items[i], be, fn), src->names ? src->names[i] : NULL);
    tmp_pop(I, 1);
    return r;
  }
  val_retain(v);
  return v;
}

static const Backend *gpu_or_throw(Interp *I) {
  const Backend *be = be_find(I->backends, "gpu");
  if (!be) bi_error(I, "%s", be_why(I->backends));
  return be;
}

Value bi_gpu(Interp *I, Args *a) {
  if (ad_any_grad_deep(1, a->v)) return move_to(I, a->v[0], I->cpu, "gpu");   /* (its error first) */
  return move_to(I, a->v[0], gpu_or_throw(I), "gpu");
}
Value bi_cpu(Interp *I, Args *a) { return move_to(I, a->v[0], I->cpu, "cpu"); }

Value bi_device(Interp *I, Args *a) {
  const char *was = device_name(I->device);
  if (!bi_given(a, 0)) return val_cstr(was);
  Value v = ad_primal(a->v[0]);
  if (v.t == VT_MAT) return val_cstr(device_name(v.u.m->st->be));
  if (v.t == VT_NUM || v.t == VT_BOOL) return val_cstr("cpu");
  const char *d = bi_str(I, a, 0);
  if (strcmp(d, "cpu") && strcmp(d, "gpu")) bi_argerror(I, 1, "\"cpu\" or \"gpu\" expected, got \"%s\"", d);
  I->device = strcmp(d, "gpu") ? I->cpu : gpu_or_throw(I);
  return val_cstr(was);
}
