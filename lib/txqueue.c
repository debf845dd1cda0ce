/*
 * txqueue.c — the dissemination queue: a doubly linked list per number of sends left.
 *
 * Shape: the links live in one array of slots (sends left, prev, next), so the queue of a
 * member table costs 12 bytes per member and no allocation after growth. Unlinking and
 * linking are the two primitives; push, sent, remove and move are each a few lines over
 * them. `top` is lowered lazily, when iteration starts, so sending stays O(1).
 */
#include "txqueue.h"

#include <stdlib.h>

#include "rd_err.h"

#define NONE RD_TXQUEUE_NONE

static const struct rd_txqueue_slot unqueued = {.left = 0, .prev = NONE, .next = NONE};

int rd_txqueue_init(struct rd_txqueue *q, size_t cap)
{
    *q = (struct rd_txqueue){0};
    for (uint32_t level = 0; level < RD_TXQUEUE_LEVELS; level++)
        q->head[level] = q->tail[level] = NONE;
    return rd_txqueue_grow(q, cap);
}

void rd_txqueue_free(struct rd_txqueue *q)
{
    free(q->slots);
    q->slots = NULL;
    q->cap = 0;
}

int rd_txqueue_grow(struct rd_txqueue *q, size_t cap)
{
    if (cap <= q->cap) return 0;
    struct rd_txqueue_slot *s = realloc(q->slots, cap * sizeof *s);
    if (!s) return RD_ENOMEM;
    for (size_t i = q->cap; i < cap; i++)
        s[i] = unqueued;
    q->slots = s;
    q->cap = cap;
    return 0;
}

/* Takes `slot` out of its level's list; its sends left stay as they were. */
static void unlink_slot(struct rd_txqueue *q, uint32_t slot)
{
    struct rd_txqueue_slot *e = &q->slots[slot];
    if (e->prev != NONE)
        q->slots[e->prev].next = e->next;
    else
        q->head[e->left] = e->next;
    if (e->next != NONE)
        q->slots[e->next].prev = e->prev;
    else
        q->tail[e->left] = e->prev;
    e->prev = e->next = NONE;
}

/* Points `slot`'s neighbours (its prev and next, or the level's ends) back at it. */
static void link_slot(struct rd_txqueue *q, uint32_t slot)
{
    struct rd_txqueue_slot *e = &q->slots[slot];
    if (e->prev != NONE)
        q->slots[e->prev].next = slot;
    else
        q->head[e->left] = slot;
    if (e->next != NONE)
        q->slots[e->next].prev = slot;
    else
        q->tail[e->left] = slot;
}

/* Puts `slot`, whose sends left are set and nonzero, at the head or the tail of its level. */
static void insert_slot(struct rd_txqueue *q, uint32_t slot, bool at_head)
{
    struct rd_txqueue_slot *e = &q->slots[slot];
    e->prev = at_head ? NONE : q->tail[e->left];
    e->next = at_head ? q->head[e->left] : NONE;
    link_slot(q, slot);
    if (e->left > q->top) q->top = e->left;
}

void rd_txqueue_remove(struct rd_txqueue *q, uint32_t slot)
{
    if (q->slots[slot].left == 0) return;
    unlink_slot(q, slot);
    q->slots[slot].left = 0;
    q->pending--;
}

void rd_txqueue_push(struct rd_txqueue *q, uint32_t slot, uint32_t sends)
{
    if (sends >= RD_TXQUEUE_LEVELS) sends = RD_TXQUEUE_LEVELS - 1;
    rd_txqueue_remove(q, slot);
    if (sends == 0) return;
    q->slots[slot].left = sends;
    q->pending++;
    insert_slot(q, slot, true);
}

void rd_txqueue_sent(struct rd_txqueue *q, uint32_t slot)
{
    if (q->slots[slot].left == 0) return;
    unlink_slot(q, slot);
    if (--q->slots[slot].left == 0)
        q->pending--;
    else
        insert_slot(q, slot, false);
}

void rd_txqueue_move(struct rd_txqueue *q, uint32_t from, uint32_t to)
{
    if (from == to) return;
    q->slots[to] = q->slots[from];
    q->slots[from] = unqueued;
    if (q->slots[to].left > 0) link_slot(q, to); /* its neighbours follow it */
}

uint32_t rd_txqueue_sends_left(const struct rd_txqueue *q, uint32_t slot)
{
    return q->slots[slot].left;
}

size_t rd_txqueue_pending(const struct rd_txqueue *q)
{
    return q->pending;
}

