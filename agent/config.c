/*
 * config.c — `ringd agent` options (see config.h).
 *
 * Everything about an option lives in its row of `options`: the flag and config-file key,
 * what --help shows, whether it may be repeated, its default and the setter that validates
 * and stores a value. Defaults go through the same setters as user input, so a default is
 * checked like any value and --help prints the very text that is applied. The command
 * line and the config file both end in apply(), which looks the option up in the table.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <ini.h>

#include "dns.h"
#include "rd_err.h"
#include "ring.h"
#include "ringparams.h"

#define RD_STR_(x) #x
#define RD_STR(x)  RD_STR_(x)

/* Longest line of a config file, without its '\n'. */
#define CONFIG_LINE_BYTES 1022

enum option_kind {
    OPT_ONE,  /* given twice, the last value wins */
    OPT_MANY, /* repeatable: each use adds a value */
    OPT_FILE, /* reads more options from a file; refused inside one */
    OPT_FLAG, /* a switch: `--opt` alone means true; `--opt=V` and `opt = V` take true/false */
};

struct option_def;
typedef int (*option_setter)(const struct option_def *o, struct rd_agent_config *cfg,
                             const char *val, char *err, size_t errlen);

struct option_def {
    const char *name; /* flag without "--", and key in a config file */
    const char *arg;  /* placeholder for the value in --help */
    enum option_kind kind;
    size_t field;         /* offsetof the rd_agent_config field the setter writes */
    const char *def;      /* applied through `set` before any argument; NULL: zero/empty */
    const char *def_help; /* how --help names the default when `def` is not it */
    option_setter set;
    const char *help; /* '\n' continues on the next line of --help */
};

/* The field of `cfg` that option `o` writes, as a T. */
#define FIELD(T, cfg, o) ((T *)(void *)((char *)(cfg) + (o)->field))

/* Formats the message after the `used` bytes of prefix that snprintf put in err. */
static void after_prefix(char *err, size_t errlen, int used, const char *fmt, va_list ap)
{
    if (used >= 0 && (size_t)used < errlen) vsnprintf(err + used, errlen - (size_t)used, fmt, ap);
}

/* Fills err with "--NAME: " and the message; returns RD_EINVAL. */
static int refuse(const struct option_def *o, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int refuse(const struct option_def *o, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    after_prefix(err, errlen, snprintf(err, errlen, "--%s: ", o->name), fmt, ap);
    va_end(ap);
    return RD_EINVAL;
}

/* An unsigned number in `base` up to `max`, the whole text and nothing else. */
static bool parse_uint(const char *val, int base, unsigned long long max, unsigned long long *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, base);
    if (errno || *end || !*val || v > max) return false;
    *out = v;
    return true;
}

static int set_name(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                    char *err, size_t errlen)
{
    if (!rd_name_valid(val, strlen(val)))
        return refuse(o, err, errlen, "'%s' is not a valid name (1-%d of A-Z a-z 0-9 . _ - : @)",
                      val, RD_NAME_MAX);
    strcpy(FIELD(char, cfg, o), val);
    return 0;
}

/* bind and advertise: kept as text, resolved once every option is known (finish()). */
static int set_address(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                       char *err, size_t errlen)
{
    if (strlen(val) > RD_HOSTPORT_MAX) return refuse(o, err, errlen, "address too long");
    strcpy(FIELD(char, cfg, o), val);
    return 0;
}

static int set_join(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                    char *err, size_t errlen)
{
    if (cfg->njoins == RD_JOIN_MAX) return refuse(o, err, errlen, "at most %d seeds", RD_JOIN_MAX);
    struct rd_dns_spec spec;
    char why[128];
    if (rd_dns_spec_parse(val, RD_DEFAULT_PORT, &spec, why, sizeof why) < 0) {
        snprintf(err, errlen, "--%s %s: %s", o->name, val, why);
        return RD_EINVAL;
    }
    if (strlen(val) >= sizeof cfg->joins[0])
        return refuse(o, err, errlen, "at most %zu characters", sizeof cfg->joins[0] - 1);
    strcpy(cfg->joins[cfg->njoins++], val);
    return 0;
}

static int set_socket(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                      char *err, size_t errlen)
{
    size_t cap = sizeof cfg->socket_path;
    if (!*val || strlen(val) >= cap)
        return refuse(o, err, errlen, "path must be 1 to %zu bytes", cap - 1);
    strcpy(FIELD(char, cfg, o), val);
    return 0;
}

