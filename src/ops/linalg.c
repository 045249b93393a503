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
#include "backend/dynlibs.h"   /* OpenBLAS and LAPACKE, loaded on first use */
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
#include "ops/rules.h"
#include "ops/shapes_impl.h"
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
** never the interpreter's error. The sparse factorizations (CHOLMOD, UMFPACK: ops/sparse.c) take
** the same worker through la_call (LJ_CALL): a function of their own and its context. */
typedef enum LaKind { LJ_SOLVE, LJ_INV, LJ_DET, LJ_CHOL, LJ_EIGEN, LJ_QR, LJ_SVD, LJ_CALL } LaKind;

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
  void (*call)(void *ctx);      /* LJ_CALL: call(ctx) is the job; drop(ctx) frees a context whose */
  void (*drop)(void *ctx);      /* caller is gone (ctx non-NULL when the job is freed: abandoned) */
  void *ctx;
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
  case LJ_CALL: return 0;                      /* (la_call: the caller counts its own) */
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
  case LJ_CALL: j->call(j->ctx); return LA_OK;
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
  if (j->ctx) j->drop(j->ctx);                 /* an abandoned la_call's context and results */
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

/* Waits for the started job j, polling I's interrupt flag every 10 ms: on a signal the job is
** abandoned to its worker (I->la_abandoned) and "interrupted" raised at sp. The tensors of j->t
** get a reference of the worker's, which la_job_free drops. */
static void la_wait(Interp *I, Span sp, LaJob *j) {
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
}

/* Runs la_* kind on t[0..3] (at most 4, NULL-padded): on this thread when it is estimated at
** under I->la_thread_flops or no thread starts, else on a worker (above). det gets la_det's result. */
static void la_uncharge(void *p) { mem_uncharge(((LaJob *)p)->work); }

static LaStatus la_run(Interp *I, Span sp, LaKind kind, double flops, Tensor *t0, Tensor *t1, Tensor *t2,
                       Tensor *t3, double *det, LaInfo *st) {
  static const char *const names[] = { "solve", "inv", "det", "cholesky", "eigen", "qr", "svd", "" };   /* ORDER LaKind */
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
  la_wait(I, sp, j);
  LaStatus s = j->status;
  *st = j->st;
  if (det) *det = j->det;
  la_job_free(j);                               /* the caller's references remain */
  return s;
}

