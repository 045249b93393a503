/*
** rng.c — xoshiro256** and its seeding; see rng.h.
*/
#include <math.h>
#include <time.h>
#include <unistd.h>
#include "rng.h"

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void rng_seed(uint64_t s[4], uint64_t seed) {
  for (int i = 0; i < 4; i++) s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t rng_next(uint64_t s[4]) {
  uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0]; s[3] ^= s[1]; s[1] ^= s[2]; s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return r;
}

double rng_unif01(uint64_t s[4]) { return (double)(rng_next(s) >> 11) * 0x1.0p-53; }   /* [0, 1) */

double rng_normal01(uint64_t s[4]) {                        /* Box-Muller, one of the pair */
  double u1;
  do u1 = rng_unif01(s); while (u1 <= 0);
  double u2 = rng_unif01(s);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t *rng_stream(Interp *I, bool have_seed, double seed, uint64_t local[4]) {
  if (have_seed) {
    rng_seed(local, (uint64_t)(int64_t)seed);
    return local;
  }
  if (!I->rng_ready) {
    uint64_t s = I->seed_set ? I->seed : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)clock();
    rng_seed(I->rng, s);
    I->rng_ready = true;
  }
  return I->rng;
}
