/*
** fuzz_mpi_header.c — libFuzzer harness for the MPI collective header (src/mpi/header.c): any
** bytes as the headers that N ranks sent, through the decoder and the verdict every rank reaches.
** Input: byte 0 picks N (1 to 8), byte 1 the message buffer's size; then N headers of 96 bytes
** (zero-padded when the input is shorter). Checked, beyond ASan and UBSan:
**   - a header that decodes encodes back to the same fields, and decodes again to them;
**   - every rank reaches the same verdict (ok or not): the job cannot split;
**   - N copies of one sendable header agree; the messages are NUL-terminated single lines
**     that fit their buffer.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mpi/header.h"

#define MAXR 8

static void need(int ok, const char *what) {
  if (!ok) {
    fprintf(stderr, "fuzz_mpi_header: %s\n", what);
    abort();
  }
}

static int same(const MpiHeader *a, const MpiHeader *b) {
  return a->kind == b->kind && a->op == b->op && a->vtype == b->vtype && a->root == b->root && a->rows == b->rows &&
         a->cols == b->cols && memcmp(&a->num, &b->num, sizeof a->num) == 0 && !strcmp(a->where, b->where);
}

static void check_msg(const char *msg, size_t msgn) {
  size_t k = strnlen(msg, msgn);
  need(k < msgn, "a message without its NUL");
  need(strchr(msg, '\n') == NULL, "a message of more than one line");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2 || size > 2 + MAXR * MPI_HDR_BYTES + 64) return 0;
  int n = 1 + data[0] % MAXR;
  size_t msgn = data[1] & 1 ? 1 + (size_t)(data[1] >> 1) % 200 : 900;
  uint8_t raw[MAXR][MPI_HDR_BYTES];
  memset(raw, 0, sizeof raw);
  for (int r = 0; r < n; r++) {
    size_t off = 2 + (size_t)r * MPI_HDR_BYTES;
    if (off < size) memcpy(raw[r], data + off, size - off < MPI_HDR_BYTES ? size - off : MPI_HDR_BYTES);
  }
  MpiHeader h[MAXR];
  char why[64];
  /* a wrong length is refused */
  need(!mpi_header_decode(raw[0], MPI_HDR_BYTES - 1 - data[1] % 8, n, &h[0], why, sizeof why), "a short header decoded");
  int ok = 1;
  for (int r = 0; r < n; r++) {
    if (!mpi_header_decode(raw[r], MPI_HDR_BYTES, n, &h[r], why, sizeof why)) { ok = 0; continue; }
    uint8_t again[MPI_HDR_BYTES];
    MpiHeader h2;
    mpi_header_encode(&h[r], again);
    need(mpi_header_decode(again, MPI_HDR_BYTES, n, &h2, why, sizeof why), "an encoded header does not decode");
    need(same(&h[r], &h2), "encode and decode disagree");
    char what[64];
    mpi_header_describe(&h[r], what, sizeof what);
    need(strlen(what) < sizeof what, "describe overran");
  }
  if (!ok) return 0;
  char *msg = malloc(msgn);
  if (!msg) return 0;
  MpiVerdict v0 = mpi_headers_check(h, n, 0, msg, msgn);
  check_msg(msg, msgn);
  for (int me = 1; me < n; me++) {
    MpiVerdict v = mpi_headers_check(h, n, me, msg, msgn);
    check_msg(msg, msgn);
    need((v == MPI_HDR_OK) == (v0 == MPI_HDR_OK), "the ranks reach different verdicts");
  }
  /* every rank sending rank 0's header: they agree unless its value cannot be sent */
  MpiHeader copy[MAXR];
  for (int r = 0; r < n; r++) copy[r] = h[0];
  bool sendable = h[0].vtype != MPI_V_OTHER;
  MpiVerdict vc = mpi_headers_check(copy, n, 0, msg, msgn);
  check_msg(msg, msgn);
  need(!sendable || vc == MPI_HDR_OK, "identical headers disagree");
  need(sendable || vc != MPI_HDR_OK, "a value that cannot be sent was accepted");
  free(msg);
  return 0;
}
