/*
 * rd_err.h — the one error space of ringd.
 *
 * Every fallible function returns 0 or a negative RD_E* code, so callers in every layer
 * test `< 0` and print rd_strerror(). Decoders additionally hand back a short static
 * reason string for logs and counters.
 */
#ifndef RD_ERR_H
#define RD_ERR_H

enum rd_err {
    RD_OK = 0,
    RD_EINVAL = -1,   /**< bad argument (caller input, flag, request) */
    RD_ENOMEM = -2,   /**< allocation failed */
    RD_E2BIG = -3,    /**< over a documented limit */
    RD_EEXIST = -4,   /**< duplicate (e.g. two members with one name) */
    RD_EPROTO = -5,   /**< malformed bytes from the network */
    RD_ENOENT = -6,   /**< not found */
    RD_EAGAIN = -7,   /**< not enough bytes yet: feed more and call again */
};

/** Static, human-readable text for an RD_E* code. Never NULL. */
const char *rd_strerror(int err);

#endif
