/*
 * pace.c — when the next ring rebuild may run (see pace.h).
 */
#include "pace.h"

struct rd_pace rd_pace_init(uint32_t coalesce_ms, uint32_t gap_min_ms, uint32_t gap_max_ms,
                            uint32_t burst, uint32_t cost_factor)
{
    return (struct rd_pace){.coalesce_ms = coalesce_ms,
                            .gap_min_ms = gap_min_ms,
                            .gap_max_ms = gap_max_ms,
                            .burst = burst,
                            .cost_factor = cost_factor,
                            .gap_ms = gap_min_ms};
}

uint64_t rd_pace_due(const struct rd_pace *p, uint64_t now_ms)
{
    /* the allowance is a fixed amount of charged gaps, not a count of rebuilds: a burst of
     * cheap rebuilds (a small ring, however crowded the host) runs at the coalescing pace
     * until the churn stops, and a burst of costly ones spends it in a few */
    uint64_t due = now_ms + p->coalesce_ms, allowance = (uint64_t)p->burst * p->gap_max_ms;
    if (p->tat_ms > allowance && due < p->tat_ms - allowance) due = p->tat_ms - allowance;
    return due;
}

void rd_pace_done(struct rd_pace *p, uint64_t now_ms, uint64_t cost_ns)
{
    uint64_t gap = cost_ns / 1000u * p->cost_factor / 1000u;
    p->gap_ms = gap < p->gap_min_ms ? p->gap_min_ms : gap > p->gap_max_ms ? p->gap_max_ms : gap;
    p->tat_ms = (p->tat_ms > now_ms ? p->tat_ms : now_ms) + p->gap_ms;
}
