/*
** plugin.c — finding and loading the optional shared libraries of plugin.h: one search path,
** one dlopen, one message when it fails, for the CUDA backend, plots, the Jupyter kernel and MPI.
*/
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "plugin.h"

#ifndef MLS_LIBDIR
#define MLS_LIBDIR "/usr/local/lib/mls"
#endif

/* The directory of the running executable into dir (false when /proc does not say). */
static bool exe_dir(char *dir, size_t n) {
  ssize_t k = readlink("/proc/self/exe", dir, n - 1);
  if (k <= 0) return false;
  dir[k] = '\0';
  char *slash = strrchr(dir, '/');
  if (!slash) return false;
  *slash = '\0';
  return true;
}

const void *plugin_get(Plugin *p) {
  if (p->tried) return p->api;
  p->tried = true;
  if (p->linked) return p->api = p->linked;
  /* the candidates: $env (the file itself), else $MLS_PLUGIN_DIR alone, else the usual three */
  char cand[3][PATH_MAX], exe[PATH_MAX], where[800];
  int nc = 0;
  const char *env = p->env ? getenv(p->env) : NULL;
  const char *dir = getenv("MLS_PLUGIN_DIR");
  if (env && *env) {
    snprintf(cand[nc++], PATH_MAX, "%s", env);
    snprintf(where, sizeof where, "%.500s", env);
  } else if (dir && *dir) {
    snprintf(cand[nc++], PATH_MAX, "%.4000s/%s", dir, p->file);
    snprintf(where, sizeof where, "%.500s", dir);
  } else {
    if (exe_dir(exe, sizeof exe)) {
      snprintf(cand[nc++], PATH_MAX, "%.4000s/%s", exe, p->file);
      snprintf(cand[nc++], PATH_MAX, "%.4000s/build/%s", exe, p->file);
    }
    snprintf(cand[nc++], PATH_MAX, "%s/%s", MLS_LIBDIR, p->file);
    if (nc == 3) snprintf(where, sizeof where, "%.250s, %.250s/build or %.250s", exe, exe, MLS_LIBDIR);
    else snprintf(where, sizeof where, "%s", MLS_LIBDIR);
  }
  snprintf(p->why, sizeof p->why, "%.100s: %s could not be loaded (not found in %.250s)", p->needs, p->file, where);
  for (int i = 0; i < nc; i++) {
    if (access(cand[i], R_OK) != 0) continue;
    p->found = true;
    void *h = dlopen(cand[i], RTLD_NOW | (p->global ? RTLD_GLOBAL : RTLD_LOCAL));
    if (!h) {                              /* there, but its libraries are not: say which */
      snprintf(p->why, sizeof p->why, "%.100s: %s could not be loaded (%.250s)", p->needs, p->file, dlerror());
      return NULL;
    }
    const void *api = dlsym(h, p->entry);
    if (!api) {
      snprintf(p->why, sizeof p->why, "%.100s: %.200s has no %s (a stale build?)", p->needs, cand[i], p->entry);
      return NULL;
    }
    return p->api = api;
  }
  return NULL;
}
