/*
** interp.c — creating and freeing the interpreter, running a program under mls_pcall,
** reporting errors, command-line values, and source().
*/
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include "backend/backend.h"
#include "builtins.h"
#include "interp/interp.h"
#include "plot/plot.h"
#include "mem.h"
#include "mpi/mpi.h"
#include "ops/linalg.h"
#include "staging/stage.h"
#include "parse.h"

/* A builtin written in MLS, once asked for (interp_lib_function). */
typedef struct LibFn { Symbol *name; Value fn; } LibFn;   /* fn: VT_NULL while loading */

#ifndef MLS_STDLIB_DIR
#define MLS_STDLIB_DIR "/usr/local/share/mls/stdlib"
#endif

/* How much of the current thread's C stack the interpreter may use: all but a margin. Found
** once per thread and kept in I: on the main thread glibc reads /proc/self/maps to answer,
** which cost a REPL line more than running it. */
size_t interp_thread_stack_budget(void) {
  pthread_attr_t attr;
  size_t size = 8u << 20;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstacksize(&attr, &size);
    pthread_attr_destroy(&attr);
  }
  size_t margin = size / 8 > (1u << 20) ? (1u << 20) : size / 8;
  return size > margin * 2 ? size - margin * 2 : size / 2;
}

static size_t stack_budget(Interp *I) {
  if (!I->stack_found || !pthread_equal(I->stack_thread, pthread_self())) {
    I->stack_found = interp_thread_stack_budget();
    I->stack_thread = pthread_self();
  }
  return I->stack_found;
}

Interp *interp_new(void) {
  Interp *I = mem_calloc(1, sizeof *I);
  gc_init(I);
  sym_init(&I->syms);
  I->out = stdout;
  I->errf = stderr;
  I->maxframes = 20000;
  I->print_digits = 7;
  I->retval = val_null();
  I->last = val_null();
  I->threads = 0;
  I->replay_mode = -1;
  I->la_thread_flops = 1e9;                   /* about 0.1 s of one core */
  I->comm_allreduce = mpi_allreduce_value;
  I->backends = mem_calloc(1, sizeof *I->backends);
  if (be_set_init(I->backends) != 0) mem_oom(sizeof(Backend));   /* this interpreter's CPU instance */
  I->cpu = I->backends->cpu;
  I->device = I->cpu;
  const char *ex = getenv("MLS_EXACT_REWRITES");
  I->exact_rewrites = ex && *ex && strcmp(ex, "0") != 0;
  const char *lc = getenv("MLS_LOG_COMPILES");
  I->log_compiles = lc && *lc && strcmp(lc, "0") != 0;
  bi_open(I);
  if (I->cpu->set_stop) I->cpu->set_stop(I->cpu, &I->interrupted);   /* the CPU's kernels poll Ctrl-C */
  return I;
}

void interp_free(Interp *I) {
  if (!I) return;
  tmp_release_to(I, 0);
  op_masked_forget(I);
  stage_blocks_free(I);
  val_release(I->retval);
  val_release(I->last);
  for (int i = 0; i < I->nlibfns; i++) val_release(I->libfns[i].fn);
  mem_free(I->libfns);
  plot_free(I);
  for (int i = 0; i < I->nparams; i++) val_release(I->params[i].v);
  mem_free(I->params);
  /* globals may hold closures whose envs hold more: release the bindings first */
  for (uint32_t b = 0; b < I->syms.nbuckets; b++)
    for (Symbol *s = I->syms.buckets[b]; s; s = s->next) {
      Value v = s->global;
      s->global = val_unbound();
      val_release(v);
    }
  gc_collect(I);                              /* cycles the globals held */
  gc_detach_all(I);                           /* what outlives I is freed without it */
  parse_free_spare(&I->spare_parser);
  la_detach_abandoned(I);                     /* (main() asked la_busy first) */
  sym_free(&I->syms);
  if (I->err.src) source_release(I->err.src);
  mem_free(I->tmp);
  mem_free(I->defers);
  mem_free(I->frames);
  mem_free(I->bi);
  uint64_t fallbacks = I->be_fallbacks;
  BackendSet *backends = I->backends;
  mem_free(I);
  const char *stats = getenv("MLS_CUDA_STATS");
  if (stats && *stats && *stats != '0' && fallbacks)
    fprintf(stderr, "cuda: %llu ops ran on the CPU (no GPU kernel, or a CPU operand)\n", (unsigned long long)fallbacks);
  if (backends->cpu->set_stop) backends->cpu->set_stop(backends->cpu, NULL);
  be_set_free(backends);                      /* (an instance a surviving storage holds lives on with it) */
  mem_free(backends);
}

