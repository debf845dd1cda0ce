/*
 * suspicion.h — the arithmetic of suspicion and of local health (Lifeguard), apart from the
 * state machine that applies it.
 *
 * Why this shape: how long a suspect has before it is declared dead, which accusers count
 * as independent confirmations, and how much our own slowness stretches our timeouts are
 * pure functions of a few numbers (N, the configuration, the time). Kept apart from swim.c
 * they can be checked against a table, and swim.c only decides when to call them. Nothing
 * here knows the member table or calls back into it.
 */
#ifndef RD_SUSPICION_H
#define RD_SUSPICION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Distinct accusers remembered per suspicion (more than confirmations + 1 is useless). */
#define RD_SUSPICION_ACCUSERS_MAX 8

/** The configuration the timeout depends on (rd_swim_config's fields of the same names). */
struct rd_suspicion_config {
    uint32_t probe_interval_ms;
    uint32_t suspicion_mult;          /**< min = mult * max(1, log10 N) * interval */
    uint32_t suspicion_max_mult;      /**< max = max_mult * min */
    uint32_t suspicion_confirmations; /**< k: confirmations that bring it down to min */
};

/**
 * How long a suspicion lasts among `n` live members (self included) after `confirmations`
 * independent confirmations beyond the first accuser: memberlist's formula, from max with
 * none down to min with k or more, on a log curve. k is taken as 0 (always min) when fewer
 * than k members besides the suspect and us could confirm.
 */
uint64_t rd_suspicion_timeout(const struct rd_suspicion_config *cfg, size_t n,
                              uint32_t confirmations);

/** One suspicion: when it began, when it ends, who has accused (by name hash). */
struct rd_suspicion {
    uint64_t start_ms, deadline_ms;
    uint64_t accusers[RD_SUSPICION_ACCUSERS_MAX];
    uint32_t naccusers;
};

/**
 * Starts a suspicion at `now_ms` by `accuser` (may be empty: no accuser is remembered).
 * The first accuser is no confirmation: the deadline is the full timeout for `n` members.
 */
void rd_suspicion_start(struct rd_suspicion *sp, const struct rd_suspicion_config *cfg, size_t n,
                        const char *accuser, uint64_t now_ms);
/**
 * `accuser` repeats the suspicion. True if it is a new, independent confirmation (a name
 * not yet counted, while there is room to remember it): then the deadline is moved to
 * start + timeout for that many confirmations. False changes nothing.
 */
bool rd_suspicion_confirm(struct rd_suspicion *sp, const struct rd_suspicion_config *cfg, size_t n,
                          const char *accuser);
/**
 * Reads the timeout again for `n` live members now, when the deadline has come: true if the
 * deadline moved later. A suspicion started or confirmed while we knew fewer members (a
 * joiner merging a full table meets its suspects before the rest of it) got the timeout of
 * a small cluster; it lasts what the cluster we know now gives it. And while our own local
 * `health` score is above 0, the timeout is stretched by (health + 1), up to the maximum for
 * `n`: a member that is late itself has likely not yet read the refutation that is on its
 * way (in a host starved of CPU, every member is late at once). Never earlier.
 */
bool rd_suspicion_extend(struct rd_suspicion *sp, const struct rd_suspicion_config *cfg, size_t n,
                         uint32_t health);

/**
 * Lifeguard's local health: 0 is healthy, up to a ceiling the caller passes. Failed probes
 * whose helpers did not even answer with a nack, having to refute a suspicion, and our own
 * loop running late hint that we are the slow one; an answered probe is evidence we are not.
 */
struct rd_health {
    uint32_t score;
};

/** A probe failed after `nacks` of `nacks_expected` helpers answered (none asked: counts 1). */
void rd_health_probe_failed(struct rd_health *h, uint32_t nacks_expected, uint32_t nacks,
                            uint32_t ceiling);
/** A probe was answered. */
void rd_health_probe_acked(struct rd_health *h);
/** We had to refute a suspicion about ourselves. */
void rd_health_refuted(struct rd_health *h, uint32_t ceiling);
/**
 * Our own loop ran `lag_ms` later than it asked (blocked, or starved of CPU). When we are
 * that late, so may the members we probe be: the score is raised, if lower, to what
 * stretches a probe timeout of `timeout_ms` over the lag, up to `ceiling`; the protocol
 * period, twice the timeout, then covers a round trip through two members that late.
 */
void rd_health_lagged(struct rd_health *h, uint64_t lag_ms, uint32_t timeout_ms, uint32_t ceiling);
/** A timeout or period of `ms`, stretched by (score + 1). */
uint64_t rd_health_scale(const struct rd_health *h, uint32_t ms);

#endif
