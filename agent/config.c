/*
 * config.c — `ringd agent` options (see config.h).
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring.h"

#define RD_STR_(x) #x
#define RD_STR(x) RD_STR_(x)

struct option_def {
    const char *name;
    const char *arg;
    const char *help;
};

static const struct option_def options[] = {
    {"name", "NAME", "member name, unique in the cluster (default: host name)"},
    {"bind", "HOST:PORT", "UDP and TCP address to listen on (default 0.0.0.0:7946)"},
    {"advertise", "HOST:PORT", "address other members use to reach this one (default: bind)"},
    {"join", "HOST:PORT", "seed to join through; repeatable; retried with backoff"},
    {"socket", "PATH", "query socket (default " RD_DEFAULT_SOCKET ")"},
    {"socket-mode", "OCTAL", "permissions of the query socket (default 0660)"},
    {"vnodes", "N", "ring points per member at weight 1 (default " RD_STR(RD_RING_VNODES_DEFAULT) "; same on every agent)"},
    {"weight", "W", "this member's share of the ring, 0.001 to 100 (default 1)"},
    {"zone", "ZONE", "failure zone of this member (default none)"},
    {"tag", "K=V", "metadata shown in MEMBERS; repeatable"},
    {"log-format", "logfmt|json", "log line format (default logfmt)"},
    {"log-level", "LEVEL", "debug, info, warn or error (default info)"},
    {"config", "FILE", "read options from FILE: one 'option = value' per line, # comments"},
    {"seed", "N", "seed of the random generator (default: from the clock)"},
};

void rd_config_usage(FILE *out)
{
    fprintf(out, "usage: ringd agent [options]\n\noptions:\n");
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) {
        char left[64];
        snprintf(left, sizeof left, "--%s %s", options[i].name, options[i].arg);
        fprintf(out, "  %-28s %s\n", left, options[i].help);
    }
    fprintf(out, "  %-28s %s\n", "-h, --help", "show this help");
}

int rd_weight_parse(const char *s, uint32_t *out)
{
    /* decimal with up to three fraction digits, parsed exactly (no floats) */
    uint64_t whole = 0, frac = 0;
    int fd = 0;
    const char *p = s;
    if (!isdigit((unsigned char)*p))
        return -1;
    while (isdigit((unsigned char)*p) && whole < 1000000)
        whole = whole * 10 + (uint64_t)(*p++ - '0');
    if (*p == '.') {
        p++;
        while (isdigit((unsigned char)*p) && fd < 3) {
            frac = frac * 10 + (uint64_t)(*p++ - '0');
            fd++;
        }
        while (*p == '0')
            p++;
    }
    if (*p)
        return -1;
    while (fd++ < 3)
        frac *= 10;
    uint64_t w = whole * RD_WEIGHT_ONE + frac;
    if (w < 1 || w > RD_WEIGHT_MAX)
        return -1;
    *out = (uint32_t)w;
    return 0;
}

static int copy(char *dst, size_t cap, const char *src)
{
    if (strlen(src) >= cap)
        return -1;
    strcpy(dst, src);
    return 0;
}

static int read_config_file(struct rd_agent_config *cfg, const char *path, char *err,
                            size_t errlen, int depth);

