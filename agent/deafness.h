/*
 * deafness.h — how long the agent's loop went without reading input, and when its tick was
 * due.
 *
 * The membership core must not take its own lateness for the silence of others
 * (rd_swim_tick_lagged). A late timer shows one kind of lateness; a loop busy in one long
 * callback (a large sync merged on a crowded host) shows none if the next tick falls due
 * just as the callback ends, yet the loop read no datagram for as long. A check handle,
 * run after each poll, measures each iteration: the wall time since the previous check,
 * less what libuv spent waiting in the poll, is how long the loop did not listen. The
 * longest such stretch since the caller last asked is what it adds to its lag.
 */
#ifndef RD_DEAFNESS_H
#define RD_DEAFNESS_H

#include <stdbool.h>
#include <stdint.h>
#include <uv.h>

struct rd_deafness {
    uv_check_t check;
    uint64_t last_ns, idle_ns; /* when the check last ran, and libuv's idle time then */
    uint64_t max_ms;           /* the longest busy stretch since rd_deafness_take() */
};

/**
 * Starts measuring on `loop`, which must have been configured with UV_METRICS_IDLE_TIME
 * before it first ran. The check handle does not keep the loop alive; close it with
 * uv_close((uv_handle_t *)&d->check, ...) or a walk over the loop's handles. Returns 0 or
 * libuv's error.
 */
int rd_deafness_start(struct rd_deafness *d, uv_loop_t *loop);
/** The longest stretch, in ms, that the loop spent busy since the last call; resets it. */
uint64_t rd_deafness_take(struct rd_deafness *d);

/**
 * When the loop's tick counts as due, for its lateness, as it is re-armed at `now_ms` for the
 * core's next deadline `next_ms`: a deadline already past is due now (lateness counts from
 * when it was asked). But a tick still `armed` for `due_ms` that has fallen due keeps that
 * time. The busy stretches above miss a loop that was starved of CPU in its poll: libuv
 * counts that wait as idle. Such a loop, once it runs, reads the datagrams that woke it
 * before its timer fires, and each re-arms the tick; the tick's own lateness is then the
 * one measure left, and it must not be reset by them.
 */
uint64_t rd_tick_due(bool armed, uint64_t due_ms, uint64_t next_ms, uint64_t now_ms);

#endif
