/*
 * ringparams.c — the ring parameter rule (see ringparams.h).
 */
#include "ringparams.h"

#include <stdio.h>
#include <string.h>

#include "rd_err.h"
#include "ring.h"

static const char *const mode_names[] = {
    [RD_RING_MODE_RINGD] = "ringd",
    [RD_RING_MODE_KETAMA] = "ketama",
};

#define NMODES (sizeof mode_names / sizeof mode_names[0])

const char *rd_ring_mode_name(unsigned mode)
{
    return mode < NMODES ? mode_names[mode] : NULL;
}

int rd_ring_mode_parse(const char *s, unsigned *mode)
{
    for (unsigned k = 0; k < NMODES; k++) {
        if (strcmp(s, mode_names[k]) == 0) {
            *mode = k;
            return 0;
        }
    }
    return RD_EINVAL;
}

char *rd_ring_params_format(const struct rd_ring_params *p, char *buf, size_t len)
{
    const char *mode = rd_ring_mode_name(p->mode);
    if (mode)
        snprintf(buf, len, "spec=%u mode=%s vnodes=%u", p->spec, mode, p->vnodes);
    else
        snprintf(buf, len, "spec=%u mode=%u vnodes=%u", p->spec, p->mode, p->vnodes);
    return buf;
}

/* The RD_SYNC_*_SET bits of the parameters that differ; the spec has no bit, since no agent
 * can build a specification it does not implement. */
static unsigned differing(const struct rd_ring_params *a, const struct rd_ring_params *b)
{
    return (a->vnodes != b->vnodes ? RD_SYNC_VNODES_SET : 0u) |
           (a->mode != b->mode ? RD_SYNC_MODE_SET : 0u);
}

enum rd_ring_verdict rd_ring_judge(const struct rd_ring_side *ours,
                                   const struct rd_ring_side *theirs, bool answer)
{
    const struct rd_ring_params *o = &ours->params, *t = &theirs->params;
    unsigned diff = differing(o, t);
    if (o->spec == t->spec && diff == 0) return RD_RING_AGREE;
    if (!answer) {
        /* They opened it. A joiner that set none of what differs adopts ours from our answer,
         * so its state is merged; anything else cannot be one cluster with us. */
        if (theirs->joining && !ours->joining && o->spec == t->spec && !(theirs->set & diff))
            return RD_RING_AGREE;
        if (theirs->joining && ours->joining && o->spec == t->spec &&
            (!(theirs->set & diff) || !(ours->set & diff)))
            return RD_RING_AGREE; /* two starting agents: one of them adopts the other's */
        return RD_RING_REFUSE;
    }
    /* Our own exchange was answered. Once joined we never change: the cluster has its ring. */
    if (!ours->joining) return RD_RING_REFUSE;
    bool buildable = o->spec == t->spec && rd_ring_mode_name(t->mode) != NULL;
    if (theirs->joining && o->spec == t->spec && !(theirs->set & diff) && (ours->set & diff))
        return RD_RING_AGREE; /* another starting agent, which adopts what we set */
    if (buildable && !(ours->set & diff)) return RD_RING_ADOPT;
    return RD_RING_STOP;
}
