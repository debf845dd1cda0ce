/*
 * ring_internal.h — test-only entry points into the ring. Not part of the API.
 *
 * XXH3 collisions cannot be forced, yet the tie rule (equal points are ordered by member
 * name) is part of the specification; and allocation failure must be RD_ENOMEM with nothing
 * leaked, on every allocation. rd_ring_new_with() and rd_ring_diff_with() take a substitute
 * point hash (tests create as many equal points as they like) and a substitute allocator
 * (tests fail the Nth allocation, in a loop). rd_ring_points() exposes the sorted placement
 * and rd_ring_view() every other array, so that tests can compare two rings byte for byte
 * (rd_ring_rebuild_with() against rd_ring_new_with()). Only tests/ and bench/ include this
 * header; the hooks are arguments, not globals, so the production entry points stay reentrant.
 */
#ifndef RD_RING_INTERNAL_H
#define RD_RING_INTERNAL_H

#include "ring.h"

/** A point hash: position of point `i` of the member called name[0..name_len). */
typedef uint64_t rd_ring_point_hash_fn(const char *name, size_t name_len, uint32_t i, void *ctx);

/** Stand-ins for what the ring otherwise takes from xxhash and libc. NULL fields: the real one.
 *  A ring keeps the point hash and ctx it was built with: rd_ring_diff hashes some of its
 *  points again, so both must outlive the ring. */
struct rd_ring_hooks {
    /** In place of rd_ring_point_hash(), to force equal points. */
    rd_ring_point_hash_fn *point_hash;
    /** In place of malloc(), to fail on the Nth call; memory must come from malloc (the ring
     *  releases it with free()). */
    void *(*alloc)(size_t size, void *ctx);
    void *ctx; /**< passed to both */
    /** rd_ring_build_abandonable()'s flag, or NULL. */
    const atomic_bool *abandon;
};

/**
 * rd_ring_new() with hooks (NULL: none). Everything else (validation, point counts, sort, tie
 * order, errors) is the production code.
 */
int rd_ring_new_with(const struct rd_ring_member *members, size_t n, uint32_t vnodes,
                     const struct rd_ring_hooks *hooks, struct rd_ring **out);

/** rd_ring_rebuild() with hooks: the point hash must be the one `old` was built with. */
int rd_ring_rebuild_with(const struct rd_ring *old, const struct rd_ring_member *members, size_t n,
                         uint32_t vnodes, const struct rd_ring_hooks *hooks, struct rd_ring **out);

/** rd_ring_new_ketama() with hooks (only `alloc` and `abandon` are used: the points are
 *  libmemcached's). */
int rd_ring_new_ketama_with(const struct rd_ring_member *members, size_t n,
                            const struct rd_ring_hooks *hooks, struct rd_ring **out);

/** rd_ring_diff_top() with hooks (only `alloc` is used); SIZE_MAX keeps every pair. */
int rd_ring_diff_with(const struct rd_ring *old, const struct rd_ring *new_ring, size_t max_moves,
                      const struct rd_ring_hooks *hooks, struct rd_ring_diff *out);
/** Ways of rd_ring_diff_way_with(), or'ed. RD_RING_DIFF_WALK: the walk over every point of
 *  both rings, which the diff otherwise takes only when the points in one ring only are
 *  more than an eighth of both rings'. RD_RING_DIFF_INDEXED or RD_RING_DIFF_CELLS: the
 *  arcs summed by pair through the index of pairs, or in one dense cell per possible pair,
 *  where the diff otherwise takes the cells only while they are no more than the points of
 *  both rings and 16 per arc that can change hands. */
enum { RD_RING_DIFF_WALK = 1, RD_RING_DIFF_INDEXED = 2, RD_RING_DIFF_CELLS = 4 };
/** rd_ring_diff_with() the ways `way` asks for: tests check that every way gives one answer. */
int rd_ring_diff_way_with(const struct rd_ring *old, const struct rd_ring *new_ring,
                          size_t max_moves, unsigned way, const struct rd_ring_hooks *hooks,
                          struct rd_ring_diff *out);

/**
 * The ring's sorted points: *hashes and *owners (member indexes) each hold
 * rd_ring_point_count() entries, valid while the ring lives. Both are NULL for an empty ring.
 */
void rd_ring_points(const struct rd_ring *ring, const uint64_t **hashes, const uint32_t **owners);

/** Every scalar and array of a snapshot but the names and zones (which the accessors give
 *  as strings), so that tests can compare two snapshots byte for byte. */
struct rd_ring_view {
    uint32_t nmembers, npoints, vnodes, nzones;
    enum rd_ring_mode mode;
    bool zoned, ketama_weighted;
    uint64_t raw_points, budget, checksum;
    unsigned shift;
    const uint64_t *hashes; /**< [npoints + 1]: the sentinel too; NULL if empty */
    const uint32_t *owner;  /**< [npoints] */
    const uint32_t *first;  /**< [nfirst] prefix table */
    size_t nfirst;
    const uint32_t *points, *weights, *zone_of; /**< [nmembers] */
    const uint32_t *id_off, *rank_start;        /**< [nmembers + 1] */
    const char *ids;                            /**< [id_off[nmembers]] */
};

/** Fills *v with the ring's internals, valid while the ring lives. */
void rd_ring_view(const struct rd_ring *ring, struct rd_ring_view *v);

#endif
