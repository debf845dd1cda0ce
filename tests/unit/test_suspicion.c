/*
 * test_suspicion.c — suspicion timeouts, accusers and local health, against tables.
 *
 * The expected timeouts are worked out from memberlist's formula by hand for the round
 * cases (N <= 10: 2 s to 24 s; N = 100: 4 s to 48 s; N = 1000: 6 s to 72 s) and to the
 * millisecond for the points on the log curve between, so a change of formula, of rounding
 * or of the order of the floating point operations fails here before it shifts the
 * simulator's results.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "suspicion.h"

/* rd_swim_config_default()'s values: 1 s period, mult 2, max_mult 12, k = 2. */
static const struct rd_suspicion_config lan = {
    .probe_interval_ms = 1000,
    .suspicion_mult = 2,
    .suspicion_max_mult = 12,
    .suspicion_confirmations = 2,
};

struct timeout_case {
    uint32_t k; /* suspicion_confirmations */
    size_t n;   /* live members, self included */
    uint32_t confirmations;
    uint64_t want_ms;
};

static const struct timeout_case timeouts[] = {
    /* too few members to confirm (n - 2 < k): always the minimum */
    {2, 1, 0, 2000},
    {2, 2, 0, 2000},
    {2, 3, 0, 2000},
    {2, 3, 5, 2000},
    /* n = 4 .. 10: min 2 s (log10 N counts from 10 on), max 12 x min */
    {2, 4, 0, 24000},
    {2, 4, 1, 10119},
    {2, 4, 2, 2000},
    {2, 10, 0, 24000},
    {2, 10, 1, 10119}, /* 24000 - log 2 / log 3 x 22000 */
    {2, 10, 2, 2000},
    {2, 10, 3, 2000}, /* more confirmations than k: never below the minimum */
    {2, 10, 100, 2000},
    /* above 10 the minimum grows with log10 N */
    {2, 11, 0, 24993},
    {2, 11, 1, 10538},
    {2, 11, 2, 2082},
    {2, 100, 0, 48000},
    {2, 100, 1, 20239},
    {2, 100, 2, 4000},
    {2, 1000, 0, 72000},
    {2, 1000, 1, 30358},
    {2, 1000, 2, 6000},
    {2, 5000, 0, 88775},
    {2, 5000, 1, 37431},
    {2, 5000, 2, 7397},
    /* k = 5 needs 7 members; one fewer and it is clamped to 0 */
    {5, 6, 0, 2000},
    {5, 6, 4, 2000},
    {5, 7, 0, 24000},
    {5, 7, 1, 15489},
    {5, 7, 2, 10510},
    {5, 7, 3, 6978},
    {5, 7, 4, 4238},
    {5, 7, 5, 2000},
    /* k = 1: one confirmation is all the way down */
    {1, 2, 0, 2000},
    {1, 3, 0, 24000},
    {1, 3, 1, 2000},
    /* k = 0: no confirmations expected, the minimum at once */
    {0, 100, 0, 4000},
};

static void test_timeout_table(void **state)
{
    for (size_t c = 0; c < sizeof timeouts / sizeof timeouts[0]; c++) {
        const struct timeout_case *tc = &timeouts[c];
        struct rd_suspicion_config cfg = lan;
        cfg.suspicion_confirmations = tc->k;
        uint64_t got = rd_suspicion_timeout(&cfg, tc->n, tc->confirmations);
        if (got != tc->want_ms)
            fail_msg("k=%u N=%zu confirmations=%u: %llu ms, expected %llu", tc->k, tc->n,
                     tc->confirmations, (unsigned long long)got, (unsigned long long)tc->want_ms);
    }
}

