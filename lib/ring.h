/*
 * ring.h — the consistent-hash ring: an immutable snapshot built from a member list.
 *
 * Every agent builds the same ring from the same member list, so every application in the
 * fleet puts a key in the same place. The construction is specified bit for bit in
 * proto/PROTOCOL.md ("The ring"):
 *   - member m gets max(1, round(vnodes * weight)) points, computed in integers:
 *     (vnodes * weight_milli + 500) / 1000, weight_milli = weight * RD_WEIGHT_ONE; when
 *     these add up to more than RD_RING_MAX_POINTS, each is scaled to
 *     max(1, floor(raw * (RD_RING_MAX_POINTS - n) / total_raw));
 *   - point i of m sits at XXH3-64(seed 0) of  u8 len(name) | name bytes | u32 big-endian i;
 *   - a key sits at XXH3-64(seed 0) of its bytes;
 *   - the owner of a key is the member of the first point at or clockwise after it,
 *     wrapping after the largest point; equal points are ordered by member name (bytewise,
 *     a prefix first), so insertion order never matters.
 * A snapshot is never modified after rd_ring_new() (or rd_ring_rebuild(), which builds the
 * same snapshot from the previous one), so readers need no locks and a rebuilt
 * ring simply replaces the old pointer.
 *
 * rd_ring_new_ketama() builds the same kind of snapshot with libmemcached's ketama points
 * and key hash instead (ketama.h; proto/PROTOCOL.md, "Ketama mode"): every function below
 * works on either, and a lookup by key hashes the key the ring's way (rd_ring_key_position).
 */
#ifndef RD_RING_H
#define RD_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "member.h"

/**
 * Default virtual nodes per member at weight 1.0, chosen by measurement (the vnodes sweep in
 * tests/unit/test_ring.c; proto/PROTOCOL.md, "The ring"): the smallest round value that kept
 * the most loaded of 10 members within 10% of the mean (exact max/mean <= 1.10) on every name
 * set of the sweep. 256 reached 1.15 and 320 1.15 on some sets; the spread falls as about
 * 1/sqrt(vnodes), so even 512 leaves an unlucky set a few percent over (worst seen 1.12).
 * Costs: 12 bytes + 4-8 bytes of prefix table per point; at 1,000 members, 4.6-13 ms to
 * build in full and 0.8-2.7 ms to rebuild after a one-member change (rd_ring_rebuild), as
 * the machine of bench/README.md runs quick or slow (bench_ring).
 */
#define RD_RING_VNODES_DEFAULT 512
/** Largest vnodes setting. */
#define RD_RING_VNODES_MAX 4096
/** Most points in one ring (members x vnodes x weight); above it every member's count is
 *  scaled down by one common factor (see the file comment and rd_ring_scaled()). */
#define RD_RING_MAX_POINTS (1u << 24)

/** Version of the ring specification (proto/PROTOCOL.md, "The ring") that this code builds. */
#define RD_RING_SPEC 1
/** Longest identity in bytes (it is encoded after a one-byte length). */
#define RD_RING_IDENTITY_MAX 255

/** How a ring places keys: ringd's own construction, or libmemcached's ketama. */
enum rd_ring_mode {
    RD_RING_MODE_RINGD = 0,
    RD_RING_MODE_KETAMA = 1,
};

/**
 * What the ring needs of a member. Strings are NUL-terminated and copied into the ring:
 * `name` is valid (rd_name_valid), `zone` valid (rd_zone_valid) or NULL for none, `identity`
 * 1..RD_RING_IDENTITY_MAX printable ASCII bytes (0x21..0x7e) or NULL for the name.
 */
struct rd_ring_member {
    const char *name;
    uint32_t weight;      /**< fixed point, RD_WEIGHT_ONE = 1.0, 1..RD_WEIGHT_MAX */
    const char *zone;     /**< failure domain of the member; NULL or "" for none */
    const char *identity; /**< the string a ketama ring hashes for the member; NULL: the name */
};

/** An immutable ring snapshot. */
struct rd_ring;

/**
 * Builds a ring. Members may come in any order; duplicate names are RD_EEXIST, an invalid
 * name RD_EINVAL, a weight of 0 or above RD_WEIGHT_MAX RD_EINVAL, vnodes outside
 * 1..RD_RING_VNODES_MAX RD_EINVAL, more members than RD_RING_MAX_POINTS RD_E2BIG. n = 0 gives an
 * empty ring. On success *out is a new heap object owned by the caller (rd_ring_delete()).
 */
int rd_ring_new(const struct rd_ring_member *members, size_t n, uint32_t vnodes,
                struct rd_ring **out);
