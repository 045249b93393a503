/* (b) dense matrix multiply, C peer: cblas_dgemm (row-major) from OpenBLAS,
 * reusing one output buffer.  Usage: matmul N REPS
 * Each product is timed on its own and printed as "time_ns <ns>". */
#define _XOPEN_SOURCE 600 /* posix_memalign, clock_gettime, drand48 */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double *alloc_matrix(size_t n) {
    void *p = NULL;
    if (posix_memalign(&p, 64, n * n * sizeof(double)) != 0) {
        fprintf(stderr, "matmul: out of memory for n=%zu\n", n);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s N REPS\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), reps = atoi(argv[2]);
    if (n <= 0 || reps <= 0) {
        fprintf(stderr, "matmul: N and REPS must be positive\n");
        return 2;
    }
    size_t nn = (size_t)n * (size_t)n;
    double *A = alloc_matrix(n), *B = alloc_matrix(n), *C = alloc_matrix(n);
    srand48(42);
    for (size_t i = 0; i < nn; i++) A[i] = drand48();
    for (size_t i = 0; i < nn; i++) B[i] = drand48();
    for (size_t i = 0; i < nn; i++) C[i] = 0.0;
    for (int r = 0; r < reps; r++) {
        double t0 = now_ns();
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n,
                    1.0, A, n, B, n, 0.0, C, n);
        double t1 = now_ns();
        printf("time_ns %.0f\n", t1 - t0);
    }
    double check = 0;
    for (size_t i = 0; i < nn; i++) check += C[i];
    printf("check %.15g\n", check);
    free(A); free(B); free(C);
    return 0;
}
