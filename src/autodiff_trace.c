/*
** autodiff_trace.c — trace_grad(f, x1, x2, ...), the teaching tables of LANGUAGE.md §11: the
** evaluation trace of f at a point in the layout of Baydin et al., "Automatic Differentiation
** in Machine Learning: a Survey" (the f(x1, x2) = ln(x1) + x1*x2 - sin(x2) example at (2, 5)).
** f runs once on boxed numbers on a fresh tape (autodiff.c); every recorded node becomes a row
** v_i = op(earlier v's) = value of the forward primal trace. Then either the reverse adjoint
** trace (v̄_j = v̄_j + v̄_i * ∂v_i/∂v_j, node by node from the result down to the inputs) or,
** with mode="forward", the forward tangent trace (v̇_i = Σ v̇_j * ∂v_i/∂v_j, computed here by
** walking the tape forward). The partial derivatives of each op, as a number and as text in
** terms of earlier v's, come from one switch (partial()).
** Two phases: phase 1 may throw (it calls f, checks every node, runs the real backward pass
** for the returned gradient) and keeps everything on the temp stack, the tape's numbers in a
** scratch matrix; phase 2 only computes with doubles and prints, and cannot throw.
*/
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "autodiff.h"
#include "backend/scalar.h"
#include "builtins.h"
#include "err.h"
#include "interp/interp.h"
#include "mem.h"
#include "print.h"
#include "tensor.h"

enum { MAX_ARGS = 64, MAX_OPS = 2000 };
/* The scratch matrix: one row of numbers per tape node. */
enum { C_OP, C_NIN, C_IN0, C_A0 = C_IN0 + 3, C_Y = C_A0 + 3, C_NIDX, C_KIND, C_Q, NCOL };
enum { CELL = 512 };                 /* one table cell's text (longer text is cut) */

typedef struct Ctx {
  const double *m;                   /* scratch: NCOL numbers per node */
  int nargs, nnodes, root;           /* leaves are nodes 0..nargs-1; root -1: y is a constant */
  int digits;
  bool ascii;
  const char *const *labels;         /* the arguments' names */
  double yconst;                     /* y when root is -1 */
  const char *yname;                 /* "y", or "out" when an argument is called y */
  const Tape *t;                     /* the tape (a loop's custom node: its inputs and counts) */
  const double *map;                 /* tape node -> row (-1: none) */
} Ctx;

#define M(c, i, col) ((c)->m[(size_t)(i) * NCOL + (col)])
#define OPOF(c, i) ((int)M(c, i, C_OP))
#define NINOF(c, i) ((int)M(c, i, C_NIN))
#define INOF(c, i, k) ((int)M(c, i, C_IN0 + (k)))
#define AOF(c, i, k) M(c, i, C_A0 + (k))
#define YOF(c, i) M(c, i, C_Y)
#define KINDOF(c, i) ((int)M(c, i, C_KIND))
#define CUSTOF(c, i) ((c)->t->nodes[(int)M(c, i, C_Q)].cust)

/* ---- phase 1 helpers ---- */
static bool is_scalar(Value v) {
  v = ad_primal(v);
  return v.t == VT_NUM || v.t == VT_BOOL || (v.t == VT_MAT && tensor_numel(v.u.m) == 1);
}

static double scalar_of(Value v) {
  v = ad_primal(v);
  if (v.t == VT_NUM) return v.u.n;
  if (v.t == VT_BOOL) return v.u.b;
  return tensor_data(v.u.m)[0];
}

/* The ops the tables know: scalar arithmetic and math, and the shape ops that are the
** identity on a number (sum, t, x[1], ...). */
static bool supported(int op) {
  if ((op_info[op].flags & (OPF_EW | OPF_DIFF)) == (OPF_EW | OPF_DIFF)) return true;   /* ops.def's rules */
  switch (op) {
  case OP_MATMUL: case OP_TRANSPOSE: case OP_RESHAPE: case OP_INDEX:
  case OP_SCATTER: case OP_SUM: case OP_ROWSUMS: case OP_COLSUMS: case OP_PROD: case OP_MAX:
  case OP_MIN: case OP_ROWMAXS: case OP_ROWMINS: case OP_COLMAXS: case OP_COLMINS:
  case OP_CUMSUM: case OP_CUMPROD: case OP_DIAG: case OP_IFELSE:
  case OP_CUMMAX: case OP_CUMMIN: case OP_ROWPRODS: case OP_COLPRODS:
    return true;
  default:
    return false;
  }
}

/* The shape ops that are the identity on a number (their derivative is 1). */
static bool identity_op(int op) {
  switch (op) {
  case OP_TRANSPOSE: case OP_RESHAPE: case OP_INDEX: case OP_SCATTER: case OP_SUM: case OP_ROWSUMS: case OP_COLSUMS:
  case OP_PROD: case OP_MAX: case OP_MIN: case OP_ROWMAXS: case OP_ROWMINS: case OP_COLMAXS:
  case OP_COLMINS: case OP_CUMSUM: case OP_CUMPROD: case OP_DIAG:
  case OP_CUMMAX: case OP_CUMMIN: case OP_ROWPRODS: case OP_COLPRODS:
    return true;
  default:
    return false;
  }
}