/* IP:PORT[,IP:PORT...], numeric: the resolver of names cannot need a name. */
static int set_dns_server(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                          char *err, size_t errlen)
{
    char list[RD_DNS_SERVERS_MAX + 1];
    if (strlen(val) >= sizeof list) return refuse(o, err, errlen, "list too long");
    strcpy(list, val);
    for (char *save = NULL, *one = strtok_r(list, ",", &save); one;
         one = strtok_r(NULL, ",", &save)) {
        char host[RD_HOSTPORT_MAX + 1], why[128];
        int port;
        uint8_t ip[16];
        if (rd_hostport_split(one, 53, host, sizeof host, &port, why, sizeof why) < 0 ||
            (inet_pton(AF_INET, host, ip) != 1 && inet_pton(AF_INET6, host, ip) != 1))
            return refuse(o, err, errlen, "'%s' is not IP:PORT (numeric; [v6]:PORT)", one);
    }
    strcpy(FIELD(char, cfg, o), val);
    return 0;
}

static int set_socket_mode(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                           char *err, size_t errlen)
{
    unsigned long long m;
    if (!parse_uint(val, 8, 0777, &m))
        return refuse(o, err, errlen, "'%s' is not an octal mode like 0660", val);
    *FIELD(unsigned, cfg, o) = (unsigned)m;
    return 0;
}

/* A group name or a numeric gid; whether it exists is checked when the agent starts. */
static int set_group(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                     char *err, size_t errlen)
{
    size_t n = strlen(val);
    if (n == 0 || n > RD_QUERY_GROUP_MAX || val[0] == '-' || strpbrk(val, ":, \t\r\n"))
        return refuse(o, err, errlen, "'%s' is not a group name or gid", val);
    strcpy(FIELD(char, cfg, o), val);
    return 0;
}

static int set_vnodes(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                      char *err, size_t errlen)
{
    unsigned long long v;
    if (!parse_uint(val, 10, RD_RING_VNODES_MAX, &v) || v < 1)
        return refuse(o, err, errlen, "'%s' is not a number from 1 to %d", val, RD_RING_VNODES_MAX);
    *FIELD(uint32_t, cfg, o) = (uint32_t)v;
    return 0;
}

static int set_ring(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                    char *err, size_t errlen)
{
    if (rd_ring_mode_parse(val, FIELD(unsigned, cfg, o)) < 0)
        return refuse(o, err, errlen, "'%s' is not ringd or ketama", val);
    cfg->ring_mode_set = true;
    return 0;
}

static int set_weight(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                      char *err, size_t errlen)
{
    if (rd_weight_parse(val, FIELD(uint32_t, cfg, o)) < 0)
        return refuse(o, err, errlen, "'%s' is not a weight from 0.001 to 100", val);
    return 0;
}

static int set_zone(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                    char *err, size_t errlen)
{
    if (!rd_zone_valid(val, strlen(val)))
        return refuse(o, err, errlen, "'%s' is not a valid %s (up to %d of A-Z a-z 0-9 . _ - : @)",
                      val, o->name, RD_ZONE_MAX);
    strcpy(FIELD(char, cfg, o), val);
    return 0;
}

/* Tags accumulate as "k=v,k=v", the form the member record carries. */
static int set_tag(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                   char *err, size_t errlen)
{
    char *tags = FIELD(char, cfg, o);
    size_t have = strlen(tags), add = strlen(val);
    if (!strchr(val, '=') || strchr(val, ',') || !rd_tags_valid(val, add))
        return refuse(o, err, errlen, "'%s' is not KEY=VALUE (A-Z a-z 0-9 . _ - : @ /)", val);
    if (have + add + 1 > RD_TAGS_MAX)
        return refuse(o, err, errlen, "all tags together must fit in %d bytes", RD_TAGS_MAX);
    if (have) strcat(tags, ",");
    strcat(tags, val);
    return 0;
}

static int set_log_format(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                          char *err, size_t errlen)
{
    int f = rd_log_format_parse(val);
    if (f < 0) return refuse(o, err, errlen, "'%s' is not logfmt or json", val);
    *FIELD(enum rd_log_format, cfg, o) = (enum rd_log_format)f;
    return 0;
}

static int set_log_level(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                         char *err, size_t errlen)
{
    int l = rd_log_level_parse(val);
    if (l < 0) return refuse(o, err, errlen, "'%s' is not debug, info, warn or error", val);
    *FIELD(enum rd_log_level, cfg, o) = (enum rd_log_level)l;
    return 0;
}

