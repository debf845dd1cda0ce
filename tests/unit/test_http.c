/*
 * test_http.c — the metrics endpoint's HTTP/1.x request parser and response head
 * (proto/http.h).
 *
 * Each request test gives bytes and the outcome as a string: "GET /metrics 1 +N" (method,
 * path, minor version, bytes the request took), "more" (not complete yet), or the status
 * and reason of a refusal, "431 headers longer than the request limit". The same bytes are
 * then fed again as the endpoint would see them: in two reads split at every byte, and one
 * byte a read, and must give the same outcome.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http.h"
#include "rd_err.h"

/* A string literal with its length, NULs and all. */
#define B(s) s, sizeof(s) - 1

static void describe(const struct rd_http_parser *p, int rc, const char *buf, char *out, size_t cap)
{
    if (rc == RD_EAGAIN) {
        snprintf(out, cap, "more");
    } else if (rc == RD_EPROTO) {
        snprintf(out, cap, "%d %s", p->status, p->reason);
    } else if (rc == 0) {
        snprintf(out, cap, "%s %.*s %d +%zu", p->req.method == RD_HTTP_GET ? "GET" : "HEAD",
                 (int)p->req.path_len, buf + p->req.path_off, p->req.minor, p->req.length);
    } else {
        snprintf(out, cap, "rc %d", rc);
    }
}

/* The outcome of `len` bytes fed in reads of the sizes cuts[] gives (0-terminated), each
 * call on a fresh copy of every byte so far, as if the buffer had moved. */
static void feed(const char *bytes, size_t len, const size_t *cuts, char *out, size_t cap)
{
    struct rd_http_parser p;
    rd_http_parser_init(&p);
    size_t have = 0;
    int rc = RD_EAGAIN;
    for (size_t k = 0; rc == RD_EAGAIN && have < len; k++) {
        size_t step = cuts[k] ? cuts[k] : len - have;
        have = have + step < len ? have + step : len;
        char *copy = malloc(have ? have : 1);
        assert_non_null(copy);
        memcpy(copy, bytes, have);
        rc = rd_http_parse(&p, copy, have);
        describe(&p, rc, bytes, out, cap);
        free(copy);
    }
    if (len == 0) describe(&p, rd_http_parse(&p, "", 0), bytes, out, cap);
}

static void expect(const char *bytes, size_t len, const char *want)
{
    char got[256];
    size_t whole[] = {0};
    feed(bytes, len, whole, got, sizeof got);
    if (strcmp(got, want) != 0) fail_msg("whole: got \"%s\", want \"%s\"", got, want);
    for (size_t at = 1; at < len; at++) {
        size_t split[] = {at, 0};
        feed(bytes, len, split, got, sizeof got);
        if (strcmp(got, want) != 0)
            fail_msg("split at %zu: got \"%s\", want \"%s\"", at, got, want);
    }
    size_t *ones = malloc((len + 1) * sizeof *ones);
    assert_non_null(ones);
    for (size_t i = 0; i < len; i++)
        ones[i] = 1;
    ones[len] = 0;
    feed(bytes, len, ones, got, sizeof got);
    free(ones);
    if (strcmp(got, want) != 0) fail_msg("a byte a read: got \"%s\", want \"%s\"", got, want);
}

static void test_http_get_and_head(void **state)
{
    expect(B("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"), "GET /metrics 1 +34");
    expect(B("HEAD /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n"), "HEAD /metrics 1 +48");
    /* what Prometheus sends */
    expect(B("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9100\r\nUser-Agent: Prometheus/2.42.0\r\n"
             "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"
             "\r\nAccept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 1\r\n\r\n"),
           "GET /metrics 1 +224");
    /* HTTP/1.0 needs no Host; a later 1.x minor is taken as 1.1 would be */
    expect(B("GET /metrics HTTP/1.0\r\n\r\n"), "GET /metrics 0 +25");
    expect(B("GET / HTTP/1.9\r\nHost: x\r\n\r\n"), "GET / 9 +27");
    /* the bytes after the empty line are not this request's */
    expect(B("GET /a HTTP/1.0\r\n\r\nGET /b HTTP/1.0\r\n\r\n"), "GET /a 0 +19");
    /* header values: spaces around, empty, obs-text; Content-Length 0 is no body */
    expect(B("GET /m HTTP/1.1\r\nHost:x\r\nX-A:  \t\r\nX-B: caf\xc3\xa9\r\nContent-Length: "
             "00\r\n\r\n"),
           "GET /m 1 +68");
}

