/*
 * sync.c — full-state sync over TCP (see sync.h).
 *
 * One connection, either side:
 *
 *   outgoing:  connect ──► write our state (flag REPLY) ──► read their frame ──► merge, done
 *   incoming:  accept ──► read their frame ──► merge ──► write our state if they asked ──► done
 *
 * A connection is a TCP handle and a timer, and is freed once both are closed. The timer is
 * the connection's next deadline: RD_SYNC_TIMEOUT_MS for an outgoing exchange; for an
 * incoming one, first RD_SYNC_HEADER_TIMEOUT_MS for the length prefix, then what is left
 * of RD_SYNC_TIMEOUT_MS for the rest. Bytes go through a frame reader (proto/wire.h), so
 * all the framing rules are in one I/O-free place; each read lands in one buffer shared by
 * every connection, since a read callback runs to its end before the next read.
 *
 * Admission (sync.h) is decided at accept from what the server already holds: the open
 * connections (at most RD_SYNC_MAX_INCOMING, scanned) and, only when a source would be
 * refused as a stranger, the member table, to see whether it is known after all. So a
 * flood of connections costs a scan of the table only while strangers are at their limit.
 * Every refusal is counted by reason and logged at most once per RD_SYNC_LOG_INTERVAL_MS
 * per reason: a flood must not become a flood of log lines.
 *
 * Ring parameters ride on every frame we send and are judged on every frame we read, before
 * anything is merged (ringparams.h has the rule): a peer that cannot share our ring never
 * enters the member table. A joiner we refuse still gets our answer, so that it can say
 * which parameters the cluster has when it stops.
 *
 * The module owns everything it allocates. The server object goes when its last handle
 * has closed after rd_sync_close(), like the query server, so no callback ever sees freed
 * memory.
 */
#include "sync.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "buf.h"
#include "envelope.h"
#include "keyring.h"
#include "log.h"
#include "rd_err.h"
#include "swim.h"
#include "wire.h"

/** Bytes made available to each read. */
#define RD_SYNC_READ_CHUNK 65536

_Static_assert(RD_SYNC_MAX_STRANGERS < RD_SYNC_MAX_INCOMING,
               "some incoming slots must be kept for known members");
_Static_assert(RD_SYNC_MAX_PER_SOURCE >= 1 && RD_SYNC_MAX_PER_SOURCE < RD_SYNC_MAX_STRANGERS,
               "one stranger's IP must not take every stranger slot");
_Static_assert(RD_SYNC_HEADER_TIMEOUT_MS < RD_SYNC_TIMEOUT_MS,
               "the prefix deadline comes before the frame's");

/* Why an incoming sync was refused or cut (or a frame either way); indexes the counts. */
enum refusal {
    REFUSED_SOURCE,
    REFUSED_FULL,
    TIMED_OUT_HEADER,
    TIMED_OUT_FRAME,
    OVERSIZE,
    MALFORMED,
    RING_PARAMS,
    REFUSALS
};

/* The reason= of a refusal's log line. */
static const char *const refusal_names[REFUSALS] = {
    [REFUSED_SOURCE] = "per-source limit",
    [REFUSED_FULL] = "slots full",
    [TIMED_OUT_HEADER] = "header deadline",
    [TIMED_OUT_FRAME] = "frame deadline",
    [OVERSIZE] = "oversize frame",
    [MALFORMED] = "malformed frame",
    [RING_PARAMS] = "ring parameters differ",
};

struct sync_conn {
    struct rd_sync *s;
    uv_tcp_t tcp;
    uv_timer_t timer;
    uv_connect_t connect;
    uv_write_t write;
    struct rd_addr peer;
    bool outgoing, replied;
    bool admitted;                      /* incoming, and holds a slot (s->incoming) */
    bool known;                         /* admitted as a known source: not one of s->strangers */
    bool have_prefix;                   /* incoming: the length prefix arrived */
    uint64_t started_ms;                /* incoming: accepted at */
    char *out;                          /* frame being written */
    struct rd_wire_frame_reader reader; /* frame being read */
    int closed;                         /* close callbacks run (2: both handles) */
    struct sync_conn *prev, *next;      /* s->conns */
};

