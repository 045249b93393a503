/*
** frame.h — SystemDS's frame (docs/frames.md): a two-dimensional table whose columns each have
** a value type (the schema) and a name. The value is refcounted like a matrix and holds no
** other values (its cells are doubles or owned C strings), so the cycle collector never sees it.
** Ownership as value.h: *_new and functions returning Value give the caller a reference (+1);
** arguments are borrowed. Errors are mls_throw at the span given.
*/
#ifndef MLS_FRAME_H
#define MLS_FRAME_H

#include "print.h"
#include "state.h"

/* The value types of a column, SystemDS's spelling (grep ORDER FT). */
typedef enum FrameType { FT_STRING, FT_INT64, FT_INT32, FT_FP64, FT_FP32, FT_BOOLEAN, FT_COUNT } FrameType;

/* One column: a STRING column keeps s[rows] (NULL = NA), the others d[rows] (NaN = NA; a
** BOOLEAN cell is 0 or 1; an INT cell a whole number). */
typedef struct FrameCol {
  uint8_t type;                /* FrameType */
  char *name;
  double *d;
  char **s;
  char *mv;                    /* a transform meta frame's imputed value of the column (SystemDS's
                               ** column metadata), or NULL; kept by indexing and copies */
} FrameCol;

typedef struct FrameBlock {
  int32_t refcount;
  int64_t rows, ncol;
  FrameCol *cols;
  uint64_t charged;            /* bytes counted against --max-memory (mem_charge), given back at free */
} FrameBlock;

static inline Value val_frame(FrameBlock *f) { Value v; v.t = VT_FRAME; v.u.fr = f; return v; }
void frame_free(FrameBlock *f);

/* "STRING", "INT64", ...; frame_type_parse takes any case ("fp64", "String"), -1 if unknown. */
const char *frame_type_name(int t);
int frame_type_parse(const char *s);
static inline bool frame_numeric(int t) { return t != FT_STRING; }

/* A new rows x ncol frame of the given types (NULL: all STRING), NA cells, names C1..Cn. It is
** held on I's temp stack, which owns the reference: the caller retains it to keep it past a
** tmp_release_to. sp locates the out-of-memory error. */
FrameBlock *frame_held(Interp *I, int64_t rows, int64_t ncol, const uint8_t *types, Span sp);
/* The same with room for capcols columns and none yet; frame_add_col appends one (NA cells). */
FrameBlock *frame_held_empty(Interp *I, int64_t rows, int64_t capcols, Span sp);
void frame_add_col(Interp *I, FrameBlock *f, int type, Span sp);
/* A copy of f (held as frame_held), for copy-on-write. */
FrameBlock *frame_copy_held(Interp *I, const FrameBlock *f, Span sp);
void frame_set_name(Interp *I, FrameBlock *f, int64_t c, const char *name, Span sp);
void frame_set_mv(Interp *I, FrameBlock *f, int64_t c, const char *mv, Span sp);   /* mv may be NULL */

/* Cell (r, c) (0-based) from text: NULL, "" and "NA" are NA; a numeric column parses the text
** ("'abc' is not a valid INT64 (row 2, column 1)" otherwise). */
void frame_set_text(Interp *I, FrameBlock *f, int64_t r, int64_t c, const char *s, Span sp);
/* Cell (r, c) from a number: a STRING column stores its text (15 digits), an INT column a
** whole number (an error otherwise), a BOOLEAN column x != 0. */
void frame_set_num(Interp *I, FrameBlock *f, int64_t r, int64_t c, double x, Span sp);
/* Cell (r, c) from a number, boolean or string value. */
void frame_set_value(Interp *I, FrameBlock *f, int64_t r, int64_t c, Value v, Span sp);
/* The text of cell (r, c) (a number in 15 digits, TRUE/FALSE), or NULL for NA. buf: 48 bytes. */
const char *frame_get_text(const FrameBlock *f, int64_t r, int64_t c, char *buf);
/* Cell (r, c) as a number: NA is NaN; false when a STRING cell does not parse as one. */
bool frame_get_num(const FrameBlock *f, int64_t r, int64_t c, double *x);
/* Cell (r, c) as a value: a string for STRING, a boolean for BOOLEAN, else a number. */
Value frame_cell_value(Interp *I, const FrameBlock *f, int64_t r, int64_t c);

/* The type a text cell suggests (detectSchema): BOOLEAN, INT64, FP64 or STRING. */
int frame_detect_text(const char *s);

/* Conversions: a matrix to an FP64 frame; a list of numbers/strings/matrices to a frame of one
** row (a matrix element gives its columns); a frame to a matrix of doubles (an error naming the
** first cell that is not a number). */
Value frame_from_matrix(Interp *I, const struct Tensor *m, Span sp);
Value frame_to_matrix(Interp *I, const FrameBlock *f, Span sp);
/* a op b for a comparison op (OP_EQ..OP_GE), a or b a frame, the other a frame of the same
** shape or a number, boolean or string: a matrix of 0/1 (docs/frames.md). Two numbers compare
** as numbers, else both as text (a number in 15 digits); an NA cell is unequal to everything. */
Value frame_compare(Interp *I, int op, Value a, Value b, Span sp);

/* F[i, j] with evaluated indices (VT_UNBOUND/VT_NULL = all; numbers or vectors of positions),
** always a frame. F[i, j] = v: v a frame of the selected shape, or a number/string filling it. */
Value frame_index(Interp *I, const FrameBlock *f, int nix, const Value *iv, Span sp);
void frame_assign(Interp *I, Value *place, int nix, const Value *iv, Value rhs, Span sp);
/* rbind (rows true) or cbind of n frames. */
Value frame_bind(Interp *I, bool rows, int n, const Value *v, Span sp);

/* R's print of a data.frame: a header of column names, then one row a line with its number;
** elide: only the first 20 rows and a "[rows x cols frame]" line. */
void frame_format(Interp *I, TextBuf *t, const FrameBlock *f, int digits, bool elide);

#endif
