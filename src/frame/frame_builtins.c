/*
** frame_builtins.c — the builtins that make and reshape frames (docs/frames.md): as.frame,
** frame, colnames, detectSchema, applySchema, map. The transform family is in transform.c,
** csv files in frame_io.c; nrow, ncol, rbind, cbind, as.matrix, as.scalar, print and indexing
** take frames where they take matrices (builtins_core.c, print.c, ops/index.c).
*/
#include <ctype.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"
#include "frame/frame.h"
#include "mem.h"

static Value held_result(Interp *I, FrameBlock *f, int mark) {
  Value v = val_frame(f);
  val_retain(v);
  tmp_release_to(I, mark);
  return v;
}

static bool is_scalar(Value v) { return v.t == VT_NUM || v.t == VT_BOOL || v.t == VT_STR; }

static int scalar_type(Value v) { return v.t == VT_STR ? FT_STRING : v.t == VT_BOOL ? FT_BOOLEAN : FT_FP64; }

/* as.frame(x) */
static Value as_frame(Interp *I, Value v, int depth, Span sp) {
  char d[64];
  int mark = I->ntmp;
  v = ad_primal(v);
  switch (v.t) {
  case VT_FRAME: val_retain(v); return v;
  case VT_MAT: return frame_from_matrix(I, v.u.m, sp);
  case VT_NUM: case VT_BOOL: case VT_STR: {
    uint8_t t = (uint8_t)scalar_type(v);
    FrameBlock *f = frame_held(I, 1, 1, &t, sp);
    frame_set_value(I, f, 0, 0, v, sp);
    return held_result(I, f, mark);
  }
  case VT_LIST: {
    const List *l = v.u.l;
    if (l->n == 1 && depth < 8) return as_frame(I, l->items[0], depth + 1, sp);   /* as.frame(L["name"]) */
    FrameBlock *f = frame_held_empty(I, 1, l->n, sp);
    for (int i = 0; i < l->n; i++) {
      Value x = ad_primal(l->items[i]);
      if (!is_scalar(x))
        bi_argerror(I, 1, "a list of numbers, booleans and strings expected, element %d is %s", i + 1,
                    val_describe(x, d, sizeof d));
      frame_add_col(I, f, scalar_type(x), sp);
      frame_set_value(I, f, 0, i, x, sp);
      if (l->names && l->names[i]) frame_set_name(I, f, i, l->names[i]->name, sp);
    }
    return held_result(I, f, mark);
  }
  default: bi_argerror(I, 1, "matrix, list, frame or scalar expected, got %s", val_describe(v, d, sizeof d));
  }
}

Value bi_as_frame(Interp *I, Args *a) { return as_frame(I, a->v[0], 0, a->span); }

/* The schema argument: a string "STRING,FP64", a list of strings, or a frame of type names
** (detectSchema's result); its ncol types into types[]. */
static void schema_arg(Interp *I, Args *a, int i, int64_t ncol, uint8_t *types) {
  Value v = ad_primal(a->v[i]);
  char d[64], name[24];
  int64_t c = 0;
  const char *p = NULL;
  if (v.t == VT_STR) p = v.u.s->s;
  for (;;) {
    const char *s;
    if (p) {
      while (*p == ' ' || *p == ',') p++;
      if (!*p) break;
      const char *e = p;
      while (*e && *e != ',' && *e != ' ') e++;
      snprintf(name, sizeof name, "%.*s", (int)(e - p < 20 ? e - p : 20), p);
      s = name;
      p = e;
    } else if (v.t == VT_LIST) {
      if (c >= v.u.l->n) break;
      Value x = v.u.l->items[c];
      if (x.t != VT_STR) bi_argerror(I, i + 1, "schema: a list of type names expected, element %lld is %s", (long long)c + 1,
                                     val_describe(x, d, sizeof d));
      s = x.u.s->s;
    } else if (v.t == VT_FRAME) {
      if (c >= v.u.fr->ncol || v.u.fr->rows < 1) break;
      s = frame_get_text(v.u.fr, 0, c, name);
      if (!s) s = "";
    } else {
      bi_argerror(I, i + 1, "schema: a string, a list of strings or a frame expected, got %s", val_describe(v, d, sizeof d));
    }
    int t = frame_type_parse(s);
    if (t < 0) bi_argerror(I, i + 1, "unknown value type '%.20s' (STRING, INT64, INT32, FP64, FP32, BOOLEAN)", s);
    if (c >= ncol) bi_argerror(I, i + 1, "the schema has more types than the %lld columns", (long long)ncol);
    types[c++] = (uint8_t)t;
  }
  if (c != ncol) bi_argerror(I, i + 1, "the schema has %lld types for %lld columns", (long long)c, (long long)ncol);
}

