/*
** ops/linalg.c — the linear-algebra family: solve, inv, det and the outputs of cholesky, eigen,
** qr and svd on plain values, through LAPACKE (OpenBLAS) or a device's LU solver. Two layers:
** la_* kernels (LAPACK only, never throw) and the ops (arguments, checks, errors, results).
**
** Conventions (docs/language.md "Linear algebra"): every matrix given to LAPACK must be finite;
** solve and inv reject exactly singular matrices and those with a reciprocal condition number
** below machine epsilon (as R does); eigen gives values decreasing; qr is thin with diag(R) >= 0;
** svd is thin; an eigenvector (svd: a column of V, with its U column) is signed so that its
** largest-magnitude entry is positive; cholesky gives the lower L (R's chol gives t(L)).
** The builtins of the same names (builtins_linalg.c) and the tape and the stager (linalg_apply)
** call these; errors are those builtins': "bad argument #1 to 'solve' (...)", "eigen: ...".
*/
#include <lapacke.h>
#undef I          /* <complex.h> (via lapacke.h) defines I; MLS uses I for the interpreter */
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "autodiff.h"
#include "backend/backend.h"
#include "err.h"
#include "mem.h"
#include "ops/family.h"
#include "ops/linalg.h"
#include "state.h"
#include "tensor.h"

/* ==== Kernels ==========================================================================
** Each la_* function takes contiguous row-major tensors that the caller owns and allows it to
** overwrite (private copies: the user's matrices are never touched), calls LAPACK and reports
** through LaInfo instead of throwing, so the same signatures can move behind the backend
** interface (a CUDA backend would implement them with cuSOLVER). Sizes are at least 1x1 and
** fit lapack_int: the ops (below) handle empty matrices and check the dimensions first.
*/

typedef enum LaStatus {
  LA_OK = 0,
  LA_SINGULAR,      /* a zero pivot: U[index, index] is exactly zero */
  LA_ILLCOND,       /* reciprocal condition number rcond below machine epsilon */
  LA_NOT_PD,        /* the leading minor of order index is not positive */
  LA_NOCONV,        /* the iterative algorithm did not converge */
  LA_NOMEM,         /* LAPACKE could not allocate its workspace */
  LA_INTERNAL       /* LAPACK rejected argument index of routine (a bug here) */
} LaStatus;

typedef struct LaInfo {
  LaStatus status;
  int64_t index;
  double rcond;
  const char *routine;
} LaInfo;

/* Records a LAPACKE return code: 0 is fine, > 0 is the routine's numerical failure (status
** when_positive), < 0 a memory or argument error. Returns true when info was 0. */
static bool la_check(LaInfo *st, lapack_int info, const char *routine, LaStatus when_positive) {
  if (info == 0) return true;
  st->routine = routine;
  st->index = (int64_t)info;
  if (info > 0) st->status = when_positive;
  else if (info == LAPACK_WORK_MEMORY_ERROR || info == LAPACK_TRANSPOSE_MEMORY_ERROR) st->status = LA_NOMEM;
  else { st->status = LA_INTERNAL; st->index = -(int64_t)info; }
  return false;
}

static void la_init(LaInfo *st) { st->status = LA_OK; st->index = 0; st->rcond = 1; st->routine = ""; }

/* LU-factors the n x n A in place (P A = L U) and estimates its reciprocal condition number
** in the 1-norm. ipiv gets n pivots. Returns false (st set) when A is singular or ill-conditioned. */
static bool la_lu(Tensor *A, lapack_int *ipiv, LaInfo *st) {
  lapack_int n = (lapack_int)tensor_rows(A);
  double *a = tensor_data(A);
  double anorm = LAPACKE_dlange(LAPACK_ROW_MAJOR, '1', n, n, a, n);
  if (!la_check(st, LAPACKE_dgetrf(LAPACK_ROW_MAJOR, n, n, a, n, ipiv), "dgetrf", LA_SINGULAR)) return false;
  double rcond = 0;
  if (!la_check(st, LAPACKE_dgecon(LAPACK_ROW_MAJOR, '1', n, a, n, anorm, &rcond), "dgecon", LA_INTERNAL)) return false;
  st->rcond = rcond;
  if (!(rcond >= DBL_EPSILON)) { st->status = LA_ILLCOND; st->routine = "dgecon"; return false; }
  return true;
}

/* Solves A X = B: A (n x n) is overwritten by its LU factors, B (n x k) by X. */
static LaStatus la_solve(Tensor *A, Tensor *B, LaInfo *st) {
  la_init(st);
  lapack_int n = (lapack_int)tensor_rows(A), k = (lapack_int)tensor_cols(B);
  lapack_int *ipiv = mem_alloc((size_t)n * sizeof *ipiv);
  if (la_lu(A, ipiv, st) && k > 0)
    la_check(st, LAPACKE_dgetrs(LAPACK_ROW_MAJOR, 'N', n, k, tensor_data(A), n, ipiv, tensor_data(B), k),
             "dgetrs", LA_INTERNAL);
  mem_free(ipiv);
  return st->status;
}

/* Replaces the n x n A by its inverse. */
static LaStatus la_inv(Tensor *A, LaInfo *st) {
  la_init(st);
  lapack_int n = (lapack_int)tensor_rows(A);
  lapack_int *ipiv = mem_alloc((size_t)n * sizeof *ipiv);
  if (la_lu(A, ipiv, st))
    la_check(st, LAPACKE_dgetri(LAPACK_ROW_MAJOR, n, tensor_data(A), n, ipiv), "dgetri", LA_SINGULAR);
  mem_free(ipiv);
  return st->status;
}

