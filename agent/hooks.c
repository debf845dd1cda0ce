/*
 * hooks.c — event handlers that never hold up the loop (see hooks.h).
 *
 * Its shape is one small state machine per --on-event entry, all on the agent's loop:
 *
 *   event ─► filter ─► queue (bounded: RD_HOOK_QUEUE_MAX events, RD_HOOK_QUEUE_BYTES)
 *                        │ nothing running
 *                        ▼
 *   spawn /bin/sh -c CMD (own process group, RINGD_* of the last event) ─► write the
 *   whole queue to its stdin (one uv_write; stdin closed once written) ─► timer
 *                        │
 *   exit ─► reap (log a failure, count) ─► close handles ─► queue not empty? spawn again
 *   timer ─► SIGKILL the process group ─► exit ─► ...
 *
 * Serf runs its handlers inline and waits for them, so a slow handler delays everything
 * behind it (serf#369). Here the loop never waits: a run is a child process with a
 * non-blocking pipe, and what a handler does not read stays in one buffer bounded by the
 * queue's bounds until the handler exits or is killed. Events coalesce instead of piling
 * up: everything that arrived during a run is the next run's input. Dropping the oldest
 * when the queue is full keeps the newest, which say how the cluster is now.
 * A run's process is left alone when the agent stops, so that a handler half way through
 * (say, rewriting a load balancer's pool) is not cut; its stdin is closed.
 */
#include "hooks.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "event.h"
#include "log.h"
#include "rd_err.h"

extern char **environ;

static const char *const event_names[RD_HOOK_NEVENTS] = {"member-join", "member-leave",
                                                         "member-failed", "member-update", "ring"};

const char *rd_hook_event_name(enum rd_hook_event e)
{
    return (unsigned)e < RD_HOOK_NEVENTS ? event_names[e] : "unknown";
}

int rd_hook_spec_parse(const char *spec, unsigned *mask, const char **cmd, char *err, size_t errlen)
{
    size_t flen = strspn(spec, "abcdefghijklmnopqrstuvwxyz-,");
    *mask = RD_HOOK_ALL;
    *cmd = spec;
    if (spec[0] == '=') {
        snprintf(err, errlen, "'%s': an empty filter (leave out '=' for every event)", spec);
        return RD_EINVAL;
    }
    if (flen > 0 && spec[flen] == '=') {
        *mask = 0;
        for (const char *p = spec; p < spec + flen;) {
            size_t n = strcspn(p, ",=");
            int found = -1;
            for (int e = 0; e < RD_HOOK_NEVENTS && found < 0; e++)
                if (strlen(event_names[e]) == n && strncmp(p, event_names[e], n) == 0) found = e;
            if (found < 0) {
                snprintf(err, errlen,
                         "'%.*s' is not an event (member-join, member-leave, member-failed, "
                         "member-update, ring)",
                         (int)n, p);
                return RD_EINVAL;
            }
            *mask |= 1u << found;
            p += n + (p[n] == ',');
        }
        *cmd = spec + flen + 1;
    }
    if (!(*cmd)[strspn(*cmd, " \t")]) {
        snprintf(err, errlen, "'%s' has no command", spec);
        return RD_EINVAL;
    }
    return 0;
}

int rd_hook_member_event(bool is_new, uint8_t old_status, uint8_t status)
{
    if (is_new) return status == RD_ALIVE || status == RD_SUSPECT ? RD_HOOK_MEMBER_JOIN : -1;
    if (status == old_status) return RD_HOOK_MEMBER_UPDATE;
    switch (status) {
    case RD_ALIVE:
        return old_status == RD_DEAD || old_status == RD_LEFT ? RD_HOOK_MEMBER_JOIN : -1;
    case RD_DEAD:
        return RD_HOOK_MEMBER_FAILED;
    case RD_LEFT:
        return RD_HOOK_MEMBER_LEAVE;
    default:
        return -1; /* a suspicion: it may yet be refuted */
    }
}

/* ---------------------------------------------------------------- the queue */

int rd_hook_queue_init(struct rd_hook_queue *q, size_t max_items, size_t max_bytes)
{
    *q = (struct rd_hook_queue){.cap = max_items, .max_bytes = max_bytes};
    q->items = calloc(max_items ? max_items : 1, sizeof *q->items);
    return q->items ? 0 : RD_ENOMEM;
}

static void drop_oldest(struct rd_hook_queue *q)
{
    struct rd_hook_item *old = &q->items[q->head];
    q->bytes -= old->len;
    free(old->line);
    old->line = NULL;
    q->head = (q->head + 1) % q->cap;
    q->len--;
}

void rd_hook_queue_free(struct rd_hook_queue *q)
{
    while (q->items && q->len)
        drop_oldest(q);
    free(q->items);
    q->items = NULL;
}

