/*
 * wire.c — the gossip wire format (layout and rationale in wire.h, spec in PROTOCOL.md).
 *
 * Two halves that share nothing but the layout:
 * - The encoder drives msgpack-c's packer with a write callback into the caller's fixed
 *   buffer; the callback refuses any write that would pass the end, and that refusal is
 *   sticky, so a full buffer yields RD_E2BIG and never a byte past `cap`.
 * - The decoder is a cursor over untrusted bytes. Each read_*() helper reads one msgpack
 *   element of exactly the subset the format uses, checks its declared length against the
 *   bytes left before touching them, and advances the cursor only on success. The helpers
 *   tell "wrong type" from "ran out of bytes" so that the caller can name the field that
 *   was bad, while any prefix of a valid packet is reported as "truncated".
 */
#include "wire.h"

#include <string.h>

#include <msgpack.h>

#include "rd_err.h"
#include "ring.h"

/* The constants in wire.h assume these encodings; keep them honest. */
_Static_assert(RD_NAME_MAX < 256 && RD_ZONE_MAX < 256 && RD_TAGS_MAX < 256,
               "names, zones and tags must fit a str8, as the *_MAX sizes assume");
_Static_assert(RD_MAX_MEMBERS <= 0xffff && RD_PACKET_MAX_MSGS <= 0xffff,
               "counts must fit an array16, as RD_WIRE_HEADER_MAX assumes");
_Static_assert(RD_MSG_SYNC < 0x80, "msg types are positive fixints, as RD_WIRE_MSG_WORST assumes");
_Static_assert(RD_WIRE_FRAME_MAX <= UINT32_MAX, "a frame length must fit its u32 prefix");
_Static_assert(RD_WIRE_FRAME_PREFIX + RD_WIRE_FRAME_MAX <= RD_WIRE_FRAME_BUFFER_MAX,
               "a whole frame must fit the buffer bound that sync's memory bound assumes");
_Static_assert(RD_WIRE_FRAME_PREFIX + RD_WIRE_FRAME_MAX > RD_WIRE_FRAME_BUFFER_MAX / 2,
               "the buffer bound is the power of two a largest frame doubles up to: lower it");
/* The core budgets datagrams with lib/msg.h's numbers: they must cover the derived ones. */
_Static_assert(RD_WIRE_HEADER_MAX >= RD_WIRE_HEADER_WORST, "RD_WIRE_HEADER_MAX too small");
_Static_assert(RD_WIRE_MSG_MAX >= RD_WIRE_MSG_WORST, "RD_WIRE_MSG_MAX too small");
_Static_assert(RD_WIRE_MEMBER_BASE >= RD_WIRE_MEMBER_FIXED_WORST, "RD_WIRE_MEMBER_BASE too small");
_Static_assert(RD_WIRE_HEADER_MAX + RD_PACKET_MAX_MSGS * RD_WIRE_MSG_MAX + RD_WIRE_MEMBER_MAX <=
                   RD_PACKET_BUDGET,
               "a datagram full of msgs must still have room for one member record");
_Static_assert(RD_WIRE_VERSION <= 0xff, "the version is one byte");
_Static_assert(RD_RING_VNODES_MAX <= UINT16_MAX, "vnodes must fit a uint16, as RD_WIRE_RING_WORST "
                                                 "assumes");

/* Sizes of the address as a bin body: IP bytes + 2 bytes of port. */
#define ADDR4_LEN (4 + 2)
#define ADDR6_LEN (16 + 2)

/* Elements in the arrays of this version. */
#define PACKET_FIELDS 3
#define MSG_FIELDS    6
#define SYNC_FIELDS   7 /* a SYNC adds its ring parameters */
#define RING_FIELDS   3
#define MEMBER_FIELDS 8

/* ------------------------------------------------------------------------------------ */
/* Encoding                                                                             */
/* ------------------------------------------------------------------------------------ */

/* The caller's buffer as a msgpack_packer sink. */
struct sink {
    char *buf;
    size_t cap;
    size_t len;
    bool full; /* sticky: after one refused write, refuse all, so no later write lands */
};

