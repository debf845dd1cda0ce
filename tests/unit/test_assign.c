/*
 * test_assign.c — bounded-load assignment (lib/assign.h), as scenarios.
 *
 * First the arithmetic every agent must share (c in thousandths, exact integer caps), then
 * the promises on random rings, weights and key sets: no member above its cap, the same
 * answer whatever the order of the keys, equal keys as one, a key leaves its owner only for
 * a full owner, and the whole result equal to a brute-force reference written here from the
 * specification alone (proto/PROTOCOL.md, "Bounded-load assignment (ASSIGN)"). Then the
 * edges: c large enough gives the plain owners, empty ring, one member, bad input, and the
 * vectors PROTOCOL.md publishes, checked against the text of PROTOCOL.md itself.
 *
 * Random cases come from fixed seeds, printed, so that a failure replays.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

#include "assign.h"
#include "rand.h"
#include "rd_err.h"
#include "ring.h"
#include "ring_internal.h"

#define MEMBERS_MAX 64
#define KEYS_MAX    3000
#define KEY_LEN     24

/* ---- helpers ------------------------------------------------------------------------------ */

struct set {
    size_t n;
    char text[KEYS_MAX][KEY_LEN];
    struct rd_assign_key keys[KEYS_MAX];
};

/* Keys "prefix<i>" for i < n. */
static void set_fmt(struct set *s, const char *prefix, size_t n)
{
    assert_true(n <= KEYS_MAX);
    s->n = n;
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(s->text[i], KEY_LEN, "%s%zu", prefix, i);
        s->keys[i] = (struct rd_assign_key){s->text[i], (size_t)len};
    }
}

/* A ring of n members named fmt % i, each of weight weights[i] (NULL: all 1.0). */
static struct rd_ring *ring_fmt(const char *fmt, size_t n, const uint32_t *weights, uint32_t vnodes)
{
    static char names[MEMBERS_MAX][RD_NAME_MAX + 1];
    struct rd_ring_member m[MEMBERS_MAX];
    assert_true(n <= MEMBERS_MAX);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], fmt, (int)i);
        m[i] = (struct rd_ring_member){names[i], weights ? weights[i] : RD_WEIGHT_ONE, NULL, NULL};
    }
    struct rd_ring *r = NULL;
    assert_int_equal(rd_ring_new(m, n, vnodes, &r), 0);
    return r;
}

static uint64_t total_weight(const struct rd_ring *r)
{
    uint64_t t = 0;
    for (size_t m = 0; m < rd_ring_member_count(r); m++)
        t += rd_ring_member_weight(r, m);
    return t;
}

static bool same_bytes(const struct rd_assign_key *a, const struct rd_assign_key *b)
{
    return a->len == b->len && memcmp(a->ptr, b->ptr, a->len) == 0;
}

static size_t distinct_keys(const struct rd_assign_key *keys, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        bool seen = false;
        for (size_t j = 0; j < i && !seen; j++)
            seen = same_bytes(&keys[i], &keys[j]);
        d += !seen;
    }
    return d;
}

/*
 * The reference, from the specification alone: distinct keys in (XXH3-64, bytes) order, caps
 * ceil(c x D x w / (1000 x W)) computed in 128 bits, and the walk by linear scans over the
 * sorted points (first point >= the key's position, wrapping; then clockwise).
 */
static int ref_cmp(const struct rd_assign_key *a, const struct rd_assign_key *b)
{
    uint64_t ha = XXH3_64bits(a->ptr, a->len), hb = XXH3_64bits(b->ptr, b->len);
    if (ha != hb) return ha < hb ? -1 : 1;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = memcmp(a->ptr, b->ptr, n);
    if (c) return c;
    return a->len < b->len ? -1 : a->len > b->len;
}

