/*
 * slotrank.c — order statistics over a set of slots with a Fenwick tree (see slotrank.h).
 *
 * Shape: node j (1-based) holds the count of slots j - lowbit(j) .. j - 1. The size is a
 * power of two, so node `size` holds the whole count, selection descends by halves, and
 * doubling the size needs no rebuild: the new half is empty, and the new top node is the
 * old total.
 */
#include "slotrank.h"

#include <stdlib.h>
#include <string.h>

static void count_step(const struct rd_slotrank *r)
{
    if (r->steps) (*r->steps)++;
}

int rd_slotrank_init(struct rd_slotrank *r, size_t cap)
{
    *r = (struct rd_slotrank){0};
    r->tree = calloc(2, sizeof *r->tree);
    r->in = calloc(1, sizeof *r->in);
    if (!r->tree || !r->in) return -1;
    r->size = 1;
    return rd_slotrank_grow(r, cap);
}

void rd_slotrank_free(struct rd_slotrank *r)
{
    free(r->tree);
    free(r->in);
    r->tree = NULL;
    r->in = NULL;
    r->size = 0;
}

int rd_slotrank_grow(struct rd_slotrank *r, size_t cap)
{
    size_t size = r->size;
    while (size < cap)
        size *= 2;
    if (size == r->size) return 0;
    uint32_t *tree = realloc(r->tree, (size + 1) * sizeof *tree);
    if (!tree) return -1;
    r->tree = tree;
    uint8_t *in = realloc(r->in, size);
    if (!in) return -1;
    r->in = in;
    uint32_t total = r->tree[r->size];
    memset(&r->tree[r->size + 1], 0, (size - r->size) * sizeof *tree);
    memset(&r->in[r->size], 0, size - r->size);
    for (size_t top = 2 * r->size; top <= size; top *= 2)
        r->tree[top] = total; /* covers the old half, which holds everything */
    r->size = size;
    return 0;
}

void rd_slotrank_put(struct rd_slotrank *r, uint32_t slot, bool in)
{
    if (r->in[slot] == in) return;
    r->in[slot] = in;
    for (size_t j = (size_t)slot + 1; j <= r->size; j += j & -j) {
        count_step(r);
        r->tree[j] = in ? r->tree[j] + 1 : r->tree[j] - 1;
    }
}

bool rd_slotrank_has(const struct rd_slotrank *r, uint32_t slot)
{
    return slot < r->size && r->in[slot];
}

size_t rd_slotrank_count(const struct rd_slotrank *r)
{
    return r->tree[r->size];
}

uint32_t rd_slotrank_select(const struct rd_slotrank *r, size_t k)
{
    if (k >= rd_slotrank_count(r)) return RD_SLOTRANK_NONE;
    /* find the longest prefix holding at most k slots: the k-th slot comes right after */
    size_t at = 0;
    for (size_t half = r->size; half > 0; half /= 2) {
        count_step(r);
        if (at + half <= r->size && r->tree[at + half] <= k) {
            at += half;
            k -= r->tree[at];
        }
    }
    return (uint32_t)at;
}
