/*
** builtins_rbase.c — the R basics of issue 30: any/all, which.max/min, sort, random draws
** (rnorm, runif, rbinom), the apply family (lapply, sapply, vapply, Map, Reduce, Filter,
** do.call, apply), switch, tryCatch and warning, signif, format, summary, str, and the string
** functions (substr, strsplit, toupper, tolower, sub, gsub, grepl, paste0).
** Vectors are column matrices; a list of strings stands where R has a character vector.
*/
#include <ctype.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"
#include "mem.h"
#include "print.h"
#include "rng.h"
#include "staging/stage.h"

/* ---- helpers ---- */

/* The number of elements the apply family walks in x: a list's items, a matrix's cells
** (row-major, as for), else 1. */
static int64_t seq_count(Value x) {
  x = ad_primal(x);
  if (x.t == VT_LIST) return x.u.l->n;
  if (x.t == VT_MAT) return tensor_numel(x.u.m);
  if (x.t == VT_NULL) return 0;
  return 1;
}

/* Element i of x as seq_count counts them (+1). */
static Value seq_item(Value x, int64_t i) {
  Value p = ad_primal(x);
  if (p.t == VT_LIST) { val_retain(p.u.l->items[i]); return p.u.l->items[i]; }
  if (p.t == VT_MAT) return val_num(tensor_at(p.u.m, i));
  val_retain(x);
  return x;
}

/* A number (or boolean, or 1x1 matrix) as a double; false when v is none of them. */
static bool as_number(Value v, double *x) {
  v = ad_primal(v);
  if (v.t == VT_NUM) { *x = v.u.n; return true; }
  if (v.t == VT_BOOL) { *x = v.u.b; return true; }
  if (v.t == VT_MAT && tensor_numel(v.u.m) == 1) { *x = tensor_at(v.u.m, 0); return true; }
  return false;
}

/* The numbers of argument v (a number, boolean or matrix): *n of them, in a scratch array the
** caller frees with bi_scratch_free (row-major). Anything else: the argument error. */
static double *num_elems(Interp *I, Value v, int argn, int64_t *n) {
  v = ad_primal(v);
  char d[64];
  if (v.t == VT_NUM || v.t == VT_BOOL) {
    double *p = bi_scratch(I, sizeof(double));
    p[0] = v.t == VT_NUM ? v.u.n : v.u.b;
    *n = 1;
    return p;
  }
  if (v.t != VT_MAT) bi_argerror(I, argn, "numbers expected, got %s", val_describe(v, d, sizeof d));
  int64_t k = tensor_numel(v.u.m);
  double *p = bi_scratch(I, (size_t)(k > 0 ? k : 1) * sizeof(double));
  for (int64_t i = 0; i < k; i++) { bi_poll(I, i, NULL); p[i] = tensor_at(v.u.m, i); }
  *n = k;
  return p;
}

static Value column_of(Interp *I, const double *x, int64_t n, bool logical) {
  Tensor *t = tensor_new(I, n, 1);
  if (n) memcpy(tensor_data(t), x, (size_t)n * sizeof(double));
  t->logical = logical;
  return val_mat(t);
}

/* ---- any, all ---- */
static Value any_all(Interp *I, Args *a, bool any) {
  bool narm = bi_opt_bool(I, a, 0, false);
  bool nan = false;
  for (int i = 0; i < a->ndots; i++) {
    Value v = ad_primal(a->dots[i]);
    if (v.t == VT_NULL) continue;
    int64_t n;
    double *x = num_elems(I, v, i + 1, &n);
    for (int64_t k = 0; k < n; k++) {
      if (isnan(x[k])) { nan = true; continue; }
      if ((x[k] != 0) == any) { bi_scratch_free(I, x); return val_bool(any); }
    }
    bi_scratch_free(I, x);
  }
  if (nan && !narm) return val_num(NAN);               /* R's NA */
  return val_bool(!any);
}
Value bi_any(Interp *I, Args *a) { return any_all(I, a, true); }
Value bi_all(Interp *I, Args *a) { return any_all(I, a, false); }

/* ---- which.max, which.min: the first extreme's position, row-major; NaN skipped ---- */
static Value which_ext(Interp *I, Args *a, bool max) {
  int64_t n;
  double *x = num_elems(I, a->v[0], 1, &n);
  int64_t best = -1;
  for (int64_t k = 0; k < n; k++)
    if (!isnan(x[k]) && (best < 0 || (max ? x[k] > x[best] : x[k] < x[best]))) best = k;
  bi_scratch_free(I, x);
  if (best < 0) return val_mat(tensor_new(I, 0, 1));    /* R: integer(0) */
  return val_num((double)(best + 1));
}
Value bi_which_max(Interp *I, Args *a) { return which_ext(I, a, true); }
Value bi_which_min(Interp *I, Args *a) { return which_ext(I, a, false); }

/* ---- sort ---- */
static int cmp_up(const void *p, const void *q) {
  double a = *(const double *)p, b = *(const double *)q;
  return (a > b) - (a < b);
}
static int cmp_down(const void *p, const void *q) { return cmp_up(q, p); }

Value bi_sort(Interp *I, Args *a) {
  bool dec = bi_opt_bool(I, a, 1, false);
  int64_t n;
  double *x = num_elems(I, a->v[0], 1, &n);
  int64_t m = 0;
  for (int64_t k = 0; k < n; k++) if (!isnan(x[k])) x[m++] = x[k];   /* R drops NA (na.last = NA) */
  qsort(x, (size_t)m, sizeof *x, dec ? cmp_down : cmp_up);
  Value r = column_of(I, x, m, false);
  bi_scratch_free(I, x);
  return r;
}

/* ---- paste0 ---- */
Value bi_paste0(Interp *I, Args *a) {
  TextBuf t;
  tb_open(I, &t);
  for (int i = 0; i < a->ndots; i++) {
    fmt_value_text(I, &t, a->dots[i], a->span);
    if (I->interrupted) interp_check_interrupt(I, a->span);
  }
  return tb_close_str(I, &t);
}

/* ---- random draws: n (or length(n) when n is a vector), parameters recycled ---- */
static int64_t draw_count(Interp *I, Args *a) {
  Value v = ad_primal(a->v[0]);
  if (v.t == VT_MAT && tensor_numel(v.u.m) != 1) return tensor_numel(v.u.m);
  double x = bi_num(I, a, 0);
  if (!(x >= 0 && x <= 1e12) || x != floor(x)) bi_argerror(I, 1, "invalid n: a whole number >= 0 expected, got %g", x);
  return (int64_t)x;
}

/* Parameter i's value for draw k (a number, or a vector recycled). */
typedef struct Par { const Tensor *m; double x; } Par;
static Par par_of(Interp *I, Args *a, int i, double dflt) {
  Par p = { NULL, dflt };
  if (!bi_given(a, i)) return p;
  a->v[i] = ad_primal(a->v[i]);
  Value v = a->v[i];
  if (v.t == VT_MAT && tensor_numel(v.u.m) != 1) {
    if (tensor_numel(v.u.m) == 0) bi_argerror(I, i + 1, "an empty parameter");
    p.m = v.u.m;
    return p;
  }
  p.x = bi_num(I, a, i);
  return p;
}
static double par_at(const Par *p, int64_t k) { return p->m ? tensor_at(p->m, k % tensor_numel(p->m)) : p->x; }

Value bi_rnorm(Interp *I, Args *a) {
  int64_t n = draw_count(I, a);
  Par mu = par_of(I, a, 1, 0), sd = par_of(I, a, 2, 1);
  uint64_t local[4];
  uint64_t *s = rng_stream(I, false, 0, local);
  Tensor *t = tensor_new(I, n, 1);
  double *d = tensor_data(t);
  for (int64_t k = 0; k < n; k++) {
    double m = par_at(&mu, k), sg = par_at(&sd, k);
    d[k] = sg < 0 || isnan(m) || isnan(sg) ? NAN : m + sg * rng_normal01(s);
  }
  return val_mat(t);
}

