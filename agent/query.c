/*
 * query.c — the query socket server (see query.h): RESP over a Unix stream socket.
 *
 * Every connection starts in RESP2 and may switch to RESP3 with HELLO 3 (c->proto); each
 * reply is written once through resp.h's writers, which take the protocol and write a
 * map, set, null or verbatim text as RESP3 has it or as Redis writes it in RESP2. The
 * command table is the single description of the commands: dispatch, the arity check,
 * admin-only rows, and what COMMAND, COMMAND INFO and COMMAND DOCS tell clients all read
 * the same rows, so they cannot disagree.
 *
 * One connection is a pipe handle, an input buffer with its incremental RESP parser, and
 * two output buffers:
 *
 *     read ──► in ──► rd_resp_parse ──► dispatch ──► pend ──► at the end of the loop turn,
 *                     (every complete request of the read)    write(2) straight away; what
 *                                                             the kernel did not take swaps
 *                                                             into out ──► uv_write (one in
 *                                                             flight)
 *
 * Every reply a read produces is appended to `pend`, and the connection is marked dirty.
 * When the loop turn has run all its I/O callbacks, a check handle writes each dirty
 * connection's `pend` to its socket, which normally takes it all: as in Redis, every
 * connection readable in one turn is answered before any reply goes out, so a client
 * driving many connections wakes once per burst of replies, not once per reply (measured:
 * more requests/s at -c 50, and fewer system calls than going through uv_write, whose
 * completion costs an epoll_ctl). A remainder swaps into `out` and goes out in one
 * uv_write; while it is in flight, further replies and pushed events pile up in `pend`
 * and leave together when it completes. So a turn costs one write per connection, never
 * more than one write is in flight, bytes never overtake each other, and in steady state
 * nothing is allocated per request: the buffers keep their capacity and the parser keeps
 * its argument array. A client that stops reading is cut off once its unsent bytes pass
 * RD_QUERY_MAX_OUTPUT (RD_QUERY_MAX_WATCH_BACKLOG for a subscriber), which bounds the
 * memory any client can make us hold.
 *
 * Lifetimes: a connection is freed only in its uv_close callback, after libuv has
 * cancelled its pending write, so no callback ever sees freed memory. The server object
 * itself is freed when its last handle (listener or connection) has closed, which
 * happens on the loop run that follows rd_query_close().
 *
 * Re-entrancy: JOIN and LEAVE call into the host, which may publish events from inside
 * that call. Publishing only appends to subscribers' `pend` and marks them dirty, so no
 * write ever happens in the middle of a batch.
 *
 * JOIN resolves its host name through dns.c, on the loop without blocking it (a name server
 * that takes seconds must not stall gossip), then waits for the host's full-state exchange with the
 * seed, so that +OK means joined and -ERR says why not (the exchange's deadline bounds the wait).
 * Meanwhile its connection is blocked, as Redis blocks a client on BLPOP: it stops reading
 * and answering, so every reply still leaves in request order; other connections go on. A
 * connection that closes meanwhile abandons the resolution, or the answer.
 *
 * Trust: each connection keeps the credentials the kernel recorded at connect
 * (SO_PEERCRED) and, decided once at accept, whether they may change the agent. Each row
 * of `commands` says whether it changes anything, and so does each row of a command's own
 * table of subcommands (KEYRING LIST reads, KEYRING INSTALL changes); run_row refuses
 * those with -NOPERM (Redis's prefix) for everyone else, and the connection stays usable.
 *
 * Descriptors: the connection cap is lowered to the descriptor limit less a reserve, so
 * idle clients cannot take the descriptors gossip and sync need; a client over the cap is
 * accepted and closed, which keeps the kernel's queue moving. libuv itself keeps a spare
 * descriptor for an accept that fails with EMFILE anyway (it accepts and closes the
 * pending clients, so the listener never spins). Both are logged at most once a minute.
 */
#include "query.h"

#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pwd.h>
#include <sodium.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "addr.h"
#include "assign.h"
#include "dns.h"
#include "event.h"
#include "ringparams.h"
#include "files.h"
#include "log.h"
#include "msg.h"
#include "rd_err.h"
#include "resp.h"
#include "ring.h"
#include "swim.h"

/** Bytes made available to each read. */
#define RD_QUERY_READ_CHUNK (16u * 1024u)
/** Buffers above this capacity are released once empty, so one burst does not pin memory
 *  for the life of the connection. */
#define RD_QUERY_BUF_KEEP (256u * 1024u)
/** Largest n accepted by OWNERS (it is clamped to the member count anyway). n = 0 asks
 *  for nobody and gets an empty array, as PROTOCOL.md says (and SRANDMEMBER key 0). */
#define RD_QUERY_OWNERS_MAX 1000000u
/** Pending connections the kernel may queue before we accept them. */
#define RD_QUERY_BACKLOG 511
/*
 * A connection with this many reply bytes unsent stops being read (and its buffered
 * requests stop being answered) until its client has taken them: one client pipelining
 * large replies cannot hold the loop, and a client that stops reading holds at most this
 * plus one reply, instead of growing towards RD_QUERY_MAX_OUTPUT.
 */
#define RD_QUERY_PAUSE_BYTES (256u * 1024u)

/** Longest command name echoed back in "unknown command" errors. */
#define RD_QUERY_ECHO_MAX 64
/** Longest argument of KEYRING INSTALL, USE or REMOVE (a key is 44 characters). */
#define RD_QUERY_KEY_ARG_MAX 128
/** Longest argument of WEIGHT ("100.000" is 7 characters). */
#define RD_QUERY_WEIGHT_ARG_MAX 16
/** Mode of the socket's directories that we create: the group may reach the socket. */
#define RD_QUERY_DIR_MODE 0750
/** Buffer for one group or user record (getgrnam_r), grown on ERANGE up to this. */
#define RD_QUERY_NSS_BUF_MAX (1u << 20)
/** Users the admin group may list. */
#define RD_QUERY_GROUP_MEMBERS_MAX 4096

/** Longest client name (CLIENT SETNAME, HELLO SETNAME); Redis sets none, we bound it. */
#define RD_QUERY_CLIENT_NAME_MAX 128
/** Channels and patterns one connection may subscribe to (Redis sets no bound; we do). */
#define RD_QUERY_SUBS_MAX 64
/** Commands one MULTI may queue, and the bytes they may take (Redis bounds neither but by
 *  its input buffer): past either the transaction is refused at EXEC. */
#define RD_QUERY_MULTI_MAX       1024
#define RD_QUERY_MULTI_MAX_BYTES (1u << 20)
/** Longest channel name or pattern. */
#define RD_QUERY_CHANNEL_MAX 128
/** Longest CLIENT SETINFO LIB-NAME or LIB-VER value. */
#define RD_QUERY_CLIENT_LIB_MAX 64
/** CLIENT LIST stops listing once its text reaches this many bytes. */
#define RD_QUERY_CLIENT_LIST_MAX (4u * 1024u * 1024u)
/** Longest line of CLIENT LIST or CLIENT INFO: the fields, the bounded strings and the
 *  socket path twice. */
#define RD_QUERY_CLIENT_LINE_MAX                                                                   \
    (512 + RD_QUERY_CLIENT_NAME_MAX + 2 * RD_QUERY_CLIENT_LIB_MAX +                                \
     2 * sizeof(((struct sockaddr_un *)0)->sun_path))

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59 /* Linux 4.13 */
#endif

_Static_assert(RD_QUERY_MAX_WATCH_BACKLOG <= RD_QUERY_MAX_OUTPUT,
               "a watcher's backlog is part of its output");
_Static_assert(RD_QUERY_PAUSE_BYTES < RD_QUERY_MAX_OUTPUT, "pausing comes before cutting off");
_Static_assert(RD_QUERY_CLIENT_LIST_MAX + RD_QUERY_CLIENT_LINE_MAX < RD_QUERY_MAX_OUTPUT,
               "CLIENT LIST fits in a connection's output");
_Static_assert(RD_RESP_MAX_REQUEST <= RD_QUERY_MAX_OUTPUT,
               "a client may have a whole request's worth of replies unread");

struct rd_query;
struct command;

/* One channel (SUBSCRIBE) or pattern (PSUBSCRIBE) of a connection. */
struct qsub {
    bool pattern;
    size_t len;
    char name[]; /* len bytes, any bytes, then a NUL */
};

struct qconn {
    struct rd_query *q;
    uv_pipe_t pipe;
    uv_write_t wreq;
    struct rd_buf in; /* received, not yet consumed */
    struct rd_resp_parser parser;
    struct rd_buf out;          /* the bytes of the write in flight */
    struct rd_buf pend;         /* replies and events queued behind it */
    struct qconn *prev, *next;  /* q->conns, every connection that counts */
    struct qconn *dirty_next;   /* q->dirty, while `dirty` */
    uint64_t written;           /* bytes ever confirmed written */
    uint64_t leave_at;          /* LEAVE: leave once `written` reaches this (0: no) */
    struct rd_dns_req *joining; /* JOIN resolving its seed: the connection is blocked */
    struct rd_addr join_seed;   /* JOIN waiting for its exchange with this (join_waiting) */
    uid_t uid;                  /* the peer, from SO_PEERCRED */
    gid_t gid;
    pid_t pid;
    bool may_change;   /* rd_query_may_change() at accept */
    bool listed;       /* in q->conns (false: rejected at the limit) */
    bool writing;      /* a uv_write is in flight */
    bool dirty;        /* has output to send at the end of this loop turn */
    bool closing;      /* uv_close was called */
    bool draining;     /* answer what is queued, then close; read no more */
    bool paused;       /* RD_QUERY_PAUSE_BYTES unsent: reading stopped */
    bool failed;       /* a reply could not be buffered: the stream is broken */
    bool join_waiting; /* JOIN resolved, its exchange not over: blocked as while resolving */
    /* The connection as CLIENT and HELLO see it. */
    int proto;                               /* RD_RESP2 until HELLO 3; RESET goes back */
    uint64_t id;                             /* CLIENT ID: unique for the server's life */
    uint64_t created_ms, last_ms;            /* uv_now at accept and at its last command */
    const struct command *cmd, *subcmd;      /* the last command run, for CLIENT LIST */
    char name[RD_QUERY_CLIENT_NAME_MAX + 1]; /* CLIENT SETNAME; "" for none */
    char lib_name[RD_QUERY_CLIENT_LIB_MAX + 1], lib_ver[RD_QUERY_CLIENT_LIB_MAX + 1];
    /* Pub/sub: what it subscribed to, in order; `listening` while it gets events. */
    struct qsub *subs[RD_QUERY_SUBS_MAX];
    size_t nsubs, npatterns;
    bool listening; /* counted in q->nwatchers: subscribed to at least one channel or pattern */
    /* MULTI: the commands queued since, as RESP arrays, run in one go by EXEC. */
    bool multi, multi_dirty; /* in a transaction; a queued command was refused: EXECABORT */
    struct rd_buf multi_q;
    size_t multi_n;
};

struct rd_query {
    uv_loop_t *loop;
    struct rd_query_host host;
    uv_pipe_t listener;
    uv_check_t flusher;  /* after each turn's I/O callbacks: sends q->dirty's output */
    bool listening;      /* listener and flusher initialised and not closed yet */
    bool closing;        /* rd_query_close was called: no more host calls */
    size_t handles;      /* open handles (listener, flusher, connections) */
    struct qconn *dirty; /* connections with output to send this turn */
    size_t nconns, nwatchers;
    size_t join_waiters; /* connections with join_waiting set */
    uint64_t next_id;    /* CLIENT ID of the last connection */
    uint64_t rejected;   /* connections refused at RD_QUERY_MAX_CONNS */
    uint64_t cut_off;    /* connections closed for unread output */
    uint64_t command_counts[RD_QUERY_COMMANDS_MAX + 1]; /* by row of commands[]; last: unknown */
    uint64_t accept_errors;                       /* failed accepts (EMFILE...), logged sparingly */
    uint64_t accept_logged_ms, refused_logged_ms; /* when each was last logged (0: never) */
    size_t max_conns;                             /* RD_QUERY_MAX_CONNS within the fd limit */
    struct rd_query_admins admins;
    uid_t *admin_members;                 /* admins.members, owned */
    char noperm[RD_QUERY_GROUP_MAX + 80]; /* the -NOPERM text */
    struct qconn *conns;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    bool bound; /* we created the file at path */
    dev_t dev;  /* identity of that file, so close only removes ours */
    ino_t ino;
    struct rd_buf scratch; /* INFO text, CLIENT LIST */
    struct rd_buf payload; /* an event's JSON object, for subscribers */
    /* Reads land here when a connection has no partial request buffered, and only the
     * unanswered tail is copied to the connection: an idle connection holds no buffer. */
    char shared_in[RD_QUERY_READ_CHUNK];
    uint32_t owners[RD_MAX_MEMBERS]; /* OWNERS result, reused */
};

/* ============================================================ lifetimes */

static void query_release(struct rd_query *q)
{
    if (q->handles > 0 || !q->closing) return;
    rd_buf_free(&q->scratch);
    rd_buf_free(&q->payload);
    free(q->admin_members);
    free(q);
}

static void conn_closed(uv_handle_t *h)
{
    struct qconn *c = h->data;
    struct rd_query *q = c->q;
    if (c->listed) {
        if (c->prev)
            c->prev->next = c->next;
        else
            q->conns = c->next;
        if (c->next) c->next->prev = c->prev;
        q->nconns--;
    }
    if (c->dirty) /* only when the flusher was closed before it ran */
        for (struct qconn **p = &q->dirty; *p; p = &(*p)->dirty_next)
            if (*p == c) {
                *p = c->dirty_next;
                break;
            }
    bool leave = c->leave_at != 0;
    for (size_t i = 0; i < c->nsubs; i++)
        free(c->subs[i]);
    rd_buf_free(&c->in);
    rd_buf_free(&c->out);
    rd_buf_free(&c->pend);
    rd_buf_free(&c->multi_q);
    rd_resp_parser_free(&c->parser);
    free(c);
    q->handles--;
    /* LEAVE was asked for; the client went away before its +OK was written: still leave. */
    if (leave && !q->closing) q->host.leave(q->host.ctx);
    query_release(q);
}

/* Counts c in q->nwatchers while it is subscribed to anything. */
static void listening_update(struct qconn *c)
{
    bool now = !c->closing && c->nsubs > 0;
    if (now == c->listening) return;
    c->listening = now;
    if (now)
        c->q->nwatchers++;
    else
        c->q->nwatchers--;
}

static void conn_close(struct qconn *c)
{
    if (c->closing) return;
    c->closing = true;
    if (c->joining) {
        rd_dns_abandon(c->joining);
        c->joining = NULL;
    }
    if (c->join_waiting) { /* the exchange goes on; nobody waits for its outcome */
        c->join_waiting = false;
        c->q->join_waiters--;
    }
    listening_update(c); /* the subscriptions are freed by conn_closed */
    uv_close((uv_handle_t *)&c->pipe, conn_closed);
}

/* ============================================================ output */

static void conn_flush(struct qconn *c);
static void conn_send(struct qconn *c);
static void conn_parse(struct qconn *c);
static size_t conn_backlog(const struct qconn *c);
static void conn_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b);
static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b);

/* Everything queued so far has left: a reader paused for backpressure resumes (and
 * answers what it sent meanwhile), and a LEAVE whose +OK is now out is carried out. */
static void conn_sent(struct qconn *c)
{
    if (c->paused && !c->closing && !c->q->closing && !c->joining && !c->join_waiting &&
        conn_backlog(c) < RD_QUERY_PAUSE_BYTES) {
        c->paused = false;
        if (!c->draining && uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_read) < 0) {
            conn_close(c);
            return;
        }
        conn_parse(c);
    }
    if (c->leave_at != 0 && c->written >= c->leave_at && !c->q->closing) {
        /* This may publish events, which is safe: every connection's state is
         * consistent here. */
        c->leave_at = 0;
        c->q->host.leave(c->q->host.ctx);
    }
}

static void conn_written(uv_write_t *w, int status)
{
    struct qconn *c = w->data;
    c->writing = false;
    c->written += c->out.len;
    c->out.len = 0;
    if (c->out.cap > RD_QUERY_BUF_KEEP) rd_buf_free(&c->out);
    if (c->closing) return; /* UV_ECANCELED: conn_closed frees it next */
    if (status < 0) {
        conn_close(c); /* EPIPE and friends: the client is gone */
        return;
    }
    conn_flush(c);
    conn_sent(c);
}

