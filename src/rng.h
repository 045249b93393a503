/*
** rng.h — the random number generator: xoshiro256** seeded by splitmix64 (Blackman & Vigna),
** so the same seed gives the same stream on every run and machine.
*/
#ifndef MLS_RNG_H
#define MLS_RNG_H

#include <stdint.h>
#include "interp/interp.h"

void rng_seed(uint64_t s[4], uint64_t seed);
uint64_t rng_next(uint64_t s[4]);
double rng_unif01(uint64_t s[4]);        /* [0, 1), 53 bits */
double rng_normal01(uint64_t s[4]);      /* Box-Muller */
/* The stream for a call: a fresh one from seed= when given (local is filled and returned),
** else the interpreter's own, seeded once from --seed or from the clock. */
uint64_t *rng_stream(Interp *I, bool have_seed, double seed, uint64_t local[4]);

#endif