Value bi_runif(Interp *I, Args *a) {
  int64_t n = draw_count(I, a);
  Par lo = par_of(I, a, 1, 0), hi = par_of(I, a, 2, 1);
  uint64_t local[4];
  uint64_t *s = rng_stream(I, false, 0, local);
  Tensor *t = tensor_new(I, n, 1);
  double *d = tensor_data(t);
  for (int64_t k = 0; k < n; k++) {
    double l = par_at(&lo, k), h = par_at(&hi, k);
    d[k] = !(l <= h) || !isfinite(l) || !isfinite(h) ? NAN : l + (h - l) * rng_unif01(s);
  }
  return val_mat(t);
}

/* One binomial draw by inversion from the mode outward (the pmf by its ratio recurrence). */
static double binom_draw(uint64_t *s, double size, double p) {
  if (p == 0 || size == 0) return 0;
  if (p == 1) return size;
  double mode = floor((size + 1) * p);
  if (mode > size) mode = size;
  double lpm = lgamma(size + 1) - lgamma(mode + 1) - lgamma(size - mode + 1) + mode * log(p) + (size - mode) * log1p(-p);
  double pm = exp(lpm), u = rng_unif01(s) - pm;
  if (u <= 0) return mode;
  double lo = mode, hi = mode, plo = pm, phi = pm, r = p / (1 - p);
  while (lo > 0 || hi < size) {
    if (lo > 0) {                                        /* P(k-1) = P(k) * k / ((n-k+1) r) */
      plo = plo * lo / ((size - lo + 1) * r);
      lo--;
      u -= plo;
      if (u <= 0) return lo;
    }
    if (hi < size) {                                     /* P(k+1) = P(k) * (n-k) r / (k+1) */
      phi = phi * (size - hi) * r / (hi + 1);
      hi++;
      u -= phi;
      if (u <= 0) return hi;
    }
    if (plo < 1e-300 && phi < 1e-300) break;
  }
  return mode;                                           /* (rounding left a sliver of u) */
}

Value bi_rbinom(Interp *I, Args *a) {
  int64_t n = draw_count(I, a);
  Par sz = par_of(I, a, 1, 0), pr = par_of(I, a, 2, 0);
  uint64_t local[4];
  uint64_t *s = rng_stream(I, false, 0, local);
  Tensor *t = tensor_new(I, n, 1);
  double *d = tensor_data(t);
  for (int64_t k = 0; k < n; k++) {
    bi_poll(I, k, t);
    double size = par_at(&sz, k), p = par_at(&pr, k);
    d[k] = !(size >= 0 && size == floor(size) && size < 1e15) || !(p >= 0 && p <= 1) ? NAN : binom_draw(s, size, p);
  }
  return val_mat(t);
}

/* ---- the apply family ---- */

/* Calls fn on x's item i followed by the extra arguments (the builtin's "..."). +1. */
static Value call_on(Interp *I, Value fn, int nfirst, Value *first, Args *a, int dots_from) {
  int extra = a->ndots - dots_from;
  int n = nfirst + (extra > 0 ? extra : 0);
  Value av[n > 0 ? n : 1];
  Symbol *nm[n > 0 ? n : 1];
  for (int i = 0; i < nfirst; i++) { av[i] = first[i]; nm[i] = NULL; }
  for (int i = 0; i < extra; i++) { av[nfirst + i] = a->dots[dots_from + i]; nm[nfirst + i] = a->dotnames[dots_from + i]; }
  return call_value(I, fn, n, av, nm, a->span);
}

/* The names lapply keeps: a list's names. */
static Symbol *item_name(Value x, int64_t i) {
  x = ad_primal(x);
  return x.t == VT_LIST && x.u.l->names ? x.u.l->names[i] : NULL;
}

/* fn applied to each item of x (+1, a list with x's names). */
static List *apply_each(Interp *I, Value fn, Value x, Args *a, int dots_from) {
  int64_t n = seq_count(x);
  if (n > 100000000) bi_error(I, "too many elements (%lld)", (long long)n);
  List *l = list_new(I, (int)(n > 0 ? n : 1));
  tmp_push(I, val_list(l));
  for (int64_t i = 0; i < n; i++) {
    Value it = seq_item(x, i);
    tmp_push(I, it);
    Value r = call_on(I, fn, 1, &it, a, dots_from);
    list_push(l, r, item_name(x, i));
    tmp_release_to(I, I->ntmp - 1);
  }
  tmp_pop(I, 1);
  return l;
}

/* R's simplification of sapply (simplify2array): every result a number gives a column;
** every result a vector of one length k > 1 gives a k x n matrix (result i is column i);
** anything else stays the list. Takes l (+1); returns +1. */
static Value simplify(Interp *I, List *l, Span sp) {
  int n = l->n;
  if (n == 0) return val_list(l);
  bool nums = true, boxed = false;
  int64_t k = -1;
  for (int i = 0; i < n; i++) {
    Value p = ad_primal(l->items[i]);
    if (l->items[i].t == VT_BOX) boxed = true;
    double x;
    if (!as_number(p, &x)) nums = false;
    int64_t m = p.t == VT_MAT ? tensor_numel(p.u.m) : (p.t == VT_NUM || p.t == VT_BOOL) ? 1 : -1;
    if (i == 0) k = m;
    else if (m != k) k = -1;
  }
  if (nums && boxed) {                                  /* traced by grad: c() records the ops */
    Symbol *nm[n];
    memset(nm, 0, sizeof nm);
    tmp_push(I, val_list(l));
    Value r = bi_call(I, bi_find("c"), n, l->items, nm, sp);
    tmp_release_to(I, I->ntmp - 1);
    return r;
  }
  if (nums) {
    Tensor *t = tensor_new(I, n, 1);
    double *d = tensor_data(t);
    bool logical = true;
    for (int i = 0; i < n; i++) {
      as_number(l->items[i], &d[i]);
      Value p = ad_primal(l->items[i]);
      if (!(p.t == VT_BOOL || (p.t == VT_MAT && p.u.m->logical))) logical = false;
    }
    t->logical = logical;
    val_release(val_list(l));
    return val_mat(t);
  }
  if (k > 1 && !boxed) {
    Tensor *t = tensor_new(I, k, n);
    double *d = tensor_data(t);
    for (int i = 0; i < n; i++) {
      const Tensor *m = ad_primal(l->items[i]).u.m;
      for (int64_t j = 0; j < k; j++) d[j * n + i] = tensor_at(m, j);
    }
    val_release(val_list(l));
    return val_mat(t);
  }
  return val_list(l);
}

static Value fun_arg(Interp *I, Args *a, int i, const char *who) {
  return bi_fun_value(I, ad_primal(a->v[i]), who, a->span);
}

Value bi_lapply(Interp *I, Args *a) {
  Value fn = fun_arg(I, a, 1, "lapply");
  tmp_push(I, fn);
  List *l = apply_each(I, fn, a->v[0], a, 0);
  tmp_release_to(I, I->ntmp - 1);
  return val_list(l);
}

Value bi_sapply(Interp *I, Args *a) {
  Value fn = fun_arg(I, a, 1, "sapply");
  tmp_push(I, fn);
  List *l = apply_each(I, fn, a->v[0], a, 0);
  tmp_release_to(I, I->ntmp - 1);
  if (!bi_opt_bool(I, a, 2, true)) return val_list(l);
  return simplify(I, l, a->span);
}