/* The determinant from dgetrf's factors (either order: only the diagonal is read) and pivots.
** The product of the pivots is kept as mantissa and exponent, so that it overflows or
** underflows only when the determinant itself does. */
static double lu_det(const double *lu, lapack_int n, const lapack_int *ipiv) {
  double m = 1;
  long e = 0;
  for (lapack_int i = 0; i < n; i++) {
    int ex;
    m = frexp(m * lu[(int64_t)i * n + i], &ex);
    e += ex;
    if (ipiv[i] != i + 1) m = -m;
  }
  if (e > 100000) e = 100000;          /* ldexp saturates to Inf or 0 anyway */
  if (e < -100000) e = -100000;
  return ldexp(m, (int)e);
}

/* The determinant of the n x n A (overwritten by its LU factors); exactly 0 for a zero pivot. */
static LaStatus la_det(Tensor *A, double *det, LaInfo *st) {
  la_init(st);
  lapack_int n = (lapack_int)tensor_rows(A);
  double *a = tensor_data(A);
  lapack_int *ipiv = mem_alloc((size_t)n * sizeof *ipiv);
  lapack_int info = LAPACKE_dgetrf(LAPACK_ROW_MAJOR, n, n, a, n, ipiv);
  *det = 0;
  if (info > 0) {
    mem_free(ipiv);
    return LA_OK;                        /* singular: the determinant is 0 */
  }
  if (la_check(st, info, "dgetrf", LA_INTERNAL)) *det = lu_det(a, n, ipiv);
  mem_free(ipiv);
  return st->status;
}

/* Replaces the symmetric positive definite n x n A (its lower triangle is read) by the lower
** triangular L with L L' = A; the upper triangle is zeroed. */
static LaStatus la_cholesky(Tensor *A, LaInfo *st) {
  la_init(st);
  lapack_int n = (lapack_int)tensor_rows(A);
  double *a = tensor_data(A);
  if (la_check(st, LAPACKE_dpotrf(LAPACK_ROW_MAJOR, 'L', n, a, n), "dpotrf", LA_NOT_PD))
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = i + 1; j < n; j++) a[i * n + j] = 0;
  return st->status;
}

/* Makes column j of the rows x cols X point the same way every time: flips its sign (and that
** of column j of Y, rows yrows, when Y is not NULL) unless its largest-magnitude entry is
** positive. Entries within a relative 1e-8 of the largest count as ties; the first one wins, so
** rounding cannot change the choice between (0.7071, -0.7071) and (-0.7071, 0.7071). */
static void la_fix_sign(double *X, int64_t rows, int64_t cols, int64_t j, double *Y, int64_t yrows) {
  double big = 0;
  for (int64_t i = 0; i < rows; i++) big = fmax(big, fabs(X[i * cols + j]));
  for (int64_t i = 0; i < rows; i++) {
    double x = X[i * cols + j];
    if (fabs(x) < big * (1 - 1e-8)) continue;
    if (x < 0) {
      for (int64_t r = 0; r < rows; r++) X[r * cols + j] = -X[r * cols + j];
      if (Y)
        for (int64_t r = 0; r < yrows; r++) Y[r * cols + j] = -Y[r * cols + j];
    }
    return;
  }
}

/* Eigen-decomposes the symmetric n x n A (its lower triangle is read): w (n x 1) gets the
** eigenvalues in decreasing order and A is replaced by the eigenvectors, one per column, in the
** same order, signed by la_fix_sign. */
static LaStatus la_eigen_sym(Tensor *A, Tensor *w, LaInfo *st) {
  la_init(st);
  lapack_int n = (lapack_int)tensor_rows(A);
  double *a = tensor_data(A), *wd = tensor_data(w);
  if (!la_check(st, LAPACKE_dsyevd(LAPACK_ROW_MAJOR, 'V', 'L', n, a, n, wd), "dsyevd", LA_NOCONV)) return st->status;
  for (int64_t j = 0; j < n / 2; j++) {  /* LAPACK's order is increasing */
    int64_t k = n - 1 - j;
    double t = wd[j]; wd[j] = wd[k]; wd[k] = t;
    for (int64_t i = 0; i < n; i++) { t = a[i * n + j]; a[i * n + j] = a[i * n + k]; a[i * n + k] = t; }
  }
  for (int64_t j = 0; j < n; j++) la_fix_sign(a, n, n, j, NULL, 0);
  return LA_OK;
}

/* Thin QR of the m x n A (overwritten): Q (m x k, orthonormal columns) and R (k x n, upper
** triangular), k = min(m, n), with A = Q R and diag(R) >= 0 (unique when A has full rank). */
static LaStatus la_qr(Tensor *A, Tensor *Q, Tensor *R, LaInfo *st) {
  la_init(st);
  lapack_int m = (lapack_int)tensor_rows(A), n = (lapack_int)tensor_cols(A), k = m < n ? m : n;
  double *a = tensor_data(A), *q = tensor_data(Q), *r = tensor_data(R);
  double *tau = mem_alloc((size_t)k * sizeof *tau);
  if (la_check(st, LAPACKE_dgeqrf(LAPACK_ROW_MAJOR, m, n, a, n, tau), "dgeqrf", LA_INTERNAL)) {
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = 0; j < n; j++) r[i * n + j] = j >= i ? a[i * n + j] : 0;
    for (int64_t i = 0; i < m; i++) memcpy(q + i * k, a + i * n, (size_t)k * sizeof *q);
    if (la_check(st, LAPACKE_dorgqr(LAPACK_ROW_MAJOR, m, k, k, q, k, tau), "dorgqr", LA_INTERNAL))
      for (int64_t i = 0; i < k; i++) {
        if (!(r[i * n + i] < 0)) continue;
        for (int64_t j = i; j < n; j++) r[i * n + j] = -r[i * n + j];
        for (int64_t p = 0; p < m; p++) q[p * k + i] = -q[p * k + i];
      }
  }
  mem_free(tau);
  return st->status;
}

