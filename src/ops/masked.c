/*
** masked.c — W * e at the stored cells of a sparse W (docs/sparse.md "Sparse-safe expressions"):
** e is a small program (ops.h, MK_*) of products, +, -, *, unary minus and squares over leaf
** values, so that W * (U %*% t(V) - X), ALS's loss and gradient, never makes the dense m x n
** product: each product becomes a sampled product (spk_sddmm), each leaf matrix is read at W's
** cells, and the arithmetic runs on those values. Two front ends build programs: the eager
** evaluator's (interp/masked.c, from the expression) and staging's (a rewrite of the graph,
** staging/optimize.c), whose OP_MASKED node runs op_masked.
** Only where it gives exactly the dense values: a bound on |e| over every cell shows that e is
** finite where W is not stored (0 * Inf would be NaN densely); otherwise, and for a dense W,
** op_masked computes the program's ops one by one, as the unrewritten code would. Except a
** program staging flagged MK_DENSE_W (a mostly-zero dense W whose W * e only products and sums
** read): such a W is read through a sparse copy (dense_w_sparse) when it has few nonzeros.
*/
#include <math.h>
#include <string.h>
#include "backend/sparse.h"
#include "mem.h"
#include "ops/family.h"

/* A value of the walk: a number c, or vals (W's nnz values, scratch), with lo <= value <= hi at
** every cell of the m x n result (-Inf, Inf: unknown). */
typedef struct MVal {
  bool is_const;
  double c;
  double *vals;
  double lo, hi;
} MVal;

typedef struct Walk {
  Interp *I;
  const SpCsr *pat;
  int64_t rows, cols;
  bool ok;
  double *bufs[4 * MK_MAX + 4];   /* the scratch arrays made, freed newest first */
  int nbufs;
} Walk;

static const MVal unknown = { .lo = -INFINITY, .hi = INFINITY };

/* [lo, hi] with a NaN end (Inf - Inf) made unknown */
static MVal range(MVal r, double lo, double hi) {
  r.lo = isnan(lo) ? -INFINITY : lo;
  r.hi = isnan(hi) ? INFINITY : hi;
  return r;
}

/* The smallest and largest of the four products of [a, b] and [c, d]. */
static void mul_range(double a, double b, double c, double d, double *lo, double *hi) {
  double p[4] = { a * c, a * d, b * c, b * d };
  *lo = *hi = p[0];
  for (int k = 1; k < 4; k++) {
    if (isnan(p[k]) || isnan(*lo)) { *lo = -INFINITY; *hi = INFINITY; return; }
    *lo = fmin(*lo, p[k]);
    *hi = fmax(*hi, p[k]);
  }
}

/* The smallest and largest of x[0 .. n) (stride s) into *a, *b, a NaN into *nan (comparisons,
** not fmin/fmax calls: a NaN is flagged, not compared). */
static void min_max_run(const double *x, int64_t n, int64_t s, double *a, double *b, bool *nan) {
  double lo = *a, hi = *b;
  bool bad = false;
  for (int64_t k = 0; k < n; k++) {
    double v = x[k * s];
    bad |= v != v;
    lo = v < lo ? v : lo;
    hi = v > hi ? v : hi;
  }
  *a = lo;
  *b = hi;
  *nan |= bad;
}

/* t's smallest and largest element (a sparse one's unstored zeros among them; a NaN: unknown). */
static void min_max(const Tensor *t, double *lo, double *hi) {
  double a = INFINITY, b = -INFINITY;
  bool nan = false;
  if (tensor_is_sparse(t)) {
    const SpCsr *c = tensor_csr(t);
    min_max_run(c->val, c->nnz, 1, &a, &b, &nan);
    if (c->nnz < c->rows * c->cols) { a = fmin(a, 0); b = fmax(b, 0); }
  } else {
    const double *d = tensor_data(t);
    for (int64_t i = 0; i < tensor_rows(t); i++)
      min_max_run(d + i * t->stride[0], tensor_cols(t), t->stride[1], &a, &b, &nan);
  }
  *lo = nan ? -INFINITY : a;
  *hi = nan ? INFINITY : b;
}

