/*
 * metrics.c — the Prometheus endpoint (see metrics.h).
 *
 * The formatter is a pure function of a sample, so its text is checked line by line in a
 * unit test and by promtool on a real agent's output.
 *
 * The HTTP side is libmicrohttpd, run by one thread of its own that never sees the agent:
 * the loop formats a sample on a timer and publishes the text under a mutex held for one
 * memcpy, and the thread copies it out under the same mutex for each scrape. So nothing a
 * scraper does (or fails to do) can delay gossip, and the loop never waits on a socket.
 * Driving MHD from the libuv loop instead (external select with uv_poll) would share one
 * thread with gossip, and the mutex costs nothing at one scrape a second. The thread
 * drives MHD itself (MHD_run_wait, epoll) rather than letting MHD own a thread, because
 * MHD's connection timeout is an idle timeout, and a client trickling one byte a second
 * is never idle: between two runs this thread shuts down every connection older than
 * RD_METRICS_DEADLINE_MS, which it may do safely because MHD's notify callbacks, the only
 * writers of that list, run on this same thread. The connection and per-IP limits and
 * the per-connection memory bound (which caps a request's size) are MHD's own.
 */
#include "metrics.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#ifdef RD_METRICS_HTTP
#include <microhttpd.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

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

/* The first line of `path` that starts with `key`, its number (kB in status files). */
static bool proc_field(const char *path, const char *key, uint64_t *out)
{
    FILE *f = fopen(path, "r");
    if (!f) return false;
    char line[256];
    size_t klen = strlen(key);
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0) found = sscanf(line + klen, " %" SCNu64, out) == 1;
    fclose(f);
    return found;
}

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
    uint64_t btime;
    if (!proc_field("/proc/stat", "btime", &btime)) return;
    out->cpu_seconds = (double)(utime + stime) / (double)ticks;
    out->virtual_bytes = vsize;
    out->resident_bytes = rss > 0 ? (uint64_t)rss * (uint64_t)page : 0;
    out->start_time_seconds = (double)btime + (double)start / (double)ticks;
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
    two(&o, "ringd_probes_total", "Direct probes sent, by result.", "result=\"ok\"",
        w->probes >= w->probes_failed ? w->probes - w->probes_failed : 0, "result=\"failed\"",
        w->probes_failed);
    one(&o, "ringd_indirect_probes_total", "counter", "Indirect probes asked of other members.",
        w->indirect_probes);
    one(&o, "ringd_suspicions_total", "counter", "Members this agent saw turn suspect.",
        s->suspicions);
    one(&o, "ringd_refutes_total", "counter", "Times this agent refuted a suspicion of itself.",
        w->refutes);
    family(&o, "ringd_syncs_total", "counter", "Full-state syncs, by direction and result.");
    emit(&o,
         "ringd_syncs_total{direction=\"in\",result=\"ok\"} %" PRIu64
         "\nringd_syncs_total{direction=\"out\",result=\"ok\"} %" PRIu64
         "\nringd_syncs_total{direction=\"out\",result=\"failed\"} %" PRIu64 "\n",
         w->syncs_in, w->syncs_out, w->syncs_failed);
    const struct rd_sync_stats *y = &s->sync;
    two(&o, "ringd_syncs_refused_total", "Incoming syncs refused at accept, by reason.",
        "reason=\"source\"", y->refused_source, "reason=\"full\"", y->refused_full);
    two(&o, "ringd_syncs_timed_out_total", "Incoming syncs cut off, by phase.", "phase=\"header\"",
        y->timed_out_header, "phase=\"frame\"", y->timed_out_frame);
    one(&o, "ringd_syncs_malformed_total", "counter", "Sync frames dropped undecoded.",
        y->malformed);
    one(&o, "ringd_syncs_oversize_total", "counter",
        "Sync frames refused for the length they announced.", y->oversize);
    drops(&o, "ringd_syncs_dropped_total", "Sync frames refused by the encryption rule, by reason.",
          &s->syncs_dropped);
    one(&o, "ringd_local_health", "gauge",
        "Lifeguard local health score: 0 is healthy, timeouts stretch by score+1.", s->health);
    one(&o, "ringd_events_dropped_total", "counter",
        "Membership events lost because the queue was full.", w->events_dropped);
    family(&o, "ringd_queries_total", "counter", "Query socket commands, by command.");
    for (size_t i = 0; i < s->ncommands; i++) {
        emit(&o, "ringd_queries_total{command=\"");
        label_value(&o, s->command_names[i]);
        emit(&o, "\"} %" PRIu64 "\n", s->command_counts[i]);
    }
    one(&o, "ringd_query_connections", "gauge", "Query socket connections open.", s->connections);
    one(&o, "ringd_query_watchers", "gauge", "Query socket connections that sent WATCH.",
        s->watchers);
    one(&o, "ringd_query_connections_rejected_total", "counter",
        "Query socket connections refused at the connection limit.", s->connections_rejected);
    one(&o, "ringd_query_connections_cut_off_total", "counter",
        "Query socket clients cut off for not reading their replies.", s->connections_cut_off);
    one(&o, "ringd_metrics_requests_total", "counter", "Requests the metrics endpoint answered.",
        s->http_requests);
    one(&o, "ringd_metrics_connections_cut_off_total", "counter",
        "Metrics endpoint connections cut at their deadline.", s->http_cut_off);
    process(&o, &s->process);
    return o.len;
}

