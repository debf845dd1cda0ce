/*
 * suspicion.c — suspicion timeouts, accusers, local health and storms (see suspicion.h).
 *
 * Shape: free functions over three small records. The floating point expressions are
 * memberlist's and are written in a fixed order, since a timeout that differed in the last
 * bit between builds would make the simulator's runs differ.
 */
#include "suspicion.h"

#include <math.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* min and max for `n_live` members: memberlist's expressions, in their order */
static void suspicion_bounds(const struct rd_suspicion_config *cfg, size_t n_live, double *min,
                             double *max)
{
    double n = (double)n_live;
    double scale = n > 10.0 ? log10(n) : 1.0;
    *min = cfg->suspicion_mult * scale * cfg->probe_interval_ms;
    *max = cfg->suspicion_max_mult * *min;
}

uint64_t rd_suspicion_timeout(const struct rd_suspicion_config *cfg, size_t n_live,
                              uint32_t confirmations)
{
    double n = (double)n_live, min, max;
    suspicion_bounds(cfg, n_live, &min, &max);
    /* Lifeguard: expect k independent confirmations, if enough members can give them */
    double k = (double)cfg->suspicion_confirmations;
    if (n - 2.0 < k) k = 0.0;
    if (k < 1.0) return (uint64_t)min;
    double t = max - log(confirmations + 1.0) / log(k + 1.0) * (max - min);
    return (uint64_t)(t < min ? min : t);
}

/* Records `accuser`; true if it is a new one and there was room for it. */
static bool add_accuser(struct rd_suspicion *sp, const char *accuser)
{
    if (!accuser[0]) return false;
    uint64_t h = XXH3_64bits(accuser, strlen(accuser));
    for (uint32_t k = 0; k < sp->naccusers; k++)
        if (sp->accusers[k] == h) return false;
    if (sp->naccusers == RD_SUSPICION_ACCUSERS_MAX) return false;
    sp->accusers[sp->naccusers++] = h;
    return true;
}

void rd_suspicion_start(struct rd_suspicion *sp, const struct rd_suspicion_config *cfg, size_t n,
                        const char *accuser, uint64_t now_ms)
{
    sp->naccusers = 0;
    add_accuser(sp, accuser);
    sp->start_ms = now_ms;
    sp->deadline_ms = now_ms + rd_suspicion_timeout(cfg, n, 0);
}

bool rd_suspicion_confirm(struct rd_suspicion *sp, const struct rd_suspicion_config *cfg, size_t n,
                          const char *accuser)
{
    if (!add_accuser(sp, accuser)) return false;
    sp->deadline_ms = sp->start_ms + rd_suspicion_timeout(cfg, n, sp->naccusers - 1);
    return true;
}

bool rd_suspicion_extend(struct rd_suspicion *sp, const struct rd_suspicion_config *cfg, size_t n,
                         uint32_t stretch)
{
    uint32_t confirmations = sp->naccusers > 0 ? sp->naccusers - 1 : 0;
    uint64_t timeout = rd_suspicion_timeout(cfg, n, confirmations);
    if (stretch > 0) {
        double min, max;
        suspicion_bounds(cfg, n, &min, &max);
        uint64_t stretched = timeout * (stretch + 1ull), cap = (uint64_t)max;
        if (stretched > cap) stretched = cap > timeout ? cap : timeout;
        timeout = stretched;
    }
    uint64_t deadline = sp->start_ms + timeout;
    if (deadline <= sp->deadline_ms) return false;
    sp->deadline_ms = deadline;
    return true;
}

/* Moves the windows on to the one `now_ms` falls in (a time before the current window counts
 * as its start: no clock goes back): the current one becomes the one before if it ended
 * less than a window ago, else both are forgotten. */
static void storm_roll(struct rd_storm *st, uint64_t now_ms, uint64_t window_ms)
{
    if (now_ms < st->window_start_ms) return;
    uint64_t windows = (now_ms - st->window_start_ms) / window_ms;
    if (windows == 0) return;
    st->nprev = windows == 1 ? st->ncur : 0;
    memcpy(st->prev, st->cur, st->nprev * sizeof *st->prev);
    st->ncur = 0;
    st->window_start_ms += windows * window_ms;
}

static bool storm_has(const uint64_t *set, uint32_t n, uint64_t h)
{
    for (uint32_t k = 0; k < n; k++)
        if (set[k] == h) return true;
    return false;
}

void rd_storm_refuted(struct rd_storm *st, const char *member, uint64_t now_ms, uint64_t window_ms)
{
    if (window_ms == 0) return;
    storm_roll(st, now_ms, window_ms);
    uint64_t h = XXH3_64bits(member, strlen(member));
    if (st->ncur < RD_STORM_REFUTERS_MAX && !storm_has(st->cur, st->ncur, h))
        st->cur[st->ncur++] = h;
}

uint32_t rd_storm_score(const struct rd_storm *st, uint64_t now_ms, uint64_t window_ms,
                        uint32_t ceiling)
{
    if (window_ms == 0) return 0;
    struct rd_storm at = *st;
    storm_roll(&at, now_ms, window_ms);
    uint32_t distinct = at.ncur;
    for (uint32_t k = 0; k < at.nprev; k++)
        distinct += !storm_has(at.cur, at.ncur, at.prev[k]);
    uint32_t score = distinct > 1 ? distinct - 1 : 0;
    return score < ceiling ? score : ceiling;
}

void rd_health_probe_failed(struct rd_health *h, uint32_t nacks_expected, uint32_t nacks,
                            uint32_t ceiling)
{
    /* missing nacks mean our own network or process is the problem; surplus nacks
     * (duplicated or forged) mean nothing */
    uint32_t delta = nacks_expected == 0 ? 1 : nacks < nacks_expected ? nacks_expected - nacks : 0;
    uint32_t room = h->score < ceiling ? ceiling - h->score : 0;
    h->score = delta >= room ? ceiling : h->score + delta;
}

void rd_health_probe_acked(struct rd_health *h)
{
    if (h->score > 0) h->score--;
}

void rd_health_refuted(struct rd_health *h, uint32_t ceiling)
{
    if (h->score < ceiling) h->score++;
}

void rd_health_lagged(struct rd_health *h, uint64_t lag_ms, uint32_t timeout_ms, uint32_t ceiling)
{
    /* (score + 1) * timeout >= lag */
    uint64_t unit = timeout_ms ? timeout_ms : 1;
    uint64_t need = (lag_ms + unit - 1) / unit;
    uint64_t score = need > 0 ? need - 1 : 0;
    if (score > ceiling) score = ceiling;
    if (score > h->score) h->score = (uint32_t)score;
}

uint64_t rd_health_scale(const struct rd_health *h, uint32_t ms)
{
    return (uint64_t)ms * (h->score + 1);
}
