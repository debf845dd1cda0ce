/*
 * test_zones.c — zone-aware replicas (rd_ring_owners with zones), as scenarios.
 *
 * The reference here is the rule of proto/PROTOCOL.md ("Owners (replicas)") written the
 * slow, obvious way: walk the ring's sorted points (rd_ring_points) once around from the
 * key's position, list each member the first time it is met, give each its rank (members of
 * its zone listed before it, comparing zone strings; a member without a zone is a zone of
 * its own), and sort the list by (rank, walk order). The ring's lookup does none of that (it
 * places each rank's members directly, see ring.c), so agreement on random rings says the
 * two are the same rule. Then the properties the rule promises (spread, order, what moves),
 * the edges, and the protocol's test vectors, checked literally.
 *
 * Random rings come from a fixed seed, printed, so that a failure replays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rand.h"
#include "ring.h"
#include "ring_internal.h"

#define MAXM 64

/* ---- helpers ------------------------------------------------------------------------------ */

/* A member list with its own strings. */
struct group {
    size_t n;
    char names[MAXM][RD_NAME_MAX + 1];
    char zones[MAXM][RD_ZONE_MAX + 1];
    struct rd_ring_member m[MAXM];
};

static void group_add(struct group *g, const char *name, const char *zone)
{
    assert_true(g->n < MAXM);
    size_t k = g->n++;
    snprintf(g->names[k], sizeof g->names[k], "%s", name);
    snprintf(g->zones[k], sizeof g->zones[k], "%s", zone ? zone : "");
    g->m[k] = (struct rd_ring_member){g->names[k], RD_WEIGHT_ONE, zone ? g->zones[k] : NULL, NULL};
}

/* n members "m<i>" spread over nz zones "z<j>"; every `zoneless`-th one (0: none) has no zone.
 * Weights vary from 0.5 to 2.0 so that members have different point counts. */
static void group_random(struct group *g, struct rd_rand *rng, size_t n, size_t nz, size_t zoneless)
{
    g->n = 0;
    for (size_t i = 0; i < n; i++) {
        char name[32], zone[32];
        snprintf(name, sizeof name, "m%zu", i);
        snprintf(zone, sizeof zone, "z%u", (unsigned)rd_rand_below(rng, (uint32_t)nz));
        group_add(g, name, zoneless && i % zoneless == 0 ? NULL : zone);
        g->m[i].weight = 500 + rd_rand_below(rng, 1501);
    }
}

static struct rd_ring *ring_of(const struct group *g, uint32_t vnodes)
{
    struct rd_ring *r = NULL;
    assert_int_equal(rd_ring_new(g->m, g->n, vnodes, &r), 0);
    return r;
}

/* Members met clockwise from pos, each once, in walk order; returns how many (all). */
static size_t ref_walk(const struct rd_ring *r, uint64_t pos, uint32_t *order)
{
    const uint64_t *h;
    const uint32_t *o;
    rd_ring_points(r, &h, &o);
    size_t np = rd_ring_point_count(r), start = 0, got = 0;
    while (start < np && h[start] < pos)
        start++;
    for (size_t step = 0; step < np; step++) {
        uint32_t m = o[(start + step) % np];
        size_t j = 0;
        while (j < got && order[j] != m)
            j++;
        if (j == got) order[got++] = m;
    }
    return got;
}

static bool same_zone(const struct rd_ring *r, uint32_t a, uint32_t b)
{
    const char *za = rd_ring_member_zone(r, a), *zb = rd_ring_member_zone(r, b);
    return a == b || (za[0] != '\0' && strcmp(za, zb) == 0);
}

/* The rule of PROTOCOL.md, literally: ranks over the whole walk, then (rank, walk order). */
static size_t ref_owners_at(const struct rd_ring *r, uint64_t pos, size_t n, uint32_t *out)
{
    uint32_t order[MAXM];
    size_t rank[MAXM];
    size_t met = ref_walk(r, pos, order), got = 0;
    for (size_t i = 0; i < met; i++) {
        rank[i] = 0;
        for (size_t j = 0; j < i; j++)
            rank[i] += same_zone(r, order[i], order[j]);
    }
    for (size_t level = 0; got < n && level < met; level++)
        for (size_t i = 0; i < met && got < n; i++)
            if (rank[i] == level) out[got++] = order[i];
    return got;
}

