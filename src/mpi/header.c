/*
** header.c — the collective header (header.h): its 96-byte wire form, the checks on bytes that
** came from another rank, and the verdict that every rank reaches on the same set of headers.
*/
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "mpi/header.h"
#include "mpi/mpi.h"

/* Layout (little-endian):
**    0  4  magic "MLSc"            12  8  rows (int64)          36 60  where, NUL-terminated
**    4  1  version (1)             20  8  cols (int64)
**    5  1  kind  6  1  op  7  1  vtype          28  8  num (the bits of a double)
**    8  4  root (int32)                                                                    */
static const uint8_t magic[4] = { 'M', 'L', 'S', 'c' };
enum { VERSION = 1, OFF_ROOT = 8, OFF_ROWS = 12, OFF_COLS = 20, OFF_NUM = 28, OFF_WHERE = 36 };
_Static_assert(OFF_WHERE + MPI_HDR_WHERE == MPI_HDR_BYTES, "the header's fields fill its bytes");

static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

void mpi_header_encode(const MpiHeader *h, uint8_t out[MPI_HDR_BYTES]) {
  memset(out, 0, MPI_HDR_BYTES);
  memcpy(out, magic, 4);
  out[4] = VERSION;
  out[5] = (uint8_t)h->kind;
  out[6] = (uint8_t)h->op;
  out[7] = (uint8_t)h->vtype;
  uint32_t root = (uint32_t)h->root;
  for (int i = 0; i < 4; i++) out[OFF_ROOT + i] = (uint8_t)(root >> (8 * i));
  put64(out + OFF_ROWS, (uint64_t)h->rows);
  put64(out + OFF_COLS, (uint64_t)h->cols);
  uint64_t bits;
  memcpy(&bits, &h->num, sizeof bits);
  put64(out + OFF_NUM, bits);
  size_t n = strnlen(h->where, MPI_HDR_WHERE - 1);
  memcpy(out + OFF_WHERE, h->where, n);           /* the rest stays 0: the NUL */
}

static bool fail(char *why, size_t whyn, const char *msg) {
  if (why && whyn) snprintf(why, whyn, "%s", msg);
  return false;
}

#define MAX_ELEMS ((int64_t)1 << 53)               /* doubles a count can name exactly */

bool mpi_header_decode(const uint8_t *in, size_t n, int nranks, MpiHeader *h, char *why, size_t whyn) {
  memset(h, 0, sizeof *h);
  if (n != MPI_HDR_BYTES) return fail(why, whyn, "wrong length");
  if (memcmp(in, magic, 4) != 0) return fail(why, whyn, "not an MLS collective header");
  if (in[4] != VERSION) return fail(why, whyn, "another version of MLS");
  h->kind = in[5];
  h->op = in[6];
  h->vtype = in[7];
  uint32_t root = 0;
  for (int i = 0; i < 4; i++) root |= (uint32_t)in[OFF_ROOT + i] << (8 * i);
  h->root = (int32_t)root;
  h->rows = (int64_t)get64(in + OFF_ROWS);
  h->cols = (int64_t)get64(in + OFF_COLS);
  uint64_t bits = get64(in + OFF_NUM);
  memcpy(&h->num, &bits, sizeof bits);
  if (h->kind < MPI_K_BARRIER || h->kind >= MPI_K_COUNT) return fail(why, whyn, "unknown collective");
  if (h->vtype < 0 || h->vtype >= MPI_V_COUNT) return fail(why, whyn, "unknown value type");
  bool bcast = h->kind == MPI_K_BCAST || h->kind == MPI_K_MERGE_BCAST;
  if (h->kind == MPI_K_ALLREDUCE ? h->op > MPI_RED_MIN : h->op != 0) return fail(why, whyn, "unknown reduction");
  if (bcast ? h->root < 0 || h->root >= nranks : h->root != -1) return fail(why, whyn, "root out of range");
  /* which types each kind sends */
  bool typed = true;
  switch (h->kind) {
  case MPI_K_ALLREDUCE:
    typed = h->vtype == MPI_V_NUM || h->vtype == MPI_V_BOOL || h->vtype == MPI_V_MAT || h->vtype == MPI_V_OTHER;
    break;
  case MPI_K_BCAST: case MPI_K_MERGE_BCAST: typed = h->vtype != MPI_V_NONE; break;
  default: typed = h->vtype == MPI_V_NONE; break;
  }
  if (!typed) return fail(why, whyn, "a value type this collective does not send");
  /* the shape fields */
  bool ok;
  if (h->vtype == MPI_V_MAT)
    ok = h->rows >= 0 && h->cols >= 0 && h->rows <= MAX_ELEMS && h->cols <= MAX_ELEMS &&
         (h->cols == 0 || h->rows <= MAX_ELEMS / h->cols);
  else if (h->kind == MPI_K_GRADS)         /* num: the shapes' hash, a whole number below 2^52 */
    ok = h->rows >= 0 && h->rows <= MAX_ELEMS && h->cols >= 1 && h->cols <= MAX_ELEMS && h->num >= 0 &&
         h->num < 4503599627370496.0 && (double)(int64_t)h->num == h->num;
  else if (h->vtype == MPI_V_STR || h->kind == MPI_K_PARFOR || h->kind == MPI_K_MERGE_GATHER)
    ok = h->rows >= 0 && h->rows <= MAX_ELEMS && h->cols == 0;
  else
    ok = h->rows == 0 && h->cols == 0;
  if (!ok) return fail(why, whyn, "a shape out of range");
  const uint8_t *w = in + OFF_WHERE;
  size_t k = 0;
  while (k < MPI_HDR_WHERE && w[k]) {
    if (w[k] < 0x20 || w[k] == 0x7f) return fail(why, whyn, "a control character in the location");
    k++;
  }
  if (k == MPI_HDR_WHERE) return fail(why, whyn, "an unterminated location");
  memcpy(h->where, w, k);
  h->where[k] = '\0';
  return true;
}

