/*
** builtins_dist.c — DML's probability distribution functions: pnorm qnorm pexp qexp pchisq
** qchisq pt qt pf qf, and cdf/icdf naming the distribution. Elementwise over a number or a
** matrix of targets. The normal and exponential ones compose ops (PNORM, QNORM, exp, log), so
** grad and the stager see them (in the target; not in mean, sd or rate); the chi-squared, t
** and F ones are plain C: grad through them is a located error, staged code runs them eagerly.
** The special functions are the textbook ones: the regularized incomplete gamma function by
** its series and continued fraction, the regularized incomplete beta function by its continued
** fraction (modified Lentz), quantiles by bisection on the distribution function.
** Arguments are borrowed (Args); every result is owned by the caller.
*/
#include <float.h>
#include <math.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"

typedef enum { D_NORMAL, D_EXP, D_CHISQ, D_T, D_F } Dist;

/* ---- special functions ---- */
/* Regularized lower incomplete gamma P(a, x), or the upper Q(a, x) = 1 - P when upper. */
static double gamma_pq(double a, double x, bool upper) {
  if (x != x || a != a) return NAN;
  if (x <= 0) return upper ? 1 : 0;
  if (isinf(x)) return upper ? 0 : 1;
  double lead = exp(a * log(x) - x - lgamma(a));
  if (x < a + 1) {                                   /* series: P = lead/a * sum x^n / ((a+1)...(a+n)) */
    double term = 1 / a, sum = term;
    for (int n = 1; n < 100000; n++) {
      term *= x / (a + n);
      sum += term;
      if (fabs(term) < fabs(sum) * DBL_EPSILON) break;
    }
    double p = lead * sum;
    return upper ? 1 - p : p;
  }
  double b = x + 1 - a, c = 1 / DBL_MIN, d = 1 / b, h = d;   /* continued fraction for Q */
  for (int n = 1; n < 100000; n++) {
    double an = -n * (n - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < DBL_MIN) d = DBL_MIN;
    c = b + an / c;
    if (fabs(c) < DBL_MIN) c = DBL_MIN;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < DBL_EPSILON) break;
  }
  double q = lead * h;
  return upper ? q : 1 - q;
}

/* The continued fraction of the incomplete beta function (modified Lentz). */
static double beta_cf(double a, double b, double x) {
  double qab = a + b, qap = a + 1, qam = a - 1, c = 1, d = 1 - qab * x / qap;
  if (fabs(d) < DBL_MIN) d = DBL_MIN;
  d = 1 / d;
  double h = d;
  for (int m = 1; m < 100000; m++) {
    int m2 = 2 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 + aa * d;
    if (fabs(d) < DBL_MIN) d = DBL_MIN;
    c = 1 + aa / c;
    if (fabs(c) < DBL_MIN) c = DBL_MIN;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 + aa * d;
    if (fabs(d) < DBL_MIN) d = DBL_MIN;
    c = 1 + aa / c;
    if (fabs(c) < DBL_MIN) c = DBL_MIN;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < DBL_EPSILON) break;
  }
  return h;
}

/* Regularized incomplete beta I_x(a, b), or 1 - I_x(a, b) when upper. */
static double beta_i(double x, double a, double b, bool upper) {
  if (x != x || a != a || b != b) return NAN;
  if (x <= 0) return upper ? 1 : 0;
  if (x >= 1) return upper ? 0 : 1;
  double lead = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
  if (x < (a + 1) / (a + b + 2)) {
    double v = lead * beta_cf(a, b, x) / a;
    return upper ? 1 - v : v;
  }
  double v = lead * beta_cf(b, a, 1 - x) / b;          /* 1 - I_x(a, b) = I_(1-x)(b, a) */
  return upper ? v : 1 - v;
}

