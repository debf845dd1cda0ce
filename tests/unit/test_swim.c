/*
 * test_swim.c — the membership core in the simulator: scenarios on fixed seeds.
 *
 * Each test builds a cluster of real cores on virtual time, does one thing to it, and
 * checks what every member concludes. The seed is printed; RINGD_SIM_SEED=N replays a
 * run with another seed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "rd_err.h"
#include "sim.h"
#include "suspicion.h"
#include "wire.h"

static uint64_t test_seed(uint64_t fixed)
{
    const char *env = getenv("RINGD_SIM_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 10) : fixed;
    printf("# seed %llu\n", (unsigned long long)seed);
    return seed;
}

static struct sim *cluster(size_t n, uint64_t seed)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct sim *sim = sim_new(n, test_seed(seed), &cfg);
    sim_start_all(sim, 0, 10);
    return sim;
}

static bool all_alive(struct sim *sim, void *arg)
{
    return sim_converged(sim, *(size_t *)arg);
}

struct seen {
    size_t about;
    int status;
};

static bool all_see(struct sim *sim, void *arg)
{
    struct seen *s = arg;
    return sim_all_see(sim, s->about, s->status);
}

/* Every running core passes its full invariant check (in any build type). */
static void assert_consistent(struct sim *sim)
{
    for (size_t i = 0; i < sim_size(sim); i++) {
        const char *why = NULL;
        if (sim_state(sim, i) == SIM_UP && rd_swim_check(sim_swim(sim, i), &why) != 0)
            fail_msg("member %zu: %s", i, why);
    }
}

static uint64_t converge(struct sim *sim, size_t alive, uint64_t max_ms)
{
    uint64_t t = sim_run_until_pred(sim, all_alive, &alive, 50, max_ms);
    printf("# %zu members agree after %llu ms\n", alive, (unsigned long long)t);
    assert_true(t != UINT64_MAX);
    assert_consistent(sim);
    return t;
}

static void join_and_agree(size_t n, uint64_t max_ms)
{
    struct sim *sim = cluster(n, 1000 + n);
    converge(sim, n, max_ms);
    /* and they stay agreed: no false suspicion on a quiet network */
    sim_run(sim, 60000);
    assert_true(sim_converged(sim, n));
    assert_int_equal(sim_false_deaths(sim), 0);
    sim_delete(sim);
}

static void test_three_members_join_and_agree(void **state)
{
    join_and_agree(3, 5000);
}

static void test_ten_members_join_and_agree(void **state)
{
    join_and_agree(10, 5000);
}

static void test_fifty_members_join_and_agree(void **state)
{
    join_and_agree(50, 10000);
}

/*
 * Thirty members started in the same instant agree within two gossip intervals: news of a
 * new member goes out a quarter interval after the last round instead of waiting for the
 * next one. At the plain cadence every seed here took three intervals or more.
 */
static void test_a_mass_join_outruns_the_gossip_cadence(void **state)
{
    for (uint64_t seed = 1; seed <= 8; seed++) {
        struct rd_swim_config cfg;
        rd_swim_config_default(&cfg);
        struct sim *sim = sim_new(30, test_seed(seed), &cfg);
        sim_start_all(sim, 0, 0);
        size_t n = 30;
        uint64_t t = sim_run_until_pred(sim, all_alive, &n, 50, 10000);
        printf("# 30 members started at once agree after %llu ms\n", (unsigned long long)t);
        assert_true(t <= 2 * cfg.gossip_interval_ms);
        assert_consistent(sim);
        sim_delete(sim);
    }
}

/* Suspect events (each member's view counted) over 5 minutes of 20 members at `loss`, with
 * `resends` direct resends per probe; *resent: the resends sent. */
static uint64_t suspicions_at(double loss, uint32_t resends, uint64_t *resent)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    cfg.probe_resends = resends;
    struct sim *sim = sim_new(20, test_seed(77), &cfg);
    sim_start_all(sim, 0, 10);
    converge(sim, 20, 5000);
    sim_set_loss(sim, SIZE_MAX, SIZE_MAX, loss);
    sim_run(sim, 300000);
    uint64_t suspicions = 0;
    *resent = 0;
    for (size_t i = 0; i < 20; i++) {
        suspicions += sim_event_count(sim, i, RD_SUSPECT);
        *resent += rd_swim_stats(sim_swim(sim, i))->probe_resends;
    }
    assert_int_equal(sim_false_deaths(sim), 0);
    sim_delete(sim);
    return suspicions;
}

/*
 * At 20% loss a probe whose ping or ack is lost tries the direct path once more beside the
 * indirect ones, so a live member is suspected half as often: 4,155 suspect events with the
 * indirect paths alone, 2,054 with the retry (no resends within the timeout, below).
 */
static void test_a_lost_ping_is_retried_directly(void **state)
{
    (void)state;
    uint64_t resent, suspicions = suspicions_at(0.20, 0, &resent);
    printf("# %llu suspicions at 20%% loss\n", (unsigned long long)suspicions);
    assert_true(suspicions <= 3000);
}

/*
 * Within the timeout an unanswered ping is sent again (cfg.probe_resends): at 20% loss the
 * direct path then seldom fails, and suspicions fall from about 2,000 to a few dozen. On a
 * clean network no resend is ever sent: the ACK always comes first.
 */
static void test_unanswered_pings_are_resent_within_the_timeout(void **state)
{
    (void)state;
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    uint64_t resent_clean, resent_lossy, once;
    uint64_t clean = suspicions_at(0, cfg.probe_resends, &resent_clean);
    uint64_t lossy = suspicions_at(0.20, cfg.probe_resends, &resent_lossy);
    uint64_t without = suspicions_at(0.20, 0, &once);
    printf("# suspicions: %llu clean (%llu resends), %llu at 20%% loss with %u resends per probe "
           "(%llu sent), %llu without\n",
           (unsigned long long)clean, (unsigned long long)resent_clean, (unsigned long long)lossy,
           cfg.probe_resends, (unsigned long long)resent_lossy, (unsigned long long)without);
    assert_int_equal(clean, 0);
    assert_int_equal(resent_clean, 0);
    assert_int_equal(once, 0);
    assert_true(resent_lossy > 0);
    assert_true(lossy * 20 < without);
}

static void test_crashed_member_is_declared_dead_by_all(void **state)
{
    struct sim *sim = cluster(10, 7);
    converge(sim, 10, 5000);
    sim_crash(sim, 5);
    struct seen s = {5, RD_DEAD};
    uint64_t t = sim_run_until_pred(sim, all_see, &s, 100, 60000);
    printf("# crash seen dead by all after %llu ms\n", (unsigned long long)t);
    uint32_t health = 0;
    for (int i = 0; i < 10; i++)
        if (i != 5) health += rd_swim_health(sim_swim(sim, i));
    printf("# their local health then, summed: %u\n", health);
    assert_true(t <= 15000);
    /* the helpers' NACKs came within the probes of the crashed member: no survivor took
     * the crash for its own slowness (8 when a relay waited a whole probe timeout) */
    assert_int_equal(health, 0);
    assert_int_equal(sim_false_deaths(sim), 0);
    assert_true(sim_converged(sim, 9));
    /* every probe sent ends once, acked or failed, so both counts only grow; the crashed
     * member's probes failed, the others' were acked */
    for (int i = 0; i < 10; i++) {
        if (i == 5) continue;
        const struct rd_swim_stats *st = rd_swim_stats(sim_swim(sim, i));
        assert_true(st->probes_acked + st->probes_failed <= st->probes);
        assert_true(st->probes_acked + st->probes_failed + 1 >= st->probes);
        assert_true(st->probes_acked > 0);
        assert_true(st->syncs_done > 0 || i == 0);
        assert_true(st->syncs_done + st->syncs_failed <= st->syncs_out);
    }
    sim_delete(sim);
}

static bool three_dead(struct sim *sim, void *arg)
{
    (void)arg;
    return sim_all_see(sim, 3, RD_DEAD) && sim_all_see(sim, 4, RD_DEAD) &&
           sim_all_see(sim, 5, RD_DEAD);
}

/* Three agents crash at once on running hosts. A survivor's probe of one of them often asks
 * another for help, and that PING_REQ is refused: the helper is gone, not late, so its
 * missing NACK must not count against the survivor's own health. */
static void test_a_refused_helper_costs_no_health(void **state)
{
    (void)state;
    struct sim *sim = cluster(10, 11);
    converge(sim, 10, 5000);
    for (size_t i = 3; i <= 5; i++)
        sim_crash_process(sim, i);
    uint64_t t = sim_run_until_pred(sim, three_dead, NULL, 100, 60000);
    uint32_t health = 0;
    uint64_t failed = 0, gone = 0;
    for (size_t i = 0; i < 10; i++) {
        if (i >= 3 && i <= 5) continue;
        health += rd_swim_health(sim_swim(sim, i));
        failed += rd_swim_stats(sim_swim(sim, i))->probes_failed;
        gone += rd_swim_stats(sim_swim(sim, i))->helpers_refused;
    }
    printf("# three crashes seen dead by all after %llu ms; %llu probes failed, %llu helpers "
           "refused; summed health %u\n",
           (unsigned long long)t, (unsigned long long)failed, (unsigned long long)gone, health);
    assert_true(t != UINT64_MAX);
    assert_true(failed >= 3);
    assert_true(gone > 0); /* the case this is about happened */
    assert_int_equal(health, 0);
    assert_int_equal(sim_false_deaths(sim), 0);
    sim_delete(sim);
}

