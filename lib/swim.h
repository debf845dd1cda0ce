/*
 * swim.h — the membership state machine: SWIM failure detection and gossip, with the
 * Lifeguard refinements, as a sans-I/O core.
 *
 * The caller owns sockets and clocks. It feeds the core what arrived and what time it is,
 * and drains what the core wants done:
 *
 *     rd_swim_recv(s, now, from, &packet)    a UDP packet arrived (already decoded)
 *     rd_swim_tick(s, now)                   time passed; call at rd_swim_next_tick()
 *     rd_swim_poll_send(s, now, &to, &pkt)   next UDP packet to encode and send
 *     rd_swim_poll_sync(s, &to)              next full-state exchange to open (TCP)
 *     rd_swim_poll_event(s, &ev)             next member change, for logs and the ring
 *
 * Full-state exchanges (join and anti-entropy) are a pair of calls around a stream the
 * caller opens: rd_swim_sync_state() fills our side, rd_swim_sync_recv() merges theirs.
 * Randomness comes from a generator seeded by the caller, so the same inputs give the
 * same outputs: that is what makes the simulator and the unit tests deterministic.
 */
#ifndef RD_SWIM_H
#define RD_SWIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "member.h"
#include "msg.h"
#include "strpool.h"

/** Timing and fan-out. rd_swim_config_default() gives memberlist's LAN profile, except
 *  that a suspicion confirmed by 2 independent accusers times out at half its minimum
 *  (same maximum, same k): see proto/PROTOCOL.md, "Failure detection". */
struct rd_swim_config {
    uint32_t probe_interval_ms;       /**< protocol period: one probe per period (1000) */
    uint32_t probe_timeout_ms;        /**< wait for a direct ack before indirect probes (500) */
    uint32_t indirect_checks;         /**< members asked to probe for us (3) */
    uint32_t probe_resends;           /**< direct pings sent again, evenly spaced, before the
                                           probe timeout while no ack came (6) */
    uint32_t gossip_interval_ms;      /**< period of piggyback-only gossip (200) */
    uint32_t gossip_fanout;           /**< members per gossip round (3) */
    uint32_t retransmit_mult;         /**< each update is sent mult*ceil(log10(N+1)) times (4) */
    uint32_t suspicion_mult;          /**< min suspicion = mult*max(1,log10 N)*interval (2) */
    uint32_t suspicion_max_mult;      /**< max suspicion = max_mult*min (12) */
    uint32_t suspicion_confirmations; /**< independent accusers beyond the first that bring
                                           a suspicion down to the min (2) */
    uint32_t sync_interval_ms;      /**< anti-entropy period, scaled up above 32 members (30000) */
    uint32_t join_retry_max_ms;     /**< backoff cap while no seed answered (30000) */
    uint32_t tombstone_ms;          /**< dead and left members are kept this long (3600000) */
    uint32_t reclaim_ms;            /**< a dead member's name is taken from a new address
                                         only after this long (15000) */
    uint32_t reconnect_interval_ms; /**< try a dead member's address, or the seeds when in a
                                        minority, this often (10000) */
    uint32_t awareness_max;         /**< Lifeguard local health ceiling (8) */
    bool act_on_refusals;           /**< a probe whose target's host and every helper's
                                         say nothing listens there fails at once (true):
                                         see rd_swim_refused() */
};

/** Fills `cfg` with the LAN defaults above. */
void rd_swim_config_default(struct rd_swim_config *cfg);

/**
 * memberlist's three timing sets (DefaultLANConfig, DefaultWANConfig, DefaultLocalConfig),
 * mapped onto rd_swim_config as README.md's profile table says. LAN is the default.
 */
enum rd_swim_profile { RD_PROFILE_LAN, RD_PROFILE_WAN, RD_PROFILE_LOCAL, RD_PROFILE_COUNT };

/** Fills `cfg` with profile `p`'s values; RD_PROFILE_LAN gives rd_swim_config_default(). */
void rd_swim_config_profile(struct rd_swim_config *cfg, enum rd_swim_profile p);
/** "lan", "wan" or "local"; "?" for a value out of range. */
const char *rd_swim_profile_name(enum rd_swim_profile p);
/** The profile named `name` (exactly as rd_swim_profile_name() spells it), or -1. */
int rd_swim_profile_parse(const char *name);

