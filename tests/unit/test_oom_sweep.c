/*
** test_oom_sweep.c — allocation-failure injection (SQLite's OOM tests, issue 12): each program
** below is run once to count its allocations, then once per N with the Nth one failing. Every
** run must end either as the clean run did (the failure never came) or with a located error
** that names the out-of-memory, and must leave no allocation behind: the blocks of mem_alloc,
** the matrix bytes and the strings and workspace counted against --max-memory (work_bytes)
** are counted before interp_new and after interp_free (and under ASan,
** LeakSanitizer checks after each program). MLS_OOM_STRIDE=k tries every kth N only;
** MLS_OOM_N=n the nth only.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdbool.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "diag.h"
#include "interp/interp.h"
#include "mem.h"

/* LeakSanitizer's entry point, present only in a sanitizer build (make sanitize-run). */
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

typedef struct Prog {
  const char *name;
  bool staged;            /* run as --staged does (straight-line blocks staged, fused) */
  const char *code;
} Prog;

static char io_code[1024];          /* programs 6 and 10: their files' paths are made at run time (main) */
static char ckpt_code[1024];
static char stdlib_abs[4096];        /* the repository's stdlib/ (make unit runs in its root) */

static Prog progs[] = {
  { "parse and control flow", false,
    "f = function(a, b = 2) { if (a > b) { a - b } else { a + b } }\n"
    "s = 0\n"
    "for (i in 1:5) { s = s + f(i) }\n"
    "k = 0\n"
    "while (k < 3) { k = k + 1; if (k == 2) next }\n"
    "x = [1, 2, 3]\n"
    "x[2] = 5\n"
    "print(s); print(k); print(x)\n" },
  { "functions, closures, lists", false,
    "fib = function(n) { if (n < 2) n else fib(n - 1) + fib(n - 2) }\n"
    "mk = function() { c = 0; function() { c = c + 1; c } }\n"
    "ctr = mk(); ctr(); ctr()\n"
    "L = list(a = 1, b = \"x\", c = [1, 2; 3, 4])\n"
    "L$d = L$c %*% L$c\n"
    "print(fib(6)); print(ctr()); print(L$d); print(names(L))\n" },
  { "grad, value_and_grad, jacobian, hessian, jvp, trace_grad", false,
    "f = function(x) { sum(x^2 * 3 + sin(x)) }\n"
    "print(grad(f)([1, 2, 3]))\n"
    "g = grad(grad(function(t) { t^3 }))\n"
    "print(g(2))\n"
    "vg = value_and_grad(function(W) { sum(W %*% [1; 2]) })\n"
    "r = vg([1, 2; 3, 4])\n"
    "print(r)\n"
    "print(jacobian(function(x) { x * 2 + x^2 })([1; 2]))\n"
    "print(hessian(function(x) { sum(x^2) + prod(x) })([1; 2]))\n"
    "print(jvp(function(x) { x^3 }, 2, 1))\n"
    "t = trace_grad(function(x) { sin(x) * x }, 2)\n" },
  { "jit", false,
    "f = function(x, y) { sum((x - y)^2 * 0.5 + exp(-x)) }\n"
    "jf = jit(f)\n"
    "print(jf([0, 1], [1, 1]))\n"
    "print(jf([0, 1], [1, 1]))\n"
    "print(jf([0; 1; 2], [1; 1; 1]))\n"
    "h = function(X) { X %*% t(X) + 1 }\n"
    "print(jit(h)([1, 2; 3, 4]))\n" },
  { "staged blocks and fusion", true,
    "X = [1, 2; 3, 4]\n"
    "Y = exp(X) * 2 + X / 3 - sqrt(X)\n"
    "Z = Y %*% X + abs(X - 2.5)\n"
    "print(sum(Y)); print(Z)\n"
    "for (i in 1:2) { X = X * 0.5 + 1 }\n"
    "print(X)\n" },
  { "print, toString, sprintf, paste", false,
    "x = [1.5, 2, -3; 4, 5e10, 1/3]\n"
    "print(x)\n"
    "print(toString([1, 2, 3]))\n"
    "print(sprintf(\"%d items, %.3f and %s\", 3, 3.14159, \"s\"))\n"
    "print(\"n = \" + 1:3)\n"
    "print(paste(\"a\", 1, TRUE))\n"
    "print(list(a = 1, b = \"two\"))\n" },
  { "indexing, files, lists, linear algebra", false, io_code },
  { "DML data and statistics builtins", false,
    "o = order(target=[3; 1; 2])\n"
    "tb = table([1; 2; 2], [1; 1; 2])\n"
    "r = removeEmpty(target=[1, 0; 0, 0], margin=\"rows\")\n"
    "q = quantile([1; 2; 3; 4], 0.5)\n"
    "md = median([4; 1; 3])\n"
    "iq = interQuartileMean([1; 2; 3; 4; 5; 6])\n"
    "e = eigen([2, 1; 1, 2])\n"
    "[Q, R] = qr([1, 2; 3, 4])\n"
    "a = aggregate(target=[1; 2; 3], groups=[1; 1; 2], fn=\"mean\")\n"
    "print(o); print(tb); print(r); print(q); print(md); print(iq); print(e); print(R); print(a)\n" },
  { "source, readers, a builtin written in MLS", false,
    "source(\"utils.mls\") as u\n"
    "E = u::eye(3)\n"
    "A = read(\"tests/fixtures/files/arr.mtx\")\n"
    "B = read(\"tests/fixtures/files/np_f8_c.npy\")\n"
    "C = read(\"tests/fixtures/files/i16.idx.gz\")\n"
    "X = rand(rows=20, cols=2, seed=3)\n"
    "w = lm(X=X, y=X %*% [1; 2] + 0.5, verbose=FALSE)\n"
    "print(E); print(A); print(nrow(B)); print(ncol(C)); print(round(w * 1000))\n" },
  { "more builtins: cbind, outer, sample, ifelse, conv2d, max_pool, det, inv, save, load", false, ckpt_code },
  { "lists, strings, types, softmax, cholesky, svd", false,
    "L = list(a = 1, b = [1, 2])\n"
    "L$c = list(d = \"x\")\n"
    "L2 = L\n"
    "L2$e = 1\n"
    "k = 0\n"
    "while (TRUE) { k = k + 1; if (k > 3) break }\n"
    "s = sprintf(\"%5.2f|%s|%d\", 3.14159, \"t\", 42)\n"
    "ty = typeof(L); b = is.na([1, 0/0]); x = as.integer(3.7)\n"
    "S = softmax([1, 2; 3, 4]); cs = cumprod([1; 2; 3])\n"
    "Ch = cholesky([4, 2; 2, 3]); [U, D, V] = svd([1, 2; 3, 4])\n"
    "M = matrix(1:6, rows=2, cols=3); M[, 2] = [0; 0]\n"
    "print(names(L)); print(k); print(s); print(ty); print(b); print(x); print(S); print(cs)\n"
    "print(Ch); print(D); print(t(M)); print(L$c$d); print(names(L2))\n" },
};

