/*
** frame.c — the frame value (frame.h): making, copying, cells as text or numbers, the schema's
** type names, conversion to and from matrices, indexing, left indexing, rbind/cbind and R's
** data.frame print. Everything a frame allocates is counted against --max-memory.
*/
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "err.h"
#include "frame/frame.h"
#include "mem.h"
#include "ops.h"
#include "tensor.h"

/* grep ORDER FT */
static const char *const type_names[FT_COUNT] = { "STRING", "INT64", "INT32", "FP64", "FP32", "BOOLEAN" };

const char *frame_type_name(int t) { return t >= 0 && t < FT_COUNT ? type_names[t] : "?"; }

int frame_type_parse(const char *s) {
  for (int t = 0; t < FT_COUNT; t++)
    if (!strcasecmp(s, type_names[t])) return t;
  if (!strcasecmp(s, "STR")) return FT_STRING;
  if (!strcasecmp(s, "DOUBLE")) return FT_FP64;
  if (!strcasecmp(s, "INT")) return FT_INT64;
  if (!strcasecmp(s, "BOOL")) return FT_BOOLEAN;
  return -1;
}

/* ---- memory ---- */

static l_noret frame_oom(Interp *I, Span sp, uint64_t n) {
  char b[32];
  mls_throw(I, sp, "out of memory allocating %s for a frame", mem_format_size(b, sizeof b, n));
}

/* n bytes counted against f (and --max-memory); never NULL. */
static void *fr_alloc(Interp *I, FrameBlock *f, uint64_t n, Span sp) {
  if (n > SIZE_MAX / 2 || !mem_charge(n)) frame_oom(I, sp, n);
  void *p = mem_try_alloc(n ? (size_t)n : 1);
  if (!p) {
    mem_uncharge(n);
    frame_oom(I, sp, n);
  }
  f->charged += n;
  return p;
}

/* A cell's string is counted with malloc's overhead of a small block, which dwarfs short texts
** (a million "0" cells take 32 MB, not 2). */
#define STR_COST(n) ((uint64_t)(n) + 1 + 24)

static char *fr_strdup(Interp *I, FrameBlock *f, const char *s, Span sp) {
  size_t n = strlen(s);
  if (!mem_charge(STR_COST(n))) frame_oom(I, sp, STR_COST(n));
  char *p = mem_try_alloc(n + 1);
  if (!p) {
    mem_uncharge(STR_COST(n));
    frame_oom(I, sp, n + 1);
  }
  f->charged += STR_COST(n);
  memcpy(p, s, n + 1);
  return p;
}

static void fr_free_str(FrameBlock *f, char *s) {
  if (!s) return;
  uint64_t n = STR_COST(strlen(s));
  mem_uncharge(n);
  f->charged -= n;
  mem_free(s);
}

void frame_free(FrameBlock *f) {
  for (int64_t c = 0; f->cols && c < f->ncol; c++) {
    FrameCol *col = &f->cols[c];
    if (col->s)
      for (int64_t r = 0; r < f->rows; r++) mem_free(col->s[r]);
    mem_free(col->s);
    mem_free(col->d);
    mem_free(col->name);
    mem_free(col->mv);
  }
  mem_free(f->cols);
  mem_uncharge(f->charged);
  mem_free(f);
}

FrameBlock *frame_held_empty(Interp *I, int64_t rows, int64_t capcols, Span sp) {
  if (rows < 0 || capcols < 0 || rows > INT64_MAX / 64 || capcols > INT32_MAX)
    mls_throw(I, sp, "a frame of %lldx%lld is too large", (long long)rows, (long long)capcols);
  FrameBlock *f = mem_try_alloc(sizeof *f);
  if (!f) frame_oom(I, sp, sizeof *f);
  memset(f, 0, sizeof *f);
  f->refcount = 1;
  tmp_push(I, val_frame(f));                       /* from here a throw frees it */
  f->cols = fr_alloc(I, f, (uint64_t)(capcols ? capcols : 1) * sizeof(FrameCol), sp);
  memset(f->cols, 0, (size_t)(capcols ? capcols : 1) * sizeof(FrameCol));
  f->rows = rows;
  return f;
}

