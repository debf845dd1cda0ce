/*
 * addr.h — "host:port" text to addresses and back, and rd_addr <-> sockaddr.
 *
 * IPv6 literals take brackets ("[::1]:7946"), as in URLs; a bare IPv6 literal without a
 * port is also accepted when a default port is given. Host names are resolved elsewhere
 * (dns.c), with c-ares on the loop, because one slow name server must not stall gossip.
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
/** rd_addr to sockaddr; returns the length used. */
socklen_t rd_addr_to_sockaddr(const struct rd_addr *a, struct sockaddr_storage *ss);
/** sockaddr to rd_addr (IPv4-mapped IPv6 becomes IPv4); RD_EINVAL for other families. */
int rd_addr_from_sockaddr(const struct sockaddr *sa, struct rd_addr *out);
/** True for 0.0.0.0 and ::. */
int rd_addr_is_any(const struct rd_addr *a);

#endif
