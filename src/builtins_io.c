/*
** builtins_io.c — matrix files and checkpoints. Writes go to a temporary file in the same
** directory that is fsync'ed and renamed over the target, so a failure never leaves a
** damaged file in place of the old one.
*/
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "builtins.h"
#include "err.h"
#include "mem.h"

/* ---- files ---- */
static const char *format_of(Interp *I, Args *a, int argi, const char *path) {
  if (bi_given(a, argi)) return bi_str(I, a, argi);
  const char *dot = strrchr(path, '.'), *slash = strrchr(path, '/');
  if (dot && slash && dot < slash) dot = NULL;
  if (dot && !strcmp(dot, ".csv")) return "csv";
  if (!dot || !strcmp(dot, ".txt") || !strcmp(dot, ".text") || !strcmp(dot, ".ijv")) return "text";
  bi_error(I, "cannot tell the format of '%s' from its extension (supported: csv, text); pass format=", path);
}

typedef struct Growing { double *v; int64_t n, cap; } Growing;
static void grow_push(Growing *g, double x) {
  if (g->n == g->cap) { g->cap = g->cap ? g->cap * 2 : 1024; g->v = mem_realloc(g->v, (size_t)g->cap * sizeof(double)); }
  g->v[g->n++] = x;
}

/* Reads the whole file into a NUL-terminated buffer (the caller frees), or throws. */
static char *slurp(Interp *I, const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) bi_error(I, "cannot open '%s': %s", path, strerror(errno));
  size_t cap = 1 << 16, n = 0;
  char *buf = mem_alloc(cap);
  size_t k;
  while ((k = fread(buf + n, 1, cap - n - 1, f)) > 0) {
    n += k;
    if (n + 1 == cap) { cap *= 2; buf = mem_realloc(buf, cap); }
  }
  fclose(f);
  buf[n] = '\0';
  *len = n;
  return buf;
}

Value bi_read(Interp *I, Args *a) {
  const char *path = bi_str(I, a, 0);
  const char *fmt = format_of(I, a, 1, path);
  bool header = bi_opt_bool(I, a, 2, false);
  const char *sep = bi_given(a, 3) ? bi_str(I, a, 3) : ",";
  bool csv = strcmp(fmt, "csv") == 0;
  if (!csv && strcmp(fmt, "text") != 0) bi_argerror(I, 2, "format must be \"csv\" or \"text\", got \"%s\"", fmt);
  size_t len;
  char *buf = slurp(I, path, &len);
  Growing g = { NULL, 0, 0 };
  int64_t rows = 0, cols = -1, line = 0;
  char err[300] = "";
  char *p = buf;
  while (*p && !err[0]) {
    char *eol = strchr(p, '\n');
    if (!eol) eol = p + strlen(p);
    char save = *eol;
    *eol = '\0';
    line++;
    char *q = p;
    while (*q == ' ' || *q == '\t' || *q == '\r') q++;
    if (*q && !(csv && header && line == 1)) {
      int64_t c = 0;
      if (csv) {
        for (;;) {
          while (*q == ' ' || *q == '"') q++;
          char *end;
          double x = strtod(q, &end);
          if (end == q) { snprintf(err, sizeof err, "%s:%lld: cannot read a number in column %lld", path, (long long)line, (long long)c + 1); break; }
          grow_push(&g, x);
          c++;
          q = end;
          while (*q == ' ' || *q == '"' || *q == '\r') q++;
          if (!*q) break;
          if (strncmp(q, sep, strlen(sep)) != 0) { snprintf(err, sizeof err, "%s:%lld: unexpected '%c' after column %lld", path, (long long)line, *q, (long long)c); break; }
          q += strlen(sep);
        }
        if (!err[0]) {
          if (cols >= 0 && c != cols) snprintf(err, sizeof err, "%s:%lld: %lld columns, expected %lld", path, (long long)line, (long long)c, (long long)cols);
          cols = c;
          rows++;
        }
      } else {
        char *end;
        double i = strtod(q, &end), j, v;
        if (end != q) { q = end; j = strtod(q, &end); }
        if (end != q) { q = end; v = strtod(q, &end); }
        if (end == q || i < 1 || j < 1 || i != floor(i) || j != floor(j))
          snprintf(err, sizeof err, "%s:%lld: expected 'i j v' with positive whole i and j", path, (long long)line);
        else { grow_push(&g, i); grow_push(&g, j); grow_push(&g, v); }
      }
    }
    *eol = save;
    p = save ? eol + 1 : eol;
  }
  mem_free(buf);
  if (err[0]) { mem_free(g.v); bi_error(I, "%s", err); }
  Tensor *t;
  if (csv) {
    if (cols < 0) cols = 0;
    t = tensor_new(I, rows, cols);
    if (g.n) memcpy(tensor_data(t), g.v, (size_t)g.n * sizeof(double));
  } else {
    int64_t r = 0, c = 0;
    for (int64_t k = 0; k < g.n; k += 3) {
      if (g.v[k] > r) r = (int64_t)g.v[k];
      if (g.v[k + 1] > c) c = (int64_t)g.v[k + 1];
    }
    double *vals = g.v;
    int64_t nv = g.n;
    g.v = NULL;
    tmp_push(I, val_null());           /* nothing to hold; vals is freed below on success */
    t = tensor_zeros(I, r, c);
    tmp_pop(I, 1);
    double *d = tensor_data(t);
    for (int64_t k = 0; k < nv; k += 3) d[((int64_t)vals[k] - 1) * c + (int64_t)vals[k + 1] - 1] = vals[k + 2];
    mem_free(vals);
  }
  mem_free(g.v);
  return val_mat(t);
}

