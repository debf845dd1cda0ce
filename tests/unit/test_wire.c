/*
 * test_wire.c — the gossip wire format (proto/wire.h).
 *
 * Golden vectors pin the bytes (hand-written hex, commented field by field, checked both
 * ways: encode gives exactly these bytes, decode gives back the struct). A table of
 * malformed datagrams pins what is refused and with which reason. Random packets, random
 * mutations of valid packets and every prefix of a valid packet check that the decoder
 * never crashes or over-reads (each decode reads from a heap copy of exactly `len` bytes,
 * so ASan sees any over-read) and that whatever it accepts survives a re-encode. The size
 * tests prove the bounds the membership core budgets datagrams with. The frame reader is
 * fed a stream a byte at a time, two frames in one piece, and prefixes it must refuse.
 *
 * The randomised tests print their seed; replay one with RD_TEST_SEED=<seed>.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "rand.h"
#include "ring.h"
#include "rd_err.h"
#include "wire.h"

/* ------------------------------------------------------------------ helpers */

/* Hex text (spaces ignored) to bytes; returns the byte count. */
static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    int half = -1;
    for (const char *c = hex; *c != '\0'; c++) {
        if (*c == ' ' || *c == '\n') continue;
        int v = *c >= '0' && *c <= '9'   ? *c - '0'
                : *c >= 'a' && *c <= 'f' ? *c - 'a' + 10
                : *c >= 'A' && *c <= 'F' ? *c - 'A' + 10
                                         : -1;
        assert_true(v >= 0);
        if (half < 0) {
            half = v;
        } else {
            assert_true(n < cap);
            out[n++] = (uint8_t)(half << 4 | v);
            half = -1;
        }
    }
    assert_int_equal(half, -1);
    return n;
}

static void print_hex(const char *label, const void *buf, size_t len)
{
    print_message("%s (%zu bytes):", label, len);
    for (size_t i = 0; i < len; i++)
        print_message(" %02x", ((const uint8_t *)buf)[i]);
    print_message("\n");
}

/*
 * Decodes from a heap copy of exactly `len` bytes, so that AddressSanitizer catches a
 * read of even one byte past the datagram.
 */
static int decode_exact(const void *bytes, size_t len, struct rd_packet *p,
                        struct rd_member *members, size_t cap, const char **reason)
{
    char *copy = malloc(len > 0 ? len : 1);
    assert_non_null(copy);
    if (len > 0) memcpy(copy, bytes, len);
    int rc = rd_wire_decode(copy, len, p, members, cap, reason);
    free(copy);
    return rc;
}

static bool addr_same(const struct rd_addr *a, const struct rd_addr *b)
{
    return a->family == b->family && rd_addr_equal(a, b);
}

/* NULL if equal, else the first field that differs. */
static const char *packet_diff(const struct rd_packet *a, const struct rd_packet *b)
{
    if (strcmp(a->from, b->from) != 0) return "from";
    if (a->nmsgs != b->nmsgs) return "nmsgs";
    for (size_t i = 0; i < a->nmsgs; i++) {
        const struct rd_msg *x = &a->msgs[i], *y = &b->msgs[i];
        if (x->type != y->type) return "msg type";
        if (x->flags != y->flags) return "msg flags";
        if (x->seq != y->seq) return "msg seq";
        if (x->checksum != y->checksum) return "msg checksum";
        if (strcmp(x->target, y->target) != 0) return "msg target";
        if (!addr_same(&x->target_addr, &y->target_addr)) return "msg target_addr";
    }
    if (a->nmembers != b->nmembers) return "nmembers";
    for (size_t i = 0; i < a->nmembers; i++) {
        const struct rd_member *x = &a->members[i], *y = &b->members[i];
        if (strcmp(x->name, y->name) != 0) return "member name";
        if (!addr_same(&x->addr, &y->addr)) return "member addr";
        if (x->incarnation != y->incarnation) return "member incarnation";
        if (x->status != y->status) return "member status";
        if (x->weight != y->weight) return "member weight";
        if (strcmp(x->zone, y->zone) != 0) return "member zone";
        if (strcmp(x->tags, y->tags) != 0) return "member tags";
        if (strcmp(x->accuser, y->accuser) != 0) return "member accuser";
    }
    return NULL;
}

static void assert_packets_equal(const struct rd_packet *a, const struct rd_packet *b)
{
    const char *diff = packet_diff(a, b);
    assert_string_equal(diff ? diff : "(equal)", "(equal)");
}

static struct rd_addr addr4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port)
{
    struct rd_addr x = {.family = 4, .port = port, .ip = {a, b, c, d}};
    return x;
}

/* Encodes p, decodes the bytes, and asserts the same packet came back. */
static void assert_round_trip(const struct rd_packet *p)
{
    static char buf[64 * 1024];
    static struct rd_member members[64];
    size_t len = 0;
    assert_int_equal(rd_wire_encode(p, buf, sizeof buf, &len), 0);
    struct rd_packet q;
    const char *why = NULL;
    int rc = decode_exact(buf, len, &q, members, 64, &why);
    if (rc != 0) print_hex(why, buf, len);
    assert_int_equal(rc, 0);
    assert_string_equal(why, "ok");
    assert_packets_equal(p, &q);
}

static uint64_t test_seed(const char *test)
{
    const char *env = getenv("RD_TEST_SEED");
    uint64_t seed = (uint64_t)time(NULL);
    for (const char *c = test; *c != '\0'; c++) /* distinct seeds for tests in one second */
        seed = seed * 31 + (unsigned char)*c;
    if (env != NULL) seed = strtoull(env, NULL, 0);
    print_message("%s: seed=%llu (replay with RD_TEST_SEED=%llu)\n", test, (unsigned long long)seed,
                  (unsigned long long)seed);
    return seed;
}

/* ------------------------------------------------------------------ random packets */

static const char NAME_CHARS[] =
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@-";

static void rand_chars(struct rd_rand *r, char *dst, size_t n, bool slash)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = slash && rd_rand_below(r, 10) == 0
                     ? '/'
                     : NAME_CHARS[rd_rand_below(r, sizeof NAME_CHARS - 1)];
    dst[n] = '\0';
}

/* A valid name of min..max bytes. */
static void rand_name(struct rd_rand *r, char *dst, size_t min, size_t max)
{
    rand_chars(r, dst, min + rd_rand_below(r, (uint32_t)(max - min + 1)), false);
}

/* A valid tag string "k=v,k=v" of at most `max` bytes. */
static void rand_tags(struct rd_rand *r, char *dst, size_t max)
{
    size_t len = 0;
    size_t want = rd_rand_below(r, (uint32_t)max + 1);
    for (;;) {
        size_t k = 1 + rd_rand_below(r, 12), v = 1 + rd_rand_below(r, 40);
        size_t item = (len > 0) + k + 1 + v;
        if (len + item > want) break;
        if (len > 0) dst[len++] = ',';
        rand_chars(r, dst + len, k, true);
        len += k;
        dst[len++] = '=';
        rand_chars(r, dst + len, v, true);
        len += v;
    }
    dst[len] = '\0';
}

static void rand_addr(struct rd_rand *r, struct rd_addr *a)
{
    memset(a, 0, sizeof *a);
    static const uint8_t families[] = {0, 4, 6};
    a->family = families[rd_rand_below(r, 3)];
    if (a->family == 0) return;
    a->port = (uint16_t)rd_rand_next(r);
    for (int i = 0; i < (a->family == 4 ? 4 : 16); i++)
        a->ip[i] = (uint8_t)rd_rand_next(r);
}

/* An integer from a random width class, so that every msgpack uint form shows up. */
static uint64_t rand_uint(struct rd_rand *r)
{
    switch (rd_rand_below(r, 6)) {
    case 0:
        return rd_rand_below(r, 0x80);
    case 1:
        return 0x80 + rd_rand_below(r, 0x80);
    case 2:
        return rd_rand_below(r, 0x10000);
    case 3:
        return (uint32_t)rd_rand_next(r);
    case 4:
        return UINT64_MAX - rd_rand_below(r, 2);
    }
    return rd_rand_next(r);
}

static void rand_member(struct rd_rand *r, struct rd_member *m)
{
    memset(m, 0, sizeof *m);
    rand_name(r, m->name, 1, RD_NAME_MAX);
    rand_addr(r, &m->addr);
    m->incarnation = rand_uint(r);
    m->status = (uint8_t)rd_rand_below(r, RD_LEFT + 1);
    m->weight = rd_rand_below(r, 4) == 0 ? RD_WEIGHT_MAX : 1 + rd_rand_below(r, RD_WEIGHT_MAX);
    if (rd_rand_below(r, 2)) rand_name(r, m->zone, 0, RD_ZONE_MAX);
    rand_tags(r, m->tags, RD_TAGS_MAX);
    if (rd_rand_below(r, 2)) rand_name(r, m->accuser, 1, RD_NAME_MAX);
}