/* Distinct zones among out[0..n), a member without a zone counting as its own. */
static size_t zones_in(const struct rd_ring *r, const uint32_t *out, size_t n)
{
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < i && !same_zone(r, out[i], out[j]))
            j++;
        distinct += j == i;
    }
    return distinct;
}

static size_t zones_of_ring(const struct rd_ring *r)
{
    uint32_t all[MAXM];
    size_t n = rd_ring_member_count(r);
    for (size_t i = 0; i < n; i++)
        all[i] = (uint32_t)i;
    return zones_in(r, all, n);
}

/* ---- the rule ----------------------------------------------------------------------------- */

static void test_zones_owners_agree_with_the_rule_on_random_rings(void **state)
{
    (void)state;
    uint64_t seed = 0x20e5e001;
    struct rd_rand rng;
    rd_rand_seed(&rng, seed);
    size_t lookups = 0;
    for (int round = 0; round < 60; round++) {
        struct group g;
        size_t n = 1 + rd_rand_below(&rng, MAXM);
        size_t nz = 1 + rd_rand_below(&rng, 8);
        group_random(&g, &rng, n, nz, round % 3 == 0 ? 1 + rd_rand_below(&rng, 4) : 0);
        struct rd_ring *r = ring_of(&g, 1 + rd_rand_below(&rng, 40));
        for (int k = 0; k < 40; k++, lookups++) {
            uint64_t pos = k == 0 ? 0 : k == 1 ? UINT64_MAX : rd_rand_next(&rng);
            size_t want = rd_rand_below(&rng, (uint32_t)n + 3);
            uint32_t out[MAXM + 3], ref[MAXM + 3];
            size_t got = rd_ring_owners_at(r, pos, want, out);
            assert_int_equal(got, want < n ? want : n);
            assert_int_equal(ref_owners_at(r, pos, want, ref), got);
            assert_memory_equal(out, ref, got * sizeof *out);
            if (got > 0) assert_int_equal(out[0], rd_ring_owner_at(r, pos));
        }
        rd_ring_delete(r);
    }
    printf("seed %#llx: %zu zone-aware lookups on 60 random rings follow the rule\n",
           (unsigned long long)seed, lookups);
}

static void test_zones_every_zone_answers_once_before_any_repeats(void **state)
{
    (void)state;
    uint64_t seed = 0x20e5e002;
    struct rd_rand rng;
    rd_rand_seed(&rng, seed);
    for (int round = 0; round < 40; round++) {
        struct group g;
        group_random(&g, &rng, 8 + rd_rand_below(&rng, 40), 2 + rd_rand_below(&rng, 5),
                     round % 2 ? 7 : 0);
        struct rd_ring *r = ring_of(&g, 64);
        size_t nzones = zones_of_ring(r), n = g.n;
        for (int k = 0; k < 50; k++) {
            uint64_t pos = rd_rand_next(&rng);
            uint32_t out[MAXM];
            size_t got = rd_ring_owners_at(r, pos, n, out);
            assert_int_equal(got, n);
            /* the first `nzones` answers are all the zones; every prefix is as spread as it
             * can be: min(i, zones) distinct zones among the first i */
            for (size_t i = 1; i <= got; i++)
                assert_int_equal(zones_in(r, out, i), i < nzones ? i : nzones);
            /* each member once */
            for (size_t i = 0; i < got; i++)
                for (size_t j = i + 1; j < got; j++)
                    assert_int_not_equal(out[i], out[j]);
        }
        rd_ring_delete(r);
    }
    printf("seed %#llx: the first k replicas span min(k, zones) zones on 40 rings\n",
           (unsigned long long)seed);
}

