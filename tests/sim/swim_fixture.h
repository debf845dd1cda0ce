/*
 * swim_fixture.h — one membership core, driven directly (no simulator), that suspects
 * every other member: the worst case of the per-member timers, shared by the unit test
 * that counts their work (tests/unit/test_swim_timers.c) and the benchmark that times it
 * (bench/swim_timers_bench.c).
 *
 * Header-only and public API only, so the benchmark builds without the tests and measures
 * any version of lib/swim.c.
 */
#ifndef RD_SWIM_FIXTURE_H
#define RD_SWIM_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "swim.h"

/* Member k turns suspect at SWIM_FIXTURE_SUSPECT_FROM_MS + k * SWIM_FIXTURE_SUSPECT_EVERY_MS,
 * so the suspicions have distinct deadlines and end one by one. */
#define SWIM_FIXTURE_SUSPECT_FROM_MS  1000
#define SWIM_FIXTURE_SUSPECT_EVERY_MS 7

/** Member "n<k>" at 127.0.0.1:20000+k, incarnation 1. */
static inline struct rd_member swim_fixture_member(unsigned k, uint8_t status)
{
    struct rd_member m = {.incarnation = 1, .status = status, .weight = RD_WEIGHT_ONE};
    snprintf(m.name, sizeof m.name, "n%u", k);
    m.addr = (struct rd_addr){.family = 4, .port = (uint16_t)(20000 + k), .ip = {127, 0, 0, 1}};
    return m;
}

/** A core "self" that learns n1..n<n-1> alive from n1 in one sync at 0. NULL if memory
 *  fails. */
static inline struct rd_swim *swim_fixture_alive(const struct rd_swim_config *cfg, unsigned n)
{
    struct rd_member self = swim_fixture_member(0, RD_ALIVE);
    snprintf(self.name, sizeof self.name, "self");
    struct rd_swim *s = rd_swim_new(cfg, &self, 7, 0);
    struct rd_member *batch = malloc((n - 1) * sizeof *batch);
    if (!s || !batch) {
        rd_swim_delete(s);
        free(batch);
        return NULL;
    }
    for (unsigned k = 0; k < n - 1; k++)
        batch[k] = swim_fixture_member(k + 1, RD_ALIVE);
    struct rd_packet sync = {.nmsgs = 1, .nmembers = n - 1, .members = batch};
    snprintf(sync.from, sizeof sync.from, "n1");
    sync.msgs[0] = (struct rd_msg){.type = RD_MSG_SYNC};
    rd_swim_sync_recv(s, 0, &sync);
    free(batch);
    return s;
}

/**
 * swim_fixture_alive(), then, if `leave`, a leave at 0 (then no probe, sync or reconnect
 * touches the suspicions: only their deadlines end them), and each of n1..n<n-1> heard
 * suspected by n1 at the times above. No tick runs. NULL if memory fails.
 */
static inline struct rd_swim *swim_fixture_suspecting_all(const struct rd_swim_config *cfg,
                                                          unsigned n, bool leave)
{
    struct rd_swim *s = swim_fixture_alive(cfg, n);
    if (!s) return NULL;
    if (leave) rd_swim_leave(s, 0);
    struct rd_member n1 = swim_fixture_member(1, RD_ALIVE);
    for (unsigned k = 1; k < n; k++) {
        struct rd_member m = swim_fixture_member(k, RD_SUSPECT);
        snprintf(m.accuser, sizeof m.accuser, "n1");
        struct rd_packet news = {.nmembers = 1, .members = &m};
        snprintf(news.from, sizeof news.from, "n1");
        rd_swim_recv(s, SWIM_FIXTURE_SUSPECT_FROM_MS + (uint64_t)k * SWIM_FIXTURE_SUSPECT_EVERY_MS,
                     &n1.addr, &news);
    }
    return s;
}

#endif