/* The head of the highest nonempty level at or below `level`, or NONE. */
static uint32_t head_from(const struct rd_txqueue *q, uint32_t level)
{
    for (; level > 0; level--)
        if (q->head[level] != NONE) return q->head[level];
    return NONE;
}

uint32_t rd_txqueue_first(struct rd_txqueue *q)
{
    while (q->top > 0 && q->head[q->top] == NONE)
        q->top--;
    return head_from(q, q->top);
}

uint32_t rd_txqueue_next(const struct rd_txqueue *q, uint32_t slot)
{
    const struct rd_txqueue_slot *e = &q->slots[slot];
    if (e->left == 0) return NONE; /* not queued: nothing follows it */
    return e->next != NONE ? e->next : head_from(q, e->left - 1);
}

static int fail(const char **why, const char *reason)
{
    *why = reason;
    return RD_ECORRUPT;
}

/* Walks one level's list; adds its length to *linked. 0, or RD_ECORRUPT with *why. */
static int check_level(const struct rd_txqueue *q, uint32_t level, size_t used, size_t *linked,
                       const char **why)
{
    /* No cycle gets past the prev links: the first slot seen twice has, the second time,
     * a predecessor other than its prev (the head's prev is NONE). */
    uint32_t prev = NONE;
    size_t steps = 0;
    for (uint32_t i = q->head[level]; i != NONE; prev = i, i = q->slots[i].next, steps++) {
        if (i >= used) return fail(why, "txqueue: a list reaches a slot beyond the used ones");
        if (q->slots[i].left != level)
            return fail(why, "txqueue: a slot sits on a level other than its sends left");
        if (q->slots[i].prev != prev)
            return fail(why, "txqueue: a slot's prev link does not point at its predecessor");
    }
    if (q->tail[level] != prev)
        return fail(why, "txqueue: a level's tail is not the end of its list");
    if (steps > 0 && (level == 0 || level > q->top))
        return fail(why, level == 0 ? "txqueue: level 0 holds slots"
                                    : "txqueue: a level above the top holds slots");
    *linked += steps;
    return 0;
}

int rd_txqueue_check_lists(const struct rd_txqueue *q, size_t used, const char **why)
{
    if (used > q->cap) return fail(why, "txqueue: more slots used than allocated");
    if (q->top >= RD_TXQUEUE_LEVELS) return fail(why, "txqueue: top is beyond the last level");
    size_t linked = 0;
    for (uint32_t level = 0; level < RD_TXQUEUE_LEVELS; level++)
        if (check_level(q, level, used, &linked, why) < 0) return RD_ECORRUPT;
    if (q->pending != linked)
        return fail(why, "txqueue: the pending count is not the number of queued slots");
    return 0;
}

/* True if `slot`'s link `to` (prev or next) and the slot it names agree, or `slot` is the
 * level's `end` (head or tail) when the link is NONE. */
static bool linked_back(const struct rd_txqueue *q, uint32_t slot, uint32_t to, bool forward)
{
    const struct rd_txqueue_slot *e = &q->slots[slot];
    if (to == NONE) return (forward ? q->tail[e->left] : q->head[e->left]) == slot;
    if (to >= q->cap) return false;
    return (forward ? q->slots[to].prev : q->slots[to].next) == slot;
}

int rd_txqueue_check_slot(const struct rd_txqueue *q, size_t used, uint32_t slot, const char **why)
{
    const struct rd_txqueue_slot *e = &q->slots[slot];
    if (e->left >= RD_TXQUEUE_LEVELS)
        return fail(why, "txqueue: a slot has more sends left than levels");
    if (e->left == 0) {
        if (e->prev != NONE || e->next != NONE)
            return fail(why, "txqueue: an unqueued slot keeps links");
        return 0;
    }
    if (slot >= used) return fail(why, "txqueue: a slot beyond the used ones is queued");
    if (!linked_back(q, slot, e->prev, false) || !linked_back(q, slot, e->next, true))
        return fail(why, "txqueue: a queued slot is on no list");
    return 0;
}

int rd_txqueue_check(const struct rd_txqueue *q, size_t used, const char **why)
{
    if (rd_txqueue_check_lists(q, used, why) < 0) return RD_ECORRUPT;
    for (size_t i = 0; i < q->cap; i++)
        if (rd_txqueue_check_slot(q, used, (uint32_t)i, why) < 0) return RD_ECORRUPT;
    return 0;
}
