/*
 * agent.c — the daemon's loop (see agent.h).
 *
 * Everything happens on one libuv loop, in one thread:
 *   UDP datagram ─ decode ─► rd_swim_recv ─┐
 *   tick timer ──────────► rd_swim_tick ───┼─► flush(): send packets, open syncs,
 *   TCP sync frame (sync.c) ─► sync_recv ──┘   log events, schedule ring rebuild, re-arm tick
 * A rebuild waits RD_REBUILD_COALESCE_MS after the first change so a burst of changes
 * (a join of many, a partition healing) costs one rebuild, and it is skipped when the
 * members that decide placement did not change (a suspect stays in the ring). While the
 * membership keeps changing, rebuilds average one per RD_REBUILD_GAP_MS after a burst of
 * RD_REBUILD_BURST (a rate limit by theoretical arrival time): a rebuild costs O(points),
 * and in a join storm on a shared host it was most of every agent's CPU, while a join of
 * a few members still settles its ring within a few hundred ms.
 * Full-state syncs use TCP on the same port as UDP; sync.c owns those connections and
 * calls back here after it changed the core, so the agent flushes.
 * The keyring lives in cfg.keyring, and sync.c holds a pointer to it: a KEYRING command or
 * a SIGHUP replaces it in place, between two callbacks, so the very next datagram or sync
 * frame, either way, is sealed and opened with the new keys (nothing keeps a key across
 * callbacks: a sync frame is sealed whole when it is queued and opened whole on arrival).
 */
#include "agent.h"

#include <inttypes.h>
#include <malloc.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>
#include <uv.h>

#include "envelope.h"
#include "log.h"
#include "query.h"
#include "rd_err.h"
#include "ring.h"
#include "swim.h"
#include "sync.h"
#include "wire.h"

/** Changes arriving within this window cost one ring rebuild. */
#define RD_REBUILD_COALESCE_MS 100
/** ... and under sustained change, rebuilds average one per this long, */
#define RD_REBUILD_GAP_MS 1000
/** ... after a burst of this many at the coalescing pace. */
#define RD_REBUILD_BURST 3
/** Free memory goes back to the kernel once no rebuild has happened for this long. */
#define RD_TRIM_QUIET_MS 5000
/** A full member table is logged at most this often. */
#define TABLE_FULL_LOG_MS 60000

struct rd_agent {
    struct rd_agent_config cfg;
    uv_loop_t *loop;
    struct rd_swim *swim;
    uv_udp_t udp;
    struct rd_sync *sync;
    uv_timer_t tick_timer, rebuild_timer, trim_timer, leave_timer;
    uv_signal_t sigterm, sigint, sighup;
    struct rd_query *query;
    struct rd_ring *ring;
    uint64_t ring_version;
    uint64_t rebuild_tat_ms; /* rate limit: the next rebuild's theoretical arrival time */
    bool rebuild_pending;
    bool leaving, left, was_joined;
    int exit_rc; /* what rd_agent_run returns once the loop stopped */
    uint64_t full_logged_ms, full_logged_count; /* last "member table full" line */
    uint64_t start_ms;
    struct rd_member *rx_members; /* decoder scratch for one datagram */
    uint64_t malformed_packets;
    size_t weight_capped;             /* ring members placed at --max-weight in the last rebuild */
    struct rd_envelope_drops dropped; /* datagrams refused by the envelope rule */
    char udp_buf[65536];
    char rx_plain[65536];            /* an opened datagram */
    char tx_plain[RD_PACKET_BUDGET]; /* an encoded packet, before sealing */
    char tx_buf[RD_DATAGRAM_MAX];    /* what goes on the wire */
};

static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

static uint64_t wall_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (uint64_t)tv.tv_sec * 1000u + (uint64_t)tv.tv_usec / 1000u;
}

static void flush(struct rd_agent *a);

/* ---------------------------------------------------------------- ring */

static void publish_ring(struct rd_agent *a, const struct rd_ring_diff *d)
{
    char version[24], checksum[24], points[24], moved[32];
    snprintf(version, sizeof version, "%" PRIu64, a->ring_version);
    snprintf(checksum, sizeof checksum, "%016" PRIx64, rd_ring_checksum(a->ring));
    snprintf(points, sizeof points, "%zu", rd_ring_point_count(a->ring));
    snprintf(moved, sizeof moved, "%.6f", d->moved);
    const char *fields[8 + 3 * 16];
    size_t n = 0;
    fields[n++] = "ring";
    fields[n++] = version;
    fields[n++] = checksum;
    fields[n++] = points;
    fields[n++] = moved;
    char shares[16][24];
    for (size_t k = 0; k < d->nmoves && k < 16; k++) {
        snprintf(shares[k], sizeof shares[k], "%.6f", d->moves[k].fraction);
        fields[n++] = d->moves[k].from;
        fields[n++] = d->moves[k].to;
        fields[n++] = shares[k];
    }
    if (a->query) rd_query_publish(a->query, fields, n);
}

