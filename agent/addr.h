/*
 * addr.h — "host:port" text to addresses and back, and rd_addr <-> sockaddr.
 *
 * IPv6 literals take brackets ("[::1]:7946"), as in URLs; a bare IPv6 literal without a
 * port is also accepted when a default port is given. Host names are resolved with
 * getaddrinfo: blocking at start-up (rd_addr_resolve), and on libuv's thread pool once the
 * loop runs (rd_addr_resolve_start), because one slow name server must not stall gossip.
 */
#ifndef RD_AGENT_ADDR_H
#define RD_AGENT_ADDR_H

#include <netinet/in.h>
#include <stddef.h>
#include <sys/socket.h>
#include <uv.h>

#include "member.h"

/** Longest "host:port" text accepted. */
#define RD_HOSTPORT_MAX 300

/**
 * Splits "host:port", "[v6]:port" or (with default_port != 0) "host" / "[v6]" / "v6" into
 * host and port. Returns 0, or RD_EINVAL with one line saying why in err.
 */
int rd_hostport_split(const char *text, int default_port, char *host, size_t host_len, int *port,
                      char *err, size_t errlen);
/**
 * Parses and resolves `text` (numeric or a host name) to an address. `passive` allows an
 * empty host or "*" to mean "any address" (for --bind). Returns 0, or RD_EINVAL with one
 * line saying why in err (a malformed text, a name that does not resolve).
 */
int rd_addr_resolve(const char *text, int default_port, int passive, struct rd_addr *out, char *err,
                    size_t errlen);
/**
 * The outcome of an asynchronous resolution: rc 0 with the address, or RD_EINVAL with why
 * (one line). `text` is the text that was resolved; it and `why` live for the call only.
 */
typedef void (*rd_resolve_cb)(void *ctx, const char *text, int rc, const struct rd_addr *addr,
                              const char *why);
struct rd_resolve;
/**
 * rd_addr_resolve without blocking the loop: parses `text` now and resolves its host on the
 * thread pool; `cb` runs later on the loop's thread, once, unless abandoned. Returns 0 with
 * the pending resolution in *out; RD_EINVAL (malformed text) or RD_ENOMEM with one line in
 * err, and then `cb` never runs.
 */
int rd_addr_resolve_start(uv_loop_t *loop, const char *text, int default_port, rd_resolve_cb cb,
                          void *ctx, struct rd_resolve **out, char *err, size_t errlen);
/** Gives up a pending resolution: its callback never runs; its memory goes when the thread
 *  pool is done with it (the loop keeps running until then). */
void rd_addr_resolve_abandon(struct rd_resolve *r);
/** rd_addr to sockaddr; returns the length used. */
socklen_t rd_addr_to_sockaddr(const struct rd_addr *a, struct sockaddr_storage *ss);
/** sockaddr to rd_addr (IPv4-mapped IPv6 becomes IPv4); RD_EINVAL for other families. */
int rd_addr_from_sockaddr(const struct sockaddr *sa, struct rd_addr *out);
/** True for 0.0.0.0 and ::. */
int rd_addr_is_any(const struct rd_addr *a);

#endif
