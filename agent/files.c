/*
 * files.c — directory checks and durable writes shared by query.c, keyring.c and
 * snapshot.c (see files.h). Plain POSIX calls, no state; the callers say what the file is.
 */
#include "files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
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

int rd_files_write_all(int fd, const void *buf, size_t len)
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

int rd_files_sync_dir(const char *file)
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
