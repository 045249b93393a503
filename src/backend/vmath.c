/*
** vmath.c — array exp and log (vmath.h). On x86-64 with libmvec (MLS_LIBMVEC, set by the
** Makefile) the AVX2 variants run when the CPU has AVX2 (libgcc's CPU model), else the SSE2 ones,
** which every x86-64 CPU has; the tail shorter than a vector goes through libm.
*/
#include <math.h>
#include "backend/vmath.h"

#if defined(MLS_LIBMVEC) && defined(__x86_64__)
#include <immintrin.h>

/* libmvec's entry points (glibc's vector function ABI names: b = SSE2, d = AVX2). */
__m128d _ZGVbN2v_exp(__m128d x);
__m128d _ZGVbN2v_log(__m128d x);
__attribute__((target("avx2"))) __m256d _ZGVdN4v_exp(__m256d x);   /* (clang wants the target */
__attribute__((target("avx2"))) __m256d _ZGVdN4v_log(__m256d x);   /* on the declaration too) */

/* libgcc's CPU model, filled by its constructor before main: one load and a bit test, which
** every thread may do (no cache of ours: no mutable state here). */
static inline int have_avx2(void) { return __builtin_cpu_supports("avx2"); }

#define VM_AVX2(NAME, FN)                                                       \
  __attribute__((target("avx2"))) static int64_t NAME(double *o, const double *a, int64_t n) { \
    int64_t i = 0;                                                              \
    for (; i + 4 <= n; i += 4) _mm256_storeu_pd(o + i, FN(_mm256_loadu_pd(a + i))); \
    return i;                                                                   \
  }
VM_AVX2(exp4, _ZGVdN4v_exp)
VM_AVX2(log4, _ZGVdN4v_log)

#define VM_BODY(FN2, FN4, SCALAR)                                               \
  int64_t i = have_avx2() ? FN4(o, a, n) : 0;                                   \
  for (; i + 2 <= n; i += 2) _mm_storeu_pd(o + i, FN2(_mm_loadu_pd(a + i)));    \
  for (; i < n; i++) o[i] = SCALAR(a[i]);

void vm_exp(double *o, const double *a, int64_t n) { VM_BODY(_ZGVbN2v_exp, exp4, exp) }
void vm_log(double *o, const double *a, int64_t n) { VM_BODY(_ZGVbN2v_log, log4, log) }

#else

void vm_exp(double *o, const double *a, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] = exp(a[i]); }
void vm_log(double *o, const double *a, int64_t n) { for (int64_t i = 0; i < n; i++) o[i] = log(a[i]); }

#endif
