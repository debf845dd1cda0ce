/*
 * metrics.c — the Prometheus endpoint (see metrics.h).
 *
 * The formatter is a pure function of a sample, so its text is checked line by line in a
 * unit test and by promtool on a real agent's output.
 *
 * The HTTP side is written here, on purpose: the endpoint must be in the static ringd that
 * ships (the .deb, the OCI image), and Debian's libmicrohttpd.a is built with TLS, which
 * pulls in libgnutls and libp11-kit, of which Debian ships no static archive. What a
 * scraper needs is one GET per connection, so the server is small and bounded, and the
 * HTTP it understands is proto/http.c's, a sans-I/O parser fuzzed on its own.
 *
 * It runs on one thread of its own that never sees the agent: the loop formats a sample
 * on a timer and publishes the text under a mutex held for one memcpy, and the thread
 * copies it out under the same mutex when a request completes. So nothing a scraper does
 * (or fails to do) can delay gossip, and the loop never waits on a socket; the mutex costs
 * nothing at one scrape a second. The thread polls the listening socket, a wake-up pipe
 * (rd_metrics_stop) and at most RD_METRICS_MAX_CONNS non-blocking connections, at most
 * RD_METRICS_MAX_PER_IP from one address; a connection over either limit is accepted and
 * closed at once. Each connection lives at most RD_METRICS_DEADLINE_MS from its accept,
 * busy or not, so a client trickling its headers or never reading its answer is cut
 * (counted); its memory is its request (RD_METRICS_REQUEST_MAX) and a copy of one answer.
 * One request per connection (Connection: close): no keep-alive state to bound, and
 * Prometheus opens one connection a scrape anyway if told to close.
 */
#include "metrics.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "rd_err.h"

const double rd_metrics_rebuild_bounds[RD_METRICS_REBUILD_BUCKETS] = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1.0};

void rd_metrics_observe(struct rd_metrics_histogram *h, double seconds)
{
    for (size_t i = 0; i < RD_METRICS_REBUILD_BUCKETS; i++)
        if (seconds <= rd_metrics_rebuild_bounds[i]) h->buckets[i]++;
    h->count++;
    h->sum += seconds;
}

/* ------------------------------------------------------------ /proc/self */

void rd_metrics_read_process(struct rd_metrics_process *out)
{
    *out = (struct rd_metrics_process){0};
    long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f || ticks <= 0 || page <= 0) {
        if (f) fclose(f);
        return;
    }
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the command name may hold spaces and parentheses: fields resume after the last ')' */
    char *p = strrchr(buf, ')');
    unsigned long long utime, stime, start, vsize;
    long long rss;
    if (!p || sscanf(p + 2,
                     "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
                     "%*d %llu %llu %lld",
                     &utime, &stime, &start, &vsize, &rss) != 5)
        return;
    /* the boot time from the clocks, not /proc/stat: systemd's ProcSubset=pid hides that */
    struct timespec real, boot;
    if (clock_gettime(CLOCK_REALTIME, &real) < 0 || clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
        return;
    double btime =
        (double)(real.tv_sec - boot.tv_sec) + (double)(real.tv_nsec - boot.tv_nsec) / 1e9;
    out->cpu_seconds = (double)(utime + stime) / (double)ticks;
    out->virtual_bytes = vsize;
    out->resident_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0;
    out->start_time_seconds = btime + (double)start / (double)ticks;
    DIR *d = opendir("/proc/self/fd");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)))
            if (e->d_name[0] != '.') out->open_fds++;
        closedir(d);
        out->open_fds--; /* the directory's own descriptor */
    }
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
        out->max_fds = rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : (uint64_t)rl.rlim_cur;
    out->ok = true;
}

/* ------------------------------------------------------------ the formatter */

struct out {
    char *buf;
    size_t cap, len;
};

static void emit(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) o->len += (size_t)n;
}

