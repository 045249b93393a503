/*
** frame_io.c — frames in csv files (read(f, data_type="frame"), read.csv, write of a frame) and
** their .mtd sidecar, through the readers and writers of builtins_io.c (fileformats.h): the
** cells are collected as text in the IoJob (released by io_run on any path), then typed.
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "err.h"
#include "fileformats.h"
#include "frame/frame.h"
#include "mem.h"

/* Appends one cell's text (NULL: NA) to j's cells. */
static void push_text(Interp *I, IoJob *j, const char *s) {
  if (j->noffs == j->capoffs) {
    int64_t cap = j->capoffs ? j->capoffs * 2 : 1024;
    tensor_charge(I, (uint64_t)(cap - j->capoffs) * sizeof(int64_t), "workspace (the cells read so far)");
    int64_t *p = mem_try_realloc(j->offs, (size_t)cap * sizeof(int64_t));
    if (!p) {
      mem_uncharge((uint64_t)(cap - j->capoffs) * sizeof(int64_t));
      mem_oom((size_t)cap * sizeof(int64_t));
    }
    j->offs = p;
    j->capoffs = cap;
  }
  if (!s) { j->offs[j->noffs++] = -1; return; }
  size_t n = strlen(s) + 1;
  if (j->ntext + n > j->captext) {
    size_t cap = j->captext ? j->captext : 4096;
    while (j->ntext + n > cap) cap *= 2;
    tensor_charge(I, cap - j->captext, "workspace (the cells read so far)");
    char *p = mem_try_realloc(j->text, cap);
    if (!p) {
      mem_uncharge(cap - j->captext);
      mem_oom(cap);
    }
    j->text = p;
    j->captext = cap;
  }
  memcpy(j->text + j->ntext, s, n);
  j->offs[j->noffs++] = (int64_t)j->ntext;
  j->ntext += n;
}

static const char *cell(const IoJob *j, int64_t k) { return j->offs[k] < 0 ? NULL : j->text + j->offs[k]; }

/* Whether s is one of na.strings (an empty cell always is NA). */
static bool is_na(const IoJob *j, const char *s) {
  if (!*s) return true;
  Value v = j->na;
  if (v.t == VT_STR) return !strcmp(v.u.s->s, s);
  if (v.t == VT_LIST)
    for (int i = 0; i < v.u.l->n; i++)
      if (v.u.l->items[i].t == VT_STR && !strcmp(v.u.l->items[i].u.s->s, s)) return true;
  return false;
}

/* The schema text "STRING,FP64" (or with whitespace) parsed into types[ncol]. */
static void parse_schema(Interp *I, IoJob *j, const char *schema, uint8_t *types, int64_t ncol) {
  int64_t c = 0;
  const char *p = schema;
  for (;;) {
    while (*p == ' ' || *p == '\t') p++;
    const char *e = p;
    while (*e && *e != ',' && *e != ' ' && *e != '\t') e++;
    char name[16];
    size_t n = (size_t)(e - p);
    if (n == 0 || n >= sizeof name)
      bi_error(I, "%s: the schema \"%.60s\" has an empty or unknown type at column %lld", j->path, schema, (long long)c + 1);
    memcpy(name, p, n);
    name[n] = '\0';
    int t = frame_type_parse(name);
    if (t < 0) bi_error(I, "%s: unknown value type '%s' in the schema (STRING, INT64, INT32, FP64, FP32, BOOLEAN)", j->path, name);
    if (c >= ncol) bi_error(I, "%s: the schema names more than the %lld columns of the file", j->path, (long long)ncol);
    types[c++] = (uint8_t)t;
    while (*e == ' ' || *e == '\t') e++;
    if (*e != ',') break;
    p = e + 1;
  }
  if (c != ncol) bi_error(I, "%s: the schema names %lld types for %lld columns", j->path, (long long)c, (long long)ncol);
}