void la_call(Interp *I, Span sp, double flops, void (*call)(void *ctx), void (*drop)(void *ctx), void *ctx,
             Tensor *hold0, Tensor *hold1) {
  la_reap_jobs(I, false);
  mls_defer(I, drop, ctx);                      /* (la_start's allocation may throw) */
  LaJob here = { .kind = LJ_CALL, .t = { hold0, hold1 }, .call = call, .drop = drop, .ctx = ctx };
  LaJob *j = flops >= I->la_thread_flops ? la_start(&here) : NULL;
  mls_undefer(I, ctx);
  if (!j) { call(ctx); return; }                /* no thread: here, to its end */
  la_wait(I, sp, j);                            /* (interrupted: the job keeps ctx, and drops it) */
  j->ctx = NULL;                                /* the caller's again */
  la_job_free(j);
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
  la_error(I, sp, name, "failed on the %s backend: %s", be->name, be->error ? be->error(be) : "unknown error");
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
  if (be->getrf(be, dev_ptr(F), n, (int32_t *)ipiv, &info) != 0) dev_fail(I, sp, name, be);
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
  if (be->getrs(be, dev_ptr(F), n, (const int32_t *)ipiv, dev_ptr(X), k) != 0) dev_fail(I, sp, name, be);
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
  int n;
  if (f == LF_CHOLESKY && sp_linalg(I, OP_CHOL, &A, "cholesky", &out[0])) n = 1;   /* sparse: CHOLMOD */
  else n = factor_at(I, sp, f, A, out);
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
  if (op == OP_SOLVE || op == OP_CHOL || op == OP_INV || op == OP_DET) {   /* sparse: CHOLMOD, UMFPACK */
    Span saved = I->call_span;                 /* (ops/sparse.c) */
    I->call_span = sp;
    bool done = sp_linalg(I, op, v, name, &r);
    I->call_span = saved;
    if (done) return r;
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

/* ---- derivative rules: inv, det, solve, and the factorizations (issue 25) ---- */
/* The rules of OP_EIGVALS .. OP_SVD_V.
** Each output of a factorization is an op of its own; a rule that needs another output gets it
** as that op (op_apply), and solves are the op solve, so an outer grad differentiates the rules
** too. Conventions, as PyTorch's linalg.eigh/cholesky/qr/svd and JAX's: eigen and cholesky
** take symmetric matrices, so their derivatives are along symmetric perturbations: the adjoint
** is symmetric (symmetrized) and a tangent direction is symmetrized first. qr is differentiable
** for m >= n at full rank; vectors at a repeated eigenvalue or singular value see la_fdiv. */
static Value la_out(Interp *I, OpKind op, Value a, Span sp) { return T(I, op_apply(I, op, 1, &a, 0, NULL, sp)); }
/* A^-1 B and X B^-1 */
static Value lsolve(Interp *I, Value A, Value B, Span sp) {
  return T(I, op_apply(I, OP_SOLVE, 2, (Value[]){ A, B }, 0, NULL, sp));
}
static Value rsolve(Interp *I, Value X, Value B, Span sp) { return rl_tp(I, lsolve(I, rl_tp(I, B, sp), rl_tp(I, X, sp), sp), sp); }
static Value symm(Interp *I, Value X, Span sp) { return B2(OP_MUL, B2(OP_ADD, X, rl_tp(I, X, sp)), val_num(0.5)); }

enum { LM_EYE, LM_LOWER, LM_PHI, LM_UPPER };
/* A constant n x n mask: the identity, the strict lower triangle, the lower triangle with 1/2 on
** the diagonal (Phi of the Cholesky rules), the upper triangle with the diagonal. */
static Value la_mask(Interp *I, int64_t n, int kind) {
  Tensor *t = tensor_new(I, n, n);
  double *d = tensor_data(t);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < n; j++)
      d[i * n + j] = kind == LM_EYE ? i == j : kind == LM_LOWER ? i > j : kind == LM_UPPER ? i <= j : i > j ? 1 : i == j ? 0.5 : 0;
  return T(I, val_mat(t));
}

/* The gaps of the k x 1 column w (eigenvalues, or squared singular values): D[j, k] = w[k] - w[j]
** and the ties, 1 where w[j] and w[k] are equal to rounding (|D| <= 64 k eps max|w|), the
** diagonal included. Ops, so a staged graph recomputes them from its run's values. */
static void la_gaps(Interp *I, Value w, Value *D, Value *tie, Span sp) {
  bool num;
  int64_t k, one;
  rl_shape(w, &num, &k, &one);
  *D = B2(OP_SUB, rl_tp(I, w, sp), B2(OP_MUL, rl_ones(I, k, k), w));
  Value big = T(I, op_reduce(I, OP_MAX, U1(OP_ABS, w), sp));
  *tie = B2(OP_LE, U1(OP_ABS, *D), B2(OP_MUL, big, val_num(64.0 * (double)k * DBL_EPSILON)));
}

/* x with its entries averaged over each group of tied w (the k x k averaging matrix times x): at a
** repeated eigenvalue or singular value the derivatives of the tied ones are split evenly, as
** max() splits its derivative among tied elements, so they do not depend on the basis LAPACK
** chose for their vectors; elsewhere x itself. Sums over a group are exact either way. */
static Value la_tie_mean(Interp *I, Value x, Value w, Span sp) {
  Value D, tie;
  la_gaps(I, w, &D, &tie, sp);
  return rl_mm(I, B2(OP_DIV, tie, T(I, op_reduce(I, OP_ROWSUMS, tie, sp))), x, sp);
}

/* F o X with F[j, k] = 1 / (w[k] - w[j]) off the diagonal and 0 on it: the eigenvector (w = the
** eigenvalues) and singular-vector (w = the squared singular values) rules. At a pair of tied
** w[j], w[k] (a repeated eigenvalue) the vectors j and k are not unique (any rotation of them is
** as good), so a result that depends on them has no derivative. Reverse mode (g, the adjoint of
** the vectors, given): a pair whose columns of g are zero contributes 0; any other is the
** located error, checked here on this run's values (a staged graph that meets one at a later run
** gives NaN there: never a silent 0). Forward mode (g VT_NULL): every output's tangent is
** computed whether used or not, so a tied pair gives NaN tangents to its vectors, not an error. */
static Value la_fdiv(Interp *I, Value X, Value w, Value g, bool svd, Span sp) {
  bool num;
  int64_t k, one;
  rl_shape(w, &num, &k, &one);
  Value E = la_mask(I, k, LM_EYE), off = B2(OP_SUB, val_num(1), E), D, same;
  la_gaps(I, w, &D, &same, sp);
  Value tie = B2(OP_MUL, same, off), bad = tie;
  if (g.t != VT_NULL) {
    Value tp0 = ad_rule_values(I, tie, sp, "the derivative of eigen or svd"), gp = ad_rule_values(I, g, sp, "the derivative of eigen or svd"),
          wp = ad_primal(w);
    int64_t gr = gp.t == VT_MAT ? tensor_rows(gp.u.m) : 1;
    for (int64_t i = 0; i < k; i++)
      for (int64_t j = i + 1; j < k; j++) {
        if (tensor_at(tp0.u.m, i * k + j) == 0) continue;
        bool used = false;
        for (int64_t r = 0; r < gr && !used; r++) used = tensor_get(gp.u.m, r, i) != 0 || tensor_get(gp.u.m, r, j) != 0;
        if (!used) continue;
        double v = tensor_at(wp.u.m, i);
        mls_throw(I, sp, "grad: '%s' is not differentiable here: %s %lld and %lld are equal (%.6g), so their %s are not "
                  "unique and the result depends on which are chosen", svd ? "svd" : "eigen",
                  svd ? "singular values" : "eigenvalues", (long long)i + 1, (long long)j + 1, svd ? sqrt(v) : v,
                  svd ? "singular vectors" : "eigenvectors");
      }
    Value cz = B2(OP_NE, T(I, op_reduce(I, OP_COLSUMS, U1(OP_ABS, g), sp)), val_num(0));   /* 1 x k: used columns */
    bad = B2(OP_MUL, tie, B2(OP_ADD, B2(OP_MUL, rl_ones(I, k, k), rl_tp(I, cz, sp)), cz));
  }
  Value main = B2(OP_DIV, B2(OP_MUL, X, off), B2(OP_ADD, D, B2(OP_ADD, E, tie)));
  return T(I, op_ifelse(I, bad, val_num(NAN), main, sp));
}

/* qr's rules hold for an m x n matrix with m >= n and full rank (R's diagonal nonzero). */
static void qr_check(Interp *I, Value R, int64_t m, int64_t n, bool fwd, Span sp) {
  const char *who = fwd ? "jvp" : "grad";
  if (m < n)
    mls_throw(I, sp, "%s: 'qr' is not differentiable for a wide matrix (%lldx%lld: more columns than rows)", who,
              (long long)m, (long long)n);
  Value p = ad_rule_values(I, R, sp, "the derivative of qr");
  double big = 0;
  for (int64_t i = 0; i < n; i++) big = fmax(big, fabs(tensor_get(p.u.m, i, i)));
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(tensor_get(p.u.m, i, i)) > 64.0 * (double)n * DBL_EPSILON * big))
      mls_throw(I, sp, "%s: 'qr' is not differentiable here: the matrix has rank below its %lld columns (R[%lld,%lld] = %g)",
                who, (long long)n, (long long)i + 1, (long long)i + 1, tensor_get(p.u.m, i, i));
}

