/*
 * test_query.c — the query server (agent/query.c) against a fake host, on a real libuv
 * loop and a real Unix socket.
 *
 * The test fills in a struct rd_query_host of its own: the server sees a host whose ring,
 * member table, INFO numbers, JOIN and LEAVE the test controls, and no symbol of the agent
 * is overridden. Server and client share one thread: the client socket is non-blocking
 * and the test pumps the loop (UV_RUN_NOWAIT) while it waits for bytes. That reaches what the
 * real-process test cannot: publishing from inside a request (JOIN), a watcher cut off at its
 * backlog, LEAVE only after its +OK is written, closing the server with connections in every state
 * (ASan checks nothing leaks).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/un.h>
#include <unistd.h>

#include "assign.h"
#include "dns.h"
#include "query.h"
#include "rd_err.h"
#include "resp.h"
#include "ring.h"
#include "swim.h"

/* ------------------------------------------------------------------ the fake host */

struct fake_agent {
    struct rd_ring *ring;
    struct rd_swim *swim;
    struct rd_query *q;
    int leaves;
    int joins;
    char joined[64];
    struct rd_addr seed; /* of the last JOIN */
    int key_changes;     /* KEYRING INSTALL/USE/REMOVE that reached the host */
    enum rd_query_key_op key_op;
    char key_arg[160];
    int changes; /* TAGS, WEIGHT, FORCE-LEAVE the host was asked for */
    enum rd_query_change_op change_op;
    char change_arg[300], change_arg2[300];
    uid_t key_uid;
    bool not_ready;  /* the host's ready() says false */
    bool join_defer; /* JOIN's exchange outcome comes later, from the test */
};

static const struct rd_ring *fake_ring(void *ctx)
{
    struct fake_agent *a = ctx;
    return a->ring;
}

static const struct rd_swim *fake_swim(void *ctx)
{
    struct fake_agent *a = ctx;
    return a->swim;
}

static void fake_status(void *ctx, struct rd_query_status *out)
{
    *out = (struct rd_query_status){
        .uptime_s = 42,
        .storm = 3,
        .ring_version = 3,
        .ring_params = {1, 0, 64},
        .ring_params_source = "adopted",
        .weight = 2500,
        .max_weight = 4000,
        .members_weight_capped = 18,
        .packets_malformed = 5,
        .packets_refused = 24,
        .syncs_malformed = 6,
        .syncs_oversize = 7,
        .syncs_refused_source = 8,
        .syncs_refused_full = 9,
        .syncs_timed_out_header = 10,
        .syncs_timed_out_frame = 11,
        .syncs_refused_ring = 23,
        .packets_dropped = {.nokey = 12, .plain = 13, .sealed = 14, .plain_accepted = 18},
        .syncs_dropped = {.nokey = 15, .plain = 16, .sealed = 17, .plain_accepted = 19},
        .verify_incoming = true,
        .verify_outgoing = false,
        .keyring_keys = 2,
        .keyring_primary = "00112233aabbccdd",
        .hooks = {.events_handled = 20,
                  .events_dropped = 21,
                  .handlers_killed = 22,
                  .handlers_failed = 23},
        .version = "9.8.7",
        .pid = 4321,
        .config_file = "/etc/ringd/ringd.conf",
        .profile = "wan"};
}

/* Two keys; a change echoes a fingerprint, or fails with the host's words for "bad". */
static size_t fake_keyring_list(void *ctx, char fps[RD_KEYRING_MAX][RD_KEY_FINGERPRINT_LEN + 1])
{
    snprintf(fps[0], RD_KEY_FINGERPRINT_LEN + 1, "00112233aabbccdd");
    snprintf(fps[1], RD_KEY_FINGERPRINT_LEN + 1, "ffeeddccbbaa9988");
    return 2;
}

static int fake_keyring_change(void *ctx, enum rd_query_key_op op, const char *arg,
                               const struct rd_query_peer *peer,
                               char fp[RD_KEY_FINGERPRINT_LEN + 1], char *err, size_t errlen)
{
    struct fake_agent *a = ctx;
    a->key_changes++;
    a->key_op = op;
    a->key_uid = peer->uid;
    snprintf(a->key_arg, sizeof a->key_arg, "%s", arg);
    if (strcmp(arg, "bad") == 0) {
        snprintf(err, errlen, "no key with fingerprint bad in the keyring");
        return RD_ENOENT;
    }
    snprintf(fp, RD_KEY_FINGERPRINT_LEN + 1, "ffeeddccbbaa9988");
    return 0;
}

static int fake_change(void *ctx, enum rd_query_change_op op, const char *arg, const char *arg2,
                       const struct rd_query_peer *peer, char *err, size_t errlen)
{
    struct fake_agent *a = ctx;
    a->changes++;
    a->change_op = op;
    snprintf(a->change_arg, sizeof a->change_arg, "%s", arg);
    snprintf(a->change_arg2, sizeof a->change_arg2, "%s", arg2 ? arg2 : "(null)");
    if (strcmp(arg, "nope") == 0) {
        snprintf(err, errlen, "no tag 'nope'");
        return RD_ENOENT;
    }
    return 0;
}

/* Publishes an event from inside the request, as the real agent's flush() does. */
static void fake_join(void *ctx, const char *hostport, const struct rd_addr *seed)
{
    struct fake_agent *a = ctx;
    a->joins++;
    a->seed = *seed;
    snprintf(a->joined, sizeof a->joined, "%s", hostport);
    const char *ev[] = {"member", "seed", "alive", hostport, "1"};
    rd_query_publish(a->q, ev, 5);
    /* the exchange: over at once unless deferred; port 9 refuses, as a dead seed does */
    if (!a->join_defer)
        rd_query_join_done(a->q, seed, seed->port == 9 ? "connection refused" : NULL);
}

static bool fake_ready(void *ctx)
{
    struct fake_agent *a = ctx;
    return !a->not_ready;
}

/* METRICS: the server's own counts as the host would read them, to check both at once. */
static const char *fake_metrics(void *ctx, size_t *len)
{
    struct fake_agent *a = ctx;
    struct rd_query_stats st;
    size_t n = rd_query_stats(a->q, &st);
    static char text[512];
    size_t used = 0;
    for (size_t i = 0; i < n; i++)
        if (st.counts[i])
            used += (size_t)snprintf(text + used, sizeof text - used, "%s=%" PRIu64 " ",
                                     st.names[i], st.counts[i]);
    used += (size_t)snprintf(text + used, sizeof text - used, "connections=%zu\n", st.connections);
    *len = used;
    return text;
}

static void fake_leave(void *ctx)
{
    struct fake_agent *a = ctx;
    a->leaves++;
}

/* ------------------------------------------------------------------ fixture */

struct fixture {
    uv_loop_t loop;
    struct fake_agent agent;
    struct rd_query_host host;
    struct rd_dns *dns; /* asks 127.0.0.1:1: every name is refused at once, no traffic out */
    char dir[32];
    char path[64];
};

static struct rd_ring *ring_of(const char *const *names, size_t n)
{
    struct rd_ring_member m[8] = {0};
    for (size_t i = 0; i < n; i++)
        m[i] = (struct rd_ring_member){.name = names[i], .weight = RD_WEIGHT_ONE};
    struct rd_ring *r;
    assert_int_equal(rd_ring_new(m, n, 64, &r), 0);
    return r;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    assert_int_equal(uv_loop_init(&f->loop), 0);
    snprintf(f->dir, sizeof f->dir, "/tmp/rd-query.XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/q.sock", f->dir);
    const char *names[] = {"m1", "m2", "m3"};
    f->agent.ring = ring_of(names, 3);
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_member self = {.name = "m1",
                             .weight = RD_WEIGHT_ONE,
                             .incarnation = 7,
                             .addr = {.family = 4, .port = 7946, .ip = {127, 0, 0, 1}}};
    f->agent.swim = rd_swim_new(&cfg, &self, 1, 0);
    assert_non_null(f->agent.swim);
    f->host = (struct rd_query_host){.ctx = &f->agent,
                                     .ring = fake_ring,
                                     .swim = fake_swim,
                                     .status = fake_status,
                                     .join = fake_join,
                                     .leave = fake_leave,
                                     .keyring_list = fake_keyring_list,
                                     .keyring_change = fake_keyring_change,
                                     .ready = fake_ready,
                                     .change = fake_change,
                                     .metrics = fake_metrics};
    char err[256];
    if (rd_dns_start(&f->loop, "127.0.0.1:1", &f->dns, err, sizeof err) != 0)
        fail_msg("rd_dns_start: %s", err);
    f->host.dns = f->dns;
    int rc = rd_query_start(&f->loop, &f->host, f->path, 0600, NULL, &f->agent.q, err, sizeof err);
    if (rc != 0) fail_msg("rd_query_start: %s", err);
    *state = f;
    return 0;
}

static void run_until_idle(uv_loop_t *loop)
{
    for (int i = 0; i < 100 && uv_loop_alive(loop); i++)
        uv_run(loop, UV_RUN_NOWAIT);
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    rd_query_close(f->agent.q);
    rd_dns_close(f->dns);
    run_until_idle(&f->loop);
    assert_false(uv_loop_alive(&f->loop)); /* every handle closed: the server freed itself */
    assert_int_equal(uv_loop_close(&f->loop), 0);
    struct stat st;
    assert_int_equal(lstat(f->path, &st), -1); /* the socket file is gone */
    rd_ring_delete(f->agent.ring);
    rd_swim_delete(f->agent.swim);
    unlink(f->path);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* ------------------------------------------------------------------ client helpers */

static int client(struct fixture *f)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
    return fd;
}

static void say(int fd, const char *bytes)
{
    size_t len = strlen(bytes);
    assert_int_equal(send(fd, bytes, len, MSG_NOSIGNAL), (ssize_t)len);
}

struct got {
    char buf[1 << 16];
    size_t len;
    bool eof;
};

/* Pumps the loop and reads until `want` bytes arrived, EOF, or ~2 s passed. */
static void hear(struct fixture *f, int fd, struct got *g, size_t want)
{
    for (int i = 0; i < 2000 && g->len < want && !g->eof; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        ssize_t n = recv(fd, g->buf + g->len, sizeof g->buf - 1 - g->len, 0);
        if (n > 0)
            g->len += (size_t)n;
        else if (n == 0)
            g->eof = true;
        else if (errno == EAGAIN)
            usleep(1000);
        else
            g->eof = true; /* ECONNRESET */
    }
    g->buf[g->len] = '\0';
}

/* Pumps and reads until the bytes end with `suffix` (or EOF, or ~2 s). */
static void hear_until(struct fixture *f, int fd, struct got *g, const char *suffix)
{
    size_t n = strlen(suffix);
    for (int i = 0; i < 2000 && !g->eof; i++) {
        if (g->len >= n && memcmp(g->buf + g->len - n, suffix, n) == 0) break;
        hear(f, fd, g, g->len + 1);
    }
}

static void expect_reply(struct fixture *f, int fd, const char *request, const char *reply)
{
    struct got g = {.len = 0};
    say(fd, request);
    hear(f, fd, &g, strlen(reply));
    assert_string_equal(g.buf, reply);
}

/* What connections_max should be under the current descriptor limit. */
static size_t fd_cap(void)
{
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= RD_QUERY_MAX_CONNS + RD_QUERY_FD_RESERVE)
        return RD_QUERY_MAX_CONNS;
    return (size_t)rl.rlim_cur - RD_QUERY_FD_RESERVE;
}

/* A client whose credentials (SO_PEERCRED) are uid/gid: connected under that effective
 * identity, which needs root. The socket and its directory are opened up for it. */
static int client_as(struct fixture *f, uid_t uid, gid_t gid)
{
    assert_int_equal(chmod(f->dir, 0711), 0);
    assert_int_equal(chmod(f->path, 0666), 0);
    assert_int_equal(setegid(gid), 0);
    assert_int_equal(seteuid(uid), 0);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", f->path);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    assert_int_equal(seteuid(0), 0);
    assert_int_equal(setegid(0), 0);
    assert_int_equal(rc, 0);
    return fd;
}

/* ------------------------------------------------------------------ tests */

/* ASSIGN's answer to a c it cannot read. */
#define ASSIGN_BAD_C "-ERR c must be a number above 1 and at most 1000, with at most 3 decimals\r\n"

static void test_query_answers_a_pipelined_batch_in_order(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    char owner[64], second[64];
    uint32_t two[2];
    int idx = rd_ring_owner(f->agent.ring, "k", 1);
    rd_ring_owners(f->agent.ring, "k", 1, 2, two);
    snprintf(owner, sizeof owner, "$2\r\n%s\r\n", rd_ring_member_name(f->agent.ring, (size_t)idx));
    snprintf(second, sizeof second, "$2\r\n%s\r\n", rd_ring_member_name(f->agent.ring, two[1]));
    char want[512];
    snprintf(want, sizeof want, "+PONG\r\n%s*2\r\n%s%s*2\r\n%s%s$2\r\nhi\r\n", owner, owner, owner,
             owner, second);
    expect_reply(
        f, fd,
        "PING\r\nowner k\r\nMOWNER k k\r\n*3\r\n$6\r\nOWNERS\r\n$1\r\nk\r\n$1\r\n2\r\nPING hi\r\n",
        want);
    close(fd);
}