/* vapply(X, FUN, FUN.VALUE): each result must be like FUN.VALUE (a number: a number; a string:
** a string; a vector of k numbers: k numbers), which decides the result's shape. */
Value bi_vapply(Interp *I, Args *a) {
  Value fn = fun_arg(I, a, 1, "vapply");
  tmp_push(I, fn);
  Value tmpl = ad_primal(a->v[2]);
  int64_t k;
  const char *kind;
  if (tmpl.t == VT_STR) { k = 1; kind = "character"; }
  else if (tmpl.t == VT_BOOL) { k = 1; kind = "logical"; }
  else if (tmpl.t == VT_NUM) { k = 1; kind = "double"; }
  else if (tmpl.t == VT_MAT) { k = tensor_numel(tmpl.u.m); kind = "double"; }
  else { char d[64]; bi_argerror(I, 3, "FUN.VALUE must be a number, boolean, string or vector, got %s", val_describe(tmpl, d, sizeof d)); }
  List *l = apply_each(I, fn, a->v[0], a, 0);
  tmp_release_to(I, I->ntmp - 1);
  tmp_push(I, val_list(l));
  for (int i = 0; i < l->n; i++) {
    Value p = ad_primal(l->items[i]);
    int64_t m = p.t == VT_MAT ? tensor_numel(p.u.m) : (p.t == VT_NULL || p.t == VT_LIST) ? (p.t == VT_LIST ? p.u.l->n : 0) : 1;
    if (m != k) bi_error(I, "values must be length %lld,\n but FUN(X[[%d]]) result is length %lld", (long long)k, i + 1, (long long)m);
    bool ok = tmpl.t == VT_STR ? p.t == VT_STR : tmpl.t == VT_BOOL ? (p.t == VT_BOOL || (p.t == VT_MAT && p.u.m->logical))
                                                                 : (p.t == VT_NUM || p.t == VT_BOOL || p.t == VT_MAT);
    if (!ok) bi_error(I, "values must be type '%s',\n but FUN(X[[%d]]) result is type '%s'", kind, i + 1,
                      p.t == VT_STR ? "character" : p.t == VT_BOOL ? "logical" : p.t == VT_LIST ? "list" : "double");
  }
  tmp_pop(I, 1);
  if (tmpl.t == VT_STR) return val_list(l);
  if (l->n == 0) { val_release(val_list(l)); return val_mat(tensor_new(I, k == 1 ? 0 : k, k == 1 ? 1 : 0)); }
  return simplify(I, l, a->span);
}

/* Map(f, ...): f(a[i], b[i], ...) for i over the longest argument, the others recycled. */
Value bi_Map(Interp *I, Args *a) {
  Value fn = fun_arg(I, a, 0, "Map");
  tmp_push(I, fn);
  int na = a->ndots;
  int64_t n = 0;
  for (int j = 0; j < na; j++) { int64_t c = seq_count(a->dots[j]); if (c > n) n = c; }
  for (int j = 0; j < na; j++)
    if (seq_count(a->dots[j]) == 0 && n > 0) bi_argerror(I, j + 2, "a zero-length argument with others of length %lld", (long long)n);
  List *l = list_new(I, (int)(n > 0 ? n : 1));
  tmp_push(I, val_list(l));
  for (int64_t i = 0; i < n; i++) {
    int mark = I->ntmp;
    Value av[na > 0 ? na : 1];
    for (int j = 0; j < na; j++) { av[j] = seq_item(a->dots[j], i % seq_count(a->dots[j])); tmp_push(I, av[j]); }
    Value r = call_value(I, fn, na, av, a->dotnames, a->span);
    list_push(l, r, na > 0 ? item_name(a->dots[0], i % seq_count(a->dots[0])) : NULL);
    tmp_release_to(I, mark);
  }
  tmp_pop(I, 1);
  tmp_release_to(I, I->ntmp - 1);
  return val_list(l);
}

/* Reduce(f, x, init, right=FALSE, accumulate=FALSE) */
Value bi_Reduce(Interp *I, Args *a) {
  Value fn = fun_arg(I, a, 0, "Reduce");
  int mark = I->ntmp;
  tmp_push(I, fn);
  bool right = bi_opt_bool(I, a, 3, false), acc = bi_opt_bool(I, a, 4, false);
  Value x = a->v[1];
  int64_t n = seq_count(x);
  bool init = bi_given(a, 2);
  int64_t total = n + init;
  List *steps = list_new(I, (int)(total > 0 ? total : 1));
  tmp_push(I, val_list(steps));
  if (total == 0) { tmp_release_to(I, mark); return val_null(); }
  Value cur;
  int64_t k = 0;                                        /* items of x used */
  if (init) { cur = a->v[2]; val_retain(cur); }
  else { cur = seq_item(x, right ? n - 1 : 0); k = 1; }
  tmp_push(I, cur);
  val_retain(cur);
  list_push(steps, cur, NULL);
  for (; k < n; k++) {
    Value it = seq_item(x, right ? n - 1 - k : k);
    tmp_push(I, it);
    Value args2[2] = { right ? it : cur, right ? cur : it };
    Symbol *nm[2] = { NULL, NULL };
    Value r = call_value(I, fn, 2, args2, nm, a->span);
    tmp_push(I, r);
    val_retain(r);
    list_push(steps, r, NULL);
    cur = r;
  }
  Value res;
  if (acc) {
    if (right) {                                        /* R lists the right fold's steps left to right */
      for (int i = 0, j = steps->n - 1; i < j; i++, j--) { Value t = steps->items[i]; steps->items[i] = steps->items[j]; steps->items[j] = t; }
    }
    val_retain(val_list(steps));
    tmp_release_to(I, mark);
    return simplify(I, steps, a->span);
  }
  res = cur;
  val_retain(res);
  tmp_release_to(I, mark);
  return res;
}

/* Filter(f, x): the items of x where f is TRUE (a vector gives a column, a list a list). */
Value bi_Filter(Interp *I, Args *a) {
  Value fn = fun_arg(I, a, 0, "Filter");
  int mark = I->ntmp;
  tmp_push(I, fn);
  Value x = ad_primal(a->v[1]);
  int64_t n = seq_count(x);
  List *l = list_new(I, (int)(n > 0 ? n : 1));
  tmp_push(I, val_list(l));
  Tensor *keep = NULL;
  double *kd = NULL;
  int64_t m = 0;
  if (x.t != VT_LIST) { keep = tensor_new(I, n, 1); tmp_push(I, val_mat(keep)); kd = tensor_data(keep); }
  for (int64_t i = 0; i < n; i++) {
    Value it = seq_item(x, i);
    tmp_push(I, it);
    Symbol *nm = NULL;
    Value r = call_value(I, fn, 1, &it, &nm, a->span);
    tmp_push(I, r);
    double b;
    if (!as_number(r, &b) || isnan(b)) {
      char d[64];
      bi_error(I, "f must give TRUE or FALSE, got %s for item %lld", val_describe(ad_primal(r), d, sizeof d), (long long)i + 1);
    }
    if (b != 0) {
      if (kd) kd[m++] = tensor_at(x.u.m, i);
      else { val_retain(it); list_push(l, it, item_name(x, i)); }
    }
    tmp_release_to(I, I->ntmp - 2);
  }
  Value res;
  if (kd) res = column_of(I, kd, m, x.u.m->logical);
  else { val_retain(val_list(l)); res = val_list(l); }
  tmp_release_to(I, mark);
  return res;
}

/* do.call(what, args): what (a function or its name) called with the list args (names bind). */
Value bi_do_call(Interp *I, Args *a) {
  Value fn = fun_arg(I, a, 0, "do.call");
  int mark = I->ntmp;
  tmp_push(I, fn);
  Value l = bi_given(a, 1) ? ad_primal(a->v[1]) : val_null();
  Value r;
  if (l.t == VT_LIST) {
    int n = l.u.l->n;
    Symbol *nm[n > 0 ? n : 1];
    for (int i = 0; i < n; i++) nm[i] = l.u.l->names ? l.u.l->names[i] : NULL;
    r = call_value(I, fn, n, l.u.l->items, nm, a->span);
  } else if (l.t == VT_NULL) {
    r = call_value(I, fn, 0, NULL, NULL, a->span);
  } else {
    char d[64];
    bi_argerror(I, 2, "a list of arguments expected, got %s", val_describe(l, d, sizeof d));
  }
  tmp_release_to(I, mark);
  return r;
}