/* Time until every other member sees member 5 of a converged 10-member cluster dead, after
 * it crashed as a host (silent) or as a process whose host refuses its datagrams. */
static uint64_t crash_seen_after(uint64_t seed, bool process, bool act_on_refusals,
                                 uint64_t *refused_probes)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    cfg.act_on_refusals = act_on_refusals;
    struct sim *sim = sim_new(10, seed, &cfg);
    sim_set_delay(sim, 1, 0); /* no jitter: the runs draw the same random numbers */
    sim_start_all(sim, 0, 10);
    size_t n = 10;
    assert_true(sim_run_until_pred(sim, all_alive, &n, 50, 5000) != UINT64_MAX);
    sim_run(sim, 3000);
    if (process)
        sim_crash_process(sim, 5);
    else
        sim_crash(sim, 5);
    struct seen s = {5, RD_DEAD};
    uint64_t t = sim_run_until_pred(sim, all_see, &s, 10, 60000);
    assert_int_equal(sim_false_deaths(sim), 0);
    assert_consistent(sim);
    *refused_probes = 0;
    for (size_t i = 0; i < 10; i++)
        if (i != 5) *refused_probes += rd_swim_stats(sim_swim(sim, i))->probes_refused;
    sim_delete(sim);
    return t;
}

static int compare_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/*
 * A crashed agent on a running host is suspected within a round trip: its host refuses the
 * probe, the helpers' pings are refused too, and the probe fails without waiting for its
 * period; the suspicion's confirmations come as fast. Over 21 seeds the median time until
 * all see it dead falls by more than the second a silent probe costs. Without
 * act_on_refusals the same run gives the silent host's times to the millisecond: the
 * refusals are what changed.
 */
static void test_a_crashed_process_is_found_sooner_than_a_silent_host(void **state)
{
    enum { SEEDS = 21 };
    uint64_t host[SEEDS], process[SEEDS], refused = 0;
    for (uint64_t k = 0; k < SEEDS; k++) {
        uint64_t seed = test_seed(500 + k), r;
        host[k] = crash_seen_after(seed, false, true, &r);
        assert_int_equal(r, 0);
        uint64_t ignored = crash_seen_after(seed, true, false, &r);
        assert_int_equal(ignored, host[k]);
        assert_int_equal(r, 0);
        process[k] = crash_seen_after(seed, true, true, &r);
        refused += r;
        printf("# seed %llu: host %llu ms, process %llu ms\n", (unsigned long long)seed,
               (unsigned long long)host[k], (unsigned long long)process[k]);
        assert_true(process[k] <= host[k]);
    }
    qsort(host, SEEDS, sizeof *host, compare_u64);
    qsort(process, SEEDS, sizeof *process, compare_u64);
    printf("# median: host %llu ms, process %llu ms; %llu probes failed on refusals\n",
           (unsigned long long)host[SEEDS / 2], (unsigned long long)process[SEEDS / 2],
           (unsigned long long)refused);
    assert_true(refused > 0);
    assert_true(process[SEEDS / 2] + 1000 <= host[SEEDS / 2]);
}

/*
 * Refusals are not authenticated (anyone can forge ICMP). Forged at the prober alone they
 * start no suspicion: the helpers still reach the member. Forged at every member as fast
 * as they probe, while 40% of the live member's datagrams are lost, they start
 * suspicions, but it refutes each one and nobody ever sees it dead.
 */
static void test_forged_refusals_cannot_kill_a_live_member(void **state)
{
    struct sim *sim = cluster(10, 91);
    sim_set_delay(sim, 20, 10);
    converge(sim, 10, 5000);
    for (int ms = 0; ms < 60000; ms += 5) {
        sim_refuse(sim, 0, 3);
        sim_run(sim, 5);
    }
    assert_int_equal(sim_event_count(sim, 3, RD_SUSPECT), 0);
    assert_true(rd_swim_stats(sim_swim(sim, 0))->probes > 50);

    sim_set_loss(sim, 3, SIZE_MAX, 0.4);
    uint64_t refused = 0;
    for (int ms = 0; ms < 120000; ms += 5) {
        for (size_t i = 0; i < 10; i++)
            if (i != 3) sim_refuse(sim, i, 3);
        sim_run(sim, 5);
    }
    for (size_t i = 0; i < 10; i++)
        if (i != 3) refused += rd_swim_stats(sim_swim(sim, i))->probes_refused;
    printf("# forged refusals everywhere: %llu probes failed on them, %llu suspect events\n",
           (unsigned long long)refused, (unsigned long long)sim_event_count(sim, 3, RD_SUSPECT));
    assert_true(refused > 0);
    assert_int_equal(sim_event_count(sim, 3, RD_DEAD), 0);
    assert_int_equal(sim_false_deaths(sim), 0);
    sim_set_loss(sim, 3, SIZE_MAX, 0);
    sim_run(sim, 10000);
    assert_true(sim_converged(sim, 10));
    assert_consistent(sim);
    sim_delete(sim);
}

static void test_unreachable_member_refutes_and_stays_alive(void **state)
{
    struct sim *sim = cluster(10, 11);
    converge(sim, 10, 5000);
    /* cut member 3 off both ways until someone suspects it, then let it answer again */
    sim_set_cut(sim, 3, SIZE_MAX, true);
    sim_set_cut(sim, SIZE_MAX, 3, true);
    uint64_t t = 0;
    while (sim_event_count(sim, 3, RD_SUSPECT) == 0 && t < 20000) {
        sim_run(sim, 100);
        t += 100;
    }
    assert_true(sim_event_count(sim, 3, RD_SUSPECT) > 0);
    sim_set_cut(sim, 3, SIZE_MAX, false);
    sim_set_cut(sim, SIZE_MAX, 3, false);
    struct seen s = {3, RD_ALIVE};
    t = sim_run_until_pred(sim, all_see, &s, 100, 20000);
    printf("# suspicion refuted, alive everywhere after %llu ms\n", (unsigned long long)t);
    assert_true(t != UINT64_MAX);
    assert_int_equal(sim_event_count(sim, 3, RD_DEAD), 0);
    sim_run(sim, 30000);
    assert_true(sim_converged(sim, 10));
    sim_delete(sim);
}

static void test_leave_is_seen_as_left_not_dead(void **state)
{
    struct sim *sim = cluster(10, 13);
    converge(sim, 10, 5000);
    sim_leave(sim, 4);
    struct seen s = {4, RD_LEFT};
    uint64_t t = sim_run_until_pred(sim, all_see, &s, 50, 10000);
    printf("# leave seen by all after %llu ms\n", (unsigned long long)t);
    assert_true(t <= 2000);
    sim_run(sim, 30000);
    assert_int_equal(sim_event_count(sim, 4, RD_DEAD), 0);
    assert_true(sim_all_see(sim, 4, RD_LEFT));
    sim_delete(sim);
}

/* Time for one piece of news (a leave) to reach every member, in gossip intervals. */
static double spread_rounds(size_t n, uint64_t seed)
{
    struct sim *sim = cluster(n, seed);
    converge(sim, n, 60000);
    sim_run(sim, 10000); /* let the join news die down */
    sim_leave(sim, n / 2);
    struct seen s = {n / 2, RD_LEFT};
    uint64_t t = sim_run_until_pred(sim, all_see, &s, 10, 60000);
    assert_true(t != UINT64_MAX);
    sim_delete(sim);
    return (double)t / 200.0;
}

static void test_dissemination_takes_logarithmic_rounds(void **state)
{
    double r16 = spread_rounds(16, 21), r64 = spread_rounds(64, 22), r256 = spread_rounds(256, 23);
    printf("# rounds to reach all: N=16 %.1f, N=64 %.1f, N=256 %.1f\n", r16, r64, r256);
    /* 16x the members must cost O(log N) more rounds, far from 16x (linear) */
    assert_true(r256 <= 3.0 * r16 + 2.0);
    assert_true(r256 <= 4.0 * 8.0); /* c * log2(256) with c = 4 */
}

/* ---- one core driven by hand: the dissemination queue */

static struct rd_member fake_member(unsigned k, uint64_t incarnation, uint8_t status)
{
    struct rd_member m = {.incarnation = incarnation, .status = status, .weight = RD_WEIGHT_ONE};
    snprintf(m.name, sizeof m.name, "n%u", k);
    m.addr = (struct rd_addr){.family = 4, .port = (uint16_t)(20000 + k), .ip = {127, 0, 0, 1}};
    return m;
}

