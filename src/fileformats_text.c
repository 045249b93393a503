/*
** fileformats_text.c — the text formats: csv, DML's text (i j v triples), Matrix Market,
** libsvm, and DML's JSON .mtd sidecar that records the shape and csv options of a csv, text or
** libsvm file. The sparse formats (text, Matrix Market coordinate, libsvm) are read into sparse
** storage and written from it ("sparse files" below). Every error about the contents names
** the file and line: "m.csv:3: column 2: ...".
*/
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "fileformats.h"
#include "mem.h"

#define MAX_INDEX 9007199254740992.0   /* 2^53: whole numbers above are not exact */

/* The value of row i of the CSR c at column k, where *p walks the row in column order (the
** caller asks for the columns of a row in increasing order, starting *p at c->rowptr[i]). */
static double csr_next(const SpCsr *c, int64_t i, int64_t k, int64_t *p) {
  while (*p < c->rowptr[i + 1] && c->col[*p] < k) (*p)++;
  return *p < c->rowptr[i + 1] && c->col[*p] == k ? c->val[*p] : 0.0;
}

/* ---- csv ---- */

static bool is_blank(char c, const char *sep) { return (c == ' ' || c == '\t') && !strchr(sep, c); }

/* Cuts the next field off the line at *pp, in place: "..." is unquoted (a doubled "" is one
** quote) and blanks around the field are trimmed. *pp becomes the text after the separator,
** or NULL after the last field. */
char *csv_cut_field(Interp *I, IoJob *j, char **pp, int64_t col) {
  const char *sep = j->o.sep;
  size_t seplen = strlen(sep);
  char *q = *pp;
  while (is_blank(*q, sep)) q++;
  if (*q == '"') {
    char *w = q, *r = q + 1;
    for (;;) {
      if (!*r) bi_error(I, "%s:%lld: column %lld: unterminated quoted field (a field cannot span lines)",
                        j->path, (long long)j->in.line, (long long)col);
      if (*r == '"') {
        if (r[1] != '"') { r++; break; }
        r++;
      }
      *w++ = *r++;
    }
    while (is_blank(*r, sep)) r++;
    if (*r && strncmp(r, sep, seplen) != 0)
      bi_error(I, "%s:%lld: column %lld: unexpected '%c' after a quoted field", j->path, (long long)j->in.line,
               (long long)col, *r);
    *w = '\0';
    *pp = *r ? r + seplen : NULL;
    return q;
  }
  char *s = seplen == 1 ? strchr(q, sep[0]) : strstr(q, sep);
  char *e = s ? s : q + strlen(q);
  *pp = s ? s + seplen : NULL;
  while (e > q && is_blank(e[-1], sep)) e--;
  *e = '\0';
  return q;
}

void csv_read(Interp *I, IoJob *j) {
  Reader *r = &j->in;
  int64_t rows = 0, cols = -1, header_cols = -1, first = 0;
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
    if (header) {
      while (p) { csv_cut_field(I, j, &p, c + 1); c++; }
      header_cols = c;
      header = false;
      continue;
    }
    while (p) {
      char *f = csv_cut_field(I, j, &p, c + 1);
      double v = 0;                                                    /* an empty cell is 0, as DML fills */
      if (*f && !parse_cell(f, &v))
        bi_error(I, "%s:%lld: column %lld: '%.40s' is not a number%s", j->path, (long long)r->line, (long long)c + 1, f,
                 r->line == 1 && rows == 0 ? " (a header line? pass header=TRUE)" : "");
      io_push_cell(I, j, v);
      c++;
    }
    if (cols < 0) { cols = c; first = r->line; }
    else if (c != cols)
      bi_error(I, "%s:%lld: %lld columns, but line %lld has %lld", j->path, (long long)r->line, (long long)c,
               (long long)first, (long long)cols);
    rows++;
  }
  if (cols < 0) {                                                      /* no data lines */
    if (j->o.rows >= 0 && j->o.cols >= 0 && j->o.rows * j->o.cols == 0) { rows = j->o.rows; cols = j->o.cols; }
    else cols = header_cols >= 0 ? header_cols : 0;
  }
  Tensor *t = io_result(I, j, rows, cols, false);
  if (rows * cols > 0) memcpy(tensor_data(t), j->cells, (size_t)(rows * cols) * sizeof(double));
}

void csv_write(Interp *I, IoJob *j) {
  Out *o = &j->out;
  const Tensor *m = j->m;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m);
  const SpCsr *sp = tensor_is_sparse(m) ? tensor_csr(m) : NULL;   /* (read row by row, not densified) */
  const double *d = sp ? NULL : tensor_data(m);
  const char *sep = j->o.sep;
  size_t seplen = strlen(sep);
  char num[40];
  if (j->o.header > 0) {
    for (int64_t k = 0; k < cols; k++) {
      if (k) out_write(I, o, sep, seplen);
      out_write(I, o, num, (size_t)snprintf(num, sizeof num, "C%lld", (long long)k + 1));
    }
    out_write(I, o, "\n", 1);
  }
  for (int64_t i = 0; i < rows; i++) {
    if ((i & 255) == 0) io_poll(I);
    int64_t p = sp ? sp->rowptr[i] : 0;
    for (int64_t k = 0; k < cols; k++) {
      if (k) out_write(I, o, sep, seplen);
      out_write(I, o, num, (size_t)fmt_double(num, sp ? csr_next(sp, i, k, &p) : d[i * cols + k]));
    }
    out_write(I, o, "\n", 1);
  }
}

