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

/*
 * A thread's arena grows by making usable more of the address space glibc reserved for it
 * (64 MB a heap), one mprotect() at a time. The kernel changes a process's mappings under
 * one lock, and may give the CPU away while it holds it. A build thread at nice 19 on a
 * crowded host then keeps that lock for seconds, waiting for a CPU, while the loop's next
 * brk() waits for the lock: in 1,000-agent storms a loop logged `loop stalled
 * ... blocked_ms=5145 ... builder_runnable_ms=6156` (stall.h). So a build thread grows its
 * arena once, as it starts and before it lowers its priority: a block of
 * RD_HEAP_ARENA_BYTES taken and given back leaves that much usable, and builds that fit in
 * it (a full build beside a ring of 1,000 x 512 reaches 23 MB) change no mapping. It costs
 * no resident memory: pages are faulted in only as builds touch them, and a trim gives them
 * back with madvise(), which leaves them usable. It does count toward the kernel's commit
 * charge, which only the strict overcommit policy (vm.overcommit_memory = 2) limits; under
 * that policy glibc also trims by unmapping, so growth after a trim changes mappings again.
 */
#define RD_HEAP_ARENA_BYTES (56u * 1024u * 1024u)

/** On a thread that builds, first thing, under rd_heap_keep_freed()'s policy. Nothing under
 *  AddressSanitizer, whose allocator is its own. */
static inline void rd_heap_grow_own_arena(void)
{
#ifndef __SANITIZE_ADDRESS__
    void *volatile block = malloc(RD_HEAP_ARENA_BYTES); /* volatile: not elided */
    free(block);
#endif
}

/*
 * The loop's heap (glibc's main arena) grows with brk(), and brk() changes the heap's mapping
 * under two kernel locks: the process's mappings lock, and the lock of the heap's anonymous
 * memory, which the kernel's page scanners (reclaim, compaction, a memory access monitor)
 * take to walk a page's mappings. Whoever holds either, descheduled on a crowded host, keeps
 * brk() waiting as long: in a 1,000-agent storm a loop was caught 3.5 s in brk(), its kernel
 * stack in vma_prepare() under do_brk_flags(), while its builder did not run (`loop stalled
 * ... blocked_ms=3460`; the holder was not found). The loops grow their heaps while the
 * members arrive: the thousand of such a storm called brk() 4,760 times in their first 40 s
 * after starting. So the loop's heap is grown ahead by RD_HEAP_LOOP_BYTES, at start and
 * again after each release: under the policy the free top stays, and the loop allocates
 * from it without brk() until it is used up (18 calls in the first 40 s, the rest at the
 * releases, once the membership is quiet). Like the arena's, the reserve is address space
 * and commit charge, not resident memory.
 */
#define RD_HEAP_LOOP_BYTES (8u * 1024u * 1024u)

/** On the loop, under rd_heap_keep_freed()'s policy: at start, and within rd_heap_release().
 *  Nothing under AddressSanitizer. */
static inline void rd_heap_grow_loop_heap(void)
{
#ifndef __SANITIZE_ADDRESS__
    void *volatile block = malloc(RD_HEAP_LOOP_BYTES); /* volatile: not elided */
    free(block);
#endif
}

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

/** Gives the pages of every free block back to the system, then grows the loop's heap ahead
 *  again (the trim gave its free top back too). */
static inline void rd_heap_release(void)
{
    malloc_trim(0);
    rd_heap_grow_loop_heap();
}

#endif
