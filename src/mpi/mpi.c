/*
** mpi.c — the MPI layer (issues 14 and 25, docs/mpi.md): start and stop, errors that end the
** whole job, and the collectives the builtins use. Every collective starts with the exchange of
** a header (header.h), so ranks that call different collectives, roots, reductions or shapes
** fail with a located error on every rank instead of waiting for each other forever. The one
** file with #ifdef MLS_MPI: without it every function acts for one process (rank 1 of 1).
*/
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "mpi/header.h"
#include "mpi/mpi.h"
#include "mem.h"
#include "plot/plot.h"
#include "tensor.h"
#ifdef MLS_MPI
#include <mpi.h>
#endif

/* This process's place in MPI_COMM_WORLD: MPI is initialized once per process, so this is
** genuinely process-wide (tools/globals_allow.txt); the settings and what a run found are the
** interpreter's (I->mpi_timeout, I->mpi_joint). */
static struct MpiWorld {
  int rank, size;
#ifdef MLS_MPI
  bool inited;
  bool broken;                 /* a header exchange was left half done (timeout, interrupt): the
                               ** ranks' messages no longer match, so no collective can run */
  void *orphan[2];             /* its buffers, which MPI may still write into: kept to the end */
#endif
} world = { .rank = 0, .size = 1 };

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
  world.inited = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
#else
  (void)argc; (void)argv;
#endif
}

void mpi_stop(void) {
#ifdef MLS_MPI
  if (world.inited) MPI_Finalize();
  world.inited = false;
#endif
}

int mpi_rank(void) { return world.rank; }
int mpi_size(void) { return world.size; }
void mpi_set_timeout(Interp *I, double seconds) { I->mpi_timeout = seconds > 0 ? seconds : 0; }

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
    fprintf(f, "rank %d: %.*s\n", world.rank + 1, (int)(j - i), buf + i);
    i = j + 1;
  }
  fclose(f);
  fwrite(out, 1, n, stderr);
  fflush(stderr);
  free(out);
}

/* ---- the header exchange ---- */
#define TAG_HEADER 0x4d4c     /* point-to-point tag of the headers (collectives do not match it) */

/* "file:line:col" of sp in the running source, cut to the header's field (the end is kept). */
static void where_of(Interp *I, Span sp, char out[MPI_HDR_WHERE]) {
  char w[600];
  if (I->src && sp.start <= I->src->len) diag_where(w, sizeof w, I->src, sp.start);
  else snprintf(w, sizeof w, "?");
  size_t n = strlen(w);
  const char *p = w;
  size_t o = 0;
  if (n >= MPI_HDR_WHERE) {
    memcpy(out, "...", 3);
    o = 3;
    p = w + n - (MPI_HDR_WHERE - 4);
    while (((unsigned char)*p & 0xc0) == 0x80) p++;   /* not in the middle of a UTF-8 character */
  }
  for (; *p && o < MPI_HDR_WHERE - 1; p++)
    out[o++] = (unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p;
  out[o] = '\0';
}

static const char *const bad_arg[MPI_K_COUNT] = {
  [MPI_K_ALLREDUCE] = "bad argument #1 to 'allreduce' (number or matrix expected, got %s)",
  [MPI_K_BCAST] = "bad argument #1 to 'bcast' (number, boolean, string or matrix expected, got %s)",
  [MPI_K_MERGE_BCAST] = "bad argument #1 to 'bcast' (number, boolean, string or matrix expected, got %s)",
};

/* A failure every rank finds at the same collective (the verdict on the same headers): each
** reports it and the job ends without MPI_Abort (mpi_run_script), so no report is cut off. */
static l_noret joint_error(Interp *I, const MpiHeader *mine, MpiVerdict v, Value x, const char *msg, Span sp) {
  I->mpi_joint = true;
  if (v == MPI_HDR_BAD_SELF && bad_arg[mine->kind]) {
    char d[64];
    mls_throw(I, sp, bad_arg[mine->kind], val_describe(x, d, sizeof d));
  }
  mls_throw(I, sp, "%s", msg);
}

#ifdef MLS_MPI
static void check(Interp *I, int rc, const char *what, Span sp) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int n = 0;
  MPI_Error_string(rc, msg, &n);
  mls_throw(I, sp, "%s: MPI error: %.*s", what, n, msg);
}

static double seconds_since(const struct timespec *t0) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Leaves an exchange half done: MPI may still write into buf, so it is kept (reachable) until
** the job ends, and no collective runs after this one. */
static void abandon(MPI_Request *rq, uint8_t *buf) {
  world.broken = true;
  world.orphan[0] = rq;
  world.orphan[1] = buf;
}

