/*
 * client.c — the client subcommands (see client.h): members, owner, assign, info, watch,
 * join, leave, keys.
 *
 * Each one connects to the agent's query socket, sends one RESP request and prints the
 * reply; watch subscribes to the agent's event channels, as any Redis client would, and
 * prints each message's JSON, as it is or read back into a line. Plain blocking POSIX I/O:
 * a CLI sends one request and waits for one answer, so an event loop would only add code.
 * Replies are parsed with the same RESP module the agent uses (rd_resp_reply_parse). The
 * filters of `members` (--status, --tag, --zone) run here over the MEMBERS reply, which
 * carries every field they test: no socket command to add, and any agent answers them.
 *
 * Errors follow the project's convention: every step returns 0 or an RD_E* code with one
 * line in the caller's err buffer; main.c prints that line and turns the code into the
 * exit status (see client.h).
 */
#include "client.h"

#include <errno.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "assign.h"
#include "buf.h"
#include "config.h"
#include "event.h"
#include "query.h"
#include "rd_err.h"
#include "resp.h"

/** How long a one-shot command waits for its reply (JOIN may resolve a host name). */
#define RD_CLIENT_TIMEOUT_S 15
/** Largest -n accepted by `owner` (the agent's OWNERS limit). */
#define RD_CLIENT_OWNERS_MAX 1000000L
/** Most positional arguments any subcommand takes: `assign` takes c and the agent's most keys, and
 * one more so that it can say that they are too many. */
#define RD_CLIENT_MAX_ARGS (2 + RD_QUERY_ASSIGN_KEYS_MAX)
/** Longest INFO value --json may print as a number (a uint64 has 20 digits). */
#define RD_CLIENT_NUMBER_MAX 31
/** Most --tag filters `members` takes. */
#define RD_CLIENT_MAX_TAGS 16

/* ============================================================ usage */

static void client_usage(void)
{
    printf("usage: ringd <command> [--socket PATH] [options]\n\n"
           "  members [--json]         members this agent knows, sorted by name:\n"
           "                           NAME ADDRESS STATUS INCARNATION WEIGHT TAGS\n"
           "                           (TAGS starts with zone=Z when the member has a zone)\n"
           "    --status S             only members in status S: alive, suspect, dead or\n"
           "                           left; repeatable or comma separated (any of them)\n"
           "    --tag K=V              only members with tag K=V; repeatable (all of them)\n"
           "    --zone Z               only members in zone Z\n"
           "  owner KEY [-n N] [--json]\n"
           "                           the member owning KEY; with -n, N distinct members\n"
           "                           clockwise, owner first, one per line (with zones, one\n"
           "                           per zone before any zone repeats). An empty ring\n"
           "                           prints nothing, says so on stderr and exits 1\n"
           "  assign C KEY... [--json] the keys as one set under bounded loads: one member\n"
           "                           per key, in order, one per line, no member above\n"
           "                           ceil(C x keys x its weight share); C above 1, at most\n"
           "                           3 decimals (1.25); at most 4000 keys. An empty ring\n"
           "                           prints nothing, says so on stderr and exits 1\n"
           "  ring                     the ring's definition: spec, mode, vnodes, version,\n"
           "                           checksum and points, then each member's weight (as\n"
           "                           placed), zone and identity, in name order\n"
           "  info [--json]            this agent's view, one field:value per line\n"
           "  watch [--json]           the state it joins in (ring version, checksum and\n"
           "                           points, every member), then one line per membership or\n"
           "                           ring change, until Ctrl-C (exit 0) or the agent goes\n"
           "                           away (exit 1); it subscribes to the agent's channels\n"
           "                           (SUBSCRIBE members ring state), as any Redis client can\n"
           "  join HOST:PORT           join the cluster through HOST:PORT: waits for a\n"
           "                           full-state exchange with it; exit 1 with the reason\n"
           "                           if it failed\n"
           "  ready                    prints ready (exit 0) once the agent joined the\n"
           "                           cluster it was told to join, or started one;\n"
           "                           else not-ready or unreachable (exit 1)\n"
           "  leave                    leave the cluster gracefully; the agent then exits\n"
           "  metrics                  the Prometheus text exposition, as --metrics-addr\n"
           "                           serves it (for node_exporter's textfile collector)\n"
           "  keys list [--json]       the gossip keys by fingerprint, primary first:\n"
           "                           FINGERPRINT primary|installed\n"
           "  keys install KEY|-       add a key (base64, as keygen prints; - reads it from\n"
           "                           stdin): it opens from now on; prints its fingerprint\n"
           "  keys use FINGERPRINT     make an installed key the primary: it seals from now on\n"
           "  keys remove FINGERPRINT  drop a key that is not the primary\n"
           "                           (a FINGERPRINT may be any unambiguous prefix; install,\n"
           "                           use and remove change the keyring file too, and need\n"
           "                           root, the agent's user or its --admin-group)\n"
           "  tags set KEY VALUE       set a tag of this member (as --tag KEY=VALUE)\n"
           "  tags del KEY             remove a tag of this member\n"
           "  weight W                 this member's weight, 0.001 to --max-weight; 0 drains\n"
           "                           it: listed and alive, but it owns no keys\n"
           "  force-leave [--prune] NAME\n"
           "                           mark a dead member left on every agent now; --prune\n"
           "                           also an alive or suspect one (it refutes if it lives)\n"
           "                           (tags, weight and force-leave need root, the agent's\n"
           "                           user or its --admin-group, as keys install does)\n\n"
           "  --socket PATH            the agent's query socket (default: $RINGD_SOCKET,\n"
           "                           else %s); accepted anywhere in the arguments\n"
           "  --json                   JSON output: members prints an array of objects,\n"
           "                           owner an object {key, owners}, assign an array of\n"
           "                           {key, member}, info an object of its\n"
           "                           fields, watch one object per line, keys list an array\n"
           "                           of {fingerprint, primary}, version {version}\n"
           "  -h, --help               this help\n\n"
           "Exit status: 0 success, 1 the agent is unreachable, refused or went away, 2 bad\n"
           "usage.\n",
           RD_DEFAULT_SOCKET);
}

/* ============================================================ command line */

struct opts {
    const char *cmd;
    const char *socket;
    const char *args[RD_CLIENT_MAX_ARGS];
    int nargs;
    bool json, help, has_n, prune;
    long n;
    /* members filters: a bit per enum rd_status (0: any), tags that must all be there
     * ("k=v"), and a zone (NULL: any) */
    unsigned statuses;
    const char *tags[RD_CLIENT_MAX_TAGS];
    int ntags;
    const char *zone;
};