/* A core named "self", alone, at `incarnation`, its random generator seeded with `seed`. */
static struct rd_swim *lone_core(const struct rd_swim_config *cfg, uint64_t incarnation,
                                 uint64_t seed)
{
    struct rd_member self = fake_member(0, incarnation, RD_ALIVE);
    snprintf(self.name, sizeof self.name, "self");
    struct rd_swim *s = rd_swim_new(cfg, &self, seed, 0);
    assert_non_null(s);
    return s;
}

/* Hands the core a full state: members n1..n<count> at one incarnation, all alive. */
static void feed_sync(struct rd_swim *s, struct rd_member *batch, unsigned count,
                      uint64_t incarnation)
{
    for (unsigned k = 0; k < count; k++)
        batch[k] = fake_member(k + 1, incarnation, RD_ALIVE);
    struct rd_packet pkt = {.nmsgs = 1, .nmembers = count, .members = batch};
    snprintf(pkt.from, sizeof pkt.from, "n1");
    pkt.msgs[0] = (struct rd_msg){.type = RD_MSG_SYNC};
    rd_swim_sync_recv(s, 0, &pkt);
}

/* n1 pings the core, carrying `news`; returns the ACK's piggybacked records. */
static const struct rd_member *ping_from_n1(struct rd_swim *s, uint32_t seq,
                                            const struct rd_member *news, size_t nnews, size_t *n)
{
    struct rd_packet ping = {.nmsgs = 1, .nmembers = nnews, .members = news};
    snprintf(ping.from, sizeof ping.from, "n1");
    ping.msgs[0] =
        (struct rd_msg){.type = RD_MSG_PING, .seq = seq, .checksum = rd_swim_checksum(s)};
    snprintf(ping.msgs[0].target, sizeof ping.msgs[0].target, "self");
    struct rd_member n1 = fake_member(1, 2, RD_ALIVE);
    rd_swim_recv(s, 0, &n1.addr, &ping);
    struct rd_addr to;
    struct rd_packet ack;
    assert_true(rd_swim_poll_send(s, 0, &to, &ack));
    assert_int_equal(ack.msgs[0].type, RD_MSG_ACK);
    assert_false(rd_swim_poll_send(s, 0, &to, &ack)); /* one answer per ping */
    *n = ack.nmembers;
    return ack.members;
}

static void test_fresh_news_overtakes_a_backlog_and_each_record_goes_out_its_quota(void **state)
{
    enum { N = 200 };
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = lone_core(&cfg, 1, 1);
    static struct rd_member batch[N];
    feed_sync(s, batch, N, 1);
    feed_sync(s, batch, N, 2); /* all N re-queued at the same quota: 4*ceil(log10(N+2)) */
    const unsigned quota = cfg.retransmit_mult * 3;

    unsigned sends[N + 1] = {0}, self_sends = 0, suspect_sends = 0;
    size_t n;
    const struct rd_member *got;
    for (uint32_t seq = 1; seq <= 3; seq++) { /* a few packets of join news go out */
        got = ping_from_n1(s, seq, NULL, 0, &n);
        for (size_t k = 0; k < n; k++)
            if (strcmp(got[k].name, "self") == 0)
                self_sends++;
            else
                sends[atoi(got[k].name + 1)]++;
    }
    /* n1 now says n7 is suspect: the very next packet carries it, ahead of ~2000 sends of
     * older news still queued */
    struct rd_member suspicion = fake_member(7, 2, RD_SUSPECT);
    snprintf(suspicion.accuser, sizeof suspicion.accuser, "n1");
    uint32_t seq = 4;
    got = ping_from_n1(s, seq++, &suspicion, 1, &n);
    bool carried = false;
    for (;;) {
        for (size_t k = 0; k < n; k++) {
            if (strcmp(got[k].name, "self") == 0)
                self_sends++;
            else if (got[k].status == RD_SUSPECT)
                suspect_sends++, carried = true;
            else
                sends[atoi(got[k].name + 1)]++;
        }
        assert_true(carried);
        if (n == 0) break;
        got = ping_from_n1(s, seq++, NULL, 0, &n);
        assert_true(seq < 10000); /* the queue drains */
    }
    /* every record went out exactly as often as queued: no more (the rate stays put), no
     * less (news is not lost) */
    for (unsigned k = 1; k <= N; k++)
        if (k != 7) assert_int_equal(sends[k], quota);
    assert_int_equal(suspect_sends, quota);
    assert_int_equal(self_sends, cfg.retransmit_mult); /* queued alone at N = 1 */
    rd_swim_delete(s);
}

static void test_name_conflict_stops_the_newcomer_and_keeps_the_original(void **state)
{
    struct sim *sim = cluster(6, 31);
    sim_crash(sim, 5);
    sim_run(sim, 30000); /* 5 is dead everywhere; its slot now hosts the impostor */
    converge(sim, 5, 20000);
    /* member 5 restarts claiming the name of member 2, which is alive elsewhere */
    sim_start_as(sim, 5, 0, 2);
    sim_run(sim, 5000);
    const struct rd_member *namesake = rd_swim_conflict(sim_swim(sim, 5));
    assert_non_null(namesake);
    assert_string_equal(namesake->name, "m2");
    assert_null(rd_swim_conflict(sim_swim(sim, 2)));
    /* everyone still has m2 at its own address */
    for (size_t i = 0; i < 5; i++) {
        struct rd_member m;
        assert_true(rd_swim_find(sim_swim(sim, i), "m2", &m));
        assert_int_equal(m.addr.port, rd_swim_self(sim_swim(sim, 2))->addr.port);
        assert_int_equal(m.status, RD_ALIVE);
    }
    sim_delete(sim);
}

/* A forged gossip datagram from an address outside the cluster, carrying one record. */
static void forge_record(struct sim *sim, size_t to, const struct rd_member *r)
{
    struct rd_packet pkt = {.nmembers = 1, .members = r};
    snprintf(pkt.from, sizeof pkt.from, "forger");
    struct rd_addr forger = {.family = 4, .port = 30999, .ip = {127, 0, 0, 1}};
    sim_inject(sim, to, &forger, &pkt);
}

static void test_forged_eviction_cannot_stop_a_member_from_refuting(void **state)
{
    struct sim *sim = cluster(5, 41);
    converge(sim, 5, 20000);
    const size_t v = 3;
    struct rd_member victim = *rd_swim_self(sim_swim(sim, v));
    uint64_t inc = victim.incarnation;
    /* at the end of the range, and 2^33 ahead: refused by everyone, the victim included */
    const uint64_t forged[] = {UINT64_MAX, inc + (UINT64_C(1) << 33)};
    for (size_t f = 0; f < 2; f++) {
        struct rd_member r = victim;
        r.incarnation = forged[f];
        r.status = f == 0 ? RD_LEFT : RD_DEAD;
        for (size_t i = 0; i < 5; i++)
            forge_record(sim, i, &r);
    }
    sim_run(sim, 5000);
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(sim_view(sim, i, v), RD_ALIVE);
        assert_int_equal(rd_swim_stats(sim_swim(sim, i))->incarnations_refused, 2);
    }
    assert_int_equal(rd_swim_self(sim_swim(sim, v))->incarnation, inc);
    /* a plausible forgery is believed, then refuted: alive everywhere again */
    struct rd_member r = victim;
    r.incarnation = inc + 1000;
    r.status = RD_LEFT;
    forge_record(sim, 1, &r);
    assert_int_equal(sim_view(sim, 1, v), RD_LEFT);
    struct seen alive = {v, RD_ALIVE};
    assert_true(sim_run_until_pred(sim, all_see, &alive, 100, 10000) != UINT64_MAX);
    assert_int_equal(rd_swim_self(sim_swim(sim, v))->incarnation, inc + 1001);
    sim_run(sim, 10000);
    assert_true(sim_all_see(sim, v, RD_ALIVE));
    assert_consistent(sim);
    sim_delete(sim);
}

static void test_incarnations_saturate_at_the_end_of_the_range(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = lone_core(&cfg, UINT64_MAX - 1, 1);
    /* suspected at the last incarnation: the refutation stays there instead of wrapping to 0 */
    struct rd_member accusation = *rd_swim_self(s);
    accusation.incarnation = UINT64_MAX;
    accusation.status = RD_SUSPECT;
    snprintf(accusation.accuser, sizeof accusation.accuser, "n1");
    size_t n;
    ping_from_n1(s, 1, &accusation, 1, &n);
    assert_int_equal(rd_swim_self(s)->incarnation, UINT64_MAX);
    rd_swim_leave(s, 0);
    assert_int_equal(rd_swim_self(s)->incarnation, UINT64_MAX);
    assert_int_equal(rd_swim_self(s)->status, RD_LEFT);
    rd_swim_delete(s);
}

/* Runs `s` alone until `until_ms`, dropping what it sends; with a `target`, stops at its
 * first PING to that member and returns the PING's seq (else 0). */
