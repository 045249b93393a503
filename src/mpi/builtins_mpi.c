/*
** builtins_mpi.c — the MPI builtins (issue 14): mpi_rank, mpi_size, allreduce, bcast, barrier.
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