/* Waits for the header requests rq[0..2(N-1)) (the receives first, from the ranks in order
** without this one), polling, so that Ctrl-C, SIGTERM and the timeout stop the wait. */
static void wait_headers(Interp *I, MPI_Request *rq, uint8_t *buf, const char *name, Span sp) {
  int nrq = 2 * (world.size - 1);
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long spin = 0;; spin++) {
    int done = 0;
    int rc = MPI_Testall(nrq, rq, &done, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) { abandon(rq, buf); check(I, rc, name, sp); }
    if (done) return;
    if (I->interrupted) {
      abandon(rq, buf);
      interp_check_interrupt(I, sp);
    }
    double waited = seconds_since(&t0);
    if (I->mpi_timeout > 0 && waited >= I->mpi_timeout) {
      char list[200] = "";
      size_t k = 0;
      int missing = 0;
      for (int i = 0; i < world.size - 1; i++) {
        int arrived = 0;
        MPI_Test(&rq[i], &arrived, MPI_STATUS_IGNORE);
        if (arrived) continue;
        int r = i < world.rank ? i : i + 1;
        if (k + 16 < sizeof list) k += (size_t)snprintf(list + k, sizeof list - k, "%s%d", missing ? ", " : "", r + 1);
        missing++;
      }
      abandon(rq, buf);
      mls_throw(I, sp, "%s: timed out after %g s (--mpi-timeout) waiting for rank%s %s, which did not reach a collective",
                name, I->mpi_timeout, missing == 1 ? "" : "s", list);
    }
    if (spin > 200) {                     /* a long wait: let the other ranks have the cores */
      if (waited > 1.0) nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
      else sched_yield();
    }
  }
}
#endif

/* Every rank sends its header (mine, whose location this fills in) to every other: a rank
** that waits here knows which ranks have not arrived. Then each compares all of them
** (mpi_headers_check) and throws the same verdict; x is this rank's value (for an argument
** error). On success, *root_out (when not NULL) is the header of rank mine->root. */
static void agree(Interp *I, MpiHeader *mine, Value x, Span sp, MpiHeader *root_out) {
  where_of(I, sp, mine->where);
  if (world.size == 1) {
    if (root_out) *root_out = *mine;
    return;
  }
#ifdef MLS_MPI
  static const char *const names[MPI_K_COUNT] = {
    "?", "barrier", "allreduce", "bcast", "parfor (mode=REMOTE)", "parfor (mode=REMOTE)", "parfor (mode=REMOTE)",
    "the end of the script"
  };
  const char *name = names[mine->kind];
  if (world.broken) mls_throw(I, sp, "%s: an earlier collective failed part-way; the ranks cannot meet again", name);
  int n = world.size;
  MPI_Request *rq = mem_alloc((size_t)(2 * (n - 1)) * sizeof *rq);
  uint8_t *buf = mem_try_alloc((size_t)n * MPI_HDR_BYTES);
  MpiHeader *all = buf ? mem_try_alloc((size_t)n * sizeof *all) : NULL;
  if (!all) {
    mem_free(rq);
    mem_free(buf);
    mem_oom((size_t)n * sizeof *all);
  }
  mpi_header_encode(mine, buf + (size_t)world.rank * MPI_HDR_BYTES);
  int k = 0, rc = MPI_SUCCESS;
  for (int r = 0; r < n && rc == MPI_SUCCESS; r++)
    if (r != world.rank) rc = MPI_Irecv(buf + (size_t)r * MPI_HDR_BYTES, MPI_HDR_BYTES, MPI_BYTE, r, TAG_HEADER, MPI_COMM_WORLD, &rq[k++]);
  for (int r = 0; r < n && rc == MPI_SUCCESS; r++)
    if (r != world.rank)
      rc = MPI_Isend(buf + (size_t)world.rank * MPI_HDR_BYTES, MPI_HDR_BYTES, MPI_BYTE, r, TAG_HEADER, MPI_COMM_WORLD, &rq[k++]);
  if (rc != MPI_SUCCESS) { mem_free(all); abandon(rq, buf); check(I, rc, name, sp); }
  mls_defer(I, mem_free, all);           /* the wait may throw; the requests and buf stay */
  wait_headers(I, rq, buf, name, sp);
  mls_undefer(I, all);
  char why[64] = "";
  int bad = -1;
  for (int r = 0; r < n && bad < 0; r++)
    if (!mpi_header_decode(buf + (size_t)r * MPI_HDR_BYTES, MPI_HDR_BYTES, n, &all[r], why, sizeof why)) bad = r;
  mem_free(rq);
  mem_free(buf);
  if (bad >= 0) {
    mem_free(all);
    mls_throw(I, sp, "%s: rank %d sent a malformed collective header (%s)", name, bad + 1, why);
  }
  char msg[900];
  MpiVerdict v = mpi_headers_check(all, n, world.rank, msg, sizeof msg);
  if (v == MPI_HDR_OK && root_out) *root_out = all[mine->root >= 0 ? mine->root : 0];
  mem_free(all);
  if (v != MPI_HDR_OK) joint_error(I, mine, v, x, msg, sp);
#else
  (void)x; (void)root_out;
#endif
}