static void rand_msg(struct rd_rand *r, struct rd_msg *m)
{
    memset(m, 0, sizeof *m);
    m->type = (uint8_t)(RD_MSG_PING + rd_rand_below(r, RD_MSG_SYNC));
    m->flags = (uint8_t)rand_uint(r);
    m->seq = (uint32_t)rand_uint(r);
    m->checksum = rand_uint(r);
    if (rd_rand_below(r, 3)) rand_name(r, m->target, 1, RD_NAME_MAX);
    rand_addr(r, &m->target_addr);
    if (m->type == RD_MSG_SYNC)
        m->ring = (struct rd_ring_params){(uint8_t)(1 + rd_rand_below(r, UINT8_MAX)),
                                          (uint8_t)rd_rand_below(r, UINT8_MAX + 1),
                                          (uint16_t)(1 + rd_rand_below(r, RD_RING_VNODES_MAX))};
}

static void rand_packet(struct rd_rand *r, struct rd_packet *p, struct rd_member *members,
                        size_t max_members)
{
    memset(p, 0, sizeof *p);
    rand_name(r, p->from, 1, RD_NAME_MAX);
    p->nmsgs = rd_rand_below(r, RD_PACKET_MAX_MSGS + 1);
    for (size_t i = 0; i < p->nmsgs; i++)
        rand_msg(r, &p->msgs[i]);
    p->nmembers = rd_rand_below(r, (uint32_t)max_members + 1);
    for (size_t i = 0; i < p->nmembers; i++)
        rand_member(r, &members[i]);
    p->members = members;
}

/* ------------------------------------------------------------------ golden vectors */

/* The packet of the golden vectors, with one member record swapped in. */
static struct rd_packet ping_from_n1(const struct rd_member *member)
{
    struct rd_packet p = {.from = "n1", .nmsgs = 1};
    p.msgs[0] = (struct rd_msg){
        .type = RD_MSG_PING, .seq = 7, .checksum = 0x0123456789abcdefull, .target = "n2"};
    p.nmembers = member ? 1 : 0;
    p.members = member;
    return p;
}

#define GOLDEN_HEADER                                                                              \
    "52 44 01 00 "                /* 'R' 'D', version 1, flags 0 */                                \
    "93 "                         /* packet: array(3) */                                           \
    "a2 6e 31 "                   /*   from: "n1" */                                               \
    "91 "                         /*   msgs: array(1) */                                           \
    "96 "                         /*     msg: array(6) */                                          \
    "01 "                         /*       type: PING */                                           \
    "00 "                         /*       flags: 0 */                                             \
    "07 "                         /*       seq: 7 */                                               \
    "cf 01 23 45 67 89 ab cd ef " /*       checksum: uint64 0x0123456789abcdef */                  \
    "a2 6e 32 "                   /*       target: "n2" */                                         \
    "c4 00 "                      /*       target_addr: bin(0), none */                            \
    "91 "                         /*   members: array(1) */

/* Encode gives exactly `hex`; decode of `hex` gives back `p`. */
static void assert_golden(const struct rd_packet *p, const char *hex)
{
    uint8_t want[512];
    size_t want_len = unhex(hex, want, sizeof want);
    char got[512];
    size_t len = 0;
    assert_int_equal(rd_wire_encode(p, got, sizeof got, &len), 0);
    if (len != want_len || memcmp(got, want, len) != 0) {
        print_hex("want", want, want_len);
        print_hex("got ", got, len);
    }
    assert_int_equal(len, want_len);
    assert_memory_equal(got, want, len);

    struct rd_packet q;
    struct rd_member members[RD_PACKET_MAX_MEMBERS];
    const char *why = NULL;
    assert_int_equal(decode_exact(want, want_len, &q, members, RD_PACKET_MAX_MEMBERS, &why), 0);
    assert_string_equal(why, "ok");
    assert_packets_equal(p, &q);
}

static void test_wire_golden_ping_with_ipv4_member(void **state)
{
    struct rd_member m = {.name = "n2",
                          .addr = addr4(10, 0, 0, 2, 7946),
                          .incarnation = 5,
                          .status = RD_ALIVE,
                          .weight = 1000,
                          .zone = "z",
                          .tags = "k=v"};
    struct rd_packet p = ping_from_n1(&m);
    assert_golden(&p, GOLDEN_HEADER          /* 52 bytes in all */
                  "98 "                      /*     member: array(8) */
                  "a2 6e 32 "                /*       name: "n2" */
                  "c4 06 0a 00 00 02 1f 0a " /*       addr: bin(6) 10.0.0.2, port 7946 */
                  "05 "                      /*       incarnation: 5 */
                  "00 "                      /*       status: alive */
                  "cd 03 e8 "                /*       weight: uint16 1000 (1.0) */
                  "a1 7a "                   /*       zone: "z" */
                  "a3 6b 3d 76 "             /*       tags: "k=v" */
                  "a0 "                      /*       accuser: "" */
    );
}

static void test_wire_golden_ping_with_ipv6_suspect_member(void **state)
{
    struct rd_member m = {.name = "n3",
                          .addr = {.family = 6, .port = 7946, .ip = {0xfd, 0, [15] = 3}},
                          .incarnation = 1700000000000ull,
                          .status = RD_SUSPECT,
                          .weight = RD_WEIGHT_MAX,
                          .accuser = "n1"};
    struct rd_packet p = ping_from_n1(&m);
    assert_golden(&p, GOLDEN_HEADER /* 72 bytes in all */
                  "98 "             /*     member: array(8) */
                  "a2 6e 33 "       /*       name: "n3" */
                  "c4 12 fd 00 00 00 00 00 00 00 00 00 00 00 00 00 00 03 1f 0a "
                  /*                   addr: bin(18) fd00::3, port 7946 */
                  "cf 00 00 01 8b cf e5 68 00 " /* incarnation: uint64 1700000000000 */
                  "01 "                         /*       status: suspect */
                  "ce 00 01 86 a0 "             /*       weight: uint32 100000 (100.0) */
                  "a0 "                         /*       zone: "" */
                  "a0 "                         /*       tags: "" */
                  "a2 6e 31 "                   /*       accuser: "n1" */
    );
}

static void test_wire_golden_ping_with_member_without_address(void **state)
{
    struct rd_member m = {.name = "n4", .incarnation = 0, .status = RD_LEFT, .weight = 1};
    struct rd_packet p = ping_from_n1(&m);
    assert_golden(&p, GOLDEN_HEADER /* 40 bytes in all */
                  "98 "             /*     member: array(8) */
                  "a2 6e 34 "       /*       name: "n4" */
                  "c4 00 "          /*       addr: bin(0), none */
                  "00 "             /*       incarnation: 0 */
                  "03 "             /*       status: left */
                  "01 "             /*       weight: 1 (0.001) */
                  "a0 a0 a0 "       /*       zone, tags, accuser: "" */
    );
}

/* Weight 0 is a drained member (PROTOCOL.md, "Drain"): a record like any other. */
static void test_wire_golden_ping_with_drained_member(void **state)
{
    struct rd_member m = {.name = "n5", .incarnation = 9, .status = RD_ALIVE, .weight = 0};
    assert_true(rd_member_valid(&m));
    struct rd_packet p = ping_from_n1(&m);
    assert_golden(&p, GOLDEN_HEADER /* 40 bytes in all */
                  "98 "             /*     member: array(8) */
                  "a2 6e 35 "       /*       name: "n5" */
                  "c4 00 "          /*       addr: bin(0), none */
                  "09 "             /*       incarnation: 9 */
                  "00 "             /*       status: alive */
                  "00 "             /*       weight: 0 (drained) */
                  "a0 a0 a0 "       /*       zone, tags, accuser: "" */
    );
}

static void test_wire_golden_ping_req_with_target_address(void **state)
{
    struct rd_packet p = {.from = "n1", .nmsgs = 1};
    p.msgs[0] = (struct rd_msg){.type = RD_MSG_PING_REQ,
                                .seq = 300,
                                .target = "n2",
                                .target_addr = addr4(10, 0, 0, 2, 7946)};
    assert_golden(&p, "52 44 01 00 "             /* header, 28 bytes in all */
                      "93 a2 6e 31 "             /* packet: array(3), from "n1" */
                      "91 96 "                   /*   msgs: array(1) of array(6) */
                      "03 "                      /*     type: PING_REQ */
                      "00 "                      /*     flags: 0 */
                      "cd 01 2c "                /*     seq: uint16 300 */
                      "00 "                      /*     checksum: 0 */
                      "a2 6e 32 "                /*     target: "n2" */
                      "c4 06 0a 00 00 02 1f 0a " /*     target_addr: 10.0.0.2:7946 */
                      "90 "                      /*   members: array(0) */
    );
}

