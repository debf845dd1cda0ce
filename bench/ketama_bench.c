/*
 * ketama_bench.c — what a lookup costs in ketama mode, beside ringd mode and libmemcached.
 *
 *   bench_ketama [--keys N] [--runs R]
 *
 * For 10, 50 and 100 servers at weight 1 and at weights 1..5: ns per owner lookup, the
 * key's hash included, of
 *   ketama     rd_ring_owner on an rd_ring_new_ketama ring (MD5 of the key, then the ring's
 *              prefix-table search over positions v << 32);
 *   ringd      rd_ring_owner on an rd_ring_new ring of the same members at the default
 *              vnodes (XXH3 of the key);
 *   libmemc    libmemcached's memcached_generate_hash on the same servers (its MD5 and its
 *              binary search over the continuum), the baseline.
 * Each figure is the median of R runs over the same N keys (20-byte "user:NNNNNNNN..." keys);
 * the ratios are against libmemcached measured in the same run. 100 servers is as far as
 * libmemcached goes: Debian's build aborts on more in a consistent distribution (its
 * continuum assertion, 100 servers x 100 points). Run a Release build:
 * `cmake --build BUILD --target bench_ketama`.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libmemcached/memcached.h>

#include "bench_util.h"
#include "ring.h"

#define KEY_LEN    20
#define MAX_RUNS   31
#define MAX_SERVER 100

static volatile uint64_t sink; /* keeps the lookups from being optimized away */

static double time_ring(const struct rd_ring *r, const char *keys, size_t nkeys)
{
    uint64_t acc = 0;
    double t0 = now_ns();
    for (size_t i = 0; i < nkeys; i++)
        acc += (uint64_t)rd_ring_owner(r, keys + i * KEY_LEN, KEY_LEN);
    double t = (now_ns() - t0) / (double)nkeys;
    sink += acc;
    return t;
}

static double time_libmemcached(const memcached_st *mc, const char *keys, size_t nkeys)
{
    uint64_t acc = 0;
    double t0 = now_ns();
    for (size_t i = 0; i < nkeys; i++)
        acc += memcached_generate_hash(mc, keys + i * KEY_LEN, KEY_LEN);
    double t = (now_ns() - t0) / (double)nkeys;
    sink += acc;
    return t;
}

int main(int argc, char **argv)
{
    size_t nkeys = 200000;
    int runs = 11;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--keys") == 0) nkeys = strtoul(argv[i + 1], NULL, 10);
        if (strcmp(argv[i], "--runs") == 0) runs = atoi(argv[i + 1]);
    }
    if (nkeys == 0 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "usage: %s [--keys N] [--runs 1..%d]\n", argv[0], MAX_RUNS);
        return 2;
    }
    char *keys = malloc(nkeys * KEY_LEN);
    static char names[MAX_SERVER][32], ids[MAX_SERVER][64];
    static struct rd_ring_member m[MAX_SERVER];
    if (!keys) return 1;
    for (size_t i = 0; i < nkeys; i++) {
        char buf[KEY_LEN + 16];
        snprintf(buf, sizeof buf, "user:%015zu", i * 2654435761u % 1000000007u);
        memcpy(keys + i * KEY_LEN, buf, KEY_LEN);
    }
    printf("lookup: ns per owner(key), hash included, %zu keys of %d bytes, median of %d runs\n",
           nkeys, KEY_LEN, runs);
    printf("%-8s %-8s %9s %9s %9s %13s %12s\n", "servers", "weights", "ketama", "ringd", "libmemc",
           "ketama/libm", "ringd/libm");
    static const size_t sizes[] = {10, 50, 100};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        for (int weighted = 0; weighted < 2; weighted++) {
            size_t n = sizes[s];
            memcached_st *mc = memcached_create(NULL);
            memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_DISTRIBUTION,
                                   MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA);
            memcached_behavior_set(mc, MEMCACHED_BEHAVIOR_HASH, MEMCACHED_HASH_MD5);
            /* one list pushed at once: adding servers one by one rebuilds the continuum
             * each time */
            memcached_server_list_st list = NULL;
            memcached_return_t rc;
            for (size_t k = 0; k < n; k++) {
                snprintf(names[k], sizeof names[k], "m%04zu", k);
                snprintf(ids[k], sizeof ids[k], "10.0.%zu.%zu:11211", k / 250, k % 250 + 1);
                uint32_t w = weighted ? 1 + (uint32_t)(k * 7 % 5) : 1;
                m[k] = (struct rd_ring_member){names[k], w * RD_WEIGHT_ONE, NULL, ids[k]};
                char host[64];
                snprintf(host, sizeof host, "10.0.%zu.%zu", k / 250, k % 250 + 1);
                list = memcached_server_list_append_with_weight(list, host, 11211, w, &rc);
            }
            memcached_server_push(mc, list);
            memcached_server_list_free(list);
            struct rd_ring *kr, *rr;
            if (rd_ring_new_ketama(m, n, &kr) < 0 ||
                rd_ring_new(m, n, RD_RING_VNODES_DEFAULT, &rr) < 0) {
                fprintf(stderr, "ring build failed\n");
                return 1;
            }
            double tk[MAX_RUNS], tr[MAX_RUNS], tl[MAX_RUNS];
            for (int r = 0; r < runs; r++) {
                tk[r] = time_ring(kr, keys, nkeys);
                tr[r] = time_ring(rr, keys, nkeys);
                tl[r] = time_libmemcached(mc, keys, nkeys);
            }
            double mk = median(tk, runs), mr = median(tr, runs), ml = median(tl, runs);
            printf("%-8zu %-8s %9.1f %9.1f %9.1f %13.2f %12.2f\n", n, weighted ? "1..5" : "1", mk,
                   mr, ml, mk / ml, mr / ml);
            rd_ring_delete(kr);
            rd_ring_delete(rr);
            memcached_free(mc);
        }
    }
    free(keys);
    return 0;
}
