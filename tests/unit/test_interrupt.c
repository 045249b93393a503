/*
** test_interrupt.c — the interrupt flag (Ctrl-C) seen by the kernels (issue 12): with the flag
** already set, one op on a matrix big enough to go through cpu_parallel_for skips its work and
** the op raises "interrupted" at its own span, freeing its unfinished result; the flag is then
** clear and the next program runs normally. (tests/robustness/test_interrupt.sh sends real
** signals to long builtins.)
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"
#include "interp/interp.h"
#include "capture.h"
#include "mem.h"

typedef struct Fix { Interp *I; char *out, *err; size_t nout, nerr; } Fix;

static int setup(void **state) {
  Fix *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->I = interp_new();
  /* 2000 x 1000: above the size the kernels split across threads and poll the flag in */
  int st = run_captured(f->I, "X = rand(rows=2000, cols=1000, seed=1)\nf = function(A) { sum(exp(A) * 2 + A) }",
                        false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 0) return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  Fix *f = *state;
  interp_free(f->I);
  free(f->out);
  free(f->err);
  free(f);
  return 0;
}

/* code runs with the flag set: it must fail with "interrupted" at line:col, leaving nothing. */
static void expect_interrupted(Fix *f, const char *code, const char *where) {
  int st = run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);   /* its names made */
  assert_int_equal(st, 0);
  uint64_t blocks = mem_stats.blocks, bytes = mem_stats.data_bytes;
  f->I->interrupted = SIGINT;
  st = run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 1 || !strstr(f->err, where)) print_error("'%s': status %d, stderr: %s\n", code, st, f->err);
  assert_int_equal(st, 1);
  assert_error_message(code, f->err, "interrupted");
  assert_non_null(strstr(f->err, where));
  assert_int_equal(f->I->interrupted, 0);
  source_release(f->I->err.src);           /* the error keeps its source for reporting: not a leak */
  f->I->err.src = NULL;
  assert_int_equal(mem_stats.data_bytes, bytes);
  assert_int_equal(mem_stats.blocks, blocks);
  /* the flag is clear: the same code runs to the end now */
  st = run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);
  assert_int_equal(st, 0);
}

static void test_elementwise(void **state) { expect_interrupted(*state, "Y = exp(X)", "t.mls:1:5: error:"); }
static void test_binary(void **state) { expect_interrupted(*state, "Y = X * X", "t.mls:1:5: error:"); }
static void test_reduction(void **state) { expect_interrupted(*state, "s = sum(X)", "t.mls:1:5: error:"); }
static void test_rows(void **state) { expect_interrupted(*state, "r = rowSums(X)", "t.mls:1:5: error:"); }
static void test_fused(void **state) {      /* jit: exp(A) * 2 + A and the sum run as one fused kernel */
  Fix *f = *state;
  assert_int_equal(run_captured(f->I, "jf = jit(f)\nz = jf(X)", false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  expect_interrupted(f, "z = jf(X)", "t.mls:2:19: error:");   /* the cached graph: f's body */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_elementwise, setup, teardown),
    cmocka_unit_test_setup_teardown(test_binary, setup, teardown),
    cmocka_unit_test_setup_teardown(test_reduction, setup, teardown),
    cmocka_unit_test_setup_teardown(test_rows, setup, teardown),
    cmocka_unit_test_setup_teardown(test_fused, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
