/*
** progen.h — a grammar-based generator of whole MLS programs (docs/robustness.md, "Generated
** programs"): loops with if, while, left-indexed and masked assignments, shape changes,
** function calls, errors in live and dead code, grad and jit calls. Its choices come from a
** Pick: bytes (the libFuzzer harness fuzz_prog: bytes choose productions) or a seeded PRNG
** (gen_diff, run by make test). Every program ends: loops have fixed trip counts or
** counters the generator alone assigns, and nothing recurses.
*/
#ifndef MLS_PROGEN_H
#define MLS_PROGEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the choices come from: data[0..n) then zeros (the smallest production), or a
** xorshift generator when data is NULL. */
typedef struct Pick {
  const uint8_t *data;
  size_t n, at;
  uint64_t rng;
} Pick;

void pick_bytes(Pick *p, const uint8_t *data, size_t n);
void pick_seed(Pick *p, uint64_t seed);

/* Writes one program; returns it NUL-terminated, owned by the caller (free()), its length
** in *len. NULL only when out of memory. */
char *progen(Pick *p, size_t *len);

/* The same grammar at another size: column vectors n x 1, rows 1 x n, matrices n x n (progen
** is n = 3), built from ramps, waves, constants and sparse patterns instead of literals; a
** loop over nrow() runs at most 3 times, and an n x n value above 9 x 9 is printed as sums
** (gen_diff --dim N: the kernels' paths for larger operands, threads, sparse storage). wide:
** the rest of the vocabulary too (log, asin, %/%, comparisons as values, pmin, rowMaxs, cummax,
** cumprod, inv, det, cholesky, eigen, outer, logsoftmax, ...: PG_WIDE, gen_diff --wide); PG_RECT:
** n x m operands too (m != n; products, chains of them, t(X) %*% X, trace and diag of products:
** gen_diff --rect); PG_EDGE: NaN, infinities, subnormals and empty matrices too (gen_diff
** --edge); PG_ARGS: parameters with defaults, calls by name and in another order (gen_diff
** --args); PG_SCOPE: closures made by a factory, functions as arguments, recursion, and a closure
** reading a name its function may assign later (gen_diff --scope); PG_LISTS: a list of
** parameters, grad and jit over it, value_and_grad destructured, loops over lists (gen_diff
** --lists); PG_DML: a DML function of two results (typed parameters, a default), destructured,
** inside function literals too, `+=`, `parfor` (gen_diff --dml); PG_FRAMES: a frame read as
** numbers and changed (gen_diff --frames). Without a flag a seed's
** programs are those it always gave. */
enum { PG_WIDE = 1, PG_RECT = 2, PG_EDGE = 4, PG_ARGS = 8, PG_SCOPE = 16, PG_LISTS = 32, PG_DML = 64, PG_FRAMES = 128 };
char *progen_dim(Pick *p, size_t *len, int dim, unsigned flags);

/* Writes a program whose function F(x, y) (a body of the same grammar, calling f1.. and grad
** and jit) has its gradient in x at a point checked against finite differences: a line
** "FDMISMATCH ..." on stdout where they disagree (gen_diff --grad). At dim 3 every entry and,
** for a column x, the Hessian; at n x 1, 1 x n and n x n (progen_dim's shapes) the gradient
** along two directions (central differences and jvp along each), no Hessian. */
char *progen_grad_dim(Pick *p, size_t *len, int dim, unsigned flags);

#endif