/* Marks a connection as having output, sent by flush_dirty at the end of this turn. */
static void conn_flush(struct qconn *c)
{
    if (c->dirty || c->closing) return;
    c->dirty = true;
    c->dirty_next = c->q->dirty;
    c->q->dirty = c;
}

static void flush_dirty(uv_check_t *h)
{
    struct rd_query *q = h->data;
    struct qconn *c;
    while ((c = q->dirty) != NULL) { /* conn_send may mark more: they go this turn too */
        q->dirty = c->dirty_next;
        c->dirty = false;
        conn_send(c);
    }
}

/* Sends everything queued unless a write is in flight: straight to the socket, and only
 * what it did not take through uv_write. */
static void conn_send(struct qconn *c)
{
    if (c->closing || c->writing) return;
    if (c->pend.len == 0) {
        if (c->draining) conn_close(c);
        return;
    }
    uv_buf_t b = uv_buf_init(c->pend.data, (unsigned)c->pend.len);
    int n = uv_try_write((uv_stream_t *)&c->pipe, &b, 1);
    if (n < 0 && n != UV_EAGAIN) {
        c->pend.len = 0;
        conn_close(c); /* EPIPE and friends: the client is gone */
        return;
    }
    if (n > 0) {
        c->written += (uint64_t)n;
        rd_buf_consume(&c->pend, (size_t)n);
    }
    if (c->pend.len == 0) {
        if (c->pend.cap > RD_QUERY_BUF_KEEP) rd_buf_free(&c->pend);
        if (c->draining) conn_close(c);
        conn_sent(c);
        return;
    }
    struct rd_buf t = c->out; /* empty: no write in flight */
    c->out = c->pend;
    c->pend = t;
    b = uv_buf_init(c->out.data, (unsigned)c->out.len);
    c->wreq.data = c;
    int rc = uv_write(&c->wreq, (uv_stream_t *)&c->pipe, &b, 1, conn_written);
    if (rc < 0) {
        c->out.len = 0;
        conn_close(c);
        return;
    }
    c->writing = true;
}

/* Unsent bytes: in flight plus queued. */
static size_t conn_backlog(const struct qconn *c)
{
    return c->out.len + c->pend.len;
}

/* Records the outcome of one reply writer; a failed one breaks the stream. */
static void conn_rc(struct qconn *c, int rc)
{
    if (rc < 0) c->failed = true;
}

static void reply_error(struct qconn *c, const char *text)
{
    conn_rc(c, rd_resp_write_error(&c->pend, text));
}

static void reply_wrong_arity(struct qconn *c, const char *cmd)
{
    char text[128]; /* the command name is at most 63 bytes */
    snprintf(text, sizeof text, "ERR wrong number of arguments for '%s'", cmd);
    reply_error(c, text);
}

static void reply_name(struct qconn *c, const struct rd_ring *ring, int idx)
{
    if (idx < 0) {
        conn_rc(c, rd_resp_write_null(&c->pend, c->proto));
        return;
    }
    const char *name = rd_ring_member_name(ring, (size_t)idx);
    conn_rc(c, rd_resp_write_bulk(&c->pend, name, strlen(name)));
}

static void reply_cstr(struct qconn *c, const char *s)
{
    conn_rc(c, rd_resp_write_bulk(&c->pend, s, strlen(s)));
}

/* ============================================================ commands */

static bool arg_is(const struct rd_resp_arg *a, const char *word)
{
    size_t n = strlen(word);
    return a->len == n && strncasecmp(a->ptr, word, n) == 0;
}

/* The same bytes (channel names are case-sensitive, as in Redis). */
static bool arg_equal(const struct rd_resp_arg *a, const struct rd_resp_arg *b)
{
    return a->len == b->len && memcmp(a->ptr, b->ptr, a->len) == 0;
}

/* Canonical decimal in 0..max ("0", no leading zero otherwise); false for anything else. */
static bool arg_count(const struct rd_resp_arg *a, size_t max, size_t *out)
{
    if (a->len == 0 || a->len > 10 || (a->ptr[0] == '0' && a->len > 1)) return false;
    uint64_t v = 0;
    for (size_t i = 0; i < a->len; i++) {
        if (a->ptr[i] < '0' || a->ptr[i] > '9') return false;
        v = v * 10 + (uint64_t)(a->ptr[i] - '0');
    }
    if (v > max) return false;
    *out = (size_t)v;
    return true;
}

static void cmd_ping(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc > 2) {
        reply_wrong_arity(c, "ping");
        return;
    }
    if (c->nsubs > 0 && c->proto == RD_RESP2) { /* subscribed: Redis's ["pong", message] */
        conn_rc(c, rd_resp_write_array(&c->pend, 2));
        conn_rc(c, rd_resp_write_bulk(&c->pend, "pong", 4));
        conn_rc(c, rd_resp_write_bulk(&c->pend, r->argc == 2 ? r->argv[1].ptr : "",
                                      r->argc == 2 ? r->argv[1].len : 0));
    } else if (r->argc == 2)
        conn_rc(c, rd_resp_write_bulk(&c->pend, r->argv[1].ptr, r->argv[1].len));
    else
        conn_rc(c, rd_resp_write_simple(&c->pend, "PONG"));
}

/* Placement asked of an agent that has not joined yet would be a ring of itself alone:
 * refused with -NOTREADY (as Redis answers -LOADING), on a connection that stays usable.
 * True when refused. */
static bool refuse_not_ready(struct qconn *c)
{
    if (c->q->host.ready(c->q->host.ctx)) return false;
    reply_error(c, "NOTREADY not joined yet");
    return true;
}

static void reply_int(struct qconn *c, int64_t n);

/* A ring checksum as INFO writes it: 16 lowercase hex digits. */
static void reply_checksum(struct qconn *c, const struct rd_ring *ring)
{
    char sum[17];
    snprintf(sum, sizeof sum, "%016" PRIx64, rd_ring_checksum(ring));
    conn_rc(c, rd_resp_write_bulk(&c->pend, sum, 16));
}

/* OWNER key [WITHCHECKSUM]: with the option, [owner, checksum] from the one snapshot, so an
 * application that compares the checksum with one it read before sees whether the ring
 * changed in between. */
static void cmd_owner(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc < 2 || r->argc > 3) {
        reply_wrong_arity(c, "owner");
        return;
    }
    bool with_checksum = r->argc == 3;
    if (with_checksum && !arg_is(&r->argv[2], "WITHCHECKSUM")) {
        reply_error(c, "ERR syntax error");
        return;
    }
    if (refuse_not_ready(c)) return;
    const struct rd_ring *ring = c->q->host.ring(c->q->host.ctx);
    int idx = rd_ring_owner(ring, r->argv[1].ptr, r->argv[1].len);
    if (with_checksum) conn_rc(c, rd_resp_write_array(&c->pend, 2));
    reply_name(c, ring, idx);
    if (with_checksum) reply_checksum(c, ring);
}

/*
 * RING: the definition of the current ring snapshot, enough to rebuild it and prove it by
 * the checksum (proto/PROTOCOL.md, "Ring definition (RING)"): spec, mode, vnodes, version,
 * checksum, points, then one [name, weight, zone, identity] per member in name order.
 * Mode, vnodes and the members are the snapshot's own, not the parameters in force, so the
 * reply describes the ring that answers OWNER even while a rebuild is pending.
 */
static void cmd_ring(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    if (refuse_not_ready(c)) return;
    const struct rd_ring *ring = c->q->host.ring(c->q->host.ctx);
    struct rd_query_status st;
    c->q->host.status(c->q->host.ctx, &st);
    const char *mode = rd_ring_mode_name(rd_ring_mode(ring));
    size_t n = rd_ring_member_count(ring);
    conn_rc(c, rd_resp_write_array(&c->pend, 7));
    reply_int(c, RD_RING_SPEC);
    reply_cstr(c, mode ? mode : "unknown");
    reply_int(c, rd_ring_vnodes(ring));
    reply_int(c, (int64_t)st.ring_version);
    reply_checksum(c, ring);
    reply_int(c, (int64_t)rd_ring_point_count(ring));
    conn_rc(c, rd_resp_write_array(&c->pend, n));
    for (size_t i = 0; i < n; i++) {
        conn_rc(c, rd_resp_write_array(&c->pend, 4));
        reply_cstr(c, rd_ring_member_name(ring, i));
        reply_int(c, rd_ring_member_weight(ring, i));
        reply_cstr(c, rd_ring_member_zone(ring, i));
        reply_cstr(c, rd_ring_member_identity(ring, i));
    }
}

static void cmd_owners(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc != 3) {
        reply_wrong_arity(c, "owners");
        return;
    }
    size_t n;
    if (!arg_count(&r->argv[2], RD_QUERY_OWNERS_MAX, &n)) {
        reply_error(c, "ERR n must be an integer from 0 to 1000000");
        return;
    }
    if (refuse_not_ready(c)) return;
    const struct rd_ring *ring = c->q->host.ring(c->q->host.ctx);
    size_t members = rd_ring_member_count(ring);
    if (members > RD_MAX_MEMBERS) /* the agent never builds such a ring */
    {
        reply_error(c, "ERR ring larger than the member limit");
        return;
    }
    if (n > members) n = members;
    size_t got = rd_ring_owners(ring, r->argv[1].ptr, r->argv[1].len, n, c->q->owners);
    /* Fewer than n is an answer: a ketama ring can give a member no point, and no walk meets
     * it. None at all from a ring with points is a zone-aware walk that found no memory. */
    if (got == 0 && n > 0) {
        reply_error(c, "ERR out of memory");
        return;
    }
    conn_rc(c, rd_resp_write_array(&c->pend, got));
    for (size_t i = 0; i < got; i++)
        reply_name(c, ring, (int)c->q->owners[i]);
}

static void cmd_mowner(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc < 2) {
        reply_wrong_arity(c, "mowner");
        return;
    }
    if (refuse_not_ready(c)) return;
    const struct rd_ring *ring = c->q->host.ring(c->q->host.ctx);
    conn_rc(c, rd_resp_write_array(&c->pend, r->argc - 1));
    for (size_t i = 1; i < r->argc; i++)
        reply_name(c, ring, rd_ring_owner(ring, r->argv[i].ptr, r->argv[i].len));
}

/* ASSIGN c key [key ...]: the keys as one set under the bounded-load cap (lib/assign.h), one
 * member per key in the order sent, as MOWNER answers. Errors before NOTREADY, as OWNERS. */
static void cmd_assign(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc < 3) {
        reply_wrong_arity(c, "assign");
        return;
    }
    uint32_t c_milli;
    if (rd_assign_parse_c(r->argv[1].ptr, r->argv[1].len, &c_milli) < 0) {
        reply_error(c, "ERR c must be a number above 1 and at most 1000, with at most 3 "
                       "decimals");
        return;
    }
    size_t n = r->argc - 2;
    if (n > RD_QUERY_ASSIGN_KEYS_MAX) {
        char text[80];
        snprintf(text, sizeof text, "ERR too many keys (at most %u)", RD_QUERY_ASSIGN_KEYS_MAX);
        reply_error(c, text);
        return;
    }
    if (refuse_not_ready(c)) return;
    const struct rd_ring *ring = c->q->host.ring(c->q->host.ctx);
    struct rd_assign_key *keys = malloc(n * sizeof *keys);
    int *out = malloc(n * sizeof *out);
    int rc = keys && out ? 0 : RD_ENOMEM;
    for (size_t i = 0; i < n && rc == 0; i++)
        keys[i] = (struct rd_assign_key){r->argv[i + 2].ptr, r->argv[i + 2].len};
    if (rc == 0) rc = rd_assign(ring, c_milli, keys, n, out);
    if (rc < 0) {
        char text[80];
        snprintf(text, sizeof text, "ERR assign failed: %s", rd_strerror(rc));
        reply_error(c, text);
    } else {
        conn_rc(c, rd_resp_write_array(&c->pend, n));
        for (size_t i = 0; i < n; i++)
            reply_name(c, ring, out[i]);
    }
    free(keys);
    free(out);
}

static void cmd_members(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc != 1) {
        reply_wrong_arity(c, "members");
        return;
    }
    const struct rd_swim *s = c->q->host.swim(c->q->host.ctx);
    size_t n = rd_swim_member_count(s);
    conn_rc(c, rd_resp_write_array(&c->pend, n));
    for (size_t i = 0; i < n; i++) {
        struct rd_member_view m;
        rd_swim_member(s, i, &m);
        char addr[RD_ADDR_STRLEN], inc[24], weight[24];
        rd_addr_format(&m.addr, addr, sizeof addr);
        snprintf(inc, sizeof inc, "%" PRIu64, m.incarnation);
        snprintf(weight, sizeof weight, "%u.%03u", m.weight / RD_WEIGHT_ONE,
                 m.weight % RD_WEIGHT_ONE);
        conn_rc(c, rd_resp_write_map(&c->pend, c->proto, 7));
        reply_cstr(c, "name");
        reply_cstr(c, m.name);
        reply_cstr(c, "addr");
        reply_cstr(c, addr);
        reply_cstr(c, "status");
        reply_cstr(c, rd_status_name(m.status));
        reply_cstr(c, "incarnation");
        reply_cstr(c, inc);
        reply_cstr(c, "weight");
        reply_cstr(c, weight);
        reply_cstr(c, "zone");
        reply_cstr(c, m.zone);
        reply_cstr(c, "tags");
        reply_cstr(c, m.tags);
    }
}

/*
 * INFO's sections, in the order INFO writes them, as Redis writes its own: "# Name", then
 * one field:value line per field, a blank line between sections. Every field of the
 * earlier single-section text keeps its name; each is in the section it describes.
 */
enum info_section {
    INFO_SERVER,     /* this process: version, pid, uptime, config file, profile */
    INFO_CLIENTS,    /* the query socket's connections */
    INFO_MEMBERSHIP, /* this member's record and the member table */
    INFO_RING,       /* the placement */
    INFO_GOSSIP,     /* UDP gossip, TCP sync, the keyring */
    INFO_STATS,      /* the event handlers' counts */
    INFO_SECTIONS
};

static const char *const info_names[INFO_SECTIONS] = {"Server", "Clients", "Membership",
                                                      "Ring",   "Gossip",  "Stats"};

/* Appends one section's fields, formatted; 0, RD_E2BIG or RD_ENOMEM. */
__attribute__((format(printf, 2, 3))) static int info_add(struct rd_buf *out, const char *fmt, ...)
{
    char text[2048 + sizeof((struct rd_query_status *)0)->config_file];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof text) return RD_E2BIG;
    return rd_buf_append(out, text, (size_t)n);
}

