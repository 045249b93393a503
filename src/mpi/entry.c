/*
** entry.c — the one symbol the MPI plugin (libmls_mpi.so) exports: mpi.c's functions, compiled
** with MLS_MPI into the plugin beside this file (mpi/mpi_plugin.h). Not part of the mls binary.
*/
#include "mpi/mpi_plugin.h"

#define ENTRY(R, N, P, A, RET) .N = mpi_##N,
__attribute__((visibility("default"))) const MpiPlugin mls_mpi_plugin = {
  .start = mpi_start,
  .stop = mpi_stop,
  MPI_PLUGIN_CALLS(ENTRY)
};
