/*
 * swim_timers_bench.c — what a wake-up of the membership core costs while every other
 * member is suspect (the worst case under heavy loss), in wall time.
 *
 * A core "self" learns n1..n<N-1> alive from one sync, then hears each of them suspected,
 * one every 7 ms, so that the suspicions end one by one (tests/sim/swim_fixture.h). Three figures,
 * each the median over --reps fresh cores:
 *   - next_tick: ns per rd_swim_next_tick() with all N-1 suspicions pending;
 *   - idle tick: ns per rd_swim_tick() at a time when nothing is due;
 *   - wake-up:   ns per wake-up (rd_swim_tick at rd_swim_next_tick, then
 *                rd_swim_next_tick) from the first to the last suspicion's end.
 * It uses the public API only, so the same file measures any version of lib/swim.c.
 *
 *     bench_swim_timers [--members 1000] [--reps 7] [--calls 20000]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "swim.h"
#include "swim_fixture.h"

#define REPS_MAX 101

static void drain(struct rd_swim *s, uint64_t now_ms)
{
    struct rd_swim_event ev;
    while (rd_swim_poll_event(s, &ev))
        ;
    struct rd_addr to;
    struct rd_packet pkt;
    while (rd_swim_poll_send(s, now_ms, &to, &pkt))
        ;
    while (rd_swim_poll_sync(s, &to))
        ;
}

struct sample {
    double next_tick_ns, idle_tick_ns, wake_up_ns;
    size_t wake_ups;
};

static struct sample measure(unsigned n, int calls)
{
    struct sample out = {0};
    struct rd_swim_config cfg;
    rd_swim_config_default(&cfg);
    struct rd_swim *s = swim_fixture_suspecting_all(&cfg, n, false);
    if (!s) abort();
    uint64_t now = SWIM_FIXTURE_SUSPECT_FROM_MS + (uint64_t)n * SWIM_FIXTURE_SUSPECT_EVERY_MS;
    rd_swim_tick(s, now); /* whatever was due while the suspicions came in */
    drain(s, now);
    volatile uint64_t sink = 0;
    double t0 = now_ns();
    for (int k = 0; k < calls; k++)
        sink += rd_swim_next_tick(s);
    out.next_tick_ns = (now_ns() - t0) / calls;
    t0 = now_ns();
    for (int k = 0; k < calls; k++)
        rd_swim_tick(s, now);
    out.idle_tick_ns = (now_ns() - t0) / calls;
    size_t counts[4];
    double busy = 0;
    for (rd_swim_counts(s, counts); counts[RD_SUSPECT] > 0; rd_swim_counts(s, counts)) {
        now = rd_swim_next_tick(s);
        t0 = now_ns();
        rd_swim_tick(s, now);
        sink += rd_swim_next_tick(s);
        busy += now_ns() - t0;
        out.wake_ups++;
        drain(s, now); /* the caller's work, not timed */
    }
    out.wake_up_ns = busy / (double)out.wake_ups;
    (void)sink;
    rd_swim_delete(s);
    return out;
}

int main(int argc, char **argv)
{
    unsigned n = 1000;
    int reps = 7, calls = 20000;
    for (int a = 1; a + 1 < argc; a += 2) {
        if (strcmp(argv[a], "--members") == 0)
            n = (unsigned)atoi(argv[a + 1]);
        else if (strcmp(argv[a], "--reps") == 0)
            reps = atoi(argv[a + 1]);
        else if (strcmp(argv[a], "--calls") == 0)
            calls = atoi(argv[a + 1]);
    }
    if (n < 2 || n > RD_MAX_MEMBERS || reps < 1 || reps > REPS_MAX || calls < 1) {
        fprintf(stderr, "usage: bench_swim_timers [--members 2..%d] [--reps 1..%d] [--calls N]\n",
                RD_MAX_MEMBERS, REPS_MAX);
        return 2;
    }
    double next_tick[REPS_MAX], idle_tick[REPS_MAX], wake_up[REPS_MAX];
    size_t wake_ups = 0;
    for (int r = 0; r < reps; r++) {
        struct sample x = measure(n, calls);
        next_tick[r] = x.next_tick_ns;
        idle_tick[r] = x.idle_tick_ns;
        wake_up[r] = x.wake_up_ns;
        wake_ups = x.wake_ups;
    }
    printf("members %u, suspects %u, median of %d runs\n", n, n - 1, reps);
    printf("| next_tick ns | idle tick ns | wake-up ns | wake-ups to clear |\n|---|---|---|---|\n");
    printf("| %.1f | %.1f | %.1f | %zu |\n", median(next_tick, reps), median(idle_tick, reps),
           median(wake_up, reps), wake_ups);
    return 0;
}