static void test_wire_golden_sync_with_ring_parameters(void **state)
{
    struct rd_packet p = {.from = "n1", .nmsgs = 1};
    p.msgs[0] = (struct rd_msg){.type = RD_MSG_SYNC,
                                .flags = RD_SYNC_REPLY | RD_SYNC_JOIN | RD_SYNC_VNODES_SET,
                                .checksum = 0x0123456789abcdefull,
                                .ring = {1, 0, 512}};
    assert_golden(&p, "52 44 01 00 "                /* header, 36 bytes in all */
                      "93 a2 6e 31 "                /* packet: array(3), from "n1" */
                      "91 97 "                      /*   msgs: array(1) of array(7) */
                      "05 "                         /*     type: SYNC */
                      "07 "                         /*     flags: REPLY|JOIN|VNODES_SET */
                      "00 "                         /*     seq: 0 */
                      "cf 01 23 45 67 89 ab cd ef " /*     checksum: uint64 */
                      "a0 "                         /*     target: "" */
                      "c4 00 "                      /*     target_addr: none */
                      "93 01 00 cd 02 00 "          /*     ring: spec 1, ringd, vnodes 512 */
                      "90 "                         /*   members: array(0) */
    );
}

/* ------------------------------------------------------------------ round trips */

static void test_wire_round_trips_every_msg_type(void **state)
{
    struct rd_member m = {.name = "web-7",
                          .addr = addr4(192, 168, 1, 7, 7946),
                          .incarnation = 1700000000123ull,
                          .status = RD_ALIVE,
                          .weight = RD_WEIGHT_ONE,
                          .zone = "eu-west-1a",
                          .tags = "role=cache,rack=r/12"};
    for (int type = RD_MSG_PING; type <= RD_MSG_SYNC; type++) {
        struct rd_packet p = {.from = "web-1", .nmsgs = 1, .nmembers = 1, .members = &m};
        struct rd_msg *msg = &p.msgs[0];
        msg->type = (uint8_t)type;
        msg->seq = 0xfffffff0u + (uint32_t)type;
        msg->checksum = 0xfedcba9876543210ull;
        if (type == RD_MSG_PING || type == RD_MSG_PING_REQ)
            snprintf(msg->target, sizeof msg->target, "web-7");
        if (type == RD_MSG_PING_REQ)
            msg->target_addr = (struct rd_addr){
                .family = 6, .port = 7946, .ip = {0x20, 0x01, 0x0d, 0xb8, [15] = 7}};
        if (type == RD_MSG_SYNC) {
            msg->flags = RD_SYNC_REPLY | RD_SYNC_JOIN | RD_SYNC_VNODES_SET;
            msg->ring = (struct rd_ring_params){1, 1, 160};
        }
        assert_round_trip(&p);
    }
}

static void test_wire_round_trips_empty_and_full_packets(void **state)
{
    struct rd_packet empty = {.from = "a"};
    assert_round_trip(&empty);

    struct rd_packet full = {.from = "x"};
    memset(full.from, 'x', RD_NAME_MAX);
    full.nmsgs = RD_PACKET_MAX_MSGS;
    for (size_t i = 0; i < full.nmsgs; i++)
        full.msgs[i] = (struct rd_msg){.type = RD_MSG_ACK, .seq = (uint32_t)i, .target = "t"};
    assert_round_trip(&full);
}

static void test_wire_round_trips_random_packets_with_seed(void **state)
{
    struct rd_rand r;
    rd_rand_seed(&r, test_seed(__func__));
    static struct rd_member members[64];
    for (int i = 0; i < 2000; i++) {
        struct rd_packet p;
        rand_packet(&r, &p, members, 64);
        assert_round_trip(&p);
    }
}

/* ------------------------------------------------------------------ malformed datagrams */

/* Building blocks of hand-made datagrams. */
#define HDR     "52 44 01 00 "
#define FROM    "a2 6e 31 "                                        /* "n1" */
#define A16     "61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 61 " /* 16 x 'a' */
#define STR65   "d9 41 " A16 A16 A16 A16 "61 "                     /* 65 x 'a' */
#define STR33   "d9 21 " A16 A16 "61 "                             /* 33 x 'a' */
#define STR256  "da 01 00 " A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16 A16
#define NOADDR  "c4 00 "
#define ADDR4   "c4 06 0a 00 00 02 1f 0a "
#define FLOAT64 "cb 3f f0 00 00 00 00 00 00 "
#define FLOAT32 "ca 3f 80 00 00 "

/* msg = array(6) [type, flags, seq, checksum, target, target_addr] */
#define MSG(type, flags, seq, ck, target, addr)                                                    \
    "96 " type " " flags " " seq " " ck " " target " " addr " "
#define GOOD_MSG MSG("01", "00", "07", "00", "a2 6e 32", NOADDR)

/* member = array(8) [name, addr, incarnation, status, weight, zone, tags, accuser] */
#define MEMBER(name, addr, inc, status, weight, zone, tags, accuser)                               \
    "98 " name " " addr " " inc " " status " " weight " " zone " " tags " " accuser " "
#define GOOD_MEMBER MEMBER("a2 6e 32", ADDR4, "05", "00", "cd 03 e8", "a0", "a3 6b 3d 76", "a0")

/* A packet with one msg and no members, or no msgs and one member. */
#define WITH_MSG(msg)       HDR "93 " FROM "91 " msg "90 "
#define WITH_MEMBER(member) HDR "93 " FROM "90 91 " member

#define GOOD_PACKET HDR "93 " FROM "91 " GOOD_MSG "91 " GOOD_MEMBER

struct bad_case {
    const char *what;
    const char *hex;
    int rc;
    const char *reason;
    size_t cap; /* members_cap; 0 means RD_PACKET_MAX_MEMBERS */
};
#define BAD(what, hex, rc, reason)                                                                 \
    {                                                                                              \
        what, hex, rc, reason, 0                                                                   \
    }
#define BAD_CAP(what, hex, rc, reason, cap)                                                        \
    {                                                                                              \
        what, hex, rc, reason, cap                                                                 \
    }

