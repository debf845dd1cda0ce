/*
 * failing_alloc.h — an allocator that fails on its Nth call, for the ring tests' allocation
 * failure loops (struct rd_ring_hooks' `alloc`, ring_internal.h).
 *
 * Header-only (static inline) so that each test stays one self-contained executable.
 */
#ifndef RD_TEST_FAILING_ALLOC_H
#define RD_TEST_FAILING_ALLOC_H

#include <stdlib.h>

struct failing_alloc {
    int fail_at; /* the call that fails, counting from 0 */
    int calls;
};

static inline void *failing_malloc(size_t size, void *ctx)
{
    struct failing_alloc *f = ctx;
    return f->calls++ == f->fail_at ? NULL : malloc(size);
}

#endif
