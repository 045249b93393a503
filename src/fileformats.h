/*
** fileformats.h — the matrix file formats behind read()/write() and the checkpoint format
** behind save()/load() (LANGUAGE.md §10; docs/language.md "Files" describes each format).
**
** builtins_io.c owns the files: a Reader reads any input, gzip-compressed or not (it inflates
** a file that starts with gzip's magic bytes, and hands other files through unchanged), and an Out writes a temporary file next to the target that
** is fsync'ed and renamed over it only when complete. A format function may throw at any
** point: everything it holds lives in its IoJob, which builtins_io.c releases after the job
** has run, whether it succeeded or failed.
*/
#ifndef MLS_FILEFORMATS_H
#define MLS_FILEFORMATS_H

#include <zlib.h>
#include "builtins.h"

typedef struct Reader {
  const char *path;            /* as the user gave it, for messages */
  int fd;
  int mode;                    /* RD_RAW (pread access), RD_NEW (not looked at yet), RD_PLAIN, RD_GZIP */
  int64_t size;                /* bytes on disk (compressed bytes for a .gz file); -1: not a file */
  unsigned char *in;           /* bytes read from fd and not yet used: in[in_beg .. in_end) */
  size_t in_beg, in_end;
  uint64_t in_pos;             /* offset in the file of in[in_beg] */
  bool in_eof;                 /* fd is at its end */
  z_stream z;                  /* RD_GZIP: inflating the current member */
  bool member_end;             /* RD_GZIP: the current member ended (another may follow) */
  bool data_end;               /* every byte of data has been handed out */
  char *buf;                   /* line reading */
  size_t cap, beg, end;
  bool eof;
  int64_t line;                /* number of the line rd_line returned last */
} Reader;
enum { RD_RAW = 1, RD_NEW, RD_PLAIN, RD_GZIP };

typedef struct Out {
  const char *path;            /* the target, as the user gave it (for messages) */
  char *target;                /* where a symbolic link path points, else NULL */
  char *tmp;                   /* the temporary file, until it is renamed over the target */
  int fd;
  gzFile gz;                   /* compressing (the target's name ends in .gz) */
  char *buf;
  size_t n, cap;
  uint64_t bytes;              /* written so far */
  bool crc_on;
  uint32_t crc;                /* CRC-32 of everything written, when crc_on */
  bool fault;                  /* MLS_FAULT_WRITE: keep the data, write half of it, fail */
  bool direct;                 /* a FIFO or a character device (/dev/stdout): written in place */
  FILE *stream;                /* /dev/stdout or /dev/stderr of a front end (I->out, I->stderr_to):
                               ** written there instead of to fd (borrowed); NULL: fd */
} Out;

/* What is known about a matrix file besides its bytes: read()'s arguments, else the .mtd
** sidecar's fields, else the defaults. */
typedef struct FileOpts {
  const char *format;          /* "csv", "text", "mm", "libsvm", "npy", "idx" */
  int header;                  /* csv: 1 when the first line holds column names; -1 unknown */
  const char *sep;             /* csv: the separator */
  int64_t rows, cols;          /* -1: not known */
  const char *dims_from;       /* who declared rows/cols: "rows=/cols=" or the .mtd path */
  int frame;                   /* read a frame (data_type="frame", or the .mtd says so) */
  const char *schema;          /* a frame's column types ("STRING,FP64"), or NULL */
  bool detect;                 /* a frame without a schema: its column types detected (read.csv) */
} FileOpts;

typedef struct IoJob IoJob;
struct IoJob {
  void (*fn)(Interp *I, IoJob *j);
  const char *path;
  FileOpts o;
  Args *args;                  /* save: the values */
  Tensor *m;                   /* write: the matrix (retained) */
  struct FrameBlock *frame;    /* write: the frame (retained) */
  Value na;                    /* read of a frame: na.strings (a string or a list of them; borrowed) */
  char *text;                  /* a frame's cells read so far, each NUL-terminated ... */
  size_t ntext, captext;
  int64_t *offs;               /* ... starting at text + offs[k] (-1: NA) */
  int64_t noffs, capoffs;
  Value result;                /* read, load: the value made, owned until handed back */
  Reader in;
  Out out;
  Out data;                    /* write: the data file, finished, while its .mtd is written */
  char *mtdpath;
  char *meta;                  /* the .mtd file's text (FileOpts strings point into it) */
  unsigned char *scratch;      /* a format's buffer */
  double *cells;               /* numbers collected before the shape is known */
  int64_t ncells, capcells;
  int64_t *ent_i, *ent_k;      /* the sparse formats' entries (0-based row, column; value), */
  double *ent_v;               /* in file order, until the matrix is made from them */
  int64_t nent, capent;
};

