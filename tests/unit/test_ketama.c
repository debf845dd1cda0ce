/*
 * test_ketama.c — ketama mode (rd_ring_new_ketama, lib/ketama.c), as scenarios.
 *
 * The vectors are those of proto/PROTOCOL.md, "Ketama mode", computed by a separate script
 * from the written rule with Python's hashlib (tests/compat/ketama_libmemcached.c checks the
 * same rule against libmemcached itself). Then the rule's parts one by one (the hashed
 * server string, libmemcached's float point counts, plain versus weighted continuums), the
 * lookups against a brute-force continuum built here from the points alone, ties, and the
 * input that must be refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ketama.h"
#include "rd_err.h"
#include "ring.h"
#include "ring_internal.h"

#define NKEYS 20000

/* The three servers of PROTOCOL.md's vectors. */
static const struct rd_ring_member vector_members[] = {
    {"cache-a", 1 * RD_WEIGHT_ONE, NULL, "10.0.0.1:11211"},
    {"cache-b", 1 * RD_WEIGHT_ONE, NULL, "10.0.0.2:11211"},
    {"cache-c", 1 * RD_WEIGHT_ONE, NULL, "10.0.0.3:11212"},
};

static const char *owner_name(const struct rd_ring *r, const char *key)
{
    int o = rd_ring_owner(r, key, strlen(key));
    return o < 0 ? "" : rd_ring_member_name(r, (size_t)o);
}

/* ---- the rule's parts --------------------------------------------------------------------- */

static void test_ketama_key_hash_is_md5_first_four_bytes_little_endian(void **state)
{
    /* MD5("") = d41d8cd9..., MD5("hello") = 5d41402a... */
    assert_int_equal(rd_ketama_key_hash("", 0), 0xd98c1dd4u);
    assert_int_equal(rd_ketama_key_hash("hello", 5), 0x2a40415du);
}