void interp_report_error(Interp *I) {
  if (I->bar_open) { fputc('\n', I->errf); I->bar_open = false; }   /* end a progress bar's line */
  diag_report(I->errf, I->err.src, I->err.span, "error", I->err.msg);
  fputs(I->err.trace, I->errf);
}

typedef struct RunArgs { Chunk *ch; bool echo; } RunArgs;

/* The allocator's failure hook while a program runs (mem.h): inside a protected call a failed
** allocation is a located runtime error at the call or operator being run; outside one it
** returns, and the allocator ends the process with its message. */
static void oom_throw(void *ud, size_t n) {
  Interp *I = ud;
  if (!I->errjmp) return;
  char size[32];
  Span sp = I->call_span;
  if (!I->src || sp.end > I->src->len) sp = (Span){ 0, 0 };   /* (never a span of another source) */
  if (mem_limit_is_set() && mem_over_limit(n)) {     /* a string or text buffer over --max-memory */
    char lim[32], used[32];
    mls_throw(I, sp, "out of memory allocating %s: over the limit of %s (--max-memory), %s in use",
              mem_format_size(size, sizeof size, n), mem_format_size(lim, sizeof lim, mem_limit()),
              mem_format_size(used, sizeof used, mem_in_use()));
  }
  if (mem_process_bound()) {                         /* uncounted memory reached the process bound */
    char b[32];
    mls_throw(I, sp, "out of memory (allocating %s; with --max-memory the process's memory is bounded at %s)",
              mem_format_size(size, sizeof size, n), mem_format_size(b, sizeof b, mem_process_bound()));
  }
  mls_throw(I, sp, "out of memory (allocating %s)", mem_format_size(size, sizeof size, n));
}

static void run_protected(Interp *I, void *ud) {
  RunArgs *r = ud;
  Source *saved = I->src;
  I->src = r->ch->src;
  Value v = eval_chunk(I, r->ch, r->echo);
  val_release(v);
  I->src = saved;
}

static int run_hooked(Interp *I, Source *src, bool echo, bool repl);

static int run(Interp *I, Source *src, bool echo, bool repl) {
  MemOomHook old = mem_set_oom_handler((MemOomHook){ oom_throw, I });
  int st = run_hooked(I, src, echo, repl);
  mem_set_oom_handler(old);
  return st;
}

Chunk *interp_load(Interp *I, Source *src, bool module, ParseError *pe) {
  Chunk *ch = parse_chunk(&I->syms, &I->spare_parser, src, pe);
  if (!ch) return NULL;
  if (pe->nwarn) diag_report(I->errf, src, pe->warn_span, "warning", pe->warn);
  bool oom = false;
  if (resolve_chunk(I, ch, module, pe->msg, sizeof pe->msg, &pe->span, &oom)) return ch;
  chunk_release(ch);
  pe->at_eof = false;
  pe->oom = oom;
  return NULL;
}

