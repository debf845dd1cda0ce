/*
 * envelope.c — sealing and opening gossip packets (see envelope.h).
 *
 * A thin layer over libsodium's crypto_aead_xchacha20poly1305_ietf_*: this file only lays
 * out the bytes (clear header, nonce, ciphertext) and builds the associated data; the
 * cipher, the tag check and the random nonces are libsodium's.
 */
#include "envelope.h"

#include <sodium.h>
#include <string.h>

#include "rd_err.h"

_Static_assert(RD_ENVELOPE_OVERHEAD <= RD_ENVELOPE_RESERVE,
               "lib/msg.h must reserve room for the envelope in every datagram and frame");
_Static_assert(RD_PACKET_BUDGET + RD_ENVELOPE_OVERHEAD <= RD_DATAGRAM_MAX,
               "a sealed full packet must still fit one datagram");
_Static_assert(RD_ENVELOPE_KEY_LEN == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "key size");
_Static_assert(RD_ENVELOPE_NONCE_LEN == crypto_aead_xchacha20poly1305_ietf_NPUBBYTES, "nonce");
_Static_assert(RD_ENVELOPE_TAG_LEN == crypto_aead_xchacha20poly1305_ietf_ABYTES, "tag size");
_Static_assert(RD_ENVELOPE_LABEL_MAX < 256, "the label's length is one byte of the AD");

/* Associated data: the clear header, the label's length, the label. */
#define AD_MAX (RD_WIRE_MAGIC_LEN + 1 + RD_ENVELOPE_LABEL_MAX)

/* Fills ad with the clear header of a sealed packet and the label; returns its length, or
 * 0 if the label is too long. */
static size_t make_ad(const char *label, unsigned char ad[AD_MAX])
{
    size_t n = strlen(label);
    if (n > RD_ENVELOPE_LABEL_MAX) return 0;
    ad[0] = 'R';
    ad[1] = 'D';
    ad[2] = RD_WIRE_VERSION;
    ad[3] = RD_WIRE_FLAG_SEALED;
    ad[4] = (unsigned char)n;
    memcpy(ad + 5, label, n);
    return 5 + n;
}

int rd_envelope_seal_nonce(const uint8_t key[RD_ENVELOPE_KEY_LEN],
                           const uint8_t nonce[RD_ENVELOPE_NONCE_LEN], const char *label,
                           const char *plain, size_t len, char *out, size_t cap, size_t *outlen)
{
    unsigned char ad[AD_MAX];
    size_t adlen = make_ad(label, ad);
    if (adlen == 0) return RD_EINVAL;
    if (cap < RD_ENVELOPE_OVERHEAD || len > cap - RD_ENVELOPE_OVERHEAD) return RD_E2BIG;
    unsigned char *o = (unsigned char *)out;
    memcpy(o, ad, RD_WIRE_MAGIC_LEN);
    memcpy(o + RD_WIRE_MAGIC_LEN, nonce, RD_ENVELOPE_NONCE_LEN);
    unsigned long long clen;
    crypto_aead_xchacha20poly1305_ietf_encrypt(o + RD_WIRE_MAGIC_LEN + RD_ENVELOPE_NONCE_LEN, &clen,
                                               (const unsigned char *)plain, len, ad, adlen, NULL,
                                               nonce, key);
    *outlen = RD_WIRE_MAGIC_LEN + RD_ENVELOPE_NONCE_LEN + (size_t)clen;
    return 0;
}

int rd_envelope_seal(const uint8_t key[RD_ENVELOPE_KEY_LEN], const char *label, const char *plain,
                     size_t len, char *out, size_t cap, size_t *outlen)
{
    uint8_t nonce[RD_ENVELOPE_NONCE_LEN];
    randombytes_buf(nonce, sizeof nonce);
    return rd_envelope_seal_nonce(key, nonce, label, plain, len, out, cap, outlen);
}

