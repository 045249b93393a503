/*
** nvrtc_check.c — compiles with NVRTC, for sm_90 and without a GPU, a kernel that evaluates
** every elementwise op of ops.def through the headers the fusion groups' generated code gets
** (src/backend/cuda/nvrtc_headers.h), as backend.c writes it: a formula that C accepts and
** CUDA C++ does not fails make test wherever nvcc is, not first on a GPU. Exit 0 when it compiles.
*/
#include <stdio.h>
#include <stdlib.h>
#include <nvrtc.h>
#include "ops.h"
#include "backend/cuda/nvrtc_headers.h"

static const char kernel[] =
  "#include <math.h>\n#include \"ops.h\"\n#include \"scalar.h\"\n"
  "extern \"C\" __global__ void check(double *o, const double *a, const double *b, const int *op, long long n) {\n"
  "  long long k = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
  "  if (k < n) o[k] = op[k] < 0 ? sc_unary(-op[k], a[k]) : sc_binary(op[k], a[k], b[k]);\n"
  "}\n";

int main(void) {
  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, kernel, "check.cu", NVRTC_NHEADERS, nvrtc_header_src, nvrtc_header_names);
  if (r != NVRTC_SUCCESS) { fprintf(stderr, "nvrtc_check: create: %s\n", nvrtcGetErrorString(r)); return 1; }
  const char *opts[] = { "--gpu-architecture=sm_90", "--std=c++17", "-default-device" };
  r = nvrtcCompileProgram(prog, 3, opts);
  size_t n = 0;
  nvrtcGetProgramLogSize(prog, &n);
  char *log = malloc(n + 1);
  if (log) { nvrtcGetProgramLog(prog, log); log[n] = '\0'; }
  if (r != NVRTC_SUCCESS) {
    fprintf(stderr, "nvrtc_check: the fusion headers do not compile: %s\n%s\n", nvrtcGetErrorString(r), log ? log : "");
    return 1;
  }
  nvrtcDestroyProgram(&prog);
  free(log);
  int ew = 0;
#define OP(name, sym, arity, flags)
#define EW1(NAME, SYM, FLAGS, WHERE, F, VEC, RULE, TXT, KIND) ew++;
#define EW2(NAME, SYM, FLAGS, F, RULE_X, RULE_Y, TXT_X, KIND_X, TXT_Y, KIND_Y) ew++;
#include "ops/ops.def"
#undef OP
#undef EW1
#undef EW2
  printf("nvrtc_check: the formulas of %d elementwise ops compile for the GPU (sm_90)\n", ew);
  return 0;
}