/* ---- whitespace-separated numbers (text and Matrix Market) ---- */

/* The next blank-separated token of *pp as a number; false at the end of the line. A token
** that is not a number is an error naming the line. */
static bool next_num(Interp *I, IoJob *j, char **pp, double *x) {
  char *p = *pp;
  while (*p == ' ' || *p == '\t') p++;
  if (!*p) { *pp = p; return false; }
  char *e = p;
  while (*e && *e != ' ' && *e != '\t') e++;
  char save = *e;
  *e = '\0';
  if (!parse_cell(p, x)) bi_error(I, "%s:%lld: '%.40s' is not a number", j->path, (long long)j->in.line, p);
  *e = save;
  *pp = e;
  return true;
}

static bool is_index(double x) { return x >= 1 && x <= MAX_INDEX && x == floor(x); }

/* One "i j v" line (v left out for a Matrix Market pattern); false for a blank line. */
static bool cell_line(Interp *I, IoJob *j, char *p, bool pattern, double *i, double *k, double *v, const char *expect) {
  double x;
  if (!next_num(I, j, &p, i)) return false;
  *v = 1;
  if (!next_num(I, j, &p, k) || (!pattern && !next_num(I, j, &p, v)) || next_num(I, j, &p, &x) ||
      !is_index(*i) || !is_index(*k))
    bi_error(I, "%s:%lld: expected '%s' with whole i, j >= 1", j->path, (long long)j->in.line, expect);
  return true;
}

/* ---- sparse files ----
** An i j v text file, a Matrix Market coordinate file and a libsvm file list the nonzero
** entries of a matrix whose shape they declare (or imply, by their largest index). Their
** readers collect the entries (io_push_entry: memory bounded by the entries, 24 bytes each)
** and make the matrix from them with tensor_sparse_from_coo, later entries for a cell
** replacing earlier ones, then tensor_auto_format picks its format (docs/sparse.md): sparse
** in CSR, or dense when enough of it is nonzero, as before there was sparse storage. No dense
** intermediate is made.
**
** A few bytes can still declare any shape ("2147483648 1 1" is 15 bytes). The shape is
** legitimate metadata, so it is not refused as such; but before anything is allocated, a
** part of the result whose size the entries do not justify is bounded: a sparse matrix's row
** offsets (8 bytes a row) over 1 GiB for fewer than one entry per 1024 rows, or, when the
** result must be dense (--sparse never; more columns than a sparse matrix can have), a dense
** matrix over 1 GiB with fewer than one entry per 1024 cells, is refused unless --max-memory,
** given explicitly, allows that much (the option then says the memory is meant for it). Every
** other shape goes to the ordinary --max-memory check. */
#define SPARSE_FREE_BYTES ((double)((uint64_t)1 << 30))
#define SPARSE_UNITS_PER_ENTRY 1024.0

/* Whether a reader may make a sparse matrix of C columns (else it makes a dense one). */
static bool sparse_ok(const Interp *I, int64_t C) { return I->sparse_mode != SPARSE_NEVER && C <= SP_MAX_COLS; }

