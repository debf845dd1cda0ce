/*
 * ring.c — the consistent-hash ring (see ring.h; the construction is specified byte by byte
 * in proto/PROTOCOL.md, "The ring").
 *
 * Shape of a snapshot, one allocation, never written after rd_ring_new() returns:
 *
 *   hashes[0..P]   sorted point positions, plus    } structure of arrays: a lookup reads
 *                  hashes[P] = UINT64_MAX sentinel } one prefix entry, about one hash and
 *   owner[0..P)    member index of each point      } one owner, instead of striding over
 *                                                  } 16-byte {hash, owner} records
 *   first[0..2^b]  prefix table, 2^b >= P: first[p] = index of the first point whose top
 *                  b bits are >= p; first[2^b] = P
 *   points, weights, names, zones, id_off
 *                  per member, in name order (the member index)
 *   ids            the members' identities back to back, member k's at id_off[k]
 *   zone_of        per member, its zone's number (NO_ZONE for a member without one)
 *   rank_start     for zone-aware replicas: rank_start[r] = how many answers rank below r
 *
 * Why a prefix table. XXH3 spreads points uniformly, so with 2^b >= P buckets keyed by the
 * top b bits of a position a bucket holds one point or less on average. A lookup reads
 * first[top b bits of pos] and steps forward while hashes[i] < pos: every point of a later
 * bucket is larger than pos, and the sentinel stops a scan that runs off the end (then the
 * answer wraps to point 0), so the scan needs no bucket bounds. That is expected O(1) with
 * two or three cache lines and hardly a branch to mispredict, against log2(P) dependent,
 * mispredicted probes for a binary search, and it returns exactly what the sorted array
 * would: it *is* the sorted array, with an index.
 *
 * Why a bucket sort. qsort of 512k points takes ~100 ms here; the points are uniform 64-bit
 * numbers, so the same top-b-bit buckets that make the prefix table sort them in O(P): count
 * per bucket, prefix-sum the counts (which is the prefix table), scatter, and sort each bucket
 * (one point on average) in place. Done naively in one pass, the scatter touches memory at
 * random and costs a cache and TLB miss per point once P outgrows the caches, so it runs in
 * two levels (see sort_points): a coarse split by the top few bits into cache-sized groups,
 * then the fine buckets within each group. A staging area of about P points is the price;
 * it lives only during rd_ring_new().
 *
 * Tie order. Two points with the same hash (an XXH3 collision; or equal points of one member)
 * are ordered by member index, and members are indexed in name order (bytewise, a prefix
 * first). So the owner of a contested position is the member with the smallest name,
 * whatever order the member list arrived in: every agent agrees (ringpop-go#196 broke ties
 * by insertion order and its nodes disagreed). The sort compares (hash, owner) explicitly, so
 * the rule does not hang on the stability of any pass.
 *
 * Point encoding. u8 len | name | u32 big-endian i cannot collide between different
 * (name, i) pairs, unlike concatenation ("1.2.3.4:55"+"5" = "1.2.3.4:5"+"55"). Its XXH3 is
 * pointhash.c's: set up once per member, then a few multiplies per point.
 *
 * Point counts. max(1, (vnodes * weight_milli + 500) / 1000) in 64-bit integers: a member's
 * count depends on its own weight and nothing else, never on floats or the total weight
 * (ketama's float rounding moved keys between unchanged servers). The one exception is a
 * ring that would exceed RD_RING_MAX_POINTS: then every count is scaled by one common factor
 * taken from the totals (see scale_count), in integers, so that the ring still follows the
 * membership, identically on every agent, instead of the build failing and the old ring
 * staying in place forever.
 *
 * Incremental rebuilds (rd_ring_rebuild). A member's points are a function of its name and
 * its count alone, so when the old ring counts points by the same rule (same mode and vnodes,
 * and no scaling or the very same factor) the points of every member that kept its name and
 * count are already hashed and sorted in the old ring. The rebuild plans the new list as a
 * full build does (same validation, name order, counts, member arrays, checksum, zone index),
 * pairs old and new members by name, hashes and bucket-sorts only the fresh members' points
 * (a ring of just those members, through sort_points), and merges the two sorted sequences
 * into the new arrays in one pass. The prefix table is the old one plus a constant between
 * the buckets where points came or went (or counted afresh, when 2^b changed or points came
 * or went in many buckets). It is exact:
 * the renumbering old index -> new index is increasing over the members that stay (both
 * are name order), so the kept points stay sorted by (hash, owner) after it; the fresh
 * points are sorted by (hash, owner) in the same numbering; and a merge by (hash, owner) of
 * two sorted sequences is the one order a full sort gives, ties included. The prefix table
 * is a function of the sorted hashes alone. It costs a pass over the old points instead of
 * hashing and sorting them all; when the points that come or go are more than a quarter of
 * those in either ring, or the rule differs, it is the full build.
 *
 * Ketama mode (rd_ring_new_ketama) is the same snapshot with libmemcached's points in it:
 * ketama.c gives each member's count and 32-bit values, placed at value << 32 so that the
 * order, the prefix table, the walks and the diff all hold unchanged; only the key's
 * position is computed differently (key_position), and counts are never scaled.
 */
#include "ring.h"
#include "ring_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ketama.h"
#include "namesort.h"
#include "pointhash.h"
#include "rd_err.h"

/* Inline XXH3 so that hashing a short key or point costs no call into libxxhash. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* 2^24 points need 24 prefix bits; the shift below assumes 1 <= b <= 32. */
_Static_assert(RD_RING_MAX_POINTS <= (1u << 24), "prefix table index must fit the bucket math");
_Static_assert(RD_RING_VNODES_MAX <= UINT64_MAX / 2 / RD_WEIGHT_MAX,
               "point count arithmetic must not overflow");

/* Largest member in the checksum: point prefix | u32 weight | u8 len | zone | u8 len | identity. */
#define MEMBER_SUM_MAX (RD_POINT_BUF_MAX + 4 + 1 + RD_ZONE_MAX + 1 + RD_RING_IDENTITY_MAX)
/* rd_ring_owners() dedupes on a stack bitmap up to this many members (2 KiB of stack). */
#define OWNERS_STACK_MEMBERS 16384
/* ... and by scanning out[] when it wants at most this many members. */
#define OWNERS_LINEAR_MAX 16
#define NOBODY            UINT32_MAX
/* zone_of[] of a member without a zone: it is a zone of its own, of one member. */
#define NO_ZONE UINT32_MAX
/* Zone-aware rd_ring_owners() keeps one counter per zone and per rank level on the stack up
 * to this many (4 KiB), on the heap beyond. */
#define OWNERS_STACK_COUNTERS 1024

struct ring_name {
    uint8_t len;
    char s[RD_NAME_MAX + 1];
};

struct ring_zone {
    uint8_t len;
    char s[RD_ZONE_MAX + 1];
};

struct rd_ring {
    uint32_t nmembers;
    uint32_t npoints;
    uint32_t vnodes;
    enum rd_ring_mode mode;
    bool ketama_weighted; /* ketama mode: libmemcached's weighted continuum (some weight > 1) */
    uint64_t raw_points;  /* sum of the unscaled counts */
    uint64_t budget;      /* 0, or the scaled ring's budget (see scale_count) */
    unsigned shift;       /* 64 - b; lookup bucket = pos >> shift */
    uint64_t checksum;
    uint64_t *hashes;        /* [npoints], sorted by (hash, owner) */
    uint32_t *owner;         /* [npoints] member index */
    uint32_t *first;         /* [2^b + 1] prefix table */
    uint32_t *points;        /* [nmembers] points per member */
    uint32_t *weights;       /* [nmembers] */
    uint32_t *id_off;        /* [nmembers + 1] member k's identity is ids[id_off[k]..id_off[k+1]) */
    struct ring_name *names; /* [nmembers] in name order */
    struct ring_zone *zones; /* [nmembers] */
    char *ids;               /* identities, each NUL-terminated */
    /* Zone-aware replicas (see owners_by_zone). Zones are numbered 0..nzones-1 in no
     * meaningful order; the answer never depends on the numbering. */
    bool zoned;           /* some member has a zone: OWNERS walks by zone */
    uint32_t nzones;      /* distinct zones among the members that have one */
    uint32_t *zone_of;    /* [nmembers] zone number, NO_ZONE for none */
    uint32_t *rank_start; /* [nmembers + 1] sum over q < r of the members of rank q */
    /* The point hash a test substituted (NULL: XXH3), which rd_ring_diff hashes again with. */
    rd_ring_point_hash_fn *point_hash;
    void *point_ctx;
};

/* Every allocation of the module: malloc, or a test's failing stand-in (ring_internal.h).
 * Whatever it returns is released with free(). */
static void *ring_alloc(const struct rd_ring_hooks *hooks, size_t size)
{
    return hooks && hooks->alloc ? hooks->alloc(size, hooks->ctx) : malloc(size);
}

/* ---- hashing ---------------------------------------------------------------------------- */

/* One 4-byte store, for the checksum's fields. */
static inline void put_be32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    memcpy(p, &v, sizeof v);
}

uint64_t rd_ring_point_hash(const char *name, size_t name_len, uint32_t i)
{
    return rd_point_hash(name, name_len, i);
}

uint64_t rd_ring_key_hash(const void *key, size_t len)
{
    return XXH3_64bits(key, len);
}

/* ---- building --------------------------------------------------------------------------- */

static uint64_t point_count(uint32_t vnodes, uint32_t weight)
{
    uint64_t p = ((uint64_t)vnodes * weight + RD_WEIGHT_ONE / 2) / RD_WEIGHT_ONE;
    return p ? p : 1;
}

/* A raw count scaled to the budget: max(1, floor(raw * budget / total)), budget = the point
 * limit less one point per member, so that the floors of 1 still fit the limit. */
static uint32_t scale_count(uint64_t raw, uint64_t budget, uint64_t total)
{
    uint64_t p = raw * budget / total;
    return p ? (uint32_t)p : 1;
}

/* The identity a member is hashed by in ketama mode: its own, or its name. */
static const char *identity_of(const struct rd_ring_member *m)
{
    return m->identity ? m->identity : m->name;
}

static bool identity_valid(const char *s)
{
    size_t len = strnlen(s, RD_RING_IDENTITY_MAX + 1);
    if (len < 1 || len > RD_RING_IDENTITY_MAX) return false;
    for (size_t k = 0; k < len; k++)
        if (s[k] < 0x21 || s[k] > 0x7e) return false;
    return true;
}

static size_t align_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

/* Coarse groups of the two-level bucket sort: at most 2^COARSE_BITS_MAX write streams... */
#define COARSE_BITS_MAX 8
/* ... and about 2^FINE_BITS buckets (~ points) per group, so that a group sorts in cache. */
#define FINE_BITS 10
/* From this many points on, the sort's staging and the ring's arrays outgrow the caches,
 * and sort_points prefetches where it is about to write (see there); below, the data is
 * in cache and the prefetches would be pure cost. */
#define PREFETCH_MIN_POINTS (1u << 17)
/* How far ahead of a group's next staging slot the prefetch reaches, in cache lines. */
#define PREFETCH_LINES 2

/*
 * How the points are sorted: c coarse bits (2^c groups), `cap` staging slots per group, and
 * the staging size in entries (hashes and owners each) plus the list of crowded buckets.
 * A group's count is binomial around mean = P / 2^c; cap leaves 8 standard deviations of
 * slack, so that overflowing it (which costs a slower second pass, not a wrong answer) takes
 * a deliberately crowded input.
 */
struct sort_shape {
    unsigned c;
    uint32_t cap;
    size_t per_group; /* fine buckets per group: 2^(b - c) */
    size_t tmp_entries;
};