struct rd_sync {
    uv_loop_t *loop;
    struct rd_swim *swim;
    rd_sync_changed_fn changed;
    rd_sync_result_fn result; /* NULL: nobody asked for outcomes */
    rd_sync_ring_fn ring_fn;  /* NULL: ring parameters not set yet */
    struct rd_ring_params ring;
    unsigned ring_set; /* RD_SYNC_*_SET */
    bool joins;        /* started with seeds: joining until its first exchange is answered */
    void *ctx;
    uv_tcp_t listener;
    struct sync_conn *conns;
    size_t incoming;                         /* admitted connections not closed yet */
    size_t strangers;                        /* ... of which not known sources */
    size_t handles;                          /* open handles: the listener and two a connection */
    bool closing;                            /* rd_sync_close was called */
    struct rd_addr seeds[RD_SYNC_SEEDS_MAX]; /* known sources besides members (IP only) */
    size_t nseeds, next_seed;                /* next_seed: the slot a new one overwrites */
    uint64_t refused[REFUSALS];              /* counts by reason */
    uint64_t unlogged[REFUSALS];             /* ... since the reason's last log line */
    uint64_t logged_ms[REFUSALS];            /* when that line was written */
    bool logged[REFUSALS];                   /* a line was written for the reason */
    struct rd_envelope_drops dropped;        /* frames the envelope rule refused */
    const struct rd_keyring *keyring;        /* no keys: frames in the clear */
    const char *label;
    bool plain_in, plain_out; /* keyed, yet plain frames let in / sent */
    char read_buf[RD_SYNC_READ_CHUNK];
};

static uint64_t now_ms(void)
{
    return uv_hrtime() / 1000000u;
}

/* Counts a refusal and logs it, unless its reason was logged less than
 * RD_SYNC_LOG_INTERVAL_MS ago: then the next line carries the count. `detail` may be NULL. */
static void refuse(struct rd_sync *s, enum refusal why, const struct rd_addr *peer,
                   const char *detail)
{
    s->refused[why]++;
    s->unlogged[why]++;
    uint64_t now = now_ms();
    if (s->logged[why] && now - s->logged_ms[why] < RD_SYNC_LOG_INTERVAL_MS) return;
    char addr[RD_ADDR_STRLEN];
    struct rd_log_field f[] = {
        RD_FSTR("reason", refusal_names[why]),
        RD_FUINT("count", s->unlogged[why]), /* since the last line for this reason */
        RD_FUINT("total", s->refused[why]),
        RD_FSTR("last_peer", rd_addr_format(peer, addr, sizeof addr)),
        RD_FSTR("detail", detail), /* last: only some reasons have one */
    };
    rd_log(RD_LOG_WARN, "sync refused", f, sizeof f / sizeof f[0] - (detail ? 0 : 1));
    s->unlogged[why] = 0;
    s->logged_ms[why] = now;
    s->logged[why] = true;
}

/* ---------------------------------------------------------------- lifetimes */

static void sync_release(struct rd_sync *s)
{
    if (s->closing && s->handles == 0) free(s);
}

static void conn_closed(uv_handle_t *h)
{
    struct sync_conn *c = h->data;
    struct rd_sync *s = c->s;
    s->handles--;
    if (++c->closed < 2) return; /* both the stream and the timer must be closed */
    if (c->prev)
        c->prev->next = c->next;
    else
        s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    if (c->admitted) {
        s->incoming--;
        if (!c->known) s->strangers--;
    }
    free(c->out);
    rd_wire_frame_reader_free(&c->reader);
    free(c);
    sync_release(s);
}

static void conn_close(struct sync_conn *c)
{
    if (uv_is_closing((uv_handle_t *)&c->tcp)) return;
    uv_close((uv_handle_t *)&c->tcp, conn_closed);
    uv_close((uv_handle_t *)&c->timer, conn_closed);
}

/* The exchange is over: the outcome of an outgoing one is the core's business (joined, or
 * a failure counted) and the owner's (why, if it failed), then the owner flushes whatever
 * the core wants sent now. `why` says why it failed; NULL when ok. */
