/*
 * envelope.h — sealing gossip: authenticated encryption of every datagram and sync frame.
 *
 * A sealed packet wraps a whole plain packet (proto/wire.h, its own header included):
 *
 *      0        1        2        3
 *   +--------+--------+--------+--------+
 *   |  'R'   |  'D'   | version| flags  |   version = 1, flags = RD_WIRE_FLAG_SEALED
 *   +--------+--------+--------+--------+
 *   | nonce: 24 random bytes            |
 *   +-----------------------------------+
 *   | ciphertext of the plain packet    |   XChaCha20-Poly1305-IETF (libsodium)
 *   | + 16-byte tag                     |
 *   +-----------------------------------+
 *
 *   associated data = the 4 clear header bytes, one byte of label length, the label
 *
 * Why it is shaped so:
 * - The clear header is the gossip header with the reserved "sealed" flag, so an agent of
 *   either kind tells a sealed packet from a plain one from the first 4 bytes, and an
 *   agent that predates sealing drops it as "unknown flags" instead of misreading it.
 * - XChaCha20-Poly1305 because its 24-byte nonce can be drawn at random for every packet
 *   with no counter to keep across restarts or share between keys (a 12-byte nonce could
 *   not be): libsodium draws it, seals and opens; nothing here is hand-written crypto.
 * - The cluster label is in the associated data, not on the wire: two clusters sharing a
 *   network and a key still cannot read each other's packets. The price is that a packet
 *   of another cluster looks exactly like one sealed with an unknown key; both are
 *   reported as "no key matched" (RD_ENOENT).
 * - Opening tries each key in the caller's order and says which one opened the packet, so
 *   a keyring can hold an old and a new key while a cluster rotates.
 * - A keyed receiver can be told to let plain packets in beside sealed ones
 *   (verify_incoming off, as memberlist's GossipVerifyIncoming): a running cluster in the
 *   clear moves to sealing one agent at a time, with no moment when two agents cannot
 *   hear each other. It is one flag of the receive rule, never a weaker check of sealed
 *   packets: a sealed packet that does not open is dropped whatever the flag.
 * - Pure: no I/O, no allocation, and the caller owns every buffer, so the agent, the sync
 *   module, the tests and the fuzzer use the same code.
 * The overhead, RD_ENVELOPE_OVERHEAD, is reserved in every datagram by lib/msg.h's
 * RD_ENVELOPE_RESERVE (checked at compile time in envelope.c), so the core fills the same
 * packets whether the cluster is sealed or not.
 */
#ifndef RD_ENVELOPE_H
#define RD_ENVELOPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/** Bytes of a key. */
#define RD_ENVELOPE_KEY_LEN 32
/** Bytes of the random nonce after the clear header. */
#define RD_ENVELOPE_NONCE_LEN 24
/** Bytes of the authentication tag after the ciphertext. */
#define RD_ENVELOPE_TAG_LEN 16
/** Clear header (the gossip header with the sealed flag) + nonce + tag = 44. */
#define RD_ENVELOPE_OVERHEAD (RD_WIRE_MAGIC_LEN + RD_ENVELOPE_NONCE_LEN + RD_ENVELOPE_TAG_LEN)
/** Longest cluster label bound into the associated data (a zone name's limit). */
#define RD_ENVELOPE_LABEL_MAX RD_ZONE_MAX

/**
 * Seals `plain[0..len)` with `key` under cluster `label` (NUL-terminated, at most
 * RD_ENVELOPE_LABEL_MAX bytes; "" for none) into `out[0..cap)`, with a fresh random nonce;
 * *outlen = len + RD_ENVELOPE_OVERHEAD. Needs sodium_init() to have run. Returns 0,
 * RD_EINVAL for a label too long, or RD_E2BIG when it does not fit in cap.
 */
int rd_envelope_seal(const uint8_t key[RD_ENVELOPE_KEY_LEN], const char *label, const char *plain,
                     size_t len, char *out, size_t cap, size_t *outlen);