size_t rd_hook_queue_push(struct rd_hook_queue *q, struct rd_hook_item *it)
{
    if (it->len > q->max_bytes || q->cap == 0) {
        free(it->line);
        return 1;
    }
    size_t dropped = 0;
    while (q->len == q->cap || q->bytes + it->len > q->max_bytes) {
        drop_oldest(q);
        dropped++;
    }
    q->items[(q->head + q->len++) % q->cap] = *it;
    q->bytes += it->len;
    return dropped;
}

int rd_hook_queue_take(struct rd_hook_queue *q, struct rd_buf *batch, struct rd_hook_item *last)
{
    if (q->len == 0) return 0;
    if (rd_buf_reserve(batch, q->bytes) < 0) return RD_ENOMEM;
    size_t n = q->len;
    *last = q->items[(q->head + n - 1) % q->cap];
    last->line = NULL;
    last->len = 0;
    while (q->len) {
        struct rd_hook_item *it = &q->items[q->head];
        rd_buf_append(batch, it->line, it->len); /* reserved: cannot fail */
        drop_oldest(q);
    }
    return (int)n;
}

/* ---------------------------------------------------------------- running handlers */

struct hook {
    struct rd_hooks *hooks;
    size_t index; /* its place among --on-event, as logs name it */
    unsigned mask;
    const char *cmd; /* into spec */
    char spec[RD_HOOK_SPEC_MAX + 1];
    struct rd_hook_queue queue;
    uv_timer_t timer;
    uv_process_t proc;
    uv_pipe_t in;
    uv_write_t write;
    struct rd_buf batch; /* the run's stdin, until the pipe is closed */
    size_t batch_events;
    bool running; /* a run's handles (proc, in) are open or closing */
    bool killed;
    int open; /* of proc and in, handles not yet closed */
    uint64_t drops_logged_ms, drops_logged;
    uint64_t dropped;
};

struct rd_hooks {
    uv_loop_t *loop;
    uint64_t timeout_ms;
    struct rd_hook_stats stats;
    bool closing;
    int open; /* handles of all hooks not yet closed, once closing */
    size_t n;
    struct hook hooks[];
};

static void run(struct hook *k);

static void free_when_closed(struct rd_hooks *h)
{
    if (!h->closing || h->open > 0) return;
    for (size_t i = 0; i < h->n; i++) {
        rd_hook_queue_free(&h->hooks[i].queue);
        rd_buf_free(&h->hooks[i].batch);
    }
    free(h);
}

/* A run's handle closed: once both are, the next run may start. */
static void on_run_closed(uv_handle_t *handle)
{
    struct hook *k = handle->data;
    struct rd_hooks *h = k->hooks;
    if (--k->open > 0) return;
    k->running = false;
    rd_buf_free(&k->batch);
    if (h->closing) {
        h->open--;
        free_when_closed(h);
    } else if (k->queue.len) {
        run(k);
    }
}

static void close_run_handle(struct hook *k, uv_handle_t *handle)
{
    if (!uv_is_closing(handle)) uv_close(handle, on_run_closed);
}

static void log_drops(struct hook *k)
{
    uint64_t now = uv_now(k->hooks->loop);
    if (k->dropped == k->drops_logged ||
        (k->drops_logged_ms && now - k->drops_logged_ms < RD_HOOK_DROP_LOG_MS))
        return;
    rd_logf(RD_LOG_WARN, "event handler behind: events dropped", RD_FUINT("handler", k->index),
            RD_FSTR("command", k->cmd), RD_FUINT("dropped", k->dropped - k->drops_logged),
            RD_FUINT("queued", k->queue.len));
    k->drops_logged_ms = now;
    k->drops_logged = k->dropped;
}

static void on_handler_exit(uv_process_t *p, int64_t status, int signal)
{
    struct hook *k = p->data;
    struct rd_hooks *h = k->hooks;
    uv_timer_stop(&k->timer);
    if (k->killed) {
        /* counted and logged when it was killed */
    } else if (status != 0 || signal != 0) {
        h->stats.handlers_failed++;
        rd_logf(RD_LOG_WARN, "event handler failed", RD_FUINT("handler", k->index),
                RD_FSTR("command", k->cmd), RD_FINT("exit_code", status), RD_FINT("signal", signal),
                RD_FUINT("events", k->batch_events));
    } else {
        h->stats.events_handled += k->batch_events;
    }
    close_run_handle(k, (uv_handle_t *)&k->in); /* a pending write ends, cancelled */
    close_run_handle(k, (uv_handle_t *)&k->proc);
}

