/*
 * test_resp.c — the RESP2 layer (proto/resp.h) and the byte buffer it writes into
 * (lib/buf.h).
 *
 * Most request tests describe a whole conversation as bytes and its outcome as a string,
 * e.g. "[OWNER|foo][PING]/EAGAIN": each parsed request in brackets, arguments separated by
 * '|', then the code that stopped the parse (and its reason for errors). The same bytes are
 * then fed again split at every byte boundary, each call on a fresh copy of the unconsumed
 * bytes (as if the caller's buffer had moved), and must give the same outcome.
 *
 * The randomised tests print their seed; replay one with RD_TEST_SEED=<seed>.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "buf.h"
#include "rd_err.h"
#include "resp.h"

/* ------------------------------------------------------------------ helpers */

/* A string literal with its length, NULs and all. */
#define LIT(s) (s), (sizeof(s) - 1)

static const char *code_name(int rc)
{
    switch (rc) {
    case RD_OK:
        return "OK";
    case RD_EAGAIN:
        return "EAGAIN";
    case RD_E2BIG:
        return "E2BIG";
    case RD_EPROTO:
        return "EPROTO";
    case RD_ENOMEM:
        return "ENOMEM";
    case RD_EINVAL:
        return "EINVAL";
    }
    return "?";
}

static void out_str(struct rd_buf *out, const char *s)
{
    assert_int_equal(rd_buf_append(out, s, strlen(s)), 0);
}

static void out_request(struct rd_buf *out, const struct rd_resp_request *req)
{
    out_str(out, "[");
    for (size_t i = 0; i < req->argc; i++) {
        if (i > 0) out_str(out, "|");
        /* NUL shown as "\\0" so that outcomes compare as C strings */
        for (size_t k = 0; k < req->argv[i].len; k++) {
            char c = req->argv[i].ptr[k];
            if (c == '\0')
                out_str(out, "\\0");
            else
                assert_int_equal(rd_buf_append(out, &c, 1), 0);
        }
    }
    out_str(out, "]");
}

static void out_end(struct rd_buf *out, int rc, const char *reason)
{
    out_str(out, "/");
    out_str(out, code_name(rc));
    if (reason != NULL) {
        out_str(out, ":");
        out_str(out, reason);
    }
}

/* Returns out as a NUL-terminated heap string and frees out. */
static char *out_take(struct rd_buf *out)
{
    assert_int_equal(rd_buf_append(out, "", 1), 0);
    char *s = out->data;
    rd_buf_init(out);
    return s;
}

/* Parses all of in[0..n) given at once; the caller frees the outcome. */
static char *parse_whole(const char *in, size_t n)
{
    struct rd_resp_parser p;
    struct rd_buf out;
    rd_resp_parser_init(&p);
    rd_buf_init(&out);
    size_t off = 0;
    int rc;
    const char *reason;
    for (;;) {
        struct rd_resp_request req;
        rc = rd_resp_parse(&p, in + off, n - off, &req, &reason);
        if (rc != 0) break;
        assert_true(req.consumed >= 1 && req.consumed <= n - off);
        /* zero-copy: every argument lies inside the bytes of its request */
        for (size_t i = 0; i < req.argc; i++) {
            assert_true(req.argv[i].ptr >= in + off);
            assert_true(req.argv[i].ptr + req.argv[i].len <= in + off + req.consumed);
        }
        out_request(&out, &req);
        off += req.consumed;
    }
    out_end(&out, rc, reason);
    rd_resp_parser_free(&p);
    return out_take(&out);
}

/*
 * Feeds in[0..n) in pieces: the parser first sees `cuts[0]` bytes, then `cuts[1]`, ...
 * (a cut of 1 everywhere = every byte boundary). Each call gets a fresh heap copy of the
 * unconsumed bytes, so a parser keeping pointers into an old buffer would trip ASan.
 */
static char *parse_in_pieces(const char *in, size_t n, size_t (*next_cut)(void *), void *ctx)
{
    struct rd_resp_parser p;
    struct rd_buf out;
    rd_resp_parser_init(&p);
    rd_buf_init(&out);
    size_t off = 0;   /* consumed so far */
    size_t avail = 0; /* received so far */
    int rc = RD_EAGAIN;
    const char *reason = NULL;
    while (avail < n) {
        size_t cut = next_cut(ctx);
        avail = cut > n - avail ? n : avail + cut;
        for (;;) {
            size_t have = avail - off;
            char *copy = malloc(have ? have : 1);
            assert_non_null(copy);
            memcpy(copy, in + off, have);
            struct rd_resp_request req;
            rc = rd_resp_parse(&p, copy, have, &req, &reason);
            if (rc == 0) {
                out_request(&out, &req);
                off += req.consumed;
            }
            free(copy);
            if (rc != 0) break;
        }
        if (rc != RD_EAGAIN) break;
    }
    out_end(&out, rc, reason);
    rd_resp_parser_free(&p);
    return out_take(&out);
}

static size_t cut_one(void *ctx)
{
    (void)ctx;
    return 1;
}

/* xorshift64*: a small PRNG for seeded tests. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 2685821657736338717ull;
}

static size_t cut_random(void *ctx)
{
    return 1 + (size_t)(rng_next(ctx) % 16);
}

static uint64_t test_seed(const char *test)
{
    const char *env = getenv("RD_TEST_SEED");
    uint64_t seed = (uint64_t)time(NULL);
    for (const char *c = test; *c != '\0'; c++) /* distinct seeds for tests in one second */
        seed = seed * 31 + (unsigned char)*c;
    if (env != NULL) seed = strtoull(env, NULL, 0);
    if (seed == 0) seed = 1; /* xorshift's one bad state */
    print_message("%s: seed=%llu (replay with RD_TEST_SEED=%llu)\n", test, (unsigned long long)seed,
                  (unsigned long long)seed);
    return seed;
}

/* Asserts the outcome of in[0..n), whole and split at every byte. */
static void expect_outcome(const char *in, size_t n, const char *want)
{
    char *whole = parse_whole(in, n);
    if (strcmp(whole, want) != 0)
        fail_msg("input \"%.*s\": got %s, want %s", (int)(n > 60 ? 60 : n), in, whole, want);
    char *split = parse_in_pieces(in, n, cut_one, NULL);
    if (strcmp(split, want) != 0)
        fail_msg("input \"%.*s\" split at every byte: got %s, want %s", (int)(n > 60 ? 60 : n), in,
                 split, want);
    free(whole);
    free(split);
}

/* -------------------------------------------------------------------- rd_buf */

static void test_buf_starts_empty_and_appends_in_order(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    assert_null(b.data);
    assert_int_equal(b.len, 0);
    assert_int_equal(rd_buf_append(&b, NULL, 0), 0);
    assert_int_equal(b.len, 0);
    assert_int_equal(rd_buf_append(&b, "abc", 3), 0);
    assert_int_equal(rd_buf_append(&b, "de", 2), 0);
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.data, "abcde", 5);
    assert_true(b.cap >= b.len);
    rd_buf_free(&b);
    assert_null(b.data);
    assert_int_equal(b.cap, 0);
    rd_buf_free(NULL);
}

