/*
 * ringjob.c — a ring build off the agent's loop (see ringjob.h).
 */
#include "ringjob.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#include "heap.h"
#include "rd_err.h"

/* Copies s to *at, moving *at past it; NULL stays NULL. */
static const char *copy_string(char **at, const char *s)
{
    if (!s) return NULL;
    size_t len = strlen(s) + 1;
    memcpy(*at, s, len);
    const char *copy = *at;
    *at += len;
    return copy;
}

static size_t string_size(const char *s)
{
    return s ? strlen(s) + 1 : 0;
}

struct rd_ring_job *rd_ring_job_new(const struct rd_ring_member *members, size_t n,
                                    enum rd_ring_mode mode, uint32_t vnodes,
                                    const struct rd_ring *old, size_t max_moves)
{
    /* one block: the job, the member array, then the strings */
    size_t bytes = 0;
    for (size_t i = 0; i < n; i++)
        bytes += string_size(members[i].name) + string_size(members[i].zone) +
                 string_size(members[i].identity);
    size_t head = sizeof(struct rd_ring_job) + n * sizeof(struct rd_ring_member);
    struct rd_ring_job *job = calloc(1, head + bytes);
    if (!job) return NULL;
    job->members = (struct rd_ring_member *)(job + 1);
    char *at = (char *)job + head;
    for (size_t i = 0; i < n; i++) {
        job->members[i] = members[i];
        job->members[i].name = copy_string(&at, members[i].name);
        job->members[i].zone = copy_string(&at, members[i].zone);
        job->members[i].identity = copy_string(&at, members[i].identity);
    }
    atomic_init(&job->abandon, false);
    job->n = n;
    job->mode = mode;
    job->vnodes = vnodes;
    job->old = old;
    job->max_moves = max_moves;
    return job;
}

static void build_and_diff(struct rd_ring_job *job)
{
    job->rc = rd_ring_build_abandonable(job->old, job->members, job->n, job->mode, job->vnodes,
                                        &job->abandon, &job->ring);
    if (job->rc < 0) return;
    if (atomic_load(&job->abandon)) { /* not worth a diff */
        rd_ring_delete(job->ring);
        job->ring = NULL;
        job->rc = RD_ECANCELED;
        return;
    }
    job->same = job->old && rd_ring_checksum(job->ring) == rd_ring_checksum(job->old) &&
                rd_ring_member_count(job->ring) == rd_ring_member_count(job->old);
    if (!job->same)
        job->diff_rc = rd_ring_diff_top(job->old, job->ring, job->max_moves, &job->diff);
}

/* CPU time of the calling thread, in ns. */
static uint64_t thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void rd_ring_job_run(struct rd_ring_job *job)
{
    uint64_t t0 = uv_hrtime(), cpu0 = thread_cpu_ns();
    build_and_diff(job);
    job->cpu_ns = thread_cpu_ns() - cpu0;
    job->run_ns = uv_hrtime() - t0;
}

/* The pool thread, once it has lowered itself (0 before). */
static _Atomic pid_t pool_tid;

/* A pool thread builds at the lowest priority (a Linux thread's own nice value): where
 * agents crowd the cores, builds take only the CPU that loops answering probes leave. */
static void lower_this_thread(void)
{
    static _Thread_local bool lowered;
    if (lowered) return;
    lowered = true;
    pid_t tid = (pid_t)syscall(SYS_gettid);
    (void)setpriority(PRIO_PROCESS, (id_t)tid, RD_RING_JOB_NICE);
    atomic_store(&pool_tid, tid);
}

int rd_ring_pool_restore_priority(void)
{
    pid_t tid = atomic_load(&pool_tid);
    if (tid == 0) return 0;
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0); /* the calling thread's */
    if (nice == -1 && errno) return RD_EIO;
    return setpriority(PRIO_PROCESS, (id_t)tid, nice) == 0 ? 0 : RD_EIO;
}

static void work(uv_work_t *req)
{
    lower_this_thread();
    rd_ring_job_run(req->data);
}

static void after_work(uv_work_t *req, int status)
{
    struct rd_ring_job *job = req->data;
    if (status != 0) job->rc = RD_ECANCELED; /* withdrawn: never run */
    job->done(job);
}

void rd_ring_job_pool_setup(void)
{
    setenv("UV_THREADPOOL_SIZE", "1", 1); /* read by libuv at the first uv_queue_work */
}

int rd_ring_job_queue(uv_loop_t *loop, struct rd_ring_job *job)
{
    job->req.data = job;
    return uv_queue_work(loop, &job->req, work, after_work);
}

bool rd_ring_job_withdraw(struct rd_ring_job *job)
{
    return uv_cancel((uv_req_t *)&job->req) == 0;
}

void rd_ring_job_abandon(struct rd_ring_job *job)
{
    if (!rd_ring_job_withdraw(job)) atomic_store(&job->abandon, true);
}

static void shrink(uv_work_t *req)
{
    (void)req;
    rd_heap_shrink_own_arena();
}

int rd_ring_pool_shrink(uv_loop_t *loop, uv_work_t *req, uv_after_work_cb done)
{
    return uv_queue_work(loop, req, shrink, done);
}

void rd_ring_job_free(struct rd_ring_job *job)
{
    if (!job) return;
    rd_ring_delete(job->ring);
    rd_ring_diff_destroy(&job->diff);
    free(job);
}
