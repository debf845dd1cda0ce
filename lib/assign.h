/*
 * assign.h — bounded-load assignment of a key set to the members of a ring.
 *
 * OWNER places each key on its own, so a set of keys (partitions, shards, tasks) lands on
 * the members as unevenly as the ring's arcs and the keys' hashes fall: with 50 members and
 * 1,000 keys the busiest member gets about twice the mean. rd_assign() places the whole set
 * at once under a cap, following "Consistent hashing with bounded loads" (Mirrokni, Thorup,
 * Zadimoghaddam): no member gets more than ceil(c x keys x its weight share), and a key whose
 * owner is full walks clockwise to the next member with room. Keys still go to their ring
 * owner when it has room, so a membership change moves few keys, as the ring does.
 *
 * Every agent must give the same answer for the same set, whatever order the client sent it
 * in. Hence everything is specified in integers (proto/PROTOCOL.md, "Bounded-load assignment
 * (ASSIGN)"): c is given in thousandths, the caps are exact integer ceilings, the keys are
 * taken in the order of (XXH3-64 of the key, then its bytes), and equal keys are one key.
 * The ring is only read, so a call needs no lock; its scratch memory is its own.
 */
#ifndef RD_ASSIGN_H
#define RD_ASSIGN_H

#include <stddef.h>
#include <stdint.h>

#include "ring.h"

/** Most keys in one call (the query command allows fewer: RD_QUERY_ASSIGN_KEYS_MAX). */
#define RD_ASSIGN_KEYS_MAX (1u << 20)
/** Smallest c, in thousandths: c must be above 1 (c = 1 leaves no room to walk to). */
#define RD_ASSIGN_C_MIN 1001u
/** Largest c, in thousandths (c = 1000): far above any useful bound, and it keeps the cap
 *  arithmetic inside 64 bits. */
#define RD_ASSIGN_C_MAX 1000000u

/** One key of the set: `len` bytes at `ptr` (any bytes; len 0 is a key too). */
struct rd_assign_key {
    const void *ptr;
    size_t len;
};

/**
 * Parses c as the protocol writes it: decimal digits, optionally a '.' and 1 to 3 more
 * digits ("1.1", "1.25", "2", "2.000"), nothing else (no sign, exponent or spaces). On
 * success *c_milli is c in thousandths, RD_ASSIGN_C_MIN..RD_ASSIGN_C_MAX, and 0 is returned;
 * otherwise RD_EINVAL (bad syntax, more than 3 decimals, c <= 1 or c > 1000).
 */
int rd_assign_parse_c(const char *s, size_t len, uint32_t *c_milli);

/**
 * The most keys a member of weight `weight` may take: ceil(c_milli x nkeys x weight /
 * (1000 x total_weight)), exactly, in integers. total_weight is the sum of the ring's member
 * weights (> 0); nkeys the number of distinct keys (<= RD_ASSIGN_KEYS_MAX).
 */
uint64_t rd_assign_cap(uint32_t c_milli, size_t nkeys, uint32_t weight, uint64_t total_weight);

/**
 * Assigns keys[0..n) to members of `ring` (NULL: the empty ring): out[i] is the member index
 * (rd_ring_member_name()) of keys[i], or -1 on an empty ring. Equal keys (same bytes) are one
 * key of the set and get the same member. With D distinct keys, every member m ends with at
 * most rd_assign_cap(c_milli, D, weight of m, total weight) of them. The result does not
 * depend on the order of keys[]. Returns 0; RD_EINVAL for c outside
 * RD_ASSIGN_C_MIN..RD_ASSIGN_C_MAX or keys == NULL with n > 0; RD_E2BIG for n above
 * RD_ASSIGN_KEYS_MAX; RD_ENOMEM. out is written only on success.
 * Cost: sorting the keys, then for each a walk from its owner's point past the points of full
 * members (a few points: full members hold at most about 1/c of the weight).
 */
int rd_assign(const struct rd_ring *ring, uint32_t c_milli, const struct rd_assign_key *keys,
              size_t n, int *out);

#endif