/* 1 / s for the singular values s (k x 1), NaN where s is 0 (64 k eps max s): the part of a
** non-square matrix's singular vectors outside the others' span needs S^-1. Reverse mode checks
** first (svd_check); forward mode computes every tangent, so there it is NaN, not an error. */
static Value svd_zero(Interp *I, Value s, Span sp) {     /* 1 where s is 0 to rounding */
  bool num;
  int64_t k, one;
  rl_shape(s, &num, &k, &one);
  Value big = T(I, op_reduce(I, OP_MAX, s, sp));
  return B2(OP_LE, s, B2(OP_MUL, big, val_num(64.0 * (double)k * DBL_EPSILON)));
}
static Value svd_inv(Interp *I, Value s, Span sp) {
  Value zero = svd_zero(I, s, sp);
  return T(I, op_ifelse(I, zero, val_num(NAN), B2(OP_DIV, val_num(1), B2(OP_ADD, s, zero)), sp));
}

/* Reverse mode: the singular vectors of a non-square matrix need every singular value nonzero. */
static void svd_check(Interp *I, Value s, Span sp) {
  Value p = ad_rule_values(I, s, sp, "the derivative of svd");
  int64_t k = tensor_rows(p.u.m);
  double big = 0;
  for (int64_t i = 0; i < k; i++) big = fmax(big, fabs(tensor_at(p.u.m, i)));
  for (int64_t i = 0; i < k; i++)
    if (!(fabs(tensor_at(p.u.m, i)) > 64.0 * (double)k * DBL_EPSILON * big))
      mls_throw(I, sp, "grad: 'svd' is not differentiable here: singular value %lld is 0, so the singular vectors of this "
                "non-square matrix are not unique", (long long)i + 1);
}