/* # HELP and # TYPE of one family. */
static void family(struct out *o, const char *name, const char *type, const char *help)
{
    emit(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void one(struct out *o, const char *name, const char *type, const char *help, uint64_t v)
{
    family(o, name, type, help);
    emit(o, "%s %" PRIu64 "\n", name, v);
}

/* A label value as the format wants it: backslash, quote and newline escaped. */
static void label_value(struct out *o, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            emit(o, "\\%c", *v);
        else if (*v == '\n')
            emit(o, "\\n");
        else
            emit(o, "%c", *v);
    }
}

/* A float in the fewest digits that read back as the same double (0.00025, not
 * 0.00025000000000000001): bucket bounds are label values, compared as text. */
static void number(struct out *o, double v)
{
    char text[32];
    for (int digits = 6; digits <= 17; digits++) {
        snprintf(text, sizeof text, "%.*g", digits, v);
        if (strtod(text, NULL) == v) break;
    }
    emit(o, "%s", text);
}

/* A counter family of two labelled samples. */
static void two(struct out *o, const char *name, const char *help, const char *label_a, uint64_t a,
                const char *label_b, uint64_t b)
{
    family(o, name, "counter", help);
    emit(o, "%s{%s} %" PRIu64 "\n%s{%s} %" PRIu64 "\n", name, label_a, a, name, label_b, b);
}

static void drops(struct out *o, const char *name, const char *help,
                  const struct rd_envelope_drops *d)
{
    family(o, name, "counter", help);
    emit(o,
         "%s{reason=\"nokey\"} %" PRIu64 "\n%s{reason=\"plain\"} %" PRIu64
         "\n%s{reason=\"sealed\"} %" PRIu64 "\n",
         name, d->nokey, name, d->plain, name, d->sealed);
}

static void process(struct out *o, const struct rd_metrics_process *p)
{
    if (!p->ok) return;
    family(o, "process_cpu_seconds_total", "counter",
           "Total user and system CPU time spent in seconds.");
    emit(o, "process_cpu_seconds_total ");
    number(o, p->cpu_seconds);
    emit(o, "\n");
    one(o, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
        p->resident_bytes);
    one(o, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
        p->virtual_bytes);
    one(o, "process_open_fds", "gauge", "Number of open file descriptors.", p->open_fds);
    one(o, "process_max_fds", "gauge", "Maximum number of open file descriptors.", p->max_fds);
    family(o, "process_start_time_seconds", "gauge",
           "Start time of the process since unix epoch in seconds.");
    emit(o, "process_start_time_seconds ");
    number(o, p->start_time_seconds);
    emit(o, "\n");
}

size_t rd_metrics_format(const struct rd_metrics_sample *s, char *buf, size_t cap)
{
    struct out o = {.buf = buf, .cap = cap};
    if (cap) buf[0] = '\0';
    family(&o, "ringd_build_info", "gauge", "The release this agent was built from.");
    emit(&o, "ringd_build_info{version=\"");
    label_value(&o, s->version);
    emit(&o, "\"} 1\n");
    one(&o, "ringd_ready", "gauge", "1 once the agent answers placement queries (joined).",
        s->ready);
    static const char *const status[4] = {"alive", "suspect", "dead", "left"};
    family(&o, "ringd_members", "gauge", "Members in this agent's table, by status.");
    for (size_t i = 0; i < 4; i++)
        emit(&o, "ringd_members{status=\"%s\"} %" PRIu64 "\n", status[i], s->members[i]);
    one(&o, "ringd_ring_points", "gauge", "Points on the consistent-hash ring.", s->ring_points);
    one(&o, "ringd_ring_members", "gauge", "Members placed on the ring.", s->ring_members);
    one(&o, "ringd_ring_version", "gauge", "Ring rebuilds that changed placement since start.",
        s->ring_version);
    family(&o, "ringd_ring_info", "gauge",
           "The ring's checksum as a label; agents that agree show the same one.");
    emit(&o, "ringd_ring_info{checksum=\"%016" PRIx64 "\"} 1\n", s->ring_checksum);
    one(&o, "ringd_ring_rebuilds_total", "counter", "Ring rebuilds computed.", s->ring_rebuilds);
    family(&o, "ringd_ring_rebuild_duration_seconds", "histogram", "Time one ring rebuild took.");
    for (size_t i = 0; i < RD_METRICS_REBUILD_BUCKETS; i++) {
        emit(&o, "ringd_ring_rebuild_duration_seconds_bucket{le=\"");
        number(&o, rd_metrics_rebuild_bounds[i]);
        emit(&o, "\"} %" PRIu64 "\n", s->rebuild_seconds.buckets[i]);
    }
    emit(&o,
         "ringd_ring_rebuild_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64
         "\nringd_ring_rebuild_duration_seconds_sum ",
         s->rebuild_seconds.count);
    number(&o, s->rebuild_seconds.sum);
    emit(&o, "\nringd_ring_rebuild_duration_seconds_count %" PRIu64 "\n", s->rebuild_seconds.count);
    family(&o, "ringd_ring_last_moved_ratio", "gauge",
           "Fraction of the key space the last placement change moved.");
    emit(&o, "ringd_ring_last_moved_ratio ");
    number(&o, s->ring_last_moved);
    emit(&o, "\n");
    const struct rd_swim_stats *w = &s->swim;
    two(&o, "ringd_gossip_packets_total", "Gossip datagrams, by direction.", "direction=\"in\"",
        w->packets_in, "direction=\"out\"", w->packets_out);
    two(&o, "ringd_gossip_bytes_total", "Gossip datagram bytes on the wire, by direction.",
        "direction=\"in\"", s->bytes_in, "direction=\"out\"", s->bytes_out);
    one(&o, "ringd_gossip_packets_malformed_total", "counter",
        "Datagrams dropped because they did not decode.", s->packets_malformed);
    drops(&o, "ringd_gossip_packets_dropped_total",
          "Datagrams refused by the encryption rule, by reason.", &s->packets_dropped);
    one(&o, "ringd_gossip_packets_plain_accepted_total", "counter",
        "Plain datagrams let in while keyed (gossip-verify-incoming off).",
        s->packets_dropped.plain_accepted);
    two(&o, "ringd_probes_total",
        "Direct probes ended, by result (acked directly or "
        "indirectly, or failed).",
        "result=\"ok\"", w->probes_acked, "result=\"failed\"", w->probes_failed);
    one(&o, "ringd_probes_refused_total", "counter",
        "Of the failed probes: failed at once, every path refused (nothing listens there).",
        w->probes_refused);
    one(&o, "ringd_indirect_probes_total", "counter", "Indirect probes asked of other members.",
        w->indirect_probes);
    one(&o, "ringd_gossip_packets_refused_total", "counter",
        "Datagrams whose destination's host refused them (ICMP port unreachable).",
        s->packets_refused);
    one(&o, "ringd_suspicions_total", "counter", "Members this agent saw turn suspect.",
        s->suspicions);
    one(&o, "ringd_refutes_total", "counter", "Times this agent refuted a suspicion of itself.",
        w->refutes);
    one(&o, "ringd_late_ticks_total", "counter",
        "Ticks that ran so late (a blocked or starved loop) that their verdicts were put off.",
        w->late_ticks);
    family(&o, "ringd_syncs_total", "counter", "Full-state syncs, by direction and result.");
    emit(&o,
         "ringd_syncs_total{direction=\"in\",result=\"ok\"} %" PRIu64
         "\nringd_syncs_total{direction=\"out\",result=\"ok\"} %" PRIu64
         "\nringd_syncs_total{direction=\"out\",result=\"failed\"} %" PRIu64 "\n",
         w->syncs_in, w->syncs_done, w->syncs_failed);
    const struct rd_sync_stats *y = &s->sync;
    two(&o, "ringd_syncs_refused_total", "Incoming syncs refused at accept, by reason.",
        "reason=\"source\"", y->refused_source, "reason=\"full\"", y->refused_full);
    two(&o, "ringd_syncs_timed_out_total", "Incoming syncs cut off, by phase.", "phase=\"header\"",
        y->timed_out_header, "phase=\"frame\"", y->timed_out_frame);
    one(&o, "ringd_syncs_malformed_total", "counter", "Sync frames dropped undecoded.",
        y->malformed);
    one(&o, "ringd_syncs_ring_refused_total", "counter",
        "Sync frames not merged: the peer's ring parameters differ from ours.", y->ring_params);
    one(&o, "ringd_syncs_oversize_total", "counter",
        "Sync frames refused for the length they announced.", y->oversize);
    drops(&o, "ringd_syncs_dropped_total", "Sync frames refused by the encryption rule, by reason.",
          &s->syncs_dropped);
    one(&o, "ringd_local_health", "gauge",
        "Lifeguard local health score: 0 is healthy, timeouts stretch by score+1.", s->health);
    one(&o, "ringd_storm_score", "gauge",
        "Distinct members seen refuting a suspicion or a death in the last 10-20 probe periods, "
        "less one, at most 8; suspicion timeouts stretch by the larger of it and local health, "
        "plus one.",
        s->storm);
    one(&o, "ringd_events_dropped_total", "counter",
        "Membership events lost because the queue was full.", w->events_dropped);
    family(&o, "ringd_queries_total", "counter", "Query socket commands, by command.");
    for (size_t i = 0; i < s->ncommands; i++) {
        emit(&o, "ringd_queries_total{command=\"");
        label_value(&o, s->command_names[i]);
        emit(&o, "\"} %" PRIu64 "\n", s->command_counts[i]);
    }
    one(&o, "ringd_query_connections", "gauge", "Query socket connections open.", s->connections);
    one(&o, "ringd_query_watchers", "gauge", "Query socket connections subscribed to events.",
        s->watchers);
    one(&o, "ringd_query_connections_rejected_total", "counter",
        "Query socket connections refused at the connection limit.", s->connections_rejected);
    one(&o, "ringd_query_connections_cut_off_total", "counter",
        "Query socket clients cut off for not reading their replies.", s->connections_cut_off);
    one(&o, "ringd_metrics_requests_total", "counter",
        "Requests the metrics endpoint answered with the metrics.", s->http_requests);
    one(&o, "ringd_metrics_connections_cut_off_total", "counter",
        "Metrics endpoint connections cut at their deadline.", s->http_cut_off);
    one(&o, "ringd_metrics_requests_refused_total", "counter",
        "Requests the metrics endpoint answered with an error status.", s->http_errors);
    one(&o, "ringd_metrics_connections_refused_total", "counter",
        "Metrics endpoint connections closed at accept, over a connection limit.", s->http_refused);
    process(&o, &s->process);
    return o.len;
}

/* ------------------------------------------------------------ the HTTP server */

/* One accepted connection. It reads one request into `in`, answers it from `out`, then
 * waits (briefly) for the client to close: closing with unread bytes in our receive queue
 * would send a reset that can destroy the response before the client read it. */
enum phase { READING, WRITING, LINGERING };

struct hconn {
    int fd;
    enum phase phase;
    uint64_t deadline_ms; /* accepted + RD_METRICS_DEADLINE_MS, whatever the phase */
    uint64_t linger_ms;   /* LINGERING: closed at this time if the client has not closed */
    struct sockaddr_storage peer;
    struct rd_http_parser parser;
    size_t in_len;
    char in[RD_METRICS_REQUEST_MAX];
    char *out; /* head and body, a copy made when the request completed */
    size_t out_len, out_sent;
};

struct rd_metrics_server {
    pthread_t thread;
    pthread_mutex_t lock; /* guards text, len and the counts below */
    char *text;
    size_t len;
    uint64_t requests, cut_off, errors, refused;
    int listen_fd;
    uint64_t accept_after_ms;                  /* accept paused until then: descriptors ran out */
    int wake[2];                               /* rd_metrics_stop writes a byte to wake[1] */
    struct hconn *conns[RD_METRICS_MAX_CONNS]; /* the thread's own: no lock */
};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void count(struct rd_metrics_server *m, uint64_t *counter)
{
    pthread_mutex_lock(&m->lock);
    (*counter)++;
    pthread_mutex_unlock(&m->lock);
}

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family) return false;
    if (a->ss_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr ==
               ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
    return false;
}

