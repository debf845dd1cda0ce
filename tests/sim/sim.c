/*
 * sim.c — the discrete-event simulator (see sim.h).
 *
 * One binary heap orders everything that happens: packet deliveries, member ticks and the
 * slices of starved members, by (time, sequence number), so equal times resolve in a fixed
 * order. A member's tick is re-scheduled after anything touches it; stale heap entries are
 * skipped by generation. After a member handles something, its output queues are drained
 * at once: packets go through the real codec into the heap, syncs are carried out in
 * place, events counted.
 */
#include "sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rand.h"
#include "ring.h"
#include "wire.h"

#define BACKLOG_MAX 256 /* packets queued for a frozen member, as a socket buffer would */
#define SIM_PORT0   20000
#define SLICE_MS    1 /* how long a starved member runs once scheduled, virtual ms */

struct delivery {
    uint64_t time, order;
    uint32_t to, from;
    uint32_t tick_gen; /* for ticks, and for slices (a generation of their own) */
    bool is_tick;
    bool is_slice;   /* a starved member is scheduled (see "starvation") */
    bool is_refusal; /* `from`'s host refused a datagram of `to`'s (see sim_crash_process) */
    uint16_t len;
    char *data;
};

struct simm {
    struct rd_swim *swim;
    enum sim_state state;
    bool refuses; /* down, but its host answers datagrams with a refusal */
    bool leaving;
    uint64_t leave_deadline;
    char name[24];
    struct rd_addr addr;
    uint32_t tick_gen;
    uint64_t tick_at;
    uint32_t lives;
    struct delivery *backlog;
    size_t nbacklog;
    uint32_t starve_mean_ms, starve_max_ms; /* 0: runs whenever it has work */
    uint64_t slice_end;                     /* a starved member runs until then */
    uint32_t slice_gen;                     /* its chain of slices; a new one per starvation */
};

struct sim {
    uint64_t seed, now, order;
    struct rd_rand rng;
    struct rd_swim_config cfg;
    struct rd_strpool *strings; /* every member's names: one copy, not one per member */
    size_t n;
    struct simm *m;
    double *loss; /* n*n, from*n+to */
    bool *cut;    /* n*n */
    uint32_t delay_ms, jitter_ms;
    struct delivery *heap;
    size_t heap_len, heap_cap;
    uint64_t *events; /* n*4 counts: events about member i reaching status s */
    uint64_t *seen;   /* n counts: events member i saw (about anyone) */
    uint64_t false_deaths, packets_sent;
    uint64_t *false_deaths_about; /* n: false "dead" events about member i (measurement only) */
    uint64_t bytes_sent, syncs, sync_bytes; /* measurement only: never read by the sim */
    char *buf;                              /* encode buffer, big enough for a full sync */
    size_t buf_cap;
    struct rd_member *decoded;
    size_t *drain; /* members whose queues need draining */
    size_t ndrain;
};

/* ---------------------------------------------------------------- heap */

static bool before(const struct delivery *a, const struct delivery *b)
{
    return a->time != b->time ? a->time < b->time : a->order < b->order;
}

static void heap_push(struct sim *sim, struct delivery d)
{
    if (sim->heap_len == sim->heap_cap) {
        sim->heap_cap = sim->heap_cap ? sim->heap_cap * 2 : 1024;
        sim->heap = realloc(sim->heap, sim->heap_cap * sizeof *sim->heap);
        if (!sim->heap) abort();
    }
    d.order = sim->order++;
    size_t i = sim->heap_len++;
    while (i > 0 && before(&d, &sim->heap[(i - 1) / 2])) {
        sim->heap[i] = sim->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    sim->heap[i] = d;
}

static struct delivery heap_pop(struct sim *sim)
{
    struct delivery top = sim->heap[0];
    struct delivery last = sim->heap[--sim->heap_len];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= sim->heap_len) break;
        if (c + 1 < sim->heap_len && before(&sim->heap[c + 1], &sim->heap[c])) c++;
        if (!before(&sim->heap[c], &last)) break;
        sim->heap[i] = sim->heap[c];
        i = c;
    }
    if (sim->heap_len) sim->heap[i] = last;
    return top;
}

