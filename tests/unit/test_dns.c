/*
 * test_dns.c — the pure parts of seed resolution: reading "srv:NAME" and HOST:PORT seed
 * texts, building a seed list from several answers, and IPv4 first; and a resolver's
 * lifetime on a real loop, where the use-after-free would be: a literal answered through
 * the loop, a request abandoned and a resolver closed while a query waits (the name server
 * is a closed port on loopback). Answers from a real name server are checked in
 * tests/proc/test_dns.sh.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
    /* the longest name fits --join's text and the request's; one more is refused, not cut */
    char text[RD_HOSTPORT_MAX + 8];
    memcpy(text, RD_DNS_SRV_PREFIX, 4);
    memset(text + 4, 'a', RD_DNS_NAME_MAX);
    text[4 + RD_DNS_NAME_MAX] = '\0';
    assert_true(strlen(text) <= RD_HOSTPORT_MAX);
    assert_int_equal(rd_dns_spec_parse(text, 7946, &s, err, sizeof err), 0);
    memset(text + 4, 'a', RD_HOSTPORT_MAX);
    text[4 + RD_HOSTPORT_MAX] = '\0';
    assert_int_equal(rd_dns_spec_parse(text, 7946, &s, err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "at most 253"));
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

struct answers {
    int calls, rc;
    size_t n;
    struct rd_addr first;
};

static void on_answer(void *ctx, const char *text, int rc, const struct rd_addr *addrs, size_t n,
                      const char *why)
{
    (void)text, (void)why;
    struct answers *a = ctx;
    a->calls++;
    a->rc = rc;
    a->n = n;
    if (n) a->first = addrs[0];
}

static void stop_loop(uv_timer_t *t)
{
    uv_stop(t->loop);
}

/* Runs the loop for at most `ms`, or until nothing is left to run. */
static void run_for(uv_loop_t *loop, uint64_t ms)
{
    uv_timer_t guard;
    uv_timer_init(loop, &guard);
    uv_timer_start(&guard, stop_loop, ms, 0);
    uv_unref((uv_handle_t *)&guard);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_close((uv_handle_t *)&guard, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
}

/*
 * Literals are answered without a name server: the one given here takes datagrams on
 * loopback and never answers, and must receive nothing (c-ares alone asked it for A and
 * AAAA records of "127.0.0.5", and a server that dropped the AAAA query held a joining
 * agent for 2 s).
 */
static void test_literal_answered_through_the_loop(void **state)
{
    (void)state;
    int silent = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof sin;
    assert_true(silent >= 0);
    assert_int_equal(bind(silent, (struct sockaddr *)&sin, sizeof sin), 0);
    assert_int_equal(getsockname(silent, (struct sockaddr *)&sin, &len), 0);
    char server[32];
    snprintf(server, sizeof server, "127.0.0.1:%d", ntohs(sin.sin_port));
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct rd_dns *d;
    char err[256];
    assert_int_equal(rd_dns_start(&loop, server, &d, err, sizeof err), 0);
    struct answers a = {0}, a6 = {0};
    assert_int_equal(
        rd_dns_resolve(d, "127.0.0.5:7000", 7946, on_answer, &a, NULL, err, sizeof err), 0);
    assert_int_equal(rd_dns_resolve(d, "[::1]:7001", 7946, on_answer, &a6, NULL, err, sizeof err),
                     0);
    assert_int_equal(a.calls, 0); /* never from inside the call */
    uint64_t t0 = uv_hrtime();
    run_for(&loop, 2000);
    assert_true(uv_hrtime() - t0 < 500 * 1000000ull); /* nothing left waiting for a server */
    assert_int_equal(a.calls, 1);
    assert_int_equal(a.rc, 0);
    assert_int_equal(a.n, 1);
    struct rd_addr want = {.family = 4, .port = 7000, .ip = {127, 0, 0, 5}};
    assert_true(rd_addr_equal(&a.first, &want));
    assert_int_equal(a6.calls, 1);
    assert_int_equal(a6.rc, 0);
    struct rd_addr want6 = {.family = 6, .port = 7001, .ip = {[15] = 1}};
    assert_true(rd_addr_equal(&a6.first, &want6));
    char buf[512];
    assert_true(recv(silent, buf, sizeof buf, 0) < 0); /* no query reached the server */
    close(silent);
    rd_dns_close(d);
    run_for(&loop, 2000);
    assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_abandoned_and_closed_while_waiting(void **state)
{
    (void)state;
    uv_loop_t loop;
    uv_loop_init(&loop);
    struct rd_dns *d;
    char err[256];
    assert_int_equal(rd_dns_start(&loop, "127.0.0.1:1", &d, err, sizeof err), 0);
    struct answers kept = {0}, dropped = {0}, srv = {0};
    struct rd_dns_req *r;
    assert_int_equal(
        rd_dns_resolve(d, "seed.invalid:7946", 7946, on_answer, &dropped, &r, err, sizeof err), 0);
    rd_dns_abandon(r);
    assert_int_equal(
        rd_dns_resolve(d, "other.invalid:7946", 7946, on_answer, &kept, NULL, err, sizeof err), 0);
    run_for(&loop, 8000); /* the closed port refuses: the kept one fails, with a reason */
    assert_int_equal(dropped.calls, 0);
    assert_int_equal(kept.calls, 1);
    assert_true(kept.rc < 0);
    /* closed with a question out: its callback never runs, and nothing is left behind */
    assert_int_equal(rd_dns_resolve(d, "srv:_ringd._udp.x.invalid", 7946, on_answer, &srv, NULL,
                                    err, sizeof err),
                     0);
    rd_dns_close(d);
    run_for(&loop, 8000);
    assert_int_equal(srv.calls, 0);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_srv),
        cmocka_unit_test(test_spec_hostport),
        cmocka_unit_test(test_merge_dedups_keeps_order_and_cap),
        cmocka_unit_test(test_ipv4_first_is_stable),
        cmocka_unit_test(test_literal_answered_through_the_loop),
        cmocka_unit_test(test_abandoned_and_closed_while_waiting),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
