/*
** test_abstract.c — the abstract trace (staging/stage.c, docs/staging.md "Reading explain"):
** explain builds a training step's graph with no kernel run (Interp.kernel_runs does not move),
** a concrete run of the same function moves it, a jit function's first call costs its graph's
** run and no eager run on top, and what needs values falls back to a trace with values, saying
** so in one line. A kernel that meets an uncomputed matrix stops (the safety net).
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture.h"
#include "interp/interp.h"
#include "ops.h"
#include "tensor.h"

static int run(Fix *f, const char *code) { return run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr); }

static void run_ok(Fix *f, const char *code) {
  int st = run(f, code);
  if (st != 0) print_error("'%s' failed: %s\n", code, f->err);
  assert_int_equal(st, 0);
}

/* A logistic regression's loss and a softmax layer's cross-entropy: products, sigmoid, softmax,
** log, sums, elementwise ops; 4000 x 300 inputs (a kernel run over them is not free). */
static const char *const setup_code =
  "W = matrix(0.01, rows = 300, cols = 10)\n"
  "X = matrix(0.5, rows = 4000, cols = 300)\n"
  "Y = matrix(0.1, rows = 4000, cols = 10)\n"
  "loss = function(W, X) { P = sigmoid(X %*% W); -sum(Y * log(P) + (1 - Y) * log(1 - P)) / nrow(X) }\n"
  "xent = function(W, X) { S = softmax(X %*% W + 0.5); -sum(Y * log(S)) }\n";

static void test_explain_runs_no_kernel(void **state) {
  Fix *f = *state;
  run_ok(f, setup_code);
  const char *const calls[] = { "e = explain(loss, W, X)", "e = explain(xent, W, X)" };
  for (int i = 0; i < 2; i++) {
    uint64_t k0 = f->I->kernel_runs;
    run_ok(f, calls[i]);
    assert_int_equal(f->I->kernel_runs, k0);                     /* not one kernel */
    assert_non_null(strstr(f->out, "before optimization: "));
    assert_non_null(strstr(f->out, "%*% %1 %0  : 4000x10"));   /* the product's shape, from its rule */
    assert_null(strstr(f->out, "traced with values"));
  }
  uint64_t k0 = f->I->kernel_runs;                               /* the same code run: kernels run */
  run_ok(f, "r = loss(W, X)");
  assert_true(f->I->kernel_runs > k0);
  /* the graph explain printed is the one the run gives: the loss's value is still right
  ** (p = sigmoid(1.5): -(0.1 log p + 0.9 log(1 - p)) * 10 per row, by hand) */
  run_ok(f, "p = 1 / (1 + exp(-1.5)); print(abs(r + (0.1 * log(p) + 0.9 * log(1 - p)) * 10) < 1e-9)");
  assert_string_equal(f->out, "TRUE\n");
}

/* jit: the first call traces abstractly, then runs the optimized graph once: it runs as many
** kernels as a later call (an eager run on top used to make it more). */
static void test_jit_first_call(void **state) {
  Fix *f = *state;
  run_ok(f, setup_code);
  run_ok(f, "jl = jit(loss)");
  uint64_t k0 = f->I->kernel_runs;
  run_ok(f, "r1 = jl(W, X)");
  uint64_t first = f->I->kernel_runs - k0;
  k0 = f->I->kernel_runs;
  run_ok(f, "r2 = jl(W, X)");
  uint64_t later = f->I->kernel_runs - k0;
  assert_true(later > 0);
  assert_int_equal(first, later);
  run_ok(f, "print(r1 == r2)");
  assert_string_equal(f->out, "TRUE\n");
}

/* What needs values traces again with them, and explain says why and where. */
static void test_fallbacks(void **state) {
  Fix *f = *state;
  run_ok(f, "x = matrix(1, rows = 3, cols = 2)\n"
            "g = function(x) { if (sum(x) > 0) x * 2 else x }\n"
            "h = function(x) { print(\"in h\"); x + 1 }\n");
  uint64_t k0 = f->I->kernel_runs;
  run_ok(f, "e = explain(g, x)");
  assert_non_null(strstr(f->out, "traced with values: a condition depends on a staged value at t.mls:2:23\n"));
  assert_true(f->I->kernel_runs > k0);                           /* the trace with values ran them */
  run_ok(f, "e = explain(h, x)");
  /* the effect happens once, in the trace with values, and the line says why */
  assert_true(strncmp(f->out, "in h\nexplain: staged for (a 3x2 matrix)\n"
                              "traced with values: 'print' is an effect at t.mls:3:19\n", 95) == 0);
  assert_null(strstr(f->out + 1, "in h\n"));
  /* a recursion deeper than 1000 calls (its depth known: the trace could go on) stops it too, so
  ** that it never unwinds from deep in the C stack only to descend again */
  run_ok(f, "down = function(x, n) { if (n == 0) x else down(x * 2, n - 1) }\n"
            "d = function(x) down(x, 1200) + 0\ne = explain(d, 1)");
  assert_non_null(strstr(f->out, "traced with values: a recursion more than 1000 calls deep at t.mls:1:44\n"));
}

/* An uncomputed matrix that reaches a kernel stops there (it never computes on zeros). */
typedef struct OpJob { Value a; Value r; } OpJob;
static void op_job(Interp *I, void *ud) {
  OpJob *j = ud;
  j->r = op_binary(I, OP_ADD, j->a, j->a, (Span){ 0, 0 });
}

static void test_kernel_stops_on_uncomputed(void **state) {
  Fix *f = *state;
  Interp *I = f->I;
  OpJob j = { val_null(), val_null() };
  j.a = val_mat(tensor_abstract(I, 4, 3));
  assert_true(j.a.u.m->st->abstract);
  uint64_t k0 = I->kernel_runs;
  I->abstract_stopped = false;
  assert_int_equal(mls_pcall(I, op_job, &j), 1);
  assert_true(I->abstract_stopped);
  assert_non_null(strstr(I->err.msg, "'+' would compute on a value the trace did not compute"));
  assert_int_equal(I->kernel_runs, k0);
  I->abstract_stopped = false;
  val_release(j.a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_explain_runs_no_kernel, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_jit_first_call, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_fallbacks, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_kernel_stops_on_uncomputed, fix_setup, fix_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
