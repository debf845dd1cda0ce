/*
 * test_strpool.c — the interned string pool (strpool.h) on its own.
 *
 * Scenarios first (the empty string, sharing, the last release, ids reused), then a seeded
 * run of random interns and releases over a small alphabet, so that strings collide, come
 * back after being freed and move through the index's backward shifts, compared after
 * every step with a plain array of (string, references). The seed is printed.
 */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rand.h"
#include "strpool.h"

static uint32_t intern(struct rd_strpool *p, const char *s)
{
    return rd_strpool_intern(p, s, strlen(s));
}

static void test_empty_string_is_id_zero_and_never_stored(void **state)
{
    (void)state;
    struct rd_strpool *p = rd_strpool_new();
    assert_non_null(p);
    assert_int_equal(intern(p, ""), 0);
    assert_string_equal(rd_strpool_str(p, 0), "");
    assert_int_equal(rd_strpool_len(p, 0), 0);
    rd_strpool_release(p, 0);
    assert_int_equal(rd_strpool_ref(p, 0), 0);
    assert_int_equal(rd_strpool_count(p), 0);
    rd_strpool_delete(p);
}

static void test_equal_strings_share_one_id_until_the_last_release(void **state)
{
    (void)state;
    struct rd_strpool *p = rd_strpool_new();
    uint32_t a = intern(p, "zone-a"), b = intern(p, "zone-b");
    assert_int_not_equal(a, b);
    assert_int_equal(intern(p, "zone-a"), a);
    assert_int_equal(rd_strpool_ref(p, a), a);
    assert_int_equal(rd_strpool_count(p), 2);
    /* a prefix, and the same bytes with a different length, are other strings */
    uint32_t prefix = rd_strpool_intern(p, "zone-a", 4);
    assert_int_not_equal(prefix, a);
    assert_string_equal(rd_strpool_str(p, prefix), "zone");
    assert_int_equal(rd_strpool_len(p, a), 6);
    rd_strpool_release(p, a);
    rd_strpool_release(p, a);
    assert_string_equal(rd_strpool_str(p, a), "zone-a"); /* one reference left */
    assert_int_equal(rd_strpool_count(p), 3);
    rd_strpool_release(p, a);
    assert_int_equal(rd_strpool_count(p), 2);
    /* the freed id is reused for the next new string, and the old one is new again */
    uint32_t c = intern(p, "zone-c");
    assert_int_equal(c, a);
    assert_string_equal(rd_strpool_str(p, c), "zone-c");
    uint32_t again = intern(p, "zone-a");
    assert_int_not_equal(again, c);
    assert_string_equal(rd_strpool_str(p, again), "zone-a");
    assert_string_equal(rd_strpool_str(p, b), "zone-b");
    rd_strpool_delete(p); /* with references left: frees everything */
}

static void test_many_strings_grow_the_index(void **state)
{
    (void)state;
    struct rd_strpool *p = rd_strpool_new();
    enum { N = 20000 };
    static uint32_t ids[N];
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "member-%d", i);
        ids[i] = intern(p, name);
        assert_int_not_equal(ids[i], RD_STRPOOL_NONE);
    }
    assert_int_equal(rd_strpool_count(p), N);
    size_t bytes = rd_strpool_bytes(p);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "member-%d", i);
        assert_int_equal(intern(p, name), ids[i]);
        assert_string_equal(rd_strpool_str(p, ids[i]), name);
    }
    assert_int_equal(rd_strpool_bytes(p), bytes); /* found again: nothing stored twice */
    for (int i = 0; i < N; i += 2) {
        rd_strpool_release(p, ids[i]);
        rd_strpool_release(p, ids[i]);
    }
    assert_int_equal(rd_strpool_count(p), N / 2);
    for (int i = 1; i < N; i += 2) {
        snprintf(name, sizeof name, "member-%d", i);
        assert_int_equal(intern(p, name), ids[i]);
    }
    rd_strpool_delete(p);
}

/* The model: what the pool should hold. */
#define WORDS 48
struct model {
    char text[WORDS][8];
    uint32_t id[WORDS];
    uint32_t refs[WORDS];
};

static void assert_matches(const struct rd_strpool *p, const struct model *m)
{
    size_t live = 0;
    for (int w = 0; w < WORDS; w++) {
        if (m->refs[w] == 0) continue;
        live++;
        assert_string_equal(rd_strpool_str(p, m->id[w]), m->text[w]);
        assert_int_equal(rd_strpool_len(p, m->id[w]), strlen(m->text[w]));
    }
    assert_int_equal(rd_strpool_count(p), live);
}

static void test_random_interns_and_releases_match_a_model(void **state)
{
    (void)state;
    uint64_t seed = 0x5eed5;
    const char *env = getenv("RD_TEST_SEED");
    if (env) seed = strtoull(env, NULL, 0);
    printf("# strpool seed %llu\n", (unsigned long long)seed);
    struct rd_rand rng;
    rd_rand_seed(&rng, seed);
    struct model m = {0};
    for (int w = 0; w < WORDS; w++) { /* distinct short words over 3 letters: prefixes */
        bool dup = true;
        while (dup) {
            memset(m.text[w], 0, sizeof m.text[w]);
            for (uint32_t k = 0, len = 1 + rd_rand_below(&rng, 6); k < len; k++)
                m.text[w][k] = (char)('a' + rd_rand_below(&rng, 3));
            dup = false;
            for (int v = 0; v < w; v++)
                dup = dup || strcmp(m.text[w], m.text[v]) == 0;
        }
    }
    struct rd_strpool *p = rd_strpool_new();
    for (int step = 0; step < 200000; step++) {
        int w = (int)rd_rand_below(&rng, WORDS);
        if (m.refs[w] > 0 && rd_rand_below(&rng, 2) == 0) {
            rd_strpool_release(p, m.id[w]);
            m.refs[w]--;
        } else {
            uint32_t id = intern(p, m.text[w]);
            assert_int_not_equal(id, RD_STRPOOL_NONE);
            if (m.refs[w] > 0) assert_int_equal(id, m.id[w]);
            for (int v = 0; v < WORDS; v++) /* no other live string has this id */
                if (v != w && m.refs[v] > 0) assert_int_not_equal(m.id[v], id);
            m.id[w] = id;
            m.refs[w]++;
        }
        if (step % 97 == 0) assert_matches(p, &m);
    }
    assert_matches(p, &m);
    rd_strpool_delete(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_string_is_id_zero_and_never_stored),
        cmocka_unit_test(test_equal_strings_share_one_id_until_the_last_release),
        cmocka_unit_test(test_many_strings_grow_the_index),
        cmocka_unit_test(test_random_interns_and_releases_match_a_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
