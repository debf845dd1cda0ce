/*
 * suspicion.h — the arithmetic of suspicion, of local health (Lifeguard) and of storms, apart
 * from the state machine that applies it.
 *
 * Why this shape: how long a suspect has before it is declared dead, which accusers count
 * as independent confirmations, and how much our own slowness or a storm of wrong
 * suspicions stretches our timeouts are pure functions of a few numbers (N, the
 * configuration, the time, the names seen refuting). Kept apart from swim.c they can be
 * checked against a table, and swim.c only decides when to call them. Nothing here knows
 * the member table or calls back into it.
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
 * a small cluster; it lasts what the cluster we know now gives it. And while `stretch` is
 * above 0, the timeout is stretched by (stretch + 1), up to the maximum for `n`. The caller
 * passes the larger of two scores: our own local health (a member that is late itself has
 * likely not yet read the refutation on its way) and the storm score below (when many
 * members are being wrongly suspected, this suspect likely is too). Never earlier.
 */
bool rd_suspicion_extend(struct rd_suspicion *sp, const struct rd_suspicion_config *cfg, size_t n,
                         uint32_t stretch);

/*
 * A storm: many members wrongly suspected at once, as when the hosts are starved of CPU and
 * a loop waits seconds for its turn. Lifeguard's local health covers the accuser that is
 * late; in a storm the accusers may be on time while their suspects are not, and every
 * suspect is then confirmed by several independent accusers, so its timeout shrinks just
 * when suspicions are least to be trusted. What shows a storm is refutations: a member
 * that refutes a suspicion or a death was alive all along. The storm score counts the
 * distinct members seen refuting (ourselves included) over the last one to two windows,
 * less one: one member refuting again and again is Lifeguard's slow exception, which its
 * own health handles, and its refutations count once. A real crash is never refuted, so in
 * a quiet cluster the score is 0 and detection is as fast as ever.
 */

/** Distinct refuters remembered per window; the score never exceeds twice this less one. */
#define RD_STORM_REFUTERS_MAX 16

struct rd_storm {
    uint64_t window_start_ms;             /**< the current window began here */
    uint64_t cur[RD_STORM_REFUTERS_MAX];  /**< this window's refuters, by name hash */
    uint64_t prev[RD_STORM_REFUTERS_MAX]; /**< the window before, when it ended just now */
    uint32_t ncur, nprev;
};

/** `member` (a name) refuted a suspicion or a death at `now_ms`; windows are `window_ms`
 *  long. A time before the current window counts as its start. */
void rd_storm_refuted(struct rd_storm *st, const char *member, uint64_t now_ms, uint64_t window_ms);
/** The storm score at `now_ms`: distinct refuters in this window and the one before, less
 *  one, at most `ceiling`. */
uint32_t rd_storm_score(const struct rd_storm *st, uint64_t now_ms, uint64_t window_ms,
                        uint32_t ceiling);

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