/* Timeouts scale with the probe interval and the multipliers, not with anything else. */
static void test_timeout_scales_with_the_configuration(void **state)
{
    struct rd_suspicion_config cfg = lan;
    cfg.probe_interval_ms = 500;
    assert_int_equal(rd_suspicion_timeout(&cfg, 10, 0), 12000);
    assert_int_equal(rd_suspicion_timeout(&cfg, 10, 2), 1000);
    cfg = lan;
    cfg.suspicion_mult = 4; /* memberlist's LAN value */
    assert_int_equal(rd_suspicion_timeout(&cfg, 100, 0), 96000);
    assert_int_equal(rd_suspicion_timeout(&cfg, 100, 2), 8000);
    cfg = lan;
    cfg.suspicion_max_mult = 1; /* max = min: confirmations change nothing */
    assert_int_equal(rd_suspicion_timeout(&cfg, 100, 0), 4000);
    assert_int_equal(rd_suspicion_timeout(&cfg, 100, 1), 4000);
}

/*
 * A suspicion's accusers: a table of accusations after the first, each with whether it
 * confirms and the deadline after it (N = 10, started at t = 1000 by "a").
 */
struct accusation {
    const char *accuser;
    bool confirms;
    uint64_t deadline_ms;
};

static void test_duplicate_and_empty_accusers_do_not_confirm(void **state)
{
    static const struct accusation steps[] = {
        {"a", false, 25000}, /* the first accuser again */
        {"", false, 25000},  /* nobody */
        {"b", true, 11119},  /* one confirmation: 1000 + 10119 */
        {"b", false, 11119}, {"a", false, 11119}, {"c", true, 3000}, /* two: down to the minimum */
        {"d", true, 3000},                                           /* more: never below it */
    };
    struct rd_suspicion sp;
    rd_suspicion_start(&sp, &lan, 10, "a", 1000);
    assert_int_equal(sp.start_ms, 1000);
    assert_int_equal(sp.deadline_ms, 25000);
    assert_int_equal(sp.naccusers, 1);
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        bool got = rd_suspicion_confirm(&sp, &lan, 10, steps[k].accuser);
        if (got != steps[k].confirms || sp.deadline_ms != steps[k].deadline_ms)
            fail_msg("step %zu (\"%s\"): confirms %d, deadline %llu; expected %d, %llu", k,
                     steps[k].accuser, got, (unsigned long long)sp.deadline_ms, steps[k].confirms,
                     (unsigned long long)steps[k].deadline_ms);
    }
    assert_int_equal(sp.naccusers, 4);
    assert_int_equal(sp.start_ms, 1000);
}

/* A new suspicion forgets the accusers of the last one. */
static void test_restart_forgets_accusers(void **state)
{
    struct rd_suspicion sp;
    rd_suspicion_start(&sp, &lan, 10, "a", 0);
    assert_true(rd_suspicion_confirm(&sp, &lan, 10, "b"));
    rd_suspicion_start(&sp, &lan, 10, "c", 5000);
    assert_int_equal(sp.naccusers, 1);
    assert_int_equal(sp.deadline_ms, 29000);
    assert_true(rd_suspicion_confirm(&sp, &lan, 10, "b"));
    assert_int_equal(sp.deadline_ms, 5000 + 10119);
}

/* A suspicion heard without an accuser: the first one named is no confirmation yet. */
static void test_suspicion_without_accuser(void **state)
{
    struct rd_suspicion sp;
    rd_suspicion_start(&sp, &lan, 10, "", 0);
    assert_int_equal(sp.naccusers, 0);
    assert_int_equal(sp.deadline_ms, 24000);
    assert_true(rd_suspicion_confirm(&sp, &lan, 10, "a"));
    assert_int_equal(sp.deadline_ms, 24000);
    assert_true(rd_suspicion_confirm(&sp, &lan, 10, "b"));
    assert_int_equal(sp.deadline_ms, 10119);
}

/* A suspicion started among 3 known members (2 s), read again once 1,000 are known: it
 * takes the longer timeout of the larger cluster, counting its confirmations, never a
 * shorter one. */
