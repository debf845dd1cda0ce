/*
 * ketama_libmemcached.c — ringd's ketama mode against libmemcached itself.
 *
 * For cluster sizes 1, 2, 3, 10, 50 and 100, with equal and unequal weights, libmemcached is
 * given the same servers and weights as a ringd ketama ring (rd_ring_new_ketama), and for
 * 100,000 keys of assorted lengths and bytes libmemcached's server for the key
 * (memcached_generate_hash) must be ringd's owner (rd_ring_owner): not one mismatch.
 *
 * Each member's identity is how an application would name the server to libmemcached,
 * "host:port" or a bare host; this program turns it into memcached_server_add_with_weight()'s
 * host and port the way a person reads it (split at the last ':' before a port number), and
 * adds the servers in member name order, which is ringd's tie order (PROTOCOL.md, "Ketama
 * mode"). The configurations:
 *   consistent: MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA with MD5 key hashing. With every
 *               weight 1 libmemcached builds its plain continuum (100 points a server);
 *               with some weight above 1 it switches to the weighted one by itself.
 *   weighted:   MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED (MD5 keys and points, always the weighted
 *               continuum). With unequal weights it is the same ring; with every weight 1 it
 *               matches a ringd ring whose members all have weight 2 (only shares count).
 * Controls that must fail, so that agreement means something: the same keys against a
 * ringd-mode ring of the same members, and against a ketama ring whose identities keep
 * ":11211" (which libmemcached never hashes), each disagree on over a fifth of the keys.
 *
 * Prints one line per case; exits 1 on any mismatch.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libmemcached/memcached.h>

#include "rd_err.h"
#include "ring.h"

#define NKEYS      100000
#define MAX_SERVER 100
#define KEY_MAX    48

enum config { CONSISTENT, WEIGHTED };

struct cluster {
    size_t n;
    char names[MAX_SERVER][RD_NAME_MAX + 1];
    char ids[MAX_SERVER][64];
    uint32_t weight[MAX_SERVER]; /* whole */
    struct rd_ring_member m[MAX_SERVER];
};

static uint64_t rng_state = 0x9e3779b97f4a7c15u;

static uint64_t rng(void)
{
    uint64_t x = rng_state;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return rng_state = x;
}

/* The identity of member k: addresses on the default port and on others, host names, a bare
 * IPv6 address, the member's own name (no ketama tag), and a host that itself ends in a port. */
static void identity_of(char *buf, size_t len, size_t k, const char *name)
{
    switch (k % 7) {
    case 0:
        snprintf(buf, len, "10.0.%zu.%zu:11211", k / 200, k % 200 + 1);
        break;
    case 1:
        snprintf(buf, len, "10.1.0.%zu:11212", k + 1);
        break;
    case 2:
        snprintf(buf, len, "cache%zu.example.net:22122", k);
        break;
    case 3:
        snprintf(buf, len, "%s", name);
        break;
    case 4:
        snprintf(buf, len, "fd00::%zx", k + 1);
        break;
    case 5:
        snprintf(buf, len, "mc%zu.example.net", k);
        break;
    default:
        snprintf(buf, len, "h%zu:11211:11211", k);
        break;
    }
}

/* weights: 0 every one 1, else 1 + rng % spread (spread 1: all `equal`) */
static void cluster_make(struct cluster *c, size_t n, uint32_t spread, uint32_t equal)
{
    c->n = n;
    for (size_t k = 0; k < n; k++) {
        snprintf(c->names[k], sizeof c->names[k], "m%03zu", k);
        identity_of(c->ids[k], sizeof c->ids[k], k, c->names[k]);
        c->weight[k] = spread ? 1 + (uint32_t)(rng() % spread) : equal;
        c->m[k] =
            (struct rd_ring_member){c->names[k], c->weight[k] * RD_WEIGHT_ONE, NULL, c->ids[k]};
    }
}

/* "host:port" with a port number after the last ':', else a bare host on 11211. */
static void split_server(const char *id, char *host, size_t hlen, in_port_t *port)
{
    const char *colon = strrchr(id, ':');
    char *end = NULL;
    unsigned long p =
        colon && colon[1] >= '1' && colon[1] <= '9' ? strtoul(colon + 1, &end, 10) : 0;
    if (colon && colon != id && end && *end == '\0' && p <= 65535) {
        snprintf(host, hlen, "%.*s", (int)(colon - id), id);
        *port = (in_port_t)p;
    } else {
        snprintf(host, hlen, "%s", id);
        *port = 11211;
    }
}

static memcached_st *libmemcached_of(const struct cluster *c, enum config cfg, uint32_t weight_over)
{
    memcached_st *mc = memcached_create(NULL);
    if (!mc) return NULL;
    if (cfg == CONSISTENT) {
        memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                               MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA);
        memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_HASH, MEMCACHED_HASH_MD5);
    } else {
        memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED, 1);
    }
    for (size_t k = 0; k < c->n; k++) {
        char host[128];
        in_port_t port;
        split_server(c->ids[k], host, sizeof host, &port);
        uint32_t w = weight_over ? weight_over : c->weight[k];
        memcached_return_t rc = memcached_server_add_with_weight(mc, host, port, w);
        if (rc != MEMCACHED_SUCCESS) {
            fprintf(stderr, "memcached_server_add_with_weight(%s, %u): %s\n", host, port,
                    memcached_strerror(mc, rc));
            memcached_free(mc);
            return NULL;
        }
    }
    return mc;
}

