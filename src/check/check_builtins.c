/*
** check_builtins.c — what each builtin gives in the shape analysis (check.c): the shape-giving
** ones (matrix, rand, seq, cbind, read with a .mtd sidecar, ...) with their certain errors, the
** ones that are one op through the op's shape rule, source() followed, and no effect run.
*/
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check/check_impl.h"
#include "diag.h"
#include "mem.h"
#include "parse.h"

/* The arguments bound to the builtin's signature (bi_call's matching). */
typedef struct BArgs {
  const Builtin *b;
  int n;
  AVal v[BI_MAX_PARAMS];
  bool given[BI_MAX_PARAMS];
  int ndots;
  AVal *dots;
  Symbol **dotnames;
  Span sp;
} BArgs;

typedef AVal (*BiShapeFn)(Ck *c, BArgs *a);

static bool numlike(AVal v) { return v.sh.kind == SK_NUM || v.sh.kind == SK_BOOL; }
static bool unknown(AVal v) { return v.sh.kind == SK_ANY || v.sh.kind == SK_NONE || v.sh.kind == SK_NUMERIC; }
static AVal av_none(void) { return av_shape(shape_of_kind(SK_NONE)); }
static AVal mat(int64_t r, int64_t c) { return av_shape(shape_mat(r, c)); }
static AVal num_unknown(void) { return av_shape(shape_num_unknown()); }
static AVal boolean(int known) { return av_shape(shape_bool(known >= 0, known > 0)); }

/* "bad argument #n to 'name' (...)" where reached for certain. */
__attribute__((format(printf, 3, 4))) static void argerror(Ck *c, BArgs *a, const char *fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  ck_fail(c, a->sp, "%s", msg);
}

/* A number argument (bi_num): 1 known, 0 not known, -1 not a number (certain error). */
static int arg_num(Ck *c, BArgs *a, int i, double *x) {
  AVal v = a->v[i];
  char d[64];
  if (numlike(v) || (v.sh.kind == SK_MAT && v.sh.rows == 1 && v.sh.cols == 1)) {
    *x = v.sh.value;
    return v.sh.known ? 1 : 0;
  }
  if (v.sh.kind == SK_MAT && v.sh.rows >= 0 && v.sh.cols >= 0) {
    shape_describe(v.sh, d, sizeof d);
    argerror(c, a, "bad argument #%d to '%s' (number expected, got %s)", i + 1, a->b->name, d);
    return -1;
  }
  if (v.sh.kind == SK_STR || v.sh.kind == SK_LIST || v.sh.kind == SK_FUNC || v.sh.kind == SK_NULL) {
    shape_describe(v.sh, d, sizeof d);
    argerror(c, a, "bad argument #%d to '%s' (number expected, got %s)", i + 1, a->b->name, d);
    return -1;
  }
  return 0;
}

/* ---- the generic ones ---- */
static AVal h_any(Ck *c, BArgs *a) { (void)c; (void)a; return av_any(); }
static AVal h_null(Ck *c, BArgs *a) { (void)c; (void)a; return av_shape(shape_of_kind(SK_NULL)); }
static AVal h_num(Ck *c, BArgs *a) { (void)c; (void)a; return num_unknown(); }
static AVal h_bool(Ck *c, BArgs *a) { (void)c; (void)a; return boolean(-1); }
static AVal h_str(Ck *c, BArgs *a) { (void)c; (void)a; return av_shape(shape_of_kind(SK_STR)); }
static AVal h_first(Ck *c, BArgs *a) { (void)c; return a->v[0]; }   /* identity, ifdef, gpu, ... */

/* The builtin that is exactly its op: the op's rule on its arguments. */
static AVal h_op(Ck *c, BArgs *a) {
  int n = op_info[a->b->op].arity;                  /* (ops.c's messages name the op's symbol) */
  AVal in[3] = { a->v[0], n > 1 ? a->v[1] : av_any(), n > 2 ? a->v[2] : av_any() };
  return ck_rule(c, a->b->op, in, NULL, a->sp);
}

/* Same shape as the first argument: a number stays a number (scale, pnorm, rev, ...). */
static AVal h_same(Ck *c, BArgs *a) {
  (void)c;
  AVal v = a->v[0];
  if (numlike(v)) return num_unknown();
  if (v.sh.kind == SK_MAT) return mat(v.sh.rows, v.sh.cols);
  return v.sh.kind == SK_NUMERIC ? av_shape(shape_numeric()) : av_any();
}

/* ---- construction ---- */
/* dim_arg of builtins_core.c (matrix): a non-negative whole number; -1 not known. */
static int64_t dim_arg(Ck *c, BArgs *a, int i, bool *bad) {
  double d;
  int k = arg_num(c, a, i, &d);
  if (k < 0) { *bad = true; return -1; }
  if (k == 0) return -1;
  if (!(d >= 0 && d == floor(d) && d < 9e15)) {
    argerror(c, a, "bad argument #%d to '%s' (a non-negative whole number expected)", i + 1, a->b->name);
    *bad = true;
    return -1;
  }
  return (int64_t)d;
}

/* The count of numbers in s (scan_numbers), or -1 with the error when one is not a number. */
static int64_t count_numbers(Ck *c, BArgs *a, const char *s) {
  const char *bad;
  int64_t n = val_scan_numbers(s, NULL, &bad);
  if (n < 0) argerror(c, a, "bad argument #1 to '%s' (cannot read a number at \"%.20s\")", a->b->name, bad);
  return n;
}