static void test_extend_follows_the_cluster_known_at_expiry(void **state)
{
    struct rd_suspicion sp;
    rd_suspicion_start(&sp, &lan, 3, "a", 1000);
    assert_int_equal(sp.deadline_ms, 3000);
    assert_true(rd_suspicion_extend(&sp, &lan, 1000, 0));
    assert_int_equal(sp.deadline_ms, 1000 + rd_suspicion_timeout(&lan, 1000, 0));
    assert_int_equal(sp.deadline_ms, 73000);
    assert_false(rd_suspicion_extend(&sp, &lan, 1000, 0)); /* read again: nothing moves */
    assert_false(rd_suspicion_extend(&sp, &lan, 3, 0));    /* fewer known: never earlier */
    assert_int_equal(sp.deadline_ms, 73000);
    /* two confirmations: the minimum of the larger cluster, still later than 3000 */
    rd_suspicion_start(&sp, &lan, 3, "a", 1000);
    assert_true(rd_suspicion_confirm(&sp, &lan, 3, "b"));
    assert_true(rd_suspicion_confirm(&sp, &lan, 3, "c"));
    assert_int_equal(sp.deadline_ms, 3000);
    assert_true(rd_suspicion_extend(&sp, &lan, 1000, 0));
    assert_int_equal(sp.deadline_ms, 1000 + 6000);
}

/* At expiry, our own local health stretches the timeout by (health + 1), up to the maximum
 * for the cluster; health 0 changes nothing, and the stretch never shortens a deadline. */
static void test_extend_stretched_by_local_health(void **state)
{
    (void)state;
    struct rd_suspicion sp;
    /* N = 1000: min 6 s, max 72 s; two confirmations bring it to min */
    rd_suspicion_start(&sp, &lan, 1000, "a", 0);
    assert_true(rd_suspicion_confirm(&sp, &lan, 1000, "b"));
    assert_true(rd_suspicion_confirm(&sp, &lan, 1000, "c"));
    assert_int_equal(sp.deadline_ms, 6000);
    assert_false(rd_suspicion_extend(&sp, &lan, 1000, 0));
    assert_true(rd_suspicion_extend(&sp, &lan, 1000, 2));
    assert_int_equal(sp.deadline_ms, 18000);
    assert_false(rd_suspicion_extend(&sp, &lan, 1000, 1)); /* healthier later: not earlier */
    assert_int_equal(sp.deadline_ms, 18000);
    assert_true(rd_suspicion_extend(&sp, &lan, 1000, 8));
    assert_int_equal(sp.deadline_ms, 54000);
    /* unconfirmed: 72 s already, the maximum; health cannot go past it */
    rd_suspicion_start(&sp, &lan, 1000, "a", 0);
    assert_int_equal(sp.deadline_ms, 72000);
    assert_false(rd_suspicion_extend(&sp, &lan, 1000, 8));
    assert_int_equal(sp.deadline_ms, 72000);
    /* one confirmation (between min and max): stretched, then capped at max */
    rd_suspicion_start(&sp, &lan, 1000, "a", 0);
    assert_true(rd_suspicion_confirm(&sp, &lan, 1000, "b"));
    uint64_t one = sp.deadline_ms;
    assert_true(one > 6000 && one < 72000);
    assert_true(rd_suspicion_extend(&sp, &lan, 1000, 8));
    assert_int_equal(sp.deadline_ms, 72000);
}

