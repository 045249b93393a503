/*
** cpu_par.c — the CPU backend's parallel-for: a small pool of worker threads that sleep on a
** condition variable between jobs (they never spin, so they do not take cycles from
** OpenBLAS's own threads, which OpenMP's spinning workers did). The range [0, n) is cut into
** one contiguous part per thread; the caller runs part 0 and waits for the others.
*/
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>
#include "backend/cpu.h"
#include "mem.h"

#define MAX_THREADS 64

typedef struct Worker { CpuPool *pool; int k; } Worker;

/* A CPU instance's pool (cpu.c's CpuCtx holds it): its threads are started by the first
** parallel job and joined by cpu_par_shutdown (a trim, the instance's end); the interrupt
** flag they poll is the interpreter's (set_stop). */
struct CpuPool {
  pthread_mutex_t mu;
  pthread_cond_t go, done;
  int nthreads;              /* including the caller */
  int started;               /* workers created */
  uint64_t job;              /* increments for each job */
  int pending;               /* parts not finished */
  bool quit;                 /* cpu_par_shutdown: workers leave */
  ParFn fn;
  void *ctx;
  int64_t n;
  pthread_t th[MAX_THREADS];
  Worker w[MAX_THREADS];
  const volatile sig_atomic_t *stop;   /* the interrupt flag (cpu_par_set_stop), or NULL */
};

CpuPool *cpu_pool_new(void) {
  CpuPool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  if (pthread_mutex_init(&p->mu, NULL) != 0) { free(p); return NULL; }
  if (pthread_cond_init(&p->go, NULL) != 0) { pthread_mutex_destroy(&p->mu); free(p); return NULL; }
  if (pthread_cond_init(&p->done, NULL) != 0) {
    pthread_cond_destroy(&p->go);
    pthread_mutex_destroy(&p->mu);
    free(p);
    return NULL;
  }
  return p;
}

void cpu_pool_free(CpuPool *p) {
  if (!p) return;
  cpu_pool_shutdown(p);
  pthread_cond_destroy(&p->done);
  pthread_cond_destroy(&p->go);
  pthread_mutex_destroy(&p->mu);
  free(p);
}

void cpu_par_set_stop(const Backend *be, const volatile sig_atomic_t *flag) { cpu_pool(be)->stop = flag; }
const volatile sig_atomic_t *cpu_par_stop_flag(const Backend *be) { return cpu_pool(be)->stop; }

/* fn over [lo, hi) in 16 pieces, skipping the rest once the interrupt flag is set. */
static void run_part(const volatile sig_atomic_t *stop, ParFn fn, void *ctx, int64_t lo, int64_t hi) {
  if (!stop || hi - lo < 32) { fn(ctx, lo, hi); return; }
  int64_t step = (hi - lo + 15) / 16;
  for (int64_t a = lo; a < hi && !*stop; a += step) fn(ctx, a, a + step < hi ? a + step : hi);
}

static void part(int k, int parts, int64_t n, int64_t *lo, int64_t *hi) {
  *lo = n * k / parts;
  *hi = n * (k + 1) / parts;
}

static void *worker(void *arg) {
  Worker *w = arg;
  CpuPool *pool = w->pool;
  int k = w->k;
  uint64_t seen = 0;
  mem_forbid_thread();                             /* no failure handler here: kernels must not allocate */
  pthread_mutex_lock(&pool->mu);
  for (;;) {
    while (pool->job == seen && !pool->quit) pthread_cond_wait(&pool->go, &pool->mu);
    if (pool->quit) break;
    seen = pool->job;
    if (k >= pool->nthreads) continue;                /* fewer threads asked for this job */
    ParFn fn = pool->fn;
    void *ctx = pool->ctx;
    const volatile sig_atomic_t *stop = pool->stop;
    int64_t lo, hi;
    part(k, pool->nthreads, pool->n, &lo, &hi);
    pthread_mutex_unlock(&pool->mu);
    if (lo < hi) run_part(stop, fn, ctx, lo, hi);
    pthread_mutex_lock(&pool->mu);
    if (--pool->pending == 0) pthread_cond_signal(&pool->done);
  }
  pthread_mutex_unlock(&pool->mu);
  return NULL;
}

void cpu_pool_shutdown(CpuPool *pool) {
  pthread_mutex_lock(&pool->mu);
  int n = pool->started;
  pool->quit = true;
  pthread_cond_broadcast(&pool->go);
  pthread_mutex_unlock(&pool->mu);
  for (int i = 0; i < n; i++) pthread_join(pool->th[i], NULL);
  pthread_mutex_lock(&pool->mu);
  pool->started = 0;                     /* the next parallel job starts them again */
  pool->quit = false;
  pthread_mutex_unlock(&pool->mu);
}

void cpu_par_shutdown(const Backend *be) { cpu_pool_shutdown(cpu_pool(be)); }

void cpu_par_set_threads(const Backend *be, int n) {
  CpuPool *pool = cpu_pool(be);
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  pthread_mutex_lock(&pool->mu);
  pool->nthreads = n;
  pthread_mutex_unlock(&pool->mu);
}

int cpu_par_threads(const Backend *be) {
  CpuPool *pool = cpu_pool(be);
  if (pool->nthreads == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_par_set_threads(be, cpus > 0 ? (int)cpus : 1);
  }
  return pool->nthreads;
}

void cpu_parallel_for(const Backend *be, int64_t n, ParFn fn, void *ctx) {
  CpuPool *pool = cpu_pool(be);
  int nt = cpu_par_threads(be);
  if (nt > n) nt = (int)n;
  if (nt <= 1) { run_part(pool->stop, fn, ctx, 0, n); return; }
  pthread_mutex_lock(&pool->mu);
  while (pool->started < nt - 1) {                   /* workers 1 .. nt-1, made on first use */
    Worker *w = &pool->w[pool->started];
    *w = (Worker){ pool, pool->started + 1 };
    if (pthread_create(&pool->th[pool->started], NULL, worker, w) != 0) break;
    pool->started++;
  }
  if (pool->started < nt - 1) nt = pool->started + 1;
  int saved = pool->nthreads;
  pool->nthreads = nt;
  pool->fn = fn;
  pool->ctx = ctx;
  pool->n = n;
  pool->pending = nt - 1;
  pool->job++;
  pthread_cond_broadcast(&pool->go);
  pthread_mutex_unlock(&pool->mu);
  int64_t lo, hi;
  part(0, nt, n, &lo, &hi);
  run_part(pool->stop, fn, ctx, lo, hi);
  pthread_mutex_lock(&pool->mu);
  while (pool->pending > 0) pthread_cond_wait(&pool->done, &pool->mu);
  pool->nthreads = saved;
  pthread_mutex_unlock(&pool->mu);
}