static void reference(const struct rd_ring *r, uint32_t c_milli, const struct rd_assign_key *keys,
                      size_t n, int *out)
{
    size_t members = rd_ring_member_count(r), points = rd_ring_point_count(r);
    const uint64_t *hashes;
    const uint32_t *owner;
    rd_ring_points(r, &hashes, &owner);
    size_t *order = malloc(n * sizeof *order);
    unsigned __int128 *cap = calloc(members, sizeof *cap);
    size_t *load = calloc(members, sizeof *load);
    for (size_t i = 0; i < n; i++) { /* insertion sort by the spec's order */
        size_t j = i;
        while (j > 0 && ref_cmp(&keys[order[j - 1]], &keys[i]) > 0) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    size_t d = distinct_keys(keys, n);
    unsigned __int128 w = total_weight(r);
    for (size_t m = 0; m < members; m++) {
        unsigned __int128 num = (unsigned __int128)c_milli * d * rd_ring_member_weight(r, m);
        cap[m] = (num + 1000 * w - 1) / (1000 * w);
    }
    for (size_t k = 0; k < n; k++) {
        size_t i = order[k];
        if (k > 0 && same_bytes(&keys[order[k - 1]], &keys[i])) {
            out[i] = out[order[k - 1]];
            continue;
        }
        uint64_t pos = XXH3_64bits(keys[i].ptr, keys[i].len);
        size_t p = 0;
        while (p < points && hashes[p] < pos)
            p++;
        if (p == points) p = 0;
        while (load[owner[p]] >= cap[owner[p]])
            p = (p + 1) % points;
        load[owner[p]]++;
        out[i] = (int)owner[p];
    }
    free(order);
    free(cap);
    free(load);
}

/* Checks the promises of one result: valid members, caps, duplicates alike, and a key away
 * from its owner only when that owner ended full. */
static void check_result(const struct rd_ring *r, uint32_t c_milli,
                         const struct rd_assign_key *keys, size_t n, const int *out)
{
    size_t members = rd_ring_member_count(r);
    size_t *load = calloc(members, sizeof *load);
    size_t d = distinct_keys(keys, n);
    for (size_t i = 0; i < n; i++) {
        assert_true(out[i] >= 0 && (size_t)out[i] < members);
        bool dup = false;
        for (size_t j = 0; j < i && !dup; j++)
            if (same_bytes(&keys[i], &keys[j])) {
                assert_int_equal(out[i], out[j]);
                dup = true;
            }
        if (!dup) load[out[i]]++;
    }
    uint64_t w = total_weight(r);
    for (size_t m = 0; m < members; m++)
        assert_true(load[m] <= rd_assign_cap(c_milli, d, rd_ring_member_weight(r, m), w));
    for (size_t i = 0; i < n; i++) {
        int owner = rd_ring_owner(r, keys[i].ptr, keys[i].len);
        if (out[i] != owner)
            assert_int_equal(load[owner],
                             rd_assign_cap(c_milli, d, rd_ring_member_weight(r, owner), w));
    }
    free(load);
}

/* ---- arithmetic --------------------------------------------------------------------------- */

static void test_assign_parse_c_takes_up_to_three_decimals_above_one(void **state)
{
    (void)state;
    static const struct {
        const char *s;
        uint32_t milli;
    } good[] = {{"1.001", 1001}, {"1.1", 1100},      {"1.25", 1250},    {"1.250", 1250},
                {"2", 2000},     {"2.0", 2000},      {"1000", 1000000}, {"1000.000", 1000000},
                {"01.5", 1500},  {"999.999", 999999}};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        uint32_t c = 0;
        print_message("good %s\n", good[i].s);
        assert_int_equal(rd_assign_parse_c(good[i].s, strlen(good[i].s), &c), 0);
        assert_int_equal(c, good[i].milli);
    }
    static const char *const bad[] = {
        "1",     "1.0", "1.000", "0.5",      "0",    "abc",  "1.1x",        "x1.1",
        "",      ".5",  "1.",    "1.0001",   "-2",   "+2",   "1e3",         " 1.5",
        "1.5 ",  "1,5", "1..5",  "1000.001", "1001", "0x10", "99999999999", "18446744073709551617",
        "2.5.1", "inf", "nan",   "1.\n5",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint32_t c = 7;
        print_message("bad '%s'\n", bad[i]);
        assert_int_equal(rd_assign_parse_c(bad[i], strlen(bad[i]), &c), RD_EINVAL);
        assert_int_equal(c, 7);
    }
    uint32_t c = 7;
    assert_int_equal(rd_assign_parse_c("1.5\0", 4, &c), RD_EINVAL); /* an embedded NUL */
    assert_int_equal(rd_assign_parse_c(NULL, 0, &c), RD_EINVAL);
}

