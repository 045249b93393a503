/*
** fuzz_eval.c — libFuzzer harness: parse and run any bytes as a script, under the limits of
** fuzz.h (64 MiB of matrices, 200 frames, a budget of steps, no file writes). Errors are fine;
** a crash, a sanitizer report, a leak or a hang is a bug.
*/
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 1 << 14) return 0;
  Interp *I = fuzz_interp(NULL, NULL);
  Source *src = source_new("fuzz.mls", (const char *)data, size);
  fuzz_run(I, src);
  source_release(src);
  fuzz_free(I);
  return 0;
}
