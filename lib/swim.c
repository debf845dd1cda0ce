/*
 * swim.c — SWIM membership with Lifeguard, as a state machine fed with packets and time.
 *
 * Shape:
 *   - The member table is one dense array of 64-byte records: every member holds one per
 *     member of the cluster, so at N = 10,000 in the simulator the table is most of the
 *     memory. Names, zones and tags are interned (strpool.c), a suspect's suspicion and
 *     accuser sit in a side array, and the timer heaps grow with what they hold rather
 *     than with the table. Whole records are made on the way out (a packet's, a sync's,
 *     an event's). Reaping swaps the last entry into the hole. Slot 0 is always this
 *     member. A name index (open addressing) finds entries.
 *   - Failure detection runs one probe per protocol period over a shuffled round-robin
 *     list: PING, then after the probe timeout PING_REQ through k others, then at the end
 *     of the period suspicion. Lifeguard's local health stretches both our timeout and our
 *     period when we are the slow one, and suspicion timeouts shrink as independent
 *     accusers confirm (memberlist's formula) and are read again at expiry for the cluster
 *     known then (a suspect merged early in a joiner's first sync met a cluster of two),
 *     stretched then by the larger of our own health and the storm score, which counts the
 *     members seen refuting lately: in a storm the accusers' confirmations are as wrong as
 *     the first.
 *     The arithmetic (timeouts, accusers, the health and storm scores) is suspicion.c's;
 *     this file decides when it applies.
 *   - A refusal (rd_swim_refused: the host of an address we pinged said nothing listens
 *     there) is news the period need not wait for: the PING_REQs leave at once, a relay
 *     answers with a NACK flagged as refused, and a probe that every path reports refused
 *     fails then, each refused helper counted as an accuser of its own. A crashed agent on
 *     a running host is suspected within a round trip, at the shortest suspicion timeout;
 *     a silent host still costs the whole period and waits for confirmations. Refusals are
 *     unauthenticated, so one alone never fails a probe that had helpers to ask, and all
 *     they can start is a suspicion, which the live member refutes.
 *   - Our own lateness is not the target's silence. The caller says how late a tick runs
 *     (rd_swim_tick_lagged): a starved event loop may fire its overdue timer before it
 *     reads the answers that waited in its socket, so a late tick gives no verdict (probe
 *     timeout or failure, relay nack, death of a suspect), asks to be woken again at
 *     once, and the next tick judges on what was read meanwhile. The lag also raises local
 *     health, so the next probes wait as long as the starved may need to answer.
 *   - Dissemination: every accepted change is queued for retransmit_mult*ceil(log10(N+1))
 *     sends in txqueue.c's queue, which hands out the records with the most sends left
 *     first, the newest among equals: fresh news, such as a suspicion or a refutation,
 *     leaves at once instead of waiting behind a backlog of joins. One record per member:
 *     newer news replaces older. This file decides how many sends and what fits a packet,
 *     and when a round runs: every gossip interval while news is queued, and sooner after
 *     news that changes the ring (gossip_soon).
 *   - The membership checksum and the counts per status are running tallies, updated
 *     in O(1) on every change, since probes carry the checksum, timeouts need N, and
 *     every membership log line prints the counts. rd_swim_check() recomputes them, the
 *     name index, the queue's links and the timer heaps from the table; Debug and
 *     sanitizer builds run it (spread over calls, see "invariants") after every input.
 *   - Per-member timers cost O(log N) per expiry and O(1) per wake-up with nothing due,
 *     never a pass over the table: under loss at N = 1,000 every member may be suspect,
 *     and the caller asks rd_swim_next_tick() after every packet. Suspicion deadlines and
 *     tombstone expiries are two min-heaps over member slots (deadlines.c), each slot's
 *     heap position kept beside it, so a refutation, a confirmation, a status change and
 *     a reaped slot's swap-remove each sift one entry; the next wake-up is the earlier top.
 *     What expires in one tick is handled in slot order, the order of a walk over the
 *     table. The dead members are also a Fenwick tree over slots (slotrank.c), so that
 *     reconnecting picks the k-th dead member as a walk would, without one. The probe
 *     list is the one O(N) structure: its reshuffle is one pass per round of N probes, and
 *     adding or forgetting a member moves it by one memmove.
 *   - Healing: a namesake at another address is probed by name and the younger stops;
 *     members sync with a random dead member's address now and then (and with the seeds
 *     while in a minority), so the halves of a healed partition find each other.
 *   - Outputs are queues drained by the caller (packets, syncs, events); nothing here
 *     blocks, allocates per packet, or reads a clock.
 */
#include "swim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "deadlines.h"
#include "rand.h"
#include "rd_err.h"
#include "slotrank.h"
#include "strpool.h"
#include "suspicion.h"
#include "txqueue.h"

/** Queued control messages awaiting rd_swim_poll_send(). */
#define OUT_QUEUE_MAX 256
/** Indirect probes we relay for others at once. */
#define RELAYS_MAX 64
/**
 * A relay NACKs after this percentage of its probe timeout. The requester sent its
 * PING_REQ one probe timeout into its probe and waits for answers as long again; a NACK
 * sent after a whole timeout would reach it after its probe ended, every time, and count
 * as missing, raising its local health for each crash it probes.
 */
#define RELAY_NACK_PCT 80
/** Most helpers asked to probe one target indirectly (cfg.indirect_checks is clamped). */
#define HELPERS_MAX 16
/** Full-state exchanges queued at once. */
#define SYNC_QUEUE_MAX 16
/** Member changes queued for the caller. */
#define EVENT_QUEUE_MAX 4096
/** A drained event queue larger than this gives its memory back: a join's burst of "new
 *  member" events (~0.5 KB each) should not stay reserved for the life of the core. */
#define EVENT_QUEUE_KEEP 64
/** Ring news pulls the next gossip round to this fraction of the interval after the last. */
#define EAGER_GOSSIP_DIVISOR 4
/**
 * The first join retry comes this long after the first attempt (jittered), the gap
 * doubling up to join_retry_max_ms. A seed refuses a stranger address's syncs beyond a
 * few at a time, so joiners behind one address (loopback, NAT) that start together are
 * mostly refused once; they should not all wait a second for it.
 */
#define JOIN_RETRY_FIRST_MS 100
/** Checksum-triggered syncs: at most one per this many probe intervals. */
#define MISMATCH_SYNC_PERIODS 1
/** A tick later than probe_timeout_ms / this is late (see rd_swim_tick_lagged). */
#define LATE_TICK_DIV 10

/* The kinds of slot that rd_swim_check() verifies one by one (see "invariants"). */
enum check_kind {
    CHECK_MEMBER,
    CHECK_INDEX,
    CHECK_QUEUE,
    CHECK_SUSPICION,
    CHECK_TOMBSTONE,
    CHECK_KINDS
};

_Static_assert(RD_WIRE_HEADER_MAX + RD_WIRE_MSG_MAX + RD_WIRE_MEMBER_BASE + RD_NAME_MAX +
                       RD_ZONE_MAX + RD_TAGS_MAX + RD_NAME_MAX <=
                   RD_PACKET_BUDGET,
               "a packet must fit one message and the largest member record");

/*
 * One member as the table keeps it, with its bookkeeping: 64 bytes. Names, zones and tags
 * are ids in the string pool (strpool.h), which holds each distinct string once. What only
 * a suspect needs (its suspicion, its accuser) is in a dense side array. The record's share
 * of the checksum is not kept: it is rehashed (a dozen bytes) when the share is taken away.
 */
struct rec {
    uint64_t incarnation;
    uint64_t changed_ms;         /* last status change, for tombstone reaping */
    uint64_t conflict_logged_ms; /* last conflict event about this member */
    uint32_t name, zone, tags;   /* string pool ids */
    uint32_t weight : 24;        /* RD_WEIGHT_MAX fits */
    uint32_t status : 8;         /* enum rd_status */
    uint32_t suspicion;          /* 1 + its index in s->susp while suspect, else 0 */
    struct rd_addr addr;
};

_Static_assert(RD_WEIGHT_MAX < (1u << 24), "a weight fits the record's 24 bits");
_Static_assert(sizeof(struct rec) <= 64, "a member's record and bookkeeping take 64 bytes");

/* A suspect's suspicion, beside the table. */
struct susp {
    struct rd_suspicion sp;
    uint32_t accuser; /* string pool id of the latest accuser, as its record carries it */
    uint32_t slot;    /* the suspect's */
};

/* An outgoing control message. */
struct out {
    struct rd_addr to;
    struct rd_msg msg;
    char to_name[RD_NAME_MAX + 1]; /* for the buddy system: suspect news goes first */
    bool with_self;                /* carry our own record first (name conflict notice) */
    size_t cap;                    /* most bytes the packet may take; 0: RD_PACKET_BUDGET */
};

/* A PING_REQ we are relaying: our ping's seq, whom we ping and whom to answer. */
struct relay {
    uint32_t our_seq, their_seq;
    char target[RD_NAME_MAX + 1];
    struct rd_addr target_addr;
    struct rd_addr requester;
    uint64_t deadline_ms;
};

struct probe {
    bool active;
    bool indirect_sent;
    bool refused; /* the target's host refused our ping: nothing listens there */
    uint32_t seq;
    char target[RD_NAME_MAX + 1];
    struct rd_addr target_addr;
    uint64_t timeout_ms, period_end_ms;
    uint64_t resend_ms, resend_step_ms; /* the next direct resend, and the gap to the one after */
    uint32_t resends_left;
    uint32_t nacks_expected; /* helpers asked: helpers[0 .. nacks_expected) */
    uint32_t nacked_by;      /* bit h: helpers[h] sent a NACK */
    uint32_t refused_by;     /* bit h: helpers[h] sent a NACK flagged RD_NACK_REFUSED */
    uint32_t helpers_gone;   /* bit h: a datagram to helpers[h] was refused: no NACK can come */
    char helpers[HELPERS_MAX][RD_NAME_MAX + 1]; /* asked by PING_REQ: may ACK or NACK for it */
    struct rd_addr helper_addrs[HELPERS_MAX];
};

struct rd_swim {
    struct rd_swim_config cfg;
    struct rd_suspicion_config suspicion_cfg; /* cfg's part that suspicion timeouts need */
    struct rd_rand rng;
    uint32_t seq;

    /* member table: members[i], 0 is self; strings in `strings` */
    struct rec *members;
    size_t count, cap;
    struct rd_strpool *strings;
    bool own_strings;      /* the pool is ours to free (rd_swim_new, not _shared) */
    struct rd_member self; /* members[0] as a whole record, for rd_swim_self() */
    struct susp *susp;     /* [nsusp]: the suspects' suspicions, in no order */
    size_t nsusp, susp_cap;
    uint32_t *index;  /* name hash table of (entry index + 1), 0 = empty */
    size_t index_cap; /* power of two, > 2 * cap */

    struct rd_txqueue txq;          /* records with sends due, by member slot */
    struct rd_deadlines suspicions; /* suspects, by suspicion deadline */
    struct rd_deadlines tombstones; /* dead and left members but us, by time to forget */
    struct rd_slotrank dead;        /* dead members, for picking one at random */
    uint32_t *due;                  /* [due_cap] scratch: slots whose deadline came */
    size_t due_cap;                 /* the tombstone heap's room: see reserve_timers() */

    uint32_t *probe_order; /* shuffled entry indexes; rebuilt when exhausted */
    size_t probe_len, probe_pos;
    struct probe probe;
    uint64_t next_probe_ms, next_gossip_ms, next_sync_ms, next_reconnect_ms;
    uint64_t last_gossip_ms;    /* the last gossip round: ring news pulls the next one closer */
    uint64_t start_incarnation; /* our first incarnation: tells which of two namesakes is older */
    uint64_t incarnation_high;  /* the highest incarnation our table has held, of anyone */
    bool conflict;              /* a namesake older than us is alive elsewhere */
    bool established;           /* a member told us about ourselves at our address */
    struct rd_member conflict_with;
    uint32_t conflict_probe_seq; /* pinging an older namesake: does it still answer? */
    uint64_t conflict_probe_deadline_ms;
    struct rd_member conflict_candidate;
    uint64_t last_mismatch_sync_ms, last_followup_sync_ms;
    size_t check_next[CHECK_KINDS]; /* where each per-slot check goes on (RD_SWIM_CHECKS) */
    struct rd_health health;
    struct rd_storm storm;   /* members seen refuting lately: see suspicion.h */
    bool verdicts_put_off;   /* a late tick left its verdicts to the next tick (see "timers") */
    uint64_t verdicts_at_ms; /* ... which comes no earlier than this, after input was read */

    struct out *outq; /* ring buffer */
    size_t out_head, out_len;
    struct relay relays[RELAYS_MAX];
    size_t nrelays;
    struct rd_addr syncq[SYNC_QUEUE_MAX];
    size_t nsync;
    struct rd_swim_event *events; /* ring buffer, grows to EVENT_QUEUE_MAX */
    size_t ev_head, ev_len, ev_cap;

