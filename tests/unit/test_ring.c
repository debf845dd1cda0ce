/*
 * test_ring.c — the consistent-hash ring, as scenarios.
 *
 * The seed measurements of DESIGN.md §6 come first (mod-N moves ~80% of keys, the ring ~1/5
 * and only to the new member, vnodes flatten the load, a removed member's keys scatter),
 * then exactness against a brute-force reference built here from the specification alone
 * (points from rd_ring_point_hash, owner = first point >= position by (hash, name order),
 * found by a linear scan), then the edges: ties, bad input, empty rings, and the test vectors
 * that proto/PROTOCOL.md ("The ring") publishes.
 *
 * Measured numbers are printed so that `ctest -V` shows them. Random rings come from a fixed
 * seed, printed, so that a failure replays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "rd_err.h"
#include "ring.h"
#include "ring_internal.h"

#include "failing_alloc.h"

/* The ring checksum of PROTOCOL.md's scaled-ring test vector. */
#define RING_SCALED_VECTOR UINT64_C(0x6cdf8897a267061f)

#define NKEYS   100000
#define KEY_MAX 32

/* ---- helpers ------------------------------------------------------------------------------ */

/* A member list with its own name storage. */
struct group {
    size_t n;
    char names[64][RD_NAME_MAX + 1];
    struct rd_ring_member m[64];
};

/* Members named fmt % (base + i), i < n, weight 1.0. */
static void group_fmt(struct group *g, const char *fmt, size_t base, size_t n)
{
    assert_true(n <= 64);
    g->n = n;
    for (size_t i = 0; i < n; i++) {
        snprintf(g->names[i], sizeof g->names[i], fmt, (int)(base + i));
        g->m[i] = (struct rd_ring_member){g->names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
}

/* A copy whose members point at its own names. */
static void group_copy(struct group *dst, const struct group *src)
{
    *dst = *src;
    for (size_t i = 0; i < dst->n; i++)
        dst->m[i].name = dst->names[i];
}

/* Drops member `name` from g. */
static void group_remove(struct group *g, const char *name)
{
    for (size_t i = 0; i < g->n; i++) {
        if (strcmp(g->names[i], name) == 0) {
            for (size_t j = i + 1; j < g->n; j++) {
                memcpy(g->names[j - 1], g->names[j], sizeof g->names[j]);
                g->m[j - 1] = g->m[j];
                g->m[j - 1].name = g->names[j - 1];
            }
            g->n--;
            return;
        }
    }
    fail_msg("no member %s", name);
}

static struct rd_ring *ring_of(const struct group *g, uint32_t vnodes)
{
    struct rd_ring *r = NULL;
    assert_int_equal(rd_ring_new(g->m, g->n, vnodes, &r), 0);
    assert_non_null(r);
    return r;
}

static size_t key_of(size_t i, char buf[KEY_MAX])
{
    return (size_t)snprintf(buf, KEY_MAX, "key:%zu", i);
}

static const char *owner_name(const struct rd_ring *r, const char *key, size_t len)
{
    int idx = rd_ring_owner(r, key, len);
    assert_true(idx >= 0);
    return rd_ring_member_name(r, (size_t)idx);
}

static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* ---- the reference: the specification, without the prefix table or the bucket sort ------- */

struct ref {
    size_t nmembers;
    const char **names; /* name order */
    uint32_t *points;   /* per member */
    size_t npoints;
    uint64_t *h; /* sorted by (h, o) with qsort */
    uint32_t *o;
};

static int cmp_member_ptr(const void *a, const void *b)
{
    const struct rd_ring_member *x = *(const struct rd_ring_member *const *)a;
    const struct rd_ring_member *y = *(const struct rd_ring_member *const *)b;
    return strcmp(x->name, y->name);
}

struct ref_point {
    uint64_t h;
    uint32_t o;
};

static int cmp_ref_point(const void *a, const void *b)
{
    const struct ref_point *x = a, *y = b;
    if (x->h != y->h) return x->h < y->h ? -1 : 1;
    return (x->o > y->o) - (x->o < y->o);
}

static uint32_t spec_points(uint32_t vnodes, uint32_t weight)
{
    uint64_t p = ((uint64_t)vnodes * weight + 500) / 1000;
    return p ? (uint32_t)p : 1;
}

static void ref_build(struct ref *r, const struct rd_ring_member *m, size_t n, uint32_t vnodes)
{
    r->nmembers = n;
    r->names = calloc(n ? n : 1, sizeof *r->names);
    r->points = calloc(n ? n : 1, sizeof *r->points);
    assert_non_null(r->names);
    assert_non_null(r->points);
    const struct rd_ring_member **sorted = calloc(n ? n : 1, sizeof *sorted);
    assert_non_null(sorted);
    for (size_t i = 0; i < n; i++)
        sorted[i] = &m[i];
    qsort(sorted, n, sizeof *sorted, cmp_member_ptr);
    r->npoints = 0;
    for (size_t i = 0; i < n; i++) {
        r->names[i] = sorted[i]->name;
        r->points[i] = spec_points(vnodes, sorted[i]->weight);
        r->npoints += r->points[i];
    }
    free(sorted);
    struct ref_point *p = calloc(r->npoints ? r->npoints : 1, sizeof *p);
    assert_non_null(p);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < r->points[i]; j++)
            p[k++] = (struct ref_point){rd_ring_point_hash(r->names[i], strlen(r->names[i]), j),
                                        (uint32_t)i};
    qsort(p, r->npoints, sizeof *p, cmp_ref_point);
    r->h = calloc(r->npoints ? r->npoints : 1, sizeof *r->h);
    r->o = calloc(r->npoints ? r->npoints : 1, sizeof *r->o);
    assert_non_null(r->h);
    assert_non_null(r->o);
    for (k = 0; k < r->npoints; k++) {
        r->h[k] = p[k].h;
        r->o[k] = p[k].o;
    }
    free(p);
}

static void ref_free(struct ref *r)
{
    free(r->names);
    free(r->points);
    free(r->h);
    free(r->o);
}

static int ref_less(const struct ref *r, size_t a, size_t b)
{
    return r->h[a] < r->h[b] || (r->h[a] == r->h[b] && r->o[a] < r->o[b]);
}

/* Brute force, order-free: the smallest (hash, index) point >= pos, else the smallest. */
static uint32_t ref_owner_at(const struct ref *r, uint64_t pos)
{
    size_t best = SIZE_MAX, low = 0;
    for (size_t k = 0; k < r->npoints; k++) {
        if (r->h[k] >= pos && (best == SIZE_MAX || ref_less(r, k, best))) best = k;
        if (ref_less(r, k, low)) low = k;
    }
    return r->o[best == SIZE_MAX ? low : best];
}

/* Clockwise distinct members from pos, walking the reference's sorted points. */
static size_t ref_owners_at(const struct ref *r, uint64_t pos, size_t n, uint32_t *out)
{
    size_t start = 0;
    while (start < r->npoints && r->h[start] < pos)
        start++;
    size_t got = 0;
    for (size_t step = 0; step < r->npoints && got < n; step++) {
        uint32_t m = r->o[(start + step) % r->npoints];
        size_t j = 0;
        while (j < got && out[j] != m)
            j++;
        if (j == got) out[got++] = m;
    }
    return got;
}

/* Exact share of the key space per member, from arc lengths. */
static void ref_loads(const struct ref *r, double *load)
{
    for (size_t i = 0; i < r->nmembers; i++)
        load[i] = 0;
    for (size_t k = 0; k < r->npoints; k++) {
        double len;
        if (k > 0)
            len = (double)(r->h[k] - r->h[k - 1]);
        else if (r->h[0] == r->h[r->npoints - 1])
            len = 0x1p64; /* every point at one position: the whole ring */
        else
            len = (double)(r->h[0] - r->h[r->npoints - 1]); /* wraps mod 2^64 */
        load[r->o[k]] += len * 0x1p-64;
    }
}

/* ---- seed measurements ---------------------------------------------------------------- */

static void test_ring_one_point_per_node_join_moves_keys_only_to_new_node(void **state)
{
    (void)state;
    struct group g4, g5;
    group_fmt(&g4, "node-%d", 0, 4);
    group_fmt(&g5, "node-%d", 0, 5);
    struct rd_ring *a = ring_of(&g4, 1), *b = ring_of(&g5, 1);
    size_t moved = 0;
    char key[KEY_MAX];
    for (size_t i = 0; i < NKEYS; i++) {
        size_t len = key_of(i, key);
        const char *from = owner_name(a, key, len), *to = owner_name(b, key, len);
        if (strcmp(from, to) != 0) {
            assert_string_equal(to, "node-4");
            moved++;
        }
    }
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(a, b, &d), 0);
    printf("vnodes=1, 4 -> 5 nodes: %.2f%% of keys moved (exact %.2f%%), all to node-4\n",
           100.0 * (double)moved / NKEYS, 100 * d.moved);
    assert_true(d.moved > 0);
    for (size_t i = 0; i < d.nmoves; i++)
        assert_string_equal(d.moves[i].to, "node-4");
    rd_ring_diff_destroy(&d);
    rd_ring_delete(a);
    rd_ring_delete(b);
}

