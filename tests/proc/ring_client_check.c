/*
 * ring_client_check.c — the client library (client/) against a real agent, for
 * tests/proc/test_ring_client.sh.
 *
 *     ring_client_check SOCKET KEYS
 *
 * Opens a client on SOCKET, then runs the commands it reads from stdin, one per line, and
 * answers each with one line on stdout:
 *
 *   compare          the client's owner() of key:0 .. key:KEYS-1 against the agent's MOWNER
 *                    (batches of 1,000 on a connection of its own), taken while the client's
 *                    checksum equals INFO's before and after:
 *                    "agree keys=N checksum=HEX" or "disagree ..."
 *   follow OLDHEX    waits (10 s at most) until INFO's ring_checksum is no longer OLDHEX,
 *                    then until the client's equals it: "followed ms=T checksum=HEX", T
 *                    from the first INFO that showed the change to the client's catching up
 *   stats            "refreshes=R fetches=F failures=X reconnects=C connected=0|1"
 *   quit             closes the client and exits
 *
 * Exits 0 at quit or the end of stdin, 1 when a command failed.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "resp.h"
#include "ringd_client.h"

static int agent = -1;
static const char *agent_path;
static char inbuf[1 << 22];
static size_t inlen;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void die(const char *what)
{
    fprintf(stderr, "ring_client_check: %s\n", what);
    exit(1);
}

/* (Re)connects the checker's own connection, for 5 s at most (the agent may be restarting). */
static void agent_connect(void)
{
    if (agent >= 0) close(agent);
    inlen = 0;
    for (int i = 0; i < 50; i++, usleep(100000)) {
        agent = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", agent_path);
        if (agent >= 0 && connect(agent, (struct sockaddr *)&sa, sizeof sa) == 0) return;
        if (agent >= 0) close(agent);
        agent = -1;
    }
    die("cannot connect to the agent");
}

static struct rd_resp_reply *ask_once(int argc, const char *const *argv);

/* Sends a request of argc bulk strings and returns its reply; once more on a new
 * connection when the agent closed this one (it restarted). */
static struct rd_resp_reply *ask(int argc, const char *const *argv)
{
    struct rd_resp_reply *r = ask_once(argc, argv);
    if (r) return r;
    agent_connect();
    r = ask_once(argc, argv);
    if (!r) die("the agent closed the connection");
    return r;
}

static struct rd_resp_reply *ask_once(int argc, const char *const *argv)
{
    static char out[1 << 20];
    size_t n = (size_t)snprintf(out, sizeof out, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++)
        n += (size_t)snprintf(out + n, sizeof out - n, "$%zu\r\n%s\r\n", strlen(argv[i]), argv[i]);
    if (n >= sizeof out) die("request too long");
    for (size_t off = 0; off < n;) {
        ssize_t w = send(agent, out + off, n - off, MSG_NOSIGNAL);
        if (w <= 0) return NULL;
        off += (size_t)w;
    }
    for (;;) {
        struct rd_resp_reply *r;
        size_t used;
        int rc = rd_resp_reply_parse(inbuf, inlen, &r, &used, NULL);
        if (rc == 0) {
            memmove(inbuf, inbuf + used, inlen - used);
            inlen -= used;
            return r;
        }
        if (rc != -7 /* RD_EAGAIN */ || inlen == sizeof inbuf) die("bad reply from the agent");
        ssize_t got = read(agent, inbuf + inlen, sizeof inbuf - inlen);
        if (got <= 0) return NULL;
        inlen += (size_t)got;
    }
}

static uint64_t info_checksum(void)
{
    const char *argv[] = {"INFO", "ring"};
    struct rd_resp_reply *r = ask(2, argv);
    const char *p = r->type == RD_RESP_BULK ? strstr(r->str, "ring_checksum:") : NULL;
    if (!p) die("INFO has no ring_checksum");
    uint64_t sum = strtoull(p + 14, NULL, 16);
    rd_resp_reply_free(r);
    return sum;
}

