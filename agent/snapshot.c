/*
 * snapshot.c — the member table saved across restarts (see snapshot.h; the format is in
 * proto/PROTOCOL.md, "State snapshot").
 *
 * Why this shape. The bytes are a small binary format of our own rather than msgpack or
 * text: a header with a version, the body's length and its XXH3-64, then length-prefixed
 * fields, so that a file cut by a crash, flipped by a disk or written by another version
 * is told apart in one comparison and never half-used. Decoding is pure (bytes in, records
 * out, bounds checked before every read) so that the unit test can cut a file at every
 * length and the fuzzer can feed it anything. The file steps are separate; saving is the
 * keyring's sequence (files.c: a fresh temporary file, fsync, rename over the old one,
 * fsync of the directory), and reading refuses a file over RD_SNAPSHOT_MAX_BYTES before
 * allocating.
 */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "files.h"
#include "rd_err.h"

static const uint8_t MAGIC[4] = {'R', 'D', 'S', 'N'};

/* ---------------------------------------------------------------- encoding */

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 7; i >= 0; i--)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static uint8_t *put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        *p++ = (uint8_t)(v >> (8 * i));
    return p;
}

static uint8_t *put_str(uint8_t *p, const char *s)
{
    size_t n = strlen(s);
    *p++ = (uint8_t)n;
    memcpy(p, s, n);
    return p + n;
}

static size_t addr_len(const struct rd_addr *a)
{
    return a->family == 6 ? 16 : 4;
}

size_t rd_snapshot_encoded_len(const struct rd_snapshot_head *head,
                               const struct rd_snapshot_entry *e, size_t n)
{
    size_t len =
        RD_SNAPSHOT_HEADER_LEN + 1 + strlen(head->cluster) + 1 + strlen(head->self) + 8 + 4;
    for (size_t i = 0; i < n; i++)
        len += 1 + strlen(e[i].name) + 1 + addr_len(&e[i].addr) + 2 + 8 + 1;
    return len;
}

int rd_snapshot_encode(const struct rd_snapshot_head *head, const struct rd_snapshot_entry *e,
                       size_t n, uint8_t *out, size_t cap)
{
    if (n > RD_MAX_MEMBERS || rd_snapshot_encoded_len(head, e, n) > cap) return RD_E2BIG;
    size_t cl = strlen(head->cluster), sl = strlen(head->self);
    if (cl > RD_ZONE_MAX || !rd_zone_valid(head->cluster, cl) || !rd_name_valid(head->self, sl))
        return RD_EINVAL;
    for (size_t i = 0; i < n; i++)
        if (!rd_name_valid(e[i].name, strlen(e[i].name)) ||
            (e[i].addr.family != 4 && e[i].addr.family != 6) || e[i].status > RD_LEFT)
            return RD_EINVAL;
    uint8_t *p = out + RD_SNAPSHOT_HEADER_LEN;
    p = put_str(p, head->cluster);
    p = put_str(p, head->self);
    p = put_u64(p, head->saved_ms);
    p = put_u32(p, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        p = put_str(p, e[i].name);
        *p++ = e[i].addr.family;
        memcpy(p, e[i].addr.ip, addr_len(&e[i].addr));
        p += addr_len(&e[i].addr);
        *p++ = (uint8_t)(e[i].addr.port >> 8);
        *p++ = (uint8_t)e[i].addr.port;
        p = put_u64(p, e[i].incarnation);
        *p++ = e[i].status;
    }
    size_t body = (size_t)(p - out) - RD_SNAPSHOT_HEADER_LEN;
    uint8_t *h = out;
    memcpy(h, MAGIC, 4);
    h[4] = RD_SNAPSHOT_VERSION;
    h[5] = h[6] = h[7] = 0;
    put_u32(h + 8, (uint32_t)body);
    put_u64(h + 12, XXH3_64bits(out + RD_SNAPSHOT_HEADER_LEN, body));
    return (int)(p - out);
}

/* ---------------------------------------------------------------- decoding */

/* A bounded reader: every get checks what is left first, and a short read sticks. */
struct reader {
    const uint8_t *p, *end;
    bool short_read;
};

static bool take(struct reader *r, size_t n)
{
    if (r->short_read || (size_t)(r->end - r->p) < n) {
        r->short_read = true;
        return false;
    }
    return true;
}

