/*
** builtins_io.c — read, write, save and load (LANGUAGE.md §10), and the file machinery the
** formats share (fileformats.h): a Reader over zlib, so that every format also reads from a
** .gz file, and an Out that writes a temporary file in the target's directory, fsyncs it and
** renames it over the target, so that a failed or interrupted write never leaves a damaged
** file in place of the old one. The formats are in fileformats_text.c and fileformats_bin.c.
**
** Test hook: with the environment variable MLS_FAULT_WRITE=1 every write stops after half of
** its data has reached the temporary file and fails as a full disk would.
*/
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>
#include "autodiff.h"
#include "err.h"
#include "fileformats.h"
#include "frame/frame.h"
#include "mem.h"
#include "print.h"

/* ---- jobs ---- */

static void io_init(IoJob *j) {
  memset(j, 0, sizeof *j);
  j->result = val_null();
  j->na = val_null();
  j->in.fd = j->out.fd = j->data.fd = -1;
  j->o.header = -1;
  j->o.rows = j->o.cols = -1;
}

void rd_close(Reader *r) {
  if (r->mode == RD_GZIP) inflateEnd(&r->z);
  if (r->fd >= 0) close(r->fd);
  mem_free(r->buf);
  mem_free(r->in);
  memset(r, 0, sizeof *r);
  r->fd = -1;
}

/* Drops an unfinished temporary file. */
static void out_discard(Out *o) {
  if (o->gz) gzclose(o->gz);
  o->gz = NULL;
  if (o->fd >= 0) close(o->fd);
  o->fd = -1;
  if (o->tmp) unlink(o->tmp);
  mem_free(o->tmp);
  mem_free(o->target);
  o->tmp = o->target = NULL;
}

static void io_release(IoJob *j) {
  rd_close(&j->in);
  out_discard(&j->out);
  mem_free(j->out.buf);
  j->out.buf = NULL;
  out_discard(&j->data);
  mem_free(j->data.buf);
  j->data.buf = NULL;
  if (j->m) tensor_free_ref(j->m);
  j->m = NULL;
  if (j->frame) val_release(val_frame(j->frame));
  j->frame = NULL;
  mem_free(j->text);
  mem_free(j->offs);
  mem_uncharge(j->captext + (uint64_t)j->capoffs * sizeof(int64_t));
  j->text = NULL;
  j->offs = NULL;
  j->ntext = j->captext = 0;
  j->noffs = j->capoffs = 0;
  mem_free(j->mtdpath);
  mem_free(j->meta);
  mem_free(j->scratch);
  mem_free(j->cells);
  mem_uncharge((uint64_t)j->capcells * sizeof(double));
  j->capcells = j->ncells = 0;
  io_drop_entries(j);
  j->mtdpath = NULL;
  j->meta = NULL;
  j->scratch = NULL;
  j->cells = NULL;
}

static void io_trampoline(Interp *I, void *ud) {
  IoJob *j = ud;
  j->fn(I, j);
}

void io_run(Interp *I, IoJob *j) {
  int failed = mls_pcall(I, io_trampoline, j);
  io_release(j);
  if (failed) {
    val_release(j->result);
    j->result = val_null();
    mls_rethrow(I);
  }
}

Tensor *io_result(Interp *I, IoJob *j, int64_t rows, int64_t cols, bool zero) {
  Tensor *t = zero ? tensor_zeros(I, rows, cols) : tensor_new(I, rows, cols);
  val_release(j->result);
  j->result = val_mat(t);
  return t;
}

/* (the buffer counts against --max-memory as workspace: it holds a copy of the matrix to come) */
static void io_grow_cells(Interp *I, IoJob *j) {
  int64_t cap = j->capcells ? j->capcells * 2 : 4096;
  if (j->capcells && mem_over_limit((uint64_t)(cap - j->capcells) * sizeof(double)))
    cap = j->capcells + j->capcells / 4;                         /* near the limit: a quarter more */
  tensor_charge(I, (uint64_t)(cap - j->capcells) * sizeof(double), "workspace (the numbers read so far)");
  double *c = mem_try_realloc(j->cells, (size_t)cap * sizeof(double));
  if (!c) {
    mem_uncharge((uint64_t)(cap - j->capcells) * sizeof(double));
    mem_oom((size_t)cap * sizeof(double));
  }
  j->cells = c;
  j->capcells = cap;
}

void io_push_cell(Interp *I, IoJob *j, double x) {
  if (j->ncells == j->capcells) io_grow_cells(I, j);
  j->cells[j->ncells++] = x;
}

#define ENTRY_BYTES (2 * sizeof(int64_t) + sizeof(double))

/* Grows the three arrays of entries together; a failed realloc leaves each array valid at the
** old capacity (those already grown are only larger), so the job still frees them all. */
static void io_grow_entries(Interp *I, IoJob *j) {
  int64_t cap = j->capent ? j->capent * 2 : 4096;
  if (j->capent && mem_over_limit((uint64_t)(cap - j->capent) * ENTRY_BYTES))
    cap = j->capent + j->capent / 4;                             /* near the limit: a quarter more */
  uint64_t more = (uint64_t)(cap - j->capent) * ENTRY_BYTES;
  tensor_charge(I, more, "workspace (the entries read so far)");
  int64_t *ei = mem_try_realloc(j->ent_i, (size_t)cap * sizeof(int64_t));
  if (!ei) goto fail;
  j->ent_i = ei;
  int64_t *ek = mem_try_realloc(j->ent_k, (size_t)cap * sizeof(int64_t));
  if (!ek) goto fail;
  j->ent_k = ek;
  double *ev = mem_try_realloc(j->ent_v, (size_t)cap * sizeof(double));
  if (!ev) goto fail;
  j->ent_v = ev;
  j->capent = cap;
  return;
fail:
  mem_uncharge(more);
  mem_oom((size_t)cap * sizeof(int64_t));
}