/* frame(data, rows=, cols=, schema=, colnames=) */
Value bi_frame(Interp *I, Args *a) {
  char d[64];
  Value data = ad_primal(a->v[0]);
  int64_t rows = -1, cols = -1;
  if (bi_given(a, 1)) rows = bi_opt_dim(I, a, 1, 0);
  if (bi_given(a, 2)) cols = bi_opt_dim(I, a, 2, 0);
  int64_t n = data.t == VT_LIST ? data.u.l->n : data.t == VT_MAT ? tensor_numel(data.u.m)
            : data.t == VT_FRAME ? data.u.fr->rows * data.u.fr->ncol : 1;
  if (!is_scalar(data) && data.t != VT_LIST && data.t != VT_MAT && data.t != VT_FRAME)
    bi_argerror(I, 1, "a scalar, list, matrix or frame expected, got %s", val_describe(data, d, sizeof d));
  if (rows < 0 && cols < 0) {
    if (data.t == VT_FRAME) { rows = data.u.fr->rows; cols = data.u.fr->ncol; }
    else if (data.t == VT_MAT) { rows = tensor_rows(data.u.m); cols = tensor_cols(data.u.m); }
    else { rows = 1; cols = n; }
  } else if (rows < 0) rows = cols ? (n + cols - 1) / cols : 0;
  else if (cols < 0) cols = rows ? (n + rows - 1) / rows : 0;
  if (n != 1 && n != rows * cols && !(n == 0 && rows * cols == 0))
    bi_argerror(I, 1, "%lld values for a %lldx%lld frame (give one, or one per cell)", (long long)n, (long long)rows, (long long)cols);
  if (n == 0 && rows * cols > 0) bi_argerror(I, 1, "no values for a %lldx%lld frame", (long long)rows, (long long)cols);
  if (cols > INT32_MAX || rows > INT64_MAX / (cols ? cols : 1)) bi_argerror(I, 2, "a frame of %lldx%lld is too large", (long long)rows, (long long)cols);
  int mark = I->ntmp;
  uint8_t *types = bi_scratch(I, (size_t)(cols ? cols : 1));
  for (int64_t c = 0; c < cols; c++) types[c] = FT_STRING;
  if (bi_given(a, 3)) schema_arg(I, a, 3, cols, types);
  double cost = (double)rows * (double)cols * (8.0 + (data.t == VT_STR ? (double)data.u.s->len + 25 : 26));
  if (cost > 1.8e19 || mem_over_limit((uint64_t)cost)) {     /* (before filling: an estimate) */
    char b[32];
    bi_error(I, "out of memory allocating a %lldx%lld frame (%s)", (long long)rows, (long long)cols,
             mem_format_size(b, sizeof b, cost > 1.8e19 ? UINT64_MAX : (uint64_t)cost));
  }
  FrameBlock *f = frame_held(I, rows, cols, types, a->span);
  for (int64_t r = 0; r < rows; r++) {
    bi_poll(I, r, NULL);
    for (int64_t c = 0; c < cols; c++) {
      int64_t k = n == 1 ? 0 : r * cols + c;
      if (data.t == VT_LIST) frame_set_value(I, f, r, c, ad_primal(data.u.l->items[k]), a->span);
      else if (data.t == VT_MAT) frame_set_num(I, f, r, c, tensor_at(data.u.m, k), a->span);
      else if (data.t == VT_FRAME) {
        char buf[48];
        const FrameBlock *g = data.u.fr;
        frame_set_text(I, f, r, c, frame_get_text(g, k / g->ncol, k % g->ncol, buf), a->span);
      } else frame_set_value(I, f, r, c, data, a->span);
    }
  }
  if (bi_given(a, 4)) {
    Value nm = ad_primal(a->v[4]);
    if (nm.t != VT_LIST || nm.u.l->n != cols) bi_argerror(I, 5, "colnames: a list of %lld strings expected", (long long)cols);
    for (int64_t c = 0; c < cols; c++) {
      if (nm.u.l->items[c].t != VT_STR) bi_argerror(I, 5, "colnames: element %lld is not a string", (long long)c + 1);
      frame_set_name(I, f, c, nm.u.l->items[c].u.s->s, a->span);
    }
  }
  Value v = val_frame(f);
  val_retain(v);
  bi_scratch_free(I, types);
  tmp_release_to(I, mark);
  return v;
}