static void test_zones_answers_do_not_depend_on_the_member_list_order(void **state)
{
    (void)state;
    uint64_t seed = 0x20e5e003;
    struct rd_rand rng;
    rd_rand_seed(&rng, seed);
    for (int round = 0; round < 20; round++) {
        struct group g, shuffled;
        group_random(&g, &rng, 30, 4, round % 2 ? 5 : 0);
        shuffled = g;
        for (size_t i = g.n - 1; i > 0; i--) { /* Fisher-Yates over the member records */
            size_t j = rd_rand_below(&rng, (uint32_t)i + 1);
            struct rd_ring_member t = shuffled.m[i];
            shuffled.m[i] = shuffled.m[j];
            shuffled.m[j] = t;
        }
        /* shuffled.m points into g's strings, which stay put */
        struct rd_ring *a = ring_of(&g, 32), *b = ring_of(&shuffled, 32);
        assert_int_equal(rd_ring_checksum(a), rd_ring_checksum(b));
        for (int k = 0; k < 200; k++) {
            char key[32];
            snprintf(key, sizeof key, "key:%d", k);
            uint32_t oa[30], ob[30];
            size_t na = rd_ring_owners(a, key, strlen(key), 30, oa);
            assert_int_equal(rd_ring_owners(b, key, strlen(key), 30, ob), na);
            for (size_t i = 0; i < na; i++) /* indexes are name order in both */
                assert_string_equal(rd_ring_member_name(a, oa[i]), rd_ring_member_name(b, ob[i]));
        }
        rd_ring_delete(a);
        rd_ring_delete(b);
    }
    printf("seed %#llx: 20 rings built from shuffled lists answer alike\n",
           (unsigned long long)seed);
}

static void test_zones_without_zones_owners_are_the_plain_clockwise_walk(void **state)
{
    (void)state;
    uint64_t seed = 0x20e5e004;
    struct rd_rand rng;
    rd_rand_seed(&rng, seed);
    for (int round = 0; round < 20; round++) {
        struct group g;
        group_random(&g, &rng, 2 + rd_rand_below(&rng, MAXM - 1), 3, 1); /* every one zoneless */
        struct rd_ring *r = ring_of(&g, 16);
        /* the same members, each in a zone of its own: also the plain walk */
        struct group own = g;
        for (size_t i = 0; i < own.n; i++) {
            snprintf(own.zones[i], sizeof own.zones[i], "own-%u", (unsigned)i);
            own.m[i].name = own.names[i];
            own.m[i].zone = own.zones[i];
        }
        struct rd_ring *z = ring_of(&own, 16);
        for (int k = 0; k < 50; k++) {
            uint64_t pos = rd_rand_next(&rng);
            uint32_t out[MAXM], walk[MAXM], oz[MAXM];
            size_t got = rd_ring_owners_at(r, pos, g.n, out);
            assert_int_equal(ref_walk(r, pos, walk), got);
            assert_memory_equal(out, walk, got * sizeof *out);
            assert_int_equal(rd_ring_owners_at(z, pos, g.n, oz), got);
            assert_memory_equal(oz, walk, got * sizeof *out);
        }
        rd_ring_delete(r);
        rd_ring_delete(z);
    }
}

static void test_zones_one_zone_for_all_is_the_plain_walk(void **state)
{
    (void)state;
    struct group g = {0}, plain = {0};
    for (int i = 0; i < 12; i++) {
        char name[16];
        snprintf(name, sizeof name, "node-%d", i);
        group_add(&g, name, "eu-1");
        group_add(&plain, name, NULL);
    }
    struct rd_ring *r = ring_of(&g, 64), *p = ring_of(&plain, 64);
    for (int k = 0; k < 500; k++) {
        char key[32];
        snprintf(key, sizeof key, "user:%d", k);
        uint32_t a[12], b[12];
        size_t n = 1 + (size_t)k % 12;
        assert_int_equal(rd_ring_owners(r, key, strlen(key), n, a), n);
        assert_int_equal(rd_ring_owners(p, key, strlen(key), n, b), n);
        assert_memory_equal(a, b, n * sizeof *a);
    }
    rd_ring_delete(r);
    rd_ring_delete(p);
}

static bool in_names(const struct rd_ring *r, const uint32_t *set, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(rd_ring_member_name(r, set[i]), name) == 0) return true;
    return false;
}

