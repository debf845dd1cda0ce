/*
 * ringd_client.c — the agent's ring in the application's process (see ringd_client.h).
 *
 * Shape: two blocking connections, both owned by one refresher thread once open() returns.
 * The query connection sends RING; the subscriber connection sends SUBSCRIBE ring and only
 * reads. Every wait polls the socket together with a wake pipe, so close() interrupts the
 * refresher wherever it is and joins it. Replies are parsed with proto/resp.c's reply
 * parser, which checks every declared length against its limits before bytes arrive; the
 * RING reply is then checked field by field (types, ranges, NUL bytes, member count)
 * before lib/ring builds anything, and the built ring is used only if its checksum and
 * point count are the agent's.
 *
 * Readers and the refresher share nothing but a two-slot snapshot holder:
 *
 *     active ──► slot[active]      readers[0], readers[1]: readers inside each slot
 *
 * A reader: i = active; readers[i]++; if active is still i, use slot[i], then readers[i]--;
 * else readers[i]-- and start again. The refresher, with a new snapshot s: slot[next] = s
 * (it is empty), active = next, then waits until readers[old] is 0, then frees slot[old]
 * and empties it. Why a reader never sees a freed ring: all these accesses are sequentially
 * consistent. The refresher frees slot[old] only after it read readers[old] == 0 after its
 * store of active = next. A reader that uses slot[old] incremented readers[old] and then
 * read active == old; if its increment came before the refresher's read of readers[old],
 * the refresher sees it and waits for the decrement; if it came after, its read of active
 * comes after the store active = next and so returns next (or, after a later swap back,
 * old with slot[old] already holding the newer snapshot, stored before that swap). Readers
 * take no lock and never wait for the refresher: a reader retries only when a swap fell
 * between its two reads of `active`, at most once per swap. The refresher is the one that
 * waits, for readers already inside a lookup (tens of nanoseconds each).
 */
#include "ringd_client.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "member.h"
#include "msg.h"
#include "rd_err.h"
#include "resp.h"
#include "ring.h"

_Static_assert(RINGD_CLIENT_NAME_MAX == RD_NAME_MAX, "the public name limit is lib's");

/** Largest RING reply accepted: 16,384 members of the longest fields fit in 8 MiB. */
#define MAX_REPLY (16u * 1024u * 1024u)

/* One immutable ring and what the agent said about it. */
struct snap {
    struct rd_ring *ring;
    uint64_t checksum, version;
};

/* A socket and the bytes read from it that no reply has consumed yet. */
struct conn {
    int fd;
    char *buf;
    size_t len, cap;
};

struct ringd_client {
    /* the snapshot holder (file comment); the counters on cache lines of their own */
    _Atomic unsigned active;
    struct snap *_Atomic slot[2];
    _Alignas(64) atomic_uint_fast64_t readers0;
    _Alignas(64) atomic_uint_fast64_t readers1;
    _Alignas(64) atomic_uint_fast64_t refreshes, fetches, failures, reconnects;
    atomic_int connected;
    atomic_bool stop;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    int wake[2]; /* close() writes to wake[1]; every wait polls wake[0] */
    struct conn query, sub;
    pthread_t thread;
    bool started;
};

const char *ringd_client_strerror(int err)
{
    switch (err) {
    case 0:
        return "ok";
    case RINGD_CLIENT_EINVAL:
        return "invalid argument";
    case RINGD_CLIENT_ENOMEM:
        return "out of memory";
    case RINGD_CLIENT_EIO:
        return "connection failed, closed or timed out";
    case RINGD_CLIENT_EPROTO:
        return "malformed reply from the agent";
    case RINGD_CLIENT_ECHECKSUM:
        return "ring checksum differs from the agent's";
    case RINGD_CLIENT_EUNSUPPORTED:
        return "ring mode or spec not supported";
    case RINGD_CLIENT_ENOTREADY:
        return "agent not joined yet";
    case RINGD_CLIENT_ERANGE:
        return "buffer too small";
    default:
        return "unknown error";
    }
}