static bool in_ring(uint8_t status)
{
    return status == RD_ALIVE || status == RD_SUSPECT;
}

static void rebuild_ring(struct rd_agent *a)
{
    size_t count = rd_swim_member_count(a->swim), n = 0;
    struct rd_ring_member *rm = malloc((count ? count : 1) * sizeof *rm);
    if (!rm) {
        rd_logf(RD_LOG_ERROR, "ring rebuild failed", RD_FSTR("error", "out of memory"));
        return;
    }
    size_t capped = 0;
    const char *heaviest = NULL;
    uint32_t heaviest_weight = 0;
    for (size_t i = 0; i < count; i++) {
        const struct rd_member *m = rd_swim_member(a->swim, i);
        if (!in_ring(m->status)) continue;
        uint32_t w = m->weight;
        if (w > a->cfg.max_weight) {
            capped++;
            if (w > heaviest_weight) heaviest = m->name, heaviest_weight = w;
            w = a->cfg.max_weight;
        }
        rm[n++] = (struct rd_ring_member){.name = m->name, .weight = w, .zone = m->zone};
    }
    if (capped > a->weight_capped)
        rd_logf(RD_LOG_WARN, "members above --max-weight placed at it", RD_FUINT("capped", capped),
                RD_FSTR("heaviest", heaviest),
                RD_FDBL("heaviest_weight", (double)heaviest_weight / RD_WEIGHT_ONE),
                RD_FDBL("max_weight", (double)a->cfg.max_weight / RD_WEIGHT_ONE));
    a->weight_capped = capped;
    struct rd_ring *ring;
    int rc = rd_ring_new(rm, n, a->cfg.vnodes, &ring);
    free(rm);
    if (rc < 0) {
        rd_logf(RD_LOG_ERROR, "ring rebuild failed", RD_FSTR("error", rd_strerror(rc)));
        return;
    }
    if (a->ring && rd_ring_checksum(ring) == rd_ring_checksum(a->ring) &&
        rd_ring_member_count(ring) == rd_ring_member_count(a->ring)) {
        rd_ring_delete(ring); /* same placement: nothing moved, keep the old snapshot */
        return;
    }
    struct rd_ring_diff d;
    if (rd_ring_diff(a->ring, ring, &d) < 0) d = (struct rd_ring_diff){.moved = -1};
    rd_ring_delete(a->ring);
    a->ring = ring;
    a->ring_version++;
    char top[2 * RD_NAME_MAX + 48] = "";
    if (d.nmoves > 0)
        snprintf(top, sizeof top, "%s->%s:%.4f", d.moves[0].from[0] ? d.moves[0].from : "none",
                 d.moves[0].to[0] ? d.moves[0].to : "none", d.moves[0].fraction);
    rd_logf(RD_LOG_INFO, "ring rebuilt", RD_FUINT("ring_version", a->ring_version),
            RD_FHEX("ring_checksum", rd_ring_checksum(ring)),
            RD_FUINT("ring_members", rd_ring_member_count(ring)),
            RD_FUINT("ring_points", rd_ring_point_count(ring)), RD_FDBL("moved", d.moved),
            RD_FUINT("moves", d.nmoves), RD_FSTR("largest_move", top));
    uint64_t budget, raw;
    if (rd_ring_scaled(ring, &budget, &raw))
        rd_logf(RD_LOG_WARN, "ring scaled to the point limit", RD_FUINT("raw_points", raw),
                RD_FUINT("budget", budget), RD_FDBL("factor", (double)budget / (double)raw),
                RD_FUINT("ring_points", rd_ring_point_count(ring)));
    publish_ring(a, &d);
    rd_ring_diff_destroy(&d);
}

/* A full member table refuses newcomers: say so, at most once a minute. */
static void log_table_full(struct rd_agent *a)
{
    uint64_t refused = rd_swim_stats(a->swim)->members_refused_full;
    if (refused == a->full_logged_count) return;
    uint64_t now = now_ms();
    if (a->full_logged_ms && now - a->full_logged_ms < TABLE_FULL_LOG_MS) return;
    rd_logf(RD_LOG_ERROR, "member table full: newcomers refused",
            RD_FUINT("members", rd_swim_member_count(a->swim)),
            RD_FUINT("members_refused_full", refused));
    a->full_logged_ms = now;
    a->full_logged_count = refused;
}

/*
 * The heap keeps what a membership change freed (the old ring snapshot, sync buffers) for
 * the next change, which then costs no page faults: in a join storm of 1000 agents on 2
 * cores, faulting in fresh memory for every rebuild and sync was a third of all CPU. Once
 * the membership is quiet, that memory goes back: an idle agent holds one ring, not two.
 */
static void on_trim_timer(uv_timer_t *t)
{
    malloc_trim(0);
}

static void on_rebuild_timer(uv_timer_t *t)
{
    struct rd_agent *a = t->data;
    a->rebuild_pending = false;
    uint64_t now = now_ms();
    a->rebuild_tat_ms = (a->rebuild_tat_ms > now ? a->rebuild_tat_ms : now) + RD_REBUILD_GAP_MS;
    rebuild_ring(a);
    uv_timer_start(&a->trim_timer, on_trim_timer, RD_TRIM_QUIET_MS, 0);
}

