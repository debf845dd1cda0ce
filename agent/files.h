/*
 * files.h — the file-system steps that more than one module takes: refusing a directory
 * that others could write to, writing a whole buffer, and making a rename durable.
 *
 * The query socket, the keyring and the snapshot each keep a file in a directory; one
 * copy of each step means one rule for all three (a directory the socket would refuse is
 * refused for the snapshot too, with the same words).
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
/** Writes all of buf[0..len) to fd, again after EINTR; 0 or -1 with errno set. */
int rd_files_write_all(int fd, const void *buf, size_t len);
/** fsyncs the directory holding `file`, so that a rename into it is durable; 0 or -1 with
 *  errno set. */
int rd_files_sync_dir(const char *file);

#endif