void io_push_entry(Interp *I, IoJob *j, int64_t i, int64_t k, double v) {
  if (j->nent == j->capent) io_grow_entries(I, j);
  j->ent_i[j->nent] = i;
  j->ent_k[j->nent] = k;
  j->ent_v[j->nent++] = v;
}

void io_drop_entries(IoJob *j) {
  mem_free(j->ent_i);
  mem_free(j->ent_k);
  mem_free(j->ent_v);
  mem_uncharge((uint64_t)j->capent * ENTRY_BYTES);
  j->ent_i = j->ent_k = NULL;
  j->ent_v = NULL;
  j->capent = j->nent = 0;
}

void io_poll(Interp *I) {
  if (I->interrupted) interp_check_interrupt(I, I->call_span);
}

/* ---- reading ---- */

#define RD_IN_CAP ((size_t)1 << 17)

void rd_open(Interp *I, Reader *r, const char *path, bool raw) {
  rd_close(r);
  r->path = path;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) bi_error(I, "cannot open '%s': %s", path, strerror(errno));
  r->fd = fd;
  struct stat st;
  if (fstat(fd, &st) != 0) bi_error(I, "cannot read '%s': %s", path, strerror(errno));
  if (S_ISDIR(st.st_mode)) bi_error(I, "cannot read '%s': it is a directory", path);
  r->size = S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
  r->mode = raw ? RD_RAW : RD_NEW;
  if (!raw) r->in = mem_alloc(RD_IN_CAP);
}

/* More bytes from the file into r->in (what is there moves to the front); 0 at its end. */
static size_t rd_fill(Interp *I, Reader *r) {
  if (r->in_eof) return 0;
  if (r->in_beg > 0) {
    memmove(r->in, r->in + r->in_beg, r->in_end - r->in_beg);
    r->in_end -= r->in_beg;
    r->in_beg = 0;
  }
  for (;;) {
    ssize_t m = read(r->fd, r->in + r->in_end, RD_IN_CAP - r->in_end);
    if (m < 0 && errno == EINTR) { io_poll(I); continue; }
    if (m < 0) bi_error(I, "cannot read '%s': %s", r->path, strerror(errno));
    if (m == 0) r->in_eof = true;
    r->in_end += (size_t)m;
    return (size_t)m;
  }
}

static size_t rd_have(const Reader *r) { return r->in_end - r->in_beg; }

static bool rd_gzip_magic(const Reader *r) {
  return rd_have(r) >= 2 && r->in[r->in_beg] == 0x1f && r->in[r->in_beg + 1] == 0x8b;
}

/* zlib's memory through mem.c; NULL (Z_MEM_ERROR) rather than a throw inside zlib. */
static voidpf rd_zalloc(voidpf ud, uInt n, uInt size) {
  (void)ud;
  return (uint64_t)n * size > (uint64_t)1 << 30 ? NULL : mem_try_alloc((size_t)n * size);
}
static void rd_zfree(voidpf ud, voidpf p) { (void)ud; mem_free(p); }

/* Looks at the first bytes: gzip's magic starts inflation, anything else is read as it is. */
static void rd_detect(Interp *I, Reader *r) {
  while (rd_have(r) < 2 && rd_fill(I, r) > 0) {}
  if (!rd_gzip_magic(r)) { r->mode = RD_PLAIN; return; }
  memset(&r->z, 0, sizeof r->z);
  r->z.zalloc = rd_zalloc;
  r->z.zfree = rd_zfree;
  if (inflateInit2(&r->z, 15 + 16) != Z_OK) mem_oom(sizeof(z_stream) + ((size_t)1 << 15));
  r->mode = RD_GZIP;
}

bool rd_compressed(Interp *I, Reader *r) {
  if (r->mode == RD_NEW) rd_detect(I, r);
  return r->mode == RD_GZIP;
}

/* Whether the rest of the file is zero bytes (read to its end). */
static bool rd_zeros_to_end(Interp *I, Reader *r) {
  do {
    for (size_t k = r->in_beg; k < r->in_end; k++)
      if (r->in[k]) return false;
    r->in_beg = r->in_end;
  } while (rd_fill(I, r) > 0);
  return true;
}

/* The end of one gzip member: another may follow (gzip concatenates them), or zero bytes to
** the end of the file (padding, which gzip also accepts: they cannot hide data); anything
** else after it is an error (zlib's gzread ignored it, and with it any data there). */
static void rd_member_end(Interp *I, Reader *r) {
  while (rd_have(r) < 2 && rd_fill(I, r) > 0) {}
  if (rd_have(r) == 0) { r->data_end = true; return; }
  if (!rd_gzip_magic(r)) {
    uint64_t at = r->in_pos;
    if (rd_zeros_to_end(I, r)) { r->data_end = true; return; }
    if (r->size >= 0 && (uint64_t)r->size > at)
      bi_error(I, "'%s' is corrupt: %llu bytes after the end of its gzip data (at byte %llu), which do not start "
               "another gzip member", r->path, (unsigned long long)((uint64_t)r->size - at), (unsigned long long)at + 1);
    bi_error(I, "'%s' is corrupt: bytes after the end of its gzip data (at byte %llu), which do not start another "
             "gzip member", r->path, (unsigned long long)at + 1);
  }
  if (inflateReset(&r->z) != Z_OK) bi_error(I, "'%s' is corrupt (zlib could not start its next member)", r->path);
  r->member_end = false;
}

