/*
** gen_diff.c — generated programs (progen.c) run eagerly and in every staged and device mode,
** compared (gendiff.h). make test runs a fixed count from a fixed seed; campaigns run more.
**   gen_diff [--seed S] [--count N] [--from K] [--modes staged,jit,gpu-staged,gpu-jit,sparse]
**            [--keep-going] [--save DIR] [--show K] [--grad] [--wide] [--rect] [--edge] [--args] [--scope] [--lists] [--dml] [--frames] [--dim N] [--file PROG]
** Program k of seed S is the same on every machine. Exit status 1 when any mode differs.
** --grad writes progen_grad's programs instead: a gradient checked against finite differences
** (a line "FDMISMATCH" in the eager run's output counts as a difference), then the modes.
** --dim N writes progen_dim's programs: vectors of N and N x N matrices instead of 3.
** --wide adds the rest of the vocabulary (progen.c's wide_expr: log, asin, %/%, pmin, rowMaxs,
** cummax, inv, det, cholesky, eigen, ...) to either kind; --rect, n x m operands (m != n:
** products and their chains, t(X) %*% X, trace and diag of products, whose rewrites square
** operands never reorder); --edge, NaN, infinities, subnormals and empty matrices; --args,
** parameters with defaults and calls by name; --scope, closures (a factory's, one reading a name
** its function assigns later, jit of it), functions as arguments and recursion; --lists, a list
** of parameters (grad and jit over it, its items set), value_and_grad destructured, loops over
** lists.
** --file PROG runs that program instead, as program 0, in each mode: for reducing a generated
** program by hand.
*/
#include <inttypes.h>
#include <sys/stat.h>
#include "gendiff.h"
#include "progen.h"

/* the program being run, written out if it crashes the process (an internal assertion) */
static const char *volatile cur_prog;
static volatile size_t cur_len;
static volatile uint64_t cur_k;
static const char *volatile cur_save;

static void on_crash(int sig) {
  static const char msg[] = "gen_diff: crashed on this program:\n";
  if (write(2, msg, sizeof msg - 1) < 0) {}
  if (cur_prog && write(2, cur_prog, cur_len) < 0) {}
  if (cur_prog && cur_save) {
    char path[4096];
    snprintf(path, sizeof path, "%s/crash-%llu.mls", cur_save, (unsigned long long)cur_k);
    mkdir(cur_save, 0777);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) { if (write(fd, cur_prog, cur_len) < 0) {} close(fd); }
  }
  signal(sig, SIG_DFL);
  raise(sig);
}

/* The whole of the file at path (malloc'd, its length in *n), NULL when it cannot be read. */
static char *read_prog(const char *path, size_t *n) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  char *prog = NULL;
  FILE *mem = open_memstream(&prog, n);
  if (!mem) { fclose(fp); return NULL; }
  char buf[4096];
  for (size_t k; (k = fread(buf, 1, sizeof buf, fp)) > 0;) fwrite(buf, 1, k, mem);
  fclose(fp);
  fclose(mem);
  return prog;
}

static void usage(void) {
  fprintf(stderr, "usage: gen_diff [--seed S] [--count N] [--from K] [--modes LIST] [--keep-going] [--save DIR] [--show K] [--grad] [--wide] [--rect] [--edge] [--args] [--scope] [--lists] [--dml] [--frames] [--dim N] [--file PROG]\n");
  exit(2);
}