/* Thin SVD of the m x n A (overwritten): U (m x k), S (k x k diagonal, decreasing), V (n x k)
** with A = U S V', k = min(m, n); each column of V is signed by la_fix_sign, with its U column.
** Divide and conquer (dgesdd, as R's svd); should it not converge, QR iteration (dgesvd). */
static LaStatus la_svd(Tensor *A, Tensor *U, Tensor *S, Tensor *V, LaInfo *st) {
  la_init(st);
  lapack_int m = (lapack_int)tensor_rows(A), n = (lapack_int)tensor_cols(A), k = m < n ? m : n;
  double *u = tensor_data(U), *sd = tensor_data(S), *v = tensor_data(V);
  /* one block for s, vt, a copy of A (dgesdd destroys it) and dgesvd's superb: one failure point */
  double *s = mem_alloc(((size_t)k * 2 + (size_t)k * (size_t)n + (size_t)m * (size_t)n) * sizeof *s);
  double *vt = s + k, *save = vt + (size_t)k * (size_t)n, *superb = save + (size_t)m * (size_t)n;
  memcpy(save, tensor_data(A), (size_t)m * (size_t)n * sizeof *save);
  lapack_int info = LAPACKE_dgesdd(LAPACK_ROW_MAJOR, 'S', m, n, tensor_data(A), n, s, u, k, vt, n);
  if (info > 0) {
    memcpy(tensor_data(A), save, (size_t)m * (size_t)n * sizeof *save);
    info = LAPACKE_dgesvd(LAPACK_ROW_MAJOR, 'S', 'S', m, n, tensor_data(A), n, s, u, k, vt, n, superb);
    la_check(st, info, "dgesvd", LA_NOCONV);
  } else {
    la_check(st, info, "dgesdd", LA_NOCONV);
  }
  if (st->status == LA_OK) {
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = 0; j < k; j++) sd[i * k + j] = i == j ? s[i] : 0;
    for (int64_t i = 0; i < n; i++)
      for (int64_t j = 0; j < k; j++) v[i * k + j] = vt[j * n + i];
    for (int64_t j = 0; j < k; j++) la_fix_sign(v, n, k, j, u, m);
  }
  mem_free(s);
  return st->status;
}

/* ==== Ctrl-C during a long factorization ============================================
** LAPACK cannot be stopped part-way. A call estimated at I->la_thread_flops or more therefore
** runs on a worker thread while the interpreter's thread waits for it, polling the interrupt
** flag every 10 ms: on Ctrl-C the op raises "interrupted" at its call at once (R would wait for
** the end). The worker goes on to its end alone; the job holds a reference to each of its
** matrices, so the interpreter's unwinding frees none of them under it, and the interpreter's
** thread drops them at its next such call (la_reap_jobs, from la_run), or the process ends first
** (la_busy: main() then skips the library destructors that would free OpenBLAS's buffers under
** the worker; interp_free leaves the job to it, la_detach_abandoned). A worker allocates only
** its la_* scratch, through mem_alloc, with an OOM hook of its own: a failure there is LA_NOMEM,
** never the interpreter's error. */
typedef enum LaKind { LJ_SOLVE, LJ_INV, LJ_DET, LJ_CHOL, LJ_EIGEN, LJ_QR, LJ_SVD } LaKind;

typedef struct LaJob {
  LaKind kind;
  Tensor *t[4];                 /* the la_* function's matrices, in its order (NULL: unused) */
  uint64_t work;                /* bytes counted against --max-memory while it runs (la_work_bytes) */
  double det;
  LaInfo st;
  LaStatus status;
  bool done;                    /* under mu */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t th;
  jmp_buf oom;
  struct LaJob *next;           /* in I->la_abandoned */
} LaJob;

/* ==== Workspace counted against --max-memory =============================================
** LAPACKE's row-major interface copies each matrix argument to column-major order and allocates
** the routine's workspace itself, out of mem.c's sight; the la_* functions add their own
** scratch. la_run counts an upper bound of all of it (la_work_bytes) against --max-memory for
** the call's duration, so a factorization that would pass the limit is refused before it
** starts, with the same located error as a matrix. Blocked routines are allowed a block size
** of 64 columns (OpenBLAS's LAPACK asks for 32 or 64); the SVD's workspace is asked of LAPACK. */
#define LA_NB 64

static uint64_t la_svd_lwork(lapack_int m, lapack_int n) {
  lapack_int k = m < n ? m : n;
  double q1 = 0, q2 = 0;
  lapack_int iw = 0;
  if (LAPACKE_dgesdd_work(LAPACK_ROW_MAJOR, 'S', m, n, NULL, n, NULL, NULL, k, NULL, n, &q1, -1, &iw) != 0) q1 = 0;
  if (LAPACKE_dgesvd_work(LAPACK_ROW_MAJOR, 'S', 'S', m, n, NULL, n, NULL, NULL, k, NULL, n, &q2, -1) != 0) q2 = 0;
  double q = q1 > q2 ? q1 : q2;
  double mx = (double)(m > n ? m : n), mn = (double)k;
  if (!(q >= 1)) q = 4 * mn * mn + 7 * mn + mx;       /* (LAPACK's minimum, should the query fail) */
  return (uint64_t)q;
}

