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

#define COALESCE_MS 100
#define GAP_MIN_MS  1000
#define GAP_MAX_MS  10000
#define BURST       3
#define FACTOR      100

struct run {
    size_t rebuilds;
    uint64_t first_ms, last_ms;      /* when the first and the last rebuild ran */
    uint64_t min_gap_after_burst_ms; /* once the burst allowance is spent */
    uint64_t max_gap_ms;             /* between two rebuilds */
    uint64_t first_after_switch_ms;  /* the first rebuild at the second cost */
    uint64_t min_gap_after_switch_ms, max_gap_after_switch_ms; /* ... and the ones after it */
};

/* A burst of BURST at the coalescing pace, one more as the allowance's last slot is
 * taken, and the next one comes a partial gap later: from there on, the spacing holds. */
#define PACED_FROM (BURST + 2)

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
            if (r.rebuilds >= PACED_FROM && now - r.last_ms < r.min_gap_after_burst_ms)
                r.min_gap_after_burst_ms = now - r.last_ms;
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
    return rd_pace_init(COALESCE_MS, GAP_MIN_MS, GAP_MAX_MS, BURST, FACTOR);
}

static void test_a_lone_change_waits_only_the_coalescing_delay(void **state)
{
    (void)state;
    struct rd_pace p = pacer();
    assert_int_equal(rd_pace_due(&p, 5000), 5000 + COALESCE_MS);
    rd_pace_done(&p, 5100, 2000000);
    /* a burst: the next few changes still go at the coalescing pace */
    assert_int_equal(rd_pace_due(&p, 5200), 5200 + COALESCE_MS);
}

static void test_cheap_rebuilds_under_churn_come_once_a_second(void **state)
{
    (void)state;
    struct rd_pace p = pacer();
    struct run r = churn(&p, 7, 60000, 2000000 /* 2 ms */, 2000);
    assert_int_equal(r.first_ms, COALESCE_MS);
    assert_true(r.min_gap_after_burst_ms >= GAP_MIN_MS);
    assert_in_range(r.rebuilds, 60, 64); /* a burst of 3, then one a second */
    assert_true(r.last_ms >= 60000 - GAP_MIN_MS);
}

static void test_costly_rebuilds_space_out_by_their_cost(void **state)
{
    (void)state;
    /* 50 ms of wall time: a rebuild on a crowded host. 100 x 50 ms = 5 s apart. */
    struct rd_pace p = pacer();
    struct run r = churn(&p, 7, 60000, 50000000, 10000);
    assert_true(r.min_gap_after_burst_ms >= 5000);
    assert_in_range(r.rebuilds, 13, 16);
    /* 1 s each: the gap stops at its cap, so the ring never trails by more than 10 s */
    p = pacer();
    r = churn(&p, 7, 60000, 1000000000, 20000);
    assert_int_equal(r.min_gap_after_burst_ms, GAP_MAX_MS);
    assert_in_range(r.rebuilds, 8, 10);
    assert_true(r.last_ms >= 60000 - GAP_MAX_MS);
}

static void test_the_pace_recovers_when_rebuilds_are_cheap_again(void **state)
{
    (void)state;
    struct rd_pace p = pacer();
    churn(&p, 7, 60000, 80000000, 20000); /* a storm: 8 s apart */
    assert_int_equal(p.gap_ms, 8000);
    rd_pace_done(&p, 200000, 1000000); /* quiet again: one cheap rebuild */
    assert_int_equal(p.gap_ms, GAP_MIN_MS);
    assert_int_equal(rd_pace_due(&p, 200500), 200500 + COALESCE_MS);
}

static void test_a_change_of_cost_mid_churn_neither_bursts_nor_stalls(void **state)
{
    (void)state;
    /* The host gets crowded: 1 ms rebuilds, then 100 ms ones from 30 s on. Once a costly
     * one ran, the next waits its gap less the burst allowance, not the cheap pace. */
    struct rd_pace p = pacer();
    struct run r = churn_switching(&p, 7, 60000, 1000000, 30000, 100000000, 20000);
    assert_true(r.first_after_switch_ms >= 30000);
    assert_true(r.min_gap_after_switch_ms >= GAP_MAX_MS - BURST * GAP_MIN_MS);
    assert_true(r.max_gap_ms <= GAP_MAX_MS);
    /* It calms down: 100 ms rebuilds, then 1 ms ones. No wait beyond the cap, and once a
     * cheap one ran the next comes within the minimum gap. */
    p = pacer();
    r = churn_switching(&p, 7, 60000, 100000000, 30000, 1000000, 20000);
    assert_true(r.max_gap_ms <= GAP_MAX_MS);
    assert_true(r.max_gap_after_switch_ms <= GAP_MIN_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_lone_change_waits_only_the_coalescing_delay),
        cmocka_unit_test(test_cheap_rebuilds_under_churn_come_once_a_second),
        cmocka_unit_test(test_costly_rebuilds_space_out_by_their_cost),
        cmocka_unit_test(test_the_pace_recovers_when_rebuilds_are_cheap_again),
        cmocka_unit_test(test_a_change_of_cost_mid_churn_neither_bursts_nor_stalls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