static void drop(struct rd_metrics_server *m, size_t slot)
{
    struct hconn *c = m->conns[slot];
    close(c->fd);
    free(c->out);
    free(c);
    m->conns[slot] = NULL;
}

/* Takes every pending connection; one over a limit is closed at once and counted. */
static void accept_all(struct rd_metrics_server *m, uint64_t now)
{
    for (;;) {
        struct sockaddr_storage peer;
        socklen_t plen = sizeof peer;
        int fd =
            accept4(m->listen_fd, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            /* out of descriptors (or memory): the listener stays readable, so rest a while
             * rather than spin; EAGAIN and the rest: nothing more to take now */
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
                m->accept_after_ms = now + RD_METRICS_ACCEPT_PAUSE_MS;
            return;
        }
        size_t free_slot = RD_METRICS_MAX_CONNS, from_peer = 0;
        for (size_t i = 0; i < RD_METRICS_MAX_CONNS; i++) {
            if (!m->conns[i])
                free_slot = free_slot < i ? free_slot : i;
            else if (same_host(&m->conns[i]->peer, &peer))
                from_peer++;
        }
        struct hconn *c = NULL;
        if (free_slot < RD_METRICS_MAX_CONNS && from_peer < RD_METRICS_MAX_PER_IP)
            c = malloc(sizeof *c);
        if (!c) {
            close(fd);
            count(m, &m->refused);
            continue;
        }
        *c = (struct hconn){
            .fd = fd, .phase = READING, .deadline_ms = now + RD_METRICS_DEADLINE_MS, .peer = peer};
        rd_http_parser_init(&c->parser);
        m->conns[free_slot] = c;
    }
}