static uint64_t la_work_bytes(LaKind kind, Tensor *const t[4]) {
  uint64_t m = (uint64_t)tensor_rows(t[0]), n = (uint64_t)tensor_cols(t[0]), k = m < n ? m : n, d = sizeof(double);
  switch (kind) {
  case LJ_SOLVE: {
    uint64_t q = (uint64_t)tensor_cols(t[1]);
    return d * (n * n + n * q + 8 * n) + 4 * n;        /* dgetrs's copies of A and B; dgecon's work */
  }
  case LJ_INV: return d * (n * n + LA_NB * n + 8 * n) + 4 * n;   /* dgetri: a copy and n x 64 */
  case LJ_DET: return d * n * n + 4 * n;
  case LJ_CHOL: return d * n * n;
  case LJ_EIGEN: return d * (3 * n * n + 6 * n + 1) + 4 * (5 * n + 3);   /* dsyevd: a copy, 1+6n+2n^2 */
  case LJ_QR: return d * (m * n + LA_NB * n + k);
  case LJ_SVD:                                 /* la_svd's block; copies of A, U, Vt; work */
    return d * (2 * k + k * n + m * n) + d * (m * n + m * k + k * n) + d * la_svd_lwork((lapack_int)m, (lapack_int)n) +
           4 * 8 * k;
  }
  return 0;
}

void la_set_thread_flops(Interp *I, double flops) { I->la_thread_flops = flops; }

static LaStatus la_job_body(LaJob *j) {
  switch (j->kind) {
  case LJ_SOLVE: return la_solve(j->t[0], j->t[1], &j->st);
  case LJ_INV: return la_inv(j->t[0], &j->st);
  case LJ_DET: return la_det(j->t[0], &j->det, &j->st);
  case LJ_CHOL: return la_cholesky(j->t[0], &j->st);
  case LJ_EIGEN: return la_eigen_sym(j->t[0], j->t[1], &j->st);
  case LJ_QR: return la_qr(j->t[0], j->t[1], j->t[2], &j->st);
  case LJ_SVD: return la_svd(j->t[0], j->t[1], j->t[2], j->t[3], &j->st);
  }
  return LA_INTERNAL;
}

static void la_job_oom(void *ud, size_t n) {
  (void)n;
  longjmp(((LaJob *)ud)->oom, 1);    /* each la_* allocates once, before anything to undo */
}

static void *la_worker(void *p) {
  LaJob *j = p;
  mem_set_oom_handler((MemOomHook){ la_job_oom, j });
  LaStatus s;
  if (setjmp(j->oom) == 0) s = la_job_body(j);
  else { j->st.status = LA_NOMEM; j->st.routine = "workspace"; s = LA_NOMEM; }
  pthread_mutex_lock(&j->mu);
  j->status = s;
  j->done = true;
  pthread_cond_signal(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return NULL;
}

static void la_job_free(LaJob *j) {
  pthread_join(j->th, NULL);
  mem_uncharge(j->work);
  for (int i = 0; i < 4; i++)
    if (j->t[i]) tensor_free_ref(j->t[i]);
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  mem_free(j);
}

/* Frees I's abandoned jobs that have ended; with wait, waits for all of them first. (Only the
** thread running I touches the list; each job's own fields are under its mu.) */
static void la_reap_jobs(Interp *I, bool wait) {
  LaJob **pp = &I->la_abandoned;
  while (*pp) {
    LaJob *j = *pp;
    pthread_mutex_lock(&j->mu);
    while (wait && !j->done) pthread_cond_wait(&j->cv, &j->mu);
    bool done = j->done;
    pthread_mutex_unlock(&j->mu);
    if (done) { *pp = j->next; la_job_free(j); }
    else pp = &j->next;
  }
}

void la_wait_abandoned(Interp *I) { la_reap_jobs(I, true); }

bool la_busy(Interp *I) {
  la_reap_jobs(I, false);
  return I->la_abandoned != NULL;
}

void la_detach_abandoned(Interp *I) {
  la_reap_jobs(I, false);
  for (LaJob *j = I->la_abandoned; j; j = j->next) pthread_detach(j->th);   /* (the job stays allocated: */
  I->la_abandoned = NULL;                                                     /* its worker still uses it) */
}

/* A copy of job on the heap, its worker started; NULL (nothing held) when no thread starts. */
static LaJob *la_start(const LaJob *job) {
  LaJob *j = mem_alloc(sizeof *j);
  memcpy(j, job, sizeof *j);
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->cv, NULL);
  sigset_t all, old;                            /* the worker takes no signal: Ctrl-C and the */
  sigfillset(&all);                             /* fuzzers' timers go to the interpreter */
  pthread_sigmask(SIG_SETMASK, &all, &old);
  bool started = pthread_create(&j->th, NULL, la_worker, j) == 0;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (started) return j;
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->cv);
  mem_free(j);
  return NULL;
}

/* Runs la_* kind on t[0..3] (at most 4, NULL-padded): on this thread when it is estimated at
** under I->la_thread_flops or no thread starts, else on a worker (above). det gets la_det's result. */
static void la_uncharge(void *p) { mem_uncharge(((LaJob *)p)->work); }