static const struct bad_case bad_cases[] = {
    /* the header */
    BAD("empty datagram", "", RD_EPROTO, "truncated"),
    BAD("1 byte", "52", RD_EPROTO, "truncated"),
    BAD("2 bytes", "52 44", RD_EPROTO, "truncated"),
    BAD("3 bytes", "52 44 01", RD_EPROTO, "truncated"),
    BAD("header alone", HDR, RD_EPROTO, "truncated"),
    BAD("bad magic", "52 45 01 00 93 " FROM "90 90", RD_EPROTO, "bad magic"),
    BAD("lowercase magic", "72 64 01 00 93 " FROM "90 90", RD_EPROTO, "bad magic"),
    BAD("version 2", "52 44 02 00 93 " FROM "90 90", RD_EPROTO, "unsupported version"),
    BAD("version 0", "52 44 00 00 93 " FROM "90 90", RD_EPROTO, "unsupported version"),
    BAD("version 255", "52 44 ff 00", RD_EPROTO, "unsupported version"),
    BAD("unknown flags", "52 44 01 01 93 " FROM "90 90", RD_EPROTO, "unknown flags"),
    BAD("high flag bit", "52 44 01 80 93 " FROM "90 90", RD_EPROTO, "unknown flags"),

    /* the packet array */
    BAD("map instead of packet array", HDR "83 " FROM "90 90", RD_EPROTO, "bad packet"),
    BAD("packet array of 2", HDR "92 " FROM "90", RD_EPROTO, "bad packet"),
    BAD("packet array of 12", HDR "9c " FROM "90 90 00 00 00 00 00 00 00 00 00", RD_EPROTO,
        "bad packet"),
    BAD("nil packet", HDR "c0", RD_EPROTO, "bad packet"),
    BAD("float extra field", HDR "94 " FROM "90 90 " FLOAT64, RD_EPROTO, "bad packet"),
    BAD("trailing garbage byte", GOOD_PACKET "00", RD_EPROTO, "trailing bytes"),
    BAD("two packets in one datagram", HDR "93 " FROM "90 90 93 " FROM "90 90", RD_EPROTO,
        "trailing bytes"),

    /* from */
    BAD("empty from", HDR "93 a0 90 90", RD_EPROTO, "bad from"),
    BAD("from is a uint", HDR "93 01 90 90", RD_EPROTO, "bad from"),
    BAD("from is nil", HDR "93 c0 90 90", RD_EPROTO, "bad from"),
    BAD("from is bin", HDR "93 c4 02 6e 31 90 90", RD_EPROTO, "bad from"),
    BAD("from with a space", HDR "93 a3 6e 20 31 90 90", RD_EPROTO, "bad from"),
    BAD("from of 65 bytes", HDR "93 " STR65 "90 90", RD_EPROTO, "bad from"),
    BAD("from with a NUL", HDR "93 a2 6e 00 90 90", RD_EPROTO, "bad from"),
    BAD("from longer than the datagram", HDR "93 d9 ff 6e 31", RD_EPROTO, "truncated"),

    /* msgs */
    BAD("msgs is a str", HDR "93 " FROM "a0 90", RD_EPROTO, "bad msgs"),
    BAD("msgs is a map", HDR "93 " FROM "80 90", RD_EPROTO, "bad msgs"),
    BAD("5 msgs", HDR "93 " FROM "95 " GOOD_MSG GOOD_MSG GOOD_MSG GOOD_MSG GOOD_MSG "90", RD_E2BIG,
        "too many msgs"),
    BAD("array32 of 2^32-1 msgs", HDR "93 " FROM "dd ff ff ff ff", RD_E2BIG, "too many msgs"),
    BAD("3 msgs declared, 1 present", HDR "93 " FROM "93 " GOOD_MSG, RD_EPROTO, "truncated"),
    BAD("msg is a uint", WITH_MSG("01"), RD_EPROTO, "bad msg"),
    BAD("msg is a map", WITH_MSG("80"), RD_EPROTO, "bad msg"),
    BAD("msg of 5 fields", WITH_MSG("95 01 00 07 00 a0"), RD_EPROTO, "bad msg"),
    BAD("msg type 0", WITH_MSG(MSG("00", "00", "07", "00", "a0", NOADDR)), RD_EPROTO,
        "bad msg type"),
    BAD("msg type 6", WITH_MSG(MSG("06", "00", "07", "00", "a0", NOADDR)), RD_EPROTO,
        "bad msg type"),
    BAD("msg type negative", WITH_MSG(MSG("ff", "00", "07", "00", "a0", NOADDR)), RD_EPROTO,
        "bad msg type"),
    BAD("msg type as int8", WITH_MSG(MSG("d0 01", "00", "07", "00", "a0", NOADDR)), RD_EPROTO,
        "bad msg type"),
    BAD("msg type as str", WITH_MSG(MSG("a1 31", "00", "07", "00", "a0", NOADDR)), RD_EPROTO,
        "bad msg type"),
    BAD("msg type nil", WITH_MSG(MSG("c0", "00", "07", "00", "a0", NOADDR)), RD_EPROTO,
        "bad msg type"),
    BAD("msg type true", WITH_MSG(MSG("c3", "00", "07", "00", "a0", NOADDR)), RD_EPROTO,
        "bad msg type"),
    BAD("msg flags 256", WITH_MSG(MSG("05", "cd 01 00", "07", "00", "a0", NOADDR)), RD_EPROTO,
        "bad msg flags"),
    BAD("msg seq 2^32", WITH_MSG(MSG("01", "00", "cf 00 00 00 01 00 00 00 00", "00", "a0", NOADDR)),
        RD_EPROTO, "bad seq"),
    BAD("msg seq negative int64",
        WITH_MSG(MSG("01", "00", "d3 ff ff ff ff ff ff ff ff", "00", "a0", NOADDR)), RD_EPROTO,
        "bad seq"),
    BAD("msg seq float32", WITH_MSG(MSG("01", "00", FLOAT32, "00", "a0", NOADDR)), RD_EPROTO,
        "bad seq"),
    BAD("msg checksum float64", WITH_MSG(MSG("01", "00", "07", FLOAT64, "a0", NOADDR)), RD_EPROTO,
        "bad checksum"),
    BAD("msg checksum as bin", WITH_MSG(MSG("01", "00", "07", "c4 01 00", "a0", NOADDR)), RD_EPROTO,
        "bad checksum"),
    BAD("msg target nil", WITH_MSG(MSG("01", "00", "07", "00", "c0", NOADDR)), RD_EPROTO,
        "bad target"),
    BAD("msg target with a space", WITH_MSG(MSG("01", "00", "07", "00", "a2 6e 20", NOADDR)),
        RD_EPROTO, "bad target"),
    BAD("msg target of 65 bytes", WITH_MSG(MSG("01", "00", "07", "00", STR65, NOADDR)), RD_EPROTO,
        "bad target"),
    BAD("msg target_addr of 5 bytes",
        WITH_MSG(MSG("03", "00", "07", "00", "a2 6e 32", "c4 05 0a 00 00 02 1f")), RD_EPROTO,
        "bad target addr"),
    BAD("msg target_addr as str", WITH_MSG(MSG("03", "00", "07", "00", "a2 6e 32", "a0")),
        RD_EPROTO, "bad target addr"),
    BAD("msg target_addr as ext", WITH_MSG(MSG("03", "00", "07", "00", "a2 6e 32", "d4 01 00")),
        RD_EPROTO, "bad target addr"),
    BAD("msg with 9 extra fields", WITH_MSG("9f 01 00 07 00 a0 c4 00 00 00 00 00 00 00 00 00 00"),
        RD_EPROTO, "bad msg"),
    BAD("msg extra field is a map", WITH_MSG("97 01 00 07 00 a0 c4 00 80"), RD_EPROTO, "bad msg"),
    BAD("msg extra field is nil", WITH_MSG("97 01 00 07 00 a0 c4 00 c0"), RD_EPROTO, "bad msg"),
    BAD("msg extra field nested 3 deep", WITH_MSG("97 01 00 07 00 a0 c4 00 91 91 91 00"), RD_EPROTO,
        "bad msg"),

    /* members */
    BAD("members is a str", HDR "93 " FROM "90 a0", RD_EPROTO, "bad members"),
    BAD("members is a map", HDR "93 " FROM "90 80", RD_EPROTO, "bad members"),
    BAD("array32 of 2^32-1 members", HDR "93 " FROM "90 dd ff ff ff ff", RD_E2BIG,
        "too many members"),
    BAD_CAP("members over cap", HDR "93 " FROM "90 92 " GOOD_MEMBER GOOD_MEMBER, RD_E2BIG,
            "too many members", 1),
    BAD("33 members over the UDP cap", HDR "93 " FROM "90 dc 00 21", RD_E2BIG, "too many members"),
    BAD("2 members declared, 1 present", HDR "93 " FROM "90 92 " GOOD_MEMBER, RD_EPROTO,
        "truncated"),
    BAD("member cut in its name", HDR "93 " FROM "90 91 98 a2 6e", RD_EPROTO, "truncated"),
    BAD("member is a map", WITH_MEMBER("88"), RD_EPROTO, "bad member"),
    BAD("member of 7 fields", WITH_MEMBER("97 a2 6e 32 c4 00 05 00 01 a0 a0"), RD_EPROTO,
        "bad member"),
    BAD("member name is a uint",
        WITH_MEMBER(MEMBER("05", ADDR4, "05", "00", "01", "a0", "a0", "a0")), RD_EPROTO,
        "bad name"),
    BAD("member name str32 of 4 GB", WITH_MEMBER("98 db ff ff ff ff 6e 32 c4 00 05 00 01 a0 a0 a0"),
        RD_EPROTO, "bad name"),
    BAD("member name str16 of 64 KB", WITH_MEMBER("98 da ff ff 6e 32 c4 00 05 00 01 a0 a0 a0"),
        RD_EPROTO, "truncated"),
    BAD("member name of 65 bytes",
        WITH_MEMBER(MEMBER(STR65, ADDR4, "05", "00", "01", "a0", "a0", "a0")), RD_EPROTO,
        "bad name"),
    BAD("member name with a space",
        WITH_MEMBER(MEMBER("a3 6e 20 32", ADDR4, "05", "00", "01", "a0", "a0", "a0")), RD_EPROTO,
        "bad name"),
    BAD("member name empty", WITH_MEMBER(MEMBER("a0", ADDR4, "05", "00", "01", "a0", "a0", "a0")),
        RD_EPROTO, "bad name"),
    BAD("member name nil", WITH_MEMBER(MEMBER("c0", ADDR4, "05", "00", "01", "a0", "a0", "a0")),
        RD_EPROTO, "bad name"),
    BAD("member addr bin of 5 bytes",
        WITH_MEMBER(MEMBER("a2 6e 32", "c4 05 0a 00 00 02 1f", "05", "00", "01", "a0", "a0", "a0")),
        RD_EPROTO, "bad addr"),
    BAD("member addr bin of 17 bytes",
        WITH_MEMBER(MEMBER("a2 6e 32", "c4 11 " A16 "00", "05", "00", "01", "a0", "a0", "a0")),
        RD_EPROTO, "bad addr"),
    BAD("member addr as str",
        WITH_MEMBER(MEMBER("a2 6e 32", "a6 0a 00 00 02 1f 0a", "05", "00", "01", "a0", "a0", "a0")),
        RD_EPROTO, "bad addr"),
    BAD("member addr as bin32",
        WITH_MEMBER(MEMBER("a2 6e 32", "c6 00 00 00 06 0a 00 00 02 1f 0a", "05", "00", "01", "a0",
                           "a0", "a0")),
        RD_EPROTO, "bad addr"),
    BAD("member addr bin longer than the datagram",
        WITH_MEMBER("98 a2 6e 32 c4 12 0a 00 00 00 00 00 00 00"), RD_EPROTO, "truncated"),
    BAD("negative incarnation",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "ff", "00", "01", "a0", "a0", "a0")), RD_EPROTO,
        "bad incarnation"),
    BAD("incarnation as int64",
        WITH_MEMBER(
            MEMBER("a2 6e 32", ADDR4, "d3 00 00 00 00 00 00 00 05", "00", "01", "a0", "a0", "a0")),
        RD_EPROTO, "bad incarnation"),
    BAD("incarnation float64",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, FLOAT64, "00", "01", "a0", "a0", "a0")), RD_EPROTO,
        "bad incarnation"),
    BAD("status 4", WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "04", "01", "a0", "a0", "a0")),
        RD_EPROTO, "bad status"),
    BAD("status 2^64-1",
        WITH_MEMBER(
            MEMBER("a2 6e 32", ADDR4, "05", "cf ff ff ff ff ff ff ff ff", "01", "a0", "a0", "a0")),
        RD_EPROTO, "bad status"),
    BAD("status nil", WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "c0", "01", "a0", "a0", "a0")),
        RD_EPROTO, "bad status"),
    BAD("weight over max",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "00", "ce 00 01 86 a1", "a0", "a0", "a0")),
        RD_EPROTO, "bad weight"),
    BAD("weight negative",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "00", "e0", "a0", "a0", "a0")), RD_EPROTO,
        "bad weight"),
    BAD("zone of 33 bytes",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "00", "01", STR33, "a0", "a0")), RD_EPROTO,
        "bad zone"),
    BAD("zone with a slash",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "00", "01", "a3 65 2f 31", "a0", "a0")),
        RD_EPROTO, "bad zone"),
    BAD("zone as bin",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "00", "01", "c4 00", "a0", "a0")), RD_EPROTO,
        "bad zone"),
    BAD("tags without a value",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "00", "01", "a0", "a1 6b", "a0")), RD_EPROTO,
        "bad tags"),
    BAD("tags of 256 bytes",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "00", "01", "a0", STR256, "a0")), RD_EPROTO,
        "bad tags"),
    BAD("tags nil", WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "00", "01", "a0", "c0", "a0")),
        RD_EPROTO, "bad tags"),
    BAD("accuser with a space",
        WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "01", "01", "a0", "a0", "a2 20 20")), RD_EPROTO,
        "bad accuser"),
    BAD("accuser nil", WITH_MEMBER(MEMBER("a2 6e 32", ADDR4, "05", "01", "01", "a0", "a0", "c0")),
        RD_EPROTO, "bad accuser"),
    BAD("member extra field is a float",
        WITH_MEMBER("99 a2 6e 32 c4 00 05 00 01 a0 a0 a0 " FLOAT32), RD_EPROTO, "bad member"),
};

