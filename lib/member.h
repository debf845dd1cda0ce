/*
 * member.h — what the cluster knows about one member, as plain data.
 *
 * These are the records that the wire carries and that membership hands out. They are
 * fixed-size and bounded (names, zone and tags have documented limits) so that decoders
 * never allocate per field. Membership's own table keeps them compact instead, with the
 * strings interned (swim.c), since every member holds one for every other.
 * Validation lives here so that flags, decoders and the core apply the same rules.
 */
#ifndef RD_MEMBER_H
#define RD_MEMBER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** Longest member name in bytes. Names are 1..64 bytes of [A-Za-z0-9._:@-]. */
#define RD_NAME_MAX 64
/** Longest zone in bytes (0 = no zone); same alphabet as names. */
#define RD_ZONE_MAX 32
/** Longest tag string in bytes: "k=v,k=v"; keys and values in the name alphabet plus '/'. */
#define RD_TAGS_MAX 255

/** Weights are fixed point: RD_WEIGHT_ONE = 1.0. A member gets round(vnodes*weight) points. */
#define RD_WEIGHT_ONE 1000u
/** Largest weight, 100.0. Smallest is 0.001 (1). */
#define RD_WEIGHT_MAX 100000u

/** A network address as bytes, so the core can hold one without knowing about sockets. */
struct rd_addr {
    uint8_t family; /**< 4, 6, or 0 for "no address" */
    uint16_t port;  /**< host byte order */
    uint8_t ip[16]; /**< IPv4 in the first 4 bytes, IPv6 in all 16 */
};

/** Member status. At equal incarnation a later status wins: alive < suspect < dead < left. */
enum rd_status {
    RD_ALIVE = 0,
    RD_SUSPECT = 1,
    RD_DEAD = 2,
    RD_LEFT = 3,
};

/** One member as known at one incarnation. Strings are NUL-terminated. */
struct rd_member {
    char name[RD_NAME_MAX + 1];
    struct rd_addr addr;
    uint64_t incarnation; /**< raised only by the member itself; starts from its start time */
    uint8_t status;       /**< enum rd_status */
    uint32_t weight;      /**< fixed point, RD_WEIGHT_ONE = 1.0; 0..RD_WEIGHT_MAX, 0: drained */
    char zone[RD_ZONE_MAX + 1];
    char tags[RD_TAGS_MAX + 1];
    /** For a suspect record: the member that suspected it (empty otherwise). Counting
     *  distinct accusers is how Lifeguard shortens the suspicion timeout. */
    char accuser[RD_NAME_MAX + 1];
};

/** True if `s[0..len)` is a valid member name. */
bool rd_name_valid(const char *s, size_t len);
/** True if `s[0..len)` is a valid zone (the empty zone included). */
bool rd_zone_valid(const char *s, size_t len);
/** True if `s[0..len)` is a valid tag string: empty, or "k=v" items joined by ','. */
bool rd_tags_valid(const char *s, size_t len);
/**
 * Sets tag `key` to `value` in the tag string `tags` (RD_TAGS_MAX + 1 bytes): replaced in
 * place if the key is there, appended if not. Key and value are 1 or more characters of
 * the tag alphabet (A-Z a-z 0-9 . _ - : @ /), as --tag K=V takes them. Returns 0,
 * RD_EINVAL for a bad key or value, RD_E2BIG when the tags would not fit; `tags` is
 * unchanged on failure.
 */
int rd_tags_set(char *tags, const char *key, const char *value);
/** Removes tag `key` from `tags`. Returns 0, or RD_ENOENT when there is no such tag. */
int rd_tags_del(char *tags, const char *key);
/** Copies the value of tag `key` in `tags` into out[0..cap); false if there is no such tag or
 *  its value does not fit (out is then unchanged). */
bool rd_tags_get(const char *tags, const char *key, char *out, size_t cap);
/** True if the whole record is valid: name, zone, tags, status, weight, address family. */
bool rd_member_valid(const struct rd_member *m);

/** Static name of a status: "alive", "suspect", "dead", "left" (or "?"). */
const char *rd_status_name(int status);

/** Equal family, ip bytes in use and port. */
bool rd_addr_equal(const struct rd_addr *a, const struct rd_addr *b);

/**
 * Formats `a` as "1.2.3.4:7946" or "[::1]:7946" into buf (NUL-terminated, truncated to
 * len). Returns buf. RD_ADDR_STRLEN is always enough.
 */
#define RD_ADDR_STRLEN 48
char *rd_addr_format(const struct rd_addr *a, char *buf, size_t len);

#endif
