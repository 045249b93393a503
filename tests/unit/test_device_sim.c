/*
** test_device_sim.c — the interpreter's side of a device backend, without a GPU: a simulated
** device whose memory is host memory but marked as a device's (storage dev = true, as the
** CUDA plugin's managed memory is), whose kernels are the CPU backend's, and whose device
** entries (copy2d, gather, scatter, getrf, getrs, download) are reference loops and column-
** major LAPACK with the CUDA plugin's contracts (backend.h). The same programs run with the
** CPU as the default device and with this one must agree, and the device entries must be the
** ones that ran: block and element indexing, gathers and scatters by position vectors, left
** indexing with repeated positions (host, in order), and solve/inv/det through the LU entries.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <lapacke.h>
#undef I
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "capture.h"
#include "interp/interp.h"
#include "tensor.h"

static struct { int copy2d, gather, scatter, getrf, getrs, download; } calls;

static double *sim_alloc(size_t n) { return malloc(n ? n : 1); }
static void sim_free(double *p, size_t n) { (void)n; free(p); }
static int sim_copy(double *dst, const double *src, size_t n) { memcpy(dst, src, n); return 0; }
static int sim_download(double *dst, const double *src, size_t n) { calls.download++; memcpy(dst, src, n); return 0; }
static bool sim_supports(OpKind op) { return be_cpu.supports_op(op); }
static int sim_run(OpKind op, Tensor *out, Tensor *const in[], const OpParams *p) { return be_cpu.run(op, out, in, p); }
static int sim_gemm(bool ta, bool tb, double alpha, const Tensor *A, const Tensor *B, double beta, Tensor *C) {
  return be_cpu.gemm(ta, tb, alpha, A, B, beta, C);
}
static void sim_sync(void) {}
static int sim_fused(const FusedProg *p, Tensor *out, Tensor *const in[], const double *sc) {
  return be_cpu.run_fused(p, out, in, sc);
}
static int sim_host_access(const double *base) { (void)base; return 0; }
static double *at(const Tensor *t) { return t->st->data + t->offset; }

static int sim_copy2d(Tensor *out, const Tensor *in) {        /* both through their strides */
  calls.copy2d++;
  double *o = at(out);
  const double *s = at(in);
  for (int64_t i = 0; i < in->shape[0]; i++)
    for (int64_t j = 0; j < in->shape[1]; j++) o[i * out->stride[0] + j * out->stride[1]] = s[i * in->stride[0] + j * in->stride[1]];
  return 0;
}

static int sim_gather(Tensor *out, const Tensor *in, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0) {
  calls.gather++;
  double *o = at(out);
  for (int64_t i = 0; i < out->shape[0]; i++)
    for (int64_t j = 0; j < out->shape[1]; j++) {
      int64_t ri = r ? (int64_t)at(r)[i] : r0 + i, cj = c ? (int64_t)at(c)[j] : c0 + j;
      o[i * out->shape[1] + j] = at(in)[ri * in->stride[0] + cj * in->stride[1]];
    }
  return 0;
}

static int sim_scatter(Tensor *out, const Tensor *r, int64_t r0, const Tensor *c, int64_t c0, const Tensor *in) {
  calls.scatter++;
  for (int64_t i = 0; i < in->shape[0]; i++)
    for (int64_t j = 0; j < in->shape[1]; j++) {
      int64_t ri = r ? (int64_t)at(r)[i] : r0 + i, cj = c ? (int64_t)at(c)[j] : c0 + j;
      at(out)[ri * out->stride[0] + cj * out->stride[1]] = at(in)[i * in->stride[0] + j * in->stride[1]];
    }
  return 0;
}

static int sim_getrf(double *a, int64_t n, int32_t *ipiv, int64_t *info) {
  calls.getrf++;
  *info = LAPACKE_dgetrf(LAPACK_COL_MAJOR, (lapack_int)n, (lapack_int)n, a, (lapack_int)n, ipiv);
  return *info < 0;
}

static int sim_getrs(const double *lu, int64_t n, const int32_t *ipiv, double *b, int64_t k) {
  calls.getrs++;
  return LAPACKE_dgetrs(LAPACK_COL_MAJOR, 'N', (lapack_int)n, (lapack_int)k, lu, (lapack_int)n, ipiv, b, (lapack_int)n) != 0;
}

static int sim_init(void) { return 0; }
static const char *sim_error(void) { return "simulated device"; }

static const Backend be_sim = {
  "sim", sim_alloc, sim_free, sim_copy, sim_download, sim_supports, sim_run, sim_gemm, sim_sync, NULL, NULL, sim_fused,
  NULL, sim_host_access, sim_copy2d, sim_init, sim_error, NULL, sim_getrf, sim_getrs, sim_gather, sim_scatter,
};

typedef struct Fix { Interp *I; char *out, *err; size_t nout, nerr; } Fix;

static int setup(void **state) {
  Fix *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->I = interp_new();
  *state = f;
  return 0;
}

static int teardown(void **state) {
  Fix *f = *state;
  be_set_default(&be_cpu);
  interp_free(f->I);
  free(f->out);
  free(f->err);
  free(f);
  return 0;
}

