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
 *   - the heap is never shrunk on free: the agent gives memory back itself, once the
 *     membership has been quiet for a while (agent.c, and the steps below), so that an idle
 *     agent holds one ring, not two.
 * Header-only: bench/ring_bench.c times rebuilds under the same policy.
 */
#ifndef RD_HEAP_H
#define RD_HEAP_H

#include <limits.h>
#include <malloc.h>
#include <stdlib.h>

/** At start, before the first large allocation, and again after rd_heap_trim_on_free().
 *  Without effect under the sanitizers, whose allocator is their own. */
static inline void rd_heap_keep_freed(void)
{
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
}

/*
 * Giving memory back takes more than malloc_trim() where rings are built on another thread
 * (ringjob.h), whose allocations come from a malloc arena of its own. malloc_trim() gives
 * back the free blocks of every arena but shrinks only the main heap's top: a thread arena
 * keeps the free space at its top (the last build's scratch, a ring freed next to it) until
 * a free in that arena finds its top above the trim threshold, which the policy sets out of
 * reach. So, with no build running:
 *   1. rd_heap_trim_on_free(), on the loop;
 *   2. rd_heap_shrink_own_arena(), on each thread that builds;
 *   3. rd_heap_keep_freed() and rd_heap_release(), on the loop.
 * Steps 1 and 3 stay off the build thread: mallopt() and malloc_trim() take arena locks,
 * which a build thread preempted at its low priority would hold for as long.
 */

/** Block size whose free makes glibc look at its arena's top (above its 64 KB threshold).
 *  It is taken from the arena, not mapped on its own, only because the policy maps none. */
#define RD_HEAP_NUDGE_BYTES (256u * 1024u)

/** Until rd_heap_release(): a free in any arena shrinks its free top. */
static inline void rd_heap_trim_on_free(void)
{
    mallopt(M_TRIM_THRESHOLD, 0);
}

/** Shrinks the free top of the calling thread's arena, after rd_heap_trim_on_free(). */
static inline void rd_heap_shrink_own_arena(void)
{
    void *volatile block = malloc(RD_HEAP_NUDGE_BYTES); /* volatile: not elided */
    free(block);
}

/** Gives the pages of every free block back to the system. */
static inline void rd_heap_release(void)
{
    malloc_trim(0);
}

#endif