static uint64_t get_uint(struct reader *r, size_t n)
{
    uint64_t v = 0;
    if (!take(r, n)) return 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | *r->p++;
    return v;
}

/* A length-prefixed string of at most `max` bytes into out[max + 1]; false if too long or
 * holding a NUL (which would cut it short: what the caller checks must be all there is). */
static bool get_str(struct reader *r, char *out, size_t max)
{
    out[0] = '\0';
    size_t n = (size_t)get_uint(r, 1);
    if (r->short_read) return true; /* reported as truncated */
    if (n > max) return false;
    if (!take(r, n)) return true;
    if (memchr(r->p, '\0', n)) return false;
    memcpy(out, r->p, n);
    out[n] = '\0';
    r->p += n;
    return true;
}

static int refuse(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int refuse(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return RD_EPROTO;
}

int rd_snapshot_decode(const uint8_t *buf, size_t len, struct rd_snapshot_head *head,
                       struct rd_snapshot_entry *e, size_t cap, char *err, size_t errlen)
{
    memset(head, 0, sizeof *head);
    if (len < RD_SNAPSHOT_HEADER_LEN)
        return refuse(err, errlen, "truncated: %zu bytes, shorter than the header", len);
    if (memcmp(buf, MAGIC, 4) != 0) return refuse(err, errlen, "not a ringd snapshot (bad magic)");
    if (buf[4] != RD_SNAPSHOT_VERSION)
        return refuse(err, errlen, "version %u, this agent reads %u", buf[4], RD_SNAPSHOT_VERSION);
    if (buf[5] | buf[6] | buf[7]) return refuse(err, errlen, "reserved header bytes not zero");
    struct reader r = {buf + 8, buf + RD_SNAPSHOT_HEADER_LEN, false};
    uint64_t body = get_uint(&r, 4), sum = get_uint(&r, 8);
    if (body != len - RD_SNAPSHOT_HEADER_LEN)
        return refuse(err, errlen, "truncated or padded: body of %zu bytes, header says %llu",
                      len - RD_SNAPSHOT_HEADER_LEN, (unsigned long long)body);
    if (XXH3_64bits(buf + RD_SNAPSHOT_HEADER_LEN, (size_t)body) != sum)
        return refuse(err, errlen, "checksum mismatch");
    r = (struct reader){buf + RD_SNAPSHOT_HEADER_LEN, buf + len, false};
    if (!get_str(&r, head->cluster, RD_ZONE_MAX) ||
        (!r.short_read && !rd_zone_valid(head->cluster, strlen(head->cluster))))
        return refuse(err, errlen, "bad cluster label");
    if (!get_str(&r, head->self, RD_NAME_MAX) ||
        (!r.short_read && !rd_name_valid(head->self, strlen(head->self))))
        return refuse(err, errlen, "bad member name of its writer");
    head->saved_ms = get_uint(&r, 8);
    uint64_t count = get_uint(&r, 4);
    if (r.short_read) return refuse(err, errlen, "truncated header fields");
    if (count > RD_MAX_MEMBERS || count > cap)
        return refuse(err, errlen, "%llu records, more than the %zu allowed",
                      (unsigned long long)count, cap < RD_MAX_MEMBERS ? cap : RD_MAX_MEMBERS);
    for (uint32_t i = 0; i < count; i++) {
        struct rd_snapshot_entry *m = &e[i];
        memset(m, 0, sizeof *m);
        if (!get_str(&r, m->name, RD_NAME_MAX) ||
            (!r.short_read && !rd_name_valid(m->name, strlen(m->name))))
            return refuse(err, errlen, "record %u: bad name", i);
        m->addr.family = (uint8_t)get_uint(&r, 1);
        if (!r.short_read && m->addr.family != 4 && m->addr.family != 6)
            return refuse(err, errlen, "record %u: bad address family %u", i, m->addr.family);
        size_t al = addr_len(&m->addr);
        if (take(&r, al)) {
            memcpy(m->addr.ip, r.p, al);
            r.p += al;
        }
        m->addr.port = (uint16_t)get_uint(&r, 2);
        m->incarnation = get_uint(&r, 8);
        m->status = (uint8_t)get_uint(&r, 1);
        if (r.short_read) return refuse(err, errlen, "record %u: truncated", i);
        if (m->status > RD_LEFT)
            return refuse(err, errlen, "record %u: bad status %u", i, m->status);
    }
    if (r.p != r.end)
        return refuse(err, errlen, "%zu bytes after the last record", (size_t)(r.end - r.p));
    head->count = (uint32_t)count;
    return (int)count;
}

int rd_snapshot_owned(const struct rd_snapshot_head *head, const char *cluster, const char *name,
                      char *err, size_t errlen)
{
    if (strcmp(head->cluster, cluster) != 0) {
        snprintf(err, errlen, "written for cluster '%s', this agent is in '%s'", head->cluster,
                 cluster);
        return RD_EINVAL;
    }
    if (strcmp(head->self, name) != 0) {
        snprintf(err, errlen, "written by member '%s', this agent is '%s'", head->self, name);
        return RD_EINVAL;
    }
    return 0;
}

/* ---------------------------------------------------------------- files */

int rd_snapshot_prepare_dir(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, RD_SNAPSHOT_DIR_MODE) == 0) {
        chmod(dir, RD_SNAPSHOT_DIR_MODE); /* whatever the umask */
        return 0;
    }
    if (errno != EEXIST) {
        snprintf(err, errlen, "cannot create state directory %s: %s", dir, strerror(errno));
        return RD_EIO;
    }
    struct stat st;
    if (stat(dir, &st) < 0) {
        snprintf(err, errlen, "cannot use state directory %s: %s", dir, strerror(errno));
        return RD_EIO;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "state directory %s is not a directory", dir);
        return RD_EINVAL;
    }
    return rd_files_check_dir("state directory", dir, &st, err, errlen);
}