/* The adjoint of A (before sum_to) from the adjoint g of op's output y = op(A). */
static Value la_vjp(Interp *I, OpKind op, Value a, Value y, Value g, Span sp) {
  bool num;
  int64_t m, n;
  rl_shape(a, &num, &m, &n);
  int64_t k = m < n ? m : n;
  if (k == 0) return T(I, val_mat(tensor_zeros(I, m, n)));
  switch (op) {
  case OP_EIGVALS: {                        /* V diag(g) V' (g averaged over tied eigenvalues) */
    Value V = la_out(I, OP_EIGVECS, a, sp);
    Value gm = la_tie_mean(I, g, la_out(I, OP_EIGVALS, a, sp), sp);
    return rl_mm(I, B2(OP_MULZ, rl_tp(I, gm, sp), V), rl_tp(I, V, sp), sp);
  }
  case OP_EIGVECS: {                        /* V (F o (M - M')/2) V', M = V' g: symmetric */
    Value M = rl_mm(I, rl_tp(I, y, sp), g, sp);
    Value K = B2(OP_MUL, B2(OP_SUB, M, rl_tp(I, M, sp)), val_num(0.5));
    Value FK = la_fdiv(I, K, la_out(I, OP_EIGVALS, a, sp), g, false, sp);
    return rl_mm(I, rl_mm(I, y, FK, sp), rl_tp(I, y, sp), sp);
  }
  case OP_CHOL: {                           /* sym(L^-T Phi(L' g) L^-1) (Murray 2016) */
    Value P = B2(OP_MUL, rl_mm(I, rl_tp(I, y, sp), g, sp), la_mask(I, n, LM_PHI));
    return symm(I, rsolve(I, lsolve(I, rl_tp(I, y, sp), P, sp), y, sp), sp);
  }
  case OP_QR_Q: case OP_QR_R: {             /* (Qbar + Q copyltu(X)) R^-T, X = triu(Rbar R' - Q' Qbar) */
    Value Q = op == OP_QR_Q ? y : la_out(I, OP_QR_Q, a, sp);
    Value R = op == OP_QR_R ? y : la_out(I, OP_QR_R, a, sp);
    qr_check(I, R, m, n, false, sp);
    Value X = op == OP_QR_R ? rl_mm(I, g, rl_tp(I, R, sp), sp) : U1(OP_NEG, rl_mm(I, rl_tp(I, Q, sp), g, sp));
    X = B2(OP_MUL, X, la_mask(I, n, LM_UPPER));
    Value S = B2(OP_SUB, B2(OP_ADD, X, rl_tp(I, X, sp)), B2(OP_MUL, X, la_mask(I, n, LM_EYE)));
    Value Z = rl_mm(I, Q, S, sp);
    if (op == OP_QR_Q) Z = B2(OP_ADD, g, Z);
    return rsolve(I, Z, rl_tp(I, R, sp), sp);
  }
  case OP_SVD_S: {                          /* U diag(diag(g)) V', averaged over tied values; a zero */
    Value U = la_out(I, OP_SVD_U, a, sp), V = la_out(I, OP_SVD_V, a, sp);   /* one has derivative 0 (|x| at 0) */
    Value s = T(I, op_diag(I, y, sp));
    Value d = la_tie_mean(I, T(I, op_diag(I, g, sp)), B2(OP_MUL, s, s), sp);
    d = B2(OP_MUL, d, B2(OP_SUB, val_num(1), svd_zero(I, s, sp)));
    return rl_mm(I, B2(OP_MULZ, rl_tp(I, d, sp), U), rl_tp(I, V, sp), sp);
  }
  case OP_SVD_U: case OP_SVD_V: {           /* PyTorch's svd_backward, one output at a time */
    bool isu = op == OP_SVD_U;
    Value U = isu ? y : la_out(I, OP_SVD_U, a, sp), V = isu ? la_out(I, OP_SVD_V, a, sp) : y, Y = isu ? U : V;
    Value s = T(I, op_diag(I, la_out(I, OP_SVD_S, a, sp), sp)), st = rl_tp(I, s, sp);
    bool extra = isu ? m > k : n > k;       /* the part of g outside Y's columns */
    if (extra) svd_check(I, s, sp);
    Value G = rl_mm(I, rl_tp(I, Y, sp), g, sp);
    Value J = B2(OP_SUB, G, rl_tp(I, G, sp));
    Value inner = la_fdiv(I, isu ? B2(OP_MUL, J, st) : B2(OP_MUL, s, J), B2(OP_MUL, s, s), g, true, sp);
    Value r = rl_mm(I, rl_mm(I, U, inner, sp), rl_tp(I, V, sp), sp);
    if (extra) {                            /* (I - Y Y') g S^-1, then V' or U on the other side */
      Value P = B2(OP_MUL, B2(OP_SUB, g, rl_mm(I, Y, G, sp)), rl_tp(I, svd_inv(I, s, sp), sp));
      r = B2(OP_ADD, r, isu ? rl_mm(I, P, rl_tp(I, V, sp), sp) : rl_mm(I, U, rl_tp(I, P, sp), sp));
    }
    return r;
  }
  default: break;
  }
  mls_throw(I, sp, "internal error: la_vjp of '%s'", op_info[op].sym);
}