/* One section of INFO: its header, then its fields. 0 or RD_ENOMEM. */
static int info_section(struct rd_query *q, struct rd_buf *out, enum info_section which,
                        const struct rd_query_status *st)
{
    const struct rd_swim *s = q->host.swim(q->host.ctx);
    const struct rd_ring *ring = q->host.ring(q->host.ctx);
    const struct rd_member *me = rd_swim_self(s);
    const struct rd_swim_stats *ss = rd_swim_stats(s);
    int rc = info_add(out, "%s# %s\r\n", out->len > 0 ? "\r\n" : "", info_names[which]);
    if (rc < 0) return rc;
    switch (which) {
    case INFO_SERVER:
        return info_add(out,
                        "version:%s\r\npid:%" PRIu64 "\r\nuptime_s:%" PRIu64 "\r\n"
                        "config_file:%s\r\nprofile:%s\r\n",
                        st->version, st->pid, st->uptime_s, st->config_file, st->profile);
    case INFO_CLIENTS:
        return info_add(out,
                        "connections:%zu\r\nconnections_max:%zu\r\nwatchers:%zu\r\n"
                        "connections_rejected:%" PRIu64 "\r\nconnections_cut_off:%" PRIu64 "\r\n",
                        q->nconns, q->max_conns, q->nwatchers, q->rejected, q->cut_off);
    case INFO_MEMBERSHIP: {
        size_t counts[4];
        rd_swim_counts(s, counts);
        char addr[RD_ADDR_STRLEN];
        rd_addr_format(&me->addr, addr, sizeof addr);
        return info_add(
            out,
            "name:%s\r\naddr:%s\r\nstatus:%s\r\nincarnation:%" PRIu64 "\r\n"
            "members_alive:%zu\r\nmembers_suspect:%zu\r\nmembers_dead:%zu\r\nmembers_left:%zu\r\n"
            "members_checksum:%016" PRIx64 "\r\nhealth:%u\r\nstorm:%u\r\njoined:%d\r\n"
            "ready:%d\r\nincarnations_refused:%" PRIu64 "\r\nmembers_refused_full:%" PRIu64 "\r\n"
            "namesakes_ignored:%" PRIu64 "\r\nlate_ticks:%" PRIu64 "\r\n",
            me->name, addr, rd_status_name(me->status), me->incarnation, counts[RD_ALIVE],
            counts[RD_SUSPECT], counts[RD_DEAD], counts[RD_LEFT], rd_swim_checksum(s),
            rd_swim_health(s), st->storm, rd_swim_joined(s), q->host.ready(q->host.ctx) ? 1 : 0,
            ss->incarnations_refused, ss->members_refused_full, ss->namesakes_ignored,
            ss->late_ticks);
    }
    case INFO_RING:
        return info_add(out,
                        "ring_version:%" PRIu64 "\r\nring_checksum:%016" PRIx64
                        "\r\nring_members:%zu\r\nring_points:%zu\r\nring_spec:%u\r\n"
                        "ring_mode:%s\r\nvnodes:%u\r\nring_params:%s\r\n"
                        "weight:%u.%03u\r\nmax_weight:%u.%03u\r\nring_scaled:%d\r\n"
                        "members_weight_capped:%zu\r\n",
                        st->ring_version, rd_ring_checksum(ring), rd_ring_member_count(ring),
                        rd_ring_point_count(ring), st->ring_params.spec,
                        rd_ring_mode_name(st->ring_params.mode), st->ring_params.vnodes,
                        st->ring_params_source ? st->ring_params_source : "default",
                        st->weight / RD_WEIGHT_ONE, st->weight % RD_WEIGHT_ONE,
                        st->max_weight / RD_WEIGHT_ONE, st->max_weight % RD_WEIGHT_ONE,
                        rd_ring_scaled(ring, NULL, NULL), st->members_weight_capped);
    case INFO_GOSSIP:
        return info_add(
            out,
            "packets_in:%" PRIu64 "\r\npackets_out:%" PRIu64 "\r\npackets_malformed:%" PRIu64
            "\r\npackets_dropped_nokey:%" PRIu64 "\r\npackets_dropped_plain:%" PRIu64
            "\r\npackets_dropped_sealed:%" PRIu64 "\r\npackets_accepted_plain:%" PRIu64 "\r\n"
            "packets_refused:%" PRIu64 "\r\nprobes:%" PRIu64 "\r\nprobes_failed:%" PRIu64 "\r\n"
            "probes_refused:%" PRIu64 "\r\nprobe_resends:%" PRIu64 "\r\nhelpers_refused:%" PRIu64
            "\r\nrefutes:%" PRIu64 "\r\n"
            "replies_trimmed:%" PRIu64 "\r\nping_reqs_refused:%" PRIu64 "\r\n"
            "syncs_in:%" PRIu64 "\r\nsyncs_out:%" PRIu64 "\r\nsyncs_failed:%" PRIu64 "\r\n"
            "syncs_malformed:%" PRIu64 "\r\nsyncs_oversize:%" PRIu64
            "\r\nsyncs_refused_source:%" PRIu64 "\r\nsyncs_refused_full:%" PRIu64
            "\r\nsyncs_timed_out_header:%" PRIu64 "\r\nsyncs_timed_out_frame:%" PRIu64 "\r\n"
            "syncs_refused_ring:%" PRIu64 "\r\nsyncs_dropped_nokey:%" PRIu64
            "\r\nsyncs_dropped_plain:%" PRIu64 "\r\nsyncs_dropped_sealed:%" PRIu64
            "\r\nsyncs_accepted_plain:%" PRIu64 "\r\n"
            "gossip_verify_incoming:%s\r\ngossip_verify_outgoing:%s\r\n"
            "keyring_keys:%zu\r\nkeyring_primary:%s\r\n",
            ss->packets_in, ss->packets_out, st->packets_malformed, st->packets_dropped.nokey,
            st->packets_dropped.plain, st->packets_dropped.sealed,
            st->packets_dropped.plain_accepted, st->packets_refused, ss->probes, ss->probes_failed,
            ss->probes_refused, ss->probe_resends, ss->helpers_refused, ss->refutes,
            ss->replies_trimmed, ss->ping_reqs_refused, ss->syncs_in, ss->syncs_out,
            ss->syncs_failed, st->syncs_malformed, st->syncs_oversize, st->syncs_refused_source,
            st->syncs_refused_full, st->syncs_timed_out_header, st->syncs_timed_out_frame,
            st->syncs_refused_ring, st->syncs_dropped.nokey, st->syncs_dropped.plain,
            st->syncs_dropped.sealed, st->syncs_dropped.plain_accepted,
            st->verify_incoming ? "on" : "off", st->verify_outgoing ? "on" : "off",
            st->keyring_keys, st->keyring_primary);
    case INFO_STATS:
        return info_add(out,
                        "events_handled:%" PRIu64 "\r\nevents_dropped:%" PRIu64
                        "\r\nhandlers_killed:%" PRIu64 "\r\nhandlers_failed:%" PRIu64 "\r\n",
                        st->hooks.events_handled, st->hooks.events_dropped,
                        st->hooks.handlers_killed, st->hooks.handlers_failed);
    case INFO_SECTIONS:
        break;
    }
    return 0;
}

/* The INFO text of the sections in `mask` (bit i: section i), in their order. */
static int info_text(struct rd_query *q, struct rd_buf *out, unsigned mask)
{
    struct rd_query_status st;
    q->host.status(q->host.ctx, &st);
    for (int i = 0; i < INFO_SECTIONS; i++)
        if (mask & (1u << i)) {
            int rc = info_section(q, out, (enum info_section)i, &st);
            if (rc < 0) return rc;
        }
    return 0;
}

/*
 * INFO [section ...]: the sections named (any case), or every one without a name, for
 * "all", "default" or "everything" (ringd has no section that only some of them hold).
 * A name that is no section adds nothing, so INFO of only such names is empty, as in Redis.
 */
static void cmd_info(struct qconn *c, const struct rd_resp_request *r)
{
    unsigned mask = r->argc == 1 ? (1u << INFO_SECTIONS) - 1 : 0;
    for (size_t j = 1; j < r->argc; j++) {
        const struct rd_resp_arg *a = &r->argv[j];
        if (arg_is(a, "all") || arg_is(a, "default") || arg_is(a, "everything"))
            mask = (1u << INFO_SECTIONS) - 1;
        for (int i = 0; i < INFO_SECTIONS; i++)
            if (arg_is(a, info_names[i])) mask |= 1u << i;
    }
    struct rd_query *q = c->q;
    q->scratch.len = 0;
    if (info_text(q, &q->scratch, mask) < 0) {
        reply_error(c, "ERR out of memory");
        return;
    }
    conn_rc(c, rd_resp_write_verbatim(&c->pend, c->proto, q->scratch.data, q->scratch.len));
}

/*
 * WATCH is Redis's optimistic lock, which a client library sends before MULTI and then
 * reads replies after: a ringd-only event stream under that name would be read as those
 * replies. What WATCH would guard, a key's owner, has no version a transaction could
 * check (the ring changes under it), so WATCH is refused, whatever its arguments, with
 * where events are.
 */
static void cmd_watch(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    reply_error(c, "ERR WATCH is not supported: an owner has no version to watch; SUBSCRIBE "
                   "members ring for events");
}

static void command_name(const struct command *row, const struct command *parent, char *out,
                         size_t cap);

/* ============================================================ pub/sub
 *
 * SUBSCRIBE and PSUBSCRIBE as Redis has them, on the channels ringd publishes: "members"
 * (membership events) and "ring" (ring changes), each message one JSON object as
 * `ringd watch --json` prints it. Any other channel may be subscribed to, as in Redis,
 * and never gets a message. In RESP2 a subscribed connection runs only the pub/sub
 * commands, PING, QUIT and RESET (Redis's rule and error); in RESP3 messages are pushes,
 * so every command goes on working, as in Redis 7.
 */

/* Redis's glob (stringmatchlen): '*' any run, '?' any byte, '[...]' a class ('^' negates,
 * a-z ranges), '\' quotes the next byte. Iterative: a '*' only ever resumes at the last
 * one seen, so the cost is bounded by len(p) x len(s), with no recursion. */
static bool glob_match(const char *p, size_t plen, const char *s, size_t slen)
{
    size_t pi = 0, si = 0, star_p = SIZE_MAX, star_s = 0;
    while (si < slen) {
        bool ok = false;
        size_t next = pi;
        if (pi < plen && p[pi] == '*') {
            star_p = ++pi;
            star_s = si;
            continue;
        }
        if (pi < plen && p[pi] == '?') {
            ok = true;
            next = pi + 1;
        } else if (pi < plen && p[pi] == '[') {
            size_t k = pi + 1;
            bool negate = k < plen && p[k] == '^', hit = false;
            if (negate) k++;
            for (; k < plen && p[k] != ']'; k++) {
                if (p[k] == '\\' && k + 1 < plen) {
                    hit |= p[++k] == s[si];
                } else if (k + 2 < plen && p[k + 1] == '-' && p[k + 2] != ']') {
                    unsigned char lo = (unsigned char)p[k], hi = (unsigned char)p[k + 2];
                    if (lo > hi) {
                        unsigned char t = lo;
                        lo = hi;
                        hi = t;
                    }
                    hit |= (unsigned char)s[si] >= lo && (unsigned char)s[si] <= hi;
                    k += 2;
                } else {
                    hit |= p[k] == s[si];
                }
            }
            ok = hit != negate;
            next = k < plen ? k + 1 : k; /* an unclosed class ends the pattern, as in Redis */
        } else if (pi < plen) {
            size_t k = p[pi] == '\\' && pi + 1 < plen ? pi + 1 : pi;
            ok = p[k] == s[si];
            next = k + 1;
        }
        if (ok) {
            pi = next;
            si++;
        } else if (star_p != SIZE_MAX) {
            pi = star_p;
            si = ++star_s;
        } else {
            return false;
        }
    }
    while (pi < plen && p[pi] == '*')
        pi++;
    return pi == plen;
}

/* Index of c's subscription to a (a pattern if `pattern`), or -1. */
static int sub_find(const struct qconn *c, const struct rd_resp_arg *a, bool pattern)
{
    for (size_t i = 0; i < c->nsubs; i++)
        if (c->subs[i]->pattern == pattern && c->subs[i]->len == a->len &&
            memcmp(c->subs[i]->name, a->ptr, a->len) == 0)
            return (int)i;
    return -1;
}

static void sub_remove(struct qconn *c, size_t i)
{
    c->npatterns -= c->subs[i]->pattern;
    free(c->subs[i]);
    memmove(&c->subs[i], &c->subs[i + 1], (c->nsubs - i - 1) * sizeof c->subs[0]);
    c->nsubs--;
    listening_update(c);
}

static void subs_clear(struct qconn *c)
{
    while (c->nsubs > 0)
        sub_remove(c, c->nsubs - 1);
}

/* One confirmation, as Redis sends it: [kind, name (nil for none), count]; a push in RESP3. */
static void reply_sub(struct qconn *c, const char *kind, const char *name, size_t len)
{
    conn_rc(c, rd_resp_write_push(&c->pend, c->proto, 3));
    reply_cstr(c, kind);
    if (name)
        conn_rc(c, rd_resp_write_bulk(&c->pend, name, len));
    else
        conn_rc(c, rd_resp_write_null(&c->pend, c->proto));
    reply_int(c, (int64_t)c->nsubs);
}

/*
 * The "state" channel's one message, sent to its subscriber right after the confirmation:
 * the ring's version, checksum and points and every member, as a "state" event (event.h).
 * The loop runs one command at a time, so with `SUBSCRIBE members ring state` no event
 * falls between the state and the first message after it. It is the reply to a command,
 * like MEMBERS, so it is held to the connection's output bound, not the event backlog's
 * (16,384 members make more than 1 MiB).
 */
static void reply_state(struct qconn *c)
{
    struct rd_query *q = c->q;
    const struct rd_swim *s = q->host.swim(q->host.ctx);
    const struct rd_ring *ring = q->host.ring(q->host.ctx);
    struct rd_query_status st;
    q->host.status(q->host.ctx, &st);
    size_t n = rd_swim_member_count(s);
    enum { TEXT = RD_ADDR_STRLEN + 24 }; /* a member's address and incarnation */
    const char **f = malloc((4 + 4 * n) * sizeof *f);
    char *text = malloc(n * TEXT + 64);
    int rc = f && text ? 0 : RD_ENOMEM;
    if (rc == 0) {
        char *version = text + n * TEXT, *sum = version + 24, *points = sum + 20;
        snprintf(version, 24, "%" PRIu64, st.ring_version);
        snprintf(sum, 20, "%016" PRIx64, rd_ring_checksum(ring));
        snprintf(points, 20, "%zu", rd_ring_point_count(ring));
        f[0] = "state", f[1] = version, f[2] = sum, f[3] = points;
        for (size_t i = 0; i < n; i++) {
            struct rd_member_view m;
            rd_swim_member(s, i, &m);
            char *addr = text + i * TEXT, *inc = addr + RD_ADDR_STRLEN;
            rd_addr_format(&m.addr, addr, RD_ADDR_STRLEN);
            snprintf(inc, 24, "%" PRIu64, m.incarnation);
            f[4 + 4 * i] = m.name, f[5 + 4 * i] = rd_status_name(m.status);
            f[6 + 4 * i] = addr, f[7 + 4 * i] = inc;
        }
        char ts[RD_EVENT_TS_LEN];
        rd_event_timestamp(ts);
        q->payload.len = 0;
        rc = rd_event_json(&q->payload, ts, f, 4 + 4 * n);
    }
    free(f);
    free(text);
    if (rc < 0) {
        conn_rc(c, rc);
        return;
    }
    q->payload.len--; /* its '\n' */
    conn_rc(c, rd_resp_write_push(&c->pend, c->proto, 3));
    reply_cstr(c, "message");
    reply_cstr(c, "state");
    conn_rc(c, rd_resp_write_bulk(&c->pend, q->payload.data, q->payload.len));
}

/* SUBSCRIBE channel ... | PSUBSCRIBE pattern ...: one confirmation per argument. Names
 * past RD_QUERY_CHANNEL_MAX, or more than RD_QUERY_SUBS_MAX in all, refuse the whole
 * command, so it never half applies. */
static void subscribe(struct qconn *c, const struct rd_resp_request *r, bool pattern)
{
    size_t adding = 0;
    for (size_t j = 1; j < r->argc; j++) {
        if (r->argv[j].len > RD_QUERY_CHANNEL_MAX) {
            char text[96];
            snprintf(text, sizeof text, "ERR channel name or pattern longer than %d bytes",
                     RD_QUERY_CHANNEL_MAX);
            reply_error(c, text);
            return;
        }
        bool again = sub_find(c, &r->argv[j], pattern) >= 0;
        for (size_t k = 1; k < j && !again; k++)
            again = arg_equal(&r->argv[k], &r->argv[j]);
        adding += !again;
    }
    if (c->nsubs + adding > RD_QUERY_SUBS_MAX) {
        char text[96];
        snprintf(text, sizeof text, "ERR too many subscriptions on one connection (at most %d)",
                 RD_QUERY_SUBS_MAX);
        reply_error(c, text);
        return;
    }
    for (size_t j = 1; j < r->argc; j++) {
        const struct rd_resp_arg *a = &r->argv[j];
        if (sub_find(c, a, pattern) < 0) {
            struct qsub *sub = malloc(sizeof *sub + a->len + 1);
            if (!sub) {
                conn_rc(c, RD_ENOMEM);
                return;
            }
            sub->pattern = pattern;
            sub->len = a->len;
            memcpy(sub->name, a->ptr, a->len);
            sub->name[a->len] = '\0';
            c->subs[c->nsubs++] = sub;
            c->npatterns += pattern;
            listening_update(c);
        }
        reply_sub(c, pattern ? "psubscribe" : "subscribe", a->ptr, a->len);
        if (!pattern && arg_equal(a, &(struct rd_resp_arg){"state", 5})) reply_state(c);
    }
}

