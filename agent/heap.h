/*
 * heap.h — how the agent's heap treats the large blocks of ring rebuilds.
 *
 * A ring is rebuilt while the old one still answers, so every membership change allocates
 * a block as large as the ring (8 MB at 1,000 members x 512 vnodes) and then frees the old
 * one. glibc's defaults map such a block fresh from the kernel when it is larger than any
 * freed before, which in a growing cluster is every time, and unmap it when freed: each
 * page of every new ring is then faulted in again (about 2,600 faults and 50 ms a one-member
 * rebuild at 1,000 x 512 on the machine of bench/README.md, against 1 ms for the merge
 * itself). Its dynamic thresholds cannot help: they stop at 32 MB and follow the sizes
 * freed, not the sizes coming. So the agent sets its own policy once, at start:
 *   - no block is mapped on its own: everything comes from the heap, so a freed ring's
 *     memory serves the next build;
 *   - the heap is never shrunk on free: the agent gives memory back itself, with
 *     rd_heap_release(), once the membership has been quiet for a while (agent.c), so that an
 *     idle agent holds one ring, not two.
 * Header-only: bench/ring_bench.c times rebuilds under the same policy.
 */
#ifndef RD_HEAP_H
#define RD_HEAP_H

#include <limits.h>
#include <malloc.h>

/** At start, before the first large allocation. Without effect under the sanitizers, whose
 *  allocator is their own. */
static inline void rd_heap_keep_freed(void)
{
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

/** Gives the pages of every free block back to the system. */
static inline void rd_heap_release(void)
{
    malloc_trim(0);
}

#endif
