/*
** fileformats_bin.c — the binary formats: NumPy .npy (read: float64/32/16, integers and bool,
** either byte order, C or Fortran order; write: float64 C order), MNIST idx (every idx element
** type, big-endian; idx3 images read as one image per row), and the save()/load() checkpoint.
** A declared size is checked against the file's size before anything is allocated.
**
** Checkpoint file (version 2; all integers little-endian):
**   magic "MLSCKPT\0" | u32 version | u32 count | u64 file size | count entries | u32 CRC-32
**   entry = u32 name length, name bytes (UTF-8), value
**   value = u8 tag, u64 payload length, payload:
**     0 NULL (empty) · 1 number (f64) · 2 boolean (u8 0/1) · 3 string (its bytes)
**     4 matrix (u64 rows, u64 cols, rows*cols f64 row-major)
**     5 list (u32 count, then count × (u32 name length, 0 = unnamed; name; value))
**     6 sparse matrix, version 2 (u64 rows, u64 cols, u64 nnz, (rows+1) u64 row offsets,
**       nnz u32 column indices (0-based), nnz f64 values: tensor.h's CSR)
**   The CRC-32 (zlib's crc32) covers every byte before it. save() writes version 1 unless a
**   sparse matrix is saved, so that an older mls still loads every file it could hold.
*/
#include <errno.h>
#include <pthread.h>
#include <sys/mman.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autodiff.h"
#include "fileformats.h"
#include "mem.h"
#include "sym.h"

#define CHUNK (1 << 16)

static bool host_big(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 0;
}

