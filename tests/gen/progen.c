/*
** progen.c — the program generator of progen.h. Productions are typed by a shape class
** (a number, a 3x1 column, a 1x3 row, a 3x3 matrix), so most programs run for many
** statements; a few choices break the types on purpose (a shape change, a non-conformable
** operand, an index out of bounds, stop()), so errors happen in live and in dead code.
** Choice 0 of every production is its smallest, so a byte string that runs out ends the
** program quickly.
*/
#include "progen.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pick_bytes(Pick *p, const uint8_t *data, size_t n) {
  p->data = data;
  p->n = n;
  p->at = 0;
  p->rng = 0;
}

void pick_seed(Pick *p, uint64_t seed) {
  p->data = NULL;
  p->n = p->at = 0;
  p->rng = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
  if (!p->rng) p->rng = 1;
}

/* a number in [0, n) */
static unsigned pick(Pick *p, unsigned n) {
  if (n <= 1) return 0;
  if (p->data) return p->at < p->n ? p->data[p->at++] % n : 0;
  uint64_t x = p->rng;                    /* xorshift64* */
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  p->rng = x;
  return (unsigned)(((x * 0x2545F4914F6CDD1Dull) >> 33) % n);
}

/* ---- output ---- */
typedef struct Buf { char *p; size_t n, cap; bool oom; } Buf;

static void put(Buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *fmt, ...) {
  if (b->oom) return;
  if (!b->p) {
    b->p = malloc(1024);
    if (!b->p) { b->oom = true; return; }
    b->cap = 1024;
  }
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(b->p + b->n, b->cap - b->n, fmt, ap);
    va_end(ap);
    if (k < 0) { b->oom = true; return; }
    if ((size_t)k < b->cap - b->n) { b->n += (size_t)k; return; }
    size_t cap = (b->cap + (size_t)k + 1) * 2;
    char *q = realloc(b->p, cap);
    if (!q) { b->oom = true; return; }
    b->p = q;
    b->cap = cap;
  }
}

/* ---- the generator's state ---- */
enum { SH_S, SH_V, SH_R, SH_M, SH_N,     /* number, 3x1, 1x3, 3x3 */
       SH_W = SH_N + 1, SH_T, SH_C };     /* (PG_RECT) n x m, m x n, m x 1 */

typedef struct Var { const char *name; int sh; } Var;

typedef struct Fn {
  char name[8];       /* f1, f2 */
  int argsh[2];       /* shapes of its two parameters */
  int ressh;          /* of its result */
  bool jit, grad;     /* jf1 = jit(f1) and gf1 = grad(...) exist */
  const char *dflt;   /* (PG_ARGS) y's default, a literal, or NULL */
} Fn;

typedef struct Gen {
  Pick *p;
  Buf b;
  Var vars[16];
  int nvars, nglobals;
  Fn fns[3];
  int nfns;
  int indent;
  int loops;          /* loops around the statement being written (loop variables i1.., k1..) */
  int depth;          /* statement nesting */
  bool in_fn;
  bool calls;         /* the function being written may call f1.. and grad or jit (progen_grad's F) */
  bool fd;            /* progen_grad's program: the same values at every call (rand seeded) */
  int dim;            /* n of the n x 1, 1 x n and n x n shapes (3: the literals of progen) */
  bool wide;          /* the rest of the vocabulary too (wide_expr; gen_diff --wide) */
  bool rect;          /* n x m operands too (rect_expr; gen_diff --rect) */
  bool edge;          /* NaN, infinities, subnormals and empty matrices too (edge_expr; gen_diff --edge) */
  bool args;          /* defaults and calls by name (gen_diff --args) */
  int m;              /* their m: 4 at n = 3, else n / 2 + 1 */
  bool closure;       /* h = function(w) ... is defined in the function being written */
  bool scope;         /* closures, factories, functions as arguments, recursion (gen_diff --scope) */
  bool lists;         /* lists of parameters, grad and jit over them, destructuring (gen_diff --lists) */
  bool dml;           /* a DML function of two results, destructured; +=, parfor (gen_diff --dml) */
  bool frames;        /* a frame of the n x n matrix's shape, read and changed (gen_diff --frames) */
  const char *qvar;   /* (scope) q = function(w) reads this name in the function being written */
  bool jq;            /* (scope) and jq = jit(q) exists there */
  int stmts;          /* statements written so far: a bound on the program's size */
} Gen;

#define P(n) pick(g->p, (n))
#define MAX_STMTS 60

static void expr(Gen *g, int sh, int d);

static void ind(Gen *g) {
  for (int i = 0; i < g->indent; i++) put(&g->b, "  ");
}

static const char *lits[] = { "1", "2", "0", "-1", "0.5", "3", "-2.5", "1e-3", "10", "0.25", "-0" };

/* (PG_EDGE) the values at the ends of the doubles */
static const char *edge_lits[] = { "NaN", "Inf", "-Inf", "1e308", "-1e308", "5e-324", "-2e-310", "1e-300", "2^53", "-0" };

static void lit(Gen *g) {
  if (g->edge && P(5) == 0) { put(&g->b, "%s", edge_lits[P(sizeof edge_lits / sizeof *edge_lits)]); return; }
  put(&g->b, "%s", lits[P(sizeof lits / sizeof *lits)]);
}

/* a variable of shape sh if there is one (else a literal of that shape) */
static bool var_of(Gen *g, int sh) {
  if (g->calls && g->in_fn && g->vars[0].sh == sh && P(2)) {   /* progen_grad's F: x, often */
    put(&g->b, "%s", g->vars[0].name);
    return true;
  }
  int c[16], n = 0;
  for (int i = 0; i < g->nvars; i++)
    if (g->vars[i].sh == sh) c[n++] = i;
  if (!n) return false;
  put(&g->b, "%s", g->vars[c[P((unsigned)n)]].name);
  return true;
}

/* an index into 1..3: a literal, a loop variable, or (rarely) one out of bounds */
static void index1(Gen *g) {
  unsigned k = P(16);
  if (k < 9 || (k < 13 && !g->loops)) put(&g->b, "%u", 1 + P(3));
  else if (k < 13) put(&g->b, "i%u", 1 + P((unsigned)g->loops));
  else if (k == 13) put(&g->b, "%u", 1 + P(4));             /* 4: out of bounds */
  else put(&g->b, "%s", P(2) ? "1:2" : "c(3, 1)");
}

/* a column of n values from the literal s: constant, a ramp or a wave (dim != 3) */
static void big_col(Gen *g) {
  unsigned k = P(3);
  if (k == 0) { put(&g->b, "matrix("); lit(g); put(&g->b, ", rows = %d, cols = 1)", g->dim); return; }
  put(&g->b, k == 1 ? "(seq(1, %d) / %d * " : "(sin(seq(1, %d) * %d) * ", g->dim, k == 1 ? g->dim : 7);
  lit(g);
  put(&g->b, ")");
}

/* an n x n matrix (dim != 3): constant, the identity, dense waves, or sparse (1 cell in 7 nonzero) */
static void big_mat(Gen *g) {
  int n = g->dim;
  switch (P(4)) {
  case 0: put(&g->b, "matrix("); lit(g); put(&g->b, ", rows = %d, cols = %d)", n, n); return;
  case 1: put(&g->b, "diag(matrix(1, rows = %d, cols = 1))", n); return;
  case 2: put(&g->b, "matrix(cos(seq(1, %d) * 0.37), rows = %d, cols = %d)", n * n, n, n); return;
  default: put(&g->b, "(matrix(seq(1, %d) %%%% 7 == 0, rows = %d, cols = %d) * ", n * n, n, n); lit(g); put(&g->b, ")"); return;
  }
}

static void rect_leaf(Gen *g, int sh);

static void leaf(Gen *g, int sh) {
  if (sh > SH_N) { rect_leaf(g, sh); return; }   /* (is_rect) */
  if (g->dim != 3 && sh != SH_S) {
    if (P(4) == 0 || !var_of(g, sh)) {
      if (sh == SH_M) big_mat(g);
      else if (sh == SH_V) big_col(g);
      else { put(&g->b, "t("); big_col(g); put(&g->b, ")"); }
    }
    return;
  }
  switch (sh) {
  case SH_S:
    if (P(3) == 0 || !var_of(g, SH_S)) lit(g);
    return;
  case SH_V:
    if (P(4) == 0 || !var_of(g, SH_V)) {
      put(&g->b, "[");
      lit(g);
      put(&g->b, "; ");
      lit(g);
      put(&g->b, "; ");
      lit(g);
      put(&g->b, "]");
    }
    return;
  case SH_R:
    if (P(3) == 0 || !var_of(g, SH_R)) {
      put(&g->b, "[");
      lit(g);
      put(&g->b, ", ");
      lit(g);
      put(&g->b, ", ");
      lit(g);
      put(&g->b, "]");
    }
    return;
  default:
    if (P(4) == 0 || !var_of(g, SH_M)) {
      switch (P(3)) {
      case 0: put(&g->b, "matrix("); lit(g); put(&g->b, ", rows = 3, cols = 3)"); break;
      case 1: put(&g->b, "diag(3)"); break;
      default: put(&g->b, "[1, 2, 0; -1, 3, 1; 0.5, 0, 2]"); break;
      }
    }
    return;
  }
}

/* something to index: a variable, or a literal in parentheses */
static void indexable(Gen *g, int sh) {
  if (var_of(g, sh)) return;
  put(&g->b, "(");
  leaf(g, sh);
  put(&g->b, ")");
}

static const char *unops[] = { "abs", "exp", "sqrt", "tanh", "sigmoid", "sin", "cos", "floor", "sign", "round" };
static const char *binops[] = { "+", "-", "*", "/", "^", "%%", "min", "max" };

