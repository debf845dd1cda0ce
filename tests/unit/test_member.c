/*
 * test_member.c — tag strings edited at run time (TAGS SET and DEL on the query socket).
 *
 * The member record carries its tags as one "k=v,k=v" string; these edits must keep it
 * valid, keep the order of the other tags, and leave it untouched when they refuse.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "member.h"
#include "rd_err.h"

static void test_set_appends_then_replaces_in_place(void **state)
{
    char tags[RD_TAGS_MAX + 1] = "";
    assert_int_equal(rd_tags_set(tags, "role", "db"), 0);
    assert_string_equal(tags, "role=db");
    assert_int_equal(rd_tags_set(tags, "rack", "r1"), 0);
    assert_int_equal(rd_tags_set(tags, "dc", "eu/1"), 0);
    assert_string_equal(tags, "role=db,rack=r1,dc=eu/1");
    assert_int_equal(rd_tags_set(tags, "rack", "r2"), 0);
    assert_string_equal(tags, "role=db,dc=eu/1,rack=r2");
    /* a key that is a prefix of another is another key */
    assert_int_equal(rd_tags_set(tags, "ro", "x"), 0);
    assert_string_equal(tags, "role=db,dc=eu/1,rack=r2,ro=x");
    assert_true(rd_tags_valid(tags, strlen(tags)));
}

static void test_set_refuses_what_tag_refuses_and_leaves_tags_alone(void **state)
{
    char tags[RD_TAGS_MAX + 1] = "a=1";
    assert_int_equal(rd_tags_set(tags, "", "v"), RD_EINVAL);
    assert_int_equal(rd_tags_set(tags, "k", ""), RD_EINVAL);
    assert_int_equal(rd_tags_set(tags, "k=x", "v"), RD_EINVAL);
    assert_int_equal(rd_tags_set(tags, "k", "a,b"), RD_EINVAL);
    assert_int_equal(rd_tags_set(tags, "k", "sp ace"), RD_EINVAL);
    assert_string_equal(tags, "a=1");
}

static void test_set_is_bounded_by_tags_max(void **state)
{
    char tags[RD_TAGS_MAX + 1] = "";
    char value[RD_TAGS_MAX + 1];
    memset(value, 'v', RD_TAGS_MAX - 2);
    value[RD_TAGS_MAX - 2] = '\0';
    assert_int_equal(rd_tags_set(tags, "k", value), 0); /* exactly RD_TAGS_MAX bytes */
    assert_int_equal(strlen(tags), RD_TAGS_MAX);
    assert_int_equal(rd_tags_set(tags, "j", "1"), RD_E2BIG);
    assert_int_equal(strlen(tags), RD_TAGS_MAX);
    value[RD_TAGS_MAX - 2] = 'v';
    value[RD_TAGS_MAX - 1] = '\0';
    assert_int_equal(rd_tags_set(tags, "k", value), RD_E2BIG); /* one byte over */
    assert_int_equal(rd_tags_set(tags, "k", "short"), 0);
    assert_string_equal(tags, "k=short");
}

static void test_del_removes_one_tag_and_keeps_the_order(void **state)
{
    char tags[RD_TAGS_MAX + 1] = "a=1,bb=2,b=3";
    assert_int_equal(rd_tags_del(tags, "b"), 0);
    assert_string_equal(tags, "a=1,bb=2");
    assert_int_equal(rd_tags_del(tags, "b"), RD_ENOENT);
    assert_int_equal(rd_tags_del(tags, "a"), 0);
    assert_string_equal(tags, "bb=2");
    assert_int_equal(rd_tags_del(tags, "bb"), 0);
    assert_string_equal(tags, "");
    assert_int_equal(rd_tags_del(tags, "bb"), RD_ENOENT);
}

static void test_weight_zero_is_a_valid_record(void **state)
{
    struct rd_member m = {.name = "n1", .weight = 0};
    assert_true(rd_member_valid(&m));
    m.weight = RD_WEIGHT_MAX + 1;
    assert_false(rd_member_valid(&m));
}

/* A key matches whole: "ketama" is not "ketamax" nor "xketama"; a value too long for out is
 * reported absent, and out is left alone. */
static void test_get_finds_a_whole_key_and_refuses_a_value_too_long(void **state)
{
    (void)state;
    const char *tags = "xketama=a,ketamax=b,ketama=10.0.0.1:11211,k=";
    char out[32] = "untouched";
    assert_true(rd_tags_get(tags, "ketama", out, sizeof out));
    assert_string_equal(out, "10.0.0.1:11211");
    assert_true(rd_tags_get(tags, "xketama", out, sizeof out));
    assert_string_equal(out, "a");
    assert_false(rd_tags_get(tags, "ket", out, sizeof out));
    assert_false(rd_tags_get("", "ketama", out, sizeof out));
    char small[8] = "same";
    assert_false(rd_tags_get(tags, "ketama", small, sizeof small));
    assert_string_equal(small, "same");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_appends_then_replaces_in_place),
        cmocka_unit_test(test_set_refuses_what_tag_refuses_and_leaves_tags_alone),
        cmocka_unit_test(test_set_is_bounded_by_tags_max),
        cmocka_unit_test(test_del_removes_one_tag_and_keeps_the_order),
        cmocka_unit_test(test_weight_zero_is_a_valid_record),
        cmocka_unit_test(test_get_finds_a_whole_key_and_refuses_a_value_too_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
