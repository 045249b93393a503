/*
** test_gemm_tiny.c — the CPU backend's direct kernel for tiny products (cpu.c gemm_tiny: m, n <=
** 16, k <= 7, which eager %*% and the staged runners all reach): each element must be the fused
** multiply-add chain over k from +0, in order (the rule, checked bit for bit against fma() here),
** a hand-derived case where that chain and a plain sum differ, and OpenBLAS's product of the same
** operands within rounding (on this machine's OpenBLAS kernels they are the same to the last bit:
** printed, not asserted, as another CPU's kernels may sum otherwise).
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/dynlibs.h"
#include "interp/interp.h"
#include "capture.h"
#include "tensor.h"
#include "backend/backend.h"

static uint64_t bits(double x) { uint64_t u; memcpy(&u, &x, sizeof u); return u; }

static double draw(uint64_t *s) {              /* xorshift: mixed signs and magnitudes */
  *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
  double r = (double)(*s >> 11) / 9007199254740992.0 * 2 - 1;
  if (*s % 7 == 0) r *= 1e3;
  if (*s % 11 == 0) r *= -1e-5;
  return r;
}

/* op(A) is m x k, op(B) k x n: A stored (ta ? k x m : m x k), B (tb ? n x k : k x n), packed */
static void check_shape(Interp *I, bool ta, bool tb, int m, int n, int k, uint64_t *s, int *same_blas, int *total) {
  Tensor *A = tensor_new(I, ta ? k : m, ta ? m : k), *B = tensor_new(I, tb ? n : k, tb ? k : n), *C = tensor_new(I, m, n);
  double *a = tensor_data(A), *b = tensor_data(B), ref[256], blas[256];
  for (int i = 0; i < m * k; i++) a[i] = draw(s);
  for (int i = 0; i < k * n; i++) b[i] = draw(s);
  int lda = ta ? m : k, ldb = tb ? k : n;
  assert_int_equal(I->cpu->gemm(I->cpu, ta, tb, 1.0, A, B, 0.0, C), 0);
  cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, 1.0, a, lda, b, ldb,
              0.0, blas, n);
  const double *c = tensor_data(C);
  bool same = true;
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      double acc = 0.0, mag = 0.0;
      for (int p = 0; p < k; p++) {
        double x = ta ? a[p * lda + i] : a[i * lda + p], y = tb ? b[j * ldb + p] : b[p * ldb + j];
        acc = fma(x, y, acc);
        mag += fabs(x * y);
      }
      ref[i * n + j] = acc + 0.0;
      assert_true(bits(c[i * n + j]) == bits(ref[i * n + j]));
      assert_true(fabs(c[i * n + j] - blas[i * n + j]) <= 2 * k * DBL_EPSILON * mag);   /* (both within k u mag) */
      same = same && bits(c[i * n + j]) == bits(blas[i * n + j]);
    }
  *same_blas += same;
  ++*total;
  tensor_free_ref(A);
  tensor_free_ref(B);
  tensor_free_ref(C);
}

static void test_tiny_rule(void **state) {
  Fix *f = *state;
  uint64_t s = 88172645463325252ull;
  int same = 0, total = 0;
  for (int m = 1; m <= 16; m++)
    for (int n = 1; n <= 16; n++)
      for (int k = 1; k <= 7; k++)
        for (int t = 0; t < 4; t++) {
          if (n == 1 && !(t & 2)) continue;      /* (a matrix-vector product: cblas_dgemv) */
          check_shape(f->I, t & 1, t & 2, m, n, k, &s, &same, &total);
        }
  print_message("tiny products equal to OpenBLAS's to the last bit: %d of %d\n", same, total);
}

/* [1, 1 + 2^-27] %*% [-1; 1 - 2^-27]: the chain gives fma(1 + 2^-27, 1 - 2^-27, -1) = -2^-54
** exactly; the product rounded first (to 1, a tie to even) and then added gives 0 */
static void test_tiny_fma(void **state) {
  Fix *f = *state;
  Interp *I = f->I;
  Tensor *A = tensor_new(I, 1, 2), *B = tensor_new(I, 2, 2), *C = tensor_new(I, 1, 2);
  double e = ldexp(1, -27);
  tensor_data(A)[0] = 1;
  tensor_data(A)[1] = 1 + e;
  double bv[4] = { -1, 2, 1 - e, 3 };
  memcpy(tensor_data(B), bv, sizeof bv);
  assert_int_equal(I->cpu->gemm(I->cpu, false, false, 1.0, A, B, 0.0, C), 0);
  assert_true(tensor_data(C)[0] == -ldexp(1, -54));
  assert_true(tensor_data(C)[1] == 2 + 3 * (1 + e));
  tensor_free_ref(A);
  tensor_free_ref(B);
  tensor_free_ref(C);
}

int main(void) {
  setenv("MLS_XSMM", "0", 1);   /* the tiny kernel itself: libxsmm's plugin would take these first */
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_tiny_rule, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_tiny_fma, fix_setup, fix_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