static AVal h_matrix(Ck *c, BArgs *a) {
  char d[64];
  AVal by = a->v[3];
  if (a->given[3] && !numlike(by) && !unknown(by)) {
    if (shape_describe(by.sh, d, sizeof d)) argerror(c, a, "bad argument #4 to 'matrix' (boolean expected, got %s)", d);
    else ck_die(c);
    return av_any();
  }
  AVal v = a->v[0];
  int64_t n = -1;
  bool fill = false;
  if (v.sh.kind == SK_STR) {
    if (v.str) { n = count_numbers(c, a, v.str); if (n < 0) return av_any(); }
  } else if (v.sh.kind == SK_MAT && v.sh.rows == 1 && v.sh.cols == 1) fill = true;
  else if (v.sh.kind == SK_MAT) { if (v.sh.rows >= 0 && v.sh.cols >= 0) n = v.sh.rows * v.sh.cols; }
  else if (numlike(v)) fill = true;
  else if (unknown(v) || (v.sh.kind == SK_MAT)) return av_shape(shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN));
  else {
    if (shape_describe(v.sh, d, sizeof d)) argerror(c, a, "bad argument #1 to 'matrix' (number, string or matrix expected, got %s)", d);
    else ck_die(c);
    return av_any();
  }
  if (fill) n = 1;
  bool maybe_fill = v.sh.kind == SK_MAT && (v.sh.rows < 0 || v.sh.cols < 0);   /* a 1x1 fills */
  bool bad = false;
  int64_t rows = -1, cols = -1;
  if (a->given[1] && a->given[2]) { rows = dim_arg(c, a, 1, &bad); if (!bad) cols = dim_arg(c, a, 2, &bad); }
  else if (a->given[1]) {
    rows = dim_arg(c, a, 1, &bad);
    cols = fill ? 1 : rows > 0 && n >= 0 && !maybe_fill ? n / rows : rows == 0 && !maybe_fill ? 0 : -1;
  } else if (a->given[2]) {
    cols = dim_arg(c, a, 2, &bad);
    rows = fill ? 1 : cols > 0 && n >= 0 && !maybe_fill ? n / cols : cols == 0 && !maybe_fill ? 0 : -1;
  } else { rows = maybe_fill ? -1 : n; cols = maybe_fill ? -1 : 1; }
  if (bad) return av_any();
  if (!fill && !maybe_fill && n >= 0 && rows >= 0 && cols >= 0 && rows * cols != n) {
    ck_fail(c, a->sp, "matrix: cannot shape %lld values into a %lldx%lld matrix", (long long)n, (long long)rows, (long long)cols);
    return av_any();
  }
  AVal r = mat(rows, cols);
  if (v.el && !fill && rows >= 0 && cols >= 0 && rows * cols == n && (!a->given[3] || (by.sh.known && by.sh.value != 0))) r.el = v.el;
  if (fill && v.sh.known && rows == 1 && cols == 1) { r.sh.known = true; r.sh.value = v.sh.value; }
  return r;
}

/* bi_opt_dim: "a non-negative whole number expected, got 2.5" (rand). */
static int64_t opt_dim(Ck *c, BArgs *a, int i, int64_t dflt, bool *bad) {
  if (!a->given[i]) return dflt;
  double d;
  int k = arg_num(c, a, i, &d);
  if (k < 0) { *bad = true; return -1; }
  if (k == 0) return -1;
  if (!(d >= 0 && d == floor(d) && d < 9e15)) {
    char buf[32];
    if (isnan(d)) snprintf(buf, sizeof buf, "NaN");
    else snprintf(buf, sizeof buf, "%.15g", d);
    argerror(c, a, "bad argument #%d to '%s' (a non-negative whole number expected, got %s)", i + 1, a->b->name, buf);
    *bad = true;
    return -1;
  }
  return (int64_t)d;
}

static AVal h_rand(Ck *c, BArgs *a) {
  bool bad = false;
  int64_t rows = opt_dim(c, a, 0, 1, &bad);
  int64_t cols = bad ? -1 : opt_dim(c, a, 1, 1, &bad);
  return bad ? av_any() : mat(rows, cols);
}

static AVal h_seq(Ck *c, BArgs *a) {
  double from, to, by = 0;
  if (a->given[3] || !a->given[0] || !a->given[1]) {     /* length.out, seq(n): n values */
    double n;
    int kn = a->given[3] ? arg_num(c, a, 3, &n) : a->given[1] ? -1 : a->given[0] ? arg_num(c, a, 0, &n) : -1;
    if (kn <= 0 || !(n >= 0 && n <= 1e15) || n != floor(n)) return kn == 0 ? mat(-1, 1) : av_any();
    return mat(a->given[3] ? (int64_t)n : n >= 1 ? (int64_t)n : 2 - (int64_t)n, 1);
  }
  int kf = arg_num(c, a, 0, &from);
  if (kf < 0) return av_any();
  int kt = arg_num(c, a, 1, &to);
  if (kt < 0) return av_any();
  int kb = a->given[2] ? arg_num(c, a, 2, &by) : 1;
  if (kb < 0) return av_any();
  if (!kf || !kt || !kb) return mat(-1, 1);
  if (!a->given[2]) by = from <= to ? 1 : -1;
  if (!isfinite(from) || !isfinite(to) || !isfinite(by)) { ck_fail(c, a->sp, "seq: from, to and by must be finite"); return av_any(); }
  if (by == 0) {
    if (from == to) return mat(1, 1);
    argerror(c, a, "bad argument #3 to 'seq' (by must not be 0)");
    return av_any();
  }
  if ((to - from) / by < 0) {
    argerror(c, a, "bad argument #3 to 'seq' (wrong sign of 'by' for going from %g to %g)", from, to);
    return av_any();
  }
  double cnt = floor((to - from) / by + 1e-10) + 1;
  if (cnt > 1e15) { ck_fail(c, a->sp, "seq: sequence too long"); return av_any(); }
  AVal r = mat((int64_t)cnt, 1);
  if (cnt <= CHECK_MAX_EL) {
    double *e = ck_alloc(c, (size_t)cnt * sizeof(double));
    for (int64_t i = 0; i < (int64_t)cnt; i++) e[i] = from + (double)i * by;
    r.el = e;
  }
  return r;
}

static AVal h_seq_len(Ck *c, BArgs *a) {
  double x;
  int k = arg_num(c, a, 0, &x);
  if (k <= 0) return k < 0 ? av_any() : mat(-1, 1);
  if (!(x >= 0 && x <= 1e15) || x != floor(x)) {
    argerror(c, a, "bad argument #1 to 'seq_len' (length.out must be a whole number >= 0, got %g)", x);
    return av_any();
  }
  return mat((int64_t)x, 1);
}

/* cbind, rbind (builtins_core.c bind). */
static AVal bind(Ck *c, BArgs *a, bool cols) {
  int64_t other = -1, total = 0;
  bool other_known = true, total_known = true, sure = true, set = false;
  char d[64];
  for (int i = 0; i < a->ndots; i++) {
    AVal v = a->dots[i];
    int64_t r, cc;
    if (v.sh.kind == SK_MAT) { r = v.sh.rows; cc = v.sh.cols; }
    else if (numlike(v)) r = cc = 1;
    else if (unknown(v)) { r = cc = -1; sure = false; }
    else {
      if (!sure || !shape_describe(v.sh, d, sizeof d)) { ck_die(c); return av_any(); }
      argerror(c, a, "bad argument #%d to '%s' (matrix expected, got %s)", i + 1, a->b->name, d);
      return av_any();
    }
    int64_t keep = cols ? r : cc, add = cols ? cc : r;
    if (set && other_known && keep >= 0 && keep != other) {
      if (!sure) { ck_die(c); return av_any(); }
      ck_fail(c, a->sp, "%s: %s count mismatch: %lld and %lld", a->b->name, cols ? "row" : "column", (long long)other,
              (long long)keep);
      return av_any();
    }
    if (keep < 0) other_known = false;
    else if (!set || other_known) other = keep;
    set = true;
    if (add < 0) total_known = false;
    else total += add;
  }
  if (!set) other = 0;
  int64_t o = other_known ? other : -1, t = total_known ? total : -1;
  return cols ? mat(o, t) : mat(t, o);
}
static AVal h_cbind(Ck *c, BArgs *a) { return bind(c, a, true); }
static AVal h_rbind(Ck *c, BArgs *a) { return bind(c, a, false); }