static struct sort_shape sort_shape_of(uint32_t total, unsigned b)
{
    struct sort_shape sh;
    sh.c = b > FINE_BITS ? b - FINE_BITS : 0;
    if (sh.c > COARSE_BITS_MAX) sh.c = COARSE_BITS_MAX;
    sh.per_group = (size_t)1 << (b - sh.c);
    uint32_t mean = (total >> sh.c) + 1, sd = 1;
    while ((uint64_t)(sd + 1) * (sd + 1) <= mean)
        sd++;
    uint64_t cap = sh.c ? (uint64_t)mean + 8u * sd + 16 : total;
    sh.cap = (uint32_t)(cap < total ? cap : total);
    size_t slots = ((size_t)1 << sh.c) * sh.cap;
    sh.tmp_entries = slots > total ? slots : total;
    return sh;
}

/* Staging for the sort (one allocation, freed by rd_ring_new). */
struct sort_tmp {
    uint64_t *h;      /* [tmp_entries] */
    uint32_t *o;      /* [tmp_entries] */
    uint32_t *multi2; /* [per_group] buckets of one group holding two points or more */
    uint32_t *multi3; /* [per_group] ... three or more */
};

static size_t sort_tmp_size(const struct sort_shape *sh)
{
    return sh->tmp_entries * (sizeof(uint64_t) + sizeof(uint32_t)) +
           2 * sh->per_group * sizeof(uint32_t);
}

static struct sort_tmp sort_tmp_of(char *mem, const struct sort_shape *sh)
{
    struct sort_tmp t;
    t.h = (uint64_t *)mem;
    t.o = (uint32_t *)(mem + sh->tmp_entries * sizeof(uint64_t));
    t.multi2 = t.o + sh->tmp_entries;
    t.multi3 = t.multi2 + sh->per_group;
    return t;
}

/* Hashes points i0 .. i0+cnt-1 (cnt <= RD_POINT_BATCH) of member nm into out[]: with ph,
 * nm's hasher, or with the point hash a test put in its place. */
static void hash_batch(const struct rd_point_hasher *ph, const struct ring_name *nm, uint32_t i0,
                       uint32_t cnt, rd_ring_point_hash_fn *fn, void *ctx, uint64_t *out)
{
    if (!fn) {
        rd_point_hashes(ph, i0, cnt, out);
        return;
    }
    for (uint32_t s = 0; s < cnt; s++)
        out[s] = fn(nm->s, nm->len, i0 + s, ctx);
}

/*
 * Every point of the ring in member order, a batch of up to RD_POINT_BATCH hashes at a time:
 * after walk_next() returns true, hb[0 .. cnt-1] are the hashes of member m's points
 * i0 .. i0+cnt-1. Both ways of filling the sort's staging (see sort_points) walk this.
 */
struct point_walk {
    const struct rd_ring *r;
    rd_ring_point_hash_fn *fn;
    void *ctx;
    const atomic_bool *abandon; /* NULL, or stop once it reads true ... */
    bool abandoned;             /* ... which walk_next() then returned false for */
    uint32_t m, i0, cnt;
    size_t klen;               /* ketama: length of m's hashed server string */
    struct rd_point_hasher ph; /* member m's */
    uint64_t hb[RD_POINT_BATCH];
};

/* Sets up the hashing of member m's points. */
static void walk_enter(struct point_walk *w)
{
    const struct ring_name *nm = &w->r->names[w->m];
    if (w->r->mode == RD_RING_MODE_KETAMA) {
        const char *id = w->r->ids + w->r->id_off[w->m];
        w->klen = rd_ketama_hashed_len(id, w->r->id_off[w->m + 1] - w->r->id_off[w->m] - 1);
        return;
    }
    rd_point_hasher_init(&w->ph, nm->s, nm->len);
}

static void walk_start(struct point_walk *w, const struct rd_ring *r,
                       const struct rd_ring_hooks *hooks)
{
    w->r = r;
    w->fn = hooks->point_hash;
    w->ctx = hooks->ctx;
    w->abandon = hooks->abandon;
    w->abandoned = false;
    w->m = 0;
    w->i0 = 0;
    w->cnt = 0;
    w->klen = 0;
    if (r->nmembers > 0) walk_enter(w);
}

/* Whether the build's owner has given it up (rd_ring_build_abandonable). */
static bool abandoned(const atomic_bool *abandon)
{
    return abandon && atomic_load_explicit(abandon, memory_order_relaxed);
}

/* Hashes the next batch; false when every point has been, or the build is abandoned. */
static bool walk_next(struct point_walk *w)
{
    const struct rd_ring *r = w->r;
    if (abandoned(w->abandon)) {
        w->abandoned = true;
        return false;
    }
    w->i0 += w->cnt;
    while (w->m < r->nmembers && w->i0 >= r->points[w->m]) {
        w->i0 = 0;
        if (++w->m < r->nmembers) walk_enter(w);
    }
    if (w->m == r->nmembers) return false;
    uint32_t left = r->points[w->m] - w->i0;
    w->cnt = left < RD_POINT_BATCH ? left : RD_POINT_BATCH;
    if (r->mode == RD_RING_MODE_KETAMA) {
        /* a ketama value v sits at v << 32: the order of positions is the order of values */
        uint32_t v[RD_POINT_BATCH];
        rd_ketama_points(r->ids + r->id_off[w->m], w->klen, r->ketama_weighted, w->i0, w->cnt, v);
        for (uint32_t s = 0; s < w->cnt; s++)
            w->hb[s] = (uint64_t)v[s] << 32;
        return true;
    }
    hash_batch(&w->ph, &r->names[w->m], w->i0, w->cnt, w->fn, w->ctx, w->hb);
    return true;
}

/* Orders points a and b (a < b) by (hash, owner) without a branch: sizes and orders of
 * crowded buckets are random, so a branch here would mispredict half the time. */
static inline void compare_exchange(uint64_t *hashes, uint32_t *owner, uint32_t a, uint32_t b)
{
    uint64_t h0 = hashes[a], h1 = hashes[b];
    uint32_t o0 = owner[a], o1 = owner[b];
    /* & and | rather than && and ||, which would branch */
    uint64_t swap = (uint64_t)0 - (uint64_t)((h1 < h0) | ((h1 == h0) & (o1 < o0)));
    uint64_t dh = (h0 ^ h1) & swap;
    uint32_t dox = (o0 ^ o1) & (uint32_t)swap;
    hashes[a] = h0 ^ dh;
    hashes[b] = h1 ^ dh;
    owner[a] = o0 ^ dox;
    owner[b] = o1 ^ dox;
}

/* Group of a hash: its top c bits; (h >> 1) >> (63 - c) keeps c = 0 free of a 64-bit shift. */
static inline size_t group_of(uint64_t h, unsigned c)
{
    return (size_t)((h >> 1) >> (63 - c));
}

/*
 * Computes every point and sorts them into the ring; fills r->first. False, the ring
 * unfinished, when the build is abandoned (checked per batch of points and per group).
 *
 * A one-level counting sort into 2^b buckets is O(P) but touches first[], hashes[] and
 * owner[] at random, one cache (and TLB) miss per point per array once P outgrows the caches
 * (~100 ns a point at 2.5M points here). So it runs in two levels, as an MSD radix sort:
 *   1. hash the points in member order straight into per-group staging slots (group = top c
 *      bits; 2^c sequential write streams). If a group overflows its slots (only a crowded
 *      input does that), start over: hash into the ring's arrays, count, and scatter by group;
 *   2. per group, in cache: count its fine buckets (top b bits) into its slice of first[],
 *      prefix-sum them into bucket starts, scatter the group into the ring's arrays, then
 *      sort each bucket that got two points or more by (hash, owner): branch-free
 *      compare-exchanges for the first three points, insertion for the rare fourth on.
 * The scatters are stable and members are hashed in index order, so a bucket arrives in
 * member-index order already; the sort compares (hash, owner) anyway so the tie rule does
 * not hang on stability.
 *
 * Prefetches, for rings of PREFETCH_MIN_POINTS and more. Both levels write into memory that
 * is not in cache: a line of a group's staging every 8 hashes, and in step 2 the group's
 * whole range of hashes[], owner[] and first[]. Each such write waits for the line to be
 * read first, and the hardware prefetchers follow 2^c interleaved write streams or a
 * scatter no better than not at all. So step 1 asks, with every point, for the group's
 * line PREFETCH_LINES ahead (asking only when a group starts a new line would be a branch
 * that mispredicts one point in eight, which cost more than the repeated requests), and
 * step 2 asks for the next group's ranges before it works on this one (bench/README.md).
 */
static bool sort_points(struct rd_ring *r, unsigned b, const struct sort_shape *sh,
                        struct sort_tmp t, const struct rd_ring_hooks *hooks)
{
    uint64_t *hashes = r->hashes;
    uint32_t *owner = r->owner;
    uint32_t *first = r->first;
    uint32_t total = r->npoints;
    unsigned c = sh->c;
    size_t ngroups = (size_t)1 << c;
    uint32_t fill[1u << COARSE_BITS_MAX] = {0}; /* points per group */
    uint32_t src[1u << COARSE_BITS_MAX];        /* where a group's points start in t */
    struct point_walk w;

    const bool far = total >= PREFETCH_MIN_POINTS;
    /* 1. */
    bool overflow = false;
    walk_start(&w, r, hooks);
    while (!overflow && walk_next(&w)) {
        for (uint32_t s = 0; s < w.cnt; s++) {
            size_t g = group_of(w.hb[s], c);
            if (fill[g] == sh->cap) {
                overflow = true;
                break;
            }
            size_t at = g * sh->cap + fill[g]++;
            if (far) { /* into L2: 2^c streams, two lines ahead each, would crowd L1 */
                __builtin_prefetch(t.h + at + 8 * PREFETCH_LINES, 1, 2);
                __builtin_prefetch(t.o + at + 16 * PREFETCH_LINES, 1, 2);
            }
            t.h[at] = w.hb[s];
            t.o[at] = w.m;
        }
    }
    if (w.abandoned) return false;
    for (size_t g = 0; g < ngroups; g++)
        src[g] = (uint32_t)(g * sh->cap);
    if (overflow) {
        /* Start over in two passes: hash into the ring's arrays, then scatter by group. */
        memset(fill, 0, sizeof fill);
        uint32_t k = 0;
        walk_start(&w, r, hooks);
        while (walk_next(&w)) {
            for (uint32_t s = 0; s < w.cnt; s++, k++) {
                hashes[k] = w.hb[s];
                owner[k] = w.m;
                fill[group_of(w.hb[s], c)]++;
            }
        }
        if (w.abandoned) return false;
        uint32_t run = 0;
        for (size_t g = 0; g < ngroups; g++) {
            src[g] = run;
            run += fill[g];
        }
        uint32_t cur[1u << COARSE_BITS_MAX];
        memcpy(cur, src, ngroups * sizeof *cur);
        for (k = 0; k < total; k++) {
            uint32_t at = cur[group_of(hashes[k], c)]++;
            t.h[at] = hashes[k];
            t.o[at] = owner[k];
        }
    }