static int run_hooked(Interp *I, Source *src, bool echo, bool repl) {
  ParseError pe;
  Chunk *ch = interp_load(I, src, false, &pe);
  if (!ch) {
    if (repl && pe.at_eof) return -1;
    diag_report(I->errf, src, pe.span, "error", pe.msg);
    return pe.oom ? 1 : 2;                  /* out of memory is a runtime failure, not a syntax error */
  }
  RunArgs ra = { ch, echo };
  char here;
  bool outermost = I->stack_base == NULL;
  if (outermost) {                          /* the guard measures the thread that runs */
    I->stack_base = &here;
    I->stack_limit = stack_budget(I);
  }
  int st = mls_pcall(I, run_protected, &ra);
  if (outermost) {
    I->stack_base = NULL;
    I->interrupted = 0;                     /* this run's signal: raised, or after its last poll */
  }
  chunk_release(ch);
  fflush(I->out);
  if (st && I->quitting) return I->quit_status;
  if (st) {
    interp_report_error(I);
    return 1;
  }
  return 0;
}

int interp_run_source(Interp *I, Source *src, bool echo) { return run(I, src, echo, false); }
int interp_run_repl_chunk(Interp *I, Source *src) { return run(I, src, true, true); }

void interp_set_param(Interp *I, const char *name, const char *text) {
  Symbol *s = sym_intern(&I->syms, name, strlen(name));
  Value v;
  char *end;
  double x = strtod(text, &end);
  if (*text && *end == '\0' && end != text) v = val_num(x);
  else if (strcmp(text, "TRUE") == 0) v = val_bool(true);
  else if (strcmp(text, "FALSE") == 0) v = val_bool(false);
  else v = val_cstr(text);
  for (int i = 0; i < I->nparams; i++)
    if (I->params[i].name == s) { val_release(I->params[i].v); I->params[i].v = v; return; }
  I->params = mem_realloc(I->params, (size_t)(I->nparams + 1) * sizeof(CmdParam));
  I->params[I->nparams].name = s;
  I->params[I->nparams].v = v;
  I->nparams++;
}

/* ---- source() ---- */
static bool readable(const char *p) { return access(p, R_OK) == 0; }

/* $MLS_PATH, else stdlib/ beside the executable (a build tree), else ../share/mls/stdlib
** relative to it (an installed tree, whatever PREFIX), else the compiled-in directory. */
const char *interp_stdlib_dir(Interp *I, char *buf, size_t n) {
  const char *env = getenv("MLS_PATH");
  if (env && *env) return env;
  if (I->stdlib_dir) return I->stdlib_dir;
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k > 0) {
    exe[k] = '\0';
    const char *dir = dirname(exe);
    snprintf(buf, n, "%s/stdlib", dir);
    if (access(buf, R_OK) == 0) return buf;
    snprintf(buf, n, "%s/../share/mls/stdlib", dir);
    if (access(buf, R_OK) == 0) return buf;
  }
  return MLS_STDLIB_DIR;
}

/* Finds path: absolute, next to the calling script, in the current directory, in the stdlib
** directory, then in SystemDS's scripts/ or root above the DML builtins directory. */
static bool find_source(Interp *I, const char *path, char *out, size_t n) {
  if (path[0] == '/') { snprintf(out, n, "%s", path); return readable(out); }
  if (I->src && I->src->name[0] != '<' && strcmp(I->src->name, "-e") != 0) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", I->src->name);
    const char *d = dirname(dir);
    if (strcmp(d, ".") == 0) snprintf(out, n, "%s", path);
    else snprintf(out, n, "%s/%s", d, path);
    if (readable(out)) return true;
  }
  /* then the current directory, as SystemDS resolves source paths (its nn library's files
  ** say source("nn/util.dml") and are run from the directory above nn/) */
  snprintf(out, n, "%s", path);
  if (readable(out)) return true;
  char buf[PATH_MAX];
  const char *lib = interp_stdlib_dir(I, buf, sizeof buf);
  snprintf(out, n, "%s/%s", lib, path);
  return readable(out) || interp_dml_root_file(I, path, out, n);
}

const char *interp_dml_builtins_dir(const Interp *I) {
  if (I->dml_builtins_dir) return I->dml_builtins_dir;
  const char *env = getenv("MLS_DML_BUILTINS");
  return env && *env ? env : NULL;
}