/* The bound above, for the shape R x C read sparse (sparse_ok) or dense. entries: the number of
** the file's entries, or (at_most) a bound on it from the file's size. */
static void sparse_shape_check(Interp *I, IoJob *j, int64_t R, int64_t C, uint64_t entries, bool at_most, bool sparse) {
  double units = sparse ? (double)R + 1 : (double)R * (double)C, bytes = units * 8;
  if (bytes <= SPARSE_FREE_BYTES || units <= SPARSE_UNITS_PER_ENTRY * (double)(entries ? entries : 1)) return;
  if (mem_limit_is_set() && bytes <= (double)mem_limit()) return;
  char size[32], lim[32], how[160];
  if (bytes >= 18446744073709551615.0) snprintf(size, sizeof size, "%.1f GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  else mem_format_size(size, sizeof size, (uint64_t)bytes);
  if (sparse) snprintf(how, sizeof how, "read as a sparse matrix its row offsets alone take %s", size);
  else if (C > SP_MAX_COLS)
    snprintf(how, sizeof how, "read as a dense matrix (a sparse one has at most %lld columns) it takes %s",
             (long long)SP_MAX_COLS, size);
  else snprintf(how, sizeof how, "read as a dense matrix (--sparse never) it takes %s", size);
  const char *many = entries == 1 ? "entry" : "entries";
  if (mem_limit_is_set())
    bi_error(I, "'%s' declares a %lldx%lld matrix for %s%llu %s: %s, over the limit of %s (--max-memory)", j->path,
             (long long)R, (long long)C, at_most ? "at most " : "", (unsigned long long)entries, many, how,
             mem_format_size(lim, sizeof lim, mem_limit()));
  bi_error(I, "'%s' declares a %lldx%lld matrix for %s%llu %s: %s, over 1 GiB with fewer than one entry per 1024 %s; "
           "--max-memory %.0fG or more reads it", j->path, (long long)R, (long long)C, at_most ? "at most " : "",
           (unsigned long long)entries, many, how, sparse ? "rows" : "cells", ceil(bytes / (1024.0 * 1024.0 * 1024.0)));
}

static int entry_order(const void *x, const void *y, void *ud) {
  const IoJob *j = ud;
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  if (j->ent_i[a] != j->ent_i[b]) return j->ent_i[a] < j->ent_i[b] ? -1 : 1;
  if (j->ent_k[a] != j->ent_k[b]) return j->ent_k[a] < j->ent_k[b] ? -1 : 1;
  return a < b ? -1 : a > b;                   /* file order: the later entry last */
}

/* The R x C CSR of j's entries by sorting them: O(n log n) time, memory bounded by the entries
** and rows. (tensor_sparse_from_coo's counting sort takes O(cols) scratch: 16 GB for the
** 15-byte file "1 2000000000 1".) +1. */
static Tensor *entries_sorted(Interp *I, IoJob *j, int64_t R, int64_t C) {
  int64_t n = j->nent;
  int64_t *perm = tensor_scratch(I, (size_t)(n > 0 ? n : 1) * sizeof(int64_t));
  for (int64_t q = 0; q < n; q++) perm[q] = q;
  io_poll(I);
  qsort_r(perm, (size_t)n, sizeof *perm, entry_order, j);
  io_poll(I);
  Tensor *t = tensor_sparse_new(I, R, C, n);   /* (a throw: perm is freed, t not made) */
  SpCsr *c = tensor_csr(t);
  int64_t w = 0;
  for (int64_t q = 0; q < n; q++) {
    int64_t e = perm[q], i = j->ent_i[e];
    if (w > 0 && q > 0 && i == j->ent_i[perm[q - 1]] && j->ent_k[e] == c->col[w - 1]) { c->val[w - 1] = j->ent_v[e]; continue; }
    c->col[w] = (int32_t)j->ent_k[e];
    c->val[w++] = j->ent_v[e];
    c->rowptr[i + 1]++;
  }
  for (int64_t i = 0; i < R; i++) c->rowptr[i + 1] += c->rowptr[i];
  c->nnz = w;
  tensor_scratch_free(I, perm);
  return t;
}

/* The result of a sparse format: the R x C matrix of j's entries (0-based, within the shape),
** a later entry for a cell replacing an earlier one. entries: what the messages count. */
static void entries_result(Interp *I, IoJob *j, int64_t R, int64_t C, uint64_t entries) {
  bool sparse = sparse_ok(I, C);
  sparse_shape_check(I, j, R, C, entries, false, sparse);
  if (!sparse) {
    double *d = tensor_data(io_result(I, j, R, C, true));
    for (int64_t q = 0; q < j->nent; q++) d[j->ent_i[q] * C + j->ent_k[q]] = j->ent_v[q];
    io_drop_entries(j);
    return;
  }
  /* (a counting sort when its O(cols) scratch is within the entries' and rows' memory) */
  Tensor *t = (double)C <= 2.0 * ((double)j->nent + (double)R) + 4096
            ? tensor_sparse_from_coo(I, R, C, j->nent, j->ent_i, j->ent_k, j->ent_v, false) : entries_sorted(I, j, R, C);
  val_release(j->result);
  j->result = val_mat(t);                      /* (the job owns it from here) */
  io_drop_entries(j);
  t->refcount++;                               /* the reference tensor_auto_format takes */
  Tensor *o = tensor_auto_format(I, t);
  val_release(j->result);
  j->result = val_mat(o);
}

/* ---- text: i j v ---- */

void text_read(Interp *I, IoJob *j) {
  Reader *r = &j->in;
  int64_t R = j->o.rows, C = j->o.cols, maxi = 0, maxk = 0, n = 0;
  if (R >= 0 && C >= 0 && r->size >= 0) {     /* a declared shape: checked against what the file can hold */
    /* (every entry takes 6 bytes, "1 1 1\n"; a pipe: counted at the end) */
    uint64_t bytes = rd_compressed(I, r) ? (uint64_t)r->size * 1032 + 4096 : (uint64_t)r->size + 1;
    sparse_shape_check(I, j, R, C, bytes / 6, true, sparse_ok(I, C));
  }
  char *line;
  while ((line = rd_line(I, r))) {
    double i, k, v;
    if (!cell_line(I, j, line, false, &i, &k, &v, "i j v")) continue;
    if ((++n & 4095) == 0) io_poll(I);
    int64_t ii = (int64_t)i, kk = (int64_t)k;
    if ((R >= 0 && ii > R) || (C >= 0 && kk > C))
      bi_error(I, "%s:%lld: cell (%lld, %lld) is outside the %lldx%lld matrix %s declares", j->path, (long long)r->line,
               (long long)ii, (long long)kk, (long long)(R >= 0 ? R : ii), (long long)(C >= 0 ? C : kk), j->o.dims_from);
    io_push_entry(I, j, ii - 1, kk - 1, v);
    if (ii > maxi) maxi = ii;
    if (kk > maxk) maxk = kk;
  }
  if (R < 0) R = maxi;
  if (C < 0) C = maxk;
  entries_result(I, j, R, C, (uint64_t)j->nent);
}

/* One "i j v" line of a nonzero entry (1-based i, k). */
static void put_entry(Interp *I, Out *o, int64_t i, int64_t k, double v) {
  char line[128];
  int n = snprintf(line, sizeof line, "%lld %lld ", (long long)i, (long long)k);
  n += fmt_double(line + n, v);
  line[n++] = '\n';
  out_write(I, o, line, (size_t)n);
}

void text_write(Interp *I, IoJob *j) {
  Out *o = &j->out;
  const Tensor *m = j->m;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m);
  char line[128];
  bool last_zero;
  if (tensor_is_sparse(m)) {                   /* from the CSR: the stored entries that are not 0 */
    const SpCsr *c = tensor_csr(m);
    for (int64_t i = 0; i < rows; i++) {
      if ((i & 255) == 0) io_poll(I);
      for (int64_t p = c->rowptr[i]; p < c->rowptr[i + 1]; p++)
        if (c->val[p] != 0) put_entry(I, o, i + 1, (int64_t)c->col[p] + 1, c->val[p]);
    }
    int64_t p = rows > 0 ? c->rowptr[rows - 1] : 0;
    last_zero = rows * cols > 0 && csr_next(c, rows - 1, cols - 1, &p) == 0;
  } else {
    const double *d = tensor_data(m);
    for (int64_t i = 0; i < rows; i++) {
      if ((i & 255) == 0) io_poll(I);
      for (int64_t k = 0; k < cols; k++) {
        double v = d[i * cols + k];
        if (v != 0) put_entry(I, o, i + 1, k + 1, v);   /* NaN is written */
      }
    }
    last_zero = rows * cols > 0 && d[rows * cols - 1] == 0;
  }
  /* a zero last cell is written too, so that the shape survives without the .mtd file */
  if (last_zero) {
    int n = snprintf(line, sizeof line, "%lld %lld 0\n", (long long)rows, (long long)cols);
    out_write(I, o, line, (size_t)n);
  }
}

