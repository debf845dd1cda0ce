/*
 * handoff_bench.c — how long a loop goes deaf as a starved nice-19 thread hands it ring builds,
 * through libuv's thread pool against the agent's builder (agent/ringjob.h).
 *
 * A host with no CPU to spare: SPINNERS busy loops at nice 0. Beside them, PAIRS processes of
 * each kind run a libuv loop whose 10 ms timer records how late it fires, while ring jobs
 * (MEMBERS x VNODES, as the agent builds them) run one after the other at nice 19:
 *   none     no jobs: the lateness the crowded host alone causes;
 *   pool     uv_queue_work, the job's thread lowering itself as the agent's pool thread did;
 *   builder  rd_ring_builder, as the agent runs them now.
 * All kinds run at once, on the same host, so they see the same load. Per kind it prints the
 * jobs finished, the median and the worst of each process's longest lateness, and how many
 * times a timer fired 1 s or more late (a deaf stretch of that length makes peers suspect
 * the agent). Run by hand (bench/README.md); it stops its own processes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <uv.h>

#include "bench_util.h"
#include "crowd.h"
#include "ring.h"
#include "ringjob.h"

enum kind { NONE, POOL, BUILDER, KINDS };
static const char *const kind_names[KINDS] = {"none", "pool", "builder"};

#define TICK_MS 10

struct result {
    unsigned jobs;
    double worst_ms;  /* the latest a tick fired */
    unsigned late_1s; /* ticks 1 s or more late */
};

static struct {
    uv_loop_t *loop;
    uv_timer_t tick;
    uint64_t last_ms, end_ms;
    struct result r;
    struct rd_ring_member *members;
    size_t n;
    uint32_t vnodes;
    uv_work_t work;
    struct rd_ring_builder builder;
    struct rd_ring_job *job;
} g;

static void on_tick(uv_timer_t *t)
{
    (void)t;
    uint64_t now = uv_now(g.loop);
    double late = (double)(now - g.last_ms) - TICK_MS;
    g.last_ms = now;
    if (late > g.r.worst_ms) g.r.worst_ms = late;
    if (late >= 1000) g.r.late_1s++;
    if (now >= g.end_ms) uv_stop(g.loop);
}

static struct rd_ring_job *new_job(void)
{
    struct rd_ring_job *job =
        rd_ring_job_new(g.members, g.n, RD_RING_MODE_RINGD, g.vnodes, NULL, 16);
    if (!job) abort();
    return job;
}

/* pool: the job's thread lowers itself once, as the agent's pool thread did */
static void pool_work(uv_work_t *req)
{
    static _Thread_local int lowered;
    if (!lowered) {
        setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), RD_RING_JOB_NICE);
        lowered = 1;
    }
    rd_ring_job_run(req->data);
}

static void pool_done(uv_work_t *req, int status)
{
    (void)status;
    rd_ring_job_free(req->data);
    g.r.jobs++;
    g.work.data = new_job();
    uv_queue_work(g.loop, &g.work, pool_work, pool_done);
}

static void builder_done(struct rd_ring_job *job)
{
    rd_ring_job_free(job);
    g.r.jobs++;
    struct rd_ring_job *next = new_job();
    next->done = builder_done;
    rd_ring_job_queue(&g.builder, next);
}

static struct result run_one(enum kind kind, unsigned seconds)
{
    g.loop = uv_default_loop();
    uv_timer_init(g.loop, &g.tick);
    uv_update_time(g.loop);
    g.last_ms = uv_now(g.loop);
    g.end_ms = g.last_ms + seconds * 1000u;
    uv_timer_start(&g.tick, on_tick, TICK_MS, TICK_MS);
    if (kind == POOL) {
        g.work.data = new_job();
        uv_queue_work(g.loop, &g.work, pool_work, pool_done);
    } else if (kind == BUILDER) {
        if (rd_ring_builder_init(&g.builder, g.loop) != 0 || rd_ring_builder_start(&g.builder) != 0)
            abort();
        struct rd_ring_job *job = new_job();
        job->done = builder_done;
        rd_ring_job_queue(&g.builder, job);
    }
    uv_run(g.loop, UV_RUN_DEFAULT);
    return g.r; /* the process exits at once: the job in flight is not waited for */
}

static unsigned g_seconds; /* for run_kind, in each process */

static void run_kind(int kind, void *result)
{
    *(struct result *)result = run_one((enum kind)kind, g_seconds);
}

int main(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        puts("usage: bench_handoff [--spinners 30] [--pairs 10] [--seconds 30] [--members 100] "
             "[--vnodes 64]");
        return 0;
    }
    unsigned spinners = crowd_arg(argc, argv, "--spinners", 30),
             pairs = crowd_arg(argc, argv, "--pairs", 10),
             seconds = crowd_arg(argc, argv, "--seconds", 30);
    g.n = crowd_arg(argc, argv, "--members", 100);
    g.vnodes = crowd_arg(argc, argv, "--vnodes", 64);
    g_seconds = seconds;
    static char names[100000][32];
    if (g.n == 0 || g.n > 100000 || pairs == 0 || pairs > 100 || spinners > 2000) {
        fputs("bench_handoff: members 1..100000, pairs 1..100, spinners 0..2000\n", stderr);
        return 2;
    }
    g.members = calloc(g.n, sizeof *g.members);
    for (size_t i = 0; i < g.n; i++) {
        snprintf(names[i], sizeof names[i], "node-%zu", i);
        g.members[i] = (struct rd_ring_member){names[i], RD_WEIGHT_ONE, NULL, NULL};
    }
    setenv("UV_THREADPOOL_SIZE", "1", 1); /* as the agent had it */
    pid_t *spin = crowd_start(spinners);
    struct result *got = calloc((size_t)KINDS * pairs, sizeof *got); /* kind by kind */
    if (!got) abort();
    crowd_run(KINDS, pairs, run_kind, sizeof *got, got);
    crowd_stop(spin, spinners);

    printf("%u spinners, %u processes per kind, %u s, jobs of %zu members x %u vnodes\n", spinners,
           pairs, seconds, g.n, g.vnodes);
    printf("%-8s %8s %18s %16s %12s\n", "kind", "jobs", "median worst (ms)", "worst (ms)",
           "late >= 1 s");
    for (int k = 0; k < KINDS; k++) {
        unsigned jobs = 0, late = 0;
        double worst[100];
        for (unsigned p = 0; p < pairs; p++) {
            jobs += got[k * pairs + p].jobs;
            late += got[k * pairs + p].late_1s;
            worst[p] = got[k * pairs + p].worst_ms;
        }
        double med = median(worst, (int)pairs); /* sorts: the worst is last */
        printf("%-8s %8u %18.0f %16.0f %12u\n", kind_names[k], jobs, med, worst[pairs - 1], late);
    }
    free(g.members);
    free(got);
    return 0;
}