/* apply(X, MARGIN, FUN, ...): FUN of each row (1) or column (2) of X, given as a column vector. */
Value bi_apply(Interp *I, Args *a) {
  Value xv = ad_primal(a->v[0]);
  char d[64];
  if (xv.t == VT_NUM || xv.t == VT_BOOL) { Tensor *t = bi_mat(I, a, 0); a->v[0] = val_mat(t); tmp_push(I, a->v[0]); xv = a->v[0]; }
  if (xv.t != VT_MAT) bi_argerror(I, 1, "a matrix expected, got %s", val_describe(xv, d, sizeof d));
  double mg = bi_num(I, a, 1);
  if (mg != 1 && mg != 2) bi_argerror(I, 2, "MARGIN must be 1 (rows) or 2 (columns), got %g", mg);
  Value fn = fun_arg(I, a, 2, "apply");
  int mark = I->ntmp;
  tmp_push(I, fn);
  const Tensor *X = xv.u.m;
  int64_t r = tensor_rows(X), c = tensor_cols(X);
  int64_t n = mg == 1 ? r : c, len = mg == 1 ? c : r;
  List *l = list_new(I, (int)(n > 0 ? n : 1));
  tmp_push(I, val_list(l));
  for (int64_t i = 0; i < n; i++) {
    Tensor *v = tensor_new(I, len, 1);
    double *vd = tensor_data(v);
    for (int64_t j = 0; j < len; j++) vd[j] = mg == 1 ? tensor_get1(X, i, j) : tensor_get1(X, j, i);
    Value it = val_mat(v);
    tmp_push(I, it);
    Value res = call_on(I, fn, 1, &it, a, 0);
    list_push(l, res, NULL);
    tmp_release_to(I, I->ntmp - 1);
  }
  val_retain(val_list(l));
  tmp_release_to(I, mark);
  return simplify(I, l, a->span);
}

/* ---- switch (lazy: only the chosen alternative runs) ---- */
Value bi_switch(Interp *I, Args *a) {
  if (a->nnodes < 1) bi_error(I, "'EXPR' is missing");
  int first = 0;
  for (int i = 0; i < a->nnodes; i++)                  /* EXPR: named so, or the first unnamed */
    if (a->nodes[i]->kind == AST_ARG && !strcmp(a->nodes[i]->u.sym->name, "EXPR")) { first = i; break; }
  AstNode *en = a->nodes[first]->kind == AST_ARG ? a->nodes[first]->kids[0] : a->nodes[first];
  Value e = eval(I, en);
  if (I->ctl) return e;
  tmp_push(I, e);
  Value p = ad_primal(e);
  int nalt = a->nnodes - 1;
  AstNode *alt[nalt > 0 ? nalt : 1];
  for (int i = 0, k = 0; i < a->nnodes; i++) if (i != first) alt[k++] = a->nodes[i];
  int pick = -1;
  if (p.t == VT_STR) {
    int dflt = -1, ndflt = 0;
    for (int i = 0; i < nalt && pick < 0; i++) {
      if (alt[i]->kind != AST_ARG) { dflt = i; ndflt++; continue; }
      if (!strcmp(alt[i]->u.sym->name, p.u.s->s)) pick = i;
    }
    if (ndflt > 1) bi_error(I, "duplicate 'switch' defaults");
    if (pick < 0) pick = dflt;
    while (pick >= 0 && pick < nalt && alt[pick]->kind == AST_ARG && (alt[pick]->flags & AST_F_EMPTY)) pick++;   /* fall through */
    if (pick >= nalt) pick = -1;
  } else {
    e = ad_concrete(I, e, a->span, "switch's EXPR");    /* (borrowed) */
    double x;
    if (!as_number(e, &x)) { char d[64]; bi_error(I, "EXPR must be a number or a string, got %s", val_describe(ad_primal(e), d, sizeof d)); }
    if (x >= 1 && x < nalt + 1) {
      pick = (int)x - 1;
      if (alt[pick]->kind == AST_ARG && (alt[pick]->flags & AST_F_EMPTY)) bi_error(I, "empty alternative in numeric switch");
    }
  }
  if (pick < 0) return val_null();                      /* (R: invisible NULL) */
  AstNode *b = alt[pick]->kind == AST_ARG ? alt[pick]->kids[0] : alt[pick];
  return eval(I, b);
}

/* ---- tryCatch, warning, signalling ---- */
typedef struct TcJob { AstNode *e; Value r; } TcJob;
static void tc_run(Interp *I, void *ud) { TcJob *j = ud; j->r = eval(I, j->e); }
typedef struct TcCall { Value fn, cond; Span sp; Value r; } TcCall;
static void tc_call(Interp *I, void *ud) {
  TcCall *c = ud;
  Symbol *nm = NULL;
  c->r = call_value(I, c->fn, 1, &c->cond, &nm, c->sp);
}

/* Runs finally=: after a return() or break in expr too (its pending control and value are kept
** aside while finally runs). */
static void run_finally(Interp *I, AstNode *fin) {
  if (!fin) return;
  int ctl = I->ctl;
  Value rv = I->retval;
  I->ctl = CTL_NONE;
  I->retval = val_null();
  tmp_push(I, rv);
  Value v = eval(I, fin);
  val_release(v);
  tmp_pop(I, 1);
  if (ctl != CTL_NONE) {
    val_release(I->retval);
    I->ctl = ctl;
    I->retval = rv;
  } else val_release(rv);
}

Value bi_tryCatch(Interp *I, Args *a) {
  AstNode *expr = NULL, *onerr = NULL, *onwarn = NULL, *fin = NULL;
  for (int i = 0; i < a->nnodes; i++) {
    AstNode *n = a->nodes[i];
    if (n->kind != AST_ARG) {
      if (expr) bi_error(I, "takes one expression and named handlers: tryCatch(expr, error = function(e) ..., finally = ...)");
      expr = n;
      continue;
    }
    const char *nm = n->u.sym->name;
    if (!strcmp(nm, "expr")) expr = n->kids[0];
    else if (!strcmp(nm, "error") || !strcmp(nm, "condition")) onerr = n->kids[0];
    else if (!strcmp(nm, "warning")) onwarn = n->kids[0];
    else if (!strcmp(nm, "finally")) fin = n->kids[0];
    else bi_error(I, "unknown handler '%s' (MLS signals error and warning conditions)", nm);
    if (n->flags & AST_F_EMPTY) bi_error(I, "argument '%s' has no value", nm);
  }
  stage_eager_here(I, "'tryCatch' catches errors", a->span);
  if (!expr) { run_finally(I, fin); return val_null(); }
  TcJob job = { expr, val_null() };
  int saved_catch = I->warn_catch;
  if (onwarn) I->warn_catch++;
  int err = mls_pcall(I, tc_run, &job);
  I->warn_catch = saved_catch;
  if (!err) {
    tmp_push(I, job.r);
    run_finally(I, fin);
    tmp_pop(I, 1);
    return job.r;
  }
  bool warning = I->err.warning;
  AstNode *h = warning ? onwarn : onerr;
  if (I->quitting || I->interrupted || !h) {
    int st = 0;
    if (fin) {                                          /* finally runs, then the error goes on */
      ErrInfo saved = I->err;
      if (saved.src) source_retain(saved.src);
      TcJob fj = { fin, val_null() };
      st = mls_pcall(I, tc_run, &fj);
      if (!st) val_release(fj.r);
      if (!st) { if (I->err.src) source_release(I->err.src); I->err = saved; }
      else if (saved.src) source_release(saved.src);
    }
    mls_rethrow(I);
  }
  /* the condition: list(message=, call=NULL), as R's simpleError */
  List *cl = list_new(I, 2);
  tmp_push(I, val_list(cl));
  list_push(cl, val_cstr(I->err.msg), sym_intern(&I->syms, "message", 7));
  list_push(cl, val_null(), sym_intern(&I->syms, "call", 4));
  Value hf = eval(I, h);
  tmp_push(I, hf);
  char d[64];
  if (hf.t != VT_FUNC && hf.t != VT_BUILTIN)
    bi_error(I, "the %s handler must be a function, got %s", warning ? "warning" : "error", val_describe(hf, d, sizeof d));
  TcCall c = { hf, val_list(cl), a->span, val_null() };
  err = mls_pcall(I, tc_call, &c);
  if (err) {
    if (fin) {
      ErrInfo saved = I->err;
      if (saved.src) source_retain(saved.src);
      TcJob fj = { fin, val_null() };
      int st = mls_pcall(I, tc_run, &fj);
      if (!st) { val_release(fj.r); if (I->err.src) source_release(I->err.src); I->err = saved; }
      else if (saved.src) source_release(saved.src);
    }
    mls_rethrow(I);
  }
  tmp_release_to(I, I->ntmp - 2);
  tmp_push(I, c.r);
  run_finally(I, fin);
  tmp_pop(I, 1);
  return c.r;
}