static void sync_end(struct sync_conn *c, bool ok, const char *why)
{
    if (uv_is_closing((uv_handle_t *)&c->tcp)) return;
    struct rd_sync *s = c->s;
    if (c->outgoing) {
        if (ok)
            rd_swim_sync_done(s->swim, now_ms(), &c->peer);
        else
            rd_swim_sync_failed(s->swim, now_ms(), &c->peer);
        if (s->result) s->result(s->ctx, &c->peer, ok ? NULL : why ? why : "failed");
    }
    conn_close(c);
    s->changed(s->ctx);
}

static void sync_finish(struct sync_conn *c, bool ok)
{
    sync_end(c, ok, NULL);
}

/* Why a frame was refused by the envelope rule, for an exchange we opened. */
static const char *envelope_why(enum rd_envelope_verdict v)
{
    switch (v) {
    case RD_ENVELOPE_NOKEY:
        return "envelope: no key of ours opened the answer";
    case RD_ENVELOPE_PLAIN:
        return "envelope: the answer came in the clear and we need it sealed";
    case RD_ENVELOPE_SEALED:
        return "envelope: the answer came sealed and we have no keyring";
    default:
        return "envelope: malformed answer";
    }
}

/* The connection's deadline passed. An incoming one is refused by the deadline it missed;
 * one whose frame arrived was answering a peer that does not read the answer. */
static void sync_timeout(uv_timer_t *t)
{
    struct sync_conn *c = t->data;
    if (!c->outgoing && !c->replied) {
        refuse(c->s, c->have_prefix ? TIMED_OUT_FRAME : TIMED_OUT_HEADER, &c->peer, NULL);
    } else {
        char addr[RD_ADDR_STRLEN];
        rd_logf(RD_LOG_DEBUG, "sync timed out",
                RD_FSTR("peer", rd_addr_format(&c->peer, addr, sizeof addr)));
    }
    char why[64];
    snprintf(why, sizeof why, "timed out: no answer within %d ms", RD_SYNC_TIMEOUT_MS);
    sync_end(c, false, why);
}

static struct sync_conn *conn_new(struct rd_sync *s, bool outgoing)
{
    struct sync_conn *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->s = s;
    c->outgoing = outgoing;
    rd_wire_frame_reader_init(&c->reader);
    uv_tcp_init(s->loop, &c->tcp);
    uv_timer_init(s->loop, &c->timer);
    c->tcp.data = c->timer.data = c;
    s->handles += 2;
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    return c;
}

/* ---------------------------------------------------------------- sending */

static bool joining(const struct rd_sync *s)
{
    return s->joins && !rd_swim_joined(s->swim);
}

/* Encodes our full state as one frame into *out, sealed when we have keys; 0 or RD_ENOMEM /
 * RD_E2BIG. */
static int encode_state(const struct rd_sync *s, uint8_t flags, char **out, size_t *len)
{
    struct rd_packet pkt;
    struct rd_member *state = rd_swim_sync_state(s->swim, flags, &pkt);
    if (!state) return RD_ENOMEM;
    pkt.msgs[0].ring = s->ring;
    pkt.msgs[0].flags |= (uint8_t)(s->ring_set | (joining(s) ? RD_SYNC_JOIN : 0));
    size_t cap = RD_WIRE_HEADER_MAX + RD_WIRE_MSG_MAX;
    for (size_t i = 0; i < pkt.nmembers; i++)
        cap += rd_wire_member_size_max(&pkt.members[i]);
    bool seal = s->keyring && s->keyring->nkeys && !s->plain_out;
    char *buf = malloc(RD_WIRE_FRAME_PREFIX + cap + RD_ENVELOPE_OVERHEAD);
    char *plain = seal ? malloc(cap) : buf + RD_WIRE_FRAME_PREFIX;
    size_t body;
    int rc = buf && plain ? rd_wire_encode(&pkt, plain, cap, &body) : RD_ENOMEM;
    if (rc == 0 && seal)
        rc = rd_envelope_seal(s->keyring->keys[0], s->label, plain, body,
                              buf + RD_WIRE_FRAME_PREFIX, cap + RD_ENVELOPE_OVERHEAD, &body);
    if (seal) free(plain);
    free(state);
    if (rc < 0) {
        free(buf);
        return rc;
    }
    rd_wire_frame_put_header(buf, (uint32_t)body);
    *out = buf;
    *len = RD_WIRE_FRAME_PREFIX + body;
    return 0;
}

