/*
 * test_ringparams.c — the ring parameter rule: what a SYNC whose sender builds another ring
 * means, on each side of the exchange, case by case (proto/PROTOCOL.md, "Ring parameters").
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "rd_err.h"
#include "ring.h"
#include "ringparams.h"

#define V RD_SYNC_VNODES_SET
#define M RD_SYNC_MODE_SET

static const struct rd_ring_params P512 = {1, RD_RING_MODE_RINGD, 512};
static const struct rd_ring_params P64 = {1, RD_RING_MODE_RINGD, 64};
static const struct rd_ring_params KETAMA512 = {1, RD_RING_MODE_KETAMA, 512};
static const struct rd_ring_params SPEC2 = {2, RD_RING_MODE_RINGD, 512};
static const struct rd_ring_params MODE9 = {1, 9, 512};

struct judge_case {
    const char *what;
    struct rd_ring_side ours, theirs;
    bool answer;
    enum rd_ring_verdict want;
};

static const char *verdict_name(enum rd_ring_verdict v)
{
    static const char *const names[] = {"agree", "adopt", "refuse", "stop"};
    return names[v];
}

static void run_cases(const struct judge_case *c, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        enum rd_ring_verdict got = rd_ring_judge(&c[i].ours, &c[i].theirs, c[i].answer);
        printf("  %-70s %s\n", c[i].what, verdict_name(got));
        assert_string_equal(verdict_name(got), verdict_name(c[i].want));
    }
}

static void test_equal_parameters_always_agree(void **state)
{
    (void)state;
    const struct judge_case cases[] = {
        {"member hears a member", {P512, 0, false}, {P512, V, false}, false, RD_RING_AGREE},
        {"member answered by a member", {P512, V, false}, {P512, 0, false}, true, RD_RING_AGREE},
        {"joiner answered", {P64, V, true}, {P64, 0, false}, true, RD_RING_AGREE},
        {"seed hears a joiner", {P64, 0, false}, {P64, V | M, true}, false, RD_RING_AGREE},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void
test_a_seed_takes_in_a_joiner_that_will_adopt_and_refuses_one_that_set_otherwise(void **state)
{
    (void)state;
    const struct judge_case cases[] = {
        {"joiner with no flags", {P64, V, false}, {P512, 0, true}, false, RD_RING_AGREE},
        {"joiner that set only the mode, which agrees",
         {P64, V, false},
         {P512, M, true},
         false,
         RD_RING_AGREE},
        {"joiner that set another vnodes", {P64, 0, false}, {P512, V, true}, false, RD_RING_REFUSE},
        {"joiner that set another mode",
         {P512, 0, false},
         {KETAMA512, M, true},
         false,
         RD_RING_REFUSE},
        {"joiner of another spec, no flags",
         {P512, 0, false},
         {SPEC2, 0, true},
         false,
         RD_RING_REFUSE},
        {"a member (not joining) with other vnodes",
         {P64, 0, false},
         {P512, 0, false},
         false,
         RD_RING_REFUSE},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_a_joiner_adopts_what_it_did_not_set_and_stops_on_what_it_did(void **state)
{
    (void)state;
    const struct judge_case cases[] = {
        {"no flags: adopt vnodes", {P512, 0, true}, {P64, V, false}, true, RD_RING_ADOPT},
        {"no flags: adopt a cluster's default",
         {P64, 0, true},
         {P512, 0, false},
         true,
         RD_RING_ADOPT},
        {"no flags: adopt the mode", {P512, 0, true}, {KETAMA512, 0, false}, true, RD_RING_ADOPT},
        {"set vnodes, the cluster differs: stop",
         {P64, V, true},
         {P512, 0, false},
         true,
         RD_RING_STOP},
        {"set the mode only, vnodes differs: adopt vnodes",
         {P64, M, true},
         {P512, 0, false},
         true,
         RD_RING_ADOPT},
        {"set the mode, the cluster's differs: stop",
         {KETAMA512, M, true},
         {P512, 0, false},
         true,
         RD_RING_STOP},
        {"another spec: stop even with no flags",
         {P512, 0, true},
         {SPEC2, 0, false},
         true,
         RD_RING_STOP},
        {"a mode this agent cannot build: stop",
         {P512, 0, true},
         {MODE9, 0, false},
         true,
         RD_RING_STOP},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

static void test_a_member_never_changes_its_ring(void **state)
{
    (void)state;
    const struct judge_case cases[] = {
        {"joined, answered with other vnodes",
         {P512, 0, false},
         {P64, V, false},
         true,
         RD_RING_REFUSE},
        {"joined, answered by a starting agent",
         {P512, 0, false},
         {P64, V, true},
         true,
         RD_RING_REFUSE},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
}

/* Two agents started at once, each the other's seed: exactly one of them adopts, whichever
 * exchange completes first, and neither stops. */
static void test_two_starting_agents_settle_on_the_one_that_set_its_parameters(void **state)
{
    (void)state;
    struct rd_ring_side set64 = {P64, V, true}, unset = {P512, 0, true};
    const struct judge_case cases[] = {
        {"set side hears the unset one", set64, unset, false, RD_RING_AGREE},
        {"unset side hears the set one", unset, set64, false, RD_RING_AGREE},
        {"set side answered by the unset one", set64, unset, true, RD_RING_AGREE},
        {"unset side answered by the set one", unset, set64, true, RD_RING_ADOPT},
    };
    run_cases(cases, sizeof cases / sizeof *cases);
    struct rd_ring_side set512 = {P512, V, true};
    const struct judge_case both_set[] = {
        {"both set, heard", set64, set512, false, RD_RING_REFUSE},
        {"both set, answered", set64, set512, true, RD_RING_STOP},
    };
    run_cases(both_set, sizeof both_set / sizeof *both_set);
}

static void test_modes_parse_and_format(void **state)
{
    (void)state;
    unsigned mode = 99;
    assert_int_equal(rd_ring_mode_parse("ringd", &mode), 0);
    assert_int_equal(mode, RD_RING_MODE_RINGD);
    assert_int_equal(rd_ring_mode_parse("ketama", &mode), 0);
    assert_int_equal(mode, RD_RING_MODE_KETAMA);
    const char *bad[] = {"", "Ketama", "ketama ", "ring", "0", "1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        assert_int_equal(rd_ring_mode_parse(bad[i], &mode), RD_EINVAL);
    assert_null(rd_ring_mode_name(2));
    char buf[64];
    assert_string_equal(rd_ring_params_format(&P64, buf, sizeof buf),
                        "spec=1 mode=ringd vnodes=64");
    assert_string_equal(rd_ring_params_format(&MODE9, buf, sizeof buf), "spec=1 mode=9 vnodes=512");
    char tiny[8];
    assert_string_equal(rd_ring_params_format(&P64, tiny, sizeof tiny), "spec=1 ");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_parameters_always_agree),
        cmocka_unit_test(
            test_a_seed_takes_in_a_joiner_that_will_adopt_and_refuses_one_that_set_otherwise),
        cmocka_unit_test(test_a_joiner_adopts_what_it_did_not_set_and_stops_on_what_it_did),
        cmocka_unit_test(test_a_member_never_changes_its_ring),
        cmocka_unit_test(test_two_starting_agents_settle_on_the_one_that_set_its_parameters),
        cmocka_unit_test(test_modes_parse_and_format),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