static void test_query_empty_ring_answers_nil(void **state)
{
    struct fixture *f = *state;
    rd_ring_delete(f->agent.ring);
    f->agent.ring = ring_of(NULL, 0);
    int fd = client(f);
    expect_reply(f, fd, "OWNER k\r\nMOWNER a b\r\nOWNERS k 3\r\nASSIGN 1.25 a b a\r\n",
                 "$-1\r\n*2\r\n$-1\r\n$-1\r\n*0\r\n*3\r\n$-1\r\n$-1\r\n$-1\r\n");
    close(fd);
}

static void test_query_owners_of_zero_is_an_empty_array(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    int idx = rd_ring_owner(f->agent.ring, "k", 1);
    char want[64];
    snprintf(want, sizeof want, "*0\r\n*1\r\n$2\r\n%s\r\n+PONG\r\n",
             rd_ring_member_name(f->agent.ring, (size_t)idx));
    expect_reply(f, fd, "OWNERS k 0\r\nOWNERS k 1\r\nPING\r\n", want);
    close(fd);
    /* on an empty ring too */
    rd_ring_delete(f->agent.ring);
    f->agent.ring = ring_of(NULL, 0);
    fd = client(f);
    expect_reply(f, fd, "OWNERS k 0\r\nPING\r\n", "*0\r\n+PONG\r\n");
    close(fd);
}

/* A ketama ring can give a member no point: OWNERS answers the members that have some. */
static void test_query_owners_skips_a_ketama_member_without_points(void **state)
{
    struct fixture *f = *state;
    rd_ring_delete(f->agent.ring);
    struct rd_ring_member m[] = {
        {"n1", 100 * RD_WEIGHT_ONE, NULL, NULL},
        {"n2", 1 * RD_WEIGHT_ONE, NULL, NULL},
    };
    assert_int_equal(rd_ring_new_ketama(m, 2, &f->agent.ring), 0);
    assert_int_equal(rd_ring_member_points(f->agent.ring, 1), 0);
    int fd = client(f);
    expect_reply(f, fd, "OWNERS k 2\r\nPING\r\n", "*1\r\n$2\r\nn1\r\n+PONG\r\n");
    close(fd);
}

static void test_query_errors_keep_the_connection(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    expect_reply(f, fd, "NOPE\r\nOWNER\r\nOWNERS k 00\r\nOWNERS k 1000001\r\nJOIN bad\r\nPING\r\n",
                 "-ERR unknown command 'NOPE'\r\n"
                 "-ERR wrong number of arguments for 'owner'\r\n"
                 "-ERR n must be an integer from 0 to 1000000\r\n"
                 "-ERR n must be an integer from 0 to 1000000\r\n"
                 "-ERR cannot join bad: expected HOST:PORT\r\n"
                 "+PONG\r\n");
    close(fd);
}

/* ASSIGN c key...: as a multibulk request of `n` keys "key:<i>" (i from `first`). */
static char *assign_request(const char *c, size_t first, size_t n)
{
    size_t cap = 64 + n * 40;
    char *req = malloc(cap);
    assert_non_null(req);
    size_t len =
        (size_t)snprintf(req, cap, "*%zu\r\n$6\r\nASSIGN\r\n$%zu\r\n%s\r\n", n + 2, strlen(c), c);
    for (size_t i = 0; i < n; i++) {
        char key[24];
        int klen = snprintf(key, sizeof key, "key:%zu", first + i);
        len += (size_t)snprintf(req + len, cap - len, "$%d\r\n%s\r\n", klen, key);
    }
    return req;
}

/* ASSIGN answers what lib/assign.h computes for the same set, in the order sent, up to the
 * key limit; one key more, a bad c or too few words are -ERR on a connection that goes on. */
static void test_query_assign_answers_the_set_and_refuses_bad_input(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    static const size_t counts[] = {1, 7, 300, RD_QUERY_ASSIGN_KEYS_MAX};
    for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++) {
        size_t n = counts[t];
        char *req = assign_request("1.1", 5, n);
        struct rd_assign_key *keys = calloc(n, sizeof *keys);
        char(*text)[24] = calloc(n, sizeof *text);
        int *out = calloc(n, sizeof *out);
        for (size_t i = 0; i < n; i++)
            keys[i] =
                (struct rd_assign_key){text[i], (size_t)snprintf(text[i], 24, "key:%zu", 5 + i)};
        assert_int_equal(rd_assign(f->agent.ring, 1100, keys, n, out), 0);
        char *want = malloc(32 + n * 16);
        size_t len = (size_t)sprintf(want, "*%zu\r\n", n);
        for (size_t i = 0; i < n; i++)
            len += (size_t)sprintf(want + len, "$2\r\n%s\r\n",
                                   rd_ring_member_name(f->agent.ring, (size_t)out[i]));
        print_message("%zu keys\n", n);
        expect_reply(f, fd, req, want);
        free(req);
        free(keys);
        free(text);
        free(out);
        free(want);
    }
    char *over = assign_request("1.1", 0, RD_QUERY_ASSIGN_KEYS_MAX + 1);
    expect_reply(f, fd, over, "-ERR too many keys (at most 4000)\r\n");
    free(over);
    static const char *const bad_c[] = {"1",   "0.5", "abc", "1.1x",   "99999999999999999999999",
                                        "1.0", "1e3", "-2",  "1.0001", "1000.001",
                                        ""};
    for (size_t i = 0; i < sizeof bad_c / sizeof bad_c[0]; i++) {
        char *req = assign_request(bad_c[i], 0, 2);
        print_message("c '%s'\n", bad_c[i]);
        expect_reply(f, fd, req, ASSIGN_BAD_C);
        free(req);
    }
    expect_reply(f, fd, "ASSIGN 2\r\nASSIGN\r\nPING\r\n",
                 "-ERR wrong number of arguments for 'assign'\r\n"
                 "-ERR wrong number of arguments for 'assign'\r\n+PONG\r\n");
    close(fd);
}

static void test_query_members_lists_fields_in_pairs(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    expect_reply(f, fd, "MEMBERS\r\n",
                 "*1\r\n*14\r\n$4\r\nname\r\n$2\r\nm1\r\n$4\r\naddr\r\n$14\r\n127.0.0.1:7946\r\n"
                 "$6\r\nstatus\r\n$5\r\nalive\r\n$11\r\nincarnation\r\n$1\r\n7\r\n"
                 "$6\r\nweight\r\n$5\r\n1.000\r\n$4\r\nzone\r\n$0\r\n\r\n$4\r\ntags\r\n$0\r\n\r\n");
    close(fd);
}

/* METRICS answers the host's text as one bulk string, and every request is counted under
 * its command (unknown ones together), the METRICS being answered included. */
static void test_query_metrics_returns_the_host_text_and_counts_commands(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    expect_reply(f, fd, "PING\r\nping\r\nNOSUCH\r\nOWNER k\r\nMETRICS\r\n",
                 "+PONG\r\n+PONG\r\n-ERR unknown command 'NOSUCH'\r\n$2\r\nm2\r\n"
                 "$49\r\nOWNER=1 PING=2 METRICS=1 unknown=1 connections=1\n\r\n");
    expect_reply(f, fd, "METRICS extra\r\n", "-ERR wrong number of arguments for 'metrics'\r\n");
    close(fd);
}

/* The whole INFO text of the fixture, its six sections in order. */
static int info_all(struct fixture *f, char *text, size_t cap, size_t conns)
{
    const struct rd_ring *ring = f->agent.ring;
    return snprintf(
        text, cap,
        "# Server\r\nversion:9.8.7\r\npid:4321\r\nuptime_s:42\r\n"
        "config_file:/etc/ringd/ringd.conf\r\nprofile:wan\r\n"
        "\r\n# Clients\r\n"
        "connections:%zu\r\nconnections_max:%zu\r\nwatchers:1\r\n"
        "connections_rejected:0\r\nconnections_cut_off:0\r\n"
        "\r\n# Membership\r\n"
        "name:m1\r\naddr:127.0.0.1:7946\r\nstatus:alive\r\nincarnation:7\r\n"
        "members_alive:1\r\nmembers_suspect:0\r\nmembers_dead:0\r\nmembers_left:0\r\n"
        "members_checksum:%016" PRIx64 "\r\nhealth:%u\r\nstorm:3\r\njoined:%d\r\nready:1\r\n"
        "incarnations_refused:0\r\nmembers_refused_full:0\r\nnamesakes_ignored:0\r\n"
        "late_ticks:0\r\n"
        "\r\n# Ring\r\n"
        "ring_version:3\r\nring_checksum:%016" PRIx64 "\r\nring_members:3\r\n"
        "ring_points:%zu\r\nring_spec:1\r\nring_mode:ringd\r\nvnodes:64\r\nring_params:"
        "adopted\r\nweight:2.500\r\nmax_weight:4.000\r\nring_scaled:0\r\n"
        "members_weight_capped:18\r\n"
        "\r\n# Gossip\r\n"
        "packets_in:0\r\npackets_out:0\r\npackets_malformed:5\r\n"
        "packets_dropped_nokey:12\r\npackets_dropped_plain:13\r\n"
        "packets_dropped_sealed:14\r\npackets_accepted_plain:18\r\npackets_refused:24\r\n"
        "probes:0\r\nprobes_failed:0\r\nprobes_refused:0\r\nprobe_resends:0\r\nhelpers_refused:"
        "0\r\nrefutes:0\r\n"
        "replies_trimmed:0\r\n"
        "ping_reqs_refused:0\r\n"
        "syncs_in:0\r\nsyncs_out:0\r\n"
        "syncs_failed:0\r\nsyncs_malformed:6\r\nsyncs_oversize:7\r\n"
        "syncs_refused_source:8\r\nsyncs_refused_full:9\r\nsyncs_timed_out_header:10\r\n"
        "syncs_timed_out_frame:11\r\nsyncs_refused_ring:23\r\nsyncs_dropped_nokey:15\r\n"
        "syncs_dropped_plain:16\r\nsyncs_dropped_sealed:17\r\nsyncs_accepted_plain:19\r\n"
        "gossip_verify_incoming:on\r\ngossip_verify_outgoing:off\r\n"
        "keyring_keys:2\r\nkeyring_primary:00112233aabbccdd\r\n"
        "\r\n# Stats\r\n"
        "events_handled:20\r\nevents_dropped:21\r\nhandlers_killed:22\r\nhandlers_failed:23\r\n",
        conns, fd_cap(), rd_swim_checksum(f->agent.swim), rd_swim_health(f->agent.swim),
        rd_swim_joined(f->agent.swim), rd_ring_checksum(ring), rd_ring_point_count(ring));
}

/* The part of `text` from "# Name" up to the blank line before the next section. */
static void info_part(const char *text, const char *name, char *out, size_t cap)
{
    const char *at = strstr(text, name);
    assert_non_null(at);
    const char *end = strstr(at, "\r\n\r\n");
    size_t len = end ? (size_t)(end - at) + 2 : strlen(at);
    assert_true(len < cap);
    memcpy(out, at, len);
    out[len] = '\0';
}

static void test_query_info_formats_every_field_in_order(void **state)
{
    struct fixture *f = *state;
    int fd = client(f), sub = client(f);
    expect_reply(f, sub, "SUBSCRIBE members\r\n",
                 "*3\r\n$9\r\nsubscribe\r\n$7\r\nmembers\r\n:1\r\n");
    char text[3000], want[3200];
    int n = info_all(f, text, sizeof text, 2);
    assert_true(n > 0 && (size_t)n < sizeof text);
    /* INFO, INFO all, default, everything: every section, in order, as Redis lays it out */
    const char *whole[] = {"INFO\r\n", "INFO all\r\n", "INFO DEFAULT\r\n", "info everything\r\n",
                           "INFO server all\r\n"};
    snprintf(want, sizeof want, "$%d\r\n%s\r\n", n, text);
    for (size_t i = 0; i < sizeof whole / sizeof whole[0]; i++)
        expect_reply(f, fd, whole[i], want);
    /* one section, several (in INFO's order whatever the order asked, each once) */
    char part[1200], part2[1200], both[2500];
    info_part(text, "# Server", part, sizeof part);
    snprintf(want, sizeof want, "$%zu\r\n%s\r\n", strlen(part), part);
    expect_reply(f, fd, "INFO server\r\n", want);
    info_part(text, "# Ring", part2, sizeof part2);
    info_part(text, "# Clients", part, sizeof part);
    snprintf(both, sizeof both, "%s\r\n%s", part, part2);
    snprintf(want, sizeof want, "$%zu\r\n%s\r\n", strlen(both), both);
    expect_reply(f, fd, "INFO ring Clients ring nope\r\n", want);
    /* no section by that name: empty, as Redis */
    expect_reply(f, fd, "INFO nope\r\nINFO membership2\r\n", "$0\r\n\r\n$0\r\n\r\n");
    /* RESP3: verbatim text, empty too */
    info_part(text, "# Stats", part, sizeof part);
    snprintf(want, sizeof want, "=%zu\r\ntxt:%s\r\n=4\r\ntxt:\r\n", strlen(part) + 4, part);
    struct got g = {.len = 0};
    say(fd, "HELLO 3\r\n");
    hear_until(f, fd, &g, "modules\r\n*0\r\n");
    expect_reply(f, fd, "INFO stats\r\nINFO nope\r\n", want);
    close(fd);
    close(sub);
}

static void test_query_protocol_error_is_answered_then_closed(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    struct got g = {.len = 0};
    say(fd, "PING\r\n*1\r\n$-5\r\nPING\r\n");
    hear(f, fd, &g, sizeof g.buf);
    assert_string_equal(g.buf, "+PONG\r\n-ERR Protocol error: negative length\r\n");
    assert_true(g.eof);
    close(fd);
}