/* The tangent of op's output y = op(A) along the tangent ta of A. */
static Value la_jvp(Interp *I, OpKind op, Value a, Value y, Value ta, Span sp) {
  bool num;
  int64_t m, n, yr, yc;
  rl_shape(a, &num, &m, &n);
  rl_shape(y, &num, &yr, &yc);
  int64_t k = m < n ? m : n;
  if (k == 0) return T(I, val_mat(tensor_zeros(I, yr, yc)));
  switch (op) {
  case OP_EIGVALS: case OP_EIGVECS: {       /* diag(P), V (F o P); P = V' sym(dA) V */
    Value V = op == OP_EIGVECS ? y : la_out(I, OP_EIGVECS, a, sp), lam = la_out(I, OP_EIGVALS, a, sp);
    Value P = rl_mm(I, rl_mm(I, rl_tp(I, V, sp), symm(I, ta, sp), sp), V, sp);
    if (op == OP_EIGVALS) return la_tie_mean(I, T(I, op_diag(I, P, sp)), lam, sp);
    return rl_mm(I, V, la_fdiv(I, P, lam, val_null(), false, sp), sp);
  }
  case OP_CHOL: {                           /* L Phi(L^-1 sym(dA) L^-T) */
    Value W = rsolve(I, lsolve(I, y, symm(I, ta, sp), sp), rl_tp(I, y, sp), sp);
    return rl_mm(I, y, B2(OP_MUL, W, la_mask(I, n, LM_PHI)), sp);
  }
  case OP_QR_Q: case OP_QR_R: {             /* C = Q' dA R^-1 = Omega + U: dR = U R, dQ = dA R^-1 - Q U */
    Value Q = op == OP_QR_Q ? y : la_out(I, OP_QR_Q, a, sp);
    Value R = op == OP_QR_R ? y : la_out(I, OP_QR_R, a, sp);
    qr_check(I, R, m, n, true, sp);
    Value AR = rsolve(I, ta, R, sp);
    Value C = rl_mm(I, rl_tp(I, Q, sp), AR, sp);
    Value Lo = B2(OP_MUL, C, la_mask(I, n, LM_LOWER));
    Value Up = B2(OP_SUB, C, B2(OP_SUB, Lo, rl_tp(I, Lo, sp)));
    return op == OP_QR_R ? rl_mm(I, Up, R, sp) : B2(OP_SUB, AR, rl_mm(I, Q, Up, sp));
  }
  case OP_SVD_U: case OP_SVD_S: case OP_SVD_V: {   /* dP = U' dA V */
    Value U = op == OP_SVD_U ? y : la_out(I, OP_SVD_U, a, sp), V = op == OP_SVD_V ? y : la_out(I, OP_SVD_V, a, sp);
    Value s = T(I, op_diag(I, la_out(I, OP_SVD_S, a, sp), sp)), w = B2(OP_MUL, s, s);
    Value dP = rl_mm(I, rl_mm(I, rl_tp(I, U, sp), ta, sp), V, sp);
    if (op == OP_SVD_S) {
      Value d = la_tie_mean(I, T(I, op_diag(I, dP, sp)), w, sp);
      return T(I, op_diag(I, B2(OP_MUL, d, B2(OP_SUB, val_num(1), svd_zero(I, s, sp))), sp));
    }
    Value st = rl_tp(I, s, sp), dPt = rl_tp(I, dP, sp);
    bool isu = op == OP_SVD_U, extra = isu ? m > k : n > k;
    Value X = isu ? B2(OP_ADD, B2(OP_MUL, dP, st), B2(OP_MUL, s, dPt)) : B2(OP_ADD, B2(OP_MUL, s, dP), B2(OP_MUL, dPt, st));
    Value r = rl_mm(I, isu ? U : V, la_fdiv(I, X, w, val_null(), true, sp), sp);
    if (extra)                              /* (I - U U') dA V S^-1, (I - V V') dA' U S^-1 */
      r = B2(OP_ADD, r, B2(OP_MUL, isu ? B2(OP_SUB, rl_mm(I, ta, V, sp), rl_mm(I, U, dP, sp))
                                       : B2(OP_SUB, rl_mm(I, rl_tp(I, ta, sp), U, sp), rl_mm(I, V, dPt, sp)),
                           rl_tp(I, svd_inv(I, s, sp), sp)));
    return r;
  }
  default: break;
  }
  mls_throw(I, sp, "internal error: la_jvp of '%s'", op_info[op].sym);
}