/* Builds the answer to a complete (or refused) request: the published text for GET and
 * HEAD /metrics, a one-line body otherwise. Returns false when out of memory. */
static bool answer(struct rd_metrics_server *m, struct hconn *c, int rc)
{
    static const char text_type[] = "text/plain; charset=utf-8";
    static const char metrics_type[] = "text/plain; version=0.0.4; charset=utf-8";
    char head[256], body[128];
    const struct rd_http_request *r = &c->parser.req;
    int status = rc == 0 ? 200 : c->parser.status;
    if (status == 200 && (r->path_len != 8 || memcmp(c->in + r->path_off, "/metrics", 8) != 0))
        status = 404;
    if (status != 200) {
        int n = snprintf(body, sizeof body, "%d %s: %s\n", status, rd_http_status_text(status),
                         status == 404 ? "only /metrics is served" : c->parser.reason);
        size_t blen = n > 0 && (size_t)n < sizeof body ? (size_t)n : 0;
        size_t hlen = rd_http_response_head(head, sizeof head, status, text_type, blen);
        bool head_only = rc == 0 && r->method == RD_HTTP_HEAD;
        c->out_len = hlen + (head_only ? 0 : blen);
        if (!(c->out = malloc(c->out_len))) return false;
        memcpy(c->out, head, hlen);
        memcpy(c->out + hlen, body, c->out_len - hlen);
        count(m, &m->errors);
        return true;
    }
    pthread_mutex_lock(&m->lock);
    size_t len = m->text ? m->len : 0;
    size_t hlen = rd_http_response_head(head, sizeof head, 200, metrics_type, len);
    c->out_len = hlen + (r->method == RD_HTTP_HEAD ? 0 : len);
    if ((c->out = malloc(c->out_len))) {
        memcpy(c->out, head, hlen);
        if (c->out_len > hlen) memcpy(c->out + hlen, m->text, len);
        m->requests++;
    }
    pthread_mutex_unlock(&m->lock);
    return c->out != NULL;
}