static void binary(Gen *g, int sh, int sa, int sb, int d) {
  unsigned o = P(sizeof binops / sizeof *binops);
  if (o >= 6) {
    put(&g->b, "%s(", binops[o]);
    expr(g, sa, d + 1);
    put(&g->b, ", ");
    expr(g, sb, d + 1);
    put(&g->b, ")");
    return;
  }
  put(&g->b, "(");
  expr(g, sa, d + 1);
  put(&g->b, " %s ", o == 5 ? "%%" : binops[o]);
  if (o == 4) put(&g->b, "%s", P(2) ? "2" : "0.5");       /* a power: keep values finite */
  else expr(g, sb, d + 1);
  put(&g->b, ")");
  (void)sh;
}

/* a one-argument op of ops.def's elementwise list on an e of shape sh (sqrt of abs(e)) */
static void unary(Gen *g, int sh, int d) {
  unsigned u = P(sizeof unops / sizeof *unops);
  put(&g->b, "%s(%s", unops[u], u == 2 ? "abs(" : "");
  expr(g, sh, d + 1);
  put(&g->b, u == 2 ? "))" : ")");
}

/* ifelse over a mask of an e of shape sh */
static void ifelse_of(Gen *g, int sh, int d) {
  put(&g->b, "ifelse(");
  expr(g, sh, d + 1);
  put(&g->b, " > ");
  lit(g);
  put(&g->b, ", ");
  expr(g, sh, d + 1);
  put(&g->b, ", ");
  expr(g, P(2) ? SH_S : sh, d + 1);
  put(&g->b, ")");
}

/* the call of a user function whose result has shape sh */
static bool call_fn(Gen *g, int sh, int d) {
  int c[3], n = 0;
  for (int i = 0; i < g->nfns; i++)
    if (g->fns[i].ressh == sh || (g->fns[i].grad && g->fns[i].argsh[0] == sh)) c[n++] = i;
  if (!n || (g->in_fn && !g->calls)) return false;
  Fn *f = &g->fns[c[P((unsigned)n)]];
  unsigned k = P(3);
  if (f->ressh != sh) k = 2;
  const char *pre = k == 0 ? "" : k == 1 && f->jit ? "j" : f->grad && f->argsh[0] == sh ? "g" : "";
  put(&g->b, "%s%s(", pre, f->name);
  unsigned form = g->args && *pre != 'g' ? P(4) : 3;   /* (a grad's arguments are positional) */
  if (form == 0) {                          /* by name, in the other order */
    put(&g->b, "y = ");
    expr(g, f->argsh[1], d + 1);
    put(&g->b, ", x = ");
    expr(g, f->argsh[0], d + 1);
  } else if (form == 1 && f->dflt) {        /* y's default */
    expr(g, f->argsh[0], d + 1);
  } else {
    if (form == 1) put(&g->b, "x = ");      /* x by name */
    expr(g, f->argsh[0], d + 1);
    put(&g->b, ", ");
    expr(g, f->argsh[1], d + 1);
  }
  put(&g->b, ")");
  return true;
}

/* an n x n matrix far from singular: e + n I (a product, inverse or factor of it stays moderate) */
static void dominant(Gen *g, int d) {
  put(&g->b, "(");
  expr(g, SH_M, d + 1);
  if (g->dim != 3) put(&g->b, " + diag(matrix(%d, rows = %d, cols = 1)))", 4 * g->dim, g->dim);
  else put(&g->b, " + diag(3) * 4)");
}

/* The rest of the vocabulary (gen_diff --wide): ops.def's less common functions and the
** builtins with derivative rules that expr does not write: each argument mostly kept in its
** function's domain (log of abs(e) + 0.5, asin of 0.9 tanh(e), ...), sometimes not, so NaN
** and errors come too. Asked for only when g->wide, so expr's choices, and so the programs
** of a seed without --wide, are unchanged. */
static void wide_expr(Gen *g, int sh, int d) {
  static const char *const fn1[][2] = {   /* elementwise: prefix, suffix around e */
    { "log(abs(", ") + 0.5)" }, { "log1p(abs(", "))" }, { "expm1(tanh(", "))" }, { "tan(tanh(", "))" },
    { "sinh(tanh(", ") * 2)" }, { "cosh(tanh(", "))" }, { "asin(tanh(", ") * 0.9)" }, { "acos(tanh(", ") * 0.9)" },
    { "atan(", ")" }, { "pnorm(", ")" }, { "qnorm(sigmoid(tanh(", ")))" }, { "logit(sigmoid(tanh(", ")))" },
    { "softplus(", ")" }, { "ceil(", ")" }, { "-(", ")" }, { "log(", ")" }, { "asin(", ")" }, { "(!(", " > 0))" },
  };
  unsigned k = P(3);
  if (k == 0) {
    unsigned u = P(sizeof fn1 / sizeof *fn1);
    put(&g->b, "%s", fn1[u][0]);
    expr(g, sh, d + 1);
    put(&g->b, "%s", fn1[u][1]);
    return;
  }
  if (k == 1) {                           /* elementwise of two: one side of shape sh, the other sh or a number */
    int sa = sh, sb = P(3) ? sh : SH_S;
    if (P(2)) { int t = sa; sa = sb; sb = t; }
    static const char *const op2[] = { " %/% ", " > ", " == ", " <= ", " & ", " | ", "pmin", "pmax", "^" };
    unsigned o = P(sizeof op2 / sizeof *op2);
    if (o == 6 || o == 7) { put(&g->b, "%s(", op2[o]); expr(g, sa, d + 1); put(&g->b, ", "); expr(g, sb, d + 1); put(&g->b, ")"); return; }
    if (o == 8) { put(&g->b, "((abs("); expr(g, sa, d + 1); put(&g->b, ") + 0.5) ^ tanh("); expr(g, sb, d + 1); put(&g->b, "))"); return; }
    put(&g->b, "((");
    expr(g, sa, d + 1);
    put(&g->b, ")%s(", op2[o]);
    expr(g, sb, d + 1);
    put(&g->b, ") %s ", P(2) ? "+" : "*");
    expr(g, sh, d + 1);
    put(&g->b, ")");
    return;
  }
  /* one call of shape sh: prefix, the argument's shape (SH_DOM: e + n I, dominant()), suffix */
  enum { SH_DOM = SH_N };
  typedef struct Form { const char *pre; int arg; const char *post; } Form;
  static const Form num[] = {
    { "var(", SH_V, ")" }, { "min(", SH_M, ")" }, { "median(", SH_V, ")" }, { "det(", SH_DOM, ")" },
    { "trace(", SH_M, ")" }, { "sum(cumprod(", SH_V, "))" }, { "sum(rowMaxs(", SH_M, "))" }, { "quantile(", SH_V, ", 0.5)" },
    { "max(", SH_M, ")" }, { "sum(logsoftmax(", SH_R, "))" }, { "sum(eigen(crossprod(", SH_M, "))$values)" },
    { "mean(colMins(", SH_M, "))" },
  };
  static const Form col[] = {
    { "rowMaxs(", SH_M, ")" }, { "rowMins(", SH_M, ")" }, { "rowMeans(", SH_M, ")" }, { "rowProds(", SH_M, ")" },
    { "cumprod(", SH_V, ")" }, { "cummax(", SH_V, ")" }, { "cummin(", SH_V, ")" }, { "sort(", SH_V, ")" },
    { "(inv(", SH_DOM, ") %*% [v])" }, { "rowVars(", SH_M, ")" }, { "eigen(crossprod(", SH_DOM, "))$values" },
    { "rowIndexMax(", SH_M, ")" },
  };
  static const Form row[] = {
    { "colMaxs(", SH_M, ")" }, { "colMins(", SH_M, ")" }, { "colMeans(", SH_M, ")" }, { "colProds(", SH_M, ")" },
    { "logsoftmax(", SH_R, ")" }, { "cumprod(", SH_R, ")" }, { "colVars(", SH_M, ")" },
  };
  static const Form mat[] = {
    { "inv(", SH_DOM, ")" }, { "crossprod(", SH_M, ")" }, { "tcrossprod(", SH_M, ")" }, { "cholesky(crossprod(", SH_DOM, "))" },
    { "outer(", SH_V, ", [r], \"*\")" }, { "logsoftmax(", SH_M, ")" }, { "cummax(", SH_M, ")" }, { "cumprod(tanh(", SH_M, "))" },
    { "eigen(crossprod(", SH_DOM, "))$vectors" }, { "softmax(", SH_M, ")" },
  };
  static const struct { const Form *f; unsigned n; } forms[] = {
    [SH_S] = { num, sizeof num / sizeof *num }, [SH_V] = { col, sizeof col / sizeof *col },
    [SH_R] = { row, sizeof row / sizeof *row }, [SH_M] = { mat, sizeof mat / sizeof *mat },
  };
  const Form *f = &forms[sh].f[P(forms[sh].n)];
  put(&g->b, "%s", f->pre);
  if (f->arg == SH_DOM) dominant(g, d);
  else expr(g, f->arg, d + 1);
  const char *post = f->post, *slot = strchr(post, '[');   /* [v], [r]: a second operand of that shape */
  if (!slot) { put(&g->b, "%s", post); return; }
  put(&g->b, "%.*s", (int)(slot - post), post);
  expr(g, slot[1] == 'v' ? SH_V : SH_R, d + 1);
  put(&g->b, "%s", slot + 3);
}

/* ---- n x m operands (gen_diff --rect) ----
** Every other shape is square, so a rewrite that takes rows for columns, or orders a chain of
** products by their dimensions, never shows: here W is n x m, its transpose T m x n and C an m x
** 1 column, with m != n, in products, chains (X %*% Y %*% v), t(X) %*% X, traces and diagonals
** of products, the shapes linear-algebra rewrites look for. Asked for only when g->rect. */
static bool is_rect(int sh) { return sh > SH_N; }
static int rows_of(Gen *g, int sh) { return sh == SH_T || sh == SH_C ? g->m : sh == SH_S || sh == SH_R ? 1 : g->dim; }
static int cols_of(Gen *g, int sh) { return sh == SH_W ? g->m : sh == SH_S || sh == SH_V || sh == SH_C ? 1 : g->dim; }

