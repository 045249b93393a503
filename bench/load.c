/* (l) data loading, plain C peer of load.mls: read the Fashion-MNIST training images (idx,
 * gzip) into doubles, scale them to [0, 1] and shuffle the rows by the same permutation into
 * a new matrix (a row copied by memcpy); the same output lines.
 * Usage: load [DATA_DIR].  Build: cc -O2 -o load load.c -lz */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

static long long now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist/";
  char path[4096];
  snprintf(path, sizeof path, "%strain-images-idx3-ubyte.gz", dir);
  long long t0 = now_ns();
  gzFile f = gzopen(path, "rb");
  if (!f) { fprintf(stderr, "cannot open %s\n", path); return 1; }
  unsigned char h[16];
  if (gzread(f, h, 16) != 16) { fprintf(stderr, "cannot read %s\n", path); return 1; }
  size_t n = ((size_t)h[4] << 24) | ((size_t)h[5] << 16) | ((size_t)h[6] << 8) | h[7], m = n * 784;
  unsigned char *b = malloc(m);
  if (gzread(f, b, (unsigned)m) != (int)m) { fprintf(stderr, "cannot read %s\n", path); return 1; }
  gzclose(f);
  double *X = malloc(m * sizeof *X);
  for (size_t i = 0; i < m; i++) X[i] = b[i];
  free(b);
  long long t1 = now_ns();
  for (size_t i = 0; i < m; i++) X[i] /= 255;
  long long t2 = now_ns();
  size_t *perm = malloc(n * sizeof *perm);
  for (size_t i = 0; i < n; i++) perm[i] = (i * 7919) % n;
  long long t3 = now_ns();
  double *Y = malloc(m * sizeof *Y);
  for (size_t i = 0; i < n; i++) memcpy(Y + i * 784, X + perm[i] * 784, 784 * sizeof *Y);
  free(X);
  long long t4 = now_ns();
  double check = 0;
  for (size_t j = 0; j < 784; j++) check += Y[j] * (double)(j + 1);
  for (size_t i = 0; i < n; i++) check += Y[i * 784];
  printf("read_ns %lld\nscale_ns %lld\nshuffle_ns %lld\ntime_ns %lld\ncheck %.15g\n", t1 - t0, t2 - t1, t4 - t3, t4 - t0, check);
  free(Y);
  free(perm);
  return 0;
}
