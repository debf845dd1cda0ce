/*
 * snapshot.h — the member table kept across restarts (--state-dir), so that an agent
 * started again without --join finds its cluster through the members it last knew.
 *
 * Two halves: pure encode/decode of the bytes (the format is in proto/PROTOCOL.md,
 * "State snapshot"; tested byte by byte and fuzzed), and the file steps (the directory
 * created 0700 or checked, an atomic save, a bounded read). agent.c decides when to save
 * and what to do with what it read.
 */
#ifndef RD_AGENT_SNAPSHOT_H
#define RD_AGENT_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "member.h"
#include "msg.h"

/** The snapshot's file name inside --state-dir. */
#define RD_SNAPSHOT_FILE "members.snap"
/** Format version written; a file of another version is ignored. */
#define RD_SNAPSHOT_VERSION 1
/** Header: magic (4), version (1), reserved (3), body length (4), XXH3-64 of the body (8). */
#define RD_SNAPSHOT_HEADER_LEN 20
/** One record at most: name length + name, family, IPv6 address, port, incarnation, status. */
#define RD_SNAPSHOT_RECORD_MAX (1 + RD_NAME_MAX + 1 + 16 + 2 + 8 + 1)
/** The largest file: cluster label, our name, saved-at time, count, RD_MAX_MEMBERS records.
 *  A bigger file is refused before it is read. */
#define RD_SNAPSHOT_MAX_BYTES                                                                      \
    (RD_SNAPSHOT_HEADER_LEN + 1 + RD_ZONE_MAX + 1 + RD_NAME_MAX + 8 + 4 +                          \
     (size_t)RD_MAX_MEMBERS * RD_SNAPSHOT_RECORD_MAX)
/** New state directories get this mode: the table says who and where the members are. */
#define RD_SNAPSHOT_DIR_MODE 0700

/** What a snapshot says about the file as a whole. */
struct rd_snapshot_head {
    char cluster[RD_ZONE_MAX + 1]; /**< --cluster of the agent that wrote it ("" for none) */
    char self[RD_NAME_MAX + 1];    /**< that agent's --name */
    uint64_t saved_ms;             /**< wall clock at the save */
    uint32_t count;                /**< records that follow */
};

/** One member as the snapshot keeps it. */
struct rd_snapshot_entry {
    char name[RD_NAME_MAX + 1];
    struct rd_addr addr;
    uint64_t incarnation;
    uint8_t status; /**< enum rd_status */
};

/** Bytes needed to encode `n` records with `head`'s strings. */
size_t rd_snapshot_encoded_len(const struct rd_snapshot_head *head,
                               const struct rd_snapshot_entry *e, size_t n);
/**
 * Encodes head and e[0..n) (n <= RD_MAX_MEMBERS) into out[0..cap). Returns the length, or
 * RD_E2BIG when cap is too small or n too large, RD_EINVAL for a record that is not valid
 * (bad name or family): what is written is what decode accepts.
 */
int rd_snapshot_encode(const struct rd_snapshot_head *head, const struct rd_snapshot_entry *e,
                       size_t n, uint8_t *out, size_t cap);
/**
 * Decodes buf[0..len) into head and e[0..cap). Returns the number of records, or RD_EPROTO
 * with one line in err saying what is wrong ("truncated", "checksum mismatch", ...). A file
 * is taken whole or not at all; no field of a refused file is to be used.
 */
int rd_snapshot_decode(const uint8_t *buf, size_t len, struct rd_snapshot_head *head,
                       struct rd_snapshot_entry *e, size_t cap, char *err, size_t errlen);
/**
 * Whether a decoded snapshot is ours: written under the same cluster label and name.
 * 0, or RD_EINVAL with the reason in err (another cluster's, or another member's file).
 */
int rd_snapshot_owned(const struct rd_snapshot_head *head, const char *cluster, const char *name,
                      char *err, size_t errlen);

/**
 * Creates `dir` mode RD_SNAPSHOT_DIR_MODE if missing (not its parents), or checks an
 * existing one as the socket directory is checked. 0; RD_EINVAL for an unsafe directory or
 * a file in its place; RD_EIO; with one line in err.
 */
int rd_snapshot_prepare_dir(const char *dir, char *err, size_t errlen);
/**
 * Writes buf[0..len) as dir/RD_SNAPSHOT_FILE, mode 0600: a temporary file, fsync, rename,
 * fsync of the directory (rd_files_replace). 0, with a warning in err if only the
 * directory's fsync failed (else err is empty); or RD_EIO with one line in err (the old
 * file then stays).
 */
int rd_snapshot_save(const char *dir, const uint8_t *buf, size_t len, char *err, size_t errlen);
/**
 * Reads dir/RD_SNAPSHOT_FILE into a malloc'd *buf (*len bytes; the caller frees it).
 * 0; RD_ENOENT when there is none; RD_E2BIG when it is over RD_SNAPSHOT_MAX_BYTES or not a
 * regular file; RD_EIO, RD_ENOMEM; with one line in err.
 */
int rd_snapshot_read(const char *dir, uint8_t **buf, size_t *len, char *err, size_t errlen);

#endif
