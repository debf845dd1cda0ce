/*
 * test_prefault.c — rd_prefault() takes in the whole pages of a large block and nothing
 * else, and changes no byte.
 *
 * The blocks are fresh anonymous mappings, so that mincore() can tell which pages the call
 * took in: none before it, then exactly the whole pages inside the range. Where the kernel
 * lacks MADV_POPULATE_WRITE (before Linux 5.14) the residency checks are skipped, and only
 * "changes no byte" is left to check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "prefault.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define BLOCK (2u * 1024u * 1024u)

static size_t page;

static unsigned char *fresh(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(p != MAP_FAILED);
    return p;
}

/* Whether page k of the mapping at base is resident. */
static bool resident(unsigned char *base, size_t k)
{
    unsigned char v = 0;
    assert_int_equal(mincore(base + k * page, page, &v), 0);
    return v & 1;
}

static bool kernel_populates(void)
{
    unsigned char *p = fresh(page);
    bool ok = madvise(p, page, MADV_POPULATE_WRITE) == 0;
    munmap(p, page);
    return ok;
}

static void test_whole_pages_inside_are_taken_in_and_no_byte_changes(void **state)
{
    (void)state;
    size_t pages = BLOCK / page;
    unsigned char *m = fresh(BLOCK);
    /* some pages already written, as a block that reuses freed memory has */
    for (size_t k = 10; k < 16; k++)
        memset(m + k * page, (int)(0xa0 + k), page);
    for (size_t k = 0; k < pages; k++)
        assert_int_equal(resident(m, k), k >= 10 && k < 16);
    /* a block that starts and ends inside pages, as malloc's do */
    rd_prefault(m + 100, BLOCK - 200);
    if (kernel_populates()) {
        assert_false(resident(m, 0)); /* only partly inside */
        for (size_t k = 1; k + 1 < pages; k++)
            assert_true(resident(m, k));
        assert_false(resident(m, pages - 1));
    }
    for (size_t k = 0; k < pages; k++)
        for (size_t b = 0; b < page; b++)
            if (m[k * page + b] != (k >= 10 && k < 16 ? 0xa0 + k : 0)) fail_msg("byte %zu", b);
    munmap(m, BLOCK);
}

static void test_small_blocks_and_null_are_left_alone(void **state)
{
    (void)state;
    unsigned char *m = fresh(RD_PREFAULT_MIN_BYTES);
    rd_prefault(m, RD_PREFAULT_MIN_BYTES - 1);
    for (size_t k = 0; k < RD_PREFAULT_MIN_BYTES / page; k++)
        assert_false(resident(m, k));
    rd_prefault(NULL, BLOCK);
    munmap(m, RD_PREFAULT_MIN_BYTES);
}

static void test_the_pages_at_either_end_stay_out(void **state)
{
    (void)state;
    /* a range from the second byte of page 1 to the first byte of page `last` */
    unsigned char *m = fresh(RD_PREFAULT_MIN_BYTES + 2 * page);
    rd_prefault(m + page + 1, RD_PREFAULT_MIN_BYTES);
    assert_false(resident(m, 0));
    assert_false(resident(m, 1)); /* holds the range's first byte, not all of it */
    size_t last = (page + 1 + RD_PREFAULT_MIN_BYTES - 1) / page;
    assert_false(resident(m, last));
    if (kernel_populates())
        for (size_t k = 2; k < last; k++)
            assert_true(resident(m, k));
    munmap(m, RD_PREFAULT_MIN_BYTES + 2 * page);
}

int main(void)
{
    page = (size_t)sysconf(_SC_PAGESIZE);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole_pages_inside_are_taken_in_and_no_byte_changes),
        cmocka_unit_test(test_small_blocks_and_null_are_left_alone),
        cmocka_unit_test(test_the_pages_at_either_end_stay_out),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