/* UNSUBSCRIBE [channel ...] | PUNSUBSCRIBE [pattern ...]: every one of its kind without
 * arguments, or one [kind, nil, count] when there is none; a name never subscribed is
 * confirmed anyway, as Redis does. */
static void unsubscribe(struct qconn *c, const struct rd_resp_request *r, bool pattern)
{
    const char *kind = pattern ? "punsubscribe" : "unsubscribe";
    if (r->argc == 1) {
        bool any = false;
        for (size_t i = 0; i < c->nsubs;) {
            if (c->subs[i]->pattern != pattern) {
                i++;
                continue;
            }
            char name[RD_QUERY_CHANNEL_MAX + 1];
            size_t len = c->subs[i]->len;
            memcpy(name, c->subs[i]->name, len);
            sub_remove(c, i);
            reply_sub(c, kind, name, len);
            any = true;
        }
        if (!any) reply_sub(c, kind, NULL, 0);
        return;
    }
    for (size_t j = 1; j < r->argc; j++) {
        int i = sub_find(c, &r->argv[j], pattern);
        if (i >= 0) sub_remove(c, (size_t)i);
        reply_sub(c, kind, r->argv[j].ptr, r->argv[j].len);
    }
}

static void cmd_subscribe(struct qconn *c, const struct rd_resp_request *r)
{
    subscribe(c, r, false);
}

static void cmd_psubscribe(struct qconn *c, const struct rd_resp_request *r)
{
    subscribe(c, r, true);
}

static void cmd_unsubscribe(struct qconn *c, const struct rd_resp_request *r)
{
    unsubscribe(c, r, false);
}

static void cmd_punsubscribe(struct qconn *c, const struct rd_resp_request *r)
{
    unsubscribe(c, r, true);
}

/* JOIN's answer: +OK, or the reason it could not join (why != NULL). */
static void join_reply(struct qconn *c, const char *hostport, const char *why)
{
    if (!why) {
        conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
        return;
    }
    char text[RD_HOSTPORT_MAX + 200];
    snprintf(text, sizeof text, "ERR cannot join %s: %s", hostport, why);
    reply_error(c, text);
}

/* A JOIN was answered: serve the connection again. */
static void join_unblock(struct qconn *c)
{
    if (c->closing) return;
    if (c->paused && conn_backlog(c) < RD_QUERY_PAUSE_BYTES) c->paused = false;
    if (!c->paused && !c->draining &&
        uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_read) < 0) {
        conn_close(c);
        return;
    }
    conn_parse(c); /* what the client pipelined behind JOIN; flushes the reply */
}

/* The seed of a JOIN resolved (or not). Resolved, the host opens an exchange with its first
 * address (IPv4 first) and the connection stays blocked until rd_query_join_done() reports
 * the outcome, within the exchange's deadline; otherwise the answer is the reason. Never
 * called for a closed connection (conn_close abandons the resolution). */
static void join_resolved(void *ctx, const char *hostport, int rc, const struct rd_addr *seed,
                          size_t n, const char *why)
{
    (void)n;
    struct qconn *c = ctx;
    struct rd_query *q = c->q;
    c->joining = NULL;
    if (rc < 0) {
        join_reply(c, hostport, why);
        join_unblock(c);
        return;
    }
    c->join_waiting = true; /* first: the host may report the outcome before it returns */
    q->join_waiters++;
    c->join_seed = *seed;
    q->host.join(q->host.ctx, hostport, seed); /* may publish events */
}

void rd_query_join_done(struct rd_query *q, const struct rd_addr *seed, const char *why)
{
    if (q->closing || q->join_waiters == 0) return; /* every sync ends here: mostly none */
    for (struct qconn *c = q->conns, *next; c; c = next) {
        next = c->next; /* join_unblock may close c (its close takes effect later) */
        if (!c->join_waiting || !rd_addr_equal(&c->join_seed, seed)) continue;
        char addr[RD_ADDR_STRLEN];
        c->join_waiting = false;
        q->join_waiters--;
        join_reply(c, rd_addr_format(seed, addr, sizeof addr), why);
        join_unblock(c);
    }
}

static void cmd_join(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc != 2) {
        reply_wrong_arity(c, "join");
        return;
    }
    char hostport[RD_HOSTPORT_MAX + 1];
    const struct rd_resp_arg *a = &r->argv[1];
    if (a->len == 0 || a->len > RD_HOSTPORT_MAX || memchr(a->ptr, '\0', a->len)) {
        reply_error(c, "ERR bad address: expected host:port");
        return;
    }
    memcpy(hostport, a->ptr, a->len);
    hostport[a->len] = '\0';
    char why[128] = "invalid address";
    if (rd_dns_resolve(c->q->host.dns, hostport, c->q->host.join_default_port, join_resolved, c,
                       &c->joining, why, sizeof why) < 0) {
        join_reply(c, hostport, why);
        return;
    }
    /* Blocked until the JOIN is answered: no more reading or answering on this connection. */
    uv_read_stop((uv_stream_t *)&c->pipe);
}

static void cmd_leave(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc != 1) {
        reply_wrong_arity(c, "leave");
        return;
    }
    conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
    /* Leave once the +OK is written (conn_sent), so the client sees it before the
     * agent goes away; or when the client disconnects first (conn_closed). */
    c->leave_at = c->written + conn_backlog(c);
}

/* METRICS: the Prometheus text the host formats (the same as --metrics-addr serves). */
static void cmd_metrics(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc > 1) {
        reply_wrong_arity(c, "metrics");
        return;
    }
    size_t len = 0;
    const char *text = c->q->host.metrics(c->q->host.ctx, &len);
    if (!text) {
        reply_error(c, "ERR out of memory");
        return;
    }
    conn_rc(c, rd_resp_write_bulk(&c->pend, text, len));
}

static void cmd_quit(struct qconn *c, const struct rd_resp_request *r)
{
    conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
    c->draining = true;
}

/*
 * One row per command, and per subcommand in a command's own table: what runs it, and
 * everything COMMAND and COMMAND DOCS say about it, so that what a client is told and
 * what the server does come from the same row. `arity` is enforced by run_row for every
 * row that has one; a command that takes any number of words has -1.
 */
struct command {
    const char *name;
    void (*run)(struct qconn *c, const struct rd_resp_request *r);
    bool changes;          /* changes the agent: only for rd_query_may_change() peers */
    int arity;             /* Redis's: n words exactly (the name counts), -n at least n */
    const char *flags;     /* COMMAND's flags, space-separated; "admin" is added for `changes` */
    int first, last, step; /* key positions, as COMMAND gives them (0 0 0: no keys) */
    const char *acl;       /* ACL categories, space-separated; "@admin @dangerous" follow
                              `changes` */
    const char *group;     /* COMMAND DOCS group */
    const char *summary;   /* COMMAND DOCS summary */
    const char *args;      /* COMMAND DOCS arguments, space-separated, each
                              "[TOKEN=]name:type[:optional][:multiple]" */
    const struct command *sub; /* subcommands, or NULL */
    size_t nsub;
};

/* A subcommand's row: it has no keys and no subcommands of its own. */
#define SUBCOMMAND(name, run, changes, arity, flags, acl, group, summary, args)                    \
    {                                                                                              \
        name, run, changes, arity, flags, 0, 0, 0, acl, group, summary, args, NULL, 0              \
    }

static void reply_arity_of(struct qconn *c, const struct rd_resp_request *r, size_t word,
                           const struct command *row);

static void subs_clear(struct qconn *c);
/* In RESP2, a subscribed connection runs only these, as in Redis. */
static bool subscribed_may_run(const struct qconn *c, const struct command *row)
{
    static const char *const allowed[] = {"SUBSCRIBE", "PSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE",
                                          "PING",      "QUIT",       "RESET"};
    if (c->nsubs == 0 || c->proto != RD_RESP2) return true;
    for (size_t i = 0; i < sizeof allowed / sizeof allowed[0]; i++)
        if (strcmp(row->name, allowed[i]) == 0) return true;
    return false;
}

/* Redis's error, word for word, naming the command as Redis does ("client|list"). */
static void reply_subscribed_context(struct qconn *c, const struct rd_resp_request *r,
                                     const struct command *row)
{
    char name[72], text[200];
    const struct command *sub = NULL;
    for (size_t k = 0; r->argc > 1 && k < row->nsub && !sub; k++)
        if (arg_is(&r->argv[1], row->sub[k].name)) sub = &row->sub[k];
    command_name(sub ? sub : row, sub ? row : NULL, name, sizeof name);
    snprintf(text, sizeof text,
             "ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / "
             "RESET are allowed in this context",
             name);
    reply_error(c, text);
}

/* True if r has the number of words row->arity allows. */
static bool arity_ok(const struct command *row, size_t argc)
{
    if (row->arity == 0) return true;
    if (row->arity > 0) return argc == (size_t)row->arity;
    return argc >= (size_t)-row->arity;
}

/*
 * Runs the row of table[0..n) that r->argv[word] names, or refuses it with -NOPERM when
 * it changes the agent and the client may not: the one place where rows are checked, for
 * commands and subcommands alike. False if no row has that name.
 */
static bool run_row(struct qconn *c, const struct rd_resp_request *r, size_t word,
                    const struct command *table, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!arg_is(&r->argv[word], table[i].name)) continue;
        if (word == 0) {
            c->cmd = &table[i];
            c->subcmd = NULL;
        } else {
            c->subcmd = &table[i];
        }
        if (table[i].changes && !c->may_change)
            reply_error(c, c->q->noperm);
        else if (!arity_ok(&table[i], r->argc))
            reply_arity_of(c, r, word, &table[i]);
        else if (word == 0 && !subscribed_may_run(c, &table[i]))
            reply_subscribed_context(c, r, &table[i]);
        else
            table[i].run(c, r);
        return true;
    }
    return false;
}

/* KEYRING LIST: one [fingerprint, role] pair per key, primary first. */
static void cmd_keyring_list(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc != 2) {
        reply_wrong_arity(c, "keyring list");
        return;
    }
    char fps[RD_KEYRING_MAX][RD_KEY_FINGERPRINT_LEN + 1];
    size_t n = c->q->host.keyring_list(c->q->host.ctx, fps);
    conn_rc(c, rd_resp_write_array(&c->pend, n));
    for (size_t i = 0; i < n; i++) {
        conn_rc(c, rd_resp_write_array(&c->pend, 2));
        reply_cstr(c, fps[i]);
        reply_cstr(c, i == 0 ? "primary" : "installed");
    }
}

/* KEYRING INSTALL key | USE fingerprint | REMOVE fingerprint: the key's fingerprint back. */
static void cmd_keyring_change(struct qconn *c, const struct rd_resp_request *r)
{
    static const char *const words[] = {"INSTALL", "USE", "REMOVE"};
    enum rd_query_key_op op = RD_QUERY_KEY_INSTALL;
    while (!arg_is(&r->argv[1], words[op]))
        op++;
    if (r->argc != 3) {
        char name[24];
        snprintf(name, sizeof name, "keyring %s", words[op]);
        for (char *p = name; *p; p++)
            *p = (char)tolower((unsigned char)*p);
        reply_wrong_arity(c, name);
        return;
    }
    const struct rd_resp_arg *a = &r->argv[2];
    if (a->len > RD_QUERY_KEY_ARG_MAX || memchr(a->ptr, '\0', a->len)) {
        reply_error(c, op == RD_QUERY_KEY_INSTALL ? "ERR not a key: expected 44 base64 characters"
                                                  : "ERR not a key fingerprint: expected 1 to "
                                                    "16 hex digits");
        return;
    }
    char arg[RD_QUERY_KEY_ARG_MAX + 1], fp[RD_KEY_FINGERPRINT_LEN + 1], why[1024];
    memcpy(arg, a->ptr, a->len);
    arg[a->len] = '\0';
    struct rd_query_peer peer = {.uid = c->uid, .gid = c->gid, .pid = c->pid};
    int rc = c->q->host.keyring_change(c->q->host.ctx, op, arg, &peer, fp, why, sizeof why);
    sodium_memzero(arg, sizeof arg); /* it may have been a key */
    if (rc < 0) {
        char text[sizeof why + 8];
        snprintf(text, sizeof text, "ERR %s", why);
        reply_error(c, text);
        return;
    }
    reply_cstr(c, fp);
}

static const struct command keyring_commands[] = {
    SUBCOMMAND("LIST", cmd_keyring_list, false, 2, "loading stale", "@slow", "ringd",
               "Lists the gossip keys by fingerprint, primary first", ""),
    SUBCOMMAND("INSTALL", cmd_keyring_change, true, 3, "", "@slow", "ringd",
               "Adds a gossip key to the keyring", "key:string"),
    SUBCOMMAND("USE", cmd_keyring_change, true, 3, "", "@slow", "ringd",
               "Makes an installed key the primary one", "fingerprint:string"),
    SUBCOMMAND("REMOVE", cmd_keyring_change, true, 3, "", "@slow", "ringd",
               "Removes a key that is not the primary one", "fingerprint:string"),
};

/* A command of subcommands (`name` in lower case for arity errors, `upper` for the rest):
 * runs the row of table[0..n) that the second word names, or lists the `choices`. */
static void run_subcommand(struct qconn *c, const struct rd_resp_request *r, const char *name,
                           const char *upper, const struct command *table, size_t n,
                           const char *choices)
{
    if (r->argc < 2) {
        reply_wrong_arity(c, name);
        return;
    }
    if (run_row(c, r, 1, table, n)) return;
    char text[RD_QUERY_ECHO_MAX + 120];
    int len = r->argv[1].len > RD_QUERY_ECHO_MAX ? RD_QUERY_ECHO_MAX : (int)r->argv[1].len;
    snprintf(text, sizeof text, "ERR unknown %s subcommand '%.*s': %s", upper, len, r->argv[1].ptr,
             choices);
    reply_error(c, text);
}

static void cmd_keyring(struct qconn *c, const struct rd_resp_request *r)
{
    run_subcommand(c, r, "keyring", "KEYRING", keyring_commands,
                   sizeof keyring_commands / sizeof keyring_commands[0],
                   "LIST, INSTALL, USE or REMOVE");
}

/* ---------------------------------------------------------------- run-time changes */

/* Copies argument i of r into out (cap bytes) as text: false, with -ERR sent naming
 * `what`, when it is empty, too long or holds a NUL. */
static bool arg_text(struct qconn *c, const struct rd_resp_request *r, size_t i, char *out,
                     size_t cap, const char *what)
{
    const struct rd_resp_arg *a = &r->argv[i];
    if (a->len == 0 || a->len >= cap || memchr(a->ptr, '\0', a->len)) {
        char text[160];
        snprintf(text, sizeof text, "ERR bad %s: 1 to %zu characters", what, cap - 1);
        reply_error(c, text);
        return false;
    }
    memcpy(out, a->ptr, a->len);
    out[a->len] = '\0';
    return true;
}

/* Hands one change to the host and answers +OK or -ERR with its reason. */
static void run_change(struct qconn *c, enum rd_query_change_op op, const char *arg,
                       const char *arg2)
{
    char why[512] = "the change failed", text[sizeof why + 8];
    struct rd_query_peer peer = {.uid = c->uid, .gid = c->gid, .pid = c->pid};
    if (c->q->host.change(c->q->host.ctx, op, arg, arg2, &peer, why, sizeof why) < 0) {
        snprintf(text, sizeof text, "ERR %s", why);
        reply_error(c, text);
        return;
    }
    conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
}

/* TAGS SET key value | TAGS DEL key */
static void cmd_tags_change(struct qconn *c, const struct rd_resp_request *r)
{
    bool set = arg_is(&r->argv[1], "SET");
    if (r->argc != (set ? 4 : 3)) {
        reply_wrong_arity(c, set ? "tags set" : "tags del");
        return;
    }
    char key[RD_TAGS_MAX + 1], value[RD_TAGS_MAX + 1];
    if (!arg_text(c, r, 2, key, sizeof key, "tag key") ||
        (set && !arg_text(c, r, 3, value, sizeof value, "tag value")))
        return;
    run_change(c, set ? RD_QUERY_TAG_SET : RD_QUERY_TAG_DEL, key, set ? value : NULL);
}

static const struct command tags_commands[] = {
    SUBCOMMAND("SET", cmd_tags_change, true, 4, "", "@slow", "ringd",
               "Sets one of this member's tags", "key:string value:string"),
    SUBCOMMAND("DEL", cmd_tags_change, true, 3, "", "@slow", "ringd",
               "Removes one of this member's tags", "key:string"),
};

