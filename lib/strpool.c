/*
 * strpool.c — interned strings with reference counts (see strpool.h).
 *
 * Shape: a dense array of entries (string, length, references, hash) whose free entries
 * form a list, so ids stay put while strings come and go; and an open-addressing index of
 * ids on the hash, deleted from by backward shift, so no tombstones slow it down over a
 * long life of joins and departures.
 */
#include "strpool.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

struct str {
    char *s;       /* NULL: free, and `refs` links to the next free entry (id) */
    uint32_t len;  /* bytes, without the NUL */
    uint32_t refs; /* references held; for a free entry, the next free id or 0 */
    uint64_t hash;
};

struct rd_strpool {
    struct str *strs; /* strs[id - 1] */
    uint32_t nstrs, cap, count;
    uint32_t free_head; /* first free id, 0: none */
    uint32_t *index;    /* ids, 0 = empty; index_cap a power of two > 2 * count */
    size_t index_cap;
    size_t bytes; /* string bytes held, NULs included */
};

struct rd_strpool *rd_strpool_new(void)
{
    struct rd_strpool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->index_cap = 16;
    p->index = calloc(p->index_cap, sizeof *p->index);
    if (!p->index) {
        free(p);
        return NULL;
    }
    return p;
}

void rd_strpool_delete(struct rd_strpool *p)
{
    if (!p) return;
    for (uint32_t k = 0; k < p->nstrs; k++)
        free(p->strs[k].s);
    free(p->strs);
    free(p->index);
    free(p);
}

static struct str *entry(const struct rd_strpool *p, uint32_t id)
{
    return &p->strs[id - 1];
}

/* Where `hash`/s[0..len) is in the index, or the empty slot where it would go. */
static size_t find(const struct rd_strpool *p, const char *s, size_t len, uint64_t hash,
                   bool *found)
{
    size_t mask = p->index_cap - 1;
    for (size_t i = (size_t)hash & mask;; i = (i + 1) & mask) {
        uint32_t id = p->index[i];
        if (id == 0) {
            *found = false;
            return i;
        }
        const struct str *e = entry(p, id);
        if (e->hash == hash && e->len == len && memcmp(e->s, s, len) == 0) {
            *found = true;
            return i;
        }
    }
}

static int grow_index(struct rd_strpool *p)
{
    if (2 * ((size_t)p->count + 1) < p->index_cap) return 0;
    size_t cap = p->index_cap * 2;
    uint32_t *index = calloc(cap, sizeof *index);
    if (!index) return -1;
    for (size_t i = 0; i < p->index_cap; i++) {
        uint32_t id = p->index[i];
        if (id == 0) continue;
        size_t k = (size_t)entry(p, id)->hash & (cap - 1);
        while (index[k] != 0)
            k = (k + 1) & (cap - 1);
        index[k] = id;
    }
    free(p->index);
    p->index = index;
    p->index_cap = cap;
    return 0;
}

/* A free entry's id, from the free list or a new one at the end; 0 if memory fails. */
static uint32_t take_entry(struct rd_strpool *p)
{
    if (p->free_head) {
        uint32_t id = p->free_head;
        p->free_head = entry(p, id)->refs;
        return id;
    }
    if (p->nstrs == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 16;
        if (cap >= RD_STRPOOL_NONE / 2) return 0;
        struct str *strs = realloc(p->strs, (size_t)cap * sizeof *strs);
        if (!strs) return 0;
        p->strs = strs;
        p->cap = cap;
    }
    p->strs[p->nstrs] = (struct str){0};
    return ++p->nstrs;
}

uint32_t rd_strpool_intern(struct rd_strpool *p, const char *s, size_t len)
{
    if (len == 0) return 0;
    if (len >= UINT32_MAX) return RD_STRPOOL_NONE;
    uint64_t hash = XXH3_64bits(s, len);
    bool found;
    size_t slot = find(p, s, len, hash, &found);
    if (found) return rd_strpool_ref(p, p->index[slot]);
    if (grow_index(p) < 0) return RD_STRPOOL_NONE;
    char *copy = malloc(len + 1);
    uint32_t id = copy ? take_entry(p) : 0;
    if (id == 0) {
        free(copy);
        return RD_STRPOOL_NONE;
    }
    memcpy(copy, s, len);
    copy[len] = '\0';
    *entry(p, id) = (struct str){.s = copy, .len = (uint32_t)len, .refs = 1, .hash = hash};
    p->index[find(p, s, len, hash, &found)] = id;
    p->count++;
    p->bytes += len + 1;
    return id;
}

uint32_t rd_strpool_ref(struct rd_strpool *p, uint32_t id)
{
    if (id != 0) entry(p, id)->refs++;
    return id;
}

/* Takes id out of the index, shifting back the later entries of its probe run. */
static void unindex(struct rd_strpool *p, uint32_t id)
{
    const struct str *e = entry(p, id);
    bool found;
    size_t mask = p->index_cap - 1;
    size_t hole = find(p, e->s, e->len, e->hash, &found);
    p->index[hole] = 0;
    for (size_t i = (hole + 1) & mask; p->index[i] != 0; i = (i + 1) & mask) {
        size_t home = (size_t)entry(p, p->index[i])->hash & mask;
        /* i moves into the hole unless its home is cyclically within (hole, i] */
        bool stays = hole < i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            p->index[hole] = p->index[i];
            p->index[i] = 0;
            hole = i;
        }
    }
}

void rd_strpool_release(struct rd_strpool *p, uint32_t id)
{
    if (id == 0) return;
    struct str *e = entry(p, id);
    if (--e->refs > 0) return;
    unindex(p, id);
    p->bytes -= (size_t)e->len + 1;
    p->count--;
    free(e->s);
    *e = (struct str){.refs = p->free_head};
    p->free_head = id;
}

const char *rd_strpool_str(const struct rd_strpool *p, uint32_t id)
{
    return id == 0 ? "" : entry(p, id)->s;
}

size_t rd_strpool_len(const struct rd_strpool *p, uint32_t id)
{
    return id == 0 ? 0 : entry(p, id)->len;
}

size_t rd_strpool_count(const struct rd_strpool *p)
{
    return p->count;
}

size_t rd_strpool_bytes(const struct rd_strpool *p)
{
    return p->bytes + (size_t)p->cap * sizeof(struct str) + p->index_cap * sizeof *p->index;
}