/* ---- distribution functions (standard parameters in p1, p2) ---- */
static double cdf1(Dist d, double x, double p1, double p2, bool upper) {
  switch (d) {
  case D_NORMAL: {
    double z = (x - p1) / p2;
    return upper ? 0.5 * erfc(z / M_SQRT2) : 0.5 * erfc(-z / M_SQRT2);
  }
  case D_EXP:
    if (x <= 0) return upper ? 1 : 0;
    return upper ? exp(-p1 * x) : -expm1(-p1 * x);
  case D_CHISQ: return gamma_pq(p1 / 2, x / 2, upper);
  case D_T: {
    if (isinf(x)) return (x > 0) != upper ? 1 : 0;
    double tail = 0.5 * beta_i(p1 / (p1 + x * x), p1 / 2, 0.5, false);   /* P(T > |x|) */
    return (x > 0) != upper ? 1 - tail : tail;
  }
  case D_F:
    if (x <= 0) return upper ? 1 : 0;
    if (isinf(x)) return upper ? 0 : 1;
    return beta_i(p1 * x / (p1 * x + p2), p1 / 2, p2 / 2, upper);
  }
  return NAN;
}

/* The quantile: the x with cdf(x) = p, by bisection on the bracket (lo, hi). */
static double icdf1(Dist d, double p, double p1, double p2) {
  if (p != p || p < 0 || p > 1) return NAN;
  switch (d) {
  case D_EXP: return -log1p(-p) / p1;
  case D_NORMAL: if (p == 0) return -INFINITY; if (p == 1) return INFINITY; break;
  case D_T: if (p == 0) return -INFINITY; if (p == 1) return INFINITY; break;
  default: if (p == 0) return 0; if (p == 1) return INFINITY; break;
  }
  bool sym = d == D_NORMAL || d == D_T;
  double lo = sym ? -1 : 0, hi = 1;
  if (d == D_NORMAL) { lo = p1 - p2; hi = p1 + p2; }
  while (cdf1(d, hi, p1, p2, false) < p) { double w = hi - lo; lo = hi; hi += 2 * w; }
  while (sym && cdf1(d, lo, p1, p2, false) > p) { double w = hi - lo; hi = lo; lo -= 2 * w; }
  for (int it = 0; it < 2000; it++) {
    double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    if (cdf1(d, mid, p1, p2, false) < p) lo = mid; else hi = mid;
  }
  return lo + (hi - lo) / 2;
}

/* ---- the builtins ---- */
static double param(Interp *I, Args *a, int i, double dflt, bool positive, const char *name) {
  if (!bi_given(a, i) && dflt != dflt) bi_error(I, "%s= is required", name);
  double v = bi_opt_num(I, a, i, dflt);
  if (positive && !(v > 0)) bi_argerror(I, i + 1, "%s must be positive, got %g", name, v);
  return v;
}

/* The arguments from slot `from` on as plain values: grad through them is an error (what names
** the function's kind); staged ones make the staging run this call eagerly (ad_concrete). */
static void plain_args(Interp *I, Args *a, int from, const char *what) {
  for (int k = from; k < a->n; k++) {
    if (!bi_given(a, k)) continue;
    if (ad_any_grad(1, &a->v[k])) bi_error(I, "grad cannot differentiate %s", what);
    a->v[k] = ad_concrete(I, a->v[k], a->span, "a distribution's argument");
  }
}

/* Applies f elementwise to target (argument 0): a number gives a number. */
static Value apply(Interp *I, Args *a, Dist d, bool inverse, double p1, double p2, bool upper) {
  Value v = a->v[0];
  char desc[64];
  if (v.t == VT_NUM || v.t == VT_BOOL) {
    double x = v.t == VT_NUM ? v.u.n : v.u.b;
    return val_num(inverse ? icdf1(d, x, p1, p2) : cdf1(d, x, p1, p2, upper));
  }
  if (v.t != VT_MAT) bi_argerror(I, 1, "number or matrix expected, got %s", val_describe(v, desc, sizeof desc));
  Tensor *t = tensor_new(I, tensor_rows(v.u.m), tensor_cols(v.u.m));
  int64_t budget = 0;
  for (int64_t i = 0; i < tensor_numel(t); i++) {
    bi_tick(I, &budget, 256, t);                 /* a quantile's bisection: microseconds each */
    double x = tensor_at(v.u.m, i);
    tensor_data(t)[i] = inverse ? icdf1(d, x, p1, p2) : cdf1(d, x, p1, p2, upper);
  }
  return val_mat(t);
}

