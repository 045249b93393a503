/*
** builtins_r.c — what R users reach for first (issue 13): c(), rep(), seq_len(), which(),
** nchar(), cat(), set.seed() and progress(). c() and rep() compute through ops (reshape,
** rbind's placing, indexing), so grad and staging see them as ordinary ops.
*/
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "mem.h"
#include "ops/index.h"
#include "print.h"
#include "progress.h"
#include "rng.h"
#include "staging/stage.h"

/* The number of elements of v (a number, boolean or matrix), else an argument error. */
static int64_t numel_of(Interp *I, Value v, int argn, const char *fn) {
  Value p = ad_primal(v);
  if (p.t == VT_NUM || p.t == VT_BOOL) return 1;
  if (p.t == VT_MAT) return tensor_numel(p.u.m);
  char d[64];
  if (p.t == VT_STR)
    bi_argerror(I, argn, "numbers or matrices expected, got a string (%s() builds numeric vectors; use list() or paste())", fn);
  bi_argerror(I, argn, "numbers or matrices expected, got %s", val_describe(p, d, sizeof d));
}

/*
** c(...): the elements of every argument, in order, as one column vector. A matrix gives
** its elements in row-major order (MLS's order everywhere: matrix(), for, LANGUAGE.md §3), so
** matrix(c(X), rows=nrow(X), cols=ncol(X)) is X again. NULL arguments are skipped; c() of
** nothing is NULL. Under grad the result is rbind() of reshaped pieces (both ops).
*/
/* c() of strings (or lists of strings): R's character vector, which MLS holds as a list of
** strings (docs/language.md §16); names given to the arguments name the items. */
static Value c_strings(Interp *I, Args *a) {
  List *l = list_new(I, a->ndots);
  tmp_push(I, val_list(l));
  for (int i = 0; i < a->ndots; i++) {
    Value v = a->dots[i];
    Symbol *nm = a->dotnames ? a->dotnames[i] : NULL;
    if (v.t == VT_NULL) continue;
    if (v.t == VT_STR) { val_retain(v); list_push(l, v, nm); continue; }
    bool ok = v.t == VT_LIST;
    for (int k = 0; ok && k < v.u.l->n; k++) ok = v.u.l->items[k].t == VT_STR;
    if (!ok) {
      char d[64];
      bi_argerror(I, i + 1, "strings expected, got %s (c() of strings is a list of strings; R would turn numbers into text: use paste())",
                  val_describe(v, d, sizeof d));
    }
    for (int k = 0; k < v.u.l->n; k++) {
      val_retain(v.u.l->items[k]);
      list_push(l, v.u.l->items[k], v.u.l->names ? v.u.l->names[k] : NULL);
    }
  }
  tmp_pop(I, 1);
  return val_list(l);
}

/* The names of c()'s result, as R gives them, or NULL when no piece is named: a named number
** gives its name, a named matrix of n elements name1 .. namen, a matrix with names its own. */
static TensorNames *c_names(Interp *I, Args *a, int64_t total) {
  bool any = false;
  for (int i = 0; i < a->ndots && !any; i++) {
    Value v = a->dots[i];
    any = (a->dotnames && a->dotnames[i] && v.t != VT_NULL) || (v.t == VT_MAT && v.u.m->names);
  }
  if (!any) return NULL;
  const char **s = bi_scratch(I, (size_t)(total > 0 ? total : 1) * sizeof *s);
  size_t *at = bi_scratch(I, (size_t)(total > 0 ? total : 1) * sizeof *at);
  TextBuf tb;
  tb_open(I, &tb);
  int64_t off = 0;
  for (int i = 0; i < a->ndots; i++) {
    Value v = a->dots[i];
    const char *nm = a->dotnames && a->dotnames[i] ? a->dotnames[i]->name : NULL;
    if (v.t == VT_NUM || v.t == VT_BOOL) { at[off] = tb.n; tb_puts(&tb, nm ? nm : ""); tb_putn(&tb, "", 1); off++; continue; }
    if (v.t != VT_MAT) continue;
    int64_t n = tensor_numel(v.u.m);
    for (int64_t j = 0; j < n; j++, off++) {
      at[off] = tb.n;
      const char *own = v.u.m->names ? v.u.m->names->s[j] : "";
      if (nm && *own) tb_printf(&tb, "%s.%s", nm, own);
      else if (nm && n == 1) tb_puts(&tb, nm);
      else if (nm) tb_printf(&tb, "%s%lld", nm, (long long)(j + 1));
      else tb_puts(&tb, own);
      tb_putn(&tb, "", 1);
    }
  }
  for (int64_t k = 0; k < total; k++) s[k] = tb.p + at[k];
  TensorNames *r = tnames_new(total, s, NULL);
  tb_close(I, &tb);
  bi_scratch_free(I, at);
  bi_scratch_free(I, s);
  return r;
}