/* ---- Matrix Market ---- */

/* The next line that is not blank or a % comment, or NULL at the end. */
static char *mm_line(Interp *I, Reader *r) {
  char *line;
  while ((line = rd_line(I, r))) {
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p && *p != '%') return p;
  }
  return NULL;
}

void mm_read(Interp *I, IoJob *j) {
  Reader *r = &j->in;
  char *line = rd_line(I, r);
  if (!line || strncasecmp(line, "%%MatrixMarket", 14) != 0)
    bi_error(I, "'%s' is not a Matrix Market file (its first line must start with %%%%MatrixMarket)", j->path);
  char *words[4] = { NULL, NULL, NULL, NULL }, *save = NULL;
  int nw = 0;
  for (char *w = strtok_r(line + 14, " \t", &save); w && nw < 4; w = strtok_r(NULL, " \t", &save)) words[nw++] = w;
  if (nw < 4) bi_error(I, "%s:1: expected '%%%%MatrixMarket matrix coordinate|array real|integer|pattern general|symmetric|skew-symmetric'", j->path);
  if (strcasecmp(words[0], "matrix") != 0) bi_error(I, "%s:1: only matrices can be read, not '%s'", j->path, words[0]);
  bool coord = !strcasecmp(words[1], "coordinate");
  if (!coord && strcasecmp(words[1], "array") != 0) bi_error(I, "%s:1: unknown format '%s' (coordinate or array)", j->path, words[1]);
  bool pattern = !strcasecmp(words[2], "pattern");
  if (strcasecmp(words[2], "real") && strcasecmp(words[2], "integer") && strcasecmp(words[2], "double") && !(pattern && coord))
    bi_error(I, "%s:1: the field '%s' is not supported (real, integer or pattern)", j->path, words[2]);
  int sym = !strcasecmp(words[3], "general") ? 0 : !strcasecmp(words[3], "symmetric") || !strcasecmp(words[3], "hermitian") ? 1
          : !strcasecmp(words[3], "skew-symmetric") ? -1 : 2;
  if (sym == 2) bi_error(I, "%s:1: unknown symmetry '%s'", j->path, words[3]);

  char *p = mm_line(I, r);
  if (!p) bi_error(I, "'%s' is truncated (no size line)", j->path);
  double dims[3] = { -1, -1, -1 }, x;
  int nd = 0;
  while (nd < 3 && next_num(I, j, &p, &dims[nd])) nd++;
  bool bad = nd != (coord ? 3 : 2) || next_num(I, j, &p, &x);
  for (int q = 0; q < nd; q++) bad = bad || !(dims[q] >= 0 && dims[q] <= MAX_INDEX && dims[q] == floor(dims[q]));
  if (bad) bi_error(I, "%s:%lld: expected the size line '%s'", j->path, (long long)r->line, coord ? "rows cols entries" : "rows cols");
  int64_t R = (int64_t)dims[0], C = (int64_t)dims[1];
  if (sym && R != C) bi_error(I, "%s:%lld: a %s matrix must be square, not %lldx%lld", j->path, (long long)r->line, words[3], (long long)R, (long long)C);
  char what[96];
  snprintf(what, sizeof what, "a %lldx%lld matrix", (long long)R, (long long)C);

  if (coord) {                                               /* entries, then the matrix (sparse files) */
    int64_t nnz = (int64_t)dims[2], n = 0;
    rd_check_payload(I, r, 0, (uint64_t)nnz * 4, what);     /* every entry takes >= 4 bytes */
    sparse_shape_check(I, j, R, C, (uint64_t)nnz, false, sparse_ok(I, C));
    /* Entries in row order (each row's columns increasing, as MLS, SciPy from CSR and most
    ** writers give them) go straight into the CSR, whose arrays the size line sizes: no
    ** entries, no sort, memory the CSR's own. The first entry out of that order moves what
    ** was read into the entries, and the rest goes the general way (entries_result). */
    SpCsr *fast = NULL;
    int64_t li = -1, lk = -1;
    if (sym == 0 && sparse_ok(I, C)) {
      Tensor *t = tensor_sparse_new(I, R, C, nnz);
      j->result = val_mat(t);                                /* (the job owns it: a throw frees it) */
      fast = tensor_csr(t);
    }
    while ((p = mm_line(I, r))) {
      double i, k, v;
      cell_line(I, j, p, pattern, &i, &k, &v, pattern ? "i j" : "i j v");
      if (n == nnz) bi_error(I, "%s:%lld: more entries than the %lld the size line declares", j->path, (long long)r->line, (long long)nnz);
      if ((++n & 4095) == 0) io_poll(I);
      int64_t ii = (int64_t)i - 1, kk = (int64_t)k - 1;
      if (ii >= R || kk >= C)
        bi_error(I, "%s:%lld: entry (%lld, %lld) is outside the %lldx%lld matrix", j->path, (long long)r->line,
                 (long long)ii + 1, (long long)kk + 1, (long long)R, (long long)C);
      if (sym < 0 && ii == kk)
        bi_error(I, "%s:%lld: entry (%lld, %lld) is on the diagonal of a skew-symmetric matrix, which the format leaves "
                 "out (it is 0)", j->path, (long long)r->line, (long long)ii + 1, (long long)kk + 1);
      if (fast && (ii > li || (ii == li && kk > lk))) {     /* in row order: into the CSR */
        fast->col[fast->nnz] = (int32_t)kk;
        fast->val[fast->nnz++] = v;
        fast->rowptr[ii + 1]++;
        li = ii;
        lk = kk;
        continue;
      }
      if (fast) {                                            /* out of order: what was read to entries */
        for (int64_t i2 = 0, q = 0; i2 < R && q < fast->nnz; i2++)
          for (int64_t c2 = 0; c2 < fast->rowptr[i2 + 1]; c2++, q++) io_push_entry(I, j, i2, fast->col[q], fast->val[q]);
        val_release(j->result);
        j->result = val_null();
        fast = NULL;
      }
      io_push_entry(I, j, ii, kk, v);
      if (sym && ii != kk) io_push_entry(I, j, kk, ii, sym * v);   /* the mirror image: after, as it was written */
    }
    if (n < nnz) bi_error(I, "'%s' is truncated (%lld of the %lld entries it declares)", j->path, (long long)n, (long long)nnz);
    if (fast) {                                              /* (row counts to offsets) */
      for (int64_t i2 = 0; i2 < R; i2++) fast->rowptr[i2 + 1] += fast->rowptr[i2];
      Tensor *t = j->result.u.m;
      t->refcount++;                                         /* the reference tensor_auto_format takes */
      Tensor *o = tensor_auto_format(I, t);
      val_release(j->result);
      j->result = val_mat(o);
      return;
    }
    entries_result(I, j, R, C, (uint64_t)nnz);
    return;
  }
  uint64_t need = sym == 0 ? (uint64_t)R * (uint64_t)C : sym == 1 ? (uint64_t)R * (uint64_t)(R + 1) / 2 : (uint64_t)R * (uint64_t)(R > 0 ? R - 1 : 0) / 2;
  if (R > 0 && C > 0 && (uint64_t)C > UINT64_MAX / 4 / (uint64_t)R) bi_error(I, "'%s' declares %s, too large", j->path, what);
  rd_check_payload(I, r, 0, need * 2, what);                  /* every value takes >= 2 bytes */
  double *d = tensor_data(io_result(I, j, R, C, true));
  uint64_t n = 0;
  int64_t i = sym < 0 ? 1 : 0, k = 0;                          /* column-major: down each column */
  while ((p = mm_line(I, r))) {
    double v;
    while (next_num(I, j, &p, &v)) {
      if (n == need) bi_error(I, "%s:%lld: more values than the %llu a %s has", j->path, (long long)r->line, (unsigned long long)need, what + 2);
      if ((++n & 65535) == 0) io_poll(I);
      d[i * C + k] = v;
      if (sym && i != k) d[k * C + i] = sym * v;
      if (++i == R) { k++; i = sym == 0 ? 0 : sym > 0 ? k : k + 1; }
    }
  }
  if (n < need) bi_error(I, "'%s' is truncated (%llu of the %llu values it declares)", j->path, (unsigned long long)n, (unsigned long long)need);
}

