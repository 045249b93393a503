/*
** vmath.h — exp and log over arrays, two or four lanes at a time through glibc's vector math
** library (libmvec) on x86-64, a plain loop elsewhere. The results are within 4 ulp of libm's
** (glibc documents the bound; see docs/language.md, "Numbers"), so a matrix's exp can differ from
** a number's in the last bit, as NumPy's SIMD loops differ from its scalar ones.
*/
#ifndef MLS_VMATH_H
#define MLS_VMATH_H
#include <stdint.h>

/* o[i] = exp(a[i]) / log(a[i]) for i in [0, n); o may be a. */
void vm_exp(double *o, const double *a, int64_t n);
void vm_log(double *o, const double *a, int64_t n);

#endif