static AVal h_c(Ck *c, BArgs *a) {
  int64_t total = 0, parts = 0;
  bool known = true;
  for (int i = 0; i < a->ndots; i++) {
    AVal v = a->dots[i];
    if (v.sh.kind == SK_NULL) continue;
    parts++;
    if (numlike(v)) total++;
    else if (v.sh.kind == SK_MAT && v.sh.rows >= 0 && v.sh.cols >= 0) total += v.sh.rows * v.sh.cols;
    else if (v.sh.kind == SK_STR || v.sh.kind == SK_LIST || v.sh.kind == SK_FUNC) { ck_die(c); return av_any(); }
    else known = false;
  }
  if (parts == 0 && known) return av_shape(shape_of_kind(SK_NULL));
  return mat(known ? total : -1, 1);
}

static AVal h_nrow_ncol(Ck *c, BArgs *a, bool rows) {
  AVal v = a->v[0];
  char d[64];
  if (v.sh.kind == SK_MAT) {
    int64_t x = rows ? v.sh.rows : v.sh.cols;
    return x >= 0 ? av_num((double)x) : num_unknown();
  }
  if (numlike(v)) return av_num(1);
  if (unknown(v)) return num_unknown();
  if (shape_describe(v.sh, d, sizeof d)) argerror(c, a, "bad argument #1 to '%s' (matrix expected, got %s)", a->b->name, d);
  else ck_die(c);
  return av_any();
}
static AVal h_nrow(Ck *c, BArgs *a) { return h_nrow_ncol(c, a, true); }
static AVal h_ncol(Ck *c, BArgs *a) { return h_nrow_ncol(c, a, false); }

static AVal h_length(Ck *c, BArgs *a) {
  (void)c;
  AVal v = a->v[0];
  switch (v.sh.kind) {
  case SK_MAT: return v.sh.rows >= 0 && v.sh.cols >= 0 ? av_num((double)(v.sh.rows * v.sh.cols)) : num_unknown();
  case SK_LIST: return v.list ? av_num(v.list->n) : v.sh.len >= 0 ? av_num(v.sh.len) : num_unknown();
  case SK_NULL: return av_num(0);
  case SK_NUM: case SK_BOOL: case SK_STR: case SK_FUNC: return av_num(1);
  default: return num_unknown();
  }
}

static AVal h_mean(Ck *c, BArgs *a) {
  AVal v = a->v[0];
  char d[64];
  if (numlike(v) || v.sh.kind == SK_MAT || unknown(v)) return num_unknown();
  if (shape_describe(v.sh, d, sizeof d)) argerror(c, a, "bad argument #1 to '%s' (matrix expected, got %s)", a->b->name, d);
  else ck_die(c);
  return av_any();
}

/* rowMeans, rowVars, rowSds (rows x 1) and the col ones (1 x cols). */
static AVal h_rowstat(Ck *c, BArgs *a) {
  (void)c;
  AVal v = a->v[0];
  bool row = a->b->name[0] == 'r';
  if (numlike(v)) return num_unknown();
  if (v.sh.kind == SK_MAT) return row ? mat(v.sh.rows, 1) : mat(1, v.sh.cols);
  return av_shape(shape_numeric());
}

static AVal h_as_scalar(Ck *c, BArgs *a) {
  AVal v = a->v[0];
  char d[64];
  if (v.sh.kind == SK_LIST && v.list && v.list->n == 1 && v.list->items[0].sh.kind != SK_LIST) v = v.list->items[0];
  if (v.sh.kind == SK_NUM) return v;
  if (v.sh.kind == SK_BOOL) return v.sh.known ? av_num(v.sh.value) : num_unknown();
  if (v.sh.kind == SK_STR) return v;
  if (v.sh.kind == SK_MAT && v.sh.rows == 1 && v.sh.cols == 1) return v.sh.known ? av_num(v.sh.value) : num_unknown();
  if (v.sh.kind == SK_MAT && v.sh.rows >= 0 && v.sh.cols >= 0) {
    shape_describe(v.sh, d, sizeof d);
    argerror(c, a, "bad argument #1 to 'as.scalar' (1x1 matrix expected, got %s)", d);
    return av_any();
  }
  if (v.sh.kind == SK_MAT || v.sh.kind == SK_NUMERIC) return num_unknown();
  return av_any();
}

static AVal h_as_matrix(Ck *c, BArgs *a) {
  (void)c;
  AVal v = a->v[0];
  if (v.sh.kind == SK_MAT) return v;
  if (numlike(v)) { AVal r = mat(1, 1); r.sh.known = v.sh.known; r.sh.value = v.sh.value; return r; }
  return unknown(v) ? av_shape(shape_mat(SHAPE_UNKNOWN, SHAPE_UNKNOWN)) : av_any();
}

static AVal h_as_double(Ck *c, BArgs *a) {
  (void)c;
  AVal v = a->v[0];
  if (v.sh.kind == SK_NUM) return v;
  if (v.sh.kind == SK_BOOL) return v.sh.known ? av_num(v.sh.value) : num_unknown();
  if (v.sh.kind == SK_STR) return num_unknown();
  if (v.sh.kind == SK_MAT) {
    if (v.sh.rows == 1 && v.sh.cols == 1) return v.sh.known ? av_num(v.sh.value) : num_unknown();
    if (v.sh.rows >= 0 && v.sh.cols >= 0) return mat(v.sh.rows, v.sh.cols);
  }
  return av_shape(shape_numeric());
}

static AVal h_as_logical(Ck *c, BArgs *a) {
  (void)c;
  AVal v = a->v[0];
  if (v.sh.kind == SK_MAT) return mat(v.sh.rows, v.sh.cols);
  if (numlike(v) || v.sh.kind == SK_STR) return boolean(-1);
  return av_any();
}

