/*
** transform.c — SystemDS's transform family over frames (docs/frames.md "Transforms"):
** transformencode, transformapply, transformdecode and transformcolmap, driven by a JSON spec
** (parsed with jansson) of recode, dummycode, bin (equi-width, equi-height), hash, impute
** (global_mean, global_mode/most_frequent, constant) and omit. The meta frame M has one column
** per input column: "value\u00b7code" lines for a recoded one, "min\u00b7max" lines for a binned
** one (SystemDS's separator, which UtilFunctions.splitRecodeEntry splits in map()); an imputed
** value is kept in the column's metadata (FrameCol.mv), as SystemDS keeps it.
*/
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autodiff.h"
#include "builtins.h"
#include "err.h"
#include "frame/frame.h"
#include "mem.h"

#define SEP "\xc2\xb7"                /* U+00B7, SystemDS's Lop.DATATYPE_PREFIX */

enum { TX_PASS, TX_RECODE, TX_BIN, TX_HASH };
enum { IM_NONE, IM_MEAN, IM_MODE, IM_CONST };
enum { BIN_WIDTH, BIN_HEIGHT };

typedef struct TxCol {
  uint8_t kind, impute, method;
  bool dummy, omit;
  int numbins;
  const char *constant;              /* IM_CONST's value (text owned by the spec's JSON or cbuf) */
  char cbuf[48];
  char *mv;                          /* the imputed value (owned), NULL: none */
  int64_t nlev;                      /* recode: levels[nlev], code k is levels[k - 1] (owned) */
  char **levels;
  double *lo, *hi;                   /* bin: nlev bins (owned) */
  int64_t width, start;              /* columns of X it takes, and the first (0-based) */
} TxCol;

typedef struct Tx {
  json_t *root;
  int64_t ncol, K, xcols;
  TxCol *cols;
  Span sp;
} Tx;

static void tx_free(void *p) {
  Tx *t = p;
  for (int64_t c = 0; t->cols && c < t->ncol; c++) {
    TxCol *x = &t->cols[c];
    for (int64_t k = 0; x->levels && k < x->nlev; k++) mem_free(x->levels[k]);
    mem_free(x->levels);
    mem_free(x->lo);
    mem_free(x->hi);
    mem_free(x->mv);
  }
  mem_free(t->cols);
  if (t->root) json_decref(t->root);
}

/* ---- the spec ---- */

static l_noret spec_error(Interp *I, const char *fmt, const char *a) {
  bi_error(I, "bad transform spec: %s%s", fmt, a ? a : "");
}

/* The 0-based column an entry names: a 1-based id when ids is true, else a column name. */
static int64_t spec_col(Interp *I, Tx *t, const FrameBlock *f, bool ids, json_t *e, const char *what) {
  char msg[160];
  if (json_is_object(e)) e = json_object_get(e, ids ? "id" : "name");
  if (ids) {
    if (!json_is_integer(e)) { snprintf(msg, sizeof msg, "%s: a column id (a whole number) expected with \"ids\": true", what); spec_error(I, msg, NULL); }
    json_int_t k = json_integer_value(e);
    if (k < 1 || k > t->ncol) {
      snprintf(msg, sizeof msg, "%s: column id %lld is out of range (1..%lld)", what, (long long)k, (long long)t->ncol);
      spec_error(I, msg, NULL);
    }
    return (int64_t)k - 1;
  }
  if (!json_is_string(e)) { snprintf(msg, sizeof msg, "%s: a column name expected (or \"ids\": true and ids)", what); spec_error(I, msg, NULL); }
  const char *nm = json_string_value(e);
  for (int64_t c = 0; f && c < f->ncol; c++)
    if (!strcmp(f->cols[c].name, nm)) return c;
  snprintf(msg, sizeof msg, "%s: no column named '%.60s'", what, nm);
  spec_error(I, msg, NULL);
}

