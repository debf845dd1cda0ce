/*
 * resp.h — RESP2 and RESP3, the wire format of the query socket (DESIGN.md §5 "Query
 * socket").
 *
 * RESP was chosen so that redis-cli, hiredis and every Redis client library can talk to
 * ringd unchanged: RESP2 as every client starts, RESP3 for those that ask for it with HELLO
 * 3 (node-redis does by default). Requests are the same in both. This module only turns bytes into
 * plain C values and back; it does no I/O and knows no commands. Three pieces:
 *
 *   - a server-side request parser, incremental and zero-copy: the agent reads from the
 *     socket into its own buffer and calls rd_resp_parse() after every read. The parser
 *     keeps its progress as offsets from the start of the current request (never
 *     pointers), so the caller may grow or move its buffer between calls, and no byte is
 *     looked at twice however the request is split. Arguments come back as pointers into
 *     the caller's buffer: no copy.
 *   - a reply writer that appends replies to an rd_buf (lib/buf.h).
 *   - a client-side reply parser for the CLI that builds a small tree, of RESP2 replies
 *     only (the CLI never sends HELLO 3). Replies are small and the CLI is not a server,
 *     so it simply re-scans from the start until the whole reply is there; it allocates
 *     nothing until then.
 *
 * Every length and count from the network is checked against a named limit as soon as its
 * digits are read, before the bytes it announces arrive, so a peer cannot make us buffer or
 * allocate more than the limits allow.
 *
 * Requests (client to server), two forms, as Redis accepts them:
 *
 *   array of bulk strings          "*2\r\n$5\r\nOWNER\r\n$3\r\nfoo\r\n"
 *     '*' count CRLF, then count x ( '$' length CRLF, length bytes, CRLF )
 *     count 0 or -1 is an empty request; a bulk may hold any bytes, \r\n included
 *   inline command                 "OWNER foo\r\n"
 *     any line whose first byte is not '*', ended by "\n" or "\r\n",
 *     split on spaces and tabs; a blank line is an empty request
 *
 * Replies (server to client):
 *
 *   simple string  "+PONG\r\n"           error    "-ERR unknown command\r\n"
 *   integer        ":42\r\n"             bulk     "$3\r\nfoo\r\n"    nil "$-1\r\n"
 *   array          "*2\r\n" then 2 replies (nested arrays allowed; "*-1\r\n" is nil)
 *
 * Lengths and counts are canonical decimal: no '+', no leading zeros, no spaces.
 */
#ifndef RD_RESP_H
#define RD_RESP_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* ------------------------------------------------------------------ limits */

/** Largest argument of a request, in bytes (a bulk string's declared length). */
#define RD_RESP_MAX_ARG (512u * 1024u)
/** Largest request, in bytes: every byte of one request, headers and CRLFs included. */
#define RD_RESP_MAX_REQUEST (1024u * 1024u)
/** Most arguments in one request (the command name counts as one). */
#define RD_RESP_MAX_ARGS 4096u
/** Longest inline command line, in bytes, its "\n" or "\r\n" included. */
#define RD_RESP_MAX_INLINE (64u * 1024u)

/** Deepest nesting of arrays in a reply: a top-level array is depth 1. */
#define RD_RESP_REPLY_MAX_DEPTH 8
/** Largest bulk string (and simple string or error line) in a reply, in bytes. */
#define RD_RESP_REPLY_MAX_BULK (64u * 1024u * 1024u)
/** Most elements in one array of a reply. */
#define RD_RESP_REPLY_MAX_ELEMENTS 1000000u

/* ---------------------------------------------------------- request parser */

/** One argument of a request: `len` bytes at `ptr`, inside the caller's buffer. */
struct rd_resp_arg {
    const char *ptr; /**< not NUL-terminated; may contain any byte */
    size_t len;      /**< bytes */
};

/**
 * A parsed request. `argv` is owned by the parser and its `ptr`s point into the buffer
 * passed to rd_resp_parse(): both are valid until the next call on the parser, and the
 * `ptr`s only while that buffer is neither moved, changed nor freed.
 */
struct rd_resp_request {
    size_t argc;                    /**< 0 means "nothing to run": drop `consumed`, go on */
    const struct rd_resp_arg *argv; /**< argc entries; argv[0] is the command name */
    size_t consumed;                /**< bytes of the buffer this request took, >= 1 */
};

