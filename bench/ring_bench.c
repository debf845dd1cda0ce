/*
 * ring_bench.c — how fast the ring answers and rebuilds, against the obvious alternative.
 *
 *   bench_ring [--csv FILE] [--keys N] [--runs R]
 *
 * Lookups: ns per rd_ring_owner() call, key hashing included, over pre-generated
 * "key:<i>" strings, for rings of 1,600 / 16,000 / 160,000 points (10 / 100 / 1,000 members
 * x 160 vnodes). Side by side, in the same run and on the same keys, a baseline ring built
 * here from the very same points: one sorted uint64_t array searched by a plain binary
 * search (lower bound, wrap to 0). Both hash keys with the same inlined XXH3, so the ratio
 * isolates the search. Each figure is the median of R runs. The baseline is also checked to
 * give the same owner for every key (it is the reference construction, just slower).
 *
 * Rebuilds: ms per rd_ring_new() for 100 / 1,000 / 10,000 members at RD_RING_VNODES_DEFAULT,
 * median of R (more for the small rings).
 *
 * Name order: ms to put 1,000 and 10,000 names of three shapes in name order, rd_namesort()
 * against qsort() with strcmp() (how ring builds sorted before), interleaved run by run;
 * median of 4R + 1. Both orders are checked to be the same. Here and in every member list
 * below the members come shuffled (one fixed shuffle), as the agent's member table hands
 * them over: in no name order.
 *
 * Incremental rebuilds: ms per rd_ring_rebuild() from a ring of N members to the list after
 * one member joins, one leaves, or one's weight changes (1.0 -> 1.5), against a full
 * rd_ring_new() of the joined list timed in the same runs, at 100 x 512, 1,000 x 512 and
 * 10,000 x 64, and the last two again with the members in 3 zones; median of 4R + 1. A rebuild
 * reads the old ring and writes the new one, so it is timed twice: cold (interleaved with the full
 * builds, which push the old ring out of the caches) and warm (back to back). Each rebuilt ring is
 * checked to have the full build's checksum and points. Beside them, the floor: a memcpy of the old
 * ring's points, owners and prefix table, timed the same two ways, since a merge reads those and
 * writes as much.
 *
 * Share rebuilds: ms per rd_ring_rebuild() when 5 to 40% of 1,000 x 512 changes at once, from
 * k of the 1,000 members (a fixed random subset) to all of them and back, against
 * rd_ring_new() of the same list in the same runs; median of 2R + 1. Where the merge stops
 * paying, the rebuild is a full build, so the ratios show where that line should sit.
 *
 * Diffs: ms per rd_ring_diff_top(16) (what the agent logs after a rebuild) from a ring of
 * 1,000 x 512 to the ring after k members join (k = 1, 10, 50, 100, 200), by the arcs that end
 * at changed points (the production path) against the walk over every point of both rings
 * (rd_ring_diff_way_with, ring_internal.h), in the same runs; median of 4R + 1. Both
 * answers are checked to be equal. Storm diffs: the same, from k members (k = 1 ... 900) to
 * 1,000, the rebuilds of a join storm, as the agent sums arcs by pair (in dense cells when the
 * possible pairs are few enough) against always by the index of pairs.
 *
 * Growth (first, while the heap is fresh): what a membership change costs the agent while
 * its cluster grows, each step one rd_ring_rebuild() from the ring before, the diff it logs
 * (rd_ring_diff_top(16)) and the old ring freed, as agent/agent.c does; from 10 to 1,000
 * members 10 at a time (a join storm's batches), from 1,000 to 1,200 and from 2,000 to
 * 2,050 one at a time, at 512 vnodes. Each series runs in a fresh child process, under the
 * agent's heap policy (agent/heap.h) and, as the baseline, under glibc's defaults; the two
 * alternate R times. Reported: the mean ms a step, the median, minor page faults a step and
 * the child's peak RSS (getrusage), each the median over the R children.
 *
 * Results are folded into a checksum that is printed, so the compiler cannot drop the loops.
 * Not a test: nothing here asserts a time. Build it in Release without sanitizers.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "heap.h"
#include "namesort.h"
#include "pointhash.h"
#include "ring.h"
#include "ring_internal.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

#define KEY_STRIDE 16 /* "key:" + up to 10 digits + NUL */
#define MAX_RUNS   101

/* ---- the baseline: sorted points, binary search ------------------------------------------ */

struct base_point {
    uint64_t hash;
    uint32_t owner;
};

struct base_ring {
    size_t n;
    uint64_t *hashes;
    uint32_t *owner;
};

static int cmp_base_point(const void *a, const void *b)
{
    const struct base_point *x = a, *y = b;
    if (x->hash != y->hash) return x->hash < y->hash ? -1 : 1;
    return (x->owner > y->owner) - (x->owner < y->owner);
}