static void test_zones_a_join_moves_no_replica_between_members_that_stay(void **state)
{
    (void)state;
    /* PROTOCOL.md, "What moves": after a join, every key's replicas are its old replicas and
     * perhaps the joiner; read backwards, a leave only refills the leaver's place. */
    uint64_t seed = 0x20e5e005;
    struct rd_rand rng;
    rd_rand_seed(&rng, seed);
    size_t changed = 0, lookups = 0;
    for (int round = 0; round < 40; round++) {
        struct group before;
        size_t n = 2 + rd_rand_below(&rng, MAXM - 2);
        group_random(&before, &rng, n, 1 + rd_rand_below(&rng, 6), round % 4 == 0 ? 3 : 0);
        struct group after = before;
        for (size_t i = 0; i < after.n; i++) {
            after.m[i].name = after.names[i];
            after.m[i].zone = before.m[i].zone ? after.zones[i] : NULL;
        }
        /* the joiner: into an existing zone, a new zone, or none */
        const char *zones[] = {after.zones[0], "fresh", NULL};
        group_add(&after, "joiner", zones[rd_rand_below(&rng, 3)]);
        struct rd_ring *a = ring_of(&before, 32), *b = ring_of(&after, 32);
        for (int k = 0; k < 200; k++, lookups++) {
            uint64_t pos = rd_rand_next(&rng);
            size_t want = 1 + rd_rand_below(&rng, (uint32_t)n);
            uint32_t oa[MAXM], ob[MAXM];
            assert_int_equal(rd_ring_owners_at(a, pos, want, oa), want);
            assert_int_equal(rd_ring_owners_at(b, pos, want, ob), want);
            size_t fresh = 0;
            for (size_t i = 0; i < want; i++) {
                const char *name = rd_ring_member_name(b, ob[i]);
                if (strcmp(name, "joiner") == 0) {
                    fresh++;
                    continue;
                }
                assert_true(in_names(a, oa, want, name));
            }
            changed += fresh;
        }
        rd_ring_delete(a);
        rd_ring_delete(b);
    }
    assert_true(changed > 0); /* the joiner did take replicas */
    printf("seed %#llx: %zu lookups after a join, the joiner entered %zu sets, nothing else "
           "moved\n",
           (unsigned long long)seed, lookups, changed);
}

/* ---- edges -------------------------------------------------------------------------------- */

static void test_zones_n_above_the_member_count_gives_every_member_once(void **state)
{
    (void)state;
    struct group g = {0};
    group_add(&g, "a1", "a");
    group_add(&g, "a2", "a");
    group_add(&g, "a3", "a");
    group_add(&g, "b1", "b");
    group_add(&g, "loner", NULL);
    struct rd_ring *r = ring_of(&g, 32);
    for (int k = 0; k < 100; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        uint32_t out[5];
        assert_int_equal(rd_ring_owners(r, key, strlen(key), 1000000, out), 5);
        uint32_t seen = 0;
        for (size_t i = 0; i < 5; i++)
            seen |= 1u << out[i];
        assert_int_equal(seen, 0x1f);
        /* zones a, b and the loner first; the a's that remain after */
        assert_int_equal(zones_in(r, out, 3), 3);
        assert_string_equal(rd_ring_member_zone(r, out[3]), "a");
        assert_string_equal(rd_ring_member_zone(r, out[4]), "a");
    }
    rd_ring_delete(r);
}

static void test_zones_n_zero_and_an_empty_ring_answer_nothing(void **state)
{
    (void)state;
    struct group g = {0};
    group_add(&g, "a1", "a");
    group_add(&g, "b1", "b");
    struct rd_ring *r = ring_of(&g, 8), *empty = NULL;
    uint32_t out[2] = {7, 7};
    assert_int_equal(rd_ring_owners(r, "x", 1, 0, out), 0);
    assert_int_equal(out[0], 7); /* nothing written */
    assert_int_equal(rd_ring_new(NULL, 0, 8, &empty), 0);
    assert_int_equal(rd_ring_owners(empty, "x", 1, 2, out), 0);
    assert_int_equal(rd_ring_owners(NULL, "x", 1, 2, out), 0);
    rd_ring_delete(r);
    rd_ring_delete(empty);
}