static uint32_t run_alone(struct rd_swim *s, uint64_t *now, uint64_t until_ms, const char *target)
{
    while (*now < until_ms) {
        uint64_t next = rd_swim_next_tick(s);
        *now = next < until_ms ? (next > *now ? next : *now + 1) : until_ms;
        rd_swim_tick(s, *now);
        struct rd_addr to;
        struct rd_packet out;
        uint32_t seq = 0;
        while (rd_swim_poll_send(s, *now, &to, &out))
            for (size_t k = 0; k < out.nmsgs; k++)
                if (target && !seq && out.msgs[k].type == RD_MSG_PING &&
                    strcmp(out.msgs[k].target, target) == 0)
                    seq = out.msgs[k].seq;
        if (seq) return seq;
    }
    return 0;
}

/*
 * A joiner's first sync names a suspect before the rest of the cluster. The suspicion is
 * merged while the core knows two members, whose timeout is 2 s; it must last what the
 * 101 members known a moment later give it (at least 2 x log10(101) s), or every joiner
 * of a busy cluster would declare the suspects of its first sync dead after 2 s.
 */
static void
test_a_suspect_merged_before_the_rest_of_a_sync_gets_the_whole_clusters_timeout(void **state)
{
    enum { N = 100 };
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = lone_core(&cfg, 1, 5);
    static struct rd_member batch[N];
    for (unsigned k = 0; k < N; k++)
        batch[k] = fake_member(k + 1, 1, RD_ALIVE);
    batch[0].status = RD_SUSPECT;
    snprintf(batch[0].accuser, sizeof batch[0].accuser, "n2");
    struct rd_packet pkt = {.nmsgs = 1, .nmembers = N, .members = batch};
    snprintf(pkt.from, sizeof pkt.from, "n2");
    pkt.msgs[0] = (struct rd_msg){.type = RD_MSG_SYNC};
    rd_swim_sync_recv(s, 0, &pkt);
    struct rd_suspicion_config scfg = {.probe_interval_ms = cfg.probe_interval_ms,
                                       .suspicion_mult = cfg.suspicion_mult,
                                       .suspicion_max_mult = cfg.suspicion_max_mult,
                                       .suspicion_confirmations = cfg.suspicion_confirmations};
    uint64_t small = rd_suspicion_timeout(&scfg, 2, 0),
             whole_min = rd_suspicion_timeout(&scfg, N + 1, 2);
    assert_int_equal(small, 2000);
    assert_true(whole_min > small + 1000);
    struct rd_member m;
    uint64_t now = 0;
    run_alone(s, &now, whole_min - 1, NULL);
    assert_true(rd_swim_find(s, "n1", &m));
    assert_int_equal(m.status, RD_SUSPECT);
    /* and it does end: by the longest timeout of the whole cluster at the latest */
    run_alone(s, &now, rd_suspicion_timeout(&scfg, N + 1, 0) + 1, NULL);
    assert_true(rd_swim_find(s, "n1", &m));
    assert_int_equal(m.status, RD_DEAD);
    rd_swim_delete(s);
}

/* A probe of n1 answered by `from_name` at `from`: does n1 stay alive? */
static uint8_t probe_answered_by(const char *from_name, const struct rd_addr *from)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = lone_core(&cfg, 1, 7);
    static struct rd_member batch[1];
    feed_sync(s, batch, 1, 1); /* n1 alone: no helper to ask, so a probe fails at its end */
    uint64_t now = 0;
    uint32_t seq = run_alone(s, &now, 2 * cfg.probe_interval_ms, "n1");
    assert_int_not_equal(seq, 0);
    struct rd_packet ack = {.nmsgs = 1};
    snprintf(ack.from, sizeof ack.from, "%s", from_name);
    ack.msgs[0] = (struct rd_msg){.type = RD_MSG_ACK, .seq = seq};
    rd_swim_recv(s, now, from, &ack);
    run_alone(s, &now, now + cfg.probe_interval_ms + 100,
              NULL); /* this probe judged, not the next */
    int status = rd_swim_status_of(s, "n1");
    assert_true(status >= 0);
    rd_swim_delete(s);
    return status;
}

static void test_only_the_probed_member_or_a_helper_can_answer_a_probe(void **state)
{
    struct rd_member n1 = fake_member(1, 1, RD_ALIVE);
    assert_int_equal(probe_answered_by("n1", &n1.addr), RD_ALIVE);
    /* the right seq from anyone else (a replay, a forger) completes nothing */
    struct rd_addr elsewhere = {.family = 4, .port = 30999, .ip = {127, 0, 0, 1}};
    assert_int_equal(probe_answered_by("forger", &elsewhere), RD_SUSPECT);
    assert_int_equal(probe_answered_by("forger", &n1.addr), RD_SUSPECT);
}

static void test_a_first_record_cannot_be_planted_beyond_reach(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct sim *sim = sim_new(6, test_seed(43), &cfg);
    for (size_t i = 0; i < 5; i++)
        sim_start(sim, i, 0);
    converge(sim, 5, 20000);
    /* n5 has never been heard of: a record at the end of the range would sit above anything
     * it can ever say, so it is refused; one within reach is taken, then outranked */
    struct rd_member planted = fake_member(5, UINT64_MAX, RD_DEAD);
    snprintf(planted.name, sizeof planted.name, "%s", sim_name(sim, 5));
    for (size_t i = 0; i < 5; i++)
        forge_record(sim, i, &planted);
    for (size_t i = 0; i < 5; i++) {
        assert_false(rd_swim_find(sim_swim(sim, i), sim_name(sim, 5), NULL));
        assert_int_equal(rd_swim_stats(sim_swim(sim, i))->incarnations_refused, 1);
    }
    sim_start(sim, 5, 0);
    converge(sim, 6, 20000);
    assert_true(sim_all_see(sim, 5, RD_ALIVE));
    sim_delete(sim);
}

/* The next packet `s` wants sent, or false. */
static bool next_out(struct rd_swim *s, struct rd_addr *to, struct rd_packet *pkt)
{
    return rd_swim_poll_send(s, 0, to, pkt);
}

static void test_a_stranger_gets_no_more_bytes_than_it_sent_and_no_relay(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = lone_core(&cfg, 1, 1);
    static struct rd_member batch[20];
    feed_sync(s, batch, 20, 1); /* plenty of news queued to piggyback */
    struct rd_addr to;
    struct rd_packet out;
    while (next_out(s, &to, &out)) {
    }
    /* the smallest PING that names us: one-letter sender, seq 1, checksum 0 */
    struct rd_packet ping = {.nmsgs = 1};
    snprintf(ping.from, sizeof ping.from, "x");
    ping.msgs[0] = (struct rd_msg){.type = RD_MSG_PING, .seq = 1};
    snprintf(ping.msgs[0].target, sizeof ping.msgs[0].target, "self");
    char buf[RD_PACKET_BUDGET];
    size_t ping_len, ack_len;
    assert_int_equal(rd_wire_encode(&ping, buf, sizeof buf, &ping_len), 0);
    struct rd_addr stranger = {.family = 4, .port = 30999, .ip = {127, 0, 0, 1}};
    rd_swim_recv(s, 0, &stranger, &ping);
    assert_true(next_out(s, &to, &out));
    assert_true(rd_addr_equal(&to, &stranger));
    assert_int_equal(out.msgs[0].type, RD_MSG_ACK);
    assert_int_equal(out.nmembers, 0);
    assert_int_equal(rd_wire_encode(&out, buf, sizeof buf, &ack_len), 0);
    assert_true(ack_len <= ping_len);
    assert_int_equal(rd_swim_stats(s)->replies_trimmed, 1);
    /* a member we know, at its own address, gets the news with its ACK */
    size_t n;
    ping_from_n1(s, 2, NULL, 0, &n);
    assert_true(n > 0);
    /* PING_REQ from the stranger: not relayed; from n1: relayed */
    struct rd_packet req = {.nmsgs = 1};
    snprintf(req.from, sizeof req.from, "x");
    req.msgs[0] = (struct rd_msg){.type = RD_MSG_PING_REQ, .seq = 3};
    snprintf(req.msgs[0].target, sizeof req.msgs[0].target, "n2");
    req.msgs[0].target_addr = batch[1].addr;
    rd_swim_recv(s, 0, &stranger, &req);
    assert_false(next_out(s, &to, &out));
    assert_int_equal(rd_swim_stats(s)->ping_reqs_refused, 1);
    snprintf(req.from, sizeof req.from, "n1");
    rd_swim_recv(s, 0, &batch[0].addr, &req);
    assert_true(next_out(s, &to, &out));
    assert_int_equal(out.msgs[0].type, RD_MSG_PING);
    assert_true(rd_addr_equal(&to, &batch[1].addr));
    rd_swim_delete(s);
}

/* A namesake record for `s`'s name at another address, older than `s`, via n1. */
static void namesake_from_n1(struct rd_swim *s, const struct rd_addr *where)
{
    struct rd_member twin = *rd_swim_self(s);
    twin.addr = *where;
    twin.incarnation = 1;
    struct rd_packet pkt = {.nmembers = 1, .members = &twin};
    snprintf(pkt.from, sizeof pkt.from, "n1");
    struct rd_member n1 = fake_member(1, 2, RD_ALIVE);
    rd_swim_recv(s, 0, &n1.addr, &pkt);
}

