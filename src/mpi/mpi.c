/*
** mpi.c — the MPI layer (issue 14, docs/mpi.md): start and stop, errors that end the whole job,
** and the collectives the builtins use. The one file with #ifdef MLS_MPI: without it every
** function acts for one process (rank 1 of 1), so the builtins exist in every build.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi/mpi.h"
#include "mem.h"
#include "plot/plot.h"
#include "tensor.h"
#ifdef MLS_MPI
#include <mpi.h>
#endif

static int g_rank = 0, g_size = 1;   /* one process: MPI is process-wide state */
#ifdef MLS_MPI
static bool g_inited = false;
#endif

bool mpi_built(void) {
#ifdef MLS_MPI
  return true;
#else
  return false;
#endif
}

void mpi_start(int *argc, char ***argv) {
#ifdef MLS_MPI
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_SIZE")) return;
  int provided;
  /* the interpreter runs on its own thread (main.c), one at a time: SERIALIZED */
  if (MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS) {
    fprintf(stderr, "mls: MPI_Init failed\n");
    exit(2);
  }
  g_inited = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
#else
  (void)argc; (void)argv;
#endif
}

void mpi_stop(void) {
#ifdef MLS_MPI
  if (g_inited) MPI_Finalize();
  g_inited = false;
#endif
}

int mpi_rank(void) { return g_rank; }
int mpi_size(void) { return g_size; }

/* Copies the report in buf to stderr with "rank R: " before every line, in one write (so the
** ranks' reports, forwarded by mpirun line by line, do not interleave within one). */
static void print_prefixed(const char *buf, size_t len) {
  char *out = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&out, &n);
  if (!f) { fwrite(buf, 1, len, stderr); return; }
  size_t i = 0;
  while (i < len) {
    size_t j = i;
    while (j < len && buf[j] != '\n') j++;
    fprintf(f, "rank %d: %.*s\n", g_rank + 1, (int)(j - i), buf + i);
    i = j + 1;
  }
  fclose(f);
  fwrite(out, 1, n, stderr);
  fflush(stderr);
  free(out);
}

int mpi_run_script(Interp *I, Source *src, bool echo) {
  if (g_size == 1) {
    int st = interp_run_source(I, src, echo);
    return st == 0 || I->quitting ? plot_end(I, st) : st;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  FILE *saved = I->errf;
  if (mem) I->errf = mem;
  int st = interp_run_source(I, src, echo);
  if (st == 0 || I->quitting) st = plot_end(I, st);
  I->errf = saved;
  if (mem) {
    fclose(mem);
    print_prefixed(buf, len);
    free(buf);
  }
  fflush(stdout);
#ifdef MLS_MPI
  if (st != 0) MPI_Abort(MPI_COMM_WORLD, st);   /* the others may wait in a collective */
#endif
  return st;
}

/* ---- collectives: chunks of at most CHUNK doubles (MPI counts are int) ---- */
#define CHUNK ((int64_t)1 << 26)

#ifdef MLS_MPI
static void check(Interp *I, int rc, const char *what, Span sp) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, msg, &n);
  mls_throw(I, sp, "%s: MPI error: %.*s", what, n, msg);
}
#endif

void mpi_allgather_doubles(Interp *I, const double *in, int64_t n, double *out, Span sp) {
  if (g_size == 1) { if (n) memcpy(out, in, (size_t)n * sizeof(double)); return; }
#ifdef MLS_MPI
  if (n == 0) return;
  double *tmp = mem_alloc((size_t)(n < CHUNK ? n : CHUNK) * (size_t)g_size * sizeof(double));
  for (int64_t o = 0; o < n; o += CHUNK) {
    int c = (int)(n - o < CHUNK ? n - o : CHUNK);
    int rc = MPI_Allgather((void *)(in + o), c, MPI_DOUBLE, tmp, c, MPI_DOUBLE, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) { mem_free(tmp); check(I, rc, "allgather", sp); }
    for (int r = 0; r < g_size; r++) memcpy(out + (int64_t)r * n + o, tmp + (int64_t)r * c, (size_t)c * sizeof(double));
  }
  mem_free(tmp);
#else
  (void)I; (void)sp;
#endif
}

/* Every rank's two int64 (as doubles: exact below 2^53). */
static void gather2(Interp *I, int64_t a, int64_t b, double *all, Span sp) {
  double mine[2] = { (double)a, (double)b };
  mpi_allgather_doubles(I, mine, 2, all, sp);
}

