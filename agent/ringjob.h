/*
 * ringjob.h — a ring build (and its diff) off the agent's loop.
 *
 * At 1,000 members x 512 vnodes a build costs milliseconds of CPU. On a host where hundreds
 * of agents share a core, those milliseconds stretch to seconds of wall time, and an agent
 * that builds on its loop answers no probe meanwhile: its peers suspect it, its suspicions
 * and refutations change the membership, which asks for more builds. A job builds on
 * libuv's thread pool instead, so the loop keeps answering while a ring is built, and at
 * the lowest priority, so that where the cores are short the loops go first.
 *
 * A job owns copies of the member list's strings (the member table keeps changing on the
 * loop while the job runs). It reads the agent's current ring as `old`, which the loop keeps
 * alive and unchanged until the job is done: one job at a time. It leaves the new ring, or
 * an error, and what moved, for the loop to publish.
 *
 * When the agent stops it gives its job up: the ring code reads the job's flag as it goes
 * (rd_ring_build_abandonable), so an agent that leaves does not wait for a low-priority
 * build to finish on a host with no CPU to spare; the thread first gets its priority back.
 *
 * The loop never withdraws a queued job whose member list has gone stale, though on a
 * crowded host a job waits seconds for its thread: every call into libuv's pool takes the
 * pool's lock and signals its condition variable, and either can wait for a nice-19 thread
 * that the host does not schedule for tens of seconds, which leaves the loop deaf and its
 * agent declared dead. So the loop queues only when no job is in flight and the thread is
 * back waiting, and gives the thread its priority back before the one call it makes into
 * a busy pool, at the end.
 */
#ifndef RD_RINGJOB_H
#define RD_RINGJOB_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ring.h"

/** The nice value of the pool threads that run jobs (rd_ring_job_queue). */
#define RD_RING_JOB_NICE 19

struct rd_ring_job {
    uv_work_t req;
    /* what to build: set by rd_ring_job_new */
    const struct rd_ring *old; /**< the ring it replaces; NULL for none */
    enum rd_ring_mode mode;
    uint32_t vnodes;  /**< ringd mode */
    size_t max_moves; /**< moves the diff names (rd_ring_diff_top) */
    size_t n;         /**< members[0..n) */
    struct rd_ring_member *members;
    atomic_bool abandon; /**< set by rd_ring_job_abandon, read by the build */
    /* what came of it: set by rd_ring_job_run */
    int rc;                   /**< 0, or the build's error (ring NULL); RD_ECANCELED: given up */
    struct rd_ring *ring;     /**< the new ring; whoever takes it sets this to NULL */
    bool same;                /**< it places keys exactly as `old` (same checksum and size) */
    int diff_rc;              /**< 0, or the diff's error (diff empty) */
    struct rd_ring_diff diff; /**< old -> ring, unless same */
    uint64_t run_ns;          /**< wall time of the build and diff, queueing not counted */
    uint64_t cpu_ns;          /**< CPU time of the same, on the thread that ran it */
    /* for the caller of rd_ring_job_queue */
    void (*done)(struct rd_ring_job *job);
    void *ctx;
};

/**
 * Before the loop's first job: libuv's pool gets a single thread. Jobs run one at a time,
 * and on one thread they all allocate from one malloc arena of their own, which the ring
 * freed on the loop goes back to for the next build. Never one arena for loop and pool:
 * a build thread preempted (at its low priority) while it holds the arena's lock would stop
 * the loop at its next malloc for as long.
 */
void rd_ring_job_pool_setup(void);

/**
 * A job that builds members[0..n) (copied, strings included) in `mode`, from `old` where it
 * can (rd_ring_rebuild). NULL when out of memory.
 */
struct rd_ring_job *rd_ring_job_new(const struct rd_ring_member *members, size_t n,
                                    enum rd_ring_mode mode, uint32_t vnodes,
                                    const struct rd_ring *old, size_t max_moves);
/** Builds and diffs, on the calling thread. */
void rd_ring_job_run(struct rd_ring_job *job);
/**
 * Runs the job on the loop's thread pool, then calls job->done on the loop's thread (with
 * the job run, or with rc = RD_ECANCELED if it was given up). Returns 0, or libuv's error
 * when it could not be queued (then nothing is called).
 */
int rd_ring_job_queue(uv_loop_t *loop, struct rd_ring_job *job);
/** On the loop's thread: withdraws a queued job that its thread has not started. True if it
 *  was withdrawn (job->done then comes with RD_ECANCELED); false if it runs or has run. */
bool rd_ring_job_withdraw(struct rd_ring_job *job);
/** On the loop's thread: withdraws the job, or stops it if it is running. job->done comes as
 *  usual: with RD_ECANCELED unless the job had already finished. */
void rd_ring_job_abandon(struct rd_ring_job *job);
/**
 * Queues rd_heap_shrink_own_arena() on the pool's thread, behind any job, then calls `done`
 * on the loop's thread; see heap.h for the steps around it. Returns 0, or libuv's error
 * (then nothing is called).
 */
int rd_ring_pool_shrink(uv_loop_t *loop, uv_work_t *req, uv_after_work_cb done);
/**
 * At the agent's end, from the loop's thread: gives the pool thread the caller's priority
 * back, so that what is left to wait for (an abandoned job seeing its flag, the thread's
 * own exit, which libuv joins at process exit) does not wait for a nice-19 thread to be
 * scheduled on a host with no CPU to spare: that took seconds, and 15 s and more in a
 * storm. Raising a priority takes CAP_SYS_NICE or RLIMIT_NICE (systemd's LimitNICE=+0):
 * without either it is RD_EIO and the thread stays at nice 19. 0 when no job ever ran.
 */
int rd_ring_pool_restore_priority(void);
/** Frees the job, its copies, its diff, and its ring unless taken. NULL is fine. */
void rd_ring_job_free(struct rd_ring_job *job);

#endif
