/*
 * fuzz_query.c — libFuzzer target for the query server (agent/query.c): dispatch, every
 * command's argument handling, and the RESP2/RESP3 reply writers, end to end.
 *
 * The parser has its own target (fuzz_resp); this one is about what happens after it. One
 * server runs for the process's life on a real libuv loop and a real Unix socket, serving
 * a fake host (a ring of three, a member table of one, no keyring, changes that succeed,
 * a JOIN that publishes a member and a ring event and whose exchange is over at once).
 * Each input is one connection: its bytes are sent, the sending side is shut, and the loop
 * is pumped until the server has answered and closed. Then:
 *   - the replies are whole RESP values, back to back, to the last byte, in RESP2 or RESP3
 *     (a connection may switch): every count a reply announces is the number of values
 *     that follow, which a writer that miscounts a map or a set would break;
 *   - the server has closed the connection within the deadline (a hang is a finding);
 *   - a fresh connection still gets +PONG to PING.
 * ASan and UBSan watch the server throughout; a connection it failed to free is a leak.
 * The input is the raw byte stream, at most RD_FUZZ_QUERY_MAX_INPUT bytes of it.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "buf.h"
#include "dns.h"
#include "query.h"
#include "rd_err.h"
#include "ring.h"
#include "swim.h"

/** Longest input sent (libFuzzer's -max_len is smaller by default). */
#define RD_FUZZ_QUERY_MAX_INPUT (256u * 1024u)
/** Most reply bytes kept for the check; more is a finding (the output limit is 8 MiB). */
#define RD_FUZZ_QUERY_MAX_OUTPUT (16u * 1024u * 1024u)
/** How long the server may take to answer one input and close. */
#define RD_FUZZ_QUERY_DEADLINE_MS 10000
/** Deepest nesting the reply check follows (COMMAND DOCS goes 6 deep). */
#define RD_FUZZ_QUERY_MAX_DEPTH 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok) abort();
}

/* ------------------------------------------------------------------ the fake host */

static struct {
    uv_loop_t loop;
    struct rd_ring *ring;
    struct rd_swim *swim;
    struct rd_dns *dns;
    struct rd_query *q;
    char dir[32];
    char path[64];
} S;

static const struct rd_ring *host_ring(void *ctx)
{
    (void)ctx;
    return S.ring;
}

static const struct rd_swim *host_swim(void *ctx)
{
    (void)ctx;
    return S.swim;
}

static void host_status(void *ctx, struct rd_query_status *out)
{
    (void)ctx;
    *out = (struct rd_query_status){
        .uptime_s = 1,
        .ring_params = {.spec = RD_RING_SPEC, .mode = RD_RING_MODE_RINGD, .vnodes = 64},
        .ring_params_source = "default",
        .version = "fuzz"};
}

static size_t host_keyring_list(void *ctx, char fps[RD_KEYRING_MAX][RD_KEY_FINGERPRINT_LEN + 1])
{
    (void)ctx;
    (void)fps;
    return 0;
}

static int host_keyring_change(void *ctx, enum rd_query_key_op op, const char *arg,
                               const struct rd_query_peer *peer,
                               char fp[RD_KEY_FINGERPRINT_LEN + 1], char *err, size_t errlen)
{
    (void)ctx, (void)op, (void)arg, (void)peer, (void)fp;
    snprintf(err, errlen, "no keyring");
    return RD_EINVAL;
}

static int host_change(void *ctx, enum rd_query_change_op op, const char *arg, const char *arg2,
                       const struct rd_query_peer *peer, char *err, size_t errlen)
{
    (void)ctx, (void)op, (void)arg, (void)arg2, (void)peer, (void)err, (void)errlen;
    return 0;
}

/* A JOIN publishes what a real one would, a member and a ring event, so that subscribed
 * connections get messages and pmessages (the glob matching) in either protocol. */
static void host_join(void *ctx, const char *hostport, const struct rd_addr *seed)
{
    (void)ctx, (void)hostport;
    const char *member[] = {"member", "seed", "alive", "10.0.0.1:7946", "1"};
    const char *ring[] = {"ring", "2",    "00000000000000ff", "192", "0.333333",
                          "m1",   "seed", "0.333333"};
    rd_query_publish(S.q, member, 5);
    rd_query_publish(S.q, ring, 8);
    rd_query_join_done(S.q, seed, NULL);
}

static void host_leave(void *ctx)
{
    (void)ctx;
}

static bool host_ready(void *ctx)
{
    (void)ctx;
    return true;
}

static const char *host_metrics(void *ctx, size_t *len)
{
    (void)ctx;
    static const char text[] = "# TYPE ringd_up gauge\nringd_up 1\n";
    *len = sizeof text - 1;
    return text;
}

/* At exit: the socket and its directory go; the server itself lives as long as the process. */
static void remove_socket(void)
{
    unlink(S.path);
    rmdir(S.dir);
}

