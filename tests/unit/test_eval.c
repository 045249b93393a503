/*
** test_eval.c — unit tests of the evaluator through interp_run_source: arithmetic,
** broadcasting, indexing, functions, closures, recursion limits, loops, lists and errors.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include "diag.h"
#include "interp/interp.h"
#include "capture.h"
#include "mem.h"
#include "sym.h"
#include "tensor.h"

/* ---- fixture: a fresh interpreter per test, output captured per run ---- */




static int run_echo(Fix *f, const char *code, bool echo) {
  return run_captured(f->I, code, echo, &f->out, &f->nout, &f->err, &f->nerr);
}

static int run(Fix *f, const char *code) { return run_echo(f, code, false); }

/* Runs code, which must succeed and print exactly want. */
static void expect_out(Fix *f, const char *code, const char *want) {
  int st = run(f, code);
  if (st != 0) print_error("'%s' failed (%d): %s\n", code, st, f->err);
  assert_int_equal(st, 0);
  if (strcmp(f->out, want) != 0) print_error("program: '%s'\n", code);
  assert_string_equal(f->out, want);
  assert_string_equal(f->err, "");
}

/* Runs code, which must fail with status st and an error message equal to msg. */
static void expect_error(Fix *f, const char *code, int st, const char *msg) {
  int got = run(f, code);
  if (got != st) print_error("'%s': status %d, stderr: %s\n", code, got, f->err);
  assert_int_equal(got, st);
  assert_error_message(code, f->err, msg);
  /* the interpreter unwound everything */
  assert_int_equal(f->I->nframes, 0);
  assert_null(f->I->env);
  assert_int_equal(f->I->ntmp, 0);
}

/* ---- arithmetic ---- */

static void test_arithmetic(void **state) {
  Fix *f = *state;
  expect_out(f, "print(1 + 2 * 3)", "7\n");
  expect_out(f, "print((1 + 2) * 3)", "9\n");
  expect_out(f, "print(-2^2)", "-4\n");
  expect_out(f, "print(2^3^2)", "512\n");
  expect_out(f, "print(10 - 4 - 3)", "3\n");
  expect_out(f, "print(2^-1)", "0.5\n");
  expect_out(f, "print(7 %% 3); print(-7 %% 3); print(7 %% -3)", "1\n2\n-2\n");
  expect_out(f, "print(7 %/% 2); print(-7 %/% 2)", "3\n-4\n");
  expect_out(f, "print(1/0); print(-1/0); print(0/0); print(log(-1))", "Inf\n-Inf\nNaN\nNaN\n");
  expect_out(f, "print(0.1 + 0.2); print(1/3); print(2/3)", "0.3\n0.3333333\n0.6666667\n");
  expect_out(f, "print(1e-9); print(1e5); print(123456.7); print(1234567)", "1e-09\n1e+05\n123456.7\n1234567\n");
  expect_out(f, "print(TRUE + TRUE); print(3 > 2); print(!TRUE); print(2 == 2)", "2\nTRUE\nFALSE\nTRUE\n");
  expect_out(f, "print(TRUE && FALSE); print(FALSE || TRUE)", "FALSE\nTRUE\n");
  expect_out(f, "print(sqrt(16) + exp(0) + abs(-3))", "8\n");
  expect_out(f, "x = 5\ny = x * 2\nx = x + y\nprint(x)", "15\n");
}

static void test_short_circuit(void **state) {
  Fix *f = *state;
  /* the right side is not evaluated: stop() never runs */
  expect_out(f, "print(FALSE && stop(\"no\")); print(TRUE || stop(\"no\"))", "FALSE\nTRUE\n");
  expect_error(f, "print(TRUE && stop(\"yes\"))", 1, "yes");
  expect_error(f, "print([1, 2] && TRUE)", 1,
               "'&&' takes a boolean or a number, got a 1x2 matrix (use '&' for elementwise)");
}

static void test_strings(void **state) {
  Fix *f = *state;
  expect_out(f, "print(\"loss \" + 0.5)", "loss 0.5\n");
  expect_out(f, "print(\"a\" + \"b\")", "ab\n");
  expect_out(f, "print(1 + \"x\")", "1x\n");
  /* numbers become text with 15 significant digits */
  expect_out(f, "print(\"v=\" + (0.1 + 0.2))", "v=0.3\n");
  expect_out(f, "print(\"v=\" + 1/3)", "v=0.333333333333333\n");
  expect_out(f, "print(\"n=\" + 1e5 + \" \" + 1e-9)", "n=1e+05 1e-09\n");
  expect_out(f, "print(\"b=\" + TRUE)", "b=TRUE\n");
  expect_out(f, "print(\"a\\tb|\"); print('it\\'s'); print(\"q\\\"q\\\\\")", "a\tb|\nit's\nq\"q\\\n");
  expect_out(f, "print(paste(\"a\", 1, TRUE))", "a 1 TRUE\n");
}

/* ---- matrices, broadcasting ---- */

