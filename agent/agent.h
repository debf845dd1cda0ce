/*
 * agent.h — the daemon: one libuv loop that owns the sockets and the clock, feeds the
 * membership core, rebuilds the ring and serves the query socket.
 *
 * The query server reaches the agent only through the accessors below, so it never
 * touches the core or the ring behind the agent's back.
 */
#ifndef RD_AGENT_H
#define RD_AGENT_H

#include <stdint.h>

#include "buf.h"
#include "config.h"
#include "ring.h"
#include "swim.h"

struct rd_agent;

/** Runs an agent until it has left; returns the process exit code (0 after a leave). */
int rd_agent_run(const struct rd_agent_config *cfg);

/** The current ring snapshot (never NULL; may be empty). Valid until the loop runs again. */
const struct rd_ring *rd_agent_ring(const struct rd_agent *a);
/** The membership core, for reading the member table. */
struct rd_swim *rd_agent_swim(struct rd_agent *a);
/** Appends the INFO text ("field:value\r\n" lines) to out. Returns 0 or RD_ENOMEM. */
int rd_agent_info(struct rd_agent *a, struct rd_buf *out);
/** Joins through `hostport` (resolved now). Returns 0 or RD_EINVAL with *why. */
int rd_agent_join(struct rd_agent *a, const char *hostport, const char **why);
/** Starts a graceful leave; the agent exits once the leave went out. */
void rd_agent_leave(struct rd_agent *a);

#endif
