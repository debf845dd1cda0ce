/*
 * sync.h — full-state sync over TCP, on the same port as the gossip's UDP.
 *
 * A sync is one framed request and one framed reply (PROTOCOL.md, "TCP framing"): the
 * side that opens the connection sends its whole member table and asks for the other's.
 * It is kept apart from the agent's loop and timers because it is the one part of the
 * daemon with connections of its own: their buffers, timeouts and limits live here, and
 * the agent sees only "connect to this peer" and "the core changed".
 *
 * The module is handed what it needs and nothing more: the loop, the membership core (to
 * encode our state and merge theirs) and a callback to run after it changed the core, so
 * its owner sends what the core now wants sent.
 */
#ifndef RD_SYNC_H
#define RD_SYNC_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "envelope.h"
#include "member.h"

struct rd_keyring;
struct rd_swim;
struct rd_sync;

/** A sync exchange (connect, send, receive) must finish within this. */
#define RD_SYNC_TIMEOUT_MS 5000
/** Sync exchanges served at once; more are refused (the peer retries later). */
#define RD_SYNC_MAX_INCOMING 32

/** Runs after a sync merged a peer's state or reported a failed sync to the core. */
typedef void (*rd_sync_changed_fn)(void *ctx);

/**
 * Listens for syncs on TCP `bind` (IPv6 only when bind is IPv6, as the UDP socket).
 * Returns 0, or RD_ENOMEM / RD_EIO with one line in err ("cannot listen on TCP ...").
 */
int rd_sync_start(uv_loop_t *loop, struct rd_swim *swim, const struct rd_addr *bind,
                  rd_sync_changed_fn changed, void *ctx, struct rd_sync **out, char *err,
                  size_t errlen);
/**
 * Seals every frame sent with the first key of `kr` and accepts only frames one of its
 * keys opens under `label` (proto/envelope.h); with no keys, frames go in the clear and
 * sealed ones are refused. Both are kept by pointer and must outlive `s`.
 */
void rd_sync_set_envelope(struct rd_sync *s, const struct rd_keyring *kr, const char *label);
/** Opens a sync with `to`; a failure is reported to the core (rd_swim_sync_failed). */
void rd_sync_connect(struct rd_sync *s, const struct rd_addr *to);
/** Frames refused so far: a bad length prefix or a packet that does not decode. */
uint64_t rd_sync_malformed(const struct rd_sync *s);
/** Frames refused by the envelope rule so far, by reason. */
struct rd_envelope_drops rd_sync_dropped(const struct rd_sync *s);
/**
 * Stops listening and closes every connection without touching the core again. The
 * memory goes when the loop has run the close callbacks.
 */
void rd_sync_close(struct rd_sync *s);

#endif
