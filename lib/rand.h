/*
 * rand.h — the core's only source of randomness: a small seeded generator (splitmix64).
 *
 * The membership core takes its seed from the caller, so a simulated run replays bit for
 * bit from one number. Not for cryptography.
 */
#ifndef RD_RAND_H
#define RD_RAND_H

#include <stdint.h>

struct rd_rand {
    uint64_t state;
};

/** Seeds the generator; any value, 0 included, is fine. */
static inline void rd_rand_seed(struct rd_rand *r, uint64_t seed)
{
    r->state = seed;
}

/** Next 64 random bits. */
static inline uint64_t rd_rand_next(struct rd_rand *r)
{
    uint64_t z = (r->state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/** Uniform integer in [0, n); n > 0. (Bias below 2^-32 for the n used here.) */
static inline uint32_t rd_rand_below(struct rd_rand *r, uint32_t n)
{
    return (uint32_t)(((rd_rand_next(r) >> 32) * (uint64_t)n) >> 32);
}

#endif