static void test_broadcasting(void **state) {
  Fix *f = *state;
  expect_out(f, "A = [1, 2, 3; 4, 5, 6]; print(A + 1)", "2 3 4\n5 6 7\n");
  expect_out(f, "A = [1, 2, 3; 4, 5, 6]; print(10 - A)", "9 8 7\n6 5 4\n");
  expect_out(f, "A = [1, 2, 3; 4, 5, 6]; print(A + [10, 20, 30])", "11 22 33\n14 25 36\n");
  expect_out(f, "A = [1, 2, 3; 4, 5, 6]; print([10, 20, 30] + A)", "11 22 33\n14 25 36\n");
  expect_out(f, "A = [1, 2, 3; 4, 5, 6]; print(A * [1; 2])", "1  2  3\n8 10 12\n");
  expect_out(f, "A = [1, 2, 3; 4, 5, 6]; print(A + A)", "2  4  6\n8 10 12\n");
  expect_out(f, "A = [1, 2; 3, 4]; print(A / [1, 2])", "1 1\n3 2\n");
  expect_out(f, "print([1, 2] == [1, 3])", "1 0\n");
  expect_out(f, "print(-[1, -2])", "-1 2\n");
  expect_error(f, "A = [1, 2, 3; 4, 5, 6]; print(A + t(A))", 1,
               "non-conformable operands for '+': 2x3 and 3x2");
  expect_error(f, "print([1, 2, 3] + [10; 20])", 1, "non-conformable operands for '+': 1x3 and 2x1");
  expect_error(f, "print([1, 2; 3, 4] * [1, 2, 3])", 1, "non-conformable operands for '*': 2x2 and 1x3");
}

static void test_matmul(void **state) {
  Fix *f = *state;
  expect_out(f, "A = [1, 2, 3; 4, 5, 6]; print(A %*% t(A))", "14 32\n32 77\n");
  expect_out(f, "print(as.scalar([1, 2] %*% [3; 4]))", "11\n");
  expect_out(f, "B = [1, 2; 3, 4] %*% [1; 1]; print(nrow(B)); print(ncol(B)); print(B)", "2\n1\n3\n7\n");
  expect_error(f, "print([1, 2] %*% [1, 2])", 1, "non-conformable arguments for '%*%': 1x2 and 1x2");
}

static void test_builtins(void **state) {
  Fix *f = *state;
  expect_out(f, "X = [1, 2; 3, 4]; print(sum(X)); print(mean(X)); print(max([1, 5, 2])); print(min([4, -1]))",
             "10\n2.5\n5\n-1\n");
  expect_out(f, "X = matrix(\"1 2 3 4 5 6\", rows=2, cols=3); print(X); print(nrow(X) * 10 + ncol(X))",
             "1 2 3\n4 5 6\n23\n");
  expect_out(f, "print(matrix(7, rows=2, cols=2))", "7 7\n7 7\n");
  expect_out(f, "print(seq(1, 10, 3))", " 1\n 4\n 7\n10\n");
  expect_out(f, "print(1:3); print(3:1)", "1\n2\n3\n3\n2\n1\n");
  expect_out(f, "print(t([1, 2, 3]))", "1\n2\n3\n");
  expect_out(f, "print(rowSums([1, 2; 3, 4])); print(colSums([1, 2; 3, 4]))", "3\n7\n4 6\n");
  expect_out(f, "print(sprintf(\"%d-%s\", 3, \"x\"))", "3-x\n");
  expect_out(f, "print(toString([1, 2; 3, 4]))", "1 2\n3 4\n");
  expect_out(f, "print(matrix(0, rows=0, cols=3))", "[0 x 3 matrix]\n");
}

/* ---- indexing ---- */

static void test_indexing(void **state) {
  Fix *f = *state;
  run(f, "A = [1, 2, 3; 4, 5, 6; 7, 8, 9]");
  expect_out(f, "print(A[2, 3])", "6\n");
  expect_out(f, "print(A[1, ])", "1 2 3\n");
  expect_out(f, "print(A[, 2])", "2\n5\n8\n");
  expect_out(f, "print(A[2:3, 1:2])", "4 5\n7 8\n");
  expect_out(f, "print(A[3:2, 1])", "7\n4\n");
  expect_out(f, "print(A[[3; 1; 3], ])", "7 8 9\n1 2 3\n7 8 9\n");
  expect_out(f, "v = [5, 6, 7]; print(v[2]); w = t(v); print(w[3])", "6\n7\n");
  expect_error(f, "print(A[4, 1])", 1, "index 4 out of bounds for 3x3 matrix (rows)");
  expect_error(f, "print(A[1, 5])", 1, "index 5 out of bounds for 3x3 matrix (columns)");
  expect_error(f, "print(A[2])", 1,
               "a single index needs a row or column vector, got a 3x3 matrix (use X[i, j])");
}

