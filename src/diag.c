/*
** diag.c — line tables and the one function that prints located messages (ninja, jq locfile).
*/
#include <errno.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"
#include "mem.h"

l_noret mls_assert_fail(const char *expr, const char *file, int line) {
  fprintf(stderr, "mls: internal error: assertion '%s' failed at %s:%d\n", expr, file, line);
  abort();
}

/* source_new without a throw: NULL (and nothing left allocated) when memory runs out. */
static Source *source_try_new(const char *name, const char *text, size_t len) {
  if (len >= UINT32_MAX) return NULL;        /* spans are 32-bit (files stop at 64 MiB): never cut */
  size_t nlines = 1;
  for (size_t i = 0; i < len; i++) nlines += text[i] == '\n';
  size_t namelen = strlen(name);
  Source *s = mem_try_alloc(sizeof *s);
  char *nm = mem_try_alloc(namelen + 1), *tx = mem_try_alloc(len + 1);
  uint32_t *ls = mem_try_alloc(nlines * sizeof(uint32_t));
  if (!s || !nm || !tx || !ls) {
    mem_free(s);
    mem_free(nm);
    mem_free(tx);
    mem_free(ls);
    return NULL;
  }
  s->refcount = 1;
  memcpy(nm, name, namelen + 1);
  s->name = nm;
  memcpy(tx, text, len);
  tx[len] = '\0';
  s->text = tx;
  s->len = (uint32_t)len;
  s->line_start = ls;
  s->nlines = 1;
  ls[0] = 0;
  for (uint32_t i = 0; i < s->len; i++)
    if (tx[i] == '\n') ls[s->nlines++] = i + 1;
  return s;
}

Source *source_new(const char *name, const char *text, size_t len) {
  Source *s = source_try_new(name, text, len);
  if (!s) mem_oom(len);
  return s;
}

/* NULL with errno set when the file cannot be read, or ENOMEM when memory runs out (nothing is
** thrown: the caller reports it with source_error). */
Source *source_from_file(const char *path, const char *shown_name) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  struct stat st;
  if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) { fclose(f); errno = EISDIR; return NULL; }
  size_t cap = 4096, n = 0;
  char *buf = mem_try_alloc(cap);
  for (;;) {
    if (!buf) { fclose(f); errno = ENOMEM; return NULL; }
    if (n == cap) {
      if (cap >= SOURCE_MAX_BYTES) break;      /* /dev/zero, a huge data file: not a script */
      char *b = mem_try_realloc(buf, cap * 2);
      if (!b) { mem_free(buf); buf = NULL; continue; }
      buf = b;
      cap *= 2;
    }
    size_t k = fread(buf + n, 1, cap - n, f);
    n += k;
    if (k == 0) break;
  }
  int bad = ferror(f);
  fclose(f);
  if (bad || n >= SOURCE_MAX_BYTES) { mem_free(buf); errno = bad ? EIO : EFBIG; return NULL; }
  Source *s = source_try_new(shown_name ? shown_name : path, buf, n);
  mem_free(buf);
  if (!s) errno = ENOMEM;
  return s;
}

const char *source_error(void) {
  if (errno == EISDIR) return "it is a directory";
  if (errno == ENOMEM) return "out of memory";
  if (errno == EFBIG) return "it is larger than 64 MiB (not a script)";
  return strerror(errno);
}

void source_retain(Source *s) { s->refcount++; }

void source_release(Source *s) {
  if (!s || --s->refcount > 0) return;
  mem_free(s->name);
  mem_free(s->text);
  mem_free(s->line_start);
  mem_free(s);
}

void diag_locate(const Source *s, uint32_t off, uint32_t *line, uint32_t *col) {
  uint32_t lo = 0, hi = s->nlines;       /* binary search: last line_start <= off */
  if (off > s->len) off = s->len;
  while (hi - lo > 1) {
    uint32_t mid = (lo + hi) / 2;
    if (s->line_start[mid] <= off) lo = mid; else hi = mid;
  }
  *line = lo + 1;
  *col = off - s->line_start[lo] + 1;
}

int diag_where(char *buf, size_t n, const Source *s, uint32_t off) {
  uint32_t line, col;
  diag_locate(s, off, &line, &col);
  return snprintf(buf, n, "%s:%u:%u", s->name, line, col);
}

void diag_report(FILE *f, const Source *s, Span sp, const char *kind, const char *msg) {
  uint32_t line, col;
  if (!s) { fprintf(f, "mls: %s: %s\n", kind, msg); return; }
  diag_locate(s, sp.start, &line, &col);
  fprintf(f, "%s:%u:%u: %s: %s\n", s->name, line, col, kind, msg);
  uint32_t b = s->line_start[line - 1], e = b;
  while (e < s->len && s->text[e] != '\n' && s->text[e] != '\r') e++;
  if (e - b > 200) return;  /* a minified line would drown the message */
  fprintf(f, "%.*s\n", (int)(e - b), s->text + b);
  uint32_t start = sp.start < b ? b : sp.start > e ? e : sp.start, end = sp.end > e ? e : sp.end;
  for (uint32_t i = b; i < start; i++) fputc(s->text[i] == '\t' ? '\t' : ' ', f);
  fputc('^', f);
  for (uint32_t i = start + 1; i < end; i++) fputc('~', f);
  fputc('\n', f);
}