/* A bad command line: the reason and where to look, RD_EINVAL. */
__attribute__((format(printf, 3, 4))) static int usage_error(char *err, size_t errlen,
                                                             const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < errlen) snprintf(err + n, errlen - (size_t)n, " (see ringd --help)");
    return RD_EINVAL;
}

/* Canonical positive decimal in 1..max. */
static bool parse_count(const char *s, long max, long *out)
{
    if (!*s || *s == '0' || strlen(s) > 9) return false;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return false;
        v = v * 10 + (*p - '0');
    }
    if (v > max) return false;
    *out = v;
    return true;
}

/* --status S: one or more of alive|suspect|dead|left, comma separated, into o->statuses. */
static int add_statuses(struct opts *o, const char *val, char *err, size_t errlen)
{
    for (const char *p = val;;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int k = 0; k < 4; k++)
            if (strlen(rd_status_name(k)) == len && strncmp(p, rd_status_name(k), len) == 0)
                found = k;
        if (found < 0)
            return usage_error(err, errlen, "--status: '%.*s' is not alive, suspect, dead or left",
                               (int)len, p);
        o->statuses |= 1u << found;
        if (!p[len]) return 0;
        p += len + 1;
    }
}

/* The value of option `a` (argv[*i]): after its '=', else the next argument. NULL if none. */
static const char *option_value(int argc, char **argv, int *i, size_t namelen)
{
    const char *a = argv[*i];
    if (a[namelen] == '=') return a + namelen + 1;
    return *i + 1 < argc ? argv[++*i] : NULL;
}

/* True if `a` is the long option `name`, alone or as name=value. */
static bool is_option(const char *a, const char *name)
{
    size_t n = strlen(name);
    return strncmp(a, name, n) == 0 && (a[n] == '\0' || a[n] == '=');
}

/* The members filters; 1 when `argv[*i]` is none of them, else 0 or RD_EINVAL. */
static int parse_filter(int argc, char **argv, int *i, struct opts *o, char *err, size_t errlen)
{
    const char *a = argv[*i];
    const char *name = is_option(a, "--status") ? "--status"
                       : is_option(a, "--tag")  ? "--tag"
                       : is_option(a, "--zone") ? "--zone"
                                                : NULL;
    if (!name) return 1;
    const char *val = option_value(argc, argv, i, strlen(name));
    if (!val) return usage_error(err, errlen, "%s needs a value", name);
    if (name[2] == 's') return add_statuses(o, val, err, errlen);
    if (name[2] == 'z') {
        o->zone = val;
        return 0;
    }
    if (!strchr(val, '=') || val[0] == '=' || strchr(val, ','))
        return usage_error(err, errlen, "--tag: '%s' is not KEY=VALUE", val);
    if (o->ntags == RD_CLIENT_MAX_TAGS)
        return usage_error(err, errlen, "at most %d --tag filters", RD_CLIENT_MAX_TAGS);
    o->tags[o->ntags++] = val;
    return 0;
}

/* 0, or RD_EINVAL with why in err. Options may come anywhere, even before the command. */
static int parse_args(int argc, char **argv, struct opts *o, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    bool only_args = false;
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!only_args && a[0] == '-' && a[1] != '\0') {
            const char *val = NULL;
            if (strcmp(a, "--") == 0) {
                only_args = true;
                continue;
            } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
                o->help = true;
            } else if (strcmp(a, "--json") == 0) {
                o->json = true;
            } else if (strcmp(a, "--prune") == 0) {
                o->prune = true;
            } else if (strcmp(a, "--socket") == 0 || strncmp(a, "--socket=", 9) == 0) {
                if (a[8] == '=') {
                    val = a + 9;
                } else {
                    if (i + 1 >= argc) return usage_error(err, errlen, "%s needs a value", a);
                    val = argv[++i];
                }
                if (!*val) return usage_error(err, errlen, "--socket: empty path");
                o->socket = val;
            } else if (strcmp(a, "-n") == 0) {
                if (i + 1 >= argc) return usage_error(err, errlen, "%s needs a value", a);
                val = argv[++i];
                if (!parse_count(val, RD_CLIENT_OWNERS_MAX, &o->n))
                    return usage_error(err, errlen, "-n: '%s' is not a count from 1 to 1000000",
                                       val);
                o->has_n = true;
            } else {
                int rc = parse_filter(argc, argv, &i, o, err, errlen);
                if (rc < 0) return rc;
                if (rc > 0) return usage_error(err, errlen, "unknown option '%s'", a);
            }
            continue;
        }
        if (!o->cmd) {
            o->cmd = a;
        } else {
            if (o->nargs == RD_CLIENT_MAX_ARGS)
                return usage_error(err, errlen, "too many arguments");
            o->args[o->nargs++] = a;
        }
    }
    return 0;
}

/* ============================================================ connection */

struct conn {
    int fd;
    const char *path;
    struct rd_buf in;
};

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

static const char *socket_path(const struct opts *o)
{
    if (o->socket) return o->socket;
    const char *env = getenv("RINGD_SOCKET");
    return env && *env ? env : RD_DEFAULT_SOCKET;
}

/* 0; RD_EINVAL for a path too long for a socket; RD_EIO when nobody answers. */
static int conn_open(struct conn *c, const char *path, bool timeout, char *err, size_t errlen)
{
    c->fd = -1;
    c->path = path;
    rd_buf_init(&c->in);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path) {
        snprintf(err, errlen, "socket path too long (most %zu bytes): %s", sizeof sa.sun_path - 1,
                 path);
        return RD_EINVAL;
    }
    memcpy(sa.sun_path, path, strlen(path) + 1);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        snprintf(err, errlen, "cannot connect to %s: %s (is the agent running?)", path,
                 strerror(errno));
        if (c->fd >= 0) close(c->fd);
        c->fd = -1;
        return RD_EIO;
    }
    if (timeout) {
        struct timeval tv = {.tv_sec = RD_CLIENT_TIMEOUT_S};
        setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    }
    return 0;
}

static void conn_close(struct conn *c)
{
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
    rd_buf_free(&c->in);
}

