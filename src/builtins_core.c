/*
** builtins_core.c — the bodies of the core builtins: construction, shape, aggregates,
** conversion, lists and text, output and control.
*/
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include "autodiff.h"
#include "backend/backend.h"
#include "backend/sparse.h"
#include "builtins.h"
#include "staging/stage.h"
#include "err.h"
#include "frame/frame.h"
#include "mem.h"
#include "print.h"
#include "help_topics.h"
#include "progress.h"
#include <unistd.h>

static Value mat_result(Tensor *t) { return val_mat(t); }

Value bi_identity(Interp *I, Args *a) { (void)I; val_retain(a->v[0]); return a->v[0]; }

Value bi_print(Interp *I, Args *a) {
  double d = bi_opt_num(I, a, 1, I->print_digits);
  if (!(d >= 1 && d <= 22)) bi_argerror(I, 2, "digits must be between 1 and 22");
  TextBuf t;
  tb_open(I, &t);
  fmt_display(I, &t, a->v[0], (int)d, false);
  progress_clear(I->errf, &I->bar_open);      /* a loop's bar is redrawn below the line */
  fputs(t.p, I->out);
  fputc('\n', I->out);
  tb_close(I, &t);
  return val_null();
}

/* display(x): shown at once by a front end (under Jupyter, display_data: text/plain, and a
** matrix also as text/html), else printed as print(x) does. */
Value bi_display(Interp *I, Args *a) {
  TextBuf t;
  tb_open(I, &t);
  fmt_display(I, &t, a->v[0], I->print_digits, false);
  if (I->display_value) {
    fflush(I->out);
    I->display_value(I, a->v[0], t.p, t.n, I->display_ctx);
  } else {
    progress_clear(I->errf, &I->bar_open);
    fputs(t.p, I->out);
    fputc('\n', I->out);
  }
  tb_close(I, &t);
  return val_null();
}

/* Parses "1 2 3 4" (spaces or commas) into a new tensor of n values. */
/* Reads the numbers of s (separated by spaces or commas) into d, or only counts them when d
** is NULL; returns the count. A cell that is not a number is an argument error. */
static int64_t scan_numbers(Interp *I, const char *s, double *d) {
  const char *bad;
  int64_t n = val_scan_numbers(s, d, &bad);
  if (n < 0) bi_argerror(I, 1, "cannot read a number at \"%.20s\"", bad);
  return n;
}

/* Parses "1 2 3 4" (spaces or commas) into a new n x 1 tensor: count, allocate, fill, so
** nothing is held across the allocation, which may throw. */
static Tensor *parse_numbers(Interp *I, const char *s) {
  Tensor *t = tensor_new(I, scan_numbers(I, s, NULL), 1);
  scan_numbers(I, s, tensor_data(t));        /* the same text: cannot fail now */
  return t;
}

static int64_t dim_arg(Interp *I, Args *a, int i) {
  double d = bi_num(I, a, i);
  if (!(d >= 0 && d == floor(d) && d < 9e15)) bi_argerror(I, i + 1, "a non-negative whole number expected");
  return (int64_t)d;
}

/* matrix()'s shape for n values: rows= and cols= as given; one of them left out follows from n,
** or is 1 when the value fills (one value: a number, a boolean, a 1x1 matrix); neither: a column. */
static void matrix_shape(Interp *I, Args *a, int64_t n, bool fill, int64_t *rows, int64_t *cols) {
  if (bi_given(a, 1) && bi_given(a, 2)) { *rows = dim_arg(I, a, 1); *cols = dim_arg(I, a, 2); }
  else if (bi_given(a, 1)) { *rows = dim_arg(I, a, 1); *cols = fill ? 1 : *rows ? n / *rows : 0; }
  else if (bi_given(a, 2)) { *cols = dim_arg(I, a, 2); *rows = fill ? 1 : *cols ? n / *cols : 0; }
  else { *rows = n; *cols = 1; }
}

Value bi_matrix(Interp *I, Args *a) {
  for (int k = 1; k < 4; k++)                /* the shape is concrete, also while staging */
    if (bi_given(a, k)) a->v[k] = ad_concrete(I, a->v[k], a->span, "a matrix's shape");
  Value v = a->v[0];
  bool byrow = bi_opt_bool(I, a, 3, true);
  if (v.t == VT_BOX) {                       /* traced (grad, jit): a reshape op, so gradients flow */
    Value p = ad_primal(v);
    if (p.t != VT_MAT && p.t != VT_NUM && p.t != VT_BOOL) {
      char d[64];
      bi_argerror(I, 1, "number, string or matrix expected, got %s", val_describe(p, d, sizeof d));
    }
    int64_t n = p.t == VT_MAT ? tensor_numel(p.u.m) : 1, rows, cols;
    bool fill = n == 1;                      /* as below: one value fills the shape */
    matrix_shape(I, a, n, fill, &rows, &cols);
    if (fill && rows * cols != 1) {          /* a number filling the matrix: times ones */
      Tensor *o = tensor_new(I, rows, cols);
      double *od = tensor_data(o);
      for (int64_t k = 0; k < rows * cols; k++) { bi_poll(I, k, o); od[k] = 1; }
      Value ones = val_mat(o);
      tmp_push(I, ones);
      Value r = op_binary(I, OP_MUL, ones, v, a->span);
      tmp_pop(I, 1);
      val_release(ones);
      return r;
    }
    if (rows * cols != n)
      bi_error(I, "cannot shape %lld values into a %lldx%lld matrix", (long long)n, (long long)rows, (long long)cols);
    if (byrow) return op_reshape(I, v, rows, cols, a->span);
    Value r = op_reshape(I, v, cols, rows, a->span);   /* filled by column: t of the other shape */
    tmp_push(I, r);
    Value rt = op_transpose(I, r, a->span);
    tmp_pop(I, 1);
    val_release(r);
    return rt;
  }
  Tensor *src = NULL;
  double x = v.t == VT_NUM ? v.u.n : v.t == VT_BOOL ? v.u.b : 0;
  if (v.t == VT_STR) src = parse_numbers(I, v.u.s->s);
  else if (v.t == VT_MAT && tensor_numel(v.u.m) == 1) x = tensor_get1(v.u.m, 0, 0);   /* fills, as R */
  else if (v.t == VT_MAT) { src = tensor_contiguous(I, v.u.m); }
  else if (v.t != VT_NUM && v.t != VT_BOOL) {
    char d[64];
    bi_argerror(I, 1, "number, string or matrix expected, got %s", val_describe(v, d, sizeof d));
  }
  if (src) tmp_push(I, val_mat(src));
  int64_t n = src ? tensor_numel(src) : 1;
  int64_t rows, cols;
  matrix_shape(I, a, n, !src, &rows, &cols);
  if (src && rows * cols != n)
    bi_error(I, "cannot shape %lld values into a %lldx%lld matrix", (long long)n, (long long)rows, (long long)cols);
  if (!src && x == 0 && !signbit(x) && I->device == I->cpu && tensor_prefer_sparse(I, rows, cols, 0))
    return val_mat(tensor_sparse_new(I, rows, cols, 0));   /* all zeros: an empty sparse matrix (on
                                                            ** a GPU: dense there, as before) */
  Tensor *t = tensor_new(I, rows, cols);
  double *d = tensor_data(t);
  int64_t total = rows * cols;
  if (!src) {
    for (int64_t i = 0; i < total; i++) { bi_poll(I, i, t); d[i] = x; }
  } else if (byrow) {
    memcpy(d, tensor_data(src), (size_t)total * sizeof(double));
  } else {
    const double *s = tensor_data(src);
    int64_t budget = 0;
    for (int64_t j = 0, k = 0; j < cols; j++) {
      bi_tick(I, &budget, rows, t);          /* (src is on the temp stack) */
      for (int64_t i = 0; i < rows; i++) d[i * cols + j] = s[k++];
    }
  }
  if (src) { tmp_pop(I, 1); tensor_free_ref(src); }
  return mat_result(t);
}

