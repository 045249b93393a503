/*
** print.h — turning values into text as R does (LANGUAGE.md §15): 15 significant digits for
** text ('+', paste, toString), 7 for display; matrices one row a line, columns right-aligned.
*/
#ifndef MLS_PRINT_H
#define MLS_PRINT_H

#include <signal.h>
#include <stdio.h>
#include "mls.h"
#include "value.h"

typedef struct TextBuf { char *p; size_t n, cap; } TextBuf;
void tb_init(TextBuf *t);
void tb_free(TextBuf *t);
void tb_putn(TextBuf *t, const char *s, size_t n);
void tb_puts(TextBuf *t, const char *s);
void tb_printf(TextBuf *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* tb_init, with t's buffer freed by any throw until tb_close (mls_defer): for a buffer built
** while code that may throw runs (formatting a value, evaluating, allocating). */
void tb_open(Interp *I, TextBuf *t);
void tb_close(Interp *I, TextBuf *t);     /* frees the buffer, undoing tb_open's registration */
/* The text as a string (+1): the buffer itself becomes it, no copy; t is left empty (freed).
** tb_close_str does the same for a buffer of tb_open, undoing its registration. */
Value tb_take_str(TextBuf *t);
Value tb_close_str(Interp *I, TextBuf *t);

/* A common format for numbers (R's formatReal): chosen for x[0], x[stride], ... (n of them)
** with `digits` significant digits, then applied to one number (NaN, Inf, -Inf as such). */
typedef struct NumFmt { bool sci; int rgt; int mant; int width; } NumFmt;
NumFmt fmt_choose(const double *x, int64_t n, int64_t stride, int digits);
int fmt_apply(char *buf, size_t n, double x, const NumFmt *f);
/* One number with up to `digits` significant digits, R's choice of fixed or scientific. */
void fmt_num(char *buf, size_t n, double x, int digits);
/* R's format(x, digits=, nsmall=) of n numbers: one common layout (fixed or scientific, as
** print chooses it for a column), at least nsmall decimals when fixed; each text into
** out + i * each (not padded). Returns the widest text's length. */
int fmt_nums(const double *x, int64_t n, int digits, int nsmall, char *out, size_t each);
/* The text of a value for '+' and paste (numbers to 15 digits, matrices in full). */
void fmt_value_text(Interp *I, TextBuf *t, Value v, Span sp);
/* Display form (print, REPL echo), with the elision of large matrices. quote: strings in "". */
void fmt_display(Interp *I, TextBuf *t, Value v, int digits, bool quote);
/* A matrix's rows, each column formatted R-style with `digits`; elide: cut big matrices. */
/* poll: I->interrupted is polled every 4096 rows; when it is set the text stops there (the
** caller raises the interrupt). */
void fmt_matrix(Interp *I, TextBuf *t, const struct Tensor *m, int digits, bool elide, bool poll);
/* A matrix as an HTML <table> (the Jupyter kernel's text/html): "[,j]" and "[i,]" labels, the
** rows and columns a terminal `width` columns wide shows ("..." cells where some are elided),
** then "[r x c matrix]" when cut; a sparse matrix's header is the table's caption. */
void fmt_matrix_html(Interp *I, TextBuf *t, const struct Tensor *m, int digits, int width);

#endif