/* Parses spec (the text) for a frame of ncol columns named as f's (f may be NULL: ids only). */
static void spec_parse(Interp *I, Tx *t, const char *spec, const FrameBlock *f, int64_t ncol) {
  json_error_t err;
  t->root = json_loads(spec, JSON_REJECT_DUPLICATES, &err);
  if (!t->root) {
    char msg[256];
    snprintf(msg, sizeof msg, "%s (line %d, column %d)", err.text, err.line, err.column);
    spec_error(I, msg, NULL);
  }
  if (!json_is_object(t->root)) spec_error(I, "a JSON object expected", NULL);
  t->ncol = ncol;
  t->cols = mem_calloc((size_t)(ncol ? ncol : 1), sizeof(TxCol));
  json_t *ids_v = json_object_get(t->root, "ids");
  bool ids = json_is_true(ids_v);
  json_t *kv = json_object_get(t->root, "K");
  t->K = kv ? (json_is_integer(kv) ? (int64_t)json_integer_value(kv) : -1) : 0;
  static const char *const kinds[] = { "recode", "hash", "bin", "dummycode", "omit", "impute" };
  for (int q = 0; q < 6; q++) {
    json_t *a = json_object_get(t->root, kinds[q]);
    if (!a) continue;
    if (!json_is_array(a)) spec_error(I, kinds[q], " must be a list");
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
      int64_t c = spec_col(I, t, f, ids, e, kinds[q]);
      TxCol *x = &t->cols[c];
      switch (q) {
      case 0: case 1:
        if (x->kind != TX_PASS) spec_error(I, "a column is given two encodings (recode, hash, bin): ", f ? f->cols[c].name : NULL);
        x->kind = q == 0 ? TX_RECODE : TX_HASH;
        if (q == 1 && t->K < 1) spec_error(I, "hash needs \"K\", a whole number >= 1", NULL);
        break;
      case 2: {
        if (x->kind != TX_PASS) spec_error(I, "a column is given two encodings (recode, hash, bin): ", f ? f->cols[c].name : NULL);
        if (!json_is_object(e)) spec_error(I, "bin: entries are objects {\"id\": .., \"method\": .., \"numbins\": ..}", NULL);
        x->kind = TX_BIN;
        json_t *m = json_object_get(e, "method"), *nb = json_object_get(e, "numbins");
        const char *ms = json_is_string(m) ? json_string_value(m) : "equi-width";
        if (!strcmp(ms, "equi-width")) x->method = BIN_WIDTH;
        else if (!strcmp(ms, "equi-height")) x->method = BIN_HEIGHT;
        else spec_error(I, "bin: method must be \"equi-width\" or \"equi-height\", got ", ms);
        json_int_t k = nb ? (json_is_integer(nb) ? json_integer_value(nb) : -1) : 10;
        if (k < 1 || k > 1000000) spec_error(I, "bin: numbins must be a whole number from 1 to 1e6", NULL);
        x->numbins = (int)k;
        break;
      }
      case 3: x->dummy = true; break;
      case 4: x->omit = true; break;
      case 5: {
        if (!json_is_object(e)) spec_error(I, "impute: entries are objects {\"id\": .., \"method\": ..}", NULL);
        json_t *m = json_object_get(e, "method");
        const char *ms = json_is_string(m) ? json_string_value(m) : "";
        if (!strcmp(ms, "global_mean")) x->impute = IM_MEAN;
        else if (!strcmp(ms, "global_mode") || !strcmp(ms, "most_frequent")) x->impute = IM_MODE;
        else if (!strcmp(ms, "constant")) {
          x->impute = IM_CONST;
          json_t *v = json_object_get(e, "value");
          if (json_is_string(v)) x->constant = json_string_value(v);
          else if (json_is_number(v)) { fmt_num(x->cbuf, sizeof x->cbuf, json_number_value(v), 15); x->constant = x->cbuf; }
          else spec_error(I, "impute: method \"constant\" needs a \"value\"", NULL);
        } else spec_error(I, "impute: method must be \"global_mean\", \"global_mode\", \"most_frequent\" or \"constant\", got ", ms);
        break;
      }
      }
    }
  }
}

/* ---- values ---- */

