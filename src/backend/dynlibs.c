/*
** dynlibs.c — loads OpenBLAS, LAPACKE, CHOLMOD and UMFPACK on first use (dynlibs.h), and the
** optional libxsmm plugin (backend/xsmm.h): each once per
** process, under pthread_once, since the first call may come from any thread (a LAPACK worker,
** the CPU pool). The sonames come from the Makefile (the libraries it found at build time).
*/
#define MLS_DYNLIBS_IMPL
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backend/dynlibs.h"
#include "backend/xsmm.h"
#include "plugin.h"

#ifndef MLS_SONAME_OPENBLAS
#define MLS_SONAME_OPENBLAS "libopenblas.so.0"
#endif
#ifndef MLS_SONAME_LAPACKE
#define MLS_SONAME_LAPACKE "liblapacke.so.3"
#endif
#ifndef MLS_SONAME_CHOLMOD
#define MLS_SONAME_CHOLMOD "libcholmod.so.3"
#endif
#ifndef MLS_SONAME_UMFPACK
#define MLS_SONAME_UMFPACK "libumfpack.so.5"
#endif

/* The libraries' tables: process-wide, as the libraries are; written once, under pthread_once. */
static struct DynLibs {
  pthread_once_t blas_once, lapack_once, cholmod_once, umfpack_once, xsmm_once;
  DlBlas blas;
  DlLapack lapack;
  DlCholmod cholmod;
  DlUmfpack umfpack;
  Plugin xsmm_lib;
  const XsmmPlugin *xsmm;
} dl = { PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, PTHREAD_ONCE_INIT, { 0 }, { 0 }, { 0 }, { 0 },
         { .file = "libmls_xsmm.so", .entry = "mls_xsmm_plugin", .needs = "libxsmm kernels", .env = "MLS_XSMM_PLUGIN" }, NULL };

/* The library soname, or the end of the process with the reason (the program cannot go on
** without its BLAS, as it could not start without it when it was linked). */
static void *open_lib(const char *soname, int scope) {
  void *h = dlopen(soname, RTLD_NOW | scope);
  if (!h) {
    fprintf(stderr, "mls: cannot load %s (%s)\n", soname, dlerror());
    exit(127);
  }
  return h;
}

static void *sym(void *h, const char *soname, const char *name) {
  void *p = dlsym(h, name);
  if (!p) {
    fprintf(stderr, "mls: %s has no %s\n", soname, name);
    exit(127);
  }
  return p;
}

#define DL_LOAD(f) *(void **)&t->f = sym(h, so, #f);
/* OpenBLAS in the global scope: LAPACKE's, CHOLMOD's and UMFPACK's LAPACK and BLAS calls then bind to it,
** as when the three were linked into mls with OpenBLAS first, and not to whatever the system's
** liblapack.so.3 alternative names (Debian's reference LAPACK: slower, other rounding). */
static void load_blas(void) {
  const char *so = MLS_SONAME_OPENBLAS;
  void *h = open_lib(so, RTLD_GLOBAL);
  DlBlas *t = &dl.blas;
  DL_BLAS(DL_LOAD)
}

static void load_lapack(void) {
  dl_blas();
  const char *so = MLS_SONAME_LAPACKE;
  void *h = open_lib(so, RTLD_LOCAL);
  DlLapack *t = &dl.lapack;
  DL_LAPACK(DL_LOAD)
}

static void load_cholmod(void) {
  dl_blas();
  const char *so = MLS_SONAME_CHOLMOD;
  void *h = open_lib(so, RTLD_LOCAL);
  DlCholmod *t = &dl.cholmod;
  DL_CHOLMOD(DL_LOAD)
}

static void load_umfpack(void) {
  dl_blas();
  const char *so = MLS_SONAME_UMFPACK;
  void *h = open_lib(so, RTLD_LOCAL);
  DlUmfpack *t = &dl.umfpack;
  DL_UMFPACK(DL_LOAD)
}
#undef DL_LOAD

/* The plugin where it is there, unless MLS_XSMM=0 (bench/staging.sh compares both ways) */
static void load_xsmm(void) {
  const char *off = getenv("MLS_XSMM");
  if (off && strcmp(off, "0") == 0) return;
  dl.xsmm = plugin_get(&dl.xsmm_lib);
}

const DlBlas *dl_blas(void) { pthread_once(&dl.blas_once, load_blas); return &dl.blas; }
const DlLapack *dl_lapack(void) { pthread_once(&dl.lapack_once, load_lapack); return &dl.lapack; }
const DlCholmod *dl_cholmod(void) { pthread_once(&dl.cholmod_once, load_cholmod); return &dl.cholmod; }
const DlUmfpack *dl_umfpack(void) { pthread_once(&dl.umfpack_once, load_umfpack); return &dl.umfpack; }
const XsmmPlugin *dl_xsmm(void) { pthread_once(&dl.xsmm_once, load_xsmm); return dl.xsmm; }
const char *dl_xsmm_why(void) { return dl_xsmm() || !dl.xsmm_lib.found ? NULL : dl.xsmm_lib.why; }
