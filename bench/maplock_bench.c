/*
 * maplock_bench.c — how long a loop waits for the kernel's lock on its process's mappings
 * while a starved nice-19 thread of the same process changes them (agent/heap.h).
 *
 * A host with no CPU to spare: SPINNERS busy loops at nice 0. Beside them, PROCS processes
 * of each kind run a loop that sleeps 10 ms, then takes and gives back 256 KB of heap without
 * writing it (brk() up and down, as a loop's heap grows: each call takes the mappings lock),
 * and records how late it woke. A second thread at nice 19 runs meanwhile:
 *   none     no second thread: the lateness the crowded host alone causes;
 *   maps     the thread changes the protection of 64 MB it has touched, back and forth:
 *            what a malloc arena does once each time it grows (mprotect() walks the page
 *            tables under the lock and may give the CPU away there);
 *   grown    the thread grew its arena once as it started, at nice 0, as the agent's
 *            builder does (rd_heap_grow_own_arena), then lowered itself and takes, writes
 *            and frees 8 MB blocks in it: work of a build's size that changes no mapping.
 * All kinds run at once, on the same host, so they see the same load. Per kind it prints the
 * median and the worst of each process's longest lateness, how many times a loop woke 1 s
 * or more late, and how many rounds the threads did. Run by hand (bench/README.md); it stops
 * its own processes.
 */
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "crowd.h"
#include "heap.h"

enum kind { NONE, MAPS, GROWN, KINDS };
static const char *const kind_names[KINDS] = {"none", "maps", "grown"};

#define TICK_MS   10
#define REGION    (64u << 20)
#define BLOCK     (8u << 20)
#define MAX_PROCS 50

struct result {
    double worst_ms;      /* the latest the loop woke */
    unsigned late_1s;     /* wake-ups 1 s or more late */
    unsigned long rounds; /* the thread's */
};

static atomic_ulong rounds;

static void *thread_main(void *arg)
{
    enum kind kind = (enum kind)(long)arg;
    if (kind == GROWN) rd_heap_grow_own_arena(); /* before lowering, as the agent's builder */
    setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 19);
    char *region = NULL;
    if (kind == MAPS) {
        region = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (region == MAP_FAILED) abort();
        for (size_t i = 0; i < REGION; i += 1u << 21) /* page tables in every 2 MB */
            region[i] = 1;
    }
    for (;;) { /* until the process exits */
        if (kind == MAPS) {
            mprotect(region, REGION, PROT_NONE);
            mprotect(region, REGION, PROT_READ | PROT_WRITE);
        } else {
            char *block = malloc(BLOCK);
            if (!block) abort();
            for (size_t i = 0; i < BLOCK; i += 4096)
                block[i] = (char)i;
            free(block);
        }
        atomic_fetch_add(&rounds, 1);
    }
}

static struct result run_one(enum kind kind, unsigned seconds)
{
    rd_heap_keep_freed();         /* the agent's policy: no block mapped on its own */
    mallopt(M_TRIM_THRESHOLD, 0); /* but the loop's heap shrinks on every free: brk() */
    pthread_t thread;
    if (kind != NONE && pthread_create(&thread, NULL, thread_main, (void *)(long)kind) != 0)
        abort();
    struct result r = {0};
    double end = now_ns() + seconds * 1e9, last = now_ns();
    while (now_ns() < end) {
        struct timespec ts = {0, TICK_MS * 1000000L};
        nanosleep(&ts, NULL);
        double now = now_ns(), late = (now - last) / 1e6 - TICK_MS;
        last = now;
        if (late > r.worst_ms) r.worst_ms = late;
        if (late >= 1000) r.late_1s++;
        char *volatile block = malloc(256 * 1024);
        free(block);
    }
    r.rounds = atomic_load(&rounds);
    return r; /* the process exits at once: the thread is not waited for */
}

static unsigned g_seconds; /* for run_kind, in each process */

static void run_kind(int kind, void *result)
{
    *(struct result *)result = run_one((enum kind)kind, g_seconds);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        puts("usage: bench_maplock [--spinners 300] [--procs 6] [--seconds 40]");
        return 0;
    }
    unsigned spinners = crowd_arg(argc, argv, "--spinners", 300),
             procs = crowd_arg(argc, argv, "--procs", 6),
             seconds = crowd_arg(argc, argv, "--seconds", 40);
    if (procs == 0 || procs > MAX_PROCS || spinners > 2000 || seconds == 0) {
        fputs("bench_maplock: procs 1..50, spinners 0..2000, seconds >= 1\n", stderr);
        return 2;
    }
    g_seconds = seconds;
    pid_t *spin = crowd_start(spinners);
    struct result *got = calloc((size_t)KINDS * procs, sizeof *got); /* kind by kind */
    if (!got) abort();
    crowd_run(KINDS, procs, run_kind, sizeof *got, got);
    crowd_stop(spin, spinners);

    printf("%u spinners, %u processes per kind, %u s\n", spinners, procs, seconds);
    printf("%-6s %18s %12s %12s %14s\n", "kind", "median worst (ms)", "worst (ms)", "late >= 1 s",
           "thread rounds");
    for (int k = 0; k < KINDS; k++) {
        unsigned late = 0;
        unsigned long n = 0;
        double worst[MAX_PROCS];
        for (unsigned p = 0; p < procs; p++) {
            late += got[k * procs + p].late_1s;
            n += got[k * procs + p].rounds;
            worst[p] = got[k * procs + p].worst_ms;
        }
        double med = median(worst, (int)procs); /* sorts: the worst is last */
        printf("%-6s %18.0f %12.0f %12u %14lu\n", kind_names[k], med, worst[procs - 1], late, n);
    }
    free(got);
    return 0;
}
