/* (h) t(X) %*% D, C peer: one cblas_dgemm with CblasTrans on X (row-major 100 x 784) into a
 * new 784 x 10 result each time (malloc/free, as MLS and NumPy allocate theirs).
 * Same inputs and lines as tmatmul.mls. Usage: tmatmul [ROUNDS [REPS]] */
#define _XOPEN_SOURCE 600 /* clock_gettime */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 10, reps = argc > 2 ? atoi(argv[2]) : 200;
    enum { N = 100, P = 784, K = 10 };
    static double X[N * P], D[N * K];
    for (int i = 0; i < N; i++) {
        for (int j = 0; j < P; j++) X[i * P + j] = fmod(i * 31.0 + j * 17.0, 256) / 255;
        for (int k = 0; k < K; k++) D[i * K + k] = fmod(i * 7.0 + k * 3.0, 10) / 10 - 0.3;
    }
    double check = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (int q = 0; q < reps; q++) {
            double *G = malloc(sizeof(double) * P * K);
            if (!G) return 1;
            cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, P, K, N, 1.0, X, P, D, K, 0.0, G, K);
            if (r == rounds - 1 && q == reps - 1) for (int e = 0; e < P * K; e++) check += G[e];
            free(G);
        }
        double t1 = now_ns();
        printf("time_ns %.0f\n", (t1 - t0) / reps);
    }
    printf("check %.15g\n", check);
    return 0;
}