static void test_an_established_member_keeps_its_name_against_a_namesake(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_addr other = {.family = 4, .port = 30999, .ip = {127, 0, 0, 1}};
    for (int established = 0; established < 2; established++) {
        struct rd_swim *s = lone_core(&cfg, 100, 1);
        size_t n;
        /* n1 lists us alive at our address (established), or has not yet (joining) */
        struct rd_member me = *rd_swim_self(s); /* a copy: the core may write its own */
        ping_from_n1(s, 1, established ? &me : NULL, established ? 1 : 0, &n);
        assert_int_equal(rd_swim_established(s), established);
        namesake_from_n1(s, &other);
        struct rd_addr to;
        struct rd_packet out;
        uint32_t probe = 0;
        while (next_out(s, &to, &out))
            if (rd_addr_equal(&to, &other) && out.nmsgs && out.msgs[0].type == RD_MSG_PING)
                probe = out.msgs[0].seq;
        /* the namesake answers every probe */
        struct rd_packet ack = {.nmsgs = 1};
        snprintf(ack.from, sizeof ack.from, "self");
        ack.msgs[0] = (struct rd_msg){.type = RD_MSG_ACK, .seq = probe};
        rd_swim_recv(s, 0, &other, &ack);
        if (established) {
            assert_int_equal(probe, 0);
            assert_null(rd_swim_conflict(s));
            assert_int_equal(rd_swim_stats(s)->namesakes_ignored, 1);
            struct rd_swim_event ev;
            bool reported = false;
            while (rd_swim_poll_event(s, &ev))
                reported |= ev.conflict && ev.self && rd_addr_equal(&ev.other_addr, &other);
            assert_true(reported);
        } else {
            assert_int_not_equal(probe, 0);
            assert_non_null(rd_swim_conflict(s));
        }
        rd_swim_delete(s);
    }
}

static void test_a_full_member_table_counts_what_it_refuses(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = lone_core(&cfg, 1, 1);
    static struct rd_member batch[RD_MAX_MEMBERS];
    feed_sync(s, batch, RD_MAX_MEMBERS - 1, 1);
    assert_int_equal(rd_swim_member_count(s), RD_MAX_MEMBERS);
    assert_int_equal(rd_swim_stats(s)->members_refused_full, 0);
    struct rd_member extra = fake_member(RD_MAX_MEMBERS, 1, RD_ALIVE);
    snprintf(extra.name, sizeof extra.name, "extra");
    size_t n;
    ping_from_n1(s, 1, &extra, 1, &n);
    assert_int_equal(rd_swim_member_count(s), RD_MAX_MEMBERS);
    assert_false(rd_swim_find(s, "extra", NULL));
    assert_int_equal(rd_swim_stats(s)->members_refused_full, 1);
    rd_swim_delete(s);
}

static void test_restarted_member_is_alive_again_everywhere(void **state)
{
    struct sim *sim = cluster(10, 37);
    converge(sim, 10, 5000);
    sim_crash(sim, 0); /* even the seed */
    struct seen dead = {0, RD_DEAD};
    assert_true(sim_run_until_pred(sim, all_see, &dead, 100, 60000) != UINT64_MAX);
    sim_start(sim, 0, 1);
    struct seen alive = {0, RD_ALIVE};
    uint64_t t = sim_run_until_pred(sim, all_see, &alive, 50, 10000);
    printf("# restarted member alive everywhere after %llu ms\n", (unsigned long long)t);
    assert_true(t <= 5000);
    sim_run(sim, 30000);
    assert_true(sim_all_see(sim, 0, RD_ALIVE));
    assert_true(sim_converged(sim, 10));
    sim_delete(sim);
}

/*
 * A member whose seed is not there yet tries again soon, then less and less often: within
 * the first second it has tried about four times (at 0 and after gaps of about 100, 200 and
 * 400 ms; whatever the jitter, 3 to 5), within 10 s no more than 9, and it joins as soon as
 * the seed is up.
 */
static void test_join_retries_start_soon_and_back_off(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct sim *sim = sim_new(2, test_seed(51), &cfg);
    sim_start(sim, 1, 0); /* member 0, its seed, is down */
    sim_run(sim, 1000);
    const struct rd_swim_stats *st = rd_swim_stats(sim_swim(sim, 1));
    printf("# %llu join attempts in 1 s\n", (unsigned long long)st->syncs_out);
    assert_true(st->syncs_out >= 3 && st->syncs_out <= 5);
    sim_run(sim, 9000);
    printf("# %llu join attempts in 10 s\n", (unsigned long long)st->syncs_out);
    assert_true(st->syncs_out <= 9);
    assert_false(rd_swim_joined(sim_swim(sim, 1)));
    sim_start(sim, 0, 0);
    converge(sim, 2, 20000);
    sim_delete(sim);
}

static void test_restarted_seed_without_join_is_found_again(void **state)
{
    struct sim *sim = cluster(10, 41);
    converge(sim, 10, 5000);
    sim_crash(sim, 0);
    struct seen dead = {0, RD_DEAD};
    assert_true(sim_run_until_pred(sim, all_see, &dead, 100, 60000) != UINT64_MAX);
    sim_start(sim, 0, 0); /* the seed comes back alone: the others must reach out */
    uint64_t t = converge(sim, 10, 30000);
    assert_true(t <= 15000);
    sim_delete(sim);
}

static void test_partition_heals_into_one_cluster(void **state)
{
    struct sim *sim = cluster(20, 43);
    converge(sim, 20, 5000);
    sim_partition(sim, 10, true);
    sim_run(sim, 5 * 60000);
    /* each side has declared the other dead */
    assert_true(sim_view(sim, 0, 15) == RD_DEAD);
    assert_true(sim_view(sim, 15, 0) == RD_DEAD);
    sim_partition(sim, 10, false);
    uint64_t t = converge(sim, 20, 60000);
    printf("# healed partition agrees after %llu ms\n", (unsigned long long)t);
    assert_true(t <= 15000);
    sim_delete(sim);
}

static void test_hundred_members_with_ten_percent_loss_have_no_false_deaths(void **state)
{
    struct sim *sim = cluster(100, 47);
    converge(sim, 100, 20000);
    sim_set_loss(sim, SIZE_MAX, SIZE_MAX, 0.10);
    sim_run(sim, 10 * 60000);
    printf("# 10 min at 10%% loss: %llu false deaths, %llu suspicions of m50\n",
           (unsigned long long)sim_false_deaths(sim),
           (unsigned long long)sim_event_count(sim, 50, RD_SUSPECT));
    assert_int_equal(sim_false_deaths(sim), 0);
    sim_set_loss(sim, SIZE_MAX, SIZE_MAX, 0.0);
    converge(sim, 100, 30000);
    sim_delete(sim);
}

/* Crash detection while members are starved (below): a member's probes stretch with its
 * lag, news spreads at the pace of the starved, and the storm score stretches suspicions
 * while members keep refuting. 50 s and 41 s in the two cells here, 38-74 s (worst of 5)
 * in the sweep's starved cells, against 6-9 s unstarved; the bound is above the worst. */
#define STARVED_DETECT_MAX_MS 120000

/* Crashes member `victim` of a starved cluster: every member must see it dead within
 * STARVED_DETECT_MAX_MS, and nobody else die meanwhile. */
static void crash_is_seen_while_starved(struct sim *sim, size_t victim)
{
    sim_crash(sim, victim);
    struct seen dead = {victim, RD_DEAD};
    uint64_t t = sim_run_until_pred(sim, all_see, &dead, 100, STARVED_DETECT_MAX_MS);
    printf("# crash under starvation seen by all after %llu ms\n", (unsigned long long)t);
    assert_true(t != UINT64_MAX);
    assert_int_equal(sim_false_deaths(sim), 0);
}

/*
 * Every member starved of CPU at once, as in a join storm on a shared host: each runs in
 * 1 ms slices 0-3 s apart (mean 1.5 s, three probe timeouts), and finds the answers that
 * came in time queued behind its overdue timers. Nobody may be declared dead, and a real
 * crash under the same starvation must still be seen by all.
 */
static void test_starved_members_have_no_false_deaths_and_still_see_a_crash(void **state)
{
    struct sim *sim = cluster(100, 76);
    converge(sim, 100, 20000);
    sim_set_starve(sim, SIZE_MAX, 1500, 3000);
    sim_run(sim, 10 * 60000);
    uint64_t suspicions = 0;
    for (size_t i = 0; i < 100; i++)
        suspicions += sim_event_count(sim, i, RD_SUSPECT);
    printf("# 10 min starved: %llu false deaths, %llu suspicions, m1 saw %llu late ticks\n",
           (unsigned long long)sim_false_deaths(sim), (unsigned long long)suspicions,
           (unsigned long long)rd_swim_stats(sim_swim(sim, 1))->late_ticks);
    assert_int_equal(sim_false_deaths(sim), 0);
    crash_is_seen_while_starved(sim, 50);
    sim_set_starve(sim, SIZE_MAX, 0, 0);
    converge(sim, 99, 30000);
    sim_delete(sim);
}