static void schedule_rebuild(struct rd_agent *a)
{
    if (a->rebuild_pending) return;
    a->rebuild_pending = true;
    uint64_t now = now_ms(), due = now + RD_REBUILD_COALESCE_MS;
    uint64_t earliest = a->rebuild_tat_ms - (uint64_t)RD_REBUILD_BURST * RD_REBUILD_GAP_MS;
    if (a->rebuild_tat_ms > (uint64_t)RD_REBUILD_BURST * RD_REBUILD_GAP_MS && due < earliest)
        due = earliest;
    uv_timer_start(&a->rebuild_timer, on_rebuild_timer, due - now, 0);
}

/* ---------------------------------------------------------------- events */

static void log_event(struct rd_agent *a, const struct rd_swim_event *ev)
{
    static const char *msgs[] = {"member alive", "member suspect", "member dead", "member left"};
    size_t counts[4];
    rd_swim_counts(a->swim, counts);
    char addr[RD_ADDR_STRLEN];
    rd_addr_format(&ev->member.addr, addr, sizeof addr);
    const struct rd_member *m = &ev->member;
    enum rd_log_level level = m->status == RD_DEAD ? RD_LOG_WARN : RD_LOG_INFO;
    struct rd_log_field f[] = {
        RD_FSTR("member", m->name),
        RD_FSTR("addr", addr),
        RD_FUINT("incarnation", m->incarnation),
        RD_FSTR("was", ev->is_new ? "new" : rd_status_name(ev->old_status)),
        RD_FUINT("members_alive", counts[RD_ALIVE]),
        RD_FUINT("members_suspect", counts[RD_SUSPECT]),
        RD_FUINT("members_dead", counts[RD_DEAD]),
        RD_FUINT("members_left", counts[RD_LEFT]),
        RD_FSTR("accuser", m->accuser), /* last: only suspicions name one */
    };
    rd_log(level, msgs[m->status & 3], f, sizeof f / sizeof f[0] - (m->accuser[0] ? 0 : 1));
    char inc[24];
    snprintf(inc, sizeof inc, "%" PRIu64, m->incarnation);
    const char *fields[] = {"member", m->name, rd_status_name(m->status), addr, inc};
    if (a->query) rd_query_publish(a->query, fields, 5);
}

/* ---------------------------------------------------------------- UDP and timers */

static void on_tick(uv_timer_t *t)
{
    struct rd_agent *a = t->data;
    rd_swim_tick(a->swim, now_ms());
    flush(a);
}

static void finish_leave(struct rd_agent *a)
{
    if (a->left) return;
    a->left = true;
    rd_logf(RD_LOG_INFO, "agent stopped", RD_FSTR("member", a->cfg.name),
            RD_FSTR("reason", "left the cluster"));
    uv_stop(a->loop);
}

static void on_leave_timeout(uv_timer_t *t)
{
    struct rd_agent *a = t->data;
    rd_logf(RD_LOG_WARN, "leave not fully disseminated before the deadline",
            RD_FUINT("timeout_ms", RD_LEAVE_TIMEOUT_MS));
    finish_leave(a);
}

static void flush(struct rd_agent *a)
{
    uint64_t now = now_ms();
    struct rd_addr to;
    struct rd_packet pkt;
    while (rd_swim_poll_send(a->swim, now, &to, &pkt)) {
        size_t len;
        const struct rd_keyring *kr = &a->cfg.keyring;
        bool seal = kr->nkeys && a->cfg.gossip_verify_outgoing != RD_SWITCH_OFF;
        char *plain = seal ? a->tx_plain : a->tx_buf;
        if (rd_wire_encode(&pkt, plain, sizeof a->tx_plain, &len) < 0 ||
            (seal && rd_envelope_seal(kr->keys[0], a->cfg.cluster, plain, len, a->tx_buf,
                                      sizeof a->tx_buf, &len) < 0)) {
            rd_logf(RD_LOG_ERROR, "packet over budget dropped", RD_FUINT("members", pkt.nmembers));
            continue;
        }
        struct sockaddr_storage ss;
        rd_addr_to_sockaddr(&to, &ss);
        uv_buf_t b = uv_buf_init(a->tx_buf, (unsigned)len);
        uv_udp_try_send(&a->udp, &b, 1, (struct sockaddr *)&ss); /* a full buffer is loss */
    }
    while (rd_swim_poll_sync(a->swim, &to))
        rd_sync_connect(a->sync, &to);
    struct rd_swim_event ev;
    while (rd_swim_poll_event(a->swim, &ev)) {
        if (ev.conflict) {
            char mine[RD_ADDR_STRLEN], theirs[RD_ADDR_STRLEN];
            rd_logf(RD_LOG_ERROR, "name conflict", RD_FSTR("member", ev.member.name),
                    RD_FSTR("addr", rd_addr_format(&ev.member.addr, mine, sizeof mine)),
                    RD_FSTR("claimed_from", rd_addr_format(&ev.other_addr, theirs, sizeof theirs)),
                    RD_FSTR("action", ev.self ? "kept ours; the newer agent must stop"
                                              : "refused the newcomer"));
            continue;
        }
        log_event(a, &ev);
        if (in_ring(ev.member.status) != in_ring(ev.old_status) || ev.is_new) schedule_rebuild(a);
    }
    if (!a->was_joined && rd_swim_joined(a->swim)) {
        a->was_joined = true;
        size_t counts[4];
        rd_swim_counts(a->swim, counts);
        rd_logf(RD_LOG_INFO, "joined cluster", RD_FUINT("members_alive", counts[RD_ALIVE]));
    }
    log_table_full(a);
    const struct rd_member *namesake = rd_swim_conflict(a->swim);
    if (namesake && !a->left) {
        char theirs[RD_ADDR_STRLEN];
        rd_logf(RD_LOG_ERROR, "name already in use: stopping", RD_FSTR("member", namesake->name),
                RD_FSTR("other_addr", rd_addr_format(&namesake->addr, theirs, sizeof theirs)),
                RD_FSTR("hint", "give this agent another --name"));
        a->exit_rc = RD_EEXIST;
        a->left = true;
        uv_stop(a->loop);
        return;
    }
    if (a->leaving && rd_swim_leave_done(a->swim)) {
        finish_leave(a);
        return;
    }
    uint64_t next = rd_swim_next_tick(a->swim);
    now = now_ms();
    uv_timer_start(&a->tick_timer, on_tick, next > now ? next - now : 0, 0);
}