static void test_assign_cap_is_the_exact_integer_ceiling(void **state)
{
    (void)state;
    /* 1.25 x 20 keys x 1/5 = 5 exactly: no rounding up of an exact quotient */
    assert_int_equal(rd_assign_cap(1250, 20, 1000, 5000), 5);
    /* 1.1 x 1000 x 1/50 = 22 exactly; one key more makes 22.022 -> 23 */
    assert_int_equal(rd_assign_cap(1100, 1000, 1000, 50000), 22);
    assert_int_equal(rd_assign_cap(1100, 1001, 1000, 50000), 23);
    /* a tiny share still gets room for one key */
    assert_int_equal(rd_assign_cap(1001, 1, 1, 16384u * RD_WEIGHT_MAX), 1);
    /* weights 1.5 and 0.5: 2 x 10 x 1500/2000 = 15, 2 x 10 x 500/2000 = 5 */
    assert_int_equal(rd_assign_cap(2000, 10, 1500, 2000), 15);
    assert_int_equal(rd_assign_cap(2000, 10, 500, 2000), 5);
    /* the largest inputs do not overflow: c = 1000, every key, one member */
    assert_int_equal(
        rd_assign_cap(RD_ASSIGN_C_MAX, RD_ASSIGN_KEYS_MAX, RD_WEIGHT_MAX, RD_WEIGHT_MAX),
        (uint64_t)1000 * RD_ASSIGN_KEYS_MAX);
    assert_int_equal(rd_assign_cap(1100, 0, 1000, 5000), 0);
}

/* ---- promises on random input ------------------------------------------------------------- */

static struct set random_set; /* large: static, not on the stack */

/* n random keys of random length 0..KEY_LEN-1, about a tenth of them repeats. */
static void random_keys(struct rd_rand *rng, size_t n)
{
    random_set.n = n;
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && rd_rand_below(rng, 10) == 0) {
            random_set.keys[i] = random_set.keys[rd_rand_below(rng, (uint32_t)i)];
            continue;
        }
        size_t len = rd_rand_below(rng, KEY_LEN);
        for (size_t k = 0; k < len; k++)
            random_set.text[i][k] = (char)rd_rand_below(rng, 256);
        random_set.keys[i] = (struct rd_assign_key){random_set.text[i], len};
    }
}

static struct rd_ring *random_ring(struct rd_rand *rng)
{
    size_t n = 1 + rd_rand_below(rng, 40);
    uint32_t w[MEMBERS_MAX];
    for (size_t i = 0; i < n; i++)
        w[i] = rd_rand_below(rng, 4) == 0 ? 1 + rd_rand_below(rng, RD_WEIGHT_MAX)
                                          : 1 + rd_rand_below(rng, 3 * RD_WEIGHT_ONE);
    return ring_fmt("node-%d", n, w, 1 + rd_rand_below(rng, 128));
}

static uint32_t random_c(struct rd_rand *rng)
{
    static const uint32_t usual[] = {1001, 1100, 1250, 2000};
    return rd_rand_below(rng, 2) ? usual[rd_rand_below(rng, 4)]
                                 : RD_ASSIGN_C_MIN + rd_rand_below(rng, 5000);
}