    struct rd_addr seeds[RD_SWIM_SEEDS_MAX];
    size_t nseeds;
    bool joined; /* an exchange we opened was answered and merged (rd_swim_sync_done) */
    bool heard;  /* another member spoke to us: a datagram or a sync, asked for or not */
    uint64_t join_next_ms;
    uint32_t join_backoff_ms;

    bool leaving;
    uint64_t checksum; /* running sum of in-ring members' hashes */
    size_t nlive;      /* running count of alive + suspect */
    size_t nstatus[4]; /* running count per status, self included */

    struct rd_member *scratch; /* piggyback and sync records handed to the caller */
    struct rd_swim_stats stats;
};

/* ---------------------------------------------------------------- small helpers */

static uint32_t next_seq(struct rd_swim *s);
static struct rd_msg make_msg(struct rd_swim *s, uint8_t type, uint32_t seq);

static uint64_t name_hash(const char *name)
{
    return XXH3_64bits(name, strlen(name));
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static bool in_ring(uint8_t status)
{
    return status == RD_ALIVE || status == RD_SUSPECT;
}

/* One more than inc, stopping at the end of the range instead of wrapping to 0. */
static uint64_t inc_sat(uint64_t inc)
{
    return inc == UINT64_MAX ? UINT64_MAX : inc + 1;
}

/* False when `inc` is further above `known` (the highest seen for that member) than any
 * honest member can have gone since: see RD_INCARNATION_JUMP_MAX. */
static bool plausible(uint64_t known, uint64_t inc)
{
    return inc <= known || inc - known <= RD_INCARNATION_JUMP_MAX;
}

/* Members that are alive or suspect, self included: the N of SWIM's formulas. */
static size_t live_count(const struct rd_swim *s)
{
    return s->nlive;
}

static const char *str(const struct rd_swim *s, uint32_t id)
{
    return rd_strpool_str(s->strings, id);
}

static const char *name_of(const struct rd_swim *s, size_t i)
{
    return str(s, s->members[i].name);
}

/* Copies pool string `id` into out[0..RD_..._MAX + 1). */
static void copy_str(const struct rd_swim *s, uint32_t id, char *out)
{
    memcpy(out, str(s, id), rd_strpool_len(s->strings, id) + 1);
}

/* Member i as a whole record, as the wire and the caller see it. */
static void get_record(const struct rd_swim *s, size_t i, struct rd_member *out)
{
    const struct rec *r = &s->members[i];
    out->addr = r->addr;
    out->incarnation = r->incarnation;
    out->status = r->status;
    out->weight = r->weight;
    copy_str(s, r->name, out->name);
    copy_str(s, r->zone, out->zone);
    copy_str(s, r->tags, out->tags);
    copy_str(s, r->suspicion ? s->susp[r->suspicion - 1].accuser : 0, out->accuser);
}

/* Replaces the pool string at *id with `value`: the new one is taken before the old one
 * is let go, so an unchanged string is not freed and stored again. 0 or RD_ENOMEM. */
static int set_str(struct rd_swim *s, uint32_t *id, const char *value)
{
    uint32_t next = rd_strpool_intern(s->strings, value, strlen(value));
    if (next == RD_STRPOOL_NONE) return RD_ENOMEM;
    rd_strpool_release(s->strings, *id);
    *id = next;
    return 0;
}

/* Member i's record changed: keep the whole copy of ours in step. */
static void touched(struct rd_swim *s, uint32_t i)
{
    if (i == 0) get_record(s, 0, &s->self);
}

/* Appends u8 len | the string of pool id `id` to buf at n; returns the new length. Id 0 is
 * the empty string, so member_hash tests a zone or tags by its id. */
static size_t put_str(const struct rd_swim *s, uint8_t *buf, size_t n, uint32_t id)
{
    size_t len = rd_strpool_len(s->strings, id);
    buf[n] = (uint8_t)len;
    memcpy(buf + n + 1, rd_strpool_str(s->strings, id), len);
    return n + 1 + len;
}

/*
 * A member's share of the membership checksum, XXH3-64 of: u8 len | name | u32 BE weight;
 * then u8 len | zone for a member with a zone or tags, then u8 len | tags for one with tags.
 * What placement depends on (PROTOCOL.md): zones for zone-aware replicas, tags for ketama
 * mode's identities. A member with neither hashes the first part alone.
 */
static uint64_t member_hash(const struct rd_swim *s, size_t i)
{
    const struct rec *m = &s->members[i];
    uint8_t buf[1 + RD_NAME_MAX + 4 + 1 + RD_ZONE_MAX + 1 + RD_TAGS_MAX];
    size_t n = put_str(s, buf, 0, m->name);
    buf[n++] = (uint8_t)(m->weight >> 24);
    buf[n++] = (uint8_t)(m->weight >> 16);
    buf[n++] = (uint8_t)(m->weight >> 8);
    buf[n++] = (uint8_t)m->weight;
    if (m->zone || m->tags) n = put_str(s, buf, n, m->zone);
    if (m->tags) n = put_str(s, buf, n, m->tags);
    return XXH3_64bits(buf, n);
}

/*
 * Adds (sign = 1) or removes (sign = -1) member i's part in the running tallies, so that
 * the checksum and counts cost O(1) per change instead of a pass over the table. A part is
 * always taken away before the record changes, so its hash is the one that was added.
 */
static void tally(struct rd_swim *s, uint32_t i, int sign)
{
    const struct rec *m = &s->members[i];
    s->nstatus[m->status & 3] += (size_t)(ptrdiff_t)sign;
    if (m->status == RD_DEAD) rd_slotrank_put(&s->dead, i, sign > 0);
    if (sign > 0 && m->incarnation > s->incarnation_high) s->incarnation_high = m->incarnation;
    if (!in_ring(m->status)) return;
    s->nlive += (size_t)(ptrdiff_t)sign;
    s->checksum += (uint64_t)(int64_t)sign * member_hash(s, i);
}

void rd_swim_config_default(struct rd_swim_config *cfg)
{
    *cfg = (struct rd_swim_config){
        .probe_interval_ms = 1000,
        .probe_timeout_ms = 500,
        .indirect_checks = 3,
        .probe_resends = 6,
        .gossip_interval_ms = 200,
        .gossip_fanout = 3,
        .retransmit_mult = 4,
        .suspicion_mult = 2,
        .suspicion_max_mult = 12,
        .suspicion_confirmations = 2,
        .sync_interval_ms = 30000,
        .join_retry_max_ms = 30000,
        .tombstone_ms = 3600000,
        .reclaim_ms = 15000,
        .reconnect_interval_ms = 10000,
        .awareness_max = 8,
        .act_on_refusals = true,
    };
}

/*
 * The profiles are memberlist's numbers, row by row, converted where ringd's formulas
 * differ (README.md's profile table names the memberlist field behind each value):
 * ringd's suspicion minimum is half memberlist's, rounded up, and max_mult makes the
 * maximum memberlist's (SuspicionMaxTimeoutMult 6 times its minimum); k is memberlist's
 * SuspicionMult - 2. What memberlist does not have (join backoff, tombstones, name
 * reclaim, reconnect) keeps its default in every profile.
 */
struct memberlist_set {
    uint32_t probe_interval, probe_timeout, indirect_checks; /* ms, ms, members */
    uint32_t gossip_interval, gossip_nodes, retransmit_mult; /* ms, members, sends */
    uint32_t suspicion_mult, push_pull_interval;             /* memberlist's mult, ms */
};

#define MEMBERLIST_SUSPICION_MAX_MULT 6

static const struct memberlist_set memberlist_sets[RD_PROFILE_COUNT] = {
    [RD_PROFILE_LAN] = {1000, 500, 3, 200, 3, 4, 4, 30000},
    [RD_PROFILE_WAN] = {5000, 3000, 3, 500, 4, 4, 6, 60000},
    [RD_PROFILE_LOCAL] = {1000, 200, 1, 100, 3, 2, 3, 15000},
};

void rd_swim_config_profile(struct rd_swim_config *cfg, enum rd_swim_profile p)
{
    rd_swim_config_default(cfg);
    if ((unsigned)p >= RD_PROFILE_COUNT) return;
    const struct memberlist_set *m = &memberlist_sets[p];
    cfg->probe_interval_ms = m->probe_interval;
    cfg->probe_timeout_ms = m->probe_timeout;
    cfg->indirect_checks = m->indirect_checks;
    cfg->gossip_interval_ms = m->gossip_interval;
    cfg->gossip_fanout = m->gossip_nodes;
    cfg->retransmit_mult = m->retransmit_mult;
    cfg->suspicion_mult = (m->suspicion_mult + 1) / 2;
    cfg->suspicion_max_mult =
        MEMBERLIST_SUSPICION_MAX_MULT * m->suspicion_mult / cfg->suspicion_mult;
    cfg->suspicion_confirmations = m->suspicion_mult - 2;
    cfg->sync_interval_ms = m->push_pull_interval;
}

static const char *const profile_names[RD_PROFILE_COUNT] = {"lan", "wan", "local"};

const char *rd_swim_profile_name(enum rd_swim_profile p)
{
    return (unsigned)p < RD_PROFILE_COUNT ? profile_names[p] : "?";
}

int rd_swim_profile_parse(const char *name)
{
    for (int p = 0; p < RD_PROFILE_COUNT; p++)
        if (strcmp(name, profile_names[p]) == 0) return p;
    return -1;
}

/* ---------------------------------------------------------------- name index */

static size_t index_slot(const struct rd_swim *s, const char *name, bool *found)
{
    size_t mask = s->index_cap - 1;
    size_t i = (size_t)name_hash(name) & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t v = s->index[i];
        if (v == 0) {
            *found = false;
            return i;
        }
        if (strcmp(name_of(s, v - 1), name) == 0) {
            *found = true;
            return i;
        }
    }
}

static int find_entry(const struct rd_swim *s, const char *name)
{
    bool found;
    size_t slot = index_slot(s, name, &found);
    return found ? (int)s->index[slot] - 1 : -1;
}

/* Removes `name` from the index, shifting back later entries of its probe run. */
static void index_remove(struct rd_swim *s, const char *name)
{
    bool found;
    size_t mask = s->index_cap - 1;
    size_t hole = index_slot(s, name, &found);
    if (!found) return;
    s->index[hole] = 0;
    for (size_t i = (hole + 1) & mask; s->index[i] != 0; i = (i + 1) & mask) {
        size_t home = (size_t)name_hash(name_of(s, s->index[i] - 1)) & mask;
        /* move i into the hole if its home is not cyclically within (hole, i] */
        bool stays = hole < i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (!stays) {
            s->index[hole] = s->index[i];
            s->index[i] = 0;
            hole = i;
        }
    }
}

static int grow_table(struct rd_swim *s)
{
    if (s->count < s->cap) return 0;
    /* by a quarter: every member holds a table of every other, so slack is N times over */
    size_t cap = s->cap + s->cap / 4;
    if (cap > RD_MAX_MEMBERS) cap = RD_MAX_MEMBERS;
    if (cap <= s->count) return RD_E2BIG;
    struct rec *m = realloc(s->members, cap * sizeof *m);
    if (!m) return RD_ENOMEM;
    s->members = m;
    uint32_t *o = realloc(s->probe_order, cap * sizeof *o);
    if (!o) return RD_ENOMEM;
    s->probe_order = o;
    if (rd_txqueue_grow(&s->txq, cap) < 0 || rd_deadlines_grow_slots(&s->suspicions, cap) < 0 ||
        rd_deadlines_grow_slots(&s->tombstones, cap) < 0 || rd_slotrank_grow(&s->dead, cap) < 0)
        return RD_ENOMEM;
    size_t icap = s->index_cap;
    while (icap <= 2 * cap)
        icap *= 2;
    if (icap != s->index_cap) {
        uint32_t *idx = calloc(icap, sizeof *idx);
        if (!idx) return RD_ENOMEM;
        free(s->index);
        s->index = idx;
        s->index_cap = icap;
        for (size_t i = 0; i < s->count; i++) {
            bool found;
            s->index[index_slot(s, name_of(s, i), &found)] = (uint32_t)i + 1;
        }
    }
    s->cap = cap;
    return 0;
}

/* ---------------------------------------------------------------- dissemination */

static uint32_t retransmit_limit(const struct rd_swim *s)
{
    double n = (double)live_count(s);
    return s->cfg.retransmit_mult * (uint32_t)ceil(log10(n + 1.0));
}

/*
 * Queues member i's current record for dissemination, replacing older news about it, at
 * the head of its level: the newest news goes first.
 * News that clears a suspicion goes out twice as often: every member sends its copies in
 * the same second or so, and a member that happens to miss all of them would later
 * declare a live member dead. Doubling the copies squares that small chance.
 */
static void broadcast_n(struct rd_swim *s, uint32_t i, uint32_t times)
{
    rd_txqueue_push(&s->txq, i, times * retransmit_limit(s));
}

