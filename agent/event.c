/*
 * event.c — the JSON lines of WATCH events (see event.h).
 *
 * Every helper appends to an rd_buf and reports RD_ENOMEM rather than stopping half way
 * silently: a failed append leaves a prefix the caller drops. The small appenders are
 * public because the CLI prints its other --json outputs with the same escaping.
 */
#include "event.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "rd_err.h"

void rd_event_timestamp(char ts[RD_EVENT_TS_LEN])
{
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(ts, RD_EVENT_TS_LEN, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static int put(struct rd_buf *out, const char *s)
{
    return rd_buf_append(out, s, strlen(s));
}

int rd_json_str(struct rd_buf *out, const char *s, size_t len)
{
    int rc = put(out, "\"");
    for (size_t i = 0; i < len && rc == 0; i++) {
        unsigned char ch = (unsigned char)s[i];
        char esc[8];
        if (ch == '"' || ch == '\\')
            snprintf(esc, sizeof esc, "\\%c", ch);
        else if (ch == '\n')
            snprintf(esc, sizeof esc, "\\n");
        else if (ch == '\r')
            snprintf(esc, sizeof esc, "\\r");
        else if (ch == '\t')
            snprintf(esc, sizeof esc, "\\t");
        else if (ch < 0x20 || ch == 0x7f)
            snprintf(esc, sizeof esc, "\\u%04x", ch);
        else
            esc[0] = (char)ch, esc[1] = '\0';
        rc = put(out, esc);
    }
    return rc ? rc : put(out, "\"");
}

int rd_json_num(struct rd_buf *out, const char *s)
{
    const char *p = s + (*s == '-');
    bool ok = *p >= '0' && *p <= '9' && !(p[0] == '0' && p[1] >= '0' && p[1] <= '9');
    int dots = 0;
    for (const char *q = p; ok && *q; q++) {
        if (*q == '.')
            ok = ++dots == 1 && q[1] >= '0' && q[1] <= '9';
        else
            ok = *q >= '0' && *q <= '9';
    }
    return ok ? put(out, s) : rd_json_str(out, s, strlen(s));
}

/* `"key":value` for keys[i] and values[i], comma-separated and after a comma if `lead`,
 * where kinds[i] is 's' for a string and 'n' for a number. */
static int fields(struct rd_buf *out, bool lead, const char *const *keys, const char *const *values,
                  const char *kinds)
{
    int rc = 0;
    for (size_t i = 0; kinds[i] && rc == 0; i++) {
        rc = put(out, i > 0 || lead ? ",\"" : "\"");
        if (rc == 0) rc = put(out, keys[i]);
        if (rc == 0) rc = put(out, "\":");
        if (rc == 0)
            rc = kinds[i] == 'n' ? rd_json_num(out, values[i])
                                 : rd_json_str(out, values[i], strlen(values[i]));
    }
    return rc;
}

static int ring_moves(struct rd_buf *out, const char *const *f, size_t n)
{
    static const char *const keys[] = {"from", "to", "fraction"};
    int rc = put(out, ",\"moves\":[");
    for (size_t i = 5; i + 2 < n && rc == 0; i += 3) {
        rc = put(out, i > 5 ? ",{" : "{");
        if (rc == 0) rc = fields(out, false, keys, f + i, "ssn");
        if (rc == 0) rc = put(out, "}");
    }
    return rc ? rc : put(out, "]");
}

/* An event this build does not know: its type and its other fields as strings. */
static int unknown(struct rd_buf *out, const char *const *f, size_t n)
{
    int rc = put(out, ",\"fields\":[");
    for (size_t i = 1; i < n && rc == 0; i++) {
        if (i > 1) rc = put(out, ",");
        if (rc == 0) rc = rd_json_str(out, f[i], strlen(f[i]));
    }
    return rc ? rc : put(out, "]");
}

int rd_event_json(struct rd_buf *out, const char *ts, const char *const *f, size_t n)
{
    static const char *const member_keys[] = {"member", "status", "addr", "incarnation"};
    static const char *const ring_keys[] = {"version", "checksum", "points", "moved"};
    const char *type = n > 0 ? f[0] : "";
    int rc = put(out, "{\"ts\":");
    if (rc == 0) rc = rd_json_str(out, ts, strlen(ts));
    if (rc == 0) rc = put(out, ",\"type\":");
    if (rc == 0) rc = rd_json_str(out, type, strlen(type));
    if (rc < 0) return rc;
    if (strcmp(type, "member") == 0 && n >= 5)
        rc = fields(out, true, member_keys, f + 1, "sssn");
    else if (strcmp(type, "ring") == 0 && n >= 5 && (n - 5) % 3 == 0) {
        rc = fields(out, true, ring_keys, f + 1, "nsnn");
        if (rc == 0) rc = ring_moves(out, f, n);
    } else
        rc = unknown(out, f, n);
    return rc ? rc : put(out, "}\n");
}