static void test_left_indexing(void **state) {
  Fix *f = *state;
  expect_out(f, "X = [1, 2, 3; 4, 5, 6]; X[1, 2] = 20; print(X)", "1 20 3\n4  5 6\n");
  expect_out(f, "X[2, ] = 0; print(X)", "1 20 3\n0  0 0\n");
  expect_out(f, "X[, 3] = [7; 8]; print(X)", "1 20 7\n0  0 8\n");
  expect_out(f, "X[1:2, 1:2] = [9, 9; 9, 9]; print(X)", "9 9 7\n9 9 8\n");
  expect_out(f, "Y = X; Y[1, 1] = -1; print(X[1, 1]); print(Y[1, 1])", "9\n-1\n");
  expect_error(f, "X[3, 1] = 1", 1, "index 3 out of bounds for 2x3 matrix (rows)");
  /* a failed left-index leaves the matrix as it was */
  expect_out(f, "print(X)", "9 9 7\n9 9 8\n");
}

/* ---- functions and closures ---- */

static void test_functions(void **state) {
  Fix *f = *state;
  run(f, "f = function(x, y = 2) { z = x * y; return(z) }");
  expect_out(f, "print(f(3)); print(f(3, 4)); print(f(y = 5, x = 2)); print(f(2, y = 10))", "6\n12\n10\n20\n");
  expect_out(f, "g = function(x) { x + 1 }; print(g(1))", "2\n");
  expect_out(f, "h = function() { return(7); 8 }; print(h())", "7\n");
  /* defaults are evaluated at call time, and may use earlier parameters */
  expect_out(f, "k = function(a, b = a * 10) a + b; print(k(2)); print(k(2, 1))", "22\n3\n");
  /* assignment inside a function is local */
  expect_out(f, "x = 1; m = function() { x = 2; x }; print(m()); print(x)", "2\n1\n");
  /* functions are values */
  expect_out(f, "apply2 = function(fn, v) fn(fn(v)); print(apply2(g, 5))", "7\n");
  expect_error(f, "f(1, 2, 3)", 1, "too many arguments in call to f() (2 expected, got 3)");
  expect_error(f, "f(q = 1)", 1, "unknown argument 'q' in call to f()");
  expect_error(f, "f()", 1, "argument 'x' is missing in call to f(), with no default");
  expect_error(f, "nosuch(1)", 1, "could not find function 'nosuch'");
}

static void test_dml_functions(void **state) {
  Fix *f = *state;
  run(f, "h = function(matrix[double] X, double e = 0)\n"
         "  return (matrix[double] Y, double n) {\n"
         "  Y = X / (sum(X) + e); n = nrow(X)\n"
         "}");
  expect_out(f, "[Y, n] = h([1, 3]); print(Y); print(n)", "0.25 0.75\n1\n");
  expect_out(f, "r = h([2; 2]); print(length(r))", "2\n");
  expect_error(f, "d = function(x) return (double y) { y = [1, 2] }; d(1)", 1,
               "result 'y' of d() must be a number, got a 1x2 matrix");
}

static void test_closures(void **state) {
  Fix *f = *state;
  expect_out(f, "make = function(n) { function(x) x + n }\nadd3 = make(3)\nadd10 = make(10)\n"
                "print(add3(1)); print(add10(1)); print(add3(100))", "4\n11\n103\n");
  /* the closure sees its defining environment, not a snapshot */
  expect_out(f, "mk = function() { n = 1; g = function() n; n = 5; g }; print(mk()())", "5\n");
  /* nested closures reach two levels out */
  expect_out(f, "outer = function(a) { function(b) { function(c) a * 100 + b * 10 + c } }\n"
                "print(outer(1)(2)(3))", "123\n");
  /* closures outlive the call and keep their own copy of captured matrices */
  expect_out(f, "cap = function(M) function() sum(M)\nM = [1, 2]; s = cap(M); M[1, 1] = 100\nprint(s())", "3\n");
}

