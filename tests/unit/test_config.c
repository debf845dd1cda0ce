/*
 * test_config.c — `ringd agent` options (agent/config.h): flags, config files, --help.
 *
 * Cases are rows: arguments (or a config file's text) and either what the parsed settings
 * must contain or the exact one-line error. Settings are compared through describe(), one
 * line naming every field, so a case states only what it is about. In config-file cases
 * "{}" in the expected text stands for the temporary file's path.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "rd_err.h"

/* ------------------------------------------------------------------ helpers */

#define MAXARGS 40

/* Every field of a config as one line. */
static const char *describe(const struct rd_agent_config *c)
{
    static char out[16384];
    char joins[RD_JOIN_MAX * (RD_HOSTPORT_MAX + 1) + 1] = "";
    for (int i = 0; i < c->njoins; i++) {
        if (i) strcat(joins, " ");
        strcat(joins, c->joins[i]);
    }
    snprintf(out, sizeof out,
             "name=%s bind=%s port=%u advertise=%s adv_port=%u joins=[%s] socket=%s mode=%o "
             "vnodes=%u weight=%u zone=%s tags=%s log=%d/%d seed=%llu verify=%d/%d profile=%s "
             "config=%s metrics=%s/%u ring=%u/%d",
             c->name, c->bind_text, c->bind.port, c->advertise_text, c->advertise.port, joins,
             c->socket_path, c->socket_mode, (unsigned)c->vnodes, (unsigned)c->weight, c->zone,
             c->tags, (int)c->log_format, (int)c->log_level, (unsigned long long)c->seed,
             (int)c->gossip_verify_incoming, (int)c->gossip_verify_outgoing,
             rd_swim_profile_name(c->profile), c->config_path, c->metrics_text, c->metrics.port,
             c->ring_mode, (int)c->ring_mode_set);
    return out;
}

/* Parses "agent --name t1" followed by args (NULL-terminated). */
static int parse(struct rd_agent_config *cfg, const char *const *args, char *err, size_t errlen)
{
    char *argv[MAXARGS + 3] = {"agent", "--name", "t1"};
    int argc = 3;
    for (; args[argc - 3]; argc++) {
        assert_true(argc < MAXARGS + 2);
        argv[argc] = (char *)args[argc - 3];
    }
    err[0] = '\0';
    return rd_config_parse(cfg, argc, argv, err, errlen);
}

/* Replaces each "{}" in pattern with path. */
static const char *expand(const char *pattern, const char *path)
{
    static char out[1024];
    out[0] = '\0';
    const char *p = pattern, *at;
    while ((at = strstr(p, "{}"))) {
        strncat(out, p, (size_t)(at - p));
        strcat(out, path);
        p = at + 2;
    }
    strcat(out, p);
    return out;
}

/* A temporary file holding text (len bytes, NULs and all); its path is returned. */
static const char *temp_file(const char *text, size_t len)
{
    static char path[64];
    strcpy(path, "/tmp/test_config.XXXXXX");
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, len), (ssize_t)len);
    close(fd);
    return path;
}

/* want: a piece of describe() the result must contain, or the exact error. */
static void expect(int rc, const struct rd_agent_config *cfg, const char *err, bool fails,
                   const char *want)
{
    if (fails) {
        assert_int_equal(rc, RD_EINVAL);
        assert_string_equal(err, want);
    } else {
        if (rc != 0) fail_msg("unexpected error: %s", err);
        const char *got = describe(cfg);
        if (!strstr(got, want)) fail_msg("'%s' not in '%s'", want, got);
    }
}

/* ------------------------------------------------------------------ flags */

struct flag_case {
    const char *args[12];
    bool fails;
    const char *want;
};