/* SystemDS's builtins say source("scripts/builtin/x.dml") and source("nn/layers/x.dml"): paths
** from its root and from its scripts/ directory, the two directories above scripts/builtin. */
bool interp_dml_root_file(const Interp *I, const char *path, char *out, size_t n) {
  const char *dir = interp_dml_builtins_dir(I);
  char real[PATH_MAX];
  if (!dir || path[0] == '/' || !realpath(dir, real)) return false;
  for (int up = 0; up < 2; up++) {
    char *slash = strrchr(real, '/');
    if (!slash || slash == real) return false;
    *slash = '\0';
    snprintf(out, n, "%s/%s", real, path);
    if (readable(out)) return true;
  }
  return false;
}

typedef struct SourceRun { Chunk *ch; Env *env; } SourceRun;

/* Throws when full is already being sourced (a file that sources itself, directly or through
** others), naming the chain of files from the first time it was entered. */
static void check_cycle(Interp *I, const char *full, Span sp) {
  char want[PATH_MAX], have[PATH_MAX];
  if (!realpath(full, want)) return;
  Symbol *src_sym = sym_intern(&I->syms, "source", 6);
  /* the running files, outermost first: the script, then each source frame's file */
  const Source *root = I->nframes > 0 ? I->frames[0].call_src : I->src;
  int first = -2;                                  /* -1: the script itself */
  if (root && realpath(root->name, have) && strcmp(have, want) == 0) first = -1;
  for (int i = 0; i < I->nframes && first == -2; i++) {
    const Frame *f = &I->frames[i];
    if (f->fi && f->fi->name == src_sym && f->src && realpath(f->src->name, have) && strcmp(have, want) == 0) first = i;
  }
  if (first == -2) return;
  char chain[2 * PATH_MAX + 128];
  size_t k = 0;
  if (first == -1) k += (size_t)snprintf(chain, sizeof chain, "%s", root->name);
  for (int i = first < 0 ? 0 : first; i < I->nframes && k < sizeof chain; i++) {
    const Frame *f = &I->frames[i];
    if (f->fi && f->fi->name == src_sym && f->src)
      k += (size_t)snprintf(chain + k, sizeof chain - k, "%s%s", k ? " -> " : "", f->src->name);
  }
  if (k < sizeof chain) snprintf(chain + k, sizeof chain - k, " -> %s", full);
  mls_throw(I, sp, "source: '%s' is already being sourced (a cycle: %s)", full, chain);
}

static void source_cleanup(void *src) { source_release(src); }
static void chunk_cleanup(void *ch) { chunk_release(ch); }

Value interp_source(Interp *I, const char *path, Symbol *ns, Span sp) {
  char full[PATH_MAX + 64];
  if (I->nframes >= I->maxframes) mls_throw(I, sp, "source: too deeply nested (more than %d calls and sources)", I->maxframes);
  if (!find_source(I, path, full, sizeof full))
    mls_throw(I, sp, "source: cannot find '%s' (looked next to the script, in the current directory and in the standard library)", path);
  check_cycle(I, full, sp);
  Source *src = source_from_file(full, NULL);
  if (!src) mls_throw(I, sp, "source: cannot read '%s': %s", full, source_error());
  mls_defer(I, source_cleanup, src);           /* until the chunk (or the error) holds it */
  ParseError pe;
  Chunk *ch = interp_load(I, src, ns != NULL, &pe);
  if (!ch) {                 /* report at the file's own location, then "in source() at ..." */
    frame_push(I, (Frame){ .call_src = I->src, .call_site = sp, .entered = true }, false);
    mls_undefer(I, src);
    mls_throw_in(I, src, pe.span, "%s", pe.msg);
  }
  mls_undefer(I, src);
  source_release(src);                         /* the chunk holds it */
  mls_defer(I, chunk_cleanup, ch);             /* until the holder below does */
  Source *saved_src = I->src;
  Env *saved_env = I->env;
  /* the frame first, not entered until it holds env (a throw releases it with the frame) */
  Frame *f = frame_push(I, (Frame){ .fi = &ch->top, .src = ch->src, .call_src = saved_src, .call_site = sp }, false);
  ch->top.name = sym_intern(&I->syms, "source", 6);
  Env *env = ns ? env_new(I, &ch->top, NULL) : NULL;
  f->env = env;
  f->entered = true;
  /* the chunk must outlive the run and any closures it makes (they retain it) */
  Value holder = closure_new(I, &ch->top, NULL);
  mls_undefer(I, ch);
  chunk_release(ch);
  tmp_push(I, holder);
  I->src = ch->src;
  I->env = env;
  Value last = eval_chunk(I, ch, false);
  val_release(last);
  I->ctl = CTL_NONE;
  Value result = val_null();
  if (ns) {
    List *l = list_new(I, env->n);
    tmp_push(I, val_list(l));                  /* held while it grows */
    for (int i = 0; i < env->n; i++) {
      if (env->slots[i].t == VT_UNBOUND || sym_is_namespace(env->fi->slots[i])) continue;   /* (its own namespaces: private) */
      val_retain(env->slots[i]);
      list_push(l, env->slots[i], env->fi->slots[i]);
    }
    tmp_pop(I, 1);
    result = val_list(l);
  }
  I->src = saved_src;
  I->env = saved_env;
  I->nframes--;
  env_release(env);
  tmp_pop(I, 1);
  val_release(holder);
  return result;
}

