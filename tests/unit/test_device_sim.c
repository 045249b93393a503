/*
** test_device_sim.c — the interpreter's side of a device backend, without a GPU, on the
** simulated GPU (src/backend/sim.c: host memory marked as a device's, the CPU's kernels,
** reference loops and column-major LAPACK behind copy2d, gather, scatter, getrf, getrs). The
** same programs run with the CPU as the default device and with it must agree, and its
** device entries must be the ones that ran (sim_calls of the instance): block and element indexing, gathers
** and scatters by position vectors, left indexing with repeated positions (the host, in
** order), and solve/inv/det through the LU entries, with the CPU's errors; and the pinned
** memory and combine entries of MPI's device path.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/sim.h"
#include "capture.h"
#include "interp/interp.h"
#include "staging/graph.h"
#include "tensor.h"


/* The interpreter's simulated GPU (sim.c; this test sets $MLS_SIM_GPU) and its counts. */
static const Backend *sim_of(Fix *f) {
  setenv("MLS_SIM_GPU", "1", 1);
  const Backend *be = be_find(f->I->backends, "gpu");
  assert_non_null(be);
  return be;
}
#define CALLS (*sim_calls(sim_of(f)))

static int teardown(void **state) {
  return fix_teardown(state);
}

/* Runs code with new matrices on the CPU (keeping its globals), then check with them on the
** simulated device; check must print only TRUE lines. */
static void cpu_then_sim(Fix *f, const char *code, const char *check) {
  f->I->device = f->I->cpu;
  int st = run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);
  if (st != 0) print_error("cpu: %s\n", f->err);
  assert_int_equal(st, 0);
  f->I->device = sim_of(f);
  memset(&CALLS, 0, sizeof CALLS);
  st = run_captured(f->I, check, false, &f->out, &f->nout, &f->err, &f->nerr);
  f->I->device = f->I->cpu;
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
  assert_true(CALLS.copy2d >= 4);          /* the blocks (and the packed copy of t(G)[...]) */
  assert_int_equal(CALLS.gather, 2);
  assert_true(CALLS.download >= 1);        /* G[3, 4]: one element copied */
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
  assert_true(CALLS.copy2d >= 4);          /* the copy-on-write, the block, the column fill, the row */
  assert_int_equal(CALLS.scatter, 1);      /* [9; 1; 11], [8; 2]; the repeated 4 is the host's */
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
  assert_int_equal(CALLS.getrf, 5);
  assert_int_equal(CALLS.getrs, 3);
}

/* The same refusals as on the CPU, with the same messages: a singular matrix, an
** ill-conditioned one (the condition estimate is the CPU's). */
static void same_error(Fix *f, const char *code) {
  f->I->device = f->I->cpu;
  assert_int_equal(run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr), 1);
  char *want = strdup(f->err);
  f->I->device = sim_of(f);
  memset(&CALLS, 0, sizeof CALLS);
  assert_int_equal(run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr), 1);
  f->I->device = f->I->cpu;
  assert_int_equal(CALLS.getrf, 1);
  assert_string_equal(f->err, want);
  free(want);
}

static void test_solver_errors(void **state) {
  same_error(*state, "x = solve([1, 2; 2, 4], [1; 1])");
  same_error(*state, "x = inv([1, 1; 1, 1 + 1e-17])");
  same_error(*state, "x = inv([1, 1; 1, 1 + 4e-16])");
}

