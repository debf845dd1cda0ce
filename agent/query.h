/*
 * query.h — the query socket: RESP2 over a Unix stream socket.
 *
 * Applications ask their local agent who owns a key. Every Redis client already speaks
 * RESP, so no ringd-specific library is needed. The server answers from the agent's
 * current ring snapshot without blocking the loop, and publishes membership and ring
 * events to the connections subscribed to them (SUBSCRIBE, PSUBSCRIBE), as Redis pub/sub.
 *
 * The server does not know the agent: it is handed a host, a context pointer with the
 * few functions it may call (as an event library is handed its hooks). So the agent
 * depends on the query server and never the other way, and a test can be the host.
 */
#ifndef RD_QUERY_H
#define RD_QUERY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "envelope.h"
#include "hooks.h"
#include "keyring.h"
#include "member.h"
#include "msg.h"

struct rd_query;
struct rd_query_peer;
struct rd_ring;
struct rd_swim;

/** Longest release text INFO shows. */
#define RD_QUERY_VERSION_MAX 31
/** Longest timing profile name INFO shows. */
#define RD_QUERY_PROFILE_MAX 15

/** The numbers INFO shows that only the host knows; the server formats them. */
struct rd_query_status {
    uint64_t uptime_s;
    uint32_t storm; /**< the core's storm score now (rd_swim_storm: it needs the agent's clock,
                         which the core's other readers here do not) */
    uint64_t ring_version;             /**< rebuilds that changed the placement */
    struct rd_ring_params ring_params; /**< what the ring is built with */
    const char *ring_params_source;    /**< "set", "default" or "adopted" */
    uint32_t weight;                   /**< this member's weight, fixed point (RD_WEIGHT_ONE) */
    uint32_t max_weight;               /**< heavier members are placed at this weight */
    size_t members_weight_capped;      /**< members of the ring placed at max_weight */
    uint64_t packets_malformed;        /**< datagrams dropped undecoded */
    uint64_t packets_refused;          /**< datagrams whose destination refused them */
    uint64_t syncs_malformed;          /**< sync frames dropped undecoded */
    uint64_t syncs_oversize;           /**< sync frames refused for the length they announced */
    uint64_t syncs_refused_source;     /**< incoming syncs refused: per-source limit */
    uint64_t syncs_refused_full;       /**< incoming syncs refused: no slot */
    uint64_t syncs_timed_out_header;   /**< incoming syncs cut: no length prefix in time */
    uint64_t syncs_timed_out_frame;    /**< incoming syncs cut: frame not whole in time */
    uint64_t syncs_refused_ring;       /**< sync frames not merged: ring parameters differ */
    struct rd_envelope_drops packets_dropped; /**< datagrams refused by the envelope rule */
    struct rd_envelope_drops syncs_dropped;   /**< sync frames refused by it */
    bool verify_incoming;                     /**< keyed and refusing plain gossip */
    bool verify_outgoing;                     /**< keyed and sealing what it sends */
    size_t keyring_keys;                      /**< keys in the keyring (0: gossip in the clear) */
    char keyring_primary[RD_KEY_FINGERPRINT_LEN + 1]; /**< its fingerprint, "" without keys */
    struct rd_hook_stats hooks;                       /**< the --on-event handlers' counts */
    char version[RD_QUERY_VERSION_MAX + 1];           /**< the agent's release, "" if unknown */
    uint64_t pid;                                     /**< the agent's process id */
    char config_file[4096];                           /**< the last --config, "" without one */
    char profile[RD_QUERY_PROFILE_MAX + 1];           /**< timing profile: lan, wan or local */
};

/** The keyring changes a client may ask for (KEYRING INSTALL, USE, REMOVE). */
enum rd_query_key_op { RD_QUERY_KEY_INSTALL, RD_QUERY_KEY_USE, RD_QUERY_KEY_REMOVE };