/** One member change. Copies, valid after the call. */
struct rd_swim_event {
    struct rd_member member;   /**< the member as now known */
    uint8_t old_status;        /**< status before the change (or RD_ALIVE/new) */
    bool is_new;               /**< first time we hear of this member */
    bool self;                 /**< the change is about this agent */
    bool conflict;             /**< not a change: a namesake claims member's name from
                                    `other_addr`, and was refused */
    bool updated;              /**< same status, but the record's weight, zone or tags
                                    changed (a newer incarnation said so) */
    struct rd_addr other_addr; /**< the refused namesake's address, when `conflict` */
};

/** Counters, for INFO and tests. */
struct rd_swim_stats {
    uint64_t packets_in, packets_out;
    uint64_t probes, probes_acked, probes_failed, indirect_probes; /**< sent, then how each ended */
    uint64_t probes_refused;  /**< of probes_failed: failed early, every path refused */
    uint64_t probe_resends;   /**< direct pings sent again for want of an ack */
    uint64_t helpers_refused; /**< helpers of our probes whose host refused a datagram */
    uint64_t refutes;         /**< times we raised our incarnation to refute */
    uint64_t syncs_in, syncs_out, syncs_done,
        syncs_failed;              /**< out: started, then how each ended */
    uint64_t events_dropped;       /**< events lost because nobody drained the queue */
    uint64_t incarnations_refused; /**< records whose incarnation jumped implausibly far */
    uint64_t members_refused_full; /**< new members refused: the table held RD_MAX_MEMBERS */
    uint64_t replies_trimmed;      /**< PINGs from strangers answered with a bare ACK */
    uint64_t ping_reqs_refused;    /**< PING_REQs from strangers, not relayed */
    uint64_t namesakes_ignored;    /**< namesakes refused while we were established */
    uint64_t timer_steps;          /**< work of the per-member timers (suspicions, tombstones, the
                                        dead member reconnect picks): heap levels and tree nodes
                                        visited keeping and reading them, rd_swim_next_tick's reads
                                        included, so tests can bound the cost of a wake-up */
    uint64_t late_ticks;           /**< ticks so late that their verdicts were put off */
};

/**
 * The most a known member's incarnation may rise in one step. A member raises its own by
 * one per refutation, and a restart starts from the wall clock in ms: 2^32 is 49 days of
 * downtime or four billion refutations. A record further ahead is a forgery or a bug, and
 * believing it would let one datagram push a member to the end of the range, where it can
 * never refute again.
 */
#define RD_INCARNATION_JUMP_MAX (UINT64_C(1) << 32)

struct rd_swim;

/**
 * Creates a membership core for the member `self` (name, advertised address, weight, zone,
 * tags; `self->incarnation` is the starting incarnation, which the caller should take
 * from its start time so that a restart outranks everything said about the previous
 * life). `seed` seeds the generator. Returns NULL if `self` is invalid or memory fails.
 */
struct rd_swim *rd_swim_new(const struct rd_swim_config *cfg, const struct rd_member *self,
                            uint64_t seed, uint64_t now_ms);
/**
 * rd_swim_new(), with the names, zones and tags kept in `strings` instead of a pool of the
 * core's own: cores that share one (the simulator's thousands) store each string once.
 * The pool must outlive the core.
 */
struct rd_swim *rd_swim_new_shared(const struct rd_swim_config *cfg, const struct rd_member *self,
                                   uint64_t seed, uint64_t now_ms, struct rd_strpool *strings);
/** Frees everything. NULL is fine. */
void rd_swim_delete(struct rd_swim *s);

/** A decoded UDP packet arrived from `from` (the datagram's source address). */
void rd_swim_recv(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *from,
                  const struct rd_packet *pkt);
/**
 * The network refused a datagram we sent to `to`: its host answered that nothing listens
 * on that port (ICMP port unreachable, read from the socket's error queue). A crashed
 * agent on a running host says so at once, where a silent one costs the probe's whole
 * period. If `to` is the target of our probe, its PING_REQs go out now; if we relay a
 * probe of `to`, our NACK goes out now, flagged RD_NACK_REFUSED; if `to` is a helper our
 * probe asked, its NACK is no longer expected. A probe fails before its
 * period ends only when the direct path and every helper asked report a refusal (with
 * cfg.act_on_refusals). Anything else is ignored: refusals are not authenticated.
 */
