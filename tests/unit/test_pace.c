/*
 * test_pace.c — the ring rebuild pacer (agent/pace.h), driven on made-up time.
 *
 * A loop stands in for the agent: a membership change every few milliseconds, a rebuild
 * run when the pacer says, costing what the scenario says. What is checked is what an
 * operator sees: how many rebuilds a minute of churn costs, how they are spaced, and how
 * soon the ring follows once the churn stops.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pace.h"

#define COALESCE_MS  100
#define GAP_MIN_MS   1000
#define GAP_MAX_MS   10000
#define ALLOWANCE_MS 60000
#define FACTOR       2000

struct run {
    size_t rebuilds;
    uint64_t first_ms, last_ms;      /* when the first and the last rebuild ran */
    size_t burst;                    /* rebuilds at the coalescing pace, before the first gap */
    size_t paced;                    /* gaps longer than that pace */
    uint64_t min_gap_after_burst_ms; /* once the allowance is spent (the first gap is partial) */
    uint64_t max_gap_ms;             /* between two rebuilds */
    uint64_t first_after_switch_ms;  /* the first rebuild at the second cost */
    uint64_t min_gap_after_switch_ms, max_gap_after_switch_ms; /* ... and the ones after it */
};

/* Changes every `every_ms` from 0 to `until_ms`, each rebuild costing `cost_ns` until
 * `switch_ms` and `cost_after_ns` from then on; runs on for `tail_ms` after the last change
 * so that the last rebuild comes. */
static struct run churn_switching(struct rd_pace *p, uint64_t every_ms, uint64_t until_ms,
                                  uint64_t cost_ns, uint64_t switch_ms, uint64_t cost_after_ns,
                                  uint64_t tail_ms)
{
    struct run r = {.min_gap_after_burst_ms = UINT64_MAX, .min_gap_after_switch_ms = UINT64_MAX};
    uint64_t due = UINT64_MAX, next_change = 0;
    for (uint64_t now = 0; now <= until_ms + tail_ms; now++) {
        if (now == due) {
            rd_pace_done(p, now, now < switch_ms ? cost_ns : cost_after_ns);
            uint64_t gap = now - r.last_ms;
            if (r.rebuilds > 0 && gap > r.max_gap_ms) r.max_gap_ms = gap;
            if (r.first_after_switch_ms && now <= until_ms) {
                if (gap < r.min_gap_after_switch_ms) r.min_gap_after_switch_ms = gap;
                if (gap > r.max_gap_after_switch_ms) r.max_gap_after_switch_ms = gap;
            }
            if (r.rebuilds == 0) r.first_ms = now;
            if (r.rebuilds > 0 && gap > 2 * COALESCE_MS) r.paced++;
            if (r.paced == 0) r.burst = r.rebuilds + 1;
            if (r.paced >= 2 && gap < r.min_gap_after_burst_ms) r.min_gap_after_burst_ms = gap;
            r.last_ms = now;
            r.rebuilds++;
            due = UINT64_MAX;
            if (now >= switch_ms && r.first_after_switch_ms == 0) r.first_after_switch_ms = now;
        }
        if (now == next_change && now <= until_ms) {
            if (due == UINT64_MAX) due = rd_pace_due(p, now); /* one pending at a time */
            next_change += every_ms;
        }
    }
    return r;
}

static struct run churn(struct rd_pace *p, uint64_t every_ms, uint64_t until_ms, uint64_t cost_ns,
                        uint64_t tail_ms)
{
    return churn_switching(p, every_ms, until_ms, cost_ns, UINT64_MAX, cost_ns, tail_ms);
}

static struct rd_pace pacer(void)
{
    return rd_pace_init(COALESCE_MS, GAP_MIN_MS, GAP_MAX_MS, ALLOWANCE_MS, FACTOR);
}

static void test_a_lone_change_waits_only_the_coalescing_delay(void **state)
{
    (void)state;
    struct rd_pace p = pacer();
    assert_int_equal(rd_pace_due(&p, 5000), 5000 + COALESCE_MS);
    rd_pace_done(&p, 5100, 100000);
    /* a burst: the next few changes still go at the coalescing pace */
    assert_int_equal(rd_pace_due(&p, 5200), 5200 + COALESCE_MS);
}

