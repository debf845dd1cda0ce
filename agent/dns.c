/*
 * dns.c — c-ares on the libuv loop (see dns.h).
 *
 * Why this shape: seeds are resolved on the loop, never blocking it, from the servers
 * --dns-server names, with SRV, and with no NSS module for a static binary to load: c-ares
 * is an asynchronous stub resolver in C that hands out its sockets: each one is
 * watched with a uv_poll_t (created and closed as c-ares reports their state), and its
 * retransmissions run off one uv_timer_t set to ares_timeout() after every step. A request
 * counts the c-ares queries it still waits for (one per name; SRV adds one per target) and
 * collects their addresses; when the count reaches zero it goes on a done list, which a
 * zero-delay timer delivers, so a callback never runs inside rd_dns_resolve (a literal
 * address is answered here, without c-ares) and an abandoned request is freed in one place.
 */
#include "dns.h"

#include <ares.h>
#include <arpa/inet.h>
#include <arpa/nameser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rand.h"
#include "rd_err.h"

struct rd_dns_req {
    struct rd_dns *d;
    rd_dns_cb cb; /* NULL once abandoned */
    void *ctx;
    int port; /* of a HOST:PORT request; SRV targets carry their own */
    int pending;
    struct rd_addr addrs[RD_DNS_ADDRS_MAX];
    size_t n;
    uint32_t offered;               /* distinct addresses the answers held, kept or not */
    char why[RD_HOSTPORT_MAX + 96]; /* "cannot resolve NAME: REASON" */
    char text[RD_HOSTPORT_MAX + 1];
    struct rd_dns_req *next_done;
};

struct sock_watch {
    uv_poll_t poll;
    ares_socket_t fd;
    struct rd_dns *d;
    struct sock_watch *next;
};

struct rd_dns {
    uv_loop_t *loop;
    ares_channel ch;
    uv_timer_t timer;   /* c-ares' next timeout */
    uv_timer_t deliver; /* hands done requests to their callbacks */
    struct sock_watch *socks;
    struct rd_dns_req *done;
    bool closing;
    int timers_open;     /* counts down as rd_dns_close closes them */
    struct rd_rand rand; /* the order of equal-priority SRV targets */
};

/* ---------------------------------------------------------------- pure parts */

int rd_dns_spec_parse(const char *text, int default_port, struct rd_dns_spec *out, char *err,
                      size_t errlen)
{
    memset(out, 0, sizeof *out);
    size_t np = strlen(RD_DNS_SRV_PREFIX);
    if (strncmp(text, RD_DNS_SRV_PREFIX, np) == 0) {
        const char *name = text + np;
        size_t len = strlen(name);
        if (len == 0 || len > RD_DNS_NAME_MAX || strpbrk(name, ":[] \t")) {
            snprintf(err, errlen,
                     "expected srv:NAME (at most %d characters), as in "
                     "srv:_ringd._udp.example.org",
                     RD_DNS_NAME_MAX);
            return RD_EINVAL;
        }
        out->srv = true;
        memcpy(out->host, name, len + 1);
        return 0;
    }
    if (rd_hostport_split(text, default_port, out->host, sizeof out->host, &out->port, err,
                          errlen) < 0)
        return RD_EINVAL;
    if (out->host[0] == '\0') {
        snprintf(err, errlen, "missing host");
        return RD_EINVAL;
    }
    return 0;
}

size_t rd_dns_merge(struct rd_addr *dst, size_t n, size_t cap, const struct rd_addr *src, size_t m)
{
    for (size_t i = 0; i < m && n < cap; i++) {
        bool seen = false;
        for (size_t k = 0; k < n && !seen; k++)
            seen = rd_addr_equal(&dst[k], &src[i]);
        if (!seen) dst[n++] = src[i];
    }
    return n;
}

void rd_dns_ipv4_first(struct rd_addr *a, size_t n)
{
    /* a stable partition by insertion: n is at most a few dozen */
    for (size_t i = 1; i < n; i++) {
        if (a[i].family != 4) continue;
        struct rd_addr v = a[i];
        size_t k = i;
        for (; k > 0 && a[k - 1].family == 6; k--)
            a[k] = a[k - 1];
        a[k] = v;
    }
}

/* ---------------------------------------------------------------- the loop's side */

static void on_timeout(uv_timer_t *h);

static void rearm(struct rd_dns *d)
{
    if (d->closing) return;
    struct timeval tv, *t = ares_timeout(d->ch, NULL, &tv);
    if (!t) {
        uv_timer_stop(&d->timer);
        return;
    }
    uint64_t ms = (uint64_t)t->tv_sec * 1000u + ((uint64_t)t->tv_usec + 999u) / 1000u;
    uv_timer_start(&d->timer, on_timeout, ms, 0);
}

