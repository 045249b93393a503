/* (a) scalar loop, C reference (gcc -O2): the floor for this loop, no goal attached.
 * Prints "result <s>" and "time_ns <ns>" for the loop alone. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    /* the bound comes from argv so the compiler cannot fold the loop away */
    double n = argc > 1 ? 0 : 1e7;
    double t0 = now_ns();
    double i = 0, s = 0;
    while (i < n) { s = s + i * 0.5; i = i + 1; }
    double t1 = now_ns();
    printf("result %.17g\n", s);
    printf("time_ns %.0f\n", t1 - t0);
    return 0;
}