void frame_add_col(Interp *I, FrameBlock *f, int type, Span sp) {
  int64_t rows = f->rows, c = f->ncol;
  FrameCol *col = &f->cols[c];
  f->ncol = c + 1;                                 /* what frame_free walks */
  col->type = (uint8_t)type;
  if (type == FT_STRING) {
    col->s = fr_alloc(I, f, (uint64_t)(rows ? rows : 1) * sizeof(char *), sp);
    memset(col->s, 0, (size_t)(rows ? rows : 1) * sizeof(char *));
  } else {
    col->d = fr_alloc(I, f, (uint64_t)(rows ? rows : 1) * sizeof(double), sp);
    for (int64_t r = 0; r < rows; r++) col->d[r] = NAN;
  }
  char nm[32];
  snprintf(nm, sizeof nm, "C%lld", (long long)c + 1);
  col->name = fr_strdup(I, f, nm, sp);
}

FrameBlock *frame_held(Interp *I, int64_t rows, int64_t ncol, const uint8_t *types, Span sp) {
  FrameBlock *f = frame_held_empty(I, rows, ncol, sp);
  for (int64_t c = 0; c < ncol; c++) frame_add_col(I, f, types ? types[c] : FT_STRING, sp);
  return f;
}

void frame_set_name(Interp *I, FrameBlock *f, int64_t c, const char *name, Span sp) {
  char *p = fr_strdup(I, f, name, sp);
  fr_free_str(f, f->cols[c].name);
  f->cols[c].name = p;
}

void frame_set_mv(Interp *I, FrameBlock *f, int64_t c, const char *mv, Span sp) {
  char *p = mv ? fr_strdup(I, f, mv, sp) : NULL;
  fr_free_str(f, f->cols[c].mv);
  f->cols[c].mv = p;
}

FrameBlock *frame_copy_held(Interp *I, const FrameBlock *f, Span sp) {
  FrameBlock *g = frame_held_empty(I, f->rows, f->ncol, sp);
  for (int64_t c = 0; c < f->ncol; c++) {
    frame_add_col(I, g, f->cols[c].type, sp);
    frame_set_name(I, g, c, f->cols[c].name, sp);
    frame_set_mv(I, g, c, f->cols[c].mv, sp);
    if (f->cols[c].type == FT_STRING) {
      for (int64_t r = 0; r < f->rows; r++)
        if (f->cols[c].s[r]) g->cols[c].s[r] = fr_strdup(I, g, f->cols[c].s[r], sp);
    } else if (f->rows) {
      memcpy(g->cols[c].d, f->cols[c].d, (size_t)f->rows * sizeof(double));
    }
  }
  return g;
}

/* ---- cells ---- */

static bool is_na_text(const char *s) { return !s || !*s || !strcmp(s, "NA"); }

/* s as a number: the whole text (blanks around it allowed), NaN, Inf, TRUE/FALSE as 1/0. */
static bool text_num(const char *s, double *x) {
  while (*s == ' ' || *s == '\t') s++;
  if (!strcasecmp(s, "TRUE") || !strcmp(s, "T")) { *x = 1; return true; }
  if (!strcasecmp(s, "FALSE") || !strcmp(s, "F")) { *x = 0; return true; }
  char *end;
  double v = strtod(s, &end);
  if (end == s) return false;
  while (*end == ' ' || *end == '\t') end++;
  if (*end) return false;
  *x = v;
  return true;
}

/* x stored in a column of type t: a whole number for INT, 0/1 for BOOLEAN, float for FP32. */
static bool fit_num(int t, double *x) {
  if (isnan(*x)) return true;
  switch (t) {
  case FT_INT64: return *x == floor(*x) && fabs(*x) < 9.3e18;
  case FT_INT32: return *x == floor(*x) && *x >= -2147483648.0 && *x <= 2147483647.0;
  case FT_FP32: *x = (double)(float)*x; return true;
  case FT_BOOLEAN: *x = *x != 0; return true;
  default: return true;
  }
}

void frame_set_text(Interp *I, FrameBlock *f, int64_t r, int64_t c, const char *s, Span sp) {
  FrameCol *col = &f->cols[c];
  if (col->type == FT_STRING) {
    char *p = s ? fr_strdup(I, f, s, sp) : NULL;
    fr_free_str(f, col->s[r]);
    col->s[r] = p;
    return;
  }
  double x = NAN;
  if (!is_na_text(s)) {
    bool ok = text_num(s, &x);
    if (ok && col->type == FT_BOOLEAN) ok = x == 0 || x == 1;
    if (!ok || !fit_num(col->type, &x))
      mls_throw(I, sp, "'%.40s' is not a valid %s (row %lld, column %lld)", s, type_names[col->type], (long long)r + 1,
                (long long)c + 1);
  }
  col->d[r] = x;
}