/* ---------------------------------------------------------------- members */

static int member_of_addr(const struct sim *sim, const struct rd_addr *a)
{
    if (a->family != 4 || a->ip[0] != 127 || a->port < SIM_PORT0 || a->port >= SIM_PORT0 + sim->n)
        return -1;
    return a->port - SIM_PORT0;
}

static int member_of_name(const struct sim *sim, const char *name)
{
    if (name[0] != 'm') return -1;
    char *end;
    unsigned long i = strtoul(name + 1, &end, 10);
    return *end == '\0' && i < sim->n ? (int)i : -1;
}

static void mark_drain(struct sim *sim, size_t i)
{
    for (size_t k = 0; k < sim->ndrain; k++)
        if (sim->drain[k] == i) return;
    sim->drain[sim->ndrain++] = i;
}

static void schedule_tick(struct sim *sim, size_t i)
{
    struct simm *m = &sim->m[i];
    if (m->state != SIM_UP || !m->swim) return;
    uint64_t t = rd_swim_next_tick(m->swim);
    if (t < sim->now) t = sim->now;
    if (t == m->tick_at) return;
    m->tick_at = t;
    heap_push(sim, (struct delivery){
                       .time = t, .to = (uint32_t)i, .is_tick = true, .tick_gen = ++m->tick_gen});
}

static bool link_up(const struct sim *sim, size_t a, size_t b)
{
    return !sim->cut[a * sim->n + b];
}

/* Encodes and decodes a packet through the real codec; aborts if the codec disagrees. */
static size_t roundtrip(struct sim *sim, const struct rd_packet *pkt, struct rd_packet *out)
{
    size_t len;
    int rc = rd_wire_encode(pkt, sim->buf, sim->buf_cap, &len);
    if (rc < 0) {
        fprintf(stderr, "sim: encode failed (%d), seed %llu\n", rc, (unsigned long long)sim->seed);
        abort();
    }
    const char *reason = NULL;
    rc = rd_wire_decode(sim->buf, len, out, sim->decoded, RD_MAX_MEMBERS, &reason);
    if (rc < 0) {
        fprintf(stderr, "sim: decode failed: %s, seed %llu\n", reason,
                (unsigned long long)sim->seed);
        abort();
    }
    return len;
}

static void do_sync(struct sim *sim, size_t i, const struct rd_addr *to)
{
    struct simm *a = &sim->m[i];
    int j = member_of_addr(sim, to);
    if (j < 0 || sim->m[j].state != SIM_UP || !link_up(sim, i, (size_t)j) ||
        !link_up(sim, (size_t)j, i)) {
        rd_swim_sync_failed(a->swim, sim->now, to);
        return;
    }
    struct simm *b = &sim->m[j];
    struct rd_packet pkt, in;
    /* every member builds the default ring: the frames carry its parameters, as the agent's */
    const struct rd_ring_params ring = {RD_RING_SPEC, RD_RING_MODE_RINGD, RD_RING_VNODES_DEFAULT};
    struct rd_member *state = rd_swim_sync_state(a->swim, RD_SYNC_REPLY, &pkt);
    if (!state) abort();
    pkt.msgs[0].ring = ring;
    sim->syncs++;
    sim->sync_bytes += roundtrip(sim, &pkt, &in);
    free(state);
    bool reply = rd_swim_sync_recv(b->swim, sim->now, &in);
    if (reply) {
        state = rd_swim_sync_state(b->swim, 0, &pkt);
        if (!state) abort();
        pkt.msgs[0].ring = ring;
        sim->sync_bytes += roundtrip(sim, &pkt, &in);
        free(state);
        rd_swim_sync_recv(a->swim, sim->now, &in);
        rd_swim_sync_done(a->swim, sim->now, to); /* our exchange was answered: joined */
    }
    mark_drain(sim, (size_t)j);
}