/* Coordinate form for a sparse matrix (at most half the cells nonzero), else array form. A
** matrix stored sparse is written from its CSR (its stored zeros left out), never densified. */
void mm_write(Interp *I, IoJob *j) {
  Out *o = &j->out;
  const Tensor *m = j->m;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m), nnz = 0;
  const SpCsr *sp = tensor_is_sparse(m) ? tensor_csr(m) : NULL;
  const double *d = sp ? NULL : tensor_data(m);
  if (sp) nnz = tensor_nnz(m);
  else
    for (int64_t q = 0; q < rows * cols; q++) nnz += d[q] != 0;
  char line[128];
  bool coord = nnz * 2 <= rows * cols;
  out_puts(I, o, coord ? "%%MatrixMarket matrix coordinate real general\n" : "%%MatrixMarket matrix array real general\n");
  int n = coord ? snprintf(line, sizeof line, "%lld %lld %lld\n", (long long)rows, (long long)cols, (long long)nnz)
                : snprintf(line, sizeof line, "%lld %lld\n", (long long)rows, (long long)cols);
  out_write(I, o, line, (size_t)n);
  if (coord) {
    for (int64_t i = 0; i < rows; i++) {
      if ((i & 255) == 0) io_poll(I);
      if (sp) {
        for (int64_t p = sp->rowptr[i]; p < sp->rowptr[i + 1]; p++)
          if (sp->val[p] != 0) put_entry(I, o, i + 1, (int64_t)sp->col[p] + 1, sp->val[p]);
        continue;
      }
      for (int64_t k = 0; k < cols; k++)
        if (d[i * cols + k] != 0) put_entry(I, o, i + 1, k + 1, d[i * cols + k]);
    }
    return;
  }
  int64_t *at = NULL;                          /* sparse: each row's next stored entry */
  if (sp) {
    mem_free(j->scratch);
    j->scratch = NULL;                         /* (io_release frees it: never twice) */
    j->scratch = mem_alloc((size_t)(rows > 0 ? rows : 1) * sizeof(int64_t));
    at = (int64_t *)(void *)j->scratch;
    memcpy(at, sp->rowptr, (size_t)rows * sizeof(int64_t));
  }
  for (int64_t k = 0; k < cols; k++) {
    if ((k & 255) == 0) io_poll(I);
    for (int64_t i = 0; i < rows; i++) {
      n = fmt_double(line, sp ? csr_next(sp, i, k, &at[i]) : d[i * cols + k]);
      line[n++] = '\n';
      out_write(I, o, line, (size_t)n);
    }
  }
}

