/*
 * pipeline.c — an application's view of the query socket, through hiredis.
 *
 *     rd_pipeline_check SOCKET [REQUESTS]
 *
 * Rebuilds the ring in-process from what the agent says (MEMBERS: the alive and suspect
 * members with their weights; INFO: vnodes), checks that its checksum is the agent's
 * ring_checksum, then pipelines REQUESTS (default 10000) OWNER / MOWNER / OWNERS requests
 * in one go, with keys that include binary bytes (CR, LF, NUL), and compares every answer
 * with the in-process ring. This is the promise that matters to users: any Redis client,
 * pipelining, gets exactly the placement the documented ring construction gives.
 * Exits 0 when every answer matches, 1 otherwise (2 on bad usage). If the ring changes
 * during the run (a member joined or died), it says so and exits 1: rerun on a quiet
 * cluster.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis.h>

#include "config.h"
#include "ring.h"

#define MOWNER_KEYS 4
#define OWNERS_N    3

static redisReply *command(redisContext *c, const char *cmd)
{
    redisReply *r = redisCommand(c, cmd);
    if (!r) {
        fprintf(stderr, "pipeline: %s: %s\n", cmd, c->errstr);
        exit(1);
    }
    if (r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "pipeline: %s: %s\n", cmd, r->str);
        exit(1);
    }
    return r;
}

/* Value of "field:" in INFO text, or NULL. */
static const char *info_field(const char *info, const char *field, char *out, size_t len)
{
    size_t flen = strlen(field);
    for (const char *p = info; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, field, flen) == 0 && p[flen] == ':') {
            size_t n = strcspn(p + flen + 1, "\r\n");
            if (n >= len) n = len - 1;
            memcpy(out, p + flen + 1, n);
            out[n] = '\0';
            return out;
        }
    }
    return NULL;
}

static uint64_t ring_checksum_of(redisContext *c)
{
    redisReply *r = command(c, "INFO");
    char v[64];
    if (r->type != REDIS_REPLY_STRING || !info_field(r->str, "ring_checksum", v, sizeof v)) {
        fprintf(stderr, "pipeline: INFO has no ring_checksum\n");
        exit(1);
    }
    freeReplyObject(r);
    return strtoull(v, NULL, 16);
}

static const char *pair(const redisReply *m, const char *key)
{
    for (size_t i = 0; i + 1 < m->elements; i += 2)
        if (m->element[i]->type == REDIS_REPLY_STRING && strcmp(m->element[i]->str, key) == 0)
            return m->element[i + 1]->type == REDIS_REPLY_STRING ? m->element[i + 1]->str : "";
    return "";
}

/* Key number i: printable for most, binary (CR, LF, NUL, high bytes) for every 7th. */
static size_t make_key(size_t i, char *buf)
{
    if (i % 7 == 0) {
        size_t n = (size_t)snprintf(buf, 32, "bin%zu", i);
        buf[n++] = '\r';
        buf[n++] = '\n';
        buf[n++] = '\0';
        buf[n++] = (char)(0x80 | (i & 0x7f));
        return n;
    }
    return (size_t)snprintf(buf, 32, "user:%zu", i * 2654435761u % 1000003u);
}

