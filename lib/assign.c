/*
 * assign.c — bounded-load assignment (see assign.h; specified in proto/PROTOCOL.md,
 * "Bounded-load assignment (ASSIGN)").
 *
 * Shape of a call, one scratch allocation freed before returning:
 *
 *   order[0..n)      one entry per key: its XXH3-64, its bytes, its place in keys[]; sorted
 *                    by (hash, bytes) so that the set, not the request, decides the order,
 *                    and equal keys end up side by side (the second of a pair takes the
 *                    first's member instead of a place of its own)
 *   cap[], load[]    per member (name order): the exact integer cap and the keys taken
 *
 * Then one pass in that order: start at the point that owns the key (rd_ring_key_point, the
 * lookup OWNER makes) and step clockwise over points until one belongs to a member with
 * room. The caps add up to at least c x D > D, so some member always has room and a walk
 * ends within one turn of the ring; the loop still counts its steps and reports a broken
 * ring as RD_ECORRUPT instead of spinning.
 *
 * Why points and not distinct members: walking points is the scheme of the paper, costs
 * nothing to set up, and a full member's points are spread over the ring, so a walk meets
 * a member with room after a few points whatever the key.
 */
#include "assign.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rd_err.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

/* The cap's numerator c_milli x D x weight and denominator 1000 x total weight fit 64 bits. */
_Static_assert((uint64_t)RD_ASSIGN_C_MAX *RD_ASSIGN_KEYS_MAX <= UINT64_MAX / 2 / RD_WEIGHT_MAX,
               "cap numerator must fit 64 bits");
_Static_assert((uint64_t)RD_RING_MAX_POINTS *RD_WEIGHT_MAX <= UINT64_MAX / 2 / RD_WEIGHT_ONE,
               "cap denominator must fit 64 bits");
_Static_assert(RD_RING_MAX_POINTS <= INT32_MAX, "member indexes fit an int");

/* Longest accepted text for c: "1000.000". Longer text is refused before any arithmetic. */
#define C_TEXT_MAX 8

int rd_assign_parse_c(const char *s, size_t len, uint32_t *c_milli)
{
    if (!s || len == 0 || len > C_TEXT_MAX) return RD_EINVAL;
    uint32_t whole = 0, frac = 0;
    size_t i = 0, nwhole = 0, nfrac = 0;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, nwhole++)
        whole = whole * 10 + (uint32_t)(s[i] - '0');
    if (nwhole == 0) return RD_EINVAL;
    if (i < len) {
        if (s[i++] != '.') return RD_EINVAL;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, nfrac++)
            frac = frac * 10 + (uint32_t)(s[i] - '0');
        if (i < len || nfrac == 0 || nfrac > 3) return RD_EINVAL;
    }
    for (size_t k = nfrac; k < 3; k++)
        frac *= 10;
    /* At most 8 characters: whole < 10^8, so whole * 1000 fits in 64 bits. */
    uint64_t v = (uint64_t)whole * RD_WEIGHT_ONE + frac;
    if (v < RD_ASSIGN_C_MIN || v > RD_ASSIGN_C_MAX) return RD_EINVAL;
    *c_milli = (uint32_t)v;
    return 0;
}

uint64_t rd_assign_cap(uint32_t c_milli, size_t nkeys, uint32_t weight, uint64_t total_weight)
{
    uint64_t num = (uint64_t)c_milli * nkeys * weight;
    uint64_t den = (uint64_t)RD_WEIGHT_ONE * total_weight;
    return den ? (num + den - 1) / den : 0;
}

struct entry {
    uint64_t hash;
    const unsigned char *ptr;
    size_t len;
    size_t idx; /* place in keys[] */
};

/* (hash, then bytes unsigned, a prefix first): a total order on distinct keys. */
static int cmp_entry(const void *a, const void *b)
{
    const struct entry *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->ptr, y->ptr, n) : 0;
    if (c) return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

static bool same_key(const struct entry *x, const struct entry *y)
{
    return x->hash == y->hash && x->len == y->len &&
           (x->len == 0 || !memcmp(x->ptr, y->ptr, x->len));
}

int rd_assign(const struct rd_ring *ring, uint32_t c_milli, const struct rd_assign_key *keys,
              size_t n, int *out)
{
    if (c_milli < RD_ASSIGN_C_MIN || c_milli > RD_ASSIGN_C_MAX) return RD_EINVAL;
    if (n > RD_ASSIGN_KEYS_MAX) return RD_E2BIG;
    if (n == 0) return 0;
    if (!keys || !out) return RD_EINVAL;
    size_t members = rd_ring_member_count(ring), points = rd_ring_point_count(ring);
    if (members == 0 || points == 0) {
        for (size_t i = 0; i < n; i++)
            out[i] = -1;
        return 0;
    }

    struct entry *order = malloc(n * sizeof *order);
    uint64_t *cap = malloc(members * sizeof *cap);
    uint64_t *load = calloc(members, sizeof *load);
    int *result = malloc(n * sizeof *result);
    int rc = RD_ENOMEM;
    if (!order || !cap || !load || !result) goto done;

    for (size_t i = 0; i < n; i++) {
        order[i].hash = XXH3_64bits(keys[i].ptr, keys[i].len);
        order[i].ptr = keys[i].ptr;
        order[i].len = keys[i].len;
        order[i].idx = i;
    }
    qsort(order, n, sizeof *order, cmp_entry);
    size_t distinct = n ? 1 : 0;
    for (size_t i = 1; i < n; i++)
        distinct += !same_key(&order[i - 1], &order[i]);

    /* Only members with points share the keys: a ketama ring can give a member none, and a
     * walk never meets it, so its weight must not shrink the others' caps. */
    uint64_t total = 0;
    for (size_t m = 0; m < members; m++)
        if (rd_ring_member_points(ring, m)) total += rd_ring_member_weight(ring, m);
    for (size_t m = 0; m < members; m++)
        cap[m] = rd_ring_member_points(ring, m)
                     ? rd_assign_cap(c_milli, distinct, rd_ring_member_weight(ring, m), total)
                     : 0;

    rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (i > 0 && same_key(&order[i - 1], &order[i])) {
            result[order[i].idx] = result[order[i - 1].idx];
            continue;
        }
        long p = rd_ring_key_point(ring, order[i].ptr, order[i].len);
        uint32_t m = p < 0 ? UINT32_MAX : rd_ring_point_member(ring, (size_t)p);
        size_t steps = 0;
        while (m < members && load[m] >= cap[m] && ++steps < points) {
            p = (long)(((size_t)p + 1) % points);
            m = rd_ring_point_member(ring, (size_t)p);
        }
        if (m >= members || load[m] >= cap[m]) {
            rc = RD_ECORRUPT; /* caps add up to more than D: unreachable with a sound ring */
            break;
        }
        load[m]++;
        result[order[i].idx] = (int)m;
    }
    if (rc == 0) memcpy(out, result, n * sizeof *out);
done:
    free(order);
    free(cap);
    free(load);
    free(result);
    return rc;
}