static double *new_vals(Walk *w) {
  if (w->nbufs == 4 * MK_MAX + 4) { w->ok = false; return NULL; }
  return w->bufs[w->nbufs++] = tensor_scratch(w->I, (size_t)(w->pat->nnz + 1) * sizeof(double));
}

/* Drops the kept leaf (Interp.mask_leaf) and its values. */
static void leaf_forget(Interp *I) {
  if (I->mask_leaf) tensor_free_ref(I->mask_leaf);
  mem_free(I->mask_leaf_vals);
  I->mask_leaf = NULL;
  I->mask_leaf_vals = NULL;
}

/* A leaf matrix's bounds (min_max of m, the host copy of v). Those of a full-size leaf are kept
** with it (Interp.mask_leaf, retained, so never changed in place while kept): a staged loop
** reads the same X at every iteration (ALS's W * (U %*% t(V) - X)) and bounds it once. */
static void leaf_bounds(Interp *I, Tensor *v, const Tensor *m, bool full, double *lo, double *hi) {
  if (I->mask_leaf == v) {
    *lo = I->mask_leaf_lo;
    *hi = I->mask_leaf_hi;
    return;
  }
  min_max(m, lo, hi);
  if (!full || v->st->dev || tensor_rows(m) * tensor_cols(m) < 4096) return;
  leaf_forget(I);
  v->refcount++;
  I->mask_leaf = v;
  I->mask_leaf_lo = *lo;
  I->mask_leaf_hi = *hi;
}

/* The kept values of leaf v at the pattern, when the pattern is the kept sparse copy of a dense
** W (whose change forgets them: op_masked_forget), else NULL. */
static const double *leaf_vals(Walk *w, const Tensor *v) {
  Interp *I = w->I;
  return I->mask_leaf == v && I->mask_leaf_vals && I->mask_sparse && w->pat == tensor_csr(I->mask_sparse)
         ? I->mask_leaf_vals : NULL;
}

/* v (borrowed) read at the pattern: a number, or a matrix of the result's shape, a row or a
** column broadcast along it. */
static MVal sample(Walk *w, Value v) {
  MVal r = unknown;
  if (v.t == VT_NUM || v.t == VT_BOOL || (v.t == VT_MAT && tensor_numel(v.u.m) == 1 && !v.u.m->st->dev)) {
    r.is_const = true;
    r.c = v.t == VT_NUM ? v.u.n : v.t == VT_BOOL ? v.u.b : tensor_get1(v.u.m, 0, 0);
    return range(r, r.c, r.c);
  }
  if (v.t != VT_MAT || v.u.m->st->abstract) { w->ok = false; return r; }
  const Tensor *m = v.u.m;
  if (m->st->dev) {                                 /* a device matrix: read on the host */
    Tensor *h = tensor_to(w->I, v.u.m, w->I->cpu);
    tmp_push(w->I, val_mat(h));
    m = h;
  }
  int64_t mr = tensor_rows(m), mc = tensor_cols(m);
  bool full = mr == w->rows && mc == w->cols, row = mr == 1 && mc == w->cols, col = mc == 1 && mr == w->rows;
  if (!full && !row && !col) { w->ok = false; return r; }
  r.vals = new_vals(w);
  if (!r.vals) return r;
  const SpCsr *p = w->pat;
  const double *kept = full ? leaf_vals(w, v.u.m) : NULL;
  if (kept) {                                       /* (the same leaf at the same cells) */
    memcpy(r.vals, kept, (size_t)p->nnz * sizeof(double));
    return range(r, w->I->mask_leaf_lo, w->I->mask_leaf_hi);
  }
  bool sp = tensor_is_sparse(m);
  if (!sp) {                                        /* (dense: each row's cells by its strides) */
    const double *d = tensor_data(m);
    int64_t s0 = row ? 0 : m->stride[0], s1 = col ? 0 : m->stride[1];
    for (int64_t i = 0; i < p->rows; i++) {
      const double *di = d + i * s0;
      for (int64_t q = p->rowptr[i]; q < p->rowptr[i + 1]; q++) r.vals[q] = di[p->col[q] * s1];
    }
  }
  for (int64_t i = 0; i < p->rows && sp; i++) {
    int64_t mi = row ? 0 : i, q2 = tensor_csr(m)->rowptr[mi];
    for (int64_t q = p->rowptr[i]; q < p->rowptr[i + 1]; q++) {
      int64_t j = p->col[q], mj = col ? 0 : j;
      const SpCsr *c = tensor_csr(m);           /* merge along the row (its columns sorted) */
      if (col) r.vals[q] = tensor_get1(m, mi, 0);
      else {
        while (q2 < c->rowptr[mi + 1] && c->col[q2] < mj) q2++;
        r.vals[q] = q2 < c->rowptr[mi + 1] && c->col[q2] == mj ? c->val[q2] : 0.0;
      }
    }
  }
  leaf_bounds(w->I, v.u.m, m, full, &r.lo, &r.hi);
  Interp *I = w->I;
  if (full && I->mask_leaf == v.u.m && I->mask_sparse && p == tensor_csr(I->mask_sparse)) {
    size_t nb = (size_t)(p->nnz + 1) * sizeof(double);   /* (kept for the next run, where memory allows) */
    if (!mem_over_limit(nb) && (I->mask_leaf_vals = mem_try_alloc(nb)))
      memcpy(I->mask_leaf_vals, r.vals, (size_t)p->nnz * sizeof(double));
  }
  return r;
}

