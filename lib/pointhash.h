/*
 * pointhash.h — where one member's ring points sit.
 *
 * Point i of a member named `name` sits at XXH3-64 of the bytes (u8 len | name | u32 i,
 * big-endian): rd_point_hash() is that definition. A ring build hashes every point of every
 * member, 512 a member by default, and from one point to the next only the last four bytes
 * change. So a hasher is set up once per name with everything XXH3 does with the bytes that
 * stay, and per point does only the part the index reaches: one or two 64x64->128-bit
 * multiplies (none below 9 bytes) and XXH3's final mix, with no bytes written or read,
 * several points at once where the CPU has vector lanes for it. The answer is XXH3's, bit
 * for bit, on every kernel (tests/unit/test_pointhash.c checks every name length).
 */
#ifndef RD_POINTHASH_H
#define RD_POINTHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "member.h"

/** Largest encoded point: u8 len | name | u32 i. */
#define RD_POINT_BUF_MAX (1 + RD_NAME_MAX + 4)
/** Most points rd_point_hashes() computes in one call: enough that a call's set-up is a
 *  small share of 16 rounds of 8 lanes. */
#define RD_POINT_BATCH 128

/* One 8-byte word XXH3 reads from the encoding, as a function of the index's bytes x (the
 * index as XXH3 reads it, little-endian): c ^ ((x << sl) & m). */
struct rd_point_word {
    uint64_t c, m;
    uint8_t sl;
};

/* The hasher of one name: which of XXH3's paths its encoding takes (by length), and what of
 * that path does not depend on the index. */
struct rd_point_hasher {
    enum { RD_POINT_4TO8, RD_POINT_9TO16, RD_POINT_17TO128 } shape;
    uint64_t len;  /* of the encoding, index included: 5 .. RD_POINT_BUF_MAX */
    uint64_t acc;  /* 4..8: the secret's bitflip; 17..128: the chunks the index does not reach */
    unsigned nvar; /* 17..128: chunks the index reaches (1 or 2), two words each in w[] */
    struct rd_point_word w[4];
};

/** Writes the fixed part of a point's encoding (u8 len | name) to buf; returns its length. */
size_t rd_point_prefix(uint8_t *buf, const char *name, size_t len);
/** XXH3-64 of the encoding of point i of name[0..len), len <= RD_NAME_MAX. */
uint64_t rd_point_hash(const char *name, size_t len, uint32_t i);
/** Sets h up for the points of name[0..len), len <= RD_NAME_MAX. */
void rd_point_hasher_init(struct rd_point_hasher *h, const char *name, size_t len);
/** out[k] = rd_point_hash(name, len, i0 + k) for k < n, n <= RD_POINT_BATCH, on the
 *  fastest kernel this CPU runs. */
void rd_point_hashes(const struct rd_point_hasher *h, uint32_t i0, uint32_t n, uint64_t *out);

/* How rd_point_hashes() computes: one point at a time, or 4 (AVX2) or 8 (AVX-512) points in
 * the lanes of a vector (x86-64 only), whichever the CPU runs, widest first. */
enum rd_point_kernel { RD_POINT_X1, RD_POINT_X4, RD_POINT_X8 };
/** Whether this CPU (and build) runs kernel k. */
bool rd_point_kernel_runs(enum rd_point_kernel k);
/** The kernel rd_point_hashes() uses. */
enum rd_point_kernel rd_point_kernel_best(void);
/** rd_point_hashes() on kernel k, which must run here (tests compare the kernels). */
void rd_point_hashes_with(enum rd_point_kernel k, const struct rd_point_hasher *h, uint32_t i0,
                          uint32_t n, uint64_t *out);

#endif
