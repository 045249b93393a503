/*
** ops/shapes.h — the shape rule of every op of ops.def: the operands' shapes (and extras such
** as index values, sizes, a convolution's geometry) in; the result's shape, or the error the
** eager code gives, out. No data is touched and nothing is allocated (mls --check, explain).
*/
#ifndef MLS_OPS_SHAPES_H
#define MLS_OPS_SHAPES_H

#include "mls.h"
#include "ops.h"

/* What is known of a value. Each rule reads SK_NONE as SK_ANY. */
typedef enum ShapeKind {
  SK_NONE = 0,     /* no value: an unbound slot */
  SK_ANY,          /* anything */
  SK_NUMERIC,      /* a number, a boolean or a matrix (of unknown shape) */
  SK_NUM, SK_BOOL, SK_MAT, SK_STR, SK_LIST, SK_FUNC, SK_NULL
} ShapeKind;

#define SHAPE_UNKNOWN (-1)

typedef struct Shape {
  uint8_t kind;         /* ShapeKind */
  bool known;           /* SK_NUM, SK_BOOL (and a 1x1 SK_MAT): value holds the value */
  double value;
  int64_t rows, cols;   /* SK_MAT: SHAPE_UNKNOWN where not known */
  int32_t len;          /* SK_LIST: the number of items, or -1 */
} Shape;

/* One index of X[i, j] (INDEX, SCATTER, assignment): the empty index (the whole dimension), a
** value (a number, a boolean, a vector), or a range a:b written in the brackets, which the
** evaluator checks against X before it builds the vector (ops/index.c index_range_precheck). */
typedef enum ShapeIxKind { SIX_ALL, SIX_VALUE, SIX_RANGE } ShapeIxKind;
typedef struct ShapeIndex {
  uint8_t kind;         /* ShapeIxKind */
  Shape v;              /* SIX_VALUE */
  Shape from, to;       /* SIX_RANGE: the ends */
  Span span;            /* SIX_RANGE: the range's own span (the errors of ':') */
} ShapeIndex;

/* The extras an op takes besides its operands (zeroed: none known). */
typedef struct ShapeExtra {
  const char *name;     /* the builtin called, for its "bad argument" messages (INV as "inverse");
                        ** NULL: the op's symbol (the name of its builtin) */
  int64_t rows, cols;   /* RESHAPE, SCATTER: the result's size (SHAPE_UNKNOWN: not known) */
  int nix;              /* INDEX, SCATTER: how many indices are written (1 or 2) */
  bool dml_row;         /* INDEX: X[i] written in a .dml file (AST_F_DMLROW) */
  const ShapeIndex *ix; /* INDEX, SCATTER: nix of them */
  const double *nn;     /* OPF_NN but bias_*: the 11 geometry numbers of ops/nn.h, or NULL */
} ShapeExtra;

/* A located error: the span is the caller's sp, or a part's own (a range inside an index). */
typedef struct ShapeError { Span span; char msg[400]; } ShapeError;

typedef enum ShapeStatus {
  SHAPE_OK,             /* *out is the result's shape (what is known of it) */
  SHAPE_ERROR,          /* the op certainly fails with err (the eager code's message) */
  SHAPE_FAILS           /* the op certainly fails, but which error comes first is not known */
} ShapeStatus;

/* The result of op on in[0 .. arity) with extras x (NULL: none), as op_binary, op_unary,
** op_matmul, op_reduce ... of ops.c (and index_read, index_scatter, op_nn, the LAPACK
** builtins) would give it on values of those shapes, or their error, located at sp. Unknown
** parts of the operands give unknown parts of the result, never an error that might not
** happen. Pure: everything is borrowed, nothing allocated. */
ShapeStatus shape_rule(OpKind op, const Shape *in, const ShapeExtra *x, Span sp, Shape *out, ShapeError *err);
/* Whether op has a rule (every op but OP_NONE; tests/unit/test_shape_rules.c checks it). */
bool shape_has_rule(OpKind op);
/* X[i, j] = rhs (ops/index.c index_assign) on a target x with indices x->ix: the target's
** new shape or the error. x->dml_row as for INDEX. */
ShapeStatus shape_index_assign(Shape target, const ShapeExtra *x, Shape rhs, Span sp, Shape *out, ShapeError *err);

/* Constructors and helpers. */
Shape shape_any(void);
Shape shape_numeric(void);
Shape shape_num(double v);            /* a number of known value */
Shape shape_num_unknown(void);
Shape shape_bool(bool known, bool v);
Shape shape_mat(int64_t rows, int64_t cols);
Shape shape_of_kind(ShapeKind k);
/* Whether every part of s that a value of its kind has is known. */
bool shape_known(Shape s);
/* "a 3x4 matrix", "a number", "a list of 2", "NULL" (val_describe); false when unknown. */
bool shape_describe(Shape s, char *buf, size_t n);
/* The least shape above both (what is known of a value that is a or b). */
Shape shape_join(Shape a, Shape b);
bool shape_equal(Shape a, Shape b);

#endif