static void test_buf_grows_past_many_appends(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    for (int i = 0; i < 100000; i++) {
        char c = (char)('a' + i % 26);
        assert_int_equal(rd_buf_append(&b, &c, 1), 0);
    }
    assert_int_equal(b.len, 100000);
    for (int i = 0; i < 100000; i++)
        assert_int_equal(b.data[i], 'a' + i % 26);
    rd_buf_free(&b);
}

static void test_buf_reserve_makes_room_without_changing_len(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    assert_int_equal(rd_buf_append(&b, "xy", 2), 0);
    assert_int_equal(rd_buf_reserve(&b, 1000), 0);
    assert_int_equal(b.len, 2);
    assert_true(b.cap - b.len >= 1000);
    char *before = b.data;
    assert_int_equal(rd_buf_reserve(&b, 10), 0); /* already room: no move */
    assert_ptr_equal(b.data, before);
    rd_buf_free(&b);
}

static void test_buf_reserve_of_impossible_size_is_enomem_and_harmless(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    assert_int_equal(rd_buf_append(&b, "keep", 4), 0);
    assert_int_equal(rd_buf_reserve(&b, SIZE_MAX), RD_ENOMEM);
    assert_int_equal(rd_buf_reserve(&b, SIZE_MAX - 2), RD_ENOMEM);
    assert_int_equal(b.len, 4);
    assert_memory_equal(b.data, "keep", 4);
    rd_buf_free(&b);
}

static void test_buf_consume_drops_bytes_from_the_front(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    assert_int_equal(rd_buf_append(&b, "hello world", 11), 0);
    rd_buf_consume(&b, 0);
    assert_int_equal(b.len, 11);
    rd_buf_consume(&b, 6);
    assert_int_equal(b.len, 5);
    assert_memory_equal(b.data, "world", 5);
    size_t cap = b.cap;
    rd_buf_consume(&b, 5);
    assert_int_equal(b.len, 0);
    assert_int_equal(b.cap, cap); /* capacity kept for the next replies */
    assert_int_equal(rd_buf_append(&b, "again", 5), 0);
    assert_memory_equal(b.data, "again", 5);
    rd_buf_free(&b);
}

/* ------------------------------------------------------ request parser: good */

struct frame_case {
    const char *in;
    size_t n;
    const char *want;
};

/* clang-format off */
#define CASE(lit, want) {lit, sizeof(lit) - 1, want}
/* clang-format on */

static const struct frame_case good_frames[] = {
    CASE("*1\r\n$4\r\nPING\r\n", "[PING]/EAGAIN"),
    CASE("*2\r\n$5\r\nOWNER\r\n$3\r\nfoo\r\n", "[OWNER|foo]/EAGAIN"),
    CASE("*3\r\n$6\r\nOWNERS\r\n$1\r\nk\r\n$2\r\n10\r\n", "[OWNERS|k|10]/EAGAIN"),
    /* pipelined, several in one buffer */
    CASE("*1\r\n$4\r\nPING\r\n*2\r\n$5\r\nOWNER\r\n$1\r\na\r\n*1\r\n$4\r\nINFO\r\n",
         "[PING][OWNER|a][INFO]/EAGAIN"),
    /* binary-safe bulk: CR, LF, CRLF and NUL inside */
    CASE("*2\r\n$5\r\nOWNER\r\n$6\r\na\r\nb\0c\r\n", "[OWNER|a\r\nb\\0c]/EAGAIN"),
    CASE("*2\r\n$5\r\nOWNER\r\n$4\r\n\r\n\r\n\r\n", "[OWNER|\r\n\r\n]/EAGAIN"),
    /* empty bulk */
    CASE("*2\r\n$5\r\nOWNER\r\n$0\r\n\r\n", "[OWNER|]/EAGAIN"),
    /* empty arrays: requests with nothing to run */
    CASE("*0\r\n", "[]/EAGAIN"),
    CASE("*-1\r\n", "[]/EAGAIN"),
    CASE("*0\r\n*1\r\n$4\r\nPING\r\n", "[][PING]/EAGAIN"),
    /* inline commands, as typed into nc -U or telnet */
    CASE("PING\r\n", "[PING]/EAGAIN"),
    CASE("PING\n", "[PING]/EAGAIN"),
    CASE("OWNER foo\r\n", "[OWNER|foo]/EAGAIN"),
    CASE("  OWNERS\t key \t 3  \r\n", "[OWNERS|key|3]/EAGAIN"),
    CASE("MOWNER a b c\nPING\r\n", "[MOWNER|a|b|c][PING]/EAGAIN"),
    /* blank inline lines are empty requests, skipped by the caller */
    CASE("\r\n\nPING\r\n", "[][][PING]/EAGAIN"),
    CASE(" \t \r\n", "[]/EAGAIN"),
    /* inline and array requests mixed on one connection */
    CASE("PING\r\n*1\r\n$4\r\nINFO\r\nLEAVE\n", "[PING][INFO][LEAVE]/EAGAIN"),
    /* a '$' or other byte starting a line is just an inline command (Redis does the same) */
    CASE("$3\r\n", "[$3]/EAGAIN"),
    /* a complete request followed by the start of the next */
    CASE("*1\r\n$4\r\nPING\r\n*2\r\n$5\r\nOWN", "[PING]/EAGAIN"),
    CASE("PING\r\nOWNER fo", "[PING]/EAGAIN"),
};

static void test_parse_request_good_frames(void **state)
{
    for (size_t i = 0; i < sizeof(good_frames) / sizeof(good_frames[0]); i++)
        expect_outcome(good_frames[i].in, good_frames[i].n, good_frames[i].want);
}

static void test_parse_request_returns_argv_pointing_into_the_callers_buffer(void **state)
{
    static const char in[] = "*2\r\n$5\r\nOWNER\r\n$3\r\nfoo\r\n";
    struct rd_resp_parser p;
    struct rd_resp_request req;
    rd_resp_parser_init(&p);
    assert_int_equal(rd_resp_parse(&p, in, sizeof(in) - 1, &req, NULL), 0);
    assert_int_equal(req.argc, 2);
    assert_ptr_equal(req.argv[0].ptr, in + 8);
    assert_int_equal(req.argv[0].len, 5);
    assert_ptr_equal(req.argv[1].ptr, in + 19);
    assert_int_equal(req.argv[1].len, 3);
    assert_int_equal(req.consumed, sizeof(in) - 1);
    rd_resp_parser_free(&p);
}