/* is.matrix, is.list, ...: the kind tells when known. */
static AVal h_is(Ck *c, BArgs *a) {
  (void)c;
  const char *n = a->b->name + 3;
  int k = a->v[0].sh.kind;
  if (k == SK_ANY || k == SK_NONE) return boolean(-1);
  if (!strcmp(n, "matrix")) return k == SK_NUMERIC ? boolean(-1) : boolean(k == SK_MAT);
  if (!strcmp(n, "numeric")) return boolean(k == SK_NUM || k == SK_MAT || k == SK_NUMERIC ? (k == SK_NUMERIC ? -1 : 1) : 0);
  if (!strcmp(n, "character")) return boolean(k == SK_STR);
  if (!strcmp(n, "list")) return boolean(k == SK_LIST);
  if (!strcmp(n, "null")) return boolean(k == SK_NULL);
  if (!strcmp(n, "function")) return boolean(k == SK_FUNC);
  if (!strcmp(n, "logical")) return k == SK_NUMERIC ? boolean(-1) : boolean(k == SK_BOOL);
  return boolean(-1);
}

static AVal h_list(Ck *c, BArgs *a) {
  AList *l = ck_alloc(c, sizeof *l);
  l->n = a->ndots;
  l->multi = false;
  l->items = ck_alloc(c, (size_t)(a->ndots ? a->ndots : 1) * sizeof(AVal));
  l->names = ck_alloc(c, (size_t)(a->ndots ? a->ndots : 1) * sizeof(Symbol *));
  for (int i = 0; i < a->ndots; i++) { l->items[i] = a->dots[i]; l->names[i] = a->dotnames[i]; }
  AVal r = av_shape(shape_of_kind(SK_LIST));
  r.sh.len = a->ndots;
  r.list = l;
  return r;
}

/* ---- effects and control ---- */
static AVal h_stop(Ck *c, BArgs *a) { (void)a; ck_die(c); return av_any(); }

static AVal h_quit(Ck *c, BArgs *a) {
  (void)a;
  if (!ck_alive(c)) return av_any();
  c->quits++;
  c->reach = R_EXIT;
  return av_any();
}

static AVal h_assert(Ck *c, BArgs *a) {
  AVal v = a->v[0];
  if ((numlike(v) || (v.sh.kind == SK_MAT && v.sh.rows == 1 && v.sh.cols == 1)) && v.sh.known && v.sh.value == 0) ck_die(c);
  return av_shape(shape_of_kind(SK_NULL));
}

/* source(path) at top level is followed; elsewhere it may set any global. */
static AVal h_source(Ck *c, BArgs *a) {
  AVal p = a->v[0];
  if (p.sh.kind == SK_STR && p.str && !c->env) { ck_source(c, p.str, NULL, a->sp); return av_shape(shape_of_kind(SK_NULL)); }
  if (p.sh.kind != SK_STR && !unknown(p)) { ck_die(c); return av_any(); }
  c->opaque_globals = true;
  for (int32_t i = 0; i < c->globals.cap; i++)
    if (c->globals.e[i].sym) c->globals.e[i].v = av_any();
  if (c->has_quit && c->reach == R_MUST) c->reach = R_MAY;
  return av_shape(shape_of_kind(SK_NULL));
}

/* ---- read(): the shape from rows=/cols=, else from path.mtd (builtins_io.c read_job) ---- */
static const char *json_after_key(const char *t, const char *key) {
  size_t k = strlen(key);
  for (const char *p = t; (p = strchr(p, '"')); p++) {
    if (strncmp(p + 1, key, k) == 0 && p[k + 1] == '"') {
      const char *q = p + k + 2;
      while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
      if (*q != ':') continue;
      q++;
      while (*q == ' ' || *q == '\t' || *q == '\n' || *q == '\r') q++;
      return q;
    }
  }
  return NULL;
}

