/*
** builtins_data.c — data manipulation (order, table, removeEmpty, replace, ifelse, outer)
** and random matrices and samples (rand, sample) from the generator of rng.c.
** Arguments are borrowed (Args); every result is owned by the caller. Matrices held while
** something may throw sit on the temp stack; raw scratch memory is taken only after the last
** call that can throw.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"
#include "mem.h"
#include "ops/index.h"
#include "print.h"
#include "rng.h"

/* Argument i as a contiguous matrix (a number as 1x1), pushed on the temp stack (+1 there):
** the caller ends with tmp_release_to(I, mark). */
static Tensor *held_mat(Interp *I, Args *a, int i) {
  Tensor *m = bi_mat(I, a, i);
  tmp_push(I, val_mat(m));
  if (tensor_is_contiguous(m)) return m;
  Tensor *c = tensor_contiguous(I, m);
  tmp_push(I, val_mat(c));
  return c;
}

/* "3x4" for messages about shapes. */
static const char *shape_of(const Tensor *t, char *buf, size_t n) {
  snprintf(buf, n, "%lldx%lld", (long long)tensor_rows(t), (long long)tensor_cols(t));
  return buf;
}

static bool is_vector(const Tensor *t) { return tensor_rows(t) == 1 || tensor_cols(t) == 1; }

/* x as MLS writes a number in a message: 15 significant digits, NaN, Inf, -Inf. */
static const char *num_text(double x, char *buf, size_t n) {
  if (x != x) snprintf(buf, n, "NaN");
  else if (isinf(x)) snprintf(buf, n, x > 0 ? "Inf" : "-Inf");
  else snprintf(buf, n, "%.15g", x);
  return buf;
}

/* A whole number in [lo, hi] from argument i, else "bad argument #i (what, got x)". */
static double whole_arg(Interp *I, Args *a, int i, double lo, double hi, const char *what) {
  double x = bi_num(I, a, i);
  char t[32];
  if (!(x >= lo && x <= hi && x == floor(x))) bi_argerror(I, i + 1, "%s expected, got %s", what, num_text(x, t, sizeof t));
  return x;
}

/* seed= of rand and sample: a whole number within +-2^53 (as set.seed), or 0 when not given. */
static double seed_arg(Interp *I, Args *a, int i) {
  const double lim = 9007199254740992.0;
  return bi_given(a, i) ? whole_arg(I, a, i, -lim, lim, "a whole number seed") : 0;
}

/* ---- order ---- */

typedef struct SortKeys {
  const double *d;        /* the target, row-major */
  int64_t cols;
  const int64_t *by;      /* 0-based key columns, most significant first */
  int nby;
  bool decreasing;
  const volatile sig_atomic_t *stop;   /* Ctrl-C: the sort gives up (the caller raises it) */
} SortKeys;

/* <0, 0, >0 as row i sorts before, with, after row j: NaN last either way (R's na.last). */
static int cmp_rows(const SortKeys *k, int64_t i, int64_t j) {
  for (int q = 0; q < k->nby; q++) {
    double x = k->d[i * k->cols + k->by[q]], y = k->d[j * k->cols + k->by[q]];
    bool nx = x != x, ny = y != y;
    if (nx || ny) {
      if (nx && ny) continue;
      return nx ? 1 : -1;
    }
    if (x < y) return k->decreasing ? 1 : -1;
    if (x > y) return k->decreasing ? -1 : 1;
  }
  return 0;
}

/* Stable merge sort of idx[0..n) (tmp is scratch of n). */
static void merge_sort(const SortKeys *k, int64_t *idx, int64_t *tmp, int64_t n) {
  if (n < 2 || (n >= 65536 && *k->stop)) return;
  if (n <= 16) {                                         /* insertion sort: stable */
    for (int64_t i = 1; i < n; i++) {
      int64_t v = idx[i], j = i;
      while (j > 0 && cmp_rows(k, idx[j - 1], v) > 0) { idx[j] = idx[j - 1]; j--; }
      idx[j] = v;
    }
    return;
  }
  int64_t h = n / 2;
  merge_sort(k, idx, tmp, h);
  merge_sort(k, idx + h, tmp, n - h);
  if (cmp_rows(k, idx[h - 1], idx[h]) <= 0) return;      /* already in order */
  memcpy(tmp, idx, (size_t)h * sizeof(int64_t));
  int64_t i = 0, j = h, o = 0;
  while (i < h && j < n) {
    if ((o & 65535) == 0 && *k->stop) return;            /* (a merge of 10^7 rows: 0.5 s) */
    idx[o++] = cmp_rows(k, idx[j], tmp[i]) < 0 ? idx[j++] : tmp[i++];
  }
  while (i < h) idx[o++] = tmp[i++];
}

