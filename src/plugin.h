/*
** plugin.h — the optional parts of mls built as shared libraries (build/libmls_cuda.so,
** libmls_plot.so, libmls_kernel.so, libmls_mpi.so) and loaded with dlopen on first use, so that
** a run that draws no plot, serves no notebook and runs under no mpirun never loads cairo,
** ZeroMQ, OpenSSL or OpenMPI (docs/architecture.md, "Plugins"). A core leaf: it knows files and
** symbols, nothing of the interpreter.
*/
#ifndef MLS_PLUGIN_H
#define MLS_PLUGIN_H

#include <stdbool.h>
#include "mls.h"

/* One plugin: what to load, and (once plugin_get ran) what came of it. A plugin is loaded once
** per process, so a Plugin is process-wide state: each lives in the file that uses it. */
typedef struct Plugin {
  const char *file;            /* "libmls_plot.so" */
  const char *entry;           /* the one symbol it exports: its table of functions */
  const char *needs;           /* what it brings, for the message: "cairo" */
  const char *env;             /* an environment variable naming the file itself, or NULL */
  bool global;                 /* RTLD_GLOBAL (OpenMPI's own components need libmpi's symbols) */
  const void *linked;          /* the entry when the plugin's objects are linked in (unit tests,
                               ** fuzz harnesses): no dlopen */
  bool tried;                  /* plugin_get ran */
  bool found;                  /* a file was there (then why says what dlopen said) */
  const void *api;             /* the entry, once loaded */
  char why[400];               /* else why not: "plots need cairo: libmls_plot.so ..." */
} Plugin;

/* The plugin's entry (its table of functions), loading it on the first call; NULL when it
** cannot be loaded, with the reason in p->why. Looked for in $MLS_PLUGIN_DIR alone when that is
** set (a test hides the plugins with it), else next to the executable (build/mls), in build/
** beside it (./mls), then in the installed library directory (MLS_LIBDIR, PREFIX/lib/mls). */
const void *plugin_get(Plugin *p);

#endif
