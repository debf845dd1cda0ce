/*
 * resp.c — RESP request parser, RESP2/RESP3 reply writer and RESP2 reply parser (see resp.h
 * for the format).
 *
 * The request parser is a byte-at-a-time state machine for the short header lines ("*N\r\n",
 * "$L\r\n") and a jump over bulk payloads, whose length is known in advance: a payload is
 * never scanned, only its trailing CRLF is checked. Inline lines are searched for '\n' with
 * memchr from where the previous call stopped. All progress is kept as offsets from the
 * start of the request, which is what lets the caller move its buffer between calls.
 */
#include "resp.h"

#include <assert.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "rd_err.h"

/* The limits relate: one argument fits in a request, an inline line fits in a request, and
 * digit accumulation (num * 10 + 9 with num <= a limit) cannot overflow size_t. */
_Static_assert(RD_RESP_MAX_ARG <= RD_RESP_MAX_REQUEST, "an argument must fit in a request");
_Static_assert(RD_RESP_MAX_INLINE <= RD_RESP_MAX_REQUEST, "an inline line must fit in a request");
_Static_assert(RD_RESP_MAX_ARGS <= RD_RESP_MAX_REQUEST / 4, "each argument takes >= 4 bytes");
_Static_assert(RD_RESP_MAX_REQUEST < SIZE_MAX / 10, "digit accumulation must not overflow");
_Static_assert(RD_RESP_REPLY_MAX_BULK < SIZE_MAX / 2, "a bulk and its CRLF must fit in size_t");
_Static_assert(RD_RESP_REPLY_MAX_DEPTH >= 1, "replies need at least flat arrays");

/* ==================================================================== request parser */

enum rs_state {
    RS_START = 0, /* first byte of a request: '*' opens an array, anything else is inline */
    RS_INLINE,    /* inline line: searching for its '\n'; pos is where the search resumes */
    RS_COUNT,     /* digits of "*N" */
    RS_COUNT_LF,  /* the '\n' after "*N\r" */
    RS_DOLLAR,    /* the '$' opening the next argument */
    RS_LEN,       /* digits of "$L" */
    RS_LEN_LF,    /* the '\n' after "$L\r" */
    RS_DATA,      /* L payload bytes and their CRLF */
};

/* Longest allocation of the argument array happens at RD_RESP_MAX_ARGS; start small, since
 * most commands have one to three arguments. */
#define RS_ARGS_MIN_CAP 8

void rd_resp_parser_init(struct rd_resp_parser *p)
{
    memset(p, 0, sizeof(*p));
    p->state = RS_START;
}

void rd_resp_parser_free(struct rd_resp_parser *p)
{
    free(p->argv);
    free(p->arg_off);
    rd_resp_parser_init(p);
}

static int rs_fail(struct rd_resp_parser *p, int err, const char *reason)
{
    p->err = err;
    p->reason = reason;
    return err;
}

/* Makes room for n arguments. On failure nothing observable changes. */
static int rs_reserve_args(struct rd_resp_parser *p, size_t n)
{
    if (n <= p->arg_cap) return RD_OK;
    assert(n <= RD_RESP_MAX_ARGS);
    size_t cap = p->arg_cap < RS_ARGS_MIN_CAP ? RS_ARGS_MIN_CAP : p->arg_cap;
    while (cap < n)
        cap *= 2;
    if (cap > RD_RESP_MAX_ARGS) cap = RD_RESP_MAX_ARGS;
    struct rd_resp_arg *argv = realloc(p->argv, cap * sizeof(*argv));
    if (argv == NULL) return RD_ENOMEM;
    p->argv = argv; /* larger than arg_cap says until arg_off follows: harmless */
    size_t *off = realloc(p->arg_off, cap * sizeof(*off));
    if (off == NULL) return RD_ENOMEM;
    p->arg_off = off;
    p->arg_cap = cap;
    return RD_OK;
}

