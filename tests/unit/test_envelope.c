/*
 * test_envelope.c — sealing and opening gossip packets (proto/envelope.h).
 *
 * A fixed test vector pins the bytes (the same one proto/PROTOCOL.md shows, so the
 * document cannot drift from the code: RD_ENVELOPE_PRINT=1 prints it). Round trips at
 * every size up to a full datagram; every single-bit flip and every truncation of a sealed
 * packet is refused; a wrong key or label does not open; the keyring's order decides
 * which key reports a match; the receive rule (rd_envelope_accept) drops what it must,
 * with verify_incoming on and off.
 * A loop reports the cost of one seal + open (printed, not asserted).
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
#include <sodium.h>

#include "envelope.h"
#include "rd_err.h"

/* The vector: key 00..1f, nonce 40..57, label "prod", plaintext a version-1 packet from
 * "n1" with no msgs and no members (52 44 01 00 93 a2 6e 31 90 90). */
#define VEC_LABEL "prod"
static const char vec_plain[] = "\x52\x44\x01\x00\x93\xa2\x6e\x31\x90\x90";
#define VEC_PLAIN_LEN 10
static const char *const vec_sealed_hex =
    "52440101"
    "404142434445464748494a4b4c4d4e4f5051525354555657"
    "867d0470434217271f64"              /* ciphertext of the 10 plain bytes */
    "414f5deef81558ce3b374c78c8f48bb1"; /* tag */

static void vec_key(uint8_t key[RD_ENVELOPE_KEY_LEN])
{
    for (int i = 0; i < RD_ENVELOPE_KEY_LEN; i++)
        key[i] = (uint8_t)i;
}

static void to_hex(const char *in, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)in[i]);
}

static int setup(void **state)
{
    return sodium_init() < 0 ? -1 : 0;
}

static void test_vector(void **state)
{
    uint8_t key[RD_ENVELOPE_KEY_LEN], nonce[RD_ENVELOPE_NONCE_LEN];
    vec_key(key);
    for (int i = 0; i < RD_ENVELOPE_NONCE_LEN; i++)
        nonce[i] = (uint8_t)(0x40 + i);
    char out[128], hex[257];
    size_t len;
    assert_int_equal(rd_envelope_seal_nonce(key, nonce, VEC_LABEL, vec_plain, VEC_PLAIN_LEN, out,
                                            sizeof out, &len),
                     0);
    assert_int_equal(len, VEC_PLAIN_LEN + RD_ENVELOPE_OVERHEAD);
    to_hex(out, len, hex);
    if (getenv("RD_ENVELOPE_PRINT")) printf("sealed: %s\n", hex);
    assert_string_equal(hex, vec_sealed_hex);
    char plain[64];
    size_t plen, idx = 99;
    const char *reason;
    assert_int_equal(rd_envelope_open((const uint8_t(*)[RD_ENVELOPE_KEY_LEN])key, 1, VEC_LABEL, out,
                                      len, plain, sizeof plain, &plen, &idx, &reason),
                     0);
    assert_string_equal(reason, "ok");
    assert_int_equal(idx, 0);
    assert_int_equal(plen, VEC_PLAIN_LEN);
    assert_memory_equal(plain, vec_plain, VEC_PLAIN_LEN);
}

static void test_round_trip(void **state)
{
    uint8_t keys[2][RD_ENVELOPE_KEY_LEN];
    randombytes_buf(keys, sizeof keys);
    static char plain[RD_PACKET_BUDGET], sealed[RD_DATAGRAM_MAX], back[RD_PACKET_BUDGET];
    static const size_t sizes[] = {0, 1, 15, 16, 17, 100, 1000, RD_PACKET_BUDGET};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s], len, blen, idx;
        randombytes_buf(plain, n);
        assert_int_equal(rd_envelope_seal(keys[0], "c1", plain, n, sealed, sizeof sealed, &len), 0);
        assert_int_equal(len, n + RD_ENVELOPE_OVERHEAD);
        assert_true(len <= RD_DATAGRAM_MAX);
        assert_int_equal(
            rd_envelope_open(keys, 2, "c1", sealed, len, back, sizeof back, &blen, &idx, NULL), 0);
        assert_int_equal(blen, n);
        assert_int_equal(idx, 0);
        assert_memory_equal(back, plain, n);
    }
    /* a fresh nonce every time: the same packet never seals to the same bytes */
    char a[64], b[64];
    size_t la, lb;
    assert_int_equal(rd_envelope_seal(keys[0], "", "x", 1, a, sizeof a, &la), 0);
    assert_int_equal(rd_envelope_seal(keys[0], "", "x", 1, b, sizeof b, &lb), 0);
    assert_memory_not_equal(a, b, la);
}

