/*
 * log.h — one line per event on stderr, logfmt by default or JSON lines.
 *
 * Callers name the message and hand over key/value fields; this module owns the format,
 * the quoting and the level filter, so that every line of the membership log has the same
 * shape whichever part of the agent wrote it.
 */
#ifndef RD_LOG_H
#define RD_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum rd_log_level { RD_LOG_DEBUG = 0, RD_LOG_INFO = 1, RD_LOG_WARN = 2, RD_LOG_ERROR = 3 };
enum rd_log_format { RD_LOG_LOGFMT = 0, RD_LOG_JSON = 1 };

/** Where lines go and which are kept. Defaults: stderr, logfmt, info. */
void rd_log_setup(FILE *out, enum rd_log_format format, enum rd_log_level level);
/** Parses "debug|info|warn|error" / "logfmt|json": the enum value, or RD_EINVAL if unknown. */
int rd_log_level_parse(const char *s);
int rd_log_format_parse(const char *s);
/** True if a line at `level` would be written. */
bool rd_log_enabled(enum rd_log_level level);

/** One field of a log line. Use the RD_F* helpers. */
struct rd_log_field {
    const char *key;
    enum { RD_F_STR, RD_F_INT, RD_F_UINT, RD_F_DOUBLE, RD_F_HEX } kind;
    const char *s;
    int64_t i;
    uint64_t u;
    double d;
};
#define RD_FSTR(k, v)  ((struct rd_log_field){.key = (k), .kind = RD_F_STR, .s = (v)})
#define RD_FINT(k, v)  ((struct rd_log_field){.key = (k), .kind = RD_F_INT, .i = (int64_t)(v)})
#define RD_FUINT(k, v) ((struct rd_log_field){.key = (k), .kind = RD_F_UINT, .u = (uint64_t)(v)})
#define RD_FDBL(k, v)  ((struct rd_log_field){.key = (k), .kind = RD_F_DOUBLE, .d = (double)(v)})
#define RD_FHEX(k, v)  ((struct rd_log_field){.key = (k), .kind = RD_F_HEX, .u = (uint64_t)(v)})

/** Writes one line: ts, level, msg, then the fields in order. */
void rd_log(enum rd_log_level level, const char *msg, const struct rd_log_field *fields, size_t n);

/** Convenience: rd_logf(RD_LOG_INFO, "member alive", RD_FSTR("member", name), ...). */
#define rd_logf(level, msg, ...)                                                                   \
    do {                                                                                           \
        const struct rd_log_field rd_log_f_[] = {__VA_ARGS__};                                     \
        rd_log((level), (msg), rd_log_f_, sizeof rd_log_f_ / sizeof rd_log_f_[0]);                 \
    } while (0)

#endif
