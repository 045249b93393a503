/*
** index.c — the indexing op family on evaluated values (index.h): X[i, j] read, written and
** scattered, logical masks turned into positions, the bounds and shape checks with their
** errors. A layer below the evaluator (issue 26): eval.c evaluates the index expressions and
** calls these; autodiff runs them as the kernels of INDEX and SCATTER. Tensors follow STYLE.md
** §7.2: arguments borrowed, results owned, temporaries on the temp stack.
*/
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "backend/sparse.h"
#include "frame/frame.h"
#include "mem.h"
#include "ops.h"
#include "ops/index.h"
#include "ops/rules.h"
#include "ops/shapes_impl.h"
#include "print.h"
#include "state.h"
#include "tensor.h"

/* Stores v (taken) at place, releasing what was there (eval.c has the same). */
static void store(Value *place, Value v) {   /* takes v */
  Value old = *place;
  *place = v;
  val_release(old);
}

typedef struct Index {            /* one dimension's selection */
  bool all;                       /* empty: the whole dimension */
  bool scalar;                    /* given as one number */
  int64_t n;                      /* count selected */
  int64_t first;                  /* when scalar or a contiguous run */
  const double *v;                /* else the index values (1-based), as a vector */
  int64_t vstride;
} Index;

static l_noret index_oob(Interp *I, Span sp, double k, const Tensor *m, const char *dim) {
  char buf[64];
  fmt_num(buf, sizeof buf, k, 15);
  mls_throw(I, sp, "index %s out of bounds for %lldx%lld matrix (%s)", buf, (long long)tensor_rows(m),
            (long long)tensor_cols(m), dim);
}

/* Reads the index argument v for a dimension of size len. */
static void make_index(Interp *I, Index *ix, Value v, int64_t len, const Tensor *m, const char *dim, Span sp) {
  memset(ix, 0, sizeof *ix);
  if (v.t == VT_UNBOUND) { ix->all = true; ix->n = len; ix->first = 0; return; }
  if (v.t == VT_NUM || v.t == VT_BOOL) {
    double k = v.t == VT_NUM ? v.u.n : v.u.b;
    if (!(k >= 1 && k < (double)len + 1)) index_oob(I, sp, k, m, dim);
    ix->scalar = true;
    ix->n = 1;
    ix->first = (int64_t)k - 1;
    return;
  }
  if (v.t == VT_MAT) {
    const Tensor *t = v.u.m;
    if (tensor_rows(t) != 1 && tensor_cols(t) != 1) {
      char d[64];
      mls_throw(I, sp, "an index must be a number or a vector, got %s", val_describe(v, d, sizeof d));
    }
    ix->n = tensor_numel(t);
    ix->v = tensor_data(t);
    ix->vstride = tensor_rows(t) == 1 ? t->stride[1] : t->stride[0];
    for (int64_t i = 0; i < ix->n; i++) {
      if (interp_poll(I, i)) interp_check_interrupt(I, sp);
      double k = ix->v[i * ix->vstride];
      if (!(k >= 1 && k < (double)len + 1)) index_oob(I, sp, k, m, dim);
    }
    return;
  }
  char d[64];
  mls_throw(I, sp, "an index must be a number or a vector, got %s", val_describe(v, d, sizeof d));
}

static inline int64_t ix_at(const Index *ix, int64_t i) {
  if (ix->all || ix->scalar) return ix->first + i;
  return (int64_t)ix->v[i * ix->vstride] - 1;
}

static Value list_index(Interp *I, Value x, Value k, Span sp) {
  const List *l = x.u.l;
  int pos = -1;
  k = ad_concrete(I, k, sp, "a list index");
  if (k.t == VT_STR) {
    for (int i = 0; l->names && i < l->n; i++)
      if (l->names[i] && strcmp(l->names[i]->name, k.u.s->s) == 0) { pos = i; break; }
    if (pos < 0) return val_null();
  } else {
    double d = val_to_num(I, k, sp, "a list index");
    if (!(d >= 1 && d < (double)l->n + 1))
      mls_throw(I, sp, "index %g out of bounds for a list of %d", d, l->n);
    pos = (int)d - 1;
  }
  val_retain(l->items[pos]);
  return l->items[pos];
}

/* ---- logical masks (issue 13, docs/language.md "Logical masks") ----
** MLS has no logical vector type: a comparison gives a matrix of 0/1 that carries the tensor's
** `logical` flag. An index is a mask when it is a vector of only 0s and 1s, as long as the
** dimension it indexes, and is logical or holds a 0 (never a valid position). A mask is turned
** into the positions of its 1s before anything else, so grad and assignment see plain indices. */

/* 1 when v (concrete) is a mask for a dimension of length len; a logical vector of another
** length is an error (R would recycle it; a silent recycle hides a wrong shape). */
static bool is_mask(Interp *I, Value v, int64_t len, const char *dim, Span sp) {
  if (v.t != VT_MAT) return false;
  const Tensor *t = v.u.m;
  if (tensor_rows(t) != 1 && tensor_cols(t) != 1) return false;
  int64_t n = tensor_numel(t);
  bool zero = false;
  for (int64_t k = 0; k < n; k++) {
    if (interp_poll(I, k)) interp_check_interrupt(I, sp);
    double x = tensor_at(t, k);
    if (x == 0) zero = true;
    else if (x != 1) return false;
  }
  if (!t->logical && !zero) return false;
  if (n == 1 && len != 1) return false;     /* a 1x1 TRUE is position 1, as a boolean index is */
  if (n != len)
    mls_throw(I, sp, "a logical mask of length %lld for %lld %s (a mask needs one TRUE/FALSE per %s)", (long long)n,
              (long long)len, dim, dim[0] == 'r' ? "row" : dim[0] == 'c' ? "column" : "element");
  return true;
}

/* The 1-based positions of the nonzero elements of t (row-major) as a column vector (+1). */
static Value mask_positions(Interp *I, const Tensor *t, Span sp) {
  int64_t n = tensor_numel(t), cnt = 0;
  for (int64_t k = 0; k < n; k++) {
    if (interp_poll(I, k)) interp_check_interrupt(I, sp);
    cnt += tensor_at(t, k) != 0;
  }
  Tensor *o = tensor_new(I, cnt, 1);
  double *d = tensor_data(o);
  for (int64_t k = 0, j = 0; k < n; k++) {
    if (interp_poll(I, k)) { tensor_free_ref(o); interp_check_interrupt(I, sp); }
    if (tensor_at(t, k) != 0) d[j++] = (double)(k + 1);
  }
  return val_mat(o);
}

/* R's negative index: x[-k], x[-c(1, 3)] select every position of the dimension (1..len) but
** those. v: a number, or a vector whose elements are all <= 0 with at least one negative (a 0
** selects nothing, as in R; a -k beyond len drops nothing). The kept 1-based positions as a
** column vector (+1), or val_unbound() when v is not a negative index; positive and negative
** positions together are an error, as in R. */
static Value negative_positions(Interp *I, Value v, int64_t len, Span sp) {
  int64_t n = v.t == VT_NUM ? 1 : v.t == VT_MAT ? tensor_numel(v.u.m) : 0;
  if (n == 0 || (v.t == VT_MAT && tensor_rows(v.u.m) != 1 && tensor_cols(v.u.m) != 1)) return val_unbound();
  bool neg = false, pos = false;
  for (int64_t k = 0; k < n; k++) {
    double x = v.t == VT_NUM ? v.u.n : tensor_at(v.u.m, k);
    neg |= x < 0;
    pos |= x > 0 || x != x;
  }
  if (!neg) return val_unbound();
  if (pos) mls_throw(I, sp, "only 0's may be mixed with negative subscripts (a negative index drops those positions)");
  int64_t words = (len + 63) / 64, kept = len;
  uint64_t *drop = tensor_scratch(I, (size_t)(words > 0 ? words : 1) * sizeof(uint64_t));
  memset(drop, 0, (size_t)(words > 0 ? words : 1) * sizeof(uint64_t));
  for (int64_t k = 0; k < n; k++) {
    double x = -(v.t == VT_NUM ? v.u.n : tensor_at(v.u.m, k));
    if (!(x >= 1 && x < (double)len + 1)) continue;
    int64_t p = (int64_t)x - 1;
    if (!(drop[p / 64] >> (p % 64) & 1)) kept--;
    drop[p / 64] |= (uint64_t)1 << (p % 64);
  }
  Tensor *o = tensor_new(I, kept, 1);
  double *d = tensor_data(o);
  for (int64_t p = 0, j = 0; p < len; p++)
    if (!(drop[p / 64] >> (p % 64) & 1)) d[j++] = (double)(p + 1);
  tensor_scratch_free(I, drop);
  return val_mat(o);
}