/* The cycle collector (src/interp/gc.c): each program leaves cycles that reference counting
** cannot free; the counts are the objects of each cycle, derived by hand in the comments. */
static void test_cycles(void **state) {
  Fix *f = *state;
  gc_collect(f->I);
  int64_t base = gc_tracked(f->I);
  /* the env of g's call, h, jh, and the list of functions jh's cache keeps: 4 */
  expect_out(f, "g = function(x) { h = function(y) { y + 1 }; jh = jit(h); jh(x) }; print(g(1))", "2\n");
  assert_int_equal(gc_collect(f->I), 4);
  /* env -> l -> k -> env: the env, the list and k */
  expect_out(f, "f = function() { l = list(); k = function() l; l = list(k); 0 }; print(f())", "0\n");
  assert_int_equal(gc_collect(f->I), 3);
  /* two envs: f2's (holds g and hh) and g's call (holds h, whose env it is): 2 envs, g, h */
  expect_out(f, "f2 = function() { g = function() { h = function() g; h }; hh = g(); 0 }; print(f2())", "0\n");
  assert_int_equal(gc_collect(f->I), 4);
  /* grad's function keeps k, whose env keeps gk: the env, k, gk */
  expect_out(f, "b = function(x) { k = function(y) y * x; gk = grad(k); gk(2) }; print(b(3))", "3\n");
  assert_int_equal(gc_collect(f->I), 3);
  /* a closure stored only in its own env is freed by counting, without the collector */
  expect_out(f, "f3 = function() { a = function() 1; b = a; 0 }; print(f3())", "0\n");
  assert_int_equal(gc_collect(f->I), 0);
  /* what a global still reaches is not garbage: the closure returned keeps its cycle alive */
  expect_out(f, "mk = function() { l = list(); k = function() length(l); l = list(k, k); k }\nK = mk(); print(K())", "2\n");
  assert_int_equal(gc_collect(f->I), 0);
  expect_out(f, "print(K())", "2\n");
  expect_out(f, "K = 0", "");
  assert_int_equal(gc_collect(f->I), 3);
  /* gc() is the same collection */
  expect_out(f, "f(); print(gc())", "3\n");
  /* a loop making a cycle per call: collections keep the objects alive bounded (the threshold
  ** is 10000 new objects, or as many as survived the last collection) */
  expect_out(f, "for (i in 1:30000) f()", "");
  assert_true(gc_tracked(f->I) - base < 25000);
  gc_collect(f->I);
  assert_int_equal(gc_tracked(f->I) - base, 6);  /* the six global functions g, f, f2, b, f3, mk */
}

/* Each interpreter has its own heap (Interp.gc): a cycle left by one is on its heap alone, and
** only its collection frees it; a value kept past its interpreter's end is freed without it. */
static void test_cycles_per_interp(void **state) {
  Fix *f = *state;
  void *st2 = NULL;
  assert_int_equal(fix_setup(&st2), 0);
  Fix *g = st2;
  gc_collect(f->I);
  gc_collect(g->I);
  int64_t base_f = gc_tracked(f->I), base_g = gc_tracked(g->I);
  /* in g: the global function cy, and its call's cycle env -> l -> k -> env (3 objects) */
  expect_out(g, "cy = function() { l = list(); k = function() l; l = list(k); 0 }; print(cy())", "0\n");
  assert_int_equal(gc_tracked(g->I) - base_g, 4);
  assert_int_equal(gc_tracked(f->I), base_f);
  assert_int_equal(gc_collect(f->I), 0);                 /* not f's to free */
  assert_int_equal(gc_tracked(g->I) - base_g, 4);
  /* f makes its own; each collection frees its interpreter's cycle */
  expect_out(f, "cy = function() { l = list(); k = function() l; l = list(k); 0 }; print(cy())", "0\n");
  assert_int_equal(gc_tracked(f->I) - base_f, 4);
  assert_int_equal(gc_collect(g->I), 3);
  assert_int_equal(gc_tracked(f->I) - base_f, 4);
  assert_int_equal(gc_collect(f->I), 3);
  assert_int_equal(gc_tracked(f->I) - base_f, 1);
  assert_int_equal(gc_tracked(g->I) - base_g, 1);
  /* a list (and the function in it) held past the end of g */
  expect_out(g, "L = list(1, function(x) x + 1)", "");
  assert_int_equal(gc_tracked(g->I) - base_g, 3);
  Value v = sym_intern(&g->I->syms, "L", 1)->global;
  assert_int_equal(v.t, VT_LIST);
  val_retain(v);
  fix_teardown(&st2);
  assert_int_equal(v.u.l->n, 2);
  assert_int_equal(v.u.l->items[1].t, VT_FUNC);
  val_release(v);                                        /* (ASan, valgrind: nothing of g is touched) */
  assert_int_equal(gc_tracked(f->I) - base_f, 1);
}

static void test_recursion(void **state) {
  Fix *f = *state;
  expect_out(f, "fact = function(n) { if (n <= 1) 1 else n * fact(n - 1) }; print(fact(10))", "3628800\n");
  expect_out(f, "fib = function(n) if (n < 2) n else fib(n - 1) + fib(n - 2); print(fib(15))", "610\n");
  expect_out(f, "even = function(n) if (n == 0) TRUE else odd(n - 1)\n"
                "odd = function(n) if (n == 0) FALSE else even(n - 1)\nprint(even(10)); print(odd(7))",
             "TRUE\nTRUE\n");
}

/* The interpreter recurses on the C stack: like src/main.c, run deep recursion on a thread
** with a large stack. */
typedef struct Job { void (*fn)(void **); void **state; } Job;

static void *job_main(void *p) {
  Job *j = p;
  j->fn(j->state);
  return NULL;
}

static void on_big_stack(void (*fn)(void **), void **state) {
  pthread_attr_t attr;
  pthread_t th;
  Job j = { fn, state };
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, (size_t)1 << 30);
  assert_int_equal(pthread_create(&th, &attr, job_main, &j), 0);
  pthread_join(th, NULL);
  pthread_attr_destroy(&attr);
}