static void cmd_tags(struct qconn *c, const struct rd_resp_request *r)
{
    run_subcommand(c, r, "tags", "TAGS", tags_commands,
                   sizeof tags_commands / sizeof tags_commands[0], "SET or DEL");
}

/* WEIGHT w: this member's weight; 0 drains it. */
static void cmd_weight(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc != 2) {
        reply_wrong_arity(c, "weight");
        return;
    }
    char w[RD_QUERY_WEIGHT_ARG_MAX + 1];
    if (arg_text(c, r, 1, w, sizeof w, "weight")) run_change(c, RD_QUERY_WEIGHT, w, NULL);
}

/* FORCE-LEAVE name [PRUNE] */
static void cmd_force_leave(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc != 2 && r->argc != 3) {
        reply_wrong_arity(c, "force-leave");
        return;
    }
    if (r->argc == 3 && !arg_is(&r->argv[2], "PRUNE")) {
        reply_error(c, "ERR syntax: FORCE-LEAVE name [PRUNE]");
        return;
    }
    char name[RD_NAME_MAX + 1];
    if (arg_text(c, r, 1, name, sizeof name, "member name"))
        run_change(c, RD_QUERY_FORCE_LEAVE, name, r->argc == 3 ? "PRUNE" : NULL);
}

/* ---------------------------------------------------------------- connection lifecycle */

/*
 * What a Redis client library sends around its own commands, answered as Redis answers
 * it: HELLO and AUTH (no password is ever configured: the socket's permissions and the
 * peer's credentials are the access control), CLIENT, SELECT 0, ECHO, RESET and COMMAND.
 * The replies and errors are Redis's, word for word where a client could look at them.
 */

/* Lower-case copy of s into out (cap bytes), cut to fit. */
static void lower_into(char *out, size_t cap, const char *s)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
}

/* The wrong-arity error for a row: "owner", or "keyring list" for a subcommand. */
static void reply_arity_of(struct qconn *c, const struct rd_resp_request *r, size_t word,
                           const struct command *row)
{
    (void)r;
    char name[64], parent[32], sub[32];
    lower_into(sub, sizeof sub, row->name);
    if (word == 0 || !c->cmd) {
        reply_wrong_arity(c, sub);
        return;
    }
    lower_into(parent, sizeof parent, c->cmd->name);
    snprintf(name, sizeof name, "%s %s", parent, sub);
    reply_wrong_arity(c, name);
}

/* A whole signed decimal as Redis's string2ll takes it: optional '-', no leading zero, no
 * space, within int64_t. */