/* Rewrites the mask indices of x[iv...] as positions: out[] gets the new indices (positions
** pushed on the temp stack) and *whole is set when X[M] is a matrix X with a mask M of its own
** shape (then x must be read as the column of its elements, row-major). False: no mask. */
static bool index_masks(Interp *I, Value x, int nix, const Value *iv, unsigned nomask, Value *out, bool *whole, Span sp) {
  Value xp = ad_primal(x);
  *whole = false;
  if (nix < 1 || nix > 2 || (xp.t != VT_MAT && xp.t != VT_NUM && xp.t != VT_BOOL)) return false;
  int64_t rows = xp.t == VT_MAT ? tensor_rows(xp.u.m) : 1, cols = xp.t == VT_MAT ? tensor_cols(xp.u.m) : 1;
  bool any = false;
  for (int i = 0; i < nix; i++) {
    out[i] = iv[i];
    if (nomask & (1u << i)) continue;                   /* a fixed-length range: never a mask */
    /* a staged number is one position, never a mask (a logical mask selects a count known only
    ** from its values: then the staging is dynamic) */
    if (iv[i].t == VT_BOX && ad_primal(iv[i]).t == VT_NUM) continue;
    Value v = iv[i].t == VT_BOX ? ad_concrete(I, iv[i], sp, "an index") : iv[i];   /* staged: dynamic */
    if (v.t == VT_BOOL && !v.u.b) {                      /* x[x > 10] of a number: nothing */
      out[i] = val_mat(tensor_new(I, 0, 1));
      tmp_push(I, out[i]);
      any = true;
      continue;
    }
    if (v.t == VT_NUM || v.t == VT_MAT) {               /* x[-1], X[, -c(2, 3)]: the others */
      int64_t len = nix == 1 ? rows * cols : (i == 0 ? rows : cols);
      Value np = negative_positions(I, v, len, sp);
      if (np.t != VT_UNBOUND) {
        out[i] = np;
        tmp_push(I, out[i]);
        any = true;
        continue;
      }
    }
    if (v.t != VT_MAT) continue;
    if (nix == 1 && rows != 1 && cols != 1) {          /* X[M]: M of X's shape */
      const Tensor *t = v.u.m;
      if (tensor_rows(t) != rows || tensor_cols(t) != cols) continue;
      bool ok = true, zero = false;
      for (int64_t k = 0; k < rows * cols && ok; k++) {
        if (interp_poll(I, k)) interp_check_interrupt(I, sp);
        double e = tensor_at(t, k);
        zero |= e == 0;
        ok = e == 0 || e == 1;
      }
      if (!ok || (!t->logical && !zero)) continue;
      *whole = true;
    } else {
      int64_t len = nix == 1 ? (rows == 1 ? cols : rows) : (i == 0 ? rows : cols);
      const char *dim = nix == 1 ? "elements" : i == 0 ? "rows" : "columns";
      if (!is_mask(I, v, len, dim, sp)) continue;
    }
    out[i] = mask_positions(I, v.u.m, sp);
    tmp_push(I, out[i]);
    any = true;
  }
  return any;
}

/* Whether the selection is consecutive positions (all, one, or a run a:b). */
static bool index_run(const Index *ix) {
  for (int64_t i = 1; i < ix->n; i++)
    if (ix_at(ix, i) != ix_at(ix, 0) + i) return false;
  return true;
}

/* The 0-based positions of a selection as a packed host vector (on the temp stack). */
static Tensor *index_positions(Interp *I, const Index *ix) {
  Tensor *p = tensor_new_host(I, ix->n, 1);
  tmp_push(I, val_mat(p));
  double *d = tensor_data(p);
  for (int64_t i = 0; i < ix->n; i++) {
    if (interp_poll(I, i)) interp_check_interrupt(I, I->call_span);
    d[i] = (double)ix_at(ix, i);
  }
  return p;
}

/* True when an index value is staged (a stage records the read with the index as its input). */
static bool staged_index(int nix, const Value *iv) {
  for (int k = 0; k < nix && k < 2; k++)
    for (Value v = iv[k]; v.t == VT_BOX; v = v.u.box->v)
      if (v.u.box->tape->active && v.u.box->tape->graph) return true;
  return false;
}

/* x[iv...] (index_read); ranges: index_read_ranges's; noread: x's elements are not read, the
** result is zeros of the shape index_read gives (tensor_abstract), with its errors
** (index_read_abstract). */
/* m[ri, ci] of a sparse m: the selected rows' entries only (backend/sparse.h), the result in
** the format the rule picks. */
static Value read_sparse(Interp *I, const Tensor *m, const Index *ri, const Index *ci) {
  int mark = I->ntmp;
  int64_t *rp = tensor_scratch(I, (size_t)(ri->n + 1) * sizeof(int64_t));
  for (int64_t i = 0; i < ri->n; i++) rp[i] = ix_at(ri, i);
  int64_t *cp = NULL;
  if (!ci->all) {
    cp = tensor_scratch(I, (size_t)(ci->n + 1) * sizeof(int64_t));
    for (int64_t j = 0; j < ci->n; j++) cp[j] = ix_at(ci, j);
  }
  Tensor *o = tensor_sparse_new(I, ri->n, ci->n, 1);
  tmp_push(I, val_mat(o));
  int64_t n = spk_select_count(tensor_csr(m), rp, ri->n, cp, ci->n, tensor_csr(o)->rowptr);
  if (n < 0) mem_oom(0);
  tensor_sparse_reserve(I, o, n);
  if (spk_select(tensor_csr(m), rp, ri->n, cp, ci->n, tensor_csr(o)) != 0) mem_oom(0);
  o->refcount++;
  tmp_release_to(I, mark);                  /* o's tmp reference; the scratch (mls_defer'd) */
  if (cp) tensor_scratch_free(I, cp);
  tensor_scratch_free(I, rp);
  return val_mat(tensor_auto_format(I, o));
}

static Value read_at(Interp *I, Value x, int nix, const Value *ivin, unsigned ranges, Span sp, bool noread) {
  Value conv[2];
  bool whole;
  int mark = I->ntmp;
  if (index_masks(I, x, nix, ivin, ranges, conv, &whole, sp)) {
    Tensor col;                                        /* noread: X's shape as a column, no data */
    if (whole && noread) {
      col = *ad_primal(x).u.m;
      col.shape[0] = tensor_numel(&col);
      col.shape[1] = 1;
      col.stride[0] = col.stride[1] = 1;
      x = val_mat(&col);
    } else if (whole) {                                /* X[M]: the column of X's elements */
      Value xp = ad_primal(x);
      x = op_reshape(I, x, tensor_numel(xp.u.m), 1, sp);
      tmp_push(I, x);
    }
    Value r = read_at(I, x, nix, conv, 0, sp, noread);
    tmp_release_to(I, mark);
    return r;
  }
  if (x.t == VT_BOX || (x.t == VT_MAT && staged_index(nix, ivin))) return ad_index(I, x, nix, ivin, sp);
  Value iv[2] = { val_unbound(), val_unbound() };
  for (int i = 0; i < nix && i < 2; i++)
    iv[i] = ivin[i].t == VT_NULL ? val_unbound() : ad_concrete(I, ivin[i], sp, "an index");
  Value r;
  if (x.t == VT_FRAME) return frame_index(I, x.u.fr, nix, iv, sp);
  if (x.t == VT_LIST) {
    if (nix != 1 || iv[0].t == VT_UNBOUND) mls_throw(I, sp, "a list takes one index: L[k] or L[\"name\"]");
    return list_index(I, x, iv[0], sp);
  }
  Tensor one;
  Storage onest;
  double oneval;
  const Tensor *m;
  if (x.t == VT_MAT) m = x.u.m;
  else if (x.t == VT_NUM || x.t == VT_BOOL) {          /* a number is a 1x1 matrix here */
    oneval = x.t == VT_NUM ? x.u.n : x.u.b;
    memset(&one, 0, sizeof one);
    memset(&onest, 0, sizeof onest);           /* a host storage (dev false) */
    onest.data = &oneval;
    one.st = &onest;
    one.shape[0] = one.shape[1] = 1;
    one.stride[0] = one.stride[1] = 1;
    m = &one;
  } else {
    char d[64];
    mls_throw(I, sp, "cannot index %s", val_describe(x, d, sizeof d));
  }
  Index ri, ci;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m);
  if (nix == 1) {                                      /* v[k] on a vector */
    if (rows != 1 && cols != 1)
      mls_throw(I, sp, "a single index needs a row or column vector, got a %lldx%lld matrix (use X[i, j])",
                (long long)rows, (long long)cols);
    if (rows == 1) {
      make_index(I, &ri, val_unbound(), 1, m, "rows", sp);
      make_index(I, &ci, iv[0], cols, m, "columns", sp);
    } else {
      make_index(I, &ri, iv[0], rows, m, "rows", sp);
      make_index(I, &ci, val_unbound(), 1, m, "columns", sp);
    }
    ri.scalar = ri.scalar || rows == 1;
    ci.scalar = ci.scalar || cols == 1;
  } else {
    make_index(I, &ri, iv[0], rows, m, "rows", sp);
    make_index(I, &ci, iv[1], cols, m, "columns", sp);
  }
  if (ri.scalar && ci.scalar && ri.n == 1 && ci.n == 1 && (nix == 2 ? (!ri.all && !ci.all) : true)) {
    r = val_num(noread ? 0 : tensor_get1(m, ix_at(&ri, 0), ix_at(&ci, 0)));   /* (a GPU's element: copied, not migrated) */
  } else if (noread) {
    r = val_mat(tensor_abstract(I, ri.n, ci.n));
  } else if (x.t == VT_MAT && tensor_is_sparse(m)) {
    r = read_sparse(I, m, &ri, &ci);
  } else {
    if (ci.all && m->stride[1] == 1 && x.t == VT_MAT && ri.n > 0 && ri.n * ci.n > TENSOR_SMALL) {
      if (index_run(&ri)) return val_mat(tensor_view_rows(x.u.m, ix_at(&ri, 0), ri.n));   /* X[a:b, ], X[i, ]: a view */
    }
    if (m->st->dev && ri.n > 0 && ci.n > 0) {          /* a GPU matrix: indexed there */
      bool rrun = index_run(&ri), crun = index_run(&ci);
      Tensor *o = rrun && crun ? tensor_block_on_device(I, m, ix_at(&ri, 0), ri.n, ix_at(&ci, 0), ci.n, sp)
                               : tensor_gather_on_device(I, m, rrun ? NULL : index_positions(I, &ri), ri.n, ix_at(&ri, 0),
                                                         crun ? NULL : index_positions(I, &ci), ci.n, ix_at(&ci, 0), sp);
      tmp_release_to(I, mark);                         /* the positions */
      if (o) return val_mat(o);
    }
    Tensor *o = tensor_new(I, ri.n, ci.n);
    double *d = tensor_data(o);
    bool run = (ci.all || ci.scalar) && m->stride[1] == 1;      /* each row: one contiguous run */
    const double *md = tensor_data(m);
    int64_t blk = ci.n >= 65536 ? 1 : 65536 / (ci.n > 0 ? ci.n : 1);   /* rows between polls */
    for (int64_t i0 = 0; i0 < ri.n; i0 += blk) {
      if (I->interrupted) { tensor_free_ref(o); interp_check_interrupt(I, sp); }
      int64_t i1 = ri.n - i0 > blk ? i0 + blk : ri.n;
      if (run && ci.n == 1)                      /* a column's elements */
        for (int64_t i = i0; i < i1; i++) d[i] = md[ix_at(&ri, i) * m->stride[0] + ci.first];
      else
        for (int64_t i = i0; i < i1; i++) {
          int64_t si = ix_at(&ri, i);
          if (run) memcpy(d + i * ci.n, md + si * m->stride[0] + ci.first, (size_t)ci.n * sizeof(double));
          else for (int64_t j = 0; j < ci.n; j++) d[i * ci.n + j] = tensor_get(m, si, ix_at(&ci, j));
        }
    }
    r = val_mat(o);
  }
  return r;
}

