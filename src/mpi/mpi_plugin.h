/*
** mpi_plugin.h — the MPI plugin's entry (libmls_mpi.so, plugin.h at src/): mpi.c compiled with
** MLS_MPI, so that only a run under mpirun loads OpenMPI (and hwloc, libevent ...). Its table
** holds the functions of mpi.h that mpi.c defines; load.c calls them once the plugin is
** loaded, else mpi.c's one-process copy in the binary (solo.h).
*/
#ifndef MLS_MPI_PLUGIN_ENTRY_H
#define MLS_MPI_PLUGIN_ENTRY_H

#include "mpi/mpi.h"

/* The functions load.c forwards, one X(type, name, (parameters), (arguments), return-or-empty)
** each: the table's fields (below), its entry (entry.c) and load.c's forwarders and the
** prototypes of their one-process copies all come from this list. A function here that
** solo.h does not rename is defined twice in the binary and fails the link. */
#define MPI_PLUGIN_CALLS(X)                                                                      \
  X(int, rank, (void), (), return)                                                             \
  X(int, size, (void), (), return)                                                             \
  X(void, set_timeout, (Interp *I, double seconds), (I, seconds), )                            \
  X(int, run_script, (Interp *I, Source *src, bool echo), (I, src, echo), return)              \
  X(Value, allreduce_value, (Interp *I, Value x, int op, Span sp), (I, x, op, sp), return)     \
  X(Value, grad_allreduce, (Interp *I, Value df, int nargs, Value *args, double weight, int64_t bucket, Span sp), \
    (I, df, nargs, args, weight, bucket, sp), return)                                          \
  X(Value, bcast_value, (Interp *I, Value x, int root, bool merge, Span sp), (I, x, root, merge, sp), return) \
  X(void, barrier, (Interp *I, Span sp), (I, sp), )                                            \
  X(void, allgather_doubles, (Interp *I, const double *in, int64_t n, double *out, Span sp), (I, in, n, out, sp), ) \
  X(void, check_count, (Interp *I, int64_t n, Span sp), (I, n, sp), )

#define MPI_PLUGIN_FIELD(R, N, P, A, RET) R(*N) P;
typedef struct MpiPlugin {
  void (*start)(int *argc, char ***argv);    /* (load.c calls these two itself) */
  void (*stop)(void);
  MPI_PLUGIN_CALLS(MPI_PLUGIN_FIELD)
} MpiPlugin;

#endif
