/*
** mpi.h — N ranks of one script over MPI (issue 14, docs/mpi.md). mpi.c gives the same functions
** in both builds: built with MLS_MPI (make MPI=1, or mpicc on PATH) they talk to OpenMPI; without
** it, or when the process was not started by mpirun, the program is rank 1 of 1.
*/
#ifndef MLS_MPI_H
#define MLS_MPI_H

#include <stdbool.h>
#include <stdint.h>
#include "interp/interp.h"

/* The reductions of allreduce (MPI_RED_SUM ..): state.h, beside Interp.comm_allreduce. */

/* main(): MPI_Init_thread when launched by mpirun (OMPI_COMM_WORLD_SIZE, PMIX_RANK or PMI_SIZE
** set) and built with MPI; else nothing. mpi_stop() calls MPI_Finalize when mpi_start inited. */
void mpi_start(int *argc, char ***argv);
void mpi_stop(void);
int mpi_rank(void);     /* 0-based; 0 without MPI */
int mpi_size(void);     /* 1 without MPI */
bool mpi_built(void);   /* built with MLS_MPI */

/* --mpi-timeout (main.c) and $MLS_MPI_TIMEOUT: the seconds a collective of I waits for every
** rank to arrive (I->mpi_timeout); then a located error names the ranks missing and the job
** ends. 0 (the default): wait for ever. */
void mpi_set_timeout(Interp *I, double seconds);

/* Runs a script as interp_run_source does, then writes its open figure (plot_end). With N > 1
** ranks, an error is printed with every line prefixed "rank R: " (1-based); the end of the
** script is a collective of its own (a rank that ends while another waits in a collective is
** an error on both); a failure that only this rank sees ends the whole job with MPI_Abort, so
** the other ranks do not wait forever. Returns the run's exit status. */
int mpi_run_script(Interp *I, Source *src, bool echo);

/* The collectives. Each starts with the exchange of a header (header.h) between all ranks:
** what is called, with which root, reduction and shape, and where. When they differ, every
** rank throws a located error naming what each rank called (and ends by itself, no abort);
** a rank that does not arrive within I->mpi_timeout is named in the error of the ranks waiting.
** allreduce of a number, boolean or matrix (x borrowed; +1 result): every rank gets the
** elementwise sum / max / min over the ranks, by recursive halving then doubling (mpi.c), whose
** tree of additions is fixed by N alone, so the bits are the same on every rank and on every run
** with the same N. A number stays a number. Shapes or reductions that differ across ranks are a
** located error on every rank. */
Value mpi_allreduce_value(Interp *I, Value x, int op, Span sp);
/* grad_allreduce (nn::dp_grad; docs/mpi.md "Buckets"): df(args) for df a grad(f), whose
** gradient with respect to args[0] (numbers, matrices, lists of them) is weighted by weight and
** summed over the ranks like allreduce (the same tree per number, so the same bits), in buckets
** of at most `bucket` numbers that start their reduction during df's backward pass, as soon as
** their parameters' adjoints are final. Returns the gradient in args[0]'s structure (+1; df,
** args borrowed). One process, a traced call (grad, jit, --staged) or a df that is not a plain
** grad: weight * df(args) with each part's allreduce, the same bits. */
Value mpi_grad_allreduce(Interp *I, Value df, int nargs, Value *args, double weight, int64_t bucket, Span sp);
/* bcast: rank root's (0-based) number, boolean, string or matrix, on every rank (+1); merge:
** parfor's result merge calls it (named so in messages). Roots that differ are an error. */
Value mpi_bcast_value(Interp *I, Value x, int root, bool merge, Span sp);
void mpi_barrier(Interp *I, Span sp);
/* parfor's result merge: every rank's n doubles, in rank order, into out (mpi_size() * n). */
void mpi_allgather_doubles(Interp *I, const double *in, int64_t n, double *out, Span sp);
/* The start of a remote parfor: the same iteration count n on every rank, else a located
** error on every rank. */
void mpi_check_count(Interp *I, int64_t n, Span sp);

/* parfor (..., mode=REMOTE) (parfor.c): true when loop n is a remote parfor to spread over the
** ranks (N > 1, not nested in another); [*lo, *hi) are then this rank's iterations of 0..cnt-1
** (contiguous blocks in rank order). The snapshots of the loop's results sit on the temp stack
** (pr->snap), so a throw frees them. mpi_parfor_end merges the results (parfor.c). */
typedef struct ParforRun { AstNode *loop; List *snap; int64_t cnt; } ParforRun;
bool mpi_parfor_begin(Interp *I, AstNode *n, int64_t cnt, int64_t *lo, int64_t *hi, ParforRun *pr);
void mpi_parfor_end(Interp *I, ParforRun *pr);
/* True inside the iterations of a remote parfor (I->parfor_depth > 0): collectives there are an
** error (each rank runs different iterations, so they would wait for each other forever). */
bool mpi_in_parfor(const Interp *I);
/* A break or return inside a remote parfor is an error (located at sp). */
l_noret mpi_parfor_stop(Interp *I, ParforRun *pr, Span sp);

#endif