Value bi_seq(Interp *I, Args *a) {
  Value from0 = a->v[0], by0 = a->v[2];                 /* under grad (BI_AD) these may be traced */
  bool traced = ad_any_grad(1, &from0) || ad_any_grad(1, &by0);
  for (int j = 0; j < 4; j++) a->v[j] = ad_primal(a->v[j]);
  if (bi_given(a, 3)) {                                  /* length.out (R's seq) */
    double n = bi_num(I, a, 3);
    if (!(n >= 0 && n == floor(n) && n <= 1e15)) bi_argerror(I, 4, "length.out must be a whole number >= 0");
    if (bi_given(a, 1) && bi_given(a, 2)) bi_error(I, "too many arguments: give two of to, by and length.out");
    double from = bi_given(a, 0) ? bi_num(I, a, 0) : 1, to = bi_given(a, 1) ? bi_num(I, a, 1) : NAN;
    double by = bi_given(a, 2) ? bi_num(I, a, 2) : bi_given(a, 1) ? (n > 1 ? (to - from) / (n - 1) : 0) : 1;
    if (!isfinite(from) || !isfinite(by) || (bi_given(a, 1) && !isfinite(to))) bi_error(I, "from, to and by must be finite");
    Tensor *t = tensor_new(I, (int64_t)n, 1);
    double *d = tensor_data(t);
    for (int64_t i = 0; i < (int64_t)n; i++) {
      bi_poll(I, i, t);
      d[i] = from + (double)i * by;
    }
    if (bi_given(a, 1) && n > 1) d[(int64_t)n - 1] = to;   /* the ends exact, as R's seq.int */
    return val_mat(t);
  }
  if (!bi_given(a, 0)) bi_error(I, "missing argument 'from' (or give length.out)");
  if (!bi_given(a, 1) && bi_given(a, 2)) bi_error(I, "missing argument 'to' (or give length.out)");
  if (!bi_given(a, 1)) {                                 /* seq(n): 1:n, as R */
    a->v[1] = a->v[0];
    a->v[0] = val_num(1);
    from0 = a->v[0];
  }
  double from = bi_num(I, a, 0), to = bi_num(I, a, 1);
  double by = bi_given(a, 2) ? bi_num(I, a, 2) : (from <= to ? 1 : -1);
  if (!isfinite(from) || !isfinite(to) || !isfinite(by)) bi_error(I, "from, to and by must be finite");
  if (by == 0) {
    if (from == to && !traced) { Tensor *t = tensor_new(I, 1, 1); tensor_data(t)[0] = from; return val_mat(t); }
    if (from != to) bi_argerror(I, 3, "by must not be 0");
  } else if ((to - from) / by < 0) bi_argerror(I, 3, "wrong sign of 'by' for going from %g to %g", from, to);
  double cnt = by == 0 ? 1 : floor((to - from) / by + 1e-10) + 1;
  if (cnt > 1e15) bi_error(I, "sequence too long");
  Tensor *t = tensor_new(I, (int64_t)cnt, 1);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < (int64_t)cnt; i++) {
    bi_poll(I, i, t);
    d[i] = traced ? (double)i : from + (double)i * by;
  }
  if (!traced) return val_mat(t);
  /* traced by grad: from + i * by through the ops (the same operations, so the same bits), so
  ** each element's derivative is 1 in from and i in by; to only sets the length */
  tmp_push(I, val_mat(t));
  Value step = op_binary(I, OP_MUL, val_mat(t), ad_any_grad(1, &by0) ? by0 : val_num(by), a->span);
  tmp_push(I, step);
  Value r = op_binary(I, OP_ADD, ad_any_grad(1, &from0) ? from0 : val_num(from), step, a->span);
  tmp_pop(I, 2);
  val_release(step);
  tensor_free_ref(t);
  return r;
}

Value bi_t(Interp *I, Args *a) { return op_transpose(I, a->v[0], a->span); }

static void need_shape(Interp *I, Value v) {
  if (v.t == VT_MAT || v.t == VT_NUM || v.t == VT_BOOL) return;
  char d[64];
  bi_argerror(I, 1, "matrix expected, got %s", val_describe(v, d, sizeof d));
}

Value bi_nrow(Interp *I, Args *a) {
  if (a->v[0].t == VT_FRAME) return val_num((double)a->v[0].u.fr->rows);
  need_shape(I, a->v[0]);
  return val_num(a->v[0].t == VT_MAT ? (double)tensor_rows(a->v[0].u.m) : 1);
}

Value bi_ncol(Interp *I, Args *a) {
  if (a->v[0].t == VT_FRAME) return val_num((double)a->v[0].u.fr->ncol);
  need_shape(I, a->v[0]);
  return val_num(a->v[0].t == VT_MAT ? (double)tensor_cols(a->v[0].u.m) : 1);
}

Value bi_nnz(Interp *I, Args *a) {
  need_shape(I, a->v[0]);
  Value v = a->v[0];
  return val_num(v.t == VT_MAT ? (double)tensor_nnz(v.u.m) : (v.t == VT_NUM ? v.u.n : v.u.b) != 0);
}

Value bi_sparsity(Interp *I, Args *a) {
  need_shape(I, a->v[0]);
  Value v = a->v[0];
  if (v.t != VT_MAT) return val_num((v.t == VT_NUM ? v.u.n : v.u.b) != 0);
  int64_t n = tensor_numel(v.u.m);
  return val_num(n ? (double)tensor_nnz(v.u.m) / (double)n : 0.0);
}

Value bi_length(Interp *I, Args *a) {
  Value v = a->v[0];
  (void)I;
  switch (v.t) {
  case VT_MAT: return val_num((double)tensor_numel(v.u.m));
  case VT_LIST: return val_num(v.u.l->n);
  case VT_FRAME: return val_num((double)v.u.fr->rows * (double)v.u.fr->ncol);   /* DML: cells */
  case VT_NULL: return val_num(0);
  default: return val_num(1);
  }
}

Value bi_reduce(Interp *I, Args *a) { return op_reduce(I, I->cur_bi->op, a->v[0], a->span); }

Value bi_unary(Interp *I, Args *a) { return op_unary_lent(I, I->cur_bi->op, a->v[0], a->lent, a->span); }