/* Sends one request: an array of bulk strings. 0, RD_ENOMEM or RD_EIO. */
static int conn_send(struct conn *c, const char *const *argv, size_t argc, char *err, size_t errlen)
{
    struct rd_buf out;
    rd_buf_init(&out);
    int rc = rd_resp_write_array(&out, argc);
    for (size_t i = 0; i < argc && rc == 0; i++)
        rc = rd_resp_write_bulk(&out, argv[i], strlen(argv[i]));
    if (rc < 0) {
        rd_buf_free(&out);
        snprintf(err, errlen, "out of memory");
        return RD_ENOMEM;
    }
    size_t off = 0;
    while (off < out.len) {
        ssize_t n = send(c->fd, out.data + off, out.len - off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            snprintf(err, errlen, "cannot send to %s: %s", c->path, strerror(errno));
            rd_buf_free(&out);
            return RD_EIO;
        }
        off += (size_t)n;
    }
    rd_buf_free(&out);
    return 0;
}

/*
 * Reads one whole reply into *out. Returns 0 with *out set, or 0 with *out NULL when the
 * agent closed the connection cleanly before a reply began (or SIGINT in watch): the end
 * of a stream, not a failure. Else RD_EPROTO (a bad reply, or cut mid-reply), RD_ENOMEM,
 * or RD_EIO (no reply in time, a read error).
 */
static int conn_recv(struct conn *c, struct rd_resp_reply **out, char *err, size_t errlen)
{
    *out = NULL;
    for (;;) {
        if (c->in.len > 0) {
            size_t used;
            const char *reason = NULL;
            int rc = rd_resp_reply_parse(c->in.data, c->in.len, out, &used, &reason);
            if (rc == 0) {
                rd_buf_consume(&c->in, used);
                return 0;
            }
            if (rc != RD_EAGAIN) {
                snprintf(err, errlen, "bad reply from the agent: %s",
                         reason ? reason : rd_strerror(rc));
                return RD_EPROTO;
            }
        }
        if (interrupted) return 0;
        if (rd_buf_reserve(&c->in, 65536) < 0) {
            snprintf(err, errlen, "out of memory");
            return RD_ENOMEM;
        }
        ssize_t n = recv(c->fd, c->in.data + c->in.len, c->in.cap - c->in.len, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            snprintf(err, errlen, "no reply from the agent on %s within %d s", c->path,
                     RD_CLIENT_TIMEOUT_S);
            return RD_EIO;
        }
        if (n < 0) {
            snprintf(err, errlen, "cannot read from %s: %s", c->path, strerror(errno));
            return RD_EIO;
        }
        if (n == 0) {
            if (c->in.len == 0) return 0;
            snprintf(err, errlen, "the agent closed the connection mid-reply");
            return RD_EPROTO;
        }
        c->in.len += (size_t)n;
    }
}

/* A connection ended where a reply was due. */
static int no_reply(char *err, size_t errlen)
{
    snprintf(err, errlen, "the agent closed the connection without replying");
    return RD_EPROTO;
}

/* An -ERR reply: the agent's words, RD_EREFUSED. */
static int refused(const struct rd_resp_reply *r, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s", r->str);
    return RD_EREFUSED;
}

/* One round trip: 0 with *out set, or an RD_E* code with why in err (RD_EREFUSED for an
 * -ERR reply, its text in err). */
static int call(const struct opts *o, const char *const *argv, size_t argc,
                struct rd_resp_reply **out, char *err, size_t errlen)
{
    struct conn c;
    *out = NULL;
    int rc = conn_open(&c, socket_path(o), true, err, errlen);
    if (rc < 0) return rc;
    rc = conn_send(&c, argv, argc, err, errlen);
    if (rc == 0) rc = conn_recv(&c, out, err, errlen);
    conn_close(&c);
    if (rc == 0 && !*out) return no_reply(err, errlen);
    if (rc == 0 && (*out)->type == RD_RESP_ERROR) {
        rc = refused(*out, err, errlen);
        rd_resp_reply_free(*out);
        *out = NULL;
    }
    return rc;
}

static int unexpected(struct rd_resp_reply *r, char *err, size_t errlen)
{
    snprintf(err, errlen, "unexpected reply from the agent");
    rd_resp_reply_free(r);
    return RD_EPROTO;
}

/* The end of a command that printed: stdout must have taken it all. RD_EIO without
 * words otherwise, as the output itself is what failed. */
static int flushed(char *err, size_t errlen)
{
    if (fflush(stdout) == 0) return 0;
    snprintf(err, errlen, "%s", "");
    return RD_EIO;
}

static bool is_text(const struct rd_resp_reply *r)
{
    return r->type == RD_RESP_BULK || r->type == RD_RESP_STRING;
}

/* ============================================================ JSON output */

/* Writes what an rd_json_* appender made of s (event.h: one escaping for every output). */
static void json_out(FILE *f, struct rd_buf *b, int rc)
{
    if (rc == 0)
        fwrite(b->data, 1, b->len, f);
    else
        fputs("null", f); /* out of memory: still valid JSON */
    rd_buf_free(b);
}

static void json_str(FILE *f, const char *s, size_t len)
{
    struct rd_buf b;
    rd_buf_init(&b);
    json_out(f, &b, rd_json_str(&b, s, len));
}

static void json_cstr(FILE *f, const char *s)
{
    json_str(f, s, strlen(s));
}

/* A JSON number as is, if the text is one we produce (digits, one '.', leading '-'). */
static void json_num(FILE *f, const char *s)
{
    struct rd_buf b;
    rd_buf_init(&b);
    json_out(f, &b, rd_json_num(&b, s));
}

/* Members of a JSON object after its first: `,"key":value` for keys[i] and values[i],
 * where kinds[i] is 's' for a string and 'n' for a number (json_num). */
static void json_fields(FILE *f, const char *const *keys, const char *const *values,
                        const char *kinds)
{
    for (size_t i = 0; kinds[i]; i++) {
        fprintf(f, ",\"%s\":", keys[i]);
        if (kinds[i] == 'n')
            json_num(f, values[i]);
        else
            json_cstr(f, values[i]);
    }
}

/* "k=v,k=v" as an object. */
static void json_tags(FILE *f, const char *tags)
{
    fputc('{', f);
    bool first = true;
    for (const char *p = tags; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        if (len > 0) {
            if (!first) fputc(',', f);
            first = false;
            size_t klen = eq ? (size_t)(eq - p) : len;
            json_str(f, p, klen);
            fputc(':', f);
            if (eq)
                json_str(f, eq + 1, len - klen - 1);
            else
                json_str(f, "", 0);
        }
        p += len + (end != NULL);
    }
    fputc('}', f);
}

/* ============================================================ members */

struct member_row {
    const char *name, *addr, *status, *incarnation, *weight, *zone, *tags;
    char tagcol[RD_TAGS_MAX + RD_ZONE_MAX + 8];
};