/* ---- normal and exponential: through the ops (differentiable in the target) ---- */
static Value T2(Interp *I, Value v) { tmp_push(I, v); return v; }
#define OB(op, x, y) T2(I, op_binary(I, op, x, y, sp))
#define OU(op, x) T2(I, op_unary(I, op, x, sp))

static Value done(Interp *I, int mark, Value r) {
  val_retain(r);
  tmp_release_to(I, mark);
  return r;
}

static void need_target(Interp *I, Args *a) {
  Value v = ad_primal(a->v[0]);
  char d[64];
  if (v.t != VT_NUM && v.t != VT_BOOL && v.t != VT_MAT) bi_argerror(I, 1, "number or matrix expected, got %s", val_describe(v, d, sizeof d));
}

/* PNORM((x - mean) / sd), or PNORM(-(x - mean) / sd) for the upper tail (exact by symmetry). */
static Value normal_p(Interp *I, Args *a, double mean, double sd, bool upper) {
  need_target(I, a);
  Span sp = a->span;
  int mark = I->ntmp;
  Value z = a->v[0];                              /* the standard case adds no steps */
  if (mean != 0) z = OB(OP_SUB, z, val_num(mean));
  if (sd != 1) z = OB(OP_DIV, z, val_num(sd));
  if (upper) z = OU(OP_NEG, z);
  return done(I, mark, OU(OP_PNORM, z));
}

static Value normal_q(Interp *I, Args *a, double mean, double sd) {
  need_target(I, a);
  Span sp = a->span;
  int mark = I->ntmp;
  Value q = OU(OP_QNORM, a->v[0]);
  if (sd != 1) q = OB(OP_MUL, q, val_num(sd));
  if (mean != 0) q = OB(OP_ADD, q, val_num(mean));
  return done(I, mark, q);
}

/* 1 - exp(-rate x) for x > 0 (0 below), or exp(-rate x) (1 below) for the upper tail. */
static Value exp_p(Interp *I, Args *a, double rate, bool upper) {
  need_target(I, a);
  Span sp = a->span;
  int mark = I->ntmp;
  Value x = OB(OP_MAX2, a->v[0], val_num(0));
  Value e = OU(OP_EXP, OB(OP_MUL, x, val_num(-rate)));
  return done(I, mark, upper ? e : OB(OP_SUB, val_num(1), e));
}

static Value exp_q(Interp *I, Args *a, double rate) {       /* -log(1 - p) / rate */
  need_target(I, a);
  Span sp = a->span;
  int mark = I->ntmp;
  return done(I, mark, OB(OP_DIV, OU(OP_NEG, OU(OP_LOG, OB(OP_SUB, val_num(1), a->v[0]))), val_num(rate)));
}

