/*
** test_files.c — unit tests of read/write/save/load (builtins_io.c, fileformats_*.c) that need
** C: byte-exact malformed binary inputs (npy, idx, gzip, checkpoints), the exact bytes that
** write produces, and the atomicity of writes under the MLS_FAULT_WRITE test hook (the old
** file survives, no temporary file is left behind). Each test runs in a fresh directory.
*/
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>
#include "diag.h"
#include "interp/interp.h"
#include "capture.h"
#include "fileformats.h"
#include "mem.h"

static int setup(void **state) { return dir_fix_setup(state, "files"); }

static int teardown(void **state) {
  unsetenv("MLS_FAULT_WRITE");
  return dir_fix_teardown(state);
}

static int run(DirFix *f, const char *code) {
  return run_captured(f->I, code, false, &f->out, &f->nout, &f->err, &f->nerr);
}

static void expect_out(DirFix *f, const char *code, const char *want) {
  int st = run(f, code);
  if (st != 0) print_error("'%s' failed (%d): %s\n", code, st, f->err);
  assert_int_equal(st, 0);
  if (strcmp(f->out, want) != 0) print_error("program: '%s'\n", code);
  assert_string_equal(f->out, want);
}

/* code must fail with exactly the message msg (after "t.mls:L:C: error: "). */
static void expect_error(DirFix *f, const char *code, const char *msg) {
  int got = run(f, code);
  if (got != 1) print_error("'%s': status %d, stderr: %s\n", code, got, f->err);
  assert_int_equal(got, 1);
  assert_error_message(code, f->err, msg);
  assert_int_equal(f->I->nframes, 0);
  assert_int_equal(f->I->ntmp, 0);
}

static void put(const char *name, const void *data, size_t n) {
  FILE *fp = fopen(name, "wb");
  assert_non_null(fp);
  assert_int_equal(fwrite(data, 1, n, fp), n);
  fclose(fp);
}

static void put_gz(const char *name, const void *data, size_t n) {
  gzFile g = gzopen(name, "wb");
  assert_non_null(g);
  assert_int_equal(gzwrite(g, data, (unsigned)n), (int)n);
  gzclose(g);
}

/* The whole file; *n its size. The caller frees. */
static unsigned char *get(const char *name, size_t *n) {
  FILE *fp = fopen(name, "rb");
  assert_non_null(fp);
  fseek(fp, 0, SEEK_END);
  long len = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  unsigned char *b = malloc((size_t)len + 1);
  assert_non_null(b);
  *n = fread(b, 1, (size_t)len, fp);
  b[*n] = 0;
  fclose(fp);
  return b;
}

/* Names in the directory that look like write's temporary files. */
static int temp_files(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".tmp")) n++;
  closedir(d);
  return n;
}

/* An npy file: the header dict padded as NumPy does, then n bytes of data. */
static void put_npy(const char *name, const char *dict, const void *data, size_t n) {
  char buf[4096];
  size_t hl = strlen(dict), total = 10 + hl + 1, pad = (64 - total % 64) % 64;
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)((hl + pad + 1) & 255);
  buf[9] = (char)((hl + pad + 1) >> 8);
  memcpy(buf + 10, dict, hl);
  memset(buf + 10 + hl, ' ', pad);
  buf[10 + hl + pad] = '\n';
  memcpy(buf + total + pad, data, n);
  put(name, buf, total + pad + n);
}

/* ---- exact bytes written ---- */