/* dir/RD_SNAPSHOT_FILE and dir/RD_SNAPSHOT_FILE.tmp; false (and err) if too long. */
static bool paths(const char *dir, char path[PATH_MAX], char tmp[PATH_MAX], char *err,
                  size_t errlen)
{
    if ((size_t)snprintf(path, PATH_MAX, "%s/%s", dir, RD_SNAPSHOT_FILE) >= PATH_MAX ||
        (size_t)snprintf(tmp, PATH_MAX, "%s/%s.tmp", dir, RD_SNAPSHOT_FILE) >= PATH_MAX) {
        snprintf(err, errlen, "state directory path too long: %s", dir);
        return false;
    }
    return true;
}

int rd_snapshot_save(const char *dir, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    if (!paths(dir, path, tmp, err, errlen)) return RD_EIO;
    return rd_files_replace("snapshot", path, buf, len, err, errlen);
}

int rd_snapshot_read(const char *dir, uint8_t **buf, size_t *len, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    *buf = NULL;
    *len = 0;
    if (!paths(dir, path, tmp, err, errlen)) return RD_EIO;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(e));
        return e == ENOENT ? RD_ENOENT : RD_EIO;
    }
    struct stat st;
    int rc = 0;
    if (fstat(fd, &st) < 0) {
        snprintf(err, errlen, "cannot stat %s: %s", path, strerror(errno));
        rc = RD_EIO;
    } else if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "%s is not a regular file", path);
        rc = RD_E2BIG;
    } else if ((uint64_t)st.st_size > RD_SNAPSHOT_MAX_BYTES) {
        snprintf(err, errlen, "%s: %lld bytes, over the %zu a snapshot may have", path,
                 (long long)st.st_size, (size_t)RD_SNAPSHOT_MAX_BYTES);
        rc = RD_E2BIG;
    } else if (!(*buf = malloc(st.st_size ? (size_t)st.st_size : 1))) {
        snprintf(err, errlen, "cannot read %s: out of memory", path);
        rc = RD_ENOMEM;
    }
    /* read at most the size seen: a file that grows meanwhile is read as cut */
    while (rc == 0 && *len < (size_t)st.st_size) {
        ssize_t n = read(fd, *buf + *len, (size_t)st.st_size - *len);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
            rc = RD_EIO;
        }
        if (n <= 0) break;
        *len += (size_t)n;
    }
    close(fd);
    if (rc < 0) {
        free(*buf);
        *buf = NULL;
        *len = 0;
    }
    return rc;
}