/* A multi-request conversation mixing every feature, split at every byte boundary. */
static const char conversation[] = "*1\r\n$4\r\nPING\r\n"
                                   "*3\r\n$6\r\nOWNERS\r\n$7\r\nuser:42\r\n$1\r\n3\r\n"
                                   "OWNER inline-key\r\n"
                                   "\r\n"
                                   "*2\r\n$5\r\nOWNER\r\n$10\r\n\r\n\r\n\0\0\r\n\r\n\r\n"
                                   "*0\r\n"
                                   "*4\r\n$6\r\nMOWNER\r\n$0\r\n\r\n$1\r\n*\r\n$2\r\n$1\r\n"
                                   "INFO\n"
                                   "*-1\r\n"
                                   "*1\r\n$5\r\nLEAVE\r\n";
static const char conversation_outcome[] = "[PING][OWNERS|user:42|3][OWNER|inline-key][]"
                                           "[OWNER|\r\n\r\n\\0\\0\r\n\r\n][][MOWNER||*|$1]"
                                           "[INFO][][LEAVE]/EAGAIN";

static void test_parse_request_split_at_every_byte(void **state)
{
    size_t n = sizeof(conversation) - 1;
    char *whole = parse_whole(conversation, n);
    char *split = parse_in_pieces(conversation, n, cut_one, NULL);
    assert_string_equal(whole, conversation_outcome);
    assert_string_equal(split, conversation_outcome);
    free(whole);
    free(split);
}

static void test_parse_request_split_at_random_points_with_seed(void **state)
{
    uint64_t seed = test_seed("split_at_random_points");
    size_t n = sizeof(conversation) - 1;
    for (int iter = 0; iter < 500; iter++) {
        char *split = parse_in_pieces(conversation, n, cut_random, &seed);
        assert_string_equal(split, conversation_outcome);
        free(split);
    }
}

/*
 * The parser keeps its progress between calls: when a request arrives one byte at a time,
 * it must not look at earlier bytes again. Checked by scribbling over the bytes already
 * examined (keeping only what a zero-copy parser may point at: the bulk payloads).
 */
static void test_parse_request_does_not_rescan_examined_bytes(void **state)
{
    static const char in[] = "*2\r\n$5\r\nOWNER\r\n$3\r\nfoo\r\n";
    size_t n = sizeof(in) - 1;
    char buf[sizeof(in)];
    struct rd_resp_parser p;
    struct rd_resp_request req;
    rd_resp_parser_init(&p);
    for (size_t have = 1; have <= n; have++) {
        memcpy(buf, in, have);
        /* header bytes examined by earlier calls are poisoned; the parser must not care
         * (payloads and their CRLF stay: they are read once, when complete) */
        for (size_t i = 0; i + 1 < have; i++)
            if (i < 8 || (i >= 15 && i < 19)) buf[i] = '#';
        int rc = rd_resp_parse(&p, buf, have, &req, NULL);
        if (have < n) {
            assert_int_equal(rc, RD_EAGAIN);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(req.argc, 2);
            assert_memory_equal(req.argv[0].ptr, "OWNER", 5);
            assert_memory_equal(req.argv[1].ptr, "foo", 3);
        }
    }
    rd_resp_parser_free(&p);

    /* Inline: the search for '\n' resumes where it stopped. Earlier bytes are replaced by
     * '\n' while the line is incomplete; a parser searching from the start would see one. */
    static const char line[] = "OWNER some-key\r\n";
    n = sizeof(line) - 1;
    rd_resp_parser_init(&p);
    for (size_t have = 1; have < n; have++) {
        memcpy(buf, line, have);
        memset(buf, '\n', have - 1);
        assert_int_equal(rd_resp_parse(&p, buf, have, &req, NULL), RD_EAGAIN);
    }
    assert_int_equal(rd_resp_parse(&p, line, n, &req, NULL), 0);
    assert_int_equal(req.argc, 2);
    assert_memory_equal(req.argv[1].ptr, "some-key", 8);
    rd_resp_parser_free(&p);
}

/* ------------------------------------------------- request parser: malformed */

static const struct frame_case bad_frames[] = {
    /* framing */
    CASE("*1\n$4\r\nPING\r\n", "/EPROTO:bad length"),
    CASE("*1\r$4\r\nPING\r\n", "/EPROTO:expected '\\n' after '\\r'"),
    CASE("*1\r\n$4\rPING\r\n", "/EPROTO:expected '\\n' after '\\r'"),
    CASE("*1\r\n$4\r\nPINGX\r\n", "/EPROTO:expected CRLF after bulk"),
    CASE("*1\r\n$4\r\nPING\n\r", "/EPROTO:expected CRLF after bulk"),
    CASE("*1\r\n$4\r\nPIN\r\n\r\n", "/EPROTO:expected CRLF after bulk"),
    CASE("*2\r\n$4\r\nPING\r\nfoo\r\n", "/EPROTO:expected '$'"),
    CASE("*1\r\n:4\r\n", "/EPROTO:expected '$'"),
    CASE("*1\r\n\r\n", "/EPROTO:expected '$'"),
    CASE("*2\r\n*1\r\n$4\r\nPING\r\n", "/EPROTO:nested array in request"),
    /* lengths and counts */
    CASE("*1\r\n$-5\r\n", "/EPROTO:negative length"),
    CASE("*1\r\n$-1\r\n", "/EPROTO:negative length"),
    CASE("*-5\r\n", "/EPROTO:bad length"),
    CASE("*-0\r\n", "/EPROTO:bad length"),
    CASE("*-\r\n", "/EPROTO:bad length"),
    CASE("*--1\r\n", "/EPROTO:bad length"),
    CASE("*\r\n", "/EPROTO:bad length"),
    CASE("*x\r\n", "/EPROTO:bad length"),
    CASE("*1x\r\n", "/EPROTO:bad length"),
    CASE("*+1\r\n$4\r\nPING\r\n", "/EPROTO:bad length"),
    CASE("*1\r\n$+4\r\nPING\r\n", "/EPROTO:bad length"),
    CASE("*01\r\n$4\r\nPING\r\n", "/EPROTO:bad length"),
    CASE("*1\r\n$04\r\nPING\r\n", "/EPROTO:bad length"),
    CASE("*1\r\n$ 4\r\nPING\r\n", "/EPROTO:bad length"),
    CASE("*1\r\n$4 \r\nPING\r\n", "/EPROTO:bad length"),
    CASE("*1\r\n$\r\n", "/EPROTO:bad length"),
    CASE("*1\r\n$0x10\r\n", "/EPROTO:bad length"),
    /* garbage after a good request: the good one still comes out first */
    CASE("*1\r\n$4\r\nPING\r\n*\xff\xfe\r\n", "[PING]/EPROTO:bad length"),
    CASE("*1\r\n$4\r\nPING\r\n*1\r\n\x01\x02\x03", "[PING]/EPROTO:expected '$'"),
    /* limits, refused as soon as the digits say so: no CRLF or payload needed */
    CASE("*1\r\n$600000000\r\n", "/E2BIG:argument too large"),
    CASE("*1\r\n$600000000", "/E2BIG:argument too large"),
    CASE("*1\r\n$524289", "/E2BIG:argument too large"),
    CASE("*1\r\n$99999999999999999999\r\n", "/E2BIG:argument too large"),
    CASE("*1\r\n$184467440737095516160\r\n", "/E2BIG:argument too large"),
    CASE("*100000\r\n", "/E2BIG:too many arguments"),
    CASE("*4097", "/E2BIG:too many arguments"),
    CASE("*99999999999999999999999\r\n", "/E2BIG:too many arguments"),
    /* and just inside the limits, only waiting for more bytes */
    CASE("*4096\r\n", "/EAGAIN"),
    CASE("*1\r\n$524288\r\n", "/EAGAIN"),
};