static void test_written_bytes(void **state) {
  DirFix *f = *state;
  expect_out(f, "write([0.1, 1/3, 100; -0.5, NaN, -Inf], \"a.csv\", header=TRUE)\n"
                "write([0, 1.5; 0, 0; 0, 0], \"a.txt\")\nwrite([1, 2; 3, 4], \"a.npy\")\n"
                "write([1, 2; 3, 4], \"a.tsv\", format=\"csv\", sep=\"\\t\")\n", "");
  size_t n;
  unsigned char *b = get("a.csv", &n);
  assert_string_equal((char *)b, "C1,C2,C3\n0.1,0.3333333333333333,100\n-0.5,NaN,-Inf\n");
  free(b);
  b = get("a.csv.mtd", &n);
  assert_string_equal((char *)b, "{\n    \"data_type\": \"matrix\",\n    \"value_type\": \"double\",\n    \"rows\": 2,\n"
                                 "    \"cols\": 3,\n    \"nnz\": 6,\n    \"format\": \"csv\",\n    \"header\": true,\n"
                                 "    \"sep\": \",\"\n}\n");
  free(b);
  b = get("a.tsv.mtd", &n);
  assert_non_null(strstr((char *)b, "\"sep\": \"\\t\""));
  free(b);
  b = get("a.txt", &n);
  assert_string_equal((char *)b, "1 2 1.5\n3 2 0\n");            /* the zero last cell keeps the shape */
  free(b);
  b = get("a.npy", &n);
  assert_int_equal(n, 128 + 32);                                 /* the header pads the data to 64 bytes */
  assert_memory_equal(b, "\x93NUMPY\x01\x00\x76\x00{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", 69);
  assert_int_equal(b[127], '\n');
  double d[4];
  memcpy(d, b + 128, 32);
  assert_true(d[0] == 1 && d[1] == 2 && d[2] == 3 && d[3] == 4);
  free(b);
  /* formats without a sidecar remove a stale one */
  put("a.npy.mtd", "{}", 2);
  expect_out(f, "write([1], \"a.npy\")\n", "");
  assert_int_equal(access("a.npy.mtd", F_OK), -1);
}

/* ---- csv details only C can write ---- */

static void test_csv_crlf_bom(void **state) {
  DirFix *f = *state;
  put("w.csv", "\xEF\xBB\xBF" "1,2\r\n3,4\r\n", 13);
  expect_out(f, "print(read(\"w.csv\"))\n", "1 2\n3 4\n");
  put("n.csv", "1,2\n3,\x01\n", 8);
  expect_error(f, "x = read(\"n.csv\")\n", "read: n.csv:2: column 2: '\x01' is not a number");
}

/* ---- atomic writes ---- */

static void check_survives(DirFix *f, const char *code, const char *file, const char *msg) {
  size_t n0, n1;
  unsigned char *before = get(file, &n0);
  setenv("MLS_FAULT_WRITE", "1", 1);
  expect_error(f, code, msg);
  unsetenv("MLS_FAULT_WRITE");
  unsigned char *after = get(file, &n1);
  assert_int_equal(n0, n1);
  assert_memory_equal(before, after, n0);
  assert_int_equal(temp_files("."), 0);
  free(before);
  free(after);
}

static void test_fault_injection(void **state) {
  DirFix *f = *state;
  expect_out(f, "write([1, 2; 3, 4], \"old.csv\")\nwrite([1, 2; 3, 4], \"old.npy.gz\")\nsave(\"old.ckpt\", a=1)\n", "");
  check_survives(f, "write(matrix(7, rows=20, cols=30), \"old.csv\")\n", "old.csv",
                 "write: cannot write 'old.csv': injected fault after 600 of 1200 bytes (MLS_FAULT_WRITE)");
  check_survives(f, "write(matrix(7, rows=20, cols=30), \"old.csv\")\n", "old.csv.mtd",
                 "write: cannot write 'old.csv': injected fault after 600 of 1200 bytes (MLS_FAULT_WRITE)");
  check_survives(f, "write(matrix(7, rows=2, cols=3), \"old.npy.gz\")\n", "old.npy.gz",
                 "write: cannot write 'old.npy.gz': injected fault after 88 of 176 bytes (MLS_FAULT_WRITE)");
  check_survives(f, "save(\"old.ckpt\", a=2, M=matrix(1, rows=3, cols=3))\n", "old.ckpt",
                 "save: cannot write 'old.ckpt': injected fault after 76 of 152 bytes (MLS_FAULT_WRITE)");
  expect_out(f, "print(read(\"old.csv\"))\nprint(load(\"old.ckpt\")$a)\n", "1 2\n3 4\n1\n");
  /* MLS_FAULT_WRITE=0 is off */
  setenv("MLS_FAULT_WRITE", "0", 1);
  expect_out(f, "write(5, \"old.csv\")\nprint(read(\"old.csv\"))\n", "5\n");
}