/* The storm score: distinct refuters over this window and the one before, less one. */
static void test_storm_counts_distinct_refuters(void **state)
{
    (void)state;
    struct rd_storm st = {0};
    const uint64_t w = 10000;
    assert_int_equal(rd_storm_score(&st, 50000, w, 8), 0);
    rd_storm_refuted(&st, "a", 50000, w);
    assert_int_equal(rd_storm_score(&st, 50000, w, 8), 0); /* one refuter is no storm */
    for (int k = 0; k < 20; k++)
        rd_storm_refuted(&st, "a", 50000 + 100 * k, w); /* a flapper counts once */
    assert_int_equal(rd_storm_score(&st, 52000, w, 8), 0);
    rd_storm_refuted(&st, "b", 53000, w);
    rd_storm_refuted(&st, "c", 54000, w);
    assert_int_equal(rd_storm_score(&st, 54000, w, 8), 2);
    assert_int_equal(rd_storm_score(&st, 54000, w, 1), 1); /* at most the ceiling */
    /* the next window: the last one still counts, and a name in both counts once */
    rd_storm_refuted(&st, "c", 61000, w);
    rd_storm_refuted(&st, "d", 62000, w);
    assert_int_equal(rd_storm_score(&st, 62000, w, 8), 3);
    /* a window later, only the refuters of 60-70 s count; two later, none */
    assert_int_equal(rd_storm_score(&st, 75000, w, 8), 1);
    assert_int_equal(rd_storm_score(&st, 85000, w, 8), 0);
    /* reading is not moving: the record still holds what came */
    assert_int_equal(rd_storm_score(&st, 62000, w, 8), 3);
    /* after a long quiet both windows are forgotten at once */
    rd_storm_refuted(&st, "e", 200000, w);
    assert_int_equal(rd_storm_score(&st, 200000, w, 8), 0);
    /* a clock read before the window began counts as its start */
    rd_storm_refuted(&st, "f", 150000, w);
    assert_int_equal(rd_storm_score(&st, 200000, w, 8), 1);
    assert_int_equal(rd_storm_score(&st, 150000, w, 8), 1);
    /* no window, no storm */
    assert_int_equal(rd_storm_score(&st, 200000, 0, 8), 0);
}

/* Only RD_STORM_REFUTERS_MAX refuters are remembered per window. */
static void test_storm_capacity(void **state)
{
    (void)state;
    struct rd_storm st = {0};
    char name[8];
    for (int k = 0; k < 3 * RD_STORM_REFUTERS_MAX; k++) {
        snprintf(name, sizeof name, "m%d", k);
        rd_storm_refuted(&st, name, 1000, 10000);
    }
    assert_int_equal(st.ncur, RD_STORM_REFUTERS_MAX);
    assert_int_equal(rd_storm_score(&st, 1000, 10000, 100), RD_STORM_REFUTERS_MAX - 1);
    for (int k = 0; k < 3 * RD_STORM_REFUTERS_MAX; k++) {
        snprintf(name, sizeof name, "n%d", k);
        rd_storm_refuted(&st, name, 11000, 10000);
    }
    assert_int_equal(rd_storm_score(&st, 11000, 10000, 100), 2 * RD_STORM_REFUTERS_MAX - 1);
}

/* Only RD_SUSPICION_ACCUSERS_MAX accusers are remembered; later ones confirm nothing. */
static void test_accuser_capacity(void **state)
{
    struct rd_suspicion_config cfg = lan;
    cfg.suspicion_confirmations = 20; /* so that every confirmation moves the deadline */
    struct rd_suspicion sp;
    rd_suspicion_start(&sp, &cfg, 100, "m0", 0);
    uint64_t last = sp.deadline_ms;
    char name[8];
    for (int k = 1; k < RD_SUSPICION_ACCUSERS_MAX; k++) {
        snprintf(name, sizeof name, "m%d", k);
        assert_true(rd_suspicion_confirm(&sp, &cfg, 100, name));
        assert_true(sp.deadline_ms < last);
        last = sp.deadline_ms;
    }
    assert_int_equal(sp.naccusers, RD_SUSPICION_ACCUSERS_MAX);
    assert_false(rd_suspicion_confirm(&sp, &cfg, 100, "one-too-many"));
    assert_int_equal(sp.deadline_ms, last);
    assert_int_equal(sp.naccusers, RD_SUSPICION_ACCUSERS_MAX);
    /* a known accuser is still recognised as one */
    assert_false(rd_suspicion_confirm(&sp, &cfg, 100, "m3"));
}

/* Local health: a table of events and the score after each (ceiling 8). */
enum health_event { FAILED, ACKED, REFUTED };