static void rect_leaf(Gen *g, int sh) {
  if (P(4) && var_of(g, sh)) return;
  int r = rows_of(g, sh), c = cols_of(g, sh);
  switch (P(4)) {
  case 0: put(&g->b, "matrix("); lit(g); put(&g->b, ", rows = %d, cols = %d)", r, c); return;
  case 1: put(&g->b, "matrix(cos(seq(1, %d) * 0.37), rows = %d, cols = %d)", r * c, r, c); return;
  case 2: put(&g->b, "matrix(seq(1, %d) / %d, rows = %d, cols = %d)", r * c, r * c, r, c); return;
  default: put(&g->b, "(matrix(seq(1, %d) %%%% 5 == 0, rows = %d, cols = %d) * ", r * c, r, c); lit(g); put(&g->b, ")"); return;
  }
}

/* e of shape sh, written, and a copy of its text (NULL when out of memory) to write again:
** "t(X) %*% X" with one X, as rewrites want it */
static char *expr_text(Gen *g, int sh, int d) {
  size_t s0 = g->b.n;
  expr(g, sh, d);
  if (g->b.oom) return NULL;
  size_t len = g->b.n - s0;
  char *e = malloc(len + 1);
  if (!e) { g->b.oom = true; return NULL; }
  memcpy(e, g->b.p + s0, len);
  e[len] = 0;
  return e;
}

/* "(a %*% b)", "(a %*% b %*% c)" of the shapes given (SH_N: none) */
static void prod3(Gen *g, int d, int a, int b, int c) {
  put(&g->b, "(");
  expr(g, a, d + 1);
  put(&g->b, " %%*%% ");
  expr(g, b, d + 1);
  if (c != SH_N) { put(&g->b, " %%*%% "); expr(g, c, d + 1); }
  put(&g->b, ")");
}

/* a value of a rectangular shape */
static void rect_expr(Gen *g, int sh, int d) {
  if (d > 3 || g->b.n > 6000) { rect_leaf(g, sh); return; }
  unsigned k = P(12);
  if (k < 4) { rect_leaf(g, sh); return; }
  if (k < 6) {
    switch (P(3)) {
    case 0: binary(g, sh, sh, sh, d); return;
    case 1: binary(g, sh, sh, SH_S, d); return;
    default: binary(g, sh, SH_S, sh, d); return;
    }
  }
  if (k == 6) { unary(g, sh, d); return; }
  if (k == 7) { ifelse_of(g, sh, d); return; }
  switch (sh) {
  case SH_W:
    switch (P(7)) {
    case 0: put(&g->b, "t("); expr(g, SH_T, d + 1); put(&g->b, ")"); return;
    case 1: prod3(g, d, SH_M, SH_W, SH_N); return;
    case 2: prod3(g, d, SH_W, SH_T, SH_W); return;
    case 3: put(&g->b, "("); expr(g, SH_V, d + 1); put(&g->b, " %%*%% t("); expr(g, SH_C, d + 1); put(&g->b, "))"); return;
    case 4: prod3(g, d, SH_M, SH_M, SH_W); return;
    case 5: put(&g->b, "cbind("); expr(g, SH_V, d + 1); put(&g->b, ", "); expr(g, SH_W, d + 1); put(&g->b, ")[, 1:%d]", g->m); return;
    default: indexable(g, SH_W); put(&g->b, "[, %d:1]", g->m); return;
    }
  case SH_T:
    switch (P(5)) {
    case 0: put(&g->b, "t("); expr(g, SH_W, d + 1); put(&g->b, ")"); return;
    case 1: prod3(g, d, SH_T, SH_M, SH_N); return;
    case 2: prod3(g, d, SH_C, SH_R, SH_N); return;
    case 3: put(&g->b, "(t("); expr(g, SH_W, d + 1); put(&g->b, ") %%*%% "); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    default: put(&g->b, "rbind("); expr(g, SH_R, d + 1); put(&g->b, ", "); expr(g, SH_T, d + 1); put(&g->b, ")[2:%d, ]", g->m + 1); return;
    }
  default:
    switch (P(7)) {
    case 0: prod3(g, d, SH_T, SH_V, SH_N); return;
    case 1: put(&g->b, "(t("); expr(g, SH_W, d + 1); put(&g->b, ") %%*%% "); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 2: put(&g->b, "t(colSums("); expr(g, SH_W, d + 1); put(&g->b, "))"); return;
    case 3: put(&g->b, "rowSums("); expr(g, SH_T, d + 1); put(&g->b, ")"); return;
    case 4: indexable(g, SH_T); put(&g->b, "[, %u]", 1 + P(3)); return;
    case 5: {                               /* t(X) %*% (w * (X %*% v)): one pass over X */
      put(&g->b, "(t(");
      char *x = expr_text(g, SH_W, d + 1);
      put(&g->b, ") %%*%% (");
      expr(g, SH_V, d + 1);
      put(&g->b, " * (%s %%*%% ", x ? x : "");
      free(x);
      expr(g, SH_C, d + 1);
      put(&g->b, ")))");
      return;
    }
    default: put(&g->b, "cumsum("); expr(g, SH_C, d + 1); put(&g->b, ")"); return;
    }
  }
}

/* a value of one of the square shapes made from rectangular ones */
static void rect_into(Gen *g, int sh, int d) {
  char *x;
  switch (sh) {
  case SH_S:
    switch (P(8)) {
    case 0: put(&g->b, "trace("); prod3(g, d, SH_W, SH_T, SH_N); put(&g->b, ")"); return;
    case 1: put(&g->b, "sum("); expr(g, SH_W, d + 1); put(&g->b, " * "); expr(g, SH_W, d + 1); put(&g->b, ")"); return;
    case 2: put(&g->b, "sum("); prod3(g, d, SH_W, SH_T, SH_N); put(&g->b, ")"); return;
    case 3: put(&g->b, "sum(crossprod("); expr(g, SH_W, d + 1); put(&g->b, "))"); return;
    case 4: put(&g->b, "mean("); expr(g, SH_W + (int)P(3), d + 1); put(&g->b, ")"); return;
    case 5: put(&g->b, P(2) ? "ncol(" : "nrow("); expr(g, SH_W + (int)P(3), d + 1); put(&g->b, ")"); return;
    case 6:
      put(&g->b, "as.scalar(t(");
      x = expr_text(g, SH_C, d + 1);
      put(&g->b, ") %%*%% %s)", x ? x : "");
      free(x);
      return;
    default: put(&g->b, "sum(diag("); prod3(g, d, SH_W, SH_T, SH_N); put(&g->b, "))"); return;
    }
  case SH_V:
    switch (P(6)) {
    case 0: prod3(g, d, SH_W, SH_C, SH_N); return;
    case 1: prod3(g, d, SH_W, SH_T, SH_V); return;
    case 2: put(&g->b, "rowSums("); expr(g, SH_W, d + 1); put(&g->b, ")"); return;
    case 3: put(&g->b, "rowSums("); prod3(g, d, SH_W, SH_T, SH_N); put(&g->b, ")"); return;
    case 4: put(&g->b, "diag("); prod3(g, d, SH_W, SH_T, SH_N); put(&g->b, ")"); return;
    default: put(&g->b, "t(colSums("); expr(g, SH_T, d + 1); put(&g->b, "))"); return;
    }
  case SH_R:
    switch (P(4)) {
    case 0: put(&g->b, "colSums("); expr(g, SH_T, d + 1); put(&g->b, ")"); return;
    case 1: prod3(g, d, SH_R, SH_W, SH_T); return;
    case 2: put(&g->b, "t("); prod3(g, d, SH_W, SH_C, SH_N); put(&g->b, ")"); return;
    default: put(&g->b, "colSums("); prod3(g, d, SH_W, SH_T, SH_N); put(&g->b, ")"); return;
    }
  default:
    switch (P(6)) {
    case 0: prod3(g, d, SH_W, SH_T, SH_N); return;
    case 1: put(&g->b, "tcrossprod("); expr(g, SH_W, d + 1); put(&g->b, ")"); return;
    case 2:                                 /* X %*% t(X), t(X) %*% X: one X */
    case 3:
      put(&g->b, "(");
      if (P(2)) { put(&g->b, "t("); x = expr_text(g, SH_T, d + 1); put(&g->b, ") %%*%% %s)", x ? x : ""); }
      else { x = expr_text(g, SH_W, d + 1); put(&g->b, " %%*%% t(%s))", x ? x : ""); }
      free(x);
      return;
    case 4: prod3(g, d, SH_W, SH_T, SH_M); return;
    default: prod3(g, d, SH_M, SH_W, SH_T); return;
    }
  }
}

/* ---- the edges (gen_diff --edge) ----
** Empty selections and matrices with no rows or no columns, reduced, multiplied, bound and
** assigned to; the NaN-aware ops (max, pmin, cummax, sort, rowMaxs, ifelse, is.nan) on values
** with NaN in them; and, through lit(), NaN, infinities, subnormals and 1e308 as literals.
** Fused and vectorized kernels are where NaN and empty operands are handled apart from the
** scalar code. Asked for only when g->edge. */
/* fn of a selection that is empty unless values pass 1e9: fn(X[Y > 1e9]), X and Y of shape sh */
static void empty_sel(Gen *g, const char *fn, int sh, const char *test) {
  put(&g->b, "%s(", fn);
  indexable(g, sh);
  put(&g->b, "[");
  indexable(g, sh);
  put(&g->b, "%s])", test);
}