bool index_permute_rows(Interp *I, Tensor *x, Value perm, Span sp) {
  if (perm.t != VT_MAT || !tensor_is_unique(x) || !tensor_is_contiguous(x) || x->st->sparse || x->st->dev ||
      x->st->abstract || x->st->be != I->cpu)
    return false;
  Tensor *p = perm.u.m;
  int64_t n = tensor_rows(x), cols = tensor_cols(x);
  if (p->logical || p->st->sparse || p->st->abstract || p->st->dev || tensor_numel(p) != n || (tensor_rows(p) != 1 && tensor_cols(p) != 1) ||
      n < 2 || cols < 1)
    return false;
  uint8_t *seen = tensor_scratch(I, (size_t)n + (size_t)cols * sizeof(double));
  double *row = (double *)(seen + n);        /* (unaligned use through memcpy only) */
  memset(seen, 0, (size_t)n);
  int64_t *src = tensor_scratch(I, (size_t)n * sizeof(int64_t));
  bool ok = true;
  for (int64_t i = 0; i < n && ok; i++) {   /* the positions 1..n, each once: a permutation */
    double v = tensor_rows(p) == 1 ? tensor_get1(p, 0, i) : tensor_get1(p, i, 0);
    ok = v >= 1 && v <= (double)n && v == floor(v) && !seen[(int64_t)v - 1];
    if (ok) { seen[(int64_t)v - 1] = 1; src[i] = (int64_t)v - 1; }
  }
  if (ok) {                                  /* out[i] = in[src[i]], along each cycle */
    double *d = tensor_data(x);
    size_t rb = (size_t)cols * sizeof(double);
    memset(seen, 0, (size_t)n);
    for (int64_t s0 = 0; s0 < n; s0++) {
      if (seen[s0] || src[s0] == s0) continue;
      memcpy(row, d + s0 * cols, rb);
      int64_t j = s0;
      for (;;) {
        seen[j] = 1;
        int64_t k = src[j];
        if (k == s0) { memcpy(d + j * cols, row, rb); break; }
        memcpy(d + j * cols, d + k * cols, rb);
        j = k;
      }
    }
    x->logical = false;
  }
  tensor_scratch_free(I, src);
  tensor_scratch_free(I, seen);
  (void)sp;
  return ok;
}

/* x[iv...] for an evaluated x and indices (VT_UNBOUND or VT_NULL = the whole dimension).
** Used by the evaluator and, as the op INDEX, by grad. Arguments borrowed; result owned. */
Value index_read(Interp *I, Value x, int nix, const Value *ivin, Span sp) { return read_at(I, x, nix, ivin, 0, sp, false); }

Value index_read_ranges(Interp *I, Value x, int nix, const Value *ivin, unsigned ranges, Span sp) {
  return read_at(I, x, nix, ivin, ranges, sp, false);
}

Value index_read_abstract(Interp *I, Value x, int nix, const Value *ivin, Span sp) {
  return read_at(I, x, nix, ivin, 0, sp, true);
}

/* X[.., a:b, ..]: the index a:b of position i (of nix) checked against X's shape from its ends,
** before it is built, with the error the built one would give (its first value out of bounds):
** X[1, 1:3e9] must not make a 3e9-element vector first. */
void index_range_precheck(Interp *I, Value x, int nix, int i, Value a, Value b, Span sp) {
  x = ad_primal(x);
  a = ad_primal(a);
  b = ad_primal(b);
  if (x.t != VT_MAT || a.t != VT_NUM || b.t != VT_NUM || nix > 2) return;
  const Tensor *m = x.u.m;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m), len;
  const char *dim;
  if (nix == 1) {
    if (rows != 1 && cols != 1)
      mls_throw(I, sp, "a single index needs a row or column vector, got a %lldx%lld matrix (use X[i, j])",
                (long long)rows, (long long)cols);
    len = rows == 1 ? cols : rows;
    dim = rows == 1 ? "columns" : "rows";
  } else {
    len = i == 0 ? rows : cols;
    dim = i == 0 ? "rows" : "columns";
  }
  double from = a.u.n, to = b.u.n;
  if (!isfinite(from) || !isfinite(to) || fabs(to - from) >= 1e15) return;   /* op_range reports these */
  if ((from < 0 && to > 0) || (from > 0 && to < 0))     /* (not built first: X[3:-2e9]) */
    mls_throw(I, sp, "only 0's may be mixed with negative subscripts (a negative index drops those positions)");
  if (from < 0 || to < 0) return;             /* negative positions (index_masks: R's x[-2:-1]) */
  if (!(from >= 1 && from < (double)len + 1)) index_oob(I, sp, from, m, dim);
  double bad = to >= from ? from + ceil((double)len + 1 - from) : from - (floor(from - 1) + 1);
  if (to >= from ? bad <= to + 1e-10 : bad >= to - 1e-10) index_oob(I, sp, bad, m, dim);
}

/* A selection's positions, for scatter and the traced assignment: ri, ci as make_index builds
** them for a rows x cols matrix (one index: into a row or a column vector). */
static void selection(Interp *I, int64_t rows, int64_t cols, int nix, const Value *ivin, Index *ri, Index *ci, Span sp) {
  Tensor shape;
  memset(&shape, 0, sizeof shape);
  shape.shape[0] = rows;
  shape.shape[1] = cols;
  Value iv[2] = { val_unbound(), val_unbound() };
  for (int i = 0; i < nix && i < 2; i++) iv[i] = ivin[i].t == VT_NULL ? val_unbound() : ad_concrete(I, ivin[i], sp, "an index");
  if (nix == 1 && rows == 1) { make_index(I, ri, val_unbound(), 1, &shape, "rows", sp); make_index(I, ci, iv[0], cols, &shape, "columns", sp); }
  else if (nix == 1) { make_index(I, ri, iv[0], rows, &shape, "rows", sp); make_index(I, ci, val_unbound(), 1, &shape, "columns", sp); }
  else { make_index(I, ri, iv[0], rows, &shape, "rows", sp); make_index(I, ci, iv[1], cols, &shape, "columns", sp); }
}

static bool last_occurrences(Interp *I, const Index *ix, int64_t len, double *flag);