/* Sends what the socket takes; returns false when the connection is done for. */
static bool send_some(struct hconn *c, uint64_t now)
{
    while (c->out_sent < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_NOSIGNAL);
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        c->out_sent += (size_t)n;
    }
    free(c->out);
    c->out = NULL;
    shutdown(c->fd, SHUT_WR);
    c->phase = LINGERING;
    c->linger_ms = now + RD_METRICS_LINGER_MS;
    return true;
}

/* The socket is readable (or writable, when WRITING). Returns false to close it. */
static bool serve_conn(struct rd_metrics_server *m, struct hconn *c, uint64_t now)
{
    if (c->phase == WRITING) return send_some(c, now);
    if (c->phase == LINGERING) {
        char sink[512];
        ssize_t n = recv(c->fd, sink, sizeof sink, 0);
        return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
    }
    /* the parser ends a request at RD_HTTP_REQUEST_MAX bytes, so `in` never fills up */
    ssize_t n = recv(c->fd, c->in + c->in_len, sizeof c->in - c->in_len, 0);
    if (n == 0) return false;
    if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    c->in_len += (size_t)n;
    int rc = rd_http_parse(&c->parser, c->in, c->in_len);
    if (rc == RD_EAGAIN) return true;
    if (!answer(m, c, rc)) return false;
    c->phase = WRITING;
    return send_some(c, now);
}