typedef struct Lev { const char *s; double x; } Lev;
static int lev_num_cmp(const void *a, const void *b) {
  double x = ((const Lev *)a)->x, y = ((const Lev *)b)->x;
  return x < y ? -1 : x > y;
}
static int lev_str_cmp(const void *a, const void *b) { return strcmp(((const Lev *)a)->s, ((const Lev *)b)->s); }
static int dbl_cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}
static int str_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The text of cell (r, c) after imputation, or NULL (NA). buf: 48 bytes. */
static const char *cell_text(const Tx *t, const FrameBlock *f, int64_t r, int64_t c, char *buf) {
  const char *s = frame_get_text(f, r, c, buf);
  if (!s && t->cols[c].mv) s = t->cols[c].mv;
  return s;
}

static double cell_num(Interp *I, const Tx *t, const FrameBlock *f, int64_t r, int64_t c, const char *why) {
  char buf[48];
  const char *s = cell_text(t, f, r, c, buf);
  if (!s) return NAN;
  char *end;
  double x = strtod(s, &end);
  while (*end == ' ') end++;
  if (end == s || *end)
    bi_error(I, "column '%s' row %lld: '%.40s' is not a number (%s)", f->cols[c].name, (long long)r + 1, s, why);
  return x;
}

/* Builds the imputed values of t from the frame (encode). */
static void build_impute(Interp *I, Tx *t, const FrameBlock *f) {
  char buf[48];
  for (int64_t c = 0; c < t->ncol; c++) {
    TxCol *x = &t->cols[c];
    if (x->impute == IM_CONST) x->mv = mem_strdup(x->constant);
    else if (x->impute == IM_MEAN) {
      double s = 0;
      int64_t n = 0;
      for (int64_t r = 0; r < f->rows; r++) {
        double v = cell_num(I, t, f, r, c, "global_mean imputes numbers");
        if (!isnan(v)) { s += v; n++; }
      }
      fmt_num(buf, sizeof buf, n ? s / (double)n : NAN, 15);
      x->mv = n ? mem_strdup(buf) : NULL;
    } else if (x->impute == IM_MODE) {
      int64_t n = 0;
      char **v = bi_scratch(I, (size_t)(f->rows ? f->rows : 1) * sizeof(char *));
      for (int64_t r = 0; r < f->rows; r++) {
        const char *s = frame_get_text(f, r, c, buf);
        if (s) v[n++] = mem_strdup(s);
      }
      qsort(v, (size_t)n, sizeof *v, str_cmp);
      int64_t best = -1, bestn = 0;
      for (int64_t i = 0; i < n;) {
        int64_t j = i;
        while (j < n && !strcmp(v[j], v[i])) j++;
        if (j - i > bestn) { bestn = j - i; best = i; }
        i = j;
      }
      x->mv = best >= 0 ? mem_strdup(v[best]) : NULL;
      for (int64_t i = 0; i < n; i++) mem_free(v[i]);
      bi_scratch_free(I, v);
    }
  }
}

