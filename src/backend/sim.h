/*
** sim.h — the simulated GPU (sim.c): "gpu" when $MLS_SIM_GPU is set, for testing the device
** paths without one. Its instance counts what its device entries did (sim_calls: the unit
** tests read them).
*/
#ifndef MLS_SIM_H
#define MLS_SIM_H

#include "backend/backend.h"

typedef struct SimCalls {
  int copy2d, gather, scatter, getrf, getrs, download, capture, capture_broken, replay, pinned, combine;
  int spmm[3], spmm_upload, spmm_free;   /* sparse products by form (backend.h SPMM_*), CSR copies made and freed */
} SimCalls;
extern const Backend be_sim;
/* A simulated GPU (+1) whose kernels run on the CPU instance cpu (held while it lives); NULL
** when out of memory. */
Backend *sim_new(const Backend *cpu);
/* The counts of the simulated GPU be (an instance of be_sim); the tests may reset them. */
SimCalls *sim_calls(const Backend *be);

#endif
