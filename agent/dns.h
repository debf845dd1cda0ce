/*
 * dns.h — names to addresses without blocking the loop: c-ares, driven by libuv.
 *
 * A seed is "HOST:PORT" (a literal or a name: every A and AAAA address of the name is a
 * seed) or "srv:NAME" (the SRV records of NAME: each target's A and AAAA addresses, at the
 * record's port). Resolution is asked again on every join retry, so the answer is a list
 * that replaces the previous one, not an address kept for life.
 */
#ifndef RD_AGENT_DNS_H
#define RD_AGENT_DNS_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include "addr.h"
#include "member.h"

/** The longest DNS name (RFC 1035: 255 octets on the wire, 253 characters as text). */
#define RD_DNS_NAME_MAX 253
/** Most addresses one seed text resolves to (all of a name's, or of its SRV targets'). */
#define RD_DNS_ADDRS_MAX 16
/** Most SRV targets of one name that are resolved. */
#define RD_DNS_SRV_TARGETS_MAX 8
/** The prefix of an SRV seed: "srv:_ringd._udp.example.org". */
#define RD_DNS_SRV_PREFIX "srv:"
/**
 * A question unanswered after this is asked again, up to RD_DNS_TRIES times per server,
 * the wait doubling each round (c-ares): 2 s then 4 s, so a silent server costs a JOIN or a
 * resolution round 6 s, not c-ares' default 5+10+20+40 s. They replace resolv.conf's
 * "options timeout: attempts:".
 */
#define RD_DNS_TIMEOUT_MS 2000
#define RD_DNS_TRIES      2
/** Longest --dns-server list ("HOST:PORT,HOST:PORT"). */
#define RD_DNS_SERVERS_MAX 256

/** A seed text, parsed: a host (name or literal) and its port, or an SRV name. */
struct rd_dns_spec {
    bool srv;
    char host[RD_HOSTPORT_MAX + 1];
    int port; /* 0 for srv: each record has its own */
};

/**
 * Parses a seed text: "srv:NAME", or what rd_hostport_split takes (with default_port).
 * Returns 0, or RD_EINVAL with one line saying why in err.
 */
int rd_dns_spec_parse(const char *text, int default_port, struct rd_dns_spec *out, char *err,
                      size_t errlen);
/**
 * Appends the addresses of src[0..m) that dst[0..n) lacks, while fewer than cap; returns
 * the new count. Order is kept: the first answer of a name is tried first.
 */
size_t rd_dns_merge(struct rd_addr *dst, size_t n, size_t cap, const struct rd_addr *src, size_t m);
/** Moves IPv4 addresses before IPv6 ones, each kind in its order (most fleets bind IPv4). */
void rd_dns_ipv4_first(struct rd_addr *a, size_t n);

struct rd_dns;
/**
 * A resolver on `loop`. `servers` is "" for the system's (/etc/resolv.conf, /etc/hosts), or
 * "HOST:PORT[,HOST:PORT...]" with numeric hosts. 0, or a negative RD_E* with why in err.
 */
int rd_dns_start(uv_loop_t *loop, const char *servers, struct rd_dns **out, char *err,
                 size_t errlen);
/** Stops: pending resolutions are abandoned (their callbacks never run). NULL is fine. */
void rd_dns_close(struct rd_dns *d);

/**
 * The outcome of a resolution, on the loop's thread, never from inside rd_dns_resolve: rc
 * 0 with addrs[0..n) (n >= 1), or a negative RD_E* with why (one line). `text` is what was
 * resolved. Everything lives for the call only.
 */
typedef void (*rd_dns_cb)(void *ctx, const char *text, int rc, const struct rd_addr *addrs,
                          size_t n, const char *why);
struct rd_dns_req;
/**
 * Resolves a seed text (rd_dns_spec_parse). 0 with the pending request in *out (may be
 * NULL when the caller never abandons); RD_EINVAL (malformed) or RD_ENOMEM with one line
 * in err, and then `cb` never runs.
 */
int rd_dns_resolve(struct rd_dns *d, const char *text, int default_port, rd_dns_cb cb, void *ctx,
                   struct rd_dns_req **out, char *err, size_t errlen);
/** Gives up a pending request: its callback never runs. */
void rd_dns_abandon(struct rd_dns_req *r);

/**
 * The blocking form, for start-up and reload (--bind, --advertise): one address for
 * `text`, IPv4 first, by c-ares on a loop of its own, from /etc/resolv.conf's servers. `passive`
 * lets an empty host or "*" mean "any address". 0, or RD_EINVAL with why in err.
 */
int rd_dns_resolve_now(const char *text, int default_port, bool passive, struct rd_addr *out,
                       char *err, size_t errlen);

#endif