static LaStatus la_run(Interp *I, Span sp, LaKind kind, double flops, Tensor *t0, Tensor *t1, Tensor *t2,
                       Tensor *t3, double *det, LaInfo *st) {
  static const char *const names[] = { "solve", "inv", "det", "cholesky", "eigen", "qr", "svd" };   /* ORDER LaKind */
  la_reap_jobs(I, false);
  LaJob here = { .kind = kind, .t = { t0, t1, t2, t3 } };   /* (its scratch may throw: not on the heap) */
  here.work = la_work_bytes(kind, here.t);
  char what[48];
  snprintf(what, sizeof what, "LAPACK workspace for %s", names[kind]);
  tensor_charge(I, here.work, what);
  mls_defer(I, la_uncharge, &here);
  LaJob *j = flops >= I->la_thread_flops ? la_start(&here) : NULL;
  if (!j) {
    LaStatus s = la_job_body(&here);
    mls_undefer(I, &here);
    mem_uncharge(here.work);
    *st = here.st;
    if (det) *det = here.det;
    return s;
  }
  mls_undefer(I, &here);                        /* the job gives the count back (la_job_free) */
  for (int i = 0; i < 4; i++)
    if (j->t[i]) j->t[i]->refcount++;           /* the worker's: they outlive an unwinding */
  pthread_mutex_lock(&j->mu);
  for (;;) {                                    /* the flag first: a call made with it set */
    if (I->interrupted) {                       /* always raises, as the kernels' polls do */
      pthread_mutex_unlock(&j->mu);
      j->next = I->la_abandoned;
      I->la_abandoned = j;
      interp_check_interrupt(I, sp);            /* raises "interrupted" */
    }
    if (j->done) break;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 10 * 1000 * 1000;
    if (until.tv_nsec >= 1000000000L) { until.tv_sec++; until.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&j->cv, &j->mu, &until);
  }
  pthread_mutex_unlock(&j->mu);
  LaStatus s = j->status;
  *st = j->st;
  if (det) *det = j->det;
  la_job_free(j);                               /* the caller's references remain */
  return s;
}


/* ==== Errors and checks ===============================================================
** Each names the builtin called (name: "solve", "inverse", "eigen" ...) and is located at sp,
** the call's span, with the text of the builtins' bi_argerror and bi_error. */

static l_noret la_argerror(Interp *I, Span sp, const char *name, int argn, const char *fmt, ...)
  __attribute__((format(printf, 5, 6)));
static l_noret la_argerror(Interp *I, Span sp, const char *name, int argn, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mls_throw(I, sp, "bad argument #%d to '%s' (%s)", argn, name, msg);
}

static l_noret la_error(Interp *I, Span sp, const char *name, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static l_noret la_error(Interp *I, Span sp, const char *name, const char *fmt, ...) {
  char msg[900];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  mls_throw(I, sp, "%s: %s", name, msg);
}

/* Turns a kernel's failure into the op's error. */
static l_noret la_raise(Interp *I, Span sp, const char *name, const LaInfo *st) {
  switch (st->status) {
  case LA_SINGULAR:
    la_error(I, sp, name, "the matrix is singular (U[%lld,%lld] is exactly zero)", (long long)st->index,
             (long long)st->index);
  case LA_ILLCOND:
    la_error(I, sp, name, "the matrix is computationally singular (reciprocal condition number %.3g)", st->rcond);
  case LA_NOT_PD:
    la_error(I, sp, name, "the matrix is not positive definite (leading minor %lld)", (long long)st->index);
  case LA_NOCONV:
    la_error(I, sp, name, "the algorithm did not converge (LAPACK %s, info %lld)", st->routine, (long long)st->index);
  case LA_NOMEM:
    la_error(I, sp, name, "out of memory in LAPACK %s", st->routine);
  case LA_INTERNAL:
  case LA_OK:
    break;
  }
  la_error(I, sp, name, "internal error: LAPACK %s rejected its argument %lld", st->routine, (long long)st->index);
}

/* Checks the shape of matrix m, argument i (0-based) of the op: square when asked, and within
** LAPACK's integer range. Throws a "bad argument" error. */
static void check_shape(Interp *I, Span sp, const char *name, const Tensor *m, int i, bool square) {
  int64_t r = tensor_rows(m), c = tensor_cols(m);
  if (square && r != c)
    la_argerror(I, sp, name, i + 1, "square matrix expected, got %lldx%lld", (long long)r, (long long)c);
  if ((int64_t)(lapack_int)r != r || (int64_t)(lapack_int)c != c || (int64_t)(lapack_int)(r * c) != r * c)
    la_argerror(I, sp, name, i + 1, "%lldx%lld matrix is too large for LAPACK", (long long)r, (long long)c);
}

/* Throws unless every element of the contiguous m (argument i) is finite. */
static void check_finite(Interp *I, Span sp, const char *name, const Tensor *m, int i) {
  const double *d = tensor_data(m);
  int64_t c = tensor_cols(m), n = tensor_numel(m);
  for (int64_t k = 0; k < n; k++)
    if (!isfinite(d[k]))
      la_argerror(I, sp, name, i + 1, "finite matrix expected, got %s at [%lld,%lld]",
                  isnan(d[k]) ? "NaN" : d[k] > 0 ? "Inf" : "-Inf", (long long)(k / c + 1), (long long)(k % c + 1));
}

/* Throws unless the contiguous square m (argument i) is symmetric: |m[i,j] - m[j,i]| at most
** 1e-10 times the largest |m| (rounding in X %*% t(X) passes; a real asymmetry does not). */
static void check_symmetric(Interp *I, Span sp, const char *name, const Tensor *m, int i) {
  const double *d = tensor_data(m);
  int64_t n = tensor_rows(m);
  double big = 0;
  for (int64_t k = 0; k < n * n; k++) big = fmax(big, fabs(d[k]));
  double tol = 1e-10 * big;
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = r + 1; c < n; c++)
      if (fabs(d[r * n + c] - d[c * n + r]) > tol)
        la_argerror(I, sp, name, i + 1, "symmetric matrix expected, got [%lld,%lld] = %.15g but [%lld,%lld] = %.15g",
                    (long long)(r + 1), (long long)(c + 1), d[r * n + c], (long long)(c + 1), (long long)(r + 1),
                    d[c * n + r]);
}

