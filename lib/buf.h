/*
 * buf.h — a growable byte buffer: bytes are appended at the back and consumed from the front.
 *
 * It is the one shape every output path needs (RESP replies to a query client, frames to a
 * gossip peer): encoders append, the transport writes what it can and consumes that much.
 * It is plain memory with no I/O so that lib/ stays sans-I/O and every encoder can be tested
 * against its bytes. The fields are public and meant to be read (data, len); change them only
 * through these functions.
 *
 *   data                     data+len            data+cap
 *   |<------ bytes held ------>|<---- spare ------>|
 *
 * Capacity grows geometrically, so n appends cost O(n) amortised. Consuming moves the
 * remaining bytes to the front (O(len - n)): consume in batches, not byte by byte.
 */
#ifndef RD_BUF_H
#define RD_BUF_H

#include <stddef.h>

/** A byte buffer. `data` is NULL until the first allocation; it is not NUL-terminated. */
struct rd_buf {
    char *data; /**< heap memory owned by the buffer; may move on any growth */
    size_t len; /**< bytes held, data[0..len) */
    size_t cap; /**< bytes allocated */
};

/** Makes `buf` empty without allocating. Call before any other use. */
void rd_buf_init(struct rd_buf *buf);

/** Frees the memory of `buf` and leaves it empty (initialised) again. NULL is fine. */
void rd_buf_free(struct rd_buf *buf);

/**
 * Ensures room for `extra` more bytes after `len`, so that appending up to `extra` bytes
 * cannot fail. Returns 0 or RD_ENOMEM (size overflow included); on error `buf` is unchanged.
 * Pointers into `data` are invalid after a successful call.
 */
int rd_buf_reserve(struct rd_buf *buf, size_t extra);

/**
 * Copies `len` bytes from `ptr` to the end of `buf` (`ptr` may be NULL when `len` is 0, and
 * must not point into `buf` itself). Returns 0 or RD_ENOMEM; on error `buf` is unchanged.
 */
int rd_buf_append(struct rd_buf *buf, const void *ptr, size_t len);

/**
 * Drops the first `n` bytes (n <= len; more is a programming error, clamped to len) and
 * moves the rest to the front. Never allocates or fails; keeps the capacity.
 */
void rd_buf_consume(struct rd_buf *buf, size_t n);

#endif
