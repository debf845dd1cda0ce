/*
 * test_deafness.c — the loop's deafness (agent/deafness.h) on a real libuv loop: a callback
 * that keeps the loop busy is measured as a stretch without input, while a loop that only
 * waits in its poll is not, and each take resets the measure. And when the tick counts as
 * due: re-arms while it is overdue keep the time it fell due.
 *
 * The busy callback spins for BUSY_MS of wall time, so the stretch it leaves is at least
 * that long however loaded the machine is; the waiting stretch is IDLE_MS, long enough
 * that counting the wait as busy would be plain.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>

#include "deafness.h"

#define BUSY_MS 300
#define IDLE_MS 600

static struct rd_deafness deaf;
static uint64_t after_busy, after_idle, after_take;
static uv_timer_t busy, read1, read2;

static void spin(uv_timer_t *t)
{
    (void)t;
    uint64_t until = uv_hrtime() + (uint64_t)BUSY_MS * 1000000u;
    while (uv_hrtime() < until) {
    }
}

static void read_after_idle(uv_timer_t *t);

static void read_after_busy(uv_timer_t *t)
{
    (void)t;
    after_busy = rd_deafness_take(&deaf);
    after_take = rd_deafness_take(&deaf);
    uv_timer_start(&read2, read_after_idle, IDLE_MS, 0);
}

static void read_after_idle(uv_timer_t *t)
{
    after_idle = rd_deafness_take(&deaf);
    uv_close((uv_handle_t *)&deaf.check, NULL);
    uv_close((uv_handle_t *)t, NULL);
}

static void close_it(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

static void test_a_busy_callback_is_deafness_and_a_wait_is_not(void **state)
{
    (void)state;
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(uv_loop_configure(&loop, UV_METRICS_IDLE_TIME), 0);
    assert_int_equal(rd_deafness_start(&deaf, &loop), 0);
    uv_timer_init(&loop, &busy);
    uv_timer_init(&loop, &read1);
    uv_timer_init(&loop, &read2);
    uv_timer_start(&busy, spin, 10, 0);
    /* due while the spin runs: it fires just after it; then IDLE_MS of waiting follow */
    uv_timer_start(&read1, read_after_busy, 10 + BUSY_MS / 2, 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    uv_walk(&loop, close_it, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
    printf("# busy %d ms: measured %llu ms; then %llu ms right after the take; waiting %d ms: %llu "
           "ms\n",
           BUSY_MS, (unsigned long long)after_busy, (unsigned long long)after_take, IDLE_MS,
           (unsigned long long)after_idle);
    assert_true(after_busy >= BUSY_MS);
    assert_int_equal(after_take, 0);
    assert_true(after_idle < BUSY_MS);
}

static void test_an_overdue_tick_keeps_the_time_it_fell_due(void **state)
{
    (void)state;
    /* armed for 1000, re-armed before it: the core's next deadline, or now if past */
    assert_int_equal(rd_tick_due(true, 1000, 1200, 900), 1200);
    assert_int_equal(rd_tick_due(true, 1000, 800, 900), 900);
    /* not armed (the tick itself re-arms): the same */
    assert_int_equal(rd_tick_due(false, 1000, 7000, 6000), 7000);
    assert_int_equal(rd_tick_due(false, 1000, 5000, 6000), 6000);
    /* armed for 1000 and overdue at 6000 (datagrams read first by a starved loop): it stays
     * due at 1000, whatever the core asks for next, so the tick is 5 s late when it runs */
    assert_int_equal(rd_tick_due(true, 1000, 7000, 6000), 1000);
    assert_int_equal(rd_tick_due(true, 1000, 5000, 6000), 1000);
    /* due exactly now is overdue too */
    assert_int_equal(rd_tick_due(true, 6000, 7000, 6000), 6000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_busy_callback_is_deafness_and_a_wait_is_not),
        cmocka_unit_test(test_an_overdue_tick_keeps_the_time_it_fell_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