/* Operand i (a matrix or a number, made 1x1) as a private contiguous copy that a kernel may
** overwrite, after the shape and finiteness checks. The copy (+1) is left on the temp stack, so
** an error later releases it; the caller releases it with tmp_release_to. */
static Tensor *arg_copy(Interp *I, Span sp, const char *name, Value v, int i, bool square) {
  Tensor *m;
  if (v.t == VT_MAT) {
    m = v.u.m;
    m->refcount++;
  } else if (v.t == VT_NUM || v.t == VT_BOOL) {
    m = tensor_new(I, 1, 1);
    tensor_data(m)[0] = v.t == VT_NUM ? v.u.n : v.u.b;
  } else {
    char d[64];
    la_argerror(I, sp, name, i + 1, "matrix expected, got %s", val_describe(v, d, sizeof d));
  }
  tmp_push(I, val_mat(m));
  check_shape(I, sp, name, m, i, square);
  Tensor *c = m;
  if (!tensor_is_unique(m) || !tensor_is_contiguous(m)) {
    c = tensor_clone(I, m);
    tmp_pop(I, 1);
    tmp_push(I, val_mat(c));
    tensor_free_ref(m);
  }
  check_finite(I, sp, name, c, i);
  return c;
}

/* A new rows x cols result, kept on the temp stack like arg_copy's. */
static Tensor *out_new(Interp *I, int64_t rows, int64_t cols) {
  Tensor *t = tensor_new(I, rows, cols);
  tmp_push(I, val_mat(t));
  return t;
}

/* Retains a result held on the temp stack so that it survives tmp_release_to. */
static Value keep(Tensor *t) { t->refcount++; return val_mat(t); }

/* ==== The same on a device (Backend getrf/getrs: cuSOLVER) ==============================
** The device factors a column-major copy of A, made on the device by a transposing copy, so
** that the factors, the pivots and the position of a zero pivot are those dgetrf gives on the
** CPU; the condition estimate (dgecon, on the host from the factors) is the CPU's too, so the
** same matrices are refused with the same messages. Results are made and stay on the device.
*/

_Static_assert(sizeof(lapack_int) == sizeof(int32_t), "the device LU takes LAPACK's 32-bit pivots");

static const Backend *la_device(const Tensor *A) {
  const Backend *be = A->st->be;
  return A->st->dev && be->getrf && be->getrs && be->copy2d ? be : NULL;
}

/* The column-major copy of M (its transpose, packed) on M's device, on the temp stack. */
static Tensor *dev_transposed(Interp *I, const Tensor *M) {
  Tensor v = *M;
  v.shape[0] = M->shape[1];
  v.shape[1] = M->shape[0];
  v.stride[0] = M->stride[1];
  v.stride[1] = M->stride[0];
  Tensor *t = tensor_clone(I, &v);
  tmp_push(I, val_mat(t));
  return t;
}

static double *dev_ptr(const Tensor *t) { return t->st->data + t->offset; }   /* no host access */

static l_noret dev_fail(Interp *I, Span sp, const char *name, const Backend *be) {
  la_error(I, sp, name, "failed on the %s backend: %s", be->name, be->error ? be->error() : "unknown error");
}

/* LU of the n x n A (contiguous, on device be): the column-major factors (temp stack) and the
** pivots; st as la_lu sets it (cond: also estimate the condition, as solve and inv do). */
static Tensor *la_lu_dev(Interp *I, Span sp, const char *name, const Backend *be, const Tensor *A, lapack_int *ipiv,
                         bool cond, LaInfo *st) {
  la_init(st);
  lapack_int n = (lapack_int)tensor_rows(A);
  double anorm = cond ? LAPACKE_dlange(LAPACK_ROW_MAJOR, '1', n, n, tensor_data(A), n) : 0;
  Tensor *F = dev_transposed(I, A);
  int64_t info = 0;
  if (be->getrf(dev_ptr(F), n, (int32_t *)ipiv, &info) != 0) dev_fail(I, sp, name, be);
  if (info > 0) {
    st->status = LA_SINGULAR;
    st->index = info;
    st->routine = "dgetrf";
    return F;
  }
  if (cond) {
    double rcond = 0;
    if (!la_check(st, LAPACKE_dgecon(LAPACK_COL_MAJOR, '1', n, tensor_data(F), n, anorm, &rcond), "dgecon", LA_INTERNAL))
      return F;
    st->rcond = rcond;
    if (!(rcond >= DBL_EPSILON)) { st->status = LA_ILLCOND; st->routine = "dgecon"; }
  }
  return F;
}

