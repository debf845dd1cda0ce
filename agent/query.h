/*
 * query.h — the query socket: RESP2 over a Unix stream socket.
 *
 * Applications ask their local agent who owns a key. Every Redis client already speaks
 * RESP, so no ringd-specific library is needed. The server answers from the agent's
 * current ring snapshot without blocking the loop, and pushes membership and ring events
 * to connections that sent WATCH.
 *
 * The server does not know the agent: it is handed a host, a context pointer with the
 * few functions it may call (as an event library is handed its hooks). So the agent
 * depends on the query server and never the other way, and a test can be the host.
 */
#ifndef RD_QUERY_H
#define RD_QUERY_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct rd_query;
struct rd_ring;
struct rd_swim;

/** The numbers INFO shows that only the host knows; the server formats them. */
struct rd_query_status {
    uint64_t uptime_s;
    uint64_t ring_version;           /**< rebuilds that changed the placement */
    uint32_t vnodes;                 /**< ring points per member at weight 1 */
    uint32_t weight;                 /**< this member's weight, fixed point (RD_WEIGHT_ONE) */
    uint64_t packets_malformed;      /**< datagrams dropped undecoded */
    uint64_t syncs_malformed;        /**< sync frames dropped undecoded */
    uint64_t syncs_oversize;         /**< sync frames refused for the length they announced */
    uint64_t syncs_refused_source;   /**< incoming syncs refused: per-source limit */
    uint64_t syncs_refused_full;     /**< incoming syncs refused: no slot */
    uint64_t syncs_timed_out_header; /**< incoming syncs cut: no length prefix in time */
    uint64_t syncs_timed_out_frame;  /**< incoming syncs cut: frame not whole in time */
};

/**
 * What the server may ask of its host. Every function gets `ctx` back and is called on the
 * loop's thread; none may be NULL. The ring and the member table are read during one
 * request only, never kept.
 */
struct rd_query_host {
    void *ctx;
    /** The current ring snapshot (never NULL; may be empty). */
    const struct rd_ring *(*ring)(void *ctx);
    /** The membership core, for MEMBERS and the member counts of INFO. */
    const struct rd_swim *(*swim)(void *ctx);
    /** Fills the numbers INFO shows. */
    void (*status)(void *ctx, struct rd_query_status *out);
    /** JOIN: joins through `hostport`; 0, or an RD_E* code with one line in err. It may
     *  publish events before it returns. */
    int (*join)(void *ctx, const char *hostport, char *err, size_t errlen);
    /** LEAVE: starts a graceful leave (called once the client has its +OK). */
    void (*leave)(void *ctx);
};

/** Most client connections at once; further ones are accepted and closed at once. */
#define RD_QUERY_MAX_CONNS 10000
/** Replies buffered for one connection before it is cut off (a client that stops reading). */
#define RD_QUERY_MAX_OUTPUT (8u * 1024u * 1024u)
/** Events buffered for one watcher before it is cut off. */
#define RD_QUERY_MAX_WATCH_BACKLOG (1024u * 1024u)

/**
 * Listens on `path` with permissions `mode`, serving `host` (copied). A stale socket file
 * (nobody answering) is replaced; a live one is not. Returns 0; RD_EEXIST when the path is
 * taken ("another agent is running", or a file that is not a socket); RD_EINVAL for a
 * path that does not fit a socket address; RD_EIO when a system call failed; RD_ENOMEM.
 * Every failure leaves one line in err.
 */
int rd_query_start(uv_loop_t *loop, const struct rd_query_host *host, const char *path,
                   unsigned mode, struct rd_query **out, char *err, size_t errlen);
/** Pushes one event, a flat array of strings, to every watcher. */
void rd_query_publish(struct rd_query *q, const char *const *fields, size_t n);
/** Stops listening, closes every connection and removes the socket file. */
void rd_query_close(struct rd_query *q);

#endif