static void sync_written(uv_write_t *w, int status)
{
    struct sync_conn *c = w->data;
    free(c->out);
    c->out = NULL;
    if (status < 0) {
        sync_end(c, false, uv_strerror(status));
        return;
    }
    if (!c->outgoing) /* we answered: done */
        sync_finish(c, true);
}

/* Starts writing our state; 0, or an RD_E* code when nothing could be sent. */
static int sync_send(struct sync_conn *c, uint8_t flags)
{
    size_t len;
    int rc = encode_state(c->s, flags, &c->out, &len);
    if (rc < 0) return rc;
    uv_buf_t b = uv_buf_init(c->out, (unsigned)len);
    c->write.data = c;
    return uv_write(&c->write, (uv_stream_t *)&c->tcp, &b, 1, sync_written) < 0 ? RD_EIO : 0;
}

/* ---------------------------------------------------------------- receiving */

static void sync_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct sync_conn *c = h->data;
    *b = uv_buf_init(c->s->read_buf, sizeof c->s->read_buf);
}

static const struct rd_msg *sync_msg(const struct rd_packet *pkt)
{
    for (size_t k = 0; k < pkt->nmsgs; k++)
        if (pkt->msgs[k].type == RD_MSG_SYNC) return &pkt->msgs[k];
    return NULL;
}

static bool asks_reply(const struct rd_packet *pkt)
{
    const struct rd_msg *m = sync_msg(pkt);
    return m && (m->flags & RD_SYNC_REPLY);
}

/* Compares the frame's ring parameters with ours; a refusal is counted and logged with both,
 * an adoption or a stop is the agent's to carry out (rd_sync_ring_fn). */
static enum rd_ring_verdict judge_ring(struct sync_conn *c, const struct rd_packet *pkt)
{
    struct rd_sync *s = c->s;
    const struct rd_msg *m = sync_msg(pkt);
    if (!s->ring_fn) return RD_RING_AGREE;
    if (!m) {
        refuse(s, MALFORMED, &c->peer, "no SYNC message");
        return RD_RING_REFUSE;
    }
    struct rd_ring_side ours = {s->ring, s->ring_set, joining(s)};
    struct rd_ring_side theirs = {m->ring, m->flags & (RD_SYNC_VNODES_SET | RD_SYNC_MODE_SET),
                                  (m->flags & RD_SYNC_JOIN) != 0};
    enum rd_ring_verdict v = rd_ring_judge(&ours, &theirs, c->outgoing);
    if (v == RD_RING_REFUSE) {
        char o[64], t[64], detail[160];
        snprintf(detail, sizeof detail, "ours: %s; %s's: %s",
                 rd_ring_params_format(&s->ring, o, sizeof o), pkt->from,
                 rd_ring_params_format(&m->ring, t, sizeof t));
        refuse(s, RING_PARAMS, &c->peer, detail);
    } else if (v == RD_RING_ADOPT) {
        s->ring = m->ring;
    }
    if (v == RD_RING_ADOPT || v == RD_RING_STOP) s->ring_fn(s->ctx, v, &m->ring, pkt->from);
    return v;
}