/* Recode levels (sorted: numerically when every value is a number, else by bytes, as R's
** factor(x) with C collation) and bin bounds, from the frame (encode). */
static void build_maps(Interp *I, Tx *t, const FrameBlock *f) {
  char buf[48];
  for (int64_t c = 0; c < t->ncol; c++) {
    TxCol *x = &t->cols[c];
    if (x->kind == TX_RECODE || (x->kind == TX_PASS && x->dummy)) {
      x->kind = TX_RECODE;                       /* dummycode alone recodes first */
      Lev *v = bi_scratch(I, (size_t)(f->rows ? f->rows : 1) * sizeof(Lev));
      int64_t n = 0;
      bool num = true;
      for (int64_t r = 0; r < f->rows; r++) {
        const char *s = cell_text(t, f, r, c, buf);
        if (!s) continue;
        char *end;
        v[n].x = strtod(s, &end);
        if (end == s || *end) num = false;
        v[n++].s = mem_strdup(s);
      }
      qsort(v, (size_t)n, sizeof *v, num ? lev_num_cmp : lev_str_cmp);
      x->levels = mem_alloc((size_t)(n ? n : 1) * sizeof(char *));
      for (int64_t i = 0; i < n; i++) {
        if (x->nlev && !strcmp(x->levels[x->nlev - 1], v[i].s)) { mem_free((char *)v[i].s); continue; }
        if (x->nlev && num && v[i].x == v[i - 1].x) { mem_free((char *)v[i].s); continue; }   /* 1 and 1.0 */
        x->levels[x->nlev++] = (char *)v[i].s;
      }
      bi_scratch_free(I, v);
    } else if (x->kind == TX_BIN) {
      int64_t n = 0;
      double *v = bi_scratch(I, (size_t)(f->rows ? f->rows : 1) * sizeof(double));
      for (int64_t r = 0; r < f->rows; r++) {
        double y = cell_num(I, t, f, r, c, "bin takes numbers");
        if (!isnan(y)) v[n++] = y;
      }
      int k = x->numbins;
      x->lo = mem_alloc((size_t)k * sizeof(double));
      x->hi = mem_alloc((size_t)k * sizeof(double));
      x->nlev = k;
      if (x->method == BIN_WIDTH) {
        double mn = INFINITY, mx = -INFINITY;
        for (int64_t i = 0; i < n; i++) { if (v[i] < mn) mn = v[i]; if (v[i] > mx) mx = v[i]; }
        if (!n) mn = mx = NAN;
        double w = (mx - mn) / k;
        for (int b = 0; b < k; b++) { x->lo[b] = mn + w * b; x->hi[b] = b == k - 1 ? mx : mn + w * (b + 1); }
      } else {                                   /* quantiles of type 1: x_(ceil(n p)) */
        qsort(v, (size_t)n, sizeof *v, dbl_cmp);
        for (int b = 0; b < k; b++) {
          int64_t q = (int64_t)ceil((double)n * (b + 1) / k) - 1;
          int64_t p = (int64_t)ceil((double)n * b / k) - 1;
          x->hi[b] = n ? v[q < 0 ? 0 : q] : NAN;
          x->lo[b] = n ? v[p < 0 ? 0 : p] : NAN;
        }
      }
      bi_scratch_free(I, v);
    }
  }
}

/* The recode levels, bin bounds and imputed values of t from the meta frame M (apply, decode). */
static void load_meta(Interp *I, Tx *t, const FrameBlock *m) {
  if (m->ncol != t->ncol)
    bi_error(I, "the meta frame has %lld columns for %lld columns", (long long)m->ncol, (long long)t->ncol);
  char buf[48];
  for (int64_t c = 0; c < t->ncol; c++) {
    TxCol *x = &t->cols[c];
    if (m->cols[c].mv) x->mv = mem_strdup(m->cols[c].mv);
    if (x->kind == TX_PASS && x->dummy) x->kind = TX_RECODE;
    if (x->kind != TX_RECODE && x->kind != TX_BIN) continue;
    int64_t n = 0;
    for (int64_t r = 0; r < m->rows; r++) n += frame_get_text(m, r, c, buf) != NULL;
    if (x->kind == TX_RECODE) x->levels = mem_calloc((size_t)(n ? n : 1), sizeof(char *));
    else {
      x->lo = mem_calloc((size_t)(n ? n : 1), sizeof(double));
      x->hi = mem_calloc((size_t)(n ? n : 1), sizeof(double));
    }
    x->nlev = x->kind == TX_BIN ? n : 0;
    int64_t b = 0;
    for (int64_t r = 0; r < m->rows; r++) {
      const char *s = frame_get_text(m, r, c, buf);
      if (!s) continue;
      const char *sep = NULL;
      for (const char *p = strstr(s, SEP); p; p = strstr(p + 1, SEP)) sep = p;
      if (!sep) bi_error(I, "meta frame column %lld row %lld: '%.40s' is not a value" SEP "code entry", (long long)c + 1, (long long)r + 1, s);
      char *end;
      if (x->kind == TX_BIN) {
        x->lo[b] = strtod(s, &end);
        x->hi[b] = strtod(sep + 2, &end);
        b++;
        continue;
      }
      double k = strtod(sep + 2, &end);
      if (end == sep + 2 || *end || k < 1 || k > (double)n || k != floor(k) || x->levels[(int64_t)k - 1])
        bi_error(I, "meta frame column %lld row %lld: bad code in '%.40s'", (long long)c + 1, (long long)r + 1, s);
      x->levels[(int64_t)k - 1] = mem_strndup(s, (size_t)(sep - s));
      if ((int64_t)k > x->nlev) x->nlev = (int64_t)k;
    }
    for (int64_t k = 0; x->kind == TX_RECODE && k < x->nlev; k++)
      if (!x->levels[k]) bi_error(I, "meta frame column %lld lacks code %lld", (long long)c + 1, (long long)k + 1);
  }
}

