/*
 * pointhash.c — where one member's ring points sit (see pointhash.h).
 *
 * Shape: XXH3-64 of 4 to 128 bytes reads its input only as little-endian words at offsets
 * set by the length, XORs them with words of its secret, combines them (from 9 bytes on,
 * with 128-bit multiplies folded to 64 bits) and mixes the result once. The index is the
 * last four bytes, so each word is a constant with the index's bytes XORed in at a fixed
 * shift, or without them (struct rd_point_word). The hasher keeps the words the index
 * reaches and sums the rest once. XXH3's own inline primitives and secret do the arithmetic
 * (XXH_INLINE_ALL); what is written here is only which words go where, as xxhash.h's
 * len_4to8, len_9to16 and len_17to128 paths read them. Those inline internals are xxhash
 * 0.8's: a version that renamed them would not compile, and XXH3's output has been frozen
 * since 0.8.0, which test_pointhash holds the hasher to.
 *
 * Kernels. Points are independent, so on x86-64 the same arithmetic runs 4 or 8 points
 * at a time in the 64-bit lanes of AVX2 or AVX-512 vectors (pointhash_lanes.h), chosen per
 * call by what the CPU reports, the scalar loop taking the points left over. In a full
 * ring build of 512k points that takes about a seventh off (bench/README.md). The build's
 * target stays generic x86-64; only these loops carry a target attribute.
 */
#include "pointhash.h"

#include <string.h>

/* The lane loops use GCC's vector extensions and x86's instructions, chosen at run time. */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define RD_POINT_HAS_LANES 1
#else
#define RD_POINT_HAS_LANES 0
#endif

#define XXH_INLINE_ALL
#include <xxhash.h>

_Static_assert(RD_NAME_MAX <= 255, "a name's length is encoded in one byte");
_Static_assert(RD_POINT_BUF_MAX <= 128, "XXH3 reads encodings up to 128 bytes as words");

size_t rd_point_prefix(uint8_t *buf, const char *name, size_t len)
{
    buf[0] = (uint8_t)len;
    memcpy(buf + 1, name, len);
    return 1 + len;
}

uint64_t rd_point_hash(const char *name, size_t len, uint32_t i)
{
    uint8_t buf[RD_POINT_BUF_MAX];
    if (len > RD_NAME_MAX) len = RD_NAME_MAX; /* a caller bug, truncated safely */
    size_t plen = rd_point_prefix(buf, name, len);
    uint8_t be[4] = {(uint8_t)(i >> 24), (uint8_t)(i >> 16), (uint8_t)(i >> 8), (uint8_t)i};
    memcpy(buf + plen, be, sizeof be);
    return XXH3_64bits(buf, plen + 4);
}

/*
 * The word at offset o of an encoding of len bytes whose fixed part is enc[0..len-4), XORed
 * with key; bytes past the encoding read as zero (the 4-to-8 path reads only the low half).
 * The index's bytes are bytes p .. p+3 of the word for p = len-4-o, those below 8 only:
 * none when p >= 8. XXH3 never reads a word that starts inside the index, so p >= 0.
 */
static struct rd_point_word word_at(const uint8_t *enc, size_t len, size_t o, uint64_t key)
{
    uint8_t b[8] = {0};
    for (size_t k = 0; k < 8; k++)
        if (o + k < len - 4) b[k] = enc[o + k];
    struct rd_point_word w = {XXH_readLE64(b) ^ key, 0, 0};
    size_t p = len - 4 - o;
    if (p < 8) {
        w.m = UINT64_MAX;
        w.sl = (uint8_t)(8 * p);
    }
    return w;
}

static inline uint64_t word_value(const struct rd_point_word *w, uint64_t x)
{
    return w->c ^ ((x << w->sl) & w->m);
}

/* The 16-byte chunks XXH3 reads from 17 to 128 bytes: offsets into the input and into the
 * secret, the first two always, the rest from the lengths that add them. */
static size_t chunks_17to128(size_t len, size_t in[8], size_t sec[8])
{
    size_t n = 0;
#define CHUNK(i, s) (in[n] = (i), sec[n] = (s), n++)
    CHUNK(0, 0);
    CHUNK(len - 16, 16);
    if (len > 32) {
        CHUNK(16, 32);
        CHUNK(len - 32, 48);
    }
    if (len > 64) {
        CHUNK(32, 64);
        CHUNK(len - 48, 80);
    }
    if (len > 96) {
        CHUNK(48, 96);
        CHUNK(len - 64, 112);
    }
#undef CHUNK
    return n;
}

void rd_point_hasher_init(struct rd_point_hasher *h, const char *name, size_t len)
{
    const uint8_t *s = XXH3_kSecret;
    uint8_t enc[RD_POINT_BUF_MAX];
    if (len > RD_NAME_MAX) len = RD_NAME_MAX;
    size_t n = rd_point_prefix(enc, name, len) + 4;
    h->len = n;
    h->nvar = 0;
    h->acc = 0;
    if (n <= 8) {
        h->shape = RD_POINT_4TO8;
        h->w[0] = word_at(enc, n, 0, 0);
        h->acc = XXH_readLE64(s + 8) ^ XXH_readLE64(s + 16);
    } else if (n <= 16) {
        h->shape = RD_POINT_9TO16;
        h->w[0] = word_at(enc, n, 0, XXH_readLE64(s + 24) ^ XXH_readLE64(s + 32));
        h->w[1] = word_at(enc, n, n - 8, XXH_readLE64(s + 40) ^ XXH_readLE64(s + 48));
    } else {
        size_t in[8], sec[8], nchunks = chunks_17to128(n, in, sec);
        h->shape = RD_POINT_17TO128;
        h->acc = n * XXH_PRIME64_1;
        for (size_t k = 0; k < nchunks; k++) {
            struct rd_point_word lo = word_at(enc, n, in[k], XXH_readLE64(s + sec[k]));
            struct rd_point_word hi = word_at(enc, n, in[k] + 8, XXH_readLE64(s + sec[k] + 8));
            if (lo.m | hi.m) { /* the index reaches it: the last chunk, and one more below 36 */
                h->w[2 * h->nvar] = lo;
                h->w[2 * h->nvar + 1] = hi;
                h->nvar++;
            } else {
                h->acc += XXH3_mul128_fold64(lo.c, hi.c);
            }
        }
    }
}

