/*
** value.c — strings, lists and the release of heap values.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "frame/frame.h"
#include "interp/interp.h"
#include "mem.h"
#include "tensor.h"
#include "value.h"

void val_free_heap(Value v) {
  switch (v.t) {
  case VT_STR: mem_uncharge(STR_BYTES(v.u.s->len)); mem_free(v.u.s); break;
  case VT_MAT: tensor_free(v.u.m); break;
  case VT_LIST: {
    List *l = v.u.l;
    gc_untrack(&l->gc);
    for (int i = 0; i < l->n; i++) val_release(l->items[i]);
    mem_free(l->items);
    mem_free(l->names);
    mem_free(l);
    break;
  }
  case VT_FRAME: frame_free(v.u.fr); break;
  case VT_FUNC: closure_free(v.u.f); break;
  case VT_BOX: ad_box_free(v.u.box); break;
  case VT_TAPE: ad_tape_free(v.u.tape); break;
  default: MLS_ASSERT(0);
  }
}

Value val_str_new(size_t len) {
  if (len > SIZE_MAX / 2) mem_oom(SIZE_MAX);
  size_t n = STR_BYTES(len);
  if (!mem_charge(n)) mem_oom(n);              /* over --max-memory: strings count */
  Str *p = mem_try_alloc(n);
  if (!p) {
    mem_uncharge(n);
    mem_oom(n);
  }
  p->refcount = 1;
  p->len = len;
  p->s[len] = '\0';
  Value v;
  v.t = VT_STR;
  v.u.s = p;
  return v;
}

Value val_str(const char *s, size_t len) {
  Value v = val_str_new(len);
  memcpy(v.u.s->s, s, len);
  return v;
}

Value val_cstr(const char *s) { return val_str(s, strlen(s)); }

Value val_mat(struct Tensor *m) { Value v; v.t = VT_MAT; v.u.m = m; return v; }
Value val_list(List *l) { Value v; v.t = VT_LIST; v.u.l = l; return v; }

List *list_new(Interp *I, int cap) {
  cap = cap > 0 ? cap : 4;
  Value *items = mem_alloc((size_t)cap * sizeof(Value));
  List *l = mem_try_alloc(sizeof *l);
  if (!l) {
    mem_free(items);
    mem_oom(sizeof *l);
  }
  memset(l, 0, sizeof *l);
  l->refcount = 1;
  l->cap = cap;
  l->items = items;
  gc_track(I, &l->gc, GC_LIST);
  return l;
}

/* Takes v; if the list cannot grow, v is released before the out-of-memory error (the list
** stays as it was). */
void list_push(List *l, Value v, struct Symbol *name) {
  size_t need = 0;
  if (l->n == l->cap) {
    if (l->cap > INT32_MAX / 2) { need = ((size_t)INT32_MAX + 1) * sizeof(Value); goto fail; }   /* (n is 32-bit) */
    int cap = l->cap * 2;
    Value *items = mem_try_realloc(l->items, (size_t)cap * sizeof(Value));
    if (!items) { need = (size_t)cap * sizeof(Value); goto fail; }
    l->items = items;                            /* bigger than cap says until both have grown */
    if (l->names) {
      Symbol **names = mem_try_realloc(l->names, (size_t)cap * sizeof(Symbol *));
      if (!names) { need = (size_t)cap * sizeof(Symbol *); goto fail; }
      l->names = names;
    }
    l->cap = cap;
  }
  if (name && !l->names) {
    Symbol **names = mem_try_alloc((size_t)l->cap * sizeof(Symbol *));
    if (!names) { need = (size_t)l->cap * sizeof(Symbol *); goto fail; }
    memset(names, 0, (size_t)l->cap * sizeof(Symbol *));
    l->names = names;
  }
  l->items[l->n] = v;
  if (l->names) l->names[l->n] = name;
  l->n++;
  return;
fail:
  val_release(v);
  mem_oom(need);
}

int list_find(const List *l, const struct Symbol *name) {
  if (!l->names) return -1;
  for (int i = 0; i < l->n; i++)
    if (l->names[i] == name) return i;
  return -1;
}

List *list_held_nulls(Interp *I, int n) {
  List *l = list_new(I, n > 0 ? n : 1);
  tmp_push(I, val_list(l));
  for (int i = 0; i < n; i++) l->items[i] = val_null();
  l->n = n;
  return l;
}

List *list_copy(Interp *I, const List *l) {
  List *c = list_new(I, l->n);                 /* room for every item: nothing grows below */
  if (l->names) {
    size_t nb = (size_t)c->cap * sizeof(Symbol *);
    Symbol **names = mem_try_alloc(nb);
    if (!names) {
      val_release(val_list(c));
      mem_oom(nb);
    }
    memset(names, 0, nb);
    c->names = names;
  }
  for (int i = 0; i < l->n; i++) {
    val_retain(l->items[i]);
    c->items[i] = l->items[i];
    if (l->names) c->names[i] = l->names[i];
  }
  c->n = l->n;
  c->multi = l->multi;
  return c;
}

const char *val_type_name(Value v) {
  switch (v.t) {
  case VT_NULL: return "NULL";
  case VT_NUM: return "number";
  case VT_BOOL: return "boolean";
  case VT_STR: return "string";
  case VT_MAT: return "matrix";
  case VT_LIST: return "list";
  case VT_FRAME: return "frame";
  case VT_FUNC: case VT_BUILTIN: return "function";
  case VT_BOX: return val_type_name(v.u.box->v);
  default: return "nothing";
  }
}

const char *val_describe(Value v, char *buf, size_t n) {
  while (v.t == VT_BOX) v = v.u.box->v;
  if (v.t == VT_MAT)
    snprintf(buf, n, "a %lldx%lld matrix", (long long)tensor_rows(v.u.m), (long long)tensor_cols(v.u.m));
  else if (v.t == VT_LIST)
    snprintf(buf, n, "a list of %d", v.u.l->n);
  else if (v.t == VT_FRAME)
    snprintf(buf, n, "a %lldx%lld frame", (long long)v.u.fr->rows, (long long)v.u.fr->ncol);
  else if (v.t == VT_NULL)
    snprintf(buf, n, "NULL");
  else
    snprintf(buf, n, "a %s", val_type_name(v));
  return buf;
}

int64_t val_scan_numbers(const char *s, double *d, const char **bad) {
  int64_t n = 0;
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') p++;
    if (!*p) return n;
    char *end;
    double x = strtod(p, &end);
    if (end == p) { *bad = p; return -1; }
    if (d) d[n] = x;
    n++;
    p = end;
  }
}