/* ORDER MpiKind: the name an error message starts with. */
static const char *const kind_name[MPI_K_COUNT] = {
  "?", "barrier", "allreduce", "bcast", "parfor (mode=REMOTE)", "parfor (mode=REMOTE)", "parfor (mode=REMOTE)",
  "the end of the script", "grad_allreduce"
};
static const char *const red_name[] = { "sum", "max", "min" };

void mpi_header_describe(const MpiHeader *h, char *buf, size_t n) {
  switch (h->kind) {
  case MPI_K_BARRIER: snprintf(buf, n, "called barrier()"); break;
  case MPI_K_ALLREDUCE: snprintf(buf, n, "called allreduce(op=\"%s\")", red_name[h->op <= MPI_RED_MIN ? h->op : 0]); break;
  case MPI_K_BCAST: snprintf(buf, n, "called bcast(root=%d)", h->root + 1); break;
  case MPI_K_PARFOR: snprintf(buf, n, "started parfor (mode=REMOTE)"); break;
  case MPI_K_MERGE_GATHER: case MPI_K_MERGE_BCAST: snprintf(buf, n, "merged the results of parfor (mode=REMOTE)"); break;
  case MPI_K_END: snprintf(buf, n, "reached the end of its script"); break;
  case MPI_K_GRADS: snprintf(buf, n, "called grad_allreduce(bucket=%lld)", (long long)h->cols); break;
  default: snprintf(buf, n, "sent an unknown collective"); break;
  }
}