static void test_parse_request_malformed_frames(void **state)
{
    for (size_t i = 0; i < sizeof(bad_frames) / sizeof(bad_frames[0]); i++)
        expect_outcome(bad_frames[i].in, bad_frames[i].n, bad_frames[i].want);
}

static void test_parse_request_random_bytes_never_crash_with_seed(void **state)
{
    uint64_t seed = test_seed("request_random_bytes");
    /* Bytes drawn mostly from the grammar's alphabet reach the deep states; the rest is
     * any byte. Then the same buffer is fed in random pieces and must agree. */
    static const char alphabet[] = "*$\r\n\r\n0123456789-+ \tPING";
    char buf[256];
    for (int iter = 0; iter < 5000; iter++) {
        size_t n = (size_t)(rng_next(&seed) % sizeof(buf));
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&seed);
            buf[i] = r % 4 == 0 ? (char)(r >> 8) : alphabet[(r >> 8) % (sizeof(alphabet) - 1)];
        }
        char *whole = parse_whole(buf, n);
        char *split = parse_in_pieces(buf, n, cut_random, &seed);
        if (strcmp(whole, split) != 0)
            fail_msg("iteration %d: whole %s, in pieces %s", iter, whole, split);
        free(whole);
        free(split);
    }
}

static void test_parse_request_mutated_frames_never_crash_with_seed(void **state)
{
    uint64_t seed = test_seed("request_mutated_frames");
    size_t n = sizeof(conversation) - 1;
    char buf[sizeof(conversation)];
    for (int iter = 0; iter < 3000; iter++) {
        memcpy(buf, conversation, n);
        int flips = 1 + (int)(rng_next(&seed) % 4);
        for (int k = 0; k < flips; k++)
            buf[rng_next(&seed) % n] = (char)rng_next(&seed);
        char *whole = parse_whole(buf, n);
        char *split = parse_in_pieces(buf, n, cut_random, &seed);
        if (strcmp(whole, split) != 0)
            fail_msg("iteration %d: whole %s, in pieces %s", iter, whole, split);
        free(whole);
        free(split);
    }
}

static void test_parse_request_error_is_sticky(void **state)
{
    struct rd_resp_parser p;
    struct rd_resp_request req;
    const char *reason = NULL;
    rd_resp_parser_init(&p);
    assert_int_equal(rd_resp_parse(&p, LIT("*1\r\n!"), &req, &reason), RD_EPROTO);
    assert_string_equal(reason, "expected '$'");
    /* even good bytes cannot resynchronise the stream */
    assert_int_equal(rd_resp_parse(&p, LIT("*1\r\n$4\r\nPING\r\n"), &req, &reason), RD_EPROTO);
    assert_string_equal(reason, "expected '$'");
    rd_resp_parser_free(&p);

    /* free + init gives a fresh parser */
    rd_resp_parser_init(&p);
    assert_int_equal(rd_resp_parse(&p, LIT("*1\r\n$4\r\nPING\r\n"), &req, &reason), 0);
    assert_null(reason);
    rd_resp_parser_free(&p);
}

static void test_parse_request_with_fewer_bytes_than_examined_is_einval(void **state)
{
    struct rd_resp_parser p;
    struct rd_resp_request req;
    rd_resp_parser_init(&p);
    assert_int_equal(rd_resp_parse(&p, LIT("*1\r\n$4\r\nPI"), &req, NULL), RD_EAGAIN);
    assert_int_equal(rd_resp_parse(&p, LIT("*1\r\n"), &req, NULL), RD_EINVAL);
    /* not sticky: the right bytes go on parsing */
    assert_int_equal(rd_resp_parse(&p, LIT("*1\r\n$4\r\nPING\r\n"), &req, NULL), 0);
    rd_resp_parser_free(&p);
}

/* ---------------------------------------------------- request parser: limits */

/* "*<argc>\r\n" then one "$<len>\r\n<len bytes 'x'>\r\n" per entry of lens. */
static void build_request(struct rd_buf *b, const size_t *lens, size_t argc)
{
    char hdr[32];
    int n = snprintf(hdr, sizeof(hdr), "*%zu\r\n", argc);
    assert_int_equal(rd_buf_append(b, hdr, (size_t)n), 0);
    for (size_t i = 0; i < argc; i++) {
        n = snprintf(hdr, sizeof(hdr), "$%zu\r\n", lens[i]);
        assert_int_equal(rd_buf_append(b, hdr, (size_t)n), 0);
        assert_int_equal(rd_buf_reserve(b, lens[i] + 2), 0);
        memset(b->data + b->len, 'x', lens[i]);
        b->len += lens[i];
        assert_int_equal(rd_buf_append(b, "\r\n", 2), 0);
    }
}

static size_t request_size(const size_t *lens, size_t argc)
{
    struct rd_buf b;
    rd_buf_init(&b);
    build_request(&b, lens, argc);
    size_t n = b.len;
    rd_buf_free(&b);
    return n;
}

static int parse_once(const char *in, size_t n, struct rd_resp_request *req, const char **reason)
{
    struct rd_resp_parser p;
    rd_resp_parser_init(&p);
    int rc = rd_resp_parse(&p, in, n, req, reason);
    rd_resp_parser_free(&p);
    return rc;
}

static void test_parse_request_argument_of_exactly_max_arg_is_accepted(void **state)
{
    size_t lens[] = {5, RD_RESP_MAX_ARG};
    struct rd_buf b;
    struct rd_resp_request req;
    rd_buf_init(&b);
    build_request(&b, lens, 2);
    struct rd_resp_parser p;
    rd_resp_parser_init(&p);
    assert_int_equal(rd_resp_parse(&p, b.data, b.len, &req, NULL), 0);
    assert_int_equal(req.argc, 2);
    assert_int_equal(req.argv[1].len, RD_RESP_MAX_ARG);
    assert_int_equal(req.consumed, b.len);
    rd_resp_parser_free(&p);
    rd_buf_free(&b);
}

