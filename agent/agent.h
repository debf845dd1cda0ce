/*
 * agent.h — the daemon: one libuv loop that owns the sockets and the clock, feeds the
 * membership core, rebuilds the ring and serves the query socket.
 *
 * Where things are in agent/ (the library rd_agent; dependencies point down this list's
 * arrows only, and no module below agent.c includes agent.h):
 *   agent.c   the wiring: the loop, the timers (tick, ring rebuild, trim, leave), UDP
 *             gossip, signals, and the hooks it hands to sync.c and query.c
 *     ├─► sync.c    full-state sync over TCP: listener, connections, framing, timeouts
 *     ├─► query.c   the query socket: the RESP2/RESP3 server, its commands (OWNER,
 *     │             MEMBERS, INFO, HELLO, CLIENT, COMMAND, ...) from one table, and
 *     │             pub/sub (SUBSCRIBE members ring), against a host interface
 *     │     └─► event.c  each message's JSON object
 *     ├─► hooks.c   event handlers (--on-event): a bounded queue and at most one
 *     │             process per handler, fed the events on a non-blocking pipe
 *     │     └─► event.c  the JSON line of an event (also `ringd watch --json`)
 *     ├─► log.c     one logfmt or JSON line per event
 *     ├─► dns.c     --join and JOIN names: c-ares on the loop (A, AAAA, SRV)
 *     │     └─► addr.c  "host:port" text, rd_addr <-> sockaddr
 *     ├─► snapshot.c  the member table kept in --state-dir across restarts: its
 *     │               bytes, and saving and reading the file
 *     ├─► ringjob.c a ring build and its diff on a builder thread of its own; pace.c
 *     │             says when the next may start
 *     ├─► deafness.c  the longest stretch the loop went without reading input, which
 *     │               the tick counts as lag
 *     ├─► stall.c  a tick a second late says where the time went: the loop and
 *     │            builder threads' time on a CPU and waiting for one (schedstat)
 *     ├─► notify.c  READY=1, STOPPING=1 and STATUS= for systemd ($NOTIFY_SOCKET)
 *     ├─► refusals.c  the UDP socket's error queue: which destinations refused a
 *     │               datagram (ICMP port unreachable), for --probe-refusals
 *     │     └─► addr.c
 *     └─► metrics.c  the Prometheus text of a sample the loop copies out, and the
 *                    --metrics-addr HTTP endpoint (on a thread of its own; its HTTP
 *                    parser is proto/http.c)
 *   heap.h    the heap policy for ring rebuilds: freed blocks kept while the membership
 *             churns, given back when it is quiet, the build thread's arena included
 *             (header-only; bench_ring uses it too)
 *   files.c   the directory check and durable writes that query.c, keyring.c and
 *             snapshot.c share
 *   config.c  `ringd agent` flags and config file, into struct rd_agent_config
 *     └─► keyring.c  the gossip keys (--keyring-file), handed to agent.c and sync.c,
 *                    which seal and open through proto/envelope.c; agent.c changes
 *                    them at run time (KEYRING commands, SIGHUP)
 *
 * The client side, `ringd members | owner | info | watch | join | leave | ready | keys |
 * tags | weight | force-leave | keygen | version` and the `ringd` entry point, lives in cli/: it
 * talks to this daemon only through the query socket and depends on agent/, never the other way.
 */
#ifndef RD_AGENT_H
#define RD_AGENT_H

#include "config.h"

/**
 * Runs an agent until it has left. Returns 0 after a graceful leave; otherwise a negative
 * RD_E* code, the reason already logged: it could not start (RD_EIO for a socket, RD_EEXIST
 * for a query socket in use, RD_ENOMEM...), or it stopped because another member holds its
 * name (RD_EEXIST).
 */
int rd_agent_run(const struct rd_agent_config *cfg);

#endif
