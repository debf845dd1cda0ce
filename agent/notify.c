/*
 * notify.c — systemd's notification protocol (see notify.h): one unconnected datagram
 * socket opened at start, one sendto() per state change.
 *
 * The address is taken once and the variable removed: a handler started by --on-event
 * inherits the environment, and the manager would otherwise hear a child claim the
 * agent's state (NotifyAccess=main drops that anyway; this keeps it quiet). The socket
 * blocks, with a send timeout, because the manager reads its socket as fast as it can and
 * a READY=1 dropped on a momentarily full queue would fail the unit's start: it may wait
 * RD_NOTIFY_SEND_TIMEOUT_MS, a few times in the agent's life, never more.
 */
#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "rd_err.h"

struct rd_notify {
    int fd;
    struct sockaddr_un addr;
    socklen_t addrlen;
};

int rd_notify_open(struct rd_notify **out, char *err, size_t errlen)
{
    *out = NULL;
    const char *env = getenv("NOTIFY_SOCKET");
    if (!env || !env[0]) return 0;
    struct rd_notify *n = calloc(1, sizeof *n);
    if (!n) {
        snprintf(err, errlen, "out of memory");
        return RD_ENOMEM;
    }
    size_t len = strlen(env);
    n->addr.sun_family = AF_UNIX;
    if ((env[0] != '/' && env[0] != '@') || len >= sizeof n->addr.sun_path) {
        snprintf(err, errlen, "NOTIFY_SOCKET=%.*s is not a Unix socket path or @name: ignored", 64,
                 env);
        free(n);
        unsetenv("NOTIFY_SOCKET");
        return RD_EINVAL;
    }
    memcpy(n->addr.sun_path, env, len);
    if (env[0] == '@') n->addr.sun_path[0] = '\0'; /* abstract: no terminating NUL counted */
    n->addrlen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (env[0] == '/'));
    unsetenv("NOTIFY_SOCKET");
    n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (n->fd < 0) {
        snprintf(err, errlen, "notification socket: %s", strerror(errno));
        free(n);
        return RD_EIO;
    }
    struct timeval tv = {.tv_sec = RD_NOTIFY_SEND_TIMEOUT_MS / 1000,
                         .tv_usec = (RD_NOTIFY_SEND_TIMEOUT_MS % 1000) * 1000};
    (void)setsockopt(n->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    *out = n;
    return 0;
}

int rd_notify_send(struct rd_notify *n, const char *state, char *err, size_t errlen)
{
    if (!n) return 0;
    size_t len = strnlen(state, RD_NOTIFY_STATE_MAX);
    ssize_t w;
    do
        w = sendto(n->fd, state, len, MSG_NOSIGNAL, (const struct sockaddr *)&n->addr, n->addrlen);
    while (w < 0 && errno == EINTR);
    if (w < 0) {
        snprintf(err, errlen, "cannot notify the service manager: %s", strerror(errno));
        return RD_EIO;
    }
    return 0;
}

void rd_notify_close(struct rd_notify *n)
{
    if (!n) return;
    close(n->fd);
    free(n);
}
