/*
** masked.c — sparse-safe expressions (docs/sparse.md): `W * expr` with a sparse W evaluated only
** at W's stored cells, so that `W * (U %*% t(V) - X)` (ALS's loss and gradient) never makes the
** dense m x n product: each product in expr becomes a sampled product (spk_sddmm), each matrix
** is read at W's cells, and the arithmetic runs on those values. Used only where it gives
** exactly the dense values: expr's form is checked before anything is evaluated (its leaves are
** names, numbers and t(name), which can be evaluated again without effect when the attempt is
** given up), and a bound on |expr| over every cell shows that expr is finite where W is not
** stored (0 * Inf would be NaN densely). Arguments borrowed, the result owned (+1).
*/
#include <math.h>
#include <string.h>
#include "backend/sparse.h"
#include "builtins.h"
#include "interp/interp.h"

/* A value of the walk: a number c, or vals (W's nnz values, scratch), with bound >= |value| at
** every cell of the m x n result (INFINITY: unknown). */
typedef struct MVal {
  bool is_const;
  double c;
  double *vals;
  double bound;
} MVal;

typedef struct Walk {
  Interp *I;
  const SpCsr *pat;
  int64_t rows, cols;
  bool ok;
  double *bufs[64];             /* the scratch arrays made, freed newest first */
  int nbufs;
} Walk;

/* Whether name node n is spelled t (only then is it evaluated: another name, unbound, would
** throw its "object not found" where the call reports "could not find function"). */
static bool named_t(const AstNode *n) { return n->kind == AST_NAME && !strcmp(n->u.sym->name, "t"); }

AstNode *eval_t_arg(Interp *I, AstNode *n) {
  if (n->kind != AST_CALL || n->nkids != 2 || !named_t(n->kids[0]) || n->kids[1]->kind == AST_ARG) return NULL;
  Value f = eval(I, n->kids[0]);
  bool t = f.t == VT_BUILTIN && !strcmp(f.u.bi->name, "t");
  val_release(f);
  return t ? n->kids[1] : NULL;
}

/* t(name): a call of the builtin t on a name (the name t not bound by the program). */
static bool is_t_call(Interp *I, AstNode *n) {
  if (n->kind != AST_CALL || n->nkids != 2 || !named_t(n->kids[0]) || n->kids[1]->kind != AST_NAME) return false;
  Value f = eval(I, n->kids[0]);
  bool t = f.t == VT_BUILTIN && !strcmp(f.u.bi->name, "t");
  val_release(f);
  return t;
}

static bool is_leaf(Interp *I, AstNode *n) {
  return n->kind == AST_NUM || n->kind == AST_NAME || is_t_call(I, n);
}

/* The form, checked without evaluating anything but names; *prods counts the products. */
static bool form_ok(Interp *I, AstNode *n, int *prods, int depth) {
  if (depth > 64) return false;
  if (is_leaf(I, n)) return true;
  if (n->kind == AST_UNARY) return n->op == OP_NEG && form_ok(I, n->kids[0], prods, depth + 1);
  if (n->kind != AST_BINARY) return false;
  switch (n->op) {
  case OP_MATMUL:
    ++*prods;
    return is_leaf(I, n->kids[0]) && is_leaf(I, n->kids[1]);
  case OP_ADD: case OP_SUB: case OP_MUL:
    return form_ok(I, n->kids[0], prods, depth + 1) && form_ok(I, n->kids[1], prods, depth + 1);
  case OP_POW:
    return n->kids[1]->kind == AST_NUM && n->kids[1]->u.num == 2 && form_ok(I, n->kids[0], prods, depth + 1);
  default:
    return false;
  }
}

static double max_abs(const Tensor *t) {
  double m = 0;
  if (tensor_is_sparse(t)) {
    const SpCsr *c = tensor_csr(t);
    for (int64_t q = 0; q < c->nnz; q++) m = fmax(m, fabs(c->val[q]));
    return isnan(m) ? INFINITY : m;
  }
  for (int64_t i = 0; i < tensor_rows(t); i++)
    for (int64_t j = 0; j < tensor_cols(t); j++) {
      double x = fabs(tensor_get(t, i, j));
      if (!(x <= m)) m = isnan(x) ? INFINITY : x;
    }
  return m;
}

