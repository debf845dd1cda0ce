/*
 * hooks.h — event handlers: commands the agent runs when the membership or the ring
 * changes (--on-event [FILTER=]CMD), without ever waiting for them.
 *
 * Each handler has its own bounded queue of events and at most one process at a time.
 * An event is queued; when no process of the handler runs, one is spawned (/bin/sh -c CMD)
 * for everything queued, the events written to its stdin as the JSON lines `ringd watch
 * --json` prints (event.h), the last one also in RINGD_* variables. Events arriving while
 * it runs wait for the next run; past the queue's bounds the oldest are dropped and
 * counted. A process past the timeout is killed. Nothing here blocks: stdin is a
 * non-blocking pipe written by libuv from one buffer the queue's bounds limit.
 *
 * The pure parts (the FILTER=CMD syntax, the mapping of member changes to event names,
 * the queue) are public so the unit tests drive them without processes.
 */
#ifndef RD_AGENT_HOOKS_H
#define RD_AGENT_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "buf.h"
#include "member.h"

/** --on-event entries an agent accepts. */
#define RD_HOOKS_MAX 8
/** Longest --on-event value, filter and command together. */
#define RD_HOOK_SPEC_MAX 1024
/** Events one handler's queue holds; past this the oldest are dropped. */
#define RD_HOOK_QUEUE_MAX 1024
/** Bytes of JSON one handler's queue holds (and so one run's stdin at most). */
#define RD_HOOK_QUEUE_BYTES (1024u * 1024u)
/** Longest --event-timeout, in seconds. */
#define RD_HOOK_TIMEOUT_MAX_S 86400
/** "events dropped" is logged at most this often per handler. */
#define RD_HOOK_DROP_LOG_MS 10000

/** The events a handler may ask for. */
enum rd_hook_event {
    RD_HOOK_MEMBER_JOIN,
    RD_HOOK_MEMBER_LEAVE,
    RD_HOOK_MEMBER_FAILED,
    RD_HOOK_MEMBER_UPDATE,
    RD_HOOK_RING,
    RD_HOOK_NEVENTS
};

/** Every event: the filter of an entry without one. */
#define RD_HOOK_ALL ((1u << RD_HOOK_NEVENTS) - 1)

/** "member-join", ... "ring". */
const char *rd_hook_event_name(enum rd_hook_event e);

/**
 * Splits an --on-event value into the events it asks for (a mask of 1 << rd_hook_event)
 * and its command, a pointer into spec. The text before the first '=' is a filter when it
 * is made of lower-case letters, '-' and ',' only: a comma list of event names, each known
 * (a typo is refused, not run as a command). Otherwise the whole value is the command and
 * every event is asked for. Returns 0, or RD_EINVAL with one line in err.
 */
int rd_hook_spec_parse(const char *spec, unsigned *mask, const char **cmd, char *err,
                       size_t errlen);

/**
 * The event a change of a member's status is: a member new to us or back from dead or
 * left is a join, left a leave, dead a failure, and a change without a new status (a
 * newer record with other tags, weight or zone) an update. -1 for changes no handler
 * hears: suspicions and refuted ones (alive again from suspect).
 */
int rd_hook_member_event(bool is_new, uint8_t old_status, uint8_t status);

/** One queued event: its JSON line and what the RINGD_* variables say of it. */
struct rd_hook_item {
    char *line; /* the JSON line with its '\n', owned by the queue */
    size_t len;
    char event[16];
    char member[RD_NAME_MAX + 1];
    char status[8];
    char addr[RD_ADDR_STRLEN];
    char checksum[24];
    char moved[24];
};

/** A bounded FIFO of events: a ring of items, bounded in count and in bytes. */
struct rd_hook_queue {
    struct rd_hook_item *items;
    size_t head, len, cap;
    size_t bytes, max_bytes;
};

/** An empty queue of up to max_items events and max_bytes of JSON. 0 or RD_ENOMEM. */
int rd_hook_queue_init(struct rd_hook_queue *q, size_t max_items, size_t max_bytes);
void rd_hook_queue_free(struct rd_hook_queue *q);
/**
 * Queues `it`, taking its line (which must be malloc'd; freed here on failure). The oldest
 * events make room when the queue is full, by count or bytes; a line longer than all the
 * room there is is dropped itself. Returns how many events were dropped.
 */
size_t rd_hook_queue_push(struct rd_hook_queue *q, struct rd_hook_item *it);
/**
 * Moves every queued event's line, oldest first, to the end of batch, and copies the last
 * event (lines excluded) to *last. Returns how many were taken (0: queue empty, *last
 * untouched), or RD_ENOMEM with the queue unchanged.
 */
int rd_hook_queue_take(struct rd_hook_queue *q, struct rd_buf *batch, struct rd_hook_item *last);

/** What INFO shows of the handlers. */
struct rd_hook_stats {
    uint64_t events_handled;  /**< events given to runs that exited 0 */
    uint64_t events_dropped;  /**< events dropped from a full queue, or a run that did not start */
    uint64_t handlers_killed; /**< runs killed past --event-timeout */
    uint64_t handlers_failed; /**< runs that exited non-zero, died of a signal or did not start */
};

struct rd_hooks;

/**
 * Starts the handlers of specs[0..n) (each an --on-event value, already validated) on
 * `loop`, each run killed after timeout_s seconds. n may be 0. Returns 0 or RD_EINVAL /
 * RD_ENOMEM with one line in err.
 */
int rd_hooks_start(uv_loop_t *loop, const char (*specs)[RD_HOOK_SPEC_MAX + 1], size_t n,
                   uint32_t timeout_s, struct rd_hooks **out, char *err, size_t errlen);
/**
 * Hands one event, with the fields query.c publishes for it, to the handlers that asked for
 * it. Never blocks: at most it queues, and spawns a process. NULL h is fine.
 */
void rd_hooks_event(struct rd_hooks *h, enum rd_hook_event e, const char *const *fields, size_t n);
void rd_hooks_stats(const struct rd_hooks *h, struct rd_hook_stats *out);
/**
 * Closes the handlers' handles; a process still running is left to finish (its stdin is
 * closed). The memory is freed once the loop has run the close callbacks. NULL is fine.
 */
void rd_hooks_close(struct rd_hooks *h);

#endif