static int set_seed(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                    char *err, size_t errlen)
{
    unsigned long long s;
    if (!parse_uint(val, 10, UINT64_MAX, &s))
        return refuse(o, err, errlen, "'%s' is not a number", val);
    *FIELD(uint64_t, cfg, o) = s;
    return 0;
}

static int set_join_timeout(const struct option_def *o, struct rd_agent_config *cfg,
                            const char *val, char *err, size_t errlen)
{
    unsigned long long v;
    if (!parse_uint(val, 10, RD_JOIN_TIMEOUT_MAX_S, &v))
        return refuse(o, err, errlen, "'%s' is not a number of seconds from 0 to %d", val,
                      RD_JOIN_TIMEOUT_MAX_S);
    *FIELD(uint32_t, cfg, o) = (uint32_t)v;
    return 0;
}

static int set_path(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                    char *err, size_t errlen)
{
    if (!*val || strlen(val) >= sizeof cfg->keyring_path)
        return refuse(o, err, errlen, "path must be 1 to %zu bytes", sizeof cfg->keyring_path - 1);
    strcpy(FIELD(char, cfg, o), val);
    return 0;
}

/* A two-word value: 1 for `yes`, 0 for `no`, anything else refused naming both. */
static int two_words(const struct option_def *o, const char *val, const char *yes, const char *no,
                     char *err, size_t errlen)
{
    if (strcmp(val, yes) == 0) return 1;
    if (strcmp(val, no) == 0) return 0;
    return refuse(o, err, errlen, "'%s' is not %s or %s", val, yes, no);
}

static int set_bool(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                    char *err, size_t errlen)
{
    int v = two_words(o, val, "true", "false", err, errlen);
    if (v < 0) return v;
    *FIELD(bool, cfg, o) = v;
    return 0;
}

/* on|off, and nothing else: the field also tells "not given" (RD_SWITCH_UNSET) apart. */
static int set_switch(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                      char *err, size_t errlen)
{
    int v = two_words(o, val, "on", "off", err, errlen);
    if (v < 0) return v;
    *FIELD(enum rd_switch, cfg, o) = v ? RD_SWITCH_ON : RD_SWITCH_OFF;
    return 0;
}

static int set_profile(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                       char *err, size_t errlen)
{
    int p = rd_swim_profile_parse(val);
    if (p < 0) return refuse(o, err, errlen, "'%s' is not lan, wan or local", val);
    *FIELD(enum rd_swim_profile, cfg, o) = (enum rd_swim_profile)p;
    return 0;
}

static int set_config(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                      char *err, size_t errlen);

/* An event handler, [FILTER=]CMD: checked now, so a typo in a filter stops the start. */
static int set_on_event(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                        char *err, size_t errlen)
{
    if (cfg->non_event == RD_HOOKS_MAX)
        return refuse(o, err, errlen, "at most %d event handlers", RD_HOOKS_MAX);
    if (strlen(val) > RD_HOOK_SPEC_MAX)
        return refuse(o, err, errlen, "longer than %d bytes", RD_HOOK_SPEC_MAX);
    unsigned mask;
    const char *cmd;
    char why[256];
    if (rd_hook_spec_parse(val, &mask, &cmd, why, sizeof why) < 0)
        return refuse(o, err, errlen, "%s", why);
    strcpy(cfg->on_event[cfg->non_event++], val);
    return 0;
}

static int set_seconds(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                       char *err, size_t errlen)
{
    unsigned long long v;
    if (!parse_uint(val, 10, RD_HOOK_TIMEOUT_MAX_S, &v) || v < 1)
        return refuse(o, err, errlen, "'%s' is not a number of seconds from 1 to %d", val,
                      RD_HOOK_TIMEOUT_MAX_S);
    *FIELD(uint32_t, cfg, o) = (uint32_t)v;
    return 0;
}

#define AT(f) offsetof(struct rd_agent_config, f)