Value bi_log(Interp *I, Args *a) {
  if (!bi_given(a, 1)) return op_unary_lent(I, OP_LOG, a->v[0], a->lent, a->span);
  Value num = op_unary(I, OP_LOG, a->v[0], a->span);
  tmp_push(I, num);
  Value base = op_unary(I, OP_LOG, a->v[1], a->span);
  tmp_push(I, base);
  Value r = op_binary(I, OP_DIV, num, base, a->span);
  tmp_pop(I, 2);
  val_release(base);
  val_release(num);
  return r;
}

/* max(x) / min(x): the aggregate op (NaN propagates; an empty matrix is an error, where R
** warns and gives -Inf/Inf); max(x, y) / min(x, y): the elementwise op. */
Value bi_minmax(Interp *I, Args *a) {
  OpKind op = I->cur_bi->op;
  if (!bi_given(a, 1) && a->ndots == 0) return op_reduce(I, op == OP_MAX2 ? OP_MAX : OP_MIN, a->v[0], a->span);
  if (!bi_given(a, 1)) bi_argerror(I, 2, "y missing before the further arguments");
  for (int i = 0; i < a->ndots; i++)               /* (before r is made: a throw would leak it) */
    if (a->dotnames[i]) mls_throw(I, a->span, "unknown argument '%s' to '%s'", a->dotnames[i]->name, I->cur_bi->name);
  Value r = op_binary(I, op, a->v[0], a->v[1], a->span);
  for (int i = 0; i < a->ndots; i++) {             /* DML's n-ary max(a, b, c, ...) */
    tmp_push(I, r);
    Value n = op_binary(I, op, r, a->dots[i], a->span);
    tmp_pop(I, 1);
    val_release(r);
    r = n;
  }
  return r;
}

/* sum / n through the ops (so grad and the stager see it); an empty matrix gives NaN (0/0). */
Value bi_mean(Interp *I, Args *a) {
  Value v = a->v[0], pv = ad_primal(v);                 /* checks and n from the primal */
  if (pv.t != VT_MAT && pv.t != VT_NUM && pv.t != VT_BOOL) {
    char d[64];
    bi_argerror(I, 1, "matrix expected, got %s", val_describe(pv, d, sizeof d));
  }
  double n = pv.t == VT_MAT ? (double)tensor_numel(pv.u.m) : 1;
  Value s = op_reduce(I, OP_SUM, v, a->span);           /* a number, or a box under grad */
  tmp_push(I, s);
  Value r = op_binary(I, OP_DIV, s, val_num(n), a->span);
  tmp_pop(I, 1);
  val_release(s);
  return r;
}

/* cbind/rbind of pieces of which one is sparse: each piece made sparse (a copy; a number a
** 1x1), then appended (backend/sparse.h); the result in the rule's format. */
static Value bind_sparse(Interp *I, Args *a, bool cols) {
  int mark = I->ntmp;
  Tensor *acc = NULL;
  for (int i = 0; i < a->ndots; i++) {
    Value v = a->dots[i];
    Tensor *m;
    if (v.t == VT_MAT) m = tensor_sparsify(I, v.u.m);
    else {
      Tensor *one = tensor_new_host(I, 1, 1);
      tensor_data(one)[0] = v.t == VT_NUM ? v.u.n : v.u.b;
      tmp_push(I, val_mat(one));
      m = tensor_sparsify(I, one);
    }
    tmp_push(I, val_mat(m));
    if (!acc) { acc = m; continue; }
    const SpCsr *x = tensor_csr(acc), *y = tensor_csr(m);
    Tensor *o = cols ? tensor_sparse_new(I, x->rows, x->cols + y->cols, x->nnz + y->nnz)
                     : tensor_sparse_new(I, x->rows + y->rows, x->cols, x->nnz + y->nnz);
    tmp_push(I, val_mat(o));
    if (cols) spk_cbind(x, y, tensor_csr(o));
    else spk_rbind(x, y, tensor_csr(o));
    acc = o;
  }
  acc->refcount++;
  tmp_release_to(I, mark);
  return val_mat(tensor_auto_format(I, acc));
}

static Value bind(Interp *I, Args *a, bool cols) {
  int64_t other = -1, total = 0;
  for (int i = 0; i < a->ndots; i++) {
    Value v = ad_primal(a->dots[i]);
    int64_t r, c;
    if (v.t == VT_MAT) { r = tensor_rows(v.u.m); c = tensor_cols(v.u.m); }
    else if (v.t == VT_NUM || v.t == VT_BOOL) { r = c = 1; }
    else { char d[64]; bi_argerror(I, i + 1, "matrix expected, got %s", val_describe(v, d, sizeof d)); }
    int64_t keep = cols ? r : c;
    if (other >= 0 && keep != other)
      bi_error(I, "%s count mismatch: %lld and %lld", cols ? "row" : "column", (long long)other, (long long)keep);
    other = keep;
    total += cols ? c : r;
  }
  if (other < 0) other = 0;
  if (ad_any_active(a->ndots, a->dots)) {     /* grad or staged: each block placed in turn */
    int64_t R = cols ? other : total, C = cols ? total : other, off = 0;
    int mark = I->ntmp;
    Value acc = val_num(0);
    for (int i = 0; i < a->ndots; i++) {
      Value p = ad_primal(a->dots[i]);
      acc = ad_place(I, acc, a->dots[i], R, C, cols ? 0 : off, cols ? off : 0, a->span);
      tmp_push(I, acc);
      off += p.t == VT_MAT ? (cols ? tensor_cols(p.u.m) : tensor_rows(p.u.m)) : 1;
    }
    val_retain(acc);
    tmp_release_to(I, mark);
    return acc;
  }
  int64_t est = 0;                          /* the nonzeros at most, when a piece is sparse */
  bool any_sparse = false;
  for (int i = 0; i < a->ndots; i++) {
    Value v = a->dots[i];
    bool sp = v.t == VT_MAT && tensor_is_sparse(v.u.m);
    any_sparse |= sp;
    est += sp ? tensor_csr(v.u.m)->nnz : v.t == VT_MAT ? tensor_numel(v.u.m) : 1;
  }
  if (any_sparse && tensor_prefer_sparse(I, cols ? other : total, cols ? total : other, est))
    return bind_sparse(I, a, cols);
  Tensor *t = cols ? tensor_new(I, other, total) : tensor_new(I, total, other);
  double *d = tensor_data(t);
  int64_t W = tensor_cols(t), off = 0;
  for (int i = 0; i < a->ndots; i++) {
    Value v = a->dots[i];
    if (v.t != VT_MAT) {
      double x = v.t == VT_NUM ? v.u.n : v.u.b;
      if (cols) d[off] = x; else d[off * W] = x;
      off++;
      continue;
    }
    const Tensor *m = v.u.m;
    int64_t budget = 0;
    for (int64_t r = 0; r < tensor_rows(m); r++) {
      bi_tick(I, &budget, tensor_cols(m), t);
      for (int64_t c = 0; c < tensor_cols(m); c++) {
        if (cols) d[r * W + off + c] = tensor_get(m, r, c);
        else d[(off + r) * W + c] = tensor_get(m, r, c);
      }
    }
    off += cols ? tensor_cols(m) : tensor_rows(m);
  }
  return val_mat(t);
}

