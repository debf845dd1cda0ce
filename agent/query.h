/*
 * query.h — the query socket: RESP2 over a Unix stream socket.
 *
 * Applications ask their local agent who owns a key. Every Redis client already speaks
 * RESP, so no ringd-specific library is needed. The server answers from the agent's
 * current ring snapshot without blocking the loop, and pushes membership and ring events
 * to connections that sent WATCH.
 */
#ifndef RD_QUERY_H
#define RD_QUERY_H

#include <stddef.h>
#include <uv.h>

struct rd_agent;
struct rd_query;

/** Most client connections at once; further ones are accepted and closed at once. */
#define RD_QUERY_MAX_CONNS 10000
/** Replies buffered for one connection before it is cut off (a client that stops reading). */
#define RD_QUERY_MAX_OUTPUT (8u * 1024u * 1024u)
/** Events buffered for one watcher before it is cut off. */
#define RD_QUERY_MAX_WATCH_BACKLOG (1024u * 1024u)

/**
 * Listens on `path` with permissions `mode`. A stale socket file (nobody answering) is
 * replaced; a live one is not: then it fails with "another agent is running". Returns 0
 * or -1 with a message in err.
 */
int rd_query_start(uv_loop_t *loop, struct rd_agent *agent, const char *path, unsigned mode,
                   struct rd_query **out, char *err, size_t errlen);
/** Pushes one event, a flat array of strings, to every watcher. */
void rd_query_publish(struct rd_query *q, const char *const *fields, size_t n);
/** Stops listening, closes every connection and removes the socket file. */
void rd_query_close(struct rd_query *q);

#endif