/* ------------------------------------------------------------ the HTTP server */
#ifdef RD_METRICS_HTTP

/* One open connection, on the server thread's list (its notify callbacks keep it). */
struct hconn {
    struct hconn *prev, *next;
    int fd;
    uint64_t opened_ms;
    bool cut;
};

struct rd_metrics_server {
    struct MHD_Daemon *mhd;
    pthread_t thread;
    pthread_mutex_t lock; /* guards text, len and the counts below */
    char *text;
    size_t len;
    uint64_t requests, cut_off;
    volatile int stop;   /* set by rd_metrics_stop, read by the thread under `lock` */
    struct hconn *conns; /* the thread's own: no lock */
};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body,
                             enum MHD_ResponseMemoryMode mode, size_t len, const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, mode);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, "Allow", "GET");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **req)
{
    struct rd_metrics_server *m = cls;
    static const char text_type[] = "text/plain; charset=utf-8";
    if (*upload_size) {
        *upload_size = 0; /* a body is read and ignored: only GET is served */
        return MHD_YES;
    }
    if (strcmp(url, "/metrics") != 0) {
        static const char body[] = "404 not found: only /metrics is served\n";
        return reply(c, MHD_HTTP_NOT_FOUND, body, MHD_RESPMEM_PERSISTENT, sizeof body - 1,
                     text_type);
    }
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0) {
        static const char body[] = "405 method not allowed: GET /metrics\n";
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, body, MHD_RESPMEM_PERSISTENT, sizeof body - 1,
                     text_type);
    }
    pthread_mutex_lock(&m->lock);
    m->requests++;
    enum MHD_Result rc = reply(c, MHD_HTTP_OK, m->text ? m->text : "", MHD_RESPMEM_MUST_COPY,
                               m->text ? m->len : 0, "text/plain; version=0.0.4; charset=utf-8");
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct rd_metrics_server *m = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct hconn *h = calloc(1, sizeof *h);
        if (!h || !ci) {
            free(h);
            *socket_context = NULL;
            return;
        }
        h->fd = ci->connect_fd;
        h->opened_ms = mono_ms();
        h->next = m->conns;
        if (m->conns) m->conns->prev = h;
        m->conns = h;
        *socket_context = h;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct hconn *h = *socket_context;
        if (h->prev)
            h->prev->next = h->next;
        else
            m->conns = h->next;
        if (h->next) h->next->prev = h->prev;
        free(h);
        *socket_context = NULL;
    }
}

/* Shuts down (not closes: MHD owns the descriptor) every connection past its deadline;
 * MHD sees the end of the stream at its next run and closes it. */