static bool arg_int64(const struct rd_resp_arg *a, int64_t *out)
{
    size_t i = 0;
    bool neg = a->len > 0 && a->ptr[0] == '-';
    if (neg) i = 1;
    if (i >= a->len || a->len - i > 19) return false;
    if (a->ptr[i] == '0' && a->len - i > 1) return false;
    uint64_t v = 0;
    for (; i < a->len; i++) {
        if (a->ptr[i] < '0' || a->ptr[i] > '9') return false;
        v = v * 10 + (uint64_t)(a->ptr[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX + (neg ? 1u : 0u)) return false;
    if (neg && v == 0 && a->len == 2) return false; /* "-0" */
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* Redis's rule for client names and library fields: printable ASCII and no space, so that
 * a CLIENT LIST line splits on spaces. */
static bool client_attr_ok(const struct rd_resp_arg *a)
{
    for (size_t i = 0; i < a->len; i++)
        if (a->ptr[i] < '!' || a->ptr[i] > '~') return false;
    return true;
}

/* True if a may be a client name; else false, with -ERR sent. */
static bool client_name_valid(struct qconn *c, const struct rd_resp_arg *a)
{
    if (a->len > RD_QUERY_CLIENT_NAME_MAX) {
        char text[80];
        snprintf(text, sizeof text, "ERR client name longer than %d bytes",
                 RD_QUERY_CLIENT_NAME_MAX);
        reply_error(c, text);
        return false;
    }
    if (!client_attr_ok(a)) {
        reply_error(c, "ERR Client names cannot contain spaces, newlines or special characters.");
        return false;
    }
    return true;
}

/* Copies a checked argument (len < cap) as text. */
static void copy_arg(char *out, size_t cap, const struct rd_resp_arg *a)
{
    size_t n = a->len < cap ? a->len : cap - 1;
    memcpy(out, a->ptr, n);
    out[n] = '\0';
}

/* No password is configured, so Redis's default user has "nopass": user "default" is let
 * in with any password, and any other user is refused as Redis refuses it. */
static bool auth_ok(struct qconn *c, const struct rd_resp_arg *user)
{
    if (user->len == 7 && memcmp(user->ptr, "default", 7) == 0) return true;
    reply_error(c, "WRONGPASS invalid username-password pair or user is disabled.");
    return false;
}

static void reply_int(struct qconn *c, int64_t n)
{
    conn_rc(c, rd_resp_write_int(&c->pend, n));
}

/* HELLO's server map, as Redis's, in the connection's protocol. */
static void reply_hello(struct qconn *c)
{
    struct rd_query_status st;
    c->q->host.status(c->q->host.ctx, &st);
    conn_rc(c, rd_resp_write_map(&c->pend, c->proto, 7));
    reply_cstr(c, "server");
    reply_cstr(c, "ringd");
    reply_cstr(c, "version");
    reply_cstr(c, st.version);
    reply_cstr(c, "proto");
    reply_int(c, c->proto);
    reply_cstr(c, "id");
    reply_int(c, (int64_t)c->id);
    reply_cstr(c, "mode");
    reply_cstr(c, "standalone");
    reply_cstr(c, "role");
    reply_cstr(c, "master");
    reply_cstr(c, "modules");
    conn_rc(c, rd_resp_write_array(&c->pend, 0));
}

/* HELLO [protover [AUTH user pass] [SETNAME name]]: everything is checked before anything
 * is applied, as Redis does. */
static void cmd_hello(struct qconn *c, const struct rd_resp_request *r)
{
    int proto = c->proto;
    size_t j = 1;
    if (r->argc >= 2) {
        int64_t v;
        if (!arg_int64(&r->argv[1], &v)) {
            reply_error(c, "ERR Protocol version is not an integer or out of range");
            return;
        }
        if (v < RD_RESP2 || v > RD_RESP3) {
            reply_error(c, "NOPROTO unsupported protocol version");
            return;
        }
        proto = (int)v;
        j = 2;
    }
    const struct rd_resp_arg *user = NULL, *name = NULL;
    for (; j < r->argc; j++) {
        size_t more = r->argc - 1 - j;
        if (arg_is(&r->argv[j], "AUTH") && more >= 2) {
            user = &r->argv[j + 1];
            j += 2;
        } else if (arg_is(&r->argv[j], "SETNAME") && more >= 1) {
            name = &r->argv[++j];
            if (!client_name_valid(c, name)) return;
        } else {
            char text[RD_QUERY_ECHO_MAX + 48];
            int len = r->argv[j].len > RD_QUERY_ECHO_MAX ? RD_QUERY_ECHO_MAX : (int)r->argv[j].len;
            snprintf(text, sizeof text, "ERR Syntax error in HELLO option '%.*s'", len,
                     r->argv[j].ptr);
            reply_error(c, text);
            return;
        }
    }
    if (user && !auth_ok(c, user)) return;
    if (name) copy_arg(c->name, sizeof c->name, name);
    c->proto = proto;
    reply_hello(c);
}

/* AUTH [user] pass, with no password configured: Redis's answers. */
static void cmd_auth(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc > 3) {
        reply_error(c, "ERR syntax error");
        return;
    }
    if (r->argc == 2) {
        reply_error(c, "ERR AUTH <password> called without any password configured for the "
                       "default user. Are you sure your configuration is correct?");
        return;
    }
    if (auth_ok(c, &r->argv[1])) conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
}

/* SELECT 0: the only database. */
static void cmd_select(struct qconn *c, const struct rd_resp_request *r)
{
    int64_t db;
    if (!arg_int64(&r->argv[1], &db) || db < INT32_MIN || db > INT32_MAX)
        reply_error(c, "ERR value is not an integer or out of range");
    else if (db != 0)
        reply_error(c, "ERR DB index is out of range");
    else
        conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
}

static void cmd_echo(struct qconn *c, const struct rd_resp_request *r)
{
    conn_rc(c, rd_resp_write_bulk(&c->pend, r->argv[1].ptr, r->argv[1].len));
}

/* ---------------------------------------------------------------- transactions */

/*
 * MULTI ... EXEC, as Redis runs them, for the libraries whose pipelines are transactions
 * by default (redis-py's pipeline()). Commands are queued as RESP arrays and answered
 * +QUEUED; EXEC answers one array of their replies, written as they run: the agent runs
 * one command at a time, so nothing comes between them. A command that cannot be queued
 * (unknown, wrong arity, blocking or changing the connection's mode) is refused at once
 * and makes EXEC answer EXECABORT, as in Redis; one refused when it runs (NOPERM) is an
 * error inside EXEC's array.
 */
static void multi_clear(struct qconn *c)
{
    c->multi = c->multi_dirty = false;
    c->multi_q.len = 0;
    c->multi_n = 0;
}

static void cmd_multi(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    if (c->multi) {
        reply_error(c, "ERR MULTI calls can not be nested");
        return;
    }
    c->multi = true;
    conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
}

static void cmd_discard(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    if (!c->multi) {
        reply_error(c, "ERR DISCARD without MULTI");
        return;
    }
    multi_clear(c);
    conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
}

static void cmd_exec(struct qconn *c, const struct rd_resp_request *r);

/* Inside MULTI, every command but these is queued. */
static bool multi_runs_now(const struct command *row)
{
    static const char *const now[] = {"EXEC", "DISCARD", "MULTI", "WATCH", "QUIT", "RESET"};
    for (size_t i = 0; i < sizeof now / sizeof now[0]; i++)
        if (strcmp(row->name, now[i]) == 0) return true;
    return false;
}

/* Commands that block, or change how the connection's replies are read, cannot be queued. */
static bool multi_refuses(const struct command *row)
{
    static const char *const no[] = {"JOIN",       "HELLO",       "SUBSCRIBE",
                                     "PSUBSCRIBE", "UNSUBSCRIBE", "PUNSUBSCRIBE"};
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        if (strcmp(row->name, no[i]) == 0) return true;
    return false;
}

/* RESET: the connection as it was at connect: RESP2, no name, subscribed to nothing
 * (Redis sends no unsubscribe messages for it either). */
static void cmd_reset(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    c->proto = RD_RESP2;
    c->name[0] = '\0';
    subs_clear(c);
    multi_clear(c);
    conn_rc(c, rd_resp_write_simple(&c->pend, "RESET"));
}

/* The last command of c as Redis names it: "owner", "client|list"; "NULL" if none. */
static void client_cmd_name(const struct qconn *c, char *out, size_t cap)
{
    if (!c->cmd) {
        snprintf(out, cap, "NULL");
        return;
    }
    char top[32], sub[32];
    lower_into(top, sizeof top, c->cmd->name);
    if (!c->subcmd) {
        snprintf(out, cap, "%s", top);
        return;
    }
    lower_into(sub, sizeof sub, c->subcmd->name);
    snprintf(out, cap, "%s|%s", top, sub);
}

/* Appends c's CLIENT LIST line: Redis's fields where they apply, then the peer's uid and
 * pid. 0 or RD_ENOMEM. */
static int client_line(const struct qconn *c, struct rd_buf *out)
{
    uv_os_fd_t fd = -1;
    uv_fileno((const uv_handle_t *)&c->pipe, &fd);
    uint64_t now = uv_now(c->q->loop);
    char cmd[72], line[RD_QUERY_CLIENT_LINE_MAX];
    client_cmd_name(c, cmd, sizeof cmd);
    int n = snprintf(line, sizeof line,
                     "id=%" PRIu64 " addr=%s:0 laddr=%s fd=%d name=%s age=%" PRIu64 " idle=%" PRIu64
                     " flags=%s db=0 sub=%zu psub=%zu multi=-1 qbuf=%zu omem=%zu"
                     " cmd=%s user=default resp=%d lib-name=%s lib-ver=%s uid=%u pid=%d\n",
                     c->id, c->q->path, c->q->path, (int)fd, c->name, (now - c->created_ms) / 1000,
                     (now - c->last_ms) / 1000, c->nsubs > 0 ? "P" : "N", c->nsubs - c->npatterns,
                     c->npatterns, c->in.len, conn_backlog(c), cmd, c->proto, c->lib_name,
                     c->lib_ver, (unsigned)c->uid, (int)c->pid);
    if (n < 0 || (size_t)n >= sizeof line) return RD_E2BIG;
    return rd_buf_append(out, line, (size_t)n);
}

static void cmd_client_setname(struct qconn *c, const struct rd_resp_request *r)
{
    if (!client_name_valid(c, &r->argv[2])) return;
    copy_arg(c->name, sizeof c->name, &r->argv[2]);
    conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
}

static void cmd_client_getname(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    if (c->name[0] == '\0')
        conn_rc(c, rd_resp_write_null(&c->pend, c->proto));
    else
        reply_cstr(c, c->name);
}

static void cmd_client_id(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    reply_int(c, (int64_t)c->id);
}

/* CLIENT SETINFO LIB-NAME name | LIB-VER version */
static void cmd_client_setinfo(struct qconn *c, const struct rd_resp_request *r)
{
    const struct rd_resp_arg *attr = &r->argv[2], *val = &r->argv[3];
    int alen = attr->len > RD_QUERY_ECHO_MAX ? RD_QUERY_ECHO_MAX : (int)attr->len;
    char text[RD_QUERY_ECHO_MAX + 80];
    char *dest = arg_is(attr, "LIB-NAME")  ? c->lib_name
                 : arg_is(attr, "LIB-VER") ? c->lib_ver
                                           : NULL;
    if (!dest) {
        snprintf(text, sizeof text, "ERR Unrecognized option '%.*s'", alen, attr->ptr);
    } else if (val->len > RD_QUERY_CLIENT_LIB_MAX) {
        snprintf(text, sizeof text, "ERR %.*s longer than %d bytes", alen, attr->ptr,
                 RD_QUERY_CLIENT_LIB_MAX);
    } else if (!client_attr_ok(val)) {
        snprintf(text, sizeof text,
                 "ERR %.*s cannot contain spaces, newlines or special characters.", alen,
                 attr->ptr);
    } else {
        copy_arg(dest, RD_QUERY_CLIENT_LIB_MAX + 1, val);
        conn_rc(c, rd_resp_write_simple(&c->pend, "OK"));
        return;
    }
    reply_error(c, text);
}

static void cmd_client_info(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    struct rd_buf *t = &c->q->scratch;
    t->len = 0;
    if (client_line(c, t) < 0) {
        reply_error(c, "ERR out of memory");
        return;
    }
    conn_rc(c, rd_resp_write_verbatim(&c->pend, c->proto, t->data, t->len));
}

/* CLIENT LIST [ID id ...]: one line per connection, up to RD_QUERY_CLIENT_LIST_MAX bytes. */
static void cmd_client_list(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc > 2 && (!arg_is(&r->argv[2], "ID") || r->argc < 4)) {
        reply_error(c, "ERR syntax error");
        return;
    }
    for (size_t j = 3; j < r->argc; j++) {
        int64_t id;
        if (!arg_int64(&r->argv[j], &id) || id <= 0) {
            reply_error(c, "ERR Invalid client ID");
            return;
        }
    }
    struct rd_buf *t = &c->q->scratch;
    t->len = 0;
    for (const struct qconn *o = c->q->conns; o && t->len < RD_QUERY_CLIENT_LIST_MAX; o = o->next) {
        if (o->closing) continue;
        bool listed = r->argc == 2;
        for (size_t j = 3; j < r->argc && !listed; j++) {
            int64_t id = 0;
            arg_int64(&r->argv[j], &id);
            listed = (uint64_t)id == o->id;
        }
        if (listed && client_line(o, t) < 0) {
            reply_error(c, "ERR out of memory");
            return;
        }
    }
    conn_rc(c, rd_resp_write_verbatim(&c->pend, c->proto, t->data, t->len));
}

/* CLIENT KILL ID id [SKIPME yes|no]: the filters ringd has (every client shares the
 * socket's address, so the others would not pick one out). The count closed back. */
static void cmd_client_kill(struct qconn *c, const struct rd_resp_request *r)
{
    uint64_t id = 0;
    bool skipme = true;
    if (r->argc % 2 != 0) { /* the old form, CLIENT KILL addr, or a filter without a value */
        reply_error(c, "ERR syntax error");
        return;
    }
    for (size_t j = 2; j < r->argc; j += 2) {
        const struct rd_resp_arg *v = &r->argv[j + 1];
        int64_t n;
        if (arg_is(&r->argv[j], "ID")) {
            if (!arg_int64(v, &n) || n <= 0) {
                reply_error(c, "ERR client-id should be greater than 0");
                return;
            }
            id = (uint64_t)n;
        } else if (arg_is(&r->argv[j], "SKIPME") && (arg_is(v, "yes") || arg_is(v, "no"))) {
            skipme = arg_is(v, "yes");
        } else {
            reply_error(c, "ERR syntax error");
            return;
        }
    }
    if (id == 0) {
        reply_error(c, "ERR syntax error");
        return;
    }
    int64_t killed = 0;
    bool self = false;
    for (struct qconn *o = c->q->conns; o; o = o->next) {
        if (o->id != id || o->closing || (o == c && skipme)) continue;
        killed++;
        rd_logf(RD_LOG_INFO, "query client killed", RD_FUINT("id", o->id),
                RD_FUINT("by_uid", (uint64_t)c->uid));
        if (o == c)
            self = true;
        else
            conn_close(o);
    }
    reply_int(c, killed);
    if (self) c->draining = true; /* after its reply, as Redis closes it */
}

static const struct command client_commands[] = {
    SUBCOMMAND("SETNAME", cmd_client_setname, false, 3, "noscript loading stale",
               "@slow @connection", "connection", "Names the connection; an empty name clears it",
               "connection-name:string"),
    SUBCOMMAND("GETNAME", cmd_client_getname, false, 2, "noscript loading stale",
               "@slow @connection", "connection", "Returns the connection's name", ""),
    SUBCOMMAND("ID", cmd_client_id, false, 2, "noscript loading stale", "@slow @connection",
               "connection", "Returns the connection's id", ""),
    SUBCOMMAND("SETINFO", cmd_client_setinfo, false, 4, "noscript loading stale",
               "@slow @connection", "connection", "Records the client library's name or version",
               "attr:string value:string"),
    SUBCOMMAND("INFO", cmd_client_info, false, 2, "noscript loading stale", "@slow @connection",
               "connection", "Describes this connection", ""),
    SUBCOMMAND("LIST", cmd_client_list, false, -2, "noscript loading stale", "@slow @connection",
               "connection", "Describes every connection",
               "ID=client-id:integer:optional:multiple"),
    SUBCOMMAND("KILL", cmd_client_kill, true, -3, "noscript loading stale", "@slow @connection",
               "connection", "Closes the connection with an id",
               "ID=client-id:integer SKIPME=yes-no:string:optional"),
};

static void cmd_client(struct qconn *c, const struct rd_resp_request *r)
{
    run_subcommand(c, r, "client", "CLIENT", client_commands,
                   sizeof client_commands / sizeof client_commands[0],
                   "SETNAME, GETNAME, ID, SETINFO, INFO, LIST or KILL");
}

/* COMMAND and its subcommands describe the table below, so they come after it. */
static void cmd_command(struct qconn *c, const struct rd_resp_request *r);
static void cmd_command_count(struct qconn *c, const struct rd_resp_request *r);
static void cmd_command_info(struct qconn *c, const struct rd_resp_request *r);
static void cmd_command_docs(struct qconn *c, const struct rd_resp_request *r);
static void cmd_command_list(struct qconn *c, const struct rd_resp_request *r);

static const struct command command_commands[] = {
    SUBCOMMAND("COUNT", cmd_command_count, false, 2, "loading stale", "@slow @connection", "server",
               "Returns the number of commands", ""),
    SUBCOMMAND("INFO", cmd_command_info, false, -2, "loading stale", "@slow @connection", "server",
               "Describes the named commands, or every one",
               "command-name:string:optional:multiple"),
    SUBCOMMAND("DOCS", cmd_command_docs, false, -2, "loading stale", "@slow @connection", "server",
               "Documents the named commands, or every one",
               "command-name:string:optional:multiple"),
    SUBCOMMAND("LIST", cmd_command_list, false, 2, "loading stale", "@slow @connection", "server",
               "Lists the command names", ""),
};

#define SUBS(t) t, sizeof t / sizeof t[0]

static const struct command commands[] = {
    {"OWNER", cmd_owner, false, -2, "readonly fast", 1, 1, 1, "@read @fast", "ring",
     "Returns the member that owns a key; WITHCHECKSUM: with the ring's checksum",
     "key:key withchecksum:pure-token:optional", NULL, 0},
    {"MOWNER", cmd_mowner, false, -2, "readonly fast", 1, -1, 1, "@read @fast", "ring",
     "Returns the owner of each key", "key:key:multiple", NULL, 0},
    {"OWNERS", cmd_owners, false, 3, "readonly fast", 1, 1, 1, "@read @fast", "ring",
     "Returns the first n distinct members for a key: its owner, then its replicas",
     "key:key n:integer", NULL, 0},
    {"ASSIGN", cmd_assign, false, -3, "readonly", 2, -1, 1, "@read @slow", "ring",
     "Assigns a key set to members, none above c times its weight share (bounded loads)",
     "c:double key:key:multiple", NULL, 0},
    {"PING", cmd_ping, false, -1, "fast", 0, 0, 0, "@fast @connection", "connection",
     "Returns PONG, or the message", "message:string:optional", NULL, 0},
    {"RING", cmd_ring, false, 1, "readonly", 0, 0, 0, "@read @slow", "ring",
     "Returns the ring's definition: parameters, checksum and members", "", NULL, 0},
    {"MEMBERS", cmd_members, false, 1, "readonly", 0, 0, 0, "@read @slow", "membership",
     "Lists every member the agent knows, with its fields", "", NULL, 0},
    {"INFO", cmd_info, false, -1, "loading stale", 0, 0, 0, "@slow", "server",
     "Returns the agent's state and counters, by section", "section:string:optional:multiple", NULL,
     0},
    {"WATCH", cmd_watch, false, -1, "noscript loading stale fast allow_busy", 0, 0, 0,
     "@fast @transaction", "transactions",
     "Refused: an owner has no version to watch; SUBSCRIBE members ring for events",
     "key:string:optional:multiple", NULL, 0},
    {"JOIN", cmd_join, true, 2, "blocking", 0, 0, 0, "@slow", "membership",
     "Joins the cluster through a seed; answered once joined", "address:string", NULL, 0},
    {"LEAVE", cmd_leave, true, 1, "", 0, 0, 0, "@slow", "membership",
     "Leaves the cluster gracefully; the agent then exits", "", NULL, 0},
    {"QUIT", cmd_quit, false, -1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0,
     "@fast @connection", "connection", "Closes the connection after its reply", "", NULL, 0},
    {"KEYRING", cmd_keyring, false, -2, "", 0, 0, 0, "@slow", "ringd", "Manages the gossip keys",
     "", SUBS(keyring_commands)},
    {"TAGS", cmd_tags, false, -2, "", 0, 0, 0, "@slow", "membership", "Changes this member's tags",
     "", SUBS(tags_commands)},
    {"WEIGHT", cmd_weight, true, 2, "", 0, 0, 0, "@slow", "ring",
     "Sets this member's weight; 0 drains it", "weight:double", NULL, 0},
    {"FORCE-LEAVE", cmd_force_leave, true, -2, "", 0, 0, 0, "@slow", "membership",
     "Marks a failed member as left", "name:string prune:pure-token:optional", NULL, 0},
    {"METRICS", cmd_metrics, false, 1, "readonly", 0, 0, 0, "@read @slow", "server",
     "This agent's metrics in Prometheus's text format", "", NULL, 0},
    {"HELLO", cmd_hello, false, -1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0,
     "@fast @connection", "connection",
     "Handshakes: protocol version, authentication, connection name",
     "protover:integer:optional AUTH=username:string:optional password:string:optional "
     "SETNAME=clientname:string:optional",
     NULL, 0},
    {"AUTH", cmd_auth, false, -2, "noscript loading stale fast no_auth allow_busy", 0, 0, 0,
     "@fast @connection", "connection",
     "Authenticates the connection; no password is ever configured",
     "username:string:optional password:string", NULL, 0},
    {"CLIENT", cmd_client, false, -2, "", 0, 0, 0, "@slow", "connection",
     "Names and describes connections", "", SUBS(client_commands)},
    {"SELECT", cmd_select, false, 2, "loading stale fast", 0, 0, 0, "@fast @connection",
     "connection", "Selects database 0, the only one", "index:integer", NULL, 0},
    {"ECHO", cmd_echo, false, 2, "fast", 0, 0, 0, "@fast @connection", "connection",
     "Returns the message", "message:string", NULL, 0},
    {"RESET", cmd_reset, false, 1, "noscript loading stale fast no_auth allow_busy", 0, 0, 0,
     "@fast @connection", "connection", "Resets the connection: RESP2, no name, no subscriptions",
     "", NULL, 0},
    {"MULTI", cmd_multi, false, 1, "noscript loading stale fast allow_busy", 0, 0, 0,
     "@fast @transaction", "transactions", "Starts a transaction: commands are queued", "", NULL,
     0},
    {"EXEC", cmd_exec, false, 1, "noscript loading stale skip_slowlog", 0, 0, 0,
     "@slow @transaction", "transactions", "Runs the queued commands, their replies in one array",
     "", NULL, 0},
    {"DISCARD", cmd_discard, false, 1, "noscript loading stale fast allow_busy", 0, 0, 0,
     "@fast @transaction", "transactions", "Drops the queued commands", "", NULL, 0},
    {"COMMAND", cmd_command, false, -1, "loading stale", 0, 0, 0, "@slow @connection", "server",
     "Describes the commands", "", SUBS(command_commands)},
    {"SUBSCRIBE", cmd_subscribe, false, -2, "pubsub noscript loading stale", 0, 0, 0,
     "@pubsub @slow", "pubsub",
     "Receives the events of channels: members, ring; state: the current state",
     "channel:string:multiple", NULL, 0},
    {"PSUBSCRIBE", cmd_psubscribe, false, -2, "pubsub noscript loading stale", 0, 0, 0,
     "@pubsub @slow", "pubsub", "Receives the events of the channels a glob pattern matches",
     "pattern:pattern:multiple", NULL, 0},
    {"UNSUBSCRIBE", cmd_unsubscribe, false, -1, "pubsub noscript loading stale", 0, 0, 0,
     "@pubsub @slow", "pubsub", "Stops receiving the channels named, or every channel",
     "channel:string:optional:multiple", NULL, 0},
    {"PUNSUBSCRIBE", cmd_punsubscribe, false, -1, "pubsub noscript loading stale", 0, 0, 0,
     "@pubsub @slow", "pubsub", "Stops receiving the patterns named, or every pattern",
     "pattern:pattern:optional:multiple", NULL, 0},
};

_Static_assert(RD_QUERY_ASSIGN_KEYS_MAX + 2 < RD_RESP_MAX_ARGS,
               "ASSIGN c plus one key over the limit must still parse, to get its -ERR");
_Static_assert(RD_QUERY_ASSIGN_KEYS_MAX <= RD_ASSIGN_KEYS_MAX, "lib/assign.h takes the keys");

#define NCOMMANDS (sizeof commands / sizeof commands[0])
_Static_assert(NCOMMANDS <= RD_QUERY_COMMANDS_MAX, "raise RD_QUERY_COMMANDS_MAX");

/* Counts the request under its command's row, or under "unknown". */
static void count_command(struct rd_query *q, const struct rd_resp_request *r)
{
    size_t i = 0;
    while (i < NCOMMANDS && !arg_is(&r->argv[0], commands[i].name))
        i++;
    q->command_counts[i < NCOMMANDS ? i : RD_QUERY_COMMANDS_MAX]++;
}

size_t rd_query_stats(const struct rd_query *q, struct rd_query_stats *out)
{
    *out = (struct rd_query_stats){.connections = q->nconns,
                                   .watchers = q->nwatchers,
                                   .rejected = q->rejected,
                                   .cut_off = q->cut_off};
    size_t n = 0;
    for (; n < NCOMMANDS; n++) {
        out->names[n] = commands[n].name;
        out->counts[n] = q->command_counts[n];
    }
    out->names[n] = "unknown";
    out->counts[n++] = q->command_counts[RD_QUERY_COMMANDS_MAX];
    return n;
}

/* Simple strings, one per space-separated word of `words`, then `extra` (NULL-ended) as a
 * set: COMMAND's flags and ACL categories. */
static void reply_word_set(struct qconn *c, const char *words, const char *const *extra)
{
    size_t n = 0;
    for (const char *p = words; *p;) {
        size_t w = strcspn(p, " ");
        if (w > 0) n++;
        p += w + (p[w] == ' ');
    }
    for (size_t i = 0; extra && extra[i]; i++)
        n++;
    conn_rc(c, rd_resp_write_set(&c->pend, c->proto, n));
    for (const char *p = words; *p;) {
        size_t w = strcspn(p, " ");
        char word[32];
        if (w > 0 && w < sizeof word) {
            memcpy(word, p, w);
            word[w] = '\0';
            conn_rc(c, rd_resp_write_simple(&c->pend, word));
        }
        p += w + (p[w] == ' ');
    }
    for (size_t i = 0; extra && extra[i]; i++)
        conn_rc(c, rd_resp_write_simple(&c->pend, extra[i]));
}

/* "owner", or "keyring|list" for a subcommand. */
static void command_name(const struct command *row, const struct command *parent, char *out,
                         size_t cap)
{
    char top[32], sub[32];
    lower_into(sub, sizeof sub, row->name);
    if (!parent) {
        snprintf(out, cap, "%s", sub);
        return;
    }
    lower_into(top, sizeof top, parent->name);
    snprintf(out, cap, "%s|%s", top, sub);
}

/* One step of a key specification: `name` => {type => `type`, spec => a map of n pairs,
 * which the caller writes}. */
static void key_spec_step(struct qconn *c, const char *name, const char *type, size_t n)
{
    reply_cstr(c, name);
    conn_rc(c, rd_resp_write_map(&c->pend, c->proto, 2));
    reply_cstr(c, "type");
    reply_cstr(c, type);
    reply_cstr(c, "spec");
    conn_rc(c, rd_resp_write_map(&c->pend, c->proto, n));
}

/* A command's one key specification, Redis 7's form of first/last/step. */
static void reply_key_specs(struct qconn *c, const struct command *row)
{
    if (row->first == 0) {
        conn_rc(c, rd_resp_write_array(&c->pend, 0));
        return;
    }
    conn_rc(c, rd_resp_write_array(&c->pend, 1));
    conn_rc(c, rd_resp_write_map(&c->pend, c->proto, 3));
    reply_cstr(c, "flags");
    static const char *const ro[] = {"RO", NULL};
    reply_word_set(c, "", ro);
    key_spec_step(c, "begin_search", "index", 1);
    reply_cstr(c, "index");
    reply_int(c, row->first);
    key_spec_step(c, "find_keys", "range", 3);
    reply_cstr(c, "lastkey"); /* relative to the first key; negative counts from the end */
    reply_int(c, row->last < 0 ? row->last : row->last - row->first);
    reply_cstr(c, "keystep");
    reply_int(c, row->step);
    reply_cstr(c, "limit");
    reply_int(c, 0);
}

/* One command as COMMAND INFO gives it in Redis 7: name, arity, flags, first key, last
 * key, step, ACL categories, tips, key specifications, subcommands. */
static void reply_command_info(struct qconn *c, const struct command *row,
                               const struct command *parent)
{
    static const char *const admin_flag[] = {"admin", NULL};
    static const char *const admin_acl[] = {"@admin", "@dangerous", NULL};
    char name[72];
    command_name(row, parent, name, sizeof name);
    conn_rc(c, rd_resp_write_array(&c->pend, 10));
    reply_cstr(c, name);
    reply_int(c, row->arity);
    reply_word_set(c, row->flags, row->changes ? admin_flag : NULL);
    reply_int(c, row->first);
    reply_int(c, row->last);
    reply_int(c, row->step);
    reply_word_set(c, row->acl, row->changes ? admin_acl : NULL);
    reply_word_set(c, "", NULL); /* tips */
    reply_key_specs(c, row);
    conn_rc(c, rd_resp_write_array(&c->pend, row->nsub));
    for (size_t i = 0; i < row->nsub; i++)
        reply_command_info(c, &row->sub[i], row);
}

/* The row a COMMAND argument names: "owner", or "keyring|list" (*parent set). */
static const struct command *command_find(const struct rd_resp_arg *a,
                                          const struct command **parent)
{
    *parent = NULL;
    const char *bar = memchr(a->ptr, '|', a->len);
    struct rd_resp_arg head = {a->ptr, bar ? (size_t)(bar - a->ptr) : a->len};
    for (size_t i = 0; i < NCOMMANDS; i++) {
        if (!arg_is(&head, commands[i].name)) continue;
        if (!bar) return &commands[i];
        struct rd_resp_arg tail = {bar + 1, a->len - head.len - 1};
        for (size_t k = 0; k < commands[i].nsub; k++)
            if (arg_is(&tail, commands[i].sub[k].name)) {
                *parent = &commands[i];
                return &commands[i].sub[k];
            }
        return NULL;
    }
    return NULL;
}

static void cmd_command(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc == 1) {
        conn_rc(c, rd_resp_write_array(&c->pend, NCOMMANDS));
        for (size_t i = 0; i < NCOMMANDS; i++)
            reply_command_info(c, &commands[i], NULL);
        return;
    }
    run_subcommand(c, r, "command", "COMMAND", SUBS(command_commands), "COUNT, INFO, DOCS or LIST");
}

