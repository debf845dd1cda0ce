/*
 * test_metrics.c — the Prometheus text of a known sample, line by line.
 *
 * The formatter is pure, so the text is checked here exactly where it matters (names,
 * labels, escaping, histogram buckets, the lengths snprintf-style callers rely on) and as a
 * whole by promtool against a real agent (tests/proc/test_prometheus.sh).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "metrics.h"

static struct rd_metrics_sample sample(void)
{
    struct rd_metrics_sample s = {.version = "1.2.3",
                                  .ready = true,
                                  .members = {3, 1, 2, 0},
                                  .ring_points = 1536,
                                  .ring_members = 3,
                                  .ring_version = 4,
                                  .ring_checksum = 0xab,
                                  .ring_rebuilds = 5,
                                  .ring_last_moved = 0.25,
                                  .swim = {.packets_in = 10,
                                           .packets_out = 11,
                                           .probes = 10, /* one still waits */
                                           .probes_acked = 7,
                                           .probes_failed = 2,
                                           .probes_refused = 1,
                                           .syncs_in = 7,
                                           .syncs_out = 9, /* one still waits */
                                           .syncs_done = 6,
                                           .syncs_failed = 1},
                                  .sync = {.timed_out_header = 3},
                                  .bytes_in = 1000,
                                  .bytes_out = 1100,
                                  .packets_refused = 8,
                                  .suspicions = 6,
                                  .health = 2,
                                  .storm = 5,
                                  .ncommands = 2,
                                  .command_names = {"OWNER", "unknown"},
                                  .command_counts = {40, 1},
                                  .connections = 3,
                                  .watchers = 1,
                                  .http_errors = 13,
                                  .http_refused = 14};
    s.packets_dropped.nokey = 12;
    return s;
}

static char *format(const struct rd_metrics_sample *s)
{
    size_t need = rd_metrics_format(s, NULL, 0);
    char *text = malloc(need + 1);
    assert_non_null(text);
    assert_int_equal(rd_metrics_format(s, text, need + 1), need);
    assert_int_equal(strlen(text), need);
    return text;
}

static void has_line(const char *text, const char *line)
{
    char want[256];
    snprintf(want, sizeof want, "\n%s\n", line);
    if (!strstr(text, want)) fail_msg("missing line: %s", line);
}

static void test_metrics_sample_lines(void **state)
{
    struct rd_metrics_sample s = sample();
    char *text = format(&s);
    assert_memory_equal(text, "# HELP ringd_build_info ", 24);
    has_line(text, "ringd_build_info{version=\"1.2.3\"} 1");
    has_line(text, "ringd_ready 1");
    has_line(text, "ringd_members{status=\"alive\"} 3");
    has_line(text, "ringd_members{status=\"suspect\"} 1");
    has_line(text, "ringd_members{status=\"dead\"} 2");
    has_line(text, "ringd_members{status=\"left\"} 0");
    has_line(text, "ringd_ring_info{checksum=\"00000000000000ab\"} 1");
    has_line(text, "ringd_ring_points 1536");
    has_line(text, "ringd_ring_rebuilds_total 5");
    has_line(text, "ringd_ring_last_moved_ratio 0.25");
    has_line(text, "ringd_gossip_bytes_total{direction=\"out\"} 1100");
    has_line(text, "ringd_gossip_packets_dropped_total{reason=\"nokey\"} 12");
    has_line(text, "ringd_probes_total{result=\"ok\"} 7");
    has_line(text, "ringd_probes_total{result=\"failed\"} 2");
    has_line(text, "ringd_probes_refused_total 1");
    has_line(text, "ringd_gossip_packets_refused_total 8");
    has_line(text, "ringd_suspicions_total 6");
    has_line(text, "ringd_syncs_total{direction=\"out\",result=\"failed\"} 1");
    has_line(text, "ringd_syncs_total{direction=\"out\",result=\"ok\"} 6");
    has_line(text, "ringd_syncs_total{direction=\"in\",result=\"ok\"} 7");
    has_line(text, "ringd_syncs_timed_out_total{phase=\"header\"} 3");
    has_line(text, "ringd_gossip_packets_total{direction=\"in\"} 10");
    has_line(text, "ringd_local_health 2");
    has_line(text, "ringd_storm_score 5");
    has_line(text, "ringd_queries_total{command=\"OWNER\"} 40");
    has_line(text, "ringd_queries_total{command=\"unknown\"} 1");
    has_line(text, "ringd_query_watchers 1");
    has_line(text, "ringd_metrics_requests_refused_total 13");
    has_line(text, "ringd_metrics_connections_refused_total 14");
    /* process_* only when /proc was read */
    assert_null(strstr(text, "process_"));
    free(text);
}

