/*
 * zones_bench.c — what zone-aware replicas cost: keys moved on a membership change, and
 * lookup time, against the plain clockwise walk on the very same points.
 *
 *   bench_zones [--keys K] [--runs R] [--vnodes V]
 *
 * For each shape (N members in Z zones, member i in zone i % Z, weight 1.0) and n = 3
 * replicas, over K keys "key:<i>":
 *   - how often the plain walk puts the n replicas in fewer than min(n, Z) zones, that is two
 *     of them in one zone while another zone holds none (zone-aware: never);
 *   - for each change (a member joins an existing zone, a member joins a new zone, a member
 *     leaves), the fraction of keys whose replica *set* changed, and the fraction where it
 *     changed beyond what the change forces (the joiner entering the set, or the leaver's
 *     slot refilled): a replica that moved between members that stayed, zone-aware and plain.
 * Zones do not change the points, so "plain" is the same ring with the zones left out.
 *
 * Lookup cost: ns per rd_ring_owners(key, n) call, key hashing included, zone-aware and plain
 * on the same keys, median of R runs, for n = 3 and n = N.
 *
 * Self-contained (no shared bench header); results are folded into a printed checksum so the
 * loops cannot be dropped. Not a test: nothing here asserts a time. Build it in Release.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "ring.h"

#define REPLICAS  3
#define MAX_N     256
#define KEY_BYTES 24
#define MAX_RUNS  101

/* A member list with its own strings: member k is "m<id>" in zone "z<zone>" (or none). */
struct cluster {
    size_t n;
    char names[MAX_N][16];
    char zones[MAX_N][16];
    struct rd_ring_member m[MAX_N];
};

static void cluster_add(struct cluster *c, unsigned id, unsigned zone)
{
    size_t k = c->n++;
    snprintf(c->names[k], sizeof c->names[k], "m%u", id % 100000u);
    snprintf(c->zones[k], sizeof c->zones[k], "z%u", zone % 100000u);
    c->m[k] = (struct rd_ring_member){c->names[k], RD_WEIGHT_ONE, c->zones[k], NULL};
}

static void cluster_fix(struct cluster *c) /* after a copy: point at this copy's strings */
{
    for (size_t k = 0; k < c->n; k++) {
        c->m[k].name = c->names[k];
        c->m[k].zone = c->zones[k];
    }
}

/* The ring of c, with its zones (zoned) or without (the plain walk). */
static struct rd_ring *build(const struct cluster *c, int zoned, uint32_t vnodes)
{
    struct rd_ring_member m[MAX_N];
    memcpy(m, c->m, c->n * sizeof *m);
    if (!zoned)
        for (size_t k = 0; k < c->n; k++)
            m[k].zone = NULL;
    struct rd_ring *r = NULL;
    if (rd_ring_new(m, c->n, vnodes, &r) < 0) {
        fprintf(stderr, "bench_zones: ring build failed\n");
        exit(1);
    }
    return r;
}

/* Replica names of every key: names[key * REPLICAS + j] (pointers into the ring). */
static void replicas(const struct rd_ring *r, char (*keys)[KEY_BYTES], size_t nkeys,
                     const char **names)
{
    uint32_t out[REPLICAS];
    for (size_t i = 0; i < nkeys; i++) {
        size_t got = rd_ring_owners(r, keys[i], strlen(keys[i]), REPLICAS, out);
        for (size_t j = 0; j < REPLICAS; j++)
            names[i * REPLICAS + j] = j < got ? rd_ring_member_name(r, out[j]) : "";
    }
}

static int in_set(const char *const *set, const char *name)
{
    for (size_t j = 0; j < REPLICAS; j++)
        if (strcmp(set[j], name) == 0) return 1;
    return 0;
}

/*
 * Fraction of keys whose replica set differs, and of those whose set changed beyond what the
 * change forces: a joiner entering the set, or a leaver's slot refilled, is one forced new
 * member; any other new member is a replica that moved between members that stayed.
 */
static void moved(const char **a, const char **b, size_t nkeys, const char *changed, double *keys,
                  double *extra)
{
    size_t k = 0, x = 0;
    for (size_t i = 0; i < nkeys; i++) {
        size_t fresh = 0;
        for (size_t j = 0; j < REPLICAS; j++)
            fresh += !in_set(a + i * REPLICAS, b[i * REPLICAS + j]);
        size_t forced =
            (size_t)(in_set(a + i * REPLICAS, changed) ^ in_set(b + i * REPLICAS, changed));
        k += fresh > 0;
        x += fresh > forced;
    }
    *keys = (double)k / (double)nkeys;
    *extra = (double)x / (double)nkeys;
}

/* Fraction of keys whose n replicas span fewer zones than they could: min(n, Z) of the Z. */
static double crowded(const struct cluster *c, const char **names, size_t nkeys, unsigned z)
{
    size_t bad = 0, can = REPLICAS < z ? REPLICAS : z;
    for (size_t i = 0; i < nkeys; i++) {
        const char *zn[REPLICAS];
        for (size_t j = 0; j < REPLICAS; j++) {
            zn[j] = "";
            for (size_t k = 0; k < c->n; k++)
                if (strcmp(c->names[k], names[i * REPLICAS + j]) == 0) zn[j] = c->zones[k];
        }
        size_t distinct = 0;
        for (size_t j = 0; j < REPLICAS; j++) {
            size_t l = 0;
            while (l < j && strcmp(zn[j], zn[l]) != 0)
                l++;
            distinct += l == j;
        }
        bad += distinct < can;
    }
    return (double)bad / (double)nkeys;
}

static uint64_t sink;