static double *new_vals(Walk *w) {
  if (w->nbufs == 64) { w->ok = false; return NULL; }
  return w->bufs[w->nbufs++] = tensor_scratch(w->I, (size_t)(w->pat->nnz + 1) * sizeof(double));
}

/* v (owned; released here) read at the pattern: a number, or a matrix of the result's shape, a
** row or a column broadcast along it. */
static MVal sample(Walk *w, Value v) {
  MVal r = { .bound = INFINITY };
  tmp_push(w->I, v);
  if (v.t == VT_NUM || v.t == VT_BOOL || (v.t == VT_MAT && tensor_numel(v.u.m) == 1 && !v.u.m->st->dev)) {
    r.is_const = true;
    r.c = v.t == VT_NUM ? v.u.n : v.t == VT_BOOL ? v.u.b : tensor_get1(v.u.m, 0, 0);
    r.bound = isfinite(r.c) ? fabs(r.c) : INFINITY;
    goto done;
  }
  if (v.t != VT_MAT || v.u.m->st->dev || v.u.m->st->abstract) { w->ok = false; goto done; }
  const Tensor *m = v.u.m;
  int64_t mr = tensor_rows(m), mc = tensor_cols(m);
  bool full = mr == w->rows && mc == w->cols, row = mr == 1 && mc == w->cols, col = mc == 1 && mr == w->rows;
  if (!full && !row && !col) { w->ok = false; goto done; }
  r.vals = new_vals(w);
  if (!r.vals) goto done;
  const SpCsr *p = w->pat;
  bool sp = tensor_is_sparse(m);
  for (int64_t i = 0; i < p->rows; i++) {
    int64_t mi = row ? 0 : i, q2 = sp ? tensor_csr(m)->rowptr[mi] : 0;
    for (int64_t q = p->rowptr[i]; q < p->rowptr[i + 1]; q++) {
      int64_t j = p->col[q], mj = col ? 0 : j;
      if (sp) {                                 /* merge along the row (its columns sorted) */
        const SpCsr *c = tensor_csr(m);
        if (col) r.vals[q] = tensor_get1(m, mi, 0);
        else {
          while (q2 < c->rowptr[mi + 1] && c->col[q2] < mj) q2++;
          r.vals[q] = q2 < c->rowptr[mi + 1] && c->col[q2] == mj ? c->val[q2] : 0.0;
        }
      } else {
        r.vals[q] = tensor_get(m, mi, mj);
      }
    }
  }
  r.bound = max_abs(m);
done:
  tmp_pop(w->I, 1);
  val_release(v);
  return r;
}

/* A product's operand as a packed host matrix (+1: on the tmp stack), or NULL. */
static Tensor *operand(Walk *w, Value v) {
  if (v.t != VT_MAT || v.u.m->st->dev || v.u.m->st->abstract || tensor_is_sparse(v.u.m)) return NULL;
  Tensor *c = tensor_contiguous(w->I, v.u.m);
  tmp_push(w->I, val_mat(c));
  return c;
}

static MVal walk(Walk *w, AstNode *n);

static MVal product(Walk *w, AstNode *n) {
  MVal r = { .bound = INFINITY };
  Interp *I = w->I;
  int mark = I->ntmp;
  Value a = eval(I, n->kids[0]);
  tmp_push(I, a);
  Value b = eval(I, n->kids[1]);
  tmp_push(I, b);
  Tensor *A = operand(w, a);
  /* B (k x n) is read by columns: t(V) is a view whose columns are V's packed rows */
  Value bt = b.t == VT_MAT ? op_transpose(I, b, n->span) : val_null();
  tmp_push(I, bt);
  Tensor *Bt = bt.t == VT_MAT ? operand(w, bt) : NULL;
  if (!A || !Bt || tensor_rows(A) != w->rows || tensor_rows(Bt) != w->cols || tensor_cols(A) != tensor_cols(Bt)) {
    w->ok = false;
    tmp_release_to(I, mark);
    return r;
  }
  int64_t k = tensor_cols(A);
  r.vals = new_vals(w);
  if (!r.vals) { tmp_release_to(I, mark); return r; }
  spk_sddmm(w->pat, tensor_data(A), k, tensor_data(Bt), k, k, r.vals);
  if (I->interrupted) interp_check_interrupt(I, n->span);
  double ba = max_abs(A), bb = max_abs(Bt);
  r.bound = isfinite(ba) && isfinite(bb) ? (double)k * ba * bb : INFINITY;
  tmp_release_to(I, mark);
  return r;
}

