/*
 * txqueue.h — the dissemination queue: which member records still have sends due, and in
 * which order they go out.
 *
 * Why this shape: a gossip packet takes the records with the most sends left first, so
 * that fresh news (a suspicion, a refutation) leaves at once instead of waiting behind a
 * backlog of joins. The queue is one doubly linked list per number of sends left, threaded
 * through per-slot links, so every operation is O(1) and iteration is in send order:
 *   - push puts a record at the head of its level: the newest news goes first;
 *   - sent moves it one level down, behind the records already there;
 *   - one entry per slot: pushing again replaces the older news.
 * Slots are the caller's (the member table's indexes); the queue knows nothing else of
 * members, and owns its arrays.
 */
#ifndef RD_TXQUEUE_H
#define RD_TXQUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Levels of the queue: a record has at most RD_TXQUEUE_LEVELS - 1 sends left. */
#define RD_TXQUEUE_LEVELS 64
/** Returned by iteration when no slot follows. */
#define RD_TXQUEUE_NONE UINT32_MAX

/** One slot's place in the queue. */
struct rd_txqueue_slot {
    uint32_t left;       /**< sends still due; 0 = not queued */
    uint32_t prev, next; /**< neighbours in level `left`, or RD_TXQUEUE_NONE */
};

struct rd_txqueue {
    struct rd_txqueue_slot *slots; /**< [cap] */
    size_t cap;
    uint32_t head[RD_TXQUEUE_LEVELS], tail[RD_TXQUEUE_LEVELS];
    uint32_t top;   /**< no level above this one holds anything */
    size_t pending; /**< slots with sends left */
};

/** An empty queue for slots 0 .. cap-1. Returns 0, or -1 if memory fails. */
int rd_txqueue_init(struct rd_txqueue *q, size_t cap);
/** Frees the arrays. A zeroed or freed queue is fine. */
void rd_txqueue_free(struct rd_txqueue *q);
/** Makes room for slots 0 .. cap-1 (never shrinks); new slots are not queued. 0 or -1. */
int rd_txqueue_grow(struct rd_txqueue *q, size_t cap);

/**
 * Queues `slot` for `sends` sends (capped at RD_TXQUEUE_LEVELS - 1) at the head of its
 * level, replacing whatever was queued for it. `sends` = 0 just takes it out.
 */
void rd_txqueue_push(struct rd_txqueue *q, uint32_t slot, uint32_t sends);
/** One send of `slot` went out: one level down, behind its equals; out at 0. */
void rd_txqueue_sent(struct rd_txqueue *q, uint32_t slot);
/** Takes `slot` out of the queue. Nothing happens if it was not queued. */
void rd_txqueue_remove(struct rd_txqueue *q, uint32_t slot);
/**
 * The caller moved slot `from`'s record into slot `to` (a swap-remove of its table): `to`
 * takes `from`'s place in the queue, and `from` is left unqueued. `to` must not be queued.
 */
void rd_txqueue_move(struct rd_txqueue *q, uint32_t from, uint32_t to);

/** Sends still due for `slot`; 0 if it is not queued. */
uint32_t rd_txqueue_sends_left(const struct rd_txqueue *q, uint32_t slot);
/** Number of slots with sends left. */
size_t rd_txqueue_pending(const struct rd_txqueue *q);

/**
 * Iteration in send order: rd_txqueue_first() is the slot with the most sends left (the
 * newest among equals), rd_txqueue_next() the one after `slot`; RD_TXQUEUE_NONE at the
 * end. The queue must not change while iterating.
 */
uint32_t rd_txqueue_first(struct rd_txqueue *q);
uint32_t rd_txqueue_next(const struct rd_txqueue *q, uint32_t slot);

/**
 * Verifies the structure for slots 0 .. used-1 (slots from `used` on must be unqueued):
 * every level's list is linked both ways and ends at its tail, each slot on it has that
 * many sends left, nothing is above `top`, the pending count is the number of queued
 * slots, and no queued slot is off its list. Returns 0, or RD_ECORRUPT with *why saying
 * what is wrong. O(cap + levels). It is the two checks below, which a caller may also spread out.
 */
int rd_txqueue_check(const struct rd_txqueue *q, size_t used, const char **why);
/** The lists, `top` and the pending count: O(queued + levels). */
int rd_txqueue_check_lists(const struct rd_txqueue *q, size_t used, const char **why);
/** One slot, 0 <= slot < cap: unqueued with no links, or queued on its level's list. O(1). */
int rd_txqueue_check_slot(const struct rd_txqueue *q, size_t used, uint32_t slot, const char **why);

#endif