/* Appends to msg (at *k of msgn bytes), keeping it NUL-terminated. */
static void add(char *msg, size_t msgn, size_t *k, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void add(char *msg, size_t msgn, size_t *k, const char *fmt, ...) {
  if (*k + 1 >= msgn) return;
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(msg + *k, msgn - *k, fmt, ap);
  va_end(ap);
  if (m > 0) *k = *k + (size_t)m < msgn ? *k + (size_t)m : msgn - 1;
}

static void shape_text(const MpiHeader *h, char *buf, size_t n) {
  if (h->vtype == MPI_V_MAT) snprintf(buf, n, "a %lldx%lld matrix", (long long)h->rows, (long long)h->cols);
  else if (h->vtype == MPI_V_NUM || h->vtype == MPI_V_BOOL) snprintf(buf, n, "a number");
  else snprintf(buf, n, "no number or matrix");
}

#define LISTED 6                                   /* ranks named in a message, at most */

MpiVerdict mpi_headers_check(const MpiHeader *all, int n, int me, char *msg, size_t msgn) {
  size_t k = 0;
  if (msgn) msg[0] = '\0';
  if (n < 1 || me < 0 || me >= n) { add(msg, msgn, &k, "collective: no ranks"); return MPI_HDR_MISMATCH; }
  const MpiHeader *h0 = &all[0], *mine = &all[me];
  const char *name = kind_name[mine->kind > 0 && mine->kind < MPI_K_COUNT ? mine->kind : 0];
  int d = 1;
  while (d < n && all[d].kind == h0->kind) d++;
  if (d < n) {                                     /* different collectives: name every side */
    add(msg, msgn, &k, "%s: the ranks called different collectives: ", name);
    for (int r = 0; r < n && r < LISTED; r++) {
      char what[64];
      mpi_header_describe(&all[r], what, sizeof what);
      add(msg, msgn, &k, "%srank %d %s at %s", r ? ", " : "", r + 1, what, all[r].where[0] ? all[r].where : "?");
    }
    if (n > LISTED) add(msg, msgn, &k, " (and %d more ranks)", n - LISTED);
    return MPI_HDR_MISMATCH;
  }
  switch (h0->kind) {
  case MPI_K_ALLREDUCE:
    for (int r = 0; r < n; r++)
      if (all[r].vtype == MPI_V_OTHER) {
        if (mine->vtype == MPI_V_OTHER) return MPI_HDR_BAD_SELF;
        add(msg, msgn, &k, "allreduce: rank %d's value is not a number or matrix (at %s)", r + 1, all[r].where);
        return MPI_HDR_MISMATCH;
      }
    for (int r = 1; r < n; r++)
      if (all[r].op != h0->op) {
        add(msg, msgn, &k, "allreduce: the ranks' reductions differ: rank 1 has op=\"%s\" at %s, rank %d has op=\"%s\" at %s",
            red_name[h0->op], h0->where, r + 1, red_name[all[r].op], all[r].where);
        return MPI_HDR_MISMATCH;
      }
    for (int r = 1; r < n; r++) {
      bool num0 = h0->vtype != MPI_V_MAT, numr = all[r].vtype != MPI_V_MAT;
      if (num0 != numr || (!num0 && (all[r].rows != h0->rows || all[r].cols != h0->cols))) {
        char a[64], b[64];
        shape_text(h0, a, sizeof a);
        shape_text(&all[r], b, sizeof b);
        add(msg, msgn, &k, "allreduce: the ranks' values differ in shape: rank 1 has %s, rank %d has %s", a, r + 1, b);
        return MPI_HDR_MISMATCH;
      }
    }
    return MPI_HDR_OK;
  case MPI_K_BCAST:
  case MPI_K_MERGE_BCAST:
    for (int r = 1; r < n; r++)
      if (all[r].root != h0->root) {
        add(msg, msgn, &k, "%s: the ranks name different roots: rank 1 has root=%d at %s, rank %d has root=%d at %s",
            name, h0->root + 1, h0->where, r + 1, all[r].root + 1, all[r].where);
        return MPI_HDR_MISMATCH;
      }
    if (all[h0->root].vtype == MPI_V_OTHER || all[h0->root].vtype == MPI_V_NONE) {
      if (me == h0->root) return MPI_HDR_BAD_SELF;
      add(msg, msgn, &k, "%s: rank %d's value is not a number, boolean, string or matrix (at %s)", name, h0->root + 1,
          all[h0->root].where);
      return MPI_HDR_MISMATCH;
    }
    return MPI_HDR_OK;
  case MPI_K_PARFOR:
  case MPI_K_MERGE_GATHER:
    for (int r = 1; r < n; r++)
      if (all[r].rows != h0->rows) {
        add(msg, msgn, &k, "parfor (mode=REMOTE): the ranks' %s differ: rank 1 has %lld, rank %d has %lld",
            h0->kind == MPI_K_PARFOR ? "iteration counts" : "results' sizes", (long long)h0->rows, r + 1,
            (long long)all[r].rows);
        return MPI_HDR_MISMATCH;
      }
    return MPI_HDR_OK;
  case MPI_K_GRADS:
    for (int r = 1; r < n; r++)
      if (all[r].rows != h0->rows || all[r].num != h0->num) {
        add(msg, msgn, &k, "grad_allreduce: the ranks' parameters differ in shape: rank 1 has %lld numbers at %s, rank %d has "
            "%lld%s at %s", (long long)h0->rows, h0->where, r + 1, (long long)all[r].rows,
            all[r].rows == h0->rows ? " in other shapes" : "", all[r].where);
        return MPI_HDR_MISMATCH;
      }
    for (int r = 1; r < n; r++)
      if (all[r].cols != h0->cols) {
        add(msg, msgn, &k, "grad_allreduce: the ranks' bucket sizes differ: rank 1 has bucket=%lld at %s, rank %d has "
            "bucket=%lld at %s", (long long)h0->cols, h0->where, r + 1, (long long)all[r].cols, all[r].where);
        return MPI_HDR_MISMATCH;
      }
    return MPI_HDR_OK;
  default:                                         /* barrier, end: nothing more to agree on */
    return MPI_HDR_OK;
  }
}