static int sink_write(void *data, const char *src, size_t n)
{
    struct sink *s = data;
    if (s->full || n > s->cap - s->len) {
        s->full = true;
        return -1;
    }
    if (n > 0) /* memcpy with a NULL source is undefined even for 0 bytes */
        memcpy(s->buf + s->len, src, n);
    s->len += n;
    return 0;
}

static size_t addr_len(uint8_t family)
{
    return family == 4 ? ADDR4_LEN : family == 6 ? ADDR6_LEN : 0;
}

/* Length of a NUL-terminated string in a char[max + 1], or max + 1 if it is not one. */
static size_t bounded_len(const char *s, size_t max)
{
    return strnlen(s, max + 1);
}

static bool addr_family_ok(const struct rd_addr *a)
{
    return a->family == 0 || a->family == 4 || a->family == 6;
}

/* What the encoder checks: exactly what keeps the output within the documented sizes. */
static bool packet_in_bounds(const struct rd_packet *p)
{
    if (p->nmsgs > RD_PACKET_MAX_MSGS || p->nmembers > RD_MAX_MEMBERS) return false;
    if (p->nmembers > 0 && p->members == NULL) return false;
    if (bounded_len(p->from, RD_NAME_MAX) > RD_NAME_MAX) return false;
    for (size_t i = 0; i < p->nmsgs; i++) {
        const struct rd_msg *m = &p->msgs[i];
        if (m->type < RD_MSG_PING || m->type > RD_MSG_SYNC ||
            bounded_len(m->target, RD_NAME_MAX) > RD_NAME_MAX || !addr_family_ok(&m->target_addr))
            return false;
        if (m->type == RD_MSG_SYNC &&
            (m->ring.spec < 1 || m->ring.vnodes < 1 || m->ring.vnodes > RD_RING_VNODES_MAX))
            return false;
    }
    for (size_t i = 0; i < p->nmembers; i++) {
        const struct rd_member *m = &p->members[i];
        if (bounded_len(m->name, RD_NAME_MAX) > RD_NAME_MAX ||
            bounded_len(m->zone, RD_ZONE_MAX) > RD_ZONE_MAX ||
            bounded_len(m->tags, RD_TAGS_MAX) > RD_TAGS_MAX ||
            bounded_len(m->accuser, RD_NAME_MAX) > RD_NAME_MAX || !addr_family_ok(&m->addr))
            return false;
    }
    return true;
}

static void pack_str(msgpack_packer *pk, const char *s)
{
    msgpack_pack_str_with_body(pk, s, strlen(s));
}

/* An address as bin(0|6|18): IP bytes, then the port big-endian. */
static void pack_addr(msgpack_packer *pk, const struct rd_addr *a)
{
    unsigned char b[ADDR6_LEN];
    size_t n = addr_len(a->family);
    if (n > 0) {
        memcpy(b, a->ip, n - 2);
        b[n - 2] = (unsigned char)(a->port >> 8);
        b[n - 1] = (unsigned char)(a->port & 0xff);
    }
    msgpack_pack_bin_with_body(pk, b, n);
}

static void pack_msg(msgpack_packer *pk, const struct rd_msg *m)
{
    bool sync = m->type == RD_MSG_SYNC;
    msgpack_pack_array(pk, sync ? SYNC_FIELDS : MSG_FIELDS);
    msgpack_pack_uint8(pk, m->type);
    msgpack_pack_uint8(pk, m->flags);
    msgpack_pack_uint32(pk, m->seq);
    msgpack_pack_uint64(pk, m->checksum);
    pack_str(pk, m->target);
    pack_addr(pk, &m->target_addr);
    if (!sync) return;
    msgpack_pack_array(pk, RING_FIELDS);
    msgpack_pack_uint8(pk, m->ring.spec);
    msgpack_pack_uint8(pk, m->ring.mode);
    msgpack_pack_uint16(pk, m->ring.vnodes);
}

static void pack_member(msgpack_packer *pk, const struct rd_member *m)
{
    msgpack_pack_array(pk, MEMBER_FIELDS);
    pack_str(pk, m->name);
    pack_addr(pk, &m->addr);
    msgpack_pack_uint64(pk, m->incarnation);
    msgpack_pack_uint8(pk, m->status);
    msgpack_pack_uint32(pk, m->weight);
    pack_str(pk, m->zone);
    pack_str(pk, m->tags);
    pack_str(pk, m->accuser);
}

