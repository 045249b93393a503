/*
** gendiff.h — runs one program in several modes and compares them with the eager CPU run
** (the differential check of gen_diff and fuzz_prog): stdout with numbers equal to 1e-12
** relative (testrun_same_up_to_rounding, as MLS_TEST_COMPARE), stderr and the status exactly.
** A run that hit a limit of fuzz.h (time, memory, depth, an interrupt) is not compared.
*/
#ifndef MLS_GENDIFF_H
#define MLS_GENDIFF_H

#include "../fuzz/fuzz.h"
#include "backend/backend.h"
#include "staging/graph.h"
#include "testrun.h"

typedef enum GdMode { GD_EAGER, GD_STAGED, GD_JIT, GD_GPU_STAGED, GD_GPU_JIT, GD_SPARSE, GD_NMODES } GdMode;
static const char *const gd_mode_name[GD_NMODES] = { "eager", "--staged", "--jit-all", "--device gpu --staged (simulated)",
                                                     "--device gpu --jit-all (simulated)", "--staged, every matrix sparse (exact kernels)" };

typedef struct GdRun { char *out, *err; size_t nout, nerr; int status; } GdRun;

/* Runs prog in mode m (the GPU modes on sim.c's simulated device, every graph that can be
** captured as one launch captured from its third run, as MLS_REPLAY=2). r's texts are owned
** by the caller (free). */
static void gd_run(const char *prog, size_t n, GdMode m, GdRun *r) {
  setenv("MLS_SIM_GPU", "1", 1);
  bool ongpu = m == GD_GPU_STAGED || m == GD_GPU_JIT;
  FILE *out = open_memstream(&r->out, &r->nout), *err = open_memstream(&r->err, &r->nerr);
  Interp *I = fuzz_interp(out, err);
  const Backend *gpu = ongpu ? be_find(I->backends, "gpu") : NULL;   /* this interpreter's simulated GPU */
  if (ongpu && !gpu) abort();
  I->device = ongpu ? gpu : I->cpu;
  I->staged_mode = m == GD_STAGED || m == GD_GPU_STAGED || m == GD_SPARSE;
  I->sparse_mode = m == GD_SPARSE ? SPARSE_EXACT : SPARSE_AUTO;   /* sparse wherever that keeps the bits */
  I->jit_all = m == GD_JIT || m == GD_GPU_JIT;
  I->print_digits = 17;
  I->exact_rewrites = true;          /* staged results are eager's bit for bit on the CPU */
  graph_replay_mode(I, 1 | 4);
  Source *src = source_new("gen.mls", prog, n);
  r->status = fuzz_run(I, src);
  source_release(src);
  fuzz_free(I);
  fclose(out);
  fclose(err);
}

static void gd_free(GdRun *r) {
  free(r->out);
  free(r->err);
}

static bool gd_hit_limit(const char *err) {
  return strstr(err, "error: interrupted") || strstr(err, "out of memory") || strstr(err, "out of GPU memory") ||
         strstr(err, "too deeply nested") || strstr(err, "stack overflow");
}

/* out without its storage lines, "[r x c sparse matrix, n nonzeros]" above a sparse matrix and
** "[r x c matrix]" below an elided dense one (malloc'd; NULL when out of memory): a staged graph
** may keep dense what the eager ops made sparse (matrix(0, ...) is stored sparse), or the other
** way, and the storage is not the value (docs/sparse.md, "The format rule"). Programs of n x n
** matrices from 32 x 32 on meet it (gen_diff --dim). */
static char *gd_values(const char *out) {
  size_t n = strlen(out);
  char *r = malloc(n + 1), *w = r;
  if (!r) return NULL;
  for (const char *l = out; *l;) {
    const char *e = strchr(l, '\n');
    size_t len = e ? (size_t)(e - l + 1) : strlen(l);
    long long rr, cc, nz;
    char tail[16];
    bool storage = l[0] == '[' && (sscanf(l, "[%lld x %lld sparse matrix, %lld nonzero%15[s]]", &rr, &cc, &nz, tail) >= 3 ||
                                   (sscanf(l, "[%lld x %lld matri%15[x]]", &rr, &cc, tail) == 3 && memchr(l, ']', len)));
    if (!storage) { memcpy(w, l, len); w += len; }
    l += len;
  }
  *w = 0;
  return r;
}

/* Do runs a (eager) and b (mode m) of program prog agree? Runs that reached a limit count as
** agreeing. On the CPU, with the rewrites that change last bits left out (exact_rewrites),
** staged code gives eager's bits, so the outputs must be the same text: a rounding difference
** that a program amplifies (x %% y, floor, a comparison) cannot pass as a wrong result or
** hide one. (The sparse mode keeps a matrix sparse only through the kernels that give the dense
** bits, SPARSE_EXACT: its output must be eager's text too.) Two exceptions compare numbers to
** 1e-12 relative: the simulated GPU, whose linear algebra differs in the last bits (inv is
** getrf + getrs), and a program calling grad, whose
** adjoints through a graph may be summed in another order (CSE makes one node of equal ones,
** and its adjoint is then the sum of their uses' adjoints: 9 * g where eager adds g nine
** times). The storage lines of printed matrices are left out of both (gd_values). */
static bool gd_same(const GdRun *a, const GdRun *b, GdMode m, const char *prog) {
  if (gd_hit_limit(a->err) || gd_hit_limit(b->err)) return true;
  if (a->status != b->status || strcmp(a->err, b->err) != 0) return false;
  char *va = gd_values(a->out), *vb = gd_values(b->out);
  if (!va || !vb) abort();
  bool same = (m == GD_STAGED || m == GD_JIT || m == GD_SPARSE) && !strstr(prog, "grad(") ? strcmp(va, vb) == 0
                                                                                           : testrun_same_up_to_rounding(va, vb);
  free(va);
  free(vb);
  return same;
}

static void gd_report(FILE *f, const char *prog, size_t n, GdMode m, const GdRun *e, const GdRun *s) {
  fprintf(f, "--- program\n%.*s--- eager (status %d)\n%s%s--- %s (status %d)\n%s%s", (int)n, prog, e->status, e->out,
          e->err, gd_mode_name[m], s->status, s->out, s->err);
}

#endif