/* A sync merged a peer's state or failed: send what the core wants sent now. */
static void on_sync_changed(void *ctx)
{
    flush(ctx);
}

static void udp_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct rd_agent *a = h->data;
    *b = uv_buf_init(a->udp_buf, sizeof a->udp_buf);
}

static void udp_recv(uv_udp_t *u, ssize_t n, const uv_buf_t *b, const struct sockaddr *from,
                     unsigned flags)
{
    struct rd_agent *a = u->data;
    if (n <= 0 || !from) return;
    struct rd_packet pkt;
    const char *reason, *body = NULL;
    size_t len = 0;
    struct rd_addr src;
    const struct rd_keyring *kr = &a->cfg.keyring;
    enum rd_envelope_verdict v = RD_ENVELOPE_MALFORMED;
    if (!(flags & UV_UDP_PARTIAL))
        v = rd_envelope_accept(kr->keys, kr->nkeys, a->cfg.cluster,
                               a->cfg.gossip_verify_incoming != RD_SWITCH_OFF, b->base, (size_t)n,
                               a->rx_plain, sizeof a->rx_plain, &body, &len);
    if (rd_envelope_drop_count(&a->dropped, v)) return; /* sealed or plain against the rule */
    if (v == RD_ENVELOPE_MALFORMED || rd_addr_from_sockaddr(from, &src) < 0 ||
        rd_wire_decode(body, len, &pkt, a->rx_members, RD_PACKET_MAX_MEMBERS, &reason) < 0) {
        a->malformed_packets++; /* counted and dropped: the network is not trusted */
        return;
    }
    rd_swim_recv(a->swim, now_ms(), &src, &pkt);
    flush(a);
}

/* ---------------------------------------------------------------- keyring changes */

/* The fingerprints of kr, primary first, separated by commas, into out. */
static const char *fingerprints(const struct rd_keyring *kr, char *out, size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; i < kr->nkeys && n < cap; i++) {
        char fp[RD_KEY_FINGERPRINT_LEN + 1];
        rd_keyring_fingerprint(kr->keys[i], fp);
        n += (size_t)snprintf(out + n, cap - n, "%s%s", i ? "," : "", fp);
    }
    return out;
}

/* Keys of a that b lacks. */
static size_t keys_missing(const struct rd_keyring *a, const struct rd_keyring *b)
{
    size_t n = 0;
    for (size_t i = 0; i < a->nkeys; i++) {
        bool found = false;
        for (size_t j = 0; j < b->nkeys && !found; j++)
            found = sodium_memcmp(a->keys[i], b->keys[j], RD_ENVELOPE_KEY_LEN) == 0;
        n += !found;
    }
    return n;
}

/* SIGHUP's part for --keyring-file: the file's keys replace the ring in force if it loads;
 * if not, the ring in force stays and the reason is logged. */