/* Applies one option; returns 0, or -1 with err filled. */
static int apply(struct rd_agent_config *cfg, const char *opt, const char *val, char *err,
                 size_t errlen, int depth)
{
#define FAIL(...)                                                                          \
    do {                                                                                   \
        snprintf(err, errlen, __VA_ARGS__);                                                \
        return -1;                                                                         \
    } while (0)
    char *end;
    if (strcmp(opt, "name") == 0) {
        if (!rd_name_valid(val, strlen(val)))
            FAIL("--name: '%s' is not a valid name (1-%d of A-Z a-z 0-9 . _ - : @)", val,
                 RD_NAME_MAX);
        strcpy(cfg->name, val);
    } else if (strcmp(opt, "bind") == 0) {
        if (copy(cfg->bind_text, sizeof cfg->bind_text, val) < 0)
            FAIL("--bind: address too long");
    } else if (strcmp(opt, "advertise") == 0) {
        if (copy(cfg->advertise_text, sizeof cfg->advertise_text, val) < 0)
            FAIL("--advertise: address too long");
    } else if (strcmp(opt, "join") == 0) {
        if (cfg->njoins == RD_JOIN_MAX)
            FAIL("--join: at most %d seeds", RD_JOIN_MAX);
        char host[RD_HOSTPORT_MAX + 1];
        int port;
        char why[128];
        if (rd_hostport_split(val, RD_DEFAULT_PORT, host, sizeof host, &port, why, sizeof why) < 0)
            FAIL("--join %s: %s", val, why);
        if (copy(cfg->joins[cfg->njoins], sizeof cfg->joins[0], val) < 0)
            FAIL("--join: address too long");
        cfg->njoins++;
    } else if (strcmp(opt, "socket") == 0) {
        if (!*val || copy(cfg->socket_path, sizeof cfg->socket_path, val) < 0)
            FAIL("--socket: path must be 1 to %zu bytes", sizeof cfg->socket_path - 1);
    } else if (strcmp(opt, "socket-mode") == 0) {
        errno = 0;
        unsigned long m = strtoul(val, &end, 8);
        if (errno || *end || !*val || m > 0777)
            FAIL("--socket-mode: '%s' is not an octal mode like 0660", val);
        cfg->socket_mode = (unsigned)m;
    } else if (strcmp(opt, "vnodes") == 0) {
        errno = 0;
        unsigned long v = strtoul(val, &end, 10);
        if (errno || *end || !*val || v < 1 || v > RD_RING_VNODES_MAX)
            FAIL("--vnodes: '%s' is not a number from 1 to %d", val, RD_RING_VNODES_MAX);
        cfg->vnodes = (uint32_t)v;
    } else if (strcmp(opt, "weight") == 0) {
        if (rd_weight_parse(val, &cfg->weight) < 0)
            FAIL("--weight: '%s' is not a weight from 0.001 to 100", val);
    } else if (strcmp(opt, "zone") == 0) {
        if (!rd_zone_valid(val, strlen(val)))
            FAIL("--zone: '%s' is not a valid zone (up to %d of A-Z a-z 0-9 . _ - : @)", val,
                 RD_ZONE_MAX);
        strcpy(cfg->zone, val);
    } else if (strcmp(opt, "tag") == 0) {
        size_t have = strlen(cfg->tags), add = strlen(val);
        if (!strchr(val, '=') || strchr(val, ',') || !rd_tags_valid(val, add))
            FAIL("--tag: '%s' is not KEY=VALUE (A-Z a-z 0-9 . _ - : @ /)", val);
        if (have + add + 1 > RD_TAGS_MAX)
            FAIL("--tag: all tags together must fit in %d bytes", RD_TAGS_MAX);
        if (have)
            strcat(cfg->tags, ",");
        strcat(cfg->tags, val);
    } else if (strcmp(opt, "log-format") == 0) {
        int f = rd_log_format_parse(val);
        if (f < 0)
            FAIL("--log-format: '%s' is not logfmt or json", val);
        cfg->log_format = (enum rd_log_format)f;
    } else if (strcmp(opt, "log-level") == 0) {
        int l = rd_log_level_parse(val);
        if (l < 0)
            FAIL("--log-level: '%s' is not debug, info, warn or error", val);
        cfg->log_level = (enum rd_log_level)l;
    } else if (strcmp(opt, "seed") == 0) {
        errno = 0;
        cfg->seed = strtoull(val, &end, 10);
        if (errno || *end || !*val)
            FAIL("--seed: '%s' is not a number", val);
    } else if (strcmp(opt, "config") == 0) {
        if (depth > 0)
            FAIL("--config: config files cannot include others");
        return read_config_file(cfg, val, err, errlen, depth + 1);
    } else {
        FAIL("unknown option --%s (see ringd agent --help)", opt);
    }
    return 0;
#undef FAIL
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

static int read_config_file(struct rd_agent_config *cfg, const char *path, char *err,
                            size_t errlen, int depth)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "--config %s: %s", path, strerror(errno));
        return -1;
    }
    char line[1024];
    int lineno = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *s = trim(line);
        if (!*s)
            continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            snprintf(err, errlen, "%s:%d: expected 'option = value'", path, lineno);
            rc = -1;
            break;
        }
        *eq = '\0';
        char sub[512];
        rc = apply(cfg, trim(s), trim(eq + 1), sub, sizeof sub, depth);
        if (rc < 0)
            snprintf(err, errlen, "%s:%d: %s", path, lineno, sub);
    }
    fclose(f);
    return rc;
}

static int finish(struct rd_agent_config *cfg, char *err, size_t errlen)
{
    char why[128];
    if (!cfg->name[0]) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        if (!rd_name_valid(host, strlen(host))) {
            snprintf(err, errlen, "host name '%s' is not a valid member name: use --name", host);
            return -1;
        }
        strcpy(cfg->name, host);
    }
    if (rd_addr_resolve(cfg->bind_text, RD_DEFAULT_PORT, 1, &cfg->bind, why, sizeof why) < 0) {
        snprintf(err, errlen, "--bind %s: %s", cfg->bind_text, why);
        return -1;
    }
    if (cfg->advertise_text[0]) {
        if (rd_addr_resolve(cfg->advertise_text, cfg->bind.port, 0, &cfg->advertise, why,
                            sizeof why) < 0) {
            snprintf(err, errlen, "--advertise %s: %s", cfg->advertise_text, why);
            return -1;
        }
        if (rd_addr_is_any(&cfg->advertise)) {
            snprintf(err, errlen, "--advertise: %s cannot be reached by others", cfg->advertise_text);
            return -1;
        }
    } else {
        cfg->advertise = cfg->bind; /* an unspecified bind is resolved by the agent */
    }
    return 0;
}

int rd_config_parse(struct rd_agent_config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->bind_text, sizeof cfg->bind_text, "0.0.0.0:%d", RD_DEFAULT_PORT);
    snprintf(cfg->socket_path, sizeof cfg->socket_path, "%s", RD_DEFAULT_SOCKET);
    cfg->socket_mode = 0660;
    cfg->vnodes = RD_RING_VNODES_DEFAULT;
    cfg->weight = RD_WEIGHT_ONE;
    cfg->log_format = RD_LOG_LOGFMT;
    cfg->log_level = RD_LOG_INFO;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            rd_config_usage(stdout);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s' (see ringd agent --help)", a);
            return -1;
        }
        char opt[64];
        const char *val;
        const char *eq = strchr(a, '=');
        if (eq) { /* --opt=value */
            size_t n = (size_t)(eq - a - 2);
            if (n >= sizeof opt)
                n = sizeof opt - 1;
            memcpy(opt, a + 2, n);
            opt[n] = '\0';
            val = eq + 1;
        } else {
            snprintf(opt, sizeof opt, "%s", a + 2);
            if (i + 1 >= argc) {
                bool known = false;
                for (size_t k = 0; k < sizeof options / sizeof options[0]; k++)
                    known |= strcmp(options[k].name, opt) == 0;
                snprintf(err, errlen, known ? "--%s needs a value" : "unknown option --%s", opt);
                return -1;
            }
            val = argv[++i];
        }
        if (apply(cfg, opt, val, err, errlen, 0) < 0)
            return -1;
    }
    return finish(cfg, err, errlen);
}