    /* 2. */
    unsigned shift = r->shift;
    size_t per_group = sh->per_group;
    uint32_t s = 0; /* where the group starts in the ring */
    for (size_t g = 0; g < ngroups; g++) {
        if (abandoned(hooks->abandon)) return false;
        const uint64_t *gh = t.h + src[g];
        const uint32_t *go = t.o + src[g];
        uint32_t n = fill[g], e = s + n;
        uint32_t *f = first + g * per_group; /* this group's buckets; index by h >> shift */
        /* the next group's ranges, fetched while this one is sorted */
        if (far && g + 1 < ngroups) {
            for (uint32_t k = e; k < e + fill[g + 1]; k += 8)
                __builtin_prefetch(hashes + k, 1);
            for (uint32_t k = e; k < e + fill[g + 1]; k += 16)
                __builtin_prefetch(owner + k, 1);
            for (size_t k = 0; k < per_group; k += 16)
                __builtin_prefetch(f + per_group + k, 1);
        }
        memset(f, 0, per_group * sizeof *f);
        for (uint32_t k = 0; k < n; k++)
            first[gh[k] >> shift]++;
        /* counts -> starts, listing the buckets that will need sorting (without branches:
         * bucket sizes are random, so a branch here would mispredict a third of the time) */
        uint32_t run = s;
        size_t n2 = 0, n3 = 0;
        for (size_t p = 0; p < per_group; p++) {
            uint32_t cnt = f[p];
            f[p] = run;
            run += cnt;
            t.multi2[n2] = (uint32_t)p;
            n2 += cnt > 1;
        }
        /* first[p]++ leaves each start at the next bucket's; the memmove puts them back */
        for (uint32_t k = 0; k < n; k++) {
            uint32_t d = first[gh[k] >> shift]++;
            hashes[d] = gh[k];
            owner[d] = go[k];
        }
        memmove(f + 1, f, (per_group - 1) * sizeof *f);
        f[0] = s;
        /* Sort each crowded bucket by (hash, owner). Most hold two points, a few three
         * (for P = 2^b: 18% and 6% of buckets, 2% four or more), so the first two and the
         * first three are sorted by branch-free compare-exchanges, and only buckets of four
         * or more see an insertion sort. */
        size_t n4 = 0;
        for (size_t q = 0; q < n2; q++) {
            size_t p = t.multi2[q];
            uint32_t lo = f[p], hi = p + 1 < per_group ? f[p + 1] : e;
            compare_exchange(hashes, owner, lo, lo + 1);
            t.multi3[n3] = (uint32_t)p;
            n3 += hi - lo > 2;
        }
        for (size_t q = 0; q < n3; q++) {
            size_t p = t.multi3[q];
            uint32_t lo = f[p], hi = p + 1 < per_group ? f[p + 1] : e;
            compare_exchange(hashes, owner, lo + 1, lo + 2);
            compare_exchange(hashes, owner, lo, lo + 1);
            t.multi2[n4] = (uint32_t)p; /* multi2 is consumed: reuse it for the fours */
            n4 += hi - lo > 3;
        }
        for (size_t q = 0; q < n4; q++) {
            size_t p = t.multi2[q];
            uint32_t lo = f[p], hi = p + 1 < per_group ? f[p + 1] : e;
            for (uint32_t k = lo + 3; k < hi; k++) {
                uint64_t h = hashes[k];
                uint32_t o = owner[k];
                uint32_t j = k;
                while (j > lo && (hashes[j - 1] > h || (hashes[j - 1] == h && owner[j - 1] > o))) {
                    hashes[j] = hashes[j - 1];
                    owner[j] = owner[j - 1];
                    j--;
                }
                hashes[j] = h;
                owner[j] = o;
            }
        }
        s = e;
    }
    first[(size_t)1 << b] = total;
    /* Sentinel: a lookup's scan stops here without a bounds check (see point_index). */
    hashes[total] = UINT64_MAX;
    return true;
}

/*
 * Numbers the zones and counts the members of each rank for zone-aware replicas
 * (owners_by_zone). False when memory fails.
 *
 * In a walk that meets every member, a member's rank is how many members of its zone came
 * before it, so rank r is held by exactly one member of each zone with more than r members:
 * count_r = #{zones of size > r}, a member without a zone being a zone of size 1. Then
 * rank_start[r] = count_0 + ... + count_(r-1), the same for every position of every lookup,
 * so a lookup knows where each rank's members go in its answer before it starts walking.
 * Every way of building a ring calls it once its members (names, zones) are in place. The
 * zones are numbered in their name order, found with rd_namesort(): a comparison sort of
 * one pointer per member, thousands sharing three zones, costs as much as the rest of a
 * rebuild.
 */
static bool index_zones(struct rd_ring *r, const struct rd_ring_hooks *hooks)
{
    uint32_t n = r->nmembers;
    uint32_t *count = r->rank_start;
    size_t nz = 0, zoned = 0, zoneless = 0;
    for (uint32_t k = 0; k < n; k++) {
        r->zone_of[k] = NO_ZONE;
        if (r->points[k] == 0) continue; /* ketama can give a member none: never met */
        if (r->zones[k].len)
            zoned++;
        else
            zoneless++;
    }
    memset(count, 0, ((size_t)n + 1) * sizeof *count);
    count[0] = (uint32_t)zoneless;
    if (zoned) {
        /* names[zoned] | member[zoned] | order[zoned] | the sort's scratch */
        size_t off_u32 = zoned * sizeof(const char *);
        size_t off_sort = align_up(off_u32 + 2 * zoned * sizeof(uint32_t), sizeof(uint64_t));
        char *mem = ring_alloc(hooks, off_sort + rd_namesort_scratch(zoned));
        if (!mem) return false;
        const char **names = (const char **)mem;
        uint32_t *member = (uint32_t *)(mem + off_u32), *order = member + zoned;
        for (uint32_t k = 0, z = 0; k < n; k++)
            if (r->points[k] && r->zones[k].len) {
                names[z] = r->zones[k].s;
                member[z++] = k;
            }
        rd_namesort(names, zoned, order, mem + off_sort);
        /* count[s - 1] = zones of exactly s members, as each zone's run ends */
        const struct ring_zone *prev = NULL;
        uint32_t size = 0;
        for (size_t q = 0; q < zoned; q++) {
            uint32_t k = member[order[q]];
            const struct ring_zone *zn = &r->zones[k];
            if (!prev || prev->len != zn->len || memcmp(prev->s, zn->s, zn->len) != 0) {
                if (prev) count[size - 1]++;
                nz++;
                size = 0;
            }
            r->zone_of[k] = (uint32_t)(nz - 1);
            size++;
            prev = zn;
        }
        count[size - 1]++;
        free(mem);
    }
    r->zoned = zoned > 0;
    r->nzones = (uint32_t)nz;
    /* suffix sums give count_r = zones of more than r members; then prefix sums give
     * rank_start. Zoneless members: size 1. */
    for (uint32_t q = n; q-- > 0;)
        count[q] += count[q + 1];
    uint32_t run = 0;
    for (uint32_t q = 0; q <= n; q++) {
        uint32_t c = count[q];
        count[q] = run;
        run += c;
    }
    return true;
}

/* How many points each member gets: ringd's count from vnodes, or libmemcached's. */
struct count_rule {
    enum rd_ring_mode mode;
    uint32_t vnodes;
    bool weighted;         /* ketama: some whole weight is above 1 */
    uint64_t total_weight; /* ketama: the sum of the whole weights */
    uint32_t n;            /* ketama: the number of servers */
};

static uint64_t rule_points(const struct count_rule *c, uint32_t weight)
{
    if (c->mode == RD_RING_MODE_RINGD) return point_count(c->vnodes, weight);
    if (!c->weighted) return RD_KETAMA_POINTS_PLAIN;
    return rd_ketama_weighted_points(weight / RD_WEIGHT_ONE, c->total_weight, c->n);
}

/* Ketama rings hold at most this many members, so that their point counts (160 at an even
 * share) cannot approach the 32-bit count before the point limit is checked. */
#define KETAMA_MEMBERS_MAX (RD_RING_MAX_POINTS / RD_KETAMA_POINTS_WEIGHTED)

/* A member list made ready to build: validated, in name order, with its point counts fixed. */
struct build_plan {
    const struct rd_ring_member **sorted; /* [n] name order (heap; NULL for n = 0) */
    size_t n;
    struct count_rule rule;
    uint64_t raw_total; /* sum of the unscaled counts */
    uint64_t budget;    /* 0, or the scaled ring's budget (see scale_count) */
    uint64_t total;     /* points of the ring */
    unsigned b;         /* prefix bits: the smallest b >= 1 with 2^b >= total */
    size_t id_bytes;    /* the identities, each NUL-terminated */
};

/* Member validation shared by every build; also totals the ketama rule's weights. */
static int check_members(const struct rd_ring_member *members, size_t n, struct count_rule *rule,
                         size_t *id_bytes)
{
    *id_bytes = 0;
    for (size_t k = 0; k < n; k++) {
        const struct rd_ring_member *m = &members[k];
        if (!m->name || !rd_name_valid(m->name, strnlen(m->name, RD_NAME_MAX + 1)))
            return RD_EINVAL;
        if (m->weight < 1 || m->weight > RD_WEIGHT_MAX) return RD_EINVAL;
        /* libmemcached's weights are whole numbers */
        if (rule->mode == RD_RING_MODE_KETAMA && m->weight % RD_WEIGHT_ONE != 0) return RD_EINVAL;
        if (m->zone && !rd_zone_valid(m->zone, strnlen(m->zone, RD_ZONE_MAX + 1))) return RD_EINVAL;
        if (m->identity && !identity_valid(m->identity)) return RD_EINVAL;
        *id_bytes += strlen(identity_of(m)) + 1;
        rule->total_weight += m->weight / RD_WEIGHT_ONE;
        if (m->weight > RD_WEIGHT_ONE) rule->weighted = true;
    }
    return 0;
}

/* Name order is the member index: strcmp()'s order, bytewise with a prefix first, which is
 * the spec's (namesort.h sorts that way, faster). Sorts pointers so that the caller's array
 * stays untouched. */
static int order_members(const struct rd_ring_member *members, size_t n,
                         const struct rd_ring_hooks *hooks, const struct rd_ring_member ***out)
{
    *out = NULL;
    if (n == 0) return 0;
    const struct rd_ring_member **sorted = ring_alloc(hooks, n * sizeof *sorted);
    /* scratch: names[n] | order[n] | the sort's */
    size_t off_order = n * sizeof(const char *);
    size_t off_sort = align_up(off_order + n * sizeof(uint32_t), sizeof(uint64_t));
    char *tmp = sorted ? ring_alloc(hooks, off_sort + rd_namesort_scratch(n)) : NULL;
    if (!tmp) {
        free(sorted);
        return RD_ENOMEM;
    }
    const char **names = (const char **)tmp;
    uint32_t *order = (uint32_t *)(tmp + off_order);
    for (size_t k = 0; k < n; k++)
        names[k] = members[k].name;
    bool twice = rd_namesort(names, n, order, tmp + off_sort);
    for (size_t k = 0; k < n; k++)
        sorted[k] = &members[order[k]];
    free(tmp);
    if (twice) {
        free(sorted);
        return RD_EEXIST;
    }
    *out = sorted;
    return 0;
}

/* Point count of a member of the plan: its rule's count, scaled if the ring is. */
static uint32_t plan_points(const struct build_plan *p, uint32_t weight)
{
    uint64_t pc = rule_points(&p->rule, weight);
    return (uint32_t)(p->budget ? scale_count(pc, p->budget, p->raw_total) : pc);
}

/* Validates the list and fixes what the ring will hold; on success p->sorted is the caller's
 * to free. Every build, full or merged, starts here, so both refuse alike. */
static int plan_build(const struct rd_ring_member *members, size_t n, enum rd_ring_mode mode,
                      uint32_t vnodes, const struct rd_ring_hooks *hooks, struct build_plan *p)
{
    memset(p, 0, sizeof *p);
    if (n > 0 && !members) return RD_EINVAL;
    if (mode == RD_RING_MODE_RINGD && (vnodes < 1 || vnodes > RD_RING_VNODES_MAX)) return RD_EINVAL;
    /* Every member has at least one point, so this bounds n before anything is allocated. */
    if (n > RD_RING_MAX_POINTS) return RD_E2BIG;

    p->n = n;
    p->rule = (struct count_rule){mode, vnodes, false, 0, (uint32_t)n};
    int rc = check_members(members, n, &p->rule, &p->id_bytes);
    if (rc < 0) return rc;
    if (mode == RD_RING_MODE_KETAMA && n > KETAMA_MEMBERS_MAX) return RD_E2BIG;
    for (size_t k = 0; k < n; k++)
        p->raw_total += rule_points(&p->rule, members[k].weight);
    rc = order_members(members, n, hooks, &p->sorted);
    if (rc < 0) return rc;
    /* Over the limit: scale. raw <= 2^19 and budget < 2^24, so the products fit 64 bits.
     * A ketama ring cannot be scaled (libmemcached's counts are the point of it), and its
     * member limit keeps it under (a weighted continuum holds about 160 points a member). */
    if (mode == RD_RING_MODE_KETAMA && p->raw_total > RD_RING_MAX_POINTS) {
        free(p->sorted);
        p->sorted = NULL;
        return RD_E2BIG;
    }
    if (p->raw_total > RD_RING_MAX_POINTS) p->budget = RD_RING_MAX_POINTS - n;
    for (size_t k = 0; k < n; k++)
        p->total += plan_points(p, members[k].weight);
    p->b = 1;
    while (((uint64_t)1 << p->b) < p->total)
        p->b++;
    return 0;
}