static bool compare(struct ringd_client *c, int keys)
{
    for (int attempt = 0; attempt < 50; attempt++, usleep(100000)) {
        uint64_t before = info_checksum();
        if (ringd_client_checksum(c) != before) continue;
        int mismatches = 0;
        char first[200] = "";
        for (int lo = 0; lo < keys; lo += 1000) {
            static char names[1000][32];
            const char *argv[1001];
            int n = 0;
            argv[n++] = "MOWNER";
            for (int k = lo; k < keys && k < lo + 1000; k++, n++) {
                snprintf(names[n - 1], sizeof names[0], "key:%d", k);
                argv[n] = names[n - 1];
            }
            struct rd_resp_reply *r = ask(n, argv);
            if (r->type != RD_RESP_ARRAY || r->nelem != (size_t)n - 1)
                die("MOWNER reply malformed");
            for (int k = 0; k < n - 1; k++) {
                char got[RINGD_CLIENT_NAME_MAX + 1];
                int rc = ringd_client_owner(c, argv[k + 1], strlen(argv[k + 1]), got, sizeof got);
                const char *want = r->elem[k]->type == RD_RESP_BULK ? r->elem[k]->str : "";
                if (rc < 0 || strcmp(got, want) != 0) {
                    if (!mismatches++)
                        snprintf(first, sizeof first, "%s: client %s, agent %s", argv[k + 1], got,
                                 want);
                }
            }
            rd_resp_reply_free(r);
        }
        uint64_t after = info_checksum();
        if (after != before || ringd_client_checksum(c) != before) continue; /* moved meanwhile */
        if (mismatches) {
            printf("disagree keys=%d mismatches=%d first=%s\n", keys, mismatches, first);
            return false;
        }
        printf("agree keys=%d checksum=%016" PRIx64 "\n", keys, before);
        return true;
    }
    printf("disagree the ring never held still with the client's checksum equal to INFO's\n");
    return false;
}

static bool follow(struct ringd_client *c, uint64_t old)
{
    int64_t end = now_ms() + 10000, changed = -1;
    while (now_ms() < end) {
        uint64_t sum = info_checksum();
        if (sum != old && changed < 0) changed = now_ms();
        if (changed >= 0 && ringd_client_checksum(c) == sum) {
            printf("followed ms=%" PRId64 " checksum=%016" PRIx64 "\n", now_ms() - changed, sum);
            return true;
        }
        usleep(5000);
    }
    printf("not followed: INFO %016" PRIx64 ", client %016" PRIx64 "\n", info_checksum(),
           ringd_client_checksum(c));
    return false;
}

int main(int argc, char **argv)
{
    if (argc != 3) die("usage: ring_client_check SOCKET KEYS");
    int keys = atoi(argv[2]);
    struct ringd_client *c;
    char err[256];
    if (ringd_client_open(argv[1], &c, err, sizeof err) < 0) {
        printf("open failed: %s\n", err);
        return 1;
    }
    agent_path = argv[1];
    agent_connect();
    setvbuf(stdout, NULL, _IOLBF, 0);
    char line[256];
    int status = 0;
    while (fgets(line, sizeof line, stdin)) {
        bool ok = true;
        if (strncmp(line, "quit", 4) == 0) break;
        if (strncmp(line, "compare", 7) == 0)
            ok = compare(c, keys);
        else if (strncmp(line, "follow ", 7) == 0)
            ok = follow(c, strtoull(line + 7, NULL, 16));
        else if (strncmp(line, "stats", 5) == 0) {
            struct ringd_client_stats st;
            ringd_client_stats(c, &st);
            printf("refreshes=%" PRIu64 " fetches=%" PRIu64 " failures=%" PRIu64
                   " reconnects=%" PRIu64 " connected=%d\n",
                   st.refreshes, st.fetches, st.failures, st.reconnects, st.connected);
        } else
            printf("unknown command\n");
        if (!ok) status = 1;
    }
    ringd_client_close(c);
    close(agent);
    return status;
}