void frame_set_num(Interp *I, FrameBlock *f, int64_t r, int64_t c, double x, Span sp) {
  FrameCol *col = &f->cols[c];
  if (col->type == FT_STRING) {
    char buf[48];
    fmt_num(buf, sizeof buf, x, 15);
    frame_set_text(I, f, r, c, isnan(x) ? NULL : buf, sp);
    return;
  }
  if (!fit_num(col->type, &x)) {
    char buf[48];
    fmt_num(buf, sizeof buf, x, 15);
    mls_throw(I, sp, "%s is not a valid %s (row %lld, column %lld)", buf, type_names[col->type], (long long)r + 1,
              (long long)c + 1);
  }
  col->d[r] = x;
}

void frame_set_value(Interp *I, FrameBlock *f, int64_t r, int64_t c, Value v, Span sp) {
  char d[64];
  switch (v.t) {
  case VT_NUM: frame_set_num(I, f, r, c, v.u.n, sp); break;
  case VT_BOOL:
    if (f->cols[c].type == FT_STRING) frame_set_text(I, f, r, c, v.u.b ? "TRUE" : "FALSE", sp);
    else frame_set_num(I, f, r, c, v.u.b, sp);
    break;
  case VT_STR: frame_set_text(I, f, r, c, v.u.s->s, sp); break;
  case VT_MAT:
    if (tensor_numel(v.u.m) == 1) { frame_set_num(I, f, r, c, tensor_at(v.u.m, 0), sp); break; }
    /* fallthrough */
  default: mls_throw(I, sp, "a frame cell takes a number, boolean or string, got %s", val_describe(v, d, sizeof d));
  }
}

const char *frame_get_text(const FrameBlock *f, int64_t r, int64_t c, char *buf) {
  const FrameCol *col = &f->cols[c];
  if (col->type == FT_STRING) return col->s[r];
  double x = col->d[r];
  if (isnan(x)) return NULL;
  if (col->type == FT_BOOLEAN) return x != 0 ? "true" : "false";
  fmt_num(buf, 48, x, 15);
  return buf;
}

bool frame_get_num(const FrameBlock *f, int64_t r, int64_t c, double *x) {
  const FrameCol *col = &f->cols[c];
  if (col->type != FT_STRING) { *x = col->d[r]; return true; }
  if (is_na_text(col->s[r])) { *x = NAN; return true; }
  return text_num(col->s[r], x);
}

Value frame_cell_value(Interp *I, const FrameBlock *f, int64_t r, int64_t c) {
  (void)I;
  const FrameCol *col = &f->cols[c];
  if (col->type == FT_STRING) return col->s[r] ? val_cstr(col->s[r]) : val_cstr("NA");
  if (col->type == FT_BOOLEAN && !isnan(col->d[r])) return val_bool(col->d[r] != 0);
  return val_num(col->d[r]);
}

int frame_detect_text(const char *s) {
  if (is_na_text(s)) return -1;                    /* says nothing */
  if (!strcasecmp(s, "true") || !strcasecmp(s, "false")) return FT_BOOLEAN;
  double x;
  if (!text_num(s, &x) || !isfinite(x)) {
    if (!strcasecmp(s, "NaN") || !strcasecmp(s, "Inf") || !strcasecmp(s, "-Inf")) return FT_FP64;
    return FT_STRING;
  }
  for (const char *p = s; *p; p++)
    if (*p == '.' || *p == 'e' || *p == 'E') return FT_FP64;
  return fabs(x) <= 2147483647.0 ? FT_INT32 : FT_INT64;
}

/* ---- conversions ---- */

Value frame_from_matrix(Interp *I, const Tensor *m, Span sp) {
  int mark = I->ntmp;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m);
  FrameBlock *f = frame_held_empty(I, rows, cols, sp);
  for (int64_t c = 0; c < cols; c++) {
    frame_add_col(I, f, FT_FP64, sp);
    for (int64_t r = 0; r < rows; r++) {
      if (interp_poll(I, r)) interp_check_interrupt(I, sp);
      f->cols[c].d[r] = tensor_get1(m, r, c);
    }
  }
  Value v = val_frame(f);
  val_retain(v);
  tmp_release_to(I, mark);
  return v;
}

