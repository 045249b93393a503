/*
** mpi.c — the MPI layer (issues 14, 25 and 34, docs/mpi.md): start and stop, errors that end the
** whole job, and the collectives the builtins use (allreduce: recursive halving and doubling,
** also in buckets during a backward pass, grad_allreduce). Every collective starts with the exchange of
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
#include "autodiff.h"
#include "backend/backend.h"
#include "mem.h"
#include "plot/plot.h"
#include "tensor.h"
#ifdef MLS_MPI
#include <mpi.h>
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>             /* Open MPI's extensions: MPIX_Query_cuda_support */
#endif
#endif
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
  bool timed_out;              /* the failure was --mpi-timeout: linger before MPI_Abort */
  void *orphan[2];             /* its buffers, which MPI may still write into: kept to the end */
  uint64_t jobs;               /* reductions started (their tags: every rank starts them in order) */
  int cuda_aware;              /* MPI takes device pointers: 0 not asked yet, 1 no, 2 yes */
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
      world.timed_out = true;
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
    "the end of the script", "grad_allreduce"
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

/* ---- matrices in device memory (docs/mpi.md "GPU buffers") ---- */
/* The device address of t's first element (not tensor_data, which would bring the pages to the host). */
static double *dev_ptr(const Tensor *t) { return t->st->data + t->offset; }

static l_noret dev_fail(Interp *I, const Backend *be, const char *name, const char *what, Span sp) {
  mls_throw(I, sp, "%s: %s failed on the %s device: %s", name, what, be->name, be->error ? be->error(be) : "unknown error");
}