static void test_ring_one_point_per_node_leave_moves_only_its_keys_to_its_successor(void **state)
{
    (void)state;
    struct group g5, g4;
    group_fmt(&g5, "node-%d", 0, 5);
    group_copy(&g4, &g5);
    group_remove(&g4, "node-2");
    struct rd_ring *a = ring_of(&g5, 1), *b = ring_of(&g4, 1);
    /* node-2's only point now falls to whoever owns that position without it */
    uint64_t p = rd_ring_point_hash("node-2", 6, 0);
    const char *successor = rd_ring_member_name(b, (size_t)rd_ring_owner_at(b, p));
    size_t moved = 0;
    char key[KEY_MAX];
    for (size_t i = 0; i < NKEYS; i++) {
        size_t len = key_of(i, key);
        const char *from = owner_name(a, key, len), *to = owner_name(b, key, len);
        if (strcmp(from, "node-2") == 0) {
            assert_string_equal(to, successor);
            moved++;
        } else {
            assert_string_equal(to, from);
        }
    }
    printf("vnodes=1, node-2 leaves: %.2f%% of keys moved, all to its successor %s\n",
           100.0 * (double)moved / NKEYS, successor);
    rd_ring_delete(a);
    rd_ring_delete(b);
}

/*
 * The ring's fraction of keys moved from 4 to 5 members, next to what placing by
 * hash mod N would move on the same keys (the baseline consistent hashing exists to beat:
 * ~80%, every key whose h % 4 != h % 5).
 */
static void test_ring_vnodes_join_moves_about_a_fifth_only_to_new_node(void **state)
{
    (void)state;
    struct group g4, g5;
    group_fmt(&g4, "node-%d", 0, 4);
    group_fmt(&g5, "node-%d", 0, 5);
    struct rd_ring *a = ring_of(&g4, RD_RING_VNODES_DEFAULT);
    struct rd_ring *b = ring_of(&g5, RD_RING_VNODES_DEFAULT);
    size_t moved = 0, moved_mod_n = 0;
    char key[KEY_MAX];
    for (size_t i = 0; i < NKEYS; i++) {
        size_t len = key_of(i, key);
        const char *from = owner_name(a, key, len), *to = owner_name(b, key, len);
        if (strcmp(from, to) != 0) {
            assert_string_equal(to, "node-4");
            moved++;
        }
        uint64_t h = rd_ring_key_hash(key, len);
        moved_mod_n += h % 4 != h % 5;
    }
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(a, b, &d), 0);
    double counted = (double)moved / NKEYS, mod_n = (double)moved_mod_n / NKEYS;
    printf("vnodes=%u, 4 -> 5 nodes: %.2f%% of %d keys moved, exact %.2f%% (ideal 20%%), "
           "all to node-4; mod-N would move %.2f%%\n",
           RD_RING_VNODES_DEFAULT, 100 * counted, NKEYS, 100 * d.moved, 100 * mod_n);
    assert_true(counted >= 0.15 && counted <= 0.25);
    assert_true(counted < mod_n / 3); /* at most a third of the baseline's movement */
    assert_true(d.moved >= 0.15 && d.moved <= 0.25);
    assert_int_equal(d.nmoves, 4); /* from each of the four, to node-4 */
    for (size_t i = 0; i < d.nmoves; i++)
        assert_string_equal(d.moves[i].to, "node-4");
    rd_ring_diff_destroy(&d);
    rd_ring_delete(a);
    rd_ring_delete(b);
}

static void test_ring_vnodes_leave_scatters_keys_over_all_survivors(void **state)
{
    (void)state;
    struct group g5, g4;
    group_fmt(&g5, "node-%d", 0, 5);
    group_copy(&g4, &g5);
    group_remove(&g4, "node-2");
    struct rd_ring *a = ring_of(&g5, RD_RING_VNODES_DEFAULT);
    struct rd_ring *b = ring_of(&g4, RD_RING_VNODES_DEFAULT);
    size_t got[4] = {0}, moved = 0;
    char key[KEY_MAX];
    for (size_t i = 0; i < NKEYS; i++) {
        size_t len = key_of(i, key);
        int from = rd_ring_owner(a, key, len), to = rd_ring_owner(b, key, len);
        const char *fname = rd_ring_member_name(a, (size_t)from);
        if (strcmp(fname, "node-2") == 0) {
            got[to]++;
            moved++;
        } else {
            assert_string_equal(rd_ring_member_name(b, (size_t)to), fname);
        }
    }
    printf("vnodes=%u, node-2 leaves: %.2f%% of keys moved:", RD_RING_VNODES_DEFAULT,
           100.0 * (double)moved / NKEYS);
    for (size_t i = 0; i < 4; i++) {
        printf(" %s %.2f%%", rd_ring_member_name(b, i), 100.0 * (double)got[i] / NKEYS);
        assert_true(got[i] > 0);
    }
    printf("\n");
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(a, b, &d), 0);
    assert_int_equal(d.nmoves, 4);
    for (size_t i = 0; i < d.nmoves; i++)
        assert_string_equal(d.moves[i].from, "node-2");
    rd_ring_diff_destroy(&d);
    rd_ring_delete(a);
    rd_ring_delete(b);
}

/* max/mean and min/mean of the exact loads of `r`; cross-checked against the reference. */
static void ring_balance(const struct group *g, uint32_t vnodes, double *max_mean, double *min_mean)
{
    struct rd_ring *r = ring_of(g, vnodes);
    struct ref ref;
    ref_build(&ref, g->m, g->n, vnodes);
    double load[64];
    ref_loads(&ref, load);
    /* the ring's own arcs: diff from the empty ring hands every arc to its owner */
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(NULL, r, &d), 0);
    assert_true(fabs(d.moved - 1.0) < 1e-12);
    *max_mean = 0;
    *min_mean = INFINITY;
    for (size_t i = 0; i < g->n; i++) {
        double share = 0;
        for (size_t k = 0; k < d.nmoves; k++)
            if (strcmp(d.moves[k].to, ref.names[i]) == 0) share = d.moves[k].fraction;
        assert_true(fabs(share - load[i]) < 1e-12);
        double rel = share * (double)g->n;
        *max_mean = rel > *max_mean ? rel : *max_mean;
        *min_mean = rel < *min_mean ? rel : *min_mean;
    }
    rd_ring_diff_destroy(&d);
    ref_free(&ref);
    rd_ring_delete(r);
}

static void
test_ring_vnodes_flatten_the_load_and_the_default_keeps_max_within_10_percent(void **state)
{
    (void)state;
    static const uint32_t vs[] = {1, 10, 40, 100, 160, 256, 500, 512, 1000};
    static const struct {
        const char *fmt;
        size_t base;
    } sets[] = {
        {"node-%d", 0}, {"web-%d", 1}, {"10.0.0.%d:7946", 1}, {"cache-%02d", 0}, {"db-%d", 100},
    };
    size_t nv = sizeof vs / sizeof *vs;
    printf("10 members, exact load from arc lengths (max/mean, min/mean):\n");
    printf("%7s %9s", "vnodes", "1/sqrt(v)");
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        char label[32];
        snprintf(label, sizeof label, sets[s].fmt, (int)sets[s].base);
        printf(" | %-17s", label);
    }
    printf("\n");
    double mm[sizeof sets / sizeof *sets][sizeof vs / sizeof *vs];
    for (size_t v = 0; v < nv; v++) {
        printf("%7u %9.3f", vs[v], 1 / sqrt(vs[v]));
        for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
            struct group g;
            group_fmt(&g, sets[s].fmt, sets[s].base, 10);
            double mx, mn;
            ring_balance(&g, vs[v], &mx, &mn);
            mm[s][v] = mx;
            printf(" | %7.3f / %7.3f", mx, mn);
        }
        printf("\n");
    }
    for (size_t s = 0; s < sizeof sets / sizeof *sets; s++) {
        /* falls with v (not monotonically: it is a random variable), as ~1/sqrt(v) */
        assert_true(mm[s][8] < mm[s][3] && mm[s][3] < mm[s][1] && mm[s][1] < mm[s][0]);
        for (size_t v = 1; v < nv; v++)
            assert_true(mm[s][v] - 1 <= 4 / sqrt(vs[v]));
        struct group g;
        group_fmt(&g, sets[s].fmt, sets[s].base, 10);
        double mx, mn;
        ring_balance(&g, RD_RING_VNODES_DEFAULT, &mx, &mn);
        assert_true(mx <= 1.10);
    }
}

/* ---- exactness against the reference -------------------------------------------------- */

