/*
** transform.c — SystemDS's transform family over frames (docs/frames.md "Transforms"):
** transformencode, transformapply, transformdecode and transformcolmap, driven by a JSON spec
** (parsed with jansson) of recode, dummycode, bin (equi-width, equi-height), hash, impute
** (global_mean, global_mode/most_frequent, constant) and omit. The meta frame M has one column
** per input column: "value\u00b7code" lines for a recoded one, "min\u00b7max" lines for a binned
** one (SystemDS's separator, which UtilFunctions.splitRecodeEntry splits in map()); an imputed
** value is kept in the column's metadata (FrameCol.mv), as SystemDS keeps it.
*/
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
    bool gids = ids;
    if (q != 2 && q != 5 && json_is_object(a) && json_is_array(json_object_get(a, "attributes"))) {
      a = json_object_get(a, "attributes");      /* SystemML's {"recode": {"attributes": [1, 2]}}: ids */
      gids = true;
    }
    if (!json_is_array(a)) spec_error(I, kinds[q], " must be a list");
    size_t i;
    json_t *e;
    json_array_foreach(a, i, e) {
      int64_t c = spec_col(I, t, f, gids, e, kinds[q]);
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

/* ---- transformmeta: a meta frame from SystemML's directory of metadata files ----
** DIR/column.names holds the column names, split by sep; for a column NAME,
** DIR/Recode/NAME.map holds "value",code,count lines (and NAME.ndistinct their number),
** DIR/Bin/NAME.bin the line colid,min,max,binwidth,numbins, and DIR/Impute/NAME.impute the
** line colid,value. Every file is read whole (at most TM_MAX bytes) and checked line by line:
** a bad one is an error naming the file and line, never a crash. */

#define TM_MAX ((size_t)1 << 28)

typedef struct TmFile { char *text; size_t len; const char *path; } TmFile;

/* Reads path whole into f (scratch memory, NUL-terminated, a trailing "\n" or "\r\n" per line
** kept); false when there is no such file. */
static bool tm_slurp(Interp *I, const char *path, TmFile *f) {
  struct stat st;
  f->text = NULL;
  f->len = 0;
  f->path = path;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return false;
    bi_error(I, "cannot read '%s': %s", path, strerror(errno));
  }
  if (S_ISDIR(st.st_mode)) bi_error(I, "cannot read '%s': it is a directory", path);
  FILE *fp = fopen(path, "rb");
  if (!fp) bi_error(I, "cannot read '%s': %s", path, strerror(errno));
  size_t cap = S_ISREG(st.st_mode) && (uint64_t)st.st_size < TM_MAX ? (size_t)st.st_size + 1 : 4096;
  char *buf = mem_try_alloc(cap);
  size_t n = 0;
  bool big = false;
  while (buf) {
    if (n + 1 >= cap) {
      if (cap >= TM_MAX) { big = true; break; }
      char *p = mem_try_realloc(buf, cap * 2);
      if (!p) { mem_free(buf); buf = NULL; break; }
      buf = p;
      cap *= 2;
    }
    size_t m = fread(buf + n, 1, cap - 1 - n, fp);
    n += m;
    if (m == 0) break;
  }
  bool bad = buf && ferror(fp);
  fclose(fp);
  if (!buf) mem_oom(cap);
  if (big || bad) {
    mem_free(buf);
    if (big) bi_error(I, "'%s' is larger than %zu MiB", path, TM_MAX >> 20);
    bi_error(I, "cannot read '%s'", path);
  }
  f->text = bi_scratch(I, n + 1);
  memcpy(f->text, buf, n);
  f->text[n] = 0;
  f->len = n;
  mem_free(buf);
  if (strlen(f->text) != n) bi_error(I, "'%s' holds a NUL byte", path);
  return true;
}

static void tm_drop(Interp *I, TmFile *f) { if (f->text) bi_scratch_free(I, f->text); f->text = NULL; }

/* The next line of f from *pos (its "\n" and a "\r" before it cut off, in place), or NULL at
** the end; *lineno counts lines. */
static char *tm_line(TmFile *f, size_t *pos, int64_t *lineno) {
  if (*pos >= f->len) return NULL;
  char *s = f->text + *pos, *e = strchr(s, '\n');
  size_t n = e ? (size_t)(e - s) : strlen(s);
  *pos += n + (e != NULL);
  if (n && s[n - 1] == '\r') n--;
  s[n] = 0;
  ++*lineno;
  return s;
}

/* s without blanks at its ends (Java's trim), in place. */
static char *tm_trim(char *s) {
  while (*s && (unsigned char)*s <= ' ') s++;
  size_t n = strlen(s);
  while (n && (unsigned char)s[n - 1] <= ' ') s[--n] = 0;
  return s;
}

/* A whole number in [lo, hi] from all of s (blanks around allowed), else -1. */
static int64_t tm_int(const char *s, int64_t lo, int64_t hi) {
  char *end;
  errno = 0;
  while (*s == ' ' || *s == '\t') s++;
  if (!(*s >= '0' && *s <= '9') && *s != '+' && *s != '-') return -1;
  long long v = strtoll(s, &end, 10);
  while (*end == ' ' || *end == '\t') end++;
  if (errno || end == s || *end || v < lo || v > hi) return -1;
  return (int64_t)v;
}

