/*
** builtins_dml.c — DML primitives MLS lacked (issue 29): eval/evalList (a function called by
** its name), the list ops remove and as.list, unique, the bitw* ops, and round, which in a
** .dml file rounds halves up as SystemDS's Math.round does.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"
#include "mem.h"

/* bitwAnd and the other builtins that are exactly one elementwise binary op. */
Value bi_ew2(Interp *I, Args *a) { return op_binary(I, I->cur_bi->op, a->v[0], a->v[1], a->span); }

/* round: R's halves to even, except in code of a .dml file: SystemDS's halves up. */

/* ---- unique ---- */
typedef struct { double v; int64_t k; } Cell;

static int value_cmp(double a, double b) {           /* NaN equals NaN, after every number */
  bool na = isnan(a), nb = isnan(b);
  if (na || nb) return na == nb ? 0 : na ? 1 : -1;
  return a < b ? -1 : a > b;                          /* (0 and -0 are one value) */
}
static int cell_cmp(const void *pa, const void *pb) {
  const Cell *a = pa, *b = pb;
  int c = value_cmp(a->v, b->v);
  return c ? c : (a->k > b->k) - (a->k < b->k);       /* first occurrence first */
}
static int pos_cmp(const void *pa, const void *pb) {
  const Cell *a = pa, *b = pb;
  return (a->k > b->k) - (a->k < b->k);
}

/* The distinct values among c[0..n) (v filled, k = 0..n-1) in order of first occurrence, into
** out; returns how many. */
static int64_t distinct(Cell *c, int64_t n, double *out) {
  qsort(c, (size_t)n, sizeof *c, cell_cmp);
  int64_t m = 0;
  for (int64_t k = 0; k < n; k++)
    if (k == 0 || value_cmp(c[m - 1].v, c[k].v) != 0) c[m++] = c[k];
  qsort(c, (size_t)m, sizeof *c, pos_cmp);
  for (int64_t k = 0; k < m; k++) out[k] = c[k].v;
  return m;
}

/* DML's unique(X, dir="rc"): the distinct values of X as a column; dir="r" those of each row
** (a row each, zero-padded to the widest), dir="c" of each column likewise. */
Value bi_unique(Interp *I, Args *a) {
  const char *dir = bi_given(a, 1) ? bi_str(I, a, 1) : "rc";
  int d = !strcasecmp(dir, "rc") ? 0 : !strcasecmp(dir, "r") ? 1 : !strcasecmp(dir, "c") ? 2 : -1;
  if (d < 0) bi_argerror(I, 2, "dir must be \"rc\", \"r\" or \"c\", got \"%s\"", dir);
  a->v[0] = ad_primal(a->v[0]);
  Tensor *x = bi_mat(I, a, 0);
  tmp_push(I, val_mat(x));
  int64_t r = tensor_rows(x), c = tensor_cols(x);
  int64_t len = d == 0 ? r * c : d == 1 ? c : r, lines = d == 0 ? 1 : d == 1 ? r : c;
  Cell *cells = bi_scratch(I, (size_t)(len > 0 ? len : 1) * sizeof(Cell));
  double *vals = bi_scratch(I, (size_t)(len * lines > 0 ? len * lines : 1) * sizeof(double));
  int64_t *cnt = bi_scratch(I, (size_t)(lines > 0 ? lines : 1) * sizeof(int64_t));
  int64_t widest = 0;
  for (int64_t l = 0; l < lines; l++) {
    bi_poll(I, l, NULL);
    for (int64_t k = 0; k < len; k++) {              /* rc: row-major cell k */
      cells[k].v = d == 0 ? tensor_at(x, k) : d == 1 ? tensor_get(x, l, k) : tensor_get(x, k, l);
      cells[k].k = k;
    }
    cnt[l] = distinct(cells, len, vals + l * len);
    if (cnt[l] > widest) widest = cnt[l];
  }
  Tensor *t;
  if (d == 0) {
    t = tensor_new(I, widest, 1);
    memcpy(tensor_data(t), vals, (size_t)widest * sizeof(double));
  } else {
    t = d == 1 ? tensor_zeros(I, lines, widest) : tensor_zeros(I, widest, lines);
    double *o = tensor_data(t);
    for (int64_t l = 0; l < lines; l++)
      for (int64_t k = 0; k < cnt[l]; k++) o[d == 1 ? l * widest + k : k * lines + l] = vals[l * len + k];
  }
  bi_scratch_free(I, cnt);
  bi_scratch_free(I, vals);
  bi_scratch_free(I, cells);
  tmp_pop(I, 1);
  tensor_free_ref(x);
  return val_mat(t);
}