/* ---- text: names, numbers, marks ---- */
/* buf = the strings up to NULL one after another, cut to fit n bytes (at a character). */
static void join(char *buf, size_t n, ...) {
  va_list ap;
  size_t len = 0;
  bool cut = false;
  va_start(ap, n);
  for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
    for (; *s; s++) {
      if (len + 1 >= n) { cut = true; break; }
      buf[len++] = *s;
    }
  va_end(ap);
  if (cut) {
    while (len > 0 && ((unsigned char)buf[len - 1] & 0xC0) == 0x80) len--;
    if (len > 0 && (unsigned char)buf[len - 1] >= 0xC0) len--;
  }
  buf[len] = '\0';
}

static void vname(const Ctx *c, int node, char *buf, size_t n) {
  snprintf(buf, n, "v_%d", node - c->nargs + 1);
}

static void numtxt(const Ctx *c, double x, bool infix, char *buf, size_t n) {
  char t[64];
  fmt_num(t, sizeof t, x, c->digits);
  if (infix && t[0] == '-') join(buf, n, "(", t, ")", NULL);
  else join(buf, n, t, NULL);
}

/* name with a bar (adjoint, mark 0) or a dot (tangent, mark 1): v̄_5, ẋ1 (a combining mark
** after the first letter of a short name), vbar_5 / xdot1 in ASCII, bar(alpha) otherwise. */
static void marked(const Ctx *c, const char *name, int mark, char *buf, size_t n) {
  bool simple = (name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z');
  for (const char *p = name + 1; simple && *p; p++)
    simple = (*p >= '0' && *p <= '9') || *p == '_' || *p == '-';
  const char *m = c->ascii ? (mark ? "dot" : "bar") : (mark ? "\xCC\x87" : "\xCC\x84");
  char first[2] = { name[0], '\0' };
  if (simple) join(buf, n, first, m, name + 1, NULL);
  else join(buf, n, mark ? "dot(" : "bar(", name, ")", NULL);
}

/* Input k of node i: its name v_j, or its value (numeric, or a constant operand). */
static void ref(const Ctx *c, int i, int k, bool numeric, bool infix, char *buf, size_t n) {
  int j = INOF(c, i, k);
  if (!numeric && j >= 0) vname(c, j, buf, n);
  else numtxt(c, AOF(c, i, k), infix, buf, n);
}

static void self(const Ctx *c, int i, bool numeric, bool infix, char *buf, size_t n) {
  if (numeric) numtxt(c, YOF(c, i), infix, buf, n);
  else vname(c, i, buf, n);
}

/* The operation of node i in terms of its inputs: "ln(v_-1)", or "ln(2)" when numeric
** (nothing for the identity ops: "t(3)" would only repeat the value). */
static void op_text(const Ctx *c, int i, bool numeric, char *buf, size_t n) {
  char a[128], b[128], d[128];
  int op = OPOF(c, i);
  buf[0] = '\0';
  if (numeric && identity_op(op)) return;
  switch (op) {
  case OP_ADD: case OP_SUB: case OP_MUL: case OP_DIV: case OP_POW: case OP_MOD: case OP_MODDML: case OP_MULZ:
  case OP_MATMUL:
    ref(c, i, 0, numeric, true, a, sizeof a);
    ref(c, i, 1, numeric, true, b, sizeof b);
    join(buf, n, a, " ", op == OP_MULZ ? "*" : op_info[op].sym, " ", b, NULL);
    return;
  case OP_MIN2: case OP_MAX2:
    ref(c, i, 0, numeric, false, a, sizeof a);
    ref(c, i, 1, numeric, false, b, sizeof b);
    join(buf, n, op_info[op].sym, "(", a, ", ", b, ")", NULL);
    return;
  case OP_IFELSE:
    ref(c, i, 0, numeric, false, a, sizeof a);
    ref(c, i, 1, numeric, false, b, sizeof b);
    ref(c, i, 2, numeric, false, d, sizeof d);
    join(buf, n, "ifelse(", a, ", ", b, ", ", d, ")", NULL);
    return;
  default:
    break;
  }
  ref(c, i, 0, numeric, op == OP_NEG || op == OP_INDEX, a, sizeof a);
  switch (op) {
  case OP_NEG: join(buf, n, "-", a, NULL); break;
  case OP_LOG: join(buf, n, "ln(", a, ")", NULL); break;
  case OP_INDEX: join(buf, n, a, M(c, i, C_NIDX) == 1 ? "[1]" : "[1, 1]", NULL); break;
  case OP_SCATTER: join(buf, n, "[", a, "]", NULL); break;
  default: join(buf, n, op_info[op].sym, "(", a, ")", NULL); break;
  }
}

/* ---- the ONE switch of partial derivatives ---- */
/* How a partial is written next to an adjoint or tangent t: P_ONE "t * 1" (a tangent "t"),
** P_MONE "t * (-1)" ("-t"), P_ZERO "t * 0", P_DIV "t / text", P_TERM "t * text",
** P_PAREN "t * (text)". */
typedef enum { P_ONE, P_MONE, P_ZERO, P_DIV, P_TERM, P_PAREN, P_SPECIAL } PKind;

static PKind unit(double d, char *txt, size_t n, const Ctx *c) {
  if (d == 1) return P_ONE;
  if (d == 0) return P_ZERO;
  numtxt(c, d, false, txt, n);
  return P_TERM;
}

/* A partial's text from its template in ops.def: $a and $b are the inputs and $y the result as
** infix terms (a negative number in parentheses), $A and $B the inputs as they are. */
static void from_template(const Ctx *c, int i, bool numeric, const char *tmpl, char *txt, size_t n) {
  size_t len = 0;
  txt[0] = '\0';
  for (const char *p = tmpl; *p && len + 1 < n; p++) {
    char piece[128];
    if (p[0] == '$' && p[1]) {
      switch (p[1]) {
      case 'a': case 'A': ref(c, i, 0, numeric, p[1] == 'a', piece, sizeof piece); break;
      case 'b': case 'B': ref(c, i, 1, numeric, p[1] == 'b', piece, sizeof piece); break;
      default: self(c, i, numeric, true, piece, sizeof piece); break;
      }
      p++;
    } else {
      piece[0] = *p;
      piece[1] = '\0';
    }
    join(txt + len, n - len, piece, NULL);
    len = strlen(txt);
  }
}

/* The partials whose text ops.def leaves to the tables (kind SPECIAL): a power's with respect
** to its base (a constant exponent is written out: 3 * v_0^2, 2 * v_0), min/max's (1, 0.5 on
** a tie, or 0, as numbers). */
static PKind special(const Ctx *c, int i, int k, bool numeric, char *txt, size_t n, double d) {
  char a[128], b[128];
  double bv = NINOF(c, i) > 1 ? AOF(c, i, 1) : 0;
  ref(c, i, 0, numeric, true, a, sizeof a);
  ref(c, i, 1, numeric, true, b, sizeof b);
  if (OPOF(c, i) != OP_POW) return unit(d, txt, n, c);
  if (INOF(c, i, 1) < 0) {
    char e[64];
    if (bv == 0) return P_ZERO;
    if (bv == 1) return P_ONE;
    numtxt(c, bv - 1, true, e, sizeof e);
    if (bv == 2) join(txt, n, "2 * ", a, NULL);
    else join(txt, n, b, " * ", a, "^", e, NULL);
    return bv < 0 ? P_PAREN : P_TERM;
  }
  join(txt, n, b, " * ", a, "^(", b, " - 1)", NULL);
  (void)k;
  return P_TERM;
}

/* The partial of node i with respect to input k as written: its kind from ops.def (or the
** tables' own, SPECIAL), its text from the template. */
static PKind written(const Ctx *c, int i, int k, bool numeric, const char *tmpl, PKind kind, char *txt, size_t n,
                     double d) {
  switch (kind) {
  case P_ONE: case P_MONE: case P_ZERO: return kind;
  case P_SPECIAL: return special(c, i, k, numeric, txt, n, d);
  default: from_template(c, i, numeric, tmpl, txt, n); return kind;
  }
}

/* ∂v_i/∂(input k): its value in *d and its text in txt (in v's, or in numbers when numeric).
** An elementwise op's value and text come from its rule in ops.def, the rule the backward
** and forward passes use (autodiff.c), so the tables cannot disagree with grad: conventions
** included (ties of min/max split evenly, steps and kinks have derivative 0). */
static PKind partial(const Ctx *c, int i, int k, bool numeric, char *txt, size_t n, double *d) {
  char a[128], b[128];
  double av = AOF(c, i, 0), bv = NINOF(c, i) > 1 ? AOF(c, i, 1) : 0, yv = YOF(c, i);
  ref(c, i, 0, numeric, true, a, sizeof a);
  if (NINOF(c, i) > 1) ref(c, i, 1, numeric, true, b, sizeof b);
  else b[0] = '\0';
  txt[0] = '\0';
  switch (OPOF(c, i)) {
#define A av
#define B bv
#define Y yv
#define K(x) (x)
#define U(OP, e) sc_unary(OP_##OP, e)
#define BI(OP, e1, e2) sc_binary(OP_##OP, e1, e2)
#define D_ONE 1.0
#define D_NEG (-1.0)
#define D_ZERO 0.0
#define D_MUL(e) (e)
#define D_NMUL(e) (-(e))
#define D_DIV(e) (1 / (e))
#define D_NDIV(e) (-1 / (e))
#define D_NONE 0.0
#define OP(NAME, SYM, ARITY, FLAGS)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) \
  case OP_##NAME: *d = RULE; return written(c, i, k, numeric, TXT, P_##KIND, txt, n, *d);
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) \
  case OP_##NAME:                                                              \
    *d = k ? RULE_Y : RULE_X;                                                  \
    return written(c, i, k, numeric, k ? TXT_Y : TXT_X, k ? P_##KIND_Y : P_##KIND_X, txt, n, *d);
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
#include "ops/rules_undef.h"
  case OP_MATMUL:                            /* of numbers (1x1): a product */
    *d = k ? av : bv;
    join(txt, n, k ? a : b, NULL);
    return P_TERM;
  case OP_IFELSE:                            /* nothing to the test or the branch not taken */
    *d = k == 0 ? 0 : k == 1 ? (av != 0) : (av == 0);
    return *d ? P_ONE : P_ZERO;
  default:                                   /* sum, t, x[1], ...: the identity on a number */
    *d = 1;
    return P_ONE;
  }
}

/* t (an adjoint or tangent, as text) times the partial, as written in the tables. */
static void times(const char *t, PKind pk, const char *txt, bool tangent, char *buf, size_t n) {
  switch (pk) {
  case P_ONE: join(buf, n, t, tangent ? "" : " * 1", NULL); break;
  case P_MONE: if (tangent) join(buf, n, "-", t, NULL); else join(buf, n, t, " * (-1)", NULL); break;
  case P_ZERO: join(buf, n, t, " * 0", NULL); break;
  case P_DIV: join(buf, n, t, " / ", txt, NULL); break;
  case P_TERM: join(buf, n, t, " * ", txt, NULL); break;
  case P_PAREN: case P_SPECIAL: join(buf, n, t, " * (", txt, ")", NULL); break;   /* (written() resolves SPECIAL) */
  }
}

/* a * b where 0 times anything (Inf, NaN) is 0, as the backward pass multiplies (MULZ). */
static double mulz(double a, double b) { return a == 0 ? 0 : a * b; }

/* ---- tables: measured, then printed ---- */
typedef struct Table {
  bool print;
  int w[3];                          /* widths of the first three columns */
  FILE *out;
} Table;

/* Display width of UTF-8 text: combining marks (U+0300..U+036F) take no column. */
static int width(const char *s) {
  int w = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if ((*p & 0xC0) == 0x80) continue;
    if (*p == 0xCC || (*p == 0xCD && p[1] < 0xB0)) continue;
    w++;
  }
  return w;
}