static uint32_t get_le32(const unsigned char *p) { return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t get_le64(const unsigned char *p) { return get_le32(p) | (uint64_t)get_le32(p + 4) << 32; }
static uint32_t get_be32(const unsigned char *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static void put_le32(unsigned char *p, uint32_t x) { for (int k = 0; k < 4; k++) p[k] = (unsigned char)(x >> (8 * k)); }
static void put_le64(unsigned char *p, uint64_t x) { for (int k = 0; k < 8; k++) p[k] = (unsigned char)(x >> (8 * k)); }
static void put_be32(unsigned char *p, uint32_t x) { for (int k = 0; k < 4; k++) p[k] = (unsigned char)(x >> (24 - 8 * k)); }

/* ---- element types ---- */

typedef struct Dtype { char kind; int size; bool big; const char *name; } Dtype;   /* kind: f i u b */

static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
  return h >> 15 ? -v : v;
}

/* One element at p, in the file's byte order. */
static double elem(const unsigned char *p, Dtype t) {
  unsigned char b[8];
  if (t.big != host_big())
    for (int k = 0; k < t.size; k++) b[k] = p[t.size - 1 - k];
  else
    memcpy(b, p, (size_t)t.size);
  switch (t.kind) {
  case 'f':
    if (t.size == 8) { double x; memcpy(&x, b, 8); return x; }
    if (t.size == 4) { float x; memcpy(&x, b, 4); return x; }
    { uint16_t x; memcpy(&x, b, 2); return half_to_double(x); }
  case 'i':
    switch (t.size) {
    case 1: return (int8_t)b[0];
    case 2: { int16_t x; memcpy(&x, b, 2); return x; }
    case 4: { int32_t x; memcpy(&x, b, 4); return x; }
    default: { int64_t x; memcpy(&x, b, 8); return (double)x; }
    }
  case 'u':
    switch (t.size) {
    case 1: return b[0];
    case 2: { uint16_t x; memcpy(&x, b, 2); return x; }
    case 4: { uint32_t x; memcpy(&x, b, 4); return x; }
    default: { uint64_t x; memcpy(&x, b, 8); return (double)x; }
    }
  default: return b[0] != 0;
  }
}

/* rows*cols elements of type t from the reader into a new result matrix; fortran: the file
** holds them column by column. */
/* A large result's pages faulted in on another core while this one inflates and converts
** (Fashion-MNIST: 376 MB, 92000 page faults, a fifth of the read). MADV_POPULATE_WRITE maps
** the pages without writing them, so it may run beside the writes; a kernel without it (before
** Linux 5.14) refuses it, and the read goes on as before. */
typedef struct Prefault { pthread_t th; char *p; size_t n; } Prefault;
static void *prefault_run(void *u) {
#ifdef MADV_POPULATE_WRITE
  Prefault *f = u;
  for (size_t o = 0; o < f->n; o += (size_t)8 << 20)
    if (madvise(f->p + o, f->n - o < ((size_t)8 << 20) ? f->n - o : (size_t)8 << 20, MADV_POPULATE_WRITE) != 0) break;
#else
  (void)u;
#endif
  return NULL;
}
static void prefault_join(void *u) {
  Prefault *f = u;
  pthread_join(f->th, NULL);
  mem_free(f);
}
static Prefault *prefault_start(Interp *I, double *d, size_t bytes) {
  long pg = sysconf(_SC_PAGESIZE);
  if (bytes < ((size_t)32 << 20) || pg <= 0) return NULL;
  uintptr_t a = ((uintptr_t)d + (uintptr_t)pg - 1) & ~(uintptr_t)(pg - 1), e = ((uintptr_t)d + bytes) & ~(uintptr_t)(pg - 1);
  Prefault *f = mem_alloc(sizeof *f);
  f->p = (char *)a;
  f->n = e - a;
  if (pthread_create(&f->th, NULL, prefault_run, f) != 0) { mem_free(f); return NULL; }
  mls_defer(I, prefault_join, f);             /* (an error in the read joins it before d is freed) */
  return f;
}

static void read_elements(Interp *I, IoJob *j, int64_t rows, int64_t cols, Dtype t, bool fortran) {
  Reader *r = &j->in;
  double *d = tensor_data(io_result(I, j, rows, cols, false));
  uint64_t numel = (uint64_t)rows * (uint64_t)cols, per = CHUNK / (uint64_t)t.size, q = 0;
  mem_free(j->scratch);
  j->scratch = NULL;                          /* (io_release frees it: never twice) */
  j->scratch = mem_alloc(CHUNK);
  bool raw = t.kind == 'f' && t.size == 8 && t.big == host_big() && (!fortran || cols <= 1 || rows <= 1);
  Prefault *pf = prefault_start(I, d, (size_t)numel * sizeof(double));
  while (q < numel) {
    io_poll(I);
    uint64_t n = numel - q < per ? numel - q : per;
    size_t want = (size_t)n * (size_t)t.size;
    unsigned char *buf = raw ? (unsigned char *)(d + q) : j->scratch;
    size_t got = rd_read(I, r, buf, want);
    if (got < want)
      bi_error(I, "'%s' is truncated: %llu of the %llu bytes of data are there", r->path,
               (unsigned long long)(q * (uint64_t)t.size + got), (unsigned long long)(numel * (uint64_t)t.size));
    if (!raw) {
      if (t.kind == 'u' && t.size == 1 && !fortran)
        for (uint64_t e = 0; e < n; e++) d[q + e] = buf[e];
      else if (!fortran)
        for (uint64_t e = 0; e < n; e++) d[q + e] = elem(buf + e * (uint64_t)t.size, t);
      else
        for (uint64_t e = 0; e < n; e++) {
          uint64_t k = q + e;
          d[(k % (uint64_t)rows) * (uint64_t)cols + k / (uint64_t)rows] = elem(buf + e * (uint64_t)t.size, t);
        }
    }
    q += n;
  }
  if (pf) {
    mls_undefer(I, pf);
    prefault_join(pf);
  }
}

/* rows x cols from the extent of each dimension; false when the count overflows. */
static bool flatten(const uint64_t *shape, int nd, int64_t *rows, int64_t *cols, uint64_t elsize) {
  uint64_t r = nd > 0 ? shape[0] : 1, c = 1, lim = (uint64_t)1 << 62;
  for (int k = 1; k < nd; k++) {
    if (shape[k] && c > lim / shape[k]) return false;
    c *= shape[k];
  }
  if (r > lim || c > lim || (r && c > lim / r) || (r * c != 0 && elsize > lim / (r * c))) return false;
  *rows = (int64_t)r;
  *cols = (int64_t)c;
  return true;
}

static void shape_text(char *buf, size_t n, const uint64_t *shape, int nd, const char *type) {
  size_t k = (size_t)snprintf(buf, n, "a ");
  for (int q = 0; q < nd && k < n; q++) k += (size_t)snprintf(buf + k, n - k, q ? "x%llu" : "%llu", (unsigned long long)shape[q]);
  if (nd == 0 && k < n) k += (size_t)snprintf(buf + k, n - k, "0-d");
  if (k < n) snprintf(buf + k, n - k, " %s array", type);
}

/* ---- npy ---- */

typedef struct NpyHeader { char descr[24]; int fortran; int nd; uint64_t shape[32]; } NpyHeader;

static l_noret npy_bad(Interp *I, IoJob *j, const char *what) {
  bi_error(I, "'%s' has a malformed .npy header (%s)", j->path, what);
}

static void py_ws(char **p) { while (**p == ' ' || **p == '\t' || **p == '\n' || **p == '\r') (*p)++; }

/* A Python string literal: its text, in place. */
static char *py_string(Interp *I, IoJob *j, char **pp) {
  char *p = *pp, q = *p;
  if (q != '\'' && q != '"') npy_bad(I, j, "a string expected");
  char *s = ++p;
  while (*p && *p != q) p++;
  if (!*p) npy_bad(I, j, "unterminated string");
  *p = '\0';
  *pp = p + 1;
  return s;
}

static void py_skip(Interp *I, IoJob *j, char **pp) {
  char *p = *pp;
  int depth = 0;
  do {
    if (*p == '\'' || *p == '"') { py_string(I, j, &p); continue; }
    if (!*p) npy_bad(I, j, "unterminated value");
    if (*p == '(' || *p == '[' || *p == '{') depth++;
    else if (*p == ')' || *p == ']' || *p == '}') { if (depth-- == 0) break; }
    else if (*p == ',' && depth == 0) break;
    p++;
  } while (depth > 0 || (*p != ',' && *p != '}'));
  *pp = p;
}

static void npy_parse(Interp *I, IoJob *j, char *p, NpyHeader *h) {
  h->descr[0] = '\0';
  h->fortran = -1;
  h->nd = -1;
  py_ws(&p);
  if (*p++ != '{') npy_bad(I, j, "'{' expected");
  for (;;) {
    py_ws(&p);
    if (*p == '}') break;
    char *key = py_string(I, j, &p);
    py_ws(&p);
    if (*p++ != ':') npy_bad(I, j, "':' expected");
    py_ws(&p);
    if (!strcmp(key, "descr")) {
      if (*p == '[') bi_error(I, "'%s' holds a structured array, which mls cannot read", j->path);
      char *s = py_string(I, j, &p);
      snprintf(h->descr, sizeof h->descr, "%s", s);
    } else if (!strcmp(key, "fortran_order")) {
      if (!strncmp(p, "True", 4)) { h->fortran = 1; p += 4; }
      else if (!strncmp(p, "False", 5)) { h->fortran = 0; p += 5; }
      else npy_bad(I, j, "fortran_order must be True or False");
    } else if (!strcmp(key, "shape")) {
      if (*p++ != '(') npy_bad(I, j, "the shape must be a tuple");
      h->nd = 0;
      for (;;) {
        py_ws(&p);
        if (*p == ')') { p++; break; }
        if (h->nd == 32) npy_bad(I, j, "more than 32 dimensions");
        char *e;
        if (*p < '0' || *p > '9') npy_bad(I, j, "the shape must hold whole numbers");
        unsigned long long x = strtoull(p, &e, 10);
        if (*e == 'L') e++;                                   /* Python 2 longs */
        h->shape[h->nd++] = x;
        p = e;
        py_ws(&p);
        if (*p == ',') p++;
        else if (*p != ')') npy_bad(I, j, "',' or ')' expected in the shape");
      }
    } else {
      py_skip(I, j, &p);
    }
    py_ws(&p);
    if (*p == ',') p++;
    else if (*p != '}') npy_bad(I, j, "',' or '}' expected");
  }
  if (!h->descr[0]) npy_bad(I, j, "no 'descr'");
  if (h->fortran < 0) npy_bad(I, j, "no 'fortran_order'");
  if (h->nd < 0) npy_bad(I, j, "no 'shape'");
}

static Dtype npy_dtype(Interp *I, IoJob *j, const char *descr) {
  static const struct { char kind; int size; const char *name; } types[] = {
    { 'f', 8, "float64" }, { 'f', 4, "float32" }, { 'f', 2, "float16" },
    { 'i', 1, "int8" }, { 'i', 2, "int16" }, { 'i', 4, "int32" }, { 'i', 8, "int64" },
    { 'u', 1, "uint8" }, { 'u', 2, "uint16" }, { 'u', 4, "uint32" }, { 'u', 8, "uint64" }, { 'b', 1, "bool" },
  };
  const char *p = descr;
  char order = '=';
  if (*p == '<' || *p == '>' || *p == '|' || *p == '=') order = *p++;
  if (*p && p[1]) {
    char *e;
    long size = strtol(p + 1, &e, 10);
    if (!*e)
      for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        if (types[k].kind == *p && types[k].size == size) {
          Dtype t = { types[k].kind, types[k].size, order == '>' || (order == '=' && host_big()), types[k].name };
          return t;
        }
  }
  bi_error(I, "'%s' holds the dtype '%s', which mls cannot read (floats, integers and bool can be read)", j->path, descr);
}

void npy_read(Interp *I, IoJob *j) {
  Reader *r = &j->in;
  unsigned char pre[12];
  size_t got = rd_read(I, r, pre, 10);
  if (got < 6 || memcmp(pre, "\x93NUMPY", 6) != 0) {
    if (got > 0 && !memcmp(pre, "\x93NUMPY", got < 6 ? got : 6)) bi_error(I, "'%s' is truncated (header)", j->path);
    bi_error(I, "'%s' is not a .npy file (it does not start with \\x93NUMPY)", j->path);
  }
  if (got < 10) bi_error(I, "'%s' is truncated (header)", j->path);
  uint64_t hlen, off;
  if (pre[6] == 1) { hlen = pre[8] | (uint64_t)pre[9] << 8; off = 10; }
  else if (pre[6] == 2 || pre[6] == 3) { rd_exact(I, r, pre + 10, 2, "header"); hlen = get_le32(pre + 8); off = 12; }
  else bi_error(I, "'%s' is a .npy file of version %d.%d, which mls cannot read (1.0 to 3.0)", j->path, pre[6], pre[7]);
  if (hlen > 1 << 20) bi_error(I, "'%s' has a .npy header of %llu bytes, too large", j->path, (unsigned long long)hlen);
  j->scratch = mem_alloc(hlen + 1);
  rd_exact(I, r, j->scratch, hlen, "header");
  j->scratch[hlen] = '\0';
  NpyHeader h;
  npy_parse(I, j, (char *)j->scratch, &h);
  Dtype t = npy_dtype(I, j, h.descr);
  int64_t rows, cols;
  char what[160];
  shape_text(what, sizeof what, h.shape, h.nd, t.name);
  if (h.nd > 2 && h.fortran) bi_error(I, "'%s' holds %s in Fortran order; only 1 or 2 dimensions can be read in that order", j->path, what);
  if (!flatten(h.shape, h.nd, &rows, &cols, (uint64_t)t.size)) bi_error(I, "'%s' declares %s, too large", j->path, what);
  /* (a 1-D array is a column vector; more dimensions are flattened after the first) */
  rd_check_payload(I, r, off + hlen, (uint64_t)rows * (uint64_t)cols * (uint64_t)t.size, what);
  read_elements(I, j, rows, cols, t, h.fortran == 1);
}

void npy_write(Interp *I, IoJob *j) {
  Out *o = &j->out;
  const Tensor *m = j->m;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m);
  char h[256];
  int n = snprintf(h, sizeof h, "{'descr': '<f8', 'fortran_order': False, 'shape': (%lld, %lld), }", (long long)rows, (long long)cols);
  int pad = (int)((64 - (10 + (size_t)n + 1) % 64) % 64);        /* NumPy aligns the data to 64 bytes */
  memset(h + n, ' ', (size_t)pad);
  n += pad;
  h[n++] = '\n';
  unsigned char pre[10] = { 0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 255), (unsigned char)(n >> 8) };
  out_write(I, o, pre, 10);
  out_write(I, o, h, (size_t)n);
  const double *d = tensor_data(m);
  uint64_t numel = (uint64_t)rows * (uint64_t)cols;
  if (!host_big()) { out_write(I, o, d, (size_t)numel * 8); return; }
  unsigned char b[8];
  for (uint64_t q = 0; q < numel; q++) {
    uint64_t x;
    memcpy(&x, &d[q], 8);
    put_le64(b, x);
    out_write(I, o, b, 8);
  }
}