static void test_query_join_event_published_mid_request_precedes_the_reply(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    struct got g = {.len = 0};
    say(fd, "HELLO 3\r\nSUBSCRIBE members\r\n"); /* RESP3: JOIN runs while subscribed */
    hear_until(f, fd, &g, "\r\nmembers\r\n:1\r\n");
    g.len = 0;
    say(fd, "JOIN 10.0.0.1:7946\r\nPING\r\n");
    hear_until(f, fd, &g, "+OK\r\n+PONG\r\n");
    assert_memory_equal(g.buf, ">3\r\n$7\r\nmessage\r\n$7\r\nmembers\r\n$", 31);
    assert_non_null(strstr(g.buf,
                           "\"type\":\"member\",\"member\":\"seed\",\"status\":\"alive\","
                           "\"addr\":\"10.0.0.1:7946\",\"incarnation\":1}\r\n+OK\r\n+PONG\r\n"));
    assert_int_equal(f->agent.joins, 1);
    assert_string_equal(f->agent.joined, "10.0.0.1:7946");
    close(fd);
}

/* Until the host is ready, placement is refused with -NOTREADY on a connection that stays
 * usable; everything else answers; INFO says ready:0. Ready, the same requests answer. */
static void test_query_not_ready_refuses_placement_only(void **state)
{
    struct fixture *f = *state;
    f->agent.not_ready = true;
    int fd = client(f);
    expect_reply(f, fd,
                 "OWNER k\r\nOWNERS k 2\r\nMOWNER a b\r\nOWNER\r\nASSIGN 2 a b\r\n"
                 "ASSIGN 1 a\r\nPING\r\n",
                 "-NOTREADY not joined yet\r\n-NOTREADY not joined yet\r\n"
                 "-NOTREADY not joined yet\r\n-ERR wrong number of arguments for 'owner'\r\n"
                 "-NOTREADY not joined yet\r\n" ASSIGN_BAD_C "+PONG\r\n");
    struct got g = {.len = 0};
    say(fd, "INFO membership\r\n");
    hear_until(f, fd, &g, "\r\n\r\n");
    assert_non_null(strstr(g.buf, "\r\nready:0\r\nincarnations_refused:"));
    f->agent.not_ready = false;
    int idx = rd_ring_owner(f->agent.ring, "k", 1);
    char want[64];
    snprintf(want, sizeof want, "$2\r\n%s\r\n", rd_ring_member_name(f->agent.ring, (size_t)idx));
    expect_reply(f, fd, "OWNER k\r\n", want);
    close(fd);
}

/* JOIN answers only once the host reports the exchange: meanwhile its connection is
 * blocked (what follows waits) and other clients are served; a failure is -ERR with the
 * host's reason, and the connection goes on. */