/** rd_envelope_seal() with the caller's nonce: for test vectors only; never reuse a nonce. */
int rd_envelope_seal_nonce(const uint8_t key[RD_ENVELOPE_KEY_LEN],
                           const uint8_t nonce[RD_ENVELOPE_NONCE_LEN], const char *label,
                           const char *plain, size_t len, char *out, size_t cap, size_t *outlen);

/**
 * Opens the untrusted sealed packet `in[0..len)` with the first of keys[0..nkeys) that
 * authenticates it under `label`, writing the plain packet to `out[0..cap)` and its length
 * to *outlen; *key_index (may be NULL) says which key it was. `out` must not overlap `in`.
 *
 * Returns 0; RD_EPROTO when the bytes are not a sealed packet (shorter than the overhead,
 * a bad magic, version or flags); RD_ENOENT when no key opens it (a wrong key, another
 * cluster's label, or any altered byte); RD_E2BIG when the plain packet would not fit in
 * cap. `reason` (may be NULL) gets a static string: "ok", "truncated", "bad magic",
 * "unsupported version", "unknown flags", "no key matched", "too big".
 */
int rd_envelope_open(const uint8_t (*keys)[RD_ENVELOPE_KEY_LEN], size_t nkeys, const char *label,
                     const char *in, size_t len, char *out, size_t cap, size_t *outlen,
                     size_t *key_index, const char **reason);

/** What a receiver does with one datagram or frame body, by rd_envelope_accept(). */
enum rd_envelope_verdict {
    RD_ENVELOPE_OK,        /**< decode *body: opened (keyed) or plain (no keyring) */
    RD_ENVELOPE_NOKEY,     /**< sealed, but no key of ours opened it: drop, count */
    RD_ENVELOPE_PLAIN,     /**< plain while we have keys: drop, count */
    RD_ENVELOPE_SEALED,    /**< sealed while we have no keys: drop, count */
    RD_ENVELOPE_MALFORMED, /**< sealed flag but a bad envelope: drop, count as malformed */
    RD_ENVELOPE_PLAIN_OK,  /**< plain while keyed, let in (verify_incoming off): decode, count */
};

/**
 * The receive rule in one place, for UDP and TCP alike. With keys (nkeys > 0), a packet
 * that opens is accepted, its plain packet in out[0..cap); a plain packet (a gossip header
 * of our version with no flags) is refused (RD_ENVELOPE_PLAIN) while `verify_incoming`,
 * and let in as it came (RD_ENVELOPE_PLAIN_OK, *body = in) without it: the state of a
 * cluster that is moving to or from sealed gossip, where some peers still send in the
 * clear. A sealed packet must open either way. Without keys, only a packet without the
 * sealed flag, as it came (*body = in), for rd_wire_decode() to check (it refuses what is
 * not a packet with its own reason); verify_incoming means nothing there. With keys,
 * bytes that are neither a sealed nor a plain gossip header are RD_ENVELOPE_MALFORMED.
 * On RD_ENVELOPE_OK and RD_ENVELOPE_PLAIN_OK, *body and *body_len are the packet to decode.
 */
enum rd_envelope_verdict rd_envelope_accept(const uint8_t (*keys)[RD_ENVELOPE_KEY_LEN],
                                            size_t nkeys, const char *label, bool verify_incoming,
                                            const char *in, size_t len, char *out, size_t cap,
                                            const char **body, size_t *body_len);

/** Datagrams or frames the receive rule dropped, by reason, and the plain ones it let in
 *  while keyed (INFO shows them). */
struct rd_envelope_drops {
    uint64_t nokey;          /**< sealed, but no key opened it (a wrong key or another cluster) */
    uint64_t plain;          /**< plain while keyed */
    uint64_t sealed;         /**< sealed while not keyed */
    uint64_t plain_accepted; /**< plain while keyed, let in: verify_incoming is off */
};

/** Counts verdict v in *d; true if it was one of the three drops above (a plain packet let
 *  in is counted but not a drop). */
bool rd_envelope_drop_count(struct rd_envelope_drops *d, enum rd_envelope_verdict v);

#endif