/* ---- libsvm ----
** One line a row: "label index:value index:value ...", the features' indices 1-based and
** increasing, zero features left out. As SystemDS reads it, the matrix holds the features in
** columns 1 .. C-1 and the label in its last column C. A '#' starts a comment (as in
** scikit-learn's svmlight files); blank lines are skipped. */

/* The next blank-separated token of *pp, NUL-terminated in place; NULL at the end of the line. */
static char *next_token(char **pp) {
  char *p = *pp;
  while (*p == ' ' || *p == '\t') p++;
  if (!*p) { *pp = p; return NULL; }
  char *e = p;
  while (*e && *e != ' ' && *e != '\t') e++;
  if (*e) *e++ = '\0';
  *pp = e;
  return p;
}

void libsvm_read(Interp *I, IoJob *j) {
  Reader *r = &j->in;
  int64_t C = j->o.cols, rows = 0, maxf = 0;
  if (C == 0) bi_error(I, "'%s': %s declares 0 columns, but a libsvm matrix has at least its label column", j->path, j->o.dims_from);
  char *line;
  while ((line = rd_line(I, r))) {
    if (r->line == 1 && !memcmp(line, "\xEF\xBB\xBF", 3)) line += 3;     /* a UTF-8 byte order mark */
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    char *p = line, *tok = next_token(&p);
    if (!tok) continue;                                     /* a blank line, a comment */
    if ((rows & 1023) == 0) io_poll(I);
    double label, x, v;
    if (!parse_cell(tok, &label))
      bi_error(I, "%s:%lld: the label '%.40s' is not a number", j->path, (long long)r->line, tok);
    int64_t prev = 0;
    while ((tok = next_token(&p))) {
      char *colon = strchr(tok, ':');
      if (colon) *colon = '\0';
      if (!colon || !parse_cell(tok, &x) || !is_index(x)) {
        if (colon) *colon = ':';
        bi_error(I, "%s:%lld: expected 'index:value' with a whole index >= 1, got '%.40s'%s", j->path, (long long)r->line,
                 tok, !strncmp(tok, "qid:", 4) ? " (qid is not supported)" : "");
      }
      int64_t f = (int64_t)x;
      if (f <= prev)
        bi_error(I, "%s:%lld: feature index %lld after %lld (the indices of a line must increase)", j->path,
                 (long long)r->line, (long long)f, (long long)prev);
      if (C > 0 && f > C - 1)
        bi_error(I, "%s:%lld: feature %lld is outside the %lld columns %s declares (the last one is the label)", j->path,
                 (long long)r->line, (long long)f, (long long)C, j->o.dims_from);
      if (!parse_cell(colon + 1, &v))
        bi_error(I, "%s:%lld: feature %lld: '%.40s' is not a number", j->path, (long long)r->line, (long long)f, colon + 1);
      if (v != 0 || signbit(v)) io_push_entry(I, j, rows, f - 1, v);   /* (a +0 is the unstored value) */
      prev = f;
    }
    if (prev > maxf) maxf = prev;
    if (label != 0 || signbit(label)) io_push_entry(I, j, rows, -1, label);   /* column -1: the label, placed below */
    rows++;
  }
  if (C < 0) C = maxf + 1;
  for (int64_t q = 0; q < j->nent; q++)
    if (j->ent_k[q] < 0) j->ent_k[q] = C - 1;
  entries_result(I, j, rows, C, (uint64_t)j->nent);
}

