/*
** header.h — the header every rank sends before each collective (issue 25, docs/mpi.md): what
** it calls (kind, root, reduction, the value's type and shape) and where. Pure code, no MPI, so
** tests/fuzz/fuzz_mpi_header.c can feed mpi_header_decode and mpi_headers_check any bytes.
*/
#ifndef MLS_MPI_HEADER_H
#define MLS_MPI_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The wire form: 96 bytes, little-endian (header.c spells out the layout). */
#define MPI_HDR_BYTES 96
#define MPI_HDR_WHERE 60            /* "file:line:col" of the call, NUL-terminated */

/* What a rank calls. ORDER MpiKind: kind_name[] in header.c. */
typedef enum {
  MPI_K_BARRIER = 1,
  MPI_K_ALLREDUCE,
  MPI_K_BCAST,
  MPI_K_PARFOR,                     /* the start of parfor (mode=REMOTE): rows = iteration count */
  MPI_K_MERGE_GATHER,               /* parfor's result merge: an allgather of rows doubles */
  MPI_K_MERGE_BCAST,                /* parfor's result merge: a bcast of the last rank's value */
  MPI_K_END,                        /* the end of the script */
  MPI_K_GRADS,                      /* grad_allreduce (nn::dp_grad): rows = the parameters'
                                    ** numbers, cols = the bucket size, num = their shapes' hash */
  MPI_K_COUNT
} MpiKind;

/* The type of the value sent (allreduce: every rank's; bcast: the root's). */
typedef enum { MPI_V_NONE = 0, MPI_V_NUM, MPI_V_BOOL, MPI_V_MAT, MPI_V_STR, MPI_V_OTHER, MPI_V_COUNT } MpiValType;

typedef struct MpiHeader {
  int kind;                         /* MpiKind */
  int op;                           /* allreduce: MPI_RED_SUM/MAX/MIN (mpi.h); else 0 */
  int vtype;                        /* MpiValType */
  int root;                         /* bcast: the 0-based root; else -1 */
  int64_t rows, cols;               /* a matrix's shape; a string: rows = its bytes; parfor and
                                    ** the merge's allgather: rows = the count; else 0 */
  double num;                       /* bcast of a number or boolean: the value itself */
  char where[MPI_HDR_WHERE];
} MpiHeader;

/* Writes h as MPI_HDR_BYTES bytes (h borrowed). */
void mpi_header_encode(const MpiHeader *h, uint8_t out[MPI_HDR_BYTES]);
/* Reads n bytes sent by a rank of a job of nranks into *h. False (with the reason in why, when
** not NULL) unless they are a well-formed header: the magic and version, a known kind, type and
** reduction, a root in 0..nranks-1 for bcast (else -1), a shape that fits in memory, and a
** NUL-terminated location of printable characters. */
bool mpi_header_decode(const uint8_t *in, size_t n, int nranks, MpiHeader *h, char *why, size_t whyn);

/* The verdict on the headers of one collective, all[r] from rank r (0-based) of n, as this
** rank me sees it. The verdict itself does not depend on me: every rank, holding the same
** headers, reaches it at the same collective. */
typedef enum {
  MPI_HDR_OK = 0,                   /* the same collective everywhere: go on */
  MPI_HDR_MISMATCH,                 /* a located error on every rank (msg) */
  MPI_HDR_BAD_SELF                  /* this rank's own value cannot be sent: its argument error
                                    ** (the others get MPI_HDR_MISMATCH naming this rank) */
} MpiVerdict;
/* Compares the headers (borrowed); writes the message for rank me into msg (msgn bytes). */
MpiVerdict mpi_headers_check(const MpiHeader *all, int n, int me, char *msg, size_t msgn);

/* "barrier()", "allreduce(op=\"max\")", ...: what h calls, for messages. */
void mpi_header_describe(const MpiHeader *h, char *buf, size_t n);

#endif