/* order(target, by=1, decreasing=FALSE, index.return=FALSE) as DML: sorts the rows of target
** by column by (or by several columns, given as a vector, the first most significant); stable. */
/* replace, removeEmpty and order move cells of their first argument: under grad (BI_AD) that
** argument arrives boxed. The cells to move are found on plain values; the result is then
** built from the boxed argument with a differentiable op (an index, an ifelse), so the
** gradient flows back to the cells that were kept (it was silently zero). Returns the boxed
** first argument, or val_null() when nothing is traced. */
static Value unbox_args(Args *a) {
  Value x0 = a->v[0].t == VT_BOX ? a->v[0] : val_null();
  for (int j = 0; j < a->n; j++) a->v[j] = ad_primal(a->v[j]);
  return x0;
}

Value bi_order(Interp *I, Args *a) {
  Value x0 = unbox_args(a);
  if (x0.t == VT_BOX && !bi_opt_bool(I, a, 3, false)) {    /* the rows of x0, permuted */
    a->v[3] = val_bool(true);
    Value perm = bi_order(I, a);
    tmp_push(I, perm);
    Value r = index_read(I, x0, 2, (Value[]){ perm, val_unbound() }, a->span);
    tmp_pop(I, 1);
    val_release(perm);
    return r;
  }
  int mark = I->ntmp;
  Tensor *X = held_mat(I, a, 0);
  int64_t r = tensor_rows(X), c = tensor_cols(X);
  Tensor *B = NULL;
  if (bi_given(a, 1)) {
    Value bv = a->v[1];
    if (bv.t != VT_MAT && bv.t != VT_NUM && bv.t != VT_BOOL) {
      char d[64];
      bi_argerror(I, 2, "column index expected, got %s", val_describe(bv, d, sizeof d));
    }
    B = held_mat(I, a, 1);
    if (tensor_numel(B) == 0 || !is_vector(B) || tensor_numel(B) > 64) {
      char d[32];
      bi_argerror(I, 2, "a column index or a vector of at most 64 expected, got %s", shape_of(B, d, sizeof d));
    }
  }
  bool dec = bi_opt_bool(I, a, 2, false), index_return = bi_opt_bool(I, a, 3, false);
  int64_t by[64];
  int nby = B ? (int)tensor_numel(B) : 1;
  for (int q = 0; q < nby; q++) {
    double x = B ? tensor_data(B)[q] : 1;
    char t[32];
    if (!(x >= 1 && x == floor(x) && (x <= (double)c || r == 0)))
      bi_argerror(I, 2, "column index between 1 and %lld expected, got %s", (long long)c, num_text(x, t, sizeof t));
    by[q] = (int64_t)x - 1;
  }
  Tensor *out = index_return ? tensor_new(I, r, 1) : tensor_new(I, r, c);
  tmp_push(I, val_mat(out));
  if (r > 0) {                                           /* nothing below throws but Ctrl-C */
    int64_t *idx = bi_scratch(I, ((size_t)r + (size_t)r / 2 + 1) * sizeof(int64_t));   /* the merge's scratch: r/2 */
    for (int64_t i = 0; i < r; i++) idx[i] = i;
    SortKeys k = { tensor_data(X), c, by, nby, dec, &I->interrupted };
    merge_sort(&k, idx, idx + r, r);
    if (I->interrupted) interp_check_interrupt(I, a->span);          /* (frees idx) */
    double *o = tensor_data(out);
    const double *d = tensor_data(X);
    int64_t budget = 0;                                  /* (out is on the temp stack) */
    for (int64_t i = 0; i < r; i++) {
      if (interp_tick(I, &budget, c)) interp_check_interrupt(I, a->span);   /* (frees idx) */
      if (index_return) o[i] = (double)(idx[i] + 1);
      else memcpy(o + i * c, d + idx[i] * c, (size_t)c * sizeof(double));
    }
    bi_scratch_free(I, idx);
  }
  out->refcount++;                                       /* keep it past the release */
  tmp_release_to(I, mark);
  return val_mat(out);
}

/* ---- table ---- */

/* Argument i of table: a matrix of n values, or a number or 1x1 matrix (broadcast); NULL when
** not given. */
static Tensor *table_arg(Interp *I, Args *a, int i, int64_t *n, int *nfrom) {
  if (!bi_given(a, i)) return NULL;
  Value v = a->v[i];
  if (v.t != VT_MAT && v.t != VT_NUM && v.t != VT_BOOL) {
    char d[64];
    bi_argerror(I, i + 1, "matrix expected, got %s", val_describe(v, d, sizeof d));
  }
  Tensor *t = held_mat(I, a, i);
  if (tensor_numel(t) != 1) {
    if (*n >= 0 && tensor_numel(t) != *n) {
      char d[32];
      bi_argerror(I, i + 1, "%lld values expected like argument #%d, got %s", (long long)*n, *nfrom + 1,
                  shape_of(t, d, sizeof d));
    }
    if (*n < 0) *nfrom = i;
    *n = tensor_numel(t);
  }
  return t;
}

