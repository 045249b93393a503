/*
** builtins_data.c — data manipulation (order, table, removeEmpty, replace, ifelse, outer)
** and random matrices and samples (rand, sample) from the generator of rng.c.
*/
#include <math.h>
#include <string.h>
#include "builtins.h"
#include "err.h"
#include "rng.h"

Value bi_order(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_table(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_removeEmpty(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_replace(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_ifelse(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_sample(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_outer(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }

Value bi_rand(Interp *I, Args *a) {
  int64_t rows = (int64_t)bi_opt_num(I, a, 0, 1), cols = (int64_t)bi_opt_num(I, a, 1, 1);
  double lo = bi_opt_num(I, a, 2, 0), hi = bi_opt_num(I, a, 3, 1);
  const char *pdf = bi_given(a, 4) ? bi_str(I, a, 4) : "uniform";
  double sparsity = bi_opt_num(I, a, 5, 1);
  bool normal = strcmp(pdf, "normal") == 0;
  if (!normal && strcmp(pdf, "uniform") != 0) bi_argerror(I, 5, "pdf must be \"uniform\" or \"normal\", got \"%s\"", pdf);
  if (rows < 0 || cols < 0) bi_error(I, "rows and cols must not be negative");
  if (!(sparsity >= 0 && sparsity <= 1)) bi_argerror(I, 6, "sparsity must be in [0, 1]");
  if (!(lo <= hi)) bi_error(I, "min must not exceed max");
  uint64_t local[4];
  uint64_t *s = rng_stream(I, bi_given(a, 6), bi_opt_num(I, a, 6, 0), local);
  Tensor *t = tensor_new(I, rows, cols);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < rows * cols; i++) {
    double x = normal ? rng_normal01(s) : lo + (hi - lo) * rng_unif01(s);
    if (sparsity < 1 && rng_unif01(s) >= sparsity) x = 0;
    d[i] = x;
  }
  return val_mat(t);
}

