/*
** registry.c — the list of compiled-in backends. The only place that knows about MLS_CUDA.
*/
#include <string.h>
#include "backend/backend.h"

#ifdef MLS_CUDA
extern const Backend be_cuda;
#endif

static const Backend *const backends[] = {
  &be_cpu,
#ifdef MLS_CUDA
  &be_cuda,
#endif
  NULL
};

const Backend *be_default(void) { return &be_cpu; }

const Backend *be_find(const char *name) {
  for (int i = 0; backends[i]; i++)
    if (strcmp(backends[i]->name, name) == 0) return backends[i];
  return NULL;
}