/* A whole frame arrived: merge it, and answer if we are the server side. */
static void sync_frame(struct sync_conn *c, const char *body, uint32_t len)
{
    struct rd_sync *s = c->s;
    /* the frame's length bounds how many records it can hold, hence the scratch we need */
    size_t cap = len / RD_WIRE_MEMBER_MIN + 1;
    if (cap > RD_MAX_MEMBERS) cap = RD_MAX_MEMBERS;
    const struct rd_keyring *kr = s->keyring;
    size_t nkeys = kr ? kr->nkeys : 0, plen = 0;
    char *opened = nkeys ? malloc(len) : NULL;
    const char *plain = NULL;
    enum rd_envelope_verdict v = RD_ENVELOPE_MALFORMED;
    if (!nkeys || opened)
        v = rd_envelope_accept(nkeys ? kr->keys : NULL, nkeys, s->label, !s->plain_in, body, len,
                               opened, len, &plain, &plen);
    if (rd_envelope_drop_count(&s->dropped, v)) {
        free(opened);
        sync_end(c, false, envelope_why(v));
        return;
    }
    struct rd_member *members = malloc(cap * sizeof *members);
    struct rd_packet pkt;
    bool decodable = v != RD_ENVELOPE_MALFORMED; /* opened, or plain and let in */
    const char *reason = decodable ? "out of memory" : "bad envelope";
    int rc = RD_EPROTO;
    if (members && decodable) rc = rd_wire_decode(plain, plen, &pkt, members, cap, &reason);
    free(opened);
    if (rc < 0) {
        /* malformed, unless all that failed was our own allocation */
        if (members || !decodable) refuse(s, MALFORMED, &c->peer, reason);
        free(members);
        sync_end(c, false, decodable ? "malformed answer" : envelope_why(v));
        return;
    }
    /* an answer in our own name is our own agent (a seed that is our address in disguise):
     * merging it would tell us nothing, and it is no cluster joined */
    bool self = strcmp(pkt.from, rd_swim_self(s->swim)->name) == 0;
    enum rd_ring_verdict verdict = self ? RD_RING_AGREE : judge_ring(c, &pkt);
    if (verdict == RD_RING_STOP) {
        free(members);
        sync_end(c, false, "ring parameters differ");
        return;
    }
    bool reply =
        verdict == RD_RING_REFUSE ? asks_reply(&pkt) : rd_swim_sync_recv(s->swim, now_ms(), &pkt);
    free(members);
    rd_wire_frame_reader_free(&c->reader); /* merged: not held while we answer */
    if (!c->outgoing && reply && !c->replied) {
        c->replied = true;
        uv_read_stop((uv_stream_t *)&c->tcp);
        if (sync_send(c, 0) < 0) sync_finish(c, false);
        s->changed(s->ctx);
        return;
    }
    sync_end(c, !(c->outgoing && self), "answered by this agent itself, or one of its name");
}

static void sync_read(uv_stream_t *stream, ssize_t n, const uv_buf_t *b)
{
    struct sync_conn *c = stream->data;
    if (n < 0) {
        sync_end(c, false,
                 n == UV_EOF ? "closed without an answer: it refused our state (another key or "
                               "--cluster, or our own name?) or had no sync slot free for us"
                             : uv_strerror((int)n));
        return;
    }
    size_t used; /* bytes after the frame are not part of the exchange: ignored */
    int rc = rd_wire_frame_feed(&c->reader, b->base, (size_t)n, &used);
    if (rc == RD_E2BIG) /* refused from its prefix alone: the body was never buffered */
        refuse(c->s, c->reader.body_len == 0 ? MALFORMED : OVERSIZE, &c->peer,
               c->reader.body_len == 0 ? "zero length" : NULL);
    if (rc < 0 && rc != RD_EAGAIN) {
        sync_end(c, false, "malformed answer");
        return;
    }
    if (!c->outgoing && !c->have_prefix && c->reader.body_len > 0) {
        /* the prefix is in: the rest of the frame has what is left of the whole deadline */
        c->have_prefix = true;
        uint64_t spent = now_ms() - c->started_ms;
        uv_timer_start(&c->timer, sync_timeout,
                       spent < RD_SYNC_TIMEOUT_MS ? RD_SYNC_TIMEOUT_MS - spent : 0, 0);
    }
    if (rc == 0) sync_frame(c, c->reader.body, c->reader.body_len);
}

/* ---------------------------------------------------------------- connecting */

