/*
** cpu.h — kernel families of the CPU backend, one file each, dispatched by cpu.c's cpu_run.
*/
#ifndef MLS_CPU_H
#define MLS_CPU_H

#include "backend/backend.h"

/* Process start-up of the CPU backend (threading policy). */
void cpu_init(void);

/* Reductions (ops with OPF_RED): out has the reduced shape; in[0] is contiguous. */
int cpu_run_reduce(OpKind op, Tensor *out, Tensor *const in[], const OpParams *p);

#endif
