/*
** registry.c — an interpreter's backend instances (BackendSet) and the instance machinery
** (be_new, be_hold, be_drop). The only place that knows about MLS_CUDA: a CUDA build loads the
** GPU backend (build/libmls_cuda.so, made by nvcc) on first use with dlopen (plugin.h), so that
** a CPU session never pays for loading cuBLAS, and an mls binary whose plugin or device is
** missing says "no CUDA device available" like a CPU-only build.
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

Backend *be_new(const Backend *tmpl, char *why, size_t nwhy) {
  Backend *be = malloc(sizeof *be);
  if (!be) {
    if (why) snprintf(why, nwhy, "out of memory");
    return NULL;
  }
  *be = *tmpl;
  be->ctx = NULL;
  be->refs = 1;
  if (be->init && be->init(be) != 0) {
    if (why) snprintf(why, nwhy, "%s", be->error ? be->error(be) : "the backend could not start");
    if (be->destroy) be->destroy(be);
    free(be);
    return NULL;
  }
  return be;
}

void be_destroy(Backend *be) {
  if (be->destroy) be->destroy(be);
  free(be);
}

bool be_is_cpu(const Backend *be) { return be->run == be_cpu.run; }

#ifdef MLS_CUDA
/* The GPU plugin (plugin.h): $MLS_CUDA_PLUGIN, else where every plugin is looked for. The
** shared library is loaded once per process (tools/globals_allow.txt); each interpreter makes
** its own instance of the backend it exports (be_new: the instance's init starts its CUDA
** context). */
static Plugin plugin = { .file = "libmls_cuda.so", .entry = "be_cuda", .needs = "no CUDA device available", .env = "MLS_CUDA_PLUGIN" };

static Backend *load_cuda(BackendSet *s) {
  mem_unbound_process();        /* CUDA reserves address space and pinned memory past any bound */
  const Backend *tmpl = plugin_get(&plugin);
  if (!tmpl) {                  /* a plugin that is there but does not load says why */
    if (plugin.found) snprintf(s->why, sizeof s->why, "%s", plugin.why);
    return NULL;
  }
  return be_new(tmpl, s->why, sizeof s->why);
}
#endif

int be_set_init(BackendSet *s) {
  memset(s, 0, sizeof *s);
  snprintf(s->why, sizeof s->why, "no CUDA device available");
  s->cpu = be_new(&be_cpu, NULL, 0);
  return s->cpu == NULL;
}

void be_set_free(BackendSet *s) {
  be_trim_all(s);
  if (s->gpu) be_drop(s->gpu);
  if (s->cpu) be_drop(s->cpu);
  s->gpu = s->cpu = NULL;
}

const char *be_why(const BackendSet *s) { return s->why; }

void be_sync_all(const BackendSet *s) {
  if (s->gpu && s->gpu->sync) s->gpu->sync(s->gpu);
}

void be_trim_all(const BackendSet *s) {
  if (s->gpu && s->gpu->trim) s->gpu->trim(s->gpu);
  if (s->cpu) s->cpu->trim(s->cpu);
}

const Backend *be_find(BackendSet *s, const char *name) {
  if (strcmp(name, "cpu") == 0) return s->cpu;
  if (strcmp(name, "gpu") && strcmp(name, "cuda")) return NULL;
  if (s->gpu_tried) return s->gpu;
  s->gpu_tried = true;
  const char *sim = getenv("MLS_SIM_GPU");          /* the simulated GPU (sim.c), for tests */
  if (sim && *sim && strcmp(sim, "0")) s->gpu = sim_new(s->cpu);
#ifdef MLS_CUDA
  else s->gpu = load_cuda(s);
#endif
  return s->gpu;
}

/* Who runs op into out: out's backend when it has the kernel and every input lives there;
** else the CPU, which reaches device data through host_access (a fallback, counted). */
const Backend *be_runner(const Backend *cpu, int op, const Tensor *out, Tensor *const in[], int nin, uint64_t *fallbacks) {
  const Backend *be = out->st->be;
  if (be == cpu) return be;
  bool ok = be->supports_op && be->supports_op(be, (OpKind)op);
  for (int k = 0; k < nin && ok; k++) ok = !in[k] || in[k]->st->be == be;
  if (ok) return be;
  ++*fallbacks;
  return cpu;
}

const Backend *be_place(const Backend *cpu, const Backend *dflt, Tensor *const in[], int nin) {
  const Backend *be = NULL;
  for (int k = 0; k < nin; k++) {
    if (!in[k]) continue;
    if (!be) be = in[k]->st->be;
    else if (be != in[k]->st->be) return cpu;
  }
  return be ? be : dflt;
}