static const struct flag_case flag_cases[] = {
    /* defaults, all of them */
    {{NULL},
     false,
     "name=t1 bind=0.0.0.0:7946 port=7946 advertise= adv_port=7946 joins=[] "
     "socket=/run/ringd/ringd.sock mode=660 vnodes=512 weight=1000 zone= tags= log=0/1 seed=0 "
     "verify=0/0 profile=lan config= metrics=/0 ring=0/0"},
    /* valid values, both spellings */
    {{"--ring", "ketama"}, false, "ring=1/1"},
    {{"--ring=ringd"}, false, "ring=0/1"},
    {{"--ring", "ketama", "--weight", "3", "--max-weight", "7"}, false, "weight=3000 "},
    {{"--ring", "ketama", "--weight", "1.5"},
     true,
     "--weight 1.500 is not a whole number: a ketama ring takes whole weights, as libmemcached "
     "does"},
    {{"--weight", "0.001", "--ring", "ketama"},
     true,
     "--weight 0.001 is not a whole number: a ketama ring takes whole weights, as libmemcached "
     "does"},
    {{"--ring", "ketama", "--max-weight", "2.5"},
     true,
     "--max-weight 2.500 is not a whole number: a ketama ring takes whole weights, as "
     "libmemcached does"},
    {{"--ring", "ringd", "--weight", "1.5"}, false, "weight=1500 "},
    {{"--ring", "KETAMA"}, true, "--ring: 'KETAMA' is not ringd or ketama"},
    {{"--ring", ""}, true, "--ring: '' is not ringd or ketama"},
    {{"--name", "web-1.eu:a@b_c"}, false, "name=web-1.eu:a@b_c "},
    {{"--bind", "127.0.0.1:9000"}, false, "bind=127.0.0.1:9000 port=9000 advertise= adv_port=9000"},
    {{"--bind=[::1]:9001"}, false, "bind=[::1]:9001 port=9001"},
    {{"--advertise", "10.1.2.3"}, false, "advertise=10.1.2.3 adv_port=7946"},
    {{"--join", "10.0.0.1", "--join=[::1]:7000", "--join", "seed.example:1"},
     false,
     "joins=[10.0.0.1 [::1]:7000 seed.example:1]"},
    {{"--socket", "/tmp/a.sock", "--socket-mode=0600"}, false, "socket=/tmp/a.sock mode=600 "},
    {{"--vnodes", "1"}, false, "vnodes=1 "},
    {{"--vnodes=4096"}, false, "vnodes=4096 "},
    {{"--weight", "0.001"}, false, "weight=1 "},
    {{"--weight=2.5"}, false, "weight=2500 "},
    {{"--zone", "eu-west-1"}, false, "zone=eu-west-1 "},
    {{"--tag", "role=db", "--tag=path=/a/b"}, false, "tags=role=db,path=/a/b "},
    {{"--log-format", "json", "--log-level=debug"}, false, "log=1/0 "},
    {{"--log-level", "error"}, false, "log=0/3 "},
    {{"--seed", "18446744073709551615"}, false, "seed=18446744073709551615"},
    /* on|off switches: given or not is kept (0 unset, 1 on, 2 off) for rd_config_secure */
    {{"--gossip-verify-incoming", "off"}, false, "verify=2/0"},
    {{"--gossip-verify-incoming=on", "--gossip-verify-outgoing=off"}, false, "verify=1/2"},
    {{"--profile", "wan"}, false, "profile=wan "},
    {{"--profile=local"}, false, "profile=local "},
    {{"--profile", "wan", "--profile", "lan"}, false, "profile=lan "},
    {{"--metrics-addr", "127.0.0.1:9101"}, false, "metrics=127.0.0.1:9101/9101"},
    /* given twice: the last wins */
    {{"--vnodes", "5", "--vnodes=9"}, false, "vnodes=9 "},
    {{"--name", "a", "--name", "b"}, false, "name=b "},
    {{"--zone", "x", "--zone="}, false, "zone= "},
    /* invalid values */
    {{"--name", "bad name"},
     true,
     "--name: 'bad name' is not a valid name (1-64 of A-Z a-z 0-9 . _ - : @)"},
    {{"--name="}, true, "--name: '' is not a valid name (1-64 of A-Z a-z 0-9 . _ - : @)"},
    {{"--bind", "1.2.3.4:99999"},
     true,
     "--bind 1.2.3.4:99999: port must be a number from 1 to 65535"},
    {{"--advertise", "0.0.0.0"}, true, "--advertise: 0.0.0.0 cannot be reached by others"},
    {{"--socket", ""}, true, "--socket: path must be 1 to 107 bytes"},
    {{"--socket-mode", "999"}, true, "--socket-mode: '999' is not an octal mode like 0660"},
    {{"--socket-mode", "0660x"}, true, "--socket-mode: '0660x' is not an octal mode like 0660"},
    {{"--admin-group", "a:b"}, true, "--admin-group: 'a:b' is not a group name or gid"},
    {{"--vnodes", "0"}, true, "--vnodes: '0' is not a number from 1 to 4096"},
    {{"--vnodes", "4097"}, true, "--vnodes: '4097' is not a number from 1 to 4096"},
    {{"--vnodes", ""}, true, "--vnodes: '' is not a number from 1 to 4096"},
    {{"--weight", "0"}, true, "--weight: '0' is not a weight from 0.001 to 100"},
    {{"--weight", "100.001"}, true, "--weight: '100.001' is not a weight from 0.001 to 100"},
    {{"--max-weight", "0"}, true, "--max-weight: '0' is not a weight from 0.001 to 100"},
    {{"--weight", "2", "--max-weight", "1.5"},
     true,
     "--weight 2.000 is above --max-weight 1.500: raise --max-weight on every agent"},
    {{"--zone", "a b"},
     true,
     "--zone: 'a b' is not a valid zone (up to 32 of A-Z a-z 0-9 . _ - : @)"},
    {{"--tag", "nokv"}, true, "--tag: 'nokv' is not KEY=VALUE (A-Z a-z 0-9 . _ - : @ /)"},
    {{"--tag", "a=1,b=2"}, true, "--tag: 'a=1,b=2' is not KEY=VALUE (A-Z a-z 0-9 . _ - : @ /)"},
    {{"--log-format", "xml"}, true, "--log-format: 'xml' is not logfmt or json"},
    {{"--log-level", "trace"}, true, "--log-level: 'trace' is not debug, info, warn or error"},
    {{"--seed", "x"}, true, "--seed: 'x' is not a number"},
    {{"--profile", "LAN"}, true, "--profile: 'LAN' is not lan, wan or local"},
    {{"--metrics-addr", "127.0.0.1"}, true, "--metrics-addr 127.0.0.1: expected HOST:PORT"},
    {{"--profile="}, true, "--profile: '' is not lan, wan or local"},
    {{"--profile", "lan "}, true, "--profile: 'lan ' is not lan, wan or local"},
    {{"--seed", "1 "}, true, "--seed: '1 ' is not a number"},
    {{"--gossip-verify-incoming", "true"},
     true,
     "--gossip-verify-incoming: 'true' is not on or off"},
    {{"--gossip-verify-outgoing="}, true, "--gossip-verify-outgoing: '' is not on or off"},
    {{"--gossip-verify-outgoing", "OFF"}, true, "--gossip-verify-outgoing: 'OFF' is not on or off"},
    {{"--config", "/nonexistent/ringd.conf"},
     true,
     "--config /nonexistent/ringd.conf: No such file or directory"},
    /* missing value, unknown options, stray words */
    {{"--vnodes"}, true, "--vnodes needs a value"},
    {{"--config"}, true, "--config needs a value"},
    {{"--nope"}, true, "unknown option --nope"},
    {{"--nope", "x"}, true, "unknown option --nope (see ringd agent --help)"},
    {{"--nope=x"}, true, "unknown option --nope (see ringd agent --help)"},
    {{"--=x"}, true, "unknown option -- (see ringd agent --help)"},
    {{"agent"}, true, "unexpected argument 'agent' (see ringd agent --help)"},
    {{"-v"}, true, "unexpected argument '-v' (see ringd agent --help)"},
    /* the first bad argument is the one reported */
    {{"--vnodes", "0", "--nope"}, true, "--vnodes: '0' is not a number from 1 to 4096"},
};