/* rows and cols a .mtd file declares (-1 each when not), and its format (NULL: none). false:
** no such regular file, or not readable. */
static bool read_mtd(const char *path, int64_t *rows, int64_t *cols, char *format, size_t fn) {
  char mp[PATH_MAX];
  if (snprintf(mp, sizeof mp, "%s.mtd", path) >= (int)sizeof mp) return false;
  struct stat st;
  if (stat(mp, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (1 << 20)) return false;
  FILE *f = fopen(mp, "rb");
  if (!f) return false;
  char *t = mem_alloc((size_t)st.st_size + 1);
  size_t n = fread(t, 1, (size_t)st.st_size, f);
  fclose(f);
  t[n] = '\0';
  *rows = *cols = -1;
  format[0] = '\0';
  const char *q;
  if ((q = json_after_key(t, "rows"))) { double x = strtod(q, NULL); if (x >= 0 && x == floor(x) && x < 9e15) *rows = (int64_t)x; }
  if ((q = json_after_key(t, "cols"))) { double x = strtod(q, NULL); if (x >= 0 && x == floor(x) && x < 9e15) *cols = (int64_t)x; }
  if ((q = json_after_key(t, "format")) && *q == '"') {
    size_t k = strcspn(q + 1, "\"");
    snprintf(format, fn, "%.*s", (int)k, q + 1);
  }
  mem_free(t);
  return true;
}

static AVal h_read(Ck *c, BArgs *a) {
  AVal p = a->v[0];
  int64_t rows = -1, cols = -1;
  double x;
  bool grows = a->given[4], gcols = a->given[5];
  if (grows && arg_num(c, a, 4, &x) == 1 && x >= 0 && x == floor(x)) rows = (int64_t)x;
  if (!ck_alive(c)) return av_any();
  if (gcols && arg_num(c, a, 5, &x) == 1 && x >= 0 && x == floor(x)) cols = (int64_t)x;
  if (!ck_alive(c)) return av_any();
  if (grows || gcols) return mat(rows, cols);
  if (p.sh.kind != SK_STR || !p.str) return mat(-1, -1);
  const char *fmt = a->given[1] && a->v[1].sh.kind == SK_STR ? a->v[1].str : NULL;
  if (a->given[1] && !fmt) return mat(-1, -1);
  if (fmt && strcmp(fmt, "csv") != 0 && strcmp(fmt, "text") != 0) return mat(-1, -1);
  char mf[32];
  int64_t mr, mc;
  if (!read_mtd(p.str, &mr, &mc, mf, sizeof mf)) return mat(-1, -1);
  if (fmt && mf[0] && strcmp(fmt, mf) != 0) return mat(-1, -1);      /* format= wins: no sidecar */
  return mat(mr, mc);
}

/* ---- linear algebra ---- */
static AVal h_solve(Ck *c, BArgs *a) {
  ShapeExtra x;
  memset(&x, 0, sizeof x);
  x.name = a->b->name;
  return ck_rule(c, OP_SOLVE, a->v, &x, a->sp);
}

static AVal h_linalg1(Ck *c, BArgs *a, OpKind op) {
  ShapeExtra x;
  memset(&x, 0, sizeof x);
  x.name = a->b->name;
  return ck_rule(c, op, a->v, &x, a->sp);
}
static AVal h_inv(Ck *c, BArgs *a) { return h_linalg1(c, a, OP_INV); }
static AVal h_det(Ck *c, BArgs *a) { return h_linalg1(c, a, OP_DET); }
static AVal h_cholesky(Ck *c, BArgs *a) { return h_linalg1(c, a, OP_CHOL); }

static AVal multi(Ck *c, int n, const char *const names[], const AVal *vals) {
  AList *l = ck_alloc(c, sizeof *l);
  l->n = n;
  l->multi = true;
  l->items = ck_alloc(c, (size_t)n * sizeof(AVal));
  l->names = ck_alloc(c, (size_t)n * sizeof(Symbol *));
  for (int i = 0; i < n; i++) {
    l->items[i] = vals[i];
    l->names[i] = sym_intern(&c->I->syms, names[i], strlen(names[i]));
  }
  AVal r = av_shape(shape_of_kind(SK_LIST));
  r.sh.len = n;
  r.list = l;
  return r;
}

static AVal parts(Ck *c, BArgs *a, int n, const OpKind ops[], const char *const names[]) {
  AVal v[3];
  for (int i = 0; i < n; i++) {
    v[i] = h_linalg1(c, a, ops[i]);
    if (!ck_alive(c)) return av_any();
  }
  return multi(c, n, names, v);
}
static AVal h_eigen(Ck *c, BArgs *a) {
  static const char *const names[] = { "values", "vectors" };
  return parts(c, a, 2, (OpKind[]){ OP_EIGVALS, OP_EIGVECS }, names);
}
static AVal h_qr(Ck *c, BArgs *a) {
  static const char *const names[] = { "Q", "R" };
  return parts(c, a, 2, (OpKind[]){ OP_QR_Q, OP_QR_R }, names);
}
static AVal h_svd(Ck *c, BArgs *a) {
  static const char *const names[] = { "U", "S", "V" };
  return parts(c, a, 3, (OpKind[]){ OP_SVD_U, OP_SVD_S, OP_SVD_V }, names);
}

static AVal h_trace(Ck *c, BArgs *a) {
  AVal v = a->v[0];
  char d[64];
  if (numlike(v)) return num_unknown();
  if (v.sh.kind == SK_MAT) {
    if (v.sh.rows >= 0 && v.sh.cols >= 0 && v.sh.rows != v.sh.cols)
      argerror(c, a, "bad argument #1 to '%s' (square matrix expected, got %lldx%lld)", a->b->name, (long long)v.sh.rows,
               (long long)v.sh.cols);
    return num_unknown();
  }
  if (unknown(v)) return num_unknown();
  if (shape_describe(v.sh, d, sizeof d)) argerror(c, a, "bad argument #1 to '%s' (matrix expected, got %s)", a->b->name, d);
  else ck_die(c);
  return av_any();
}

/* ---- min, max, log ---- */
static AVal h_minmax(Ck *c, BArgs *a) {
  OpKind op = a->b->op;
  if (!a->given[1] && a->ndots == 0) {
    AVal in[1] = { a->v[0] };
    return ck_rule(c, op == OP_MAX2 ? OP_MAX : OP_MIN, in, NULL, a->sp);
  }
  if (!a->given[1]) { ck_die(c); return av_any(); }
  for (int i = 0; i < a->ndots; i++)
    if (a->dotnames[i]) { ck_die(c); return av_any(); }
  AVal r = ck_rule(c, op, a->v, NULL, a->sp);
  for (int i = 0; i < a->ndots && ck_alive(c); i++) {
    AVal in[2] = { r, a->dots[i] };
    r = ck_rule(c, op, in, NULL, a->sp);
  }
  return r;
}

static AVal h_log(Ck *c, BArgs *a) {
  AVal x = ck_rule(c, OP_LOG, a->v, NULL, a->sp);
  if (!a->given[1] || !ck_alive(c)) return x;
  AVal b = ck_rule(c, OP_LOG, &a->v[1], NULL, a->sp);
  if (!ck_alive(c)) return av_any();
  AVal in[2] = { x, b };
  return ck_rule(c, OP_DIV, in, NULL, a->sp);
}

/* ---- nn: the geometry from known shape arguments (builtins_nn.c ints, params) ---- */
/* Argument i as n whole numbers: 1 known (out), 0 not known, -1 a certain error. */
static int ints(Ck *c, BArgs *a, int i, int n, int64_t min, double *out) {
  AVal v = a->v[i];
  char d[64];
  int got = -1;
  if (v.sh.kind == SK_MAT) {
    if (v.sh.rows < 0 || v.sh.cols < 0) return 0;
    if (v.sh.rows * v.sh.cols == n && (v.sh.rows == 1 || v.sh.cols == 1)) {
      if (!v.el) return 0;
      for (int k = 0; k < n; k++) out[k] = v.el[k];
      got = n;
    }
  } else if (v.sh.kind == SK_LIST) {
    if (!v.list) return 0;
    if (v.list->n == n) {
      got = n;
      for (int k = 0; k < n && got == n; k++) {
        AVal x = v.list->items[k];
        if (x.sh.kind == SK_NUM || (x.sh.kind == SK_MAT && x.sh.rows == 1 && x.sh.cols == 1)) {
          if (!x.sh.known) return 0;
          out[k] = x.sh.value;
        } else if (unknown(x) || (x.sh.kind == SK_MAT && (x.sh.rows < 0 || x.sh.cols < 0))) return 0;
        else got = -1;
      }
    }
  } else if (unknown(v)) return 0;
  if (got != n) {
    if (v.sh.kind == SK_MAT) snprintf(d, sizeof d, "%lldx%lld", (long long)v.sh.rows, (long long)v.sh.cols);
    else if (!shape_describe(v.sh, d, sizeof d)) { ck_die(c); return -1; }
    argerror(c, a, "bad argument #%d to '%s' (%d whole numbers expected, as [%s], got %s)", i + 1, a->b->name, n,
             n == 4 ? "a, b, c, d" : "a, b", d);
    return -1;
  }
  for (int k = 0; k < n; k++)
    if (!(out[k] == floor(out[k]) && out[k] >= (double)min && out[k] < 1e9)) {
      argerror(c, a, "bad argument #%d to '%s' (whole numbers %s expected, got %g)", i + 1, a->b->name,
               min ? "of at least 1" : "of at least 0", out[k]);
      return -1;
    }
  return 1;
}

/* The 11 geometry numbers of a call (params): 1 known, 0 not, -1 a certain error. */
static int geometry(Ck *c, BArgs *a, int ishape, int fshape, int fshape_n, int stride, int pad, double g[11]) {
  double in4[4], f4[4], st[2], pd[2], ps[2];
  int k = ints(c, a, ishape, 4, 1, in4);
  if (k <= 0) return k;
  if (fshape_n == 4) { if ((k = ints(c, a, fshape, 4, 1, f4)) <= 0) return k; }
  else {
    if ((k = ints(c, a, fshape, 2, 1, ps)) <= 0) return k;
    f4[0] = in4[1]; f4[1] = in4[1]; f4[2] = ps[0]; f4[3] = ps[1];
  }
  if ((k = ints(c, a, stride, 2, 1, st)) <= 0) return k;
  if ((k = ints(c, a, pad, 2, 0, pd)) <= 0) return k;
  if (fshape_n == 4 && f4[1] != in4[1]) {
    ck_fail(c, a->sp, "%s: filter_shape [%g,%g,%g,%g] has %g channels but input_shape [%g,%g,%g,%g] has %g", a->b->name, f4[0],
            f4[1], f4[2], f4[3], f4[1], in4[0], in4[1], in4[2], in4[3], in4[1]);
    return -1;
  }
  const char *what = fshape_n == 4 ? "filter" : "pool";
  if (f4[2] > in4[2] + 2 * pd[0] || f4[3] > in4[3] + 2 * pd[1]) {
    ck_fail(c, a->sp, "%s: the %s (%gx%g) is larger than the padded input (%gx%g: %gx%g with padding [%g,%g])", a->b->name, what,
            f4[2], f4[3], in4[2] + 2 * pd[0], in4[3] + 2 * pd[1], in4[2], in4[3], pd[0], pd[1]);
    return -1;
  }
  g[0] = in4[0]; g[1] = in4[1]; g[2] = in4[2]; g[3] = in4[3];
  g[4] = f4[0]; g[5] = f4[2]; g[6] = f4[3];
  g[7] = st[0]; g[8] = st[1]; g[9] = pd[0]; g[10] = pd[1];
  return 1;
}

static AVal nn_call(Ck *c, BArgs *a, int ishape, int fshape, int fshape_n, int stride, int pad) {
  double g[11];
  int k = geometry(c, a, ishape, fshape, fshape_n, stride, pad, g);
  if (k < 0 || !ck_alive(c)) return av_any();
  ShapeExtra x;
  memset(&x, 0, sizeof x);
  x.nn = k ? g : NULL;
  return ck_rule(c, a->b->op, a->v, &x, a->sp);
}

static AVal h_conv2d(Ck *c, BArgs *a) {
  if (a->given[6]) {
    double f4[4];
    int k = ints(c, a, 3, 4, 1, f4);
    if (k < 0 || !ck_alive(c)) return av_any();
    AVal b = a->v[6];
    char d[64];
    if (k > 0 && (b.sh.kind == SK_MAT ? b.sh.rows >= 0 && b.sh.cols >= 0 : !unknown(b))) {
      if (b.sh.kind == SK_MAT) snprintf(d, sizeof d, "%lldx%lld", (long long)b.sh.rows, (long long)b.sh.cols);
      else shape_describe(b.sh, d, sizeof d);
      if (b.sh.kind != SK_MAT || b.sh.rows != (int64_t)f4[0] || b.sh.cols != 1) {
        argerror(c, a, "bad argument #7 to 'conv2d' (a %g x 1 matrix expected (one bias per filter), got %s)", f4[0], d);
        return av_any();
      }
    }
  }
  AVal r = nn_call(c, a, 2, 3, 4, 4, 5);
  if (!a->given[6] || !ck_alive(c)) return r;
  AVal in[2] = { r, a->v[6] };
  return ck_rule(c, OP_BIAS_ADD, in, NULL, a->sp);
}
static AVal h_conv2d_bwd(Ck *c, BArgs *a) { return nn_call(c, a, 4, 5, 4, 2, 3); }
static AVal h_pool(Ck *c, BArgs *a) { return nn_call(c, a, 1, 2, 2, 3, 4); }
static AVal h_pool_bwd(Ck *c, BArgs *a) { return nn_call(c, a, 2, 3, 2, 4, 5); }

/* ---- functions of functions ---- */
static AVal fn_of(Ck *c, AVal f, AFuncKind kind, int argnum) {
  AVal r = av_shape(shape_of_kind(SK_FUNC));
  if (!f.fn || f.fn->kind != AF_CLOSURE) return r;
  AFunc *d = ck_alloc(c, sizeof *d);
  memset(d, 0, sizeof *d);
  d->kind = (uint8_t)kind;
  d->fi = f.fn->fi;
  d->src = f.fn->src;
  d->of = f.fn;
  d->argnum = argnum;
  r.fn = d;
  return r;
}

static AVal h_grad(Ck *c, BArgs *a) {
  int argnum = 1;
  if (a->given[1]) argnum = a->v[1].sh.kind == SK_NUM && a->v[1].sh.known && a->v[1].sh.value == floor(a->v[1].sh.value) &&
                            a->v[1].sh.value >= 1 && a->v[1].sh.value <= 64 ? (int)a->v[1].sh.value : 0;
  return fn_of(c, a->v[0], AF_GRAD, argnum);
}
static AVal h_opaque_fn(Ck *c, BArgs *a) { return fn_of(c, a->v[0], AF_OPAQUE, 0); }
static AVal h_jit(Ck *c, BArgs *a) { (void)c; return a->v[0].sh.kind == SK_FUNC ? a->v[0] : av_shape(shape_of_kind(SK_FUNC)); }

/* explain(f, ...) runs f on the arguments (traced): its shape errors are f's own (reported, as
** the explain hook reports them); dot, trace_grad, gradcheck run it too (not reported). */
static AVal run_f(Ck *c, BArgs *a, bool report) {
  ck_call(c, a->v[0], a->ndots, a->dots, a->dotnames, a->sp, report);
  return av_any();
}
static AVal h_explain(Ck *c, BArgs *a) { return run_f(c, a, true); }
static AVal h_runs_f(Ck *c, BArgs *a) { return run_f(c, a, false); }
static AVal h_gradcheck(Ck *c, BArgs *a) {
  AVal x = a->v[1];
  Symbol *none[1] = { NULL };
  ck_call(c, a->v[0], 1, &x, none, a->sp, false);
  return num_unknown();
}

/* ---- the table: by name (sorted, grep ORDER BUILTIN); a builtin not here whose row names
** an op takes the op's rule; any other gives an unknown value ---- */
typedef struct BiShape { const char *name; BiShapeFn fn; } BiShape;
static const BiShape shapes[] = {
  { "as.double", h_as_double }, { "as.integer", h_as_double }, { "as.logical", h_as_logical }, { "as.matrix", h_as_matrix },
  { "as.scalar", h_as_scalar }, { "assert", h_assert }, { "avg", h_mean }, { "avg_pool", h_pool },
  { "avg_pool_backward", h_pool_bwd }, { "c", h_c }, { "cat", h_null }, { "cbind", h_cbind }, { "cdf", h_same },
  { "cholesky", h_cholesky }, { "colMeans", h_rowstat }, { "colSds", h_rowstat }, { "colVars", h_rowstat },
  { "conv2d", h_conv2d }, { "conv2d_backward_data", h_conv2d_bwd }, { "conv2d_backward_filter", h_conv2d_bwd },
  { "cpu", h_first }, { "det", h_det }, { "dot", h_runs_f }, { "eigen", h_eigen }, { "exists", h_bool },
  { "explain", h_explain }, { "gpu", h_first }, { "grad", h_grad }, { "gradcheck", h_gradcheck }, { "hessian", h_opaque_fn },
  { "icdf", h_same }, { "identity", h_first }, { "ifdef", h_first }, { "inv", h_inv }, { "inverse", h_inv },
  { "is.character", h_is }, { "is.function", h_is }, { "is.list", h_is }, { "is.logical", h_is }, { "is.matrix", h_is },
  { "is.null", h_is }, { "is.numeric", h_is }, { "jacobian", h_opaque_fn }, { "jit", h_jit }, { "length", h_length },
  { "list", h_list }, { "log", h_log }, { "lower.tri", h_same }, { "matrix", h_matrix }, { "max", h_minmax },
  { "max_pool", h_pool }, { "max_pool_backward", h_pool_bwd }, { "mean", h_mean }, { "min", h_minmax },
  { "mpi_rank", h_num }, { "mpi_size", h_num }, { "ncol", h_ncol }, { "nrow", h_nrow }, { "paste", h_str },
  { "pchisq", h_same }, { "pexp", h_same }, { "pf", h_same }, { "pmax", h_minmax }, { "pmin", h_minmax }, { "pnorm", h_same },
  { "print", h_any }, { "progress", h_first }, { "pt", h_same }, { "qchisq", h_same }, { "qexp", h_same }, { "qf", h_same },
  { "qnorm", h_same }, { "qr", h_qr }, { "qt", h_same }, { "quit", h_quit }, { "rand", h_rand }, { "rbind", h_rbind },
  { "read", h_read }, { "replace", h_same }, { "rev", h_same }, { "rowCumsum", h_same }, { "rowMeans", h_rowstat },
  { "rowSds", h_rowstat }, { "rowVars", h_rowstat }, { "scale", h_same }, { "sd", h_num }, { "seq", h_seq },
  { "seq_len", h_seq_len }, { "solve", h_solve }, { "source", h_source }, { "sprintf", h_str }, { "stop", h_stop },
  { "stop_gradient", h_first }, { "svd", h_svd }, { "time", h_num }, { "toString", h_str }, { "tr", h_trace },
  { "trace", h_trace }, { "trace_grad", h_runs_f }, { "typeof", h_str }, { "upper.tri", h_same },
  { "value_and_grad", h_opaque_fn }, { "var", h_num },
};

static const BiShape *find_shape(const char *name) {
  int lo = 0, hi = (int)(sizeof shapes / sizeof shapes[0]) - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, k = strcmp(shapes[mid].name, name);
    if (k == 0) return &shapes[mid];
    if (k < 0) lo = mid + 1;
    else hi = mid - 1;
  }
  return NULL;
}

