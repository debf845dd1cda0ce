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
#include "ringparams.h"

struct rd_keyring;
struct rd_swim;
struct rd_sync;

/*
 * Limits on incoming syncs. A sync is served before the peer has proven anything, so what
 * a stranger can hold is bounded: a slot (one of RD_SYNC_MAX_INCOMING), for at most
 * RD_SYNC_HEADER_TIMEOUT_MS if it sends no length prefix and RD_SYNC_TIMEOUT_MS in all,
 * and one frame of at most RD_WIRE_FRAME_MAX bytes (proto/wire.h), buffered as it
 * arrives and freed once merged. So what peers can make incoming syncs buffer is at most
 * RD_SYNC_MAX_INCOMING * RD_WIRE_FRAME_BUFFER_MAX = 256 MiB, and only while they keep
 * sending at 1.5 MB/s or more each, within the deadline.
 *
 * A source is known when its IP is the address of an alive or suspect member other than
 * ourselves, or of a seed we were told to join through; any other source is a stranger.
 * Strangers share RD_SYNC_MAX_STRANGERS slots, RD_SYNC_MAX_PER_SOURCE each per IP, and the
 * rest are kept for members, so anti-entropy between members gets through whatever
 * strangers do. A joiner is a stranger too: what lets it in past strangers holding their
 * slots idle is that one IP holds at most RD_SYNC_MAX_PER_SOURCE of them, and that an idle
 * slot is freed after RD_SYNC_HEADER_TIMEOUT_MS, well before the joiner's next retry.
 */
/** A sync exchange (connect, send, receive) must finish within this; an incoming one must
 *  have its whole frame within this of the accept. */
#define RD_SYNC_TIMEOUT_MS 5000
/** An incoming sync must have sent its frame's length prefix within this of the accept. */
#define RD_SYNC_HEADER_TIMEOUT_MS 1000
/** Sync exchanges served at once; more are refused at accept (the peer retries later). */
#define RD_SYNC_MAX_INCOMING 32
/** ... of which strangers hold at most this many; the rest are kept for known members. */
#define RD_SYNC_MAX_STRANGERS 24
/** Incoming syncs from one stranger's IP at once; more are refused at accept. */
#define RD_SYNC_MAX_PER_SOURCE 2
/** Seed addresses remembered as known sources; past this, the oldest is forgotten. */
#define RD_SYNC_SEEDS_MAX 32
/** Each reason for a refusal is logged at most once per this, with the count since. */
#define RD_SYNC_LOG_INTERVAL_MS 60000

/** Incoming syncs refused or cut, by reason; malformed and oversize frames in either
 *  direction. */
struct rd_sync_stats {
    uint64_t refused_source;   /**< at accept: the stranger's IP had its share open */
    uint64_t refused_full;     /**< at accept: no slot left for its kind of source */
    uint64_t timed_out_header; /**< no length prefix within RD_SYNC_HEADER_TIMEOUT_MS */
    uint64_t timed_out_frame;  /**< frame not whole within RD_SYNC_TIMEOUT_MS */
    uint64_t oversize;         /**< a length prefix over RD_WIRE_FRAME_MAX */
    uint64_t malformed;        /**< a zero length prefix, or a frame that does not decode */
    uint64_t ring_params;      /**< frames not merged: ring parameters we cannot share */
};

/** Runs after a sync merged a peer's state or reported a failed sync to the core. */
typedef void (*rd_sync_changed_fn)(void *ctx);
/**
 * Runs when an exchange we opened towards `peer` is over: `why` is NULL when its answer
 * was merged (the core was told, rd_swim_sync_done), else one line saying why it failed
 * ("connection refused", "timed out", "no key opened the answer", ...). Runs before the
 * rd_sync_changed_fn of the same exchange.
 */
typedef void (*rd_sync_result_fn)(void *ctx, const struct rd_addr *peer, const char *why);

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
/**
 * With keys: verify_incoming false lets plain frames in beside sealed ones; verify_outgoing
 * false sends frames in the clear (proto/envelope.h, rd_envelope_accept). Both true until
 * called; without keys they change nothing.
 */
void rd_sync_set_verify(struct rd_sync *s, bool verify_incoming, bool verify_outgoing);
/** Reports the outcome of every exchange we open to `result` (same ctx as `changed`). */
void rd_sync_set_result(struct rd_sync *s, rd_sync_result_fn result);
/**
 * Runs when the answer to an exchange we opened while joining decided our ring parameters:
 * RD_RING_ADOPT (rebuild the ring with `theirs`; the merge follows) or RD_RING_STOP (our
 * operator set parameters the cluster does not have: the agent must stop). `from` is the
 * answering member's name.
 */
typedef void (*rd_sync_ring_fn)(void *ctx, enum rd_ring_verdict v,
                                const struct rd_ring_params *theirs, const char *from);
/**
 * Sets the ring parameters every frame carries and which of them the operator set
 * (RD_SYNC_VNODES_SET, RD_SYNC_MODE_SET); from then on each frame read is judged by
 * rd_ring_judge() before it is merged. `joins`: the agent joins a cluster through seeds,
 * so until its first exchange is answered it says RD_SYNC_JOIN and may adopt; an agent that
 * started a cluster never does. An adoption updates the parameters.
 */
void rd_sync_set_ring(struct rd_sync *s, const struct rd_ring_params *params, unsigned set,
                      bool joins, rd_sync_ring_fn fn);
/** Opens a sync with `to`; a failure is reported to the core (rd_swim_sync_failed). The
 *  outcome is known within RD_SYNC_TIMEOUT_MS. */
void rd_sync_connect(struct rd_sync *s, const struct rd_addr *to);
/**
 * Makes `seed`'s IP a known source (above): the agent calls it for every seed it joins
 * through, so that a seed's syncs use the slots kept for members.
 */
void rd_sync_add_seed(struct rd_sync *s, const struct rd_addr *seed);
/** The counts of refusals so far. */
void rd_sync_stats(const struct rd_sync *s, struct rd_sync_stats *out);
/** Frames refused by the envelope rule so far, by reason. */
struct rd_envelope_drops rd_sync_dropped(const struct rd_sync *s);
/**
 * Stops listening and closes every connection without touching the core again. The
 * memory goes when the loop has run the close callbacks.
 */
void rd_sync_close(struct rd_sync *s);

#endif