static const char *field(const struct rd_resp_reply *m, const char *key)
{
    for (size_t i = 0; i + 1 < m->nelem; i += 2)
        if (is_text(m->elem[i]) && strcmp(m->elem[i]->str, key) == 0 && is_text(m->elem[i + 1]))
            return m->elem[i + 1]->str;
    return "";
}

/* True if the "k=v,k=v" list `tags` holds exactly the entry `kv`. */
static bool has_tag(const char *tags, const char *kv)
{
    size_t n = strlen(kv);
    for (const char *p = tags; *p;) {
        size_t len = strcspn(p, ",");
        if (len == n && strncmp(p, kv, n) == 0) return true;
        p += len + (p[len] == ',');
    }
    return false;
}

/* The --status, --tag and --zone filters: all given must match. */
static bool row_wanted(const struct opts *o, const struct member_row *row)
{
    if (o->statuses) {
        int st = -1;
        for (int k = 0; k < 4; k++)
            if (strcmp(row->status, rd_status_name(k)) == 0) st = k;
        if (st < 0 || !(o->statuses & (1u << st))) return false;
    }
    if (o->zone && strcmp(row->zone, o->zone) != 0) return false;
    for (int i = 0; i < o->ntags; i++)
        if (!has_tag(row->tags, o->tags[i])) return false;
    return true;
}

static int row_cmp(const void *a, const void *b)
{
    return strcmp(((const struct member_row *)a)->name, ((const struct member_row *)b)->name);
}

static int cmd_members(const struct opts *o, char *err, size_t errlen)
{
    if (o->nargs > 0)
        return usage_error(err, errlen, "members takes no arguments, got '%s'", o->args[0]);
    if (o->has_n) return usage_error(err, errlen, "-n is not an option of '%s'", "members");
    const char *req[] = {"MEMBERS"};
    struct rd_resp_reply *r;
    int rc = call(o, req, 1, &r, err, errlen);
    if (rc < 0) return rc;
    if (r->type != RD_RESP_ARRAY) return unexpected(r, err, errlen);
    struct member_row *rows = calloc(r->nelem ? r->nelem : 1, sizeof *rows);
    if (!rows) {
        rd_resp_reply_free(r);
        snprintf(err, errlen, "out of memory");
        return RD_ENOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < r->nelem; i++) {
        const struct rd_resp_reply *m = r->elem[i];
        if (m->type != RD_RESP_ARRAY) continue;
        struct member_row *row = &rows[n++];
        row->name = field(m, "name");
        row->addr = field(m, "addr");
        row->status = field(m, "status");
        row->incarnation = field(m, "incarnation");
        row->weight = field(m, "weight");
        row->zone = field(m, "zone");
        row->tags = field(m, "tags");
        snprintf(row->tagcol, sizeof row->tagcol, "%s%s%s%s", *row->zone ? "zone=" : "", row->zone,
                 *row->zone && *row->tags ? "," : "", row->tags);
        if (!row_wanted(o, row)) n--;
    }
    qsort(rows, n, sizeof *rows, row_cmp);
    if (o->json) {
        fputc('[', stdout);
        for (size_t i = 0; i < n; i++) {
            const struct member_row *m = &rows[i];
            fputs(i ? ",\n  {" : "\n  {", stdout);
            fputs("\"name\":", stdout);
            json_cstr(stdout, m->name);
            const char *keys[] = {"addr", "status", "incarnation", "weight", "zone"};
            const char *values[] = {m->addr, m->status, m->incarnation, m->weight, m->zone};
            json_fields(stdout, keys, values, "ssnns");
            fputs(",\"tags\":", stdout);
            json_tags(stdout, m->tags);
            fputc('}', stdout);
        }
        fputs(n ? "\n]\n" : "]\n", stdout);
    } else {
        int w[5] = {4, 7, 6, 11, 6}; /* the headers' widths */
        for (size_t i = 0; i < n; i++) {
            const char *cols[5] = {rows[i].name, rows[i].addr, rows[i].status, rows[i].incarnation,
                                   rows[i].weight};
            for (int k = 0; k < 5; k++)
                if ((int)strlen(cols[k]) > w[k]) w[k] = (int)strlen(cols[k]);
        }
        printf("%-*s  %-*s  %-*s  %-*s  %-*s  %s\n", w[0], "NAME", w[1], "ADDRESS", w[2], "STATUS",
               w[3], "INCARNATION", w[4], "WEIGHT", "TAGS");
        for (size_t i = 0; i < n; i++) {
            const struct member_row *m = &rows[i];
            char line[RD_NAME_MAX + 2 * RD_ADDR_STRLEN + RD_TAGS_MAX + RD_ZONE_MAX + 128];
            int len = snprintf(line, sizeof line, "%-*s  %-*s  %-*s  %-*s  %-*s  %s", w[0], m->name,
                               w[1], m->addr, w[2], m->status, w[3], m->incarnation, w[4],
                               m->weight, m->tagcol);
            if (len < 0) len = 0;
            if ((size_t)len >= sizeof line) len = (int)sizeof line - 1;
            while (len > 0 && line[len - 1] == ' ')
                len--; /* no trailing blanks when TAGS is empty */
            printf("%.*s\n", len, line);
        }
    }
    free(rows);
    rd_resp_reply_free(r);
    return flushed(err, errlen);
}

/* ============================================================ owner */

static int cmd_owner(const struct opts *o, char *err, size_t errlen)
{
    if (o->nargs != 1)
        return usage_error(err, errlen, "%s",
                           o->nargs == 0 ? "owner needs a KEY" : "owner takes one KEY");
    char count[24];
    snprintf(count, sizeof count, "%ld", o->has_n ? o->n : 1L);
    const char *req[] = {o->has_n ? "OWNERS" : "OWNER", o->args[0], count};
    struct rd_resp_reply *r;
    int rc = call(o, req, o->has_n ? 3 : 2, &r, err, errlen);
    if (rc < 0) return rc;
    /* One shape for both: a list of names. */
    const struct rd_resp_reply *one[1] = {r};
    const struct rd_resp_reply *const *names = one;
    size_t n = 1;
    if (r->type == RD_RESP_NIL) {
        n = 0;
    } else if (r->type == RD_RESP_ARRAY) {
        names = (const struct rd_resp_reply *const *)r->elem;
        n = r->nelem;
    } else if (!is_text(r)) {
        return unexpected(r, err, errlen);
    }
    for (size_t i = 0; i < n; i++)
        if (!is_text(names[i])) return unexpected(r, err, errlen);
    if (n == 0) {
        rd_resp_reply_free(r);
        snprintf(err, errlen, "ring is empty");
        return RD_ENOENT;
    }
    if (o->json) {
        fputs("{\"key\":", stdout);
        json_cstr(stdout, o->args[0]);
        fputs(",\"owners\":[", stdout);
        for (size_t i = 0; i < n; i++) {
            if (i) fputc(',', stdout);
            json_str(stdout, names[i]->str, names[i]->len);
        }
        fputs("]}\n", stdout);
    } else {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", names[i]->str);
    }
    rd_resp_reply_free(r);
    return flushed(err, errlen);
}

