/*
 * pace.c — when the next ring rebuild may run (see pace.h).
 */
#include "pace.h"

struct rd_pace rd_pace_init(uint32_t coalesce_ms, uint32_t gap_min_ms, uint32_t gap_max_ms,
                            uint32_t allowance_ms, uint32_t cost_factor)
{
    return (struct rd_pace){.coalesce_ms = coalesce_ms,
                            .gap_min_ms = gap_min_ms,
                            .gap_max_ms = gap_max_ms,
                            .allowance_ms = allowance_ms,
                            .cost_factor = cost_factor,
                            .gap_ms = gap_min_ms};
}

uint64_t rd_pace_due(const struct rd_pace *p, uint64_t now_ms)
{
    /* the allowance is an amount of charges, not a count of rebuilds: a burst of cheap
     * rebuilds (a small ring, however crowded the host) keeps the coalescing pace until the
     * churn stops, and a costly one spends it at once */
    uint64_t due = now_ms + p->coalesce_ms, allowance = p->allowance_ms;
    if (p->tat_ms > allowance && due < p->tat_ms - allowance) due = p->tat_ms - allowance;
    return due;
}

void rd_pace_done(struct rd_pace *p, uint64_t now_ms, uint64_t cost_ns)
{
    uint64_t gap = cost_ns / 1000u * p->cost_factor / 1000u;
    p->gap_ms = gap < p->gap_min_ms ? p->gap_min_ms : gap > p->gap_max_ms ? p->gap_max_ms : gap;
    p->tat_ms = (p->tat_ms > now_ms ? p->tat_ms : now_ms) + p->gap_ms;
}
