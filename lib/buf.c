/* buf.c — the growable byte buffer of buf.h. */
#include "buf.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rd_err.h"

/* First allocation: big enough for a typical reply, small enough per idle connection. */
#define RD_BUF_MIN_CAP 64

void rd_buf_init(struct rd_buf *buf)
{
    buf->data = NULL;
    buf->len = 0;
    buf->cap = 0;
}

void rd_buf_free(struct rd_buf *buf)
{
    if (buf == NULL) return;
    free(buf->data);
    rd_buf_init(buf);
}

int rd_buf_reserve(struct rd_buf *buf, size_t extra)
{
    if (buf->cap - buf->len >= extra) return RD_OK;
    if (extra > SIZE_MAX - buf->len) return RD_ENOMEM;
    size_t need = buf->len + extra;
    size_t cap = buf->cap < RD_BUF_MIN_CAP ? RD_BUF_MIN_CAP : buf->cap;
    /* Doubling keeps appends amortised O(1); fall back to the exact size near SIZE_MAX. */
    while (cap < need)
        cap = cap > SIZE_MAX / 2 ? need : cap * 2;
    char *data = realloc(buf->data, cap);
    if (data == NULL) return RD_ENOMEM;
    buf->data = data;
    buf->cap = cap;
    return RD_OK;
}

int rd_buf_append(struct rd_buf *buf, const void *ptr, size_t len)
{
    if (len == 0) return RD_OK; /* also keeps memcpy away from a NULL pointer */
    int rc = rd_buf_reserve(buf, len);
    if (rc < 0) return rc;
    memcpy(buf->data + buf->len, ptr, len);
    buf->len += len;
    return RD_OK;
}

void rd_buf_consume(struct rd_buf *buf, size_t n)
{
    assert(n <= buf->len);
    if (n >= buf->len) {
        buf->len = 0;
        return;
    }
    if (n == 0) return;
    memmove(buf->data, buf->data + n, buf->len - n);
    buf->len -= n;
}