__attribute__((format(printf, 4, 5))) static int fail(int rc, char *err, size_t errlen,
                                                      const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* ============================================================ snapshots */

static atomic_uint_fast64_t *readers(struct ringd_client *c, unsigned i)
{
    return i ? &c->readers1 : &c->readers0;
}

/* Enters the current snapshot; snap_leave(c, *slot) after use. */
static const struct snap *snap_enter(struct ringd_client *c, unsigned *slot)
{
    for (;;) {
        unsigned i = atomic_load(&c->active);
        atomic_fetch_add(readers(c, i), 1);
        if (atomic_load(&c->active) == i) {
            *slot = i;
            return atomic_load(&c->slot[i]);
        }
        atomic_fetch_sub(readers(c, i), 1);
    }
}

static void snap_leave(struct ringd_client *c, unsigned slot)
{
    atomic_fetch_sub(readers(c, slot), 1);
}

static void snap_free(struct snap *s)
{
    if (!s) return;
    rd_ring_delete(s->ring);
    free(s);
}

/* The refresher's swap (file comment). Only one thread ever calls it at a time: open()
 * before the refresher starts, then the refresher. */
static void snap_install(struct ringd_client *c, struct snap *s)
{
    unsigned old = atomic_load(&c->active), next = old ^ 1u;
    atomic_store(&c->slot[next], s);
    atomic_store(&c->active, next);
    for (unsigned spins = 0; atomic_load(readers(c, old)) != 0; spins++)
        if (spins > 64) sched_yield();
    struct snap *gone = atomic_exchange(&c->slot[old], NULL);
    snap_free(gone);
    atomic_fetch_add(&c->refreshes, 1);
}

int ringd_client_owner(struct ringd_client *c, const void *key, size_t len, char *buf,
                       size_t buflen)
{
    if (!c || !buf || buflen == 0 || (!key && len > 0)) return RINGD_CLIENT_EINVAL;
    unsigned slot;
    const struct snap *s = snap_enter(c, &slot);
    int idx = rd_ring_owner(s->ring, key, len);
    int rc = 0;
    if (idx < 0)
        buf[0] = '\0';
    else {
        const char *name = rd_ring_member_name(s->ring, (size_t)idx);
        size_t n = strlen(name);
        if (n + 1 > buflen)
            rc = RINGD_CLIENT_ERANGE;
        else {
            memcpy(buf, name, n + 1);
            rc = (int)n;
        }
    }
    snap_leave(c, slot);
    return rc;
}

uint64_t ringd_client_checksum(struct ringd_client *c)
{
    unsigned slot;
    const struct snap *s = snap_enter(c, &slot);
    uint64_t sum = s->checksum;
    snap_leave(c, slot);
    return sum;
}

void ringd_client_stats(struct ringd_client *c, struct ringd_client_stats *out)
{
    unsigned slot;
    const struct snap *s = snap_enter(c, &slot);
    *out = (struct ringd_client_stats){
        .checksum = s->checksum,
        .version = s->version,
        .members = rd_ring_member_count(s->ring),
    };
    snap_leave(c, slot);
    out->refreshes = atomic_load(&c->refreshes);
    out->fetches = atomic_load(&c->fetches);
    out->failures = atomic_load(&c->failures);
    out->reconnects = atomic_load(&c->reconnects);
    out->connected = atomic_load(&c->connected);
}

/* ============================================================ blocking I/O */

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits until fd is ready for `events`, the deadline passes (-1: none) or close() wakes us.
 * 0 when ready, RINGD_CLIENT_EIO on timeout, stop or a poll failure. */
static int wait_fd(struct ringd_client *c, int fd, short events, int64_t deadline)
{
    for (;;) {
        if (atomic_load(&c->stop)) return RINGD_CLIENT_EIO;
        struct pollfd p[2] = {{.fd = c->wake[0], .events = POLLIN}, {.fd = fd, .events = events}};
        int timeout = -1;
        if (deadline >= 0) {
            int64_t left = deadline - now_ms();
            if (left <= 0) return RINGD_CLIENT_EIO;
            timeout = left > 60000 ? 60000 : (int)left;
        }
        int n = poll(p, fd >= 0 ? 2 : 1, timeout);
        if (n < 0 && errno != EINTR) return RINGD_CLIENT_EIO;
        if (n <= 0) continue;
        if (p[0].revents) return RINGD_CLIENT_EIO; /* close() */
        if (p[1].revents) return 0;
    }
}

/* Sleeps ms, or less if close() wakes us. */
static void nap(struct ringd_client *c, int ms)
{
    (void)wait_fd(c, -1, 0, now_ms() + ms);
}

static void conn_close(struct conn *k)
{
    if (k->fd >= 0) close(k->fd);
    k->fd = -1;
    k->len = 0;
}

static void conn_free(struct conn *k)
{
    conn_close(k);
    free(k->buf);
    k->buf = NULL;
    k->cap = 0;
}

static int conn_open(struct ringd_client *c, struct conn *k, char *err, size_t errlen)
{
    conn_close(k);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) return fail(RINGD_CLIENT_EIO, err, errlen, "socket: %s", strerror(errno));
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, c->path, sizeof sa.sun_path);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        /* a Unix socket connects at once or says why; EAGAIN: the backlog is full */
        int e = errno;
        close(fd);
        return fail(RINGD_CLIENT_EIO, err, errlen, "connect %s: %s", c->path, strerror(e));
    }
    k->fd = fd;
    k->len = 0;
    return 0;
}

