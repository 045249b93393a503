/*
** vmath.c — elementwise math over arrays (vmath.h). On x86-64 with libmvec (MLS_LIBMVEC, set by the
** Makefile) the AVX2 variants run when the CPU has AVX2 (libgcc's CPU model), else the SSE2 ones,
** which every x86-64 CPU has; the tail shorter than a vector goes through libm.
*/
#include <math.h>
#include "backend/vmath.h"

#if defined(MLS_LIBMVEC) && defined(__x86_64__)
#include <immintrin.h>

/* libmvec's entry points (glibc's vector function ABI names: b = SSE2, d = AVX2). glibc 2.22
** has exp, log, sin and cos; 2.35 (Debian 12) the rest. */
#define VM_DECL(F)                                                              \
  __m128d _ZGVbN2v_##F(__m128d x);                                              \
  __attribute__((target("avx2"))) __m256d _ZGVdN4v_##F(__m256d x);   /* (clang wants the target on the declaration too) */
VM_DECL(exp) VM_DECL(log) VM_DECL(sin) VM_DECL(cos) VM_DECL(tan) VM_DECL(tanh) VM_DECL(sinh) VM_DECL(cosh)
VM_DECL(asin) VM_DECL(acos) VM_DECL(atan) VM_DECL(log1p) VM_DECL(expm1)

/* libgcc's CPU model, filled by its constructor before main: one load and a bit test, which
** every thread may do (no cache of ours: no mutable state here). */
static inline int have_avx2(void) { return __builtin_cpu_supports("avx2"); }

/* vm_F: four lanes (AVX2) while they fill, then two (SSE2), the last element through libm. */
#define VM_FN(F)                                                                \
  __attribute__((target("avx2"))) static int64_t F##4(double *o, const double *a, int64_t n) { \
    int64_t i = 0;                                                              \
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(o + i, _ZGVdN4v_##F(_mm256_loadu_pd(a + i))); \
    return i;                                                                   \
  }                                                                             \
  void vm_##F(double *o, const double *a, int64_t n) {                          \
    int64_t i = have_avx2() ? F##4(o, a, n) : 0;                                \
    for (; i + 2 <= n; i += 2) _mm_storeu_pd(o + i, _ZGVbN2v_##F(_mm_loadu_pd(a + i))); \
    for (; i < n; i++) o[i] = F(a[i]);                                          \
  }
VM_FN(exp) VM_FN(log) VM_FN(sin) VM_FN(cos) VM_FN(tan) VM_FN(tanh) VM_FN(sinh) VM_FN(cosh)
VM_FN(asin) VM_FN(acos) VM_FN(atan) VM_FN(log1p) VM_FN(expm1)

#else

#define VM_FN(F) void vm_##F(double *o, const double *a, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] = F(a[i]); }
VM_FN(exp) VM_FN(log) VM_FN(sin) VM_FN(cos) VM_FN(tan) VM_FN(tanh) VM_FN(sinh) VM_FN(cosh)
VM_FN(asin) VM_FN(acos) VM_FN(atan) VM_FN(log1p) VM_FN(expm1)

#endif

/* sigmoid as scalar.h's sc_sigmoid computes it, 1 / (1 + e) or e / (1 + e) with e = exp(-|x|),
** the exponentials four or two at a time (blocks on the stack: o may be a). */
void vm_sigmoid(double *o, const double *a, int64_t n) {
  double e[256], x[256];
  for (int64_t lo = 0; lo < n; lo += 256) {
    int64_t m = n - lo < 256 ? n - lo : 256;
    for (int64_t i = 0; i < m; i++) { x[i] = a[lo + i]; e[i] = -fabs(x[i]); }
    vm_exp(e, e, m);
    for (int64_t i = 0; i < m; i++) o[lo + i] = x[i] >= 0 ? 1.0 / (1.0 + e[i]) : e[i] / (1.0 + e[i]);
  }
}

/* sqrt: the instruction itself is IEEE's correctly rounded square root, so four or two lanes
** give libm's sqrt bit for bit (NaN for a negative, as sqrt gives). */
#if defined(MLS_LIBMVEC) && defined(__x86_64__)
__attribute__((target("avx2"))) static int64_t sqrt4(double *o, const double *a, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) _mm256_storeu_pd(o + i, _mm256_sqrt_pd(_mm256_loadu_pd(a + i)));
  return i;
}
void vm_sqrt(double *o, const double *a, int64_t n) {
  int64_t i = have_avx2() ? sqrt4(o, a, n) : 0;
  for (; i + 2 <= n; i += 2) _mm_storeu_pd(o + i, _mm_sqrt_pd(_mm_loadu_pd(a + i)));
  for (; i < n; i++) o[i] = sqrt(a[i]);
}
#else
void vm_sqrt(double *o, const double *a, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] = sqrt(a[i]); }
#endif

void vm_none(double *o, const double *a, int64_t n) { (void)o; (void)a; (void)n; }