/* A finite number from all of s, else false. */
static bool tm_num(const char *s, double *x) {
  char *end;
  *x = strtod(s, &end);
  while (*end == ' ' || *end == '\t') end++;
  return end != s && !*end && isfinite(*x);
}

/* Reads DIR/Recode/NAME.map (and .ndistinct): its number of entries, or -1 when absent. With m,
** writes the entries "value·code" into column c of m, in the file's order. */
static int64_t tm_recode(Interp *I, const char *dir, const char *name, FrameBlock *m, int64_t c, Span sp) {
  size_t plen = strlen(dir) + strlen(name) + 32;
  char *path = bi_scratch(I, plen);
  snprintf(path, plen, "%s/Recode/%s.map", dir, name);
  TmFile f;
  if (!tm_slurp(I, path, &f)) { bi_scratch_free(I, path); return -1; }
  size_t pos = 0;
  int64_t ln = 0, n = 0;
  for (const char *s = f.text; *s;) {          /* the entries: the lines that are not empty */
    const char *e = strchr(s, '\n');
    size_t len = e ? (size_t)(e - s) : strlen(s);
    n += len > 1 || (len == 1 && s[0] != '\r');
    s += len + (e != NULL);
  }
  uint8_t *seen = bi_scratch(I, (size_t)(n ? n : 1));
  memset(seen, 0, (size_t)(n ? n : 1));
  int64_t k = 0;
  ln = 0;
  for (char *s; (s = tm_line(&f, &pos, &ln));) {
    if (!*s) continue;
    char *q = strrchr(s, '"');
    if (s[0] != '"' || q == s || q[1] != ',')
      bi_error(I, "%s:%lld: expected \"value\",code,count, got '%.60s'", path, (long long)ln, s);
    char *code = q + 2, *comma = strchr(code, ',');
    if (comma) *comma = 0;
    int64_t v = tm_int(code, 1, n);
    if (v < 0)
      bi_error(I, "%s:%lld: code '%.30s' is not a whole number from 1 to %lld (the number of entries)", path, (long long)ln, code, (long long)n);
    if (seen[v - 1]) bi_error(I, "%s:%lld: code %lld is given twice", path, (long long)ln, (long long)v);
    seen[v - 1] = 1;
    if (m) {
      *q = 0;
      size_t el = strlen(s + 1) + 32;
      char *e = bi_scratch(I, el);
      snprintf(e, el, "%s" SEP "%lld", s + 1, (long long)v);
      frame_set_text(I, m, k, c, e, sp);
      bi_scratch_free(I, e);
    }
    k++;
  }
  bi_scratch_free(I, seen);
  tm_drop(I, &f);
  snprintf(path, plen, "%s/Recode/%s.ndistinct", dir, name);
  if (tm_slurp(I, path, &f)) {
    int64_t d = tm_int(tm_trim(f.text), 0, INT64_MAX);
    if (d < 0) bi_error(I, "%s:1: expected the number of distinct values, got '%.30s'", path, tm_trim(f.text));
    if (d != n) bi_error(I, "%s says %lld distinct values, %s.map has %lld entries", path, (long long)d, name, (long long)n);
    tm_drop(I, &f);
  }
  bi_scratch_free(I, path);
  return n;
}

/* Reads DIR/Bin/NAME.bin: its number of bins, or -1 when absent. With m, writes the bins
** "lo·hi" (lo = min + i * binwidth, hi = lo + binwidth) into column c of m. */
static int64_t tm_bin(Interp *I, const char *dir, const char *name, FrameBlock *m, int64_t c, Span sp) {
  size_t plen = strlen(dir) + strlen(name) + 32;
  char *path = bi_scratch(I, plen);
  snprintf(path, plen, "%s/Bin/%s.bin", dir, name);
  TmFile f;
  if (!tm_slurp(I, path, &f)) { bi_scratch_free(I, path); return -1; }
  char *s = tm_trim(f.text), *fld[6];
  int nf = 0;
  for (char *p = s; nf < 6;) {
    fld[nf++] = p;
    char *e = strchr(p, ',');
    if (!e) break;
    *e = 0;
    p = e + 1;
  }
  double x[5];
  bool ok = nf == 5 && !strchr(fld[4], '\n');
  for (int i = 0; ok && i < 4; i++) ok = tm_num(fld[i], &x[i]);
  int64_t nb = ok ? tm_int(fld[4], 1, 1000000) : -1;
  if (!ok || nb < 0 || x[3] < 0)
    bi_error(I, "%s:1: expected colid,min,max,binwidth,numbins (numbers, binwidth >= 0, numbins a whole number from 1 to 1e6)", path);
  for (int64_t i = 0; m && i < nb; i++) {
    char a[48], b[48], e[100];
    fmt_num(a, sizeof a, x[1] + (double)i * x[3], 15);
    fmt_num(b, sizeof b, x[1] + (double)(i + 1) * x[3], 15);
    snprintf(e, sizeof e, "%s" SEP "%s", a, b);
    frame_set_text(I, m, i, c, e, sp);
  }
  tm_drop(I, &f);
  bi_scratch_free(I, path);
  return nb;
}

