/*
 * metrics.h — the Prometheus endpoint (--metrics-addr) and the text it serves.
 *
 * Two halves, apart on purpose: rd_metrics_format() turns a struct rd_metrics_sample (plain
 * numbers the agent copied out of its modules) into the text exposition format 0.0.4, with
 * no I/O, so a unit test can check every line; the HTTP server serves the last text the
 * loop published and never touches the agent. The METRICS socket command and `ringd
 * metrics` print the same text.
 */
#ifndef RD_METRICS_H
#define RD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "envelope.h"
#include "http.h"
#include "swim.h"
#include "sync.h"

/** Upper bounds (seconds) of the ring rebuild duration histogram; +Inf is implied. */
#define RD_METRICS_REBUILD_BUCKETS 10
extern const double rd_metrics_rebuild_bounds[RD_METRICS_REBUILD_BUCKETS];

/** A cumulative histogram of durations in seconds. */
struct rd_metrics_histogram {
    uint64_t buckets[RD_METRICS_REBUILD_BUCKETS]; /**< observations <= each bound */
    uint64_t count;
    double sum;
};

/** Records one duration (seconds) in `h`. */
void rd_metrics_observe(struct rd_metrics_histogram *h, double seconds);

/** Query socket commands counted by name; the rest go under "other". */
#define RD_METRICS_COMMANDS_MAX 24

/** What /proc/self says about the process. */
struct rd_metrics_process {
    double cpu_seconds;
    uint64_t resident_bytes, virtual_bytes;
    uint64_t open_fds, max_fds;
    double start_time_seconds; /**< since the epoch */
    bool ok;                   /**< false: /proc was unreadable, the process_* lines are left out */
};

/** Every number the agent exposes, copied out on the loop's thread. */
struct rd_metrics_sample {
    char version[32];
    bool ready;
    uint64_t members[4]; /**< by status: alive, suspect, dead, left */
    uint64_t ring_points, ring_members, ring_version, ring_checksum;
    uint64_t ring_rebuilds; /**< rebuilds computed, whether or not placement changed */
    struct rd_metrics_histogram rebuild_seconds;
    double ring_last_moved;    /**< fraction of the key space the last change moved */
    struct rd_swim_stats swim; /**< the core's counters (packets, probes, syncs, ...) */
    struct rd_sync_stats sync; /**< sync.c's: connections refused and cut, frames dropped */
    uint64_t bytes_in, bytes_out;
    uint64_t packets_malformed;
    uint64_t packets_refused; /* datagrams whose destination refused them */
    struct rd_envelope_drops packets_dropped, syncs_dropped;
    uint64_t suspicions; /**< members this agent saw turn suspect */
    uint32_t health;
    uint32_t storm; /**< rd_swim_storm() */
    size_t ncommands;
    const char *command_names[RD_METRICS_COMMANDS_MAX];
    uint64_t command_counts[RD_METRICS_COMMANDS_MAX];
    uint64_t connections, watchers, connections_rejected, connections_cut_off;
    uint64_t http_requests, http_cut_off; /**< the endpoint's own counts */
    uint64_t http_errors;                 /**< requests answered with an error status (4xx, 5xx) */
    uint64_t http_refused; /**< connections closed at accept, over a connection limit */
    struct rd_metrics_process process;
};

/** Reads /proc/self into `out` (out->ok false when it could not). */
void rd_metrics_read_process(struct rd_metrics_process *out);

/**
 * Writes `s` in the text exposition format 0.0.4 into buf[0..cap), NUL-terminated when it
 * fits, and returns the length the whole text needs (as snprintf does): a caller whose cap
 * was too small grows the buffer and calls again.
 */
size_t rd_metrics_format(const struct rd_metrics_sample *s, char *buf, size_t cap);

/** Most HTTP connections at once; one more is accepted and closed at once. */
#define RD_METRICS_MAX_CONNS 32
/** ... of them from one IP address. */
#define RD_METRICS_MAX_PER_IP 4
/** A connection is cut this long after it was accepted, busy or not: a client that
 *  trickles its headers a byte at a time, or never reads its answer, does not keep a slot.
 *  (With one request per connection this is also the idle timeout.) */
#define RD_METRICS_DEADLINE_MS 5000
/** Memory for one connection's request (headers included); a longer request gets 431. */
#define RD_METRICS_REQUEST_MAX RD_HTTP_REQUEST_MAX
/** After its answer, how long a connection waits for the client to close (within the
 *  deadline): closing with unread request bytes would reset the answer away. */
#define RD_METRICS_LINGER_MS 1000
/** When accept fails for want of descriptors, the server stops accepting this long
 *  (the listener would otherwise wake it again at once). */
#define RD_METRICS_ACCEPT_PAUSE_MS 100
/** Connections the kernel queues for the server thread to accept. */
#define RD_METRICS_BACKLOG 64

struct rd_metrics_server;

/**
 * Serves GET /metrics on `addr` from a thread of its own. Returns 0, or RD_EIO with one
 * line in err (the address is taken, the thread did not start), or RD_ENOMEM.
 */
int rd_metrics_start(const struct rd_addr *addr, struct rd_metrics_server **out, char *err,
                     size_t errlen);
/** Replaces the text the server answers with (copied). Any thread; never waits on I/O. */
int rd_metrics_publish(struct rd_metrics_server *m, const char *text, size_t len);
/** Adds the server's own counts (requests answered, refused, connections cut) to `s`. */
void rd_metrics_server_counts(struct rd_metrics_server *m, struct rd_metrics_sample *s);
/** Stops the thread, closes every connection, frees. NULL is fine. */
void rd_metrics_stop(struct rd_metrics_server *m);

#endif