/*
 * A storm where the accusers are on time and their suspects are not, as in a 1,000-agent
 * spawn: ten members are starved, so the others keep suspecting them and they keep
 * refuting. Then a healthy member misses every slice for 15 s, as loops did that waited
 * 6-16 s runnable in those storms. Its accusers, with local health 0 and confirmations
 * from each other, take it for dead within 5.5-7.3 s without the storm score (seeds 78-79;
 * member 60, and 95, itself one of the starved); the refutations they saw stretch that. A
 * real crash under the same storm must still be seen by all, and once the storm is over
 * the same freeze is a death again, as in a quiet cluster.
 */
static void test_a_storm_of_refutations_spares_the_late_and_still_sees_a_crash(void **state)
{
    struct sim *sim = cluster(100, 78);
    converge(sim, 100, 20000);
    for (size_t i = 90; i < 100; i++)
        sim_set_starve(sim, i, 1500, 3000);
    sim_run(sim, 60000);
    uint32_t storm = rd_swim_storm(sim_swim(sim, 1), sim_now(sim));
    printf("# storm score at a healthy member after 60 s: %u\n", storm);
    assert_true(storm >= 4);
    sim_freeze(sim, 60, true);
    sim_run(sim, 15000);
    sim_freeze(sim, 60, false);
    sim_run(sim, 10000);
    printf("# m60 frozen 15 s in the storm: seen dead %llu times; %llu false deaths\n",
           (unsigned long long)sim_event_count(sim, 60, RD_DEAD),
           (unsigned long long)sim_false_deaths(sim));
    assert_int_equal(sim_event_count(sim, 60, RD_DEAD), 0);
    assert_int_equal(sim_false_deaths(sim), 0);
    crash_is_seen_while_starved(sim, 20);
    for (size_t i = 90; i < 100; i++)
        sim_set_starve(sim, i, 0, 0);
    converge(sim, 99, 30000);
    sim_run(sim, 20000); /* two windows with no refutation: the storm is over */
    assert_int_equal(rd_swim_storm(sim_swim(sim, 1), sim_now(sim)), 0);
    sim_freeze(sim, 60, true);
    struct seen frozen = {60, RD_DEAD};
    uint64_t t = sim_run_until_pred(sim, all_see, &frozen, 100, 15000);
    printf("# after the storm, m60 frozen is seen dead by all after %llu ms\n",
           (unsigned long long)t);
    assert_true(t != UINT64_MAX);
    sim_delete(sim);
}

static bool someone_suspects(struct sim *sim, void *arg)
{
    size_t about = *(size_t *)arg;
    for (size_t i = 0; i < sim_size(sim); i++)
        if (i != about && sim_state(sim, i) == SIM_UP && sim_view(sim, i, about) == RD_SUSPECT)
            return true;
    return false;
}

/* A member restarted while suspected comes back at an incarnation from the clock, far above
 * its last life's: no refutation, and three such restarts are no storm. */
static void test_restarts_while_suspected_are_no_storm(void **state)
{
    struct sim *sim = cluster(30, 79);
    converge(sim, 30, 10000);
    for (size_t m = 5; m < 8; m++) {
        sim_freeze(sim, m, true);
        assert_true(sim_run_until_pred(sim, someone_suspects, &m, 50, 10000) != UINT64_MAX);
        sim_crash(sim, m);
        sim_start(sim, m, 0);
    }
    converge(sim, 30, 10000);
    for (size_t i = 0; i < 30; i++)
        assert_int_equal(rd_swim_storm(sim_swim(sim, i), sim_now(sim)), 0);
    sim_delete(sim);
}

static void test_frozen_member_is_declared_dead_then_refutes_after_thaw(void **state)
{
    struct sim *sim = cluster(10, 53);
    converge(sim, 10, 5000);
    /* suspicion timeout at N=10 is 2 s to 24 s (Lifeguard); freeze for 2x the longest */
    sim_freeze(sim, 6, true);
    struct seen dead = {6, RD_DEAD};
    uint64_t t = sim_run_until_pred(sim, all_see, &dead, 100, 48000);
    printf("# frozen member declared dead by all after %llu ms\n", (unsigned long long)t);
    assert_true(t != UINT64_MAX);
    sim_run(sim, 48000 - t);
    sim_freeze(sim, 6, false);
    struct seen alive = {6, RD_ALIVE};
    t = sim_run_until_pred(sim, all_see, &alive, 50, 20000);
    printf("# thawed member alive everywhere after %llu ms\n", (unsigned long long)t);
    assert_true(t <= 10000);
    converge(sim, 10, 10000);
    sim_delete(sim);
}

static void test_half_and_half_partition_heals_within_seconds(void **state)
{
    struct sim *sim = cluster(100, 59);
    converge(sim, 100, 20000);
    sim_partition(sim, 50, true);
    sim_run(sim, 5 * 60000);
    assert_true(sim_view(sim, 10, 90) == RD_DEAD);
    sim_partition(sim, 50, false);
    uint64_t t = converge(sim, 100, 60000);
    printf("# 50/50 partition healed, one checksum after %llu ms\n", (unsigned long long)t);
    assert_true(t <= 10000);
    sim_delete(sim);
}

static void test_thousand_members_join_from_one_seed_in_log_rounds(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct sim *sim = sim_new(1000, test_seed(61), &cfg);
    sim_start_all(sim, 0, 0); /* all at once */
    uint64_t t = converge(sim, 1000, 120000);
    double rounds = (double)t / cfg.gossip_interval_ms;
    printf("# 1000 members agree after %llu ms = %.1f gossip rounds (log2 N = 10)\n",
           (unsigned long long)t, rounds);
    assert_true(rounds <= 4.0 * 10.0);
    sim_delete(sim);
}

static void test_tombstones_are_reaped_after_their_time(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    cfg.tombstone_ms = 60000;
    struct sim *sim = sim_new(5, test_seed(67), &cfg);
    sim_start_all(sim, 0, 10);
    converge(sim, 5, 5000);
    sim_crash(sim, 4);
    struct seen dead = {4, RD_DEAD};
    assert_true(sim_run_until_pred(sim, all_see, &dead, 100, 60000) != UINT64_MAX);
    assert_int_equal(rd_swim_member_count(sim_swim(sim, 0)), 5);
    /* kept long enough that late rumours cannot resurrect it, then forgotten */
    sim_run(sim, 30000);
    assert_true(rd_swim_find(sim_swim(sim, 0), "m4", NULL));
    sim_run(sim, 40000);
    for (size_t i = 0; i < 4; i++) {
        assert_false(rd_swim_find(sim_swim(sim, i), "m4", NULL));
        assert_int_equal(rd_swim_member_count(sim_swim(sim, i)), 4);
    }
    assert_true(sim_converged(sim, 4));
    sim_delete(sim);
}

/* Membership events seen by every member but `except`. */
static uint64_t churn_except(struct sim *sim, size_t except)
{
    uint64_t n = 0;
    for (size_t i = 0; i < sim_size(sim); i++)
        if (i != except) n += sim_events_seen(sim, i);
    return n;
}

static void test_deaf_member_is_declared_dead_and_the_rest_stay_calm(void **state)
{
    struct sim *sim = cluster(12, 71);
    converge(sim, 12, 5000);
    /* member 11 can send but hears nothing: it will suspect everyone */
    sim_set_cut(sim, SIZE_MAX, 11, true);
    sim_run(sim, 40000);
    assert_true(sim_all_see(sim, 11, RD_DEAD));
    uint64_t before = churn_except(sim, 11);
    sim_run(sim, 20000);
    printf("# deaf member: the others saw %llu membership events in the last 20 s\n",
           (unsigned long long)(churn_except(sim, 11) - before));
    assert_int_equal(churn_except(sim, 11), before);
    sim_set_cut(sim, SIZE_MAX, 11, false);
    converge(sim, 12, 20000);
    sim_delete(sim);
}

/* Syncs the core asks to open until `until` (ticking every 100 ms), towards `to` only. */
static unsigned seed_syncs(struct rd_swim *s, uint64_t from, uint64_t until,
                           const struct rd_addr *to)
{
    unsigned n = 0;
    struct rd_addr got;
    struct rd_packet pkt;
    struct rd_addr dst;
    for (uint64_t t = from; t < until; t += 100) {
        rd_swim_tick(s, t);
        while (rd_swim_poll_send(s, t, &dst, &pkt))
            ;
        while (rd_swim_poll_sync(s, &got))
            n += rd_addr_equal(&got, to);
    }
    return n;
}

/*
 * Joined means that an exchange the core opened was answered: neither a datagram nor a
 * sync opened by someone else counts (anyone can send one), and until then the seed keeps
 * being retried. Once joined, a JOIN through another seed syncs with it once and stays
 * joined.
 */
