/*
** cpu_par.c — the CPU backend's parallel-for: a small pool of worker threads that sleep on a
** condition variable between jobs (they never spin, so they do not take cycles from
** OpenBLAS's own threads, which OpenMP's spinning workers did). The range [0, n) is cut into
** one contiguous part per thread; the caller runs part 0 and waits for the others.
*/
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <unistd.h>
#include "backend/cpu.h"
#include "mem.h"

#define MAX_THREADS 64

typedef struct Pool {
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
  const volatile sig_atomic_t *stop;   /* the interrupt flag (cpu_par_set_stop), or NULL */
} Pool;

/* The process's pool: threads, like malloc's arenas, are a process-wide resource behind the
** backend (one CPU backend per process, whose entries take no context), and so is the interrupt
** flag they poll, set by a signal (tools/globals_allow.txt). */
static Pool pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0, false, NULL,
                     NULL, 0, { 0 }, NULL };

void cpu_par_set_stop(const volatile sig_atomic_t *flag) { pool.stop = flag; }
const volatile sig_atomic_t *cpu_par_stop_flag(void) { return pool.stop; }

/* fn over [lo, hi) in 16 pieces, skipping the rest once the interrupt flag is set. */
static void run_part(ParFn fn, void *ctx, int64_t lo, int64_t hi) {
  const volatile sig_atomic_t *stop = pool.stop;
  if (!stop || hi - lo < 32) { fn(ctx, lo, hi); return; }
  int64_t step = (hi - lo + 15) / 16;
  for (int64_t a = lo; a < hi && !*stop; a += step) fn(ctx, a, a + step < hi ? a + step : hi);
}

static void part(int k, int parts, int64_t n, int64_t *lo, int64_t *hi) {
  *lo = n * k / parts;
  *hi = n * (k + 1) / parts;
}

static void *worker(void *arg) {
  int k = (int)(intptr_t)arg;
  uint64_t seen = 0;
  mem_forbid_thread();                             /* no failure handler here: kernels must not allocate */
  pthread_mutex_lock(&pool.mu);
  for (;;) {
    while (pool.job == seen && !pool.quit) pthread_cond_wait(&pool.go, &pool.mu);
    if (pool.quit) break;
    seen = pool.job;
    if (k >= pool.nthreads) continue;                /* fewer threads asked for this job */
    ParFn fn = pool.fn;
    void *ctx = pool.ctx;
    int64_t lo, hi;
    part(k, pool.nthreads, pool.n, &lo, &hi);
    pthread_mutex_unlock(&pool.mu);
    if (lo < hi) run_part(fn, ctx, lo, hi);
    pthread_mutex_lock(&pool.mu);
    if (--pool.pending == 0) pthread_cond_signal(&pool.done);
  }
  pthread_mutex_unlock(&pool.mu);
  return NULL;
}

void cpu_par_shutdown(void) {
  pthread_mutex_lock(&pool.mu);
  int n = pool.started;
  pool.quit = true;
  pthread_cond_broadcast(&pool.go);
  pthread_mutex_unlock(&pool.mu);
  for (int i = 0; i < n; i++) pthread_join(pool.th[i], NULL);
  pthread_mutex_lock(&pool.mu);
  pool.started = 0;                     /* the next parallel job starts them again */
  pool.quit = false;
  pthread_mutex_unlock(&pool.mu);
}

void cpu_par_set_threads(int n) {
  if (n < 1) n = 1;
  if (n > MAX_THREADS) n = MAX_THREADS;
  pthread_mutex_lock(&pool.mu);
  pool.nthreads = n;
  pthread_mutex_unlock(&pool.mu);
}

void cpu_parallel_for(int64_t n, ParFn fn, void *ctx) {
  if (pool.nthreads == 0) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_par_set_threads(cpus > 0 ? (int)cpus : 1);
  }
  int nt = pool.nthreads;
  if (nt > n) nt = (int)n;
  if (nt <= 1) { run_part(fn, ctx, 0, n); return; }
  pthread_mutex_lock(&pool.mu);
  while (pool.started < nt - 1) {                   /* workers 1 .. nt-1, made on first use */
    if (pthread_create(&pool.th[pool.started], NULL, worker, (void *)(intptr_t)(pool.started + 1)) != 0) break;
    pool.started++;
  }
  if (pool.started < nt - 1) nt = pool.started + 1;
  int saved = pool.nthreads;
  pool.nthreads = nt;
  pool.fn = fn;
  pool.ctx = ctx;
  pool.n = n;
  pool.pending = nt - 1;
  pool.job++;
  pthread_cond_broadcast(&pool.go);
  pthread_mutex_unlock(&pool.mu);
  int64_t lo, hi;
  part(0, nt, n, &lo, &hi);
  run_part(fn, ctx, lo, hi);
  pthread_mutex_lock(&pool.mu);
  while (pool.pending > 0) pthread_cond_wait(&pool.done, &pool.mu);
  pool.nthreads = saved;
  pthread_mutex_unlock(&pool.mu);
}