int rd_wire_encode(const struct rd_packet *p, char *buf, size_t cap, size_t *len)
{
    if (!packet_in_bounds(p)) return RD_EINVAL;

    struct sink s = {.buf = buf, .cap = cap};
    const char header[RD_WIRE_MAGIC_LEN] = {'R', 'D', RD_WIRE_VERSION, 0};
    sink_write(&s, header, sizeof header);

    /* The pack calls' own results are not checked one by one: the sink remembers. */
    msgpack_packer pk;
    msgpack_packer_init(&pk, &s, sink_write);
    msgpack_pack_array(&pk, PACKET_FIELDS);
    pack_str(&pk, p->from);
    msgpack_pack_array(&pk, p->nmsgs);
    for (size_t i = 0; i < p->nmsgs; i++)
        pack_msg(&pk, &p->msgs[i]);
    msgpack_pack_array(&pk, p->nmembers);
    for (size_t i = 0; i < p->nmembers; i++)
        pack_member(&pk, &p->members[i]);

    if (s.full) return RD_E2BIG;
    *len = s.len;
    return 0;
}

/* Size of one unsigned integer as msgpack-c packs it (smallest form). */
static size_t uint_size(uint64_t v)
{
    return v < 0x80 ? 1 : v <= 0xff ? 2 : v <= 0xffff ? 3 : v <= 0xffffffff ? 5 : 9;
}

/* Size of a str of n bytes, header included, as msgpack-c packs it. */
static size_t str_size(size_t n)
{
    return (n < 32 ? 1 : n < 256 ? 2 : n < 65536 ? 3 : 5) + n;
}

size_t rd_wire_member_size_max(const struct rd_member *m)
{
    /* Mirrors pack_member(); test_wire checks the two agree byte for byte. */
    size_t addr = addr_family_ok(&m->addr) ? 2 + addr_len(m->addr.family) : RD_WIRE_ADDR_MAX;
    return 1 + str_size(bounded_len(m->name, RD_NAME_MAX)) + addr + uint_size(m->incarnation) +
           uint_size(m->status) + uint_size(m->weight) +
           str_size(bounded_len(m->zone, RD_ZONE_MAX)) +
           str_size(bounded_len(m->tags, RD_TAGS_MAX)) +
           str_size(bounded_len(m->accuser, RD_NAME_MAX));
}

/* ------------------------------------------------------------------------------------ */
/* Decoding                                                                             */
/* ------------------------------------------------------------------------------------ */

/*
 * Results of the read_*() helpers. On anything but R_OK the cursor has not moved.
 *   R_BAD   the element is not of the type asked for (or not in the subset at all)
 *   R_SHORT the bytes end before the element does
 *   R_BIG   an array declares more elements than the caller's limit
 */
enum { R_OK = 0, R_BAD = -1, R_SHORT = -2, R_BIG = -3 };

static uint64_t load_be(const char *p, size_t n)
{
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v << 8 | (uint8_t)p[i];
    return v;
}

/* Reads the n-byte big-endian length or value that follows a type byte at *pos. */
static int read_follow(const char *p, const char *end, size_t n, uint64_t *v)
{
    if ((size_t)(end - p) - 1 < n) /* p < end here: the type byte was there */
        return R_SHORT;
    *v = load_be(p + 1, n);
    return R_OK;
}

/* positive fixint, uint 8/16/32/64. Signed forms are refused even for values >= 0. */
static int read_uint(const char **pos, const char *end, uint64_t *v)
{
    const char *p = *pos;
    if (p == end) return R_SHORT;
    uint8_t t = (uint8_t)*p;
    size_t n;
    if (t <= 0x7f) {
        *v = t;
        *pos = p + 1;
        return R_OK;
    }
    switch (t) {
    case 0xcc:
        n = 1;
        break;
    case 0xcd:
        n = 2;
        break;
    case 0xce:
        n = 4;
        break;
    case 0xcf:
        n = 8;
        break;
    default:
        return R_BAD;
    }
    int rc = read_follow(p, end, n, v);
    if (rc == R_OK) *pos = p + 1 + n;
    return rc;
}

/*
 * A string or binary header (n = bytes of its length field, 0 for fixstr), then the
 * declared length checked against the bytes left. *s points into the caller's buffer.
 */
