/*
 * test_hooks.c — the pure parts of the event handlers: the --on-event syntax, which member
 * changes are which events, the bounded queue that coalesces a handler's events, and the
 * JSON lines (event.h) both handlers and `ringd watch --json` are given.
 *
 * One test runs handlers on a real loop, to show that a handler that never reads does not
 * stall it; the rest of processes, pipes and timeouts is tests/proc/test_hooks.sh's.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <inttypes.h>
#include <uv.h>

#include "event.h"
#include "hooks.h"
#include "rd_err.h"

#define BIT(e) (1u << (e))

static void test_spec_parse(void **state)
{
    static const struct {
        const char *spec;
        int rc;
        unsigned mask;
        const char *cmd;
    } cases[] = {
        {"/usr/bin/handler", 0, RD_HOOK_ALL, "/usr/bin/handler"},
        {"member-join=/bin/h", 0, BIT(RD_HOOK_MEMBER_JOIN), "/bin/h"},
        {"member-leave,member-failed=h --x=1", 0,
         BIT(RD_HOOK_MEMBER_LEAVE) | BIT(RD_HOOK_MEMBER_FAILED), "h --x=1"},
        {"ring,member-update=h", 0, BIT(RD_HOOK_RING) | BIT(RD_HOOK_MEMBER_UPDATE), "h"},
        {"member-join,member-leave,member-failed,member-update,ring=h", 0, RD_HOOK_ALL, "h"},
        {"FOO=1 /bin/h", 0, RD_HOOK_ALL, "FOO=1 /bin/h"}, /* not a filter: a command */
        {"echo a=b", 0, RD_HOOK_ALL, "echo a=b"},         /* a space before '=' */
        {"member-joinn=h", RD_EINVAL, 0, NULL},           /* a typo is refused */
        {"env=h", RD_EINVAL, 0, NULL},                    /* looks like a filter */
        {"member-join,,ring=h", RD_EINVAL, 0, NULL},      /* an empty name */
        {"=h", RD_EINVAL, 0, NULL},                       /* an empty filter */
        {"ring=", RD_EINVAL, 0, NULL},                    /* no command */
        {"ring=  ", RD_EINVAL, 0, NULL},                  /* blank command */
        {"", RD_EINVAL, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned mask = 0;
        const char *cmd = NULL;
        char err[256] = "";
        int rc = rd_hook_spec_parse(cases[i].spec, &mask, &cmd, err, sizeof err);
        if (rc != cases[i].rc) fail_msg("'%s': rc %d, want %d", cases[i].spec, rc, cases[i].rc);
        if (rc < 0) {
            assert_true(err[0] != '\0');
            continue;
        }
        if (mask != cases[i].mask) fail_msg("'%s': mask %#x", cases[i].spec, mask);
        assert_string_equal(cmd, cases[i].cmd);
    }
}

static void test_member_event(void **state)
{
    static const struct {
        bool is_new;
        uint8_t old, now;
        int want;
    } cases[] = {
        {true, RD_ALIVE, RD_ALIVE, RD_HOOK_MEMBER_JOIN},
        {true, RD_ALIVE, RD_SUSPECT, RD_HOOK_MEMBER_JOIN}, /* first heard as suspect: in the ring */
        {false, RD_DEAD, RD_ALIVE, RD_HOOK_MEMBER_JOIN},
        {false, RD_LEFT, RD_ALIVE, RD_HOOK_MEMBER_JOIN},
        {false, RD_SUSPECT, RD_ALIVE, -1}, /* refuted: it never went */
        {false, RD_ALIVE, RD_SUSPECT, -1},
        {false, RD_ALIVE, RD_DEAD, RD_HOOK_MEMBER_FAILED},
        {false, RD_SUSPECT, RD_DEAD, RD_HOOK_MEMBER_FAILED},
        {false, RD_ALIVE, RD_LEFT, RD_HOOK_MEMBER_LEAVE},
        {false, RD_DEAD, RD_LEFT, RD_HOOK_MEMBER_LEAVE},
        {false, RD_ALIVE, RD_ALIVE, RD_HOOK_MEMBER_UPDATE},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int got = rd_hook_member_event(cases[i].is_new, cases[i].old, cases[i].now);
        if (got != cases[i].want) fail_msg("case %zu: %d, want %d", i, got, cases[i].want);
    }
    assert_string_equal(rd_hook_event_name(RD_HOOK_MEMBER_FAILED), "member-failed");
    assert_string_equal(rd_hook_event_name(RD_HOOK_RING), "ring");
}

