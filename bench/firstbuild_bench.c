/*
 * firstbuild_bench.c — what a builder's first rings cost in memory never touched before,
 * and what two ways of taking that memory in bigger steps would save.
 *
 * An agent that joins a large cluster builds its first full ring in fresh memory. Each run
 * is a new process (fresh pages), in which a thread grows its arena as the agent's builder
 * does (rd_heap_grow_own_arena, agent/heap.h), and then, by kind:
 *   traps    the ring as it is, every page faulted in as the build first writes it: the
 *            agent;
 *   huge     the same, with the grown arena marked for transparent huge pages (madvise
 *            MADV_HUGEPAGE), so that the build's memory comes 2 MB a fault where the kernel
 *            offers them;
 *   prefault the ring's allocations through a stand-in (ring_internal.h) that takes each
 *            block of 256 KB or more in by MADV_POPULATE_WRITE as it is allocated, the
 *            pages already present left out (mincore) and 1 MB a call.
 * Then:
 *   full     builds the ring of MEMBERS x VNODES: the joiner's first full ring;
 *   merge    rebuilds it with one member more: the next change, in memory the full build's
 *            scratch left behind;
 *   lookup   ns per rd_ring_owner() over 1,000,000 keys on the merged ring, from the loop
 *            thread (the agent answers from its loop).
 * For each it takes the thread's CPU time and its minor faults (getrusage RUSAGE_THREAD,
 * which counts the pages a prefault takes in too), and it reads the process's peak resident
 * memory (VmHWM) and AnonHugePages at the end. The order of the kinds turns run by run, so
 * all see the same machine. Prints per kind the median and the range of each figure.
 *
 * Then what the prefault costs where it finds the pages present: in this process, under
 * the agent's heap policy, a one-member rebuild of the same ring with and without it,
 * alternately, warm (back to back) and cold (a full build before each); medians of
 * REBUILDS each, and their ratio. Run by hand (bench/README.md).
 *
 *   bench_firstbuild [--members N] [--vnodes V] [--runs R]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "heap.h"
#include "ring.h"
#include "ring_internal.h"

enum kind { TRAPS, HUGE, PREFAULT, KINDS };
static const char *const kind_names[KINDS] = {"traps", "huge", "prefault"};

#define HUGE_BYTES (2u << 20)

#define LOOKUPS  1000000
#define MAX_RUNS 101
#define REBUILDS 41

struct result {
    double full_ms, merge_ms, lookup_ns;
    double full_faults, merge_faults, peak_mb, anon_huge_kb;
};

struct job {
    enum kind kind;
    size_t members;
    uint32_t vnodes;
    struct rd_ring *ring;
    struct result *r;
    int rc;
};

static double thread_cpu_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double thread_faults(void)
{
    struct rusage ru;
    getrusage(RUSAGE_THREAD, &ru);
    return (double)ru.ru_minflt;
}

/* The value of `field` ("VmHWM:") in a /proc file of kB lines; -1 if missing. */
static double proc_kb(const char *path, const char *field)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char line[256];
    double kb = -1;
    size_t len = strlen(field);
    while (fgets(line, sizeof line, f))
        if (strncmp(line, field, len) == 0 && sscanf(line + len, "%lf", &kb) == 1) break;
    fclose(f);
    return kb;
}

static struct rd_ring_member *roster(size_t n, char (*names)[32])
{
    struct rd_ring_member *m = calloc(n, sizeof *m);
    if (!m) return NULL;
    for (size_t i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "node-%zu", i);
        m[i] = (struct rd_ring_member){.name = names[i], .weight = RD_WEIGHT_ONE};
    }
    return m;
}

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#define PREFAULT_MIN   (256u * 1024u)
#define PREFAULT_CHUNK (1u << 20)
#define LOOK_PAGES     1024

/* malloc, then the whole pages of the block that are absent taken in: the span from the
 * first absent page to the last, found by mincore() (populating a present page walks it,
 * at about 35 ns a page), populated a chunk at a time. */