/* ---- the rules (ops/rules.h) ---- */
void linalg_vjp(Interp *I, const RuleArgs *r, Value g, Value *gin) {
  Span sp = r->sp;
  Value a = r->in[0], b = r->nin > 1 ? r->in[1] : val_null(), y = r->y;
  switch (r->op) {
  case OP_INV:                              /* d inv(A) = -inv(A) dA inv(A) */
    gin[0] = U1(OP_NEG, rl_mm(I, rl_mm(I, rl_tp(I, y, sp), g, sp), rl_tp(I, y, sp), sp));
    return;
  case OP_DET: {                            /* d det(A) = det(A) t(inv(A)) */
    Value inv = la_out(I, OP_INV, a, sp);
    gin[0] = B2(OP_MUL, B2(OP_MUL, g, y), rl_tp(I, inv, sp));
    return;
  }
  case OP_SOLVE: {                          /* x = A \ b: gb = t(A) \ g, gA = -gb t(x) */
    Value gb = lsolve(I, rl_tp(I, a, sp), g, sp);
    if (r->want[1]) gin[1] = rl_sum_to(I, gb, b, sp);
    if (r->want[0]) gin[0] = U1(OP_NEG, rl_mm(I, gb, rl_tp(I, y, sp), sp));
    return;
  }
  case OP_EIGVALS: case OP_EIGVECS: case OP_CHOL: case OP_QR_Q: case OP_QR_R: case OP_SVD_U: case OP_SVD_S: case OP_SVD_V:
    gin[0] = rl_sum_to(I, la_vjp(I, r->op, a, y, g, sp), a, sp);
    return;
  default: break;
  }
  rl_no_rule(I, r->op, false, sp);
}

Value linalg_jvp(Interp *I, const RuleArgs *r, const Value *tin) {
  Span sp = r->sp;
  Value a = r->in[0], y = r->y, ta = tin[0], tb = tin[1];
  switch (r->op) {
  case OP_INV: return U1(OP_NEG, rl_mm(I, rl_mm(I, y, ta, sp), y, sp));            /* -inv(A) dA inv(A) */
  case OP_DET:                              /* det(A) tr(inv(A) dA) */
    return B2(OP_MUL, y, T(I, op_reduce(I, OP_SUM, B2(OP_MUL, rl_tp(I, la_out(I, OP_INV, a, sp), sp), ta), sp)));
  case OP_SOLVE: {                          /* x = A \ b: dx = A \ (db - dA x) */
    Value res = ta.t == VT_NULL ? tb : rl_tadd(I, tb, U1(OP_NEG, rl_mm(I, ta, y, sp)), sp);
    return lsolve(I, a, res, sp);
  }
  case OP_EIGVALS: case OP_EIGVECS: case OP_CHOL: case OP_QR_Q: case OP_QR_R: case OP_SVD_U: case OP_SVD_S: case OP_SVD_V:
    return la_jvp(I, r->op, a, y, ta, sp);
  default: break;
  }
  rl_no_rule(I, r->op, true, sp);
}