static void pad(FILE *out, int n) { for (int i = 0; i < n; i++) fputc(' ', out); }

/* One row "c0 = c1 = c2 = value" with the columns aligned; an empty c1 or c2 is left out. */
static void emit(Table *tb, const char *c0, const char *c1, const char *c2, const char *val) {
  const char *cell[3] = { c0, c1, strcmp(c2, val) == 0 ? "" : c2 };   /* "= 5 = 5": once */
  if (!tb->print) {
    for (int k = 0; k < 3; k++)
      if (width(cell[k]) > tb->w[k]) tb->w[k] = width(cell[k]);
    return;
  }
  fputs("  ", tb->out);
  for (int k = 0; k < 3; k++) {
    if (k > 0 && tb->w[k] == 0) continue;
    if (k > 0) fputs(cell[k][0] ? " = " : "   ", tb->out);
    fputs(cell[k], tb->out);
    pad(tb->out, tb->w[k] - width(cell[k]));
  }
  fprintf(tb->out, " = %s\n", val);
}

/* A checkpointed loop's rows (staging/loop.c, docs/staging.md "Checkpointing"): the loop,
** "while(v_-1, v_0)" with its counts in num; an output, "v_1$s". */
static void loop_text(const Ctx *c, int i, char *s, size_t n, char *num, size_t nn) {
  char a[64], list[CELL], cnt[160];
  if (KINDOF(c, i) == TN_ITEM) {
    vname(c, INOF(c, i, 0), a, sizeof a);
    const AdCustom *cu = CUSTOF(c, INOF(c, i, 0));
    join(s, n, a, "$", cu->names[(int)M(c, i, C_NIDX)], NULL);
    num[0] = '\0';
    return;
  }
  const AdCustom *cu = CUSTOF(c, i);
  list[0] = '\0';
  for (int k = 0; k < cu->nin; k++) {
    int j = cu->in[k] >= 0 ? (int)c->map[cu->in[k]] : -1;
    bool again = false;
    for (int q = 0; q < k && !again; q++) again = cu->in[q] == cu->in[k];
    if (j < 0 || again) continue;
    vname(c, j, a, sizeof a);
    size_t len = strlen(list);
    join(list + len, sizeof list - len, len ? ", " : "", a, NULL);
  }
  join(s, n, cu->is_while ? "while(" : "for(", list, ")", NULL);
  snprintf(cnt, sizeof cnt, "%lld iteration%s, %lld checkpoint%s kept", (long long)cu->iters, cu->iters == 1 ? "" : "s",
           (long long)cu->nckpt, cu->nckpt == 1 ? "" : "s");
  join(num, nn, cnt, NULL);
}