static void *prefault_alloc(size_t size, void *ctx)
{
    (void)ctx;
    char *p = malloc(size);
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    if (!p || size < PREFAULT_MIN) return p;
    uintptr_t lo = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t hi = ((uintptr_t)p + size) & ~(page - 1);
    uintptr_t first = 0, last = 0;
    unsigned char in[LOOK_PAGES];
    for (uintptr_t at = lo; at < hi;) {
        size_t n = (hi - at) / page < LOOK_PAGES ? (hi - at) / page : LOOK_PAGES;
        if (mincore((void *)at, n * page, in) < 0) return p;
        for (size_t k = 0; k < n; k++)
            if (!(in[k] & 1)) {
                if (!first) first = at + k * page;
                last = at + (k + 1) * page;
            }
        at += n * page;
    }
    for (uintptr_t at = first; at < last; at += PREFAULT_CHUNK) {
        size_t len = last - at < PREFAULT_CHUNK ? last - at : PREFAULT_CHUNK;
        if (madvise((void *)at, len, MADV_POPULATE_WRITE) < 0) break;
    }
    return p;
}

static void *builder(void *arg)
{
    struct job *j = arg;
    j->rc = -1;
    rd_heap_grow_own_arena();
    double f0 = thread_faults(), c0 = thread_cpu_ms(); /* the kind's own step counts too */
    if (j->kind == HUGE) { /* the 2 MB-aligned inside of the arena's free top */
        char *block = malloc(RD_HEAP_ARENA_BYTES);
        if (!block) return NULL;
        uintptr_t lo = ((uintptr_t)block + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1);
        uintptr_t hi = ((uintptr_t)block + RD_HEAP_ARENA_BYTES) & ~(uintptr_t)(HUGE_BYTES - 1);
        int rc = madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
        free(block);
        if (rc < 0) return NULL;
    }
    char(*names)[32] = malloc((j->members + 1) * sizeof *names);
    struct rd_ring_member *m = names ? roster(j->members + 1, names) : NULL;
    struct rd_ring *full = NULL;
    if (!m) goto out;
    const struct rd_ring_hooks prefault = {.alloc = prefault_alloc};
    const struct rd_ring_hooks *hooks = j->kind == PREFAULT ? &prefault : NULL;
    if (rd_ring_new_with(m, j->members, j->vnodes, hooks, &full) < 0) goto out;
    double f1 = thread_faults(), c1 = thread_cpu_ms();
    if (rd_ring_rebuild_with(full, m, j->members + 1, j->vnodes, hooks, &j->ring) < 0) goto out;
    double f2 = thread_faults(), c2 = thread_cpu_ms();
    j->r->full_ms = c1 - c0;
    j->r->full_faults = f1 - f0;
    j->r->merge_ms = c2 - c1;
    j->r->merge_faults = f2 - f1;
    j->rc = 0;
out:
    rd_ring_delete(full);
    free(m);
    free(names);
    return NULL;
}

/* One run in this (child) process: fills *r; 0 or -1. */
static int run_once(enum kind kind, size_t members, uint32_t vnodes, struct result *r)
{
    rd_heap_keep_freed(); /* the agent's policy, set at its start */
    struct job j = {.kind = kind, .members = members, .vnodes = vnodes, .r = r};
    pthread_t t;
    if (pthread_create(&t, NULL, builder, &j) != 0) return -1;
    pthread_join(t, NULL);
    if (j.rc < 0) return -1;
    char key[32];
    uint64_t sum = 0;
    double t0 = now_ns();
    for (unsigned i = 0; i < LOOKUPS; i++) {
        int len = snprintf(key, sizeof key, "key:%u", i * 2654435761u);
        sum += (uint64_t)rd_ring_owner(j.ring, key, (size_t)len);
    }
    r->lookup_ns = (now_ns() - t0) / LOOKUPS;
    r->peak_mb = proc_kb("/proc/self/status", "VmHWM:") / 1024;
    r->anon_huge_kb = proc_kb("/proc/self/smaps_rollup", "AnonHugePages:");
    rd_ring_delete(j.ring);
    return sum == 0 ? -1 : 0; /* sum: keeps the lookups */
}

