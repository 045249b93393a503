/*
** fuzz_prog.c — libFuzzer harness over the program generator (tests/gen/progen.c): the input
** bytes choose the grammar's productions (structure-aware: every input is a whole program of
** loops, ifs, left-indexed and masked assignments, functions, grad and jit), and the program
** runs eagerly, --staged, --jit-all and staged on the simulated GPU, compared as gen_diff
** compares them (tests/gen/gendiff.h). docs/robustness.md, "Generated programs".
*/
#define FUZZ_FUEL 5000
#define FUZZ_MAX_MEMORY ((uint64_t)16 << 20)
#include "../gen/gendiff.h"
#include "../gen/progen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  Pick p;
  pick_bytes(&p, data, size);
  size_t n;
  char *prog = progen(&p, &n);
  if (!prog) return 0;
  GdRun e;
  gd_run(prog, n, GD_EAGER, &e);
  for (int m = 1; m < GD_NMODES; m++) {
    GdRun s;
    gd_run(prog, n, (GdMode)m, &s);
    if (!gd_same(&e, &s, (GdMode)m, prog)) {
      fprintf(stderr, "fuzz_prog: eager and %s differ\n", gd_mode_name[m]);
      gd_report(stderr, prog, n, (GdMode)m, &e, &s);
      abort();
    }
    gd_free(&s);
  }
  gd_free(&e);
  free(prog);
  return 0;
}