static void test_parse_request_of_exactly_max_request_bytes_is_accepted(void **state)
{
    /* three arguments whose frame totals exactly RD_RESP_MAX_REQUEST bytes */
    size_t lens[] = {400000, 400000, 0};
    lens[2] = RD_RESP_MAX_REQUEST - request_size(lens, 3);
    lens[2] -= request_size(lens, 3) - RD_RESP_MAX_REQUEST; /* its own digits */
    assert_int_equal(request_size(lens, 3), RD_RESP_MAX_REQUEST);

    struct rd_buf b;
    struct rd_resp_request req;
    const char *reason;
    rd_buf_init(&b);
    build_request(&b, lens, 3);
    assert_int_equal(parse_once(b.data, b.len, &req, &reason), 0);
    assert_int_equal(req.consumed, RD_RESP_MAX_REQUEST);

    /* the same bytes declared as "*4": the header of the 4th argument is one too many */
    b.data[1] = '4';
    out_str(&b, "$0\r\n\r\n");
    assert_int_equal(parse_once(b.data, RD_RESP_MAX_REQUEST, &req, &reason), RD_EAGAIN);
    assert_int_equal(parse_once(b.data, b.len, &req, &reason), RD_E2BIG);
    assert_string_equal(reason, "request too large");
    rd_buf_free(&b);

    /* one byte more is refused, as soon as the last header is read */
    lens[2]++;
    rd_buf_init(&b);
    build_request(&b, lens, 3);
    size_t header_end = b.len - lens[2] - 2;
    assert_int_equal(parse_once(b.data, header_end, &req, &reason), RD_E2BIG);
    assert_string_equal(reason, "request too large");
    assert_int_equal(parse_once(b.data, b.len, &req, &reason), RD_E2BIG);
    rd_buf_free(&b);
}

static void test_parse_request_over_max_request_is_refused_before_payload(void **state)
{
    /* 3 x 400 KiB: each argument is fine, the request is not */
    size_t lens[] = {400 * 1024, 400 * 1024, 400 * 1024};
    struct rd_buf b;
    struct rd_resp_request req;
    const char *reason;
    rd_buf_init(&b);
    build_request(&b, lens, 3);
    size_t third_header_end = b.len - lens[2] - 2;
    assert_int_equal(parse_once(b.data, third_header_end - 1, &req, &reason), RD_EAGAIN);
    assert_int_equal(parse_once(b.data, third_header_end, &req, &reason), RD_E2BIG);
    assert_string_equal(reason, "request too large");
    rd_buf_free(&b);
}

static void test_parse_request_of_max_args_is_accepted_one_more_is_not(void **state)
{
    struct rd_buf b;
    struct rd_resp_request req;
    const char *reason;
    size_t *lens = calloc(RD_RESP_MAX_ARGS, sizeof(*lens));
    assert_non_null(lens);
    rd_buf_init(&b);
    build_request(&b, lens, RD_RESP_MAX_ARGS);
    assert_int_equal(parse_once(b.data, b.len, &req, &reason), 0);
    assert_int_equal(req.argc, RD_RESP_MAX_ARGS);
    rd_buf_free(&b);
    free(lens);

    /* inline: 4096 words fine, 4097 too many */
    rd_buf_init(&b);
    for (size_t i = 0; i < RD_RESP_MAX_ARGS; i++)
        out_str(&b, "a ");
    struct rd_buf b2;
    rd_buf_init(&b2);
    assert_int_equal(rd_buf_append(&b2, b.data, b.len), 0);
    out_str(&b, "\r\n");
    assert_int_equal(parse_once(b.data, b.len, &req, &reason), 0);
    assert_int_equal(req.argc, RD_RESP_MAX_ARGS);
    out_str(&b2, "a\r\n");
    assert_int_equal(parse_once(b2.data, b2.len, &req, &reason), RD_E2BIG);
    assert_string_equal(reason, "too many arguments");
    rd_buf_free(&b);
    rd_buf_free(&b2);
}

static void test_parse_inline_line_over_max_inline_is_refused(void **state)
{
    size_t n = RD_RESP_MAX_INLINE + 10;
    char *line = malloc(n);
    assert_non_null(line);
    memset(line, 'k', n);
    struct rd_resp_request req;
    const char *reason;

    /* a line of exactly RD_RESP_MAX_INLINE bytes, "\n" included, is fine */
    line[RD_RESP_MAX_INLINE - 1] = '\n';
    assert_int_equal(parse_once(line, n, &req, &reason), 0);
    assert_int_equal(req.argc, 1);
    assert_int_equal(req.consumed, RD_RESP_MAX_INLINE);

    /* one byte longer is not; no need to wait for its end */
    line[RD_RESP_MAX_INLINE - 1] = 'k';
    assert_int_equal(parse_once(line, RD_RESP_MAX_INLINE - 1, &req, &reason), RD_EAGAIN);
    assert_int_equal(parse_once(line, RD_RESP_MAX_INLINE, &req, &reason), RD_E2BIG);
    assert_string_equal(reason, "inline command too long");
    line[RD_RESP_MAX_INLINE] = '\n';
    assert_int_equal(parse_once(line, n, &req, &reason), RD_E2BIG);
    free(line);
}

static void test_parse_request_argv_grows_across_requests(void **state)
{
    /* a small request, a big one, a small one again, on one parser */
    struct rd_resp_parser p;
    struct rd_resp_request req;
    struct rd_buf b;
    size_t lens[100] = {0};
    rd_resp_parser_init(&p);
    rd_buf_init(&b);
    out_str(&b, "*1\r\n$4\r\nPING\r\n");
    build_request(&b, lens, 100);
    out_str(&b, "PING\r\n");
    size_t off = 0;
    size_t want[] = {1, 100, 1};
    for (int i = 0; i < 3; i++) {
        assert_int_equal(rd_resp_parse(&p, b.data + off, b.len - off, &req, NULL), 0);
        assert_int_equal(req.argc, want[i]);
        off += req.consumed;
    }
    assert_int_equal(off, b.len);
    assert_int_equal(rd_resp_parse(&p, b.data + off, 0, &req, NULL), RD_EAGAIN);
    rd_buf_free(&b);
    rd_resp_parser_free(&p);
}

/* --------------------------------------------------------------- reply writer */

static void expect_buf(struct rd_buf *b, const char *want, size_t n)
{
    if (b->len != n || memcmp(b->data, want, n) != 0)
        fail_msg("wrote \"%.*s\" (%zu bytes), want \"%.*s\"", (int)b->len, b->data, b->len, (int)n,
                 want);
    b->len = 0;
}