static double lookup_ns(const struct rd_ring *r, char (*keys)[KEY_BYTES], const size_t *lens,
                        size_t nkeys, size_t n, int runs)
{
    double t[MAX_RUNS];
    uint32_t out[MAX_N];
    for (int run = 0; run < runs; run++) {
        double t0 = now_ns();
        for (size_t i = 0; i < nkeys; i++)
            sink += rd_ring_owners(r, keys[i], lens[i], n, out) + out[0];
        t[run] = (now_ns() - t0) / (double)nkeys;
    }
    return median(t, runs);
}

int main(int argc, char **argv)
{
    size_t nkeys = 100000;
    int runs = 11;
    uint32_t vnodes = RD_RING_VNODES_DEFAULT;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
            nkeys = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--vnodes") == 0 && i + 1 < argc)
            vnodes = (uint32_t)strtoul(argv[++i], NULL, 10);
        else {
            fprintf(stderr, "usage: bench_zones [--keys K] [--runs R] [--vnodes V]\n");
            return 2;
        }
    }
    if (nkeys == 0 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "bench_zones: --keys >= 1, --runs 1..%d\n", MAX_RUNS);
        return 2;
    }
    char(*keys)[KEY_BYTES] = malloc(nkeys * sizeof *keys);
    size_t *lens = malloc(nkeys * sizeof *lens);
    const char **a = malloc(nkeys * REPLICAS * sizeof *a);
    const char **b = malloc(nkeys * REPLICAS * sizeof *b);
    if (!keys || !lens || !a || !b) return 1;
    for (size_t i = 0; i < nkeys; i++)
        lens[i] = (size_t)snprintf(keys[i], KEY_BYTES, "key:%zu", i);

    static const struct {
        unsigned n, z;
    } shapes[] = {{6, 3}, {12, 2}, {12, 3}, {30, 3}, {30, 5}, {100, 4}};
    printf("n = %d replicas, %zu keys, vnodes %u: fraction of keys whose replica set changed, and "
           "of keys where a replica moved between members that stayed\n\n",
           REPLICAS, nkeys, vnodes);
    printf("| N | Z | change | changed, zone-aware | changed, plain | between stayers, zone-aware "
           "| between stayers, plain | plain: replicas in fewer than min(n, Z) zones |\n");
    printf("|---|---|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        unsigned n = shapes[s].n, z = shapes[s].z;
        struct cluster base = {0};
        for (unsigned i = 0; i < n; i++)
            cluster_add(&base, i, i % z);
        struct rd_ring *bz = build(&base, 1, vnodes), *bp = build(&base, 0, vnodes);
        const char **bza = malloc(nkeys * REPLICAS * sizeof *bza);
        const char **bpa = malloc(nkeys * REPLICAS * sizeof *bpa);
        if (!bza || !bpa) return 1;
        replicas(bz, keys, nkeys, bza);
        replicas(bp, keys, nkeys, bpa);
        double spread = crowded(&base, bpa, nkeys, z), spread_z = crowded(&base, bza, nkeys, z);
        for (int change = 0; change < 3; change++) {
            struct cluster next = base;
            cluster_fix(&next);
            const char *what;
            char changed[16];
            if (change < 2) snprintf(changed, sizeof changed, "m%u", n);
            if (change == 0) {
                cluster_add(&next, n, 0);
                what = "join zone z0";
            } else if (change == 1) {
                cluster_add(&next, n, z);
                what = "join a new zone";
            } else {
                memcpy(changed, next.names[0], sizeof changed);
                next.m[0] = next.m[--next.n]; /* m0 (zone z0) leaves */
                memcpy(next.names[0], next.names[next.n], sizeof next.names[0]);
                memcpy(next.zones[0], next.zones[next.n], sizeof next.zones[0]);
                cluster_fix(&next);
                what = "m0 (z0) leaves";
            }
            struct rd_ring *nz = build(&next, 1, vnodes), *np = build(&next, 0, vnodes);
            double kz, xz, kp, xp;
            replicas(nz, keys, nkeys, a);
            moved(bza, a, nkeys, changed, &kz, &xz);
            replicas(np, keys, nkeys, b);
            moved(bpa, b, nkeys, changed, &kp, &xp);
            char col[32] = "";
            if (change == 0) snprintf(col, sizeof col, "%.3f (zone-aware %.3f)", spread, spread_z);
            printf("| %u | %u | %s | %.3f | %.3f | %.3f | %.3f | %s |\n", n, z, what, kz, kp, xz,
                   xp, col);
            rd_ring_delete(nz);
            rd_ring_delete(np);
        }
        free(bza);
        free(bpa);
        rd_ring_delete(bz);
        rd_ring_delete(bp);
    }

    printf("\nlookup: ns per rd_ring_owners() call, key hashing included, median of %d runs\n\n",
           runs);
    printf("| N | Z | n | zone-aware ns | plain ns | ratio |\n|---|---|---|---|---|---|\n");
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        unsigned n = shapes[s].n, z = shapes[s].z;
        struct cluster c = {0};
        for (unsigned i = 0; i < n; i++)
            cluster_add(&c, i, i % z);
        struct rd_ring *rz = build(&c, 1, vnodes), *rp = build(&c, 0, vnodes);
        size_t ns[2] = {REPLICAS, n};
        for (int k = 0; k < 2; k++) {
            /* interleaved, so drift of the machine hits both alike */
            double tz = lookup_ns(rz, keys, lens, nkeys, ns[k], runs);
            double tp = lookup_ns(rp, keys, lens, nkeys, ns[k], runs);
            printf("| %u | %u | %zu | %.1f | %.1f | %.2f |\n", n, z, ns[k], tz, tp, tz / tp);
        }
        rd_ring_delete(rz);
        rd_ring_delete(rp);
    }
    printf("\nchecksum %llu\n", (unsigned long long)sink);
    free(keys);
    free(lens);
    free(a);
    free(b);
    return 0;
}