/* Runs j->fn protected, releases everything j holds, then rethrows a failure. */
void io_run(Interp *I, IoJob *j);
/* The matrix a reader made: rows x cols, zero-filled when zero; j owns it. */
Tensor *io_result(Interp *I, IoJob *j, int64_t rows, int64_t cols, bool zero);
void io_push_cell(Interp *I, IoJob *j, double x);
/* Appends the entry (i, k) = v (0-based) to j's entries (counted against --max-memory as
** workspace, 24 bytes an entry); io_drop_entries frees them once the matrix is made. */
void io_push_entry(Interp *I, IoJob *j, int64_t i, int64_t k, double v);
void io_drop_entries(IoJob *j);
/* Ctrl-C during a long read or write. */
void io_poll(Interp *I);

/* ---- reading ---- */
/* Opens path for reading, or for pread on r->fd (raw); throws when it cannot. A file that starts
** with gzip's magic bytes is inflated: one or more gzip members, and nothing after them. A
** stream that ends early ("gzip -t": unexpected end of file), fails its CRC or has other bytes
** after its last member is a located error; so is a read error. */
void rd_open(Interp *I, Reader *r, const char *path, bool raw);
void rd_close(Reader *r);
/* Up to n bytes; fewer only at the end of the data. */
size_t rd_read(Interp *I, Reader *r, void *dst, size_t n);
/* Reads a compressed file to its end, discarding what is left of its data, so that a
** truncated or padded stream is an error even when the format stopped reading before it. */
void rd_finish(Interp *I, Reader *r);
/* Whether the data is inflated from gzip (the first bytes are read to know). */
bool rd_compressed(Interp *I, Reader *r);
/* Exactly n bytes or the error "'path' is truncated (what)". */
void rd_exact(Interp *I, Reader *r, void *dst, size_t n, const char *what);
/* The next line without its end (\n or \r\n), NUL-terminated and writable; NULL at the end.
** A NUL byte in the line is an error naming its line and column ("f.csv:3:7: a NUL byte"). */
char *rd_line(Interp *I, Reader *r);
/* Checks, before anything is allocated, that a payload of `payload` bytes after `offset` bytes
** can be in the file: within its size, or for a compressed file within what deflate can
** expand its size to. what: "3x4 float64" for the message. */
void rd_check_payload(Interp *I, Reader *r, uint64_t offset, uint64_t payload, const char *what);

/* ---- writing ---- */
void out_open(Interp *I, Out *o, const char *path, bool gz);
void out_write(Interp *I, Out *o, const void *p, size_t n);
void out_puts(Interp *I, Out *o, const char *s);
/* Flushes, fsyncs and renames the temporary file over the target. */
void out_commit(Interp *I, Out *o);

/* ---- numbers in text ---- */
/* The shortest text that reads back as exactly x (at most 17 digits); NaN, Inf, -Inf. */
int fmt_double(char *buf, double x);
/* A whole cell (already trimmed): a number, NaN/NA, Inf/-Inf/Infinity, TRUE/FALSE. */
bool parse_cell(const char *s, double *out);

/* ---- formats (fileformats_text.c) ---- */
void csv_read(Interp *I, IoJob *j);
void csv_write(Interp *I, IoJob *j);
void text_read(Interp *I, IoJob *j);
void text_write(Interp *I, IoJob *j);
void mm_read(Interp *I, IoJob *j);
void mm_write(Interp *I, IoJob *j);
void libsvm_read(Interp *I, IoJob *j);
void libsvm_write(Interp *I, IoJob *j);
/* The .mtd sidecar (DML's JSON metadata): fills the fields of o it finds. */
void mtd_read(Interp *I, IoJob *j, FileOpts *o);
void mtd_write(Interp *I, IoJob *j);
/* Cuts the next csv field off the line at *pp, in place ("..." unquoted, blanks trimmed); *pp
** becomes the text after the separator, or NULL after the last field. col: for messages. */
char *csv_cut_field(Interp *I, IoJob *j, char **pp, int64_t col);
/* s as a JSON string literal. */
void out_json_str(Interp *I, Out *o, const char *s);

/* ---- frames (frame/frame_io.c) ---- */
void frame_csv_read(Interp *I, IoJob *j);
void frame_csv_write(Interp *I, IoJob *j);
void frame_mtd_write(Interp *I, IoJob *j);

/* ---- formats (fileformats_bin.c) ---- */
void npy_read(Interp *I, IoJob *j);
void npy_write(Interp *I, IoJob *j);
void idx_read(Interp *I, IoJob *j);
void idx_write(Interp *I, IoJob *j);
void ckpt_save(Interp *I, IoJob *j);
void ckpt_load(Interp *I, IoJob *j);

#endif
