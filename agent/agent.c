/*
 * agent.c — the daemon's loop (see agent.h).
 *
 * Everything happens on one libuv loop, in one thread, but ring builds:
 *   UDP datagram ─ decode ─► rd_swim_recv ─┐
 *   tick timer ──────────► rd_swim_tick ───┼─► flush(): send packets, open syncs,
 *   TCP sync frame (sync.c) ─► sync_recv ──┘   log events, schedule ring rebuild, re-arm tick
 * The tick tells the core how late it runs (rd_swim_tick_lagged), and the core then puts
 * its verdicts off until the datagrams that waited meanwhile are read. Late is the later of
 * two measures: the tick's own lateness against the time the core asked for, which the
 * datagrams read before an overdue tick do not reset (a loop starved of CPU in its poll
 * reads them first), and the longest stretch since the last tick that the loop spent busy,
 * not waiting for input (deafness.c).
 * A rebuild waits RD_REBUILD_COALESCE_MS after the first change so a burst of changes
 * (a join of many, a partition healing) costs one rebuild, and it is skipped when the
 * members that decide placement did not change (a suspect stays in the ring). While the
 * membership keeps changing, each rebuild is charged RD_REBUILD_COST_FACTOR times the CPU
 * time it took (at least RD_REBUILD_GAP_MS, at most RD_REBUILD_GAP_MAX_MS), and rebuilds
 * keep the coalescing pace only while the charges stay within RD_REBUILD_ALLOWANCE_MS
 * ahead of the clock (a rate limit by theoretical arrival time, pace.h): a rebuild costs
 * O(points), and in a join storm on a shared host it was most of every agent's CPU. CPU
 * time, not wall time: wall time also counts the other processes crowding the host, and
 * would hold back the ring of a hundred agents started together for rebuilds of a
 * millisecond or two; an allowance of charges, not of rebuilds, so that such a burst fits.
 * The build and its diff run on a builder thread, one at a time (ringjob.c), and the
 * loop adopts the ring when the job is done: on a host crowded with agents a build of
 * 40 ms of CPU took 5 s of wall time, and an agent that built on its loop (a joiner's first
 * ring above all) answered no probe for those seconds and was declared dead. A thread that
 * waits in the poll is woken soon when a datagram comes; one that computes waits its turn.
 * Full-state syncs use TCP on the same port as UDP; sync.c owns those connections and
 * calls back here after it changed the core, so the agent flushes.
 * Readiness: an agent told to join (needs_join) answers no placement until the core says
 * joined, i.e. a sync it opened was answered; sync.c reports each such exchange's outcome
 * (on_sync_result), which is also what a JOIN from the socket waits for, and why a join
 * attempt failed is logged from there. was_joined latches, so an agent once ready stays so.
 * The keyring lives in cfg.keyring, and sync.c holds a pointer to it: a KEYRING command or
 * a SIGHUP replaces it in place, between two callbacks, so the very next datagram or sync
 * frame, either way, is sealed and opened with the new keys (nothing keeps a key across
 * callbacks: a sync frame is sealed whole when it is queued and opened whole on arrival).
 * With --state-dir, a membership change arms the snapshot timer (one save per
 * RD_SNAPSHOT_SAVE_MS at most, however busy the membership) and the loop's end saves once
 * more; at start the snapshot's alive members become seeds, beside --join (snapshot.c).
 */
#include "agent.h"

#include <inttypes.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "deafness.h"
#include "dns.h"
#include "envelope.h"
#include "heap.h"
#include "hooks.h"
#include "log.h"
#include "metrics.h"
#include "notify.h"
#include "pace.h"
#include "query.h"
#include "ringjob.h"
#include "rand.h"
#include "rd_err.h"
#include "refusals.h"
#include "ring.h"
#include "snapshot.h"
#include "stall.h"
#include "swim.h"
#include "sync.h"
#include "wire.h"

/** Changes arriving within this window cost one ring rebuild. */
#define RD_REBUILD_COALESCE_MS 100
/** ... and under sustained change, rebuilds average one per this long at least, */
#define RD_REBUILD_GAP_MS 1000
/** ... or per this many times the CPU time the last one took, up to the cap (pace.h): each
 * agent spends at most 1/2000 of its time on rebuilds while a rebuild costs under 5 ms, so
 * 1,000 agents sharing 2 cores spend at most a quarter of the host on them. Above that the
 * cap wins, which keeps a changing ring at most 10 s stale. */
#define RD_REBUILD_COST_FACTOR 2000
#define RD_REBUILD_GAP_MAX_MS  10000
/** ... once this much has been charged ahead of the clock. */
#define RD_REBUILD_ALLOWANCE_MS 60000
/** Builds given up in a row for an outgrown list, at most (give_up_outgrown): a ring at least
 * every 35th build. After the last start of 1,000-agent join storms on two cores, no ring
 * followed more than 13. */
#define RD_GIVE_UP_MAX_IN_A_ROW 34
/** A ring event names the largest this many (from, to) moves of key space. */
#define RD_RING_EVENT_MOVES 16
/** Free memory goes back to the kernel once no rebuild has happened for this long. */
#define RD_TRIM_QUIET_MS 5000
/** A full member table is logged at most this often. */
#define TABLE_FULL_LOG_MS 60000
/** Failed join attempts are logged with the core's join backoff: after the first line, the
 *  next comes at least this long later, the gap doubling ... */
#define JOIN_LOG_FIRST_GAP_MS 1000
/** ... up to this (the core's join_retry_max_ms). */
#define JOIN_LOG_MAX_GAP_MS 30000
/** With --state-dir, the member table is saved this long after a change (at most this often). */
#define RD_SNAPSHOT_SAVE_MS 2000
/** SIGUSR1 logs at most this many members, one line each. */
#define RD_DUMP_MEMBERS_MAX 512
/** With --metrics-addr, the loop publishes fresh metrics this often (a scrape sees them at
 *  most this old). */
#define RD_METRICS_PUBLISH_MS 1000

