/*
** registry.c — the list of backends and the default one. The only place that knows about
** MLS_CUDA: a CUDA build loads the GPU backend (build/libmls_cuda.so, made by nvcc) on first
** use with dlopen, so that a CPU session never pays for loading cuBLAS, and an mls binary
** whose plugin or device is missing says "no CUDA device available" like a CPU-only build.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/sim.h"
#include "mem.h"

#ifdef MLS_CUDA
#include <dlfcn.h>
#include <limits.h>
#include <unistd.h>
#ifndef MLS_LIBDIR
#define MLS_LIBDIR "/usr/local/lib/mls"
#endif
#endif

#ifdef MLS_CUDA
/* The GPU plugin: a shared library loaded once per process, and the device it starts (one
** CUDA context per process), so what this file knows of them is process-wide too. */
static struct CudaPlugin {
  bool tried;                  /* load_cuda ran */
  const Backend *be;           /* the GPU backend once loaded and started, else NULL */
  char why[256];               /* else why not */
} plugin = { false, NULL, "no CUDA device available" };

const char *be_why(void) { return plugin.why; }

/* The plugin: $MLS_CUDA_PLUGIN, else next to the executable (build/mls, or ./mls with build/
** beside it), else the installed library directory. */
static const Backend *load_cuda(void) {
  if (plugin.tried) return plugin.be;
  plugin.tried = true;
  char exe[PATH_MAX], path[PATH_MAX + 64];
  const char *cands[4];
  int nc = 0;
  const char *env = getenv("MLS_CUDA_PLUGIN");
  if (env && *env) cands[nc++] = env;
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  char here[PATH_MAX + 64], below[PATH_MAX + 64];
  if (n > 0) {
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(here, sizeof here, "%s/libmls_cuda.so", exe);
    snprintf(below, sizeof below, "%s/build/libmls_cuda.so", exe);
    cands[nc++] = here;
    cands[nc++] = below;
  }
  snprintf(path, sizeof path, "%s/libmls_cuda.so", MLS_LIBDIR);
  cands[nc++] = path;
  mem_unbound_process();        /* CUDA reserves address space and pinned memory past any bound */
  void *h = NULL;
  for (int i = 0; i < nc && !h; i++)
    if (access(cands[i], R_OK) == 0) {
      h = dlopen(cands[i], RTLD_NOW | RTLD_LOCAL);
      if (!h) snprintf(plugin.why, sizeof plugin.why, "no CUDA device available (%s)", dlerror());
    }
  if (!h) return NULL;
  const Backend *b = dlsym(h, "be_cuda");
  if (!b) return NULL;
  if (b->init() != 0) {
    snprintf(plugin.why, sizeof plugin.why, "%s", b->error());
    return NULL;
  }
  plugin.be = b;
  return b;
}
#else
const char *be_why(void) { return "no CUDA device available"; }
#endif

void be_sync_all(void) {
#ifdef MLS_CUDA
  if (plugin.be) plugin.be->sync();
#endif
}

void be_trim_all(void) {
#ifdef MLS_CUDA
  if (plugin.be) plugin.be->trim();
#endif
  be_cpu.trim();
}

const Backend *be_find(const char *name) {
  if (strcmp(name, "cpu") == 0) return &be_cpu;
  const char *sim = getenv("MLS_SIM_GPU");          /* the simulated GPU (sim.c), for tests */
  if (sim && *sim && strcmp(sim, "0") && (strcmp(name, "gpu") == 0 || strcmp(name, "cuda") == 0)) return &be_sim;
#ifdef MLS_CUDA
  if (strcmp(name, "gpu") == 0 || strcmp(name, "cuda") == 0) return load_cuda();
#endif
  return NULL;
}

/* Who runs op into out: out's backend when it has the kernel and every input lives there;
** else the CPU, which reaches device data through host_access (a fallback, counted). */
const Backend *be_runner(int op, const Tensor *out, Tensor *const in[], int nin, uint64_t *fallbacks) {
  const Backend *be = out->st->be;
  if (be == &be_cpu) return be;
  bool ok = be->supports_op && be->supports_op((OpKind)op);
  for (int k = 0; k < nin && ok; k++) ok = !in[k] || in[k]->st->be == be;
  if (ok) return be;
  ++*fallbacks;
  return &be_cpu;
}

const Backend *be_place(const Backend *dflt, Tensor *const in[], int nin) {
  const Backend *be = NULL;
  for (int k = 0; k < nin; k++) {
    if (!in[k]) continue;
    if (!be) be = in[k]->st->be;
    else if (be != in[k]->st->be) return &be_cpu;
  }
  return be ? be : dflt;
}