Value bi_cbind(Interp *I, Args *a) {
  if (a->ndots > 0 && ad_primal(a->dots[0]).t == VT_FRAME) return frame_bind(I, false, a->ndots, a->dots, a->span);
  return bind(I, a, true);
}
Value bi_rbind(Interp *I, Args *a) {
  if (a->ndots > 0 && ad_primal(a->dots[0]).t == VT_FRAME) return frame_bind(I, true, a->ndots, a->dots, a->span);
  return bind(I, a, false);
}

Value bi_as_scalar(Interp *I, Args *a) {
  Value v = a->v[0];
  char d[64];
  if (v.t == VT_BOX) {                       /* traced by grad: the element as an op */
    Value p = ad_primal(v);
    if (p.t == VT_MAT && tensor_numel(p.u.m) == 1) return ad_index(I, v, 2, (Value[]){ val_num(1), val_num(1) }, a->span);
    if (p.t == VT_NUM || p.t == VT_BOOL) { val_retain(v); return v; }
    bi_argerror(I, 1, "1x1 matrix expected, got %s", val_describe(p, d, sizeof d));
  }
  if (v.t == VT_LIST && v.u.l->n == 1 && v.u.l->items[0].t != VT_LIST && v.u.l->items[0].t != VT_BOX)
    v = v.u.l->items[0];                    /* DML: as.scalar of a one-element list is its element */
  if (v.t == VT_FRAME) {                    /* DML: as.scalar(F[i, j]) is the cell's value */
    if (v.u.fr->rows != 1 || v.u.fr->ncol != 1) bi_argerror(I, 1, "1x1 frame expected, got %s", val_describe(v, d, sizeof d));
    return frame_cell_value(I, v.u.fr, 0, 0);
  }
  if (v.t == VT_NUM) return v;
  if (v.t == VT_BOOL) return val_num(v.u.b);
  if (v.t == VT_STR) { val_retain(v); return v; }   /* a string element of a list, as SystemDS */
  if (v.t == VT_MAT && tensor_numel(v.u.m) == 1) return val_num(tensor_data(v.u.m)[0]);
  bi_argerror(I, 1, "1x1 matrix expected, got %s", val_describe(v, d, sizeof d));
}

Value bi_as_double(Interp *I, Args *a) {
  Value v = a->v[0];
  char d[64];
  if (v.t == VT_BOX) {                       /* traced: the same value through the ops */
    Value p = ad_primal(v);
    if (p.t == VT_MAT && tensor_numel(p.u.m) == 1) return ad_index(I, v, 2, (Value[]){ val_num(1), val_num(1) }, a->span);
    if (p.t == VT_NUM || p.t == VT_MAT) { val_retain(v); return v; }
    v = p;
  }
  switch (v.t) {
  case VT_NUM: return v;
  case VT_BOOL: return val_num(v.u.b);
  case VT_STR: {
    char *end;
    const char *s = v.u.s->s;
    while (*s == ' ') s++;
    double x = strtod(s, &end);
    while (*end == ' ') end++;
    if (end == s || *end) bi_argerror(I, 1, "cannot convert \"%s\" to a number", v.u.s->s);
    return val_num(x);
  }
  case VT_MAT:
    if (tensor_numel(v.u.m) == 1) return val_num(tensor_data(v.u.m)[0]);
    val_retain(v);
    return v;
  default: bi_argerror(I, 1, "number expected, got %s", val_describe(v, d, sizeof d));
  }
}

Value bi_as_integer(Interp *I, Args *a) {
  Value v = bi_as_double(I, a);
  if (v.t == VT_NUM) return val_num(trunc(v.u.n));
  Tensor *t = tensor_clone(I, v.u.m);
  val_release(v);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < tensor_numel(t); i++) { bi_poll(I, i, t); d[i] = trunc(d[i]); }
  return val_mat(t);
}

Value bi_as_logical(Interp *I, Args *a) {
  Value v = a->v[0];
  if (v.t == VT_STR) {
    if (!strcmp(v.u.s->s, "TRUE") || !strcmp(v.u.s->s, "true") || !strcmp(v.u.s->s, "T")) return val_bool(true);
    if (!strcmp(v.u.s->s, "FALSE") || !strcmp(v.u.s->s, "false") || !strcmp(v.u.s->s, "F")) return val_bool(false);
    bi_argerror(I, 1, "cannot convert \"%s\" to a boolean", v.u.s->s);
  }
  if (v.t == VT_MAT) return op_binary(I, OP_NE, v, val_num(0), a->span);
  double x = bi_num(I, a, 0);
  if (isnan(x)) bi_argerror(I, 1, "NaN is neither TRUE nor FALSE");
  return val_bool(x != 0);
}

Value bi_as_matrix(Interp *I, Args *a) {
  Value v = a->v[0], p = ad_primal(v);
  if (p.t == VT_LIST && p.u.l->n == 1) {     /* DML: as.matrix(L[1]) is its element's */
    a->v[0] = p.u.l->items[0];
    if (ad_primal(a->v[0]).t == VT_LIST) bi_argerror(I, 1, "a list of numbers or one matrix expected, got a list holding a list");
    return bi_as_matrix(I, a);
  }
  if (p.t == VT_LIST) {                      /* DML: a list of numbers is a column */
    List *l = p.u.l;
    char d[64];
    for (int i = 0; i < l->n; i++) {
      Value e = ad_primal(l->items[i]);
      if (e.t != VT_NUM && e.t != VT_BOOL && !(e.t == VT_MAT && tensor_numel(e.u.m) == 1))
        bi_argerror(I, 1, "a list of numbers expected, element %d is %s", i + 1, val_describe(e, d, sizeof d));
    }
    Tensor *t = tensor_new(I, l->n, 1);
    double *o = tensor_data(t);
    for (int i = 0; i < l->n; i++) {
      Value e = ad_primal(l->items[i]);
      o[i] = e.t == VT_NUM ? e.u.n : e.t == VT_BOOL ? e.u.b : tensor_at(e.u.m, 0);
    }
    return val_mat(t);
  }
  if (v.t == VT_MAT && tensor_is_sparse(v.u.m)) return val_mat(tensor_densify(I, v.u.m));   /* as R's Matrix */
  if (p.t == VT_MAT) { val_retain(v); return v; }
  if (p.t == VT_FRAME) return frame_to_matrix(I, p.u.fr, a->span);
  if (v.t == VT_BOX && p.t == VT_NUM) return op_reshape(I, v, 1, 1, a->span);   /* traced: through the ops */
  a->v[0] = p;
  Tensor *t = bi_mat(I, a, 0);
  return val_mat(t);
}

