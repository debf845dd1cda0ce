/*
 * event.h — the text form of the events WATCH publishes, shared by the two places that
 * print them: `ringd watch --json` (cli/) and the event handlers (hooks.c), which hand a
 * handler the very lines watch prints.
 *
 * An event is the flat array of strings query.c pushes to watchers (PROTOCOL.md, WATCH):
 * "member" NAME STATUS ADDR INCARNATION, or "ring" VERSION CHECKSUM POINTS MOVED and
 * FROM TO FRACTION per move; anything else is shown by its fields. The formatter is pure:
 * it appends to a buffer, so the CLI writes that to stdout and the agent to a pipe, and the
 * tests read its bytes.
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

/** Appends s (len bytes, any bytes) as a JSON string. 0 or RD_ENOMEM. */
int rd_json_str(struct rd_buf *out, const char *s, size_t len);
/** Appends s as a JSON number if it is one as we write them (digits, one '.', a leading
 * '-', no leading zero), else as a JSON string. 0 or RD_ENOMEM. */
int rd_json_num(struct rd_buf *out, const char *s);

#endif