/** The run-time changes of TAGS SET, TAGS DEL, WEIGHT and FORCE-LEAVE. */
enum rd_query_change_op {
    RD_QUERY_TAG_SET,     /**< arg: the key, arg2: the value */
    RD_QUERY_TAG_DEL,     /**< arg: the key */
    RD_QUERY_WEIGHT,      /**< arg: the weight as the client wrote it ("0" drains) */
    RD_QUERY_FORCE_LEAVE, /**< arg: the member's name; arg2 non-NULL: PRUNE */
};

/**
 * What the server may ask of its host. Every function gets `ctx` back and is called on the
 * loop's thread; none may be NULL. The ring and the member table are read during one
 * request only, never kept.
 */
struct rd_dns;

struct rd_query_host {
    void *ctx;
    /** The current ring snapshot (never NULL; may be empty). */
    const struct rd_ring *(*ring)(void *ctx);
    /** The membership core, for MEMBERS and the member counts of INFO. */
    const struct rd_swim *(*swim)(void *ctx);
    /** Fills the numbers INFO shows. */
    void (*status)(void *ctx, struct rd_query_status *out);
    /** JOIN: joins through `seed`, which the server resolved from `hostport` (HOST:PORT or
     *  srv:NAME; the first address, IPv4 first) without blocking the loop. It may publish events
     * before it returns. It opens an exchange with `seed` and must report its outcome, then or
     * later, with rd_query_join_done(): the client waits for it. */
    void (*join)(void *ctx, const char *hostport, const struct rd_addr *seed);
    /** LEAVE: starts a graceful leave (called once the client has its +OK). */
    void (*leave)(void *ctx);
    /** KEYRING LIST: writes the keys' fingerprints, primary first, to fps and returns how
     *  many there are (0: the agent has no keyring). */
    size_t (*keyring_list)(void *ctx, char fps[RD_KEYRING_MAX][RD_KEY_FINGERPRINT_LEN + 1]);
    /** KEYRING INSTALL, USE or REMOVE, asked by an admin `peer`: `arg` is the key in base64
     *  (INSTALL) or a fingerprint prefix. Applies the change to the keyring in force and to
     *  its file, or to neither. Returns 0 with the key's full fingerprint in fp, or a
     *  negative RD_E* with one line in err (the client gets it after "-ERR "). */
    int (*keyring_change)(void *ctx, enum rd_query_key_op op, const char *arg,
                          const struct rd_query_peer *peer, char fp[RD_KEY_FINGERPRINT_LEN + 1],
                          char *err, size_t errlen);
    /** TAGS SET/DEL, WEIGHT or FORCE-LEAVE, asked by an admin `peer`: applies it and
     *  returns 0, or a negative RD_E* with one line in err (sent after "-ERR "). */
    int (*change)(void *ctx, enum rd_query_change_op op, const char *arg, const char *arg2,
                  const struct rd_query_peer *peer, char *err, size_t errlen);
    /** The port JOIN uses for an address given without one (0: a port is required). */
    int join_default_port;
    /** Whether the agent may answer OWNER, OWNERS, MOWNER and ASSIGN: false until it joined the
     *  cluster it was told to join (they get -NOTREADY meanwhile); INFO `ready`. */
    bool (*ready)(void *ctx);
    /** The resolver JOIN's names go through (dns.h). */
    struct rd_dns *dns;
    /** METRICS: the Prometheus text, `*len` bytes, valid until the next call; NULL when
     *  memory failed. */
    const char *(*metrics)(void *ctx, size_t *len);
};

/** Most keys in one ASSIGN: below the request parser's argument limit (RD_RESP_MAX_ARGS,
 *  4096 words) with room to spare, so that a request one key over is answered with -ERR on a
 *  connection that stays usable instead of being cut off as a protocol error. */
#define RD_QUERY_ASSIGN_KEYS_MAX 4000u

/** Most socket commands counted by name (the table's rows; one more for unknown ones). */
#define RD_QUERY_COMMANDS_MAX 32