/* Runs code on a fresh interpreter with the nth allocation failing (0: none). */
typedef struct RunResult { int status; char *out, *err; bool hit; uint64_t count; } RunResult;

static RunResult run_one(const Prog *p, uint64_t n) {
  RunResult r = { 0, NULL, NULL, false, 0 };
  size_t no = 0, ne = 0;
  Interp *I = interp_new();
  I->staged_mode = p->staged;
  I->stdlib_dir = stdlib_abs;
  I->out = open_memstream(&r.out, &no);
  I->errf = open_memstream(&r.err, &ne);
  Source *src = source_new("t.mls", p->code, strlen(p->code));
  mem_fail_at(n ? n : UINT64_MAX);           /* UINT64_MAX: count, never fail */
  r.status = interp_run_source(I, src, false);
  r.hit = mem_fail_hit();
  r.count = mem_fail_count();
  mem_fail_at(0);
  source_release(src);
  fclose(I->out);
  fclose(I->errf);
  interp_free(I);
  return r;
}

static void free_result(RunResult *r) {
  free(r->out);
  free(r->err);
}

/* "t.mls:3:5: error: ... out of memory ..." (or in a stdlib file, for builtins written in MLS) */
static bool located_oom(const char *err) {
  regex_t re;
  regcomp(&re, "^[^:\n]+:[0-9]+:[0-9]+: error: [^\n]*out of memory", REG_EXTENDED | REG_NEWLINE);
  bool ok = regexec(&re, err, 0, NULL, 0) == 0;
  regfree(&re);
  return ok;
}