/* bi_call's matching of arguments to the signature; false (the path fails) on its errors. */
static bool bind_args(Ck *c, const Builtin *b, int nargs, AVal *args, Symbol **names, BArgs *a) {
  const BiInfo *info = &c->I->bi[b - builtin_table];
  a->b = b;
  a->n = info->nparams;
  for (int i = 0; i < BI_MAX_PARAMS; i++) { a->v[i] = av_none(); a->given[i] = false; }
  a->ndots = 0;
  bool to_param[nargs > 0 ? nargs : 1];
  for (int i = 0; i < nargs; i++) {
    to_param[i] = false;
    if (!names[i]) continue;
    for (int j = 0; j < info->nparams; j++)
      if (info->names[j] == names[i]) {
        if (a->given[j]) return false;
        a->v[j] = args[i];
        a->given[j] = true;
        to_param[i] = true;
        break;
      }
    if (!to_param[i] && info->dots < 0) return false;
  }
  int next = 0;
  for (int i = 0; i < nargs; i++) {
    if (to_param[i]) continue;
    if (names[i]) { a->dots[a->ndots] = args[i]; a->dotnames[a->ndots++] = names[i]; continue; }
    while (next < info->nparams && (info->dots < 0 || next < info->dots) && a->given[next]) next++;
    if (next < info->nparams && (info->dots < 0 || next < info->dots)) { a->v[next] = args[i]; a->given[next++] = true; continue; }
    if (info->dots >= 0) { a->dots[a->ndots] = args[i]; a->dotnames[a->ndots++] = NULL; continue; }
    return false;
  }
  for (int j = 0; j < info->nreq; j++)
    if (!a->given[j]) return false;
  return true;
}