/* Up to n bytes of inflated data into dst; fewer only at the end of the data. */
static size_t rd_inflate(Interp *I, Reader *r, unsigned char *dst, size_t n) {
  size_t got = 0;
  while (got < n && !r->data_end) {
    if (r->member_end) { rd_member_end(I, r); continue; }
    if (rd_have(r) == 0 && rd_fill(I, r) == 0)
      bi_error(I, "'%s' is truncated: its gzip data ends early, after %llu bytes (gzip -t: unexpected end of file)",
               r->path, (unsigned long long)r->in_pos);
    size_t want = n - got < ((size_t)1 << 30) ? n - got : (size_t)1 << 30;
    r->z.next_in = r->in + r->in_beg;
    r->z.avail_in = (uInt)rd_have(r);
    r->z.next_out = dst + got;
    r->z.avail_out = (uInt)want;
    int rc = inflate(&r->z, Z_NO_FLUSH);
    size_t used = rd_have(r) - r->z.avail_in;
    r->in_beg += used;
    r->in_pos += used;
    got += want - r->z.avail_out;
    if (rc == Z_STREAM_END) r->member_end = true;
    else if (rc == Z_MEM_ERROR) mem_oom((size_t)1 << 15);
    else if (rc == Z_DATA_ERROR || rc == Z_NEED_DICT)
      bi_error(I, "'%s' is corrupt near byte %llu (zlib: %s)", r->path, (unsigned long long)r->in_pos + 1,
               r->z.msg ? r->z.msg : "invalid data");
    else if (rc != Z_OK && rc != Z_BUF_ERROR)
      bi_error(I, "'%s' is corrupt (zlib error %d)", r->path, rc);
    /* Z_BUF_ERROR: no progress without more input; the loop reads more, or finds the end */
  }
  return got;
}

size_t rd_read(Interp *I, Reader *r, void *dst, size_t n) {
  if (r->mode == RD_NEW) rd_detect(I, r);
  if (r->mode == RD_GZIP) return rd_inflate(I, r, dst, n);
  size_t got = 0;
  char *p = dst;
  while (got < n) {
    if (rd_have(r) == 0 && n - got >= RD_IN_CAP && !r->in_eof) {     /* a large read: straight in */
      size_t k = n - got < ((size_t)1 << 30) ? n - got : (size_t)1 << 30;
      ssize_t m = read(r->fd, p + got, k);
      if (m < 0 && errno == EINTR) { io_poll(I); continue; }
      if (m < 0) bi_error(I, "cannot read '%s': %s", r->path, strerror(errno));
      if (m == 0) { r->in_eof = true; break; }
      got += (size_t)m;
      r->in_pos += (uint64_t)m;
      continue;
    }
    if (rd_have(r) == 0 && rd_fill(I, r) == 0) break;
    size_t k = rd_have(r) < n - got ? rd_have(r) : n - got;
    memcpy(p + got, r->in + r->in_beg, k);
    r->in_beg += k;
    r->in_pos += k;
    got += k;
  }
  return got;
}

void rd_finish(Interp *I, Reader *r) {
  if (r->mode != RD_GZIP) return;
  unsigned char sink[4096];
  while (rd_inflate(I, r, sink, sizeof sink) > 0) io_poll(I);
}

void rd_exact(Interp *I, Reader *r, void *dst, size_t n, const char *what) {
  if (rd_read(I, r, dst, n) < n) bi_error(I, "'%s' is truncated (%s)", r->path, what);
}

#define RD_MAX_LINE ((size_t)64 << 20)   /* bytes in one line of a text file */

char *rd_line(Interp *I, Reader *r) {
  for (;;) {
    char *start = r->buf ? r->buf + r->beg : NULL;   /* (no arithmetic on NULL before the first read) */
    char *nl = r->end > r->beg ? memchr(start, '\n', r->end - r->beg) : NULL;
    if (nl || (r->eof && r->end > r->beg)) {
      char *e = nl ? nl : r->buf + r->end;
      r->beg = (size_t)(e - r->buf) + (nl ? 1 : 0);
      r->line++;
      char *z = memchr(start, '\0', (size_t)(e - start));
      if (z)                                  /* (the cell would end there, the rest dropped) */
        bi_error(I, "%s:%lld:%lld: a NUL byte (text files hold none: is it a binary file?)", r->path,
                 (long long)r->line, (long long)(z - start) + 1);
      if (e > start && e[-1] == '\r') e--;
      *e = '\0';
      return start;
    }
    if (r->eof) return NULL;
    if (r->beg > 0) {                          /* keep the partial line at the front */
      memmove(r->buf, r->buf + r->beg, r->end - r->beg);
      r->end -= r->beg;
      r->beg = 0;
    }
    if (r->end >= RD_MAX_LINE)                 /* /dev/zero, a binary file: no line ends */
      bi_error(I, "'%s': line %lld is longer than %d MiB; is it a text file?", r->path, (long long)r->line + 1,
               (int)(RD_MAX_LINE >> 20));
    if (r->cap - r->end < (1 << 15)) {
      size_t cap = r->cap ? r->cap * 2 : 1 << 16;
      r->buf = mem_realloc(r->buf, cap);
      r->cap = cap;
    }
    size_t m = rd_read(I, r, r->buf + r->end, r->cap - r->end - 1);
    if (m == 0) r->eof = true;
    r->end += m;
    r->buf[r->end] = '\0';
  }
}

