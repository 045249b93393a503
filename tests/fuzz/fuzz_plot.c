/*
** fuzz_plot.c — libFuzzer harness for the plot builtins (src/plot/): the bytes choose a program
** of calls of plot, lines, points, hist, legend, title and dev.off with odd arguments (NaN, Inf,
** empty, huge, zero-width ranges, wrong types, bad colours, invalid UTF-8), run under fuzz.h's
** limits with a display hook, so figures are rendered to PNG (plot_flush) and no file is ever
** written (no_write: file= is an error). Checked, beyond ASan and UBSan: the program's syntax
** is valid; every error is located ("plot.mls:LINE:COL: error: "); every figure shown is a PNG.
** FUZZ_PLOT_PRINT=1 build/fuzz/fuzz_plot INPUT prints the program an input stands for.
*/
#include "fuzz.h"
#include "plot/plot.h"

static const char *const vecs[] = {
  "[1, 2, 3]", "seq(1, 5)", "[NaN, 1, Inf]", "[-Inf, Inf]", "[NaN, NaN]", "matrix(0, rows=0, cols=1)",
  "seq(1, 2000)", "rand(rows=40, cols=1, seed=3)", "[1e308, -1e308]", "[5e-324, 0]", "[1, 1, 1]", "[-0, 0]",
  "t(seq(1, 4))", "matrix(1, rows=2, cols=2)", "[2, 1, 3, 2, 2]", "[1e15, 1e15 + 1]"
};
static const char *const nums[] = {
  "0", "1", "-1", "2", "3", "5", "6", "7", "16", "20", "21", "100", "150", "99", "10001", "0.5", "NaN", "Inf",
  "-Inf", "1e300", "-1e300", "2.5", "1e6", "1e7"
};
static const char *const strs[] = {
  "\"l\"", "\"p\"", "\"b\"", "\"o\"", "\"n\"", "\"x\"", "\"red\"", "\"#ff000080\"", "\"#12\"", "\"#GGGGGG\"",
  "\"topleft\"", "\"center\"", "\"bottom\"", "\"nowhere\"", "\"\"", "\"\xc3\xa9t\xc3\xa9\"", "\"bad \xff\xfe byte\"",
  "\"out.png\"", "\"out.svg\"", "\"x.jpg\"", "\"lightgray\"", "\"a\\nb\""
};
static const char *const others[] = {
  "TRUE", "FALSE", "list(1, \"a\")", "list()", "list(\"a\", \"b\", \"c\")", "function(x) x", "[1, 2]",
  "c(\"a\", 1)", "list(red=1)"
};

/* The builtins with the names of their optional arguments (src/builtins.c's signatures). */
typedef struct Fn { const char *name; int npos; const char *const *opts; } Fn;
static const char *const plot_opts[] = { "y", "type", "main", "xlab", "ylab", "col", "xlim", "ylim", "file", "width",
                                         "height", "lwd", "lty", "pch", NULL };
static const char *const lines_opts[] = { "y", "col", "lwd", "lty", "type", NULL };
static const char *const points_opts[] = { "y", "col", "pch", "type", NULL };
static const char *const hist_opts[] = { "breaks", "main", "xlab", "ylab", "col", "xlim", "ylim", "file", "width",
                                         "height", "plot", NULL };
static const char *const legend_opts[] = { "pos", "labels", "col", "lty", "pch", NULL };
static const char *const title_opts[] = { "main", "xlab", "ylab", NULL };
static const char *const none[] = { NULL };
static const Fn fns[] = {
  { "plot", 1, plot_opts }, { "lines", 1, lines_opts }, { "points", 1, points_opts }, { "hist", 1, hist_opts },
  { "legend", 0, legend_opts }, { "title", 0, title_opts }, { "dev.off", 0, none }, { "plot", 1, plot_opts },
};
#define N(a) (sizeof(a) / sizeof(a)[0])

typedef struct Gen { const uint8_t *p, *end; } Gen;
static unsigned next(Gen *g) { return g->p < g->end ? *g->p++ : 0; }

/* Any value: mostly of the kind the argument wants (k: 0 vector, 1 number, 2 string). */
static const char *value(Gen *g, int k) {
  unsigned b = next(g);
  int kind = b % 8 < 6 ? k : (int)(b % 4);
  unsigned c = next(g);
  switch (kind) {
  case 0: return vecs[c % N(vecs)];
  case 1: return nums[c % N(nums)];
  case 2: return strs[c % N(strs)];
  default: return others[c % N(others)];
  }
}

