/*
 * ketama.c — libmemcached's ketama continuum (see ketama.h; proto/PROTOCOL.md, "Ketama mode").
 *
 * MD5 comes from Debian's nettle. The point count is computed in single precision on
 * purpose: libmemcached does, and a count computed exactly differs from it wherever the float
 * chain lands just under a whole number. With equal weights the exact count is 160 a server,
 * but for 25, 47, 50, 55, 61, 71, 94 or 100 servers (1 to 100) (float)(1/n) * 160 / 4 * n
 * comes out as 39.99999..., and libmemcached gives each server 156 points. This file is
 * compiled with -ffp-contract=off so that no compiler fuses a multiply and an add into one
 * rounding, which libmemcached's x86-64 build does not do either.
 */
#include "ketama.h"

#include <math.h>
#include <string.h>

#include <nettle/md5.h>

#define SUFFIX     ":11211"
#define SUFFIX_LEN (sizeof SUFFIX - 1)
/* server string, '-', and up to 10 digits of the index */
#define POINT_KEY_MAX (RD_KETAMA_HASHED_MAX + 1 + 10)

size_t rd_ketama_hashed_len(const char *identity, size_t len)
{
    if (len > SUFFIX_LEN && memcmp(identity + len - SUFFIX_LEN, SUFFIX, SUFFIX_LEN) == 0)
        return len - SUFFIX_LEN;
    return len;
}

uint32_t rd_ketama_weighted_points(uint32_t weight, uint64_t total_weight, uint32_t nservers)
{
    if (total_weight == 0) return 0;
    /* libmemcached: pct = (float)weight / (float)total_weight;
     * floor((float)(pct * 160 / 4 * (float)n + 0.0000000001F)) * 4, step by step. */
    float pct = (float)weight / (float)total_weight;
    float x = pct * (float)RD_KETAMA_POINTS_WEIGHTED;
    x = x / 4.0f;
    x = x * (float)nservers;
    x = x + 0.0000000001F;
    return (uint32_t)floorf(x) * 4u;
}

static void md5_of(const char *s, size_t len, uint8_t digest[MD5_DIGEST_SIZE])
{
    struct md5_ctx ctx;
    md5_init(&ctx);
    md5_update(&ctx, len, (const uint8_t *)s);
    md5_digest(&ctx, MD5_DIGEST_SIZE, digest);
}

static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Writes "-" and i in decimal after the server string in buf; returns the whole length. */
static size_t point_key(char *buf, size_t len, uint32_t i)
{
    char digits[10];
    size_t nd = 0;
    do {
        digits[nd++] = (char)('0' + i % 10);
        i /= 10;
    } while (i);
    buf[len++] = '-';
    while (nd)
        buf[len++] = digits[--nd];
    return len;
}

void rd_ketama_points(const char *s, size_t len, bool weighted, uint32_t i0, uint32_t cnt,
                      uint32_t *out)
{
    char buf[POINT_KEY_MAX];
    uint8_t digest[MD5_DIGEST_SIZE];
    if (len > RD_KETAMA_HASHED_MAX) len = RD_KETAMA_HASHED_MAX; /* a caller bug, kept safe */
    memcpy(buf, s, len);
    uint32_t k = 0;
    while (k < cnt) {
        uint32_t i = i0 + k;
        if (!weighted) {
            md5_of(buf, point_key(buf, len, i), digest);
            out[k++] = le32(digest);
            continue;
        }
        /* one digest gives the four points 4j .. 4j+3 */
        md5_of(buf, point_key(buf, len, i / 4), digest);
        for (uint32_t x = i % 4; x < 4 && k < cnt; x++)
            out[k++] = le32(digest + 4 * x);
    }
}

uint32_t rd_ketama_key_hash(const void *key, size_t len)
{
    uint8_t digest[MD5_DIGEST_SIZE];
    md5_of(key, len, digest);
    return le32(digest);
}