static void broadcast(struct rd_swim *s, uint32_t i)
{
    broadcast_n(s, i, 1);
}

/*
 * News that changes the ring (a member enters it, comes back to life, or leaves it) need
 * not wait for the gossip cadence: the next round comes a quarter interval after the last
 * one, or at once after a quiet spell, so a join crosses the cluster in hops of network
 * latency rather than of gossip intervals. Suspicions keep the cadence: under loss they are
 * the steady chatter, and pulling rounds forward for them would multiply the packets.
 */
static void gossip_soon(struct rd_swim *s)
{
    uint64_t eager = s->last_gossip_ms + s->cfg.gossip_interval_ms / EAGER_GOSSIP_DIVISOR;
    s->next_gossip_ms = min_u64(s->next_gossip_ms, eager);
}

static size_t record_size(const struct rd_swim *s, size_t i)
{
    const struct rec *m = &s->members[i];
    const struct rd_strpool *p = s->strings;
    uint32_t accuser = m->suspicion ? s->susp[m->suspicion - 1].accuser : 0;
    return RD_WIRE_MEMBER_BASE + rd_strpool_len(p, m->name) + rd_strpool_len(p, m->zone) +
           rd_strpool_len(p, m->tags) + rd_strpool_len(p, accuser);
}

/* Adds record i to the packet scratch if it fits; returns false when it does not. */
static bool take_record(struct rd_swim *s, uint32_t i, uint32_t *onboard, size_t *budget, size_t *n)
{
    for (size_t k = 0; k < *n; k++)
        if (onboard[k] == i) return true; /* already on board */
    size_t size = record_size(s, i);
    if (size > *budget || *n >= RD_PACKET_MAX_MEMBERS) return false;
    onboard[*n] = i;
    get_record(s, i, &s->scratch[(*n)++]);
    *budget -= size;
    return true;
}

/*
 * Fills pkt's members with queued news: the destination's own suspicion first (buddy),
 * then the records with the most sends left. Every queued record on board counts as one
 * send, including ours and the buddy record, which ride along before their turn.
 */
static void piggyback(struct rd_swim *s, const char *to_name, bool with_self, size_t cap,
                      size_t nmsgs, struct rd_packet *pkt)
{
    size_t total = cap ? cap : RD_PACKET_BUDGET,
           fixed = RD_WIRE_HEADER_MAX + nmsgs * RD_WIRE_MSG_MAX;
    size_t budget = total > fixed ? total - fixed : 0;
    size_t n = 0;
    uint32_t onboard[RD_PACKET_MAX_MEMBERS];
    /* our own record first when it is news (a refutation, a leave): it is the one thing
     * nobody else can say for us, and a slow refutation is a false death */
    if (with_self || rd_txqueue_sends_left(&s->txq, 0) > 0) take_record(s, 0, onboard, &budget, &n);
    if (to_name && to_name[0]) {
        int d = find_entry(s, to_name);
        if (d > 0 && s->members[d].status == RD_SUSPECT)
            take_record(s, (uint32_t)d, onboard, &budget, &n);
    }
    bool full = false;
    for (uint32_t i = rd_txqueue_first(&s->txq); i != RD_TXQUEUE_NONE && !full;
         i = rd_txqueue_next(&s->txq, i))
        full = !take_record(s, i, onboard, &budget, &n);
    for (size_t k = 0; k < n; k++)
        rd_txqueue_sent(&s->txq, onboard[k]);
    pkt->nmembers = n;
    pkt->members = s->scratch;
}

/* ---------------------------------------------------------------- outputs */

/* Queues an event about member i; returns it, or NULL when it was dropped (counted). */
static struct rd_swim_event *push_event(struct rd_swim *s, uint32_t i, uint8_t old_status,
                                        bool is_new)
{
    if (s->ev_len == s->ev_cap) {
        size_t cap = s->ev_cap ? s->ev_cap * 2 : 16;
        struct rd_swim_event *ev = cap <= EVENT_QUEUE_MAX ? malloc(cap * sizeof *ev) : NULL;
        if (!ev) {
            s->stats.events_dropped++;
            return NULL;
        }
        for (size_t k = 0; k < s->ev_len; k++)
            ev[k] = s->events[(s->ev_head + k) % s->ev_cap];
        free(s->events);
        s->events = ev;
        s->ev_cap = cap;
        s->ev_head = 0;
    }
    struct rd_swim_event *ev = &s->events[(s->ev_head + s->ev_len++) % s->ev_cap];
    get_record(s, i, &ev->member);
    ev->old_status = old_status;
    ev->is_new = is_new;
    ev->self = i == 0;
    ev->conflict = false;
    ev->updated = false;
    return ev;
}

/* Member i's record changed at the same status: placement may have (weight, zone). */
static void push_update(struct rd_swim *s, uint32_t i)
{
    struct rd_swim_event *ev = push_event(s, i, s->members[i].status, false);
    if (ev) ev->updated = true;
}

/* True when r and member i differ in what a member says about itself: weight, zone, tags. */
static bool record_differs(const struct rd_swim *s, const struct rd_member *r, size_t i)
{
    const struct rec *m = &s->members[i];
    return r->weight != m->weight || strcmp(r->zone, str(s, m->zone)) != 0 ||
           strcmp(r->tags, str(s, m->tags)) != 0;
}

/* Reports (at most every reclaim period per member) a namesake at another address. */
static void push_conflict(struct rd_swim *s, uint32_t i, const struct rd_member *other,
                          uint64_t now_ms)
{
    struct rec *e = &s->members[i];
    if (e->conflict_logged_ms && now_ms - e->conflict_logged_ms < s->cfg.reclaim_ms) return;
    e->conflict_logged_ms = now_ms;
    struct rd_swim_event *ev = push_event(s, i, s->members[i].status, false);
    if (!ev) return;
    ev->conflict = true;
    ev->other_addr = other->addr;
}

static void send_msg_ex(struct rd_swim *s, const struct rd_addr *to, const char *to_name,
                        const struct rd_msg *msg, bool with_self)
{
    if (s->out_len == OUT_QUEUE_MAX || to->family == 0)
        return; /* a full queue drops: the protocol tolerates loss by design */
    struct out *o = &s->outq[(s->out_head + s->out_len++) % OUT_QUEUE_MAX];
    o->to = *to;
    o->msg = *msg;
    snprintf(o->to_name, sizeof o->to_name, "%s", to_name ? to_name : "");
    o->with_self = with_self;
    o->cap = 0;
}

static void send_msg(struct rd_swim *s, const struct rd_addr *to, const char *to_name,
                     const struct rd_msg *msg)
{
    send_msg_ex(s, to, to_name, msg, false);
}

static void queue_sync(struct rd_swim *s, const struct rd_addr *to)
{
    if (s->nsync == SYNC_QUEUE_MAX || to->family == 0 || rd_addr_equal(to, &s->members[0].addr))
        return;
    for (size_t i = 0; i < s->nsync; i++)
        if (rd_addr_equal(&s->syncq[i], to)) return;
    s->syncq[s->nsync++] = *to;
}

/* ---------------------------------------------------------------- member table */

/* Member i's suspicion, while it is suspect. */
static struct rd_suspicion *suspicion_of(const struct rd_swim *s, uint32_t i)
{
    return &s->susp[s->members[i].suspicion - 1].sp;
}

/*
 * The timer heaps hold only the members that have a deadline, and grow as they need. Room
 * is taken before a change, where a failure can still refuse it whole: room in the
 * tombstone heap (and for the slots due at once) for every tombstone, every suspect and
 * `extra` more, since a suspect dies at its deadline where nothing may fail. 0 or RD_ENOMEM.
 */
static int reserve_timers(struct rd_swim *s, size_t extra)
{
    size_t n = rd_deadlines_len(&s->tombstones) + s->nsusp + extra;
    if (rd_deadlines_reserve(&s->tombstones, n) < 0) return RD_ENOMEM;
    if (s->due_cap >= n) return 0;
    uint32_t *due = realloc(s->due, s->tombstones.heap_cap * sizeof *due);
    if (!due) return RD_ENOMEM;
    s->due = due;
    s->due_cap = s->tombstones.heap_cap;
    return 0;
}

/* Room for one more suspicion, in the suspicion heap, and for its death (reserve_timers):
 * taken before a member turns suspect, so that nothing fails halfway. 0 or RD_ENOMEM. */
static int reserve_suspicion(struct rd_swim *s)
{
    if (rd_deadlines_reserve(&s->suspicions, s->nsusp + 1) < 0 || reserve_timers(s, 1) < 0)
        return RD_ENOMEM;
    if (s->nsusp < s->susp_cap) return 0;
    size_t cap = s->susp_cap ? s->susp_cap * 2 : 8;
    struct susp *sp = realloc(s->susp, cap * sizeof *sp);
    if (!sp) return RD_ENOMEM;
    s->susp = sp;
    s->susp_cap = cap;
    return 0;
}

/* Member i is no longer suspect: its suspicion goes, the last one moving into its place. */
static void end_suspicion(struct rd_swim *s, uint32_t i)
{
    uint32_t k = s->members[i].suspicion;
    if (k == 0) return;
    s->members[i].suspicion = 0;
    rd_strpool_release(s->strings, s->susp[k - 1].accuser);
    size_t last = --s->nsusp;
    if (k - 1 != last) {
        s->susp[k - 1] = s->susp[last];
        s->members[s->susp[k - 1].slot].suspicion = k;
    }
}

/*
 * Keeps member i's deadlines in step with its status: a suspicion's is set where it starts
 * (start_suspicion) and dropped when it ends; a tombstone is forgotten tombstone_ms after
 * it became one. Our own record is never suspected here nor forgotten.
 */
static void follow_status(struct rd_swim *s, uint32_t i)
{
    uint8_t status = s->members[i].status;
    if (status != RD_SUSPECT) rd_deadlines_remove(&s->suspicions, i);
    if (in_ring(status) || i == 0)
        rd_deadlines_remove(&s->tombstones, i);
    else
        rd_deadlines_set(&s->tombstones, i, s->members[i].changed_ms + s->cfg.tombstone_ms);
}

static void set_status(struct rd_swim *s, uint32_t i, uint8_t status, uint64_t now_ms)
{
    bool changed = s->members[i].status != status;
    if (changed) s->members[i].changed_ms = now_ms;
    tally(s, i, -1);
    s->members[i].status = status;
    tally(s, i, 1);
    if (changed) follow_status(s, i);
    if (status != RD_SUSPECT) end_suspicion(s, i);
    touched(s, i);
}

/* Names `accuser` as suspect i's; out of memory, the record keeps the one it had. */
static void set_accuser(struct rd_swim *s, uint32_t i, const char *accuser)
{
    (void)set_str(s, &s->susp[s->members[i].suspicion - 1].accuser, accuser);
}

/* Starts (or starts again) member i's suspicion; reserve_suspicion() made the room. */
static void start_suspicion(struct rd_swim *s, uint32_t i, const char *accuser, uint64_t now_ms)
{
    if (s->members[i].suspicion == 0) {
        s->susp[s->nsusp] = (struct susp){.slot = i};
        s->members[i].suspicion = (uint32_t)++s->nsusp;
    }
    struct rd_suspicion *sp = suspicion_of(s, i);
    rd_suspicion_start(sp, &s->suspicion_cfg, live_count(s), accuser, now_ms);
    rd_deadlines_set(&s->suspicions, i, sp->deadline_ms);
    set_accuser(s, i, accuser);
}

static void confirm_suspicion(struct rd_swim *s, uint32_t i, const char *accuser)
{
    struct rd_suspicion *sp = suspicion_of(s, i);
    if (!rd_suspicion_confirm(sp, &s->suspicion_cfg, live_count(s), accuser)) return;
    rd_deadlines_set(&s->suspicions, i, sp->deadline_ms);
    set_accuser(s, i, accuser);
    broadcast(s, i); /* let others count this confirmation too */
}

/*
 * Takes what `r` says of member i: address, incarnation, weight, zone and tags; not its
 * status nor its accuser, which set_status and start_suspicion keep. The new strings are
 * taken before the old ones go. 0, or RD_ENOMEM with nothing changed.
 */
static int store_record(struct rd_swim *s, uint32_t i, const struct rd_member *r)
{
    struct rec *m = &s->members[i];
    uint32_t zone = rd_strpool_intern(s->strings, r->zone, strlen(r->zone));
    uint32_t tags = rd_strpool_intern(s->strings, r->tags, strlen(r->tags));
    if (zone == RD_STRPOOL_NONE || tags == RD_STRPOOL_NONE) {
        if (zone != RD_STRPOOL_NONE) rd_strpool_release(s->strings, zone);
        if (tags != RD_STRPOOL_NONE) rd_strpool_release(s->strings, tags);
        return RD_ENOMEM;
    }
    rd_strpool_release(s->strings, m->zone);
    rd_strpool_release(s->strings, m->tags);
    m->zone = zone;
    m->tags = tags;
    m->addr = r->addr;
    m->incarnation = r->incarnation;
    m->weight = r->weight;
    touched(s, i);
    return 0;
}