static void reload_keyring(struct rd_agent *a)
{
    const char *path = a->cfg.keyring_path;
    struct rd_keyring *kr = &a->cfg.keyring;
    char err[512], list[RD_KEYRING_MAX * (RD_KEY_FINGERPRINT_LEN + 1) + 1];
    char fp[RD_KEY_FINGERPRINT_LEN + 1];
    if (!path[0]) {
        rd_logf(RD_LOG_INFO, "keyring: nothing to reload",
                RD_FSTR("reason", "no --keyring-file: gossip in the clear"));
        return;
    }
    struct rd_keyring next;
    if (rd_keyring_load(&next, path, err, sizeof err) < 0) {
        rd_keyring_fingerprint(kr->keys[0], fp);
        rd_logf(RD_LOG_ERROR, "keyring reload failed: the keys in force stay",
                RD_FSTR("file", path), RD_FSTR("error", err), RD_FUINT("keys", kr->nkeys),
                RD_FSTR("primary_key", fp));
        return;
    }
    size_t added = keys_missing(&next, kr), removed = keys_missing(kr, &next);
    *kr = next;
    sodium_memzero(&next, sizeof next);
    rd_keyring_fingerprint(kr->keys[0], fp);
    rd_logf(RD_LOG_INFO, "keyring reloaded", RD_FSTR("file", path), RD_FUINT("keys", kr->nkeys),
            RD_FSTR("primary_key", fp), RD_FUINT("added", added), RD_FUINT("removed", removed),
            RD_FSTR("fingerprints", fingerprints(kr, list, sizeof list)));
}

/*
 * A KEYRING change from the query socket. It is made on a copy, the copy is written to the
 * file, and only then does it replace the ring in force: a change that cannot be written
 * is not made, so the file and the agent never disagree. A file that no longer holds the
 * keys in force (edited by hand and not reloaded yet) is not overwritten: the client is
 * told to send SIGHUP first, so nobody's edit is lost silently.
 */
static int host_keyring_change(void *ctx, enum rd_query_key_op op, const char *arg,
                               const struct rd_query_peer *peer,
                               char fp[RD_KEY_FINGERPRINT_LEN + 1], char *err, size_t errlen)
{
    struct rd_agent *a = ctx;
    const char *path = a->cfg.keyring_path;
    if (!path[0]) {
        snprintf(err, errlen,
                 "this agent gossips in the clear and has no keyring to change: start it with "
                 "--keyring-file PATH (a mode 0600 file holding a key from `ringd keygen`)");
        return RD_EREFUSED;
    }
    struct rd_keyring next;
    char why[512];
    if (rd_keyring_load(&next, path, why, sizeof why) < 0) {
        snprintf(err, errlen, "keyring file not changed, it does not load: %s", why);
        return RD_EIO;
    }
    bool same = rd_keyring_equal(&next, &a->cfg.keyring);
    next = a->cfg.keyring;
    int rc = RD_EREFUSED;
    if (!same)
        snprintf(err, errlen,
                 "%s no longer holds the keys in force (edited by hand?): send the agent SIGHUP "
                 "to load it, then retry",
                 path);
    else if (op == RD_QUERY_KEY_INSTALL)
        rc = rd_keyring_install(&next, arg, fp, err, errlen);
    else if (op == RD_QUERY_KEY_USE)
        rc = rd_keyring_use(&next, arg, fp, err, errlen);
    else
        rc = rd_keyring_remove(&next, arg, fp, err, errlen);
    if (rc == 0 && !rd_keyring_equal(&next, &a->cfg.keyring)) {
        rc = rd_keyring_save(&next, path, why, sizeof why);
        if (rc < 0)
            snprintf(err, errlen, "%s", why);
        else if (why[0])
            rd_logf(RD_LOG_WARN, "keyring file", RD_FSTR("warning", why));
    }
    if (rc == 0 && !rd_keyring_equal(&next, &a->cfg.keyring)) {
        char was[RD_KEY_FINGERPRINT_LEN + 1], primary[RD_KEY_FINGERPRINT_LEN + 1];
        rd_keyring_fingerprint(a->cfg.keyring.keys[0], was);
        rd_keyring_fingerprint(next.keys[0], primary);
        static const char *const msgs[] = {"keyring key installed", "keyring primary key changed",
                                           "keyring key removed"};
        a->cfg.keyring = next;
        struct rd_log_field f[] = {
            RD_FSTR("key", fp),
            RD_FUINT("keys", next.nkeys),
            RD_FSTR("primary_key", primary),
            RD_FUINT("by_uid", peer->uid),
            RD_FUINT("by_pid", peer->pid),
            RD_FSTR("was_primary", was), /* last: only a new primary has one */
        };
        rd_log(RD_LOG_INFO, msgs[op], f, sizeof f / sizeof f[0] - (op == RD_QUERY_KEY_USE ? 0 : 1));
    }
    sodium_memzero(&next, sizeof next);
    return rc;
}

static size_t host_keyring_list(void *ctx, char fps[RD_KEYRING_MAX][RD_KEY_FINGERPRINT_LEN + 1])
{
    struct rd_agent *a = ctx;
    for (size_t i = 0; i < a->cfg.keyring.nkeys; i++)
        rd_keyring_fingerprint(a->cfg.keyring.keys[i], fps[i]);
    return a->cfg.keyring.nkeys;
}

/* ---------------------------------------------------------------- leave and signals */

