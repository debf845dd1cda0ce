/*
 * pace.h — when the next ring rebuild may run.
 *
 * A rebuild waits a short coalescing delay after the first change, so that a burst of
 * changes costs one. Under sustained change, rebuilds are rate-limited by theoretical
 * arrival time: each rebuild is charged a gap, `cost_factor` times its CPU time, never below
 * `gap_min_ms` nor above `gap_max_ms`; rebuilds keep the coalescing pace while the charges
 * ahead of now stay within `allowance_ms`, and then come one per charge. The factor
 * bounds the share of its CPU an agent spends rebuilding, so that many agents on one host
 * cannot starve their probes with rebuilds. A short burst of changes (a hundred agents
 * joining at once costs each about ten rebuilds of 1-3 ms) fits in the allowance, so
 * the ring follows the member list within the coalescing delay.
 *
 * Plain arithmetic on times the caller reads, so that it is tested without a loop.
 */
#ifndef RD_PACE_H
#define RD_PACE_H

#include <stdint.h>

struct rd_pace {
    uint32_t coalesce_ms, gap_min_ms, gap_max_ms, allowance_ms, cost_factor;
    uint64_t tat_ms; /**< the next rebuild's theoretical arrival time (0: none yet) */
    uint64_t gap_ms; /**< the spacing now, from the last rebuild's cost */
};

/** A pacer with the given limits; gap_ms starts at gap_min_ms. */
struct rd_pace rd_pace_init(uint32_t coalesce_ms, uint32_t gap_min_ms, uint32_t gap_max_ms,
                            uint32_t allowance_ms, uint32_t cost_factor);
/** A change came at now_ms with no rebuild pending: when the rebuild should run. */
uint64_t rd_pace_due(const struct rd_pace *p, uint64_t now_ms);
/** A rebuild started at now_ms and took cost_ns of CPU time: the next ones are paced. */
void rd_pace_done(struct rd_pace *p, uint64_t now_ms, uint64_t cost_ns);

#endif