/**
 * rd_ring_new() of the same arguments, built from `old` where it can be: the result is byte
 * for byte rd_ring_new()'s (every point, owner, prefix entry, member array and the checksum),
 * only cheaper when few members differ. The points of a member that `old` holds under the
 * same name with the same point count are taken from `old`; the rest are hashed and merged
 * in. When that cannot be exact or would not pay (old NULL, empty or of ketama mode, another
 * vnodes, a change of the scaling factor, many changed points) it is a full rd_ring_new().
 * Validation, errors and ownership are rd_ring_new()'s; `old` is only read.
 */
int rd_ring_rebuild(const struct rd_ring *old, const struct rd_ring_member *members, size_t n,
                    uint32_t vnodes, struct rd_ring **out);
/**
 * Builds a ring that places keys exactly as libmemcached's ketama does (proto/PROTOCOL.md,
 * "Ketama mode"): each member is the server named by rd_ring_member_identity() ("host:port",
 * or "host" for port 11211), with its weight as a whole number; the points are libmemcached's
 * (100 a member when every weight is 1, else its weighted count), a key sits at its MD5 key
 * hash, and equal points go to the member with the smaller name (libmemcached's: the server
 * added first, for servers added in name order). Points and keys are 32-bit values v, placed
 * at ring positions v << 32. Validation and errors are rd_ring_new()'s, and also: a weight
 * that is not a whole number (weight % RD_WEIGHT_ONE != 0) is RD_EINVAL, more than
 * RD_RING_MAX_POINTS / 160 members RD_E2BIG. rd_ring_mode() of the result is
 * RD_RING_MODE_KETAMA and rd_ring_vnodes() 0.
 */
int rd_ring_new_ketama(const struct rd_ring_member *members, size_t n, struct rd_ring **out);
/**
 * For a build on a thread whose owner may stop wanting it: rd_ring_rebuild() in
 * RD_RING_MODE_RINGD, rd_ring_new_ketama() in RD_RING_MODE_KETAMA (old and vnodes unused),
 * that gives up once *abandon reads true. The flag is read between batches of 32 points
 * and between the sort's groups, so the build stops within microseconds of CPU; then it
 * returns RD_ECANCELED, *out is NULL and nothing is leaked. Otherwise it is the same call.
 */
int rd_ring_build_abandonable(const struct rd_ring *old, const struct rd_ring_member *members,
                              size_t n, enum rd_ring_mode mode, uint32_t vnodes,
                              const atomic_bool *abandon, struct rd_ring **out);
/** Frees a ring. NULL is fine. */
void rd_ring_delete(struct rd_ring *ring);

/** Number of members; members are indexed 0..n-1 in name order. */
size_t rd_ring_member_count(const struct rd_ring *ring);
/** Name of member `idx` (name order). Valid while the ring lives. */
const char *rd_ring_member_name(const struct rd_ring *ring, size_t idx);
/** Weight of member `idx` (fixed point, RD_WEIGHT_ONE = 1.0); 0 for a bad index. */
uint32_t rd_ring_member_weight(const struct rd_ring *ring, size_t idx);
/** Zone of member `idx`: "" when it has none (or for a bad index). Valid while the ring lives. */
const char *rd_ring_member_zone(const struct rd_ring *ring, size_t idx);
/** Identity of member `idx`: the one it was given, else its name; NULL for a bad index. */
const char *rd_ring_member_identity(const struct rd_ring *ring, size_t idx);
/** How the ring places keys (RD_RING_MODE_RINGD for rd_ring_new()). */
enum rd_ring_mode rd_ring_mode(const struct rd_ring *ring);
/** Points of member `idx`. */
uint32_t rd_ring_member_points(const struct rd_ring *ring, size_t idx);
/** Total number of points. */
size_t rd_ring_point_count(const struct rd_ring *ring);
/**
 * True if the point counts were scaled down to fit RD_RING_MAX_POINTS; then *budget and
 * *raw_points (either may be NULL) give the factor budget / raw_points that was applied.
 */
bool rd_ring_scaled(const struct rd_ring *ring, uint64_t *budget, uint64_t *raw_points);
/** The vnodes setting the ring was built with. */
uint32_t rd_ring_vnodes(const struct rd_ring *ring);

/**
 * 64-bit identity of the whole ring definition: XXH3-64 over u8 mode, then each member in
 * name order as u8 len | name | u32 big-endian points | u32 big-endian weight | u8 zone
 * length | zone | u8 identity length | identity. Rings with equal checksums place every key
 * alike, in every lookup (up to hash collisions), so a process that rebuilds a ring from its
 * definition proves it has the agent's ring by comparing checksums. The empty ring's is 0.
 */
uint64_t rd_ring_checksum(const struct rd_ring *ring);

