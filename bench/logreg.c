/* (g) softmax regression on Fashion-MNIST, plain C peer on OpenBLAS: the seed program of the
 * lecture notes (1000 steps of batch 100, learning rate 0.5 / 100, hand-derived gradient
 * X'(P - Y)), with batches in order, as bench/logreg.py.  A batch is a pointer into the
 * data (no copy), the product with the gradient is accumulated into W by one dgemm.
 * Usage: logreg [STEPS [DATA_DIR]].  Prints the same lines as logreg.mls.
 * Build: cc -O2 -o logreg logreg.c -lopenblas -lz -lm */
#include <cblas.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static unsigned char *read_gz(const char *dir, const char *name, size_t *len) {
  char path[4096];
  snprintf(path, sizeof path, "%s%s", dir, name);
  gzFile f = gzopen(path, "rb");
  if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(1); }
  size_t cap = 1 << 20, n = 0;
  unsigned char *buf = malloc(cap);
  for (;;) {
    if (n == cap) buf = realloc(buf, cap *= 2);
    int r = gzread(f, buf + n, (unsigned)(cap - n));
    if (r < 0) { fprintf(stderr, "cannot read %s\n", path); exit(1); }
    if (r == 0) break;
    n += (size_t)r;
  }
  gzclose(f);
  *len = n;
  return buf;
}

static double *images(const char *dir, const char *name, int *count) {
  size_t len;
  unsigned char *b = read_gz(dir, name, &len);
  int n = (b[4] << 24) | (b[5] << 16) | (b[6] << 8) | b[7];
  double *x = malloc((size_t)n * 784 * sizeof *x);
  for (size_t i = 0; i < (size_t)n * 784; i++) x[i] = b[16 + i] / 255.0;
  free(b);
  *count = n;
  return x;
}

static unsigned char *labels(const char *dir, const char *name) {
  size_t len;
  unsigned char *b = read_gz(dir, name, &len);
  memmove(b, b + 8, len - 8);
  return b;
}

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
  int steps = argc > 1 ? atoi(argv[1]) : 1000;
  const char *dir = argc > 2 ? argv[2] : "/usr/share/datasets/fashion-mnist/";
  int n, nt;
  double *X = images(dir, "train-images-idx3-ubyte.gz", &n);
  unsigned char *y = labels(dir, "train-labels-idx1-ubyte.gz");
  double *T = images(dir, "t10k-images-idx3-ubyte.gz", &nt);
  unsigned char *u = labels(dir, "t10k-labels-idx1-ubyte.gz");
  double *Y = calloc((size_t)n * 10, sizeof *Y);
  for (int i = 0; i < n; i++) Y[i * 10 + y[i]] = 1;

  const double lr = 0.5 / 100;
  double *W = calloc(784 * 10, sizeof *W), *W10 = calloc(784 * 10, sizeof *W10);
  double P[100 * 10];
  long long t0 = now_ns();
  for (int i = 0; i < steps; i++) {
    int s = (int)(((long long)i * 100) % n);
    const double *xb = X + (size_t)s * 784, *yb = Y + (size_t)s * 10;
    /* forward: P = softmax(xb W) */
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, 100, 10, 784, 1.0, xb, 784, W, 10, 0.0, P, 10);
    for (int r = 0; r < 100; r++) {
      double *p = P + r * 10, m = p[0], sum = 0;
      for (int c = 1; c < 10; c++) if (p[c] > m) m = p[c];
      for (int c = 0; c < 10; c++) sum += (p[c] = exp(p[c] - m));
      for (int c = 0; c < 10; c++) p[c] = p[c] / sum - yb[r * 10 + c];   /* P - Y */
    }
    /* backward and update: W = W - lr * t(xb) (P - Y) */
    cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, 784, 10, 100, -lr, xb, 784, P, 10, 1.0, W, 10);
    if (i == 9) memcpy(W10, W, sizeof(double) * 7840);
  }
  long long t1 = now_ns();
  printf("time_ns %lld\n", t1 - t0);
  double ss = 0, ws = 0;
  for (int k = 0; k < 7840; k++) { ss += W10[k] * W10[k]; ws += fabs(W10[k]) * (k + 1) / 7840.0; }
  printf("w10_ss %.15g\nw10_ws %.15g\n", ss, ws);
  double *S = malloc((size_t)nt * 10 * sizeof *S);
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nt, 10, 784, 1.0, T, 784, W, 10, 0.0, S, 10);
  int right = 0;
  for (int i = 0; i < nt; i++) {
    int best = 0;
    for (int c = 1; c < 10; c++) if (S[i * 10 + c] > S[i * 10 + best]) best = c;
    right += best == u[i];
  }
  printf("accuracy %.15g\n", (double)right / nt);
  free(X); free(y); free(T); free(u); free(Y); free(W); free(W10); free(S);
  return 0;
}
