/*
 * stall.h — where the loop's time went while it was late: on a CPU, waiting for one, in its
 * poll, or asleep somewhere else.
 *
 * A loop that comes late looks the same from outside whatever the cause, and the causes
 * want different cures: a loop that ran the whole time does too much; one that waited for a
 * CPU shares a crowded host; one that slept outside its poll waited on the kernel (a lock,
 * a fault, a disk). Linux keeps, per thread, the time it spent on a CPU and the time it was
 * runnable but waiting (`/proc/thread-self/schedstat`); libuv keeps the time its loop spent
 * in the poll. The agent samples them at its ticks, so a late tick can say how the time
 * since the point before it divides, and the same for the builder thread (ringjob.h), whose
 * low priority is the first suspect when a loop stalls on a crowded host. A tick on time
 * takes a point only every RD_STALL_POINT_EVERY_MS: in a join storm ticks come several a
 * second, and their reads of schedstat were 2.3% of all the storm's CPU. A late tick always
 * does, from a point at most that much older than the tick before it.
 *
 * The arithmetic (rd_stall_between) and the parsing are apart from the reads, so a unit
 * test can check both without a kernel's help.
 */
#ifndef RD_STALL_H
#define RD_STALL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** A lateness the agent logs as a stall, in ms (a second: peers begin to suspect). */
#define RD_STALL_LOG_MS 1000

/** How often a tick on time takes a point, in ms. */
#define RD_STALL_POINT_EVERY_MS 500

/** One thread's cumulative times, as schedstat gives them. */
struct rd_sched_times {
    uint64_t on_cpu_ns;   /**< running */
    uint64_t runnable_ns; /**< runnable, waiting for a CPU */
};

/** Parses schedstat's text ("ON_CPU RUNNABLE SLICES\n", nanoseconds); false if malformed. */
bool rd_sched_times_parse(const char *text, size_t len, struct rd_sched_times *out);

/** What the meter reads at one moment. */
struct rd_stall_point {
    uint64_t at_ns;      /**< monotonic clock */
    uint64_t polling_ns; /**< the loop's cumulative time in its poll (uv_metrics_idle_time) */
    struct rd_sched_times loop;
    struct rd_sched_times builder;
    bool builder_known;
};

/** How a window between two points divides, in ms. */
struct rd_stall {
    uint64_t window_ms;
    uint64_t on_cpu_ms;   /**< the loop thread ran */
    uint64_t runnable_ms; /**< it waited for a CPU */
    uint64_t polling_ms;  /**< it was in its poll (where a wake-up's wait for a CPU counts too) */
    uint64_t blocked_ms;  /**< the rest: asleep outside the poll (at least this long) */
    bool builder_known;
    uint64_t builder_on_cpu_ms, builder_runnable_ms;
};

/** The window from `a` to the later `b`. Counters that went backwards count as zero. */
void rd_stall_between(const struct rd_stall_point *a, const struct rd_stall_point *b,
                      struct rd_stall *out);

/** Reads the loop thread's times and, once it is known, the builder thread's. */
struct rd_stall_meter {
    int loop_fd, builder_fd; /**< schedstat files; -1 when unreadable or not yet open */
    bool have;               /**< last holds a point */
    struct rd_stall_point last;
};

/** On the loop thread (it opens that thread's file). Without schedstat the meter reads
 *  nothing and rd_stall_meter_sample() returns false. */
void rd_stall_meter_open(struct rd_stall_meter *m);
/** Reads thread `tid` of this process too from the next sample on (0: none). */
void rd_stall_meter_watch(struct rd_stall_meter *m, pid_t tid);
/** Whether a tick at `now_ns`, `late_ms` late, takes a point: a late one (RD_STALL_LOG_MS or
 *  more) always, one on time when there is none yet or the last is RD_STALL_POINT_EVERY_MS
 *  old. */
bool rd_stall_meter_due(const struct rd_stall_meter *m, uint64_t now_ns, uint64_t late_ms);
/** Takes a point; true, with the window since the point before, if there was one. */
bool rd_stall_meter_sample(struct rd_stall_meter *m, uint64_t now_ns, uint64_t polling_ns,
                           struct rd_stall *since);
void rd_stall_meter_close(struct rd_stall_meter *m);

#endif