static void test_config_flags(void **state)
{
    for (size_t i = 0; i < sizeof flag_cases / sizeof flag_cases[0]; i++) {
        const struct flag_case *c = &flag_cases[i];
        struct rd_agent_config cfg;
        char err[512];
        int rc = parse(&cfg, c->args, err, sizeof err);
        print_message("flags #%zu: %s %s\n", i, c->args[0] ? c->args[0] : "(none)", c->want);
        expect(rc, &cfg, err, c->fails, c->want);
    }
}

/* --join-timeout: seconds, 0 (the default) for never, up to a day; nothing else. */
static void test_config_join_timeout(void **state)
{
    static const struct {
        const char *args[3];
        int rc;
        uint32_t want; /* or the error */
        const char *err;
    } rows[] = {
        {{NULL}, 0, 0, NULL},
        {{"--join-timeout", "2"}, 0, 2, NULL},
        {{"--join-timeout=86400"}, 0, 86400, NULL},
        {{"--join-timeout", "86401"},
         RD_EINVAL,
         0,
         "--join-timeout: '86401' is not a number of seconds from 0 to 86400"},
        {{"--join-timeout", "-1"},
         RD_EINVAL,
         0,
         "--join-timeout: '-1' is not a number of seconds from 0 to 86400"},
        {{"--join-timeout", "2s"},
         RD_EINVAL,
         0,
         "--join-timeout: '2s' is not a number of seconds from 0 to 86400"},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        struct rd_agent_config cfg;
        char err[512] = "";
        print_message("join-timeout #%zu\n", i);
        assert_int_equal(parse(&cfg, rows[i].args, err, sizeof err), rows[i].rc);
        if (rows[i].rc == 0)
            assert_int_equal(cfg.join_timeout_s, rows[i].want);
        else
            assert_string_equal(err, rows[i].err);
    }
}