/* A product's operand as a packed dense host matrix (+1: on the tmp stack), or NULL. A device
** matrix (U and V on a GPU, W sparse on the host) is copied to the host: its k columns are
** what the sampled product reads, far less than the m x n product. */
static Tensor *operand(Walk *w, Value v) {
  if (v.t != VT_MAT || v.u.m->st->abstract || v.u.m->st->sparse) return NULL;
  Tensor *c = v.u.m->st->dev ? tensor_to(w->I, v.u.m, w->I->cpu) : tensor_contiguous(w->I, v.u.m);
  tmp_push(w->I, val_mat(c));
  return c;
}

/* a %*% b (each transposed first where flagged) at the pattern. */
static MVal product(Walk *w, Value a, bool ta, Value b, bool tb, Span sp) {
  MVal r = unknown;
  Interp *I = w->I;
  int mark = I->ntmp;
  if (a.t != VT_MAT || b.t != VT_MAT) { w->ok = false; return r; }
  if (ta) { a = op_transpose(I, a, sp); tmp_push(I, a); }
  /* B (k x n) is read by columns: t(B) is a view whose columns are B's packed rows */
  Value bt = tb ? b : op_transpose(I, b, sp);
  if (!tb) tmp_push(I, bt);
  Tensor *A = operand(w, a), *Bt = operand(w, bt);
  if (!A || !Bt || tensor_rows(A) != w->rows || tensor_rows(Bt) != w->cols || tensor_cols(A) != tensor_cols(Bt)) {
    w->ok = false;
    tmp_release_to(I, mark);
    return r;
  }
  int64_t k = tensor_cols(A);
  r.vals = new_vals(w);
  if (!r.vals) { tmp_release_to(I, mark); return r; }
  spk_sddmm(w->I->cpu, w->pat, tensor_data(A), k, tensor_data(Bt), k, k, r.vals);
  if (I->interrupted) interp_check_interrupt(I, sp);
  double al, ah, bl, bh, pl, ph;              /* each of the k terms lies in [pl, ph] */
  min_max(A, &al, &ah);
  min_max(Bt, &bl, &bh);
  mul_range(al, ah, bl, bh, &pl, &ph);
  if (k == 0) pl = ph = 0;
  r = range(r, (double)k * pl, (double)k * ph);
  tmp_release_to(I, mark);
  return r;
}

static double cell(int op, double a, double b) {
  switch (op) {
  case MK_ADD: return a + b;
  case MK_SUB: return a - b;
  case MK_MULZ: return a == 0 ? 0.0 : a * b;
  default: return a * b;
  }
}

/* x op y at the pattern into x's (or y's) array: both numbers stay a number. */
static MVal combine(Walk *w, int op, MVal x, MVal y) {
  MVal r = unknown;
  if (x.is_const && y.is_const) {
    r.is_const = true;
    r.c = cell(op, x.c, y.c);
  } else {
    r.vals = x.is_const ? y.vals : x.vals;
    for (int64_t q = 0; q < w->pat->nnz; q++) r.vals[q] = cell(op, x.is_const ? x.c : x.vals[q], y.is_const ? y.c : y.vals[q]);
  }
  double lo, hi;
  if (op == MK_ADD) return range(r, x.lo + y.lo, x.hi + y.hi);
  if (op == MK_SUB) return range(r, x.lo - y.hi, x.hi - y.lo);
  mul_range(x.lo, x.hi, y.lo, y.hi, &lo, &hi);   /* (MULZ's 0 lies in it when x's range holds 0) */
  return range(r, lo, hi);
}

