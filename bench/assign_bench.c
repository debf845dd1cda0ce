/*
 * assign_bench.c — bounded-load assignment (ASSIGN) against plain owners (MOWNER): balance,
 * movement on a membership change, and cost per call.
 *
 *   bench_assign [--seeds S] [--runs R]
 *
 * For each seed, a ring of 50 members of weight 1.0 at RD_RING_VNODES_DEFAULT points, names
 * and keys made from the seed ("s<seed>-node-<i>", "s<seed>:shard:<i>"), and key sets of
 * 1,000 and 10,000 keys. Each method places the set on that ring, on the ring with a 51st
 * member (a join) and on the ring without member (seed x 7) mod 50 (a leave):
 *   - max/mean: the busiest member's keys over the mean (keys / 50);
 *   - moved: the fraction of keys whose member differs from the 50-member placement. The
 *     least any placement can move is about 1/51 = 0.0196 on the join and the leaver's share,
 *     about 0.02, on the leave.
 * Medians over the seeds (the worst max/mean too). Then the cost of one call on the
 * 50-member ring: rd_assign() of the whole set against a loop of rd_ring_owner() over the
 * same keys (what MOWNER does), median of R runs, and their ratio, measured in the same run.
 *
 * Results are folded into a checksum that is printed, so the compiler cannot drop the work.
 * Not a test: nothing here asserts a number. Build it in Release without sanitizers.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assign.h"
#include "bench_util.h"
#include "ring.h"

#define MEMBERS    50
#define KEYS_MAX   10000
#define KEY_STRIDE 32
#define SEEDS_MAX  101
#define RUNS_MAX   101
#define NMETHODS   4
#define NSIZES     2

static const uint32_t method_c[NMETHODS] = {0, 1100, 1250, 2000}; /* 0: plain owners */
static const char *const method_name[NMETHODS] = {"MOWNER", "ASSIGN 1.1", "ASSIGN 1.25",
                                                  "ASSIGN 2"};
static const size_t sizes[NSIZES] = {1000, 10000};

static uint64_t sink;

static double worst(const double *v, int n)
{
    double w = v[0];
    for (int i = 1; i < n; i++)
        if (v[i] > w) w = v[i];
    return w;
}

/* A ring of members 0..n-1 of seed's names, leaving out `skip` (n: none). */
static struct rd_ring *make_ring(unsigned seed, size_t n, size_t skip)
{
    static char names[MEMBERS + 1][RD_NAME_MAX + 1];
    struct rd_ring_member m[MEMBERS + 1];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == skip) continue;
        snprintf(names[i], sizeof names[i], "s%u-node-%zu", seed, i);
        m[k++] = (struct rd_ring_member){names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    struct rd_ring *r = NULL;
    if (rd_ring_new(m, k, RD_RING_VNODES_DEFAULT, &r) < 0) {
        fprintf(stderr, "bench_assign: rd_ring_new failed\n");
        exit(1);
    }
    return r;
}

/* Places the keys with a method; writes member names (pointers into the ring) to out. */
static void place(const struct rd_ring *r, int method, const struct rd_assign_key *keys, size_t n,
                  const char **out)
{
    static int idx[KEYS_MAX];
    if (method_c[method] == 0) {
        for (size_t i = 0; i < n; i++)
            idx[i] = rd_ring_owner(r, keys[i].ptr, keys[i].len);
    } else if (rd_assign(r, method_c[method], keys, n, idx) < 0) {
        fprintf(stderr, "bench_assign: rd_assign failed\n");
        exit(1);
    }
    for (size_t i = 0; i < n; i++)
        out[i] = rd_ring_member_name(r, (size_t)idx[i]);
}

static double max_over_mean(const struct rd_ring *r, const char **who, size_t n)
{
    size_t load[MEMBERS + 1] = {0}, members = rd_ring_member_count(r), most = 0;
    for (size_t i = 0; i < n; i++)
        for (size_t m = 0; m < members; m++)
            if (who[i] == rd_ring_member_name(r, m)) {
                load[m]++;
                break;
            }
    for (size_t m = 0; m < members; m++)
        if (load[m] > most) most = load[m];
    return (double)most / ((double)n / (double)members);
}

static double moved(const char **a, const char **b, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += strcmp(a[i], b[i]) != 0;
    return (double)k / (double)n;
}