Value index_scatter_abstract(Interp *I, int64_t rows, int64_t cols, int nix, const Value *ivin, Span sp) {
  Index ri, ci;
  selection(I, rows, cols, nix, ivin, &ri, &ci, sp);
  return val_mat(tensor_abstract(I, rows, cols));
}

/* zeros(rows, cols) with v added at [iv...]: v a number (added to every selected cell) or a
** matrix of the selection's shape. The op SCATTER, the adjoint of INDEX. Where every selected
** cell is distinct each is written, not added to a zero: 0 + -0 is 0, and a matrix literal or
** an assignment traced by grad or staged must keep a -0 as the eager one does (fuzz_diff). */
Value index_scatter(Interp *I, Value v, int64_t rows, int64_t cols, int nix, const Value *ivin, Span sp) {
  v = ad_primal(v);
  Index ri, ci;
  selection(I, rows, cols, nix, ivin, &ri, &ci, sp);
  bool sum = last_occurrences(I, &ri, rows, NULL) || last_occurrences(I, &ci, cols, NULL);
  if (tensor_prefer_sparse(I, rows, cols, ri.n * ci.n)) {   /* few cells written: sparse */
    int64_t n = ri.n * ci.n, k = 0;
    int64_t *rr = tensor_scratch(I, (size_t)(n + 1) * sizeof(int64_t)), *cc = tensor_scratch(I, (size_t)(n + 1) * sizeof(int64_t));
    double *vv = tensor_scratch(I, (size_t)(n + 1) * sizeof(double));
    for (int64_t i = 0; i < ri.n; i++)
      for (int64_t j = 0; j < ci.n; j++, k++) {
        rr[k] = ix_at(&ri, i);
        cc[k] = ix_at(&ci, j);
        vv[k] = v.t == VT_MAT ? tensor_at(v.u.m, k % tensor_numel(v.u.m)) : v.t == VT_NUM ? v.u.n : v.u.b;
      }
    Tensor *o = tensor_sparse_from_coo(I, rows, cols, n, rr, cc, vv, sum);   /* (sums in the loop's order) */
    tensor_scratch_free(I, vv);
    tensor_scratch_free(I, cc);
    tensor_scratch_free(I, rr);
    return val_mat(tensor_auto_format(I, o));
  }
  Tensor *o = tensor_zeros(I, rows, cols);
  double *d = tensor_data(o);
  int64_t k = 0, budget = 0;
  for (int64_t i = 0; i < ri.n; i++) {
    if (interp_tick(I, &budget, ci.n)) { tensor_free_ref(o); interp_check_interrupt(I, sp); }
    for (int64_t j = 0; j < ci.n; j++, k++) {
      double x = v.t == VT_MAT ? tensor_at(v.u.m, k % tensor_numel(v.u.m)) : v.t == VT_NUM ? v.u.n : v.u.b;
      double *c = &d[ix_at(&ri, i) * cols + ix_at(&ci, j)];
      *c = sum ? *c + x : x;
    }
  }
  return val_mat(o);
}

/* ---- assignment ---- */
/* The checks of m[iv...] = rhs, which the traced path (grad, staging) makes on the values too:
** a single index needs a vector, the positions are in bounds, and rhs is a number or a matrix
** of the selection's shape (a vector of as many elements, for a single index). Sets the
** selection (ri, ci) and what is written: src, or fill when src is NULL. */
static void assign_checks(Interp *I, const Tensor *m, uint32_t nix, const Value *iv, Value rhs, Span sp, Index *rip, Index *cip,
                          const Tensor **srcp, double *fillp) {
  int64_t rows = tensor_rows(m), cols = tensor_cols(m);
  Index ri, ci;
  if (nix == 1) {
    if (rows != 1 && cols != 1)
      mls_throw(I, sp, "a single index needs a row or column vector, got a %lldx%lld matrix (use X[i, j])",
                (long long)rows, (long long)cols);
    if (rows == 1) { make_index(I, &ri, val_unbound(), 1, m, "rows", sp); make_index(I, &ci, iv[0], cols, m, "columns", sp); }
    else { make_index(I, &ri, iv[0], rows, m, "rows", sp); make_index(I, &ci, val_unbound(), 1, m, "columns", sp); }
  } else {
    make_index(I, &ri, iv[0], rows, m, "rows", sp);
    make_index(I, &ci, iv[1], cols, m, "columns", sp);
  }
  const Tensor *src = NULL;
  double fill = 0;
  if (rhs.t == VT_NUM || rhs.t == VT_BOOL) fill = rhs.t == VT_NUM ? rhs.u.n : rhs.u.b;
  else if (rhs.t == VT_MAT && tensor_numel(rhs.u.m) == 1) fill = tensor_data(rhs.u.m)[0];
  else if (rhs.t == VT_MAT) {
    src = rhs.u.m;
    bool same = tensor_rows(src) == ri.n && tensor_cols(src) == ci.n;
    bool vec = (ri.n == 1 || ci.n == 1) && tensor_numel(src) == ri.n * ci.n &&
               (tensor_rows(src) == 1 || tensor_cols(src) == 1);
    if (!same && !(nix == 1 && vec))
      mls_throw(I, sp, "cannot assign a %lldx%lld matrix into a %lldx%lld selection", (long long)tensor_rows(src),
                (long long)tensor_cols(src), (long long)ri.n, (long long)ci.n);
  } else {
    char d[64];
    mls_throw(I, sp, "cannot assign %s into a matrix", val_describe(rhs, d, sizeof d));
  }
  *rip = ri;
  *cip = ci;
  *srcp = src;
  *fillp = fill;
}

/* flag[i] = 1 when position i of the selection is the last occurrence of its value (len: the
** dimension's extent). Returns whether any value occurs twice; with flag NULL, only that. */
static bool last_occurrences(Interp *I, const Index *ix, int64_t len, double *flag) {
  if (index_run(ix)) {                              /* ranges never repeat a position */
    for (int64_t i = 0; flag && i < ix->n; i++) flag[i] = 1;
    return false;
  }
  Tensor *seen = tensor_new_host(I, len, 1);
  tmp_push(I, val_mat(seen));
  double *sd = tensor_data(seen);
  memset(sd, 0, (size_t)len * sizeof(double));
  bool dup = false;
  for (int64_t i = ix->n - 1; i >= 0 && (flag || !dup); i--) {   /* backwards: the first met is the last */
    if (interp_poll(I, i)) interp_check_interrupt(I, I->call_span);   /* (seen is on the temp stack) */
    double *c = &sd[ix_at(ix, i)];
    if (flag) flag[i] = *c == 0;
    dup = dup || *c != 0;
    *c = 1;
  }
  tmp_pop(I, 1);
  tensor_free_ref(seen);
  return dup;
}

/* The 1-based positions i where flag[i] is 1 (keep), and the 1-based matrix positions they
** select (at), as host columns pushed on the temporaries. */
static void kept(Interp *I, const Index *ix, const double *flag, Value *keep, Value *at) {
  int64_t n = 0;
  for (int64_t i = 0; i < ix->n; i++) n += flag[i] != 0;
  Tensor *k = tensor_new_host(I, n, 1);
  tmp_push(I, val_mat(k));
  Tensor *a = tensor_new_host(I, n, 1);
  tmp_push(I, val_mat(a));
  for (int64_t i = 0, m = 0; i < ix->n; i++)
    if (interp_poll(I, i)) interp_check_interrupt(I, I->call_span);
    else if (flag[i] != 0) {
      tensor_data(k)[m] = (double)(i + 1);
      tensor_data(a)[m++] = (double)(ix_at(ix, i) + 1);
    }
  *keep = val_mat(k);
  *at = val_mat(a);
}

/* For the traced X[iv...] = v (autodiff.c ad_set_index) where the eager loop writes a cell
** twice and the last write wins: false when every selected cell is distinct. Else the
** selection reduced to its last writes: the cell (ri[i], ci[j]) is written again later
** (row-major order) exactly when ri[i] comes again after i, or ci[j] after j, so the last
** writes are the rows keep[0] x the columns keep[1] of the selection (1-based, to index v
** with), writing X's rows at[0] and columns at[1]. All four are host columns pushed on the
** temporaries; *selr x *selc is the selection's shape. */
bool index_last_writes(Interp *I, int64_t rows, int64_t cols, int nix, const Value *ivin, Value keep[2], Value at[2],
                       int64_t *selr, int64_t *selc, Span sp) {
  Index ri, ci;
  selection(I, rows, cols, nix, ivin, &ri, &ci, sp);
  Tensor *lr = tensor_new_host(I, ri.n, 1), *lc = tensor_new_host(I, ci.n, 1);
  tmp_push(I, val_mat(lr));
  tmp_push(I, val_mat(lc));
  bool dup = last_occurrences(I, &ri, rows, tensor_data(lr));
  dup = last_occurrences(I, &ci, cols, tensor_data(lc)) || dup;
  if (dup) {
    kept(I, &ri, tensor_data(lr), &keep[0], &at[0]);
    kept(I, &ci, tensor_data(lc), &keep[1], &at[1]);
  }
  *selr = ri.n;
  *selc = ci.n;
  return dup;
}