static void test_ketama_a_trailing_default_port_is_not_hashed(void **state)
{
    static const struct {
        const char *id;
        size_t hashed;
    } cases[] = {
        {"10.0.0.1:11211", 8},  /* host on the default port: "10.0.0.1" */
        {"10.0.0.1:11212", 14}, /* any other port stays */
        {"cache-a", 7},         /* a bare host is on the default port already */
        {"h:11211:11211", 7},   /* host "h:11211" on the default port */
        {":11211", 6},          /* nothing would be left: hashed as it is */
        {"a:111211", 8},        /* not the default port */
        {"x11211", 6},          /* no ':' before it */
        {"fd00::1", 7},         /* a bare IPv6 address */
        {"fd00::1:11211", 7},   /* ... on the default port */
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        assert_int_equal(rd_ketama_hashed_len(cases[k].id, strlen(cases[k].id)), cases[k].hashed);
}

static void test_ketama_plain_points_are_one_md5_each_and_weighted_four(void **state)
{
    uint32_t v[8];
    rd_ketama_points("10.0.0.1", 8, false, 0, 1, v);
    assert_int_equal(v[0], 0x2194783cu); /* MD5("10.0.0.1-0"), first four bytes */
    /* weighted: the four words of MD5("10.0.0.3:11212-0"), then those of "...-1" */
    rd_ketama_points("10.0.0.3:11212", 14, true, 0, 8, v);
    assert_int_equal(v[0], 0x0038906bu);
    assert_int_equal(v[1], 0x901937a6u);
    assert_int_equal(v[2], 0x4b190c65u);
    assert_int_equal(v[3], 0x2e809329u);
    /* a batch may start and end inside a digest's four points */
    uint32_t w[5];
    rd_ketama_points("10.0.0.3:11212", 14, true, 2, 5, w);
    assert_memory_equal(w, v + 2, sizeof w);
    /* plain point i is weighted point 4i: the same digest's first word */
    uint32_t p1, w4;
    rd_ketama_points("10.0.0.3:11212", 14, false, 1, 1, &p1);
    rd_ketama_points("10.0.0.3:11212", 14, true, 4, 1, &w4);
    assert_int_equal(p1, w4);
}

static void test_ketama_weighted_counts_follow_libmemcached_float_arithmetic(void **state)
{
    /* An even share is 160 points exactly... */
    assert_int_equal(rd_ketama_weighted_points(1, 3, 3), 160);
    assert_int_equal(rd_ketama_weighted_points(1, 10, 10), 160);
    /* ...except where the single-precision chain falls short: 39.99999 -> 39 * 4 */
    assert_int_equal(rd_ketama_weighted_points(1, 50, 50), 156);
    assert_int_equal(rd_ketama_weighted_points(1, 100, 100), 156);
    assert_int_equal(rd_ketama_weighted_points(2, 100, 50), 156); /* only the share counts */
    /* shares: floor(w / total * 40 * n) * 4 */
    assert_int_equal(rd_ketama_weighted_points(1, 3, 2), 104);
    assert_int_equal(rd_ketama_weighted_points(2, 3, 2), 212);
    assert_int_equal(rd_ketama_weighted_points(1, 6, 3), 80);
    assert_int_equal(rd_ketama_weighted_points(3, 6, 3), 240);
    /* a light server can get nothing */
    assert_int_equal(rd_ketama_weighted_points(1, 101, 2), 0);
    assert_int_equal(rd_ketama_weighted_points(1, 0, 1), 0);
}

/* ---- the ring -------------------------------------------------------------------------------- */

static void test_ketama_vectors_match_the_protocol_document(void **state)
{
    struct rd_ring *r;
    assert_int_equal(rd_ring_new_ketama(vector_members, 3, &r), 0);
    assert_int_equal(rd_ring_mode(r), RD_RING_MODE_KETAMA);
    assert_int_equal(rd_ring_vnodes(r), 0);
    assert_int_equal(rd_ring_point_count(r), 300);
    assert_string_equal(owner_name(r, "foo"), "cache-c");
    assert_string_equal(owner_name(r, "bar"), "cache-b");
    assert_string_equal(owner_name(r, "hello"), "cache-c");
    assert_string_equal(owner_name(r, "user:1000"), "cache-c");
    assert_string_equal(owner_name(r, "session:42"), "cache-a");
    assert_true(rd_ring_checksum(r) == UINT64_C(0x0ef035cfac2f50d7));
    rd_ring_delete(r);

    struct rd_ring_member w[3];
    memcpy(w, vector_members, sizeof w);
    w[1].weight = 2 * RD_WEIGHT_ONE;
    w[2].weight = 3 * RD_WEIGHT_ONE;
    assert_int_equal(rd_ring_new_ketama(w, 3, &r), 0);
    assert_int_equal(rd_ring_member_points(r, 0), 80);
    assert_int_equal(rd_ring_member_points(r, 1), 160);
    assert_int_equal(rd_ring_member_points(r, 2), 240);
    assert_string_equal(owner_name(r, "foo"), "cache-b");
    assert_string_equal(owner_name(r, "bar"), "cache-b");
    assert_string_equal(owner_name(r, "hello"), "cache-b");
    assert_string_equal(owner_name(r, "user:1000"), "cache-c");
    assert_string_equal(owner_name(r, "session:42"), "cache-c");
    assert_true(rd_ring_checksum(r) == UINT64_C(0xbb8f97a0a368d098));
    rd_ring_delete(r);
}

static void test_ketama_every_weight_one_is_the_plain_continuum_and_any_above_weighs(void **state)
{
    struct rd_ring_member m[3];
    memcpy(m, vector_members, sizeof m);
    struct rd_ring *plain, *even;
    assert_int_equal(rd_ring_new_ketama(m, 3, &plain), 0);
    for (size_t k = 0; k < 3; k++)
        assert_int_equal(rd_ring_member_points(plain, k), RD_KETAMA_POINTS_PLAIN);
    /* every weight 2: the same shares, but libmemcached's weighted continuum */
    for (size_t k = 0; k < 3; k++)
        m[k].weight = 2 * RD_WEIGHT_ONE;
    assert_int_equal(rd_ring_new_ketama(m, 3, &even), 0);
    for (size_t k = 0; k < 3; k++)
        assert_int_equal(rd_ring_member_points(even, k), RD_KETAMA_POINTS_WEIGHTED);
    /* a different continuum: some keys land elsewhere */
    size_t differ = 0;
    char key[32];
    for (int i = 0; i < NKEYS; i++) {
        snprintf(key, sizeof key, "k%d", i);
        differ += rd_ring_owner(plain, key, strlen(key)) != rd_ring_owner(even, key, strlen(key));
    }
    printf("# plain vs weighted continuum of 3 equal servers: %zu of %d keys differ\n", differ,
           NKEYS);
    assert_true(differ > NKEYS / 10);
    rd_ring_delete(plain);
    rd_ring_delete(even);
}

/* The continuum as libmemcached's lookup reads it, built from the points alone. */
struct ref_point {
    uint32_t v, idx;
};

static int cmp_ref(const void *a, const void *b)
{
    const struct ref_point *x = a, *y = b;
    if (x->v != y->v) return x->v < y->v ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static void test_ketama_lookups_match_a_brute_force_continuum(void **state)
{
    srand(7);
    printf("# seed 7\n");
    for (int round = 0; round < 20; round++) {
        size_t n = 1 + (size_t)rand() % 40;
        bool weighted = round % 2;
        char names[40][24], ids[40][64];
        struct rd_ring_member m[40];
        uint64_t total = 0;
        for (size_t k = 0; k < n; k++) {
            snprintf(names[k], sizeof names[k], "n%02zu", k); /* name order = index order */
            snprintf(ids[k], sizeof ids[k], "10.%d.%zu.1:%d", round, k, k % 2 ? 11211 : 11300);
            uint32_t w = weighted ? 1 + (uint32_t)rand() % 9 : 1;
            total += w;
            m[k] = (struct rd_ring_member){names[k], w * RD_WEIGHT_ONE, NULL, ids[k]};
        }
        weighted = false;
        for (size_t k = 0; k < n; k++)
            weighted |= m[k].weight > RD_WEIGHT_ONE;
        struct ref_point *ref = malloc(n * 200 * sizeof *ref);
        size_t np = 0;
        for (size_t k = 0; k < n; k++) {
            uint32_t cnt = weighted ? rd_ketama_weighted_points(m[k].weight / RD_WEIGHT_ONE, total,
                                                                (uint32_t)n)
                                    : RD_KETAMA_POINTS_PLAIN;
            static uint32_t v[RD_KETAMA_POINTS_WEIGHTED * 40];
            size_t len = strlen(ids[k]);
            rd_ketama_points(ids[k], rd_ketama_hashed_len(ids[k], len), weighted, 0, cnt, v);
            for (uint32_t i = 0; i < cnt; i++)
                ref[np++] = (struct ref_point){v[i], (uint32_t)k};
        }
        qsort(ref, np, sizeof *ref, cmp_ref);
        struct rd_ring *r;
        assert_int_equal(rd_ring_new_ketama(m, n, &r), 0);
        assert_int_equal(rd_ring_point_count(r), np);
        char key[32];
        for (int i = 0; i < 2000; i++) {
            int len = snprintf(key, sizeof key, "r%d-%d", round, i);
            uint32_t h = rd_ketama_key_hash(key, (size_t)len);
            size_t j = 0;
            while (j < np && ref[j].v < h)
                j++;
            uint32_t want = ref[j == np ? 0 : j].idx;
            assert_int_equal(rd_ring_owner(r, key, (size_t)len), (int)want);
            assert_true(rd_ring_key_position(r, key, (size_t)len) == (uint64_t)h << 32);
        }
        free(ref);
        rd_ring_delete(r);
    }
}

static void test_ketama_equal_points_go_to_the_smaller_name(void **state)
{
    /* "x" and "x:11211" are one libmemcached server: every point of the one is a point of
     * the other, and each goes to the member whose name sorts first, whatever the order. */
    struct rd_ring_member m[] = {
        {"zed", RD_WEIGHT_ONE, NULL, "x"},
        {"amy", RD_WEIGHT_ONE, NULL, "x:11211"},
        {"kim", RD_WEIGHT_ONE, NULL, "y"},
    };
    struct rd_ring *r;
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), 0);
    char key[32];
    size_t zed = 0, amy = 0;
    for (int i = 0; i < NKEYS; i++) {
        snprintf(key, sizeof key, "t%d", i);
        const char *o = owner_name(r, key);
        zed += strcmp(o, "zed") == 0;
        amy += strcmp(o, "amy") == 0;
    }
    assert_int_equal(zed, 0);
    assert_true(amy > NKEYS / 4);
    rd_ring_delete(r);
}