void rd_swim_refused(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *to);
/** Runs every timer that is due at `now_ms`. */
void rd_swim_tick(struct rd_swim *s, uint64_t now_ms);
/**
 * rd_swim_tick, called `lag_ms` after the time rd_swim_next_tick() asked for (the caller's
 * loop was blocked or its process starved of CPU). A late tick puts off its verdicts
 * (probe failures, deaths) until the caller has read the input that waited meanwhile, and
 * stretches our timeouts by the lag (local health).
 */
void rd_swim_tick_lagged(struct rd_swim *s, uint64_t now_ms, uint64_t lag_ms);
/** Absolute time at which the core next wants rd_swim_tick(). */
uint64_t rd_swim_next_tick(const struct rd_swim *s);

/**
 * Takes the next packet to send. Returns true and fills *to and *pkt (whose members point
 * into the core's scratch, valid until the next call on `s`), or false when none is
 * queued. Piggybacked news is chosen so that the packet encodes within RD_PACKET_BUDGET.
 */
bool rd_swim_poll_send(struct rd_swim *s, uint64_t now_ms, struct rd_addr *to,
                       struct rd_packet *pkt);
/** Takes the next full-state exchange to open towards *to. False when none. */
bool rd_swim_poll_sync(struct rd_swim *s, struct rd_addr *to);
/** Takes the next member change. False when none. */
bool rd_swim_poll_event(struct rd_swim *s, struct rd_swim_event *ev);

/**
 * Fills *pkt with a SYNC carrying our whole member table. `flags` are RD_SYNC_* for the
 * message. The records are a copy of the table made for this call: pkt->members points at
 * the array returned, which the caller frees. NULL if memory fails (then *pkt is empty).
 */
struct rd_member *rd_swim_sync_state(struct rd_swim *s, uint8_t flags, struct rd_packet *pkt);
/**
 * Merges a peer's full state. A death we hear this way is taken as a suspicion. Returns
 * true if the peer asked for our state in return (then send rd_swim_sync_state()).
 */
bool rd_swim_sync_recv(struct rd_swim *s, uint64_t now_ms, const struct rd_packet *pkt);
/** The exchange towards `to` failed (connect or read error, timeout); counted in stats. */
void rd_swim_sync_failed(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *to);
/**
 * The exchange we opened towards `to` was answered, and rd_swim_sync_recv() merged the
 * answer (from another member than ourselves). The first one makes us joined. Only the
 * caller, which opened the connection, can tell an answer from an unsolicited sync.
 */
void rd_swim_sync_done(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *to);

/**
 * Joins through the seeds: syncs with them, retrying with backoff until an exchange we
 * opened is answered (rd_swim_sync_done). Once joined, it syncs once with each new seed.
 * Returns false if an exchange with some seed could not be queued now (the seed list or
 * the sync queue is full): whoever waits for that exchange would wait in vain.
 */
bool rd_swim_join(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *seeds, size_t n);
/** Seeds remembered for joining; rd_swim_join and rd_swim_set_seeds keep the first ones. */
#define RD_SWIM_SEEDS_MAX 16

/**
 * Replaces the seeds with seeds[0..n) (what their names resolve to now: hosts come and go).
 * While not joined, a seed not among the previous ones is synced with at once, and the
 * join retries start again if they had stopped for want of seeds; the backoff stays.
 */
void rd_swim_set_seeds(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *seeds, size_t n);
/**
 * True once a full-state exchange that we opened (towards a seed or a member) was answered
 * and merged. A datagram or a sync someone else opened never counts: anyone can send one.
 */
bool rd_swim_joined(const struct rd_swim *s);

/** Announces a graceful leave: we become `left` at a new incarnation and stop probing. */
void rd_swim_leave(struct rd_swim *s, uint64_t now_ms);
/** True when the leave has been sent as often as any update is (or nobody is left to tell). */
bool rd_swim_leave_done(const struct rd_swim *s);

/**
 * Changes our own weight (0 drains: in the table, alive, but in no ring), zone and tags at
 * run time. Our incarnation rises by one, the checksum follows, an `updated` event about
 * us is queued and the record is gossiped at once, as a refutation is. Returns 0 (also
 * when nothing differs: then nothing is sent), RD_EINVAL for a value no record may carry,
 * RD_EREFUSED once leaving.
 */
int rd_swim_update_self(struct rd_swim *s, uint64_t now_ms, uint32_t weight, const char *zone,
                        const char *tags);
