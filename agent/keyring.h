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
 * first) that the agent owns and hands by pointer to the envelope and the sync module. All
 * of them run on the agent's one loop thread and read the keys only within one callback,
 * never keeping a pointer to one key, so the agent may change the ring in place between
 * callbacks (rotation at run time) and every packet after the change uses the new keys.
 *
 * Rotation at run time (the query socket's KEYRING commands, `ringd keys`, SIGHUP): outside
 * the file a key is named by its fingerprint (rd_keyring_fingerprint), never by its bytes,
 * and a command may give any unambiguous prefix of one. The changes are
 *   rd_keyring_install  adds a key at the end: it opens from now on and seals nothing yet;
 *   rd_keyring_use      moves an installed key to the front: it seals from now on;
 *   rd_keyring_remove   drops a key that is not the primary;
 * each on a ring the caller owns, so the agent applies a change to a copy, writes the copy
 * with rd_keyring_save, and only then puts it in force: a change that cannot be written
 * is not made. rd_keyring_save replaces the file atomically (PATH.tmp, fsync, rename, fsync
 * of the directory), so a crash leaves the old file or the new one, never half of one.
 * The ring never becomes empty: the primary cannot be removed and a file without keys
 * does not load.
 *
 * Migrating a running plaintext cluster uses two switches that are settings of the agent,
 * not of the keyring (agent/config.h: --gossip-verify-incoming / --gossip-verify-outgoing,
 * as memberlist's GossipVerifyIncoming / GossipVerifyOutgoing), so replacing the keys never
 * changes them: rd_envelope_accept() reads the first, the agent's and sync's send paths the
 * second.
 */
#ifndef RD_AGENT_KEYRING_H
#define RD_AGENT_KEYRING_H

#include <stdbool.h>
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

/**
 * Decodes `text`, one key in standard base64 (RD_KEY_BASE64_LEN characters, as `ringd
 * keygen` prints it; blanks around it ignored), into key. Returns 0, or RD_EINVAL with
 * one line in err, which never holds the text.
 */
int rd_keyring_parse_key(const char *text, uint8_t key[RD_ENVELOPE_KEY_LEN], char *err,
                         size_t errlen);

/**
 * Finds the key whose fingerprint starts with `prefix` (1 to RD_KEY_FINGERPRINT_LEN hex
 * digits, either case): 0 with its position in *index (0 is the primary). RD_EINVAL for a
 * prefix that is not hex digits or that several keys share, RD_ENOENT when no key has it;
 * one line in err.
 */
int rd_keyring_find(const struct rd_keyring *kr, const char *prefix, size_t *index, char *err,
                    size_t errlen);

/**
 * Adds the key `base64` (as rd_keyring_parse_key) at the end of the ring: it opens from
 * now on and seals nothing yet. Returns 0 with its fingerprint in fp (may be NULL);
 * RD_EINVAL for text that is not a key, RD_EEXIST for a key already in the ring, RD_E2BIG
 * when the ring holds RD_KEYRING_MAX keys; one line in err. *kr is unchanged on error.
 */
int rd_keyring_install(struct rd_keyring *kr, const char *base64,
                       char fp[RD_KEY_FINGERPRINT_LEN + 1], char *err, size_t errlen);

/**
 * Makes the key named by `fingerprint` (a prefix, as rd_keyring_find) the primary: it moves
 * to the front and the others keep their order. Using the primary changes nothing. Returns
 * 0 with the full fingerprint in fp (may be NULL), or rd_keyring_find's errors. *kr is
 * unchanged on error.
 */
int rd_keyring_use(struct rd_keyring *kr, const char *fingerprint,
                   char fp[RD_KEY_FINGERPRINT_LEN + 1], char *err, size_t errlen);

/**
 * Removes the key named by `fingerprint` (a prefix, as rd_keyring_find); the others keep
 * their order. Returns 0 with the full fingerprint in fp (may be NULL), RD_EREFUSED for
 * the primary (make another key the primary first), or rd_keyring_find's errors. *kr is
 * unchanged on error.
 */
int rd_keyring_remove(struct rd_keyring *kr, const char *fingerprint,
                      char fp[RD_KEY_FINGERPRINT_LEN + 1], char *err, size_t errlen);

/**
 * Writes the ring to `path` in the file format above (a comment line, then one key per
 * line with its fingerprint in a comment before it, primary first), replacing the file
 * atomically: PATH.tmp is created afresh with mode 0600 in the same directory, written,
 * fsynced and renamed over PATH, then the directory is fsynced. A symbolic link at PATH is
 * followed, so the file it points to is replaced. Returns 0 once the new file is in place,
 * err then "" or a warning when only the directory's fsync failed (a crash may then bring
 * back the old file, whole); RD_EINVAL for a ring without keys or a path too long; RD_EIO
 * when a step before the rename failed (PATH is then untouched and PATH.tmp removed), with
 * one line in err naming the step and the system's reason.
 */
int rd_keyring_save(const struct rd_keyring *kr, const char *path, char *err, size_t errlen);

/** True if a and b hold the same keys in the same order. */
bool rd_keyring_equal(const struct rd_keyring *a, const struct rd_keyring *b);

#endif