/* solve(A, B) with A on device be: X on the device. */
static Value solve_dev(Interp *I, Span sp, const char *name, const Backend *be, Tensor *A, Tensor *B) {
  int64_t n = tensor_rows(A), k = tensor_cols(B);
  if (B->st->be != be) {
    B = tensor_to(I, B, be);
    tmp_push(I, val_mat(B));
  }
  lapack_int *ipiv = tensor_scratch(I, (size_t)n * sizeof *ipiv);
  LaInfo st;
  Tensor *F = la_lu_dev(I, sp, name, be, A, ipiv, true, &st);
  if (st.status != LA_OK) la_raise(I, sp, name, &st);
  Tensor *X;
  if (k == 1) {                                 /* a column is the same in both orders */
    X = tensor_clone(I, B);
    tmp_push(I, val_mat(X));
  } else {
    X = dev_transposed(I, B);
  }
  if (be->getrs(dev_ptr(F), n, (const int32_t *)ipiv, dev_ptr(X), k) != 0) dev_fail(I, sp, name, be);
  tensor_scratch_free(I, ipiv);
  if (k != 1) X = dev_transposed(I, X);         /* k x n row-major is X column-major: back */
  X->refcount++;
  return val_mat(X);
}

/* inv(A) with A on device be: the solution of A X = I, on the device. */
static Value inv_dev(Interp *I, Span sp, const char *name, const Backend *be, Tensor *A) {
  int64_t n = tensor_rows(A);
  Tensor *E = tensor_new_host(I, n, n);         /* the identity, made on the host and moved */
  tmp_push(I, val_mat(E));
  double *e = tensor_data(E);
  memset(e, 0, (size_t)(n * n) * sizeof(double));
  for (int64_t i = 0; i < n; i++) e[i * n + i] = 1;
  return solve_dev(I, sp, name, be, A, E);
}

/* det(A) with A on device be: the pivots' product, read from the factors on the host. */
static double det_dev(Interp *I, Span sp, const char *name, const Backend *be, Tensor *A) {
  int64_t n = tensor_rows(A);
  lapack_int *ipiv = tensor_scratch(I, (size_t)n * sizeof *ipiv);
  LaInfo st;
  Tensor *F = la_lu_dev(I, sp, name, be, A, ipiv, false, &st);
  double det = 0;                               /* (a zero pivot: the determinant is 0) */
  if (st.status == LA_OK) det = lu_det(tensor_data(F), (lapack_int)n, ipiv);
  tensor_scratch_free(I, ipiv);
  return det;
}

/* ==== The ops ==========================================================================
** Each runs with I->call_span at sp (out-of-memory errors inside are located there), leaves
** nothing on the temp stack and returns an owned result. */

static Value solve_at(Interp *I, Span sp, const char *name, Value a, Value b) {
  int mark = I->ntmp;
  Tensor *A = arg_copy(I, sp, name, a, 0, true);
  Tensor *B = arg_copy(I, sp, name, b, 1, false);
  if (tensor_rows(B) != tensor_rows(A))
    la_argerror(I, sp, name, 2, "a matrix with %lld rows expected, got %lldx%lld", (long long)tensor_rows(A),
                (long long)tensor_rows(B), (long long)tensor_cols(B));
  const Backend *be = la_device(A);
  if (be && tensor_rows(A) > 0) {
    Value r = solve_dev(I, sp, name, be, A, B);
    tmp_release_to(I, mark);
    return r;
  }
  LaInfo st;
  double n = (double)tensor_rows(A);
  if (n > 0 && la_run(I, sp, LJ_SOLVE, n * n * (2 * n / 3 + 2 * (double)tensor_cols(B)), A, B, NULL, NULL, NULL, &st) != LA_OK)
    la_raise(I, sp, name, &st);
  Value r = keep(B);
  tmp_release_to(I, mark);
  return r;
}

static Value inv_at(Interp *I, Span sp, const char *name, Value a) {
  int mark = I->ntmp;
  Tensor *A = arg_copy(I, sp, name, a, 0, true);
  const Backend *be = la_device(A);
  if (be && tensor_rows(A) > 0) {
    Value r = inv_dev(I, sp, name, be, A);
    tmp_release_to(I, mark);
    return r;
  }
  LaInfo st;
  double n = (double)tensor_rows(A);
  if (n > 0 && la_run(I, sp, LJ_INV, 2 * n * n * n, A, NULL, NULL, NULL, NULL, &st) != LA_OK) la_raise(I, sp, name, &st);
  Value r = keep(A);
  tmp_release_to(I, mark);
  return r;
}

static Value det_at(Interp *I, Span sp, const char *name, Value a) {
  int mark = I->ntmp;
  Tensor *A = arg_copy(I, sp, name, a, 0, true);
  double det = 1;                                     /* of the 0x0 matrix, as R */
  LaInfo st;
  const Backend *be = la_device(A);
  if (be && tensor_rows(A) > 0) det = det_dev(I, sp, name, be, A);
  else if (tensor_rows(A) > 0) {
    double n = (double)tensor_rows(A);
    if (la_run(I, sp, LJ_DET, 2 * n * n * n / 3, A, NULL, NULL, NULL, &det, &st) != LA_OK) la_raise(I, sp, name, &st);
  }
  tmp_release_to(I, mark);
  return val_num(det);
}