static const struct option_def options[] = {
    {"name", "NAME", OPT_ONE, AT(name), NULL, "host name", set_name,
     "member name, unique in the cluster"},
    {"bind", "HOST:PORT", OPT_ONE, AT(bind_text), "0.0.0.0:" RD_STR(RD_DEFAULT_PORT), NULL,
     set_address, "UDP and TCP address to listen on"},
    {"advertise", "HOST:PORT", OPT_ONE, AT(advertise_text), NULL, "bind", set_address,
     "address other members use to reach this one"},
    {"join", "HOST:PORT", OPT_MANY, AT(joins), NULL, NULL, set_join,
     "seed (or srv:NAME), names resolved at every retry"},
    {"socket", "PATH", OPT_ONE, AT(socket_path), RD_DEFAULT_SOCKET, NULL, set_socket,
     "query socket"},
    {"socket-mode", "OCTAL", OPT_ONE, AT(socket_mode), "0660", NULL, set_socket_mode,
     "permissions of the query socket"},
    {"admin-group", "GROUP", OPT_ONE, AT(admin_group), NULL, "none", set_group,
     "group (name or gid) whose members may make changes through the\n"
     "socket (JOIN, LEAVE, KEYRING, TAGS, WEIGHT, FORCE-LEAVE), besides\n"
     "root and the agent's user"},
    {"vnodes", "N", OPT_ONE, AT(vnodes), NULL, "the cluster's, or " RD_STR(RD_RING_VNODES_DEFAULT),
     set_vnodes,
     "ring points per member at weight 1; a joining agent takes the\n"
     "cluster's unless this is given, and stops if it differs"},
    {"ring", "ringd|ketama", OPT_ONE, AT(ring_mode), NULL, "the cluster's, or ringd", set_ring,
     "how the ring places keys: ringd's own ring, or ketama exactly as\n"
     "libmemcached (whole weights; a member is the server named by its\n"
     "ketama tag, else its name); as --vnodes, a joining agent takes the\n"
     "cluster's unless this is given, and stops if it differs"},
    {"weight", "W", OPT_ONE, AT(weight), "1", NULL, set_weight,
     "this member's share of the ring, 0.001 to 100; applied on\n"
     "SIGHUP; `ringd weight W` changes it live, and 0 drains it"},
    {"max-weight", "W", OPT_ONE, AT(max_weight), "100", NULL, set_weight,
     "heaviest weight placed on the ring: a member that claims more\n"
     "is placed at W (same on all agents; bounds what a forged or\n"
     "misconfigured member can take)"},
    {"zone", "ZONE", OPT_ONE, AT(zone), NULL, "none", set_zone,
     "failure zone: OWNERS puts replicas in different zones"},
    {"tag", "K=V", OPT_MANY, AT(tags), NULL, NULL, set_tag,
     "metadata in MEMBERS, changed live by SIGHUP and ringd tags"},
    {"log-format", "logfmt|json", OPT_ONE, AT(log_format), "logfmt", NULL, set_log_format,
     "log line format"},
    {"log-level", "LEVEL", OPT_ONE, AT(log_level), "info", NULL, set_log_level,
     "debug, info, warn or error"},
    {"config", "FILE", OPT_FILE, AT(config_path), NULL, NULL, set_config,
     "read options from FILE: one 'option = value' per line, as its flag;\n"
     "a # or ; at the start of a line or after a space begins a comment;\n"
     "blank lines, indentation and a UTF-8 BOM are fine; no [sections],\n"
     "no 'option: value', no --config inside; lines up to " RD_STR(
         CONFIG_LINE_BYTES) " bytes;\n"
                            "read again on SIGHUP (README, \"Reload\")"},
    {"seed", "N", OPT_ONE, AT(seed), "0", "from the clock", set_seed,
     "seed of the random generator"},
    {"keyring-file", "PATH", OPT_ONE, AT(keyring_path), NULL, "none: gossip in the clear", set_path,
     "gossip keys, one base64 key per line (ringd keygen), the first\n"
     "seals; mode 0600 or stricter; re-read on SIGHUP, rewritten by\n"
     "ringd keys install|use|remove"},
    {"cluster", "NAME", OPT_ONE, AT(cluster), NULL, "none", set_zone,
     "cluster label sealed into every packet: other clusters never merge"},
    {"insecure-gossip", "", OPT_FLAG, AT(insecure_gossip), NULL, NULL, set_bool,
     "allow gossip in the clear on an address that is not loopback"},
    {"gossip-verify-incoming", "on|off", OPT_ONE, AT(gossip_verify_incoming), NULL, "on",
     set_switch,
     "with --keyring-file: off also accepts plain gossip, to turn\n"
     "encryption on in a running cluster (README)"},
    {"gossip-verify-outgoing", "on|off", OPT_ONE, AT(gossip_verify_outgoing), NULL, "on",
     set_switch,
     "with --keyring-file: off sends in the clear while sealed\n"
     "gossip still opens; needs --gossip-verify-incoming off"},
    {"on-event", "[FILTER=]CMD", OPT_MANY, AT(on_event), NULL, NULL, set_on_event,
     "run /bin/sh -c CMD on membership and ring events (README)"},
    {"event-timeout", "SECONDS", OPT_ONE, AT(event_timeout_s), "30", NULL, set_seconds,
     "an event handler running longer is killed"},
    {"join-timeout", "SECONDS", OPT_ONE, AT(join_timeout_s), "0", "0: retry forever",
     set_join_timeout,
     "with --join: exit 1 if no seed answered a full-state exchange\n"
     "within this many seconds of the start"},
    {"state-dir", "DIR", OPT_ONE, AT(state_dir), NULL, "none", set_path,
     "keep a snapshot of the member table in DIR (created 0700);\n"
     "started again, the agent rejoins through its members"},
    {"rejoin", "", OPT_FLAG, AT(rejoin), NULL, NULL, set_bool,
     "with --state-dir: rejoin through the snapshot even if this\n"
     "agent left gracefully last time"},
    {"profile", "lan|wan|local", OPT_ONE, AT(profile), "lan", NULL, set_profile,
     "timing of probes, gossip and suspicion: memberlist's LAN, WAN\n"
     "or local-loopback set (README), the same on all agents"},
    {"probe-refusals", "on|off", OPT_ONE, AT(probe_refusals), NULL, "on", set_switch,
     "fail a probe at once when the target's host and every helper's\n"
     "say nothing listens there (ICMP port unreachable; README)"},
    {"dns-server", "IP[:PORT][,...]", OPT_ONE, AT(dns_server), NULL, "/etc/resolv.conf",
     set_dns_server, "name servers asked for --join and JOIN names (A, AAAA, SRV)"},
    {"metrics-addr", "HOST:PORT", OPT_ONE, AT(metrics_text), NULL, "none", set_address,
     "serve Prometheus metrics on http://HOST:PORT/metrics"},
};