/* A category of table() (not NaN): floor(x), which must be at least 1. */
static int64_t category(Interp *I, int argn, double x) {
  char t[32];
  if (!(x >= 1)) bi_argerror(I, argn, "positive category values expected, got %s", num_text(x, t, sizeof t));
  if (!(x < 4503599627370496.0)) bi_argerror(I, argn, "category value too large, got %s", num_text(x, t, sizeof t));
  return (int64_t)x;
}

/* table(A, B=, weights=, odim1=, odim2=): DML's contingency table. F[A[i], B[i]] += w[i]
** (w = 1 without weights, B = 1 without B); values are floored, NaN in A, B or w skips the
** entry, values below 1 are an error. The size is max(A) x max(B), or odim1 x odim2 when given
** (entries outside it are dropped). table(A, B, odim1, odim2) is DML's four-argument form.
** table(A) is table(A, 1): a max(A) x 1 column of the counts of 1, 2, ... */
/* table()'s counts as a sparse matrix (docs/sparse.md): the (category, category, weight)
** triplets summed in input order, as the dense loop adds them. */
static Value table_sparse(Interp *I, int64_t rows, int64_t cols, int64_t n, const double *ad, int64_t sa,
                          const double *bd, int64_t sb, const double *wd, int64_t sw) {
  size_t nb = (size_t)(n > 0 ? n : 1) * sizeof(int64_t);
  int64_t *ri = bi_scratch(I, nb), *ci = bi_scratch(I, nb);
  double *v = bi_scratch(I, (size_t)(n > 0 ? n : 1) * sizeof(double));
  int64_t m = 0;
  for (int64_t i = 0; i < n; i++) {
    bi_poll(I, i, NULL);
    double x = ad[i * sa], y = bd ? bd[i * sb] : 1, w = wd ? wd[i * sw] : 1;
    if (x != x || y != y || w != w) continue;
    int64_t ra = (int64_t)x, cb = (int64_t)y;
    if (ra <= rows && cb <= cols) { ri[m] = ra - 1; ci[m] = cb - 1; v[m++] = w; }
  }
  Tensor *t = tensor_sparse_from_coo(I, rows, cols, m, ri, ci, v, true);
  bi_scratch_free(I, v);
  bi_scratch_free(I, ci);
  bi_scratch_free(I, ri);
  return val_mat(tensor_auto_format(I, t));
}

Value bi_table(Interp *I, Args *a) {
  int mark = I->ntmp;
  int wi = 2, d1 = 3, d2 = 4;
  bool wtraced = a->n > 2 && a->v[2].t == VT_BOX;         /* under grad (BI_AD) */
  unbox_args(a);
  if (bi_given(a, 5)) {                                  /* outputEmptyBlocks: a boolean, no effect */
    if (a->v[5].t != VT_BOOL) bi_argerror(I, 6, "outputEmptyBlocks must be TRUE or FALSE");
    if (!bi_given(a, 4)) bi_argerror(I, 6, "outputEmptyBlocks comes after weights, odim1 and odim2");
  }
  if (bi_given(a, 1) && bi_given(a, 2) && bi_given(a, 3) && !bi_given(a, 4)) {
    Value w = a->v[2];
    if (w.t == VT_MAT && tensor_numel(w.u.m) != 1) bi_argerror(I, 5, "odim2 expected with odim1");
    wi = -1; d1 = 2; d2 = 3;                             /* table(A, B, odim1, odim2) */
  }
  /* the counts do not depend on A and B (zero gradient); the weights would, with no rule yet */
  if (wi >= 0 && wtraced) bi_error(I, "the weights have no derivative rule yet under grad");
  if (bi_given(a, d1) != bi_given(a, d2)) bi_argerror(I, d1 + 2, "odim1 and odim2 go together");
  int64_t n = -1;
  int nfrom = 0;
  Tensor *A = table_arg(I, a, 0, &n, &nfrom);
  Tensor *B = table_arg(I, a, 1, &n, &nfrom);
  Tensor *W = wi >= 0 ? table_arg(I, a, wi, &n, &nfrom) : NULL;
  if (n < 0) n = 1;                                      /* all numbers */
  bool dims = bi_given(a, d1);
  int64_t rows = 0, cols = B ? 0 : 1;
  if (dims) {
    rows = (int64_t)whole_arg(I, a, d1, 0, 4503599627370496.0, "a non-negative whole number");
    cols = (int64_t)whole_arg(I, a, d2, 0, 4503599627370496.0, "a non-negative whole number");
  }
  const double *ad = tensor_data(A), *bd = B ? tensor_data(B) : NULL, *wd = W ? tensor_data(W) : NULL;
  int64_t sa = tensor_numel(A) == n ? 1 : 0, sb = B && tensor_numel(B) == n ? 1 : 0;
  int64_t sw = W && tensor_numel(W) == n ? 1 : 0;
  for (int64_t i = 0; i < n; i++) {                      /* check, and find the size */
    bi_poll(I, i, NULL);
    double x = ad[i * sa], y = bd ? bd[i * sb] : 1, w = wd ? wd[i * sw] : 1;
    if (x != x || y != y || w != w) continue;
    int64_t ra = category(I, 1, x), cb = category(I, 2, y);
    if (!dims) { if (ra > rows) rows = ra; if (cb > cols) cols = cb; }
  }
  if (tensor_prefer_sparse(I, rows, cols, n)) {        /* at most n cells: built sparse */
    Value r = table_sparse(I, rows, cols, n, ad, sa, bd, sb, wd, sw);
    tmp_release_to(I, mark);
    return r;
  }
  Tensor *out = tensor_zeros(I, rows, cols);
  double *o = tensor_data(out);
  for (int64_t i = 0; i < n; i++) {
    bi_poll(I, i, out);
    double x = ad[i * sa], y = bd ? bd[i * sb] : 1, w = wd ? wd[i * sw] : 1;
    if (x != x || y != y || w != w) continue;
    int64_t ra = (int64_t)x, cb = (int64_t)y;
    if (ra <= rows && cb <= cols) o[(ra - 1) * cols + (cb - 1)] += w;
  }
  tmp_release_to(I, mark);
  return val_mat(out);
}