static void on_timeout(uv_timer_t *h)
{
    struct rd_dns *d = h->data;
    ares_process_fd(d->ch, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
    rearm(d);
}

static void on_poll(uv_poll_t *h, int status, int events)
{
    struct sock_watch *w = h->data;
    struct rd_dns *d = w->d;
    ares_socket_t fd = w->fd; /* w may go while c-ares processes */
    bool all = status < 0;    /* an error: let c-ares read and write to find out */
    ares_process_fd(d->ch, all || (events & UV_READABLE) ? fd : ARES_SOCKET_BAD,
                    all || (events & UV_WRITABLE) ? fd : ARES_SOCKET_BAD);
    rearm(d);
}

static void free_watch(uv_handle_t *h)
{
    free(h->data);
}

/* c-ares opened, changed or closed a socket: watch it for what it waits for. */
static void sock_state(void *data, ares_socket_t fd, int readable, int writable)
{
    struct rd_dns *d = data;
    struct sock_watch **pp = &d->socks, *w;
    while ((w = *pp) && w->fd != fd)
        pp = &w->next;
    if (!readable && !writable) {
        if (!w) return;
        *pp = w->next;
        uv_poll_stop(&w->poll);
        uv_close((uv_handle_t *)&w->poll, free_watch);
        return;
    }
    if (!w) {
        if (d->closing || !(w = calloc(1, sizeof *w))) return; /* c-ares times the query out */
        if (uv_poll_init_socket(d->loop, &w->poll, fd) < 0) {
            free(w);
            return;
        }
        w->fd = fd;
        w->d = d;
        w->poll.data = w;
        w->next = d->socks;
        d->socks = w;
    }
    uv_poll_start(&w->poll, (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0), on_poll);
}

static void deliver(uv_timer_t *h)
{
    struct rd_dns *d = h->data;
    struct rd_dns_req *r;
    while ((r = d->done)) {
        d->done = r->next_done;
        if (r->cb) {
            rd_dns_ipv4_first(r->addrs, r->n);
            if (r->n)
                r->cb(r->ctx, r->text, 0, r->addrs, r->n, NULL);
            else
                r->cb(r->ctx, r->text, RD_ENOENT, NULL, 0,
                      r->why[0] ? r->why : "the name has no address");
        }
        free(r);
    }
}

/* One query of r answered: when it was the last, r is done. */
static void query_done(struct rd_dns_req *r)
{
    if (--r->pending > 0) return;
    struct rd_dns *d = r->d;
    r->next_done = d->done;
    d->done = r;
    if (!d->closing) uv_timer_start(&d->deliver, deliver, 0, 0);
}

static void note_failure(struct rd_dns_req *r, const char *what, int status)
{
    if (!r->why[0])
        snprintf(r->why, sizeof r->why, "cannot resolve %s: %s", what, ares_strerror(status));
}

struct target {
    struct rd_dns_req *r;
    int port;
    char name[RD_HOSTPORT_MAX + 1];
};

/* Keeps `a` among the request's addresses: while there is room, always; after, as reservoir
 * sampling does, so a name with more addresses than RD_DNS_ADDRS_MAX gives each the same
 * chance, and a new sample at each round. */
static void offer(struct rd_dns_req *r, const struct rd_addr *a)
{
    for (size_t k = 0; k < r->n; k++)
        if (rd_addr_equal(&r->addrs[k], a)) return;
    r->offered++;
    if (r->n < RD_DNS_ADDRS_MAX) {
        r->addrs[r->n++] = *a;
        return;
    }
    uint32_t j = rd_rand_below(&r->d->rand, r->offered);
    if (j < RD_DNS_ADDRS_MAX) r->addrs[j] = *a;
}

static void got_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
    (void)timeouts;
    struct target *t = arg;
    struct rd_dns_req *r = t->r;
    if (status != ARES_SUCCESS || !res) {
        note_failure(r, t->name, status);
    } else {
        for (struct ares_addrinfo_node *n = res->nodes; n; n = n->ai_next) {
            struct rd_addr a;
            if (rd_addr_from_sockaddr(n->ai_addr, &a) < 0) continue;
            a.port = (uint16_t)t->port;
            offer(r, &a);
        }
    }
    if (res) ares_freeaddrinfo(res);
    free(t);
    query_done(r);
}

