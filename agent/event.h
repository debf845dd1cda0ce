/*
 * event.h — the text form of membership and ring events, shared by the three places that
 * send or print them: the pub/sub messages of the query socket (query.c), whose payload is
 * one such object, `ringd watch` (cli/), which reads them back, and the event handlers
 * (hooks.c), which hand a handler the very lines `ringd watch --json` prints.
 *
 * An event is a flat array of strings (PROTOCOL.md, "Events"):
 * "member" NAME STATUS ADDR INCARNATION, or "ring" VERSION CHECKSUM POINTS MOVED and
 * FROM TO FRACTION per move, or "state" VERSION CHECKSUM POINTS and NAME STATUS ADDR
 * INCARNATION per member (what a subscriber to the "state" channel gets first); anything
 * else is shown by its fields. The formatter is pure: it appends to a buffer, so the
 * agent sends that on the socket or writes it to a pipe, and
 * the tests read its bytes. Its objects list their values in the order of the fields, so
 * rd_event_fields gets the fields back by reading the values in order, without a JSON
 * library and without knowing the event's type.
 */
#ifndef RD_AGENT_EVENT_H
#define RD_AGENT_EVENT_H

#include <stddef.h>

#include "buf.h"

/** Room for rd_event_timestamp's text, "2026-12-01T04:52:00Z" and its NUL. */
#define RD_EVENT_TS_LEN 24

/** Now, UTC, to the second, as every JSON line's "ts": into ts. */
void rd_event_timestamp(char ts[RD_EVENT_TS_LEN]);

/**
 * Appends one event as a JSON object and '\n' to out. `ts` is its time (above), `f` its
 * `n` fields. Returns 0 or RD_ENOMEM (out then holds a prefix of the line: drop it).
 */
int rd_event_json(struct rd_buf *out, const char *ts, const char *const *f, size_t n);

/** Most fields rd_event_fields returns (a ring event has 5 + 3 x 16). */
#define RD_EVENT_FIELDS_MAX 64

/**
 * The inverse of rd_event_json for one of its objects (json[0..len), no '\n' needed): the
 * "ts" value into ts (truncated to fit), and the event's fields, each a NUL-ended string
 * stored in `store` (reset first), into f[0..*n): every value after "ts" in order, strings
 * unescaped and numbers as written. At most RD_EVENT_FIELDS_MAX fields; more are dropped.
 * Returns 0, RD_EPROTO for text that is not such an object, or RD_ENOMEM.
 */
int rd_event_fields(const char *json, size_t len, char ts[RD_EVENT_TS_LEN], struct rd_buf *store,
                    const char *f[RD_EVENT_FIELDS_MAX], size_t *n);

/** Appends s (len bytes, any bytes) as a JSON string. 0 or RD_ENOMEM. */
int rd_json_str(struct rd_buf *out, const char *s, size_t len);
/** Appends s as a JSON number if it is one as we write them (digits, one '.', a leading
 * '-', no leading zero), else as a JSON string. 0 or RD_ENOMEM. */
int rd_json_num(struct rd_buf *out, const char *s);

#endif
