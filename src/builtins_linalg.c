/*
** builtins_linalg.c — the linear-algebra builtins: solve, inv (inverse), det, cholesky, eigen,
** qr and svd as thin wrappers of the family's ops (ops/linalg.c: LAPACK, the device LU, the
** checks and errors), recorded by ad_apply when grad or a stage traces an argument; and trace.
**
** Conventions (docs/language.md "Linear algebra"): every matrix given to LAPACK must be finite;
** solve and inv reject exactly singular matrices and those with a reciprocal condition number
** below machine epsilon (as R does); eigen gives values decreasing; qr is thin with diag(R) >= 0;
** svd is thin; an eigenvector (svd: a column of V, with its U column) is signed so that its
** largest-magnitude entry is positive; cholesky gives the lower L (R's chol gives t(L)).
*/
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "ops/linalg.h"

/* The list of a multi-return builtin ([a, b] = f(...) unpacks it): names[i] for vals[i], which
** are borrowed (the caller holds them on the temp stack, so an allocation failing here frees
** them there). */
static Value multi(Interp *I, int n, const char *const names[], const Value vals[]) {
  List *l = list_new(I, n);
  tmp_push(I, val_list(l));
  l->multi = true;
  for (int i = 0; i < n; i++) {
    Symbol *name = sym_intern(&I->syms, names[i], strlen(names[i]));
    val_retain(vals[i]);
    list_push(l, vals[i], name);
  }
  tmp_pop(I, 1);
  return val_list(l);
}

/* solve, inv and det: the op, with errors naming the builtin called (inverse: DML's inv). */
static Value apply(Interp *I, Args *a, OpKind op) {
  if (ad_any_active(op_info[op].arity, a->v)) return op_apply(I, op, op_info[op].arity, a->v, 0, NULL, a->span);   /* grad */
  return linalg_apply_as(I, op, a->v, I->cur_bi ? I->cur_bi->name : op_info[op].sym, a->span);
}

Value bi_solve(Interp *I, Args *a) { return apply(I, a, OP_SOLVE); }
Value bi_inv(Interp *I, Args *a) { return apply(I, a, OP_INV); }
Value bi_det(Interp *I, Args *a) { return apply(I, a, OP_DET); }

/* No LAPACK: a sum, so NaN and Inf propagate as in sum(). */
/* sum(diag(A)) through the ops, eager or traced alike: the staged and the eager trace add
** the diagonal in the same order (a loop here differed from the graph's in the last bit). */
Value bi_trace(Interp *I, Args *a) {
  Value v = a->v[0], p = ad_primal(v);
  if (p.t == VT_NUM || p.t == VT_BOOL) {
    if (v.t == VT_BOX && p.t == VT_NUM) { val_retain(v); return v; }
    if (v.t == VT_BOX) return op_binary(I, OP_ADD, v, val_num(0), a->span);   /* a traced boolean: its number, as eagerly */
    return val_num(bi_num(I, a, 0));
  }
  if (p.t != VT_MAT) { char d[64]; bi_argerror(I, 1, "matrix expected, got %s", val_describe(p, d, sizeof d)); }
  if (tensor_rows(p.u.m) != tensor_cols(p.u.m))
    bi_argerror(I, 1, "square matrix expected, got %lldx%lld", (long long)tensor_rows(p.u.m), (long long)tensor_cols(p.u.m));
  Value d = op_diag(I, v, a->span);
  tmp_push(I, d);
  Value s = op_reduce(I, OP_SUM, d, a->span);
  tmp_pop(I, 1);
  val_release(d);
  return s;
}

/* eigen, cholesky, qr and svd: traced by grad or a stage, each output is an op of its own
** (ops.def OP_EIGVALS .. OP_SVD_V) with its derivative rules (autodiff.c), computed by
** linalg_apply on the plain values; else all outputs at once (linalg_factor). The list has
** the same names either way; cholesky gives its one matrix. */
static Value factor(Interp *I, Args *a, LinalgFactor f, int n, const OpKind ops[], const char *const names[]) {
  int mark = I->ntmp;
  Value v[3];
  if (ad_any_active(1, a->v)) {
    for (int i = 0; i < n; i++) {
      v[i] = op_apply(I, ops[i], 1, a->v, 0, NULL, a->span);
      tmp_push(I, v[i]);
    }
  } else {
    int got = linalg_factor(I, f, a->v[0], v, a->span);
    MLS_ASSERT(got == n);
    for (int i = 0; i < n; i++) tmp_push(I, v[i]);
  }
  Value r = n == 1 ? v[0] : multi(I, n, names, v);
  if (n == 1) val_retain(r);
  tmp_release_to(I, mark);
  return r;
}

Value bi_cholesky(Interp *I, Args *a) { return factor(I, a, LF_CHOLESKY, 1, (OpKind[]){ OP_CHOL }, NULL); }

Value bi_eigen(Interp *I, Args *a) {
  static const char *const names[] = { "values", "vectors" };
  return factor(I, a, LF_EIGEN, 2, (OpKind[]){ OP_EIGVALS, OP_EIGVECS }, names);
}

Value bi_qr(Interp *I, Args *a) {
  static const char *const names[] = { "Q", "R" };
  return factor(I, a, LF_QR, 2, (OpKind[]){ OP_QR_Q, OP_QR_R }, names);
}

Value bi_svd(Interp *I, Args *a) {
  static const char *const names[] = { "U", "S", "V" };
  return factor(I, a, LF_SVD, 3, (OpKind[]){ OP_SVD_U, OP_SVD_S, OP_SVD_V }, names);
}