#define NOPTIONS (sizeof options / sizeof options[0])

static const struct option_def *find_option(const char *name)
{
    for (size_t i = 0; i < NOPTIONS; i++)
        if (strcmp(options[i].name, name) == 0) return &options[i];
    return NULL;
}

#define HELP_INDENT 31 /* "  " + a 28-column flag + " " */

void rd_config_usage(FILE *out)
{
    fprintf(out, "usage: ringd agent [options]\n\noptions:\n");
    for (size_t i = 0; i < NOPTIONS; i++) {
        const struct option_def *o = &options[i];
        char left[64];
        snprintf(left, sizeof left, o->arg[0] ? "--%s %s" : "--%s", o->name, o->arg);
        if (strlen(left) > HELP_INDENT - 3) /* too wide for the column: help on its own line */
            fprintf(out, "  %s\n%*s", left, HELP_INDENT, "");
        else
            fprintf(out, "  %-28s ", left);
        for (const char *h = o->help; *h; h++) {
            if (*h == '\n')
                fprintf(out, "\n%*s", HELP_INDENT, "");
            else
                fputc(*h, out);
        }
        if (o->kind == OPT_MANY) fprintf(out, "; repeatable");
        if (o->def_help)
            fprintf(out, " (default: %s)", o->def_help);
        else if (o->def)
            fprintf(out, " (default %s)", o->def);
        fputc('\n', out);
    }
    fprintf(out, "  %-28s %s\n", "-h, --help", "show this help");
}

int rd_config_ketama_weights(const struct rd_agent_config *cfg, char *err, size_t errlen)
{
    const char *flag = cfg->weight % RD_WEIGHT_ONE ? "weight" : "max-weight";
    uint32_t w = cfg->weight % RD_WEIGHT_ONE ? cfg->weight : cfg->max_weight;
    if (w % RD_WEIGHT_ONE == 0) return 0;
    snprintf(err, errlen,
             "--%s %u.%03u is not a whole number: a ketama ring takes whole weights, as "
             "libmemcached does",
             flag, w / RD_WEIGHT_ONE, w % RD_WEIGHT_ONE);
    return RD_EINVAL;
}

