/*
** main.c — the command line (LANGUAGE.md §1): a script, -e code, - for standard input, or the
** REPL. The interpreter runs on a thread with a large stack so deep recursion reaches the
** frame limit (a clean "stack overflow" error) long before the C stack runs out.
*/
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "backend/backend.h"
#include "backend/dynlibs.h"
#include "builtins.h"
#include "check/check.h"
#include "interp/interp.h"
#include "kernel/kernel.h"
#include "mem.h"
#include "mpi/mpi.h"
#include "ops/linalg.h"
#include "plot/plot.h"
#include "repl.h"
#include "testrun.h"

static const char usage[] =
  "usage: mls [options] [script.mls | -e code | -] [-nvargs k=v ...] [-args a b ...]\n"
  "  (no script: the interactive REPL; standard input that is not a terminal runs as a script)\n"
  "options:\n"
  "  -e code          run code; several -e run in order, as one program (as Rscript)\n"
  "  -                read the program from standard input\n"
  "  --seed N         seed rand() and friends for reproducible runs\n"
  "  --threads N      threads for matrix kernels (OpenBLAS and large elementwise loops)\n"
  "  --device cpu|gpu where new matrices live (gpu needs a CUDA build)\n"
  "  --staged         run each straight-line block of the script staged: traced on its first\n"
  "                   run, optimized, and run as a graph when a loop runs it again\n"
  "  --explain        --staged, printing each block's graph before and after optimization\n"
  "  --jit-all        run every user function as jit(f) would (a test aid)\n"
  "  --sparse auto|never|always  how matrices are stored (docs/sparse.md): auto (the default)\n"
  "                   keeps a matrix sparse when at most 10% of 1024 or more cells are\n"
  "                   nonzero; never keeps every matrix dense; always keeps sparse every\n"
  "                   matrix an op can (a test aid: the values and output do not change)\n"
  "  --log-compiles   print each jit trace and cache drop with its reason (MLS_LOG_COMPILES=1)\n"
  "  --digits N       significant digits print() and the REPL show (default 7, as R's\n"
  "                   options(digits)); print(x, digits) still chooses per call\n"
  "  --max-memory SIZE  memory in use at once (matrices, strings, workspace), e.g. 500M or\n"
  "                   2G (K, M, G, T: powers of 1024); more is a located 'out of memory'\n"
  "                   error (default: the machine's physical memory); it also bounds the\n"
  "                   whole process (RLIMIT_DATA, with room for code, stacks, BLAS buffers)\n"
  "  --max-depth N    nested function calls and source() files (default 20000); one more\n"
  "                   is a located 'stack overflow' error\n"
  "  --mpi-timeout S  under mpirun: a collective waits at most S seconds for the other ranks,\n"
  "                   then a located error names the ranks missing and the job ends\n"
  "                   (default: $MLS_MPI_TIMEOUT, else no limit)\n"
  "  --check          analyze the script's shapes without running anything: a certain shape\n"
  "                   error (a non-conformable product, an index out of bounds, ...) is\n"
  "                   reported located as the run would report it, exit status 1; a script\n"
  "                   that checks clean prints nothing, exit status 0 (docs/check.md)\n"
  "  --dml-builtins DIR  SystemDS's scripts/builtin directory: a call of a function found\n"
  "                   nowhere else runs m_NAME of DIR/NAME.dml, loaded once (docs/dml.md;\n"
  "                   default: $MLS_DML_BUILTINS)\n"
  "  --nan-check      stop at the first operation, forward or backward, that turns finite\n"
  "                   inputs into NaN/Inf, naming its source location\n"
  "  --run-tests F... run golden test files (tests/lang/*.test)\n"
  "  --jupyter-kernel CONNECTION_FILE  serve as a Jupyter kernel (docs/jupyter.md); with:\n"
  "    --max-message-size SIZE  the largest message frame a peer may send (default 256M;\n"
  "                   a larger one disconnects it before it is held in memory)\n"
  "    --allow-no-key run although the connection file has no key (messages unsigned)\n"
  "  --builtins-md    print the builtin reference as Markdown (docs/builtins.md)\n"
  "  --version        print the version\n"
  "  --help           print this help\n";

/* la_busy: an interrupted LAPACK call's worker still ran when the interpreter was freed
** (builtins.h): main() then ends the process without the library destructors. */
typedef struct Job { int argc; char **argv; int status; bool la_busy; } Job;