Value frame_to_matrix(Interp *I, const FrameBlock *f, Span sp) {
  Tensor *t = tensor_new(I, f->rows, f->ncol);
  tmp_push(I, val_mat(t));
  double *d = tensor_data(t);
  for (int64_t r = 0; r < f->rows; r++) {
    if (interp_poll(I, r)) interp_check_interrupt(I, sp);
    for (int64_t c = 0; c < f->ncol; c++)
      if (!frame_get_num(f, r, c, &d[r * f->ncol + c]))
        mls_throw(I, sp, "cannot convert the frame to a matrix: '%.40s' (row %lld, column %lld) is not a number",
                  f->cols[c].s[r], (long long)r + 1, (long long)c + 1);
  }
  tmp_pop(I, 1);
  return val_mat(t);
}

/* ---- comparisons ---- */

/* One side of a comparison at cell (r, c): a number (num), or text (txt, NULL for NA). */
typedef struct CmpSide { bool num; double x; const char *txt; char buf[48]; } CmpSide;

static void cmp_side(CmpSide *s, Value v, int64_t r, int64_t c) {
  if (v.t == VT_FRAME) {
    const FrameBlock *f = v.u.fr;
    s->num = frame_numeric(f->cols[c].type);
    if (s->num) s->x = f->cols[c].d[r];
    s->txt = s->num ? NULL : f->cols[c].s[r];
  } else if (v.t == VT_STR) {
    s->num = false;
    s->txt = v.u.s->s;
  } else {
    s->num = true;
    s->x = v.t == VT_NUM ? v.u.n : (double)v.u.b;
  }
}

static const char *side_text(CmpSide *s) {
  if (!s->num) return s->txt;
  if (isnan(s->x)) return NULL;
  snprintf(s->buf, sizeof s->buf, "%.15g", s->x);
  return s->buf;
}

Value frame_compare(Interp *I, int op, Value a, Value b, Span sp) {
  const FrameBlock *f = a.t == VT_FRAME ? a.u.fr : b.u.fr;
  Value other = a.t == VT_FRAME ? b : a;
  if (op_cmp_holds(op, 0) < 0)                        /* & and |: not comparisons */
    mls_throw(I, sp, "invalid operands for '%s': a frame (compare its cells with ==, !=, <, <=, >, >=)", op_info[op].sym);
  if (other.t == VT_FRAME) {
    if (other.u.fr->rows != f->rows || other.u.fr->ncol != f->ncol)
      mls_throw(I, sp, "frames of %lldx%lld and %lldx%lld cannot be compared cell by cell", (long long)a.u.fr->rows,
                (long long)a.u.fr->ncol, (long long)b.u.fr->rows, (long long)b.u.fr->ncol);
  } else if (other.t != VT_NUM && other.t != VT_BOOL && other.t != VT_STR) {
    mls_throw(I, sp, "a frame compares with a frame of its shape, a number or a string, not %s", val_type_name(other));
  }
  Tensor *t = tensor_new(I, f->rows, f->ncol);
  tmp_push(I, val_mat(t));
  double *d = tensor_data(t);
  CmpSide x, y;
  for (int64_t r = 0; r < f->rows; r++) {
    if (interp_poll(I, r)) interp_check_interrupt(I, sp);
    for (int64_t c = 0; c < f->ncol; c++) {
      cmp_side(&x, a, r, c);
      cmp_side(&y, b, r, c);
      bool v;
      if (x.num && y.num) {
        v = isnan(x.x) || isnan(y.x) ? op == OP_NE : op_cmp_holds(op, (x.x > y.x) - (x.x < y.x)) == 1;
      } else {
        const char *p = side_text(&x), *q = side_text(&y);
        v = !p || !q ? op == OP_NE : op_cmp_holds(op, strcmp(p, q)) == 1;
      }
      d[r * f->ncol + c] = v;
    }
  }
  tmp_pop(I, 1);
  return val_mat(t);
}

/* ---- indexing ---- */

typedef struct Sel { int64_t n, first; const Tensor *v; } Sel;   /* one dimension's positions */