static void primal_table(const Ctx *c, Table *tb) {
  char v[64], s[CELL], num[CELL], val[64];
  for (int i = 0; i < c->nnodes; i++) {
    vname(c, i, v, sizeof v);
    numtxt(c, YOF(c, i), false, val, sizeof val);
    if (i < c->nargs) {
      join(s, sizeof s, c->labels[i], NULL);
      emit(tb, v, s, "", val);
      continue;
    }
    if (KINDOF(c, i) != TN_OP) {
      loop_text(c, i, s, sizeof s, num, sizeof num);
      emit(tb, v, s, "", KINDOF(c, i) == TN_CUSTOM ? num : val);
      continue;
    }
    op_text(c, i, false, s, sizeof s);
    op_text(c, i, true, num, sizeof num);
    emit(tb, v, s, num, val);
  }
  if (c->root >= 0) {
    vname(c, c->root, v, sizeof v);
    numtxt(c, YOF(c, c->root), false, val, sizeof val);
    emit(tb, c->yname, v, "", val);
  } else {
    numtxt(c, c->yconst, false, val, sizeof val);
    emit(tb, c->yname, "", "", val);
  }
}

/* Node by node from y down: each input j of node i gets v̄_j (+)= v̄_i * ∂v_i/∂v_j.
** adj/has are scratch arrays of nnodes, filled again on every call. */
static void adjoint_table(const Ctx *c, Table *tb, double *adj, bool *has) {
  char vi[64], vj[64], bi[80], bj[80], dpart[200], txt[CELL], prod[CELL], s1[CELL], s2[CELL], val[64];
  for (int i = 0; i < c->nnodes; i++) { adj[i] = 0; has[i] = false; }
  if (c->root >= 0) {
    adj[c->root] = 1;
    has[c->root] = true;
    vname(c, c->root, vi, sizeof vi);
    marked(c, vi, 0, bi, sizeof bi);
    marked(c, c->yname, 0, bj, sizeof bj);
    emit(tb, bi, bj, "", "1");
  }
  for (int i = c->root; i >= c->nargs; i--) {       /* nothing when y is a constant */
    if (!has[i]) continue;
    vname(c, i, vi, sizeof vi);
    marked(c, vi, 0, bi, sizeof bi);
    if (KINDOF(c, i) == TN_ITEM) {                 /* an output of a loop: its adjoint is the loop's */
      int j = INOF(c, i, 0);
      char s0[80];
      vname(c, j, vj, sizeof vj);
      marked(c, vj, 0, s0, sizeof s0);
      join(bj, sizeof bj, s0, "$", CUSTOF(c, j)->names[(int)M(c, i, C_NIDX)], NULL);
      has[j] = true;
      numtxt(c, adj[i], false, val, sizeof val);
      emit(tb, bj, bi, "", val);
      continue;
    }
    if (KINDOF(c, i) == TN_CUSTOM) {               /* a checkpointed loop: recomputed, backpropagated */
      const AdCustom *cu = CUSTOF(c, i);
      for (int k = 0; k < cu->nin && cu->contrib; k++) {
        int j = cu->in[k] >= 0 ? (int)c->map[cu->in[k]] : -1;
        bool again = false;
        for (int q = k + 1; q < cu->nin && !again; q++) again = cu->in[q] == cu->in[k];   /* (its last: the sum) */
        if (j < 0 || again || isnan(cu->contrib[k])) continue;
        vname(c, j, vj, sizeof vj);
        marked(c, vj, 0, bj, sizeof bj);
        const char *dd = c->ascii ? "d" : "\xE2\x88\x82";
        join(dpart, sizeof dpart, dd, vi, "/", dd, vj, NULL);
        if (has[j]) join(s1, sizeof s1, bj, " + ", bi, " * ", dpart, NULL);
        else join(s1, sizeof s1, bi, " * ", dpart, NULL);
        snprintf(s2, sizeof s2, "recomputed: %lld iteration%s from %lld checkpoint%s in %lld segment%s, at most %lld states live",
                 (long long)cu->iters, cu->iters == 1 ? "" : "s", (long long)cu->nckpt, cu->nckpt == 1 ? "" : "s",
                 (long long)cu->segments, cu->segments == 1 ? "" : "s", (long long)cu->peak_states);
        adj[j] = cu->contrib[k];
        has[j] = true;
        numtxt(c, adj[j], false, val, sizeof val);
        emit(tb, bj, s1, s2, val);
      }
      continue;
    }
    for (int k = 0; k < NINOF(c, i); k++) {
      int j = INOF(c, i, k);
      if (j < 0) continue;
      double d;
      PKind pk = partial(c, i, k, false, txt, sizeof txt, &d);
      double contrib = mulz(adj[i], d);
      vname(c, j, vj, sizeof vj);
      marked(c, vj, 0, bj, sizeof bj);
      const char *dd = c->ascii ? "d" : "\xE2\x88\x82";
      join(dpart, sizeof dpart, dd, vi, "/", dd, vj, NULL);
      times(bi, pk, txt, false, prod, sizeof prod);
      if (has[j]) {
        join(s1, sizeof s1, bj, " + ", bi, " * ", dpart, NULL);
        join(s2, sizeof s2, bj, " + ", prod, NULL);
        adj[j] += contrib;
      } else {
        join(s1, sizeof s1, bi, " * ", dpart, NULL);
        join(s2, sizeof s2, prod, NULL);
        adj[j] = contrib;
        has[j] = true;
      }
      numtxt(c, adj[j], false, val, sizeof val);
      emit(tb, bj, s1, s2, val);
    }
  }
  for (int k = 0; k < c->nargs; k++) {
    marked(c, c->labels[k], 0, bj, sizeof bj);
    vname(c, k, vj, sizeof vj);
    marked(c, vj, 0, bi, sizeof bi);
    numtxt(c, adj[k], false, val, sizeof val);
    emit(tb, bj, has[k] ? bi : "", "", val);
  }
}