struct health_step {
    enum health_event ev;
    uint32_t expected, nacks; /* FAILED: helpers asked, nacks that came back */
    uint32_t score;
};

static void test_health_table(void **state)
{
    static const struct health_step steps[] = {
        {ACKED, 0, 0, 0},  /* never below 0 */
        {FAILED, 3, 3, 0}, /* every helper nacked: the target's fault, not ours */
        {FAILED, 3, 1, 2}, /* two helpers silent: our network is suspect */
        {FAILED, 0, 0, 3}, /* no helpers asked: counts one */
        {ACKED, 0, 0, 2},
        {REFUTED, 0, 0, 3},
        {FAILED, 3, 0, 6},
        {FAILED, 3, 0, 8}, /* the ceiling */
        {REFUTED, 0, 0, 8},
        {FAILED, 0, 0, 8},
        {ACKED, 0, 0, 7},
        {ACKED, 0, 0, 6},
        /* more nacks than helpers asked (duplicated or forged): nothing missing, no
         * penalty, and no wrap-around */
        {FAILED, 3, 5, 6},
    };
    struct rd_health h = {0};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; k++) {
        const struct health_step *st = &steps[k];
        if (st->ev == FAILED)
            rd_health_probe_failed(&h, st->expected, st->nacks, 8);
        else if (st->ev == ACKED)
            rd_health_probe_acked(&h);
        else
            rd_health_refuted(&h, 8);
        if (h.score != st->score)
            fail_msg("step %zu: score %u, expected %u", k, h.score, st->score);
    }
}

/* Timeouts and periods stretch by (score + 1); a ceiling of 0 keeps them as they are. */
static void test_health_scaling_and_zero_ceiling(void **state)
{
    struct rd_health h = {0};
    assert_int_equal(rd_health_scale(&h, 500), 500);
    h.score = 3;
    assert_int_equal(rd_health_scale(&h, 500), 2000);
    h.score = 8;
    assert_int_equal(rd_health_scale(&h, 1000), 9000);
    h.score = 0;
    rd_health_probe_failed(&h, 3, 0, 0);
    rd_health_refuted(&h, 0);
    assert_int_equal(h.score, 0);
    assert_int_equal(rd_health_scale(&h, 1000), 1000);
}

/* A late loop raises the score, if lower, so that (score + 1) x timeout covers the lag. */
static void test_health_raised_by_lag(void **state)
{
    static const struct {
        uint64_t lag_ms;
        uint32_t before, after;
    } rows[] = {
        {0, 0, 0},     {500, 0, 0},  {501, 0, 1},
        {1500, 0, 2},  {1501, 0, 3}, {1500, 5, 5}, /* never lowered */
        {60000, 0, 8},                             /* the ceiling */
        {60000, 8, 8},
    };
    for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++) {
        struct rd_health h = {rows[k].before};
        rd_health_lagged(&h, rows[k].lag_ms, 500, 8);
        if (h.score != rows[k].after)
            fail_msg("row %zu: score %u, expected %u", k, h.score, rows[k].after);
    }
    struct rd_health h = {0};
    rd_health_lagged(&h, 60000, 500, 0);
    assert_int_equal(h.score, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timeout_table),
        cmocka_unit_test(test_timeout_scales_with_the_configuration),
        cmocka_unit_test(test_duplicate_and_empty_accusers_do_not_confirm),
        cmocka_unit_test(test_restart_forgets_accusers),
        cmocka_unit_test(test_suspicion_without_accuser),
        cmocka_unit_test(test_extend_follows_the_cluster_known_at_expiry),
        cmocka_unit_test(test_extend_stretched_by_local_health),
        cmocka_unit_test(test_accuser_capacity),
        cmocka_unit_test(test_storm_counts_distinct_refuters),
        cmocka_unit_test(test_storm_capacity),
        cmocka_unit_test(test_health_table),
        cmocka_unit_test(test_health_scaling_and_zero_ceiling),
        cmocka_unit_test(test_health_raised_by_lag),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