static void test_assign_respects_caps_and_matches_the_reference(void **state)
{
    (void)state;
    static int out[KEYS_MAX], want[KEYS_MAX];
    for (uint64_t seed = 1; seed <= 60; seed++) {
        struct rd_rand rng;
        rd_rand_seed(&rng, seed);
        struct rd_ring *r = random_ring(&rng);
        uint32_t c = random_c(&rng);
        random_keys(&rng, 1 + rd_rand_below(&rng, KEYS_MAX));
        print_message("seed %llu: %zu members, %zu keys, c %u/1000\n", (unsigned long long)seed,
                      rd_ring_member_count(r), random_set.n, c);
        assert_int_equal(rd_assign(r, c, random_set.keys, random_set.n, out), 0);
        check_result(r, c, random_set.keys, random_set.n, out);
        reference(r, c, random_set.keys, random_set.n, want);
        assert_memory_equal(out, want, random_set.n * sizeof *out);
        rd_ring_delete(r);
    }
}

static void test_assign_does_not_depend_on_the_order_of_the_keys(void **state)
{
    (void)state;
    static int first[KEYS_MAX], out[KEYS_MAX];
    static struct rd_assign_key shuffled[KEYS_MAX];
    static size_t where[KEYS_MAX];
    for (uint64_t seed = 100; seed < 110; seed++) {
        struct rd_rand rng;
        rd_rand_seed(&rng, seed);
        struct rd_ring *r = random_ring(&rng);
        uint32_t c = random_c(&rng);
        random_keys(&rng, 500 + rd_rand_below(&rng, 1500));
        size_t n = random_set.n;
        print_message("seed %llu: %zu keys, c %u/1000\n", (unsigned long long)seed, n, c);
        assert_int_equal(rd_assign(r, c, random_set.keys, n, first), 0);
        for (int round = 0; round < 5; round++) {
            for (size_t i = 0; i < n; i++)
                where[i] = i;
            for (size_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
                size_t j = rd_rand_below(&rng, (uint32_t)(i + 1));
                size_t t = where[i];
                where[i] = where[j];
                where[j] = t;
            }
            for (size_t i = 0; i < n; i++)
                shuffled[i] = random_set.keys[where[i]];
            assert_int_equal(rd_assign(r, c, shuffled, n, out), 0);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(out[i], first[where[i]]);
        }
        rd_ring_delete(r);
    }
}

/* Equal keys are one key: repeating every key (any number of times) changes nothing. */
static void test_assign_counts_equal_keys_once(void **state)
{
    (void)state;
    static struct set once, thrice;
    static int a[KEYS_MAX], b[KEYS_MAX];
    struct rd_ring *r = ring_fmt("m%d", 7, NULL, 64);
    set_fmt(&once, "task-", 700);
    thrice.n = 3 * once.n;
    for (size_t i = 0; i < once.n; i++) { /* every key three times, in three orders */
        thrice.keys[i] = once.keys[i];
        thrice.keys[once.n + i] = once.keys[once.n - 1 - i];
        thrice.keys[2 * once.n + i] = once.keys[(i + 350) % once.n];
    }
    assert_int_equal(rd_assign(r, 1100, once.keys, once.n, a), 0);
    assert_int_equal(rd_assign(r, 1100, thrice.keys, thrice.n, b), 0);
    for (size_t i = 0; i < once.n; i++) {
        assert_int_equal(b[i], a[i]);
        assert_int_equal(b[once.n + i], a[once.n - 1 - i]);
        assert_int_equal(b[2 * once.n + i], a[(i + 350) % once.n]);
    }
    /* the same key sent alone many times is one key on its owner */
    struct rd_assign_key same[5];
    int out[5];
    for (size_t i = 0; i < 5; i++)
        same[i] = (struct rd_assign_key){"k", 1};
    assert_int_equal(rd_assign(r, 1001, same, 5, out), 0);
    for (size_t i = 0; i < 5; i++)
        assert_int_equal(out[i], rd_ring_owner(r, "k", 1));
    rd_ring_delete(r);
}