/* A staging buffer of n doubles in host memory: pinned when the device gives it (*pinned). */
static double *stage_alloc(const Backend *be, int64_t n, bool *pinned) {
  size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(double);
  double *p = be->pinned_alloc ? be->pinned_alloc(be, bytes) : NULL;
  *pinned = p != NULL;
  return p ? p : mem_alloc(bytes);
}
static void stage_free(const Backend *be, double *p, int64_t n, bool pinned) {
  if (pinned) be->pinned_free(be, p, (size_t)(n > 0 ? n : 1) * sizeof(double));
  else mem_free(p);
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
  if (st != 0 && !I->mpi_joint && !(ended && I->quitting && st == I->quit_status)) {
    /* after a timeout the rank it waited for may itself be waiting for another, with its own
    ** timer a moment behind: give it one more period (at most 5 s) to report whom it waits
    ** for, since that report names the rank that stalled and this one may not */
    if (world.timed_out) {
      double s = I->mpi_timeout < 5 ? I->mpi_timeout : 5;
      nanosleep(&(struct timespec){ (time_t)s, (long)((s - (double)(time_t)s) * 1e9) }, NULL);
    }
    MPI_Abort(MPI_COMM_WORLD, st);
  }
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
/* ---- the reduction: recursive halving (reduce-scatter) then recursive doubling (allgather) ----
** (Rabenseifner's allreduce, docs/mpi.md "The allreduce"). Let p2 be the largest power of two
** <= P and e = P - p2. First the fold: for i < e, rank 2i+1 sends its n doubles to rank 2i, which
** adds them (x_2i + x_2i+1) and goes on as participant i; rank 2i+1 waits for the result. The
** other ranks r >= 2e are participants r - e. The p2 participants then halve: at step m = 1, 2,
** 4 .. p2/2, participant j and j^m hold the same segment; each sends the half it gives up and
** adds the half it keeps, (the sum of the lower group) + (the sum of the upper group). After
** log2(p2) steps each participant holds 1/p2 of the vector, fully reduced; the doubling steps
** (m = p2/2 .. 1) swap the segments back until every participant holds all n; then rank 2i sends
** the result to 2i+1. So every element is the same tree of additions over consecutive ranks,
** ((x1 + x2) + (x3 + x4)) + ... (1-based; with e > 0 the first 2e ranks are added in pairs
** first), whichever segment it falls in: the order is fixed by P alone, not by the arrival of
** messages, the cut of the vector into segments or the buckets of nn::dp_grad. A rank sends
** 2 (p2-1)/p2 n doubles (plus n for the fold and n for the unfold when P is not a power of two)
** in 2 log2(p2) steps (+2). */
typedef struct RedStep {
  int partner;                /* 0-based rank */
  int64_t soff, slen;         /* what this rank sends: buf[soff, soff + slen) */
  int64_t roff, rlen;         /* what it receives: into tmp (combine) or buf[roff ..) */
  bool combine;               /* add the received part to buf[roff ..) */
  bool lower;                 /* this rank's part is the lower group's (it comes first) */
} RedStep;

#define RED_MAXSTEPS 72
typedef struct RedJob {
  double *buf;                /* n doubles: this rank's value, then the reduction (borrowed) */
  double *tmp;                /* scratch for the received halves (owned) */
  int64_t n;
  int op, tag;
  int nsteps, at;             /* the steps; the one under way */
  bool posted;                /* its messages are posted */
  RedStep step[RED_MAXSTEPS];
  MPI_Request *rq;            /* the step's requests (owned), nrq of cap */
  int nrq, cap;
  const Backend *dev;         /* buf and tmp are this device's memory, handed to MPI as they are
                              ** (CUDA-aware MPI) and combined there; NULL: host memory */
  bool dev_failed;            /* dev's combine failed (red_progress then returns MPI_ERR_OTHER) */
} RedJob;

/* The plan of this rank's steps for n doubles over world.size ranks. */
static void red_plan(RedJob *j) {
  int P = world.size, me = world.rank, p2 = 1;
  while (p2 * 2 <= P) p2 *= 2;
  int e = P - p2, id;
  int64_t n = j->n;
  j->nsteps = 0;
  if (me < 2 * e && me % 2 == 1) {            /* folded into me - 1: send all, receive the result */
    j->step[j->nsteps++] = (RedStep){ me - 1, 0, n, 0, 0, false, false };
    j->step[j->nsteps++] = (RedStep){ me - 1, 0, 0, 0, n, false, false };
    return;
  }
  if (me < 2 * e) {
    id = me / 2;
    j->step[j->nsteps++] = (RedStep){ me + 1, 0, 0, 0, n, true, true };
  } else id = me - e;
  int64_t lo[32], hi[32];
  bool low[32];
  int64_t a = 0, b = n;
  int k = 0;
  for (int m = 1; m < p2; m <<= 1, k++) {
    int pj = id ^ m, pr = pj < e ? 2 * pj : pj + e;
    int64_t mid = a + (b - a) / 2;
    lo[k] = a; hi[k] = b;
    low[k] = (id & m) == 0;
    if (low[k]) j->step[j->nsteps++] = (RedStep){ pr, mid, b - mid, a, mid - a, true, true }, b = mid;
    else j->step[j->nsteps++] = (RedStep){ pr, a, mid - a, mid, b - mid, true, false }, a = mid;
  }
  for (int m = p2 / 2; m >= 1; m >>= 1) {     /* back up: swap the segments of the two halves */
    k--;
    int pj = id ^ m, pr = pj < e ? 2 * pj : pj + e;
    int64_t ro = low[k] ? b : lo[k], re = low[k] ? hi[k] : a;
    j->step[j->nsteps++] = (RedStep){ pr, a, b - a, ro, re - ro, false, false };
    a = lo[k]; b = hi[k];
  }
  if (me < 2 * e) j->step[j->nsteps++] = (RedStep){ me + 1, 0, n, 0, 0, false, false };
}

/* acc = lower (+) upper, elementwise, for the reduction op: the lower group's value comes first
** (max/min: NaN wins, and of equal values (-0, 0) the lower group's stays, as before). */
static void red_combine(int op, double *acc, const double *other, int64_t n, bool acc_lower) {
  switch (op) {
  case MPI_RED_SUM:
    if (acc_lower) for (int64_t i = 0; i < n; i++) acc[i] = acc[i] + other[i];
    else for (int64_t i = 0; i < n; i++) acc[i] = other[i] + acc[i];
    break;
  case MPI_RED_MAX:
    for (int64_t i = 0; i < n; i++) {
      double l = acc_lower ? acc[i] : other[i], u = acc_lower ? other[i] : acc[i];
      acc[i] = l != l ? l : (u > l || u != u) ? u : l;
    }
    break;
  default:
    for (int64_t i = 0; i < n; i++) {
      double l = acc_lower ? acc[i] : other[i], u = acc_lower ? other[i] : acc[i];
      acc[i] = l != l ? l : (u < l || u != u) ? u : l;
    }
    break;
  }
}

/* Posts the messages of step s (in pieces of at most CHUNK doubles: MPI counts are int). */
static int red_post(RedJob *j, const RedStep *s) {
  int need = (int)((s->slen + CHUNK - 1) / CHUNK + (s->rlen + CHUNK - 1) / CHUNK);
  if (need > j->cap) {
    MPI_Request *r = mem_realloc(j->rq, (size_t)need * sizeof *r);
    j->rq = r;
    j->cap = need;
  }
  j->nrq = 0;
  int rc = MPI_SUCCESS;
  double *rb = s->combine ? j->tmp : j->buf + s->roff;
  for (int64_t o = 0; o < s->rlen && rc == MPI_SUCCESS; o += CHUNK)
    rc = MPI_Irecv(rb + o, (int)(s->rlen - o < CHUNK ? s->rlen - o : CHUNK), MPI_DOUBLE, s->partner, j->tag,
                   MPI_COMM_WORLD, &j->rq[j->nrq++]);
  for (int64_t o = 0; o < s->slen && rc == MPI_SUCCESS; o += CHUNK)
    rc = MPI_Isend(j->buf + s->soff + o, (int)(s->slen - o < CHUNK ? s->slen - o : CHUNK), MPI_DOUBLE, s->partner,
                   j->tag, MPI_COMM_WORLD, &j->rq[j->nrq++]);
  return rc;
}

/* Advances job j as far as its messages have arrived, without waiting. Returns MPI_SUCCESS or
** an MPI error; *done when every step has finished. */
static int red_progress(RedJob *j, bool *done) {
  while (j->at < j->nsteps) {
    RedStep *s = &j->step[j->at];
    if (!j->posted) {
      int rc = red_post(j, s);
      if (rc != MPI_SUCCESS) return rc;
      j->posted = true;
    }
    int flag = 0;
    int rc = MPI_Testall(j->nrq, j->rq, &flag, MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    if (!flag) { *done = false; return MPI_SUCCESS; }
    if (s->combine && j->dev) {
      if (j->dev->combine(j->dev, j->op, j->buf + s->roff, j->tmp, s->rlen, s->lower) != 0) {
        j->dev_failed = true;
        return MPI_ERR_OTHER;
      }
    } else if (s->combine) red_combine(j->op, j->buf + s->roff, j->tmp, s->rlen, s->lower);
    j->posted = false;
    j->at++;
  }
  *done = true;
  return MPI_SUCCESS;
}
#endif

#ifdef MLS_MPI
/* Frees job j's scratch (its requests, and tmp: host memory, or its device's). */
static void red_release(RedJob *j) {
  mem_free(j->rq);
  if (j->dev) j->dev->free(j->dev, j->tmp, (size_t)(j->n > 0 ? j->n : 1) * sizeof(double));
  else mem_free(j->tmp);
  j->rq = NULL;
  j->tmp = NULL;
}

/* A job that cannot finish (an MPI error, Ctrl-C, SIGTERM, --mpi-timeout): MPI may still write
** into its buffers, so they are kept (leaked, with keep retained) until the job ends, and no
** collective runs after this one. */
static void red_abandon(RedJob *j, Tensor *keep) {
  world.broken = true;
  if (keep) keep->refcount++;
  world.orphan[0] = j->rq;
  world.orphan[1] = j->tmp;
}

/* Runs job j to its end, polling as wait_headers does, so that Ctrl-C, SIGTERM and
** --mpi-timeout (counted from the start of the data phase) stop the wait with a located error
** naming the rank whose part has not come. Frees the job's scratch; keep: j->buf's tensor. */
static void red_wait(Interp *I, RedJob *j, const char *name, Span sp, Tensor *keep) {
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (long spin = 0;; spin++) {
    bool done = false;
    int rc = red_progress(j, &done);
    if (rc != MPI_SUCCESS) {
      red_abandon(j, keep);
      if (j->dev_failed)
        mls_throw(I, sp, "%s: the reduction failed on the %s device: %s", name, j->dev->name,
                  j->dev->error ? j->dev->error(j->dev) : "unknown error");
      check(I, rc, name, sp);
    }
    if (done) break;
    if (I->interrupted) {
      red_abandon(j, keep);
      interp_check_interrupt(I, sp);
    }
    double waited = seconds_since(&t0);
    if (I->mpi_timeout > 0 && waited >= I->mpi_timeout) {
      int who = j->step[j->at].partner;
      red_abandon(j, keep);
      world.timed_out = true;
      mls_throw(I, sp, "%s: timed out after %g s (--mpi-timeout) waiting for rank %d's part of the reduction",
                name, I->mpi_timeout, who + 1);
    }
    if (spin > 200) {
      if (waited > 1.0) nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
      else sched_yield();
    }
  }
  red_release(j);
}

/* A job reducing the n doubles at buf (this rank's value, replaced by the reduction). Every
** rank starts its jobs in the same order (each after the header exchange), so the k-th job has
** the same tag everywhere; jobs under way at once (nn::dp_grad's buckets) have different tags.
** dev: buf is that device's memory, given to MPI as it is (mpi_device_ptrs), its scratch too;
** the device's queued work is waited for first, since MPI reads buf behind its back. */
static void red_start(Interp *I, RedJob *j, double *buf, int64_t n, int op, uint64_t seq, const Backend *dev, Span sp) {
  memset(j, 0, sizeof *j);
  j->buf = buf;
  j->n = n;
  j->op = op;
  j->tag = 1 + (int)(seq % 16000);                /* below TAG_HEADER */
  red_plan(j);
  size_t bytes = (size_t)(n > 0 ? n : 1) * sizeof(double);
  if (dev) {
    dev->sync(dev);
    j->tmp = dev->alloc(dev, bytes);
    if (!j->tmp)
      mls_throw(I, sp, "allreduce: out of %s memory for the reduction's scratch (%zu bytes)", dev->name, bytes);
    j->dev = dev;
  } else j->tmp = mem_alloc(bytes);
}

/* buf = the reduction of every rank's n doubles at buf (docs/mpi.md "The allreduce"). */
static void reduce_doubles(Interp *I, double *buf, int64_t n, int op, Span sp, Tensor *keep) {
  RedJob j;
  red_start(I, &j, buf, n, op, world.jobs++, NULL, sp);
  red_wait(I, &j, "allreduce", sp, keep);
}

/* ---- matrices on a device (docs/mpi.md "GPU buffers") ---- */
_Static_assert(MPI_RED_SUM == 0 && MPI_RED_MAX == 1 && MPI_RED_MIN == 2, "backend.h's combine numbers the reductions so");

/* Whether MPI takes device pointers: $MLS_MPI_CUDA_AWARE (0 or 1) decides; else Open MPI's
** MPIX_Query_cuda_support() (mpi-ext.h), asked once at run time, since the same build may run
** over an Open MPI built with CUDA or without; without that extension, no. */
static bool mpi_device_ptrs(void) {
  if (world.cuda_aware == 0) {
    const char *e = getenv("MLS_MPI_CUDA_AWARE");
    bool yes = false;
    if (e && *e) yes = strcmp(e, "0") != 0;
    else {
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
      yes = MPIX_Query_cuda_support() == 1;
#endif
    }
    world.cuda_aware = yes ? 2 : 1;
  }
  return world.cuda_aware == 2;
}

static void dev_log(Interp *I, const char *name, Span sp, int64_t n, const Backend *be, bool direct, bool pinned) {
  if (!getenv("MLS_MPI_LOG")) return;
  char w[MPI_HDR_WHERE];
  where_of(I, sp, w);
  fprintf(stderr, "%s at %s: %lld numbers on the %s device, %s\n", name, w, (long long)n, be->name,
          direct ? "reduced in device buffers (CUDA-aware MPI)"
                 : pinned ? "staged through pinned host memory" : "staged through host memory");
}

/* The allreduce of in (packed, in device memory; borrowed) into a new matrix on the same device
** (+1): with a CUDA-aware MPI the device buffers go to MPI and the device adds; else the values
** are copied to a (pinned) host buffer, reduced there and copied back. The same tree of
** additions either way, so the same bits as the host's allreduce. */
static Tensor *allreduce_on_device(Interp *I, Tensor *in, int op, Span sp) {
  const Backend *be = in->st->be;
  int64_t n = tensor_numel(in);
  Tensor *out = tensor_new_on(I, be, tensor_rows(in), tensor_cols(in));
  tmp_push(I, val_mat(out));
  bool direct = be->combine && mpi_device_ptrs(), pinned = false;
  if (direct) {
    if (n && be->copy2d(be, out, in) != 0) dev_fail(I, be, "allreduce", "a copy", sp);
    RedJob j;
    red_start(I, &j, dev_ptr(out), n, op, world.jobs++, be, sp);
    red_wait(I, &j, "allreduce", sp, out);
  } else {
    double *buf = stage_alloc(be, n, &pinned);
    if (n && be->download(be, buf, dev_ptr(in), (size_t)n * sizeof(double)) != 0) {
      stage_free(be, buf, n, pinned);
      dev_fail(I, be, "allreduce", "the copy to host memory", sp);
    }
    reduce_doubles(I, buf, n, op, sp, NULL);          /* (a throw keeps buf: MPI may write into it) */
    int rc = n ? be->upload(be, dev_ptr(out), buf, (size_t)n * sizeof(double)) : 0;
    be->sync(be);                                       /* the upload reads buf until it is done */
    stage_free(be, buf, n, pinned);
    if (rc != 0) dev_fail(I, be, "allreduce", "the copy to the device", sp);
  }
  dev_log(I, "allreduce", sp, n, be, direct, pinned);
  tmp_pop(I, 1);
  return out;
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
    double *v = mem_alloc(sizeof *v);           /* (kept if the reduction cannot finish) */
    *v = x.t == VT_NUM ? x.u.n : x.u.b;
    reduce_doubles(I, v, 1, op, sp, NULL);
    double out = *v;
    mem_free(v);
    return val_num(out);
  }
  Tensor *in = tensor_contiguous(I, x.u.m);
  tmp_push(I, val_mat(in));
  if (in->st->dev && !in->st->sparse && in->st->be->download && in->st->be->upload && in->st->be->copy2d) {
    Tensor *out = allreduce_on_device(I, in, op, sp);   /* the result stays on the device */
    tmp_pop(I, 1);
    tensor_free_ref(in);
    return val_mat(out);
  }
  Tensor *out = tensor_new(I, tensor_rows(in), tensor_cols(in));
  tmp_push(I, val_mat(out));
  int64_t n = tensor_numel(in);
  if (n) memcpy(tensor_data(out), tensor_data(in), (size_t)n * sizeof(double));
  reduce_doubles(I, tensor_data(out), n, op, sp, out);
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

/* ---- grad_allreduce: the gradient of a grad(f) call, reduced in buckets during its backward pass ---- */
#define GRAD_ALLREDUCE_NAME "grad_allreduce"

typedef struct GradLeaf { int64_t rows, cols, off; bool num; int bucket; } GradLeaf;
typedef struct GradBucket {
  int64_t off, n;             /* its numbers: data[off, off + n) */
  int pending;                /* leaves whose gradient has not arrived */
  bool started, done;
  bool overlapped;            /* under way while a node of the backward pass ran */
#ifdef MLS_MPI
  RedJob job;
#endif
} GradBucket;
typedef struct GradRun {
  AdHook h;                   /* first: the backward pass's hook (autodiff.h) */
  Interp *I;
  GradLeaf *leaf;
  int nleaves, nb;
  GradBucket *b;
  double *data;               /* every leaf's weighted gradient, bucket after bucket */
  const Backend *be;          /* the device every matrix parameter lives on (else NULL: host) */
  bool direct;                /* data is be's memory (dt's), handed to MPI as it is (CUDA-aware) */
  bool pinned;                /* else data is be's pinned host memory (a staging buffer) */
  Tensor *dt;                 /* direct: data as a total x 1 matrix on be (owned) */
  int64_t total;
  double w;
  uint64_t seq0;              /* the first bucket's job number (its tag) */
  Span sp;
} GradRun;

/* Counts (n == NULL) or lists the numbers and matrices of v, depth first (make_leaves' order). */
static int grad_leaves(Interp *I, Value v, GradLeaf *out, int n, Span sp) {
  v = ad_primal(v);                /* (boxes of finished traces: a --staged block's values) */
  if (v.t == VT_LIST) {
    for (int i = 0; i < v.u.l->n; i++) n = grad_leaves(I, v.u.l->items[i], out, n, sp);
    return n;
  }
  if (v.t == VT_NUM || v.t == VT_BOOL || v.t == VT_MAT) {
    if (out) {
      GradLeaf *g = &out[n];
      g->num = v.t != VT_MAT;
      g->rows = g->num ? 1 : tensor_rows(v.u.m);
      g->cols = g->num ? 1 : tensor_cols(v.u.m);
    }
    return n + 1;
  }
  char d[64];
  mls_throw(I, sp, "bad argument #2 to '" GRAD_ALLREDUCE_NAME "' (its first element, the parameters, must be numbers, "
            "matrices or lists of them; found %s)", val_describe(v, d, sizeof d));
}

/* The device every matrix of v lives on, or NULL (none does, or they are spread over several,
** or some are in host memory): then grad_allreduce reduces in host memory as before. */
static const Backend *grad_device_of(Value v, const Backend *be, bool *host) {
  v = ad_primal(v);
  if (v.t == VT_LIST) {
    for (int i = 0; i < v.u.l->n; i++) be = grad_device_of(v.u.l->items[i], be, host);
    return be;
  }
  if (v.t != VT_MAT) return be;
  Storage *st = v.u.m->st;
  if (!st->dev || st->sparse || !st->be->download || !st->be->upload || !st->be->copy2d) *host = true;
  else if (be && be != st->be) *host = true;
  else be = st->be;
  return be;
}
static const Backend *grad_device(Value v) {
  bool host = false;
  const Backend *be = grad_device_of(v, NULL, &host);
  return host ? NULL : be;
}

/* Leaf g's place in the device buffer (direct), as a packed rows x cols matrix there. */
static Tensor grad_view(const GradRun *gr, const GradLeaf *g) {
  Tensor v = *gr->dt;
  v.refcount = 1;
  v.offset = gr->dt->offset + (size_t)g->off;
  v.shape[0] = g->rows;
  v.shape[1] = g->cols;
  v.stride[0] = g->cols;
  v.stride[1] = 1;
  v.names = NULL;
  return v;
}

/* grad_leaf when the buckets are device memory (CUDA-aware MPI), for a gradient p of the
** leaf's size or none: weight * p written into leaf lf's place there, by the device's multiply for a gradient on it (the host's
** product, bit for bit: one rounded multiplication), else computed on the host and copied. */
static void grad_leaf_direct(Interp *I, GradRun *gr, GradLeaf *lf, Value p) {
  const Backend *be = gr->be;
  int64_t n = lf->rows * lf->cols;
  double *d = gr->data + lf->off;
  if (p.t == VT_MAT && tensor_numel(p.u.m) == n && p.u.m->st->be == be && !p.u.m->st->sparse) {
    Tensor *c = tensor_contiguous(I, p.u.m);
    Tensor v = grad_view(gr, lf);
    OpParams op;
    memset(&op, 0, sizeof op);
    op.bc[0] = BC_SCALAR;
    op.bc[1] = BC_FULL;
    op.scalar[0] = gr->w;
    int rc = n ? be->run(be, OP_MUL, &v, (Tensor *const[]){ NULL, c }, &op) : 0;
    tensor_free_ref(c);
    if (rc != 0) dev_fail(I, be, GRAD_ALLREDUCE_NAME, "weighting a gradient", gr->sp);
    return;
  }
  double *h = mem_calloc((size_t)(n > 0 ? n : 1), sizeof *h);
  mls_defer(I, mem_free, h);
  if (p.t == VT_NUM || p.t == VT_BOOL) {
    if (n != 1) mls_throw(I, gr->sp, GRAD_ALLREDUCE_NAME ": the gradient of parameter %d is a number, the parameter has %lld numbers",
                          (int)(lf - gr->leaf) + 1, (long long)n);
    h[0] = gr->w * (p.t == VT_NUM ? p.u.n : p.u.b);
  } else if (p.t == VT_MAT) {
    for (int64_t i = 0; i < n; i++) h[i] = gr->w * tensor_at(p.u.m, i);
  }
  int rc = n ? be->upload(be, d, h, (size_t)n * sizeof(double)) : 0;
  be->sync(be);                    /* the upload reads h until it is done */
  mls_undefer(I, h);
  mem_free(h);
  if (rc != 0) dev_fail(I, be, GRAD_ALLREDUCE_NAME, "a copy to the device", gr->sp);
}

/* The value of v's structure with each leaf's numbers from the reduction (+1). */
static Value grad_build(Interp *I, const GradRun *gr, Value v, int *k) {
  v = ad_primal(v);
  if (v.t == VT_LIST) {
    List *l = list_new(I, v.u.l->n);
    Value r = val_list(l);
    tmp_push(I, r);
    for (int i = 0; i < v.u.l->n; i++) list_push(l, grad_build(I, gr, v.u.l->items[i], k), v.u.l->names ? v.u.l->names[i] : NULL);
    tmp_pop(I, 1);
    return r;
  }
  const GradLeaf *g = &gr->leaf[(*k)++];
  int64_t n = g->rows * g->cols;
  if (gr->be) {                  /* parameters on a device: so is their gradient */
    double x = 0;
    if (g->num) {
      if (!gr->direct) return val_num(gr->data[g->off]);
      if (gr->be->download(gr->be, &x, gr->data + g->off, sizeof x) != 0) dev_fail(I, gr->be, GRAD_ALLREDUCE_NAME, "a copy", gr->sp);
      return val_num(x);
    }
    Tensor *t = tensor_new_on(I, gr->be, g->rows, g->cols);
    int rc = 0;
    if (n > 0 && gr->direct) {
      Tensor part = grad_view(gr, g);
      rc = gr->be->copy2d(gr->be, t, &part);
    } else if (n > 0) rc = gr->be->upload(gr->be, dev_ptr(t), gr->data + g->off, (size_t)n * sizeof(double));
    if (rc != 0) {
      tensor_free_ref(t);
      dev_fail(I, gr->be, GRAD_ALLREDUCE_NAME, "a copy", gr->sp);
    }
    return val_mat(t);
  }
  if (g->num) return val_num(gr->data[g->off]);
  Tensor *t = tensor_new(I, g->rows, g->cols);
  if (n > 0) memcpy(tensor_data(t), gr->data + g->off, (size_t)n * sizeof(double));
  return val_mat(t);
}

#ifdef MLS_MPI
/* Moves the buckets under way on as far as their messages have come, without waiting. */
static void grad_progress(Interp *I, GradRun *gr) {
  for (int b = 0; b < gr->nb; b++) {
    GradBucket *bk = &gr->b[b];
    if (!bk->started || bk->done) continue;
    bool done = false;
    int rc = red_progress(&bk->job, &done);
    if (rc != MPI_SUCCESS) check(I, rc, GRAD_ALLREDUCE_NAME, gr->sp);
    bk->done = done;
  }
}
/* The hook's step, after each node of the backward pass. */
static void grad_step(Interp *I, AdHook *h) {
  GradRun *gr = (GradRun *)h;
  for (int b = 0; b < gr->nb; b++) gr->b[b].overlapped |= gr->b[b].started && !gr->b[b].done;
  grad_progress(I, gr);
}
#endif

/* Leaf k's final gradient g (borrowed; VT_NULL: zero): weighted into its place; a bucket whose
** leaves have all arrived starts its reduction. */
static void grad_leaf(Interp *I, AdHook *h, int k, Value g) {
  GradRun *gr = (GradRun *)h;
  if (k < 0 || k >= gr->nleaves) return;
  GradLeaf *lf = &gr->leaf[k];
  int64_t n = lf->rows * lf->cols;
  double *d = gr->data + lf->off;
  Value p = ad_primal(g);
  if (gr->direct && (p.t == VT_NULL || p.t == VT_NUM || p.t == VT_BOOL || (p.t == VT_MAT && tensor_numel(p.u.m) == n)))
    grad_leaf_direct(I, gr, lf, p);
  else if (p.t == VT_NULL) memset(d, 0, (size_t)n * sizeof(double));
  else if (p.t == VT_NUM || p.t == VT_BOOL) {
    if (n != 1) mls_throw(I, gr->sp, GRAD_ALLREDUCE_NAME ": the gradient of parameter %d is a number, the parameter has %lld numbers", k + 1, (long long)n);
    d[0] = gr->w * (p.t == VT_NUM ? p.u.n : p.u.b);
  } else if (p.t == VT_MAT && tensor_numel(p.u.m) == n) {
    Tensor *c = tensor_contiguous(I, p.u.m);
    if (c->st->dev && !c->st->sparse && c->st->be->download) {   /* a device gradient: copied, then weighted */
      int rc = n ? c->st->be->download(c->st->be, d, dev_ptr(c), (size_t)n * sizeof(double)) : 0;
      const Backend *cb = c->st->be;
      tensor_free_ref(c);
      if (rc != 0) dev_fail(I, cb, GRAD_ALLREDUCE_NAME, "the copy to host memory", gr->sp);
      for (int64_t i = 0; i < n; i++) d[i] = gr->w * d[i];
    } else {
      const double *x = tensor_data(c);
      for (int64_t i = 0; i < n; i++) d[i] = gr->w * x[i];
      tensor_free_ref(c);
    }
  } else {
    char a[64];
    mls_throw(I, gr->sp, GRAD_ALLREDUCE_NAME ": the gradient of parameter %d is %s, the parameter has %lld numbers", k + 1,
              val_describe(p, a, sizeof a), (long long)n);
  }
  GradBucket *bk = &gr->b[lf->bucket];
  if (--bk->pending > 0) return;
#ifdef MLS_MPI
  red_start(I, &bk->job, gr->data + bk->off, bk->n, MPI_RED_SUM, gr->seq0 + (uint64_t)lf->bucket,
            gr->direct ? gr->be : NULL, gr->sp);
  bk->started = true;
  grad_progress(I, gr);
#endif
}

/* What a throw leaves: reductions under way may still write into data, so then it is all kept
** (and no collective runs after); else freed. The hook is cleared in any case. */
static void grad_cleanup(void *p) {
  GradRun *gr = p;
  gr->I->ad_hook = NULL;
  bool busy = false;
  for (int b = 0; b < gr->nb; b++) busy = busy || (gr->b[b].started && !gr->b[b].done);
  if (busy) {
#ifdef MLS_MPI
    world.broken = true;
#endif
    return;
  }
  for (int b = 0; b < gr->nb; b++) {
#ifdef MLS_MPI
    red_release(&gr->b[b].job);
#endif
  }
  mem_free(gr->b);
  mem_free(gr->leaf);
  if (gr->dt) tensor_free_ref(gr->dt);
#ifdef MLS_MPI
  else if (gr->be && gr->data) {
    gr->be->sync(gr->be);              /* the uploads of grad_build read data until they are done */
    stage_free(gr->be, gr->data, gr->total, gr->pinned);
  }
#endif
  else mem_free(gr->data);
}

/* Hands the leaves of gradient g to grad_leaf, depth first (k counts them). */
static void grad_feed(Interp *I, GradRun *gr, Value g, int *k) {
  g = ad_primal(g);
  if (g.t == VT_LIST) {
    for (int i = 0; i < g.u.l->n; i++) grad_feed(I, gr, g.u.l->items[i], k);
    return;
  }
  grad_leaf(I, &gr->h, (*k)++, g);
}

/* weight * g, each of g's numbers and matrices, then (reduce) each one's allreduce as the op
** (traced by grad or a stage) (+1; g borrowed). */
static Value grad_weighted(Interp *I, Value g, double weight, bool reduce, Span sp) {
  if (ad_primal(g).t == VT_LIST && g.t == VT_LIST) {
    List *l = list_new(I, g.u.l->n);
    Value r = val_list(l);
    tmp_push(I, r);
    for (int i = 0; i < g.u.l->n; i++)
      list_push(l, grad_weighted(I, g.u.l->items[i], weight, reduce, sp), g.u.l->names ? g.u.l->names[i] : NULL);
    tmp_pop(I, 1);
    return r;
  }
  Value x = op_binary(I, OP_MUL, val_num(weight), g, sp);
  if (!reduce) return x;
  tmp_push(I, x);
  Value r = op_apply(I, OP_ALLREDUCE, 1, &x, 1, (Value[]){ val_num(MPI_RED_SUM) }, sp);
  tmp_pop(I, 1);
  val_release(x);
  return r;
}

/* FNV-1a over the leaves' shapes, cut to 52 bits (a double holds it exactly): the header's check
** that every rank's parameters have the same shapes. */
static double grad_fingerprint(const GradLeaf *leaf, int n) {
  uint64_t h = 1469598103934665603ULL;
  for (int k = 0; k < n; k++) {
    int64_t v[3] = { leaf[k].rows, leaf[k].cols, leaf[k].num };
    const uint8_t *b = (const uint8_t *)v;
    for (size_t i = 0; i < sizeof v; i++) { h ^= b[i]; h *= 1099511628211ULL; }
  }
  return (double)(h >> 12);
}

Value mpi_grad_allreduce(Interp *I, Value df, int nargs, Value *args, double weight, int64_t bucket, Span sp) {
  int mark = I->ntmp;
  Symbol **names = mem_calloc((size_t)(nargs > 0 ? nargs : 1), sizeof *names);
  mls_defer(I, mem_free, names);
  bool traced = I->stage || ad_any_active(nargs, args) || ad_any_grad_deep(nargs, args);
  if (world.size == 1 || traced || nargs < 1 || !ad_is_grad(df)) {
    /* one process, or traced (grad over it, jit, --staged): weight * df(args), then each
    ** gradient's allreduce as an op (the same tree per number, so the same bits) */
    Value g = call_value(I, df, nargs, args, names, sp);
    tmp_push(I, g);
    Value r = grad_weighted(I, g, weight, world.size > 1, sp);
    mls_undefer(I, names);
    mem_free(names);
    tmp_push(I, r);
    val_retain(r);
    tmp_release_to(I, mark);
    return r;
  }
  GradRun *gr = mem_calloc(1, sizeof *gr);
  mls_defer(I, mem_free, gr);
  gr->I = I;
  gr->w = weight;
  gr->sp = sp;
  int nl = grad_leaves(I, args[0], NULL, 0, sp);
  gr->leaf = mem_calloc((size_t)(nl > 0 ? nl : 1), sizeof *gr->leaf);
  gr->b = mem_calloc((size_t)(nl > 0 ? nl : 1), sizeof *gr->b);
  mls_defer(I, grad_cleanup, gr);
  grad_leaves(I, args[0], gr->leaf, 0, sp);
  gr->nleaves = nl;
  /* the buckets: from the last leaf back (the backward pass finishes the last layers first),
  ** each up to `bucket` numbers (a larger leaf is a bucket of its own) */
  int64_t total = 0;
  for (int k = nl - 1; k >= 0; k--) {
    GradLeaf *lf = &gr->leaf[k];
    int64_t n = lf->rows * lf->cols;
    GradBucket *cur = gr->nb ? &gr->b[gr->nb - 1] : NULL;
    if (!cur || (cur->n > 0 && cur->n + n > bucket)) { cur = &gr->b[gr->nb++]; cur->off = total; }
    lf->off = total;
    lf->bucket = (int)(cur - gr->b);
    cur->n += n;
    cur->pending++;
    total += n;
  }
  MpiHeader h = header(MPI_K_GRADS);
  h.rows = total;
  h.cols = bucket;
  h.num = grad_fingerprint(gr->leaf, nl);
  agree(I, &h, val_null(), sp, NULL);
  gr->total = total;
#ifdef MLS_MPI
  gr->be = grad_device(args[0]);
  gr->direct = gr->be && gr->be->combine && mpi_device_ptrs();
  if (gr->direct) {
    gr->dt = tensor_new_on(I, gr->be, total > 0 ? total : 1, 1);
    gr->data = dev_ptr(gr->dt);
  } else if (gr->be) gr->data = stage_alloc(gr->be, total, &gr->pinned);
  else
#endif
    gr->data = mem_alloc((size_t)(total > 0 ? total : 1) * sizeof(double));
#ifdef MLS_MPI
  gr->seq0 = world.jobs;
  world.jobs += (uint64_t)gr->nb;
#endif
  gr->h.leaf = grad_leaf;
#ifdef MLS_MPI
  gr->h.step = grad_step;
#endif
  I->ad_hook = &gr->h;
  Value g = call_value(I, df, nargs, args, names, sp);
  I->ad_hook = NULL;
  tmp_push(I, g);
  if (!gr->h.claimed) {       /* (df's grad took no hook): its result, leaf by leaf */
    GradLeaf *tmp = mem_calloc((size_t)(nl > 0 ? nl : 1), sizeof *tmp);
    mls_defer(I, mem_free, tmp);
    int ng = grad_leaves(I, ad_primal(g), NULL, 0, sp);
    if (ng != nl) mls_throw(I, sp, GRAD_ALLREDUCE_NAME ": the gradient has %d parts, the parameters %d", ng, nl);
    mls_undefer(I, tmp);
    mem_free(tmp);
    int k = 0;
    grad_feed(I, gr, ad_primal(g), &k);
  }
#ifdef MLS_MPI
  for (int b = 0; b < gr->nb; b++) {
    GradBucket *bk = &gr->b[b];
    if (!bk->started) {       /* (cannot happen: every leaf has arrived) */
      red_start(I, &bk->job, gr->data + bk->off, bk->n, MPI_RED_SUM, gr->seq0 + (uint64_t)b, gr->direct ? gr->be : NULL, sp);
      bk->started = true;
    }
    if (!bk->done) red_wait(I, &bk->job, GRAD_ALLREDUCE_NAME, sp, NULL);
    else red_release(&bk->job);
    bk->done = true;
  }
#endif
  if (getenv("MLS_MPI_LOG")) {   /* what overlapped (tests/mpi/run.sh, bench/mpi.sh) */
    int ov = 0;
    for (int b = 0; b < gr->nb; b++) ov += gr->b[b].overlapped;
    char w[MPI_HDR_WHERE];
    where_of(I, sp, w);
    fprintf(stderr, "grad_allreduce at %s: %lld numbers in %d buckets, %d under way during the backward pass%s%s%s\n", w,
            (long long)total, gr->nb, ov, gr->be ? ", on the device " : "", gr->be ? gr->be->name : "",
            !gr->be ? "" : gr->direct ? ": reduced in device buffers (CUDA-aware MPI)"
                         : gr->pinned ? ": staged through pinned host memory" : ": staged through host memory");
  }
  int k = 0;
  Value r = grad_build(I, gr, args[0], &k);
  tmp_push(I, r);
  mls_undefer(I, gr);          /* grad_cleanup */
  grad_cleanup(gr);
  mls_undefer(I, gr);          /* mem_free */
  mem_free(gr);
  mls_undefer(I, names);
  mem_free(names);
  val_retain(r);
  tmp_release_to(I, mark);
  return r;
}
