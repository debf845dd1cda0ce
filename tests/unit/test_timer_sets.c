/*
 * test_timer_sets.c — the membership core's per-slot timer structures on their own: the
 * deadline heap (deadlines.h) and the ranked set of slots (slotrank.h).
 *
 * Scenarios first (ties, moves, growth), then a seeded run of random operations on both,
 * each compared after every step with a plain array that does the same by scanning, and
 * the heap's own check run over every entry. The seed is printed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "deadlines.h"
#include "rand.h"
#include "rd_err.h"
#include "slotrank.h"

#define SLOTS 200
#define NONE  RD_DEADLINES_NONE

static void assert_heap_sound(const struct rd_deadlines *d)
{
    for (size_t k = 0; k < d->len; k++) {
        const char *why = NULL;
        if (rd_deadlines_check_entry(d, k, &why) != 0) fail_msg("entry %zu: %s", k, why);
    }
}

static void test_equal_deadlines_come_out_lowest_slot_first(void **state)
{
    (void)state;
    struct rd_deadlines d;
    assert_int_equal(rd_deadlines_init(&d, 8), 0);
    uint32_t slots[] = {5, 2, 7, 0, 3};
    for (size_t k = 0; k < 5; k++)
        rd_deadlines_set(&d, slots[k], 100);
    rd_deadlines_set(&d, 6, 50);
    assert_int_equal(rd_deadlines_first(&d), 50);
    assert_int_equal(rd_deadlines_pop_due(&d, 49), NONE);
    uint32_t expect[] = {6, 0, 2, 3, 5, 7};
    for (size_t k = 0; k < 6; k++)
        assert_int_equal(rd_deadlines_pop_due(&d, 100), expect[k]);
    assert_int_equal(rd_deadlines_pop_due(&d, 100), NONE);
    assert_int_equal(rd_deadlines_first(&d), UINT64_MAX);
    rd_deadlines_free(&d);
}

static void test_a_moved_slot_keeps_its_deadline_and_sorts_by_its_new_number(void **state)
{
    (void)state;
    struct rd_deadlines d;
    assert_int_equal(rd_deadlines_init(&d, 8), 0);
    rd_deadlines_set(&d, 3, 10);
    rd_deadlines_set(&d, 7, 10);
    rd_deadlines_remove(&d, 3); /* a swap-remove of slot 3: slot 7 moves into it */
    rd_deadlines_move(&d, 7, 3);
    assert_false(rd_deadlines_has(&d, 7));
    assert_int_equal(rd_deadlines_at(&d, 3), 10);
    rd_deadlines_set(&d, 5, 10);
    assert_heap_sound(&d);
    assert_int_equal(rd_deadlines_pop_due(&d, 10), 3);
    assert_int_equal(rd_deadlines_pop_due(&d, 10), 5);
    rd_deadlines_move(&d, 6, 2); /* not in the set: nothing happens */
    assert_int_equal(rd_deadlines_len(&d), 0);
    rd_deadlines_free(&d);
}

static void test_a_broken_heap_is_reported(void **state)
{
    (void)state;
    struct rd_deadlines d;
    assert_int_equal(rd_deadlines_init(&d, 8), 0);
    for (uint32_t k = 0; k < 4; k++)
        rd_deadlines_set(&d, k, 10 * (k + 1));
    const char *why = NULL;
    d.heap[1].at_ms = 1; /* before its parent */
    assert_int_equal(rd_deadlines_check_entry(&d, 1, &why), RD_ECORRUPT);
    d.heap[1].at_ms = 20;
    d.pos[d.heap[2].slot] = 3; /* the index points elsewhere */
    assert_int_equal(rd_deadlines_check_entry(&d, 2, &why), RD_ECORRUPT);
    rd_deadlines_free(&d);
}

static void test_the_kth_slot_survives_growth(void **state)
{
    (void)state;
    struct rd_slotrank r;
    assert_int_equal(rd_slotrank_init(&r, 3), 0);
    rd_slotrank_put(&r, 2, true);
    rd_slotrank_put(&r, 0, true);
    assert_int_equal(rd_slotrank_grow(&r, 100), 0);
    rd_slotrank_put(&r, 70, true);
    rd_slotrank_put(&r, 0, true); /* already in: no change */
    assert_int_equal(rd_slotrank_count(&r), 3);
    assert_int_equal(rd_slotrank_select(&r, 0), 0);
    assert_int_equal(rd_slotrank_select(&r, 1), 2);
    assert_int_equal(rd_slotrank_select(&r, 2), 70);
    assert_int_equal(rd_slotrank_select(&r, 3), RD_SLOTRANK_NONE);
    rd_slotrank_put(&r, 2, false);
    assert_int_equal(rd_slotrank_select(&r, 1), 70);
    assert_false(rd_slotrank_has(&r, 2));
    rd_slotrank_free(&r);
}

/* The plain model: a deadline per slot (UINT64_MAX: none) and a membership flag. */
struct model {
    uint64_t at[SLOTS];
    bool in[SLOTS];
};

static uint32_t model_first_due(const struct model *m, uint64_t now)
{
    uint32_t best = NONE;
    for (uint32_t i = 0; i < SLOTS; i++)
        if (m->at[i] <= now && (best == NONE || m->at[i] < m->at[best])) best = i;
    return best;
}