/* ---- rev ---- */

/* rev(X): the rows of X in reverse order (DML's rev; a row vector is unchanged, a number is
** itself). Under grad the result is X indexed by the reversed rows, so the gradient follows. */
Value bi_rev(Interp *I, Args *a) {
  Value x0 = unbox_args(a);
  Value v = a->v[0];
  if (v.t == VT_NUM || v.t == VT_BOOL) {
    if (x0.t == VT_BOX) { val_retain(x0); return x0; }
    return v;
  }
  int mark = I->ntmp;
  Tensor *X = held_mat(I, a, 0);
  int64_t r = tensor_rows(X), c = tensor_cols(X);
  if (x0.t == VT_BOX) {
    Tensor *ix = tensor_new(I, r, 1);
    tmp_push(I, val_mat(ix));
    for (int64_t i = 0; i < r; i++) { bi_poll(I, i, NULL); tensor_data(ix)[i] = (double)(r - i); }
    Value out = r > 0 ? index_read(I, x0, 2, (Value[]){ val_mat(ix), val_unbound() }, a->span) : val_mat(tensor_zeros(I, 0, c));
    tmp_release_to(I, mark);
    return out;
  }
  Tensor *out = tensor_new(I, r, c);
  const double *d = tensor_data(X);
  double *o = tensor_data(out);
  int64_t budget = 0;
  for (int64_t i = 0; i < r; i++) {
    bi_tick(I, &budget, c, out);
    memcpy(o + i * c, d + (r - 1 - i) * c, (size_t)c * sizeof(double));
  }
  tmp_release_to(I, mark);
  return val_mat(out);
}

/* ---- removeEmpty ---- */