void frame_csv_read(Interp *I, IoJob *j) {
  Reader *r = &j->in;
  int64_t rows = 0, cols = -1, first = 0, hdr = -1;
  bool header = j->o.header > 0;
  char *line;
  while ((line = rd_line(I, r))) {
    if (r->line == 1 && !memcmp(line, "\xEF\xBB\xBF", 3)) line += 3;     /* a UTF-8 byte order mark */
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) continue;                                                 /* blank lines */
    if ((rows & 1023) == 0) io_poll(I);
    int64_t c = 0;
    p = line;
    if (header) {                                                      /* names first, then cells */
      while (p) { push_text(I, j, csv_cut_field(I, j, &p, c + 1)); c++; }
      hdr = c;
      cols = c;
      first = r->line;
      header = false;
      continue;
    }
    while (p) {
      char *f = csv_cut_field(I, j, &p, c + 1);
      push_text(I, j, is_na(j, f) ? NULL : f);
      c++;
    }
    if (cols < 0) { cols = c; first = r->line; }
    else if (c != cols)
      bi_error(I, "%s:%lld: %lld columns, but line %lld has %lld", j->path, (long long)r->line, (long long)c,
               (long long)first, (long long)cols);
    rows++;
  }
  if (cols < 0) cols = 0;
  int64_t base = hdr >= 0 ? hdr : 0;
  uint8_t *types = mem_alloc((size_t)(cols ? cols : 1));
  mls_defer(I, mem_free, types);
  for (int64_t c = 0; c < cols; c++) types[c] = FT_STRING;
  if (j->o.schema) parse_schema(I, j, j->o.schema, types, cols);
  else if (j->o.detect) {                           /* R's type.convert: logical, integer, double */
    for (int64_t c = 0; c < cols; c++) {
      int t = -1;
      for (int64_t i = 0; i < rows && t != FT_STRING; i++) {
        const char *s = cell(j, base + i * cols + c);
        int k = s ? frame_detect_text(s) : -1;
        if (k < 0) continue;
        if (k == FT_INT64) k = FT_FP64;                /* (R: past int's range, a double) */
        if (t < 0 || t == k) t = k;
        else if ((t == FT_INT32 && k == FT_FP64) || (t == FT_FP64 && k == FT_INT32)) t = FT_FP64;
        else t = FT_STRING;
      }
      types[c] = (uint8_t)(t < 0 ? FT_BOOLEAN : t);  /* (R: a column of only NA is logical) */
    }
  }
  Span sp = { 0, 0 };
  int mark = I->ntmp;
  FrameBlock *f = frame_held(I, rows, cols, types, sp);
  mls_undefer(I, types);
  mem_free(types);
  for (int64_t c = 0; c < cols; c++) {
    if (hdr >= 0) frame_set_name(I, f, c, cell(j, c) ? cell(j, c) : "", sp);
    for (int64_t i = 0; i < rows; i++) {
      const char *s = cell(j, base + i * cols + c);
      FrameCol *col = &f->cols[c];
      if (col->type != FT_STRING && s) {             /* a typed cell: its own located error */
        double x;
        char *end;
        x = strtod(s, &end);
        bool ok = end != s && !*end;
        if (!ok && col->type == FT_BOOLEAN) {
          if (!strcasecmp(s, "TRUE") || !strcmp(s, "T")) { x = 1; ok = true; }
          else if (!strcasecmp(s, "FALSE") || !strcmp(s, "F")) { x = 0; ok = true; }
        }
        if (!ok || (col->type == FT_BOOLEAN && x != 0 && x != 1) ||
            ((col->type == FT_INT64 || col->type == FT_INT32) && x != floor(x)))
          bi_error(I, "%s:%lld: column %lld: '%.40s' is not a valid %s", j->path,
                   (long long)(first + i + (hdr >= 0 ? 1 : 0)), (long long)c + 1, s, frame_type_name(col->type));
        frame_set_num(I, f, i, c, x, sp);
      } else {
        frame_set_text(I, f, i, c, s, sp);
      }
    }
  }
  val_release(j->result);
  j->result = val_frame(f);
  val_retain(j->result);
  tmp_release_to(I, mark);
}

/* A cell as csv: quoted when it holds the separator, a quote, a newline or blanks at its ends. */
static void put_cell(Interp *I, Out *o, const char *s, const char *sep) {
  size_t n = strlen(s);
  bool q = n && (strstr(s, sep) || strchr(s, '"') || strchr(s, '\n') || strchr(s, '\r') || s[0] == ' ' || s[n - 1] == ' ');
  if (!q) { out_write(I, o, s, n); return; }
  out_write(I, o, "\"", 1);
  for (; *s; s++) {
    if (*s == '"') out_write(I, o, "\"\"", 2);
    else out_write(I, o, s, 1);
  }
  out_write(I, o, "\"", 1);
}

void frame_csv_write(Interp *I, IoJob *j) {
  Out *o = &j->out;
  const FrameBlock *f = j->frame;
  const char *sep = j->o.sep;
  size_t seplen = strlen(sep);
  char buf[48];
  if (j->o.header > 0) {
    for (int64_t c = 0; c < f->ncol; c++) {
      if (c) out_write(I, o, sep, seplen);
      put_cell(I, o, f->cols[c].name, sep);
    }
    out_write(I, o, "\n", 1);
  }
  for (int64_t r = 0; r < f->rows; r++) {
    if ((r & 255) == 0) io_poll(I);
    for (int64_t c = 0; c < f->ncol; c++) {
      if (c) out_write(I, o, sep, seplen);
      const FrameCol *col = &f->cols[c];
      if (col->type != FT_STRING && col->type != FT_BOOLEAN) {
        if (!isnan(col->d[r])) out_write(I, o, buf, (size_t)fmt_double(buf, col->d[r]));
        continue;
      }
      const char *s = frame_get_text(f, r, c, buf);
      if (s) put_cell(I, o, s, sep);                 /* NA: an empty cell */
    }
    out_write(I, o, "\n", 1);
  }
}

void frame_mtd_write(Interp *I, IoJob *j) {
  Out *o = &j->out;
  const FrameBlock *f = j->frame;
  char buf[256];
  snprintf(buf, sizeof buf, "{\n    \"data_type\": \"frame\",\n    \"rows\": %lld,\n    \"cols\": %lld,\n    \"format\": \"csv\",\n"
           "    \"header\": %s,\n    \"sep\": ", (long long)f->rows, (long long)f->ncol, j->o.header > 0 ? "true" : "false");
  out_puts(I, o, buf);
  out_json_str(I, o, j->o.sep);
  out_puts(I, o, ",\n    \"schema\": \"");
  for (int64_t c = 0; c < f->ncol; c++) {
    if (c) out_puts(I, o, ",");
    out_puts(I, o, frame_type_name(f->cols[c].type));
  }
  out_puts(I, o, "\"\n}\n");
}