int rd_weight_parse(const char *s, uint32_t *out)
{
    /* decimal with up to three fraction digits, parsed exactly (no floats) */
    uint64_t whole = 0, frac = 0;
    int fd = 0;
    const char *p = s;
    if (!isdigit((unsigned char)*p)) return -1;
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
    if (*p) return -1;
    while (fd++ < 3)
        frac *= 10;
    uint64_t w = whole * RD_WEIGHT_ONE + frac;
    if (w < 1 || w > RD_WEIGHT_MAX) return -1;
    *out = (uint32_t)w;
    return 0;
}

/* Applies one option given on the command line or (in_file) in a config file. */
static int apply(struct rd_agent_config *cfg, const char *name, const char *val, bool in_file,
                 char *err, size_t errlen)
{
    const struct option_def *o = find_option(name);
    if (!o) {
        snprintf(err, errlen, "unknown option --%s (see ringd agent --help)", name);
        return RD_EINVAL;
    }
    if (o->kind == OPT_FILE && in_file)
        return refuse(o, err, errlen, "config files cannot include others");
    return o->set(o, cfg, val, err, errlen);
}

int rd_config_defaults(struct rd_agent_config *cfg, char *err, size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < NOPTIONS; i++) {
        const struct option_def *o = &options[i];
        if (o->def && o->set(o, cfg, o->def, err, errlen) < 0) return RD_EINVAL;
    }
    return 0;
}

/*
 * The config file is read by inih. Debian's build exposes inih's settings as variables;
 * they are set before every read so the format is ours whatever the defaults. inih hands
 * the text to a reader of ours one line at a time, in a buffer of ini_max_line bytes. The
 * reader passes on whole lines only: a longer line is an error at its own line, never cut
 * into two, and it refuses the forms inih knows but our format has not, before inih sees
 * them: sections and "option: value".
 */
struct config_source {
    FILE *f;
    const char *path;
    struct rd_agent_config *cfg;
    int lineno;     /* of the line last handed to inih */
    bool failed;    /* err holds "PATH:LINE: reason" */
    int read_errno; /* the file could not be read */
    char *err;
    size_t errlen;
};

static char comment_chars[] = "#;";

static void set_ini_format(void)
{
    ini_max_line = CONFIG_LINE_BYTES + 2; /* the line, its '\n' and a '\0' */
    ini_use_stack = true;
    ini_start_comment_prefixes = comment_chars;
    ini_allow_inline_comments = true;
    ini_inline_comment_prefixes = comment_chars;
    ini_allow_multiline = false; /* an indented line is an option, not a continuation */
    ini_allow_no_value = false;
    ini_allow_bom = true;
    ini_stop_on_first_error = true;
}

/* Fills err with "PATH:LINE: " and the message; returns false. */
static bool source_fail(struct config_source *src, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool source_fail(struct config_source *src, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    after_prefix(src->err, src->errlen,
                 snprintf(src->err, src->errlen, "%s:%d: ", src->path, src->lineno), fmt, ap);
    va_end(ap);
    src->failed = true;
    return false;
}

/* Passes a line on if it is one of ours: blank, a comment, or text with '=' before any ':'. */
static bool line_welcome(struct config_source *src, const char *line)
{
    if (src->lineno == 1 && strncmp(line, "\xEF\xBB\xBF", 3) == 0)
        line += 3; /* a UTF-8 byte order mark, which inih skips */
    line += strspn(line, " \t\r\n\v\f");
    if (!*line || strchr(comment_chars, *line)) return true;
    if (*line == '[')
        return source_fail(src, "sections are not supported: write 'option = value' lines only");
    if (line[strcspn(line, "=:")] != '=') return source_fail(src, "expected 'option = value'");
    return true;
}

/* inih's reader: one whole line into buf, or NULL at the end or on a refused line. */
static char *next_line(char *buf, int cap, void *stream)
{
    struct config_source *src = stream;
    int c = getc(src->f);
    if (c == EOF) {
        src->read_errno = ferror(src->f) ? errno : 0;
        return NULL;
    }
    src->lineno++;
    int n = 0;
    for (; c != EOF; c = getc(src->f)) {
        if (c == '\0') {
            source_fail(src, "a NUL byte is not text");
            return NULL;
        }
        if (c != '\n' && n >= cap - 2) {
            source_fail(src, "line too long (the limit is %d bytes)", cap - 2);
            return NULL;
        }
        buf[n++] = (char)c;
        if (c == '\n') break;
    }
    if (ferror(src->f)) {
        src->read_errno = errno;
        return NULL;
    }
    buf[n] = '\0';
    return line_welcome(src, buf) ? buf : NULL;
}

/* inih's handler: one `option = value`. */
static int on_option(void *user, const char *section, const char *name, const char *value)
{
    struct config_source *src = user;
    char why[512];
    if (apply(src->cfg, name, value, true, why, sizeof why) == 0) return 1;
    source_fail(src, "%s", why);
    return 0;
}

int rd_config_read(struct rd_agent_config *cfg, FILE *f, const char *path, char *err, size_t errlen)
{
    struct config_source src = {.f = f, .path = path, .cfg = cfg, .err = err, .errlen = errlen};
    set_ini_format();
    int rc = ini_parse_stream(next_line, &src, on_option, &src);
    if (src.failed) return RD_EINVAL;
    if (src.read_errno) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(src.read_errno));
        return RD_EINVAL;
    }
    if (rc != 0) { /* inih refused line rc: no '=' before an inline comment */
        src.lineno = rc;
        source_fail(&src, "expected 'option = value'");
        return RD_EINVAL;
    }
    return 0;
}