static void test_ketama_a_member_with_no_point_owns_nothing(void **state)
{
    struct rd_ring_member m[] = {
        {"heavy", 100 * RD_WEIGHT_ONE, NULL, "10.0.0.1"},
        {"light", 1 * RD_WEIGHT_ONE, NULL, "10.0.0.2"},
    };
    struct rd_ring *r;
    assert_int_equal(rd_ring_new_ketama(m, 2, &r), 0);
    assert_int_equal(rd_ring_member_count(r), 2);
    assert_int_equal(rd_ring_member_points(r, 1), 0); /* "light" */
    uint32_t out[2];
    assert_int_equal(rd_ring_owners(r, "k", 1, 2, out), 1);
    assert_string_equal(rd_ring_member_name(r, out[0]), "heavy");
    rd_ring_delete(r);
}

/* Zone-aware replicas place each rank's members at fixed offsets of the answer; a member
 * without a point is never met, so it must hold no place there (else a hole is returned). */
static void test_ketama_a_pointless_member_takes_no_zone_place(void **state)
{
    (void)state;
    struct rd_ring_member m[] = {
        {"p", 1 * RD_WEIGHT_ONE, NULL, "10.0.0.1"},
        {"u", 100 * RD_WEIGHT_ONE, "a", "10.0.0.2"},
        {"y", 100 * RD_WEIGHT_ONE, "a", "10.0.0.3"},
    };
    struct rd_ring *r;
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), 0);
    assert_int_equal(rd_ring_member_points(r, 0), 0); /* "p" */
    for (int k = 0; k < 200; k++) {
        char key[16];
        int len = snprintf(key, sizeof key, "key%d", k);
        uint32_t out[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
        assert_int_equal(rd_ring_owners(r, key, (size_t)len, 3, out), 2);
        assert_true(out[0] != out[1]);
        assert_true(out[0] == 1 || out[0] == 2);
        assert_true(out[1] == 1 || out[1] == 2);
        assert_int_equal(out[0], (uint32_t)rd_ring_owner(r, key, (size_t)len));
    }
    rd_ring_delete(r);
}

