/*
** ops.h — op codes from ops.def, their names and arities, and the eager entry points that
** check shapes ("shape inference"), allocate results and dispatch to the backend.
** Arguments are borrowed; every returned Value is owned by the caller (+1).
*/
#ifndef MLS_OPS_H
#define MLS_OPS_H

#include "mls.h"

enum { OPF_EW = 1, OPF_CMP = 2, OPF_RED = 4, OPF_DIFF = 8 };

typedef enum OpKind {
#define OP(name, sym, arity, flags) OP_##name,
#include "ops.def"
#undef OP
  OP_COUNT
} OpKind;

typedef struct OpInfo { const char *name; const char *sym; int arity; int flags; } OpInfo;
extern const OpInfo op_info[OP_COUNT];

#endif

/* ---- eager evaluation of ops (ops.c): check shapes, allocate, dispatch to the backend ----
** Arguments are borrowed; results are owned by the caller. These are the single entry points
** that the tape (grad) and the graph stager hook into. */
#include "value.h"
Value op_binary(Interp *I, OpKind op, Value a, Value b, Span sp);
Value op_unary(Interp *I, OpKind op, Value a, Span sp);
Value op_matmul(Interp *I, Value a, Value b, Span sp);
Value op_transpose(Interp *I, Value a, Span sp);
Value op_reduce(Interp *I, OpKind op, Value a, Span sp);
Value op_range(Interp *I, Value a, Value b, Span sp);
/* A string of the value for '+' and paste(): 15 significant digits (LANGUAGE.md §15). */
Value op_concat(Interp *I, Value a, Value b, Span sp);
