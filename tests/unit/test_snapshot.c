/*
 * test_snapshot.c — the member snapshot (agent/snapshot.h): its bytes and its file.
 *
 * The decoder is fed what a crash or a disk can leave: the encoding of a table cut at every
 * length, with every byte flipped (three ways), padded, and bodies whose checksum is right
 * but whose fields are not (re-summed here with XXH3, as PROTOCOL.md specifies): each
 * must be refused with a reason, never half-decoded. The largest table encodes to exactly
 * RD_SNAPSHOT_MAX_BYTES, so the bound the reader applies is the one the writer can reach.
 * The file cases run in a fresh temporary directory: 0700 on creation, an unsafe
 * directory refused, 0600 and no temporary file after a save, a file over the bound refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "rd_err.h"
#include "snapshot.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/rd-snapshot-XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static const struct rd_snapshot_head HEAD = {.cluster = "prod", .self = "a", .saved_ms = 1234567};

static void three(struct rd_snapshot_entry e[3])
{
    memset(e, 0, 3 * sizeof *e);
    strcpy(e[0].name, "a");
    e[0].addr = (struct rd_addr){.family = 4, .port = 7946, .ip = {127, 0, 0, 1}};
    e[0].incarnation = 1700000000000;
    e[0].status = RD_ALIVE;
    strcpy(e[1].name, "node-b.example:2");
    e[1].addr = (struct rd_addr){.family = 6, .port = 65535, .ip = {0xfe, 0x80, [15] = 1}};
    e[1].incarnation = UINT64_MAX;
    e[1].status = RD_SUSPECT;
    strcpy(e[2].name, "c@z");
    e[2].addr = (struct rd_addr){.family = 4, .port = 1, .ip = {10, 1, 2, 3}};
    e[2].incarnation = 0;
    e[2].status = RD_LEFT;
}

/* Encodes the three-member table into buf; returns its length. */
static size_t encode_three(uint8_t *buf, size_t cap)
{
    struct rd_snapshot_entry e[3];
    three(e);
    int n = rd_snapshot_encode(&HEAD, e, 3, buf, cap);
    assert_true(n > 0);
    assert_int_equal((size_t)n, rd_snapshot_encoded_len(&HEAD, e, 3));
    return (size_t)n;
}

/* Decoding must fail with a reason; returns nothing, asserts. */
static void refused(const uint8_t *buf, size_t len, const char *why)
{
    struct rd_snapshot_head h;
    struct rd_snapshot_entry out[4];
    char err[256] = "";
    assert_int_equal(rd_snapshot_decode(buf, len, &h, out, 4, err, sizeof err), RD_EPROTO);
    assert_true(err[0] != '\0');
    if (why && !strstr(err, why)) fail_msg("reason '%s' does not say '%s'", err, why);
}

/* Writes a fresh header (length and XXH3) over buf for a body of `body` bytes. */
static void reseal(uint8_t *buf, size_t body)
{
    for (int i = 0; i < 4; i++)
        buf[8 + i] = (uint8_t)(body >> (24 - 8 * i));
    uint64_t sum = XXH3_64bits(buf + RD_SNAPSHOT_HEADER_LEN, body);
    for (int i = 0; i < 8; i++)
        buf[12 + i] = (uint8_t)(sum >> (56 - 8 * i));
}

static void test_round_trip(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t len = encode_three(buf, sizeof buf);
    struct rd_snapshot_entry e[3], out[3];
    three(e);
    struct rd_snapshot_head h;
    char err[128];
    assert_int_equal(rd_snapshot_decode(buf, len, &h, out, 3, err, sizeof err), 3);
    assert_string_equal(h.cluster, "prod");
    assert_string_equal(h.self, "a");
    assert_int_equal(h.saved_ms, 1234567);
    assert_int_equal(h.count, 3);
    for (int i = 0; i < 3; i++) {
        assert_string_equal(out[i].name, e[i].name);
        assert_int_equal(out[i].addr.family, e[i].addr.family);
        assert_int_equal(out[i].addr.port, e[i].addr.port);
        assert_memory_equal(out[i].addr.ip, e[i].addr.ip, e[i].addr.family == 6 ? 16 : 4);
        assert_true(out[i].incarnation == e[i].incarnation);
        assert_int_equal(out[i].status, e[i].status);
    }
    /* the header as PROTOCOL.md says: magic, version, reserved, body length */
    assert_memory_equal(buf, "RDSN\x01\x00\x00\x00", 8);
    assert_int_equal(((size_t)buf[10] << 8 | buf[11]) + RD_SNAPSHOT_HEADER_LEN, len);
    /* an empty table and an empty cluster label are fine */
    struct rd_snapshot_head bare = {.self = "solo"};
    int n = rd_snapshot_encode(&bare, NULL, 0, buf, sizeof buf);
    assert_int_equal(n, RD_SNAPSHOT_HEADER_LEN + 1 + 1 + 4 + 8 + 4);
    assert_int_equal(rd_snapshot_decode(buf, (size_t)n, &h, out, 3, err, sizeof err), 0);
    assert_string_equal(h.cluster, "");
    assert_string_equal(h.self, "solo");
}