static void start_server(void)
{
    check(uv_loop_init(&S.loop) == 0);
    struct rd_ring_member m[3] = {{.name = "m1", .weight = RD_WEIGHT_ONE},
                                  {.name = "m2", .weight = RD_WEIGHT_ONE},
                                  {.name = "m3", .weight = RD_WEIGHT_ONE}};
    check(rd_ring_new(m, 3, 64, &S.ring) == 0);
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_member self = {.name = "m1",
                             .weight = RD_WEIGHT_ONE,
                             .incarnation = 1,
                             .addr = {.family = 4, .port = 7946, .ip = {127, 0, 0, 1}}};
    S.swim = rd_swim_new(&cfg, &self, 1, 0);
    check(S.swim != NULL);
    char err[256];
    snprintf(S.dir, sizeof S.dir, "/tmp/rd-fuzz-query.XXXXXX");
    check(mkdtemp(S.dir) != NULL);
    snprintf(S.path, sizeof S.path, "%s/q.sock", S.dir);
    /* JOIN's names go to a port nothing listens on: refused at once, nothing leaves. */
    check(rd_dns_start(&S.loop, "127.0.0.1:1", &S.dns, err, sizeof err) == 0);
    struct rd_query_host host = {.ring = host_ring,
                                 .swim = host_swim,
                                 .status = host_status,
                                 .join = host_join,
                                 .leave = host_leave,
                                 .keyring_list = host_keyring_list,
                                 .keyring_change = host_keyring_change,
                                 .ready = host_ready,
                                 .metrics = host_metrics,
                                 .change = host_change,
                                 .dns = S.dns};
    check(rd_query_start(&S.loop, &host, S.path, 0600, NULL, &S.q, err, sizeof err) == 0);
    atexit(remove_socket);
}

/* ------------------------------------------------------------------ the reply check */

/* Skips "...\r\n" from *pos; false if there is none. */
static bool skip_line(const struct rd_buf *b, size_t *pos, const char **start)
{
    *start = b->data + *pos;
    const char *nl = memchr(b->data + *pos, '\n', b->len - *pos);
    if (!nl || nl == b->data + *pos || nl[-1] != '\r') return false;
    *pos = (size_t)(nl - b->data) + 1;
    return true;
}

/* The decimal at the start of a line, as a count or length (-1 allowed). */
static bool line_number(const char *s, long long *out)
{
    char *end;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return errno == 0 && end != s && end[0] == '\r' && *out >= -1;
}

/* One whole RESP2 or RESP3 value at *pos. */
static bool value(const struct rd_buf *b, size_t *pos, int depth)
{
    if (depth > RD_FUZZ_QUERY_MAX_DEPTH || *pos >= b->len) return false;
    char type = b->data[(*pos)++];
    const char *line;
    long long n;
    if (!skip_line(b, pos, &line)) return false;
    switch (type) {
    case '+':
    case '-':
    case ':':
    case '_':
    case ',':
    case '#':
    case '(':
        return true;
    case '$':
    case '=':
    case '!':
        if (!line_number(line, &n) || (n == -1 && type != '$')) return false;
        if (n == -1) return true;
        if ((size_t)n > b->len - *pos || b->len - *pos - (size_t)n < 2) return false;
        if (type == '=' && (n < 4 || b->data[*pos + 3] != ':')) return false;
        *pos += (size_t)n;
        if (b->data[*pos] != '\r' || b->data[*pos + 1] != '\n') return false;
        *pos += 2;
        return true;
    case '*':
    case '~':
    case '>':
    case '%':
        if (!line_number(line, &n) || (n == -1 && type != '*')) return false;
        for (long long i = 0; i < (type == '%' ? 2 * n : n); i++)
            if (!value(b, pos, depth + 1)) return false;
        return true;
    default:
        return false;
    }
}

/* ------------------------------------------------------------------ one connection */

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static int connect_server(void)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    check(fd >= 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", S.path);
    check(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    return fd;
}

/* Sends data (all of it, pumping the loop while the socket is full), shuts the sending
 * side, and collects every reply byte until the server closes. */
static void converse(int fd, const uint8_t *data, size_t size, struct rd_buf *out)
{
    uint64_t deadline = now_ms() + RD_FUZZ_QUERY_DEADLINE_MS;
    size_t sent = 0;
    bool shut = false, eof = false;
    char chunk[16384];
    while (!eof) {
        check(now_ms() < deadline); /* the server must answer and close */
        uv_run(&S.loop, UV_RUN_NOWAIT);
        if (sent < size) {
            ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
            if (n > 0) sent += (size_t)n;
            if (n < 0 && errno != EAGAIN) sent = size; /* the server closed early */
        }
        if (sent == size && !shut) {
            shutdown(fd, SHUT_WR);
            shut = true;
        }
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n > 0) {
            check(out->len + (size_t)n <= RD_FUZZ_QUERY_MAX_OUTPUT);
            check(rd_buf_append(out, chunk, (size_t)n) == 0);
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            eof = true;
        }
    }
    close(fd);
    for (int i = 0; i < 8; i++) /* the server's close callbacks, which free the connection */
        uv_run(&S.loop, UV_RUN_NOWAIT);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!S.q) start_server();
    if (size > RD_FUZZ_QUERY_MAX_INPUT) size = RD_FUZZ_QUERY_MAX_INPUT;
    struct rd_buf out;
    rd_buf_init(&out);
    converse(connect_server(), data, size, &out);
    size_t pos = 0;
    while (pos < out.len)
        check(value(&out, &pos, 0));
    out.len = 0;
    static const char ping[] = "PING\r\n";
    converse(connect_server(), (const uint8_t *)ping, sizeof ping - 1, &out);
    check(out.len == 7 && memcmp(out.data, "+PONG\r\n", 7) == 0);
    rd_buf_free(&out);
    return 0;
}