struct rd_agent {
    struct rd_agent_config cfg;
    uv_loop_t *loop;
    struct rd_swim *swim;
    uv_udp_t udp;
    struct rd_sync *sync;
    uv_timer_t tick_timer, rebuild_timer, trim_timer, leave_timer;
    bool trimming;               /* on_trim_timer's step on the builder thread is queued */
    uint64_t tick_due_ms;        /* when tick_timer counts as due (rd_tick_due) */
    struct rd_deafness deafness; /* the longest stretch the loop read no input, per tick */
    struct rd_stall_meter stall; /* where the loop's time went between ticks */
    bool stall_watches_builder;  /* the meter reads the builder thread too */
    uv_timer_t snapshot_timer;   /* armed by a membership change, with --state-dir */
    uv_signal_t sigterm, sigint, sighup;
    struct rd_query *query;
    struct rd_hooks *hooks; /* --on-event handlers; NULL when none */
    struct rd_ring *ring;
    uint64_t ring_version;
    struct rd_ring_params ring_params; /* what the ring is built with: agreed at join */
    size_t weight_unwhole;             /* members left out for a fractional weight (ketama) */
    const char *ring_params_source;    /* "set", "default" or "adopted" (INFO) */
    struct rd_pace rebuild_pace;       /* when the next rebuild may run (pace.h) */
    bool rebuild_pending;              /* rebuild_timer is armed */
    struct rd_ring_builder builder;    /* builds rings off the loop (ringjob.h) */
    bool builder_up;                   /* builder is initialised and its thread runs */
    struct rd_ring_job *ring_job;      /* the build queued on the builder, or NULL */
    uint64_t ring_job_started_ms;
    uint64_t rebuilds_skipped; /* lists a newer one replaced since the last `ring rebuilt` */
    uint64_t builds_given_up;  /* outgrown builds given up since the last `ring rebuilt` */
    unsigned gave_up_in_a_row; /* builds given up since the last one that ended */
    bool rebuild_again;        /* a change came while a job ran: another rebuild once it is done */
    bool closing;              /* the loop is shutting down: a job that ends now is dropped */
    bool leaving, left, was_joined;
    /* Not ready (OWNER and friends get -NOTREADY, INFO ready:0) until was_joined: set when
     * the agent was told to join (--join), and by whatever else makes a lone agent's view
     * worthless until a member answered (a saved member table from a previous life). */
    bool needs_join;
    uv_timer_t join_timer;     /* --join-timeout */
    uint64_t join_log_next_ms; /* the next "join attempt failed" line, not before */
    uint32_t join_log_gap_ms;  /* ... and the gap after it */
    uint64_t join_failures,
        join_unlogged;         /* failed attempts; those not logged since the last line */
    char join_last_error[512]; /* the last attempt's reason, for the timeout's line */
    int exit_rc;               /* what rd_agent_run returns once the loop stopped */
    uint64_t full_logged_ms, full_logged_count; /* last "member table full" line */
    uint64_t start_ms;
    struct rd_member *rx_members; /* decoder scratch for one datagram */
    uint64_t malformed_packets;
    uint64_t refused_packets;   /* sent, and refused by the destination's host (refusals.h) */
    bool refusals_on;           /* the UDP socket reports them (--probe-refusals) */
    struct rd_addr refused[32]; /* refusals taken, not yet handed to the core */
    size_t nrefused;
    size_t weight_capped;             /* ring members placed at --max-weight in the last rebuild */
    struct rd_envelope_drops dropped; /* datagrams refused by the envelope rule */
    char udp_buf[65536];
    char rx_plain[65536];            /* an opened datagram */
    char tx_plain[RD_PACKET_BUDGET]; /* an encoded packet, before sealing */
    char tx_buf[RD_DATAGRAM_MAX];    /* what goes on the wire */
    uv_signal_t sigusr1;
    struct rd_agent_config loaded; /* as the arguments and --config said at the last read */
    struct rd_notify *notify;      /* the service manager ($NOTIFY_SOCKET); NULL when none */
    bool ready_notified;           /* READY=1 went out: once, and never after STOPPING=1 */
    /* --join's seeds, resolved again and again (seeds_resolve): a name's hosts change */
    struct rd_dns *dns;
    uv_timer_t seeds_timer; /* the next resolution round */
    uint32_t seeds_gap_ms;  /* ... after this; doubles up to the core's join backoff cap */
    int seeds_pending;      /* resolutions of this round not answered yet */
    struct rd_addr join_addrs[RD_JOIN_MAX][RD_DNS_ADDRS_MAX]; /* the last answer per --join */
    size_t njoin_addrs[RD_JOIN_MAX];
    struct rd_addr snap_seeds[RD_JOIN_MAX]; /* the snapshot's seeds, after --join's */
    size_t nsnap_seeds;
    /* metrics: the counts only the agent sees, the endpoint, and the text buffer */
    uint64_t rebuilds, suspicions, bytes_in, bytes_out;
    struct rd_metrics_histogram rebuild_seconds;
    double last_moved;
    struct rd_metrics_server *metrics; /* NULL without --metrics-addr */
    uv_timer_t metrics_timer;
    char *metrics_buf;
    size_t metrics_cap;
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
static void snapshot_changed(struct rd_agent *a);
static bool agent_ready(const struct rd_agent *a);
static void notify_ready(struct rd_agent *a);
static void notify(struct rd_agent *a, const char *state);

/* ---------------------------------------------------------------- ring */

static void publish_ring(struct rd_agent *a, const struct rd_ring_diff *d)
{
    char version[24], checksum[24], points[24], moved[32];
    snprintf(version, sizeof version, "%" PRIu64, a->ring_version);
    snprintf(checksum, sizeof checksum, "%016" PRIx64, rd_ring_checksum(a->ring));
    snprintf(points, sizeof points, "%zu", rd_ring_point_count(a->ring));
    snprintf(moved, sizeof moved, "%.6f", d->moved);
    const char *fields[8 + 3 * RD_RING_EVENT_MOVES];
    size_t n = 0;
    fields[n++] = "ring";
    fields[n++] = version;
    fields[n++] = checksum;
    fields[n++] = points;
    fields[n++] = moved;
    char shares[RD_RING_EVENT_MOVES][24];
    for (size_t k = 0; k < d->nmoves && k < RD_RING_EVENT_MOVES; k++) {
        snprintf(shares[k], sizeof shares[k], "%.6f", d->moves[k].fraction);
        fields[n++] = d->moves[k].from;
        fields[n++] = d->moves[k].to;
        fields[n++] = shares[k];
    }
    if (a->query) rd_query_publish(a->query, fields, n);
    rd_hooks_event(a->hooks, RD_HOOK_RING, fields, n);
}

static bool in_ring(uint8_t status)
{
    return status == RD_ALIVE || status == RD_SUSPECT;
}

/* The empty ring of the agreed mode, which the first build replaces. */
static int empty_ring(const struct rd_agent *a, struct rd_ring **out)
{
    if (a->ring_params.mode == RD_RING_MODE_KETAMA) return rd_ring_new_ketama(NULL, 0, out);
    return rd_ring_new(NULL, 0, a->ring_params.vnodes, out);
}

/*
 * The ring's members as the table has them now: alive and suspect members of weight > 0,
 * weights capped at --max-weight, and in ketama mode whole weights only, each member's
 * identity its `ketama` tag. Says what it capped or left out when that grew. The strings
 * are the table's: a job copies them (ringjob.h). NULL when out of memory.
 */
static struct rd_ring_job *ring_job_of_members(struct rd_agent *a)
{
    size_t count = rd_swim_member_count(a->swim), n = 0;
    bool ketama = a->ring_params.mode == RD_RING_MODE_KETAMA;
    struct rd_ring_member *rm = malloc((count ? count : 1) * sizeof *rm);
    /* ketama: each member's identity, its `ketama` tag (tag values fit an identity) */
    char(*ids)[RD_TAGS_MAX + 1] = ketama ? malloc((count ? count : 1) * sizeof *ids) : NULL;
    if (!rm || (ketama && !ids)) {
        free(rm);
        free(ids);
        return NULL;
    }
    size_t capped = 0, fractional = 0, listed = 0;
    const char *heaviest = NULL, *unwhole = NULL;
    uint32_t heaviest_weight = 0;
    for (size_t i = 0; i < count; i++) {
        struct rd_member_view m;
        rd_swim_member(a->swim, i, &m);
        if (!in_ring(m.status)) continue;
        listed++;                    /* what give_up_outgrown compares with */
        if (m.weight == 0) continue; /* drained */
        uint32_t w = m.weight;
        if (w > a->cfg.max_weight) {
            capped++;
            if (w > heaviest_weight) heaviest = m.name, heaviest_weight = w;
            w = a->cfg.max_weight;
        }
        const char *identity = NULL;
        if (ketama) {
            /* A ketama ring takes whole weights. No agent of the cluster claims another
             * (refused at start, by WEIGHT and by reload); one that does is a joiner about
             * to stop because it cannot adopt the ring, or a foreign one: left out of the
             * ring, rather than stop the ring for everyone or own keys for a moment. */
            if (w % RD_WEIGHT_ONE) {
                fractional++;
                unwhole = m.name;
                continue;
            }
            if (rd_tags_get(m.tags, "ketama", ids[n], sizeof ids[n])) identity = ids[n];
        }
        rm[n++] = (struct rd_ring_member){
            .name = m.name, .weight = w, .zone = m.zone, .identity = identity};
    }
    if (fractional > a->weight_unwhole)
        rd_logf(RD_LOG_WARN, "members with a fractional weight left out of the ketama ring",
                RD_FUINT("members", fractional), RD_FSTR("member", unwhole));
    a->weight_unwhole = fractional;
    if (capped > a->weight_capped)
        rd_logf(RD_LOG_WARN, "members above --max-weight placed at it", RD_FUINT("capped", capped),
                RD_FSTR("heaviest", heaviest),
                RD_FDBL("heaviest_weight", (double)heaviest_weight / RD_WEIGHT_ONE),
                RD_FDBL("max_weight", (double)a->cfg.max_weight / RD_WEIGHT_ONE));
    a->weight_capped = capped;
    struct rd_ring_job *job = rd_ring_job_new(rm, n, a->ring_params.mode, a->ring_params.vnodes,
                                              a->ring, RD_RING_EVENT_MOVES);
    if (job) job->listed = listed;
    free(rm);
    free(ids);
    return job;
}

/* A job's ring replaces the agent's, unless it places keys the same way; logged and
 * published with what moved. Frees the job. */
static void adopt_ring(struct rd_agent *a, struct rd_ring_job *job)
{
    if (job->rc == RD_ECANCELED) { /* given up for a newer list (give_up_outgrown) */
        rd_ring_job_free(job);
        return;
    }
    a->gave_up_in_a_row = 0;
    if (job->rc < 0) {
        rd_logf(RD_LOG_ERROR, "ring rebuild failed", RD_FSTR("error", rd_strerror(job->rc)));
        rd_ring_job_free(job);
        return;
    }
    a->rebuilds++;
    rd_metrics_observe(&a->rebuild_seconds, (double)job->run_ns / 1e9);
    if (job->same) { /* same placement: nothing moved, keep the old snapshot */
        rd_ring_job_free(job);
        return;
    }
    struct rd_ring_diff *d = &job->diff;
    if (job->diff_rc < 0) *d = (struct rd_ring_diff){.moved = -1};
    if (d->moved >= 0) a->last_moved = d->moved;
    struct rd_ring *ring = job->ring;
    job->ring = NULL;
    rd_ring_delete(a->ring);
    a->ring = ring;
    a->ring_version++;
    char top[2 * RD_NAME_MAX + 48] = "";
    if (d->nmoves > 0)
        snprintf(top, sizeof top, "%s->%s:%.4f", d->moves[0].from[0] ? d->moves[0].from : "none",
                 d->moves[0].to[0] ? d->moves[0].to : "none", d->moves[0].fraction);
    rd_logf(RD_LOG_INFO, "ring rebuilt", RD_FUINT("ring_version", a->ring_version),
            RD_FHEX("ring_checksum", rd_ring_checksum(ring)),
            RD_FUINT("ring_members", rd_ring_member_count(ring)),
            RD_FUINT("ring_points", rd_ring_point_count(ring)), RD_FDBL("moved", d->moved),
            RD_FUINT("moves", d->npairs), RD_FSTR("largest_move", top),
            RD_FDBL("cpu_ms", (double)job->cpu_ns / 1e6), RD_FUINT("faults", job->faults),
            RD_FUINT("skipped", a->rebuilds_skipped), RD_FUINT("given_up", a->builds_given_up));
    a->rebuilds_skipped = 0;
    a->builds_given_up = 0;
    uint64_t budget, raw;
    if (rd_ring_scaled(ring, &budget, &raw))
        rd_logf(RD_LOG_WARN, "ring scaled to the point limit", RD_FUINT("raw_points", raw),
                RD_FUINT("budget", budget), RD_FDBL("factor", (double)budget / (double)raw),
                RD_FUINT("ring_points", rd_ring_point_count(ring)));
    publish_ring(a, d);
    rd_ring_job_free(job);
}

/* The ring of the table as it is, built on the loop: at start, before anything else runs. */
static void rebuild_ring_now(struct rd_agent *a)
{
    struct rd_ring_job *job = ring_job_of_members(a);
    if (!job) {
        rd_logf(RD_LOG_ERROR, "ring rebuild failed", RD_FSTR("error", "out of memory"));
        return;
    }
    rd_ring_job_run(job);
    adopt_ring(a, job);
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

static void schedule_rebuild(struct rd_agent *a);

/* The builder thread has shrunk its arena (heap.h). A rebuild asked for meanwhile already
 * restored the policy; it was held back until now, and the trim comes after it. */
static void on_heap_shrunk(struct rd_ring_job *job)
{
    struct rd_agent *a = job->ctx;
    rd_ring_job_free(job);
    a->trimming = false;
    rd_heap_keep_freed();
    if (a->closing) return;
    if (a->rebuild_again) {
        a->rebuild_again = false;
        schedule_rebuild(a);
        return;
    }
    if (!a->rebuild_pending) rd_heap_release();
}

/*
 * The heap keeps what a membership change freed (the old ring snapshot, sync buffers) for
 * the next change, which then costs no page faults (heap.h): in a join storm of 1000 agents
 * on 2 cores, faulting in fresh memory for every rebuild and sync was a third of all CPU.
 * Once the membership is quiet, that memory goes back: an idle agent holds one ring, not two.
 * Quiet means no rebuild for RD_TRIM_QUIET_MS and none waiting: a rebuild the pacer holds
 * back stops the timer, or every paced rebuild would fault its ring in afresh. The memory
 * goes back in steps, one on the builder thread (heap.h).
 */
static void on_trim_timer(uv_timer_t *t)
{
    struct rd_agent *a = t->data;
    if (a->trimming || a->ring_job) return; /* a job's end starts the timer again */
    rd_heap_trim_on_free();
    struct rd_ring_job *job =
        a->builder_up ? rd_ring_job_new(NULL, 0, a->ring_params.mode, 0, NULL, 0) : NULL;
    if (job) {
        job->work = rd_ring_job_shrink_heap;
        job->done = on_heap_shrunk;
        job->ctx = a;
        a->trimming = true;
        (void)rd_ring_job_queue(&a->builder, job); /* idle: nothing else is queued */
        return;
    }
    rd_heap_keep_freed();
    rd_heap_release();
}

/* A job is done (on the loop): its ring is adopted, the next rebuild paced by the job's
 * CPU time from the start of this one, and one that was asked for meanwhile scheduled. */
static void on_ring_job_done(struct rd_ring_job *job)
{
    struct rd_agent *a = job->ctx;
    a->ring_job = NULL;
    if (a->closing) {
        rd_ring_job_free(job);
        return;
    }
    uint64_t cpu_ns = job->cpu_ns;
    adopt_ring(a, job);
    rd_pace_done(&a->rebuild_pace, a->ring_job_started_ms, cpu_ns);
    if (!a->rebuild_pending) /* else the rebuild's end starts it */
        uv_timer_start(&a->trim_timer, on_trim_timer, RD_TRIM_QUIET_MS, 0);
    if (a->rebuild_again) {
        a->rebuild_again = false;
        schedule_rebuild(a);
    }
}

/*
 * A build under way whose list the membership has outgrown (rd_ring_job_outgrown) is given
 * up: its ring would stand only until the build that must follow it. In a join storm of
 * 1,000 agents on two cores a starved builder took a list of a few hundred members and
 * finished it a minute later, long after the membership had agreed on 1,000, then built
 * again, while every ring waited (bench/README.md, "Outgrown builds given up", "Builds given
 * up at a 64th"). At most RD_GIVE_UP_MAX_IN_A_ROW in a row, so that a membership that keeps
 * changing while the thread starves still gets a ring. The job ends as RD_ECANCELED (one
 * that finished first is adopted as usual), and the rebuild asked for meanwhile follows it.
 */
static void give_up_outgrown(struct rd_agent *a)
{
    if (!a->ring_job || a->trimming || a->gave_up_in_a_row >= RD_GIVE_UP_MAX_IN_A_ROW ||
        rd_ring_builder_queued(&a->builder) || /* one not yet taken is replaced instead */
        atomic_load(&a->ring_job->abandon))    /* given up already, its end not yet seen */
        return;
    size_t counts[4];
    rd_swim_counts(a->swim, counts);
    if (!rd_ring_job_outgrown(a->ring_job, counts[RD_ALIVE] + counts[RD_SUSPECT])) return;
    a->gave_up_in_a_row++;
    a->builds_given_up++;
    rd_ring_builder_abandon(&a->builder);
}

/*
 * One job at a time: it reads the ring that the next one replaces. A change that comes
 * while the thread has not yet taken the queued job (on a crowded host it waits seconds for
 * the CPU) puts the current member list in its place, or, if it is the heap trim, goes
 * before it; one that comes while the thread runs a job waits for its end, unless the
 * membership has outgrown that job (give_up_outgrown).
 */
static void on_rebuild_timer(uv_timer_t *t)
{
    struct rd_agent *a = t->data;
    a->rebuild_pending = false;
    bool busy = a->trimming || a->ring_job;
    if (busy && !rd_ring_builder_queued(&a->builder)) {
        give_up_outgrown(a); /* the thread may have taken a stale list since the change */
        a->rebuild_again = true;
        return;
    }
    struct rd_ring_job *job = ring_job_of_members(a);
    if (!job) {
        rd_logf(RD_LOG_ERROR, "ring rebuild failed", RD_FSTR("error", "out of memory"));
        a->rebuild_again = busy; /* tried again once the queued job is done */
        return;
    }
    job->done = on_ring_job_done;
    job->ctx = a;
    if (busy) { /* queued, not yet taken: the build takes its place */
        struct rd_ring_job *queued = rd_ring_job_replace(&a->builder, job);
        if (!queued) { /* taken meanwhile */
            rd_ring_job_free(job);
            a->rebuild_again = true;
            return;
        }
        rd_ring_job_free(queued);
        if (a->trimming) {       /* the trim comes after this build, as after every build */
            a->trimming = false; /* schedule_rebuild kept freed memory for this build */
            a->ring_job_started_ms = now_ms();
        } else { /* a stale list; paced from when the first of them was queued */
            a->rebuilds_skipped++;
        }
        a->ring_job = job;
        return;
    }
    a->ring_job_started_ms = now_ms();
    if (!a->builder_up) { /* no thread: build here */
        rd_ring_job_run(job);
        on_ring_job_done(job);
        return;
    }
    (void)rd_ring_job_queue(&a->builder, job); /* idle: neither a job nor a trim is queued */
    a->ring_job = job;
}

static void schedule_rebuild(struct rd_agent *a)
{
    give_up_outgrown(a); /* now, not when the paced rebuild is due: it may be seconds away */
    if (a->rebuild_pending) return;
    a->rebuild_pending = true;
    uv_timer_stop(&a->trim_timer);
    if (a->trimming) rd_heap_keep_freed(); /* the build to come keeps what it frees */
    uint64_t now = now_ms(), due = rd_pace_due(&a->rebuild_pace, now);
    uv_timer_start(&a->rebuild_timer, on_rebuild_timer, due - now, 0);
}

/* ---------------------------------------------------------------- events */

static void publish_member(struct rd_agent *a, const struct rd_member *m, bool is_new,
                           uint8_t old_status);

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
    publish_member(a, m, ev->is_new, ev->old_status);
}

/* A member said something new about itself at the same status: weight, zone or tags. */
static void log_update(struct rd_agent *a, const struct rd_swim_event *ev)
{
    const struct rd_member *m = &ev->member;
    rd_logf(RD_LOG_INFO, "member updated", RD_FSTR("member", m->name),
            RD_FUINT("incarnation", m->incarnation), RD_FSTR("status", rd_status_name(m->status)),
            RD_FDBL("weight", (double)m->weight / RD_WEIGHT_ONE), RD_FSTR("zone", m->zone),
            RD_FSTR("tags", m->tags), RD_FSTR("drained", m->weight == 0 ? "yes" : "no"));
    publish_member(a, m, false, m->status); /* the same status: an update */
}

/* To subscribers and to event handlers (a status change, or an update at the same one). */
static void publish_member(struct rd_agent *a, const struct rd_member *m, bool is_new,
                           uint8_t old_status)
{
    char addr[RD_ADDR_STRLEN];
    rd_addr_format(&m->addr, addr, sizeof addr);
    char inc[24];
    snprintf(inc, sizeof inc, "%" PRIu64, m->incarnation);
    const char *fields[] = {"member", m->name, rd_status_name(m->status), addr, inc};
    if (a->query) rd_query_publish(a->query, fields, 5);
    int hook = rd_hook_member_event(is_new, old_status, m->status);
    if (hook >= 0) rd_hooks_event(a->hooks, (enum rd_hook_event)hook, fields, 5);
}

/* ---------------------------------------------------------------- UDP and timers */

/* A tick that came a second or more late says where the loop's time went since the meter's
 * point before (stall.h): on a CPU, waiting for one, in its poll, or blocked elsewhere. */
static void log_stall(struct rd_agent *a, uint64_t lag_ms, uint64_t deaf_ms)
{
    if (!a->stall_watches_builder && a->builder_up) {
        pid_t tid = atomic_load(&a->builder.tid);
        if (tid) {
            rd_stall_meter_watch(&a->stall, tid);
            a->stall_watches_builder = true;
        }
    }
    uint64_t now = uv_hrtime();
    struct rd_stall s;
    if (!rd_stall_meter_due(&a->stall, now, lag_ms) ||
        !rd_stall_meter_sample(&a->stall, now, uv_metrics_idle_time(a->loop), &s) ||
        lag_ms < RD_STALL_LOG_MS)
        return;
    struct rd_log_field f[] = {
        RD_FUINT("late_ms", lag_ms),
        RD_FUINT("deaf_ms", deaf_ms),
        RD_FUINT("window_ms", s.window_ms),
        RD_FUINT("on_cpu_ms", s.on_cpu_ms),
        RD_FUINT("runnable_ms", s.runnable_ms),
        RD_FUINT("polling_ms", s.polling_ms),
        RD_FUINT("blocked_ms", s.blocked_ms),
        RD_FUINT("builder_on_cpu_ms", s.builder_on_cpu_ms),
        RD_FUINT("builder_runnable_ms", s.builder_runnable_ms),
    };
    rd_log(RD_LOG_WARN, "loop stalled", f, s.builder_known ? 9 : 7);
}

static void on_tick(uv_timer_t *t)
{
    struct rd_agent *a = t->data;
    /* how late the loop runs us (blocked, or starved of CPU): the core judges after input */
    uint64_t now = now_ms();
    uint64_t lag = now > a->tick_due_ms ? now - a->tick_due_ms : 0;
    uint64_t deaf = rd_deafness_take(&a->deafness);
    if (deaf > lag) lag = deaf;
    log_stall(a, lag, deaf);
    rd_swim_tick_lagged(a->swim, now, lag);
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

/* Stops the loop with exit code rc: the agent cannot go on (its reason is already logged). */
static void stop_now(struct rd_agent *a, int rc)
{
    a->exit_rc = rc;
    a->left = true;
    uv_stop(a->loop);
}

/* Moves what the UDP socket's error queue holds into a->refused (refusals.h): the
 * destinations that refused our datagrams, which flush() hands to the core. */
static void take_refusals(struct rd_agent *a)
{
    uv_os_fd_t fd;
    if (!a->refusals_on || uv_fileno((uv_handle_t *)&a->udp, &fd) < 0) return;
    size_t room = sizeof a->refused / sizeof a->refused[0] - a->nrefused;
    size_t n = rd_refusals_drain(fd, a->refused + a->nrefused, room, NULL);
    a->nrefused += n;
    a->refused_packets += n;
}

static void send_packets(struct rd_agent *a)
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
        int rc = uv_udp_try_send(&a->udp, &b, 1, (struct sockaddr *)&ss);
        if (rc == UV_ECONNREFUSED) {
            /* an earlier datagram's refusal was pending on the socket and failed this send,
             * which did not go out: take the refusal and send again */
            take_refusals(a);
            rc = uv_udp_try_send(&a->udp, &b, 1, (struct sockaddr *)&ss);
        }
        if (rc >= 0) a->bytes_out += len; /* else: loss */
    }
}