/** Position of a key on a ringd-mode ring: XXH3-64 (seed 0) of its bytes. */
uint64_t rd_ring_key_hash(const void *key, size_t len);
/** Position of a key on `ring`, the way its mode hashes keys: rd_ring_key_hash() in ringd
 *  mode; in ketama mode libmemcached's MD5 key hash h, at position h << 32. NULL: ringd's. */
uint64_t rd_ring_key_position(const struct rd_ring *ring, const void *key, size_t len);
/** Position of point `i` of the member called name[0..name_len), name_len <= RD_NAME_MAX
 *  (see the file comment). */
uint64_t rd_ring_point_hash(const char *name, size_t name_len, uint32_t i);

/**
 * Index of the member owning ring position `pos`, or -1 if the ring is empty.
 * Expected O(1): a prefix table over the sorted points narrows the search to ~1 point.
 */
int rd_ring_owner_at(const struct rd_ring *ring, uint64_t pos);
/** Index of the member owning `key` (at rd_ring_key_position()), or -1 if the ring is empty. */
int rd_ring_owner(const struct rd_ring *ring, const void *key, size_t len);

/**
 * Points are indexed 0..rd_ring_point_count()-1 clockwise (by ascending position, ties by
 * member index). Index of the point owning `key`, the one rd_ring_owner() answers from, so
 * rd_ring_owner(r, k) == rd_ring_point_member(r, rd_ring_key_point(r, k)); -1 if the ring is
 * empty. The next point clockwise is (i + 1) % rd_ring_point_count().
 */
long rd_ring_key_point(const struct rd_ring *ring, const void *key, size_t len);
/** Member index of point `i` (see rd_ring_key_point()); UINT32_MAX for a bad index. */
uint32_t rd_ring_point_member(const struct rd_ring *ring, size_t i);

/**
 * The `n` replicas of `key`, owner first, written as member indexes to out[0..]. Returns how
 * many were written: min(n, member count); 0 for an empty ring.
 *
 * Without zones (no member of the ring has one): the first `n` distinct members clockwise
 * from the key's position. With zones: the same walk, where a member's rank is how many
 * members of its zone the walk met before it (a member without a zone is a zone of its own),
 * and the answer is the first `n` members ordered by (rank, walk order): one member of each
 * zone before any zone repeats (proto/PROTOCOL.md, "Owners (replicas)"). The owner comes
 * first either way.
 *
 * In ketama mode a member that libmemcached gives no point is never met, so the answer can
 * be shorter. out must hold min(n, member count) entries. Reentrant: the ring is not written (the
 * walk's state lives on the caller's stack, or briefly on the heap for rings of more than 16384
 * members or, with zones, more than about 1,000 zones). With zones, a heap allocation that
 * fails returns 0.
 */
size_t rd_ring_owners(const struct rd_ring *ring, const void *key, size_t len, size_t n,
                      uint32_t *out);
/** rd_ring_owners() from a ring position instead of a key. */
size_t rd_ring_owners_at(const struct rd_ring *ring, uint64_t pos, size_t n, uint32_t *out);

/** A share of the key space that changed hands. An empty name means "nobody" (empty ring). */
struct rd_ring_move {
    char from[RD_NAME_MAX + 1];
    char to[RD_NAME_MAX + 1];
    double fraction; /**< of the whole key space, 0..1 */
};

/** What changed between two rings: computed exactly over the key space, not sampled. */
struct rd_ring_diff {
    double moved;  /**< fraction of the key space whose owner changed */
    size_t npairs; /**< (from, to) pairs of members between which keys moved */
    size_t nmoves; /**< entries in `moves`: every pair, or the largest ones asked for */
    struct rd_ring_move *moves; /**< one per (from, to) pair, largest first; heap-owned */
};

/**
 * Computes what moved from `old` to `new` (either may be NULL for the empty ring).
 * Fills *out; release it with rd_ring_diff_destroy(). Returns 0 or RD_ENOMEM.
 * Only the arcs that end at a point in one ring and not the other can change hands, so it
 * weighs those, hashing the changed members' points again, while they are a small share
 * (0.14 ms for one join at 1,000 x 512); else it walks every point of both rings (2.6 ms).
 */
int rd_ring_diff(const struct rd_ring *old, const struct rd_ring *new_ring,
                 struct rd_ring_diff *out);
/**
 * rd_ring_diff(), with only the `max_moves` largest pairs in `moves` (npairs still counts
 * them all): what a log line or an event shows. It names and orders only those, so a
 * rebuild whose pairs run into the hundred thousands costs a pass over them, not a sort.
 */
int rd_ring_diff_top(const struct rd_ring *old, const struct rd_ring *new_ring, size_t max_moves,
                     struct rd_ring_diff *out);
/** Frees what rd_ring_diff() allocated. */
void rd_ring_diff_destroy(struct rd_ring_diff *diff);

#endif