static void count_event(struct sim *sim, size_t viewer, const struct rd_swim_event *ev)
{
    int about = member_of_name(sim, ev->member.name);
    if (about < 0 || ev->member.status > RD_LEFT) return;
    sim->events[(size_t)about * 4 + ev->member.status]++;
    sim->seen[viewer]++;
    const struct simm *m = &sim->m[about];
    if (ev->member.status == RD_DEAD && m->state == SIM_UP && !m->leaving) {
        sim->false_deaths++;
        sim->false_deaths_about[about]++;
        if (getenv("RINGD_SIM_DEBUG"))
            fprintf(
                stderr,
                "sim %llu: %s declares %s dead at incarnation %llu (its own: %llu, accuser %s)\n",
                (unsigned long long)sim->now, sim->m[viewer].name, ev->member.name,
                (unsigned long long)ev->member.incarnation,
                (unsigned long long)rd_swim_self(m->swim)->incarnation, ev->member.accuser);
    }
}

static void drain_one(struct sim *sim, size_t i)
{
    struct simm *m = &sim->m[i];
    if (!m->swim || m->state == SIM_DOWN) return;
    struct rd_addr to;
    struct rd_packet pkt;
    while (rd_swim_poll_send(m->swim, sim->now, &to, &pkt)) {
        size_t len;
        int rc = rd_wire_encode(&pkt, sim->buf, RD_PACKET_BUDGET, &len);
        if (rc < 0) {
            fprintf(stderr, "sim: packet over budget, seed %llu\n", (unsigned long long)sim->seed);
            abort();
        }
        sim->packets_sent++;
        sim->bytes_sent += len;
        int j = member_of_addr(sim, &to);
        if (j < 0 || !link_up(sim, i, (size_t)j)) continue;
        double loss = sim->loss[i * sim->n + (size_t)j];
        if (loss > 0 && (double)(rd_rand_next(&sim->rng) >> 11) / 9007199254740992.0 < loss)
            continue;
        uint64_t delay = sim->delay_ms;
        if (sim->jitter_ms) delay += rd_rand_below(&sim->rng, sim->jitter_ms + 1);
        char *data = malloc(len);
        if (!data) abort();
        memcpy(data, sim->buf, len);
        heap_push(sim, (struct delivery){.time = sim->now + delay,
                                         .to = (uint32_t)j,
                                         .from = (uint32_t)i,
                                         .len = (uint16_t)len,
                                         .data = data});
    }
    while (rd_swim_poll_sync(m->swim, &to))
        do_sync(sim, i, &to);
    struct rd_swim_event ev;
    while (rd_swim_poll_event(m->swim, &ev))
        count_event(sim, i, &ev);
    if (m->leaving && (rd_swim_leave_done(m->swim) || sim->now >= m->leave_deadline)) {
        m->state = SIM_DOWN; /* its last packets are already on the wire */
        return;
    }
    schedule_tick(sim, i);
}

static void drain_all(struct sim *sim)
{
    while (sim->ndrain > 0)
        drain_one(sim, sim->drain[--sim->ndrain]);
}

/* Whether member i's process is on a CPU now: always, unless it is starved (see sim.h). */
static bool runs_now(const struct sim *sim, const struct simm *m)
{
    return m->starve_max_ms == 0 || sim->now <= m->slice_end;
}

/* The host of down member `dead` refuses a datagram from `to`: the refusal travels back
 * like a packet, with the link's delay and loss. */
static void send_refusal(struct sim *sim, uint32_t dead, uint32_t to)
{
    if (!link_up(sim, dead, to)) return;
    double loss = sim->loss[(size_t)dead * sim->n + to];
    if (loss > 0 && (double)(rd_rand_next(&sim->rng) >> 11) / 9007199254740992.0 < loss) return;
    uint64_t delay = sim->delay_ms;
    if (sim->jitter_ms) delay += rd_rand_below(&sim->rng, sim->jitter_ms + 1);
    heap_push(sim, (struct delivery){
                       .time = sim->now + delay, .to = to, .from = dead, .is_refusal = true});
}