static int kind_of(const char *opt) {
  static const char *const vec_args[] = { "y", "xlim", "ylim", "breaks", "x", NULL };
  static const char *const str_args[] = { "type", "main", "xlab", "ylab", "col", "file", "pos", "labels", NULL };
  for (int i = 0; vec_args[i]; i++) if (!strcmp(opt, vec_args[i])) return 0;
  for (int i = 0; str_args[i]; i++) if (!strcmp(opt, str_args[i])) return 2;
  return 1;
}

static void put(char *buf, size_t cap, size_t *k, const char *s) {
  size_t n = strlen(s);
  if (*k + n + 1 >= cap) return;
  memcpy(buf + *k, s, n);
  *k += n;
  buf[*k] = '\0';
}

/* The program the bytes choose: up to 12 calls, one a line. */
static void program(const uint8_t *data, size_t size, char *buf, size_t cap) {
  Gen g = { data, data + size };
  size_t k = 0;
  buf[0] = '\0';
  int calls = 1 + (int)(next(&g) % 12);
  for (int c = 0; c < calls && g.p < g.end; c++) {
    const Fn *f = &fns[next(&g) % N(fns)];
    put(buf, cap, &k, f->name);
    put(buf, cap, &k, "(");
    int nargs = 0;
    if (f->npos && next(&g) % 16) { put(buf, cap, &k, value(&g, 0)); nargs++; }
    unsigned sizes = next(&g);
    bool small = (!strcmp(f->name, "plot") || !strcmp(f->name, "hist")) && sizes % 4;
    int nopt = 0;
    while (f->opts[nopt]) nopt++;
    int extra = nopt ? (int)(next(&g) % 5) : 0;
    unsigned used = 0;                           /* each name once */
    for (int i = 0; i < extra; i++) {
      unsigned j = next(&g) % (unsigned)nopt;
      const char *opt = f->opts[j];
      if ((used >> j) & 1) continue;
      used |= 1u << j;
      if (small && (!strcmp(opt, "width") || !strcmp(opt, "height"))) continue;
      if (nargs++) put(buf, cap, &k, ", ");
      put(buf, cap, &k, opt);
      put(buf, cap, &k, "=");
      put(buf, cap, &k, value(&g, kind_of(opt)));
    }
    if (small) put(buf, cap, &k, nargs ? ", width=120, height=100" : "width=120, height=100");
    put(buf, cap, &k, ")\n");
  }
}

static void need(int ok, const char *what, const char *prog, const char *err) {
  if (!ok) {
    fprintf(stderr, "fuzz_plot: %s\n--- program\n%s--- stderr\n%s\n", what, prog, err ? err : "");
    abort();
  }
}

static int shown;
static void on_display(Interp *I, const char *mime, const unsigned char *data, size_t len, void *ctx) {
  (void)I; (void)ctx;
  if (strcmp(mime, "image/png") != 0 || len < 8 || memcmp(data, "\x89PNG\r\n\x1a\n", 8) != 0) abort();
  shown++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  char prog[16384];
  program(data + 1, size - 1, prog, sizeof prog);
  if (getenv("FUZZ_PLOT_PRINT")) fprintf(stderr, "--- program\n%s", prog);   /* to replay a finding */
  char *ebuf = NULL;
  size_t elen = 0;
  FILE *ef = open_memstream(&ebuf, &elen);
  if (!ef) return 0;
  Interp *I = fuzz_interp(NULL, ef);
  if (data[0] % 8) I->display = on_display;    /* else: plots would be files, which no_write refuses */
  Source *src = source_new("plot.mls", prog, strlen(prog));
  int st = fuzz_run(I, src);
  source_release(src);
  plot_flush(I);                               /* renders what the program drew */
  fuzz_free(I);
  fclose(ef);
  need(st == 0 || st == 1, "a generated program does not parse", prog, ebuf);
  need(st == 0 || !strncmp(ebuf, "plot.mls:", 9) || strstr(ebuf, "interrupted"), "an error without a location", prog,
       ebuf);
  free(ebuf);
  return 0;
}