static void edge_expr(Gen *g, int sh, int d) {
  int n = g->dim;
  switch (sh) {
  case SH_S:
    switch (P(8)) {
    case 0: empty_sel(g, "sum", SH_M, " > 1e9"); return;
    case 1: empty_sel(g, "length", SH_V, " > 1e9"); return;
    case 2: empty_sel(g, "prod", SH_V, " < -1e9"); return;
    case 3: empty_sel(g, "mean", SH_M, " > 1e9"); return;
    case 4: put(&g->b, "sum(is.nan("); expr(g, SH_M, d + 1); put(&g->b, "))"); return;
    case 5: put(&g->b, "max("); expr(g, SH_V, d + 1); put(&g->b, ", NaN)"); return;
    case 6: put(&g->b, "sum(matrix(0, rows = 0, cols = %d) %%*%% ", n); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    default: put(&g->b, "min("); expr(g, SH_R, d + 1); put(&g->b, ")"); return;
    }
  case SH_V:
    switch (P(6)) {
    case 0: put(&g->b, "pmin("); expr(g, SH_V, d + 1); put(&g->b, ", [NaN])"); return;
    case 1: put(&g->b, "cummax(("); expr(g, SH_V, d + 1); put(&g->b, ") / ("); expr(g, SH_V, d + 1); put(&g->b, "))"); return;
    case 2: put(&g->b, "rowMaxs(("); expr(g, SH_M, d + 1); put(&g->b, ") * ("); expr(g, SH_M, d + 1); put(&g->b, "))"); return;
    case 3: put(&g->b, "rbind(matrix(0, rows = 0, cols = 1), "); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 4: put(&g->b, "cbind(matrix(0, rows = %d, cols = 0), ", n); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    default: put(&g->b, "ifelse(is.nan("); expr(g, SH_V, d + 1); put(&g->b, "), "); lit(g); put(&g->b, ", "); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    }
  case SH_R:
    switch (P(4)) {
    case 0: put(&g->b, "colSums(matrix(0, rows = 0, cols = %d))", n); return;
    case 1: put(&g->b, "colMaxs(("); expr(g, SH_M, d + 1); put(&g->b, ") / ("); expr(g, SH_M, d + 1); put(&g->b, "))"); return;
    case 2: put(&g->b, "(matrix(1, rows = 1, cols = 0) %%*%% matrix(0, rows = 0, cols = %d) + ", n); expr(g, SH_R, d + 1); put(&g->b, ")"); return;
    default: put(&g->b, "t(sort("); expr(g, SH_V, d + 1); put(&g->b, ", decreasing = TRUE))"); return;
    }
  default:
    switch (P(5)) {
    case 0: put(&g->b, "(t(matrix(0, rows = 0, cols = %d)) %%*%% matrix(0, rows = 0, cols = %d) + ", n, n); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    case 1: put(&g->b, "pmax("); expr(g, SH_M, d + 1); put(&g->b, ", ("); expr(g, SH_M, d + 1); put(&g->b, ") / 0)"); return;
    case 2: put(&g->b, "rbind("); expr(g, SH_M, d + 1); put(&g->b, ", matrix(0, rows = 0, cols = %d))", n); return;
    case 3: put(&g->b, "cummin(("); expr(g, SH_M, d + 1); put(&g->b, ") * Inf)"); return;
    default: put(&g->b, "ifelse(("); expr(g, SH_M, d + 1); put(&g->b, ") > 0, NaN, "); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    }
  }
}

/* open, a body of shape sh reading param (of shape sh), mid, an argument of shape sh, ")":
** a function literal given an argument ("jit(function(x) " body ")(" e ")") */
static void applied_literal(Gen *g, const char *open, const char *param, int sh, const char *mid, int d) {
  put(&g->b, "%s", open);
  g->vars[g->nvars++] = (Var){ param, sh };
  expr(g, sh, d + 2);
  g->nvars--;
  put(&g->b, "%s", mid);
  expr(g, sh, d + 1);
  put(&g->b, ")");
}

/* ---- scoping (gen_diff --scope) ----
** The preamble defines mk (a factory: its closure keeps k and a local s), ap (calls the function
** it is given), rf (recursion n deep) and fm = mk(..); a function body may define q, a closure
** reading a name the body may assign later (before that, the global), and jq = jit(q). */
static void cond(Gen *g);

/* a value of shape sh through one of them */
static void scope_expr(Gen *g, int sh, int d) {
  switch (P(g->qvar ? 6 : 4)) {
  case 0: put(&g->b, "mk("); expr(g, SH_S, d + 1); put(&g->b, ")("); expr(g, sh, d + 1); put(&g->b, ")"); return;
  case 1: put(&g->b, "fm("); expr(g, sh, d + 1); put(&g->b, ")"); return;
  case 2:                                   /* an anonymous function reading the names in scope */
    if (g->nvars >= 16) break;
    applied_literal(g, "ap(function(w) ", "w", sh, ", ", d);
    return;
  case 3:                                   /* n: a literal, a loop variable (at most 4) or data */
    put(&g->b, "rf(");
    expr(g, sh, d + 1);
    switch (P(3)) {
    case 0: put(&g->b, ", %u)", P(4)); return;
    case 1: if (g->loops) { put(&g->b, ", i%u)", 1 + P((unsigned)g->loops)); return; } put(&g->b, ", 2)"); return;
    default: put(&g->b, ", sum("); expr(g, (int)P(SH_N), d + 2); put(&g->b, ") > 0)"); return;
    }
  default: put(&g->b, "%s(", g->jq && P(2) ? "jq" : "q"); expr(g, sh, d + 1); put(&g->b, ")"); return;
  }
  leaf(g, sh);
}

/* ---- lists (gen_diff --lists) ----
** The preamble defines P = list(w = n x n, c = n x 1), pl(p, x) (a number from both and x),
** gpl = grad(pl) (a list like P), jpl = jit(pl) and pf(x) (a list: s, a number, and m, x's
** shape). Statements set P's items, destructure value_and_grad and loop over a list. */
static void list_expr(Gen *g, int sh, int d) {
  unsigned k = P(6);
  switch (sh) {
  case SH_S:
    switch (k) {
    case 0: put(&g->b, "pl(P, "); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 1: put(&g->b, "jpl(P, "); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 2: put(&g->b, "pf("); expr(g, (int)P(SH_N), d + 1); put(&g->b, ")$s"); return;
    case 3: put(&g->b, "length(P)"); return;
    default: put(&g->b, "sum(P$c)"); return;
    }
  case SH_V: case SH_M: {
    bool m = sh == SH_M;
    switch (k) {
    case 0: put(&g->b, m ? "P$w" : "P$c"); return;
    case 1: put(&g->b, m ? "P[1]" : "P[\"c\"]"); return;
    case 2: put(&g->b, "%s(P, ", P(2) ? "gpl" : "jit(grad(pl))"); expr(g, SH_V, d + 1); put(&g->b, ")$%s", m ? "w" : "c"); return;
    case 3: put(&g->b, "pf("); expr(g, sh, d + 1); put(&g->b, ")$m"); return;
    default:                                /* a grad over the list, its body reading p's items */
      if (g->nvars >= 15) break;
      put(&g->b, "grad(function(p) sum(");
      g->vars[g->nvars++] = (Var){ "p$w", SH_M };
      g->vars[g->nvars++] = (Var){ "p$c", SH_V };
      expr(g, (int)P(SH_N), d + 2);
      g->nvars -= 2;
      put(&g->b, "))(P)$%s", m ? "w" : "c");
      return;
    }
    break;
  }
  default: put(&g->b, "pf("); expr(g, sh, d + 1); put(&g->b, ")$m"); return;
  }
  leaf(g, sh);
}