static void probe_order_insert(struct rd_swim *s, uint32_t i)
{
    /* a newcomer goes to a random place in the rest of this round */
    size_t lo = s->probe_pos, n = s->probe_len - lo;
    size_t at = lo + (n ? rd_rand_below(&s->rng, (uint32_t)n + 1) : 0);
    memmove(&s->probe_order[at + 1], &s->probe_order[at], (s->probe_len - at) * sizeof(uint32_t));
    s->probe_order[at] = i;
    s->probe_len++;
}

/* A new member from record r, in r's status; a suspect's suspicion is the caller's to start. */
static int add_member(struct rd_swim *s, const struct rd_member *r, uint64_t now_ms)
{
    int rc = grow_table(s);
    if (rc < 0) return rc;
    uint32_t name = rd_strpool_intern(s->strings, r->name, strlen(r->name));
    if (name == RD_STRPOOL_NONE) return RD_ENOMEM;
    uint32_t i = (uint32_t)s->count;
    s->members[i] = (struct rec){.name = name, .changed_ms = now_ms, .status = r->status};
    if (store_record(s, i, r) < 0) {
        rd_strpool_release(s->strings, name);
        return RD_ENOMEM;
    }
    s->count++;
    bool found;
    s->index[index_slot(s, r->name, &found)] = i + 1;
    tally(s, i, 1);
    follow_status(s, i);
    probe_order_insert(s, i);
    return (int)i;
}

/* Member `from` moved into slot `to` (empty in every set): its place in them follows. */
static void move_slot(struct rd_swim *s, uint32_t from, uint32_t to)
{
    rd_txqueue_move(&s->txq, from, to);
    rd_deadlines_move(&s->suspicions, from, to);
    rd_deadlines_move(&s->tombstones, from, to);
    bool dead = rd_slotrank_has(&s->dead, from);
    rd_slotrank_put(&s->dead, from, false);
    rd_slotrank_put(&s->dead, to, dead);
    if (s->members[to].suspicion) s->susp[s->members[to].suspicion - 1].slot = to;
}

/*
 * Drops entry i (a reaped tombstone), moving the last entry into its slot. The timer sets
 * follow in O(log N); the probe list is searched and closed up, one memmove-sized pass per
 * member forgotten, as one opened it when the member was added.
 */
static void remove_member(struct rd_swim *s, uint32_t i)
{
    tally(s, i, -1);
    rd_txqueue_remove(&s->txq, i);
    rd_deadlines_remove(&s->suspicions, i);
    rd_deadlines_remove(&s->tombstones, i);
    end_suspicion(s, i);
    index_remove(s, name_of(s, i));
    const struct rec *m = &s->members[i];
    uint32_t strings[] = {m->name, m->zone, m->tags};
    for (size_t k = 0; k < sizeof strings / sizeof strings[0]; k++)
        rd_strpool_release(s->strings, strings[k]);
    for (size_t k = 0; k < s->probe_len; k++)
        if (s->probe_order[k] == i) {
            memmove(&s->probe_order[k], &s->probe_order[k + 1],
                    (s->probe_len - k - 1) * sizeof(uint32_t));
            s->probe_len--;
            if (s->probe_pos > k) s->probe_pos--;
            break;
        }
    uint32_t last = (uint32_t)--s->count;
    if (i != last) {
        s->members[i] = s->members[last];
        bool found;
        s->index[index_slot(s, name_of(s, i), &found)] = i + 1;
        move_slot(s, last, i);
        for (size_t k = 0; k < s->probe_len; k++)
            if (s->probe_order[k] == last) s->probe_order[k] = i;
    }
}

/* The storm score's window (suspicion.h): long enough to span a suspicion's minimum
 * timeout at N = 10,000 in the LAN profile (8 s), short enough that a storm's stretch ends
 * soon after it. */
#define STORM_WINDOW_PERIODS 10

/* The most a member's incarnation rises between two records of it that we take for a
 * refutation: each refutation raises it by one. A restart starts from the wall clock in
 * ms, thousands above its last life's, and is no sign of a storm. */
#define STORM_REFUTATION_STEP_MAX 64

static uint64_t storm_window_ms(const struct rd_swim *s)
{
    return (uint64_t)STORM_WINDOW_PERIODS * s->cfg.probe_interval_ms;
}

static uint32_t storm_score(const struct rd_swim *s, uint64_t now_ms)
{
    return rd_storm_score(&s->storm, now_ms, storm_window_ms(s), s->cfg.awareness_max);
}

/* Our own record is contradicted: outrank it and tell everyone. */
static void refute(struct rd_swim *s, uint64_t accused_incarnation, uint64_t now_ms)
{
    struct rec *me = &s->members[0];
    uint64_t inc = accused_incarnation >= me->incarnation ? accused_incarnation : me->incarnation;
    me->incarnation = inc_sat(inc);
    set_status(s, 0, s->leaving ? RD_LEFT : RD_ALIVE, now_ms);
    broadcast_n(s, 0, 2);
    s->stats.refutes++;
    rd_health_refuted(&s->health, s->cfg.awareness_max);
}

/*
 * A namesake alive at another address: the younger of the two must go. An incarnation
 * below our first one was taken before we started, so the namesake is older, or it is
 * only our own previous life at an old address: ask it by name, since only a live
 * namesake answers. A younger one is told at once, with our record on board.
 */
static void merge_namesake(struct rd_swim *s, const struct rd_member *r, uint64_t now_ms)
{
    if (s->established) {
        /* the cluster knows us under this name: whoever else claims it is the one in the
         * wrong (or a forger), and a datagram must not be able to stop us */
        s->stats.namesakes_ignored++;
        push_conflict(s, 0, r, now_ms);
        return;
    }
    if (r->incarnation >= s->start_incarnation) {
        push_conflict(s, 0, r, now_ms);
        struct rd_msg notice = {0};
        send_msg_ex(s, &r->addr, r->name, &notice, true);
        return;
    }
    if (s->conflict_probe_seq != 0) return; /* already asking */
    s->conflict_probe_seq = next_seq(s);
    s->conflict_probe_deadline_ms = now_ms + s->cfg.probe_timeout_ms * 2;
    s->conflict_candidate = *r;
    struct rd_msg ping = make_msg(s, RD_MSG_PING, s->conflict_probe_seq);
    snprintf(ping.target, sizeof ping.target, "%s", name_of(s, 0));
    send_msg(s, &r->addr, r->name, &ping);
}

/*
 * News about us. From another address and alive, it is a namesake's. Otherwise, if it
 * outranks what we say (someone suspects us, or remembers a later life of our name),
 * only we may answer it, with a higher incarnation. Our table never takes it.
 */
static void merge_about_self(struct rd_swim *s, const struct rd_member *r, uint64_t now_ms)
{
    const struct rec *me = &s->members[0];
    if (!plausible(me->incarnation, r->incarnation)) {
        s->stats.incarnations_refused++;
        return;
    }
    bool here = rd_addr_equal(&r->addr, &me->addr);
    if (here && in_ring(r->status) && r->incarnation >= s->start_incarnation) s->established = true;
    if (!here && in_ring(r->status)) {
        merge_namesake(s, r, now_ms);
        return;
    }
    if (r->incarnation > me->incarnation ||
        (r->incarnation == me->incarnation && r->status > me->status)) {
        refute(s, r->incarnation, now_ms);
        /* wrongly suspected or declared dead: a sign of a storm, as another's refutation */
        if (r->status == RD_SUSPECT || r->status == RD_DEAD)
            rd_storm_refuted(&s->storm, name_of(s, 0), now_ms, storm_window_ms(s));
    }
}

/*
 * Applies one record of news. `second_hand` is true for full-state syncs, where a death is
 * only believed as a suspicion. Returns true if our table changed.
 */
static bool merge(struct rd_swim *s, const struct rd_member *r, uint64_t now_ms, bool second_hand,
                  const char *via)
{
    int idx = find_entry(s, r->name);
    if (idx == 0) {
        merge_about_self(s, r, now_ms);
        return false;
    }
    struct rd_member rec = *r;
    if (second_hand && rec.status == RD_DEAD) {
        rec.status = RD_SUSPECT;
        snprintf(rec.accuser, sizeof rec.accuser, "%s", via);
    }
    if (rec.status == RD_SUSPECT ? reserve_suspicion(s) < 0
                                 : !in_ring(rec.status) && reserve_timers(s, 1) < 0)
        return false;
    if (idx < 0) {
        /* A stranger has no history of its own to bound its incarnation, so the table's is
         * used: incarnations start from start times, and no honest member can be that far
         * ahead of every other. Without it, a first record at 2^64-1 would sit above
         * anything the member can ever say. Only an agent alone, whose own clock may be
         * the one that is wrong, takes the first news as it comes. */
        if (s->count > 1 && !plausible(s->incarnation_high, rec.incarnation)) {
            s->stats.incarnations_refused++;
            return false;
        }
        /* keep a tombstone too, so a late rumour cannot resurrect it */
        int n = add_member(s, &rec, now_ms);
        if (n == RD_E2BIG) s->stats.members_refused_full++;
        if (n < 0) return false;
        if (rec.status == RD_SUSPECT) start_suspicion(s, (uint32_t)n, rec.accuser, now_ms);
        if (in_ring(rec.status)) {
            push_event(s, (uint32_t)n, RD_ALIVE, true);
            broadcast(s, (uint32_t)n);
            gossip_soon(s);
        }
        return true;
    }
    uint32_t i = (uint32_t)idx;
    const struct rec *cur = &s->members[i];
    uint8_t old = cur->status;
    if (!plausible(cur->incarnation, rec.incarnation)) {
        s->stats.incarnations_refused++;
        return false;
    }
    if (!rd_addr_equal(&rec.addr, &cur->addr)) {
        /* a name from a new address: only once its old owner is gone for reclaim_ms */
        if (in_ring(old)) {
            if (rec.incarnation > cur->incarnation && in_ring(rec.status))
                push_conflict(s, i, &rec, now_ms);
            return false;
        }
        if (now_ms - s->members[i].changed_ms < s->cfg.reclaim_ms) return false;
    }
    bool newer = rec.incarnation > cur->incarnation;
    bool same = rec.incarnation == cur->incarnation;
    if (same && rec.status == RD_SUSPECT && old == RD_SUSPECT) {
        confirm_suspicion(s, i, rec.accuser);
        return false;
    }
    /* alive wins only when strictly newer; suspect/dead/left also at equal incarnation
     * if they rank higher (alive < suspect < dead < left) */
    if (!(newer || (same && rec.status > old))) return false;
    bool differs = record_differs(s, &rec, i);
    bool refuted = (old == RD_SUSPECT || old == RD_DEAD) && rec.status == RD_ALIVE &&
                   rec.incarnation - cur->incarnation <= STORM_REFUTATION_STEP_MAX;
    tally(s, i, -1);
    int stored = store_record(s, i, &rec); /* set_status records the transition */
    tally(s, i, 1);
    if (stored < 0) return false;
    set_status(s, i, rec.status, now_ms);
    if (rec.status == RD_SUSPECT) start_suspicion(s, i, rec.accuser, now_ms);
    if (refuted) rd_storm_refuted(&s->storm, name_of(s, i), now_ms, storm_window_ms(s));
    if (old != rec.status)
        push_event(s, i, old, false);
    else if (differs)
        push_update(s, i);
    broadcast_n(s, i, rec.status == RD_ALIVE && old != RD_ALIVE ? 2 : 1);
    if (in_ring(old) != in_ring(rec.status) || (rec.status == RD_ALIVE && old != RD_ALIVE))
        gossip_soon(s);
    return true;
}

static void merge_all(struct rd_swim *s, const struct rd_packet *pkt, uint64_t now_ms,
                      bool second_hand)
{
    for (size_t k = 0; k < pkt->nmembers; k++)
        if (rd_member_valid(&pkt->members[k]))
            merge(s, &pkt->members[k], now_ms, second_hand, pkt->from);
}

/* ---------------------------------------------------------------- probing */

/* Sequence numbers start at random in each life and skip 0 (no probe), so that an ACK
 * recorded in an earlier life, or earlier in this one, echoes no seq we are waiting for. */
static uint32_t next_seq(struct rd_swim *s)
{
    if (++s->seq == 0) s->seq = 1;
    return s->seq;
}

static uint64_t scaled(const struct rd_swim *s, uint32_t ms)
{
    return rd_health_scale(&s->health, ms);
}

/* Next member to probe: round-robin over a shuffled list, reshuffled every round. The
 * reshuffle is O(N) once per N probes: O(1) per probe. */