static void test_every_bit_flip_refused(void **state)
{
    uint8_t key[1][RD_ENVELOPE_KEY_LEN];
    randombytes_buf(key, sizeof key);
    char sealed[128], back[128];
    size_t len, blen;
    assert_int_equal(
        rd_envelope_seal(key[0], "c", vec_plain, VEC_PLAIN_LEN, sealed, sizeof sealed, &len), 0);
    for (size_t i = 0; i < len; i++)
        for (int bit = 0; bit < 8; bit++) {
            char *copy = malloc(len);
            memcpy(copy, sealed, len);
            copy[i] ^= (char)(1 << bit);
            int rc = rd_envelope_open(key, 1, "c", copy, len, back, sizeof back, &blen, NULL, NULL);
            /* the clear header is checked before the tag; everything after it is the tag's */
            assert_int_equal(rc, i < RD_WIRE_MAGIC_LEN ? RD_EPROTO : RD_ENOENT);
            free(copy);
        }
}

static void test_wrong_key_and_label(void **state)
{
    uint8_t keys[2][RD_ENVELOPE_KEY_LEN];
    randombytes_buf(keys, sizeof keys);
    char sealed[128], back[128];
    size_t len, blen;
    const char *reason;
    assert_int_equal(rd_envelope_seal(keys[0], "east", "hello", 5, sealed, sizeof sealed, &len), 0);
    assert_int_equal(
        rd_envelope_open(&keys[1], 1, "east", sealed, len, back, sizeof back, &blen, NULL, &reason),
        RD_ENOENT);
    assert_string_equal(reason, "no key matched");
    static const char *const labels[] = {"west", "", "eas", "east2", "East"};
    for (size_t i = 0; i < sizeof labels / sizeof labels[0]; i++)
        assert_int_equal(
            rd_envelope_open(keys, 1, labels[i], sealed, len, back, sizeof back, &blen, NULL, NULL),
            RD_ENOENT);
    assert_int_equal(
        rd_envelope_open(keys, 1, "east", sealed, len, back, sizeof back, &blen, NULL, NULL), 0);
    assert_int_equal(
        rd_envelope_open(keys, 0, "east", sealed, len, back, sizeof back, &blen, NULL, NULL),
        RD_ENOENT);
}

static void test_truncated_at_every_length(void **state)
{
    uint8_t key[1][RD_ENVELOPE_KEY_LEN];
    randombytes_buf(key, sizeof key);
    char sealed[128], back[128];
    size_t len, blen;
    assert_int_equal(
        rd_envelope_seal(key[0], "", vec_plain, VEC_PLAIN_LEN, sealed, sizeof sealed, &len), 0);
    for (size_t n = 0; n < len; n++) {
        char *copy = malloc(n ? n : 1); /* exactly n bytes: ASan sees any over-read */
        memcpy(copy, sealed, n);
        const char *reason;
        int rc = rd_envelope_open(key, 1, "", copy, n, back, sizeof back, &blen, NULL, &reason);
        if (n < RD_ENVELOPE_OVERHEAD) {
            assert_int_equal(rc, RD_EPROTO);
            assert_string_equal(reason, "truncated");
        } else {
            assert_int_equal(rc, RD_ENOENT);
        }
        free(copy);
    }
}