Value bi_c(Interp *I, Args *a) {
  int64_t total = 0, parts = 0;
  for (int i = 0; i < a->ndots; i++)
    if (a->dots[i].t == VT_STR || (a->dots[i].t == VT_LIST && a->dots[i].u.l->n > 0 && a->dots[i].u.l->items[0].t == VT_STR))
      return c_strings(I, a);
  for (int i = 0; i < a->ndots; i++) {
    if (ad_primal(a->dots[i]).t == VT_NULL) continue;
    total += numel_of(I, a->dots[i], i + 1, "c");
    parts++;
  }
  if (parts == 0) return val_null();
  if (ad_any_active(a->ndots, a->dots)) {
    int mark = I->ntmp;
    Value pieces[parts];                       /* on the stack: nothing leaks on a throw */
    Symbol *names[parts];
    memset(names, 0, sizeof names);
    int k = 0;
    for (int i = 0; i < a->ndots; i++) {
      Value p = ad_primal(a->dots[i]);
      if (p.t == VT_NULL) continue;
      Value v = a->dots[i];
      if (p.t == VT_MAT) { v = op_reshape(I, v, tensor_numel(p.u.m), 1, a->span); tmp_push(I, v); }
      pieces[k++] = v;
    }
    Value r;
    if (k == 1 && ad_primal(pieces[0]).t == VT_MAT) { r = pieces[0]; val_retain(r); }
    else r = bi_call(I, bi_find("rbind"), k, pieces, names, a->span);
    tmp_release_to(I, mark);
    return r;
  }
  Tensor *t = tensor_new(I, total, 1);
  double *d = tensor_data(t);
  int64_t off = 0;
  for (int i = 0; i < a->ndots; i++) {
    Value v = a->dots[i];
    if (v.t == VT_NUM) d[off++] = v.u.n;
    else if (v.t == VT_BOOL) d[off++] = v.u.b;
    else if (v.t == VT_MAT) {
      int64_t n = tensor_numel(v.u.m);
      for (int64_t j = 0; j < n; j++) { bi_poll(I, off + j, t); d[off + j] = tensor_at(v.u.m, j); }
      off += n;
    }
  }
  tmp_push(I, val_mat(t));
  TensorNames *nm = c_names(I, a, total);
  tmp_pop(I, 1);
  t->names = nm;
  if (nm) stage_eager_here(I, "a vector's names (graphs do not carry them)", a->span);
  return val_mat(t);
}

/* A whole number >= 0 from argument i (a number or a 1x1 matrix). */
static int64_t count_arg(Interp *I, Args *a, int i, const char *what) {
  a->v[i] = ad_concrete(I, a->v[i], a->span, what);
  double x = bi_num(I, a, i);
  if (!(x >= 0 && x <= 1e15) || x != floor(x)) bi_argerror(I, i + 1, "%s must be a whole number >= 0, got %g", what, x);
  return (int64_t)x;
}