/* A staged function on the device runs as one captured launch from its third call (replay.c;
** sim.c records the kernels instead of running them while capturing, and a replay runs the
** recording on the addresses it saw). Its results must be the eager CPU run's, each call's
** result must stay as it was after later calls (a launch rewrites the recording's own
** matrices, not the ones handed out), and what cannot be captured must run plainly. */
/* The entries MPI's device path uses (docs/mpi.md "GPU buffers"): pinned memory, and combine
** with backend.h's formula, written out by hand here: the lower group's value first, a NaN of
** the lower group wins, then a NaN or a larger (smaller) upper value, else the lower (so max(0,
** -0) keeps the lower's zero). */
static void test_mpi_entries(void **state) {
  Fix *f = *state;
  const Backend *sim = sim_of(f);
  memset(sim_calls(sim), 0, sizeof(SimCalls));
  double *p = sim->pinned_alloc(sim, 4 * sizeof(double));
  assert_non_null(p);
  assert_int_equal(sim_calls(sim)->pinned, 1);
  sim->pinned_free(sim, p, 4 * sizeof(double));
  double nan = 0.0 / 0.0;
  const double lo[6] = { 1, 0.0, -0.0, nan, 2, 0.1 }, hi[6] = { 2, -0.0, 0.0, 3, nan, 0.2 };
  /* acc holds lo (acc_lower) or hi (not): the same result either way */
  for (int side = 0; side < 2; side++)
    for (int op = 0; op < 3; op++) {
      double acc[6], other[6];
      memcpy(acc, side ? hi : lo, sizeof acc);
      memcpy(other, side ? lo : hi, sizeof other);
      assert_int_equal(sim->combine(sim, op, acc, other, 6, side == 0), 0);
      if (op == 0) {
        assert_true(acc[0] == 3 && acc[1] == 0 && !signbit(acc[1]) && acc[2] == 0 && !signbit(acc[2]));
        assert_true(isnan(acc[3]) && isnan(acc[4]) && acc[5] == 0.1 + 0.2);
      } else {
        assert_true(acc[0] == (op == 1 ? 2 : 1));
        assert_true(acc[1] == 0 && !signbit(acc[1]));          /* 0 vs -0: the lower's 0 */
        assert_true(acc[2] == 0 && signbit(acc[2]));           /* -0 vs 0: the lower's -0 */
        assert_true(isnan(acc[3]) && isnan(acc[4]));
        assert_true(acc[5] == (op == 1 ? 0.2 : 0.1));
      }
    }
  assert_int_equal(sim_calls(sim)->combine, 6);
}

