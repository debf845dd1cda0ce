/*
 * fuzz_resp.c — libFuzzer target for the RESP request parser (proto/resp.h).
 *
 * The parser promises that however a connection's bytes are split across reads, it hands
 * out the same requests and stops with the same error. So every input is parsed twice: as
 * one read of the whole stream, then as many reads whose sizes the input chooses. Each run
 * writes a transcript (every request's size and arguments, then the final status and its
 * reason), and the two transcripts must be byte for byte equal. Every call is given a fresh
 * heap copy of exactly the bytes pending, as a real receive buffer that may move between
 * reads: ASan catches a read past them, or a pointer kept into an older copy.
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

#include "buf.h"
#include "rd_err.h"
#include "resp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok) abort();
}

/* How a stream is cut into reads: all at once (sizes == NULL) or by a cycle of sizes. */
struct reads {
    const uint8_t *sizes;
    size_t nsizes;
    size_t next;
};

static size_t next_read(struct reads *r, size_t left)
{
    if (r->sizes == NULL) return left;
    size_t n = r->nsizes == 0 ? 1 : (size_t)r->sizes[r->next++ % r->nsizes] + 1;
    return n < left ? n : left;
}

static void note(struct rd_buf *log, const void *ptr, size_t len)
{
    check(rd_buf_append(log, ptr, len) == 0);
}

/* Checks one request against the parser's promises and appends it to the transcript. */
static void note_request(struct rd_buf *log, const struct rd_resp_request *req, const char *buf,
                         size_t len)
{
    check(req->consumed >= 1 && req->consumed <= len);
    check(req->consumed <= RD_RESP_MAX_REQUEST && req->argc <= RD_RESP_MAX_ARGS);
    note(log, "R", 1);
    note(log, &req->consumed, sizeof req->consumed);
    note(log, &req->argc, sizeof req->argc);
    for (size_t i = 0; i < req->argc; i++) {
        const struct rd_resp_arg *a = &req->argv[i];
        check(a->len <= RD_RESP_MAX_ARG);
        check(a->ptr >= buf && a->len <= req->consumed &&
              (size_t)(a->ptr - buf) <= req->consumed - a->len);
        note(log, &a->len, sizeof a->len);
        note(log, a->ptr, a->len);
    }
}

/* Parses `in` read by read as a connection would, writing what it yields to `log`. */
static void transcribe(const uint8_t *in, size_t size, struct reads *reads, struct rd_buf *log)
{
    struct rd_resp_parser p;
    rd_resp_parser_init(&p);
    size_t start = 0; /* first byte of the current request */
    size_t have = 0;  /* bytes received so far */
    int rc = RD_EAGAIN;
    const char *why = NULL;
    while (rc == RD_EAGAIN && have < size) {
        have += next_read(reads, size - have);
        for (;;) {
            size_t len = have - start;
            char *copy = malloc(len);
            check(copy != NULL || len == 0);
            if (len > 0) memcpy(copy, in + start, len);
            struct rd_resp_request req;
            rc = rd_resp_parse(&p, copy, len, &req, &why);
            if (rc == 0) {
                check(why == NULL);
                note_request(log, &req, copy, len);
                start += req.consumed;
            }
            free(copy);
            if (rc != 0) break;
        }
    }
    check(rc == RD_EAGAIN || rc == RD_EPROTO || rc == RD_E2BIG);
    check((rc == RD_EAGAIN) == (why == NULL));
    if (rc != RD_EAGAIN) {
        /* a broken stream stays broken, with the same reason */
        struct rd_resp_request req;
        const char *again = NULL;
        check(rd_resp_parse(&p, (const char *)in + start, size - start, &req, &again) == rc);
        check(again == why);
    }
    note(log, "S", 1);
    note(log, &rc, sizeof rc);
    if (why != NULL) note(log, why, strlen(why) + 1);
    rd_resp_parser_free(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    size_t nsizes = data[0] % 16u;
    if (size < 1 + nsizes) return 0;
    const uint8_t *stream = data + 1 + nsizes;
    size_t len = size - 1 - nsizes;

    struct reads whole = {NULL, 0, 0}, pieces = {data + 1, nsizes, 0};
    struct rd_buf a, b;
    rd_buf_init(&a);
    rd_buf_init(&b);
    transcribe(stream, len, &whole, &a);
    transcribe(stream, len, &pieces, &b);
    check(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
    rd_buf_free(&a);
    rd_buf_free(&b);
    return 0;
}
