/*
** load.c — mpi.h's functions in the mls binary: under mpirun (OMPI_COMM_WORLD_SIZE, PMIX_RANK
** or PMI_SIZE set) mpi_start loads the MPI plugin (libmls_mpi.so, plugin.h) and every call goes
** to it; otherwise, or when it cannot be loaded (then a warning says why), to mpi.c's
** one-process copy compiled into the binary (solo.h): rank 1 of 1, as a build without MPI.
*/
#include <stdio.h>
#include <stdlib.h>
#include "mpi/mpi_plugin.h"
#include "plugin.h"

/* The plugin (RTLD_GLOBAL: OpenMPI's own components, which it dlopens, look for libmpi's
** symbols in the global scope), loaded once per process, and whether it runs this process. */
extern const MpiPlugin mls_mpi_plugin __attribute__((weak));
static struct MpiLoad {
  Plugin lib;
  const MpiPlugin *mp;         /* started by mpi_start, else NULL: the one-process version */
} mpi = { { .file = "libmls_mpi.so", .entry = "mls_mpi_plugin", .needs = "MPI needs OpenMPI", .global = true,
            .linked = &mls_mpi_plugin }, NULL };

void mpi_start(int *argc, char ***argv) {
  if (!getenv("OMPI_COMM_WORLD_SIZE") && !getenv("PMIX_RANK") && !getenv("PMI_SIZE")) return;
  const MpiPlugin *p = plugin_get(&mpi.lib);
  if (!p) {
    fprintf(stderr, "mls: warning: started by mpirun, but %s; this rank runs as one process\n", mpi.lib.why);
    return;
  }
  mpi.mp = p;
  p->start(argc, argv);
}

void mpi_stop(void) { if (mpi.mp) mpi.mp->stop(); }
bool mpi_built(void) { return plugin_get(&mpi.lib) != NULL; }

/* The rest: the plugin's when it runs this process, else the one-process copy's. */
#define FORWARD(R, N, P, A, RET)                        \
  R mpi_solo_##N P;                                     \
  R mpi_##N P {                                         \
    if (mpi.mp) { RET mpi.mp->N A; }                    \
    else { RET mpi_solo_##N A; }                        \
  }
MPI_PLUGIN_CALLS(FORWARD)
