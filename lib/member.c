/*
 * member.c — validation and formatting of member records (see member.h).
 *
 * The alphabets are narrow on purpose: names, zones and tags end up in logfmt lines,
 * RESP replies and shell pipelines, and a name that needs quoting anywhere is a bug report
 * waiting to happen.
 */
#include "member.h"

#include <stdio.h>
#include <string.h>

#include "rd_err.h"

static bool name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-' || c == ':' || c == '@';
}

static bool in_alphabet(const char *s, size_t len, bool slash)
{
    for (size_t i = 0; i < len; i++)
        if (!name_char(s[i]) && !(slash && s[i] == '/')) return false;
    return true;
}

bool rd_name_valid(const char *s, size_t len)
{
    return len >= 1 && len <= RD_NAME_MAX && in_alphabet(s, len, false);
}

bool rd_zone_valid(const char *s, size_t len)
{
    return len <= RD_ZONE_MAX && in_alphabet(s, len, false);
}

bool rd_tags_valid(const char *s, size_t len)
{
    if (len > RD_TAGS_MAX) return false;
    size_t i = 0;
    while (i < len) {
        /* one item: key=value, both non-empty */
        size_t k = i;
        while (i < len && s[i] != '=' && s[i] != ',')
            i++;
        if (i == k || i == len || s[i] != '=' || !in_alphabet(s + k, i - k, true)) return false;
        size_t v = ++i;
        while (i < len && s[i] != ',')
            i++;
        if (i == v || !in_alphabet(s + v, i - v, true)) return false;
        if (i < len && ++i == len) /* trailing comma */
            return false;
    }
    return true;
}

/* Copies the items of `tags` but the one keyed `key` into out; true if that one was there. */
static bool tags_without(const char *tags, const char *key, char *out)
{
    size_t klen = strlen(key), n = 0;
    bool found = false;
    for (const char *p = tags; *p;) {
        size_t len = strcspn(p, ",");
        if (len > klen && strncmp(p, key, klen) == 0 && p[klen] == '=') {
            found = true;
        } else {
            if (n) out[n++] = ',';
            memcpy(out + n, p, len);
            n += len;
        }
        p += len;
        if (*p == ',') p++;
    }
    out[n] = '\0';
    return found;
}

int rd_tags_set(char *tags, const char *key, const char *value)
{
    size_t kl = strlen(key), vl = strlen(value);
    if (kl == 0 || vl == 0 || kl > RD_TAGS_MAX || vl > RD_TAGS_MAX || !in_alphabet(key, kl, true) ||
        !in_alphabet(value, vl, true))
        return RD_EINVAL;
    char next[RD_TAGS_MAX + 1];
    tags_without(tags, key, next);
    size_t have = strlen(next);
    if (have + (have ? 1 : 0) + kl + 1 + vl > RD_TAGS_MAX) return RD_E2BIG;
    char *p = next + have;
    if (have) *p++ = ',';
    memcpy(p, key, kl);
    p[kl] = '=';
    memcpy(p + kl + 1, value, vl + 1);
    strcpy(tags, next);
    return 0;
}

int rd_tags_del(char *tags, const char *key)
{
    char next[RD_TAGS_MAX + 1];
    if (!tags_without(tags, key, next)) return RD_ENOENT;
    strcpy(tags, next);
    return 0;
}

bool rd_tags_get(const char *tags, const char *key, char *out, size_t cap)
{
    size_t klen = strlen(key);
    for (const char *p = tags; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > klen && p[klen] == '=' && memcmp(p, key, klen) == 0) {
            size_t vlen = len - klen - 1;
            if (vlen >= cap) return false;
            memcpy(out, p + klen + 1, vlen);
            out[vlen] = '\0';
            return true;
        }
        p += len + (end ? 1 : 0);
    }
    return false;
}

bool rd_member_valid(const struct rd_member *m)
{
    size_t n = strnlen(m->name, sizeof m->name);
    size_t z = strnlen(m->zone, sizeof m->zone);
    size_t t = strnlen(m->tags, sizeof m->tags);
    return n < sizeof m->name && rd_name_valid(m->name, n) && z < sizeof m->zone &&
           rd_zone_valid(m->zone, z) && t < sizeof m->tags && rd_tags_valid(m->tags, t) &&
           m->status <= RD_LEFT && m->weight <= RD_WEIGHT_MAX &&
           (m->addr.family == 0 || m->addr.family == 4 || m->addr.family == 6);
}

const char *rd_status_name(int status)
{
    switch (status) {
    case RD_ALIVE:
        return "alive";
    case RD_SUSPECT:
        return "suspect";
    case RD_DEAD:
        return "dead";
    case RD_LEFT:
        return "left";
    }
    return "?";
}

bool rd_addr_equal(const struct rd_addr *a, const struct rd_addr *b)
{
    if (a->family != b->family || a->port != b->port) return false;
    size_t n = a->family == 6 ? 16 : a->family == 4 ? 4 : 0;
    return memcmp(a->ip, b->ip, n) == 0;
}

/* IPv6 text form (RFC 5952): lowercase hex, the longest run (>= 2) of zero groups as "::". */
static void format_ip6(const uint8_t ip[16], char *out, size_t len)
{
    unsigned g[8];
    for (int i = 0; i < 8; i++)
        g[i] = (unsigned)ip[2 * i] << 8 | ip[2 * i + 1];
    int best = -1, best_len = 0;
    for (int i = 0; i < 8;) {
        int j = i;
        while (j < 8 && g[j] == 0)
            j++;
        if (j - i > best_len && j - i >= 2) {
            best = i;
            best_len = j - i;
        }
        i = j > i ? j : i + 1;
    }
    size_t n = 0;
    out[0] = '\0';
    for (int i = 0; i < 8 && n < len; i++) {
        if (i == best) {
            n += (size_t)snprintf(out + n, len - n, "::");
            i += best_len - 1;
            continue;
        }
        bool sep = i > 0 && i != best + best_len;
        n += (size_t)snprintf(out + n, len - n, "%s%x", sep ? ":" : "", g[i]);
    }
}

char *rd_addr_format(const struct rd_addr *a, char *buf, size_t len)
{
    if (len == 0) return buf;
    if (a->family == 4) {
        snprintf(buf, len, "%u.%u.%u.%u:%u", a->ip[0], a->ip[1], a->ip[2], a->ip[3], a->port);
    } else if (a->family == 6) {
        char ip[48];
        format_ip6(a->ip, ip, sizeof ip);
        snprintf(buf, len, "[%s]:%u", ip, a->port);
    } else {
        snprintf(buf, len, "-");
    }
    return buf;
}