static void test_query_join_waits_for_the_exchange(void **state)
{
    struct fixture *f = *state;
    f->agent.join_defer = true;
    int fd = client(f), other = client(f);
    say(fd, "JOIN 10.0.0.3:7946\r\nPING\r\n");
    for (int i = 0; i < 2000 && f->agent.joins == 0; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        usleep(500);
    }
    assert_int_equal(f->agent.joins, 1);
    expect_reply(f, other, "PING\r\n", "+PONG\r\n"); /* served while the JOIN waits */
    char byte;
    for (int i = 0; i < 20; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(recv(fd, &byte, 1, MSG_DONTWAIT), -1); /* no answer yet, nor the PING's */
    assert_int_equal(errno, EAGAIN);
    struct rd_addr elsewhere = f->agent.seed;
    elsewhere.port++;
    rd_query_join_done(f->agent.q, &elsewhere, NULL); /* another exchange: not ours */
    rd_query_join_done(f->agent.q, &f->agent.seed, "connection refused");
    expect_reply(f, fd, "", "-ERR cannot join 10.0.0.3:7946: connection refused\r\n+PONG\r\n");
    f->agent.join_defer = false;
    expect_reply(f, fd, "JOIN 10.0.0.4:9\r\nJOIN 10.0.0.4:7946\r\n",
                 "-ERR cannot join 10.0.0.4:9: connection refused\r\n+OK\r\n");
    close(fd);
    close(other);
}

/* MULTI ... EXEC as Redis: queued, then one array of the replies; a command refused while
 * queueing dooms the transaction; nesting, EXEC and DISCARD alone, blocking commands. */
static void test_query_multi_exec(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    expect_reply(f, fd, "MULTI\r\nPING\r\nECHO hi\r\nEXEC\r\n",
                 "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n+PONG\r\n$2\r\nhi\r\n");
    expect_reply(f, fd, "EXEC\r\nDISCARD\r\n",
                 "-ERR EXEC without MULTI\r\n-ERR DISCARD without MULTI\r\n");
    expect_reply(f, fd, "MULTI\r\nMULTI\r\nNOPE\r\nPING\r\nEXEC\r\n",
                 "+OK\r\n-ERR MULTI calls can not be nested\r\n-ERR unknown command 'NOPE'\r\n"
                 "+QUEUED\r\n-EXECABORT Transaction discarded because of previous errors.\r\n");
    expect_reply(f, fd, "MULTI\r\nECHO\r\nEXEC\r\n",
                 "+OK\r\n-ERR wrong number of arguments for 'echo' command\r\n"
                 "-EXECABORT Transaction discarded because of previous errors.\r\n");
    expect_reply(f, fd, "MULTI\r\nSUBSCRIBE ring\r\nJOIN 10.0.0.4:9\r\nDISCARD\r\nPING\r\n",
                 "+OK\r\n-ERR Command not allowed inside a transaction\r\n"
                 "-ERR Command not allowed inside a transaction\r\n+OK\r\n+PONG\r\n");
    expect_reply(f, fd, "MULTI\r\nPING\r\nRESET\r\nEXEC\r\n",
                 "+OK\r\n+QUEUED\r\n+RESET\r\n-ERR EXEC without MULTI\r\n");
    expect_reply(f, fd, "MULTI\r\nEXEC\r\n", "+OK\r\n*0\r\n");
    close(fd);
}

/* WATCH is Redis's optimistic lock: refused whatever its arguments, and nothing streams. */
static void test_query_watch_is_refused_and_streams_nothing(void **state)
{
    struct fixture *f = *state;
    int w = client(f);
    const char *refused = "-ERR WATCH is not supported: an owner has no version to watch; "
                          "SUBSCRIBE members ring for events\r\n";
    char want[512];
    snprintf(want, sizeof want, "%s%s", refused, refused);
    expect_reply(f, w, "WATCH\r\nWATCH k1 k2\r\n", want);
    const char *ev[] = {"ring", "2", "00000000000000ff", "192", "0.5", "m1", "m2", "0.5"};
    rd_query_publish(f->agent.q, ev, 8);
    expect_reply(f, w, "PING\r\n", "+PONG\r\n"); /* and nothing else */
    close(w);
}

static void test_query_leave_happens_after_its_reply_is_written(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    say(fd, "LEAVE\r\n");
    assert_int_equal(f->agent.leaves, 0);
    struct got g = {.len = 0};
    hear(f, fd, &g, 5);
    assert_string_equal(g.buf, "+OK\r\n");
    run_until_idle(&f->loop);
    assert_int_equal(f->agent.leaves, 1);
    close(fd);
}

static void test_query_leave_still_happens_when_the_client_vanishes(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    say(fd, "LEAVE\r\n");
    close(fd);
    for (int i = 0; i < 50; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(f->agent.leaves, 1);
}

static void test_query_close_with_connections_in_every_state(void **state)
{
    struct fixture *f = *state;
    int idle = client(f), partial = client(f), watcher = client(f), unread = client(f);
    say(partial, "*2\r\n$5\r\nOWNER\r\n$3\r\nab");
    expect_reply(f, watcher, "SUBSCRIBE members\r\n",
                 "*3\r\n$9\r\nsubscribe\r\n$7\r\nmembers\r\n:1\r\n");
    for (int i = 0; i < 200; i++)
        say(unread, "MEMBERS\r\nINFO\r\n");
    for (int i = 0; i < 20; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    const char *ev[] = {"member", "m9", "dead", "127.0.0.1:1", "3"};
    rd_query_publish(f->agent.q, ev, 5);
    /* teardown closes the server and checks that every handle went and the file is gone */
    close(idle);
    close(partial);
    close(watcher);
    close(unread);
}

static void test_query_refuses_a_live_socket_and_a_plain_file_replaces_a_stale_one(void **state)
{
    struct fixture *f = *state;
    char err[256];
    struct rd_query *q2 = NULL;
    uv_loop_t loop2;
    assert_int_equal(uv_loop_init(&loop2), 0);

    /* live */
    assert_int_equal(rd_query_start(&loop2, &f->host, f->path, 0600, NULL, &q2, err, sizeof err),
                     RD_EEXIST);
    assert_null(q2);
    char want[256];
    snprintf(want, sizeof want, "another agent is running on %s", f->path);
    assert_string_equal(err, want);

    /* a plain file is the user's: refused and kept */
    char file[64];
    snprintf(file, sizeof file, "%s/plain", f->dir);
    int fd = open(file, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(rd_query_start(&loop2, &f->host, file, 0600, NULL, &q2, err, sizeof err),
                     RD_EEXIST);
    assert_non_null(strstr(err, "exists and is not a socket"));
    struct stat st;
    assert_int_equal(lstat(file, &st), 0);
    unlink(file);

    /* stale: a socket file nobody listens on */
    char stale[64];
    snprintf(stale, sizeof stale, "%s/stale.sock", f->dir);
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", stale);
    assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof sa), 0);
    close(s);
    assert_int_equal(rd_query_start(&loop2, &f->host, stale, 0640, NULL, &q2, err, sizeof err), 0);
    assert_int_equal(lstat(stale, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0640);
    rd_query_close(q2);
    run_until_idle(&loop2);
    assert_int_equal(uv_loop_close(&loop2), 0);
    assert_int_equal(lstat(stale, &st), -1);
}

static void test_query_socket_has_the_mode_asked_for(void **state)
{
    struct fixture *f = *state;
    struct stat st;
    assert_int_equal(lstat(f->path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);
}

/* The decision, one row per rule: who may JOIN and LEAVE. */
static void test_query_may_change_table(void **state)
{
    static const uid_t listed[] = {1001, 1002};
    static const gid_t in_admins[] = {10, 500, 20}, elsewhere[] = {10, 20};
    const struct rd_query_admins none = {.self = 1000};
    const struct rd_query_admins group = {
        .self = 1000, .has_group = true, .gid = 500, .members = listed, .nmembers = 2};
    const struct rd_query_admins as_root = {.self = 0, .has_group = true, .gid = 500};
    struct row {
        const struct rd_query_admins *admins;
        struct rd_query_peer peer;
        bool may;
    } rows[] = {
        {&none, {.uid = 0, .gid = 0}, true},          /* root */
        {&none, {.uid = 1000, .gid = 1000}, true},    /* the agent's user */
        {&none, {.uid = 1001, .gid = 500}, false},    /* no group configured */
        {&none, {.uid = 65534, .gid = 65534}, false}, /* a stranger */
        {&group, {.uid = 2000, .gid = 500}, true},    /* primary gid */
        {&group, {.uid = 1002, .gid = 100}, true},    /* listed member */
        {&group, {.uid = 2000, .gid = 100, .groups = in_admins, .ngroups = 3}, true},
        {&group, {.uid = 2000, .gid = 100, .groups = elsewhere, .ngroups = 2}, false},
        {&group, {.uid = 2000, .gid = 100, .groups = in_admins, .ngroups = 1}, false},
        {&group, {.uid = 2000, .gid = 100}, false},   /* groups not read */
        {&group, {.uid = 1000, .gid = 100}, true},    /* self with a group */
        {&as_root, {.uid = 1000, .gid = 100}, false}, /* an agent run by root */
        {&as_root, {.uid = 0, .gid = 100}, true},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        print_message("row %zu\n", i);
        assert_int_equal(rd_query_may_change(rows[i].admins, &rows[i].peer), rows[i].may);
    }
}

/* A stranger reads, is refused JOIN and LEAVE with -NOPERM, and keeps its connection. */
static void test_query_stranger_gets_noperm_and_keeps_reading(void **state)
{
    struct fixture *f = *state;
    if (geteuid() != 0) skip();
    int fd = client_as(f, 65534, 65534);
    expect_reply(f, fd, "PING\r\nJOIN 10.0.0.1:7946\r\nLEAVE\r\nPING again\r\n",
                 "+PONG\r\n"
                 "-NOPERM this command needs root or the agent's user\r\n"
                 "-NOPERM this command needs root or the agent's user\r\n"
                 "$5\r\nagain\r\n");
    for (int i = 0; i < 20; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(f->agent.joins, 0);
    assert_int_equal(f->agent.leaves, 0);
    close(fd);
    fd = client(f); /* root, as the test runs */
    expect_reply(f, fd, "JOIN 10.0.0.2:7946\r\n", "+OK\r\n");
    assert_int_equal(f->agent.joins, 1);
    close(fd);
}

/* A JOIN resolves without blocking (c-ares on the loop; a numeric host is answered on the
 * next turn); what was pipelined behind it waits and follows in order. */
static void test_query_join_resolves_then_answers_in_order(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    struct got g = {.len = 0};
    say(fd, "JOIN 127.0.0.1:7000\r\nPING a\r\nJOIN no-such-host.invalid:1\r\nPING b\r\n");
    hear_until(f, fd, &g, "$1\r\nb\r\n");
    const char *want_head = "+OK\r\n$1\r\na\r\n-ERR cannot join no-such-host.invalid:1: "
                            "cannot resolve no-such-host.invalid: ";
    if (strncmp(g.buf, want_head, strlen(want_head)) != 0) fail_msg("got '%s'", g.buf);
    assert_int_equal(f->agent.joins, 1);
    assert_string_equal(f->agent.joined, "127.0.0.1:7000");
    assert_int_equal(f->agent.seed.port, 7000);
    assert_int_equal(f->agent.seed.family, 4);
    assert_memory_equal(f->agent.seed.ip, ((uint8_t[]){127, 0, 0, 1}), 4);
    close(fd);
}

/* The server closes while a JOIN is resolving: the result is dropped, nothing joins, and
 * nothing touches the freed connection (ASan). The name server here reads and never
 * answers, so the question is in flight when the server closes. */
static void test_query_close_while_join_resolves(void **state)
{
    struct fixture *f = *state;
    int quiet = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sin;
    assert_int_equal(bind(quiet, (struct sockaddr *)&sin, sizeof sin), 0);
    assert_int_equal(getsockname(quiet, (struct sockaddr *)&sin, &sl), 0);
    char servers[64], err[256];
    snprintf(servers, sizeof servers, "127.0.0.1:%d", ntohs(sin.sin_port));
    struct rd_dns *slow;
    assert_int_equal(rd_dns_start(&f->loop, servers, &slow, err, sizeof err), 0);
    rd_query_close(f->agent.q);
    f->host.dns = slow;
    assert_int_equal(
        rd_query_start(&f->loop, &f->host, f->path, 0600, NULL, &f->agent.q, err, sizeof err), 0);
    int fd = client(f);
    say(fd, "JOIN seed.example:7000\r\n");
    char buf[512];
    ssize_t got = -1;
    for (int i = 0; i < 2000 && got < 0; i++) {
        uv_run(&f->loop, UV_RUN_NOWAIT);
        got = recv(quiet, buf, sizeof buf, MSG_DONTWAIT);
        if (got < 0) usleep(500);
    }
    assert_true(got > 0); /* the question reached the server */
    rd_query_close(f->agent.q);
    f->agent.q = NULL;
    for (int i = 0; i < 50; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    rd_dns_close(slow); /* the pending question ends here, abandoned */
    for (int i = 0; i < 50; i++)
        uv_run(&f->loop, UV_RUN_NOWAIT);
    assert_int_equal(f->agent.joins, 0);
    close(fd);
    close(quiet);
    /* teardown closes a server again */
    f->host.dns = f->dns;
    assert_int_equal(
        rd_query_start(&f->loop, &f->host, f->path, 0600, NULL, &f->agent.q, err, sizeof err), 0);
}

/* Under a low descriptor limit the cap leaves RD_QUERY_FD_RESERVE: one client more is
 * accepted and closed, and INFO says both. */
static void test_query_connection_cap_follows_the_fd_limit(void **state)
{
    struct fixture *f = *state;
    struct rlimit was, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    low = was;
    low.rlim_cur = 200;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    char path[64], err[256];
    snprintf(path, sizeof path, "%s/low.sock", f->dir);
    uv_loop_t loop2;
    assert_int_equal(uv_loop_init(&loop2), 0);
    struct rd_query *q2;
    int rc = rd_query_start(&loop2, &f->host, path, 0600, NULL, &q2, err, sizeof err);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
    assert_int_equal(rc, 0);
    static struct fixture f2; /* for client(): only its path is used */
    snprintf(f2.path, sizeof f2.path, "%s", path);
    int fds[200 - RD_QUERY_FD_RESERVE + 1];
    size_t n = sizeof fds / sizeof fds[0];
    for (size_t i = 0; i < n; i++) {
        fds[i] = client(&f2);
        for (int k = 0; k < 3; k++)
            uv_run(&loop2, UV_RUN_NOWAIT);
    }
    struct got g = {.len = 0};
    for (int i = 0; i < 200 && !g.eof; i++) {
        uv_run(&loop2, UV_RUN_NOWAIT);
        ssize_t r = recv(fds[n - 1], g.buf, sizeof g.buf, 0);
        if (r == 0 || (r < 0 && errno != EAGAIN)) g.eof = true;
        usleep(1000);
    }
    assert_true(g.eof); /* the one over the cap */
    g = (struct got){.len = 0};
    say(fds[0], "INFO clients\r\n");
    for (int i = 0; i < 2000 && !strstr(g.buf, "connections_cut_off"); i++) {
        uv_run(&loop2, UV_RUN_NOWAIT);
        ssize_t r = recv(fds[0], g.buf + g.len, sizeof g.buf - 1 - g.len, 0);
        if (r > 0) g.len += (size_t)r;
        g.buf[g.len] = '\0';
        usleep(500);
    }
    assert_non_null(strstr(g.buf, "\r\nconnections:136\r\nconnections_max:136\r\n"));
    assert_non_null(strstr(g.buf, "\r\nconnections_rejected:1\r\n"));
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
    rd_query_close(q2);
    run_until_idle(&loop2);
    assert_int_equal(uv_loop_close(&loop2), 0);
}

/* A directory others may write to is refused; one with the sticky bit is fine; a missing
 * one is created 0750. */
static void test_query_socket_directory_must_be_safe(void **state)
{
    struct fixture *f = *state;
    char dir[64], path[96], err[256];
    struct rd_query *q2 = NULL;
    uv_loop_t loop2;
    assert_int_equal(uv_loop_init(&loop2), 0);
    snprintf(dir, sizeof dir, "%s/d", f->dir);
    snprintf(path, sizeof path, "%s/x.sock", dir);

    assert_int_equal(rd_query_start(&loop2, &f->host, path, 0600, NULL, &q2, err, sizeof err), 0);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0750);
    rd_query_close(q2);
    run_until_idle(&loop2);

    static const struct {
        mode_t mode;
        bool ok;
    } modes[] = {{0777, false}, {0770, false}, {0757, false}, {01777, true}, {0755, true}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        assert_int_equal(chmod(dir, modes[i].mode), 0);
        q2 = NULL;
        int rc = rd_query_start(&loop2, &f->host, path, 0600, NULL, &q2, err, sizeof err);
        print_message("mode %04o: %d %s\n", (unsigned)modes[i].mode, rc, rc ? err : "");
        if (modes[i].ok) {
            assert_int_equal(rc, 0);
            rd_query_close(q2);
            run_until_idle(&loop2);
            continue;
        }
        assert_int_equal(rc, RD_EINVAL);
        assert_null(q2);
        char want[160];
        snprintf(want, sizeof want,
                 "socket directory %s is writable by others (mode %04o, no sticky bit): "
                 "refusing it",
                 dir, (unsigned)modes[i].mode);
        assert_string_equal(err, want);
    }
    if (geteuid() == 0) { /* owned by another user */
        assert_int_equal(chmod(dir, 0755), 0);
        assert_int_equal(chown(dir, 65534, 65534), 0);
        assert_int_equal(rd_query_start(&loop2, &f->host, path, 0600, NULL, &q2, err, sizeof err),
                         RD_EINVAL);
        assert_non_null(strstr(err, "is owned by uid 65534, neither root nor this agent's user"));
    }
    run_until_idle(&loop2);
    assert_int_equal(uv_loop_close(&loop2), 0);
    rmdir(dir);
}

/* An admin group that does not exist stops the start; a numeric gid need not exist. */
static void test_query_admin_group_is_resolved_at_start(void **state)
{
    struct fixture *f = *state;
    char path[96], err[256];
    struct rd_query *q2 = NULL;
    uv_loop_t loop2;
    assert_int_equal(uv_loop_init(&loop2), 0);
    snprintf(path, sizeof path, "%s/g.sock", f->dir);
    assert_int_equal(
        rd_query_start(&loop2, &f->host, path, 0600, "no-such-group-rd", &q2, err, sizeof err),
        RD_EINVAL);
    assert_string_equal(err, "admin group no-such-group-rd does not exist");
    assert_int_equal(rd_query_start(&loop2, &f->host, path, 0600, "4242424", &q2, err, sizeof err),
                     0);
    rd_query_close(q2);
    run_until_idle(&loop2);
    assert_int_equal(rd_query_start(&loop2, &f->host, path, 0600, "root", &q2, err, sizeof err), 0);
    rd_query_close(q2);
    run_until_idle(&loop2);
    assert_int_equal(uv_loop_close(&loop2), 0);
}

/* KEYRING: LIST as [fingerprint, role] pairs, changes answered with the key's fingerprint
 * or the host's reason, every malformed request refused before the host sees it. */
static void test_query_keyring_commands(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    expect_reply(f, fd, "KEYRING LIST\r\n",
                 "*2\r\n*2\r\n$16\r\n00112233aabbccdd\r\n$7\r\nprimary\r\n"
                 "*2\r\n$16\r\nffeeddccbbaa9988\r\n$9\r\ninstalled\r\n");
    expect_reply(f, fd, "keyring install AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\r\n",
                 "$16\r\nffeeddccbbaa9988\r\n");
    assert_int_equal(f->agent.key_op, RD_QUERY_KEY_INSTALL);
    assert_string_equal(f->agent.key_arg, "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=");
    assert_int_equal(f->agent.key_uid, geteuid()); /* the peer's credentials reach the host */
    expect_reply(f, fd, "KEYRING USE ffee\r\n", "$16\r\nffeeddccbbaa9988\r\n");
    assert_int_equal(f->agent.key_op, RD_QUERY_KEY_USE);
    assert_string_equal(f->agent.key_arg, "ffee");
    expect_reply(f, fd, "KEYRING REMOVE bad\r\n",
                 "-ERR no key with fingerprint bad in the keyring\r\n");
    assert_int_equal(f->agent.key_op, RD_QUERY_KEY_REMOVE);
    assert_int_equal(f->agent.key_changes, 3);
    /* malformed: the host is not asked, the connection answers on */
    char longarg[300];
    memset(longarg, 'A', 129);
    snprintf(longarg + 129, sizeof longarg - 129, "\r\n");
    char req[400];
    snprintf(req, sizeof req, "KEYRING INSTALL %s", longarg);
    expect_reply(f, fd, req, "-ERR not a key: expected 44 base64 characters\r\n");
    static const char with_nul[] = "*3\r\n$7\r\nKEYRING\r\n$3\r\nUSE\r\n$3\r\na\0b\r\n";
    assert_int_equal(send(fd, with_nul, sizeof with_nul - 1, 0), (ssize_t)sizeof with_nul - 1);
    struct got g = {.len = 0};
    const char *want = "-ERR not a key fingerprint: expected 1 to 16 hex digits\r\n";
    hear(f, fd, &g, strlen(want));
    assert_string_equal(g.buf, want);
    expect_reply(f, fd, "KEYRING\r\n", "-ERR wrong number of arguments for 'keyring'\r\n");
    expect_reply(f, fd, "KEYRING LIST x\r\n",
                 "-ERR wrong number of arguments for 'keyring list'\r\n");
    expect_reply(f, fd, "KEYRING USE\r\n", "-ERR wrong number of arguments for 'keyring use'\r\n");
    expect_reply(f, fd, "KEYRING REMOVE a b\r\n",
                 "-ERR wrong number of arguments for 'keyring remove'\r\n");
    expect_reply(f, fd, "KEYRING ROTATE x\r\n",
                 "-ERR unknown KEYRING subcommand 'ROTATE': LIST, INSTALL, USE or REMOVE\r\n");
    expect_reply(f, fd, "PING\r\n", "+PONG\r\n");
    assert_int_equal(f->agent.key_changes, 3);
    close(fd);
}

/* A stranger may list the fingerprints, and gets -NOPERM for every change. */
static void test_query_keyring_changes_are_admin_only(void **state)
{
    struct fixture *f = *state;
    if (geteuid() != 0) skip();
    int fd = client_as(f, 65534, 65534);
    expect_reply(f, fd,
                 "KEYRING LIST\r\nKEYRING INSTALL AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\r\n"
                 "KEYRING USE ffee\r\nKEYRING REMOVE ffee\r\nPING\r\n",
                 "*2\r\n*2\r\n$16\r\n00112233aabbccdd\r\n$7\r\nprimary\r\n"
                 "*2\r\n$16\r\nffeeddccbbaa9988\r\n$9\r\ninstalled\r\n"
                 "-NOPERM this command needs root or the agent's user\r\n"
                 "-NOPERM this command needs root or the agent's user\r\n"
                 "-NOPERM this command needs root or the agent's user\r\n"
                 "+PONG\r\n");
    assert_int_equal(f->agent.key_changes, 0);
    close(fd);
}

/* TAGS SET/DEL, WEIGHT and FORCE-LEAVE reach the host with their words; malformed ones
 * do not, and the connection answers on. */
static void test_query_runtime_change_commands(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    expect_reply(f, fd, "tags set rack r7\r\n", "+OK\r\n");
    assert_int_equal(f->agent.change_op, RD_QUERY_TAG_SET);
    assert_string_equal(f->agent.change_arg, "rack");
    assert_string_equal(f->agent.change_arg2, "r7");
    expect_reply(f, fd, "TAGS DEL nope\r\n", "-ERR no tag 'nope'\r\n");
    assert_int_equal(f->agent.change_op, RD_QUERY_TAG_DEL);
    assert_string_equal(f->agent.change_arg2, "(null)");
    expect_reply(f, fd, "WEIGHT 0\r\n", "+OK\r\n");
    assert_int_equal(f->agent.change_op, RD_QUERY_WEIGHT);
    assert_string_equal(f->agent.change_arg, "0");
    expect_reply(f, fd, "FORCE-LEAVE m9\r\n", "+OK\r\n");
    assert_int_equal(f->agent.change_op, RD_QUERY_FORCE_LEAVE);
    assert_string_equal(f->agent.change_arg2, "(null)");
    expect_reply(f, fd, "force-leave m9 prune\r\n", "+OK\r\n");
    assert_string_equal(f->agent.change_arg2, "PRUNE");
    assert_int_equal(f->agent.changes, 5);
    expect_reply(f, fd, "FORCE-LEAVE m9 NOW\r\n", "-ERR syntax: FORCE-LEAVE name [PRUNE]\r\n");
    expect_reply(f, fd, "FORCE-LEAVE\r\n", "-ERR wrong number of arguments for 'force-leave'\r\n");
    expect_reply(f, fd, "WEIGHT 1 2\r\n", "-ERR wrong number of arguments for 'weight'\r\n");
    expect_reply(f, fd, "TAGS SET k\r\n", "-ERR wrong number of arguments for 'tags set'\r\n");
    expect_reply(f, fd, "TAGS DEL\r\n", "-ERR wrong number of arguments for 'tags del'\r\n");
    expect_reply(f, fd, "TAGS\r\n", "-ERR wrong number of arguments for 'tags'\r\n");
    expect_reply(f, fd, "TAGS LIST\r\n", "-ERR unknown TAGS subcommand 'LIST': SET or DEL\r\n");
    char name[80], req[160];
    memset(name, 'n', 65);
    name[65] = '\0';
    snprintf(req, sizeof req, "FORCE-LEAVE %s\r\n", name);
    expect_reply(f, fd, req, "-ERR bad member name: 1 to 64 characters\r\n");
    static const char with_nul[] = "*3\r\n$4\r\nTAGS\r\n$3\r\nDEL\r\n$3\r\na\0b\r\n";
    assert_int_equal(send(fd, with_nul, sizeof with_nul - 1, 0), (ssize_t)sizeof with_nul - 1);
    struct got g = {.len = 0};
    const char *want = "-ERR bad tag key: 1 to 255 characters\r\n";
    hear(f, fd, &g, strlen(want));
    assert_string_equal(g.buf, want);
    expect_reply(f, fd, "PING\r\n", "+PONG\r\n");
    assert_int_equal(f->agent.changes, 5);
    close(fd);
}

/* A stranger gets -NOPERM for every run-time change, and the host is never asked. */
static void test_query_runtime_changes_are_admin_only(void **state)
{
    struct fixture *f = *state;
    if (geteuid() != 0) skip();
    int fd = client_as(f, 65534, 65534);
    expect_reply(f, fd,
                 "TAGS SET k v\r\nTAGS DEL k\r\nWEIGHT 0\r\nFORCE-LEAVE m2 PRUNE\r\nPING\r\n",
                 "-NOPERM this command needs root or the agent's user\r\n"
                 "-NOPERM this command needs root or the agent's user\r\n"
                 "-NOPERM this command needs root or the agent's user\r\n"
                 "-NOPERM this command needs root or the agent's user\r\n"
                 "+PONG\r\n");
    assert_int_equal(f->agent.changes, 0);
    close(fd);
}

/* ------------------------------------------------------------------ connection lifecycle */

#define HELLO_PAIRS(proto, id)                                                                     \
    "$6\r\nserver\r\n$5\r\nringd\r\n$7\r\nversion\r\n$5\r\n9.8.7\r\n$5\r\nproto\r\n:" proto        \
    "\r\n$2\r\nid\r\n:" id "\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n$4\r\nrole\r\n$6\r\nmaster\r\n" \
    "$7\r\nmodules\r\n*0\r\n"
#define HELLO3(id) "%7\r\n" HELLO_PAIRS("3", id)
#define SUB2(kind, klen, name, nlen, n)                                                            \
    "*3\r\n$" klen "\r\n" kind "\r\n$" nlen "\r\n" name "\r\n:" n "\r\n"
#define SUB3(kind, klen, name, nlen, n)                                                            \
    ">3\r\n$" klen "\r\n" kind "\r\n$" nlen "\r\n" name "\r\n:" n "\r\n"
#define CONTEXT_ERR(cmd)                                                                           \
    "-ERR Can't execute '" cmd "': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET "  \
    "are allowed in this context\r\n"

#define HELLO2(id) "*14\r\n" HELLO_PAIRS("2", id)
#define M1_PAIRS                                                                                   \
    "$4\r\nname\r\n$2\r\nm1\r\n$4\r\naddr\r\n$14\r\n127.0.0.1:7946\r\n$6\r\nstatus\r\n$"           \
    "5\r\nalive\r\n"                                                                               \
    "$11\r\nincarnation\r\n$1\r\n7\r\n$6\r\nweight\r\n$5\r\n1.000\r\n$4\r\nzone\r\n$0\r\n\r\n"     \
    "$4\r\ntags\r\n$0\r\n\r\n"

/* Reads one whole RESP2 reply (the test's parser knows no RESP3). */
static struct rd_resp_reply *hear_reply(struct fixture *f, int fd, struct got *g)
{
    struct rd_resp_reply *reply = NULL;
    size_t used;
    for (int i = 0; i < 200 && !g->eof; i++) {
        if (rd_resp_reply_parse(g->buf, g->len, &reply, &used, NULL) == 0) break;
        hear(f, fd, g, g->len + 1);
    }
    if (!reply && rd_resp_reply_parse(g->buf, g->len, &reply, &used, NULL) != 0)
        fail_msg("no whole reply in '%s'", g->buf);
    memmove(g->buf, g->buf + used, g->len - used);
    g->len -= used;
    g->buf[g->len] = '\0';
    return reply;
}

/* A ring with every part of a definition: fractional weights, a zone, an identity. */
static struct rd_ring *ring_defined(void)
{
    struct rd_ring_member m[] = {
        {.name = "web-2", .weight = 250, .identity = "10.0.0.2:11211"},
        {.name = "web-1", .weight = 1500, .zone = "eu-1a"},
        {.name = "web-10", .weight = RD_WEIGHT_ONE},
    };
    struct rd_ring *r;
    assert_int_equal(rd_ring_new(m, 3, 64, &r), 0);
    return r;
}

/* RING writes the snapshot's definition in the documented order, members in name order
 * with their weight, zone ("" for none) and identity (the name for none). */
static void test_query_ring_returns_the_definition(void **state)
{
    struct fixture *f = *state;
    rd_ring_delete(f->agent.ring);
    f->agent.ring = ring_defined();
    int fd = client(f);
    char want[1024];
    /* 64 points at 1.5 → 96, at 1.0 → 64, at 0.25 → 16 */
    snprintf(want, sizeof want,
             "*7\r\n:1\r\n$5\r\nringd\r\n:64\r\n:3\r\n$16\r\n%016" PRIx64 "\r\n:176\r\n*3\r\n"
             "*4\r\n$5\r\nweb-1\r\n:1500\r\n$5\r\neu-1a\r\n$5\r\nweb-1\r\n"
             "*4\r\n$6\r\nweb-10\r\n:1000\r\n$0\r\n\r\n$6\r\nweb-10\r\n"
             "*4\r\n$5\r\nweb-2\r\n:250\r\n$0\r\n\r\n$14\r\n10.0.0.2:11211\r\n",
             rd_ring_checksum(f->agent.ring));
    expect_reply(f, fd, "RING\r\n", want);
    /* lower case, and RESP3 changes nothing in it */
    char want3[1200];
    snprintf(want3, sizeof want3, "%s%s", HELLO3("1"), want);
    expect_reply(f, fd, "HELLO 3\r\nring\r\n", want3);
    close(fd);
}

/* What a client does with RING: rebuild the ring from the reply alone and find the same
 * checksum and the same owners. */
static void test_query_ring_rebuilds_to_the_same_checksum(void **state)
{
    struct fixture *f = *state;
    rd_ring_delete(f->agent.ring);
    f->agent.ring = ring_defined();
    int fd = client(f);
    struct got g = {.len = 0};
    say(fd, "RING\r\n");
    struct rd_resp_reply *r = hear_reply(f, fd, &g);
    assert_int_equal(r->type, RD_RESP_ARRAY);
    assert_int_equal(r->nelem, 7);
    assert_int_equal(r->elem[0]->integer, RD_RING_SPEC);
    assert_string_equal(r->elem[1]->str, "ringd");
    const struct rd_resp_reply *ms = r->elem[6];
    struct rd_ring_member m[8];
    assert_true(ms->nelem <= 8);
    for (size_t i = 0; i < ms->nelem; i++) {
        const struct rd_resp_reply *e = ms->elem[i];
        assert_int_equal(e->nelem, 4);
        m[i] = (struct rd_ring_member){.name = e->elem[0]->str,
                                       .weight = (uint32_t)e->elem[1]->integer,
                                       .zone = e->elem[2]->str,
                                       .identity = e->elem[3]->str};
    }
    struct rd_ring *copy;
    assert_int_equal(rd_ring_new(m, ms->nelem, (uint32_t)r->elem[2]->integer, &copy), 0);
    char sum[17];
    snprintf(sum, sizeof sum, "%016" PRIx64, rd_ring_checksum(copy));
    assert_string_equal(sum, r->elem[4]->str);
    assert_int_equal(rd_ring_point_count(copy), r->elem[5]->integer);
    for (int k = 0; k < 1000; k++) {
        char key[16];
        int len = snprintf(key, sizeof key, "key-%d", k);
        assert_string_equal(
            rd_ring_member_name(copy, (size_t)rd_ring_owner(copy, key, (size_t)len)),
            rd_ring_member_name(f->agent.ring,
                                (size_t)rd_ring_owner(f->agent.ring, key, (size_t)len)));
    }
    rd_ring_delete(copy);
    rd_resp_reply_free(r);
    close(fd);
}

/* An empty ring: no members, checksum 0, no points; OWNER WITHCHECKSUM says nil with it. */
static void test_query_ring_of_an_empty_ring(void **state)
{
    struct fixture *f = *state;
    rd_ring_delete(f->agent.ring);
    f->agent.ring = ring_of(NULL, 0);
    int fd = client(f);
    expect_reply(f, fd, "RING\r\nOWNER k WITHCHECKSUM\r\n",
                 "*7\r\n:1\r\n$5\r\nringd\r\n:64\r\n:3\r\n$16\r\n0000000000000000\r\n:0\r\n*0\r\n"
                 "*2\r\n$-1\r\n$16\r\n0000000000000000\r\n");
    close(fd);
}

/* OWNER key WITHCHECKSUM: [owner, checksum] of one snapshot; the option in any case; any
 * other third word is a syntax error and a fourth an arity error, as Redis words them; a
 * ring swapped between two calls shows in the checksum. */
static void test_query_owner_withchecksum(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    char want[256], sum[17];
    const char *owner =
        rd_ring_member_name(f->agent.ring, (size_t)rd_ring_owner(f->agent.ring, "k", 1));
    snprintf(sum, sizeof sum, "%016" PRIx64, rd_ring_checksum(f->agent.ring));
    snprintf(want, sizeof want, "*2\r\n$2\r\n%s\r\n$16\r\n%s\r\n*2\r\n$2\r\n%s\r\n$16\r\n%s\r\n",
             owner, sum, owner, sum);
    expect_reply(f, fd, "OWNER k WITHCHECKSUM\r\nowner k withChecksum\r\n", want);
    expect_reply(f, fd,
                 "OWNER k WITH\r\nOWNER k WITHCHECKSUMS\r\nOWNER k WITHCHECKSUM x\r\n"
                 "OWNER k WITHCHECKSUM WITHCHECKSUM\r\nRING x\r\nPING\r\n",
                 "-ERR syntax error\r\n-ERR syntax error\r\n"
                 "-ERR wrong number of arguments for 'owner'\r\n"
                 "-ERR wrong number of arguments for 'owner'\r\n"
                 "-ERR wrong number of arguments for 'ring'\r\n+PONG\r\n");
    /* the ring changes: the same key now answers with another checksum */
    rd_ring_delete(f->agent.ring);
    f->agent.ring = ring_defined();
    char sum2[17];
    snprintf(sum2, sizeof sum2, "%016" PRIx64, rd_ring_checksum(f->agent.ring));
    assert_string_not_equal(sum, sum2);
    snprintf(
        want, sizeof want, "*2\r\n$%zu\r\n%s\r\n$16\r\n%s\r\n",
        strlen(rd_ring_member_name(f->agent.ring, (size_t)rd_ring_owner(f->agent.ring, "k", 1))),
        rd_ring_member_name(f->agent.ring, (size_t)rd_ring_owner(f->agent.ring, "k", 1)), sum2);
    expect_reply(f, fd, "OWNER k WITHCHECKSUM\r\n", want);
    close(fd);
}

/* Before the agent is ready, RING and OWNER WITHCHECKSUM are refused as OWNER is; a
 * malformed request still gets its own error. */
static void test_query_ring_not_ready(void **state)
{
    struct fixture *f = *state;
    f->agent.not_ready = true;
    int fd = client(f);
    expect_reply(f, fd, "RING\r\nOWNER k WITHCHECKSUM\r\nOWNER k NOPE\r\nRING a b\r\n",
                 "-NOTREADY not joined yet\r\n-NOTREADY not joined yet\r\n"
                 "-ERR syntax error\r\n-ERR wrong number of arguments for 'ring'\r\n");
    close(fd);
}

static void test_query_hello_switches_the_connection_to_resp3(void **state)
{
    struct fixture *f = *state;
    int fd = client(f), other = client(f);
    /* one map per member in RESP3, the flat pairs of RESP2 back after HELLO 2 */
    expect_reply(f, fd, "HELLO 3\r\nMEMBERS\r\nHELLO 2\r\nMEMBERS\r\n",
                 HELLO3("1") "*1\r\n%7\r\n" M1_PAIRS HELLO2("1") "*1\r\n*14\r\n" M1_PAIRS);
    /* HELLO alone answers in the protocol in force; the protocol is per connection */
    expect_reply(f, fd, "HELLO 3\r\nHELLO\r\n", HELLO3("1") HELLO3("1"));
    expect_reply(f, other, "HELLO\r\nCLIENT GETNAME\r\n", HELLO2("2") "$-1\r\n");
    /* INFO's text is verbatim in RESP3, as Redis sends it */
    struct got g = {.len = 0};
    say(fd, "INFO\r\n");
    hear_until(f, fd, &g, "handlers_failed:23\r\n\r\n");
    assert_memory_equal(g.buf, "=", 1);
    assert_non_null(strstr(g.buf, "\r\ntxt:# Server\r\nversion:9.8.7\r\n"));
    close(fd);
    close(other);
}

static void test_query_resp3_answers_nil_as_null(void **state)
{
    struct fixture *f = *state;
    rd_ring_delete(f->agent.ring);
    f->agent.ring = ring_of(NULL, 0);
    int fd = client(f);
    expect_reply(f, fd,
                 "HELLO 3\r\nOWNER k\r\nMOWNER a b\r\nCLIENT GETNAME\r\nCOMMAND INFO nope\r\n",
                 HELLO3("1") "_\r\n*2\r\n_\r\n_\r\n_\r\n*1\r\n_\r\n");
    close(fd);
}

/* Bad HELLOs get Redis's errors and change nothing: the name stays unset and the
 * connection stays RESP2. AUTH answers as Redis does with no password configured. */
static void test_query_hello_refuses_garbage_and_applies_nothing(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    expect_reply(f, fd,
                 "HELLO 4\r\nHELLO 1\r\nHELLO x\r\nHELLO 03\r\nHELLO -0\r\n"
                 "HELLO 99999999999999999999\r\nHELLO 3 FOO\r\nHELLO 3 AUTH default\r\n"
                 "HELLO 3 SETNAME\r\nHELLO 3 AUTH bob pw SETNAME n\r\n"
                 "*4\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$7\r\nSETNAME\r\n$3\r\na\nb\r\n"
                 "HELLO 3 SETNAME a b\r\nCLIENT GETNAME\r\n",
                 "-NOPROTO unsupported protocol version\r\n"
                 "-NOPROTO unsupported protocol version\r\n"
                 "-ERR Protocol version is not an integer or out of range\r\n"
                 "-ERR Protocol version is not an integer or out of range\r\n"
                 "-ERR Protocol version is not an integer or out of range\r\n"
                 "-ERR Protocol version is not an integer or out of range\r\n"
                 "-ERR Syntax error in HELLO option 'FOO'\r\n"
                 "-ERR Syntax error in HELLO option 'AUTH'\r\n"
                 "-ERR Syntax error in HELLO option 'SETNAME'\r\n"
                 "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                 "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
                 "-ERR Syntax error in HELLO option 'b'\r\n"
                 "$-1\r\n");
    expect_reply(f, fd, "HELLO 3 AUTH default anything SETNAME app-1\r\nCLIENT GETNAME\r\n",
                 HELLO3("1") "$5\r\napp-1\r\n");
    expect_reply(f, fd, "AUTH pw\r\nAUTH default pw\r\nAUTH Default pw\r\nAUTH a b c\r\nAUTH\r\n",
                 "-ERR AUTH <password> called without any password configured for the default "
                 "user. Are you sure your configuration is correct?\r\n"
                 "+OK\r\n"
                 "-WRONGPASS invalid username-password pair or user is disabled.\r\n"
                 "-ERR syntax error\r\n"
                 "-ERR wrong number of arguments for 'auth'\r\n");
    close(fd);
}

static bool has(const char *text, const char *part)
{
    if (strstr(text, part)) return true;
    print_message("'%s' not in '%s'\n", part, text);
    return false;
}

static void test_query_client_names_info_and_list(void **state)
{
    struct fixture *f = *state;
    int fd = client(f), other = client(f);
    char huge[300], huge_name[400], huge_lib[400];
    memset(huge, 'x', sizeof huge - 1);
    huge[sizeof huge - 1] = '\0';
    snprintf(huge_name, sizeof huge_name, "CLIENT SETNAME %.129s\r\n", huge);
    snprintf(huge_lib, sizeof huge_lib, "CLIENT SETINFO lib-name %.65s\r\n", huge);
    expect_reply(f, fd, "CLIENT ID\r\nCLIENT GETNAME\r\nCLIENT SETNAME web-1\r\nCLIENT GETNAME\r\n",
                 ":1\r\n$-1\r\n+OK\r\n$5\r\nweb-1\r\n");
    char bad[2048];
    snprintf(bad, sizeof bad,
             "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$3\r\na b\r\n"
             "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$3\r\na\r\n\r\n"
             "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$2\r\n\xc3\xa9\r\n"
             "%sCLIENT SETNAME a b\r\nCLIENT SETINFO LIB-FOO x\r\nCLIENT SETINFO LIB-NAME\r\n"
             "*4\r\n$6\r\nCLIENT\r\n$7\r\nSETINFO\r\n$7\r\nLIB-VER\r\n$3\r\n1 2\r\n"
             "%sCLIENT FOO\r\nCLIENT\r\nCLIENT GETNAME\r\n",
             huge_name, huge_lib);
    expect_reply(f, fd, bad,
                 "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
                 "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
                 "-ERR Client names cannot contain spaces, newlines or special characters.\r\n"
                 "-ERR client name longer than 128 bytes\r\n"
                 "-ERR wrong number of arguments for 'client setname'\r\n"
                 "-ERR Unrecognized option 'LIB-FOO'\r\n"
                 "-ERR wrong number of arguments for 'client setinfo'\r\n"
                 "-ERR LIB-VER cannot contain spaces, newlines or special characters.\r\n"
                 "-ERR lib-name longer than 64 bytes\r\n"
                 "-ERR unknown CLIENT subcommand 'FOO': SETNAME, GETNAME, ID, SETINFO, INFO, "
                 "LIST or KILL\r\n"
                 "-ERR wrong number of arguments for 'client'\r\n"
                 "$5\r\nweb-1\r\n");
    expect_reply(f, fd, "CLIENT SETINFO LIB-NAME redis-py\r\nCLIENT SETINFO lib-ver 4.3.4\r\n",
                 "+OK\r\n+OK\r\n");
    struct got g = {.len = 0};
    say(fd, "CLIENT INFO\r\n");
    struct rd_resp_reply *info = hear_reply(f, fd, &g);
    assert_int_equal(info->type, RD_RESP_BULK);
    char mine[64];
    snprintf(mine, sizeof mine, " uid=%u pid=%d\n", (unsigned)getuid(), (int)getpid());
    assert_true(has(info->str, "id=1 addr="));
    assert_true(has(info->str, ".sock:0 laddr="));
    assert_true(has(info->str, " name=web-1 age="));
    assert_true(has(info->str, " cmd=client|info user=default resp=2 "));
    assert_true(has(info->str, " lib-name=redis-py lib-ver=4.3.4 "));
    assert_true(has(info->str, mine));
    assert_int_equal(strchr(info->str, '\n') - info->str, (long)info->len - 1); /* one line */
    rd_resp_reply_free(info);
    /* the other connection lists both; an ID filter picks one */
    say(other, "CLIENT LIST\r\n");
    struct rd_resp_reply *list = hear_reply(f, other, &g);
    assert_true(has(list->str, "id=1 "));
    assert_true(has(list->str, "id=2 "));
    assert_true(has(list->str, " cmd=client|list "));
    size_t lines = 0;
    for (const char *p = list->str; (p = strchr(p, '\n')); p++)
        lines++;
    assert_int_equal(lines, 2);
    rd_resp_reply_free(list);
    say(other, "CLIENT LIST ID 1\r\n");
    list = hear_reply(f, other, &g);
    assert_true(has(list->str, "id=1 "));
    assert_null(strstr(list->str, "id=2 "));
    rd_resp_reply_free(list);
    expect_reply(f, other, "CLIENT LIST ID x\r\nCLIENT LIST TYPE normal\r\n",
                 "-ERR Invalid client ID\r\n-ERR syntax error\r\n");
    /* RESP3: the text is verbatim, as Redis sends it */
    say(other, "HELLO 3\r\nCLIENT INFO\r\n");
    hear_until(f, other, &g, "\n\r\n");
    assert_true(has(g.buf, "*0\r\n=")); /* the end of HELLO's map, then the verbatim */
    assert_true(has(g.buf, "\r\ntxt:id=2 "));
    /* an empty name clears it */
    expect_reply(f, fd, "*3\r\n$6\r\nCLIENT\r\n$7\r\nSETNAME\r\n$0\r\n\r\nCLIENT GETNAME\r\n",
                 "+OK\r\n$-1\r\n");
    close(fd);
    close(other);
}

static void test_query_client_kill_by_id(void **state)
{
    struct fixture *f = *state;
    int a = client(f), b = client(f), c = client(f);
    expect_reply(f, b, "PING\r\n", "+PONG\r\n");
    expect_reply(f, a,
                 "CLIENT KILL ID 2\r\nCLIENT KILL ID 1\r\nCLIENT KILL ID 99\r\n"
                 "CLIENT KILL ID x\r\nCLIENT KILL ID 0\r\nCLIENT KILL 1.2.3.4:5\r\n"
                 "CLIENT KILL ID 3 SKIPME maybe\r\nCLIENT KILL SKIPME no\r\nCLIENT KILL ID\r\n",
                 ":1\r\n:0\r\n:0\r\n"
                 "-ERR client-id should be greater than 0\r\n"
                 "-ERR client-id should be greater than 0\r\n"
                 "-ERR syntax error\r\n-ERR syntax error\r\n-ERR syntax error\r\n"
                 "-ERR syntax error\r\n");
    struct got g = {.len = 0};
    hear(f, b, &g, 1);
    assert_true(g.eof); /* b was closed */
    assert_int_equal(g.len, 0);
    /* killing oneself answers, then closes */
    say(c, "CLIENT KILL ID 3 SKIPME no\r\nPING\r\n");
    g.len = 0;
    g.eof = false;
    hear(f, c, &g, 100);
    assert_string_equal(g.buf, ":1\r\n");
    assert_true(g.eof);
    expect_reply(f, a, "PING\r\n", "+PONG\r\n");
    close(a);
    close(b);
    close(c);
}

static void test_query_client_kill_is_admin_only(void **state)
{
    struct fixture *f = *state;
    if (geteuid() != 0) skip();
    int target = client(f);
    int fd = client_as(f, 65534, 65534);
    expect_reply(f, fd, "CLIENT KILL ID 1\r\nCLIENT ID\r\n",
                 "-NOPERM this command needs root or the agent's user\r\n:2\r\n");
    expect_reply(f, target, "PING\r\n", "+PONG\r\n"); /* still there */
    close(fd);
    close(target);
}

static void test_query_select_echo_and_reset(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    expect_reply(f, fd,
                 "SELECT 0\r\nSELECT 1\r\nSELECT -1\r\nSELECT x\r\nSELECT 99999999999\r\n"
                 "SELECT\r\nECHO hi\r\nECHO\r\nECHO a b\r\n",
                 "+OK\r\n-ERR DB index is out of range\r\n-ERR DB index is out of range\r\n"
                 "-ERR value is not an integer or out of range\r\n"
                 "-ERR value is not an integer or out of range\r\n"
                 "-ERR wrong number of arguments for 'select'\r\n$2\r\nhi\r\n"
                 "-ERR wrong number of arguments for 'echo'\r\n"
                 "-ERR wrong number of arguments for 'echo'\r\n");
    /* RESET: RESP2 again, no name, no longer subscribed */
    expect_reply(f, fd,
                 "HELLO 3 SETNAME n\r\nSUBSCRIBE members\r\nRESET\r\nCLIENT GETNAME\r\nRESET x\r\n",
                 HELLO3("1") SUB3("subscribe", "9", "members", "7",
                                  "1") "+RESET\r\n$-1\r\n"
                                       "-ERR wrong number of arguments for 'reset'\r\n");
    const char *ev[] = {"member", "m9", "alive", "127.0.0.9:1", "1"};
    rd_query_publish(f->agent.q, ev, 5);
    expect_reply(f, fd, "PING\r\n", "+PONG\r\n"); /* and no event */
    close(fd);
}

/* Looks up a command in COMMAND's reply by name. */
static const struct rd_resp_reply *command_row(const struct rd_resp_reply *all, const char *name)
{
    for (size_t i = 0; i < all->nelem; i++)
        if (strcmp(all->elem[i]->elem[0]->str, name) == 0) return all->elem[i];
    fail_msg("no command %s", name);
    return NULL;
}

static bool set_has(const struct rd_resp_reply *set, const char *word)
{
    for (size_t i = 0; i < set->nelem; i++)
        if (strcmp(set->elem[i]->str, word) == 0) return true;
    return false;
}

/* COMMAND describes every row, with keys where Redis's cluster clients look for them, and
 * every arity it states is the one the server enforces. */
static void test_query_command_describes_every_row_and_arity_is_enforced(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    struct got g = {.len = 0};
    say(fd, "COMMAND COUNT\r\nCOMMAND\r\n");
    struct rd_resp_reply *count = hear_reply(f, fd, &g);
    struct rd_resp_reply *all = hear_reply(f, fd, &g);
    assert_int_equal(count->type, RD_RESP_INTEGER);
    assert_int_equal(all->type, RD_RESP_ARRAY);
    assert_int_equal(all->nelem, (size_t)count->integer);
    assert_true(all->nelem >= 21);
    static const struct {
        const char *name;
        int64_t arity, first, last, step;
    } keys[] = {
        {"owner", -2, 1, 1, 1},   {"mowner", -2, 1, -1, 1}, {"owners", 3, 1, 1, 1},
        {"assign", -3, 2, -1, 1}, {"ring", 1, 0, 0, 0},     {"members", 1, 0, 0, 0},
        {"hello", -1, 0, 0, 0},   {"client", -2, 0, 0, 0},  {"select", 2, 0, 0, 0},
        {"command", -1, 0, 0, 0}, {"join", 2, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        const struct rd_resp_reply *row = command_row(all, keys[i].name);
        print_message("%s\n", keys[i].name);
        assert_int_equal(row->nelem, 10);
        assert_int_equal(row->elem[1]->integer, keys[i].arity);
        assert_int_equal(row->elem[3]->integer, keys[i].first);
        assert_int_equal(row->elem[4]->integer, keys[i].last);
        assert_int_equal(row->elem[5]->integer, keys[i].step);
        assert_int_equal(row->elem[8]->nelem, keys[i].first ? 1 : 0); /* key specs */
    }
    assert_true(set_has(command_row(all, "owner")->elem[2], "readonly"));
    assert_true(set_has(command_row(all, "join")->elem[2], "admin"));
    assert_false(set_has(command_row(all, "owner")->elem[2], "admin"));
    const struct rd_resp_reply *client_row = command_row(all, "client");
    assert_int_equal(client_row->elem[9]->nelem, 7);
    bool kill_is_admin = false;
    for (size_t i = 0; i < client_row->elem[9]->nelem; i++) {
        const struct rd_resp_reply *sub = client_row->elem[9]->elem[i];
        if (strcmp(sub->elem[0]->str, "client|kill") == 0)
            kill_is_admin = set_has(sub->elem[2], "admin");
    }
    assert_true(kill_is_admin);
    /* every stated arity is enforced: one word too many, or one too few */
    for (size_t i = 0; i < all->nelem; i++) {
        const char *name = all->elem[i]->elem[0]->str;
        int64_t arity = all->elem[i]->elem[1]->integer;
        if (arity == -1) continue; /* anything goes */
        assert_int_not_equal(arity, 0);
        size_t words = arity > 0 ? (size_t)arity + 1 : (size_t)(-arity) - 1;
        char req[256], want[128];
        int n = snprintf(req, sizeof req, "*%zu\r\n$%zu\r\n%s\r\n", words, strlen(name), name);
        for (size_t w = 1; w < words; w++)
            n += snprintf(req + n, sizeof req - (size_t)n, "$1\r\nx\r\n");
        snprintf(want, sizeof want, "-ERR wrong number of arguments for '%s'\r\n", name);
        print_message("%s with %zu words\n", name, words);
        expect_reply(f, fd, req, want);
    }
    rd_resp_reply_free(count);
    rd_resp_reply_free(all);
    assert_int_equal(f->agent.leaves + f->agent.joins + f->agent.changes, 0);

    /* INFO of names, subcommands by "parent|sub", null for the unknown */
    say(fd, "COMMAND INFO mowner keyring|list nope\r\n");
    struct rd_resp_reply *info = hear_reply(f, fd, &g);
    assert_int_equal(info->nelem, 3);
    assert_string_equal(info->elem[0]->elem[0]->str, "mowner");
    assert_string_equal(info->elem[1]->elem[0]->str, "keyring|list");
    assert_int_equal(info->elem[1]->elem[1]->integer, 2);
    assert_int_equal(info->elem[2]->type, RD_RESP_NIL);
    rd_resp_reply_free(info);
    /* DOCS: a map of the known names only; arguments for redis-cli's hints */
    say(fd, "COMMAND DOCS owners nope force-leave\r\n");
    struct rd_resp_reply *docs = hear_reply(f, fd, &g);
    assert_int_equal(docs->nelem, 4);
    assert_string_equal(docs->elem[0]->str, "owners");
    assert_string_equal(docs->elem[2]->str, "force-leave");
    const struct rd_resp_reply *d = docs->elem[1];
    assert_int_equal(d->nelem, 6); /* summary, group, arguments */
    assert_string_equal(d->elem[4]->str, "arguments");
    assert_int_equal(d->elem[5]->nelem, 2);
    const struct rd_resp_reply *key = d->elem[5]->elem[0];
    assert_int_equal(key->nelem, 6); /* name, type, key_spec_index */
    assert_string_equal(key->elem[3]->str, "key");
    const struct rd_resp_reply *prune = docs->elem[3]->elem[5]->elem[1];
    assert_int_equal(prune->nelem, 8); /* name, type, token, flags */
    assert_string_equal(prune->elem[5]->str, "PRUNE");
    assert_string_equal(prune->elem[7]->elem[0]->str, "optional");
    rd_resp_reply_free(docs);
    say(fd, "COMMAND DOCS\r\nCOMMAND LIST\r\n");
    docs = hear_reply(f, fd, &g);
    struct rd_resp_reply *names = hear_reply(f, fd, &g);
    assert_int_equal(docs->nelem, 2 * names->nelem);
    rd_resp_reply_free(docs);
    rd_resp_reply_free(names);
    /* RESP3: sets and maps */
    expect_reply(
        f, fd, "HELLO 3\r\nCOMMAND INFO owner\r\nCOMMAND DOCS echo\r\n",
        HELLO3("1") "*1\r\n*10\r\n$5\r\nowner\r\n:-2\r\n~2\r\n+readonly\r\n+fast\r\n"
                    ":1\r\n:1\r\n:1\r\n~2\r\n+@read\r\n+@fast\r\n~0\r\n*1\r\n%3\r\n"
                    "$5\r\nflags\r\n~1\r\n+RO\r\n$12\r\nbegin_search\r\n%2\r\n"
                    "$4\r\ntype\r\n$5\r\nindex\r\n$4\r\nspec\r\n%1\r\n$5\r\nindex\r\n:1\r\n"
                    "$9\r\nfind_keys\r\n%2\r\n$4\r\ntype\r\n$5\r\nrange\r\n$4\r\nspec\r\n"
                    "%3\r\n$7\r\nlastkey\r\n:0\r\n$7\r\nkeystep\r\n:1\r\n$5\r\nlimit\r\n"
                    ":0\r\n*0\r\n"
                    "%1\r\n$4\r\necho\r\n%3\r\n$7\r\nsummary\r\n$19\r\nReturns the "
                    "message\r\n$5\r\ngroup\r\n$10\r\nconnection\r\n$9\r\narguments\r\n"
                    "*1\r\n%2\r\n$4\r\nname\r\n$7\r\nmessage\r\n$4\r\ntype\r\n$6\r\n"
                    "string\r\n");
    close(fd);
}

/* ---------------------------------------------------------------- pub/sub */

static const char *const member_ev[] = {"member", "m2", "alive", "127.0.0.1:7947", "3"};
static const char *const ring_ev[] = {"ring", "2",  "00000000000000ff", "192", "0.5", "m1",
                                      "m2",   "0.5"};

static void test_query_subscribe_replies_as_redis_in_resp2(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    expect_reply(f, fd, "SUBSCRIBE members ring members\r\n",
                 SUB2("subscribe", "9", "members", "7", "1")
                     SUB2("subscribe", "9", "ring", "4", "2")
                         SUB2("subscribe", "9", "members", "7", "2"));
    expect_reply(f, fd, "PSUBSCRIBE *\r\n", SUB2("psubscribe", "10", "*", "1", "3"));
    /* subscribed: PING is Redis's pair, the pub/sub commands, QUIT and RESET run, the rest
     * gets Redis's error word for word (an unknown command and a bad arity come first) */
    expect_reply(f, fd, "PING\r\nPING hi\r\n",
                 "*2\r\n$4\r\npong\r\n$0\r\n\r\n*2\r\n$4\r\npong\r\n$2\r\nhi\r\n");
    expect_reply(f, fd, "OWNER k\r\n", CONTEXT_ERR("owner"));
    expect_reply(f, fd, "CLIENT LIST\r\n", CONTEXT_ERR("client|list"));
    expect_reply(f, fd, "HELLO 3\r\n", CONTEXT_ERR("hello"));
    expect_reply(
        f, fd, "NOPE\r\nSUBSCRIBE\r\n",
        "-ERR unknown command 'NOPE'\r\n-ERR wrong number of arguments for 'subscribe'\r\n");
    /* UNSUBSCRIBE alone: every channel, in order, each with the count left */
    expect_reply(f, fd, "UNSUBSCRIBE\r\n",
                 SUB2("unsubscribe", "11", "members", "7", "2")
                     SUB2("unsubscribe", "11", "ring", "4", "1"));
    expect_reply(f, fd, "UNSUBSCRIBE\r\n", "*3\r\n$11\r\nunsubscribe\r\n$-1\r\n:1\r\n");
    expect_reply(f, fd, "PUNSUBSCRIBE nope *\r\n",
                 SUB2("punsubscribe", "12", "nope", "4", "1")
                     SUB2("punsubscribe", "12", "*", "1", "0"));
    expect_reply(
        f, fd, "PUNSUBSCRIBE\r\nUNSUBSCRIBE x\r\n",
        "*3\r\n$12\r\npunsubscribe\r\n$-1\r\n:0\r\n" SUB2("unsubscribe", "11", "x", "1", "0"));
    /* subscribed to nothing: every command again */
    expect_reply(f, fd, "PING\r\nOWNER k\r\n", "+PONG\r\n$2\r\nm2\r\n");
    close(fd);
    /* QUIT runs while subscribed: +OK, then the connection closes */
    int q = client(f);
    struct got g = {.len = 0};
    say(q, "SUBSCRIBE ring\r\nQUIT\r\nPING\r\n");
    hear(f, q, &g, sizeof g.buf);
    assert_string_equal(g.buf, SUB2("subscribe", "9", "ring", "4", "1") "+OK\r\n");
    assert_true(g.eof);
    close(q);
}

static void test_query_subscribe_in_resp3_pushes_and_allows_every_command(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    struct got g = {.len = 0};
    say(fd, "HELLO 3\r\n");
    hear_until(f, fd, &g, "modules\r\n*0\r\n");
    expect_reply(f, fd, "SUBSCRIBE ring\r\nPSUBSCRIBE m*\r\n",
                 SUB3("subscribe", "9", "ring", "4", "1") SUB3("psubscribe", "10", "m*", "2", "2"));
    expect_reply(f, fd, "PING\r\nOWNER k\r\n", "+PONG\r\n$2\r\nm2\r\n");
    expect_reply(
        f, fd, "UNSUBSCRIBE\r\nPUNSUBSCRIBE\r\nPUNSUBSCRIBE\r\n",
        SUB3("unsubscribe", "11", "ring", "4", "1")
            SUB3("punsubscribe", "12", "m*", "2", "0") ">3\r\n$12\r\npunsubscribe\r\n_\r\n:0\r\n");
    close(fd);
}

/* The payload of a message: the last element, which must be one JSON object without '\n'. */
static void expect_payload(const struct rd_resp_reply *m, const char *part)
{
    const struct rd_resp_reply *p = m->elem[m->nelem - 1];
    assert_int_equal(p->type, RD_RESP_BULK);
    assert_memory_equal(p->str, "{\"ts\":\"", 7);
    assert_int_equal(p->str[p->len - 1], '}');
    assert_null(memchr(p->str, '\n', p->len));
    if (!strstr(p->str, part)) fail_msg("'%s' not in '%s'", part, p->str);
}

static void test_query_subscribers_get_events_as_messages(void **state)
{
    struct fixture *f = *state;
    int members = client(f), pattern = client(f), other = client(f), resp3 = client(f);
    expect_reply(f, members, "SUBSCRIBE members\r\n", SUB2("subscribe", "9", "members", "7", "1"));
    expect_reply(f, pattern, "PSUBSCRIBE * r*\r\n",
                 SUB2("psubscribe", "10", "*", "1", "1") SUB2("psubscribe", "10", "r*", "2", "2"));
    expect_reply(f, other, "SUBSCRIBE nobody-publishes-here\r\n",
                 SUB2("subscribe", "9", "nobody-publishes-here", "21", "1"));
    struct got g3 = {.len = 0};
    say(resp3, "HELLO 3\r\nSUBSCRIBE ring\r\n");
    hear_until(f, resp3, &g3, SUB3("subscribe", "9", "ring", "4", "1"));
    rd_query_publish(f->agent.q, member_ev, 5);
    rd_query_publish(f->agent.q, ring_ev, 8);

    struct got g = {.len = 0};
    struct rd_resp_reply *m = hear_reply(f, members, &g);
    assert_int_equal(m->nelem, 3);
    assert_string_equal(m->elem[0]->str, "message");
    assert_string_equal(m->elem[1]->str, "members");
    expect_payload(m, "\"type\":\"member\",\"member\":\"m2\",\"status\":\"alive\","
                      "\"addr\":\"127.0.0.1:7947\",\"incarnation\":3}");
    rd_resp_reply_free(m);
    assert_int_equal(g.len, 0); /* not the ring event */

    /* a pattern: one pmessage per pattern that matches, in subscription order */
    struct got gp = {.len = 0};
    const char *want[][2] = {{"*", "members"}, {"*", "ring"}, {"r*", "ring"}};
    for (size_t i = 0; i < 3; i++) {
        m = hear_reply(f, pattern, &gp);
        assert_int_equal(m->nelem, 4);
        assert_string_equal(m->elem[0]->str, "pmessage");
        assert_string_equal(m->elem[1]->str, want[i][0]);
        assert_string_equal(m->elem[2]->str, want[i][1]);
        expect_payload(m, i == 0 ? "\"type\":\"member\""
                                 : "\"type\":\"ring\",\"version\":2,"
                                   "\"checksum\":\"00000000000000ff\"");
        rd_resp_reply_free(m);
    }
    assert_int_equal(gp.len, 0);

    /* RESP3: a push frame */
    hear_until(f, resp3, &g3, "}\r\n");
    const char *push = strstr(g3.buf, ">3\r\n$7\r\nmessage\r\n$4\r\nring\r\n$");
    assert_non_null(push);
    assert_non_null(
        strstr(push, "\"moves\":[{\"from\":\"m1\",\"to\":\"m2\",\"fraction\":0.5}]}\r\n"));

    /* an unknown channel gets nothing */
    expect_reply(f, other, "PING\r\n", "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    close(members);
    close(pattern);
    close(other);
    close(resp3);
}

/* Redis's glob: classes, ranges, negation, '?', '\' quoting, '*' anywhere. */
static void test_query_psubscribe_matches_globs_as_redis(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    const char *patterns[] = {"m?mbers", "[a-m]embers", "[^m]*",    "*s", "mem\\bers", "r[i-k]ng",
                              "ring?",   "[r",          "memb*rs*", "x*", "*i*n*g",    "\\*"};
    /* matches for members: m?mbers [a-m]embers *s mem\bers memb*rs* = 5; for ring:
     * [^m]* r[i-k]ng *i*n*g = 3 */
    char req[512] = "PSUBSCRIBE";
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        strcat(req, " ");
        strcat(req, patterns[i]);
    }
    strcat(req, "\r\n");
    struct got g = {.len = 0};
    say(fd, req);
    hear_until(f, fd, &g, "\r\n:12\r\n");
    g.len = 0;
    rd_query_publish(f->agent.q, member_ev, 5);
    rd_query_publish(f->agent.q, ring_ev, 8);
    char seen[256] = "";
    for (int i = 0; i < 8; i++) {
        struct rd_resp_reply *m = hear_reply(f, fd, &g);
        strcat(seen, m->elem[1]->str);
        strcat(seen, "=");
        strcat(seen, m->elem[2]->str);
        strcat(seen, " ");
        rd_resp_reply_free(m);
    }
    assert_string_equal(seen, "m?mbers=members [a-m]embers=members *s=members mem\\bers=members "
                              "memb*rs*=members [^m]*=ring r[i-k]ng=ring *i*n*g=ring ");
    expect_reply(f, fd, "PING\r\n", "*2\r\n$4\r\npong\r\n$0\r\n\r\n"); /* and no more */
    close(fd);
}

static void test_query_subscriber_that_does_not_read_is_cut_off(void **state)
{
    struct fixture *f = *state;
    int w = client(f);
    expect_reply(f, w, "SUBSCRIBE members\r\n", SUB2("subscribe", "9", "members", "7", "1"));
    static char big[64 * 1024];
    memset(big, 'x', sizeof big - 1);
    const char *ev[] = {"member", big, "alive", "127.0.0.1:1", "1"};
    for (int i = 0; i < 64; i++) {
        rd_query_publish(f->agent.q, ev, 5);
        uv_run(&f->loop, UV_RUN_NOWAIT);
    }
    int probe = client(f);
    struct got g = {.len = 0};
    say(probe, "INFO clients\r\n");
    hear_until(f, probe, &g, "\r\n\r\n");
    assert_non_null(strstr(g.buf, "watchers:0\r\n"));
    assert_non_null(strstr(g.buf, "connections_cut_off:1\r\n"));
    close(probe);
    close(w);
}

static void test_query_subscriptions_show_in_client_list_and_reset_ends_them(void **state)
{
    struct fixture *f = *state;
    int fd = client(f), probe = client(f);
    expect_reply(f, fd, "SUBSCRIBE members ring\r\nPSUBSCRIBE *\r\n",
                 SUB2("subscribe", "9", "members", "7", "1")
                     SUB2("subscribe", "9", "ring", "4", "2")
                         SUB2("psubscribe", "10", "*", "1", "3"));
    struct got g = {.len = 0};
    say(probe, "CLIENT LIST\r\n");
    hear_until(f, probe, &g, "\n\r\n");
    assert_non_null(strstr(g.buf, "id=1 "));
    assert_non_null(strstr(g.buf, " flags=P db=0 sub=2 psub=1 "));
    assert_non_null(strstr(g.buf, " flags=N db=0 sub=0 psub=0 "));
    g.len = 0;
    say(probe, "INFO clients\r\n");
    hear_until(f, probe, &g, "\r\n\r\n");
    assert_non_null(strstr(g.buf, "watchers:1\r\n"));
    /* RESET: no longer subscribed, no unsubscribe messages (as Redis), every command runs */
    expect_reply(f, fd, "RESET\r\nOWNER k\r\n", "+RESET\r\n$2\r\nm2\r\n");
    g.len = 0;
    say(probe, "INFO clients\r\n");
    hear_until(f, probe, &g, "\r\n\r\n");
    assert_non_null(strstr(g.buf, "watchers:0\r\n"));
    rd_query_publish(f->agent.q, member_ev, 5);
    expect_reply(f, fd, "PING\r\n", "+PONG\r\n");
    close(fd);
    close(probe);
}

/* SUBSCRIBE state: right after its confirmation, one message with the state joined in;
 * nothing is ever published on it after that. */
static void test_query_state_channel_starts_with_the_current_state(void **state)
{
    struct fixture *f = *state;
    int fd = client(f), r3 = client(f);
    struct got g = {.len = 0};
    say(fd, "SUBSCRIBE members ring state\r\n");
    hear_until(f, fd, &g, "}\r\n");
    const char *conf = SUB2("subscribe", "9", "members", "7", "1")
        SUB2("subscribe", "9", "ring", "4", "2") SUB2("subscribe", "9", "state", "5", "3");
    assert_memory_equal(g.buf, conf, strlen(conf));
    memmove(g.buf, g.buf + strlen(conf), g.len - strlen(conf) + 1);
    g.len -= strlen(conf);
    struct rd_resp_reply *m = hear_reply(f, fd, &g);
    assert_int_equal(m->nelem, 3);
    assert_string_equal(m->elem[0]->str, "message");
    assert_string_equal(m->elem[1]->str, "state");
    char want[256];
    snprintf(want, sizeof want,
             "\"type\":\"state\",\"version\":3,\"checksum\":\"%016" PRIx64 "\",\"points\":%zu,"
             "\"members\":[{\"member\":\"m1\",\"status\":\"alive\",\"addr\":\"127.0.0.1:7946\","
             "\"incarnation\":7}]}",
             rd_ring_checksum(f->agent.ring), rd_ring_point_count(f->agent.ring));
    expect_payload(m, want);
    rd_resp_reply_free(m);
    /* events still come on their channels; the state channel stays quiet */
    rd_query_publish(f->agent.q, member_ev, 5);
    m = hear_reply(f, fd, &g);
    assert_string_equal(m->elem[1]->str, "members");
    rd_resp_reply_free(m);
    expect_reply(f, fd, "PING\r\n", "*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    /* RESP3: a push; a pattern matching "state" gets no state */
    g.len = 0;
    say(r3, "HELLO 3\r\nPSUBSCRIBE s*\r\nSUBSCRIBE state\r\n");
    hear_until(f, r3, &g, "}\r\n");
    const char *tail = SUB3("psubscribe", "10", "s*", "2", "1")
        SUB3("subscribe", "9", "state", "5", "2") ">3\r\n$7\r\nmessage\r\n$5\r\nstate\r\n$";
    const char *at = strstr(g.buf, tail);
    assert_non_null(at);
    assert_non_null(strstr(at, want));
    expect_reply(f, r3, "PING\r\n", "+PONG\r\n");
    close(fd);
    close(r3);
}

/* Past the bounds, the whole command is refused and nothing is subscribed. */
static void test_query_subscribe_bounds(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    char req[64 * 8 + 64] = "SUBSCRIBE", name[16];
    for (int i = 0; i < 64; i++) {
        snprintf(name, sizeof name, " c%d", i);
        strcat(req, name);
    }
    strcat(req, "\r\n");
    struct got g = {.len = 0};
    say(fd, req);
    hear_until(f, fd, &g, "\r\n:64\r\n");
    expect_reply(f, fd, "SUBSCRIBE c0 c63\r\n",
                 SUB2("subscribe", "9", "c0", "2", "64") SUB2("subscribe", "9", "c63", "3", "64"));
    expect_reply(f, fd, "PSUBSCRIBE c0\r\n",
                 "-ERR too many subscriptions on one connection (at most 64)\r\n");
    char longname[200];
    memset(longname, 'x', 129);
    snprintf(longname + 129, sizeof longname - 129, "\r\n");
    g.len = 0;
    say(fd, "UNSUBSCRIBE\r\n");
    hear_until(f, fd, &g, "\r\n:0\r\n");
    char req2[256];
    snprintf(req2, sizeof req2, "SUBSCRIBE ok %s", longname);
    expect_reply(f, fd, req2, "-ERR channel name or pattern longer than 128 bytes\r\n");
    expect_reply(f, fd, "PING\r\n", "+PONG\r\n");
    close(fd);
}

int main(void)
{
    /* As in the agent: a client that vanished is a failed write, not a signal. */
    signal(SIGPIPE, SIG_IGN);
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_query_answers_a_pipelined_batch_in_order),
        T(test_query_runtime_change_commands),
        T(test_query_runtime_changes_are_admin_only),
        T(test_query_empty_ring_answers_nil),
        T(test_query_owners_of_zero_is_an_empty_array),
        T(test_query_owners_skips_a_ketama_member_without_points),
        T(test_query_errors_keep_the_connection),
        T(test_query_assign_answers_the_set_and_refuses_bad_input),
        T(test_query_members_lists_fields_in_pairs),
        T(test_query_info_formats_every_field_in_order),
        T(test_query_metrics_returns_the_host_text_and_counts_commands),
        T(test_query_protocol_error_is_answered_then_closed),
        T(test_query_join_event_published_mid_request_precedes_the_reply),
        T(test_query_not_ready_refuses_placement_only),
        T(test_query_join_waits_for_the_exchange),
        T(test_query_multi_exec),
        T(test_query_watch_is_refused_and_streams_nothing),
        T(test_query_leave_happens_after_its_reply_is_written),
        T(test_query_leave_still_happens_when_the_client_vanishes),
        T(test_query_close_with_connections_in_every_state),
        T(test_query_refuses_a_live_socket_and_a_plain_file_replaces_a_stale_one),
        T(test_query_socket_has_the_mode_asked_for),
        T(test_query_may_change_table),
        T(test_query_stranger_gets_noperm_and_keeps_reading),
        T(test_query_join_resolves_then_answers_in_order),
        T(test_query_close_while_join_resolves),
        T(test_query_connection_cap_follows_the_fd_limit),
        T(test_query_socket_directory_must_be_safe),
        T(test_query_admin_group_is_resolved_at_start),
        T(test_query_keyring_commands),
        T(test_query_keyring_changes_are_admin_only),
        T(test_query_hello_switches_the_connection_to_resp3),
        T(test_query_resp3_answers_nil_as_null),
        T(test_query_hello_refuses_garbage_and_applies_nothing),
        T(test_query_client_names_info_and_list),
        T(test_query_client_kill_by_id),
        T(test_query_client_kill_is_admin_only),
        T(test_query_select_echo_and_reset),
        T(test_query_command_describes_every_row_and_arity_is_enforced),
        T(test_query_subscribe_replies_as_redis_in_resp2),
        T(test_query_subscribe_in_resp3_pushes_and_allows_every_command),
        T(test_query_subscribers_get_events_as_messages),
        T(test_query_psubscribe_matches_globs_as_redis),
        T(test_query_subscriber_that_does_not_read_is_cut_off),
        T(test_query_subscriptions_show_in_client_list_and_reset_ends_them),
        T(test_query_subscribe_bounds),
        T(test_query_state_channel_starts_with_the_current_state),
        T(test_query_ring_returns_the_definition),
        T(test_query_ring_rebuilds_to_the_same_checksum),
        T(test_query_ring_of_an_empty_ring),
        T(test_query_owner_withchecksum),
        T(test_query_ring_not_ready),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