/* Runs kind in a new process; its result comes back through a pipe. */
static int run_child(enum kind kind, size_t members, uint32_t vnodes, struct result *r)
{
    int fd[2];
    if (pipe(fd) < 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        close(fd[0]);
        struct result mine;
        int ok = run_once(kind, members, vnodes, &mine) == 0 &&
                 write(fd[1], &mine, sizeof mine) == (ssize_t)sizeof mine;
        _exit(ok ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], r, sizeof *r);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return got == (ssize_t)sizeof *r && WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static void report(const char *what, double *v, int n)
{
    double lo = v[0], hi = v[0];
    for (int i = 1; i < n; i++) {
        if (v[i] < lo) lo = v[i];
        if (v[i] > hi) hi = v[i];
    }
    printf("  %-22s %10.2f  (%.2f-%.2f)\n", what, median(v, n), lo, hi);
}

/* A one-member rebuild with the prefault and without, alternately; prints the medians. */
static int rebuilds_paired(size_t members, uint32_t vnodes)
{
    rd_heap_keep_freed();
    char(*names)[32] = malloc((members + 1) * sizeof *names);
    struct rd_ring_member *m = names ? roster(members + 1, names) : NULL;
    struct rd_ring *old = NULL;
    int rc = -1;
    if (!m || rd_ring_new(m, members, vnodes, &old) < 0) goto out;
    const struct rd_ring_hooks prefault = {.alloc = prefault_alloc};
    printf("one-member rebuild, in pages already present: median of %d, ms\n", REBUILDS);
    for (int cold = 0; cold < 2; cold++) {
        static double t[2][REBUILDS]; /* [with prefault][run] */
        for (int r = 0; r < REBUILDS; r++)
            for (int k = 0; k < 2; k++) {
                int with = (r + k) % 2;
                if (cold) {
                    rd_ring_delete(old);
                    old = NULL;
                    if (rd_ring_new(m, members, vnodes, &old) < 0) goto out;
                }
                struct rd_ring *next = NULL;
                double t0 = now_ns();
                int err = rd_ring_rebuild_with(old, m, members + 1, vnodes, with ? &prefault : NULL,
                                               &next);
                t[with][r] = (now_ns() - t0) / 1e6;
                rd_ring_delete(next);
                if (err < 0) goto out;
            }
        double without = median(t[0], REBUILDS), with = median(t[1], REBUILDS);
        printf("  %-5s without %.3f  with %.3f  (%.3fx)\n", cold ? "cold" : "warm", without, with,
               with / without);
    }
    rc = 0;
out:
    rd_ring_delete(old);
    free(m);
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    size_t members = 1000;
    uint32_t vnodes = 512;
    int runs = 11;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--members") && i + 1 < argc)
            members = strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--vnodes") && i + 1 < argc)
            vnodes = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--members N] [--vnodes V] [--runs R]\n", argv[0]);
            return 2;
        }
    }
    if (members < 1 || vnodes < 1 || runs < 1 || runs > MAX_RUNS) {
        fprintf(stderr, "bench_firstbuild: members and vnodes >= 1, runs 1..%d\n", MAX_RUNS);
        return 2;
    }
    static struct result res[KINDS][MAX_RUNS];
    for (int r = 0; r < runs; r++)
        for (int k = 0; k < KINDS; k++) {
            enum kind kind = (enum kind)((r + k) % KINDS); /* alternate which goes first */
            if (run_child(kind, members, vnodes, &res[kind][r]) < 0) {
                fprintf(stderr, "bench_firstbuild: a %s run failed\n", kind_names[kind]);
                return 1;
            }
        }
    printf("first rings at %zu x %u, %d runs per kind, each in a new process: median (range)\n",
           members, vnodes, runs);
    for (int k = 0; k < KINDS; k++) {
        double v[MAX_RUNS];
        printf("%s\n", kind_names[k]);
#define COLUMN(field, label)                                                                       \
    do {                                                                                           \
        for (int r = 0; r < runs; r++)                                                             \
            v[r] = res[k][r].field;                                                                \
        report(label, v, runs);                                                                    \
    } while (0)
        COLUMN(full_ms, "full build, CPU ms");
        COLUMN(full_faults, "full build, faults");
        COLUMN(merge_ms, "merge, CPU ms");
        COLUMN(merge_faults, "merge, faults");
        COLUMN(lookup_ns, "lookup, ns");
        COLUMN(peak_mb, "peak resident, MB");
        COLUMN(anon_huge_kb, "AnonHugePages, kB");
#undef COLUMN
    }
    return rebuilds_paired(members, vnodes) < 0 ? 1 : 0;
}