/*
** rep(x, times=1, each=1, length.out=): R's rep on the elements of x (row-major for a
** matrix): each element `each` times, then the whole `times` times; times may also be a vector
** with one count per element (after each=); length.out= cuts or cycles to that length.
** The result is x's elements picked by an index vector, so grad sums the copies' adjoints.
*/
Value bi_rep(Interp *I, Args *a) {
  int64_t n = numel_of(I, a->v[0], 1, "rep");
  int64_t each = bi_given(a, 2) ? count_arg(I, a, 2, "each") : 1;
  int mark = I->ntmp;
  /* the positions after each= */
  if ((double)n * (double)each > 1e12) bi_error(I, "result too long (%g elements)", (double)n * (double)each);
  int64_t m = n * each;
  int64_t total = 0;
  const Tensor *tv = NULL;
  int64_t times = 1;
  if (bi_given(a, 1)) {
    Value tp = ad_concrete(I, a->v[1], a->span, "rep()'s times");
    if (tp.t == VT_MAT && tensor_numel(tp.u.m) != 1) {
      tv = tp.u.m;
      if (tensor_numel(tv) != m)
        bi_argerror(I, 2, "times has %lld counts for %lld elements (give one count, or one per element)",
                    (long long)tensor_numel(tv), (long long)m);
      for (int64_t k = 0; k < m; k++) {
        bi_poll(I, k, NULL);
        double x = tensor_at(tv, k);
        if (!(x >= 0 && x <= 1e15) || x != floor(x)) bi_argerror(I, 2, "invalid times count %g", x);
        total += (int64_t)x;
      }
    } else {
      a->v[1] = tp;
      times = count_arg(I, a, 1, "times");
      if ((double)m * (double)times > 1e12) bi_error(I, "result too long (%g elements)", (double)m * (double)times);
      total = m * times;
    }
  } else {
    total = m;
  }
  if (bi_given(a, 3)) {
    int64_t lo = count_arg(I, a, 3, "length.out");
    if (lo > 0 && total == 0) bi_argerror(I, 4, "cannot make %lld elements out of none", (long long)lo);
    total = lo;
  }
  if (total > (int64_t)1e12) bi_error(I, "result too long");
  Tensor *ix = tensor_new(I, total, 1);
  tmp_push(I, val_mat(ix));
  double *d = tensor_data(ix);
  int64_t k = 0, budget = 0;
  while (k < total) {                          /* cycles when length.out asks for more */
    int64_t before = k;
    if (tv) {
      for (int64_t j = 0; j < m && k < total; j++) {
        int64_t c0 = (int64_t)tensor_at(tv, j);
        bi_tick(I, &budget, c0, NULL);         /* (ix is on the temp stack) */
        for (int64_t c = c0; c > 0 && k < total; c--) d[k++] = (double)(j / each + 1);
      }
    } else {
      for (int64_t r = 0; r < times && k < total; r++) {
        bi_tick(I, &budget, m, NULL);
        for (int64_t j = 0; j < m && k < total; j++) d[k++] = (double)(j / each + 1);
      }
    }
    if (k == before) break;
  }
  Value x = a->v[0], p = ad_primal(x);
  if (total == 0) { tmp_release_to(I, mark); return val_mat(tensor_new(I, 0, 1)); }
  if (p.t == VT_MAT) { x = op_reshape(I, x, n, 1, a->span); tmp_push(I, x); }
  Value r = index_read(I, x, 2, (Value[]){ val_mat(ix), p.t == VT_MAT ? val_unbound() : val_num(1) }, a->span);
  if (ad_primal(r).t != VT_MAT) {              /* x[1, 1] of a number is a number: one element */
    Tensor *o = tensor_new(I, 1, 1);
    tensor_data(o)[0] = ad_primal(r).u.n;
    val_release(r);
    r = val_mat(o);
  }
  tmp_release_to(I, mark);
  return r;
}

/* seq_len(n): 1, 2, ..., n as a column vector; seq_len(0) is a 0x1 matrix (1:0 counts down). */
Value bi_seq_len(Interp *I, Args *a) {
  int64_t n = count_arg(I, a, 0, "length.out");
  Tensor *t = tensor_new(I, n, 1);
  for (int64_t i = 0; i < n; i++) { bi_poll(I, i, t); tensor_data(t)[i] = (double)(i + 1); }
  return val_mat(t);
}

/* which(x): the positions (1-based, row-major for a matrix) of the nonzero (TRUE) elements of x,
** as a column vector; NaN is not TRUE (R skips NA). */
Value bi_which(Interp *I, Args *a) {
  Value v = ad_concrete(I, a->v[0], a->span, "which()'s argument");   /* staged: dynamic */
  if (v.t == VT_NUM || v.t == VT_BOOL) {
    double x = v.t == VT_NUM ? v.u.n : v.u.b;
    Tensor *t = tensor_new(I, x != 0 && !isnan(x) ? 1 : 0, 1);
    if (tensor_numel(t)) tensor_data(t)[0] = 1;
    return val_mat(t);
  }
  if (v.t != VT_MAT) {
    char d[64];
    bi_argerror(I, 1, "logical vector or matrix expected, got %s", val_describe(v, d, sizeof d));
  }
  int64_t n = tensor_numel(v.u.m), cnt = 0;
  for (int64_t k = 0; k < n; k++) { bi_poll(I, k, NULL); double x = tensor_at(v.u.m, k); cnt += x != 0 && !isnan(x); }
  Tensor *t = tensor_new(I, cnt, 1);
  double *d = tensor_data(t);
  int64_t j = 0;
  for (int64_t k = 0; k < n; k++) {
    bi_poll(I, k, t);
    double x = tensor_at(v.u.m, k);
    if (x != 0 && !isnan(x)) d[j++] = (double)(k + 1);
  }
  return val_mat(t);
}