static void deliver(struct sim *sim, struct delivery *d)
{
    struct simm *m = &sim->m[d->to];
    /* a frozen or descheduled member's packets wait in its socket buffer, while there is room */
    bool waits = m->state == SIM_FROZEN || (m->state == SIM_UP && !runs_now(sim, m));
    if (waits && m->nbacklog < BACKLOG_MAX) {
        m->backlog[m->nbacklog++] = *d;
        return;
    }
    if (!waits && m->state == SIM_DOWN && m->refuses && !d->is_refusal &&
        link_up(sim, d->from, d->to))
        send_refusal(sim, d->to, d->from);
    if (waits || m->state != SIM_UP || !link_up(sim, d->from, d->to)) {
        free(d->data);
        return;
    }
    if (d->is_refusal) {
        rd_swim_refused(m->swim, sim->now, &sim->m[d->from].addr);
        mark_drain(sim, d->to);
        return;
    }
    struct rd_packet pkt;
    const char *reason;
    if (rd_wire_decode(d->data, d->len, &pkt, sim->decoded, RD_PACKET_MAX_MEMBERS, &reason) == 0)
        rd_swim_recv(m->swim, sim->now, &sim->m[d->from].addr, &pkt);
    free(d->data);
    mark_drain(sim, d->to);
}

/* Delivers what waited in member i's socket buffer, in arrival order. */
static void deliver_backlog(struct sim *sim, size_t i)
{
    struct simm *m = &sim->m[i];
    size_t n = m->nbacklog;
    m->nbacklog = 0;
    for (size_t k = 0; k < n; k++)
        deliver(sim, &m->backlog[k]);
}

/* ---------------------------------------------------------------- starvation */

/* The gap before a starved member's next slice: uniform around the mean, within the max. */
static uint64_t starve_gap(struct sim *sim, const struct simm *m)
{
    uint32_t mean = m->starve_mean_ms, max = m->starve_max_ms;
    uint32_t lo = 2 * mean > max ? 2 * mean - max : 0;
    uint32_t hi = 2 * mean > max ? max : 2 * mean;
    return lo + rd_rand_below(&sim->rng, hi - lo + 1);
}

static void schedule_slice(struct sim *sim, size_t i, uint64_t at)
{
    heap_push(
        sim, (struct delivery){
                 .time = at, .to = (uint32_t)i, .is_slice = true, .tick_gen = sim->m[i].slice_gen});
}

/*
 * A starved member is scheduled: it runs for SLICE_MS. libuv's order applies: the timers
 * that came due while it waited run first, at the real (late) time and told how late they
 * are; then the packets in the socket buffer are read. Whatever it asks for within the
 * slice (a tick 1 ms on, a packet arriving) happens within the slice.
 */
static void run_slice(struct sim *sim, size_t i, uint32_t gen)
{
    struct simm *m = &sim->m[i];
    if (m->starve_max_ms == 0 || gen != m->slice_gen) return; /* the starvation it was of ended */
    m->slice_end = sim->now + SLICE_MS;
    schedule_slice(sim, i, m->slice_end + starve_gap(sim, m));
    if (m->state != SIM_UP) return;
    if (m->tick_at && m->tick_at <= sim->now) {
        uint64_t lag = sim->now - m->tick_at;
        m->tick_at = 0;
        m->tick_gen++; /* the tick that came due while it waited is this one */
        rd_swim_tick_lagged(m->swim, sim->now, lag);
    }
    deliver_backlog(sim, i);
    mark_drain(sim, i);
    drain_all(sim);
}

