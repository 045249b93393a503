/*
** fuzz.h — what the libFuzzer harnesses share (docs/robustness.md, "Fuzzing"): an interpreter
** with limits, so that a fuzzed program can neither take the machine nor write files.
*/
#ifndef MLS_FUZZ_H
#define MLS_FUZZ_H

#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>
#include "backend/backend.h"
#include "interp/interp.h"
#include "mem.h"
#include "parse.h"

#ifndef MLS_FUZZ_STDLIB
#define MLS_FUZZ_STDLIB "stdlib"
#endif

#ifndef FUZZ_MAX_MEMORY
#define FUZZ_MAX_MEMORY ((uint64_t)64 << 20)   /* matrix data live at once */
#endif
#define FUZZ_MAX_FRAMES 200                    /* calls and sources */
#ifndef FUZZ_FUEL
#define FUZZ_FUEL 20000                        /* loop iterations and calls (about 50 ms), then
                                               ** the run is interrupted as by Ctrl-C: at the
                                               ** same place every time, so a fixed -seed and
                                               ** -runs repeat a campaign (make fuzz-smoke) */
#endif
#define FUZZ_CPU_MS 400                        /* the same, for long builtins: a backstop */

static Interp *volatile fuzz_running;           /* the interpreter the timer interrupts */
static FILE *fuzz_null;
static size_t fuzz_stack;                       /* the thread's stack budget, asked once (interp.h) */
static void *fuzz_spare;                        /* Lemon's parser, handed from one input's interpreter
                                               ** to the next (parse.h): about 600 KB, which ASan
                                               ** would map and poison anew for every input */

static void fuzz_on_timer(int sig) {
  Interp *I = fuzz_running;
  if (I) I->interrupted = SIGINT;
  (void)sig;
}

/* Once per process: output to /dev/null, standard input empty, the timer. */
static void fuzz_init(void) {
  if (fuzz_null) return;
  fuzz_null = fopen("/dev/null", "w");
  int fd = open("/dev/null", O_RDONLY);
  if (fd >= 0) { dup2(fd, 0); close(fd); }
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fuzz_on_timer;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGVTALRM, &sa, NULL);
}

/* A fresh interpreter with the harness's limits; its output goes to out (NULL: /dev/null). */
static Interp *fuzz_interp(FILE *out, FILE *err) {
  fuzz_init();
  Interp *I = interp_new();
  I->out = out ? out : fuzz_null;
  I->errf = err ? err : fuzz_null;
  I->stdlib_dir = MLS_FUZZ_STDLIB;
  I->seed = 42;
  I->seed_set = true;
  I->maxframes = FUZZ_MAX_FRAMES;
  mem_set_limit(FUZZ_MAX_MEMORY);
  I->no_write = true;
  I->threads = 1;
  I->cpu->set_threads(I->cpu, 1);               /* one BLAS thread, one of the CPU instance's own */
  if (!fuzz_stack) fuzz_stack = interp_thread_stack_budget();   /* every input on the same thread */
  I->stack_found = fuzz_stack;
  I->stack_thread = pthread_self();
  I->spare_parser = fuzz_spare;
  fuzz_spare = NULL;
  const char *gc = getenv("MLS_GC_MIN");   /* default 0: the cycle collector runs at every call's */
  gc_set_min(I, gc && *gc ? strtoll(gc, NULL, 10) : 0);  /* return, so that its bugs show at once */
  return I;
}

/* Frees an interpreter of fuzz_interp, keeping its parser for the next one. */
static inline void fuzz_free(Interp *I) {
  if (!fuzz_spare) {
    fuzz_spare = I->spare_parser;
    I->spare_parser = NULL;
  }
  interp_free(I);
}

/* Runs src under the CPU-time budget; the exit status as mls would give it. */
static inline int fuzz_run(Interp *I, Source *src) {
  struct itimerval on = { { 0, 0 }, { FUZZ_CPU_MS / 1000, (FUZZ_CPU_MS % 1000) * 1000 } }, off;
  memset(&off, 0, sizeof off);
  fuzz_running = I;
  I->fuel = FUZZ_FUEL;
  setitimer(ITIMER_VIRTUAL, &on, NULL);
  int st = interp_run_source(I, src, false);
  setitimer(ITIMER_VIRTUAL, &off, NULL);
  fuzz_running = NULL;
  return st;
}

#endif