static int set_config(const struct option_def *o, struct rd_agent_config *cfg, const char *val,
                      char *err, size_t errlen)
{
    if (strlen(val) >= sizeof cfg->config_path)
        return refuse(o, err, errlen, "path must be 1 to %zu bytes", sizeof cfg->config_path - 1);
    strcpy(FIELD(char, cfg, o), val);
    FILE *f = fopen(val, "r");
    if (!f) {
        snprintf(err, errlen, "--%s %s: %s", o->name, val, strerror(errno));
        return RD_EINVAL;
    }
    /* kept for INFO: absolute, so it names the file whatever the reader's directory */
    char *abs = realpath(val, NULL);
    snprintf(FIELD(char, cfg, o), sizeof cfg->config_path, "%s", abs ? abs : val);
    free(abs);
    int rc = rd_config_read(cfg, f, val, err, errlen);
    fclose(f);
    return rc;
}

/* Resolves the text of --bind or --advertise into `out`. */
static int resolve(const char *flag, const char *text, int default_port, int passive,
                   struct rd_addr *out, char *err, size_t errlen)
{
    char why[128];
    if (rd_dns_resolve_now(text, default_port, passive, out, why, sizeof why) < 0) {
        snprintf(err, errlen, "--%s %s: %s", flag, text, why);
        return RD_EINVAL;
    }
    return 0;
}

/* What needs every option first: the host name as default name, and (when asked: they
 * may take a DNS query) the addresses. */
static int finish(struct rd_agent_config *cfg, bool resolve_addrs, char *err, size_t errlen)
{
    if (!cfg->name[0]) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        if (!rd_name_valid(host, strlen(host))) {
            snprintf(err, errlen, "host name '%s' is not a valid member name: use --name", host);
            return RD_EINVAL;
        }
        strcpy(cfg->name, host);
    }
    cfg->vnodes_set = cfg->vnodes != 0;
    if (!cfg->vnodes_set) cfg->vnodes = RD_RING_VNODES_DEFAULT;
    if (cfg->weight > cfg->max_weight) {
        snprintf(
            err, errlen,
            "--weight %u.%03u is above --max-weight %u.%03u: raise --max-weight on every agent",
            cfg->weight / RD_WEIGHT_ONE, cfg->weight % RD_WEIGHT_ONE,
            cfg->max_weight / RD_WEIGHT_ONE, cfg->max_weight % RD_WEIGHT_ONE);
        return RD_EINVAL;
    }
    if (cfg->ring_mode_set && cfg->ring_mode == RD_RING_MODE_KETAMA &&
        rd_config_ketama_weights(cfg, err, errlen) < 0)
        return RD_EINVAL;
    if (!resolve_addrs) return 0;
    if (resolve("bind", cfg->bind_text, RD_DEFAULT_PORT, 1, &cfg->bind, err, errlen) < 0)
        return RD_EINVAL;
    if (cfg->advertise_text[0]) {
        if (resolve("advertise", cfg->advertise_text, cfg->bind.port, 0, &cfg->advertise, err,
                    errlen) < 0)
            return RD_EINVAL;
        if (rd_addr_is_any(&cfg->advertise)) {
            snprintf(err, errlen, "--advertise: %s cannot be reached by others",
                     cfg->advertise_text);
            return RD_EINVAL;
        }
    } else {
        cfg->advertise = cfg->bind; /* an unspecified bind is resolved by the agent */
    }
    if (cfg->metrics_text[0] &&
        resolve("metrics-addr", cfg->metrics_text, 0, 1, &cfg->metrics, err, errlen) < 0)
        return RD_EINVAL;
    return 0;
}