static void test_cheap_rebuilds_under_churn_come_once_a_second(void **state)
{
    (void)state;
    /* 0.1 ms: charged the minimum gap, 1 s. A rebuild every ~107 ms (the next change comes
     * within 7 ms, then the coalescing delay) gains 0.9 s on the clock: 60 s of allowance is
     * spent after about 68, and then they come once a second. */
    struct rd_pace p = pacer();
    struct run r = churn(&p, 7, 60000, 100000 /* 0.1 ms */, 2000);
    assert_int_equal(r.first_ms, COALESCE_MS);
    assert_in_range(r.burst, 66, 70);
    assert_true(r.min_gap_after_burst_ms >= GAP_MIN_MS);
    assert_in_range(r.rebuilds, 118, 124);
    assert_true(r.last_ms >= 60000 - GAP_MIN_MS);
}

static void test_a_join_of_a_hundred_is_never_paced(void **state)
{
    (void)state;
    /* A hundred agents start within a second on a crowded host; each rebuild costs 2 ms of
     * CPU (charged 4 s; what such a start measured, cold caches and page faults included).
     * The churn ends before the allowance does: the ring follows the last change after the
     * coalescing delay. */
    struct rd_pace p = pacer();
    struct run r = churn(&p, 10, 1000, 2000000, 20000);
    assert_int_equal(r.paced, 0);
    assert_int_equal(r.last_ms, 1000 + COALESCE_MS);
}

static void test_costly_rebuilds_space_out_by_their_cost(void **state)
{
    (void)state;
    /* 2.5 ms of CPU: a large ring's rebuild, charged 2000 x 2.5 ms = 5 s. Thirteen spend
     * the allowance, then one per 5 s. */
    struct rd_pace p = pacer();
    struct run r = churn(&p, 7, 60000, 2500000, 10000);
    assert_in_range(r.burst, 12, 14);
    assert_true(r.min_gap_after_burst_ms >= 5000);
    assert_in_range(r.rebuilds, 23, 27);
    /* 25 ms: a rebuild of 1,000 members on a host crowded by 1,000 agents. The gap stops
     * at its cap, so the ring never trails by more than 10 s */
    p = pacer();
    r = churn(&p, 7, 60000, 25000000, 20000);
    assert_in_range(r.burst, 6, 8);
    assert_int_equal(r.min_gap_after_burst_ms, GAP_MAX_MS);
    assert_in_range(r.rebuilds, 12, 14);
    assert_true(r.max_gap_ms <= GAP_MAX_MS);
    assert_true(r.last_ms >= 60000 - GAP_MAX_MS);
}

static void test_the_pace_recovers_when_rebuilds_are_cheap_again(void **state)
{
    (void)state;
    struct rd_pace p = pacer();
    churn(&p, 7, 60000, 4000000, 20000); /* a storm: 8 s apart */
    assert_int_equal(p.gap_ms, 8000);
    rd_pace_done(&p, 200000, 50000); /* quiet again: one cheap rebuild */
    assert_int_equal(p.gap_ms, GAP_MIN_MS);
    assert_int_equal(rd_pace_due(&p, 200500), 200500 + COALESCE_MS);
}

static void test_a_change_of_cost_mid_churn_neither_bursts_nor_stalls(void **state)
{
    (void)state;
    /* The ring grows: 0.05 ms rebuilds, then 5 ms ones (charged 10 s, the cap) from 30 s
     * on. The cheap churn has spent the allowance already, so once a costly one ran the next
     * waits its whole charge, not the cheap pace. */
    struct rd_pace p = pacer();
    struct run r = churn_switching(&p, 7, 60000, 50000, 30000, 5000000, 20000);
    assert_true(r.first_after_switch_ms >= 30000);
    assert_true(r.min_gap_after_switch_ms >= GAP_MAX_MS - GAP_MIN_MS);
    assert_true(r.max_gap_ms <= GAP_MAX_MS);
    /* It shrinks: 5 ms rebuilds, then 0.05 ms ones. No wait beyond the cap, and once a
     * cheap one ran the next comes within the minimum gap. */
    p = pacer();
    r = churn_switching(&p, 7, 60000, 5000000, 30000, 50000, 20000);
    assert_true(r.max_gap_ms <= GAP_MAX_MS);
    assert_true(r.max_gap_after_switch_ms <= GAP_MIN_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_lone_change_waits_only_the_coalescing_delay),
        cmocka_unit_test(test_cheap_rebuilds_under_churn_come_once_a_second),
        cmocka_unit_test(test_a_join_of_a_hundred_is_never_paced),
        cmocka_unit_test(test_costly_rebuilds_space_out_by_their_cost),
        cmocka_unit_test(test_the_pace_recovers_when_rebuilds_are_cheap_again),
        cmocka_unit_test(test_a_change_of_cost_mid_churn_neither_bursts_nor_stalls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
