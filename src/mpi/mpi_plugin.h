/*
** mpi_plugin.h — the MPI plugin's entry (libmls_mpi.so, plugin.h at src/): mpi.c compiled with
** MLS_MPI, so that only a run under mpirun loads OpenMPI (and hwloc, libevent ...). Its table
** holds the functions of mpi.h that mpi.c defines; load.c calls them once the plugin is
** loaded, else mpi.c's one-process copy in the binary (solo.h).
*/
#ifndef MLS_MPI_PLUGIN_ENTRY_H
#define MLS_MPI_PLUGIN_ENTRY_H

#include "mpi/mpi.h"

typedef struct MpiPlugin {
  void (*start)(int *argc, char ***argv);
  void (*stop)(void);
  int (*rank)(void);
  int (*size)(void);
  void (*set_timeout)(Interp *I, double seconds);
  int (*run_script)(Interp *I, Source *src, bool echo);
  Value (*allreduce_value)(Interp *I, Value x, int op, Span sp);
  Value (*grad_allreduce)(Interp *I, Value df, int nargs, Value *args, double weight, int64_t bucket, Span sp);
  Value (*bcast_value)(Interp *I, Value x, int root, bool merge, Span sp);
  void (*barrier)(Interp *I, Span sp);
  void (*allgather_doubles)(Interp *I, const double *in, int64_t n, double *out, Span sp);
  void (*check_count)(Interp *I, int64_t n, Span sp);
} MpiPlugin;

#endif