/* ============================================================ assign */

static int cmd_assign(const struct opts *o, char *err, size_t errlen)
{
    if (o->nargs < 2) return usage_error(err, errlen, "assign needs C and at least one KEY");
    uint32_t c_milli;
    if (rd_assign_parse_c(o->args[0], strlen(o->args[0]), &c_milli) < 0)
        return usage_error(err, errlen,
                           "assign: C '%s' is not a number above 1 and at most 1000 with at most "
                           "3 decimals",
                           o->args[0]);
    size_t n = (size_t)o->nargs - 1;
    if (n > RD_QUERY_ASSIGN_KEYS_MAX)
        return usage_error(err, errlen, "assign takes at most %u keys", RD_QUERY_ASSIGN_KEYS_MAX);
    const char **req = malloc((n + 2) * sizeof *req);
    if (!req) {
        snprintf(err, errlen, "out of memory");
        return RD_ENOMEM;
    }
    req[0] = "ASSIGN";
    for (size_t i = 0; i <= n; i++)
        req[i + 1] = o->args[i];
    struct rd_resp_reply *r;
    int rc = call(o, req, n + 2, &r, err, errlen);
    free(req);
    if (rc < 0) return rc;
    if (r->type != RD_RESP_ARRAY || r->nelem != n) return unexpected(r, err, errlen);
    bool empty = true;
    for (size_t i = 0; i < n; i++) {
        if (r->elem[i]->type == RD_RESP_NIL) continue;
        if (!is_text(r->elem[i])) return unexpected(r, err, errlen);
        empty = false;
    }
    if (empty) { /* only an empty ring answers nil, and then for every key */
        rd_resp_reply_free(r);
        snprintf(err, errlen, "ring is empty");
        return RD_ENOENT;
    }
    if (o->json) fputc('[', stdout);
    for (size_t i = 0; i < n; i++) {
        const struct rd_resp_reply *m = r->elem[i];
        if (!o->json) {
            printf("%.*s\n", (int)m->len, m->str);
            continue;
        }
        fputs(i ? ",{\"key\":" : "{\"key\":", stdout);
        json_cstr(stdout, o->args[i + 1]);
        fputs(",\"member\":", stdout);
        json_str(stdout, m->str, m->len);
        fputc('}', stdout);
    }
    if (o->json) fputs("]\n", stdout);
    rd_resp_reply_free(r);
    return flushed(err, errlen);
}

/* ============================================================ ring */

/* RING, readably: one line of the parameters, then a table of the members. */
static int cmd_ring(const struct opts *o, char *err, size_t errlen)
{
    if (o->nargs > 0)
        return usage_error(err, errlen, "ring takes no arguments, got '%s'", o->args[0]);
    const char *req[] = {"RING"};
    struct rd_resp_reply *r;
    int rc = call(o, req, 1, &r, err, errlen);
    if (rc < 0) return rc;
    if (r->type != RD_RESP_ARRAY || r->nelem != 7 || !is_text(r->elem[1]) || !is_text(r->elem[4]) ||
        r->elem[6]->type != RD_RESP_ARRAY)
        return unexpected(r, err, errlen);
    const struct rd_resp_reply *ms = r->elem[6];
    for (size_t i = 0; i < ms->nelem; i++) {
        const struct rd_resp_reply *m = ms->elem[i];
        if (m->type != RD_RESP_ARRAY || m->nelem != 4 || !is_text(m->elem[0]) ||
            m->elem[1]->type != RD_RESP_INTEGER || !is_text(m->elem[2]) || !is_text(m->elem[3]))
            return unexpected(r, err, errlen);
    }
    printf("spec %" PRId64 " mode %s vnodes %" PRId64 " version %" PRId64
           " checksum %s points %" PRId64 "\n",
           r->elem[0]->integer, r->elem[1]->str, r->elem[2]->integer, r->elem[3]->integer,
           r->elem[4]->str, r->elem[5]->integer);
    int w = 4;
    for (size_t i = 0; i < ms->nelem; i++)
        if ((int)ms->elem[i]->elem[0]->len > w) w = (int)ms->elem[i]->elem[0]->len;
    printf("%-*s  %8s  %-8s  %s\n", w, "NAME", "WEIGHT", "ZONE", "IDENTITY");
    for (size_t i = 0; i < ms->nelem; i++) {
        struct rd_resp_reply **m = ms->elem[i]->elem;
        int64_t weight = m[1]->integer;
        printf("%-*s  %4" PRId64 ".%03" PRId64 "  %-8s  %s\n", w, m[0]->str, weight / 1000,
               weight % 1000, m[2]->str[0] ? m[2]->str : "-", m[3]->str);
    }
    rd_resp_reply_free(r);
    return flushed(err, errlen);
}

/* ============================================================ info, join, leave */

/*
 * INFO fields whose values are text in --json output, whatever they look like: a name
 * or a checksum may be all digits, and a field must not change type from one agent to
 * the next. Every other field is a number when its value is one (README, "The client
 * commands").
 */
static const char *const info_text_fields[] = {
    "name",
    "addr",
    "status",
    "members_checksum",
    "ring_checksum",
    "version",
    "keyring_primary",
    "config_file",
    "gossip_verify_incoming",
    "gossip_verify_outgoing",
    "profile",
};

static bool info_is_text(const char *key, size_t len)
{
    for (size_t i = 0; i < sizeof info_text_fields / sizeof info_text_fields[0]; i++)
        if (strlen(info_text_fields[i]) == len && strncmp(key, info_text_fields[i], len) == 0)
            return true;
    return false;
}