/*
 * Allocates the snapshot of a plan and sets its header and array pointers; the arrays are
 * not filled. One block: header | hashes[P + 1] | owner[P] | first[2^b + 1] | points |
 * weights | id_off | zone_of | rank_start | names | zones | ids.
 */
static struct rd_ring *ring_block(const struct build_plan *p, const struct rd_ring_hooks *hooks)
{
    size_t n = p->n, total = (size_t)p->total;
    size_t nbuckets = total ? (size_t)1 << p->b : 0;
    size_t off_hashes = align_up(sizeof(struct rd_ring), sizeof(uint64_t));
    size_t off_owner = off_hashes + (total ? total + 1 : 0) * sizeof(uint64_t);
    size_t off_first = off_owner + total * sizeof(uint32_t);
    size_t off_points = off_first + (total ? nbuckets + 1 : 0) * sizeof(uint32_t);
    size_t off_weights = off_points + n * sizeof(uint32_t);
    size_t off_id_off = off_weights + n * sizeof(uint32_t);
    size_t off_zone_of = off_id_off + (n + 1) * sizeof(uint32_t);
    size_t off_rank_start = off_zone_of + n * sizeof(uint32_t);
    size_t off_names = off_rank_start + (n + 1) * sizeof(uint32_t);
    size_t off_zones = off_names + n * sizeof(struct ring_name);
    size_t off_ids = off_zones + n * sizeof(struct ring_zone);
    char *block = ring_alloc(hooks, off_ids + p->id_bytes);
    if (!block) return NULL;
    struct rd_ring *r = (struct rd_ring *)block;
    r->nmembers = (uint32_t)n;
    r->npoints = (uint32_t)total;
    r->vnodes = p->rule.mode == RD_RING_MODE_RINGD ? p->rule.vnodes : 0;
    r->mode = p->rule.mode;
    r->ketama_weighted = p->rule.weighted;
    r->raw_points = p->raw_total;
    r->budget = p->budget;
    r->shift = 64 - p->b;
    r->hashes = total ? (uint64_t *)(block + off_hashes) : NULL;
    r->owner = total ? (uint32_t *)(block + off_owner) : NULL;
    r->first = total ? (uint32_t *)(block + off_first) : NULL;
    r->points = (uint32_t *)(block + off_points);
    r->weights = (uint32_t *)(block + off_weights);
    r->id_off = (uint32_t *)(block + off_id_off);
    r->names = (struct ring_name *)(block + off_names);
    r->zones = (struct ring_zone *)(block + off_zones);
    r->ids = block + off_ids;
    r->zone_of = (uint32_t *)(block + off_zone_of);
    r->rank_start = (uint32_t *)(block + off_rank_start);
    r->zoned = false;
    r->nzones = 0;
    r->rank_start[0] = 0;
    r->point_hash = hooks->point_hash;
    r->point_ctx = hooks->point_hash ? hooks->ctx : NULL;
    return r;
}

/* Members in name order, and the checksum over the whole definition. The encodings are
 * staged in a chunk and streamed a chunk at a time (the digest does not depend on how the
 * input is cut): fewer updates, and GCC's -Wstringop-overread misfires on tiny updates of the
 * inlined XXH3. */
static void fill_members(struct rd_ring *r, const struct build_plan *p)
{
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    uint8_t chunk[4096];
    size_t used = 0;
    chunk[used++] = (uint8_t)r->mode;
    uint32_t id_at = 0;
    for (size_t k = 0; k < p->n; k++) {
        const struct rd_ring_member *m = p->sorted[k];
        struct ring_name *nm = &r->names[k];
        size_t len = strlen(m->name);
        nm->len = (uint8_t)len;
        memcpy(nm->s, m->name, len + 1);
        struct ring_zone *zn = &r->zones[k];
        /* a size_t length, not the byte: GCC inlines a copy it knows is short as `rep movs`,
         * the hottest line of a zoned rebuild at 10,000 members in perf */
        size_t zlen = m->zone ? strlen(m->zone) : 0;
        zn->len = (uint8_t)zlen;
        memcpy(zn->s, m->zone ? m->zone : "", zlen + 1);
        const char *id = identity_of(m);
        size_t idlen = strlen(id);
        r->id_off[k] = id_at;
        memcpy(r->ids + id_at, id, idlen + 1);
        id_at += (uint32_t)idlen + 1;
        uint32_t pc = plan_points(p, m->weight);
        r->points[k] = pc;
        r->weights[k] = m->weight;
        if (used + MEMBER_SUM_MAX > sizeof chunk) {
            XXH3_64bits_update(&st, chunk, used);
            used = 0;
        }
        used += rd_point_prefix(chunk + used, nm->s, len);
        put_be32(chunk + used, pc);
        put_be32(chunk + used + 4, m->weight);
        used += 8;
        chunk[used++] = zn->len;
        memcpy(chunk + used, zn->s, zlen);
        used += zlen;
        chunk[used++] = (uint8_t)idlen;
        memcpy(chunk + used, id, idlen);
        used += idlen;
    }
    r->id_off[p->n] = id_at;
    XXH3_64bits_update(&st, chunk, used);
    r->checksum = p->n ? XXH3_64bits_digest(&st) : 0;
}

/* The full build of a plan: hash every point and bucket-sort them. Frees p->sorted. */
static int build_full(struct build_plan *p, const struct rd_ring_hooks *hooks, struct rd_ring **out)
{
    struct rd_ring *r = ring_block(p, hooks);
    /* The sort's staging area (a little over P hashes and P owners), freed before returning. */
    struct sort_shape sh = sort_shape_of((uint32_t)p->total, p->b);
    char *tmp = r && p->total ? ring_alloc(hooks, sort_tmp_size(&sh)) : NULL;
    if (!r || (p->total && !tmp)) {
        free(r);
        free(p->sorted);
        return RD_ENOMEM;
    }
    fill_members(r, p);
    free(p->sorted);
    if (p->total) {
        if (!index_zones(r, hooks)) {
            free(tmp);
            free(r);
            return RD_ENOMEM;
        }
        bool sorted = sort_points(r, p->b, &sh, sort_tmp_of(tmp, &sh), hooks);
        free(tmp);
        if (!sorted) {
            free(r);
            return RD_ECANCELED;
        }
    }
    *out = r;
    return 0;
}

static const struct rd_ring_hooks no_hooks = {NULL, NULL, NULL, NULL};

/* rd_ring_new_with() and rd_ring_new_ketama_with(): everything but the point rule is one. */
static int ring_build(const struct rd_ring_member *members, size_t n, enum rd_ring_mode mode,
                      uint32_t vnodes, const struct rd_ring_hooks *hooks, struct rd_ring **out)
{
    if (!hooks) hooks = &no_hooks;
    if (!out) return RD_EINVAL;
    *out = NULL;
    struct build_plan p;
    int rc = plan_build(members, n, mode, vnodes, hooks, &p);
    return rc < 0 ? rc : build_full(&p, hooks, out);
}

/* ---- incremental rebuild ---------------------------------------------------------------- */

/* The merge runs while the points that come or go are at most 1 / MERGE_CHANGE_SHARE of the
 * points in either ring, where joins and leaves alike still pay. It reads every old point
 * and hashes and sorts the fresh ones: with a quarter of the ring joining at once it costs
 * 0.86-0.96 of the full build, and as much with 30-33%, while leaves, which hash nothing,
 * cost 0.74-0.88 of one at 30% (bench/README.md, "Share rebuilds"). */
#define MERGE_CHANGE_SHARE 4
/* The prefix table is carried over from the old one (prefix_from_old) while the points that
 * came or went are at most 1 / PREFIX_CARRY_SHARE of the buckets; beyond that, a run per
 * change costs more than counting the table afresh (prefix_by_count), which takes a fixed
 * three passes: 0.4 ms against 1.3 for a one-member change at 1,000 x 512, 3.0 against 1.3
 * with a quarter of the points fresh. */
#define PREFIX_CARRY_SHARE 10

/* The old ring's points are the new ring's, owner for owner, when the point counts follow the
 * same rule: same mode and vnodes, and no scaling or the very same factor. */
static bool same_point_rule(const struct rd_ring *old, const struct build_plan *p)
{
    return old->mode == RD_RING_MODE_RINGD && p->rule.mode == RD_RING_MODE_RINGD &&
           old->vnodes == p->rule.vnodes && old->budget == p->budget &&
           (p->budget == 0 || old->raw_points == p->raw_total);
}

/*
 * Pairs the old ring's members with the plan's by name (both in name order). A new member
 * keeps its old points when the old ring has its name with as many points (a member's points
 * are its name's first `count` hashes, whatever else changed): old_to_new[k] is then its new
 * index, otherwise NOBODY. The other new members are fresh, listed in fresh[] in name order.
 * Returns how many are fresh; *fresh_points counts their points.
 */
static size_t pair_members(const struct rd_ring *old, const struct build_plan *p,
                           uint32_t *old_to_new, uint32_t *fresh, uint64_t *fresh_points)
{
    size_t nfresh = 0;
    uint32_t k = 0;
    *fresh_points = 0;
    for (uint32_t j = 0; j < p->n; j++) {
        const char *name = p->sorted[j]->name;
        int c = -1;
        while (k < old->nmembers && (c = strcmp(old->names[k].s, name)) < 0)
            old_to_new[k++] = NOBODY;
        uint32_t pc = plan_points(p, p->sorted[j]->weight);
        if (k < old->nmembers && c == 0 && old->points[k] == pc) {
            old_to_new[k++] = j;
            continue;
        }
        if (k < old->nmembers && c == 0) old_to_new[k++] = NOBODY; /* count changed */
        fresh[nfresh++] = j;
        *fresh_points += pc;
    }
    while (k < old->nmembers)
        old_to_new[k++] = NOBODY;
    return nfresh;
}

/*
 * The fresh members' points, sorted by (hash, owner) exactly as a full build sorts, written
 * to fh[0..F) and fo[0..F) (fh[F] = UINT64_MAX) with owners as new member indexes. It is a
 * full build of a ring of just those members, in `sub` (its arrays in scratch), so it is the
 * same bucket sort; fresh[] is in name order, so the sub ring's indexes map to the new ones
 * in the same order and its tie order is the new ring's.
 */
static bool sort_fresh(const struct rd_ring *r, const uint32_t *fresh, size_t nfresh,
                       uint32_t npoints, struct rd_ring *sub, const struct sort_shape *sh,
                       unsigned b, struct sort_tmp t, const struct rd_ring_hooks *hooks)
{
    for (size_t s = 0; s < nfresh; s++) {
        sub->names[s] = r->names[fresh[s]];
        sub->points[s] = r->points[fresh[s]];
    }
    sub->nmembers = (uint32_t)nfresh;
    sub->npoints = npoints;
    sub->mode = RD_RING_MODE_RINGD;
    sub->shift = 64 - b;
    if (!sort_points(sub, b, sh, t, hooks)) return false;
    for (uint32_t i = 0; i < npoints; i++)
        sub->owner[i] = fresh[sub->owner[i]];
    return true;
}

