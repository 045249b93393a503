/* (e) peer for the staged (jit) row: the fused loop of bench/ew_sum.c on two threads
   (pthreads). Each evaluation starts the threads, each thread makes one pass over its
   half of x and y into a partial sum, and the main thread adds the partial sums.
   Usage: ew_sum_2t [THREADS]  (default 2, the cores of the development machine) */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define MAXT 64
static double now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static const double *x, *y;
struct part { long lo, hi; double s; };
static void *work(void *arg) {
  struct part *p = arg;
  double s = 0;
  for (long i = p->lo; i < p->hi; i++) { double d = x[i] - y[i]; s += d * d * 0.5 + exp(-x[i]); }
  p->s = s;
  return NULL;
}
int main(int argc, char **argv) {
  long n = 10000000;
  int nt = argc > 1 ? atoi(argv[1]) : 2;
  if (nt < 1 || nt > MAXT) nt = 2;
  double *xm = malloc(n * sizeof *xm), *ym = malloc(n * sizeof *ym);
  if (!xm || !ym) return 1;
  for (long i = 0; i < n; i++) {
    xm[i] = fmod(i * 7919.0, 10007) / 10007;
    ym[i] = fmod(i * 104729.0, 10009) / 10009;
  }
  x = xm; y = ym;
  double best = 1e30, s = 0;
  for (int k = 0; k < 5; k++) {
    double t0 = now_ns();
    pthread_t th[MAXT];
    struct part p[MAXT];
    for (int t = 0; t < nt; t++) {
      p[t].lo = n * t / nt; p[t].hi = n * (t + 1) / nt;
      if (t > 0 && pthread_create(&th[t], NULL, work, &p[t]) != 0) return 1;
    }
    work(&p[0]);                       /* the main thread takes the first part */
    s = p[0].s;
    for (int t = 1; t < nt; t++) { pthread_join(th[t], NULL); s += p[t].s; }
    double t = now_ns() - t0;
    if (t < best) best = t;
  }
  printf("threads %d\ntime_ns %.0f\nresult %.17g\n", nt, best, s);
  free(xm); free(ym);
  return 0;
}