static void test_write_replies_byte_exact(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);

    assert_int_equal(rd_resp_write_simple(&b, "PONG"), 0);
    expect_buf(&b, LIT("+PONG\r\n"));
    assert_int_equal(rd_resp_write_simple(&b, ""), 0);
    expect_buf(&b, LIT("+\r\n"));
    assert_int_equal(rd_resp_write_error(&b, "ERR unknown command 'FOO'"), 0);
    expect_buf(&b, LIT("-ERR unknown command 'FOO'\r\n"));
    assert_int_equal(rd_resp_write_bulk(&b, "web-3", 5), 0);
    expect_buf(&b, LIT("$5\r\nweb-3\r\n"));
    assert_int_equal(rd_resp_write_bulk(&b, "a\r\nb\0", 5), 0);
    expect_buf(&b, LIT("$5\r\na\r\nb\0\r\n"));
    assert_int_equal(rd_resp_write_bulk(&b, NULL, 0), 0);
    expect_buf(&b, LIT("$0\r\n\r\n"));
    assert_int_equal(rd_resp_write_nil(&b), 0);
    expect_buf(&b, LIT("$-1\r\n"));
    assert_int_equal(rd_resp_write_int(&b, 0), 0);
    expect_buf(&b, LIT(":0\r\n"));
    assert_int_equal(rd_resp_write_int(&b, 42), 0);
    expect_buf(&b, LIT(":42\r\n"));
    assert_int_equal(rd_resp_write_int(&b, -1), 0);
    expect_buf(&b, LIT(":-1\r\n"));
    assert_int_equal(rd_resp_write_int(&b, INT64_MAX), 0);
    expect_buf(&b, LIT(":9223372036854775807\r\n"));
    assert_int_equal(rd_resp_write_int(&b, INT64_MIN), 0);
    expect_buf(&b, LIT(":-9223372036854775808\r\n"));
    assert_int_equal(rd_resp_write_array(&b, 0), 0);
    expect_buf(&b, LIT("*0\r\n"));
    assert_int_equal(rd_resp_write_array(&b, 3), 0);
    expect_buf(&b, LIT("*3\r\n"));
    rd_buf_free(&b);
}

/* Each RESP3 writer gives its RESP3 type for protocol 3 and Redis's RESP2 stand-in for 2. */
static void test_write_resp3_types_and_their_resp2_forms(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);

    assert_int_equal(rd_resp_write_map(&b, RD_RESP3, 7), 0);
    expect_buf(&b, LIT("%7\r\n"));
    assert_int_equal(rd_resp_write_map(&b, RD_RESP2, 7), 0);
    expect_buf(&b, LIT("*14\r\n"));
    assert_int_equal(rd_resp_write_map(&b, RD_RESP3, 0), 0);
    expect_buf(&b, LIT("%0\r\n"));
    assert_int_equal(rd_resp_write_map(&b, RD_RESP2, 0), 0);
    expect_buf(&b, LIT("*0\r\n"));
    assert_int_equal(rd_resp_write_set(&b, RD_RESP3, 2), 0);
    expect_buf(&b, LIT("~2\r\n"));
    assert_int_equal(rd_resp_write_set(&b, RD_RESP2, 2), 0);
    expect_buf(&b, LIT("*2\r\n"));
    assert_int_equal(rd_resp_write_push(&b, RD_RESP3, 3), 0);
    expect_buf(&b, LIT(">3\r\n"));
    assert_int_equal(rd_resp_write_push(&b, RD_RESP2, 3), 0);
    expect_buf(&b, LIT("*3\r\n"));
    assert_int_equal(rd_resp_write_null(&b, RD_RESP3), 0);
    expect_buf(&b, LIT("_\r\n"));
    assert_int_equal(rd_resp_write_null(&b, RD_RESP2), 0);
    expect_buf(&b, LIT("$-1\r\n"));
    assert_int_equal(rd_resp_write_verbatim(&b, RD_RESP3, "id=1\n", 5), 0);
    expect_buf(&b, LIT("=9\r\ntxt:id=1\n\r\n"));
    assert_int_equal(rd_resp_write_verbatim(&b, RD_RESP2, "id=1\n", 5), 0);
    expect_buf(&b, LIT("$5\r\nid=1\n\r\n"));
    assert_int_equal(rd_resp_write_verbatim(&b, RD_RESP3, NULL, 0), 0);
    expect_buf(&b, LIT("=4\r\ntxt:\r\n"));
    rd_buf_free(&b);
}

/* A verbatim text too large to ever fit fails whole, leaving what was written before. */
static void test_write_verbatim_of_impossible_size_is_enomem_and_harmless(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    assert_int_equal(rd_resp_write_simple(&b, "OK"), 0);
    assert_int_equal(rd_resp_write_verbatim(&b, RD_RESP3, "x", SIZE_MAX - 8), RD_ENOMEM);
    expect_buf(&b, LIT("+OK\r\n"));
    rd_buf_free(&b);
}

static void test_write_error_and_simple_turn_cr_and_lf_into_spaces(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    assert_int_equal(rd_resp_write_error(&b, "ERR unknown command 'A\r\n+OK\r\n'"), 0);
    expect_buf(&b, LIT("-ERR unknown command 'A  +OK  '\r\n"));
    assert_int_equal(rd_resp_write_simple(&b, "a\nb\rc"), 0);
    expect_buf(&b, LIT("+a b c\r\n"));
    rd_buf_free(&b);
}

static void test_write_replies_append_after_existing_bytes(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    assert_int_equal(rd_resp_write_array(&b, 2), 0);
    assert_int_equal(rd_resp_write_bulk(&b, "a", 1), 0);
    assert_int_equal(rd_resp_write_array(&b, 2), 0);
    assert_int_equal(rd_resp_write_int(&b, 7), 0);
    assert_int_equal(rd_resp_write_nil(&b), 0);
    expect_buf(&b, LIT("*2\r\n$1\r\na\r\n*2\r\n:7\r\n$-1\r\n"));
    rd_buf_free(&b);
}

static void test_write_bulk_of_impossible_size_is_enomem_and_harmless(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    assert_int_equal(rd_resp_write_simple(&b, "OK"), 0);
    assert_int_equal(rd_resp_write_bulk(&b, "", SIZE_MAX - 10), RD_ENOMEM);
    expect_buf(&b, LIT("+OK\r\n"));
    rd_buf_free(&b);
}

/* --------------------------------------------------------------- reply parser */

static struct rd_resp_reply *parse_reply_ok(const char *in, size_t n)
{
    struct rd_resp_reply *r = NULL;
    size_t consumed = 0;
    const char *reason = NULL;
    int rc = rd_resp_reply_parse(in, n, &r, &consumed, &reason);
    if (rc != 0)
        fail_msg("reply \"%.*s\": %s (%s)", (int)n, in, code_name(rc), reason ? reason : "");
    assert_int_equal(consumed, n);
    assert_null(reason);
    return r;
}