void rd_check_payload(Interp *I, Reader *r, uint64_t offset, uint64_t payload, const char *what) {
  bool compressed = rd_compressed(I, r);
  if (r->size >= 0 && !compressed) {
    uint64_t have = (uint64_t)r->size > offset ? (uint64_t)r->size - offset : 0;
    if (payload > have)
      bi_error(I, "'%s' is truncated: its header declares %s (%llu bytes of data), but %llu bytes follow the header",
               r->path, what, (unsigned long long)payload, (unsigned long long)have);
    return;
  }
  /* deflate expands at most 1032:1; without a size (a pipe) allow 1 GiB */
  uint64_t limit = r->size >= 0 ? (uint64_t)r->size * 1032 + 4096 : (uint64_t)1 << 30;
  if (payload > limit)
    bi_error(I, "'%s' declares %s (%llu bytes of data), more than the file can hold",
             r->path, what, (unsigned long long)payload);
}

/* ---- writing ---- */

/* False when the existing regular file at st cannot be written by us (a read-only target is
** refused, as R's file() refuses it, rather than replaced by the rename). */
static bool writable(const char *target, const struct stat *st) {
  if (st->st_uid == geteuid()) return (st->st_mode & S_IWUSR) != 0;   /* root too: 0444 means "keep" */
  return access(target, W_OK) == 0;
}

void out_open(Interp *I, Out *o, const char *path, bool gz) {
  if (I->no_write) bi_error(I, "cannot write '%s': writing files is turned off", path);
  out_discard(o);
  o->path = path;
  o->direct = false;
  o->stream = NULL;
  struct stat st;
  int stdfd = !strcmp(path, "/dev/stdout") ? 1 : !strcmp(path, "/dev/stderr") ? 2 : -1;
  if (!strncmp(path, "/dev/fd/", 8) || !strncmp(path, "/proc/self/fd/", 14)) {
    const char *d = path + (path[1] == 'd' ? 8 : 14);
    char *end;
    long k = strtol(d, &end, 10);
    if (end != d && !*end && k >= 0 && k < 1024) stdfd = (int)k;
  }
  FILE *front = stdfd == 1 && I->out != stdout ? I->out : stdfd == 2 ? I->stderr_to : NULL;
  if (front && !gz) {                          /* a front end's stream (the Jupyter kernel's */
    fflush(front);                             /* stream messages): after what print put there */
    o->stream = front;
    o->fd = -1;
    o->direct = true;
  } else if (stdfd >= 0) {                     /* an open descriptor (a file, a pipe): write at */
    if (stdfd == 1) fflush(stdout);            /* its offset, after what print put there */
    if (stdfd == 2) fflush(stderr);
    o->fd = dup(stdfd);
    if (o->fd < 0) bi_error(I, "cannot write '%s': %s", path, strerror(errno));
    o->direct = true;
  } else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {   /* (follows links) */
    if (S_ISDIR(st.st_mode)) bi_error(I, "cannot write '%s': it is a directory", path);
    if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode))
      bi_error(I, "cannot write '%s': it is not a regular file, a pipe or a terminal", path);
    o->fd = open(path, O_WRONLY | O_CLOEXEC);           /* a pipe, a terminal: write into it */
    if (o->fd < 0) bi_error(I, "cannot write '%s': %s", path, strerror(errno));
    o->direct = true;
  } else {
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {   /* replace what the link points to */
      char *real = realpath(path, NULL);
      if (real) { o->target = mem_strdup(real); free(real); }
    }
    const char *target = o->target ? o->target : path;
    if (stat(target, &st) == 0 && S_ISREG(st.st_mode) && !writable(target, &st))
      bi_error(I, "cannot write '%s': it is read-only", path);
    size_t n = strlen(target) + 12;
    o->tmp = mem_alloc(n);
    snprintf(o->tmp, n, "%s.tmpXXXXXX", target);
    o->fd = mkstemp(o->tmp);
    if (o->fd < 0) {
      int e = errno;
      mem_free(o->tmp);
      o->tmp = NULL;
      bi_error(I, "cannot write '%s': %s", path, strerror(e));
    }
    mode_t mode;                               /* the old file's permissions, else umask's */
    if (stat(target, &st) == 0 && S_ISREG(st.st_mode)) mode = st.st_mode & 07777;
    else { mode_t um = umask(0); umask(um); mode = 0666 & ~um; }
    if (fchmod(o->fd, mode) != 0) { /* keep mkstemp's 0600 */ }
  }
  if (gz) {
    int d = dup(o->fd);
    o->gz = d >= 0 ? gzdopen(d, "wb") : NULL;
    if (!o->gz) {
      if (d >= 0) close(d);
      bi_error(I, "cannot write '%s': cannot start compression", path);
    }
  }
  const char *f = getenv("MLS_FAULT_WRITE");
  o->fault = f && *f && strcmp(f, "0") != 0;
  o->n = 0;
  o->bytes = 0;
  o->crc_on = false;
  o->crc = (uint32_t)crc32(0L, Z_NULL, 0);
  if (!o->buf) {
    o->buf = mem_alloc(1 << 16);
    o->cap = 1 << 16;
  }
}