static void agent_leave(struct rd_agent *a)
{
    if (a->leaving) return;
    a->leaving = true;
    size_t counts[4];
    rd_swim_counts(a->swim, counts);
    rd_logf(RD_LOG_INFO, "leaving cluster", RD_FSTR("member", a->cfg.name),
            RD_FUINT("members_alive", counts[RD_ALIVE]));
    rd_swim_leave(a->swim, now_ms());
    uv_timer_start(&a->leave_timer, on_leave_timeout, RD_LEAVE_TIMEOUT_MS, 0);
    flush(a);
}

/*
 * SIGHUP re-reads what may change while the agent runs, one part after the other; each
 * part logs its own outcome and keeps what is in force when its source is bad, so SIGHUP
 * never stops the agent. Today the one part is the keyring file; the rest of the
 * configuration would be further rows.
 */
static void (*const reloaders[])(struct rd_agent *a) = {reload_keyring};

static void on_sighup(uv_signal_t *s, int signum)
{
    for (size_t i = 0; i < sizeof reloaders / sizeof reloaders[0]; i++)
        reloaders[i](s->data);
}

static void on_signal(uv_signal_t *s, int signum)
{
    struct rd_agent *a = s->data;
    if (a->leaving) {
        rd_logf(RD_LOG_WARN, "second signal: exiting without waiting", RD_FINT("signal", signum));
        finish_leave(a);
        return;
    }
    agent_leave(a);
}

/* ---------------------------------------------------------------- the query server's host */

static const struct rd_ring *host_ring(void *ctx)
{
    struct rd_agent *a = ctx;
    return a->ring;
}

static const struct rd_swim *host_swim(void *ctx)
{
    struct rd_agent *a = ctx;
    return a->swim;
}

static void host_status(void *ctx, struct rd_query_status *out)
{
    struct rd_agent *a = ctx;
    struct rd_sync_stats ss;
    rd_sync_stats(a->sync, &ss);
    *out = (struct rd_query_status){
        .uptime_s = (now_ms() - a->start_ms) / 1000,
        .ring_version = a->ring_version,
        .vnodes = a->cfg.vnodes,
        .weight = a->cfg.weight,
        .max_weight = a->cfg.max_weight,
        .members_weight_capped = a->weight_capped,
        .packets_malformed = a->malformed_packets,
        .syncs_malformed = ss.malformed,
        .syncs_oversize = ss.oversize,
        .syncs_refused_source = ss.refused_source,
        .syncs_refused_full = ss.refused_full,
        .syncs_timed_out_header = ss.timed_out_header,
        .syncs_timed_out_frame = ss.timed_out_frame,
        .packets_dropped = a->dropped,
        .syncs_dropped = rd_sync_dropped(a->sync),
        .verify_incoming = a->cfg.keyring.nkeys && a->cfg.gossip_verify_incoming != RD_SWITCH_OFF,
        .verify_outgoing = a->cfg.keyring.nkeys && a->cfg.gossip_verify_outgoing != RD_SWITCH_OFF,
        .keyring_keys = a->cfg.keyring.nkeys,
    };
    if (a->cfg.keyring.nkeys) rd_keyring_fingerprint(a->cfg.keyring.keys[0], out->keyring_primary);
    snprintf(out->version, sizeof out->version, "%s", RINGD_VERSION);
    out->pid = (uint64_t)getpid();
    snprintf(out->config_file, sizeof out->config_file, "%s", a->cfg.config_path);
    snprintf(out->profile, sizeof out->profile, "%s", rd_swim_profile_name(a->cfg.profile));
}

static void host_join(void *ctx, const char *hostport, const struct rd_addr *seed)
{
    struct rd_agent *a = ctx;
    rd_logf(RD_LOG_INFO, "joining", RD_FSTR("seed", hostport));
    rd_sync_add_seed(a->sync, seed);
    rd_swim_join(a->swim, now_ms(), seed, 1);
    flush(a);
}

static void host_leave(void *ctx)
{
    agent_leave(ctx);
}

/* ---------------------------------------------------------------- start and stop */

/* An agent bound to 0.0.0.0 must still tell others a reachable address. 0, RD_EIO when
 * the interfaces cannot be listed, RD_ENOENT when none has a usable address. */
static int pick_advertise(struct rd_agent_config *cfg)
{
    if (!rd_addr_is_any(&cfg->advertise)) return 0;
    uv_interface_address_t *ifs;
    int n;
    if (uv_interface_addresses(&ifs, &n) < 0) return RD_EIO;
    int rc = RD_ENOENT;
    for (int pass = 0; pass < 2 && rc < 0; pass++)
        for (int i = 0; i < n && rc < 0; i++) {
            int fam = ifs[i].address.address4.sin_family;
            if (ifs[i].is_internal || (pass == 0 && fam != AF_INET) ||
                (cfg->bind.family == 4 && fam != AF_INET))
                continue;
            struct rd_addr ad;
            if (rd_addr_from_sockaddr((struct sockaddr *)&ifs[i].address, &ad) == 0) {
                ad.port = cfg->bind.port;
                cfg->advertise = ad;
                rc = 0;
            }
        }
    uv_free_interface_addresses(ifs, n);
    return rc;
}