static void test_joined_only_by_an_answered_exchange(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    cfg.reconnect_interval_ms = 1000000000; /* only join retries go back to the seed */
    struct rd_swim *s = lone_core(&cfg, 1, 1);
    struct rd_member seed = fake_member(9, 1, RD_ALIVE);
    rd_swim_join(s, 0, &seed.addr, 1);
    struct rd_addr to;
    assert_true(rd_swim_poll_sync(s, &to));
    assert_true(rd_addr_equal(&to, &seed.addr));
    assert_false(rd_swim_joined(s));

    size_t n;
    ping_from_n1(s, 1, NULL, 0, &n); /* a stray datagram */
    assert_false(rd_swim_joined(s));
    static struct rd_member batch[3];
    feed_sync(s, batch, 3, 1); /* a sync someone else opened */
    assert_false(rd_swim_joined(s));
    rd_swim_sync_failed(s, 0, &seed.addr);
    assert_false(rd_swim_joined(s));
    /* still retried with backoff: 1 s, 2 s, 4 s... so more than once in 8 s */
    assert_true(seed_syncs(s, 100, 8000, &seed.addr) >= 2);

    rd_swim_sync_done(s, 8000, &seed.addr); /* our exchange was answered */
    assert_true(rd_swim_joined(s));
    assert_int_equal(seed_syncs(s, 8000, 70000, &seed.addr), 0); /* no more retries */

    struct rd_member other = fake_member(8, 1, RD_ALIVE); /* JOIN while joined */
    rd_swim_join(s, 70000, &other.addr, 1);
    assert_true(rd_swim_joined(s));
    assert_true(rd_swim_poll_sync(s, &to));
    assert_true(rd_addr_equal(&to, &other.addr));
    rd_swim_delete(s);
}

/*
 * Seeds replaced while joining (their names resolved again): a seed list that was empty
 * starts the retries, a new address is synced with at once, one already known waits for
 * its retry, and a seed that left the list is no longer retried.
 */
static void test_set_seeds_tries_new_addresses_at_once(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    cfg.reconnect_interval_ms = 1000000000; /* only join retries go back to the seeds */
    struct rd_member self = fake_member(0, 1, RD_ALIVE);
    struct rd_swim *s = rd_swim_new(&cfg, &self, 1, 0);
    assert_non_null(s);
    struct rd_addr to, a = fake_member(9, 1, RD_ALIVE).addr, b = fake_member(8, 1, RD_ALIVE).addr;
    rd_swim_set_seeds(s, 0, &a, 1); /* no seed before: a at once, then retried */
    assert_true(rd_swim_poll_sync(s, &to));
    assert_true(rd_addr_equal(&to, &a));
    assert_false(rd_swim_poll_sync(s, &to));
    assert_true(seed_syncs(s, 100, 4000, &a) >= 1);
    struct rd_addr ab[] = {a, b, a, self.addr}; /* duplicates and ourselves are dropped */
    rd_swim_set_seeds(s, 4000, ab, 4);
    assert_true(rd_swim_poll_sync(s, &to)); /* only b is new */
    assert_true(rd_addr_equal(&to, &b));
    assert_false(rd_swim_poll_sync(s, &to));
    rd_swim_set_seeds(s, 4000, &b, 1); /* a is gone from the name */
    assert_int_equal(seed_syncs(s, 4000, 40000, &a), 0);
    assert_true(seed_syncs(s, 40000, 80000, &b) >= 1);
    rd_swim_delete(s);
}

/* ---------------------------------------------------------------- run-time changes */

struct record_seen {
    size_t about;
    uint32_t weight;
    const char *tags;
};

/* Every up member other than `about` holds its record at this weight and these tags. */
static bool all_see_record(struct sim *sim, void *arg)
{
    const struct record_seen *w = arg;
    for (size_t i = 0; i < sim_size(sim); i++) {
        if (i == w->about || sim_state(sim, i) != SIM_UP) continue;
        struct rd_member m;
        if (!rd_swim_find(sim_swim(sim, i), sim_name(sim, w->about), &m) || m.status != RD_ALIVE ||
            m.weight != w->weight || strcmp(m.tags, w->tags) != 0)
            return false;
    }
    return true;
}

/* A drain (weight 0) and a tag made on one member of 50 reach all within 2 s, through
 * gossip alone; the checksums agree again and nobody took it for a death. */
static void test_a_change_to_ones_own_record_is_seen_by_all_within_two_seconds(void **state)
{
    size_t n = 50;
    struct sim *sim = cluster(n, 81);
    converge(sim, n, 20000);
    sim_run(sim, 10000); /* let the join news die down */
    struct rd_swim *s7 = sim_swim(sim, 7);
    uint64_t inc = rd_swim_self(s7)->incarnation, sum = rd_swim_checksum(s7);
    assert_int_equal(rd_swim_update_self(s7, sim_now(sim), 0, "", "role=db"), 0);
    assert_int_equal(rd_swim_self(s7)->incarnation, inc + 1);
    assert_int_equal(rd_swim_self(s7)->weight, 0);
    assert_true(rd_swim_checksum(s7) != sum);
    assert_int_equal(rd_swim_check(s7, &(const char *){NULL}), 0);
    sim_poke(sim, 7);
    struct record_seen want = {7, 0, "role=db"};
    uint64_t t = sim_run_until_pred(sim, all_see_record, &want, 10, 10000);
    printf("# a drain and a tag on 1 member of %zu reached all in %llu ms\n", n,
           (unsigned long long)t);
    assert_true(t <= 2000);
    sim_run(sim, 5000);
    assert_true(sim_converged(sim, n)); /* checksums equal again: weight 0 counted alike */
    assert_int_equal(sim_event_count(sim, 7, RD_DEAD), 0);
    assert_int_equal(sim_event_count(sim, 7, RD_SUSPECT), 0);
    /* nothing new to say: no new incarnation */
    assert_int_equal(rd_swim_update_self(s7, sim_now(sim), 0, "", "role=db"), 0);
    assert_int_equal(rd_swim_self(s7)->incarnation, inc + 1);
    /* and back: the same way */
    assert_int_equal(rd_swim_update_self(s7, sim_now(sim), RD_WEIGHT_ONE, "", ""), 0);
    sim_poke(sim, 7);
    want = (struct record_seen){7, RD_WEIGHT_ONE, ""};
    t = sim_run_until_pred(sim, all_see_record, &want, 10, 10000);
    printf("# the undrain reached all in %llu ms\n", (unsigned long long)t);
    assert_true(t <= 2000);
    assert_int_equal(rd_swim_update_self(s7, sim_now(sim), RD_WEIGHT_MAX + 1, "", ""), RD_EINVAL);
    assert_int_equal(rd_swim_update_self(s7, sim_now(sim), 1, "", "no-equals"), RD_EINVAL);
    assert_consistent(sim);
    sim_delete(sim);
}

struct place_seen {
    size_t viewer, about;
    const char *zone, *tags;
};

static bool sees_place(struct sim *sim, void *arg)
{
    const struct place_seen *w = arg;
    struct rd_member m;
    return rd_swim_find(sim_swim(sim, w->viewer), sim_name(sim, w->about), &m) &&
           strcmp(m.zone, w->zone) == 0 && strcmp(m.tags, w->tags) == 0;
}

/*
 * Member 5 hears nothing while member 7 changes its zone and tags and the news is spent;
 * once it can hear again, returns how long it takes to have them. Suspicions are slowed so
 * that the cut stays a cut, not a death.
 */
static uint64_t missed_change_repaired_after(uint64_t seed, const char *zone, const char *tags)
{
    size_t n = 10;
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    cfg.suspicion_mult = 30;
    struct sim *sim = sim_new(n, test_seed(seed), &cfg);
    sim_start_all(sim, 0, 10);
    converge(sim, n, 20000);
    sim_run(sim, 10000);
    struct rd_swim *s7 = sim_swim(sim, 7);
    uint64_t sum = rd_swim_checksum(s7);
    sim_set_cut(sim, SIZE_MAX, 5, true);
    assert_int_equal(rd_swim_update_self(s7, sim_now(sim), RD_WEIGHT_ONE, zone, tags), 0);
    assert_true(rd_swim_checksum(s7) != sum);
    sim_poke(sim, 7);
    sim_run(sim, 5000); /* every other member takes it, and every send of it is spent */
    for (size_t i = 0; i < n; i++)
        if (i != 7)
            assert_true(sees_place(
                sim, &(struct place_seen){i, 7, i == 5 ? "" : zone, i == 5 ? "" : tags}));
    sim_set_cut(sim, SIZE_MAX, 5, false);
    struct place_seen want = {5, 7, zone, tags};
    uint64_t t = sim_run_until_pred(sim, sees_place, &want, 10, 60000);
    sim_run(sim, 5000);
    assert_true(sim_converged(sim, n));
    assert_int_equal(sim_false_deaths(sim), 0);
    assert_consistent(sim);
    sim_delete(sim);
    return t;
}

