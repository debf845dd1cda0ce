/*
 * test_ring_rebuild.c — rd_ring_rebuild() builds exactly what rd_ring_new() builds.
 *
 * The incremental path is only worth having if nobody can tell its rings from full builds,
 * so every test here compares a rebuilt ring with a full build of the same list, byte for
 * byte, over every array of the snapshot (ring_internal.h's rd_ring_view): points, owners,
 * prefix table, per-member arrays, identities, zone index, checksum. The change sequences are
 * random from a printed seed (joins, leaves, weight, zone and identity changes, several at
 * once, down to the empty ring and back), on spread and on deliberately crowded point
 * hashes (ties everywhere, so the tie order after renumbering is exercised), and across the
 * point limit where the scaling factor changes. A counting point hash shows which path ran:
 * a merge hashes only the changed members' points, and past a quarter of the ring changing
 * at once the rebuild is a full build.
 *
 * rd_ring_diff has the same kind of shortcut (it weighs only the arcs that end at points in
 * one ring and not the other), held to the same standard: along the same random sequences,
 * its answer equals that of its walk over every point, pair for pair and bit for bit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pointhash.h"
#include "rd_err.h"
#include "ring.h"
#include "ring_internal.h"

#include "failing_alloc.h"

/* ---- helpers ------------------------------------------------------------------------------ */

#define NAME_LEN 24
#define ZONE_LEN 8

/* A member list with its own string storage; slots [0, n) are live. */
struct roster {
    size_t n, cap;
    char (*names)[NAME_LEN];
    char (*zones)[ZONE_LEN];
    char (*ids)[NAME_LEN];
    struct rd_ring_member *m;
};

static void roster_init(struct roster *r, size_t cap)
{
    r->n = 0;
    r->cap = cap;
    r->names = calloc(cap, sizeof *r->names);
    r->zones = calloc(cap, sizeof *r->zones);
    r->ids = calloc(cap, sizeof *r->ids);
    r->m = calloc(cap, sizeof *r->m);
    assert_true(r->names && r->zones && r->ids && r->m);
}

static void roster_free(struct roster *r)
{
    free(r->names);
    free(r->zones);
    free(r->ids);
    free(r->m);
}

/* Points every member's strings at its own slot (after slots moved). */
static void roster_relink(struct roster *r)
{
    for (size_t k = 0; k < r->n; k++) {
        r->m[k].name = r->names[k];
        r->m[k].zone = r->zones[k][0] ? r->zones[k] : NULL;
        r->m[k].identity = r->ids[k][0] ? r->ids[k] : NULL;
    }
}

static void roster_add(struct roster *r, const char *name, uint32_t weight)
{
    assert_true(r->n < r->cap);
    snprintf(r->names[r->n], NAME_LEN, "%s", name);
    r->zones[r->n][0] = '\0';
    r->ids[r->n][0] = '\0';
    r->m[r->n].weight = weight;
    r->n++;
    roster_relink(r);
}

/* Adds members fmt % k, k < count, at `weight`. */
static void roster_fill(struct roster *r, const char *fmt, int count, uint32_t weight)
{
    for (int k = 0; k < count; k++) {
        char name[NAME_LEN];
        snprintf(name, sizeof name, fmt, k);
        roster_add(r, name, weight);
    }
}

static void roster_drop(struct roster *r, size_t k)
{
    r->n--;
    memcpy(r->names[k], r->names[r->n], NAME_LEN);
    memcpy(r->zones[k], r->zones[r->n], ZONE_LEN);
    memcpy(r->ids[k], r->ids[r->n], NAME_LEN);
    r->m[k] = r->m[r->n];
    roster_relink(r);
}

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static size_t rng_below(size_t n)
{
    return (size_t)(rng_next() % n);
}

/* Point hashes: the real one, or one with 16 distinct values (ties everywhere); both count
 * their calls. */
struct hash_count {
    unsigned long calls;
    bool crowded;
};

