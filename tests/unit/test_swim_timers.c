/*
 * test_swim_timers.c — the cost of the membership core's timers, counted rather than timed.
 *
 * A core holds 1,000 members and suspects all the others, the worst case under heavy loss.
 * Every wake-up (rd_swim_tick at rd_swim_next_tick, then rd_swim_next_tick again) is
 * charged the timer work it did (rd_swim_stats.timer_steps): it must stay logarithmic in
 * the table per suspicion that expired, and constant when nothing did. Each suspicion must
 * still end exactly at its deadline. Tombstones likewise: forgetting one costs the same
 * whatever N, and many due at once all go in one tick, the rest of the table intact. The
 * core is driven directly (tests/sim/swim_fixture.h), with no simulator, so every number
 * here is the core's own.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "suspicion.h"
#include "swim.h"
#include "swim_fixture.h"

#define MEMBERS 1000

/* A core of MEMBERS that has left and suspects all the others (swim_fixture.h). */
static struct rd_swim *core_suspecting_everyone(const struct rd_swim_config *cfg)
{
    struct rd_swim *s = swim_fixture_suspecting_all(cfg, MEMBERS, true);
    assert_non_null(s);
    size_t counts[4];
    rd_swim_counts(s, counts);
    assert_int_equal(counts[RD_SUSPECT], MEMBERS - 1);
    return s;
}

static void discard_events(struct rd_swim *s)
{
    struct rd_swim_event ev;
    while (rd_swim_poll_event(s, &ev))
        ;
}

/* The wake-up at `now_ms`: the tick, then the question of when the next one is. Returns
 * the timer work it took. */
static uint64_t wake_up(struct rd_swim *s, uint64_t now_ms, uint64_t *next_ms)
{
    uint64_t before = rd_swim_stats(s)->timer_steps;
    rd_swim_tick(s, now_ms);
    *next_ms = rd_swim_next_tick(s);
    return rd_swim_stats(s)->timer_steps - before;
}

/* Logarithmic work per expired suspicion: a pop from one heap and a push onto another,
 * each at most two comparisons per level, and a constant for reading the tops. */
static uint64_t wake_up_bound(size_t expired)
{
    uint64_t per_expiry = (uint64_t)(4.0 * log2((double)MEMBERS)) + 8;
    return expired * per_expiry + 8;
}

static void test_suspicions_of_a_thousand_members_cost_logarithmic_work_per_wake_up(void **state)
{
    (void)state;
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = core_suspecting_everyone(&cfg);
    discard_events(s);
    struct rd_suspicion_config scfg = {
        .probe_interval_ms = cfg.probe_interval_ms,
        .suspicion_mult = cfg.suspicion_mult,
        .suspicion_max_mult = cfg.suspicion_max_mult,
        .suspicion_confirmations = cfg.suspicion_confirmations,
    };
    /* the N of the formula when they turned suspect: all but us (we had left) */
    uint64_t timeout = rd_suspicion_timeout(&scfg, MEMBERS - 1, 0);
    size_t dead = 0, wake_ups = 0, idle_wake_ups = 0;
    uint64_t now = rd_swim_next_tick(s), worst = 0;
    while (dead < MEMBERS - 1 && wake_ups < 100000) {
        uint64_t next, steps = wake_up(s, now, &next);
        size_t expired = 0;
        struct rd_swim_event ev;
        while (rd_swim_poll_event(s, &ev)) {
            if (ev.member.status != RD_DEAD) continue;
            unsigned k = (unsigned)strtoul(ev.member.name + 1, NULL, 10);
            /* exactly at its deadline: not a tick late, not a tick early */
            assert_int_equal(now, SWIM_FIXTURE_SUSPECT_FROM_MS +
                                      (uint64_t)k * SWIM_FIXTURE_SUSPECT_EVERY_MS + timeout);
            expired++;
        }
        if (steps > wake_up_bound(expired))
            fail_msg("wake-up at %llu ms: %llu steps for %zu expired suspicions",
                     (unsigned long long)now, (unsigned long long)steps, expired);
        worst = steps > worst ? steps : worst;
        idle_wake_ups += expired == 0;
        dead += expired;
        wake_ups++;
        assert_true(next > now);
        now = next;
    }
    printf("# %zu wake-ups (%zu with nothing expired), at most %llu steps each\n", wake_ups,
           idle_wake_ups, (unsigned long long)worst);
    assert_int_equal(dead, MEMBERS - 1);
    assert_true(idle_wake_ups > 0);
    const char *why = NULL;
    assert_int_equal(rd_swim_check(s, &why), 0);
    rd_swim_delete(s);
}

