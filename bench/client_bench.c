/*
 * client_bench.c — what a lookup costs in the application's process (libringd_client)
 * against asking the agent over its socket, measured against one agent in the same run.
 *
 *     bench_client SOCKET [--keys N] [--reps R]
 *
 * Three ways to learn the owner of key:0 .. key:N-1, each timed R times (the median is
 * printed, in ns per key):
 *   - in-process: ringd_client_owner(), which copies the name into a buffer;
 *   - OWNER: one request and one reply per key on one connection (a round trip each);
 *   - MOWNER: 1,000 keys per request, the cost per key.
 * Every MOWNER answer is checked against the in-process one before timing, so they give
 * the same owners. Run by bench/client.sh against a Release agent (bench/README.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "resp.h"
#include "ringd_client.h"

static int fd = -1;
static char in[1 << 22];
static size_t inlen;
static char out[1 << 22];

static void die(const char *what)
{
    fprintf(stderr, "bench_client: %s\n", what);
    exit(1);
}

/* Sends the request out[0..n) and returns its reply. */
static struct rd_resp_reply *roundtrip(size_t n)
{
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, out + off, n - off);
        if (w <= 0) die("write failed");
        off += (size_t)w;
    }
    for (;;) {
        struct rd_resp_reply *r;
        size_t used;
        if (rd_resp_reply_parse(in, inlen, &r, &used, NULL) == 0) {
            memmove(in, in + used, inlen - used);
            inlen -= used;
            return r;
        }
        ssize_t got = read(fd, in + inlen, sizeof in - inlen);
        if (got <= 0) die("the agent closed the connection");
        inlen += (size_t)got;
    }
}

static size_t key(char *buf, int i)
{
    return (size_t)sprintf(buf, "key:%d", i);
}

/* MOWNER of keys lo..hi-1 into out; its length. */
static size_t mowner_request(int lo, int hi)
{
    size_t n = (size_t)sprintf(out, "*%d\r\n$6\r\nMOWNER\r\n", hi - lo + 1);
    for (int i = lo; i < hi; i++) {
        char k[32];
        size_t len = key(k, i);
        n += (size_t)sprintf(out + n, "$%zu\r\n%s\r\n", len, k);
    }
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 2) die("usage: bench_client SOCKET [--keys N] [--reps R]");
    int keys = 100000, reps = 7, socket_keys = 20000;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--keys") == 0) keys = atoi(argv[i + 1]);
        if (strcmp(argv[i], "--reps") == 0) reps = atoi(argv[i + 1]);
    }
    if (keys < 1000 || keys % 1000 || reps < 1 || reps > 99)
        die("--keys a multiple of 1000, --reps 1..99");
    if (socket_keys > keys) socket_keys = keys;
    struct ringd_client *c;
    char err[256];
    if (ringd_client_open(argv[1], &c, err, sizeof err) < 0) die(err);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", argv[1]);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0) die("connect failed");

    /* MOWNER and the client give the same owners */
    for (int lo = 0; lo < socket_keys; lo += 1000) {
        struct rd_resp_reply *r = roundtrip(mowner_request(lo, lo + 1000));
        if (r->type != RD_RESP_ARRAY || r->nelem != 1000) die("MOWNER reply malformed");
        for (int i = 0; i < 1000; i++) {
            char k[32], name[RINGD_CLIENT_NAME_MAX + 1];
            size_t len = key(k, lo + i);
            ringd_client_owner(c, k, len, name, sizeof name);
            if (r->elem[i]->type != RD_RESP_BULK || strcmp(r->elem[i]->str, name) != 0)
                die("MOWNER and the client disagree");
        }
        rd_resp_reply_free(r);
    }

    double local[99], owner[99], mowner[99];
    volatile int sink = 0;
    for (int rep = 0; rep < reps; rep++) {
        char k[32], name[RINGD_CLIENT_NAME_MAX + 1];
        double t0 = now_ns();
        for (int i = 0; i < keys; i++) {
            size_t len = key(k, i);
            sink += ringd_client_owner(c, k, len, name, sizeof name);
        }
        local[rep] = (now_ns() - t0) / keys;

        t0 = now_ns();
        for (int i = 0; i < socket_keys; i++) {
            size_t len = key(k, i);
            size_t n = (size_t)sprintf(out, "*2\r\n$5\r\nOWNER\r\n$%zu\r\n%s\r\n", len, k);
            rd_resp_reply_free(roundtrip(n));
        }
        owner[rep] = (now_ns() - t0) / socket_keys;

        t0 = now_ns();
        for (int lo = 0; lo < socket_keys; lo += 1000)
            rd_resp_reply_free(roundtrip(mowner_request(lo, lo + 1000)));
        mowner[rep] = (now_ns() - t0) / socket_keys;
    }
    (void)sink;
    double l = median(local, reps), o = median(owner, reps), m = median(mowner, reps);
    printf("medians of %d runs; %d keys in-process, %d over the socket\n", reps, keys, socket_keys);
    printf("%-34s %10s %12s\n", "way", "ns/key", "x in-process");
    printf("%-34s %10.1f %12.1f\n", "ringd_client_owner (in-process)", l, 1.0);
    printf("%-34s %10.1f %12.1f\n", "OWNER (one round trip per key)", o, o / l);
    printf("%-34s %10.1f %12.1f\n", "MOWNER (1,000 keys per request)", m, m / l);
    ringd_client_close(c);
    close(fd);
    return 0;
}
