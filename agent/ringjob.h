/*
 * ringjob.h — a ring build (and its diff) off the agent's loop, on a thread of its own.
 *
 * At 1,000 members x 512 vnodes a build costs milliseconds of CPU. On a host where hundreds
 * of agents share a core, those milliseconds stretch to seconds of wall time, and an agent
 * that builds on its loop answers no probe meanwhile: its peers suspect it, its suspicions
 * and refutations change the membership, which asks for more builds. A builder thread builds
 * instead, so the loop keeps answering, and at the lowest priority, so that where the cores
 * are short the loops go first.
 *
 * A nice-19 thread on such a host waits tens of seconds for the CPU, so nothing the loop does
 * may wait for it: no lock the thread can hold, no spin on a flag it has yet to set. libuv's
 * thread pool has both (its queue's mutex, and an async handle the loop spins on until the
 * thread has finished signalling); on a crowded host the loop then stalls for seconds as a
 * job ends (bench/handoff_bench.c). So the builder hands jobs over with atomics alone: the
 * loop stores the job in a slot and writes an eventfd the thread sleeps on; the thread
 * stores the finished job in another slot, then writes an eventfd the loop polls. A job that
 * the thread has not taken yet can be swapped for a newer one (a compare-and-swap on the
 * slot), so a starved thread builds the latest member list, not the lists that came before.
 *
 * A job owns copies of the member list's strings (the member table keeps changing on the
 * loop while the job runs). It reads the agent's current ring as `old`, which the loop keeps
 * alive and unchanged until the job is done: one job at a time. It leaves the new ring, or
 * an error, and what moved, for the loop to publish. The loop frees the rings the thread
 * allocated only while the thread waits for its next job, so never under a malloc arena lock
 * that the thread holds. Nor does the thread hold the kernel's lock on the process's
 * mappings at its low priority: it grows its malloc arena before it lowers itself (heap.h).
 *
 * When the agent stops it gives its job up: the build reads the job's flag as it goes
 * (rd_ring_build_abandonable) and no diff follows it (a diff, once begun, runs to its end),
 * and the thread first gets its priority back, so an agent that leaves does not wait for a
 * low-priority build on a host with no CPU to spare.
 */
#ifndef RD_RINGJOB_H
#define RD_RINGJOB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "ring.h"

/** The nice value of the builder thread. */
#define RD_RING_JOB_NICE 19

struct rd_ring_job {
    /* what to do: set by rd_ring_job_new */
    void (*work)(struct rd_ring_job *job); /**< on the builder thread: rd_ring_job_run */
    const struct rd_ring *old;             /**< the ring it replaces; NULL for none */
    enum rd_ring_mode mode;
    uint32_t vnodes;  /**< ringd mode */
    size_t max_moves; /**< moves the diff names (rd_ring_diff_top) */
    size_t n;         /**< members[0..n) */
    struct rd_ring_member *members;
    size_t listed;       /**< members the list was taken from; n unless the caller sets it
                              (the agent counts alive and suspect ones, drained included) */
    atomic_bool abandon; /**< set by rd_ring_builder_abandon, read by the build */
    /* what came of it: set by rd_ring_job_run */
    int rc;                   /**< 0, or the build's error (ring NULL); RD_ECANCELED: given up */
    struct rd_ring *ring;     /**< the new ring; whoever takes it sets this to NULL */
    bool same;                /**< it places keys exactly as `old` (same checksum and size) */
    int diff_rc;              /**< 0, or the diff's error (diff empty) */
    struct rd_ring_diff diff; /**< old -> ring, unless same */
    uint64_t run_ns;          /**< wall time of the build and diff, waiting not counted */
    uint64_t cpu_ns;          /**< CPU time of the same, on the thread that ran it */
    uint64_t faults;          /**< page faults that thread took meanwhile */
    /* for the caller of rd_ring_job_queue */
    void (*done)(struct rd_ring_job *job);
    void *ctx;
};

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
 * The share of members, by count, that the membership must have gained or lost since a job's
 * list for the job to be outgrown: more than 1/RD_RING_JOB_OUTGROWN_SHARE of the larger of
 * the two counts, then (job->listed) and now (at 1,000 members, 16 or more). On a crowded host such
 * a build is one whose thread got too little CPU to finish it before the list changed, so little of
 * it is done; finished late, it would be followed by a second build for the members it missed. In
 * join storms of 1,000 agents on two cores, those second builds took a quarter to a third of the
 * builders' CPU at a share of 4, and 2% at 64 (bench/README.md, "Builds given up at a 64th").
 */
