/*
 * test_dns.c — the pure parts of seed resolution: reading "srv:NAME" and HOST:PORT seed
 * texts, building a seed list from several answers, and IPv4 first. The resolver itself
 * is exercised against a real name server in tests/proc/test_dns.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "dns.h"
#include "rd_err.h"

static struct rd_addr v4(uint8_t last, uint16_t port)
{
    return (struct rd_addr){.family = 4, .port = port, .ip = {10, 0, 0, last}};
}

static struct rd_addr v6(uint8_t last, uint16_t port)
{
    struct rd_addr a = {.family = 6, .port = port};
    a.ip[0] = 0xfd;
    a.ip[15] = last;
    return a;
}

static void test_spec_srv(void **state)
{
    (void)state;
    struct rd_dns_spec s;
    char err[128];
    assert_int_equal(rd_dns_spec_parse("srv:_ringd._udp.example.org", 7946, &s, err, sizeof err),
                     0);
    assert_true(s.srv);
    assert_string_equal(s.host, "_ringd._udp.example.org");
    assert_int_equal(s.port, 0);
    assert_int_equal(rd_dns_spec_parse("srv:", 7946, &s, err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "srv:NAME"));
    assert_int_equal(rd_dns_spec_parse("srv:x.org:53", 7946, &s, err, sizeof err), RD_EINVAL);
    assert_int_equal(rd_dns_spec_parse("srv:a b", 7946, &s, err, sizeof err), RD_EINVAL);
}

static void test_spec_hostport(void **state)
{
    (void)state;
    struct rd_dns_spec s;
    char err[128];
    assert_int_equal(rd_dns_spec_parse("seeds.example.org", 7946, &s, err, sizeof err), 0);
    assert_false(s.srv);
    assert_string_equal(s.host, "seeds.example.org");
    assert_int_equal(s.port, 7946);
    assert_int_equal(rd_dns_spec_parse("[::1]:7000", 7946, &s, err, sizeof err), 0);
    assert_string_equal(s.host, "::1");
    assert_int_equal(s.port, 7000);
    assert_int_equal(rd_dns_spec_parse(":7000", 7946, &s, err, sizeof err), RD_EINVAL);
    assert_int_equal(rd_dns_spec_parse("h:0", 7946, &s, err, sizeof err), RD_EINVAL);
    /* "srv" alone is a host called srv, not an SRV seed */
    assert_int_equal(rd_dns_spec_parse("srv", 7946, &s, err, sizeof err), 0);
    assert_false(s.srv);
}

static void test_merge_dedups_keeps_order_and_cap(void **state)
{
    (void)state;
    struct rd_addr dst[4];
    struct rd_addr a[] = {v4(1, 7946), v4(2, 7946), v4(1, 7946)};
    size_t n = rd_dns_merge(dst, 0, 4, a, 3);
    assert_int_equal(n, 2);
    struct rd_addr b[] = {v4(2, 7946), v4(2, 7000), v4(3, 7946), v4(4, 7946)};
    n = rd_dns_merge(dst, n, 4, b, 4);
    assert_int_equal(n, 4); /* 10.0.0.2 at another port is another seed; the cap stops 4 */
    assert_true(rd_addr_equal(&dst[0], &a[0]));
    assert_true(rd_addr_equal(&dst[1], &a[1]));
    assert_true(rd_addr_equal(&dst[2], &b[1]));
    assert_true(rd_addr_equal(&dst[3], &b[2]));
}

static void test_ipv4_first_is_stable(void **state)
{
    (void)state;
    struct rd_addr a[] = {v6(1, 1), v4(1, 1), v6(2, 1), v4(2, 1), v4(3, 1)};
    rd_dns_ipv4_first(a, 5);
    uint8_t want_family[] = {4, 4, 4, 6, 6}, want_last[] = {1, 2, 3, 1, 2};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(a[i].family, want_family[i]);
        assert_int_equal(a[i].family == 4 ? a[i].ip[3] : a[i].ip[15], want_last[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_srv),
        cmocka_unit_test(test_spec_hostport),
        cmocka_unit_test(test_merge_dedups_keeps_order_and_cap),
        cmocka_unit_test(test_ipv4_first_is_stable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
