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
#include "ops.h"
#endif

SC_FN double sc_mod(double x, double y) {     /* R's %%: the sign of the divisor */
  if (y == 0) return NAN;
  double r = fmod(x, y);
  if (r != 0 && ((r < 0) != (y < 0))) r += y;
  return r;
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
/* The standard normal quantile: the x with sc_pnorm(x) = p (bisection to the last bit). */
#ifndef __CUDACC__
double sc_qnorm(double p);
#endif
SC_FN double sc_pow(double x, double y) { return y == 2.0 ? x * x : pow(x, y); }

SC_FN double sc_binary(int op, double x, double y) {
  switch (op) {
  case OP_ADD: return x + y;
  case OP_SUB: return x - y;
  case OP_MUL: return x * y;
  case OP_DIV: return x / y;
  case OP_POW: return sc_pow(x, y);
  case OP_MOD: return sc_mod(x, y);
  case OP_INTDIV: return floor(x / y);
  case OP_MIN2: return sc_min(x, y);
  case OP_MAX2: return sc_max(x, y);
  case OP_EQ: return x == y;
  case OP_NE: return x != y;
  case OP_LT: return x < y;
  case OP_LE: return x <= y;
  case OP_GT: return x > y;
  case OP_GE: return x >= y;
  case OP_AND: return x != 0 && y != 0;
  case OP_OR: return x != 0 || y != 0;
  case OP_MULZ: return x == 0 ? 0.0 : x * y;
  default: return NAN;
  }
}

SC_FN double sc_unary(int op, double x) {
  switch (op) {
  case OP_NEG: return -x;
  case OP_NOT: return x == 0;
  case OP_ABS: return fabs(x);
  case OP_EXP: return exp(x);
  case OP_LOG: return log(x);
  case OP_SQRT: return sqrt(x);
  case OP_SIN: return sin(x);
  case OP_COS: return cos(x);
  case OP_TAN: return tan(x);
  case OP_TANH: return tanh(x);
  case OP_SIGMOID: return sc_sigmoid(x);
  case OP_SOFTPLUS: return sc_softplus(x);
  case OP_ROUND: return nearbyint(x);      /* IEC 60559 half-to-even, as R */
  case OP_FLOOR: return floor(x);
  case OP_CEIL: return ceil(x);
  case OP_SIGN: return sc_sign(x);
  case OP_SINH: return sinh(x);
  case OP_COSH: return cosh(x);
  case OP_ASIN: return asin(x);
  case OP_ACOS: return acos(x);
  case OP_ATAN: return atan(x);
  case OP_PNORM: return sc_pnorm(x);
#ifndef __CUDACC__
  case OP_QNORM: return sc_qnorm(x);
#endif
  default: return NAN;
  }
}

#endif