static void deep_recursion_body(void **state) {
  Fix *f = *state;
  /* a depth of 10000 must work (LANGUAGE.md §9: the limit is at least 10000) */
  expect_out(f, "deep = function(n) if (n == 0) 0 else 1 + deep(n - 1); print(deep(10000))", "10000\n");
  /* unbounded recursion is the error "stack overflow", status 1 */
  int st = run(f, "x = 7\nr = function(n) r(n + 1)\nr(1)");
  assert_int_equal(st, 1);
  assert_non_null(strstr(f->I->err.msg, "stack overflow"));
  assert_non_null(strstr(f->err, "error: stack overflow"));
  assert_non_null(strstr(f->err, "  in r() at t.mls:2:17\n"));
  assert_int_equal(f->I->nframes, 0);
  assert_null(f->I->env);
  assert_int_equal(f->I->ntmp, 0);
  /* and the interpreter goes on */
  expect_out(f, "print(x); print(deep(100))", "7\n100\n");
  /* the same through a body with more nesting per call */
  st = run(f, "q = function(n) { if (n < 0) { 0 } else { y = 1 + (2 * (3 + q(n + 1))); y } }; q(1)");
  assert_int_equal(st, 1);
  assert_non_null(strstr(f->I->err.msg, "stack overflow"));
}

static void test_stack_overflow(void **state) { on_big_stack(deep_recursion_body, state); }

/* The library entry point on an ordinary 8 MiB stack (how an embedding host or a test calls
** it): the frame limit must still come first, as an error and never a crash. Run in a child
** process so a crash fails this test instead of killing the whole binary. */
static void test_stack_overflow_default_stack(void **state) {
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    Interp *I = interp_new();
    char *err = NULL;
    size_t nerr = 0;
    I->errf = open_memstream(&err, &nerr);
    const char *code = "q = function(n) { if (n < 0) { 0 } else { y = 1 + (2 * (3 + q(n + 1))); y } }\nq(1)";
    Source *src = source_new("t.mls", code, strlen(code));
    int st = interp_run_source(I, src, false);
    source_release(src);
    fclose(I->errf);
    I->errf = stderr;
    int ok = st == 1 && strstr(err, "error: stack overflow") != NULL;
    free(err);
    interp_free(I);
    _exit(ok ? 0 : 3);
  }
  int ws = 0;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  if (WIFSIGNALED(ws)) print_error("child killed by signal %d\n", WTERMSIG(ws));
  assert_true(WIFEXITED(ws));
  assert_int_equal(WEXITSTATUS(ws), 0);
}

/* ---- control flow ---- */

static void test_break_next(void **state) {
  Fix *f = *state;
  expect_out(f, "s = 0; for (i in 1:10) { if (i %% 2 == 0) next; if (i > 7) break; s = s + i }; print(s)",
             "16\n");
  expect_out(f, "i = 0; while (TRUE) { i = i + 1; if (i >= 5) break }; print(i)", "5\n");
  expect_out(f, "n = 0; i = 0; while (i < 10) { i = i + 1; if (i <= 8) next; n = n + i }; print(n)", "19\n");
  /* break leaves only the inner loop */
  expect_out(f, "c = 0; for (i in 1:3) { for (j in 1:3) { if (j == 2) break; c = c + 1 } }; print(c)", "3\n");
  /* next inside a function called from a loop body is its own loop's */
  expect_out(f, "g = function() { t = 0; for (k in 1:4) { if (k == 2) next; t = t + k }; t }\n"
                "r = 0; for (i in 1:2) r = r + g(); print(r)", "16\n");
  /* return from inside loops */
  expect_out(f, "find = function(v) { for (i in 1:10) { while (TRUE) { if (i == v) return(i * 10); break } }; -1 }\n"
                "print(find(3)); print(find(11))", "30\n-1\n");
  expect_out(f, "for (i in 3:1) print(i)", "3\n2\n1\n");
  expect_out(f, "for (e in [1, 2; 3, 4]) print(e)", "1\n2\n3\n4\n");
  expect_out(f, "for (e in list(1, \"a\")) print(e)", "1\na\n");
  expect_out(f, "if (FALSE) print(1) else if (FALSE) print(2) else print(3)", "3\n");
  expect_error(f, "if (0/0) print(1)", 1, "condition is NaN");
  expect_error(f, "if ([1, 2]) print(1)", 1,
               "condition must be a boolean, a number or a 1x1 matrix, got a 1x2 matrix");
}

/* ---- lists ---- */

static void test_lists(void **state) {
  Fix *f = *state;
  run(f, "L = list(a = 1, b = \"two\", 3)");
  expect_out(f, "print(L$a); print(L$b); print(L[3]); print(length(L))", "1\ntwo\n3\n3\n");
  expect_out(f, "print(L[\"b\"])", "two\n");
  expect_out(f, "L$c = 4; print(length(L)); L$a = 10; print(L$a); print(length(L))", "4\n10\n4\n");
  expect_out(f, "print(L$c)", "4\n");
  /* value semantics: a copy is independent */
  expect_out(f, "M = L; M$a = -1; print(L$a); print(M$a)", "10\n-1\n");
  /* nested lists and lists in functions */
  expect_out(f, "N = list(inner = list(x = 5)); print(N$inner$x)", "5\n");
  expect_out(f, "mk = function(v) list(val = v, sq = v * v); r = mk(3); print(r$val + r$sq)", "12\n");
  expect_out(f, "N$inner$x = 6; print(N$inner$x)", "6\n");
  expect_out(f, "E = list(); print(length(E))", "0\n");
  expect_out(f, "s = 0; for (v in list(1, 2, 3)) s = s + v; print(s)", "6\n");
}