/**
 * Marks another member `left` at the incarnation we know it by, and gossips it: others
 * take it, since left outranks alive, suspect and dead at one incarnation (PROTOCOL.md,
 * "Force-leave"). A dead member only, unless `prune`; the member itself, if it is in fact
 * alive, refutes with a higher incarnation and is alive again everywhere. Returns 0 (also
 * for a member already left), RD_ENOENT for an unknown name, RD_EINVAL for ourselves,
 * RD_EREFUSED for an alive or suspect member without `prune`, RD_ENOMEM.
 */
int rd_swim_force_leave(struct rd_swim *s, uint64_t now_ms, const char *name, bool prune);

/** Our own record as the cluster should know it. Valid until the next call that changes s. */
const struct rd_member *rd_swim_self(const struct rd_swim *s);
/** Number of known members (self, alive, suspect, dead and left tombstones). */
size_t rd_swim_member_count(const struct rd_swim *s);
/**
 * A member as the table holds it. The table keeps members compact, its strings interned in
 * a pool, so a member is read through a view whose strings point into that pool: valid
 * until the next call that changes the core.
 */
struct rd_member_view {
    const char *name, *zone, *tags;
    struct rd_addr addr;
    uint64_t incarnation;
    uint32_t weight;
    uint8_t status; /**< enum rd_status */
};
/** Fills *out with member i, 0 <= i < count; false if there is none. In no particular
 *  order (0 is self). */
bool rd_swim_member(const struct rd_swim *s, size_t i, struct rd_member_view *out);
/** Looks a member up by name and copies it into *out (when out is not NULL); false if
 *  unknown. */
bool rd_swim_find(const struct rd_swim *s, const char *name, struct rd_member *out);
/** The status of member `name` (enum rd_status), or -1 if unknown; copies nothing. */
int rd_swim_status_of(const struct rd_swim *s, const char *name);
/** Members per status (self included), indexed by enum rd_status. */
void rd_swim_counts(const struct rd_swim *s, size_t counts[4]);
/**
 * Membership checksum: the sum (mod 2^64) over the members in the ring (alive and
 * suspect) of XXH3-64 of u8 len | name | u32 big-endian weight, then u8 len | zone and
 * u8 len | tags for a member that has them (PROTOCOL.md). A sum does not depend on order,
 * so it is kept up to date in O(1) per change. Equal on two agents exactly when they hold
 * the same members at the same weights, zones and tags (up to hash collisions).
 */
uint64_t rd_swim_checksum(const struct rd_swim *s);
/**
 * Non-NULL once an older namesake was found alive at another address while this agent was
 * not yet established (see rd_swim_established()): it joined with a name already in use,
 * and must stop (the record is the namesake's).
 */
const struct rd_member *rd_swim_conflict(const struct rd_swim *s);
/**
 * True once another member has told us about ourselves at our own address, alive or
 * suspect, at an incarnation of this life (at least our first): the cluster knows us under
 * our name. An established agent never stops because of a namesake; it reports it.
 */
bool rd_swim_established(const struct rd_swim *s);
/** Lifeguard local health: 0 is healthy; timeouts stretch by (score + 1). */
uint32_t rd_swim_health(const struct rd_swim *s);
/** The storm score at `now_ms` (suspicion.h): distinct members seen refuting a suspicion in
 *  the last 10 to 20 probe periods, less one, at most the local health ceiling. A
 *  suspicion's timeout stretches by the larger of it and local health, plus one. */
uint32_t rd_swim_storm(const struct rd_swim *s, uint64_t now_ms);
/** Counters. */
const struct rd_swim_stats *rd_swim_stats(const struct rd_swim *s);

/**
 * Verifies the core's invariants against its member table: the dissemination queue's
 * links and pending count, the name index, the counts per status, the live count, the
 * checksum, and the timers: the suspicion and tombstone heaps' order and position index,
 * holding exactly the suspects and the tombstones (but ours) at their deadlines, and the
 * set of dead members. Returns 0, or RD_ECORRUPT with *why saying what is wrong. O(N). Builds with
 * RD_SWIM_CHECKS (Debug, sanitizers) run it after every rd_swim_recv, rd_swim_tick and
 * rd_swim_sync_recv, and abort on a violation.
 */
int rd_swim_check(const struct rd_swim *s, const char **why);

#endif
