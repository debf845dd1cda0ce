/*
 * notify.h — telling the service manager how the agent is doing: systemd's notification
 * protocol (sd_notify(3)), the datagrams "READY=1", "STOPPING=1", "STATUS=..." sent to the
 * AF_UNIX socket named by $NOTIFY_SOCKET, so that a Type=notify unit is started only once
 * the agent is ready and `systemctl status` shows what it is doing.
 *
 * Written here rather than linked from libsystemd: Debian ships libsystemd only as a shared
 * library (libsystemd-dev has no libsystemd.a, nor has libelogind-dev), and linking one
 * shared library makes the whole static ringd dynamic. The protocol is one sendto() of a
 * text datagram, and systemd documents it as a stable interface for exactly this use.
 */
#ifndef RD_AGENT_NOTIFY_H
#define RD_AGENT_NOTIFY_H

#include <stdbool.h>
#include <stddef.h>

/** Longest state text sent in one datagram (systemd reads up to 4 KiB). */
#define RD_NOTIFY_STATE_MAX 512
/** A send to a full notification socket gives up after this long: the loop never waits more. */
#define RD_NOTIFY_SEND_TIMEOUT_MS 200

struct rd_notify;

/**
 * Reads $NOTIFY_SOCKET and removes it from the environment, so that event handlers the
 * agent starts cannot speak for it. A path ("/run/systemd/notify") or an abstract name
 * ("@name") is accepted. *out is NULL when the variable is unset or empty (no service
 * manager listens: every rd_notify_send is then a no-op). Returns 0, RD_EINVAL with one
 * line in err for an address that is not an AF_UNIX path or abstract name, or RD_EIO
 * (socket()) / RD_ENOMEM with one line in err.
 */
int rd_notify_open(struct rd_notify **out, char *err, size_t errlen);

/**
 * Sends `state`, newline-separated assignments ("READY=1\nSTATUS=joined"), in one
 * datagram. 0 (also when n is NULL), or RD_EIO with one line in err: the manager did not
 * take it (gone, or its socket full for RD_NOTIFY_SEND_TIMEOUT_MS).
 */
int rd_notify_send(struct rd_notify *n, const char *state, char *err, size_t errlen);

/** Closes the socket; NULL is fine. */
void rd_notify_close(struct rd_notify *n);

#endif
