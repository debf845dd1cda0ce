/*
 * ringjob.c — a ring build off the agent's loop (see ringjob.h).
 */
#include "ringjob.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/eventfd.h>
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
    job->work = rd_ring_job_run;
    job->n = n;
    job->listed = n;
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

/* Page faults of the calling thread so far. */
static uint64_t thread_faults(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) return 0;
    return (uint64_t)ru.ru_minflt + (uint64_t)ru.ru_majflt;
}

void rd_ring_job_run(struct rd_ring_job *job)
{
    uint64_t t0 = uv_hrtime(), cpu0 = thread_cpu_ns(), faults0 = thread_faults();
    build_and_diff(job);
    job->cpu_ns = thread_cpu_ns() - cpu0;
    job->faults = thread_faults() - faults0;
    job->run_ns = uv_hrtime() - t0;
}

bool rd_ring_job_outgrown(const struct rd_ring_job *job, size_t members)
{
    size_t larger = job->listed > members ? job->listed : members;
    size_t changed = job->listed > members ? job->listed - members : members - job->listed;
    return changed > larger / RD_RING_JOB_OUTGROWN_SHARE;
}

void rd_ring_job_shrink_heap(struct rd_ring_job *job)
{
    rd_heap_shrink_own_arena();
    job->rc = 0;
}

/* The builder thread builds at the lowest priority (a Linux thread's own nice value): where
 * agents crowd the cores, builds take only the CPU that loops answering probes leave. */
static void lower_this_thread(struct rd_ring_builder *b)
{
    pthread_setname_np(pthread_self(), "ring-builder"); /* as top -H and perf name it */
    pid_t tid = (pid_t)syscall(SYS_gettid);
    int nice = getpriority(PRIO_PROCESS, 0); /* the loop's, inherited */
    (void)setpriority(PRIO_PROCESS, (id_t)tid, RD_RING_JOB_NICE);
    atomic_store(&b->tid, tid);
    /* A stop that came before tid was stored found nothing to restore: then it is ours to
     * undo (stop is stored before tid is read, so one of the two sides sees the other). */
    if (atomic_load(&b->stop)) (void)setpriority(PRIO_PROCESS, (id_t)tid, nice);
}

static void signal_fd(int fd)
{
    uint64_t one = 1;
    ssize_t w;
    do
        w = write(fd, &one, sizeof one);
    while (w < 0 && errno == EINTR);
    /* an eventfd refuses a write only when its counter would overflow: it is readable then */
}

/* The thread: sleeps on wake_fd, takes the queued job, runs it, and hands it back. */
static void *builder_main(void *arg)
{
    struct rd_ring_builder *b = arg;
    rd_heap_grow_own_arena(); /* while the thread has the loop's priority (heap.h) */
    lower_this_thread(b);
    for (;;) {
        uint64_t count;
        if (read(b->wake_fd, &count, sizeof count) < 0 && errno == EINTR) continue;
        if (atomic_load(&b->stop)) return NULL;
        struct rd_ring_job *job = atomic_exchange(&b->next, NULL);
        if (!job) continue; /* withdrawn before it was taken */
        if (atomic_load(&job->abandon))
            job->rc = RD_ECANCELED;
        else
            job->work(job);
        atomic_store(&b->finished, job);
        signal_fd(b->done_fd);
    }
}

/* The current job ends on the loop: the poll stops (it kept the loop alive meanwhile). */
static void report(struct rd_ring_builder *b, struct rd_ring_job *job)
{
    b->current = NULL;
    uv_poll_stop(&b->poll);
    job->done(job);
}

static void on_done_fd(uv_poll_t *poll, int status, int events)
{
    (void)status;
    (void)events;
    struct rd_ring_builder *b = poll->data;
    uint64_t count;
    while (read(b->done_fd, &count, sizeof count) < 0 && errno == EINTR) {
    }
    struct rd_ring_job *job = atomic_exchange(&b->finished, NULL);
    if (job) report(b, job);
}