static int conn_send(struct ringd_client *c, struct conn *k, const char *data, size_t len,
                     char *err, size_t errlen)
{
    int64_t deadline = now_ms() + RINGD_CLIENT_TIMEOUT_MS;
    while (len > 0) {
        ssize_t n = send(k->fd, data, len, MSG_NOSIGNAL);
        if (n > 0) {
            data += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return fail(RINGD_CLIENT_EIO, err, errlen, "send: %s", strerror(errno));
        if (wait_fd(c, k->fd, POLLOUT, deadline) < 0)
            return fail(RINGD_CLIENT_EIO, err, errlen, "send: timed out or closed");
    }
    return 0;
}

/*
 * Reads one whole reply into *out (free it with rd_resp_reply_free). deadline -1: wait as
 * long as it takes (the subscriber). Reads everything the socket holds before parsing
 * again, since the parser re-scans a partial reply from its start.
 */
static int conn_reply(struct ringd_client *c, struct conn *k, int64_t deadline,
                      struct rd_resp_reply **out, char *err, size_t errlen)
{
    for (;;) {
        if (k->len > 0) {
            size_t used;
            const char *why = NULL;
            int rc = rd_resp_reply_parse(k->buf, k->len, out, &used, &why);
            if (rc == 0) {
                memmove(k->buf, k->buf + used, k->len - used);
                k->len -= used;
                return 0;
            }
            if (rc == RD_ENOMEM) return fail(RINGD_CLIENT_ENOMEM, err, errlen, "out of memory");
            if (rc != RD_EAGAIN)
                return fail(RINGD_CLIENT_EPROTO, err, errlen, "malformed reply: %s",
                            why ? why : rd_strerror(rc));
        }
        bool got = false;
        for (;;) {
            if (k->cap - k->len < 4096) {
                if (k->cap >= MAX_REPLY)
                    return fail(RINGD_CLIENT_EPROTO, err, errlen, "reply over %u bytes", MAX_REPLY);
                size_t cap = k->cap ? k->cap * 2 : 16384;
                char *b = realloc(k->buf, cap);
                if (!b) return fail(RINGD_CLIENT_ENOMEM, err, errlen, "out of memory");
                k->buf = b, k->cap = cap;
            }
            ssize_t n = recv(k->fd, k->buf + k->len, k->cap - k->len, 0);
            if (n > 0) {
                k->len += (size_t)n;
                got = true;
                continue;
            }
            if (n == 0)
                return fail(RINGD_CLIENT_EIO, err, errlen, "connection closed by the agent");
            if (errno == EINTR) continue;
            if (errno != EAGAIN)
                return fail(RINGD_CLIENT_EIO, err, errlen, "recv: %s", strerror(errno));
            if (got) break;
            if (wait_fd(c, k->fd, POLLIN, deadline) < 0)
                return fail(RINGD_CLIENT_EIO, err, errlen, "no reply: timed out or closed");
        }
    }
}

/* ============================================================ RING */

static bool is_bulk(const struct rd_resp_reply *r, size_t max)
{
    return r->type == RD_RESP_BULK && r->len <= max && !memchr(r->str, '\0', r->len);
}

static bool is_int(const struct rd_resp_reply *r, int64_t lo, int64_t hi)
{
    return r->type == RD_RESP_INTEGER && r->integer >= lo && r->integer <= hi;
}

/* Parses 16 lowercase hex digits. */
static bool parse_checksum(const struct rd_resp_reply *r, uint64_t *out)
{
    if (r->type != RD_RESP_BULK || r->len != 16) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < 16; i++) {
        char ch = r->str[i];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
        if (d < 0) return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

/* The one place a ring is built from a mode: ketama arrives with rd_ring_new_ketama(). */
static int build_ring(enum rd_ring_mode mode, const struct rd_ring_member *m, size_t n,
                      uint32_t vnodes, struct rd_ring **out, char *err, size_t errlen)
{
    int rc;
    switch (mode) {
    case RD_RING_MODE_RINGD:
        rc = rd_ring_new(m, n, vnodes, out);
        break;
    case RD_RING_MODE_KETAMA:
        rc = rd_ring_new_ketama(m, n, out);
        break;
    default:
        return fail(RINGD_CLIENT_EUNSUPPORTED, err, errlen, "unknown ring mode");
    }
    if (rc == RD_ENOMEM) return fail(RINGD_CLIENT_ENOMEM, err, errlen, "out of memory");
    if (rc < 0)
        return fail(RINGD_CLIENT_EPROTO, err, errlen, "the ring's members do not build a ring: %s",
                    rd_strerror(rc));
    return 0;
}

/*
 * Checks a RING reply (API: [spec, mode, vnodes, version, checksum, points, members]) and
 * builds its ring. With `have` non-NULL and the same version and checksum, *out is NULL:
 * nothing changed, nothing built.
 */
static int ring_from_reply(const struct rd_resp_reply *r, const struct snap *have,
                           struct snap **out, char *err, size_t errlen)
{
    *out = NULL;
    if (r->type == RD_RESP_ERROR) {
        if (strncmp(r->str, "NOTREADY", 8) == 0)
            return fail(RINGD_CLIENT_ENOTREADY, err, errlen, "agent: %s", r->str);
        return fail(RINGD_CLIENT_EPROTO, err, errlen, "agent refused RING: %.200s", r->str);
    }
    if (r->type != RD_RESP_ARRAY || r->nelem != 7)
        return fail(RINGD_CLIENT_EPROTO, err, errlen, "RING reply is not an array of 7");
    struct rd_resp_reply **e = r->elem;
    if (e[0]->type != RD_RESP_INTEGER)
        return fail(RINGD_CLIENT_EPROTO, err, errlen, "RING: spec is not an integer");
    if (e[0]->integer != RD_RING_SPEC)
        return fail(RINGD_CLIENT_EUNSUPPORTED, err, errlen,
                    "RING: ring spec %" PRId64 ", this library builds spec %d", e[0]->integer,
                    RD_RING_SPEC);
    enum rd_ring_mode mode;
    if (!is_bulk(e[1], 16)) return fail(RINGD_CLIENT_EPROTO, err, errlen, "RING: bad mode");
    if (strcmp(e[1]->str, "ringd") == 0)
        mode = RD_RING_MODE_RINGD;
    else if (strcmp(e[1]->str, "ketama") == 0)
        mode = RD_RING_MODE_KETAMA;
    else
        return fail(RINGD_CLIENT_EUNSUPPORTED, err, errlen, "RING: unknown mode '%s'", e[1]->str);
    uint64_t sum;
    int64_t vnodes_min = 1, vnodes_max = RD_RING_VNODES_MAX; /* a ketama ring has none: 0 */
    if (mode == RD_RING_MODE_KETAMA) vnodes_min = vnodes_max = 0;
    if (!is_int(e[2], vnodes_min, vnodes_max) || !is_int(e[3], 0, INT64_MAX) ||
        !parse_checksum(e[4], &sum) || !is_int(e[5], 0, RD_RING_MAX_POINTS) ||
        e[6]->type != RD_RESP_ARRAY)
        return fail(RINGD_CLIENT_EPROTO, err, errlen,
                    "RING: vnodes, version, checksum, points or members malformed");
    uint64_t version = (uint64_t)e[3]->integer;
    if (have && have->version == version && have->checksum == sum) return 0;
    const struct rd_resp_reply *ms = e[6];
    if (ms->nelem > RD_MAX_MEMBERS)
        return fail(RINGD_CLIENT_EPROTO, err, errlen, "RING: %zu members, at most %d", ms->nelem,
                    RD_MAX_MEMBERS);
    struct rd_ring_member *m = calloc(ms->nelem ? ms->nelem : 1, sizeof *m);
    if (!m) return fail(RINGD_CLIENT_ENOMEM, err, errlen, "out of memory");
    for (size_t i = 0; i < ms->nelem; i++) {
        const struct rd_resp_reply *x = ms->elem[i];
        if (x->type != RD_RESP_ARRAY || x->nelem != 4 || !is_bulk(x->elem[0], RD_NAME_MAX) ||
            !is_int(x->elem[1], 1, RD_WEIGHT_MAX) || !is_bulk(x->elem[2], RD_ZONE_MAX) ||
            !is_bulk(x->elem[3], RD_RING_IDENTITY_MAX)) {
            free(m);
            return fail(RINGD_CLIENT_EPROTO, err, errlen, "RING: member %zu malformed", i);
        }
        m[i] = (struct rd_ring_member){
            .name = x->elem[0]->str,
            .weight = (uint32_t)x->elem[1]->integer,
            .zone = x->elem[2]->len ? x->elem[2]->str : NULL,
            .identity = x->elem[3]->str,
        };
    }
    struct rd_ring *ring;
    int rc = build_ring(mode, m, ms->nelem, (uint32_t)e[2]->integer, &ring, err, errlen);
    free(m);
    if (rc < 0) return rc;
    if (rd_ring_checksum(ring) != sum || rd_ring_point_count(ring) != (size_t)e[5]->integer) {
        rc = fail(RINGD_CLIENT_ECHECKSUM, err, errlen,
                  "RING: built checksum %016" PRIx64 " with %zu points, the agent's %016" PRIx64
                  " with %" PRId64,
                  rd_ring_checksum(ring), rd_ring_point_count(ring), sum, e[5]->integer);
        rd_ring_delete(ring);
        return rc;
    }
    struct snap *s = malloc(sizeof *s);
    if (!s) {
        rd_ring_delete(ring);
        return fail(RINGD_CLIENT_ENOMEM, err, errlen, "out of memory");
    }
    *s = (struct snap){.ring = ring, .checksum = sum, .version = version};
    *out = s;
    return 0;
}

/* Sends RING on the query connection and installs what it gives, if it changed. */
static int fetch(struct ringd_client *c, char *err, size_t errlen)
{
    static const char req[] = "*1\r\n$4\r\nRING\r\n";
    int rc = conn_send(c, &c->query, req, sizeof req - 1, err, errlen);
    if (rc < 0) return rc;
    struct rd_resp_reply *r;
    rc = conn_reply(c, &c->query, now_ms() + RINGD_CLIENT_TIMEOUT_MS, &r, err, errlen);
    if (rc < 0) return rc;
    struct snap *s;
    unsigned active = atomic_load(&c->active); /* only this thread swaps: no reader protocol */
    rc = ring_from_reply(r, atomic_load(&c->slot[active]), &s, err, errlen);
    rd_resp_reply_free(r);
    atomic_fetch_add(&c->fetches, 1);
    if (rc < 0) {
        if (rc != RINGD_CLIENT_ENOTREADY) atomic_fetch_add(&c->failures, 1);
        return rc;
    }
    if (s) snap_install(c, s);
    return 0;
}

/* ============================================================ the refresher */

static bool is_word(const struct rd_resp_reply *r, const char *w)
{
    return r->type == RD_RESP_BULK && strcmp(r->str, w) == 0;
}

/* Connects the subscriber and reads its confirmation ["subscribe", "ring", 1]. */
static int subscribe(struct ringd_client *c)
{
    static const char req[] = "*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nring\r\n";
    int rc = conn_open(c, &c->sub, NULL, 0);
    if (rc == 0) rc = conn_send(c, &c->sub, req, sizeof req - 1, NULL, 0);
    struct rd_resp_reply *r = NULL;
    if (rc == 0) rc = conn_reply(c, &c->sub, now_ms() + RINGD_CLIENT_TIMEOUT_MS, &r, NULL, 0);
    if (rc == 0 && !(r->type == RD_RESP_ARRAY && r->nelem == 3 && is_word(r->elem[0], "subscribe")))
        rc = RINGD_CLIENT_EPROTO;
    rd_resp_reply_free(r);
    return rc;
}

/* Waits for a ring message, then takes every further one already here: one RING after a
 * burst. 0, or an error when the connection broke or sent something else. */
static int next_messages(struct ringd_client *c)
{
    int64_t deadline = -1;
    for (int got = 0;; got++) {
        if (got > 0 && c->sub.len == 0) {
            struct pollfd p = {.fd = c->sub.fd, .events = POLLIN};
            if (poll(&p, 1, 0) <= 0) return 0;
            deadline = now_ms() + RINGD_CLIENT_TIMEOUT_MS; /* a message has begun */
        }
        struct rd_resp_reply *r;
        int rc = conn_reply(c, &c->sub, deadline, &r, NULL, 0);
        if (rc < 0) return rc;
        bool ok = r->type == RD_RESP_ARRAY && r->nelem == 3 && is_word(r->elem[0], "message");
        rd_resp_reply_free(r);
        if (!ok) return RINGD_CLIENT_EPROTO;
    }
}

static void *refresher(void *arg)
{
    struct ringd_client *c = arg;
    int backoff = RINGD_CLIENT_BACKOFF_MIN_MS;
    bool lost = false;
    while (!atomic_load(&c->stop)) {
        /* subscribe first, then fetch: no change falls between the RING and the stream */
        int rc = subscribe(c);
        if (rc == 0 && c->query.fd < 0) rc = conn_open(c, &c->query, NULL, 0);
        if (rc == 0) rc = fetch(c, NULL, 0);
        if (rc == 0) {
            if (lost) atomic_fetch_add(&c->reconnects, 1);
            lost = false;
            atomic_store(&c->connected, 1);
            backoff = RINGD_CLIENT_BACKOFF_MIN_MS;
            while (rc == 0 && !atomic_load(&c->stop)) {
                rc = next_messages(c);
                if (rc == 0) rc = fetch(c, NULL, 0);
            }
        }
        atomic_store(&c->connected, 0);
        conn_close(&c->sub);
        conn_close(&c->query);
        lost = true;
        if (atomic_load(&c->stop)) break;
        nap(c, backoff);
        backoff =
            backoff * 2 > RINGD_CLIENT_BACKOFF_MAX_MS ? RINGD_CLIENT_BACKOFF_MAX_MS : backoff * 2;
    }
    return NULL;
}

/* ============================================================ open, close */

void ringd_client_close(struct ringd_client *c)
{
    if (!c) return;
    atomic_store(&c->stop, true);
    if (c->started) {
        char b = 1;
        ssize_t n;
        do
            n = write(c->wake[1], &b, 1);
        while (n < 0 && errno == EINTR);
        pthread_join(c->thread, NULL);
    }
    conn_free(&c->query);
    conn_free(&c->sub);
    if (c->wake[0] >= 0) close(c->wake[0]);
    if (c->wake[1] >= 0) close(c->wake[1]);
    snap_free(atomic_load(&c->slot[0]));
    snap_free(atomic_load(&c->slot[1]));
    free(c);
}

int ringd_client_open(const char *socket_path, struct ringd_client **out, char *err, size_t errlen)
{
    if (!out) return fail(RINGD_CLIENT_EINVAL, err, errlen, "no place for the client");
    *out = NULL;
    if (!socket_path || !socket_path[0])
        return fail(RINGD_CLIENT_EINVAL, err, errlen, "no socket path");
    struct ringd_client *c = calloc(1, sizeof *c);
    if (!c) return fail(RINGD_CLIENT_ENOMEM, err, errlen, "out of memory");
    c->wake[0] = c->wake[1] = c->query.fd = c->sub.fd = -1;
    if (strlen(socket_path) >= sizeof c->path) {
        ringd_client_close(c);
        return fail(RINGD_CLIENT_EINVAL, err, errlen, "socket path longer than %zu bytes",
                    sizeof c->path - 1);
    }
    strcpy(c->path, socket_path);
    if (pipe2(c->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
        int e = errno;
        ringd_client_close(c);
        return fail(RINGD_CLIENT_EIO, err, errlen, "pipe: %s", strerror(e));
    }
    /* The first ring: an empty placeholder in slot 0 lets fetch() compare and install
     * through the one code path; it is freed by the swap. */
    struct snap *empty = calloc(1, sizeof *empty);
    int rc = empty ? rd_ring_new(NULL, 0, 1, &empty->ring) : RD_ENOMEM;
    if (rc < 0) {
        free(empty);
        ringd_client_close(c);
        return fail(RINGD_CLIENT_ENOMEM, err, errlen, "out of memory");
    }
    empty->version = UINT64_MAX; /* never the agent's: the first RING is always installed */
    atomic_store(&c->slot[0], empty);
    rc = conn_open(c, &c->query, err, errlen);
    if (rc == 0) rc = fetch(c, err, errlen);
    if (rc == 0 && pthread_create(&c->thread, NULL, refresher, c) != 0)
        rc = fail(RINGD_CLIENT_ENOMEM, err, errlen, "cannot start the refresher thread");
    if (rc < 0) {
        ringd_client_close(c);
        return rc;
    }
    c->started = true;
    *out = c;
    return 0;
}