int main(int argc, char **argv) {
  uint64_t seed = 1, count = 1000, from = 0;
  int64_t show = -1;
  int dim = 3;
  const char *file = NULL;
  bool keep = false, grad = false;
  unsigned flags = 0;
  bool want[GD_NMODES] = { false, true, true, true, true, true };
  const char *save = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 < argc && !strcmp(a, "--seed")) seed = strtoull(argv[++i], NULL, 10);
    else if (i + 1 < argc && !strcmp(a, "--count")) count = strtoull(argv[++i], NULL, 10);
    else if (i + 1 < argc && !strcmp(a, "--from")) from = strtoull(argv[++i], NULL, 10);
    else if (i + 1 < argc && !strcmp(a, "--show")) show = strtoll(argv[++i], NULL, 10);
    else if (i + 1 < argc && !strcmp(a, "--save")) save = argv[++i];
    else if (!strcmp(a, "--keep-going")) keep = true;
    else if (!strcmp(a, "--grad")) grad = true;
    else if (!strcmp(a, "--wide")) flags |= PG_WIDE;
    else if (!strcmp(a, "--rect")) flags |= PG_RECT;
    else if (!strcmp(a, "--edge")) flags |= PG_EDGE;
    else if (!strcmp(a, "--args")) flags |= PG_ARGS;
    else if (!strcmp(a, "--scope")) flags |= PG_SCOPE;
    else if (!strcmp(a, "--lists")) flags |= PG_LISTS;
    else if (!strcmp(a, "--dml")) flags |= PG_DML;
    else if (!strcmp(a, "--frames")) flags |= PG_FRAMES;
    else if (i + 1 < argc && !strcmp(a, "--dim")) dim = atoi(argv[++i]);
    else if (i + 1 < argc && !strcmp(a, "--file")) file = argv[++i];
    else if (i + 1 < argc && !strcmp(a, "--modes")) {
      const char *m = argv[++i];
      for (int k = 1; k < GD_NMODES; k++) want[k] = false;
      want[GD_STAGED] = strstr(m, "staged") && (strstr(m, "staged") == m || strstr(m, ",staged"));
      want[GD_JIT] = strstr(m, "jit") && (strstr(m, "jit") == m || strstr(m, ",jit"));
      want[GD_GPU_STAGED] = strstr(m, "gpu-staged") != NULL;
      want[GD_GPU_JIT] = strstr(m, "gpu-jit") != NULL;
      want[GD_SPARSE] = strstr(m, "sparse") != NULL;
    } else usage();
  }
  if (show >= 0) {                           /* print program k and nothing else */
    Pick p;
    pick_seed(&p, seed * 1000003u + (uint64_t)show);
    size_t n;
    char *prog = grad ? progen_grad_dim(&p, &n, dim, flags) : progen_dim(&p, &n, dim, flags);
    if (!prog) return 2;
    fwrite(prog, 1, n, stdout);
    free(prog);
    return 0;
  }
  if (file) { from = 0; count = 1; }        /* the program of the file, as program 0 */
  uint64_t diffs = 0, errs = 0, limits = 0, ran = 0, fdbad = 0;
  static char altstack[1 << 16];             /* on_crash runs after a stack overflow too */
  stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
  sigaltstack(&ss, NULL);
  struct sigaction sa = { .sa_handler = on_crash, .sa_flags = SA_ONSTACK };
  sigemptyset(&sa.sa_mask);
  int sigs[] = { SIGABRT, SIGSEGV, SIGBUS, SIGFPE };
  for (int i = 0; i < 4; i++) sigaction(sigs[i], &sa, NULL);
  cur_save = save;
  for (uint64_t k = from; k < from + count; k++) {
    Pick p;
    pick_seed(&p, seed * 1000003u + k);
    size_t n;
    char *prog = file ? read_prog(file, &n) : grad ? progen_grad_dim(&p, &n, dim, flags) : progen_dim(&p, &n, dim, flags);
    if (!prog) { fprintf(stderr, "gen_diff: %s\n", file ? "cannot read the file" : "out of memory"); return 2; }
    cur_prog = prog;
    cur_len = n;
    cur_k = k;
    GdRun e;
    gd_run(prog, n, GD_EAGER, &e);
    ran++;
    if (e.status) errs++;
    if (gd_hit_limit(e.err)) limits++;
    if (grad && strstr(e.out, "FDMISMATCH")) {
      fdbad++;
      fprintf(stderr, "gen_diff: program %" PRIu64 " of seed %" PRIu64 ": the gradient and finite differences differ\n", k, seed);
      fprintf(stderr, "--- program\n%.*s--- eager (status %d)\n%s%s", (int)n, prog, e.status, e.out, e.err);
      if (!keep) { gd_free(&e); free(prog); goto end; }
    }
    for (int m = 1; m < GD_NMODES; m++) {
      if (!want[m]) continue;
      GdRun s;
      gd_run(prog, n, (GdMode)m, &s);
      if (!gd_same(&e, &s, (GdMode)m, prog)) {
        diffs++;
        fprintf(stderr, "gen_diff: program %" PRIu64 " of seed %" PRIu64 ": eager and %s differ\n", k, seed, gd_mode_name[m]);
        gd_report(stderr, prog, n, (GdMode)m, &e, &s);
        if (save) {
          mkdir(save, 0777);
          char path[4096];
          snprintf(path, sizeof path, "%s/diff-%" PRIu64 "-%" PRIu64 ".mls", save, seed, k);
          FILE *f = fopen(path, "w");
          if (f) { fwrite(prog, 1, n, f); fclose(f); }
        }
        gd_free(&s);
        if (!keep) { gd_free(&e); free(prog); goto end; }
        break;
      }
      gd_free(&s);
    }
    gd_free(&e);
    free(prog);
  }
end:
  printf("gen_diff: seed %" PRIu64 ", %" PRIu64 " programs (%" PRIu64 " ended in an error, %" PRIu64
         " reached a limit), %" PRIu64 " differ%s", seed, ran, errs, limits, diffs, diffs == 1 ? "s" : "");
  if (grad) printf(", %" PRIu64 " with a gradient unlike finite differences", fdbad);
  printf("\n");
  return diffs || fdbad ? 1 : 0;
}
