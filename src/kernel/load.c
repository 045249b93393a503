/*
** load.c — the part of the Jupyter kernel in the mls binary: its options' defaults, and
** loading the plugin libmls_kernel.so (kernel.c, wire.c; plugin.h) when --jupyter-kernel runs.
*/
#include <stdio.h>
#include "kernel/kernel.h"
#include "plugin.h"

void kernel_options_default(KernelOptions *o) {
  o->max_message = KERNEL_MAX_MESSAGE_DEFAULT;
  o->allow_no_key = false;
}

/* The kernel: linked in (the unit tests) or the plugin, loaded once per process. */
extern const KernelPlugin mls_kernel_plugin __attribute__((weak));
static Plugin kernel_lib = { .file = "libmls_kernel.so", .entry = "mls_kernel_plugin",
                             .needs = "the Jupyter kernel needs ZeroMQ, jansson and OpenSSL", .linked = &mls_kernel_plugin };

int kernel_main(Interp *I, const char *connection_file, const KernelOptions *o) {
  const KernelPlugin *k = plugin_get(&kernel_lib);
  if (!k) {
    fprintf(stderr, "mls: %s\n", kernel_lib.why);
    return 2;
  }
  return k->run(I, connection_file, o);
}