/*
 * Merges the old ring's points that stay (owners renumbered by old_to_new) with the sorted
 * fresh ones into r, and lists the prefix bucket (under r's shift) of each old point that
 * goes into gone[], in order. old_to_new is increasing over the members that stay, so the
 * old points stay sorted by (hash, owner) after renumbering, and one merge by (hash, owner)
 * gives the full build's order. fh[F] = UINT64_MAX keeps the common path to one compare: a
 * fresh point is due only when the next fresh hash is <= the old point's.
 */
static void merge_points(struct rd_ring *r, const struct rd_ring *old, const uint32_t *old_to_new,
                         const uint64_t *fh, const uint32_t *fo, uint32_t nfresh, uint32_t *gone)
{
    /* restrict: the arrays never overlap, which lets the loop keep its state in registers */
    const uint64_t *restrict oh = old->hashes;
    const uint32_t *restrict oo = old->owner;
    const uint32_t *restrict renumber = old_to_new;
    const uint64_t *restrict fresh_h = fh;
    const uint32_t *restrict fresh_o = fo;
    uint64_t *restrict h = r->hashes;
    uint32_t *restrict o = r->owner;
    unsigned shift = r->shift;
    uint32_t d = 0, j = 0, g = 0, nold = old->npoints;
    uint64_t next = fresh_h[0];
    for (uint32_t i = 0; i < nold; i++) {
        uint32_t m = renumber[oo[i]];
        uint64_t v = oh[i];
        if (m == NOBODY) {
            gone[g++] = (uint32_t)(v >> shift);
            continue;
        }
        if (next <= v) {
            while (next < v || (next == v && j < nfresh && fresh_o[j] < m)) {
                h[d] = next;
                o[d++] = fresh_o[j++];
                next = fresh_h[j];
            }
        }
        h[d] = v;
        o[d++] = m;
    }
    for (; j < nfresh; j++) {
        h[d] = fresh_h[j];
        o[d++] = fresh_o[j];
    }
    h[d] = UINT64_MAX; /* the lookup sentinel, as sort_points leaves it */
}

/*
 * r's prefix table from old's, when both have 2^b buckets: first[p] counts the points in
 * buckets below p, so the new entry is the old one plus the fresh points below p less the
 * gone ones below p. Between two buckets where a point came or went that difference is
 * constant, so the table is a copy with a constant added, run by run.
 */
static void prefix_from_old(struct rd_ring *r, const struct rd_ring *old, const uint64_t *fh,
                            uint32_t nfresh, const uint32_t *gone, uint32_t ngone)
{
    size_t nbuckets = (size_t)1 << (64 - r->shift);
    const uint32_t *restrict from = old->first;
    uint32_t *restrict to = r->first;
    uint32_t delta = 0, j = 0, g = 0; /* delta wraps: it is added modulo 2^32 */
    size_t p = 0;
    for (;;) {
        size_t fb = j < nfresh ? (size_t)(fh[j] >> r->shift) : SIZE_MAX;
        size_t gb = g < ngone ? gone[g] : SIZE_MAX;
        size_t e = fb < gb ? fb : gb; /* the next bucket where a point came or went */
        size_t end = e < nbuckets ? e + 1 : nbuckets + 1;
        for (; p < end; p++)
            to[p] = from[p] + delta;
        if (e == SIZE_MAX) return;
        for (; j < nfresh && (size_t)(fh[j] >> r->shift) == e; j++)
            delta++;
        for (; g < ngone && gone[g] == e; g++)
            delta--;
    }
}

/* r's prefix table from its sorted points: count per bucket, then prefix sums; first[2^b] =
 * P (what sort_points leaves). */
static void prefix_by_count(struct rd_ring *r)
{
    size_t nbuckets = (size_t)1 << (64 - r->shift);
    uint32_t *first = r->first, run = 0;
    memset(first, 0, nbuckets * sizeof *first);
    for (uint32_t i = 0; i < r->npoints; i++)
        first[r->hashes[i] >> r->shift]++;
    for (size_t p = 0; p < nbuckets; p++) {
        uint32_t c = first[p];
        first[p] = run;
        run += c;
    }
    first[nbuckets] = run;
}

/* Pairing of an incremental build (see pair_members), one allocation. */
struct pairing {
    uint32_t *old_to_new; /* [old members] */
    uint32_t *fresh;      /* [n] fresh members' new indexes, in name order */
    size_t nfresh;
    uint64_t fresh_points;
    uint64_t gone_points; /* old points whose member left or changed its count */
};

/* Scratch of the merge: a ring of the fresh members (see sort_fresh). */
struct merge_tmp {
    struct rd_ring sub;
    struct sort_tmp t;
    struct sort_shape sh;
    unsigned b;
    uint32_t *gone; /* [gone points] their prefix buckets (see merge_points) */
};

/* Lays out the merge's scratch in one allocation; returns it or NULL. */
static char *merge_tmp_alloc(const struct pairing *pr, const struct rd_ring_hooks *hooks,
                             struct merge_tmp *m)
{
    uint32_t nfp = (uint32_t)pr->fresh_points;
    unsigned b = 1;
    while (((uint64_t)1 << b) < nfp)
        b++;
    m->b = b;
    m->sh = sort_shape_of(nfp, b);
    size_t off_hashes = align_up(pr->nfresh * sizeof(struct ring_name), sizeof(uint64_t));
    size_t off_t = off_hashes + ((size_t)nfp + 1) * sizeof(uint64_t);
    size_t off_u32 = align_up(off_t + sort_tmp_size(&m->sh), sizeof(uint64_t));
    /* u32 arrays: sub points[nfresh] | sub owner[F] | sub first[2^b + 1] | gone[the old
     * points that go] */
    size_t u32s = pr->nfresh + nfp + ((size_t)1 << b) + 1 + pr->gone_points;
    char *mem = ring_alloc(hooks, off_u32 + u32s * sizeof(uint32_t));
    if (!mem) return NULL;
    memset(&m->sub, 0, sizeof m->sub);
    m->sub.names = (struct ring_name *)mem;
    m->sub.hashes = (uint64_t *)(mem + off_hashes);
    m->t = sort_tmp_of(mem + off_t, &m->sh);
    m->sub.points = (uint32_t *)(mem + off_u32);
    m->sub.owner = m->sub.points + pr->nfresh;
    m->sub.first = m->sub.owner + nfp;
    m->gone = m->sub.first + ((size_t)1 << b) + 1;
    return mem;
}

/* Builds r's points from old and the fresh members, into a filled r (see build_merged); false
 * when the build is abandoned. */
static bool place_merged(struct rd_ring *r, const struct rd_ring *old, const struct pairing *pr,
                         struct merge_tmp *m, const struct rd_ring_hooks *hooks)
{
    uint32_t nfp = (uint32_t)pr->fresh_points;
    if (!sort_fresh(r, pr->fresh, pr->nfresh, nfp, &m->sub, &m->sh, m->b, m->t, hooks))
        return false;
    m->sub.hashes[nfp] = UINT64_MAX; /* sort_points leaves it; the merge relies on it */
    merge_points(r, old, pr->old_to_new, m->sub.hashes, m->sub.owner, nfp, m->gone);
    uint64_t changes = pr->fresh_points + pr->gone_points;
    if (r->shift == old->shift && changes * PREFIX_CARRY_SHARE <= (uint64_t)1 << (64 - r->shift))
        prefix_from_old(r, old, m->sub.hashes, nfp, m->gone, (uint32_t)pr->gone_points);
    else
        prefix_by_count(r);
    return true;
}

/*
 * The incremental build of a plan from `old` when the old points carry over (same point
 * rule) and the points that change are a small share of the ring; otherwise the full build.
 * Frees p->sorted. The result is byte for byte the full build's: the same member arrays and
 * checksum (fill_members), the same zone index, and the same points in the same order.
 */
static int build_merged(const struct rd_ring *old, struct build_plan *p,
                        const struct rd_ring_hooks *hooks, struct rd_ring **out)
{
    if (!old || p->total == 0 || old->npoints == 0 || !same_point_rule(old, p))
        return build_full(p, hooks, out);
    struct pairing pr = {0};
    pr.old_to_new = ring_alloc(hooks, ((size_t)old->nmembers + p->n) * sizeof(uint32_t));
    if (!pr.old_to_new) {
        free(p->sorted);
        return RD_ENOMEM;
    }
    pr.fresh = pr.old_to_new + old->nmembers;
    pr.nfresh = pair_members(old, p, pr.old_to_new, pr.fresh, &pr.fresh_points);
    pr.gone_points = old->npoints + pr.fresh_points - p->total; /* total = kept + fresh */
    uint64_t either = old->npoints + pr.fresh_points;           /* points in either ring */
    if ((pr.fresh_points + pr.gone_points) * MERGE_CHANGE_SHARE > either) {
        free(pr.old_to_new);
        return build_full(p, hooks, out);
    }
    struct merge_tmp m;
    struct rd_ring *r = ring_block(p, hooks);
    char *tmp = r ? merge_tmp_alloc(&pr, hooks, &m) : NULL;
    if (!tmp) {
        free(r);
        free(pr.old_to_new);
        free(p->sorted);
        return RD_ENOMEM;
    }
    fill_members(r, p);
    free(p->sorted);
    if (!index_zones(r, hooks)) {
        free(tmp);
        free(pr.old_to_new);
        free(r);
        return RD_ENOMEM;
    }
    bool placed = place_merged(r, old, &pr, &m, hooks);
    free(tmp);
    free(pr.old_to_new);
    if (!placed) {
        free(r);
        return RD_ECANCELED;
    }
    *out = r;
    return 0;
}

int rd_ring_rebuild_with(const struct rd_ring *old, const struct rd_ring_member *members, size_t n,
                         uint32_t vnodes, const struct rd_ring_hooks *hooks, struct rd_ring **out)
{
    if (!hooks) hooks = &no_hooks;
    if (!out) return RD_EINVAL;
    *out = NULL;
    struct build_plan p;
    int rc = plan_build(members, n, RD_RING_MODE_RINGD, vnodes, hooks, &p);
    return rc < 0 ? rc : build_merged(old, &p, hooks, out);
}

int rd_ring_rebuild(const struct rd_ring *old, const struct rd_ring_member *members, size_t n,
                    uint32_t vnodes, struct rd_ring **out)
{
    return rd_ring_rebuild_with(old, members, n, vnodes, NULL, out);
}

int rd_ring_new_with(const struct rd_ring_member *members, size_t n, uint32_t vnodes,
                     const struct rd_ring_hooks *hooks, struct rd_ring **out)
{
    return ring_build(members, n, RD_RING_MODE_RINGD, vnodes, hooks, out);
}

int rd_ring_new(const struct rd_ring_member *members, size_t n, uint32_t vnodes,
                struct rd_ring **out)
{
    return ring_build(members, n, RD_RING_MODE_RINGD, vnodes, NULL, out);
}

int rd_ring_new_ketama_with(const struct rd_ring_member *members, size_t n,
                            const struct rd_ring_hooks *hooks, struct rd_ring **out)
{
    /* the point hash is libmemcached's: a substitute would build some other ring */
    struct rd_ring_hooks alloc_only = {NULL, hooks ? hooks->alloc : NULL, hooks ? hooks->ctx : NULL,
                                       hooks ? hooks->abandon : NULL};
    return ring_build(members, n, RD_RING_MODE_KETAMA, 0, &alloc_only, out);
}

int rd_ring_new_ketama(const struct rd_ring_member *members, size_t n, struct rd_ring **out)
{
    return ring_build(members, n, RD_RING_MODE_KETAMA, 0, NULL, out);
}

int rd_ring_build_abandonable(const struct rd_ring *old, const struct rd_ring_member *members,
                              size_t n, enum rd_ring_mode mode, uint32_t vnodes,
                              const atomic_bool *abandon, struct rd_ring **out)
{
    const struct rd_ring_hooks hooks = {NULL, NULL, NULL, abandon};
    return mode == RD_RING_MODE_KETAMA ? rd_ring_new_ketama_with(members, n, &hooks, out)
                                       : rd_ring_rebuild_with(old, members, n, vnodes, &hooks, out);
}

