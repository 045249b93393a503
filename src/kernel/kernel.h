/*
** kernel.h — `mls --jupyter-kernel CONNECTION_FILE`: a Jupyter kernel (messaging protocol 5.3
** over ZeroMQ) around one Interp, so the cells of a notebook share their state (docs/jupyter.md).
*/
#ifndef MLS_KERNEL_H
#define MLS_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "interp/interp.h"

typedef struct Kernel Kernel;

/* The command line's kernel options (main.c). */
typedef struct KernelOptions {
  int64_t max_message;      /* --max-message-size: ZMQ_MAXMSGSIZE of every socket (bytes) */
  bool allow_no_key;        /* --allow-no-key: run without a key (unsigned messages), warning */
} KernelOptions;
/* The defaults: KERNEL_MAX_MESSAGE_DEFAULT, a key required. */
#define KERNEL_MAX_MESSAGE_DEFAULT ((int64_t)256 << 20)     /* 256 MiB */
void kernel_options_default(KernelOptions *o);

/* Reads the connection file, binds the five sockets and starts the heartbeat and control
** threads; sets I->out and I->stderr_to (streamed to iopub), I->echo, I->display, I->display_value
** and I->progress (display_data and update_display_data); watches the parent process. NULL with
** a message in err when the file is unreadable, has no key (unless o->allow_no_key), or a
** socket cannot be bound. I and o (NULL: the defaults) stay the caller's. */
Kernel *kernel_open_with(Interp *I, const char *connection_file, const KernelOptions *o, char *err, size_t errn);
/* kernel_open_with(I, connection_file, NULL, err, errn). */
Kernel *kernel_open(Interp *I, const char *connection_file, char *err, size_t errn);
/* Answers shell requests until a shutdown_request (shell or control), quit() or SIGTERM.
** Returns the exit status. */
int kernel_serve(Kernel *K);
/* Stops the threads, closes the sockets and gives I its stdout back; frees K. */
void kernel_close(Kernel *K);
/* The three above: 0 on a clean shutdown, 2 when the kernel could not start. */
int kernel_run(Interp *I, const char *connection_file, const KernelOptions *o);

/* kernel.c and wire.c are the plugin libmls_kernel.so (plugin.h), so that only `mls
** --jupyter-kernel` loads ZeroMQ, jansson and OpenSSL; its entry, mls_kernel_plugin: */
typedef struct KernelPlugin {
  int (*run)(Interp *I, const char *connection_file, const KernelOptions *o);   /* kernel_run */
} KernelPlugin;
/* For main.c (load.c, in the binary): loads the plugin and runs kernel_run; 2 with the reason
** on stderr when it cannot be loaded. */
int kernel_main(Interp *I, const char *connection_file, const KernelOptions *o);

#endif