/* nchar(x): characters (UTF-8 code points) of a string; of a number, of its text (R's). */
Value bi_nchar(Interp *I, Args *a) {
  Value v = ad_primal(a->v[0]);
  if (v.t == VT_LIST) return bi_nchar_list(I, a);
  char buf[64];
  const char *s;
  size_t len;
  if (v.t == VT_STR) { s = v.u.s->s; len = v.u.s->len; }
  else if (v.t == VT_NUM) { fmt_num(buf, sizeof buf, v.u.n, 15); s = buf; len = strlen(buf); }
  else if (v.t == VT_BOOL) { s = v.u.b ? "TRUE" : "FALSE"; len = strlen(s); }
  else {
    char d[64];
    bi_argerror(I, 1, "string expected, got %s", val_describe(v, d, sizeof d));
  }
  double n = 0;
  for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
  return val_num(n);
}

/* One cat() item: a number as print shows it (7 digits), a string as it is, a matrix's
** elements (row-major) separated by sep. */
static void cat_item(Interp *I, TextBuf *t, Value v, const char *sep, bool *first, int argn) {
  char buf[400];
  v = ad_primal(v);
  switch (v.t) {
  case VT_NULL: return;
  case VT_NUM: case VT_BOOL: case VT_STR:
    if (!*first) tb_puts(t, sep);
    *first = false;
    if (v.t == VT_NUM) { fmt_num(buf, sizeof buf, v.u.n, I->print_digits); tb_puts(t, buf); }
    else if (v.t == VT_BOOL) tb_puts(t, v.u.b ? "TRUE" : "FALSE");
    else tb_putn(t, v.u.s->s, v.u.s->len);
    return;
  case VT_MAT: {
    int64_t n = tensor_numel(v.u.m);
    for (int64_t k = 0; k < n; k++) {
      bi_poll(I, k, NULL);                    /* (t: a deferred free) */
      if (!*first) tb_puts(t, sep);
      *first = false;
      fmt_num(buf, sizeof buf, tensor_at(v.u.m, k), I->print_digits);
      tb_puts(t, buf);
    }
    return;
  }
  case VT_LIST:
    for (int i = 0; i < v.u.l->n; i++) cat_item(I, t, v.u.l->items[i], sep, first, argn);
    return;
  default: {
    char d[64];
    bi_argerror(I, argn, "cannot cat %s", val_describe(v, d, sizeof d));
  }
  }
}

/* Throws for what cat() cannot show (before any text is built, so nothing leaks). */
static void cat_check(Interp *I, Value v, int argn) {
  v = ad_primal(v);
  if (v.t == VT_LIST) { for (int i = 0; i < v.u.l->n; i++) cat_check(I, v.u.l->items[i], argn); return; }
  if (v.t == VT_NULL || v.t == VT_NUM || v.t == VT_BOOL || v.t == VT_STR || v.t == VT_MAT) return;
  char d[64];
  bi_argerror(I, argn, "cannot cat %s", val_describe(v, d, sizeof d));
}

/* cat(..., sep=" "): R's cat: the items joined by sep, no newline added, nothing quoted. */
Value bi_cat(Interp *I, Args *a) {
  const char *sep = bi_given(a, 0) ? bi_str(I, a, 0) : " ";
  for (int i = 0; i < a->ndots; i++) {
    if (a->dotnames[i]) bi_error(I, "unknown argument '%s' (cat takes sep=)", a->dotnames[i]->name);
    cat_check(I, a->dots[i], i + 1);
  }
  TextBuf t;
  tb_open(I, &t);                             /* freed by a throw (mls_defer) */
  bool first = true;
  for (int i = 0; i < a->ndots; i++) cat_item(I, &t, a->dots[i], sep, &first, i + 1);
  progress_clear(I->errf, &I->bar_open);
  fputs(t.p ? t.p : "", I->out);
  tb_close(I, &t);
  return val_null();
}

/* set.seed(seed): reseeds the stream rand(), sample() and friends use without seed=; the
** same seed gives the same numbers as `mls --seed N` (not R's numbers: another generator). */
Value bi_set_seed(Interp *I, Args *a) {
  a->v[0] = ad_primal(a->v[0]);
  double s = bi_num(I, a, 0);
  if (!isfinite(s) || s != floor(s) || fabs(s) > 9007199254740992.0)
    bi_argerror(I, 1, "seed must be a whole number, got %g", s);
  I->seed = (uint64_t)(int64_t)s;
  I->seed_set = true;
  rng_seed(I->rng, I->seed);
  I->rng_ready = true;
  return val_null();
}

/* progress(x): x itself; `for (i in progress(x))` draws a bar on a terminal's stderr (eval.c). */
Value bi_progress(Interp *I, Args *a) {
  (void)I;
  val_retain(a->v[0]);
  return a->v[0];
}
