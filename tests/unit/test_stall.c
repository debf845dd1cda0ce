/*
 * test_stall.c — the stall meter (agent/stall.h): schedstat's text parsed, hostile text
 * refused, a window divided into time on a CPU, waiting for one, in the poll and blocked
 * elsewhere, and the meter read on this very thread, where a sleep outside any poll must
 * come out as blocked and a spin as time on a CPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>
#include <time.h>
#include <uv.h>

#include "stall.h"

static bool parse(const char *text, struct rd_sched_times *out)
{
    return rd_sched_times_parse(text, strlen(text), out);
}

static void test_parse_takes_schedstat_lines(void **state)
{
    (void)state;
    struct rd_sched_times t;
    assert_true(parse("123 456 7\n", &t));
    assert_int_equal(t.on_cpu_ns, 123);
    assert_int_equal(t.runnable_ns, 456);
    assert_true(parse("0 0 0", &t)); /* no newline */
    assert_int_equal(t.on_cpu_ns, 0);
    assert_true(parse("18446744073709551615 1 1\n", &t)); /* UINT64_MAX */
    assert_true(t.on_cpu_ns == UINT64_MAX);
}

static void test_parse_refuses_what_is_not_schedstat(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "\n",
        "123 456\n",                  /* a field short */
        "123 456 7 8\n",              /* a field long */
        "-1 2 3\n",                   /* signed */
        "1 2 3\n\n",                  /* trailing bytes */
        "1 2 3x\n",                   /* junk in a field */
        " 1 2 3\n",                   /* leading space */
        "18446744073709551616 1 1\n", /* UINT64_MAX + 1 */
        "99999999999999999999999 1 1\n",
    };
    struct rd_sched_times t = {42, 43};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_false(parse(bad[i], &t));
        assert_int_equal(t.on_cpu_ns, 42); /* untouched */
    }
    /* a length that stops inside the text: only that much is read */
    assert_false(rd_sched_times_parse("1 2 3\n", 3, &t));
    assert_true(rd_sched_times_parse("1 2 3\n", 5, &t));
}

#define MS 1000000ull

static void test_a_window_divides_into_its_parts(void **state)
{
    (void)state;
    struct rd_stall_point a = {.at_ns = 1000 * MS,
                               .polling_ns = 50 * MS,
                               .loop = {10 * MS, 20 * MS},
                               .builder = {5 * MS, 6 * MS},
                               .builder_known = true};
    struct rd_stall_point b = {.at_ns = 10000 * MS,
                               .polling_ns = 1050 * MS,
                               .loop = {110 * MS, 2020 * MS},
                               .builder = {7 * MS, 3006 * MS},
                               .builder_known = true};
    struct rd_stall s;
    rd_stall_between(&a, &b, &s);
    assert_int_equal(s.window_ms, 9000);
    assert_int_equal(s.on_cpu_ms, 100);
    assert_int_equal(s.runnable_ms, 2000);
    assert_int_equal(s.polling_ms, 1000);
    assert_int_equal(s.blocked_ms, 9000 - 100 - 2000 - 1000);
    assert_true(s.builder_known);
    assert_int_equal(s.builder_on_cpu_ms, 2);
    assert_int_equal(s.builder_runnable_ms, 3000);

    /* parts that add up past the window (a wake-up's wait counted in the poll too): none
     * blocked, never a wrapped number */
    b.polling_ns = a.polling_ns + 8000 * MS;
    rd_stall_between(&a, &b, &s);
    assert_int_equal(s.blocked_ms, 0);

    /* counters that went backwards (a thread watched anew) count as zero; a builder read at
     * one end only is not known */
    b.loop.on_cpu_ns = 0;
    b.builder_known = false;
    rd_stall_between(&a, &b, &s);
    assert_int_equal(s.on_cpu_ms, 0);
    assert_false(s.builder_known);
    assert_int_equal(s.builder_on_cpu_ms, 0);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
}