static void test_a_wake_up_with_nothing_due_costs_constant_work(void **state)
{
    (void)state;
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = core_suspecting_everyone(&cfg);
    uint64_t now = SWIM_FIXTURE_SUSPECT_FROM_MS + MEMBERS * SWIM_FIXTURE_SUSPECT_EVERY_MS, next;
    wake_up(s, now, &next); /* runs whatever was due by now */
    assert_true(next > now);
    for (int k = 0; k < 100; k++)
        assert_true(wake_up(s, now, &next) <= 4);
    rd_swim_delete(s);
}

/* Work allowed for a wake-up that forgets `reaped` tombstones: per member a pop, the swap
 * of the last member into its slot (a sift and two updates of the dead set) and its own
 * leaving of the dead set, each logarithmic. */
static uint64_t reap_bound(size_t reaped)
{
    uint64_t per_member = (uint64_t)(6.0 * log2((double)MEMBERS)) + 8;
    return reaped * per_member + 8;
}

static void test_tombstones_due_together_are_forgotten_in_one_tick_and_the_rest_kept(void **state)
{
    (void)state;
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = swim_fixture_alive(&cfg, MEMBERS);
    assert_non_null(s);
    rd_swim_leave(s, 0); /* no probes: whoever is not declared dead stays alive */
    /* n1 died alone first: forgetting it costs as much as one tombstone, whatever N */
    struct rd_member n3 = swim_fixture_member(3, RD_ALIVE),
                     n1_dead = swim_fixture_member(1, RD_DEAD);
    struct rd_packet pkt = {.nmembers = 1, .members = &n1_dead};
    snprintf(pkt.from, sizeof pkt.from, "n3");
    uint64_t next, n1_died = 1000, died = n1_died + cfg.tombstone_ms + 4000;
    rd_swim_recv(s, n1_died, &n3.addr, &pkt);
    wake_up(s, n1_died + cfg.tombstone_ms - 1, &next);
    assert_int_equal(next, n1_died + cfg.tombstone_ms);
    uint64_t steps = wake_up(s, next, &next);
    assert_int_equal(rd_swim_member_count(s), MEMBERS - 1);
    assert_false(rd_swim_find(s, "n1", NULL));
    if (steps > reap_bound(1))
        fail_msg("%llu steps to forget one tombstone", (unsigned long long)steps);
    /* n3 says that two members in three died, all at once: holes all over the table,
     * and dead members at its end that move into them as the others go */
    static struct rd_member batch[MEMBERS - 1];
    size_t ndead = 0;
    for (unsigned k = 2; k < MEMBERS; k++)
        if (k % 3 != 0) batch[ndead++] = swim_fixture_member(k, RD_DEAD);
    pkt = (struct rd_packet){.nmembers = ndead, .members = batch};
    snprintf(pkt.from, sizeof pkt.from, "n3");
    rd_swim_recv(s, died, &n3.addr, &pkt);
    size_t counts[4];
    rd_swim_counts(s, counts);
    assert_int_equal(counts[RD_DEAD], ndead);
    wake_up(s, died + cfg.tombstone_ms - 1, &next);
    assert_int_equal(rd_swim_member_count(s), MEMBERS - 1);
    assert_int_equal(next, died + cfg.tombstone_ms);
    steps = wake_up(s, next, &next);
    assert_int_equal(rd_swim_member_count(s), MEMBERS - 1 - ndead);
    if (steps > reap_bound(ndead))
        fail_msg("%llu steps to forget %zu tombstones", (unsigned long long)steps, ndead);
    for (unsigned k = 1; k < MEMBERS; k++) {
        char name[16];
        snprintf(name, sizeof name, "n%u", k);
        int status = rd_swim_status_of(s, name);
        if (k % 3 == 0) {
            assert_int_equal(status, RD_ALIVE);
        } else {
            assert_int_equal(status, -1);
        }
    }
    const char *why = NULL;
    if (rd_swim_check(s, &why) != 0) fail_msg("%s", why);
    rd_swim_delete(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_suspicions_of_a_thousand_members_cost_logarithmic_work_per_wake_up),
        cmocka_unit_test(test_a_wake_up_with_nothing_due_costs_constant_work),
        cmocka_unit_test(test_tombstones_due_together_are_forgotten_in_one_tick_and_the_rest_kept),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