static void flush(struct rd_agent *a)
{
    send_packets(a);
    while (a->nrefused) { /* the core may answer a refusal at once (PING_REQ, NACK) */
        size_t n = a->nrefused;
        a->nrefused = 0;
        for (size_t i = 0; i < n; i++)
            rd_swim_refused(a->swim, now_ms(), &a->refused[i]);
        send_packets(a);
    }
    struct rd_addr to;
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
        if (ev.updated) {
            log_update(a, &ev);
            snapshot_changed(a); /* a new incarnation: the next life must start above it */
            schedule_rebuild(a); /* a weight, zone or ketama tag may have moved keys */
            continue;
        }
        log_event(a, &ev);
        if (ev.member.status == RD_SUSPECT && (ev.is_new || ev.old_status != RD_SUSPECT))
            a->suspicions++;
        snapshot_changed(a);
        if (in_ring(ev.member.status) != in_ring(ev.old_status) || ev.is_new) schedule_rebuild(a);
    }
    if (!a->was_joined && rd_swim_joined(a->swim)) {
        a->was_joined = true;
        size_t counts[4];
        rd_swim_counts(a->swim, counts);
        rd_logf(RD_LOG_INFO, "joined cluster", RD_FUINT("members_alive", counts[RD_ALIVE]));
    }
    if (!a->ready_notified && !a->leaving && agent_ready(a)) notify_ready(a);
    log_table_full(a);
    const struct rd_member *namesake = rd_swim_conflict(a->swim);
    if (namesake && !a->left) {
        char theirs[RD_ADDR_STRLEN];
        rd_logf(RD_LOG_ERROR, "name already in use: stopping", RD_FSTR("member", namesake->name),
                RD_FSTR("other_addr", rd_addr_format(&namesake->addr, theirs, sizeof theirs)),
                RD_FSTR("hint", "give this agent another --name"));
        stop_now(a, RD_EEXIST);
        return;
    }
    if (a->leaving && rd_swim_leave_done(a->swim)) {
        finish_leave(a);
        return;
    }
    uint64_t next = rd_swim_next_tick(a->swim);
    uint64_t now = now_ms();
    a->tick_due_ms =
        rd_tick_due(uv_is_active((uv_handle_t *)&a->tick_timer), a->tick_due_ms, next, now);
    uv_timer_start(&a->tick_timer, on_tick, a->tick_due_ms > now ? a->tick_due_ms - now : 0, 0);
}

