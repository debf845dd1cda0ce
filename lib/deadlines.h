/*
 * deadlines.h — a set of member slots, each with a deadline, ordered by deadline: a binary
 * min-heap with every slot's place in it kept beside it.
 *
 * Why this shape: the membership core wakes for the earliest of many per-member deadlines
 * (suspicions, tombstones) and must neither scan its table to find it nor to find what
 * expired. The earliest is the heap's top, O(1); setting, moving or dropping one slot's
 * deadline is O(log N), because the position index finds the slot's place without a
 * search; taking what is due costs O(log N) per slot taken. Equal deadlines are ordered
 * by slot, so the order never depends on the history of the heap. Slots are the caller's
 * (its table's indexes); the set knows nothing else of members, and owns its arrays.
 */
#ifndef RD_DEADLINES_H
#define RD_DEADLINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** A slot's position when it is not in the set, and what an empty pop returns. */
#define RD_DEADLINES_NONE UINT32_MAX

/** One heap entry. */
struct rd_deadline {
    uint64_t at_ms;
    uint32_t slot;
};

struct rd_deadlines {
    struct rd_deadline *heap; /**< [heap_cap], the first len in heap order */
    uint32_t *pos;            /**< [cap]: where slot i is in heap, or RD_DEADLINES_NONE */
    size_t len, cap, heap_cap;
    uint64_t *steps; /**< if not NULL, counts the heap levels each operation visits */
};

/** An empty set for slots 0 .. cap-1. Returns 0, or -1 if memory fails. */
int rd_deadlines_init(struct rd_deadlines *d, size_t cap);
/** Frees the arrays. A zeroed or freed set is fine. */
void rd_deadlines_free(struct rd_deadlines *d);
/** Makes room for slots 0 .. cap-1 and for as many entries (never shrinks); new slots are
 *  not in the set. 0 or -1. */
int rd_deadlines_grow(struct rd_deadlines *d, size_t cap);
/** Makes room for slots 0 .. cap-1 only, for a set that holds few of its slots at a time:
 *  its heap grows by rd_deadlines_reserve(). 0 or -1. */
int rd_deadlines_grow_slots(struct rd_deadlines *d, size_t cap);
/** Makes room in the heap for n entries (never shrinks). rd_deadlines_set() of a slot not
 *  in the set needs room for one more entry than the set holds. 0 or -1. */
int rd_deadlines_reserve(struct rd_deadlines *d, size_t n);

/** Gives `slot` the deadline `at_ms`, adding it if it was not in the set. O(log N). */
void rd_deadlines_set(struct rd_deadlines *d, uint32_t slot, uint64_t at_ms);
/** Takes `slot` out of the set; nothing happens if it was not in it. O(log N). */
void rd_deadlines_remove(struct rd_deadlines *d, uint32_t slot);
/**
 * The caller moved slot `from`'s record into slot `to` (a swap-remove of its table): `to`
 * takes `from`'s deadline, if it had one, and `from` leaves the set. `to` must not be in
 * the set. O(log N), since the slot number breaks ties.
 */
void rd_deadlines_move(struct rd_deadlines *d, uint32_t from, uint32_t to);

/** True if `slot` is in the set. */
bool rd_deadlines_has(const struct rd_deadlines *d, uint32_t slot);
/** `slot`'s deadline; UINT64_MAX if it is not in the set. */
uint64_t rd_deadlines_at(const struct rd_deadlines *d, uint32_t slot);
/** The earliest deadline; UINT64_MAX when the set is empty. O(1). */
uint64_t rd_deadlines_first(const struct rd_deadlines *d);
/** Number of slots in the set. */
size_t rd_deadlines_len(const struct rd_deadlines *d);
/**
 * Takes out and returns the slot with the earliest deadline (the lowest slot among equal
 * ones) if that deadline is at or before `now_ms`; RD_DEADLINES_NONE otherwise. O(log N).
 */
uint32_t rd_deadlines_pop_due(struct rd_deadlines *d, uint64_t now_ms);

/**
 * Verifies heap entry k (k < len): its slot is in range and its position index points
 * back at k, and it does not come before its parent. Checking every k verifies the whole
 * heap. Returns 0, or RD_ECORRUPT with *why saying what is wrong.
 */
int rd_deadlines_check_entry(const struct rd_deadlines *d, size_t k, const char **why);

#endif
