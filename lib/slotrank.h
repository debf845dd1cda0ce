/*
 * slotrank.h — a set of member slots that answers "the k-th lowest slot in the set" in
 * O(log N): a Fenwick tree of 0/1 counts.
 *
 * Why this shape: the membership core picks a random dead member now and then (see
 * run_reconnect in swim.c). Taking the k-th dead member in table order keeps the pick
 * uniform and the same as a walk over the table would make, without the walk: adding,
 * removing and finding a slot each visit one tree node per bit of the capacity. Slots are
 * the caller's (its table's indexes); the set owns its arrays.
 */
#ifndef RD_SLOTRANK_H
#define RD_SLOTRANK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** What rd_slotrank_select returns when the set holds k or fewer slots. */
#define RD_SLOTRANK_NONE UINT32_MAX

struct rd_slotrank {
    uint32_t *tree;  /**< [size + 1], Fenwick sums, 1-based */
    uint8_t *in;     /**< [size]: 1 if slot i is in the set */
    size_t size;     /**< a power of two >= the capacity asked for */
    uint64_t *steps; /**< if not NULL, counts the tree nodes each operation visits */
};

/** An empty set for slots 0 .. cap-1. Returns 0, or -1 if memory fails. */
int rd_slotrank_init(struct rd_slotrank *r, size_t cap);
/** Frees the arrays. A zeroed or freed set is fine. */
void rd_slotrank_free(struct rd_slotrank *r);
/** Makes room for slots 0 .. cap-1 (never shrinks); new slots are not in the set. 0 or -1. */
int rd_slotrank_grow(struct rd_slotrank *r, size_t cap);

/** Puts `slot` in the set (`in`) or takes it out; nothing happens if it already is so. */
void rd_slotrank_put(struct rd_slotrank *r, uint32_t slot, bool in);
/** True if `slot` is in the set. */
bool rd_slotrank_has(const struct rd_slotrank *r, uint32_t slot);
/** Number of slots in the set. O(1). */
size_t rd_slotrank_count(const struct rd_slotrank *r);
/** The k-th lowest slot in the set, from 0; RD_SLOTRANK_NONE if k >= count. O(log N). */
uint32_t rd_slotrank_select(const struct rd_slotrank *r, size_t k);

#endif