static void sync_connected(uv_connect_t *req, int status)
{
    struct sync_conn *c = req->data;
    if (status < 0) {
        char addr[RD_ADDR_STRLEN];
        if (!c->s->closing)
            rd_logf(RD_LOG_DEBUG, "sync connect failed",
                    RD_FSTR("peer", rd_addr_format(&c->peer, addr, sizeof addr)),
                    RD_FSTR("error", uv_strerror(status)));
        sync_end(c, false, uv_strerror(status));
        return;
    }
    if (sync_send(c, RD_SYNC_REPLY) < 0 ||
        uv_read_start((uv_stream_t *)&c->tcp, sync_alloc, sync_read) < 0)
        sync_finish(c, false);
}

void rd_sync_connect(struct rd_sync *s, const struct rd_addr *to)
{
    struct sync_conn *c = s->closing ? NULL : conn_new(s, true);
    if (!c) {
        rd_swim_sync_failed(s->swim, now_ms(), to);
        if (s->result && !s->closing) s->result(s->ctx, to, "out of memory");
        return;
    }
    c->peer = *to;
    uv_timer_start(&c->timer, sync_timeout, RD_SYNC_TIMEOUT_MS, 0);
    struct sockaddr_storage ss;
    rd_addr_to_sockaddr(to, &ss);
    c->connect.data = c;
    int rc = uv_tcp_connect(&c->connect, &c->tcp, (struct sockaddr *)&ss, sync_connected);
    if (rc < 0) sync_end(c, false, uv_strerror(rc));
}

void rd_sync_set_result(struct rd_sync *s, rd_sync_result_fn result)
{
    s->result = result;
}

/* ---------------------------------------------------------------- admission */

static bool same_ip(const struct rd_addr *a, const struct rd_addr *b)
{
    return a->family == b->family && memcmp(a->ip, b->ip, a->family == 4 ? 4 : 16) == 0;
}

/* Whether `ip` is a known source: a seed's, or an alive or suspect member's but our own. */
static bool source_known(const struct rd_sync *s, const struct rd_addr *ip)
{
    for (size_t k = 0; k < s->nseeds; k++)
        if (same_ip(&s->seeds[k], ip)) return true;
    size_t n = rd_swim_member_count(s->swim);
    for (size_t i = 1; i < n; i++) { /* 0 is ourselves: our own host proves nothing */
        struct rd_member_view m;
        rd_swim_member(s->swim, i, &m);
        if ((m.status == RD_ALIVE || m.status == RD_SUSPECT) && same_ip(&m.addr, ip)) return true;
    }
    return false;
}

/*
 * Gives the accepted connection `c` a slot, or says why not (REFUSALS when admitted). The
 * member table is looked at only when the source would be refused as a stranger: below
 * those limits a known member is admitted as a stranger would be, and is counted among
 * them (it then leaves the kept slots to others).
 */
static enum refusal admit(struct rd_sync *s, struct sync_conn *c)
{
    if (s->incoming >= RD_SYNC_MAX_INCOMING) return REFUSED_FULL;
    size_t same = 0;
    for (const struct sync_conn *o = s->conns; o; o = o->next)
        if (o->admitted && same_ip(&o->peer, &c->peer)) same++;
    bool source_full = same >= RD_SYNC_MAX_PER_SOURCE;
    if (source_full || s->strangers >= RD_SYNC_MAX_STRANGERS) {
        if (!source_known(s, &c->peer)) return source_full ? REFUSED_SOURCE : REFUSED_FULL;
        c->known = true;
    }
    c->admitted = true;
    s->incoming++;
    if (!c->known) s->strangers++;
    return REFUSALS;
}

static void on_accept(uv_stream_t *server, int status)
{
    struct rd_sync *s = server->data;
    if (status < 0 || s->closing) return;
    struct sync_conn *c = conn_new(s, false);
    if (!c) return;
    struct sockaddr_storage ss;
    int len = sizeof ss;
    if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0 ||
        uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) < 0 ||
        rd_addr_from_sockaddr((struct sockaddr *)&ss, &c->peer) < 0) {
        conn_close(c); /* gone already, or not a peer we could name */
        return;
    }
    enum refusal why = admit(s, c);
    if (why != REFUSALS) {
        refuse(s, why, &c->peer, NULL);
        conn_close(c);
        return;
    }
    c->started_ms = now_ms();
    uv_timer_start(&c->timer, sync_timeout, RD_SYNC_HEADER_TIMEOUT_MS, 0);
    if (uv_read_start((uv_stream_t *)&c->tcp, sync_alloc, sync_read) < 0) sync_finish(c, false);
}