static void test_wire_rejects_malformed_datagrams_with_reason(void **state)
{
    struct rd_member members[RD_PACKET_MAX_MEMBERS];
    uint8_t buf[1024];
    int failures = 0;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const struct bad_case *c = &bad_cases[i];
        size_t len = unhex(c->hex, buf, sizeof buf);
        size_t cap = c->cap ? c->cap : RD_PACKET_MAX_MEMBERS;
        struct rd_packet p;
        const char *why = NULL;
        int rc = decode_exact(buf, len, &p, members, cap, &why);
        if (rc != c->rc || why == NULL || strcmp(why, c->reason) != 0) {
            print_error("%s: want %d \"%s\", got %d \"%s\"\n", c->what, c->rc, c->reason, rc,
                        why ? why : "(null)");
            failures++;
        } else {
            /* a refused packet hands nothing on */
            assert_int_equal(p.nmsgs, 0);
            assert_int_equal(p.nmembers, 0);
        }
    }
    assert_int_equal(failures, 0);
}

static void test_wire_good_packet_of_the_table_is_accepted(void **state)
{
    /* the base the malformed cases are built from must itself be fine */
    uint8_t buf[256];
    size_t len = unhex(GOOD_PACKET, buf, sizeof buf);
    struct rd_member members[1];
    struct rd_packet p;
    const char *why = NULL;
    assert_int_equal(decode_exact(buf, len, &p, members, 1, &why), 0);
    assert_string_equal(why, "ok");
    assert_int_equal(p.nmsgs, 1);
    assert_int_equal(p.nmembers, 1);
    assert_string_equal(p.members[0].tags, "k=v");
    /* a NULL reason pointer is allowed */
    assert_int_equal(decode_exact(buf, len, &p, members, 1, NULL), 0);
}

static void test_wire_rejects_every_prefix_of_a_valid_packet_as_truncated(void **state)
{
    struct rd_rand r;
    rd_rand_seed(&r, test_seed(__func__));
    static struct rd_member in[8], out[8];
    static char buf[8192];
    for (int round = 0; round < 20; round++) {
        struct rd_packet p, q;
        rand_packet(&r, &p, in, 8);
        size_t len = 0;
        assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), 0);
        for (size_t cut = 0; cut < len; cut++) {
            const char *why = NULL;
            int rc = decode_exact(buf, cut, &q, out, 8, &why);
            if (rc != RD_EPROTO || strcmp(why, "truncated") != 0)
                print_error("prefix of %zu/%zu bytes: %d \"%s\"\n", cut, len, rc, why);
            assert_int_equal(rc, RD_EPROTO);
            assert_string_equal(why, "truncated");
        }
        assert_int_equal(decode_exact(buf, len, &q, out, 8, NULL), 0);
    }
}

/* ------------------------------------------------------------------ forward compatibility */

static void test_wire_skips_unknown_trailing_fields(void **state)
{
    /* a later version's packet: an extra field at the end of each array */
    uint8_t buf[256];
    size_t len = unhex(HDR "94 " FROM                                   /* packet: 3 + 1 extra */
                           "91 98 01 00 07 00 a2 6e 32 c4 00 "          /* msg: 6 + 2 extras */
                           "cd 12 34 a3 66 6f 6f "                      /*   uint, str */
                           "91 9a a2 6e 32 " ADDR4 "05 00 01 a0 a0 a0 " /* member: 8 + 2 extras */
                           "c4 01 ff 92 01 92 02 a1 78 "                /*   bin, [1, [2, "x"]] */
                           "dc 00 01 00 ", /* packet extra: array16 [0] */
                       buf, sizeof buf);
    struct rd_member members[1];
    struct rd_packet p;
    const char *why = NULL;
    assert_int_equal(decode_exact(buf, len, &p, members, 1, &why), 0);
    assert_string_equal(why, "ok");

    struct rd_member want_m = {
        .name = "n2", .addr = addr4(10, 0, 0, 2, 7946), .incarnation = 5, .weight = 1};
    struct rd_packet want = {.from = "n1", .nmsgs = 1, .nmembers = 1, .members = &want_m};
    want.msgs[0] = (struct rd_msg){.type = RD_MSG_PING, .seq = 7, .target = "n2"};
    assert_packets_equal(&p, &want);
}

static void test_wire_skips_at_most_the_extra_limit(void **state)
{
    /* msg of 6 + RD_WIRE_EXTRA_MAX fields is fine, one more is not (see the bad table) */
    _Static_assert(RD_WIRE_EXTRA_MAX == 8, "the hex below has 8 extras");
    uint8_t buf[256];
    size_t len =
        unhex(WITH_MSG("9e 01 00 07 00 a0 c4 00 00 00 00 00 00 00 00 00"), buf, sizeof buf);
    struct rd_member members[1];
    struct rd_packet p;
    assert_int_equal(decode_exact(buf, len, &p, members, 1, NULL), 0);
}

/* ------------------------------------------------------------------ random mutations */

static void test_wire_survives_random_mutations_with_seed(void **state)
{
    struct rd_rand r;
    rd_rand_seed(&r, test_seed(__func__));
    static struct rd_member in[8], out[8], again[8];
    static char buf[8192], re[8192];
    int accepted = 0, too_big = 0;
    for (int iter = 0; iter < 20000; iter++) {
        struct rd_packet p, q, q2;
        rand_packet(&r, &p, in, rd_rand_below(&r, 3) ? 2 : 8);
        size_t len = 0;
        assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), 0);

        int nmut = 1 + (int)rd_rand_below(&r, 4);
        for (int k = 0; k < nmut; k++) {
            size_t at = len ? rd_rand_below(&r, (uint32_t)len) : 0;
            switch (rd_rand_below(&r, 5)) {
            case 0: /* flip a bit */
                if (len) buf[at] ^= (char)(1u << rd_rand_below(&r, 8));
                break;
            case 1: /* overwrite a byte, often with a msgpack type byte */
                if (len)
                    buf[at] = (char)(rd_rand_below(&r, 2) ? 0xc0 + rd_rand_below(&r, 0x20)
                                                          : rd_rand_next(&r));
                break;
            case 2: /* insert a byte */
                if (len < sizeof buf) {
                    memmove(buf + at + 1, buf + at, len - at);
                    buf[at] = (char)rd_rand_next(&r);
                    len++;
                }
                break;
            case 3: /* delete a byte */
                if (len) {
                    memmove(buf + at, buf + at + 1, len - at - 1);
                    len--;
                }
                break;
            case 4: /* truncate */
                len = at;
                break;
            }
        }

        const char *why = NULL;
        int rc = decode_exact(buf, len, &q, out, 8, &why);
        assert_non_null(why);
        if (rc == RD_E2BIG) too_big++;
        if (rc != 0) {
            assert_true(rc == RD_EPROTO || rc == RD_E2BIG);
            assert_string_not_equal(why, "ok");
            continue;
        }
        accepted++;
        assert_string_equal(why, "ok");
        size_t relen = 0;
        assert_int_equal(rd_wire_encode(&q, re, sizeof re, &relen), 0);
        assert_int_equal(decode_exact(re, relen, &q2, again, 8, &why), 0);
        assert_packets_equal(&q, &q2);
    }
    print_message("mutations: %d of 20000 still decoded, %d over a cap\n", accepted, too_big);
}