static void test_reply_parser_reads_back_every_writer_reply(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    /* the shape of a MEMBERS reply, plus every other type */
    assert_int_equal(rd_resp_write_array(&b, 7), 0);
    assert_int_equal(rd_resp_write_simple(&b, "PONG"), 0);
    assert_int_equal(rd_resp_write_error(&b, "ERR no such key"), 0);
    assert_int_equal(rd_resp_write_int(&b, INT64_MIN), 0);
    assert_int_equal(rd_resp_write_bulk(&b, "x\r\n\0y", 5), 0);
    assert_int_equal(rd_resp_write_nil(&b), 0);
    assert_int_equal(rd_resp_write_array(&b, 0), 0);
    assert_int_equal(rd_resp_write_array(&b, 2), 0);
    assert_int_equal(rd_resp_write_array(&b, 4), 0);
    assert_int_equal(rd_resp_write_bulk(&b, "name", 4), 0);
    assert_int_equal(rd_resp_write_bulk(&b, "web-1", 5), 0);
    assert_int_equal(rd_resp_write_bulk(&b, "status", 6), 0);
    assert_int_equal(rd_resp_write_bulk(&b, "alive", 5), 0);
    assert_int_equal(rd_resp_write_array(&b, 1), 0);
    assert_int_equal(rd_resp_write_int(&b, 3), 0);

    struct rd_resp_reply *r = parse_reply_ok(b.data, b.len);
    assert_int_equal(r->type, RD_RESP_ARRAY);
    assert_int_equal(r->nelem, 7);
    assert_int_equal(r->elem[0]->type, RD_RESP_STRING);
    assert_string_equal(r->elem[0]->str, "PONG");
    assert_int_equal(r->elem[0]->len, 4);
    assert_int_equal(r->elem[1]->type, RD_RESP_ERROR);
    assert_string_equal(r->elem[1]->str, "ERR no such key");
    assert_int_equal(r->elem[2]->type, RD_RESP_INTEGER);
    assert_true(r->elem[2]->integer == INT64_MIN);
    assert_int_equal(r->elem[3]->type, RD_RESP_BULK);
    assert_int_equal(r->elem[3]->len, 5);
    assert_memory_equal(r->elem[3]->str, "x\r\n\0y", 6); /* NUL-terminated too */
    assert_int_equal(r->elem[4]->type, RD_RESP_NIL);
    assert_null(r->elem[4]->str);
    assert_int_equal(r->elem[5]->type, RD_RESP_ARRAY);
    assert_int_equal(r->elem[5]->nelem, 0);
    struct rd_resp_reply *nested = r->elem[6];
    assert_int_equal(nested->type, RD_RESP_ARRAY);
    assert_int_equal(nested->nelem, 2);
    assert_int_equal(nested->elem[0]->nelem, 4);
    assert_string_equal(nested->elem[0]->elem[1]->str, "web-1");
    assert_string_equal(nested->elem[0]->elem[3]->str, "alive");
    assert_int_equal(nested->elem[1]->elem[0]->integer, 3);
    rd_resp_reply_free(r);
    rd_buf_free(&b);
    rd_resp_reply_free(NULL);
}

static void test_reply_parser_waits_for_every_incomplete_prefix(void **state)
{
    static const char in[] = "*3\r\n$5\r\nweb-1\r\n*2\r\n:-12\r\n+OK\r\n-ERR x\r\n";
    size_t n = sizeof(in) - 1;
    for (size_t have = 0; have < n; have++) {
        char *copy = malloc(have ? have : 1); /* exact size: ASan sees any over-read */
        assert_non_null(copy);
        memcpy(copy, in, have);
        struct rd_resp_reply *r = (struct rd_resp_reply *)0x1;
        size_t consumed = 12345;
        assert_int_equal(rd_resp_reply_parse(copy, have, &r, &consumed, NULL), RD_EAGAIN);
        assert_ptr_equal(r, (struct rd_resp_reply *)0x1); /* untouched */
        assert_int_equal(consumed, 12345);
        free(copy);
    }
    rd_resp_reply_free(parse_reply_ok(in, n));
}

static void test_reply_parser_takes_one_reply_of_several(void **state)
{
    static const char in[] = "+OK\r\n:5\r\n$-1\r\n*-1\r\n";
    struct rd_resp_reply *r;
    size_t consumed, off = 0;
    int want_type[] = {RD_RESP_STRING, RD_RESP_INTEGER, RD_RESP_NIL, RD_RESP_NIL};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(rd_resp_reply_parse(in + off, sizeof(in) - 1 - off, &r, &consumed, NULL),
                         0);
        assert_int_equal(r->type, want_type[i]);
        off += consumed;
        rd_resp_reply_free(r);
    }
    assert_int_equal(off, sizeof(in) - 1);
}

static void test_reply_parser_accepts_nesting_to_max_depth(void **state)
{
    struct rd_buf b;
    rd_buf_init(&b);
    for (int i = 0; i < RD_RESP_REPLY_MAX_DEPTH; i++)
        assert_int_equal(rd_resp_write_array(&b, 1), 0);
    assert_int_equal(rd_resp_write_int(&b, 1), 0);
    struct rd_resp_reply *r = parse_reply_ok(b.data, b.len);
    struct rd_resp_reply *leaf = r;
    for (int i = 0; i < RD_RESP_REPLY_MAX_DEPTH; i++)
        leaf = leaf->elem[0];
    assert_int_equal(leaf->type, RD_RESP_INTEGER);
    rd_resp_reply_free(r);

    /* one more level is refused, even before the innermost bytes arrive */
    b.len = 0;
    for (int i = 0; i < RD_RESP_REPLY_MAX_DEPTH + 1; i++)
        assert_int_equal(rd_resp_write_array(&b, 1), 0);
    const char *reason;
    size_t consumed;
    assert_int_equal(rd_resp_reply_parse(b.data, b.len, &r, &consumed, &reason), RD_E2BIG);
    assert_string_equal(reason, "arrays nested too deep");
    rd_buf_free(&b);
}

static void test_reply_parser_refuses_simple_string_over_max_bulk(void **state)
{
    size_t n = 1 + RD_RESP_REPLY_MAX_BULK + 1;
    char *in = malloc(n);
    assert_non_null(in);
    in[0] = '+';
    memset(in + 1, 'a', n - 1);
    struct rd_resp_reply *r = NULL;
    size_t consumed = 0;
    const char *reason;
    /* RD_RESP_REPLY_MAX_BULK bytes of line: might still end, so wait */
    assert_int_equal(rd_resp_reply_parse(in, n - 1, &r, &consumed, &reason), RD_EAGAIN);
    /* one more without a CR: over the limit */
    assert_int_equal(rd_resp_reply_parse(in, n, &r, &consumed, &reason), RD_E2BIG);
    assert_string_equal(reason, "line too long");
    assert_null(r);
    free(in);
}

struct reply_case {
    const char *in;
    size_t n;
    int rc;
    const char *reason;
};

/* clang-format off */
#define RCASE(lit, rc, reason) {lit, sizeof(lit) - 1, rc, reason}
/* clang-format on */