/* f (log, exp, unary minus) at the pattern, in place. */
static MVal apply1(Walk *w, int code, MVal x) {
  if (x.is_const) x.c = code == MK_LOG ? log(x.c) : code == MK_EXP ? exp(x.c) : -x.c;
  else
    for (int64_t q = 0; q < w->pat->nnz; q++)
      x.vals[q] = code == MK_LOG ? log(x.vals[q]) : code == MK_EXP ? exp(x.vals[q]) : -x.vals[q];
  if (code == MK_NEG) return range(x, -x.hi, -x.lo);
  if (code == MK_EXP) return range(x, exp(x.lo), exp(x.hi));
  return x.lo > 0 ? range(x, log(x.lo), log(x.hi)) : range(x, -INFINITY, INFINITY);
}

/* Instruction q of the program (its operands' values are each used once, leaves excepted,
** which are read afresh at every use). */
static MVal walk(Walk *w, const double *pl, const Value *in, MVal *mv, int q) {
  MVal r = unknown;
  int code = (int)pl[4 * q], a = (int)pl[4 * q + 1], b = (int)pl[4 * q + 2], fl = (int)pl[4 * q + 3];
  if (!w->ok) return r;
#define ARG(x) ((int)pl[4 * (x)] == MK_LEAF ? sample(w, in[(int)pl[4 * (x) + 1]]) : mv[x])
  switch (code) {
  case MK_PROD: return product(w, in[(int)pl[4 * a + 1]], fl & MK_TA, in[(int)pl[4 * b + 1]], fl & MK_TB, w->I->call_span);
  case MK_NEG: case MK_LOG: case MK_EXP:
    r = ARG(a);
    return w->ok ? apply1(w, code, r) : r;
  case MK_SQ:
    r = ARG(a);
    return w->ok ? combine(w, MK_MUL, r, r) : r;
  case MK_ADD: case MK_SUB: case MK_MUL: case MK_MULZ: {
    MVal x = ARG(a), y = ARG(b);
    return w->ok ? combine(w, code, x, y) : r;
  }
  default:
    return r;                                   /* MK_LEAF: read where it is used */
  }
#undef ARG
}

/* The program's instructions: n, checked. */
static int plan_len(Value plan, int nin) {
  MLS_ASSERT(plan.t == VT_MAT && tensor_numel(plan.u.m) % 4 == 1);
  int n = (int)(tensor_numel(plan.u.m) / 4);
  MLS_ASSERT(n >= 1 && n <= MK_MAX);
  const double *pl = tensor_data(plan.u.m) + 1;
  for (int q = 0; q < n; q++) {
    int code = (int)pl[4 * q], a = (int)pl[4 * q + 1], b = (int)pl[4 * q + 2];
    if (code == MK_LEAF) MLS_ASSERT(a >= 1 && a < nin);
    else MLS_ASSERT(a >= 0 && a < q && (code == MK_NEG || code == MK_SQ || code == MK_LOG || code == MK_EXP || (b >= 0 && b < q)));
    if (code == MK_PROD) MLS_ASSERT((int)pl[4 * a] == MK_LEAF && (int)pl[4 * b] == MK_LEAF);
  }
  return n;
}

int op_masked_emit(double *pl, int *n, int code, int a, int b, int fl) {
  if (*n == MK_MAX) return -1;
  double *p = pl + 4 * *n;
  p[0] = code;
  p[1] = a;
  p[2] = b;
  p[3] = fl;
  return (*n)++;
}

static bool plain(Value v) { return v.t == VT_NUM || v.t == VT_BOOL || v.t == VT_MAT; }

void op_masked_forget(Interp *I) {
  if (I->mask_sparse) tensor_free_ref(I->mask_sparse);
  if (I->mask_dense) tensor_free_ref(I->mask_dense);
  I->mask_sparse = I->mask_dense = NULL;
  leaf_forget(I);
}