/* The answer of a seed decided our ring parameters (sync.h, rd_sync_ring_fn). */
static void on_ring_params(void *ctx, enum rd_ring_verdict v, const struct rd_ring_params *theirs,
                           const char *from)
{
    struct rd_agent *a = ctx;
    char ours[64], cluster[64];
    rd_ring_params_format(&a->ring_params, ours, sizeof ours);
    rd_ring_params_format(theirs, cluster, sizeof cluster);
    char why[160];
    if (v == RD_RING_ADOPT && theirs->mode == RD_RING_MODE_KETAMA &&
        rd_config_ketama_weights(&a->cfg, why, sizeof why) < 0) {
        if (a->left) return;
        rd_logf(RD_LOG_ERROR, "cannot adopt the cluster's ketama ring: stopping",
                RD_FSTR("cluster", cluster), RD_FSTR("from", from), RD_FSTR("error", why));
        notify(a, "STATUS=the cluster's ketama ring needs whole weights: stopping");
        stop_now(a, RD_EINVAL);
        return;
    }
    if (v == RD_RING_ADOPT) {
        rd_logf(RD_LOG_INFO, "ring parameters adopted", RD_FSTR("ours", ours),
                RD_FSTR("cluster", cluster), RD_FSTR("from", from));
        a->ring_params = *theirs;
        a->ring_params_source = "adopted";
        schedule_rebuild(a);
        return;
    }
    if (a->left) return;
    rd_logf(RD_LOG_ERROR, "ring parameters differ from the cluster's: stopping",
            RD_FSTR("ours", ours), RD_FSTR("cluster", cluster), RD_FSTR("from", from),
            RD_FSTR("hint",
                    "start every agent with the same --vnodes and --ring, or leave them unset"));
    notify(a, "STATUS=ring parameters differ from the cluster's: stopping");
    stop_now(a, RD_EINVAL);
}

/* A sync merged a peer's state or failed: send what the core wants sent now. */
static void on_sync_changed(void *ctx)
{
    flush(ctx);
}

static bool agent_ready(const struct rd_agent *a)
{
    return !a->needs_join || a->was_joined;
}

/*
 * An exchange we opened is over. A JOIN waiting for it gets its answer. While the agent is
 * not ready, every exchange it opens is a join attempt (to a seed, or to a member it heard
 * of), and a failed one is logged with its reason: the first at once, the next ones with
 * a gap that doubles to JOIN_LOG_MAX_GAP_MS, each line counting the failures it stands
 * for, so a seed that stays down costs a line per backoff step, not one per retry.
 */
static void join_failed(struct rd_agent *a, const char *seed, const char *why);
static void seeds_resolve(uv_timer_t *t);
static void seeds_answered(struct rd_agent *a);

static void on_sync_result(void *ctx, const struct rd_addr *peer, const char *why)
{
    struct rd_agent *a = ctx;
    if (a->query) rd_query_join_done(a->query, peer, why);
    if (!why || agent_ready(a)) return;
    char addr[RD_ADDR_STRLEN];
    join_failed(a, rd_addr_format(peer, addr, sizeof addr), why);
}

/* A join attempt (an exchange, or resolving a seed's name) failed: logged as said above. */
static void join_failed(struct rd_agent *a, const char *seed, const char *why)
{
    a->join_failures++;
    a->join_unlogged++;
    snprintf(a->join_last_error, sizeof a->join_last_error, "%s", why);
    uint64_t now = now_ms();
    if (now < a->join_log_next_ms) return;
    rd_logf(RD_LOG_INFO, "join attempt failed", RD_FSTR("seed", seed), RD_FSTR("reason", why),
            RD_FUINT("failures", a->join_unlogged), RD_FUINT("failures_total", a->join_failures));
    a->join_unlogged = 0;
    char status[RD_NOTIFY_STATE_MAX];
    snprintf(status, sizeof status, "STATUS=joining: %" PRIu64 " attempts failed, the last: %s",
             a->join_failures, why);
    notify(a, status);
    if (a->join_log_gap_ms == 0) a->join_log_gap_ms = JOIN_LOG_FIRST_GAP_MS;
    a->join_log_next_ms = now + a->join_log_gap_ms;
    a->join_log_gap_ms =
        a->join_log_gap_ms * 2 < JOIN_LOG_MAX_GAP_MS ? a->join_log_gap_ms * 2 : JOIN_LOG_MAX_GAP_MS;
}