/* Ctrl-C in the REPL sets I->interrupted: a write in progress stops at its next check and
** cleans up. The flag is set before the write starts, so the test does not race a thread. */
static void test_interrupted_write(void **state) {
  DirFix *f = *state;
  expect_out(f, "write([1, 2], \"old.csv\")\nX = rand(rows=2000, cols=1000, seed=1)\n", "");
  size_t n0, n1;
  unsigned char *before = get("old.csv", &n0);
  f->I->interrupted = 1;
  int st = run(f, "write(X, \"old.csv\")\n");
  assert_int_equal(st, 1);
  assert_non_null(strstr(f->err, "error: interrupted"));
  unsigned char *after = get("old.csv", &n1);
  assert_int_equal(n0, n1);
  assert_memory_equal(before, after, n0);
  assert_int_equal(temp_files("."), 0);
  free(before);
  free(after);
}

static void test_failed_rename(void **state) {
  DirFix *f = *state;
  assert_int_equal(mkdir("d.csv", 0700), 0);
  put("d.csv/keep", "x", 1);
  expect_error(f, "write([1, 2], \"d.csv\")\n", "write: cannot write 'd.csv': it is a directory");
  assert_int_equal(temp_files("."), 0);
  assert_int_equal(access("d.csv/keep", F_OK), 0);
}

