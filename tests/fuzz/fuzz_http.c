/*
 * fuzz_http.c — libFuzzer target for the metrics endpoint's HTTP request parser
 * (proto/http.h).
 *
 * The parser promises that however a connection's bytes are split across reads, the outcome
 * is the same: so every input is parsed as one read of the whole stream, then read by read
 * with sizes the input chooses, and the two outcomes (code, status, reason, and the request
 * itself) must be equal. Every call is given a fresh heap copy of exactly the bytes received
 * so far, as the endpoint's buffer: ASan catches a read past them. Then the promises of an
 * outcome: a request lies inside the bytes and RD_HTTP_REQUEST_MAX, ends with an LF, is GET
 * or HEAD, and its path holds no '?' and no more than RD_HTTP_TARGET_MAX bytes; a refusal is
 * one of the five statuses with a reason, and its response head fits the endpoint's buffer;
 * "need more" never comes with RD_HTTP_REQUEST_MAX bytes in hand.
 *
 * Input: byte 0 gives n = byte % 16, the next n bytes are the read sizes (byte b reads b+1
 * bytes; they are used in turn, cycling; n = 0 reads one byte at a time), and the rest is the
 * stream. Build and run: see README.md beside this file.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "rd_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok) abort();
}

struct outcome {
    int rc, status;
    const char *reason;
    struct rd_http_request req;
};

/* Parses `in` in reads of the sizes given (all at once when sizes is NULL). */
static struct outcome parse(const uint8_t *in, size_t size, const uint8_t *sizes, size_t nsizes)
{
    struct rd_http_parser p;
    rd_http_parser_init(&p);
    size_t have = 0, k = 0;
    int rc = RD_EAGAIN;
    do {
        size_t step = !sizes ? size - have : nsizes ? (size_t)sizes[k++ % nsizes] + 1 : 1;
        have = step < size - have ? have + step : size;
        char *copy = malloc(have ? have : 1);
        check(copy != NULL);
        if (have) memcpy(copy, in, have);
        rc = rd_http_parse(&p, copy, have);
        free(copy);
    } while (rc == RD_EAGAIN && have < size);
    struct outcome o = {.rc = rc};
    if (rc == RD_EPROTO) {
        o.status = p.status;
        o.reason = p.reason;
    } else if (rc == 0) {
        o.req = p.req;
    }
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    size_t nsizes = data[0] % 16;
    if (size < 1 + nsizes) return 0;
    const uint8_t *sizes = data + 1, *in = data + 1 + nsizes;
    size_t len = size - 1 - nsizes;

    struct outcome whole = parse(in, len, NULL, 0);
    struct outcome split = parse(in, len, sizes, nsizes);
    check(whole.rc == split.rc && whole.status == split.status && whole.reason == split.reason);
    check(memcmp(&whole.req, &split.req, sizeof whole.req) == 0);

    if (whole.rc == 0) {
        const struct rd_http_request *r = &whole.req;
        check(r->length >= 1 && r->length <= len && r->length <= RD_HTTP_REQUEST_MAX);
        check(in[r->length - 1] == '\n');
        check(r->method == RD_HTTP_GET || r->method == RD_HTTP_HEAD);
        check(r->minor >= 0 && r->minor <= 9);
        check(r->path_off < r->length && r->path_len <= r->length - r->path_off);
        check(r->path_len <= RD_HTTP_TARGET_MAX);
        check(memchr(in + r->path_off, '?', r->path_len) == NULL);
        check(r->path_len == 0 || in[r->path_off] == '/');
        /* the request alone, without what followed it, is the same request */
        struct outcome alone = parse(in, r->length, NULL, 0);
        check(alone.rc == 0 && memcmp(&alone.req, r, sizeof *r) == 0);
    } else if (whole.rc == RD_EPROTO) {
        int s = whole.status;
        check(s == 400 || s == 405 || s == 414 || s == 431 || s == 505);
        check(whole.reason != NULL && whole.reason[0] != '\0');
        char head[256];
        size_t n = rd_http_response_head(head, sizeof head, s, "text/plain; charset=utf-8", 200);
        check(n < sizeof head && memcmp(head, "HTTP/1.1 ", 9) == 0);
    } else {
        check(whole.rc == RD_EAGAIN && len < RD_HTTP_REQUEST_MAX);
    }
    return 0;
}