static int usage_error(const char *msg, const char *arg) {
  fprintf(stderr, "mls: %s%s%s\n%s", msg, arg ? " " : "", arg ? arg : "", usage);
  return 2;
}

static void builtins_md(void) {
  printf("# Builtins\n\nThe reference of every builtin function of MLS: a table of each one's signature and summary,\n"
         "then under \"Details\" its full help text. Generated from the builtin\n"
         "table by `mls --builtins-md`; `help(\"name\")` shows the same text.\n\n");
  printf("| name | signature | summary |\n|---|---|---|\n");
  for (int i = 0; i < builtin_count; i++) {
    const Builtin *b = &builtin_table[i];
    const char *nl = strchr(b->doc, '\n');
    printf("| `%s` | `%s` | %.*s |\n", b->name, b->sig, nl ? (int)(nl - b->doc) : (int)strlen(b->doc), b->doc);
  }
  printf("\n## Details\n\n");
  for (int i = 0; i < builtin_count; i++) {
    const Builtin *b = &builtin_table[i];
    printf("### %s\n\n`%s`\n\n%s\n\n", b->name, b->sig, b->doc);
  }
}

/* A number of seconds, 0 to a year (0: no limit). */
static bool parse_seconds(const char *v, double *out) {
  char *end;
  double s = strtod(v, &end);
  if (end == v || *end || !(s >= 0 && s <= 31536000)) return false;
  *out = s;
  return true;
}

/* The options that set up the run (before or after the script name): 1 when argv[*i] was one
** (with its value consumed), 0 when it is not an option of this kind, else an exit status. */
static int run_option(Interp *I, int argc, char **argv, int *i) {
  const char *a = argv[*i];
  if (!strcmp(a, "--seed") || !strcmp(a, "--threads") || !strcmp(a, "--device") || !strcmp(a, "--digits")) {
    if (++*i >= argc) return usage_error(a, "needs a value");
    const char *v = argv[*i];
    if (!strcmp(a, "--device")) {
      if (strcmp(v, "cpu") && strcmp(v, "gpu")) return usage_error("--device takes cpu or gpu, got", v);
      const Backend *be = be_find(I->backends, v);
      if (!be) { fprintf(stderr, "mls: %s\n", be_why(I->backends)); return 2; }
      I->device = be;
      return 1;
    }
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || end == v || n < 0) return usage_error(a, "needs a non-negative whole number");
    if (!strcmp(a, "--digits")) {
      if (n < 1 || n > 22) return usage_error(a, "takes 1 to 22");
      I->print_digits = (int)n;
    } else if (!strcmp(a, "--seed")) { I->seed = (uint64_t)n; I->seed_set = true; }
    else { I->threads = (int)n; if (n > 0) I->cpu->set_threads(I->cpu, (int)n); }
    return 1;
  }
  if (!strcmp(a, "--sparse")) {
    if (++*i >= argc) return usage_error(a, "needs a value");
    const char *v = argv[*i];
    if (!strcmp(v, "auto")) I->sparse_mode = SPARSE_AUTO;
    else if (!strcmp(v, "never")) I->sparse_mode = SPARSE_NEVER;
    else if (!strcmp(v, "always")) I->sparse_mode = SPARSE_ALWAYS;
    else return usage_error("--sparse takes auto, never or always, got", v);
    return 1;
  }
  if (!strcmp(a, "--max-memory") || !strcmp(a, "--max-depth")) {
    if (++*i >= argc) return usage_error(a, "needs a value");
    const char *v = argv[*i];
    if (!strcmp(a, "--max-memory")) {
      uint64_t bytes;
      if (!mem_parse_size(v, &bytes)) return usage_error("--max-memory takes a size such as 500M or 2G, got", v);
      mem_set_limit(bytes);
      return 1;
    }
    char *end;
    long long n = strtoll(v, &end, 10);
    if (*end || end == v || n < 1 || n > 1000000)
      return usage_error("--max-depth takes a whole number from 1 to 1000000, got", v);
    I->maxframes = (int)n;
    return 1;
  }
  if (!strcmp(a, "--mpi-timeout")) {
    if (++*i >= argc) return usage_error(a, "needs a value");
    double s;
    if (!parse_seconds(argv[*i], &s)) return usage_error("--mpi-timeout takes a number of seconds >= 0, got", argv[*i]);
    mpi_set_timeout(I, s);
    return 1;
  }
  if (!strcmp(a, "--dml-builtins")) {
    if (++*i >= argc) return usage_error(a, "needs a value");
    struct stat st;
    if (stat(argv[*i], &st) != 0 || !S_ISDIR(st.st_mode) || access(argv[*i], R_OK | X_OK) != 0)
      return usage_error("--dml-builtins takes a readable directory, got", argv[*i]);
    I->dml_builtins_dir = argv[*i];
    return 1;
  }
  if (!strcmp(a, "--nan-check")) { I->nan_check = true; return 1; }
  if (!strcmp(a, "--staged")) { I->staged_mode = true; return 1; }
  if (!strcmp(a, "--explain")) { I->staged_mode = true; I->explain_staged = true; return 1; }
  if (!strcmp(a, "--jit-all")) { I->jit_all = true; return 1; }
  if (!strcmp(a, "--log-compiles")) { I->log_compiles = true; return 1; }
  return 0;
}