static void on_timeout(uv_timer_t *t)
{
    struct hook *k = t->data;
    struct rd_hooks *h = k->hooks;
    if (!k->running || k->killed) return;
    k->killed = true;
    h->stats.handlers_killed++;
    uv_kill(-k->proc.pid, SIGKILL); /* its own process group: whatever it started, too */
    rd_logf(RD_LOG_WARN, "event handler killed: past --event-timeout",
            RD_FUINT("handler", k->index), RD_FSTR("command", k->cmd),
            RD_FUINT("pid", (uint64_t)k->proc.pid), RD_FUINT("timeout_s", h->timeout_ms / 1000),
            RD_FUINT("events", k->batch_events));
}

/* stdin written, or the handler went away first: either way it gets EOF now. */
static void on_written(uv_write_t *w, int status)
{
    struct hook *k = w->data;
    if (status < 0 && status != UV_ECANCELED)
        rd_logf(RD_LOG_DEBUG, "event handler did not read all its events",
                RD_FUINT("handler", k->index), RD_FSTR("error", uv_strerror(status)));
    close_run_handle(k, (uv_handle_t *)&k->in);
}

/* The RINGD_* variables of the last event first, then the agent's environment without
 * any of those names. */
static char **build_env(const struct rd_hook_item *last, char vars[6][RD_HOOK_SPEC_MAX])
{
    static const char *const names[6] = {"RINGD_EVENT", "RINGD_MEMBER",        "RINGD_STATUS",
                                         "RINGD_ADDR",  "RINGD_RING_CHECKSUM", "RINGD_MOVED"};
    const char *values[6] = {last->event, last->member,   last->status,
                             last->addr,  last->checksum, last->moved};
    size_t nenv = 0;
    while (environ && environ[nenv])
        nenv++;
    char **env = malloc((nenv + 7) * sizeof *env);
    if (!env) return NULL;
    size_t n = 0;
    for (int i = 0; i < 6; i++) {
        if (!values[i][0]) continue;
        snprintf(vars[i], RD_HOOK_SPEC_MAX, "%s=%s", names[i], values[i]);
        env[n++] = vars[i];
    }
    for (size_t i = 0; i < nenv; i++) {
        bool ours = false;
        for (int j = 0; j < 6 && !ours; j++) {
            size_t len = strlen(names[j]);
            ours = strncmp(environ[i], names[j], len) == 0 && environ[i][len] == '=';
        }
        if (!ours) env[n++] = environ[i];
    }
    env[n] = NULL;
    return env;
}

/* Starts a run for everything queued. */
static void run(struct hook *k)
{
    struct rd_hooks *h = k->hooks;
    struct rd_hook_item last;
    rd_buf_init(&k->batch);
    int n = rd_hook_queue_take(&k->queue, &k->batch, &last);
    if (n <= 0) return; /* empty, or no memory: the events stay for the next event */
    k->batch_events = (size_t)n;
    k->killed = false;
    char vars[6][RD_HOOK_SPEC_MAX];
    char **env = build_env(&last, vars);
    char *args[] = {"/bin/sh", "-c", (char *)k->cmd, NULL};
    uv_stdio_container_t stdio[3] = {
        {.flags = UV_CREATE_PIPE | UV_READABLE_PIPE, .data.stream = (uv_stream_t *)&k->in},
        {.flags = UV_INHERIT_FD, .data.fd = 1},
        {.flags = UV_INHERIT_FD, .data.fd = 2},
    };
    uv_process_options_t opt = {.exit_cb = on_handler_exit,
                                .file = args[0],
                                .args = args,
                                .env = env,
                                .flags = UV_PROCESS_DETACHED, /* setsid: a group to kill */
                                .stdio_count = 3,
                                .stdio = stdio};
    int rc = UV_ENOMEM;
    if (env) {
        uv_pipe_init(h->loop, &k->in, 0);
        k->in.data = k->proc.data = k->write.data = k;
        k->running = true;
        k->open = 2;
        rc = uv_spawn(h->loop, &k->proc, &opt); /* on unix the handle is set up even if not */
        free(env);
    }
    if (rc < 0) {
        h->stats.handlers_failed++;
        h->stats.events_dropped += k->batch_events;
        rd_logf(RD_LOG_ERROR, "event handler did not start", RD_FUINT("handler", k->index),
                RD_FSTR("command", k->cmd), RD_FSTR("error", uv_strerror(rc)),
                RD_FUINT("events_dropped", k->batch_events));
        if (!env) {
            rd_buf_free(&k->batch);
            return;
        }
        close_run_handle(k, (uv_handle_t *)&k->in);
        close_run_handle(k, (uv_handle_t *)&k->proc);
        return;
    }
    uv_timer_start(&k->timer, on_timeout, h->timeout_ms, 0);
    uv_buf_t b = uv_buf_init(k->batch.data, (unsigned)k->batch.len);
    rc = uv_write(&k->write, (uv_stream_t *)&k->in, &b, 1, on_written);
    if (rc < 0) close_run_handle(k, (uv_handle_t *)&k->in);
}