static int read_body(const char **pos, const char *end, const char *p, size_t n, uint64_t len,
                     const char **s, size_t *slen)
{
    if (n > 0 && read_follow(p, end, n, &len) < 0) return R_SHORT;
    const char *body = p + 1 + n;
    if (len > (size_t)(end - body)) return R_SHORT;
    *s = body;
    *slen = (size_t)len;
    *pos = body + len;
    return R_OK;
}

/* fixstr, str8, str16. No field is longer than 255 bytes, so str32 is not in the subset. */
static int read_str(const char **pos, const char *end, const char **s, size_t *len)
{
    const char *p = *pos;
    if (p == end) return R_SHORT;
    uint8_t t = (uint8_t)*p;
    if ((t & 0xe0) == 0xa0) return read_body(pos, end, p, 0, t & 0x1f, s, len);
    if (t == 0xd9) return read_body(pos, end, p, 1, 0, s, len);
    if (t == 0xda) return read_body(pos, end, p, 2, 0, s, len);
    return R_BAD;
}

/* bin8, bin16. */
static int read_bin(const char **pos, const char *end, const char **s, size_t *len)
{
    const char *p = *pos;
    if (p == end) return R_SHORT;
    uint8_t t = (uint8_t)*p;
    if (t == 0xc4) return read_body(pos, end, p, 1, 0, s, len);
    if (t == 0xc5) return read_body(pos, end, p, 2, 0, s, len);
    return R_BAD;
}

/*
 * fixarray, array16, array32. The count is checked against `max` first (so an absurd
 * count is reported as over the limit) and then against the bytes left, since every
 * element takes at least one byte: a count that passes bounds the loop over it.
 */
static int read_array(const char **pos, const char *end, size_t max, size_t *count)
{
    const char *p = *pos;
    if (p == end) return R_SHORT;
    uint8_t t = (uint8_t)*p;
    uint64_t n;
    size_t hdr;
    if ((t & 0xf0) == 0x90) {
        n = t & 0x0f;
        hdr = 0;
    } else if (t == 0xdc || t == 0xdd) {
        hdr = t == 0xdc ? 2 : 4;
        if (read_follow(p, end, hdr, &n) < 0) return R_SHORT;
    } else {
        return R_BAD;
    }
    if (n > max) return R_BIG;
    const char *first = p + 1 + hdr;
    if (n > (size_t)(end - first)) return R_SHORT;
    *count = (size_t)n;
    *pos = first;
    return R_OK;
}

/*
 * Skips one unknown trailing element: a uint, str, bin, or an array of those nested at
 * most `depth` deep. Each element consumes at least one byte, so this is linear in the
 * input and the recursion is bounded by `depth`.
 */
static int skip_value(const char **pos, const char *end, int depth)
{
    uint64_t u;
    const char *s;
    size_t n;
    int rc;
    if ((rc = read_uint(pos, end, &u)) != R_BAD) return rc;
    if ((rc = read_str(pos, end, &s, &n)) != R_BAD) return rc;
    if ((rc = read_bin(pos, end, &s, &n)) != R_BAD) return rc;
    if (depth == 0) return R_BAD;
    const char *p = *pos;
    if ((rc = read_array(&p, end, SIZE_MAX, &n)) != R_OK) return rc;
    for (size_t i = 0; i < n; i++)
        if ((rc = skip_value(&p, end, depth - 1)) != R_OK) return rc;
    *pos = p;
    return R_OK;
}

/* Skips the elements of an array beyond the `known` ones this version reads. */
static int skip_extra(const char **pos, const char *end, size_t count, size_t known)
{
    for (size_t i = known; i < count; i++) {
        int rc = skip_value(pos, end, RD_WIRE_EXTRA_DEPTH);
        if (rc != R_OK) return rc;
    }
    return R_OK;
}

/* Decoder failure: the code to return, with its reason. */
struct fail {
    int err;
    const char *why;
};

/*
 * Turns a read_*() result into a failure: running out of bytes is "truncated" whatever
 * the field; a wrong type (or any other refusal) is reported with the field's reason.
 */
static int reject(struct fail *f, int rc, const char *why)
{
    f->err = RD_EPROTO;
    f->why = rc == R_SHORT ? "truncated" : why;
    return -1;
}