/* ------------------------------------------------------------------ size bounds */

/* The bounds the core uses, from lib/msg.h, for one packet. */
static size_t core_budget(const struct rd_packet *p)
{
    size_t n = RD_WIRE_HEADER_MAX + p->nmsgs * RD_WIRE_MSG_MAX;
    for (size_t i = 0; i < p->nmembers; i++) {
        const struct rd_member *m = &p->members[i];
        n += RD_WIRE_MEMBER_BASE + strlen(m->name) + strlen(m->zone) + strlen(m->tags) +
             strlen(m->accuser);
    }
    return n;
}

/* Encodes p and checks its length against every bound this module documents. */
static size_t assert_within_bounds(const struct rd_packet *p)
{
    static char buf[64 * 1024];
    size_t len = 0;
    assert_int_equal(rd_wire_encode(p, buf, sizeof buf, &len), 0);
    size_t bound = RD_WIRE_HEADER_WORST + p->nmsgs * RD_WIRE_MSG_WORST;
    for (size_t i = 0; i < p->nmembers; i++) {
        size_t m = rd_wire_member_size_max(&p->members[i]);
        assert_true(m <= RD_WIRE_MEMBER_MAX);
        bound += m;
    }
    if (len > bound || len > core_budget(p))
        print_error("encoded %zu, bound %zu, core budget %zu\n", len, bound, core_budget(p));
    assert_true(len <= bound);
    assert_true(len <= core_budget(p));
    return len;
}

static void test_wire_member_size_is_exact(void **state)
{
    struct rd_rand r;
    rd_rand_seed(&r, test_seed(__func__));
    static char buf[4096];
    for (int i = 0; i < 5000; i++) {
        struct rd_member m;
        rand_member(&r, &m);
        if (rd_rand_below(&r, 4) == 0)
            m.status = (uint8_t)rd_rand_next(&r); /* the encoder does not check it */
        if (rd_rand_below(&r, 4) == 0) m.weight = (uint32_t)rd_rand_next(&r);
        struct rd_packet empty = {.from = "a"}, one = {.from = "a", .nmembers = 1, .members = &m};
        size_t base = 0, len = 0;
        assert_int_equal(rd_wire_encode(&empty, buf, sizeof buf, &base), 0);
        assert_int_equal(rd_wire_encode(&one, buf, sizeof buf, &len), 0);
        assert_int_equal(len - base, rd_wire_member_size_max(&m));
    }
}

static void test_wire_smallest_member_takes_member_min_bytes(void **state)
{
    struct rd_member m = {.name = "a", .weight = 1};
    assert_int_equal(rd_wire_member_size_max(&m), RD_WIRE_MEMBER_MIN);
    /* and nothing valid is smaller: random members never go below it */
    struct rd_rand r;
    rd_rand_seed(&r, test_seed(__func__));
    for (int i = 0; i < 1000; i++) {
        rand_member(&r, &m);
        assert_true(rd_wire_member_size_max(&m) >= RD_WIRE_MEMBER_MIN);
    }
}

static void test_wire_random_packets_stay_within_size_bounds_with_seed(void **state)
{
    struct rd_rand r;
    rd_rand_seed(&r, test_seed(__func__));
    static struct rd_member members[64];
    for (int i = 0; i < 3000; i++) {
        struct rd_packet p;
        rand_packet(&r, &p, members, rd_rand_below(&r, 2) ? 8 : 64);
        assert_within_bounds(&p);
    }
}

/* A member with every field at its widest (the encoder does not check status or weight). */
static void worst_member(struct rd_member *m, bool valid)
{
    memset(m, 0, sizeof *m);
    memset(m->name, 'n', RD_NAME_MAX);
    m->addr = (struct rd_addr){.family = 6, .port = 65535};
    memset(m->addr.ip, 0xff, 16);
    m->incarnation = UINT64_MAX;
    m->status = valid ? RD_LEFT : UINT8_MAX;
    m->weight = valid ? RD_WEIGHT_MAX : UINT32_MAX;
    memset(m->zone, 'z', RD_ZONE_MAX);
    m->tags[0] = 'k';
    m->tags[1] = '=';
    memset(m->tags + 2, 'v', RD_TAGS_MAX - 2);
    memset(m->accuser, 'a', RD_NAME_MAX);
}

static void worst_msgs(struct rd_packet *p)
{
    p->nmsgs = RD_PACKET_MAX_MSGS;
    for (size_t i = 0; i < p->nmsgs; i++) {
        struct rd_msg *m = &p->msgs[i];
        memset(m, 0, sizeof *m);
        m->type = RD_MSG_SYNC;
        m->flags = UINT8_MAX;
        m->seq = UINT32_MAX;
        m->checksum = UINT64_MAX;
        memset(m->target, 't', RD_NAME_MAX);
        m->target_addr = (struct rd_addr){.family = 6, .port = 1};
        m->ring = (struct rd_ring_params){UINT8_MAX, UINT8_MAX, RD_RING_VNODES_MAX};
    }
}

static void test_wire_worst_case_packets_meet_the_bounds_exactly(void **state)
{
    static struct rd_member members[20];
    for (size_t i = 0; i < 20; i++)
        worst_member(&members[i], false);
    assert_int_equal(rd_wire_member_size_max(&members[0]), RD_WIRE_MEMBER_MAX);

    struct rd_packet p;
    memset(&p, 0, sizeof p);
    memset(p.from, 'f', RD_NAME_MAX);
    worst_msgs(&p);
    p.members = members;
    /* every member count around the fixarray / array16 boundary */
    for (p.nmembers = 0; p.nmembers <= 20; p.nmembers++) {
        size_t len = assert_within_bounds(&p);
        /* the header bound is tight up to the msgs array, which is a fixarray (2 bytes
         * less than the array16 RD_WIRE_HEADER_WORST assumes), and so is the members
         * array below 16 */
        size_t slack = 2 + (p.nmembers < 16 ? 2 : 0);
        assert_int_equal(len + slack, RD_WIRE_HEADER_WORST + p.nmsgs * RD_WIRE_MSG_WORST +
                                          p.nmembers * RD_WIRE_MEMBER_MAX);
    }
}

static void test_wire_full_udp_packet_fits_the_budget(void **state)
{
    /* what the core does: msgs first, then members while the budget lasts */
    static struct rd_member members[RD_PACKET_MAX_MEMBERS];
    struct rd_rand r;
    rd_rand_seed(&r, test_seed(__func__));
    for (int round = 0; round < 500; round++) {
        struct rd_packet p;
        rand_packet(&r, &p, members, 0);
        size_t budget = RD_PACKET_BUDGET - RD_WIRE_HEADER_MAX - p.nmsgs * RD_WIRE_MSG_MAX;
        while (p.nmembers < RD_PACKET_MAX_MEMBERS) {
            struct rd_member *m = &members[p.nmembers];
            rand_member(&r, m);
            size_t need = RD_WIRE_MEMBER_BASE + strlen(m->name) + strlen(m->zone) +
                          strlen(m->tags) + strlen(m->accuser);
            if (need > budget) break;
            budget -= need;
            p.nmembers++;
        }
        size_t len = assert_within_bounds(&p);
        assert_true(len <= RD_PACKET_BUDGET);
    }
}

/* One SYNC msg with every field at its widest, as worst_msgs() makes them. */
static void worst_sync_msg(struct rd_packet *p)
{
    worst_msgs(p);
    p->nmsgs = 1;
}