/* ---------------------------------------------------------------- the interface */

int rd_hooks_start(uv_loop_t *loop, const char (*specs)[RD_HOOK_SPEC_MAX + 1], size_t n,
                   uint32_t timeout_s, struct rd_hooks **out, char *err, size_t errlen)
{
    *out = NULL;
    if (n > RD_HOOKS_MAX) {
        snprintf(err, errlen, "at most %d event handlers", RD_HOOKS_MAX);
        return RD_EINVAL;
    }
    struct rd_hooks *h = calloc(1, sizeof *h + n * sizeof h->hooks[0]);
    if (!h) return RD_ENOMEM;
    h->loop = loop;
    h->timeout_ms = (uint64_t)timeout_s * 1000u;
    h->n = n;
    for (size_t i = 0; i < n; i++) {
        struct hook *k = &h->hooks[i];
        k->hooks = h;
        k->index = i;
        snprintf(k->spec, sizeof k->spec, "%s", specs[i]);
        int rc = rd_hook_spec_parse(k->spec, &k->mask, &k->cmd, err, errlen);
        if (rc == 0) rc = rd_hook_queue_init(&k->queue, RD_HOOK_QUEUE_MAX, RD_HOOK_QUEUE_BYTES);
        if (rc < 0) {
            for (size_t j = 0; j <= i; j++)
                rd_hook_queue_free(&h->hooks[j].queue);
            free(h);
            if (rc == RD_ENOMEM) snprintf(err, errlen, "out of memory");
            return rc;
        }
    }
    for (size_t i = 0; i < n; i++) {
        uv_timer_init(loop, &h->hooks[i].timer);
        h->hooks[i].timer.data = &h->hooks[i];
    }
    *out = h;
    return 0;
}

/* What the RINGD_* variables say of an event, from its fields (event.h). */
static void describe(struct rd_hook_item *it, enum rd_hook_event e, const char *const *f, size_t n)
{
    snprintf(it->event, sizeof it->event, "%s", rd_hook_event_name(e));
    if (e == RD_HOOK_RING && n >= 5) {
        snprintf(it->checksum, sizeof it->checksum, "%s", f[2]);
        snprintf(it->moved, sizeof it->moved, "%s", f[4]);
    } else if (e != RD_HOOK_RING && n >= 4) {
        snprintf(it->member, sizeof it->member, "%s", f[1]);
        snprintf(it->status, sizeof it->status, "%s", f[2]);
        snprintf(it->addr, sizeof it->addr, "%s", f[3]);
    }
}

void rd_hooks_event(struct rd_hooks *h, enum rd_hook_event e, const char *const *fields, size_t n)
{
    if (!h || h->closing || !h->n) return;
    char ts[RD_EVENT_TS_LEN];
    rd_event_timestamp(ts);
    struct rd_buf line;
    rd_buf_init(&line);
    struct rd_hook_item it = {0};
    describe(&it, e, fields, n);
    bool formatted = rd_event_json(&line, ts, fields, n) == 0;
    for (size_t i = 0; i < h->n; i++) {
        struct hook *k = &h->hooks[i];
        if (!(k->mask & (1u << e))) continue;
        it.line = formatted ? malloc(line.len) : NULL;
        if (!it.line) {
            h->stats.events_dropped++;
            k->dropped++;
            log_drops(k);
            continue;
        }
        memcpy(it.line, line.data, line.len);
        it.len = line.len;
        size_t dropped = rd_hook_queue_push(&k->queue, &it);
        h->stats.events_dropped += dropped;
        k->dropped += dropped;
        if (dropped) log_drops(k);
        if (!k->running) run(k);
    }
    rd_buf_free(&line);
}

void rd_hooks_stats(const struct rd_hooks *h, struct rd_hook_stats *out)
{
    *out = h ? h->stats : (struct rd_hook_stats){0};
}

static void on_timer_closed(uv_handle_t *t)
{
    struct hook *k = t->data;
    k->hooks->open--;
    free_when_closed(k->hooks);
}

void rd_hooks_close(struct rd_hooks *h)
{
    if (!h) return;
    h->closing = true;
    h->open = 1; /* held until every handle below was asked to close */
    for (size_t i = 0; i < h->n; i++) {
        struct hook *k = &h->hooks[i];
        h->open++;
        uv_close((uv_handle_t *)&k->timer, on_timer_closed);
        if (k->running) { /* on_run_closed lets go of this one */
            h->open++;
            close_run_handle(k, (uv_handle_t *)&k->in);
            close_run_handle(k, (uv_handle_t *)&k->proc);
        }
    }
    h->open--;
    free_when_closed(h);
}