static void *serve(void *arg)
{
    struct rd_metrics_server *m = arg;
    struct pollfd pfd[2 + RD_METRICS_MAX_CONNS];
    size_t slot_of[2 + RD_METRICS_MAX_CONNS];
    for (;;) {
        uint64_t now = mono_ms();
        int timeout = -1;
        nfds_t n = 0;
        pfd[n++] = (struct pollfd){.fd = m->wake[0], .events = POLLIN};
        bool paused = now < m->accept_after_ms;
        pfd[n++] = (struct pollfd){.fd = paused ? -1 : m->listen_fd, .events = POLLIN};
        if (paused) timeout = (int)(m->accept_after_ms - now);
        for (size_t i = 0; i < RD_METRICS_MAX_CONNS; i++) {
            struct hconn *c = m->conns[i];
            if (!c) continue;
            uint64_t until = c->phase == LINGERING && c->linger_ms < c->deadline_ms
                                 ? c->linger_ms
                                 : c->deadline_ms;
            int wait = until > now ? (int)(until - now) : 0;
            if (timeout < 0 || wait < timeout) timeout = wait;
            slot_of[n] = i;
            pfd[n++] =
                (struct pollfd){.fd = c->fd, .events = c->phase == WRITING ? POLLOUT : POLLIN};
        }
        if (poll(pfd, n, timeout) < 0 && errno != EINTR) break;
        if (pfd[0].revents) break; /* rd_metrics_stop */
        now = mono_ms();
        for (nfds_t k = 2; k < n; k++) {
            size_t i = slot_of[k];
            if (pfd[k].revents && !serve_conn(m, m->conns[i], now)) drop(m, i);
        }
        for (size_t i = 0; i < RD_METRICS_MAX_CONNS; i++) {
            struct hconn *c = m->conns[i];
            if (!c) continue;
            if (c->phase == LINGERING && now >= c->linger_ms) {
                drop(m, i);
            } else if (now >= c->deadline_ms) {
                if (c->phase != LINGERING) count(m, &m->cut_off);
                drop(m, i);
            }
        }
        if (pfd[1].revents) accept_all(m, now);
    }
    return NULL;
}

int rd_metrics_start(const struct rd_addr *addr, struct rd_metrics_server **out, char *err,
                     size_t errlen)
{
    struct rd_metrics_server *m = calloc(1, sizeof *m);
    if (!m) return RD_ENOMEM;
    m->listen_fd = m->wake[0] = m->wake[1] = -1;
    struct sockaddr_storage ss;
    socklen_t sslen = rd_addr_to_sockaddr(addr, &ss);
    char where[RD_ADDR_STRLEN];
    const char *what = "cannot listen";
    int one = 1;
    if (pipe2(m->wake, O_NONBLOCK | O_CLOEXEC) != 0 ||
        (m->listen_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) < 0 ||
        setsockopt(m->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(m->listen_fd, (struct sockaddr *)&ss, sslen) != 0 ||
        listen(m->listen_fd, RD_METRICS_BACKLOG) != 0)
        goto fail;
    pthread_mutex_init(&m->lock, NULL);
    int rc = pthread_create(&m->thread, NULL, serve, m);
    if (rc != 0) {
        pthread_mutex_destroy(&m->lock);
        errno = rc;
        what = "cannot start its thread";
        goto fail;
    }
    *out = m;
    return 0;
fail:
    snprintf(err, errlen, "--metrics-addr %s: %s: %s", rd_addr_format(addr, where, sizeof where),
             what, strerror(errno));
    if (m->listen_fd >= 0) close(m->listen_fd);
    if (m->wake[0] >= 0) close(m->wake[0]);
    if (m->wake[1] >= 0) close(m->wake[1]);
    free(m);
    return RD_EIO;
}

int rd_metrics_publish(struct rd_metrics_server *m, const char *text, size_t len)
{
    char *copy = malloc(len + 1);
    if (!copy) return RD_ENOMEM;
    memcpy(copy, text, len);
    copy[len] = '\0';
    pthread_mutex_lock(&m->lock);
    char *old = m->text;
    m->text = copy;
    m->len = len;
    pthread_mutex_unlock(&m->lock);
    free(old);
    return 0;
}

void rd_metrics_server_counts(struct rd_metrics_server *m, struct rd_metrics_sample *s)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    s->http_requests = m->requests;
    s->http_cut_off = m->cut_off;
    s->http_errors = m->errors;
    s->http_refused = m->refused;
    pthread_mutex_unlock(&m->lock);
}

void rd_metrics_stop(struct rd_metrics_server *m)
{
    if (!m) return;
    char byte = 1;
    while (write(m->wake[1], &byte, 1) < 0 && errno == EINTR) {
    }
    pthread_join(m->thread, NULL); /* it wakes on the pipe at once */
    for (size_t i = 0; i < RD_METRICS_MAX_CONNS; i++)
        if (m->conns[i]) drop(m, i);
    close(m->listen_fd);
    close(m->wake[0]);
    close(m->wake[1]);
    pthread_mutex_destroy(&m->lock);
    free(m->text);
    free(m);
}
