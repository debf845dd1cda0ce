/*
 * namesort.h — member names into bytewise order, eight bytes at a time.
 *
 * Every ring build puts its members in name order, and the agent hands them over in the
 * member table's order, which is arbitrary. qsort() with strcmp() makes n log n indirect
 * calls, each re-reading the prefix that names of one fleet share ("node-", "10.1.0."):
 * at 10,000 members that was half of a one-member rebuild (bench/README.md, "Name order").
 * Here a name is read as big-endian 64-bit words, zero past its end, so that comparing
 * words compares the names (names hold no NUL byte, and a prefix sorts first). The names
 * are sorted by their first word with an LSD radix sort, and only a run of names whose
 * words tie goes on to the next word (an MSD sort by words): a shared prefix costs a pass
 * per eight bytes instead of a comparison per pair. Small runs take an insertion sort.
 *
 * No allocation: the caller gives the scratch, so that the ring's tests can fail it.
 */
#ifndef RD_NAMESORT_H
#define RD_NAMESORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Bytes of scratch rd_namesort() needs for n names. */
size_t rd_namesort_scratch(size_t n);

/**
 * Fills order[0..n) with 0..n-1 so that names[order[0]], names[order[1]], ... ascend in
 * strcmp() order; equal names keep their input order. n < 2^32. scratch holds
 * rd_namesort_scratch(n) bytes, aligned for a uint64_t. Returns true when two names are
 * equal.
 */
bool rd_namesort(const char *const *names, size_t n, uint32_t *order, void *scratch);

#endif