void libsvm_write(Interp *I, IoJob *j) {
  Out *o = &j->out;
  const Tensor *m = j->m;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m);
  if (cols == 0) bi_error(I, "cannot write a %lldx0 matrix as libsvm: its last column is the label", (long long)rows);
  const SpCsr *sp = tensor_is_sparse(m) ? tensor_csr(m) : NULL;
  const double *d = sp ? NULL : tensor_data(m);
  char buf[64];
  for (int64_t i = 0; i < rows; i++) {
    if ((i & 255) == 0) io_poll(I);
    int64_t p = sp ? sp->rowptr[i + 1] : 0;
    double label = sp ? (p > sp->rowptr[i] && sp->col[p - 1] == cols - 1 ? sp->val[p - 1] : 0) : d[i * cols + cols - 1];
    out_write(I, o, buf, (size_t)fmt_double(buf, label));
    if (sp) {
      for (p = sp->rowptr[i]; p < sp->rowptr[i + 1] && sp->col[p] < cols - 1; p++) {
        if (sp->val[p] == 0) continue;
        int n = snprintf(buf, sizeof buf, " %lld:", (long long)sp->col[p] + 1);
        n += fmt_double(buf + n, sp->val[p]);
        out_write(I, o, buf, (size_t)n);
      }
    } else {
      for (int64_t k = 0; k < cols - 1; k++) {
        if (d[i * cols + k] == 0) continue;
        int n = snprintf(buf, sizeof buf, " %lld:", (long long)k + 1);
        n += fmt_double(buf + n, d[i * cols + k]);
        out_write(I, o, buf, (size_t)n);
      }
    }
    out_write(I, o, "\n", 1);
  }
}

/* ---- the .mtd sidecar (a flat JSON object) ---- */

typedef struct Json { Interp *I; const char *path; char *p, *start; } Json;

static l_noret js_error(Json *js, const char *what) {
  bi_error(js->I, "'%s' is not a valid .mtd file (%s at byte %lld)", js->path, what, (long long)(js->p - js->start) + 1);
}

static void js_ws(Json *js) {
  while (*js->p == ' ' || *js->p == '\t' || *js->p == '\n' || *js->p == '\r') js->p++;
}

/* A string, decoded in place (the text only shrinks); \u escapes beyond ASCII become '?'. */
static char *js_string(Json *js) {
  if (*js->p != '"') js_error(js, "a string expected");
  char *w = ++js->p, *s = w;
  for (;;) {
    char c = *js->p++;
    if (!c) { js->p--; js_error(js, "unterminated string"); }
    if (c == '"') break;
    if (c == '\\') {
      c = *js->p++;
      switch (c) {
      case 'n': c = '\n'; break;
      case 't': c = '\t'; break;
      case 'r': c = '\r'; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case '"': case '\\': case '/': break;
      case 'u': {
        unsigned u = 0;
        for (int q = 0; q < 4; q++) {
          char h = *js->p++;
          if (!((h >= '0' && h <= '9') || (h >= 'a' && h <= 'f') || (h >= 'A' && h <= 'F'))) { js->p--; js_error(js, "bad \\u escape"); }
          u = u * 16 + (unsigned)(h <= '9' ? h - '0' : (h | 32) - 'a' + 10);
        }
        c = u > 0 && u < 128 ? (char)u : '?';
        break;
      }
      default: js->p--; js_error(js, "bad escape");
      }
    }
    *w++ = c;
  }
  *w = '\0';
  return s;
}

static void js_skip(Json *js, int depth) {
  js_ws(js);
  char c = *js->p;
  if (depth > 64) js_error(js, "nested too deeply");
  if (c == '"') { js_string(js); return; }
  if (c == '{' || c == '[') {
    char close = c == '{' ? '}' : ']';
    js->p++;
    js_ws(js);
    if (*js->p == close) { js->p++; return; }
    for (;;) {
      if (c == '{') { js_ws(js); js_string(js); js_ws(js); if (*js->p++ != ':') { js->p--; js_error(js, "':' expected"); } }
      js_skip(js, depth + 1);
      js_ws(js);
      if (*js->p == ',') { js->p++; continue; }
      if (*js->p++ == close) return;
      js->p--;
      js_error(js, "',' or a closing bracket expected");
    }
  }
  char *s = js->p;                             /* a number, true, false or null */
  while (*js->p && ((*js->p >= 'a' && *js->p <= 'z') || (*js->p >= '0' && *js->p <= '9') || strchr("+-.E", *js->p))) js->p++;
  if (js->p == s) js_error(js, "a value expected");
}