/* zlib's message without the "<fd:3>: " it puts first for a gzdopen'ed file. */
static const char *zmsg(const char *msg) {
  if (!strncmp(msg, "<fd:", 4)) {
    const char *p = strstr(msg, ": ");
    if (p) return p + 2;
  }
  return msg;
}

static l_noret out_fail(Interp *I, Out *o, int e) {
  if (o->gz && e == 0) {
    int ze;
    const char *msg = zmsg(gzerror(o->gz, &ze));
    if (ze != Z_ERRNO) bi_error(I, "cannot write '%s': %s", o->path, msg);
    e = errno;
  }
  bi_error(I, "cannot write '%s': %s", o->path, strerror(e ? e : EIO));
}

/* Hands n bytes to the file (through the compressor when there is one). */
static void out_emit(Interp *I, Out *o, const char *p, size_t n) {
  while (n > 0) {
    io_poll(I);                                /* Ctrl-C: the error drops the temporary file */
    if (o->gz) {
      unsigned k = n > (1u << 26) ? 1u << 26 : (unsigned)n;   /* 64 MiB at a time, polling between */
      if (gzwrite(o->gz, p, k) != (int)k) out_fail(I, o, 0);
      p += k;
      n -= k;
    } else if (o->stream) {
      if (fwrite(p, 1, n, o->stream) != n) out_fail(I, o, errno);
      return;
    } else {
      ssize_t k = write(o->fd, p, n > ((size_t)1 << 26) ? (size_t)1 << 26 : n);
      if (k < 0) {
        if (errno == EINTR) continue;
        out_fail(I, o, errno);
      }
      p += k;
      n -= (size_t)k;
    }
  }
}

void out_write(Interp *I, Out *o, const void *p, size_t n) {
  if (o->crc_on)
    for (size_t k = 0; k < n; k += 1u << 26) {
      if (k) io_poll(I);
      o->crc = (uint32_t)crc32(o->crc, (const Bytef *)p + k, (uInt)(n - k > (1u << 26) ? 1u << 26 : n - k));
    }
  o->bytes += n;
  if (o->fault) {                             /* keep everything: commit writes half of it */
    if (o->n + n > o->cap) {
      size_t cap = o->cap;
      while (o->n + n > cap) cap *= 2;
      o->buf = mem_realloc(o->buf, cap);
      o->cap = cap;
    }
  } else if (o->n + n > o->cap) {
    out_emit(I, o, o->buf, o->n);
    o->n = 0;
    if (n >= o->cap) { out_emit(I, o, p, n); return; }
  }
  memcpy(o->buf + o->n, p, n);
  o->n += n;
}

void out_puts(Interp *I, Out *o, const char *s) { out_write(I, o, s, strlen(s)); }

/* fsync the directory holding path, so that the rename itself is durable. */
static void sync_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash ? mem_strndup(path, slash == path ? 1 : (size_t)(slash - path)) : mem_strdup(".");
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    if (fsync(fd) != 0) { /* best effort: some file systems refuse it */ }
    close(fd);
  }
  mem_free(dir);
}

static void out_finish(Interp *I, Out *o) {
  if (o->fault) {
    size_t half = o->n / 2;
    out_emit(I, o, o->buf, half);
    if (o->gz) gzflush(o->gz, Z_SYNC_FLUSH);
    bi_error(I, "cannot write '%s': injected fault after %zu of %zu bytes (MLS_FAULT_WRITE)", o->path, half, o->n);
  }
  out_emit(I, o, o->buf, o->n);
  o->n = 0;
  if (o->gz) {
    int rc = gzclose(o->gz);
    o->gz = NULL;
    if (rc != Z_OK) bi_error(I, "cannot write '%s': %s", o->path, rc == Z_ERRNO ? strerror(errno) : "compression failed");
  }
  if (o->stream) {
    if (fflush(o->stream) != 0) out_fail(I, o, errno);
    return;
  }
  if (!o->direct && fsync(o->fd) != 0) out_fail(I, o, errno);
  int rc = close(o->fd);
  o->fd = -1;
  if (rc != 0) out_fail(I, o, errno);
}

static void out_rename(Interp *I, Out *o) {
  if (o->direct) return;
  const char *target = o->target ? o->target : o->path;
  if (rename(o->tmp, target) != 0) out_fail(I, o, errno);
  mem_free(o->tmp);
  o->tmp = NULL;
  sync_dir(target);
  mem_free(o->target);
  o->target = NULL;
}

void out_commit(Interp *I, Out *o) {
  out_finish(I, o);
  out_rename(I, o);
}

/* ---- numbers in text ---- */

int fmt_double(char *buf, double x) {
  if (isnan(x)) return sprintf(buf, "NaN");
  if (isinf(x)) return sprintf(buf, x > 0 ? "Inf" : "-Inf");
  if (x == 0) return sprintf(buf, signbit(x) ? "-0" : "0");
  if (fabs(x) < 1e15 && x == (double)(int64_t)x) return sprintf(buf, "%lld", (long long)x);
  for (int p = 15;; p++) {
    int n = sprintf(buf, "%.*g", p, x);
    if (p == 17 || strtod(buf, NULL) == x) return n;
  }
}