static uint64_t counting_hash(const char *name, size_t name_len, uint32_t i, void *ctx)
{
    struct hash_count *c = ctx;
    c->calls++;
    uint64_t h = rd_ring_point_hash(name, name_len, i);
    return c->crowded ? h >> 60 << 60 : h;
}

/* Asserts that a and b are the same snapshot, array for array. */
static void assert_same_ring(const struct rd_ring *a, const struct rd_ring *b)
{
    struct rd_ring_view x, y;
    rd_ring_view(a, &x);
    rd_ring_view(b, &y);
    assert_int_equal(x.nmembers, y.nmembers);
    assert_int_equal(x.npoints, y.npoints);
    assert_int_equal(x.vnodes, y.vnodes);
    assert_int_equal(x.nzones, y.nzones);
    assert_int_equal(x.mode, y.mode);
    assert_int_equal(x.zoned, y.zoned);
    assert_int_equal(x.ketama_weighted, y.ketama_weighted);
    assert_int_equal(x.raw_points, y.raw_points);
    assert_int_equal(x.budget, y.budget);
    assert_int_equal(x.checksum, y.checksum);
    assert_int_equal(x.shift, y.shift);
    assert_int_equal(x.nfirst, y.nfirst);
    if (x.npoints) {
        assert_memory_equal(x.hashes, y.hashes, (x.npoints + 1) * sizeof *x.hashes);
        assert_memory_equal(x.owner, y.owner, x.npoints * sizeof *x.owner);
        assert_memory_equal(x.first, y.first, x.nfirst * sizeof *x.first);
    }
    size_t n = x.nmembers;
    if (n) {
        assert_memory_equal(x.points, y.points, n * sizeof *x.points);
        assert_memory_equal(x.weights, y.weights, n * sizeof *x.weights);
        assert_memory_equal(x.zone_of, y.zone_of, n * sizeof *x.zone_of);
    }
    assert_memory_equal(x.id_off, y.id_off, (n + 1) * sizeof *x.id_off);
    assert_memory_equal(x.rank_start, y.rank_start, (n + 1) * sizeof *x.rank_start);
    assert_memory_equal(x.ids, y.ids, x.id_off[n]);
    for (size_t k = 0; k < n; k++) {
        assert_string_equal(rd_ring_member_name(a, k), rd_ring_member_name(b, k));
        assert_string_equal(rd_ring_member_zone(a, k), rd_ring_member_zone(b, k));
    }
}

/* Rebuilds `old` into the roster's ring, checks it against a full build, and returns it;
 * *hashed is how many points the rebuild hashed. */
static struct rd_ring *rebuild_checked(const struct rd_ring *old, const struct roster *r,
                                       uint32_t vnodes, bool crowded, unsigned long *hashed)
{
    struct hash_count full_count = {0, crowded}, inc_count = {0, crowded};
    const struct rd_ring_hooks full_hooks = {counting_hash, NULL, &full_count, NULL};
    const struct rd_ring_hooks inc_hooks = {counting_hash, NULL, &inc_count, NULL};
    struct rd_ring *full = NULL, *inc = NULL;
    assert_int_equal(rd_ring_new_with(r->m, r->n, vnodes, &full_hooks, &full), 0);
    assert_int_equal(rd_ring_rebuild_with(old, r->m, r->n, vnodes, &inc_hooks, &inc), 0);
    assert_same_ring(full, inc);
    rd_ring_delete(full);
    if (hashed) *hashed = inc_count.calls;
    return inc;
}

/* One random change to the roster: join, leave, weight, zone or identity. */
static void random_change(struct roster *r, unsigned *serial)
{
    static const uint32_t weights[] = {1, 250, RD_WEIGHT_ONE, 1500, 2 * RD_WEIGHT_ONE, 7777};
    static const char *const zones[] = {"", "a", "b", "c"};
    size_t what = r->n ? rng_below(5) : 0;
    char name[NAME_LEN];
    size_t k = r->n ? rng_below(r->n) : 0;
    switch (what) {
    case 0:
        if (r->n == r->cap) break;
        snprintf(name, sizeof name, "m%u-%u", (unsigned)rng_below(1000), (*serial)++);
        roster_add(r, name, weights[rng_below(6)]);
        break;
    case 1:
        roster_drop(r, k);
        break;
    case 2:
        r->m[k].weight = weights[rng_below(6)];
        break;
    case 3:
        snprintf(r->zones[k], ZONE_LEN, "%s", zones[rng_below(4)]);
        break;
    default:
        snprintf(r->ids[k], NAME_LEN, "id-%u", (unsigned)rng_below(100));
        break;
    }
    roster_relink(r);
}

