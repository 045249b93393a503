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

/* mpi.c without MLS_MPI, renamed by solo.h */
void mpi_solo_start(int *argc, char ***argv);
void mpi_solo_stop(void);
int mpi_solo_rank(void);
int mpi_solo_size(void);
void mpi_solo_set_timeout(Interp *I, double seconds);
int mpi_solo_run_script(Interp *I, Source *src, bool echo);
Value mpi_solo_allreduce_value(Interp *I, Value x, int op, Span sp);
Value mpi_solo_grad_allreduce(Interp *I, Value df, int nargs, Value *args, double weight, int64_t bucket, Span sp);
Value mpi_solo_bcast_value(Interp *I, Value x, int root, bool merge, Span sp);
void mpi_solo_barrier(Interp *I, Span sp);
void mpi_solo_allgather_doubles(Interp *I, const double *in, int64_t n, double *out, Span sp);
void mpi_solo_check_count(Interp *I, int64_t n, Span sp);

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
int mpi_rank(void) { return mpi.mp ? mpi.mp->rank() : mpi_solo_rank(); }
int mpi_size(void) { return mpi.mp ? mpi.mp->size() : mpi_solo_size(); }
bool mpi_built(void) { return plugin_get(&mpi.lib) != NULL; }

void mpi_set_timeout(Interp *I, double seconds) {
  if (mpi.mp) mpi.mp->set_timeout(I, seconds);
  else mpi_solo_set_timeout(I, seconds);
}

int mpi_run_script(Interp *I, Source *src, bool echo) {
  return mpi.mp ? mpi.mp->run_script(I, src, echo) : mpi_solo_run_script(I, src, echo);
}

Value mpi_allreduce_value(Interp *I, Value x, int op, Span sp) {
  return mpi.mp ? mpi.mp->allreduce_value(I, x, op, sp) : mpi_solo_allreduce_value(I, x, op, sp);
}

Value mpi_grad_allreduce(Interp *I, Value df, int nargs, Value *args, double weight, int64_t bucket, Span sp) {
  return mpi.mp ? mpi.mp->grad_allreduce(I, df, nargs, args, weight, bucket, sp)
                : mpi_solo_grad_allreduce(I, df, nargs, args, weight, bucket, sp);
}

Value mpi_bcast_value(Interp *I, Value x, int root, bool merge, Span sp) {
  return mpi.mp ? mpi.mp->bcast_value(I, x, root, merge, sp) : mpi_solo_bcast_value(I, x, root, merge, sp);
}

void mpi_barrier(Interp *I, Span sp) {
  if (mpi.mp) mpi.mp->barrier(I, sp);
  else mpi_solo_barrier(I, sp);
}

void mpi_allgather_doubles(Interp *I, const double *in, int64_t n, double *out, Span sp) {
  if (mpi.mp) mpi.mp->allgather_doubles(I, in, n, out, sp);
  else mpi_solo_allgather_doubles(I, in, n, out, sp);
}

void mpi_check_count(Interp *I, int64_t n, Span sp) {
  if (mpi.mp) mpi.mp->check_count(I, n, sp);
  else mpi_solo_check_count(I, n, sp);
}