static bool same_name(const redisReply *r, const struct rd_ring *ring, int idx)
{
    if (idx < 0) return r->type == REDIS_REPLY_NIL;
    return r->type == REDIS_REPLY_STRING &&
           strcmp(r->str, rd_ring_member_name(ring, (size_t)idx)) == 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: rd_pipeline_check SOCKET [REQUESTS]\n");
        return 2;
    }
    size_t requests = argc == 3 ? (size_t)strtoul(argv[2], NULL, 10) : 10000;
    if (requests == 0) {
        fprintf(stderr, "pipeline: REQUESTS must be a positive number\n");
        return 2;
    }
    redisContext *c = redisConnectUnix(argv[1]);
    if (!c || c->err) {
        fprintf(stderr, "pipeline: cannot connect to %s: %s\n", argv[1],
                c ? c->errstr : "out of memory");
        return 1;
    }

    /* The ring as the documented construction builds it from the agent's member list. */
    redisReply *info = command(c, "INFO");
    char v[64];
    if (!info_field(info->str, "vnodes", v, sizeof v)) {
        fprintf(stderr, "pipeline: INFO has no vnodes\n");
        return 1;
    }
    uint32_t vnodes = (uint32_t)strtoul(v, NULL, 10);
    freeReplyObject(info);
    uint64_t before = ring_checksum_of(c);
    redisReply *members = command(c, "MEMBERS");
    struct rd_ring_member *rm = calloc(members->elements + 1, sizeof *rm);
    size_t n = 0;
    for (size_t i = 0; i < members->elements; i++) {
        const redisReply *m = members->element[i];
        const char *status = pair(m, "status");
        if (strcmp(status, "alive") != 0 && strcmp(status, "suspect") != 0) continue;
        rm[n].name = pair(m, "name");
        if (rd_weight_parse(pair(m, "weight"), &rm[n].weight) < 0) {
            fprintf(stderr, "pipeline: bad weight '%s' for %s\n", pair(m, "weight"), rm[n].name);
            return 1;
        }
        n++;
    }
    struct rd_ring *ring;
    if (rd_ring_new(rm, n, vnodes, &ring) < 0) {
        fprintf(stderr, "pipeline: cannot build the ring from MEMBERS\n");
        return 1;
    }
    if (rd_ring_checksum(ring) != before) {
        fprintf(stderr,
                "pipeline: ring from MEMBERS has checksum %016" PRIx64 ", agent says %016" PRIx64
                "\n",
                rd_ring_checksum(ring), before);
        return 1;
    }

    /* Everything in one pipeline, then every answer. */
    char keys[MOWNER_KEYS][32];
    size_t lens[MOWNER_KEYS + 1];
    const char *args[MOWNER_KEYS + 1];
    for (size_t i = 0; i < requests; i++) {
        for (size_t k = 0; k < MOWNER_KEYS; k++) {
            lens[k + 1] = make_key(i * MOWNER_KEYS + k, keys[k]);
            args[k + 1] = keys[k];
        }
        switch (i % 3) {
        case 0:
            args[0] = "OWNER";
            lens[0] = 5;
            redisAppendCommandArgv(c, 2, args, lens);
            break;
        case 1:
            args[0] = "MOWNER";
            lens[0] = 6;
            redisAppendCommandArgv(c, MOWNER_KEYS + 1, args, lens);
            break;
        default:
            args[0] = "OWNERS";
            lens[0] = 6;
            args[2] = "3";
            lens[2] = 1;
            redisAppendCommandArgv(c, 3, args, lens);
            break;
        }
    }
    size_t bad = 0;
    uint32_t want[OWNERS_N];
    for (size_t i = 0; i < requests; i++) {
        redisReply *r;
        if (redisGetReply(c, (void **)&r) != REDIS_OK) {
            fprintf(stderr, "pipeline: reply %zu: %s\n", i, c->errstr);
            return 1;
        }
        for (size_t k = 0; k < MOWNER_KEYS; k++)
            lens[k] = make_key(i * MOWNER_KEYS + k, keys[k]);
        bool ok;
        switch (i % 3) {
        case 0:
            ok = same_name(r, ring, rd_ring_owner(ring, keys[0], lens[0]));
            break;
        case 1:
            ok = r->type == REDIS_REPLY_ARRAY && r->elements == MOWNER_KEYS;
            for (size_t k = 0; ok && k < MOWNER_KEYS; k++)
                ok = same_name(r->element[k], ring, rd_ring_owner(ring, keys[k], lens[k]));
            break;
        default: {
            size_t got = rd_ring_owners(ring, keys[0], lens[0], OWNERS_N, want);
            ok = r->type == REDIS_REPLY_ARRAY && r->elements == got;
            for (size_t k = 0; ok && k < got; k++)
                ok = same_name(r->element[k], ring, (int)want[k]);
            break;
        }
        }
        if (!ok && bad++ < 5)
            fprintf(stderr, "pipeline: reply %zu differs from the in-process ring\n", i);
        freeReplyObject(r);
    }
    uint64_t after = ring_checksum_of(c);
    if (after != before) {
        fprintf(stderr, "pipeline: the ring changed during the run; rerun on a quiet cluster\n");
        return 1;
    }
    printf("pipeline: %zu requests, %zu mismatches, ring of %zu members, checksum %016" PRIx64 "\n",
           requests, bad, rd_ring_member_count(ring), before);
    rd_ring_delete(ring);
    free(rm);
    freeReplyObject(members);
    redisFree(c);
    return bad == 0 ? 0 : 1;
}