/* Queues an event whose line is "<n>\n" and whose member is "m<n>". */
static size_t push(struct rd_hook_queue *q, int n)
{
    struct rd_hook_item it = {0};
    char text[32];
    it.len = (size_t)snprintf(text, sizeof text, "%d\n", n);
    it.line = malloc(it.len);
    memcpy(it.line, text, it.len);
    snprintf(it.member, sizeof it.member, "m%d", n);
    snprintf(it.event, sizeof it.event, "member-join");
    return rd_hook_queue_push(q, &it);
}

static void test_queue_coalesces(void **state)
{
    struct rd_hook_queue q;
    assert_int_equal(rd_hook_queue_init(&q, 4, 1000), 0);
    struct rd_buf batch;
    rd_buf_init(&batch);
    struct rd_hook_item last = {0};
    assert_int_equal(rd_hook_queue_take(&q, &batch, &last), 0); /* nothing queued */
    for (int i = 1; i <= 3; i++)
        assert_int_equal(push(&q, i), 0);
    /* the three events that came during a run are the next run's input, in order */
    assert_int_equal(rd_hook_queue_take(&q, &batch, &last), 3);
    assert_int_equal(batch.len, 6);
    assert_memory_equal(batch.data, "1\n2\n3\n", 6);
    assert_string_equal(last.member, "m3"); /* the variables are the last event's */
    assert_null(last.line);
    assert_int_equal(q.len, 0);
    assert_int_equal(q.bytes, 0);
    rd_buf_free(&batch);
    /* full by count: the oldest go, and are counted */
    size_t dropped = 0;
    for (int i = 1; i <= 7; i++)
        dropped += push(&q, i);
    assert_int_equal(dropped, 3);
    assert_int_equal(rd_hook_queue_take(&q, &batch, &last), 4);
    assert_memory_equal(batch.data, "4\n5\n6\n7\n", 8);
    assert_string_equal(last.member, "m7");
    rd_buf_free(&batch);
    rd_hook_queue_free(&q);
}

static void test_queue_bytes(void **state)
{
    struct rd_hook_queue q;
    assert_int_equal(rd_hook_queue_init(&q, 100, 9), 0); /* 9 bytes: "10\n" x 3 */
    size_t dropped = 0;
    for (int i = 10; i < 15; i++)
        dropped += push(&q, i);
    assert_int_equal(dropped, 2);
    assert_int_equal(q.bytes, 9);
    /* a line larger than the whole queue is dropped itself, the queue untouched */
    struct rd_hook_item big = {.len = 10, .line = malloc(10)};
    assert_int_equal(rd_hook_queue_push(&q, &big), 1);
    struct rd_buf batch;
    rd_buf_init(&batch);
    struct rd_hook_item last;
    assert_int_equal(rd_hook_queue_take(&q, &batch, &last), 3);
    assert_memory_equal(batch.data, "12\n13\n14\n", 9);
    rd_buf_free(&batch);
    /* a queue freed with events in it frees their lines (ASan checks) */
    push(&q, 1);
    push(&q, 2);
    rd_hook_queue_free(&q);
}

static void test_queue_default_bound(void **state)
{
    struct rd_hook_queue q;
    assert_int_equal(rd_hook_queue_init(&q, RD_HOOK_QUEUE_MAX, RD_HOOK_QUEUE_BYTES), 0);
    size_t dropped = 0;
    for (int i = 0; i < RD_HOOK_QUEUE_MAX + 100; i++)
        dropped += push(&q, i);
    assert_int_equal(dropped, 100);
    assert_int_equal(q.len, RD_HOOK_QUEUE_MAX);
    rd_hook_queue_free(&q);
}