/* ---- idx ---- */

void idx_read(Interp *I, IoJob *j) {
  Reader *r = &j->in;
  unsigned char h[4], dims[64];
  size_t got = rd_read(I, r, h, 4);
  if (got == 0) bi_error(I, "'%s' is empty, not an idx file", j->path);
  if (h[0] || (got > 1 && h[1]))
    bi_error(I, "'%s' is not an idx file (it must start with the bytes 00 00 type dims)", j->path);
  if (got < 4) bi_error(I, "'%s' is truncated (header)", j->path);
  Dtype t;
  switch (h[2]) {
  case 0x08: t = (Dtype){ 'u', 1, true, "uint8" }; break;
  case 0x09: t = (Dtype){ 'i', 1, true, "int8" }; break;
  case 0x0B: t = (Dtype){ 'i', 2, true, "int16" }; break;
  case 0x0C: t = (Dtype){ 'i', 4, true, "int32" }; break;
  case 0x0D: t = (Dtype){ 'f', 4, true, "float32" }; break;
  case 0x0E: t = (Dtype){ 'f', 8, true, "float64" }; break;
  default: bi_error(I, "'%s' is not an idx file (unknown element type 0x%02x)", j->path, h[2]);
  }
  int nd = h[3];
  if (nd < 1 || nd > 16) bi_error(I, "'%s' declares %d dimensions (idx files have 1 to 16)", j->path, nd);
  rd_exact(I, r, dims, (size_t)nd * 4, "header");
  uint64_t shape[16];
  for (int k = 0; k < nd; k++) shape[k] = get_be32(dims + 4 * k);
  int64_t rows, cols;
  char what[200];
  shape_text(what, sizeof what, shape, nd, t.name);
  if (!flatten(shape, nd, &rows, &cols, (uint64_t)t.size)) bi_error(I, "'%s' declares %s, too large", j->path, what);
  rd_check_payload(I, r, 4 + 4 * (uint64_t)nd, (uint64_t)rows * (uint64_t)cols * (uint64_t)t.size, what);
  read_elements(I, j, rows, cols, t, false);
}

