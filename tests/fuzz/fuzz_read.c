/*
** fuzz_read.c — libFuzzer harness for one file reader, through the normal builtin path: the
** input bytes become a file in a private temporary directory and a short script reads it.
** Built once per format with -DFUZZ_FORMAT=csv|text|mm|libsvm|npy|idx|ckpt|mtd|gz (Makefile):
**   csv text mm libsvm    read(file, format=...) of the bytes, then sum() of the matrix; the
**   npy idx               sparse formats (text, mm coordinate, libsvm) also nnz() and one
**                         element, read from the CSR when the matrix is sparse, and again
**                         under --sparse always (every entry path sparse, small shapes too)
**   ckpt                  load(file) of the bytes (the checkpoint format of save/load)
**   mtd                   the bytes are the .mtd sidecar of a small csv file, and of a file
**                         with no extension (whose format only the sidecar gives)
**   gz                    the first byte picks csv/text/mm/npy/idx/libsvm; the rest is a .gz file
**   frame                 the bytes as a csv frame (docs/frames.md): read(data_type="frame") with
**                         and without a header and a schema, read.csv, printed, written back
**   spec                  the bytes as a transform spec (JSON) of transformencode, apply, decode
**                         and colmap on a small frame
**   tfmeta                the bytes, cut at NUL bytes, as the files transformmeta reads (docs/frames.md):
**                         Recode/a.map, Recode/a.ndistinct, Bin/b.bin, Impute/c.impute and
**                         column.names (default "a,b,c"); the meta frame printed and applied
*/
#include <errno.h>
#include <stdarg.h>
#include <sys/stat.h>
#include "fuzz.h"

#define STR2(x) #x
#define STR(x) STR2(x)

/* A file of at most 1 MiB declares a matrix of any size; past this, a located out-of-memory
** error. The limit of fuzz.h (64 MiB) made most of each run the zeroing and summing of
** declared matrices, not the reading. */
#define FUZZ_READ_MAX_MEMORY ((uint64_t)4 << 20)

static char dir[64];

static void cleanup(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (dir[0] && system(cmd) != 0) { /* best effort */ }
}

static void put(const char *name, const uint8_t *data, size_t size) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (!f) abort();
  if (size && fwrite(data, 1, size, f) != size) abort();
  fclose(f);
}

static Interp *I;                          /* one for the process: the scripts only set X */

/* The format rule of the scripts that follow (Interp.sparse_mode). */
static void set_sparse_mode(int mode) {
  if (!I) I = fuzz_interp(NULL, NULL);
  I->sparse_mode = mode;
}