/** The server's own counts, for the metrics. */
struct rd_query_stats {
    size_t connections, watchers;
    uint64_t rejected, cut_off;
    const char *names[RD_QUERY_COMMANDS_MAX + 1]; /**< command names, then "unknown" */
    uint64_t counts[RD_QUERY_COMMANDS_MAX + 1];
};

/** Most client connections at once; further ones are accepted and closed at once. The
 *  server lowers it to the descriptor limit less RD_QUERY_FD_RESERVE. */
#define RD_QUERY_MAX_CONNS 10000
/** Descriptors kept for everything but query clients: gossip, sync (RD_SYNC_MAX_INCOMING
 *  and outgoing), logs, the loop's own. */
#define RD_QUERY_FD_RESERVE 64
/** A failure that can repeat at every accept is logged at most once per this long. */
#define RD_QUERY_LOG_EVERY_MS 60000
/** Supplementary groups read for one peer (SO_PEERGROUPS); more count as not in the group. */
#define RD_QUERY_PEER_GROUPS_MAX 1024
/** Longest --admin-group text (a group name or a numeric gid). */
#define RD_QUERY_GROUP_MAX 64

/** Who is connected, as the kernel recorded it when the client connected. */
struct rd_query_peer {
    uid_t uid;
    gid_t gid;
    pid_t pid;
    const gid_t *groups; /**< supplementary groups; NULL when not read */
    size_t ngroups;
};

/** Who may change the agent besides root. */
struct rd_query_admins {
    uid_t self;           /**< the agent's effective uid */
    bool has_group;       /**< --admin-group was given */
    gid_t gid;            /**< its gid */
    const uid_t *members; /**< the users the group database lists in it */
    size_t nmembers;
};

/**
 * True if `peer` may run commands that change the agent: root, the agent's user, or (with
 * an admin group) a peer whose gid is the group, whose uid the group lists, or whose
 * supplementary groups contain it.
 */
bool rd_query_may_change(const struct rd_query_admins *admins, const struct rd_query_peer *peer);
/** Replies buffered for one connection before it is cut off (a client that stops reading). */
#define RD_QUERY_MAX_OUTPUT (8u * 1024u * 1024u)
/** Events buffered for one subscriber before it is cut off. */
#define RD_QUERY_MAX_WATCH_BACKLOG (1024u * 1024u)

/**
 * Listens on `path` with permissions `mode` (set at bind, never widened after), serving
 * `host` (copied). A missing directory is created 0750; an existing one that others could
 * write to (group- or world-writable without the sticky bit, or owned by a user other
 * than root and ours) is refused. A stale socket file (nobody answering) is replaced; a
 * live one is not. `admin_group` (NULL or "" for none) is a group name or numeric gid whose
 * members may change the agent. Returns 0; RD_EEXIST when the path is taken ("another
 * agent is running", or a file that is not a socket); RD_EINVAL for a path that does not
 * fit a socket address, an unsafe directory or an unknown group; RD_EIO when a system
 * call failed; RD_ENOMEM. Every failure leaves one line in err.
 */
int rd_query_start(uv_loop_t *loop, const struct rd_query_host *host, const char *path,
                   unsigned mode, const char *admin_group, struct rd_query **out, char *err,
                   size_t errlen);
/**
 * The exchange a JOIN asked for with `seed` is over: every client waiting on a JOIN to that
 * address gets +OK (`why` NULL) or -ERR with `why`, and is served again.
 */
void rd_query_join_done(struct rd_query *q, const struct rd_addr *seed, const char *why);
/** Publishes one event, a flat array of strings (event.h), as one JSON message on its
 *  channel ("member" events on "members", "ring" on "ring") to every subscriber. */
void rd_query_publish(struct rd_query *q, const char *const *fields, size_t n);
/** Fills `out` and returns how many commands it counted (names and counts). */
size_t rd_query_stats(const struct rd_query *q, struct rd_query_stats *out);
/** Stops listening, closes every connection and removes the socket file. */
void rd_query_close(struct rd_query *q);

#endif
