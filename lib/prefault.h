/*
 * prefault.h — a large fresh block's pages taken from the kernel in one call.
 *
 * A ring's arrays are written front to back as soon as they are allocated, and a joiner's
 * first full ring at 1,000 x 512 writes about 15 MB the process has never touched. Each
 * 4 KB page of it then costs a trap into the kernel, which on a virtual machine is dear:
 * 13 us a page on the machine of bench/README.md, nine tenths of that build
 * (bench_firstbuild). MADV_POPULATE_WRITE (Linux 5.14) faults a whole range in one call,
 * for about 8 us a page there. The pages already present are found first and left out
 * (prefault.c), so a block that reuses freed memory pays only for the look. Where the
 * kernel lacks the call it fails, and the pages come one trap at a time as before.
 *
 * The call holds the process's mappings lock for reading while it runs, and a build thread
 * at the lowest priority may be preempted inside it; a brk() of the loop's then waits for
 * it (agent/heap.h tells how long that can be). The loop's heap is grown ahead so that
 * such calls are rare, and in 1,000-agent storms with prefaulted rings no loop was blocked
 * longer than 3 ms (bench/README.md, "Prefaulted rings").
 */
#ifndef RD_PREFAULT_H
#define RD_PREFAULT_H

#include <stddef.h>

/** Blocks smaller than this are left alone: they are mostly in pages already present. */
#define RD_PREFAULT_MIN_BYTES (256u * 1024u)

/** Faults in, for writing, the whole pages inside [p, p + size) when size is at least
 *  RD_PREFAULT_MIN_BYTES. Changes no byte; a failure only leaves the pages to be faulted
 *  as they are written. */
void rd_prefault(void *p, size_t size);

#endif