/* removeEmpty(target, margin, select=, empty.return=FALSE): keeps the rows (margin="rows") or
** columns ("cols") with a nonzero cell (NaN counts as nonzero), or, with select, those whose
** select entry is nonzero. When nothing is kept the result has 0 rows (columns); empty.return=TRUE
** gives DML's single row (column) of zeros instead. */
Value bi_removeEmpty(Interp *I, Args *a) {
  Value x0 = unbox_args(a);
  int mark = I->ntmp;
  Tensor *X = held_mat(I, a, 0);
  const char *margin = bi_str(I, a, 1);
  bool rows = strcmp(margin, "rows") == 0;
  if (!rows && strcmp(margin, "cols") != 0) bi_argerror(I, 2, "\"rows\" or \"cols\" expected, got \"%s\"", margin);
  bool empty_return = bi_opt_bool(I, a, 3, false);
  int64_t r = tensor_rows(X), c = tensor_cols(X), n = rows ? r : c;
  bool sparse = tensor_is_sparse(X);          /* its stored cells looked at, rows kept by index */
  const double *d = sparse ? NULL : tensor_data(X), *sel = NULL;
  if (bi_given(a, 2)) {
    Tensor *S = held_mat(I, a, 2);
    if (!is_vector(S) || tensor_numel(S) != n) {
      char s[32];
      bi_argerror(I, 3, "a vector of %lld values (one per %s) expected, got %s", (long long)n, rows ? "row" : "column",
                  shape_of(S, s, sizeof s));
    }
    sel = tensor_data(S);
  }
  Tensor *keep = tensor_zeros(I, n > 0 ? n : 1, 1);      /* 1 where kept */
  tmp_push(I, val_mat(keep));
  double *k = tensor_data(keep);
  int64_t kept = 0, budget = 0;
  if (sel) {
    for (int64_t i = 0; i < n; i++) k[i] = sel[i] != 0;
  } else if (sparse) {
    const SpCsr *cs = tensor_csr(X);
    for (int64_t i = 0; i < r; i++)
      for (int64_t q = cs->rowptr[i]; q < cs->rowptr[i + 1]; q++)
        if (cs->val[q] != 0) k[rows ? i : cs->col[q]] = 1;
  } else if (rows) {
    for (int64_t i = 0; i < r; i++) {
      bi_tick(I, &budget, c, NULL);                   /* (what it holds is on the temp stack) */
      const double *row = d + i * c;
      bool nz = false;
      for (int64_t j = 0; j < c; j++) nz |= row[j] != 0;
      k[i] = nz;
    }
  } else {
    for (int64_t i = 0; i < r; i++) {
      bi_tick(I, &budget, c, NULL);
      for (int64_t j = 0; j < c; j++) k[j] = k[j] != 0 || d[i * c + j] != 0;
    }
  }
  for (int64_t i = 0; i < n; i++) kept += k[i] != 0;
  if ((x0.t == VT_BOX || sparse) && kept > 0) {      /* the kept rows (columns) of x0 */
    Tensor *ix = tensor_new(I, kept, 1);
    tmp_push(I, val_mat(ix));
    double *p = tensor_data(ix);
    for (int64_t i = 0; i < n; i++)
      if (k[i] != 0) *p++ = (double)(i + 1);
    Value iv[2] = { rows ? val_mat(ix) : val_unbound(), rows ? val_unbound() : val_mat(ix) };
    Value kept_cells = index_read(I, x0.t == VT_BOX ? x0 : val_mat(X), 2, iv, a->span);
    tmp_release_to(I, mark);
    return kept_cells;
  }
  Tensor *out;
  if (kept == 0 && empty_return) {
    out = rows ? tensor_zeros(I, 1, c) : tensor_zeros(I, r, 1);
  } else if (rows) {
    out = tensor_new(I, kept, c);
    double *o = tensor_data(out);
    for (int64_t i = 0; i < r; i++) {
      bi_tick(I, &budget, c, out);
      if (k[i] != 0) { memcpy(o, d + i * c, (size_t)c * sizeof(double)); o += c; }
    }
  } else {
    out = tensor_new(I, r, kept);
    double *o = tensor_data(out);
    for (int64_t i = 0; i < r; i++) {
      bi_tick(I, &budget, c, out);
      for (int64_t j = 0; j < c; j++)
        if (k[j] != 0) *o++ = d[i * c + j];
    }
  }
  tmp_release_to(I, mark);
  return val_mat(out);
}

/* ---- replace, ifelse ---- */

/* replace(target, pattern, replacement): every cell equal to pattern (NaN matches NaN) becomes
** replacement. A number gives a number. */
/* Argument i of replace: a number, or a string that reads as one, as SystemDS parses its
** pattern and replacement (KM.dml passes replacement = "Infinity"). */
static double replace_num(Interp *I, Args *a, int i) {
  Value v = ad_primal(a->v[i]);
  if (v.t != VT_STR) return bi_num(I, a, i);
  const char *t = v.u.s->s;
  while (*t == ' ' || *t == '\t') t++;
  char *end;
  double x = strtod(t, &end);
  while (end != t && (*end == ' ' || *end == '\t')) end++;
  if (end == t || *end) bi_argerror(I, i + 1, "number expected (or a string that reads as one), got \"%s\"", v.u.s->s);
  return x;
}

Value bi_replace(Interp *I, Args *a) {
  Value r0 = a->v[2].t == VT_BOX ? a->v[2] : val_null();   /* a traced replacement flows too */
  Value x0 = unbox_args(a);
  double pat = replace_num(I, a, 1), rep = replace_num(I, a, 2);
  Value v = a->v[0];
  if (v.t == VT_NUM || v.t == VT_BOOL) {
    double x = v.t == VT_NUM ? v.u.n : v.u.b;
    bool hit = pat != pat ? x != x : x == pat;
    if (x0.t == VT_BOX && !hit) { val_retain(x0); return x0; }
    if (r0.t == VT_BOX && hit) { val_retain(r0); return r0; }
    return val_num(hit ? rep : x);
  }
  int mark = I->ntmp;
  Tensor *X = held_mat(I, a, 0);
  if (x0.t == VT_BOX || r0.t == VT_BOX) {             /* ifelse(hit, replacement, x0) */
    Tensor *hit = tensor_new(I, tensor_rows(X), tensor_cols(X));
    tmp_push(I, val_mat(hit));
    const double *d = tensor_data(X);
    double *h = tensor_data(hit);
    for (int64_t i = 0; i < tensor_numel(X); i++) { bi_poll(I, i, NULL); h[i] = pat != pat ? d[i] != d[i] : d[i] == pat; }
    Value r = op_ifelse(I, val_mat(hit), r0.t == VT_BOX ? r0 : val_num(rep), x0.t == VT_BOX ? x0 : val_mat(X), a->span);
    tmp_release_to(I, mark);
    return r;
  }
  Tensor *out = tensor_new(I, tensor_rows(X), tensor_cols(X));
  const double *d = tensor_data(X);
  double *o = tensor_data(out);
  int64_t n = tensor_numel(X);
  for (int64_t i = 0; i < n; i++) {
    bi_poll(I, i, out);
    o[i] = (pat != pat ? d[i] != d[i] : d[i] == pat) ? rep : d[i];
  }
  tmp_release_to(I, mark);
  return val_mat(out);
}