/* ---- echo (the REPL's expression statements) ---- */

static void test_echo(void **state) {
  Fix *f = *state;
  assert_int_equal(run_echo(f, "1 + 1", true), 0);
  assert_string_equal(f->out, "2\n");
  assert_int_equal(run_echo(f, "x = 3", true), 0);
  assert_string_equal(f->out, "");
  assert_int_equal(run_echo(f, "\"s\"", true), 0);
  assert_string_equal(f->out, "\"s\"\n");
  assert_int_equal(run_echo(f, "print(\"s\")", true), 0);
  assert_string_equal(f->out, "s\n");
  assert_int_equal(run_echo(f, "x\n[1, 2; 3, 4]\nTRUE", true), 0);
  assert_string_equal(f->out, "3\n1 2\n3 4\nTRUE\n");
  /* without echo a script prints nothing for expression statements */
  assert_int_equal(run_echo(f, "1 + 1\nx", false), 0);
  assert_string_equal(f->out, "");
}

/* interp_run_repl_chunk: incomplete input returns -1 silently (the REPL reads more). */
static int run_repl(Fix *f, const char *code) {
  free(f->out);
  free(f->err);
  f->out = f->err = NULL;
  f->I->out = open_memstream(&f->out, &f->nout);
  f->I->errf = open_memstream(&f->err, &f->nerr);
  Source *src = source_new("<stdin>", code, strlen(code));
  int st = interp_run_repl_chunk(f->I, src);
  source_release(src);
  fclose(f->I->out);
  fclose(f->I->errf);
  f->I->out = stdout;
  f->I->errf = stderr;
  return st;
}

static void expect_repl_incomplete(Fix *f, const char *code) {
  int st = run_repl(f, code);
  if (st != -1) print_error("'%s': status %d, stderr: %s\n", code, st, f->err);
  assert_int_equal(st, -1);
  assert_string_equal(f->err, "");
}

static void test_repl_chunks(void **state) {
  Fix *f = *state;
  assert_int_equal(run_repl(f, "x = 2"), 0);
  assert_int_equal(run_repl(f, "x * 21"), 0);
  assert_string_equal(f->out, "42\n");
  expect_repl_incomplete(f, "x +");
  expect_repl_incomplete(f, "f(1,");
  expect_repl_incomplete(f, "{");
  expect_repl_incomplete(f, "y = [1, 2");
  /* a real syntax error is reported at once */
  assert_int_equal(run_repl(f, "x = )"), 2);
  assert_string_equal(f->err, "<stdin>:1:5: error: unexpected ')'\nx = )\n    ^\n");
  /* the completed input runs */
  assert_int_equal(run_repl(f, "if (x)\n  x + 1"), 0);
  assert_string_equal(f->out, "3\n");
  /* a header whose body is on the next line is incomplete too (LANGUAGE.md §2) */
  expect_repl_incomplete(f, "if (x)");
  expect_repl_incomplete(f, "while (x)");
  expect_repl_incomplete(f, "g = function(a)");
}

/* ---- errors ---- */

static void test_runtime_error_report(void **state) {
  Fix *f = *state;
  int st = run(f, "f = function(a) {\n  a + undefined_var\n}\ny = f(1)");
  assert_int_equal(st, 1);
  assert_string_equal(f->I->err.msg, "object 'undefined_var' not found");
  assert_string_equal(f->err,
                      "t.mls:2:7: error: object 'undefined_var' not found\n"
                      "  a + undefined_var\n"
                      "      ^~~~~~~~~~~~~\n"
                      "  in f() at t.mls:4:5\n");
  st = run(f, "stop(\"custom message\")");
  assert_int_equal(st, 1);
  assert_string_equal(f->err,
                      "t.mls:1:1: error: custom message\n"
                      "stop(\"custom message\")\n"
                      "^~~~~~~~~~~~~~~~~~~~~~\n");
}

static void test_syntax_error_status(void **state) {
  Fix *f = *state;
  int st = run(f, "x = 1\ny = (x + )");
  assert_int_equal(st, 2);
  assert_string_equal(f->err,
                      "t.mls:2:10: error: unexpected ')'\n"
                      "y = (x + )\n"
                      "         ^\n");
  /* nothing of a chunk with a syntax error runs */
  Symbol *x = sym_lookup(&f->I->syms, "x", 1);
  assert_true(x == NULL || x->global.t == VT_UNBOUND);
  expect_error(f, "break", 2, "'break' outside a loop");
}