static void expr(Gen *g, int sh, int d) {
  if (is_rect(sh)) { rect_expr(g, sh, d); return; }
  if (d > 3 || g->b.n > 6000) { leaf(g, sh); return; }
  if (g->wide && P(5) == 0) { wide_expr(g, sh, d); return; }
  if (g->rect && P(6) == 0) { rect_into(g, sh, d); return; }
  if (g->edge && P(8) == 0) { edge_expr(g, sh, d); return; }
  if (g->scope && P(6) == 0) { scope_expr(g, sh, d); return; }
  if (g->lists && P(6) == 0) { list_expr(g, sh, d); return; }
  if (g->frames && P(8) == 0 && !is_rect(sh)) {   /* the frame read as numbers */
    switch (sh) {
    case SH_S:
      if (P(2)) { put(&g->b, "as.scalar(Fr[%u, %u])", 1 + P(3), 1 + P(3)); return; }
      put(&g->b, "sum(as.matrix(Fr))");
      return;
    case SH_V: put(&g->b, "as.matrix(Fr[, %u])", 1 + P(3)); return;
    case SH_R: put(&g->b, "as.matrix(Fr[%u, ])", 1 + P(3)); return;
    default: put(&g->b, P(2) ? "as.matrix(Fr)" : "t(as.matrix(Fr))"); return;
    }
  }
  if (g->dml && sh == SH_M && P(8) == 0) {  /* d1's results inside a function literal, jit or not */
    put(&g->b, "%s(function(x) { [B, q] = d1(x, ", P(2) ? "jit" : "");
    expr(g, SH_S, d + 2);
    put(&g->b, "); B * q })(");
    expr(g, SH_M, d + 1);
    put(&g->b, ")");
    return;
  }
  unsigned k = P(24);
  if (k == 23 && d > 0) sh = (int)P(SH_N);   /* an operand of another shape (non-conformable) */
  if (k < 7) { leaf(g, sh); return; }
  if (k < 11) {                             /* elementwise with a number on one side */
    switch (P(3)) {
    case 0: binary(g, sh, sh, sh, d); return;
    case 1: binary(g, sh, sh, SH_S, d); return;
    default: binary(g, sh, SH_S, sh, d); return;
    }
  }
  if (k < 13) { unary(g, sh, d); return; }
  if (k == 13 && call_fn(g, sh, d)) return;
  if (k == 14) { ifelse_of(g, sh, d); return; }
  if (k == 15 && (!g->in_fn || g->calls)) { /* an anonymous jit or grad on the spot */
    if (P(2)) applied_literal(g, "jit(function(x) ", "x", sh, ")(", d);
    else applied_literal(g, "grad(function(x) sum(", "x", sh, "))(", d);
    return;
  }
  if (k == 16) {
    if (g->closure) { put(&g->b, "h("); expr(g, sh, d + 1); put(&g->b, ")"); return; }
    if (sh == SH_S && !g->in_fn) { put(&g->b, "L$a"); return; }
    if (sh == SH_V && !g->in_fn) { put(&g->b, "L$b"); return; }
    if (sh == SH_V) { put(&g->b, "rand(rows = %d, cols = 1%s)", g->dim, P(2) || g->fd ? ", seed = 5" : ""); return; }
  }
  switch (sh) {
  case SH_S:
    switch (P(13)) {
    case 10:   /* the stable rewrites (softplus, logsoftmax) differ from eager code where it overflows, by
               ** design (docs/staging.md): their inputs are kept in [-1, 1] so both are finite */
      put(&g->b, "log(1 + exp(tanh("); expr(g, SH_S, d + 1); put(&g->b, ")))"); return;
    case 11: put(&g->b, "sd("); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 12: put(&g->b, "sum("); expr(g, SH_V, d + 1); put(&g->b, " * "); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 0: put(&g->b, "sum("); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 1: put(&g->b, "mean("); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    case 2: put(&g->b, "max("); expr(g, SH_R, d + 1); put(&g->b, ")"); return;
    case 3: put(&g->b, "nrow("); expr(g, (int)P(SH_N), d + 1); put(&g->b, ")"); return;
    case 4: indexable(g, SH_V); put(&g->b, "["); index1(g); put(&g->b, "]"); return;
    case 5: indexable(g, SH_M); put(&g->b, "["); index1(g); put(&g->b, ", "); index1(g); put(&g->b, "]"); return;
    case 6: put(&g->b, "as.scalar(t("); expr(g, SH_V, d + 1); put(&g->b, ") %%*%% "); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 7: put(&g->b, "prod("); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 8: if (g->loops) { put(&g->b, "i%u", 1 + P((unsigned)g->loops)); return; } lit(g); return;
    default: put(&g->b, "sum(rowSums("); expr(g, SH_M, d + 1); put(&g->b, "))"); return;
    }
  case SH_V:
    switch (P(9)) {
    case 0: put(&g->b, "("); expr(g, SH_M, d + 1); put(&g->b, " %%*%% "); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 1: put(&g->b, "rowSums("); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    case 2: put(&g->b, "t("); expr(g, SH_R, d + 1); put(&g->b, ")"); return;
    case 3: put(&g->b, "cumsum("); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 4: indexable(g, SH_M); put(&g->b, "[, "); put(&g->b, "%u", 1 + P(3)); put(&g->b, "]"); return;
    case 5: put(&g->b, "rev("); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 6: put(&g->b, "matrix("); expr(g, SH_S, d + 1); put(&g->b, ", rows = %d, cols = 1)", g->dim); return;
    case 7: put(&g->b, "diag("); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    default:
      if (g->dim != 3) { put(&g->b, "(seq(1, %d) * ", g->dim); expr(g, SH_S, d + 1); put(&g->b, " - "); expr(g, SH_S, d + 1); put(&g->b, ")"); return; }
      put(&g->b, "["); expr(g, SH_S, d + 1); put(&g->b, "; "); expr(g, SH_S, d + 1); put(&g->b, "; "); expr(g, SH_S, d + 1); put(&g->b, "]"); return;
    }
  case SH_R:
    switch (P(7)) {
    case 5: put(&g->b, "softmax("); expr(g, SH_R, d + 1); put(&g->b, ")"); return;
    case 6: put(&g->b, "log(softmax(tanh("); expr(g, SH_R, d + 1); put(&g->b, ")))"); return;
    case 0: put(&g->b, "t("); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 1: put(&g->b, "colSums("); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    case 2: indexable(g, SH_M); put(&g->b, "["); put(&g->b, "%u", 1 + P(3)); put(&g->b, ", ]"); return;
    case 3: put(&g->b, "("); expr(g, SH_R, d + 1); put(&g->b, " %%*%% "); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    default: put(&g->b, "cumsum("); expr(g, SH_R, d + 1); put(&g->b, ")"); return;
    }
  default:
    switch (P(10)) {
    case 8: put(&g->b, "t(t("); expr(g, SH_M, d + 1); put(&g->b, "))"); return;
    case 9: put(&g->b, "(t("); expr(g, SH_M, d + 1); put(&g->b, ") %%*%% "); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    case 0: put(&g->b, "("); expr(g, SH_M, d + 1); put(&g->b, " %%*%% "); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    case 1: put(&g->b, "t("); expr(g, SH_M, d + 1); put(&g->b, ")"); return;
    case 2: put(&g->b, "("); expr(g, SH_V, d + 1); put(&g->b, " %%*%% "); expr(g, SH_R, d + 1); put(&g->b, ")"); return;
    case 3: put(&g->b, "diag("); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 4:
      if (g->dim != 3) { put(&g->b, "cbind("); expr(g, SH_V, d + 1); put(&g->b, ", "); expr(g, SH_M, d + 1); put(&g->b, ")[, 1:%d]", g->dim); return; }
      put(&g->b, "cbind("); expr(g, SH_V, d + 1); put(&g->b, ", "); expr(g, SH_V, d + 1); put(&g->b, ", "); expr(g, SH_V, d + 1); put(&g->b, ")"); return;
    case 5:
      if (g->dim != 3) { put(&g->b, "rbind("); expr(g, SH_M, d + 1); put(&g->b, ", "); expr(g, SH_R, d + 1); put(&g->b, ")[2:%d, ]", g->dim + 1); return; }
      put(&g->b, "rbind("); expr(g, SH_R, d + 1); put(&g->b, ", "); expr(g, SH_R, d + 1); put(&g->b, ", "); expr(g, SH_R, d + 1); put(&g->b, ")"); return;
    case 6:
      if (P(3)) { put(&g->b, "abs("); expr(g, SH_M, d + 1); put(&g->b, ")"); return; }
      put(&g->b, "solve("); expr(g, SH_M, d + 1);
      if (g->dim != 3) put(&g->b, " + diag(matrix(%d, rows = %d, cols = 1)), ", 4 * g->dim, g->dim);
      else put(&g->b, " + diag(3) * 4, ");
      expr(g, SH_M, d + 1); put(&g->b, ")");
      return;
    default: put(&g->b, "matrix("); expr(g, SH_S, d + 1); put(&g->b, ", rows = %d, cols = %d)", g->dim, g->dim); return;
    }
  }
}

/* a condition: on numbers known while staging, or on staged values (data-dependent) */
static void cond(Gen *g) {
  switch (P(7)) {
  case 0: put(&g->b, "TRUE"); return;
  case 1: put(&g->b, "FALSE"); return;
  case 2: if (g->loops) { put(&g->b, "i%u == %u", 1 + P((unsigned)g->loops), 1 + P(3)); return; } put(&g->b, "TRUE"); return;
  case 3: put(&g->b, "nrow("); expr(g, (int)P(SH_N), 2); put(&g->b, ") > 2"); return;
  default:
    put(&g->b, "sum(");
    expr(g, (int)P(SH_N), 1);
    put(&g->b, ") %s ", P(2) ? ">" : "<");
    lit(g);
    return;
  }
}

static void block(Gen *g, int n);
static void unbrace(Gen *g, size_t open);
static void list_stmt(Gen *g, Var *t);
static void dml_stmt(Gen *g, Var *t);
static void frame_stmt(Gen *g, Var *t);

/* a variable that may be assigned (not a loop variable or counter) */
static Var *target(Gen *g) { return &g->vars[P((unsigned)g->nvars)]; }