/* The smallest idx type that holds every element exactly: uint8, int8, int16, int32 or
** float64. A column vector is written with one dimension (as MNIST's label files). */
void idx_write(Interp *I, IoJob *j) {
  Out *o = &j->out;
  const Tensor *m = j->m;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m);
  const double *d = tensor_data(m);
  uint64_t numel = (uint64_t)rows * (uint64_t)cols;
  if ((uint64_t)rows > UINT32_MAX || (uint64_t)cols > UINT32_MAX)
    bi_error(I, "a %lldx%lld matrix is too large for an idx file (at most 4294967295 per dimension)", (long long)rows, (long long)cols);
  bool whole = true;
  double lo = 0, hi = 0;
  for (uint64_t q = 0; q < numel && whole; q++) {
    double x = d[q];
    if (x != floor(x) || x < -2147483648.0 || x > 2147483647.0 || (x == 0 && signbit(x))) whole = false;
    if (x < lo) lo = x;
    if (x > hi) hi = x;
  }
  Dtype t = !whole ? (Dtype){ 'f', 8, true, "float64" } : lo >= 0 && hi <= 255 ? (Dtype){ 'u', 1, true, "uint8" }
          : lo >= -128 && hi <= 127 ? (Dtype){ 'i', 1, true, "int8" } : lo >= -32768 && hi <= 32767 ? (Dtype){ 'i', 2, true, "int16" }
          : (Dtype){ 'i', 4, true, "int32" };
  unsigned char code = t.kind == 'f' ? 0x0E : t.kind == 'u' ? 0x08 : t.size == 1 ? 0x09 : t.size == 2 ? 0x0B : 0x0C;
  int nd = cols == 1 ? 1 : 2;
  unsigned char h[12] = { 0, 0, code, (unsigned char)nd };
  put_be32(h + 4, (uint32_t)rows);
  put_be32(h + 8, (uint32_t)cols);
  out_write(I, o, h, 4 + 4 * (size_t)nd);
  unsigned char b[CHUNK];
  size_t n = 0;
  for (uint64_t q = 0; q < numel; q++) {
    double x = d[q];
    if (t.kind == 'f') {
      uint64_t u;
      memcpy(&u, &x, 8);
      for (int k = 0; k < 8; k++) b[n++] = (unsigned char)(u >> (56 - 8 * k));
    } else {
      uint32_t u = (uint32_t)(int32_t)x;
      for (int k = t.size - 1; k >= 0; k--) b[n++] = (unsigned char)(u >> (8 * k));
    }
    if (n > CHUNK - 8) { out_write(I, o, b, n); n = 0; io_poll(I); }
  }
  out_write(I, o, b, n);
}

/* ---- checkpoints ---- */