static void make_sel(Interp *I, Sel *s, Value v, int64_t len, const FrameBlock *f, const char *dim, Span sp) {
  memset(s, 0, sizeof *s);
  char d[64];
  if (v.t == VT_UNBOUND || v.t == VT_NULL) { s->n = len; return; }
  if (v.t == VT_NUM || v.t == VT_BOOL) {
    double k = v.t == VT_NUM ? v.u.n : v.u.b;
    if (!(k >= 1 && k < (double)len + 1))
      mls_throw(I, sp, "index %g out of bounds for %lldx%lld frame (%s)", k, (long long)f->rows, (long long)f->ncol, dim);
    s->n = 1;
    s->first = (int64_t)k - 1;
    return;
  }
  if (v.t == VT_MAT && (tensor_rows(v.u.m) == 1 || tensor_cols(v.u.m) == 1)) {
    s->v = v.u.m;
    s->n = tensor_numel(v.u.m);
    for (int64_t i = 0; i < s->n; i++) {
      double k = tensor_at(v.u.m, i);
      if (!(k >= 1 && k < (double)len + 1))
        mls_throw(I, sp, "index %g out of bounds for %lldx%lld frame (%s)", k, (long long)f->rows, (long long)f->ncol, dim);
    }
    return;
  }
  mls_throw(I, sp, "a frame index must be a number or a vector, got %s", val_describe(v, d, sizeof d));
}

static int64_t sel_at(const Sel *s, int64_t i) { return s->v ? (int64_t)tensor_at(s->v, i) - 1 : s->first + i; }

static void two_sels(Interp *I, const FrameBlock *f, int nix, const Value *iv, Sel *rs, Sel *cs, Span sp) {
  if (nix != 2) mls_throw(I, sp, "a frame takes two indices: F[i, j], F[i, ] or F[, j]");
  make_sel(I, rs, iv[0], f->rows, f, "rows", sp);
  make_sel(I, cs, iv[1], f->ncol, f, "columns", sp);
}

/* Copies cell (sr, sc) of src to (r, c) of dst, converting to dst's column type. */
static void copy_cell(Interp *I, FrameBlock *dst, int64_t r, int64_t c, const FrameBlock *src, int64_t sr, int64_t sc, Span sp) {
  const FrameCol *from = &src->cols[sc];
  FrameCol *to = &dst->cols[c];
  if (to->type == FT_STRING && from->type == FT_STRING) {
    frame_set_text(I, dst, r, c, from->s[sr], sp);
  } else if (from->type != FT_STRING) {
    if (to->type == FT_STRING && from->type == FT_BOOLEAN && !isnan(from->d[sr]))
      frame_set_text(I, dst, r, c, from->d[sr] != 0 ? "true" : "false", sp);
    else frame_set_num(I, dst, r, c, from->d[sr], sp);
  } else {
    frame_set_text(I, dst, r, c, from->s[sr], sp);
  }
}

Value frame_index(Interp *I, const FrameBlock *f, int nix, const Value *iv, Span sp) {
  Sel rs, cs;
  two_sels(I, f, nix, iv, &rs, &cs, sp);
  int mark = I->ntmp;
  FrameBlock *g = frame_held_empty(I, rs.n, cs.n, sp);
  for (int64_t j = 0; j < cs.n; j++) {
    int64_t c = sel_at(&cs, j);
    frame_add_col(I, g, f->cols[c].type, sp);
    frame_set_name(I, g, j, f->cols[c].name, sp);
    frame_set_mv(I, g, j, f->cols[c].mv, sp);
    for (int64_t i = 0; i < rs.n; i++) {
      if (interp_poll(I, i)) interp_check_interrupt(I, sp);
      int64_t r = sel_at(&rs, i);
      if (f->cols[c].type == FT_STRING) {
        if (f->cols[c].s[r]) g->cols[j].s[i] = fr_strdup(I, g, f->cols[c].s[r], sp);
      } else {
        g->cols[j].d[i] = f->cols[c].d[r];
      }
    }
  }
  Value v = val_frame(g);
  val_retain(v);
  tmp_release_to(I, mark);
  return v;
}