/* Reads DIR/Impute/NAME.impute into column c's imputed value (m non-NULL), checking it. */
static void tm_impute(Interp *I, const char *dir, const char *name, FrameBlock *m, int64_t c, Span sp) {
  size_t plen = strlen(dir) + strlen(name) + 32;
  char *path = bi_scratch(I, plen);
  snprintf(path, plen, "%s/Impute/%s.impute", dir, name);
  TmFile f;
  if (tm_slurp(I, path, &f)) {
    size_t pos = 0;
    int64_t ln = 0;
    char *s = tm_line(&f, &pos, &ln), *comma = s ? strchr(s, ',') : NULL;
    if (!comma) bi_error(I, "%s:1: expected colid,value", path);
    char *v = comma + 1, *e = strchr(v, ',');
    if (e) *e = 0;                               /* SystemDS takes the second field */
    if (m) frame_set_mv(I, m, c, v, sp);
    tm_drop(I, &f);
  }
  bi_scratch_free(I, path);
}

/* transformmeta(spec=, transformPath=, sep=","): the meta frame of the files in transformPath. */
Value bi_transformmeta(Interp *I, Args *a) {
  const char *spec = spec_of(I, a, 0);
  if (!bi_given(a, 1)) bi_argerror(I, 2, "transformPath= is required (the directory of the metadata files)");
  const char *dir = bi_str(I, a, 1);
  const char *sep = bi_given(a, 2) ? bi_str(I, a, 2) : ",";
  if (!*sep) bi_argerror(I, 3, "sep must not be empty");
  size_t plen = strlen(dir) + 32;
  char *path = bi_scratch(I, plen);
  snprintf(path, plen, "%s/column.names", dir);
  TmFile f;
  if (!tm_slurp(I, path, &f)) bi_error(I, "cannot read '%s': no such file", path);
  char *s = tm_trim(f.text);
  if (!*s) bi_error(I, "%s is empty (it lists the column names)", path);
  int64_t ncol = 1;
  for (char *p = strstr(s, sep); p; p = strstr(p + strlen(sep), sep)) ncol++;
  int mark = I->ntmp;
  FrameBlock *nm = frame_held(I, 0, ncol, NULL, a->span);
  char *p = s;
  for (int64_t c = 0; c < ncol; c++) {
    char *e = strstr(p, sep);
    if (e) *e = 0;
    if (!*p) bi_error(I, "%s: column %lld has no name", path, (long long)c + 1);
    if (strchr(p, '\n')) bi_error(I, "%s: the names must be on one line", path);
    for (int64_t d = 0; d < c; d++)
      if (!strcmp(nm->cols[d].name, p)) bi_error(I, "%s: column name '%.60s' is given twice", path, p);
    frame_set_name(I, nm, c, p, a->span);
    p = e ? e + strlen(sep) : p;
  }
  tm_drop(I, &f);
  Tx t;
  memset(&t, 0, sizeof t);
  mls_defer(I, tx_free, &t);
  spec_parse(I, &t, spec, nm, ncol);
  /* pass 1: check every file and find the longest map; pass 2: fill the frame */
  int64_t rows = 0;
  for (int pass = 0; pass < 2; pass++) {
    FrameBlock *m = NULL;
    if (pass) {
      m = frame_held(I, rows, ncol, NULL, a->span);
      for (int64_t c = 0; c < ncol; c++) frame_set_name(I, m, c, nm->cols[c].name, a->span);
    }
    for (int64_t c = 0; c < ncol; c++) {
      const char *name = nm->cols[c].name;
      const TxCol *x = &t.cols[c];
      bool rc = x->kind == TX_RECODE || (x->kind == TX_PASS && x->dummy), bn = x->kind == TX_BIN;
      bool files = !strchr(name, '/');
      int64_t n = files ? tm_recode(I, dir, name, rc ? m : NULL, c, a->span) : -1;
      if (rc && n < 0)
        bi_error(I, "no recode map %s/Recode/%s.map for column '%s' (id %lld), which the spec %s", dir, name, name, (long long)c + 1, x->dummy ? "dummycodes" : "recodes");
      if (n > rows) rows = n;
      n = files ? tm_bin(I, dir, name, bn ? m : NULL, c, a->span) : -1;
      if (bn && n < 0)
        bi_error(I, "no bin file %s/Bin/%s.bin for column '%s' (id %lld), which the spec bins", dir, name, name, (long long)c + 1);
      if (n > rows) rows = n;
      if (files) tm_impute(I, dir, name, m, c, a->span);
    }
    if (pass) {
      Value v = val_frame(m);
      val_retain(v);
      tmp_release_to(I, mark);
      mls_undefer(I, &t);
      tx_free(&t);
      bi_scratch_free(I, path);
      return v;
    }
  }
  return val_null();
}
