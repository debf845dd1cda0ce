/*
 * keyring.c — loading the gossip keys (see keyring.h).
 *
 * The file is checked before it is read (fstat of the open file, so what is checked is
 * what is read), then parsed line by line with libsodium's base64 decoder; nothing of a
 * key goes into an error message, only the line number.
 */
#include "keyring.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rd_err.h"

_Static_assert(RD_KEY_BASE64_LEN + 1 ==
                   sodium_base64_ENCODED_LEN(RD_ENVELOPE_KEY_LEN, sodium_base64_VARIANT_ORIGINAL),
               "a key in base64 is 44 characters");

/* Fails the load: no keys, one line in err. */
static int load_fail(struct rd_keyring *kr, FILE *f, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int load_fail(struct rd_keyring *kr, FILE *f, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    if (f) fclose(f);
    sodium_memzero(kr, sizeof *kr);
    return RD_EINVAL;
}

/* One line without its '\n', blanks around it trimmed: a key, or nothing to do. */
static int parse_line(struct rd_keyring *kr, char *line, const char *path, int lineno, FILE *f,
                      char *err, size_t errlen)
{
    size_t n = strlen(line);
    while (n && strchr(" \t\r\n", line[n - 1]))
        line[--n] = '\0';
    line += strspn(line, " \t");
    if (!*line || *line == '#') return 0;
    uint8_t key[RD_ENVELOPE_KEY_LEN];
    size_t got;
    const char *end;
    if (sodium_base642bin(key, sizeof key, line, strlen(line), NULL, &got, &end,
                          sodium_base64_VARIANT_ORIGINAL) != 0 ||
        *end || got != sizeof key)
        return load_fail(kr, f, err, errlen, "--keyring-file %s:%d: not a base64 key of %d bytes",
                         path, lineno, RD_ENVELOPE_KEY_LEN);
    for (size_t i = 0; i < kr->nkeys; i++)
        if (sodium_memcmp(kr->keys[i], key, sizeof key) == 0)
            return load_fail(kr, f, err, errlen, "--keyring-file %s:%d: key repeated", path,
                             lineno);
    if (kr->nkeys == RD_KEYRING_MAX)
        return load_fail(kr, f, err, errlen, "--keyring-file %s: more than %d keys", path,
                         RD_KEYRING_MAX);
    memcpy(kr->keys[kr->nkeys++], key, sizeof key);
    sodium_memzero(key, sizeof key);
    return 0;
}

int rd_keyring_load(struct rd_keyring *kr, const char *path, char *err, size_t errlen)
{
    memset(kr, 0, sizeof *kr);
    int fd = open(path, O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return load_fail(kr, NULL, err, errlen, "--keyring-file %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return load_fail(kr, NULL, err, errlen, "--keyring-file %s: not a regular file", path);
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        close(fd);
        return load_fail(kr, NULL, err, errlen,
                         "--keyring-file %s: group or others can access it (mode %03o): "
                         "chmod 600 it",
                         path, (unsigned)(st.st_mode & 0777));
    }
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return load_fail(kr, NULL, err, errlen, "--keyring-file %s: %s", path, strerror(errno));
    }
    char line[RD_KEYRING_LINE_MAX + 2];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        if (!strchr(line, '\n') && !feof(f))
            return load_fail(kr, f, err, errlen, "--keyring-file %s:%d: line too long", path,
                             lineno);
        if (parse_line(kr, line, path, lineno, f, err, errlen) < 0) return RD_EINVAL;
    }
    sodium_memzero(line, sizeof line);
    if (ferror(f)) return load_fail(kr, f, err, errlen, "--keyring-file %s: read error", path);
    fclose(f);
    if (kr->nkeys == 0) return load_fail(kr, NULL, err, errlen, "--keyring-file %s: no key", path);
    return 0;
}

void rd_keyring_fingerprint(const uint8_t key[RD_ENVELOPE_KEY_LEN],
                            char out[RD_KEY_FINGERPRINT_LEN + 1])
{
    uint8_t h[crypto_generichash_BYTES];
    crypto_generichash(h, sizeof h, key, RD_ENVELOPE_KEY_LEN, NULL, 0);
    sodium_bin2hex(out, RD_KEY_FINGERPRINT_LEN + 1, h, RD_KEY_FINGERPRINT_LEN / 2);
}

void rd_keyring_generate(char out[RD_KEY_BASE64_LEN + 1])
{
    uint8_t key[RD_ENVELOPE_KEY_LEN];
    randombytes_buf(key, sizeof key);
    sodium_bin2base64(out, RD_KEY_BASE64_LEN + 1, key, sizeof key, sodium_base64_VARIANT_ORIGINAL);
    sodium_memzero(key, sizeof key);
}