void frame_assign(Interp *I, Value *place, int nix, const Value *iv, Value rhs, Span sp) {
  FrameBlock *f = place->u.fr;
  Sel rs, cs;
  two_sels(I, f, nix, iv, &rs, &cs, sp);
  char d[64];
  const FrameBlock *src = rhs.t == VT_FRAME ? rhs.u.fr : NULL;
  const Tensor *m = rhs.t == VT_MAT ? rhs.u.m : NULL;
  if (m && tensor_numel(m) == 1) m = NULL;
  if (src && (src->rows != rs.n || src->ncol != cs.n))
    mls_throw(I, sp, "cannot assign a %lldx%lld frame into %lldx%lld cells of a frame", (long long)src->rows,
              (long long)src->ncol, (long long)rs.n, (long long)cs.n);
  if (m && (tensor_rows(m) != rs.n || tensor_cols(m) != cs.n))
    mls_throw(I, sp, "cannot assign a %lldx%lld matrix into %lldx%lld cells of a frame", (long long)tensor_rows(m),
              (long long)tensor_cols(m), (long long)rs.n, (long long)cs.n);
  if (!src && !m && rhs.t != VT_NUM && rhs.t != VT_BOOL && rhs.t != VT_STR && rhs.t != VT_MAT)
    mls_throw(I, sp, "cannot assign %s into a frame", val_describe(rhs, d, sizeof d));
  int mark = I->ntmp;
  if (f->refcount > 1 || src == f) {               /* copy-on-write (F[..] = F reads the old one) */
    f = frame_copy_held(I, f, sp);
  } else {
    val_retain(*place);
    tmp_push(I, *place);
  }
  for (int64_t j = 0; j < cs.n; j++) {
    int64_t c = sel_at(&cs, j);
    for (int64_t i = 0; i < rs.n; i++) {
      if (interp_poll(I, i)) interp_check_interrupt(I, sp);
      int64_t r = sel_at(&rs, i);
      if (src) copy_cell(I, f, r, c, src, i, j, sp);
      else if (m) frame_set_num(I, f, r, c, tensor_get1(m, i, j), sp);
      else frame_set_value(I, f, r, c, rhs, sp);
    }
  }
  if (f != place->u.fr) {
    Value old = *place;
    val_retain(val_frame(f));
    *place = val_frame(f);
    val_release(old);
  }
  tmp_release_to(I, mark);
}

/* ---- rbind, cbind ---- */

Value frame_bind(Interp *I, bool rows, int n, const Value *v, Span sp) {
  char d[64];
  for (int k = 0; k < n; k++)
    if (v[k].t != VT_FRAME)
      mls_throw(I, sp, "%s of frames: argument %d is %s (as.frame() converts a matrix)", rows ? "rbind" : "cbind", k + 1,
                val_describe(v[k], d, sizeof d));
  int mark = I->ntmp;
  const FrameBlock *a = v[0].u.fr;
  FrameBlock *g;
  if (rows) {
    int64_t total = 0;
    for (int k = 0; k < n; k++) {
      const FrameBlock *b = v[k].u.fr;
      if (b->ncol != a->ncol)
        mls_throw(I, sp, "rbind of frames of %lld and %lld columns", (long long)a->ncol, (long long)b->ncol);
      total += b->rows;
    }
    g = frame_held_empty(I, total, a->ncol, sp);
    for (int64_t c = 0; c < a->ncol; c++) {
      int t = a->cols[c].type;                     /* columns of different types meet in STRING */
      for (int k = 1; k < n; k++)
        if (v[k].u.fr->cols[c].type != t) t = frame_numeric(t) && frame_numeric(v[k].u.fr->cols[c].type) ? FT_FP64 : FT_STRING;
      frame_add_col(I, g, t, sp);
      frame_set_name(I, g, c, a->cols[c].name, sp);
    }
    int64_t r0 = 0;
    for (int k = 0; k < n; k++) {
      const FrameBlock *b = v[k].u.fr;
      for (int64_t c = 0; c < b->ncol; c++)
        for (int64_t r = 0; r < b->rows; r++) copy_cell(I, g, r0 + r, c, b, r, c, sp);
      r0 += b->rows;
    }
  } else {
    int64_t total = 0;
    for (int k = 0; k < n; k++) {
      const FrameBlock *b = v[k].u.fr;
      if (b->rows != a->rows)
        mls_throw(I, sp, "cbind of frames of %lld and %lld rows", (long long)a->rows, (long long)b->rows);
      total += b->ncol;
    }
    g = frame_held_empty(I, a->rows, total, sp);
    int64_t c0 = 0;
    for (int k = 0; k < n; k++) {
      const FrameBlock *b = v[k].u.fr;
      for (int64_t c = 0; c < b->ncol; c++) {
        frame_add_col(I, g, b->cols[c].type, sp);
        frame_set_name(I, g, c0 + c, b->cols[c].name, sp);
        for (int64_t r = 0; r < b->rows; r++) copy_cell(I, g, r, c0 + c, b, r, c, sp);
      }
      c0 += b->ncol;
    }
  }
  Value r = val_frame(g);
  val_retain(r);
  tmp_release_to(I, mark);
  return r;
}