#define RD_RING_JOB_OUTGROWN_SHARE 64
/** Whether the membership, at `members` now, has outgrown the job's list (above): compared
 * with job->listed, so members left out of the ring (drained) count on both sides. */
bool rd_ring_job_outgrown(const struct rd_ring_job *job, size_t members);
/**
 * A job's other work: the builder thread shrinks its own malloc arena
 * (rd_heap_shrink_own_arena; see heap.h for the steps around it). Set it as job->work.
 */
void rd_ring_job_shrink_heap(struct rd_ring_job *job);
/** Frees the job, its copies, its diff, and its ring unless taken. NULL is fine. */
void rd_ring_job_free(struct rd_ring_job *job);

/** The thread that runs jobs, and the loop's side of the handover. Owned by the loop. */
struct rd_ring_builder {
    uv_poll_t poll;                         /**< the loop's watch on done_fd */
    int wake_fd, done_fd;                   /**< eventfds: loop -> thread, thread -> loop */
    pthread_t thread;                       /**< valid once started */
    bool started, stopped;                  /**< the thread was created; it was joined */
    _Atomic(struct rd_ring_job *) next;     /**< queued, not yet taken by the thread */
    _Atomic(struct rd_ring_job *) finished; /**< done, not yet reported on the loop */
    atomic_bool stop;                       /**< the thread returns at its next wake-up */
    _Atomic pid_t tid;                      /**< the thread, once it lowered itself (0 before) */
    struct rd_ring_job *current;            /**< queued and not yet reported (loop side) */
};

/**
 * Sets up the handover on `loop` (its eventfds and its poll handle), with no thread yet.
 * Returns 0, RD_EIO (errno kept) or libuv's error; on error nothing is left to close.
 */
int rd_ring_builder_init(struct rd_ring_builder *b, uv_loop_t *loop);
/** Starts the thread, which lowers itself to RD_RING_JOB_NICE. Returns 0 or RD_EIO. */
int rd_ring_builder_start(struct rd_ring_builder *b);
/** True when no job is queued or running: rd_ring_job_queue may be called. */
bool rd_ring_builder_idle(const struct rd_ring_builder *b);
/**
 * On the loop's thread, when the builder is idle: queues the job; job->done is called on the
 * loop's thread once it has run (or been given up). Returns 0, or RD_EEXIST when not idle.
 */
int rd_ring_job_queue(struct rd_ring_builder *b, struct rd_ring_job *job);
/** True while the queued job has not been taken by the thread (it may be taken at any time). */
bool rd_ring_builder_queued(const struct rd_ring_builder *b);
/**
 * On the loop's thread: the queued job, unless the thread has taken it, gives its place to
 * `newer` (its done called in its stead) and is returned, unrun and the caller's to free.
 * NULL when the thread had taken it (then `newer` stays the caller's).
 */
struct rd_ring_job *rd_ring_job_replace(struct rd_ring_builder *b, struct rd_ring_job *newer);
/** On the loop's thread: gives the current job up. One not yet taken ends here, unrun; one
 *  running stops at the build's next look at its flag (a diff already begun runs to its
 *  end). Either way its done is called, with RD_ECANCELED unless it had finished. */
void rd_ring_builder_abandon(struct rd_ring_builder *b);
/**
 * From the loop's thread: gives the builder thread the caller's priority, so that what is
 * still to wait for (a job seeing its flag, the thread's exit) does not wait for a nice-19
 * thread on a host with no CPU to spare: that took seconds, and 15 s and more in a storm.
 * Raising a priority takes CAP_SYS_NICE or RLIMIT_NICE (systemd's LimitNICE=+0): without
 * either it is RD_EIO and the thread stays at nice 19. 0 when the thread has not yet
 * lowered itself (once stopped, it then takes the loop's priority back on its own).
 */
int rd_ring_builder_restore_priority(struct rd_ring_builder *b);
/**
 * At the agent's end, on the loop's thread: the thread gets its priority back, the current
 * job is given up and its done called, and the thread is joined. Then the poll handle is
 * closed (its fds with it); the caller runs the loop for the close to complete.
 */
void rd_ring_builder_stop(struct rd_ring_builder *b);

#endif