/* An address longer than its field is refused, never copied: --bind and --advertise keep
 * their text until every option is known, so the length is all that guards the field. */
static void test_config_address_too_long(void **state)
{
    static char addr[RD_HOSTPORT_MAX + 2];
    memset(addr, 'a', sizeof addr - 1);
    static const char *const flags[] = {"--bind", "--advertise", "--join"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const char *args[] = {flags[i], addr, NULL};
        struct rd_agent_config cfg;
        char err[512], want[64];
        assert_int_equal(parse(&cfg, args, err, sizeof err), RD_EINVAL);
        snprintf(want, sizeof want, "%s: address too long", flags[i]);
        if (strcmp(flags[i], "--join") == 0) /* split says why, after the value */
            snprintf(want, sizeof want, ": address too long");
        assert_non_null(strstr(err, want));
    }
    addr[RD_HOSTPORT_MAX] = '\0'; /* exactly the limit: kept whole */
    const char *args[] = {"--advertise", addr, NULL};
    struct rd_agent_config cfg;
    char err[512];
    parse(&cfg, args, err, sizeof err); /* resolving it fails later; the text fits */
    assert_int_equal(strlen(cfg.advertise_text), RD_HOSTPORT_MAX);
}

static void test_config_join_and_tag_limits(void **state)
{
    const char *args[MAXARGS + 1] = {NULL};
    int n = 0;
    for (int i = 0; i <= RD_JOIN_MAX; i++) {
        args[n++] = "--join";
        args[n++] = "10.0.0.1:7946";
    }
    struct rd_agent_config cfg;
    char err[512];
    assert_int_equal(parse(&cfg, args, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, "--join: at most 16 seeds");

    /* tags are joined with ',' and must fit RD_TAGS_MAX together */
    static char tag[128];
    memset(tag, 'v', sizeof tag - 1);
    memcpy(tag, "k=", 2);
    const char *tags[] = {"--tag", tag, "--tag", tag, NULL};
    assert_int_equal(parse(&cfg, tags, err, sizeof err), 0);
    assert_int_equal(strlen(cfg.tags), 2 * 127 + 1);
    const char *more[] = {"--tag", tag, "--tag", tag, "--tag", "a=b", NULL};
    assert_int_equal(parse(&cfg, more, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, "--tag: all tags together must fit in 255 bytes");
}

/* ------------------------------------------------------------------ --help */

static void test_config_help(void **state)
{
    /* --help anywhere returns 1 and stops before later arguments are looked at */
    struct rd_agent_config cfg;
    char err[64];
    const char *args[] = {"--vnodes", "7", "-h", "--nope", NULL};
    assert_int_equal(parse(&cfg, args, err, sizeof err), 1);
}

static void test_config_help_names_every_option_once(void **state)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    rd_config_usage(f);
    fclose(f);

    /* the options README.md documents, each on exactly one line of its own */
    static const char *const documented[] = {
        "name",
        "bind",
        "advertise",
        "join",
        "socket",
        "socket-mode",
        "admin-group",
        "vnodes",
        "ring",
        "weight",
        "max-weight",
        "zone",
        "tag",
        "log-format",
        "log-level",
        "config",
        "seed",
        "keyring-file",
        "cluster",
        "insecure-gossip",
        "gossip-verify-incoming",
        "gossip-verify-outgoing",
        "on-event",
        "event-timeout",
        "join-timeout",
        "state-dir",
        "dns-server",
        "rejoin",
        "profile",
        "metrics-addr",
        "probe-refusals",
    };
    size_t ndoc = sizeof documented / sizeof documented[0];
    for (size_t i = 0; i < ndoc; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "\n  --%s ", documented[i]);
        const char *at = strstr(text, needle);
        if (!at) fail_msg("--help does not name --%s:\n%s", documented[i], text);
        if (strstr(at + 1, needle)) fail_msg("--help names --%s twice:\n%s", documented[i], text);
    }

    /* and nothing else: every "  --X" line is a documented option the parser knows */
    size_t nflags = 0;
    for (const char *p = strstr(text, "\n  --"); p; p = strstr(p + 1, "\n  --")) {
        char name[64];
        assert_int_equal(sscanf(p + 5, "%63[a-z-]", name), 1);
        nflags++;
        bool known = false;
        for (size_t i = 0; i < ndoc; i++)
            known |= strcmp(name, documented[i]) == 0;
        if (!known) fail_msg("--help names an undocumented --%s", name);
        /* only --join, --tag and --on-event add up; --help says so */
        size_t line = strcspn(p + 1, "\n");
        bool says = memmem(p + 1, line, "repeatable", 10) != NULL;
        bool many =
            strcmp(name, "join") == 0 || strcmp(name, "tag") == 0 || strcmp(name, "on-event") == 0;
        if (says != many)
            fail_msg("--%s: 'repeatable' is %s --help", name, says ? "wrongly in" : "missing from");
        struct rd_agent_config cfg;
        char flag[80], err[128];
        snprintf(flag, sizeof flag, "--%s", name);
        const char *args[] = {flag, NULL};
        if (strcmp(name, "insecure-gossip") == 0) { /* the one switch: needs no value */
            assert_int_equal(parse(&cfg, args, err, sizeof err), 0);
            assert_true(cfg.insecure_gossip);
            continue;
        }
        if (strcmp(name, "rejoin") == 0) { /* a switch too */
            assert_int_equal(parse(&cfg, args, err, sizeof err), 0);
            assert_true(cfg.rejoin);
            continue;
        }
        assert_int_equal(parse(&cfg, args, err, sizeof err), RD_EINVAL);
        char want[128];
        snprintf(want, sizeof want, "--%s needs a value", name);
        assert_string_equal(err, want);
    }
    assert_int_equal(nflags, ndoc);
    assert_non_null(strstr(text, "\n  -h, --help "));
    free(text);
}

