/*
** fuzz_diff.c — libFuzzer differential harness: the same program run eagerly and with
** --staged (each straight-line block traced, optimized and run as a graph) must print the
** same output, numbers equal to a relative 1e-12 (as MLS_TEST_COMPARE in src/testrun.c), and
** end with the same status and the same error. A run that hit a limit of fuzz.h (time,
** memory, depth) is not compared: the two modes may reach a limit at different points; nor is a
** program that reads the clock (time, system.time), nor one calling gradcheck: its result is
** the rounding error of finite differences, f's last bits divided by the step, so a last-bit
** difference in f (the GPU's inv is getrf + getrs where the CPU's is getri) shows at 1e-3.
** Built with FUZZ_DIFF_GPU it is fuzz_gpu: the staged run is on the simulated GPU (sim.c, the
** device paths of the interpreter: uploads, device results, fused groups, and every graph
** captured as one launch from its third run, as MLS_REPLAY=2), against the eager CPU run; a
** program that names a device (device, gpu, cpu) is skipped.
*/
#define FUZZ_FUEL 5000   /* a run that reaches the budget is not compared: a smaller one wastes less */
#define FUZZ_MAX_MEMORY ((uint64_t)16 << 20)   /* large matrices find no more differences and cost a
                                               ** third of each run under ASan (mmap, page faults) */
#include "fuzz.h"
#include "testrun.h"
#ifdef FUZZ_DIFF_GPU
#include "backend/backend.h"
#include "staging/graph.h"
#define SECOND "staged on the simulated GPU"
#else
#define SECOND "--staged"
#endif

typedef struct Run { char *out, *err; size_t nout, nerr; int status; } Run;

static void run_mode(const uint8_t *data, size_t size, bool staged, Run *r) {
#ifdef FUZZ_DIFF_GPU
  setenv("MLS_SIM_GPU", "1", 1);
#endif
  FILE *out = open_memstream(&r->out, &r->nout), *err = open_memstream(&r->err, &r->nerr);
  Interp *I = fuzz_interp(out, err);
#ifdef FUZZ_DIFF_GPU
  const Backend *gpu = be_find(I->backends, "gpu");   /* this interpreter's simulated GPU */
  if (!gpu) abort();
  I->device = staged ? gpu : I->cpu;
#endif
  I->staged_mode = staged;
  I->print_digits = 17;
#ifdef FUZZ_DIFF_GPU
  graph_replay_mode(I, 1 | 4);                 /* capture whatever can be, as MLS_REPLAY=2 */
#endif
  Source *src = source_new("fuzz.mls", (const char *)data, size);
  r->status = fuzz_run(I, src);
  source_release(src);
  fuzz_free(I);
  fclose(out);
  fclose(err);
}

static bool hit_limit(const char *err) {
  return strstr(err, "error: interrupted") || strstr(err, "out of memory") || strstr(err, "out of GPU memory") || strstr(err, "too deeply nested") ||
         strstr(err, "stack overflow");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 13 || memchr(data, 0, size)) return 0;
  if (memmem(data, size, "time", 4)) return 0;     /* time(), system.time(): the clock differs between runs */
  if (memmem(data, size, "gradcheck", 9)) return 0; /* a measure of rounding error (above) */
#ifdef FUZZ_DIFF_GPU
  if (memmem(data, size, "device", 6) || memmem(data, size, "gpu", 3) || memmem(data, size, "cpu", 3)) return 0;
#endif
  Run e, s;
  run_mode(data, size, false, &e);
  run_mode(data, size, true, &s);
  bool same = e.status == s.status && strcmp(e.err, s.err) == 0 && testrun_same_up_to_rounding(e.out, s.out);
  if (!same && !hit_limit(e.err) && !hit_limit(s.err)) {
    fprintf(stderr, "fuzz_diff: eager and " SECOND " differ\n--- program\n%.*s\n--- eager (status %d)\n%s%s"
            "--- " SECOND " (status %d)\n%s%s", (int)size, (const char *)data, e.status, e.out, e.err, s.status, s.out, s.err);
    abort();
  }
  free(e.out);
  free(e.err);
  free(s.out);
  free(s.err);
  return 0;
}
