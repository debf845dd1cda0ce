/*
 * refusals.h — which gossip destinations refused our datagrams: the ICMP "port
 * unreachable" that a running host sends back when nothing listens on the port, read from
 * the UDP socket's error queue.
 *
 * Linux reports ICMP errors to an unconnected UDP socket only with IP_RECVERR (or
 * IPV6_RECVERR), and then queues each with the address the refused datagram was sent to.
 * libuv reads no error queue: a refusal shows up as one failed read (ECONNREFUSED), and the
 * queue keeps the socket readable until someone drains it. A refusal also fails the
 * socket's next send, wherever it goes (ECONNREFUSED, and that datagram is not sent). So
 * the agent turns the option on, drains the queue when libuv reports a failed read or a
 * send fails so (and sends again), and hands the destinations to the membership core
 * (rd_swim_refused), which decides what they are worth.
 */
#ifndef RD_AGENT_REFUSALS_H
#define RD_AGENT_REFUSALS_H

#include <stddef.h>

#include "member.h"

/** Turns on error reporting for the UDP socket `fd` of address family `family` (4 or 6).
 *  Returns 0, or a negative errno. */
int rd_refusals_enable(int fd, int family);

/**
 * Drains the error queue of `fd`, up to its end. Puts the destinations that refused a
 * datagram (port unreachable) in out[0..max) and returns how many; other errors (a host or
 * network unreachable, a message too long) are drained and not returned: they say nothing
 * about whether an agent runs there. `*other` (if not NULL) gets their count.
 */
size_t rd_refusals_drain(int fd, struct rd_addr *out, size_t max, size_t *other);

#endif