static const FrameBlock *frame_arg(Interp *I, Args *a, int i) {
  Value v = ad_primal(a->v[i]);
  char d[64];
  if (v.t != VT_FRAME) bi_argerror(I, i + 1, "frame expected, got %s", val_describe(v, d, sizeof d));
  return v.u.fr;
}

/* colnames(F): a 1 x ncol frame of the column names (DML). */
Value bi_colnames(Interp *I, Args *a) {
  const FrameBlock *f = frame_arg(I, a, 0);
  int mark = I->ntmp;
  FrameBlock *g = frame_held(I, 1, f->ncol, NULL, a->span);
  for (int64_t c = 0; c < f->ncol; c++) {
    frame_set_text(I, g, 0, c, f->cols[c].name, a->span);
    frame_set_name(I, g, c, f->cols[c].name, a->span);
  }
  return held_result(I, g, mark);
}

/* detectSchema(F): a 1 x ncol frame of the types the cells suggest. */
Value bi_detectSchema(Interp *I, Args *a) {
  const FrameBlock *f = frame_arg(I, a, 0);
  int mark = I->ntmp;
  FrameBlock *g = frame_held(I, 1, f->ncol, NULL, a->span);
  char buf[48];
  for (int64_t c = 0; c < f->ncol; c++) {
    int t = -1;
    for (int64_t r = 0; r < f->rows && t != FT_STRING; r++) {
      bi_poll(I, r, NULL);
      const char *s = frame_get_text(f, r, c, buf);
      int k = s ? frame_detect_text(s) : -1;
      if (k < 0) continue;
      if (t < 0 || t == k) t = k;
      else if (frame_numeric(t) && frame_numeric(k) && t != FT_BOOLEAN && k != FT_BOOLEAN)
        t = t == FT_FP64 || k == FT_FP64 ? FT_FP64 : FT_INT64;
      else t = FT_STRING;
    }
    frame_set_text(I, g, 0, c, frame_type_name(t < 0 ? FT_STRING : t), a->span);
    frame_set_name(I, g, c, f->cols[c].name, a->span);
  }
  return held_result(I, g, mark);
}

/* applySchema(F, schema): F with its columns converted to the schema's types. */
Value bi_applySchema(Interp *I, Args *a) {
  const FrameBlock *f = frame_arg(I, a, 0);
  uint8_t *types = bi_scratch(I, (size_t)(f->ncol ? f->ncol : 1));
  schema_arg(I, a, 1, f->ncol, types);
  int mark = I->ntmp;
  FrameBlock *g = frame_held(I, f->rows, f->ncol, types, a->span);
  char buf[48];
  for (int64_t c = 0; c < f->ncol; c++) {
    frame_set_name(I, g, c, f->cols[c].name, a->span);
    for (int64_t r = 0; r < f->rows; r++) {
      bi_poll(I, r, NULL);
      if (f->cols[c].type != FT_STRING && f->cols[c].type != FT_BOOLEAN && types[c] != FT_STRING)
        frame_set_num(I, g, r, c, f->cols[c].d[r], a->span);
      else
        frame_set_text(I, g, r, c, frame_get_text(f, r, c, buf), a->span);
    }
  }
  Value v = val_frame(g);
  val_retain(v);
  tmp_release_to(I, mark);
  bi_scratch_free(I, types);
  return v;
}
