/*
** capture.h — for the unit tests: run MLS code on an interpreter with its standard output
** and error captured in memory. *out and *err are replaced (the old buffers freed).
*/
#ifndef MLS_TEST_CAPTURE_H
#define MLS_TEST_CAPTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diag.h"
#include "interp/interp.h"

static inline int run_captured(Interp *I, const char *code, bool echo, char **out, size_t *nout, char **err, size_t *nerr) {
  free(*out);
  free(*err);
  *out = *err = NULL;
  I->out = open_memstream(out, nout);
  I->errf = open_memstream(err, nerr);
  Source *src = source_new("t.mls", code, strlen(code));
  int st = interp_run_source(I, src, echo);
  source_release(src);
  fclose(I->out);
  fclose(I->errf);
  I->out = stdout;
  I->errf = stderr;
  return st;
}

/* The fixture most unit tests share: a fresh interpreter per test, its output captured per
** run into out and err (cmocka's setup and teardown). */
typedef struct Fix {
  Interp *I;
  char *out, *err;
  size_t nout, nerr;
} Fix;

static inline int fix_setup(void **state) {
  Fix *f = calloc(1, sizeof *f);
  if (!f) return -1;
  f->I = interp_new();
  *state = f;
  return 0;
}

static inline int fix_teardown(void **state) {
  Fix *f = *state;
  interp_free(f->I);
  free(f->out);
  free(f->err);
  free(f);
  return 0;
}

/* err's first report line "t.mls:L:C: error: MSG" carries exactly msg (needs cmocka.h). */
static inline void assert_error_message(const char *code, const char *err, const char *msg) {
  const char *p = strstr(err, ": error: ");
  if (!p) print_error("'%s': no error report in: %s\n", code, err);
  assert_non_null(p);
  p += strlen(": error: ");
  size_t n = strcspn(p, "\n");
  if (strlen(msg) != n || strncmp(p, msg, n) != 0) print_error("'%s': got error: %.*s\n", code, (int)n, p);
  assert_int_equal(n, strlen(msg));
  assert_memory_equal(p, msg, n);
}

#endif