static void test_replay(void **state) {
  Fix *f = *state;
  graph_replay_mode(f->I, 1 | 4);               /* these graphs are small: capture them anyway */
  cpu_then_sim(f,
               "f = function(W, x, y) { p = softmax(x %*% W); t(x) %*% (p - y) / nrow(x) }\n"
               "W = matrix(seq(1, 12), rows = 4, cols = 3) / 10; G = list()\n"
               "for (i in 1:5) { x = matrix(sin(seq(1, 20) * i), rows = 5, cols = 4)\n"
               "  y = matrix(cos(seq(1, 15) * i), rows = 5, cols = 3); G[[i]] = f(W, x, y); W = W - 0.5 * G[[i]] }\n"
               "Wc = W\n",
               "jf = jit(f); W = matrix(seq(1, 12), rows = 4, cols = 3) / 10; H = list()\n"
               "for (i in 1:5) { x = matrix(sin(seq(1, 20) * i), rows = 5, cols = 4)\n"
               "  y = matrix(cos(seq(1, 15) * i), rows = 5, cols = 3); H[[i]] = jf(W, x, y); W = W - 0.5 * H[[i]] }\n"
               "for (i in 1:5) print(max(abs(H[[i]] - G[[i]])) < 1e-14)\n"
               "print(max(abs(W - Wc)) < 1e-14); print(device(H[[5]]) == \"gpu\")\n");
  assert_int_equal(CALLS.capture, 1);       /* at the third call (the second keeps numbers on the device) */
  assert_int_equal(CALLS.replay, 3);        /* that call's launch, then calls 4 and 5 */
  assert_int_equal(CALLS.capture_broken, 0);

  /* a number argument is baked into the recording: another number runs plainly */
  cpu_then_sim(f,
               "g = function(W, s) { exp(W * s) + W }\nWg = matrix(seq(1, 6), rows = 2, cols = 3) / 7\n"
               "r1 = g(Wg, 0.5); r2 = g(Wg, 0.25)\n",
               "jg = jit(g); V = matrix(seq(1, 6), rows = 2, cols = 3) / 7\n"
               "a = jg(V, 0.5); b = jg(V, 0.5); c = jg(V, 0.5); d = jg(V, 0.25); e = jg(V, 0.5)\n"
               "print(max(abs(a - r1)) == 0); print(max(abs(b - r1)) == 0); print(max(abs(c - r1)) == 0)\n"
               "print(max(abs(d - r2)) == 0); print(max(abs(e - r1)) == 0)\n");
  assert_int_equal(CALLS.capture, 1);
  assert_int_equal(CALLS.replay, 2);        /* c and e; d ran plainly */

  /* a result that is a number is read after the launch (captured: h), while a gather whose
  ** positions are copied from the host breaks the capture (k: the run is made plainly, and the
  ** graph is never captured again) */
  cpu_then_sim(f,
               "h = function(W) { sum(W * W) }\nk = function(W) { W[[3; 1], ] * 2 }\nWh = matrix(seq(1, 6), rows = 3, cols = 2)\n"
               "s1 = h(Wh); k1 = k(Wh)\n",
               "jh = jit(h); jk = jit(k); U = matrix(seq(1, 6), rows = 3, cols = 2)\n"
               "for (i in 1:4) { print(jh(U) == s1); print(sum(jk(U) != k1) == 0) }\n");
  assert_int_equal(CALLS.capture, 1);
  assert_int_equal(CALLS.replay, 2);
  assert_int_equal(CALLS.capture_broken, 1);

  /* numbers made on the device inside the graph (a loss, a comparison, ops on them), used by
  ** later ops and returned: a list of a number, a logical and a matrix, as eagerly */
  cpu_then_sim(f,
               "v = function(W, x) { l = sum((x %*% W)^2) / nrow(x); list(loss = l, big = l > 1, W = W - 0.01 * l * W) }\n"
               "Wv = matrix(seq(1, 6), rows = 3, cols = 2) / 5; E = list()\n"
               "for (i in 1:4) { E[[i]] = v(Wv, matrix(cos(seq(1, 12) * i), rows = 4, cols = 3)); Wv = E[[i]]$W }\n",
               "jv = jit(v); Z = matrix(seq(1, 6), rows = 3, cols = 2) / 5; F = list()\n"
               "for (i in 1:4) { F[[i]] = jv(Z, matrix(cos(seq(1, 12) * i), rows = 4, cols = 3)); Z = F[[i]]$W }\n"
               "for (i in 1:4) { print(is.numeric(F[[i]]$loss) & !is.matrix(F[[i]]$loss)); print(abs(F[[i]]$loss - E[[i]]$loss) < 1e-13)\n"
               "  print(F[[i]]$big == E[[i]]$big); print(max(abs(F[[i]]$W - E[[i]]$W)) < 1e-14) }\n"
               "print(E[[1]]$big != E[[4]]$big)\n");
  assert_int_equal(CALLS.capture, 1);
  assert_int_equal(CALLS.replay, 2);
  assert_int_equal(CALLS.capture_broken, 0);

  /* by default, a capture must save more launches than its copies cost: not one fused kernel
  ** over 2e5 elements (3.2 MB to copy per call), but a step of 8 ops on small matrices */
  graph_replay_mode(f->I, 1);
  cpu_then_sim(f,
               "c = function(X) (X * 2 + 1) * sigmoid(X) - tanh(X) / 3\nXc = matrix(sin(seq(1, 200000)), rows = 400, cols = 500)\n"
               "m = function(W, x) { h = tanh(x %*% W); l = sum(h^2); list(l, t(x) %*% (h * (1 - h^2)) * exp(-l)) }\n"
               "cm = c(Xc); mm = m(Xc[1:3, 1:4], Xc[5:9, 1:3])\n",
               "jc = jit(c); jm = jit(m); Xd = matrix(sin(seq(1, 200000)), rows = 400, cols = 500)\n"
               "for (i in 1:4) { print(max(abs(jc(Xd) - cm)) == 0); r = jm(Xd[1:3, 1:4], Xd[5:9, 1:3])\n"
               "  print(abs(r[[1]] - mm[[1]]) < 1e-14); print(max(abs(r[[2]] - mm[[2]])) < 1e-14) }\n");
  assert_int_equal(CALLS.capture, 1);       /* jm */
  assert_int_equal(CALLS.replay, 2);
  graph_replay_mode(f->I, -1);
}

