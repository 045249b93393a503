/*
** vmath.h — exp, log, tanh and the other libm functions of the elementwise ops over arrays,
** two or four lanes at a time through glibc's vector math
** library (libmvec) on x86-64, a plain loop elsewhere. The results are within 4 ulp of libm's
** (glibc documents the bound; see docs/language.md, "Numbers"), so a matrix's exp can differ from
** a number's in the last bit, as NumPy's SIMD loops differ from its scalar ones.
*/
#ifndef MLS_VMATH_H
#define MLS_VMATH_H
#include <stdint.h>

/* o[i] = f(a[i]) for i in [0, n); o may be a. ops.def names one of them as an elementwise
** op's vec (vm_none: no array form, the backend loops over its formula). */
void vm_exp(double *o, const double *a, int64_t n);
void vm_log(double *o, const double *a, int64_t n);
void vm_sin(double *o, const double *a, int64_t n);
void vm_cos(double *o, const double *a, int64_t n);
void vm_tan(double *o, const double *a, int64_t n);
void vm_tanh(double *o, const double *a, int64_t n);
void vm_sinh(double *o, const double *a, int64_t n);
void vm_cosh(double *o, const double *a, int64_t n);
void vm_asin(double *o, const double *a, int64_t n);
void vm_acos(double *o, const double *a, int64_t n);
void vm_atan(double *o, const double *a, int64_t n);
void vm_log1p(double *o, const double *a, int64_t n);
void vm_expm1(double *o, const double *a, int64_t n);
/* sc_sigmoid's formula with the exponentials in vm_exp */
void vm_sigmoid(double *o, const double *a, int64_t n);
void vm_sqrt(double *o, const double *a, int64_t n);
void vm_none(double *o, const double *a, int64_t n);

#endif
