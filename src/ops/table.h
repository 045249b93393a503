/*
** table.h — THE op table as a leaf header: the op codes of ops.def, their flags, names and
** arities. It includes nothing else of MLS, so the backends (src/backend/, the CUDA plugin)
** and every layer above them can include it (docs/architecture.md).
*/
#ifndef MLS_OPS_TABLE_H
#define MLS_OPS_TABLE_H

/* OPF_RED: an op run by the reduction kernel family (backend/cpu_reduce.c): reductions (shape
**   from op_reduce), with OPF_KEEP scans and row-wise maps (op_scan), diag and ifelse.
** OPF_KEEP: the result has the input's shape (cumsum, cumprod, softmax; op_scan).
** OPF_DISCRETE: the result is piecewise constant (indices): its gradient is zero, not an error.
** OPF_NN: the deep-learning family (conv2d, pooling, bias; ops/nn.c, backend/cpu_conv.c). */
enum { OPF_EW = 1, OPF_CMP = 2, OPF_RED = 4, OPF_DIFF = 8, OPF_KEEP = 16, OPF_DISCRETE = 32, OPF_NN = 64 };

typedef enum OpKind {
#define OP(name, sym, arity, flags) OP_##name,
#include "ops/ops.def"
#undef OP
  OP_COUNT
} OpKind;

typedef struct OpInfo { const char *name; const char *sym; int arity; int flags; } OpInfo;
/* One row per op of ops.def, in its order (ops.c checks at compile time that none is missing). */
extern const OpInfo *const op_info;

#endif