/* Every sample line's family has # HELP then # TYPE before it, once. */
static void test_metrics_every_family_has_help_and_type(void **state)
{
    struct rd_metrics_sample s = sample();
    rd_metrics_read_process(&s.process);
    char *text = format(&s);
    char typed[64][96];
    size_t ntyped = 0, samples = 0;
    char *save = NULL;
    char last_help[96] = "";
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[96];
        if (sscanf(line, "# HELP %95s", name) == 1) {
            snprintf(last_help, sizeof last_help, "%s", name);
            continue;
        }
        if (sscanf(line, "# TYPE %95s", name) == 1) {
            assert_string_equal(name, last_help);
            for (size_t i = 0; i < ntyped; i++)
                if (strcmp(typed[i], name) == 0) fail_msg("family twice: %s", name);
            assert_true(ntyped < 64);
            snprintf(typed[ntyped++], sizeof typed[0], "%s", name);
            continue;
        }
        size_t len = strcspn(line, "{ ");
        bool found = false;
        for (size_t i = 0; i < ntyped && !found; i++) {
            size_t n = strlen(typed[i]);
            found = strncmp(line, typed[i], n) == 0 &&
                    (len == n || (len > n && (strncmp(line + n, "_bucket", 7) == 0 ||
                                              strncmp(line + n, "_sum", 4) == 0 ||
                                              strncmp(line + n, "_count", 6) == 0)));
        }
        if (!found) fail_msg("sample without # TYPE: %s", line);
        samples++;
    }
    assert_true(samples > 50);
    free(text);
}

static void test_metrics_histogram_is_cumulative(void **state)
{
    struct rd_metrics_sample s = sample();
    rd_metrics_observe(&s.rebuild_seconds, 0.0003); /* le 0.0005 and up */
    rd_metrics_observe(&s.rebuild_seconds, 0.002);  /* le 0.0025 and up */
    rd_metrics_observe(&s.rebuild_seconds, 5.0);    /* +Inf only */
    char *text = format(&s);
    has_line(text, "ringd_ring_rebuild_duration_seconds_bucket{le=\"0.00025\"} 0");
    has_line(text, "ringd_ring_rebuild_duration_seconds_bucket{le=\"0.0005\"} 1");
    has_line(text, "ringd_ring_rebuild_duration_seconds_bucket{le=\"0.0025\"} 2");
    has_line(text, "ringd_ring_rebuild_duration_seconds_bucket{le=\"1\"} 2");
    has_line(text, "ringd_ring_rebuild_duration_seconds_bucket{le=\"+Inf\"} 3");
    has_line(text, "ringd_ring_rebuild_duration_seconds_count 3");
    has_line(text, "ringd_ring_rebuild_duration_seconds_sum 5.0023");
    free(text);
}

static void test_metrics_label_values_are_escaped(void **state)
{
    struct rd_metrics_sample s = sample();
    snprintf(s.version, sizeof s.version, "a\"b\\c\nd");
    char *text = format(&s);
    has_line(text, "ringd_build_info{version=\"a\\\"b\\\\c\\nd\"} 1");
    free(text);
}

/* A buffer too small gets a NUL-terminated prefix and the whole length, as snprintf. */
static void test_metrics_short_buffer_reports_the_length(void **state)
{
    struct rd_metrics_sample s = sample();
    char *whole = format(&s);
    char small[100];
    assert_int_equal(rd_metrics_format(&s, small, sizeof small), strlen(whole));
    assert_int_equal(strlen(small), sizeof small - 1);
    assert_memory_equal(small, whole, sizeof small - 1);
    free(whole);
}

static void test_metrics_process_reads_proc_self(void **state)
{
    struct rd_metrics_process p;
    rd_metrics_read_process(&p);
    assert_true(p.ok);
    assert_true(p.resident_bytes > 0 && p.virtual_bytes >= p.resident_bytes);
    assert_true(p.open_fds >= 3 && p.open_fds < p.max_fds);
    double now = (double)time(NULL);
    assert_true(p.start_time_seconds <= now + 1 && p.start_time_seconds > now - 3600);
    assert_true(p.cpu_seconds >= 0 && p.cpu_seconds < 3600);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_sample_lines),
        cmocka_unit_test(test_metrics_every_family_has_help_and_type),
        cmocka_unit_test(test_metrics_histogram_is_cumulative),
        cmocka_unit_test(test_metrics_label_values_are_escaped),
        cmocka_unit_test(test_metrics_short_buffer_reports_the_length),
        cmocka_unit_test(test_metrics_process_reads_proc_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