/* The columns of X each input column takes. */
static void layout(Interp *I, Tx *t) {
  t->xcols = 0;
  for (int64_t c = 0; c < t->ncol; c++) {
    TxCol *x = &t->cols[c];
    x->start = t->xcols;
    x->width = !x->dummy ? 1 : x->kind == TX_HASH ? t->K : x->nlev;
    t->xcols += x->width;
  }
}

/* Java's String.hashCode of the UTF-16 form of s. */
static int32_t java_hash(const char *s) {
  uint32_t h = 0;
  const unsigned char *p = (const unsigned char *)s;
  while (*p) {
    uint32_t cp = *p++;
    if (cp >= 0xC0) {
      int more = cp >= 0xF0 ? 3 : cp >= 0xE0 ? 2 : 1;
      cp &= 0x3Fu >> more;
      for (; more > 0 && (*p & 0xC0) == 0x80; more--) cp = cp << 6 | (*p++ & 0x3F);
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      h = 31 * h + (0xD800 + (cp >> 10));
      h = 31 * h + (0xDC00 + (cp & 0x3FF));
    } else h = 31 * h + cp;
  }
  return (int32_t)h;
}

static int lev_find(const TxCol *x, const char *s, bool num) {
  for (int64_t k = 0; k < x->nlev; k++) {   /* (levels are few; a sorted search needs the same order) */
    if (!strcmp(x->levels[k], s)) return (int)(k + 1);
    if (num) {
      char *e1, *e2;
      double a = strtod(x->levels[k], &e1), b = strtod(s, &e2);
      if (!*e1 && !*e2 && e1 != x->levels[k] && e2 != s && a == b) return (int)(k + 1);
    }
  }
  return 0;
}

/* The code of cell (r, c): NaN for NA or a value the meta frame does not know. */
static double code_of(Interp *I, const Tx *t, const FrameBlock *f, int64_t r, int64_t c) {
  const TxCol *x = &t->cols[c];
  char buf[48];
  if (x->kind == TX_PASS || x->kind == TX_BIN) {
    double v = cell_num(I, t, f, r, c, x->kind == TX_BIN ? "bin takes numbers" : "recode or dummycode a column of text");
    if (x->kind == TX_PASS || isnan(v) || x->nlev == 0) return v;
    if (v < x->lo[0]) return 1;
    for (int64_t b = 0; b < x->nlev; b++)
      if (v <= x->hi[b]) return (double)(b + 1);
    return (double)x->nlev;
  }
  const char *s = cell_text(t, f, r, c, buf);
  if (!s) return NAN;
  if (x->kind == TX_HASH) {
    int64_t h = java_hash(s);
    int64_t a = h == INT32_MIN ? h : h < 0 ? -h : h;       /* Math.abs */
    return (double)(a % t->K + 1);
  }
  int k = lev_find(x, s, f->cols[c].type != FT_STRING);
  return k ? (double)k : NAN;
}