static void test_wire_largest_sync_is_the_frame_bound(void **state)
{
    struct rd_member *members = calloc(RD_MAX_MEMBERS, sizeof *members);
    struct rd_member *out = calloc(RD_MAX_MEMBERS, sizeof *out);
    char *buf = malloc(RD_WIRE_FRAME_PREFIX + RD_WIRE_FRAME_MAX);
    assert_non_null(members);
    assert_non_null(out);
    assert_non_null(buf);
    for (size_t i = 0; i < RD_MAX_MEMBERS; i++)
        worst_member(&members[i], true);

    struct rd_packet p, q;
    memset(&p, 0, sizeof p);
    memset(p.from, 'f', RD_NAME_MAX);
    worst_sync_msg(&p);
    p.nmembers = RD_MAX_MEMBERS;
    p.members = members;
    size_t len = 0;
    /* The bound is the encoder's worst case exactly, plus the envelope a sealed frame adds:
     * a SYNC of the longest strings and the widest integers takes all the rest but the 2
     * bytes it gives the msgs array (a fixarray of one here, an array16 in the worst
     * header). With statuses too wide to be legal: */
    for (size_t i = 0; i < RD_MAX_MEMBERS; i++)
        members[i].status = UINT8_MAX;
    assert_int_equal(rd_wire_encode(&p, buf + RD_WIRE_FRAME_PREFIX, RD_WIRE_FRAME_MAX, &len), 0);
    assert_int_equal(len, RD_WIRE_FRAME_MAX - RD_ENVELOPE_RESERVE - 2);
    /* a legal status is a fixint, one byte short of that worst case in every record */
    for (size_t i = 0; i < RD_MAX_MEMBERS; i++)
        members[i].status = RD_LEFT;
    assert_int_equal(rd_wire_encode(&p, buf + RD_WIRE_FRAME_PREFIX, RD_WIRE_FRAME_MAX, &len), 0);
    assert_int_equal(len, RD_WIRE_FRAME_MAX - RD_ENVELOPE_RESERVE - 2 - RD_MAX_MEMBERS);
    rd_wire_frame_put_header(buf, (uint32_t)len);

    uint32_t body = 0;
    assert_int_equal(rd_wire_frame_header(buf, RD_WIRE_FRAME_PREFIX + len, &body), 0);
    assert_int_equal(body, len);
    const char *why = NULL;
    assert_int_equal(
        rd_wire_decode(buf + RD_WIRE_FRAME_PREFIX, body, &q, out, RD_MAX_MEMBERS, &why), 0);
    assert_packets_equal(&p, &q);
    /* read as sync.c reads it, in 64 KiB pieces: the reader's memory follows the bytes
     * that arrived (at most twice them, as its buffer doubles) and ends within the buffer
     * bound that sync's memory bound is built on */
    struct rd_wire_frame_reader r;
    rd_wire_frame_reader_init(&r);
    size_t off = 0, used = 0;
    int rc = RD_EAGAIN;
    while (rc == RD_EAGAIN) {
        size_t n =
            RD_WIRE_FRAME_PREFIX + len - off < 65536 ? RD_WIRE_FRAME_PREFIX + len - off : 65536;
        rc = rd_wire_frame_feed(&r, buf + off, n, &used);
        off += used;
        assert_true(r.frame.cap <= 2 * r.frame.len + 64);
    }
    assert_int_equal(rc, 0);
    assert_int_equal(off, RD_WIRE_FRAME_PREFIX + len);
    assert_true(r.frame.cap <= RD_WIRE_FRAME_BUFFER_MAX);
    rd_wire_frame_reader_free(&r);
    /* one member more than a SYNC may carry is refused by both sides */
    p.nmembers = RD_MAX_MEMBERS + 1;
    assert_int_equal(rd_wire_encode(&p, buf, RD_WIRE_FRAME_MAX, &len), RD_EINVAL);
    free(buf);
    free(out);
    free(members);
}

/* ------------------------------------------------------------------ encoder limits */

static void test_wire_encode_never_writes_past_cap(void **state)
{
    struct rd_member m = {.name = "n3",
                          .addr = {.family = 6, .port = 7946, .ip = {0xfd, 0, [15] = 3}},
                          .incarnation = 1700000000000ull,
                          .status = RD_SUSPECT,
                          .weight = RD_WEIGHT_MAX,
                          .tags = "a=b",
                          .accuser = "n1"};
    struct rd_packet p = ping_from_n1(&m);
    char full[256];
    size_t full_len = 0;
    assert_int_equal(rd_wire_encode(&p, full, sizeof full, &full_len), 0);
    for (size_t cap = 0; cap <= full_len; cap++) {
        /* exactly cap bytes of heap, so ASan sees a write of one byte more */
        char *buf = malloc(cap > 0 ? cap : 1);
        assert_non_null(buf);
        size_t len = 12345;
        int rc = rd_wire_encode(&p, buf, cap, &len);
        if (cap < full_len) {
            assert_int_equal(rc, RD_E2BIG);
            assert_int_equal(len, 12345);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(len, full_len);
            assert_memory_equal(buf, full, len);
        }
        free(buf);
    }
}

static void test_wire_encode_refuses_packets_out_of_bounds(void **state)
{
    char buf[4096];
    size_t len = 0;
    struct rd_member m = {.name = "m", .weight = 1};
    struct rd_packet base = {.from = "a", .nmsgs = 1, .nmembers = 1, .members = &m};
    base.msgs[0].type = RD_MSG_ACK;
    assert_int_equal(rd_wire_encode(&base, buf, sizeof buf, &len), 0);

    struct rd_packet p = base;
    p.nmsgs = RD_PACKET_MAX_MSGS + 1;
    assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), RD_EINVAL);

    p = base;
    p.members = NULL;
    assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), RD_EINVAL);

    p = base;
    memset(p.from, 'a', sizeof p.from); /* no NUL */
    assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), RD_EINVAL);

    const uint8_t bad_types[] = {0, RD_MSG_SYNC + 1, 0x80, 0xff};
    for (size_t i = 0; i < sizeof bad_types; i++) {
        p = base;
        p.msgs[0].type = bad_types[i];
        assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), RD_EINVAL);
    }

    p = base;
    memset(p.msgs[0].target, 't', sizeof p.msgs[0].target);
    assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), RD_EINVAL);

    p = base;
    p.msgs[0].target_addr.family = 5;
    assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), RD_EINVAL);

    struct rd_member bad;
    p = base;
    p.members = &bad;
    char *fields[] = {bad.name, bad.zone, bad.tags, bad.accuser};
    size_t sizes[] = {sizeof bad.name, sizeof bad.zone, sizeof bad.tags, sizeof bad.accuser};
    for (int i = 0; i < 4; i++) {
        bad = m;
        memset(fields[i], 'x', sizes[i]);
        assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), RD_EINVAL);
    }
    bad = m;
    bad.addr.family = 1;
    assert_int_equal(rd_wire_encode(&p, buf, sizeof buf, &len), RD_EINVAL);
}

/* ------------------------------------------------------------------ TCP framing */

static void test_wire_frame_header_waits_for_four_bytes(void **state)
{
    const char hdr[4] = {0, 0, 0, 52};
    uint32_t body = 99;
    for (size_t n = 0; n < 4; n++)
        assert_int_equal(rd_wire_frame_header(hdr, n, &body), RD_EAGAIN);
    assert_int_equal(body, 99);
    assert_int_equal(rd_wire_frame_header(hdr, 4, &body), 0);
    assert_int_equal(body, 52);
}

static void test_wire_frame_header_refuses_empty_and_huge_frames(void **state)
{
    char hdr[4];
    uint32_t body = 0;
    rd_wire_frame_put_header(hdr, 0);
    body = 99;
    assert_int_equal(rd_wire_frame_header(hdr, 4, &body), RD_E2BIG);
    assert_int_equal(body, 0); /* the refused length is told, so empty and huge differ */
    rd_wire_frame_put_header(hdr, RD_WIRE_FRAME_MAX + 1);
    assert_int_equal(rd_wire_frame_header(hdr, 4, &body), RD_E2BIG);
    assert_int_equal(body, RD_WIRE_FRAME_MAX + 1);
    rd_wire_frame_put_header(hdr, UINT32_MAX);
    assert_int_equal(rd_wire_frame_header(hdr, 4, &body), RD_E2BIG);
    assert_int_equal(body, UINT32_MAX);
    rd_wire_frame_put_header(hdr, RD_WIRE_FRAME_MAX);
    assert_int_equal(rd_wire_frame_header(hdr, 4, &body), 0);
    assert_int_equal(body, RD_WIRE_FRAME_MAX);
}

static void test_wire_frame_prefix_is_big_endian(void **state)
{
    char hdr[4];
    rd_wire_frame_put_header(hdr, 0x01020384u);
    assert_memory_equal(hdr, "\x01\x02\x03\x84", 4);
    uint32_t body = 0;
    /* larger than RD_WIRE_FRAME_MAX, but the bytes must still read back big-endian */
    rd_wire_frame_put_header(hdr, 0x00012345u);
    assert_memory_equal(hdr, "\x00\x01\x23\x45", 4);
    assert_int_equal(rd_wire_frame_header(hdr, 4, &body), 0);
    assert_int_equal(body, 0x12345u);
}