/* A random valid name, unique by its suffix. */
static void random_name(uint64_t *seed, size_t idx, char out[RD_NAME_MAX + 1])
{
    static const char alphabet[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@-";
    char suffix[16];
    int sl = snprintf(suffix, sizeof suffix, "#%zu", idx);
    size_t len = 1 + splitmix64(seed) % (RD_NAME_MAX - (size_t)sl);
    for (size_t i = 0; i < len; i++)
        out[i] = alphabet[splitmix64(seed) % (sizeof alphabet - 1)];
    /* '#' is not in the alphabet: use '@' as the separator */
    suffix[0] = '@';
    memcpy(out + len, suffix, (size_t)sl + 1);
}

struct random_ring {
    struct group g;
    uint32_t vnodes;
    struct rd_ring *r;
    struct ref ref;
};

static void random_ring(uint64_t *seed, struct random_ring *rr, size_t max_members)
{
    rr->g.n = 1 + splitmix64(seed) % max_members;
    for (size_t i = 0; i < rr->g.n; i++) {
        random_name(seed, i, rr->g.names[i]);
        uint32_t w = 1 + (uint32_t)(splitmix64(seed) % 3000);
        rr->g.m[i] = (struct rd_ring_member){rr->g.names[i], w, NULL, NULL};
    }
    rr->vnodes = 1 + (uint32_t)(splitmix64(seed) % 64);
    rr->r = ring_of(&rr->g, rr->vnodes);
    ref_build(&rr->ref, rr->g.m, rr->g.n, rr->vnodes);
}

static void random_ring_free(struct random_ring *rr)
{
    rd_ring_delete(rr->r);
    ref_free(&rr->ref);
}

static void test_ring_lookups_match_brute_force_on_random_rings(void **state)
{
    (void)state;
    uint64_t seed0 = 0x5eed0001, seed = seed0;
    size_t checked = 0;
    for (int round = 0; round < 40; round++) {
        struct random_ring rr;
        random_ring(&seed, &rr, 20);
        const struct ref *ref = &rr.ref;
        /* members, names and point counts as specified */
        assert_int_equal(rd_ring_member_count(rr.r), ref->nmembers);
        assert_int_equal(rd_ring_point_count(rr.r), ref->npoints);
        assert_int_equal(rd_ring_vnodes(rr.r), rr.vnodes);
        for (size_t i = 0; i < ref->nmembers; i++) {
            assert_string_equal(rd_ring_member_name(rr.r, i), ref->names[i]);
            assert_int_equal(rd_ring_member_points(rr.r, i), ref->points[i]);
        }
        /* positions: the edges, every point and its neighbours, random ones */
        uint64_t edges[] = {0,
                            1,
                            UINT64_MAX,
                            UINT64_MAX - 1,
                            ref->h[0],
                            ref->h[0] - 1,
                            ref->h[ref->npoints - 1],
                            ref->h[ref->npoints - 1] + 1};
        for (size_t k = 0; k < sizeof edges / sizeof *edges; k++, checked++)
            assert_int_equal(rd_ring_owner_at(rr.r, edges[k]), ref_owner_at(ref, edges[k]));
        for (size_t k = 0; k < ref->npoints && k < 300; k++) {
            uint64_t h = ref->h[splitmix64(&seed) % ref->npoints];
            for (int d = -1; d <= 1; d++, checked++)
                assert_int_equal(rd_ring_owner_at(rr.r, h + (uint64_t)(int64_t)d),
                                 ref_owner_at(ref, h + (uint64_t)(int64_t)d));
        }
        for (int k = 0; k < 300; k++, checked++) {
            uint64_t pos = splitmix64(&seed);
            assert_int_equal(rd_ring_owner_at(rr.r, pos), ref_owner_at(ref, pos));
        }
        for (int k = 0; k < 200; k++, checked++) {
            char key[KEY_MAX];
            size_t len =
                (size_t)snprintf(key, sizeof key, "k%llx", (unsigned long long)splitmix64(&seed));
            assert_int_equal(rd_ring_owner(rr.r, key, len),
                             ref_owner_at(ref, XXH3_64bits(key, len)));
        }
        random_ring_free(&rr);
    }
    printf("seed %#llx: %zu lookups on 40 random rings agree with brute force\n",
           (unsigned long long)seed0, checked);
}

static void test_ring_owners_are_distinct_clockwise_and_start_with_the_owner(void **state)
{
    (void)state;
    uint64_t seed0 = 0x5eed0002, seed = seed0;
    for (int round = 0; round < 30; round++) {
        struct random_ring rr;
        random_ring(&seed, &rr, 40); /* > 16 members: exercises the bitmap path */
        size_t nm = rr.ref.nmembers;
        uint32_t out[64], want[64];
        for (int k = 0; k < 50; k++) {
            uint64_t pos = k == 0 ? 0 : k == 1 ? UINT64_MAX : splitmix64(&seed);
            size_t n = 1 + splitmix64(&seed) % (nm + 3);
            size_t got = rd_ring_owners_at(rr.r, pos, n, out);
            assert_int_equal(got, n < nm ? n : nm);
            assert_int_equal(out[0], rd_ring_owner_at(rr.r, pos));
            for (size_t i = 0; i < got; i++)
                for (size_t j = i + 1; j < got; j++)
                    assert_int_not_equal(out[i], out[j]);
            assert_int_equal(ref_owners_at(&rr.ref, pos, n, want), got);
            assert_memory_equal(out, want, got * sizeof *out);
        }
        random_ring_free(&rr);
    }
    printf("seed %#llx: owners() agrees with a reference walk on 30 random rings\n",
           (unsigned long long)seed0);
}

static void test_ring_owners_with_n_above_member_count_returns_every_member(void **state)
{
    (void)state;
    struct group g;
    group_fmt(&g, "node-%d", 0, 5);
    struct rd_ring *r = ring_of(&g, 16);
    uint32_t out[10];
    size_t got = rd_ring_owners(r, "user:42", 7, 10, out);
    assert_int_equal(got, 5);
    uint32_t seen = 0;
    for (size_t i = 0; i < got; i++)
        seen |= 1u << out[i];
    assert_int_equal(seen, 0x1f);
    assert_int_equal(rd_ring_owners(r, "user:42", 7, 0, out), 0);
    rd_ring_delete(r);
}

static void
test_ring_owners_on_a_ring_of_more_than_16384_members_are_distinct_and_clockwise(void **state)
{
    (void)state;
    /* beyond the stack bitmap: the heap bitmap (or the linear fallback) must agree */
    size_t n = 16500;
    struct rd_ring_member *m = calloc(n, sizeof *m);
    char(*names)[16] = calloc(n, sizeof *names);
    assert_non_null(m);
    assert_non_null(names);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "m%zu", i);
        m[i] = (struct rd_ring_member){names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    struct rd_ring *r = NULL;
    assert_int_equal(rd_ring_new(m, n, 1, &r), 0);
    struct ref ref;
    ref_build(&ref, m, n, 1);
    uint32_t *out = calloc(n, sizeof *out), *want = calloc(n, sizeof *want);
    assert_non_null(out);
    assert_non_null(want);
    uint64_t seed = 0x5eed0003;
    for (int k = 0; k < 3; k++) {
        uint64_t pos = splitmix64(&seed);
        size_t want_n = k == 0 ? 17 : k == 1 ? 100 : n + 1;
        size_t got = rd_ring_owners_at(r, pos, want_n, out);
        assert_int_equal(got, want_n < n ? want_n : n);
        /* the reference walk is quadratic: compare the first 100 and distinctness */
        size_t cmp = got < 100 ? got : 100;
        assert_int_equal(ref_owners_at(&ref, pos, cmp, want), cmp);
        assert_memory_equal(out, want, cmp * sizeof *out);
        uint8_t *seen = calloc(n, 1);
        assert_non_null(seen);
        for (size_t i = 0; i < got; i++) {
            assert_int_equal(seen[out[i]], 0);
            seen[out[i]] = 1;
        }
        free(seen);
    }
    free(out);
    free(want);
    ref_free(&ref);
    rd_ring_delete(r);
    free(m);
    free(names);
}

/* ---- diff ------------------------------------------------------------------------------ */

static void test_ring_diff_matches_counted_moves_per_pair(void **state)
{
    (void)state;
    /* a busy change: node-3 leaves, node-10 and node-11 join, node-5 doubles its weight */
    struct group a, b;
    group_fmt(&a, "node-%d", 0, 10);
    group_fmt(&b, "node-%d", 0, 12);
    group_remove(&b, "node-3");
    for (size_t i = 0; i < b.n; i++) {
        if (strcmp(b.names[i], "node-5") == 0) b.m[i].weight = 2 * RD_WEIGHT_ONE;
    }
    struct rd_ring *ra = ring_of(&a, 64), *rb = ring_of(&b, 64);
    enum { N = 200000 };
    static size_t pair[16][16];
    memset(pair, 0, sizeof pair);
    size_t moved = 0;
    char key[KEY_MAX];
    for (size_t i = 0; i < N; i++) {
        size_t len = key_of(i, key);
        int from = rd_ring_owner(ra, key, len), to = rd_ring_owner(rb, key, len);
        if (strcmp(rd_ring_member_name(ra, (size_t)from), rd_ring_member_name(rb, (size_t)to))) {
            pair[from][to]++;
            moved++;
        }
    }
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(ra, rb, &d), 0);
    double counted = (double)moved / N;
    printf("diff: exact %.4f, counted over %d keys %.4f; %zu pairs\n", d.moved, N, counted,
           d.nmoves);
    /* binomial sampling error: within 5 standard deviations */
    assert_true(fabs(counted - d.moved) <= 5 * sqrt(d.moved * (1 - d.moved) / N));
    double sum = 0;
    size_t counted_in_pairs = 0;
    for (size_t k = 0; k < d.nmoves; k++) {
        const struct rd_ring_move *mv = &d.moves[k];
        int from = -1, to = -1;
        for (size_t i = 0; i < rd_ring_member_count(ra); i++)
            if (strcmp(rd_ring_member_name(ra, i), mv->from) == 0) from = (int)i;
        for (size_t i = 0; i < rd_ring_member_count(rb); i++)
            if (strcmp(rd_ring_member_name(rb, i), mv->to) == 0) to = (int)i;
        assert_true(from >= 0 && to >= 0);
        assert_string_not_equal(mv->from, mv->to);
        double c = (double)pair[from][to] / N, f = mv->fraction;
        printf("  %-8s -> %-8s exact %.4f counted %.4f\n", mv->from, mv->to, f, c);
        assert_true(fabs(c - f) <= 5 * sqrt(f * (1 - f) / N) + 1e-4);
        if (k > 0) assert_true(d.moves[k - 1].fraction >= f); /* largest first */
        sum += f;
        counted_in_pairs += pair[from][to];
    }
    assert_true(fabs(sum - d.moved) < 1e-12);
    assert_int_equal(counted_in_pairs, moved); /* no counted move outside the diff's pairs */
    rd_ring_diff_destroy(&d);
    rd_ring_delete(ra);
    rd_ring_delete(rb);
}

