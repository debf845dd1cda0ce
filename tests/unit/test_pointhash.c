/*
 * test_pointhash.c — a name's hasher (pointhash.h) against XXH3 of the encoded bytes.
 *
 * The hasher computes XXH3 from words it prepared per name, so every name length takes its
 * own path through it: each length from 0 to RD_NAME_MAX is checked, with names of every
 * byte value (a name's bytes are whatever the caller validated), at the indexes where the
 * big-endian encoding changes shape (byte carries, the top byte, UINT32_MAX) and at seeded
 * random ones, in batches of every size to 17 and around each multiple of 32, on every
 * kernel (scalar, AVX2, AVX-512) that this CPU runs; the test prints which. The reference
 * builds the encoding by hand and calls libxxhash's XXH3_64bits, not the module's own
 * rd_point_hash. The seed is printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <xxhash.h>

#include "pointhash.h"
#include "rand.h"

/* XXH3 of (u8 len | name | u32 i big-endian), built byte by byte. */
static uint64_t reference(const uint8_t *name, size_t len, uint32_t i)
{
    uint8_t buf[1 + 255 + 4];
    buf[0] = (uint8_t)len;
    for (size_t k = 0; k < len; k++)
        buf[1 + k] = name[k];
    buf[1 + len] = (uint8_t)(i >> 24);
    buf[2 + len] = (uint8_t)(i >> 16);
    buf[3 + len] = (uint8_t)(i >> 8);
    buf[4 + len] = (uint8_t)i;
    return XXH3_64bits(buf, len + 5);
}

static uint64_t test_seed(void)
{
    uint64_t seed = 0x9017;
    const char *env = getenv("RD_TEST_SEED");
    if (env) seed = strtoull(env, NULL, 0);
    printf("# pointhash seed %llu\n", (unsigned long long)seed);
    return seed;
}

static const char *const kernel_names[] = {"one point at a time", "4 lanes (AVX2)",
                                           "8 lanes (AVX-512)"};

/* Batches from i0 (the sizes of the file comment) on every kernel this CPU runs, and
 * rd_point_hash at each index, against the reference. */
static void check_batches(const struct rd_point_hasher *h, const uint8_t *name, size_t len,
                          uint32_t i0)
{
    for (int kern = RD_POINT_X1; kern <= RD_POINT_X8; kern++) {
        if (!rd_point_kernel_runs(kern)) continue;
        for (uint32_t n = 1; n <= RD_POINT_BATCH; n++) {
            /* every remainder of 4 and 8 lanes, and the sizes around each multiple of 32 */
            if (n > 17 && n % 32 > 1 && n % 32 != 31 && n != RD_POINT_BATCH) continue;
            uint64_t out[RD_POINT_BATCH];
            rd_point_hashes_with(kern, h, i0, n, out);
            for (uint32_t k = 0; k < n; k++) {
                uint64_t want = reference(name, len, i0 + k);
                if (out[k] != want)
                    fail_msg("%s, name length %zu, index %u (batch of %u from %u): %016llx, "
                             "want %016llx",
                             kernel_names[kern], len, i0 + k, n, i0, (unsigned long long)out[k],
                             (unsigned long long)want);
            }
        }
    }
    for (uint32_t k = 0; k < RD_POINT_BATCH; k++)
        assert_true(rd_point_hash((const char *)name, len, i0 + k) == reference(name, len, i0 + k));
}

static void test_every_name_length_gives_xxh3_of_the_bytes(void **state)
{
    (void)state;
    for (int kern = RD_POINT_X1; kern <= RD_POINT_X8; kern++)
        printf("# kernel %s: %s\n", kernel_names[kern],
               rd_point_kernel_runs(kern) ? "checked" : "not run by this CPU, not checked");
    static const uint32_t edges[] = {0,          1,          0xff,      0x100,     0xfff0,
                                     0xffff,     0x10000,    0xffffff,  0x1000000, 0x7fffffff,
                                     0x80000000, 0xfeffffe0, 0xffffffe0};
    struct rd_rand rng;
    rd_rand_seed(&rng, test_seed());
    for (size_t len = 0; len <= RD_NAME_MAX; len++) {
        uint8_t name[RD_NAME_MAX];
        for (int fill = 0; fill < 4; fill++) {
            for (size_t k = 0; k < len; k++) /* constant 0x00, constant 0xff, letters, any */
                name[k] = fill == 0   ? 0x00
                          : fill == 1 ? 0xff
                          : fill == 2 ? (uint8_t)('a' + k % 26)
                                      : (uint8_t)rd_rand_next(&rng);
            struct rd_point_hasher h;
            rd_point_hasher_init(&h, (const char *)name, len);
            for (size_t e = 0; e < sizeof edges / sizeof *edges; e++)
                check_batches(&h, name, len, edges[e]);
            for (int r = 0; r < 8; r++)
                check_batches(&h, name, len, (uint32_t)rd_rand_next(&rng));
        }
    }
}

/* The shapes by length, and at most two chunks of the 17-to-128 path reached by the index
 * (the hasher holds four words). */
static void test_each_length_takes_xxh3s_path_for_it(void **state)
{
    (void)state;
    for (size_t len = 0; len <= RD_NAME_MAX; len++) {
        struct rd_point_hasher h;
        rd_point_hasher_init(
            &h, "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklm", len);
        size_t n = len + 5;
        assert_int_equal(h.len, n);
        if (n <= 8) {
            assert_int_equal(h.shape, RD_POINT_4TO8);
        } else if (n <= 16) {
            assert_int_equal(h.shape, RD_POINT_9TO16);
        } else {
            assert_int_equal(h.shape, RD_POINT_17TO128);
            /* the last chunk always; the first as well below 20 bytes, the second from 33 to 35 */
            unsigned want = 1 + (n < 20) + (n > 32 && n < 36);
            assert_int_equal(h.nvar, want);
        }
    }
}

/* A longer name is a caller bug: hashed as its first RD_NAME_MAX bytes, as the ring does. */
static void test_a_name_too_long_is_cut_to_the_limit(void **state)
{
    (void)state;
    char name[RD_NAME_MAX + 10];
    memset(name, 'x', sizeof name);
    struct rd_point_hasher h;
    rd_point_hasher_init(&h, name, sizeof name);
    uint64_t out[3];
    rd_point_hashes(&h, 7, 3, out);
    for (uint32_t k = 0; k < 3; k++) {
        assert_true(out[k] == reference((const uint8_t *)name, RD_NAME_MAX, 7 + k));
        assert_true(rd_point_hash(name, sizeof name, 7 + k) == out[k]);
    }
}

/* rd_point_hashes() takes the widest kernel the CPU runs; the scalar one runs anywhere. */
static void test_the_widest_kernel_that_runs_is_used(void **state)
{
    (void)state;
    assert_true(rd_point_kernel_runs(RD_POINT_X1));
    enum rd_point_kernel best = rd_point_kernel_best();
    assert_true(rd_point_kernel_runs(best));
    for (int kern = best + 1; kern <= RD_POINT_X8; kern++)
        assert_false(rd_point_kernel_runs(kern));
    printf("# rd_point_hashes runs %s\n", kernel_names[best]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_name_length_gives_xxh3_of_the_bytes),
        cmocka_unit_test(test_each_length_takes_xxh3s_path_for_it),
        cmocka_unit_test(test_a_name_too_long_is_cut_to_the_limit),
        cmocka_unit_test(test_the_widest_kernel_that_runs_is_used),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
