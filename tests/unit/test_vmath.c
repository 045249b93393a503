/*
** test_vmath.c — the array forms of the elementwise ops (src/backend/vmath.c) against libm, the
** independent reference: vm_sqrt must give sqrt's bits exactly (the instruction is correctly
** rounded, as IEEE requires of sqrt), and the libmvec functions must stay within a few units in
** the last place of libm's, on special values, every tail length and the lanes between.
*/
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "backend/backend.h"
#include "backend/vmath.h"
#include "capture.h"

static const double special[] = { 0.0, -0.0, 1.0, 4.0, 2.25, 1e-310, 5e-324, 1e308, -1.0, -1e-300,
                                  INFINITY, -INFINITY, NAN, 0.5, 3.0, 1e-20, 7.0, 123456.789 };

static uint64_t bits(double x) { uint64_t u; memcpy(&u, &x, sizeof u); return u; }

/* Units in the last place between a and b (0 when both are NaN or equal). */
static double ulps(double a, double b) {
  if (isnan(a) && isnan(b)) return 0;
  if (a == b) return 0;
  if (!isfinite(a) || !isfinite(b)) return INFINITY;
  return fabs(a - b) / fmax(nextafter(fabs(b), INFINITY) - fabs(b), 5e-324);
}

static void test_sqrt_exact(void **state) {
  (void)state;
  double a[64] = { 0 }, o[64];
  uint64_t s = 88172645463325252ull;        /* xorshift: positive, negative and tiny values */
  for (int n = 0; n <= 64; n++) {           /* every tail length past the 4- and 2-lane loops */
    for (int i = 0; i < n; i++) {
      if (i < (int)(sizeof special / sizeof special[0]) && n % 3 == 0) a[i] = special[i];
      else {
        s ^= s << 13; s ^= s >> 7; s ^= s << 17;
        a[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.1) * pow(10, (int)(s % 40) - 20);
      }
    }
    vm_sqrt(o, a, n);
    for (int i = 0; i < n; i++) {
      double want = sqrt(a[i]);
      if (isnan(want)) assert_true(isnan(o[i]));
      else assert_true(bits(o[i]) == bits(want));
    }
  }
  double b[11];                             /* in place, as the backends call it over a temporary */
  for (int i = 0; i < 11; i++) b[i] = special[i];
  vm_sqrt(b, b, 11);
  for (int i = 0; i < 11; i++) {
    double want = sqrt(special[i]);
    assert_true(isnan(want) ? isnan(b[i]) : bits(b[i]) == bits(want));
  }
}

static void test_libmvec_close(void **state) {
  (void)state;
  static void (*const fns[])(double *, const double *, int64_t) = { vm_exp, vm_log, vm_sin, vm_cos, vm_tanh, vm_log1p, vm_expm1 };
  static double (*const ref[])(double) = { exp, log, sin, cos, tanh, log1p, expm1 };
  double a[37], o[37];
  for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++) {
    for (int i = 0; i < 37; i++) a[i] = (i - 18) * 0.37 + (f == 1 || f == 5 ? 19.0 : 0.0);
    fns[f](o, a, 37);
    for (int i = 0; i < 37; i++) assert_true(ulps(o[i], ref[f](a[i])) <= 4);
  }
}

/* The same program with one and with two threads of the CPU backend: the array functions see
** the same lanes (the cores' parts start at multiples of 256 elements), so every bit agrees,
** eagerly and in the fused row aggregates (301000 elements: parallel; rows of 1000). */
static void test_threads_same_bits(void **state) {
  Fix *f = *state;
  const char *code =
      "X = matrix(sin(seq(1, 301000) * 0.37) * 3, rows = 301, cols = 1000)\n"
      "print(sprintf(\"%.17g\", sum(X)))\n"
      "print(sprintf(\"%.17g\", sum(sigmoid(X) - tanh(X))))\n"
      "g = function(X) { rowMaxs(sigmoid(X) - cos(X)) + rowSums(exp(-abs(X)) * sin(X)) }\n"
      "e = g(X)\n"
      "print(sprintf(\"%.17g\", sum(e)))\n"
      "print(sum(jit(g)(X) != e))\n";
  char *want = NULL;
  for (int threads = 1; threads <= 2; threads++) {
    f->I->cpu->set_threads(f->I->cpu, threads);
    assert_int_equal(run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr), 0);
    assert_non_null(strstr(f->out, "\n0\n"));       /* the fused rows give eager's bits */
    if (!want) want = strdup(f->out);
    else assert_string_equal(f->out, want);
  }
  free(want);
  f->I->cpu->set_threads(f->I->cpu, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sqrt_exact),
    cmocka_unit_test(test_libmvec_close),
    cmocka_unit_test_setup_teardown(test_threads_same_bits, fix_setup, fix_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