static void test_ring_diff_of_a_ring_with_itself_is_zero(void **state)
{
    (void)state;
    struct group g, p;
    group_fmt(&g, "node-%d", 0, 8);
    /* the same members in another order: a different snapshot, the same placement */
    p.n = g.n;
    for (size_t i = 0; i < g.n; i++) {
        memcpy(p.names[i], g.names[g.n - 1 - i], sizeof p.names[i]);
        p.m[i] = (struct rd_ring_member){p.names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    struct rd_ring *a = ring_of(&g, 100), *b = ring_of(&p, 100);
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(a, a, &d), 0);
    assert_true(d.moved == 0.0);
    assert_int_equal(d.nmoves, 0);
    assert_null(d.moves);
    rd_ring_diff_destroy(&d);
    assert_int_equal(rd_ring_diff(a, b, &d), 0);
    assert_true(d.moved == 0.0);
    assert_int_equal(d.nmoves, 0);
    rd_ring_diff_destroy(&d);
    rd_ring_delete(a);
    rd_ring_delete(b);
}

static void test_ring_diff_from_the_empty_ring_moves_everything_from_nobody(void **state)
{
    (void)state;
    struct group g;
    group_fmt(&g, "node-%d", 0, 3);
    struct rd_ring *r = ring_of(&g, 10), *empty = NULL;
    assert_int_equal(rd_ring_new(NULL, 0, 10, &empty), 0);
    struct ref ref;
    ref_build(&ref, g.m, g.n, 10);
    double load[3];
    ref_loads(&ref, load);
    const struct rd_ring *empties[] = {NULL, empty};
    for (size_t e = 0; e < 2; e++) {
        struct rd_ring_diff d;
        assert_int_equal(rd_ring_diff(empties[e], r, &d), 0);
        assert_true(d.moved == 1.0);
        assert_int_equal(d.nmoves, 3);
        for (size_t k = 0; k < d.nmoves; k++) {
            assert_string_equal(d.moves[k].from, "");
            for (size_t i = 0; i < 3; i++)
                if (strcmp(d.moves[k].to, ref.names[i]) == 0)
                    assert_true(fabs(d.moves[k].fraction - load[i]) < 1e-12);
        }
        rd_ring_diff_destroy(&d);
        /* and back: everything to nobody */
        assert_int_equal(rd_ring_diff(r, empties[e], &d), 0);
        assert_true(d.moved == 1.0);
        assert_int_equal(d.nmoves, 3);
        for (size_t k = 0; k < d.nmoves; k++)
            assert_string_equal(d.moves[k].to, "");
        rd_ring_diff_destroy(&d);
        /* empty to empty: nothing */
        assert_int_equal(rd_ring_diff(empties[e], empty, &d), 0);
        assert_true(d.moved == 0.0);
        assert_int_equal(d.nmoves, 0);
        rd_ring_diff_destroy(&d);
    }
    /* a single point owns the whole ring: 2^64, which must not overflow to 0 */
    struct group one;
    group_fmt(&one, "solo-%d", 0, 1);
    struct rd_ring *s = ring_of(&one, 1);
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(NULL, s, &d), 0);
    assert_true(d.moved == 1.0);
    assert_int_equal(d.nmoves, 1);
    assert_string_equal(d.moves[0].to, "solo-0");
    rd_ring_diff_destroy(&d);
    rd_ring_delete(s);
    ref_free(&ref);
    rd_ring_delete(r);
    rd_ring_delete(empty);
}

/* ---- checksum -------------------------------------------------------------------------- */

/* Byte-identical placement: same names, same sorted points and owners. */
static int same_placement(const struct rd_ring *a, const struct rd_ring *b)
{
    if (rd_ring_member_count(a) != rd_ring_member_count(b) ||
        rd_ring_point_count(a) != rd_ring_point_count(b))
        return 0;
    for (size_t i = 0; i < rd_ring_member_count(a); i++)
        if (strcmp(rd_ring_member_name(a, i), rd_ring_member_name(b, i)) != 0) return 0;
    const uint64_t *ha, *hb;
    const uint32_t *oa, *ob;
    rd_ring_points(a, &ha, &oa);
    rd_ring_points(b, &hb, &ob);
    size_t n = rd_ring_point_count(a);
    return n == 0 || (memcmp(ha, hb, n * sizeof *ha) == 0 && memcmp(oa, ob, n * sizeof *oa) == 0);
}

