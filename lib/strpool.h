/*
 * strpool.h — interned strings with reference counts.
 *
 * The member table keeps names, zones, tags and accusers as 32-bit ids into a pool instead
 * of fixed-size arrays: most of those bytes are padding, and most members share their zone
 * and their tags. A string is stored once however many records hold it, and is freed when
 * the last of them lets go. Several membership cores may share one pool (the simulator
 * runs thousands in one process, each holding every member's name).
 *
 * Id 0 is the empty string: it is never stored, needs no reference and cannot fail.
 * Single-threaded; lookups are O(1) through an open-addressing index on the strings' hash.
 */
#ifndef RD_STRPOOL_H
#define RD_STRPOOL_H

#include <stddef.h>
#include <stdint.h>

/** Returned by rd_strpool_intern() when memory fails. */
#define RD_STRPOOL_NONE UINT32_MAX

struct rd_strpool;

/** An empty pool, or NULL if memory fails. */
struct rd_strpool *rd_strpool_new(void);
/** Frees the pool and every string in it, whatever references remain. */
void rd_strpool_delete(struct rd_strpool *p);
/**
 * The id of s[0..len) (no NUL inside), with one more reference to it: stored if it was not
 * there. 0 for the empty string. RD_STRPOOL_NONE if memory fails.
 */
uint32_t rd_strpool_intern(struct rd_strpool *p, const char *s, size_t len);
/** One more reference to `id`, which must hold one already. Returns id. */
uint32_t rd_strpool_ref(struct rd_strpool *p, uint32_t id);
/** Gives back one reference to `id`; the string is freed with its last. 0 is ignored. */
void rd_strpool_release(struct rd_strpool *p, uint32_t id);
/** The NUL-terminated string of `id` ("" for 0), valid while a reference is held. */
const char *rd_strpool_str(const struct rd_strpool *p, uint32_t id);
/** Its length in bytes. */
size_t rd_strpool_len(const struct rd_strpool *p, uint32_t id);
/** Strings stored now, and the bytes the pool holds for them and its index. */
size_t rd_strpool_count(const struct rd_strpool *p);
size_t rd_strpool_bytes(const struct rd_strpool *p);

#endif