/* ---- tests -------------------------------------------------------------------------------- */

/* Random sequences of batches of 1..4 changes, each rebuild from the previous rebuilt ring. */
static void run_random_sequences(bool crowded)
{
    uint64_t seed = UINT64_C(0x52494e47) ^ crowded;
    printf("seed %#llx (%s hashes)\n", (unsigned long long)seed, crowded ? "crowded" : "spread");
    rng_state = seed;
    static const uint32_t vnodes_set[] = {1, 8, 40};
    unsigned serial = 0, steps = 0, merges = 0;
    for (int seq = 0; seq < 12; seq++) {
        struct roster r;
        roster_init(&r, 80);
        size_t start = rng_below(seq < 2 ? 2 : 70); /* the first sequences start empty or 1 */
        for (size_t k = 0; k < start; k++) {
            char name[NAME_LEN];
            snprintf(name, sizeof name, "s%u", serial++);
            roster_add(&r, name, RD_WEIGHT_ONE);
        }
        uint32_t vnodes = vnodes_set[seq % 3];
        struct rd_ring *ring = rebuild_checked(NULL, &r, vnodes, crowded, NULL);
        for (int step = 0; step < 40; step++) {
            size_t changes = 1 + rng_below(step % 5 == 4 ? 40 : 4);
            for (size_t c = 0; c < changes; c++)
                random_change(&r, &serial);
            unsigned long hashed;
            struct rd_ring *next = rebuild_checked(ring, &r, vnodes, crowded, &hashed);
            steps++;
            merges += hashed < rd_ring_point_count(next); /* a full build hashes them all */
            rd_ring_delete(ring);
            ring = next;
        }
        rd_ring_delete(ring);
        roster_free(&r);
    }
    printf("%u rebuilds, %u of them merges, all equal to full builds\n", steps, merges);
    assert_true(merges >= steps / 2);
}

static void test_rebuild_equals_a_full_build_over_random_change_sequences(void **state)
{
    (void)state;
    run_random_sequences(false);
}

static void test_rebuild_keeps_the_tie_order_when_points_collide(void **state)
{
    (void)state;
    run_random_sequences(true);
}

/* A roster of node-00 .. node-39 at weight 1.0 (room for 64), and its ring at 64 vnodes: a
 * full build, which hashes every point. */
static struct rd_ring *forty_at_64(struct roster *r)
{
    roster_init(r, 64);
    roster_fill(r, "node-%02d", 40, RD_WEIGHT_ONE);
    unsigned long hashed = 0;
    struct rd_ring *ring = rebuild_checked(NULL, r, 64, false, &hashed);
    assert_int_equal(hashed, 40 * 64);
    return ring;
}

/* A one-member change of a large enough ring is a merge: only that member's points are
 * hashed (and none for a leave or a zone change). */
