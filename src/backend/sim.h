/*
** sim.h — the simulated GPU (sim.c): "gpu" when $MLS_SIM_GPU is set, for testing the device
** paths without one. sim_calls counts what its device entries did (the unit tests read it).
*/
#ifndef MLS_SIM_H
#define MLS_SIM_H

#include "backend/backend.h"

typedef struct SimCalls { int copy2d, gather, scatter, getrf, getrs, download, capture, capture_broken, replay, pinned, combine; } SimCalls;
extern SimCalls sim_calls;
extern const Backend be_sim;

#endif