static void test_zones_zone_names_compare_as_whole_strings(void **state)
{
    (void)state;
    /* "z" and "z1" are two zones (a prefix is not the same zone); so are "Z" and "z" */
    struct group g = {0};
    group_add(&g, "a", "z");
    group_add(&g, "b", "z1");
    group_add(&g, "c", "Z");
    struct rd_ring *r = ring_of(&g, 16);
    assert_int_equal(zones_of_ring(r), 3);
    for (int k = 0; k < 100; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        uint32_t out[3], walk[3];
        size_t got = rd_ring_owners(r, key, strlen(key), 3, out);
        assert_int_equal(got, 3);
        /* three zones of one member: exactly the plain walk */
        assert_int_equal(ref_walk(r, rd_ring_key_hash(key, strlen(key)), walk), 3);
        assert_memory_equal(out, walk, sizeof out);
    }
    rd_ring_delete(r);
}

static void test_zones_an_empty_zone_string_is_no_zone(void **state)
{
    (void)state;
    /* zone "" (what the agent passes for a member without --zone) and NULL are the same */
    struct group a = {0}, b = {0};
    const char *names[] = {"n1", "n2", "n3", "n4"};
    for (int i = 0; i < 4; i++) {
        group_add(&a, names[i], i < 2 ? "x" : NULL);
        group_add(&b, names[i], i < 2 ? "x" : "");
    }
    struct rd_ring *ra = ring_of(&a, 16), *rb = ring_of(&b, 16);
    assert_int_equal(rd_ring_checksum(ra), rd_ring_checksum(rb));
    for (int k = 0; k < 100; k++) {
        char key[16];
        snprintf(key, sizeof key, "k%d", k);
        uint32_t oa[4], ob[4];
        assert_int_equal(rd_ring_owners(ra, key, strlen(key), 4, oa), 4);
        assert_int_equal(rd_ring_owners(rb, key, strlen(key), 4, ob), 4);
        assert_memory_equal(oa, ob, sizeof oa);
        assert_int_equal(zones_in(ra, oa, 3), 3); /* x, n3, n4 */
    }
    rd_ring_delete(ra);
    rd_ring_delete(rb);
}

static void test_zones_many_zones_and_many_members_take_the_heap_path_alike(void **state)
{
    (void)state;
    /* 20,000 members (past the stack bitmap) in 1,500 zones (past the stack counters) plus
     * some without a zone: the answer still spans min(n, zones) zones and starts with the
     * owner, and its first member of each rank follows the rule on a small check. */
    size_t n = 20000;
    struct rd_ring_member *m = calloc(n, sizeof *m);
    char(*names)[24] = calloc(n, sizeof *names);
    char(*zones)[24] = calloc(n, sizeof *zones);
    assert_non_null(m);
    assert_non_null(names);
    assert_non_null(zones);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "m%zu", i);
        snprintf(zones[i], sizeof zones[i], "z%zu", i % 1500);
        m[i] = (struct rd_ring_member){names[i], RD_WEIGHT_ONE, i % 97 ? zones[i] : NULL, NULL};
    }
    struct rd_ring *r = NULL;
    assert_int_equal(rd_ring_new(m, n, 1, &r), 0);
    size_t nzones = 1500 + (n + 96) / 97;
    uint32_t *out = calloc(n, sizeof *out);
    uint8_t *seen = calloc(n, 1);
    assert_non_null(out);
    assert_non_null(seen);
    for (int k = 0; k < 3; k++) {
        uint64_t pos = (uint64_t)k * 0x5555555555555555u;
        size_t want = k == 0 ? 3 : k == 1 ? 2000 : n;
        size_t got = rd_ring_owners_at(r, pos, want, out);
        assert_int_equal(got, want);
        assert_int_equal(out[0], rd_ring_owner_at(r, pos));
        memset(seen, 0, n);
        for (size_t i = 0; i < got; i++) {
            assert_int_equal(seen[out[i]], 0);
            seen[out[i]] = 1;
        }
        /* zones of the first min(got, nzones) answers are distinct: checked on names,
         * m<i> is in z<i % 1500> or, when i % 97 == 0, alone */
        size_t span = got < nzones ? got : nzones;
        uint8_t *zseen = calloc(1500, 1);
        assert_non_null(zseen);
        for (size_t i = 0; i < span; i++) {
            const char *z = rd_ring_member_zone(r, out[i]);
            if (z[0] == '\0') continue;
            size_t zi = (size_t)strtoul(z + 1, NULL, 10);
            assert_int_equal(zseen[zi], 0);
            zseen[zi] = 1;
        }
        free(zseen);
    }
    printf("20000 members in %zu zones: distinct zones first, every member once\n", nzones);
    free(seen);
    free(out);
    free(zones);
    free(names);
    free(m);
    rd_ring_delete(r);
}