static uint32_t model_select(const struct model *m, size_t k)
{
    for (uint32_t i = 0; i < SLOTS; i++)
        if (m->in[i] && k-- == 0) return i;
    return RD_SLOTRANK_NONE;
}

static void test_random_operations_agree_with_a_scan(void **state)
{
    (void)state;
    uint64_t seed = 20261202;
    const char *env = getenv("RINGD_SIM_SEED");
    if (env) seed = strtoull(env, NULL, 10);
    printf("# seed %llu\n", (unsigned long long)seed);
    struct rd_rand rng;
    rd_rand_seed(&rng, seed);
    struct rd_deadlines d;
    struct rd_slotrank r;
    assert_int_equal(rd_deadlines_init(&d, 4), 0);
    assert_int_equal(rd_slotrank_init(&r, 4), 0);
    static struct model m;
    for (uint32_t i = 0; i < SLOTS; i++)
        m.at[i] = UINT64_MAX;
    size_t cap = 4;
    for (int step = 0; step < 20000; step++) {
        uint32_t slot = rd_rand_below(&rng, (uint32_t)cap);
        uint64_t at = rd_rand_below(&rng, 1000);
        switch (rd_rand_below(&rng, 6)) {
        case 0:
            if (cap < SLOTS) {
                cap += rd_rand_below(&rng, 8) + 1;
                cap = cap < SLOTS ? cap : SLOTS;
                assert_int_equal(rd_deadlines_grow(&d, cap), 0);
                assert_int_equal(rd_slotrank_grow(&r, cap), 0);
            }
            break;
        case 1:
            rd_deadlines_set(&d, slot, at);
            m.at[slot] = at;
            break;
        case 2:
            rd_deadlines_remove(&d, slot);
            m.at[slot] = UINT64_MAX;
            break;
        case 3: {
            uint32_t due = rd_deadlines_pop_due(&d, at);
            assert_int_equal(due, model_first_due(&m, at));
            if (due != NONE) m.at[due] = UINT64_MAX;
            break;
        }
        case 4: {
            /* a swap-remove: slot goes, the highest used slot moves into it */
            uint32_t last = (uint32_t)cap - 1;
            rd_deadlines_remove(&d, slot);
            m.at[slot] = UINT64_MAX;
            if (slot != last) {
                rd_deadlines_move(&d, last, slot);
                m.at[slot] = m.at[last];
                m.at[last] = UINT64_MAX;
            }
            break;
        }
        default: {
            bool in = rd_rand_below(&rng, 2);
            rd_slotrank_put(&r, slot, in);
            m.in[slot] = in;
            break;
        }
        }
        assert_heap_sound(&d);
        size_t len = 0, count = 0;
        uint64_t first = UINT64_MAX;
        for (uint32_t i = 0; i < SLOTS; i++) {
            assert_int_equal(rd_deadlines_at(&d, i), m.at[i]);
            len += m.at[i] != UINT64_MAX;
            first = m.at[i] < first ? m.at[i] : first;
            count += m.in[i];
        }
        assert_int_equal(rd_deadlines_len(&d), len);
        assert_int_equal(rd_deadlines_first(&d), first);
        assert_int_equal(rd_slotrank_count(&r), count);
        size_t k = rd_rand_below(&rng, (uint32_t)count + 1);
        assert_int_equal(rd_slotrank_select(&r, k), model_select(&m, k));
    }
    rd_deadlines_free(&d);
    rd_slotrank_free(&r);
}

/* A set over many slots that holds few at a time: its slots and its heap grow apart, the
 * heap only by reserve, and entries set within the room reserved come out in order. */
static void test_a_sparse_set_grows_its_heap_only_by_reserve(void **state)
{
    (void)state;
    struct rd_deadlines d;
    assert_int_equal(rd_deadlines_init(&d, 0), 0);
    assert_int_equal(rd_deadlines_grow_slots(&d, 100000), 0);
    assert_int_equal(d.cap, 100000);
    assert_int_equal(d.heap_cap, 0);
    assert_int_equal(rd_deadlines_reserve(&d, 3), 0);
    assert_true(d.heap_cap >= 3 && d.heap_cap < 100);
    rd_deadlines_set(&d, 99999, 30);
    rd_deadlines_set(&d, 5, 10);
    rd_deadlines_set(&d, 50000, 20);
    rd_deadlines_set(&d, 5, 40); /* moving an entry needs no more room */
    assert_heap_sound(&d);
    size_t room = d.heap_cap;
    assert_int_equal(rd_deadlines_reserve(&d, 2), 0); /* never shrinks */
    assert_int_equal(d.heap_cap, room);
    assert_int_equal(rd_deadlines_pop_due(&d, 100), 50000);
    assert_int_equal(rd_deadlines_pop_due(&d, 100), 99999);
    assert_int_equal(rd_deadlines_pop_due(&d, 100), 5);
    assert_int_equal(rd_deadlines_pop_due(&d, 100), NONE);
    rd_deadlines_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_deadlines_come_out_lowest_slot_first),
        cmocka_unit_test(test_a_moved_slot_keeps_its_deadline_and_sorts_by_its_new_number),
        cmocka_unit_test(test_a_broken_heap_is_reported),
        cmocka_unit_test(test_the_kth_slot_survives_growth),
        cmocka_unit_test(test_random_operations_agree_with_a_scan),
        cmocka_unit_test(test_a_sparse_set_grows_its_heap_only_by_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
