/*
** builtins_linalg.c — linear algebra through LAPACKE (OpenBLAS): solve, inv, det, trace,
** cholesky, eigen (symmetric), qr, svd.
*/
#include <math.h>
#include <string.h>
#include "builtins.h"
#include "err.h"

Value bi_solve(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_inv(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_det(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_trace(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_cholesky(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_eigen(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_qr(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_svd(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