static void test_ring_checksum_covers_the_whole_definition(void **state)
{
    (void)state;
    struct group g, p;
    group_fmt(&g, "node-%d", 0, 6);
    p.n = g.n;
    /* reversed input order */
    for (size_t i = 0; i < g.n; i++) {
        memcpy(p.names[i], g.names[g.n - 1 - i], sizeof p.names[i]);
        p.m[i] = (struct rd_ring_member){p.names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    uint32_t v = 100;
    struct rd_ring *base = ring_of(&g, v), *perm = ring_of(&p, v);
    assert_true(rd_ring_checksum(base) != 0);
    assert_true(rd_ring_checksum(base) == rd_ring_checksum(perm));
    assert_true(same_placement(base, perm));

    /* a zone is kept and checksummed (zone-aware replicas depend on it), though it moves no
     * point */
    struct group z;
    group_copy(&z, &g);
    z.m[2].zone = "eu-west-1a";
    struct rd_ring *zr = ring_of(&z, v);
    assert_true(rd_ring_checksum(zr) != rd_ring_checksum(base));
    assert_true(same_placement(zr, base));
    assert_string_equal(rd_ring_member_zone(zr, 2), "eu-west-1a");
    assert_string_equal(rd_ring_member_zone(zr, 1), "");

    /* an identity likewise (ketama rings hash it); the name's own is the default */
    struct group id;
    group_copy(&id, &g);
    id.m[3].identity = "10.0.0.3:11211";
    struct rd_ring *ir = ring_of(&id, v);
    assert_true(rd_ring_checksum(ir) != rd_ring_checksum(base));
    assert_true(same_placement(ir, base));
    assert_string_equal(rd_ring_member_identity(ir, 3), "10.0.0.3:11211");
    assert_string_equal(rd_ring_member_identity(ir, 0), rd_ring_member_name(ir, 0));
    id.m[3].identity = g.names[3];
    struct rd_ring *ir_name = ring_of(&id, v);
    assert_true(rd_ring_checksum(ir_name) == rd_ring_checksum(base));

    /* a weight that rounds to the same points: (100 * 1004 + 500) / 1000 = 100; placement is
     * the same, but the weight is part of the definition (it sets a member's share) */
    struct group w;
    group_copy(&w, &g);
    w.m[2].weight = RD_WEIGHT_ONE + 4;
    struct rd_ring *same_pts = ring_of(&w, v);
    assert_int_equal(spec_points(v, RD_WEIGHT_ONE + 4), spec_points(v, RD_WEIGHT_ONE));
    assert_true(rd_ring_checksum(same_pts) != rd_ring_checksum(base));
    assert_true(same_placement(same_pts, base));
    assert_int_equal(rd_ring_member_weight(same_pts, 2), RD_WEIGHT_ONE + 4);
    assert_int_equal(rd_ring_mode(same_pts), RD_RING_MODE_RINGD);

    /* a weight that changes the count */
    w.m[2].weight = RD_WEIGHT_ONE + 5;
    assert_int_not_equal(spec_points(v, RD_WEIGHT_ONE + 5), spec_points(v, RD_WEIGHT_ONE));
    struct rd_ring *more = ring_of(&w, v);
    assert_true(rd_ring_checksum(more) != rd_ring_checksum(base));
    assert_false(same_placement(more, base));

    /* another vnodes setting changes every count */
    struct rd_ring *other_v = ring_of(&g, v / 2);
    assert_true(rd_ring_checksum(other_v) != rd_ring_checksum(base));

    /* a member more or less */
    struct group less;
    group_copy(&less, &g);
    group_remove(&less, "node-0");
    struct rd_ring *lr = ring_of(&less, v);
    assert_true(rd_ring_checksum(lr) != rd_ring_checksum(base));

    /* the empty ring's is 0 */
    struct rd_ring *empty = NULL;
    assert_int_equal(rd_ring_new(NULL, 0, v, &empty), 0);
    assert_true(rd_ring_checksum(empty) == 0);

    rd_ring_delete(base);
    rd_ring_delete(perm);
    rd_ring_delete(zr);
    rd_ring_delete(ir);
    rd_ring_delete(ir_name);
    rd_ring_delete(same_pts);
    rd_ring_delete(more);
    rd_ring_delete(other_v);
    rd_ring_delete(lr);
    rd_ring_delete(empty);
}

/* ---- ties and order --------------------------------------------------------------------- */

/* Every member's point i sits at i << 40: each position is contested by all members. */
static uint64_t colliding_hash(const char *name, size_t len, uint32_t i, void *ctx)
{
    (void)name;
    (void)len;
    (void)ctx;
    return (uint64_t)i << 40;
}

static void test_ring_equal_points_go_to_the_smallest_name_whatever_the_input_order(void **state)
{
    (void)state;
    static const char *orders[][4] = {
        {"b", "a", "ab", "c"}, {"c", "ab", "b", "a"}, {"a", "ab", "b", "c"}, {"ab", "c", "a", "b"}};
    const struct rd_ring_hooks collide = {colliding_hash, NULL, NULL, NULL};
    struct rd_ring *first = NULL;
    for (size_t o = 0; o < 4; o++) {
        struct rd_ring_member m[4];
        for (size_t i = 0; i < 4; i++)
            m[i] = (struct rd_ring_member){orders[o][i], RD_WEIGHT_ONE, NULL, NULL};
        struct rd_ring *r = NULL;
        assert_int_equal(rd_ring_new_with(m, 4, 3, &collide, &r), 0);
        /* name order, a prefix first */
        assert_string_equal(rd_ring_member_name(r, 0), "a");
        assert_string_equal(rd_ring_member_name(r, 1), "ab");
        assert_string_equal(rd_ring_member_name(r, 2), "b");
        assert_string_equal(rd_ring_member_name(r, 3), "c");
        /* every contested position goes to "a"; past the last point, wrap to "a" */
        uint64_t positions[] = {
            0, 1, (uint64_t)1 << 40, ((uint64_t)2 << 40) - 5, (uint64_t)2 << 40, UINT64_MAX};
        for (size_t k = 0; k < sizeof positions / sizeof *positions; k++)
            assert_int_equal(rd_ring_owner_at(r, positions[k]), 0);
        /* clockwise from a contested point: the tied members in name order */
        uint32_t out[4];
        assert_int_equal(rd_ring_owners_at(r, (uint64_t)1 << 40, 4, out), 4);
        for (uint32_t i = 0; i < 4; i++)
            assert_int_equal(out[i], i);
        if (first) assert_true(same_placement(first, r));
        if (!first)
            first = r;
        else
            rd_ring_delete(r);
    }
    /* without "a", what it held goes to the next name, "ab" */
    struct rd_ring_member m3[3] = {{"c", RD_WEIGHT_ONE, NULL, NULL},
                                   {"ab", RD_WEIGHT_ONE, NULL, NULL},
                                   {"b", RD_WEIGHT_ONE, NULL, NULL}};
    struct rd_ring *r3 = NULL;
    assert_int_equal(rd_ring_new_with(m3, 3, 3, &collide, &r3), 0);
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(first, r3, &d), 0);
    assert_true(d.moved == 1.0);
    assert_int_equal(d.nmoves, 1);
    assert_string_equal(d.moves[0].from, "a");
    assert_string_equal(d.moves[0].to, "ab");
    rd_ring_diff_destroy(&d);
    rd_ring_delete(r3);
    rd_ring_delete(first);
}

/* Crowds every point into one coarse group: the sort's overflow path must agree. */
static uint64_t crowded_hash(const char *name, size_t len, uint32_t i, void *ctx)
{
    (void)ctx;
    return rd_ring_point_hash(name, len, i) >> 12;
}

static uint64_t plain_hash(const char *name, size_t len, uint32_t i, void *ctx)
{
    (void)ctx;
    return rd_ring_point_hash(name, len, i);
}

/* Builds 40 members at `vnodes` with `hash` (NULL: the ring's own) and checks every point
 * and owner against the same points sorted by qsort, and lookups at points. */
static void check_sorted_like_qsort(uint32_t vnodes, rd_ring_point_hash_fn *hash)
{
    struct group g;
    group_fmt(&g, "node-%d", 0, 40);
    struct rd_ring *r = NULL;
    const struct rd_ring_hooks hooks = {hash, NULL, NULL, NULL};
    assert_int_equal(rd_ring_new_with(g.m, g.n, vnodes, &hooks, &r), 0);
    if (!hash) hash = plain_hash;
    size_t n = rd_ring_point_count(r);
    struct ref_point *p = calloc(n, sizeof *p);
    assert_non_null(p);
    size_t k = 0;
    for (size_t i = 0; i < rd_ring_member_count(r); i++) {
        const char *name = rd_ring_member_name(r, i);
        for (uint32_t j = 0; j < rd_ring_member_points(r, i); j++)
            p[k++] = (struct ref_point){hash(name, strlen(name), j, NULL), (uint32_t)i};
    }
    qsort(p, n, sizeof *p, cmp_ref_point);
    const uint64_t *h;
    const uint32_t *o;
    rd_ring_points(r, &h, &o);
    for (k = 0; k < n; k++) {
        assert_true(h[k] == p[k].h);
        assert_int_equal(o[k], p[k].o);
    }
    for (k = 0; k < 1000; k++) {
        uint64_t pos = p[k * 7 % n].h;
        assert_int_equal(rd_ring_owner_at(r, pos), p[k * 7 % n].o);
    }
    free(p);
    rd_ring_delete(r);
}

static void test_ring_crowded_points_sort_like_spread_ones(void **state)
{
    (void)state;
    check_sorted_like_qsort(512, crowded_hash);
}

/* 40 x 4,096 = 163,840 points: past PREFETCH_MIN_POINTS (2^17), where the sort prefetches
 * the lines it is about to write. */
static void test_ring_large_rings_sort_like_qsort(void **state)
{
    (void)state;
    check_sorted_like_qsort(RD_RING_VNODES_MAX, NULL);
}

static void test_ring_permuted_input_gives_byte_identical_placement(void **state)
{
    (void)state;
    uint64_t seed = 0x5eed0004;
    struct random_ring rr;
    random_ring(&seed, &rr, 60);
    for (int round = 0; round < 5; round++) {
        struct group p;
        group_copy(&p, &rr.g);
        for (size_t i = p.n; i > 1; i--) { /* Fisher-Yates */
            size_t j = splitmix64(&seed) % i;
            struct rd_ring_member t = p.m[i - 1];
            p.m[i - 1] = p.m[j];
            p.m[j] = t;
        }
        struct rd_ring *r = ring_of(&p, rr.vnodes);
        assert_true(same_placement(r, rr.r));
        assert_true(rd_ring_checksum(r) == rd_ring_checksum(rr.r));
        rd_ring_delete(r);
    }
    random_ring_free(&rr);
}

/* ---- point counts ---------------------------------------------------------------------- */

static void test_ring_point_counts_round_half_up_in_integers(void **state)
{
    (void)state;
    static const struct {
        uint32_t vnodes, weight, points;
    } cases[] = {
        {160, 1, 1},      /* 0.16 -> 0, at least 1 */
        {1, 499, 1},      /* 0.499 -> 0, at least 1 */
        {3, 500, 2},      /* 1.5 -> 2 */
        {1, 1499, 1},     /* 1.499 -> 1 */
        {1, 2500, 3},     /* 2.5 -> 3 */
        {40, 1000, 40},   /* no float loss at whole weights (ketama's 39 for 40) */
        {160, 1500, 240}, /* 1.5 x 160 */
        {100, 1004, 100}, /* 100.4 -> 100 */
        {100, 1005, 101}, /* 100.5 -> 101 */
        {512, 1001, 513}, /* 512.512 -> 513 */
        {RD_RING_VNODES_MAX, RD_WEIGHT_MAX, 409600},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        struct rd_ring_member m = {"m", cases[i].weight, NULL, NULL};
        struct rd_ring *r = NULL;
        assert_int_equal(rd_ring_new(&m, 1, cases[i].vnodes, &r), 0);
        assert_int_equal(rd_ring_member_points(r, 0), cases[i].points);
        assert_int_equal(rd_ring_point_count(r), cases[i].points);
        rd_ring_delete(r);
    }
}

/* ---- bad input ------------------------------------------------------------------------- */

static void test_ring_bad_input_is_refused_with_the_documented_code(void **state)
{
    (void)state;
    char n64[RD_NAME_MAX + 1], n65[RD_NAME_MAX + 2];
    memset(n64, 'a', RD_NAME_MAX);
    n64[RD_NAME_MAX] = '\0';
    memset(n65, 'a', RD_NAME_MAX + 1);
    n65[RD_NAME_MAX + 1] = '\0';
    char id255[RD_RING_IDENTITY_MAX + 1], id256[RD_RING_IDENTITY_MAX + 2];
    memset(id255, 'i', RD_RING_IDENTITY_MAX);
    id255[RD_RING_IDENTITY_MAX] = '\0';
    memset(id256, 'i', RD_RING_IDENTITY_MAX + 1);
    id256[RD_RING_IDENTITY_MAX + 1] = '\0';
    char zone33[RD_ZONE_MAX + 2];
    memset(zone33, 'z', RD_ZONE_MAX + 1);
    zone33[RD_ZONE_MAX + 1] = '\0';
    static const uint32_t V = 100;
    const struct {
        const char *what;
        struct rd_ring_member m[2];
        size_t n;
        uint32_t vnodes;
        int rc;
    } cases[] = {
        {"vnodes 0", {{"a", 1000, NULL, NULL}}, 1, 0, RD_EINVAL},
        {"vnodes over max", {{"a", 1000, NULL, NULL}}, 1, RD_RING_VNODES_MAX + 1, RD_EINVAL},
        {"vnodes at max", {{"a", 1000, NULL, NULL}}, 1, RD_RING_VNODES_MAX, 0},
        {"vnodes 1", {{"a", 1000, NULL, NULL}}, 1, 1, 0},
        {"weight 0", {{"a", 0, NULL, NULL}}, 1, V, RD_EINVAL},
        {"weight over max", {{"a", RD_WEIGHT_MAX + 1, NULL, NULL}}, 1, V, RD_EINVAL},
        {"weight at max", {{"a", RD_WEIGHT_MAX, NULL, NULL}}, 1, V, 0},
        {"weight 1", {{"a", 1, NULL, NULL}}, 1, V, 0},
        {"duplicate names", {{"a", 1000, NULL, NULL}, {"a", 2000, NULL, NULL}}, 2, V, RD_EEXIST},
        {"empty name", {{"", 1000, NULL, NULL}}, 1, V, RD_EINVAL},
        {"65-byte name", {{n65, 1000, NULL, NULL}}, 1, V, RD_EINVAL},
        {"64-byte name", {{n64, 1000, NULL, NULL}}, 1, V, 0},
        {"name with a space", {{"web 1", 1000, NULL, NULL}}, 1, V, RD_EINVAL},
        {"name with a slash", {{"web/1", 1000, NULL, NULL}}, 1, V, RD_EINVAL},
        {"NULL name", {{NULL, 1000, NULL, NULL}}, 1, V, RD_EINVAL},
        {"invalid after valid",
         {{"ok", 1000, NULL, NULL}, {"not ok", 1000, NULL, NULL}},
         2,
         V,
         RD_EINVAL},
        {"empty ring", {{NULL, 0, NULL, NULL}}, 0, V, 0},
        {"zone", {{"a", 1000, "eu-1a", NULL}}, 1, V, 0},
        {"empty zone", {{"a", 1000, "", NULL}}, 1, V, 0},
        {"33-byte zone", {{"a", 1000, zone33, NULL}}, 1, V, RD_EINVAL},
        {"zone with a space", {{"a", 1000, "eu 1", NULL}}, 1, V, RD_EINVAL},
        {"identity", {{"a", 1000, NULL, "10.0.0.1:11211"}}, 1, V, 0},
        {"255-byte identity", {{"a", 1000, NULL, id255}}, 1, V, 0},
        {"256-byte identity", {{"a", 1000, NULL, id256}}, 1, V, RD_EINVAL},
        {"empty identity", {{"a", 1000, NULL, ""}}, 1, V, RD_EINVAL},
        {"identity with a space", {{"a", 1000, NULL, "h 1"}}, 1, V, RD_EINVAL},
        {"identity with a control", {{"a", 1000, NULL, "h\n1"}}, 1, V, RD_EINVAL},
        {"identity with a high byte", {{"a", 1000, NULL, "h\xc3\xa9"}}, 1, V, RD_EINVAL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        static char junk;
        struct rd_ring *r = (struct rd_ring *)&junk; /* must be overwritten */
        int rc = rd_ring_new(cases[i].m, cases[i].n, cases[i].vnodes, &r);
        printf("  %-20s -> %d (%s)\n", cases[i].what, rc, rd_strerror(rc));
        assert_int_equal(rc, cases[i].rc);
        if (rc == 0)
            assert_non_null(r);
        else
            assert_null(r);
        rd_ring_delete(r);
    }
    struct rd_ring *r = NULL;
    struct rd_ring_member ok = {"a", 1000, NULL, NULL};
    assert_int_equal(rd_ring_new(NULL, 1, V, &r), RD_EINVAL);
    assert_int_equal(rd_ring_new(&ok, 1, V, NULL), RD_EINVAL);
}

static void test_ring_the_limit_itself_is_not_scaled(void **state)
{
    (void)state;
    /* 4096 members x 4096 vnodes = 2^24 points exactly: built as they are, not scaled */
    size_t n = 4096;
    struct rd_ring_member *m = calloc(n, sizeof *m);
    char(*names)[16] = calloc(n, sizeof *names);
    assert_non_null(m);
    assert_non_null(names);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "m%zu", i);
        m[i] = (struct rd_ring_member){names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    struct rd_ring *r = NULL;
    assert_int_equal(rd_ring_new(m, n, RD_RING_VNODES_MAX, &r), 0);
    assert_int_equal(rd_ring_point_count(r), RD_RING_MAX_POINTS);
    assert_false(rd_ring_scaled(r, NULL, NULL));
    assert_true(rd_ring_owner(r, "user:42", 7) >= 0);
    rd_ring_delete(r);
    free(m);
    free(names);
}

/* `heavy` members h0.. of weight 100 at 4096 vnodes, in the order given by `reverse`, plus
 * one member "new" of weight 1 when `with_new`. */
static struct rd_ring *heavy_ring(size_t heavy, bool reverse, bool with_new, char (*names)[16])
{
    struct rd_ring_member m[64];
    size_t n = 0;
    for (size_t k = 0; k < heavy; k++) {
        size_t i = reverse ? heavy - 1 - k : k;
        snprintf(names[i], 16, "h%zu", i);
        m[n++] = (struct rd_ring_member){names[i], RD_WEIGHT_MAX, NULL, NULL};
    }
    if (with_new) m[n++] = (struct rd_ring_member){"new", RD_WEIGHT_ONE, NULL, NULL};
    struct rd_ring *r = NULL;
    assert_int_equal(rd_ring_new(m, n, RD_RING_VNODES_MAX, &r), 0);
    return r;
}

static void test_ring_over_the_limit_is_scaled_by_one_factor(void **state)
{
    (void)state;
    char names[64][16];
    /* PROTOCOL.md's vector: 41 x 409,600 = 16,793,600 raw points > 2^24. Budget 2^24 - 41;
     * each gets floor(409600 x 16777175 / 16793600) = 409,199. */
    struct rd_ring *a = heavy_ring(41, false, false, names);
    uint64_t budget = 0, raw = 0;
    assert_true(rd_ring_scaled(a, &budget, &raw));
    assert_int_equal(budget, RD_RING_MAX_POINTS - 41);
    assert_int_equal(raw, 16793600);
    for (size_t i = 0; i < 41; i++)
        assert_int_equal(rd_ring_member_points(a, i), 409199);
    assert_int_equal(rd_ring_point_count(a), 41 * 409199);
    assert_int_equal(rd_ring_checksum(a), RING_SCALED_VECTOR);
    /* the same members in another order: the same ring, point for point */
    struct rd_ring *b = heavy_ring(41, true, false, names);
    assert_int_equal(rd_ring_checksum(a), rd_ring_checksum(b));
    const uint64_t *ha, *hb;
    const uint32_t *oa, *ob;
    rd_ring_points(a, &ha, &oa);
    rd_ring_points(b, &hb, &ob);
    assert_memory_equal(ha, hb, rd_ring_point_count(a) * sizeof *ha);
    assert_memory_equal(oa, ob, rd_ring_point_count(a) * sizeof *oa);
    rd_ring_delete(b);
    /* a real member joining the scaled ring gets its share: 4096 x 16777174 / 16797696 */
    struct rd_ring *c = heavy_ring(41, false, true, names);
    assert_true(rd_ring_point_count(c) <= RD_RING_MAX_POINTS);
    int idx = -1;
    for (size_t i = 0; i < rd_ring_member_count(c); i++)
        if (strcmp(rd_ring_member_name(c, i), "new") == 0) idx = (int)i;
    assert_true(idx >= 0);
    assert_int_equal(rd_ring_member_points(c, (size_t)idx), 4090);
    assert_int_equal(rd_ring_member_points(c, 0), 409099);
    assert_int_equal(rd_ring_owner_at(c, rd_ring_point_hash("new", 3, 7)), idx);
    assert_int_not_equal(rd_ring_checksum(a), rd_ring_checksum(c));
    rd_ring_delete(c);
    rd_ring_delete(a);
}

static void test_ring_floor_of_one_point_still_fits_the_limit(void **state)
{
    (void)state;
    /* at 512 vnodes, 330 members of weight 100 (51,200 points each) and 2,000 of weight
     * 0.001 (1 point each, which scales to 0): every light member keeps its one point and the
     * total still fits the limit */
    size_t heavy = 330, n = heavy + 2000;
    struct rd_ring_member *m = calloc(n, sizeof *m);
    char(*names)[16] = calloc(n, sizeof *names);
    assert_non_null(m);
    assert_non_null(names);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%c%zu", i < heavy ? 'h' : 'l', i);
        m[i] = (struct rd_ring_member){names[i], i < heavy ? RD_WEIGHT_MAX : 1, NULL, NULL};
    }
    struct rd_ring *r = NULL;
    assert_int_equal(rd_ring_new(m, n, RD_RING_VNODES_DEFAULT, &r), 0);
    assert_true(rd_ring_scaled(r, NULL, NULL));
    assert_true(rd_ring_point_count(r) <= RD_RING_MAX_POINTS);
    for (size_t i = 0; i < rd_ring_member_count(r); i++)
        assert_int_equal(
            rd_ring_member_points(r, i),
            rd_ring_member_name(r, i)[0] == 'l' ? 1 : 50826u /* 51200 x 16774886 / 16898000 */);
    rd_ring_delete(r);
    free(m);
    free(names);
}

static void test_ring_the_empty_ring_owns_nothing(void **state)
{
    (void)state;
    struct rd_ring *r = NULL;
    assert_int_equal(rd_ring_new(NULL, 0, RD_RING_VNODES_DEFAULT, &r), 0);
    uint32_t out[4];
    assert_int_equal(rd_ring_member_count(r), 0);
    assert_int_equal(rd_ring_point_count(r), 0);
    assert_int_equal(rd_ring_owner(r, "user:42", 7), -1);
    assert_int_equal(rd_ring_owner_at(r, 0), -1);
    assert_int_equal(rd_ring_owners(r, "user:42", 7, 4, out), 0);
    assert_null(rd_ring_member_name(r, 0));
    rd_ring_delete(r);
    rd_ring_delete(NULL);
    /* a NULL ring reads as empty */
    assert_int_equal(rd_ring_owner(NULL, "user:42", 7), -1);
    assert_int_equal(rd_ring_owners(NULL, "user:42", 7, 4, out), 0);
}

/* ---- allocation failure ---------------------------------------------------------------- */

static void test_ring_every_allocation_failure_is_enomem_and_leaks_nothing(void **state)
{
    (void)state;
    /* LeakSanitizer checks "leaks nothing" when the test binary exits */
    struct group a, b, c;
    group_fmt(&a, "node-%d", 0, 10);
    group_fmt(&b, "node-%d", 0, 12);
    group_remove(&b, "node-3");
    group_fmt(&c, "node-%d", 0, 11); /* one join: the diff weighs only the new points */
    int builds = 0, diffs;
    for (int n = 0;; n++) {
        struct failing_alloc f = {n, 0};
        const struct rd_ring_hooks h = {NULL, failing_malloc, &f, NULL};
        static char junk;
        struct rd_ring *r = (struct rd_ring *)&junk;
        int rc = rd_ring_new_with(a.m, a.n, 64, &h, &r);
        if (f.calls <= n) { /* the n-th call was never made: every failure point is covered */
            assert_int_equal(rc, 0);
            rd_ring_delete(r);
            break;
        }
        assert_int_equal(rc, RD_ENOMEM);
        assert_null(r);
        builds++;
    }
    struct rd_ring *ra = ring_of(&a, 64), *targets[] = {ring_of(&b, 64), ring_of(&c, 64)};
    /* the walk over every point, then the sparse pass; pairs summed in dense cells (what
     * so few members get), then through the index of pairs */
    static const unsigned ways[] = {0, RD_RING_DIFF_INDEXED};
    int per_case[2][2] = {{0, 0}, {0, 0}};
    for (int w = 0; w < 2; w++) {
        for (int t = 0; t < 2; t++) {
            for (int n = 0;; n++) {
                struct failing_alloc f = {n, 0};
                const struct rd_ring_hooks h = {NULL, failing_malloc, &f, NULL};
                struct rd_ring_diff d;
                int rc = rd_ring_diff_way_with(ra, targets[t], SIZE_MAX, ways[w], &h, &d);
                if (f.calls <= n) {
                    assert_int_equal(rc, 0);
                    assert_true(d.nmoves > 0);
                    rd_ring_diff_destroy(&d);
                    break;
                }
                assert_int_equal(rc, RD_ENOMEM);
                assert_int_equal(d.nmoves, 0);
                assert_null(d.moves);
                per_case[w][t]++;
            }
        }
    }
    rd_ring_delete(targets[0]);
    rd_ring_delete(targets[1]);
    diffs = per_case[0][0] + per_case[0][1] + per_case[1][0] + per_case[1][1];
    printf("allocation failures: %d points in rd_ring_new, %d in rd_ring_diff, all RD_ENOMEM\n",
           builds, diffs);
    /* Every diff allocates the pairing, the kept counts and the moves; the sparse pass the
     * changed points too; the cells and the pairs gathered from them, or the index and the
     * pair list (the pairs are few: neither grows). Which path ran shows in the count. */
    assert_true(builds >= 3);
    assert_int_equal(per_case[0][0], 5);
    assert_int_equal(per_case[0][1], 6);
    assert_int_equal(per_case[1][0], 5);
    assert_int_equal(per_case[1][1], 6);
    rd_ring_delete(ra);
}

/* ---- test vectors (also in proto/PROTOCOL.md, "The ring") ------------------------------ */

static void test_ring_vectors_match_the_protocol_document(void **state)
{
    (void)state;
    /* the point encoding, byte by byte */
    static const uint8_t enc_node1_0[] = {0x06, 'n', 'o', 'd', 'e', '-', '1', 0, 0, 0, 0};
    static const uint8_t enc_node1_1[] = {0x06, 'n', 'o', 'd', 'e', '-', '1', 0, 0, 0, 1};
    static const uint8_t enc_node1_256[] = {0x06, 'n', 'o', 'd', 'e', '-', '1', 0, 0, 1, 0};
    assert_true(rd_ring_point_hash("node-1", 6, 0) == XXH3_64bits(enc_node1_0, 11));
    assert_true(rd_ring_point_hash("node-1", 6, 1) == XXH3_64bits(enc_node1_1, 11));
    assert_true(rd_ring_point_hash("node-1", 6, 256) == XXH3_64bits(enc_node1_256, 11));

    uint64_t p0 = rd_ring_point_hash("node-1", 6, 0);
    uint64_t p1 = rd_ring_point_hash("node-1", 6, 1);
    uint64_t k42 = rd_ring_key_hash("user:42", 7);
    uint64_t kempty = rd_ring_key_hash("", 0);
    printf("point_hash(\"node-1\", 0)   = 0x%016llx\n", (unsigned long long)p0);
    printf("point_hash(\"node-1\", 1)   = 0x%016llx\n", (unsigned long long)p1);
    printf("key_hash(\"user:42\")       = 0x%016llx\n", (unsigned long long)k42);
    printf("key_hash(\"\")              = 0x%016llx\n", (unsigned long long)kempty);
    assert_true(p0 == 0x357a2b008f47d4bbull);
    assert_true(p1 == 0xd5d037c39f482e95ull);
    assert_true(k42 == 0x9fc1e605fa7174aaull);
    assert_true(kempty == 0x2d06800538d394c2ull); /* XXH3-64 of no bytes, seed 0 */

    /* a fixed ring: node-1, node-2, node-3 at weight 1.0, vnodes 4 */
    struct group g;
    group_fmt(&g, "node-%d", 1, 3);
    struct rd_ring *r = ring_of(&g, 4);
    uint32_t out[3];
    int owner = rd_ring_owner(r, "user:42", 7);
    size_t n = rd_ring_owners(r, "user:42", 7, 3, out);
    printf("ring {node-1,node-2,node-3} x 4: checksum 0x%016llx, owner(user:42) %s, "
           "owners(user:42, 3) %s %s %s\n",
           (unsigned long long)rd_ring_checksum(r), rd_ring_member_name(r, (size_t)owner),
           rd_ring_member_name(r, out[0]), rd_ring_member_name(r, out[1]),
           rd_ring_member_name(r, out[2]));
    const uint64_t *h;
    const uint32_t *o;
    rd_ring_points(r, &h, &o);
    for (size_t k = 0; k < rd_ring_point_count(r); k++)
        printf("  point %2zu: 0x%016llx %s\n", k, (unsigned long long)h[k],
               rd_ring_member_name(r, o[k]));
    assert_true(rd_ring_checksum(r) == 0xc4c56126773714eaull);
    assert_string_equal(rd_ring_member_name(r, (size_t)owner), "node-1");
    assert_int_equal(n, 3);
    assert_string_equal(rd_ring_member_name(r, out[0]), "node-1");
    assert_string_equal(rd_ring_member_name(r, out[1]), "node-2");
    assert_string_equal(rd_ring_member_name(r, out[2]), "node-3");
    static const uint64_t sorted_points[12] = {
        0x1d1f54cc53e3f638ull, 0x2f328ed5564b63c2ull, 0x357a2b008f47d4bbull, 0x35fba9738cd384b1ull,
        0x53e132d538d1278full, 0x55df1a60ff7b1cd5ull, 0x5c3a85ebab9c8517ull, 0x628db853763389e4ull,
        0x6db011ff311e5923ull, 0x7e9fdf700ad0ced1ull, 0x9c1fbf5767079283ull, 0xd5d037c39f482e95ull};
    static const uint32_t sorted_owners[12] = {1, 2, 0, 2, 1, 2, 0, 1, 1, 0, 2, 0};
    assert_int_equal(rd_ring_point_count(r), 12);
    assert_memory_equal(h, sorted_points, sizeof sorted_points);
    assert_memory_equal(o, sorted_owners, sizeof sorted_owners);

    /* weights: node-2 at 2.0 and node-3 at 0.5 get 8 and 2 points */
    struct group w;
    group_fmt(&w, "node-%d", 1, 3);
    w.m[1].weight = 2 * RD_WEIGHT_ONE;
    w.m[2].weight = RD_WEIGHT_ONE / 2;
    struct rd_ring *rw = ring_of(&w, 4);
    printf("ring {node-1 x1.0, node-2 x2.0, node-3 x0.5} x 4: points %u %u %u, checksum "
           "0x%016llx\n",
           rd_ring_member_points(rw, 0), rd_ring_member_points(rw, 1), rd_ring_member_points(rw, 2),
           (unsigned long long)rd_ring_checksum(rw));
    assert_int_equal(rd_ring_member_points(rw, 0), 4);
    assert_int_equal(rd_ring_member_points(rw, 1), 8);
    assert_int_equal(rd_ring_member_points(rw, 2), 2);
    assert_true(rd_ring_checksum(rw) == 0x92d721d2e02e017bull);
    assert_string_equal(owner_name(rw, "user:42", 7), "node-1");

    /* node-3 leaves the first ring */
    struct group two;
    group_fmt(&two, "node-%d", 1, 2);
    struct rd_ring *r2 = ring_of(&two, 4);
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(r, r2, &d), 0);
    printf("diff {node-1,node-2,node-3} -> {node-1,node-2} x 4: moved %.17g:", d.moved);
    for (size_t k = 0; k < d.nmoves; k++)
        printf(" %s->%s %.17g", d.moves[k].from, d.moves[k].to, d.moves[k].fraction);
    printf("\n");
    /* exactly 3608086916535408248 / 2^64, of which 3571637612194571906 to node-1 */
    assert_true(d.moved == 3608086916535408248.0 * 0x1p-64);
    assert_int_equal(d.nmoves, 2);
    assert_string_equal(d.moves[0].from, "node-3");
    assert_string_equal(d.moves[0].to, "node-1");
    assert_true(d.moves[0].fraction == 3571637612194571906.0 * 0x1p-64);
    assert_string_equal(d.moves[1].to, "node-2");
    assert_true(d.moves[1].fraction == 36449304340836342.0 * 0x1p-64);
    rd_ring_diff_destroy(&d);
    rd_ring_delete(r2);
    rd_ring_delete(rw);
    rd_ring_delete(r);
}