Value bi_warning(Interp *I, Args *a) {
  TextBuf t;
  tb_open(I, &t);
  for (int i = 0; i < a->ndots; i++) fmt_value_text(I, &t, a->dots[i], a->span);
  char msg[900];
  snprintf(msg, sizeof msg, "%s", t.p ? t.p : "");
  tb_close(I, &t);
  if (I->warn_catch > 0) {
    I->warn_pending = true;
    mls_throw(I, a->span, "%s", msg);
  }
  fflush(I->out ? I->out : stdout);
  fprintf(I->errf ? I->errf : stderr, "Warning message:\n%s\n", msg);
  return val_cstr(msg);
}

/* ---- signif, round(x, digits) ---- */

/* R 4's round(x, d) for d != 0: of the two neighbours at d decimals, the one nearer to x (as
** doubles), the even last digit on a tie. */
static double round_digits(double x, int d) {
  if (!isfinite(x) || x == 0) return x;
  if (d > 308) return x;
  if (d < -308) return 0;
  double p = pow(10.0, fabs((double)d));
  double y = d > 0 ? x * p : x / p;
  if (!isfinite(y)) return x;
  double lo = floor(y), hi = ceil(y);
  if (lo == hi) return x;
  double xl = d > 0 ? lo / p : lo * p, xh = d > 0 ? hi / p : hi * p;
  double dl = x - xl, dh = xh - x;
  if (dl < dh) return xl;
  if (dh < dl) return xh;
  return fmod(lo, 2) == 0 ? xl : xh;
}

Value bi_round(Interp *I, Args *a) {
  OpKind op = interp_in_dml(I) ? OP_ROUNDUP : OP_ROUND;
  if (!bi_given(a, 1)) return op_unary(I, op, a->v[0], a->span);
  a->v[1] = ad_primal(a->v[1]);
  double dg = bi_num(I, a, 1);
  if (isnan(dg)) bi_argerror(I, 2, "digits must be a number, got NaN");
  int d = dg > 400 ? 400 : dg < -400 ? -400 : (int)floor(dg + 0.5);
  if (d == 0) return op_unary(I, op, a->v[0], a->span);
  if (ad_any_active(1, a->v)) {                        /* traced: through ops (derivative 0) */
    double p = pow(10.0, (double)d);
    Value y = op_binary(I, OP_MUL, a->v[0], val_num(p), a->span);
    tmp_push(I, y);
    Value z = op_unary(I, op, y, a->span);
    tmp_push(I, z);
    Value r = op_binary(I, OP_DIV, z, val_num(p), a->span);
    tmp_release_to(I, I->ntmp - 2);
    return r;
  }
  Value v = a->v[0];
  if (v.t == VT_NUM) return val_num(round_digits(v.u.n, d));
  if (v.t == VT_BOOL) return val_num(round_digits(v.u.b, d));
  char dd[64];
  if (v.t != VT_MAT) bi_argerror(I, 1, "number or matrix expected, got %s", val_describe(v, dd, sizeof dd));
  Tensor *t = tensor_new(I, tensor_rows(v.u.m), tensor_cols(v.u.m));
  double *o = tensor_data(t);
  int64_t n = tensor_numel(t);
  for (int64_t k = 0; k < n; k++) { bi_poll(I, k, t); o[k] = round_digits(tensor_at(v.u.m, k), d); }
  return val_mat(t);
}

static double signif1(double x, int d) {
  if (!isfinite(x) || x == 0) return x;
  if (d < 1) d = 1;
  if (d > 22) return x;
  char buf[64];
  snprintf(buf, sizeof buf, "%.*e", d - 1, x);
  return strtod(buf, NULL);
}

Value bi_signif(Interp *I, Args *a) {
  double dg = bi_opt_num(I, a, 1, 6);
  if (isnan(dg)) bi_argerror(I, 2, "digits must be a number, got NaN");
  int d = dg > 30 ? 30 : dg < 1 ? 1 : (int)floor(dg + 0.5);
  Value v = ad_primal(a->v[0]);
  if (v.t == VT_NUM) return val_num(signif1(v.u.n, d));
  if (v.t == VT_BOOL) return val_num(signif1(v.u.b, d));
  char dd[64];
  if (v.t != VT_MAT) bi_argerror(I, 1, "number or matrix expected, got %s", val_describe(v, dd, sizeof dd));
  Tensor *t = tensor_new(I, tensor_rows(v.u.m), tensor_cols(v.u.m));
  double *o = tensor_data(t);
  int64_t n = tensor_numel(t);
  for (int64_t k = 0; k < n; k++) { bi_poll(I, k, t); o[k] = signif1(tensor_at(v.u.m, k), d); }
  return val_mat(t);
}

/* ---- format ---- */
static void pad_to(TextBuf *t, const char *s, int width, bool left) {
  int n = 0;
  for (const char *p = s; *p; p++) n += ((unsigned char)*p & 0xC0) != 0x80;
  if (!left) for (int i = n; i < width; i++) tb_putn(t, " ", 1);
  tb_puts(t, s);
  if (left) for (int i = n; i < width; i++) tb_putn(t, " ", 1);
}

/* format(x, digits=7, nsmall=0, width=0, justify="left"): the text of x as R formats it; a
** vector (or matrix, row-major) gives a list of strings formatted in common. */
Value bi_format(Interp *I, Args *a) {
  Value v = ad_primal(a->v[0]);
  double dg = bi_opt_num(I, a, 1, 7), ns = bi_opt_num(I, a, 2, 0), wd = bi_opt_num(I, a, 3, 0);
  if (!(dg >= 1 && dg <= 22)) bi_argerror(I, 2, "digits must be from 1 to 22, got %g", dg);
  if (!(ns >= 0 && ns <= 20)) bi_argerror(I, 3, "nsmall must be from 0 to 20, got %g", ns);
  if (!(wd >= 0 && wd <= 10000)) bi_argerror(I, 4, "width must be from 0 to 10000, got %g", wd);
  const char *just = bi_given(a, 4) ? bi_str(I, a, 4) : "left";
  if (strcmp(just, "left") && strcmp(just, "right") && strcmp(just, "centre"))
    bi_argerror(I, 5, "justify must be \"left\", \"right\" or \"centre\", got \"%s\"", just);
  int width = (int)wd;
  TextBuf t;
  if (v.t == VT_STR || v.t == VT_BOOL || v.t == VT_NULL) {
    tb_open(I, &t);
    const char *s = v.t == VT_STR ? v.u.s->s : v.t == VT_BOOL ? (v.u.b ? "TRUE" : "FALSE") : "NULL";
    pad_to(&t, s, width, v.t == VT_STR && strcmp(just, "right"));
    return tb_close_str(I, &t);
  }
  if (v.t == VT_LIST) {
    List *l = list_new(I, v.u.l->n);
    tmp_push(I, val_list(l));
    for (int i = 0; i < v.u.l->n; i++) {
      Value it = ad_primal(v.u.l->items[i]);
      if (it.t == VT_STR) list_push(l, (val_retain(it), it), v.u.l->names ? v.u.l->names[i] : NULL);
      else {
        tb_open(I, &t);
        fmt_value_text(I, &t, it, a->span);
        list_push(l, tb_close_str(I, &t), v.u.l->names ? v.u.l->names[i] : NULL);
      }
    }
    tmp_pop(I, 1);
    return val_list(l);
  }
  int64_t n;
  double *x = num_elems(I, v, 1, &n);
  size_t each = 400;
  char *buf = bi_scratch(I, (size_t)(n > 0 ? n : 1) * each);
  int w = fmt_nums(x, n, (int)dg, (int)ns, buf, each);
  if (width > w) w = width;
  Value r;
  if (v.t != VT_MAT || n == 1) {
    tb_open(I, &t);
    pad_to(&t, buf, w, false);
    r = tb_close_str(I, &t);
  } else {
    List *l = list_new(I, (int)(n > 0 ? n : 1));
    tmp_push(I, val_list(l));
    for (int64_t k = 0; k < n; k++) {
      tb_open(I, &t);
      pad_to(&t, buf + (size_t)k * each, w, false);
      list_push(l, tb_close_str(I, &t), NULL);
    }
    tmp_pop(I, 1);
    r = val_list(l);
  }
  bi_scratch_free(I, buf);
  bi_scratch_free(I, x);
  return r;
}