/* Runs code with new matrices on the CPU (keeping its globals), then check with them on the
** simulated device; check must print only TRUE lines. */
static void cpu_then_sim(Fix *f, const char *code, const char *check) {
  be_set_default(&be_cpu);
  int st = run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 0) print_error("cpu: %s\n", f->err);
  assert_int_equal(st, 0);
  be_set_default(&be_sim);
  memset(&calls, 0, sizeof calls);
  st = run_captured(f->I, check, false, &f->out, &f->nout, &f->err, &f->nerr);
  be_set_default(&be_cpu);
  if (st != 0) print_error("sim: %s\n", f->err);
  assert_int_equal(st, 0);
  for (const char *p = f->out; *p; p = strchr(p, '\n') + 1) {
    if (strncmp(p, "TRUE\n", 5) != 0) print_error("sim: %s\n", f->out);
    assert_memory_equal(p, "TRUE\n", 5);
  }
}

static void test_indexing(void **state) {
  Fix *f = *state;
  cpu_then_sim(f,
               "A = rand(rows=64, cols=48, min=-1, max=1, seed=8)\n"
               "r1 = A[5:40, 7:30]; r2 = A[, 3:9]; r3 = A[7, 2:48]; r4 = t(A)[3:20, 10:50]; r5 = A[3, 4]\n"
               "p = [9; 2; 9; 30]; r6 = A[p, 2:4]; r7 = A[5:9, [7; 2]]\n",
               "G = rand(rows=64, cols=48, min=-1, max=1, seed=8)\n"    /* A again, on the device */
               "print(sum(G[5:40, 7:30] != r1) == 0); print(sum(G[, 3:9] != r2) == 0); print(sum(G[7, 2:48] != r3) == 0)\n"
               "print(sum(t(G)[3:20, 10:50] != r4) == 0); print(G[3, 4] == r5)\n"
               "print(sum(G[p, 2:4] != r6) == 0); print(sum(G[5:9, [7; 2]] != r7) == 0)\n");
  assert_true(calls.copy2d >= 4);          /* the blocks (and the packed copy of t(G)[...]) */
  assert_int_equal(calls.gather, 2);
  assert_true(calls.download >= 1);        /* G[3, 4]: one element copied */
}

static void test_left_indexing(void **state) {
  Fix *f = *state;
  cpu_then_sim(f,
               "A = rand(rows=12, cols=10, min=-1, max=1, seed=3); Q = rand(rows=5, cols=4, seed=4)\n"
               "Z = A; Z[2:6, 3:6] = Q; Z[, 1] = 0.5; Z[4, ] = t(Z[1:10, 2]); Z[[9; 1; 11], [8; 2]] = Q[1:3, 1:2]\n"
               "Z[[4; 4], 9:10] = Q[1:2, 1:2]\n",
               "G = rand(rows=12, cols=10, min=-1, max=1, seed=3); GQ = rand(rows=5, cols=4, seed=4); G0 = G\n"
               "G[2:6, 3:6] = GQ; G[, 1] = 0.5; G[4, ] = t(G[1:10, 2]); G[[9; 1; 11], [8; 2]] = GQ[1:3, 1:2]\n"
               "G[[4; 4], 9:10] = GQ[1:2, 1:2]\n"
               "print(sum(G != Z) == 0); print(sum(G0 != A) == 0)\n");
  assert_true(calls.copy2d >= 4);          /* the copy-on-write, the block, the column fill, the row */
  assert_int_equal(calls.scatter, 1);      /* [9; 1; 11], [8; 2]; the repeated 4 is the host's */
}

static void test_solvers(void **state) {
  Fix *f = *state;
  cpu_then_sim(f,
               "S = rand(rows=30, cols=30, min=-1, max=1, seed=12) + diag(matrix(6, rows=30, cols=1))\n"
               "B = rand(rows=30, cols=3, seed=13); x1 = solve(S, B); x2 = solve(S, B[, 2]); xi = inv(S); d = det(S)\n",
               "GS = rand(rows=30, cols=30, min=-1, max=1, seed=12) + diag(matrix(6, rows=30, cols=1)); GB = rand(rows=30, cols=3, seed=13)\n"
               "print(max(abs(solve(GS, GB) - x1)) < 1e-12); print(max(abs(solve(GS, GB[, 2]) - x2)) < 1e-12)\n"
               "print(max(abs(inv(GS) - xi)) < 1e-12); print(abs(det(GS) - d) < 1e-9 * abs(d))\n"
               "print(det(GS[1:2, 1:2] * 0) == 0)\n");
  assert_int_equal(calls.getrf, 5);
  assert_int_equal(calls.getrs, 3);
}

/* The same refusals as on the CPU, with the same messages: a singular matrix, an
** ill-conditioned one (the condition estimate is the CPU's). */
static void same_error(Fix *f, const char *code) {
  be_set_default(&be_cpu);
  assert_int_equal(run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr), 1);
  char *want = strdup(f->err);
  be_set_default(&be_sim);
  memset(&calls, 0, sizeof calls);
  assert_int_equal(run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr), 1);
  be_set_default(&be_cpu);
  assert_int_equal(calls.getrf, 1);
  assert_string_equal(f->err, want);
  free(want);
}

static void test_solver_errors(void **state) {
  same_error(*state, "x = solve([1, 2; 2, 4], [1; 1])");
  same_error(*state, "x = inv([1, 1; 1, 1 + 1e-17])");
  same_error(*state, "x = inv([1, 1; 1, 1 + 4e-16])");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_indexing, setup, teardown),
    cmocka_unit_test_setup_teardown(test_left_indexing, setup, teardown),
    cmocka_unit_test_setup_teardown(test_solvers, setup, teardown),
    cmocka_unit_test_setup_teardown(test_solver_errors, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