/* Spins until this thread has run `ms` of CPU. */
static void spin_cpu_ms(long ms)
{
    struct timespec c0, c;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
    while ((c.tv_sec - c0.tv_sec) * 1000 + (c.tv_nsec - c0.tv_nsec) / 1000000 < ms);
}

/* Ticks on time take a point every RD_STALL_POINT_EVERY_MS; a late tick always takes one. */
static void test_a_point_is_due_late_or_every_half_second(void **state)
{
    (void)state;
    const uint64_t ms = 1000000u, every = RD_STALL_POINT_EVERY_MS * ms;
    struct rd_stall_meter m = {.loop_fd = -1, .builder_fd = -1, .have = false};
    assert_true(rd_stall_meter_due(&m, 5 * every, 0)); /* no point yet */
    m.have = true;
    m.last.at_ns = 5 * every;
    assert_false(rd_stall_meter_due(&m, 5 * every, 0));
    assert_false(rd_stall_meter_due(&m, 6 * every - 1, RD_STALL_LOG_MS - 1));
    assert_true(rd_stall_meter_due(&m, 6 * every, 0));
    assert_true(rd_stall_meter_due(&m, 5 * every + ms, RD_STALL_LOG_MS)); /* late: always */
    assert_true(rd_stall_meter_due(&m, 5 * every - 1, 0)); /* a clock that went back */
}

static void test_the_meter_tells_a_sleep_from_a_spin(void **state)
{
    (void)state;
    struct rd_stall_meter m;
    rd_stall_meter_open(&m);
    if (m.loop_fd < 0) skip(); /* a kernel without schedstat */
    struct rd_stall s;
    assert_false(rd_stall_meter_sample(&m, uv_hrtime(), 0, &s)); /* the first point */

    sleep_ms(300); /* asleep outside any poll: blocked */
    assert_true(rd_stall_meter_sample(&m, uv_hrtime(), 0, &s));
    assert_true(s.window_ms >= 300);
    assert_true(s.blocked_ms >= 250);
    assert_true(s.on_cpu_ms < 50);

    /* the same sleep, told as time in the poll: nothing blocked */
    uint64_t polled0 = uv_hrtime();
    rd_stall_meter_sample(&m, polled0, 0, &s);
    sleep_ms(300);
    uint64_t now = uv_hrtime();
    assert_true(rd_stall_meter_sample(&m, now, now - polled0, &s));
    assert_true(s.blocked_ms < 50);

    /* a spin of 300 ms of CPU: on a CPU or waiting for one, however loaded the machine */
    spin_cpu_ms(300);
    assert_true(rd_stall_meter_sample(&m, uv_hrtime(), 0, &s));
    assert_true(s.on_cpu_ms >= 280);
    assert_true(s.on_cpu_ms + s.runnable_ms + s.blocked_ms + 2 >= s.window_ms);

    /* this thread watched as if it were the builder: its times are read too */
    rd_stall_meter_watch(&m, (pid_t)uv_os_getpid()); /* the main thread's tid is the pid */
    assert_true(m.builder_fd >= 0);
    rd_stall_meter_sample(&m, uv_hrtime(), 0, &s);
    spin_cpu_ms(100);
    assert_true(rd_stall_meter_sample(&m, uv_hrtime(), 0, &s));
    assert_true(s.builder_known);
    assert_true(s.builder_on_cpu_ms >= 90);

    rd_stall_meter_watch(&m, 0);
    assert_int_equal(m.builder_fd, -1);
    rd_stall_meter_close(&m);
    assert_false(rd_stall_meter_sample(&m, uv_hrtime(), 0, &s)); /* closed: reads nothing */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_takes_schedstat_lines),
        cmocka_unit_test(test_parse_refuses_what_is_not_schedstat),
        cmocka_unit_test(test_a_window_divides_into_its_parts),
        cmocka_unit_test(test_the_meter_tells_a_sleep_from_a_spin),
        cmocka_unit_test(test_a_point_is_due_late_or_every_half_second),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
