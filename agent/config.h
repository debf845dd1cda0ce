/*
 * config.h — `ringd agent` settings: flags, an optional config file, defaults, validation.
 *
 * Each option is one row of the table in config.c: name, value placeholder, kind (last
 * wins, repeatable, or reads a file), field, default and setter. Flags (`--opt value`,
 * `--opt=value`) and config-file lines (`opt = value`, read with inih) are looked up in
 * that table and stored by the row's setter; defaults are applied by the same setters from
 * the row's text; --help is printed from the rows. With no second list to keep in step,
 * the sources cannot drift; tests/unit/test_config.c checks that --help names every row
 * once. Bad input yields a one-line reason; main() exits 2 on it.
 */
#ifndef RD_AGENT_CONFIG_H
#define RD_AGENT_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "addr.h"
#include "dns.h"
#include "hooks.h"
#include "keyring.h"
#include "log.h"
#include "member.h"
#include "query.h"
#include "swim.h"

#define RD_DEFAULT_PORT   7946
#define RD_DEFAULT_SOCKET "/run/ringd/ringd.sock"
/** Seeds accepted with --join. */
#define RD_JOIN_MAX 16
/** Largest --join-timeout, in seconds (a day). */
#define RD_JOIN_TIMEOUT_MAX_S 86400
/** How long a graceful leave may take before the agent exits anyway. */
#define RD_LEAVE_TIMEOUT_MS 3000

/** An on|off option that must know whether it was given at all (unset: its default). */
enum rd_switch { RD_SWITCH_UNSET, RD_SWITCH_ON, RD_SWITCH_OFF };

struct rd_agent_config {
    char name[RD_NAME_MAX + 1];
    char bind_text[RD_HOSTPORT_MAX + 1];
    char advertise_text[RD_HOSTPORT_MAX + 1]; /* empty: derived from --bind */
    struct rd_addr bind, advertise;
    char joins[RD_JOIN_MAX][RD_HOSTPORT_MAX + 1];
    int njoins;
    char socket_path[108];
    unsigned socket_mode;
    char admin_group[RD_QUERY_GROUP_MAX + 1]; /* empty: only root and the agent's user */
    uint32_t vnodes;                          /* RD_RING_VNODES_DEFAULT unless vnodes_set */
    bool vnodes_set;     /* given by a flag or the config file: never adopted from the cluster */
    unsigned ring_mode;  /* enum rd_ring_mode; RD_RING_MODE_RINGD unless ring_mode_set */
    bool ring_mode_set;  /* --ring given: never adopted from the cluster */
    uint32_t weight;     /* fixed point, RD_WEIGHT_ONE = 1.0 */
    uint32_t max_weight; /* heavier members are placed at this weight */
    char zone[RD_ZONE_MAX + 1];
    char tags[RD_TAGS_MAX + 1];
    enum rd_log_format log_format;
    enum rd_log_level log_level;
    uint64_t seed;                 /* 0: from the clock and pid */
    char keyring_path[4096];       /* empty: no keyring, gossip in the clear */
    char cluster[RD_ZONE_MAX + 1]; /* label bound into every sealed packet */
    bool insecure_gossip;          /* allow plain gossip on a non-loopback address */
    struct rd_keyring keyring;     /* loaded by rd_config_secure() */
    /* with a keyring: refuse plain packets / seal what is sent; on unless turned off */
    enum rd_switch gossip_verify_incoming, gossip_verify_outgoing;
    enum rd_switch probe_refusals; /* act on ICMP port unreachable for probes; on unless off */
    char on_event[RD_HOOKS_MAX][RD_HOOK_SPEC_MAX + 1]; /* [FILTER=]CMD, hooks.h */
    int non_event;
    uint32_t event_timeout_s; /* a handler running longer is killed */
    uint32_t join_timeout_s;  /* with --join: exit 1 unless joined within this (0: never) */
    char state_dir[4096];     /* empty: no snapshot; same size as keyring_path (set_path) */
    bool rejoin;              /* rejoin through the snapshot even after a graceful leave */
    /* what SIGHUP parses again: the arguments (they live as long as the process) and the
     * last --config file among them ("" for none) */
    int argc;
    char **argv;
    char config_path[4096];
    enum rd_swim_profile profile;            /* timing set: lan (default), wan or local */
    char dns_server[RD_DNS_SERVERS_MAX + 1]; /* --dns-server IP:PORT[,...]; empty: the system's */
    char metrics_text[RD_HOSTPORT_MAX + 1];  /* --metrics-addr; empty: no HTTP endpoint */
    struct rd_addr metrics;                  /* ... resolved */
};

/**
 * Parses `ringd agent` arguments (argv[0] is "agent") over the defaults, then resolves the
 * addresses. Returns 0, 1 when --help was printed, or RD_EINVAL with one line in err.
 * cfg keeps argc and argv (not copied): SIGHUP parses them again, config file and all.
 */
int rd_config_parse(struct rd_agent_config *cfg, int argc, char **argv, char *err, size_t errlen);
/**
 * rd_config_parse() for SIGHUP, on the agent's loop: the same, but the addresses are left
 * unresolved (bind and advertise stay as text), since resolving may wait for DNS and they
 * cannot change without a restart anyway.
 */
int rd_config_reparse(struct rd_agent_config *cfg, int argc, char **argv, char *err, size_t errlen);
/** Sets every field to its option's default. Returns 0 (RD_EINVAL only if a default is bad). */
int rd_config_defaults(struct rd_agent_config *cfg, char *err, size_t errlen);
/**
 * Applies the options of a config file, open as `f` and named `path` in messages, over cfg:
 * what --config does, without resolving addresses. Returns 0, or RD_EINVAL with
 * "PATH:LINE: reason" in err; options before the bad line stay applied.
 */
int rd_config_read(struct rd_agent_config *cfg, FILE *f, const char *path, char *err,
                   size_t errlen);
/**
 * The gossip security checks, after rd_config_parse() and before anything is bound: loads
 * --keyring-file into cfg->keyring, and refuses plain gossip on an address that is not
 * loopback (bind or advertise) unless --insecure-gossip. --gossip-verify-incoming and
 * --gossip-verify-outgoing are refused without a keyring, and verify-outgoing off with
 * verify-incoming on; once checked, an unset one reads RD_SWITCH_ON. Returns 0 or
 * RD_EINVAL with one line in err; main() exits 2 on it, as for a bad flag.
 */
int rd_config_secure(struct rd_agent_config *cfg, char *err, size_t errlen);
/** Prints the `ringd agent` options. */
void rd_config_usage(FILE *out);
/** 0 if --weight and --max-weight are whole numbers, as a ketama ring needs; else
 *  RD_EINVAL with one line saying which is not in err. */
int rd_config_ketama_weights(const struct rd_agent_config *cfg, char *err, size_t errlen);
/** Parses a weight like "1", "0.5", "2.125" into fixed point; -1 if invalid. */
int rd_weight_parse(const char *s, uint32_t *out);

#endif
