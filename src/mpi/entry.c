/*
** entry.c — the one symbol the MPI plugin (libmls_mpi.so) exports: mpi.c's functions, compiled
** with MLS_MPI into the plugin beside this file (mpi/mpi_plugin.h). Not part of the mls binary.
*/
#include "mpi/mpi_plugin.h"

__attribute__((visibility("default"))) const MpiPlugin mls_mpi_plugin = {
  /* .start = */ mpi_start,
  /* .stop = */ mpi_stop,
  /* .rank = */ mpi_rank,
  /* .size = */ mpi_size,
  /* .set_timeout = */ mpi_set_timeout,
  /* .run_script = */ mpi_run_script,
  /* .allreduce_value = */ mpi_allreduce_value,
  /* .grad_allreduce = */ mpi_grad_allreduce,
  /* .bcast_value = */ mpi_bcast_value,
  /* .barrier = */ mpi_barrier,
  /* .allgather_doubles = */ mpi_allgather_doubles,
  /* .check_count = */ mpi_check_count,
};