/* ---- summary: Min, 1st Qu., Median, Mean, 3rd Qu., Max (type-7 quantiles) ---- */
static double q7(const double *s, int64_t n, double p) {
  double h = (double)(n - 1) * p;
  int64_t lo = (int64_t)floor(h);
  int64_t hi = lo + 1 < n ? lo + 1 : lo;
  return s[lo] + (h - (double)lo) * (s[hi] - s[lo]);
}

Value bi_summary(Interp *I, Args *a) {
  int64_t n;
  double *x = num_elems(I, a->v[0], 1, &n);
  int64_t m = 0, nas = 0;
  double sum = 0;
  for (int64_t k = 0; k < n; k++) { if (isnan(x[k])) nas++; else { sum += x[k]; x[m++] = x[k]; } }
  if (m == 0) { bi_scratch_free(I, x); bi_error(I, "no values to summarize (all NaN or empty)"); }
  qsort(x, (size_t)m, sizeof *x, cmp_up);
  double mean = 0;
  for (int64_t k = 0; k < m; k++) mean += x[k];
  mean /= (double)m;
  (void)sum;
  double v[6] = { x[0], q7(x, m, 0.25), q7(x, m, 0.5), mean, q7(x, m, 0.75), x[m - 1] };
  bi_scratch_free(I, x);
  static const char *names[7] = { "Min.", "1st Qu.", "Median", "Mean", "3rd Qu.", "Max.", "NA's" };
  List *l = list_new(I, 7);
  for (int i = 0; i < 6; i++) list_push(l, val_num(v[i]), sym_intern(&I->syms, names[i], strlen(names[i])));
  if (nas) list_push(l, val_num((double)nas), sym_intern(&I->syms, names[6], 4));
  l->table = true;
  return val_list(l);
}

/* ---- str: a one-line structure description, as R's str ---- */
static void str_nums(TextBuf *t, const double *x, int64_t n, int64_t show) {
  for (int64_t k = 0; k < n && k < show; k++) {
    char b[64];
    fmt_num(b, sizeof b, x[k], 3);
    tb_puts(t, " ");
    tb_puts(t, b);
  }
  if (n > show) tb_puts(t, " ...");
}

static void str_value(Interp *I, TextBuf *t, Value v, int depth) {
  v = ad_primal(v);
  switch (v.t) {
  case VT_NULL: tb_puts(t, " NULL"); return;
  case VT_NUM: { char b[64]; fmt_num(b, sizeof b, v.u.n, 3); tb_printf(t, " num %s", b); return; }
  case VT_BOOL: tb_puts(t, v.u.b ? " logi TRUE" : " logi FALSE"); return;
  case VT_STR: tb_puts(t, " chr \""); tb_puts(t, v.u.s->s); tb_puts(t, "\""); return;
  case VT_FUNC: case VT_BUILTIN: tb_puts(t, "function ()  "); return;
  case VT_MAT: {
    const Tensor *m = v.u.m;
    int64_t r = tensor_rows(m), c = tensor_cols(m), n = r * c;
    const char *ty = m->logical ? "logi" : "num";
    if (c == 1) tb_printf(t, " %s [1:%lld]", ty, (long long)r);
    else tb_printf(t, " %s [1:%lld, 1:%lld]", ty, (long long)r, (long long)c);
    if (n == 0) { tb_printf(t, " "); return; }
    int64_t show = n < 10 ? n : 10;
    double x[10];
    for (int64_t k = 0; k < show; k++) x[k] = tensor_get1(m, k % r, k / r);   /* R's column-major order */
    if (m->logical) {
      for (int64_t k = 0; k < show; k++) tb_puts(t, x[k] != 0 ? " TRUE" : " FALSE");
      if (n > show) tb_puts(t, " ...");
    } else str_nums(t, x, n, show);
    return;
  }
  case VT_LIST: {
    const List *l = v.u.l;
    tb_printf(t, "List of %d", l->n);
    for (int i = 0; i < l->n; i++) {
      tb_puts(t, "\n ");
      for (int d = 0; d < depth; d++) tb_puts(t, " ..");
      tb_puts(t, depth ? "$ " : "$ ");
      tb_puts(t, l->names && l->names[i] ? l->names[i]->name : "");
      tb_puts(t, ":");
      if (depth < 20) str_value(I, t, l->items[i], depth + 1);
      else tb_puts(t, " ...");
    }
    return;
  }
  default: tb_puts(t, " ?"); return;
  }
}

Value bi_str_struct(Interp *I, Args *a) {
  TextBuf t;
  tb_open(I, &t);
  str_value(I, &t, a->v[0], 0);
  tb_puts(&t, "\n");
  fflush(I->errf ? I->errf : stderr);
  fputs(t.p, I->out ? I->out : stdout);
  tb_close(I, &t);
  return val_null();
}

/* ---- strings ---- */

/* Applies f to a string, or to each string of a list (a list of results); numbers are taken
** as their text, as R does. */
/* f(I, a, s, len, ctx): one string's result; ctx is what the caller of str_map hands on (a
** compiled pattern), so that no file-scope state carries it (docs/robustness.md "Global state"). */
typedef Value (*StrFn)(Interp *I, Args *a, const char *s, size_t len, void *ctx);
static Value str_map(Interp *I, Args *a, int argi, StrFn f, bool to_column, void *ctx) {
  Value v = ad_primal(a->v[argi]);
  char d[64];
  if (v.t == VT_STR) return f(I, a, v.u.s->s, v.u.s->len, ctx);
  if (v.t == VT_NUM || v.t == VT_BOOL) {
    TextBuf t;
    tb_open(I, &t);
    fmt_value_text(I, &t, v, a->span);
    tmp_push(I, tb_close_str(I, &t));
    Value s = I->tmp[I->ntmp - 1];
    Value r = f(I, a, s.u.s->s, s.u.s->len, ctx);
    tmp_release_to(I, I->ntmp - 1);
    return r;
  }
  if (v.t != VT_LIST) bi_argerror(I, argi + 1, "a string or a list of strings expected, got %s", val_describe(v, d, sizeof d));
  List *l = v.u.l;
  if (to_column) {
    Tensor *t = tensor_new(I, l->n, 1);
    tmp_push(I, val_mat(t));
    for (int i = 0; i < l->n; i++) {
      Value it = ad_primal(l->items[i]);
      if (it.t != VT_STR) bi_argerror(I, argi + 1, "element %d is %s, not a string", i + 1, val_describe(it, d, sizeof d));
      Value r = f(I, a, it.u.s->s, it.u.s->len, ctx);
      tensor_data(t)[i] = r.t == VT_BOOL ? r.u.b : r.u.n;
      if (r.t == VT_BOOL) t->logical = true;
    }
    tmp_pop(I, 1);
    return val_mat(t);
  }
  List *o = list_new(I, l->n > 0 ? l->n : 1);
  tmp_push(I, val_list(o));
  for (int i = 0; i < l->n; i++) {
    Value it = ad_primal(l->items[i]);
    if (it.t != VT_STR) bi_argerror(I, argi + 1, "element %d is %s, not a string", i + 1, val_describe(it, d, sizeof d));
    list_push(o, f(I, a, it.u.s->s, it.u.s->len, ctx), l->names ? l->names[i] : NULL);
  }
  tmp_pop(I, 1);
  return val_list(o);
}

static Value case_one(Interp *I, Args *a, const char *s, size_t len, bool up) {
  (void)I; (void)a;
  Value r = val_str_new(len);
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    r.u.s->s[i] = ch < 128 ? (char)(up ? toupper(ch) : tolower(ch)) : (char)ch;
  }
  return r;
}
static Value upper_one(Interp *I, Args *a, const char *s, size_t len, void *ctx) { return case_one(I, a, s, len, true); }
static Value lower_one(Interp *I, Args *a, const char *s, size_t len, void *ctx) { return case_one(I, a, s, len, false); }
Value bi_toupper(Interp *I, Args *a) { return str_map(I, a, 0, upper_one, false, NULL); }
Value bi_tolower(Interp *I, Args *a) { return str_map(I, a, 0, lower_one, false, NULL); }