int main(int argc, char **argv)
{
    int seeds = 7, runs = 21;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seeds") == 0 && i + 1 < argc)
            seeds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_assign [--seeds S] [--runs R]\n");
            return 2;
        }
    }
    if (seeds < 1 || seeds > SEEDS_MAX || runs < 1 || runs > RUNS_MAX) {
        fprintf(stderr, "bench_assign: seeds 1..%d, runs 1..%d\n", SEEDS_MAX, RUNS_MAX);
        return 2;
    }

    static char text[KEYS_MAX][KEY_STRIDE];
    static struct rd_assign_key keys[KEYS_MAX];
    static const char *base[KEYS_MAX], *join[KEYS_MAX], *leave[KEYS_MAX];
    static double balance[NMETHODS][NSIZES][SEEDS_MAX], mv_join[NMETHODS][NSIZES][SEEDS_MAX],
        mv_leave[NMETHODS][NSIZES][SEEDS_MAX], cost[NMETHODS][NSIZES][RUNS_MAX];

    for (int s = 0; s < seeds; s++) {
        unsigned seed = (unsigned)s + 1;
        for (size_t i = 0; i < KEYS_MAX; i++) {
            int len = snprintf(text[i], KEY_STRIDE, "s%u:shard:%zu", seed, i);
            keys[i] = (struct rd_assign_key){text[i], (size_t)len};
        }
        struct rd_ring *r50 = make_ring(seed, MEMBERS, MEMBERS);
        struct rd_ring *r51 = make_ring(seed, MEMBERS + 1, MEMBERS + 1);
        struct rd_ring *r49 = make_ring(seed, MEMBERS, (seed * 7) % MEMBERS);
        for (int m = 0; m < NMETHODS; m++)
            for (int z = 0; z < NSIZES; z++) {
                size_t n = sizes[z];
                place(r50, m, keys, n, base);
                place(r51, m, keys, n, join);
                place(r49, m, keys, n, leave);
                /* names are pointers into their own ring: compare the text */
                balance[m][z][s] = max_over_mean(r50, base, n);
                mv_join[m][z][s] = moved(base, join, n);
                mv_leave[m][z][s] = moved(base, leave, n);
            }
        if (s == 0) { /* cost per call, on the first seed's ring */
            static int out[KEYS_MAX];
            for (int run = 0; run < runs; run++)
                for (int m = 0; m < NMETHODS; m++)
                    for (int z = 0; z < NSIZES; z++) {
                        size_t n = sizes[z];
                        double t0 = now_ns();
                        if (method_c[m] == 0) {
                            for (size_t i = 0; i < n; i++)
                                out[i] = rd_ring_owner(r50, keys[i].ptr, keys[i].len);
                        } else {
                            rd_assign(r50, method_c[m], keys, n, out);
                        }
                        cost[m][z][run] = now_ns() - t0;
                        for (size_t i = 0; i < n; i++)
                            sink = sink * 31 + (uint64_t)out[i];
                    }
        }
        rd_ring_delete(r50);
        rd_ring_delete(r51);
        rd_ring_delete(r49);
    }

    printf("50 members x %u points, %d seeds (medians; worst max/mean over the seeds)\n\n",
           RD_RING_VNODES_DEFAULT, seeds);
    printf("| method | keys | max/mean | worst max/mean | moved on join | moved on leave |\n");
    printf("|---|---|---|---|---|---|\n");
    for (int z = 0; z < NSIZES; z++)
        for (int m = 0; m < NMETHODS; m++)
            printf("| %s | %zu | %.3f | %.3f | %.4f | %.4f |\n", method_name[m], sizes[z],
                   median(balance[m][z], seeds), worst(balance[m][z], seeds),
                   median(mv_join[m][z], seeds), median(mv_leave[m][z], seeds));
    printf("\nCost of one call, 50 members, median of %d runs (MOWNER: a loop of rd_ring_owner "
           "over the keys)\n\n",
           runs);
    printf("| method | keys | us per call | ns per key | vs MOWNER |\n");
    printf("|---|---|---|---|---|\n");
    for (int z = 0; z < NSIZES; z++) {
        double plain = median(cost[0][z], runs);
        for (int m = 0; m < NMETHODS; m++) {
            double t = m == 0 ? plain : median(cost[m][z], runs);
            printf("| %s | %zu | %.1f | %.1f | %.1fx |\n", method_name[m], sizes[z], t / 1e3,
                   t / (double)sizes[z], t / plain);
        }
    }
    printf("\nchecksum %016llx\n", (unsigned long long)sink);
    return 0;
}
