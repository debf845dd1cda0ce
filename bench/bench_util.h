/*
 * bench_util.h — the clock and the median every benchmark reports with.
 *
 * Header-only (static inline) so that each benchmark stays one self-contained executable:
 * the benchmarks share how they time and summarize, and nothing else.
 */
#ifndef RD_BENCH_UTIL_H
#define RD_BENCH_UTIL_H

#include <stdlib.h>
#include <time.h>

/** CLOCK_MONOTONIC in nanoseconds. */
static inline double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/** Median of v[0..n), n >= 1; sorts v in place. */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#endif