/* proto/PROTOCOL.md, "Snapshot test vector": decoded, then encoded again byte for byte. */
static void test_protocol_vector(void **state)
{
    (void)state;
    static const uint8_t vec[] = {0x52, 0x44, 0x53, 0x4e, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
                                  0x38, 0xc2, 0xdb, 0x25, 0xe9, 0xb7, 0x4c, 0xc2, 0x16, 0x02, 0x63,
                                  0x31, 0x02, 0x6e, 0x31, 0x00, 0x00, 0x01, 0xa2, 0x2f, 0xe7, 0x09,
                                  0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x6e, 0x31, 0x04, 0x7f, 0x00,
                                  0x00, 0x01, 0x4e, 0x21, 0x00, 0x00, 0x01, 0xa2, 0x2f, 0xe7, 0x09,
                                  0x00, 0x03, 0x02, 0x6e, 0x30, 0x04, 0x7f, 0x00, 0x00, 0x01, 0x4e,
                                  0x20, 0x00, 0x00, 0x01, 0xa2, 0x2f, 0xe6, 0xe1, 0xf0, 0x00};
    assert_int_equal(sizeof vec, 76);
    struct rd_snapshot_head h;
    struct rd_snapshot_entry out[2];
    char err[128];
    assert_int_equal(rd_snapshot_decode(vec, sizeof vec, &h, out, 2, err, sizeof err), 2);
    assert_string_equal(h.cluster, "c1");
    assert_string_equal(h.self, "n1");
    assert_true(h.saved_ms == 1796100000000u);
    assert_string_equal(out[0].name, "n1");
    assert_int_equal(out[0].addr.port, 20001);
    assert_int_equal(out[0].status, RD_LEFT);
    assert_true(out[0].incarnation == 1796100000000u);
    assert_string_equal(out[1].name, "n0");
    assert_memory_equal(out[1].addr.ip, "\x7f\0\0\x01", 4);
    assert_int_equal(out[1].addr.port, 20000);
    assert_int_equal(out[1].status, RD_ALIVE);
    assert_true(out[1].incarnation == 1796099990000u);
    uint8_t again[sizeof vec];
    assert_int_equal(rd_snapshot_encode(&h, out, 2, again, sizeof again), sizeof vec);
    assert_memory_equal(again, vec, sizeof vec);
}

static void test_every_truncation_and_padding(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t len = encode_three(buf, sizeof buf);
    for (size_t cut = 0; cut < len; cut++)
        refused(buf, cut, cut < RD_SNAPSHOT_HEADER_LEN ? "truncated" : "truncated or padded");
    buf[len] = 0;
    refused(buf, len + 1, "truncated or padded");
}

static void test_every_flipped_byte(void **state)
{
    (void)state;
    uint8_t buf[512];
    size_t len = encode_three(buf, sizeof buf);
    static const uint8_t masks[] = {0x01, 0x80, 0xff};
    for (size_t i = 0; i < len; i++)
        for (size_t k = 0; k < sizeof masks; k++) {
            buf[i] ^= masks[k];
            refused(buf, len, i >= RD_SNAPSHOT_HEADER_LEN ? "checksum mismatch" : NULL);
            buf[i] ^= masks[k];
        }
    refused((const uint8_t *)"RDSN\x02\0\0\0", 20, "version 2");
}