static int pick_probe_target(struct rd_swim *s)
{
    for (int pass = 0; pass < 2; pass++) {
        while (s->probe_pos < s->probe_len) {
            uint32_t i = s->probe_order[s->probe_pos++];
            if (i != 0 && i < s->count && in_ring(s->members[i].status)) return (int)i;
        }
        /* new round: everyone but us, Fisher-Yates shuffled */
        s->probe_len = 0;
        for (uint32_t i = 1; i < s->count; i++)
            s->probe_order[s->probe_len++] = i;
        for (size_t k = s->probe_len; k > 1; k--) {
            size_t j = rd_rand_below(&s->rng, (uint32_t)k);
            uint32_t t = s->probe_order[k - 1];
            s->probe_order[k - 1] = s->probe_order[j];
            s->probe_order[j] = t;
        }
        s->probe_pos = 0;
    }
    return -1;
}

/* Up to `want` distinct random live members other than us and `except`. */
static size_t random_members(struct rd_swim *s, uint32_t *out, size_t want, int except)
{
    size_t n = 0;
    if (s->count <= 1) return 0;
    /* bounded random tries, then give up: cheap and good enough for small fan-outs */
    for (size_t tries = 0; tries < 4 * want + 8 && n < want; tries++) {
        uint32_t i = 1 + rd_rand_below(&s->rng, (uint32_t)s->count - 1);
        if ((int)i == except || !in_ring(s->members[i].status)) continue;
        bool dup = false;
        for (size_t k = 0; k < n; k++)
            dup |= out[k] == i;
        if (!dup) out[n++] = i;
    }
    return n;
}

static struct rd_msg make_msg(struct rd_swim *s, uint8_t type, uint32_t seq)
{
    struct rd_msg m = {.type = type, .seq = seq};
    if (type == RD_MSG_PING || type == RD_MSG_ACK) m.checksum = rd_swim_checksum(s);
    return m;
}

static void start_probe(struct rd_swim *s, uint64_t now_ms)
{
    int t = pick_probe_target(s);
    s->next_probe_ms = now_ms + scaled(s, s->cfg.probe_interval_ms);
    if (t < 0) return;
    struct probe *p = &s->probe;
    *p = (struct probe){.active = true, .seq = next_seq(s)};
    snprintf(p->target, sizeof p->target, "%s", name_of(s, t));
    p->target_addr = s->members[t].addr;
    uint64_t timeout = scaled(s, s->cfg.probe_timeout_ms);
    p->timeout_ms = now_ms + timeout;
    p->period_end_ms = s->next_probe_ms;
    p->resends_left = s->cfg.probe_resends;
    p->resend_step_ms = timeout / (s->cfg.probe_resends + 1u);
    p->resend_ms = now_ms + p->resend_step_ms;
    struct rd_msg m = make_msg(s, RD_MSG_PING, p->seq);
    snprintf(m.target, sizeof m.target, "%s", p->target);
    send_msg(s, &s->members[t].addr, p->target, &m);
    s->stats.probes++;
}

/* A direct ping unanswered for a fraction of the probe timeout is sent again, same seq: on
 * a lossy path each resend halves, or better, the chance that the probe reaches its
 * helpers at all, and so the rate of false suspicions. Nothing is judged here. */
static void probe_resend(struct rd_swim *s, uint64_t now_ms)
{
    struct probe *p = &s->probe;
    p->resends_left--;
    p->resend_ms = now_ms + p->resend_step_ms;
    int t = find_entry(s, p->target);
    if (t < 0) return;
    struct rd_msg m = make_msg(s, RD_MSG_PING, p->seq);
    snprintf(m.target, sizeof m.target, "%s", p->target);
    send_msg(s, &s->members[t].addr, p->target, &m);
    s->stats.probe_resends++;
}

static bool resend_due(const struct probe *p)
{
    return p->active && !p->indirect_sent && p->resends_left > 0;
}

static void probe_indirect(struct rd_swim *s, uint64_t now_ms)
{
    struct probe *p = &s->probe;
    int t = find_entry(s, p->target);
    p->indirect_sent = true;
    if (t < 0) return;
    uint32_t helpers[HELPERS_MAX];
    size_t k = s->cfg.indirect_checks < HELPERS_MAX ? s->cfg.indirect_checks : HELPERS_MAX;
    size_t n = random_members(s, helpers, k, t);
    for (size_t h = 0; h < n; h++) {
        struct rd_msg m = make_msg(s, RD_MSG_PING_REQ, p->seq);
        snprintf(m.target, sizeof m.target, "%s", p->target);
        m.target_addr = s->members[t].addr;
        send_msg(s, &s->members[helpers[h]].addr, name_of(s, helpers[h]), &m);
        snprintf(p->helpers[h], sizeof p->helpers[h], "%s", name_of(s, helpers[h]));
        p->helper_addrs[h] = s->members[helpers[h]].addr;
    }
    p->nacks_expected = (uint32_t)n;
    s->stats.indirect_probes += n;
    /* and once more directly: a lost ping or ack then fails the probe only if the retry
     * and every indirect path are lost too */
    struct rd_msg again = make_msg(s, RD_MSG_PING, p->seq);
    snprintf(again.target, sizeof again.target, "%s", p->target);
    send_msg(s, &s->members[t].addr, p->target, &again);
}

static void probe_failed(struct rd_swim *s, uint64_t now_ms)
{
    struct probe *p = &s->probe;
    p->active = false;
    s->stats.probes_failed++;
    /* a helper whose host refused a datagram of ours is gone, not late: its missing NACK
     * says nothing about us (with every helper gone, the probe counts as one without) */
    uint32_t asked = (UINT32_C(1) << p->nacks_expected) - 1, alive = asked & ~p->helpers_gone;
    rd_health_probe_failed(&s->health, (uint32_t)__builtin_popcount(alive),
                           (uint32_t)__builtin_popcount(p->nacked_by & alive),
                           s->cfg.awareness_max);
    int t = find_entry(s, p->target);
    if (t <= 0) return;
    const struct rec *m = &s->members[t];
    if (m->status == RD_ALIVE) {
        if (reserve_suspicion(s) < 0) return;
        uint8_t old = m->status;
        set_status(s, (uint32_t)t, RD_SUSPECT, now_ms);
        start_suspicion(s, (uint32_t)t, name_of(s, 0), now_ms);
        push_event(s, (uint32_t)t, old, false);
        broadcast(s, (uint32_t)t);
    } else if (m->status == RD_SUSPECT) {
        confirm_suspicion(s, (uint32_t)t, name_of(s, 0));
    }
}

/* Every path to the probe's target was refused: ours, and each helper's that was asked (a
 * helper's plain NACK or silence leaves the probe to its period). With no helper to ask,
 * our own refusal is the only path. */
static bool all_paths_refused(const struct rd_swim *s)
{
    const struct probe *p = &s->probe;
    if (!p->active || !p->refused || !p->indirect_sent) return false;
    uint32_t all = (UINT32_C(1) << p->nacks_expected) - 1; /* nacks_expected <= HELPERS_MAX */
    return (p->refused_by & all) == all;
}

/* Fails the probe if every path was refused. Each helper then saw for itself that nothing
 * listens at the target's address: an independent accuser, as Lifeguard counts them, so
 * the suspicion starts at its shortest timeout where a silence would wait for others to
 * probe and confirm. */
static void fail_if_refused(struct rd_swim *s, uint64_t now_ms)
{
    struct probe *p = &s->probe;
    if (!s->cfg.act_on_refusals || !all_paths_refused(s)) return;
    s->stats.probes_refused++;
    probe_failed(s, now_ms);
    int t = find_entry(s, p->target);
    if (t <= 0 || s->members[t].status != RD_SUSPECT) return;
    for (uint32_t h = 0; h < p->nacks_expected; h++)
        confirm_suspicion(s, (uint32_t)t, p->helpers[h]);
}

static void probe_acked(struct rd_swim *s)
{
    s->probe.active = false;
    s->stats.probes_acked++;
    rd_health_probe_acked(&s->health);
}

/* ---------------------------------------------------------------- invariants */

/*
 * rd_swim_check() verifies everything in one pass. Builds with RD_SWIM_CHECKS run the
 * same checks after every call that changes the state, split by cost: the ones over the
 * whole state that need no hashing (the queue's lists, the tallies) in full every time,
 * and the per-slot ones (a member found by name, its checksum share rehashed, an index
 * slot, a queue slot) for a window that moves on at each call, so that every slot is
 * verified at least once every count/CHECK_WINDOW calls. That keeps a checked simulation of
 * 1,000 members within about twice the time of an unchecked one.
 */
#define CHECK_WINDOW 4

static int fail(const char **why, const char *reason)
{
    *why = reason;
    return RD_ECORRUPT;
}

/* Counts per status and live count against the table. */
static int check_tallies(const struct rd_swim *s, const char **why)
{
    size_t nstatus[4] = {0}, nlive = 0;
    for (size_t i = 0; i < s->count; i++) {
        uint8_t status = s->members[i].status;
        if (status > RD_LEFT) return fail(why, "table: a member with no valid status");
        nstatus[status]++;
        nlive += in_ring(status);
    }
    if (memcmp(nstatus, s->nstatus, sizeof nstatus) != 0)
        return fail(why, "tally: the counts per status are not the table's");
    if (nlive != s->nlive) return fail(why, "tally: the live count is not the table's");
    return 0;
}

/* The running checksum against the table's records, rehashed. */
static int check_checksum(const struct rd_swim *s, const char **why)
{
    uint64_t checksum = 0;
    for (size_t i = 0; i < s->count; i++)
        if (in_ring(s->members[i].status)) checksum += member_hash(s, i);
    if (checksum != s->checksum) return fail(why, "tally: the checksum is not the table's");
    return 0;
}

/* The timer sets hold as many members as there are suspects, tombstones (but us) and dead
 * members: with each member checked to be in its sets, they hold those and nothing else. */
static int check_timer_sizes(const struct rd_swim *s, const char **why)
{
    size_t tombstones = s->nstatus[RD_DEAD] + s->nstatus[RD_LEFT] - !in_ring(s->members[0].status);
    if (rd_deadlines_len(&s->suspicions) != s->nstatus[RD_SUSPECT])
        return fail(why, "timers: the suspicion heap does not hold exactly the suspects");
    if (rd_deadlines_len(&s->tombstones) != tombstones)
        return fail(why, "timers: the tombstone heap does not hold exactly the tombstones");
    if (rd_slotrank_count(&s->dead) != s->nstatus[RD_DEAD])
        return fail(why, "timers: the dead set does not hold exactly the dead");
    if (s->nsusp != s->nstatus[RD_SUSPECT])
        return fail(why, "timers: the suspicions are not as many as the suspects");
    if (s->tombstones.heap_cap < tombstones + s->nsusp || s->due_cap < tombstones + s->nsusp ||
        s->suspicions.heap_cap < s->nsusp)
        return fail(why, "timers: no room reserved for a suspect's death");
    return 0;
}

/* Member i is in the timer sets its status puts it in, at the deadlines it has. */
static int check_member_timers(const struct rd_swim *s, size_t i, const char **why)
{
    const struct rec *m = &s->members[i], *e = m;
    uint32_t slot = (uint32_t)i;
    bool tombstone = i != 0 && !in_ring(m->status);
    if ((m->suspicion != 0) != (m->status == RD_SUSPECT) ||
        (m->suspicion && (m->suspicion > s->nsusp || s->susp[m->suspicion - 1].slot != slot)))
        return fail(why, "timers: a suspect without its own suspicion, or another member with one");
    if (rd_deadlines_has(&s->suspicions, slot) != (m->status == RD_SUSPECT) ||
        (m->status == RD_SUSPECT &&
         rd_deadlines_at(&s->suspicions, slot) != suspicion_of(s, slot)->deadline_ms))
        return fail(why,
                    "timers: a suspect not in the heap at its deadline, or another member in it");
    if (rd_deadlines_has(&s->tombstones, slot) != tombstone ||
        (tombstone && rd_deadlines_at(&s->tombstones, slot) != e->changed_ms + s->cfg.tombstone_ms))
        return fail(why,
                    "timers: a tombstone not in the heap at its expiry, or another member in it");
    if (rd_slotrank_has(&s->dead, slot) != (m->status == RD_DEAD))
        return fail(why, "timers: the dead set does not follow a member's status");
    return 0;
}

/* The checks over the whole state: the table's bounds, the queue's lists, the tallies. */
static int check_whole(const struct rd_swim *s, const char **why)
{
    if (s->count == 0 || s->count > s->cap) return fail(why, "table: count out of range");
    struct rd_member self;
    get_record(s, 0, &self);
    if (strcmp(self.name, s->self.name) != 0 || strcmp(self.zone, s->self.zone) != 0 ||
        strcmp(self.tags, s->self.tags) != 0 || self.incarnation != s->self.incarnation ||
        self.status != s->self.status || self.weight != s->self.weight ||
        !rd_addr_equal(&self.addr, &s->self.addr))
        return fail(why, "table: the copy of our own record is not the table's");
    if (rd_txqueue_check_lists(&s->txq, s->count, why) < 0) return RD_ECORRUPT;
    if (check_tallies(s, why) < 0) return RD_ECORRUPT;
    return check_timer_sizes(s, why);
}