/* A name-like string into dst[RD_NAME_MAX + 1]: valid name, or empty if allow_empty. */
static int read_name(const char **pos, const char *end, char *dst, bool allow_empty, struct fail *f,
                     const char *why)
{
    const char *s;
    size_t n;
    int rc = read_str(pos, end, &s, &n);
    if (rc != R_OK) return reject(f, rc, why);
    if (!(allow_empty && n == 0) && !rd_name_valid(s, n)) return reject(f, R_BAD, why);
    memcpy(dst, s, n); /* n <= RD_NAME_MAX, checked by rd_name_valid */
    dst[n] = '\0';
    return 0;
}

static int read_addr(const char **pos, const char *end, struct rd_addr *a, struct fail *f,
                     const char *why)
{
    const char *s;
    size_t n;
    int rc = read_bin(pos, end, &s, &n);
    if (rc != R_OK) return reject(f, rc, why);
    memset(a, 0, sizeof *a);
    if (n == 0) return 0;
    if (n != ADDR4_LEN && n != ADDR6_LEN) return reject(f, R_BAD, why);
    a->family = n == ADDR4_LEN ? 4 : 6;
    memcpy(a->ip, s, n - 2);
    a->port = (uint16_t)load_be(s + n - 2, 2);
    return 0;
}

/* A uint field no larger than max, with min <= value. */
static int read_uint_in(const char **pos, const char *end, uint64_t min, uint64_t max, uint64_t *v,
                        struct fail *f, const char *why)
{
    int rc = read_uint(pos, end, v);
    if (rc != R_OK) return reject(f, rc, why);
    if (*v < min || *v > max) return reject(f, R_BAD, why);
    return 0;
}

/* A SYNC's ring parameters: spec and mode as numbers (whether this agent can build them is
 * the sync layer's question), vnodes within the ring's limits. */
static int decode_ring(const char **pos, const char *end, struct rd_ring_params *r, struct fail *f)
{
    size_t nfields;
    uint64_t v;
    int rc = read_array(pos, end, RING_FIELDS + RD_WIRE_EXTRA_MAX, &nfields);
    if (rc != R_OK || nfields < RING_FIELDS) return reject(f, rc, "bad ring params");
    if (read_uint_in(pos, end, 1, UINT8_MAX, &v, f, "bad ring params") < 0) return -1;
    r->spec = (uint8_t)v;
    if (read_uint_in(pos, end, 0, UINT8_MAX, &v, f, "bad ring params") < 0) return -1;
    r->mode = (uint8_t)v;
    if (read_uint_in(pos, end, 1, RD_RING_VNODES_MAX, &v, f, "bad ring params") < 0) return -1;
    r->vnodes = (uint16_t)v;
    if ((rc = skip_extra(pos, end, nfields, RING_FIELDS)) != R_OK)
        return reject(f, rc, "bad ring params");
    return 0;
}

static int decode_msg(const char **pos, const char *end, struct rd_msg *m, struct fail *f)
{
    size_t nfields;
    uint64_t v;
    int rc = read_array(pos, end, MSG_FIELDS + RD_WIRE_EXTRA_MAX, &nfields);
    if (rc != R_OK || nfields < MSG_FIELDS) return reject(f, rc, "bad msg");
    memset(m, 0, sizeof *m);
    if (read_uint_in(pos, end, RD_MSG_PING, RD_MSG_SYNC, &v, f, "bad msg type") < 0) return -1;
    m->type = (uint8_t)v;
    if (read_uint_in(pos, end, 0, UINT8_MAX, &v, f, "bad msg flags") < 0) return -1;
    m->flags = (uint8_t)v;
    if (read_uint_in(pos, end, 0, UINT32_MAX, &v, f, "bad seq") < 0) return -1;
    m->seq = (uint32_t)v;
    if (read_uint_in(pos, end, 0, UINT64_MAX, &m->checksum, f, "bad checksum") < 0) return -1;
    if (read_name(pos, end, m->target, true, f, "bad target") < 0) return -1;
    if (read_addr(pos, end, &m->target_addr, f, "bad target addr") < 0) return -1;
    size_t known = MSG_FIELDS;
    if (m->type == RD_MSG_SYNC) {
        if (nfields < SYNC_FIELDS) return reject(f, R_BAD, "bad ring params");
        if (decode_ring(pos, end, &m->ring, f) < 0) return -1;
        known = SYNC_FIELDS;
    }
    if ((rc = skip_extra(pos, end, nfields, known)) != R_OK) return reject(f, rc, "bad msg");
    return 0;
}