/* Writes rhs into the selection of matrix *place (copy-on-write): see index.h. */
typedef struct ColPos { int64_t col, j; } ColPos;
static int colpos_cmp(const void *a, const void *b) {
  const ColPos *x = a, *y = b;
  return x->col != y->col ? (x->col < y->col ? -1 : 1) : (x->j < y->j ? -1 : x->j > y->j);
}

/* m[ri, ci] = src (or fill) on a sparse m, into a new sparse matrix stored at place: each selected
** row is its entries outside the selected columns merged with the written values (a 0 written
** removes the entry), the other rows copied. Only where densifying does not pay: the dense matrix
** takes more than 256 MiB, or the write covers at least 1/16 of the entries (a block); a small
** matrix written cell by cell turns dense once and is then written in place. false (nothing
** done) then, and when a position is selected twice (the dense loop's order decides). */
static bool assign_sparse(Interp *I, Value *place, const Tensor *m, const Index *ri, const Index *ci, const Tensor *src,
                          double fill) {
  const SpCsr *a = tensor_csr(m);
  int64_t rows = a->rows, cols = a->cols, cells = ri->n * ci->n;
  if ((double)rows * (double)cols * 8 <= 256.0 * 1024 * 1024 && cells * 16 < a->nnz) return false;
  int mark = I->ntmp;
  ColPos *cp = tensor_scratch(I, (size_t)(ci->n + 1) * sizeof *cp);   /* the columns, sorted */
  for (int64_t j = 0; j < ci->n; j++) cp[j] = (ColPos){ ix_at(ci, j), j };
  qsort(cp, (size_t)ci->n, sizeof *cp, colpos_cmp);
  int64_t *rsel = tensor_scratch(I, (size_t)(rows + 1) * sizeof *rsel);   /* target row -> src row, or -1 */
  for (int64_t r = 0; r < rows; r++) rsel[r] = -1;
  bool dup = false;
  for (int64_t j = 1; j < ci->n; j++) dup |= cp[j].col == cp[j - 1].col;
  for (int64_t i = 0; i < ri->n && !dup; i++) {
    int64_t r = ix_at(ri, i);
    dup = rsel[r] >= 0;
    rsel[r] = i;
  }
  if (dup) {
    tensor_scratch_free(I, rsel);
    tensor_scratch_free(I, cp);
    return false;
  }
  int64_t sc = src ? tensor_cols(src) : 0;
  bool shaped = src && tensor_rows(src) == ri->n && sc == ci->n;
#define NEWVAL(i, j) (src ? (shaped ? tensor_get1(src, (i), (j)) : tensor_at(src, (i) * ci->n + (j))) : fill)
#define KEEP(x) ((x) != 0 || signbit(x) || (x) != (x))
  int64_t nnz = 0;                                     /* the count, then the fill */
  for (int pass = 0; pass < 2; pass++) {
    SpCsr *o = pass ? tensor_csr(place->u.m) : NULL;
    int64_t w = 0;
    for (int64_t r = 0; r < rows; r++) {
      if (o) o->rowptr[r] = w;
      int64_t q = a->rowptr[r], qe = a->rowptr[r + 1], i = rsel[r];
      if (i < 0) {                                     /* not written: copied */
        if (o) {
          memcpy(o->col + w, a->col + q, (size_t)(qe - q) * sizeof(int32_t));
          memcpy(o->val + w, a->val + q, (size_t)(qe - q) * sizeof(double));
        }
        w += qe - q;
        continue;
      }
      for (int64_t t = 0; q < qe || t < ci->n;) {     /* merge: old entries, the written columns */
        bool take_new = t < ci->n && (q >= qe || cp[t].col <= a->col[q]);
        if (take_new) {
          if (q < qe && a->col[q] == cp[t].col) q++;   /* overwritten */
          double x = NEWVAL(i, cp[t].j);
          if (KEEP(x)) { if (o) { o->col[w] = (int32_t)cp[t].col; o->val[w] = x; } w++; }
          t++;
        } else {
          if (o) { o->col[w] = a->col[q]; o->val[w] = a->val[q]; }
          w++;
          q++;
        }
      }
    }
    if (o) { o->rowptr[rows] = w; o->nnz = w; }
    else {
      nnz = w;
      Tensor *nt = tensor_sparse_new(I, rows, cols, nnz);
      tmp_push(I, val_mat(nt));
      nt->logical = false;
      Value keep_old = *place;                         /* m is read until the fill is done */
      val_retain(keep_old);
      tmp_push(I, keep_old);
      store(place, val_mat(nt));
      nt->refcount++;
      a = tensor_csr(keep_old.u.m);
    }
  }
#undef NEWVAL
#undef KEEP
  tmp_release_to(I, mark);
  tensor_scratch_free(I, rsel);
  tensor_scratch_free(I, cp);
  Tensor *t = place->u.m;                              /* in the rule's format (a throw there */
  t->refcount++;                                       /* leaves place as it is) */
  store(place, val_mat(tensor_auto_format(I, t)));
  return true;
}

void index_assign(Interp *I, Value *place, uint32_t nix, Value *iv, Value rhs, Span sp) {
  if (place->t == VT_FRAME) {                         /* F[i, j] = v (frame/frame.c) */
    /* a frame keeps numbers, not grad's boxes: a traced value's derivative would be 0 */
    if (ad_any_grad_deep(1, &rhs))
      mls_throw(I, sp, "grad: a frame cell is not differentiable (give the value stop_gradient(x) to store it as a constant)");
    Value cv[2] = { val_unbound(), val_unbound() };
    for (uint32_t k = 0; k < nix && k < 2; k++) cv[k] = iv[k].t == VT_NULL ? val_unbound() : ad_concrete(I, iv[k], sp, "an index");
    frame_assign(I, place, (int)nix, cv, ad_concrete(I, rhs, sp, "a frame cell"), sp);
    return;
  }
  if (place->t == VT_NUM || place->t == VT_BOOL) {    /* x = 5; x[1] = 3 */
    Tensor *t = tensor_new(I, 1, 1);
    tensor_data(t)[0] = place->t == VT_NUM ? place->u.n : place->u.b;
    store(place, val_mat(t));
  }
  Value conv[2];
  bool whole;
  int mark = I->ntmp;
  if (index_masks(I, *place, (int)nix, iv, 0, conv, &whole, sp)) {   /* x[x > 1] = 0 */
    for (uint32_t k = 0; k < nix && k < 2; k++) iv[k] = conv[k];
    if (whole) {                    /* X[M] = v: through the column of X's elements, row-major */
      Value xp = ad_primal(*place);
      int64_t r = tensor_rows(xp.u.m), c = tensor_cols(xp.u.m);
      Value flat = op_reshape(I, *place, r * c, 1, sp);
      tmp_push(I, flat);
      Value nv;
      Value rp = ad_primal(rhs);        /* the check, on the values when traced (grad, staging) */
      const Tensor *pos = iv[0].u.m, *src = rp.t == VT_MAT ? rp.u.m : NULL;
      int64_t n = tensor_numel(pos);
      if (rp.t != VT_NUM && rp.t != VT_BOOL && !(src && (tensor_numel(src) == 1 || tensor_numel(src) == n))) {
        char d[64];
        mls_throw(I, sp, "cannot assign %s into the %lld elements a mask selects", val_describe(rp, d, sizeof d),
                  (long long)n);
      }
      if (flat.t == VT_BOX || rhs.t == VT_BOX) nv = ad_set_index(I, flat, 1, iv, rhs, sp);
      else {                            /* flat is a fresh packed matrix: write into it */
        double *d = tensor_data(flat.u.m);
        for (int64_t k = 0; k < n; k++) {     /* (flat is not the variable yet) */
          if (interp_poll(I, k)) interp_check_interrupt(I, sp);
          double x = rhs.t == VT_NUM ? rhs.u.n : rhs.t == VT_BOOL ? rhs.u.b : tensor_at(src, tensor_numel(src) == 1 ? 0 : k);
          d[(int64_t)tensor_data(pos)[k] - 1] = x;
        }
        nv = flat;
        val_retain(nv);
      }
      tmp_push(I, nv);
      store(place, op_reshape(I, nv, r, c, sp));
      tmp_release_to(I, mark);
      return;
    }
  }
  if (place->t == VT_BOX || rhs.t == VT_BOX) {        /* traced by grad or staging: as ops */
    Value pp = ad_primal(*place);
    if (pp.t != VT_MAT && pp.t != VT_NUM && pp.t != VT_BOOL) {
      char d[64];
      mls_throw(I, sp, "cannot assign into an index of %s", val_describe(pp, d, sizeof d));
    }
    {                                                   /* the checks below, on the values */
      Value pv[2] = { val_unbound(), val_unbound() };
      for (uint32_t k = 0; k < nix && k < 2; k++) pv[k] = ad_primal(iv[k]);
      Index ri, ci;
      const Tensor *src;
      double fill;
      if (pp.t != VT_MAT) {                             /* a number: as the 1x1 matrix it becomes */
        Tensor *one = tensor_new_host(I, 1, 1);
        tensor_data(one)[0] = pp.t == VT_NUM ? pp.u.n : pp.u.b;
        tmp_push(I, val_mat(one));
        pp = val_mat(one);
      }
      assign_checks(I, pp.u.m, nix, pv, ad_primal(rhs), sp, &ri, &ci, &src, &fill);
    }
    Value nv = ad_set_index(I, *place, (int)nix, iv, rhs, sp);
    store(place, nv);
    tmp_release_to(I, mark);
    return;
  }
  if (place->t != VT_MAT) {
    char d[64];
    mls_throw(I, sp, "cannot assign into an index of %s", val_describe(*place, d, sizeof d));
  }
  for (uint32_t k = 0; k < nix && k < 2; k++)         /* a staged index (h[j, 1] = v, j captured) */
    if (iv[k].t == VT_BOX) iv[k] = ad_concrete(I, iv[k], sp, "an index");
  Tensor *m = place->u.m;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m);
  Index ri, ci;
  const Tensor *src;
  double fill;
  assign_checks(I, m, nix, iv, rhs, sp, &ri, &ci, &src, &fill);
  if (tensor_is_sparse(m) && assign_sparse(I, place, m, &ri, &ci, src, fill)) {
    tmp_release_to(I, mark);
    return;
  }
  if (!tensor_is_unique(m) || !tensor_is_contiguous(m)) {     /* copy-on-write */
    Tensor *c = tensor_clone(I, m);
    tensor_set_names(c, m->names);                   /* (x["a"] = 5 keeps x's names, as R) */
    store(place, val_mat(c));
    m = c;
  }
  if (m->st->dev && ri.n > 0 && ci.n > 0) {           /* a GPU matrix: written there */
    bool rrun = index_run(&ri), crun = index_run(&ci), done;
    if (rrun && crun) done = tensor_write_block_on_device(I, m, ix_at(&ri, 0), ri.n, ix_at(&ci, 0), ci.n, src, fill, sp);
    else {
      int pm = I->ntmp;
      Tensor *fr = tensor_new_host(I, ri.n, 1), *fc = tensor_new_host(I, ci.n, 1);
      tmp_push(I, val_mat(fr));
      tmp_push(I, val_mat(fc));
      bool dup = last_occurrences(I, &ri, rows, tensor_data(fr)) || last_occurrences(I, &ci, cols, tensor_data(fc));
      done = !dup && tensor_scatter_on_device(I, m, rrun ? NULL : index_positions(I, &ri), ri.n, ix_at(&ri, 0),
                                              crun ? NULL : index_positions(I, &ci), ci.n, ix_at(&ci, 0), src, fill, sp);
      tmp_release_to(I, pm);                           /* (a position twice: the host writes, in order) */
    }
    if (done) {
      m->logical = m->logical && (rhs.t == VT_BOOL || (rhs.t == VT_MAT && rhs.u.m->logical));
      tmp_release_to(I, mark);
      return;
    }
  }
  double *d = tensor_data(m);
  int64_t k = 0, sc = src ? tensor_cols(src) : 0;
  for (int64_t i = 0; i < ri.n; i++)           /* never interrupted: the variable is never left half written */
    for (int64_t j = 0; j < ci.n; j++, k++) {
      double x = fill;
      if (src) x = (tensor_rows(src) == ri.n && sc == ci.n) ? tensor_get(src, i, j) : tensor_at(src, k);
      d[ix_at(&ri, i) * cols + ix_at(&ci, j)] = x;
    }
  m->logical = m->logical && (rhs.t == VT_BOOL || (rhs.t == VT_MAT && rhs.u.m->logical));
  tmp_release_to(I, mark);
}