/* X = X / 255 writes over X's buffer when nothing else holds it (eval.c lend_target), and
** never when something does: a copy, a view, the same matrix on both sides. */
static const Tensor *global_mat(Fix *f, const char *name) {
  Value v = sym_intern(&f->I->syms, name, strlen(name))->global;
  assert_int_equal(v.t, VT_MAT);
  return v.u.m;
}

static void test_inplace_assign(void **state) {
  Fix *f = *state;
  expect_out(f, "X = matrix(510, rows = 100, cols = 20)", "");
  const Tensor *x0 = global_mat(f, "X");
  expect_out(f, "X = X / 255; X = -X; X = 3 + X; print(sum(X))", "2000\n");
  assert_ptr_equal(global_mat(f, "X"), x0);                /* each op wrote into X's buffer */
  expect_out(f, "Y = X; X = X * 2; print(sum(Y)); print(sum(X))", "2000\n4000\n");
  assert_ptr_equal(global_mat(f, "Y"), x0);                /* Y kept it: X got a fresh one */
  assert_ptr_not_equal(global_mat(f, "X"), x0);
  expect_out(f, "V = Y[1:50, ]; Y = Y + 1; print(sum(V)); Y = Y * Y; print(sum(Y))", "1000\n8000\n");
  expect_out(f, "f = function() { X = X + 1; sum(X) }; print(f()); print(sum(X))", "6000\n4000\n");
  /* X = X[perm, ]: the rows permuted in X's buffer; a copy keeps its own */
  expect_out(f, "P = matrix(seq(1, 3000), rows = 1000, cols = 3)", "");
  const Tensor *p0 = global_mat(f, "P");
  expect_out(f, "P = P[1001 - seq(1, 1000), ]; print(P[1, ])", "2998 2999 3000\n");
  assert_ptr_equal(global_mat(f, "P"), p0);
  expect_out(f, "Q = P; P = P[1001 - seq(1, 1000), ]; print(P[1, ]); print(Q[1, ])", "1 2 3\n2998 2999 3000\n");
  assert_ptr_equal(global_mat(f, "Q"), p0);
}

/* Minor page faults of 10 calls of g (defined by the fixture's last statement) after 3 warm-up
** calls; its result's row count printed as want. */
static long faults_of_10_calls(Fix *f, const char *want) {
  mem_stats.counted_peak = mem_in_use();
  expect_out(f, "for (k in 1:3) b = g(W, S, U, V, cw, 3)", "");
  struct rusage r0, r1;
  getrusage(RUSAGE_SELF, &r0);
  expect_out(f, "for (k in 1:10) b = g(W, S, U, V, cw, 3); print(nrow(b[[1]]))", want);
  getrusage(RUSAGE_SELF, &r1);
  return r1.ru_minflt - r0.ru_minflt;
}

static const char cg_step[] =
    "V = rand(rows = 1000, cols = 10, seed = 5); S = rand(rows = 1000, cols = 10, seed = 7); cw = t(colSums(W))\n"
    "U = rand(rows = 2000, cols = 10, seed = 6)\n"
    "g = jit(function(W, S, U, V, cw, n) {\n"
    "  HS = t(W * (U %*% t(S))) %*% U + 0.001 * S * cw\n"
    "  V = V + n / sum(S * HS) * S\n"
    "  list(HS, V)\n"
    "})";

/* A jit run whose memory plan keeps its peak at one large product plus the inputs reuses that
** product's buffer from the CPU backend's cache at every call (cpu.c, cache_over's slack): without
** the slack the next small allocation evicted it and each call faulted 16 MB in again (about
** 3900 page faults a call; minor faults counted with getrusage). The counted peak is reset to
** what is in use, as in a process that runs only this. W has 30% nonzeros, past
** MK_DENSE_W_MAX, so the product is dense. */
static void test_jit_run_reuses_its_buffers(void **state) {
  Fix *f = *state;
  expect_out(f, "W = rand(rows = 2000, cols = 1000, seed = 3) < 0.3", "");
  expect_out(f, cg_step, "");
  long faults = faults_of_10_calls(f, "1000\n");
  if (faults >= 2000) print_error("%ld minor page faults in 10 calls\n", faults);
  assert_true(faults < 2000);
}