static void cmd_command_count(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    reply_int(c, (int64_t)NCOMMANDS);
}

static void cmd_command_list(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    conn_rc(c, rd_resp_write_array(&c->pend, NCOMMANDS));
    for (size_t i = 0; i < NCOMMANDS; i++) {
        char name[32];
        lower_into(name, sizeof name, commands[i].name);
        reply_cstr(c, name);
    }
}

/* COMMAND INFO [name ...]: every command without names; a null for an unknown one. */
static void cmd_command_info(struct qconn *c, const struct rd_resp_request *r)
{
    if (r->argc == 2) {
        cmd_command(c, &(struct rd_resp_request){.argc = 1, .argv = r->argv});
        return;
    }
    conn_rc(c, rd_resp_write_array(&c->pend, r->argc - 2));
    for (size_t j = 2; j < r->argc; j++) {
        const struct command *parent, *row = command_find(&r->argv[j], &parent);
        if (row)
            reply_command_info(c, row, parent);
        else
            conn_rc(c, rd_resp_write_null(&c->pend, c->proto));
    }
}

/* One argument of a row's `args`, "[TOKEN=]name:type[:optional][:multiple]", as COMMAND
 * DOCS gives it: a map of name, type, then what applies of key_spec_index, token, flags. */
static void reply_doc_arg(struct qconn *c, const char *spec, size_t len)
{
    char buf[96], *token = NULL, *name = buf, *flag = NULL;
    const char *type = "string";
    if (len >= sizeof buf) len = sizeof buf - 1; /* the table's are short */
    memcpy(buf, spec, len);
    buf[len] = '\0';
    char *eq = strchr(buf, '='), *colon = strchr(buf, ':');
    if (eq && (!colon || eq < colon)) {
        *eq = '\0';
        token = buf;
        name = eq + 1;
    }
    char *t = strchr(name, ':');
    if (t) {
        *t++ = '\0';
        type = t;
        flag = strchr(t, ':');
        if (flag) *flag++ = '\0';
    }
    char upper[32];
    if (!token && strcmp(type, "pure-token") == 0) {
        size_t i = 0;
        for (; name[i] && i + 1 < sizeof upper; i++)
            upper[i] = (char)toupper((unsigned char)name[i]);
        upper[i] = '\0';
        token = upper;
    }
    bool key = strcmp(type, "key") == 0;
    conn_rc(c, rd_resp_write_map(&c->pend, c->proto, 2 + key + (token != NULL) + (flag != NULL)));
    reply_cstr(c, "name");
    reply_cstr(c, name);
    reply_cstr(c, "type");
    reply_cstr(c, type);
    if (key) {
        reply_cstr(c, "key_spec_index");
        reply_int(c, 0);
    }
    if (token) {
        reply_cstr(c, "token");
        reply_cstr(c, token);
    }
    if (flag) {
        for (char *p = flag; *p; p++)
            if (*p == ':') *p = ' ';
        reply_cstr(c, "flags");
        reply_word_set(c, flag, NULL);
    }
}

/* One command's COMMAND DOCS map: summary, group, arguments, subcommands. */
static void reply_command_docs(struct qconn *c, const struct command *row,
                               const struct command *parent)
{
    size_t nargs = 0;
    for (const char *p = row->args; *p;) {
        size_t w = strcspn(p, " ");
        if (w > 0) nargs++;
        p += w + (p[w] == ' ');
    }
    conn_rc(c, rd_resp_write_map(&c->pend, c->proto, 2 + (nargs > 0) + (row->nsub > 0)));
    reply_cstr(c, "summary");
    reply_cstr(c, row->summary);
    reply_cstr(c, "group");
    reply_cstr(c, row->group);
    if (nargs > 0) {
        reply_cstr(c, "arguments");
        conn_rc(c, rd_resp_write_array(&c->pend, nargs));
        for (const char *p = row->args; *p;) {
            size_t w = strcspn(p, " ");
            if (w > 0) reply_doc_arg(c, p, w);
            p += w + (p[w] == ' ');
        }
    }
    if (row->nsub > 0) {
        reply_cstr(c, "subcommands");
        conn_rc(c, rd_resp_write_map(&c->pend, c->proto, row->nsub));
        for (size_t i = 0; i < row->nsub; i++) {
            char name[72];
            command_name(&row->sub[i], row, name, sizeof name);
            reply_cstr(c, name);
            reply_command_docs(c, &row->sub[i], row);
        }
    }
    (void)parent;
}

/* COMMAND DOCS [name ...]: a map of name to docs; unknown names are left out, as in Redis. */
static void cmd_command_docs(struct qconn *c, const struct rd_resp_request *r)
{
    const struct command *parent;
    size_t n = 0;
    for (size_t j = 2; j < r->argc; j++)
        n += command_find(&r->argv[j], &parent) != NULL;
    conn_rc(c, rd_resp_write_map(&c->pend, c->proto, r->argc == 2 ? NCOMMANDS : n));
    char name[72];
    if (r->argc == 2) {
        for (size_t i = 0; i < NCOMMANDS; i++) {
            command_name(&commands[i], NULL, name, sizeof name);
            reply_cstr(c, name);
            reply_command_docs(c, &commands[i], NULL);
        }
        return;
    }
    for (size_t j = 2; j < r->argc; j++) {
        const struct command *row = command_find(&r->argv[j], &parent);
        if (!row) continue;
        command_name(row, parent, name, sizeof name);
        reply_cstr(c, name);
        reply_command_docs(c, row, parent);
    }
}

static void cmd_exec(struct qconn *c, const struct rd_resp_request *r)
{
    (void)r;
    if (!c->multi) {
        reply_error(c, "ERR EXEC without MULTI");
        return;
    }
    if (c->multi_dirty) {
        multi_clear(c);
        reply_error(c, "EXECABORT Transaction discarded because of previous errors.");
        return;
    }
    struct rd_buf queued = c->multi_q; /* ours while the commands run */
    size_t n = c->multi_n;
    c->multi_q = (struct rd_buf){0};
    multi_clear(c);
    conn_rc(c, rd_resp_write_array(&c->pend, n));
    struct rd_resp_parser parser;
    rd_resp_parser_init(&parser);
    size_t off = 0;
    for (size_t i = 0; i < n; i++) {
        struct rd_resp_request req;
        const char *reason;
        /* our own encoding of requests that parsed once: it parses again */
        if (rd_resp_parse(&parser, queued.data + off, queued.len - off, &req, &reason) < 0 ||
            req.argc == 0) {
            reply_error(c, "ERR out of memory");
            continue;
        }
        run_row(c, &req, 0, commands, NCOMMANDS);
        off += req.consumed;
    }
    rd_resp_parser_free(&parser);
    rd_buf_free(&queued);
}

/* Queues r in c's transaction (+QUEUED), or refuses it and dooms the transaction. False
 * when r is one of the commands MULTI runs at once. */
static bool multi_queue(struct qconn *c, const struct rd_resp_request *r)
{
    const struct command *row = NULL;
    for (size_t i = 0; i < NCOMMANDS && !row; i++)
        if (arg_is(&r->argv[0], commands[i].name)) row = &commands[i];
    if (row && multi_runs_now(row)) return false;
    char text[RD_QUERY_ECHO_MAX + 80];
    int len = r->argv[0].len > RD_QUERY_ECHO_MAX ? RD_QUERY_ECHO_MAX : (int)r->argv[0].len;
    size_t bytes = 16;
    for (size_t i = 0; i < r->argc; i++)
        bytes += r->argv[i].len + 16;
    if (!row)
        snprintf(text, sizeof text, "ERR unknown command '%.*s'", len, r->argv[0].ptr);
    else if (!arity_ok(row, r->argc)) {
        char name[32];
        lower_into(name, sizeof name, row->name);
        snprintf(text, sizeof text, "ERR wrong number of arguments for '%s' command", name);
    } else if (multi_refuses(row))
        snprintf(text, sizeof text, "ERR Command not allowed inside a transaction");
    else if (c->multi_n == RD_QUERY_MULTI_MAX || c->multi_q.len + bytes > RD_QUERY_MULTI_MAX_BYTES)
        snprintf(text, sizeof text, "ERR transaction too long: at most %d commands, %u bytes",
                 RD_QUERY_MULTI_MAX, RD_QUERY_MULTI_MAX_BYTES);
    else {
        int rc = rd_resp_write_array(&c->multi_q, r->argc);
        for (size_t i = 0; i < r->argc && rc == 0; i++)
            rc = rd_resp_write_bulk(&c->multi_q, r->argv[i].ptr, r->argv[i].len);
        if (rc == 0) {
            c->multi_n++;
            conn_rc(c, rd_resp_write_simple(&c->pend, "QUEUED"));
            return true;
        }
        snprintf(text, sizeof text, "ERR out of memory");
    }
    c->multi_dirty = true;
    reply_error(c, text);
    return true;
}

static void dispatch(struct qconn *c, const struct rd_resp_request *r)
{
    c->last_ms = uv_now(c->q->loop);
    count_command(c->q, r);
    if (c->multi && multi_queue(c, r)) return;
    if (run_row(c, r, 0, commands, NCOMMANDS)) return;
    char text[RD_QUERY_ECHO_MAX + 40];
    int len = r->argv[0].len > RD_QUERY_ECHO_MAX ? RD_QUERY_ECHO_MAX : (int)r->argv[0].len;
    snprintf(text, sizeof text, "ERR unknown command '%.*s'", len, r->argv[0].ptr);
    reply_error(c, text);
}

/* ============================================================ input */

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct qconn *c = h->data;
    if (c->in.len == 0) {
        *b = uv_buf_init(c->q->shared_in, sizeof c->q->shared_in);
        return;
    }
    if (rd_buf_reserve(&c->in, RD_QUERY_READ_CHUNK) < 0) {
        *b = uv_buf_init(NULL, 0); /* the read callback gets UV_ENOBUFS */
        return;
    }
    *b = uv_buf_init(c->in.data + c->in.len, (unsigned)(c->in.cap - c->in.len));
}

/* Stops reading; what is queued still goes out, then the connection closes. */
static void conn_drain(struct qconn *c)
{
    c->draining = true;
    uv_read_stop((uv_stream_t *)&c->pipe);
}

/* Answers every complete request in c->in, then consumes them all at once. */
static void conn_parse(struct qconn *c)
{
    struct rd_query *q = c->q;
    size_t off = 0;
    while (!c->closing && !c->draining && !c->failed && !c->joining && !c->join_waiting) {
        if (conn_backlog(c) >= RD_QUERY_PAUSE_BYTES) {
            c->paused = true; /* resumed by conn_sent */
            uv_read_stop((uv_stream_t *)&c->pipe);
            break;
        }
        if (off == c->in.len) break; /* nothing buffered: c->in.data may be NULL */
        struct rd_resp_request req;
        const char *reason = NULL;
        int rc = rd_resp_parse(&c->parser, c->in.data + off, c->in.len - off, &req, &reason);
        if (rc == RD_EAGAIN) break;
        if (rc == RD_E2BIG || rc == RD_EPROTO) {
            char text[160];
            snprintf(text, sizeof text, "ERR Protocol error: %s", reason ? reason : "malformed");
            reply_error(c, text);
            conn_drain(c);
            break;
        }
        if (rc < 0) { /* RD_ENOMEM: nothing we can do for this client */
            c->failed = true;
            break;
        }
        /* Checked before answering, not after: one large reply (MEMBERS of a big
         * cluster) is fine; a client that lets replies pile up unread is not. So a
         * connection holds at most the limit plus one reply. */
        if (req.argc > 0 && conn_backlog(c) > RD_QUERY_MAX_OUTPUT) {
            q->cut_off++;
            rd_logf(RD_LOG_WARN, "query client cut off", RD_FSTR("reason", "output limit"),
                    RD_FUINT("bytes", conn_backlog(c)));
            conn_close(c);
            break;
        }
        if (req.argc > 0) dispatch(c, &req);
        off += req.consumed;
    }
    if (c->closing) return;
    if (c->failed) {
        rd_logf(RD_LOG_WARN, "query client dropped", RD_FSTR("reason", "out of memory"));
        conn_close(c);
        return;
    }
    rd_buf_consume(&c->in, off);
    if (c->in.len == 0 && c->in.data != c->q->shared_in) rd_buf_free(&c->in);
    conn_flush(c);
}

static void conn_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b)
{
    struct qconn *c = s->data;
    if (c->closing) return;
    if (n < 0) {
        /* EOF: the client may have only shut down its sending side, so answer what it
         * sent before closing. Any other error: it is gone. */
        if (n == UV_EOF) {
            conn_drain(c);
            conn_flush(c);
        } else {
            conn_close(c);
        }
        return;
    }
    if (n == 0) return; /* EAGAIN */
    if (b->base != c->q->shared_in) {
        c->in.len += (size_t)n;
        conn_parse(c);
        return;
    }
    /* Answer straight from the shared buffer; keep only the unanswered tail. */
    c->in = (struct rd_buf){.data = b->base, .len = (size_t)n, .cap = sizeof c->q->shared_in};
    conn_parse(c);
    struct rd_buf tail = c->in;
    rd_buf_init(&c->in);
    if (!c->closing && tail.len > 0 && rd_buf_append(&c->in, tail.data, tail.len) < 0)
        conn_close(c);
}

/* True at most once per RD_QUERY_LOG_EVERY_MS for the failure last logged at *last. */
static bool log_due(struct rd_query *q, uint64_t *last)
{
    uint64_t now = uv_now(q->loop) + 1; /* never 0, which means "never logged" */
    if (*last != 0 && now - *last < RD_QUERY_LOG_EVERY_MS) return false;
    *last = now;
    return true;
}

bool rd_query_may_change(const struct rd_query_admins *admins, const struct rd_query_peer *peer)
{
    if (peer->uid == 0 || peer->uid == admins->self) return true;
    if (!admins->has_group) return false;
    if (peer->gid == admins->gid) return true;
    for (size_t i = 0; i < admins->nmembers; i++)
        if (admins->members[i] == peer->uid) return true;
    for (size_t i = 0; i < peer->ngroups && peer->groups; i++)
        if (peer->groups[i] == admins->gid) return true;
    return false;
}