static void test_ketama_checksum_differs_from_ringd_mode_and_ignores_order(void **state)
{
    struct rd_ring *k1, *k2, *rd;
    struct rd_ring_member rev[3] = {vector_members[2], vector_members[0], vector_members[1]};
    assert_int_equal(rd_ring_new_ketama(vector_members, 3, &k1), 0);
    assert_int_equal(rd_ring_new_ketama(rev, 3, &k2), 0);
    assert_int_equal(rd_ring_new(vector_members, 3, 100, &rd), 0); /* even the same points */
    assert_true(rd_ring_checksum(k1) == rd_ring_checksum(k2));
    assert_true(rd_ring_checksum(k1) != rd_ring_checksum(rd));
    assert_int_equal(rd_ring_mode(rd), RD_RING_MODE_RINGD);
    /* the identity is part of it */
    struct rd_ring_member other[3];
    memcpy(other, vector_members, sizeof other);
    other[0].identity = "10.0.0.9:11211";
    struct rd_ring *k3;
    assert_int_equal(rd_ring_new_ketama(other, 3, &k3), 0);
    assert_true(rd_ring_checksum(k1) != rd_ring_checksum(k3));
    /* and a key sits elsewhere than in ringd mode */
    assert_true(rd_ring_key_position(k1, "foo", 3) != rd_ring_key_position(rd, "foo", 3));
    assert_true(rd_ring_key_position(rd, "foo", 3) == rd_ring_key_hash("foo", 3));
    assert_true(rd_ring_key_position(NULL, "foo", 3) == rd_ring_key_hash("foo", 3));
    rd_ring_delete(k1);
    rd_ring_delete(k2);
    rd_ring_delete(k3);
    rd_ring_delete(rd);
}

