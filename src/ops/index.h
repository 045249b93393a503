/*
** index.h — the indexing op family on evaluated values: X[i, j] read (the op INDEX), written
** (X[i, j] = v) and scattered (the op SCATTER, INDEX's adjoint), logical masks included. The
** evaluator (eval.c), autodiff (the kernels of INDEX and SCATTER, ad_set_index) and builtins
** call it; it calls ops and autodiff, never the evaluator (tools/check_layers.py).
*/
#ifndef MLS_OPS_INDEX_H
#define MLS_OPS_INDEX_H

#include <stdint.h>
#include "state.h"

/* x[i, j] on evaluated values (VT_NULL index = whole dimension); the op INDEX. Arguments
** borrowed; result owned. */
Value index_read(Interp *I, Value x, int nix, const Value *iv, Span sp);
/* The same where bit i of ranges says iv[i] is a range of at least three consecutive values
** (a:(a + k), k >= 2): never a mask, so a staged one needs no value to say what it selects,
** and the read is a graph op with the range's values as its input (a slice at a traced offset). */
Value index_read_ranges(Interp *I, Value x, int nix, const Value *iv, unsigned ranges, Span sp);
/* X = X[perm, ] on a dense CPU matrix x that nothing but the assigned variable holds (the
** evaluator lends it, eval.c lend_target): when perm (borrowed) is a vector of the positions
** 1..nrow(x), each once, x's rows are permuted in place, row by row with memcpy along each
** cycle, and true is returned (x's result is x itself); false, nothing touched, for any other
** index, which takes index_read's path and its errors. No allocation of x's size, and it
** runs to its end (no interrupt leaves x half permuted). */
bool index_permute_rows(Interp *I, Tensor *x, Value perm, Span sp);
/* index_read and index_scatter on an x (a v) whose elements are not known (an abstract trace,
** staging/stage.c): their checks and errors, then zeros of their result's type and shape
** (tensor_abstract; a number 0), no element read. Arguments borrowed; result owned. */
Value index_read_abstract(Interp *I, Value x, int nix, const Value *iv, Span sp);
Value index_scatter_abstract(Interp *I, int64_t rows, int64_t cols, int nix, const Value *iv, Span sp);
/* X[.., a:b, ..] before a:b is built: the index of position i (of nix) checked against X's
** shape from its ends a and b (borrowed), throwing the error the built index would give (its
** first value out of bounds), so X[1, 1:3e9] does not make a 3e9-element vector first. Does
** nothing where it cannot tell (not a matrix, ends not numbers, ends op_range rejects). */
void index_range_precheck(Interp *I, Value x, int nix, int i, Value a, Value b, Span sp);
/* *place[iv...] = rhs (X[i, j] = v, X[M] = v with a mask M) for evaluated indices iv[0..nix)
** (VT_UNBOUND = the whole dimension): the checks, then the write, copy-on-write (a number at
** *place becomes a 1x1 matrix); traced by grad or staging, through ad_set_index. *place is
** updated (the old value released); rhs and iv[] borrowed, though iv's entries may be
** overwritten (masks as positions, staged indices made concrete): read none after the call. */
void index_assign(Interp *I, Value *place, uint32_t nix, Value *iv, Value rhs, Span sp);
/* For a traced X[i, j] = v: false when the selected cells are distinct, else the selection
** reduced to the last write of each cell: the selection's rows and columns keep[] (1-based) and
** X's rows and columns at[] they write, host columns on the temporaries (owned there). */
bool index_last_writes(Interp *I, int64_t rows, int64_t cols, int nix, const Value *iv, Value keep[2], Value at[2],
                       int64_t *selr, int64_t *selc, Span sp);
/* zeros(rows, cols) with v at [i, j] (added where a cell is selected twice); the op SCATTER.
** Arguments borrowed; result owned. */
Value index_scatter(Interp *I, Value v, int64_t rows, int64_t cols, int nix, const Value *iv, Span sp);

#endif