static int open_udp(struct rd_agent *a, char *err, size_t errlen)
{
    struct sockaddr_storage ss;
    rd_addr_to_sockaddr(&a->cfg.bind, &ss);
    char addr[RD_ADDR_STRLEN];
    rd_addr_format(&a->cfg.bind, addr, sizeof addr);
    unsigned v6only = a->cfg.bind.family == 6 ? UV_UDP_IPV6ONLY : 0;
    int rc = uv_udp_init(a->loop, &a->udp);
    if (rc == 0) rc = uv_udp_bind(&a->udp, (struct sockaddr *)&ss, v6only);
    if (rc < 0) {
        snprintf(err, errlen, "cannot bind UDP %s: %s", addr, uv_strerror(rc));
        return RD_EIO;
    }
    a->udp.data = a;
    uv_udp_recv_start(&a->udp, udp_alloc, udp_recv);
    return 0;
}

/* The timing in force, once at start: what --profile chose, in numbers. */
static void log_profile(enum rd_swim_profile p, const struct rd_swim_config *sc)
{
    rd_logf(RD_LOG_INFO, "timing profile", RD_FSTR("profile", rd_swim_profile_name(p)),
            RD_FUINT("probe_interval_ms", sc->probe_interval_ms),
            RD_FUINT("probe_timeout_ms", sc->probe_timeout_ms),
            RD_FUINT("indirect_checks", sc->indirect_checks),
            RD_FUINT("gossip_interval_ms", sc->gossip_interval_ms),
            RD_FUINT("gossip_fanout", sc->gossip_fanout),
            RD_FUINT("retransmit_mult", sc->retransmit_mult),
            RD_FUINT("suspicion_mult", sc->suspicion_mult),
            RD_FUINT("suspicion_max_mult", sc->suspicion_max_mult),
            RD_FUINT("suspicion_confirmations", sc->suspicion_confirmations),
            RD_FUINT("sync_interval_ms", sc->sync_interval_ms));
}

/* Query clients hold one descriptor each: take all the kernel allows this process. */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == rl.rlim_max) return;
    uint64_t was = rl.rlim_cur;
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
        rd_logf(RD_LOG_WARN, "cannot raise the descriptor limit", RD_FUINT("limit", was));
}