/* ---- the protocol's test vectors ---------------------------------------------------------- */

/* proto/PROTOCOL.md, "Owners (replicas)", test vectors: ring Z, vnodes 4, weight 1.0. */
static void test_zones_vectors_match_the_protocol_document(void **state)
{
    (void)state;
    struct group g = {0};
    group_add(&g, "node-1", "z1");
    group_add(&g, "node-2", "z1");
    group_add(&g, "node-3", "z2");
    group_add(&g, "node-4", "z2");
    group_add(&g, "node-5", "z3");
    group_add(&g, "node-6", NULL);
    struct rd_ring *r = ring_of(&g, 4);
    assert_int_equal(rd_ring_checksum(r), UINT64_C(0xff0cf0e633e75741));
    static const struct {
        const char *key;
        const char *walk[6];  /* the plain clockwise walk */
        const char *zoned[6]; /* OWNERS key 6 */
    } vec[] = {
        {"user:1",
         {"node-4", "node-2", "node-3", "node-6", "node-1", "node-5"},
         {"node-4", "node-2", "node-6", "node-5", "node-3", "node-1"}},
        {"user:2",
         {"node-2", "node-1", "node-3", "node-6", "node-4", "node-5"},
         {"node-2", "node-3", "node-6", "node-5", "node-1", "node-4"}},
        {"user:3",
         {"node-2", "node-4", "node-6", "node-1", "node-3", "node-5"},
         {"node-2", "node-4", "node-6", "node-5", "node-1", "node-3"}},
        {"user:4",
         {"node-3", "node-6", "node-1", "node-5", "node-4", "node-2"},
         {"node-3", "node-6", "node-1", "node-5", "node-4", "node-2"}},
        {"user:42",
         {"node-6", "node-1", "node-4", "node-5", "node-2", "node-3"},
         {"node-6", "node-1", "node-4", "node-5", "node-2", "node-3"}},
    };
    for (size_t v = 0; v < sizeof vec / sizeof vec[0]; v++) {
        const char *key = vec[v].key;
        uint32_t walk[6];
        assert_int_equal(ref_walk(r, rd_ring_key_hash(key, strlen(key)), walk), 6);
        for (size_t i = 0; i < 6; i++)
            assert_string_equal(rd_ring_member_name(r, walk[i]), vec[v].walk[i]);
        /* OWNERS key n is the first n of OWNERS key 6, for every n */
        for (size_t n = 0; n <= 7; n++) {
            uint32_t out[6];
            size_t got = rd_ring_owners(r, key, strlen(key), n, out);
            assert_int_equal(got, n < 6 ? n : 6);
            for (size_t i = 0; i < got; i++)
                assert_string_equal(rd_ring_member_name(r, out[i]), vec[v].zoned[i]);
        }
        printf("ring Z OWNERS %s 6: %s %s %s %s %s %s\n", key, vec[v].zoned[0], vec[v].zoned[1],
               vec[v].zoned[2], vec[v].zoned[3], vec[v].zoned[4], vec[v].zoned[5]);
    }
    rd_ring_delete(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_zones_owners_agree_with_the_rule_on_random_rings),
        cmocka_unit_test(test_zones_every_zone_answers_once_before_any_repeats),
        cmocka_unit_test(test_zones_answers_do_not_depend_on_the_member_list_order),
        cmocka_unit_test(test_zones_without_zones_owners_are_the_plain_clockwise_walk),
        cmocka_unit_test(test_zones_one_zone_for_all_is_the_plain_walk),
        cmocka_unit_test(test_zones_a_join_moves_no_replica_between_members_that_stay),
        cmocka_unit_test(test_zones_n_above_the_member_count_gives_every_member_once),
        cmocka_unit_test(test_zones_n_zero_and_an_empty_ring_answer_nothing),
        cmocka_unit_test(test_zones_zone_names_compare_as_whole_strings),
        cmocka_unit_test(test_zones_an_empty_zone_string_is_no_zone),
        cmocka_unit_test(test_zones_many_zones_and_many_members_take_the_heap_path_alike),
        cmocka_unit_test(test_zones_vectors_match_the_protocol_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