/* Why the clear header of `in[0..len)` is not a sealed packet's, or NULL if it is. */
static const char *header_problem(const unsigned char *in, size_t len)
{
    if (len < RD_WIRE_MAGIC_LEN) return "truncated";
    if (in[0] != 'R' || in[1] != 'D') return "bad magic";
    if (in[2] != RD_WIRE_VERSION) return "unsupported version";
    if (in[3] != RD_WIRE_FLAG_SEALED) return "unknown flags";
    if (len < RD_ENVELOPE_OVERHEAD) return "truncated";
    return NULL;
}

int rd_envelope_open(const uint8_t (*keys)[RD_ENVELOPE_KEY_LEN], size_t nkeys, const char *label,
                     const char *in, size_t len, char *out, size_t cap, size_t *outlen,
                     size_t *key_index, const char **reason)
{
    const char *why_dummy;
    if (!reason) reason = &why_dummy;
    const unsigned char *p = (const unsigned char *)in;
    if ((*reason = header_problem(p, len)) != NULL) return RD_EPROTO;
    unsigned char ad[AD_MAX];
    size_t adlen = make_ad(label, ad);
    if (adlen == 0) {
        *reason = "label too long";
        return RD_EINVAL;
    }
    size_t clen = len - RD_WIRE_MAGIC_LEN - RD_ENVELOPE_NONCE_LEN;
    if (clen - RD_ENVELOPE_TAG_LEN > cap) {
        *reason = "too big";
        return RD_E2BIG;
    }
    const unsigned char *nonce = p + RD_WIRE_MAGIC_LEN;
    for (size_t k = 0; k < nkeys; k++) {
        unsigned long long n;
        if (crypto_aead_xchacha20poly1305_ietf_decrypt((unsigned char *)out, &n, NULL,
                                                       nonce + RD_ENVELOPE_NONCE_LEN, clen, ad,
                                                       adlen, nonce, keys[k]) == 0) {
            *outlen = (size_t)n;
            if (key_index) *key_index = k;
            *reason = "ok";
            return 0;
        }
    }
    *reason = "no key matched";
    return RD_ENOENT;
}

enum rd_envelope_verdict rd_envelope_accept(const uint8_t (*keys)[RD_ENVELOPE_KEY_LEN],
                                            size_t nkeys, const char *label, bool verify_incoming,
                                            const char *in, size_t len, char *out, size_t cap,
                                            const char **body, size_t *body_len)
{
    const unsigned char *p = (const unsigned char *)in;
    bool gossip = len >= RD_WIRE_MAGIC_LEN && p[0] == 'R' && p[1] == 'D';
    bool sealed = gossip && (p[3] & RD_WIRE_FLAG_SEALED);
    if (nkeys == 0) {
        if (sealed) return RD_ENVELOPE_SEALED;
        *body = in;
        *body_len = len;
        return RD_ENVELOPE_OK;
    }
    if (gossip && p[2] == RD_WIRE_VERSION && p[3] == 0) {
        if (verify_incoming) return RD_ENVELOPE_PLAIN;
        *body = in;
        *body_len = len;
        return RD_ENVELOPE_PLAIN_OK;
    }
    int rc = rd_envelope_open(keys, nkeys, label, in, len, out, cap, body_len, NULL, NULL);
    if (rc == RD_ENOENT) return RD_ENVELOPE_NOKEY;
    if (rc < 0) return RD_ENVELOPE_MALFORMED;
    *body = out;
    return RD_ENVELOPE_OK;
}

bool rd_envelope_drop_count(struct rd_envelope_drops *d, enum rd_envelope_verdict v)
{
    switch (v) {
    case RD_ENVELOPE_NOKEY:
        d->nokey++;
        return true;
    case RD_ENVELOPE_PLAIN:
        d->plain++;
        return true;
    case RD_ENVELOPE_SEALED:
        d->sealed++;
        return true;
    case RD_ENVELOPE_PLAIN_OK:
        d->plain_accepted++;
        return false;
    default:
        return false;
    }
}