/* ---- shape rules (ops/shapes_impl.h): the checks above on shapes alone, same messages ---- */
/* ==== LAPACK builtins (ops/linalg.c: arg_copy, check_shape) ==== */
/* Argument argn of the builtin as bi_mat reads it (numbers are 1x1); square when asked. */
static void la_arg(Chk *k, const char *name, int argn, Shape a, bool square, int64_t *r, int64_t *c, Span sp) {
  char d[64];
  *r = *c = SHAPE_UNKNOWN;
  if (sh_unknown(a) || a.kind == SK_NUMERIC) { k->sure = false; return; }
  if (!sh_matlike(a)) {
    if (!shape_describe(a, d, sizeof d)) { chk_fail_unsaid(k); return; }
    chk_fail(k, sp, "bad argument #%d to '%s' (matrix expected, got %s)", argn, name, d);
    return;
  }
  sh_dims(a, r, c);
  if (square && *r >= 0 && *c >= 0 && *r != *c)
    chk_fail(k, sp, "bad argument #%d to '%s' (square matrix expected, got %lldx%lld)", argn, name, (long long)*r, (long long)*c);
  else if (square && (*r < 0 || *c < 0)) k->sure = false;
  if (*r < 0 || *c < 0 || (double)*r * (double)*c > 2147483647.0) k->sure = false;   /* LAPACK's integer range */
}

ShapeStatus shape_rule_solve(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  const char *name = sh_name_of(op, x);
  int64_t ra, ca, rb, cb;
  la_arg(&k, name, 1, in[0], true, &ra, &ca, sp);
  if (!k.failed) la_arg(&k, name, 2, in[1], false, &rb, &cb, sp);
  if (k.failed) return chk_status(&k);
  if (ra >= 0 && rb >= 0 && ra != rb) {
    if (cb >= 0)
      chk_fail(&k, sp, "bad argument #2 to '%s' (a matrix with %lld rows expected, got %lldx%lld)", name, (long long)ra,
               (long long)rb, (long long)cb);
    else chk_fail_unsaid(&k);
    return chk_status(&k);
  }
  *out = shape_mat(rb >= 0 ? rb : ra, cb);
  return SHAPE_OK;
}

/* inv, det, cholesky, eigen's two outputs, qr's two, svd's three: one matrix argument. */
ShapeStatus shape_rule_linalg1(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err) {
  Chk k;
  chk_init(&k, err);
  const char *name = x && x->name ? x->name
                   : op == OP_CHOL ? "cholesky" : op == OP_EIGVALS || op == OP_EIGVECS ? "eigen"
                   : op == OP_QR_Q || op == OP_QR_R ? "qr" : op == OP_SVD_U || op == OP_SVD_S || op == OP_SVD_V ? "svd"
                   : op_info[op].sym;
  bool square = !(op == OP_QR_Q || op == OP_QR_R || op == OP_SVD_U || op == OP_SVD_S || op == OP_SVD_V);
  int64_t m, n;
  la_arg(&k, name, 1, in[0], square, &m, &n, sp);
  if (k.failed) return chk_status(&k);
  int64_t kk = m >= 0 && n >= 0 ? (m < n ? m : n) : SHAPE_UNKNOWN;
  if (square && m < 0) m = n;
  if (square && n < 0) n = m;
  switch (op) {
  case OP_DET: *out = shape_num_unknown(); break;
  case OP_EIGVALS: *out = shape_mat(m, 1); break;
  case OP_QR_Q: case OP_SVD_U: *out = shape_mat(m, kk); break;
  case OP_QR_R: *out = shape_mat(kk, n); break;
  case OP_SVD_S: *out = shape_mat(kk, kk); break;
  case OP_SVD_V: *out = shape_mat(n, kk); break;
  default: *out = shape_mat(m, n); break;                  /* inv, cholesky, eigen's vectors */
  }
  return SHAPE_OK;
}
