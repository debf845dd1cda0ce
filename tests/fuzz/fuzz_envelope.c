/*
 * fuzz_envelope.c — libFuzzer target for the envelope (proto/envelope.h).
 *
 * The first byte picks a path:
 *   even: the rest is an untrusted packet, opened with a fixed keyring of two keys (the
 *         first is PROTOCOL.md's test-vector key, so its vector is a seed that opens) and
 *         passed through the receive rule keyed and unkeyed, with verify_incoming on and
 *         off. It must never crash or over-read; whatever opens must be exactly what
 *         sealing its plaintext with the key that matched and the same nonce gives (nothing
 *         opens that was not sealed), and must not open with the other key alone or under
 *         another cluster label; verify_incoming off changes only the verdict on a plain
 *         packet, which it lets in as it came.
 *   odd:  [pos lo][pos hi][xor] then a plaintext: it is sealed with the second key, one
 *         byte at pos (modulo the length) is XORed with xor, and the result opened three
 *         ways: with both keys (a wrong key first, then the right one), with the wrong key
 *         alone, and with both keys under another label. With xor = 0 the first opens to
 *         the plaintext and says the second key did it, and the other two find no key;
 *         with any other xor none of the three opens.
 * Build and run: see README.md beside this file.
 */
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "envelope.h"
#include "rd_err.h"

#define LABEL       "prod"
#define OTHER_LABEL "prod2" /* another cluster sharing the keys */
#define BUF         70000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(bool ok)
{
    if (!ok) abort();
}

static uint8_t keys[2][RD_ENVELOPE_KEY_LEN];
static char out[BUF], again[BUF], sealed[BUF];

static void init(void)
{
    static bool done;
    if (done) return;
    check(sodium_init() >= 0);
    for (int i = 0; i < RD_ENVELOPE_KEY_LEN; i++) {
        keys[0][i] = (uint8_t)i;
        keys[1][i] = (uint8_t)(0x20 + i);
    }
    done = true;
}

static void open_untrusted(const char *in, size_t len)
{
    size_t n, idx;
    const char *reason;
    int rc = rd_envelope_open(keys, 2, LABEL, in, len, out, sizeof out, &n, &idx, &reason);
    check(reason != NULL);
    if (rc == 0) {
        size_t m;
        check(idx < 2);
        check(rd_envelope_seal_nonce(keys[idx], (const uint8_t *)in + RD_WIRE_MAGIC_LEN, LABEL, out,
                                     n, again, sizeof again, &m) == 0);
        check(m == len && memcmp(again, in, len) == 0);
        /* the wrong key alone, or the right keys for another cluster, open nothing */
        check(rd_envelope_open(&keys[1 - idx], 1, LABEL, in, len, out, sizeof out, &m, NULL,
                               NULL) == RD_ENOENT);
        check(rd_envelope_open(keys, 2, OTHER_LABEL, in, len, out, sizeof out, &m, NULL, NULL) ==
              RD_ENOENT);
    } else {
        check(rc == RD_EPROTO || rc == RD_ENOENT || rc == RD_E2BIG);
    }
    const char *body;
    size_t blen;
    enum rd_envelope_verdict v =
        rd_envelope_accept(keys, 2, LABEL, true, in, len, out, sizeof out, &body, &blen);
    check((v == RD_ENVELOPE_OK) == (rc == 0));
    check(v != RD_ENVELOPE_PLAIN_OK && v != RD_ENVELOPE_SEALED);
    /* verify_incoming off: only what the strict rule called plain changes, and it is let in
     * untouched; a sealed packet is judged exactly as before */
    const char *lbody;
    size_t lblen;
    enum rd_envelope_verdict lv =
        rd_envelope_accept(keys, 2, LABEL, false, in, len, out, sizeof out, &lbody, &lblen);
    if (v == RD_ENVELOPE_PLAIN)
        check(lv == RD_ENVELOPE_PLAIN_OK && lbody == in && lblen == len);
    else
        check(lv == v);
    for (int strict = 0; strict < 2; strict++) {
        v = rd_envelope_accept(NULL, 0, LABEL, strict, in, len, out, sizeof out, &body, &blen);
        check(v == RD_ENVELOPE_OK || v == RD_ENVELOPE_SEALED);
        if (v == RD_ENVELOPE_OK) check(body == in && blen == len);
    }
}

static void seal_and_mutate(const uint8_t *d, size_t size)
{
    if (size < 3) return;
    size_t pos = (size_t)d[0] | (size_t)d[1] << 8;
    uint8_t x = d[2];
    const char *plain = (const char *)d + 3;
    size_t plen = size - 3, len, n;
    check(rd_envelope_seal(keys[1], LABEL, plain, plen, sealed, sizeof sealed, &len) == 0);
    sealed[pos % len] ^= (char)x;
    char *copy = malloc(len); /* exactly len bytes: ASan sees an over-read */
    check(copy != NULL);
    memcpy(copy, sealed, len);
    size_t idx = 2, m;
    int rc = rd_envelope_open(keys, 2, LABEL, copy, len, out, sizeof out, &n, &idx, NULL);
    /* keys[0] alone is never the sealing key; OTHER_LABEL is never the sealing label */
    int wrong = rd_envelope_open(keys, 1, LABEL, copy, len, again, sizeof again, &m, NULL, NULL);
    int other =
        rd_envelope_open(keys, 2, OTHER_LABEL, copy, len, again, sizeof again, &m, NULL, NULL);
    if (x == 0) {
        check(rc == 0 && idx == 1 && n == plen && memcmp(out, plain, plen) == 0);
        check(wrong == RD_ENOENT && other == RD_ENOENT);
        const char *body;
        size_t blen;
        check(rd_envelope_accept(keys, 1, LABEL, true, copy, len, again, sizeof again, &body,
                                 &blen) == RD_ENVELOPE_NOKEY);
    } else {
        check(rc == RD_ENOENT || rc == RD_EPROTO);
        check(wrong == RD_ENOENT || wrong == RD_EPROTO);
        check(other == RD_ENOENT || other == RD_EPROTO);
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init();
    if (size < 1 || size > BUF - RD_ENVELOPE_OVERHEAD) return 0;
    if (data[0] & 1) {
        seal_and_mutate(data + 1, size - 1);
        return 0;
    }
    char *in = malloc(size - 1 ? size - 1 : 1);
    check(in != NULL);
    memcpy(in, data + 1, size - 1);
    open_untrusted(in, size - 1);
    free(in);
    return 0;
}