static void test_http_target_forms(void **state)
{
    expect(B("GET /metrics?name[]=up&x=%20 HTTP/1.1\r\nHost: x\r\n\r\n"), "GET /metrics 1 +50");
    expect(B("GET /metrics? HTTP/1.1\r\nHost: x\r\n\r\n"), "GET /metrics 1 +35");
    expect(B("GET http://h:9/metrics?q HTTP/1.1\r\nHost: h:9\r\n\r\n"), "GET /metrics 1 +48");
    expect(B("GET HTTP://h HTTP/1.1\r\nHost: h\r\n\r\n"), "GET  1 +34");
    expect(B("GET http:// HTTP/1.1\r\nHost: x\r\n\r\n"), "400 an absolute target without a host");
    expect(B("GET * HTTP/1.1\r\nHost: x\r\n\r\n"),
           "400 a target in neither origin nor absolute form");
    expect(B("GET metrics HTTP/1.1\r\n"), "400 a target in neither origin nor absolute form");
    expect(B("GET /a#b HTTP/1.1\r\n"), "400 a byte not allowed in a target");
    expect(B("GET /caf\xc3\xa9 HTTP/1.1\r\n"), "400 a byte not allowed in a target");
}

/* A bare LF ends a line as CRLF does (RFC 9112 §2.2); a CR must come before an LF. */
static void test_http_line_ends(void **state)
{
    expect(B("GET /metrics HTTP/1.1\nHost: x\n\n"), "GET /metrics 1 +31");
    expect(B("GET /metrics HTTP/1.1\r\nHost: x\n\r\n"), "GET /metrics 1 +33");
    expect(B("GET /metrics HTTP/1.1\rHost: x\r\n\r\n"), "400 a CR not followed by LF");
    expect(B("GET /metrics HTTP/1.1\r\nHost: x\r\r\n"), "400 a CR not followed by LF");
    expect(B("\r\nGET /metrics HTTP/1.1\r\n"), "400 an empty line before the request line");
}

static void test_http_incomplete(void **state)
{
    expect(B(""), "more");
    expect(B("GET"), "more");
    expect(B("GET /metrics HTTP/1.1\r\nHost: x\r\n"), "more");
    expect(B("GET /metrics HTTP/1.1\r\nHost: x\r\n\r"), "more");
}

