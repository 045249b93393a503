/*
** diag.h — sources and diagnostics: a Source keeps its text and a table of line starts;
** diag_report() prints "file:line:col: error: msg", the line, and ^~~ under the span.
*/
#ifndef MLS_DIAG_H
#define MLS_DIAG_H

#include <stdio.h>
#include "mls.h"

typedef struct Source {
  int refcount;
  char *name;            /* as shown in messages: "script.mls", "<stdin>", "-e" */
  char *text;            /* NUL-terminated copy of the program */
  uint32_t len;
  uint32_t nlines;
  uint32_t *line_start;  /* byte offset of each line's first byte */
} Source;

/* Copies name and text; the caller owns the returned reference. */
Source *source_new(const char *name, const char *text, size_t len);
/* Reads a file; NULL (and errno) when it cannot be read. */
/* Reads a script; NULL with errno set when it cannot: EISDIR for a directory, EFBIG when it
** holds SOURCE_MAX_BYTES or more (a script is text typed by people; /dev/zero is not one). */
#define SOURCE_MAX_BYTES ((size_t)64 << 20)
Source *source_from_file(const char *path, const char *shown_name);
/* Why source_from_file failed, from errno, as a phrase ("is a directory", ...). */
const char *source_error(void);
void source_retain(Source *s);
void source_release(Source *s);

/* 1-based line and column of byte offset off. */
void diag_locate(const Source *s, uint32_t off, uint32_t *line, uint32_t *col);
/* "file:line:col" for messages such as call-stack lines. */
int diag_where(char *buf, size_t n, const Source *s, uint32_t off);
/* Prints "name:line:col: kind: msg", the source line and a caret line under sp. */
void diag_report(FILE *f, const Source *s, Span sp, const char *kind, const char *msg);

#endif