static void test_readonly_dir(void **state) {
  DirFix *f = *state;
  assert_int_equal(mkdir("ro", 0700), 0);
  put("ro/x.csv", "1,2\n", 4);
  chmod("ro", 0500);
  if (geteuid() == 0) {
    /* root writes anywhere: run the write as user nobody in a child, which reports by its
    ** exit status (0: the write failed with EACCES; 2: it succeeded; 3: other error) */
    assert_int_equal(chmod(".", 0755), 0);
    assert_int_equal(chmod("ro/x.csv", 0644), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
      if (setgid(65534) != 0 || setuid(65534) != 0) _exit(4);
      int st = run(f, "write([3, 4], \"ro/x.csv\")\n");
      if (st == 0) _exit(2);
      _exit(strstr(f->err, "write: cannot write 'ro/x.csv': Permission denied") ? 0 : 3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
  } else {
    expect_error(f, "write([3, 4], \"ro/x.csv\")\n", "write: cannot write 'ro/x.csv': Permission denied");
  }
  chmod("ro", 0700);
  expect_out(f, "print(read(\"ro/x.csv\"))\n", "1 2\n");
}

/* ---- malformed npy ---- */

static void test_npy_errors(void **state) {
  DirFix *f = *state;
  double v[4] = { 1, 2, 3, 4 };
  put_npy("ok.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (2, 2), }", v, 32);
  expect_out(f, "print(read(\"ok.npy\"))\n", "1 2\n3 4\n");
  size_t n;
  unsigned char *b = get("ok.npy", &n);
  put("h.npy", b, 40);
  expect_error(f, "x = read(\"h.npy\")\n", "read: 'h.npy' is truncated (header)");
  put("m.npy", b, 4);
  expect_error(f, "x = read(\"m.npy\")\n", "read: 'm.npy' is truncated (header)");
  put("d.npy", b, n - 8);
  expect_error(f, "x = read(\"d.npy\")\n",
               "read: 'd.npy' is truncated: its header declares a 2x2 float64 array (32 bytes of data), but 24 bytes follow the header");
  b[6] = 4;
  put("v.npy", b, n);
  expect_error(f, "x = read(\"v.npy\")\n", "read: 'v.npy' is a .npy file of version 4.0, which mls cannot read (1.0 to 3.0)");
  free(b);
  put_npy("huge.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (100000, 100000), }", v, 16);
  expect_error(f, "x = read(\"huge.npy\")\n",
               "read: 'huge.npy' is truncated: its header declares a 100000x100000 float64 array (80000000000 bytes of data), but 16 bytes follow the header");
  put_npy("ovf.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }", v, 16);
  expect_error(f, "x = read(\"ovf.npy\")\n", "read: 'ovf.npy' declares a 4294967296x4294967296x4294967296 float64 array, too large");
  put_npy("c.npy", "{'descr': '<c16', 'fortran_order': False, 'shape': (1,), }", v, 16);
  expect_error(f, "x = read(\"c.npy\")\n", "read: 'c.npy' holds the dtype '<c16', which mls cannot read (floats, integers and bool can be read)");
  put_npy("s.npy", "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (1,), }", v, 8);
  expect_error(f, "x = read(\"s.npy\")\n", "read: 's.npy' holds a structured array, which mls cannot read");
  put_npy("o.npy", "{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", v, 8);
  expect_error(f, "x = read(\"o.npy\")\n", "read: 'o.npy' holds the dtype '|O', which mls cannot read (floats, integers and bool can be read)");
  put_npy("k.npy", "{'descr': '<f8', 'fortran_order': False}", v, 8);
  expect_error(f, "x = read(\"k.npy\")\n", "read: 'k.npy' has a malformed .npy header (no 'shape')");
  put_npy("q.npy", "{'descr': '<f8, 'fortran_order': False, 'shape': (1,), }", v, 8);
  expect_error(f, "x = read(\"q.npy\")\n", "read: 'q.npy' has a malformed .npy header (',' or '}' expected)");
  put_npy("t.npy", "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (1,), }", v, 8);
  expect_error(f, "x = read(\"t.npy\")\n", "read: 't.npy' has a malformed .npy header (fortran_order must be True or False)");
  put_npy("f3.npy", "{'descr': '<f8', 'fortran_order': True, 'shape': (1, 1, 1), }", v, 8);
  expect_error(f, "x = read(\"f3.npy\")\n", "read: 'f3.npy' holds a 1x1x1 float64 array in Fortran order; only 1 or 2 dimensions can be read in that order");
  put("x.npy", "\x93NUMPY\x01\x00\xff\xff{", 11);
  expect_error(f, "x = read(\"x.npy\")\n", "read: 'x.npy' is truncated (header)");
  /* a compressed file may not declare more than deflate can expand it to */
  unsigned char big[129];
  memcpy(big, "\x93NUMPY\x01\x00\x76\x00", 10);
  snprintf((char *)big + 10, sizeof big - 10, "%-117s\n", "{'descr': '|u1', 'fortran_order': False, 'shape': (1000000000, 1000), }");
  put_gz("g.npy.gz", big, 128);
  expect_error(f, "x = read(\"g.npy.gz\")\n",
               "read: 'g.npy.gz' declares a 1000000000x1000 uint8 array (1000000000000 bytes of data), more than the file can hold");
  /* bool and int64, read as numbers */
  unsigned char bo[3] = { 1, 0, 1 };
  put_npy("b.npy", "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", bo, 3);
  int64_t i8[2] = { -5, 1099511627776 };
  put_npy("i8.npy", "{'descr': '<i8', 'fortran_order': False, 'shape': (1, 2), }", i8, 16);
  uint16_t h2[2] = { 0x3c00, 0xc000 };                           /* float16 1 and -2 */
  put_npy("h2.npy", "{'descr': '<f2', 'fortran_order': False, 'shape': (2,), }", h2, 4);
  expect_out(f, "print(t(read(\"b.npy\")))\nprint(toString(read(\"i8.npy\")))\nprint(t(read(\"h2.npy\")))\n",
             "1 0 1\n-5 1099511627776\n1 -2\n");
}

/* ---- malformed idx ---- */

static void test_idx_errors(void **state) {
  DirFix *f = *state;
  put("m.idx", "PK\x03\x04", 4);
  expect_error(f, "x = read(\"m.idx\")\n", "read: 'm.idx' is not an idx file (it must start with the bytes 00 00 type dims)");
  put("t.idx", "\x00\x00\x07\x01\x00\x00\x00\x01", 8);
  expect_error(f, "x = read(\"t.idx\")\n", "read: 't.idx' is not an idx file (unknown element type 0x07)");
  put("z.idx", "\x00\x00\x08\x00", 4);
  expect_error(f, "x = read(\"z.idx\")\n", "read: 'z.idx' declares 0 dimensions (idx files have 1 to 16)");
  put("h.idx", "\x00\x00\x08\x03\x00\x00", 6);
  expect_error(f, "x = read(\"h.idx\")\n", "read: 'h.idx' is truncated (header)");
  put("e.idx", "", 0);
  expect_error(f, "x = read(\"e.idx\")\n", "read: 'e.idx' is empty, not an idx file");
  put("big.idx", "\x00\x00\x08\x02\x00\x10\x00\x00\x00\x10\x00\x00" "abc", 15);
  expect_error(f, "x = read(\"big.idx\")\n",
               "read: 'big.idx' is truncated: its header declares a 1048576x1048576 uint8 array (1099511627776 bytes of data), but 3 bytes follow the header");
  put("ovf.idx", "\x00\x00\x0e\x04\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 20);
  expect_error(f, "x = read(\"ovf.idx\")\n", "read: 'ovf.idx' declares a 4294967295x4294967295x4294967295x4294967295 float64 array, too large");
  unsigned char img[4 + 12 + 24];
  memcpy(img, "\x00\x00\x08\x03\x00\x00\x00\x02\x00\x00\x00\x03\x00\x00\x00\x04", 16);
  for (int k = 0; k < 24; k++) img[16 + k] = (unsigned char)(k * 10);
  put_gz("ok-ubyte.gz", img, sizeof img);
  expect_out(f, "X = read(\"ok-ubyte.gz\")\nprint(nrow(X) + \"x\" + ncol(X) + \" \" + X[2, 12])\n", "2x12 230\n");
  put_gz("cut.idx.gz", img, 30);
  expect_error(f, "x = read(\"cut.idx.gz\")\n", "read: 'cut.idx.gz' is truncated: 14 of the 24 bytes of data are there");
  /* a gzip stream cut short, and one with damaged data */
  size_t n;
  unsigned char *b = get("ok-ubyte.gz", &n);
  put("short.idx.gz", b, n - 10);
  assert_int_equal(run(f, "x = read(\"short.idx.gz\")\n"), 1);
  assert_non_null(strstr(f->err, "read: 'short.idx.gz' is truncated: its gzip data ends early"));
  b[n - 6] ^= 0x55;                                              /* the CRC in the gzip trailer */
  put("crc.idx.gz", b, n);
  expect_error(f, "x = read(\"crc.idx.gz\")\n", "read: 'crc.idx.gz' is corrupt near byte 54 (zlib: incorrect data check)");
  free(b);
}

/* ---- checkpoints ---- */

static void test_ckpt_errors(void **state) {
  DirFix *f = *state;
  expect_out(f, "save(\"f.ckpt\", a=1, b=\"two\", c=[1, 2; 3, 4], d=TRUE, e=list(x=1, 2))\n", "");
  size_t n;
  unsigned char *b = get("f.ckpt", &n);
  put("t1.ckpt", b, 100);
  expect_error(f, "x = load(\"t1.ckpt\")\n", "load: 't1.ckpt' is truncated (entry 3 of 5)");
  put("t2.ckpt", b, n - 2);
  expect_error(f, "x = load(\"t2.ckpt\")\n", "load: 't2.ckpt' is truncated (checksum)");
  put("t3.ckpt", b, 20);
  expect_error(f, "x = load(\"t3.ckpt\")\n", "load: 't3.ckpt' is truncated (header)");
  put("t4.ckpt", b, 5);
  expect_error(f, "x = load(\"t4.ckpt\")\n", "load: 't4.ckpt' is truncated (header)");
  put("e.ckpt", b, 0);
  expect_error(f, "x = load(\"e.ckpt\")\n", "load: 'e.ckpt' is empty, not an MLS checkpoint");
  b[60] ^= 1;
  put("c.ckpt", b, n);
  expect_error(f, "x = load(\"c.ckpt\")\n", "load: 'c.ckpt': checksum mismatch (the file is corrupt)");
  b[60] ^= 1;
  b[8] = 7;
  put("v.ckpt", b, n);
  expect_error(f, "x = load(\"v.ckpt\")\n", "load: 'v.ckpt': version 7 is newer than this mls (2)");
  b[8] = 1;
  b[0] = 'X';
  put("m.ckpt", b, n);
  expect_error(f, "x = load(\"m.ckpt\")\n", "load: 'm.ckpt' is not an MLS checkpoint");
  b[0] = 'M';
  unsigned char *longer = malloc(n + 3);
  memcpy(longer, b, n);
  memcpy(longer + n, "abc", 3);
  put("x.ckpt", longer, n + 3);
  expect_error(f, "x = load(\"x.ckpt\")\n", "load: 'x.ckpt' is corrupt (3 bytes after the end of its data)");
  free(longer);
  /* a matrix entry whose declared size is huge (with a valid checksum) is caught before allocating */
  unsigned char h[24 + 4 + 1 + 9 + 16 + 4];
  memcpy(h, "MLSCKPT\0\x01\x00\x00\x00\x01\x00\x00\x00", 16);
  uint64_t size = sizeof h;
  for (int k = 0; k < 8; k++) h[16 + k] = (unsigned char)(size >> (8 * k));
  memcpy(h + 24, "\x01\x00\x00\x00M\x04\x10\x00\x00\x00\x00\x00\x00\x00", 14);
  memcpy(h + 38, "\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x01\x00", 16);
  uLong crc = crc32(0L, h, (uInt)(sizeof h - 4));
  for (int k = 0; k < 4; k++) h[sizeof h - 4 + k] = (unsigned char)(crc >> (8 * k));
  put("h.ckpt", h, sizeof h);
  expect_error(f, "x = load(\"h.ckpt\")\n", "load: 'h.ckpt' is corrupt (entry 1 of 1: a matrix whose shape does not match its size)");
  expect_out(f, "L = load(\"f.ckpt\")\nprint(L$b + L$c[2, 1] + L$e$x)\n", "two31\n");
  free(b);
}

/* parse_cell's fast path for plain decimals gives strtod's double bit for bit (and -0 its sign):
** random decimals of 1 to 18 digits, with and without a point, a sign, leading zeros. */
static void test_parse_cell_is_strtod(void **state) {
  (void)state;
  uint64_t s = 88172645463325252ULL;
  char buf[64];
  for (long t = 0; t < 2000000; t++) {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    int nd = 1 + (int)(s % 18), k = (int)((s >> 8) % (uint64_t)(nd + 1));
    uint64_t m = s >> 12;
    char *p = buf;
    if ((s >> 5) & 1) *p++ = '-';
    if (k == nd && ((s >> 6) & 1)) *p++ = '0';
    for (int i = 0; i < nd; i++) {
      if (i == nd - k && k > 0) *p++ = '.';
      *p++ = (char)('0' + m % 10);
      m /= 10;
    }
    *p = '\0';
    double a, b = strtod(buf, NULL);
    assert_true(parse_cell(buf, &a));
    if (memcmp(&a, &b, sizeof a) != 0) fail_msg("parse_cell(\"%s\") = %.17g, strtod %.17g", buf, a, b);
  }
  double z;
  assert_true(parse_cell("-0", &z) && z == 0 && signbit(z));
  assert_true(parse_cell("1e300", &z) && z == 1e300);
  assert_false(parse_cell("1.2.3", &z));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_written_bytes, setup, teardown),
    cmocka_unit_test_setup_teardown(test_csv_crlf_bom, setup, teardown),
    cmocka_unit_test_setup_teardown(test_fault_injection, setup, teardown),
    cmocka_unit_test_setup_teardown(test_interrupted_write, setup, teardown),
    cmocka_unit_test_setup_teardown(test_failed_rename, setup, teardown),
    cmocka_unit_test_setup_teardown(test_readonly_dir, setup, teardown),
    cmocka_unit_test_setup_teardown(test_npy_errors, setup, teardown),
    cmocka_unit_test_setup_teardown(test_idx_errors, setup, teardown),
    cmocka_unit_test_setup_teardown(test_ckpt_errors, setup, teardown),
    cmocka_unit_test(test_parse_cell_is_strtod),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