static double js_number(Json *js) {
  char *e;
  double x = strtod(js->p, &e);
  if (e == js->p) js_error(js, "a number expected");
  js->p = e;
  return x;
}

static bool js_bool(Json *js) {
  if (!strncmp(js->p, "true", 4)) { js->p += 4; return true; }
  if (!strncmp(js->p, "false", 5)) { js->p += 5; return false; }
  js_error(js, "true or false expected");
}

void mtd_read(Interp *I, IoJob *j, FileOpts *o) {
  Reader *r = &j->in;
  rd_open(I, r, j->mtdpath, false);
  size_t cap = 1 << 12, n = 0;
  j->meta = mem_alloc(cap);
  for (;;) {
    size_t k = rd_read(I, r, j->meta + n, cap - n - 1);
    n += k;
    if (n < cap - 1) break;
    if (cap >= 1 << 20) bi_error(I, "'%s' is too large for a .mtd file", j->mtdpath);
    cap *= 2;
    j->meta = mem_realloc(j->meta, cap);
  }
  j->meta[n] = '\0';
  Json js = { I, j->mtdpath, j->meta, j->meta };
  char *nul = memchr(j->meta, '\0', n);
  if (nul) { js.p = nul; js_error(&js, "a NUL byte"); }
  js_ws(&js);
  if (*js.p++ != '{') { js.p--; js_error(&js, "'{' expected"); }
  js_ws(&js);
  bool first = true;
  while (*js.p != '}') {
    if (!first) {
      if (*js.p++ != ',') { js.p--; js_error(&js, "',' or '}' expected"); }
      js_ws(&js);
    }
    first = false;
    char *key = js_string(&js);
    js_ws(&js);
    if (*js.p++ != ':') { js.p--; js_error(&js, "':' expected"); }
    js_ws(&js);
    if (!strcmp(key, "data_type")) {
      char *s = js_string(&js);
      if (!strcmp(s, "frame")) o->frame = 1;
      else if (strcmp(s, "matrix") != 0) bi_error(I, "'%s' describes a %s; only matrices and frames can be read", j->mtdpath, s);
    } else if (!strcmp(key, "schema")) {
      o->schema = js_string(&js);
    } else if (!strcmp(key, "rows") || !strcmp(key, "cols")) {
      double x = js_number(&js);
      if (x != floor(x) || x > MAX_INDEX) js_error(&js, "a whole number expected");
      *(key[0] == 'r' ? &o->rows : &o->cols) = x < 0 ? -1 : (int64_t)x;
    } else if (!strcmp(key, "format")) {
      char *s = js_string(&js);
      static const char *const known[] = { "csv", "text", "mm", "libsvm", "npy", "idx", NULL };
      o->format = NULL;
      for (int q = 0; known[q]; q++)
        if (!strcmp(s, known[q])) o->format = known[q];
      if (!o->format && !j->o.format)
        bi_error(I, "'%s' declares the format \"%.40s\", which mls cannot read (csv, text, mm, libsvm, npy, idx)", j->mtdpath, s);
    } else if (!strcmp(key, "header")) {
      o->header = js_bool(&js);
    } else if (!strcmp(key, "sep")) {
      o->sep = js_string(&js);
      if (!*o->sep) js_error(&js, "an empty separator");
    } else {
      js_skip(&js, 0);
    }
    js_ws(&js);
  }
  rd_close(r);
}

void out_json_str(Interp *I, Out *o, const char *s) {
  out_write(I, o, "\"", 1);
  for (; *s; s++) {
    char e[8];
    unsigned char c = (unsigned char)*s;
    const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\t' ? "\\t" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : NULL;
    if (esc) out_write(I, o, esc, 2);
    else if (c < 0x20) out_write(I, o, e, (size_t)snprintf(e, sizeof e, "\\u%04x", c));
    else out_write(I, o, s, 1);
  }
  out_write(I, o, "\"", 1);
}

void mtd_write(Interp *I, IoJob *j) {
  Out *o = &j->out;
  const Tensor *m = j->m;
  int64_t rows = tensor_rows(m), cols = tensor_cols(m), nnz = 0;
  if (tensor_is_sparse(m)) nnz = tensor_nnz(m);
  else {
    const double *d = tensor_data(m);
    for (int64_t q = 0; q < rows * cols; q++) nnz += d[q] != 0;
  }
  char buf[256];
  snprintf(buf, sizeof buf, "{\n    \"data_type\": \"matrix\",\n    \"value_type\": \"double\",\n    \"rows\": %lld,\n"
           "    \"cols\": %lld,\n    \"nnz\": %lld,\n    \"format\": \"%s\"", (long long)rows, (long long)cols, (long long)nnz,
           j->o.format);
  out_puts(I, o, buf);
  if (!strcmp(j->o.format, "csv")) {
    out_puts(I, o, j->o.header > 0 ? ",\n    \"header\": true,\n    \"sep\": " : ",\n    \"header\": false,\n    \"sep\": ");
    out_json_str(I, o, j->o.sep);
  }
  out_puts(I, o, "\n}\n");
}