static void test_key_order(void **state)
{
    uint8_t keys[3][RD_ENVELOPE_KEY_LEN];
    randombytes_buf(keys, sizeof keys);
    char sealed[128], back[128];
    size_t len, blen, idx;
    for (size_t k = 0; k < 3; k++) {
        assert_int_equal(rd_envelope_seal(keys[k], "", "ab", 2, sealed, sizeof sealed, &len), 0);
        idx = 99;
        assert_int_equal(
            rd_envelope_open(keys, 3, "", sealed, len, back, sizeof back, &blen, &idx, NULL), 0);
        assert_int_equal(idx, k);
        /* a keyring without that key refuses it, whatever else it holds */
        uint8_t others[2][RD_ENVELOPE_KEY_LEN];
        memcpy(others[0], keys[(k + 1) % 3], RD_ENVELOPE_KEY_LEN);
        memcpy(others[1], keys[(k + 2) % 3], RD_ENVELOPE_KEY_LEN);
        assert_int_equal(
            rd_envelope_open(others, 2, "", sealed, len, back, sizeof back, &blen, &idx, NULL),
            RD_ENOENT);
    }
}

static void test_limits(void **state)
{
    uint8_t key[1][RD_ENVELOPE_KEY_LEN] = {{0}};
    char sealed[64], back[8];
    size_t len, blen;
    char label[RD_ENVELOPE_LABEL_MAX + 2];
    memset(label, 'a', sizeof label - 1);
    label[sizeof label - 1] = '\0';
    assert_int_equal(rd_envelope_seal(key[0], label, "x", 1, sealed, sizeof sealed, &len),
                     RD_EINVAL);
    label[RD_ENVELOPE_LABEL_MAX] = '\0';
    assert_int_equal(rd_envelope_seal(key[0], label, "x", 1, sealed, sizeof sealed, &len), 0);
    assert_int_equal(rd_envelope_seal(key[0], "", "0123456789abcdefghij", 20, sealed,
                                      RD_ENVELOPE_OVERHEAD + 19, &len),
                     RD_E2BIG);
    assert_int_equal(rd_envelope_seal(key[0], "", "0123456789", 10, sealed, sizeof sealed, &len),
                     0);
    assert_int_equal(
        rd_envelope_open(key, 1, "", sealed, len, back, sizeof back, &blen, NULL, NULL), RD_E2BIG);
    const char *reason;
    char bad[RD_ENVELOPE_OVERHEAD] = {'R', 'X', 1, 1};
    assert_int_equal(
        rd_envelope_open(key, 1, "", bad, sizeof bad, back, sizeof back, &blen, NULL, &reason),
        RD_EPROTO);
    assert_string_equal(reason, "bad magic");
    bad[1] = 'D';
    bad[2] = 2;
    assert_int_equal(
        rd_envelope_open(key, 1, "", bad, sizeof bad, back, sizeof back, &blen, NULL, &reason),
        RD_EPROTO);
    assert_string_equal(reason, "unsupported version");
    bad[2] = 1;
    bad[3] = 0x03;
    assert_int_equal(
        rd_envelope_open(key, 1, "", bad, sizeof bad, back, sizeof back, &blen, NULL, &reason),
        RD_EPROTO);
    assert_string_equal(reason, "unknown flags");
}

