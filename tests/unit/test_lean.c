/*
** test_lean.c — the lean runner of loop bodies (src/staging/lean.c) takes bench (s6)'s body and
** allocates no matrix an iteration: the data buffers a jit call hands out do not grow with the
** trip count (mem_stats.data_allocs), while the graph runner's (MLS_LOOP_LEAN=0) grow by three an
** iteration, each op's result; and a body with an index (not lean) still runs. The values are
** the golden tests' (tests/lang/staging_lean.test).
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "interp/interp.h"
#include "capture.h"
#include "mem.h"

static const char *prog =
  "f = function(x, a, b, n) { s = x * 0; for (i in 1:n) { x = tanh(x %*% a + b); s = s + x }; s }\n"
  "a = matrix(seq(1, 16), rows = 4, cols = 4) / 40\n"
  "b = matrix(sin(seq(1, 16)), rows = 4, cols = 4) * 0.1\n"
  "x0 = matrix(cos(seq(1, 16)), rows = 4, cols = 4)\n"
  "jf = jit(f)\n"
  "y = jf(x0, a, b, 10)\n";

/* data buffers handed out by one run of code */
static uint64_t allocs(Fix *f, const char *code) {
  uint64_t a0 = mem_stats.data_allocs;
  int st = run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 0) print_error("%s", f->err);
  assert_int_equal(st, 0);
  return mem_stats.data_allocs - a0;
}

static void test_lean_allocates_nothing_an_iteration(void **state) {
  Fix *f = *state;
  unsetenv("MLS_LOOP_LEAN");
  assert_int_equal(run_captured(f->I, prog, false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  uint64_t d1 = allocs(f, "y = jf(x0, a, b, 1000)"), d2 = allocs(f, "y = jf(x0, a, b, 3000)");
  print_message("lean: %llu and %llu buffers for 1000 and 3000 iterations\n", (unsigned long long)d1, (unsigned long long)d2);
  assert_true(d2 <= d1 + 2);
  assert_int_equal(run_captured(f->I, "print(sum(jf(x0, a, b, 300)), digits = 12)", false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  assert_string_equal(f->out, "206.525548509\n");
  /* the graph runner: a result an op, an iteration (the measure can fail) */
  setenv("MLS_LOOP_LEAN", "0", 1);
  assert_int_equal(run_captured(f->I, "jf = jit(f)\ny = jf(x0, a, b, 10)", false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  d1 = allocs(f, "y = jf(x0, a, b, 1000)");
  d2 = allocs(f, "y = jf(x0, a, b, 3000)");
  unsetenv("MLS_LOOP_LEAN");
  print_message("graph runner: %llu and %llu\n", (unsigned long long)d1, (unsigned long long)d2);
  assert_true(d2 >= d1 + 2 * 2000);
}

static void test_not_lean_still_runs(void **state) {
  Fix *f = *state;
  const char *code =
    "g = function(x, v, n) { s = 0; for (i in 1:n) { x = x * 0.5 + 1; s = s + v[i] * sum(x) }; s }\n"
    "print(jit(g)(matrix(1, rows = 2, cols = 2), [1, 2, 3], 3))\n";
  assert_int_equal(run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  assert_string_equal(f->out, "42.5\n");   /* x = 1.5, 1.75, 1.875 each entry: 6 + 14 + 22.5 */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_lean_allocates_nothing_an_iteration, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_not_lean_still_runs, fix_setup, fix_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