void rd_ring_delete(struct rd_ring *ring)
{
    free(ring); /* one block */
}

/* ---- accessors -------------------------------------------------------------------------- */

size_t rd_ring_member_count(const struct rd_ring *ring)
{
    return ring ? ring->nmembers : 0;
}

const char *rd_ring_member_name(const struct rd_ring *ring, size_t idx)
{
    return ring && idx < ring->nmembers ? ring->names[idx].s : NULL;
}

uint32_t rd_ring_member_weight(const struct rd_ring *ring, size_t idx)
{
    return ring && idx < ring->nmembers ? ring->weights[idx] : 0;
}

const char *rd_ring_member_zone(const struct rd_ring *ring, size_t idx)
{
    return ring && idx < ring->nmembers ? ring->zones[idx].s : "";
}

const char *rd_ring_member_identity(const struct rd_ring *ring, size_t idx)
{
    return ring && idx < ring->nmembers ? ring->ids + ring->id_off[idx] : NULL;
}

enum rd_ring_mode rd_ring_mode(const struct rd_ring *ring)
{
    return ring ? ring->mode : RD_RING_MODE_RINGD;
}

uint32_t rd_ring_member_points(const struct rd_ring *ring, size_t idx)
{
    return ring && idx < ring->nmembers ? ring->points[idx] : 0;
}

size_t rd_ring_point_count(const struct rd_ring *ring)
{
    return ring ? ring->npoints : 0;
}

bool rd_ring_scaled(const struct rd_ring *ring, uint64_t *budget, uint64_t *raw_points)
{
    if (!ring || ring->budget == 0) return false;
    if (budget) *budget = ring->budget;
    if (raw_points) *raw_points = ring->raw_points;
    return true;
}

uint32_t rd_ring_vnodes(const struct rd_ring *ring)
{
    return ring ? ring->vnodes : 0;
}

uint64_t rd_ring_checksum(const struct rd_ring *ring)
{
    return ring ? ring->checksum : 0;
}

void rd_ring_points(const struct rd_ring *ring, const uint64_t **hashes, const uint32_t **owners)
{
    *hashes = ring ? ring->hashes : NULL;
    *owners = ring ? ring->owner : NULL;
}

void rd_ring_view(const struct rd_ring *r, struct rd_ring_view *v)
{
    *v = (struct rd_ring_view){
        .nmembers = r->nmembers,
        .npoints = r->npoints,
        .vnodes = r->vnodes,
        .nzones = r->nzones,
        .mode = r->mode,
        .zoned = r->zoned,
        .ketama_weighted = r->ketama_weighted,
        .raw_points = r->raw_points,
        .budget = r->budget,
        .checksum = r->checksum,
        .shift = r->shift,
        .hashes = r->hashes,
        .owner = r->owner,
        .first = r->first,
        .nfirst = r->npoints ? ((size_t)1 << (64 - r->shift)) + 1 : 0,
        .points = r->points,
        .weights = r->weights,
        .zone_of = r->zone_of,
        .id_off = r->id_off,
        .rank_start = r->rank_start,
        .ids = r->ids,
    };
}

/* ---- lookups ---------------------------------------------------------------------------- */

/*
 * Index of the first point >= pos, wrapping to 0. The ring must have points.
 * Every point of a later bucket is > pos, and hashes[P] = UINT64_MAX stops the scan at the
 * end, so the scan needs no bucket end: it stops at the answer. A bucket holds < 1 point on
 * average, so one branch-free step settles most lookups and the loop rarely runs.
 */
static inline uint32_t point_index(const struct rd_ring *r, uint64_t pos)
{
    const uint64_t *h = r->hashes;
    uint32_t i = r->first[pos >> r->shift];
    i += h[i] < pos;
    while (h[i] < pos)
        i++;
    /* i == P: pos is past the last point (hashes[P] is the sentinel, not a point). */
    return i == r->npoints ? 0 : i;
}

int rd_ring_owner_at(const struct rd_ring *ring, uint64_t pos)
{
    if (!ring || ring->npoints == 0) return -1;
    return (int)ring->owner[point_index(ring, pos)];
}

/* A key's position: XXH3-64 of it, or in ketama mode libmemcached's MD5 key hash, placed
 * like the ketama points at value << 32. */
static inline uint64_t key_position(const struct rd_ring *r, const void *key, size_t len)
{
    if (r->mode == RD_RING_MODE_KETAMA) return (uint64_t)rd_ketama_key_hash(key, len) << 32;
    return XXH3_64bits(key, len);
}

uint64_t rd_ring_key_position(const struct rd_ring *ring, const void *key, size_t len)
{
    return ring ? key_position(ring, key, len) : XXH3_64bits(key, len);
}

int rd_ring_owner(const struct rd_ring *ring, const void *key, size_t len)
{
    if (!ring || ring->npoints == 0) return -1;
    return (int)ring->owner[point_index(ring, key_position(ring, key, len))];
}

long rd_ring_key_point(const struct rd_ring *ring, const void *key, size_t len)
{
    if (!ring || ring->npoints == 0) return -1;
    return (long)point_index(ring, key_position(ring, key, len));
}

uint32_t rd_ring_point_member(const struct rd_ring *ring, size_t i)
{
    if (!ring || i >= ring->npoints) return UINT32_MAX;
    return ring->owner[i];
}

static bool in_out(const uint32_t *out, size_t got, uint32_t m)
{
    for (size_t k = 0; k < got; k++)
        if (out[k] == m) return true;
    return false;
}

/*
 * Zone-aware replicas (proto/PROTOCOL.md, "Owners (replicas)"): walk clockwise from point i
 * over distinct members; a member's rank is how many members of its zone the walk met before
 * it; the answer is the first `want` members by (rank, walk order).
 *
 * One walk, no list of the members met: rank_start[] (index_zones) says where each rank's
 * members begin in the answer, so the member of rank r that is the k-th of its rank in walk
 * order goes straight to out[rank_start[r] + k], or nowhere if that is past `want`. Only
 * ranks below L, the first with rank_start[L] >= want, can land in the answer. The walk ends
 * when all `want` places are filled, which for want <= number of zones is as soon as that
 * many zones have been met. Counters: seen[zone] and found[rank < L], on the stack for up
 * to OWNERS_STACK_COUNTERS of them, plus the members-met bitmap `bits` from the caller.
 * Returns 0 only if the counters needed the heap and it failed.
 */
static size_t owners_by_zone(const struct rd_ring *r, uint32_t i, size_t want, uint64_t *bits,
                             uint32_t *out)
{
    /* Members without a point are never met: rank_start[n] counts those that have one. */
    if (want > r->rank_start[r->nmembers]) want = r->rank_start[r->nmembers];
    size_t levels = 1;
    while (r->rank_start[levels] < want)
        levels++;
    uint32_t stack_counters[OWNERS_STACK_COUNTERS];
    size_t ncounters = (size_t)r->nzones + levels;
    uint32_t *seen =
        ncounters <= OWNERS_STACK_COUNTERS ? stack_counters : malloc(ncounters * sizeof *seen);
    if (!seen) return 0;
    uint32_t *found = seen + r->nzones;
    memset(seen, 0, ncounters * sizeof *seen);
    memset(bits, 0, (r->nmembers + 63) / 64 * sizeof *bits);
    size_t got = 0;
    /* Every member has a point, so one turn of the ring meets all of them. */
    for (uint32_t step = 0; step < r->npoints && got < want;
         step++, i = i + 1 == r->npoints ? 0 : i + 1) {
        uint32_t m = r->owner[i];
        uint64_t bit = (uint64_t)1 << (m % 64);
        if (bits[m / 64] & bit) continue;
        bits[m / 64] |= bit;
        uint32_t z = r->zone_of[m];
        size_t rank = z == NO_ZONE ? 0 : seen[z]++;
        if (rank >= levels) continue;
        size_t at = r->rank_start[rank] + found[rank]++;
        if (at < want) {
            out[at] = m;
            got++;
        }
    }
    if (seen != stack_counters) free(seen);
    return got;
}

size_t rd_ring_owners_at(const struct rd_ring *ring, uint64_t pos, size_t n, uint32_t *out)
{
    if (!ring || ring->npoints == 0 || n == 0) return 0;
    size_t want = n < ring->nmembers ? n : ring->nmembers;
    uint32_t i = point_index(ring, pos);
    if (ring->zoned) {
        uint64_t stack_bits[OWNERS_STACK_MEMBERS / 64];
        if (ring->nmembers <= OWNERS_STACK_MEMBERS)
            return owners_by_zone(ring, i, want, stack_bits, out);
        uint64_t *bits = malloc((ring->nmembers + 63) / 64 * sizeof *bits);
        size_t got = bits ? owners_by_zone(ring, i, want, bits, out) : 0;
        free(bits);
        return got;
    }
    out[0] = ring->owner[i];
    if (want == 1) return 1;

    /* The ring is shared and immutable, so the "taken" set lives with the caller's call:
     * out[] itself for a few replicas, a stack bitmap for up to OWNERS_STACK_MEMBERS members,
     * a heap bitmap beyond (or out[] again if that allocation fails: slower, still right). */
    uint64_t stack_bits[OWNERS_STACK_MEMBERS / 64];
    uint64_t *bits = NULL;
    size_t words = (ring->nmembers + 63) / 64;
    if (want > OWNERS_LINEAR_MAX) {
        if (ring->nmembers <= OWNERS_STACK_MEMBERS)
            bits = stack_bits;
        else
            bits = malloc(words * sizeof *bits);
        if (bits) {
            memset(bits, 0, words * sizeof *bits);
            bits[out[0] / 64] |= (uint64_t)1 << (out[0] % 64);
        }
    }
    size_t got = 1;
    /* Every member has a point, so one turn of the ring finds `want` <= nmembers of them. */
    for (uint32_t step = 1; step < ring->npoints && got < want; step++) {
        if (++i == ring->npoints) i = 0;
        uint32_t m = ring->owner[i];
        if (bits) {
            uint64_t bit = (uint64_t)1 << (m % 64);
            if (bits[m / 64] & bit) continue;
            bits[m / 64] |= bit;
        } else if (in_out(out, got, m)) {
            continue;
        }
        out[got++] = m;
    }
    if (bits && bits != stack_bits) free(bits);
    return got;
}

size_t rd_ring_owners(const struct rd_ring *ring, const void *key, size_t len, size_t n,
                      uint32_t *out)
{
    if (!ring) return 0;
    return rd_ring_owners_at(ring, key_position(ring, key, len), n, out);
}

/* ---- diff ------------------------------------------------------------------------------- */

/* Key-space lengths are up to 2^64 (the whole ring), so they are summed as 128-bit pairs. */
struct u128 {
    uint64_t hi, lo;
};

static void u128_add(struct u128 *a, struct u128 b)
{
    uint64_t lo = a->lo + b.lo;
    a->hi += b.hi + (lo < a->lo);
    a->lo = lo;
}

static double u128_fraction(struct u128 a)
{
    return (double)a.hi + (double)a.lo * 0x1p-64;
}

struct move_acc {
    uint32_t from, to; /* old member index, new member index; NOBODY for an empty ring */
    struct u128 len;
};

/*
 * The arcs that changed hands, summed by (from, to) pair. A ring that goes from a few members
 * to millions of points changes hands at every one of them, so arcs are summed as they come
 * (sorting a list of them took seconds), in one of two ways:
 *   - dense: one cell per possible pair, when the possible pairs are few enough (see
 *     move_list_start). An add is one write to a known address, which the core overlaps
 *     with the next ones. In a join storm a ring of 300 members against one of 1,000 has
 *     170,000 pairs from 360,000 arcs, and there the index below cost about 55 ns an arc
 *     (a hash, then two dependent lines at random in megabytes), 2.4x the cells;
 *   - otherwise one entry per pair, found through an open-addressing index.
 * Sums commute, so the order of the arcs does not show in the result.
 */
