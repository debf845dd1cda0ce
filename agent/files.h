/*
 * files.h — the file-system steps that more than one module takes: refusing a directory
 * that others could write to, writing a whole buffer, and making a rename durable.
 *
 * The query socket, the keyring and the snapshot each keep a file in a directory; one
 * copy of each step means one rule for all three (a directory the socket would refuse is
 * refused for the snapshot too, with the same words; the keyring and the snapshot are
 * replaced by the same sequence of temporary file, fsync, rename and fsync).
 */
#ifndef RD_AGENT_FILES_H
#define RD_AGENT_FILES_H

#include <stddef.h>
#include <sys/stat.h>

/**
 * Refuses a directory someone else could write to: they could replace our file with
 * theirs. Group- or world-writable is fine with the sticky bit (/tmp), as only a file's
 * owner may then remove it; the owner must be root or our user. `what` names the directory
 * in the message ("socket directory"). 0, or RD_EINVAL with one line in err.
 */
int rd_files_check_dir(const char *what, const char *dir, const struct stat *st, char *err,
                       size_t errlen);
/**
 * Replaces the file `target` with buf[0..len), mode 0600, so that a crash leaves the old
 * file or the new one, each whole: writes `target`.tmp (a stale one from a crash is
 * removed first; the new one is created O_EXCL|O_NOFOLLOW), fsyncs it, renames it over
 * `target` and fsyncs the directory. `what` names the file in messages ("keyring"). Returns
 * 0, with err empty, or with a warning in err when only the directory's fsync failed (the
 * new file is in place); RD_EINVAL for a path too long; RD_EIO with one line in err
 * ("cannot save the WHAT: STEP PATH: reason") and no temporary file left behind.
 */
int rd_files_replace(const char *what, const char *target, const void *buf, size_t len, char *err,
                     size_t errlen);

#endif
