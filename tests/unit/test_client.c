/*
 * test_client.c — the client library (client/ringd_client.h) against a fake agent.
 *
 * The fake agent is a thread serving a Unix socket in a temporary directory: it answers
 * every RING with the reply the test set (a real ring's definition written by this test,
 * or hostile bytes), confirms SUBSCRIBE, and the test publishes ring messages to its
 * subscribers. It can hold RING replies back (a refresh that hangs), close after a reply
 * (a truncated one) and stop and start again on the same path (an agent restart).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "resp.h"
#include "ring.h"
#include "ringd_client.h"

/* ============================================================ fake agent */

#define FAKE_CONNS 32

struct fake {
    char dir[64], path[108];
    int lfd, wake[2];
    pthread_t thread;
    pthread_mutex_t mu; /* reply, subs, writes */
    char *reply;        /* what RING gets */
    size_t reply_len;
    bool close_after;        /* close a connection after its RING reply */
    atomic_int hold_ms;      /* delay each RING reply this long */
    atomic_int rings_served; /* RING requests answered */
    int conns[FAKE_CONNS];
    bool sub[FAKE_CONNS];
};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return; /* the client went away */
        p += w, n -= (size_t)w;
    }
}

static void fake_drop(struct fake *f, int i)
{
    close(f->conns[i]);
    f->conns[i] = -1;
    f->sub[i] = false;
}

/* Answers the requests in one read: the client sends whole small requests. */
static void fake_serve(struct fake *f, int i, const char *in, size_t n)
{
    for (const char *p = in; (p = memmem(p, n - (size_t)(p - in), "SUBSCRIBE\r\n", 11)); p++) {
        static const char ok[] = "*3\r\n$9\r\nsubscribe\r\n$4\r\nring\r\n:1\r\n";
        pthread_mutex_lock(&f->mu);
        write_all(f->conns[i], ok, sizeof ok - 1);
        f->sub[i] = true;
        pthread_mutex_unlock(&f->mu);
    }
    for (const char *p = in; (p = memmem(p, n - (size_t)(p - in), "$4\r\nRING\r\n", 10)); p++) {
        if (atomic_load(&f->hold_ms) > 0) sleep_ms(atomic_load(&f->hold_ms));
        atomic_fetch_add(&f->rings_served, 1); /* before the client can see the reply */
        pthread_mutex_lock(&f->mu);
        write_all(f->conns[i], f->reply, f->reply_len);
        bool drop = f->close_after;
        pthread_mutex_unlock(&f->mu);
        if (drop) {
            pthread_mutex_lock(&f->mu);
            fake_drop(f, i);
            pthread_mutex_unlock(&f->mu);
            return;
        }
    }
}

static void *fake_main(void *arg)
{
    struct fake *f = arg;
    for (;;) {
        struct pollfd p[FAKE_CONNS + 2];
        int idx[FAKE_CONNS + 2];
        size_t n = 0;
        p[n++] = (struct pollfd){.fd = f->wake[0], .events = POLLIN};
        p[n++] = (struct pollfd){.fd = f->lfd, .events = POLLIN};
        pthread_mutex_lock(&f->mu);
        for (int i = 0; i < FAKE_CONNS; i++)
            if (f->conns[i] >= 0) {
                idx[n] = i;
                p[n++] = (struct pollfd){.fd = f->conns[i], .events = POLLIN};
            }
        pthread_mutex_unlock(&f->mu);
        if (poll(p, n, -1) < 0) continue;
        if (p[0].revents) return NULL;
        if (p[1].revents) {
            int fd = accept(f->lfd, NULL, NULL);
            pthread_mutex_lock(&f->mu);
            for (int i = 0; fd >= 0 && i < FAKE_CONNS; i++)
                if (f->conns[i] < 0) {
                    f->conns[i] = fd, fd = -1;
                }
            pthread_mutex_unlock(&f->mu);
            if (fd >= 0) close(fd);
        }
        for (size_t k = 2; k < n; k++) {
            if (!p[k].revents) continue;
            char buf[4096];
            ssize_t r = recv(p[k].fd, buf, sizeof buf, 0);
            if (r <= 0) {
                pthread_mutex_lock(&f->mu);
                fake_drop(f, idx[k]);
                pthread_mutex_unlock(&f->mu);
            } else
                fake_serve(f, idx[k], buf, (size_t)r);
        }
    }
}

