/*
 * stall.c — where the loop's time went while it was late (see stall.h).
 */
#include "stall.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* Reads one decimal field at *p, then the spaces after it. */
static bool take_number(const char **p, const char *end, uint64_t *out)
{
    const char *s = *p;
    uint64_t v = 0;
    if (s == end || *s < '0' || *s > '9') return false;
    for (; s < end && *s >= '0' && *s <= '9'; s++) {
        uint64_t digit = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - digit) / 10) return false;
        v = v * 10 + digit;
    }
    while (s < end && *s == ' ')
        s++;
    *p = s;
    *out = v;
    return true;
}

bool rd_sched_times_parse(const char *text, size_t len, struct rd_sched_times *out)
{
    const char *p = text, *end = text + len;
    uint64_t on_cpu, runnable, slices;
    if (!take_number(&p, end, &on_cpu) || !take_number(&p, end, &runnable) ||
        !take_number(&p, end, &slices))
        return false;
    if (p < end && *p == '\n') p++;
    if (p != end) return false;
    *out = (struct rd_sched_times){on_cpu, runnable};
    return true;
}

static uint64_t ms_between(uint64_t from, uint64_t to)
{
    return to > from ? (to - from) / 1000000u : 0;
}

void rd_stall_between(const struct rd_stall_point *a, const struct rd_stall_point *b,
                      struct rd_stall *out)
{
    *out = (struct rd_stall){
        .window_ms = ms_between(a->at_ns, b->at_ns),
        .on_cpu_ms = ms_between(a->loop.on_cpu_ns, b->loop.on_cpu_ns),
        .runnable_ms = ms_between(a->loop.runnable_ns, b->loop.runnable_ns),
        .polling_ms = ms_between(a->polling_ns, b->polling_ns),
        .builder_known = a->builder_known && b->builder_known,
    };
    uint64_t accounted = out->on_cpu_ms + out->runnable_ms + out->polling_ms;
    out->blocked_ms = out->window_ms > accounted ? out->window_ms - accounted : 0;
    if (out->builder_known) {
        out->builder_on_cpu_ms = ms_between(a->builder.on_cpu_ns, b->builder.on_cpu_ns);
        out->builder_runnable_ms = ms_between(a->builder.runnable_ns, b->builder.runnable_ns);
    }
}

/* Reads the file at fd from its start; false when it cannot. */
static bool read_times(int fd, struct rd_sched_times *out)
{
    char buf[96];
    ssize_t n;
    do
        n = pread(fd, buf, sizeof buf, 0);
    while (n < 0 && errno == EINTR);
    return n > 0 && (size_t)n < sizeof buf && rd_sched_times_parse(buf, (size_t)n, out);
}

void rd_stall_meter_open(struct rd_stall_meter *m)
{
    *m = (struct rd_stall_meter){.loop_fd = -1, .builder_fd = -1};
    m->loop_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
}

void rd_stall_meter_watch(struct rd_stall_meter *m, pid_t tid)
{
    if (m->builder_fd >= 0) close(m->builder_fd);
    m->builder_fd = -1;
    m->last.builder_known = false;
    if (tid == 0) return;
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/schedstat", (int)tid);
    m->builder_fd = open(path, O_RDONLY | O_CLOEXEC);
}

bool rd_stall_meter_due(const struct rd_stall_meter *m, uint64_t now_ns, uint64_t late_ms)
{
    if (late_ms >= RD_STALL_LOG_MS || !m->have || now_ns < m->last.at_ns) return true;
    return now_ns - m->last.at_ns >= (uint64_t)RD_STALL_POINT_EVERY_MS * 1000000u;
}

bool rd_stall_meter_sample(struct rd_stall_meter *m, uint64_t now_ns, uint64_t polling_ns,
                           struct rd_stall *since)
{
    struct rd_stall_point p = {.at_ns = now_ns, .polling_ns = polling_ns};
    if (m->loop_fd < 0 || !read_times(m->loop_fd, &p.loop)) {
        m->have = false;
        return false;
    }
    p.builder_known = m->builder_fd >= 0 && read_times(m->builder_fd, &p.builder);
    bool had = m->have;
    if (had) rd_stall_between(&m->last, &p, since);
    m->last = p;
    m->have = true;
    return had;
}

void rd_stall_meter_close(struct rd_stall_meter *m)
{
    if (m->loop_fd >= 0) close(m->loop_fd);
    if (m->builder_fd >= 0) close(m->builder_fd);
    m->loop_fd = m->builder_fd = -1;
    m->have = false;
}