/* ---- builtins written in MLS: stdlib/builtin/NAME.mls, run on the first call ---- */
typedef struct LibLoad { const char *path; Symbol *name; Span sp; Value ns; } LibLoad;

static void lib_load(Interp *I, void *ud) {
  LibLoad *l = ud;
  l->ns = interp_source(I, l->path, l->name, l->sp);
}

bool interp_lib_path(Interp *I, Symbol *name, char *path, size_t n, bool *dml) {
  *dml = false;
  if (strchr(name->name, '/') || name->name[0] == '\0') return false;   /* help("../x"): not a name */
  char buf[PATH_MAX];
  snprintf(path, n, "%s/builtin/%s.mls", interp_stdlib_dir(I, buf, sizeof buf), name->name);
  if (readable(path)) return true;
  const char *dir = interp_dml_builtins_dir(I);
  if (!dir) return false;
  snprintf(path, n, "%s/%s.dml", dir, name->name);
  return *dml = readable(path);
}

void interp_dml_entries(Interp *I, Symbol *name, Symbol *out[3]) {
  static const char prefix[3] = { 'm', 'f', 's' };
  for (int i = 0; i < 3; i++) {
    char buf[256];
    int n = snprintf(buf, sizeof buf, "%c_%s", prefix[i], name->name);
    out[i] = sym_intern(&I->syms, buf, n < (int)sizeof buf ? (size_t)n : sizeof buf - 1);
  }
}

