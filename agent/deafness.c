/*
 * deafness.c — how long the agent's loop went without reading input, and when its tick was
 * due (see deafness.h).
 */
#include "deafness.h"

static void on_check(uv_check_t *c)
{
    struct rd_deafness *d = c->data;
    uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(c->loop);
    uint64_t wall = now - d->last_ns, waited = idle - d->idle_ns;
    uint64_t busy_ms = (wall > waited ? wall - waited : 0) / 1000000u;
    if (busy_ms > d->max_ms) d->max_ms = busy_ms;
    d->last_ns = now;
    d->idle_ns = idle;
}

int rd_deafness_start(struct rd_deafness *d, uv_loop_t *loop)
{
    int rc = uv_check_init(loop, &d->check);
    if (rc < 0) return rc;
    d->check.data = d;
    d->last_ns = uv_hrtime();
    d->idle_ns = uv_metrics_idle_time(loop);
    d->max_ms = 0;
    rc = uv_check_start(&d->check, on_check);
    uv_unref((uv_handle_t *)&d->check);
    return rc;
}

uint64_t rd_deafness_take(struct rd_deafness *d)
{
    uint64_t max = d->max_ms;
    d->max_ms = 0;
    return max;
}

uint64_t rd_tick_due(bool armed, uint64_t due_ms, uint64_t next_ms, uint64_t now_ms)
{
    if (armed && due_ms <= now_ms) return due_ms;
    return next_ms > now_ms ? next_ms : now_ms;
}