int rd_ring_builder_init(struct rd_ring_builder *b, uv_loop_t *loop)
{
    *b = (struct rd_ring_builder){.wake_fd = -1, .done_fd = -1};
    atomic_init(&b->next, NULL);
    atomic_init(&b->finished, NULL);
    atomic_init(&b->stop, false);
    atomic_init(&b->tid, 0);
    b->wake_fd = eventfd(0, EFD_CLOEXEC);
    b->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    int rc = b->wake_fd < 0 || b->done_fd < 0 ? RD_EIO : 0;
    if (rc == 0) rc = uv_poll_init(loop, &b->poll, b->done_fd);
    if (rc != 0) {
        int saved = errno;
        if (b->wake_fd >= 0) close(b->wake_fd);
        if (b->done_fd >= 0) close(b->done_fd);
        errno = saved;
        return rc;
    }
    b->poll.data = b;
    return 0;
}

int rd_ring_builder_start(struct rd_ring_builder *b)
{
    /* the thread takes no signal: they are the loop's (uv_signal_t) */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&b->thread, NULL, builder_main, b);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        errno = rc;
        return RD_EIO;
    }
    b->started = true;
    return 0;
}

bool rd_ring_builder_idle(const struct rd_ring_builder *b)
{
    return b->current == NULL;
}

int rd_ring_job_queue(struct rd_ring_builder *b, struct rd_ring_job *job)
{
    if (b->current) return RD_EEXIST;
    b->current = job;
    uv_poll_start(&b->poll, UV_READABLE, on_done_fd);
    atomic_store(&b->next, job);
    signal_fd(b->wake_fd);
    return 0;
}

bool rd_ring_builder_queued(const struct rd_ring_builder *b)
{
    return b->current && atomic_load(&b->next) == b->current;
}

struct rd_ring_job *rd_ring_job_replace(struct rd_ring_builder *b, struct rd_ring_job *newer)
{
    struct rd_ring_job *older = b->current;
    if (!older || !atomic_compare_exchange_strong(&b->next, &older, newer)) return NULL;
    b->current = newer;
    return older;
}

void rd_ring_builder_abandon(struct rd_ring_builder *b)
{
    struct rd_ring_job *job = b->current;
    if (!job) return;
    atomic_store(&job->abandon, true);
    struct rd_ring_job *expected = job;
    if (atomic_compare_exchange_strong(&b->next, &expected, NULL)) { /* never taken */
        job->rc = RD_ECANCELED;
        report(b, job);
    }
}

int rd_ring_builder_restore_priority(struct rd_ring_builder *b)
{
    pid_t tid = atomic_load(&b->tid);
    if (tid == 0) return 0;
    errno = 0;
    int nice = getpriority(PRIO_PROCESS, 0); /* the calling thread's */
    if (nice == -1 && errno) return RD_EIO;
    return setpriority(PRIO_PROCESS, (id_t)tid, nice) == 0 ? 0 : RD_EIO;
}

static void on_poll_closed(uv_handle_t *h)
{
    struct rd_ring_builder *b = h->data;
    close(b->wake_fd);
    close(b->done_fd);
    b->wake_fd = b->done_fd = -1;
}

void rd_ring_builder_stop(struct rd_ring_builder *b)
{
    if (b->started && !b->stopped) {
        atomic_store(&b->stop, true); /* before the priority: see lower_this_thread */
        (void)rd_ring_builder_restore_priority(b);
        rd_ring_builder_abandon(b);
        signal_fd(b->wake_fd);
        pthread_join(b->thread, NULL);
        b->stopped = true;
    } else {
        rd_ring_builder_abandon(b); /* no thread: a queued job was never taken */
    }
    struct rd_ring_job *job = atomic_exchange(&b->finished, NULL);
    if (job) report(b, job); /* it ended before its wake-up reached the loop */
    if (!uv_is_closing((uv_handle_t *)&b->poll)) uv_close((uv_handle_t *)&b->poll, on_poll_closed);
}

void rd_ring_job_free(struct rd_ring_job *job)
{
    if (!job) return;
    rd_ring_delete(job->ring);
    rd_ring_diff_destroy(&job->diff);
    free(job);
}