static void sweep(const Prog *p) {
  /* the clean run, twice: the second must leave the counters where it found them */
  RunResult ref = run_one(p, 0);
  if (ref.status != 0) print_error("%s: clean run failed: %s\n", p->name, ref.err);
  assert_int_equal(ref.status, 0);
  free_result(&ref);
  uint64_t blocks = mem_stats.blocks, bytes = mem_stats.data_bytes, work = mem_stats.work_bytes;
  ref = run_one(p, 0);
  assert_int_equal(ref.status, 0);
  if (mem_stats.blocks != blocks) print_error("%s: the clean run leaks %lld blocks\n", p->name, (long long)(mem_stats.blocks - blocks));
  assert_int_equal(mem_stats.blocks, blocks);
  assert_int_equal(mem_stats.data_bytes, bytes);
  assert_int_equal(mem_stats.work_bytes, work);

  const char *env = getenv("MLS_OOM_STRIDE");
  uint64_t stride = env && atoi(env) > 0 ? (uint64_t)atoi(env) : 1;
  const char *only = getenv("MLS_OOM_N");          /* one N only (debugging a finding) */
  uint64_t first = only ? strtoull(only, NULL, 10) : 1, last = only ? first : ref.count;
  int bad = 0, hits = 0;
  for (uint64_t n = first; n <= last; n += stride) {
    uint64_t b0 = mem_stats.blocks, d0 = mem_stats.data_bytes, w0 = mem_stats.work_bytes;
    RunResult r = run_one(p, n);
    const char *why = NULL;
    if (r.hit) {
      hits++;
      if (r.status == 0) {
        /* a failure the program got round (an optional cache, a fallback) must not show */
        if (strcmp(r.out, ref.out) != 0) why = "succeeded with different output";
      } else if (r.status != 1 || !located_oom(r.err)) {
        why = "failed without a located out-of-memory error and status 1";
      }
    } else if (r.status != 0 || strcmp(r.out, ref.out) != 0) {
      why = "the failure never came, yet the run differs";
    }
    if (!why && mem_stats.blocks != b0) why = "leaked allocations";
    if (!why && mem_stats.data_bytes != d0) why = "leaked matrix data";
    if (!why && mem_stats.work_bytes != w0) why = "left strings or workspace counted against --max-memory";
    if (why) {
      if (bad < 15)
        print_error("%s: allocation %llu of %llu failing: %s (status %d, %lld blocks, %lld bytes)\n  %s",
                    p->name, (unsigned long long)n, (unsigned long long)ref.count, why, r.status,
                    (long long)(mem_stats.blocks - b0), (long long)(mem_stats.data_bytes - d0), r.err);
      bad++;
    }
    free_result(&r);
  }
  free_result(&ref);
  if (__lsan_do_recoverable_leak_check && __lsan_do_recoverable_leak_check()) {
    print_error("%s: LeakSanitizer found leaks (above)\n", p->name);
    bad++;
  }
  if (bad) print_error("%s: %d of %d failing runs were wrong\n", p->name, bad, hits);
  assert_int_equal(bad, 0);
  assert_true(hits > 0);
}