/* A key of 1..KEY_MAX bytes: printable text mostly, any byte value sometimes. */
static size_t key_make(char *buf, size_t i)
{
    if (i % 3 == 0) return (size_t)snprintf(buf, KEY_MAX, "user:%zu", i);
    size_t len = 1 + rng() % KEY_MAX;
    for (size_t k = 0; k < len; k++)
        buf[k] = i % 3 == 1 ? (char)(0x21 + rng() % 94) : (char)(rng() & 0xff);
    return len;
}

/* Keys whose libmemcached server and ringd owner differ (by name), of NKEYS. */
static size_t mismatches(const memcached_st *mc, const struct cluster *c, const struct rd_ring *r)
{
    size_t bad = 0;
    char key[KEY_MAX];
    for (size_t i = 0; i < NKEYS; i++) {
        size_t len = key_make(key, i);
        uint32_t s = memcached_generate_hash(mc, key, len);
        int o = rd_ring_owner(r, key, len);
        if (s >= c->n || o < 0 || strcmp(c->names[s], rd_ring_member_name(r, (size_t)o)) != 0)
            bad++;
    }
    return bad;
}

static int failures;

/* One case: ringd's ketama ring of c (member weights times ring_weight_factor) against
 * libmemcached in configuration cfg (server weights weight_over, or the members'). */
static void check(const char *label, const struct cluster *c, enum config cfg, uint32_t weight_over,
                  uint32_t ring_weight_factor)
{
    struct rd_ring_member m[MAX_SERVER];
    for (size_t k = 0; k < c->n; k++) {
        m[k] = c->m[k];
        m[k].weight *= ring_weight_factor;
    }
    struct rd_ring *r;
    int rc = rd_ring_new_ketama(m, c->n, &r);
    memcached_st *mc = libmemcached_of(c, cfg, weight_over);
    if (rc < 0 || !mc) {
        printf("FAIL %-34s n=%-3zu cannot build: %s\n", label, c->n,
               rc < 0 ? rd_strerror(rc) : "libmemcached");
        failures++;
        rd_ring_delete(r);
        if (mc) memcached_free(mc);
        return;
    }
    bool lm_weighted = memcached_behavior_get(mc, MEMCACHED_BEHAVIOR_KETAMA_WEIGHTED) != 0;
    size_t bad = mismatches(mc, c, r);
    printf("%s %-34s n=%-3zu libmemcached_weighted=%d points=%-6zu keys=%d mismatches=%zu\n",
           bad ? "FAIL" : "ok  ", label, c->n, lm_weighted, rd_ring_point_count(r), NKEYS, bad);
    if (bad) failures++;
    rd_ring_delete(r);
    memcached_free(mc);
}

/* A control that must disagree on over a fifth of the keys (n >= 2): a ring libmemcached does not
 * build. */
static void control(const char *label, const struct cluster *c, bool ringd_mode)
{
    struct rd_ring_member m[MAX_SERVER];
    char kept[MAX_SERVER][160];
    for (size_t k = 0; k < c->n; k++) {
        m[k] = c->m[k];
        if (!ringd_mode) { /* keep the default port in what is hashed */
            char host[128];
            in_port_t port;
            split_server(c->ids[k], host, sizeof host, &port);
            if (port == 11211) { /* "h:11211:11211" is hashed as "h:11211" */
                snprintf(kept[k], sizeof kept[k], "%s:11211:11211", host);
                m[k].identity = kept[k];
            }
        }
    }
    struct rd_ring *r;
    int rc = ringd_mode ? rd_ring_new(m, c->n, RD_RING_VNODES_DEFAULT, &r)
                        : rd_ring_new_ketama(m, c->n, &r);
    memcached_st *mc = libmemcached_of(c, CONSISTENT, 0);
    size_t bad = rc == 0 && mc ? mismatches(mc, c, r) : 0;
    bool ok = bad > NKEYS / 5;
    printf("%s %-34s n=%-3zu mismatches=%zu (a control: over a fifth must differ)\n",
           ok ? "ok  " : "FAIL", label, c->n, bad);
    if (!ok) failures++;
    rd_ring_delete(r);
    if (mc) memcached_free(mc);
}

int main(void)
{
    static const size_t sizes[] = {1, 2, 3, 10, 50, 100};
    static struct cluster c;
    printf("libmemcached %s, %d keys a case\n", memcached_lib_version(), NKEYS);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        cluster_make(&c, n, 0, 1);
        check("consistent, every weight 1", &c, CONSISTENT, 0, 1);
        check("weighted, every weight 1 (ring: 2)", &c, WEIGHTED, 0, 2);
        cluster_make(&c, n, 0, 3);
        check("consistent, every weight 3", &c, CONSISTENT, 0, 1);
        cluster_make(&c, n, 5, 0);
        check("consistent, weights 1..5", &c, CONSISTENT, 0, 1);
        check("weighted, weights 1..5", &c, WEIGHTED, 0, 1);
        cluster_make(&c, n, 100, 0);
        check("consistent, weights 1..100", &c, CONSISTENT, 0, 1);
        if (n >= 2) {
            cluster_make(&c, n, 0, 1);
            control("control: ringd mode", &c, true);
            control("control: \":11211\" hashed", &c, false);
        }
    }
    printf("%s\n", failures ? "FAILED" : "every key agrees");
    return failures ? 1 : 0;
}