static void stmt(Gen *g) {
  g->stmts++;
  ind(g);
  bool deep = g->depth >= 3 || g->stmts > MAX_STMTS || g->b.n > 6000;
  unsigned k = P(deep ? 8 : 21);
  Var *t = target(g);
  switch (k) {
  case 0: case 1: case 2:                   /* x = e, of its shape */
    put(&g->b, "%s = ", t->name);
    expr(g, t->sh, 0);
    break;
  case 3: case 4:                           /* left-indexing */
    if (is_rect(t->sh)) {                   /* a cell, W's column or row, T's row or column, C's cell */
      unsigned w = P(3);
      if (w == 0 && t->sh != SH_C) { put(&g->b, "%s[", t->name); index1(g); put(&g->b, ", "); index1(g); put(&g->b, "] = "); expr(g, SH_S, 1); break; }
      if (t->sh == SH_C) { put(&g->b, "%s[", t->name); index1(g); put(&g->b, "] = "); expr(g, SH_S, 1); break; }
      bool whole_col = (w == 1) == (t->sh == SH_W);   /* W[, k] = a column of n, T[k, ] = a row of n */
      if (whole_col) put(&g->b, t->sh == SH_W ? "%s[, %u] = " : "%s[%u, ] = ", t->name, 1 + P(3));
      else put(&g->b, t->sh == SH_W ? "%s[%u, ] = " : "%s[, %u] = ", t->name, 1 + P(3));
      if (whole_col) expr(g, t->sh == SH_W ? SH_V : SH_R, 1);
      else if (t->sh == SH_T) expr(g, SH_C, 1);
      else { put(&g->b, "t("); expr(g, SH_C, 1); put(&g->b, ")"); }
      break;
    }
    switch (t->sh) {
    case SH_S: put(&g->b, "%s = ", t->name); expr(g, SH_S, 0); break;
    case SH_V: case SH_R: put(&g->b, "%s[", t->name); index1(g); put(&g->b, "] = "); expr(g, SH_S, 1); break;
    default:
      switch (P(3)) {
      case 0: put(&g->b, "%s[", t->name); index1(g); put(&g->b, ", "); index1(g); put(&g->b, "] = "); expr(g, SH_S, 1); break;
      case 1: put(&g->b, "%s[%u, ] = ", t->name, 1 + P(3)); expr(g, SH_R, 1); break;
      default: put(&g->b, "%s[, %u] = ", t->name, 1 + P(3)); expr(g, SH_V, 1); break;
      }
    }
    break;
  case 5:                                   /* masked */
    if (t->sh == SH_S) { put(&g->b, "%s = -%s", t->name, t->name); break; }
    put(&g->b, "%s[%s %s ", t->name, t->name, P(2) ? ">" : "<=");
    lit(g);
    put(&g->b, "] = ");
    expr(g, SH_S, 1);
    break;
  case 6: {
    int ps = (int)P(SH_N);
    put(&g->b, g->dim > 9 && ps == SH_M ? "print(colSums(" : "print(");   /* (n x n printed: its column sums) */
    expr(g, ps, 1);
    put(&g->b, g->dim > 9 && ps == SH_M ? "))" : ")");
    break;
  }
  case 7:                                   /* a shape change */
    put(&g->b, "%s = ", t->name);
    t->sh = (int)P(SH_N);
    expr(g, t->sh, 1);
    break;
  case 8: case 9: case 10: {                /* for */
    int l = ++g->loops;
    put(&g->b, "%s (i%d in ", g->dml && P(3) == 0 ? "parfor" : "for", l);
    switch (P(5)) {
    case 0: put(&g->b, "1:%u", 1 + P(4)); break;
    case 1: put(&g->b, "1:2"); break;
    case 2: put(&g->b, "seq(1, 3)"); break;
    case 3:                                 /* a trip count from the data (a staged range) */
      put(&g->b, "1:(1 + (sum(");
      expr(g, (int)P(SH_N), 2);
      put(&g->b, ") > 0))");
      break;
    default:                                /* (n iterations: at most 3 for another n) */
      put(&g->b, g->dim != 3 ? "1:min(3, nrow(" : "1:nrow(");
      expr(g, (int)P(SH_N), 2);
      put(&g->b, g->dim != 3 ? "))" : ")");
      break;
    }
    put(&g->b, ") ");
    size_t open = g->b.n;
    put(&g->b, "{\n");
    block(g, 1 + (int)P(4));
    ind(g);
    put(&g->b, "}");
    unbrace(g, open);
    g->loops--;
    break;
  }
  case 11: {                                /* while, bounded by a counter no one else assigns */
    int l = ++g->loops;
    put(&g->b, "i%d = 0\n", l);
    ind(g);
    put(&g->b, "while (i%d < %u", l, 1 + P(3));
    if (P(2)) { put(&g->b, " && "); cond(g); }
    put(&g->b, ") {\n");
    g->indent++;
    ind(g);
    put(&g->b, "i%d = i%d + 1\n", l, l);
    g->indent--;
    block(g, 1 + (int)P(3));
    ind(g);
    put(&g->b, "}");
    g->loops--;
    break;
  }
  case 12: case 13: case 14: {              /* if, maybe else */
    put(&g->b, "if (");
    cond(g);
    put(&g->b, ") ");
    size_t open = g->b.n;
    put(&g->b, "{\n");
    block(g, (int)P(3));
    ind(g);
    put(&g->b, "}");
    unbrace(g, open);
    if (P(2)) {
      put(&g->b, " else ");
      open = g->b.n;
      put(&g->b, "{\n");
      block(g, (int)P(3));
      ind(g);
      put(&g->b, "}");
      unbrace(g, open);
    }
    break;
  }
  case 15:                                  /* an error, usually in a branch not taken */
    put(&g->b, "if (");
    if (P(2)) put(&g->b, "FALSE");
    else {
      put(&g->b, "sum(");
      expr(g, (int)P(SH_N), 1);
      put(&g->b, ") > 20");
    }
    put(&g->b, ") stop(\"boom\")");
    break;
  case 16:
    if (g->loops) { put(&g->b, "if ("); cond(g); put(&g->b, ") %s", P(2) ? "break" : "next"); break; }
    put(&g->b, "%s = ", t->name);
    expr(g, t->sh, 0);
    break;
  case 17:
    if (g->in_fn) { put(&g->b, "if ("); cond(g); put(&g->b, ") return("); expr(g, g->vars[0].sh, 1); put(&g->b, ")"); break; }
    put(&g->b, "%s = ", t->name);
    if (!call_fn(g, t->sh, 0)) expr(g, t->sh, 0);
    break;
  case 18:                                  /* a value nothing reads (dead code) */
    if (g->scope && P(2)) {                 /* (scope) a closure made again: another serial */
      if (!g->in_fn) { put(&g->b, "fm = mk("); expr(g, SH_S, 1); put(&g->b, ")"); break; }
      if (g->qvar) {
        g->qvar = g->nvars > 3 ? g->vars[3 + P((unsigned)(g->nvars - 3))].name : "b";
        put(&g->b, "q = function(w) w * %s + sum(%s)", lits[P(sizeof lits / sizeof *lits)], g->qvar);
        break;
      }
    }
    put(&g->b, "dead = ");
    expr(g, (int)P(SH_N), 0);
    break;
  case 19:                                  /* a list's element */
    if (g->frames && P(2)) { frame_stmt(g, t); break; }
    if (g->dml && P(2)) { dml_stmt(g, t); break; }
    if (g->lists && P(2)) { list_stmt(g, t); break; }
    if (!g->in_fn && P(2)) { put(&g->b, "L$a = "); expr(g, SH_S, 1); break; }
    if (!g->in_fn) { put(&g->b, "L$b = "); expr(g, SH_V, 1); break; }
    put(&g->b, "%s = ", t->name);
    expr(g, t->sh, 0);
    break;
  default:
    put(&g->b, "%s = ", t->name);
    expr(g, t->sh, 0);
    break;
  }
  put(&g->b, "\n");
}

/* (frames) a cell set, the frame made again from a matrix, its rows or columns reordered by
** binding its parts */
static void frame_stmt(Gen *g, Var *t) {
  switch (P(4)) {
  case 0: put(&g->b, "Fr[%u, %u] = ", 1 + P(3), 1 + P(3)); expr(g, SH_S, 1); return;
  case 1: put(&g->b, "Fr = as.frame("); expr(g, SH_M, 1); put(&g->b, ")"); return;
  case 2: put(&g->b, "Fr = rbind(Fr[2:nrow(Fr), ], Fr[1, ])"); return;
  default: put(&g->b, "Fr = cbind(Fr[, ncol(Fr)], Fr[, 1:(ncol(Fr) - 1)])"); return;
  }
}

/* (dml) d1's two results destructured into t (n x n) and a number, or t += e (DML's x = x + e) */
static void dml_stmt(Gen *g, Var *t) {
  Var *s = NULL;
  for (int i = 0; i < g->nvars && !s; i++)
    if (g->vars[i].sh == SH_S && &g->vars[i] != t) s = &g->vars[i];
  if (t->sh == SH_M && s && P(3)) {
    put(&g->b, "[%s, %s] = d1(", t->name, s->name);
    if (P(3) == 0) { put(&g->b, "k = "); expr(g, SH_S, 1); put(&g->b, ", X = "); expr(g, SH_M, 1); }
    else if (P(2)) expr(g, SH_M, 1);       /* k's default */
    else { expr(g, SH_M, 1); put(&g->b, ", "); expr(g, SH_S, 1); }
    put(&g->b, ")");
    return;
  }
  put(&g->b, "%s += ", t->name);
  expr(g, t->sh, 1);
}

/* (lists) P's items set, value_and_grad destructured into a number and t, a loop over a list */
static void list_stmt(Gen *g, Var *t) {
  switch (P(4)) {
  case 0: put(&g->b, "P$w = "); expr(g, SH_M, 1); return;
  case 1: put(&g->b, "P$c = "); expr(g, SH_V, 1); return;
  case 2: {
    Var *s = NULL;
    for (int i = 0; i < g->nvars && !s; i++)
      if (g->vars[i].sh == SH_S && &g->vars[i] != t) s = &g->vars[i];
    if (!s || g->nvars >= 16) break;
    put(&g->b, "[%s, %s] = value_and_grad(function(x) sum(", s->name, t->name);
    g->vars[g->nvars++] = (Var){ "x", t->sh };
    expr(g, (int)P(SH_N), 2);
    g->nvars--;
    put(&g->b, "))(");
    expr(g, t->sh, 1);
    put(&g->b, ")");
    return;
  }
  default:
    if (is_rect(t->sh)) break;
    put(&g->b, "for (e in list(");
    expr(g, t->sh, 2);
    put(&g->b, ", ");
    expr(g, t->sh, 2);
    put(&g->b, ")) %s = %s * 0.5 + e", t->name, t->name);
    return;
  }
  put(&g->b, "%s = ", t->name);
  expr(g, t->sh, 0);
}

/* The braced block put from offset open (its "{") to the end, a single statement written
** without braces when it is one line that is not an if (whose else could then bind to it), for
** about a third of them: a branch or loop body without braces is a block of its own under
** staging. Decided from the text so far, consuming no choice, so an input's program is the
** same but for braces. */
static void unbrace(Gen *g, size_t open) {
  if (g->b.oom || g->b.n <= open + 2 || (g->b.n + (size_t)g->stmts) % 3 != 0) return;
  char *s = g->b.p + open + 2, *e = g->b.p + g->b.n;   /* after "{\n" .. the end ("}") */
  while (s < e && *s == ' ') s++;
  char *nl = memchr(s, '\n', (size_t)(e - s));
  if (!nl || nl == s || memchr(nl + 1, '\n', (size_t)(e - nl - 1)) || !strncmp(s, "if", 2)) return;
  size_t len = (size_t)(nl - s);
  memmove(g->b.p + open, s, len);
  g->b.n = open + len;
  g->b.p[g->b.n] = 0;
}

static void block(Gen *g, int n) {
  g->indent++;
  g->depth++;
  for (int i = 0; i < n; i++) stmt(g);
  g->depth--;
  g->indent--;
}