static void test_ketama_diff_measures_what_a_join_moved(void **state)
{
    char names[11][8], ids[11][24];
    struct rd_ring_member m[11];
    for (int k = 0; k < 11; k++) {
        snprintf(names[k], sizeof names[k], "s%02d", k);
        snprintf(ids[k], sizeof ids[k], "10.0.0.%d:11211", k + 1);
        m[k] = (struct rd_ring_member){names[k], RD_WEIGHT_ONE, NULL, ids[k]};
    }
    struct rd_ring *before, *after;
    assert_int_equal(rd_ring_new_ketama(m, 10, &before), 0);
    assert_int_equal(rd_ring_new_ketama(m, 11, &after), 0);
    struct rd_ring_diff d;
    assert_int_equal(rd_ring_diff(before, after, &d), 0);
    size_t moved = 0, to_new = 0;
    char key[32];
    for (int i = 0; i < NKEYS; i++) {
        int len = snprintf(key, sizeof key, "d%d", i);
        int a = rd_ring_owner(before, key, (size_t)len), b = rd_ring_owner(after, key, (size_t)len);
        if (strcmp(rd_ring_member_name(before, (size_t)a), rd_ring_member_name(after, (size_t)b))) {
            moved++;
            to_new += strcmp(rd_ring_member_name(after, (size_t)b), "s10") == 0;
        }
    }
    double counted = (double)moved / NKEYS;
    printf("# join of an 11th server: diff %.4f, counted %.4f\n", d.moved, counted);
    assert_int_equal(moved, to_new); /* plain continuum: keys move only to the newcomer */
    assert_true(counted > d.moved - 0.01 && counted < d.moved + 0.01);
    rd_ring_diff_destroy(&d);
    rd_ring_delete(before);
    rd_ring_delete(after);
}

/* ---- refusals ---------------------------------------------------------------------------- */

static void test_ketama_refuses_fractional_weights(void **state)
{
    struct rd_ring_member m[3];
    memcpy(m, vector_members, sizeof m);
    struct rd_ring *r = (struct rd_ring *)&m; /* must be reset to NULL on failure */
    m[1].weight = 1500;
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), RD_EINVAL);
    assert_null(r);
    m[1].weight = 999;
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), RD_EINVAL);
    m[1].weight = 1;
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), RD_EINVAL);
    m[1].weight = 0;
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), RD_EINVAL);
    m[1].weight = RD_WEIGHT_MAX + RD_WEIGHT_ONE;
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), RD_EINVAL);
    /* the same weight is fine in ringd mode */
    m[1].weight = 1500;
    assert_int_equal(rd_ring_new(m, 3, 64, &r), 0);
    rd_ring_delete(r);
    m[1].weight = RD_WEIGHT_MAX;
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), 0);
    rd_ring_delete(r);
}