static void cut_late(struct rd_metrics_server *m)
{
    uint64_t now = mono_ms();
    for (struct hconn *h = m->conns; h; h = h->next) {
        if (h->cut || now - h->opened_ms < RD_METRICS_DEADLINE_MS) continue;
        h->cut = true;
        shutdown(h->fd, SHUT_RDWR);
        pthread_mutex_lock(&m->lock);
        m->cut_off++;
        pthread_mutex_unlock(&m->lock);
    }
}

static void *serve(void *arg)
{
    struct rd_metrics_server *m = arg;
    for (;;) {
        pthread_mutex_lock(&m->lock);
        int stop = m->stop;
        pthread_mutex_unlock(&m->lock);
        if (stop) break;
        MHD_run_wait(m->mhd, RD_METRICS_WAKE_MS);
        cut_late(m);
    }
    return NULL;
}

int rd_metrics_start(const struct rd_addr *addr, struct rd_metrics_server **out, char *err,
                     size_t errlen)
{
    struct rd_metrics_server *m = calloc(1, sizeof *m);
    if (!m) return RD_ENOMEM;
    pthread_mutex_init(&m->lock, NULL);
    struct sockaddr_storage ss;
    rd_addr_to_sockaddr(addr, &ss);
    unsigned flags = MHD_USE_EPOLL | MHD_USE_SUPPRESS_DATE_NO_CLOCK;
    if (ss.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
    m->mhd = MHD_start_daemon(flags, addr->port, NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR,
                              (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
                              (unsigned)RD_METRICS_MAX_CONNS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
                              (unsigned)RD_METRICS_MAX_PER_IP, MHD_OPTION_CONNECTION_TIMEOUT,
                              (unsigned)RD_METRICS_IDLE_TIMEOUT_S,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)RD_METRICS_REQUEST_MAX,
                              MHD_OPTION_NOTIFY_CONNECTION, on_connection, m, MHD_OPTION_END);
    char where[RD_ADDR_STRLEN];
    if (!m->mhd) {
        snprintf(err, errlen, "--metrics-addr %s: cannot listen: %s",
                 rd_addr_format(addr, where, sizeof where), strerror(errno));
        pthread_mutex_destroy(&m->lock);
        free(m);
        return RD_EIO;
    }
    int rc = pthread_create(&m->thread, NULL, serve, m);
    if (rc != 0) {
        snprintf(err, errlen, "metrics thread: %s", strerror(rc));
        MHD_stop_daemon(m->mhd);
        pthread_mutex_destroy(&m->lock);
        free(m);
        return RD_EIO;
    }
    *out = m;
    return 0;
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
    pthread_mutex_unlock(&m->lock);
}

void rd_metrics_stop(struct rd_metrics_server *m)
{
    if (!m) return;
    pthread_mutex_lock(&m->lock);
    m->stop = 1;
    pthread_mutex_unlock(&m->lock);
    pthread_join(m->thread, NULL); /* it wakes within RD_METRICS_WAKE_MS */
    MHD_stop_daemon(m->mhd);       /* closes the rest; their notify callbacks free the list */
    pthread_mutex_destroy(&m->lock);
    free(m->text);
    free(m);
}

#else /* built without libmicrohttpd (a static ringd: see CMakeLists.txt) */

int rd_metrics_start(const struct rd_addr *addr, struct rd_metrics_server **out, char *err,
                     size_t errlen)
{
    snprintf(err, errlen,
             "--metrics-addr: this ringd was built without the HTTP endpoint (a static build); "
             "use `ringd metrics` with node_exporter's textfile collector, or a build with "
             "-DRINGD_STATIC=OFF");
    return RD_EINVAL;
}

int rd_metrics_publish(struct rd_metrics_server *m, const char *text, size_t len)
{
    return RD_EINVAL;
}

void rd_metrics_server_counts(struct rd_metrics_server *m, struct rd_metrics_sample *s) {}

void rd_metrics_stop(struct rd_metrics_server *m) {}

#endif