/* ---- lists ---- */
static List *list_arg(Interp *I, Args *a, int i) {
  Value v = ad_primal(a->v[i]);
  char d[64];
  if (v.t != VT_LIST) bi_argerror(I, i + 1, "list expected, got %s", val_describe(v, d, sizeof d));
  return v.u.l;
}

/* [L2, e] = remove(L, pos): L without its element pos, and that element as a list of one
** (SystemDS's list remove). */
Value bi_remove(Interp *I, Args *a) {
  List *l = list_arg(I, a, 0);
  double p = bi_num(I, a, 1);
  if (!(p >= 1 && p <= l->n && p == floor(p)))
    bi_argerror(I, 2, "a position from 1 to %d expected, got %.15g", (int)l->n, p);
  int k = (int)p - 1;
  List *rest = list_new(I, l->n > 1 ? l->n - 1 : 1);
  Value r = val_list(rest);
  tmp_push(I, r);
  for (int i = 0; i < l->n; i++)
    if (i != k) { val_retain(l->items[i]); list_push(rest, l->items[i], l->names ? l->names[i] : NULL); }
  List *one = list_new(I, 1);
  Value o = val_list(one);
  val_retain(l->items[k]);
  list_push(one, l->items[k], NULL);
  List *res = list_new(I, 2);
  res->multi = true;
  list_push(res, r, NULL);
  list_push(res, o, NULL);
  tmp_pop(I, 1);
  return val_list(res);
}

/* as.list(L): DML's list unnesting: a list holding one list gives that list, any other list
** itself. */
Value bi_as_list(Interp *I, Args *a) {
  List *l = list_arg(I, a, 0);
  Value v = l->n == 1 && ad_primal(l->items[0]).t == VT_LIST ? ad_primal(l->items[0]) : ad_primal(a->v[0]);
  if (v.u.l->multi) {                        /* (the results of a call: now an ordinary list) */
    List *c = list_copy(I, v.u.l);
    c->multi = false;
    return val_list(c);
  }
  val_retain(v);
  return v;
}

/* ---- eval and evalList: a function called by its name ---- */
static bool is_function(Value v) { return v.t == VT_FUNC || v.t == VT_BUILTIN; }

/* The function eval's first argument names (+1): a function value itself, or the name of a
** function in scope (a global, or one of the file sourced as a namespace that calls eval), a
** builtin (C or stdlib/builtin/NAME.mls), or "ns::name". */
Value bi_fun_value(Interp *I, Value f, const char *who, Span sp) {
  char d[64];
  if (is_function(f)) { val_retain(f); return f; }
  if (f.t != VT_STR)
    mls_throw(I, sp, "bad argument #1 to '%s' (a function name expected, got %s)", who, val_describe(f, d, sizeof d));
  const char *name = f.u.s->s, *sep = strstr(name, "::");
  if (sep) {                                 /* the namespace ns is bound to "ns::" (sym.h) */
    Symbol *ns = sym_intern(&I->syms, name, (size_t)(sep - name));
    Symbol *fn = sym_intern(&I->syms, sep + 2, strlen(sep + 2));
    Value *p = interp_find_name(I, sym_namespace(&I->syms, ns));
    if (!p || p->t != VT_LIST) mls_throw(I, sp, "%s: '%s' is not a namespace (use source(\"file\") as %s)", who, ns->name, ns->name);
    int k = list_find(p->u.l, fn);
    if (k < 0 || !is_function(p->u.l->items[k]))
      mls_throw(I, sp, "%s: function '%s' not found in namespace '%s'", who, fn->name, ns->name);
    val_retain(p->u.l->items[k]);
    return p->u.l->items[k];
  }
  Symbol *s = sym_intern(&I->syms, name, strlen(name));
  Value *p = interp_find_name(I, s);
  if (p && is_function(*p)) { val_retain(*p); return *p; }
  if (s->bi) { Value v; v.t = VT_BUILTIN; v.u.bi = s->bi; return v; }
  Value lf = interp_lib_function(I, s, sp);
  if (lf.t != VT_UNBOUND) return lf;
  char near[256];
  interp_suggest(I, name, near, sizeof near);
  mls_throw(I, sp, "%s: could not find function '%s'%s", who, name, near);
}

