/*
 * event.c — the JSON lines of membership and ring events, and reading them back (see
 * event.h).
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

/* `,"name":[{...},...]`: one object of strlen(kinds) fields (keys and kinds as fields())
 * per run of that many of f[from..n). */
static int object_list(struct rd_buf *out, const char *name, const char *const *keys,
                       const char *kinds, const char *const *f, size_t from, size_t n)
{
    size_t width = strlen(kinds);
    int rc = put(out, ",\"");
    if (rc == 0) rc = put(out, name);
    if (rc == 0) rc = put(out, "\":[");
    for (size_t i = from; i + width <= n && rc == 0; i += width) {
        rc = put(out, i > from ? ",{" : "{");
        if (rc == 0) rc = fields(out, false, keys, f + i, kinds);
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
    static const char *const move_keys[] = {"from", "to", "fraction"};
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
        if (rc == 0) rc = object_list(out, "moves", move_keys, "ssn", f, 5, n);
    } else if (strcmp(type, "state") == 0 && n >= 4 && (n - 4) % 4 == 0) {
        rc = fields(out, true, ring_keys, f + 1, "nsn");
        if (rc == 0) rc = object_list(out, "members", member_keys, "sssn", f, 4, n);
    } else
        rc = unknown(out, f, n);
    return rc ? rc : put(out, "}\n");
}

/* Reads the JSON string at json[*i] (its opening quote) into store, with its NUL. */
static int read_str(const char *json, size_t len, size_t *i, struct rd_buf *store)
{
    int rc = 0;
    size_t k = *i + 1;
    for (; k < len && json[k] != '"' && rc == 0; k++) {
        char ch = json[k];
        if ((unsigned char)ch < 0x20) return RD_EPROTO;
        if (ch != '\\') {
            rc = rd_buf_append(store, &ch, 1);
            continue;
        }
        if (++k >= len) return RD_EPROTO;
        static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
        const char *e = strchr(from, json[k]);
        if (e && json[k]) {
            rc = rd_buf_append(store, &to[e - from], 1);
        } else if (json[k] == 'u' && k + 4 < len) {
            unsigned v = 0;
            for (int d = 1; d <= 4; d++) {
                char h = json[k + d];
                unsigned x = h >= '0' && h <= '9'   ? (unsigned)(h - '0')
                             : h >= 'a' && h <= 'f' ? (unsigned)(h - 'a' + 10)
                             : h >= 'A' && h <= 'F' ? (unsigned)(h - 'A' + 10)
                                                    : 16;
                if (x == 16) return RD_EPROTO;
                v = v * 16 + x;
            }
            k += 4;
            /* UTF-8 of the code unit; rd_json_str only writes \u00XX (a surrogate pair
             * from elsewhere comes out as two 3-byte sequences, lossy but bounded) */
            char u[3];
            size_t un = 0;
            if (v < 0x80) {
                u[un++] = (char)v;
            } else if (v < 0x800) {
                u[un++] = (char)(0xc0 | (v >> 6));
                u[un++] = (char)(0x80 | (v & 0x3f));
            } else {
                u[un++] = (char)(0xe0 | (v >> 12));
                u[un++] = (char)(0x80 | ((v >> 6) & 0x3f));
                u[un++] = (char)(0x80 | (v & 0x3f));
            }
            rc = rd_buf_append(store, u, un);
        } else {
            return RD_EPROTO;
        }
    }
    if (rc < 0) return rc;
    if (k >= len) return RD_EPROTO;
    *i = k + 1;
    return rd_buf_append(store, "", 1);
}

int rd_event_fields(const char *json, size_t len, char ts[RD_EVENT_TS_LEN], struct rd_buf *store,
                    const char *f[RD_EVENT_FIELDS_MAX], size_t *n)
{
    size_t offs[RD_EVENT_FIELDS_MAX + 1], nv = 0, depth = 0;
    store->len = 0;
    *n = 0;
    ts[0] = '\0';
    size_t i = 0;
    while (i < len && (json[i] == ' ' || json[i] == '\t' || json[i] == '\r' || json[i] == '\n'))
        i++;
    if (i >= len || json[i] != '{') return RD_EPROTO;
    while (i < len) {
        char ch = json[i];
        if (ch == '{' || ch == '[') {
            depth++;
            i++;
        } else if (ch == '}' || ch == ']') {
            if (depth == 0) return RD_EPROTO;
            i++;
            if (--depth == 0) break;
        } else if (ch == ',' || ch == ':' || ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n') {
            i++;
        } else {
            size_t mark = store->len;
            int rc;
            if (ch == '"') {
                rc = read_str(json, len, &i, store);
            } else {
                size_t k = i;
                while (k < len && !strchr(",:{}[] \t\r\n\"", json[k]))
                    k++;
                rc = rd_buf_append(store, json + i, k - i);
                if (rc == 0) rc = rd_buf_append(store, "", 1);
                i = k;
            }
            if (rc < 0) return rc;
            size_t j = i;
            while (j < len && (json[j] == ' ' || json[j] == '\t'))
                j++;
            if (j < len && json[j] == ':') { /* a key, not a value */
                store->len = mark;
                continue;
            }
            if (nv < RD_EVENT_FIELDS_MAX + 1)
                offs[nv++] = mark;
            else
                store->len = mark;
        }
    }
    while (i < len && (json[i] == ' ' || json[i] == '\t' || json[i] == '\r' || json[i] == '\n'))
        i++;
    if (depth != 0 || nv == 0 || i != len) return RD_EPROTO;
    snprintf(ts, RD_EVENT_TS_LEN, "%s", store->data + offs[0]);
    for (size_t k = 1; k < nv; k++)
        f[(*n)++] = store->data + offs[k];
    return 0;
}