static void test_wire_frame_carries_one_packet(void **state)
{
    struct rd_member m = {.name = "n2", .addr = addr4(10, 0, 0, 2, 7946), .weight = 1000};
    struct rd_packet p = {.from = "n1", .nmsgs = 1, .nmembers = 1, .members = &m};
    p.msgs[0] = (struct rd_msg){
        .type = RD_MSG_SYNC, .flags = RD_SYNC_JOIN | RD_SYNC_REPLY, .ring = {1, 0, 512}};
    char buf[512];
    size_t len = 0;
    assert_int_equal(
        rd_wire_encode(&p, buf + RD_WIRE_FRAME_PREFIX, sizeof buf - RD_WIRE_FRAME_PREFIX, &len), 0);
    rd_wire_frame_put_header(buf, (uint32_t)len);
    /* the stream delivers a byte at a time: only the whole prefix gives the length */
    uint32_t body = 0;
    for (size_t have = 0; have < RD_WIRE_FRAME_PREFIX; have++)
        assert_int_equal(rd_wire_frame_header(buf, have, &body), RD_EAGAIN);
    assert_int_equal(rd_wire_frame_header(buf, RD_WIRE_FRAME_PREFIX + 1, &body), 0);
    assert_int_equal(body, len);
    struct rd_packet q;
    struct rd_member out[RD_PACKET_MAX_MEMBERS];
    assert_int_equal(
        decode_exact(buf + RD_WIRE_FRAME_PREFIX, body, &q, out, RD_PACKET_MAX_MEMBERS, NULL), 0);
    assert_packets_equal(&p, &q);
}

/* ------------------------------------------------------------------ frame reader */

/* A SYNC frame from `from` carrying one member: prefix + packet into buf; returns its size. */
static size_t sync_frame_of(const char *from, char *buf, size_t cap)
{
    struct rd_member m = {.name = "n2", .addr = addr4(10, 0, 0, 2, 7946), .weight = 1000};
    struct rd_packet p = {.nmsgs = 1, .nmembers = 1, .members = &m};
    snprintf(p.from, sizeof p.from, "%s", from);
    p.msgs[0] = (struct rd_msg){.type = RD_MSG_SYNC, .flags = RD_SYNC_JOIN, .ring = {1, 0, 512}};
    size_t len = 0;
    assert_int_equal(
        rd_wire_encode(&p, buf + RD_WIRE_FRAME_PREFIX, cap - RD_WIRE_FRAME_PREFIX, &len), 0);
    rd_wire_frame_put_header(buf, (uint32_t)len);
    return RD_WIRE_FRAME_PREFIX + len;
}

static void test_wire_frame_reader_takes_a_frame_one_byte_at_a_time(void **state)
{
    char buf[512];
    size_t n = sync_frame_of("n1", buf, sizeof buf);
    struct rd_wire_frame_reader r;
    rd_wire_frame_reader_init(&r);
    size_t used = 99;
    for (size_t i = 0; i + 1 < n; i++) {
        assert_int_equal(rd_wire_frame_feed(&r, buf + i, 1, &used), RD_EAGAIN);
        assert_int_equal(used, 1);
    }
    assert_int_equal(rd_wire_frame_feed(&r, buf + n - 1, 1, &used), 0);
    assert_int_equal(used, 1);
    assert_int_equal(r.body_len, n - RD_WIRE_FRAME_PREFIX);
    assert_memory_equal(r.body, buf + RD_WIRE_FRAME_PREFIX, r.body_len);
    struct rd_packet q;
    struct rd_member out[4];
    assert_int_equal(decode_exact(r.body, r.body_len, &q, out, 4, NULL), 0);
    assert_string_equal(q.from, "n1");
    /* an empty feed after a frame starts the next one and waits */
    assert_int_equal(rd_wire_frame_feed(&r, buf, 0, &used), RD_EAGAIN);
    assert_int_equal(used, 0);
    rd_wire_frame_reader_free(&r);
}

static void test_wire_frame_reader_splits_two_frames_back_to_back(void **state)
{
    char buf[1024];
    size_t n1 = sync_frame_of("first", buf, sizeof buf);
    size_t n2 = sync_frame_of("second", buf + n1, sizeof buf - n1);
    struct rd_wire_frame_reader r;
    rd_wire_frame_reader_init(&r);
    size_t used = 0;
    assert_int_equal(rd_wire_frame_feed(&r, buf, n1 + n2, &used), 0);
    assert_int_equal(used, n1); /* it stops at the first frame's end */
    struct rd_packet q;
    struct rd_member out[4];
    assert_int_equal(decode_exact(r.body, r.body_len, &q, out, 4, NULL), 0);
    assert_string_equal(q.from, "first");
    assert_int_equal(rd_wire_frame_feed(&r, buf + n1, n2, &used), 0);
    assert_int_equal(used, n2);
    assert_int_equal(decode_exact(r.body, r.body_len, &q, out, 4, NULL), 0);
    assert_string_equal(q.from, "second");
    rd_wire_frame_reader_free(&r);
}

static void test_wire_frame_reader_refuses_an_oversize_prefix_for_good(void **state)
{
    char buf[8] = {0};
    rd_wire_frame_put_header(buf, RD_WIRE_FRAME_MAX + 1);
    struct rd_wire_frame_reader r;
    rd_wire_frame_reader_init(&r);
    size_t used = 0;
    /* the prefix in two pieces: refused as soon as it is whole, before any body byte */
    assert_int_equal(rd_wire_frame_feed(&r, buf, 2, &used), RD_EAGAIN);
    assert_int_equal(rd_wire_frame_feed(&r, buf + 2, sizeof buf - 2, &used), RD_E2BIG);
    assert_int_equal(used, 2);
    assert_true(r.frame.len <= RD_WIRE_FRAME_PREFIX);
    assert_int_equal(r.body_len, RD_WIRE_FRAME_MAX + 1); /* what was refused */
    /* sticky: nothing more is taken, even a valid frame */
    char good[512];
    size_t n = sync_frame_of("n1", good, sizeof good);
    assert_int_equal(rd_wire_frame_feed(&r, good, n, &used), RD_E2BIG);
    assert_int_equal(used, 0);
    rd_wire_frame_reader_free(&r);

    /* a zero length is refused the same way */
    rd_wire_frame_reader_init(&r);
    memset(buf, 0, sizeof buf);
    assert_int_equal(rd_wire_frame_feed(&r, buf, sizeof buf, &used), RD_E2BIG);
    assert_int_equal(r.body_len, 0);
    rd_wire_frame_reader_free(&r);
}

static void test_wire_frame_reader_buffers_only_what_arrived(void **state)
{
    char hdr[RD_WIRE_FRAME_PREFIX];
    rd_wire_frame_put_header(hdr, RD_WIRE_FRAME_MAX);
    struct rd_wire_frame_reader r;
    rd_wire_frame_reader_init(&r);
    size_t used = 0;
    assert_int_equal(rd_wire_frame_feed(&r, hdr, sizeof hdr, &used), RD_EAGAIN);
    assert_int_equal(r.body_len, RD_WIRE_FRAME_MAX);
    assert_true(r.frame.cap < 4096); /* a promise of 7 MB is not paid for up front */
    rd_wire_frame_reader_free(&r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wire_golden_ping_with_ipv4_member),
        cmocka_unit_test(test_wire_golden_ping_with_ipv6_suspect_member),
        cmocka_unit_test(test_wire_golden_ping_with_member_without_address),
        cmocka_unit_test(test_wire_golden_ping_with_drained_member),
        cmocka_unit_test(test_wire_golden_ping_req_with_target_address),
        cmocka_unit_test(test_wire_golden_sync_with_ring_parameters),
        cmocka_unit_test(test_wire_round_trips_every_msg_type),
        cmocka_unit_test(test_wire_round_trips_empty_and_full_packets),
        cmocka_unit_test(test_wire_round_trips_random_packets_with_seed),
        cmocka_unit_test(test_wire_good_packet_of_the_table_is_accepted),
        cmocka_unit_test(test_wire_rejects_malformed_datagrams_with_reason),
        cmocka_unit_test(test_wire_rejects_every_prefix_of_a_valid_packet_as_truncated),
        cmocka_unit_test(test_wire_skips_unknown_trailing_fields),
        cmocka_unit_test(test_wire_skips_at_most_the_extra_limit),
        cmocka_unit_test(test_wire_survives_random_mutations_with_seed),
        cmocka_unit_test(test_wire_member_size_is_exact),
        cmocka_unit_test(test_wire_smallest_member_takes_member_min_bytes),
        cmocka_unit_test(test_wire_random_packets_stay_within_size_bounds_with_seed),
        cmocka_unit_test(test_wire_worst_case_packets_meet_the_bounds_exactly),
        cmocka_unit_test(test_wire_full_udp_packet_fits_the_budget),
        cmocka_unit_test(test_wire_largest_sync_is_the_frame_bound),
        cmocka_unit_test(test_wire_encode_never_writes_past_cap),
        cmocka_unit_test(test_wire_encode_refuses_packets_out_of_bounds),
        cmocka_unit_test(test_wire_frame_header_waits_for_four_bytes),
        cmocka_unit_test(test_wire_frame_header_refuses_empty_and_huge_frames),
        cmocka_unit_test(test_wire_frame_prefix_is_big_endian),
        cmocka_unit_test(test_wire_frame_carries_one_packet),
        cmocka_unit_test(test_wire_frame_reader_takes_a_frame_one_byte_at_a_time),
        cmocka_unit_test(test_wire_frame_reader_splits_two_frames_back_to_back),
        cmocka_unit_test(test_wire_frame_reader_refuses_an_oversize_prefix_for_good),
        cmocka_unit_test(test_wire_frame_reader_buffers_only_what_arrived),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
