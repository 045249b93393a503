/*
** nvrtc_headers.h — the headers NVRTC compiles into every generated kernel (fusion groups,
** backend.c): math.h's few definitions, the OP_ codes, scalar.h and the ops.def rows it
** expands, so a generated kernel evaluates the very formulas of the CPU kernels. Shared with
** tests/gpu/nvrtc_check.c, which compiles them without a GPU.
*/
#ifndef MLS_NVRTC_HEADERS_H
#define MLS_NVRTC_HEADERS_H

static const char scalar_h[] =
#include "scalar_h.inc"
;
static const char ops_def[] =                /* the elementwise rows scalar.h expands */
#include "ops_def.inc"
;
static const char math_h[] =                 /* NVRTC has the math functions built in */
  "#define NAN __longlong_as_double(0x7ff8000000000000LL)\n"
  "#define M_SQRT2 1.41421356237309504880\n"
  "#define isnan(x) ((x) != (x))\n";
static const char ops_h[] =                  /* OP_ codes numbered as ops.h numbers them */
  "enum {\n"
#define OP(name, sym, arity, flags) "OP_" #name ",\n"
#include "ops/ops.def"
#undef OP
  "};\n";

/* the rows the string above numbers: every op of ops.def (a row its expansion dropped would
** renumber the codes after it on the GPU) */
enum {
  NVRTC_OPS = 0
#define OP(name, sym, arity, flags) + 1
#include "ops/ops.def"
#undef OP
};
_Static_assert((int)NVRTC_OPS == (int)OP_COUNT, "ORDER OP: the generated kernels' op codes follow ops.def");

enum { NVRTC_NHEADERS = 4 };
static const char *const nvrtc_header_src[NVRTC_NHEADERS] = { math_h, ops_h, scalar_h, ops_def };
static const char *const nvrtc_header_names[NVRTC_NHEADERS] = { "math.h", "ops.h", "scalar.h", "ops/ops.def" };

#endif