/* Runs a script made from fmt (%s = the directory). */
static void run(const char *fmt) {
  char prog[1024];
  snprintf(prog, sizeof prog, fmt, dir, dir);
  if (!I) I = fuzz_interp(NULL, NULL);
  mem_set_limit(FUZZ_READ_MAX_MEMORY);
  Source *src = source_new("fuzz.mls", prog, strlen(prog));
  fuzz_run(I, src);
  source_release(src);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!dir[0]) {                               /* in memory (/dev/shm) where there is one: faster */
    snprintf(dir, sizeof dir, "/dev/shm/mls-fuzz-XXXXXX");
    if (!mkdtemp(dir)) {
      snprintf(dir, sizeof dir, "/tmp/mls-fuzz-XXXXXX");
      if (!mkdtemp(dir)) abort();
    }
    atexit(cleanup);
  }
  if (size > 1 << 20) return 0;
  const char *f = STR(FUZZ_FORMAT);
  if (!strcmp(f, "ckpt")) {
    put("in.ckpt", data, size);
    run("L = load(\"%s/in.ckpt\"); print(length(L)); print(L)");
  } else if (!strcmp(f, "mtd")) {
    static const uint8_t csv[] = "1,2\n3,4\n";
    put("a.csv", csv, sizeof csv - 1);
    put("a.csv.mtd", data, size);
    put("X", csv, sizeof csv - 1);
    put("X.mtd", data, size);
    run("X = read(\"%s/a.csv\"); print(X)");
    run("X = read(\"%s/X\"); print(X)");
  } else if (!strcmp(f, "frame")) {
    put("f.csv", data, size);
    /* (run() fills in the directory once: d holds it) */
    run("d = \"%s\"; F = read(d + \"/f.csv\", data_type=\"frame\", format=\"csv\"); print(F); print(detectSchema(F)); "
        "write(F, d + \"/g.csv\"); G = read(d + \"/g.csv\"); print(nrow(G) * 1000 + ncol(G))");
    run("F = read.csv(\"%s/f.csv\"); print(F); print(toString(F[, 1]))");
    run("F = read(\"%s/f.csv\", data_type=\"frame\", format=\"csv\", header=TRUE, schema=\"FP64,STRING,INT64\"); "
        "print(as.matrix(F[, 1]))");
  } else if (!strcmp(f, "spec")) {
    /* the bytes as the text of an MLS string literal (quotes and backslashes escaped, control
    ** and non-ASCII bytes as '?', which the lexer would refuse) */
    static char prog[4 << 10];
    const char *head = "F = frame(list(\"a\", 1, \"\", \"b\", 2.5, \"x\", \"a\", 7, \"y\"), rows=3, cols=3, "
                       "colnames=list(\"c1\", \"c2\", \"c3\"))\nS = \"";
    const char *tail = "\"\n[X, M] = transformencode(target=F, spec=S)\nprint(X)\nprint(M)\n"
                       "print(transformapply(target=F, spec=S, meta=M))\nprint(transformdecode(target=X, spec=S, meta=M))\n"
                       "print(transformcolmap(spec=S, target=F, meta=M))\n";
    size_t n = strlen(head);
    memcpy(prog, head, n);
    for (size_t i = 0; i < size && n < sizeof prog - strlen(tail) - 4; i++) {
      unsigned char c = data[i];
      if (c == '"' || c == '\\') { prog[n++] = '\\'; prog[n++] = (char)c; }
      else prog[n++] = c < 0x20 || c >= 0x7f ? '?' : (char)c;
    }
    memcpy(prog + n, tail, strlen(tail) + 1);
    if (!I) I = fuzz_interp(NULL, NULL);
    mem_set_limit(FUZZ_READ_MAX_MEMORY);
    Source *src = source_new("fuzz.mls", prog, strlen(prog));
    fuzz_run(I, src);
    source_release(src);
  } else if (!strcmp(f, "tfmeta")) {
    static const char *const names[] = { "m/Recode/a.map", "m/Recode/a.ndistinct", "m/Bin/b.bin", "m/Impute/c.impute", "m/column.names" };
    static const uint8_t dflt[] = "a,b,c";
    /* the directories once, each file written anew below (no shell: a command line of four
    ** paths outgrew a fixed buffer, and a fork per input is slow) */
    static const char *const subs[] = { "m", "m/Recode", "m/Bin", "m/Impute" };
    for (int i = 0; i < 4; i++) {
      char path[128];
      snprintf(path, sizeof path, "%s/%s", dir, subs[i]);
      if (mkdir(path, 0700) != 0 && errno != EEXIST) abort();
    }
    for (int i = 0; i < 5; i++) {               /* no file of the input before */
      char path[128];
      snprintf(path, sizeof path, "%s/%s", dir, names[i]);
      if (unlink(path) != 0 && errno != ENOENT) abort();
    }
    size_t beg = 0;
    int k = 0;
    for (size_t i = 0; i <= size && k < 5; i++)
      if (i == size || data[i] == 0) { put(names[k++], data + beg, i - beg); beg = i + 1; }
    if (k < 5) put(names[4], dflt, sizeof dflt - 1);
    run("S = \"{\\\"recode\\\": [\\\"a\\\"], \\\"bin\\\": [{\\\"name\\\": \\\"b\\\"}], \\\"impute\\\": [{\\\"name\\\": \\\"c\\\", "
        "\\\"method\\\": \\\"global_mode\\\"}]}\"; M = transformmeta(spec=S, transformPath=\"%s/m\"); print(M); "
        "F = frame(list(\"x\", 1.5, \"\", \"y\", 20, \"z\"), rows=2, cols=3, colnames=list(\"a\", \"b\", \"c\")); "
        "print(transformapply(target=F, spec=S, meta=M))");
  } else if (!strcmp(f, "gz")) {
    /* (the order of make_corpus.py's FORMATS, whose seeds start with these bytes; libsvm last) */
    static const char *const fmts[] = { "csv", "text", "mm", "npy", "idx", "libsvm" };
    if (size < 1) return 0;
    put("in.gz", data + 1, size - 1);
    char prog[256];
    snprintf(prog, sizeof prog, "X = read(\"%%s/in.gz\", format=\"%s\"); print(sum(X))", fmts[data[0] % 6]);
    run(prog);
  } else {
    char name[32], prog[256];
    snprintf(name, sizeof name, "in.%s", f);
    put(name, data, size);
    snprintf(prog, sizeof prog, "X = read(\"%%s/%s\", format=\"%s\"); print(sum(X)); print(nrow(X) * 1000 + ncol(X))", name, f);
    run(prog);
    if (!strcmp(f, "csv")) {
      snprintf(prog, sizeof prog, "X = read(\"%%s/%s\", header=TRUE, sep=\";\"); print(sum(X))", name);
      run(prog);
    }
    if (!strcmp(f, "text") || !strcmp(f, "mm") || !strcmp(f, "libsvm")) {   /* the sparse readers */
      snprintf(prog, sizeof prog, "X = read(\"%%s/%s\", format=\"%s\"); print(nnz(X)); "
               "if (nrow(X) * ncol(X) > 0) print(X[nrow(X), ncol(X)])", name, f);
      run(prog);
      set_sparse_mode(SPARSE_ALWAYS);
      run(prog);
      set_sparse_mode(SPARSE_AUTO);
    }
  }
  return 0;
}
