/*
** solo.h — the names mpi.c's functions take in the mls binary, where it is compiled without
** MLS_MPI (the Makefile gives -include mpi/solo.h): that copy is the one-process version, which
** load.c calls while the MPI plugin (libmls_mpi.so: mpi.c with MLS_MPI) is not loaded. ORDER
** the functions of mpi.h's mpi.c section: one missed here that load.c also defines (start, stop,
** built and mpi_plugin.h's MPI_PLUGIN_CALLS) fails the link; a function missing from that list
** would run its one-process copy under mpirun (tests/mpi would fail).
*/
#define mpi_start mpi_solo_start
#define mpi_stop mpi_solo_stop
#define mpi_rank mpi_solo_rank
#define mpi_size mpi_solo_size
#define mpi_built mpi_solo_built
#define mpi_set_timeout mpi_solo_set_timeout
#define mpi_run_script mpi_solo_run_script
#define mpi_allreduce_value mpi_solo_allreduce_value
#define mpi_grad_allreduce mpi_solo_grad_allreduce
#define mpi_bcast_value mpi_solo_bcast_value
#define mpi_barrier mpi_solo_barrier
#define mpi_allgather_doubles mpi_solo_allgather_doubles
#define mpi_check_count mpi_solo_check_count