/* The sparse copy of dense W (a program flagged MK_DENSE_W, staging's rewrite), or NULL when W
** has more than MK_DENSE_W_MAX of its cells nonzero. The last one is kept with W (retained, so
** never changed in place while kept): a staged loop reads the same W at every iteration and
** converts it once. A kept W that nothing else holds any more is dropped at the next call. */
static const Tensor *dense_w_sparse(Interp *I, Tensor *W) {
  if (I->mask_dense == W) return I->mask_sparse;
  op_masked_forget(I);
  if (W->st->abstract || W->st->dev) return NULL;
  int64_t cells = tensor_rows(W) * tensor_cols(W);
  if (cells < 4096 || tensor_cols(W) > SP_MAX_COLS) return NULL;
  if (mem_over_limit((uint64_t)(tensor_rows(W) + 2) * sizeof(int64_t) + 64)) return NULL;   /* (the dense ops, then) */
  const double *d = tensor_data(W);
  Tensor *s = tensor_sparse_new(I, tensor_rows(W), tensor_cols(W), 1);   /* (rows counted into its row pointers) */
  tmp_push(I, val_mat(s));
  int64_t nnz = spk_count_dense(I->cpu, d, tensor_rows(W), tensor_cols(W), W->stride[0], W->stride[1], tensor_csr(s)->rowptr);
  bool keep = (double)nnz <= MK_DENSE_W_MAX * (double)cells;
  if (keep) {
    tensor_sparse_reserve(I, s, nnz);
    spk_from_dense(I->cpu, d, tensor_rows(W), tensor_cols(W), W->stride[0], W->stride[1], tensor_csr(s)->rowptr, tensor_csr(s));
  }
  tmp_pop(I, 1);                                  /* (its reference: kept, or dropped) */
  if (!keep) {
    tensor_free_ref(s);
    s = NULL;
  }
  W->refcount++;
  I->mask_dense = W;
  I->mask_sparse = s;
  return s;
}

bool op_masked_sparse(Interp *I, int nin, const Value *in, Value plan, Value *r) {
  int root = (int)tensor_data(plan.u.m)[0];
  bool dense_w = root & MK_DENSE_W;
  root &= ~MK_DENSE_W;
  if (I->mask_dense && I->mask_dense->refcount == 1 && I->mask_dense->st->refcount == 1) op_masked_forget(I);
  if (I->mask_leaf && I->mask_leaf->refcount == 1 && I->mask_leaf->st->refcount == 1) leaf_forget(I);   /* (nothing else holds it) */
  if (in[0].t != VT_MAT || !(in[0].u.m->st->sparse || dense_w) || I->sparse_mode == SPARSE_EXACT || I->nan_check) return false;
  for (int k = 0; k < nin; k++)
    if (!plain(in[k])) return false;                 /* a traced value: the ops record it */
  const Tensor *W = in[0].u.m;
  if (!W->st->sparse && !(W = dense_w_sparse(I, in[0].u.m))) return false;
  if (!tensor_is_sparse(W)) return false;
  int n = plan_len(plan, nin);
  const double *pl = tensor_data(plan.u.m) + 1;
  const SpCsr *p = tensor_csr(W);
  Walk w = { .I = I, .pat = p, .rows = p->rows, .cols = p->cols, .ok = true };
  MVal mv[MK_MAX];
  int mark = I->ntmp;
  struct Tape *st = I->stage;                      /* plain values: its transposes are no graph's */
  I->stage = NULL;                                 /* (a throw ends the staging, which restores it) */
  for (int q = 0; q < n && w.ok; q++) mv[q] = walk(&w, pl, in, mv, q);
  MVal e = w.ok && (int)pl[4 * (n - 1)] == MK_LEAF ? sample(&w, in[(int)pl[4 * (n - 1) + 1]]) : mv[n - 1];
  bool done = false;
  /* where W is not stored, W * e is 0 densely when e is finite there (the bounds show it), and
  ** W *0 e is 0 whatever e is: then the dense values are exactly these */
  if (w.ok && (root == MK_ROOT_ZW || (e.lo > -1e300 && e.hi < 1e300))) {
    Tensor *o = tensor_sparse_new(I, p->rows, p->cols, p->nnz);
    SpCsr *c = tensor_csr(o);
    const double *pv = p->val;
    double *cv = c->val;
    if (!e.is_const && root == MK_ROOT_MUL) {     /* (the common case: in parallel) */
      spk_mul_at(I->cpu, p, e.vals, c);
    } else {
      memcpy(c->rowptr, p->rowptr, (size_t)(p->rows + 1) * sizeof(int64_t));
      memcpy(c->col, p->col, (size_t)p->nnz * sizeof(int32_t));
      for (int64_t q = 0; q < p->nnz; q++) {
        double y = e.is_const ? e.c : e.vals[q];
        cv[q] = root == MK_ROOT_ZW ? cell(MK_MULZ, pv[q], y) : root == MK_ROOT_ZE ? cell(MK_MULZ, y, pv[q]) : pv[q] * y;
      }
    }
    c->nnz = p->nnz;
    *r = val_mat(o);
    I->kernel_runs++;
    done = true;
  }
  tmp_release_to(I, mark);
  while (w.nbufs > 0) tensor_scratch_free(I, w.bufs[--w.nbufs]);
  I->stage = st;
  return done;
}