/* A plain decimal ("-12", "3.25"): its digits as a whole number m < 2^53 and k <= 22 digits after
** the point make m / 10^k one correctly rounded division of exact operands, strtod's value
** bit for bit (Clinger's fast path); anything else (exponents, more digits) is strtod's. */
static bool parse_plain(const char *s, double *out) {
  static const double p10[23] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                  1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22 };
  bool neg = *s == '-';
  s += neg;
  uint64_t m = 0;
  int nd = 0, k = -1;
  for (;; s++) {
    if (*s >= '0' && *s <= '9') {
      if (++nd > 18) return false;
      m = m * 10 + (uint64_t)(*s - '0');
      if (k >= 0) k++;
    } else if (*s == '.' && k < 0) {
      k = 0;
    } else {
      break;
    }
  }
  if (*s || nd == 0 || m > ((uint64_t)1 << 53)) return false;
  if (k < 0) k = 0;
  if (k > 22) return false;
  double v = (double)m / p10[k];
  *out = neg ? -v : v;
  return true;
}

bool parse_cell(const char *s, double *out) {
  if (parse_plain(s, out)) return true;
  char *end;
  double v = strtod(s, &end);
  if (end != s && *end == '\0') { *out = v; return true; }
  if (!strcmp(s, "NA")) { *out = NAN; return true; }
  if (!strcasecmp(s, "TRUE")) { *out = 1; return true; }
  if (!strcasecmp(s, "FALSE")) { *out = 0; return true; }
  return false;
}

/* ---- formats and names ---- */

static const char *const format_names[] = { "csv", "text", "mm", "libsvm", "npy", "idx", NULL };

