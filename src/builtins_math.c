/*
** builtins_math.c — aggregates (var, sd, prod, row/column means, maxima, minima and their
** indices, cumulative sums and products), softmax and diag.
*/
#include <math.h>
#include <string.h>
#include "builtins.h"
#include "err.h"

Value bi_prod(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_var(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_sd(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_rowMeans(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_colMeans(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_rowMaxs(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_rowMins(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_colMaxs(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_colMins(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_rowIndexMax(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_rowIndexMin(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_cumsum(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_cumprod(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_softmax(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_diag(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