/* Records who connected and whether they may change the agent. 0, or RD_EIO. */
static int peer_identify(struct qconn *c)
{
    uv_os_fd_t fd;
    if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0) return RD_EIO;
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof cred)
        return RD_EIO;
    c->uid = cred.uid;
    c->gid = cred.gid;
    c->pid = cred.pid;
    struct rd_query_peer peer = {.uid = cred.uid, .gid = cred.gid, .pid = cred.pid};
    c->may_change = rd_query_may_change(&c->q->admins, &peer);
    if (c->may_change || !c->q->admins.has_group) return 0;
    /* The groups the client had when it connected, recorded by the kernel like its uid:
     * no race with a pid that exits and is reused, as reading /proc/PID/status has. */
    gid_t groups[RD_QUERY_PEER_GROUPS_MAX];
    len = sizeof groups;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
        peer.groups = groups;
        peer.ngroups = len / sizeof groups[0];
        c->may_change = rd_query_may_change(&c->q->admins, &peer);
    }
    return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
    struct rd_query *q = server->data;
    if (q->closing) return;
    if (status < 0) {
        /* Out of descriptors repeats at every attempt. libuv has already accepted and
         * closed what was queued (its spare descriptor), so the listener goes on. */
        q->accept_errors++;
        if (log_due(q, &q->accept_logged_ms))
            rd_logf(RD_LOG_WARN, "query accept failed", RD_FSTR("error", uv_strerror(status)),
                    RD_FUINT("failures", q->accept_errors));
        return;
    }
    struct qconn *c = calloc(1, sizeof *c);
    if (!c) {
        rd_logf(RD_LOG_ERROR, "query accept failed", RD_FSTR("error", "out of memory"));
        return;
    }
    c->q = q;
    c->proto = RD_RESP2;
    c->id = ++q->next_id;
    c->created_ms = c->last_ms = uv_now(q->loop);
    rd_buf_init(&c->in);
    rd_buf_init(&c->out);
    rd_buf_init(&c->pend);
    rd_resp_parser_init(&c->parser);
    uv_pipe_init(q->loop, &c->pipe, 0);
    c->pipe.data = c;
    q->handles++;
    if (uv_accept(server, (uv_stream_t *)&c->pipe) < 0) {
        conn_close(c);
        return;
    }
    if (q->nconns >= q->max_conns) {
        q->rejected++;
        if (log_due(q, &q->refused_logged_ms))
            rd_logf(RD_LOG_WARN, "query connection refused",
                    RD_FSTR("reason", "too many connections"), RD_FUINT("limit", q->max_conns),
                    RD_FUINT("refused", q->rejected));
        conn_close(c);
        return;
    }
    if (peer_identify(c) < 0) {
        rd_logf(RD_LOG_WARN, "query client dropped", RD_FSTR("reason", "no peer credentials"));
        conn_close(c);
        return;
    }
    c->listed = true;
    c->next = q->conns;
    if (q->conns) q->conns->prev = c;
    q->conns = c;
    q->nconns++;
    if (uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_read) < 0) conn_close(c);
}

/* ============================================================ events */

/* Appends one pub/sub message to c: [message, channel, payload], or [pmessage, pattern,
 * channel, payload] for a pattern that matched; a push in RESP3. False when c would pass
 * its backlog bound (or memory ran out): the caller cuts it off. */
static bool deliver(struct qconn *c, const struct qsub *pat, const char *channel,
                    const struct rd_buf *payload)
{
    size_t clen = strlen(channel), need = payload->len + clen + (pat ? pat->len : 0) + 64;
    if (conn_backlog(c) + need > RD_QUERY_MAX_WATCH_BACKLOG) return false;
    struct rd_buf *b = &c->pend;
    size_t mark = b->len;
    int rc = rd_resp_write_push(b, c->proto, pat ? 4 : 3);
    if (rc == 0)
        rc = pat ? rd_resp_write_bulk(b, "pmessage", 8) : rd_resp_write_bulk(b, "message", 7);
    if (rc == 0 && pat) rc = rd_resp_write_bulk(b, pat->name, pat->len);
    if (rc == 0) rc = rd_resp_write_bulk(b, channel, clen);
    if (rc == 0) rc = rd_resp_write_bulk(b, payload->data, payload->len);
    if (rc < 0) b->len = mark;
    return rc == 0;
}

/* The channel an event goes to: "member" events to "members", "ring" ones to "ring". */
static const char *event_channel(const char *type)
{
    if (strcmp(type, "member") == 0) return "members";
    if (strcmp(type, "ring") == 0) return "ring";
    return NULL;
}

/* Sends one event to c's matching subscriptions. False: cut c off. */
static bool publish_to(struct qconn *c, const char *channel, const struct rd_buf *payload)
{
    struct rd_resp_arg ch = {channel, strlen(channel)};
    if (sub_find(c, &ch, false) >= 0 && !deliver(c, NULL, channel, payload)) return false;
    for (size_t i = 0; i < c->nsubs; i++)
        if (c->subs[i]->pattern && glob_match(c->subs[i]->name, c->subs[i]->len, ch.ptr, ch.len) &&
            !deliver(c, c->subs[i], channel, payload))
            return false;
    return true;
}

void rd_query_publish(struct rd_query *q, const char *const *fields, size_t n)
{
    const char *channel = q && n > 0 ? event_channel(fields[0]) : NULL;
    if (!channel || q->closing || q->nwatchers == 0) return;
    /* Encode once: the JSON object every subscriber gets. */
    q->payload.len = 0;
    char ts[RD_EVENT_TS_LEN];
    rd_event_timestamp(ts);
    int rc = rd_event_json(&q->payload, ts, fields, n);
    if (rc == 0) q->payload.len--; /* its '\n': a message is the object alone */
    if (rc < 0) {
        rd_logf(RD_LOG_WARN, "event not published", RD_FSTR("error", "out of memory"));
        return;
    }
    for (struct qconn *c = q->conns; c; c = c->next) {
        if (!c->listening || c->closing || c->draining) continue;
        if (!publish_to(c, channel, &q->payload)) {
            q->cut_off++;
            rd_logf(RD_LOG_WARN, "query client cut off", RD_FSTR("reason", "watch backlog"),
                    RD_FUINT("bytes", conn_backlog(c)));
            conn_close(c);
            continue;
        }
        conn_flush(c);
    }
}

/* ============================================================ start and stop */

/* mkdir -p for the directory part of path, new directories RD_QUERY_DIR_MODE; an existing
 * directory must pass rd_files_check_dir (whoever may write to it could put their own
 * socket in ours' place, collect JOINs and answer OWNER with lies). 0, RD_EEXIST when a
 * file stands where a directory must go, RD_EINVAL for an unsafe directory, or RD_EIO;
 * with one line in err. */
static int make_parent(const char *path, char *err, size_t errlen)
{
    char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return 0; /* relative to the cwd, or in / */
    *slash = '\0';
    struct stat st;
    if (stat(dir, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return rd_files_check_dir("socket directory", dir, &st, err, errlen);
        snprintf(err, errlen, "cannot create socket %s: %s is not a directory", path, dir);
        return RD_EEXIST;
    }
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0') continue;
        char keep = *p;
        *p = '\0';
        if (mkdir(dir, RD_QUERY_DIR_MODE) == 0) {
            /* whatever the umask: group members must reach the socket */
            chmod(dir, RD_QUERY_DIR_MODE);
        } else if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create directory %s for the socket: %s", dir,
                     strerror(errno));
            return RD_EIO;
        }
        if (keep == '\0') break;
        *p = keep;
    }
    return 0;
}

/*
 * Decides what to do with a file already at `path`: 0 if the path is free (nothing
 * there, or a stale socket which was removed); RD_EEXIST if it must be kept, RD_EIO if it
 * could not be probed, with one line in err.
 */
static int clear_stale(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) < 0) {
        if (errno == ENOENT) return 0;
        snprintf(err, errlen, "cannot use socket path %s: %s", path, strerror(errno));
        return RD_EIO;
    }
    if (!S_ISSOCK(st.st_mode)) {
        snprintf(err, errlen, "%s exists and is not a socket; refusing to replace it", path);
        return RD_EEXIST;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(err, errlen, "cannot probe %s: %s", path, strerror(errno));
        return RD_EIO;
    }
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    memcpy(sa.sun_path, path, strlen(path) + 1);
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    int e = errno;
    close(fd);
    /* Connected, or a listener whose queue is full: somebody is there. */
    if (rc == 0 || e == EAGAIN || e == EINPROGRESS) {
        snprintf(err, errlen, "another agent is running on %s", path);
        return RD_EEXIST;
    }
    if (e == ENOENT) return 0; /* vanished meanwhile */
    if (e != ECONNREFUSED) {
        snprintf(err, errlen, "cannot probe %s: %s", path, strerror(e));
        return RD_EIO;
    }
    if (unlink(path) < 0 && errno != ENOENT) {
        snprintf(err, errlen, "cannot remove stale socket %s: %s", path, strerror(errno));
        return RD_EIO;
    }
    rd_logf(RD_LOG_INFO, "stale query socket replaced", RD_FSTR("socket", path));
    return 0;
}

/* Close callback of the listener and the flusher. */
static void server_handle_closed(uv_handle_t *h)
{
    struct rd_query *q = h->data;
    q->handles--;
    query_release(q);
}

/* Removes the socket file if it is still the one we bound. */
static void remove_socket(struct rd_query *q)
{
    struct stat st;
    if (q->bound && lstat(q->path, &st) == 0 && st.st_dev == q->dev && st.st_ino == q->ino)
        unlink(q->path);
    q->bound = false;
}

/* RD_QUERY_MAX_CONNS, lowered so that idle clients leave RD_QUERY_FD_RESERVE descriptors. */
static size_t conns_within_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
        rl.rlim_cur >= RD_QUERY_MAX_CONNS + RD_QUERY_FD_RESERVE)
        return RD_QUERY_MAX_CONNS;
    if (rl.rlim_cur > 2 * RD_QUERY_FD_RESERVE) return (size_t)rl.rlim_cur - RD_QUERY_FD_RESERVE;
    return rl.rlim_cur > 1 ? (size_t)rl.rlim_cur / 2 : 1; /* a tiny limit: share it */
}

/* Calls getgrnam_r or getgrgid_r (by_gid) with a buffer grown as needed; 0 or an errno,
 * *res NULL when there is no such group. *buf is the caller's to free. */
static int group_lookup(const char *name, gid_t gid, bool by_gid, struct group *gr, char **buf,
                        struct group **res)
{
    for (size_t cap = 4096; cap <= RD_QUERY_NSS_BUF_MAX; cap *= 2) {
        char *nb = realloc(*buf, cap);
        if (!nb) return ENOMEM;
        *buf = nb;
        int e = by_gid ? getgrgid_r(gid, gr, *buf, cap, res) : getgrnam_r(name, gr, *buf, cap, res);
        if (e != ERANGE) return e;
    }
    return ERANGE;
}

/* The uid of user `name`, or false if there is none. */
static bool user_uid(const char *name, uid_t *out)
{
    char buf[4096];
    struct passwd pw, *res = NULL;
    if (getpwnam_r(name, &pw, buf, sizeof buf, &res) != 0 || !res) return false;
    *out = pw.pw_uid;
    return true;
}

/* Resolves --admin-group (a name, or a numeric gid that need not be in the database) into
 * q->admins and the -NOPERM text. 0, or RD_EINVAL / RD_ENOMEM with one line in err. */
static int admins_setup(struct rd_query *q, const char *group, char *err, size_t errlen)
{
    q->admins.self = geteuid();
    if (!group || !*group) {
        snprintf(q->noperm, sizeof q->noperm, "NOPERM this command needs root or the agent's user");
        return 0;
    }
    if (strlen(group) > RD_QUERY_GROUP_MAX) {
        snprintf(err, errlen, "admin group name too long: %.*s...", RD_QUERY_GROUP_MAX, group);
        return RD_EINVAL;
    }
    snprintf(q->noperm, sizeof q->noperm,
             "NOPERM this command needs root, the agent's user or group %s", group);
    char *end;
    errno = 0;
    unsigned long num = strtoul(group, &end, 10);
    bool numeric =
        *end == '\0' && group[0] >= '0' && group[0] <= '9' && errno == 0 && num == (gid_t)num;
    struct group gr, *res = NULL;
    char *buf = NULL;
    int e = group_lookup(group, (gid_t)num, numeric, &gr, &buf, &res);
    if (e != 0 && e != ENOENT && e != ESRCH) {
        snprintf(err, errlen, "cannot look up admin group %s: %s", group, strerror(e));
        free(buf);
        return e == ENOMEM ? RD_ENOMEM : RD_EINVAL;
    }
    if (!res && !numeric) {
        snprintf(err, errlen, "admin group %s does not exist", group);
        free(buf);
        return RD_EINVAL;
    }
    q->admins.has_group = true;
    q->admins.gid = res ? gr.gr_gid : (gid_t)num;
    size_t n = 0;
    while (res && gr.gr_mem[n] && n < RD_QUERY_GROUP_MEMBERS_MAX)
        n++;
    if (n > 0) {
        q->admin_members = calloc(n, sizeof *q->admin_members);
        if (!q->admin_members) {
            free(buf);
            snprintf(err, errlen, "out of memory");
            return RD_ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
            if (user_uid(gr.gr_mem[i], &q->admin_members[q->admins.nmembers])) q->admins.nmembers++;
        q->admins.members = q->admin_members;
    }
    free(buf);
    return 0;
}

int rd_query_start(uv_loop_t *loop, const struct rd_query_host *host, const char *path,
                   unsigned mode, const char *admin_group, struct rd_query **out, char *err,
                   size_t errlen)
{
    *out = NULL;
    struct rd_query *q = calloc(1, sizeof *q);
    if (!q) {
        snprintf(err, errlen, "out of memory");
        return RD_ENOMEM;
    }
    q->loop = loop;
    q->host = *host;
    rd_buf_init(&q->scratch);
    size_t len = strlen(path);
    int rc = RD_EINVAL;
    if (len == 0 || len >= sizeof q->path) {
        snprintf(err, errlen, "socket path must be 1 to %zu bytes: %s", sizeof q->path - 1, path);
        goto fail_free;
    }
    memcpy(q->path, path, len + 1);
    q->max_conns = conns_within_fd_limit();
    if ((rc = admins_setup(q, admin_group, err, errlen)) < 0 ||
        (rc = make_parent(path, err, errlen)) < 0 || (rc = clear_stale(path, err, errlen)) < 0)
        goto fail_free;

    int uvrc = uv_pipe_init(loop, &q->listener, 0);
    if (uvrc < 0) {
        snprintf(err, errlen, "cannot create socket %s: %s", path, uv_strerror(uvrc));
        rc = RD_EIO;
        goto fail_free;
    }
    q->listener.data = q;
    uv_check_init(loop, &q->flusher);
    q->flusher.data = q;
    uv_check_start(&q->flusher, flush_dirty);
    uv_unref((uv_handle_t *)&q->flusher); /* it alone does not keep the loop running */
    q->listening = true;
    q->handles = 2;
    /* Bind under a umask that gives exactly the mode (a socket is created 0777 less the
     * umask): never reachable with other permissions, and no chmod by path afterwards,
     * which could act on a file someone swapped in meanwhile. */
    mode_t old = umask((mode_t)(~mode & 0777));
    uvrc = uv_pipe_bind(&q->listener, path);
    umask(old);
    if (uvrc < 0) {
        snprintf(err, errlen,
                 uvrc == UV_EADDRINUSE ? "another agent is running on %s"
                                       : "cannot bind socket %s: %s",
                 path, uv_strerror(uvrc));
        rc = uvrc == UV_EADDRINUSE ? RD_EEXIST : RD_EIO;
        goto fail_close;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        q->bound = true;
        q->dev = st.st_dev;
        q->ino = st.st_ino;
    }
    uvrc = uv_listen((uv_stream_t *)&q->listener, RD_QUERY_BACKLOG, on_connection);
    if (uvrc < 0) {
        snprintf(err, errlen, "cannot listen on socket %s: %s", path, uv_strerror(uvrc));
        rc = RD_EIO;
        goto fail_close;
    }
    *out = q;
    return 0;

fail_close:
    /* The listener handle lives in q: free q from its close callback. */
    remove_socket(q);
    q->closing = true;
    q->listening = false;
    uv_close((uv_handle_t *)&q->listener, server_handle_closed);
    uv_close((uv_handle_t *)&q->flusher, server_handle_closed);
    return rc;
fail_free:
    rd_buf_free(&q->scratch);
    free(q->admin_members);
    free(q);
    return rc;
}

void rd_query_close(struct rd_query *q)
{
    if (!q || q->closing) return;
    q->closing = true;
    if (q->listening) {
        flush_dirty(&q->flusher); /* events published just before we stop */
        q->listening = false;
        uv_close((uv_handle_t *)&q->listener, server_handle_closed);
        uv_close((uv_handle_t *)&q->flusher, server_handle_closed);
    }
    for (struct qconn *c = q->conns; c; c = c->next)
        conn_close(c);
    remove_socket(q);
    /* q itself goes when the last close callback has run (query_release). */
}