static void test_accept_rule(void **state)
{
    uint8_t keys[2][RD_ENVELOPE_KEY_LEN];
    randombytes_buf(keys, sizeof keys);
    char sealed[128], out[128];
    size_t len, blen = 0;
    const char *body = NULL;
    assert_int_equal(
        rd_envelope_seal(keys[0], "c", vec_plain, VEC_PLAIN_LEN, sealed, sizeof sealed, &len), 0);
    /* keyed: the sealed packet opens; a plain one, another key's, and garbage do not */
    assert_int_equal(
        rd_envelope_accept(keys, 1, "c", true, sealed, len, out, sizeof out, &body, &blen),
        RD_ENVELOPE_OK);
    assert_ptr_equal(body, out);
    assert_int_equal(blen, VEC_PLAIN_LEN);
    assert_memory_equal(body, vec_plain, VEC_PLAIN_LEN);
    assert_int_equal(rd_envelope_accept(keys, 1, "c", true, vec_plain, VEC_PLAIN_LEN, out,
                                        sizeof out, &body, &blen),
                     RD_ENVELOPE_PLAIN);
    assert_int_equal(
        rd_envelope_accept(&keys[1], 1, "c", true, sealed, len, out, sizeof out, &body, &blen),
        RD_ENVELOPE_NOKEY);
    assert_int_equal(
        rd_envelope_accept(keys, 1, "d", true, sealed, len, out, sizeof out, &body, &blen),
        RD_ENVELOPE_NOKEY);
    assert_int_equal(
        rd_envelope_accept(keys, 1, "c", true, "junk", 4, out, sizeof out, &body, &blen),
        RD_ENVELOPE_MALFORMED);
    assert_int_equal(
        rd_envelope_accept(keys, 1, "c", true, sealed, 20, out, sizeof out, &body, &blen),
        RD_ENVELOPE_MALFORMED);
    /* unkeyed: a plain packet (or anything for the decoder to judge) passes; a sealed one not */
    assert_int_equal(
        rd_envelope_accept(NULL, 0, "c", true, sealed, len, out, sizeof out, &body, &blen),
        RD_ENVELOPE_SEALED);
    assert_int_equal(rd_envelope_accept(NULL, 0, "c", true, vec_plain, VEC_PLAIN_LEN, out,
                                        sizeof out, &body, &blen),
                     RD_ENVELOPE_OK);
    assert_ptr_equal(body, vec_plain);
    assert_int_equal(blen, VEC_PLAIN_LEN);
    /* and the drops are counted by reason, malformed and accepted ones not */
    struct rd_envelope_drops d = {0};
    assert_true(rd_envelope_drop_count(&d, RD_ENVELOPE_NOKEY));
    assert_true(rd_envelope_drop_count(&d, RD_ENVELOPE_PLAIN));
    assert_true(rd_envelope_drop_count(&d, RD_ENVELOPE_PLAIN));
    assert_true(rd_envelope_drop_count(&d, RD_ENVELOPE_SEALED));
    assert_false(rd_envelope_drop_count(&d, RD_ENVELOPE_OK));
    assert_false(rd_envelope_drop_count(&d, RD_ENVELOPE_MALFORMED));
    assert_int_equal(d.nokey, 1);
    assert_int_equal(d.plain, 2);
    assert_int_equal(d.sealed, 1);
    assert_int_equal(d.plain_accepted, 0);
}

/* verify_incoming off (a cluster turning encryption on): a keyed receiver lets a plain
 * packet in as it came and counts it apart; everything else is judged as with it on. */