/* ifelse(test, yes, no): the op (ops.c op_ifelse): elementwise, numbers and 1x1 broadcast. */
/* A string, or a list whose items are all strings (R's character vector in MLS). */
static bool is_strs(Value v) {
  if (v.t == VT_STR) return true;
  if (v.t != VT_LIST || v.u.l->n == 0) return false;
  for (int i = 0; i < v.u.l->n; i++)
    if (v.u.l->items[i].t != VT_STR) return false;
  return true;
}

/* Item i of ifelse's yes or no (recycled, as R): a string, or a number as text (R coerces). */
static Value ifelse_item(Interp *I, Value v, int64_t i, int argn) {
  if (v.t == VT_LIST) v = v.u.l->items[i % v.u.l->n];
  if (v.t == VT_STR) { val_retain(v); return v; }
  double x;
  if (v.t == VT_NUM || v.t == VT_BOOL) x = v.t == VT_NUM ? v.u.n : v.u.b;
  else if (v.t == VT_MAT && tensor_numel(v.u.m) > 0) x = tensor_at(v.u.m, i % tensor_numel(v.u.m));
  else {
    char d[64];
    bi_argerror(I, argn, "a string, a list of strings or numbers expected, got %s", val_describe(v, d, sizeof d));
  }
  if (v.t == VT_BOOL) return val_cstr(v.u.b ? "TRUE" : "FALSE");
  char buf[64];
  fmt_num(buf, sizeof buf, x, 15);
  return val_cstr(buf);
}

/* ifelse(test, yes, no) with strings: a list of strings, one per element of test (row-major),
** yes's or no's recycled; an NA or NaN test gives NA. A number test gives the string itself. */
static Value ifelse_strings(Interp *I, Args *a) {
  Value test = ad_concrete(I, a->v[0], a->span, "ifelse's test");
  char d[64];
  if (test.t == VT_NUM || test.t == VT_BOOL) {
    double x = test.t == VT_NUM ? test.u.n : test.u.b;
    if (x != x) return val_num(mls_na());
    return ifelse_item(I, x != 0 ? a->v[1] : a->v[2], 0, x != 0 ? 2 : 3);
  }
  if (test.t != VT_MAT) bi_argerror(I, 1, "a number or a matrix expected, got %s", val_describe(test, d, sizeof d));
  int64_t n = tensor_numel(test.u.m);
  List *l = list_new(I, (int)(n > 0 ? n : 1));
  tmp_push(I, val_list(l));
  for (int64_t i = 0; i < n; i++) {
    bi_poll(I, i, NULL);
    double x = tensor_at(test.u.m, i);
    list_push(l, x != x ? val_num(mls_na()) : ifelse_item(I, x != 0 ? a->v[1] : a->v[2], i, x != 0 ? 2 : 3), NULL);
  }
  tmp_pop(I, 1);
  return val_list(l);
}

Value bi_ifelse(Interp *I, Args *a) {
  if (is_strs(a->v[1]) || is_strs(a->v[2])) return ifelse_strings(I, a);
  return op_ifelse(I, a->v[0], a->v[1], a->v[2], a->span);
}

/* ---- sample ---- */

/* Uniform in [0, n) for n >= 1, without modulo bias (rejection). */
static uint64_t rng_below(uint64_t s[4], uint64_t n) {
  uint64_t lim = UINT64_MAX - UINT64_MAX % n, x;
  do x = rng_next(s); while (x >= lim);
  return x % n;
}

