/*
 * ringd_client.h — the agent's ring inside the application's process.
 *
 * OWNER over the query socket costs a system call and a wakeup of the agent per key. An
 * application that places many keys can instead hold the ring itself: this library asks
 * the local agent for the ring's definition (RING), builds the same ring with lib/ring
 * (every agent and this library build it bit for bit alike, proto/PROTOCOL.md "The
 * ring"), proves it by comparing checksums, and answers ringd_client_owner() in-process.
 *
 * It stays current on its own: a background thread holds a second connection subscribed
 * to the `ring` channel and fetches RING again after every ring message, and reconnects
 * with backoff when the agent goes away (a restart, an upgrade). Meanwhile owner() keeps
 * answering from the last ring that was proven.
 *
 * Thread-safety: every function may be called from any number of threads at once, except
 * ringd_client_close(), which must be the last call on a client. ringd_client_owner(),
 * ringd_client_checksum() and ringd_client_stats() never block and never wait for the
 * refresher: they read an immutable ring snapshot that the refresher swaps atomically
 * (ringd_client.c explains why a reader never sees a freed ring).
 *
 *     struct ringd_client *c;
 *     char err[256], owner[RINGD_CLIENT_NAME_MAX + 1];
 *     if (ringd_client_open("/run/ringd/ringd.sock", &c, err, sizeof err) < 0) die(err);
 *     if (ringd_client_owner(c, "user:42", 7, owner, sizeof owner) > 0) send_to(owner);
 *     ringd_client_close(c);
 */
#ifndef RINGD_CLIENT_H
#define RINGD_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Longest member name in bytes (its NUL not counted): a buffer of
 *  RINGD_CLIENT_NAME_MAX + 1 holds every owner. */
#define RINGD_CLIENT_NAME_MAX 64

/** Errors: every fallible function returns one of these (negative) or a value >= 0. */
enum ringd_client_error {
    RINGD_CLIENT_EINVAL = -1,    /**< bad argument */
    RINGD_CLIENT_ENOMEM = -2,    /**< allocation failed */
    RINGD_CLIENT_EIO = -3,       /**< the socket failed, closed or timed out */
    RINGD_CLIENT_EPROTO = -4,    /**< the agent's reply is malformed or out of range */
    RINGD_CLIENT_ECHECKSUM = -5, /**< the ring built here has another checksum than the agent's */
    RINGD_CLIENT_EUNSUPPORTED = -6, /**< a ring mode or spec this library cannot build */
    RINGD_CLIENT_ENOTREADY = -7,    /**< the agent has not joined its cluster yet (-NOTREADY) */
    RINGD_CLIENT_ERANGE = -8,       /**< the caller's buffer is too small for the name */
};

/** A connection to one agent and the ring it keeps current. Opaque. */
struct ringd_client;

/**
 * Connects to the agent's query socket at `socket_path`, fetches RING, builds the ring and
 * verifies its checksum against the agent's, then starts the refresher thread. Blocks
 * (at most a few seconds: RINGD_CLIENT_TIMEOUT_MS per exchange). Returns 0 with *out set,
 * or a negative ringd_client_error with one line in err (err may be NULL).
 */
int ringd_client_open(const char *socket_path, struct ringd_client **out, char *err, size_t errlen);

/**
 * Copies the name of the member owning key[0..len) (any bytes) into buf, NUL-terminated,
 * and returns its length (> 0); 0 with buf = "" if the ring is empty; RINGD_CLIENT_ERANGE
 * if buflen cannot hold the name and its NUL (RINGD_CLIENT_NAME_MAX + 1 always can);
 * RINGD_CLIENT_EINVAL for a NULL client or buffer. Never blocks, never allocates.
 */
int ringd_client_owner(struct ringd_client *c, const void *key, size_t len, char *buf,
                       size_t buflen);

/** The checksum of the ring owner() answers from now (INFO ring_checksum of the agent when it
 *  was fetched). Never blocks. */
uint64_t ringd_client_checksum(struct ringd_client *c);

/** What the client has been doing; a consistent copy for ringd_client_stats(). */
struct ringd_client_stats {
    uint64_t checksum;   /**< of the ring in use */
    uint64_t version;    /**< the agent's ring_version when that ring was fetched */
    uint64_t members;    /**< members of that ring */
    uint64_t refreshes;  /**< rings installed since open, the first one included */
    uint64_t fetches;    /**< RING replies received and checked, installed or not */
    uint64_t failures;   /**< fetches refused (malformed, wrong checksum, unsupported) */
    uint64_t reconnects; /**< times the refresher connected again after losing the agent */
    int connected;       /**< 1 while the refresher is subscribed, else 0 */
};

/** Fills *out. Never blocks. */
void ringd_client_stats(struct ringd_client *c, struct ringd_client_stats *out);

/** Static text for a ringd_client_error. Never NULL. */
const char *ringd_client_strerror(int err);

/** Stops the refresher (waking it wherever it waits), closes both connections and frees
 *  everything. No other call on `c` may run or follow. NULL is fine. */
void ringd_client_close(struct ringd_client *c);

/** How long one exchange with the agent (connect, request, reply) may take. */
#define RINGD_CLIENT_TIMEOUT_MS 5000
/** Reconnection backoff: doubles from the first to the second bound. */
#define RINGD_CLIENT_BACKOFF_MIN_MS 50
#define RINGD_CLIENT_BACKOFF_MAX_MS 2000

#ifdef __cplusplus
}
#endif

#endif
