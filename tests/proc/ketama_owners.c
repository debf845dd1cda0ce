/*
 * ketama_owners.c — the owner of each key as libmemcached's ketama places it, for
 * tests/proc/test_ketama.sh to hold against what the agents answer.
 *
 *   rd_ketama_owners NAME,WEIGHT,SERVER ... < keys
 *
 * SERVER is how the member's ketama tag (or its name) names a memcached server, "host:port"
 * or a bare host; it is split at the last ':' before a port number, as a person reads it.
 * The servers are added to libmemcached in name order (MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA,
 * MD5 keys, each server with its weight); for each key on standard input, one a line, the
 * name of libmemcached's server is printed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libmemcached/memcached.h>

struct server {
    char name[128];
    char host[256];
    in_port_t port;
    unsigned long weight;
};

static int by_name(const void *a, const void *b)
{
    return strcmp(((const struct server *)a)->name, ((const struct server *)b)->name);
}

static int parse(const char *arg, struct server *s)
{
    const char *c1 = strchr(arg, ','), *c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    if (!c1 || !c2 || (size_t)(c1 - arg) >= sizeof s->name || strlen(c2 + 1) >= sizeof s->host)
        return -1;
    snprintf(s->name, sizeof s->name, "%.*s", (int)(c1 - arg), arg);
    s->weight = strtoul(c1 + 1, NULL, 10);
    const char *id = c2 + 1, *colon = strrchr(id, ':');
    char *end = NULL;
    unsigned long p =
        colon && colon[1] >= '1' && colon[1] <= '9' ? strtoul(colon + 1, &end, 10) : 0;
    if (colon && colon != id && end && *end == '\0' && p <= 65535) {
        snprintf(s->host, sizeof s->host, "%.*s", (int)(colon - id), id);
        s->port = (in_port_t)p;
    } else {
        snprintf(s->host, sizeof s->host, "%s", id);
        s->port = 11211;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 257) {
        fprintf(stderr, "usage: %s NAME,WEIGHT,SERVER ... < keys\n", argv[0]);
        return 2;
    }
    static struct server s[256];
    size_t n = (size_t)argc - 1;
    for (size_t k = 0; k < n; k++) {
        if (parse(argv[k + 1], &s[k]) < 0) {
            fprintf(stderr, "bad server '%s'\n", argv[k + 1]);
            return 2;
        }
    }
    qsort(s, n, sizeof s[0], by_name);
    memcached_st *mc = memcached_create(NULL);
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                           MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA);
    memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_HASH, MEMCACHED_HASH_MD5);
    for (size_t k = 0; k < n; k++) {
        if (memcached_server_add_with_weight(mc, s[k].host, s[k].port, (uint32_t)s[k].weight) !=
            MEMCACHED_SUCCESS) {
            fprintf(stderr, "libmemcached refused %s:%u\n", s[k].host, s[k].port);
            return 1;
        }
    }
    char line[1024];
    while (fgets(line, sizeof line, stdin)) {
        size_t len = strcspn(line, "\n");
        printf("%s\n", s[memcached_generate_hash(mc, line, len)].name);
    }
    memcached_free(mc);
    return 0;
}