/* --max-message-size SIZE and --allow-no-key, the options of --jupyter-kernel: 1 when argv[*i]
** was one (its value consumed), 0 when not, else an exit status. */
static int kernel_option(int argc, char **argv, int *i, KernelOptions *ko) {
  const char *a = argv[*i];
  if (!strcmp(a, "--allow-no-key")) { ko->allow_no_key = true; return 1; }
  if (strcmp(a, "--max-message-size") != 0) return 0;
  if (++*i >= argc) return usage_error(a, "needs a value");
  uint64_t b;
  if (!mem_parse_size(argv[*i], &b) || b < 1024 || b > ((uint64_t)1 << 62))
    return usage_error("--max-message-size takes a size of at least 1K such as 64M or 1G, got", argv[*i]);
  ko->max_message = (int64_t)b;
  return 1;
}

/* A script's SIGINT and SIGTERM only set the interpreter's flag: the evaluator, builtins,
** kernels, readers and writers poll it and raise a located "interrupted" error, so a write in
** progress drops its temporary file; the exit status is then 128 + the signal, as a shell
** reports, however the run ended (a signal is never lost: docs/robustness.md). A second
** SIGINT once the first is pending (a loop that never polls) ends the process at once. */
static Interp *signal_interp;
static volatile sig_atomic_t signal_got;

static void on_script_signal(int sig) {
  Interp *I = signal_interp;
  if (sig == SIGINT && I->interrupted) { signal(SIGINT, SIG_DFL); raise(SIGINT); return; }
  signal_got = sig;
  I->interrupted = sig;
}

/* Once the interpreter is being freed, a signal is only recorded (for the exit status). */
static void on_late_signal(int sig) { if (!signal_got) signal_got = sig; }

static void script_signals(Interp *I, void (*handler)(int)) {
  signal_interp = I;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
}

