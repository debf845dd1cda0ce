/*
 * ketama.h — libmemcached's ketama placement, reproduced bit for bit.
 *
 * A ring in ketama mode (rd_ring_new_ketama() in ring.h) puts every key on the server that
 * libmemcached 1.x picks with MEMCACHED_DISTRIBUTION_CONSISTENT_KETAMA and MD5 key hashing
 * (proto/PROTOCOL.md, "Ketama mode", states it with test vectors). This module holds the
 * pieces that are libmemcached's and not ringd's: the string a server is hashed by, its
 * point count with libmemcached's single-precision float arithmetic, the points themselves
 * and the key hash. ring.c arranges them into a normal ring snapshot, with 32-bit ketama
 * values v placed at ring positions v << 32, so that every lookup, walk and diff of a ring
 * works on a ketama ring unchanged.
 *
 * Kept apart from ring.c because its rules are dictated from outside (a client library's
 * quirks, which must be copied, not improved), and because it is the one user of MD5.
 */
#ifndef RD_KETAMA_H
#define RD_KETAMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Points per server when every weight is 1 (libmemcached's MEMCACHED_POINTS_PER_SERVER),
 *  one per MD5 digest. */
#define RD_KETAMA_POINTS_PLAIN 100
/** Points per server at an even share of a weighted continuum
 *  (MEMCACHED_POINTS_PER_SERVER_KETAMA), four per MD5 digest. */
#define RD_KETAMA_POINTS_WEIGHTED 160
/** libmemcached's default port: a server on it is hashed without its port. */
#define RD_KETAMA_DEFAULT_PORT 11211

/**
 * Length of the prefix of `identity` (len bytes) that libmemcached hashes for the server:
 * the identity names the server as "host:port" (or "host", port 11211); libmemcached hashes
 * "host:port" but only "host" when the port is 11211, so a trailing ":11211" is dropped,
 * unless nothing would be left.
 */
size_t rd_ketama_hashed_len(const char *identity, size_t len);

/**
 * Points of a server of whole weight `weight` in a weighted continuum of `nservers` servers
 * whose weights add up to `total_weight`: libmemcached's
 * floor(weight / total * 160 / 4 * nservers + 1e-10) * 4, every step in IEEE single
 * precision as libmemcached computes it (so 156 rather than 160 where the float product
 * falls short of a whole number). May be 0 for a very light server.
 */
uint32_t rd_ketama_weighted_points(uint32_t weight, uint64_t total_weight, uint32_t nservers);

/**
 * Continuum values of points i0 .. i0 + cnt - 1 of the server hashed as s[0..len) into
 * out[0..cnt). Plain (weighted false): point i is MD5(s "-" i) read as a little-endian u32
 * of its first four bytes. Weighted: point i is bytes 4*(i%4) .. 4*(i%4)+3 of
 * MD5(s "-" i/4), little-endian. len <= RD_KETAMA_HASHED_MAX.
 */
void rd_ketama_points(const char *s, size_t len, bool weighted, uint32_t i0, uint32_t cnt,
                      uint32_t *out);
/** Longest hashed server string (an identity is at most 255 bytes). */
#define RD_KETAMA_HASHED_MAX 255

/** libmemcached's MD5 key hash: the first four bytes of MD5(key), little-endian. */
uint32_t rd_ketama_key_hash(const void *key, size_t len);

#endif