static void shape_text(char *buf, size_t n, int64_t r, int64_t c) {
  if (r == -1) snprintf(buf, n, "a number");
  else if (r == -2) snprintf(buf, n, "no number or matrix");
  else snprintf(buf, n, "a %lldx%lld matrix", (long long)r, (long long)c);
}

void mpi_check_same(Interp *I, int64_t n, const char *what, Span sp) {
  if (g_size == 1) return;
  double *all = mem_alloc((size_t)g_size * 2 * sizeof(double));
  gather2(I, n, 0, all, sp);
  for (int r = 1; r < g_size; r++)
    if (all[2 * r] != all[0]) {
      long long a = (long long)all[0], b = (long long)all[2 * r];
      mem_free(all);
      mls_throw(I, sp, "%s: rank 1 has %lld, rank %d has %lld", what, a, r + 1, b);
    }
  mem_free(all);
}

void mpi_barrier(Interp *I, Span sp) {
#ifdef MLS_MPI
  if (g_size > 1) check(I, MPI_Barrier(MPI_COMM_WORLD), "barrier", sp);
#else
  (void)I; (void)sp;
#endif
}

Value mpi_allreduce_value(Interp *I, Value x, int op, Span sp) {
  bool num = x.t == VT_NUM || x.t == VT_BOOL;
  int64_t r = num ? -1 : x.t == VT_MAT ? tensor_rows(x.u.m) : -2;
  int64_t c = num ? -1 : x.t == VT_MAT ? tensor_cols(x.u.m) : -2;
  if (g_size > 1) {                     /* every rank learns every shape first: no rank waits */
    double *all = mem_alloc((size_t)g_size * 2 * sizeof(double));
    gather2(I, r, c, all, sp);
    if (r == -2) {
      char d[64];
      mem_free(all);
      mls_throw(I, sp, "bad argument #1 to 'allreduce' (number or matrix expected, got %s)", val_describe(x, d, sizeof d));
    }
    for (int k = 1; k < g_size; k++)       /* each rank against rank 1: the same message on all */
      if (all[2 * k] != all[0] || all[2 * k + 1] != all[1]) {
        char a[64], b[64];
        shape_text(a, sizeof a, (int64_t)all[0], (int64_t)all[1]);
        shape_text(b, sizeof b, (int64_t)all[2 * k], (int64_t)all[2 * k + 1]);
        mem_free(all);
        mls_throw(I, sp, "allreduce: the ranks' values differ in shape: rank 1 has %s, rank %d has %s", a, k + 1, b);
      }
    mem_free(all);
  } else if (r == -2) {
    char d[64];
    mls_throw(I, sp, "bad argument #1 to 'allreduce' (number or matrix expected, got %s)", val_describe(x, d, sizeof d));
  }
  if (num) {
    double v = x.t == VT_NUM ? x.u.n : x.u.b;
    Value out = val_num(v);
    if (g_size == 1) return out;
    Tensor *t = tensor_new(I, 1, 1);
    tensor_data(t)[0] = v;
    Value m = mpi_allreduce_value(I, val_mat(t), op, sp);   /* a 1x1 matrix on every rank */
    tensor_free_ref(t);
    out = val_num(tensor_data(m.u.m)[0]);
    val_release(m);
    return out;
  }
  if (g_size == 1) { val_retain(x); return x; }
  Tensor *in = tensor_contiguous(I, x.u.m);
  tmp_push(I, val_mat(in));
  Tensor *out = tensor_new(I, r, c);
  tmp_push(I, val_mat(out));
#ifdef MLS_MPI
  /* gather to rank 1, reduce in rank order there, broadcast: a fixed order of the additions */
  int64_t n = r * c;
  bool root = g_rank == 0;
  int64_t cap = n < CHUNK ? n : CHUNK;
  double *all = root && n ? mem_alloc((size_t)cap * (size_t)g_size * sizeof(double)) : NULL;
  const double *d = tensor_data(in);
  double *o = tensor_data(out);
  for (int64_t off = 0; off < n; off += CHUNK) {
    int cnt = (int)(n - off < CHUNK ? n - off : CHUNK);
    int rc = MPI_Gather((void *)(d + off), cnt, MPI_DOUBLE, all, cnt, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) { mem_free(all); check(I, rc, "allreduce", sp); }
    if (root) {
      memcpy(o + off, all, (size_t)cnt * sizeof(double));
      for (int k = 1; k < g_size; k++) {
        const double *s = all + (int64_t)k * cnt;
        double *acc = o + off;
        switch (op) {
        case MPI_RED_SUM: for (int i = 0; i < cnt; i++) acc[i] += s[i]; break;
        case MPI_RED_MAX:   /* NaN wins, as max() */
          for (int i = 0; i < cnt; i++) if (s[i] > acc[i] || s[i] != s[i]) acc[i] = acc[i] != acc[i] ? acc[i] : s[i];
          break;
        default:
          for (int i = 0; i < cnt; i++) if (s[i] < acc[i] || s[i] != s[i]) acc[i] = acc[i] != acc[i] ? acc[i] : s[i];
          break;
        }
      }
    }
    rc = MPI_Bcast(o + off, cnt, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) { mem_free(all); check(I, rc, "allreduce", sp); }
  }
  mem_free(all);
#endif
  tmp_pop(I, 2);
  tensor_free_ref(in);
  return val_mat(out);
}