static void test_rebuild_hashes_only_the_changed_members_points(void **state)
{
    (void)state;
    struct roster r;
    unsigned long hashed = 0;
    struct rd_ring *a = forty_at_64(&r);

    roster_add(&r, "node-00a", RD_WEIGHT_ONE); /* joins between node-00 and node-01 */
    struct rd_ring *b = rebuild_checked(a, &r, 64, false, &hashed);
    assert_int_equal(hashed, 64);

    r.m[5].weight = 2 * RD_WEIGHT_ONE;
    struct rd_ring *c = rebuild_checked(b, &r, 64, false, &hashed);
    assert_int_equal(hashed, 128);

    snprintf(r.zones[7], ZONE_LEN, "z1");
    roster_relink(&r);
    struct rd_ring *d = rebuild_checked(c, &r, 64, false, &hashed);
    assert_int_equal(hashed, 0);

    roster_drop(&r, 0);
    struct rd_ring *e = rebuild_checked(d, &r, 64, false, &hashed);
    assert_int_equal(hashed, 0);

    /* another vnodes: nothing carries over */
    struct rd_ring *f = rebuild_checked(e, &r, 32, false, &hashed);
    assert_int_equal(hashed, rd_ring_point_count(f));

    /* the whole list replaced: a full build */
    struct roster other;
    roster_init(&other, 64);
    roster_fill(&other, "other-%02d", 40, RD_WEIGHT_ONE);
    struct rd_ring *g = rebuild_checked(f, &other, 32, false, &hashed);
    assert_int_equal(hashed, 40 * 32);

    /* a ketama ring is never merged from */
    struct rd_ring *k = NULL;
    assert_int_equal(rd_ring_new_ketama(other.m, other.n, &k), 0);
    struct rd_ring *h = rebuild_checked(k, &other, 32, false, &hashed);
    assert_int_equal(hashed, 40 * 32);

    struct rd_ring *rings[] = {a, b, c, d, e, f, g, k, h};
    for (size_t i = 0; i < sizeof rings / sizeof rings[0]; i++)
        rd_ring_delete(rings[i]);
    roster_free(&r);
    roster_free(&other);
}

/* Many members joining or leaving at once: a merge while the points that come or go are at
 * most a quarter of those in either ring, a full build past that (where a join merge stops
 * paying).
 * A merge hashes only the joiners' points, none for leavers; a full build hashes them all. */
static void test_rebuild_of_many_changes_at_once_is_a_full_build(void **state)
{
    (void)state;
    struct roster r;
    unsigned long hashed = 0;
    struct rd_ring *forty = forty_at_64(&r);

    roster_fill(&r, "late-%02d", 10, RD_WEIGHT_ONE); /* 10 of 50 join: a fifth */
    struct rd_ring *fifty = rebuild_checked(forty, &r, 64, false, &hashed);
    assert_int_equal(hashed, 10 * 64);
    roster_fill(&r, "last-%02d", 10, RD_WEIGHT_ONE); /* 20 of 60 join: a third */
    struct rd_ring *sixty = rebuild_checked(forty, &r, 64, false, &hashed);
    assert_int_equal(hashed, 60 * 64);

    for (int k = 0; k < 15; k++) /* 15 of 60 leave: a quarter */
        roster_drop(&r, 0);
    struct rd_ring *less = rebuild_checked(sixty, &r, 64, false, &hashed);
    assert_int_equal(hashed, 0);
    roster_drop(&r, 0); /* 16 of 60 leave */
    struct rd_ring *fewer = rebuild_checked(sixty, &r, 64, false, &hashed);
    assert_int_equal(hashed, 44 * 64);

    struct rd_ring *rings[] = {forty, fifty, sixty, less, fewer};
    for (size_t i = 0; i < sizeof rings / sizeof rings[0]; i++)
        rd_ring_delete(rings[i]);
    roster_free(&r);
}

/* Across RD_RING_MAX_POINTS: 40 heavy members (16,384,000 points) fit; a 41st scales every
 * count (a full build); a zone change under the same factor merges again; a leave changes
 * the factor back to none (a full build). */
static void test_rebuild_across_the_point_limit(void **state)
{
    (void)state;
    struct roster r;
    roster_init(&r, 48);
    roster_fill(&r, "heavy-%02d", 40, RD_WEIGHT_MAX);
    uint32_t vnodes = RD_RING_VNODES_MAX;
    unsigned long hashed = 0;
    struct rd_ring *a = rebuild_checked(NULL, &r, vnodes, false, &hashed);
    assert_false(rd_ring_scaled(a, NULL, NULL));

    roster_add(&r, "heavy-40", RD_WEIGHT_MAX);
    struct rd_ring *b = rebuild_checked(a, &r, vnodes, false, &hashed);
    assert_true(rd_ring_scaled(b, NULL, NULL));
    assert_int_equal(hashed, rd_ring_point_count(b));

    snprintf(r.zones[3], ZONE_LEN, "z1");
    roster_relink(&r);
    struct rd_ring *c = rebuild_checked(b, &r, vnodes, false, &hashed);
    assert_int_equal(hashed, 0);

    roster_drop(&r, 40);
    struct rd_ring *d = rebuild_checked(c, &r, vnodes, false, &hashed);
    assert_false(rd_ring_scaled(d, NULL, NULL));
    assert_int_equal(hashed, rd_ring_point_count(d));

    rd_ring_delete(a);
    rd_ring_delete(b);
    rd_ring_delete(c);
    rd_ring_delete(d);
    roster_free(&r);
}

