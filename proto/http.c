/*
 * http.c — the metrics endpoint's HTTP/1.x subset (see http.h for what it accepts and why
 * it exists).
 *
 * One pass, one byte at a time, from where the last call stopped: per-byte checks (control
 * bytes, a CR not before an LF, token characters, the method, target and version lengths)
 * fail at the byte that breaks them, and per-line checks (the request line's shape, the
 * version, the method, Content-Length) at the LF that ends the line. Since neither kind
 * looks past the byte in hand, how the request was split across reads cannot change the
 * outcome. A full request is at most RD_HTTP_REQUEST_MAX bytes, so the whole of it costs
 * one scan of at most 8 KiB per connection however slowly it trickles in.
 */
#include "http.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rd_err.h"

/* "HTTP/1.1": the only length a version this parser accepts can have. */
#define VERSION_LEN 8u

void rd_http_parser_init(struct rd_http_parser *p)
{
    *p = (struct rd_http_parser){.rc = RD_EAGAIN};
}

static int fail(struct rd_http_parser *p, int status, const char *reason)
{
    p->rc = RD_EPROTO;
    p->status = status;
    p->reason = reason;
    return RD_EPROTO;
}

/* RFC 9110 §5.6.2 tchar. */
static bool tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is(const char *buf, size_t off, size_t len, const char *word)
{
    return len == strlen(word) && strncasecmp(buf + off, word, len) == 0;
}

/* A byte of the request line, not CR or LF. */
static int request_byte(struct rd_http_parser *p, size_t i, unsigned char c)
{
    if (c == ' ') {
        if (i == p->mark) return fail(p, 400, "an empty token in the request line");
        if (++p->spaces > 2) return fail(p, 400, "more than two spaces in the request line");
        p->mark = i + 1;
        if (p->spaces == 1) p->req.path_off = i + 1; /* the target, until the line ends */
        return RD_EAGAIN;
    }
    switch (p->spaces) {
    case 0:
        if (!tchar(c)) return fail(p, 400, "a method that is not a token");
        if (i - p->line >= RD_HTTP_METHOD_MAX) return fail(p, 400, "a method too long");
        break;
    case 1:
        if (c == '\t' || c > 0x7e || c == '#')
            return fail(p, 400, "a byte not allowed in a target");
        if (i - p->mark >= RD_HTTP_TARGET_MAX) return fail(p, 414, "a target too long");
        break;
    default:
        if (i - p->mark >= VERSION_LEN) return fail(p, 400, "a version too long");
        break;
    }
    return RD_EAGAIN;
}

/* The request line buf[p->line..end), complete. */
static int request_line(struct rd_http_parser *p, const char *buf, size_t end)
{
    if (p->spaces != 2 || end == p->mark)
        return fail(p, 400, "a request line that is not METHOD SP target SP version");
    const char *v = buf + p->mark;
    if (end - p->mark != VERSION_LEN || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' ||
        v[6] != '.' || v[7] < '0' || v[7] > '9')
        return fail(p, 400, "a malformed HTTP version");
    if (v[5] != '1') return fail(p, 505, "an HTTP version other than 1.x");
    p->req.minor = v[7] - '0';

    size_t target = p->req.path_off, target_end = p->mark - 1, path = target;
    if (buf[target] != '/') {
        static const char scheme[] = "http://";
        size_t n = sizeof scheme - 1;
        if (target_end - target < n || strncasecmp(buf + target, scheme, n) != 0)
            return fail(p, 400, "a target in neither origin nor absolute form");
        path = target + n;
        while (path < target_end && buf[path] != '/' && buf[path] != '?')
            path++;
        if (path == target + n) return fail(p, 400, "an absolute target without a host");
    }
    size_t path_end = path;
    while (path_end < target_end && buf[path_end] != '?')
        path_end++;
    p->req.path_off = path;
    p->req.path_len = path_end - path;

    size_t method_len = target - 1 - p->line;
    if (method_len == 3 && memcmp(buf + p->line, "GET", 3) == 0) /* methods are case-sensitive */
        p->req.method = RD_HTTP_GET;
    else if (method_len == 4 && memcmp(buf + p->line, "HEAD", 4) == 0)
        p->req.method = RD_HTTP_HEAD;
    else
        return fail(p, 405, "a method other than GET and HEAD");
    p->headers = true;
    p->mark = 0;
    return RD_EAGAIN;
}