/**
 * State of the request parser of one connection. Caller-owned (embed it in the connection);
 * the fields are private. rd_resp_parser_init() before use, rd_resp_parser_free() after.
 */
struct rd_resp_parser {
    int state;                /* where in the grammar the next byte goes */
    int err;                  /* sticky RD_E2BIG / RD_EPROTO once the stream is broken */
    const char *reason;       /* static text for err */
    size_t pos;               /* offset of the next unread byte from the request start */
    size_t num;               /* the length or count whose digits are being read */
    unsigned ndigits;         /* digits of num read so far */
    int neg;                  /* a '-' was read before the digits */
    size_t nargs;             /* declared argument count of the array being read */
    size_t argi;              /* arguments of it read so far */
    size_t bulk_len;          /* length of the bulk string being read */
    struct rd_resp_arg *argv; /* argument array handed out in rd_resp_request */
    size_t *arg_off;          /* offsets of the arguments, from the request start */
    size_t arg_cap;           /* entries allocated in argv and arg_off */
};

/** Prepares `p` for the first request of a connection. Does not allocate. */
void rd_resp_parser_init(struct rd_resp_parser *p);

/** Frees what the parser allocated (its argv array). `p` may be re-initialised after. */
void rd_resp_parser_free(struct rd_resp_parser *p);

/**
 * Parses one request from `buf[0..len)`: every byte received and not yet consumed, starting
 * with the current request. The first call for a request may see only part of it; call
 * again, with the same bytes plus more (the buffer may have moved), after every read.
 * Bytes already examined are not examined again.
 *
 * Returns:
 *  - 0: a whole request. Fills `*req` (see struct rd_resp_request). The caller handles it,
 *    drops the first `req->consumed` bytes, and calls again for the next pipelined one.
 *  - RD_EAGAIN: more bytes are needed; the parser keeps its progress.
 *  - RD_E2BIG: over one of the RD_RESP_MAX_* limits, reported as soon as a declared length
 *    or count exceeds it, before the bytes arrive.
 *  - RD_EPROTO: malformed bytes.
 *  - RD_ENOMEM: could not grow the argument array; nothing changed, the call may be retried.
 *  - RD_EINVAL: `len` is smaller than what the parser has already examined (misuse).
 * RD_E2BIG and RD_EPROTO are sticky: the stream cannot be resynchronised, so every later
 * call returns the same; answer with an error and close the connection.
 *
 * `reason` may be NULL; if not, *reason is set to a short static text on RD_E2BIG and
 * RD_EPROTO (e.g. "expected '$'", "bad length") and to NULL otherwise.
 */
int rd_resp_parse(struct rd_resp_parser *p, const char *buf, size_t len,
                  struct rd_resp_request *req, const char **reason);

/* ------------------------------------------------------------ reply writer */

/*
 * Each writer appends one reply (or array header) to `buf` and returns 0 or RD_ENOMEM.
 * On RD_ENOMEM `buf` is unchanged, so a reply is never half-written.
 */

/**
 * Appends a simple string "+text\r\n". `text` is NUL-terminated; any CR or LF in it is
 * written as a space, since a simple string cannot hold them.
 */
int rd_resp_write_simple(struct rd_buf *buf, const char *text);

/**
 * Appends an error "-text\r\n". `text` is NUL-terminated, without the '-', and by
 * convention starts with a code word: "ERR unknown command 'FOO'". Any CR or LF in it is
 * written as a space, so echoing user input in an error cannot break the framing.
 */
int rd_resp_write_error(struct rd_buf *buf, const char *text);

/** Appends a bulk string "$len\r\n<len bytes>\r\n"; any bytes. `ptr` may be NULL if len is 0. */
int rd_resp_write_bulk(struct rd_buf *buf, const void *ptr, size_t len);

/** Appends the nil bulk string "$-1\r\n" (e.g. OWNER on an empty ring). */
int rd_resp_write_nil(struct rd_buf *buf);

/** Appends an integer ":n\r\n"; the whole int64_t range. */
int rd_resp_write_int(struct rd_buf *buf, int64_t n);

/** Appends an array header "*n\r\n"; the caller then writes exactly n replies. */
int rd_resp_write_array(struct rd_buf *buf, size_t n);

/* ----------------------------------------------------- RESP3 reply writer */