/* True if `host` is an IPv4 or IPv6 literal; then *out is that address with `port`. */
static bool literal_addr(const char *host, int port, struct rd_addr *out)
{
    uint8_t ip[16];
    memset(out, 0, sizeof *out);
    out->port = (uint16_t)port;
    if (inet_pton(AF_INET, host, ip) == 1) {
        out->family = 4;
        memcpy(out->ip, ip, 4);
        return true;
    }
    if (inet_pton(AF_INET6, host, ip) != 1) return false;
    struct sockaddr_in6 s6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
    memcpy(&s6.sin6_addr, ip, 16);
    return rd_addr_from_sockaddr((struct sockaddr *)&s6, out) == 0;
}

/*
 * Asks for the addresses of `name`. A literal is its own answer: this c-ares sends even a
 * literal to the name servers (A and AAAA queries for "127.0.0.1"), which costs a round
 * trip, or seconds when a server drops the AAAA query, and leaks the seed list.
 */
static void ask_addresses(struct rd_dns_req *r, const char *name, int port)
{
    struct rd_addr lit;
    if (literal_addr(name, port, &lit)) {
        offer(r, &lit);
        return;
    }
    struct target *t = calloc(1, sizeof *t);
    if (!t) {
        snprintf(r->why, sizeof r->why, "out of memory");
        return;
    }
    *t = (struct target){.r = r, .port = port};
    snprintf(t->name, sizeof t->name, "%s", name);
    struct ares_addrinfo_hints hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_DGRAM};
    r->pending++;
    ares_getaddrinfo(r->d->ch, name, NULL, &hints, got_addrinfo, t);
}

/* SRV records of one answer that are looked at; a seed list needs a few, not thousands. */
#define SRV_RECORDS_MAX 256

struct srv_pick {
    const struct ares_srv_reply *rec;
    uint64_t key; /* random: the order among equal priorities */
};

static int by_priority(const void *a, const void *b)
{
    const struct srv_pick *x = a, *y = b;
    if (x->rec->priority != y->rec->priority) return x->rec->priority < y->rec->priority ? -1 : 1;
    return x->key < y->key ? -1 : x->key > y->key;
}

static void got_srv(void *arg, int status, int timeouts, unsigned char *abuf, int alen)
{
    (void)timeouts;
    struct rd_dns_req *r = arg;
    struct ares_srv_reply *srv = NULL;
    if (status == ARES_SUCCESS) status = ares_parse_srv_reply(abuf, alen, &srv);
    if (status != ARES_SUCCESS) {
        note_failure(r, r->text, status);
    } else if (!r->d->closing) {
        /* Lower priority first (RFC 2782), equal priorities in a new random order each time:
         * weights only matter when one target is picked, and a set larger than
         * RD_DNS_SRV_TARGETS_MAX gives each target its turn across rounds. A target of "."
         * means no service there. */
        struct srv_pick picks[SRV_RECORDS_MAX];
        size_t n = 0;
        for (struct ares_srv_reply *x = srv; x && n < SRV_RECORDS_MAX; x = x->next)
            if (x->port && x->host[0] && strcmp(x->host, ".") != 0)
                picks[n++] = (struct srv_pick){x, rd_rand_next(&r->d->rand)};
        qsort(picks, n, sizeof picks[0], by_priority);
        for (size_t i = 0; i < n && i < RD_DNS_SRV_TARGETS_MAX; i++)
            ask_addresses(r, picks[i].rec->host, picks[i].rec->port);
    }
    if (srv) ares_free_data(srv);
    query_done(r);
}

int rd_dns_start(uv_loop_t *loop, const char *servers, struct rd_dns **out, char *err,
                 size_t errlen)
{
    struct rd_dns *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return RD_ENOMEM;
    }
    d->loop = loop;
    rd_rand_seed(&d->rand, uv_hrtime() ^ ((uint64_t)getpid() << 32));
    int st = ares_library_init(ARES_LIB_INIT_ALL);
    struct ares_options o = {.sock_state_cb = sock_state,
                             .sock_state_cb_data = d,
                             .timeout = RD_DNS_TIMEOUT_MS,
                             .tries = RD_DNS_TRIES};
    if (st == ARES_SUCCESS) {
        st = ares_init_options(&d->ch, &o,
                               ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES);
        if (st != ARES_SUCCESS) ares_library_cleanup();
    }
    if (st != ARES_SUCCESS) {
        snprintf(err, errlen, "cannot start the resolver: %s", ares_strerror(st));
        free(d);
        return st == ARES_ENOMEM ? RD_ENOMEM : RD_EIO;
    }
    if (servers && servers[0] &&
        (st = ares_set_servers_ports_csv(d->ch, servers)) != ARES_SUCCESS) {
        snprintf(err, errlen, "bad DNS server list '%s': %s (expected IP:PORT[,IP:PORT])", servers,
                 ares_strerror(st));
        ares_destroy(d->ch);
        ares_library_cleanup();
        free(d);
        return RD_EINVAL;
    }
    uv_timer_init(loop, &d->timer);
    uv_timer_init(loop, &d->deliver);
    d->timer.data = d->deliver.data = d;
    *out = d;
    return 0;
}