void sim_set_starve(struct sim *sim, size_t i, uint32_t mean_gap_ms, uint32_t max_gap_ms)
{
    if (mean_gap_ms > max_gap_ms) mean_gap_ms = max_gap_ms;
    for (size_t k = 0; k < sim->n; k++) {
        if (i != SIZE_MAX && k != i) continue;
        struct simm *m = &sim->m[k];
        bool was = m->starve_max_ms != 0;
        m->starve_mean_ms = mean_gap_ms;
        m->starve_max_ms = max_gap_ms;
        if (max_gap_ms && !was) {
            m->slice_gen++;
            m->slice_end = sim->now; /* runs now, then waits for its first slice */
            schedule_slice(sim, k, sim->now + 1 + starve_gap(sim, m)); /* its own phase */
        } else if (!max_gap_ms && m->state == SIM_UP) {
            deliver_backlog(sim, k); /* back on a CPU of its own: the buffer is read */
            m->tick_at = 0;
            mark_drain(sim, k);
        }
    }
    drain_all(sim);
}

/* ---------------------------------------------------------------- public */

struct sim *sim_new(size_t n, uint64_t seed, const struct rd_swim_config *cfg)
{
    struct sim *sim = calloc(1, sizeof *sim);
    if (!sim) abort();
    sim->n = n;
    sim->seed = seed;
    sim->now = 1000000;
    sim->cfg = *cfg;
    /* one pool for every member's strings: each holds the names of all the others */
    sim->strings = rd_strpool_new();
    if (!sim->strings) abort();
    rd_rand_seed(&sim->rng, seed);
    sim->m = calloc(n, sizeof *sim->m);
    sim->loss = calloc(n * n, sizeof *sim->loss);
    sim->cut = calloc(n * n, sizeof *sim->cut);
    sim->events = calloc(n * 4, sizeof *sim->events);
    sim->seen = calloc(n, sizeof *sim->seen);
    if (!sim->seen) abort();
    sim->false_deaths_about = calloc(n, sizeof *sim->false_deaths_about);
    sim->drain = calloc(n + 1, sizeof *sim->drain);
    sim->buf_cap = RD_WIRE_FRAME_MAX;
    sim->buf = malloc(sim->buf_cap);
    sim->decoded = malloc(RD_MAX_MEMBERS * sizeof *sim->decoded);
    if (!sim->m || !sim->loss || !sim->cut || !sim->events || !sim->false_deaths_about ||
        !sim->drain || !sim->buf || !sim->decoded)
        abort();
    for (size_t i = 0; i < n; i++) {
        struct simm *m = &sim->m[i];
        snprintf(m->name, sizeof m->name, "m%zu", i);
        m->addr =
            (struct rd_addr){.family = 4, .port = (uint16_t)(SIM_PORT0 + i), .ip = {127, 0, 0, 1}};
        m->state = SIM_DOWN;
        m->backlog = malloc(BACKLOG_MAX * sizeof *m->backlog);
        if (!m->backlog) abort();
    }
    return sim;
}

void sim_delete(struct sim *sim)
{
    if (!sim) return;
    for (size_t i = 0; i < sim->n; i++) {
        rd_swim_delete(sim->m[i].swim);
        for (size_t k = 0; k < sim->m[i].nbacklog; k++)
            free(sim->m[i].backlog[k].data);
        free(sim->m[i].backlog);
    }
    for (size_t k = 0; k < sim->heap_len; k++)
        free(sim->heap[k].data);
    free(sim->heap);
    free(sim->m);
    free(sim->loss);
    free(sim->cut);
    free(sim->events);
    free(sim->seen);
    free(sim->false_deaths_about);
    free(sim->drain);
    free(sim->buf);
    free(sim->decoded);
    rd_strpool_delete(sim->strings);
    free(sim);
}

uint64_t sim_now(const struct sim *sim)
{
    return sim->now;
}

uint64_t sim_seed(const struct sim *sim)
{
    return sim->seed;
}

void sim_start(struct sim *sim, size_t i, size_t seed_member)
{
    sim_start_as(sim, i, seed_member, i);
}