AVal ck_builtin(Ck *c, const Builtin *b, int nargs, AVal *args, Symbol **names, Span sp) {
  if (!ck_alive(c)) return av_any();
  BArgs a;
  AVal dots[nargs > 0 ? nargs : 1];
  Symbol *dotnames[nargs > 0 ? nargs : 1];
  a.dots = dots;
  a.dotnames = dotnames;
  a.sp = sp;
  if (!bind_args(c, b, nargs, args, names, &a)) { ck_die(c); return av_any(); }   /* its argument errors */
  const BiShape *s = find_shape(b->name);
  if (s) return s->fn(c, &a);
  if (b->op == OP_IFELSE && a.n >= 3)                /* strings: a list of strings (builtins_data.c), */
    for (int k = 1; k < 3; k++)                      /* not the op's shapes */
      if (a.v[k].sh.kind == SK_STR || a.v[k].sh.kind == SK_LIST) return av_any();
  if (b->op != OP_NONE && !(op_info[b->op].flags & OPF_NN)) return h_op(c, &a);
  if (b->op == OP_BIAS_ADD || b->op == OP_BIAS_MULTIPLY) return ck_rule(c, b->op, a.v, NULL, sp);
  return av_any();
}

/* ---- source() ---- */
static bool readable(const char *p) { return access(p, R_OK) == 0; }