/* True when fn's only parameter is declared a list: eval then passes a list argument whole. */
static bool takes_one_list(Value fn) {
  return fn.t == VT_FUNC && fn.u.f->fi && fn.u.f->fi->nparams == 1 && fn.u.f->fi->params[0].type == TY_LIST;
}

typedef struct EvalCall { Value fn; List *spread; } EvalCall;

Value bi_eval_call(Interp *I, const Builtin *b, int nargs, Value *args, Symbol **names, Span sp) {
  bool as_list = b->fn == bi_evalList;
  if (nargs < 1 || names[0]) mls_throw(I, sp, "missing argument 'f' to '%s': %s", b->name, b->sig);
  int mark = I->ntmp;
  Value fn = bi_fun_value(I, ad_primal(args[0]), b->name, sp);
  tmp_push(I, fn);
  int n = nargs - 1;
  Value *av = args + 1;
  Symbol **nv = names + 1;
  Value one = n == 1 && !names[1] ? args[1] : val_null();
  if (one.t == VT_BOX && ad_primal(one).t == VT_LIST) one = ad_concrete(I, one, sp, "eval's list of arguments");
  if (one.t == VT_LIST && !takes_one_list(fn)) {       /* a list is spread into the arguments */
    List *l = one.u.l;
    n = l->n;
    av = l->items;
    Symbol **nm = bi_scratch(I, (size_t)(n > 0 ? n : 1) * sizeof(Symbol *));
    for (int i = 0; i < n; i++) nm[i] = l->names ? l->names[i] : NULL;
    nv = nm;
    val_retain(one);
    tmp_push(I, one);                                  /* (its items are the arguments) */
  }
  Value r = call_value(I, fn, n, av, nv, sp);
  tmp_push(I, r);
  Value p = ad_primal(r);
  if (as_list) {                                       /* every result, named by f's results */
    List *l;
    if (p.t == VT_LIST && p.u.l->multi) { l = list_copy(I, p.u.l); l->multi = false; }
    else {
      l = list_new(I, 1);
      const FuncInfo *fi = fn.t == VT_FUNC ? fn.u.f->fi : NULL;
      val_retain(r);
      list_push(l, r, fi && fi->rets && fi->nrets == 1 ? fi->rets[0].name : NULL);
    }
    r = val_list(l);
  } else {
    if (p.t == VT_LIST && p.u.l->multi) { r = p.u.l->items[0]; p = ad_primal(r); }   /* the first result */
    if (p.t == VT_NUM || p.t == VT_BOOL) {             /* a number is a 1x1 matrix, as SystemDS */
      Symbol *none = NULL;
      r = bi_call(I, bi_find("as.matrix"), 1, &r, &none, sp);
    } else val_retain(r);
  }
  if (nv != names + 1) { tmp_release_to(I, mark + 1); bi_scratch_free(I, nv); }
  tmp_release_to(I, mark);
  return r;
}

/* Reached only through a path that calls the builtin with bound arguments (call_value sends
** eval's calls to bi_eval_call first): the same call. */
static Value eval_args(Interp *I, Args *a) {
  int n = 1 + a->ndots;
  Value av[n];
  Symbol *nm[n];
  av[0] = a->v[0];
  nm[0] = NULL;
  for (int i = 0; i < a->ndots; i++) { av[i + 1] = a->dots[i]; nm[i + 1] = a->dotnames[i]; }
  return bi_eval_call(I, I->cur_bi, n, av, nm, a->span);
}
Value bi_eval(Interp *I, Args *a) { return eval_args(I, a); }
Value bi_evalList(Interp *I, Args *a) { return eval_args(I, a); }
