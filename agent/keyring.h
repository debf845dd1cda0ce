/*
 * keyring.h — the gossip encryption keys of an agent (--keyring-file).
 *
 * The file holds one key per line: 32 random bytes in standard base64 (44 characters, as
 * `ringd keygen` prints them); blank lines and lines starting with '#' are ignored. The
 * first key is the primary: it seals everything the agent sends. Every key opens: a
 * packet is accepted if any key of the ring authenticates it (proto/envelope.h). The
 * file must be a regular file that neither group nor others can read or write, since the
 * keys are the cluster's only secret.
 *
 * Why it has this shape: the keyring is a plain value (a fixed array of keys, primary
 * first) that the agent hands to the envelope and the sync module as it is, so a later
 * change can replace it at run time without any of them holding a pointer into a file.
 * Logs name a key only by its fingerprint (rd_keyring_fingerprint), never by its bytes.
 *
 * Intended API for key rotation at run time, not built yet (each would be a query-socket
 * command and a `ringd keys` subcommand, as Serf's install/use/remove):
 *   int rd_keyring_install(struct rd_keyring *kr, const uint8_t key[32]);
 *       adds a key at the end (RD_EEXIST if present, RD_E2BIG past RD_KEYRING_MAX): it
 *       opens from now on, and seals nothing yet.
 *   int rd_keyring_use(struct rd_keyring *kr, const uint8_t key[32]);
 *       moves an installed key to the front: it seals from now on (RD_ENOENT if absent).
 *   int rd_keyring_remove(struct rd_keyring *kr, const uint8_t key[32]);
 *       removes a key that is not the primary (RD_EREFUSED for the primary).
 *   int rd_keyring_save(const struct rd_keyring *kr, const char *path, char *err, size_t);
 *       writes PATH.tmp with mode 0600, fsyncs it and renames it over PATH, so a crash
 *       leaves the old file or the new one, never half of one.
 * Migrating a running plaintext cluster uses two switches that are settings of the agent,
 * not of the keyring (agent/config.h: --gossip-verify-incoming / --gossip-verify-outgoing,
 * as memberlist's GossipVerifyIncoming / GossipVerifyOutgoing), so replacing the keys never
 * changes them: rd_envelope_accept() reads the first, the agent's and sync's send paths the
 * second.
 */
#ifndef RD_AGENT_KEYRING_H
#define RD_AGENT_KEYRING_H

#include <stddef.h>
#include <stdint.h>

#include "envelope.h"

/** Most keys in one keyring (a rotation needs two; a few more give room for mistakes). */
#define RD_KEYRING_MAX 16
/** Characters of one key in base64 (with padding), as in the file and from keygen. */
#define RD_KEY_BASE64_LEN 44
/** Longest line of a keyring file, its '\n' not counted. */
#define RD_KEYRING_LINE_MAX 256
/** Hex digits of a key fingerprint: the first 8 bytes of BLAKE2b-256 of the key. */
#define RD_KEY_FINGERPRINT_LEN 16

struct rd_keyring {
    size_t nkeys;                                      /**< 0: no keyring */
    uint8_t keys[RD_KEYRING_MAX][RD_ENVELOPE_KEY_LEN]; /**< primary first */
};

/**
 * Reads the keyring file `path` into *kr. Refuses (RD_EINVAL, one line in err) a path
 * that is not a regular file, a file that group or others may read or write, a line that
 * is not one base64 key of 32 bytes, more than RD_KEYRING_MAX keys, a repeated key, and a
 * file with no key. On error *kr holds no keys.
 */
int rd_keyring_load(struct rd_keyring *kr, const char *path, char *err, size_t errlen);

/** Writes the fingerprint of `key`, RD_KEY_FINGERPRINT_LEN hex digits and a NUL, to out. */
void rd_keyring_fingerprint(const uint8_t key[RD_ENVELOPE_KEY_LEN],
                            char out[RD_KEY_FINGERPRINT_LEN + 1]);

/** Writes a new random key as base64 (RD_KEY_BASE64_LEN characters and a NUL) to out. */
void rd_keyring_generate(char out[RD_KEY_BASE64_LEN + 1]);

#endif