/* Node by node from the inputs up: v̇_i = Σ_j v̇_j * ∂v_i/∂v_j; seed[] holds the inputs'. */
static void tangent_table(const Ctx *c, Table *tb, double *tan, const double *seed) {
  char vi[64], vj[64], di[80], dj[80], tnum[64], txt[CELL], ntxt[CELL], term[CELL], nterm[CELL];
  char s1[CELL], s2[CELL], val[64];
  for (int i = 0; i < c->nnodes; i++) {
    vname(c, i, vi, sizeof vi);
    marked(c, vi, 1, di, sizeof di);
    if (i < c->nargs) {
      tan[i] = seed[i];
      marked(c, c->labels[i], 1, dj, sizeof dj);
      numtxt(c, tan[i], false, val, sizeof val);
      emit(tb, di, dj, "", val);
      continue;
    }
    tan[i] = 0;
    s1[0] = s2[0] = '\0';
    for (int k = 0; k < NINOF(c, i); k++) {
      int j = INOF(c, i, k);
      if (j < 0) continue;
      double d, dn;
      PKind pk = partial(c, i, k, false, txt, sizeof txt, &d);
      partial(c, i, k, true, ntxt, sizeof ntxt, &dn);
      tan[i] += mulz(tan[j], d);
      vname(c, j, vj, sizeof vj);
      marked(c, vj, 1, dj, sizeof dj);
      numtxt(c, tan[j], pk != P_ONE || s2[0], tnum, sizeof tnum);
      times(dj, pk, txt, true, term, sizeof term);
      times(tnum, pk, ntxt, true, nterm, sizeof nterm);
      for (int side = 0; side < 2; side++) {
        char *s = side ? s2 : s1;
        const char *t = side ? nterm : term;
        size_t len = strlen(s);
        if (len == 0) join(s, CELL, t, NULL);
        else if (t[0] == '-') join(s + len, CELL - len, " - ", t + 1, NULL);
        else join(s + len, CELL - len, " + ", t, NULL);
      }
    }
    numtxt(c, tan[i], false, val, sizeof val);
    emit(tb, di, s1, s2, val);
  }
  marked(c, c->yname, 1, dj, sizeof dj);
  if (c->root >= 0) {
    vname(c, c->root, vi, sizeof vi);
    marked(c, vi, 1, di, sizeof di);
    numtxt(c, tan[c->root], false, val, sizeof val);
    emit(tb, dj, di, "", val);
  } else {
    emit(tb, dj, "", "", "0");
  }
}

