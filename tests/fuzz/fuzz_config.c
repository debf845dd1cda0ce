/*
 * fuzz_config.c — libFuzzer target for the config file reader (agent/config.h).
 *
 * The input is a config file's text, read through rd_config_read(), the code --config
 * runs on an opened file (here a memory stream). It must never crash, over-read, leak or
 * trip UBSan, whatever the bytes: long lines, NULs, sections, stray separators. Whatever
 * it accepts must leave settings the agent can use (every field within its limits); what
 * it refuses must say where, as "fuzz.conf:LINE: reason" (no file is opened, since a
 * --config line inside a file is refused). Addresses are not resolved, so no DNS.
 * By hand, from the repository root: clang -g -O1 -std=c11 -D_GNU_SOURCE
 * -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -Iagent -Ilib -Iproto, this
 * file, agent/config.c agent/addr.c agent/log.c, every .c file of lib and proto, then
 * $(pkg-config --cflags --libs inih libuv msgpack libxxhash) -lm -o /tmp/fuzz_config; run
 * /tmp/fuzz_config -max_total_time=60 -max_len=4096 CORPUS_DIR.
 * inih itself is not instrumented (Debian's library); our reader and setters are.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "rd_err.h"
#include "ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A broken promise names itself before the abort that libFuzzer reports. */
#define check(ok)                                                                                  \
    do {                                                                                           \
        if (!(ok)) {                                                                               \
            fprintf(stderr, "fuzz_config.c:%d: check failed: %s\n", __LINE__, #ok);                \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A string field holds a terminated string of at most max bytes. */
static bool text_fits(const char *s, size_t cap, size_t max)
{
    const char *end = memchr(s, '\0', cap);
    return end && (size_t)(end - s) <= max;
}

static void check_usable(const struct rd_agent_config *c)
{
    check(c->name[0] == '\0' || rd_name_valid(c->name, strlen(c->name)));
    check(text_fits(c->bind_text, sizeof c->bind_text, RD_HOSTPORT_MAX));
    check(text_fits(c->advertise_text, sizeof c->advertise_text, RD_HOSTPORT_MAX));
    check(c->njoins >= 0 && c->njoins <= RD_JOIN_MAX);
    for (int i = 0; i < c->njoins; i++)
        check(c->joins[i][0] && text_fits(c->joins[i], sizeof c->joins[i], RD_HOSTPORT_MAX));
    check(c->socket_path[0] && text_fits(c->socket_path, sizeof c->socket_path, 107));
    check(c->socket_mode <= 0777);
    /* 0 until the options are finished: the cluster's, or the default (agent/config.c) */
    check(c->vnodes <= RD_RING_VNODES_MAX);
    check(c->weight >= 1 && c->weight <= RD_WEIGHT_MAX);
    check(rd_zone_valid(c->zone, strlen(c->zone)));
    check(text_fits(c->tags, sizeof c->tags, RD_TAGS_MAX));
    check(c->tags[0] == '\0' || rd_tags_valid(c->tags, strlen(c->tags)));
    check(c->log_format == RD_LOG_LOGFMT || c->log_format == RD_LOG_JSON);
    check(c->log_level >= RD_LOG_DEBUG && c->log_level <= RD_LOG_ERROR);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct rd_agent_config cfg;
    char err[512];
    check(rd_config_defaults(&cfg, err, sizeof err) == 0);
    if (size == 0) return 0; /* fmemopen needs a buffer; an empty file is a unit test */
    FILE *f = fmemopen((void *)data, size, "r");
    check(f != NULL);
    err[0] = '\0';
    int rc = rd_config_read(&cfg, f, "fuzz.conf", err, sizeof err);
    fclose(f);
    if (rc < 0) {
        check(rc == RD_EINVAL);
        check(strncmp(err, "fuzz.conf:", 10) == 0 && strlen(err) > 12);
        check(strchr(err, '\n') == NULL);
    }
    /* options before a refused line stay applied: valid either way */
    check_usable(&cfg);
    return 0;
}
