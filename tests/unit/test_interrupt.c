/*
** test_interrupt.c — the interrupt flag (Ctrl-C) seen by the kernels (issue 12): with the flag
** already set, one op on a matrix big enough to go through cpu_parallel_for skips its work and
** the op raises "interrupted" at its own span, freeing its unfinished result; once the run has
** ended the flag is clear and the next program runs normally. Products in panels and cut along
** k, LAPACK on its worker thread, and the sparse factorizations (CHOLMOD, UMFPACK) on the same.
** (tests/robustness/test_interrupt.sh sends real signals to long builtins.)
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
#include "backend/cpu.h"
#include "builtins.h"
#include "ops/linalg.h"

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
  la_wait_abandoned(f->I);                   /* an interrupted LAPACK call's worker, if any */
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

/* %*% in panels (cpu_gemm): with the panel size lowered, a product stops after its first panel */
static void test_gemm(void **state) {
  Fix *f = *state;
  assert_int_equal(run_captured(f->I, "XT = t(X)", false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  cpu_gemm_set_panel_flops(f->I->cpu, 1e6);
  expect_interrupted(f, "Y = X %*% XT", "t.mls:1:5: error:");   /* (t() would raise first: a builtin) */
  cpu_gemm_set_panel_flops(f->I->cpu, 16e9);
}

/* ... and every transpose form of the panels (rows of C when it has more rows, columns when it
** has more columns) gives the product: entries checked against sums of elementwise products */
static void test_gemm_panels(void **state) {
  Fix *f = *state;
  cpu_gemm_set_panel_flops(f->I->cpu, 1e6);
  const char *prog =
    "chk = function(A, B, C) {\n"
    "  worst = 0\n"
    "  for (s in 1:40) {\n"
    "    i = 1 + (s * 37) %% nrow(C)\n"
    "    j = 1 + (s * 101) %% ncol(C)\n"
    "    ref = sum(A[i, ] * t(B[, j]))\n"
    "    worst = max(worst, abs(C[i, j] - ref) / (1 + abs(ref)))\n"
    "  }\n"
    "  worst < 1e-12\n"
    "}\n"
    "A = rand(rows=1100, cols=300, seed=1, min=-1, max=1); Ak = rand(rows=300, cols=1100, seed=2, min=-1, max=1)\n"
    "B = rand(rows=300, cols=1000, seed=3, min=-1, max=1); Bk = rand(rows=1000, cols=300, seed=4, min=-1, max=1)\n"
    "print(chk(A, B, A %*% B)); print(chk(t(Ak), B, t(Ak) %*% B))\n"
    "print(chk(A, t(Bk), A %*% t(Bk))); print(chk(t(Ak), t(Bk), t(Ak) %*% t(Bk)))\n"
    "A2 = rand(rows=600, cols=300, seed=5, min=-1, max=1); A2k = rand(rows=300, cols=600, seed=6, min=-1, max=1)\n"
    "B2 = rand(rows=300, cols=2100, seed=7, min=-1, max=1); B2k = rand(rows=2100, cols=300, seed=8, min=-1, max=1)\n"
    "print(chk(A2, B2, A2 %*% B2)); print(chk(t(A2k), B2, t(A2k) %*% B2))\n"
    "print(chk(A2, t(B2k), A2 %*% t(B2k))); print(chk(t(A2k), t(B2k), t(A2k) %*% t(B2k)))\n";
  int st = run_captured(f->I, prog, false, &f->out, &f->nout, &f->err, &f->nerr);
  cpu_gemm_set_panel_flops(f->I->cpu, 16e9);
  if (st != 0) print_error("%s", f->err);
  assert_int_equal(st, 0);
  assert_string_equal(f->out, "TRUE\nTRUE\nTRUE\nTRUE\nTRUE\nTRUE\nTRUE\nTRUE\n");
}

/* ... and a product whose panels are still long is cut along k (a 40x30 result of k = 5000,
** t(A) %*% A of a tall A), into pieces that add into C: compared with the same product in one
** call, to 1e-12 of its largest entry (on this machine's OpenBLAS it is the same to the last
** bit: the cuts fall where OpenBLAS adds its own k-blocks; exact prints it) */
static void test_gemm_ksplit(void **state) {
  Fix *f = *state;
  const char *setup_prog =
    "A = rand(rows=5000, cols=40, seed=11, min=-1, max=1); Ak = rand(rows=40, cols=5000, seed=12, min=-1, max=1)\n"
    "B = rand(rows=5000, cols=30, seed=13, min=-1, max=1); Bk = rand(rows=30, cols=5000, seed=14, min=-1, max=1)\n"
    "T = rand(rows=1100, cols=4000, seed=15, min=-1, max=1); U = rand(rows=4000, cols=20, seed=16, min=-1, max=1)\n"
    "prods = function() { list(t(A) %*% B, Ak %*% B, t(A) %*% t(Bk), Ak %*% t(Bk), T %*% U, t(A) %*% A) }\n"
    "near = function(P, Q) { max(abs(P - Q)) <= 1e-12 * max(abs(Q)) }\n"
    "exact = function(P, Q) { sum(P != Q) == 0 }\n";
  assert_int_equal(run_captured(f->I, setup_prog, false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  assert_int_equal(run_captured(f->I, "Q = prods()", false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  cpu_gemm_set_panel_flops(f->I->cpu, 1e6);
  int st = run_captured(f->I, "P = prods()", false, &f->out, &f->nout, &f->err, &f->nerr);
  cpu_gemm_set_panel_flops(f->I->cpu, 16e9);
  assert_int_equal(st, 0);
  st = run_captured(f->I, "for (i in 1:6) { print(near(P[i], Q[i])) }\n"
                          "e = TRUE; for (i in 1:6) { e = e & exact(P[i], Q[i]) }; cat(\"k-split exact:\", e, \"\\n\")",
                    false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 0) print_error("%s", f->err);
  assert_int_equal(st, 0);
  print_message("%s", strstr(f->out, "k-split"));
  *strstr(f->out, "k-split") = 0;
  assert_string_equal(f->out, "TRUE\nTRUE\nTRUE\nTRUE\nTRUE\nTRUE\n");
  /* interrupted, it stops between the pieces and leaves nothing */
  cpu_gemm_set_panel_flops(f->I->cpu, 1e6);
  assert_int_equal(run_captured(f->I, "At = t(A)", false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  expect_interrupted(f, "C = At %*% B", "t.mls:1:5: error:");
  cpu_gemm_set_panel_flops(f->I->cpu, 16e9);
}

/* LAPACK on a worker thread (ops/linalg.c la_run): with the threshold at 0 every call takes
** that path. Interrupted, each builtin raises at its own span at once and, once its worker has
** ended, nothing is left; run to the end, each gives bit for bit what it gives on this thread,
** errors included. */
static const char *la_setup =
  "A = rand(rows=60, cols=60, seed=2, min=-1, max=1); S = A %*% t(A) + diag(matrix(1, 60, 1))\n"
  "B = rand(rows=60, cols=3, seed=3); W = rand(rows=70, cols=40, seed=4)\n";

static void test_lapack_interrupted(void **state) {
  Fix *f = *state;
  assert_int_equal(run_captured(f->I, la_setup, false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  la_set_thread_flops(f->I, 0);
  expect_interrupted(f, "x = solve(S, B)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = inv(S)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = det(S)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = cholesky(S)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = eigen(S)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = qr(W)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = svd(W)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = 1 + det(S)", "t.mls:1:9: error:");
  la_set_thread_flops(f->I, 1e9);
}

static void test_lapack_threaded(void **state) {
  Fix *f = *state;
  const char *prog =
    "p = function(M) { print(sprintf(\"%.17g\", sum(M * M)) + \" \" + sprintf(\"%.17g\", M[1, 1])) }\n"
    "p(solve(S, B)); p(inv(S)); print(sprintf(\"%.17g\", det(S))); p(cholesky(S))\n"
    "[v, V] = eigen(S); p(v); p(V); [Q, R] = qr(W); p(Q); p(R); [U, D, V2] = svd(W); p(U); p(D); p(V2)\n"
    "g = grad(function(M) { det(M) + sum(solve(M, B)) }); p(g(S))\n";
  assert_int_equal(run_captured(f->I, la_setup, false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  int st = run_captured(f->I, prog, false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 0) print_error("%s", f->err);
  assert_int_equal(st, 0);
  char *here = strdup(f->out);
  uint64_t blocks = mem_stats.blocks, bytes = mem_stats.data_bytes;
  la_set_thread_flops(f->I, 0);
  st = run_captured(f->I, prog, false, &f->out, &f->nout, &f->err, &f->nerr);
  la_set_thread_flops(f->I, 1e9);
  if (st != 0) print_error("%s", f->err);
  assert_int_equal(st, 0);
  assert_string_equal(f->out, here);
  assert_int_equal(mem_stats.data_bytes, bytes);
  assert_int_equal(mem_stats.blocks, blocks);
  free(here);
  /* LAPACK's refusals: the same error either way */
  static const char *const bad[][2] = {
    { "x = solve(matrix(1, 60, 60), B)", "singular" },
    { "x = inv(A - A)", "singular" },
    { "x = cholesky(-S)", "not positive definite" },
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(run_captured(f->I, bad[i][0], false, &f->out, &f->nout, &f->err, &f->nerr), 1);
    here = strdup(f->err);
    assert_non_null(strstr(here, bad[i][1]));
    la_set_thread_flops(f->I, 0);
    st = run_captured(f->I, bad[i][0], false, &f->out, &f->nout, &f->err, &f->nerr);
    la_set_thread_flops(f->I, 1e9);
    assert_int_equal(st, 1);
    assert_string_equal(f->err, here);
    free(here);
    source_release(f->I->err.src);
    f->I->err.src = NULL;
  }
}

/* Sparse factorizations (CHOLMOD, UMFPACK: ops/sparse.c) run on a worker (la_call) past the
** threshold, on a copy of the matrix: the same bits as on this thread; interrupted, each op
** raises at its own span at once and, once its worker has ended, the copy, the factor and the
** matrices the job held are freed (nothing left); run to the end afterwards, each gives its value. */
static void test_sparse_interrupted(void **state) {
  Fix *f = *state;
  const char *setup_prog =
    "n = 3000; i = seq(1, n)\n"
    "SA = table(c(i, i[2:n], i[1:(n-1)]), c(i, i[1:(n-1)], i[2:n]), c(rep(4, n), rep(-1, n - 1), rep(-1, n - 1)), n, n)\n"
    "NS = table(c(i, i[2:n], i[1:(n-1)]), c(i, i[1:(n-1)], i[2:n]), c(rep(4, n), rep(-1, n - 1), rep(2, n - 1)), n, n)\n"
    "B = rand(rows=n, cols=2, seed=3); NI = NS[1:300, 1:300]\n";
  assert_int_equal(run_captured(f->I, setup_prog, false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  /* under the threshold (n = 300: (2/3) n^3 < 1e9) on this thread, at 0 on the worker: the same bits */
  const char *small = "SI = NI + t(NI) + diag(matrix(2, 300, 1)); p = function(M) { print(sprintf(\"%.17g\", sum(M * M))) }\n"
                      "p(solve(NI, B[1:300, ])); p(solve(SI, B[1:300, ])); p(inv(NI)); p(cholesky(SI)); p(det(NI))\n";
  assert_int_equal(run_captured(f->I, small, false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  char *here = strdup(f->out);
  la_set_thread_flops(f->I, 0);
  int st = run_captured(f->I, small, false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 0) print_error("%s", f->err);
  assert_int_equal(st, 0);
  assert_string_equal(f->out, here);
  free(here);
  expect_interrupted(f, "x = solve(SA, B)", "t.mls:1:5: error:");     /* CHOLMOD */
  expect_interrupted(f, "x = cholesky(SA)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = solve(NS, B)", "t.mls:1:5: error:");     /* UMFPACK */
  expect_interrupted(f, "x = inv(NI)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = det(NS)", "t.mls:1:5: error:");
  expect_interrupted(f, "x = 1 + det(SA)", "t.mls:1:9: error:");
  la_set_thread_flops(f->I, 1e9);
  assert_int_equal(run_captured(f->I, "print(max(abs(SA %*% solve(SA, B) - B)) < 1e-12)\n"
                                      "print(max(abs(NS %*% solve(NS, B) - B)) < 1e-12)\n",
                                false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  assert_string_equal(f->out, "TRUE\nTRUE\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_elementwise, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_binary, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_reduction, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_rows, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_fused, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_gemm, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_gemm_panels, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_gemm_ksplit, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_lapack_interrupted, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_lapack_threaded, setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_sparse_interrupted, setup, fix_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
