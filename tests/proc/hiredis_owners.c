/*
 * hiredis_owners.c — a hiredis application asking for owners, as an application would.
 *
 *     rd_hiredis_owners SOCKET < keys > owners
 *
 * Connects with hiredis's defaults (RESP2, no handshake), names the connection with
 * CLIENT SETNAME and reads the name back, then pipelines one OWNER per key of stdin (one
 * key per line) and prints each owner on its own line, in order. Exits 0, or 1 with the
 * reason on stderr (an error reply, a reply of the wrong type, a lost connection).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

/** Most keys read from stdin. */
#define KEYS_MAX 100000
/** Longest key line. */
#define KEY_MAX 256

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

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: rd_hiredis_owners SOCKET < keys\n");
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
