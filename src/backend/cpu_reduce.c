/*
** cpu_reduce.c — reduction kernels of the CPU backend: plain loops over contiguous rows,
** pairwise summation for accuracy.
*/
#include <math.h>
#include <string.h>
#include "backend/cpu.h"

static double sum_pairwise(const double *a, int64_t n) {   /* accurate and vectorizable */
  if (n <= 128) {
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) { s0 += a[i]; s1 += a[i + 1]; s2 += a[i + 2]; s3 += a[i + 3]; }
    for (; i < n; i++) s0 += a[i];
    return (s0 + s1) + (s2 + s3);
  }
  int64_t h = n / 2;
  return sum_pairwise(a, h) + sum_pairwise(a + h, n - h);
}

int cpu_run_reduce(OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) {
  (void)p;
  const double *a = tensor_data(in[0]);
  double *o = tensor_data(out);
  int64_t r = tensor_rows(in[0]), c = tensor_cols(in[0]);
  switch (op) {
  case OP_SUM: o[0] = sum_pairwise(a, r * c); break;
  case OP_ROWSUMS: for (int64_t i = 0; i < r; i++) o[i] = sum_pairwise(a + i * c, c); break;
  case OP_COLSUMS:
    for (int64_t j = 0; j < c; j++) o[j] = 0;
    for (int64_t i = 0; i < r; i++)
      for (int64_t j = 0; j < c; j++) o[j] += a[i * c + j];
    break;
  default: return 1;
  }
  return 0;
}