Value interp_lib_function(Interp *I, Symbol *name, Span sp) {
  int k = 0;
  while (k < I->nlibfns && I->libfns[k].name != name) k++;
  if (k < I->nlibfns && I->libfns[k].fn.t == VT_FUNC) {
    val_retain(I->libfns[k].fn);
    return I->libfns[k].fn;
  }
  char path[PATH_MAX + 64];
  bool dml;
  if (k < I->nlibfns && I->libfns[k].fn.t == VT_NULL) {
    if (!interp_lib_path(I, name, path, sizeof path, &dml) || !dml) snprintf(path, sizeof path, "builtin/%s.mls", name->name);
    mls_throw(I, sp, "'%s' was called while its file %s was being loaded", name->name, path);
  }
  if (!interp_lib_path(I, name, path, sizeof path, &dml)) return val_unbound();
  if (k == I->nlibfns) {
    I->libfns = mem_realloc(I->libfns, (size_t)(I->nlibfns + 1) * sizeof(LibFn));
    I->libfns[I->nlibfns++].name = name;
  }
  I->libfns[k].fn = val_null();
  /* the file's top level defines functions: it runs eagerly even while a graph is traced */
  struct Tape *stage = I->stage;
  I->stage = NULL;
  LibLoad l = { path, name, sp, val_null() };
  int err = mls_pcall(I, lib_load, &l);
  I->stage = stage;
  if (err) {
    I->libfns[k].fn = val_unbound();          /* a later call tries again */
    mls_rethrow(I);
  }
  Symbol *want[3] = { name, NULL, NULL };
  if (dml) interp_dml_entries(I, name, want);
  Value fn = val_null();
  for (int w = 0; w < 3 && want[w] && fn.t != VT_FUNC; w++) {
    int j = list_find(l.ns.u.l, want[w]);
    if (j >= 0) fn = l.ns.u.l->items[j];
  }
  if (fn.t != VT_FUNC) {
    val_release(l.ns);
    I->libfns[k].fn = val_unbound();
    if (dml) mls_throw(I, sp, "'%s' does not define the function %s() (nor %s() or %s())", path, want[0]->name, want[1]->name, want[2]->name);
    mls_throw(I, sp, "'%s' does not define the function %s()", path, name->name);
  }
  val_retain(fn);
  val_release(l.ns);
  I->libfns[k].fn = fn;                       /* the function's env holds the file's other names */
  val_retain(fn);
  return fn;
}

bool interp_in_dml(const Interp *I) {
  size_t n = I->src ? strlen(I->src->name) : 0;
  return n > 4 && strcasecmp(I->src->name + n - 4, ".dml") == 0;
}

static int lib_file(const struct dirent *e) {
  size_t n = strlen(e->d_name);
  return n > 4 && strcmp(e->d_name + n - 4, ".mls") == 0 && e->d_name[0] != '.';
}

void interp_lib_list(Interp *I, FILE *out) {
  char buf[PATH_MAX], dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/builtin", interp_stdlib_dir(I, buf, sizeof buf));
  struct dirent **names;
  int n = scandir(dir, &names, lib_file, alphasort);
  if (n <= 0) return;
  fprintf(out, "Builtins written in MLS (%s/NAME.mls):\n ", dir);
  int col = 1;
  for (int i = 0; i < n; i++) {
    int len = (int)strlen(names[i]->d_name) - 4;
    if (col + len + 1 > 92) { fputs("\n ", out); col = 1; }
    fprintf(out, " %.*s", len, names[i]->d_name);
    col += len + 1;
    free(names[i]);
  }
  fputs("\n", out);
  free(names);
}

int interp_lib_search(Interp *I, const char *pat, int before, FILE *out) {
  char buf[PATH_MAX], dir[PATH_MAX + 16], path[PATH_MAX + 300];
  snprintf(dir, sizeof dir, "%s/builtin", interp_stdlib_dir(I, buf, sizeof buf));
  struct dirent **names;
  int n = scandir(dir, &names, lib_file, alphasort), found = 0;
  if (n <= 0) return 0;
  size_t m = strlen(pat);
  for (int i = 0; i < n; i++) {
    int len = (int)strlen(names[i]->d_name) - 4;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    FILE *f = fopen(path, "r");
    char line[512], first[512] = "";
    bool hit = false;
    for (int k = 0; k + m <= (size_t)len && !hit; k++) hit = strncasecmp(names[i]->d_name + k, pat, m) == 0;
    while (f && fgets(line, sizeof line, f)) {       /* its #' lines */
      if (strncmp(line, "#'", 2) != 0) continue;
      const char *t = line + 2 + (line[2] == ' ');
      if (!first[0]) snprintf(first, sizeof first, "%.*s", (int)strcspn(t, "\n"), t);
      for (size_t k = 0; t[k] && !hit; k++) hit = strncasecmp(t + k, pat, m) == 0;
    }
    if (f) fclose(f);
    if (hit) {
      if (!before && !found) fprintf(out, "Help pages matching '%s':\n", pat);
      fprintf(out, "  %-16.*s %s\n", len, names[i]->d_name, first);
      found++;
    }
    free(names[i]);
  }
  free(names);
  return found;
}