/* One point at a time, on any CPU. */
static void hashes_x1(const struct rd_point_hasher *h, uint32_t i0, uint32_t n, uint64_t *out)
{
    uint64_t len = h->len;
    switch (h->shape) {
    case RD_POINT_4TO8:
        for (uint32_t k = 0; k < n; k++) {
            uint64_t x = XXH_swap32(i0 + k);
            uint64_t first = (uint32_t)word_value(&h->w[0], x);
            out[k] = XXH3_rrmxmx((x + (first << 32)) ^ h->acc, len);
        }
        return;
    case RD_POINT_9TO16:
        for (uint32_t k = 0; k < n; k++) {
            uint64_t x = XXH_swap32(i0 + k);
            uint64_t lo = word_value(&h->w[0], x), hi = word_value(&h->w[1], x);
            out[k] = XXH3_avalanche(len + XXH_swap64(lo) + hi + XXH3_mul128_fold64(lo, hi));
        }
        return;
    case RD_POINT_17TO128:
        for (uint32_t k = 0; k < n; k++) {
            uint64_t x = XXH_swap32(i0 + k), acc = h->acc;
            for (unsigned v = 0; v < h->nvar; v++)
                acc += XXH3_mul128_fold64(word_value(&h->w[2 * v], x),
                                          word_value(&h->w[2 * v + 1], x));
            out[k] = XXH3_avalanche(acc);
        }
        return;
    }
}

#if RD_POINT_HAS_LANES
#include <immintrin.h>

/* vpshufb picks bytes within each 16-byte block; reversed, the first 8 and the second 8 */
#define BSWAP_LO 0x0001020304050607LL
#define BSWAP_HI 0x08090a0b0c0d0e0fLL

typedef uint64_t lanes4 __attribute__((vector_size(32)));
#define LANES             4
#define lanes_t           lanes4
#define LANES_ATTR        __attribute__((target("avx2")))
#define LANES_MUL32(a, b) ((lanes4)_mm256_mul_epu32((__m256i)(a), (__m256i)(b)))
#define LANES_BSWAP(v)                                                                             \
    ((lanes4)_mm256_shuffle_epi8((__m256i)(v),                                                     \
                                 _mm256_set_epi64x(BSWAP_HI, BSWAP_LO, BSWAP_HI, BSWAP_LO)))
#define LANES_FN hashes_x4
#include "pointhash_lanes.h"

typedef uint64_t lanes8 __attribute__((vector_size(64)));
#define LANES             8
#define lanes_t           lanes8
#define LANES_ATTR        __attribute__((target("avx512f,avx512bw,avx512dq")))
#define LANES_MUL32(a, b) ((lanes8)_mm512_mul_epu32((__m512i)(a), (__m512i)(b)))
#define LANES_MUL64(a, b) ((lanes8)_mm512_mullo_epi64((__m512i)(a), (__m512i)(b)))
#define LANES_BSWAP(v)                                                                             \
    ((lanes8)_mm512_shuffle_epi8((__m512i)(v),                                                     \
                                 _mm512_set4_epi64(BSWAP_HI, BSWAP_LO, BSWAP_HI, BSWAP_LO)))
#define LANES_FN hashes_x8
#include "pointhash_lanes.h"
#endif

bool rd_point_kernel_runs(enum rd_point_kernel k)
{
    switch (k) {
    case RD_POINT_X1:
        return true;
#if RD_POINT_HAS_LANES
    case RD_POINT_X4:
        return __builtin_cpu_supports("avx2");
    case RD_POINT_X8:
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq");
#else
    case RD_POINT_X4:
    case RD_POINT_X8:
        return false;
#endif
    }
    return false;
}

enum rd_point_kernel rd_point_kernel_best(void)
{
    if (rd_point_kernel_runs(RD_POINT_X8)) return RD_POINT_X8;
    if (rd_point_kernel_runs(RD_POINT_X4)) return RD_POINT_X4;
    return RD_POINT_X1;
}

void rd_point_hashes_with(enum rd_point_kernel k, const struct rd_point_hasher *h, uint32_t i0,
                          uint32_t n, uint64_t *out)
{
    uint32_t done = 0;
#if RD_POINT_HAS_LANES
    if (k == RD_POINT_X8) done = hashes_x8(h, i0, n, out);
    if (k == RD_POINT_X4) done = hashes_x4(h, i0, n, out);
#endif
    hashes_x1(h, i0 + done, n - done, out + done);
}

void rd_point_hashes(const struct rd_point_hasher *h, uint32_t i0, uint32_t n, uint64_t *out)
{
    rd_point_hashes_with(rd_point_kernel_best(), h, i0, n, out);
}
