/*
** testrun.h — `mls --run-tests FILE...`: the golden-file suite runner (jq's --run-tests).
*/
#ifndef MLS_TESTRUN_H
#define MLS_TESTRUN_H

#include <stdbool.h>

/* Runs every case of the files; prints failures and "N passed, N failed"; 0 when all pass. */
int testrun_main(int nfiles, char **files);
/* True when two outputs agree up to numbers within a relative 1e-12 and the widths of runs of
** spaces (MLS_TEST_COMPARE, and the differential fuzzing harness tests/fuzz/fuzz_diff.c). */
bool testrun_same_up_to_rounding(const char *a, const char *b);

#endif
