/*
 * http.h — the little HTTP/1.x that the metrics endpoint (agent/metrics.c) speaks: a request
 * parser and a response head writer, with no I/O.
 *
 * Why ringd parses HTTP itself: the endpoint must be in the static ringd that ships (the
 * .deb, the OCI image). Debian's HTTP server library (libmicrohttpd) is built with TLS, so
 * its static archive pulls in libgnutls and libp11-kit, of which Debian ships no static
 * archive. What the endpoint needs is small: one GET (or HEAD) of one path per connection,
 * no body, no keep-alive, no chunked encoding. So this is a bounded subset of RFC 9112, and
 * everything outside it is refused with a status rather than half-understood:
 *
 *   request-line  METHOD SP request-target SP "HTTP/1." DIGIT, one SP each, no tabs
 *   line ends     CRLF, or a bare LF (RFC 9112 §2.2 lets a recipient accept one); a CR
 *                 anywhere but before an LF is refused
 *   target        origin-form ("/metrics?x=y") or absolute-form ("http://host/metrics");
 *                 the path is the part before '?'. Bytes outside VCHAR, and '#', are refused
 *   headers       "name:" value, name a token; obs-fold (a line that starts with a space)
 *                 is refused; HTTP/1.1 needs exactly one Host
 *   body          none: Content-Length other than 0, or any Transfer-Encoding, is refused
 *   statuses      400 malformed, 405 a method other than GET and HEAD, 414 a target over
 *                 RD_HTTP_TARGET_MAX, 431 headers that run past RD_HTTP_REQUEST_MAX,
 *                 505 an HTTP major version other than 1
 *
 * The parser is incremental: the caller keeps every byte the connection sent in one buffer
 * (at most RD_HTTP_REQUEST_MAX) and calls rd_http_parse() after each read with all of them.
 * The parser remembers how far it has looked (offsets, never pointers) and looks at each
 * byte once, and every check depends only on the bytes before the one that fails it, so a
 * request split anywhere gives the same outcome as the request whole (fuzz_http checks this).
 */
#ifndef RD_HTTP_H
#define RD_HTTP_H

#include <stdbool.h>
#include <stddef.h>

/** Most bytes of one request, request line and headers and the empty line included. */
#define RD_HTTP_REQUEST_MAX 8192u
/** Longest request-target; a longer one is answered 414. */
#define RD_HTTP_TARGET_MAX 2048u
/** Longest method token; no method this server knows is near it. */
#define RD_HTTP_METHOD_MAX 16u

enum rd_http_method { RD_HTTP_GET = 1, RD_HTTP_HEAD = 2 };

/** A complete request, as offsets into the caller's bytes. */
struct rd_http_request {
    enum rd_http_method method;
    size_t path_off, path_len; /**< the target's path, its query string left out */
    int minor;                 /**< HTTP/1.minor */
    size_t length;             /**< bytes of the request, its empty line included */
};

/** One connection's progress through one request. Zero it (or rd_http_parser_init). */
struct rd_http_parser {
    size_t scanned;       /**< bytes before this were looked at */
    size_t line;          /**< where the current line starts */
    size_t mark;          /**< request line: where the current token starts; header: ':' */
    unsigned char spaces; /**< request line: spaces seen */
    bool cr;              /**< the last byte was a CR */
    bool headers;         /**< past the request line */
    unsigned char hosts;  /**< Host headers seen */
    int rc;               /**< RD_EAGAIN until the outcome, then sticky */
    int status;           /**< with RD_EPROTO: the status to answer */
    const char *reason;   /**< with RD_EPROTO: why, static text */
    struct rd_http_request req;
};

void rd_http_parser_init(struct rd_http_parser *p);

/**
 * Looks at buf[0..len), the bytes the connection has sent so far (the same bytes as the
 * last call, plus any new ones). Returns RD_EAGAIN: not complete yet, read more; 0: p->req
 * holds the request (bytes after it are not looked at); RD_EPROTO: refused, answer
 * p->status (400, 405, 414, 431 or 505; p->reason says why). The outcome is sticky. Bytes
 * past RD_HTTP_REQUEST_MAX are never looked at: with that many and no end of headers the
 * outcome is 431 (the request line's own limits end it well before).
 */
int rd_http_parse(struct rd_http_parser *p, const char *buf, size_t len);

/** The reason phrase of a status this module uses ("Not Found"), or "Error". */
const char *rd_http_status_text(int status);

/**
 * Writes a response head into buf[0..cap): the status line (HTTP/1.1), Content-Type,
 * Content-Length, Connection: close, Allow: GET, HEAD with a 405, and the empty line.
 * Returns the length it needs, as snprintf does (NUL-terminated when it fits).
 */
size_t rd_http_response_head(char *buf, size_t cap, int status, const char *content_type,
                             size_t content_length);

#endif