/* Byte offset of UTF-8 character k (0-based) of s, or len. */
static size_t utf8_off(const char *s, size_t len, int64_t k) {
  size_t i = 0;
  for (int64_t c = 0; i < len; i++) {
    if (((unsigned char)s[i] & 0xC0) == 0x80) continue;
    if (c++ == k) return i;
  }
  return len;
}

static Value substr_one(Interp *I, Args *a, const char *s, size_t len, void *ctx) {
  double st = bi_num(I, a, 1), en = bi_num(I, a, 2);
  if (isnan(st) || isnan(en)) return val_cstr("");
  if (st < 1) st = 1;
  if (en < st) return val_cstr("");
  if (en > 1e15) en = 1e15;
  size_t b = utf8_off(s, len, (int64_t)st - 1), e = utf8_off(s, len, (int64_t)en);
  return val_str(s + b, e > b ? e - b : 0);
}
Value bi_substr(Interp *I, Args *a) { return str_map(I, a, 0, substr_one, false, NULL); }

/* A compiled pattern of sub/gsub/grepl/strsplit: POSIX extended, or a fixed string. */
typedef struct Pat { bool fixed; regex_t re; const char *lit; size_t litlen; } Pat;
static void pat_free(void *p) { Pat *q = p; if (!q->fixed) regfree(&q->re); }

static void pat_open(Interp *I, Pat *p, Value v, int argn, bool fixed, bool icase) {
  char d[64];
  v = ad_primal(v);
  if (v.t != VT_STR) bi_argerror(I, argn, "a pattern string expected, got %s", val_describe(v, d, sizeof d));
  p->fixed = fixed;
  p->lit = v.u.s->s;
  p->litlen = v.u.s->len;
  if (fixed) return;
  int rc = regcomp(&p->re, v.u.s->s, REG_EXTENDED | (icase ? REG_ICASE : 0));
  if (rc) {
    char msg[200];
    regerror(rc, &p->re, msg, sizeof msg);
    bi_argerror(I, argn, "invalid regular expression '%s': %s", v.u.s->s, msg);
  }
  mls_defer(I, pat_free, p);
}
static void pat_close(Interp *I, Pat *p) { if (!p->fixed) { mls_undefer(I, p); regfree(&p->re); } }

/* The first match in s[from..len) (s NUL-terminated at len): its start and end, with the
** groups in g (10); false when none. notbol: from is not the string's start. */
static bool pat_find(const Pat *p, const char *s, size_t len, size_t from, size_t *ms, size_t *me, regmatch_t *g) {
  if (p->fixed) {
    if (p->litlen == 0) { *ms = *me = from; return from <= len; }
    for (size_t i = from; i + p->litlen <= len; i++)
      if (!memcmp(s + i, p->lit, p->litlen)) { *ms = i; *me = i + p->litlen; return true; }
    return false;
  }
  if (from > len) return false;
  regmatch_t m[10];
  if (regexec(&p->re, s + from, 10, m, from > 0 ? REG_NOTBOL : 0) != 0) return false;
  *ms = from + (size_t)m[0].rm_so;
  *me = from + (size_t)m[0].rm_eo;
  for (int k = 0; k < 10; k++) {
    g[k] = m[k];
    if (m[k].rm_so >= 0) { g[k].rm_so += (regoff_t)from; g[k].rm_eo += (regoff_t)from; }
  }
  return true;
}

static size_t utf8_len1(const char *s, size_t len, size_t i) {
  size_t k = i + 1;
  while (k < len && ((unsigned char)s[k] & 0xC0) == 0x80) k++;
  return k - i;
}

typedef struct SubCtx { Pat pat; const char *rep; size_t replen; bool global; } SubCtx;

static Value sub_one(Interp *I, Args *a, const char *s, size_t len, void *ctx) {
  (void)a;
  SubCtx *c = ctx;
  TextBuf t;
  tb_open(I, &t);
  size_t pos = 0;
  regmatch_t g[10];
  for (int k = 0; k < 10; k++) g[k].rm_so = g[k].rm_eo = -1;
  while (pos <= len) {
    size_t ms, me;
    if (c->pat.litlen == 0 && pos >= len && pos > 0) break;
    if (!pat_find(&c->pat, s, len, pos, &ms, &me, g)) break;
    tb_putn(&t, s + pos, ms - pos);
    for (size_t i = 0; i < c->replen; i++) {           /* \\1 .. \\9: the groups; \\0 the match */
      char ch = c->rep[i];
      if (ch == '\\' && i + 1 < c->replen && !c->pat.fixed && c->rep[i + 1] >= '0' && c->rep[i + 1] <= '9') {
        int k = c->rep[++i] - '0';
        if (k == 0) tb_putn(&t, s + ms, me - ms);
        else if (g[k].rm_so >= 0) tb_putn(&t, s + g[k].rm_so, (size_t)(g[k].rm_eo - g[k].rm_so));
        continue;
      }
      if (ch == '\\' && i + 1 < c->replen && !c->pat.fixed) { tb_putn(&t, &c->rep[++i], 1); continue; }
      tb_putn(&t, &ch, 1);
    }
    if (me == ms) {                                      /* an empty match: copy one character on */
      if (ms >= len) { pos = len + 1; break; }           /* (R: "" matches before each character only) */
      size_t w = utf8_len1(s, len, ms);
      tb_putn(&t, s + ms, w);
      pos = ms + w;
    } else pos = me;
    if (!c->global) break;
  }
  if (pos <= len) tb_putn(&t, s + pos, len - pos);
  return tb_close_str(I, &t);
}

static Value sub_gsub(Interp *I, Args *a, bool global) {
  bool icase = bi_opt_bool(I, a, 3, false), fixed = bi_opt_bool(I, a, 4, false);
  if (bi_opt_bool(I, a, 5, false)) bi_argerror(I, 6, "perl=TRUE is not supported (POSIX extended regular expressions; see help)");
  SubCtx c;
  Value rv = ad_primal(a->v[1]);
  char d[64];
  if (rv.t != VT_STR) bi_argerror(I, 2, "a replacement string expected, got %s", val_describe(rv, d, sizeof d));
  c.rep = rv.u.s->s;
  c.replen = rv.u.s->len;
  c.global = global;
  pat_open(I, &c.pat, a->v[0], 1, fixed, icase);
  Value r = str_map(I, a, 2, sub_one, false, &c);
  pat_close(I, &c.pat);
  return r;
}
Value bi_sub(Interp *I, Args *a) { return sub_gsub(I, a, false); }
Value bi_gsub(Interp *I, Args *a) { return sub_gsub(I, a, true); }

static Value grepl_one(Interp *I, Args *a, const char *s, size_t len, void *ctx) {
  (void)I; (void)a;
  size_t ms, me;
  regmatch_t g[10];
  return val_bool(pat_find(ctx, s, len, 0, &ms, &me, g));
}
Value bi_grepl(Interp *I, Args *a) {
  bool icase = bi_opt_bool(I, a, 2, false), fixed = bi_opt_bool(I, a, 3, false);
  if (bi_opt_bool(I, a, 4, false)) bi_argerror(I, 5, "perl=TRUE is not supported (POSIX extended regular expressions; see help)");
  Pat p;
  pat_open(I, &p, a->v[0], 1, fixed, icase);
  Value r = str_map(I, a, 1, grepl_one, true, &p);
  pat_close(I, &p);
  return r;
}

