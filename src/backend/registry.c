/*
** registry.c — the list of backends and the default one. The only place that knows about
** MLS_CUDA: a CUDA build loads the GPU backend (build/libmls_cuda.so, made by nvcc) on first
** use with dlopen (plugin.h), so that a CPU session never pays for loading cuBLAS, and an mls binary
** whose plugin or device is missing says "no CUDA device available" like a CPU-only build.
*/
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/backend.h"
#include "backend/sim.h"
#include "mem.h"

#ifdef MLS_CUDA
#include "plugin.h"
#endif

#ifdef MLS_CUDA
/* The GPU plugin (plugin.h): $MLS_CUDA_PLUGIN, else where every plugin is looked for. Loaded
** once per process, as the device it starts (one CUDA context per process) is. */
static struct CudaPlugin {
  Plugin lib;                  /* the shared library */
  const Backend *be;           /* the GPU backend once loaded and started, else NULL */
  char why[400];               /* else why not (as long as Plugin.why) */
} plugin = {
  { .file = "libmls_cuda.so", .entry = "be_cuda", .needs = "no CUDA device available", .env = "MLS_CUDA_PLUGIN" },
  NULL, "no CUDA device available"
};

const char *be_why(void) { return plugin.why; }

static const Backend *load_cuda(void) {
  if (plugin.lib.tried) return plugin.be;
  mem_unbound_process();        /* CUDA reserves address space and pinned memory past any bound */
  const Backend *b = plugin_get(&plugin.lib);
  if (!b) {                     /* a plugin that is there but does not load says why */
    if (plugin.lib.found) snprintf(plugin.why, sizeof plugin.why, "%s", plugin.lib.why);
    return NULL;
  }
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