#define SWEEP(i) static void test_sweep_##i(void **state) { (void)state; sweep(&progs[i]); }
SWEEP(0) SWEEP(1) SWEEP(2) SWEEP(3) SWEEP(4) SWEEP(5) SWEEP(6) SWEEP(7) SWEEP(8) SWEEP(9) SWEEP(10)

/* The injection itself: the nth allocation fails, the count restarts, 0 turns it off. */
static void test_injection_counts(void **state) {
  (void)state;
  mem_fail_at(3);
  void *a = mem_try_alloc(8), *b = mem_try_alloc(8), *c = mem_try_alloc(8), *d = mem_try_alloc(8);
  assert_non_null(a);
  assert_non_null(b);
  assert_null(c);
  assert_non_null(d);
  assert_true(mem_fail_hit());
  assert_int_equal(mem_fail_count(), 4);
  mem_fail_at(0);
  uint64_t live = mem_stats.blocks;
  mem_free(a);
  mem_free(b);
  mem_free(d);
  assert_int_equal(mem_stats.blocks, live - 3);
}

int main(void) {
  if (!realpath("stdlib", stdlib_abs)) snprintf(stdlib_abs, sizeof stdlib_abs, "stdlib");
  char path[64];
  snprintf(path, sizeof path, "/tmp/mls-oom-sweep-%ld.csv", (long)getpid());
  snprintf(io_code, sizeof io_code,
           "X = matrix(seq(1, 12), rows=3, cols=4)\n"
           "X[2, ] = [9, 9, 9, 9]\n"
           "Y = X[1:2, 2:3]\n"
           "write(Y, \"%s\", format=\"csv\")\n"
           "print(read(\"%s\", format=\"csv\"))\n"
           "L = list(1, 2)\n"
           "L[[3]] = \"x\"\n"
           "print(length(L))\n"
           "print(solve([2, 1; 1, 3], [1; 2]))\n"
           "print(rowSums(X)); print(t(X) %%*%% X)\n", path, path);
  char ckpt[64];
  snprintf(ckpt, sizeof ckpt, "/tmp/mls-oom-sweep-%ld.ckpt", (long)getpid());
  snprintf(ckpt_code, sizeof ckpt_code,
           "X = cbind([1; 2; 3], [4; 5; 6])\n"
           "Y = rbind(X, [7, 8])\n"
           "Z = outer([1; 2], [1, 2, 3], \"*\")\n"
           "s = sample(5, 3, seed=1)\n"
           "i = ifelse(Y > 4, Y, 0)\n"
           "c = conv2d([1, 2, 3, 4], [1, 1, 1, 1], input_shape=[1, 1, 2, 2], filter_shape=[1, 1, 2, 2], stride=[1, 1], padding=[0, 0])\n"
           "m = max_pool([1, 2, 3, 4], input_shape=[1, 1, 2, 2], pool_size=[2, 2], stride=[1, 1], padding=[0, 0])\n"
           "d = det([2, 1; 1, 3]); iv = inv([2, 1; 1, 3])\n"
           "save(\"%s\", a=X, b=\"text\")\n"
           "L = load(\"%s\")\n"
           "print(Y); print(Z); print(s); print(i); print(c); print(m); print(d); print(iv); print(L)\n", ckpt, ckpt);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_injection_counts),
    cmocka_unit_test(test_sweep_0), cmocka_unit_test(test_sweep_1), cmocka_unit_test(test_sweep_2),
    cmocka_unit_test(test_sweep_3), cmocka_unit_test(test_sweep_4), cmocka_unit_test(test_sweep_5),
    cmocka_unit_test(test_sweep_6), cmocka_unit_test(test_sweep_7), cmocka_unit_test(test_sweep_8),
    cmocka_unit_test(test_sweep_9), cmocka_unit_test(test_sweep_10),
  };
  int failed = cmocka_run_group_tests(tests, NULL, NULL);
  unlink(path);
  unlink(ckpt);
  char mtd[80];
  snprintf(mtd, sizeof mtd, "%s.mtd", path);
  unlink(mtd);
  return failed;
}