static int parse(struct rd_agent_config *cfg, int argc, char **argv, bool resolve_addrs, char *err,
                 size_t errlen)
{
    if (rd_config_defaults(cfg, err, errlen) < 0) return RD_EINVAL;
    cfg->argc = argc;
    cfg->argv = argv;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            rd_config_usage(stdout);
            return 1;
        }
        if (strncmp(a, "--", 2) != 0) {
            snprintf(err, errlen, "unexpected argument '%s' (see ringd agent --help)", a);
            return RD_EINVAL;
        }
        char name[64];
        const char *val;
        const char *eq = strchr(a, '=');
        if (eq) { /* --opt=value */
            size_t n = (size_t)(eq - a - 2);
            if (n >= sizeof name) n = sizeof name - 1;
            memcpy(name, a + 2, n);
            name[n] = '\0';
            val = eq + 1;
        } else {
            snprintf(name, sizeof name, "%s", a + 2);
            const struct option_def *o = find_option(name);
            if (o && o->kind == OPT_FLAG) {
                if (apply(cfg, name, "true", false, err, errlen) < 0) return RD_EINVAL;
                continue;
            }
            if (i + 1 >= argc) {
                snprintf(err, errlen,
                         find_option(name) ? "--%s needs a value" : "unknown option --%s", name);
                return RD_EINVAL;
            }
            val = argv[++i];
        }
        if (apply(cfg, name, val, false, err, errlen) < 0) return RD_EINVAL;
    }
    return finish(cfg, resolve_addrs, err, errlen);
}

int rd_config_parse(struct rd_agent_config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    return parse(cfg, argc, argv, true, err, errlen);
}

int rd_config_reparse(struct rd_agent_config *cfg, int argc, char **argv, char *err, size_t errlen)
{
    return parse(cfg, argc, argv, false, err, errlen);
}

static bool is_loopback(const struct rd_addr *a)
{
    static const uint8_t v6_loopback[16] = {[15] = 1};
    return (a->family == 4 && a->ip[0] == 127) ||
           (a->family == 6 && memcmp(a->ip, v6_loopback, 16) == 0);
}

/*
 * The two verify switches. Without a keyring there is nothing to verify or seal with, so
 * either one given is a mistake worth one line. Sending in the clear while refusing the
 * clear is refused too, although memberlist allows it: such an agent drops what every
 * peer in its own step of a migration sends (off/off before, off/on after) and is heard
 * only by agents that accept plain gossip; no step of turning encryption on or off passes
 * through it, so it is only ever a typo that would cut an agent off.
 */
static int check_switches(struct rd_agent_config *cfg, char *err, size_t errlen)
{
    enum rd_switch *in = &cfg->gossip_verify_incoming, *out = &cfg->gossip_verify_outgoing;
    if (!cfg->keyring_path[0] && (*in != RD_SWITCH_UNSET || *out != RD_SWITCH_UNSET)) {
        snprintf(err, errlen, "--gossip-verify-%s means nothing without --keyring-file PATH",
                 *in != RD_SWITCH_UNSET ? "incoming" : "outgoing");
        return RD_EINVAL;
    }
    if (*in == RD_SWITCH_UNSET) *in = RD_SWITCH_ON;
    if (*out == RD_SWITCH_UNSET) *out = RD_SWITCH_ON;
    if (*out == RD_SWITCH_OFF && *in == RD_SWITCH_ON) {
        snprintf(err, errlen,
                 "--gossip-verify-outgoing off needs --gossip-verify-incoming off: an agent "
                 "that sends in the clear but refuses it cannot hear its peers");
        return RD_EINVAL;
    }
    return 0;
}

int rd_config_secure(struct rd_agent_config *cfg, char *err, size_t errlen)
{
    if (check_switches(cfg, err, errlen) < 0) return RD_EINVAL;
    if (cfg->keyring_path[0]) return rd_keyring_load(&cfg->keyring, cfg->keyring_path, err, errlen);
    if (!cfg->insecure_gossip && (!is_loopback(&cfg->bind) || !is_loopback(&cfg->advertise))) {
        snprintf(err, errlen,
                 "gossip on a non-loopback address needs --keyring-file PATH (ringd keygen "
                 "makes a key), or --insecure-gossip to send it in the clear");
        return RD_EINVAL;
    }
    return 0;
}