/* The same points as `ring` (recomputed from its members through the public hash). */
static int base_build(const struct rd_ring *ring, struct base_ring *b)
{
    size_t n = rd_ring_point_count(ring), k = 0;
    struct base_point *p = malloc(n * sizeof *p);
    b->hashes = malloc(n * sizeof *b->hashes);
    b->owner = malloc(n * sizeof *b->owner);
    if (!p || !b->hashes || !b->owner) return -1;
    for (size_t m = 0; m < rd_ring_member_count(ring); m++) {
        const char *name = rd_ring_member_name(ring, m);
        for (uint32_t i = 0; i < rd_ring_member_points(ring, m); i++)
            p[k++] = (struct base_point){rd_ring_point_hash(name, strlen(name), i), (uint32_t)m};
    }
    qsort(p, n, sizeof *p, cmp_base_point);
    for (size_t i = 0; i < n; i++) {
        b->hashes[i] = p[i].hash;
        b->owner[i] = p[i].owner;
    }
    free(p);
    b->n = n;
    return 0;
}

static void base_free(struct base_ring *b)
{
    free(b->hashes);
    free(b->owner);
}

static inline uint32_t base_owner(const struct base_ring *b, const void *key, size_t len)
{
    uint64_t pos = XXH3_64bits(key, len);
    size_t lo = 0, hi = b->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->hashes[mid] < pos)
            lo = mid + 1;
        else
            hi = mid;
    }
    return b->owner[lo == b->n ? 0 : lo];
}

/* ---- runs ------------------------------------------------------------------------------- */

struct keys {
    size_t n;
    char *buf;    /* n x KEY_STRIDE */
    uint8_t *len; /* n */
};

static uint64_t sink; /* results fold in here and are printed */

static double time_ring(const struct rd_ring *ring, const struct keys *k)
{
    uint64_t sum = 0;
    double t0 = now_ns();
    for (size_t i = 0; i < k->n; i++)
        sum += (uint64_t)rd_ring_owner(ring, k->buf + i * KEY_STRIDE, k->len[i]);
    double t1 = now_ns();
    sink = sink * 31 + sum;
    return (t1 - t0) / (double)k->n;
}

static double time_base(const struct base_ring *b, const struct keys *k)
{
    uint64_t sum = 0;
    double t0 = now_ns();
    for (size_t i = 0; i < k->n; i++)
        sum += base_owner(b, k->buf + i * KEY_STRIDE, k->len[i]);
    double t1 = now_ns();
    sink = sink * 31 + sum;
    return (t1 - t0) / (double)k->n;
}

/* A fixed shuffle of m[0..n): the same order every run. */
static void shuffle_members(struct rd_ring_member *m, size_t n)
{
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = n > 0 ? n - 1 : 0; i > 0; i--) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        size_t j = (size_t)((x >> 33) % (i + 1));
        struct rd_ring_member t = m[i];
        m[i] = m[j];
        m[j] = t;
    }
}

