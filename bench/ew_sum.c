/* (e) reference: the same expression as one fused C loop on one thread (no temporaries),
   on the inputs of bench/ew_sum.mls. bench/ew_sum_2t.c is the same loop on two threads. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now_ns(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
int main(void) {
  long n = 10000000;
  double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
  if (!x || !y) return 1;
  for (long i = 0; i < n; i++) {
    x[i] = fmod(i * 7919.0, 10007) / 10007;
    y[i] = fmod(i * 104729.0, 10009) / 10009;
  }
  double best = 1e30, s = 0;
  for (int k = 0; k < 5; k++) {
    double t0 = now_ns();
    s = 0;
    for (long i = 0; i < n; i++) { double d = x[i] - y[i]; s += d * d * 0.5 + exp(-x[i]); }
    double t = now_ns() - t0;
    if (t < best) best = t;
  }
  printf("time_ns %.0f\nresult %.17g\n", best, s);
  free(x); free(y);
  return 0;
}