/* A byte of a header line, not CR or LF. p->mark is 0 until the line's ':'. */
static int header_byte(struct rd_http_parser *p, size_t i, unsigned char c)
{
    if (i == p->line && (c == ' ' || c == '\t')) return fail(p, 400, "a folded header line");
    if (p->mark) return RD_EAGAIN; /* the value: any byte but a control byte */
    if (c == ':') {
        if (i == p->line) return fail(p, 400, "an empty header name");
        p->mark = i;
    } else if (!tchar(c)) {
        return fail(p, 400, "a header name that is not a token");
    }
    return RD_EAGAIN;
}

/* The header line buf[p->line..end), complete; an empty one ends the request. */
static int header_line(struct rd_http_parser *p, const char *buf, size_t end)
{
    if (end == p->line) {
        if (p->hosts > 1 || (p->req.minor >= 1 && p->hosts != 1))
            return fail(p, 400, "not exactly one Host header");
        p->rc = 0;
        return 0;
    }
    if (!p->mark) return fail(p, 400, "a header line without ':'");
    size_t name_len = p->mark - p->line, v = p->mark + 1, v_end = end;
    while (v < v_end && (buf[v] == ' ' || buf[v] == '\t'))
        v++;
    while (v_end > v && (buf[v_end - 1] == ' ' || buf[v_end - 1] == '\t'))
        v_end--;
    if (is(buf, p->line, name_len, "host")) {
        if (p->hosts < 2) p->hosts++;
    } else if (is(buf, p->line, name_len, "content-length")) {
        if (v == v_end) return fail(p, 400, "an empty Content-Length");
        for (size_t k = v; k < v_end; k++) {
            if (buf[k] < '0' || buf[k] > '9') return fail(p, 400, "a malformed Content-Length");
            if (buf[k] != '0') return fail(p, 400, "a request body");
        }
    } else if (is(buf, p->line, name_len, "transfer-encoding")) {
        return fail(p, 400, "a request body");
    }
    p->mark = 0;
    return RD_EAGAIN;
}

int rd_http_parse(struct rd_http_parser *p, const char *buf, size_t len)
{
    if (p->rc != RD_EAGAIN) return p->rc;
    size_t end = len < RD_HTTP_REQUEST_MAX ? len : RD_HTTP_REQUEST_MAX;
    for (size_t i = p->scanned; i < end; i++) {
        unsigned char c = (unsigned char)buf[i];
        p->scanned = i + 1;
        if (p->cr && c != '\n') return fail(p, 400, "a CR not followed by LF");
        int rc;
        if (c == '\n') {
            size_t line_end = p->cr ? i - 1 : i;
            p->cr = false;
            if (line_end == p->line && !p->headers)
                return fail(p, 400, "an empty line before the request line");
            rc = p->headers ? header_line(p, buf, line_end) : request_line(p, buf, line_end);
            p->line = i + 1;
            if (rc == 0) p->req.length = i + 1;
            if (rc != RD_EAGAIN) return rc;
            continue;
        }
        if (c == '\r') {
            p->cr = true;
            continue;
        }
        if ((c < 0x20 && c != '\t') || c == 0x7f) return fail(p, 400, "a control byte");
        rc = p->headers ? header_byte(p, i, c) : request_byte(p, i, c);
        if (rc != RD_EAGAIN) return rc;
    }
    /* the request line's own limits end it long before this: what runs out here is headers */
    if (p->scanned >= RD_HTTP_REQUEST_MAX)
        return fail(p, 431, "headers longer than the request limit");
    return RD_EAGAIN;
}

const char *rd_http_status_text(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 414:
        return "URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 500:
        return "Internal Server Error";
    case 503:
        return "Service Unavailable";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

size_t rd_http_response_head(char *buf, size_t cap, int status, const char *content_type,
                             size_t content_length)
{
    int n = snprintf(buf, cap,
                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n%s\r\n",
                     status, rd_http_status_text(status), content_type, content_length,
                     status == 405 ? "Allow: GET, HEAD\r\n" : "");
    return n > 0 ? (size_t)n : 0;
}