/* The outputs of factorization f of a (out[0..n), owned); returns n. */
static int factor_at(Interp *I, Span sp, LinalgFactor f, Value a, Value out[3]) {
  static const char *const names[] = { "cholesky", "eigen", "qr", "svd" };   /* ORDER LinalgFactor */
  const char *name = names[f];
  int mark = I->ntmp;
  Tensor *A = arg_copy(I, sp, name, a, 0, f == LF_CHOLESKY || f == LF_EIGEN);
  LaInfo st;
  int64_t m = tensor_rows(A), n = tensor_cols(A), k = m < n ? m : n;
  double dn = (double)n, flops = 4 * (double)m * dn * (double)k;
  int nout = 0;
  switch (f) {
  case LF_CHOLESKY:
    check_symmetric(I, sp, name, A, 0);
    if (n > 0 && la_run(I, sp, LJ_CHOL, dn * dn * dn / 3, A, NULL, NULL, NULL, NULL, &st) != LA_OK)
      la_raise(I, sp, name, &st);
    out[nout++] = keep(A);
    break;
  case LF_EIGEN: {
    check_symmetric(I, sp, name, A, 0);
    Tensor *w = out_new(I, n, 1);
    if (n > 0 && la_run(I, sp, LJ_EIGEN, 9 * dn * dn * dn, A, w, NULL, NULL, NULL, &st) != LA_OK)
      la_raise(I, sp, name, &st);
    out[nout++] = keep(w);
    out[nout++] = keep(A);
    break;
  }
  case LF_QR: {
    Tensor *Q = out_new(I, m, k), *R = out_new(I, k, n);
    if (k > 0 && la_run(I, sp, LJ_QR, flops, A, Q, R, NULL, NULL, &st) != LA_OK) la_raise(I, sp, name, &st);
    out[nout++] = keep(Q);
    out[nout++] = keep(R);
    break;
  }
  case LF_SVD: {
    Tensor *U = out_new(I, m, k), *S = out_new(I, k, k), *V = out_new(I, n, k);
    if (k > 0 && la_run(I, sp, LJ_SVD, 14 * (double)m * dn * (double)k, A, U, S, V, NULL, &st) != LA_OK)
      la_raise(I, sp, name, &st);
    out[nout++] = keep(U);
    out[nout++] = keep(S);
    out[nout++] = keep(V);
    break;
  }
  }
  tmp_release_to(I, mark);
  return nout;
}

int linalg_factor(Interp *I, LinalgFactor f, Value A, Value out[3], Span sp) {
  Span saved = I->call_span;                   /* an out-of-memory inside is located here */
  I->call_span = sp;
  int n = factor_at(I, sp, f, A, out);
  I->call_span = saved;
  return n;
}

Value linalg_apply_as(Interp *I, OpKind op, const Value *in, const char *name, Span sp) {
  int nin = op_info[op].arity;
  Value v[2] = { val_null(), val_null() };
  for (int k = 0; k < nin; k++) v[k] = ad_finished(in[k]);   /* boxes of ended tapes are plain */
  Value r;
  if (ad_any_active(nin, v)) {                 /* still traced by an outer grad (a derivative's */
    struct Tape *st = I->stage;                /* derivative): recorded there, no stage seeing it */
    I->stage = NULL;                           /* (a throw ends the staging, which restores it) */
    r = op_apply(I, op, nin, v, 0, NULL, sp);
    I->stage = st;
    if (I->interrupted) { val_release(r); interp_check_interrupt(I, sp); }
    return r;
  }
  Tensor *vin[2] = { NULL, NULL };             /* LAPACK or the device solver runs: counted */
  for (int k = 0; k < nin && k < 2; k++) vin[k] = v[k].t == VT_MAT ? v[k].u.m : NULL;
  if (op_abstract_in(vin, nin)) op_abstract_stop(I, op, sp);
  I->kernel_runs++;
  Span saved = I->call_span;                   /* an out-of-memory inside is located here */
  I->call_span = sp;
  switch (op) {
  case OP_SOLVE: r = solve_at(I, sp, name, v[0], v[1]); break;
  case OP_INV: r = inv_at(I, sp, name, v[0]); break;
  case OP_DET: r = det_at(I, sp, name, v[0]); break;
  default: {                                   /* one output of a factorization */
    LinalgFactor f = op == OP_CHOL ? LF_CHOLESKY : op == OP_EIGVALS || op == OP_EIGVECS ? LF_EIGEN
                   : op == OP_QR_Q || op == OP_QR_R ? LF_QR : LF_SVD;
    MLS_ASSERT(op == OP_CHOL || op == OP_EIGVALS || op == OP_EIGVECS || op == OP_QR_Q || op == OP_QR_R ||
               op == OP_SVD_U || op == OP_SVD_S || op == OP_SVD_V);
    int which = op == OP_EIGVECS || op == OP_QR_R || op == OP_SVD_S ? 1 : op == OP_SVD_V ? 2 : 0;
    Value out[3];
    int n = factor_at(I, sp, f, v[0], out);
    for (int i = 0; i < n; i++)
      if (i != which) val_release(out[i]);
    r = out[which];
    break;
  }
  }
  I->call_span = saved;
  /* a signal that came while LAPACK ran on this thread is raised here: what follows never sees r */
  if (I->interrupted) { val_release(r); interp_check_interrupt(I, sp); }
  return r;
}

Value linalg_apply(Interp *I, OpKind op, const Value *in, Span sp) {
  return linalg_apply_as(I, op, in, op_info[op].sym, sp);
}