/* Member i is found by its name at slot i. */
static int check_member(const struct rd_swim *s, size_t i, const char **why)
{
    if (find_entry(s, name_of(s, i)) != (int)i)
        return fail(why, "name index: a member is not found at its slot");
    return check_member_timers(s, i, why);
}

/* Index slot k is empty, or names a member that a lookup finds there: with every member
 * found at its own slot, the index then holds each member exactly once and nothing else. */
static int check_index_slot(const struct rd_swim *s, size_t k, const char **why)
{
    uint32_t v = s->index[k];
    if (v == 0) return 0;
    if (v > s->count) return fail(why, "name index: an entry beyond the table");
    bool found;
    if (index_slot(s, name_of(s, v - 1), &found) != k)
        return fail(why, "name index: an entry that a lookup of its name does not reach");
    return 0;
}

/* How many slots of a kind there are. */
static size_t check_slots(const struct rd_swim *s, enum check_kind kind)
{
    switch (kind) {
    case CHECK_MEMBER:
        return s->count;
    case CHECK_INDEX:
        return s->index_cap;
    case CHECK_QUEUE:
        return s->txq.cap;
    case CHECK_SUSPICION:
        return rd_deadlines_len(&s->suspicions);
    default:
        return rd_deadlines_len(&s->tombstones);
    }
}

static int check_slot(const struct rd_swim *s, enum check_kind kind, size_t k, const char **why)
{
    switch (kind) {
    case CHECK_MEMBER:
        return check_member(s, k, why);
    case CHECK_INDEX:
        return check_index_slot(s, k, why);
    case CHECK_QUEUE:
        return rd_txqueue_check_slot(&s->txq, s->count, (uint32_t)k, why);
    case CHECK_SUSPICION:
        return rd_deadlines_check_entry(&s->suspicions, k, why);
    default:
        return rd_deadlines_check_entry(&s->tombstones, k, why);
    }
}

int rd_swim_check(const struct rd_swim *s, const char **why)
{
    if (check_whole(s, why) < 0 || check_checksum(s, why) < 0) return RD_ECORRUPT;
    for (int kind = 0; kind < CHECK_KINDS; kind++)
        for (size_t k = 0; k < check_slots(s, kind); k++)
            if (check_slot(s, kind, k, why) < 0) return RD_ECORRUPT;
    return 0;
}

#ifdef RD_SWIM_CHECKS
/* The checks of one call: the whole-state ones, and the next window of each kind of slot,
 * sized so that all kinds come round in the same number of calls. */
static int check_step(struct rd_swim *s, const char **why)
{
    if (check_whole(s, why) < 0) return RD_ECORRUPT;
    for (int kind = 0; kind < CHECK_KINDS; kind++) {
        size_t n = check_slots(s, kind), *next = &s->check_next[kind];
        size_t window = (n * CHECK_WINDOW + s->count - 1) / s->count;
        for (size_t k = 0; k < window && k < n; k++) {
            *next = *next + 1 < n ? *next + 1 : 0;
            if (check_slot(s, kind, *next, why) < 0) return RD_ECORRUPT;
            /* the checksum, a rehash of the whole table, once per round of the members */
            if (kind == CHECK_MEMBER && *next == 0 && check_checksum(s, why) < 0)
                return RD_ECORRUPT;
        }
    }
    return 0;
}

/* The first broken invariant stops the process at the call that broke it (or, for the
 * per-slot checks, within count/CHECK_WINDOW calls), not as a wrong answer much later. */
static void check_invariants(struct rd_swim *s, const char *after)
{
    const char *why = NULL;
    if (check_step(s, &why) == 0) return;
    fprintf(stderr, "%s: membership invariant broken after %s: %s\n", name_of(s, 0), after, why);
    abort();
}
#else
static void check_invariants(struct rd_swim *s, const char *after)
{
    (void)s, (void)after;
}
#endif

/* ---------------------------------------------------------------- receiving */

static void maybe_sync_on_mismatch(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *from,
                                   uint64_t theirs)
{
    if (!s->heard || theirs == rd_swim_checksum(s)) return;
    uint64_t gap = (uint64_t)MISMATCH_SYNC_PERIODS * s->cfg.probe_interval_ms;
    if (s->last_mismatch_sync_ms && now_ms - s->last_mismatch_sync_ms < gap) return;
    s->last_mismatch_sync_ms = now_ms;
    queue_sync(s, from);
}

/*
 * The sender is a member of our table, in any status, at the address the datagram came
 * from. One we hold dead is known too: answering it in full (its PING, its PING_REQ) is how
 * a member falsely declared dead hears of it and refutes, and its address is one the
 * cluster already sends to, not a victim an attacker picked.
 */
static bool known_member(const struct rd_swim *s, const char *from_name, const struct rd_addr *from)
{
    int i = find_entry(s, from_name);
    return i > 0 && rd_addr_equal(&s->members[i].addr, from);
}

/*
 * A stranger (not a member of our table at its own address) gets an answer no larger than
 * its PING (`asked` bytes), so the agent cannot amplify traffic towards a forged source
 * address. Bare, the ACK names only us and echoes the seq, while the PING named us as its
 * target and also carried a sender name and a checksum; news rides along only within the
 * bytes the PING took beyond the worst-case header and message. A real member the receiver
 * does not hold alive yet (a joiner, one held dead) thus still hears news and our checksum.
 */
static void answer_ping(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *from,
                        const char *from_name, bool known, size_t asked, const struct rd_msg *m)
{
    if (known) {
        struct rd_msg ack = make_msg(s, RD_MSG_ACK, m->seq);
        send_msg(s, from, from_name, &ack);
        maybe_sync_on_mismatch(s, now_ms, from, m->checksum);
        return;
    }
    struct rd_msg ack = {.type = RD_MSG_ACK, .seq = m->seq};
    /* Our checksum lets a sender we have not heard of yet (one that joined through another
     * member) see that our views differ and sync with us over TCP. It goes only where their
     * PING carried a checksum at least as wide as ours can be (9 bytes from 2^32 up), so the
     * answer stays no larger. */
    if (m->checksum > UINT32_MAX) ack.checksum = rd_swim_checksum(s);
    size_t before = s->out_len;
    send_msg(s, from, NULL, &ack);
    if (s->out_len != before)
        s->outq[(s->out_head + s->out_len - 1) % OUT_QUEUE_MAX].cap = asked ? asked : 1;
    s->stats.replies_trimmed++;
    /* It may be a member that joined or came back before we heard: compare notes over TCP,
     * which no forged source address can answer (at most one SYN per probe interval). */
    maybe_sync_on_mismatch(s, now_ms, from, m->checksum);
}

/* Which of the helpers this probe asked to ping its target for us `name` is; -1: none. */
static int helper_index(const struct probe *p, const char *name)
{
    for (uint32_t h = 0; h < p->nacks_expected; h++)
        if (strcmp(p->helpers[h], name) == 0) return (int)h;
    return -1;
}

/* `known`: the sender was a member of our table at this address before its packet was merged (the
 * records a packet carries cannot vouch for its own sender). */
static void handle_msg(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *from,
                       const char *from_name, bool known, size_t asked, const struct rd_msg *m)
{
    switch (m->type) {
    case RD_MSG_PING:
        if (strcmp(m->target, name_of(s, 0)) != 0)
            return; /* meant for whoever had this address before */
        answer_ping(s, now_ms, from, from_name, known, asked, m);
        break;
    case RD_MSG_ACK:
        if (s->conflict_probe_seq && m->seq == s->conflict_probe_seq &&
            strcmp(from_name, name_of(s, 0)) == 0) {
            s->conflict = true; /* our name answered from another address */
            s->conflict_with = s->conflict_candidate;
            s->conflict_probe_seq = 0;
            return;
        }
        if (s->probe.active && m->seq == s->probe.seq &&
            (strcmp(from_name, s->probe.target) == 0 || helper_index(&s->probe, from_name) >= 0)) {
            probe_acked(s);
            if (m->checksum != 0) /* 0: a bare ACK, which carries no checksum */
                maybe_sync_on_mismatch(s, now_ms, from, m->checksum);
            return;
        }
        for (size_t k = 0; k < s->nrelays; k++) {
            struct relay *r = &s->relays[k];
            if (r->our_seq != m->seq || strcmp(from_name, r->target) != 0) continue;
            struct rd_msg fwd = make_msg(s, RD_MSG_ACK, r->their_seq);
            send_msg(s, &r->requester, NULL, &fwd);
            s->relays[k] = s->relays[--s->nrelays];
            return;
        }
        break;
    case RD_MSG_NACK: {
        int h = s->probe.active && m->seq == s->probe.seq ? helper_index(&s->probe, from_name) : -1;
        if (h < 0) break;
        s->probe.nacked_by |= UINT32_C(1) << h;
        if (m->flags & RD_NACK_REFUSED) {
            s->probe.refused_by |= UINT32_C(1) << h;
            fail_if_refused(s, now_ms);
        }
        break;
    }
    case RD_MSG_PING_REQ: {
        if (!known) {
            s->stats.ping_reqs_refused++; /* probing on behalf of strangers is a reflector */
            return;
        }
        if (s->nrelays == RELAYS_MAX || m->target_addr.family == 0) return;
        struct relay *r = &s->relays[s->nrelays++];
        *r = (struct relay){.our_seq = next_seq(s),
                            .their_seq = m->seq,
                            .requester = *from,
                            .deadline_ms = now_ms + s->cfg.probe_timeout_ms * RELAY_NACK_PCT / 100};
        snprintf(r->target, sizeof r->target, "%s", m->target);
        r->target_addr = m->target_addr;
        struct rd_msg ping = make_msg(s, RD_MSG_PING, r->our_seq);
        snprintf(ping.target, sizeof ping.target, "%s", m->target);
        send_msg(s, &m->target_addr, m->target, &ping);
        break;
    }
    default:
        break; /* SYNC travels over streams, not datagrams */
    }
}

static void recv_packet(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *from,
                        const struct rd_packet *pkt)
{
    s->stats.packets_in++;
    if (strcmp(pkt->from, name_of(s, 0)) == 0) {
        /* our own name from elsewhere: a namesake. Its news would be about itself under
         * our name, so only its conflict probe (answered, so that it learns it must stop)
         * and its answer to ours matter. */
        for (size_t k = 0; k < pkt->nmsgs && k < RD_PACKET_MAX_MSGS; k++) {
            const struct rd_msg *m = &pkt->msgs[k];
            if (m->type == RD_MSG_PING ||
                (m->type == RD_MSG_ACK && s->conflict_probe_seq && m->seq == s->conflict_probe_seq))
                handle_msg(s, now_ms, from, pkt->from, false, pkt->wire_len, m);
        }
        return;
    }
    s->heard = true; /* a datagram proves nothing about joining: anyone can send one */
    int sender = find_entry(s, pkt->from);
    bool known = known_member(s, pkt->from, from);
    if (sender > 0 && !in_ring(s->members[sender].status)) {
        /* From a member we hold dead (or left): a datagram proves only that it can send.
         * A host that cannot hear suspects everyone; believing it would make the healthy
         * members flap. Take only what it says about itself (a refutation); a full sync,
         * which needs both directions, is how it rejoins. */
        for (size_t k = 0; k < pkt->nmembers; k++)
            if (strcmp(pkt->members[k].name, pkt->from) == 0 && rd_member_valid(&pkt->members[k]))
                merge(s, &pkt->members[k], now_ms, false, pkt->from);
    } else {
        merge_all(s, pkt, now_ms, false);
    }
    for (size_t k = 0; k < pkt->nmsgs && k < RD_PACKET_MAX_MSGS; k++)
        handle_msg(s, now_ms, from, pkt->from, known, pkt->wire_len, &pkt->msgs[k]);
}

void rd_swim_recv(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *from,
                  const struct rd_packet *pkt)
{
    recv_packet(s, now_ms, from, pkt);
    check_invariants(s, "rd_swim_recv");
}

void rd_swim_refused(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *to)
{
    if (!s->cfg.act_on_refusals) return;
    for (size_t k = 0; k < s->nrelays;) {
        struct relay *r = &s->relays[k];
        if (!rd_addr_equal(&r->target_addr, to)) {
            k++;
            continue;
        }
        struct rd_msg nack = make_msg(s, RD_MSG_NACK, r->their_seq);
        nack.flags = RD_NACK_REFUSED;
        send_msg(s, &r->requester, NULL, &nack);
        *r = s->relays[--s->nrelays];
    }
    struct probe *p = &s->probe;
    for (uint32_t h = 0; p->active && h < p->nacks_expected; h++) {
        uint32_t bit = UINT32_C(1) << h;
        if (!rd_addr_equal(&p->helper_addrs[h], to) || (p->helpers_gone & bit)) continue;
        p->helpers_gone |= bit;
        s->stats.helpers_refused++;
    }
    if (p->active && rd_addr_equal(&p->target_addr, to)) {
        p->refused = true;
        if (!p->indirect_sent) probe_indirect(s, now_ms);
        fail_if_refused(s, now_ms);
    }
    check_invariants(s, "rd_swim_refused");
}