static OpKind op_of(int code) {
  switch (code) {
  case MK_ADD: return OP_ADD;
  case MK_SUB: return OP_SUB;
  case MK_MULZ: return OP_MULZ;
  case MK_NEG: return OP_NEG;
  case MK_LOG: return OP_LOG;
  case MK_EXP: return OP_EXP;
  default: return OP_MUL;
  }
}

Value op_masked(Interp *I, int nin, const Value *in, Value plan, Span sp) {
  Value r;
  Span saved = I->call_span;
  I->call_span = sp;
  bool done = op_masked_sparse(I, nin, in, plan, &r);
  I->call_span = saved;
  if (done) return r;
  int n = plan_len(plan, nin), mark = I->ntmp;      /* the ops one by one, as written */
  int root = (int)tensor_data(plan.u.m)[0] & ~MK_DENSE_W;
  const double *pl = tensor_data(plan.u.m) + 1;
  Value v[MK_MAX];
  for (int q = 0; q < n; q++) {
    int code = (int)pl[4 * q], a = (int)pl[4 * q + 1], b = (int)pl[4 * q + 2], fl = (int)pl[4 * q + 3];
    switch (code) {
    case MK_LEAF: v[q] = in[a]; val_retain(v[q]); break;
    case MK_PROD: {
      Value x = v[a], y = v[b];
      if (fl & MK_TA) { x = op_transpose(I, x, sp); tmp_push(I, x); }
      if (fl & MK_TB) { y = op_transpose(I, y, sp); tmp_push(I, y); }
      v[q] = op_binary(I, OP_MATMUL, x, y, sp);
      break;
    }
    case MK_NEG: case MK_LOG: case MK_EXP: v[q] = op_unary(I, op_of(code), v[a], sp); break;
    case MK_SQ: v[q] = op_binary(I, OP_POW, v[a], val_num(2), sp); break;
    default: v[q] = op_binary(I, op_of(code), v[a], v[b], sp); break;
    }
    tmp_push(I, v[q]);
  }
  if (root == MK_ROOT_ZE) r = op_binary(I, OP_MULZ, v[n - 1], in[0], sp);
  else r = op_binary(I, root == MK_ROOT_ZW ? OP_MULZ : OP_MUL, in[0], v[n - 1], sp);
  tmp_release_to(I, mark);
  return r;
}

/* ---- the derivative at W's stored cells (eager grad's tape node, interp/masked.c) ---- */

/* A sparse matrix of the pattern holding vals (+1). */
static Tensor *at_pattern(Interp *I, const SpCsr *p, const double *vals) {
  Tensor *o = tensor_sparse_new(I, p->rows, p->cols, p->nnz);
  SpCsr *c = tensor_csr(o);
  memcpy(c->rowptr, p->rowptr, (size_t)(p->rows + 1) * sizeof(int64_t));
  memcpy(c->col, p->col, (size_t)p->nnz * sizeof(int32_t));
  memcpy(c->val, vals, (size_t)p->nnz * sizeof(double));
  c->nnz = p->nnz;
  return o;
}