static void function(Gen *g, Fn *f) {
  f->argsh[0] = (int)P(SH_N);
  f->argsh[1] = P(2) ? SH_S : (int)P(SH_N);
  if (g->rect && P(5) == 0) f->argsh[0] = SH_W + (int)P(3);   /* x of n x m, m x n or m x 1 */
  f->ressh = f->argsh[0];
  f->dflt = NULL;
  if (g->args && f->argsh[1] == SH_S && P(3) == 0) f->dflt = lits[P(sizeof lits / sizeof *lits)];
  if (f->dflt) put(&g->b, "%s = function(x, y = %s) {\n", f->name, f->dflt);
  else put(&g->b, "%s = function(x, y) {\n", f->name);
  Var saved[16];
  int ns = g->nvars;
  memcpy(saved, g->vars, sizeof saved);
  g->vars[0] = (Var){ "x", f->argsh[0] };   /* vars[0] is the result */
  g->vars[1] = (Var){ "y", f->argsh[1] };
  g->vars[2] = (Var){ "z", SH_M };
  g->nvars = 3;
  for (int i = 0; i < g->nglobals && g->nvars < 8; i++)   /* globals: read, or copied on write */
    if (P(2)) g->vars[g->nvars++] = saved[i];
  g->in_fn = true;
  g->indent++;
  ind(g);
  if (g->dim != 3) put(&g->b, "z = diag(matrix(1, rows = %d, cols = 1))\n", g->dim);
  else put(&g->b, "z = diag(3)\n");
  if (P(2)) {
    ind(g);
    put(&g->b, "h = function(w) { w * %s + z[1, 1] }\n", f->argsh[1] == SH_S ? "y" : "2");
    g->closure = true;
  }
  if (g->scope && P(4)) {                   /* q reads a name this body may assign later */
    g->qvar = g->nvars > 3 ? g->vars[3 + P((unsigned)(g->nvars - 3))].name : "a";
    ind(g);
    switch (P(3)) {
    case 0: put(&g->b, "q = function(w) w * 0.5 + sum(%s)\n", g->qvar); break;
    case 1: put(&g->b, "q = function(w) w - mean(%s) * z[1, 1]\n", g->qvar); break;
    default: put(&g->b, "q = function(w) { s = sum(%s); if (s > 0) w + s else w * 2 }\n", g->qvar); break;
    }
    if (P(2)) { ind(g); put(&g->b, "jq = jit(q)\n"); g->jq = true; }
  }
  g->indent--;
  block(g, 1 + (int)P(4));
  g->indent++;
  ind(g);
  if (g->calls && P(3)) {                  /* progen_grad's F: a result that most often reads x */
    put(&g->b, "%s(x) * ", P(2) ? "sum" : "mean");
    expr(g, f->ressh, 1);
  } else
    expr(g, f->ressh, 1);
  put(&g->b, "\n");
  g->indent--;
  put(&g->b, "}\n");
  g->in_fn = false;
  g->closure = false;
  g->qvar = NULL;
  g->jq = false;
  f->ressh = g->vars[0].sh;                 /* (a shape change of x changes the result's) */
  memcpy(g->vars, saved, sizeof saved);
  g->nvars = ns;
  if (P(2)) { put(&g->b, "j%s = jit(%s)\n", f->name, f->name); f->jit = true; }
  if (P(2)) {                               /* grad(f), jit(grad(f)) or grad(jit(f)) */
    unsigned k = P(3);
    const char *in = k == 2 && f->jit ? "j" : "";
    put(&g->b, "g%s = %sgrad(function(x, y) sum(%s%s(x, y)))%s\n", f->name, k == 1 ? "jit(" : "", in, f->name,
        k == 1 ? ")" : "");
    f->grad = true;
  }
}

/* the globals every program starts with, and nfns functions f1.. */
static void preamble(Gen *g, int nfns) {
  static const Var globals[] = { { "a", SH_S }, { "b", SH_S }, { "u", SH_V }, { "v", SH_V },
                                 { "r", SH_R }, { "M", SH_M }, { "N", SH_M } };
  if (g->dim != 3) {                        /* the same roles at n: M diagonally dominant, N 1 cell in 5 */
    int n = g->dim;
    put(&g->b, "a = 1.5\nb = -2\nu = seq(1, %d)\nv = sin(seq(1, %d))\nr = t(cos(seq(1, %d) * 2))\n"
               "M = matrix(seq(1, %d) %%%% 3, rows = %d, cols = %d) + diag(matrix(%d, rows = %d, cols = 1))\n"
               "N = matrix((seq(1, %d) %%%% 5 == 1) * (seq(1, %d) %%%% 4 - 1.5), rows = %d, cols = %d)\ndead = 0\n"
               "L = list(a = 1, b = seq(1, %d))\n", n, n, n, n * n, n, n, 2 * n, n, n * n, n * n, n, n, n);
  } else
    put(&g->b, "a = 1.5\nb = -2\nu = [1; 2; 3]\nv = [0.5; -1; 2]\nr = [1, -1, 2]\n"
               "M = [2, 1, 0; 1, 3, 1; 0, 1, 4]\nN = [1, 0, 2; 0, 1, 0; -1, 2, 1]\ndead = 0\n"
               "L = list(a = 1, b = [1; 2; 3])\n");
  g->nglobals = g->nvars = (int)(sizeof globals / sizeof *globals);
  memcpy(g->vars, globals, sizeof globals);
  if (g->rect) {                            /* W n x m, C m x 1 */
    int n = g->dim, m = g->m;
    put(&g->b, "W = matrix(sin(seq(1, %d) * 0.7) + 0.5, rows = %d, cols = %d)\nC = seq(1, %d) / %d - 0.3\n", n * m, n, m, m, m);
    g->vars[g->nvars++] = (Var){ "W", SH_W };
    g->vars[g->nvars++] = (Var){ "C", SH_C };
    g->nglobals = g->nvars;
  }
  if (g->scope)
    put(&g->b, "mk = function(k) { s = k * 2; function(w) w * s + k }\nap = function(f, x) f(x)\n"
               "rf = function(x, n) { if (n <= 0) return(x); rf(x * 0.5 + 1, n - 1) }\nfm = mk(0.5)\n");
  if (g->dml) {                             /* d1(X, k): a DML function of two results */
    Var saved[16];
    int ns = g->nvars;
    memcpy(saved, g->vars, sizeof saved);
    g->vars[0] = (Var){ "X", SH_M };
    g->vars[1] = (Var){ "k", SH_S };
    g->nvars = 2;
    g->in_fn = true;
    g->dml = false;                         /* (its body calls no d1) */
    put(&g->b, "d1 = function(matrix[double] X, double k = 1.5) return (matrix[double] R, double s) {\n");
    block(g, (int)P(3));
    g->indent++;
    ind(g);
    put(&g->b, "R = ");
    expr(g, SH_M, 1);
    put(&g->b, "\n");
    ind(g);
    put(&g->b, "s = sum(R * R) * 0.01 + k\n");
    g->indent--;
    put(&g->b, "}\n");
    g->in_fn = false;
    g->dml = true;
    memcpy(g->vars, saved, sizeof saved);
    g->nvars = ns;
  }
  if (g->frames) put(&g->b, "Fr = as.frame(M)\n");
  if (g->lists)
    put(&g->b, "P = list(w = M * 0.5, c = v + 1)\npl = function(p, x) sum(p$w %%*%% x) + sum(p$c * tanh(x))\n"
               "gpl = grad(pl)\njpl = jit(pl)\npf = function(x) list(s = sum(x), m = x * 2)\n");
  g->nfns = nfns;
  for (int i = 0; i < g->nfns; i++) {
    snprintf(g->fns[i].name, sizeof g->fns[i].name, "f%d", (i + 1) % 1000);
    function(g, &g->fns[i]);
  }
}

/* a generator of programs at size dim (fd: progen_grad's), its preamble written */
static void gen_begin(Gen *g, Pick *p, int dim, bool fd, unsigned flags) {
  memset(g, 0, sizeof *g);
  g->p = p;
  g->dim = dim;
  g->wide = flags & PG_WIDE;
  g->rect = flags & PG_RECT;
  g->edge = flags & PG_EDGE;
  g->args = flags & PG_ARGS;
  g->scope = flags & PG_SCOPE;
  g->lists = flags & PG_LISTS;
  g->dml = flags & PG_DML;
  g->frames = flags & PG_FRAMES;
  g->m = dim == 3 ? 4 : dim / 2 + 1;
  g->fd = fd;
  preamble(g, (int)P(3));
}

char *progen(Pick *p, size_t *len) { return progen_dim(p, len, 3, 0); }

char *progen_dim(Pick *p, size_t *len, int dim, unsigned flags) {
  Gen G, *g = &G;
  gen_begin(g, p, dim, false, flags);
  int n = 1 + (int)P(10);
  for (int i = 0; i < n && g->stmts < MAX_STMTS; i++) stmt(g);
  if (dim > 9)                              /* n x n printed: column sums, and sums of squares by row */
    put(&g->b, "print(a)\nprint(b)\nprint(u)\nprint(v)\nprint(r)\nprint(colSums(M))\nprint(rowSums(M * M))\n"
               "print(colSums(N))\nprint(rowSums(N * N))\nprint(L$a)\nprint(L$b)\n");
  else
    put(&g->b, "print(a)\nprint(b)\nprint(u)\nprint(v)\nprint(r)\nprint(M)\nprint(N)\nprint(L$a)\nprint(L$b)\n");
  if (g->rect) put(&g->b, dim > 9 ? "print(colSums(W))\nprint(rowSums(W * W))\nprint(C)\n" : "print(W)\nprint(C)\n");
  if (g->lists) put(&g->b, dim > 9 ? "print(colSums(P$w))\nprint(P$c)\n" : "print(P$w)\nprint(P$c)\n");
  if (g->frames) put(&g->b, dim > 9 ? "print(colSums(as.matrix(Fr)))\n" : "print(as.matrix(Fr))\n");
  if (g->b.oom) { free(g->b.p); return NULL; }
  *len = g->b.n;
  return g->b.p;
}