/* interp.c find_source: absolute; next to the file that calls; the current directory; the
** standard library; SystemDS's scripts/ and root above the DML builtins directory. */
static bool find_file(Ck *c, const char *path, char *out, size_t n) {
  if (path[0] == '/') { snprintf(out, n, "%s", path); return readable(out); }
  if (c->src && c->src->name[0] != '<' && strcmp(c->src->name, "-e") != 0) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", c->src->name);
    char *slash = strrchr(dir, '/');
    if (!slash) snprintf(out, n, "%s", path);
    else { *slash = '\0'; snprintf(out, n, "%s/%s", dir[0] ? dir : "/", path); }
    if (readable(out)) return true;
  }
  snprintf(out, n, "%s", path);
  if (readable(out)) return true;
  char buf[PATH_MAX];
  const char *lib = interp_stdlib_dir(c->I, buf, sizeof buf);
  snprintf(out, n, "%s/%s", lib, path);
  return readable(out) || interp_dml_root_file(c->I, path, out, n);
}

AVal ck_source(Ck *c, const char *path, Symbol *ns, Span sp) {
  char full[PATH_MAX + 64], real[PATH_MAX + 64];
  if (!find_file(c, path, full, sizeof full)) { ck_die(c); return av_any(); }
  if (!realpath(full, real)) snprintf(real, sizeof real, "%s", full);
  for (int i = 0; i < c->nsourcing; i++)
    if (strcmp(c->sourcing[i], real) == 0) { ck_die(c); return av_any(); }     /* a cycle */
  if (c->nsourcing >= 16 || c->nchunks >= 64 || c->nframes >= CHECK_MAX_FRAMES - 1) {
    if (!ns) { c->opaque_globals = true; for (int32_t i = 0; i < c->globals.cap; i++) if (c->globals.e[i].sym) c->globals.e[i].v = av_any(); }
    return av_any();
  }
  Source *src = source_from_file(full, NULL);
  if (!src) { ck_die(c); return av_any(); }
  ParseError pe;
  Chunk *ch = interp_load(c->I, src, ns != NULL, &pe);
  source_release(src);                               /* the chunk holds it */
  if (!ch) { ck_die(c); return av_any(); }
  ch->top.name = sym_intern(&c->I->syms, "source", 6);
  c->chunks[c->nchunks++] = ch;
  c->has_quit = c->has_quit || ck_names_quit(ch);
  c->sourcing[c->nsourcing] = mem_alloc(strlen(real) + 1);
  memcpy(c->sourcing[c->nsourcing++], real, strlen(real) + 1);
  ck_push_frame(c, "source", &ch->top, sp);
  AEnv *env = ns ? ck_env_new(c, &ch->top, NULL) : NULL;
  FnCtx fc, *saved_fn = c->fn;
  memset(&fc, 0, sizeof fc);
  fc.outer = saved_fn;
  LoopCtx *saved_loop = c->loop;
  c->fn = &fc;
  c->loop = NULL;
  int r0 = c->reach;
  int64_t q0 = c->quits;
  ck_run_chunk(c, ch, env);
  int r = c->reach;
  c->fn = saved_fn;
  c->loop = saved_loop;
  ck_pop_frame(c);
  mem_free(c->sourcing[--c->nsourcing]);
  if (r == R_ERR) return av_any();                   /* the file fails */
  if (c->quits != q0) c->reach = r == R_EXIT ? R_EXIT : R_MAY;
  else c->reach = r0;                                /* its top-level return ends the file alone */
  if (!ns) return av_shape(shape_of_kind(SK_NULL));
  AList *l = ck_alloc(c, sizeof *l);
  l->n = 0;
  l->multi = false;
  l->items = ck_alloc(c, (size_t)(env->n ? env->n : 1) * sizeof(AVal));
  l->names = ck_alloc(c, (size_t)(env->n ? env->n : 1) * sizeof(Symbol *));
  for (int32_t i = 0; i < env->n; i++) {
    if (env->slots[i].sh.kind == SK_NONE || sym_is_namespace(env->fi->slots[i])) continue;
    l->items[l->n] = env->slots[i];
    l->names[l->n++] = env->fi->slots[i];
  }
  AVal v = av_shape(shape_of_kind(SK_LIST));
  v.sh.len = l->n;
  v.list = l;
  return v;
}

AVal ck_lib_function(Ck *c, Symbol *name, Span sp) {
  for (int i = 0; i < c->nlibs; i++)
    if (c->libs[i].name == name) return c->libs[i].fn;
  if (c->nlibs == (int)(sizeof c->libs / sizeof c->libs[0]) || strchr(name->name, '/')) return av_any();
  char path[PATH_MAX + 64];
  bool dml;
  if (!interp_lib_path(c->I, name, path, sizeof path, &dml)) return av_any();
  Symbol *want[3] = { name, NULL, NULL };
  if (dml) interp_dml_entries(c->I, name, want);             /* SystemDS's m_NAME, f_NAME, s_NAME */
  int k = c->nlibs++;
  c->libs[k].name = name;
  c->libs[k].fn = av_any();                          /* (while it loads: a call of itself is not told) */
  int r0 = c->reach;
  bool rep0 = c->report;
  c->reach = R_MAY;                                  /* its top level only defines functions */
  c->report = false;
  AVal ns = ck_source(c, path, name, sp);
  bool ok = ck_alive(c);
  c->reach = r0;
  c->report = rep0;
  AVal fn = av_any();
  bool found = false;
  for (int w = 0; ok && ns.list && w < 3 && want[w] && !found; w++)      /* the first of them wins */
    for (int32_t i = 0; i < ns.list->n && !found; i++)
      if (ns.list->names[i] == want[w] && ns.list->items[i].sh.kind == SK_FUNC) { fn = ns.list->items[i]; found = true; }
  c->libs[k].fn = fn;
  return fn;
}