/* The INFO text as one JSON object: "key:value" lines in order, "#" lines left out. */
static void info_json(const char *text, size_t len)
{
    bool first = true;
    fputc('{', stdout);
    for (size_t i = 0; i < len;) {
        size_t end = i;
        while (end < len && text[end] != '\n' && text[end] != '\r')
            end++;
        const char *line = text + i, *colon = memchr(line, ':', end - i);
        if (colon && line[0] != '#' && colon > line) {
            size_t klen = (size_t)(colon - line), vlen = end - i - klen - 1;
            char number[RD_CLIENT_NUMBER_MAX + 1];
            if (!first) fputc(',', stdout);
            first = false;
            json_str(stdout, line, klen);
            fputc(':', stdout);
            if (info_is_text(line, klen) || vlen > RD_CLIENT_NUMBER_MAX) {
                json_str(stdout, colon + 1, vlen);
            } else {
                snprintf(number, sizeof number, "%.*s", (int)vlen, colon + 1);
                json_num(stdout, number);
            }
        }
        i = end;
        while (i < len && (text[i] == '\n' || text[i] == '\r'))
            i++;
    }
    fputs("}\n", stdout);
}

/* The INFO text into *out, for subcommand `name`, which takes no arguments. */
static int info_reply(const struct opts *o, const char *name, struct rd_resp_reply **out, char *err,
                      size_t errlen)
{
    if (o->nargs > 0)
        return usage_error(err, errlen, "%s takes no arguments, got '%s'", name, o->args[0]);
    const char *req[] = {"INFO"};
    int rc = call(o, req, 1, out, err, errlen);
    if (rc < 0) return rc;
    return is_text(*out) ? 0 : unexpected(*out, err, errlen);
}

static int cmd_info(const struct opts *o, char *err, size_t errlen)
{
    struct rd_resp_reply *r;
    int rc = info_reply(o, "info", &r, err, errlen);
    if (rc < 0) return rc;
    if (o->json) {
        info_json(r->str, r->len);
        rd_resp_reply_free(r);
        return flushed(err, errlen);
    }
    /* The text as the agent wrote it, with Unix line ends so it greps and cuts cleanly. */
    for (size_t i = 0; i < r->len; i++)
        if (!(r->str[i] == '\r' && i + 1 < r->len && r->str[i + 1] == '\n')) putchar(r->str[i]);
    if (r->len > 0 && r->str[r->len - 1] != '\n') putchar('\n');
    rd_resp_reply_free(r);
    return flushed(err, errlen);
}

/* `metrics`: the Prometheus text, written as is (node_exporter's textfile collector reads it:
 * `ringd metrics > dir/ringd.prom.tmp && mv ...`). */
static int cmd_metrics(const struct opts *o, char *err, size_t errlen)
{
    if (o->nargs > 0)
        return usage_error(err, errlen, "metrics takes no arguments, got '%s'", o->args[0]);
    const char *req[] = {"METRICS"};
    struct rd_resp_reply *r;
    int rc = call(o, req, 1, &r, err, errlen);
    if (rc < 0) return rc;
    if (!is_text(r)) return unexpected(r, err, errlen);
    fwrite(r->str, 1, r->len, stdout);
    rd_resp_reply_free(r);
    return flushed(err, errlen);
}

/* `ready`, for readiness probes: "ready" and 0 once the agent joined the cluster it was
 * told to join (or started one), else "not-ready" and 1; an agent that cannot be asked is
 * not ready either ("unreachable"). One word on stdout; the reason on stderr. */
static int cmd_ready(const struct opts *o, char *err, size_t errlen)
{
    struct rd_resp_reply *r;
    int rc = info_reply(o, "ready", &r, err, errlen);
    if (rc < 0 && o->nargs > 0) return rc; /* bad usage */
    if (rc < 0) {
        puts("unreachable");
        return rc == RD_EINVAL ? RD_EIO : rc; /* never "bad usage": the probe ran */
    }
    bool ready = strstr(r->str, "\nready:1\r\n") != NULL;
    rd_resp_reply_free(r);
    puts(ready ? "ready" : "not-ready");
    rc = flushed(err, errlen);
    if (rc == 0 && !ready) {
        snprintf(err, errlen, "the agent has not joined its cluster yet");
        return RD_EREFUSED;
    }
    return rc;
}

/* One request whose reply is one line of text (JOIN's OK, a key's fingerprint): prints it. */
static int call_print(const struct opts *o, const char *const *req, size_t argc, char *err,
                      size_t errlen)
{
    struct rd_resp_reply *r;
    int rc = call(o, req, argc, &r, err, errlen);
    if (rc < 0) return rc;
    if (!is_text(r)) return unexpected(r, err, errlen);
    printf("%s\n", r->str);
    rd_resp_reply_free(r);
    return flushed(err, errlen);
}

/* JOIN HOST:PORT and LEAVE: one request, "OK" back. `name` is the subcommand. */
static int cmd_simple(const struct opts *o, const char *name, const char *command, int want_args,
                      char *err, size_t errlen)
{
    if (o->nargs != want_args) {
        if (want_args == 0) return usage_error(err, errlen, "%s takes no arguments", name);
        return usage_error(err, errlen, "%s needs one HOST:PORT", name);
    }
    const char *req[] = {command, want_args ? o->args[0] : NULL};
    return call_print(o, req, (size_t)want_args + 1, err, errlen);
}

/* ============================================================ keys */

/* `keys list`: one line per key, "FINGERPRINT primary|installed", primary first. */
static int keys_list(const struct opts *o, char *err, size_t errlen)
{
    const char *req[] = {"KEYRING", "LIST"};
    struct rd_resp_reply *r;
    int rc = call(o, req, 2, &r, err, errlen);
    if (rc < 0) return rc;
    if (r->type != RD_RESP_ARRAY) return unexpected(r, err, errlen);
    for (size_t i = 0; i < r->nelem; i++) {
        const struct rd_resp_reply *k = r->elem[i];
        if (k->type != RD_RESP_ARRAY || k->nelem != 2 || !is_text(k->elem[0]) ||
            !is_text(k->elem[1]))
            return unexpected(r, err, errlen);
    }
    if (r->nelem == 0) fprintf(stderr, "ringd: no keyring: this agent gossips in the clear\n");
    if (o->json) fputc('[', stdout);
    for (size_t i = 0; i < r->nelem; i++) {
        const char *fp = r->elem[i]->elem[0]->str, *role = r->elem[i]->elem[1]->str;
        if (o->json) {
            fputs(i ? ",{\"fingerprint\":" : "{\"fingerprint\":", stdout);
            json_cstr(stdout, fp);
            printf(",\"primary\":%s}", strcmp(role, "primary") == 0 ? "true" : "false");
        } else {
            printf("%s %s\n", fp, role);
        }
    }
    if (o->json) fputs("]\n", stdout);
    rd_resp_reply_free(r);
    return flushed(err, errlen);
}

/* `keys install KEY|-`, `keys use FP`, `keys remove FP`: prints the key's fingerprint. A
 * key given as "-" is read from the first line of stdin, so it stays out of the process
 * list and the shell's history. */