static void fake_set(struct fake *f, const char *reply, size_t len)
{
    pthread_mutex_lock(&f->mu);
    free(f->reply);
    f->reply = malloc(len ? len : 1);
    memcpy(f->reply, reply, len);
    f->reply_len = len;
    pthread_mutex_unlock(&f->mu);
}

/* Sends a ring message to every subscriber. */
static void fake_publish(struct fake *f)
{
    static const char msg[] = "*3\r\n$7\r\nmessage\r\n$4\r\nring\r\n$2\r\n{}\r\n";
    pthread_mutex_lock(&f->mu);
    for (int i = 0; i < FAKE_CONNS; i++)
        if (f->conns[i] >= 0 && f->sub[i]) write_all(f->conns[i], msg, sizeof msg - 1);
    pthread_mutex_unlock(&f->mu);
}

static void fake_listen(struct fake *f)
{
    f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(f->lfd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
    unlink(f->path);
    assert_int_equal(bind(f->lfd, (struct sockaddr *)&sa, sizeof sa), 0);
    assert_int_equal(listen(f->lfd, 64), 0);
    assert_int_equal(pipe(f->wake), 0);
    for (int i = 0; i < FAKE_CONNS; i++)
        f->conns[i] = -1, f->sub[i] = false;
    assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

/* Stops serving and closes every connection: the agent went away. */
static void fake_stop(struct fake *f)
{
    assert_int_equal(write(f->wake[1], "x", 1), 1);
    pthread_join(f->thread, NULL);
    for (int i = 0; i < FAKE_CONNS; i++)
        if (f->conns[i] >= 0) fake_drop(f, i);
    close(f->lfd);
    close(f->wake[0]);
    close(f->wake[1]);
    unlink(f->path);
}

static int setup(void **state)
{
    struct fake *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/rd-client-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/agent.sock", f->dir);
    pthread_mutex_init(&f->mu, NULL);
    fake_listen(f);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fake *f = *state;
    fake_stop(f);
    rmdir(f->dir);
    pthread_mutex_destroy(&f->mu);
    free(f->reply);
    free(f);
    return 0;
}

/* ============================================================ rings */

/* A ring of members "<prefix>0".."<prefix>n-1" (weights 1.0, 1.5, ... and a zone on the
 * even ones), and its RING reply; checksum_xor spoils the checksum it states. */
struct ring_def {
    struct rd_ring *ring;
    struct rd_buf reply;
};

static void ring_def_make(struct ring_def *d, const char *prefix, size_t n, uint32_t vnodes,
                          uint64_t version, uint64_t checksum_xor)
{
    char names[64][32];
    struct rd_ring_member m[64];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%s%zu", prefix, i);
        m[i] = (struct rd_ring_member){.name = names[i],
                                       .weight = RD_WEIGHT_ONE + 500 * (uint32_t)(i % 3),
                                       .zone = i % 2 ? NULL : "z1"};
    }
    assert_int_equal(rd_ring_new(m, n, vnodes, &d->ring), 0);
    rd_buf_init(&d->reply);
    struct rd_buf *b = &d->reply;
    char sum[20];
    snprintf(sum, sizeof sum, "%016" PRIx64, rd_ring_checksum(d->ring) ^ checksum_xor);
    rd_resp_write_array(b, 7);
    rd_resp_write_int(b, RD_RING_SPEC);
    rd_resp_write_bulk(b, "ringd", 5);
    rd_resp_write_int(b, vnodes);
    rd_resp_write_int(b, (int64_t)version);
    rd_resp_write_bulk(b, sum, 16);
    rd_resp_write_int(b, (int64_t)rd_ring_point_count(d->ring));
    rd_resp_write_array(b, n);
    for (size_t i = 0; i < n; i++) {
        const char *name = rd_ring_member_name(d->ring, i), *zone = rd_ring_member_zone(d->ring, i);
        rd_resp_write_array(b, 4);
        rd_resp_write_bulk(b, name, strlen(name));
        rd_resp_write_int(b, rd_ring_member_weight(d->ring, i));
        rd_resp_write_bulk(b, zone, strlen(zone));
        rd_resp_write_bulk(b, name, strlen(name));
    }
}

static void ring_def_free(struct ring_def *d)
{
    rd_ring_delete(d->ring);
    rd_buf_free(&d->reply);
}

/* The client's owner of key i equals the ring's, for `keys` keys. */
static void assert_agrees(struct ringd_client *c, const struct rd_ring *ring, int keys)
{
    for (int i = 0; i < keys; i++) {
        char key[32], got[RINGD_CLIENT_NAME_MAX + 1];
        int len = snprintf(key, sizeof key, "key:%d", i);
        int rc = ringd_client_owner(c, key, (size_t)len, got, sizeof got);
        const char *want = rd_ring_member_name(ring, (size_t)rd_ring_owner(ring, key, (size_t)len));
        assert_int_equal(rc, (int)strlen(want));
        assert_string_equal(got, want);
    }
}

/* Waits for the client to serve the ring of checksum `sum`, as long as a refresher may take
 * in the worst case the client allows: its longest backoff, then one exchange up to its
 * timeout, with a second to spare. */
static bool wait_checksum(struct ringd_client *c, uint64_t sum)
{
    int64_t limit = RINGD_CLIENT_BACKOFF_MAX_MS + RINGD_CLIENT_TIMEOUT_MS + 1000;
    for (int64_t end = now_ms() + limit; now_ms() < end; sleep_ms(2))
        if (ringd_client_checksum(c) == sum) return true;
    return false;
}

static struct ringd_client *open_ok(struct fake *f)
{
    struct ringd_client *c = NULL;
    char err[256] = "";
    int rc = ringd_client_open(f->path, &c, err, sizeof err);
    if (rc != 0) print_message("open: %d %s\n", rc, err);
    assert_int_equal(rc, 0);
    return c;
}

/* ============================================================ tests */

static void test_client_builds_the_agents_ring_and_answers_owner(void **state)
{
    struct fake *f = *state;
    struct ring_def d;
    ring_def_make(&d, "node-", 5, 64, 7, 0);
    fake_set(f, d.reply.data, d.reply.len);
    struct ringd_client *c = open_ok(f);
    assert_int_equal(ringd_client_checksum(c), rd_ring_checksum(d.ring));
    assert_agrees(c, d.ring, 10000);
    struct ringd_client_stats st;
    ringd_client_stats(c, &st);
    assert_int_equal(st.version, 7);
    assert_int_equal(st.members, 5);
    assert_int_equal(st.refreshes, 1);
    /* too small a buffer, and bad arguments */
    char small[3];
    assert_int_equal(ringd_client_owner(c, "k", 1, small, sizeof small), RINGD_CLIENT_ERANGE);
    assert_int_equal(ringd_client_owner(c, "k", 1, NULL, 10), RINGD_CLIENT_EINVAL);
    assert_int_equal(ringd_client_owner(NULL, "k", 1, small, sizeof small), RINGD_CLIENT_EINVAL);
    ringd_client_close(c);
    ring_def_free(&d);
}

static void test_client_refuses_a_wrong_checksum(void **state)
{
    struct fake *f = *state;
    struct ring_def d;
    ring_def_make(&d, "node-", 4, 32, 1, 1); /* one bit off */
    fake_set(f, d.reply.data, d.reply.len);
    struct ringd_client *c = NULL;
    char err[256] = "";
    assert_int_equal(ringd_client_open(f->path, &c, err, sizeof err), RINGD_CLIENT_ECHECKSUM);
    assert_null(c);
    assert_non_null(strstr(err, "checksum"));
    ring_def_free(&d);
    /* the right checksum but another vnodes: the points differ, so does the checksum */
    ring_def_make(&d, "node-", 4, 32, 1, 0);
    char *p = memmem(d.reply.data, d.reply.len, ":32\r\n", 5);
    assert_non_null(p);
    p[2] = '3';
    fake_set(f, d.reply.data, d.reply.len);
    assert_int_equal(ringd_client_open(f->path, &c, err, sizeof err), RINGD_CLIENT_ECHECKSUM);
    ring_def_free(&d);
    /* nobody listening */
    assert_int_equal(ringd_client_open("/nonexistent/agent.sock", &c, err, sizeof err),
                     RINGD_CLIENT_EIO);
    assert_int_equal(ringd_client_open("", &c, err, sizeof err), RINGD_CLIENT_EINVAL);
}

static void test_client_follows_ring_messages(void **state)
{
    struct fake *f = *state;
    struct ring_def a, b;
    ring_def_make(&a, "node-", 3, 64, 1, 0);
    ring_def_make(&b, "node-", 4, 64, 2, 0);
    fake_set(f, a.reply.data, a.reply.len);
    struct ringd_client *c = open_ok(f);
    assert_agrees(c, a.ring, 2000);
    for (int round = 0; round < 6; round++) {
        const struct ring_def *next = round % 2 ? &a : &b;
        fake_set(f, next->reply.data, next->reply.len);
        fake_publish(f);
        assert_true(wait_checksum(c, rd_ring_checksum(next->ring)));
        assert_agrees(c, next->ring, 2000);
    }
    struct ringd_client_stats st;
    ringd_client_stats(c, &st);
    assert_int_equal(st.connected, 1);
    assert_true(st.refreshes >= 7);
    assert_int_equal(st.failures, 0);
    ringd_client_close(c);
    ring_def_free(&a);
    ring_def_free(&b);
}

#define LIT(s) (s), (sizeof(s) - 1)

static void test_client_refuses_malformed_and_hostile_replies(void **state)
{
    struct fake *f = *state;
    static const char name65[] =
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
#define HEAD "*7\r\n:1\r\n$5\r\nringd\r\n:8\r\n:1\r\n$16\r\n0123456789abcdef\r\n:8\r\n"
    static const struct {
        const char *what, *bytes;
        size_t len;
        int want;
    } cases[] = {
        {"an integer", LIT(":5\r\n"), RINGD_CLIENT_EPROTO},
        {"nil", LIT("$-1\r\n"), RINGD_CLIENT_EPROTO},
        {"an error", LIT("-ERR unknown command 'RING'\r\n"), RINGD_CLIENT_EPROTO},
        {"not ready", LIT("-NOTREADY not joined yet\r\n"), RINGD_CLIENT_ENOTREADY},
        {"six fields", LIT("*6\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n:1\r\n"), RINGD_CLIENT_EPROTO},
        {"spec as text",
         LIT("*7\r\n$1\r\n1\r\n$5\r\nringd\r\n:8\r\n:1\r\n$16\r\n0123456789abcdef"
             "\r\n:8\r\n*0\r\n"),
         RINGD_CLIENT_EPROTO},
        {"spec 2",
         LIT("*7\r\n:2\r\n$5\r\nringd\r\n:8\r\n:1\r\n$16\r\n0123456789abcdef\r\n:8\r\n*0\r\n"),
         RINGD_CLIENT_EUNSUPPORTED},
        {"ketama with vnodes",
         LIT("*7\r\n:1\r\n$6\r\nketama\r\n:8\r\n:1\r\n$16\r\n0123456789abcdef\r\n:8\r\n"
             "*1\r\n*4\r\n$1\r\na\r\n:1000\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"ketama, wrong checksum",
         LIT("*7\r\n:1\r\n$6\r\nketama\r\n:0\r\n:1\r\n$16\r\n0123456789abcdef\r\n:100\r\n"
             "*1\r\n*4\r\n$1\r\na\r\n:1000\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_ECHECKSUM},
        {"ketama, fractional weight",
         LIT("*7\r\n:1\r\n$6\r\nketama\r\n:0\r\n:1\r\n$16\r\n0123456789abcdef\r\n:100\r\n"
             "*1\r\n*4\r\n$1\r\na\r\n:1500\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"unknown mode",
         LIT("*7\r\n:1\r\n$3\r\nfoo\r\n:8\r\n:1\r\n$16\r\n0123456789abcdef\r\n:8\r\n*0\r\n"),
         RINGD_CLIENT_EUNSUPPORTED},
        {"vnodes 0",
         LIT("*7\r\n:1\r\n$5\r\nringd\r\n:0\r\n:1\r\n$16\r\n0123456789abcdef\r\n:8\r\n*0\r\n"),
         RINGD_CLIENT_EPROTO},
        {"vnodes huge",
         LIT("*7\r\n:1\r\n$5\r\nringd\r\n:99999999999\r\n:1\r\n$16\r\n0123456789abcdef\r\n:8\r\n*"
             "0\r\n"),
         RINGD_CLIENT_EPROTO},
        {"checksum in capitals",
         LIT("*7\r\n:1\r\n$5\r\nringd\r\n:8\r\n:1\r\n$16\r\n0123456789ABCDEF\r\n:8\r\n*0\r\n"),
         RINGD_CLIENT_EPROTO},
        {"checksum short", LIT("*7\r\n:1\r\n$5\r\nringd\r\n:8\r\n:1\r\n$3\r\nabc\r\n:8\r\n*0\r\n"),
         RINGD_CLIENT_EPROTO},
        {"negative version",
         LIT("*7\r\n:1\r\n$5\r\nringd\r\n:8\r\n:-1\r\n$16\r\n0123456789abcdef\r\n:8\r\n*0\r\n"),
         RINGD_CLIENT_EPROTO},
        {"members not an array", LIT(HEAD ":3\r\n"), RINGD_CLIENT_EPROTO},
        {"member not an array", LIT(HEAD "*1\r\n$1\r\na\r\n"), RINGD_CLIENT_EPROTO},
        {"member of 3", LIT(HEAD "*1\r\n*3\r\n$1\r\na\r\n:1000\r\n$0\r\n\r\n"),
         RINGD_CLIENT_EPROTO},
        {"name an integer", LIT(HEAD "*1\r\n*4\r\n:1\r\n:1000\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"weight as text", LIT(HEAD "*1\r\n*4\r\n$1\r\na\r\n$4\r\n1000\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"weight 0", LIT(HEAD "*1\r\n*4\r\n$1\r\na\r\n:0\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"weight huge",
         LIT(HEAD "*1\r\n*4\r\n$1\r\na\r\n:9223372036854775807\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"name with a NUL", LIT(HEAD "*1\r\n*4\r\n$3\r\na\0b\r\n:1000\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"name with a space", LIT(HEAD "*1\r\n*4\r\n$3\r\na b\r\n:1000\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"empty name", LIT(HEAD "*1\r\n*4\r\n$0\r\n\r\n:1000\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"identity with a space",
         LIT(HEAD "*1\r\n*4\r\n$1\r\na\r\n:1000\r\n$0\r\n\r\n$3\r\na b\r\n"), RINGD_CLIENT_EPROTO},
        {"zone with a NUL", LIT(HEAD "*1\r\n*4\r\n$1\r\na\r\n:1000\r\n$2\r\nz\0\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"duplicate names",
         LIT(HEAD "*2\r\n*4\r\n$1\r\na\r\n:1000\r\n$0\r\n\r\n$1\r\na\r\n"
                  "*4\r\n$1\r\na\r\n:1000\r\n$0\r\n\r\n$1\r\na\r\n"),
         RINGD_CLIENT_EPROTO},
        {"a huge count",
         LIT("*7\r\n:1\r\n$5\r\nringd\r\n:8\r\n:1\r\n$16\r\n0123456789abcdef\r\n:8\r\n"
             "*999999999999\r\n"),
         RINGD_CLIENT_EPROTO},
        {"a huge bulk", LIT("*7\r\n:1\r\n$999999999999\r\n"), RINGD_CLIENT_EPROTO},
        {"nested too deep", LIT("*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*0\r\n"),
         RINGD_CLIENT_EPROTO},
        {"not RESP", LIT("HTTP/1.1 400 Bad Request\r\n\r\n"), RINGD_CLIENT_EPROTO},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        print_message("%s\n", cases[i].what);
        fake_set(f, cases[i].bytes, cases[i].len);
        struct ringd_client *c = NULL;
        char err[256] = "";
        int rc = ringd_client_open(f->path, &c, err, sizeof err);
        if (rc != cases[i].want) print_message("  got %d (%s)\n", rc, err);
        assert_int_equal(rc, cases[i].want);
        assert_null(c);
        assert_true(err[0] != '\0');
    }
    /* a name one byte too long */
    char long_name[512];
    int n = snprintf(long_name, sizeof long_name,
                     HEAD "*1\r\n*4\r\n$65\r\n%s\r\n:1000\r\n$0\r\n\r\n$1\r\na\r\n", name65);
    fake_set(f, long_name, (size_t)n);
    struct ringd_client *c = NULL;
    assert_int_equal(ringd_client_open(f->path, &c, NULL, 0), RINGD_CLIENT_EPROTO);
    /* more members than any agent has: refused before anything is built */
    struct rd_buf b;
    rd_buf_init(&b);
    rd_buf_append(&b, HEAD, sizeof HEAD - 1);
    rd_resp_write_array(&b, 16385);
    for (int k = 0; k < 16385; k++)
        rd_buf_append(&b, "*0\r\n", 4);
    fake_set(f, b.data, b.len);
    rd_buf_free(&b);
    assert_int_equal(ringd_client_open(f->path, &c, NULL, 0), RINGD_CLIENT_EPROTO);
    /* truncated: the agent closes in the middle of the reply */
    struct ring_def d;
    ring_def_make(&d, "node-", 3, 16, 1, 0);
    for (size_t cut = 0; cut < d.reply.len; cut += d.reply.len / 7 + 1) {
        pthread_mutex_lock(&f->mu);
        f->close_after = true;
        pthread_mutex_unlock(&f->mu);
        fake_set(f, d.reply.data, cut);
        assert_int_equal(ringd_client_open(f->path, &c, NULL, 0), RINGD_CLIENT_EIO);
    }
    pthread_mutex_lock(&f->mu);
    f->close_after = false;
    pthread_mutex_unlock(&f->mu);
    /* hostile replies during a refresh: counted, and the proven ring stays in use */
    fake_set(f, d.reply.data, d.reply.len);
    c = open_ok(f);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fake_set(f, cases[i].bytes, cases[i].len);
        fake_publish(f);
        sleep_ms(5);
        assert_int_equal(ringd_client_checksum(c), rd_ring_checksum(d.ring));
    }
    assert_agrees(c, d.ring, 1000);
    struct ringd_client_stats st;
    ringd_client_stats(c, &st);
    print_message("failures %" PRIu64 ", fetches %" PRIu64 "\n", st.failures, st.fetches);
    assert_true(st.failures >= 1);
    struct ring_def e;
    ring_def_make(&e, "other-", 6, 16, 9, 0);
    fake_set(f, e.reply.data, e.reply.len);
    fake_publish(f);
    /* a protocol error makes the client reconnect (backoff up to 2 s) before it fetches */
    for (int64_t end = now_ms() + 8000;
         now_ms() < end && ringd_client_checksum(c) != rd_ring_checksum(e.ring);)
        sleep_ms(10), fake_publish(f);
    assert_int_equal(ringd_client_checksum(c), rd_ring_checksum(e.ring));
    assert_agrees(c, e.ring, 1000);
    ringd_client_close(c);
    ring_def_free(&d);
    ring_def_free(&e);
#undef HEAD
}

/* owner() answers at once while the refresher waits for a RING reply that takes 1 s. */
static void test_client_owner_never_waits_for_a_refresh(void **state)
{
    struct fake *f = *state;
    struct ring_def a, b;
    ring_def_make(&a, "node-", 3, 64, 1, 0);
    ring_def_make(&b, "node-", 5, 64, 2, 0);
    fake_set(f, a.reply.data, a.reply.len);
    struct ringd_client *c = open_ok(f);
    int served = atomic_load(&f->rings_served);
    atomic_store(&f->hold_ms, 1000);
    fake_set(f, b.reply.data, b.reply.len);
    fake_publish(f);
    int64_t start = now_ms(), worst = 0;
    long calls = 0;
    while (now_ms() - start < 700) {
        char out[RINGD_CLIENT_NAME_MAX + 1];
        int64_t t0 = now_ms();
        assert_true(ringd_client_owner(c, "k", 1, out, sizeof out) > 0);
        int64_t took = now_ms() - t0;
        if (took > worst) worst = took;
        calls++;
    }
    print_message("%ld calls during a held refresh, slowest %" PRId64 " ms\n", calls, worst);
    assert_int_equal(ringd_client_checksum(c), rd_ring_checksum(a.ring)); /* not there yet */
    assert_true(worst < 200); /* scheduling noise on a loaded host, not the 1 s hold */
    atomic_store(&f->hold_ms, 0);
    assert_true(wait_checksum(c, rd_ring_checksum(b.ring)));
    assert_true(atomic_load(&f->rings_served) > served);
    ringd_client_close(c);
    ring_def_free(&a);
    ring_def_free(&b);
}

/* close() returns promptly whether the refresher is waiting for a message or a reply. */
static void test_client_closes_with_the_refresher_running(void **state)
{
    struct fake *f = *state;
    struct ring_def a;
    ring_def_make(&a, "node-", 3, 16, 1, 0);
    fake_set(f, a.reply.data, a.reply.len);
    for (int i = 0; i < 20; i++) /* right after open: subscribing, fetching or waiting */
        ringd_client_close(open_ok(f));
    struct ringd_client *c = open_ok(f);
    atomic_store(&f->hold_ms, 3000);
    fake_publish(f);
    sleep_ms(50);
    int64_t t0 = now_ms();
    ringd_client_close(c); /* the refresher is inside a fetch held for 3 s */
    assert_true(now_ms() - t0 < 1000);
    atomic_store(&f->hold_ms, 0);
    ringd_client_close(NULL);
    ring_def_free(&a);
}

/* The agent restarts: the client keeps answering, reconnects and follows the new ring. */
static void test_client_reconnects_after_the_agent_restarts(void **state)
{
    struct fake *f = *state;
    struct ring_def a, b;
    ring_def_make(&a, "node-", 3, 16, 5, 0);
    ring_def_make(&b, "node-", 2, 16, 1, 0);
    fake_set(f, a.reply.data, a.reply.len);
    struct ringd_client *c = open_ok(f);
    fake_stop(f);
    sleep_ms(100);
    assert_agrees(c, a.ring, 500); /* no agent: the last proven ring answers */
    struct ringd_client_stats st;
    ringd_client_stats(c, &st);
    assert_int_equal(st.connected, 0);
    fake_set(f, b.reply.data, b.reply.len);
    fake_listen(f);
    assert_true(wait_checksum(c, rd_ring_checksum(b.ring)));
    ringd_client_stats(c, &st);
    assert_int_equal(st.reconnects, 1);
    assert_int_equal(st.version, 1);
    assert_agrees(c, b.ring, 500);
    ringd_client_close(c);
    ring_def_free(&a);
    ring_def_free(&b);
}

/* Reader threads hammer owner() while the ring is swapped many times: every answer is a
 * member of one of the two rings and agrees with one of them (run under ASan, which sees a
 * read of a freed ring). */
#define READERS 4
struct hammer {
    struct ringd_client *c;
    const struct rd_ring *a, *b;
    atomic_bool stop;
    atomic_long calls, wrong;
};

static void *hammer_main(void *arg)
{
    struct hammer *h = arg;
    long calls = 0, wrong = 0;
    for (unsigned i = 0; !atomic_load(&h->stop); i++) {
        char key[32], got[RINGD_CLIENT_NAME_MAX + 1];
        int len = snprintf(key, sizeof key, "k%u", i % 5000);
        int rc = ringd_client_owner(h->c, key, (size_t)len, got, sizeof got);
        const char *wa = rd_ring_member_name(h->a, (size_t)rd_ring_owner(h->a, key, (size_t)len));
        const char *wb = rd_ring_member_name(h->b, (size_t)rd_ring_owner(h->b, key, (size_t)len));
        if (rc <= 0 || (strcmp(got, wa) != 0 && strcmp(got, wb) != 0)) wrong++;
        calls++;
    }
    atomic_fetch_add(&h->calls, calls);
    atomic_fetch_add(&h->wrong, wrong);
    return NULL;
}

static void test_client_readers_during_many_swaps(void **state)
{
    struct fake *f = *state;
    struct ring_def a, b;
    ring_def_make(&a, "a-", 4, 16, 1, 0);
    ring_def_make(&b, "b-", 5, 16, 2, 0);
    fake_set(f, a.reply.data, a.reply.len);
    struct hammer h = {.c = open_ok(f), .a = a.ring, .b = b.ring};
    pthread_t t[READERS];
    for (int i = 0; i < READERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, hammer_main, &h), 0);
    int swaps = 200;
    for (int i = 0; i < swaps; i++) {
        const struct ring_def *next = i % 2 ? &a : &b;
        fake_set(f, next->reply.data, next->reply.len);
        fake_publish(f);
        assert_true(wait_checksum(h.c, rd_ring_checksum(next->ring)));
    }
    atomic_store(&h.stop, true);
    for (int i = 0; i < READERS; i++)
        pthread_join(t[i], NULL);
    /* The last ring is visible before its install is counted: the refresher first waits
     * for the readers of the ring before it to leave, and on a loaded host that takes a
     * while after wait_checksum() has seen the new checksum. */
    struct ringd_client_stats st;
    ringd_client_stats(h.c, &st);
    for (int64_t end = now_ms() + 5000; st.refreshes < (uint64_t)swaps + 1 && now_ms() < end;
         sleep_ms(2))
        ringd_client_stats(h.c, &st);
    print_message("%ld lookups by %d threads over %" PRIu64 " rings, %ld wrong\n",
                  atomic_load(&h.calls), READERS, st.refreshes, atomic_load(&h.wrong));
    assert_true(st.refreshes >= (uint64_t)swaps + 1);
    assert_int_equal(atomic_load(&h.wrong), 0);
    assert_true(atomic_load(&h.calls) > 0);
    ringd_client_close(h.c);
    ring_def_free(&a);
    ring_def_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_client_builds_the_agents_ring_and_answers_owner, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_client_refuses_a_wrong_checksum, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_follows_ring_messages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_client_refuses_malformed_and_hostile_replies, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_client_owner_never_waits_for_a_refresh, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_client_closes_with_the_refresher_running, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_client_reconnects_after_the_agent_restarts, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(test_client_readers_during_many_swaps, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