/* ---- derivative rules (ops/rules.h): reading and scattering are each other's adjoint ---- */
void index_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  Span sp = r->sp;
  bool n;
  int64_t ar, ac;
  rl_shape(r->in[0], &n, &ar, &ac);
  if (r->op == OP_INDEX) {                  /* scatter g back into the shape of x */
    Value ex[6] = { val_num((double)ar), val_num((double)ac), r->prm[0], r->prm[1], r->prm[2], val_null() };
    Value sg = T(I, op_apply(I, OP_SCATTER, 1, &g, 5, ex, sp));
    gin[0] = n ? T(I, ad_index(I, sg, 1, (Value[]){ val_num(1) }, sp)) : sg;
    return;
  }
  if (r->op == OP_SCATTER) {                /* read g at the places written */
    Value rd = T(I, op_apply(I, OP_INDEX, 1, &g, 3, r->prm + 2, sp));
    bool rn;
    int64_t rr, rc;
    rl_shape(rd, &rn, &rr, &rc);
    /* one value written at every place (a number or a 1x1 matrix, at any count of places,
    ** none included: w[w > 9] = v selecting nothing) takes their sum, in its own shape; a
    ** matrix of another shape than the places (a 1 x 2 row at the two cells a mask selects)
    ** was written element k at place k, both in row-major order: g's are put back in v's shape */
    if (n || (ar == 1 && ac == 1)) gin[0] = rl_sum_to(I, rd, r->in[0], sp);
    else if (rr != ar || rc != ac) gin[0] = T(I, op_reshape(I, rd, ar, ac, sp));
    else gin[0] = rd;
    return;
  }
  rl_no_rule(I, r->op, false, sp);
}

Value index_jvp(Interp *I, const RuleArgs *r, const Value *tin) {
  Span sp = r->sp;
  Value ta = tin[0];
  if (r->op == OP_INDEX) return T(I, op_apply(I, OP_INDEX, 1, &ta, 3, r->prm, sp));
  if (r->op == OP_SCATTER) return T(I, op_apply(I, OP_SCATTER, 1, &ta, 5, r->prm, sp));
  rl_no_rule(I, r->op, true, sp);
}

/* ---- shape rules (ops/shapes_impl.h): the checks above on shapes alone, same messages ---- */
/* ==== indexing (eval.c: eval_index, assign_matrix_index; ops/index.c: index_range_precheck,
** index_masks, index_read, make_index, index_assign, assign_checks, index_scatter) ==== */

/* One index, evaluated: what make_index sees. */
typedef enum { IV_ALL, IV_NUM, IV_RANGE, IV_POS, IV_VEC, IV_OTHER, IV_UNKNOWN } IvKind;
typedef struct Iv {
  IvKind kind;
  bool known;            /* IV_NUM: k known */
  double k;              /* IV_NUM */
  double from, step;     /* IV_RANGE: from + step * i, i < n */
  int64_t n;             /* IV_RANGE, IV_POS: the count */
  Shape v;               /* IV_VEC, IV_OTHER: the value */
} Iv;

/* A selection along one axis (ops/index.c Index). sc: scalar 1, not 0, cannot tell -1. */
typedef struct Sel { bool all; int sc; int64_t n; } Sel;

static void six_oob(Chk *k, Span sp, double v, int64_t mr, int64_t mc, const char *dim) {
  char buf[64];
  if (mr < 0 || mc < 0) { chk_fail_unsaid(k); return; }
  fmt_num(buf, sizeof buf, v, 15);
  chk_fail(k, sp, "index %s out of bounds for %lldx%lld matrix (%s)", buf, (long long)mr, (long long)mc, dim);
}

static bool in_bounds(double v, int64_t len) { return v >= 1 && v < (double)len + 1; }

/* make_index for a dimension of length len (SHAPE_UNKNOWN: not known) of the mr x mc matrix. */
static void make_sel(Chk *k, Sel *s, const Iv *v, int64_t len, int64_t mr, int64_t mc, const char *dim, Span sp) {
  s->all = false;
  s->sc = 0;
  s->n = SHAPE_UNKNOWN;
  char d[64];
  switch (v->kind) {
  case IV_ALL: s->all = true; s->n = len; return;
  case IV_NUM:
    s->sc = 1;
    s->n = 1;
    if (!v->known) { k->sure = false; return; }
    if (v->k < 0) {                               /* x[-k]: every position but k (index_masks) */
      s->sc = 0;
      s->n = len >= 0 ? len - in_bounds(-v->k, len) : SHAPE_UNKNOWN;
      if (len < 0) k->sure = false;
      return;
    }
    if (len >= 0 ? !in_bounds(v->k, len) : !(v->k >= 1)) six_oob(k, sp, v->k, mr, mc, dim);
    else if (len < 0) k->sure = false;
    return;
  case IV_RANGE: {
    s->n = v->n;
    if (v->n == 0) return;
    if (v->from < 0 || v->from + v->step * (double)(v->n - 1) < 0) {   /* negative positions */
      s->n = SHAPE_UNKNOWN;
      k->sure = false;
      return;
    }
    double bad;
    bool found = false;
    if (!(v->from >= 1)) { bad = v->from; found = true; }
    else if (len < 0) { k->sure = false; return; }
    else if (!in_bounds(v->from, len)) { bad = v->from; found = true; }
    else if (v->step > 0) {                       /* the first of from + i past len */
      double i0 = ceil((double)len + 1 - v->from);
      if (i0 < (double)v->n) { bad = v->from + i0; found = true; }
    } else {                                      /* the first of from - i below 1 */
      double i0 = floor(v->from - 1) + 1;
      if (i0 < (double)v->n) { bad = v->from - i0; found = true; }
    }
    if (found) six_oob(k, sp, bad, mr, mc, dim);
    return;
  }
  case IV_POS: s->n = v->n; return;
  case IV_VEC:
    if (v->v.rows >= 0 && v->v.cols >= 0) s->n = v->v.rows * v->v.cols;
    if (v->v.rows >= 0 && v->v.cols >= 0 && v->v.rows != 1 && v->v.cols != 1) {
      shape_describe(v->v, d, sizeof d);
      chk_fail(k, sp, "an index must be a number or a vector, got %s", d);
      return;
    }
    k->sure = false;                             /* its values: in bounds or not */
    return;
  case IV_OTHER:
    if (!shape_describe(v->v, d, sizeof d)) { chk_fail_unsaid(k); return; }
    chk_fail(k, sp, "an index must be a number or a vector, got %s", d);
    return;
  default:
    s->sc = -1;
    k->sure = false;
    return;
  }
}