/*
 * A connection speaks RESP2 until HELLO 3 switches it to RESP3, whose replies say more
 * about their shape: a map of pairs, a set, a null distinct from an empty string, a push
 * that is no reply to any request, a verbatim text. Each of these writers takes the
 * connection's protocol and writes the RESP3 type for 3, or what Redis writes in its
 * place for 2, so a command writes its reply once for both:
 *
 *   RD_RESP3          RESP3                      RESP2
 *   map of n pairs    "%n\r\n" + 2n replies      "*2n\r\n" + 2n replies
 *   set of n          "~n\r\n" + n replies       "*n\r\n" + n replies
 *   push of n         ">n\r\n" + n replies       "*n\r\n" + n replies
 *   null              "_\r\n"                    "$-1\r\n"
 *   verbatim text     "=len\r\ntxt:<text>\r\n"   "$len\r\n<text>\r\n"
 *
 * (len of a verbatim text counts its "txt:" prefix, as RESP3 says.)
 */

/** The protocols a connection may speak (HELLO's protover). */
#define RD_RESP2 2
#define RD_RESP3 3

/** Appends a map header for n key/value pairs (2n replies follow). */
int rd_resp_write_map(struct rd_buf *buf, int proto, size_t n);

/** Appends a set header for n members. */
int rd_resp_write_set(struct rd_buf *buf, int proto, size_t n);

/** Appends a push header for n elements: out-of-band data such as a pub/sub message. */
int rd_resp_write_push(struct rd_buf *buf, int proto, size_t n);

/** Appends the null reply (RESP3 "_", RESP2's nil bulk). */
int rd_resp_write_null(struct rd_buf *buf, int proto);

/** Appends plain text that a client should show as it is (CLIENT INFO, CLIENT LIST). */
int rd_resp_write_verbatim(struct rd_buf *buf, int proto, const void *ptr, size_t len);

/* ------------------------------------------------------------ reply parser */

/** Type of an rd_resp_reply. */
enum rd_resp_type {
    RD_RESP_STRING = 1,  /**< simple string "+..." */
    RD_RESP_ERROR = 2,   /**< error "-..." (text without the '-') */
    RD_RESP_INTEGER = 3, /**< integer ":..." */
    RD_RESP_BULK = 4,    /**< bulk string "$..." */
    RD_RESP_NIL = 5,     /**< nil bulk "$-1" or nil array "*-1" */
    RD_RESP_ARRAY = 6,   /**< array "*...", possibly empty */
};

/**
 * One reply, a tree for arrays. Heap-allocated by rd_resp_reply_parse(); the whole tree is
 * owned by its root and freed with rd_resp_reply_free(root).
 */
struct rd_resp_reply {
    int type;                    /**< enum rd_resp_type */
    int64_t integer;             /**< RD_RESP_INTEGER: the value; else 0 */
    char *str;                   /**< STRING, ERROR, BULK: len bytes + a NUL; else NULL */
    size_t len;                  /**< bytes in str, the NUL not counted */
    size_t nelem;                /**< RD_RESP_ARRAY: number of elements; else 0 */
    struct rd_resp_reply **elem; /**< RD_RESP_ARRAY: nelem children (NULL if none) */
};

/**
 * Parses one whole reply from `buf[0..len)`. Returns:
 *  - 0: `*out` is a new tree owned by the caller and `*consumed` the bytes it took.
 *  - RD_EAGAIN: the reply is not complete; nothing is allocated and `*out` and `*consumed`
 *    are untouched. Call again with the same bytes plus more (this re-scans from buf[0]).
 *  - RD_EPROTO: malformed bytes; RD_E2BIG: over an RD_RESP_REPLY_* limit (nesting deeper
 *    than RD_RESP_REPLY_MAX_DEPTH, a bulk over RD_RESP_REPLY_MAX_BULK, an array over
 *    RD_RESP_REPLY_MAX_ELEMENTS). The connection cannot be resynchronised.
 *  - RD_ENOMEM.
 * Memory is only allocated once every byte of the reply is present, and in proportion to
 * those bytes, so a hostile declared length or count cannot make it allocate.
 * `reason` may be NULL; if not, *reason is a short static text on RD_EPROTO and RD_E2BIG,
 * NULL otherwise.
 */
int rd_resp_reply_parse(const char *buf, size_t len, struct rd_resp_reply **out, size_t *consumed,
                        const char **reason);

/** Frees a reply tree from rd_resp_reply_parse(). NULL is fine. */
void rd_resp_reply_free(struct rd_resp_reply *reply);

#endif