/* A whole request ends at p->pos: turn offsets into pointers and start over. */
static int rs_done(struct rd_resp_parser *p, const char *buf, size_t argc,
                   struct rd_resp_request *req)
{
    for (size_t i = 0; i < argc; i++)
        p->argv[i].ptr = buf + p->arg_off[i];
    req->argc = argc;
    req->argv = p->argv;
    req->consumed = p->pos;
    p->state = RS_START;
    p->pos = 0;
    return RD_OK;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* RS_INLINE: find the line's end, then split it. Called with p->pos < len. */
static int rs_inline(struct rd_resp_parser *p, const char *buf, size_t len,
                     struct rd_resp_request *req)
{
    /* Never look past the longest allowed line, so a line without '\n' costs us at most
     * RD_RESP_MAX_INLINE bytes of buffering. */
    size_t limit = len < RD_RESP_MAX_INLINE ? len : RD_RESP_MAX_INLINE;
    const char *nl = p->pos < limit ? memchr(buf + p->pos, '\n', limit - p->pos) : NULL;
    if (nl == NULL) {
        p->pos = limit;
        if (limit >= RD_RESP_MAX_INLINE) return rs_fail(p, RD_E2BIG, "inline command too long");
        return RD_EAGAIN;
    }
    size_t end = (size_t)(nl - buf);
    size_t line_end = end > 0 && buf[end - 1] == '\r' ? end - 1 : end;