static int run_main(int argc, char **argv, bool *la_busy_out) {
  const char *script = NULL, *code = NULL;
  char *codes = NULL;                /* several -e: their code joined by newlines (owned) */
  bool from_stdin = false, check = false;         /* --check: analyze, run nothing (src/check/) */
  /* stdout to a file or a pipe is line-buffered, as on a terminal: `mls train.mls | tee log`
  ** shows each line when it is printed, not when a 4 KiB buffer fills (docs/repl.md) */
  if (!isatty(1)) setvbuf(stdout, NULL, _IOLBF, 0);
  Interp *I = interp_new();
  int i = 1, status = 0;
  KernelOptions ko;
  kernel_options_default(&ko);
  const char *kernel_opt = NULL;                   /* a kernel option given (an error without the kernel) */
  const char *fail = getenv("MLS_FAIL_ALLOC");     /* allocation-failure injection (mem.h) */
  if (fail && *fail) mem_fail_at(strtoull(fail, NULL, 10));
  const char *gcmin = getenv("MLS_GC_MIN");        /* cycle collections after this many new objects (gc.c) */
  if (gcmin && *gcmin) gc_set_min(I, strtoll(gcmin, NULL, 10));
  const char *mpit = getenv("MLS_MPI_TIMEOUT");    /* the default of --mpi-timeout */
  double secs;
  if (mpit && *mpit) {
    if (!parse_seconds(mpit, &secs)) {
      fprintf(stderr, "mls: MLS_MPI_TIMEOUT must be a number of seconds >= 0, got '%s'\n", mpit);
      interp_free(I);
      return 2;
    }
    mpi_set_timeout(I, secs);
  }
  for (; i < argc; i++) {
    const char *a = argv[i];
    if (!strcmp(a, "--version")) {
      const Backend *be = I->device;
      printf("mls %s\n%s backend: %s\n", MLS_VERSION, be->name, be->describe ? be->describe(be) : be->name);
      interp_free(I);
      return 0;
    }
    if (!strcmp(a, "--help") || !strcmp(a, "-h")) { fputs(usage, stdout); interp_free(I); return 0; }
    if (!strcmp(a, "--builtins-md")) { builtins_md(); interp_free(I); return 0; }
    if (!strcmp(a, "--run-tests")) { interp_free(I); return testrun_main(argc - i - 1, argv + i + 1); }
    if (!strcmp(a, "--jupyter-kernel")) {
      if (++i >= argc) { interp_free(I); return usage_error("--jupyter-kernel needs a connection file", NULL); }
      const char *conn = argv[i];
      for (i++; i < argc; i++) {                   /* options may follow the connection file */
        int st = kernel_option(argc, argv, &i, &ko);
        if (st == 0) st = run_option(I, argc, argv, &i);
        if (st == 1) continue;
        interp_free(I);
        return st >= 2 ? st : usage_error("unexpected argument after --jupyter-kernel FILE:", argv[i]);
      }
      status = kernel_main(I, conn, &ko);
      *la_busy_out = la_busy(I);
      interp_free(I);
      return status;
    }
    int kst = kernel_option(argc, argv, &i, &ko);
    if (kst >= 2) { interp_free(I); return kst; }
    if (kst == 1) { kernel_opt = a; continue; }
    if (!strcmp(a, "-e")) {
      if (++i >= argc) { interp_free(I); return usage_error("-e needs code", NULL); }
      code = argv[i];
      i++;
      break;                                   /* (later -e options: below) */
    }
    if (!strcmp(a, "-")) { from_stdin = true; i++; break; }
    if (!strcmp(a, "--check")) { check = true; continue; }
    int st = run_option(I, argc, argv, &i);
    if (st == 1) continue;
    if (st >= 2) { interp_free(I); return st; }
    if (a[0] == '-' && a[1]) { interp_free(I); return usage_error("unknown option", a); }
    script = a;
    i++;
    break;
  }
  if (kernel_opt) { interp_free(I); return usage_error("this option needs --jupyter-kernel:", kernel_opt); }
  /* -nvargs k=v ... and -args a b ... */
  int nargs_pos = 0;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "-nvargs")) {
      for (i++; i < argc && strcmp(argv[i], "-args"); i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq || eq == argv[i]) { interp_free(I); return usage_error("-nvargs takes name=value, got", argv[i]); }
        char name[256];
        snprintf(name, sizeof name, "%.*s", (int)(eq - argv[i]), argv[i]);
        interp_set_param(I, name, eq + 1);
      }
      i--;
    } else if (!strcmp(argv[i], "-args")) {
      for (i++; i < argc && strcmp(argv[i], "-nvargs"); i++) {
        char name[32];
        snprintf(name, sizeof name, "%d", ++nargs_pos);
        interp_set_param(I, name, argv[i]);
      }
      i--;
    } else if (!strcmp(argv[i], "--check")) {
      check = true;
    } else if (!strcmp(argv[i], "-e") && code) {  /* another -e: appended on a line of its own */
      if (++i >= argc) { free(codes); interp_free(I); return usage_error("-e needs code", NULL); }
      size_t a = strlen(code), b = strlen(argv[i]);
      char *j = malloc(a + b + 2);
      if (!j) { free(codes); interp_free(I); return usage_error("out of memory joining -e code", NULL); }
      memcpy(j, code, a);
      j[a] = '\n';
      memcpy(j + a + 1, argv[i], b + 1);
      free(codes);
      code = codes = j;
    } else {
      int st = argv[i][0] == '-' ? run_option(I, argc, argv, &i) : 0;
      if (st == 1) continue;
      free(codes);
      interp_free(I);
      return st >= 2 ? st : usage_error("unexpected argument (use -nvargs k=v or -args a b):", argv[i]);
    }
  }
  /* --max-memory also bounds the whole process (mem.h, docs/robustness.md "Memory"); not on a
  ** GPU, whose driver reserves more than any such bound allows (registry.c lifts it there) */
  uint64_t bound = 0;
  if (mem_limit_is_set() && I->device == I->cpu) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);                    /* OpenBLAS's default pool */
    dl_blas();       /* OpenBLAS, loaded on first use (backend/dynlibs.h): its data and threads'
                     ** stacks are in what the bound starts from, as when it was linked */
    bound = mem_bound_process(mem_limit(), I->threads > 0 ? I->threads : cpus > 0 ? (int)cpus : 1);
  }
  Source *src = NULL;
  if (code) {
    src = source_new("-e", code, strlen(code));
    free(codes);
    codes = NULL;
  } else if (script) {
    src = source_from_file(script, NULL);
    if (!src) {
      fprintf(stderr, "mls: cannot open '%s': %s\n", script, source_error());
      interp_free(I);
      return 2;
    }
  } else if (from_stdin || !isatty(0)) {
    src = source_from_file("/dev/stdin", "<stdin>");
    if (!src) { fprintf(stderr, "mls: cannot read standard input\n"); interp_free(I); return 2; }
  }
  if (check && !src) { interp_free(I); return usage_error("--check needs a script, -e code or -", NULL); }
  if (check) {
    status = check_program(I, src);
    source_release(src);
  } else if (src) {
    script_signals(I, on_script_signal);
    status = mpi_run_script(I, src, code != NULL);   /* -e shows values, as Rscript -e; under mpirun "rank R: " errors end the job */
    source_release(src);
    if (signal_got) I->interrupted = signal_got;   /* (the run cleared it) the figure is not drawn */
    plot_free(I);                                  /* the last figure's file: interrupted, the old one stays */
    script_signals(I, on_late_signal);
  } else {
    status = repl_run(I);
  }
  fflush(stdout);
  *la_busy_out = la_busy(I);
  interp_free(I);
  const char *report = getenv("MLS_MEM_REPORT");    /* the peaks, for tests/robustness/test_limits.sh */
  if (report && *report && strcmp(report, "0") != 0)
    fprintf(stderr, "mls: memory: VmHWM %llu KiB, counted peak %llu KiB, limit %llu KiB, process bound %llu KiB\n",
            (unsigned long long)(mem_peak_rss() >> 10), (unsigned long long)(mem_stats.counted_peak >> 10),
            (unsigned long long)(mem_limit_is_set() ? mem_limit() >> 10 : 0), (unsigned long long)(bound >> 10));
  return status;
}

