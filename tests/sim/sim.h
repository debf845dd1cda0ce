/*
 * sim.h — a deterministic discrete-event simulator for the membership core.
 *
 * It runs many real rd_swim instances in one process on virtual time, with every packet
 * round-tripped through the real wire codec, over a fake network whose faults are data:
 * per-link loss and delay, one-way and two-way partitions, frozen members (they neither
 * process nor send until thawed), CPU starvation (members run only in short, late slices),
 * crashes (of a silent host, or of a process whose host refuses its datagrams) and
 * restarts. All randomness flows from one seed, so a run replays bit for bit: tests print
 * the seed, and `--seed` replays it.
 *
 * Full-state syncs (TCP in the agent) are delivered at once as a request and a reply, and
 * fail when the link is cut or the peer is down.
 */
#ifndef RD_SIM_H
#define RD_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "swim.h"

struct sim;

/** Member lifecycle as the simulator sees it. */
enum sim_state { SIM_UP = 0, SIM_FROZEN = 1, SIM_DOWN = 2 };

/** Creates a simulator of `n` members named "m0".."m{n-1}", none started yet. */
struct sim *sim_new(size_t n, uint64_t seed, const struct rd_swim_config *cfg);
void sim_delete(struct sim *sim);

/** Virtual time now, in ms (starts at 1,000,000 so that 0 never means "now"). */
uint64_t sim_now(const struct sim *sim);
/** The seed this simulator was made with. */
uint64_t sim_seed(const struct sim *sim);

/** Starts member i (a new life: incarnation taken from the virtual clock) joining `seed`. */
void sim_start(struct sim *sim, size_t i, size_t seed_member);
/** Like sim_start, but member i claims the name of member `as` (a misconfiguration). */
void sim_start_as(struct sim *sim, size_t i, size_t seed_member, size_t as);
/** Starts every member, each joining member `seed_member`, `spread_ms` apart. */
void sim_start_all(struct sim *sim, size_t seed_member, uint64_t spread_ms);
/** Crash of a host: member i stops at once, nothing more is sent or received. */
void sim_crash(struct sim *sim, size_t i);
/** Crash of a process on a running host: member i stops at once, and every datagram sent
 *  to it comes back to its sender as a refusal (rd_swim_refused), with the link's delay
 *  and loss, as ICMP port unreachable does. */
void sim_crash_process(struct sim *sim, size_t i);
/** Freeze / thaw: a frozen member keeps its state but processes nothing; packets to it queue. */
void sim_freeze(struct sim *sim, size_t i, bool frozen);
/**
 * CPU starvation of member i (SIZE_MAX: every member), as a process among far more
 * runnable processes than cores: it runs only in slices of 1 ms separated by gaps drawn
 * from the seeded generator, uniform with mean `mean_gap_ms` and never above
 * `max_gap_ms`, each member with its own random phase. Packets that arrive in a gap wait
 * in its socket buffer (bounded, like a frozen member's); its timers fire late. When it
 * runs, libuv's order applies: the overdue tick first, at the real time and told how late
 * it is (rd_swim_tick_lagged), then the buffered packets. Full-state syncs are still
 * carried out at once. max_gap_ms 0 ends the starvation: the buffer is read at once.
 */
void sim_set_starve(struct sim *sim, size_t i, uint32_t mean_gap_ms, uint32_t max_gap_ms);
/** Graceful leave of member i (it then goes down once its leave is sent). */
void sim_leave(struct sim *sim, size_t i);

/** Loss probability 0..1 on every packet from a to b (a or b = SIZE_MAX: all). */
void sim_set_loss(struct sim *sim, size_t a, size_t b, double loss);
/** One-way cut: nothing from a reaches b (SIZE_MAX: all). */
void sim_set_cut(struct sim *sim, size_t a, size_t b, bool cut);
/** Splits the members into two groups [0, k) and [k, n) that cannot hear each other. */
void sim_partition(struct sim *sim, size_t k, bool on);
/** Base delay and uniform jitter per packet, ms. */
void sim_set_delay(struct sim *sim, uint32_t delay_ms, uint32_t jitter_ms);

/** A forged datagram: member i receives `pkt` from `from` now (as if it came off the wire;
 *  pkt is round-tripped through the codec first), and what it answers is sent. */
void sim_inject(struct sim *sim, size_t i, const struct rd_addr *from, const struct rd_packet *pkt);

/** A forged refusal: member i hears now that member `about`'s address refused a datagram
 *  (rd_swim_refused), whatever `about`'s state; what it answers is sent. */
void sim_refuse(struct sim *sim, size_t i, size_t about);

/** Member i's core was changed from outside, as a socket command does: what it now wants
 *  sent goes out at once, and its next tick is rescheduled. */
void sim_poke(struct sim *sim, size_t i);
/** Runs until virtual time `t`. */
void sim_run_until(struct sim *sim, uint64_t t);
/** Runs for `ms` of virtual time. */
void sim_run(struct sim *sim, uint64_t ms);
/**
 * Runs until `pred` holds (checked every `step_ms`) or `max_ms` pass. Returns the virtual
 * time it took, or UINT64_MAX if it never held.
 */
uint64_t sim_run_until_pred(struct sim *sim, bool (*pred)(struct sim *, void *), void *arg,
                            uint64_t step_ms, uint64_t max_ms);

/** Member i's core (NULL if down). */
struct rd_swim *sim_swim(struct sim *sim, size_t i);
enum sim_state sim_state(const struct sim *sim, size_t i);
size_t sim_size(const struct sim *sim);
const char *sim_name(const struct sim *sim, size_t i);

/** Status of member `about` as member `viewer` sees it; -1 if unknown to it. */
int sim_view(struct sim *sim, size_t viewer, size_t about);
/** True if every up member other than `about` sees `about` as `status` (-1: does not know it). */
bool sim_all_see(struct sim *sim, size_t about, int status);
/** True if every up member has the same membership checksum and sees `alive` members alive. */
bool sim_converged(struct sim *sim, size_t alive);
/** Times any member saw `about` become `status` (events), counted over the whole run. */
uint64_t sim_event_count(const struct sim *sim, size_t about, int status);
/** Membership events (about anyone) that member `viewer` saw, over the whole run. */
uint64_t sim_events_seen(const struct sim *sim, size_t viewer);
/** All "dead" events about members that were up (not crashed, frozen or gone) at the time. */
uint64_t sim_false_deaths(const struct sim *sim);
/** Packets sent and delivered, over the run. */
uint64_t sim_packets_sent(const struct sim *sim);

/*
 * Measurement counters (for tests/sim/sweep.c). They only count: nothing in the
 * simulation reads them, so adding them changed no run.
 */
/** False "dead" events (as in sim_false_deaths) about member `about`, over the run. */
uint64_t sim_false_deaths_about(const struct sim *sim, size_t about);
/** Encoded bytes of the UDP packets counted by sim_packets_sent, over the run. */
uint64_t sim_bytes_sent(const struct sim *sim);
/** Full-state exchanges that reached their peer (as TCP would), over the run. */
uint64_t sim_syncs(const struct sim *sim);
/** Encoded bytes of those exchanges, both directions, over the run. */
uint64_t sim_sync_bytes(const struct sim *sim);

#endif