static void close_walk(uv_handle_t *h, void *arg)
{
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

int rd_agent_run(const struct rd_agent_config *config)
{
    /* A reload request never stops the agent: ignored until on_sighup is in place, and
     * again once the loop closed it (libuv then restores the default, which kills). */
    signal(SIGHUP, SIG_IGN);
    struct rd_agent *a = calloc(1, sizeof *a);
    if (!a) return RD_ENOMEM;
    a->cfg = *config;
    rd_log_setup(stderr, a->cfg.log_format, a->cfg.log_level);
    raise_fd_limit();
    a->loop = uv_default_loop();
    a->start_ms = now_ms();
    char err[512];
    int rc = RD_ENOMEM;
    a->rx_members = malloc(RD_PACKET_MAX_MEMBERS * sizeof *a->rx_members);
    if (!a->rx_members) goto out;
    if ((rc = pick_advertise(&a->cfg)) < 0) {
        rd_logf(RD_LOG_ERROR, "cannot pick an address to advertise",
                RD_FSTR("hint", "use --advertise HOST:PORT"));
        goto out;
    }
    struct rd_member self = {
        .addr = a->cfg.advertise, .weight = a->cfg.weight, .incarnation = wall_ms()};
    snprintf(self.name, sizeof self.name, "%s", a->cfg.name);
    snprintf(self.zone, sizeof self.zone, "%s", a->cfg.zone);
    snprintf(self.tags, sizeof self.tags, "%s", a->cfg.tags);
    struct rd_swim_config sc;
    rd_swim_config_profile(&sc, a->cfg.profile);
    uint64_t seed = a->cfg.seed ? a->cfg.seed : wall_ms() ^ ((uint64_t)getpid() << 32);
    a->swim = rd_swim_new(&sc, &self, seed, now_ms());
    if (!a->swim || rd_ring_new(NULL, 0, a->cfg.vnodes, &a->ring) < 0) {
        rc = RD_ENOMEM;
        rd_logf(RD_LOG_ERROR, "cannot start", RD_FSTR("error", "out of memory"));
        goto out;
    }
    if ((rc = open_udp(a, err, sizeof err)) < 0 ||
        (rc = rd_sync_start(a->loop, a->swim, &a->cfg.bind, on_sync_changed, a, &a->sync, err,
                            sizeof err)) < 0) {
        rd_logf(RD_LOG_ERROR, "cannot start", RD_FSTR("error", err));
        goto out;
    }
    rd_sync_set_envelope(a->sync, &a->cfg.keyring, a->cfg.cluster);
    rd_sync_set_verify(a->sync, a->cfg.gossip_verify_incoming != RD_SWITCH_OFF,
                       a->cfg.gossip_verify_outgoing != RD_SWITCH_OFF);
    struct rd_query_host host = {.ctx = a,
                                 .ring = host_ring,
                                 .swim = host_swim,
                                 .status = host_status,
                                 .join = host_join,
                                 .leave = host_leave,
                                 .keyring_list = host_keyring_list,
                                 .keyring_change = host_keyring_change,
                                 .join_default_port = RD_DEFAULT_PORT};
    rc = rd_query_start(a->loop, &host, a->cfg.socket_path, a->cfg.socket_mode, a->cfg.admin_group,
                        &a->query, err, sizeof err);
    if (rc < 0) {
        rd_logf(RD_LOG_ERROR, "cannot start", RD_FSTR("error", err));
        goto out;
    }
    uv_timer_init(a->loop, &a->tick_timer);
    uv_timer_init(a->loop, &a->rebuild_timer);
    uv_timer_init(a->loop, &a->trim_timer);
    uv_timer_init(a->loop, &a->leave_timer);
    a->tick_timer.data = a->rebuild_timer.data = a->trim_timer.data = a->leave_timer.data = a;
    uv_unref((uv_handle_t *)&a->trim_timer); /* housekeeping never keeps the loop alive */
    uv_signal_init(a->loop, &a->sigterm);
    uv_signal_init(a->loop, &a->sigint);
    uv_signal_init(a->loop, &a->sighup);
    a->sigterm.data = a->sigint.data = a->sighup.data = a;
    uv_signal_start(&a->sigterm, on_signal, SIGTERM);
    uv_signal_start(&a->sigint, on_signal, SIGINT);
    uv_signal_start(&a->sighup, on_sighup, SIGHUP);
    signal(SIGPIPE, SIG_IGN);

    char addr[RD_ADDR_STRLEN], bind[RD_ADDR_STRLEN];
    rd_logf(RD_LOG_INFO, "agent started", RD_FSTR("member", self.name),
            RD_FSTR("bind", rd_addr_format(&a->cfg.bind, bind, sizeof bind)),
            RD_FSTR("advertise", rd_addr_format(&self.addr, addr, sizeof addr)),
            RD_FSTR("socket", a->cfg.socket_path), RD_FUINT("vnodes", a->cfg.vnodes),
            RD_FUINT("incarnation", self.incarnation), RD_FUINT("pid", (uint64_t)getpid()));
    char fp[RD_KEY_FINGERPRINT_LEN + 1] = "none";
    if (a->cfg.keyring.nkeys) rd_keyring_fingerprint(a->cfg.keyring.keys[0], fp);
    /* in the clear is worth a warning only where it was asked for: off loopback */
    rd_logf(a->cfg.insecure_gossip && !a->cfg.keyring.nkeys ? RD_LOG_WARN : RD_LOG_INFO,
            a->cfg.keyring.nkeys ? "gossip sealed" : "gossip in the clear",
            RD_FSTR("cluster", a->cfg.cluster), RD_FUINT("keys", a->cfg.keyring.nkeys),
            RD_FSTR("primary_key", fp));
    /* a keyed agent that lets plain gossip in can be fed forged members by anyone who
     * reaches its port: allowed, for turning encryption on, but said at every start */
    if (a->cfg.keyring.nkeys && a->cfg.gossip_verify_incoming == RD_SWITCH_OFF)
        rd_logf(
            RD_LOG_WARN, "gossip in the clear accepted",
            RD_FSTR("sends", a->cfg.gossip_verify_outgoing == RD_SWITCH_OFF ? "plain" : "sealed"),
            RD_FSTR("hint", "set --gossip-verify-incoming on once every agent seals"));
    log_profile(a->cfg.profile, &sc);
    rebuild_ring(a); /* the ring of one: ourselves */
    struct rd_addr seeds[RD_JOIN_MAX];
    size_t nseeds = 0;
    for (int i = 0; i < a->cfg.njoins; i++) {
        char why[128];
        struct rd_addr *to = &seeds[nseeds];
        if (rd_addr_resolve(a->cfg.joins[i], RD_DEFAULT_PORT, 0, to, why, sizeof why) < 0) {
            rd_logf(RD_LOG_WARN, "cannot resolve seed", RD_FSTR("seed", a->cfg.joins[i]),
                    RD_FSTR("error", why));
            continue;
        }
        rd_sync_add_seed(a->sync, to);
        nseeds++;
    }
    if (nseeds) rd_swim_join(a->swim, now_ms(), seeds, nseeds);
    flush(a);
    uv_run(a->loop, UV_RUN_DEFAULT);
    rc = a->left ? a->exit_rc : RD_EIO; /* the loop ran dry: nothing left to serve */
out:
    if (a->query) rd_query_close(a->query);
    rd_sync_close(a->sync);
    uv_walk(a->loop, close_walk, a);
    signal(SIGHUP, SIG_IGN); /* closing on_sighup's handle restored the default */
    uv_run(a->loop, UV_RUN_DEFAULT);
    uv_loop_close(a->loop);
    rd_swim_delete(a->swim);
    rd_ring_delete(a->ring);
    free(a->rx_members);
    free(a);
    return rc;
}