static int decode_member(const char **pos, const char *end, struct rd_member *m, struct fail *f)
{
    size_t nfields, n;
    uint64_t v;
    const char *s;
    int rc = read_array(pos, end, MEMBER_FIELDS + RD_WIRE_EXTRA_MAX, &nfields);
    if (rc != R_OK || nfields < MEMBER_FIELDS) return reject(f, rc, "bad member");
    memset(m, 0, sizeof *m);
    if (read_name(pos, end, m->name, false, f, "bad name") < 0) return -1;
    if (read_addr(pos, end, &m->addr, f, "bad addr") < 0) return -1;
    if (read_uint_in(pos, end, 0, UINT64_MAX, &m->incarnation, f, "bad incarnation") < 0) return -1;
    if (read_uint_in(pos, end, RD_ALIVE, RD_LEFT, &v, f, "bad status") < 0) return -1;
    m->status = (uint8_t)v;
    if (read_uint_in(pos, end, 0, RD_WEIGHT_MAX, &v, f, "bad weight") < 0) return -1;
    m->weight = (uint32_t)v;

    if ((rc = read_str(pos, end, &s, &n)) != R_OK) return reject(f, rc, "bad zone");
    if (!rd_zone_valid(s, n)) /* checks n <= RD_ZONE_MAX before we copy */
        return reject(f, R_BAD, "bad zone");
    memcpy(m->zone, s, n);
    m->zone[n] = '\0';

    if ((rc = read_str(pos, end, &s, &n)) != R_OK) return reject(f, rc, "bad tags");
    if (!rd_tags_valid(s, n)) /* checks n <= RD_TAGS_MAX before we copy */
        return reject(f, R_BAD, "bad tags");
    memcpy(m->tags, s, n);
    m->tags[n] = '\0';

    if (read_name(pos, end, m->accuser, true, f, "bad accuser") < 0) return -1;

    if ((rc = skip_extra(pos, end, nfields, MEMBER_FIELDS)) != R_OK)
        return reject(f, rc, "bad member");
    return 0;
}

/*
 * A list header of at most `max` elements. More than that is RD_E2BIG (well formed, but
 * more than this receiver takes, which the caller may want to tell apart); any other fault
 * is RD_EPROTO.
 */
static int read_list(const char **pos, const char *end, size_t max, size_t *n, struct fail *f,
                     const char *too_many, const char *bad)
{
    int rc = read_array(pos, end, max, n);
    if (rc == R_BIG) {
        f->err = RD_E2BIG;
        f->why = too_many;
        return -1;
    }
    if (rc != R_OK) return reject(f, rc, bad);
    return 0;
}

static int decode_packet(const char *buf, size_t len, struct rd_packet *p,
                         struct rd_member *members, size_t members_cap, struct fail *f)
{
    /* The header first, so that a packet of another version is named as such. */
    if (len < RD_WIRE_MAGIC_LEN) return reject(f, R_SHORT, NULL);
    if (buf[0] != 'R' || buf[1] != 'D') return reject(f, R_BAD, "bad magic");
    if ((uint8_t)buf[2] != RD_WIRE_VERSION) return reject(f, R_BAD, "unsupported version");
    if (buf[3] != 0) return reject(f, R_BAD, "unknown flags");

    const char *pos = buf + RD_WIRE_MAGIC_LEN;
    const char *end = buf + len;
    size_t nfields, n;
    int rc = read_array(&pos, end, PACKET_FIELDS + RD_WIRE_EXTRA_MAX, &nfields);
    if (rc != R_OK || nfields < PACKET_FIELDS) return reject(f, rc, "bad packet");

    if (read_name(&pos, end, p->from, false, f, "bad from") < 0) return -1;

    if (read_list(&pos, end, RD_PACKET_MAX_MSGS, &n, f, "too many msgs", "bad msgs") < 0) return -1;
    for (size_t i = 0; i < n; i++) {
        if (decode_msg(&pos, end, &p->msgs[i], f) < 0) return -1;
        p->nmsgs = i + 1;
    }

