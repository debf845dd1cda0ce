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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "query.h"
#include "rd_err.h"
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
    *out = (struct rd_query_status){.uptime_s = 42,
                                    .ring_version = 3,
                                    .vnodes = 64,
                                    .weight = 2500,
                                    .packets_malformed = 5,
                                    .syncs_malformed = 6};
}

/* Publishes an event from inside the request, as the real agent's flush() does. */
static int fake_join(void *ctx, const char *hostport, char *err, size_t errlen)
{
    struct fake_agent *a = ctx;
    if (strcmp(hostport, "bad") == 0) {
        snprintf(err, errlen, "expected HOST:PORT");
        return RD_EINVAL;
    }
    a->joins++;
    snprintf(a->joined, sizeof a->joined, "%s", hostport);
    const char *ev[] = {"member", "seed", "alive", hostport, "1"};
    rd_query_publish(a->q, ev, 5);
    return 0;
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
    char dir[32];
    char path[64];
};

static struct rd_ring *ring_of(const char *const *names, size_t n)
{
    struct rd_ring_member m[8];
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
                                     .leave = fake_leave};
    char err[256];
    int rc = rd_query_start(&f->loop, &f->host, f->path, 0600, &f->agent.q, err, sizeof err);
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

/* ------------------------------------------------------------------ tests */

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
    expect_reply(f, fd, "OWNER k\r\nMOWNER a b\r\nOWNERS k 3\r\n",
                 "$-1\r\n*2\r\n$-1\r\n$-1\r\n*0\r\n");
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

static void test_query_info_formats_every_field_in_order(void **state)
{
    struct fixture *f = *state;
    int fd = client(f);
    struct got g = {.len = 0};
    say(fd, "WATCH\r\nINFO server\r\n");
    hear_until(f, fd, &g, "\r\n\r\n"); /* the text's last CRLF, then the bulk's */
    const struct rd_ring *ring = f->agent.ring;
    char text[2048], want[2200];
    int n =
        snprintf(text, sizeof text,
                 "# ringd\r\nname:m1\r\naddr:127.0.0.1:7946\r\nstatus:alive\r\n"
                 "incarnation:7\r\nuptime_s:42\r\nmembers_alive:1\r\nmembers_suspect:0\r\n"
                 "members_dead:0\r\nmembers_left:0\r\nmembers_checksum:%016" PRIx64 "\r\n"
                 "ring_version:3\r\nring_checksum:%016" PRIx64 "\r\nring_members:3\r\n"
                 "ring_points:%zu\r\nvnodes:64\r\nweight:2.500\r\nhealth:%u\r\n"
                 "joined:%d\r\npackets_in:0\r\npackets_out:0\r\npackets_malformed:5\r\n"
                 "probes:0\r\nprobes_failed:0\r\nrefutes:0\r\nsyncs_in:0\r\nsyncs_out:0\r\n"
                 "syncs_failed:0\r\nsyncs_malformed:6\r\nincarnations_refused:0\r\n"
                 "members_refused_full:0\r\nreplies_trimmed:0\r\nping_reqs_refused:0\r\n"
                 "namesakes_ignored:0\r\nring_scaled:0\r\nconnections:1\r\nwatchers:1\r\n"
                 "connections_rejected:0\r\nconnections_cut_off:0\r\n",
                 rd_swim_checksum(f->agent.swim), rd_ring_checksum(ring), rd_ring_point_count(ring),
                 rd_swim_health(f->agent.swim), rd_swim_joined(f->agent.swim));
    snprintf(want, sizeof want, "+OK\r\n$%d\r\n%s\r\n", n, text);
    assert_string_equal(g.buf, want);
    close(fd);
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
    expect_reply(f, fd, "WATCH\r\n", "+OK\r\n");
    expect_reply(
        f, fd, "JOIN 10.0.0.1:7946\r\nPING\r\n",
        "*5\r\n$6\r\nmember\r\n$4\r\nseed\r\n$5\r\nalive\r\n$13\r\n10.0.0.1:7946\r\n$1\r\n1\r\n"
        "+OK\r\n+PONG\r\n");
    assert_int_equal(f->agent.joins, 1);
    assert_string_equal(f->agent.joined, "10.0.0.1:7946");
    close(fd);
}

static void test_query_events_reach_watchers_only(void **state)
{
    struct fixture *f = *state;
    int w = client(f), other = client(f);
    expect_reply(f, w, "WATCH\r\n", "+OK\r\n");
    expect_reply(f, other, "PING\r\n", "+PONG\r\n");
    const char *ev[] = {"ring", "2", "00000000000000ff", "192", "0.5", "m1", "m2", "0.5"};
    rd_query_publish(f->agent.q, ev, 8);
    struct got g = {.len = 0};
    hear(f, w, &g, 20);
    assert_memory_equal(g.buf, "*8\r\n$4\r\nring\r\n$1\r\n2\r\n", 20);
    expect_reply(f, other, "PING\r\n", "+PONG\r\n"); /* and nothing else */
    close(w);
    close(other);
}

static void test_query_watcher_that_does_not_read_is_cut_off(void **state)
{
    struct fixture *f = *state;
    int w = client(f);
    expect_reply(f, w, "WATCH\r\n", "+OK\r\n");
    static char big[64 * 1024];
    memset(big, 'x', sizeof big - 1);
    const char *ev[] = {"member", big};
    /* 64 KiB a time, never read: past the kernel's buffer and then past the backlog. */
    for (int i = 0; i < 64; i++) {
        rd_query_publish(f->agent.q, ev, 2);
        uv_run(&f->loop, UV_RUN_NOWAIT);
    }
    int probe = client(f);
    struct got g = {.len = 0};
    say(probe, "INFO\r\n");
    hear_until(f, probe, &g, "\r\n\r\n"); /* the INFO text's last CRLF, then the bulk's */
    assert_non_null(strstr(g.buf, "watchers:0\r\n"));
    assert_non_null(strstr(g.buf, "connections_cut_off:1\r\n"));
    close(probe);
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
    expect_reply(f, watcher, "WATCH\r\n", "+OK\r\n");
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
    assert_int_equal(rd_query_start(&loop2, &f->host, f->path, 0600, &q2, err, sizeof err),
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
    assert_int_equal(rd_query_start(&loop2, &f->host, file, 0600, &q2, err, sizeof err), RD_EEXIST);
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
    assert_int_equal(rd_query_start(&loop2, &f->host, stale, 0640, &q2, err, sizeof err), 0);
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

int main(void)
{
    /* As in the agent: a client that vanished is a failed write, not a signal. */
    signal(SIGPIPE, SIG_IGN);
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_query_answers_a_pipelined_batch_in_order),
        T(test_query_empty_ring_answers_nil),
        T(test_query_owners_of_zero_is_an_empty_array),
        T(test_query_errors_keep_the_connection),
        T(test_query_members_lists_fields_in_pairs),
        T(test_query_info_formats_every_field_in_order),
        T(test_query_protocol_error_is_answered_then_closed),
        T(test_query_join_event_published_mid_request_precedes_the_reply),
        T(test_query_events_reach_watchers_only),
        T(test_query_watcher_that_does_not_read_is_cut_off),
        T(test_query_leave_happens_after_its_reply_is_written),
        T(test_query_leave_still_happens_when_the_client_vanishes),
        T(test_query_close_with_connections_in_every_state),
        T(test_query_refuses_a_live_socket_and_a_plain_file_replaces_a_stale_one),
        T(test_query_socket_has_the_mode_asked_for),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