/* sample(range, size=range, replace=FALSE, seed=): size values from 1..range as a column vector,
** distinct unless replace=TRUE, in random order (sample(n) is a random permutation). The same
** seed (or --seed) gives the same sample on every run. */
Value bi_sample(Interp *I, Args *a) {
  const double big = 4503599627370496.0;                 /* 2^52: exact whole numbers */
  int64_t range = (int64_t)whole_arg(I, a, 0, 0, big, "a non-negative whole number");
  int64_t size = bi_given(a, 1) ? (int64_t)whole_arg(I, a, 1, 0, big, "a non-negative whole number") : range;
  bool replace = bi_opt_bool(I, a, 2, false);
  if (!replace && size > range)
    bi_argerror(I, 2, "cannot take %lld values from %lld without replacement", (long long)size, (long long)range);
  if (replace && range == 0 && size > 0) bi_argerror(I, 1, "cannot sample from an empty range");
  uint64_t local[4];
  uint64_t *st = rng_stream(I, bi_given(a, 3), seed_arg(I, a, 3), local);
  Tensor *out = tensor_new(I, size, 1);
  tmp_push(I, val_mat(out));                             /* held: the scratch below may not come */
  double *o = tensor_data(out);
  if (replace) {
    for (int64_t i = 0; i < size; i++) {
      bi_poll(I, i, NULL);                               /* (out is on the temp stack) */
      o[i] = (double)(rng_below(st, (uint64_t)range) + 1);
    }
  } else if (range <= 2 * size) {                        /* partial Fisher-Yates */
    int64_t *perm = bi_scratch(I, (size_t)(range > 0 ? range : 1) * sizeof(int64_t));
    for (int64_t i = 0; i < range; i++) perm[i] = i + 1;
    for (int64_t i = 0; i < size; i++) {
      if (interp_poll(I, i)) interp_check_interrupt(I, a->span);    /* (frees perm) */
      int64_t j = i + (int64_t)rng_below(st, (uint64_t)(range - i));
      int64_t t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
      o[i] = (double)perm[i];
    }
    bi_scratch_free(I, perm);
  } else {                                               /* sparse: draw, reject repeats */
    uint64_t cap = 16;
    while (cap < (uint64_t)size * 2) cap *= 2;
    int64_t *set = bi_scratch(I, (size_t)cap * sizeof(int64_t));     /* open addressing; 0 = empty */
    memset(set, 0, (size_t)cap * sizeof(int64_t));
    for (int64_t i = 0, tries = 0; i < size; tries++) {
      if (interp_poll(I, tries)) interp_check_interrupt(I, a->span);   /* (frees set) */
      int64_t v = (int64_t)rng_below(st, (uint64_t)range) + 1;
      uint64_t h = ((uint64_t)v * 0x9e3779b97f4a7c15ull) & (cap - 1);
      while (set[h] && set[h] != v) h = (h + 1) & (cap - 1);
      if (set[h]) continue;
      set[h] = v;
      o[i++] = (double)v;
    }
    bi_scratch_free(I, set);
  }
  tmp_pop(I, 1);
  return val_mat(out);
}

/* ---- outer ---- */

/* outer(a, b, op="*"): the length(a) x length(b) matrix of a[i] op b[j], for vectors a and b
** (either orientation; DML's column a and row b included) and any elementwise binary operator of
** ops.def ("+", "-", "*", "/", "^", "%%", "%/%", comparisons, "&", "|", "min", "max"). Built
** from ops (t, +, op with broadcasting), so the stager sees ordinary nodes. */
Value bi_outer(Interp *I, Args *a) {
  const char *sym = bi_given(a, 2) ? bi_str(I, a, 2) : "*";
  OpKind op = OP_NONE;
  for (int k = 0; k < OP_COUNT; k++)
    if ((op_info[k].flags & OPF_EW) && op_info[k].arity == 2 && strcmp(op_info[k].sym, sym) == 0) { op = (OpKind)k; break; }
  if (op == OP_NONE)
    bi_argerror(I, 3, "elementwise operator expected (+ - * / ^ %%%% %%/%% == != < <= > >= & | min max), got \"%s\"", sym);
  int mark = I->ntmp;
  Value v[2];
  int64_t len[2];
  for (int i = 0; i < 2; i++) {                        /* (traced by grad or a stage: boxes) */
    Value x = a->v[i], p = ad_primal(x);
    char d[64];
    if (p.t == VT_NUM || p.t == VT_BOOL) x = x.t == VT_BOX ? op_reshape(I, x, 1, 1, a->span) : val_mat(bi_mat(I, a, i));
    else if (p.t != VT_MAT) bi_argerror(I, i + 1, "vector expected, got %s", val_describe(p, d, sizeof d));
    else val_retain(x);
    tmp_push(I, x);
    p = ad_primal(x);
    if (!is_vector(p.u.m)) bi_argerror(I, i + 1, "vector expected, got %s", shape_of(p.u.m, d, sizeof d));
    bool want_col = i == 0;                              /* a as n x 1, b as 1 x m */
    len[i] = tensor_numel(p.u.m);
    if (want_col ? tensor_cols(p.u.m) != 1 : tensor_rows(p.u.m) != 1) {
      x = op_transpose(I, x, a->span);
      tmp_push(I, x);
    }
    v[i] = x;
  }
  int64_t n = len[0], m = len[1];
  Tensor *z = tensor_new(I, n, m);                       /* -0 + x is x for every x */
  double *zd = tensor_data(z);
  for (int64_t i = 0; i < n * m; i++) { bi_poll(I, i, z); zd[i] = -0.0; }
  tmp_push(I, val_mat(z));
  Value rep = op_binary(I, OP_ADD, val_mat(z), v[0], a->span);   /* a[i] in every column */
  tmp_push(I, rep);
  Value r = op_binary(I, op, rep, v[1], a->span);
  tmp_release_to(I, mark);
  return r;
}