    if (read_list(&pos, end, members_cap, &n, f, "too many members", "bad members") < 0) return -1;
    for (size_t i = 0; i < n; i++)
        if (decode_member(&pos, end, &members[i], f) < 0) return -1;
    p->members = members;
    p->nmembers = n;

    if ((rc = skip_extra(&pos, end, nfields, PACKET_FIELDS)) != R_OK)
        return reject(f, rc, "bad packet");
    if (pos != end) return reject(f, R_BAD, "trailing bytes");
    return 0;
}

int rd_wire_decode(const char *buf, size_t len, struct rd_packet *p, struct rd_member *members,
                   size_t members_cap, const char **reason)
{
    struct fail f = {0, "ok"};
    p->from[0] = '\0';
    p->nmsgs = 0;
    p->nmembers = 0;
    p->members = NULL;
    p->wire_len = len;
    if (decode_packet(buf, len, p, members, members_cap, &f) < 0) {
        p->nmsgs = 0;
        p->nmembers = 0;
        p->members = NULL;
        p->wire_len = 0;
    }
    if (reason != NULL) *reason = f.why;
    return f.err;
}

/* ------------------------------------------------------------------------------------ */
/* TCP framing                                                                          */
/* ------------------------------------------------------------------------------------ */

int rd_wire_frame_header(const char *buf, size_t len, uint32_t *body_len)
{
    if (len < RD_WIRE_FRAME_PREFIX) return RD_EAGAIN;
    uint32_t n = (uint32_t)load_be(buf, RD_WIRE_FRAME_PREFIX);
    *body_len = n;
    return n == 0 || n > RD_WIRE_FRAME_MAX ? RD_E2BIG : 0;
}

void rd_wire_frame_put_header(char *buf, uint32_t body_len)
{
    for (int i = 0; i < RD_WIRE_FRAME_PREFIX; i++)
        buf[i] = (char)(uint8_t)(body_len >> (8 * (RD_WIRE_FRAME_PREFIX - 1 - i)));
}

void rd_wire_frame_reader_init(struct rd_wire_frame_reader *r)
{
    *r = (struct rd_wire_frame_reader){.error = 0};
    rd_buf_init(&r->frame);
}

void rd_wire_frame_reader_free(struct rd_wire_frame_reader *r)
{
    rd_buf_free(&r->frame);
    rd_wire_frame_reader_init(r);
}

/* Appends up to `want` bytes of data[*off..len) to the frame; false if out of memory. */
static bool frame_take(struct rd_wire_frame_reader *r, const char *data, size_t len, size_t *off,
                       size_t want)
{
    size_t n = len - *off < want ? len - *off : want;
    if (rd_buf_append(&r->frame, data + *off, n) < 0) return false;
    *off += n;
    return true;
}

int rd_wire_frame_feed(struct rd_wire_frame_reader *r, const char *data, size_t len, size_t *used)
{
    *used = 0;
    if (r->error < 0) return r->error;
    if (r->done) { /* the previous frame was handed out: start the next one */
        r->frame.len = 0;
        r->body_len = 0;
        r->body = NULL;
        r->done = false;
    }
    size_t off = 0;
    if (r->frame.len < RD_WIRE_FRAME_PREFIX) {
        if (!frame_take(r, data, len, &off, RD_WIRE_FRAME_PREFIX - r->frame.len)) goto nomem;
        int rc = rd_wire_frame_header(r->frame.data, r->frame.len, &r->body_len);
        if (rc == RD_EAGAIN) {
            *used = off;
            return RD_EAGAIN;
        }
        if (rc < 0) {
            r->error = rc;
            *used = off;
            return rc;
        }
    }
    size_t total = RD_WIRE_FRAME_PREFIX + (size_t)r->body_len;
    if (!frame_take(r, data, len, &off, total - r->frame.len)) goto nomem;
    *used = off;
    if (r->frame.len < total) return RD_EAGAIN;
    r->done = true;
    r->body = r->frame.data + RD_WIRE_FRAME_PREFIX;
    return 0;
nomem:
    r->error = RD_ENOMEM;
    *used = off;
    return RD_ENOMEM;
}