Value bi_is_na(Interp *I, Args *a) {
  Value v = a->v[0];
  bool nan_only = !strcmp(I->cur_bi->name, "is.nan") || !strcmp(I->cur_bi->name, "isNaN");   /* not NA */
  if (v.t == VT_MAT) {
    Tensor *t = tensor_new(I, tensor_rows(v.u.m), tensor_cols(v.u.m));
    double *d = tensor_data(t);
    int64_t budget = 0;
    for (int64_t i = 0, k = 0; i < tensor_rows(v.u.m); i++) {
      bi_tick(I, &budget, tensor_cols(v.u.m), t);
      for (int64_t j = 0; j < tensor_cols(v.u.m); j++) {
        double x = tensor_get(v.u.m, i, j);
        d[k++] = nan_only ? isnan(x) && !mls_is_na(x) : isnan(x);
      }
    }
    t->logical = true;
    return val_mat(t);
  }
  if (v.t == VT_NUM) return val_bool(nan_only ? isnan(v.u.n) && !mls_is_na(v.u.n) : isnan(v.u.n));
  return val_bool(false);
}

/* `names<-`(x, value), what names(x) = value calls: a copy of x (a list, a matrix or a number)
** with the names of value (a string, a list of strings, or NULL to drop them); a shorter value
** names the first elements and the rest "<NA>", as R. */
Value bi_names_set(Interp *I, Args *a) {
  Value x = ad_concrete(I, a->v[0], a->span, "names(x) = value");
  stage_eager_here(I, "a vector's names (graphs do not carry them)", a->span);
  Value nv = a->v[1];
  char d[64];
  int64_t n = x.t == VT_LIST ? x.u.l->n : x.t == VT_MAT ? tensor_numel(x.u.m) : 1;
  if (x.t != VT_LIST && x.t != VT_MAT && x.t != VT_NUM && x.t != VT_BOOL)
    bi_argerror(I, 1, "a list or a vector expected, got %s", val_describe(x, d, sizeof d));
  int64_t k = nv.t == VT_NULL ? 0 : nv.t == VT_STR ? 1 : nv.t == VT_LIST ? nv.u.l->n : -1;
  for (int64_t i = 0; nv.t == VT_LIST && i < k; i++)
    if (nv.u.l->items[i].t != VT_STR) k = -1;
  if (k < 0) bi_argerror(I, 2, "names must be strings (a string or a list of strings) or NULL, got %s", val_describe(nv, d, sizeof d));
  if (k > n) bi_error(I, "'names' attribute [%lld] must be the same length as the vector [%lld]", (long long)k, (long long)n);
  #define NAME_AT(i) ((i) >= k ? "<NA>" : nv.t == VT_STR ? nv.u.s->s : nv.u.l->items[i].u.s->s)
  if (x.t == VT_LIST) {
    List *l = list_copy(I, x.u.l);
    tmp_push(I, val_list(l));
    if (!l->names && k > 0) {
      l->names = mem_alloc((size_t)(l->cap > 0 ? l->cap : 1) * sizeof *l->names);
      memset(l->names, 0, (size_t)(l->cap > 0 ? l->cap : 1) * sizeof *l->names);
    }
    for (int64_t i = 0; l->names && i < n; i++)
      l->names[i] = k == 0 ? NULL : sym_intern(&I->syms, NAME_AT(i), strlen(NAME_AT(i)));
    tmp_pop(I, 1);
    return val_list(l);
  }
  Tensor *t;
  if (x.t == VT_MAT) t = tensor_clone(I, x.u.m);
  else { t = tensor_new(I, 1, 1); tensor_data(t)[0] = x.t == VT_NUM ? x.u.n : x.u.b; }
  t->logical = x.t == VT_BOOL || (x.t == VT_MAT && x.u.m->logical);
  if (k > 0) {
    tmp_push(I, val_mat(t));
    const char **s = bi_scratch(I, (size_t)n * sizeof *s);
    for (int64_t i = 0; i < n; i++) s[i] = NAME_AT(i);
    t->names = tnames_new(n, s, NULL);
    bi_scratch_free(I, s);
    tmp_pop(I, 1);
  }
  #undef NAME_AT
  return val_mat(t);
}

Value bi_list(Interp *I, Args *a) {
  List *l = list_new(I, a->ndots);
  tmp_push(I, val_list(l));                   /* held while it grows */
  for (int i = 0; i < a->ndots; i++) {
    val_retain(a->dots[i]);
    list_push(l, a->dots[i], a->dotnames[i]);
  }
  tmp_pop(I, 1);
  return val_list(l);
}

Value bi_names(Interp *I, Args *a) {
  Value v = ad_primal(a->v[0]);
  char d[64];
  if (v.t == VT_MAT || v.t == VT_NUM || v.t == VT_BOOL || v.t == VT_NULL) {   /* a vector's names */
    if (v.t != VT_MAT || !v.u.m->names) return val_null();
    const TensorNames *nm = v.u.m->names;
    List *l = list_new(I, (int)nm->n);
    tmp_push(I, val_list(l));
    for (int64_t i = 0; i < nm->n; i++) list_push(l, val_cstr(nm->s[i]), NULL);
    tmp_pop(I, 1);
    return val_list(l);
  }
  if (v.t != VT_LIST) bi_argerror(I, 1, "a list or a vector expected, got %s", val_describe(v, d, sizeof d));
  List *l = list_new(I, v.u.l->n);
  tmp_push(I, val_list(l));                   /* held while it grows */
  for (int i = 0; i < v.u.l->n; i++) {
    const char *nm = v.u.l->names && v.u.l->names[i] ? v.u.l->names[i]->name : "";
    list_push(l, val_cstr(nm), NULL);
  }
  tmp_pop(I, 1);
  return val_list(l);
}

Value bi_paste(Interp *I, Args *a) {
  const char *sep = bi_given(a, 0) ? bi_str(I, a, 0) : " ";
  TextBuf t;
  tb_open(I, &t);
  for (int i = 0; i < a->ndots; i++) {
    if (i) tb_puts(&t, sep);
    fmt_value_text(I, &t, a->dots[i], a->span);
    if (I->interrupted) interp_check_interrupt(I, a->span);   /* the text stopped short (tb freed) */
  }
  Value r = tb_close_str(I, &t);
  return r;
}

Value bi_toString(Interp *I, Args *a) {
  TextBuf t;
  tb_open(I, &t);
  fmt_value_text(I, &t, a->v[0], a->span);
  if (I->interrupted) interp_check_interrupt(I, a->span);     /* the text stopped short (tb freed) */
  Value r = tb_close_str(I, &t);
  return r;
}

Value bi_stop(Interp *I, Args *a) {
  TextBuf t;
  tb_open(I, &t);
  fmt_value_text(I, &t, a->v[0], a->span);
  char msg[900];
  snprintf(msg, sizeof msg, "%s", t.p);
  tb_close(I, &t);
  mls_throw(I, a->span, "%s", msg);
}

Value bi_assert(Interp *I, Args *a) {
  if (val_truth(I, a->v[0], a->span)) return val_null();
  if (bi_given(a, 1)) mls_throw(I, a->span, "assertion failed: %s", bi_str(I, a, 1));
  mls_throw(I, a->span, "assertion failed");
}