static struct rd_ring *make_ring(size_t members, uint32_t vnodes)
{
    struct rd_ring_member *m = calloc(members, sizeof *m);
    char(*names)[RD_NAME_MAX + 1] = calloc(members, sizeof *names);
    struct rd_ring *ring = NULL;
    if (!m || !names) {
        free(m);
        free(names);
        return NULL;
    }
    for (size_t i = 0; i < members; i++) {
        snprintf(names[i], sizeof names[i], "node-%zu", i);
        m[i] = (struct rd_ring_member){names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    int rc = rd_ring_new(m, members, vnodes, &ring);
    free(m);
    free(names);
    return rc == 0 ? ring : NULL;
}

static double time_rebuild(size_t members, uint32_t vnodes, int runs)
{
    struct rd_ring_member *m = calloc(members, sizeof *m);
    char(*names)[RD_NAME_MAX + 1] = calloc(members, sizeof *names);
    double t[MAX_RUNS];
    if (!m || !names) exit(1);
    for (size_t i = 0; i < members; i++) {
        snprintf(names[i], sizeof names[i], "node-%zu", i);
        m[i] = (struct rd_ring_member){names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    shuffle_members(m, members);
    for (int r = 0; r < runs; r++) {
        struct rd_ring *ring = NULL;
        double t0 = now_ns();
        int rc = rd_ring_new(m, members, vnodes, &ring);
        double t1 = now_ns();
        if (rc != 0) {
            fprintf(stderr, "rd_ring_new: %d\n", rc);
            exit(1);
        }
        sink = sink * 31 + rd_ring_checksum(ring);
        rd_ring_delete(ring);
        t[r] = (t1 - t0) / 1e6;
    }
    free(m);
    free(names);
    return median(t, runs);
}

/* The members node-0 .. node-members at weight 1.0, shuffled as the agent's member table
 * hands them over (in no name order): the first `members` of them, and one more to join. */
struct bench_list {
    size_t n;
    struct rd_ring_member *m;
    char (*names)[RD_NAME_MAX + 1];
};

static void list_make(struct bench_list *l, size_t members)
{
    l->n = members;
    l->m = calloc(members + 1, sizeof *l->m);
    l->names = calloc(members + 1, sizeof *l->names);
    if (!l->m || !l->names) exit(1);
    for (size_t i = 0; i <= members; i++) {
        snprintf(l->names[i], sizeof l->names[i], "node-%zu", i);
        l->m[i] = (struct rd_ring_member){l->names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    shuffle_members(l->m, members + 1);
}

/* One timed build: rd_ring_rebuild() from `old` (rd_ring_new() when old is NULL) of m[0..n),
 * checked against `want` when given. Returns ms. */
static double timed_build(const struct rd_ring *old, const struct rd_ring_member *m, size_t n,
                          uint32_t vnodes, const struct rd_ring *want)
{
    struct rd_ring *ring = NULL;
    double t0 = now_ns();
    int rc = old ? rd_ring_rebuild(old, m, n, vnodes, &ring) : rd_ring_new(m, n, vnodes, &ring);
    double t1 = now_ns();
    if (rc != 0) {
        fprintf(stderr, "ring build: %d\n", rc);
        exit(1);
    }
    if (want && (rd_ring_checksum(ring) != rd_ring_checksum(want) ||
                 rd_ring_point_count(ring) != rd_ring_point_count(want))) {
        fprintf(stderr, "rd_ring_rebuild differs from rd_ring_new\n");
        exit(1);
    }
    sink = sink * 31 + rd_ring_checksum(ring);
    rd_ring_delete(ring);
    return (t1 - t0) / 1e6;
}

/* INC_COPY is the floor of a rebuild: copying the old ring's point arrays (timed_copy). */
enum { INC_FULL, INC_JOIN, INC_LEAVE, INC_WEIGHT, INC_COPY, INC_KINDS };

/* One ring size's lists and the full builds every rebuild is checked against. */
struct inc_case {
    size_t members;
    uint32_t vnodes;
    struct bench_list l;
    struct rd_ring_member *weighted; /* l with member members/2 at weight 1.5 */
    struct rd_ring *base, *want[INC_KINDS];
};

/* Zones of the zoned cases: members placed round-robin. */
static const char *const bench_zones[] = {"eu-west-1a", "eu-west-1b", "eu-west-1c"};

static void inc_case_make(struct inc_case *c, size_t members, uint32_t vnodes, bool zoned)
{
    c->members = members;
    c->vnodes = vnodes;
    list_make(&c->l, members);
    for (size_t i = 0; zoned && i <= members; i++)
        c->l.m[i].zone = bench_zones[i % 3];
    c->weighted = malloc(members * sizeof *c->weighted);
    if (!c->weighted) exit(1);
    memcpy(c->weighted, c->l.m, members * sizeof *c->weighted);
    c->weighted[members / 2].weight = RD_WEIGHT_ONE * 3 / 2;
    c->want[INC_FULL] = c->want[INC_COPY] = NULL;
    if (rd_ring_new(c->l.m, members, vnodes, &c->base) != 0 ||
        rd_ring_new(c->l.m, members + 1, vnodes, &c->want[INC_JOIN]) != 0 ||
        rd_ring_new(c->l.m, members - 1, vnodes, &c->want[INC_LEAVE]) != 0 ||
        rd_ring_new(c->weighted, members, vnodes, &c->want[INC_WEIGHT]) != 0)
        exit(1);
}

static void inc_case_free(struct inc_case *c)
{
    rd_ring_delete(c->base);
    for (int kind = 0; kind < INC_KINDS; kind++)
        rd_ring_delete(c->want[kind]);
    free(c->weighted);
    free(c->l.m);
    free(c->l.names);
}

/*
 * The least any rebuild from `old` moves: a copy of its points, owners and prefix table into
 * a block as large, allocated and freed as a rebuild's is. A merge reads those arrays and
 * writes as much, so where memory is the limit this copy is the floor, measured on the same
 * machine in the same minutes. Returns ms.
 */
static double timed_copy(const struct rd_ring *old)
{
    struct rd_ring_view v;
    rd_ring_view(old, &v);
    size_t nh = ((size_t)v.npoints + 1) * sizeof *v.hashes, no = v.npoints * sizeof *v.owner,
           nf = v.nfirst * sizeof *v.first;
    char *to = malloc(nh + no + nf);
    if (!to) exit(1);
    double t0 = now_ns();
    memcpy(to, v.hashes, nh);
    memcpy(to + nh, v.owner, no);
    memcpy(to + nh + no, v.first, nf);
    double t1 = now_ns();
    sink = sink * 31 + (unsigned char)to[nh + no + nf - 1];
    free(to);
    return (t1 - t0) / 1e6;
}

/* One timed build of `kind`: the full build of the joined list, or a rebuild from base (or
 * its floor, the copy). */
static double inc_build(const struct inc_case *c, int kind)
{
    if (kind == INC_COPY) return timed_copy(c->base);
    const struct rd_ring *old = kind == INC_FULL ? NULL : c->base;
    const struct rd_ring_member *m = kind == INC_WEIGHT ? c->weighted : c->l.m;
    size_t n = kind == INC_JOIN || kind == INC_FULL ? c->members + 1
               : kind == INC_LEAVE                  ? c->members - 1
                                                    : c->members;
    return timed_build(old, m, n, c->vnodes, c->want[kind]);
}

/*
 * Medians in ms, into cold[INC_KINDS] and warm[INC_KINDS] (warm[INC_FULL] unused). Cold: the
 * kinds interleaved run by run, so every rebuild comes after a full build that pushed the
 * old ring out of the caches. Warm: each change rebuilt `runs` times in a row after one
 * untimed rebuild, so the old ring is cached, as for rebuilds in quick succession.
 */
static void time_incremental(size_t members, uint32_t vnodes, bool zoned, int runs,
                             double cold[INC_KINDS], double warm[INC_KINDS])
{
    struct inc_case c;
    inc_case_make(&c, members, vnodes, zoned);
    double t[INC_KINDS][MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        for (int kind = 0; kind < INC_COPY; kind++)
            t[kind][r] = inc_build(&c, kind);
        inc_build(&c, INC_FULL); /* the copy, too, comes right after a full build */
        t[INC_COPY][r] = inc_build(&c, INC_COPY);
    }
    for (int kind = 0; kind < INC_KINDS; kind++)
        cold[kind] = median(t[kind], runs);
    warm[INC_FULL] = 0;
    for (int kind = INC_JOIN; kind < INC_KINDS; kind++) {
        inc_build(&c, kind);
        for (int r = 0; r < runs; r++)
            t[kind][r] = inc_build(&c, kind);
        warm[kind] = median(t[kind], runs);
    }
    inc_case_free(&c);
}

/* One timed diff, the default way (0) or another (ring_internal.h); *d keeps its answer.
 * Returns ms. */
static double timed_diff(const struct rd_ring *a, const struct rd_ring *b, unsigned way,
                         struct rd_ring_diff *d)
{
    double t0 = now_ns();
    int rc = way ? rd_ring_diff_way_with(a, b, 16, way, NULL, d) : rd_ring_diff_top(a, b, 16, d);
    double t1 = now_ns();
    if (rc != 0) {
        fprintf(stderr, "ring diff: %d\n", rc);
        exit(1);
    }
    return (t1 - t0) / 1e6;
}

/* Medians in ms of the diff from `members` to `to` members, the default way and `way`, into
 * ms[2]; the two answers must be equal. */
static void time_diff(size_t members, size_t to, uint32_t vnodes, unsigned way, int runs,
                      double ms[2])
{
    struct bench_list l;
    list_make(&l, to);
    struct rd_ring *a = NULL, *b = NULL;
    if (rd_ring_new(l.m, members, vnodes, &a) != 0 || rd_ring_new(l.m, to, vnodes, &b) != 0)
        exit(1);
    double t[2][MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        struct rd_ring_diff d[2];
        for (int w = 0; w < 2; w++)
            t[w][r] = timed_diff(a, b, w ? way : 0, &d[w]);
        bool same =
            d[0].moved == d[1].moved && d[0].npairs == d[1].npairs && d[0].nmoves == d[1].nmoves;
        for (size_t k = 0; same && k < d[0].nmoves; k++)
            same = d[0].moves[k].fraction == d[1].moves[k].fraction &&
                   strcmp(d[0].moves[k].from, d[1].moves[k].from) == 0 &&
                   strcmp(d[0].moves[k].to, d[1].moves[k].to) == 0;
        if (!same) {
            fprintf(stderr, "the diff's ways differ\n");
            exit(1);
        }
        sink = sink * 31 + d[0].npairs;
        rd_ring_diff_destroy(&d[0]);
        rd_ring_diff_destroy(&d[1]);
    }
    ms[0] = median(t[0], runs);
    ms[1] = median(t[1], runs);
    rd_ring_delete(a);
    rd_ring_delete(b);
    free(l.m);
    free(l.names);
}

/*
 * Medians in ms of rebuilds where a share of 1,000 x vnodes changes at once: from k members
 * (a fixed random subset of the 1,000) to all 1,000 (joins), and from the 1,000 to those k
 * (leaves), each against rd_ring_new() of its target list, interleaved run by run; into
 * ms[4]: join rebuild, join's full build, leave rebuild, leave's full build.
 */
static void time_share(size_t keep, uint32_t vnodes, int runs, double ms[4])
{
    const size_t all = 1000;
    struct bench_list l;
    list_make(&l, all);
    struct rd_ring_member *sub = malloc(all * sizeof *sub);
    if (!sub) exit(1);
    memcpy(sub, l.m, all * sizeof *sub);
    shuffle_members(sub, all); /* the same subset every run */
    struct rd_ring *few = NULL, *many = NULL;
    if (rd_ring_new(sub, keep, vnodes, &few) != 0 || rd_ring_new(l.m, all, vnodes, &many) != 0)
        exit(1);
    double t[4][MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        t[0][r] = timed_build(few, l.m, all, vnodes, many);
        t[1][r] = timed_build(NULL, l.m, all, vnodes, NULL);
        t[2][r] = timed_build(many, sub, keep, vnodes, few);
        t[3][r] = timed_build(NULL, sub, keep, vnodes, NULL);
    }
    for (int k = 0; k < 4; k++)
        ms[k] = median(t[k], runs);
    rd_ring_delete(few);
    rd_ring_delete(many);
    free(sub);
    free(l.m);
    free(l.names);
}

/* ---- growth: successive rebuilds as the agent does them --------------------------------- */

static struct rusage usage_now(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru;
}

struct growth {
    double mean_ms, median_ms, faults, peak_mb;
};

/* From `from` to `to` members, `step` at a time, under glibc's defaults or the agent's
 * heap policy. */
static struct growth grow_series(size_t from, size_t to, size_t step, bool agent_heap)
{
    if (agent_heap) rd_heap_keep_freed();
    struct bench_list l;
    list_make(&l, to);
    struct rd_ring *cur = NULL;
    if (rd_ring_new(l.m, from, RD_RING_VNODES_DEFAULT, &cur) != 0) exit(1);
    size_t steps = (to - from) / step;
    double *t = malloc(steps * sizeof *t);
    if (!t) exit(1);
    long f0 = usage_now().ru_minflt;
    double t0 = now_ns();
    for (size_t s = 0; s < steps; s++) {
        struct rd_ring *next = NULL;
        struct rd_ring_diff d;
        double a = now_ns();
        if (rd_ring_rebuild(cur, l.m, from + (s + 1) * step, RD_RING_VNODES_DEFAULT, &next) != 0 ||
            rd_ring_diff_top(cur, next, 16, &d) != 0)
            exit(1);
        sink = sink * 31 + d.npairs + rd_ring_checksum(next);
        rd_ring_diff_destroy(&d);
        rd_ring_delete(cur);
        cur = next;
        t[s] = (now_ns() - a) / 1e6;
    }
    struct rusage ru = usage_now();
    struct growth g = {(now_ns() - t0) / 1e6 / (double)steps, median(t, (int)steps),
                       (double)(ru.ru_minflt - f0) / (double)steps, (double)ru.ru_maxrss / 1024};
    rd_ring_delete(cur);
    free(t);
    free(l.m);
    free(l.names);
    return g;
}

/* grow_series() in a child process, so that every series starts from a fresh heap. */
static struct growth grow_in_child(size_t from, size_t to, size_t step, bool agent_heap)
{
    int fd[2];
    struct growth g;
    if (pipe(fd) != 0) exit(1);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) exit(1);
    if (pid == 0) {
        close(fd[0]);
        g = grow_series(from, to, step, agent_heap);
        _exit(write(fd[1], &g, sizeof g) == (ssize_t)sizeof g ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], &g, sizeof g);
    close(fd[0]);
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        got != (ssize_t)sizeof g) {
        fprintf(stderr, "growth series failed\n");
        exit(1);
    }
    return g;
}

/* Medians over `runs` children of each heap, alternating: g[0] glibc's defaults, g[1] the
 * agent's policy. */
static void time_growth(size_t from, size_t to, size_t step, int runs, struct growth g[2])
{
    double v[2][4][MAX_RUNS];
    for (int r = 0; r < runs; r++)
        for (int h = 0; h < 2; h++) {
            struct growth one = grow_in_child(from, to, step, h == 1);
            v[h][0][r] = one.mean_ms;
            v[h][1][r] = one.median_ms;
            v[h][2][r] = one.faults;
            v[h][3][r] = one.peak_mb;
        }
    for (int h = 0; h < 2; h++)
        g[h] = (struct growth){median(v[h][0], runs), median(v[h][1], runs), median(v[h][2], runs),
                               median(v[h][3], runs)};
}

/* ---- name order ------------------------------------------------------------------------- */

/* What ring builds sorted names with before rd_namesort(): pointers, qsort(), strcmp(). */
static int cmp_name_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Medians in ms of putting n distinct names of `format` (one %zu, or three %u for an
 * address) into name order, shuffled: ms[0] rd_namesort(), ms[1] qsort() with strcmp(),
 * interleaved run by run. Both orders are checked to be the same. */
static void time_names(size_t n, const char *format, int runs, double ms[2])
{
    char(*buf)[RD_NAME_MAX + 1] = malloc(n * sizeof *buf);
    const char **names = malloc(n * sizeof *names), **ptrs = malloc(n * sizeof *ptrs);
    uint32_t *order = malloc(n * sizeof *order);
    void *scratch = malloc(rd_namesort_scratch(n));
    if (!buf || !names || !ptrs || !order || !scratch) exit(1);
    struct rd_ring_member *m = calloc(n, sizeof *m);
    if (!m) exit(1);
    for (size_t i = 0; i < n; i++) {
        if (strstr(format, "zu"))
            snprintf(buf[i], sizeof buf[i], format, i);
        else
            snprintf(buf[i], sizeof buf[i], format, (unsigned)(i >> 16), (unsigned)(i >> 8 & 255),
                     (unsigned)(i & 255));
        m[i].name = buf[i];
    }
    shuffle_members(m, n);
    for (size_t i = 0; i < n; i++)
        names[i] = m[i].name;
    free(m);
    double t[2][MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        double t0 = now_ns();
        if (rd_namesort(names, n, order, scratch)) exit(1);
        double t1 = now_ns();
        memcpy(ptrs, names, n * sizeof *ptrs);
        double t2 = now_ns();
        qsort(ptrs, n, sizeof *ptrs, cmp_name_ptr);
        double t3 = now_ns();
        for (size_t i = 0; i < n; i++)
            if (names[order[i]] != ptrs[i]) {
                fprintf(stderr, "rd_namesort differs from qsort at %zu\n", i);
                exit(1);
            }
        t[0][r] = (t1 - t0) / 1e6;
        t[1][r] = (t3 - t2) / 1e6;
        sink = sink * 31 + order[n / 2];
    }
    ms[0] = median(t[0], runs);
    ms[1] = median(t[1], runs);
    free(buf);
    free(names);
    free(ptrs);
    free(order);
    free(scratch);
}

static void usage(void)
{
    fprintf(stderr, "usage: bench_ring [--csv FILE] [--keys N] [--runs R]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *csv_path = NULL;
    size_t nkeys = 1000000;
    int runs = 5;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--csv") == 0 && i + 1 < argc)
            csv_path = argv[++i];
        else if (strcmp(argv[i], "--keys") == 0 && i + 1 < argc)
            nkeys = strtoul(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--runs") == 0 && i + 1 < argc)
            runs = atoi(argv[++i]);
        else
            usage();
    }
    if (nkeys == 0 || runs < 1 || runs > MAX_RUNS) usage();
    FILE *csv = NULL;
    if (csv_path) {
        csv = fopen(csv_path, "w");
        if (!csv) {
            perror(csv_path);
            return 1;
        }
        fprintf(csv, "bench,members,vnodes,points,ringd,baseline,ratio,unit\n");
    }

    /* First, while this process's heap is fresh: the series fork from it. */
    printf("growth: ms per membership change (rebuild from the ring before, diff, old ring\n"
           "freed) while the cluster grows, glibc's default heap against the agent's\n"
           "(agent/heap.h), medians over %d fresh processes each\n",
           runs);
    printf("%6s %6s %5s %7s | %9s %9s %8s %7s | %9s %9s %8s %7s | %6s\n", "from", "to", "step",
           "vnodes", "glibc mean", "median", "faults", "peak MB", "agent mean", "median", "faults",
           "peak MB", "ratio");
    static const struct {
        size_t from, to, step;
    } growth_cases[] = {{10, 1000, 10}, {1000, 1200, 1}, {2000, 2050, 1}};
    for (size_t c = 0; c < sizeof growth_cases / sizeof *growth_cases; c++) {
        struct growth g[2];
        time_growth(growth_cases[c].from, growth_cases[c].to, growth_cases[c].step, runs, g);
        printf(
            "%6zu %6zu %5zu %7u | %10.3f %9.3f %8.0f %7.1f | %10.3f %9.3f %8.0f %7.1f | %5.1fx\n",
            growth_cases[c].from, growth_cases[c].to, growth_cases[c].step, RD_RING_VNODES_DEFAULT,
            g[0].mean_ms, g[0].median_ms, g[0].faults, g[0].peak_mb, g[1].mean_ms, g[1].median_ms,
            g[1].faults, g[1].peak_mb, g[0].mean_ms / g[1].mean_ms);
        if (csv)
            fprintf(csv, "growth_%zu_to_%zu_by_%zu,%zu,%u,%zu,%.4f,%.4f,%.3f,ms\n",
                    growth_cases[c].from, growth_cases[c].to, growth_cases[c].step,
                    growth_cases[c].to, RD_RING_VNODES_DEFAULT,
                    growth_cases[c].to * RD_RING_VNODES_DEFAULT, g[1].mean_ms, g[0].mean_ms,
                    g[0].mean_ms / g[1].mean_ms);
    }

    struct keys k = {nkeys, malloc(nkeys * KEY_STRIDE), malloc(nkeys)};
    if (!k.buf || !k.len) return 1;
    for (size_t i = 0; i < nkeys; i++)
        k.len[i] = (uint8_t)snprintf(k.buf + i * KEY_STRIDE, KEY_STRIDE, "key:%zu", i);

    printf("\nlookup: ns per owner(key), hash included, %zu keys, median of %d runs\n", nkeys,
           runs);
    printf("%8s %7s %8s | %10s %12s %7s\n", "members", "vnodes", "points", "ringd ns", "bsearch ns",
           "ratio");
    static const size_t lookup_members[] = {10, 100, 1000};
    const uint32_t lookup_vnodes = 160;
    for (size_t c = 0; c < sizeof lookup_members / sizeof *lookup_members; c++) {
        struct rd_ring *ring = make_ring(lookup_members[c], lookup_vnodes);
        struct base_ring b;
        if (!ring || base_build(ring, &b) != 0) return 1;
        size_t mismatches = 0;
        for (size_t i = 0; i < nkeys; i++) {
            const char *key = k.buf + i * KEY_STRIDE;
            mismatches +=
                (uint32_t)rd_ring_owner(ring, key, k.len[i]) != base_owner(&b, key, k.len[i]);
        }
        double tr[MAX_RUNS], tb[MAX_RUNS];
        for (int r = 0; r < runs; r++) {
            /* interleaved, so drift in clock or load hits both alike */
            tr[r] = time_ring(ring, &k);
            tb[r] = time_base(&b, &k);
        }
        double mr = median(tr, runs), mb = median(tb, runs);
        printf("%8zu %7u %8zu | %10.2f %12.2f %6.2fx%s\n", lookup_members[c], lookup_vnodes,
               rd_ring_point_count(ring), mr, mb, mb / mr,
               mismatches ? "  MISMATCH vs baseline!" : "");
        if (csv)
            fprintf(csv, "lookup,%zu,%u,%zu,%.3f,%.3f,%.3f,ns\n", lookup_members[c], lookup_vnodes,
                    rd_ring_point_count(ring), mr, mb, mb / mr);
        base_free(&b);
        rd_ring_delete(ring);
        if (mismatches) return 1;
    }

    static const char *const kernel[] = {"one at a time", "4 at a time (AVX2)",
                                         "8 at a time (AVX-512)"};
    printf("\nrebuild: ms per rd_ring_new() at vnodes %u, median; points hashed %s\n",
           RD_RING_VNODES_DEFAULT, kernel[rd_point_kernel_best()]);
    printf("%8s %7s %9s | %10s %5s\n", "members", "vnodes", "points", "ms", "runs");
    static const size_t build_members[] = {100, 1000, 10000};
    for (size_t c = 0; c < sizeof build_members / sizeof *build_members; c++) {
        int r = build_members[c] >= 10000 ? runs : 4 * runs + 1;
        if (r > MAX_RUNS) r = MAX_RUNS;
        double ms = time_rebuild(build_members[c], RD_RING_VNODES_DEFAULT, r);
        size_t points = build_members[c] * RD_RING_VNODES_DEFAULT;
        printf("%8zu %7u %9zu | %10.3f %5d\n", build_members[c], RD_RING_VNODES_DEFAULT, points, ms,
               r);
        if (csv)
            fprintf(csv, "rebuild,%zu,%u,%zu,%.4f,,,ms\n", build_members[c], RD_RING_VNODES_DEFAULT,
                    points, ms);
    }

    printf("\nname order: ms to put n member names in name order, shuffled, median of %d;\n"
           "rd_namesort() against qsort() with strcmp()\n",
           4 * runs + 1 > MAX_RUNS ? MAX_RUNS : 4 * runs + 1);
    printf("%8s %-46s | %10s %10s %7s\n", "names", "like", "namesort", "qsort", "ratio");
    static const char *const name_formats[] = {"node-%zu", "10.%u.%u.%u:7946",
                                               "ringd-agent-%06zu.eu-west-1.compute.internal"};
    static const size_t name_counts[] = {1000, 10000};
    for (size_t c = 0; c < sizeof name_counts / sizeof *name_counts; c++)
        for (size_t f = 0; f < sizeof name_formats / sizeof *name_formats; f++) {
            double ms[2];
            int r = 4 * runs + 1 > MAX_RUNS ? MAX_RUNS : 4 * runs + 1;
            time_names(name_counts[c], name_formats[f], r, ms);
            printf("%8zu %-46s | %10.3f %10.3f %6.1fx\n", name_counts[c], name_formats[f], ms[0],
                   ms[1], ms[1] / ms[0]);
            if (csv)
                fprintf(csv, "name_order_%zu,%zu,,,%.4f,%.4f,%.3f,ms\n", f, name_counts[c], ms[0],
                        ms[1], ms[1] / ms[0]);
        }

    printf("\nincremental rebuild: ms per rd_ring_rebuild() after a one-member change, against\n"
           "rd_ring_new() of the joined list in the same runs, median; cold: after a full build,\n"
           "warm: rebuilt back to back; copy: the old ring's points, owners and prefix table\n"
           "copied (memcpy), the floor of a merge that reads them and writes as much\n");
    printf("%8s %7s %5s %9s %5s | %8s %8s %8s %8s %8s | %s\n", "members", "vnodes", "zones",
           "points", "cache", "full", "join", "leave", "weight", "copy",
           "full/join full/leave full/weight join/copy");
    static const struct {
        size_t members;
        uint32_t vnodes;
        bool zoned;
    } inc_cases[] = {{100, 512, false},
                     {1000, 512, false},
                     {10000, 64, false},
                     {1000, 512, true},
                     {10000, 64, true}};
    static const char *const inc_names[INC_KINDS] = {"full", "join", "leave", "weight", "copy"};
    for (size_t c = 0; c < sizeof inc_cases / sizeof *inc_cases; c++) {
        size_t members = inc_cases[c].members;
        uint32_t vnodes = inc_cases[c].vnodes;
        bool zoned = inc_cases[c].zoned;
        int r = 4 * runs + 1 > MAX_RUNS ? MAX_RUNS : 4 * runs + 1;
        double cold[INC_KINDS], warm[INC_KINDS];
        time_incremental(members, vnodes, zoned, r, cold, warm);
        size_t points = members * vnodes;
        for (int w = 0; w < 2; w++) {
            const double *ms = w ? warm : cold;
            printf("%8zu %7u %5d %9zu %5s | %8.3f %8.3f %8.3f %8.3f %8.3f | %8.1fx %9.1fx %10.1fx "
                   "%8.2fx\n",
                   members, vnodes, zoned ? 3 : 0, points, w ? "warm" : "cold", cold[INC_FULL],
                   ms[INC_JOIN], ms[INC_LEAVE], ms[INC_WEIGHT], ms[INC_COPY],
                   cold[INC_FULL] / ms[INC_JOIN], cold[INC_FULL] / ms[INC_LEAVE],
                   cold[INC_FULL] / ms[INC_WEIGHT], ms[INC_JOIN] / ms[INC_COPY]);
            if (csv)
                for (int kind = INC_JOIN; kind < INC_KINDS; kind++)
                    fprintf(csv, "rebuild_%s_%s%s,%zu,%u,%zu,%.4f,%.4f,%.3f,ms\n", inc_names[kind],
                            w ? "warm" : "cold", zoned ? "_zones3" : "", members, vnodes, points,
                            ms[kind], cold[INC_FULL], cold[INC_FULL] / ms[kind]);
        }
    }
    printf("\nshare rebuilds: ms per rd_ring_rebuild() when members join or leave at once, from\n"
           "k of 1,000 to the 1,000 and back, against rd_ring_new() of the same list, median (a\n"
           "merge while the points that come or go are at most a quarter of those in either\n"
           "ring, else a full build)\n");
    printf("%8s %7s %7s | %8s %8s %7s | %8s %8s %7s\n", "k", "vnodes", "changed", "join", "full",
           "ratio", "leave", "full", "ratio");
    static const size_t share_keep[] = {950, 900, 850, 800, 750, 700, 670, 600};
    int share_runs = 2 * runs + 1 > MAX_RUNS ? MAX_RUNS : 2 * runs + 1;
    for (size_t c = 0; c < sizeof share_keep / sizeof *share_keep; c++) {
        double ms[4];
        time_share(share_keep[c], RD_RING_VNODES_DEFAULT, share_runs, ms);
        printf("%8zu %7u %6zu%% | %8.3f %8.3f %6.2fx | %8.3f %8.3f %6.2fx\n", share_keep[c],
               RD_RING_VNODES_DEFAULT, (1000 - share_keep[c]) / 10, ms[0], ms[1], ms[0] / ms[1],
               ms[2], ms[3], ms[2] / ms[3]);
        if (csv)
            fprintf(csv,
                    "share_join_from_%zu,1000,%u,%d,%.4f,%.4f,%.3f,ms\n"
                    "share_leave_to_%zu,%zu,%u,%zu,%.4f,%.4f,%.3f,ms\n",
                    share_keep[c], RD_RING_VNODES_DEFAULT, 1000 * RD_RING_VNODES_DEFAULT, ms[0],
                    ms[1], ms[0] / ms[1], share_keep[c], share_keep[c], RD_RING_VNODES_DEFAULT,
                    share_keep[c] * RD_RING_VNODES_DEFAULT, ms[2], ms[3], ms[2] / ms[3]);
    }
    printf("\ndiff: ms per rd_ring_diff_top(16) from 1,000 members to 1,000 + k, by changed\n"
           "points against the walk over every point, median\n");
    printf("%8s %7s %6s | %9s %8s %7s\n", "members", "vnodes", "joins", "by points", "walk",
           "ratio");
    static const size_t diff_joins[] = {1, 10, 50, 100, 200};
    int diff_runs = 4 * runs + 1 > MAX_RUNS ? MAX_RUNS : 4 * runs + 1;
    for (size_t c = 0; c < sizeof diff_joins / sizeof *diff_joins; c++) {
        double ms[2];
        time_diff(1000, 1000 + diff_joins[c], RD_RING_VNODES_DEFAULT, RD_RING_DIFF_WALK, diff_runs,
                  ms);
        printf("%8d %7u %6zu | %9.3f %8.3f %6.1fx\n", 1000, RD_RING_VNODES_DEFAULT, diff_joins[c],
               ms[0], ms[1], ms[1] / ms[0]);
        if (csv)
            fprintf(csv, "diff_joins_%zu,1000,%u,%zu,%.4f,%.4f,%.3f,ms\n", diff_joins[c],
                    RD_RING_VNODES_DEFAULT, (1000 + diff_joins[c]) * RD_RING_VNODES_DEFAULT, ms[0],
                    ms[1], ms[1] / ms[0]);
    }
    printf("\nstorm diffs: ms per rd_ring_diff_top(16) from k members to 1,000 (a join storm's\n"
           "rebuilds), as the agent sums the pairs against always by the index of pairs, median\n");
    printf("%8s %7s %6s | %9s %8s %7s\n", "from", "vnodes", "to", "default", "indexed", "ratio");
    static const size_t storm_from[] = {1, 100, 300, 500, 700, 900};
    for (size_t c = 0; c < sizeof storm_from / sizeof *storm_from; c++) {
        double ms[2];
        time_diff(storm_from[c], 1000, RD_RING_VNODES_DEFAULT, RD_RING_DIFF_INDEXED, diff_runs, ms);
        printf("%8zu %7u %6d | %9.3f %8.3f %6.1fx\n", storm_from[c], RD_RING_VNODES_DEFAULT, 1000,
               ms[0], ms[1], ms[1] / ms[0]);
        if (csv)
            fprintf(csv, "diff_storm_from_%zu,1000,%u,%d,%.4f,%.4f,%.3f,ms\n", storm_from[c],
                    RD_RING_VNODES_DEFAULT, 1000 * RD_RING_VNODES_DEFAULT, ms[0], ms[1],
                    ms[1] / ms[0]);
    }

    printf("\nchecksum %016llx\n", (unsigned long long)sink);
    free(k.buf);
    free(k.len);
    if (csv && fclose(csv) != 0) {
        perror(csv_path);
        return 1;
    }
    return 0;
}