/*
 * Zones (zone-aware OWNERS) and tags (ketama mode's identities) are placement, so the
 * membership checksum covers them: a member that every gossip of a change missed learns it
 * from the mismatch of its next probe exchange and the SYNC that follows, within seconds,
 * not from the periodic SYNC (30 s and more).
 */
static void test_a_placement_change_gossip_missed_is_repaired_by_the_next_probe(void **state)
{
    (void)state;
    uint64_t t = missed_change_repaired_after(83, "zone-b", "");
    printf("# a zone change reached the member gossip missed %llu ms after the cut\n",
           (unsigned long long)t);
    assert_true(t <= 3000);
    t = missed_change_repaired_after(84, "", "ketama=10.0.0.7:11211");
    printf("# a tag change reached it %llu ms after the cut\n", (unsigned long long)t);
    assert_true(t <= 3000);
}

/* Each member's own view of `about`'s status, for those that are up. */
static bool all_but_see(struct sim *sim, size_t about, size_t except, int status)
{
    for (size_t i = 0; i < sim_size(sim); i++)
        if (i != about && i != except && sim_state(sim, i) == SIM_UP &&
            sim_view(sim, i, about) != status)
            return false;
    return true;
}

/* A dead member force-left on one agent is left on all of them, within the same 2 s. */
static void test_force_leave_of_a_dead_member_is_taken_by_all(void **state)
{
    size_t n = 50;
    struct sim *sim = cluster(n, 83);
    converge(sim, n, 20000);
    struct rd_swim *s0 = sim_swim(sim, 0);
    assert_int_equal(rd_swim_force_leave(s0, sim_now(sim), "m9", false), RD_EREFUSED);
    assert_int_equal(rd_swim_force_leave(s0, sim_now(sim), "nobody", false), RD_ENOENT);
    assert_int_equal(rd_swim_force_leave(s0, sim_now(sim), "m0", true), RD_EINVAL);
    sim_crash(sim, 9);
    struct seen dead = {9, RD_DEAD};
    assert_true(sim_run_until_pred(sim, all_see, &dead, 100, 60000) != UINT64_MAX);
    assert_int_equal(rd_swim_force_leave(s0, sim_now(sim), "m9", false), 0);
    assert_int_equal(sim_view(sim, 0, 9), RD_LEFT);
    sim_poke(sim, 0);
    struct seen left = {9, RD_LEFT};
    uint64_t t = sim_run_until_pred(sim, all_see, &left, 10, 10000);
    printf("# force-leave of a dead member reached all %zu in %llu ms\n", n - 1,
           (unsigned long long)t);
    assert_true(t <= 2000);
    assert_int_equal(rd_swim_force_leave(s0, sim_now(sim), "m9", false), 0); /* already left */
    assert_consistent(sim);
    sim_delete(sim);
}

/* Pruning a member that is in fact alive: everyone takes the left, the member hears it,
 * refutes with a higher incarnation, and is alive everywhere again, never dead. */
static void test_pruning_a_live_member_is_refuted_by_it(void **state)
{
    size_t n = 10;
    struct sim *sim = cluster(n, 85);
    converge(sim, n, 20000);
    uint64_t inc = rd_swim_self(sim_swim(sim, 4))->incarnation;
    assert_int_equal(rd_swim_force_leave(sim_swim(sim, 0), sim_now(sim), "m4", true), 0);
    sim_poke(sim, 0);
    struct seen alive = {4, RD_ALIVE};
    uint64_t t = sim_run_until_pred(sim, all_see, &alive, 10, 20000);
    printf("# a pruned live member was alive everywhere again after %llu ms\n",
           (unsigned long long)t);
    assert_true(t != UINT64_MAX);
    assert_true(sim_event_count(sim, 4, RD_LEFT) > 0); /* the prune was taken, then refuted */
    assert_true(rd_swim_self(sim_swim(sim, 4))->incarnation > inc);
    assert_int_equal(sim_event_count(sim, 4, RD_DEAD), 0);
    assert_true(all_but_see(sim, 4, SIZE_MAX, RD_ALIVE));
    sim_run(sim, 10000);
    assert_true(sim_converged(sim, n));
    assert_consistent(sim);
    sim_delete(sim);
}

/* A JOIN is answered by its own exchange: when no exchange with the new seed can be
 * queued (16 seeds pending, none answered), the core says so instead of leaving the
 * caller to wait for a result that never comes. */
static void test_a_join_that_cannot_be_queued_says_so(void **state)
{
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = lone_core(&cfg, 1, 1);
    struct rd_addr seeds[16];
    for (unsigned k = 0; k < 16; k++)
        seeds[k] = fake_member(k + 1, 1, RD_ALIVE).addr;
    assert_true(rd_swim_join(s, 0, seeds, 16));
    struct rd_addr extra = fake_member(40, 1, RD_ALIVE).addr;
    assert_false(rd_swim_join(s, 0, &extra, 1));
    assert_true(rd_swim_join(s, 0, &seeds[3], 1)); /* already pending: its exchange comes */
    struct rd_addr to;
    while (rd_swim_poll_sync(s, &to))
        ;
    assert_true(rd_swim_join(s, 0, &extra, 1)); /* room again */
    rd_swim_delete(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_joined_only_by_an_answered_exchange),
        cmocka_unit_test(test_a_join_that_cannot_be_queued_says_so),
        cmocka_unit_test(test_set_seeds_tries_new_addresses_at_once),
        cmocka_unit_test(test_three_members_join_and_agree),
        cmocka_unit_test(test_ten_members_join_and_agree),
        cmocka_unit_test(test_fifty_members_join_and_agree),
        cmocka_unit_test(test_a_mass_join_outruns_the_gossip_cadence),
        cmocka_unit_test(test_a_lost_ping_is_retried_directly),
        cmocka_unit_test(test_unanswered_pings_are_resent_within_the_timeout),
        cmocka_unit_test(test_crashed_member_is_declared_dead_by_all),
        cmocka_unit_test(test_a_crashed_process_is_found_sooner_than_a_silent_host),
        cmocka_unit_test(test_forged_refusals_cannot_kill_a_live_member),
        cmocka_unit_test(test_a_refused_helper_costs_no_health),
        cmocka_unit_test(test_unreachable_member_refutes_and_stays_alive),
        cmocka_unit_test(test_leave_is_seen_as_left_not_dead),
        cmocka_unit_test(test_dissemination_takes_logarithmic_rounds),
        cmocka_unit_test(test_fresh_news_overtakes_a_backlog_and_each_record_goes_out_its_quota),
        cmocka_unit_test(
            test_a_suspect_merged_before_the_rest_of_a_sync_gets_the_whole_clusters_timeout),
        cmocka_unit_test(test_name_conflict_stops_the_newcomer_and_keeps_the_original),
        cmocka_unit_test(test_forged_eviction_cannot_stop_a_member_from_refuting),
        cmocka_unit_test(test_incarnations_saturate_at_the_end_of_the_range),
        cmocka_unit_test(test_a_stranger_gets_no_more_bytes_than_it_sent_and_no_relay),
        cmocka_unit_test(test_only_the_probed_member_or_a_helper_can_answer_a_probe),
        cmocka_unit_test(test_a_first_record_cannot_be_planted_beyond_reach),
        cmocka_unit_test(test_an_established_member_keeps_its_name_against_a_namesake),
        cmocka_unit_test(test_a_full_member_table_counts_what_it_refuses),
        cmocka_unit_test(test_restarted_member_is_alive_again_everywhere),
        cmocka_unit_test(test_join_retries_start_soon_and_back_off),
        cmocka_unit_test(test_restarted_seed_without_join_is_found_again),
        cmocka_unit_test(test_partition_heals_into_one_cluster),
        cmocka_unit_test(test_hundred_members_with_ten_percent_loss_have_no_false_deaths),
        cmocka_unit_test(test_starved_members_have_no_false_deaths_and_still_see_a_crash),
        cmocka_unit_test(test_a_storm_of_refutations_spares_the_late_and_still_sees_a_crash),
        cmocka_unit_test(test_restarts_while_suspected_are_no_storm),
        cmocka_unit_test(test_frozen_member_is_declared_dead_then_refutes_after_thaw),
        cmocka_unit_test(test_half_and_half_partition_heals_within_seconds),
        cmocka_unit_test(test_thousand_members_join_from_one_seed_in_log_rounds),
        cmocka_unit_test(test_tombstones_are_reaped_after_their_time),
        cmocka_unit_test(test_deaf_member_is_declared_dead_and_the_rest_stay_calm),
        cmocka_unit_test(test_a_change_to_ones_own_record_is_seen_by_all_within_two_seconds),
        cmocka_unit_test(test_a_placement_change_gossip_missed_is_repaired_by_the_next_probe),
        cmocka_unit_test(test_force_leave_of_a_dead_member_is_taken_by_all),
        cmocka_unit_test(test_pruning_a_live_member_is_refuted_by_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