Value bi_time(Interp *I, Args *a) {
  (void)I; (void)a;
  be_sync_all(I->backends);                               /* a GPU's queued work counts as elapsed */
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return val_num((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec);
}

Value bi_gc(Interp *I, Args *a) {
  (void)I; (void)a;
  return val_num((double)gc_collect(I));
}

Value bi_exists(Interp *I, Args *a) {
  const char *name = bi_str(I, a, 0);
  Symbol *s = sym_lookup(&I->syms, name, strlen(name));
  if (!s) return val_bool(false);
  for (Env *e = I->env; e; e = e->parent)
    for (int i = 0; i < e->n; i++)
      if (e->fi->slots[i] == s && e->slots[i].t != VT_UNBOUND) return val_bool(true);
  return val_bool(s->global.t != VT_UNBOUND || s->bi);
}

static void describe_for_ls(Value v, char *buf, size_t n) {
  v = ad_primal(v);                          /* a value traced by grad or staged: what it holds */
  if (v.t == VT_MAT) snprintf(buf, n, "%lldx%lld matrix", (long long)tensor_rows(v.u.m), (long long)tensor_cols(v.u.m));
  else if (v.t == VT_LIST) snprintf(buf, n, "list of %d", v.u.l->n);
  else if (v.t == VT_FRAME) snprintf(buf, n, "%lldx%lld frame", (long long)v.u.fr->rows, (long long)v.u.fr->ncol);
  else snprintf(buf, n, "%s", val_type_name(v));
}

static int cmp_sym(const void *x, const void *y) {
  return strcmp((*(Symbol *const *)x)->name, (*(Symbol *const *)y)->name);
}

Value bi_ls(Interp *I, Args *a) {
  (void)a;
  char d[64];
  if (I->env) {
    for (int i = 0; i < I->env->n; i++) {
      if (I->env->slots[i].t == VT_UNBOUND) continue;
      describe_for_ls(I->env->slots[i], d, sizeof d);
      fprintf(I->out, "%-12s %s\n", I->env->fi->slots[i]->name, d);
    }
    return val_null();
  }
  Symbol **all = mem_alloc((I->syms.count + 1) * sizeof(Symbol *));
  uint32_t k = 0;
  for (uint32_t b = 0; b < I->syms.nbuckets; b++)
    for (Symbol *s = I->syms.buckets[b]; s; s = s->next)
      if (s->global.t != VT_UNBOUND && !bi_is_constant(s) && !sym_is_namespace(s)) all[k++] = s;
  qsort(all, k, sizeof(Symbol *), cmp_sym);
  for (uint32_t i = 0; i < k; i++) {
    describe_for_ls(all[i]->global, d, sizeof d);
    fprintf(I->out, "%-12s %s\n", all[i]->name, d);
  }
  mem_free(all);
  return val_null();
}

/* The "#'" comment lines right above a function's definition (roxygen style). */
static void doc_comments(TextBuf *t, const Closure *c) {
  const Source *s = c->chunk->src;
  uint32_t line, col;
  diag_locate(s, c->fi->span.start, &line, &col);
  uint32_t first = line - 1;       /* 0-based index of the definition's line */
  uint32_t top = first;
  while (top > 0) {
    const char *p = s->text + s->line_start[top - 1];
    while (*p == ' ' || *p == '\t') p++;
    if (p[0] == '#' && p[1] == '\'') top--; else break;
  }
  for (uint32_t l = top; l < first; l++) {
    const char *p = s->text + s->line_start[l];
    while (*p == ' ' || *p == '\t') p++;
    p += 2;
    if (*p == ' ') p++;
    const char *e = p;
    while (*e && *e != '\n') e++;
    tb_putn(t, p, (size_t)(e - p));
    tb_puts(t, "\n");
  }
}

/* help("ns::name"): name's function in namespace ns, a global list made by source() as ns, or
** else the stdlib's ns.mls sourced for the purpose (not bound: ?nn::adam needs no source()).
** Returns the function (+1), or VT_UNBOUND when the text is not ns::name. */
static Value ns_function(Interp *I, const char *text, Span sp) {
  const char *sep = strstr(text, "::");
  if (!sep || sep == text || !sep[2]) return val_unbound();
  Symbol *ns = sym_intern(&I->syms, text, (size_t)(sep - text));
  Symbol *name = sym_intern(&I->syms, sep + 2, strlen(sep + 2));
  Value l = sym_namespace(&I->syms, ns)->global;
  if (l.t == VT_LIST) val_retain(l);
  else {
    char file[300], dir[PATH_MAX], full[PATH_MAX + 320];
    snprintf(file, sizeof file, "%s.mls", ns->name);
    snprintf(full, sizeof full, "%s/%s", interp_stdlib_dir(I, dir, sizeof dir), file);
    if (access(file, R_OK) != 0 && access(full, R_OK) != 0)
      bi_error(I, "no help for '%s' (no namespace '%s': source(\"%s\") as %s first)", text, ns->name, file, ns->name);
    l = interp_source(I, file, ns, sp);
  }
  tmp_push(I, l);
  int k = l.t == VT_LIST ? list_find(l.u.l, name) : -1;
  if (k < 0 || l.u.l->items[k].t != VT_FUNC) bi_error(I, "no help for '%s' ('%s' has no function %s)", text, ns->name, name->name);
  Value f = l.u.l->items[k];
  val_retain(f);
  tmp_pop(I, 1);
  val_release(l);
  return f;
}

static Value help_body(Interp *I, Args *a) {
  if (!bi_given(a, 0)) {
    fprintf(I->out, "Builtins (help(\"name\") for one):\n");
    for (int i = 0; i < builtin_count; i++) {
      const char *doc = builtin_table[i].doc, *nl = strchr(doc, '\n');
      fprintf(I->out, "  %-14s %.*s\n", builtin_table[i].name, nl ? (int)(nl - doc) : (int)strlen(doc), doc);
    }
    fprintf(I->out, "Keywords and operators (help(\"for\"), ?for, ?\"%%*%%\"):\n ");
    for (int i = 0; help_topic_name(i); i++) fprintf(I->out, " %s", help_topic_name(i));
    fputs("\n", I->out);
    interp_lib_list(I, I->out);              /* last: tests/dml/run.sh reads it from the end */
    return val_null();
  }
  Value v = a->v[0], held = val_null();
  const Builtin *b = NULL;
  if (v.t == VT_STR) {
    Symbol *s = sym_lookup(&I->syms, v.u.s->s, v.u.s->len);
    if (s && s->global.t == VT_FUNC) v = s->global;
    else b = bi_find(v.u.s->s);
    if (!b && v.t == VT_STR && bi_constant_doc(v.u.s->s)) {
      fprintf(I->out, "%s\n", bi_constant_doc(v.u.s->s));
      return val_null();
    }
    if (!b && v.t == VT_STR) {                       /* a builtin written in MLS */
      Value lf = interp_lib_function(I, sym_intern(&I->syms, v.u.s->s, v.u.s->len), a->span);
      if (lf.t == VT_FUNC) { tmp_push(I, lf); v = held = lf; }
    }
    if (!b && v.t == VT_STR && help_topic(v.u.s->s)) {      /* ?for, ?"%*%" */
      fprintf(I->out, "%s\n", help_topic(v.u.s->s));
      return val_null();
    }
    if (!b && v.t == VT_STR && strstr(v.u.s->s, "::")) {    /* ?nn::adam */
      Value nf = ns_function(I, v.u.s->s, a->span);
      tmp_push(I, nf);
      v = held = nf;
    }
    if (!b && v.t == VT_STR) {
      char near[256];
      interp_suggest(I, v.u.s->s, near, sizeof near);
      bi_error(I, "no help for '%s'%s", v.u.s->s, near);
    }
  } else if (v.t == VT_BUILTIN) {
    b = v.u.bi;
  }
  if (b) {
    fprintf(I->out, "%s\n\n%s\n", b->sig, b->doc);
    return val_null();
  }
  if (v.t == VT_FUNC && v.u.f->derived) {
    fprintf(I->out, "%s(f): a function made by %s (help(\"%s\"))\n", v.u.f->dname, v.u.f->dname, v.u.f->dname);
    return val_null();
  }
  if (v.t == VT_FUNC) {
    TextBuf t;
    tb_open(I, &t);
    const Closure *c = v.u.f;
    const Source *s = c->chunk->src;
    Span sp = c->fi->span;
    AstNode *body = c->fi->body;
    uint32_t end = body ? body->span.start : sp.end;
    while (end > sp.start && (s->text[end - 1] == ' ' || s->text[end - 1] == '\n')) end--;
    if (c->fi->name) tb_printf(&t, "%s = ", c->fi->name->name);
    tb_putn(&t, s->text + sp.start, end - sp.start);
    tb_puts(&t, "\n\n");
    doc_comments(&t, c);
    fputs(t.p, I->out);
    tb_close(I, &t);
    if (held.t == VT_FUNC) { tmp_pop(I, 1); val_release(held); }
    return val_null();
  }
  char d[64];
  bi_argerror(I, 1, "a function or its name expected, got %s", val_describe(v, d, sizeof d));
}

/* Whether text's first n bytes hold pat, without regard to case. */
static bool has_word(const char *text, size_t n, const char *pat) {
  size_t m = strlen(pat);
  for (size_t i = 0; m && i + m <= n; i++)
    if (strncasecmp(text + i, pat, m) == 0) return true;
  return false;
}

static int first_line(const char *s) {
  const char *nl = strchr(s, '\n');
  return nl ? (int)(nl - s) : (int)strlen(s);
}

Value bi_help_search(Interp *I, Args *a) {
  const char *pat = bi_str(I, a, 0);
  if (!*pat) bi_argerror(I, 1, "a non-empty pattern expected");
  int found = 0;
  for (int i = 0; i < builtin_count; i++) {
    const Builtin *b = &builtin_table[i];
    if (!has_word(b->name, strlen(b->name), pat) && !has_word(b->doc, strlen(b->doc), pat)) continue;
    if (!found++) fprintf(I->out, "Help pages matching '%s':\n", pat);
    fprintf(I->out, "  %-16s %.*s\n", b->name, first_line(b->doc), b->doc);
  }
  for (int i = 0; help_topic_name(i); i++) {
    const char *name = help_topic_name(i), *text = help_topic(name);
    if (!has_word(name, strlen(name), pat) && !(text && has_word(text, strlen(text), pat))) continue;
    if (!found++) fprintf(I->out, "Help pages matching '%s':\n", pat);
    fprintf(I->out, "  %-16s %.*s\n", name, text ? first_line(text) : 0, text ? text : "");
  }
  found += interp_lib_search(I, pat, found, I->out);
  if (!found) fprintf(I->out, "No help page matches '%s'.\n", pat);
  return val_null();
}

typedef struct HelpRun { Args *a; } HelpRun;
static void help_run(Interp *I, void *ud) { help_body(I, ((HelpRun *)ud)->a); }

/* help(): at a terminal with $PAGER set, the text goes through the pager (as R's help does);
** otherwise (a pipe, a file, no $PAGER) it is written as it is. */
Value bi_help(Interp *I, Args *a) {
  const char *pager = getenv("PAGER");
  if (!pager || !*pager || I->out != stdout || !isatty(fileno(stdout))) return help_body(I, a);
  char *text = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&text, &len);
  if (!mem) return help_body(I, a);
  FILE *saved = I->out;
  I->out = mem;
  HelpRun hr = { a };
  int err = mls_pcall(I, help_run, &hr);
  I->out = saved;
  fclose(mem);
  if (err) { free(text); mls_rethrow(I); }
  fflush(stdout);
  void (*old_pipe)(int) = signal(SIGPIPE, SIG_IGN);      /* the pager may quit before the end */
  FILE *p = popen(pager, "w");
  if (p) {
    fwrite(text, 1, len, p);
    pclose(p);
    signal(SIGPIPE, old_pipe);
  } else {
    signal(SIGPIPE, old_pipe);
    fwrite(text, 1, len, stdout);
  }
  free(text);
  return val_null();
}