/* ------------------------------------------------------------------ config files */

struct file_case {
    const char *text;
    size_t len;
    bool fails;
    const char *want; /* "{}" is the file's path */
};

#define T(s) (s), (sizeof(s) - 1)

static const struct file_case file_cases[] = {
    {T(""), false, "vnodes=512 "},
    {T("vnodes = 7"), false, "vnodes=7 "}, /* no '\n' at the end */
    {T("ring = ketama\nweight = 2\n"), false, "ring=1/1"},
    {T("# comment\n; comment too\n\n   \n\t\nvnodes = 7\n"), false, "vnodes=7 "},
    {T("vnodes = 7 # seven\nweight = 2 ; two\n"), false, "vnodes=7 weight=2000 "},
    {T("  vnodes = 7\n\tseed=3\n"), false, "vnodes=7 weight=1000 zone= tags= log=0/1 seed=3"},
    {T("vnodes=7\nseed  =  3  \n"), false, "seed=3"},
    {T("\xEF\xBB\xBFvnodes = 7\n"), false, "vnodes=7 "},
    {T("vnodes = 7\r\nseed = 3\r\n"), false, "vnodes=7 weight=1000 zone= tags= log=0/1 seed=3"},
    {T("vnodes = 5\nvnodes = 6\n"), false, "vnodes=6 "},
    {T("gossip-verify-incoming = off\ngossip-verify-outgoing = off\n"), false, "verify=2/2"},
    {T("gossip-verify-incoming = no\n"), true,
     "{}:1: --gossip-verify-incoming: 'no' is not on or off"},
    {T("tag = a=1\ntag = b=2\njoin = 10.0.0.1\njoin = 10.0.0.2:7000\n"), false,
     "joins=[10.0.0.1 10.0.0.2:7000] socket=/run/ringd/ringd.sock mode=660 vnodes=512 "
     "weight=1000 zone= tags=a=1,b=2 "},
    {T("bind = [::1]:9000\nadvertise = [::1]\n"), false,
     "bind=[::1]:9000 port=9000 advertise=[::1] adv_port=9000"},
    {T("vnodes = 7\nvnodes 8\n"), true, "{}:2: expected 'option = value'"},
    {T("bind 127.0.0.1:9000\n"), true, "{}:1: expected 'option = value'"},
    {T("vnodes: 8\n"), true, "{}:1: expected 'option = value'"},
    {T("vnodes ; x = 5\n"), true, "{}:1: expected 'option = value'"},
    {T("vnodes = 7\n[agent]\nseed = 1\n"), true,
     "{}:2: sections are not supported: write 'option = value' lines only"},
    {T("\xEF\xBB\xBF[agent]\n"), true,
     "{}:1: sections are not supported: write 'option = value' lines only"},
    {T("# x\nfrob = 1\n"), true, "{}:2: unknown option --frob (see ringd agent --help)"},
    {T("= 1\n"), true, "{}:1: unknown option -- (see ringd agent --help)"},
    {T("help = 1\n"), true, "{}:1: unknown option --help (see ringd agent --help)"},
    {T("\n\nvnodes = 0\n"), true, "{}:3: --vnodes: '0' is not a number from 1 to 4096"},
    {T("vnodes = 7#c\n"), true, "{}:1: --vnodes: '7#c' is not a number from 1 to 4096"},
    {T("name =\n"), true, "{}:1: --name: '' is not a valid name (1-64 of A-Z a-z 0-9 . _ - : @)"},
    {T("config = /etc/hosts\n"), true, "{}:1: --config: config files cannot include others"},
    {T("vnodes = 7\nseed = 1\0 2\n"), true, "{}:2: a NUL byte is not text"},
    {T("bind = 1.2.3.4:99999\n"), true,
     "--bind 1.2.3.4:99999: port must be a number from 1 to 65535"},
};