/* rand() with sparsity < 1: each cell is nonzero with probability sparsity, drawn as SystemDS's
** sparse generator does, by the gap to the next nonzero cell (geometric: one uniform per nonzero,
** not one per cell), then its value. The same draws make either format (docs/sparse.md): sparse
** when the expected count is under the rule's density (a 10^6 x 10^5 matrix of 10^7 nonzeros
** takes its CSR only), else dense. */
static Tensor *rand_sparse(Interp *I, int64_t rows, int64_t cols, double lo, double hi, bool normal, double sparsity,
                           uint64_t *s) {
  double cells = (double)rows * (double)cols;
  int64_t n = rows * cols, expect = (int64_t)(sparsity * cells * 1.05) + 16;
  /* drawn into CSR whenever the rule may keep it sparse (it then decides from the count drawn:
  ** at sparsity 0.1 about half the draws have at most 10% nonzero); at a sparsity of 0.5 or
  ** more, or under --sparse never, straight into a dense matrix */
  bool sparse = sparsity < 0.5 && tensor_prefer_sparse(I, rows, cols, 0);
  Tensor *t = sparse ? tensor_sparse_new(I, rows, cols, expect < n ? expect : n) : tensor_zeros(I, rows, cols);
  tmp_push(I, val_mat(t));
  double *d = sparse ? NULL : tensor_data(t);
  double step = sparsity > 0 ? log1p(-sparsity) : 0;        /* log(1 - p) < 0 */
  int64_t row = 0, q = 0;
  for (int64_t k = -1;; q++) {
    if (sparsity <= 0) break;
    double gap = floor(log(1.0 - rng_unif01(s)) / step);    /* cells skipped: log of (0, 1] */
    if (!(gap < (double)(n - 1 - k))) break;
    k += 1 + (int64_t)gap;
    double x = normal ? rng_normal01(s) : lo + (hi - lo) * rng_unif01(s);
    bi_poll(I, q, NULL);
    if (!sparse) { d[k] = x; continue; }
    SpCsr *c = tensor_csr(t);
    if (c->nnz == c->cap) tensor_sparse_reserve(I, t, c->cap * 2), c = tensor_csr(t);
    for (int64_t i = k / cols; row < i; row++) c->rowptr[row + 1] = c->nnz;
    c->col[c->nnz] = (int32_t)(k % cols);
    c->val[c->nnz++] = x;
  }
  if (sparse) {
    SpCsr *c = tensor_csr(t);
    for (; row < rows; row++) c->rowptr[row + 1] = c->nnz;
  }
  tmp_pop(I, 1);
  return sparse ? tensor_auto_format(I, t) : t;
}

Value bi_rand(Interp *I, Args *a) {
  if (ad_any_grad(2, a->v + 2))            /* (BI_AD: under grad the arguments arrive traced) */
    bi_error(I, "grad cannot differentiate in min and max (the draws are not reparameterized: use "
             "min + (max - min) * rand())");
  for (int j = 0; j < a->n; j++) a->v[j] = ad_primal(a->v[j]);
  int64_t rows = bi_opt_dim(I, a, 0, 1), cols = bi_opt_dim(I, a, 1, 1);
  double lo = bi_opt_num(I, a, 2, 0), hi = bi_opt_num(I, a, 3, 1);
  const char *pdf = bi_given(a, 4) ? bi_str(I, a, 4) : "uniform";
  double sparsity = bi_opt_num(I, a, 5, 1);
  bool normal = strcmp(pdf, "normal") == 0;
  if (!normal && strcmp(pdf, "uniform") != 0) bi_argerror(I, 5, "pdf must be \"uniform\" or \"normal\", got \"%s\"", pdf);
  if (!(sparsity >= 0 && sparsity <= 1)) bi_argerror(I, 6, "sparsity must be in [0, 1]");
  if (!(lo <= hi)) bi_error(I, "min must not exceed max");
  uint64_t local[4];
  uint64_t *s = rng_stream(I, bi_given(a, 6), seed_arg(I, a, 6), local);
  if (sparsity < 1) return val_mat(rand_sparse(I, rows, cols, lo, hi, normal, sparsity, s));
  Tensor *t = tensor_new(I, rows, cols);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < rows * cols; i++) {
    bi_poll(I, i, t);
    d[i] = normal ? rng_normal01(s) : lo + (hi - lo) * rng_unif01(s);
  }
  return val_mat(t);
}