    /* Two passes over a line of at most 64 KiB: count, so that the only failure (ENOMEM)
     * happens before any state changes, then record. */
    size_t argc = 0;
    for (size_t i = 0; i < line_end;) {
        while (i < line_end && is_blank(buf[i]))
            i++;
        if (i == line_end) break;
        argc++;
        while (i < line_end && !is_blank(buf[i]))
            i++;
    }
    if (argc > RD_RESP_MAX_ARGS) return rs_fail(p, RD_E2BIG, "too many arguments");
    int rc = rs_reserve_args(p, argc);
    if (rc < 0) return rc;
    size_t n = 0;
    for (size_t i = 0; i < line_end;) {
        while (i < line_end && is_blank(buf[i]))
            i++;
        if (i == line_end) break;
        size_t start = i;
        while (i < line_end && !is_blank(buf[i]))
            i++;
        p->arg_off[n] = start;
        p->argv[n].len = i - start;
        n++;
    }
    assert(n == argc);
    p->pos = end + 1;
    return rs_done(p, buf, argc, req); /* argc 0: a blank line, skipped by the caller */
}

/*
 * One digit-or-terminator byte of "*N" (is_count) or "$L". Lengths are canonical decimal:
 * no sign but "-1" for a count, no leading zeros. The value is checked against its limit
 * after every digit, so "$99999999999999999999" is refused at its seventh digit, long
 * before its CRLF (or payload) arrives, and num never overflows.
 */
static int rs_digit(struct rd_resp_parser *p, char c, bool is_count)
{
    if (c == '\r') {
        if (p->ndigits == 0) return rs_fail(p, RD_EPROTO, "bad length");
        p->state = is_count ? RS_COUNT_LF : RS_LEN_LF;
        return RD_OK;
    }
    if (c == '-' && p->ndigits == 0 && !p->neg) {
        if (!is_count) return rs_fail(p, RD_EPROTO, "negative length");
        p->neg = 1;
        return RD_OK;
    }
    if (c < '0' || c > '9') return rs_fail(p, RD_EPROTO, "bad length");
    if (p->ndigits > 0 && p->num == 0)
        return rs_fail(p, RD_EPROTO, "bad length"); /* leading zero */
    p->num = p->num * 10 + (size_t)(c - '0');
    p->ndigits++;
    if (p->neg) {
        if (p->num > 1) return rs_fail(p, RD_EPROTO, "bad length"); /* only *-1 is a (null) array */
    } else if (is_count && p->num > RD_RESP_MAX_ARGS) {
        return rs_fail(p, RD_E2BIG, "too many arguments");
    } else if (!is_count && p->num > RD_RESP_MAX_ARG) {
        return rs_fail(p, RD_E2BIG, "argument too large");
    }
    return RD_OK;
}

static void rs_start_number(struct rd_resp_parser *p, int state)
{
    p->state = state;
    p->num = 0;
    p->ndigits = 0;
    p->neg = 0;
}

static int rs_step(struct rd_resp_parser *p, const char *buf, size_t len,
                   struct rd_resp_request *req)
{
    while (p->pos < len) {
        /* Header bytes count against the request limit too; payloads were checked whole
         * when their length was read, so this only catches runaway header sequences. */
        if (p->pos >= RD_RESP_MAX_REQUEST) return rs_fail(p, RD_E2BIG, "request too large");
        char c = buf[p->pos];
        int rc;
        switch (p->state) {
        case RS_START:
            if (c != '*') {
                p->state = RS_INLINE;
                return rs_inline(p, buf, len, req);
            }
            rs_start_number(p, RS_COUNT);
            p->pos++;
            break;
        case RS_INLINE:
            return rs_inline(p, buf, len, req);
        case RS_COUNT:
        case RS_LEN:
            rc = rs_digit(p, c, p->state == RS_COUNT);
            if (rc < 0) return rc;
            p->pos++;
            break;
        case RS_COUNT_LF:
            if (c != '\n') return rs_fail(p, RD_EPROTO, "expected '\\n' after '\\r'");
            if (p->neg && p->num != 1) return rs_fail(p, RD_EPROTO, "bad length"); /* "*-0" */
            p->pos++;
            if (p->neg || p->num == 0)
                return rs_done(p, buf, 0, req); /* *-1 and *0: nothing to run */
            p->nargs = p->num;
            p->argi = 0;
            p->state = RS_DOLLAR;
            break;
        case RS_DOLLAR:
            if (c == '*') return rs_fail(p, RD_EPROTO, "nested array in request");
            if (c != '$') return rs_fail(p, RD_EPROTO, "expected '$'");
            rs_start_number(p, RS_LEN);
            p->pos++;
            break;
        case RS_LEN_LF:
            if (c != '\n') return rs_fail(p, RD_EPROTO, "expected '\\n' after '\\r'");
            /* The whole request must fit: refuse now rather than after buffering it. */
            if (p->num + 2 > RD_RESP_MAX_REQUEST - (p->pos + 1))
                return rs_fail(p, RD_E2BIG, "request too large");
            /* Grow while nothing has moved yet, so that ENOMEM can simply be retried. */
            rc = rs_reserve_args(p, p->argi + 1);
            if (rc < 0) return rc;
            p->bulk_len = p->num;
            p->pos++;
            p->state = RS_DATA;
            break;
        case RS_DATA:
            /* Jump over the payload: its bytes are never looked at, only its CRLF. */
            if (len - p->pos < p->bulk_len + 2) return RD_EAGAIN;
            if (buf[p->pos + p->bulk_len] != '\r' || buf[p->pos + p->bulk_len + 1] != '\n')
                return rs_fail(p, RD_EPROTO, "expected CRLF after bulk");
            p->arg_off[p->argi] = p->pos;
            p->argv[p->argi].len = p->bulk_len;
            p->argi++;
            p->pos += p->bulk_len + 2;
            if (p->argi == p->nargs) return rs_done(p, buf, p->argi, req);
            p->state = RS_DOLLAR;
            break;
        default:
            assert(0 && "bad parser state");
            return rs_fail(p, RD_EPROTO, "internal error");
        }
    }
    return RD_EAGAIN;
}

int rd_resp_parse(struct rd_resp_parser *p, const char *buf, size_t len,
                  struct rd_resp_request *req, const char **reason)
{
    int rc;
    if (p->err != 0)
        rc = p->err;
    else if (len < p->pos)
        rc = RD_EINVAL; /* the caller dropped bytes we had already examined */
    else
        rc = rs_step(p, buf, len, req);
    if (reason != NULL) *reason = rc == RD_EPROTO || rc == RD_E2BIG ? p->reason : NULL;
    return rc;
}

/* ====================================================================== reply writer */

/* Longest "<type><int64>\r\n" header: 1 + 20 digits and sign + 2. */
#define RW_HEADER_MAX 24

/* Writes "<type><value>\r\n" into out (>= RW_HEADER_MAX bytes); returns its length. */
static size_t rw_header(char *out, char type, bool neg, uint64_t mag)
{
    char digits[20];
    size_t nd = 0;
    do {
        digits[nd++] = (char)('0' + mag % 10);
        mag /= 10;
    } while (mag != 0);
    size_t n = 0;
    out[n++] = type;
    if (neg) out[n++] = '-';
    while (nd > 0)
        out[n++] = digits[--nd];
    out[n++] = '\r';
    out[n++] = '\n';
    return n;
}

static int rw_append_header(struct rd_buf *buf, char type, bool neg, uint64_t mag)
{
    char hdr[RW_HEADER_MAX];
    size_t n = rw_header(hdr, type, neg, mag);
    return rd_buf_append(buf, hdr, n);
}

/* "<type><text>\r\n" with CR and LF in text turned into spaces. */
static int rw_line(struct rd_buf *buf, char type, const char *text)
{
    size_t n = strlen(text);
    if (n > SIZE_MAX - 3) return RD_ENOMEM;
    int rc = rd_buf_reserve(buf, n + 3);
    if (rc < 0) return rc;
    char *w = buf->data + buf->len;
    *w++ = type;
    for (size_t i = 0; i < n; i++)
        *w++ = text[i] == '\r' || text[i] == '\n' ? ' ' : text[i];
    *w++ = '\r';
    *w++ = '\n';
    buf->len += n + 3;
    return RD_OK;
}

int rd_resp_write_simple(struct rd_buf *buf, const char *text)
{
    return rw_line(buf, '+', text);
}

int rd_resp_write_error(struct rd_buf *buf, const char *text)
{
    return rw_line(buf, '-', text);
}

int rd_resp_write_bulk(struct rd_buf *buf, const void *ptr, size_t len)
{
    if (len > SIZE_MAX - RW_HEADER_MAX - 2) return RD_ENOMEM;
    /* Reserve everything first so that a failure leaves no half-written reply. */
    int rc = rd_buf_reserve(buf, RW_HEADER_MAX + len + 2);
    if (rc < 0) return rc;
    char *w = buf->data + buf->len;
    w += rw_header(w, '$', false, len);
    if (len > 0) memcpy(w, ptr, len);
    w += len;
    *w++ = '\r';
    *w++ = '\n';
    buf->len = (size_t)(w - buf->data);
    return RD_OK;
}

int rd_resp_write_nil(struct rd_buf *buf)
{
    return rd_buf_append(buf, "$-1\r\n", 5);
}

int rd_resp_write_int(struct rd_buf *buf, int64_t n)
{
    /* The magnitude in unsigned arithmetic: -INT64_MIN does not fit in int64_t. */
    uint64_t mag = n < 0 ? (uint64_t)0 - (uint64_t)n : (uint64_t)n;
    return rw_append_header(buf, ':', n < 0, mag);
}

int rd_resp_write_array(struct rd_buf *buf, size_t n)
{
    return rw_append_header(buf, '*', false, n);
}

/* ============================================================ RESP3 reply writer */

int rd_resp_write_map(struct rd_buf *buf, int proto, size_t n)
{
    if (proto != RD_RESP3) {
        if (n > SIZE_MAX / 2) return RD_ENOMEM;
        return rw_append_header(buf, '*', false, 2 * (uint64_t)n);
    }
    return rw_append_header(buf, '%', false, n);
}

int rd_resp_write_set(struct rd_buf *buf, int proto, size_t n)
{
    return rw_append_header(buf, proto == RD_RESP3 ? '~' : '*', false, n);
}

int rd_resp_write_push(struct rd_buf *buf, int proto, size_t n)
{
    return rw_append_header(buf, proto == RD_RESP3 ? '>' : '*', false, n);
}

int rd_resp_write_null(struct rd_buf *buf, int proto)
{
    return proto == RD_RESP3 ? rd_buf_append(buf, "_\r\n", 3) : rd_resp_write_nil(buf);
}

/* The format of a verbatim string: three letters and a ':', counted in its length. */
#define RW_VERBATIM_TXT     "txt:"
#define RW_VERBATIM_TXT_LEN 4

int rd_resp_write_verbatim(struct rd_buf *buf, int proto, const void *ptr, size_t len)
{
    if (proto != RD_RESP3) return rd_resp_write_bulk(buf, ptr, len);
    if (len > SIZE_MAX - RW_HEADER_MAX - RW_VERBATIM_TXT_LEN - 2) return RD_ENOMEM;
    int rc = rd_buf_reserve(buf, RW_HEADER_MAX + RW_VERBATIM_TXT_LEN + len + 2);
    if (rc < 0) return rc;
    char *w = buf->data + buf->len;
    w += rw_header(w, '=', false, RW_VERBATIM_TXT_LEN + (uint64_t)len);
    memcpy(w, RW_VERBATIM_TXT, RW_VERBATIM_TXT_LEN);
    w += RW_VERBATIM_TXT_LEN;
    if (len > 0) memcpy(w, ptr, len);
    w += len;
    *w++ = '\r';
    *w++ = '\n';
    buf->len = (size_t)(w - buf->data);
    return RD_OK;
}

/* ====================================================================== reply parser */

/*
 * The reply parser runs twice over the same bytes: a check pass (out == NULL) that finds
 * the end of the reply and every error without allocating, then, only if the reply is
 * whole and valid, a build pass that allocates the tree. Allocation is therefore bounded
 * by the bytes actually received: every element takes at least 3 bytes ("+\r\n").
 */
struct rp {
    const char *buf;
    size_t len;
    size_t pos; /* next unread byte */
    const char *reason;
};

static int rp_fail(struct rp *r, int err, const char *reason)
{
    r->reason = reason;
    return err;
}

/* "<int64>\r\n" at pos (the type byte already read); leaves pos after the CRLF. */
static int rp_int(struct rp *r, int64_t *value)
{
    const uint64_t max_pos = (uint64_t)INT64_MAX;
    size_t i = r->pos;
    bool neg = false;
    uint64_t mag = 0;
    unsigned nd = 0;
    if (i < r->len && r->buf[i] == '-') {
        neg = true;
        i++;
    }
    for (;; i++) {
        if (i >= r->len) return RD_EAGAIN;
        char c = r->buf[i];
        if (c == '\r') break;
        if (c < '0' || c > '9') return rp_fail(r, RD_EPROTO, "bad integer");
        if (nd > 0 && mag == 0) return rp_fail(r, RD_EPROTO, "bad integer"); /* leading zero */
        unsigned d = (unsigned)(c - '0');
        uint64_t limit = neg ? max_pos + 1 : max_pos;
        if (mag > (limit - d) / 10) return rp_fail(r, RD_EPROTO, "integer overflow");
        mag = mag * 10 + d;
        nd++;
    }
    if (nd == 0 || (neg && mag == 0)) return rp_fail(r, RD_EPROTO, "bad integer");
    if (i + 1 >= r->len) return RD_EAGAIN;
    if (r->buf[i + 1] != '\n') return rp_fail(r, RD_EPROTO, "expected '\\n' after '\\r'");
    if (!neg)
        *value = (int64_t)mag;
    else if (mag == max_pos + 1)
        *value = INT64_MIN;
    else
        *value = -(int64_t)mag;
    r->pos = i + 2;
    return RD_OK;
}

static struct rd_resp_reply *rp_node(int type)
{
    struct rd_resp_reply *node = calloc(1, sizeof(*node));
    if (node != NULL) node->type = type;
    return node;
}

/* A node holding a NUL-terminated copy of buf[start..start+n). */
static int rp_str_node(struct rp *r, int type, size_t start, size_t n, struct rd_resp_reply **out)
{
    struct rd_resp_reply *node = rp_node(type);
    if (node == NULL) return RD_ENOMEM;
    node->str = malloc(n + 1);
    if (node->str == NULL) {
        free(node);
        return RD_ENOMEM;
    }
    if (n > 0) memcpy(node->str, r->buf + start, n);
    node->str[n] = '\0';
    node->len = n;
    *out = node;
    return RD_OK;
}

/* "+text\r\n" or "-text\r\n" after the type byte. */
static int rp_line(struct rp *r, int type, struct rd_resp_reply **out)
{
    size_t start = r->pos;
    size_t i = start;
    for (;; i++) {
        if (i - start > RD_RESP_REPLY_MAX_BULK) return rp_fail(r, RD_E2BIG, "line too long");
        if (i >= r->len) return RD_EAGAIN;
        if (r->buf[i] == '\r') break;
        if (r->buf[i] == '\n') return rp_fail(r, RD_EPROTO, "bare '\\n' in line");
    }
    if (i + 1 >= r->len) return RD_EAGAIN;
    if (r->buf[i + 1] != '\n') return rp_fail(r, RD_EPROTO, "expected '\\n' after '\\r'");
    r->pos = i + 2;
    return out == NULL ? RD_OK : rp_str_node(r, type, start, i - start, out);
}

static int rp_value(struct rp *r, int depth, struct rd_resp_reply **out);

static int rp_array(struct rp *r, int depth, int64_t n, struct rd_resp_reply **out)
{
    if (depth + 1 > RD_RESP_REPLY_MAX_DEPTH) return rp_fail(r, RD_E2BIG, "arrays nested too deep");
    if (n > (int64_t)RD_RESP_REPLY_MAX_ELEMENTS) return rp_fail(r, RD_E2BIG, "array too large");
    if (out == NULL) {
        for (int64_t i = 0; i < n; i++) {
            int rc = rp_value(r, depth + 1, NULL);
            if (rc < 0) return rc;
        }
        return RD_OK;
    }
    /* Build pass: the check pass has seen all n elements in the buffer, so n is cheap. */
    struct rd_resp_reply *node = rp_node(RD_RESP_ARRAY);
    if (node == NULL) return RD_ENOMEM;
    if (n > 0) {
        node->elem = calloc((size_t)n, sizeof(*node->elem));
        if (node->elem == NULL) {
            free(node);
            return RD_ENOMEM;
        }
        node->nelem = (size_t)n;
    }
    for (size_t i = 0; i < node->nelem; i++) {
        int rc = rp_value(r, depth + 1, &node->elem[i]);
        if (rc < 0) {
            rd_resp_reply_free(node); /* children not yet built are NULL */
            return rc;
        }
    }
    *out = node;
    return RD_OK;
}

/* One reply at pos; depth = number of arrays around it. out == NULL: check only. */
static int rp_value(struct rp *r, int depth, struct rd_resp_reply **out)
{
    if (r->pos >= r->len) return RD_EAGAIN;
    char type = r->buf[r->pos++];
    int64_t v = 0;
    int rc;
    switch (type) {
    case '+':
        return rp_line(r, RD_RESP_STRING, out);
    case '-':
        return rp_line(r, RD_RESP_ERROR, out);
    case ':':
        rc = rp_int(r, &v);
        if (rc < 0 || out == NULL) return rc;
        if ((*out = rp_node(RD_RESP_INTEGER)) == NULL) return RD_ENOMEM;
        (*out)->integer = v;
        return RD_OK;
    case '$':
        rc = rp_int(r, &v);
        if (rc < 0) return rc;
        if (v == -1) break; /* nil */
        if (v < 0) return rp_fail(r, RD_EPROTO, "bad length");
        if (v > (int64_t)RD_RESP_REPLY_MAX_BULK)
            return rp_fail(r, RD_E2BIG, "bulk string too large");
        {
            size_t n = (size_t)v;
            size_t start = r->pos;
            if (r->len - start < n + 2) return RD_EAGAIN;
            if (r->buf[start + n] != '\r' || r->buf[start + n + 1] != '\n')
                return rp_fail(r, RD_EPROTO, "expected CRLF after bulk");
            r->pos = start + n + 2;
            return out == NULL ? RD_OK : rp_str_node(r, RD_RESP_BULK, start, n, out);
        }
    case '*':
        rc = rp_int(r, &v);
        if (rc < 0) return rc;
        if (v == -1) break; /* nil */
        if (v < 0) return rp_fail(r, RD_EPROTO, "bad length");
        return rp_array(r, depth, v, out);
    default:
        return rp_fail(r, RD_EPROTO, "unknown reply type");
    }
    /* nil, from "$-1" or "*-1" */
    if (out != NULL && (*out = rp_node(RD_RESP_NIL)) == NULL) return RD_ENOMEM;
    return RD_OK;
}

int rd_resp_reply_parse(const char *buf, size_t len, struct rd_resp_reply **out, size_t *consumed,
                        const char **reason)
{
    struct rp r = {.buf = buf, .len = len, .pos = 0, .reason = NULL};
    int rc = rp_value(&r, 0, NULL);
    if (rc == RD_OK) {
        size_t end = r.pos;
        struct rd_resp_reply *root = NULL;
        r.pos = 0;
        rc = rp_value(&r, 0, &root);
        /* The bytes passed the check pass, so only allocation can fail now. */
        assert(rc == RD_OK || rc == RD_ENOMEM);
        if (rc == RD_OK) {
            assert(r.pos == end);
            *out = root;
            *consumed = end;
        }
    }
    if (reason != NULL) *reason = rc == RD_EPROTO || rc == RD_E2BIG ? r.reason : NULL;
    return rc;
}

void rd_resp_reply_free(struct rd_resp_reply *reply)
{
    if (reply == NULL) return;
    /* Recursion is bounded by RD_RESP_REPLY_MAX_DEPTH. */
    for (size_t i = 0; i < reply->nelem; i++)
        rd_resp_reply_free(reply->elem[i]);
    free(reply->elem);
    free(reply->str);
    free(reply);
}