/* With caps of every key for every member, nobody is ever full: the plain owners. */
static void test_assign_with_large_c_gives_the_plain_owners(void **state)
{
    (void)state;
    static struct set s;
    static int out[KEYS_MAX];
    struct rd_ring *r = ring_fmt("host-%d", 50, NULL, 512);
    set_fmt(&s, "shard:", 2000);
    assert_int_equal(rd_assign(r, 50000, s.keys, s.n, out), 0); /* c = 50 = W / w */
    for (size_t i = 0; i < s.n; i++)
        assert_int_equal(out[i], rd_ring_owner(r, s.keys[i].ptr, s.keys[i].len));
    assert_int_equal(rd_assign(r, RD_ASSIGN_C_MAX, s.keys, s.n, out), 0);
    for (size_t i = 0; i < s.n; i++)
        assert_int_equal(out[i], rd_ring_owner(r, s.keys[i].ptr, s.keys[i].len));
    /* and with a tight c some keys do leave their owner, yet none goes above 22 */
    assert_int_equal(rd_assign(r, 1100, s.keys, s.n, out), 0);
    size_t moved = 0, load[50] = {0};
    for (size_t i = 0; i < s.n; i++) {
        moved += out[i] != rd_ring_owner(r, s.keys[i].ptr, s.keys[i].len);
        load[out[i]]++;
    }
    print_message("c 1.1: %zu of %zu keys away from their owner\n", moved, s.n);
    assert_true(moved > 0);
    for (size_t m = 0; m < 50; m++)
        assert_true(load[m] <= 44); /* ceil(1.1 x 2000 / 50) = 44 */
    rd_ring_delete(r);
}

/* The point walk starts where OWNER looks: the accessors agree with rd_ring_owner. */
static void test_assign_key_point_is_where_owner_looks(void **state)
{
    (void)state;
    struct rd_ring *r = ring_fmt("m%d", 9, NULL, 16);
    char key[16];
    for (int i = 0; i < 10000; i++) {
        int len = snprintf(key, sizeof key, "k%d", i);
        long p = rd_ring_key_point(r, key, (size_t)len);
        assert_true(p >= 0 && (size_t)p < rd_ring_point_count(r));
        assert_int_equal(rd_ring_point_member(r, (size_t)p), rd_ring_owner(r, key, (size_t)len));
    }
    assert_int_equal(rd_ring_point_member(r, rd_ring_point_count(r)), UINT32_MAX);
    assert_int_equal(rd_ring_key_point(NULL, "k", 1), -1);
    rd_ring_delete(r);
}

/* ---- edges -------------------------------------------------------------------------------- */

static void test_assign_on_an_empty_ring_answers_nobody(void **state)
{
    (void)state;
    struct rd_ring *empty = ring_fmt("m%d", 0, NULL, 64);
    struct rd_assign_key keys[] = {{"a", 1}, {"b", 1}, {"a", 1}};
    int out[3] = {5, 5, 5};
    assert_int_equal(rd_assign(empty, 1250, keys, 3, out), 0);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(out[i], -1);
    out[0] = 5;
    assert_int_equal(rd_assign(NULL, 1250, keys, 1, out), 0);
    assert_int_equal(out[0], -1);
    assert_int_equal(rd_assign(empty, 1000, keys, 3, out), RD_EINVAL); /* c is checked first */
    rd_ring_delete(empty);
}

static void test_assign_with_one_member_gives_it_every_key(void **state)
{
    (void)state;
    static struct set s;
    static int out[KEYS_MAX];
    struct rd_ring *r = ring_fmt("alone-%d", 1, (const uint32_t[]){1}, 1); /* 1 point */
    set_fmt(&s, "k", 3000);
    assert_int_equal(rd_assign(r, RD_ASSIGN_C_MIN, s.keys, s.n, out), 0);
    for (size_t i = 0; i < s.n; i++)
        assert_int_equal(out[i], 0);
    rd_ring_delete(r);
}

/* A ketama ring can give a member no point (a tiny weight share): the walk never meets it,
 * so its weight must not lower the caps of the members that do take the keys. */