Value bi_system_time(Interp *I, Args *a) {
  if (a->nnodes != 1 || a->nodes[0]->kind == AST_ARG) bi_error(I, "takes one expression: system.time(expr)");
  struct timespec t0, t1;
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  Value v = eval(I, a->nodes[0]);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  getrusage(RUSAGE_SELF, &r1);
  val_release(v);
  double user = (double)(r1.ru_utime.tv_sec - r0.ru_utime.tv_sec) + 1e-6 * (double)(r1.ru_utime.tv_usec - r0.ru_utime.tv_usec);
  double sys = (double)(r1.ru_stime.tv_sec - r0.ru_stime.tv_sec) + 1e-6 * (double)(r1.ru_stime.tv_usec - r0.ru_stime.tv_usec);
  double el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  List *l = list_new(I, 3);                /* printed as R's table (print.c), when echoed or printed */
  list_push(l, val_num(user), sym_intern(&I->syms, "user", 4));
  list_push(l, val_num(sys), sym_intern(&I->syms, "system", 6));
  list_push(l, val_num(el), sym_intern(&I->syms, "elapsed", 7));
  l->timing = true;
  return val_list(l);
}

Value bi_ifdef(Interp *I, Args *a) { (void)I; val_retain(a->v[0]); return a->v[0]; }

Value bi_source(Interp *I, Args *a) { return interp_source(I, bi_str(I, a, 0), NULL, a->span); }

Value bi_quit(Interp *I, Args *a) {
  double st = bi_opt_num(I, a, 0, 0);
  if (!(st >= 0 && st <= 255 && st == floor(st))) bi_argerror(I, 1, "a status from 0 to 255 expected");
  I->quit_status = (int)st;
  I->quitting = true;
  mls_throw(I, a->span, "quit");           /* unwinds like an error; never reported */
}

/* R's sprintf works in buffers of 8192 bytes: a longer format, and a conversion whose result
** would be longer, are errors there. MLS has no such buffer, but keeps R's limit on the format
** and on each field width and precision, which also stops "%.2000000000f" before the C library
** allocates gigabytes for it; a %s of a long string (no width) is not limited. */
#define SPRINTF_MAX 8192

