/*
 * test_namesort.c — names into bytewise order (namesort.h), against qsort() with strcmp().
 *
 * Scenarios first: the empty list, a prefix before its extensions at every length around
 * the 8-byte words, bytes above 0x7f, equal names in a small run and in a radix-sorted one.
 * Then seeded random lists in the shapes that stress a sort by words: fleets whose names
 * share long prefixes, small alphabets that tie word after word, every length from 1 to 64,
 * duplicates; each list is checked against the reference (a stable strcmp sort) index for
 * index, with the equal-names answer. The seed is printed; RD_TEST_SEED replays one.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "namesort.h"
#include "rand.h"

/* The reference order: strcmp, then input position, so that it is stable. */
static const char *const *ref_names;

static int cmp_ref(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(ref_names[x], ref_names[y]);
    return c ? c : (x > y) - (x < y);
}

/* Sorts names both ways and asserts the same order and the same answer on equal names. */
static void check(const char *const *names, size_t n)
{
    uint32_t *got = malloc((n ? n : 1) * sizeof *got), *want = malloc((n ? n : 1) * sizeof *want);
    void *scratch = malloc(rd_namesort_scratch(n) + 1);
    assert_non_null(got);
    assert_non_null(want);
    assert_non_null(scratch);
    bool equal = rd_namesort(names, n, got, scratch);
    for (size_t k = 0; k < n; k++)
        want[k] = (uint32_t)k;
    ref_names = names;
    qsort(want, n, sizeof *want, cmp_ref);
    bool want_equal = false;
    for (size_t k = 1; k < n; k++)
        want_equal |= strcmp(names[want[k - 1]], names[want[k]]) == 0;
    for (size_t k = 0; k < n; k++) {
        if (got[k] != want[k])
            fail_msg("position %zu of %zu: got \"%s\" (#%u), want \"%s\" (#%u)", k, n,
                     names[got[k]], got[k], names[want[k]], want[k]);
    }
    assert_int_equal(equal, want_equal);
    free(got);
    free(want);
    free(scratch);
}

static void test_empty_and_one(void **state)
{
    (void)state;
    uint32_t order[1] = {7};
    assert_false(rd_namesort(NULL, 0, order, NULL));
    assert_int_equal(order[0], 7);
    const char *one[] = {"solo"};
    check(one, 1);
}

static void test_a_prefix_sorts_before_its_extensions_across_word_edges(void **state)
{
    (void)state;
    /* lengths 6 to 17 of one name, around the edges of the first two words, shuffled */
    const char *names[] = {"abcdefghijklmnop",
                           "abcdefg",
                           "abcdefghij",
                           "abcdefgh",
                           "abcdefghijklmnopq",
                           "abcdef",
                           "abcdefghi",
                           "abcdefghijklmno",
                           "abcdefgha",
                           "abcdefgg",
                           "abcdefgi",
                           "b",
                           "a",
                           "abcdefghijklmnoo"};
    size_t n = sizeof names / sizeof names[0];
    check(names, n);
    uint32_t order[sizeof names / sizeof names[0]];
    char scratch[4096];
    assert_true(rd_namesort_scratch(n) <= sizeof scratch);
    assert_false(rd_namesort(names, n, order, scratch));
    assert_string_equal(names[order[0]], "a");
    assert_string_equal(names[order[1]], "abcdef");
    assert_string_equal(names[order[2]], "abcdefg");
    assert_string_equal(names[order[3]], "abcdefgg");
    assert_string_equal(names[order[4]], "abcdefgh");
    assert_string_equal(names[order[n - 1]], "b");
}

static void test_bytes_above_0x7f_sort_after_ascii(void **state)
{
    (void)state;
    const char *names[] = {"z\xc3\xa9", "ze", "\xff", "z", "\x80", "~"};
    check(names, sizeof names / sizeof names[0]);
}

/* n names "member-<number>.dc1" (17 bytes: three words), `distinct` of them, shuffled. */
static const char **equal_names(size_t n, size_t distinct, char (*buf)[32])
{
    const char **names = malloc(n * sizeof *names);
    assert_non_null(names);
    for (size_t k = 0; k < n; k++) {
        snprintf(buf[k], sizeof buf[k], "member-%06zu.dc1", (k * 7919) % distinct);
        names[k] = buf[k];
    }
    return names;
}

static void test_equal_names_are_found_in_small_and_large_runs(void **state)
{
    (void)state;
    static char buf[2000][32];
    size_t sizes[] = {2, 5, 32, 33, 200, 2000};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        const char **names = equal_names(n, n, buf); /* all distinct */
        check(names, n);
        free(names);
        names = equal_names(n, n - 1, buf); /* one name twice */
        check(names, n);
        uint32_t *order = malloc(n * sizeof *order);
        void *scratch = malloc(rd_namesort_scratch(n));
        assert_true(rd_namesort(names, n, order, scratch));
        free(order);
        free(scratch);
        free(names);
    }
}

/* A random name of `shape`, into out[65] (1 to 64 bytes, as member names are). */
static void random_name(struct rd_rand *rng, int shape, char *out)
{
    switch (shape) {
    case 0: /* a fleet by number */
        snprintf(out, 65, "node-%u", rd_rand_below(rng, 5000));
        break;
    case 1: /* addresses */
        snprintf(out, 65, "10.%u.%u.%u:7946", rd_rand_below(rng, 3), rd_rand_below(rng, 40),
                 rd_rand_below(rng, 256));
        break;
    case 2: /* a long shared prefix and suffix */
        snprintf(out, 65, "ringd-agent-%06u.eu-west-1.compute.internal", rd_rand_below(rng, 3000));
        break;
    default: { /* two letters, any length: ties at every depth, and prefixes */
        size_t len = 1 + rd_rand_below(rng, 64);
        for (size_t i = 0; i < len; i++)
            out[i] = rd_rand_below(rng, 8) ? 'a' : 'b';
        out[len] = '\0';
        break;
    }
    }
}

static void test_random_lists_sort_as_strcmp_does(void **state)
{
    (void)state;
    uint64_t seed = 0x4e414d45;
    const char *env = getenv("RD_TEST_SEED");
    if (env) seed = strtoull(env, NULL, 0);
    printf("# namesort seed %llu\n", (unsigned long long)seed);
    struct rd_rand rng;
    rd_rand_seed(&rng, seed);
    enum { MAX_N = 4000 };
    char(*buf)[65] = malloc(MAX_N * sizeof *buf);
    const char **names = malloc(MAX_N * sizeof *names);
    assert_non_null(buf);
    assert_non_null(names);
    for (int round = 0; round < 200; round++) {
        size_t n = round < 100 ? rd_rand_below(&rng, 80) : rd_rand_below(&rng, MAX_N + 1);
        int shape = (int)rd_rand_below(&rng, 5); /* 4: a mix of all */
        for (size_t k = 0; k < n; k++) {
            random_name(&rng, shape == 4 ? (int)rd_rand_below(&rng, 4) : shape, buf[k]);
            names[k] = buf[k];
        }
        check(names, n);
    }
    free(buf);
    free(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_and_one),
        cmocka_unit_test(test_a_prefix_sorts_before_its_extensions_across_word_edges),
        cmocka_unit_test(test_bytes_above_0x7f_sort_after_ascii),
        cmocka_unit_test(test_equal_names_are_found_in_small_and_large_runs),
        cmocka_unit_test(test_random_lists_sort_as_strcmp_does),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