void sim_start_as(struct sim *sim, size_t i, size_t seed_member, size_t as)
{
    struct simm *m = &sim->m[i];
    rd_swim_delete(m->swim);
    struct rd_member self = {.addr = m->addr, .weight = RD_WEIGHT_ONE};
    snprintf(self.name, sizeof self.name, "%s", sim->m[as].name);
    /* a new life outranks the previous one: the incarnation is the (virtual) start time */
    self.incarnation = sim->now;
    uint64_t seed = sim->seed ^ (0x9E3779B97F4A7C15ull * (i + 1)) ^ ((uint64_t)++m->lives << 48);
    m->swim = rd_swim_new_shared(&sim->cfg, &self, seed, sim->now, sim->strings);
    if (!m->swim) abort();
    m->state = SIM_UP;
    m->refuses = false;
    m->leaving = false;
    m->tick_at = 0;
    if (seed_member != i) rd_swim_join(m->swim, sim->now, &sim->m[seed_member].addr, 1);
    mark_drain(sim, i);
    drain_all(sim);
}

void sim_start_all(struct sim *sim, size_t seed_member, uint64_t spread_ms)
{
    sim_start(sim, seed_member, seed_member);
    for (size_t i = 0; i < sim->n; i++) {
        if (i == seed_member) continue;
        if (spread_ms) sim_run(sim, spread_ms);
        sim_start(sim, i, seed_member);
    }
}

void sim_crash(struct sim *sim, size_t i)
{
    sim->m[i].state = SIM_DOWN;
    sim->m[i].refuses = false;
}

void sim_crash_process(struct sim *sim, size_t i)
{
    sim->m[i].state = SIM_DOWN;
    sim->m[i].refuses = true;
}

void sim_freeze(struct sim *sim, size_t i, bool frozen)
{
    struct simm *m = &sim->m[i];
    if (m->state == SIM_DOWN) return;
    m->state = frozen ? SIM_FROZEN : SIM_UP;
    if (frozen) return;
    /* thawed: the socket buffer is read first, then the overdue timers run */
    deliver_backlog(sim, i);
    m->tick_at = 0;
    mark_drain(sim, i);
    drain_all(sim);
}

void sim_leave(struct sim *sim, size_t i)
{
    struct simm *m = &sim->m[i];
    if (m->state != SIM_UP) return;
    rd_swim_leave(m->swim, sim->now);
    m->leaving = true;
    m->leave_deadline = sim->now + 5000;
    mark_drain(sim, i);
    drain_all(sim);
}

void sim_poke(struct sim *sim, size_t i)
{
    if (sim->m[i].state != SIM_UP) return;
    mark_drain(sim, i);
    drain_all(sim);
}

static void set_pairs(struct sim *sim, size_t a, size_t b, double loss, int cut)
{
    for (size_t x = 0; x < sim->n; x++)
        for (size_t y = 0; y < sim->n; y++) {
            if ((a != SIZE_MAX && x != a) || (b != SIZE_MAX && y != b) || x == y) continue;
            if (cut < 0)
                sim->loss[x * sim->n + y] = loss;
            else
                sim->cut[x * sim->n + y] = cut;
        }
}

void sim_set_loss(struct sim *sim, size_t a, size_t b, double loss)
{
    set_pairs(sim, a, b, loss, -1);
}

void sim_set_cut(struct sim *sim, size_t a, size_t b, bool cut)
{
    set_pairs(sim, a, b, 0, cut);
}

void sim_partition(struct sim *sim, size_t k, bool on)
{
    for (size_t x = 0; x < sim->n; x++)
        for (size_t y = 0; y < sim->n; y++)
            if ((x < k) != (y < k)) sim->cut[x * sim->n + y] = on;
}

void sim_set_delay(struct sim *sim, uint32_t delay_ms, uint32_t jitter_ms)
{
    sim->delay_ms = delay_ms;
    sim->jitter_ms = jitter_ms;
}

void sim_inject(struct sim *sim, size_t i, const struct rd_addr *from, const struct rd_packet *pkt)
{
    struct simm *m = &sim->m[i];
    if (m->state != SIM_UP) return;
    struct rd_packet got;
    roundtrip(sim, pkt, &got);
    rd_swim_recv(m->swim, sim->now, from, &got);
    mark_drain(sim, i);
    drain_all(sim);
}