struct move_list {
    struct move_acc *v; /* the distinct pairs (dense: gathered at the end) */
    size_t n, cap;
    uint32_t *index; /* [mask + 1] entry index + 1, 0 = empty */
    size_t mask;
    size_t last;         /* the entry added to last: neighbouring intervals often share a pair */
    uint64_t *cells;     /* dense: [from * nto + to] the pair's sum modulo 2^64; 0 = none */
    uint32_t nfrom, nto; /* dense: members of each ring + 1, the last one for NOBODY (32-bit,
                            so that a store to a cell cannot alias them) */
    uint32_t last_cell;  /* dense: the cell added to last, UINT32_MAX before the first */
    unsigned way;        /* RD_RING_DIFF_INDEXED or RD_RING_DIFF_CELLS: a test's choice */
};

static size_t move_slot(const struct move_list *l, uint32_t from, uint32_t to)
{
    uint64_t h = ((uint64_t)from << 32 | to) * UINT64_C(0x9e3779b97f4a7c15);
    size_t k = (size_t)(h >> 32) & l->mask;
    while (l->index[k] != 0) {
        const struct move_acc *a = &l->v[l->index[k] - 1];
        if (a->from == from && a->to == to) break;
        k = (k + 1) & l->mask;
    }
    return k;
}

/* Doubles the index (kept at most half full) and places every pair again. */
static int move_index_grow(const struct rd_ring_hooks *hooks, struct move_list *l)
{
    size_t size = l->index ? 2 * (l->mask + 1) : 128;
    uint32_t *index = ring_alloc(hooks, size * sizeof *index);
    if (!index) return RD_ENOMEM;
    memset(index, 0, size * sizeof *index);
    free(l->index);
    l->index = index;
    l->mask = size - 1;
    for (size_t k = 0; k < l->n; k++)
        l->index[move_slot(l, l->v[k].from, l->v[k].to)] = (uint32_t)k + 1;
    return 0;
}

static int move_index_add(const struct rd_ring_hooks *hooks, struct move_list *l, uint32_t from,
                          uint32_t to, struct u128 len)
{
    if (l->n > 0 && l->v[l->last].from == from && l->v[l->last].to == to) {
        u128_add(&l->v[l->last].len, len);
        return 0;
    }
    if (2 * (l->n + 1) > (l->index ? l->mask + 1 : 0) && move_index_grow(hooks, l) < 0)
        return RD_ENOMEM;
    size_t k = move_slot(l, from, to);
    if (l->index[k] != 0) {
        l->last = l->index[k] - 1;
        u128_add(&l->v[l->last].len, len);
        return 0;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct move_acc *v = ring_alloc(hooks, cap * sizeof *v);
        if (!v) return RD_ENOMEM;
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        free(l->v);
        l->v = v;
        l->cap = cap;
    }
    l->last = l->n;
    l->v[l->n++] = (struct move_acc){from, to, len};
    l->index[k] = (uint32_t)l->n;
    return 0;
}

/* Adds an arc to its pair's sum: in the cells, or through the index. */
static inline int move_add(const struct rd_ring_hooks *hooks, struct move_list *l, uint32_t from,
                           uint32_t to, struct u128 len)
{
    if (!l->cells) return move_index_add(hooks, l, from, to, len);
    uint32_t f = from == NOBODY ? l->nfrom - 1 : from;
    uint32_t t = to == NOBODY ? l->nto - 1 : to;
    l->last_cell = f * l->nto + t;
    l->cells[l->last_cell] += len.lo; /* 2^64 adds 0: see move_list_gather */
    return 0;
}

/* A cell costs its clearing and two scans, 24 bytes in order, where an arc summed by the
 * index costs two lines at random: cells win up to about this many an arc. */
#define DENSE_CELLS_PER_ARC 16

/* Sums densely when the possible pairs are few against the arcs, at most `arcs_max`, and
 * no more than the points of both rings: then the cells take no more memory than the
 * rings' own hashes, and clearing and scanning them less time than the arcs would by the
 * index. Tests may ask for either way (ring_internal.h). */
static int move_list_start(const struct rd_ring_hooks *hooks, struct move_list *l,
                           const struct rd_ring *old, const struct rd_ring *new_ring,
                           uint64_t arcs_max)
{
    size_t nfrom = (old && old->npoints ? old->nmembers : 0) + 1;
    size_t nto = (new_ring && new_ring->npoints ? new_ring->nmembers : 0) + 1;
    uint64_t cells = (uint64_t)nfrom * nto;
    uint64_t points = (uint64_t)(old ? old->npoints : 0) + (new_ring ? new_ring->npoints : 0);
    bool dense = (l->way & RD_RING_DIFF_CELLS) ||
                 (cells <= points && cells <= DENSE_CELLS_PER_ARC * arcs_max);
    /* a cell's number fits 32 bits: 2^25 cells at most but when a test asks for them */
    if ((l->way & RD_RING_DIFF_INDEXED) || !dense || cells > UINT32_MAX) return 0;
    l->cells = ring_alloc(hooks, nfrom * nto * sizeof *l->cells);
    if (!l->cells) return RD_ENOMEM;
    memset(l->cells, 0, nfrom * nto * sizeof *l->cells);
    l->nfrom = (uint32_t)nfrom;
    l->nto = (uint32_t)nto;
    return 0;
}

/* Dense: gathers the pairs that got arcs into v[0 .. n), and frees the cells. A sum is at
 * most 2^64, the whole circle, which a cell holds as 0; but then its pair has every arc,
 * the last one included, and no other cell has any. */
static int move_list_gather(const struct rd_ring_hooks *hooks, struct move_list *l)
{
    if (!l->cells) return 0;
    size_t cells = (size_t)l->nfrom * l->nto, n = 0;
    for (size_t k = 0; k < cells; k++)
        n += l->cells[k] != 0;
    bool whole = n == 0 && l->last_cell != UINT32_MAX;
    n += whole;
    l->v = n ? ring_alloc(hooks, n * sizeof *l->v) : NULL;
    if (n && !l->v) {
        free(l->cells);
        l->cells = NULL;
        return RD_ENOMEM;
    }
    for (size_t k = 0; k < cells; k++) {
        if (l->cells[k] == 0 && !(whole && k == l->last_cell)) continue;
        size_t f = k / l->nto, t = k % l->nto;
        struct u128 len = whole ? (struct u128){1, 0} : (struct u128){0, l->cells[k]};
        l->v[l->n++] = (struct move_acc){f == l->nfrom - 1 ? NOBODY : (uint32_t)f,
                                         t == l->nto - 1 ? NOBODY : (uint32_t)t, len};
    }
    free(l->cells);
    l->cells = NULL;
    return 0;
}

/* Did an arc owned by old member `from` and new member `to` change hands? Compared by name
 * (old_to_new); NOBODY on either side (an empty ring, or a member that left) is a change. */
static bool changed_hands(const uint32_t *old_to_new, uint32_t from, uint32_t to)
{
    uint32_t same = from == NOBODY ? NOBODY : old_to_new[from];
    return same == NOBODY || same != to;
}

int rd_ring_diff(const struct rd_ring *old, const struct rd_ring *new_ring,
                 struct rd_ring_diff *out)
{
    return rd_ring_diff_with(old, new_ring, SIZE_MAX, NULL, out);
}

int rd_ring_diff_top(const struct rd_ring *old, const struct rd_ring *new_ring, size_t max_moves,
                     struct rd_ring_diff *out)
{
    return rd_ring_diff_with(old, new_ring, max_moves, NULL, out);
}

/* Pair a's place in the output order (largest share first, then names), against b's. */
static int cmp_pair_out(const struct rd_ring *old, const struct rd_ring *new_ring,
                        const struct move_acc *a, const struct move_acc *b)
{
    double fa = u128_fraction(a->len), fb = u128_fraction(b->len);
    if (fa != fb) return fa > fb ? -1 : 1;
    const char *na = a->from != NOBODY ? old->names[a->from].s : "";
    const char *nb = b->from != NOBODY ? old->names[b->from].s : "";
    int c = strcmp(na, nb);
    if (c) return c;
    na = a->to != NOBODY ? new_ring->names[a->to].s : "";
    nb = b->to != NOBODY ? new_ring->names[b->to].s : "";
    return strcmp(na, nb);
}

/*
 * Keeps the first `keep` pairs of v[0..n) in output order at v[0..keep), sorted: a max-heap
 * (by output order, the last kept on top) of the best seen so far, so that a rebuild whose
 * pairs run into the hundred thousands (a storm's joins, each taking arcs from everyone)
 * costs O(n log keep) and names of the kept pairs only, not a sort of them all by name.
 */
static void select_top(const struct rd_ring *old, const struct rd_ring *new_ring,
                       struct move_acc *v, size_t n, size_t keep)
{
    size_t len = 0;
    for (size_t k = 0; k < n; k++) {
        struct move_acc e = v[k];
        size_t at;
        if (len < keep) {
            at = len++;
            while (at > 0 && cmp_pair_out(old, new_ring, &v[(at - 1) / 2], &e) < 0) {
                v[at] = v[(at - 1) / 2];
                at = (at - 1) / 2;
            }
        } else if (cmp_pair_out(old, new_ring, &e, &v[0]) < 0) {
            at = 0;
            for (;;) {
                size_t c = 2 * at + 1;
                if (c >= len) break;
                if (c + 1 < len && cmp_pair_out(old, new_ring, &v[c + 1], &v[c]) > 0) c++;
                if (cmp_pair_out(old, new_ring, &v[c], &e) <= 0) break;
                v[at] = v[c];
                at = c;
            }
        } else {
            continue;
        }
        v[at] = e;
    }
    /* heap sort the kept ones into output order: the worst goes last */
    for (size_t end = len; end > 1; end--) {
        struct move_acc top = v[0], e = v[end - 1];
        size_t at = 0;
        for (;;) {
            size_t c = 2 * at + 1;
            if (c >= end - 1) break;
            if (c + 1 < end - 1 && cmp_pair_out(old, new_ring, &v[c + 1], &v[c]) > 0) c++;
            if (cmp_pair_out(old, new_ring, &v[c], &e) <= 0) break;
            v[at] = v[c];
            at = c;
        }
        v[at] = e;
        v[end - 1] = top;
    }
}

/*
 * The full walk: every distinct point v of either ring closes an interval (prev, v]; both
 * rings own all of it by their first point >= v. The first interval [0, v0] and the last
 * (vlast, max] are one arc, owned by each ring's point 0.
 */
static int diff_walk(const struct rd_ring *old, const struct rd_ring *new_ring,
                     const uint32_t *old_to_new, const struct rd_ring_hooks *hooks,
                     struct move_list *l)
{
    uint32_t na = old ? old->npoints : 0;
    uint32_t nb = new_ring ? new_ring->npoints : 0;
    const uint64_t *A = na ? old->hashes : NULL, *B = nb ? new_ring->hashes : NULL;
    uint32_t i = 0, j = 0;
    uint64_t v0 = 0, prev = 0;
    bool started = false;
    int rc = 0;
    while (rc == 0 && (i < na || j < nb)) {
        uint64_t v = (i < na && (j >= nb || A[i] <= B[j])) ? A[i] : B[j];
        if (started) {
            uint32_t from = na ? old->owner[i < na ? i : 0] : NOBODY;
            uint32_t to = nb ? new_ring->owner[j < nb ? j : 0] : NOBODY;
            if (changed_hands(old_to_new, from, to))
                rc = move_add(hooks, l, from, to, (struct u128){0, v - prev});
        } else {
            v0 = v;
            started = true;
        }
        prev = v;
        while (i < na && A[i] == v)
            i++;
        while (j < nb && B[j] == v)
            j++;
    }
    if (rc == 0) {
        uint32_t from = na ? old->owner[0] : NOBODY;
        uint32_t to = nb ? new_ring->owner[0] : NOBODY;
        /* (prev, 2^64) + [0, v0]: 2^64 - prev + v0, which is all of 2^64 for a single point. */
        struct u128 len = prev == v0 ? (struct u128){1, 0} : (struct u128){0, v0 - prev};
        if (changed_hands(old_to_new, from, to)) rc = move_add(hooks, l, from, to, len);
    }
    return rc;
}