/* An index value as make_index reads it (after index_masks for a vector of known values). */
static void iv_of_value(Iv *iv, Shape v) {
  memset(iv, 0, sizeof *iv);
  iv->v = v;
  if (v.kind == SK_NUM || v.kind == SK_BOOL) {
    if (v.kind == SK_BOOL && !v.known) { iv->kind = IV_UNKNOWN; return; }
    if (v.kind == SK_BOOL && v.value == 0) { iv->kind = IV_POS; iv->n = 0; return; }   /* FALSE: nothing */
    iv->kind = IV_NUM;
    iv->known = v.known;
    iv->k = v.value;
    return;
  }
  if (v.kind == SK_MAT) { iv->kind = IV_VEC; return; }
  if (v.kind == SK_STR || v.kind == SK_LIST || v.kind == SK_FUNC || v.kind == SK_NULL) { iv->kind = IV_OTHER; return; }
  iv->kind = IV_UNKNOWN;
}

/* is_mask and mask_positions of ops/index.c for the range from..to (n values): whether it is a mask
** of a dimension of length len, with the error of one of the wrong length. */
static void range_mask(Chk *k, Iv *iv, int64_t len, const char *dim, Span sp) {
  if (iv->n > 2) return;                                  /* three values are not all 0 or 1 */
  bool zero = false;
  int64_t ones = 0;
  for (int64_t i = 0; i < iv->n; i++) {
    double v = iv->from + iv->step * (double)i;
    if (v != 0 && v != 1) return;                         /* positions */
    zero = zero || v == 0;
    ones += v == 1;
  }
  if (!zero) return;                                      /* only 1s, not logical: positions */
  if (iv->n == 1 && len != 1) return;
  if (len < 0) { k->sure = false; iv->kind = IV_UNKNOWN; return; }
  if (iv->n != len) {
    chk_fail(k, sp, "a logical mask of length %lld for %lld %s (a mask needs one TRUE/FALSE per %s)", (long long)iv->n,
             (long long)len, dim, dim[0] == 'r' ? "row" : dim[0] == 'c' ? "column" : "element");
    return;
  }
  iv->kind = IV_POS;
  iv->n = ones;
}

/* range_precheck: index i of nuse, a:b written in the brackets, against the matrix x. */
static void range_precheck(Chk *k, Shape x, int nuse, int i, Shape a, Shape b, Span sp) {
  if (x.kind != SK_MAT || a.kind != SK_NUM || b.kind != SK_NUM || nuse > 2) {
    if (!(x.kind == SK_MAT || sh_numlike(x) || x.kind == SK_STR || x.kind == SK_LIST || x.kind == SK_FUNC || x.kind == SK_NULL) ||
        a.kind == SK_NUMERIC || b.kind == SK_NUMERIC || sh_unknown(a) || sh_unknown(b) ||
        (a.kind == SK_MAT && !(a.rows >= 0 && a.cols >= 0 && a.rows * a.cols != 1)))
      k->sure = false;             /* x or an end might be of the kind it checks */
    return;
  }
  int64_t rows = x.rows, cols = x.cols, len;
  const char *dim;
  if (nuse == 1) {
    if (rows < 0 || cols < 0) { k->sure = false; return; }
    if (rows != 1 && cols != 1) {
      chk_fail(k, sp, "a single index needs a row or column vector, got a %lldx%lld matrix (use X[i, j])", (long long)rows,
               (long long)cols);
      return;
    }
    len = rows == 1 ? cols : rows;
    dim = rows == 1 ? "columns" : "rows";
  } else {
    len = i == 0 ? rows : cols;
    dim = i == 0 ? "rows" : "columns";
  }
  if (!a.known || !b.known) { k->sure = false; return; }
  double from = a.value, to = b.value;
  if (!isfinite(from) || !isfinite(to) || fabs(to - from) >= 1e15) return;
  if ((from < 0 && to > 0) || (from > 0 && to < 0)) {
    chk_fail(k, sp, "only 0's may be mixed with negative subscripts (a negative index drops those positions)");
    return;
  }
  if (from < 0 || to < 0) return;                         /* negative positions: no precheck */
  if (len < 0) {
    if (!(from >= 1)) six_oob(k, sp, from, rows, cols, dim);
    else k->sure = false;
    return;
  }
  if (!(from >= 1 && from < (double)len + 1)) { six_oob(k, sp, from, rows, cols, dim); return; }
  double bad = to >= from ? from + ceil((double)len + 1 - from) : from - (floor(from - 1) + 1);
  if (to >= from ? bad <= to + 1e-10 : bad >= to - 1e-10) six_oob(k, sp, bad, rows, cols, dim);
}

/* The indices of x[...]: each range built (its errors at its own span), each made an Iv. */
static void eval_ranges(Chk *k, const ShapeIndex *ix, int nix, Iv *iv) {
  for (int i = 0; i < nix && !k->failed; i++) {
    if (ix[i].kind == SIX_ALL) { memset(&iv[i], 0, sizeof iv[i]); iv[i].kind = IV_ALL; continue; }
    if (ix[i].kind == SIX_VALUE) { iv_of_value(&iv[i], ix[i].v); continue; }
    bool known;
    double from, to;
    sh_range_checks(k, ix[i].from, ix[i].to, ix[i].span, &known, &from, &to);
    memset(&iv[i], 0, sizeof iv[i]);
    iv[i].v = shape_mat(known ? op_range_length(from, to) : SHAPE_UNKNOWN, 1);
    if (!known) { iv[i].kind = IV_VEC; continue; }
    iv[i].kind = IV_RANGE;
    iv[i].from = from;
    iv[i].step = to >= from ? 1.0 : -1.0;
    iv[i].n = op_range_length(from, to);
  }
}

/* index_masks for the indices of x (a matrix or a number) as written (nix of them). Sets
** *whole when X[M] may be a mask M of X's own (non-vector) shape: then only the count is
** unknown, or the single index is an error. */
static void masks(Chk *k, Shape x, int nix, Iv *iv, Span sp, bool *whole) {
  *whole = false;
  if (nix < 1 || nix > 2 || !(x.kind == SK_MAT || sh_numlike(x))) return;
  int64_t rows, cols;
  sh_dims(x, &rows, &cols);
  for (int i = 0; i < nix && !k->failed; i++) {
    if (iv[i].kind == IV_VEC) {                      /* values not known: a mask or not */
      Shape m = iv[i].v;
      bool mk = m.rows >= 0 && m.cols >= 0, vec = mk && (m.rows == 1 || m.cols == 1);
      if (nix == 2) {                                /* a non-vector is no mask: make_index's error */
        if (!(mk && !vec)) { k->sure = false; iv[i].kind = IV_UNKNOWN; }
      } else if (rows < 0 || cols < 0) {
        k->sure = false;
        iv[i].kind = IV_UNKNOWN;
      } else if (rows != 1 && cols != 1) {           /* X[M]: M of X's shape, if a mask */
        if (!mk || (m.rows == rows && m.cols == cols)) { k->sure = false; iv[i].kind = IV_UNKNOWN; *whole = true; }
      } else if (!(mk && !vec)) {
        k->sure = false;
        iv[i].kind = IV_UNKNOWN;
      }
      continue;
    }
    if (iv[i].kind == IV_UNKNOWN && nix == 1 && rows >= 0 && cols >= 0 && rows != 1 && cols != 1) {
      k->sure = false;                               /* X[M], M of a shape not known (is.nan(X)): */
      *whole = true;                                 /* a mask of X's shape, or not */
      continue;
    }
    if (iv[i].kind != IV_RANGE) continue;
    if (nix == 1 && (rows < 0 || cols < 0)) { k->sure = false; iv[i].kind = IV_UNKNOWN; continue; }
    if (nix == 1 && rows != 1 && cols != 1) continue;   /* X[M] needs M of X's (non-vector) shape */
    int64_t len = nix == 1 ? (rows == 1 ? cols : rows) : (i == 0 ? rows : cols);
    range_mask(k, &iv[i], len, nix == 1 ? "elements" : i == 0 ? "rows" : "columns", sp);
  }
}