/* The same step at 15% nonzeros: W * (U %*% t(S)) a masked product (sparse, a few MB of CSR
** arrays and scratch a call, from malloc), whose memory comes back from malloc at the next call
** (here, on the process's main thread and glibc's main arena, with or without main's policy
** mem_tune_malloc; the mls binary's interpreter thread needs it: tests/staging/
** test_masked_faults.sh counts that process's faults). Its result equals the eager step's to
** 1e-12. Under ASan or another sanitizer malloc is the sanitizer's (which holds freed blocks
** in quarantine and ignores mallopt), so there the faults are not this code's and only the
** values are checked. */
static void test_masked_run_reuses_its_memory(void **state) {
  Fix *f = *state;
  mem_tune_malloc();
  expect_out(f, "W = rand(rows = 2000, cols = 1000, seed = 3) < 0.15", "");
  expect_out(f, cg_step, "");
  long faults = faults_of_10_calls(f, "1000\n");
  expect_out(f, "e = (function(W, S, U, V, cw, n) {\n"
                "  HS = t(W * (U %*% t(S))) %*% U + 0.001 * S * cw\n"
                "  list(HS, V + n / sum(S * HS) * S)\n"
                "})(W, S, U, V, cw, 3)\n"
                "print(max(abs(b[[1]] - e[[1]])) <= 1e-12 * max(abs(e[[1]])))", "TRUE\n");
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  (void)faults;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
  (void)faults;
#else
  if (faults >= 2000) print_error("%ld minor page faults in 10 calls\n", faults);
  assert_true(faults < 2000);
#endif
#else
  if (faults >= 2000) print_error("%ld minor page faults in 10 calls\n", faults);
  assert_true(faults < 2000);
#endif
}

static void test_errors_keep_globals(void **state) {
  Fix *f = *state;
  expect_out(f, "x = 42\nL = list(a = [1, 2])\nf = function(n) n * 2", "");
  /* a runtime error: what ran before it stays, what follows does not run */
  assert_int_equal(run(f, "y = 1\nz = nosuch + 1\nw = 2"), 1);
  assert_string_equal(f->I->err.msg, "object 'nosuch' not found");
  expect_out(f, "print(x); print(L$a); print(f(x)); print(y)", "42\n1 2\n84\n1\n");
  expect_out(f, "print(exists(\"z\")); print(exists(\"w\"))", "FALSE\nFALSE\n");
  /* an error deep inside functions */
  assert_int_equal(run(f, "g = function(n) { M = matrix(n, rows=2, cols=2); if (n == 0) M[5, 5] else g(n - 1) + M }\n"
                          "x = g(30)"), 1);
  assert_string_equal(f->I->err.msg, "index 5 out of bounds for 2x2 matrix (rows)");
  expect_out(f, "print(x)", "42\n");
  /* a syntax error */
  assert_int_equal(run(f, "x = = 3"), 2);
  expect_out(f, "print(x + 1)", "43\n");
  /* an error while assigning a global keeps the old value */
  assert_int_equal(run(f, "x = stop(\"no\")"), 1);
  expect_out(f, "print(x)", "42\n");
}

/* Errors of every kind, then interp_free: no data buffer stays allocated (valgrind checks
** the rest: valgrind --leak-check=full --error-exitcode=1 build/tests/test_eval). */
static void errors_then_free_body(void **state) {
  uint64_t bytes = mem_stats.data_bytes;
  Fix *f = *state;
  static const char *const progs[] = {
    "A = matrix(1, rows=100, cols=100); B = A + 1; C = [1, 2] + [1, 2, 3]",
    "f = function(a) { M = matrix(1, rows=3, cols=3); L = list(M, \"s\", list(M)); stop(\"boom\") }; f(1)",
    "g = function(n) { A = matrix(n, rows=2, cols=2); if (n == 0) A[5, 5] else g(n - 1) + A }; g(50)",
    "x = matrix(1, rows=1e6, cols=1e6)",
    "r = function(n) { M = [n, n]; r(n + 1) }; r(1)",
    "h = function(x) return (double y) { y = [1, 2] }; h(1)",
    "mk = function() { M = matrix(2, rows=10, cols=10); function() M + undefined }; c = mk(); c()",
    "L = list(a = matrix(1, rows=5, cols=5)); L$b = L; for (i in 1:3) { L$a[1, 1] = i; if (i == 2) stop(\"in loop\") }",
    "y = (1 + ",
    "s = \"abc\" + nosuch",
  };
  for (size_t i = 0; i < sizeof progs / sizeof progs[0]; i++) {
    int st = run(f, progs[i]);
    if (st == 0) print_error("'%s' succeeded\n", progs[i]);
    assert_true(st == 1 || st == 2);
    assert_int_equal(f->I->nframes, 0);
    assert_int_equal(f->I->ntmp, 0);
  }
  interp_free(f->I);
  f->I = interp_new();
  assert_int_equal(mem_stats.data_bytes, bytes);
}

static void test_errors_then_free(void **state) { on_big_stack(errors_then_free_body, state); }

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_arithmetic, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_short_circuit, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_strings, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_broadcasting, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_matmul, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_builtins, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_indexing, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_left_indexing, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_functions, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_dml_functions, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_closures, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_cycles, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_cycles_per_interp, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_recursion, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_stack_overflow, fix_setup, fix_teardown),
    cmocka_unit_test(test_stack_overflow_default_stack),
    cmocka_unit_test_setup_teardown(test_break_next, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_lists, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_echo, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_repl_chunks, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_runtime_error_report, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_syntax_error_status, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_errors_keep_globals, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_inplace_assign, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_jit_run_reuses_its_buffers, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_masked_run_reuses_its_memory, fix_setup, fix_teardown),
    cmocka_unit_test_setup_teardown(test_errors_then_free, fix_setup, fix_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
