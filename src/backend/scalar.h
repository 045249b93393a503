/*
** scalar.h — the one definition of each elementwise formula, inlined both into the CPU
** kernels' loops and into the evaluator's number fast path, so the two cannot disagree.
*/
#ifndef MLS_SCALAR_H
#define MLS_SCALAR_H

#include <math.h>
/* CUDA's kernels (backend/cuda/) compile the same formulas for the device: they define the
** OP_ codes themselves (from ops.def) and get every function as __host__ __device__. */
#ifdef __CUDACC__
#define SC_FN static __host__ __device__ inline
#else
#define SC_FN static inline
#include "ops/table.h"
#endif

SC_FN double sc_mod(double x, double y) {     /* R's %%: the sign of the divisor */
  if (y == 0) return NAN;
  double r = fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
}
/* R's %/%: the integer k with x == k * y + x %% y, the quotient that sc_mod's exact remainder
** implies (25 %/% 0.2 is 124 and 25 %% 0.2 is 0.2 - 1.4e-15, as in R; floor(25 / 0.2) is 125,
** the rounded quotient's floor). So x %% y's derivative in y, -(x %/% y), is its slope. |x / y|
** < 1: 0, or -1 where x and y differ in sign (-5 %/% Inf is -1, as R); from 2^51 on, where
** the remainder no longer tells k apart, and for y = 0 or an infinite quotient, floor(x / y). */
SC_FN double sc_intdiv(double x, double y) {
  double q = x / y;
  if (y == 0 || !(fabs(q) < 2251799813685248.0)) return floor(q);
  if (fabs(q) < 1) return (x < 0) != (y < 0) && x != 0 ? -1.0 : 0.0;
  return nearbyint((x - sc_mod(x, y)) / y);
}
/* SystemDS's %/% (IntegerDivide): x / y, NaN and +-Inf as they are, else truncated toward 0
** after 2^-53 is added to its magnitude (UtilFunctions.toLong; Java's long cast saturates at
** +-2^63). Its %% (Modulus): NaN for y = 0, else x - (x %/% y) * y, so the result has the sign
** of the dividend and 5 %% Inf is NaN (0 * Inf). docs/dml.md, "Where DML and R differ". */
SC_FN double sc_intdiv_dml(double x, double y) {
  double r = x / y;
  if (r != r || isinf(r)) return r;
  double t = floor(fabs(r) + 1.1102230246251565e-16);
  if (t >= 9223372036854775808.0) t = 9223372036854775808.0;
  return (r < 0 ? -t : t) + 0.0;              /* (+ 0.0: a long has no -0) */
}
SC_FN double sc_mod_dml(double x, double y) {
  if (y == 0) return NAN;
  return x - sc_intdiv_dml(x, y) * y;
}
SC_FN double sc_max(double x, double y) { return isnan(x) || isnan(y) ? NAN : x > y ? x : y; }
SC_FN double sc_min(double x, double y) { return isnan(x) || isnan(y) ? NAN : x < y ? x : y; }
SC_FN double sc_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
SC_FN double sc_sigmoid(double x) {
  if (x >= 0) return 1.0 / (1.0 + exp(-x));
  double e = exp(x);
  return e / (1.0 + e);
}
SC_FN double sc_softplus(double x) {         /* log(1 + exp(x)) without overflow */
  return x > 0 ? x + log1p(exp(-x)) : log1p(exp(x));
}
SC_FN double sc_pnorm(double x) { return 0.5 * erfc(-x / M_SQRT2); }
/* The standard normal quantile: the x with sc_pnorm(x) = p (Newton on erf in the middle,
** a bisection to the last bit in the tails). */
#ifndef __CUDACC__
double sc_qnorm(double p);
#endif
/* SystemDS's UtilFunctions.toInt then Java's (int): toward 0 (2^-53 added to |x| first), NaN
** is 0, beyond the int range the nearest end. The bitw* ops compute on these. */
SC_FN int sc_toint(double x) {
  if (x != x) return 0;
  double t = floor(fabs(x) + 1.1102230246251565e-16);
  if (x < 0) t = -t;
  return t >= 2147483647.0 ? 2147483647 : t <= -2147483648.0 ? (-2147483647 - 1) : (int)t;
}
/* Java's int x << (y mod 32) (no C overflow: in unsigned); the int minimum is NaN, as SystemDS's
** BitwShiftL (R gives NA where the result overflows). */
SC_FN double sc_shiftl(double x, double y) {
  int r = (int)((unsigned int)sc_toint(x) << (sc_toint(y) & 31));
  return r == (-2147483647 - 1) ? NAN : (double)r;
}
/* Java's Math.round: the nearest whole number, halves toward +Inf (floor(x + 0.5) without the
** rounding of x + 0.5: 0.49999999999999994 gives 0); NaN and +-Inf are kept (Java gives 0 and
** the long range's ends). */
SC_FN double sc_round_up(double x) {
  double f = floor(x);
  return x - f >= 0.5 ? f + 1 : f;
}
SC_FN double sc_pow(double x, double y) { return y == 2.0 ? x * x : pow(x, y); }

/* The formulas of ops.def's elementwise rows: sc_binary(op, x, y) and sc_unary(op, x). Under
** CUDA the HOST rows (no GPU kernel) are left out. */
#define MLS_WHERE_ANY(c) c
#ifdef __CUDACC__
#define MLS_WHERE_HOST(c)
#else
#define MLS_WHERE_HOST(c) c
#endif
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND)
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) case OP_##NAME: return (F);
SC_FN double sc_binary(int op, double x, double y) {
  switch (op) {
#include "ops/ops.def"
  default: return NAN;
  }
}
#undef EW1
#undef EW2
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) MLS_WHERE_##WHERE(case OP_##NAME: return (F);)
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y)
SC_FN double sc_unary(int op, double x) {
  switch (op) {
#include "ops/ops.def"
  default: return NAN;
  }
}
#undef OP
#undef EW1
#undef EW2

#endif