/* Only 4096 distinct point values: arcs of equal length everywhere, so shares tie. */
static uint64_t grid_points_hash(const char *name, size_t name_len, uint32_t i, void *ctx)
{
    (void)ctx;
    return rd_ring_point_hash(name, name_len, i) >> 52 << 52;
}

/* rd_ring_diff_top(k) is rd_ring_diff() cut short: the same total, the same pair count, and
 * its k largest pairs in the same order, ties (broken by names) included. */
static void test_ring_diff_top_is_the_full_diff_cut_short(void **state)
{
    (void)state;
    for (int crowded = 0; crowded < 2; crowded++) {
        struct rd_ring_hooks hooks = {.point_hash = crowded ? grid_points_hash : NULL};
        enum { BEFORE = 40, AFTER = 70 };
        static char names[AFTER + 10][16];
        struct rd_ring_member before[BEFORE], after[AFTER];
        for (size_t i = 0; i < AFTER + 10; i++)
            snprintf(names[i], sizeof names[i], "m%zu", i);
        for (size_t i = 0; i < BEFORE; i++)
            before[i] = (struct rd_ring_member){.name = names[i], .weight = RD_WEIGHT_ONE};
        for (size_t i = 0; i < AFTER; i++) /* 10 leave, 40 join, weights change */
            after[i] = (struct rd_ring_member){.name = names[i + 10],
                                               .weight = RD_WEIGHT_ONE * (1 + i % 3)};
        struct rd_ring *a, *b;
        assert_int_equal(rd_ring_new_with(before, BEFORE, 64, &hooks, &a), 0);
        assert_int_equal(rd_ring_new_with(after, AFTER, 64, &hooks, &b), 0);
        struct rd_ring_diff all;
        assert_int_equal(rd_ring_diff(a, b, &all), 0);
        assert_int_equal(all.nmoves, all.npairs);
        assert_true(all.npairs > 100);
        size_t ks[] = {0, 1, 2, 16, 99, all.npairs - 1, all.npairs, all.npairs + 5, SIZE_MAX};
        for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) {
            struct rd_ring_diff top;
            assert_int_equal(rd_ring_diff_top(a, b, ks[t], &top), 0);
            assert_true(top.moved == all.moved);
            assert_int_equal(top.npairs, all.npairs);
            assert_int_equal(top.nmoves, ks[t] < all.npairs ? ks[t] : all.npairs);
            for (size_t k = 0; k < top.nmoves; k++) {
                assert_string_equal(top.moves[k].from, all.moves[k].from);
                assert_string_equal(top.moves[k].to, all.moves[k].to);
                assert_true(top.moves[k].fraction == all.moves[k].fraction);
            }
            rd_ring_diff_destroy(&top);
        }
        /* the full list is in order: largest first, then by names */
        size_t ties = 0;
        for (size_t k = 1; k < all.npairs; k++) {
            const struct rd_ring_move *p = &all.moves[k - 1], *q = &all.moves[k];
            assert_true(p->fraction >= q->fraction);
            if (p->fraction == q->fraction) {
                ties++;
                int c = strcmp(p->from, q->from);
                assert_true(c < 0 || (c == 0 && strcmp(p->to, q->to) < 0));
            }
        }
        if (crowded) assert_true(ties > 10);
        rd_ring_diff_destroy(&all);
        rd_ring_delete(a);
        rd_ring_delete(b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ring_one_point_per_node_join_moves_keys_only_to_new_node),
        cmocka_unit_test(test_ring_one_point_per_node_leave_moves_only_its_keys_to_its_successor),
        cmocka_unit_test(test_ring_vnodes_join_moves_about_a_fifth_only_to_new_node),
        cmocka_unit_test(test_ring_vnodes_leave_scatters_keys_over_all_survivors),
        cmocka_unit_test(
            test_ring_vnodes_flatten_the_load_and_the_default_keeps_max_within_10_percent),
        cmocka_unit_test(test_ring_lookups_match_brute_force_on_random_rings),
        cmocka_unit_test(test_ring_owners_are_distinct_clockwise_and_start_with_the_owner),
        cmocka_unit_test(test_ring_owners_with_n_above_member_count_returns_every_member),
        cmocka_unit_test(
            test_ring_owners_on_a_ring_of_more_than_16384_members_are_distinct_and_clockwise),
        cmocka_unit_test(test_ring_diff_matches_counted_moves_per_pair),
        cmocka_unit_test(test_ring_diff_of_a_ring_with_itself_is_zero),
        cmocka_unit_test(test_ring_diff_top_is_the_full_diff_cut_short),
        cmocka_unit_test(test_ring_diff_from_the_empty_ring_moves_everything_from_nobody),
        cmocka_unit_test(test_ring_checksum_covers_the_whole_definition),
        cmocka_unit_test(test_ring_equal_points_go_to_the_smallest_name_whatever_the_input_order),
        cmocka_unit_test(test_ring_crowded_points_sort_like_spread_ones),
        cmocka_unit_test(test_ring_large_rings_sort_like_qsort),
        cmocka_unit_test(test_ring_permuted_input_gives_byte_identical_placement),
        cmocka_unit_test(test_ring_point_counts_round_half_up_in_integers),
        cmocka_unit_test(test_ring_bad_input_is_refused_with_the_documented_code),
        cmocka_unit_test(test_ring_the_limit_itself_is_not_scaled),
        cmocka_unit_test(test_ring_over_the_limit_is_scaled_by_one_factor),
        cmocka_unit_test(test_ring_floor_of_one_point_still_fits_the_limit),
        cmocka_unit_test(test_ring_the_empty_ring_owns_nothing),
        cmocka_unit_test(test_ring_every_allocation_failure_is_enomem_and_leaks_nothing),
        cmocka_unit_test(test_ring_vectors_match_the_protocol_document),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