/* bcast: the root sends a header {type, rows, cols, bytes}, then the payload. A root value that
** cannot be sent is announced as type -1, so every rank raises the error instead of waiting. */
Value mpi_bcast_value(Interp *I, Value x, int root, Span sp) {
  if (g_size == 1) {
    if (x.t != VT_NUM && x.t != VT_BOOL && x.t != VT_MAT && x.t != VT_STR) {
      char d[64];
      mls_throw(I, sp, "bad argument #1 to 'bcast' (number, boolean, string or matrix expected, got %s)",
                val_describe(x, d, sizeof d));
    }
    val_retain(x);
    return x;
  }
#ifdef MLS_MPI
  double h[4] = { 0, 0, 0, 0 };
  char d[64] = "";
  if (g_rank == root) {
    h[0] = x.t == VT_NUM ? 1 : x.t == VT_BOOL ? 2 : x.t == VT_MAT ? 3 : x.t == VT_STR ? 4 : -1;
    if (x.t == VT_NUM) h[1] = x.u.n;
    if (x.t == VT_BOOL) h[1] = x.u.b;
    if (x.t == VT_MAT) { h[1] = (double)tensor_rows(x.u.m); h[2] = (double)tensor_cols(x.u.m); }
    if (x.t == VT_STR) h[3] = (double)x.u.s->len;
    if (h[0] < 0) val_describe(x, d, sizeof d);
  }
  check(I, MPI_Bcast(h, 4, MPI_DOUBLE, root, MPI_COMM_WORLD), "bcast", sp);
  if (h[0] < 0) {
    if (g_rank == root)
      mls_throw(I, sp, "bad argument #1 to 'bcast' (number, boolean, string or matrix expected, got %s)", d);
    mls_throw(I, sp, "bcast: rank %d's value is not a number, boolean, string or matrix", root + 1);
  }
  if (h[0] == 1) return val_num(h[1]);
  if (h[0] == 2) return val_bool(h[1] != 0);
  if (h[0] == 4) {
    size_t len = (size_t)h[3];
    char *s = mem_alloc(len + 1);
    if (g_rank == root) memcpy(s, x.u.s->s, len);
    int rc = MPI_Bcast(s, (int)len, MPI_CHAR, root, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) { mem_free(s); check(I, rc, "bcast", sp); }
    Value v = val_str(s, len);
    mem_free(s);
    return v;
  }
  int64_t r = (int64_t)h[1], c = (int64_t)h[2], n = r * c;
  Tensor *out;
  if (g_rank == root) out = tensor_contiguous(I, x.u.m);
  else out = tensor_new(I, r, c);
  tmp_push(I, val_mat(out));
  if (g_rank == root && out == x.u.m) {        /* do not write into the caller's matrix */
    tmp_pop(I, 1);
    tensor_free_ref(out);
    out = tensor_clone(I, x.u.m);
    tmp_push(I, val_mat(out));
  }
  for (int64_t off = 0; off < n; off += CHUNK) {
    int cnt = (int)(n - off < CHUNK ? n - off : CHUNK);
    check(I, MPI_Bcast(tensor_data(out) + off, cnt, MPI_DOUBLE, root, MPI_COMM_WORLD), "bcast", sp);
  }
  tmp_pop(I, 1);
  return val_mat(out);
#else
  (void)root; (void)sp;
  return val_null();
#endif
}