/* x op y at the pattern into x (or a fresh array): both numbers stay a number. */
static MVal combine(Walk *w, OpKind op, MVal x, MVal y) {
  MVal r = { .bound = INFINITY };
  if (x.is_const && y.is_const) {
    r.is_const = true;
    r.c = op == OP_ADD ? x.c + y.c : op == OP_SUB ? x.c - y.c : x.c * y.c;
  } else {
    r.vals = x.is_const ? y.vals : x.vals;
    for (int64_t q = 0; q < w->pat->nnz; q++) {
      double a = x.is_const ? x.c : x.vals[q], b = y.is_const ? y.c : y.vals[q];
      r.vals[q] = op == OP_ADD ? a + b : op == OP_SUB ? a - b : a * b;
    }
  }
  r.bound = op == OP_MUL ? x.bound * y.bound : x.bound + y.bound;
  return r;
}

static MVal walk(Walk *w, AstNode *n) {
  MVal r = { .bound = INFINITY };
  if (!w->ok) return r;
  if (n->kind == AST_BINARY && n->op == OP_MATMUL) return product(w, n);
  if (n->kind == AST_UNARY) {                      /* -x */
    r = walk(w, n->kids[0]);
    if (r.is_const) r.c = -r.c;
    else if (w->ok) for (int64_t q = 0; q < w->pat->nnz; q++) r.vals[q] = -r.vals[q];
    return r;
  }
  if (n->kind == AST_BINARY && n->op == OP_POW) {  /* x ^ 2 */
    r = walk(w, n->kids[0]);
    if (!w->ok) return r;
    return combine(w, OP_MUL, r, r);
  }
  if (n->kind == AST_BINARY) {
    MVal x = walk(w, n->kids[0]);
    MVal y = walk(w, n->kids[1]);
    if (!w->ok) return r;
    return combine(w, (OpKind)n->op, x, y);
  }
  return sample(w, eval(w->I, n));
}

Value eval_masked(Interp *I, AstNode *expr, const Tensor *W) {
  int prods = 0;
  if (I->stage || I->sparse_mode == SPARSE_EXACT || !tensor_is_sparse(W) || !form_ok(I, expr, &prods, 0) || prods == 0) return val_unbound();
  const SpCsr *p = tensor_csr(W);
  Walk w = { .I = I, .pat = p, .rows = p->rows, .cols = p->cols, .ok = true };
  int mark = I->ntmp;
  MVal r = walk(&w, expr);
  Value out = val_unbound();
  if (w.ok && r.bound < 1e300) {                 /* finite at every cell: exactly the dense values */
    Tensor *o = tensor_sparse_new(I, p->rows, p->cols, p->nnz);
    SpCsr *c = tensor_csr(o);
    memcpy(c->rowptr, p->rowptr, (size_t)(p->rows + 1) * sizeof(int64_t));
    memcpy(c->col, p->col, (size_t)p->nnz * sizeof(int32_t));
    for (int64_t q = 0; q < p->nnz; q++) c->val[q] = p->val[q] * (r.is_const ? r.c : r.vals[q]);   /* W * expr */
    c->nnz = p->nnz;
    out = val_mat(o);
  }
  tmp_release_to(I, mark);
  while (w.nbufs > 0) tensor_scratch_free(I, w.bufs[--w.nbufs]);
  return out;
}