/* index_read's selection of x (rows x cols, either maybe unknown) by nuse indices. false: the
** shape of the result cannot be told. */
static void select2(Chk *k, int64_t rows, int64_t cols, int nuse, const Iv *iv, Sel *ri, Sel *ci, Span sp, bool check_vec) {
  Iv all;
  memset(&all, 0, sizeof all);
  all.kind = IV_ALL;
  if (nuse == 1) {
    if (rows < 0 || (rows != 1 && cols < 0)) {      /* which axis it indexes: not known */
      k->sure = false;
      ri->all = ci->all = false;
      ri->sc = ci->sc = -1;
      ri->n = ci->n = SHAPE_UNKNOWN;
      return;
    }
    if (check_vec && rows != 1 && cols != 1) {
      chk_fail(k, sp, "a single index needs a row or column vector, got a %lldx%lld matrix (use X[i, j])", (long long)rows,
               (long long)cols);
      return;
    }
    if (rows == 1) { make_sel(k, ri, &all, 1, rows, cols, "rows", sp); make_sel(k, ci, &iv[0], cols, rows, cols, "columns", sp); }
    else { make_sel(k, ri, &iv[0], rows, rows, cols, "rows", sp); make_sel(k, ci, &all, 1, rows, cols, "columns", sp); }
  } else {
    make_sel(k, ri, &iv[0], rows, rows, cols, "rows", sp);
    if (!k->failed) make_sel(k, ci, &iv[1], cols, rows, cols, "columns", sp);
  }
}

ShapeStatus shape_rule_index(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Shape m = in[0];
  Chk k;
  chk_init(&k, err);
  (void)op;
  int nix = x ? x->nix : 0;
  if (nix < 1 || nix > 2 || !x->ix) { *out = shape_any(); return SHAPE_OK; }
  int nuse = nix;
  if (x->dml_row && nix == 1 && m.kind == SK_MAT) {          /* DML's X[i] = X[i, ] */
    if (m.cols < 0) { *out = shape_any(); return SHAPE_OK; }
    if (m.cols != 1) nuse = 2;
  } else if (x->dml_row && nix == 1 && (m.kind == SK_NUMERIC || sh_unknown(m))) { *out = shape_any(); return SHAPE_OK; }
  ShapeIndex ix[2];
  for (int i = 0; i < 2; i++) ix[i] = i < nix ? x->ix[i] : (ShapeIndex){ .kind = SIX_ALL };
  Iv iv[2];
  for (int i = 0; i < nix && !k.failed; i++) {              /* eval_index: a:b checked, then built */
    if (ix[i].kind != SIX_RANGE) continue;
    range_precheck(&k, m, nuse, i, ix[i].from, ix[i].to, sp);
    if (k.failed) break;
    eval_ranges(&k, &ix[i], 1, &iv[i]);
  }
  if (k.failed) return chk_status(&k);
  for (int i = 0; i < nuse; i++)
    if (ix[i].kind != SIX_RANGE) eval_ranges(&k, &ix[i], 1, &iv[i]);
  bool whole;
  masks(&k, m, nuse, iv, sp, &whole);
  if (k.failed) return chk_status(&k);
  if (whole) { *out = shape_mat(SHAPE_UNKNOWN, 1); return SHAPE_OK; }   /* the mask's count, or an error */
  if (m.kind == SK_LIST || m.kind == SK_NUMERIC || sh_unknown(m)) {
    *out = m.kind == SK_NUMERIC ? shape_numeric() : shape_any();   /* lists: the checker reads items */
    return SHAPE_OK;
  }
  if (!sh_matlike(m)) {
    char d[64];
    if (!shape_describe(m, d, sizeof d)) chk_fail_unsaid(&k);
    else chk_fail(&k, sp, "cannot index %s", d);
    return chk_status(&k);
  }
  int64_t rows, cols;
  sh_dims(m, &rows, &cols);
  Sel ri, ci;
  select2(&k, rows, cols, nuse, iv, &ri, &ci, sp, true);
  if (k.failed) return chk_status(&k);
  if (nuse == 1 && rows >= 0) {
    if (rows == 1) ri.sc = 1;
    if (cols == 1) ci.sc = 1;
  }
  if (ri.sc < 0 || ci.sc < 0 || (ri.sc == 1 && ci.sc == 1 && (ri.n < 0 || ci.n < 0))) {
    *out = shape_numeric();
    return SHAPE_OK;
  }
  if (ri.sc == 1 && ci.sc == 1 && ri.n == 1 && ci.n == 1 && (nuse == 2 ? (!ri.all && !ci.all) : true)) *out = shape_num_unknown();
  else *out = shape_mat(ri.n, ci.n);
  return SHAPE_OK;
}

/* index_scatter: zeros(rows, cols) with v at the selection (no mask, no vector check). */
ShapeStatus shape_rule_scatter(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  (void)op;
  (void)in;
  int nix = x ? x->nix : 0;
  int64_t rows = x ? x->rows : SHAPE_UNKNOWN, cols = x ? x->cols : SHAPE_UNKNOWN;
  if (nix < 1 || nix > 2 || !x->ix) { *out = shape_mat(rows, cols); return SHAPE_OK; }
  Iv iv[2];
  eval_ranges(&k, x->ix, nix, iv);
  if (k.failed) return chk_status(&k);
  Sel ri, ci;
  select2(&k, rows, cols, nix, iv, &ri, &ci, sp, false);
  if (k.failed) return chk_status(&k);
  *out = shape_mat(rows, cols);
  return SHAPE_OK;
}

ShapeStatus shape_index_assign(Shape target, const ShapeExtra *x, Shape rhs, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  int nix = x ? x->nix : 0;
  if (nix < 1 || nix > 2 || !x->ix) { *out = shape_any(); return SHAPE_OK; }
  int nuse = nix;
  if (x->dml_row && nix == 1) {                              /* on the target before it is made 1x1 */
    if (target.kind == SK_MAT && target.cols < 0) { *out = shape_mat(target.rows, target.cols); return SHAPE_OK; }
    if (target.kind == SK_MAT && target.cols != 1) nuse = 2;
    if (target.kind == SK_NUMERIC || sh_unknown(target)) { *out = shape_any(); return SHAPE_OK; }
  }
  if (sh_numlike(target)) target = shape_mat(1, 1);          /* x = 5; x[1] = 3 */
  Iv iv[2];
  ShapeIndex ix[2];
  for (int i = 0; i < 2; i++) ix[i] = i < nix ? x->ix[i] : (ShapeIndex){ .kind = SIX_ALL };
  eval_ranges(&k, ix, nuse, iv);                             /* every index built before anything */
  if (k.failed) return chk_status(&k);
  if (target.kind == SK_NUMERIC || sh_unknown(target)) { *out = shape_any(); return SHAPE_OK; }
  if (target.kind != SK_MAT) {
    char d[64];
    if (!shape_describe(target, d, sizeof d)) chk_fail_unsaid(&k);
    else chk_fail(&k, sp, "cannot assign into an index of %s", d);
    return chk_status(&k);
  }
  *out = shape_mat(target.rows, target.cols);              /* the target keeps its shape */
  bool whole;
  masks(&k, target, nuse, iv, sp, &whole);
  if (k.failed) return chk_status(&k);
  if (whole) return SHAPE_OK;                                /* X[M] = v: a mask of X's shape, or not */
  Sel ri, ci;
  select2(&k, target.rows, target.cols, nuse, iv, &ri, &ci, sp, true);
  if (k.failed) return chk_status(&k);
  if (sh_numlike(rhs) || (rhs.kind == SK_MAT && rhs.rows == 1 && rhs.cols == 1)) return SHAPE_OK;
  if (rhs.kind == SK_MAT) {
    if (rhs.rows < 0 || rhs.cols < 0 || ri.n < 0 || ci.n < 0) return SHAPE_OK;
    bool same = rhs.rows == ri.n && rhs.cols == ci.n;
    bool vec = (ri.n == 1 || ci.n == 1) && rhs.rows * rhs.cols == ri.n * ci.n && (rhs.rows == 1 || rhs.cols == 1);
    if (!same && !(nuse == 1 && vec))
      chk_fail(&k, sp, "cannot assign a %lldx%lld matrix into a %lldx%lld selection", (long long)rhs.rows, (long long)rhs.cols,
               (long long)ri.n, (long long)ci.n);
    return chk_status(&k);
  }
  if (rhs.kind == SK_NUMERIC || sh_unknown(rhs)) return SHAPE_OK;
  char d[64];
  if (!shape_describe(rhs, d, sizeof d)) chk_fail_unsaid(&k);
  else chk_fail(&k, sp, "cannot assign %s into a matrix", d);
  return chk_status(&k);
}