/* The sparse pass below runs while the points in one ring only are at most this share of
 * both rings' points; past it, hashing and sorting them costs more than the walk. */
#define DIFF_SPARSE_SHARE 8
/* It prefetches the prefix entries of the changed point 2 * DIFF_AHEAD places on, and the
 * points those entries lead to DIFF_AHEAD places on: its lookups go to memory at random. */
#define DIFF_AHEAD 8

/* Hashes points i0 .. i1-1 of member m of r, the way r was built, into out[]. */
static void hash_member_points(const struct rd_ring *r, uint32_t m, uint32_t i0, uint32_t i1,
                               uint64_t *out)
{
    if (i0 >= i1) return; /* most members, in most diffs */
    struct rd_point_hasher ph;
    const struct ring_name *nm = &r->names[m];
    rd_point_hasher_init(&ph, nm->s, nm->len);
    for (uint32_t i = i0; i < i1; i += RD_POINT_BATCH) {
        uint32_t cnt = i1 - i < RD_POINT_BATCH ? i1 - i : RD_POINT_BATCH;
        hash_batch(&ph, nm, i, cnt, r->point_hash, r->point_ctx, out + (i - i0));
    }
}

/* Sorts v[0..n), n > 0, with tmp[0..n) as scratch: eight byte-wide counting passes, O(n) whatever
 * the values (member names are chosen by whoever runs a member). */
static void radix_sort_u64(uint64_t *v, uint64_t *tmp, size_t n)
{
    for (unsigned shift = 0; shift < 64; shift += 8) {
        size_t count[257] = {0};
        for (size_t k = 0; k < n; k++)
            count[((v[k] >> shift) & 0xff) + 1]++;
        if (count[((v[0] >> shift) & 0xff) + 1] == n) continue; /* one value of this byte */
        for (unsigned d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t k = 0; k < n; k++)
            tmp[count[(v[k] >> shift) & 0xff]++] = v[k];
        memcpy(v, tmp, n * sizeof *v);
    }
}

/* Cyclic length of (p, v]; 0 means every point of that ring sits at v: the whole circle. */
static struct u128 arc_to(uint64_t v, uint64_t pa, uint64_t pb)
{
    uint64_t da = v - pa, db = v - pb;
    if (da == 0 && db == 0) return (struct u128){1, 0};
    if (da == 0 || (db != 0 && db < da)) return (struct u128){0, db};
    return (struct u128){0, da};
}

/*
 * The diff from the points that are in one ring only. An interval (prev, v] between
 * neighbouring positions of the two rings changes hands only if a point at v is in one ring
 * and not the other: when every point at v is in both, both rings give the interval to the
 * same member, the one with the smallest name among them. So only the intervals that end at
 * those points are weighed, each once, from the nearer of the two rings' points before v,
 * with each ring's owner of v: the walk's sum, interval for interval. A member's points are
 * its name's first `count` hashes, so the ones in one ring only are the differences of the
 * counts (points_in_one_ring: `changed` of them, kept[] the rest), hashed again. Needs both
 * rings in ringd mode with one point hash (the caller checks, and takes the walk when those
 * points are too many to pay).
 */
static int diff_sparse(const struct rd_ring *old, const struct rd_ring *new_ring,
                       const uint32_t *old_to_new, const uint32_t *kept, uint64_t changed,
                       const struct rd_ring_hooks *hooks, struct move_list *l)
{
    if (changed == 0) return 0; /* the same points: nothing can have changed hands */
    uint64_t *v = ring_alloc(hooks, 2 * changed * sizeof *v);
    if (!v) return RD_ENOMEM;
    size_t n = 0;
    for (uint32_t k = 0; k < old->nmembers; k++) {
        uint32_t t = old_to_new[k], c = t != NOBODY ? kept[t] : 0;
        hash_member_points(old, k, c, old->points[k], v + n);
        n += old->points[k] - c;
    }
    for (uint32_t t = 0; t < new_ring->nmembers; t++) {
        hash_member_points(new_ring, t, kept[t], new_ring->points[t], v + n);
        n += new_ring->points[t] - kept[t];
    }
    radix_sort_u64(v, v + n, n);
    int rc = 0;
    for (size_t k = 0; k < n && rc == 0; k++) {
        if (k + 2 * DIFF_AHEAD < n) {
            __builtin_prefetch(&old->first[v[k + 2 * DIFF_AHEAD] >> old->shift]);
            __builtin_prefetch(&new_ring->first[v[k + 2 * DIFF_AHEAD] >> new_ring->shift]);
        }
        if (k + DIFF_AHEAD < n) {
            uint32_t fa = old->first[v[k + DIFF_AHEAD] >> old->shift];
            uint32_t fb = new_ring->first[v[k + DIFF_AHEAD] >> new_ring->shift];
            __builtin_prefetch(&old->hashes[fa]);
            __builtin_prefetch(&old->owner[fa]);
            __builtin_prefetch(&new_ring->hashes[fb]);
            __builtin_prefetch(&new_ring->owner[fb]);
        }
        if (k > 0 && v[k] == v[k - 1]) continue; /* one interval ends there, weighed once */
        uint32_t ia = point_index(old, v[k]), ib = point_index(new_ring, v[k]);
        uint64_t pa = old->hashes[(ia ? ia : old->npoints) - 1];
        uint64_t pb = new_ring->hashes[(ib ? ib : new_ring->npoints) - 1];
        uint32_t from = old->owner[ia], to = new_ring->owner[ib];
        if (changed_hands(old_to_new, from, to))
            rc = move_add(hooks, l, from, to, arc_to(v[k], pa, pb));
    }
    free(v);
    return rc;
}

/* Points in one ring only, when both place points by the same rule: a member's points are
 * its name's first `count` hashes, so they are the differences of the counts. kept[t] gets
 * how many of new member t's points the old ring has too. */
static uint64_t points_in_one_ring(const struct rd_ring *old, const struct rd_ring *new_ring,
                                   const uint32_t *old_to_new, uint32_t *kept)
{
    memset(kept, 0, new_ring->nmembers * sizeof *kept);
    uint64_t changed = 0;
    for (uint32_t k = 0; k < old->nmembers; k++) {
        uint32_t t = old_to_new[k], c = old->points[k];
        if (t != NOBODY) c = kept[t] = c < new_ring->points[t] ? c : new_ring->points[t];
        changed += old->points[k] - (t != NOBODY ? c : 0);
    }
    for (uint32_t t = 0; t < new_ring->nmembers; t++)
        changed += new_ring->points[t] - kept[t];
    return changed;
}

/* Both rings place points by the same rule, so a point's position says which it is. */
static bool diff_can_be_sparse(const struct rd_ring *old, const struct rd_ring *new_ring)
{
    return old && new_ring && old->npoints > 0 && new_ring->npoints > 0 &&
           old->mode == RD_RING_MODE_RINGD && new_ring->mode == RD_RING_MODE_RINGD &&
           old->point_hash == new_ring->point_hash && old->point_ctx == new_ring->point_ctx;
}

static int ring_diff(const struct rd_ring *old, const struct rd_ring *new_ring, size_t max_moves,
                     unsigned way, const struct rd_ring_hooks *hooks, struct rd_ring_diff *out)
{
    memset(out, 0, sizeof *out);
    uint32_t na = old ? old->npoints : 0;
    uint32_t nb = new_ring ? new_ring->npoints : 0;
    if (na == 0 && nb == 0) return 0;

    /* The rings index members differently: map old index -> new index by merging names. */
    uint32_t *old_to_new = NULL;
    if (na > 0) {
        old_to_new = ring_alloc(hooks, old->nmembers * sizeof *old_to_new);
        if (!old_to_new) return RD_ENOMEM;
        uint32_t j = 0;
        for (uint32_t k = 0; k < old->nmembers; k++) {
            int c = 1;
            while (nb > 0 && j < new_ring->nmembers &&
                   (c = strcmp(new_ring->names[j].s, old->names[k].s)) < 0)
                j++;
            old_to_new[k] = (nb > 0 && j < new_ring->nmembers && c == 0) ? j : NOBODY;
        }
    }

    /* Arcs change hands only where a point is in one ring only (see diff_sparse): at most
     * `changed` of them, all points of both rings unless the rings place points alike. */
    uint64_t changed = (uint64_t)na + nb;
    uint32_t *kept = NULL;
    if (diff_can_be_sparse(old, new_ring)) {
        kept = ring_alloc(hooks, new_ring->nmembers * sizeof *kept);
        if (!kept) {
            free(old_to_new);
            return RD_ENOMEM;
        }
        changed = points_in_one_ring(old, new_ring, old_to_new, kept);
    }
    struct move_list l = {.last_cell = UINT32_MAX, .way = way};
    int rc = move_list_start(hooks, &l, old, new_ring, changed);
    if (rc == 0) {
        /* the sparse pass while those points are few enough to pay for hashing again */
        if (kept && !(way & RD_RING_DIFF_WALK) && changed * DIFF_SPARSE_SHARE <= (uint64_t)na + nb)
            rc = diff_sparse(old, new_ring, old_to_new, kept, changed, hooks, &l);
        else
            rc = diff_walk(old, new_ring, old_to_new, hooks, &l);
    }
    if (rc == 0) rc = move_list_gather(hooks, &l);
    free(l.cells);
    free(kept);
    free(old_to_new);
    free(l.index);
    if (rc != 0 || l.n == 0) { /* failed, or nothing changed hands */
        free(l.v);
        return rc;
    }

    /* One entry per (from, to) pair already (the index saw to it). */
    struct u128 total = {0, 0};
    for (size_t k = 0; k < l.n; k++)
        u128_add(&total, l.v[k].len);
    size_t keep = l.n < max_moves ? l.n : max_moves;
    struct rd_ring_move *moves = keep ? ring_alloc(hooks, keep * sizeof *moves) : NULL;
    if (keep && !moves) {
        free(l.v);
        return RD_ENOMEM;
    }
    select_top(old, new_ring, l.v, l.n, keep);
    for (size_t k = 0; k < keep; k++) {
        const struct move_acc *a = &l.v[k];
        moves[k] = (struct rd_ring_move){.fraction = u128_fraction(a->len)};
        if (a->from != NOBODY)
            memcpy(moves[k].from, old->names[a->from].s, old->names[a->from].len + 1);
        if (a->to != NOBODY)
            memcpy(moves[k].to, new_ring->names[a->to].s, new_ring->names[a->to].len + 1);
    }
    free(l.v);
    out->moved = u128_fraction(total);
    out->npairs = l.n;
    out->nmoves = keep;
    out->moves = moves;
    return 0;
}

int rd_ring_diff_with(const struct rd_ring *old, const struct rd_ring *new_ring, size_t max_moves,
                      const struct rd_ring_hooks *hooks, struct rd_ring_diff *out)
{
    return ring_diff(old, new_ring, max_moves, 0, hooks, out);
}

int rd_ring_diff_way_with(const struct rd_ring *old, const struct rd_ring *new_ring,
                          size_t max_moves, unsigned way, const struct rd_ring_hooks *hooks,
                          struct rd_ring_diff *out)
{
    return ring_diff(old, new_ring, max_moves, way, hooks, out);
}

void rd_ring_diff_destroy(struct rd_ring_diff *diff)
{
    if (!diff) return;
    free(diff->moves);
    memset(diff, 0, sizeof *diff);
}
