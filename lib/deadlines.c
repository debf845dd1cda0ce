/*
 * deadlines.c — per-slot deadlines in a binary min-heap with a position index (see
 * deadlines.h).
 *
 * Shape: the heap holds (deadline, slot) pairs by value, so sifting compares within one
 * array; `pos` follows every move. Entries are ordered by deadline, then slot.
 */
#include "deadlines.h"

#include <stdlib.h>

#include "rd_err.h"

static bool earlier(const struct rd_deadline *a, const struct rd_deadline *b)
{
    return a->at_ms != b->at_ms ? a->at_ms < b->at_ms : a->slot < b->slot;
}

static void count_step(struct rd_deadlines *d)
{
    if (d->steps) (*d->steps)++;
}

static void place(struct rd_deadlines *d, size_t k, struct rd_deadline e)
{
    d->heap[k] = e;
    d->pos[e.slot] = (uint32_t)k;
}

/* Moves the entry at k towards the root until its parent is earlier. */
static void sift_up(struct rd_deadlines *d, size_t k)
{
    struct rd_deadline e = d->heap[k];
    while (k > 0) {
        count_step(d);
        size_t parent = (k - 1) / 2;
        if (!earlier(&e, &d->heap[parent])) break;
        place(d, k, d->heap[parent]);
        k = parent;
    }
    place(d, k, e);
}

/* Moves the entry at k towards the leaves until no child is earlier. */
static void sift_down(struct rd_deadlines *d, size_t k)
{
    struct rd_deadline e = d->heap[k];
    for (;;) {
        size_t child = 2 * k + 1;
        if (child >= d->len) break;
        count_step(d);
        if (child + 1 < d->len && earlier(&d->heap[child + 1], &d->heap[child])) child++;
        if (!earlier(&d->heap[child], &e)) break;
        place(d, k, d->heap[child]);
        k = child;
    }
    place(d, k, e);
}

/* Restores heap order around k after its entry changed either way. */
static void resettle(struct rd_deadlines *d, size_t k)
{
    if (k > 0 && earlier(&d->heap[k], &d->heap[(k - 1) / 2]))
        sift_up(d, k);
    else
        sift_down(d, k);
}

int rd_deadlines_init(struct rd_deadlines *d, size_t cap)
{
    *d = (struct rd_deadlines){0};
    return rd_deadlines_grow(d, cap);
}

void rd_deadlines_free(struct rd_deadlines *d)
{
    free(d->heap);
    free(d->pos);
    d->heap = NULL;
    d->pos = NULL;
    d->len = d->cap = d->heap_cap = 0;
}

int rd_deadlines_grow(struct rd_deadlines *d, size_t cap)
{
    return rd_deadlines_grow_slots(d, cap) < 0 ? -1 : rd_deadlines_reserve(d, cap);
}

int rd_deadlines_reserve(struct rd_deadlines *d, size_t n)
{
    if (n <= d->heap_cap) return 0;
    size_t cap = d->heap_cap ? d->heap_cap : 8;
    while (cap < n)
        cap *= 2;
    struct rd_deadline *heap = realloc(d->heap, cap * sizeof *heap);
    if (!heap) return -1;
    d->heap = heap;
    d->heap_cap = cap;
    return 0;
}

int rd_deadlines_grow_slots(struct rd_deadlines *d, size_t cap)
{
    if (cap <= d->cap) return 0;
    uint32_t *pos = realloc(d->pos, cap * sizeof *pos);
    if (!pos) return -1;
    d->pos = pos;
    for (size_t i = d->cap; i < cap; i++)
        d->pos[i] = RD_DEADLINES_NONE;
    d->cap = cap;
    return 0;
}

void rd_deadlines_set(struct rd_deadlines *d, uint32_t slot, uint64_t at_ms)
{
    struct rd_deadline e = {.at_ms = at_ms, .slot = slot};
    if (rd_deadlines_has(d, slot)) {
        size_t k = d->pos[slot];
        d->heap[k] = e;
        resettle(d, k);
        return;
    }
    place(d, d->len++, e);
    sift_up(d, d->len - 1);
}

void rd_deadlines_remove(struct rd_deadlines *d, uint32_t slot)
{
    if (!rd_deadlines_has(d, slot)) return;
    size_t k = d->pos[slot];
    d->pos[slot] = RD_DEADLINES_NONE;
    struct rd_deadline last = d->heap[--d->len];
    if (k == d->len) return;
    place(d, k, last);
    resettle(d, k);
}

void rd_deadlines_move(struct rd_deadlines *d, uint32_t from, uint32_t to)
{
    if (!rd_deadlines_has(d, from)) return;
    size_t k = d->pos[from];
    d->pos[from] = RD_DEADLINES_NONE;
    place(d, k, (struct rd_deadline){.at_ms = d->heap[k].at_ms, .slot = to});
    resettle(d, k); /* a new slot number may reorder equal deadlines */
}

bool rd_deadlines_has(const struct rd_deadlines *d, uint32_t slot)
{
    return slot < d->cap && d->pos[slot] < d->len && d->heap[d->pos[slot]].slot == slot;
}

uint64_t rd_deadlines_at(const struct rd_deadlines *d, uint32_t slot)
{
    return rd_deadlines_has(d, slot) ? d->heap[d->pos[slot]].at_ms : UINT64_MAX;
}

uint64_t rd_deadlines_first(const struct rd_deadlines *d)
{
    return d->len ? d->heap[0].at_ms : UINT64_MAX;
}

size_t rd_deadlines_len(const struct rd_deadlines *d)
{
    return d->len;
}

uint32_t rd_deadlines_pop_due(struct rd_deadlines *d, uint64_t now_ms)
{
    if (d->len == 0 || d->heap[0].at_ms > now_ms) return RD_DEADLINES_NONE;
    uint32_t slot = d->heap[0].slot;
    rd_deadlines_remove(d, slot);
    return slot;
}

int rd_deadlines_check_entry(const struct rd_deadlines *d, size_t k, const char **why)
{
    const struct rd_deadline *e = &d->heap[k];
    if (e->slot >= d->cap || d->pos[e->slot] != k) {
        *why = "deadlines: an entry whose slot does not point back at it";
        return RD_ECORRUPT;
    }
    if (k > 0 && earlier(e, &d->heap[(k - 1) / 2])) {
        *why = "deadlines: an entry before its parent";
        return RD_ECORRUPT;
    }
    return 0;
}