static void test_accept_rule_plain_let_in(void **state)
{
    uint8_t keys[2][RD_ENVELOPE_KEY_LEN];
    randombytes_buf(keys, sizeof keys);
    char sealed[128], out[128];
    size_t len, blen = 0;
    const char *body = NULL;
    assert_int_equal(
        rd_envelope_seal(keys[0], "c", vec_plain, VEC_PLAIN_LEN, sealed, sizeof sealed, &len), 0);
    /* plain: let in, untouched */
    assert_int_equal(rd_envelope_accept(keys, 1, "c", false, vec_plain, VEC_PLAIN_LEN, out,
                                        sizeof out, &body, &blen),
                     RD_ENVELOPE_PLAIN_OK);
    assert_ptr_equal(body, vec_plain);
    assert_int_equal(blen, VEC_PLAIN_LEN);
    /* sealed still has to open: ours does, another key's or cluster's or a cut one does not */
    body = NULL;
    assert_int_equal(
        rd_envelope_accept(keys, 1, "c", false, sealed, len, out, sizeof out, &body, &blen),
        RD_ENVELOPE_OK);
    assert_ptr_equal(body, out);
    assert_memory_equal(body, vec_plain, VEC_PLAIN_LEN);
    assert_int_equal(
        rd_envelope_accept(&keys[1], 1, "c", false, sealed, len, out, sizeof out, &body, &blen),
        RD_ENVELOPE_NOKEY);
    assert_int_equal(
        rd_envelope_accept(keys, 1, "d", false, sealed, len, out, sizeof out, &body, &blen),
        RD_ENVELOPE_NOKEY);
    assert_int_equal(
        rd_envelope_accept(keys, 1, "c", false, sealed, 20, out, sizeof out, &body, &blen),
        RD_ENVELOPE_MALFORMED);
    char flipped[128];
    memcpy(flipped, sealed, len);
    flipped[len - 1] ^= 1;
    assert_int_equal(
        rd_envelope_accept(keys, 1, "c", false, flipped, len, out, sizeof out, &body, &blen),
        RD_ENVELOPE_NOKEY);
    /* "plain" means our version with no flags: anything else is not let in */
    char other[VEC_PLAIN_LEN];
    memcpy(other, vec_plain, VEC_PLAIN_LEN);
    other[2] = 2; /* another version */
    assert_int_equal(rd_envelope_accept(keys, 1, "c", false, other, VEC_PLAIN_LEN, out, sizeof out,
                                        &body, &blen),
                     RD_ENVELOPE_MALFORMED);
    other[2] = vec_plain[2];
    other[3] = 2; /* an unknown flag */
    assert_int_equal(rd_envelope_accept(keys, 1, "c", false, other, VEC_PLAIN_LEN, out, sizeof out,
                                        &body, &blen),
                     RD_ENVELOPE_MALFORMED);
    assert_int_equal(
        rd_envelope_accept(keys, 1, "c", false, "junk", 4, out, sizeof out, &body, &blen),
        RD_ENVELOPE_MALFORMED);
    assert_int_equal(
        rd_envelope_accept(keys, 1, "c", false, "RD", 2, out, sizeof out, &body, &blen),
        RD_ENVELOPE_MALFORMED);
    /* without keys the flag means nothing: sealed is still dropped, plain still passes */
    assert_int_equal(
        rd_envelope_accept(NULL, 0, "c", false, sealed, len, out, sizeof out, &body, &blen),
        RD_ENVELOPE_SEALED);
    assert_int_equal(rd_envelope_accept(NULL, 0, "c", false, vec_plain, VEC_PLAIN_LEN, out,
                                        sizeof out, &body, &blen),
                     RD_ENVELOPE_OK);
    /* a plain packet let in is counted apart, and is not a drop */
    struct rd_envelope_drops d = {0};
    assert_false(rd_envelope_drop_count(&d, RD_ENVELOPE_PLAIN_OK));
    assert_false(rd_envelope_drop_count(&d, RD_ENVELOPE_PLAIN_OK));
    assert_true(rd_envelope_drop_count(&d, RD_ENVELOPE_NOKEY));
    assert_int_equal(d.plain_accepted, 2);
    assert_int_equal(d.plain, 0);
    assert_int_equal(d.nokey, 1);
}

/* The cost of sealing and opening one full datagram, for the record; not asserted. */
static void test_cost(void **state)
{
    uint8_t key[1][RD_ENVELOPE_KEY_LEN];
    randombytes_buf(key, sizeof key);
    static char plain[RD_PACKET_BUDGET], sealed[RD_DATAGRAM_MAX], back[RD_PACKET_BUDGET];
    static const size_t sizes[] = {100, RD_PACKET_BUDGET};
    for (size_t s = 0; s < 2; s++) {
        int rounds = 2000;
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        for (int i = 0; i < rounds; i++) {
            size_t len, blen;
            assert_int_equal(
                rd_envelope_seal(key[0], "c", plain, sizes[s], sealed, sizeof sealed, &len), 0);
            assert_int_equal(
                rd_envelope_open(key, 1, "c", sealed, len, back, sizeof back, &blen, NULL, NULL),
                0);
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ns =
            ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / rounds;
        printf("envelope: seal+open of %zu bytes: %.0f ns\n", sizes[s], ns);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vector),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_every_bit_flip_refused),
        cmocka_unit_test(test_wrong_key_and_label),
        cmocka_unit_test(test_truncated_at_every_length),
        cmocka_unit_test(test_key_order),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_accept_rule),
        cmocka_unit_test(test_accept_rule_plain_let_in),
        cmocka_unit_test(test_cost),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