/* slot (VT_NULL: none yet) += v (taken). */
static void add_to(Interp *I, Value *slot, Value v, Span sp) {
  if (slot->t == VT_NULL) { *slot = v; return; }
  tmp_push(I, v);
  Value s = op_binary(I, OP_ADD, *slot, v, sp);
  tmp_pop(I, 1);
  val_release(v);
  val_release(*slot);
  *slot = s;
}

/* The adjoint of input v read at the pattern (a number, a matrix of the result's shape, a row or
** a column broadcast along it), from its adjoint ga at the stored cells (+1). */
static Value leaf_adjoint(Interp *I, const SpCsr *p, Value v, const double *ga) {
  if (v.t == VT_NUM || v.t == VT_BOOL || tensor_numel(v.u.m) == 1) {
    double s = 0;
    for (int64_t q = 0; q < p->nnz; q++) s += ga[q];
    if (v.t != VT_MAT) return val_num(s);
    Tensor *o = tensor_new_host(I, 1, 1);
    tensor_data(o)[0] = s;
    return val_mat(o);
  }
  int64_t mr = tensor_rows(v.u.m), mc = tensor_cols(v.u.m);
  if (mr == p->rows && mc == p->cols) return val_mat(at_pattern(I, p, ga));
  Tensor *o = tensor_new_host(I, mr, mc);
  double *d = tensor_data(o);
  memset(d, 0, (size_t)(mr * mc) * sizeof(double));
  for (int64_t i = 0; i < p->rows; i++)
    for (int64_t q = p->rowptr[i]; q < p->rowptr[i + 1]; q++) d[mr == 1 ? p->col[q] : i] += ga[q];
  return val_mat(o);
}