/* X from the frame (encode and apply): omit's rows dropped, codes and dummy columns. */
static Value encode_rows(Interp *I, const Tx *t, const FrameBlock *f, Span sp) {
  int64_t keep = 0;
  char buf[48];
  bool *drop = bi_scratch(I, (size_t)(f->rows ? f->rows : 1));
  for (int64_t r = 0; r < f->rows; r++) {
    drop[r] = false;
    for (int64_t c = 0; c < t->ncol; c++)
      if (t->cols[c].omit && !frame_get_text(f, r, c, buf)) drop[r] = true;
    keep += !drop[r];
  }
  Tensor *m = tensor_zeros(I, keep, t->xcols);
  tmp_push(I, val_mat(m));
  double *d = tensor_data(m);
  int64_t i = 0;
  for (int64_t r = 0; r < f->rows; r++) {
    if (drop[r]) continue;
    bi_poll(I, r, NULL);
    for (int64_t c = 0; c < t->ncol; c++) {
      const TxCol *x = &t->cols[c];
      double k = code_of(I, t, f, r, c);
      if (!x->dummy) d[i * t->xcols + x->start] = k;
      else if (!isnan(k) && k >= 1 && k <= (double)x->width) d[i * t->xcols + x->start + (int64_t)k - 1] = 1;
    }
    i++;
  }
  tmp_pop(I, 1);
  bi_scratch_free(I, drop);
  (void)sp;
  return val_mat(m);
}

/* The meta frame of t: one column per input column, named as f's. */
static Value meta_frame(Interp *I, const Tx *t, const FrameBlock *f, Span sp) {
  int64_t rows = 0;
  for (int64_t c = 0; c < t->ncol; c++)
    if ((t->cols[c].kind == TX_RECODE || t->cols[c].kind == TX_BIN) && t->cols[c].nlev > rows) rows = t->cols[c].nlev;
  int mark = I->ntmp;
  FrameBlock *m = frame_held(I, rows, t->ncol, NULL, sp);
  char buf[160], a[48], b[48];
  for (int64_t c = 0; c < t->ncol; c++) {
    const TxCol *x = &t->cols[c];
    frame_set_name(I, m, c, f->cols[c].name, sp);
    frame_set_mv(I, m, c, x->mv, sp);
    for (int64_t k = 0; k < x->nlev; k++) {
      if (x->kind == TX_RECODE) {
        size_t n = strlen(x->levels[k]);
        char *e = bi_scratch(I, n + 32);
        snprintf(e, n + 32, "%s" SEP "%lld", x->levels[k], (long long)k + 1);
        frame_set_text(I, m, k, c, e, sp);
        bi_scratch_free(I, e);
      } else if (x->kind == TX_BIN) {
        fmt_num(a, sizeof a, x->lo[k], 15);
        fmt_num(b, sizeof b, x->hi[k], 15);
        snprintf(buf, sizeof buf, "%s" SEP "%s", a, b);
        frame_set_text(I, m, k, c, buf, sp);
      }
    }
  }
  Value v = val_frame(m);
  val_retain(v);
  tmp_release_to(I, mark);
  return v;
}

static const FrameBlock *frame_of(Interp *I, Args *a, int i, const char *name) {
  Value v = ad_primal(a->v[i]);
  char d[64];
  if (v.t != VT_FRAME) bi_argerror(I, i + 1, "%s: a frame expected, got %s", name, val_describe(v, d, sizeof d));
  return v.u.fr;
}

static const char *spec_of(Interp *I, Args *a, int i) {
  if (!bi_given(a, i)) bi_argerror(I, i + 1, "spec= is required (a JSON string)");
  return bi_str(I, a, i);
}

/* transformencode(target=, spec=): [X, M] */
Value bi_transformencode(Interp *I, Args *a) {
  const FrameBlock *f = frame_of(I, a, 0, "target");
  Tx t;
  memset(&t, 0, sizeof t);
  mls_defer(I, tx_free, &t);
  spec_parse(I, &t, spec_of(I, a, 1), f, f->ncol);
  build_impute(I, &t, f);
  build_maps(I, &t, f);
  layout(I, &t);
  int mark = I->ntmp;
  Value x = encode_rows(I, &t, f, a->span);
  tmp_push(I, x);
  Value m = meta_frame(I, &t, f, a->span);
  tmp_push(I, m);
  List *l = list_new(I, 2);
  l->multi = true;
  list_push(l, x, NULL);
  list_push(l, m, NULL);
  tmp_pop(I, 2);
  (void)mark;
  mls_undefer(I, &t);
  tx_free(&t);
  return val_list(l);
}

