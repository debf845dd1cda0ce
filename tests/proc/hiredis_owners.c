/*
 * hiredis_owners.c — a hiredis application asking for owners, as an application would.
 *
 *     rd_hiredis_owners SOCKET < keys > owners
 *
 *     rd_hiredis_owners subscribe SOCKET MEMBER > messages
 *
 * Connects with hiredis's defaults (RESP2, no handshake), names the connection with
 * CLIENT SETNAME and reads the name back, then pipelines one OWNER per key of stdin (one
 * key per line) and prints each owner on its own line, in order. Exits 0, or 1 with the
 * reason on stderr (an error reply, a reply of the wrong type, a lost connection).
 *
 * With "subscribe": SUBSCRIBE members ring, as a hiredis application does pub/sub (the
 * blocking context's redisGetReply), printing each message's payload on its own line,
 * until both a member event saying MEMBER is alive and a ring event have come (exit 0), or
 * SUBSCRIBE_TIMEOUT_S passed without a message (exit 1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/time.h>

#include <hiredis.h>

/** Most keys read from stdin. */
#define KEYS_MAX 100000
/** Longest key line. */
#define KEY_MAX 256
/** Longest wait for one pub/sub message. */
#define SUBSCRIBE_TIMEOUT_S 40

static void die(const char *what, const char *why)
{
    fprintf(stderr, "hiredis_owners: %s: %s\n", what, why);
    exit(1);
}

static void expect(redisContext *c, redisReply *r, int type, const char *what)
{
    if (!r) die(what, c->errstr);
    if (r->type == REDIS_REPLY_ERROR) die(what, r->str);
    if (r->type != type) die(what, "unexpected reply type");
}

/* subscribe SOCKET MEMBER: see the top of the file. */
static int subscribe(const char *path, const char *member)
{
    redisContext *c = redisConnectUnix(path);
    if (!c || c->err) die("connect", c ? c->errstr : "out of memory");
    redisSetTimeout(c, (struct timeval){.tv_sec = SUBSCRIBE_TIMEOUT_S});
    redisReply *r = redisCommand(c, "SUBSCRIBE members ring");
    for (int i = 0; i < 2; i++) { /* one confirmation per channel */
        if (i == 1 && redisGetReply(c, (void **)&r) != REDIS_OK) die("SUBSCRIBE", c->errstr);
        expect(c, r, REDIS_REPLY_ARRAY, "SUBSCRIBE");
        if (r->elements != 3 || strcmp(r->element[0]->str, "subscribe") != 0)
            die("SUBSCRIBE", "not a confirmation");
        freeReplyObject(r);
    }
    char alive[KEY_MAX + 64];
    snprintf(alive, sizeof alive, "\"type\":\"member\",\"member\":\"%s\",\"status\":\"alive\"",
             member);
    int got_member = 0, got_ring = 0;
    while (!got_member || !got_ring) {
        if (redisGetReply(c, (void **)&r) != REDIS_OK) die("message", c->errstr);
        expect(c, r, REDIS_REPLY_ARRAY, "message");
        if (r->elements != 3 || strcmp(r->element[0]->str, "message") != 0)
            die("message", "not [message, channel, payload]");
        const char *payload = r->element[2]->str;
        printf("%s\n", payload);
        fflush(stdout);
        got_member |= strstr(payload, alive) != NULL;
        got_ring |= strstr(payload, "\"type\":\"ring\"") != NULL;
        freeReplyObject(r);
    }
    redisFree(c);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "subscribe") == 0) return subscribe(argv[2], argv[3]);
    if (argc != 2) {
        fprintf(stderr, "usage: rd_hiredis_owners SOCKET < keys\n"
                        "       rd_hiredis_owners subscribe SOCKET MEMBER\n");
        return 2;
    }
    redisContext *c = redisConnectUnix(argv[1]);
    if (!c || c->err) die("connect", c ? c->errstr : "out of memory");
    redisReply *r = redisCommand(c, "CLIENT SETNAME hiredis-test");
    expect(c, r, REDIS_REPLY_STATUS, "CLIENT SETNAME");
    freeReplyObject(r);
    r = redisCommand(c, "CLIENT GETNAME");
    expect(c, r, REDIS_REPLY_STRING, "CLIENT GETNAME");
    if (strcmp(r->str, "hiredis-test") != 0) die("CLIENT GETNAME", r->str);
    freeReplyObject(r);
    char line[KEY_MAX + 2];
    size_t n = 0;
    while (n < KEYS_MAX && fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        redisAppendCommand(c, "OWNER %s", line);
        n++;
    }
    for (size_t i = 0; i < n; i++) {
        void *reply;
        if (redisGetReply(c, &reply) != REDIS_OK) die("OWNER", c->errstr);
        expect(c, reply, REDIS_REPLY_STRING, "OWNER");
        printf("%s\n", ((redisReply *)reply)->str);
        freeReplyObject(reply);
    }
    redisFree(c);
    return 0;
}
