/*
 * addr.c — address text and conversions (see addr.h).
 *
 * Parsing is strict and explains itself: each refusal is one line for the operator, in the
 * caller's err buffer, because these strings come from flags, config files and JOIN.
 */
#include "addr.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rd_err.h"

static int parse_port(const char *s, int *port)
{
    if (!*s || strlen(s) > 5) return RD_EINVAL;
    for (const char *p = s; *p; p++)
        if (*p < '0' || *p > '9') return RD_EINVAL;
    long v = strtol(s, NULL, 10);
    if (v < 1 || v > 65535) return RD_EINVAL;
    *port = (int)v;
    return 0;
}

/* Refuses `text` for the reason given: one line in err, RD_EINVAL. */
static int refuse(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return RD_EINVAL;
}

int rd_hostport_split(const char *text, int default_port, char *host, size_t host_len, int *port,
                      char *err, size_t errlen)
{
    size_t n = strlen(text);
    const char *colon;
    if (n == 0 || n > RD_HOSTPORT_MAX)
        return refuse(err, errlen, n ? "address too long" : "empty address");
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (!close) return refuse(err, errlen, "missing ']' after IPv6 address");
        size_t hl = (size_t)(close - text - 1);
        if (hl == 0 || hl >= host_len) return refuse(err, errlen, "bad IPv6 address");
        memcpy(host, text + 1, hl);
        host[hl] = '\0';
        if (close[1] == '\0' && default_port) {
            *port = default_port;
            return 0;
        }
        if (close[1] != ':' || parse_port(close + 2, port) < 0)
            return refuse(err, errlen, "expected [IPv6]:PORT with a port from 1 to 65535");
        return 0;
    }
    colon = strrchr(text, ':');
    if (colon && strchr(text, ':') != colon) {
        /* several colons and no brackets: a bare IPv6 address, no port */
        if (!default_port) return refuse(err, errlen, "IPv6 addresses take brackets: [::1]:7946");
        colon = NULL;
    }
    size_t hl = colon ? (size_t)(colon - text) : n;
    if (hl >= host_len) return refuse(err, errlen, "host name too long");
    memcpy(host, text, hl);
    host[hl] = '\0';
    if (!colon) {
        if (!default_port) return refuse(err, errlen, "expected HOST:PORT");
        *port = default_port;
        return 0;
    }
    if (parse_port(colon + 1, port) < 0)
        return refuse(err, errlen, "port must be a number from 1 to 65535");
    return 0;
}

socklen_t rd_addr_to_sockaddr(const struct rd_addr *a, struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof *ss);
    if (a->family == 6) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons(a->port);
        memcpy(&s6->sin6_addr, a->ip, 16);
        return sizeof *s6;
    }
    struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
    s4->sin_family = AF_INET;
    s4->sin_port = htons(a->port);
    memcpy(&s4->sin_addr, a->ip, 4);
    return sizeof *s4;
}

int rd_addr_from_sockaddr(const struct sockaddr *sa, struct rd_addr *out)
{
    memset(out, 0, sizeof *out);
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s4 = (const struct sockaddr_in *)sa;
        out->family = 4;
        out->port = ntohs(s4->sin_port);
        memcpy(out->ip, &s4->sin_addr, 4);
        return 0;
    }
    if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
        const uint8_t *b = (const uint8_t *)&s6->sin6_addr;
        static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        out->port = ntohs(s6->sin6_port);
        if (memcmp(b, mapped, 12) == 0) {
            out->family = 4;
            memcpy(out->ip, b + 12, 4);
        } else {
            out->family = 6;
            memcpy(out->ip, b, 16);
        }
        return 0;
    }
    return RD_EINVAL;
}

int rd_addr_is_any(const struct rd_addr *a)
{
    static const uint8_t zero[16];
    return memcmp(a->ip, zero, a->family == 6 ? 16 : 4) == 0;
}
