/*
** builtins_mpi.c — the MPI builtins (issues 14, 34): mpi_rank, mpi_size, allreduce, bcast, barrier,
** grad_allreduce.
** They exist in every build; without MPI the program is rank 1 of 1 (mpi.c). allreduce is the
** op OP_ALLREDUCE under grad and staging (its derivative rule is in autodiff.c).
*/
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "mpi/mpi.h"

static void no_collective_in_parfor(Interp *I) {
  if (mpi_size() > 1 && mpi_in_parfor(I))
    bi_error(I, "not allowed inside parfor (mode=REMOTE): each rank runs other iterations, so a "
             "collective there would wait forever");
}

Value bi_mpi_rank(Interp *I, Args *a) { (void)I; (void)a; return val_num(mpi_rank() + 1); }
Value bi_mpi_size(Interp *I, Args *a) { (void)I; (void)a; return val_num(mpi_size()); }

Value bi_barrier(Interp *I, Args *a) {
  no_collective_in_parfor(I);
  mpi_barrier(I, a->span);
  return val_null();
}

Value bi_allreduce(Interp *I, Args *a) {
  int op = MPI_RED_SUM;
  if (bi_given(a, 1)) {
    if (a->v[1].t == VT_BOX) a->v[1] = ad_concrete(I, a->v[1], a->span, "allreduce's op");   /* a staged string */
    const char *s = bi_str(I, a, 1);
    if (!strcmp(s, "sum")) op = MPI_RED_SUM;
    else if (!strcmp(s, "max")) op = MPI_RED_MAX;
    else if (!strcmp(s, "min")) op = MPI_RED_MIN;
    else bi_argerror(I, 2, "\"sum\", \"max\" or \"min\" expected, got \"%s\"", s);
  }
  no_collective_in_parfor(I);
  Value x = a->v[0];
  Value p = ad_primal(x);
  if (p.t != VT_NUM && p.t != VT_BOOL && p.t != VT_MAT) {
    char d[64];
    if (mpi_size() == 1) bi_argerror(I, 1, "number or matrix expected, got %s", val_describe(p, d, sizeof d));
    return mpi_allreduce_value(I, p, op, a->span);   /* the others learn of it: the error on every rank */
  }
  if (x.t == VT_BOX || I->stage) return op_apply(I, OP_ALLREDUCE, 1, &x, 1, (Value[]){ val_num(op) }, a->span);
  return mpi_allreduce_value(I, x, op, a->span);
}

Value bi_bcast(Interp *I, Args *a) {
  double r = bi_opt_num(I, a, 1, 1);
  if (!(r >= 1 && r <= mpi_size() && r == floor(r)))
    bi_argerror(I, 2, "a rank from 1 to %d expected, got %g", mpi_size(), r);
  no_collective_in_parfor(I);
  return mpi_bcast_value(I, ad_primal(a->v[0]), (int)r - 1, false, a->span);
}

Value bi_grad_allreduce(Interp *I, Args *a) {
  Value df = a->v[0];
  if (df.t != VT_FUNC && df.t != VT_BUILTIN) {
    char d[64];
    bi_argerror(I, 1, "function expected, got %s", val_describe(df, d, sizeof d));
  }
  Value l = a->v[1];
  if (l.t != VT_LIST || l.u.l->n < 1) {
    char d[64];
    bi_argerror(I, 2, "a list of df's arguments expected, got %s", val_describe(l, d, sizeof d));
  }
  if (bi_given(a, 2) && a->v[2].t == VT_BOX) a->v[2] = ad_concrete(I, a->v[2], a->span, "grad_allreduce's weight");
  if (bi_given(a, 3) && a->v[3].t == VT_BOX) a->v[3] = ad_concrete(I, a->v[3], a->span, "grad_allreduce's bucket");
  double w = bi_opt_num(I, a, 2, 1);
  double b = bi_opt_num(I, a, 3, 65536);
  if (!(b >= 1 && b <= 9007199254740992.0 && b == floor(b)))
    bi_argerror(I, 4, "a whole number of at least 1 expected (numbers per bucket), got %g", b);
  no_collective_in_parfor(I);
  return mpi_grad_allreduce(I, df, l.u.l->n, l.u.l->items, w, (int64_t)b, a->span);
}