static const char *format_arg(Interp *I, Args *a, int i) {
  const char *f = bi_str(I, a, i);
  for (int k = 0; format_names[k]; k++)
    if (!strcmp(f, format_names[k])) return format_names[k];
  bi_argerror(I, i + 1, "format must be \"csv\", \"text\", \"mm\", \"libsvm\", \"npy\" or \"idx\", got \"%s\"", f);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* The format a file name implies (a trailing .gz is looked through), or NULL. */
static const char *format_from_name(const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t n = strlen(base);
  if (n > 3 && !strcmp(base + n - 3, ".gz")) n -= 3;
  if (n >= 6 && !strncasecmp(base + n - 6, "-ubyte", 6)) return "idx";
  size_t d = n;
  while (d > 0 && base[d - 1] != '.') d--;
  if (d <= 1) return "text";                  /* no extension (DML writes such files) */
  char ext[16];
  size_t k = n - d;
  if (k >= sizeof ext) return NULL;
  memcpy(ext, base + d, k);
  ext[k] = '\0';
  if (!strcasecmp(ext, "csv")) return "csv";
  if (!strcasecmp(ext, "txt") || !strcasecmp(ext, "text") || !strcasecmp(ext, "ijv")) return "text";
  if (!strcasecmp(ext, "mtx") || !strcasecmp(ext, "mm")) return "mm";
  if (!strcasecmp(ext, "libsvm") || !strcasecmp(ext, "svm")) return "libsvm";
  if (!strcasecmp(ext, "npy")) return "npy";
  if (!strncasecmp(ext, "idx", 3) && (ext[3] == '\0' || (ext[3] >= '0' && ext[3] <= '9' && ext[4] == '\0'))) return "idx";
  return NULL;
}

static l_noret unknown_format(Interp *I, const char *path) {
  bi_error(I, "cannot tell the format of '%s' from its extension; pass format= (\"csv\", \"text\", \"mm\", \"libsvm\", \"npy\" or \"idx\")", path);
}

static bool has_mtd(const char *f) { return !strcmp(f, "csv") || !strcmp(f, "text") || !strcmp(f, "libsvm"); }

static char *mtd_path(const char *path) {
  size_t n = strlen(path) + 5;
  char *p = mem_alloc(n);
  snprintf(p, n, "%s.mtd", path);
  return p;
}

static int64_t dim_arg(Interp *I, Args *a, int i) {
  if (!bi_given(a, i)) return -1;
  double x = bi_num(I, a, i);
  if (!(x >= 0) || x != floor(x) || x > 9e15) bi_argerror(I, i + 1, "a whole number >= 0 expected, got %g", x);
  return (int64_t)x;
}

/* ---- read ---- */

static void read_job(Interp *I, IoJob *j) {
  FileOpts *o = &j->o, m = { NULL, -1, NULL, -1, -1, NULL, 0, NULL, false };
  struct stat st;
  j->mtdpath = mtd_path(j->path);
  bool mtd = (!o->format || has_mtd(o->format)) && stat(j->mtdpath, &st) == 0 && S_ISREG(st.st_mode);
  if (mtd) {
    mtd_read(I, j, &m);
    if (o->format && m.format && strcmp(o->format, m.format) != 0) mtd = false;   /* format= wins */
  }
  if (!o->format) o->format = mtd && m.format ? m.format : format_from_name(j->path);
  if (!o->format) unknown_format(I, j->path);
  if (mtd) {
    if (o->header < 0) o->header = m.header;
    if (!o->sep) o->sep = m.sep;
    if (o->rows < 0 && o->cols < 0) { o->rows = m.rows; o->cols = m.cols; o->dims_from = j->mtdpath; }
    if (m.frame > 0) o->frame = 1;             /* the sidecar of a frame: read as one */
    if (!o->schema && o->frame > 0) o->schema = m.schema;
  }
  if (o->header < 0) o->header = 0;
  if (!o->sep) o->sep = ",";
  rd_open(I, &j->in, j->path, false);
  if (o->frame > 0) {                          /* a frame: from csv only */
    if (strcmp(o->format, "csv") != 0) bi_error(I, "a frame is read from a csv file, not %s ('%s')", o->format, j->path);
    frame_csv_read(I, j);
    rd_finish(I, &j->in);
    const FrameBlock *f = j->result.u.fr;
    if (o->rows >= 0 && f->rows != o->rows)
      bi_error(I, "'%s' has %lld rows, but %s declares %lld", j->path, (long long)f->rows, o->dims_from, (long long)o->rows);
    if (o->cols >= 0 && f->ncol != o->cols)
      bi_error(I, "'%s' has %lld columns, but %s declares %lld", j->path, (long long)f->ncol, o->dims_from, (long long)o->cols);
    return;
  }
  if (!strcmp(o->format, "csv")) csv_read(I, j);
  else if (!strcmp(o->format, "text")) text_read(I, j);
  else if (!strcmp(o->format, "mm")) mm_read(I, j);
  else if (!strcmp(o->format, "libsvm")) libsvm_read(I, j);
  else if (!strcmp(o->format, "npy")) npy_read(I, j);
  else idx_read(I, j);
  rd_finish(I, &j->in);                        /* a compressed file's end is checked even after npy, idx */
  Tensor *t = j->result.u.m;
  if (o->rows >= 0 && tensor_rows(t) != o->rows)
    bi_error(I, "'%s' has %lld rows, but %s declares %lld", j->path, (long long)tensor_rows(t), o->dims_from, (long long)o->rows);
  if (o->cols >= 0 && tensor_cols(t) != o->cols)
    bi_error(I, "'%s' has %lld columns, but %s declares %lld", j->path, (long long)tensor_cols(t), o->dims_from, (long long)o->cols);
}

Value bi_read(Interp *I, Args *a) {
  IoJob j;
  io_init(&j);
  j.fn = read_job;
  j.path = bi_str(I, a, 0);
  if (bi_given(a, 1)) j.o.format = format_arg(I, a, 1);
  if (bi_given(a, 2)) j.o.header = bi_opt_bool(I, a, 2, false);
  if (bi_given(a, 3)) j.o.sep = bi_str(I, a, 3);
  if (j.o.sep && !*j.o.sep) bi_argerror(I, 4, "the separator must not be empty");
  j.o.rows = dim_arg(I, a, 4);
  j.o.cols = dim_arg(I, a, 5);
  j.o.dims_from = "rows=/cols=";
  if (bi_given(a, 6)) {
    const char *dt = bi_str(I, a, 6);
    if (!strcmp(dt, "frame")) j.o.frame = 1;
    else if (strcmp(dt, "matrix") != 0) bi_argerror(I, 7, "data_type must be \"matrix\" or \"frame\", got \"%s\"", dt);
  }
  if (bi_given(a, 7)) j.na = a->v[7];
  if (bi_given(a, 8)) j.o.schema = bi_str(I, a, 8);
  io_run(I, &j);
  return j.result;
}

/* read.csv(file, header=TRUE, sep=",", na.strings="NA"): R's, a frame with detected types. */
Value bi_read_csv(Interp *I, Args *a) {
  IoJob j;
  io_init(&j);
  j.fn = read_job;
  j.path = bi_str(I, a, 0);
  j.o.format = "csv";
  j.o.frame = 1;
  j.o.detect = true;
  j.o.header = bi_opt_bool(I, a, 1, true);
  j.o.sep = bi_given(a, 2) ? bi_str(I, a, 2) : ",";
  if (!*j.o.sep) bi_argerror(I, 3, "the separator must not be empty");
  j.na = bi_given(a, 3) ? a->v[3] : val_cstr("NA");
  if (!bi_given(a, 3)) tmp_push(I, j.na);
  if (bi_given(a, 4)) j.o.schema = bi_str(I, a, 4);
  io_run(I, &j);
  if (!bi_given(a, 3)) { tmp_pop(I, 1); val_release(j.na); }
  return j.result;
}

/* ---- write ---- */

/* The data file written (j->out, finished, kept as j->data) and its .mtd sidecar opened in
** j->out: both are renamed into place only together (sidecar_commit), so a sidecar that cannot
** be written leaves the old data as it was. */
static void sidecar_open(Interp *I, IoJob *j) {
  out_finish(I, &j->out);
  j->data = j->out;
  memset(&j->out, 0, sizeof j->out);
  j->out.fd = -1;
  out_open(I, &j->out, j->mtdpath, false);
}

static void sidecar_commit(Interp *I, IoJob *j) {
  out_finish(I, &j->out);
  out_rename(I, &j->data);
  out_rename(I, &j->out);
}

static void write_job(Interp *I, IoJob *j) {
  const char *f = j->o.format;
  if (j->frame) {                              /* a frame: csv and its sidecar */
    if (strcmp(f, "csv") != 0) bi_error(I, "a frame is written as csv, not %s", f);
    out_open(I, &j->out, j->path, ends_with(j->path, ".gz"));
    frame_csv_write(I, j);
    j->mtdpath = mtd_path(j->path);
    if (j->out.direct) { out_commit(I, &j->out); return; }
    sidecar_open(I, j);
    frame_mtd_write(I, j);
    sidecar_commit(I, j);
    return;
  }
  /* a sparse matrix: the text formats write it from its CSR; npy and idx from a dense copy, so
  ** that the caller's matrix stays sparse (tensor_data would densify it in place) */
  Tensor *c = tensor_is_sparse(j->m) && (!strcmp(f, "npy") || !strcmp(f, "idx")) ? tensor_densify(I, j->m)
            : tensor_contiguous(I, j->m);
  tensor_free_ref(j->m);
  j->m = c;
  out_open(I, &j->out, j->path, ends_with(j->path, ".gz"));
  if (!strcmp(f, "csv")) csv_write(I, j);
  else if (!strcmp(f, "text")) text_write(I, j);
  else if (!strcmp(f, "mm")) mm_write(I, j);
  else if (!strcmp(f, "libsvm")) libsvm_write(I, j);
  else if (!strcmp(f, "npy")) npy_write(I, j);
  else idx_write(I, j);
  j->mtdpath = mtd_path(j->path);
  if (j->out.direct) {                         /* a pipe or a terminal: no sidecar beside it */
    out_commit(I, &j->out);
    return;
  }
  if (has_mtd(f)) {                            /* data and sidecar are both written before either */
    sidecar_open(I, j);                        /* replaces its target: a sidecar that cannot be */
    mtd_write(I, j);                           /* written leaves the old data as it was */
    sidecar_commit(I, j);
  } else {
    out_commit(I, &j->out);
    unlink(j->mtdpath);                        /* a stale sidecar would describe another format */
  }
}

/* write(x, path) of a number, boolean or string (DML's scalar write): its text, no newline,
** and a .mtd sidecar saying "scalar"; atomic as a matrix's. The text rides in j->meta. */
static void write_scalar_job(Interp *I, IoJob *j) {
  out_open(I, &j->out, j->path, false);
  out_puts(I, &j->out, j->meta);
  j->mtdpath = mtd_path(j->path);
  if (j->out.direct) { out_commit(I, &j->out); return; }
  sidecar_open(I, j);
  out_puts(I, &j->out, "{\n    \"data_type\": \"scalar\",\n    \"value_type\": \"");
  out_puts(I, &j->out, j->o.format);
  out_puts(I, &j->out, "\",\n    \"format\": \"text\"\n}\n");
  sidecar_commit(I, j);
}

/* In a .dml file, write() makes the missing directories above path, as SystemDS's writes do
** (PCA.dml writes into OUTPUT/ without making it); a failure shows when the file is opened. */
static void make_parents(const char *path) {
  char buf[PATH_MAX];
  if (strlen(path) >= sizeof buf) return;
  strcpy(buf, path);
  for (char *q = buf + 1; *q; q++) {
    if (*q != '/') continue;
    *q = '\0';
    struct stat st;
    if (stat(buf, &st) != 0) (void)mkdir(buf, 0777);
    *q = '/';
  }
}

Value bi_write(Interp *I, Args *a) {
  IoJob j;
  io_init(&j);
  Value x = ad_primal(a->v[0]);
  bool dml = interp_in_dml(I);
  if (x.t == VT_STR || ((x.t == VT_NUM || x.t == VT_BOOL) && dml)) {   /* (.mls: a number is 1x1) */
    j.fn = write_scalar_job;
    j.path = bi_str(I, a, 1);
    /* (SystemDS writes a scalar as text whatever format= says; .mls files insist on "text") */
    if (bi_given(a, 2) && strcmp(bi_str(I, a, 2), "text") != 0 && !dml)
      bi_argerror(I, 3, "a %s is written as \"text\", not \"%s\"", val_type_name(x), bi_str(I, a, 2));
    char num[64];
    const char *text = x.t == VT_STR ? x.u.s->s : x.t == VT_BOOL ? (x.u.b ? "TRUE" : "FALSE") : num;
    if (x.t == VT_NUM) fmt_num(num, sizeof num, x.u.n, 15);
    j.meta = mem_alloc(strlen(text) + 1);
    strcpy(j.meta, text);
    j.o.format = x.t == VT_STR ? "string" : x.t == VT_BOOL ? "boolean" : "double";
    if (dml && !I->no_write) make_parents(j.path);
    io_run(I, &j);
    return val_null();
  }
  j.fn = write_job;
  j.path = bi_str(I, a, 1);
  a->v[0] = ad_primal(a->v[0]);                /* a value traced by grad: its primal */
  bool frame = a->v[0].t == VT_FRAME;
  j.o.format = bi_given(a, 2) ? format_arg(I, a, 2) : format_from_name(j.path);
  if (!j.o.format && frame) j.o.format = "csv";   /* a frame: csv whatever the name */
  if (!j.o.format && dml) j.o.format = "text";       /* SystemDS's default, whatever the name */
  if (!j.o.format) unknown_format(I, j.path);
  j.o.header = bi_opt_bool(I, a, 3, false);
  j.o.sep = bi_given(a, 4) ? bi_str(I, a, 4) : ",";
  if (!*j.o.sep) bi_argerror(I, 5, "the separator must not be empty");
  if (frame) {
    j.frame = a->v[0].u.fr;
    j.frame->refcount++;
  } else {
    j.m = bi_mat(I, a, 0);
  }
  if (dml && !I->no_write) make_parents(j.path);
  io_run(I, &j);
  return val_null();
}

/* ---- save and load ---- */

Value bi_save(Interp *I, Args *a) {
  IoJob j;
  io_init(&j);
  j.fn = ckpt_save;
  j.path = bi_str(I, a, 0);
  j.args = a;
  io_run(I, &j);
  return val_null();
}

Value bi_load(Interp *I, Args *a) {
  IoJob j;
  io_init(&j);
  j.fn = ckpt_load;
  j.path = bi_str(I, a, 0);
  io_run(I, &j);
  return j.result;
}