static void *thread_main(void *p) {
  Job *j = p;
  j->status = run_main(j->argc, j->argv, &j->la_busy);
  return NULL;
}

int main(int argc, char **argv) {
  mem_tune_malloc();                                     /* before any thread's arena */
  /* OpenBLAS's idle workers spin (sched_yield) for 2^28 cycles after each call, about 0.1 s,
  ** on the cores MLS's own kernels (cpu_par.c) then want: a staged loop that mixes a GEMM with
  ** sparse or elementwise kernels lost its second core to them (docs/architecture.md). 2^4:
  ** they sleep at once (no slower for back-to-back products here); a value the user set stays. */
  setenv("OPENBLAS_THREAD_TIMEOUT", "4", 0);
  mpi_start(&argc, &argv);                               /* only under mpirun (src/mpi/) */
  Job j = { argc, argv, 0, false };
  pthread_attr_t attr;
  pthread_t th;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, (size_t)1 << 30);     /* 1 GiB, reserved lazily */
  if (pthread_create(&th, &attr, thread_main, &j) != 0) {
    j.status = run_main(argc, argv, &j.la_busy);         /* fall back to the main stack */
  } else {
    pthread_join(th, NULL);
  }
  pthread_attr_destroy(&attr);
  mpi_stop();
  if (signal_got) j.status = 128 + signal_got;     /* a script's signal: even one the run never saw */
  if (j.la_busy) {              /* an interrupted solve/eigen/svd still runs on its worker: */
    fflush(NULL);               /* exit() would run OpenBLAS's destructor under it */
    _exit(j.status);
  }
  return j.status;
}