/* ---- gradients against finite differences (progen_grad) ---- */

/* values of the point where a gradient is checked: none an integer, a half or another program
** literal, so no kink of abs, floor, round, %%, min or max sits at the point by construction;
** x's entries are distinct and y's come from another list, so no two tie (min(y, max(x, y))
** at x == y is flat in x, but its gradient there is one of the arguments'). */
static const char *xpts[] = { "0.37", "-1.21", "0.83", "1.46", "-0.62", "0.19", "-0.48", "2.13", "-1.74", "0.71", "-0.93" };
static const char *ypts[] = { "0.53", "-1.37", "1.12", "-0.29", "0.91", "-0.77", "1.63", "-0.11", "0.67", "-2.03" };

static void point(Gen *g, int sh, const char *const *pts, unsigned np) {   /* np >= 9 */
  int n = sh == SH_S ? 1 : sh == SH_M ? 9 : 3;
  unsigned used = 0;
  put(&g->b, "%s", sh == SH_S ? "" : "[");
  for (int i = 0; i < n; i++) {
    unsigned k = P(np);
    while (used >> k & 1) k = (k + 1) % np;  /* distinct */
    used |= 1u << k;
    put(&g->b, "%s%s", pts[k], i == n - 1 ? "" : sh == SH_V || (sh == SH_M && i % 3 == 2) ? "; " : ", ");
  }
  put(&g->b, "%s", sh == SH_S ? "" : "]");
}

/* fd_one compares gk, the gradient's entry k, with central differences of f at x0 along the
** unit step e, of lengths h and 0.29 h (not a divisor of h, so x %% c with a period c that
** divides h is not taken for flat). An entry is checked only where f is finite and smooth at
** that scale: the two central differences agree (a kink or a jump between the points, or
** rounding noise, makes them differ) and so do the one-sided ones (a kink at x0 itself gives
** equal central differences, the mean of the two slopes). Not compared: a gradient entry that
** is not finite (a zero adjoint meeting an infinite partial derivative, max(-Inf from a
** division by zero, y) at y, gives NaN here as in JAX and PyTorch where the derivative is
** finite); f, its differences or the gradient beyond 1e8 (round and floor then step many times
** between the points, a staircase whose differences look smooth; x %% y with y tiny has a
** period far below h and a derivative -floor(x / y) in y); a nonzero f below 1e-20 (the same); and an f that did not change at all at either step
** (flat, or its change lost to rounding inside: (-2.5e28 + x) + 2.5e28). Forward mode is checked
** against the gradient at every entry where both are finite, whether the differences are smooth
** or not: jvp along the entry's unit step equals gk to 1e-6 relative (not where f is beyond 1e8
** or did not change: there the two modes' sums cancel differently too). */
static const char fd_harness[] =
    "fd_one = function(f, x0, e, h, gk, k) {\n"
    "  h2 = 0.29 * h\n"
    "  f0 = f(x0)\n  fp = f(x0 + h * e)\n  fm = f(x0 - h * e)\n  fp2 = f(x0 + h2 * e)\n  fm2 = f(x0 - h2 * e)\n"
    "  if (is.finite(f0) & is.finite(fp) & is.finite(fm) & is.finite(fp2) & is.finite(fm2)) {\n"
    "    noise = 1e3 * 2.2e-16 * (abs(f0) + abs(fp) + abs(fm)) / h2\n"
    "    c1 = (fp - fm) / (2 * h)\n    c2 = (fp2 - fm2) / (2 * h2)\n"
    "    dr = (fp - f0) / h\n    dl = (f0 - fm) / h\n"
    "    tol = 1e-4 * (1 + abs(c2)) + noise\n"
    "    smooth = abs(c1 - c2) < 0.1 * tol & abs(dr - dl) < tol\n"
    "    sane = abs(f0) < 1e8 & abs(c2) < 1e8 & abs(gk) < 1e8 & (f0 == 0 | abs(f0) > 1e-20) & (fp != fm | fp2 != fm2)\n"
    "    if (smooth & sane & is.finite(gk) & !(abs(gk - c2) <= tol)) print(paste(\"FDMISMATCH entry\", k, \"grad\", gk, \"differences\", c2))\n"
    "  }\n"
    "  tk = jvp(f, x0, e)[[2]]\n"
    "  if (is.finite(gk) & is.finite(tk) & abs(gk) < 1e8 & abs(f0) < 1e8 & (fp != fm | fp2 != fm2) & !(abs(tk - gk) <= 1e-6 * (1 + abs(gk)))) print(paste(\"FDMISMATCH entry\", k, \"grad\", gk, \"jvp\", tk))\n"
    "}\n";

/* hd_one does the same for the Hessian's column Hk (a column x only): central differences of
** the gradient, each entry compared where it is smooth at the step's scale, as in fd_one; and
** forward over reverse, jvp of the gradient along e, to 1e-6 relative. */
static const char hd_harness[] =
    "hd_one = function(f, x0, e, h, Hk, k) {\n"
    "  h2 = 0.29 * h\n"
    "  gf = grad(f)\n"
    "  g0 = gf(x0)\n  gp = gf(x0 + h * e)\n  gm = gf(x0 - h * e)\n  gp2 = gf(x0 + h2 * e)\n  gm2 = gf(x0 - h2 * e)\n"
    "  c1 = (gp - gm) / (2 * h)\n  c2 = (gp2 - gm2) / (2 * h2)\n"
    "  dr = (gp - g0) / h\n  dl = (g0 - gm) / h\n"
    "  tol = 1e-4 * (1 + abs(c2)) + 1e3 * 2.2e-16 * (abs(g0) + abs(gp) + abs(gm)) / h2\n"
    "  ok = is.finite(c1) & is.finite(c2) & is.finite(Hk) & abs(c1 - c2) < 0.1 * tol & abs(dr - dl) < tol & abs(g0) < 1e8 & abs(c2) < 1e8 & abs(Hk) < 1e8 & (gp != gm | gp2 != gm2)\n"
    "  if (sum(ok & !(abs(Hk - c2) <= tol)) > 0) print(paste(\"FDMISMATCH Hessian column\", k, \"differs from the gradient's differences\"))\n"
    "  tk = jvp(gf, x0, e)[[2]]\n"
    "  if (sum(is.finite(Hk) & is.finite(tk) & abs(Hk) < 1e8 & !(abs(tk - Hk) <= 1e-6 * (1 + abs(Hk)))) > 0) print(paste(\"FDMISMATCH Hessian column\", k, \"differs from jvp of the gradient\"))\n"
    "}\n";

/* a value of shape sh at n (dim != 3, or a rectangular shape): a wave around c, no entry an
** integer or a half */
static void big_point(Gen *g, int sh, double c, double w) {
  int r = rows_of(g, sh), k = cols_of(g, sh);
  if (sh == SH_S) { put(&g->b, "%.2f", c + 0.013); return; }
  put(&g->b, "matrix(%.2f + 0.9 * sin(seq(1, %d) * %.2f), rows = %d, cols = %d)", c, r * k, w, r, k);
}

char *progen_grad_dim(Pick *p, size_t *len, int dim, unsigned flags) {
  Gen G, *g = &G;
  gen_begin(g, p, dim, true, flags);
  Fn F = { .name = "F" };
  g->calls = true;
  function(g, &F);
  g->calls = false;
  put(&g->b, "x0 = ");
  if (dim != 3 || is_rect(F.argsh[0])) big_point(g, F.argsh[0], 0.37, 1.73);
  else point(g, F.argsh[0], xpts, sizeof xpts / sizeof *xpts);
  put(&g->b, "\ny0 = ");
  if (dim != 3) big_point(g, F.argsh[1], -0.29, 0.61);
  else point(g, F.argsh[1], ypts, sizeof ypts / sizeof *ypts);
  put(&g->b, "\nfs = function(x) sum(%s(x, y0))\n", F.jit && P(2) ? "jF" : "F");
  put(&g->b, "gr = grad(fs)(x0)\nprint(gr)\n%s", fd_harness);
  if (dim != 3)                             /* n x n entries: two directions, not every entry */
    put(&g->b, "if (nrow(gr) != nrow(x0) | ncol(gr) != ncol(x0)) print(\"FDMISMATCH shape\")\n"
               "for (t in 1:2) {\n"
               "  e = x0 * 0 + cos(matrix(seq(1, length(x0)), rows = nrow(x0), cols = ncol(x0)) * (t + 0.41))\n"
               "  fd_one(fs, x0, e, 1e-6 * max(1, max(abs(x0))), sum(gr * e), t)\n"
               "}\n");
  else if (F.argsh[0] == SH_S)
    put(&g->b, "fd_one(fs, x0, 1, 1e-6 * max(1, abs(x0)), gr, 1)\n");
  else
    put(&g->b, "if (nrow(gr) != nrow(x0) | ncol(gr) != ncol(x0)) print(\"FDMISMATCH shape\")\n"
               "for (j in 1:ncol(x0)) {\n  for (i in 1:nrow(x0)) {\n"
               "    e = x0 * 0\n    e[i, j] = 1\n"
               "    fd_one(fs, x0, e, 1e-6 * max(1, abs(x0[i, j])), gr[i, j], 10 * i + j)\n"
               "  }\n}\n");
  if (F.argsh[0] == SH_V && dim == 3)       /* second order: the Hessian, column by column */
    put(&g->b, "%sH = hessian(fs)(x0)\nprint(H)\n"
               "for (j in 1:3) {\n  e = x0 * 0\n  e[j] = 1\n  hd_one(fs, x0, e, 1e-6 * max(1, abs(x0[j])), H[, j], j)\n}\n", hd_harness);
  if (g->b.oom) { free(g->b.p); return NULL; }
  *len = g->b.n;
  return g->b.p;
}