#define CKPT_MAGIC "MLSCKPT"                  /* and its NUL: 8 bytes */
#define CKPT_VERSION 2                  /* the newest version load() reads */
#define CKPT_HEADER 24
/* Whether the n bytes at s are UTF-8 (no overlong form, surrogate or code point past U+10FFFF). */
static bool utf8_valid(const unsigned char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    unsigned c = s[i];
    size_t k;
    unsigned min;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xc2 && c <= 0xdf) { k = 2; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { k = 3; min = 0x800; }
    else if (c >= 0xf0 && c <= 0xf4) { k = 4; min = 0x10000; }
    else return false;
    if (n - i < k) return false;
    unsigned cp = c & (0x7f >> k);
    for (size_t q = 1; q < k; q++) {
      if ((s[i + q] & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (s[i + q] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += k;
  }
  return true;
}

#define CKPT_MAX_DEPTH 100
enum { CK_NULL, CK_NUM, CK_BOOL, CK_STR, CK_MAT, CK_LIST, CK_SPMAT };

/* Bytes of v's payload; throws for what cannot be saved. */
static uint64_t ck_payload(Interp *I, Value v, const char *arg, int depth) {
  char d[64];
  v = ad_primal(v);                             /* a value traced by grad: its primal */
  switch (v.t) {
  case VT_NULL: return 0;
  case VT_NUM: return 8;
  case VT_BOOL: return 1;
  case VT_STR: return v.u.s->len;
  case VT_MAT:
    if (tensor_is_sparse(v.u.m)) return 24 + 8 * ((uint64_t)tensor_rows(v.u.m) + 1) + 12 * (uint64_t)tensor_csr(v.u.m)->nnz;
    return 16 + 8 * (uint64_t)tensor_numel(v.u.m);
  case VT_LIST: {
    if (depth >= CKPT_MAX_DEPTH) bi_error(I, "'%s' holds lists nested more than %d deep", arg, CKPT_MAX_DEPTH);
    const List *l = v.u.l;
    uint64_t n = 4;
    for (int k = 0; k < l->n; k++) {
      const Symbol *s = l->names ? l->names[k] : NULL;
      if (s && s->len > 65535) bi_error(I, "'%s' holds a name longer than 65535 bytes", arg);
      if (s && !utf8_valid((const unsigned char *)s->name, s->len))
        bi_error(I, "'%s' holds a name that is not UTF-8 (load() would refuse it)", arg);
      n += 4 + (s ? s->len : 0) + 9 + ck_payload(I, l->items[k], arg, depth + 1);
    }
    return n;
  }
  default:
    bi_error(I, "cannot save '%s': it is %s (numbers, booleans, strings, matrices and lists can be saved)", arg,
             val_describe(v, d, sizeof d));
  }
}

/* Whether v is or holds a matrix stored sparse (the file is then version 2). */
static bool ck_has_sparse(Value v) {
  v = ad_primal(v);
  if (v.t == VT_MAT) return tensor_is_sparse(v.u.m);
  if (v.t != VT_LIST) return false;
  for (int k = 0; k < v.u.l->n; k++)
    if (ck_has_sparse(v.u.l->items[k])) return true;
  return false;
}

/* n little-endian integers of size bytes each (4 or 8) from src, in chunks. */
static void ck_put_ints(Interp *I, Out *o, const void *src, int64_t n, int size) {
  if (!host_big()) { out_write(I, o, src, (size_t)n * (size_t)size); return; }
  unsigned char b[CHUNK];
  size_t k = 0;
  for (int64_t q = 0; q < n; q++) {
    uint64_t x;
    if (size == 8) memcpy(&x, (const char *)src + 8 * q, 8);
    else { uint32_t y; memcpy(&y, (const char *)src + 4 * q, 4); x = y; }
    if (size == 8) put_le64(b + k, x);
    else put_le32(b + k, (uint32_t)x);
    k += (size_t)size;
    if (k > CHUNK - 8) { out_write(I, o, b, k); k = 0; io_poll(I); }
  }
  out_write(I, o, b, k);
}

static void ck_put_name(Interp *I, Out *o, const Symbol *s) {
  unsigned char b[4];
  put_le32(b, s ? s->len : 0);
  out_write(I, o, b, 4);
  if (s) out_write(I, o, s->name, s->len);
}

static void ck_put_value(Interp *I, Out *o, Value v, const char *arg, int depth) {
  unsigned char b[16];
  uint64_t len = ck_payload(I, v, arg, depth);                /* throws for what cannot be saved */
  v = ad_primal(v);
  b[0] = v.t == VT_NULL ? CK_NULL : v.t == VT_NUM ? CK_NUM : v.t == VT_BOOL ? CK_BOOL : v.t == VT_STR ? CK_STR
       : v.t == VT_MAT ? (tensor_is_sparse(v.u.m) ? CK_SPMAT : CK_MAT) : CK_LIST;
  put_le64(b + 1, len);
  out_write(I, o, b, 9);
  switch (v.t) {
  case VT_NUM: { uint64_t x; memcpy(&x, &v.u.n, 8); put_le64(b, x); out_write(I, o, b, 8); break; }
  case VT_BOOL: b[0] = v.u.b ? 1 : 0; out_write(I, o, b, 1); break;
  case VT_STR: out_write(I, o, v.u.s->s, v.u.s->len); break;
  case VT_MAT: {
    const Tensor *t = v.u.m;
    if (tensor_is_sparse(t)) {                 /* the CSR as it is stored (never densified) */
      const SpCsr *c = tensor_csr(t);
      unsigned char h[24];
      put_le64(h, (uint64_t)c->rows);
      put_le64(h + 8, (uint64_t)c->cols);
      put_le64(h + 16, (uint64_t)c->nnz);
      out_write(I, o, h, 24);
      ck_put_ints(I, o, c->rowptr, c->rows + 1, 8);
      ck_put_ints(I, o, c->col, c->nnz, 4);
      ck_put_ints(I, o, c->val, c->nnz, 8);
      break;
    }
    int64_t rows = tensor_rows(t), cols = tensor_cols(t);
    put_le64(b, (uint64_t)rows);
    put_le64(b + 8, (uint64_t)cols);
    out_write(I, o, b, 16);
    if (tensor_is_contiguous(t) && !host_big()) { out_write(I, o, tensor_data(t), (size_t)(rows * cols) * 8); break; }
    for (int64_t i = 0; i < rows; i++) {
      io_poll(I);
      for (int64_t k = 0; k < cols; k++) {
        double x = tensor_get(t, i, k);
        uint64_t u;
        memcpy(&u, &x, 8);
        put_le64(b, u);
        out_write(I, o, b, 8);
      }
    }
    break;
  }
  case VT_LIST: {
    const List *l = v.u.l;
    put_le32(b, (uint32_t)l->n);
    out_write(I, o, b, 4);
    for (int k = 0; k < l->n; k++) {
      ck_put_name(I, o, l->names ? l->names[k] : NULL);
      ck_put_value(I, o, l->items[k], arg, depth + 1);
    }
    break;
  }
  default: break;
  }
}

void ckpt_save(Interp *I, IoJob *j) {
  Args *a = j->args;
  uint64_t total = CKPT_HEADER + 4;
  for (int k = 0; k < a->ndots; k++) {
    const Symbol *s = a->dotnames[k];
    if (!s) bi_error(I, "argument %d has no name: write save(path, name=value, ...)", k + 2);
    for (int q = 0; q < k; q++)
      if (a->dotnames[q] == s) bi_error(I, "'%s' is given twice", s->name);
    if (s->len > 65535) bi_error(I, "a name longer than 65535 bytes");
    if (!utf8_valid((const unsigned char *)s->name, s->len)) bi_error(I, "a name that is not UTF-8");
    total += 4 + s->len + 9 + ck_payload(I, a->dots[k], s->name, 0);
  }
  Out *o = &j->out;
  out_open(I, o, j->path, false);
  o->crc_on = true;
  bool sparse = false;
  for (int k = 0; k < a->ndots && !sparse; k++) sparse = ck_has_sparse(a->dots[k]);
  unsigned char h[CKPT_HEADER];
  memcpy(h, CKPT_MAGIC, 8);
  put_le32(h + 8, sparse ? 2 : 1);
  put_le32(h + 12, (uint32_t)a->ndots);
  put_le64(h + 16, total);
  out_write(I, o, h, sizeof h);
  for (int k = 0; k < a->ndots; k++) {
    ck_put_name(I, o, a->dotnames[k]);
    ck_put_value(I, o, a->dots[k], a->dotnames[k]->name, 0);
  }
  o->crc_on = false;
  put_le32(h, o->crc);
  out_write(I, o, h, 4);
  MLS_ASSERT(o->bytes == total);
  out_commit(I, o);
}

typedef struct Cursor {
  Interp *I;
  IoJob *j;
  uint64_t pos, end;
  uint32_t entry, count;
  uint32_t version;                              /* the file's */
} Cursor;

static l_noret ck_corrupt(Cursor *c, const char *what) {
  bi_error(c->I, "'%s' is corrupt (entry %u of %u: %s)", c->j->path, c->entry, c->count, what);
}

/* Reads exactly n bytes at c->pos; false when the file ends first. */
static bool ck_pread(Interp *I, IoJob *j, void *dst, uint64_t n, uint64_t pos) {
  char *p = dst;
  while (n > 0) {
    io_poll(I);
    size_t k = n > (1u << 26) ? 1u << 26 : (size_t)n;      /* 64 MiB at a time, polling between */
    ssize_t m = pread(j->in.fd, p, k, (off_t)pos);
    if (m < 0) bi_error(I, "cannot read '%s': %s", j->path, strerror(errno));
    if (m == 0) return false;
    p += m;
    pos += (uint64_t)m;
    n -= (uint64_t)m;
  }
  return true;
}

static void ck_get(Cursor *c, void *dst, uint64_t n) {
  if (n > c->end - c->pos || !ck_pread(c->I, c->j, dst, n, c->pos)) ck_corrupt(c, "its data runs past the end");
  c->pos += n;
}

/* n little-endian integers of size bytes each (4 or 8) into dst (host order). */
static void ck_get_ints(Cursor *c, void *dst, uint64_t n, int size) {
  ck_get(c, dst, n * (uint64_t)size);
  if (!host_big()) return;
  unsigned char *p = dst;
  for (uint64_t q = 0; q < n; q++, p += size) {
    if (size == 8) { uint64_t x = get_le64(p); memcpy(p, &x, 8); }
    else { uint32_t x = get_le32(p); memcpy(p, &x, 4); }
  }
}

/* A name as save() writes it: UTF-8, no NUL byte (a name is an identifier's text). */
static Symbol *ck_name(Cursor *c, bool required) {
  unsigned char b[4];
  ck_get(c, b, 4);
  uint32_t n = get_le32(b);
  if (n == 0) {
    if (required) ck_corrupt(c, "an empty name");
    return NULL;
  }
  if (n > 65535) ck_corrupt(c, "a name longer than 65535 bytes");
  if (!c->j->meta) c->j->meta = mem_alloc(65536);             /* (the job's text buffer, unused by load) */
  ck_get(c, c->j->meta, n);
  if (memchr(c->j->meta, '\0', n)) ck_corrupt(c, "a name with a NUL byte");
  if (!utf8_valid((const unsigned char *)c->j->meta, n)) ck_corrupt(c, "a name that is not UTF-8");
  return sym_intern(&c->I->syms, c->j->meta, n);
}

static int cmp_ptr(const void *x, const void *y) {
  uintptr_t a = (uintptr_t)*(void *const *)x, b = (uintptr_t)*(void *const *)y;
  return a < b ? -1 : a > b;
}

/* The names of l are distinct (save() writes no list with a name twice, nor does list());
** top: l is the file's list of entries, whose number the message then gives. */
static void ck_distinct(Cursor *c, const List *l, bool top) {
  if (!l->names || l->n < 2) return;
  Symbol **v = bi_scratch(c->I, (size_t)l->n * sizeof *v);
  int m = 0;
  for (int k = 0; k < l->n; k++)
    if (l->names[k]) v[m++] = l->names[k];
  qsort(v, (size_t)m, sizeof *v, cmp_ptr);
  const Symbol *dup = NULL;
  for (int k = 1; k < m && !dup; k++)
    if (v[k] == v[k - 1]) dup = v[k];
  bi_scratch_free(c->I, v);
  if (!dup) return;
  if (top) {                                    /* the entry that repeats it */
    bool seen = false;
    for (int k = 0; k < l->n; k++)
      if (l->names[k] == dup) {
        if (seen) { c->entry = (uint32_t)k + 1; break; }
        seen = true;
      }
  }
  char what[120];
  snprintf(what, sizeof what, "the name '%.60s' %s twice", dup->name, top ? "is given" : "is in one list");
  ck_corrupt(c, what);
}

/* Reads one value and appends it to parent as soon as it exists (parent owns it from then on). */
static void ck_value(Cursor *c, List *parent, Symbol *name, int depth) {
  Interp *I = c->I;
  unsigned char b[16];
  ck_get(c, b, 9);
  uint64_t len = get_le64(b + 1), start = c->pos;
  if (len > c->end - c->pos) ck_corrupt(c, "a value runs past the end");
  switch (b[0]) {
  case CK_NULL:
    if (len != 0) ck_corrupt(c, "a NULL with a payload");
    list_push(parent, val_null(), name);
    break;
  case CK_NUM: {
    if (len != 8) ck_corrupt(c, "a number of the wrong size");
    ck_get(c, b, 8);
    uint64_t u = get_le64(b);
    double x;
    memcpy(&x, &u, 8);
    list_push(parent, val_num(x), name);
    break;
  }
  case CK_BOOL:
    if (len != 1) ck_corrupt(c, "a boolean of the wrong size");
    ck_get(c, b, 1);
    list_push(parent, val_bool(b[0] != 0), name);
    break;
  case CK_STR: {                                /* (len is within the file: checked above) */
    Value str = val_str_new((size_t)len);
    list_push(parent, str, name);
    ck_get(c, str.u.s->s, len);
    if (memchr(str.u.s->s, '\0', (size_t)len)) ck_corrupt(c, "a string with a NUL byte");
    break;
  }
  case CK_MAT: {
    if (len < 16) ck_corrupt(c, "a matrix without its shape");
    ck_get(c, b, 16);
    uint64_t rows = get_le64(b), cols = get_le64(b + 8);
    if (rows > (uint64_t)1 << 62 || cols > (uint64_t)1 << 62 || (rows && cols > (len - 16) / 8 / rows) ||
        rows * cols * 8 != len - 16)
      ck_corrupt(c, "a matrix whose shape does not match its size");
    Tensor *t = tensor_new(I, (int64_t)rows, (int64_t)cols);
    list_push(parent, val_mat(t), name);
    double *d = tensor_data(t);
    if (!host_big()) { ck_get(c, d, len - 16); break; }
    for (uint64_t q = 0; q < rows * cols; q++) {
      ck_get(c, b, 8);
      uint64_t u = get_le64(b);
      memcpy(&d[q], &u, 8);
    }
    break;
  }
  case CK_SPMAT: {
    if (c->version < 2) goto unknown;
    if (len < 24) ck_corrupt(c, "a sparse matrix without its shape");
    ck_get(c, b, 16);
    uint64_t rows = get_le64(b), cols = get_le64(b + 8);
    ck_get(c, b, 8);
    uint64_t nnz = get_le64(b), room = len - 24;
    if (rows >= room / 8 || nnz > (room - 8 * (rows + 1)) / 12 || 8 * (rows + 1) + 12 * nnz != room)
      ck_corrupt(c, "a sparse matrix whose shape does not match its size");
    if (cols > SP_MAX_COLS) ck_corrupt(c, "a sparse matrix with more columns than a sparse matrix can have");
    Tensor *t = tensor_sparse_new(I, (int64_t)rows, (int64_t)cols, (int64_t)nnz);
    list_push(parent, val_mat(t), name);
    SpCsr *s = tensor_csr(t);
    ck_get_ints(c, s->rowptr, rows + 1, 8);
    ck_get_ints(c, s->col, nnz, 4);
    ck_get_ints(c, s->val, nnz, 8);
    if (s->rowptr[0] != 0 || (uint64_t)s->rowptr[rows] != nnz) ck_corrupt(c, "a sparse matrix whose row offsets do not span its entries");
    for (uint64_t i = 0; i < rows; i++) {
      int64_t p0 = s->rowptr[i], p1 = s->rowptr[i + 1];
      if (p1 < p0 || (uint64_t)p1 > nnz) ck_corrupt(c, "a sparse matrix whose row offsets decrease or pass its entries");
      for (int64_t p = p0; p < p1; p++)
        if (s->col[p] < 0 || (uint64_t)s->col[p] >= cols || (p > p0 && s->col[p] <= s->col[p - 1]))
          ck_corrupt(c, "a sparse matrix whose column indices are out of order or outside it");
    }
    s->nnz = (int64_t)nnz;
    t->refcount++;                              /* the matrix in the format the rule picks */
    Tensor *o = tensor_auto_format(I, t);       /* (densified under --sparse never) */
    val_release(parent->items[parent->n - 1]);
    parent->items[parent->n - 1] = val_mat(o);
    break;
  }
  case CK_LIST: {
    if (len < 4) ck_corrupt(c, "a list without its length");
    if (depth >= CKPT_MAX_DEPTH) ck_corrupt(c, "lists nested too deeply");
    ck_get(c, b, 4);
    uint32_t n = get_le32(b);
    if (n > (len - 4) / 13) ck_corrupt(c, "a list longer than its data");
    List *l = list_new(I, (int)(n < 64 ? n : 64));
    list_push(parent, val_list(l), name);
    for (uint32_t k = 0; k < n; k++) {
      Symbol *s = ck_name(c, false);
      ck_value(c, l, s, depth + 1);
    }
    ck_distinct(c, l, false);
    break;
  }
  default:
  unknown: {
    char what[48];
    snprintf(what, sizeof what, "unknown type tag %u", b[0]);
    ck_corrupt(c, what);
  }
  }
  if (c->pos - start != len) ck_corrupt(c, "a value whose length does not match its contents");
}

/* The 1-based entry that the end of the file cuts, or 0 when every entry is whole. */
static uint32_t ck_cut_entry(Interp *I, IoJob *j, uint64_t size, uint32_t count) {
  uint64_t pos = CKPT_HEADER;
  unsigned char b[9];
  for (uint32_t e = 0; e < count; e++) {
    if (size - pos < 4 || !ck_pread(I, j, b, 4, pos)) return e + 1;
    pos += 4 + (uint64_t)get_le32(b);
    if (pos > size || size - pos < 9 || !ck_pread(I, j, b, 9, pos)) return e + 1;
    uint64_t len = get_le64(b + 1);
    pos += 9;
    if (len > size - pos) return e + 1;
    pos += len;
  }
  return 0;
}

void ckpt_load(Interp *I, IoJob *j) {
  Reader *r = &j->in;
  rd_open(I, r, j->path, true);
  if (r->size < 0) bi_error(I, "cannot load '%s': not a regular file", j->path);
  uint64_t size = (uint64_t)r->size;
  unsigned char h[CKPT_HEADER];
  size_t got = size < CKPT_HEADER ? (size_t)size : CKPT_HEADER;
  if (!ck_pread(I, j, h, got, 0)) bi_error(I, "cannot read '%s': it changed while being read", j->path);
  if (got == 0) bi_error(I, "'%s' is empty, not an MLS checkpoint", j->path);
  if (memcmp(h, CKPT_MAGIC, got < 8 ? got : 8) != 0) bi_error(I, "'%s' is not an MLS checkpoint", j->path);
  if (got >= 12) {
    uint32_t version = get_le32(h + 8);
    if (version > CKPT_VERSION) bi_error(I, "'%s': version %u is newer than this mls (%d)", j->path, version, CKPT_VERSION);
    if (version == 0) bi_error(I, "'%s' is corrupt (version 0)", j->path);
  }
  if (got < CKPT_HEADER) bi_error(I, "'%s' is truncated (header)", j->path);
  uint32_t count = get_le32(h + 12);
  uint64_t declared = get_le64(h + 16);
  if (size < declared) {
    uint32_t e = ck_cut_entry(I, j, size, count);
    if (e) bi_error(I, "'%s' is truncated (entry %u of %u)", j->path, e, count);
    bi_error(I, "'%s' is truncated (checksum)", j->path);
  }
  if (size > declared) bi_error(I, "'%s' is corrupt (%llu bytes after the end of its data)", j->path, (unsigned long long)(size - declared));
  if (size < CKPT_HEADER + 4) bi_error(I, "'%s' is corrupt (its declared size is too small)", j->path);
  j->scratch = mem_alloc(1 << 20);                             /* the checksum before anything else */
  uLong crc = crc32(0L, Z_NULL, 0);
  for (uint64_t pos = 0; pos < size - 4;) {
    uint64_t n = size - 4 - pos < (1 << 20) ? size - 4 - pos : 1 << 20;
    if (!ck_pread(I, j, j->scratch, n, pos)) bi_error(I, "cannot read '%s': it changed while being read", j->path);
    crc = crc32(crc, j->scratch, (uInt)n);
    pos += n;
    if ((pos & ((1 << 26) - 1)) == 0) io_poll(I);
  }
  unsigned char tail[4];
  if (!ck_pread(I, j, tail, 4, size - 4)) bi_error(I, "cannot read '%s': it changed while being read", j->path);
  if ((uint32_t)crc != get_le32(tail)) bi_error(I, "'%s': checksum mismatch (the file is corrupt)", j->path);
  List *top = list_new(I, (int)(count < 64 ? count : 64));
  j->result = val_list(top);
  Cursor c = { I, j, CKPT_HEADER, size - 4, 0, count, get_le32(h + 8) };
  for (uint32_t e = 0; e < count; e++) {
    c.entry = e + 1;
    Symbol *s = ck_name(&c, true);
    ck_value(&c, top, s, 0);
  }
  ck_distinct(&c, top, true);
  if (c.pos != c.end) bi_error(I, "'%s' is corrupt (%llu bytes after its last entry)", j->path, (unsigned long long)(c.end - c.pos));
}
