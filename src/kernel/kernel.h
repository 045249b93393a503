/*
** kernel.h — `mls --jupyter-kernel CONNECTION_FILE`: a Jupyter kernel (messaging protocol 5.3
** over ZeroMQ) around one Interp, so the cells of a notebook share their state (docs/jupyter.md).
*/
#ifndef MLS_KERNEL_H
#define MLS_KERNEL_H

#include <stddef.h>
#include "interp/interp.h"

typedef struct Kernel Kernel;

/* Reads the connection file, binds the five sockets and starts the heartbeat and control
** threads; sets I->out (streamed to iopub), I->echo and I->display. NULL with a message in
** err when the file is unreadable or a socket cannot be bound. I stays the caller's. */
Kernel *kernel_open(Interp *I, const char *connection_file, char *err, size_t errn);
/* Answers shell requests until a shutdown_request (shell or control), quit() or SIGTERM.
** Returns the exit status. */
int kernel_serve(Kernel *K);
/* Stops the threads, closes the sockets and gives I its stdout back; frees K. */
void kernel_close(Kernel *K);
/* The three above, for main.c: 0 on a clean shutdown, 2 when the kernel could not start. */
int kernel_main(Interp *I, const char *connection_file);

#endif
