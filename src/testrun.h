/*
** testrun.h — `mls --run-tests FILE...`: the golden-file suite runner (jq's --run-tests).
*/
#ifndef MLS_TESTRUN_H
#define MLS_TESTRUN_H

/* Runs every case of the files; prints failures and "N passed, N failed"; 0 when all pass. */
int testrun_main(int nfiles, char **files);

#endif