static void test_config_files(void **state)
{
    for (size_t i = 0; i < sizeof file_cases / sizeof file_cases[0]; i++) {
        const struct file_case *c = &file_cases[i];
        const char *path = temp_file(c->text, c->len);
        const char *args[] = {"--config", path, NULL};
        struct rd_agent_config cfg;
        char err[512];
        int rc = parse(&cfg, args, err, sizeof err);
        print_message("file #%zu: %s\n", i, c->want);
        expect(rc, &cfg, err, c->fails, expand(c->want, path));
        unlink(path);
    }
}

/* A file of `before` lines, one line of n bytes (before its '\n'), then "vnodes = 9". */
static const char *file_with_line(const char *before, const char *start, size_t n)
{
    static char text[4096];
    size_t b = strlen(before);
    memcpy(text, before, b);
    memset(text + b, 'x', n);
    memcpy(text + b, start, strlen(start));
    strcpy(text + b + n, "\nvnodes = 9\n");
    return temp_file(text, strlen(text));
}

static void test_config_long_lines(void **state)
{
    struct rd_agent_config cfg;
    char err[512];
    const char *args[] = {"--config", NULL, NULL};

    /* 1,022 bytes is the longest line */
    args[1] = file_with_line("", "# ", 1022);
    assert_int_equal(parse(&cfg, args, err, sizeof err), 0);
    assert_int_equal(cfg.vnodes, 9);
    unlink(args[1]);

    /* one more is refused at its own line, not cut into two */
    args[1] = file_with_line("seed = 1\n", "# ", 1023);
    assert_int_equal(parse(&cfg, args, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, expand("{}:2: line too long (the limit is 1022 bytes)", args[1]));
    unlink(args[1]);

    /* a 2,000-byte option line: its tail is not read as the next line */
    args[1] = file_with_line("vnodes = 7\n", "tag = a=", 2000);
    assert_int_equal(parse(&cfg, args, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, expand("{}:2: line too long (the limit is 1022 bytes)", args[1]));
    unlink(args[1]);

    /* ... nor when its tail looks like an option */
    static char text[2100];
    memset(text, ' ', sizeof text);
    memcpy(text, "# ", 2);
    strcpy(text + 1030, "vnodes = 3\n");
    args[1] = temp_file(text, strlen(text));
    assert_int_equal(parse(&cfg, args, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, expand("{}:1: line too long (the limit is 1022 bytes)", args[1]));
    unlink(args[1]);
}

/* File and flags apply in order: the last wins, repeatable ones add up. */
static void test_config_file_and_flags_in_order(void **state)
{
    const char *path = temp_file(T("vnodes = 4\ntag = b=2\njoin = 10.0.0.2\n"));
    struct rd_agent_config cfg;
    char err[512];

    const char *before[] = {"--vnodes", "3", "--config", path, NULL};
    assert_int_equal(parse(&cfg, before, err, sizeof err), 0);
    assert_int_equal(cfg.vnodes, 4);

    const char *after[] = {"--config", path, "--vnodes", "3", NULL};
    assert_int_equal(parse(&cfg, after, err, sizeof err), 0);
    assert_int_equal(cfg.vnodes, 3);

    const char *lists[] = {"--tag", "a=1", "--join",   "10.0.0.1", "--config", path,
                           "--tag", "c=3", "--config", path,       NULL};
    assert_int_equal(parse(&cfg, lists, err, sizeof err), 0);
    assert_string_equal(cfg.tags, "a=1,b=2,c=3,b=2");
    assert_int_equal(cfg.njoins, 3);
    assert_string_equal(cfg.joins[2], "10.0.0.2");
    unlink(path);

    const char *dir[] = {"--config", "/tmp", NULL};
    assert_int_equal(parse(&cfg, dir, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, "cannot read /tmp: Is a directory");
}

/* rd_config_read, the path --config and the fuzz target share: text from memory. */
static void test_config_read_from_memory(void **state)
{
    static char text[] = "vnodes = 7\nzone = z1\nseed = x\nweight = 3\n";
    struct rd_agent_config cfg;
    char err[256];
    assert_int_equal(rd_config_defaults(&cfg, err, sizeof err), 0);
    FILE *f = fmemopen(text, strlen(text), "r");
    assert_non_null(f);
    assert_int_equal(rd_config_read(&cfg, f, "mem.conf", err, sizeof err), RD_EINVAL);
    fclose(f);
    assert_string_equal(err, "mem.conf:3: --seed: 'x' is not a number");
    /* lines before the bad one stay applied, later ones are not read */
    assert_int_equal(cfg.vnodes, 7);
    assert_string_equal(cfg.zone, "z1");
    assert_int_equal(cfg.weight, 1000);
}

/* ------------------------------------------------------------------ event handlers */

static void test_config_on_event(void **state)
{
    struct rd_agent_config cfg;
    char err[256];
    const char *ok[] = {"--on-event", "/bin/h", "--on-event=member-join,ring=/bin/j x=1",
                        "--event-timeout=3", NULL};
    assert_int_equal(parse(&cfg, ok, err, sizeof err), 0);
    assert_int_equal(cfg.non_event, 2);
    assert_string_equal(cfg.on_event[0], "/bin/h");
    assert_string_equal(cfg.on_event[1], "member-join,ring=/bin/j x=1");
    assert_int_equal(cfg.event_timeout_s, 3);
    const char *none[] = {NULL};
    assert_int_equal(parse(&cfg, none, err, sizeof err), 0);
    assert_int_equal(cfg.non_event, 0);
    assert_int_equal(cfg.event_timeout_s, 30);

    static const struct {
        const char *args[4];
        const char *want;
    } bad[] = {
        {{"--on-event", "member-joined=/bin/h"},
         "--on-event: 'member-joined' is not an event (member-join, member-leave, member-failed, "
         "member-update, ring)"},
        {{"--on-event", "ring="}, "--on-event: 'ring=' has no command"},
        {{"--event-timeout", "0"},
         "--event-timeout: '0' is not a number of seconds from 1 to 86400"},
        {{"--event-timeout", "86401"},
         "--event-timeout: '86401' is not a number of seconds from 1 to 86400"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(parse(&cfg, bad[i].args, err, sizeof err), RD_EINVAL);
        assert_string_equal(err, bad[i].want);
    }
    /* bounded: RD_HOOKS_MAX entries, RD_HOOK_SPEC_MAX bytes each */
    const char *many[2 * RD_HOOKS_MAX + 3] = {NULL};
    for (int i = 0; i <= RD_HOOKS_MAX; i++)
        many[2 * i] = "--on-event", many[2 * i + 1] = "true";
    assert_int_equal(parse(&cfg, many, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, "--on-event: at most 8 event handlers");
    many[2 * RD_HOOKS_MAX] = NULL;
    assert_int_equal(parse(&cfg, many, err, sizeof err), 0);
    static char longer[RD_HOOK_SPEC_MAX + 2];
    memset(longer, 'x', RD_HOOK_SPEC_MAX + 1);
    const char *toolong[] = {"--on-event", longer, NULL};
    assert_int_equal(parse(&cfg, toolong, err, sizeof err), RD_EINVAL);
    assert_string_equal(err, "--on-event: longer than 1024 bytes");
    longer[RD_HOOK_SPEC_MAX] = '\0';
    assert_int_equal(parse(&cfg, toolong, err, sizeof err), 0);
}

/* Every field of a membership timing as one line. */
static const char *timing(enum rd_swim_profile p)
{
    static char out[512];
    struct rd_swim_config c;
    rd_swim_config_profile(&c, p);
    /* 16 timings and one switch: a field added to rd_swim_config must be added here too */
    assert_int_equal(sizeof c, 17 * sizeof(uint32_t));
    snprintf(out, sizeof out,
             "probe=%u/%u resends=%u indirect=%u gossip=%ux%u retransmit=%u suspicion=%u/%u/k%u "
             "sync=%u "
             "join=%u tombstone=%u reclaim=%u reconnect=%u awareness=%u refusals=%d",
             c.probe_interval_ms, c.probe_timeout_ms, c.probe_resends, c.indirect_checks,
             c.gossip_interval_ms, c.gossip_fanout, c.retransmit_mult, c.suspicion_mult,
             c.suspicion_max_mult, c.suspicion_confirmations, c.sync_interval_ms,
             c.join_retry_max_ms, c.tombstone_ms, c.reclaim_ms, c.reconnect_interval_ms,
             c.awareness_max, c.act_on_refusals);
    return out;
}

/* --profile: each name gives memberlist's set as README.md's table maps it, and lan is
 * exactly the timing every agent had before profiles existed (the simulator's too). */
static void test_config_profiles(void **state)
{
    /* what rd_swim_config_default() gave when it was the only timing */
    assert_string_equal(
        timing(RD_PROFILE_LAN),
        "probe=1000/500 resends=6 indirect=3 gossip=200x3 retransmit=4 suspicion=2/12/k2 "
        "sync=30000 join=30000 tombstone=3600000 reclaim=15000 reconnect=10000 "
        "awareness=8 refusals=1");
    struct rd_swim_config def, lan;
    rd_swim_config_default(&def);
    rd_swim_config_profile(&lan, RD_PROFILE_LAN);
    assert_memory_equal(&def, &lan, sizeof lan);
    /* DefaultWANConfig: 5 s / 3 s probes, 4 nodes every 500 ms, push-pull 60 s,
     * SuspicionMult 6: half of it, max_mult twice 6 (the same 180 s maximum), k = 6 - 2 */
    assert_string_equal(
        timing(RD_PROFILE_WAN),
        "probe=5000/3000 resends=6 indirect=3 gossip=500x4 retransmit=4 suspicion=3/12/k4 "
        "sync=60000 join=30000 tombstone=3600000 reclaim=15000 reconnect=10000 "
        "awareness=8 refusals=1");
    /* DefaultLocalConfig: 200 ms timeout, 1 indirect check, gossip every 100 ms,
     * retransmit 2, push-pull 15 s, SuspicionMult 3: min rounds up to 2, max 18 s, k 1 */
    assert_string_equal(
        timing(RD_PROFILE_LOCAL),
        "probe=1000/200 resends=6 indirect=1 gossip=100x3 retransmit=2 suspicion=2/9/k1 "
        "sync=15000 join=30000 tombstone=3600000 reclaim=15000 reconnect=10000 "
        "awareness=8 refusals=1");

    for (int p = 0; p < RD_PROFILE_COUNT; p++) {
        /* names round-trip, and the flag picks the same set */
        assert_int_equal(rd_swim_profile_parse(rd_swim_profile_name((enum rd_swim_profile)p)), p);
        struct rd_agent_config cfg;
        char err[128];
        const char *args[] = {"--profile", rd_swim_profile_name((enum rd_swim_profile)p), NULL};
        assert_int_equal(parse(&cfg, args, err, sizeof err), 0);
        assert_int_equal(cfg.profile, p);
    }
    assert_int_equal(rd_swim_profile_parse("Wan"), -1);
    assert_int_equal(rd_swim_profile_parse(""), -1);
    assert_string_equal(rd_swim_profile_name(RD_PROFILE_COUNT), "?");

    /* a profile in a config file, and the file's absolute path kept for INFO */
    char dir[] = "/tmp/test_config_dir.XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[sizeof dir + 16], cwd[4096];
    snprintf(path, sizeof path, "%s/r.conf", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("profile = local\n", f);
    fclose(f);
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(dir), 0);
    struct rd_agent_config cfg;
    char err[256];
    const char *args[] = {"--config", "r.conf", NULL};
    int rc = parse(&cfg, args, err, sizeof err);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(rc, 0);
    assert_int_equal(cfg.profile, RD_PROFILE_LOCAL);
    char *want = realpath(path, NULL);
    assert_non_null(want);
    assert_string_equal(cfg.config_path, want);
    free(want);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_flags),
        cmocka_unit_test(test_config_address_too_long),
        cmocka_unit_test(test_config_join_timeout),
        cmocka_unit_test(test_config_join_and_tag_limits),
        cmocka_unit_test(test_config_help),
        cmocka_unit_test(test_config_help_names_every_option_once),
        cmocka_unit_test(test_config_files),
        cmocka_unit_test(test_config_long_lines),
        cmocka_unit_test(test_config_file_and_flags_in_order),
        cmocka_unit_test(test_config_read_from_memory),
        cmocka_unit_test(test_config_on_event),
        cmocka_unit_test(test_config_profiles),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