static void test_ketama_refuses_bad_identities_names_and_arguments(void **state)
{
    char longest[RD_RING_IDENTITY_MAX + 2];
    memset(longest, 'h', sizeof longest);
    longest[RD_RING_IDENTITY_MAX + 1] = '\0';
    static const char *const bad[] = {"",     "10.0.0.1 11211", "tab\there", "nl\n",
                                      "\x7f", "caf\xc3\xa9",    "ctl\x01"};
    struct rd_ring_member m[3];
    struct rd_ring *r;
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        memcpy(m, vector_members, sizeof m);
        m[2].identity = bad[k];
        assert_int_equal(rd_ring_new_ketama(m, 3, &r), RD_EINVAL);
    }
    memcpy(m, vector_members, sizeof m);
    m[0].identity = longest; /* 256 bytes */
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), RD_EINVAL);
    longest[RD_RING_IDENTITY_MAX] = '\0'; /* 255: the longest allowed */
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), 0);
    rd_ring_delete(r);
    memcpy(m, vector_members, sizeof m);
    m[1].name = "bad name";
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), RD_EINVAL);
    m[1].name = "cache-a";
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), RD_EEXIST);
    assert_int_equal(rd_ring_new_ketama(NULL, 1, &r), RD_EINVAL);
    assert_int_equal(rd_ring_new_ketama(vector_members, 3, NULL), RD_EINVAL);
    /* no identity: the name is the server */
    memcpy(m, vector_members, sizeof m);
    m[0].identity = NULL;
    assert_int_equal(rd_ring_new_ketama(m, 3, &r), 0);
    assert_string_equal(rd_ring_member_identity(r, 0), "cache-a");
    rd_ring_delete(r);
    /* the empty ring owns nothing */
    assert_int_equal(rd_ring_new_ketama(NULL, 0, &r), 0);
    assert_int_equal(rd_ring_owner(r, "k", 1), -1);
    assert_int_equal(rd_ring_checksum(r), 0);
    rd_ring_delete(r);
}

static void test_ketama_too_many_members_is_e2big(void **state)
{
    size_t n = RD_RING_MAX_POINTS / RD_KETAMA_POINTS_WEIGHTED + 1;
    struct rd_ring_member *m = calloc(n, sizeof *m);
    assert_non_null(m);
    for (size_t k = 0; k < n; k++)
        m[k] = (struct rd_ring_member){"same", RD_WEIGHT_ONE, NULL, NULL};
    struct rd_ring *r;
    assert_int_equal(rd_ring_new_ketama(m, n, &r), RD_E2BIG);
    free(m);
}

struct fail_after {
    int left;
};

static void *failing_alloc(size_t size, void *ctx)
{
    struct fail_after *f = ctx;
    if (f->left-- <= 0) return NULL;
    return malloc(size);
}

static void test_ketama_every_allocation_failure_is_enomem_and_leaks_nothing(void **state)
{
    int ok_at = -1;
    for (int k = 0; k < 16 && ok_at < 0; k++) {
        struct fail_after f = {k};
        struct rd_ring_hooks h = {NULL, failing_alloc, &f, NULL};
        struct rd_ring *r;
        int rc = rd_ring_new_ketama_with(vector_members, 3, &h, &r);
        if (rc == 0) {
            ok_at = k;
            assert_string_equal(owner_name(r, "foo"), "cache-c");
            rd_ring_delete(r);
        } else {
            assert_int_equal(rc, RD_ENOMEM);
            assert_null(r);
        }
    }
    assert_true(ok_at > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ketama_key_hash_is_md5_first_four_bytes_little_endian),
        cmocka_unit_test(test_ketama_a_trailing_default_port_is_not_hashed),
        cmocka_unit_test(test_ketama_plain_points_are_one_md5_each_and_weighted_four),
        cmocka_unit_test(test_ketama_weighted_counts_follow_libmemcached_float_arithmetic),
        cmocka_unit_test(test_ketama_vectors_match_the_protocol_document),
        cmocka_unit_test(test_ketama_every_weight_one_is_the_plain_continuum_and_any_above_weighs),
        cmocka_unit_test(test_ketama_lookups_match_a_brute_force_continuum),
        cmocka_unit_test(test_ketama_equal_points_go_to_the_smaller_name),
        cmocka_unit_test(test_ketama_a_member_with_no_point_owns_nothing),
        cmocka_unit_test(test_ketama_a_pointless_member_takes_no_zone_place),
        cmocka_unit_test(test_ketama_checksum_differs_from_ringd_mode_and_ignores_order),
        cmocka_unit_test(test_ketama_diff_measures_what_a_join_moved),
        cmocka_unit_test(test_ketama_refuses_fractional_weights),
        cmocka_unit_test(test_ketama_refuses_bad_identities_names_and_arguments),
        cmocka_unit_test(test_ketama_too_many_members_is_e2big),
        cmocka_unit_test(test_ketama_every_allocation_failure_is_enomem_and_leaks_nothing),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