bool op_masked_vjp(Interp *I, int nin, const Value *in, Value plan, Value g, Value *gin, Span sp) {
  for (int k = 0; k < nin; k++) gin[k] = val_null();
  if (in[0].t != VT_MAT || !tensor_is_sparse(in[0].u.m) || (int)tensor_data(plan.u.m)[0] != MK_ROOT_MUL) return false;
  for (int k = 0; k < nin; k++)
    if (!plain(in[k])) return false;
  int n = plan_len(plan, nin);
  const double *pl = tensor_data(plan.u.m) + 1;
  for (int q = 0; q < n; q++) {
    int code = (int)pl[4 * q], fl = (int)pl[4 * q + 3];
    if (code == MK_MULZ || (code == MK_PROD && fl)) return false;
  }
  const SpCsr *p = tensor_csr(in[0].u.m);
  Walk w = { .I = I, .pat = p, .rows = p->rows, .cols = p->cols, .ok = true };
  MVal fv[MK_MAX];
  double *ga[MK_MAX] = { NULL };
  int mark = I->ntmp;
  struct Tape *st = I->stage;
  I->stage = NULL;
  /* the values of every instruction at the pattern, each kept (the walk above overwrites) */
  bool cellwise[MK_MAX] = { false };             /* leaves read at the cells (not only multiplied) */
  for (int q = 0; q < n; q++) {
    int code = (int)pl[4 * q], a = (int)pl[4 * q + 1], b = (int)pl[4 * q + 2];
    if (code != MK_LEAF && code != MK_PROD) {
      cellwise[a] = true;
      if (code == MK_ADD || code == MK_SUB || code == MK_MUL) cellwise[b] = true;
    }
  }
  cellwise[n - 1] = true;
  for (int q = 0; q < n && w.ok; q++) {
    int code = (int)pl[4 * q], a = (int)pl[4 * q + 1], b = (int)pl[4 * q + 2];
    if (code == MK_LEAF) { fv[q] = cellwise[q] ? sample(&w, in[a]) : unknown; continue; }
    if (code == MK_PROD) { fv[q] = product(&w, in[(int)pl[4 * a + 1]], false, in[(int)pl[4 * b + 1]], false, sp); continue; }
    MVal x = fv[a], y = code == MK_NEG || code == MK_SQ || code == MK_LOG || code == MK_EXP ? fv[a] : fv[b];
    MVal r = unknown;
    if (x.is_const && y.is_const) {
      r.is_const = true;
      r.c = code == MK_NEG ? -x.c : code == MK_SQ ? x.c * x.c : code == MK_LOG ? log(x.c) : code == MK_EXP ? exp(x.c)
          : cell(code, x.c, y.c);
    } else if ((r.vals = new_vals(&w))) {
      for (int64_t q2 = 0; q2 < p->nnz; q2++) {
        double xv = x.is_const ? x.c : x.vals[q2], yv = y.is_const ? y.c : y.vals[q2];
        r.vals[q2] = code == MK_NEG ? -xv : code == MK_SQ ? xv * xv : code == MK_LOG ? log(xv) : code == MK_EXP ? exp(xv)
                   : cell(code, xv, yv);
      }
    }
    fv[q] = r;
  }
  for (int q = 0; q < n && w.ok; q++) ga[q] = NULL;
  /* the adjoint of e at the stored cells: W's value times g's (a number stands for a matrix filled with it) */
  double gc = 0;
  MVal gm = unknown;
  if (w.ok) {
    if (g.t == VT_NUM || g.t == VT_BOOL) gc = g.t == VT_NUM ? g.u.n : g.u.b;
    else gm = sample(&w, g);
  }
  if (w.ok && (ga[n - 1] = new_vals(&w)))
    for (int64_t q = 0; q < p->nnz; q++) ga[n - 1][q] = p->val[q] * (gm.vals ? gm.vals[q] : gm.is_const ? gm.c : gc);
#define GA(x) (ga[x] ? ga[x] : (ga[x] = new_vals(&w)) ? memset(ga[x], 0, (size_t)(p->nnz + 1) * sizeof(double)) : NULL)
#define V(m, q) ((m).is_const ? (m).c : (m).vals[q])
  for (int q = n - 1; q >= 0 && w.ok; q--) {
    double *gq = ga[q];
    if (!gq) continue;
    int code = (int)pl[4 * q], a = (int)pl[4 * q + 1], b = (int)pl[4 * q + 2];
    if (code == MK_LEAF) {
      add_to(I, &gin[a], leaf_adjoint(I, p, in[a], gq), sp);
      continue;
    }
    if (code == MK_PROD) {                    /* P = A %*% B at the pattern: S = its adjoint there */
      Value A = in[(int)pl[4 * a + 1]], B = in[(int)pl[4 * b + 1]];
      Value S = val_mat(at_pattern(I, p, gq));
      tmp_push(I, S);
      Value tb = op_transpose(I, B, sp);
      tmp_push(I, tb);
      add_to(I, &gin[(int)pl[4 * a + 1]], op_binary(I, OP_MATMUL, S, tb, sp), sp);   /* S %*% t(B) */
      Value ta = op_transpose(I, A, sp);
      tmp_push(I, ta);
      add_to(I, &gin[(int)pl[4 * b + 1]], op_binary(I, OP_MATMUL, ta, S, sp), sp);   /* t(A) %*% S */
      tmp_pop(I, 3);
      val_release(ta);
      val_release(tb);
      val_release(S);
      continue;
    }
    double *gx = GA(a), *gy = code == MK_ADD || code == MK_SUB || code == MK_MUL ? GA(b) : NULL;
    if (!gx || (!gy && (code == MK_ADD || code == MK_SUB || code == MK_MUL))) break;
    for (int64_t k = 0; k < p->nnz; k++) {
      double d = gq[k];
      switch (code) {
      case MK_ADD: gx[k] += d; gy[k] += d; break;
      case MK_SUB: gx[k] += d; gy[k] -= d; break;
      case MK_MUL: gx[k] += d * V(fv[b], k); gy[k] += d * V(fv[a], k); break;
      case MK_NEG: gx[k] -= d; break;
      case MK_SQ: gx[k] += 2 * V(fv[a], k) * d; break;
      case MK_LOG: gx[k] += d / V(fv[a], k); break;
      case MK_EXP: gx[k] += d * V(fv[q], k); break;
      default: break;
      }
    }
  }
#undef GA
#undef V
  bool ok = w.ok;
  tmp_release_to(I, mark);
  while (w.nbufs > 0) tensor_scratch_free(I, w.bufs[--w.nbufs]);
  I->stage = st;
  if (!ok)
    for (int k = 0; k < nin; k++) { val_release(gin[k]); gin[k] = val_null(); }
  return ok;
}