static void free_dns(uv_handle_t *h)
{
    struct rd_dns *d = h->data;
    if (--d->timers_open == 0) free(d); /* both timers closed, in whatever order */
}

void rd_dns_close(struct rd_dns *d)
{
    if (!d) return;
    d->closing = true;
    ares_destroy(d->ch); /* every pending query ends (ARES_EDESTRUCTION): onto the done list */
    ares_library_cleanup();
    struct rd_dns_req *r;
    while ((r = d->done)) {
        d->done = r->next_done;
        free(r);
    }
    for (struct sock_watch *w = d->socks, *next; w; w = next) { /* if c-ares left any */
        next = w->next;
        uv_close((uv_handle_t *)&w->poll, free_watch);
    }
    d->timers_open = 2;
    uv_close((uv_handle_t *)&d->timer, free_dns);
    uv_close((uv_handle_t *)&d->deliver, free_dns);
}

int rd_dns_resolve(struct rd_dns *d, const char *text, int default_port, rd_dns_cb cb, void *ctx,
                   struct rd_dns_req **out, char *err, size_t errlen)
{
    struct rd_dns_spec spec;
    if (rd_dns_spec_parse(text, default_port, &spec, err, errlen) < 0) return RD_EINVAL;
    struct rd_dns_req *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return RD_ENOMEM;
    }
    *r = (struct rd_dns_req){.d = d, .cb = cb, .ctx = ctx, .port = spec.port};
    snprintf(r->text, sizeof r->text, "%s", text);
    r->pending = 1; /* ours, until every query is asked: none finishes r early */
    if (spec.srv)
        r->pending++, ares_query(d->ch, spec.host, ns_c_in, ns_t_srv, got_srv, r);
    else
        ask_addresses(r, spec.host, spec.port);
    if (out) *out = r;
    query_done(r);
    rearm(d);
    return 0;
}

void rd_dns_abandon(struct rd_dns_req *r)
{
    r->cb = NULL;
}

/* ---------------------------------------------------------------- blocking, at start */

struct now_result {
    int rc;
    struct rd_addr addr;
    char why[RD_HOSTPORT_MAX + 96]; /* "cannot resolve NAME: REASON" */
};

static void got_now(void *ctx, const char *text, int rc, const struct rd_addr *addrs, size_t n,
                    const char *why)
{
    (void)text, (void)n;
    struct now_result *res = ctx;
    res->rc = rc;
    if (rc == 0)
        res->addr = addrs[0];
    else
        snprintf(res->why, sizeof res->why, "%s", why);
}

int rd_dns_resolve_now(const char *text, int default_port, bool passive, struct rd_addr *out,
                       char *err, size_t errlen)
{
    char host[RD_HOSTPORT_MAX + 1];
    int port;
    if (rd_hostport_split(text, default_port, host, sizeof host, &port, err, errlen) < 0)
        return RD_EINVAL;
    if (passive && (host[0] == '\0' || strcmp(host, "*") == 0)) strcpy(host, "0.0.0.0");
    if (host[0] == '\0') {
        snprintf(err, errlen, "missing host");
        return RD_EINVAL;
    }
    if (literal_addr(host, port, out)) return 0; /* needs no resolver, nor a loop */
    uv_loop_t loop;
    if (uv_loop_init(&loop) < 0) {
        snprintf(err, errlen, "cannot resolve host: no event loop");
        return RD_EINVAL;
    }
    struct rd_dns *d = NULL;
    struct now_result res = {.rc = RD_EINVAL};
    char hp[RD_HOSTPORT_MAX + 16];
    snprintf(hp, sizeof hp, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    int rc = rd_dns_start(&loop, "", &d, err, errlen);
    if (rc == 0) rc = rd_dns_resolve(d, hp, 0, got_now, &res, NULL, err, errlen);
    if (rc == 0) {
        uv_run(&loop, UV_RUN_DEFAULT);
        if ((rc = res.rc) < 0)
            snprintf(err, errlen, "%s", res.why);
        else
            *out = res.addr;
    }
    rd_dns_close(d);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc < 0 ? RD_EINVAL : 0;
}
