/*
 * files.c — the directory check and the durable replace shared by query.c, keyring.c and
 * snapshot.c (see files.h). Plain POSIX calls, no state; the callers say what the file is.
 */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rd_err.h"

int rd_files_check_dir(const char *what, const char *dir, const struct stat *st, char *err,
                       size_t errlen)
{
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !(st->st_mode & S_ISVTX)) {
        snprintf(err, errlen, "%s %s is writable by others (mode %04o, no sticky bit): refusing it",
                 what, dir, (unsigned)(st->st_mode & 07777));
        return RD_EINVAL;
    }
    if (st->st_uid != 0 && st->st_uid != geteuid()) {
        snprintf(err, errlen,
                 "%s %s is owned by uid %u, neither root nor this agent's user: refusing it", what,
                 dir, (unsigned)st->st_uid);
        return RD_EINVAL;
    }
    return 0;
}

/* Writes all of buf[0..len) to fd, again after EINTR; 0 or -1 with errno set. */
static int write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* fsyncs the directory holding `file`; 0 or -1 with errno set. */
static int sync_dir(const char *file)
{
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", file);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        slash[slash == dir ? 1 : 0] = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* Fails a replace after the temporary file was created: removes it, one line in err. */
static int replace_fail(const char *what, const char *tmp, int fd, const char *step, char *err,
                        size_t errlen)
{
    int e = errno;
    if (fd >= 0) close(fd);
    unlink(tmp);
    snprintf(err, errlen, "cannot save the %s: %s %s: %s", what, step, tmp, strerror(e));
    return RD_EIO;
}

int rd_files_replace(const char *what, const char *target, const void *buf, size_t len, char *err,
                     size_t errlen)
{
    char tmp[PATH_MAX];
    if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp", target) >= sizeof tmp) {
        snprintf(err, errlen, "cannot save the %s: path too long: %s", what, target);
        return RD_EINVAL;
    }
    /* A PATH.tmp left by a crash is removed; a fresh one is ours, mode 0600 whatever the
     * umask, and O_EXCL|O_NOFOLLOW make sure it is the file we just created. */
    if (unlink(tmp) < 0 && errno != ENOENT)
        return replace_fail(what, tmp, -1, "remove stale", err, errlen);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot save the %s: create %s: %s", what, tmp, strerror(e));
        return RD_EIO;
    }
    if (fchmod(fd, 0600) < 0) return replace_fail(what, tmp, fd, "chmod", err, errlen);
    if (write_all(fd, buf, len) < 0) return replace_fail(what, tmp, fd, "write", err, errlen);
    if (fsync(fd) < 0) return replace_fail(what, tmp, fd, "fsync", err, errlen);
    if (close(fd) < 0) return replace_fail(what, tmp, -1, "close", err, errlen);
    if (rename(tmp, target) < 0) {
        int e = errno;
        unlink(tmp);
        snprintf(err, errlen, "cannot save the %s: rename %s to %s: %s", what, tmp, target,
                 strerror(e));
        return RD_EIO;
    }
    /* The new file is in place: a failure from here on is only a warning, since a crash
     * can then at worst bring back the old file, whole. */
    err[0] = '\0';
    if (sync_dir(target) < 0)
        snprintf(err, errlen, "%s saved, but its directory could not be synced: %s", what,
                 strerror(errno));
    return 0;
}
