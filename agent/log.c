/*
 * log.c — logfmt and JSON line writer (see log.h).
 *
 * A line is assembled in a stack buffer and written with one fwrite, so that lines from
 * one process never interleave mid-line. Values that need it are quoted and escaped.
 */
#include "log.h"

#include <string.h>
#include <time.h>

#include "rd_err.h"

static FILE *log_out;
static enum rd_log_format log_format = RD_LOG_LOGFMT;
static enum rd_log_level log_level = RD_LOG_INFO;

static const char *level_names[] = {"debug", "info", "warn", "error"};

void rd_log_setup(FILE *out, enum rd_log_format format, enum rd_log_level level)
{
    log_out = out;
    log_format = format;
    log_level = level;
}

int rd_log_level_parse(const char *s)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, level_names[i]) == 0) return i;
    return RD_EINVAL;
}

int rd_log_format_parse(const char *s)
{
    if (strcmp(s, "logfmt") == 0) return RD_LOG_LOGFMT;
    if (strcmp(s, "json") == 0) return RD_LOG_JSON;
    return RD_EINVAL;
}

bool rd_log_enabled(enum rd_log_level level)
{
    return level >= log_level;
}

struct line {
    char buf[2048];
    size_t len;
};

static void put(struct line *l, const char *s, size_t n)
{
    if (n > sizeof l->buf - 2 - l->len) n = sizeof l->buf - 2 - l->len;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void puts_(struct line *l, const char *s)
{
    put(l, s, strlen(s));
}

/* logfmt quotes values with spaces, '=', quotes or control bytes; JSON always quotes. */
static void put_string(struct line *l, const char *s)
{
    bool quote = log_format == RD_LOG_JSON || *s == '\0';
    for (const char *p = s; *p && !quote; p++)
        quote = *p <= ' ' || *p == '"' || *p == '=' || *p == '\\' || (unsigned char)*p >= 0x7f;
    if (!quote) {
        puts_(l, s);
        return;
    }
    put(l, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            put(l, esc, 2);
        } else if (*p < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", *p);
            puts_(l, esc);
        } else {
            put(l, (const char *)p, 1);
        }
    }
    put(l, "\"", 1);
}

static void put_key(struct line *l, const char *key, bool first)
{
    if (log_format == RD_LOG_JSON) {
        puts_(l, first ? "{\"" : ",\"");
        puts_(l, key);
        puts_(l, "\":");
    } else {
        if (!first) puts_(l, " ");
        puts_(l, key);
        puts_(l, "=");
    }
}

void rd_log(enum rd_log_level level, const char *msg, const struct rd_log_field *fields, size_t n)
{
    if (!rd_log_enabled(level)) return;
    struct line l = {.len = 0};
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[64];
    snprintf(when, sizeof when, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ", tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
    put_key(&l, "ts", true);
    put_string(&l, when);
    put_key(&l, "level", false);
    put_string(&l, level_names[level]);
    put_key(&l, "msg", false);
    bool json = log_format == RD_LOG_JSON;
    /* logfmt: msg is always quoted so that "member dead" reads as one value */
    if (!json) {
        put(&l, "\"", 1);
        puts_(&l, msg);
        put(&l, "\"", 1);
    } else {
        put_string(&l, msg);
    }
    for (size_t i = 0; i < n; i++) {
        char num[32];
        put_key(&l, fields[i].key, false);
        switch (fields[i].kind) {
        case RD_F_STR:
            put_string(&l, fields[i].s ? fields[i].s : "");
            continue;
        case RD_F_INT:
            snprintf(num, sizeof num, "%lld", (long long)fields[i].i);
            break;
        case RD_F_UINT:
            snprintf(num, sizeof num, "%llu", (unsigned long long)fields[i].u);
            break;
        case RD_F_DOUBLE:
            snprintf(num, sizeof num, "%.6g", fields[i].d);
            break;
        case RD_F_HEX:
            snprintf(num, sizeof num, json ? "\"%016llx\"" : "%016llx",
                     (unsigned long long)fields[i].u);
            break;
        }
        puts_(&l, num);
    }
    if (json) puts_(&l, "}");
    l.buf[l.len++] = '\n';
    fwrite(l.buf, 1, l.len, log_out ? log_out : stderr);
    fflush(log_out ? log_out : stderr);
}