/* Bodies with a right checksum and wrong fields. Offsets into the three-member table:
 * header 0..19, cluster length 20 and "prod" 21..24, name length 25 and "a" 26, saved_ms
 * 27..34, count 35..38, then record 0 at 39 (name length 39, name 40, family 41, ip
 * 42..45, port 46..47, incarnation 48..55, status 56), record 1 at 57. */
static void test_checked_fields(void **state)
{
    (void)state;
    uint8_t good[512], buf[512];
    size_t len = encode_three(good, sizeof good), body = len - RD_SNAPSHOT_HEADER_LEN;
    struct {
        size_t at;
        uint8_t value;
        const char *why;
    } cases[] = {
        {20, 40, "bad cluster label"},
        {21, '!', "bad cluster label"},
        {25, 0, "bad member name"},
        {26, ' ', "bad member name"},
        {38, 4, "record 3: truncated"},
        {38, 2, "after the last record"},
        {35, 0x7f, "more than"},
        {39, 65, "record 0: bad name"},
        {40, '/', "record 0: bad name"},
        {41, 5, "bad address family"},
        {41, 6, NULL},
        {56, 4, "record 0: bad status"},
        {22, 0, "bad cluster label"}, /* a NUL would cut the label short */
        {40, 0, "record 0: bad name"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        memcpy(buf, good, len);
        buf[cases[c].at] = cases[c].value;
        reseal(buf, body);
        refused(buf, len, cases[c].why);
    }
    /* more records than the caller has room for */
    struct rd_snapshot_head h;
    struct rd_snapshot_entry out[2];
    char err[128];
    assert_int_equal(rd_snapshot_decode(good, len, &h, out, 2, err, sizeof err), RD_EPROTO);
    assert_non_null(strstr(err, "more than the 2 allowed"));
}

static void test_encode_refusals(void **state)
{
    (void)state;
    uint8_t buf[512];
    struct rd_snapshot_entry e[3];
    three(e);
    size_t len = rd_snapshot_encoded_len(&HEAD, e, 3);
    assert_int_equal(rd_snapshot_encode(&HEAD, e, 3, buf, len - 1), RD_E2BIG);
    assert_int_equal(rd_snapshot_encode(&HEAD, e, RD_MAX_MEMBERS + 1, buf, 0), RD_E2BIG);
    e[1].addr.family = 0;
    assert_int_equal(rd_snapshot_encode(&HEAD, e, 3, buf, sizeof buf), RD_EINVAL);
    three(e);
    e[2].status = 4;
    assert_int_equal(rd_snapshot_encode(&HEAD, e, 3, buf, sizeof buf), RD_EINVAL);
    struct rd_snapshot_head nameless = {.cluster = "prod"};
    assert_int_equal(rd_snapshot_encode(&nameless, e, 0, buf, sizeof buf), RD_EINVAL);
}

/* The largest table the agent can hold encodes to exactly the bound the reader applies. */
static void test_largest_table_is_the_bound(void **state)
{
    (void)state;
    struct rd_snapshot_head head = {.saved_ms = 1};
    memset(head.cluster, 'c', RD_ZONE_MAX);
    memset(head.self, 's', RD_NAME_MAX);
    struct rd_snapshot_entry *e = calloc(RD_MAX_MEMBERS, sizeof *e);
    struct rd_snapshot_entry *out = calloc(RD_MAX_MEMBERS, sizeof *out);
    uint8_t *buf = malloc(RD_SNAPSHOT_MAX_BYTES + 1);
    assert_non_null(e);
    assert_non_null(out);
    assert_non_null(buf);
    for (size_t i = 0; i < RD_MAX_MEMBERS; i++) {
        snprintf(e[i].name, sizeof e[i].name, "%064zu", i);
        e[i].addr.family = 6;
        e[i].addr.port = (uint16_t)i;
        e[i].incarnation = i;
    }
    int n = rd_snapshot_encode(&head, e, RD_MAX_MEMBERS, buf, RD_SNAPSHOT_MAX_BYTES);
    assert_int_equal(n, RD_SNAPSHOT_MAX_BYTES);
    struct rd_snapshot_head h;
    char err[128];
    assert_int_equal(rd_snapshot_decode(buf, (size_t)n, &h, out, RD_MAX_MEMBERS, err, sizeof err),
                     RD_MAX_MEMBERS);
    assert_string_equal(out[RD_MAX_MEMBERS - 1].name, e[RD_MAX_MEMBERS - 1].name);
    free(buf);
    free(out);
    free(e);
}

static void test_owned(void **state)
{
    (void)state;
    char err[128];
    assert_int_equal(rd_snapshot_owned(&HEAD, "prod", "a", err, sizeof err), 0);
    assert_int_equal(rd_snapshot_owned(&HEAD, "", "a", err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "written for cluster 'prod'"));
    assert_int_equal(rd_snapshot_owned(&HEAD, "prod", "b", err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "written by member 'a', this agent is 'b'"));
}

static mode_t mode_of(const char *p)
{
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    return st.st_mode;
}

static void test_files(void **state)
{
    (void)state;
    char sd[128], file[160], tmp[170], err[256];
    snprintf(sd, sizeof sd, "%s/state", dir);
    snprintf(file, sizeof file, "%s/%s", sd, RD_SNAPSHOT_FILE);
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    mode_t old = umask(0);
    assert_int_equal(rd_snapshot_prepare_dir(sd, err, sizeof err), 0);
    umask(old);
    assert_int_equal(mode_of(sd) & 07777, 0700);
    assert_int_equal(rd_snapshot_prepare_dir(sd, err, sizeof err), 0); /* again: fine */
    uint8_t *back;
    size_t blen;
    assert_int_equal(rd_snapshot_read(sd, &back, &blen, err, sizeof err), RD_ENOENT);
    /* a stale temporary file from a crash is replaced; the saved file is 0600 */
    FILE *f = fopen(tmp, "w");
    assert_non_null(f);
    fclose(f);
    uint8_t buf[512];
    size_t len = encode_three(buf, sizeof buf);
    assert_int_equal(rd_snapshot_save(sd, buf, len, err, sizeof err), 0);
    assert_int_equal(mode_of(file) & 07777, 0600);
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(rd_snapshot_read(sd, &back, &blen, err, sizeof err), 0);
    assert_int_equal(blen, len);
    assert_memory_equal(back, buf, len);
    free(back);
    /* one byte over the bound is refused before it is read */
    assert_int_equal(truncate(file, RD_SNAPSHOT_MAX_BYTES + 1), 0);
    assert_int_equal(rd_snapshot_read(sd, &back, &blen, err, sizeof err), RD_E2BIG);
    assert_null(back);
    assert_int_equal(truncate(file, RD_SNAPSHOT_MAX_BYTES), 0);
    assert_int_equal(rd_snapshot_read(sd, &back, &blen, err, sizeof err), 0);
    assert_int_equal(blen, RD_SNAPSHOT_MAX_BYTES);
    free(back);
    /* an unsafe directory is refused as the socket directory is; a file is no directory */
    assert_int_equal(chmod(sd, 0770), 0);
    assert_int_equal(rd_snapshot_prepare_dir(sd, err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "state directory"));
    assert_non_null(strstr(err, "writable by others"));
    assert_int_equal(chmod(sd, 01777), 0); /* the sticky bit makes it safe, as for /tmp */
    assert_int_equal(rd_snapshot_prepare_dir(sd, err, sizeof err), 0);
    assert_int_equal(chmod(sd, 0700), 0);
    assert_int_equal(rd_snapshot_prepare_dir(file, err, sizeof err), RD_EINVAL);
    assert_non_null(strstr(err, "not a directory"));
    /* the save fails when the rename cannot happen: the old file stays, no .tmp left */
    assert_int_equal(unlink(file), 0);
    assert_int_equal(mkdir(file, 0700), 0);
    assert_int_equal(rd_snapshot_save(sd, buf, len, err, sizeof err), RD_EIO);
    assert_non_null(strstr(err, "rename"));
    assert_int_equal(access(tmp, F_OK), -1);
    assert_int_equal(rd_snapshot_read(sd, &back, &blen, err, sizeof err), RD_E2BIG);
    assert_int_equal(rmdir(file), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_protocol_vector),
        cmocka_unit_test(test_every_truncation_and_padding),
        cmocka_unit_test(test_every_flipped_byte),
        cmocka_unit_test(test_checked_fields),
        cmocka_unit_test(test_encode_refusals),
        cmocka_unit_test(test_largest_table_is_the_bound),
        cmocka_unit_test(test_owned),
        cmocka_unit_test(test_files),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