/* Each interpreter has its own backend instances (backend.h): its CPU instance (buffer cache,
** threads) and its simulated GPU with counts of its own. A matrix held past the end of its
** interpreter keeps the instance that allocated it (here the simulated GPU, which keeps its CPU
** instance): it stays readable, and its free, after the interpreter's, goes back to it (ASan
** checks the order). */
static void test_instances(void **state) {
  Fix *f = *state;
  void *st2 = NULL;
  assert_int_equal(fix_setup(&st2), 0);
  Fix *g = st2;
  const Backend *fs = sim_of(f), *gs = sim_of(g);
  assert_ptr_not_equal(f->I->cpu, g->I->cpu);
  assert_ptr_not_equal(fs, gs);
  memset(sim_calls(fs), 0, sizeof(SimCalls));
  memset(sim_calls(gs), 0, sizeof(SimCalls));
  g->I->device = gs;
  assert_int_equal(run_captured(g->I, "Y = rand(rows=300, cols=200, seed=2) * 2; y = Y[3, 4]", false, &g->out, &g->nout,
                                &g->err, &g->nerr), 0);
  g->I->device = g->I->cpu;
  assert_int_equal(sim_calls(gs)->download, 1);     /* Y[3, 4]: g's device, g's count */
  assert_int_equal(sim_calls(fs)->download, 0);
  Value v = sym_intern(&g->I->syms, "Y", 1)->global;
  assert_int_equal(v.t, VT_MAT);
  assert_ptr_equal(v.u.m->st->be, gs);
  val_retain(v);
  fix_teardown(&st2);                                /* g, its backend set with it */
  assert_int_equal(run_captured(f->I, "Z = rand(rows=300, cols=200, seed=2) * 2", false, &f->out, &f->nout, &f->err,
                                &f->nerr), 0);
  Value z = sym_intern(&f->I->syms, "Z", 1)->global;
  assert_int_equal(z.t, VT_MAT);
  assert_ptr_equal(z.u.m->st->be, f->I->cpu);
  const double *yd = tensor_data(v.u.m), *zd = tensor_data(z.u.m);
  for (int64_t i = 0; i < 300 * 200; i++) assert_true(yd[i] == zd[i]);
  val_release(v);                                    /* the last holder of g's instances */
}