static Value split_one(Interp *I, Args *a, const char *s, size_t len, void *ctx) {
  (void)a;
  Pat *split_pat = ctx;
  List *l = list_new(I, 4);
  tmp_push(I, val_list(l));
  size_t pos = 0;
  regmatch_t g[10];
  bool chars = split_pat->fixed ? split_pat->litlen == 0 : split_pat->litlen == 0;
  while (pos < len) {
    size_t ms, me;
    if (chars) { size_t w = utf8_len1(s, len, pos); list_push(l, val_str(s + pos, w), NULL); pos += w; continue; }
    if (!pat_find(split_pat, s, len, pos, &ms, &me, g)) { list_push(l, val_str(s + pos, len - pos), NULL); pos = len; break; }
    if (me == ms) {                                      /* R: an empty match splits off one character */
      size_t w = utf8_len1(s, len, pos);
      list_push(l, val_str(s + pos, w), NULL);
      pos += w;
      continue;
    }
    list_push(l, val_str(s + pos, ms - pos), NULL);
    pos = me;
  }
  tmp_pop(I, 1);
  return val_list(l);
}
Value bi_strsplit(Interp *I, Args *a) {
  bool fixed = bi_opt_bool(I, a, 2, false);
  if (bi_opt_bool(I, a, 3, false)) bi_argerror(I, 4, "perl=TRUE is not supported (POSIX extended regular expressions; see help)");
  Pat p;
  pat_open(I, &p, a->v[1], 2, fixed, false);
  Value r = str_map(I, a, 0, split_one, false, &p);
  pat_close(I, &p);
  return r;
}

/* ---- stopifnot (lazy: the message quotes the failing expression) ---- */
Value bi_stopifnot(Interp *I, Args *a) {
  for (int i = 0; i < a->nnodes; i++) {
    AstNode *n = a->nodes[i];
    AstNode *e = n->kind == AST_ARG ? n->kids[0] : n;
    if (n->kind == AST_ARG && (n->flags & AST_F_EMPTY)) bi_error(I, "argument '%s' has no value", n->u.sym->name);
    Value v = eval(I, e);
    if (I->ctl) return v;
    tmp_push(I, v);
    v = ad_concrete(I, v, e->span, "stopifnot's condition");   /* (borrowed) */
    Value p = ad_primal(v);
    bool ok = true, many = false;
    if (p.t == VT_BOOL) ok = p.u.b;
    else if (p.t == VT_NUM) ok = !isnan(p.u.n) && p.u.n != 0;
    else if (p.t == VT_MAT) {
      int64_t k = tensor_numel(p.u.m);
      many = k != 1;
      for (int64_t j = 0; j < k && ok; j++) { double x = tensor_at(p.u.m, j); ok = !isnan(x) && x != 0; }
    } else ok = false;
    if (!ok) {
      if (n->kind == AST_ARG) mls_throw(I, e->span, "%s", n->u.sym->name);
      const Source *src = I->src;
      int len = (int)(e->span.end - e->span.start);
      if (len > 200) len = 200;
      mls_throw(I, e->span, "%.*s %s", len, src ? src->text + e->span.start : "?", many ? "are not all TRUE" : "is not TRUE");
    }
    tmp_release_to(I, I->ntmp - 1);
  }
  return val_null();
}

/* ---- head, tail: the first or last n rows of a matrix (items of a list), as R ---- */
static Value head_tail(Interp *I, Args *a, bool head) {
  double nn = bi_opt_num(I, a, 1, 6);
  if (isnan(nn) || nn != floor(nn)) bi_argerror(I, 2, "n must be a whole number, got %g", nn);
  Value x = ad_primal(a->v[0]);
  int64_t len = x.t == VT_MAT ? tensor_rows(x.u.m) : x.t == VT_LIST ? x.u.l->n : -1;
  if (len < 0) { val_retain(a->v[0]); return a->v[0]; }     /* a number or string: itself */
  int64_t k = nn >= 0 ? (nn < (double)len ? (int64_t)nn : len) : (-nn < (double)len ? len + (int64_t)nn : 0);
  int64_t from = head ? 0 : len - k;
  if (x.t == VT_LIST) {
    List *l = list_new(I, (int)(k > 0 ? k : 1));
    for (int64_t i = from; i < from + k; i++) {
      val_retain(x.u.l->items[i]);
      list_push(l, x.u.l->items[i], x.u.l->names ? x.u.l->names[i] : NULL);
    }
    return val_list(l);
  }
  const Tensor *m = x.u.m;
  int64_t c = tensor_cols(m);
  Tensor *t = tensor_new(I, k, c);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < c; j++) d[i * c + j] = tensor_get1(m, from + i, j);
  t->logical = m->logical;
  return val_mat(t);
}
Value bi_head(Interp *I, Args *a) { return head_tail(I, a, true); }
Value bi_tail(Interp *I, Args *a) { return head_tail(I, a, false); }

/* ---- nchar over a list of strings ---- */
static Value nchar_one(Interp *I, Args *a, const char *s, size_t len, void *ctx) {
  (void)I; (void)a;
  double n = 0;
  for (size_t i = 0; i < len; i++) n += ((unsigned char)s[i] & 0xC0) != 0x80;
  return val_num(n);
}
Value bi_nchar_list(Interp *I, Args *a) { return str_map(I, a, 0, nchar_one, true, NULL); }

/* ---- write.csv ---- */

/*
** write.csv(x, file, row.names=TRUE): R's write.csv of a matrix (or a number): a header of
** quoted column names "V1", "V2", ... (R's for a matrix without dimnames), then one line per
** row, numbers to 15 significant digits, NA as NA; row.names=TRUE starts each line with the
** quoted row number (header ""). A vector with names (c(a = 1, b = 2)) is written as R
** writes a named vector: one column "x", its names as the row names. No .mtd sidecar.
*/
Value bi_write_csv(Interp *I, Args *a) {
  Value x = ad_concrete(I, a->v[0], a->span, "write.csv's x");
  const char *path = bi_str(I, a, 1);
  bool rn = bi_opt_bool(I, a, 2, true);
  char d[64];
  if (x.t != VT_MAT && x.t != VT_NUM && x.t != VT_BOOL)
    bi_argerror(I, 1, "a matrix or a number expected, got %s (a frame: write(F, path, format=\"csv\", header=TRUE))",
                val_describe(x, d, sizeof d));
  if (I->no_write) bi_error(I, "cannot write '%s': writing files is turned off", path);
  const Tensor *m = x.t == VT_MAT ? x.u.m : NULL;
  const TensorNames *nm = m && m->names && (tensor_rows(m) == 1 || tensor_cols(m) == 1) ? m->names : NULL;
  int64_t r = m ? (nm ? tensor_numel(m) : tensor_rows(m)) : 1, c = m ? (nm ? 1 : tensor_cols(m)) : 1;
  TextBuf t;
  tb_open(I, &t);
  if (rn) tb_puts(&t, c > 0 ? "\"\"," : "\"\"");
  for (int64_t j = 0; j < c; j++) {
    if (nm) tb_puts(&t, "\"x\"");
    else tb_printf(&t, "%s\"V%lld\"", j ? "," : "", (long long)(j + 1));
  }
  tb_puts(&t, "\n");
  char buf[64];
  for (int64_t i = 0; i < r; i++) {
    bi_poll(I, i, NULL);
    if (rn && nm) tb_printf(&t, "\"%s\"%s", nm->s[i], c ? "," : "");
    else if (rn) tb_printf(&t, "\"%lld\"%s", (long long)(i + 1), c ? "," : "");
    for (int64_t j = 0; j < c; j++) {
      double v = !m ? (x.t == VT_NUM ? x.u.n : x.u.b) : nm ? tensor_at(m, i) : tensor_get(m, i, j);
      if (isnan(v)) snprintf(buf, sizeof buf, "%s", mls_is_na(v) ? "NA" : "NaN");
      else if (isinf(v)) snprintf(buf, sizeof buf, "%s", v > 0 ? "Inf" : "-Inf");
      else fmt_num(buf, sizeof buf, v, 15);
      tb_printf(&t, "%s%s", j ? "," : "", buf);
    }
    tb_puts(&t, "\n");
  }
  FILE *f = fopen(path, "w");
  if (!f) { tb_close(I, &t); bi_error(I, "cannot open '%s' for writing", path); }
  bool ok = fwrite(t.p, 1, t.n, f) == t.n;
  ok = fclose(f) == 0 && ok;
  tb_close(I, &t);
  if (!ok) bi_error(I, "cannot write '%s'", path);
  return val_null();
}