/* Bad input: the same code as rd_ring_new(), whatever the old ring. */
static void test_rebuild_refuses_what_rd_ring_new_refuses(void **state)
{
    (void)state;
    struct roster r;
    roster_init(&r, 8);
    roster_add(&r, "a", RD_WEIGHT_ONE);
    roster_add(&r, "b", RD_WEIGHT_ONE);
    struct rd_ring *old = NULL;
    assert_int_equal(rd_ring_new(r.m, r.n, 16, &old), 0);

    struct case_ {
        const char *name;
        uint32_t weight;
        uint32_t vnodes;
    } cases[] = {
        {"a", RD_WEIGHT_ONE, 16}, /* duplicate: RD_EEXIST */
        {"bad name!", RD_WEIGHT_ONE, 16},
        {"c", 0, 16},
        {"c", RD_WEIGHT_MAX + 1, 16},
        {"c", RD_WEIGHT_ONE, 0},
        {"c", RD_WEIGHT_ONE, RD_RING_VNODES_MAX + 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        roster_add(&r, cases[i].name, cases[i].weight);
        struct rd_ring *full = (struct rd_ring *)&r, *inc = (struct rd_ring *)&r;
        int want = rd_ring_new(r.m, r.n, cases[i].vnodes, &full);
        assert_true(want < 0);
        assert_int_equal(rd_ring_rebuild(old, r.m, r.n, cases[i].vnodes, &inc), want);
        assert_null(inc);
        assert_int_equal(rd_ring_rebuild(NULL, r.m, r.n, cases[i].vnodes, &inc), want);
        roster_drop(&r, r.n - 1);
    }
    assert_int_equal(rd_ring_rebuild(old, r.m, r.n, 16, NULL), RD_EINVAL);
    struct rd_ring *inc = NULL;
    assert_int_equal(rd_ring_rebuild(old, NULL, 1, 16, &inc), RD_EINVAL);
    rd_ring_delete(old);
    roster_free(&r);
}

/* Fails every allocation of one rebuild in turn; returns how many there were. */
static int fail_each_allocation(const struct rd_ring *old, const struct roster *r)
{
    for (int n = 0;; n++) {
        struct failing_alloc f = {n, 0};
        const struct rd_ring_hooks h = {NULL, failing_malloc, &f, NULL};
        static char junk;
        struct rd_ring *out = (struct rd_ring *)&junk;
        int rc = rd_ring_rebuild_with(old, r->m, r->n, 16, &h, &out);
        if (f.calls <= n) { /* the n-th call was never made: every failure point is covered */
            assert_int_equal(rc, 0);
            struct rd_ring *full = NULL;
            assert_int_equal(rd_ring_new(r->m, r->n, 16, &full), 0);
            assert_same_ring(full, out);
            rd_ring_delete(full);
            rd_ring_delete(out);
            return n;
        }
        assert_int_equal(rc, RD_ENOMEM);
        assert_null(out);
    }
}

/* A point hash that gives its build up (sets the abandon flag) at its `at`-th call. */
struct abandoning_hash {
    unsigned long calls, at;
    bool crowded;
    atomic_bool flag;
};

static uint64_t abandoning_hash(const char *name, size_t name_len, uint32_t i, void *ctx)
{
    struct abandoning_hash *c = ctx;
    if (++c->calls == c->at) atomic_store(&c->flag, true);
    uint64_t h = rd_ring_point_hash(name, name_len, i);
    return c->crowded ? h >> 60 << 60 : h;
}

/* Builds r (from old: NULL for a full build) with the flag raised at hash `at`: the build
 * stops within a batch of points, with RD_ECANCELED, no ring and (ASan) nothing leaked. */
static void assert_abandoned_at(const struct rd_ring *old, const struct roster *r, unsigned long at,
                                bool crowded)
{
    struct abandoning_hash c = {0, at, crowded, false};
    const struct rd_ring_hooks h = {abandoning_hash, NULL, &c, &c.flag};
    static char junk;
    struct rd_ring *out = (struct rd_ring *)&junk;
    int rc = old ? rd_ring_rebuild_with(old, r->m, r->n, 64, &h, &out)
                 : rd_ring_new_with(r->m, r->n, 64, &h, &out);
    assert_int_equal(rc, RD_ECANCELED);
    assert_null(out);
    /* the rest of the batch it was raised in */
    assert_in_range(c.calls, at, at + RD_POINT_BATCH - 1);
}

/*
 * A build whose owner gives it up (rd_ring_build_abandonable) stops: in the full build
 * (spread points, and crowded ones, which take the sort's slower second pass) and in the
 * merge, early and at the very last point, each time with RD_ECANCELED, no ring and nothing
 * leaked. A flag raised before the call stops it before the first point; one never raised
 * changes nothing, in either mode.
 */
static void test_an_abandoned_build_stops_and_leaks_nothing(void **state)
{
    (void)state;
    struct roster r;
    roster_init(&r, 301);
    roster_fill(&r, "node-%03d", 300, RD_WEIGHT_ONE);
    unsigned long total = 300 * 64;
    for (int crowded = 0; crowded < 2; crowded++) {
        assert_abandoned_at(NULL, &r, 1, crowded);
        assert_abandoned_at(NULL, &r, total / 2, crowded);
        assert_abandoned_at(NULL, &r, total, crowded);
    }
    struct rd_ring *old = NULL;
    assert_int_equal(rd_ring_new(r.m, r.n, 64, &old), 0);
    roster_add(&r, "node-new", 2 * RD_WEIGHT_ONE); /* 128 fresh points, merged */
    assert_abandoned_at(old, &r, 1, false);
    assert_abandoned_at(old, &r, 128, false);

    atomic_bool raised = true, lowered = false;
    struct rd_ring *got = NULL, *want = NULL;
    assert_int_equal(
        rd_ring_build_abandonable(old, r.m, r.n, RD_RING_MODE_RINGD, 64, &raised, &got),
        RD_ECANCELED);
    assert_null(got);
    assert_int_equal(
        rd_ring_build_abandonable(old, r.m, r.n, RD_RING_MODE_KETAMA, 0, &raised, &got),
        RD_ECANCELED);
    assert_null(got);
    assert_int_equal(
        rd_ring_build_abandonable(old, r.m, r.n, RD_RING_MODE_RINGD, 64, &lowered, &got), 0);
    assert_int_equal(rd_ring_new(r.m, r.n, 64, &want), 0);
    assert_same_ring(want, got);
    rd_ring_delete(got);
    rd_ring_delete(want);
    assert_int_equal(
        rd_ring_build_abandonable(NULL, r.m, r.n, RD_RING_MODE_KETAMA, 0, &lowered, &got), 0);
    assert_int_equal(rd_ring_new_ketama(r.m, r.n, &want), 0);
    assert_same_ring(want, got);
    rd_ring_delete(got);
    rd_ring_delete(want);
    rd_ring_delete(old);
    roster_free(&r);
}

/* Asserts that two diffs are the same answer, bit for bit. */
static void assert_same_diff(const struct rd_ring_diff *a, const struct rd_ring_diff *b)
{
    assert_true(a->moved == b->moved);
    assert_int_equal(a->npairs, b->npairs);
    assert_int_equal(a->nmoves, b->nmoves);
    for (size_t k = 0; k < a->nmoves; k++) {
        assert_string_equal(a->moves[k].from, b->moves[k].from);
        assert_string_equal(a->moves[k].to, b->moves[k].to);
        assert_true(a->moves[k].fraction == b->moves[k].fraction);
    }
}

/* The diff's point hash: rings keep theirs and the diff hashes with it again, so its count
 * tells whether the diff took its sparse pass (the walk hashes nothing). */
static struct hash_count diff_hash_count;

/* The diff between two rings every way it can be taken (ring_internal.h), each asserted to
 * be the default's answer; returns whether the default took the sparse pass (which hashes
 * points again: the hash hooks count them). */
static bool assert_every_way_the_same(const struct rd_ring *a, const struct rd_ring *b,
                                      const unsigned long *hash_calls, unsigned *npairs)
{
    struct rd_ring_diff want;
    unsigned long before = *hash_calls;
    assert_int_equal(rd_ring_diff_with(a, b, SIZE_MAX, NULL, &want), 0);
    bool sparse = *hash_calls > before;
    static const unsigned ways[] = {RD_RING_DIFF_INDEXED, RD_RING_DIFF_CELLS,
                                    RD_RING_DIFF_WALK | RD_RING_DIFF_INDEXED,
                                    RD_RING_DIFF_WALK | RD_RING_DIFF_CELLS};
    for (size_t w = 0; w < sizeof ways / sizeof *ways; w++) {
        struct rd_ring_diff got;
        assert_int_equal(rd_ring_diff_way_with(a, b, SIZE_MAX, ways[w], NULL, &got), 0);
        assert_same_diff(&want, &got);
        rd_ring_diff_destroy(&got);
    }
    *npairs = (unsigned)want.npairs;
    rd_ring_diff_destroy(&want);
    return sparse;
}

/* Random sequences as above; between consecutive rings, every way of the diff agrees: by
 * the changed points or the walk, summed in dense cells or by the index of pairs. */
static void run_diff_sequences(bool crowded)
{
    uint64_t seed = UINT64_C(0x44494646) ^ crowded;
    printf("seed %#llx (%s hashes)\n", (unsigned long long)seed, crowded ? "crowded" : "spread");
    rng_state = seed;
    diff_hash_count = (struct hash_count){0, crowded};
    const struct rd_ring_hooks hooks = {counting_hash, NULL, &diff_hash_count, NULL};
    static const uint32_t vnodes_set[] = {1, 8, 40};
    unsigned serial = 0, steps = 0, sparse = 0, moved = 0;
    for (int seq = 0; seq < 12; seq++) {
        struct roster r;
        roster_init(&r, 80);
        size_t start = rng_below(seq < 2 ? 2 : 70);
        roster_fill(&r, "s%d", (int)start, RD_WEIGHT_ONE);
        uint32_t vnodes = vnodes_set[seq % 3];
        struct rd_ring *ring = NULL;
        assert_int_equal(rd_ring_new_with(r.m, r.n, vnodes, &hooks, &ring), 0);
        for (int step = 0; step < 40; step++) {
            size_t changes = 1 + rng_below(step % 5 == 4 ? 40 : 4);
            for (size_t c = 0; c < changes; c++)
                random_change(&r, &serial);
            struct rd_ring *next = NULL;
            assert_int_equal(rd_ring_rebuild_with(ring, r.m, r.n, vnodes, &hooks, &next), 0);
            unsigned npairs;
            sparse += assert_every_way_the_same(ring, next, &diff_hash_count.calls, &npairs);
            moved += npairs > 0;
            steps++;
            rd_ring_delete(ring);
            ring = next;
        }
        rd_ring_delete(ring);
        roster_free(&r);
    }
    printf("%u diffs, %u with keys moved, %u by the changed points, every way the same\n", steps,
           moved, sparse);
    assert_true(sparse >= steps / 2 && moved >= steps / 4); /* crowded: most changes tie */
}

static void test_diff_every_way_gives_one_answer(void **state)
{
    (void)state;
    run_diff_sequences(false);
    run_diff_sequences(true);
}

/* Members named f* put every point at 0, the others where XXH3 says. */
static unsigned long flat_hash_calls;

static uint64_t flat_hash(const char *name, size_t name_len, uint32_t i, void *ctx)
{
    (void)ctx;
    flat_hash_calls++;
    return name[0] == 'f' ? 0 : rd_ring_point_hash(name, name_len, i);
}

/* A ring whose points all sit at one position: the arc that ends there is the whole circle
 * in that ring (arc_to's zero lengths; for the walk, when it is the only position of both),
 * and every way of the diff gives one answer. */
static void test_diff_over_a_ring_at_one_position_every_way_the_same(void **state)
{
    (void)state;
    const struct rd_ring_hooks hooks = {flat_hash, NULL, NULL, NULL};
    static const char *const joins[][2] = {{"fz", NULL}, {"fz", "s1"}, {"s1", NULL}, {"f0", NULL}};
    for (size_t c = 0; c < sizeof joins / sizeof joins[0]; c++) {
        struct roster r;
        roster_init(&r, 32);
        roster_fill(&r, "f%02d", 20, RD_WEIGHT_ONE);
        struct rd_ring *old = NULL, *next = NULL;
        assert_int_equal(rd_ring_new_with(r.m, r.n, 8, &hooks, &old), 0);
        for (int j = 0; j < 2; j++)
            if (joins[c][j]) roster_add(&r, joins[c][j], RD_WEIGHT_ONE);
        assert_int_equal(rd_ring_new_with(r.m, r.n, 8, &hooks, &next), 0);
        unsigned npairs;
        assert_true(assert_every_way_the_same(old, next, &flat_hash_calls, &npairs));
        /* f00 keeps position 0 against a later name, and so everything but what a spread
         * joiner takes; "f0" sorts first and takes the whole circle from f00 */
        if (c == 0) assert_int_equal(npairs, 0);
        if (c == 3) assert_int_equal(npairs, 1);
        if (c == 1 || c == 2) assert_true(npairs > 0);
        rd_ring_delete(old);
        rd_ring_delete(next);
        roster_free(&r);
    }
}

static void test_rebuild_allocation_failure_is_enomem_and_leaks_nothing(void **state)
{
    (void)state;
    /* LeakSanitizer checks "leaks nothing" when the test binary exits */
    struct roster r;
    roster_init(&r, 32);
    roster_fill(&r, "node-%02d", 20, RD_WEIGHT_ONE);
    for (size_t k = 0; k < r.n; k += 3) /* zones, so the zone index's scratch can fail too */
        snprintf(r.zones[k], ZONE_LEN, "z%zu", k % 2);
    roster_relink(&r);
    struct rd_ring *old = NULL;
    assert_int_equal(rd_ring_new(r.m, r.n, 16, &old), 0);
    roster_add(&r, "node-05x", RD_WEIGHT_ONE);
    int merged = fail_each_allocation(old, &r); /* a merge */
    roster_fill(&r, "extra-%02d", 10, RD_WEIGHT_ONE);
    int fallback = fail_each_allocation(old, &r); /* a third of the points new: a full build */
    printf("allocation failures: %d points on the merge, %d on the fallback, all RD_ENOMEM\n",
           merged, fallback);
    assert_true(merged >= 4 && fallback >= 4);
    rd_ring_delete(old);
    roster_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rebuild_equals_a_full_build_over_random_change_sequences),
        cmocka_unit_test(test_rebuild_keeps_the_tie_order_when_points_collide),
        cmocka_unit_test(test_rebuild_hashes_only_the_changed_members_points),
        cmocka_unit_test(test_rebuild_of_many_changes_at_once_is_a_full_build),
        cmocka_unit_test(test_rebuild_across_the_point_limit),
        cmocka_unit_test(test_rebuild_refuses_what_rd_ring_new_refuses),
        cmocka_unit_test(test_rebuild_allocation_failure_is_enomem_and_leaks_nothing),
        cmocka_unit_test(test_an_abandoned_build_stops_and_leaks_nothing),
        cmocka_unit_test(test_diff_every_way_gives_one_answer),
        cmocka_unit_test(test_diff_over_a_ring_at_one_position_every_way_the_same),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