static void test_http_statuses(void **state)
{
    expect(B("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\n\r\nx"),
           "405 a method other than GET and HEAD");
    expect(B("get /metrics HTTP/1.1\r\n"), "405 a method other than GET and HEAD");
    expect(B("GETS /metrics HTTP/1.1\r\n"), "405 a method other than GET and HEAD");
    expect(B("GET /metrics HTTP/2.0\r\n"), "505 an HTTP version other than 1.x");
    expect(B("GET /metrics HTTP/0.9\r\n"), "505 an HTTP version other than 1.x");
    /* the version is checked before the method */
    expect(B("PUT / HTTP/3.0\r\n"), "505 an HTTP version other than 1.x");
    expect(B("GET /metrics HTTP/1.x\r\n"), "400 a malformed HTTP version");
    expect(B("GET /metrics http/1.1\r\n"), "400 a malformed HTTP version");
    expect(B("GET /metrics HTTP/1.1.1\r\n"), "400 a version too long");
    expect(B("GET /metrics HTTP/11\r\n"), "400 a malformed HTTP version");
    expect(B("GET /metrics\r\n"), "400 a request line that is not METHOD SP target SP version");
    expect(B("GET /metrics \r\n"), "400 a request line that is not METHOD SP target SP version");
    expect(B("GET  /metrics HTTP/1.1\r\n"), "400 an empty token in the request line");
    expect(B(" GET /metrics HTTP/1.1\r\n"), "400 an empty token in the request line");
    expect(B("GET /metrics HTTP/1.1 x\r\n"), "400 more than two spaces in the request line");
    expect(B("GET\t/metrics HTTP/1.1\r\n"), "400 a method that is not a token");
    expect(B("GE(T /metrics HTTP/1.1\r\n"), "400 a method that is not a token");
    expect(B("ABCDEFGHIJKLMNOPQRSTUVWXYZ /"), "400 a method too long");
    /* headers */
    expect(B("GET / HTTP/1.1\r\n\r\n"), "400 not exactly one Host header");
    expect(B("GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"), "400 not exactly one Host header");
    expect(B("GET / HTTP/1.0\r\nHost: a\r\nHost: b\r\n\r\n"), "400 not exactly one Host header");
    expect(B("GET / HTTP/1.1\r\nHost x\r\n"), "400 a header name that is not a token");
    expect(B("GET / HTTP/1.1\r\nHost : x\r\n"), "400 a header name that is not a token");
    expect(B("GET / HTTP/1.1\r\nHost\r\n"), "400 a header line without ':'");
    expect(B("GET / HTTP/1.1\r\n: x\r\n"), "400 an empty header name");
    expect(B("GET / HTTP/1.1\r\nHost: x\r\n folded\r\n"), "400 a folded header line");
    expect(B("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"), "400 a request body");
    expect(B("GET / HTTP/1.1\r\nHost: x\r\ncontent-length: 0001\r\n\r\n"), "400 a request body");
    expect(B("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n"),
           "400 a malformed Content-Length");
    expect(B("GET / HTTP/1.1\r\nHost: x\r\nContent-Length:\r\n"), "400 an empty Content-Length");
    expect(B("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"), "400 a request body");
}

/* NULs and other control bytes are refused where they stand, in any part. */
static void test_http_control_bytes(void **state)
{
    expect(B("GET /metr\0ics HTTP/1.1\r\n"), "400 a control byte");
    expect(B("\0"), "400 a control byte");
    expect(B("GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n"), "400 a control byte");
    expect(B("GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n"), "400 a control byte");
    expect(B("GET / HTTP/1.1\r\nHo\x01st: a\r\n\r\n"), "400 a control byte");
    expect(B("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"), "400 a control byte"); /* TLS */
}

static char *repeat(const char *head, char c, size_t n, const char *tail, size_t *len)
{
    size_t hl = strlen(head), tl = strlen(tail);
    char *s = malloc(hl + n + tl + 1);
    assert_non_null(s);
    memcpy(s, head, hl);
    memset(s + hl, c, n);
    memcpy(s + hl + n, tail, tl + 1);
    *len = hl + n + tl;
    return s;
}