static int keys_change(const struct opts *o, const char *sub, char *err, size_t errlen)
{
    char line[256];
    const char *arg = o->args[1];
    if (strcmp(sub, "INSTALL") == 0 && strcmp(arg, "-") == 0) {
        if (!fgets(line, sizeof line, stdin)) {
            snprintf(err, errlen, "keys install -: no key on stdin");
            return RD_EINVAL;
        }
        line[strcspn(line, "\r\n")] = '\0';
        arg = line;
    }
    const char *req[] = {"KEYRING", sub, arg};
    int rc = call_print(o, req, 3, err, errlen);
    sodium_memzero(line, sizeof line);
    return rc;
}

static int cmd_keys(const struct opts *o, char *err, size_t errlen)
{
    static const char *const subs[][2] = {
        {"install", "INSTALL"}, {"use", "USE"}, {"remove", "REMOVE"}};
    if (o->nargs >= 1 && strcmp(o->args[0], "list") == 0) {
        if (o->nargs > 1)
            return usage_error(err, errlen, "keys list takes no arguments, got '%s'", o->args[1]);
        return keys_list(o, err, errlen);
    }
    for (size_t i = 0; o->nargs >= 1 && i < sizeof subs / sizeof subs[0]; i++) {
        if (strcmp(o->args[0], subs[i][0]) != 0) continue;
        if (o->json) return usage_error(err, errlen, "--json is only for 'keys list'");
        if (o->nargs != 2)
            return usage_error(err, errlen, "keys %s needs one %s", subs[i][0],
                               i == 0 ? "KEY (base64, or - to read it from stdin)"
                                      : "FINGERPRINT (or a prefix of one)");
        return keys_change(o, subs[i][1], err, errlen);
    }
    return usage_error(err, errlen,
                       "keys needs list, install KEY, use FINGERPRINT or remove "
                       "FINGERPRINT");
}

/* ============================================================ run-time changes */

/* `tags set KEY VALUE`, `tags del KEY`: TAGS SET/DEL, "OK" back. */
static int cmd_tags(const struct opts *o, char *err, size_t errlen)
{
    bool set = o->nargs >= 1 && strcmp(o->args[0], "set") == 0;
    bool del = o->nargs >= 1 && strcmp(o->args[0], "del") == 0;
    if (!set && !del) return usage_error(err, errlen, "tags needs set KEY VALUE or del KEY");
    if (o->nargs != (set ? 3 : 2))
        return usage_error(err, errlen, set ? "tags set needs KEY VALUE" : "tags del needs KEY");
    const char *req[] = {"TAGS", set ? "SET" : "DEL", o->args[1], set ? o->args[2] : NULL};
    return call_print(o, req, set ? 4 : 3, err, errlen);
}

/* `force-leave [--prune] NAME`: FORCE-LEAVE NAME [PRUNE]. */
static int cmd_force_leave(const struct opts *o, char *err, size_t errlen)
{
    if (o->nargs != 1) return usage_error(err, errlen, "force-leave needs one member NAME");
    const char *req[] = {"FORCE-LEAVE", o->args[0], "PRUNE"};
    return call_print(o, req, o->prune ? 3 : 2, err, errlen);
}

/* ============================================================ watch */

static const char *who(const char *name)
{
    return *name ? name : "none"; /* the empty ring is nobody */
}

/* One message's payload, the agent's JSON object: as it is with --json, else as a line. */
static void print_event(const struct rd_resp_reply *payload, bool json, struct rd_buf *store)
{
    if (json) {
        fwrite(payload->str, 1, payload->len, stdout);
        putchar('\n');
        fflush(stdout);
        return;
    }
    char ts[RD_EVENT_TS_LEN];
    const char *f[RD_EVENT_FIELDS_MAX];
    size_t nf = 0;
    if (rd_event_fields(payload->str, payload->len, ts, store, f, &nf) < 0) {
        printf("%.*s\n", (int)payload->len, payload->str); /* not ours: shown as it came */
        fflush(stdout);
        return;
    }
    const char *type = nf > 0 ? f[0] : "";
    if (strcmp(type, "member") == 0 && nf >= 5) {
        printf("%s member %s %s addr=%s incarnation=%s\n", ts, f[1], f[2], f[3], f[4]);
    } else if (strcmp(type, "ring") == 0 && nf >= 5 && (nf - 5) % 3 == 0) {
        printf("%s ring version=%s checksum=%s points=%s moved=%.4f", ts, f[1], f[2], f[3],
               strtod(f[4], NULL));
        for (size_t i = 5; i + 2 < nf; i += 3)
            printf(" %s->%s:%.4f", who(f[i]), who(f[i + 1]), strtod(f[i + 2], NULL));
        putchar('\n');
    } else if (strcmp(type, "state") == 0 && nf >= 4 && (nf - 4) % 4 == 0) {
        /* the state joined in: one line, then each member as a member event would be */
        printf("%s state version=%s checksum=%s points=%s members=%zu\n", ts, f[1], f[2], f[3],
               (nf - 4) / 4);
        for (size_t i = 4; i + 3 < nf; i += 4)
            printf("%s member %s %s addr=%s incarnation=%s\n", ts, f[i], f[i + 1], f[i + 2],
                   f[i + 3]);
    } else {
        /* An event this client does not know: show its fields rather than drop it. */
        printf("%s", ts);
        for (size_t i = 0; i < nf; i++)
            printf(" %s", f[i]);
        putchar('\n');
    }
    fflush(stdout);
}

/* The pub/sub message in r, [message, channel, payload]: its payload, else NULL. */
static const struct rd_resp_reply *message_payload(const struct rd_resp_reply *r)
{
    if (r->type != RD_RESP_ARRAY || r->nelem != 3 || !is_text(r->elem[0]) ||
        strcmp(r->elem[0]->str, "message") != 0 || !is_text(r->elem[2]))
        return NULL;
    return r->elem[2];
}

/* The channels `ringd watch` subscribes to, in the order their confirmations come: the
 * events first, then "state", whose one message is the state they start from. */
static const char *const watch_channels[] = {"members", "ring", "state"};
#define WATCH_CHANNELS (sizeof watch_channels / sizeof watch_channels[0])