/* --join-timeout passed: an agent that never joined stops, rather than serve nothing. */
static void on_join_timeout(uv_timer_t *t)
{
    struct rd_agent *a = t->data;
    if (agent_ready(a) || a->left) return;
    rd_logf(RD_LOG_ERROR, "no seed answered: giving up", RD_FSTR("member", a->cfg.name),
            RD_FUINT("join_timeout_s", a->cfg.join_timeout_s),
            RD_FUINT("attempts_failed", a->join_failures),
            RD_FSTR("last_error", a->join_last_error[0] ? a->join_last_error : "none"));
    notify(a, "STATUS=no seed answered: giving up");
    stop_now(a, RD_EREFUSED);
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
    if (n < 0) { /* how libuv shows that the error queue holds something */
        take_refusals(a);
        flush(a);
    }
    if (n <= 0 || !from) return;
    a->bytes_in += (uint64_t)n;
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

/* ---------------------------------------------------------------- snapshot */

/* Saves the member table in --state-dir now. A failure is logged; the next change, or the
 * exit, tries again. */
static void snapshot_save(struct rd_agent *a, const char *why)
{
    size_t count = rd_swim_member_count(a->swim);
    if (count > RD_MAX_MEMBERS) count = RD_MAX_MEMBERS;
    struct rd_snapshot_head head = {.saved_ms = wall_ms()};
    snprintf(head.cluster, sizeof head.cluster, "%s", a->cfg.cluster);
    snprintf(head.self, sizeof head.self, "%s", a->cfg.name);
    struct rd_snapshot_entry *e = malloc((count ? count : 1) * sizeof *e);
    size_t n = 0;
    for (size_t i = 0; e && i < count; i++) {
        struct rd_member_view m;
        rd_swim_member(a->swim, i, &m);
        if (m.addr.family != 4 && m.addr.family != 6) continue; /* nowhere to rejoin */
        e[n] = (struct rd_snapshot_entry){
            .addr = m.addr, .incarnation = m.incarnation, .status = m.status};
        snprintf(e[n].name, sizeof e[n].name, "%s", m.name);
        n++;
    }
    size_t cap = e ? rd_snapshot_encoded_len(&head, e, n) : 0;
    uint8_t *buf = e ? malloc(cap) : NULL;
    char err[512] = "out of memory";
    int rc = buf ? rd_snapshot_encode(&head, e, n, buf, cap) : RD_ENOMEM;
    if (rc >= 0)
        rc = rd_snapshot_save(a->cfg.state_dir, buf, (size_t)rc, err, sizeof err);
    else if (buf)
        snprintf(err, sizeof err, "cannot encode the snapshot: %s", rd_strerror(rc));
    if (rc < 0 || err[0])
        rd_logf(RD_LOG_WARN, rc < 0 ? "snapshot not saved" : "snapshot saved, not synced",
                RD_FSTR("dir", a->cfg.state_dir), RD_FSTR("error", err));
    else
        rd_logf(RD_LOG_DEBUG, "snapshot saved", RD_FUINT("members", n), RD_FSTR("reason", why));
    free(buf);
    free(e);
}

static void on_snapshot_timer(uv_timer_t *t)
{
    snapshot_save(t->data, "membership changed");
}

/* A membership change: saved within RD_SNAPSHOT_SAVE_MS, together with what follows it. */
static void snapshot_changed(struct rd_agent *a)
{
    if (!a->cfg.state_dir[0] || uv_is_active((uv_handle_t *)&a->snapshot_timer)) return;
    uv_timer_start(&a->snapshot_timer, on_snapshot_timer, RD_SNAPSHOT_SAVE_MS, 0);
}

/* Logs why the snapshot is not used; the agent then starts as if there were none. */
static void snapshot_ignored(const char *dir, const char *why)
{
    rd_logf(RD_LOG_WARN, "snapshot ignored", RD_FSTR("file", dir), RD_FSTR("reason", why));
}

/*
 * Reads the snapshot of the previous run from --state-dir (created 0700 if missing).
 * Returns 0, or a negative RD_E* for a state directory that cannot be used (logged; the
 * agent does not start, as for an unsafe socket directory). A snapshot that is missing,
 * cut, corrupt, or another cluster's or member's is logged and ignored. Otherwise
 * *prev_inc is our own incarnation in it, and seeds[0..*nseeds) gets up to `room` of its
 * alive members, picked at random; none if we left gracefully, unless --rejoin.
 */
static int snapshot_load(struct rd_agent *a, struct rd_addr *seeds, size_t room, size_t *nseeds,
                         uint64_t *prev_inc)
{
    *nseeds = 0;
    *prev_inc = 0;
    char err[512], path[4096 + sizeof RD_SNAPSHOT_FILE + 1];
    int rc = rd_snapshot_prepare_dir(a->cfg.state_dir, err, sizeof err);
    if (rc < 0) {
        rd_logf(RD_LOG_ERROR, "cannot start", RD_FSTR("error", err));
        return rc;
    }
    snprintf(path, sizeof path, "%s/%s", a->cfg.state_dir, RD_SNAPSHOT_FILE);
    uint8_t *buf;
    size_t len;
    rc = rd_snapshot_read(a->cfg.state_dir, &buf, &len, err, sizeof err);
    if (rc == RD_ENOENT) {
        rd_logf(RD_LOG_INFO, "no snapshot yet", RD_FSTR("file", path));
        return 0;
    }
    if (rc < 0) {
        snapshot_ignored(path, err);
        return 0;
    }
    struct rd_snapshot_head head;
    struct rd_snapshot_entry *e = malloc(RD_MAX_MEMBERS * sizeof *e);
    rc = e ? rd_snapshot_decode(buf, len, &head, e, RD_MAX_MEMBERS, err, sizeof err) : RD_ENOMEM;
    free(buf);
    if (rc >= 0) rc = rd_snapshot_owned(&head, a->cfg.cluster, a->cfg.name, err, sizeof err);
    if (rc < 0) {
        snapshot_ignored(path, rc == RD_ENOMEM ? "out of memory" : err);
        free(e);
        return 0;
    }
    bool left = false;
    size_t alive = 0;
    struct rd_rand rng;
    rd_rand_seed(&rng, a->cfg.seed ? a->cfg.seed : wall_ms() ^ (uint64_t)getpid());
    for (size_t i = 0; i < head.count; i++) {
        if (strcmp(e[i].name, a->cfg.name) == 0) {
            *prev_inc = e[i].incarnation;
            left = e[i].status == RD_LEFT;
        } else if (e[i].status == RD_ALIVE) {
            /* reservoir sampling: each alive member is a seed with equal chance */
            size_t k = alive < room ? alive : rd_rand_below(&rng, (uint32_t)alive + 1);
            if (k < room) seeds[k] = e[i].addr;
            alive++;
        }
    }
    free(e);
    if (left && !a->cfg.rejoin) {
        rd_logf(RD_LOG_INFO, "left the cluster last time: not rejoining through the snapshot",
                RD_FSTR("file", path), RD_FUINT("members_alive", alive),
                RD_FSTR("hint", "--rejoin or --join to join again"));
        return 0;
    }
    *nseeds = alive < room ? alive : room;
    rd_logf(RD_LOG_INFO, "rejoining through the snapshot", RD_FSTR("file", path),
            RD_FUINT("members", head.count), RD_FUINT("members_alive", alive),
            RD_FUINT("seeds", *nseeds), RD_FUINT("saved_ms", head.saved_ms));
    return 0;
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
    notify(a, "STOPPING=1\nSTATUS=leaving the cluster");
    rd_swim_leave(a->swim, now_ms());
    uv_timer_start(&a->leave_timer, on_leave_timeout, RD_LEAVE_TIMEOUT_MS, 0);
    flush(a);
}

/* ---------------------------------------------------------------- run-time changes */

/* Our record with this weight, zone and tags, spread at a new incarnation; then they are
 * the ones in force. RD_EREFUSED once leaving. */
static int apply_self(struct rd_agent *a, uint32_t weight, const char *zone, const char *tags)
{
    int rc = rd_swim_update_self(a->swim, now_ms(), weight, zone, tags);
    if (rc < 0) return rc;
    const struct rd_member *self = rd_swim_self(a->swim); /* zone or tags may be cfg's own */
    a->cfg.weight = weight;
    memcpy(a->cfg.zone, self->zone, sizeof a->cfg.zone);
    memcpy(a->cfg.tags, self->tags, sizeof a->cfg.tags);
    flush(a);
    return 0;
}

/* WEIGHT's argument: 0 (drain; also "0.0" and "0.000") or a weight as --weight takes it. */
static int parse_runtime_weight(const char *text, uint32_t *out)
{
    if (rd_weight_parse(text, out) == 0) return 0;
    size_t n = strlen(text);
    if (text[0] != '0' ||
        (n > 1 && (text[1] != '.' || n < 3 || n > 5 || strspn(text + 2, "0") != n - 2)))
        return RD_EINVAL;
    *out = 0;
    return 0;
}

static int change_weight(struct rd_agent *a, const char *text, char *err, size_t errlen)
{
    uint32_t w;
    if (parse_runtime_weight(text, &w) < 0) {
        snprintf(err, errlen, "'%s' is not a weight: 0 (drain) or 0.001 to 100", text);
        return RD_EINVAL;
    }
    if (w > a->cfg.max_weight) {
        snprintf(err, errlen, "weight %s is above --max-weight %u.%03u", text,
                 a->cfg.max_weight / RD_WEIGHT_ONE, a->cfg.max_weight % RD_WEIGHT_ONE);
        return RD_EREFUSED;
    }
    if (a->ring_params.mode == RD_RING_MODE_KETAMA && w % RD_WEIGHT_ONE) {
        snprintf(err, errlen,
                 "weight %s is not a whole number: the cluster's ring is ketama, which takes "
                 "whole weights",
                 text);
        return RD_EINVAL;
    }
    return apply_self(a, w, a->cfg.zone, a->cfg.tags);
}

static int change_tags(struct rd_agent *a, bool set, const char *key, const char *value, char *err,
                       size_t errlen)
{
    char tags[RD_TAGS_MAX + 1];
    snprintf(tags, sizeof tags, "%s", a->cfg.tags);
    int rc = set ? rd_tags_set(tags, key, value) : rd_tags_del(tags, key);
    if (rc == RD_EINVAL)
        snprintf(err, errlen, "'%s=%s' is not KEY=VALUE (A-Z a-z 0-9 . _ - : @ /)", key, value);
    else if (rc == RD_E2BIG)
        snprintf(err, errlen, "all tags together must fit in %d bytes", RD_TAGS_MAX);
    else if (rc == RD_ENOENT)
        snprintf(err, errlen, "no tag '%s'", key);
    return rc < 0 ? rc : apply_self(a, a->cfg.weight, a->cfg.zone, tags);
}

static int force_leave(struct rd_agent *a, const char *name, bool prune, char *err, size_t errlen)
{
    int status = rd_swim_status_of(a->swim, name);
    const char *was = status >= 0 ? rd_status_name(status) : "unknown";
    int rc = rd_swim_force_leave(a->swim, now_ms(), name, prune);
    if (rc == RD_ENOENT)
        snprintf(err, errlen, "no member named '%s'", name);
    else if (rc == RD_EINVAL)
        snprintf(err, errlen, "'%s' is this agent: use LEAVE", name);
    else if (rc == RD_EREFUSED)
        snprintf(err, errlen,
                 "'%s' is %s, not dead: FORCE-LEAVE %s PRUNE removes it anyway (if it is "
                 "really alive it refutes and comes back)",
                 name, was, name);
    if (rc == 0)
        rd_logf(RD_LOG_INFO, "member force-left", RD_FSTR("member", name), RD_FSTR("was", was),
                RD_FSTR("prune", prune ? "yes" : "no"));
    flush(a);
    return rc;
}

/* TAGS SET/DEL, WEIGHT and FORCE-LEAVE from the query socket (an admin peer). */
static int host_change(void *ctx, enum rd_query_change_op op, const char *arg, const char *arg2,
                       const struct rd_query_peer *peer, char *err, size_t errlen)
{
    struct rd_agent *a = ctx;
    static const char *const names[] = {"TAGS SET", "TAGS DEL", "WEIGHT", "FORCE-LEAVE"};
    int rc;
    if (op == RD_QUERY_FORCE_LEAVE)
        rc = force_leave(a, arg, arg2 != NULL, err, errlen);
    else if (op == RD_QUERY_WEIGHT)
        rc = change_weight(a, arg, err, errlen);
    else
        rc = change_tags(a, op == RD_QUERY_TAG_SET, arg, arg2 ? arg2 : "", err, errlen);
    if (rc == RD_EREFUSED && op != RD_QUERY_FORCE_LEAVE && a->leaving)
        snprintf(err, errlen, "this agent is leaving");
    rd_logf(rc == 0 ? RD_LOG_INFO : RD_LOG_WARN,
            rc == 0 ? "runtime change" : "runtime change refused", RD_FSTR("command", names[op]),
            RD_FSTR("arg", arg), RD_FSTR("value", arg2 ? arg2 : ""), RD_FUINT("by_uid", peer->uid),
            RD_FUINT("by_pid", peer->pid), RD_FSTR("error", rc == 0 ? "" : err));
    return rc;
}

/* Appends `word` to the comma-separated list in out (cap bytes). */
static void list_add(char *out, size_t cap, const char *word)
{
    size_t n = strlen(out);
    snprintf(out + n, cap - n, "%s%s", n ? "," : "", word);
}

/* An on|off switch as rd_config_secure() leaves it: unset reads on. */
static bool switch_on(enum rd_switch s)
{
    return s != RD_SWITCH_OFF;
}

/* The options that only take effect at start and differ in `next`, as a list. */
static void restart_only(const struct rd_agent_config *in, const struct rd_agent_config *next,
                         char *out, size_t cap)
{
    bool joins = in->njoins != next->njoins;
    for (int i = 0; i < in->njoins && !joins; i++)
        joins = strcmp(in->joins[i], next->joins[i]) != 0;
    bool hooks_differ = in->non_event != next->non_event;
    for (int i = 0; i < in->non_event && !hooks_differ; i++)
        hooks_differ = strcmp(in->on_event[i], next->on_event[i]) != 0;
    const struct {
        const char *name;
        bool differs;
    } opts[] = {
        {"name", strcmp(in->name, next->name) != 0},
        {"bind", strcmp(in->bind_text, next->bind_text) != 0},
        {"advertise", strcmp(in->advertise_text, next->advertise_text) != 0},
        {"join", joins},
        {"socket", strcmp(in->socket_path, next->socket_path) != 0},
        {"socket-mode", in->socket_mode != next->socket_mode},
        {"admin-group", strcmp(in->admin_group, next->admin_group) != 0},
        {"vnodes", in->vnodes != next->vnodes},
        {"ring", in->ring_mode != next->ring_mode || in->ring_mode_set != next->ring_mode_set},
        {"max-weight", in->max_weight != next->max_weight},
        {"seed", in->seed != next->seed},
        {"keyring-file", strcmp(in->keyring_path, next->keyring_path) != 0},
        {"cluster", strcmp(in->cluster, next->cluster) != 0},
        {"insecure-gossip", in->insecure_gossip != next->insecure_gossip},
        {"gossip-verify-incoming",
         switch_on(in->gossip_verify_incoming) != switch_on(next->gossip_verify_incoming)},
        {"gossip-verify-outgoing",
         switch_on(in->gossip_verify_outgoing) != switch_on(next->gossip_verify_outgoing)},
        {"on-event", hooks_differ},
        {"event-timeout", in->event_timeout_s != next->event_timeout_s},
        {"join-timeout", in->join_timeout_s != next->join_timeout_s},
        {"state-dir", strcmp(in->state_dir, next->state_dir) != 0},
        {"rejoin", in->rejoin != next->rejoin},
        {"profile", in->profile != next->profile},
        {"probe-refusals", switch_on(in->probe_refusals) != switch_on(next->probe_refusals)},
        {"dns-server", strcmp(in->dns_server, next->dns_server) != 0},
        {"metrics-addr", strcmp(in->metrics_text, next->metrics_text) != 0},
    };
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (opts[i].differs) list_add(out, cap, opts[i].name);
}

/*
 * SIGHUP's part for the options: the arguments are parsed again, --config file included.
 * What the file changed since it was last read is applied if it can change live (log
 * level and format, tags, zone, weight; the record goes out at a new incarnation); what
 * cannot is named as needing a restart and left alone. A weight, tag or zone changed at
 * run time by a socket command stays until the file changes that same option. A file
 * that does not parse changes nothing.
 */
static void reload_config(struct rd_agent *a)
{
    const char *path = a->cfg.config_path[0] ? a->cfg.config_path : "none";
    struct rd_agent_config *next = malloc(sizeof *next);
    char err[1024];
    int rc = next ? rd_config_reparse(next, a->cfg.argc, a->cfg.argv, err, sizeof err) : RD_ENOMEM;
    if (rc == RD_ENOMEM) snprintf(err, sizeof err, "out of memory");
    if (rc == 0 && next->weight > a->cfg.max_weight) {
        snprintf(err, sizeof err, "--weight %u.%03u is above --max-weight %u.%03u in force",
                 next->weight / RD_WEIGHT_ONE, next->weight % RD_WEIGHT_ONE,
                 a->cfg.max_weight / RD_WEIGHT_ONE, a->cfg.max_weight % RD_WEIGHT_ONE);
        rc = RD_EINVAL;
    }
    if (rc == 0 && a->ring_params.mode == RD_RING_MODE_KETAMA && next->weight % RD_WEIGHT_ONE) {
        snprintf(err, sizeof err,
                 "--weight %u.%03u is not a whole number: the cluster's ring is ketama",
                 next->weight / RD_WEIGHT_ONE, next->weight % RD_WEIGHT_ONE);
        rc = RD_EINVAL;
    }
    if (rc != 0) {
        rd_logf(RD_LOG_ERROR, "reload failed: the config in force stays", RD_FSTR("config", path),
                RD_FSTR("error", err));
        free(next);
        return;
    }
    const struct rd_agent_config *was = &a->loaded;
    char changed[256] = "", restart[512] = "";
    bool log_changed = next->log_level != was->log_level || next->log_format != was->log_format;
    if (next->log_level != was->log_level) list_add(changed, sizeof changed, "log-level");
    if (next->log_format != was->log_format) list_add(changed, sizeof changed, "log-format");
    bool tags = strcmp(next->tags, was->tags) != 0, zone = strcmp(next->zone, was->zone) != 0;
    bool weight = next->weight != was->weight;
    if (tags) list_add(changed, sizeof changed, "tag");
    if (zone) list_add(changed, sizeof changed, "zone");
    if (weight) list_add(changed, sizeof changed, "weight");
    restart_only(&a->cfg, next, restart, sizeof restart);
    if ((tags || zone || weight) &&
        apply_self(a, weight ? next->weight : a->cfg.weight, zone ? next->zone : a->cfg.zone,
                   tags ? next->tags : a->cfg.tags) < 0) {
        rd_logf(RD_LOG_ERROR, "reload failed: the config in force stays", RD_FSTR("config", path),
                RD_FSTR("error", "this agent is leaving"));
        free(next);
        return;
    }
    if (log_changed) {
        a->cfg.log_level = next->log_level;
        a->cfg.log_format = next->log_format;
        rd_log_setup(stderr, a->cfg.log_format, a->cfg.log_level);
    }
    struct rd_log_field f[] = {
        RD_FSTR("config", path),
        RD_FSTR("changed", changed[0] ? changed : "nothing changed"),
        RD_FDBL("weight", (double)a->cfg.weight / RD_WEIGHT_ONE),
        RD_FSTR("zone", a->cfg.zone),
        RD_FSTR("tags", a->cfg.tags),
        RD_FSTR("needs_restart", restart), /* last: only when an option needs one */
    };
    /* said even at a log level that hides info: the operator asked for it */
    rd_log(log_changed && !rd_log_enabled(RD_LOG_INFO) ? RD_LOG_WARN : RD_LOG_INFO, "reloaded", f,
           sizeof f / sizeof f[0] - (restart[0] ? 0 : 1));
    a->loaded = *next;
    free(next);
}

/*
 * SIGHUP re-reads what may change while the agent runs, one part after the other; each
 * part logs its own outcome and keeps what is in force when its source is bad, so SIGHUP
 * never stops the agent: the options (--config), then the keyring file.
 */
static void (*const reloaders[])(struct rd_agent *a) = {reload_config, reload_keyring};

static void on_sighup(uv_signal_t *s, int signum)
{
    for (size_t i = 0; i < sizeof reloaders / sizeof reloaders[0]; i++)
        reloaders[i](s->data);
}

/* SIGUSR1: the member table (RD_DUMP_MEMBERS_MAX lines at most) and the counters, logged. */
static void on_sigusr1(uv_signal_t *sig, int signum)
{
    struct rd_agent *a = sig->data;
    size_t count = rd_swim_member_count(a->swim);
    size_t shown = count < RD_DUMP_MEMBERS_MAX ? count : RD_DUMP_MEMBERS_MAX;
    rd_logf(RD_LOG_INFO, "dump: member table", RD_FUINT("members", count),
            RD_FUINT("listed", shown), RD_FUINT("limit", RD_DUMP_MEMBERS_MAX));
    for (size_t i = 0; i < shown; i++) {
        struct rd_member_view m;
        rd_swim_member(a->swim, i, &m);
        char addr[RD_ADDR_STRLEN];
        rd_logf(RD_LOG_INFO, "dump: member", RD_FSTR("member", m.name),
                RD_FSTR("addr", rd_addr_format(&m.addr, addr, sizeof addr)),
                RD_FSTR("status", rd_status_name(m.status)), RD_FUINT("incarnation", m.incarnation),
                RD_FDBL("weight", (double)m.weight / RD_WEIGHT_ONE), RD_FSTR("zone", m.zone),
                RD_FSTR("tags", m.tags));
    }
    const struct rd_swim_stats *st = rd_swim_stats(a->swim);
    size_t counts[4];
    rd_swim_counts(a->swim, counts);
    struct rd_sync_stats ss;
    rd_sync_stats(a->sync, &ss);
    rd_logf(RD_LOG_INFO, "dump: counters", RD_FUINT("members_alive", counts[RD_ALIVE]),
            RD_FUINT("members_suspect", counts[RD_SUSPECT]),
            RD_FUINT("members_dead", counts[RD_DEAD]), RD_FUINT("members_left", counts[RD_LEFT]),
            RD_FUINT("ring_version", a->ring_version),
            RD_FHEX("ring_checksum", rd_ring_checksum(a->ring)),
            RD_FHEX("member_checksum", rd_swim_checksum(a->swim)),
            RD_FUINT("packets_in", st->packets_in), RD_FUINT("packets_out", st->packets_out),
            RD_FUINT("packets_malformed", a->malformed_packets), RD_FUINT("probes", st->probes),
            RD_FUINT("probes_failed", st->probes_failed), RD_FUINT("refutes", st->refutes),
            RD_FUINT("syncs_in", st->syncs_in), RD_FUINT("syncs_out", st->syncs_out),
            RD_FUINT("syncs_failed", st->syncs_failed), RD_FUINT("syncs_malformed", ss.malformed),
            RD_FUINT("events_dropped", st->events_dropped),
            RD_FUINT("members_refused_full", st->members_refused_full),
            RD_FUINT("health", rd_swim_health(a->swim)),
            RD_FUINT("uptime_s", (now_ms() - a->start_ms) / 1000));
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

/* ---------------------------------------------------------------- the service manager */

/* A state for the service manager (notify.h); one that does not go out is logged. */
static void notify(struct rd_agent *a, const char *state)
{
    char err[256];
    if (rd_notify_send(a->notify, state, err, sizeof err) < 0)
        rd_logf(RD_LOG_WARN, "service manager not told", RD_FSTR("state", state),
                RD_FSTR("error", err));
}

/* READY=1 once the agent answers placement: at start for one that starts a cluster, when
 * it first joined for one given seeds (a Type=notify unit's start waits for it). */
static void notify_ready(struct rd_agent *a)
{
    a->ready_notified = true;
    size_t counts[4];
    rd_swim_counts(a->swim, counts);
    char state[RD_NOTIFY_STATE_MAX];
    snprintf(state, sizeof state, "READY=1\nSTATUS=%s: %zu members alive",
             a->needs_join ? "joined" : "started a cluster", counts[RD_ALIVE]);
    notify(a, state);
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
        .storm = rd_swim_storm(a->swim, now_ms()),
        .ring_version = a->ring_version,
        .ring_params = a->ring_params,
        .ring_params_source = a->ring_params_source,
        .weight = a->cfg.weight,
        .max_weight = a->cfg.max_weight,
        .members_weight_capped = a->weight_capped,
        .packets_malformed = a->malformed_packets,
        .packets_refused = a->refused_packets,
        .syncs_malformed = ss.malformed,
        .syncs_oversize = ss.oversize,
        .syncs_refused_source = ss.refused_source,
        .syncs_refused_full = ss.refused_full,
        .syncs_timed_out_header = ss.timed_out_header,
        .syncs_timed_out_frame = ss.timed_out_frame,
        .syncs_refused_ring = ss.ring_params,
        .packets_dropped = a->dropped,
        .syncs_dropped = rd_sync_dropped(a->sync),
        .verify_incoming = a->cfg.keyring.nkeys && a->cfg.gossip_verify_incoming != RD_SWITCH_OFF,
        .verify_outgoing = a->cfg.keyring.nkeys && a->cfg.gossip_verify_outgoing != RD_SWITCH_OFF,
        .keyring_keys = a->cfg.keyring.nkeys,
    };
    if (a->cfg.keyring.nkeys) rd_keyring_fingerprint(a->cfg.keyring.keys[0], out->keyring_primary);
    rd_hooks_stats(a->hooks, &out->hooks);
    snprintf(out->version, sizeof out->version, "%s", RINGD_VERSION);
    out->pid = (uint64_t)getpid();
    snprintf(out->config_file, sizeof out->config_file, "%s", a->cfg.config_path);
    snprintf(out->profile, sizeof out->profile, "%s", rd_swim_profile_name(a->cfg.profile));
}

/*
 * --join's seeds are names as often as addresses, and a name's hosts come and go (pods,
 * autoscaled groups): each round resolves every --join text again, without blocking the
 * loop, and hands the core the union of the answers (and the snapshot's seeds) as its new
 * seed list. A text that does not resolve counts as a failed join attempt (logged with
 * their rate limit) and keeps its last answer. Rounds follow the core's join backoff
 * (1 s doubling to join_retry_max_ms), and go on at the cap once joined: the core goes
 * back to the seeds when it finds itself alone.
 */
static bool same_addresses(const struct rd_addr *x, size_t nx, const struct rd_addr *y, size_t ny)
{
    if (nx != ny) return false;
    for (size_t i = 0; i < nx; i++) {
        bool found = false;
        for (size_t k = 0; k < ny && !found; k++)
            found = rd_addr_equal(&x[i], &y[k]);
        if (!found) return false;
    }
    return true;
}

static void seeds_resolved(void *ctx, const char *text, int rc, const struct rd_addr *addrs,
                           size_t n, const char *why)
{
    struct rd_agent *a = ctx;
    bool changed = false;
    for (int i = 0; i < a->cfg.njoins && rc == 0; i++) {
        if (strcmp(a->cfg.joins[i], text) != 0) continue;
        /* a name with more addresses than are kept gives a new sample at every round: said
         * when it first fills up, not at every round after */
        bool sampled = n == RD_DNS_ADDRS_MAX && a->njoin_addrs[i] == RD_DNS_ADDRS_MAX;
        changed |= !sampled && !same_addresses(a->join_addrs[i], a->njoin_addrs[i], addrs, n);
        memcpy(a->join_addrs[i], addrs, n * sizeof addrs[0]);
        a->njoin_addrs[i] = n;
    }
    if (changed) { /* said when a name's addresses change, not at every round */
        char list[RD_DNS_ADDRS_MAX * RD_ADDR_STRLEN] = "", one[RD_ADDR_STRLEN];
        for (size_t k = 0; k < n; k++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k ? "," : "",
                     rd_addr_format(&addrs[k], one, sizeof one));
        rd_logf(RD_LOG_INFO, "seed resolved", RD_FSTR("seed", text), RD_FSTR("addresses", list));
    }
    if (rc < 0 && !a->left && !agent_ready(a)) join_failed(a, text, why);
    seeds_answered(a);
}

/* One resolution of the round is in: after the last, the core gets the new seed list. */
static void seeds_answered(struct rd_agent *a)
{
    if (--a->seeds_pending > 0 || a->left) return;
    struct rd_addr all[RD_JOIN_MAX * RD_DNS_ADDRS_MAX + RD_JOIN_MAX];
    size_t room = sizeof all / sizeof all[0], nall = 0;
    for (int i = 0; i < a->cfg.njoins; i++)
        nall = rd_dns_merge(all, nall, room, a->join_addrs[i], a->njoin_addrs[i]);
    nall = rd_dns_merge(all, nall, room, a->snap_seeds, a->nsnap_seeds);
    if (nall > RD_SWIM_SEEDS_MAX) { /* more than the core keeps: each round, a new sample */
        struct rd_rand rng;
        rd_rand_seed(&rng, uv_hrtime());
        for (size_t i = 0; i < RD_SWIM_SEEDS_MAX; i++) {
            size_t j = i + rd_rand_below(&rng, (uint32_t)(nall - i));
            struct rd_addr t = all[i];
            all[i] = all[j];
            all[j] = t;
        }
        nall = RD_SWIM_SEEDS_MAX;
    }
    for (size_t i = 0; i < nall; i++)
        rd_sync_add_seed(a->sync, &all[i]);
    rd_swim_set_seeds(a->swim, now_ms(), all, nall);
    flush(a);
    struct rd_swim_config sc;
    rd_swim_config_profile(&sc, a->cfg.profile);
    uint32_t cap = sc.join_retry_max_ms;
    if (a->seeds_gap_ms == 0) a->seeds_gap_ms = JOIN_LOG_FIRST_GAP_MS;
    uv_timer_start(&a->seeds_timer, seeds_resolve, agent_ready(a) ? cap : a->seeds_gap_ms, 0);
    if (!agent_ready(a))
        uv_ref((uv_handle_t *)&a->seeds_timer);
    else
        uv_unref((uv_handle_t *)&a->seeds_timer); /* never keeps the loop alive once joined */
    a->seeds_gap_ms = a->seeds_gap_ms * 2 < cap ? a->seeds_gap_ms * 2 : cap;
}

static void seeds_resolve(uv_timer_t *t)
{
    struct rd_agent *a = t->data;
    if (a->left || a->seeds_pending) return;
    a->seeds_pending = 1; /* ours, until every text is asked */
    for (int i = 0; i < a->cfg.njoins; i++) {
        char why[256];
        if (rd_dns_resolve(a->dns, a->cfg.joins[i], RD_DEFAULT_PORT, seeds_resolved, a, NULL, why,
                           sizeof why) == 0)
            a->seeds_pending++;
        else if (!agent_ready(a))
            join_failed(a, a->cfg.joins[i], why);
    }
    seeds_answered(a);
}

/* The metrics text of this moment, in a->metrics_buf (grown as needed); NULL: no memory. */
static const char *metrics_text(struct rd_agent *a, size_t *len)
{
    struct rd_metrics_sample *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    snprintf(s->version, sizeof s->version, "%s", RINGD_VERSION);
    s->ready = agent_ready(a);
    size_t counts[4];
    rd_swim_counts(a->swim, counts);
    for (size_t i = 0; i < 4; i++)
        s->members[i] = counts[i];
    s->ring_points = rd_ring_point_count(a->ring);
    s->ring_members = rd_ring_member_count(a->ring);
    s->ring_version = a->ring_version;
    s->ring_checksum = rd_ring_checksum(a->ring);
    s->ring_rebuilds = a->rebuilds;
    s->rebuild_seconds = a->rebuild_seconds;
    s->ring_last_moved = a->last_moved;
    s->swim = *rd_swim_stats(a->swim);
    rd_sync_stats(a->sync, &s->sync);
    s->bytes_in = a->bytes_in;
    s->bytes_out = a->bytes_out;
    s->packets_malformed = a->malformed_packets;
    s->packets_refused = a->refused_packets;
    s->packets_dropped = a->dropped;
    s->syncs_dropped = rd_sync_dropped(a->sync);
    s->suspicions = a->suspicions;
    s->health = rd_swim_health(a->swim);
    s->storm = rd_swim_storm(a->swim, now_ms());
    if (a->query) {
        struct rd_query_stats qs;
        size_t n = rd_query_stats(a->query, &qs);
        s->ncommands = n < RD_METRICS_COMMANDS_MAX ? n : RD_METRICS_COMMANDS_MAX;
        for (size_t i = 0; i < s->ncommands; i++)
            s->command_names[i] = qs.names[i], s->command_counts[i] = qs.counts[i];
        s->connections = qs.connections;
        s->watchers = qs.watchers;
        s->connections_rejected = qs.rejected;
        s->connections_cut_off = qs.cut_off;
    }
    rd_metrics_server_counts(a->metrics, s);
    rd_metrics_read_process(&s->process);
    size_t need = rd_metrics_format(s, a->metrics_buf, a->metrics_cap);
    if (need >= a->metrics_cap) {
        char *grown = realloc(a->metrics_buf, need + 1);
        if (!grown) {
            free(s);
            return NULL;
        }
        a->metrics_buf = grown;
        a->metrics_cap = need + 1;
        rd_metrics_format(s, a->metrics_buf, a->metrics_cap);
    }
    free(s);
    *len = need;
    return a->metrics_buf;
}

static const char *host_metrics(void *ctx, size_t *len)
{
    return metrics_text(ctx, len);
}

/* The endpoint serves what was published last: fresh numbers once a period. */
static void on_metrics_timer(uv_timer_t *t)
{
    struct rd_agent *a = t->data;
    size_t len;
    const char *text = metrics_text(a, &len);
    if (text) rd_metrics_publish(a->metrics, text, len);
}

static void host_join(void *ctx, const char *hostport, const struct rd_addr *seed)
{
    struct rd_agent *a = ctx;
    rd_logf(RD_LOG_INFO, "joining", RD_FSTR("seed", hostport));
    if (rd_addr_equal(seed, &rd_swim_self(a->swim)->addr)) {
        rd_query_join_done(a->query, seed, "that is this agent's own address");
        return;
    }
    rd_sync_add_seed(a->sync, seed);
    if (!rd_swim_join(a->swim, now_ms(), seed, 1)) { /* else queued: flushed now */
        rd_query_join_done(a->query, seed, "too many exchanges pending: try again");
        return;
    }
    flush(a);
}

static bool host_ready(void *ctx)
{
    return agent_ready(ctx);
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
    uv_os_fd_t fd;
    if (a->cfg.probe_refusals != RD_SWITCH_OFF && uv_fileno((uv_handle_t *)&a->udp, &fd) == 0) {
        rc = rd_refusals_enable(fd, a->cfg.bind.family);
        if (rc < 0)
            rd_logf(RD_LOG_WARN, "refusals not reported: probes wait for their period",
                    RD_FSTR("error", uv_strerror(rc)));
        a->refusals_on = rc == 0;
    }
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
    struct rd_agent *a = arg;
    if (h == (uv_handle_t *)&a->builder.poll) return; /* rd_ring_builder_stop closes it */
    if (!uv_is_closing(h)) uv_close(h, NULL);
}

/* The signals an operator may send that have no work here never stop the agent without a
 * leave: SIGUSR1 is ignored until (and after) on_sigusr1 is in place, SIGUSR2 always, and
 * SIGPIPE (a query client gone mid-reply) always. */
static void ignore_operator_signals(void)
{
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
}

/* The builder thread, or (without one) builds on the loop, as at start. */
static void start_builder(struct rd_agent *a)
{
    int rc = rd_ring_builder_init(&a->builder, a->loop);
    if (rc == 0 && (rc = rd_ring_builder_start(&a->builder)) < 0)
        rd_ring_builder_stop(&a->builder); /* closes what init opened */
    a->builder_up = rc == 0;
    if (rc < 0)
        rd_logf(RD_LOG_WARN, "no ring builder thread: rings are built on the loop",
                RD_FSTR("error", rc == RD_EIO ? strerror(errno) : uv_strerror(rc)));
}

int rd_agent_run(const struct rd_agent_config *config)
{
    /* A reload request never stops the agent: ignored until on_sighup is in place, and
     * again once the loop closed it (libuv then restores the default, which kills). */
    signal(SIGHUP, SIG_IGN);
    ignore_operator_signals();
    rd_heap_keep_freed();
    rd_heap_grow_loop_heap(); /* before the loop allocates: no brk() while it is busy (heap.h) */
    struct rd_agent *a = calloc(1, sizeof *a);
    if (!a) return RD_ENOMEM;
    a->rebuild_pace = rd_pace_init(RD_REBUILD_COALESCE_MS, RD_REBUILD_GAP_MS, RD_REBUILD_GAP_MAX_MS,
                                   RD_REBUILD_ALLOWANCE_MS, RD_REBUILD_COST_FACTOR);
    a->cfg = *config;
    a->loaded = *config;
    sodium_memzero(&a->loaded.keyring, sizeof a->loaded.keyring); /* reload_keyring's part */
    rd_log_setup(stderr, a->cfg.log_format, a->cfg.log_level);
    char nerr[256];
    if (rd_notify_open(&a->notify, nerr, sizeof nerr) < 0)
        rd_logf(RD_LOG_WARN, "service manager not told", RD_FSTR("error", nerr));
    raise_fd_limit();
    a->loop = uv_default_loop();
    a->start_ms = now_ms();
    uv_loop_configure(a->loop, UV_METRICS_IDLE_TIME); /* for rd_deafness */
    rd_stall_meter_open(&a->stall);                   /* before any exit: the end closes it */
    start_builder(a);
    char err[512];
    int rc = RD_ENOMEM;
    a->rx_members = malloc(RD_PACKET_MAX_MEMBERS * sizeof *a->rx_members);
    if (!a->rx_members) goto out;
    if ((rc = pick_advertise(&a->cfg)) < 0) {
        rd_logf(RD_LOG_ERROR, "cannot pick an address to advertise",
                RD_FSTR("hint", "use --advertise HOST:PORT"));
        goto out;
    }
    /* the snapshot's members are seeds after --join's, as many as the core keeps */
    struct rd_addr seeds[RD_JOIN_MAX];
    size_t nsnap = 0;
    uint64_t prev_inc = 0;
    size_t room = RD_JOIN_MAX - (size_t)a->cfg.njoins;
    if (a->cfg.state_dir[0] &&
        (rc = snapshot_load(a, seeds + a->cfg.njoins, room, &nsnap, &prev_inc)) < 0)
        goto out;
    struct rd_member self = {
        .addr = a->cfg.advertise, .weight = a->cfg.weight, .incarnation = wall_ms()};
    /* a new life outranks everything said about the last one, even with the clock set back */
    if (self.incarnation <= prev_inc) self.incarnation = prev_inc + 1;
    snprintf(self.name, sizeof self.name, "%s", a->cfg.name);
    snprintf(self.zone, sizeof self.zone, "%s", a->cfg.zone);
    snprintf(self.tags, sizeof self.tags, "%s", a->cfg.tags);
    struct rd_swim_config sc;
    rd_swim_config_profile(&sc, a->cfg.profile);
    sc.act_on_refusals = a->cfg.probe_refusals != RD_SWITCH_OFF;
    uint64_t seed = a->cfg.seed ? a->cfg.seed : wall_ms() ^ ((uint64_t)getpid() << 32);
    a->swim = rd_swim_new(&sc, &self, seed, now_ms());
    a->ring_params =
        (struct rd_ring_params){RD_RING_SPEC, (uint8_t)a->cfg.ring_mode, (uint16_t)a->cfg.vnodes};
    a->ring_params_source = a->cfg.vnodes_set || a->cfg.ring_mode_set ? "set" : "default";
    if (!a->swim || empty_ring(a, &a->ring) < 0) {
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
    rd_sync_set_result(a->sync, on_sync_result);
    if ((rc = rd_dns_start(a->loop, a->cfg.dns_server, &a->dns, err, sizeof err)) < 0) {
        rd_logf(RD_LOG_ERROR, "cannot start", RD_FSTR("error", err));
        goto out;
    }
    uv_timer_init(a->loop, &a->seeds_timer);
    a->seeds_timer.data = a;
    /* with no seed (from --join or the snapshot) it starts a cluster: ready at once */
    a->needs_join = a->cfg.njoins > 0 || nsnap > 0;
    rd_sync_set_ring(a->sync, &a->ring_params,
                     (a->cfg.vnodes_set ? RD_SYNC_VNODES_SET : 0u) |
                         (a->cfg.ring_mode_set ? RD_SYNC_MODE_SET : 0u),
                     a->needs_join, on_ring_params);
    struct rd_query_host host = {.ctx = a,
                                 .ring = host_ring,
                                 .swim = host_swim,
                                 .status = host_status,
                                 .join = host_join,
                                 .leave = host_leave,
                                 .keyring_list = host_keyring_list,
                                 .keyring_change = host_keyring_change,
                                 .change = host_change,
                                 .join_default_port = RD_DEFAULT_PORT,
                                 .ready = host_ready,
                                 .dns = a->dns,
                                 .metrics = host_metrics};
    rc = rd_query_start(a->loop, &host, a->cfg.socket_path, a->cfg.socket_mode, a->cfg.admin_group,
                        &a->query, err, sizeof err);
    if (rc < 0) {
        rd_logf(RD_LOG_ERROR, "cannot start", RD_FSTR("error", err));
        goto out;
    }
    if (a->cfg.non_event &&
        (rc = rd_hooks_start(a->loop, a->cfg.on_event, (size_t)a->cfg.non_event,
                             a->cfg.event_timeout_s, &a->hooks, err, sizeof err)) < 0) {
        rd_logf(RD_LOG_ERROR, "cannot start", RD_FSTR("error", err));
        goto out;
    }
    uv_timer_init(a->loop, &a->tick_timer);
    uv_timer_init(a->loop, &a->rebuild_timer);
    uv_timer_init(a->loop, &a->trim_timer);
    uv_timer_init(a->loop, &a->leave_timer);
    uv_timer_init(a->loop, &a->join_timer);
    a->tick_timer.data = a->rebuild_timer.data = a->trim_timer.data = a->leave_timer.data = a;
    a->join_timer.data = a;
    (void)rd_deafness_start(&a->deafness, a->loop); /* without it, lag is the tick's own */
    if (a->needs_join && a->cfg.join_timeout_s) {
        uv_timer_start(&a->join_timer, on_join_timeout, (uint64_t)a->cfg.join_timeout_s * 1000u, 0);
        uv_unref((uv_handle_t *)&a->join_timer);
    }
    uv_unref((uv_handle_t *)&a->trim_timer); /* housekeeping never keeps the loop alive */
    uv_timer_init(a->loop, &a->snapshot_timer);
    a->snapshot_timer.data = a;
    uv_unref((uv_handle_t *)&a->snapshot_timer);
    uv_signal_init(a->loop, &a->sigterm);
    uv_signal_init(a->loop, &a->sigint);
    uv_signal_init(a->loop, &a->sighup);
    a->sigterm.data = a->sigint.data = a->sighup.data = a;
    uv_signal_start(&a->sigterm, on_signal, SIGTERM);
    uv_signal_start(&a->sigint, on_signal, SIGINT);
    uv_signal_start(&a->sighup, on_sighup, SIGHUP);
    uv_signal_init(a->loop, &a->sigusr1);
    a->sigusr1.data = a;
    uv_signal_start(&a->sigusr1, on_sigusr1, SIGUSR1);

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
    rebuild_ring_now(a); /* the ring of one: ourselves */
    if (a->cfg.metrics_text[0]) {
        if ((rc = rd_metrics_start(&a->cfg.metrics, &a->metrics, err, sizeof err)) < 0) {
            rd_logf(RD_LOG_ERROR, "cannot start", RD_FSTR("error", err));
            goto out;
        }
        uv_timer_init(a->loop, &a->metrics_timer);
        a->metrics_timer.data = a;
        uv_timer_start(&a->metrics_timer, on_metrics_timer, 0, RD_METRICS_PUBLISH_MS);
        uv_unref((uv_handle_t *)&a->metrics_timer);
        rd_logf(RD_LOG_INFO, "metrics served", RD_FSTR("addr", a->cfg.metrics_text),
                RD_FSTR("path", "/metrics"));
    }
    /* the snapshot's seeds now; --join's once resolved (seeds_resolve), and again after */
    memcpy(a->snap_seeds, &seeds[a->cfg.njoins], nsnap * sizeof seeds[0]);
    a->nsnap_seeds = nsnap;
    for (size_t i = 0; i < nsnap; i++)
        rd_sync_add_seed(a->sync, &a->snap_seeds[i]);
    if (nsnap) rd_swim_join(a->swim, now_ms(), a->snap_seeds, nsnap);
    if (a->cfg.njoins) seeds_resolve(&a->seeds_timer);
    if (a->needs_join) {
        char status[RD_NOTIFY_STATE_MAX];
        snprintf(status, sizeof status, "STATUS=joining through %zu seeds",
                 (size_t)a->cfg.njoins + nsnap);
        notify(a, status);
    }
    flush(a);
    uv_run(a->loop, UV_RUN_DEFAULT);
    rc = a->left ? a->exit_rc : RD_EIO; /* the loop ran dry: nothing left to serve */
    if (a->cfg.state_dir[0]) snapshot_save(a, "exit");
out:
    a->closing = true;
    rd_metrics_stop(a->metrics);
    if (a->query) rd_query_close(a->query);
    rd_dns_close(a->dns); /* before close_walk: it closes its own handles */
    rd_sync_close(a->sync);
    rd_hooks_close(a->hooks);
    uv_walk(a->loop, close_walk, a); /* sockets close here, before any wait for the thread */
    /* The builder's job is given up and its thread joined, at the loop's priority
     * (ringjob.h), so that the exit does not wait on a starved nice-19 thread. */
    if (a->builder_up) rd_ring_builder_stop(&a->builder);
    rd_stall_meter_close(&a->stall);
    signal(SIGHUP, SIG_IGN); /* closing on_sighup's handle restored the default */
    ignore_operator_signals();
    uv_run(a->loop, UV_RUN_DEFAULT);
    uv_loop_close(a->loop);
    rd_swim_delete(a->swim);
    rd_ring_delete(a->ring);
    free(a->rx_members);
    rd_notify_close(a->notify);
    free(a->metrics_buf);
    free(a);
    return rc;
}
