/*
 * pointhash_lanes.h — rd_point_hashes()'s loop for one vector width: LANES points at a time,
 * one point per 64-bit lane.
 *
 * Shape: a template. The arithmetic is the scalar loop's (pointhash.c) at every width; only
 * the instruction set and a few of its instructions differ, so pointhash.c includes this
 * file once per width, after defining:
 *   LANES              points per vector
 *   lanes_t            a vector of LANES uint64_t (GCC's vector extension, whose operators
 *                      are the lane-wise ones and take a scalar as a broadcast)
 *   LANES_ATTR         the function attribute that enables the width's instruction set
 *   LANES_MUL32(a, b)  per lane, the 64-bit product of the low 32 bits of a and of b
 *   LANES_MUL64(a, b)  optional: per lane, a * b modulo 2^64 in one instruction
 *   LANES_BSWAP(v)     per lane, the 8 bytes of v in reverse order
 *   LANES_FN           the name of the loop
 * and undefines them at its end. Two copies by hand would drift. The multiplies are the
 * includer's because GCC turns a vector-extension multiply into neither a 32x32 -> 64-bit
 * one nor, without AVX-512, anything short.
 *
 * The lanes compute XXH3's own primitives: XXH3_mul128_fold64 from four 32-bit products,
 * a 64-bit multiply from three, XXH3_avalanche and XXH3_rrmxmx; test_pointhash checks every
 * name length against libxxhash.
 */

#define LANES_CAT_(x, n) x##_x##n
#define LANES_CAT(x, n)  LANES_CAT_(x, n)
#define LN(x)            LANES_CAT(x, LANES)

/* a * b modulo 2^64 */
LANES_ATTR static inline lanes_t LN(mul_lo)(lanes_t a, lanes_t b)
{
#ifdef LANES_MUL64
    return LANES_MUL64(a, b);
#else
    return LANES_MUL32(a, b) + ((LANES_MUL32(a, b >> 32) + LANES_MUL32(a >> 32, b)) << 32);
#endif
}

/* XXH3_mul128_fold64: the low and high halves of the 128-bit product, XORed */
LANES_ATTR static inline lanes_t LN(fold)(lanes_t a, lanes_t b)
{
    lanes_t ah = a >> 32, bh = b >> 32;
    lanes_t ll = LANES_MUL32(a, b), lh = LANES_MUL32(a, bh);
    lanes_t hl = LANES_MUL32(ah, b), hh = LANES_MUL32(ah, bh);
    lanes_t mid = (ll >> 32) + (lh & 0xffffffffu) + (hl & 0xffffffffu); /* < 3 * 2^32 */
    lanes_t hi = hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
    lanes_t lo = (mid << 32) | (ll & 0xffffffffu);
    return lo ^ hi;
}

LANES_ATTR static inline lanes_t LN(avalanche)(lanes_t h)
{
    lanes_t k = {0};
    k += 0x165667919E3779F9ULL;
    h ^= h >> 37;
    h = LN(mul_lo)(h, k);
    return h ^ (h >> 32);
}

LANES_ATTR static inline lanes_t LN(rrmxmx)(lanes_t h, uint64_t len)
{
    lanes_t k = {0};
    k += 0x9FB21C651E98DF25ULL;
    h ^= ((h << 49) | (h >> 15)) ^ ((h << 24) | (h >> 40));
    h = LN(mul_lo)(h, k);
    h ^= (h >> 35) + len;
    h = LN(mul_lo)(h, k);
    return h ^ (h >> 28);
}

/* word_value() in every lane */
LANES_ATTR static inline lanes_t LN(word)(const struct rd_point_word *w, lanes_t x)
{
    return w->c ^ ((x << w->sl) & w->m);
}

/* out[k] = the hash of point i0 + k for k below n rounded down to LANES; returns that count. */
LANES_ATTR static uint32_t LANES_FN(const struct rd_point_hasher *restrict h, uint32_t i0,
                                    uint32_t n, uint64_t *restrict out)
{
    lanes_t i; /* the indexes in the low 32 bits; a carry above them is never read */
    for (unsigned l = 0; l < LANES; l++)
        i[l] = (uint64_t)i0 + l;
    uint32_t k = 0;
    lanes_t v;
    switch (h->shape) {
    case RD_POINT_4TO8:
        for (; k + LANES <= n; k += LANES, i += LANES) {
            lanes_t x = LANES_BSWAP(i) >> 32; /* XXH_swap32 of the low 32 bits */
            lanes_t first = LN(word)(&h->w[0], x) & 0xffffffffu;
            v = LN(rrmxmx)((x + (first << 32)) ^ h->acc, h->len);
            memcpy(out + k, &v, sizeof v);
        }
        break;
    case RD_POINT_9TO16:
        for (; k + LANES <= n; k += LANES, i += LANES) {
            lanes_t x = LANES_BSWAP(i) >> 32;
            lanes_t lo = LN(word)(&h->w[0], x), hi = LN(word)(&h->w[1], x);
            v = LN(avalanche)(h->len + LANES_BSWAP(lo) + hi + LN(fold)(lo, hi));
            memcpy(out + k, &v, sizeof v);
        }
        break;
    case RD_POINT_17TO128:
        for (; k + LANES <= n; k += LANES, i += LANES) {
            lanes_t x = LANES_BSWAP(i) >> 32;
            lanes_t acc = {0};
            acc += h->acc;
            for (unsigned w = 0; w < h->nvar; w++)
                acc += LN(fold)(LN(word)(&h->w[2 * w], x), LN(word)(&h->w[2 * w + 1], x));
            v = LN(avalanche)(acc);
            memcpy(out + k, &v, sizeof v);
        }
        break;
    }
    return k;
}

#undef LN
#undef LANES_CAT
#undef LANES_CAT_
/* the includer's, so that it can define them again for the next width */
#undef LANES
#undef lanes_t
#undef LANES_ATTR
#undef LANES_MUL32
#undef LANES_MUL64
#undef LANES_BSWAP
#undef LANES_FN