Value bi_write(Interp *I, Args *a) {
  Value x = a->v[0];
  const char *path = bi_str(I, a, 1);
  const char *fmt = format_of(I, a, 2, path);
  bool header = bi_opt_bool(I, a, 3, false);
  const char *sep = bi_given(a, 4) ? bi_str(I, a, 4) : ",";
  bool csv = strcmp(fmt, "csv") == 0;
  if (!csv && strcmp(fmt, "text") != 0) bi_argerror(I, 3, "format must be \"csv\" or \"text\", got \"%s\"", fmt);
  Tensor *m = bi_mat(I, a, 0);
  (void)x;
  tmp_push(I, val_mat(m));
  size_t plen = strlen(path);
  char *tmpl = mem_alloc(plen + 16);
  snprintf(tmpl, plen + 16, "%s.tmpXXXXXX", path);
  int fd = mkstemp(tmpl);
  if (fd < 0) {
    char msg[400];
    snprintf(msg, sizeof msg, "cannot write '%s': %s", path, strerror(errno));
    mem_free(tmpl);
    bi_error(I, "%s", msg);
  }
  FILE *f = fdopen(fd, "w");
  int64_t r = tensor_rows(m), c = tensor_cols(m);
  if (csv && header) {
    for (int64_t j = 0; j < c; j++) fprintf(f, "%sC%lld", j ? sep : "", (long long)j + 1);
    fputc('\n', f);
  }
  for (int64_t i = 0; i < r; i++) {
    for (int64_t j = 0; j < c; j++) {
      double v = tensor_get(m, i, j);
      if (csv) fprintf(f, "%s%.17g", j ? sep : "", v);
      else if (v != 0) fprintf(f, "%lld %lld %.17g\n", (long long)i + 1, (long long)j + 1, v);
    }
    if (csv) fputc('\n', f);
  }
  bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmpl, path) != 0) {
    char msg[400];
    snprintf(msg, sizeof msg, "cannot write '%s': %s", path, strerror(errno));
    unlink(tmpl);
    mem_free(tmpl);
    bi_error(I, "%s", msg);
  }
  mem_free(tmpl);
  tmp_pop(I, 1);
  tensor_free_ref(m);
  return val_null();
}

Value bi_save(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
Value bi_load(Interp *I, Args *a) { (void)a; bi_error(I, "not implemented yet"); }