/* ---- printing (R's print.data.frame) ---- */

#define FRAME_PRINT_ROWS 20

/* The text of cell (r, c) for display into buf (cap 64), given the column's number format. */
static const char *display_cell(const FrameBlock *f, int64_t r, int64_t c, const NumFmt *nf, char *buf) {
  const FrameCol *col = &f->cols[c];
  if (col->type == FT_STRING) return col->s[r] ? col->s[r] : "<NA>";
  double x = col->d[r];
  if (isnan(x)) return "NA";
  if (col->type == FT_BOOLEAN) return x != 0 ? "TRUE" : "FALSE";
  fmt_apply(buf, 64, x, nf);
  return buf;
}

static size_t text_width(const char *s) {           /* display columns: UTF-8 lead bytes */
  size_t w = 0;
  for (; *s; s++) w += ((unsigned char)*s & 0xC0) != 0x80;
  return w;
}

static void pad(TextBuf *t, size_t n) {
  for (size_t i = 0; i < n; i++) tb_putn(t, " ", 1);
}

void frame_format(Interp *I, TextBuf *t, const FrameBlock *f, int digits, bool elide) {
  if (f->ncol == 0) { tb_printf(t, "data frame with 0 columns and %lld rows", (long long)f->rows); return; }
  if (f->rows == 0) {
    tb_puts(t, "[1]");
    for (int64_t c = 0; c < f->ncol; c++) { tb_puts(t, " "); tb_puts(t, f->cols[c].name); }
    tb_puts(t, "\n<0 rows> (or 0-length row.names)");
    return;
  }
  int64_t shown = elide && f->rows > FRAME_PRINT_ROWS ? FRAME_PRINT_ROWS : f->rows;
  NumFmt *nf = mem_alloc((size_t)f->ncol * sizeof(NumFmt));
  size_t *w = mem_alloc((size_t)f->ncol * sizeof(size_t));
  mls_defer(I, mem_free, nf);
  mls_defer(I, mem_free, w);
  char buf[64], rn[32];
  size_t rw = (size_t)snprintf(rn, sizeof rn, "%lld", (long long)shown);
  for (int64_t c = 0; c < f->ncol; c++) {
    const FrameCol *col = &f->cols[c];
    if (col->type == FT_FP64 || col->type == FT_FP32) nf[c] = fmt_choose(col->d, shown, 1, digits);
    else nf[c] = fmt_choose(NULL, 0, 1, digits);
    w[c] = text_width(col->name);
    for (int64_t r = 0; r < shown; r++) {
      if (interp_poll(I, r)) interp_check_interrupt(I, (Span){ 0, 0 });
      size_t k = text_width(display_cell(f, r, c, &nf[c], buf));
      if (k > w[c]) w[c] = k;
    }
  }
  pad(t, rw);
  for (int64_t c = 0; c < f->ncol; c++) {
    pad(t, 1 + w[c] - text_width(f->cols[c].name));
    tb_puts(t, f->cols[c].name);
  }
  for (int64_t r = 0; r < shown; r++) {
    int k = snprintf(rn, sizeof rn, "%lld", (long long)r + 1);
    tb_puts(t, "\n");
    tb_puts(t, rn);
    pad(t, rw - (size_t)k);
    for (int64_t c = 0; c < f->ncol; c++) {
      const char *s = display_cell(f, r, c, &nf[c], buf);
      pad(t, 1 + w[c] - text_width(s));
      tb_puts(t, s);
    }
  }
  if (shown < f->rows) tb_printf(t, "\n[%lld x %lld frame]", (long long)f->rows, (long long)f->ncol);
  mls_undefer(I, w);
  mls_undefer(I, nf);
  mem_free(w);
  mem_free(nf);
}
