/*
 * ringparams.h — whether two agents' ring parameters let them share a cluster.
 *
 * Every agent of a cluster must build the same ring, so every SYNC carries the sender's
 * ring parameters (spec, mode, vnodes) and says which of them its operator set. The rule
 * that decides what a difference means is kept here, pure, so that it is tested case by
 * case and stated once (proto/PROTOCOL.md, "Ring parameters"): the cluster's parameters are
 * the ones its first member started with; a joiner adopts them where it set nothing itself,
 * and refuses to join where it set something else.
 */
#ifndef RD_RINGPARAMS_H
#define RD_RINGPARAMS_H

#include <stdbool.h>
#include <stddef.h>

#include "msg.h"

/** What to do with a SYNC whose sender's ring parameters were compared with ours. */
enum rd_ring_verdict {
    RD_RING_AGREE,  /**< merge: the same parameters, or the sender will adopt ours */
    RD_RING_ADOPT,  /**< take the sender's parameters (we are joining and set none of those
                         that differ), then merge */
    RD_RING_REFUSE, /**< do not merge; log and count it (the sender cannot join us) */
    RD_RING_STOP,   /**< we are joining a cluster whose parameters our operator contradicts */
};

/** One side of the comparison: its parameters, which it set (RD_SYNC_*_SET), and whether
 *  it is still joining (RD_SYNC_JOIN). */
struct rd_ring_side {
    struct rd_ring_params params;
    unsigned set; /**< RD_SYNC_VNODES_SET | RD_SYNC_MODE_SET */
    bool joining;
};

/**
 * Judges a SYNC from `theirs` received by `ours`. `answer` is true when it answers a SYNC
 * we opened (we may adopt or stop), false when the sender opened it (we may only agree or
 * refuse: the sender decides for itself when it reads our answer).
 */
enum rd_ring_verdict rd_ring_judge(const struct rd_ring_side *ours,
                                   const struct rd_ring_side *theirs, bool answer);

/** "ringd" or "ketama"; NULL for a mode this agent cannot build. */
const char *rd_ring_mode_name(unsigned mode);
/** Parses "ringd" or "ketama"; 0, or RD_EINVAL. */
int rd_ring_mode_parse(const char *s, unsigned *mode);
/** Writes "spec=1 mode=ringd vnodes=512" (an unknown mode as its number); returns buf. */
char *rd_ring_params_format(const struct rd_ring_params *p, char *buf, size_t len);

#endif