/* A field width or precision: the digits at *pp (none: 0); an error past SPRINTF_MAX. */
static int sprintf_number(Interp *I, TextBuf *t, const char **pp, const char *what) {
  const char *p = *pp;
  long v = 0;
  while (*p >= '0' && *p <= '9') {
    if (v <= SPRINTF_MAX) v = v * 10 + (*p - '0');
    p++;
  }
  if (v > SPRINTF_MAX) {
    int n = (int)(p - *pp);
    tb_close(I, t);
    bi_error(I, "the %s %.*s%s is over the limit of %d (R's)", what, n > 30 ? 30 : n, *pp, n > 30 ? "..." : "", SPRINTF_MAX);
  }
  *pp = p;
  return (int)v;
}

static Value sprintf_one(Interp *I, Args *a) {
  const char *fmt = bi_str(I, a, 0);
  size_t fmtlen = a->v[0].u.s->len;
  if (fmtlen > SPRINTF_MAX)
    bi_argerror(I, 1, "a format of at most %d bytes expected, got %zu (R's limit)", SPRINTF_MAX, fmtlen);
  TextBuf t;
  tb_open(I, &t);
  int argi = 0;
  for (const char *p = fmt; *p; p++) {
    if (*p != '%') {
      const char *e = strchr(p, '%');
      size_t n = e ? (size_t)(e - p) : strlen(p);
      tb_putn(&t, p, n);
      p += n - 1;
      continue;
    }
    if (p[1] == '%') { tb_putn(&t, "%", 1); p++; continue; }
    char spec[48];
    int k = 0;
    spec[k++] = '%';
    p++;
    bool left = false;
    for (; *p && strchr("-+ #0", *p); p++) {       /* flags, each kept once */
      if (*p == '-') left = true;
      if (!memchr(spec + 1, *p, (size_t)k - 1)) spec[k++] = *p;
    }
    int width = sprintf_number(I, &t, &p, "field width");
    int prec = -1;
    if (*p == '.') {
      p++;
      prec = sprintf_number(I, &t, &p, "precision");
    }
    char conv = *p;
    if (!conv || !strchr("dioxXfFeEgGs", conv)) { tb_close(I, &t); bi_error(I, "bad format directive in \"%s\"", fmt); }
    if (argi >= a->ndots) { tb_close(I, &t); bi_error(I, "too few arguments for the format \"%s\"", fmt); }
    Value v = a->dots[argi++];
    if (conv == 's') {                           /* by hand: a text of any length, widths in bytes as C */
      TextBuf s;
      tb_open(I, &s);
      fmt_value_text(I, &s, v, a->span);
      if (I->interrupted) interp_check_interrupt(I, a->span);
      size_t n = prec >= 0 && (size_t)prec < s.n ? (size_t)prec : s.n;
      size_t pad = (size_t)width > n ? (size_t)width - n : 0;
      for (size_t q = 0; q < pad && !left; q++) tb_putn(&t, " ", 1);
      tb_putn(&t, s.p, n);
      for (size_t q = 0; q < pad && left; q++) tb_putn(&t, " ", 1);
      tb_close(I, &s);
      continue;
    }
    if (width) k += snprintf(spec + k, sizeof spec - (size_t)k, "%d", width);
    if (prec >= 0) k += snprintf(spec + k, sizeof spec - (size_t)k, ".%d", prec);
    double x;
    if (v.t == VT_NUM) x = v.u.n;
    else if (v.t == VT_BOOL) x = v.u.b;
    else if (v.t == VT_MAT && tensor_numel(v.u.m) == 1) x = tensor_data(v.u.m)[0];
    else { tb_close(I, &t); bi_argerror(I, argi + 1, "number expected for %%%c", conv); }
    if (strchr("dioxX", conv)) {
      if (!(x == floor(x) && fabs(x) < 9.2e18)) {   /* as R: %d is for whole numbers only */
        tb_close(I, &t);
        bi_argerror(I, argi + 1, "%%%c needs a whole number below 2^63, got %.15g (use %%f, %%e or %%g)", conv, x);
      }
      spec[k++] = 'l';
      spec[k++] = 'l';
      spec[k++] = conv;
      spec[k] = '\0';
      tb_printf(&t, spec, (long long)x);          /* (at most 8192 + 330 bytes: the limits above) */
    } else {
      spec[k++] = conv;
      spec[k] = '\0';
      tb_printf(&t, spec, x);
    }
  }
  return tb_close_str(I, &t);
}

/* sprintf over vectors, as R: an argument that is a vector (a matrix of other than one element,
** row-major) or a list gives one string per element, the others recycled; the result is then a
** list of strings (R's character vector). */
Value bi_sprintf(Interp *I, Args *a) {
  int64_t n = -1;
  for (int i = 0; i < a->ndots; i++) {
    Value v = ad_primal(a->dots[i]);
    int64_t k = v.t == VT_LIST ? v.u.l->n : v.t == VT_MAT && tensor_numel(v.u.m) != 1 ? tensor_numel(v.u.m) : -1;
    if (k == 0) return val_list(list_new(I, 1));
    if (k > n) n = k;
  }
  if (n < 0) return sprintf_one(I, a);
  if (n > 10000000) bi_error(I, "too many strings (%lld)", (long long)n);
  List *l = list_new(I, (int)n);
  tmp_push(I, val_list(l));
  Value *saved = a->dots;
  Value el[a->ndots > 0 ? a->ndots : 1];
  for (int64_t k = 0; k < n; k++) {
    for (int i = 0; i < a->ndots; i++) {
      Value v = ad_primal(saved[i]);
      if (v.t == VT_LIST) el[i] = v.u.l->items[k % v.u.l->n];
      else if (v.t == VT_MAT && tensor_numel(v.u.m) != 1) el[i] = val_num(tensor_at(v.u.m, k % tensor_numel(v.u.m)));
      else el[i] = v;
    }
    a->dots = el;
    Value r = sprintf_one(I, a);
    a->dots = saved;
    list_push(l, r, NULL);
  }
  tmp_pop(I, 1);
  return val_list(l);
}

/* ---- types ---- */
Value bi_typeof(Interp *I, Args *a) {
  (void)I;
  Value v = ad_primal(a->v[0]);
  return val_cstr(val_type_name(v));
}

/* is.list, is.matrix, ...: which test comes from the builtin's name (one body, one row each). */
Value bi_is_type(Interp *I, Args *a) {
  Value v = ad_primal(a->v[0]);
  const char *n = I->cur_bi->name + 3;       /* after "is." */
  bool r;
  if (!strcmp(n, "list")) r = v.t == VT_LIST;
  else if (!strcmp(n, "frame")) r = v.t == VT_FRAME;
  else if (!strcmp(n, "matrix")) r = v.t == VT_MAT;
  else if (!strcmp(n, "numeric")) r = v.t == VT_NUM || v.t == VT_MAT;
  else if (!strcmp(n, "character")) r = v.t == VT_STR;
  else if (!strcmp(n, "logical")) r = v.t == VT_BOOL;
  else if (!strcmp(n, "function")) r = v.t == VT_FUNC || v.t == VT_BUILTIN;
  else r = v.t == VT_NULL;                    /* is.null */
  return val_bool(r);
}