/* ---------------------------------------------------------------- timers */

static void run_relays(struct rd_swim *s, uint64_t now_ms)
{
    for (size_t k = 0; k < s->nrelays;) {
        struct relay *r = &s->relays[k];
        if (now_ms < r->deadline_ms) {
            k++;
            continue;
        }
        struct rd_msg nack = make_msg(s, RD_MSG_NACK, r->their_seq);
        send_msg(s, &r->requester, NULL, &nack);
        *r = s->relays[--s->nrelays];
    }
}

/* Adds `n` to the timer work counter. rd_swim_next_tick() counts too, through a const
 * pointer: the counter is no part of the state it reads, and every core is a heap object
 * from rd_swim_new(), never a const one, so the write is defined. */
static void count_timer_steps(const struct rd_swim *s, uint64_t n)
{
    ((struct rd_swim *)s)->stats.timer_steps += n;
}

static int compare_slots(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/*
 * Takes every slot of `d` whose deadline is at or before now_ms into s->due, in slot
 * order: the order a walk over the table would meet them whatever their deadlines, so
 * that events, news and the slots of reaped members come in one order. O(log N) each.
 */
static size_t take_due(struct rd_swim *s, struct rd_deadlines *d, uint64_t now_ms)
{
    size_t n = 0;
    for (uint32_t i; (i = rd_deadlines_pop_due(d, now_ms)) != RD_DEADLINES_NONE;)
        s->due[n++] = i;
    if (n > 1) qsort(s->due, n, sizeof *s->due, compare_slots);
    return n;
}

static void run_suspicions(struct rd_swim *s, uint64_t now_ms)
{
    size_t n = take_due(s, &s->suspicions, now_ms);
    uint32_t storm = n ? storm_score(s, now_ms) : 0;
    uint32_t stretch = s->health.score > storm ? s->health.score : storm;
    for (size_t k = 0; k < n; k++) {
        uint32_t i = s->due[k];
        struct rd_suspicion *sp = suspicion_of(s, i);
        if (rd_suspicion_extend(sp, &s->suspicion_cfg, live_count(s), stretch) &&
            sp->deadline_ms > now_ms) {
            rd_deadlines_set(&s->suspicions, i, sp->deadline_ms);
            continue;
        }
        set_status(s, i, RD_DEAD, now_ms);
        push_event(s, i, RD_SUSPECT, false);
        broadcast(s, i);
    }
}

static void run_gossip(struct rd_swim *s, uint64_t now_ms)
{
    s->next_gossip_ms = now_ms + s->cfg.gossip_interval_ms;
    s->last_gossip_ms = now_ms;
    if (rd_txqueue_pending(&s->txq) == 0) return;
    uint32_t to[16];
    size_t k = s->cfg.gossip_fanout < 16 ? s->cfg.gossip_fanout : 16;
    size_t n = random_members(s, to, k, -1);
    struct rd_msg none = {0};
    for (size_t h = 0; h < n; h++)
        send_msg(s, &s->members[to[h]].addr, name_of(s, to[h]), &none);
}

static void run_sync(struct rd_swim *s, uint64_t now_ms)
{
    /* anti-entropy: the period stretches with cluster size, as memberlist does */
    size_t n = live_count(s);
    uint64_t scale = 1;
    if (n > 32) scale = (uint64_t)ceil(log2((double)n) - 5.0) + 1;
    s->next_sync_ms = now_ms + s->cfg.sync_interval_ms * scale;
    uint32_t peer;
    if (random_members(s, &peer, 1, -1) == 1) queue_sync(s, &s->members[peer].addr);
}

static void run_join(struct rd_swim *s, uint64_t now_ms)
{
    if (s->joined || s->nseeds == 0) {
        s->join_next_ms = UINT64_MAX;
        return;
    }
    for (size_t k = 0; k < s->nseeds; k++)
        queue_sync(s, &s->seeds[k]);
    /* jittered (0.5x to 1.5x): joiners refused together by a busy seed come back apart */
    uint32_t b = s->join_backoff_ms;
    s->join_next_ms = now_ms + b / 2 + rd_rand_below(&s->rng, b + 1);
    s->join_backoff_ms = (uint32_t)min_u64(2ull * b, s->cfg.join_retry_max_ms);
}

/*
 * Now and then, try a dead member's address: if it is alive on the other side of a healed
 * partition, the sync merges both halves. And while we seem alone or in a minority of the
 * members we know, go back to the seeds.
 */
static void run_reconnect(struct rd_swim *s, uint64_t now_ms)
{
    /* jittered (0.5x to 1.5x) so that members do not all reach out in the same instant */
    uint32_t period = s->cfg.reconnect_interval_ms;
    s->next_reconnect_ms = now_ms + period / 2 + rd_rand_below(&s->rng, period + 1);
    size_t ndead = s->nstatus[RD_DEAD], known = s->count - s->nstatus[RD_LEFT], live = s->nlive;
    if (ndead > 0) {
        /* the k-th dead member in table order, as a walk over the table would find it */
        uint32_t i = rd_slotrank_select(&s->dead, rd_rand_below(&s->rng, (uint32_t)ndead));
        queue_sync(s, &s->members[i].addr);
    }
    if (s->nseeds > 0 && (live <= 1 || 2 * live < known))
        for (size_t k = 0; k < s->nseeds; k++)
            queue_sync(s, &s->seeds[k]);
}

/*
 * Forgets tombstones past their time, lowest slot first. Each removal moves the last
 * entry into the hole; when that entry was due too, it is the highest due slot, and goes
 * next from its new slot, as a walk over the table would have met it there.
 */
static void run_reaper(struct rd_swim *s, uint64_t now_ms)
{
    size_t lo = 0, hi = take_due(s, &s->tombstones, now_ms);
    while (lo < hi) {
        uint32_t i = s->due[lo], last = (uint32_t)s->count - 1;
        remove_member(s, i);
        if (i != last && s->due[hi - 1] == last)
            hi--; /* slot i holds the due entry from the end now */
        else
            lo++;
    }
}

/* The timers that judge a silence: a relay's nack, a suspect's death, a probe's timeout
 * and failure. */
static void run_verdicts(struct rd_swim *s, uint64_t now_ms)
{
    run_relays(s, now_ms);
    run_suspicions(s, now_ms);
    struct probe *p = &s->probe;
    if (p->active && !p->indirect_sent && now_ms >= p->timeout_ms) probe_indirect(s, now_ms);
    if (p->active && now_ms >= p->period_end_ms) probe_failed(s, now_ms);
}

static void run_timers(struct rd_swim *s, uint64_t now_ms, bool verdicts)
{
    if (s->conflict_probe_seq && now_ms >= s->conflict_probe_deadline_ms)
        s->conflict_probe_seq = 0; /* silence: a previous life of ours, not a namesake */
    if (verdicts) run_verdicts(s, now_ms);
    struct probe *p = &s->probe;
    if (resend_due(p) && now_ms >= p->resend_ms && now_ms < p->timeout_ms) probe_resend(s, now_ms);
    if (!s->leaving && now_ms >= s->next_probe_ms && !p->active) start_probe(s, now_ms);
    if (now_ms >= s->next_gossip_ms) run_gossip(s, now_ms);
    if (!s->leaving && now_ms >= s->next_sync_ms) run_sync(s, now_ms);
    if (now_ms >= s->join_next_ms) run_join(s, now_ms);
    if (now_ms >= rd_deadlines_first(&s->tombstones)) run_reaper(s, now_ms);
    if (!s->leaving && now_ms >= s->next_reconnect_ms) run_reconnect(s, now_ms);
}

/*
 * A tick that comes late (the caller's loop was blocked, or its process starved of CPU)
 * finds the answers that arrived in time still unread: an event loop runs its overdue
 * timers before it reads its sockets. Judged then, an answered probe would fail and a
 * refuted suspect would die. So a tick late by more than a tenth of the probe timeout
 * (LATE_TICK_DIV) runs everything but the verdicts, raises local health by the lag (the
 * members we probe are likely as late as we are), and asks to be woken again at once:
 * the caller reads its input first, and the next tick gives the verdicts on what was read.
 * Only one tick in a row is put off, so a member starved for good still judges, one
 * wake-up later.
 */
static bool tick_is_late(const struct rd_swim *s, uint64_t lag_ms)
{
    return lag_ms > s->cfg.probe_timeout_ms / LATE_TICK_DIV;
}

void rd_swim_tick_lagged(struct rd_swim *s, uint64_t now_ms, uint64_t lag_ms)
{
    bool late = tick_is_late(s, lag_ms);
    if (late) rd_health_lagged(&s->health, lag_ms, s->cfg.probe_timeout_ms, s->cfg.awareness_max);
    bool put_off = late && !s->verdicts_put_off;
    s->verdicts_put_off = put_off;
    s->verdicts_at_ms = now_ms + 1;
    if (put_off) s->stats.late_ticks++;
    run_timers(s, now_ms, !put_off);
    check_invariants(s, "rd_swim_tick");
}

void rd_swim_tick(struct rd_swim *s, uint64_t now_ms)
{
    rd_swim_tick_lagged(s, now_ms, 0);
}

uint64_t rd_swim_next_tick(const struct rd_swim *s)
{
    /* an idle agent wakes for its probes only: gossip rounds run while news is queued */
    uint64_t reap_ms = rd_deadlines_first(&s->tombstones);
    uint64_t t = rd_txqueue_pending(&s->txq) ? min_u64(s->next_gossip_ms, reap_ms) : reap_ms;
    t = min_u64(t, s->join_next_ms);
    if (!s->leaving) {
        t = min_u64(t, s->next_sync_ms);
        t = min_u64(t, s->next_reconnect_ms);
        t = min_u64(t, s->probe.active ? s->probe.period_end_ms : s->next_probe_ms);
    }
    if (s->probe.active && !s->probe.indirect_sent) t = min_u64(t, s->probe.timeout_ms);
    if (resend_due(&s->probe)) t = min_u64(t, s->probe.resend_ms);
    for (size_t k = 0; k < s->nrelays; k++)
        t = min_u64(t, s->relays[k].deadline_ms);
    if (s->conflict_probe_seq) t = min_u64(t, s->conflict_probe_deadline_ms);
    count_timer_steps(s, 2); /* the tops of the two deadline heaps */
    t = min_u64(t, rd_deadlines_first(&s->suspicions));
    /* verdicts put off by a late tick: the caller reads its input before it ticks again */
    if (s->verdicts_put_off && t < s->verdicts_at_ms) t = s->verdicts_at_ms;
    return t;
}

/* ---------------------------------------------------------------- caller's queues */

bool rd_swim_poll_send(struct rd_swim *s, uint64_t now_ms, struct rd_addr *to,
                       struct rd_packet *pkt)
{
    if (s->out_len == 0) return false;
    struct out *o = &s->outq[s->out_head];
    s->out_head = (s->out_head + 1) % OUT_QUEUE_MAX;
    s->out_len--;
    *to = o->to;
    memset(pkt, 0, sizeof *pkt);
    snprintf(pkt->from, sizeof pkt->from, "%s", name_of(s, 0));
    if (o->msg.type != 0) pkt->msgs[pkt->nmsgs++] = o->msg;
    piggyback(s, o->to_name, o->with_self, o->cap, pkt->nmsgs, pkt);
    s->stats.packets_out++;
    return true;
}

bool rd_swim_poll_sync(struct rd_swim *s, struct rd_addr *to)
{
    if (s->nsync == 0) return false;
    *to = s->syncq[0];
    memmove(&s->syncq[0], &s->syncq[1], --s->nsync * sizeof s->syncq[0]);
    s->stats.syncs_out++;
    return true;
}

bool rd_swim_poll_event(struct rd_swim *s, struct rd_swim_event *ev)
{
    if (s->ev_len == 0) return false;
    *ev = s->events[s->ev_head];
    s->ev_head = (s->ev_head + 1) % s->ev_cap;
    s->ev_len--;
    if (s->ev_len == 0 && s->ev_cap > EVENT_QUEUE_KEEP) {
        free(s->events);
        s->events = NULL;
        s->ev_cap = s->ev_head = 0;
    }
    return true;
}

/* ---------------------------------------------------------------- sync, join, leave */

struct rd_member *rd_swim_sync_state(struct rd_swim *s, uint8_t flags, struct rd_packet *pkt)
{
    memset(pkt, 0, sizeof *pkt);
    struct rd_member *all = malloc(s->count * sizeof *all);
    if (!all) return NULL;
    for (size_t i = 0; i < s->count; i++)
        get_record(s, i, &all[i]);
    snprintf(pkt->from, sizeof pkt->from, "%s", name_of(s, 0));
    struct rd_msg m = make_msg(s, RD_MSG_SYNC, 0);
    m.flags = flags;
    m.checksum = rd_swim_checksum(s);
    pkt->msgs[pkt->nmsgs++] = m;
    pkt->members = all;
    pkt->nmembers = s->count;
    return all;
}

bool rd_swim_sync_recv(struct rd_swim *s, uint64_t now_ms, const struct rd_packet *pkt)
{
    if (strcmp(pkt->from, name_of(s, 0)) == 0) return false;
    s->stats.syncs_in++;
    s->heard = true; /* joined only once our own exchange is answered: rd_swim_sync_done */
    uint64_t refutes = s->stats.refutes;
    merge_all(s, pkt, now_ms, true);
    check_invariants(s, "rd_swim_sync_recv");
    bool wants_reply = false;
    for (size_t k = 0; k < pkt->nmsgs; k++)
        if (pkt->msgs[k].type == RD_MSG_SYNC && (pkt->msgs[k].flags & RD_SYNC_REPLY))
            wants_reply = true;
    /* The peer's reply said we were suspect or dead (a healed partition): it has not seen
     * our refutation yet, so tell it now rather than at the next chance meeting. */
    int peer = find_entry(s, pkt->from);
    if (!wants_reply && s->stats.refutes != refutes && peer > 0 &&
        now_ms - s->last_followup_sync_ms >= s->cfg.probe_interval_ms) {
        s->last_followup_sync_ms = now_ms;
        queue_sync(s, &s->members[peer].addr);
    }
    return wants_reply;
}

void rd_swim_sync_failed(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *to)
{
    /* Only counted: join retries, periodic syncs and reconnects already try again, and a
     * failure says nothing a probe would not say better about the peer's health. */
    (void)now_ms, (void)to;
    s->stats.syncs_failed++;
}

void rd_swim_sync_done(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *to)
{
    (void)now_ms, (void)to;
    s->stats.syncs_done++;
    s->joined = true; /* run_join stops retrying the seeds at its next turn */
}

bool rd_swim_join(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *seeds, size_t n)
{
    for (size_t k = 0; k < n && s->nseeds < RD_SWIM_SEEDS_MAX; k++)
        if (!rd_addr_equal(&seeds[k], &s->members[0].addr)) s->seeds[s->nseeds++] = seeds[k];
    /* Each seed given gets its exchange now, stored or not, before the other seeds' retries:
     * once joined, one exchange merges whatever it knows (another cluster, a healed half),
     * and joined stays. */
    for (size_t k = 0; k < n; k++)
        queue_sync(s, &seeds[k]);
    if (!s->joined) {
        s->join_backoff_ms = JOIN_RETRY_FIRST_MS;
        run_join(s, now_ms);
    }
    bool all = true;
    for (size_t k = 0; k < n; k++) {
        bool queued = false;
        for (size_t i = 0; i < s->nsync && !queued; i++)
            queued = rd_addr_equal(&s->syncq[i], &seeds[k]);
        all = all && (queued || rd_addr_equal(&seeds[k], &s->members[0].addr));
    }
    return all;
}

bool rd_swim_joined(const struct rd_swim *s)
{
    return s->joined;
}

void rd_swim_leave(struct rd_swim *s, uint64_t now_ms)
{
    if (s->leaving) return;
    s->leaving = true;
    s->probe.active = false;
    s->members[0].incarnation = inc_sat(s->members[0].incarnation);
    set_status(s, 0, RD_LEFT, now_ms);
    push_event(s, 0, RD_ALIVE, false);
    broadcast(s, 0);
    /* do not wait for the next gossip round */
    s->next_gossip_ms = now_ms;
}

bool rd_swim_leave_done(const struct rd_swim *s)
{
    return s->leaving && (rd_txqueue_sends_left(&s->txq, 0) == 0 || live_count(s) == 0);
}

/* ---------------------------------------------------------------- run-time changes */

int rd_swim_update_self(struct rd_swim *s, uint64_t now_ms, uint32_t weight, const char *zone,
                        const char *tags)
{
    if (s->leaving) return RD_EREFUSED;
    struct rd_member next = s->self;
    if (strlen(zone) >= sizeof next.zone || strlen(tags) >= sizeof next.tags) return RD_EINVAL;
    next.weight = weight;
    strcpy(next.zone, zone);
    strcpy(next.tags, tags);
    if (!rd_member_valid(&next)) return RD_EINVAL;
    if (!record_differs(s, &next, 0)) return 0;
    next.incarnation = inc_sat(next.incarnation);
    tally(s, 0, -1);
    int stored = store_record(s, 0, &next);
    tally(s, 0, 1);
    if (stored < 0) return stored;
    push_update(s, 0);
    broadcast_n(s, 0, 2); /* as a refutation: every member must hear it */
    s->next_gossip_ms = now_ms;
    check_invariants(s, "update_self");
    return 0;
}

int rd_swim_force_leave(struct rd_swim *s, uint64_t now_ms, const char *name, bool prune)
{
    int idx = find_entry(s, name);
    if (idx < 0) return RD_ENOENT;
    if (idx == 0) return RD_EINVAL;
    uint32_t i = (uint32_t)idx;
    uint8_t old = s->members[i].status;
    if (old == RD_LEFT) return 0;
    if (in_ring(old) && !prune) return RD_EREFUSED;
    if (reserve_timers(s, 1) < 0) return RD_ENOMEM;
    set_status(s, i, RD_LEFT, now_ms);
    push_event(s, i, old, false);
    broadcast_n(s, i, 2);
    s->next_gossip_ms = now_ms;
    check_invariants(s, "force_leave");
    return 0;
}

/* ---------------------------------------------------------------- queries */

const struct rd_member *rd_swim_self(const struct rd_swim *s)
{
    return &s->self;
}

size_t rd_swim_member_count(const struct rd_swim *s)
{
    return s->count;
}

bool rd_swim_member(const struct rd_swim *s, size_t i, struct rd_member_view *out)
{
    if (i >= s->count) return false;
    const struct rec *m = &s->members[i];
    *out = (struct rd_member_view){.name = str(s, m->name),
                                   .zone = str(s, m->zone),
                                   .tags = str(s, m->tags),
                                   .addr = m->addr,
                                   .incarnation = m->incarnation,
                                   .weight = m->weight,
                                   .status = m->status};
    return true;
}

bool rd_swim_find(const struct rd_swim *s, const char *name, struct rd_member *out)
{
    int i = find_entry(s, name);
    if (i < 0) return false;
    if (out) get_record(s, (size_t)i, out);
    return true;
}

int rd_swim_status_of(const struct rd_swim *s, const char *name)
{
    int i = find_entry(s, name);
    return i < 0 ? -1 : s->members[i].status;
}

void rd_swim_counts(const struct rd_swim *s, size_t counts[4])
{
    memcpy(counts, s->nstatus, sizeof s->nstatus);
}

uint64_t rd_swim_checksum(const struct rd_swim *s)
{
    return s->checksum;
}

bool rd_swim_established(const struct rd_swim *s)
{
    return s->established;
}

const struct rd_member *rd_swim_conflict(const struct rd_swim *s)
{
    return s->conflict ? &s->conflict_with : NULL;
}

uint32_t rd_swim_health(const struct rd_swim *s)
{
    return s->health.score;
}

uint32_t rd_swim_storm(const struct rd_swim *s, uint64_t now_ms)
{
    return storm_score(s, now_ms);
}

const struct rd_swim_stats *rd_swim_stats(const struct rd_swim *s)
{
    return &s->stats;
}

/* ---------------------------------------------------------------- lifecycle */

struct rd_swim *rd_swim_new(const struct rd_swim_config *cfg, const struct rd_member *self,
                            uint64_t seed, uint64_t now_ms)
{
    return rd_swim_new_shared(cfg, self, seed, now_ms, NULL);
}

struct rd_swim *rd_swim_new_shared(const struct rd_swim_config *cfg, const struct rd_member *self,
                                   uint64_t seed, uint64_t now_ms, struct rd_strpool *strings)
{
    if (!rd_member_valid(self) || cfg->probe_interval_ms == 0 || cfg->gossip_interval_ms == 0)
        return NULL;
    struct rd_swim *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    s->cfg = *cfg;
    s->suspicion_cfg = (struct rd_suspicion_config){
        .probe_interval_ms = cfg->probe_interval_ms,
        .suspicion_mult = cfg->suspicion_mult,
        .suspicion_max_mult = cfg->suspicion_max_mult,
        .suspicion_confirmations = cfg->suspicion_confirmations,
    };
    rd_rand_seed(&s->rng, seed);
    s->cap = 8;
    s->index_cap = 32;
    s->strings = strings;
    if (!s->strings) {
        s->strings = rd_strpool_new();
        s->own_strings = true;
    }
    s->members = malloc(s->cap * sizeof *s->members);
    s->probe_order = malloc(s->cap * sizeof *s->probe_order);
    s->index = calloc(s->index_cap, sizeof *s->index);
    s->outq = malloc(OUT_QUEUE_MAX * sizeof *s->outq);
    s->scratch = malloc(RD_PACKET_MAX_MEMBERS * sizeof *s->scratch);
    if (!s->strings || !s->members || !s->probe_order || !s->index || !s->outq || !s->scratch ||
        rd_txqueue_init(&s->txq, s->cap) < 0 || rd_deadlines_init(&s->suspicions, 0) < 0 ||
        rd_deadlines_grow_slots(&s->suspicions, s->cap) < 0 ||
        rd_deadlines_init(&s->tombstones, 0) < 0 ||
        rd_deadlines_grow_slots(&s->tombstones, s->cap) < 0 ||
        rd_slotrank_init(&s->dead, s->cap) < 0) {
        rd_swim_delete(s);
        return NULL;
    }
    s->suspicions.steps = s->tombstones.steps = s->dead.steps = &s->stats.timer_steps;
    struct rd_member me = *self;
    me.status = RD_ALIVE;
    me.accuser[0] = '\0';
    if (add_member(s, &me, now_ms) < 0) {
        rd_swim_delete(s);
        return NULL;
    }
    s->probe_len = s->probe_pos = 0; /* we never probe ourselves */
    broadcast(s, 0);
    s->joined = false;
    s->heard = false;
    s->join_next_ms = UINT64_MAX;
    /* spread the first probe and sync so that agents started together do not beat in step */
    s->next_probe_ms = now_ms + rd_rand_below(&s->rng, cfg->probe_interval_ms);
    s->next_gossip_ms = now_ms + cfg->gossip_interval_ms;
    s->next_sync_ms =
        now_ms + cfg->sync_interval_ms / 2 + rd_rand_below(&s->rng, cfg->sync_interval_ms);
    s->next_reconnect_ms = now_ms + cfg->reconnect_interval_ms;
    s->start_incarnation = self->incarnation;
    s->seq = (uint32_t)rd_rand_next(&s->rng);
    return s;
}

void rd_swim_delete(struct rd_swim *s)
{
    if (!s) return;
    /* a shared pool outlives us: give back what the table holds */
    for (size_t i = 0; i < s->count && !s->own_strings; i++) {
        const struct rec *m = &s->members[i];
        uint32_t strings[] = {m->name, m->zone, m->tags};
        for (size_t k = 0; k < sizeof strings / sizeof strings[0]; k++)
            rd_strpool_release(s->strings, strings[k]);
    }
    if (s->own_strings) rd_strpool_delete(s->strings);
    free(s->members);
    for (size_t k = 0; k < s->nsusp && !s->own_strings; k++)
        rd_strpool_release(s->strings, s->susp[k].accuser);
    free(s->susp);
    free(s->probe_order);
    free(s->index);
    free(s->outq);
    free(s->events);
    free(s->scratch);
    rd_txqueue_free(&s->txq);
    rd_deadlines_free(&s->suspicions);
    rd_deadlines_free(&s->tombstones);
    rd_slotrank_free(&s->dead);
    free(s->due);
    free(s);
}

void rd_swim_set_seeds(struct rd_swim *s, uint64_t now_ms, const struct rd_addr *seeds, size_t n)
{
    struct rd_addr was[RD_SWIM_SEEDS_MAX];
    size_t nwas = s->nseeds;
    memcpy(was, s->seeds, nwas * sizeof was[0]);
    s->nseeds = 0;
    for (size_t k = 0; k < n && s->nseeds < RD_SWIM_SEEDS_MAX; k++) {
        bool dup = rd_addr_equal(&seeds[k], &s->members[0].addr);
        for (size_t i = 0; i < s->nseeds && !dup; i++)
            dup = rd_addr_equal(&s->seeds[i], &seeds[k]);
        if (dup) continue;
        s->seeds[s->nseeds++] = seeds[k];
        if (s->joined) continue;
        bool known = false;
        for (size_t i = 0; i < nwas && !known; i++)
            known = rd_addr_equal(&was[i], &seeds[k]);
        if (!known) queue_sync(s, &seeds[k]);
    }
    if (!s->joined && s->nseeds && s->join_next_ms == UINT64_MAX) {
        if (s->join_backoff_ms == 0) s->join_backoff_ms = JOIN_RETRY_FIRST_MS;
        s->join_next_ms = now_ms + s->join_backoff_ms;
    }
}
