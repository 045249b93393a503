/*
** ops/table.c — the op table's rows (names, symbols, arities, flags), expanded from ops.def;
** op_info is what every layer reads about an op (ops/table.h).
*/
#include "ops.h"

static const OpInfo op_rows[] = {
#define OP(name, sym, arity, flags) { #name, sym, arity, flags },
#include "ops/ops.def"
#undef OP
};
/* sized by its rows, not by OP_COUNT: an expansion that drops a row (a new row kind that
** does not default to OP) cannot build */
_Static_assert(sizeof op_rows / sizeof op_rows[0] == OP_COUNT, "ORDER OP: op_info follows ops.def");
const OpInfo *const op_info = op_rows;