static void test_http_limits(void **state)
{
    size_t len;
    /* a target of RD_HTTP_TARGET_MAX bytes is fine; one more is 414 */
    char *s = repeat("GET /", 'a', RD_HTTP_TARGET_MAX - 1, " HTTP/1.1\r\nHost: x\r\n\r\n", &len);
    char want[64];
    struct rd_http_parser p;
    rd_http_parser_init(&p);
    assert_int_equal(rd_http_parse(&p, s, len), 0);
    assert_int_equal(p.req.path_len, RD_HTTP_TARGET_MAX);
    free(s);
    s = repeat("GET /", 'a', RD_HTTP_TARGET_MAX, " HTTP/1.1\r\nHost: x\r\n\r\n", &len);
    expect(s, len, "414 a target too long");
    free(s);
    /* the query string counts: it is part of the target */
    s = repeat("GET /metrics?", 'a', RD_HTTP_TARGET_MAX, " HTTP/1.1\r\n", &len);
    expect(s, len, "414 a target too long");
    free(s);

    /* headers: exactly RD_HTTP_REQUEST_MAX bytes complete; one more byte of header is 431 */
    const char *head = "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ";
    size_t fill = RD_HTTP_REQUEST_MAX - strlen(head) - 4;
    s = repeat(head, 'a', fill, "\r\n\r\n", &len);
    assert_int_equal(len, RD_HTTP_REQUEST_MAX);
    snprintf(want, sizeof want, "GET /metrics 1 +%u", RD_HTTP_REQUEST_MAX);
    expect(s, len, want);
    free(s);
    s = repeat(head, 'a', fill + 1, "\r\n\r\n", &len);
    expect(s, len, "431 headers longer than the request limit");
    /* and the limit holds however many bytes the caller offers */
    rd_http_parser_init(&p);
    assert_int_equal(rd_http_parse(&p, s, len), RD_EPROTO);
    assert_int_equal(p.scanned, RD_HTTP_REQUEST_MAX);
    free(s);
    /* many small headers run out the same way */
    char *many = malloc(RD_HTTP_REQUEST_MAX + 64);
    assert_non_null(many);
    strcpy(many, "GET / HTTP/1.1\r\nHost: x\r\n");
    len = strlen(many);
    while (len < RD_HTTP_REQUEST_MAX + 32) {
        memcpy(many + len, "A: b\r\n", 6);
        len += 6;
    }
    expect(many, len, "431 headers longer than the request limit");
    free(many);
}

/* The outcome sticks: more bytes do not change it. */
static void test_http_outcome_sticks(void **state)
{
    struct rd_http_parser p;
    rd_http_parser_init(&p);
    const char bad[] = "GET /\0 HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(rd_http_parse(&p, bad, 6), RD_EPROTO);
    assert_int_equal(rd_http_parse(&p, bad, sizeof bad - 1), RD_EPROTO);
    assert_int_equal(p.status, 400);
    rd_http_parser_init(&p);
    const char good[] = "GET / HTTP/1.0\r\n\r\nGARBAGE\0\0";
    assert_int_equal(rd_http_parse(&p, good, sizeof good - 1), 0);
    assert_int_equal(rd_http_parse(&p, good, sizeof good - 1), 0);
    assert_int_equal(p.req.length, 18);
}

static void test_http_response_head(void **state)
{
    char buf[256];
    size_t n = rd_http_response_head(buf, sizeof buf, 200, "text/plain; version=0.0.4", 1234);
    assert_string_equal(buf, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\n"
                             "Content-Length: 1234\r\nConnection: close\r\n\r\n");
    assert_int_equal(n, strlen(buf));
    rd_http_response_head(buf, sizeof buf, 405, "text/plain", 0);
    assert_string_equal(buf, "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: text/plain\r\n"
                             "Content-Length: 0\r\nConnection: close\r\nAllow: GET, HEAD\r\n\r\n");
    /* too small a buffer: the length it needs, and what fits, terminated */
    char small[8];
    assert_int_equal(rd_http_response_head(small, sizeof small, 431, "text/plain", 7),
                     strlen("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: "
                            "text/plain\r\nContent-Length: 7\r\nConnection: close\r\n\r\n"));
    assert_string_equal(small, "HTTP/1.");
    assert_string_equal(rd_http_status_text(414), "URI Too Long");
    assert_string_equal(rd_http_status_text(505), "HTTP Version Not Supported");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_http_get_and_head),  cmocka_unit_test(test_http_target_forms),
        cmocka_unit_test(test_http_line_ends),     cmocka_unit_test(test_http_incomplete),
        cmocka_unit_test(test_http_statuses),      cmocka_unit_test(test_http_control_bytes),
        cmocka_unit_test(test_http_limits),        cmocka_unit_test(test_http_outcome_sticks),
        cmocka_unit_test(test_http_response_head),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