static const struct reply_case bad_replies[] = {
    RCASE("!oops\r\n", RD_EPROTO, "unknown reply type"),
    RCASE("\r\n", RD_EPROTO, "unknown reply type"),
    RCASE("+OK\n", RD_EPROTO, "bare '\\n' in line"),
    RCASE("+OK\rX", RD_EPROTO, "expected '\\n' after '\\r'"),
    RCASE(":12a\r\n", RD_EPROTO, "bad integer"),
    RCASE(":+1\r\n", RD_EPROTO, "bad integer"),
    RCASE(":\r\n", RD_EPROTO, "bad integer"),
    RCASE(":-\r\n", RD_EPROTO, "bad integer"),
    RCASE(":-0\r\n", RD_EPROTO, "bad integer"),
    RCASE(":007\r\n", RD_EPROTO, "bad integer"),
    RCASE(":9223372036854775808\r\n", RD_EPROTO, "integer overflow"),
    RCASE(":-9223372036854775809\r\n", RD_EPROTO, "integer overflow"),
    RCASE(":99999999999999999999999999\r\n", RD_EPROTO, "integer overflow"),
    RCASE(":1\rx", RD_EPROTO, "expected '\\n' after '\\r'"),
    RCASE("$-2\r\n", RD_EPROTO, "bad length"),
    RCASE("*-2\r\n", RD_EPROTO, "bad length"),
    RCASE("$3\r\nfooX\r\n", RD_EPROTO, "expected CRLF after bulk"),
    RCASE("$3\r\nfo\r\nX", RD_EPROTO, "expected CRLF after bulk"),
    RCASE("*2\r\n+a\r\n?\r\n", RD_EPROTO, "unknown reply type"),
    /* limits: refused from the header alone */
    RCASE("$67108865\r\n", RD_E2BIG, "bulk string too large"),
    RCASE("$9223372036854775807\r\n", RD_E2BIG, "bulk string too large"),
    RCASE("*1000001\r\n", RD_E2BIG, "array too large"),
    RCASE("*9223372036854775807\r\n", RD_E2BIG, "array too large"),
    /* just inside the limits: waiting, and nothing allocated for the declared size */
    RCASE("$67108864\r\n", RD_EAGAIN, NULL),
    RCASE("*1000000\r\n", RD_EAGAIN, NULL),
    RCASE("*1000000\r\n:1\r\n:2\r\n", RD_EAGAIN, NULL),
    RCASE("", RD_EAGAIN, NULL),
    RCASE(":12", RD_EAGAIN, NULL),
};

static void test_reply_parser_refuses_malformed_and_huge_replies(void **state)
{
    for (size_t i = 0; i < sizeof(bad_replies) / sizeof(bad_replies[0]); i++) {
        const struct reply_case *c = &bad_replies[i];
        struct rd_resp_reply *r = NULL;
        size_t consumed = 0;
        const char *reason = "unset";
        int rc = rd_resp_reply_parse(c->in, c->n, &r, &consumed, &reason);
        if (rc != c->rc)
            fail_msg("reply \"%.*s\": got %s, want %s", (int)c->n, c->in, code_name(rc),
                     code_name(c->rc));
        if (c->reason == NULL)
            assert_null(reason);
        else
            assert_string_equal(reason, c->reason);
        assert_null(r);
        assert_int_equal(consumed, 0);
    }
}

static void test_reply_parser_random_bytes_never_crash_with_seed(void **state)
{
    uint64_t seed = test_seed("reply_random_bytes");
    static const char alphabet[] = "*$+-:\r\n\r\n0123456789-1 ab";
    char buf[128];
    for (int iter = 0; iter < 20000; iter++) {
        size_t n = (size_t)(rng_next(&seed) % sizeof(buf));
        for (size_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&seed);
            buf[i] = r % 8 == 0 ? (char)(r >> 8) : alphabet[(r >> 8) % (sizeof(alphabet) - 1)];
        }
        struct rd_resp_reply *r = NULL;
        size_t consumed = 0;
        int rc = rd_resp_reply_parse(buf, n, &r, &consumed, NULL);
        assert_true(rc == 0 || rc == RD_EAGAIN || rc == RD_EPROTO || rc == RD_E2BIG);
        if (rc == 0) {
            assert_non_null(r);
            assert_true(consumed >= 3 && consumed <= n);
            rd_resp_reply_free(r);
        } else {
            assert_null(r);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_starts_empty_and_appends_in_order),
        cmocka_unit_test(test_buf_grows_past_many_appends),
        cmocka_unit_test(test_buf_reserve_makes_room_without_changing_len),
        cmocka_unit_test(test_buf_reserve_of_impossible_size_is_enomem_and_harmless),
        cmocka_unit_test(test_buf_consume_drops_bytes_from_the_front),
        cmocka_unit_test(test_parse_request_good_frames),
        cmocka_unit_test(test_parse_request_returns_argv_pointing_into_the_callers_buffer),
        cmocka_unit_test(test_parse_request_split_at_every_byte),
        cmocka_unit_test(test_parse_request_split_at_random_points_with_seed),
        cmocka_unit_test(test_parse_request_does_not_rescan_examined_bytes),
        cmocka_unit_test(test_parse_request_malformed_frames),
        cmocka_unit_test(test_parse_request_random_bytes_never_crash_with_seed),
        cmocka_unit_test(test_parse_request_mutated_frames_never_crash_with_seed),
        cmocka_unit_test(test_parse_request_error_is_sticky),
        cmocka_unit_test(test_parse_request_with_fewer_bytes_than_examined_is_einval),
        cmocka_unit_test(test_parse_request_argument_of_exactly_max_arg_is_accepted),
        cmocka_unit_test(test_parse_request_of_exactly_max_request_bytes_is_accepted),
        cmocka_unit_test(test_parse_request_over_max_request_is_refused_before_payload),
        cmocka_unit_test(test_parse_request_of_max_args_is_accepted_one_more_is_not),
        cmocka_unit_test(test_parse_inline_line_over_max_inline_is_refused),
        cmocka_unit_test(test_parse_request_argv_grows_across_requests),
        cmocka_unit_test(test_write_replies_byte_exact),
        cmocka_unit_test(test_write_resp3_types_and_their_resp2_forms),
        cmocka_unit_test(test_write_verbatim_of_impossible_size_is_enomem_and_harmless),
        cmocka_unit_test(test_write_error_and_simple_turn_cr_and_lf_into_spaces),
        cmocka_unit_test(test_write_replies_append_after_existing_bytes),
        cmocka_unit_test(test_write_bulk_of_impossible_size_is_enomem_and_harmless),
        cmocka_unit_test(test_reply_parser_reads_back_every_writer_reply),
        cmocka_unit_test(test_reply_parser_waits_for_every_incomplete_prefix),
        cmocka_unit_test(test_reply_parser_takes_one_reply_of_several),
        cmocka_unit_test(test_reply_parser_accepts_nesting_to_max_depth),
        cmocka_unit_test(test_reply_parser_refuses_malformed_and_huge_replies),
        cmocka_unit_test(test_reply_parser_refuses_simple_string_over_max_bulk),
        cmocka_unit_test(test_reply_parser_random_bytes_never_crash_with_seed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