static int cmd_watch(const struct opts *o, char *err, size_t errlen)
{
    if (o->nargs > 0)
        return usage_error(err, errlen, "watch takes no arguments, got '%s'", o->args[0]);
    if (o->has_n) return usage_error(err, errlen, "-n is not an option of '%s'", "watch");
    /* SIGINT interrupts the blocking read (no SA_RESTART): we then exit 0. */
    struct sigaction sa = {.sa_handler = on_sigint};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct conn c;
    int rc = conn_open(&c, socket_path(o), false, err, errlen);
    if (rc < 0) return rc;
    const char *req[1 + WATCH_CHANNELS] = {"SUBSCRIBE"};
    for (size_t i = 0; i < WATCH_CHANNELS; i++)
        req[1 + i] = watch_channels[i];
    rc = conn_send(&c, req, 1 + WATCH_CHANNELS, err, errlen);
    /* one confirmation per channel, [subscribe, channel, count], before any message */
    for (size_t i = 0; i < WATCH_CHANNELS && rc == 0; i++) {
        struct rd_resp_reply *r = NULL;
        rc = conn_recv(&c, &r, err, errlen);
        if (rc == 0 && !r)
            rc = interrupted ? 0 : no_reply(err, errlen);
        else if (rc == 0 && r->type == RD_RESP_ERROR)
            rc = refused(r, err, errlen);
        else if (rc == 0 && (r->type != RD_RESP_ARRAY || r->nelem != 3 || !is_text(r->elem[0]) ||
                             strcmp(r->elem[0]->str, "subscribe") != 0)) {
            rc = unexpected(r, err, errlen); /* it frees r */
            r = NULL;
        }
        rd_resp_reply_free(r);
        if (interrupted) break;
    }
    struct rd_buf store;
    rd_buf_init(&store);
    while (rc == 0 && !interrupted) {
        struct rd_resp_reply *r = NULL;
        rc = conn_recv(&c, &r, err, errlen);
        if (rc < 0 || !r) break; /* a read error, the agent went away, or Ctrl-C */
        const struct rd_resp_reply *payload = message_payload(r);
        if (payload) print_event(payload, o->json, &store);
        rd_resp_reply_free(r);
    }
    rd_buf_free(&store);
    /* Only our own Ctrl-C or SIGTERM is a normal end: a watcher whose agent is gone sees
     * no more changes, and whoever runs it (a script, a supervisor) must learn that. */
    if (rc == 0 && !interrupted) {
        snprintf(err, errlen, "the agent closed the connection (it stopped or left)");
        rc = RD_EIO;
    }
    conn_close(&c);
    return rc;
}

/* ============================================================ entry */

struct subcommand {
    const char *name;
    bool json; /* takes --json */
    bool n;    /* takes -n */
    const char *usage;
};

static const struct subcommand subcommands[] = {
    {"members", true, false,
     "ringd members [--status S] [--tag K=V] [--zone Z] [--json] [--socket PATH]"},
    {"owner", true, true, "ringd owner KEY [-n N] [--json] [--socket PATH]"},
    {"assign", true, false, "ringd assign C KEY... [--json] [--socket PATH]"},
    {"ring", false, false, "ringd ring [--socket PATH]"},
    {"info", true, false, "ringd info [--json] [--socket PATH]"},
    {"watch", true, false, "ringd watch [--json] [--socket PATH]"},
    {"join", false, false, "ringd join HOST:PORT [--socket PATH]"},
    {"leave", false, false, "ringd leave [--socket PATH]"},
    {"ready", false, false, "ringd ready [--socket PATH]"},
    {"keys", true, false,
     "ringd keys list [--json] | install KEY|- | use FINGERPRINT | remove FINGERPRINT "
     "[--socket PATH]"},
    {"tags", false, false, "ringd tags set KEY VALUE | del KEY [--socket PATH]"},
    {"weight", false, false, "ringd weight W [--socket PATH]"},
    {"force-leave", false, false, "ringd force-leave [--prune] NAME [--socket PATH]"},
    {"metrics", false, false, "ringd metrics [--socket PATH]"},
};

int rd_client_run(int argc, char **argv, char *err, size_t errlen)
{
    struct opts o;
    int rc = parse_args(argc, argv, &o, err, errlen);
    if (rc < 0) return rc;
    if (!o.cmd) {
        if (!o.help) return usage_error(err, errlen, "missing command");
        client_usage();
        return 0;
    }
    const struct subcommand *sc = NULL;
    for (size_t i = 0; i < sizeof subcommands / sizeof subcommands[0]; i++)
        if (strcmp(o.cmd, subcommands[i].name) == 0) sc = &subcommands[i];
    if (!sc) return usage_error(err, errlen, "unknown command '%s'", o.cmd);
    if (o.help) {
        printf("usage: %s\n\n", sc->usage);
        client_usage();
        return 0;
    }
    if (o.json && !sc->json)
        return usage_error(err, errlen, "--json is not an option of '%s'", sc->name);
    if (o.has_n && !sc->n) return usage_error(err, errlen, "-n is not an option of '%s'", sc->name);
    if (o.prune && strcmp(sc->name, "force-leave") != 0)
        return usage_error(err, errlen, "--prune is not an option of '%s'", sc->name);
    if ((o.statuses || o.ntags || o.zone) && strcmp(sc->name, "members") != 0)
        return usage_error(err, errlen, "--status, --tag and --zone are options of 'members' only");
    if (strcmp(sc->name, "members") == 0) return cmd_members(&o, err, errlen);
    if (strcmp(sc->name, "owner") == 0) return cmd_owner(&o, err, errlen);
    if (strcmp(sc->name, "assign") == 0) return cmd_assign(&o, err, errlen);
    if (strcmp(sc->name, "ring") == 0) return cmd_ring(&o, err, errlen);
    if (strcmp(sc->name, "info") == 0) return cmd_info(&o, err, errlen);
    if (strcmp(sc->name, "watch") == 0) return cmd_watch(&o, err, errlen);
    if (strcmp(sc->name, "join") == 0) return cmd_simple(&o, "join", "JOIN", 1, err, errlen);
    if (strcmp(sc->name, "keys") == 0) return cmd_keys(&o, err, errlen);
    if (strcmp(sc->name, "ready") == 0) return cmd_ready(&o, err, errlen);
    if (strcmp(sc->name, "tags") == 0) return cmd_tags(&o, err, errlen);
    if (strcmp(sc->name, "force-leave") == 0) return cmd_force_leave(&o, err, errlen);
    if (strcmp(sc->name, "metrics") == 0) return cmd_metrics(&o, err, errlen);
    if (strcmp(sc->name, "weight") == 0) {
        if (o.nargs != 1) return usage_error(err, errlen, "weight needs one W (0 drains)");
        const char *req[] = {"WEIGHT", o.args[0]};
        return call_print(&o, req, 2, err, errlen);
    }
    return cmd_simple(&o, "leave", "LEAVE", 0, err, errlen);
}