/* transformapply(target=, spec=, meta=): X */
Value bi_transformapply(Interp *I, Args *a) {
  const FrameBlock *f = frame_of(I, a, 0, "target");
  const FrameBlock *m = frame_of(I, a, 2, "meta");
  Tx t;
  memset(&t, 0, sizeof t);
  mls_defer(I, tx_free, &t);
  spec_parse(I, &t, spec_of(I, a, 1), f, f->ncol);
  load_meta(I, &t, m);
  layout(I, &t);
  Value x = encode_rows(I, &t, f, a->span);
  mls_undefer(I, &t);
  tx_free(&t);
  return x;
}

/* transformdecode(target=X, spec=, meta=): the frame X encodes. */
Value bi_transformdecode(Interp *I, Args *a) {
  Value xv = ad_primal(a->v[0]);
  char d[64];
  if (xv.t != VT_MAT) bi_argerror(I, 1, "target: a matrix expected, got %s", val_describe(xv, d, sizeof d));
  const Tensor *X = xv.u.m;
  const FrameBlock *m = frame_of(I, a, 2, "meta");
  Tx t;
  memset(&t, 0, sizeof t);
  mls_defer(I, tx_free, &t);
  spec_parse(I, &t, spec_of(I, a, 1), m, m->ncol);
  load_meta(I, &t, m);
  layout(I, &t);
  if (tensor_cols(X) != t.xcols)
    bi_error(I, "X has %lld columns, the spec and meta frame make %lld", (long long)tensor_cols(X), (long long)t.xcols);
  uint8_t *types = bi_scratch(I, (size_t)(t.ncol ? t.ncol : 1));
  for (int64_t c = 0; c < t.ncol; c++) types[c] = t.cols[c].kind == TX_RECODE ? FT_STRING : FT_FP64;
  int mark = I->ntmp;
  FrameBlock *g = frame_held(I, tensor_rows(X), t.ncol, types, a->span);
  for (int64_t c = 0; c < t.ncol; c++) {
    const TxCol *x = &t.cols[c];
    frame_set_name(I, g, c, m->cols[c].name, a->span);
    for (int64_t r = 0; r < g->rows; r++) {
      bi_poll(I, r, NULL);
      double k = NAN;
      if (!x->dummy) k = tensor_get1(X, r, x->start);
      else
        for (int64_t q = 0; q < x->width; q++)
          if (tensor_get1(X, r, x->start + q) != 0) { k = (double)(q + 1); break; }
      if (x->kind == TX_RECODE) {
        int64_t ki = !isnan(k) && k >= 1 && k <= (double)x->nlev && k == floor(k) ? (int64_t)k : 0;
        frame_set_text(I, g, r, c, ki ? x->levels[ki - 1] : NULL, a->span);
      } else {
        g->cols[c].d[r] = k;
      }
    }
  }
  Value v = val_frame(g);
  val_retain(v);
  tmp_release_to(I, mark);
  bi_scratch_free(I, types);
  mls_undefer(I, &t);
  tx_free(&t);
  return v;
}

/* transformcolmap(spec=, target=, meta=): ncol(target) x 3, each column's id, first and last
** column in X (1-based). */
Value bi_transformcolmap(Interp *I, Args *a) {
  const FrameBlock *f = frame_of(I, a, 1, "target");
  Tx t;
  memset(&t, 0, sizeof t);
  mls_defer(I, tx_free, &t);
  spec_parse(I, &t, spec_of(I, a, 0), f, f->ncol);
  if (bi_given(a, 2)) load_meta(I, &t, frame_of(I, a, 2, "meta"));
  else build_maps(I, &t, f);
  layout(I, &t);
  Tensor *m = tensor_new(I, t.ncol, 3);
  double *d = tensor_data(m);
  for (int64_t c = 0; c < t.ncol; c++) {
    d[c * 3] = (double)c + 1;
    d[c * 3 + 1] = (double)t.cols[c].start + 1;
    d[c * 3 + 2] = (double)(t.cols[c].start + t.cols[c].width);
  }
  mls_undefer(I, &t);
  tx_free(&t);
  return val_mat(m);
}