/* The JSON lines, byte for byte: what `ringd watch --json` printed before they were shared. */
static void test_event_json(void **state)
{
    static const struct {
        const char *fields[13];
        size_t n;
        const char *want;
    } cases[] = {
        {{"member", "b", "alive", "127.0.0.1:7946", "17"},
         5,
         "{\"ts\":\"T\",\"type\":\"member\",\"member\":\"b\",\"status\":\"alive\","
         "\"addr\":\"127.0.0.1:7946\",\"incarnation\":17}\n"},
        {{"ring", "2", "00ab", "1024", "0.482873", "a", "b", "0.482873", "", "a", "0.5"},
         11,
         "{\"ts\":\"T\",\"type\":\"ring\",\"version\":2,\"checksum\":\"00ab\",\"points\":1024,"
         "\"moved\":0.482873,\"moves\":[{\"from\":\"a\",\"to\":\"b\",\"fraction\":0.482873},"
         "{\"from\":\"\",\"to\":\"a\",\"fraction\":0.5}]}\n"},
        {{"ring", "1", "ff", "512", "-1"},
         5,
         "{\"ts\":\"T\",\"type\":\"ring\",\"version\":1,\"checksum\":\"ff\",\"points\":512,"
         "\"moved\":-1,\"moves\":[]}\n"},
        /* numbers that are not ours are strings; text is escaped */
        {{"member", "q\"\\\n\x01", "alive", "x", "012"},
         5,
         "{\"ts\":\"T\",\"type\":\"member\",\"member\":\"q\\\"\\\\\\n\\u0001\",\"status\":"
         "\"alive\",\"addr\":\"x\",\"incarnation\":\"012\"}\n"},
        {{"state", "4", "00ab", "1024", "a", "alive", "127.0.0.1:1", "3", "b", "left", "-", "9"},
         12,
         "{\"ts\":\"T\",\"type\":\"state\",\"version\":4,\"checksum\":\"00ab\",\"points\":1024,"
         "\"members\":[{\"member\":\"a\",\"status\":\"alive\",\"addr\":\"127.0.0.1:1\","
         "\"incarnation\":3},{\"member\":\"b\",\"status\":\"left\",\"addr\":\"-\",\"incarnation\":"
         "9}]}\n"},
        {{"state", "4", "00ab", "1024"},
         4,
         "{\"ts\":\"T\",\"type\":\"state\",\"version\":4,\"checksum\":\"00ab\",\"points\":1024,"
         "\"members\":[]}\n"},
        {{"news", "a", "1"}, 3, "{\"ts\":\"T\",\"type\":\"news\",\"fields\":[\"a\",\"1\"]}\n"},
        {{"member", "short"}, 2, "{\"ts\":\"T\",\"type\":\"member\",\"fields\":[\"short\"]}\n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct rd_buf b;
        rd_buf_init(&b);
        assert_int_equal(rd_event_json(&b, "T", cases[i].fields, cases[i].n), 0);
        assert_int_equal(rd_buf_append(&b, "", 1), 0);
        assert_string_equal(b.data, cases[i].want);
        /* and back: rd_event_fields gives the fields and ts again, whatever the type */
        struct rd_buf store;
        rd_buf_init(&store);
        const char *f[RD_EVENT_FIELDS_MAX];
        size_t n = 99;
        char ts[RD_EVENT_TS_LEN];
        assert_int_equal(rd_event_fields(b.data, b.len - 1, ts, &store, f, &n), 0);
        assert_string_equal(ts, "T");
        assert_int_equal(n, cases[i].n);
        for (size_t k = 0; k < n; k++)
            assert_string_equal(f[k], cases[i].fields[k]);
        rd_buf_free(&store);
        rd_buf_free(&b);
    }
    /* what is not one of its objects */
    static const char *const bad[] = {"",
                                      "[1]",
                                      "{\"ts\":",
                                      "{\"ts\":\"x}",
                                      "{\"a\":1}}",
                                      "{\"a\":\"\\u00zz\"}",
                                      "{\"a\":\"\\q\"}",
                                      "{}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct rd_buf store;
        rd_buf_init(&store);
        const char *f[RD_EVENT_FIELDS_MAX];
        size_t n;
        char ts[RD_EVENT_TS_LEN];
        int rc = rd_event_fields(bad[i], strlen(bad[i]), ts, &store, f, &n);
        if (rc != RD_EPROTO) fail_msg("'%s' gave %d", bad[i], rc);
        rd_buf_free(&store);
    }
    char ts[RD_EVENT_TS_LEN];
    rd_event_timestamp(ts);
    assert_int_equal(strlen(ts), 20);
    assert_int_equal(ts[19], 'Z');
}

/* ---------------------------------------------------------------- a real loop */

struct watch {
    uint64_t last_ms, max_gap_ms;
    uv_timer_t tick, stop;
};

static void on_tick(uv_timer_t *t)
{
    struct watch *w = t->data;
    uint64_t now = uv_now(t->loop);
    if (w->last_ms && now - w->last_ms > w->max_gap_ms) w->max_gap_ms = now - w->last_ms;
    w->last_ms = now;
}

static void on_stop(uv_timer_t *t)
{
    uv_stop(t->loop);
}

/*
 * A handler that never reads its stdin and never ends, given more than any kernel socket
 * buffer holds (about 1 MiB of events): the loop must keep turning every 10 ms while the
 * handler sits on it, the queue must stay bounded (the excess counted as dropped), and each
 * run must be killed at the timeout (1 s). A blocking write would stall the loop until the
 * handler ends (10 s).
 */
static void test_hooks_never_block(void **state)
{
    signal(SIGPIPE, SIG_IGN); /* as the agent does: a handler gone is an error, not a signal */
    uv_loop_t loop;
    assert_int_equal(uv_loop_init(&loop), 0);
    static const char specs[1][RD_HOOK_SPEC_MAX + 1] = {"exec sleep 10"};
    struct rd_hooks *h;
    char err[256];
    assert_int_equal(rd_hooks_start(&loop, specs, 1, 1, &h, err, sizeof err), 0);
    static char big[1000];
    memset(big, 'x', sizeof big - 1);
    const char *fields[] = {"news", big};
    uint64_t t0 = uv_hrtime();
    for (int i = 0; i < 1200; i++) /* the first starts a run; the rest queue behind it */
        rd_hooks_event(h, RD_HOOK_RING, fields, 2);
    uint64_t queued_ms = (uv_hrtime() - t0) / 1000000u;
    struct watch w = {0};
    uv_timer_init(&loop, &w.tick);
    uv_timer_init(&loop, &w.stop);
    w.tick.data = &w;
    uv_timer_start(&w.tick, on_tick, 10, 10);
    uv_timer_start(&w.stop, on_stop, 2500, 0); /* run 1 killed at 1 s, run 2 at 2 s */
    uv_run(&loop, UV_RUN_DEFAULT);
    struct rd_hook_stats st;
    rd_hooks_stats(h, &st);
    print_message("queued in %" PRIu64 " ms; longest loop gap %" PRIu64 " ms; dropped %" PRIu64
                  ", killed %" PRIu64 "\n",
                  queued_ms, w.max_gap_ms, st.events_dropped, st.handlers_killed);
    assert_true(queued_ms < 1000);
    assert_true(w.max_gap_ms < 500);
    assert_int_equal(st.handlers_killed, 2);
    /* 1199 events of about 1 KiB behind the first: the 1 MiB bound keeps fewer than 1024 */
    assert_true(st.events_dropped > 1199 - RD_HOOK_QUEUE_MAX);
    assert_int_equal(st.events_handled, 0);
    rd_hooks_close(h);
    uv_close((uv_handle_t *)&w.tick, NULL);
    uv_close((uv_handle_t *)&w.stop, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_parse),          cmocka_unit_test(test_member_event),
        cmocka_unit_test(test_queue_coalesces),     cmocka_unit_test(test_queue_bytes),
        cmocka_unit_test(test_queue_default_bound), cmocka_unit_test(test_event_json),
        cmocka_unit_test(test_hooks_never_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