static MpiHeader header(int kind) {
  MpiHeader h;
  memset(&h, 0, sizeof h);
  h.kind = kind;
  h.root = -1;
  return h;
}

/* The header fields of value x. */
static void describe_value(MpiHeader *h, Value x) {
  switch (x.t) {
  case VT_NUM: h->vtype = MPI_V_NUM; h->num = x.u.n; break;
  case VT_BOOL: h->vtype = MPI_V_BOOL; h->num = x.u.b; break;
  case VT_MAT: h->vtype = MPI_V_MAT; h->rows = tensor_rows(x.u.m); h->cols = tensor_cols(x.u.m); break;
  case VT_STR: h->vtype = MPI_V_STR; h->rows = (int64_t)x.u.s->len; break;
  default: h->vtype = MPI_V_OTHER; break;
  }
}

/* ---- running a script ---- */

/* The end of the script is a collective of its own: a rank that ends while another waits in a
** collective makes both fail with a located error (the end: the script's last character). */
static void end_protected(Interp *I, void *ud) {
  Source *src = ud;
  I->src = src;
  Span sp = { src->len ? src->len - 1 : 0, src->len };
  MpiHeader h = header(MPI_K_END);
  agree(I, &h, val_null(), sp, NULL);
}

int mpi_run_script(Interp *I, Source *src, bool echo) {
  if (world.size == 1) {
    int st = interp_run_source(I, src, echo);
    return st == 0 || I->quitting ? plot_end(I, st) : st;
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *mem = open_memstream(&buf, &len);
  FILE *saved = I->errf;
  if (mem) I->errf = mem;
  int st = interp_run_source(I, src, echo);
  bool ended = st == 0 || I->quitting;
  if (ended) st = plot_end(I, st);
  if (ended && st == (I->quitting ? I->quit_status : 0)) {
    Source *saved_src = I->src;
    if (mls_pcall(I, end_protected, src) != 0) {
      interp_report_error(I);
      st = 1;
    }
    I->src = saved_src;
  }
  I->errf = saved;
  if (mem) {
    fclose(mem);
    print_prefixed(buf, len);
    free(buf);
  }
  fflush(stdout);
#ifdef MLS_MPI
  /* the others may wait in a collective: end them, unless every rank failed together (then
  ** each has printed its report and ends by itself) or the script itself asked for the status */
  if (st != 0 && !I->mpi_joint && !(ended && I->quitting && st == I->quit_status)) MPI_Abort(MPI_COMM_WORLD, st);
#endif
  return st;
}

/* ---- collectives: chunks of at most CHUNK doubles (MPI counts are int) ---- */
#define CHUNK ((int64_t)1 << 26)

void mpi_allgather_doubles(Interp *I, const double *in, int64_t n, double *out, Span sp) {
  MpiHeader h = header(MPI_K_MERGE_GATHER);
  h.rows = n;
  agree(I, &h, val_null(), sp, NULL);
  if (world.size == 1) { if (n) memcpy(out, in, (size_t)n * sizeof(double)); return; }
#ifdef MLS_MPI
  if (n == 0) return;
  double *tmp = mem_alloc((size_t)(n < CHUNK ? n : CHUNK) * (size_t)world.size * sizeof(double));
  for (int64_t o = 0; o < n; o += CHUNK) {
    int c = (int)(n - o < CHUNK ? n - o : CHUNK);
    int rc = MPI_Allgather((void *)(in + o), c, MPI_DOUBLE, tmp, c, MPI_DOUBLE, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) { mem_free(tmp); check(I, rc, "allgather", sp); }
    for (int r = 0; r < world.size; r++) memcpy(out + (int64_t)r * n + o, tmp + (int64_t)r * c, (size_t)c * sizeof(double));
  }
  mem_free(tmp);
#endif
}

void mpi_check_count(Interp *I, int64_t n, Span sp) {
  MpiHeader h = header(MPI_K_PARFOR);
  h.rows = n;
  agree(I, &h, val_null(), sp, NULL);
}

void mpi_barrier(Interp *I, Span sp) {
  MpiHeader h = header(MPI_K_BARRIER);
  agree(I, &h, val_null(), sp, NULL);   /* every rank hears from every other: that is a barrier */
}

#ifdef MLS_MPI
/* out = the reduction of every rank's n doubles d: gathered to rank 1, reduced in rank order
** there, broadcast, so every rank gets the same bits. */
static void reduce_doubles(Interp *I, const double *d, double *o, int64_t n, int op, Span sp) {
  bool root = world.rank == 0;
  int64_t cap = n < CHUNK ? n : CHUNK;
  double *all = root && n ? mem_alloc((size_t)cap * (size_t)world.size * sizeof(double)) : NULL;
  for (int64_t off = 0; off < n; off += CHUNK) {
    int cnt = (int)(n - off < CHUNK ? n - off : CHUNK);
    int rc = MPI_Gather((void *)(d + off), cnt, MPI_DOUBLE, all, cnt, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) { mem_free(all); check(I, rc, "allreduce", sp); }
    if (root) {
      memcpy(o + off, all, (size_t)cnt * sizeof(double));
      for (int k = 1; k < world.size; k++) {
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
}
#endif

Value mpi_allreduce_value(Interp *I, Value x, int op, Span sp) {
  bool num = x.t == VT_NUM || x.t == VT_BOOL;
  if (world.size == 1) {
    if (num) return val_num(x.t == VT_NUM ? x.u.n : x.u.b);
    if (x.t != VT_MAT) {
      char d[64];
      mls_throw(I, sp, bad_arg[MPI_K_ALLREDUCE], val_describe(x, d, sizeof d));
    }
    val_retain(x);
    return x;
  }
  MpiHeader h = header(MPI_K_ALLREDUCE);
  h.op = op;
  describe_value(&h, x);
  if (h.vtype == MPI_V_STR) { h.vtype = MPI_V_OTHER; h.rows = 0; }
  h.num = 0;
  agree(I, &h, x, sp, NULL);            /* the same op and shape everywhere, or an error on all */
#ifdef MLS_MPI
  if (num) {
    double v = x.t == VT_NUM ? x.u.n : x.u.b, out = 0;
    reduce_doubles(I, &v, &out, 1, op, sp);
    return val_num(out);
  }
  Tensor *in = tensor_contiguous(I, x.u.m);
  tmp_push(I, val_mat(in));
  Tensor *out = tensor_new(I, tensor_rows(in), tensor_cols(in));
  tmp_push(I, val_mat(out));
  reduce_doubles(I, tensor_data(in), tensor_data(out), tensor_numel(in), op, sp);
  tmp_pop(I, 2);
  tensor_free_ref(in);
  return val_mat(out);
#else
  return val_null();
#endif
}

/* bcast: the header exchange tells every rank the root's type and shape (and a number's value);
** then the root sends the payload. */
Value mpi_bcast_value(Interp *I, Value x, int root, bool merge, Span sp) {
  if (world.size == 1) {
    if (x.t != VT_NUM && x.t != VT_BOOL && x.t != VT_MAT && x.t != VT_STR) {
      char d[64];
      mls_throw(I, sp, bad_arg[MPI_K_BCAST], val_describe(x, d, sizeof d));
    }
    val_retain(x);
    return x;
  }
  MpiHeader h = header(merge ? MPI_K_MERGE_BCAST : MPI_K_BCAST), r;
  h.root = root;
  describe_value(&h, x);
  agree(I, &h, x, sp, &r);
#ifdef MLS_MPI
  if (r.vtype == MPI_V_NUM) return val_num(r.num);
  if (r.vtype == MPI_V_BOOL) return val_bool(r.num != 0);
  if (r.vtype == MPI_V_STR) {
    int64_t len = r.rows;
    char *s = mem_alloc((size_t)len + 1);
    if (world.rank == root) memcpy(s, x.u.s->s, (size_t)len);
    for (int64_t off = 0; off < len; off += CHUNK) {
      int cnt = (int)(len - off < CHUNK ? len - off : CHUNK);
      int rc = MPI_Bcast(s + off, cnt, MPI_CHAR, root, MPI_COMM_WORLD);
      if (rc != MPI_SUCCESS) { mem_free(s); check(I, rc, "bcast", sp); }
    }
    Value v = val_str(s, (size_t)len);
    mem_free(s);
    return v;
  }
  int64_t n = r.rows * r.cols;
  Tensor *out;
  if (world.rank == root) out = tensor_contiguous(I, x.u.m);   /* the root's buffer is only read */
  else out = tensor_new(I, r.rows, r.cols);
  tmp_push(I, val_mat(out));
  for (int64_t off = 0; off < n; off += CHUNK) {
    int cnt = (int)(n - off < CHUNK ? n - off : CHUNK);
    check(I, MPI_Bcast(tensor_data(out) + off, cnt, MPI_DOUBLE, root, MPI_COMM_WORLD), "bcast", sp);
  }
  tmp_pop(I, 1);
  return val_mat(out);
#else
  (void)r;
  return val_null();
#endif
}