/* Measures the table, then prints it under its title. */
static void show(const Ctx *c, FILE *out, const char *title, int which, double *work, bool *has, const double *seed) {
  Table tb;
  memset(&tb, 0, sizeof tb);
  tb.out = out;
  for (int pass = 0; pass < 2; pass++) {
    tb.print = pass == 1;
    if (tb.print) fprintf(out, "%s\n", title);
    if (which == 0) primal_table(c, &tb);
    else if (which == 1) adjoint_table(c, &tb, work, has);
    else tangent_table(c, &tb, work, seed);
  }
}

/* f's call, with I->ad_no_checkpoint restored however it ends. */
typedef struct TraceCall { Value f; int n; Value *args; Symbol **names; Span sp; Value r; } TraceCall;
static void trace_call(Interp *I, void *ud) {
  TraceCall *c = ud;
  c->r = call_value(I, c->f, c->n, c->args, c->names, c->sp);
}

/* ---- trace_grad(f, ..., mode="reverse", wrt=1, digits=4, ascii=FALSE) ---- */
Value bi_trace_grad(Interp *I, Args *a) {
  Value f = a->v[0];
  char desc[64];
  if (f.t != VT_FUNC && f.t != VT_BUILTIN) bi_argerror(I, 1, "function expected, got %s", val_describe(f, desc, sizeof desc));
  const char *mode = bi_given(a, 1) ? bi_str(I, a, 1) : "reverse";
  bool forward = strcmp(mode, "forward") == 0;
  if (!forward && strcmp(mode, "reverse") != 0) bi_error(I, "mode must be \"reverse\" or \"forward\", got \"%.40s\"", mode);
  if (!forward && bi_given(a, 2)) bi_error(I, "wrt= is for mode=\"forward\" (the reverse trace differentiates with respect to every argument)");
  double dg = bi_opt_num(I, a, 3, 4);
  if (!(dg >= 1 && dg <= 15)) bi_error(I, "digits must be between 1 and 15");
  bool ascii = bi_opt_bool(I, a, 4, false);
  int n = a->ndots;
  if (n == 0) bi_error(I, "give the point after the function: trace_grad(f, x1, x2, ...)");
  if (n > MAX_ARGS) bi_error(I, "at most %d arguments, got %d", MAX_ARGS, n);
  for (int k = 0; k < n; k++)
    if (!is_scalar(a->dots[k]))
      bi_error(I, "argument %d must be a number (the trace table is for scalar functions), got %s",
               k + 1, val_describe(ad_primal(a->dots[k]), desc, sizeof desc));

  /* the arguments' names: named ones as given, positional ones from f's parameters in order */
  const char *labels[MAX_ARGS];
  char fallback[MAX_ARGS][16];
  const FuncInfo *fi = f.t == VT_FUNC ? f.u.f->fi : NULL;
  int nextp = 0;
  for (int k = 0; k < n; k++) {
    if (a->dotnames[k]) { labels[k] = a->dotnames[k]->name; continue; }
    labels[k] = NULL;
    while (fi && nextp < fi->nparams) {
      Symbol *pn = fi->params[nextp++].name;
      bool named = false;
      for (int q = 0; q < n; q++) named = named || a->dotnames[q] == pn;
      if (!named) { labels[k] = pn->name; break; }
    }
    if (!labels[k]) {
      snprintf(fallback[k], sizeof fallback[k], "x%d", k + 1);
      labels[k] = fallback[k];
    }
  }

  /* the seed of the tangents: wrt= a position, an argument's name, or a direction vector */
  double seed[MAX_ARGS];
  int wrt = 0;                                  /* 0-based position; -1: a direction */
  for (int k = 0; k < n; k++) seed[k] = 0;
  if (forward && bi_given(a, 2)) {
    Value w = ad_primal(a->v[2]);
    if (w.t == VT_STR) {
      wrt = -2;
      for (int k = 0; k < n; k++) if (strcmp(labels[k], w.u.s->s) == 0) wrt = k;
      if (wrt == -2) bi_error(I, "wrt=\"%.40s\" is not an argument of this call", w.u.s->s);
    } else if (w.t == VT_MAT && tensor_numel(w.u.m) > 1) {
      const Tensor *dir = w.u.m;
      if (tensor_numel(dir) != n || (tensor_rows(dir) != 1 && tensor_cols(dir) != 1))
        bi_error(I, "a direction wrt= must be a vector of %d elements, got a %lldx%lld matrix", n,
                 (long long)tensor_rows(dir), (long long)tensor_cols(dir));
      for (int k = 0; k < n; k++) seed[k] = tensor_rows(dir) == 1 ? tensor_get(dir, 0, k) : tensor_get(dir, k, 0);
      wrt = -1;
    } else if (w.t == VT_NUM || (w.t == VT_MAT && tensor_numel(w.u.m) == 1)) {
      double p = scalar_of(w);
      if (!(p >= 1 && p <= n && p == floor(p))) bi_error(I, "wrt=%g is not a position among the %d arguments", p, n);
      wrt = (int)p - 1;
    } else {
      bi_error(I, "wrt= must be a position, an argument's name or a direction vector");
    }
  }
  if (wrt >= 0) seed[wrt] = 1;

  /* phase 1: run f on boxed arguments, check the tape, copy its numbers, backward pass */
  int mark = I->ntmp;
  Tape *t = ad_trace_tape(I);
  List *holder = list_new(I, n);
  tmp_push(I, val_list(holder));
  for (int k = 0; k < n; k++) list_push(holder, ad_trace_leaf(I, t, ad_primal(a->dots[k]), a->span), NULL);
  bool saved_nock = I->ad_no_checkpoint;       /* the forward table goes through every iteration */
  I->ad_no_checkpoint = saved_nock || forward;
  TraceCall tc = { f, n, holder->items, a->dotnames, a->span, val_null() };
  int err = mls_pcall(I, trace_call, &tc);
  I->ad_no_checkpoint = saved_nock;
  if (err) mls_rethrow(I);
  Value r = tc.r;
  tmp_push(I, r);
  t->active = false;
  if (!is_scalar(r)) bi_error(I, "function must return a number, got %s", val_describe(ad_primal(r), desc, sizeof desc));
  int root = r.t == VT_BOX && r.u.box->tape == t ? r.u.box->node : -1;
  /* The rows: the arguments and the operations y depends on, in tape order (a jit function
  ** records its trace and then its graph's run, and only the run gives y; nothing else of a
  ** computation f throws away is a step of y's derivative either). map: tape node -> row. */
  Tensor *mapt = tensor_new(I, t->n > 0 ? t->n : 1, 1);
  tmp_push(I, val_mat(mapt));
  double *map = tensor_data(mapt);
  for (int i = 0; i < t->n; i++) map[i] = i < n ? 1 : 0;
  if (root >= 0) map[root] = 1;
  for (int i = root; i >= n; i--)
    if (map[i] != 0) {
      for (int k = 0; k < t->nodes[i].nin; k++)
        if (t->nodes[i].in[k] >= 0) map[t->nodes[i].in[k]] = 1;
      const AdCustom *cu = t->nodes[i].cust;        /* a checkpointed loop's inputs */
      for (int k = 0; cu && k < cu->nin; k++)
        if (cu->in[k] >= 0) map[cu->in[k]] = 1;
    }
  int nn = 0;
  for (int i = 0; i < t->n; i++) map[i] = map[i] != 0 ? nn++ : -1;
  int troot = root;                            /* (the tape's numbering, for its backward pass) */
  if (root >= 0) root = (int)map[root];
  if (nn - n > MAX_OPS) bi_error(I, "the trace has %d operations; the table is for small examples (at most %d)", nn - n, MAX_OPS);
  for (int q = n; q < t->n; q++) {
    if (map[q] < 0) continue;
    int i = (int)map[q];
    const TNode *nd = &t->nodes[q];
    if (nd->kind == TN_CUSTOM) {
      if (forward)
        bi_error(I, "operation v_%d is a checkpointed loop (grad of a staged loop): the forward trace does not go through it; use mode=\"reverse\"", i - n + 1);
      continue;
    }
    if (nd->kind == TN_ITEM) {
      if (!is_scalar(nd->out))
        bi_error(I, "operation v_%d (a loop's '%s') is %s; the trace table is for numbers", i - n + 1,
                 t->nodes[nd->in[0]].cust->names[nd->in[1]], val_describe(ad_primal(nd->out), desc, sizeof desc));
      continue;
    }
    if (!supported(nd->op)) bi_error(I, "operation v_%d ('%s') is not supported in the trace table", i - n + 1, op_info[nd->op].sym);
    bool ok = is_scalar(nd->out);
    for (int k = 0; k < nd->nin; k++) ok = ok && is_scalar(nd->val[k]);
    if (!ok) {
      const Value *bad = &nd->out;
      for (int k = 0; k < nd->nin; k++) if (!is_scalar(nd->val[k])) bad = &nd->val[k];
      bi_error(I, "operation v_%d ('%s') works on %s; the trace table is for numbers", i - n + 1,
               op_info[nd->op].sym, val_describe(ad_primal(*bad), desc, sizeof desc));
    }
  }
  Tensor *S = tensor_new(I, nn > 0 ? nn : 1, NCOL);
  tmp_push(I, val_mat(S));
  double *m = tensor_data(S);
  for (int q = 0; q < t->n; q++) {
    if (map[q] < 0) continue;
    const TNode *nd = &t->nodes[q];
    double *row = m + (size_t)map[q] * NCOL;
    row[C_OP] = nd->op;
    row[C_NIN] = nd->nin;
    row[C_KIND] = nd->kind;
    row[C_Q] = q;
    for (int k = 0; k < 3; k++) {
      row[C_IN0 + k] = k < nd->nin && nd->in[k] >= 0 ? map[nd->in[k]] : -1;
      row[C_A0 + k] = k < nd->nin && nd->kind == TN_OP ? scalar_of(nd->val[k]) : 0;
    }
    row[C_Y] = nd->kind == TN_CUSTOM ? 0 : scalar_of(nd->out);
    row[C_NIDX] = nd->kind == TN_ITEM ? nd->in[1] : nd->op == OP_INDEX && nd->nval > 1 ? scalar_of(nd->val[1]) : 0;
  }
  double grads[MAX_ARGS];
  for (int k = 0; k < n; k++) grads[k] = 0;
  if (!forward && root >= 0) {                 /* the gradient, from grad's own backward pass */
    Value s1 = val_num(1);
    if (ad_primal(r).t == VT_MAT) {
      Tensor *one = tensor_new(I, 1, 1);
      tensor_data(one)[0] = 1;
      s1 = val_mat(one);
      tmp_push(I, s1);
    }
    List *adj = ad_trace_backward(I, t, troot, s1);
    for (int k = 0; k < n; k++) {
      Value g = ad_trace_collect(I, holder->items[k], adj, t);
      tmp_push(I, g);
      grads[k] = scalar_of(g);
    }
  }
  Value result;
  if (forward) result = val_num(0);
  else if (n == 1) result = val_num(grads[0]);
  else {
    Tensor *G = tensor_new(I, n, 1);
    for (int k = 0; k < n; k++) tensor_data(G)[k] = grads[k];
    result = val_mat(G);
    tmp_push(I, result);
  }

  /* phase 2: the tables (plain C from here on: nothing throws) */
  const char *yname = "y";
  for (int k = 0; k < n; k++) if (strcmp(labels[k], "y") == 0) yname = "out";
  Ctx c = { m, n, nn, root, (int)dg, ascii, labels, root < 0 ? scalar_of(r) : 0, yname, t, map };
  size_t nw = (size_t)(nn > 0 ? nn : 1);
  double *work = mem_alloc(nw * (sizeof(double) + sizeof(bool)));   /* one block: one failure point */
  bool *has = (bool *)(work + nw);
  FILE *out = I->out;
  const char *fname = fi && fi->name ? fi->name->name : "f";
  char num[64];
  fprintf(out, "Evaluation trace of %s(", fname);
  for (int k = 0; k < n; k++) fprintf(out, "%s%s", k ? ", " : "", labels[k]);
  fputs(") at ", out);
  for (int k = 0; k < n; k++) {
    fmt_num(num, sizeof num, M(&c, k, C_Y), 15);
    fprintf(out, "%s%s = %s", k ? ", " : "", labels[k], num);
  }
  fputs("\n\n", out);
  show(&c, out, "Forward primal trace", 0, work, has, seed);
  const char *d = ascii ? "d" : "\xE2\x88\x82";
  if (!forward) {
    fputs("\n", out);
    show(&c, out, "Reverse adjoint (derivative) trace", 1, work, has, seed);
    fputs("\ngradient: ", out);
    for (int k = 0; k < n; k++) {
      fmt_num(num, sizeof num, grads[k], 15);
      fprintf(out, "%s%s%s/%s%s = %s", k ? ", " : "", d, yname, d, labels[k], num);
    }
    fputs("\n", out);
  } else {
    fputs("\n", out);
    show(&c, out, "Forward tangent (derivative) trace", 2, work, has, seed);
    double dy = root >= 0 ? work[root] : 0;
    fmt_num(num, sizeof num, dy, 15);
    if (wrt >= 0) fprintf(out, "\nderivative: %s%s/%s%s = %s\n", d, yname, d, labels[wrt], num);
    else {
      fputs("\ndirectional derivative along (", out);
      for (int k = 0; k < n; k++) {
        char s[64];
        fmt_num(s, sizeof s, seed[k], 15);
        fprintf(out, "%s%s", k ? ", " : "", s);
      }
      fprintf(out, "): %s\n", num);
    }
    result = val_num(dy);
  }
  mem_free(work);
  val_retain(result);
  tmp_release_to(I, mark);
  return result;
}
