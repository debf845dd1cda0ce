/*
 * refusals.c — the UDP socket's error queue (see refusals.h).
 *
 * Shape: two calls and no state. Draining reads until the queue is empty, whatever the
 * room in `out`: a queue left non-empty keeps the socket readable and the loop spinning.
 */
#include "refusals.h"

#include <errno.h>
#include <time.h> /* before errqueue.h, which uses struct timespec */
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>

#include "addr.h"

int rd_refusals_enable(int fd, int family)
{
    int on = 1;
    int rc = family == 6 ? setsockopt(fd, IPPROTO_IPV6, IPV6_RECVERR, &on, sizeof on)
                         : setsockopt(fd, IPPROTO_IP, IP_RECVERR, &on, sizeof on);
    return rc < 0 ? -errno : 0;
}

/* The extended error of one error-queue message, or NULL. */
static const struct sock_extended_err *extended_err(struct msghdr *h)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(h); c; c = CMSG_NXTHDR(h, c))
        if ((c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_RECVERR) ||
            (c->cmsg_level == IPPROTO_IPV6 && c->cmsg_type == IPV6_RECVERR))
            return (const struct sock_extended_err *)CMSG_DATA(c);
    return NULL;
}

size_t rd_refusals_drain(int fd, struct rd_addr *out, size_t max, size_t *other)
{
    size_t n = 0, rest = 0;
    for (;;) {
        struct sockaddr_storage to;
        char data[64]; /* the start of the refused datagram: unused, but must go somewhere */
        union {
            char buf[CMSG_SPACE(sizeof(struct sock_extended_err) + sizeof(struct sockaddr_in6))];
            struct cmsghdr align;
        } control;
        struct iovec iov = {.iov_base = data, .iov_len = sizeof data};
        struct msghdr h = {.msg_name = &to,
                           .msg_namelen = sizeof to,
                           .msg_iov = &iov,
                           .msg_iovlen = 1,
                           .msg_control = control.buf,
                           .msg_controllen = sizeof control.buf};
        ssize_t got = recvmsg(fd, &h, MSG_ERRQUEUE | MSG_DONTWAIT);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) break; /* EAGAIN: the queue is empty */
        const struct sock_extended_err *ee = extended_err(&h);
        bool icmp =
            ee && (ee->ee_origin == SO_EE_ORIGIN_ICMP || ee->ee_origin == SO_EE_ORIGIN_ICMP6);
        struct rd_addr addr;
        if (icmp && ee->ee_errno == ECONNREFUSED && h.msg_namelen > 0 &&
            rd_addr_from_sockaddr((struct sockaddr *)&to, &addr) == 0) {
            if (n < max) out[n++] = addr;
        } else {
            rest++;
        }
    }
    if (other) *other = rest;
    return n;
}