/* ---------------------------------------------------------------- start and stop */

static void listener_closed(uv_handle_t *h)
{
    struct rd_sync *s = h->data;
    s->handles--;
    sync_release(s);
}

int rd_sync_start(uv_loop_t *loop, struct rd_swim *swim, const struct rd_addr *bind,
                  rd_sync_changed_fn changed, void *ctx, struct rd_sync **out, char *err,
                  size_t errlen)
{
    *out = NULL;
    struct rd_sync *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(err, errlen, "out of memory");
        return RD_ENOMEM;
    }
    s->loop = loop;
    s->swim = swim;
    s->changed = changed;
    s->ctx = ctx;
    struct sockaddr_storage ss;
    rd_addr_to_sockaddr(bind, &ss);
    uv_tcp_init(loop, &s->listener);
    s->listener.data = s;
    s->handles = 1;
    int rc =
        uv_tcp_bind(&s->listener, (struct sockaddr *)&ss, bind->family == 6 ? UV_TCP_IPV6ONLY : 0);
    if (rc == 0) rc = uv_listen((uv_stream_t *)&s->listener, 128, on_accept);
    if (rc < 0) {
        char addr[RD_ADDR_STRLEN];
        snprintf(err, errlen, "cannot listen on TCP %s: %s",
                 rd_addr_format(bind, addr, sizeof addr), uv_strerror(rc));
        s->closing = true;
        uv_close((uv_handle_t *)&s->listener, listener_closed);
        return RD_EIO;
    }
    *out = s;
    return 0;
}

void rd_sync_add_seed(struct rd_sync *s, const struct rd_addr *seed)
{
    for (size_t k = 0; k < s->nseeds; k++)
        if (same_ip(&s->seeds[k], seed)) return;
    s->seeds[s->next_seed] = *seed;
    s->next_seed = (s->next_seed + 1) % RD_SYNC_SEEDS_MAX;
    if (s->nseeds < RD_SYNC_SEEDS_MAX) s->nseeds++;
}

void rd_sync_stats(const struct rd_sync *s, struct rd_sync_stats *out)
{
    *out = (struct rd_sync_stats){
        .refused_source = s->refused[REFUSED_SOURCE],
        .refused_full = s->refused[REFUSED_FULL],
        .timed_out_header = s->refused[TIMED_OUT_HEADER],
        .timed_out_frame = s->refused[TIMED_OUT_FRAME],
        .oversize = s->refused[OVERSIZE],
        .malformed = s->refused[MALFORMED],
        .ring_params = s->refused[RING_PARAMS],
    };
}

void rd_sync_set_ring(struct rd_sync *s, const struct rd_ring_params *params, unsigned set,
                      bool joins, rd_sync_ring_fn fn)
{
    s->ring = *params;
    s->ring_set = set;
    s->joins = joins;
    s->ring_fn = fn;
}

struct rd_envelope_drops rd_sync_dropped(const struct rd_sync *s)
{
    return s->dropped;
}

void rd_sync_set_envelope(struct rd_sync *s, const struct rd_keyring *kr, const char *label)
{
    s->keyring = kr;
    s->label = label;
}

void rd_sync_set_verify(struct rd_sync *s, bool verify_incoming, bool verify_outgoing)
{
    s->plain_in = !verify_incoming;
    s->plain_out = !verify_outgoing;
}

void rd_sync_close(struct rd_sync *s)
{
    if (!s || s->closing) return;
    s->closing = true;
    uv_close((uv_handle_t *)&s->listener, listener_closed);
    for (struct sync_conn *c = s->conns; c; c = c->next)
        conn_close(c);
}