static void test_assign_leaves_a_pointless_ketama_member_out_of_the_caps(void **state)
{
    (void)state;
    static struct set s;
    static int out[KEYS_MAX];
    struct rd_ring_member m[] = {
        {"heavy", 100 * RD_WEIGHT_ONE, NULL, NULL},
        {"light", 1 * RD_WEIGHT_ONE, NULL, NULL},
    };
    struct rd_ring *r;
    assert_int_equal(rd_ring_new_ketama(m, 2, &r), 0);
    assert_int_equal(rd_ring_member_points(r, 1), 0);
    set_fmt(&s, "k", 1000); /* c = 1.001: heavy's cap counting light's weight would be 992 */
    assert_int_equal(rd_assign(r, RD_ASSIGN_C_MIN, s.keys, s.n, out), 0);
    for (size_t i = 0; i < s.n; i++)
        assert_int_equal(out[i], 0);
    rd_ring_delete(r);
}

/* A full member's keys walk on to the next member clockwise with room, even when that is
 * most of a turn away: two members of one point each, whose arcs split the keys unevenly. */
static void test_assign_walks_past_full_members(void **state)
{
    (void)state;
    static struct set s;
    static int out[KEYS_MAX];
    struct rd_ring *r = ring_fmt("w%d", 2, NULL, 1);
    set_fmt(&s, "job-", 1000);
    size_t plain[2] = {0}, load[2] = {0};
    for (size_t i = 0; i < s.n; i++)
        plain[rd_ring_owner(r, s.keys[i].ptr, s.keys[i].len)]++;
    int big = plain[1] > plain[0];
    print_message("plain owners %zu %zu\n", plain[0], plain[1]);
    assert_true(plain[big] > 550); /* the scenario: one arc holds more than the cap */
    assert_int_equal(rd_assign(r, 1100, s.keys, s.n, out), 0);
    for (size_t i = 0; i < s.n; i++) {
        load[out[i]]++;
        /* only the full member's keys move, and only to the other one */
        if (out[i] != rd_ring_owner(r, s.keys[i].ptr, s.keys[i].len))
            assert_int_equal(out[i], !big);
    }
    print_message("assigned %zu %zu (caps 550 550)\n", load[0], load[1]);
    assert_int_equal(load[big], 550); /* ceil(1.1 x 1000 / 2): filled to the cap exactly */
    assert_int_equal(load[!big], 450);
    check_result(r, 1100, s.keys, s.n, out);
    rd_ring_delete(r);
}

static void test_assign_refuses_bad_input(void **state)
{
    (void)state;
    struct rd_ring *r = ring_fmt("m%d", 3, NULL, 8);
    struct rd_assign_key keys[] = {{"a", 1}};
    int out[1] = {42};
    assert_int_equal(rd_assign(r, 1000, keys, 1, out), RD_EINVAL); /* c = 1 */
    assert_int_equal(rd_assign(r, 0, keys, 1, out), RD_EINVAL);
    assert_int_equal(rd_assign(r, RD_ASSIGN_C_MAX + 1, keys, 1, out), RD_EINVAL);
    assert_int_equal(rd_assign(r, 1250, NULL, 1, out), RD_EINVAL);
    assert_int_equal(rd_assign(r, 1250, keys, 1, NULL), RD_EINVAL);
    /* the count is checked before a key is read */
    assert_int_equal(rd_assign(r, 1250, keys, RD_ASSIGN_KEYS_MAX + 1, out), RD_E2BIG);
    assert_int_equal(out[0], 42);                           /* untouched on failure */
    assert_int_equal(rd_assign(r, 1250, NULL, 0, NULL), 0); /* nothing to assign */
    rd_ring_delete(r);
}

/* ---- PROTOCOL.md's vectors ---------------------------------------------------------------- */

/* proto/PROTOCOL.md, read from the source tree beside this file. */
static char *protocol_text(void)
{
    char path[1024];
    snprintf(path, sizeof path, "%s", __FILE__);
    char *slash = strrchr(path, '/');
    assert_non_null(slash);
    snprintf(slash, sizeof path - (size_t)(slash - path), "/../../proto/PROTOCOL.md");
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    return text;
}