/* Parameters per distribution, read from the argument slots of each signature. */
Value bi_pnorm(Interp *I, Args *a) {
  plain_args(I, a, 1, "in a distribution's parameters (only in target)");
  return normal_p(I, a, param(I, a, 1, 0, false, "mean"), param(I, a, 2, 1, true, "sd"), !bi_opt_bool(I, a, 3, true));
}
Value bi_qnorm(Interp *I, Args *a) {
  plain_args(I, a, 1, "in a distribution's parameters (only in target)");
  return normal_q(I, a, param(I, a, 1, 0, false, "mean"), param(I, a, 2, 1, true, "sd"));
}
Value bi_pexp(Interp *I, Args *a) {
  plain_args(I, a, 1, "in a distribution's parameters (only in target)");
  return exp_p(I, a, param(I, a, 1, 1, true, "rate"), !bi_opt_bool(I, a, 2, true));
}
Value bi_qexp(Interp *I, Args *a) {
  plain_args(I, a, 1, "in a distribution's parameters (only in target)");
  return exp_q(I, a, param(I, a, 1, 1, true, "rate"));
}
Value bi_pchisq(Interp *I, Args *a) { plain_args(I, a, 0, "the chi-squared, t or F distribution"); return apply(I, a, D_CHISQ, false, param(I, a, 1, NAN, true, "df"), 0, !bi_opt_bool(I, a, 2, true)); }
Value bi_qchisq(Interp *I, Args *a) { plain_args(I, a, 0, "the chi-squared, t or F distribution"); return apply(I, a, D_CHISQ, true, param(I, a, 1, NAN, true, "df"), 0, false); }
Value bi_pt(Interp *I, Args *a) { plain_args(I, a, 0, "the chi-squared, t or F distribution"); return apply(I, a, D_T, false, param(I, a, 1, NAN, true, "df"), 0, !bi_opt_bool(I, a, 2, true)); }
Value bi_qt(Interp *I, Args *a) { plain_args(I, a, 0, "the chi-squared, t or F distribution"); return apply(I, a, D_T, true, param(I, a, 1, NAN, true, "df"), 0, false); }
Value bi_pf(Interp *I, Args *a) {
  plain_args(I, a, 0, "the chi-squared, t or F distribution");
  return apply(I, a, D_F, false, param(I, a, 1, NAN, true, "df1"), param(I, a, 2, NAN, true, "df2"), !bi_opt_bool(I, a, 3, true));
}
Value bi_qf(Interp *I, Args *a) {
  plain_args(I, a, 0, "the chi-squared, t or F distribution");
  return apply(I, a, D_F, true, param(I, a, 1, NAN, true, "df1"), param(I, a, 2, NAN, true, "df2"), false);
}

/* cdf(target, dist, mean=, sd=, rate=, df=, df1=, df2=, lower.tail=) and icdf: the slots of
** their signatures (below) are 2 mean, 3 sd, 4 rate, 5 df, 6 df1, 7 df2, 8 lower.tail. */
static Value by_name(Interp *I, Args *a, bool inverse) {
  plain_args(I, a, 1, "in a distribution's parameters (only in target)");
  const char *name = bi_str(I, a, 1);
  static const char *const names[] = { "normal", "exp", "chisq", "t", "f" };
  int d = -1;
  for (int k = 0; k < 5; k++)
    if (strcmp(name, names[k]) == 0) d = k;
  if (d < 0) bi_argerror(I, 2, "dist must be \"normal\", \"exp\", \"chisq\", \"t\" or \"f\", got \"%s\"", name);
  double p1 = 0, p2 = 0;
  switch ((Dist)d) {
  case D_NORMAL: p1 = param(I, a, 2, 0, false, "mean"); p2 = param(I, a, 3, 1, true, "sd"); break;
  case D_EXP: p1 = param(I, a, 4, 1, true, "rate"); break;
  case D_CHISQ: case D_T: p1 = param(I, a, 5, NAN, true, "df"); break;
  case D_F: p1 = param(I, a, 6, NAN, true, "df1"); p2 = param(I, a, 7, NAN, true, "df2"); break;
  }
  bool upper = !inverse && !bi_opt_bool(I, a, 8, true);
  if (d == D_NORMAL) return inverse ? normal_q(I, a, p1, p2) : normal_p(I, a, p1, p2, upper);
  if (d == D_EXP) return inverse ? exp_q(I, a, p1) : exp_p(I, a, p1, upper);
  if (ad_any_grad(1, a->v)) bi_error(I, "grad cannot differentiate dist=\"%s\" (only \"normal\" and \"exp\")", name);
  plain_args(I, a, 0, "the chi-squared, t or F distribution");   /* staged: runs eagerly */
  return apply(I, a, (Dist)d, inverse, p1, p2, upper);
}

Value bi_cdf(Interp *I, Args *a) { return by_name(I, a, false); }
Value bi_icdf(Interp *I, Args *a) { return by_name(I, a, true); }
