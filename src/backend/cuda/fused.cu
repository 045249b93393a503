/*
** fused.cu — staged fusion groups as generated kernels: backend.c writes a group's CUDA C,
** NVRTC compiles it for this GPU at staging time (the first run), and the module is kept by
** its source text, so every later run of the graph launches the cached kernel directly.
** scalar.h is compiled into each program as a header: the formulas are the CPU's.
*/
#include <stdio.h>
#include <string.h>
#include <string>
#include <unordered_map>
#include <nvrtc.h>
#include "cuda_impl.h"

int mcu_sum_partials(McuContext *cx, double *out, const double *part, int np);   /* kernels_red.cu */

static int nvrtc_fail(McuContext *cx, nvrtcResult r, const char *what) { return mcu_fail(cx, "NVRTC %s: %s", what, nvrtcGetErrorString(r)); }

static int compile(McuContext *cx, const char *src, const char *const *hdr_src, const char *const *hdr_names, int nhdr, cudaKernel_t *out) {
  if (!cx->arch[0]) {
    int dev = 0, ma = 0, mi = 0;
    cudaGetDevice(&dev);
    cudaDeviceGetAttribute(&ma, cudaDevAttrComputeCapabilityMajor, dev);
    cudaDeviceGetAttribute(&mi, cudaDevAttrComputeCapabilityMinor, dev);
    if (ma == 0) { ma = 9; mi = 0; }           /* no device (a compile-only check): sm_90 */
    snprintf(cx->arch, sizeof cx->arch, "--gpu-architecture=sm_%d%d", ma, mi);
  }
  nvrtcProgram prog;
  nvrtcResult r = nvrtcCreateProgram(&prog, src, "mls_fused.cu", nhdr, hdr_src, hdr_names);
  if (r != NVRTC_SUCCESS) return nvrtc_fail(cx, r, "create");
  const char *opts[] = { cx->arch, "--std=c++17", "-default-device" };
  r = nvrtcCompileProgram(prog, 3, opts);
  if (r != NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    std::string log(n, '\0');
    nvrtcGetProgramLog(prog, &log[0]);
    nvrtcDestroyProgram(&prog);
    return mcu_fail(cx, "NVRTC could not compile a fusion group: %.200s", log.c_str());
  }
  size_t n = 0;
  nvrtcGetCUBINSize(prog, &n);
  std::string cubin(n, '\0');
  nvrtcGetCUBIN(prog, &cubin[0]);
  nvrtcDestroyProgram(&prog);
  cudaLibrary_t lib;
  cudaError_t e = cudaLibraryLoadData(&lib, cubin.data(), NULL, NULL, 0, NULL, NULL, 0);
  if (e != cudaSuccess) { cudaGetLastError(); return mcu_fail(cx, "loading a fused kernel: %s", cudaGetErrorString(e)); }
  e = cudaLibraryGetKernel(out, lib, "mls_fused");
  if (e != cudaSuccess) { cudaGetLastError(); return mcu_fail(cx, "finding a fused kernel: %s", cudaGetErrorString(e)); }
  return 0;
}

int mcu_fused_run(McuContext *cx, const char *src, const char *const *hdr_src, const char *const *hdr_names, int nhdr, void **args,
                  int64_t n, bool sum, double *out) {
  auto it = cx->kernels.find(src);
  cudaKernel_t k;
  if (it == cx->kernels.end()) {
    if (compile(cx, src, hdr_src, hdr_names, nhdr, &k)) return 1;
    cx->kernels.emplace(src, k);
  } else {
    k = it->second;
  }
  int64_t nb = (n + MCU_THREADS - 1) / MCU_THREADS;
  if (sum) nb = (n + 4 * MCU_THREADS - 1) / (4 * MCU_THREADS);
  int64_t cap = sum ? 1024 : (1 << 20);
  unsigned blocks = (unsigned)(nb < 1 ? 1 : nb > cap ? cap : nb);
  cudaError_t e = cudaLaunchKernel((const void *)k, dim3(blocks), dim3(MCU_THREADS), args, 0, cx->stream);
  if (e != cudaSuccess) { cudaGetLastError(); return mcu_fail(cx, "launching a fused kernel: %s", cudaGetErrorString(e)); }
  if (mcu_launched(cx, "fused")) return 1;
  if (sum) return mcu_sum_partials(cx, out, cx->scratch, (int)blocks);
  return 0;
}