/* One vector line as PROTOCOL.md prints it: "ASSIGN c k... -> m..." for members named m%d. */
static void vector_line(char *line, size_t cap, const char *c_text, const struct set *s,
                        const struct rd_ring *r, const int *out)
{
    size_t len = (size_t)snprintf(line, cap, "ASSIGN %s", c_text);
    for (size_t i = 0; i < s->n; i++)
        len += (size_t)snprintf(line + len, cap - len, " %s", s->text[i]);
    len += (size_t)snprintf(line + len, cap - len, " ->");
    for (size_t i = 0; i < s->n; i++)
        len +=
            (size_t)snprintf(line + len, cap - len, " %s", rd_ring_member_name(r, (size_t)out[i]));
}

static void test_assign_protocol_vectors(void **state)
{
    (void)state;
    const char *text = protocol_text();
    /* members n0..n4 of weight 1 (n4: 2), vnodes 16; keys k0..k11 */
    uint32_t w[5] = {RD_WEIGHT_ONE, RD_WEIGHT_ONE, RD_WEIGHT_ONE, RD_WEIGHT_ONE, 2 * RD_WEIGHT_ONE};
    struct rd_ring *r = ring_fmt("n%d", 5, w, 2);
    static struct set s;
    set_fmt(&s, "k", 16);
    int missing = 0;
    static const struct {
        const char *c_text;
        uint32_t c;
    } vectors[] = {{"1.001", 1001}, {"1.25", 1250}, {"2", 2000}, {"1000", 1000000}};
    for (size_t v = 0; v < sizeof vectors / sizeof vectors[0]; v++) {
        int out[16], want[16];
        assert_int_equal(rd_assign(r, vectors[v].c, s.keys, s.n, out), 0);
        reference(r, vectors[v].c, s.keys, s.n, want);
        assert_memory_equal(out, want, sizeof out);
        char line[512];
        vector_line(line, sizeof line, vectors[v].c_text, &s, r, out);
        print_message("%s\n", line);
        missing += strstr(text, line) == NULL;
    }
    /* the plain owners of the same keys, which c = 1000 must equal */
    char owners[512];
    size_t len = (size_t)snprintf(owners, sizeof owners, "MOWNER");
    for (size_t i = 0; i < s.n; i++)
        len += (size_t)snprintf(owners + len, sizeof owners - len, " %s", s.text[i]);
    len += (size_t)snprintf(owners + len, sizeof owners - len, " ->");
    for (size_t i = 0; i < s.n; i++)
        len += (size_t)snprintf(
            owners + len, sizeof owners - len, " %s",
            rd_ring_member_name(r, (size_t)rd_ring_owner(r, s.text[i], strlen(s.text[i]))));
    print_message("%s\n", owners);
    missing += strstr(text, owners) == NULL;
    rd_ring_delete(r);
    assert_int_equal(missing, 0); /* every line printed above is in PROTOCOL.md, verbatim */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_assign_parse_c_takes_up_to_three_decimals_above_one),
        cmocka_unit_test(test_assign_cap_is_the_exact_integer_ceiling),
        cmocka_unit_test(test_assign_respects_caps_and_matches_the_reference),
        cmocka_unit_test(test_assign_does_not_depend_on_the_order_of_the_keys),
        cmocka_unit_test(test_assign_counts_equal_keys_once),
        cmocka_unit_test(test_assign_with_large_c_gives_the_plain_owners),
        cmocka_unit_test(test_assign_key_point_is_where_owner_looks),
        cmocka_unit_test(test_assign_on_an_empty_ring_answers_nobody),
        cmocka_unit_test(test_assign_with_one_member_gives_it_every_key),
        cmocka_unit_test(test_assign_leaves_a_pointless_ketama_member_out_of_the_caps),
        cmocka_unit_test(test_assign_walks_past_full_members),
        cmocka_unit_test(test_assign_refuses_bad_input),
        cmocka_unit_test(test_assign_protocol_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
