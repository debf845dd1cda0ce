/*
 * rd_err.h — the one error space of ringd, and how errors travel.
 *
 * The convention, in every layer: a fallible function returns 0 or a negative RD_E* code,
 * so callers test `< 0` and branch on the code. When a person needs words (a flag that
 * does not parse, a socket that cannot be bound), the caller passes `char *err, size_t
 * errlen` and gets one line there, without a trailing newline; the code still says what
 * kind of failure it was. Failures of the system (libuv, socket calls) are RD_EIO, with
 * the system's text (uv_strerror, strerror) in that line. The decoders of proto/ (wire,
 * resp), which run per packet and per request, hand back a static reason string instead
 * of formatting one, for logs and counters.
 */
#ifndef RD_ERR_H
#define RD_ERR_H

enum rd_err {
    RD_OK = 0,
    RD_EINVAL = -1,     /**< bad argument (caller input, flag, request) */
    RD_ENOMEM = -2,     /**< allocation failed */
    RD_E2BIG = -3,      /**< over a documented limit */
    RD_EEXIST = -4,     /**< duplicate (e.g. two members with one name), or already in use */
    RD_EPROTO = -5,     /**< malformed bytes from the network */
    RD_ENOENT = -6,     /**< not found */
    RD_EAGAIN = -7,     /**< not enough bytes yet: feed more and call again */
    RD_EIO = -8,        /**< a system call or socket failed (details in the caller's err) */
    RD_EREFUSED = -9,   /**< the other side understood the request and said no */
    RD_ECORRUPT = -10,  /**< our own state breaks an invariant: a bug, not bad input */
    RD_ECANCELED = -11, /**< abandoned at its caller's request before it finished */
};

/** Static, human-readable text for an RD_E* code. Never NULL. */
const char *rd_strerror(int err);

#endif