/* Products with a sparse operand on the device (backend.h spmm: cuSPARSE on a GPU; sim.c runs
** the CPU's CSR kernels on its copy of the matrix). The sparse operands are made on the CPU with
** every matrix sparse (--sparse always: densities 0, 1e-3, 0.1 and 0.5, empty rows and columns, 1 x N
** and N x 1), then multiplied in the default mode with dense matrices of the device: S %*% W,
** A %*% S and t(S) %*% G, each against the dense CPU product (BLAS on as.matrix(S)) to 1e-12
** relative, the result on the device; the counts show the sparse entry ran (not a densified
** product), that a loop over the same S copies it to the device once, and that the copy is
** freed with S. */
static void test_sparse_products(void **state) {
  Fix *f = *state;
  f->I->sparse_mode = SPARSE_ALWAYS;
  assert_int_equal(run_captured(f->I,
                                "S0 = matrix(0, rows=60, cols=40); S1 = rand(rows=300, cols=200, min=-1, max=1, sparsity=0.001, seed=1)\n"
                                "S2 = rand(rows=60, cols=40, min=-1, max=1, sparsity=0.1, seed=2)\n"
                                "S3 = rand(rows=60, cols=40, min=-1, max=1, sparsity=0.5, seed=3) * 1\n"   /* (rand keeps 0.5 dense) */
                                "S4 = table(round(rand(rows=200, cols=1, min=21, max=50, seed=4)), round(rand(rows=200, cols=1, min=10, max=40, seed=5)),\n"
                                "           weights=rand(rows=200, cols=1, min=-1, max=1, seed=6), odim1=60, odim2=40)\n"
                                "S5 = rand(rows=1, cols=40, min=-1, max=1, sparsity=0.2, seed=7); S6 = rand(rows=60, cols=1, min=-1, max=1, sparsity=0.2, seed=8)\n",
                                false, &f->out, &f->nout, &f->err, &f->nerr), 0);
  f->I->sparse_mode = SPARSE_AUTO;
  cpu_then_sim(f,
               "L = list(S0, S1, S2, S3, S4, S5, S6)\n"
               "rel = function(want, got) max(abs(want - got)) / max(1, max(abs(want)))\n"
               "ok = function(want, got) device(got) == \"cpu\" & rel(want, cpu(got)) <= 1e-12\n",
               "ok = function(want, got) device(got) == \"gpu\" & rel(want, cpu(got)) <= 1e-12\n"
               "print(!ok([1, 2], gpu([1, 2 + 3e-12])))\n"                 /* (the check can fail) */
               "for (k in 1:7) { S = L[[k]]; D = as.matrix(S); r = nrow(S); c = ncol(S)\n"
               "  W = rand(rows=c, cols=3, min=-1, max=1, seed=10 + k); A = rand(rows=4, cols=r, min=-1, max=1, seed=20 + k)\n"
               "  G = rand(rows=r, cols=2, min=-1, max=1, seed=30 + k)\n"
               "  print(ok(cpu(D) %*% cpu(W), S %*% W)); print(ok(cpu(A) %*% cpu(D), A %*% S))\n"
               "  print(ok(t(cpu(D)) %*% cpu(G), t(S) %*% G)) }\n");
  /* each product through the sparse entry: the 2-D ones in their forms, and a sparse row or
  ** column's t() is a CSR of its own (S5, S6: their t(S) %*% G is an S %*% G) */
  assert_int_equal(CALLS.spmm[SPMM_SB], 7 + 2);
  assert_int_equal(CALLS.spmm[SPMM_BS], 7);
  assert_int_equal(CALLS.spmm[SPMM_TB], 5);
  assert_int_equal(CALLS.spmm_upload, 7 + 2);        /* once per matrix (S and t(S) views share it) */

  /* a loop over the same S copies it once; a transposed W is packed on the device first; a W
  ** with an Inf or NaN takes the CPU kernel (the dense product's NaN where an unstored 0 meets
  ** it), its result moved to the device; reassigning S frees its device copy */
  cpu_then_sim(f,
               "T = S2 * 2; W = rand(rows=40, cols=5, min=-1, max=1, seed=40); V = rand(rows=5, cols=40, min=-1, max=1, seed=41)\n"
               "Wi = W; Wi[3, 2] = 1 / 0; Wn = W; Wn[7, 4] = 0 / 0; D = as.matrix(T)\n"
               "Ci = D %*% Wi; Cn = D %*% Wn; inf = function(x) abs(x) == 1 / 0\n",
               "gW = gpu(W); for (i in 1:5) C = T %*% gW\n"
               "print(ok(D %*% W, C)); print(ok(D %*% t(V), T %*% t(gpu(V))))\n"
               "Gi = T %*% gpu(Wi); Gn = T %*% gpu(Wn); print(device(Gi) == \"gpu\" & device(Gn) == \"gpu\")\n"
               "Hi = cpu(Gi); Hn = cpu(Gn)\n"
               "print(sum(is.nan(Hi) != is.nan(Ci)) == 0 & sum(is.nan(Hn) != is.nan(Cn)) == 0 & sum(is.nan(Ci)) > 0)\n"
               "print(sum(inf(Hi) != inf(Ci)) == 0 & sum(inf(Ci)) > 0)\n"
               "print(max(abs(ifelse(is.nan(Ci) | inf(Ci), 0, Ci - Hi))) <= 1e-12)\n"
               "T = 0\n");
  assert_int_equal(CALLS.spmm[SPMM_SB], 6);
  assert_int_equal(CALLS.spmm_upload, 1);
  assert_int_equal(CALLS.spmm_free, 1);

  /* grad of sum((S %*% W)^2) in W on the device: S %*% W forward, t(S) %*% G backward, both
  ** sparse entries; against the CPU's gradient and the hand derivation 2 t(S) S W */
  cpu_then_sim(f,
               "W = rand(rows=40, cols=3, min=-1, max=1, seed=50); D = as.matrix(S3)\n"
               "g = grad(function(w) sum((S3 %*% w)^2))(W); h = 2 * t(D) %*% (D %*% W)\n",
               "gg = grad(function(w) sum((S3 %*% w)^2))(gpu(W))\n"
               "print(ok(g, gg)); print(ok(h, gg))\n");
  assert_int_equal(CALLS.spmm[SPMM_SB], 1);
  assert_int_equal(CALLS.spmm[SPMM_TB], 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_indexing, fix_setup, teardown),
    cmocka_unit_test_setup_teardown(test_left_indexing, fix_setup, teardown),
    cmocka_unit_test_setup_teardown(test_solvers, fix_setup, teardown),
    cmocka_unit_test_setup_teardown(test_solver_errors, fix_setup, teardown),
    cmocka_unit_test_setup_teardown(test_replay, fix_setup, teardown),
    cmocka_unit_test_setup_teardown(test_instances, fix_setup, teardown),
    cmocka_unit_test_setup_teardown(test_mpi_entries, fix_setup, teardown),
    cmocka_unit_test_setup_teardown(test_sparse_products, fix_setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