void sim_refuse(struct sim *sim, size_t i, size_t about)
{
    struct simm *m = &sim->m[i];
    if (m->state != SIM_UP) return;
    rd_swim_refused(m->swim, sim->now, &sim->m[about].addr);
    mark_drain(sim, i);
    drain_all(sim);
}

void sim_run_until(struct sim *sim, uint64_t t)
{
    while (sim->heap_len > 0 && sim->heap[0].time <= t) {
        struct delivery d = heap_pop(sim);
        if (d.time > sim->now) sim->now = d.time;
        if (d.is_slice) {
            run_slice(sim, d.to, d.tick_gen);
            continue;
        }
        if (d.is_tick) {
            struct simm *m = &sim->m[d.to];
            if (d.tick_gen != m->tick_gen || m->state != SIM_UP) continue;
            if (!runs_now(sim, m)) continue; /* overdue: runs at its next slice (tick_at kept) */
            m->tick_at = 0;
            rd_swim_tick(m->swim, sim->now);
            mark_drain(sim, d.to);
        } else {
            deliver(sim, &d);
        }
        drain_all(sim);
    }
    if (t > sim->now) sim->now = t;
}

void sim_run(struct sim *sim, uint64_t ms)
{
    sim_run_until(sim, sim->now + ms);
}

uint64_t sim_run_until_pred(struct sim *sim, bool (*pred)(struct sim *, void *), void *arg,
                            uint64_t step_ms, uint64_t max_ms)
{
    uint64_t start = sim->now;
    while (!pred(sim, arg)) {
        if (sim->now - start >= max_ms) return UINT64_MAX;
        sim_run(sim, step_ms);
    }
    return sim->now - start;
}

struct rd_swim *sim_swim(struct sim *sim, size_t i)
{
    return sim->m[i].state == SIM_DOWN ? NULL : sim->m[i].swim;
}

enum sim_state sim_state(const struct sim *sim, size_t i)
{
    return sim->m[i].state;
}

size_t sim_size(const struct sim *sim)
{
    return sim->n;
}

const char *sim_name(const struct sim *sim, size_t i)
{
    return sim->m[i].name;
}

int sim_view(struct sim *sim, size_t viewer, size_t about)
{
    struct rd_swim *s = sim->m[viewer].swim;
    if (!s) return -1;
    return rd_swim_status_of(s, sim->m[about].name);
}

bool sim_all_see(struct sim *sim, size_t about, int status)
{
    for (size_t i = 0; i < sim->n; i++)
        if (i != about && sim->m[i].state == SIM_UP && sim_view(sim, i, about) != status)
            return false;
    return true;
}

bool sim_converged(struct sim *sim, size_t alive)
{
    bool first = true;
    uint64_t sum = 0;
    for (size_t i = 0; i < sim->n; i++) {
        if (sim->m[i].state != SIM_UP || sim->m[i].leaving) continue;
        size_t counts[4];
        rd_swim_counts(sim->m[i].swim, counts);
        if (counts[RD_ALIVE] != alive) return false;
        uint64_t c = rd_swim_checksum(sim->m[i].swim);
        if (!first && c != sum) return false;
        sum = c;
        first = false;
    }
    return true;
}

uint64_t sim_event_count(const struct sim *sim, size_t about, int status)
{
    return sim->events[about * 4 + (size_t)status];
}

uint64_t sim_false_deaths(const struct sim *sim)
{
    return sim->false_deaths;
}

uint64_t sim_packets_sent(const struct sim *sim)
{
    return sim->packets_sent;
}

uint64_t sim_false_deaths_about(const struct sim *sim, size_t about)
{
    return sim->false_deaths_about[about];
}

uint64_t sim_bytes_sent(const struct sim *sim)
{
    return sim->bytes_sent;
}

uint64_t sim_syncs(const struct sim *sim)
{
    return sim->syncs;
}

uint64_t sim_sync_bytes(const struct sim *sim)
{
    return sim->sync_bytes;
}

uint64_t sim_events_seen(const struct sim *sim, size_t viewer)
{
    return sim->seen[viewer];
}
